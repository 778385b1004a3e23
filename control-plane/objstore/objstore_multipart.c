/*
 * objstore_multipart.c - multipart uploads in the embedded object store: create, parts (put and
 * copy), list, abort and complete (parts concatenated while their MD5 and size are taken from
 * the bytes themselves, the multipart ETag and the composite checksums computed on the way).
 * One writer at a time per upload (mpu_lock).
 */
#define _GNU_SOURCE
#include "objstore.h"
#include "objstore_int.h"

#include "store_obj.h"
#include "ty_codec.h"

#include "ty_crc32c.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "ty_time.h"

#include <ctype.h>
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
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

/* ---- multipart uploads --------------------------------------------------------------------- */

/*
 * One writer at a time per upload, in this process (the one server that serves this data
 * dir's S3: the private Redis refuses a second): a part's file and its record change together,
 * so two tries of one part never leave the bytes of one and the ETag or size of the other; a
 * Complete or an Abort sees the upload settled and ends it once, and a part put after it is
 * NoSuchUpload. Striped by the upload id.
 */
#define MPU_LOCKS 64
static pthread_mutex_t mpu_locks[MPU_LOCKS];
static pthread_once_t mpu_locks_once = PTHREAD_ONCE_INIT;

static void mpu_locks_init(void)
{
    for (size_t i = 0; i < MPU_LOCKS; i++)
        pthread_mutex_init(&mpu_locks[i], NULL);
}

static pthread_mutex_t *mpu_lock(const char *id)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    pthread_once(&mpu_locks_once, mpu_locks_init);
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 16777619u;
    pthread_mutex_lock(&mpu_locks[h % MPU_LOCKS]);
    return &mpu_locks[h % MPU_LOCKS];
}

static int objstore_id_ok(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n != OBJSTORE_UPLOAD_ID_SZ - 1)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return 0;
    }
    return 1;
}

static int objstore_no_upload(struct ty_err *err)
{
    return ty_err_set(err, TY_ENOTFOUND, "NoSuchUpload",
                      "The specified upload does not exist. The upload ID may be invalid, or the "
                      "upload may have been aborted or completed.");
}

