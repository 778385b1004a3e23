/*
 * ty_fs.h - file-system helpers shared by the server, the object store and the agent.
 *
 * Owns: nothing beyond the call. Thread-safe (no shared state).
 */
#ifndef TY_CORE_TY_FS_H
#define TY_CORE_TY_FS_H

#include <sys/types.h>

/*
 * `mkdir -p path` with mode for each folder it creates (existing ones are left as they are).
 * Returns 0, or -errno of the first mkdir that failed (-ENAMETOOLONG past PATH_MAX).
 */
int ty_mkdirs(const char *path, mode_t mode);

#endif
