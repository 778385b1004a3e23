/*
 * auth.h - from a request to a verified principal, the one place every front end (route.c
 * for the JSON services, ops/s3*.c, ops/sts.c, ops/iamapi.c, ops/cloudwatch.c) authenticates:
 * each calls auth_request once and words its errors in its protocol.
 *
 * Owns: which signature version a request carries (SigV4; SigV2 for S3), the order of the
 * checks (credential scope names the server's region and the request's service -> the access
 * key is known: an IAM key (store_principal_get) or temporary credentials (session_get) -> the
 * session token is present and right for temporary credentials, absent for IAM keys -> the
 * temporary credentials have not expired -> the signature and clock (sigv4_verify)), and which
 * service a request is for from its shape (X-Amz-Target, path, Action=/Version=), so that a
 * signature scoped to another service is refused.
 * Does not own: the wire form of the errors (each front end formats them in its protocol's
 * words), parsing the signature (sigv4.c), principals' policies (authz.c).
 * Cache: auth_request keeps verified principals (secret, ARN, session token hash, expiry) in
 * the worker's struct auth_cache, valid while authgen_current() (authgen.h) is unchanged, so an
 * authenticated request in the steady state reads nothing from Redis to authenticate; a key
 * revoked or deleted anywhere is refused within AUTHGEN_POLL_MS. Unknown keys are not cached.
 * Thread-safety: reentrant; uses the caller's per-thread store and cache.
 */
#ifndef TY_CP_AUTH_H
#define TY_CP_AUTH_H

#include <stddef.h>
#include <time.h>

#include "http.h"
#include "session.h"
#include "sigv4.h"
#include "ty_err.h"

struct store;
struct worker;

/* A verified (or looked-up) principal. The secret is cleansed by auth_principal_cleanse. */
struct auth_principal {
    char arn[SESSION_ARN_MAX];      /* IAM user/root ARN, or arn:aws:sts::...:assumed-role/R/S */
    char secret[256];               /* the signing secret */
    int temporary;                  /* 1 for session credentials (ASIA...) */
    char role_arn[SESSION_ARN_MAX]; /* temporary: the role's ARN; "" otherwise */
    char session_name[65];          /* temporary: the role session name (the job's name) */
    char job[256];                  /* temporary: the job the credentials belong to */
};

/* Principals cached per worker thread (auth_request). */
#define AUTH_CACHE_N 32

struct auth_cache_entry {
    char access_key[128];    /* "" when the slot is free */
    char token_sha[65];      /* temporary credentials: the session token's hex SHA-256 */
    long long expires;       /* temporary credentials: epoch seconds */
    unsigned long long gen;  /* authgen_current() before the principal was read */
    unsigned long long used; /* LRU tick */
    struct auth_principal p;
    struct sigv4_key key; /* p.secret's signing key for the last scope seen (sigv4.h) */
};

/* Zero-initialised before use; auth_cache_cleanup wipes the secrets. */
struct auth_cache {
    struct auth_cache_entry e[AUTH_CACHE_N];
    unsigned long long tick;
};

/* Wipes every entry of c (secrets cleansed). c may be NULL. */
void auth_cache_cleanup(struct auth_cache *c);

/*
 * The service a request is for, judged from its shape: "sagemaker" (X-Amz-Target SageMaker.*
 * or a /sagemaker/<Op> path), "logs" (X-Amz-Target Logs_20140328.*), "sts" or "iam" (a query
 * protocol request to "/": Action= with Version=2011-06-15 or 2010-05-08), "monitoring"
 * (CloudWatch: X-Amz-Target GraniteServiceVersion20100801.* or Version=2010-08-01), "s3" (any other
 * path, except the ones below). NULL when the shape does not say: another X-Amz-Target, a
 * POST / without Action= or Version, /healthz, /metrics, /console..., SESSION_CREDENTIALS_PATH.
 * borrowed static string.
 */
const char *auth_service_of(const struct http_request *req);

/* The value of parameter name in a form/query text s[0..n) (the first one; %XX and '+'
   decoded, cut to outn - 1 bytes). 1 when found, 0 otherwise. OUT: out. */
int auth_form_param(const char *s, size_t n, const char *name, char *out, size_t outn);

/*
 * Parses the signature of req: S3's SigV2 (sigv2.c) when allow_v2 and the request carries one,
 * else SigV4 (sigv4_parse). OUT: a (written on success). Returns sigv2_parse's or sigv4_parse's
 * errors. Only the S3 front end allows SigV2, as AWS does.
 */
int auth_parse(const struct sigv4_request *req, int allow_v2, struct sigv4_auth *a,
               struct ty_err *err);

/*
 * 0 when a's credential scope names service; else -TY_EBADSIG with field "service" and AWS's
 * message for the JSON and query services: "Credential should be scoped to correct service:
 * '<service>'. " (S3 words it differently; its front end rewrites it). service NULL: no check.
 * A SigV2 signature has no scope: it passes for "s3" only.
 */
int auth_check_scope(const struct sigv4_auth *a, const char *service, struct ty_err *err);

