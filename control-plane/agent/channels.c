/*
 * channels.c - key-to-path mapping, sharding, ManifestFile parsing, streamed (gunzipping)
 * copies and safe tar extraction for staging a job's input (see channels.h).
 * Gzip goes through libarchive's raw format with the gzip filter, so multi-member streams work
 * and no zlib code lives here.
 */
#define _GNU_SOURCE /* O_NOFOLLOW, futimens */
#include "channels.h"

#include "artifacts.h"
#include "confine.h"
#include "s3uri.h"
#include "ty_fs.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int channels_shard_mine(const char *dist, uint64_t i, int host_index, int host_count)
{
    if (!dist || strcmp(dist, "ShardedByS3Key") != 0 || host_count <= 1)
        return 1;
    if (host_index < 0 || host_index >= host_count)
        return 0;
    return i % (uint64_t)host_count == (uint64_t)host_index;
}

/* 0 when rel is a safe relative path: non-empty segments, none "." or "..". */
static int channels_rel_ok(const char *rel)
{
    const char *seg = rel;

    if (!*rel || *rel == '/')
        return -1;
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t sl = end ? (size_t)(end - seg) : strlen(seg);
        if (sl == 0 || (sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            return -1;
        if (!end)
            return 0;
        seg = end + 1;
    }
}

int channels_rel_path(const char *prefix, const char *key, char *out, size_t n, struct ty_err *err)
{
    size_t pl = strlen(prefix), kl = strlen(key);
    const char *rel;

    if (kl > 0 && key[kl - 1] == '/')
        return 1; /* a "folder" marker: no file */
    if (strncmp(key, prefix, pl) != 0)
        return ty_err_set(err, TY_EINVAL, NULL,
                          "ClientError: S3 key '%s' is not under the prefix '%s'", key, prefix);
    if (pl == 0)
        rel = key;
    else if (prefix[pl - 1] == '/')
        rel = key + pl;
    else if (key[pl] == '/')
        rel = key + pl + 1;
    else {
        const char *slash = strrchr(prefix, '/');
        rel = slash ? key + (slash - prefix) + 1 : key;
    }
    if (channels_rel_ok(rel) != 0)
        return ty_err_set(err, TY_EINVAL, NULL,
                          "ClientError: S3 key '%s' cannot be staged as a file (empty, '.' or "
                          "'..' path segments)",
                          key);
    if (strlen(rel) >= n)
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: S3 key '%s' is too long to stage",
                          key);
    memcpy(out, rel, strlen(rel) + 1);
    return 0;
}

static int channels_cmp_json_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

