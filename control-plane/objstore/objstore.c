/*
 * objstore.c - the embedded S3 object store (layout and invariants in objstore.h).
 *
 * Bytes are only ever streamed (1 MiB buffers, copy_file_range for multipart concatenation);
 * the records in Redis are the store's (store_obj.h: one MULTI/EXEC per commit).
 */
#define _GNU_SOURCE /* copy_file_range */
#include "objstore.h"
#include "objstore_int.h"

#include "objstore_remote.h"

#include "store_obj.h"
#include "ty_buf.h"
#include "ty_codec.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "ty_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A partNumber the object does not have: 400 InvalidPart, as ceph/s3-tests expect of S3 (no AWS
   document says otherwise; MinIO answers 416 InvalidPartNumber). */
#define OBJSTORE_NO_SUCH_PART                                                                      \
    "One or more of the specified parts could not be found. The part may not have been "           \
    "uploaded, or the specified entity tag may not match the part's entity tag."

#define OBJSTORE_NLOCKS    64
#define OBJSTORE_MAX_DEPTH 64
#define OBJSTORE_REDIS_KEY (OBJSTORE_MAX_KEY + 128)

static pthread_mutex_t objstore_locks[OBJSTORE_NLOCKS];
static pthread_once_t objstore_once = PTHREAD_ONCE_INIT;

static void objstore_init_locks(void)
{
    for (int i = 0; i < OBJSTORE_NLOCKS; i++)
        pthread_mutex_init(&objstore_locks[i], NULL);
}

