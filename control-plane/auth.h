/*
 * auth.h - from a parsed SigV4 signature to a verified principal, the one place every front
 * end (route.c for the JSON services, ops/s3.c, ops/sts.c, ops/iamapi.c) authenticates.
 *
 * Owns: which signature version a request carries (SigV4; SigV2 for S3), the order of the
 * checks (credential scope names the request's service -> the access
 * key is known: an IAM key (store_principal_get) or temporary credentials (session_get) -> the
 * session token is present and right for temporary credentials, absent for IAM keys -> the
 * temporary credentials have not expired -> the signature and clock (sigv4_verify)), and which
 * service a request is for from its shape (X-Amz-Target, path, Action=/Version=), so that a
 * signature scoped to another service is refused.
 * Does not own: the wire form of the errors (each front end formats them in its protocol's
 * words), parsing the signature (sigv4.c), principals' policies (authz.c).
 * Thread-safety: reentrant; uses the caller's per-thread store.
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

/* A verified (or looked-up) principal. The secret is cleansed by auth_principal_cleanse. */
struct auth_principal {
    char arn[SESSION_ARN_MAX];      /* IAM user/root ARN, or arn:aws:sts::...:assumed-role/R/S */
    char secret[256];               /* the signing secret */
    int temporary;                  /* 1 for session credentials (ASIA...) */
    char role_arn[SESSION_ARN_MAX]; /* temporary: the role's ARN; "" otherwise */
    char session_name[65];          /* temporary: the role session name (the job's name) */
    char job[256];                  /* temporary: the job the credentials belong to */
};

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
