/*
 * store_raw.h - raw Redis commands on a store's connection, for the one library that keeps
 * records of its own beside the store's: the embedded object store (objstore*.c: buckets,
 * objects, multipart uploads). Every other library reaches Redis through the store's typed
 * functions; these three are the exception, named store__ so the style check confines them.
 *
 * Owns: nothing; replies are new (the caller frees them with freeReplyObject).
 * Thread-safety: the store is the caller's per-thread connection.
 */
#ifndef TY_CP_STORE_RAW_H
#define TY_CP_STORE_RAW_H

#include <stddef.h>

#include "store.h"
#include "ty_err.h"

struct redisReply;

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
