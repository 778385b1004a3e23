/*
 * stage.c - stages /opt/ml for one host of a job and builds the container's environment.
 *
 * Channel data: the agent stages it through the object store (transfer.c); stage_prepare only
 * copies plain files from an s3_dir laid out as <s3_dir>/bucket/<key> when given one (tools
 * and tests without Redis).
 */
#include "stage.h"

#include "artifacts.h"
#include "confine.h"
#include "s3uri.h"
#include "ty_buf.h"
#include "ty_codec.h"
#include "ty_fs.h"
#include "ty_rand.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STAGE_COPY_CHUNK 65536
#define STAGE_MAX_DEPTH  64
#define STAGE_ENV_MAX    4096 /* entries */
#define STAGE_HPS_MAX    (1024 * 1024)

json_t *stage_hyperparameters_json(const struct spec *sp)
{
    return json_deep_copy(sp->hyperparameters);
}

void stage_host_name(int i, char *out, size_t n)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "algo-%d", (i < 0 ? 0 : i % 100000) + 1);
    snprintf(out, n, "%.*s", n > 0 ? (int)n - 1 : 0, buf);
}

static int stage_nhosts(const struct spec *sp)
{
    return sp->instance_count < 1 ? 1 : sp->instance_count;
}

/* new: ["algo-1", ..., "algo-<InstanceCount>"]. */
static json_t *stage_hosts(const struct spec *sp)
{
    json_t *h = json_array();
    for (int i = 0; h && i < stage_nhosts(sp); i++) {
        char name[16];
        stage_host_name(i, name, sizeof(name));
        if (json_array_append_new(h, json_string(name))) {
            json_decref(h);
            return NULL;
        }
    }
    return h;
}

static const char *stage_instance_type(const struct spec *sp)
{
    return sp->instance_type[0] ? sp->instance_type : "local";
}

json_t *stage_resourceconfig_json(const struct spec *sp, int host)
{
    char name[16];
    json_t *groups = json_array();
    json_t *grp = json_pack("{s:s, s:s, s:o*}", "instance_group_name", "homogeneousCluster",
                            "instance_type", stage_instance_type(sp), "hosts", stage_hosts(sp));

    stage_host_name(host, name, sizeof(name));
    if (!groups || !grp || json_array_append_new(groups, grp)) {
        json_decref(groups);
        return NULL;
    }
    return json_pack("{s:s, s:o*, s:s, s:s, s:s, s:o}", "current_host", name, "hosts",
                     stage_hosts(sp), "network_interface_name", "eth0", "current_instance_type",
                     stage_instance_type(sp), "current_group_name", "homogeneousCluster",
                     "instance_groups", groups);
}