static pthread_mutex_t *objstore_lock_for(const char *bucket, const char *key)
{
    uint32_t h = 2166136261u;
    for (const char *p = bucket; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ '/') * 16777619u;
    for (const char *p = key; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return &objstore_locks[h % OBJSTORE_NLOCKS];
}

int objstore__fmt(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    int w;
    va_start(ap, fmt);
    w = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

static int objstore_mkparent(const char *file)
{
    char parent[PATH_MAX];
    char *slash;
    size_t len = strlen(file);

    if (len >= sizeof(parent))
        return -ENAMETOOLONG;
    memcpy(parent, file, len + 1);
    slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return 0;
    *slash = '\0';
    return ty_mkdirs(parent, 0755);
}

void objstore__fsync_parent(const char *file)
{
    char parent[PATH_MAX];
    char *slash;
    size_t len = strlen(file);
    int fd;

    if (len >= sizeof(parent))
        return;
    memcpy(parent, file, len + 1);
    slash = strrchr(parent, '/');
    if (!slash)
        return;
    *slash = '\0';
    fd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Removes the empty directories above file, up to (not including) stop. */
static void objstore_prune(const char *file, const char *stop)
{
    char p[PATH_MAX];
    size_t sl = strlen(stop), len = strlen(file);
    char *slash;

    if (len >= sizeof(p) || strncmp(file, stop, sl) != 0)
        return;
    memcpy(p, file, len + 1);
    while ((slash = strrchr(p, '/')) != NULL && (size_t)(slash - p) > sl) {
        *slash = '\0';
        if (rmdir(p) != 0)
            break;
    }
}

/* ---- names ---------------------------------------------------------------------------------- */

int objstore_bucket_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    int digits_dots = 1, dots = 0;

    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-'))
            return 0;
        if (c == '.') {
            dots++;
            if (i > 0 && (name[i - 1] == '.' || name[i - 1] == '-'))
                return 0;
        } else if (c == '-' && i > 0 && name[i - 1] == '.') {
            return 0;
        }
        if (!((c >= '0' && c <= '9') || c == '.'))
            digits_dots = 0;
    }
    if (name[0] == '.' || name[0] == '-' || name[n - 1] == '.' || name[n - 1] == '-')
        return 0;
    if (digits_dots && dots == 3)
        return 0; /* looks like an IP address */
    if (strncmp(name, "xn--", 4) == 0)
        return 0;
    return 1;
}

/* Bucket directories the store adopts (the agent's looser rule, minus a leading dot). */
static int objstore_bucket_dir_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 63 || name[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

int objstore_key_ok(const char *key)
{
    const unsigned char *p = (const unsigned char *)key;
    size_t n = key ? strlen(key) : 0;

    if (n == 0 || n > OBJSTORE_MAX_KEY)
        return 0;
    while (*p) {
        int extra;
        uint32_t cp;
        if (*p < 0x80) {
            p++;
            continue;
        }
        if ((*p & 0xe0) == 0xc0) {
            extra = 1;
            cp = *p & 0x1f;
        } else if ((*p & 0xf0) == 0xe0) {
            extra = 2;
            cp = *p & 0x0f;
        } else if ((*p & 0xf8) == 0xf0) {
            extra = 3;
            cp = *p & 0x07;
        } else {
            return 0;
        }
        p++;
        for (int i = 0; i < extra; i++, p++) {
            if ((*p & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (*p & 0x3f);
        }
        if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
            (extra == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
    }
    return 1;
}

/* 1 when key can be stored at <bucket>/<key> as a plain relative path. */
static int objstore_key_is_path(const char *key)
{
    const char *seg = key;

    if (!*key)
        return 0;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t sl = end ? (size_t)(end - seg) : strlen(seg);
        if (sl == 0 || sl > 255 || (sl == 1 && seg[0] == '.') ||
            (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            return 0;
        if (!end)
            return 1;
        seg = end + 1;
    }
}

static int objstore_natural_rel(const char *bucket, const char *key, char *out, size_t n)
{
    if (!objstore_key_is_path(key))
        return -1;
    return objstore__fmt(out, n, "%s/%s", bucket, key);
}

static int objstore_hashed_rel(const char *bucket, const char *key, char *out, size_t n)
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    char hex[65];

    if (EVP_Digest(key, strlen(key), md, &mdlen, EVP_sha256(), NULL) != 1)
        return -1;
    ty_hex_encode(md, 32, hex);
    return objstore__fmt(out, n, ".ty/obj/%s/%.2s/%s", bucket, hex, hex);
}

/* ---- open/close ----------------------------------------------------------------------------- */

/* objstore_open, and with st NULL the remote-only store's base (only .ty/tmp is made). */
static struct objstore *objstore_open_dir(const char *s3_dir, struct store *st, struct ty_err *err)
{
    struct objstore *os;
    char p[PATH_MAX];
    static const char *const sub[] = {".ty/tmp", ".ty/mpu", ".ty/obj"};

    pthread_once(&objstore_once, objstore_init_locks);
    if (!s3_dir || strlen(s3_dir) >= PATH_MAX - 1300) {
        ty_err_set(err, TY_EINVAL, NULL, "invalid s3 dir");
        return NULL;
    }
    for (size_t i = 0; i < (st ? sizeof(sub) / sizeof(sub[0]) : 1); i++) {
        snprintf(p, sizeof(p), "%s/%s", s3_dir, sub[i]);
        if (ty_mkdirs(p, 0755) != 0) {
            ty_err_set(err, TY_EIO, NULL, "cannot create '%s': %s", p, strerror(errno));
            return NULL;
        }
    }
    os = calloc(1, sizeof(*os));
    if (!os) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    snprintf(os->dir, sizeof(os->dir), "%s", s3_dir);
    os->st = st;
    return os;
}

struct objstore *objstore_open(const char *s3_dir, struct store *st, struct ty_err *err)
{
    if (!st) {
        ty_err_set(err, TY_EINVAL, NULL, "no store");
        return NULL;
    }
    return objstore_open_dir(s3_dir, st, err);
}

struct objstore *objstore_open_remote(const char *tmp_dir, const struct s3c_config *cfg,
                                      struct ty_err *err)
{
    struct objstore *os = objstore_open_dir(tmp_dir, NULL, err);

    if (os && objstore_use_remote(os, cfg, err) != 0) {
        objstore_close(os);
        return NULL;
    }
    return os;
}

int objstore_sweep_tmp(const char *s3_dir, int max_age_s)
{
    char dir[PATH_MAX];
    DIR *d;
    struct dirent *de;
    time_t now = time(NULL);
    int n = 0;

    if (objstore__fmt(dir, sizeof(dir), "%s/.ty/tmp", s3_dir) != 0 || !(d = opendir(dir)))
        return 0;
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX];
        struct stat st;
        if (strncmp(de->d_name, "up.", 3) != 0 ||
            objstore__fmt(p, sizeof(p), "%s/%s", dir, de->d_name) != 0 || lstat(p, &st) != 0 ||
            !S_ISREG(st.st_mode) || now - st.st_mtime < max_age_s)
            continue;
        if (unlink(p) == 0)
            n++;
    }
    closedir(d);
    if (n)
        ty_log(TY_LOG_INFO, "s3.tmp.swept", "dir='%s' removed=%d", dir, n);
    return n;
}

void objstore_close(struct objstore *os)
{
    if (os)
        s3c_free(os->remote);
    free(os);
}

int objstore_use_remote(struct objstore *os, const struct s3c_config *cfg, struct ty_err *err)
{
    struct s3c *c = s3c_new(cfg, err);
    if (!c)
        return -err->code;
    s3c_free(os->remote);
    os->remote = c;
    return 0;
}

int objstore_is_remote(const struct objstore *os)
{
    return os->remote != NULL;
}

/* The operations an external store does not get through this module: the S3 API forwards
   those requests whole (ops/s3_proxy.c). */
int objstore__local_only(const struct objstore *os, struct ty_err *err)
{
    if (!os->remote)
        return 0;
    return ty_err_set(err, TY_EINVAL, "NotImplemented",
                      "this operation is forwarded to the external S3 store, not run locally");
}

const char *objstore_dir(const struct objstore *os)
{
    return os->dir;
}

/* ---- metadata in Redis ---------------------------------------------------------------------- */

void objstore_meta_cleanup(struct objstore_meta *meta)
{
    if (meta && meta->hdrs) {
        json_decref(meta->hdrs);
        meta->hdrs = NULL;
    }
}

void objstore__meta_from_rec(const struct store_obj_rec *r, struct objstore_meta *m)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->etag, sizeof(m->etag), "%s", r->etag);
    m->size = r->size;
    m->mtime_ms = r->mtime_ms;
    m->parts = r->parts;
    m->ino = r->ino;
    snprintf(m->path, sizeof(m->path), "%s", r->path);
}

/* m from bucket/key's record (hdrs only when want_hdrs; caller cleans m with
   objstore_meta_cleanup, on failure too). 0, -TY_ENOTFOUND or -TY_EREDIS. */
static int objstore_meta_load(struct objstore *os, const char *bucket, const char *key,
                              struct objstore_meta *m, int want_hdrs, struct ty_err *err)
{
    struct store_obj_rec r;
    json_t *hdrs = NULL;
    int rc;

    memset(m, 0, sizeof(*m));
    rc = store_obj_get(os->st, bucket, key, &r, want_hdrs ? &hdrs : NULL, err);
    if (rc != 0)
        return rc;
    objstore__meta_from_rec(&r, m);
    m->hdrs = hdrs;
    return 0;
}

/* Writes the index of bucket/key: its record (replaced whole) and its place in the key index.
   psizes (may be NULL): a multipart object's part sizes, "s1,s2,...". */
static int objstore_index_put(struct objstore *os, const char *bucket, const char *key,
                              const struct objstore_meta *m, json_t *hdrs, const char *psizes,
                              struct ty_err *err)
{
    struct store_obj_rec r;

    memset(&r, 0, sizeof(r));
    snprintf(r.etag, sizeof(r.etag), "%s", m->etag);
    r.size = m->size;
    r.mtime_ms = m->mtime_ms;
    r.parts = m->parts;
    r.ino = m->ino;
    snprintf(r.path, sizeof(r.path), "%s", m->path);
    return store_obj_put(os->st, bucket, key, &r, hdrs, psizes, err);
}

/* ---- hashing files ------------------------------------------------------------------------- */

static int objstore_md5_fd(int fd, char *hex, uint64_t *size)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char md[16];
    unsigned int mdlen = 0;
    char *buf = malloc(OBJSTORE_CHUNK);
    uint64_t total = 0;
    ssize_t r = 0;
    int rc = -1;

    if (!c || !buf || EVP_DigestInit_ex(c, EVP_md5(), NULL) != 1)
        goto out;
    while ((r = read(fd, buf, OBJSTORE_CHUNK)) > 0) {
        EVP_DigestUpdate(c, buf, (size_t)r);
        total += (uint64_t)r;
    }
    if (r < 0 || EVP_DigestFinal_ex(c, md, &mdlen) != 1)
        goto out;
    ty_hex_encode(md, 16, hex);
    *size = total;
    rc = 0;
out:
    EVP_MD_CTX_free(c);
    free(buf);
    return rc;
}

