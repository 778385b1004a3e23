/*
 * confine.c - openat-based walking, opening and creating below a root folder fd that never
 * follows a symlink (confine.h).
 */
#define _GNU_SOURCE /* O_NOFOLLOW, O_DIRECTORY, fdopendir */
#include "confine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONFINE_RM_DEPTH 256 /* folder levels confine_rmtree descends */

int confine_openroot(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Opens (creating with mode when mode != 0) the single component seg (length sl) in dfd. */
static int confine_step(int dfd, const char *seg, size_t sl, unsigned mode)
{
    char name[256];
    int fd;

    if (sl == 0 || sl >= sizeof(name))
        return sl ? -ENAMETOOLONG : -EINVAL;
    if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
        return -EINVAL;
    memcpy(name, seg, sl);
    name[sl] = '\0';
    fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && mode) {
        if (mkdirat(dfd, name, (mode_t)mode) != 0 && errno != EEXIST)
            return -errno;
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && fchmod(fd, (mode_t)mode) != 0) {
            int e = errno;
            close(fd);
            return -e;
        }
    }
    return fd < 0 ? -errno : fd;
}

int confine_opendir(int root, const char *rel, unsigned mode)
{
    int cur = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (cur < 0)
        return -errno;
    for (const char *seg = rel ? rel : ""; *seg;) {
        const char *end = strchr(seg, '/');
        size_t sl = end ? (size_t)(end - seg) : strlen(seg);
        int next;

        if (sl > 0) { /* "a//b" and a trailing '/' are harmless */
            next = confine_step(cur, seg, sl, mode);
            close(cur);
            if (next < 0)
                return next;
            cur = next;
        }
        if (!end)
            break;
        seg = end + 1;
    }
    return cur;
}

int confine_split(const char *rel, char *parent, size_t pn, const char **leaf)
{
    const char *slash = strrchr(rel, '/');
    size_t pl;

    if (!*rel || (slash && !slash[1]))
        return -EINVAL;
    pl = slash ? (size_t)(slash - rel) : 0;
    if (pl >= pn)
        return -ENAMETOOLONG;
    memcpy(parent, rel, pl);
    parent[pl] = '\0';
    *leaf = slash ? slash + 1 : rel;
    return 0;
}

/* 1 when leaf is "." or "..". */
static int confine_dots(const char *leaf)
{
    return strcmp(leaf, ".") == 0 || strcmp(leaf, "..") == 0;
}

/* Opens the parent folder of rel below root (creating missing folders with dir_mode when it is
   not 0). OUT: leaf (points into rel), never "." or "..". The parent's fd, or negative errno. */
static int confine_parent(int root, const char *rel, unsigned dir_mode, const char **leaf)
{
    char parent[4096];
    int rc;

    if ((rc = confine_split(rel, parent, sizeof(parent), leaf)) != 0)
        return rc;
    if (confine_dots(*leaf))
        return -EINVAL;
    return confine_opendir(root, parent, dir_mode);
}

int confine_open_read(int root, const char *rel, struct stat *st)
{
    const char *leaf;
    struct stat s;
    int dfd, fd, rc;

    if ((dfd = confine_parent(root, rel, 0, &leaf)) < 0)
        return dfd;
    /* O_NONBLOCK: should a FIFO or device be there, the open does not wait for a writer */
    fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    rc = fd < 0 ? -errno : 0;
    close(dfd);
    if (rc)
        return rc == -ELOOP ? -EINVAL : rc;
    if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    /* back to blocking reads (regular files never block anyway) */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    if (st)
        *st = s;
    return fd;
}

