/*
 * transfer.c - a job's bytes between the object store and its staged /opt/ml (transfer.h).
 *
 * Channel staging makes two passes over a channel's listing: one to count what this host takes
 * (for the "Downloading ..." line and AWS's no-objects failure), one to copy. Both page through
 * objstore_list 1000 keys at a time, so memory does not grow with the number of keys (a
 * ManifestFile's key list is the one exception, capped by channels.h).
 */
#define _GNU_SOURCE /* struct stat st_mtim */
#include "transfer.h"

#include "access.h"
#include "artifacts.h"
#include "authz_s3.h"
#include "channels.h"
#include "confine.h"
#include "s3uri.h"
#include "ty_log.h"
#include "ty_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TRANSFER_PAGE          1000
#define TRANSFER_PROGRESS_S    5.0    /* seconds between progress lines of one channel */
#define TRANSFER_MAX_SEEN      200000 /* files tracked for incremental uploads */
#define TRANSFER_EMPTY_RETRIES 5      /* 200 ms looks before "No S3 objects found" */

__attribute__((format(printf, 2, 3))) static void transfer_logf(struct transfer *t, const char *fmt,
                                                                ...)
{
    char line[2048];
    va_list ap;

    if (!t->log)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    t->log(t->ud, line);
}

/* borrowed string member, or NULL. */
/* Whether the job's role may do action on bucket/key (authz_s3.h); with role_creds the store
   itself decides, on the role's own credentials. 0, or a negative code with err. */
static int transfer_may(struct transfer *t, const char *action, const char *bucket, const char *key,
                        struct ty_err *err)
{
    if (t->role_creds)
        return 0;
    return authz_s3_check(t->authz, t->role_arn, action, bucket, key, err);
}

static const char *transfer_str(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

struct transfer_chan {
    const char *name, *uri, *dist;
    int gunzip;
    char bucket[256], prefix[1100];
    json_t *keys;       /* ManifestFile: sorted full keys; NULL for S3Prefix */
    int root;           /* borrowed: folder fd files are written below (confine.h) */
    char dst[PATH_MAX]; /* the channel's folder below root ("input/data/<name>") */
    int host_index, host_count;
    uint64_t total_objects;    /* every object of the channel (all hosts) */
    uint64_t mine, mine_bytes; /* this host's share */
};

/* Copies one object into the channel directory (below c->root, never through a symlink). */
static int transfer_get_object(struct transfer *t, struct transfer_chan *c, const char *key,
                               uint64_t *bytes, struct ty_err *err)
{
    struct objstore_meta meta;
    char rel[1100], dst[PATH_MAX], what[1400];
    int fd, rc, w;

    memset(&meta, 0, sizeof(meta));
    rc = channels_rel_path(c->prefix, key, rel, sizeof(rel), err);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    w = snprintf(dst, sizeof(dst), "%s%s%s", c->dst, c->dst[0] ? "/" : "", rel);
    if (w < 0 || (size_t)w >= sizeof(dst))
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: S3 key '%s' is too long to stage",
                          key);
    snprintf(what, sizeof(what), "s3://%s/%s", c->bucket, key);
    if ((rc = transfer_may(t, "s3:GetObject", c->bucket, key, err)) != 0)
        return rc;
    fd = objstore_open_read(t->os, c->bucket, key, &meta, err);
    objstore_meta_cleanup(&meta);
    if (fd < 0) {
        if (err->code == TY_ENOTFOUND)
            return ty_err_set(err, TY_EINVAL, NULL,
                              "ClientError: cannot download %s for channel '%s': the object does "
                              "not exist",
                              what, c->name);
        return ty_err_set(err, TY_EIO, NULL,
                          "InternalServerError: cannot download %s for channel '%s': %s", what,
                          c->name, err->msg);
    }
    rc = channels_copy_fd_at(fd, c->root, dst, c->gunzip, what, bytes, err);
    close(fd);
    return rc;
}

/*
 * Walks the channel's keys in sorted order; for pass 0 counts, for pass 1 downloads this
 * host's share into c->dst below c->root.
 */