/* borrowed string member, or NULL. */
static const char *stage_get_str(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

json_t *stage_inputdataconfig_json(const struct spec *sp)
{
    json_t *out = json_object();
    size_t i;
    json_t *ch;

    if (!out)
        return NULL;
    json_array_foreach(sp->channels, i, ch)
    {
        const char *name = stage_get_str(ch, "ChannelName");
        const char *mode = stage_get_str(ch, "InputMode");
        json_t *s3 = json_object_get(json_object_get(ch, "DataSource"), "S3DataSource");
        const char *dist = stage_get_str(s3, "S3DataDistributionType"); /* the API's name */
        const char *wrap = stage_get_str(ch, "RecordWrapperType");
        const char *ctype = stage_get_str(ch, "ContentType");
        const char *comp = stage_get_str(ch, "CompressionType");
        json_t *c;

        if (!name)
            continue;
        if (!dist)
            dist = stage_get_str(s3, "S3DistributionType"); /* the file's name, also accepted */
        if (!mode)
            mode = sp->input_mode;
        if (strcmp(mode, "FastFile") == 0)
            mode = "File"; /* as the service writes it */
        c = json_pack("{s:s, s:s, s:s}", "TrainingInputMode", mode, "S3DistributionType",
                      dist ? dist : "FullyReplicated", "RecordWrapperType", wrap ? wrap : "None");
        if (!c)
            goto fail;
        if (ctype && json_object_set_new(c, "ContentType", json_string(ctype)))
            goto fail_c;
        if (comp && strcmp(comp, "None") != 0 &&
            json_object_set_new(c, "CompressionType", json_string(comp)))
            goto fail_c;
        if (json_object_set_new(out, name, c))
            goto fail;
        continue;
fail_c:
        json_decref(c);
        goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* ---- files ---- */

int stage_remove(const char *dir)
{
    char parent[PATH_MAX];
    const char *leaf;
    int pfd, rc;

    /* dir is the agent's own path; below it nothing is followed (confine_rmtree) */
    if (confine_split(dir, parent, sizeof(parent), &leaf) != 0 || !*leaf)
        return -EINVAL;
    pfd = confine_openroot(parent[0] ? parent : "/");
    if (pfd < 0)
        return pfd == -ENOENT ? 0 : pfd;
    rc = confine_rmtree(pfd, leaf);
    close(pfd);
    return rc;
}

/* mkdir -p path, then chmod 0777 (umask would narrow the mode). */
static int stage_mkdir(const char *path, struct ty_err *err)
{
    int rc = ty_mkdirs(path, 0777);
    if (rc != 0 || chmod(path, 0777) != 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create '%s': %s", path,
                          strerror(rc ? -rc : errno));
    return 0;
}

int stage_ckpt_dir(const char *dir, const char *rel, const char *local, struct ty_err *err)
{
    int root, fd, rc = 0;

    if ((root = confine_openroot(dir)) < 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot open '%s': %s", dir,
                          strerror(-root));
    fd = confine_opendir(root, rel, 0777);
    close(root);
    if (fd == -ELOOP || fd == -ENOTDIR || fd == -EINVAL || fd == -EEXIST)
        return ty_err_set(err, TY_EINVAL, "CheckpointConfig.LocalPath",
                          "ClientError: CheckpointConfig.LocalPath '%s' cannot be created: a "
                          "component is a symbolic link or a file",
                          local);
    if (fd < 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create '%s': %s", local,
                          strerror(-fd));
    if (fchmod(fd, 0777) != 0)
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot open '%s' to the job: %s",
                        local, strerror(errno));
    close(fd);
    return rc;
}

static int stage_write_json(const char *dir, const char *file, json_t *j, struct ty_err *err)
{
    char path[PATH_MAX];
    int w = snprintf(path, sizeof(path), "%s/%s", dir, file);

    if (!j)
        return ty_err_set(err, TY_ENOMEM, NULL, "InternalServerError: out of memory");
    if (w < 0 || (size_t)w >= sizeof(path) ||
        json_dump_file(j, path, JSON_COMPACT | JSON_SORT_KEYS) != 0) {
        json_decref(j);
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot write '%s'", file);
    }
    json_decref(j);
    chmod(path, 0666);
    return 0;
}

static int stage_copy_file(const char *src, const char *dst, struct ty_err *err)
{
    char *buf = NULL;
    int in = -1, out = -1, rc = 0;
    ssize_t r;

    in = open(src, O_RDONLY | O_CLOEXEC);
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    buf = malloc(STAGE_COPY_CHUNK);
    if (in < 0 || out < 0 || !buf) {
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot copy '%s': %s", src,
                        strerror(errno));
        goto done;
    }
    while ((r = read(in, buf, STAGE_COPY_CHUNK)) > 0) {
        for (ssize_t off = 0; off < r;) {
            ssize_t wr = write(out, buf + off, (size_t)(r - off));
            if (wr < 0) {
                if (errno == EINTR)
                    continue;
                rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot write '%s': %s",
                                dst, strerror(errno));
                goto done;
            }
            off += wr;
        }
    }
    if (r < 0)
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot read '%s': %s", src,
                        strerror(errno));
done:
    free(buf);
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return rc;
}