int confine_create(int root, const char *rel, unsigned mode, unsigned dir_mode)
{
    const char *leaf;
    struct stat s;
    int dfd, fd, rc;

    if ((dfd = confine_parent(root, rel, dir_mode, &leaf)) < 0)
        return dfd;
    if (fstatat(dfd, leaf, &s, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(s.st_mode)) {
            close(dfd);
            return -EISDIR;
        }
        if (unlinkat(dfd, leaf, 0) != 0 && errno != ENOENT) {
            rc = -errno;
            close(dfd);
            return rc;
        }
    }
    fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
    rc = fd < 0 ? -errno : 0;
    close(dfd);
    if (rc)
        return rc;
    if (fchmod(fd, (mode_t)mode) != 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

const char *confine_type(const struct stat *st)
{
    if (S_ISREG(st->st_mode))
        return "file";
    if (S_ISDIR(st->st_mode))
        return "folder";
    if (S_ISLNK(st->st_mode))
        return "symlink";
    if (S_ISFIFO(st->st_mode))
        return "fifo";
    if (S_ISSOCK(st->st_mode))
        return "socket";
    return "device";
}

static int confine_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void confine_names_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* new: the sorted names in the folder fd dfd without "." and "..". OUT: *n. 0 or -errno. */
static int confine_names(int dfd, char ***out, size_t *n)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char **v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *de;
    DIR *d;

    if (fd < 0)
        return -errno;
    if (!(d = fdopendir(fd))) {
        int e = errno;
        close(fd);
        return -e;
    }
    errno = 0;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (cnt == cap) {
            size_t nc = cap ? cap * 2 : 32;
            char **g = realloc(v, nc * sizeof(*v));
            if (!g)
                goto nomem;
            v = g;
            cap = nc;
        }
        if (!(v[cnt] = strdup(de->d_name)))
            goto nomem;
        cnt++;
    }
    closedir(d);
    if (cnt)
        qsort(v, cnt, sizeof(*v), confine_cmp);
    *out = v;
    *n = cnt;
    return 0;
nomem:
    closedir(d);
    confine_names_free(v, cnt);
    return -ENOMEM;
}

static int confine_walk_dir(int dfd, const char *rel, int depth, confine_walk_fn fn, void *ud)
{
    char **names = NULL;
    size_t n = 0;
    int rc;

    if (depth > CONFINE_MAX_DEPTH)
        return -ELOOP;
    if ((rc = confine_names(dfd, &names, &n)) != 0)
        return rc;
    for (size_t i = 0; i < n && rc >= 0; i++) {
        struct confine_entry e;
        size_t rl = strlen(rel), nl = strlen(names[i]);
        char *path = malloc(rl + nl + 2);
        int r;

        if (!path) {
            rc = -ENOMEM;
            break;
        }
        memcpy(path, rel, rl);
        if (rl)
            path[rl++] = '/';
        memcpy(path + rl, names[i], nl + 1);
        memset(&e, 0, sizeof(e));
        e.dirfd = dfd;
        e.name = names[i];
        e.rel = path;
        e.depth = depth;
        if (fstatat(dfd, names[i], &e.st, AT_SYMLINK_NOFOLLOW) != 0) {
            free(path); /* gone since it was listed */
            continue;
        }
        r = fn(ud, &e);
        if (r < 0) {
            rc = r;
        } else if (r == 0 && S_ISDIR(e.st.st_mode)) {
            int cfd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            struct stat cs;
            if (cfd >= 0 && fstat(cfd, &cs) == 0 && cs.st_dev == e.st.st_dev &&
                cs.st_ino == e.st.st_ino)
                rc = confine_walk_dir(cfd, path, depth + 1, fn, ud);
            /* else: swapped for a symlink or another folder since it was looked at: skipped */
            if (cfd >= 0)
                close(cfd);
        }
        free(path);
    }
    confine_names_free(names, n);
    return rc < 0 ? rc : 0;
}

int confine_walk(int top, confine_walk_fn fn, void *ud)
{
    return confine_walk_dir(top, "", 0, fn, ud);
}

static int confine_rm(int dirfd, const char *name, int depth)
{
    struct stat st;
    char **names = NULL;
    size_t n = 0;
    int fd, rc = 0;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
    if (depth > CONFINE_RM_DEPTH)
        return -ELOOP;
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) /* swapped for a non-folder meanwhile: remove that */
        return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
    if ((rc = confine_names(fd, &names, &n)) == 0) {
        for (size_t i = 0; i < n; i++) {
            int r = confine_rm(fd, names[i], depth + 1);
            if (r && !rc)
                rc = r;
        }
    }
    confine_names_free(names, n);
    close(fd);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT && !rc)
        rc = -errno;
    return rc;
}

int confine_rmtree(int dirfd, const char *name)
{
    if (!name || !*name || confine_dots(name) || strchr(name, '/'))
        return -EINVAL;
    return confine_rm(dirfd, name, 0);
}