static int transfer_walk(struct transfer *t, struct transfer_chan *c, int pass, struct ty_err *err)
{
    struct objstore_listing l;
    char *token = NULL;
    uint64_t idx = 0, done = 0, bytes_done = 0;
    double t0 = ty_mono_s(), next = t0 + TRANSFER_PROGRESS_S;
    int rc = 0;

    if (c->keys) {
        size_t i;
        json_t *k;
        json_array_foreach(c->keys, i, k)
        {
            const char *key = json_string_value(k);
            int mine = channels_shard_mine(c->dist, i, c->host_index, c->host_count);
            if (pass == 0) {
                struct objstore_meta meta;
                memset(&meta, 0, sizeof(meta));
                if ((rc = transfer_may(t, "s3:GetObject", c->bucket, key, err)))
                    return rc;
                if (objstore_head(t->os, c->bucket, key, &meta, err) != 0) {
                    return ty_err_set(err, TY_EINVAL, NULL,
                                      "ClientError: the ManifestFile of channel '%s' lists "
                                      "s3://%s/%s, which does not exist",
                                      c->name, c->bucket, key);
                }
                c->total_objects++;
                if (mine) {
                    c->mine++;
                    c->mine_bytes += meta.size;
                }
                objstore_meta_cleanup(&meta);
                continue;
            }
            if (!mine)
                continue;
            {
                uint64_t b = 0;
                if ((rc = transfer_get_object(t, c, key, &b, err)) != 0)
                    return rc;
                done++;
                bytes_done += b;
            }
            if (ty_mono_s() >= next) {
                char s[32];
                channels_fmt_size(bytes_done, s, sizeof(s));
                transfer_logf(t, "Channel %s: %llu of %llu objects, %s", c->name,
                              (unsigned long long)done, (unsigned long long)c->mine, s);
                next = ty_mono_s() + TRANSFER_PROGRESS_S;
            }
        }
        return 0;
    }

    if (pass == 0 && (rc = transfer_may(t, "s3:ListBucket", c->bucket, c->prefix, err)) != 0)
        return rc;
    for (;;) {
        memset(&l, 0, sizeof(l));
        rc = objstore_list(t->os, c->bucket, c->prefix, NULL, token, NULL, TRANSFER_PAGE, &l, err);
        free(token);
        token = NULL;
        if (rc != 0) {
            if (err->code == TY_ENOTFOUND)
                return 0; /* no bucket: no objects */
            return ty_err_set(err, TY_EIO, NULL,
                              "InternalServerError: cannot list s3://%s/%s for channel '%s': %s",
                              c->bucket, c->prefix, c->name, err->msg);
        }
        for (size_t i = 0; i < l.n && rc == 0; i++) {
            const char *key = l.e[i].key;
            size_t kl = strlen(key);
            int mine;
            if (l.e[i].is_prefix || (kl > 0 && key[kl - 1] == '/'))
                continue; /* folder markers carry no data and take no shard slot */
            mine = channels_shard_mine(c->dist, idx, c->host_index, c->host_count);
            idx++;
            if (pass == 0) {
                c->total_objects++;
                if (mine) {
                    c->mine++;
                    c->mine_bytes += l.e[i].meta.size;
                }
                continue;
            }
            if (!mine)
                continue;
            {
                uint64_t b = 0;
                rc = transfer_get_object(t, c, key, &b, err);
                done++;
                bytes_done += b;
            }
            if (rc == 0 && ty_mono_s() >= next) {
                char s[32];
                channels_fmt_size(bytes_done, s, sizeof(s));
                transfer_logf(t, "Channel %s: %llu of %llu objects, %s", c->name,
                              (unsigned long long)done, (unsigned long long)c->mine, s);
                next = ty_mono_s() + TRANSFER_PROGRESS_S;
            }
        }
        if (rc == 0 && l.truncated && l.next)
            token = strdup(l.next);
        objstore_listing_cleanup(&l);
        if (rc != 0)
            return rc;
        if (!token)
            return 0;
    }
}