int channels_manifest_parse(const char *path, const char *uri, char *bucket, size_t bn,
                            char *prefix, size_t pn, json_t **keys, struct ty_err *err)
{
    json_error_t je;
    json_t *doc = NULL, *out = NULL, **v = NULL, *e;
    const char *pfx;
    char b[256], k[1100];
    struct stat st;
    size_t i, n, m = 0;
    int fd, rc = -TY_EINVAL;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot read manifest: %s",
                          strerror(errno));
    if (fstat(fd, &st) != 0 || st.st_size > CHANNELS_MANIFEST_MAX) {
        close(fd);
        return ty_err_set(err, TY_EINVAL, NULL,
                          "ClientError: ManifestFile '%s' is larger than %d bytes", uri,
                          CHANNELS_MANIFEST_MAX);
    }
    doc = json_loadfd(fd, JSON_REJECT_DUPLICATES, &je);
    close(fd);
    if (!doc) {
        ty_err_set(err, TY_EINVAL, NULL,
                   "ClientError: ManifestFile '%s' is not valid JSON: %s (line %d)", uri, je.text,
                   je.line);
        goto done;
    }
    n = json_array_size(doc);
    pfx = json_string_value(json_object_get(json_array_get(doc, 0), "prefix"));
    if (!json_is_array(doc) || n < 1 || !pfx) {
        ty_err_set(err, TY_EINVAL, NULL,
                   "ClientError: ManifestFile '%s' must be a JSON array whose first element is "
                   "{\"prefix\": \"s3://bucket/prefix/\"}",
                   uri);
        goto done;
    }
    if (n - 1 > CHANNELS_MAX_KEYS) {
        ty_err_set(err, TY_EINVAL, NULL, "ClientError: ManifestFile '%s' lists more than %d keys",
                   uri, CHANNELS_MAX_KEYS);
        goto done;
    }
    if (s3uri_parse(pfx, b, sizeof(b), k, sizeof(k)) != 0 || strlen(b) >= bn || strlen(k) >= pn) {
        ty_err_set(err, TY_EINVAL, NULL,
                   "ClientError: ManifestFile '%s' has an invalid prefix '%s'", uri, pfx);
        goto done;
    }
    v = calloc(n, sizeof(*v));
    out = json_array();
    if (!v || !out) {
        ty_err_set(err, TY_ENOMEM, NULL, "InternalServerError: out of memory");
        goto done;
    }
    for (i = 1; i < n; i++) {
        const char *rel = json_string_value(json_array_get(doc, i));
        size_t kl = strlen(k), rl = rel ? strlen(rel) : 0;
        char *full;
        if (!rel || rl == 0 || kl + rl > 1024) {
            ty_err_set(err, TY_EINVAL, NULL,
                       "ClientError: ManifestFile '%s' element %zu is not a key (a non-empty "
                       "string; prefix and key at most 1024 bytes)",
                       uri, i);
            goto done;
        }
        full = malloc(kl + rl + 1);
        if (!full) {
            ty_err_set(err, TY_ENOMEM, NULL, "InternalServerError: out of memory");
            goto done;
        }
        memcpy(full, k, kl);
        memcpy(full + kl, rel, rl + 1);
        v[m] = json_string(full);
        free(full);
        if (!v[m]) {
            ty_err_set(err, TY_EINVAL, NULL,
                       "ClientError: ManifestFile '%s' element %zu is not valid UTF-8", uri, i);
            goto done;
        }
        m++;
    }
    qsort(v, m, sizeof(*v), channels_cmp_json_str);
    for (i = 0; i < m; i++) {
        e = v[i];
        v[i] = NULL;
        if (json_array_size(out) > 0 &&
            strcmp(json_string_value(json_array_get(out, json_array_size(out) - 1)),
                   json_string_value(e)) == 0) {
            json_decref(e);
            continue;
        }
        if (json_array_append_new(out, e) != 0) {
            ty_err_set(err, TY_ENOMEM, NULL, "InternalServerError: out of memory");
            goto done;
        }
    }
    memcpy(bucket, b, strlen(b) + 1);
    memcpy(prefix, k, strlen(k) + 1);
    *keys = out;
    out = NULL;
    rc = 0;
done:
    if (v) {
        for (i = 0; i < n; i++)
            json_decref(v[i]);
        free(v);
    }
    json_decref(out);
    json_decref(doc);
    return rc;
}

/* mkdir -p of dst's parent, world-writable like the rest of the staged tree. */
static int channels_mkparent(const char *dst, struct ty_err *err)
{
    char parent[PATH_MAX];
    char *slash;
    size_t l = strlen(dst);
    int rc;

    if (l >= sizeof(parent))
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: path too long: '%s'", dst);
    memcpy(parent, dst, l + 1);
    slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return 0;
    *slash = '\0';
    if ((rc = ty_mkdirs(parent, 0777)) != 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create '%s': %s", parent,
                          strerror(-rc));
    return 0;
}