/* ---- buckets ------------------------------------------------------------------------------- */

static int objstore_adopt_tree(struct objstore *os, const char *bucket, const char *abs,
                               const char *rel, int depth, int *found, struct ty_err *err);

int objstore_bucket_create(struct objstore *os, const char *name, const char *region,
                           struct ty_err *err)
{
    if (os->remote)
        return objstore_remote_bucket_create(os->remote, name, region, err);
    char p[PATH_MAX];
    int64_t created = (int64_t)ty_wall_ms();
    int rc;

    if (objstore__fmt(p, sizeof(p), "%s/%s", os->dir, name) != 0 || ty_mkdirs(p, 0755) != 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot create the bucket directory");
    rc = store_obj_bucket_add(os->st, name, created, region, err);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return ty_err_set(err, TY_EINUSE, "BucketAlreadyOwnedByYou",
                          "Your previous request to create the named bucket succeeded and you "
                          "already own it.");
    return 0;
}

static void objstore_bucket_from(const struct store_obj_bucket *sb, struct objstore_bucket *b)
{
    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%s", sb->name);
    b->created_ms = sb->created_ms;
    snprintf(b->region, sizeof(b->region), "%s", sb->region);
}

int objstore_bucket_get(struct objstore *os, const char *name, struct objstore_bucket *b,
                        struct ty_err *err)
{
    if (os->remote)
        return objstore_remote_bucket_get(os->remote, name, b, err);
    struct store_obj_bucket sb;
    char p[PATH_MAX];
    struct stat st;
    int rc;

    if (!name || !*name || strlen(name) > 63)
        goto missing;
    rc = store_obj_bucket_get(os->st, name, &sb, err);
    if (rc == 0) {
        if (b)
            objstore_bucket_from(&sb, b);
        return 0;
    }
    if (rc != -TY_ENOTFOUND)
        return rc;
    ty_err_clear(err);
    /* a directory made outside the API (the agent, a test, a copy): adopt it and its files */
    if (!objstore_bucket_dir_ok(name) || objstore__fmt(p, sizeof(p), "%s/%s", os->dir, name) != 0 ||
        stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        goto missing;
    {
        int found = 0;
        memset(&sb, 0, sizeof(sb));
        snprintf(sb.name, sizeof(sb.name), "%s", name);
        sb.created_ms = (int64_t)st.st_mtim.tv_sec * 1000;
        snprintf(sb.region, sizeof(sb.region), "us-east-1");
        /* index the files before the bucket is published: a concurrent lister that sees
           the bucket must see all of it (a second adopter racing this one indexes the same
           files again, which is harmless) */
        rc = objstore_adopt_tree(os, name, p, "", 0, &found, err);
        if (rc)
            return rc;
        rc = store_obj_bucket_add(os->st, name, sb.created_ms, sb.region, err);
        if (rc < 0)
            return rc;
        ty_log(TY_LOG_INFO, "s3.bucket.adopted", "bucket=%s objects=%d", name, found);
        if (b)
            objstore_bucket_from(&sb, b);
        return 0;
    }
missing:
    return ty_err_set(err, TY_ENOTFOUND, "NoSuchBucket", "The specified bucket does not exist");
}

int objstore__rmtree(const char *path, int depth)
{
    DIR *d;
    struct dirent *de;
    int rc = 0;

    if (depth > OBJSTORE_MAX_DEPTH)
        return -1;
    d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX];
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (objstore__fmt(p, sizeof(p), "%s/%s", path, de->d_name) != 0 || lstat(p, &st) != 0) {
            rc = -1;
            continue;
        }
        if (S_ISDIR(st.st_mode))
            rc |= objstore__rmtree(p, depth + 1);
        else if (unlink(p) != 0)
            rc = -1;
    }
    closedir(d);
    if (rmdir(path) != 0)
        rc = -1;
    return rc;
}

int objstore_bucket_delete(struct objstore *os, const char *name, struct ty_err *err)
{
    if (os->remote)
        return objstore_remote_bucket_delete(os->remote, name, err);
    char p[PATH_MAX];
    struct ty_err e2;
    long long n;
    int rc, found = 0;

    if ((rc = objstore_bucket_get(os, name, NULL, err)) != 0)
        return rc;
    /* files written beside the API since the bucket was adopted count as objects */
    if (objstore__fmt(p, sizeof(p), "%s/%s", os->dir, name) == 0 &&
        (rc = objstore_adopt_tree(os, name, p, "", 0, &found, err)) != 0)
        return rc;
    if ((rc = store_obj_count(os->st, name, &n, err)) != 0)
        return rc;
    if (n > 0)
        return ty_err_set(err, TY_ECONFLICT, "BucketNotEmpty",
                          "The bucket you tried to delete is not empty");
    /* best effort, as the directories below: a record left behind is adopted again */
    ty_err_clear(&e2);
    store_obj_bucket_delete(os->st, name, &e2);
    objstore__rmtree(p, 0);
    if (objstore__fmt(p, sizeof(p), "%s/.ty/obj/%s", os->dir, name) == 0)
        objstore__rmtree(p, 0);
    return 0;
}