int objstore_mpu_create(struct objstore *os, const char *bucket, const char *key, json_t *hdrs,
                        char *upload_id, struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    unsigned char rnd[16];
    char id[OBJSTORE_UPLOAD_ID_SZ], dir[PATH_MAX];
    int64_t init;
    int rc = 0;

    if ((rc = objstore_bucket_get(os, bucket, NULL, err)) != 0)
        return rc;
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return ty_err_set(err, TY_EINTERNAL, NULL, "no randomness");
    ty_hex_encode(rnd, 16, id);
    init = (int64_t)ty_wall_ms();
    if (objstore__fmt(dir, sizeof(dir), "%s/.ty/mpu/%s", os->dir, id) != 0 || mkdir(dir, 0755) != 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot create the upload: %s", strerror(errno));
    rc = store_obj_mpu_create(os->st, id, bucket, key, init, hdrs, err);
    if (rc == 0)
        memcpy(upload_id, id, sizeof(id));
    else
        rmdir(dir);
    return rc;
}

int objstore_mpu_get(struct objstore *os, const char *bucket, const char *key, const char *id,
                     json_t **hdrs, struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    int rc;

    if (hdrs)
        *hdrs = NULL;
    if (!objstore_id_ok(id))
        return objstore_no_upload(err);
    rc = store_obj_mpu_get(os->st, id, bucket, key, hdrs, err);
    return rc == -TY_ENOTFOUND ? objstore_no_upload(err) : rc;
}

int objstore_mpu_put_part(struct objstore *os, const char *bucket, const char *key, const char *id,
                          int number, const char *tmp_path, const char *etag, uint64_t size,
                          struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    struct store_obj_part p;
    char dst[PATH_MAX];
    int rc;

    pthread_mutex_t *lk;

    if (number < 1 || number > OBJSTORE_MAX_PARTS)
        return ty_err_set(err, TY_EINVAL, "InvalidArgument",
                          "Part number must be an integer between 1 and 10000, inclusive");
    if (!objstore_id_ok(id))
        return objstore_no_upload(err);
    if (objstore__fmt(dst, sizeof(dst), "%s/.ty/mpu/%s/%d", os->dir, id, number) != 0)
        return ty_err_set(err, TY_EIO, NULL, "path too long");
    lk = mpu_lock(id);
    if ((rc = objstore_mpu_get(os, bucket, key, id, NULL, err)) != 0)
        goto out;
    if (rename(tmp_path, dst) != 0) {
        rc = errno == ENOENT
                 ? objstore_no_upload(err)
                 : ty_err_set(err, TY_EIO, NULL, "cannot store the part: %s", strerror(errno));
        goto out;
    }
    objstore__fsync_parent(dst);
    memset(&p, 0, sizeof(p));
    p.number = number;
    snprintf(p.etag, sizeof(p.etag), "%s", etag);
    p.size = size;
    p.mtime_ms = (int64_t)ty_wall_ms();
    rc = store_obj_mpu_part_put(os->st, id, &p, err);
out:
    pthread_mutex_unlock(lk);
    return rc;
}

int objstore_mpu_copy_part(struct objstore *os, const char *bucket, const char *key, const char *id,
                           int number, const char *sb, const char *sk, uint64_t first,
                           uint64_t last, struct objstore_part *out, struct ty_err *err)
{
    struct objstore_meta src;
    char tmp[PATH_MAX];
    uint64_t size = 0;
    int fd, rc;

    if (objstore__local_only(os, err))
        return -err->code;
    if ((rc = objstore_mpu_get(os, bucket, key, id, NULL, err)) != 0)
        return rc;
    if (number < 1 || number > OBJSTORE_MAX_PARTS)
        return ty_err_set(err, TY_EINVAL, "InvalidArgument",
                          "Part number must be an integer between 1 and 10000, inclusive");
    fd = objstore_open_read(os, sb, sk, &src, err);
    if (fd < 0)
        return fd;
    if (last == UINT64_MAX && first == 0) {
        last = src.size ? src.size - 1 : 0;
    } else if (first >= src.size || last >= src.size) {
        rc = ty_err_set(err, TY_EINVAL, "InvalidArgument",
                        "Range specified is not valid for source object of size: %llu",
                        (unsigned long long)src.size);
        goto out;
    }
    if (lseek(fd, (off_t)first, SEEK_SET) < 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "seek: %s", strerror(errno));
        goto out;
    }
    memset(out, 0, sizeof(*out));
    rc = objstore__copy_to_tmp_n(os, fd, src.size ? last - first + 1 : 0, tmp, sizeof(tmp),
                                 out->etag, &size, err);
    if (rc == 0 &&
        (rc = objstore_mpu_put_part(os, bucket, key, id, number, tmp, out->etag, size, err)) != 0)
        unlink(tmp);
    out->number = number;
    out->size = size;
    out->mtime_ms = (int64_t)ty_wall_ms();
out:
    close(fd);
    objstore_meta_cleanup(&src);
    return rc;
}

int objstore_mpu_parts(struct objstore *os, const char *id, struct objstore_part **out, size_t *n,
                       struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    struct store_obj_part *sp = NULL;
    struct objstore_part *v;
    size_t k = 0;
    int rc;

    if (!objstore_id_ok(id))
        return objstore_no_upload(err);
    if ((rc = store_obj_mpu_parts(os->st, id, &sp, &k, err)) != 0)
        return rc;
    v = calloc(k + 1, sizeof(*v));
    if (!v) {
        free(sp);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < k; i++) { /* by number already */
        v[i].number = sp[i].number;
        snprintf(v[i].etag, sizeof(v[i].etag), "%s", sp[i].etag);
        v[i].size = sp[i].size;
        v[i].mtime_ms = sp[i].mtime_ms;
    }
    free(sp);
    *out = v;
    *n = k;
    return 0;
}

