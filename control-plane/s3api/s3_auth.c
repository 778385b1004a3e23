/*
 * s3_auth.c - S3's authentication glue: each request's one auth_request call (auth.h) with
 * S3's words for every failure (SigV2 and SigV4, header and presigned), the IAM action and
 * resource of a request, which requests are S3's, and the prepare hook that streams an
 * upload's body to a temp file once its signature is known good (s3_prepare).
 */
#include "s3.h"

#include "auth.h"
#include "authz.h"
#include "objstore.h"
#include "s3_int.h"
#include "sigv2.h"
#include "sigv4.h"
#include "store.h"
#include "ty_buf.h"
#include "ty_log.h"
#include "ty_xml.h"
#include "worker.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ---- thread state and auth ----------------------------------------------------------------- */

#define S3_SWEEP_EVERY_S 600
static long long s3_sweep_last; /* epoch s of the last sweep (atomic), 0 before the first */

/*
 * What crashes left in the store (temp files, part folders no upload owns: objstore.h,
 * objstore_sweep_orphans) goes while the server runs: at the first S3 request, then every
 * S3_SWEEP_EVERY_S by whichever worker claims the turn, for things older than
 * --s3-orphan-age (an upload in flight touches its file at least every --idle-timeout).
 */
static void s3_sweep_maybe(struct objstore *os, const struct front_ctx *rc)
{
    long long now = (long long)time(NULL), last = __atomic_load_n(&s3_sweep_last, __ATOMIC_ACQUIRE);

    if (!os || (last && now - last < S3_SWEEP_EVERY_S) ||
        !__atomic_compare_exchange_n(&s3_sweep_last, &last, now, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    objstore_sweep_orphans(os, rc->s3_orphan_age_s > 0 ? rc->s3_orphan_age_s : 3600);
}

/* The worker's object store handle (worker.h), opened on first use. NULL with err. */
static struct objstore *s3_thread_os(const struct front_ctx *rc, struct ty_err *err)
{
    struct worker *w = worker_self();
    struct objstore *os;

    worker_at_exit(w, s3_proxy_thread_end);
    os = worker_objstore(w, rc->redis_url, rc->s3_dir, err);
    s3_sweep_maybe(os, rc);
    return os;
}

static void s3_fill_sreq(const struct http_request *req, struct sigv4_request *sreq, int with_body)
{
    memset(sreq, 0, sizeof(*sreq));
    sreq->method = req->method;
    sreq->path = req->path;
    sreq->query = req->query;
    sreq->headers = req->headers;
    sreq->nheaders = req->nheaders;
    if (with_body) {
        sreq->body = req->body.data ? req->body.data : "";
        sreq->body_len = req->body.len;
    }
}

static int s3_hmac(const unsigned char *key, size_t kl, const char *msg, unsigned char *out)
{
    unsigned int ol = 0;
    return HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg, strlen(msg), out, &ol) ? 0
                                                                                               : -1;
}

/* The SigV4 signing key for auth's scope. OUT: key (32 bytes). */
static int s3_signing_key(const struct sigv4_auth *auth, const char *secret, unsigned char *key)
{
    char k0[300];
    unsigned char a[32], b[32];
    int w = snprintf(k0, sizeof(k0), "AWS4%s", secret);

    if (w < 0 || (size_t)w >= sizeof(k0))
        return -1;
    if (s3_hmac((unsigned char *)k0, (size_t)w, auth->date, a) || s3_hmac(a, 32, auth->region, b) ||
        s3_hmac(b, 32, auth->service, a) || s3_hmac(a, 32, "aws4_request", key))
        return -1;
    OPENSSL_cleanse(k0, sizeof(k0));
    return 0;
}

/* SignatureDoesNotMatch with what S3 adds to it: the string to sign (and, for SigV4, the
   canonical request) the server computed. */
static void s3_sig_mismatch(struct http_request *req, struct http_response *resp,
                            const struct s3_req *r, const struct sigv4_request *sreq,
                            const struct sigv4_auth *auth)
{
    struct ty_buf cr, sts;
    struct ty_err e2;
    unsigned char md[32];
    unsigned int ml = 0;
    char hex[65] = "";
    static const char msg[] = "The request signature we calculated does not match the signature "
                              "you provided. Check your key and signing method.";

    ty_buf_init(&cr, 256 * 1024);
    ty_buf_init(&sts, 64 * 1024);
    ty_err_clear(&e2);
    if (auth->sigv2) {
        sigv2_string_to_sign(sreq, auth, &sts, &e2);
        struct s3_errx x = {{"AWSAccessKeyId", "StringToSign", "SignatureProvided"},
                            {auth->access_key, sts.data ? sts.data : "", auth->signature},
                            3};
        s3__error(req, resp, "SignatureDoesNotMatch", msg, r, &x);
    } else {
        if (sigv4_canonical_request(sreq, auth, &cr, &e2) == 0 && cr.data &&
            EVP_Digest(cr.data, cr.len, md, &ml, EVP_sha256(), NULL) == 1) {
            static const char hx[] = "0123456789abcdef";
            for (int i = 0; i < 32; i++) {
                hex[2 * i] = hx[md[i] >> 4];
                hex[2 * i + 1] = hx[md[i] & 15];
            }
            hex[64] = '\0';
        }
        ty_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", auth->amz_date,
                      auth->date, auth->region, auth->service, hex);
        struct s3_errx x = {
            {"AWSAccessKeyId", "StringToSign", "SignatureProvided", "CanonicalRequest"},
            {auth->access_key, sts.data ? sts.data : "", auth->signature, cr.data ? cr.data : ""},
            4};
        s3__error(req, resp, "SignatureDoesNotMatch", msg, r, &x);
    }
    ty_buf_cleanup(&cr);
    ty_buf_cleanup(&sts);
}

