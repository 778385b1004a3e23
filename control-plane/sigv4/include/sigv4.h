/*
 * sigv4.h - AWS Signature Version 4 verification (Authorization header and presigned query).
 *
 * Owns: parsing the Authorization header / X-Amz-* query parameters into a struct sigv4_auth,
 * building the canonical request and string to sign, deriving the signing key (HMAC-SHA256 from
 * OpenSSL) and comparing signatures in constant time, the clock-skew check (15 minutes) and the
 * presigned X-Amz-Expires check. Does not own principals: the caller looks up the secret for
 * auth->access_key and passes it in (auth.c does, and checks auth->session_token and the scope's
 * service there). Pure functions; thread-safe.
 */
#ifndef TY_CP_SIGV4_H
#define TY_CP_SIGV4_H

#include <stddef.h>
#include <time.h>

#include "ty_buf.h"
#include "ty_err.h"
#include "ty_kv.h"

/* Largest clock skew accepted for the header form, and largest presigned X-Amz-Expires. */
#define SIGV4_MAX_SKEW_S    900
#define SIGV4_MAX_EXPIRES_S 604800

struct sigv4_request {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* raw path as received, without the query, percent-encoding kept */
    const char *query;  /* raw query string without '?', or NULL/"" */
    const struct ty_kv *headers;
    size_t nheaders;
    const void *body; /* the payload, used when x-amz-content-sha256 is absent */
    size_t body_len;
};

struct sigv4_auth {
    char access_key[128];
    char date[9];      /* YYYYMMDD of the credential scope */
    char region[64];   /* region of the credential scope */
    char service[64];  /* service of the credential scope: sagemaker, logs, s3, sts, iam */
    char amz_date[17]; /* X-Amz-Date, YYYYMMDD'T'HHMMSS'Z' */
    char signed_headers[1024];
    char signature[65];
    long expires;             /* presigned X-Amz-Expires, 0 for the header form */
    int presigned;            /* 1 when the signature came from the query string */
    char session_token[2048]; /* X-Amz-Security-Token, "" when none */
    /* S3 SigV2 (sigv2.c): signature is base64, expires is the query form's Expires (seconds
       since the epoch), date/region/amz_date/signed_headers stay "" */
    int sigv2;
    char v2_bucket[64]; /* virtual-hosted bucket, put before the path in the resource; "" */
};

/*
 * Finds and parses the signature of a request (Authorization header first, then the presigned
 * query parameters) into OUT: auth (written only on success). The request time comes from
 * X-Amz-Date, else from an HTTP Date header. Returns 0, or -TY_ENOAUTH ("Missing Authentication
 * Token") when the request carries no signature at all; -TY_EINVAL with AWS's
 * IncompleteSignature wording and err->field naming the parameter for a malformed one;
 * -TY_EBADSIG for a signature that is not 64 hex digits or a scope date that is not the request's;
 * -TY_EBADKEY for an access key longer than auth->access_key holds.
 */
int sigv4_parse(const struct sigv4_request *req, struct sigv4_auth *auth, struct ty_err *err);

/*
 * Verifies a parsed signature with the principal's secret key at time now. Returns 0, or
 * -TY_EBADSIG with AWS's message ("The request signature we calculated does not match the
 * signature you provided. ...", "Signature expired: ... is now earlier than ..." for a skew over
 * 15 minutes, "Signature not yet current: ..." for a date more than 15 minutes ahead, "Request
 * has expired" for a presigned URL past X-Amz-Expires). When req->body is not NULL and
 * x-amz-content-sha256 holds a SHA-256, it must be the body's ("The provided
 * 'x-amz-content-sha256' header does not match what was computed."); with a NULL body (a body
 * streamed later) the signed header is trusted. -TY_EINVAL for bad arguments, -TY_ETOOBIG when
 * the canonical request would exceed 256 KiB.
 */
int sigv4_verify(const struct sigv4_request *req, const struct sigv4_auth *auth,
                 const char *secret_key, time_t now, struct ty_err *err);

/*
 * A signing key derived from one secret for one scope (date, region, service), kept by the caller
 * beside that secret (auth.c keeps one per cached principal) so that a request in a scope seen
 * before costs one HMAC instead of five. Zero-initialised = empty. Holds key material: the owner
 * cleanses it (OPENSSL_cleanse) with the secret.
 */
struct sigv4_key {
    char date[9];
    char region[64];
    char service[64];
    unsigned char key[32];
};

/*
 * sigv4_verify with the signing key taken from kc when it holds auth's scope, else derived and
 * stored into kc (IN/OUT; NULL: derived every time). kc must only ever be used with the same
 * secret_key. Same results and errors as sigv4_verify.
 */
int sigv4_verify_key(const struct sigv4_request *req, const struct sigv4_auth *auth,
                     const char *secret_key, struct sigv4_key *kc, time_t now, struct ty_err *err);

/*
 * Signs a request as a client would (used by tests, benchmarks and the agent's own calls):
 * writes the value of the Authorization header into OUT: out (size n) for the given headers,
 * which must already include host and x-amz-date; every header in req is signed. The payload
 * hash is x-amz-content-sha256 when that header is present, else the SHA-256 of the body.
 * Returns 0 or -TY_EINVAL.
 */
int sigv4_sign(const struct sigv4_request *req, const char *access_key, const char *secret_key,
               const char *region, const char *service, const char *amz_date, char *out, size_t n);

/*
 * Writes the canonical request of req as auth describes it (the text whose SHA-256 is signed)
 * into OUT: out, which is reset first; for logs and for S3's SignatureDoesNotMatch details. The
 * URI is normalised and encoded twice unless auth->service is "s3", where it is encoded once and
 * not normalised. Returns 0, or -TY_EINVAL, -TY_ETOOBIG, -TY_ENOMEM (err says which).
 */
int sigv4_canonical_request(const struct sigv4_request *req, const struct sigv4_auth *auth,
                            struct ty_buf *out, struct ty_err *err);

/*
 * Presigns a request as a client would: writes into OUT: out (size n) the query string to send,
 * req->query (if any) followed by the X-Amz-* parameters and X-Amz-Signature. Every header in
 * req is signed, and it must include host. session_token may be NULL. expires is X-Amz-Expires
 * in seconds (0..SIGV4_MAX_EXPIRES_S). Returns 0 or -TY_EINVAL.
 */
int sigv4_presign(const struct sigv4_request *req, const char *access_key, const char *secret_key,
                  const char *session_token, const char *region, const char *service,
                  const char *amz_date, long expires, char *out, size_t n);

#endif
