/*
 * store_int.h - internals shared by store.c, queue.c and the generated Lua table; not an API.
 *
 * Owns: the command helpers that run one command (or a pipeline) on a struct store's
 * connection with one reconnect on a broken connection, and the embedded Lua sources.
 * Every reply these helpers return is new: the caller frees it with freeReplyObject().
 */
#ifndef TY_CP_STORE_INT_H
#define TY_CP_STORE_INT_H

#include <stddef.h>

#include "store.h"
#include "ty_err.h"

struct redisReply;

/* Lua sources compiled in by store.cmake (NUL-terminated). */
extern const char store__lua_job_create[];
extern const char store__lua_job_transition[];
extern const char store__lua_job_delete[];
extern const char store__lua_log_append[];

/*
 * Runs one command. Returns a new reply (which may be an error reply: the caller checks), or
 * NULL with -TY_EREDIS in err when the connection failed twice. lens may be NULL (C strings).
 * timeout_ms > 0 raises the socket timeout for this call (blocking commands).
 */
struct redisReply *store__cmd(struct store *s, int argc, const char **argv, const size_t *lens,
                              int timeout_ms, struct ty_err *err);

/* As store__cmd for a list of at most 32 C strings terminated by NULL. */
struct redisReply *store__cmdv(struct store *s, struct ty_err *err, const char *arg0, ...)
    __attribute__((sentinel));

/*
 * Runs n commands in one pipeline (cmds[i] is argc[i] C strings). OUT: replies[i] (new each)
 * on success. 0 or -TY_EREDIS; on failure nothing is left in replies.
 */
int store__pipeline(struct store *s, size_t n, const int *argc, const char *const *const *argv,
                    struct redisReply **replies, struct ty_err *err);

/* Sets err from an error reply or an unexpected reply type; returns -TY_EREDIS. */
int store__reply_err(const struct redisReply *r, const char *what, struct ty_err *err);

#endif
