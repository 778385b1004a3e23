/*
 * artifacts.c - S3 URIs over the local object store and atomic tar.gz archives (libarchive,
 * streamed in 64 KiB chunks: no file is ever held whole in memory).
 */
#include "artifacts.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARTIFACTS_CHUNK     65536
#define ARTIFACTS_MAX_DEPTH 64

int artifacts_s3_parse(const char *uri, char *bucket, size_t bn, char *key, size_t kn)
{
    const char *b, *slash, *k, *seg;
    size_t blen, klen;

    if (!uri || strncmp(uri, "s3://", 5) != 0)
        return -TY_EINVAL;
    b = uri + 5;
    slash = strchr(b, '/');
    blen = slash ? (size_t)(slash - b) : strlen(b);
    if (blen == 0 || blen >= bn || blen > 255)
        return -TY_EINVAL;
    for (size_t i = 0; i < blen; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_'))
            return -TY_EINVAL;
    }
    if ((blen == 1 && b[0] == '.') || (blen == 2 && b[0] == '.' && b[1] == '.'))
        return -TY_EINVAL;
    k = slash ? slash + 1 : "";
    klen = strlen(k);
    if (klen >= kn)
        return -TY_EINVAL;
    for (seg = k; *seg;) {
        const char *end = strchr(seg, '/');
        size_t sl = end ? (size_t)(end - seg) : strlen(seg);
        if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            return -TY_EINVAL;
        if (!end)
            break;
        seg = end + 1;
    }
    memcpy(bucket, b, blen);
    bucket[blen] = '\0';
    memcpy(key, k, klen + 1);
    return 0;
}

int artifacts_output_key(const char *prefix, const char *job, const char *file, char *out, size_t n)
{
    size_t pl = prefix ? strlen(prefix) : 0;
    int w;

    while (pl > 0 && prefix[pl - 1] == '/')
        pl--;
    if (pl > INT_MAX)
        return -TY_EINVAL;
    if (pl)
        w = snprintf(out, n, "%.*s/%s/output/%s", (int)pl, prefix, job, file);
    else
        w = snprintf(out, n, "%s/output/%s", job, file);
    if (w < 0 || (size_t)w >= n)
        return -TY_EINVAL;
    return 0;
}

int artifacts_mkdirs(const char *path, unsigned mode)
{
    char tmp[PATH_MAX];
    size_t len = strlen(path);

    if (len == 0 || len >= sizeof(tmp))
        return -ENAMETOOLONG;
    memcpy(tmp, path, len + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) != 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(tmp, mode) != 0 && errno != EEXIST)
        return -errno;
    return 0;
}

struct artifacts_walk {
    struct archive *ar;
    struct ty_err *err;
    char *buf; /* ARTIFACTS_CHUNK bytes */
};

static int artifacts_write_file(struct artifacts_walk *w, const char *path, const char *name,
                                struct archive_entry *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t r;

    if (fd < 0)
        return ty_err_set(w->err, TY_EIO, NULL, "cannot open '%s': %s", path, strerror(errno));
    if (archive_write_header(w->ar, e) != ARCHIVE_OK) {
        close(fd);
        return ty_err_set(w->err, TY_EIO, NULL, "cannot archive '%s': %s", name,
                          archive_error_string(w->ar));
    }
    while ((r = read(fd, w->buf, ARTIFACTS_CHUNK)) > 0) {
        if (archive_write_data(w->ar, w->buf, (size_t)r) != r) {
            close(fd);
            return ty_err_set(w->err, TY_EIO, NULL, "cannot archive '%s': %s", name,
                              archive_error_string(w->ar));
        }
    }
    close(fd);
    if (r < 0)
        return ty_err_set(w->err, TY_EIO, NULL, "cannot read '%s': %s", path, strerror(errno));
    return 0;
}

