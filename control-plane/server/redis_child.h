/*
 * redis_child.h - the private redis-server that trainyard-server starts when no --redis is
 * configured: a child process on a unix socket in the data dir, AOF on, killed with the
 * server (PR_SET_PDEATHSIG), restarted (same dir, AOF and socket, with backoff) whenever it
 * dies, and stopped cleanly on shutdown.
 */
#ifndef TY_CP_REDIS_CHILD_H
#define TY_CP_REDIS_CHILD_H

#include <stddef.h>
#include <sys/types.h>

#include "ty_err.h"

struct redis_child;

/*
 * Starts redis-server with its files under <data_dir>/redis/ and waits (up to 10 s) until it
 * answers, then supervises it from a thread of its own: when it dies it is started again
 * after a backoff (0.5 s doubling to 30 s, back to 0.5 s once it ran for a minute), each
 * death and restart logged (redis.died, redis.restarted). OUT: url
 * ("unix://<data_dir>/redis/redis.sock"). new: stop and free with redis_child_stop(); NULL
 * and err (TY_EREDIS, one line) on failure.
 */
struct redis_child *redis_child_start(const char *data_dir, char *url, size_t url_n,
                                      struct ty_err *err);

/* The pid of the redis-server running now, 0 while it is being restarted. */
pid_t redis_child_pid(struct redis_child *rc);

/* How many times it was restarted since redis_child_start. */
int redis_child_restarts(struct redis_child *rc);

/* Ends the supervision, then SIGTERM and waits up to 10 s (SIGKILL after that); frees rc.
   NULL is a no-op. */
void redis_child_stop(struct redis_child *rc);

#endif