/* Forgets upload id (best effort: a record left behind names parts no longer there). */
static void objstore_mpu_drop(struct objstore *os, const char *bucket, const char *key,
                              const char *id)
{
    char dir[PATH_MAX];
    struct ty_err e;

    ty_err_clear(&e);
    store_obj_mpu_drop(os->st, id, bucket, key, &e);
    if (objstore__fmt(dir, sizeof(dir), "%s/.ty/mpu/%s", os->dir, id) == 0)
        objstore__rmtree(dir, 0);
}

int objstore_mpu_abort(struct objstore *os, const char *bucket, const char *key, const char *id,
                       struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    pthread_mutex_t *lk;
    int rc;

    if (!objstore_id_ok(id))
        return objstore_no_upload(err);
    lk = mpu_lock(id);
    if ((rc = objstore_mpu_get(os, bucket, key, id, NULL, err)) == 0)
        objstore_mpu_drop(os, bucket, key, id);
    pthread_mutex_unlock(lk);
    return rc;
}

/*
 * Appends the part file src to fd out while hashing it: the bytes that go into the object are
 * the bytes its ETag and size describe. OUT: md (MD5), *bytes. 0, or -1 with errno.
 */
static int mpu_append_part(int out, const char *src, unsigned char md[16], uint64_t *bytes)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    char *buf = malloc(OBJSTORE_CHUNK);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    unsigned int ml = 0;
    ssize_t r = -1;

    *bytes = 0;
    if (in >= 0 && c && buf && EVP_DigestInit_ex(c, EVP_md5(), NULL) == 1) {
        while ((r = read(in, buf, OBJSTORE_CHUNK)) > 0) {
            if (EVP_DigestUpdate(c, buf, (size_t)r) != 1 || ty_write_all(out, buf, (size_t)r) < 0) {
                r = -1;
                break;
            }
            *bytes += (uint64_t)r;
        }
        if (r == 0 && EVP_DigestFinal_ex(c, md, &ml) != 1)
            r = -1;
    }
    if (in >= 0)
        close(in);
    free(buf);
    EVP_MD_CTX_free(c);
    return r == 0 ? 0 : -1;
}

/* S3's additional checksum algorithms, as objstore_mpu_complete_ck names them. */
enum mpu_ck { MPU_CK_NONE, MPU_CK_CRC32, MPU_CK_CRC32C, MPU_CK_SHA1, MPU_CK_SHA256 };

static enum mpu_ck mpu_ck_of(const char *algo)
{
    if (!algo || !*algo)
        return MPU_CK_NONE;
    if (strcasecmp(algo, "CRC32") == 0)
        return MPU_CK_CRC32;
    if (strcasecmp(algo, "CRC32C") == 0)
        return MPU_CK_CRC32C;
    if (strcasecmp(algo, "SHA1") == 0)
        return MPU_CK_SHA1;
    if (strcasecmp(algo, "SHA256") == 0)
        return MPU_CK_SHA256;
    return MPU_CK_NONE;
}

/* The checksum ck of p[0..n), continued in *crc (CRCs) or c (digests). */
static void mpu_ck_update(enum mpu_ck ck, uint32_t *crc, EVP_MD_CTX *c, const void *p, size_t n)
{
    if (ck == MPU_CK_CRC32)
        *crc = (uint32_t)crc32(*crc, p, (uInt)n);
    else if (ck == MPU_CK_CRC32C)
        *crc = ty_crc32c(*crc, p, n);
    else
        EVP_DigestUpdate(c, p, n);
}

/* Starts a checksum ck. new: *c (digests; EVP_MD_CTX_free). 0 or -1. */
static int mpu_ck_init(enum mpu_ck ck, uint32_t *crc, EVP_MD_CTX **c)
{
    *crc = 0;
    *c = NULL;
    if (ck == MPU_CK_CRC32 || ck == MPU_CK_CRC32C)
        return 0;
    *c = EVP_MD_CTX_new();
    return *c && EVP_DigestInit_ex(*c, ck == MPU_CK_SHA1 ? EVP_sha1() : EVP_sha256(), NULL) == 1
               ? 0
               : -1;
}

