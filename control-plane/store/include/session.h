/*
 * session.h - temporary role credentials for training jobs (STS-style sessions) in Redis.
 *
 * Owns: the per-job container token (what a job's container shows the credentials endpoint),
 * the temporary credentials minted from it (AccessKeyId ASIA..., SecretAccessKey, SessionToken,
 * Expiration) and their revocation. Keys (see store.h for the rest of the ty: key space):
 *   ty:jobtoken:<sha256 of the container token>  hash: job, role_arn, expires (epoch s)
 *   ty:session:<ASIA access key id>              hash: secret, token_sha (sha256 of the session
 *                                                token), arn (assumed-role ARN), role_arn, job,
 *                                                expires (epoch s)
 *   ty:jobpol:<session name>                     string: the session policy the credentials
 *                                                of that session are limited by ("" for none)
 *   ty:jobsess:<job>                             set: "tok:<sha256>", "key:<ASIA...>" and
 *                                                "pol:<session name>", all that
 *                                                session_job_revoke deletes
 * Neither the container token nor the session token is stored: only their SHA-256. Every key
 * lives SESSION_GRACE_S past its expiry, so a request with an expired credential is told
 * "expired" (ExpiredToken), not "invalid", for that long.
 * Does not own: SigV4 (sigv4.c), turning a signed request into a principal (auth.c), the HTTP
 * endpoint (route.c serves SESSION_CREDENTIALS_PATH), which role a job has (the agent).
 * Thread-safety: reentrant; each call uses the caller's struct store (one per thread).
 *
 * Contract with the agent (which grants a token when a job starts, revokes it when it ends):
 *   - grant: session_job_grant(store, job, role_arn, policy, ttl_s, token, sizeof token,
 *     &err); ttl_s = the job's MaxRuntimeInSeconds + slack; no credential minted from the token
 *     outlives it. policy: the session policy (as STS AssumeRole's Policy) that every
 *     credential of the job is limited by, on top of the role's own policies (authz.h).
 *   - in the container: AWS_CONTAINER_CREDENTIALS_FULL_URI=http://127.0.0.1:<relay port>
 *     SESSION_CREDENTIALS_PATH, AWS_CONTAINER_AUTHORIZATION_TOKEN=<token> (64 hex digits).
 *   - GET SESSION_CREDENTIALS_PATH with "Authorization: <token>" answers 200
 *       {"AccessKeyId":"ASIA...","SecretAccessKey":"...","Token":"...",
 *        "Expiration":"YYYY-MM-DDTHH:MM:SSZ","RoleArn":"arn:aws:iam::<acct>:role/<name>"}
 *     with credentials valid min(SESSION_CRED_TTL_S, token's remaining life); each GET mints
 *     fresh credentials (botocore refreshes 15 minutes before Expiration). A missing, unknown,
 *     expired or revoked token answers 403 {"code":"AccessDenied","message":"..."}.
 *   - revoke: session_job_revoke(store, job, &err) when the job ends (any way): the token and
 *     every credential minted from it stop working at once.
 */
#ifndef TY_CP_SESSION_H
#define TY_CP_SESSION_H

#include <stddef.h>
#include <time.h>

#include "ty_err.h"

struct store;

/* The container credentials endpoint (GET; the container token in the Authorization header). */
#define SESSION_CREDENTIALS_PATH "/_trainyard/credentials"
/* Size of a container token buffer: 64 hex digits (32 random bytes) and the NUL. */
#define SESSION_TOKEN_LEN 65
/* Lifetime of minted credentials (as SageMaker's role sessions: one hour). */
#define SESSION_CRED_TTL_S 3600
/* Longest container token lifetime session_job_grant accepts (SageMaker's MaxRuntime cap,
   28 days, plus a day of slack). */
#define SESSION_MAX_TTL_S (29 * 24 * 3600)
/* How long an expired token or credential is still recognised (and refused as expired). */
#define SESSION_GRACE_S 3600
/* Longest session policy session_job_grant stores (AWS takes 2,048 characters packed; a
   job's policy names each of its channels and outputs, so more is allowed here). */
#define SESSION_POLICY_MAX 65536
/* Sizes of the minted strings (with the NUL). */
#define SESSION_AKID_LEN   21  /* ASIA + 16 upper-case letters and digits */
#define SESSION_SECRET_LEN 41  /* 40 characters of [A-Za-z0-9+/] */
#define SESSION_STOKEN_LEN 257 /* "IQoJ" + base64 of random bytes, 256 characters */
#define SESSION_ARN_MAX    512