/* Streams fd into out (gunzipping when gunzip); dst names out in messages. OUT: *bytes. */
static int channels_copy_stream(int fd, int out, const char *dst, int gunzip, const char *what,
                                uint64_t *bytes, struct ty_err *err)
{
    struct archive *ar = NULL;
    struct archive_entry *e;
    char *buf = malloc(CHANNELS_CHUNK);
    uint64_t total = 0;
    int rc;

    if (!buf) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "InternalServerError: out of memory");
        goto done;
    }
    {
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) {
            rc = 0; /* an empty object is an empty file, gzip or not */
            goto done;
        }
    }
    if (!gunzip) {
        ssize_t r;
        while ((r = read(fd, buf, CHANNELS_CHUNK)) != 0) {
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot read %s: %s", what,
                                strerror(errno));
                goto done;
            }
            if (ty_write_all(out, buf, (size_t)r) != 0) {
                rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot write '%s': %s",
                                dst, strerror(errno));
                goto done;
            }
            total += (uint64_t)r;
        }
        rc = 0;
        goto done;
    }
    ar = archive_read_new();
    if (!ar || archive_read_support_filter_gzip(ar) != ARCHIVE_OK ||
        archive_read_support_format_raw(ar) != ARCHIVE_OK ||
        archive_read_open_fd(ar, fd, CHANNELS_CHUNK) != ARCHIVE_OK) {
        rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: cannot decompress %s: %s", what,
                        ar ? archive_error_string(ar) : "out of memory");
        goto done;
    }
    rc = archive_read_next_header(ar, &e);
    if (rc == ARCHIVE_EOF) {
        rc = 0; /* an empty object: an empty file */
        goto done;
    }
    if (rc != ARCHIVE_OK || archive_filter_code(ar, 0) != ARCHIVE_FILTER_GZIP) {
        rc = ty_err_set(err, TY_EINVAL, NULL,
                        "ClientError: %s is not gzip data but its channel has CompressionType "
                        "Gzip",
                        what);
        goto done;
    }
    for (;;) {
        la_ssize_t r = archive_read_data(ar, buf, CHANNELS_CHUNK);
        if (r == 0)
            break;
        if (r < 0) {
            rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: cannot decompress %s: %s", what,
                            archive_error_string(ar));
            goto done;
        }
        if (ty_write_all(out, buf, (size_t)r) != 0) {
            rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot write '%s': %s", dst,
                            strerror(errno));
            goto done;
        }
        total += (uint64_t)r;
    }
    rc = 0;
done:
    if (ar)
        archive_read_free(ar);
    free(buf);
    if (rc == 0)
        *bytes = total;
    return rc;
}

int channels_copy_fd(int fd, const char *dst, int gunzip, const char *what, uint64_t *bytes,
                     struct ty_err *err)
{
    uint64_t total = 0;
    int out, rc;

    if ((rc = channels_mkparent(dst, err)) != 0)
        return rc;
    out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (out < 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create '%s': %s", dst,
                          strerror(errno));
    rc = channels_copy_stream(fd, out, dst, gunzip, what, &total, err);
    if (close(out) != 0 && rc == 0)
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot write '%s': %s", dst,
                        strerror(errno));
    if (rc != 0)
        unlink(dst);
    if (rc == 0 && bytes)
        *bytes = total;
    return rc;
}

int channels_copy_fd_at(int fd, int root, const char *rel, int gunzip, const char *what,
                        uint64_t *bytes, struct ty_err *err)
{
    uint64_t total = 0;
    int out, rc;

    out = confine_create(root, rel, 0666, 0777);
    if (out < 0) {
        if (out == -EINVAL || out == -ELOOP || out == -ENOTDIR || out == -EISDIR)
            return ty_err_set(err, TY_EINVAL, NULL,
                              "ClientError: %s cannot be staged as '%s': a path component is not "
                              "a folder",
                              what, rel);
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create '%s': %s", rel,
                          strerror(-out));
    }
    rc = channels_copy_stream(fd, out, rel, gunzip, what, &total, err);
    if (close(out) != 0 && rc == 0)
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot write '%s': %s", rel,
                        strerror(errno));
    if (rc != 0) {
        char parent[PATH_MAX];
        const char *leaf;
        int dfd;
        if (confine_split(rel, parent, sizeof(parent), &leaf) == 0 &&
            (dfd = confine_opendir(root, parent, 0)) >= 0) {
            unlinkat(dfd, leaf, 0);
            close(dfd);
        }
    }
    if (rc == 0 && bytes)
        *bytes = total;
    return rc;
}