/* Ends a checksum. OUT: md (up to 32 bytes; CRCs big-endian). Returns its length. */
static size_t mpu_ck_final(enum mpu_ck ck, uint32_t crc, EVP_MD_CTX *c, unsigned char *md)
{
    unsigned int ml = 0;

    if (ck == MPU_CK_CRC32 || ck == MPU_CK_CRC32C) {
        md[0] = (unsigned char)(crc >> 24);
        md[1] = (unsigned char)(crc >> 16);
        md[2] = (unsigned char)(crc >> 8);
        md[3] = (unsigned char)crc;
        return 4;
    }
    EVP_DigestFinal_ex(c, md, &ml);
    return ml;
}

/* The checksum ck of file path. OUT: md (32 bytes), *ml. 0 or -1 (errno). */
static int mpu_ck_file(enum mpu_ck ck, const char *path, unsigned char *md, size_t *ml)
{
    unsigned char buf[65536];
    EVP_MD_CTX *c = NULL;
    uint32_t crc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
    ssize_t r;

    if (fd < 0 || mpu_ck_init(ck, &crc, &c) != 0)
        goto out;
    while ((r = read(fd, buf, sizeof(buf))) > 0)
        mpu_ck_update(ck, &crc, c, buf, (size_t)r);
    if (r == 0) {
        *ml = mpu_ck_final(ck, crc, c, md);
        rc = 0;
    }
out:
    if (fd >= 0)
        close(fd);
    EVP_MD_CTX_free(c);
    return rc;
}

/* 1 when base64 b (with or without a "-N" suffix) is want (base64, "-N" suffixed). */
static int objstore_same_ck(const char *b, const char *want)
{
    const char *dash = strrchr(want, '-');
    size_t wl = dash ? (size_t)(dash - want) : strlen(want);
    return strcmp(b, want) == 0 || (strlen(b) == wl && strncmp(b, want, wl) == 0);
}

/*
 * The checksum checks of objstore_mpu_complete_ck over the already matched parts (got[i] is
 * parts[i]'s stored part). OUT: composite. 0 or InvalidPart / BadDigest / EIO.
 */
static int objstore_mpu_checksums(struct objstore *os, const char *id, enum mpu_ck ck,
                                  const struct objstore_part *const *got, size_t n,
                                  const char *const *part_ck, const char *expect, char *composite,
                                  struct ty_err *err)
{
    EVP_MD_CTX *c = NULL;
    unsigned char md[32], all[32];
    size_t ml = 0, al;
    uint32_t crc = 0;
    char b64[64], src[PATH_MAX];
    int rc = 0;

    if (mpu_ck_init(ck, &crc, &c) != 0) {
        EVP_MD_CTX_free(c);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (objstore__fmt(src, sizeof(src), "%s/.ty/mpu/%s/%d", os->dir, id, got[i]->number) != 0 ||
            mpu_ck_file(ck, src, md, &ml) != 0) {
            rc = ty_err_set(err, TY_EIO, NULL, "cannot read part %d: %s", got[i]->number,
                            strerror(errno));
            goto out;
        }
        if (part_ck && part_ck[i] && part_ck[i][0]) {
            EVP_EncodeBlock((unsigned char *)b64, md, (int)ml);
            if (strcmp(b64, part_ck[i]) != 0) {
                rc = ty_err_set(err, TY_EINVAL, "InvalidPart",
                                "One or more of the specified parts could not be found. The part "
                                "may not have been uploaded, or the specified checksum may not "
                                "match the part's checksum.");
                goto out;
            }
        }
        mpu_ck_update(ck, &crc, c, md, ml);
    }
    al = mpu_ck_final(ck, crc, c, all);
    EVP_EncodeBlock((unsigned char *)b64, all, (int)al); /* at most 44 characters */
    snprintf(composite, OBJSTORE_CK_SZ, "%.44s-%u", b64, (unsigned)(n % 100000));
    if (expect && *expect && !objstore_same_ck(expect, composite)) {
        char low[16];
        size_t k;
        const char *name = ck == MPU_CK_CRC32    ? "crc32"
                           : ck == MPU_CK_CRC32C ? "crc32c"
                           : ck == MPU_CK_SHA1   ? "sha1"
                                                 : "sha256";
        for (k = 0; name[k] && k + 1 < sizeof(low); k++)
            low[k] = name[k];
        low[k] = '\0';
        rc = ty_err_set(err, TY_EINVAL, "BadDigest",
                        "The %s you specified did not match the calculated checksum.", low);
    }
out:
    EVP_MD_CTX_free(c);
    return rc;
}

