/*
 * store_script.h - Lua scripts run on a store's connection by EVALSHA: loaded with SCRIPT LOAD
 * on first use and again after a NOSCRIPT reply (a restarted or flushed Redis), so a caller
 * never sends a script's source twice in the steady state.
 *
 * Owns: the call and its one reload. Does not own the scripts (each module keeps its own
 * table of struct store_script, pointing at the sources store.cmake compiles in) or their
 * replies (the caller maps them). Thread-safe: a script's cached SHA is guarded by one lock;
 * the connection is the caller's (one struct store per thread).
 */
#ifndef TY_CP_STORE_SCRIPT_H
#define TY_CP_STORE_SCRIPT_H

#include <stddef.h>

#include "store.h"
#include "ty_err.h"

struct redisReply;

/* One script: its source (borrowed, static) and the SHA cached after the first load. */
struct store_script {
    const char *src;  /* NUL-terminated Lua source */
    const char *name; /* for messages: "job_create.lua" */
    char sha[41];     /* "" until loaded; written under the module's lock */
};

#define STORE_SCRIPT_INIT(src, name)                                                               \
    {                                                                                              \
        (src), (name), ""                                                                          \
    }

/* The most arguments (keys and args together) one call takes. */
#define STORE_SCRIPT_MAX_ARGS 100000

/* Loads sc now (SCRIPT LOAD), so that a Redis without Lua fails at open. 0 or -TY_EREDIS. */
int store_script_load(struct store *s, struct store_script *sc, struct ty_err *err);

/*
 * EVALSHA sc with nkeys keys followed by the other arguments (argv[0..nargs): keys first;
 * lens may be NULL for C strings). Loads the script when its SHA is unknown and once more after
 * NOSCRIPT. Returns a new reply (possibly an error reply: the caller checks), or NULL with err
 * (-TY_EINVAL for bad counts, -TY_ENOMEM, -TY_EREDIS).
 */
struct redisReply *store_script_eval(struct store *s, struct store_script *sc, int nkeys, int nargs,
                                     const char *const *argv, const size_t *lens,
                                     struct ty_err *err);

#endif