int objstore_bucket_list(struct objstore *os, struct objstore_bucket **out, size_t *n,
                         struct ty_err *err)
{
    if (os->remote)
        return objstore_remote_bucket_list(os->remote, out, n, err);
    DIR *d = opendir(os->dir);
    struct dirent *de;
    struct store_obj_bucket *sv = NULL;
    struct objstore_bucket *v;
    size_t k = 0;
    int rc;

    /* adopt bucket directories made outside the API first */
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] != '.' && objstore_bucket_dir_ok(de->d_name)) {
            struct ty_err e2;
            ty_err_clear(&e2);
            objstore_bucket_get(os, de->d_name, NULL, &e2);
        }
    }
    if (d)
        closedir(d);
    if ((rc = store_obj_bucket_list(os->st, &sv, &k, err)) != 0)
        return rc;
    v = calloc(k + 1, sizeof(*v));
    if (!v) {
        free(sv);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < k; i++) /* sorted by name already */
        objstore_bucket_from(&sv[i], &v[i]);
    free(sv);
    *out = v;
    *n = k;
    return 0;
}

/* ---- objects -------------------------------------------------------------------------------- */

int objstore_tmp_create(struct objstore *os, char *path, size_t n, struct ty_err *err)
{
    int fd;

    if (objstore__fmt(path, n, "%s/.ty/tmp/up.XXXXXX", os->dir) != 0)
        return ty_err_set(err, TY_EIO, NULL, "temp path too long");
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot create a temp file: %s", strerror(errno));
    return fd;
}

/*
 * A file at a hashed path (.ty/obj/<bucket>/<hh>/<sha256(key)>) cannot be traced back to its
 * key from its name, so its key is written beside it, in <file>.key, before the file is renamed
 * there: the sweep (objstore__sweep_hashed) reads it to ask whether a record still owns the
 * file. The tag is written whole (temp file, fsync, rename) and trusted only when the key it
 * holds hashes to the file's name, so a torn or stale tag never names another key.
 */
static int objstore_hashed_tag_read(const char *abs_tag, const char *hex, char *key, size_t kn)
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    char got[65];
    ssize_t r;
    int fd = open(abs_tag, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

    if (fd < 0)
        return -1;
    r = read(fd, key, kn - 1);
    close(fd);
    if (r <= 0 || (size_t)r >= kn - 1)
        return -1;
    key[r] = '\0';
    if (strlen(key) != (size_t)r || EVP_Digest(key, (size_t)r, md, &mdlen, EVP_sha256(), NULL) != 1)
        return -1;
    ty_hex_encode(md, 32, got);
    return strcmp(got, hex) == 0 ? 0 : -1;
}

static int objstore_hashed_tag(struct objstore *os, const char *abs, const char *key)
{
    char tag[PATH_MAX], tmp[PATH_MAX], have[OBJSTORE_MAX_KEY + 2];
    const char *hex = strrchr(abs, '/') + 1;
    size_t kl = strlen(key);
    struct ty_err err;
    int fd, ok;

    if (objstore__fmt(tag, sizeof(tag), "%s.key", abs) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (objstore_hashed_tag_read(tag, hex, have, sizeof(have)) == 0 && strcmp(have, key) == 0)
        return 0;
    ty_err_clear(&err);
    if ((fd = objstore_tmp_create(os, tmp, sizeof(tmp), &err)) < 0)
        return -1;
    ok = write(fd, key, kl) == (ssize_t)kl && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp, tag) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e ? e : EIO;
        return -1;
    }
    return 0;
}

/*
 * One file under .ty/obj/<bucket>/<hh>/ (dir: that folder, name: the entry), older than
 * max_age_s: a file whose key's record is gone or names another path is removed with its tag;
 * a tag whose file is gone is removed. Under the key's lock, the age checked again there. 1 when
 * something was removed, 0 when not, -TY_EREDIS when Redis does not answer.
 */
static int objstore_sweep_hashed_one(struct objstore *os, const char *bucket, const char *hh,
                                     const char *dir, const char *name, int max_age_s)
{
    char hex[65], file[PATH_MAX], tag[PATH_MAX], rel[PATH_MAX], key[OBJSTORE_MAX_KEY + 2];
    size_t nl = strlen(name);
    struct objstore_meta m;
    struct stat st;
    struct ty_err err;
    pthread_mutex_t *lk;
    int rc, gone = 0;

    if ((nl != 64 && (nl != 68 || strcmp(name + 64, ".key") != 0)) ||
        strspn(name, "0123456789abcdef") != 64)
        return 0;
    memcpy(hex, name, 64);
    hex[64] = '\0';
    if (objstore__fmt(file, sizeof(file), "%s/%s", dir, hex) != 0 ||
        objstore__fmt(tag, sizeof(tag), "%s.key", file) != 0 ||
        objstore__fmt(rel, sizeof(rel), ".ty/obj/%s/%s/%s", bucket, hh, hex) != 0)
        return 0;
    if (nl == 68 && lstat(file, &st) == 0)
        return 0; /* the file's own turn decides */
    if (lstat(nl == 64 ? file : tag, &st) != 0 || !S_ISREG(st.st_mode) ||
        time(NULL) - st.st_mtime < max_age_s)
        return 0;
    if (objstore_hashed_tag_read(tag, hex, key, sizeof(key)) != 0)
        return 0; /* no tag that names its key (a file stored before tags): kept */
    ty_err_clear(&err);
    memset(&m, 0, sizeof(m));
    lk = objstore_lock_for(bucket, key);
    pthread_mutex_lock(lk);
    rc = objstore_meta_load(os, bucket, key, &m, 0, &err);
    if (rc == 0 && strcmp(m.path, rel) == 0) {
        rc = 0; /* owned */
    } else if (rc == 0 || rc == -TY_ENOTFOUND) {
        rc = 0;
        if (lstat(file, &st) == 0) {
            if (S_ISREG(st.st_mode) && time(NULL) - st.st_mtime >= max_age_s && unlink(file) == 0) {
                unlink(tag);
                gone = 1;
            }
        } else if (errno == ENOENT && unlink(tag) == 0) {
            gone = 1;
        }
    } else {
        rc = -TY_EREDIS;
    }
    pthread_mutex_unlock(lk);
    objstore_meta_cleanup(&m);
    return rc != 0 ? rc : gone;
}

