/*
 * ty_proc.h - running a system tool (iptables, mkfs.ext4) and waiting for it: found in the
 * system's sbin and bin folders (never through $PATH), started with posix_spawn (no shell),
 * its stdout and stderr captured together for the error message.
 *
 * Thread-safe; the child inherits only the descriptors not marked close-on-exec.
 */
#ifndef TY_CORE_TY_PROC_H
#define TY_CORE_TY_PROC_H

#include <stddef.h>

/* The path of tool ("iptables") under /usr/sbin, /sbin, /usr/bin or /bin, or NULL when it is
   not installed. OUT: buf (size n); returns buf or NULL. */
const char *ty_proc_find(const char *tool, char *buf, size_t n);

/*
 * Runs argv (argv[0] a path, NULL-terminated) and waits for it. Returns its exit status (0
 * ok), or -1 when it could not run or died of a signal. OUT: out (size n, may be NULL): its
 * output, newlines as spaces, truncated, NUL-terminated.
 */
int ty_proc_run(const char *const *argv, char *out, size_t n);

#endif
