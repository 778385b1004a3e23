/*
 * store_login.h - the Redis side of console passwords (console_login.h has the rules): login
 * profiles, the failed sign-in counter and the account password policy, each as stored.
 *
 * Owns: the keys
 *   ty:iam:login:<lname>      hash: hash (CONSOLE_LOGIN_SCHEME$<iterations>$<salt hex>$<key
 *                             hex>), uid (the IAM user's id when the profile was made),
 *                             created (epoch s, "%.3f"), reset ("0"/"1")
 *   ty:iam:loginfail:<lname>  counter of failed sign-ins, with the lock-out window as its TTL
 *   ty:iam:pwpolicy           JSON object: the account password policy (AWS's member names)
 * where <lname> is the user name in lower case. A user name that IAM would refuse
 * ([\w+=,.@-], 1..64) never builds a key: those calls return -TY_EINVAL and touch nothing.
 * Does not own: hashing, checking or the policy's meaning (console_login.c). Thread-safety:
 * reentrant; the store is the caller's per-thread connection.
 */
#ifndef TY_CP_STORE_LOGIN_H
#define TY_CP_STORE_LOGIN_H

#include <stddef.h>

#include "store.h"
#include "ty_err.h"

/* The policy document. OUT: *text (caller frees; NULL when none is stored). 0 or -TY_EREDIS. */
int store_login_policy_get(struct store *s, char **text, struct ty_err *err);
/* Stores text as the policy document. 0 or -TY_EREDIS. */
int store_login_policy_set(struct store *s, const char *text, struct ty_err *err);
/* Deletes the policy document: 1, 0 when there was none, or -TY_EREDIS. */
int store_login_policy_delete(struct store *s, struct ty_err *err);

/*
 * Reads name's profile. OUT: hash (size hn; skipped when NULL), uid (size un), *created,
 * *reset. 0, -TY_ENOTFOUND (no profile), -TY_EINVAL (a name that builds no key), -TY_EREDIS.
 */
int store_login_read(struct store *s, const char *name, char *hash, size_t hn, char *uid, size_t un,
                     double *created, int *reset, struct ty_err *err);
/*
 * Writes name's profile: hash, uid and created when hash is not NULL, reset always, then
 * clears its failure counter. 0, -TY_EINVAL (name), -TY_EREDIS.
 */
int store_login_write(struct store *s, const char *name, const char *hash, const char *uid,
                      double created, int reset, struct ty_err *err);
/* Deletes name's profile: 1, 0 when it had none, -TY_EINVAL (name) or -TY_EREDIS. */
int store_login_delete(struct store *s, const char *name, struct ty_err *err);

/* name's failed sign-ins in the current window. OUT: *fails. 0, -TY_EINVAL (name), -TY_EREDIS. */
int store_login_fails(struct store *s, const char *name, long long *fails, struct ty_err *err);
/*
 * The seconds left in name's failure window (Redis's TTL). OUT: *left, left as it is when
 * Redis answers something other than an integer. 0, -TY_EINVAL (name), -TY_EREDIS.
 */
int store_login_fails_left(struct store *s, const char *name, long long *left, struct ty_err *err);
/* Counts one failed sign-in of name and restarts its window (window_s). Best effort. */
void store_login_fail(struct store *s, const char *name, int window_s);
/* Clears name's failure counter. Best effort. */
void store_login_fails_clear(struct store *s, const char *name);

#endif