static int transfer_channel(struct transfer *t, const struct spec *sp, json_t *ch,
                            const char *host_dir, const char *scratch, int host_index,
                            int host_count, struct ty_err *err)
{
    struct transfer_chan c;
    json_t *s3 = json_object_get(json_object_get(ch, "DataSource"), "S3DataSource");
    const char *type, *comp, *mode;
    char mpath[PATH_MAX], size[32];
    double t0 = ty_mono_s();
    int rc, w;

    memset(&c, 0, sizeof(c));
    c.root = -1;
    c.name = transfer_str(ch, "ChannelName");
    c.host_index = host_index;
    c.host_count = host_count;
    if (!c.name)
        return 0;
    if (!s3)
        return ty_err_set(err, TY_EINVAL, NULL,
                          "ClientError: channel '%s': only S3DataSource is supported", c.name);
    c.uri = transfer_str(s3, "S3Uri");
    type = transfer_str(s3, "S3DataType");
    c.dist = transfer_str(s3, "S3DataDistributionType");
    comp = transfer_str(ch, "CompressionType");
    mode = transfer_str(ch, "InputMode");
    if (!mode)
        mode = sp->input_mode;
    if (!type)
        type = "S3Prefix";
    if (!c.dist)
        c.dist = "FullyReplicated";
    if (strcmp(type, "S3Prefix") != 0 && strcmp(type, "ManifestFile") != 0)
        return ty_err_set(err, TY_EINVAL, NULL,
                          "ClientError: channel '%s': S3DataType %s is not supported (S3Prefix "
                          "and ManifestFile are)",
                          c.name, type);
    if (strcmp(c.dist, "FullyReplicated") != 0 && strcmp(c.dist, "ShardedByS3Key") != 0)
        return ty_err_set(err, TY_EINVAL, NULL,
                          "ClientError: channel '%s': S3DataDistributionType '%s' is invalid",
                          c.name, c.dist);
    if (comp && strcmp(comp, "None") != 0 && strcmp(comp, "Gzip") != 0)
        return ty_err_set(err, TY_EINVAL, NULL,
                          "ClientError: channel '%s': CompressionType '%s' is not supported "
                          "(None and Gzip are)",
                          c.name, comp);
    c.gunzip = comp && strcmp(comp, "Gzip") == 0;
    if (!c.uri || s3uri_parse(c.uri, c.bucket, sizeof(c.bucket), c.prefix, sizeof(c.prefix)) != 0)
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: channel '%s': invalid S3Uri '%s'",
                          c.name, c.uri ? c.uri : "");
    w = snprintf(c.dst, sizeof(c.dst), "input/data/%s", c.name);
    if (w < 0 || (size_t)w >= sizeof(c.dst) || strchr(c.name, '/') || strcmp(c.name, ".") == 0 ||
        strcmp(c.name, "..") == 0)
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: channel name '%s' is invalid",
                          c.name);
    if ((c.root = confine_openroot(host_dir)) < 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot open '%s': %s", host_dir,
                          strerror(-c.root));

    if (strcmp(type, "ManifestFile") == 0) {
        struct objstore_meta meta;
        char mb[256], mk[1100];
        int fd;
        memset(&meta, 0, sizeof(meta));
        memcpy(mb, c.bucket, sizeof(mb));
        memcpy(mk, c.prefix, sizeof(mk));
        w = snprintf(mpath, sizeof(mpath), "%s/manifest-%s.json", scratch, c.name);
        if (w < 0 || (size_t)w >= sizeof(mpath)) {
            rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: channel name too long");
            goto done;
        }
        if ((rc = transfer_may(t, "s3:GetObject", mb, mk, err)) != 0)
            goto done; /* closes c.root */
        fd = objstore_open_read(t->os, mb, mk, &meta, err);
        objstore_meta_cleanup(&meta);
        if (fd < 0) {
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: channel '%s': cannot read the ManifestFile %s: it "
                            "does not exist",
                            c.name, c.uri);
            goto done;
        }
        if (meta.size > CHANNELS_MANIFEST_MAX) {
            close(fd);
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: ManifestFile '%s' is larger than %d bytes", c.uri,
                            CHANNELS_MANIFEST_MAX);
            goto done;
        }
        rc = channels_copy_fd(fd, mpath, 0, c.uri, NULL, err);
        close(fd);
        if (rc == 0)
            rc = channels_manifest_parse(mpath, c.uri, c.bucket, sizeof(c.bucket), c.prefix,
                                         sizeof(c.prefix), &c.keys, err);
        unlink(mpath);
        if (rc != 0)
            goto done;
    }

    if ((rc = transfer_walk(t, &c, 0, err)) != 0)
        goto done;
    /* A bucket directory adopted by another thread at this moment can list empty while its
       files are being indexed (objstore adopts after publishing the bucket): look again
       briefly before failing the job. */
    for (int i = 0; i < TRANSFER_EMPTY_RETRIES && c.total_objects == 0; i++) {
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
        c.mine = c.mine_bytes = 0;
        if ((rc = transfer_walk(t, &c, 0, err)) != 0)
            goto done;
    }
    if (c.total_objects == 0) {
        char msg[900];
        s3uri_no_objects_msg(msg, sizeof(msg), c.uri, t->region, sp->role_arn, c.bucket);
        rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: %s", msg);
        goto done;
    }
    channels_fmt_size(c.mine_bytes, size, sizeof(size));
    if (strcmp(mode, "File") != 0)
        transfer_logf(t, "Channel %s: input mode %s is delivered as files in /opt/ml/input/data/%s",
                      c.name, mode, c.name);
    transfer_logf(t, "Downloading %s (%llu object%s, %s%s%s) into /opt/ml/input/data/%s", c.uri,
                  (unsigned long long)c.mine, c.mine == 1 ? "" : "s", size,
                  strcmp(c.dist, "ShardedByS3Key") == 0 ? ", shard of ShardedByS3Key" : "",
                  c.gunzip ? ", gunzipped" : "", c.name);
    if ((rc = transfer_walk(t, &c, 1, err)) != 0)
        goto done;
    transfer_logf(t, "Downloaded channel %s: %llu object%s in %.1f s", c.name,
                  (unsigned long long)c.mine, c.mine == 1 ? "" : "s", ty_mono_s() - t0);
