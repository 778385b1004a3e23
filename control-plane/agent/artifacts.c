/*
 * artifacts.c - key layout over the local object store and atomic tar.gz archives (libarchive,
 * streamed in 64 KiB chunks: no file is ever held whole in memory).
 */
#define _GNU_SOURCE /* readlinkat */
#include "artifacts.h"

#include "confine.h"
#include "ty_fs.h"
#include "ty_log.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARTIFACTS_CHUNK 65536

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

struct artifacts_walk {
    struct archive *ar;
    struct ty_err *err;
    char *buf; /* ARTIFACTS_CHUNK bytes */
};

/* Archives the regular file e (opened again below its folder fd, never followed): exactly the
   size fstat gives, zero-padded should it shrink meanwhile. A file swapped for anything else
   since it was listed is skipped. */
static int artifacts_write_file(struct artifacts_walk *w, const struct confine_entry *e,
                                struct archive_entry *ae)
{
    struct stat st;
    int fd = confine_open_read(e->dirfd, e->name, &st);
    int64_t left;

    if (fd < 0) {
        ty_log(TY_LOG_INFO, "agent.artifacts.skipped", "path='%s' why='%s'", e->rel, strerror(-fd));
        return 0;
    }
    archive_entry_copy_stat(ae, &st);
    archive_entry_set_pathname(ae, e->rel);
    if (archive_write_header(w->ar, ae) != ARCHIVE_OK) {
        close(fd);
        return ty_err_set(w->err, TY_EIO, NULL, "cannot archive '%s': %s", e->rel,
                          archive_error_string(w->ar));
    }
    for (left = st.st_size; left > 0;) {
        size_t want = left < ARTIFACTS_CHUNK ? (size_t)left : ARTIFACTS_CHUNK;
        ssize_t r = read(fd, w->buf, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            return ty_err_set(w->err, TY_EIO, NULL, "cannot read '%s': %s", e->rel,
                              strerror(errno));
        }
        if (r == 0) { /* shrunk since fstat: the header promised st_size bytes */
            r = (ssize_t)want;
            memset(w->buf, 0, want);
        }
        if (archive_write_data(w->ar, w->buf, (size_t)r) != r) {
            close(fd);
            return ty_err_set(w->err, TY_EIO, NULL, "cannot archive '%s': %s", e->rel,
                              archive_error_string(w->ar));
        }
        left -= r;
    }
    close(fd);
    return 0;
}

/* confine_walk callback: one entry of the tree. */
static int artifacts_walk_cb(void *ud, const struct confine_entry *e)
{
    struct artifacts_walk *w = ud;
    struct archive_entry *ae;
    char link[PATH_MAX];
    int rc = 0;

    if (!S_ISREG(e->st.st_mode) && !S_ISDIR(e->st.st_mode) && !S_ISLNK(e->st.st_mode)) {
        ty_log(TY_LOG_INFO, "agent.artifacts.skipped", "path='%s' type=%s", e->rel,
               confine_type(&e->st));
        return 0;
    }
    if (!(ae = archive_entry_new()))
        return ty_err_set(w->err, TY_EIO, NULL, "out of memory");
    if (S_ISREG(e->st.st_mode)) {
        rc = artifacts_write_file(w, e, ae);
        archive_entry_free(ae);
        return rc;
    }
    archive_entry_copy_stat(ae, &e->st);
    archive_entry_set_pathname(ae, e->rel);
    archive_entry_set_size(ae, 0);
    if (S_ISLNK(e->st.st_mode)) {
        /* a link is kept as a link, as tar does: its target is never read */
        ssize_t l = readlinkat(e->dirfd, e->name, link, sizeof(link) - 1);
        if (l < 0) {
            archive_entry_free(ae);
            return 0; /* gone or swapped since it was listed */
        }
        link[l] = '\0';
        archive_entry_set_symlink(ae, link);
    }
    if (archive_write_header(w->ar, ae) != ARCHIVE_OK)
        rc = ty_err_set(w->err, TY_EIO, NULL, "cannot archive '%s': %s", e->rel,
                        archive_error_string(w->ar));
    archive_entry_free(ae);
    return rc;
}

/* Adds the tree of the folder rel under root. A missing folder adds nothing; a symlink (or
   anything but a folder) in its place or on its way adds nothing either and is logged. */
static int artifacts_walk_tree(struct artifacts_walk *w, const char *root, const char *rel)
{
    int rfd, top, rc;

    if ((rfd = confine_openroot(root)) < 0)
        return rfd == -ENOENT
                   ? 0
                   : ty_err_set(w->err, TY_EIO, NULL, "cannot open '%s': %s", root, strerror(-rfd));
    top = confine_opendir(rfd, rel, 0);
    close(rfd);
    if (top < 0) {
        if (top != -ENOENT)
            ty_log(TY_LOG_WARN, "agent.artifacts.not_followed",
                   "root='%s' path='%s' why='%s' note='not a folder: archived as empty'", root,
                   rel ? rel : "", strerror(-top));
        return 0;
    }
    rc = confine_walk(top, artifacts_walk_cb, w);
    close(top);
    if (rc < 0 && w->err->code == 0)
        rc = ty_err_set(w->err, TY_EIO, NULL, "cannot read '%s/%s': %s", root, rel ? rel : "",
                        strerror(-rc));
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

int artifacts_targz(const char *root, const char *rel, const char *dest, struct ty_err *err)
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
        if ((rc = ty_mkdirs(parent, 0755)) != 0)
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
    if ((rc = artifacts_walk_tree(&w, root, rel)) != 0)
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