/*
 * 0 when a symlink at entry path name with target tgt resolves inside the tree, judged by how
 * the kernel resolves it, not by its text: the target must be relative and normal, i.e. some
 * leading ".." segments and then plain names only. A ".." after a name is refused, since that
 * name may itself be a link (a/b -> .., then l -> a/b/.. is the tree's parent, not "a"). Leading
 * ".." segments climb the link's own parent folders, which are real folders (no entry is ever
 * made through a link), so they are counted against the link's depth. Each name below may be a
 * link again, but every link was judged the same way where it lies, so by induction no chain of
 * links leaves the tree.
 */
static int channels_link_ok(const char *name, const char *tgt)
{
    int depth = 0, named = 0;
    const char *seg;

    if (!tgt || !*tgt || tgt[0] == '/')
        return -1;
    /* the link's own directory depth */
    for (const char *p = name; *p; p++) {
        if (*p == '/' && p[1])
            depth++;
    }
    for (seg = tgt; *seg;) {
        const char *end = strchr(seg, '/');
        size_t sl = end ? (size_t)(end - seg) : strlen(seg);
        if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
            if (named || --depth < 0)
                return -1;
        } else if (sl > 0 && !(sl == 1 && seg[0] == '.')) {
            named = 1;
        }
        if (!end)
            break;
        seg = end + 1;
    }
    return 0;
}

/* Writes the data of the current regular-file entry of in into the new file leaf of dfd. */
static int channels_untar_file(struct archive *in, struct archive_entry *e, int dfd,
                               const char *leaf, const char *name, const char *what, char *buf,
                               struct ty_err *err)
{
    mode_t perm = (archive_entry_perm(e) & 0755) | 0644;
    struct timespec ts[2];
    la_ssize_t n;
    int out = confine_create(dfd, leaf, perm, 0);

    if (out < 0)
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: %s: cannot unpack '%s': %s", what,
                          name, strerror(-out));
    while ((n = archive_read_data(in, buf, CHANNELS_CHUNK)) > 0) {
        if (ty_write_all(out, buf, (size_t)n) != 0) {
            int e2 = errno;
            close(out);
            return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot write '%s': %s", name,
                              strerror(e2));
        }
    }
    if (n < 0) {
        close(out);
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: %s: cannot read '%s': %s", what, name,
                          archive_error_string(in));
    }
    ts[0].tv_sec = ts[1].tv_sec = archive_entry_mtime(e);
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    futimens(out, ts);
    if (close(out) != 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot write '%s': %s", name,
                          strerror(errno));
    return 0;
}