done:
    if (c.root >= 0)
        close(c.root);
    json_decref(c.keys);
    return rc;
}

int transfer_channels(struct transfer *t, const struct spec *sp, const char *host_dir,
                      const char *scratch, int host_index, int host_count, struct ty_err *err)
{
    size_t i;
    json_t *ch;
    int rc;

    json_array_foreach(sp->channels, i, ch)
    {
        if ((rc = transfer_channel(t, sp, ch, host_dir, scratch, host_index, host_count, err)) != 0)
            return rc;
    }
    return 0;
}

int transfer_code(struct transfer *t, const struct spec *sp, const char *host_dir,
                  struct ty_err *err)
{
    const char *raw =
        json_string_value(json_object_get(sp->hyperparameters, "sagemaker_submit_directory"));
    json_t *dec = NULL;
    const char *uri;
    char dest[PATH_MAX], what[1400];
    int fd, rc;

    if (!raw || !*raw)
        return 0;
    dec = json_loads(raw, JSON_DECODE_ANY, NULL);
    uri = json_is_string(dec) ? json_string_value(dec) : raw;
    snprintf(dest, sizeof(dest), "%s/code", host_dir);
    snprintf(what, sizeof(what), "sagemaker_submit_directory %s", uri);
    if (strncmp(uri, "s3://", 5) == 0) {
        struct objstore_meta meta;
        char bucket[256], key[1100];
        memset(&meta, 0, sizeof(meta));
        if (s3uri_parse(uri, bucket, sizeof(bucket), key, sizeof(key)) != 0 || !key[0]) {
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: sagemaker_submit_directory '%s' is not a valid S3 URI",
                            uri);
            goto done;
        }
        if ((rc = transfer_may(t, "s3:GetObject", bucket, key, err)) != 0)
            goto done;
        fd = objstore_open_read(t->os, bucket, key, &meta, err);
        objstore_meta_cleanup(&meta);
        if (fd < 0) {
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: cannot download sagemaker_submit_directory %s: the "
                            "object does not exist",
                            uri);
            goto done;
        }
        transfer_logf(t, "Downloading %s into /opt/ml/code", uri);
    } else if (strncmp(uri, "/opt/ml/", 8) == 0 && !strstr(uri, "/..")) {
        int root = confine_openroot(host_dir);
        fd = root < 0 ? root : confine_open_read(root, uri + 8, NULL);
        if (root >= 0)
            close(root);
        if (fd < 0) {
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: sagemaker_submit_directory %s does not exist", uri);
            goto done;
        }
        transfer_logf(t, "Unpacking %s into /opt/ml/code", uri);
    } else {
        ty_log(TY_LOG_INFO, "agent.code.not_fetched", "uri='%s'", uri);
        rc = 0;
        goto done;
    }
    rc = channels_untar_fd(fd, dest, what, err);
    close(fd);
