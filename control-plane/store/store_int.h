/*
 * store_int.h - internals shared by the store library's files (store.c, store_*.c, queue.c,
 * session.c, authgen.c) and the generated Lua table; not an API.
 *
 * Owns: the command helpers that run one command (or a pipeline) on a struct store's
 * connection with one reconnect on a broken connection, and the embedded Lua sources.
 * Every reply these helpers return is new: the caller frees it with freeReplyObject().
 */
#ifndef TY_CP_STORE_INT_H
#define TY_CP_STORE_INT_H

#include <jansson.h>
#include <stddef.h>

#include "store.h"
#include "ty_err.h"

struct redisContext;
struct redisReply;

#define STORE_MAX_ARGS      100000
#define STORE_KEY_MAX       1024
#define STORE_TOKEN_MAX     2048
#define STORE_STATUS_PREFIX "ty:idx:job:status:"

/* The scripts of store.c's table (store__eval). */
enum store_sc { SC_JOB_CREATE, SC_JOB_TRANSITION, SC_JOB_DELETE, SC_LOG_APPEND, SC_COUNT };

/*
 * EVALSHA script sc of store.c's table with nkeys keys then the other args (keys first).
 * new: the reply (possibly an error reply), or NULL with err.
 */
struct redisReply *store__eval(struct store *s, enum store_sc sc, int nkeys, int nargs,
                               const char **args, const size_t *lens, struct ty_err *err);

/*
 * How many job-document scripts (create, transition, delete) this process has run to the end,
 * on any connection; read before a read of a document, a change means an in-process write may
 * have landed since (store_jobmemo.c). Thread-safe.
 */
unsigned long long store__job_writes(void);

/* The region and account of store_set_identity (borrowed: valid while s lives). */
const char *store__region(const struct store *s);
const char *store__account(const struct store *s);

/* out = a b [":" c]. 0, or -TY_EINVAL when it does not fit in n. */
int store__key(char *out, size_t n, const char *a, const char *b, const char *c,
               struct ty_err *err);
/* Epoch seconds rounded to milliseconds (timestamps keep ms, and cjson keeps 13 digits). */
double store__ms_round(double t);

/* An argument vector whose strings may be owned (freed by store__args_cleanup). */
struct store_args {
    const char **v;
    size_t *len;
    char **owned; /* per slot: the string to free, or NULL */
    int n, cap;
};
/* Room for cap arguments. 0 or -TY_ENOMEM (then call store__args_cleanup). */
int store__args_init(struct store_args *a, int cap);
/* Frees the owned strings and the vectors; a may be initialised again. */
void store__args_cleanup(struct store_args *a);
/* Adds s (borrowed) or, with own, a malloc'd string (stolen, even on failure). 0 or error. */
int store__args_add(struct store_args *a, const char *s, size_t len, int own);
/* Adds a borrowed C string. */
int store__args_str(struct store_args *a, const char *s);
/* Adds v's compact JSON text (owned). */
int store__args_json(struct store_args *a, const json_t *v);
/* Adds formatted text of at most 63 bytes (owned). */
int store__args_fmt(struct store_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A job hash (HGETALL reply) as a DescribeTrainingJob document. new, or NULL with err. */
json_t *store__doc_from_reply(const struct redisReply *r, struct ty_err *err);

/*
 * new: a connection of its own to s's Redis (AUTH and SELECT done, the command timeout set), for
 * a caller that needs a second one (store_watch.c); the caller frees it with redisFree. NULL
 * with -TY_EREDIS in err when Redis cannot be reached.
 */
struct redisContext *store__dial(struct store *s, struct ty_err *err);

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

/*
 * Runs one command. Returns a new reply (which may be an error reply: the caller checks), or
 * NULL with -TY_EREDIS in err when the connection failed twice. lens may be NULL (C strings).
 * timeout_ms > 0 raises the socket timeout for this call (blocking commands).
 */
struct redisReply *store__cmd(struct store *s, int argc, const char **argv, const size_t *lens,
                              int timeout_ms, struct ty_err *err);

/* SET key to value's compact JSON text with a TTL of ttl_s seconds (>= 1). 0 or -TY_E*. */
int store__set_json_ex(struct store *s, const char *key, const json_t *value, int ttl_s,
                       struct ty_err *err);

#endif