/* S3's words for a signature that does not parse (auth_request at AUTH_STAGE_PARSE). */
static void s3_parse_error(struct http_request *req, struct http_response *resp,
                           const struct s3_req *r, const struct sigv4_request *sreq,
                           const struct ty_err *err)
{
    if (err->code == TY_EINVAL && sigv2_detect(sreq))
        /* SigV2: a malformed header is 400 InvalidArgument, a query 403 AccessDenied */
        s3__error(req, resp,
                  strcmp(err->field, "Authorization") == 0 ? "InvalidArgument" : "AccessDenied",
                  err->msg, r, NULL);
    else if (err->code == TY_ENOAUTH)
        s3__error(req, resp, "AccessDenied", "Access Denied", r, NULL);
    else if (err->code == TY_EBADKEY)
        s3__error(req, resp, "InvalidAccessKeyId",
                  "The AWS Access Key Id you provided does not exist in our records.", r, NULL);
    else
        s3__error(req, resp,
                  http_header(req, "Authorization") ? "AuthorizationHeaderMalformed"
                                                    : "AuthorizationQueryParametersError",
                  err->msg, r, NULL);
}

/* S3's words for a signature that does not verify (auth_request at AUTH_STAGE_VERIFY). */
static void s3_verify_error(struct http_request *req, struct http_response *resp,
                            const struct s3_req *r, const struct auth_out *ao,
                            const struct ty_err *err, const char *served)
{
    const struct sigv4_auth *auth = &ao->a;

    if (err->code == TY_EBADSIG && strcmp(err->field, "region") == 0) {
        /* AWS's words, and the region expected in a <Region> element */
        struct s3_errx x = {{"Region"}, {served}, 1};
        char msg[256];
        int hdr = !auth->presigned;
        snprintf(msg, sizeof(msg), "%s; the region '%.64s' is wrong; expecting '%.64s'",
                 hdr ? "The authorization header is malformed"
                     : "Error parsing the X-Amz-Credential parameter",
                 auth->region, served);
        s3__error(req, resp,
                  hdr ? "AuthorizationHeaderMalformed" : "AuthorizationQueryParametersError", msg,
                  r, &x);
    } else if (err->code == TY_EBADSIG && strcmp(err->field, "service") == 0) {
        char msg[256];
        int hdr = !auth->presigned;
        snprintf(msg, sizeof(msg),
                 "%s; incorrect service \"%.64s\". This endpoint belongs to \"s3\".",
                 hdr ? "The authorization header is malformed"
                     : "Error parsing the X-Amz-Credential parameter",
                 auth->service);
        s3__error(req, resp,
                  hdr ? "AuthorizationHeaderMalformed" : "AuthorizationQueryParametersError", msg,
                  r, NULL);
    } else if (err->code == TY_ENOTFOUND) {
        struct s3_errx x = {{"AWSAccessKeyId"}, {auth->access_key}, 1};
        s3__error(req, resp, "InvalidAccessKeyId",
                  "The AWS Access Key Id you provided does not exist in our records.", r, &x);
    } else if (err->code == TY_EBADKEY) {
        s3__error(req, resp, "InvalidToken",
                  "The provided token is malformed or otherwise invalid.", r, NULL);
    } else if (err->code == TY_EEXPIREDTOKEN) {
        s3__error(req, resp, "ExpiredToken", "The provided token has expired.", r, NULL);
    } else if (err->code != TY_EBADSIG) {
        s3__error_from(req, resp, err, r);
    } else if (strncmp(err->msg, "Signature expired", 17) == 0 ||
               strncmp(err->msg, "Signature not yet", 17) == 0) {
        s3__error(req, resp, "RequestTimeTooSkewed",
                  "The difference between the request time and the current time is too large.", r,
                  NULL);
    } else if (strcmp(err->msg, "Request has expired") == 0) {
        s3__error(req, resp, "AccessDenied", "Request has expired", r, NULL);
    } else if (auth->sigv2 && strcmp(err->field, "Date") == 0 && !strstr(err->msg, "Signature")) {
        s3__error(req, resp, "AccessDenied", err->msg, r, NULL);
    } else if (strcmp(err->field, "x-amz-content-sha256") == 0) {
        s3__error(req, resp, "XAmzContentSHA256Mismatch",
                  "The provided 'x-amz-content-sha256' header does not match what was computed.", r,
                  NULL);
    } else {
        s3_sig_mismatch(req, resp, r, &ao->sreq, auth);
    }
}

