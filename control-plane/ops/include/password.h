/*
 * password.h - console passwords of IAM users, as AWS's login profiles: the password hash
 * (a slow KDF with a per-user salt), the account's password policy, and sign-in attempts with
 * a throttle per user and client address after repeated failures (never a lock-out of the
 * account: a stranger's wrong passwords cannot keep the user out).
 *
 * Owns: the rules (the KDF, the policy's checks, the throttle, and known devices). The
 * throttle has three budgets, each counted within PASSWORD_WINDOW_S of its last failure:
 *   - per user and source (an IPv4 address, or an IPv6 address's /64: password_source): from
 *     the PASSWORD_FREE_FAILS-th failure that source waits 1 s, then 2 s, 4 s, ... up to
 *     PASSWORD_WAIT_MAX_S before its next attempt of that user, right password or not;
 *   - per user, every source together: from the PASSWORD_USER_FREE_FAILS-th failure every
 *     source that is not a known device of the user waits likewise, so guessing from many
 *     addresses gains nothing;
 *   - per known device: a browser where the user signed in before holds a device token (a
 *     cookie: an id and an HMAC keyed by the user's password hash, so it dies with a password
 *     change); its attempts skip the other two budgets and have one of their own, so a
 *     stranger on her network (a shared NAT, a lab) cannot keep her out.
 * The keys and their fields are store_login.h's.
 * The password itself is never stored nor logged.
 * Does not own: the IAM query API's wire form (ops/iamapi.c calls these), console sessions
 * (console_auth.c), the IAM users themselves (store_iam.c).
 * Thread-safety: reentrant; the store is the caller's per-thread connection.
 */
#ifndef TY_CP_OPS_PASSWORD_H
#define TY_CP_OPS_PASSWORD_H

#include <jansson.h>
#include <stddef.h>

#include "store.h"
#include "ty_err.h"

#define PASSWORD_SCHEME          "pbkdf2-sha256"
#define PASSWORD_ITERATIONS      310000 /* OWASP's figure for PBKDF2-HMAC-SHA256 (2021) */
#define PASSWORD_SALT            16     /* bytes */
#define PASSWORD_KEY             32     /* bytes */
#define PASSWORD_HASH_MAX        160    /* an encoded hash, with the NUL */
#define PASSWORD_PW_MAX          128    /* IAM's limit on a password's length */
#define PASSWORD_FREE_FAILS      5      /* failed sign-ins (per user and address) before waits */
#define PASSWORD_WINDOW_S        900    /* a failure count's life after its last failure, s */
#define PASSWORD_WAIT_MAX_S      60     /* the longest wait, seconds */
#define PASSWORD_USER_FREE_FAILS 20     /* failed sign-ins of a user, all sources, before waits */
#define PASSWORD_DEVICE_MAX      80     /* a device token, with the NUL */
/* The source of ChangePassword's old-password check (a signed IAM call, not a client address) */
#define PASSWORD_API_SOURCE  "api"
#define PASSWORD_USER_SOURCE "*" /* the per-user budget's source (store_login.h folds it) */

/* The account password policy (GetAccountPasswordPolicy's members). */
struct password_policy {
    int min_length;   /* MinimumPasswordLength, 6..128 */
    int req_symbols;  /* RequireSymbols */
    int req_numbers;  /* RequireNumbers */
    int req_upper;    /* RequireUppercaseCharacters */
    int req_lower;    /* RequireLowercaseCharacters */
    int allow_change; /* AllowUsersToChangePassword */
    int custom;       /* 1 when set by UpdateAccountPasswordPolicy; 0: AWS's default policy */
};

/* AWS's default policy (no custom one): at least 8 characters, and at least three of upper
   case, lower case, digits and symbols. OUT: p. */
void password_policy_default(struct password_policy *p);

/*
 * Checks password against p (the default policy's three-of-four rule when !p->custom). 0, or
 * -TY_EPWPOLICY (IAM's PasswordPolicyViolation) with field "Password" and a message naming
 * the first rule it breaks ("Password
 * should have at least one uppercase letter", IAM's PasswordPolicyViolation wording).
 */
int password_policy_check(const struct password_policy *p, const char *password,
                          struct ty_err *err);

/*
 * Hashes password with a fresh random salt and iterations rounds of PBKDF2-HMAC-SHA256 into
 * OUT: out (n >= PASSWORD_HASH_MAX) as "pbkdf2-sha256$<iter>$<salt hex>$<key hex>".
 * 0, or -TY_EINTERNAL (no randomness, KDF failure), -TY_EINVAL (password too long, n small).
 */
int password_hash(const char *password, int iterations, char *out, size_t n, struct ty_err *err);