int objstore_mpu_complete(struct objstore *os, const char *bucket, const char *key, const char *id,
                          const struct objstore_part *parts, size_t n, struct objstore_meta *meta,
                          struct ty_err *err)
{
    return objstore_mpu_complete_ck(os, bucket, key, id, parts, n, NULL, NULL, NULL, NULL, NULL,
                                    meta, err);
}

/* A client's ETag without its optional quotes: *len bytes from the returned pointer. */
static const char *mpu_etag_bare(const char *e, size_t *len)
{
    size_t l;

    if (*e == '"')
        e++;
    l = strlen(e);
    if (l && e[l - 1] == '"')
        l--;
    *len = l;
    return e;
}

void objstore_mpu_list_digest(const struct objstore_part *parts, size_t n, char *out)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char md[16];
    unsigned int ml = 0;
    int ok = c && EVP_DigestInit_ex(c, EVP_md5(), NULL) == 1;

    for (size_t i = 0; ok && i < n; i++) {
        char e[80];
        size_t l;
        const char *t = mpu_etag_bare(parts[i].etag, &l);
        snprintf(e, sizeof(e), "%d:%.*s\n", parts[i].number, (int)(l < 64 ? l : 64), t);
        for (char *q = e; *q; q++)
            *q = (char)tolower((unsigned char)*q);
        ok = EVP_DigestUpdate(c, e, strlen(e)) == 1;
    }
    if (ok && EVP_DigestFinal_ex(c, md, &ml) == 1)
        ty_hex_encode(md, 16, out);
    else
        out[0] = '\0';
    EVP_MD_CTX_free(c);
}

int objstore_mpu_completed(struct objstore *os, const char *bucket, const char *key, const char *id,
                           char *etag, char *algo, char *composite, char *parts, struct ty_err *err)
{
    struct store_obj_done d;
    int rc;

    if (os->remote)
        return objstore_no_upload(err);
    rc = store_obj_mpu_done_get(os->st, id, bucket, key, &d, err);
    if (rc == -TY_ENOTFOUND)
        return objstore_no_upload(err);
    if (rc != 0)
        return rc;
    snprintf(etag, 48, "%s", d.etag);
    snprintf(composite, OBJSTORE_CK_SZ, "%s", d.composite);
    snprintf(algo, 16, "%s", d.algo);
    snprintf(parts, 33, "%s", d.parts);
    return 0;
}

/* Records that upload id completed bucket/key (for a repeated CompleteMultipartUpload; best
   effort: without it a repeat is NoSuchUpload). */
static void objstore_mpu_done(struct objstore *os, const char *bucket, const char *key,
                              const char *id, const char *etag, const char *algo,
                              const char *composite, const char *parts)
{
    struct ty_err e;

    ty_err_clear(&e);
    store_obj_mpu_done_put(os->st, id, bucket, key, etag, algo, composite, parts, &e);
}

/* 1 when the client's ETag e (quotes optional) is the stored part's. */
static int mpu_etag_is(const char *e, const struct objstore_part *got)
{
    size_t el;

    e = mpu_etag_bare(e, &el);
    return strlen(got->etag) == el && strncasecmp(got->etag, e, el) == 0;
}

