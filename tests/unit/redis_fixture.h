/*
 * redis_fixture.h - a private redis-server for unit tests.
 *
 * Owns: one redis-server child (no persistence) listening on a free TCP port on 127.0.0.1 and
 * on a unix socket in a fresh temp dir, both removed by redis_fixture_stop. Not thread-safe.
 */
#ifndef TY_TESTS_REDIS_FIXTURE_H
#define TY_TESTS_REDIS_FIXTURE_H

#include <sys/types.h>

struct redisContext;

struct redis_fixture {
    pid_t pid;
    int port;
    char dir[256];
    char sock[320];
    char url_tcp[64];
    char url_unix[340];
};

/* Starts redis-server ($TY_REDIS_SERVER or /usr/bin/redis-server). 0, 77 when it is not
   installed (the test should exit 77), or -1. */
int redis_fixture_start(struct redis_fixture *f);
/* Kills the server (SIGKILL: no clean shutdown) and starts a fresh one on the same port and
   socket. 0 or -1. */
int redis_fixture_restart(struct redis_fixture *f);
/* Stops the server and removes the temp dir. */
void redis_fixture_stop(struct redis_fixture *f);
/* new: a raw hiredis connection over the unix socket (caller frees with redisFree), or NULL. */
struct redisContext *redis_fixture_raw(const struct redis_fixture *f);
/* A free TCP port on 127.0.0.1 that nothing listens on (best effort). */
int redis_fixture_free_port(void);

#endif