/* Copies src (file or directory, symlinks skipped) to dst. */
static int stage_copy_tree(const char *src, const char *dst, int depth, struct ty_err *err)
{
    struct stat st;
    DIR *d;
    struct dirent *de;
    int rc = 0;

    if (depth > STAGE_MAX_DEPTH)
        return ty_err_set(err, TY_EIO, NULL, "ClientError: input data tree too deep at '%s'", src);
    if (lstat(src, &st) != 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot read '%s': %s", src,
                          strerror(errno));
    if (S_ISREG(st.st_mode))
        return stage_copy_file(src, dst, err);
    if (!S_ISDIR(st.st_mode))
        return 0;
    if ((rc = stage_mkdir(dst, err)) != 0)
        return rc;
    if (!(d = opendir(src)))
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot read '%s': %s", src,
                          strerror(errno));
    while (!rc && (de = readdir(d)) != NULL) {
        char s[PATH_MAX], t[PATH_MAX];
        int w1, w2;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        w1 = snprintf(s, sizeof(s), "%s/%s", src, de->d_name);
        w2 = snprintf(t, sizeof(t), "%s/%s", dst, de->d_name);
        if (w1 < 0 || (size_t)w1 >= sizeof(s) || w2 < 0 || (size_t)w2 >= sizeof(t))
            rc = ty_err_set(err, TY_EIO, NULL, "ClientError: input path too long under '%s'", src);
        else
            rc = stage_copy_tree(s, t, depth + 1, err);
    }
    closedir(d);
    return rc;
}

/* Copies the local objects of s3://bucket/prefix into chdir. */
static int stage_copy_channel(const char *s3_dir, const char *uri, const char *chdir,
                              struct ty_err *err)
{
    char bucket[256], key[1024], path[PATH_MAX], parent[PATH_MAX];
    const char *base;
    struct stat st;
    DIR *d;
    struct dirent *de;
    size_t bl;
    int w, rc = 0;

    if (!s3_dir || !uri)
        return 0;
    if (s3uri_parse(uri, bucket, sizeof(bucket), key, sizeof(key)) != 0)
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: invalid S3Uri '%s'", uri);
    w = snprintf(path, sizeof(path), "%s/%s/%s", s3_dir, bucket, key);
    if (w < 0 || (size_t)w >= sizeof(path))
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: S3Uri too long '%s'", uri);
    while (w > 0 && path[w - 1] == '/' && key[0])
        path[--w] = '\0';
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return stage_copy_tree(path, chdir, 0, err);
    /* A key prefix: every object or "folder" in the parent whose name starts with the rest. */
    memcpy(parent, path, (size_t)w + 1);
    {
        char *slash = strrchr(parent, '/');
        if (!slash)
            return 0;
        *slash = '\0';
        base = path + (slash - parent) + 1;
    }
    bl = strlen(base);
    if (!(d = opendir(parent)))
        return 0;
    while (!rc && (de = readdir(d)) != NULL) {
        char s[PATH_MAX], t[PATH_MAX];
        int w1, w2;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            strncmp(de->d_name, base, bl) != 0)
            continue;
        w1 = snprintf(s, sizeof(s), "%s/%s", parent, de->d_name);
        w2 = snprintf(t, sizeof(t), "%s/%s", chdir, de->d_name);
        if (w1 < 0 || (size_t)w1 >= sizeof(s) || w2 < 0 || (size_t)w2 >= sizeof(t))
            continue;
        rc = stage_copy_tree(s, t, 0, err);
    }
    closedir(d);
    return rc;
}

int stage_prepare(const char *dir, const struct spec *sp, int host, const char *s3_dir,
                  struct ty_err *err)
{
    static const char *const subdirs[] = {"input/config", "input/data",          "model",
                                          "output/data",  "output/intermediate", "code",
                                          "checkpoints"};
    char path[PATH_MAX];
    size_t i;
    json_t *ch;
    int rc, w;