int objstore__sweep_hashed(struct objstore *os, int max_age_s)
{
    char top[PATH_MAX];
    DIR *d;
    struct dirent *de;
    int n = 0, rc = 0;

    if (objstore__fmt(top, sizeof(top), "%s/.ty/obj", os->dir) != 0 || !(d = opendir(top)))
        return 0;
    while (rc >= 0 && (de = readdir(d)) != NULL) {
        char bdir[PATH_MAX];
        DIR *b;
        struct dirent *he;
        if (!objstore_bucket_dir_ok(de->d_name) ||
            objstore__fmt(bdir, sizeof(bdir), "%s/%s", top, de->d_name) != 0 ||
            !(b = opendir(bdir)))
            continue;
        while (rc >= 0 && (he = readdir(b)) != NULL) {
            char hdir[PATH_MAX];
            DIR *h;
            struct dirent *fe;
            if (strlen(he->d_name) != 2 || strspn(he->d_name, "0123456789abcdef") != 2 ||
                objstore__fmt(hdir, sizeof(hdir), "%s/%s", bdir, he->d_name) != 0 ||
                !(h = opendir(hdir)))
                continue;
            while (rc >= 0 && (fe = readdir(h)) != NULL) {
                rc = objstore_sweep_hashed_one(os, de->d_name, he->d_name, hdir, fe->d_name,
                                               max_age_s);
                if (rc > 0)
                    n++;
            }
            closedir(h);
        }
        closedir(b);
    }
    closedir(d);
    if (n)
        ty_log(TY_LOG_INFO, "s3.hashed.swept", "dir='%s' removed=%d max_age_s=%d", top, n,
               max_age_s);
    return rc < 0 ? rc : n;
}

/* Renames tmp into place for bucket/key, natural path first. OUT: rel (relative path). */
static int objstore_place(struct objstore *os, const char *bucket, const char *key, const char *tmp,
                          char *rel, size_t reln)
{
    char abs[PATH_MAX];

    if (objstore_natural_rel(bucket, key, rel, reln) == 0 &&
        objstore__fmt(abs, sizeof(abs), "%s/%s", os->dir, rel) == 0) {
        for (int attempt = 0; attempt < 2; attempt++) {
            if (objstore_mkparent(abs) == 0 && rename(tmp, abs) == 0) {
                objstore__fsync_parent(abs);
                return 0;
            }
            if (errno != ENOENT)
                break;
        }
    }
    /* not a plain path, or it collides with another key's file or directory */
    if (objstore_hashed_rel(bucket, key, rel, reln) != 0 ||
        objstore__fmt(abs, sizeof(abs), "%s/%s", os->dir, rel) != 0 ||
        objstore_mkparent(abs) != 0 || objstore_hashed_tag(os, abs, key) != 0 ||
        rename(tmp, abs) != 0)
        return -1;
    objstore__fsync_parent(abs);
    return 0;
}

static void objstore_unlink_rel(struct objstore *os, const char *bucket, const char *rel)
{
    char abs[PATH_MAX], stop[PATH_MAX];

    if (objstore__fmt(abs, sizeof(abs), "%s/%s", os->dir, rel) != 0)
        return;
    unlink(abs);
    if (strncmp(rel, ".ty/", 4) == 0) { /* a hashed path: its key tag goes with it */
        if (objstore__fmt(stop, sizeof(stop), "%s.key", abs) == 0)
            unlink(stop);
        return;
    }
    if (objstore__fmt(stop, sizeof(stop), "%s/%s", os->dir, bucket) == 0)
        objstore_prune(abs, stop);
}

int objstore_etag_match(const char *list, const char *etag)
{
    const char *p = list;
    size_t el = strlen(etag);

    while (p && *p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (*p == '"' && strncmp(p + 1, etag, el) == 0 && p[1 + el] == '"')
            return 1;
        if (strncmp(p, etag, el) == 0 && (p[el] == '\0' || p[el] == ',' || p[el] == ' '))
            return 1;
        p = strchr(p, ',');
    }
    return 0;
}

int objstore__check_cond(const struct objstore_cond *cond, const struct objstore_meta *old,
                         struct ty_err *err)
{
    if (!cond)
        return 0;
    if (cond->if_none_match && old)
        return ty_err_set(err, TY_ECONFLICT, "PreconditionFailed",
                          "At least one of the pre-conditions you specified did not hold");
    if (cond->if_match && !old)
        return ty_err_set(err, TY_ENOTFOUND, "NoSuchKey", "The specified key does not exist.");
    if (cond->if_match && !objstore_etag_match(cond->if_match, old->etag))
        return ty_err_set(err, TY_ECONFLICT, "PreconditionFailed",
                          "At least one of the pre-conditions you specified did not hold");
    return 0;
}

int objstore__put_tmp(struct objstore *os, const char *bucket, const char *key,
                      const char *tmp_path, const char *etag, uint64_t size, int parts,
                      json_t *hdrs, const char *psizes, const struct objstore_cond *cond,
                      struct objstore_meta *meta, struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    struct objstore_meta m, old;
    pthread_mutex_t *lk;
    int rc, had_old;

    if ((rc = objstore_bucket_get(os, bucket, NULL, err)) != 0)
        return rc;
    memset(&m, 0, sizeof(m));
    snprintf(m.etag, sizeof(m.etag), "%s", etag);
    m.size = size;
    m.parts = parts;
    m.mtime_ms = (int64_t)ty_wall_ms();
    {
        struct stat st;
        if (stat(tmp_path, &st) == 0)
            m.ino = (uint64_t)st.st_ino; /* rename keeps the inode */
    }
    lk = objstore_lock_for(bucket, key);
    pthread_mutex_lock(lk);
    had_old = objstore_meta_load(os, bucket, key, &old, 0, err) == 0;
    ty_err_clear(err);
    if ((rc = objstore__check_cond(cond, had_old ? &old : NULL, err)) != 0)
        goto out;
    if (objstore_place(os, bucket, key, tmp_path, m.path, sizeof(m.path)) != 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot store the object: %s", strerror(errno));
        goto out;
    }
    if ((rc = objstore_index_put(os, bucket, key, &m, hdrs, psizes, err)) != 0)
        goto out;
    if (had_old && strcmp(old.path, m.path) != 0)
        objstore_unlink_rel(os, bucket, old.path);
    if (meta)
        *meta = m;
out:
    pthread_mutex_unlock(lk);
    return rc;
}

