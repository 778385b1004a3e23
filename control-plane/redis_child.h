/*
 * redis_child.h - the private redis-server that trainyard-server starts when no --redis is
 * configured: a child process on a unix socket in the data dir, AOF on, killed with the
 * server (PR_SET_PDEATHSIG) and stopped cleanly on shutdown.
 */
#ifndef TY_CP_REDIS_CHILD_H
#define TY_CP_REDIS_CHILD_H

#include <stddef.h>
#include <sys/types.h>

#include "ty_err.h"

/*
 * Starts redis-server with its files under <data_dir>/redis/ and waits (up to 10 s) until it
 * answers. OUT: url ("unix://<data_dir>/redis/redis.sock"), pid. 0 or -TY_EREDIS with one line.
 */
int redis_child_start(const char *data_dir, char *url, size_t url_n, pid_t *pid,
                      struct ty_err *err);

/* SIGTERM, then waits up to 10 s (SIGKILL after that). pid <= 0 is a no-op. */
void redis_child_stop(pid_t pid);

#endif