    if ((rc = stage_remove(dir)) != 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot clean '%s': %s", dir,
                          strerror(-rc));
    if ((rc = stage_mkdir(dir, err)) != 0)
        return rc;
    for (i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
        w = snprintf(path, sizeof(path), "%s/%s", dir, subdirs[i]);
        if (w < 0 || (size_t)w >= sizeof(path))
            return ty_err_set(err, TY_EIO, NULL, "InternalServerError: path too long");
        if ((rc = stage_mkdir(path, err)) != 0)
            return rc;
    }
    /* Parents made by mkdir -p above also need to be writable. */
    for (i = 0; i < 2; i++) {
        w = snprintf(path, sizeof(path), "%s/%s", dir, i ? "output" : "input");
        if (w > 0 && (size_t)w < sizeof(path))
            chmod(path, 0777);
    }
    w = snprintf(path, sizeof(path), "%s/input/config", dir);
    if (w < 0 || (size_t)w >= sizeof(path))
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: path too long");
    if ((rc = stage_write_json(path, "hyperparameters.json", stage_hyperparameters_json(sp),
                               err)) != 0 ||
        (rc = stage_write_json(path, "resourceconfig.json", stage_resourceconfig_json(sp, host),
                               err)) != 0 ||
        (rc = stage_write_json(path, "inputdataconfig.json", stage_inputdataconfig_json(sp),
                               err)) != 0)
        return rc;
    json_array_foreach(sp->channels, i, ch)
    {
        const char *name = stage_get_str(ch, "ChannelName");
        json_t *s3 = json_object_get(json_object_get(ch, "DataSource"), "S3DataSource");
        w = snprintf(path, sizeof(path), "%s/input/data/%s", dir, name ? name : "");
        if (!name || w < 0 || (size_t)w >= sizeof(path))
            continue;
        if ((rc = stage_mkdir(path, err)) != 0)
            return rc;
        if ((rc = stage_copy_channel(s3_dir, stage_get_str(s3, "S3Uri"), path, err)) != 0)
            return rc;
    }
    return 0;
}

/* ---- where the staging folders live ---- */

void stage_default_root(char *out, size_t n)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");

    if (geteuid() == 0)
        snprintf(out, n, "/var/lib/trainyard/staging");
    else if (xdg && xdg[0] == '/')
        snprintf(out, n, "%s/trainyard-staging", xdg);
    else
        snprintf(out, n, "/tmp/trainyard-staging-%ld", (long)geteuid());
}

int stage_root_init(const char *root, struct ty_err *err)
{
    struct stat st;
    int rc, fd;

    if (root[0] != '/')
        return ty_err_set(err, TY_EINVAL, NULL, "staging dir '%s' must be an absolute path", root);
    if ((rc = ty_mkdirs(root, 0700)) != 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot create staging dir '%s': %s", root,
                          strerror(-rc));
    /* the folder itself, not a link someone placed there (a shared /tmp) */
    if ((fd = confine_openroot(root)) < 0)
        return ty_err_set(err, TY_EIO, NULL, "staging dir '%s' is not a folder: %s", root,
                          strerror(-fd));
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || fchmod(fd, 0700) != 0) {
        close(fd);
        return ty_err_set(err, TY_EIO, NULL, "staging dir '%s' must be a folder owned by uid %ld",
                          root, (long)geteuid());
    }
    close(fd);
    return 0;
}

/* Reads exactly STAGE_KEY_LEN bytes of path. 0 or -1. */
static int stage_key_read(const char *path, unsigned char *key)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    size_t got = 0;
    ssize_t r;

    if (fd < 0)
        return -1;
    while (got < STAGE_KEY_LEN && (r = read(fd, key + got, STAGE_KEY_LEN - got)) > 0)
        got += (size_t)r;
    close(fd);
    return got == STAGE_KEY_LEN ? 0 : -1;
}