int objstore_put_tmp(struct objstore *os, const char *bucket, const char *key, const char *tmp_path,
                     const char *etag, uint64_t size, int parts, json_t *hdrs,
                     struct objstore_meta *meta, struct ty_err *err)
{
    return objstore__put_tmp(os, bucket, key, tmp_path, etag, size, parts, hdrs, NULL, NULL, meta,
                             err);
}

int objstore_put_tmp_cond(struct objstore *os, const char *bucket, const char *key,
                          const char *tmp_path, const char *etag, uint64_t size, json_t *hdrs,
                          const struct objstore_cond *cond, struct objstore_meta *meta,
                          struct ty_err *err)
{
    return objstore__put_tmp(os, bucket, key, tmp_path, etag, size, 0, hdrs, NULL, cond, meta, err);
}

int objstore_cond_check(struct objstore *os, const char *bucket, const char *key,
                        const struct objstore_cond *cond, struct ty_err *err)
{
    struct objstore_meta m;
    int rc;

    if (!cond || (!cond->if_match && !cond->if_none_match))
        return 0;
    memset(&m, 0, sizeof(m));
    rc = objstore_head(os, bucket, key, &m, err);
    if (rc != 0 && rc != -TY_ENOTFOUND)
        return rc;
    if (rc == -TY_ENOTFOUND && strcmp(err->field, "NoSuchBucket") == 0)
        return rc;
    ty_err_clear(err);
    rc = objstore__check_cond(cond, rc == 0 ? &m : NULL, err);
    objstore_meta_cleanup(&m);
    return rc;
}

int objstore_part_range(struct objstore *os, const char *bucket, const char *key,
                        const struct objstore_meta *m, int number, uint64_t *first, uint64_t *len,
                        struct ty_err *err)
{
    char *ps = NULL;
    uint64_t off = 0, total = 0, found_len = 0;
    int i = 0, found = 0, rc;

    if (number < 1 || number > (m->parts ? m->parts : 1))
        return ty_err_set(err, TY_EINVAL, "InvalidPart", OBJSTORE_NO_SUCH_PART);
    if (!m->parts) {
        *first = 0;
        *len = m->size;
        return 0;
    }
    if (os->remote)
        return ty_err_set(err, TY_EINVAL, "NotImplemented",
                          "partNumber is not served by the external S3 store");
    if ((rc = store_obj_psizes(os->st, bucket, key, &ps, err)) != 0)
        return rc;
    for (const char *p = ps; *p;) {
        char *e;
        unsigned long long v = strtoull(p, &e, 10);
        if (e == p)
            break;
        i++;
        if (i == number) {
            *first = off;
            found_len = v;
            found = 1;
        }
        off += v;
        total += v;
        p = *e == ',' ? e + 1 : e;
    }
    free(ps);
    /* the sizes must describe this version (a newer one may have replaced it) */
    if (!found || i != m->parts || total != m->size)
        return ty_err_set(err, TY_EINVAL, "InvalidPart", OBJSTORE_NO_SUCH_PART);
    *len = found_len;
    return 0;
}

/* Copies fd into a new temp file while hashing. OUT: tmp path, md5 hex, size. */
static int objstore_copy_to_tmp(struct objstore *os, int in, char *tmp, size_t tn, char *md5,
                                uint64_t *size, struct ty_err *err)
{
    return objstore__copy_to_tmp_n(os, in, UINT64_MAX, tmp, tn, md5, size, err);
}

int objstore__copy_to_tmp_n(struct objstore *os, int in, uint64_t limit, char *tmp, size_t tn,
                            char *md5, uint64_t *size, struct ty_err *err)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char md[16];
    unsigned int mdlen = 0;
    char *buf = malloc(OBJSTORE_CHUNK);
    uint64_t total = 0;
    ssize_t r = 0;
    int out = -1, rc = -TY_EIO;

    if (!c || !buf || EVP_DigestInit_ex(c, EVP_md5(), NULL) != 1) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    out = objstore_tmp_create(os, tmp, tn, err);
    if (out < 0) {
        rc = out;
        goto done;
    }
    while (total < limit && (r = read(in, buf,
                                      limit - total < OBJSTORE_CHUNK ? (size_t)(limit - total)
                                                                     : OBJSTORE_CHUNK)) > 0) {
        EVP_DigestUpdate(c, buf, (size_t)r);
        if (ty_write_all(out, buf, (size_t)r) < 0) {
            r = -1;
            break;
        }
        total += (uint64_t)r;
    }
    if (r < 0 || fsync(out) != 0 || EVP_DigestFinal_ex(c, md, &mdlen) != 1) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot copy the object: %s", strerror(errno));
        unlink(tmp);
        goto done;
    }
    ty_hex_encode(md, 16, md5);
    *size = total;
    rc = 0;
done:
    if (out >= 0)
        close(out);
    EVP_MD_CTX_free(c);
    free(buf);
    return rc;
}

