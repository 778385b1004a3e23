/*
 * ty_fs.h - file-system helpers shared by the server, the object store and the agent.
 *
 * Owns: nothing beyond the call. Thread-safe (no shared state).
 */
#ifndef TY_CORE_TY_FS_H
#define TY_CORE_TY_FS_H

#include <stddef.h>
#include <sys/types.h>

/*
 * `mkdir -p path` with mode for each folder it creates (existing ones are left as they are).
 * Returns 0, or -errno of the first mkdir that failed (-ENAMETOOLONG past PATH_MAX).
 */
int ty_mkdirs(const char *path, mode_t mode);

/* Writes p[0..n) to fd whole: again after a short write or EINTR. 0, or -1 with errno (EIO when
   write returned 0). */
int ty_write_all(int fd, const void *p, size_t n);

#endif