/* Adds the entries under dir (whose archive name prefix is rel, "" at the top). */
static int artifacts_walk_dir(struct artifacts_walk *w, const char *dir, const char *rel, int depth)
{
    struct dirent **list = NULL;
    int n, rc = 0;

    if (depth > ARTIFACTS_MAX_DEPTH)
        return ty_err_set(w->err, TY_EIO, NULL, "directory tree too deep at '%s'", dir);
    n = scandir(dir, &list, NULL, alphasort);
    if (n < 0) {
        if (errno == ENOENT && depth == 0)
            return 0;
        return ty_err_set(w->err, TY_EIO, NULL, "cannot read '%s': %s", dir, strerror(errno));
    }
    for (int i = 0; i < n; i++) {
        const char *nm = list[i]->d_name;
        char path[PATH_MAX], name[PATH_MAX], link[PATH_MAX];
        struct archive_entry *e;
        struct stat st;
        int w1, w2;

        if (rc || strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        w1 = snprintf(path, sizeof(path), "%s/%s", dir, nm);
        w2 = rel[0] ? snprintf(name, sizeof(name), "%s/%s", rel, nm)
                    : snprintf(name, sizeof(name), "%s", nm);
        if (w1 < 0 || (size_t)w1 >= sizeof(path) || w2 < 0 || (size_t)w2 >= sizeof(name)) {
            rc = ty_err_set(w->err, TY_EIO, NULL, "path too long under '%s'", dir);
            continue;
        }
        if (lstat(path, &st) != 0) {
            rc = ty_err_set(w->err, TY_EIO, NULL, "cannot stat '%s': %s", path, strerror(errno));
            continue;
        }
        if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
            continue;
        e = archive_entry_new();
        if (!e) {
            rc = ty_err_set(w->err, TY_EIO, NULL, "out of memory");
            continue;
        }
        archive_entry_copy_stat(e, &st);
        archive_entry_set_pathname(e, name);
        if (S_ISREG(st.st_mode)) {
            rc = artifacts_write_file(w, path, name, e);
        } else if (S_ISLNK(st.st_mode)) {
            ssize_t l = readlink(path, link, sizeof(link) - 1);
            if (l < 0) {
                rc = ty_err_set(w->err, TY_EIO, NULL, "cannot read link '%s'", path);
            } else {
                link[l] = '\0';
                archive_entry_set_symlink(e, link);
                archive_entry_set_size(e, 0);
                if (archive_write_header(w->ar, e) != ARCHIVE_OK)
                    rc = ty_err_set(w->err, TY_EIO, NULL, "cannot archive '%s': %s", name,
                                    archive_error_string(w->ar));
            }
        } else {
            archive_entry_set_size(e, 0);
            if (archive_write_header(w->ar, e) != ARCHIVE_OK)
                rc = ty_err_set(w->err, TY_EIO, NULL, "cannot archive '%s': %s", name,
                                archive_error_string(w->ar));
            else
                rc = artifacts_walk_dir(w, path, name, depth + 1);
        }
        archive_entry_free(e);
    }
    for (int i = 0; i < n; i++)
        free(list[i]);
    free(list);
    return rc;
}

static int artifacts_fsync_dir(const char *file)
{
    char dir[PATH_MAX];
    char *slash;
    int fd;

    if (strlen(file) >= sizeof(dir))
        return -1;
    memcpy(dir, file, strlen(file) + 1);
    slash = strrchr(dir, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    fsync(fd);
    close(fd);
    return 0;
}

int artifacts_targz(const char *src_dir, const char *dest, struct ty_err *err)
{
    static atomic_uint seq;
    char tmp[PATH_MAX], parent[PATH_MAX];
    struct artifacts_walk w = {0};
    char *slash;
    int fd = -1, rc, w1;

    w1 = snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%u", dest, (long)getpid(),
                  atomic_fetch_add(&seq, 1));
    if (w1 < 0 || (size_t)w1 >= sizeof(tmp) || strlen(dest) >= sizeof(parent))
        return ty_err_set(err, TY_EIO, NULL, "artifact path too long: '%s'", dest);
    memcpy(parent, dest, strlen(dest) + 1);
    slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if ((rc = artifacts_mkdirs(parent, 0755)) != 0)
            return ty_err_set(err, TY_EIO, NULL, "cannot create '%s': %s", parent, strerror(-rc));
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return ty_err_set(err, TY_EIO, NULL, "cannot create '%s': %s", tmp, strerror(errno));
    w.err = err;
    w.buf = malloc(ARTIFACTS_CHUNK);
    w.ar = archive_write_new();
    if (!w.buf || !w.ar) {
        rc = ty_err_set(err, TY_EIO, NULL, "out of memory");
        goto fail;
    }
    if (archive_write_add_filter_gzip(w.ar) != ARCHIVE_OK ||
        archive_write_set_format_pax_restricted(w.ar) != ARCHIVE_OK ||
        archive_write_open_fd(w.ar, fd) != ARCHIVE_OK) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot start archive: %s", archive_error_string(w.ar));
        goto fail;
    }
    if ((rc = artifacts_walk_dir(&w, src_dir, "", 0)) != 0)
        goto fail;
    if (archive_write_close(w.ar) != ARCHIVE_OK) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot finish archive: %s", archive_error_string(w.ar));
        goto fail;
    }
    archive_write_free(w.ar);
    w.ar = NULL;
    if (fsync(fd) != 0 || close(fd) != 0) {
        fd = -1;
        rc = ty_err_set(err, TY_EIO, NULL, "cannot write '%s': %s", tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (rename(tmp, dest) != 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot rename to '%s': %s", dest, strerror(errno));
        goto fail;
    }
    artifacts_fsync_dir(dest);
    free(w.buf);
    return 0;

fail:
    if (w.ar)
        archive_write_free(w.ar);
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(w.buf);
    return rc ? rc : -TY_EIO;
}