/*
 * Looks up the principal of a->access_key and checks its session token at time now, without
 * verifying the signature (for callers that need the secret first, such as the chunk-signature
 * key of a streamed S3 body). OUT: p (written on success; cleanse it). Returns 0, or
 *   -TY_ENOTFOUND  unknown, inactive or revoked access key (msg "unknown access key")
 *   -TY_EBADKEY    field "X-Amz-Security-Token": temporary credentials without their session
 *                  token or with another one, or an IAM key sent with a session token ("The
 *                  security token included in the request is invalid.")
 *   -TY_EEXPIREDTOKEN  temporary credentials past their expiry ("The security token included
 *                  in the request is expired")
 *   -TY_EREDIS.
 */
int auth_lookup(struct store *s, const struct sigv4_auth *a, time_t now, struct auth_principal *p,
                struct ty_err *err);

/*
 * The whole check: auth_check_scope(a, service), auth_lookup, then sigv4_verify (sigv2_verify
 * for a SigV2 signature) of req with the principal's secret at time now. OUT: p (written on
 * success; its secret already cleansed). Returns 0 or the errors of those three calls
 * (sigv4_verify's -TY_EBADSIG messages).
 */
int auth_verify(struct store *s, const struct sigv4_request *req, const struct sigv4_auth *a,
                const char *service, time_t now, struct auth_principal *p, struct ty_err *err);

/*
 * 0 when a's credential scope names region exactly (case-sensitive, as AWS compares it), or
 * names AUTH_GLOBAL_REGION when global is set (IAM and STS: AWS's global endpoints are signed
 * for it whatever the deployment's region); a SigV2 signature has no scope and passes. Else
 * -TY_EBADSIG with field "region" and the JSON and query services' message "Credential should
 * be scoped to a valid region. " (S3 words it differently; its front end rewrites it).
 * region NULL: no check.
 */
#define AUTH_GLOBAL_REGION "us-east-1"
int auth_check_region(const struct sigv4_auth *a, const char *region, int global,
                      struct ty_err *err);

/* What a front end asks of auth_request. */
struct auth_in {
    const char *redis_url; /* the worker's connection opens to it on first use */
    const char *service;   /* the scope the signature must name ("s3", "sts", ...); NULL: any */
    int allow_v2;          /* S3: a SigV2 signature is taken */
    int with_body;         /* the body is in req->body and signed (0: S3's streamed bodies) */
    const char *v2_bucket; /* S3: the virtual-hosted bucket a SigV2 signature covers, or NULL */
    const char *region;    /* the one region this server serves (--region): the scope must name
                              it (auth_check_region); NULL only in unit tests */
    int global;            /* IAM, STS: AUTH_GLOBAL_REGION is taken too */
};

/* Which step an auth_request failure came from: the front ends word the two differently. */
enum auth_stage {
    AUTH_STAGE_PARSE = 1, /* no or a malformed signature (auth_parse's errors) */
    AUTH_STAGE_STORE,     /* the thread's Redis connection could not be opened */
    AUTH_STAGE_VERIFY,    /* scope, key, session token, signature or clock (auth_verify's) */
};

/* What auth_request found. sreq borrows from the request. */
struct auth_out {
    struct sigv4_request sreq;
    struct sigv4_auth a;     /* the parsed signature (written once parsed) */
    struct auth_principal p; /* the principal (on success; its secret already cleansed) */
    struct store *store;     /* the worker's connection (borrowed; NULL before it opened) */
    enum auth_stage stage;   /* on failure */
};

/*
 * The one authentication call: parses req's signature (auth_parse; SigV2 when in->allow_v2),
 * opens the worker's Redis connection, then checks the scope's region (auth_check_region, before
 * any key is looked up), then scope, key, session token and signature at
 * time now (auth_verify), with the principal taken from w's cache when it is current. Also
 * writes the principal's ARN into w->principal. OUT: out (always; out->p only on success).
 * Returns 0, or the errors of auth_parse, store_open and auth_verify with out->stage saying
 * which. After -TY_EREDIS the worker's connection is dropped (worker_failed).
 */
int auth_request(struct worker *w, const struct http_request *req, const struct auth_in *in,
                 time_t now, struct auth_out *out, struct ty_err *err);

/*
 * The service named by the credential scope of req's signature (Authorization header or
 * X-Amz-Credential query parameter), without verifying anything. OUT: out (size n, "" when
 * none). Returns 1 when found.
 */
int auth_scope_service(const struct http_request *req, char *out, size_t n);

/* Wipes p's secret. p may be NULL. */
void auth_principal_cleanse(struct auth_principal *p);

/*
 * GetCallerIdentity's UserId for a principal: for temporary credentials "<RoleId>:<session>",
 * with the role's AROA id from the store when the role exists, else a stable AROA id derived
 * from the role ARN; for others "" (the caller uses the IAM user id or the access key).
 * OUT: out (size n).
 */
void auth_user_id(struct store *s, const struct auth_principal *p, char *out, size_t n);

#endif