/* Indexes the file at <s3>/<rel> as bucket/key (it already is at its natural path). */
static int objstore_adopt_file(struct objstore *os, const char *bucket, const char *key,
                               const char *rel, json_t *hdrs, struct ty_err *err)
{
    struct objstore_meta m;
    char abs[PATH_MAX];
    struct stat st;
    int fd, rc;

    memset(&m, 0, sizeof(m));
    if (objstore__fmt(abs, sizeof(abs), "%s/%s", os->dir, rel) != 0)
        return ty_err_set(err, TY_ENOTFOUND, "NoSuchKey", "The specified key does not exist.");
    fd = open(abs, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return ty_err_set(err, TY_ENOTFOUND, "NoSuchKey", "The specified key does not exist.");
    }
    rc = objstore_md5_fd(fd, m.etag, &m.size);
    close(fd);
    if (rc != 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot read '%s'", abs);
    m.mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    m.ino = (uint64_t)st.st_ino;
    snprintf(m.path, sizeof(m.path), "%s", rel);
    return objstore_index_put(os, bucket, key, &m, hdrs, NULL, err);
}

static int objstore_adopt_tree(struct objstore *os, const char *bucket, const char *abs,
                               const char *rel, int depth, int *found, struct ty_err *err)
{
    DIR *d;
    struct dirent *de;
    int rc = 0;

    if (depth > OBJSTORE_MAX_DEPTH)
        return 0;
    d = opendir(abs);
    if (!d)
        return 0;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        char p[PATH_MAX], k[OBJSTORE_MAX_KEY + 2], r2[PATH_MAX];
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (objstore__fmt(p, sizeof(p), "%s/%s", abs, de->d_name) != 0 || lstat(p, &st) != 0)
            continue;
        if (rel[0] ? objstore__fmt(k, sizeof(k), "%s/%s", rel, de->d_name)
                   : objstore__fmt(k, sizeof(k), "%s", de->d_name))
            continue;
        if (S_ISDIR(st.st_mode)) {
            rc = objstore_adopt_tree(os, bucket, p, k, depth + 1, found, err);
        } else if (S_ISREG(st.st_mode) && objstore_key_ok(k)) {
            struct objstore_meta m;
            if (objstore_meta_load(os, bucket, k, &m, 0, err) == 0)
                continue;
            ty_err_clear(err);
            if (objstore__fmt(r2, sizeof(r2), "%s/%s", bucket, k) != 0)
                continue;
            json_t *h = json_pack("{s:s}", "Content-Type", "binary/octet-stream");
            rc = objstore_adopt_file(os, bucket, k, r2, h, err);
            json_decref(h);
            if (rc == -TY_ENOTFOUND) {
                rc = 0;
                ty_err_clear(err);
            } else if (rc == 0) {
                (*found)++;
            }
        }
    }
    closedir(d);
    return rc;
}

int objstore_put_file(struct objstore *os, const char *bucket, const char *key, const char *src,
                      const char *content_type, struct ty_err *err)
{
    if (os->remote)
        return objstore_remote_put_file(os->remote, bucket, key, src, content_type, err);
    char tmp[PATH_MAX], md5[33], natural[PATH_MAX], rel[PATH_MAX];
    json_t *hdrs;
    uint64_t size = 0;
    int fd, rc;

    if (!objstore_key_ok(key))
        return ty_err_set(err, TY_EINVAL, "KeyTooLongError", "invalid key '%s'", key);
    if ((rc = objstore_bucket_get(os, bucket, NULL, err)) != 0)
        return rc;
    hdrs = json_pack("{s:s}", "Content-Type", content_type ? content_type : "binary/octet-stream");
    if (objstore_natural_rel(bucket, key, rel, sizeof(rel)) == 0 &&
        objstore__fmt(natural, sizeof(natural), "%s/%s", os->dir, rel) == 0 &&
        strcmp(natural, src) == 0) {
        pthread_mutex_t *lk = objstore_lock_for(bucket, key);
        pthread_mutex_lock(lk);
        rc = objstore_adopt_file(os, bucket, key, rel, hdrs, err);
        pthread_mutex_unlock(lk);
        json_decref(hdrs);
        return rc;
    }
    fd = open(src, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        json_decref(hdrs);
        return ty_err_set(err, TY_EIO, NULL, "cannot open '%s': %s", src, strerror(errno));
    }
    rc = objstore_copy_to_tmp(os, fd, tmp, sizeof(tmp), md5, &size, err);
    close(fd);
    if (rc == 0) {
        rc = objstore_put_tmp(os, bucket, key, tmp, md5, size, 0, hdrs, NULL, err);
        if (rc != 0)
            unlink(tmp);
    }
    json_decref(hdrs);
    return rc;
}

int objstore_copy(struct objstore *os, const char *sb, const char *sk, const char *db,
                  const char *dk, json_t *hdrs, struct objstore_meta *meta, struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    struct objstore_meta src;
    char tmp[PATH_MAX], md5[33];
    uint64_t size = 0;
    int fd, rc;

    fd = objstore_open_read(os, sb, sk, &src, err);
    if (fd < 0)
        return fd;
    if (src.parts && src.hdrs) { /* the copy is one part: a composite checksum is not its own */
        const char *k;
        json_t *v;
        void *it;
        json_object_foreach_safe(src.hdrs, it, k, v)
        {
            if (strncmp(k, "x-amz-checksum-", 15) == 0)
                json_object_del(src.hdrs, k);
        }
    }
    rc = objstore_copy_to_tmp(os, fd, tmp, sizeof(tmp), md5, &size, err);
    close(fd);
    if (rc == 0) {
        rc = objstore_put_tmp(os, db, dk, tmp, md5, size, 0, hdrs ? hdrs : src.hdrs, meta, err);
        if (rc != 0)
            unlink(tmp);
    }
    objstore_meta_cleanup(&src);
    return rc;
}

/*
 * The file at abs is not the version the index names (meta, as read without the lock). Under the
 * key's lock no commit of this process is in flight, so a mismatch that is still there is an
 * index that missed a commit (a crash, or a Redis error, between the rename and the index
 * write): the file is indexed again as it is, keeping the headers the index had.
 */