int stage_key_load(const char *data_dir, unsigned char *key, struct ty_err *err)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    unsigned char k[STAGE_KEY_LEN];
    int fd, w1, w2;
    ssize_t wr;

    w1 = snprintf(path, sizeof(path), "%s/staging.key", data_dir);
    w2 = snprintf(tmp, sizeof(tmp), "%s/.staging.key.%ld", data_dir, (long)getpid());
    if (w1 < 0 || (size_t)w1 >= sizeof(path) || w2 < 0 || (size_t)w2 >= sizeof(tmp))
        return ty_err_set(err, TY_EINVAL, NULL, "data dir path too long");
    if (stage_key_read(path, key) == 0)
        return 0;
    /* first start: a random key, published whole (link fails if another agent won) */
    if (ty_rand_bytes(k, sizeof(k)) != 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot draw a staging key: %s", strerror(errno));
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot create '%s': %s", tmp, strerror(errno));
    wr = write(fd, k, sizeof(k));
    if (wr != (ssize_t)sizeof(k) || fsync(fd) != 0) {
        close(fd);
        unlink(tmp);
        return ty_err_set(err, TY_EIO, NULL, "cannot write '%s'", tmp);
    }
    close(fd);
    if (link(tmp, path) != 0 && errno != EEXIST) {
        int e = errno;
        unlink(tmp);
        return ty_err_set(err, TY_EIO, NULL, "cannot create '%s': %s", path, strerror(e));
    }
    unlink(tmp);
    if (stage_key_read(path, key) != 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot read '%s'", path);
    return 0;
}

int stage_job_dir(const char *root, const unsigned char *key, const char *job, char *out, size_t n)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    char hex[33];
    int w;

    if (!HMAC(EVP_sha256(), key, STAGE_KEY_LEN, (const unsigned char *)job, strlen(job), md, &ml) ||
        ml < 16)
        return -TY_EIO;
    ty_hex_encode(md, 16, hex);
    w = snprintf(out, n, "%s/%s", root, hex);
    return w < 0 || (size_t)w >= n ? -TY_EINVAL : 0;
}

/* ---- environment ---- */

static int stage_env_set(json_t *env, const char *k, const char *v)
{
    return json_object_set_new(env, k, json_string(v ? v : ""));
}

/* Sets k to the compact JSON text of j (stolen). */
static int stage_env_set_json(json_t *env, const char *k, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    int rc = s ? stage_env_set(env, k, s) : -1;
    free(s);
    json_decref(j);
    return rc;
}

static int stage_env_setf(json_t *env, const char *k, int v)
{
    char s[32];
    snprintf(s, sizeof(s), "%d", v);
    return stage_env_set(env, k, s);
}

/* "SM_CHANNEL_" + upper(name) into out. */
static void stage_upper_key(char *out, size_t n, const char *prefix, const char *name)
{
    size_t i = (size_t)snprintf(out, n, "%s", prefix);
    for (; *name && i + 1 < n; name++)
        out[i++] = (char)toupper((unsigned char)*name);
    out[i < n ? i : n - 1] = '\0';
}

static int stage_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends the JSON text of string s to b. */
static int stage_buf_json_str(struct ty_buf *b, const char *s)
{
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    int rc = t ? ty_buf_puts(b, t) : -1;
    free(t);
    json_decref(j);
    return rc;
}

/* SM_HPS, SM_HP_<K> and SM_USER_ARGS without the sagemaker_* framework parameters, as the
   training toolkit does. In SM_HPS a value that is JSON text ("0.1", "[1,2]", "true") is kept
   verbatim as JSON, as json.loads would read it; anything else is a JSON string. */
static int stage_env_hps(json_t *env, const struct spec *sp)
{
    struct ty_buf hps;
    json_t *args = json_array();
    const char **keys = NULL;
    size_t n = json_object_size(sp->hyperparameters), i = 0;
    const char *k;
    json_t *v;
    int rc = -1;

    ty_buf_init(&hps, STAGE_HPS_MAX);
    keys = calloc(n + 1, sizeof(*keys));
    if (!args || !keys || ty_buf_puts(&hps, "{"))
        goto done;
    json_object_foreach(sp->hyperparameters, k, v)
    {
        if (strncmp(k, "sagemaker_", 10) != 0)
            keys[i++] = k;
    }
    qsort(keys, i, sizeof(*keys), stage_cmp_str);
    for (size_t j = 0; j < i; j++) {
        const char *s = json_string_value(json_object_get(sp->hyperparameters, keys[j]));
        json_t *dec;
        char name[300], arg[300];

        if (!s)
            s = "";
        dec = json_loads(s, JSON_DECODE_ANY, NULL);
        if ((j && ty_buf_puts(&hps, ",")) || stage_buf_json_str(&hps, keys[j]) ||
            ty_buf_puts(&hps, ":") || (dec ? ty_buf_puts(&hps, s) : stage_buf_json_str(&hps, s))) {
            json_decref(dec);
            goto done;
        }
        json_decref(dec);
        stage_upper_key(name, sizeof(name), "SM_HP_", keys[j]);
        if (stage_env_set(env, name, s))
            goto done;
        snprintf(arg, sizeof(arg), "--%s", keys[j]);
        if (json_array_append_new(args, json_string(arg)) ||
            json_array_append_new(args, json_string(s)))
            goto done;
    }
    if (ty_buf_puts(&hps, "}") || stage_env_set(env, "SM_HPS", hps.data))
        goto done;
    rc = stage_env_set_json(env, "SM_USER_ARGS", args);
    args = NULL;
done:
    ty_buf_cleanup(&hps);
    json_decref(args);
    free(keys);
    return rc;
}