done:
    json_decref(dec);
    return rc;
}

int transfer_download_prefix(struct transfer *t, const char *uri, const char *root, const char *rel,
                             int *count, struct ty_err *err)
{
    struct transfer_chan c;
    int rc;

    memset(&c, 0, sizeof(c));
    c.name = "checkpoints";
    c.uri = uri;
    c.dist = "FullyReplicated";
    c.host_count = 1;
    if (s3uri_parse(uri, c.bucket, sizeof(c.bucket), c.prefix, sizeof(c.prefix)) != 0)
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: invalid S3 URI '%s'", uri);
    if (snprintf(c.dst, sizeof(c.dst), "%s", rel ? rel : "") >= (int)sizeof(c.dst))
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: path too long: '%s'", rel);
    if ((c.root = confine_openroot(root)) < 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot open '%s': %s", root,
                          strerror(-c.root));
    if ((rc = transfer_walk(t, &c, 0, err)) == 0 && c.total_objects > 0)
        rc = transfer_walk(t, &c, 1, err);
    close(c.root);
    if (rc == 0 && count)
        *count = (int)c.total_objects;
    return rc;
}

/* The upload's bucket does not exist: SageMaker never creates one, it fails the job. */
static int transfer_no_bucket(const char *bucket, struct ty_err *err)
{
    return ty_err_set(err, TY_EINVAL, NULL,
                      "ClientError: Artifact upload failed: The specified bucket does not exist "
                      "(bucket '%s'). Create the bucket or choose an existing one in "
                      "OutputDataConfig.S3OutputPath.",
                      bucket);
}

/* The bucket an upload goes to must exist. */
static int transfer_ensure_bucket(struct transfer *t, const char *bucket, struct ty_err *err)
{
    struct ty_err e2;

    ty_err_clear(&e2);
    if (objstore_bucket_get(t->os, bucket, NULL, &e2) == 0)
        return 0;
    if (e2.code != TY_ENOTFOUND)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: object store: %s", e2.msg);
    return transfer_no_bucket(bucket, err);
}

int transfer_put_file(struct transfer *t, const char *src, const char *bucket, const char *key,
                      const char *content_type, struct ty_err *err)
{
    int rc;

    if ((rc = transfer_may(t, "s3:PutObject", bucket, key, err)) != 0)
        return rc;
    /* with a role's credentials the bucket is not looked at first: HeadBucket needs
       s3:ListBucket on the whole bucket, which a job's role need not have */
    if (!t->role_creds && (rc = transfer_ensure_bucket(t, bucket, err)) != 0)
        return rc;
    if ((rc = objstore_put_file(t->os, bucket, key, src, content_type, err)) != 0) {
        if (t->role_creds && rc == -TY_ENOTFOUND && strcmp(err->field, "NoSuchBucket") == 0)
            return transfer_no_bucket(bucket, err);
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot store s3://%s/%s: %s",
                          bucket, key, err->msg);
    }
    return 0;
}

/* Stores the open regular file fd as s3://bucket/key: the object store reads it through
   /proc/self/fd/<fd>, which reopens that very file (no path is resolved again). */