int channels_untar_fd(int fd, const char *dest, const char *what, struct ty_err *err)
{
    /* Every entry is written relative to a folder fd of dest, each path component opened with
       O_NOFOLLOW (confine.h): an entry can neither name nor pass through a symlink, whatever
       earlier entries made. Names and link targets are checked first, so that the
       FailureReason says what was wrong. */
    struct archive *in = archive_read_new();
    struct archive_entry *e;
    char *buf = malloc(CHANNELS_CHUNK);
    long entries = 0;
    int root = -1, rc = 0, r;

    if (!in || !buf) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "InternalServerError: out of memory");
        goto done;
    }
    if ((root = confine_openroot(dest)) < 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot open '%s': %s", dest,
                        strerror(-root));
        goto done;
    }
    archive_read_support_filter_all(in);
    archive_read_support_format_tar(in);
    archive_read_support_format_gnutar(in);
    if (archive_read_open_fd(in, fd, CHANNELS_CHUNK) != ARCHIVE_OK) {
        rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: cannot read %s: %s", what,
                        archive_error_string(in));
        goto done;
    }
    while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        const char *ename = archive_entry_pathname(e), *name, *leaf;
        mode_t type = archive_entry_filetype(e);
        char tmp[PATH_MAX], parent[PATH_MAX];
        size_t l;
        int dfd;

        if (++entries > CHANNELS_TAR_ENTRIES) {
            rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: %s has more than %d entries", what,
                            CHANNELS_TAR_ENTRIES);
            goto done;
        }
        name = ename ? ename : "";
        while (name[0] == '.' && name[1] == '/')
            name += 2;
        if (!*name || strcmp(name, ".") == 0)
            continue;
        /* a directory entry "a/b/" is checked without its trailing slash */
        l = strlen(name);
        if (l >= sizeof(tmp)) {
            rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: %s: entry name too long", what);
            goto done;
        }
        memcpy(tmp, name, l + 1);
        while (l > 1 && tmp[l - 1] == '/')
            tmp[--l] = '\0';
        if (channels_rel_ok(tmp) != 0) {
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: %s: entry '%s' is an absolute path or has '..' "
                            "segments; it would be unpacked outside the code directory",
                            what, name);
            goto done;
        }
        if (archive_entry_hardlink(e)) {
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: %s: entry '%s' is a hard link, which is not supported",
                            what, tmp);
            goto done;
        }
        if (type == AE_IFLNK && channels_link_ok(tmp, archive_entry_symlink(e)) != 0) {
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: %s: symbolic link '%s' points outside the code "
                            "directory (a link's target must be relative: leading '..' "
                            "segments within the archive, then names, with no '..' after a "
                            "name)",
                            what, tmp);
            goto done;
        }
        if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
            continue; /* FIFOs, devices, sockets: never made */
        if (confine_split(tmp, parent, sizeof(parent), &leaf) != 0) {
            rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: %s: entry '%s' path too long", what,
                            tmp);
            goto done;
        }
        dfd = confine_opendir(root, parent, 0755);
        if (dfd < 0) {
            rc = ty_err_set(err, TY_EINVAL, NULL,
                            "ClientError: %s: entry '%s' would be unpacked through a symbolic "
                            "link or a file ('%s' is not a folder)",
                            what, tmp, parent);
            goto done;
        }
        if (type == AE_IFDIR) {
            struct stat st;
            if (mkdirat(dfd, leaf, 0755) != 0 &&
                (errno != EEXIST || fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                 !S_ISDIR(st.st_mode)))
                rc = ty_err_set(err, TY_EINVAL, NULL,
                                "ClientError: %s: cannot unpack folder '%s': another entry is in "
                                "the way",
                                what, tmp);
            else
                fchmodat(dfd, leaf, 0755, 0);
        } else if (type == AE_IFLNK) {
            struct stat st;
            if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
                unlinkat(dfd, leaf, 0);
            if (symlinkat(archive_entry_symlink(e), dfd, leaf) != 0)
                rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: %s: cannot unpack '%s': %s",
                                what, tmp, strerror(errno));
        } else {
            rc = channels_untar_file(in, e, dfd, leaf, tmp, what, buf, err);
        }
        close(dfd);
        if (rc != 0)
            goto done;
    }
    if (r != ARCHIVE_EOF)
        rc = ty_err_set(err, TY_EINVAL, NULL, "ClientError: cannot read %s: %s", what,
                        archive_error_string(in));
done:
    if (root >= 0)
        close(root);
    if (in)
        archive_read_free(in);
    free(buf);
    return rc;
}

void channels_fmt_size(uint64_t bytes, char *out, size_t n)
{
    static const char *const units[] = {"bytes", "KB", "MB", "GB", "TB"};
    double v = (double)bytes;
    int u = 0;

    if (bytes < 1000) {
        snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
        return;
    }
    while (v >= 1000.0 && u < 4) {
        v /= 1000.0;
        u++;
    }
    snprintf(out, n, "%.1f %s", v, units[u]);
}
