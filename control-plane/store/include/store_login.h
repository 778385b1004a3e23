/*
 * store_login.h - the Redis side of console passwords (password.h has the rules): login
 * profiles, the failed sign-in counter and the account password policy, each as stored.
 *
 * Owns: the keys
 *   ty:iam:login:<lname>      hash: hash (PASSWORD_SCHEME$<iterations>$<salt hex>$<key
 *                             hex>), uid (the IAM user's id when the profile was made),
 *                             created (epoch s, "%.3f"), reset ("0"/"1")
 *   ty:iam:loginfail:<lname>:<source>  counter of failed sign-ins of the user from one client
 *                             address, with the failure window as its TTL
 *   ty:iam:loginwait:<lname>:<source>  "1" while that address must wait (PX: the delay)
 *   ty:iam:pwpolicy           JSON object: the account password policy (AWS's member names)
 * where <lname> is the user name in lower case. A user name that IAM would refuse
 * ([\w+=,.@-], 1..64) never builds a key: those calls return -TY_EINVAL and touch nothing.
 * Does not own: hashing, checking or the policy's meaning (ops/password.c). Thread-safety:
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
 * deletes the ty:iam:loginfail:<lname> counter of releases that locked the account out. 0,
 * -TY_EINVAL (name), -TY_EREDIS.
 */
int store_login_write(struct store *s, const char *name, const char *hash, const char *uid,
                      double created, int reset, struct ty_err *err);
/* Deletes name's profile: 1, 0 when it had none, -TY_EINVAL (name) or -TY_EREDIS. */
int store_login_delete(struct store *s, const char *name, struct ty_err *err);

/*
 * The sign-in throttle, per user and source (source: the client's address; see
 * password.h for the delays). store_login_wait: OUT: *wait_ms, the milliseconds source
 * must still wait before name's next attempt (0: none). 0, -TY_EINVAL (name), -TY_EREDIS.
 */
int store_login_wait(struct store *s, const char *name, const char *source, long long *wait_ms,
                     struct ty_err *err);
/* Counts one failed sign-in of name from source and restarts that count's window (window_s):
   the count now, or -1 (a name that builds no key, Redis down). */
long long store_login_fail(struct store *s, const char *name, const char *source, int window_s);
/* Makes source wait ms milliseconds before name's next attempt. Best effort. */
void store_login_hold(struct store *s, const char *name, const char *source, long long ms);
/* Clears name's failure count and wait from source. Best effort. */
void store_login_fails_clear(struct store *s, const char *name, const char *source);

#endif