static void objstore_repair(struct objstore *os, const char *bucket, const char *key,
                            const char *abs, const struct objstore_meta *meta)
{
    pthread_mutex_t *lk = objstore_lock_for(bucket, key);
    struct objstore_meta now;
    struct ty_err err;
    struct stat st;

    ty_err_clear(&err);
    memset(&now, 0, sizeof(now));
    pthread_mutex_lock(lk);
    if (objstore_meta_load(os, bucket, key, &now, 1, &err) == 0 &&
        strcmp(now.path, meta->path) == 0 && now.ino && stat(abs, &st) == 0 &&
        (uint64_t)st.st_ino != now.ino) {
        if (objstore_adopt_file(os, bucket, key, now.path, now.hdrs, &err) == 0)
            ty_log(TY_LOG_WARN, "s3.index.repaired",
                   "bucket=%s key_len=%zu note='the index missed a commit; reindexed the file'",
                   bucket, strlen(key));
        else
            ty_log(TY_LOG_WARN, "s3.index.repair_failed", "bucket=%s error='%s'", bucket, err.msg);
    }
    objstore_meta_cleanup(&now);
    pthread_mutex_unlock(lk);
}

int objstore_head(struct objstore *os, const char *bucket, const char *key,
                  struct objstore_meta *meta, struct ty_err *err)
{
    if (os->remote)
        return objstore_remote_head(os->remote, bucket, key, meta, err);
    char rel[PATH_MAX];
    int rc;

    if ((rc = objstore_bucket_get(os, bucket, NULL, err)) != 0)
        return rc;
    rc = objstore_meta_load(os, bucket, key, meta, 1, err);
    if (rc == 0 && meta->ino) { /* the indexed version is the file there (else: repair) */
        char abs[PATH_MAX];
        struct stat st;
        if (objstore__fmt(abs, sizeof(abs), "%s/%s", os->dir, meta->path) == 0 &&
            stat(abs, &st) == 0 && (uint64_t)st.st_ino != meta->ino) {
            objstore_repair(os, bucket, key, abs, meta);
            objstore_meta_cleanup(meta);
            rc = objstore_meta_load(os, bucket, key, meta, 1, err);
        }
    }
    if (rc != -TY_ENOTFOUND)
        return rc;
    /* not indexed: a file the agent (or someone) put at the object's natural path */
    if (objstore_natural_rel(bucket, key, rel, sizeof(rel)) == 0) {
        pthread_mutex_t *lk = objstore_lock_for(bucket, key);
        json_t *h = json_pack("{s:s}", "Content-Type", "binary/octet-stream");
        pthread_mutex_lock(lk);
        rc = objstore_meta_load(os, bucket, key, meta, 1, err);
        if (rc == -TY_ENOTFOUND) {
            rc = objstore_adopt_file(os, bucket, key, rel, h, err);
            if (rc == 0)
                rc = objstore_meta_load(os, bucket, key, meta, 1, err);
        }
        pthread_mutex_unlock(lk);
        json_decref(h);
        if (rc == 0)
            return 0;
    }
    return ty_err_set(err, TY_ENOTFOUND, "NoSuchKey", "The specified key does not exist.");
}

int objstore_open_read(struct objstore *os, const char *bucket, const char *key,
                       struct objstore_meta *meta, struct ty_err *err)
{
    char abs[PATH_MAX];
    int rc, fd;

    if (os->remote) { /* downloaded whole into an unlinked temp file, read from its start */
        char tmp[PATH_MAX];
        fd = objstore_tmp_create(os, tmp, sizeof(tmp), err);
        if (fd < 0)
            return fd;
        unlink(tmp);
        rc = objstore_remote_get(os->remote, bucket, key, fd, meta, err);
        if (rc == 0 && lseek(fd, 0, SEEK_SET) != 0)
            rc = ty_err_set(err, TY_EIO, NULL, "seek: %s", strerror(errno));
        if (rc != 0) {
            close(fd);
            return rc;
        }
        return fd;
    }
    /* The metadata names the version (inode) it describes: a PUT that renames new bytes into
       place between the lookup and the open is seen here, and the lookup is done again. */
    for (int attempt = 0; attempt < 50; attempt++) {
        struct stat st;
        if ((rc = objstore_head(os, bucket, key, meta, err)) != 0)
            return rc;
        if (objstore__fmt(abs, sizeof(abs), "%s/%s", os->dir, meta->path) != 0)
            break;
        fd = open(abs, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0 && (!meta->ino || (uint64_t)st.st_ino == meta->ino)) {
            meta->size = (uint64_t)st.st_size;
            return fd;
        }
        if (fd >= 0) {
            close(fd);
            objstore_repair(os, bucket, key, abs, meta);
        }
        objstore_meta_cleanup(meta);
        if (attempt > 2)
            usleep(1000);
    }
    return ty_err_set(err, TY_ENOTFOUND, "NoSuchKey", "The specified key does not exist.");
}

int objstore_delete(struct objstore *os, const char *bucket, const char *key, struct ty_err *err)
{
    if (os->remote)
        return objstore_remote_delete(os->remote, bucket, key, err);
    struct objstore_meta m;
    char rel[PATH_MAX];
    pthread_mutex_t *lk;
    int rc, had;

    if ((rc = objstore_bucket_get(os, bucket, NULL, err)) != 0)
        return rc;
    lk = objstore_lock_for(bucket, key);
    pthread_mutex_lock(lk);
    had = objstore_meta_load(os, bucket, key, &m, 0, err) == 0;
    ty_err_clear(err);
    rc = store_obj_delete(os->st, bucket, key, err);
    if (rc == 0 && had)
        objstore_unlink_rel(os, bucket, m.path);
    else if (rc == 0 && objstore_natural_rel(bucket, key, rel, sizeof(rel)) == 0) {
        char abs[PATH_MAX];
        struct stat st;
        if (objstore__fmt(abs, sizeof(abs), "%s/%s", os->dir, rel) == 0 && lstat(abs, &st) == 0 &&
            S_ISREG(st.st_mode))
            objstore_unlink_rel(os, bucket, rel);
    }
    pthread_mutex_unlock(lk);
    return rc;
}