/* What auth_request is asked for an S3 request (vb: room for the virtual-hosted bucket). */
static struct auth_in s3_auth_in(const struct http_request *req, const struct front_ctx *rc,
                                 int streamed, char vb[64])
{
    struct auth_in in = {.redis_url = rc->redis_url,
                         .service = "s3",
                         .allow_v2 = 1,
                         .with_body = !streamed,
                         .region = rc->region};
    if (s3__vhost_bucket(http_header(req, "Host"), vb, 64))
        in.v2_bucket = vb;
    return in;
}

/* Checks the request's signature (auth_request, once). 0, or an S3 error already written into
   resp. On success the worker's principal is the caller's ARN. */
int s3__auth(struct http_request *req, struct http_response *resp, const struct s3_req *r,
             const struct front_ctx *rc, int streamed, struct sigv4_auth *auth)
{
    char vb[64];
    struct auth_in in = s3_auth_in(req, rc, streamed, vb);
    struct auth_out ao;
    struct ty_err err;
    int rc2;

    ty_err_clear(&err);
    /* scope, key, session token and signature in one place (auth.h); S3's words for each */
    rc2 = auth_request(worker_self(), req, &in, time(NULL), &ao, &err);
    *auth = ao.a;
    if (rc2 != 0) {
        if (ao.stage == AUTH_STAGE_PARSE)
            s3_parse_error(req, resp, r, &ao.sreq, &err);
        else if (ao.stage == AUTH_STAGE_STORE)
            s3__error_from(req, resp, &err, r);
        else
            s3_verify_error(req, resp, r, &ao, &err, rc->region);
        return -1;
    }
    if (!s3_thread_os(rc, &err)) {
        s3__error_from(req, resp, &err, r);
        return -1;
    }
    return 0;
}

/*
 * The IAM action and resource ARN of an S3 request, as S3's service authorization reference
 * names them (bucket-level actions on arn:aws:s3:::bucket, object-level ones on
 * arn:aws:s3:::bucket/key). OUT: action, resource.
 */