/* 1 when password matches encoded (a password_hash result; constant-time compare), 0
   when not or when encoded is malformed. */
int password_verify(const char *password, const char *encoded);

/* The account password policy from the store (the default one when none was set). OUT: p. */
int password_policy_get(struct store *s, struct password_policy *p, struct ty_err *err);
/* Stores p as the account policy (custom = 1). 0 or -TY_EREDIS. */
int password_policy_put(struct store *s, const struct password_policy *p, struct ty_err *err);
/* Removes the custom policy (DeleteAccountPasswordPolicy). 0, -TY_ENOTFOUND, -TY_EREDIS. */
int password_policy_delete(struct store *s, struct ty_err *err);

/*
 * Gives IAM user name (whose id is uid) a login profile with password (checked against the
 * account policy, then hashed). replace: 0 = CreateLoginProfile (-TY_EINUSE when one exists),
 * 1 = UpdateLoginProfile (-TY_ENOTFOUND when none; password NULL keeps the old one). reset:
 * PasswordResetRequired, -1 = keep (update only). Clears the user's failed sign-ins.
 * 0, -TY_EINVAL (policy), -TY_EINUSE, -TY_ENOTFOUND, -TY_EREDIS, -TY_EINTERNAL.
 */
int password_put(struct store *s, const char *name, const char *uid, const char *password,
                 int replace, int reset, double now, struct ty_err *err);

/* The login profile of name (uid: the user's current id). OUT: *created, *reset. 0 or
   -TY_ENOTFOUND (none, or one made for an earlier user of that name). */
int password_get(struct store *s, const char *name, const char *uid, double *created, int *reset,
                 struct ty_err *err);

/* Deletes name's login profile. 0, -TY_ENOTFOUND, -TY_EREDIS. */
int password_delete(struct store *s, const char *name, struct ty_err *err);

/*
 * One sign-in attempt of IAM user name from source (the client's address; borrowed; uid: its
 * current id, "" when no such user: the KDF still runs, so an unknown user takes as long as a
 * wrong password). Returns 0 when the password is right and source need not wait (its
 * failures for name are cleared; OUT: *reset the PasswordResetRequired flag), or -TY_EDENIED
 * with one message for an unknown user, a user without a login profile and a wrong password
 * ("Your authentication information is incorrect. Please try again."), -TY_ETHROTTLE while
 * source must wait ("Too many failed sign-in attempts. Try again in N seconds."; nothing is
 * checked nor counted), -TY_EREDIS.
 */
struct password_try {
    const char *source; /* in: password_source of the client, or PASSWORD_API_SOURCE */
    const char *device; /* in: the device token the client holds, NULL or "" for none */
    int reset;          /* out, on success: PasswordResetRequired */
    long long wait_ms;  /* out, on -TY_ETHROTTLE: how long to wait */
    char device_out[PASSWORD_DEVICE_MAX]; /* out, on success: the client's device token */
};
int password_attempt(struct store *s, const char *name, const char *uid, const char *password,
                     struct password_try *t, struct ty_err *err);

/* The throttle's source of a client address (borrowed text, as http.h's client): an IPv4
   address itself (an IPv4-mapped IPv6 one too), an IPv6 address's /64 ("2001:db8::/64").
   OUT: out (n >= 64; "-" for an unparsable one). */
void password_source(const char *client, char *out, size_t n);

/*
 * ChangePassword of IAM user name (uid: its current id): old_password must be its password
 * (checked as a sign-in attempt from PASSWORD_API_SOURCE: a wrong one counts there),
 * new_password must pass the account policy and differ from the old one. The new password is stored
 * and PasswordResetRequired cleared. 0, -TY_EDENIED (wrong old password), -TY_ETHROTTLE (waiting
 * out), -TY_ENOTFOUND (no login profile), -TY_EPWPOLICY, -TY_EREDIS, -TY_EINTERNAL.
 */
int password_change(struct store *s, const char *name, const char *uid, const char *old_password,
                    const char *new_password, struct ty_err *err);

/* 1 when IAM user name (uid) has a login profile whose PasswordResetRequired is set. */
int password_reset_required(struct store *s, const char *name, const char *uid);

/*
 * --admin-password-file: gives IAM user "admin" (store_iam_bootstrap_admin's) a login profile
 * with the first line of the file at path when it has none yet (a later start keeps the one it
 * has: change it with UpdateLoginProfile). 0 (also when it had one), or -TY_EIO (unreadable
 * file), -TY_EINVAL (empty, or against the password policy: the message says which rule),
 * -TY_ENOTFOUND (no admin user), -TY_EREDIS.
 */
int password_bootstrap(struct store *s, const char *path, struct ty_err *err);

#endif
