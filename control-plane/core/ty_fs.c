/*
 * ty_fs.c - `mkdir -p` and whole writes (ty_fs.h).
 */
#include "ty_fs.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ty_mkdirs(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    size_t len = path ? strlen(path) : 0;

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

int ty_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}