void s3__iam_action(const char *m, const struct s3_req *r, char *action, size_t an, char *resource,
                    size_t rn)
{
    const char *a;
    if (!r->bucket[0]) {
        snprintf(action, an, "s3:ListAllMyBuckets");
        snprintf(resource, rn, "*");
        return;
    }
    if (!r->key[0]) {
        if (strcmp(m, "PUT") == 0)
            a = "s3:CreateBucket";
        else if (strcmp(m, "DELETE") == 0)
            a = "s3:DeleteBucket";
        else if (strcmp(m, "POST") == 0)
            a = "s3:DeleteObject";
        else if (s3__has(r, "location"))
            a = "s3:GetBucketLocation";
        else if (s3__has(r, "versioning"))
            a = "s3:GetBucketVersioning";
        else if (s3__has(r, "uploads"))
            a = "s3:ListBucketMultipartUploads";
        else if (s3__has(r, "acl"))
            a = "s3:GetBucketAcl";
        else
            a = "s3:ListBucket";
        snprintf(action, an, "%s", a);
        if (strcmp(a, "s3:DeleteObject") == 0)
            snprintf(resource, rn, "arn:aws:s3:::%s/*", r->bucket);
        else
            snprintf(resource, rn, "arn:aws:s3:::%s", r->bucket);
        return;
    }
    if (strcmp(m, "GET") == 0 && s3__has(r, "acl"))
        a = "s3:GetObjectAcl";
    else if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
        a = s3__has(r, "uploadId") && strcmp(m, "GET") == 0 ? "s3:ListMultipartUploadParts"
                                                            : "s3:GetObject";
    else if (strcmp(m, "DELETE") == 0)
        a = s3__has(r, "uploadId") ? "s3:AbortMultipartUpload" : "s3:DeleteObject";
    else
        a = "s3:PutObject";
    snprintf(action, an, "%s", a);
    snprintf(resource, rn, "arn:aws:s3:::%s/%s", r->bucket, r->key);
}

/* ---- recognising S3 requests ---------------------------------------------------------------- */

static int s3_scope_is_s3(const char *cred)
{
    /* Credential=AKID/DATE/REGION/SERVICE/aws4_request: the 4th '/'-field */
    const char *p = cred;
    for (int i = 0; i < 3 && p; i++) {
        p = strchr(p, '/');
        if (p)
            p++;
    }
    return p && strncmp(p, "s3/", 3) == 0;
}

int s3_is_request(const struct http_request *req)
{
    const char *a = http_header(req, "Authorization");
    const char *q = req->query, *c;

    if (a) {
        c = strstr(a, "Credential=");
        return c ? s3_scope_is_s3(c + 11) : 0;
    }
    c = q ? strstr(q, "X-Amz-Credential=") : NULL;
    if (c) {
        const char *v = c + 17;
        const char *end = strchr(v, '&');
        size_t n = end ? (size_t)(end - v) : strlen(v);
        char *d = s3__pct_decode(v, n, 0);
        int yes = d && s3_scope_is_s3(d);
        free(d);
        return yes;
    }
    if (http_header(req, "X-Amz-Target"))
        return 0;
    if (strcmp(req->path, "/healthz") == 0 || strcmp(req->path, "/metrics") == 0 ||
        strncmp(req->path, "/sagemaker/", 11) == 0 ||
        (strncmp(req->path, "/console", 8) == 0 && (req->path[8] == '\0' || req->path[8] == '/')))
        return 0;
    if (strcmp(req->method, "POST") == 0 && strcmp(req->path, "/") == 0)
        return 0;
    return 1;
}

/* The sink of a body whose request already failed authentication: bytes are dropped. */
int s3__discard(void *ctx, const char *data, size_t n)
{
    (void)ctx;
    (void)data;
    (void)n;
    return 0;
}

/* 1 when the request's signature is known bad at header time (so that an unauthenticated
   client cannot make the store write its body to disk); 0 when good or not decidable yet. */