/*
 * Matches the client's list parts[0..n) with the stored parts have[0..nh): numbers must not go
 * down; a number listed more than once counts once, as its entry whose ETag is the stored
 * part's. OUT: got[k] (the stored part), idx[k] (its entry in parts), *ng. 0 or InvalidPartOrder,
 * InvalidPart, EntityTooSmall.
 */
static int mpu_match_parts(const struct objstore_part *parts, size_t n,
                           const struct objstore_part *have, size_t nh,
                           const struct objstore_part **got, size_t *idx, size_t *ng,
                           struct ty_err *err)
{
    size_t k = 0;

    for (size_t i = 1; i < n; i++) {
        if (parts[i].number < parts[i - 1].number)
            return ty_err_set(err, TY_EINVAL, "InvalidPartOrder",
                              "The list of parts was not in ascending order. The parts list must "
                              "be specified in order by part number.");
    }
    for (size_t i = 0; i < n;) {
        const struct objstore_part *g = NULL;
        size_t j = i, pick = n;
        for (size_t h = 0; h < nh; h++) {
            if (have[h].number == parts[i].number)
                g = &have[h];
        }
        for (; j < n && parts[j].number == parts[i].number; j++) {
            if (g && pick == n && mpu_etag_is(parts[j].etag, g))
                pick = j;
        }
        if (pick == n)
            return ty_err_set(err, TY_EINVAL, "InvalidPart",
                              "One or more of the specified parts could not be found. The part "
                              "may not have been uploaded, or the specified entity tag may not "
                              "match the part's entity tag.");
        got[k] = g;
        idx[k] = pick;
        k++;
        i = j;
    }
    for (size_t i = 0; i + 1 < k; i++) {
        if (got[i]->size < OBJSTORE_MIN_PART)
            return ty_err_set(err, TY_EINVAL, "EntityTooSmall",
                              "Your proposed upload is smaller than the minimum allowed size");
    }
    *ng = k;
    return 0;
}

/*
 * Concatenates the parts got[0..n) of upload id into a new temp file. OUT: tmp (PATH_MAX), etag
 * (48: MD5 of the binary part MD5s "-" n), *total, psizes (new: "s1,s2,..."). 0 or EIO.
 */
static int mpu_assemble(struct objstore *os, const char *id, const struct objstore_part **got,
                        size_t n, char *tmp, char *etag, uint64_t *total, char **psizes,
                        struct ty_err *err)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char md[16];
    unsigned int mdlen = 0;
    char *ps = calloc(n, 22);
    size_t pl = 0;
    int fd = -1, rc = 0;

    tmp[0] = '\0';
    *total = 0;
    if (!c || !ps || EVP_DigestInit_ex(c, EVP_md5(), NULL) != 1) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    fd = objstore_tmp_create(os, tmp, PATH_MAX, err);
    if (fd < 0) {
        rc = fd;
        tmp[0] = '\0';
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        char src[PATH_MAX], hex[33];
        unsigned char pmd[16];
        uint64_t bytes = 0;
        if (objstore__fmt(src, sizeof(src), "%s/.ty/mpu/%s/%d", os->dir, id, got[i]->number) != 0 ||
            mpu_append_part(fd, src, pmd, &bytes) != 0) {
            rc = ty_err_set(err, TY_EIO, NULL, "cannot assemble the object: %s", strerror(errno));
            goto out;
        }
        ty_hex_encode(pmd, 16, hex);
        if (strcasecmp(hex, got[i]->etag) != 0 || bytes != got[i]->size) {
            /* the part's bytes are not those its record describes: never stored as such */
            ty_log(TY_LOG_WARN, "s3.mpu.part_mismatch",
                   "upload=%s part=%d etag=%s bytes_md5=%s size=%llu bytes=%llu", id,
                   got[i]->number, got[i]->etag, hex, (unsigned long long)got[i]->size,
                   (unsigned long long)bytes);
            rc = ty_err_set(err, TY_EINVAL, "InvalidPart",
                            "One or more of the specified parts could not be found. The part "
                            "may not have been uploaded, or the specified entity tag may not "
                            "match the part's entity tag.");
            goto out;
        }
        EVP_DigestUpdate(c, pmd, 16);
        *total += bytes;
        pl += (size_t)snprintf(ps + pl, 22, "%s%llu", i ? "," : "", (unsigned long long)bytes);
    }
    if (fsync(fd) != 0 || EVP_DigestFinal_ex(c, md, &mdlen) != 1) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot write the object: %s", strerror(errno));
        goto out;
    }
    ty_hex_encode(md, 16, etag);
    snprintf(etag + 32, 48 - 32, "-%u", (unsigned)(n % 100000));
    *psizes = ps;
    ps = NULL;