static int stage_env_channels(json_t *env, const struct spec *sp)
{
    size_t n = json_array_size(sp->channels), i, m = 0;
    const char **names = calloc(n + 1, sizeof(*names));
    json_t *list = json_array(), *ch;
    int rc = -1;

    if (!names || !list)
        goto done;
    json_array_foreach(sp->channels, i, ch)
    {
        const char *name = stage_get_str(ch, "ChannelName");
        if (name)
            names[m++] = name;
    }
    qsort(names, m, sizeof(*names), stage_cmp_str);
    for (i = 0; i < m; i++) {
        char key[128], val[256];
        if (json_array_append_new(list, json_string(names[i])))
            goto done;
        stage_upper_key(key, sizeof(key), "SM_CHANNEL_", names[i]);
        snprintf(val, sizeof(val), "/opt/ml/input/data/%s", names[i]);
        if (stage_env_set(env, key, val))
            goto done;
    }
    rc = stage_env_set_json(env, "SM_CHANNELS", list);
    list = NULL;
done:
    json_decref(list);
    free(names);
    return rc;
}

void stage_env_free(char **env)
{
    if (!env)
        return;
    for (char **p = env; *p; p++)
        free(*p);
    free(env);
}

char **stage_env(const struct spec *sp, const struct stage_env_opts *o)
{
    json_t *env = json_object();
    char **out = NULL;
    const char *k;
    json_t *v;
    size_t i = 0;
    int bad = !env;
    char host[16];

    stage_host_name(o->host, host, sizeof(host));
    bad = bad || stage_env_set(env, "SM_CURRENT_HOST", host);
    bad = bad || stage_env_set(env, "CURRENT_HOST", host);
    bad = bad || stage_env_set_json(env, "SM_HOSTS", stage_hosts(sp));
    bad = bad || stage_env_set(env, "SM_NETWORK_INTERFACE_NAME", "eth0");
    bad = bad || stage_env_set(env, "SM_CURRENT_INSTANCE_TYPE", stage_instance_type(sp));
    bad = bad || stage_env_set(env, "SM_CURRENT_INSTANCE_GROUP", "homogeneousCluster");
    bad = bad || stage_env_set_json(env, "SM_CURRENT_INSTANCE_GROUP_HOSTS", stage_hosts(sp));
    bad = bad || stage_env_set(env, "SM_INSTANCE_GROUPS", "[\"homogeneousCluster\"]");
    bad = bad || stage_env_set(env, "SM_IS_HETERO", "false");
    bad = bad || stage_env_set(env, "SM_INPUT_DIR", "/opt/ml/input");
    bad = bad || stage_env_set(env, "SM_INPUT_CONFIG_DIR", "/opt/ml/input/config");
    bad = bad || stage_env_set(env, "SM_MODEL_DIR", "/opt/ml/model");
    bad = bad || stage_env_set(env, "SM_OUTPUT_DIR", "/opt/ml/output");
    bad = bad || stage_env_set(env, "SM_OUTPUT_DATA_DIR", "/opt/ml/output/data");
    bad = bad || stage_env_set(env, "SM_OUTPUT_INTERMEDIATE_DIR", "/opt/ml/output/intermediate");
    bad = bad || stage_env_setf(env, "SM_NUM_CPUS", o->cpus);
    bad = bad || stage_env_setf(env, "SM_NUM_GPUS", o->gpus);
    if (o->visible_devices && o->visible_devices[0])
        bad = bad || stage_env_set(env, "NVIDIA_VISIBLE_DEVICES", o->visible_devices);
    bad = bad || stage_env_set(env, "SM_LOG_LEVEL", "20");
    bad = bad ||
          stage_env_set_json(env, "SM_RESOURCE_CONFIG", stage_resourceconfig_json(sp, o->host));
    bad = bad || stage_env_set_json(env, "SM_INPUT_DATA_CONFIG", stage_inputdataconfig_json(sp));
    bad = bad || stage_env_channels(env, sp);
    bad = bad || stage_env_hps(env, sp);
    bad = bad || stage_env_set(env, "TRAINING_JOB_NAME", sp->name);
    if (sp->arn[0])
        bad = bad || stage_env_set(env, "TRAINING_JOB_ARN", sp->arn);
    if (o->region && o->region[0]) {
        bad = bad || stage_env_set(env, "AWS_REGION", o->region);
        bad = bad || stage_env_set(env, "AWS_DEFAULT_REGION", o->region);
    }
    if (o->relay_port > 0) {
        /* trainyard's API through the job's relay; the credentials provider of botocore and the
           AWS CLI only accepts 127.0.0.1, localhost or 169.254.170.2 in the full URI */
        char url[64], uri[600];
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", o->relay_port);
        bad = bad || stage_env_set(env, "AWS_ENDPOINT_URL", url);
        bad = bad || stage_env_set(env, "S3_ENDPOINT_URL", url);
        if (o->creds_token && o->creds_token[0]) {
            snprintf(uri, sizeof(uri), "%s%s", url, o->creds_path ? o->creds_path : "");
            bad = bad || stage_env_set(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI", uri);
            bad = bad || stage_env_set(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN", o->creds_token);
        }
    } else if (o->endpoint_url && o->endpoint_url[0]) {
        bad = bad || stage_env_set(env, "S3_ENDPOINT_URL", o->endpoint_url);
    }
    json_object_foreach(sp->environment, k, v)
    {
        bad = bad || stage_env_set(env, k, json_string_value(v));
    }
    if (bad || json_object_size(env) > STAGE_ENV_MAX)
        goto done;
    out = calloc(json_object_size(env) + 1, sizeof(*out));
    if (!out)
        goto done;
    json_object_foreach(env, k, v)
    {
        const char *s = json_string_value(v);
        size_t kl = strlen(k), sl = strlen(s);
        if (!(out[i] = malloc(kl + sl + 2))) {
            stage_env_free(out);
            out = NULL;
            goto done;
        }
        memcpy(out[i], k, kl);
        out[i][kl] = '=';
        memcpy(out[i] + kl + 1, s, sl + 1);
        i++;
    }
done:
    json_decref(env);
    return out;
}

int stage_read_failure(const char *dir, char *buf, size_t n)
{
    size_t want, len;
    ssize_t r;
    int fd, root;

    if (n == 0)
        return 0;
    buf[0] = '\0';
    /* output/ and failure are the container's: opened below dir without following anything,
       a FIFO or device is never opened for a blocking read */
    if ((root = confine_openroot(dir)) < 0)
        return 0;
    fd = confine_open_read(root, "output/failure", NULL);
    close(root);
    if (fd < 0)
        return 0;
    want = n - 1 < 1024 ? n - 1 : 1024;
    len = 0;
    while (len < want && (r = read(fd, buf + len, want - len)) > 0)
        len += (size_t)r;
    close(fd);
    buf[len] = '\0';
    stage_utf8_fix(buf, len);
    while (len > 0 && isspace((unsigned char)buf[len - 1]))
        buf[--len] = '\0';
    return len > 0;
}

/* Length of the well-formed UTF-8 sequence at s (n bytes available), 0 when ill-formed. */
static size_t stage_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;

    if (c >= 0x01 && c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (need > n)
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < need; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    }
    return need;
}

void stage_utf8_fix(char *s, size_t len)
{
    unsigned char *p = (unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        size_t l = stage_utf8_seq(p + i, len - i);
        if (l == 0) {
            p[i++] = '?';
            continue;
        }
        i += l;
    }
}