/* One set of temporary credentials, as minted or as looked up (secrets: cleanse after use). */
struct session_creds {
    char access_key[SESSION_AKID_LEN];
    char secret[SESSION_SECRET_LEN];
    char token[SESSION_STOKEN_LEN]; /* the session token; "" when looked up (only its hash is
                                       stored) */
    char token_sha[65];             /* hex SHA-256 of the session token */
    char arn[SESSION_ARN_MAX];      /* arn:aws:sts::<acct>:assumed-role/<role>/<session> */
    char role_arn[SESSION_ARN_MAX]; /* arn:aws:iam::<acct>:role/[<path>/]<role> */
    char session_name[65];          /* the job name, truncated to 64 characters */
    char job[256];                  /* the job the credentials were minted for */
    long long expires;              /* epoch seconds */
};

/*
 * Grants job (a training job name) a new container token for role role_arn, valid ttl_s
 * seconds (1..SESSION_MAX_TTL_S). Writes the token (64 hex digits, 32 bytes from the OS
 * CSPRNG) into OUT: token (n >= SESSION_TOKEN_LEN); only its SHA-256 is stored. A job may hold
 * several tokens (each grant adds one). policy (borrowed; NULL or "" for none, at most
 * SESSION_POLICY_MAX bytes, a policy document iam_policy_parse accepts) becomes the session
 * policy of the job's session name (the job name cut to 64 characters), replacing an earlier
 * grant's. Returns 0, or -TY_EINVAL (bad arguments, err names which), -TY_EREDIS,
 * -TY_EINTERNAL (no randomness).
 */
int session_job_grant(struct store *s, const char *job, const char *role_arn, const char *policy,
                      int ttl_s, char *token, size_t n, struct ty_err *err);

/*
 * The session policy of session_name (the last part of an assumed-role ARN). OUT: *policy
 * (new, the caller frees; "" when the grant named none). Returns 0, -TY_ENOTFOUND (no grant
 * recorded one: the caller denies), -TY_EREDIS, -TY_ENOMEM.
 */
int session_policy_get(struct store *s, const char *session_name, char **policy,
                       struct ty_err *err);

/*
 * Revokes everything of job: its container tokens and every credential minted from them, at
 * once (the keys are deleted). Revoking a job with nothing granted is not an error. Returns 0,
 * -TY_EINVAL, -TY_EREDIS.
 */
int session_job_revoke(struct store *s, const char *job, struct ty_err *err);

/*
 * The credentials endpoint's work: finds the container token token (as the container sent it)
 * and mints fresh credentials for its job's role, valid min(lifetime_s, the token's remaining
 * life) from now; lifetime_s <= 0 means SESSION_CRED_TTL_S. OUT: c (written on success; the
 * caller cleanses it). Returns 0, -TY_EDENIED ("The container authorization token is
 * invalid." for an unknown, revoked or malformed token; "... has expired." for an expired one),
 * -TY_EREDIS, -TY_EINTERNAL. The minting is one Lua script: a token revoked meanwhile mints
 * nothing.
 */
int session_mint(struct store *s, const char *token, int lifetime_s, time_t now,
                 struct session_creds *c, struct ty_err *err);

/*
 * Looks up temporary credentials by access key id (ASIA...). OUT: c (secret, token_sha, arn,
 * role_arn, session_name, job, expires; token is ""), written on success; the caller checks
 * the session token and the expiry (auth.c). Returns 0, -TY_ENOTFOUND (unknown or revoked key),
 * -TY_EREDIS.
 */
int session_get(struct store *s, const char *access_key, struct session_creds *c,
                struct ty_err *err);

/* 1 when access_key has the form of a temporary key (ASIA + 16 upper-case alnum). */
int session_is_temporary_key(const char *access_key);

/* Hex SHA-256 of s into OUT: hex (65 bytes). */
void session_sha256_hex(const char *s, char hex[65]);

/* Formats epoch seconds t as "YYYY-MM-DDTHH:MM:SSZ" (UTC) into OUT: out (>= 21 bytes). */
void session_iso8601(long long t, char *out, size_t n);

#endif