out:
    if (fd >= 0)
        close(fd);
    if (rc != 0 && tmp[0]) {
        unlink(tmp);
        tmp[0] = '\0';
    }
    EVP_MD_CTX_free(c);
    free(ps);
    return rc;
}

int objstore_mpu_complete_ck(struct objstore *os, const char *bucket, const char *key,
                             const char *id, const struct objstore_part *parts, size_t n,
                             const char *algo, const char *const *part_ck, const char *expect,
                             char *composite, const struct objstore_cond *cond,
                             struct objstore_meta *meta, struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    struct objstore_part *have = NULL;
    const struct objstore_part **got = NULL;
    const char **ck_of = NULL;
    size_t nh = 0, ng = 0, *idx = NULL;
    enum mpu_ck ck = mpu_ck_of(algo);
    json_t *hdrs = NULL;
    char tmp[PATH_MAX], etag[48], *psizes = NULL;
    uint64_t total = 0;
    pthread_mutex_t *lk;
    int rc;

    tmp[0] = '\0';
    if (!objstore_id_ok(id))
        return objstore_no_upload(err);
    lk = mpu_lock(id); /* the upload settles: no part changes, one Complete or Abort ends it */
    if ((rc = objstore_mpu_get(os, bucket, key, id, &hdrs, err)) != 0)
        goto out;
    if ((rc = objstore_mpu_parts(os, id, &have, &nh, err)) != 0)
        goto out;
    if (n == 0) {
        rc = ty_err_set(err, TY_EINVAL, "MalformedXML",
                        "The XML you provided was not well-formed or did not validate against our "
                        "published schema");
        goto out;
    }
    got = calloc(n, sizeof(*got));
    idx = calloc(n, sizeof(*idx));
    ck_of = calloc(n, sizeof(*ck_of));
    if (!got || !idx || !ck_of) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    if ((rc = mpu_match_parts(parts, n, have, nh, got, idx, &ng, err)) != 0 ||
        (rc = objstore_cond_check(os, bucket, key, cond, err)) != 0)
        goto out;
    if (composite)
        composite[0] = '\0';
    if (composite && ck != MPU_CK_NONE) {
        for (size_t i = 0; i < ng; i++)
            ck_of[i] = part_ck ? part_ck[idx[i]] : NULL;
        if ((rc = objstore_mpu_checksums(os, id, ck, got, ng, ck_of, expect, composite, err)) != 0)
            goto out;
    }
    if ((rc = mpu_assemble(os, id, got, ng, tmp, etag, &total, &psizes, err)) != 0)
        goto out;
    if (!hdrs)
        hdrs = json_object();
    json_object_del(hdrs, "x-amz-checksum-algorithm");
    if (composite && composite[0]) {
        char hn[40];
        snprintf(hn, sizeof(hn), "x-amz-checksum-%s", algo);
        for (char *p = hn; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        json_object_set_new(hdrs, hn, json_string(composite));
    }
    rc = objstore__put_tmp(os, bucket, key, tmp, etag, total, (int)ng, hdrs, psizes, cond, meta,
                           err);
    if (rc == 0) {
        char digest[33];
        tmp[0] = '\0';
        objstore_mpu_list_digest(parts, n, digest);
        objstore_mpu_done(os, bucket, key, id, etag, composite && *composite ? algo : NULL,
                          composite, digest);
        objstore_mpu_drop(os, bucket, key, id);
    }
out:
    pthread_mutex_unlock(lk);
    if (rc != 0 && tmp[0])
        unlink(tmp);
    json_decref(hdrs);
    free(have);
    free(got);
    free(idx);
    free(ck_of);
    free(psizes);
    return rc;
}

int objstore_mpu_list(struct objstore *os, const char *bucket, const char *prefix, int max,
                      struct objstore_upload **out, size_t *n, int *truncated, struct ty_err *err)
{
    if (objstore__local_only(os, err))
        return -err->code;
    struct store_obj_names pg;
    struct objstore_upload *v;
    size_t k = 0;
    int rc;

    if ((rc = objstore_bucket_get(os, bucket, NULL, err)) != 0)
        return rc;
    if (max < 1 || max > 1000)
        max = 1000;
    if (prefix && strlen(prefix) > OBJSTORE_MAX_KEY)
        return ty_err_set(err, TY_EINVAL, "InvalidArgument", "prefix too long");
    rc =
        store_obj_mpu_list(os->st, bucket, prefix && *prefix ? prefix : NULL, 1, max + 1, &pg, err);
    if (rc != 0)
        return rc;
    v = calloc(pg.n + 1, sizeof(*v));
    if (!v) {
        store_obj_names_cleanup(&pg);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    *truncated = 0;
    for (size_t i = 0; i < pg.n; i++) {
        const char *m = pg.v[i], *nl;
        struct ty_err e2;
        if (!(nl = strrchr(m, '\n')) || strlen(nl + 1) != OBJSTORE_UPLOAD_ID_SZ - 1)
            continue;
        if (prefix && *prefix && strncmp(m, prefix, strlen(prefix)) != 0)
            break;
        if ((int)k == max) {
            *truncated = 1;
            break;
        }
        v[k].key = strndup(m, (size_t)(nl - m));
        memcpy(v[k].id, nl + 1, OBJSTORE_UPLOAD_ID_SZ);
        ty_err_clear(&e2); /* an upload whose time cannot be read lists as initiated at 0 */
        store_obj_mpu_initiated(os->st, v[k].id, &v[k].initiated_ms, &e2);
        if (v[k].key)
            k++;
    }
    store_obj_names_cleanup(&pg);
    *out = v;
    *n = k;
    return 0;
}

int objstore_sweep_orphans(struct objstore *os, int max_age_s)
{
    char dir[PATH_MAX];
    DIR *d;
    struct dirent *de;
    time_t now = time(NULL);
    int n = 0;

    if (os->remote)
        return 0;
    n = objstore_sweep_tmp(os->dir, max_age_s);
    if (objstore__fmt(dir, sizeof(dir), "%s/.ty/mpu", os->dir) != 0 || !(d = opendir(dir)))
        return n;
    while ((de = readdir(d)) != NULL) {
        char p[PATH_MAX];
        struct stat st;
        struct ty_err err;
        pthread_mutex_t *lk;
        int64_t ms = 0;
        int rc;
        if (!objstore_id_ok(de->d_name) ||
            objstore__fmt(p, sizeof(p), "%s/%s", dir, de->d_name) != 0 || lstat(p, &st) != 0 ||
            !S_ISDIR(st.st_mode) || now - st.st_mtime < max_age_s)
            continue;
        ty_err_clear(&err);
        lk = mpu_lock(de->d_name);
        rc = store_obj_mpu_initiated(os->st, de->d_name, &ms, &err);
        if (rc == 0 && ms == 0 && objstore__rmtree(p, 0) == 0)
            n++;
        pthread_mutex_unlock(lk);
        if (rc != 0) {
            closedir(d);
            return -TY_EREDIS;
        }
    }
    closedir(d);
    {
        int h = objstore__sweep_hashed(os, max_age_s);
        if (h < 0)
            return h;
        n += h;
    }
    if (n)
        ty_log(TY_LOG_INFO, "s3.orphans.swept", "dir='%s' removed=%d max_age_s=%d", os->dir, n,
               max_age_s);
    return n;
}