static int transfer_put_fd(struct transfer *t, int fd, const char *bucket, const char *key,
                           struct ty_err *err)
{
    char path[64];

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    return transfer_put_file(t, path, bucket, key, NULL, err);
}

struct transfer_up {
    struct transfer *t;
    char bucket[256];
    char prefix[1100]; /* with a trailing '/' unless empty */
    json_t *seen;
    int seed_only;
    int count;
    struct ty_err *err;
};

/* confine_walk callback: uploads one regular file (new or changed ones with seen). */
static int transfer_up_cb(void *ud, const struct confine_entry *e)
{
    struct transfer_up *u = ud;
    char key[PATH_MAX + 1100], sig[64];
    struct stat st;
    json_t *old;
    int fd, rc;

    if (S_ISDIR(e->st.st_mode))
        return 0;
    if (!S_ISREG(e->st.st_mode)) {
        /* S3 has no links, FIFOs or devices: never followed, never opened */
        ty_log(TY_LOG_INFO, "agent.upload.skipped", "path='%s' type=%s", e->rel,
               confine_type(&e->st));
        return 0;
    }
    snprintf(sig, sizeof(sig), "%lld:%lld.%09ld", (long long)e->st.st_size,
             (long long)e->st.st_mtim.tv_sec, e->st.st_mtim.tv_nsec);
    if (u->seen) {
        old = json_object_get(u->seen, e->rel);
        if (old && strcmp(json_string_value(old), sig) == 0)
            return 0;
        if (!old && json_object_size(u->seen) >= TRANSFER_MAX_SEEN)
            return 0;
    }
    if (!u->seed_only) {
        snprintf(key, sizeof(key), "%s%s", u->prefix, e->rel);
        if (strlen(key) > OBJSTORE_MAX_KEY)
            return ty_err_set(u->err, TY_EINVAL, NULL,
                              "ClientError: S3 key for '%s' is longer than 1024 bytes", e->rel);
        fd = confine_open_read(e->dirfd, e->name, &st);
        if (fd < 0)
            return 0; /* swapped or gone since it was listed */
        snprintf(sig, sizeof(sig), "%lld:%lld.%09ld", (long long)st.st_size,
                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        rc = transfer_put_fd(u->t, fd, u->bucket, key, u->err);
        close(fd);
        if (rc)
            return rc;
        u->count++;
    }
    if (u->seen)
        json_object_set_new(u->seen, e->rel, json_string(sig));
    return 0;
}

int transfer_upload_tree(struct transfer *t, const char *root, const char *rel, const char *uri,
                         json_t *seen, int seed_only, int *count, struct ty_err *err)
{
    struct transfer_up u;
    size_t pl;
    int rc, rfd, top;

    memset(&u, 0, sizeof(u));
    u.t = t;
    u.seen = seen;
    u.seed_only = seed_only;
    u.err = err;
    if (s3uri_parse(uri, u.bucket, sizeof(u.bucket), u.prefix, sizeof(u.prefix) - 1) != 0)
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: invalid S3 URI '%s'", uri);
    pl = strlen(u.prefix);
    if (pl > 0 && u.prefix[pl - 1] != '/') {
        u.prefix[pl] = '/';
        u.prefix[pl + 1] = '\0';
    }
    if (count)
        *count = 0;
    if ((rfd = confine_openroot(root)) < 0)
        return rfd == -ENOENT
                   ? 0
                   : ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot open '%s': %s",
                                root, strerror(-rfd));
    top = confine_opendir(rfd, rel, 0);
    close(rfd);
    if (top < 0) {
        /* missing: nothing to upload; a symlink or file in its place: never followed */
        if (top != -ENOENT)
            ty_log(TY_LOG_WARN, "agent.upload.not_followed", "root='%s' path='%s' why='%s'", root,
                   rel ? rel : "", strerror(-top));
        return 0;
    }
    rc = confine_walk(top, transfer_up_cb, &u);
    close(top);
    if (rc < 0 && err->code == 0)
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot read '%s/%s': %s", root,
                        rel ? rel : "", strerror(-rc));
    if (count)
        *count = u.count;
    return rc;
}