static int s3_early_auth_fails(const struct http_request *req, const struct front_ctx *rc)
{
    char vb[64];
    struct auth_in in = s3_auth_in(req, rc, 1, vb);
    struct auth_out ao;
    struct ty_err err;

    ty_err_clear(&err);
    if (auth_request(worker_self(), req, &in, time(NULL), &ao, &err) == 0)
        return 0;
    if (ao.stage == AUTH_STAGE_PARSE)
        return 1;
    /* a Redis failure is not decidable now: the handler answers it */
    return err.code == TY_ENOTFOUND || err.code == TY_EBADKEY || err.code == TY_EEXPIREDTOKEN ||
           err.code == TY_EBADSIG;
}

void s3_prepare(struct http_request *req, void *ud)
{
    const struct front_ctx *rc = ud;
    struct s3_req r;
    struct ty_err err;
    struct objstore *os;
    struct s3_body *b;
    char path[PATH_MAX];
    const char *sha;
    unsigned char key[32];
    int have_key = 0, fd;
    struct sigv4_auth auth;
    char scope[200] = "";

    if (strcmp(req->method, "PUT") != 0 || !s3_is_request(req))
        return;
    s3__parse_target(req, &r);
    if (r.bad_target || !r.key[0] || !r.bucket[0]) {
        s3__req_cleanup(&r);
        return;
    }
    s3__req_cleanup(&r);
    ty_err_clear(&err);
    os = s3_thread_os(rc, &err);
    if (!os)
        return; /* buffered; the handler reports the error */
    sha = http_header(req, "x-amz-content-sha256");
    memset(&auth, 0, sizeof(auth));
    if (sha && strncmp(sha, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", 34) == 0) {
        struct sigv4_request sreq;
        struct auth_principal p;
        s3_fill_sreq(req, &sreq, 0);
        if (sigv4_parse(&sreq, &auth, &err) == 0 &&
            auth_lookup(worker_self()->store, &auth, time(NULL), &p, &err) == 0) {
            have_key = s3_signing_key(&auth, p.secret, key) == 0;
            snprintf(scope, sizeof(scope), "%s/%s/%s/aws4_request", auth.date, auth.region,
                     auth.service);
            auth_principal_cleanse(&p);
        }
    }
    if (s3_early_auth_fails(req, rc)) {
        /* drained, never stored: the handler answers with the signature error */
        req->sink.write = s3__discard;
        OPENSSL_cleanse(key, sizeof(key));
        return;
    }
    fd = objstore_tmp_create(os, path, sizeof(path), &err);
    if (fd < 0)
        return;
    b = s3_body_new(fd, path, req, have_key ? key : NULL, auth.signature, auth.amz_date, scope);
    OPENSSL_cleanse(key, sizeof(key));
    if (!b)
        return;
    req->sink.write = s3_body_write;
    req->sink.free = s3_body_free;
    req->sink.ctx = b;
}

/* The body of a request as a struct s3_body: the streamed one, or the buffered bytes run
   through a new one. NULL with err on failure. borrowed (owned by req). */
struct s3_body *s3__body(struct http_request *req, struct objstore *os, struct ty_err *err)
{
    struct s3_body *b;
    char path[PATH_MAX];
    int fd;

    if (req->sink.write == s3_body_write)
        return req->sink.ctx;
    if (req->too_big) {
        ty_err_set(err, TY_EINVAL, "EntityTooLarge",
                   "Your proposed upload exceeds the maximum allowed size");
        return NULL;
    }
    fd = objstore_tmp_create(os, path, sizeof(path), err);
    if (fd < 0)
        return NULL;
    /* a buffered body was already checked against its signed hash by sigv4_verify; chunk
       signatures cannot be checked without the key here, so aws-chunked bodies always stream */
    b = s3_body_new(fd, path, req, NULL, NULL, NULL, NULL);
    if (!b) {
        ty_err_set(err, TY_ENOMEM, "InternalError", "out of memory");
        return NULL;
    }
    req->sink.write = s3_body_write;
    req->sink.free = s3_body_free;
    req->sink.ctx = b;
    if (req->body.len && s3_body_write(b, req->body.data, req->body.len) != 0)
        req->sink_failed = 1;
    return b;
}
