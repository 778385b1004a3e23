/*
 * store_res.h - Studio resources in Redis: domains, user profiles, apps (generic documents with
 * a status machine, a creation-time index and parent/child links), and the console's one-time
 * tokens and sessions.
 *
 * Owns: the keys
 *   ty:res:<kind>:<id>          hash: id, doc (JSON text), status, since, created, modified,
 *                               idx, pkids, kids, keep, ver (see control-plane/store/lua/res.lua)
 *   ty:idx:res:<kind>           sorted set of resource keys scored by creation time
 *   ty:kids:<kind>:<id>         set of the resource keys of its children
 *   ty:console:token:<sha256>   one-time token (JSON), TTL = its lifetime, taken with GETDEL
 *   ty:console:session:<sha256> session (JSON), TTL = the session's lifetime
 *   ty:console:sessions:<scope> set of the session keys of one scope, for revocation
 * Tokens and session ids are stored only as their SHA-256, so a Redis dump holds no usable one.
 * Does not own: the documents' content (ops/studio.c) nor any wire form.
 * Invariants: every write goes through the one script res.lua (create-if-absent, compare-and-set,
 * parent/child checks, time-driven transitions applied lazily on every access). Ids never
 * contain ':' (the callers pass validated names).
 * Thread-safety: as store.h (one struct store per thread).
 */
#ifndef TY_CP_STORE_RES_H
#define TY_CP_STORE_RES_H

#include <jansson.h>
#include <stddef.h>

#include "store.h"
#include "ty_err.h"

/* Delays of the time-driven transitions, in seconds. */
struct store_res_timing {
    double pending_s;  /* Pending/Updating -> InService */
    double deleting_s; /* Deleting -> Deleted (or gone) */
};

struct store_res_new {
    const char *kind;           /* "domain", "user-profile", "app" */
    const char *id;             /* no ':' */
    const char *parent_kind;    /* NULL for a top-level resource */
    const char *parent_id;      /* NULL for a top-level resource */
    json_t *doc;                /* borrowed: the document (an object) */
    const char *status;         /* initial status, e.g. "Pending" */
    double keep_s;              /* seconds a Deleted resource stays listed (0 = removed) */
    const char *replaceable;    /* comma list: statuses an existing one may be replaced in */
    const char *parent_blocked; /* comma list: parent statuses that refuse new children */
    const char *tags_arn;       /* its tags (ty:tags:<arn>) go when it goes; NULL = none */
};

/*
 * Records returned by these functions are new JSON objects (caller decrefs): the document with
 * "Status" and "LastModifiedTime" (epoch seconds) set from the record, plus bookkeeping members
 * "_id", "_ver" (integer) and "_since" (epoch seconds of the current status), which callers
 * strip before answering.
 */

/*
 * Creates n atomically. Returns the record, or NULL with: -TY_EINUSE (a resource with this id
 * exists; err->msg = its status), -TY_ENOTFOUND (the parent does not exist; msg = "parent"),
 * -TY_ECONFLICT (the parent's status is in n->parent_blocked; msg = that status), -TY_EINVAL.
 */
json_t *store_res_create(struct store *s, const struct store_res_new *n, double now,
                         const struct store_res_timing *t, struct ty_err *err);

/* The record of kind/id, or NULL with -TY_ENOTFOUND. */
json_t *store_res_get(struct store *s, const char *kind, const char *id, double now,
                      const struct store_res_timing *t, struct ty_err *err);

/*
 * Every live record of kind (parent_kind/parent_id NULL) or every child of kind under that
 * parent, in creation order. new: array (empty when none), or NULL with err.
 */
json_t *store_res_list(struct store *s, const char *kind, const char *parent_kind,
                       const char *parent_id, double now, const struct store_res_timing *t,
                       struct ty_err *err);

struct store_res_update {
    const char *expect; /* comma list of statuses it must be in, NULL = any */
    const char *status; /* new status, NULL = keep */
    json_t *doc;        /* borrowed: the new document, NULL = keep */
    long long ver;      /* the _ver it must still have, < 0 = any */
};

/*
 * Applies u to kind/id atomically. Returns the new record, or NULL with -TY_ENOTFOUND,
 * -TY_ECONFLICT (status not in expect; msg = the status; or msg = "stale" when ver changed).
 */
json_t *store_res_update(struct store *s, const char *kind, const char *id,
                         const struct store_res_update *u, double now,
                         const struct store_res_timing *t, struct ty_err *err);

/*
 * Deletes kind/id when it has no child whose status is outside kids_ignore (comma list, NULL =
 * every child counts): with status NULL it is removed at once, otherwise it moves to status
 * (e.g. "Deleting") and goes away through the time-driven transitions. expect: comma list of
 * statuses it must be in (NULL = any). 0, -TY_ENOTFOUND, -TY_ECONFLICT (msg = its status) or
 * -TY_EINUSE (msg = the number of live children).
 */
int store_res_delete(struct store *s, const char *kind, const char *id, const char *expect,
                     const char *kids_ignore, const char *status, double now,
                     const struct store_res_timing *t, struct ty_err *err);

/* Next value of a named counter (ty:res:counter:<name>), starting at 1. 0 or error. */
int store_res_counter(struct store *s, const char *name, long long *out, struct ty_err *err);

/* ---- console tokens and sessions ---- */

/* Stores value (borrowed object) under the one-time token for ttl_s seconds (>= 1). */
int store_res_token_put(struct store *s, const char *token, json_t *value, int ttl_s,
                        struct ty_err *err);
/* Takes the token's value (new) and deletes the token, atomically; NULL with -TY_ENOTFOUND when
   it was never issued, was used or has expired. */
json_t *store_res_token_take(struct store *s, const char *token, struct ty_err *err);

/* Stores session sid with value (borrowed object) for ttl_s seconds under scope (revocable). */
int store_res_session_put(struct store *s, const char *sid, const char *scope, json_t *value,
                          int ttl_s, struct ty_err *err);
/* new: the session's value, or NULL with -TY_ENOTFOUND (unknown, expired or revoked). */
json_t *store_res_session_get(struct store *s, const char *sid, struct ty_err *err);
/* Ends session sid (sign-out). 0 (also when it was gone already) or -TY_EREDIS. */
int store_res_session_end(struct store *s, const char *sid, struct ty_err *err);
/* Ends every session of scope. OUT: *n (may be NULL) how many were live. 0 or error. */
int store_res_session_revoke(struct store *s, const char *scope, long long *n, struct ty_err *err);

#endif
