/*
 * s3.c - the S3 REST API (see s3.h).
 *
 * Order of checks, as S3 does it: request target (bucket, key, sub-resource) -> signature
 * present -> known access key -> valid signature and clock -> the operation -> the body
 * (streamed bodies are verified by s3_body_finish: framing, Content-MD5, x-amz-content-sha256,
 * checksums, chunk signatures) -> the object store. Every error is S3's XML error document.
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

#define S3_XML_HDR  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define S3_NS       "http://s3.amazonaws.com/doc/2006-03-01/"
#define S3_XML_MAX  (64u * 1024u * 1024u)
#define S3_MAX_QP   32
#define S3_MAX_DELS 1000

struct s3_qp {
    char *name;
    char *value; /* "" when absent */
    int has_value;
};

struct s3_req {
    char bucket[256];
    char *key; /* new, decoded; "" for bucket operations */
    struct s3_qp qp[S3_MAX_QP];
    int nqp;
    int bad_target; /* undecodable path */
};

/* ---- small helpers ------------------------------------------------------------------------- */

static int s3_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes n bytes of p into a new string; plus_space turns '+' into ' '. NULL when
   malformed or when the result holds a NUL. */
static char *s3_pct_decode(const char *p, size_t n, int plus_space)
{
    char *o = malloc(n + 1);
    size_t k = 0;

    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '%') {
            int a, b;
            if (i + 2 >= n) {
                free(o);
                return NULL;
            }
            a = s3_hexval((unsigned char)p[i + 1]);
            b = s3_hexval((unsigned char)p[i + 2]);
            if (a < 0 || b < 0 || (a == 0 && b == 0)) {
                free(o);
                return NULL;
            }
            o[k++] = (char)(a * 16 + b);
            i += 2;
        } else if (p[i] == '+' && plus_space) {
            o[k++] = ' ';
        } else {
            o[k++] = p[i];
        }
    }
    o[k] = '\0';
    return o;
}

static const char *s3_qget(const struct s3_req *r, const char *name)
{
    for (int i = 0; i < r->nqp; i++) {
        if (strcmp(r->qp[i].name, name) == 0)
            return r->qp[i].value;
    }
    return NULL;
}

static int s3_has(const struct s3_req *r, const char *name)
{
    return s3_qget(r, name) != NULL;
}

static void s3_req_cleanup(struct s3_req *r)
{
    free(r->key);
    for (int i = 0; i < r->nqp; i++) {
        free(r->qp[i].name);
        free(r->qp[i].value);
    }
    memset(r, 0, sizeof(*r));
}

/* The virtual-host bucket of a Host header: "<bucket>.localhost[:port]" or "<bucket>.s3.*". */
static int s3_vhost_bucket(const char *host, char *out, size_t n)
{
    const char *dot;
    size_t bl;

    if (!host)
        return 0;
    dot = strchr(host, '.');
    if (!dot)
        return 0;
    bl = (size_t)(dot - host);
    if (bl == 0 || bl >= n || bl > 63)
        return 0;
    if (!(strncmp(dot + 1, "localhost", 9) == 0 && (dot[10] == '\0' || dot[10] == ':')) &&
        strncmp(dot + 1, "s3.", 3) != 0 && strncmp(dot + 1, "s3-", 3) != 0)
        return 0;
    memcpy(out, host, bl);
    out[bl] = '\0';
    for (size_t i = 0; i < bl; i++)
        out[i] = (char)tolower((unsigned char)out[i]);
    return 1;
}

static void s3_parse_target(const struct http_request *req, struct s3_req *r)
{
    const char *path = req->path, *q = req->query;
    char vb[64];
    int vhost;

    memset(r, 0, sizeof(*r));
    vhost = s3_vhost_bucket(http_header(req, "Host"), vb, sizeof(vb));
    if (*path == '/')
        path++;
    if (vhost) {
        snprintf(r->bucket, sizeof(r->bucket), "%s", vb);
        r->key = s3_pct_decode(path, strlen(path), 0);
    } else {
        const char *slash = strchr(path, '/');
        size_t bl = slash ? (size_t)(slash - path) : strlen(path);
        char *b = s3_pct_decode(path, bl, 0);
        if (!b || strlen(b) >= sizeof(r->bucket)) {
            r->bad_target = 1;
            snprintf(r->bucket, sizeof(r->bucket), "%.*s", (int)(bl > 200 ? 200 : bl), path);
        } else {
            snprintf(r->bucket, sizeof(r->bucket), "%s", b);
        }
        free(b);
        r->key = slash ? s3_pct_decode(slash + 1, strlen(slash + 1), 0) : strdup("");
    }
    if (!r->key) {
        r->bad_target = 1;
        r->key = strdup("");
    }
    while (q && *q && r->nqp < S3_MAX_QP) {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        size_t nl = eq ? (size_t)(eq - q) : len;
        if (len) {
            struct s3_qp *p = &r->qp[r->nqp];
            p->name = s3_pct_decode(q, nl, 1);
            p->value = eq ? s3_pct_decode(eq + 1, len - nl - 1, 1) : strdup("");
            p->has_value = eq != NULL;
            if (!p->name || !p->value) {
                free(p->name);
                free(p->value);
                r->bad_target = 1;
            } else {
                r->nqp++;
            }
        }
        q = amp ? amp + 1 : NULL;
    }
}

static void s3_xml_esc(struct ty_buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        switch (*p) {
        case '&':
            ty_buf_puts(b, "&amp;");
            break;
        case '<':
            ty_buf_puts(b, "&lt;");
            break;
        case '>':
            ty_buf_puts(b, "&gt;");
            break;
        case '"':
            ty_buf_puts(b, "&quot;");
            break;
        case '\'':
            ty_buf_puts(b, "&apos;");
            break;
        default:
            if (*p < 0x20)
                ty_buf_printf(b, "&#x%X;", *p);
            else
                ty_buf_append(b, p, 1);
        }
    }
}

/* S3's encoding-type=url: everything but unreserved characters and '/' percent-encoded. */
static void s3_url_esc(struct ty_buf *b, const char *s)
{
    static const char hx[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' || *p == '/') {
            ty_buf_append(b, p, 1);
        } else {
            char e[3] = {'%', hx[*p >> 4], hx[*p & 15]};
            ty_buf_append(b, e, 3);
        }
    }
}

/* A key, prefix or delimiter in a listing: URL-encoded when asked, then XML-escaped. */
static void s3_list_esc(struct ty_buf *b, const char *s, int url)
{
    if (url) {
        struct ty_buf t;
        ty_buf_init(&t, 16384);
        s3_url_esc(&t, s);
        s3_xml_esc(b, t.data ? t.data : "");
        ty_buf_cleanup(&t);
    } else {
        s3_xml_esc(b, s);
    }
}

static void s3_iso8601(int64_t ms, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    size_t len;
    gmtime_r(&t, &tm);
    len = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    if (len + 6 <= n)
        snprintf(out + len, n - len, ".%03uZ", (unsigned)((ms % 1000 + 1000) % 1000));
}

static void s3_http_date(int64_t ms, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* ---- responses ----------------------------------------------------------------------------- */

static void s3_common_headers(struct http_request *req, struct http_response *resp)
{
    http_response_header(resp, "x-amz-request-id", req->request_id);
    http_response_header(resp, "x-amz-id-2", req->request_id);
    http_response_header(resp, "Server", "trainyard");
}

static void s3_xml_resp(struct http_request *req, struct http_response *resp, int status,
                        struct ty_buf *b)
{
    resp->status = status;
    resp->content_type = "application/xml";
    resp->len = b->len;
    resp->body = ty_buf_steal(b);
    s3_common_headers(req, resp);
}

static void s3_empty(struct http_request *req, struct http_response *resp, int status)
{
    resp->status = status;
    resp->body = NULL;
    resp->len = 0;
    s3_common_headers(req, resp);
}

struct s3_code {
    const char *code;
    int status;
};

static const struct s3_code s3_codes[] = {
    {"NoSuchBucket", 404},         {"NoSuchKey", 404},
    {"NoSuchUpload", 404},         {"BucketAlreadyOwnedByYou", 409},
    {"BucketAlreadyExists", 409},  {"BucketNotEmpty", 409},
    {"InvalidRange", 416},         {"SignatureDoesNotMatch", 403},
    {"InvalidAccessKeyId", 403},   {"AccessDenied", 403},
    {"RequestTimeTooSkewed", 403}, {"MethodNotAllowed", 405},
    {"NotImplemented", 501},       {"InternalError", 500},
    {"ServiceUnavailable", 503},   {"PreconditionFailed", 412},
    {"MissingContentLength", 411},
};

static int s3_status_of(const char *code)
{
    for (size_t i = 0; i < sizeof(s3_codes) / sizeof(s3_codes[0]); i++) {
        if (strcmp(s3_codes[i].code, code) == 0)
            return s3_codes[i].status;
    }
    return 400;
}

struct s3_errx {
    const char *name[4]; /* extra elements: name/value pairs */
    const char *value[4];
    int n;
};

static void s3_error(struct http_request *req, struct http_response *resp, const char *code,
                     const char *msg, const struct s3_req *r, const struct s3_errx *x)
{
    struct ty_buf b;
    int status = s3_status_of(code);

    ty_log(TY_LOG_DEBUG, "s3.error", "req=%s code=%s msg=\"%s\"", req->request_id, code, msg);
    if (strcmp(req->method, "HEAD") == 0) {
        s3_empty(req, resp, status);
        return;
    }
    ty_buf_init(&b, 1024 * 1024);
    ty_buf_puts(&b, S3_XML_HDR "<Error><Code>");
    s3_xml_esc(&b, code);
    ty_buf_puts(&b, "</Code><Message>");
    s3_xml_esc(&b, msg);
    ty_buf_puts(&b, "</Message>");
    if (r && r->bucket[0] && strcmp(code, "NoSuchBucket") == 0) {
        ty_buf_puts(&b, "<BucketName>");
        s3_xml_esc(&b, r->bucket);
        ty_buf_puts(&b, "</BucketName>");
    }
    if (r && r->key && r->key[0] && strcmp(code, "NoSuchKey") == 0) {
        ty_buf_puts(&b, "<Key>");
        s3_xml_esc(&b, r->key);
        ty_buf_puts(&b, "</Key>");
    }
    for (int i = 0; x && i < x->n; i++) {
        ty_buf_printf(&b, "<%s>", x->name[i]);
        s3_xml_esc(&b, x->value[i]);
        ty_buf_printf(&b, "</%s>", x->name[i]);
    }
    ty_buf_puts(&b, "<Resource>");
    s3_xml_esc(&b, req->path);
    ty_buf_puts(&b, "</Resource><RequestId>");
    ty_buf_puts(&b, req->request_id);
    ty_buf_puts(&b, "</RequestId><HostId>");
    ty_buf_puts(&b, req->request_id);
    ty_buf_puts(&b, "</HostId></Error>");
    s3_xml_resp(req, resp, status, &b);
}

/* The wire form of a ty_err: err->field holds S3's code when the layer below chose one. */
static void s3_error_from(struct http_request *req, struct http_response *resp,
                          const struct ty_err *err, const struct s3_req *r)
{
    const char *code = err->field;

    if (!code[0] || !isupper((unsigned char)code[0])) {
        switch (err->code) {
        case TY_ENOTFOUND:
            code = r && r->key && r->key[0] ? "NoSuchKey" : "NoSuchBucket";
            break;
        case TY_EREDIS:
            code = "ServiceUnavailable";
            break;
        case TY_EINVAL:
        case TY_ETOOBIG:
            code = "InvalidArgument";
            break;
        default:
            code = "InternalError";
        }
    }
    worker_failed(worker_self(), err->code); /* reopened by the thread's next request */
    s3_error(req, resp, code,
             err->msg[0] ? err->msg : "We encountered an internal error. Please try again.", r,
             NULL);
}

/* ---- thread state and auth ----------------------------------------------------------------- */

static const char *s3_sweep_dir;
static pthread_once_t s3_sweep_once = PTHREAD_ONCE_INIT;

static void s3_sweep(void)
{
    const char *dir = __atomic_load_n(&s3_sweep_dir, __ATOMIC_ACQUIRE);

    /* once per process: temp files of uploads cut short by a crash (a day old at least, so
       that no upload in flight of another process on the same dir is touched) */
    if (dir)
        objstore_sweep_tmp(dir, 24 * 3600);
}

/* The worker's object store handle (worker.h), opened on first use. NULL with err. */
static struct objstore *s3_thread_os(const struct route_ctx *rc, struct ty_err *err)
{
    struct worker *w = worker_self();

    if (rc->s3_dir)
        __atomic_store_n(&s3_sweep_dir, rc->s3_dir, __ATOMIC_RELEASE);
    pthread_once(&s3_sweep_once, s3_sweep);
    worker_at_exit(w, s3_proxy_thread_end);
    return worker_objstore(w, rc->redis_url, rc->s3_dir, err);
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
        s3_error(req, resp, "SignatureDoesNotMatch", msg, r, &x);
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
        s3_error(req, resp, "SignatureDoesNotMatch", msg, r, &x);
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
        s3_error(req, resp,
                 strcmp(err->field, "Authorization") == 0 ? "InvalidArgument" : "AccessDenied",
                 err->msg, r, NULL);
    else if (err->code == TY_ENOAUTH)
        s3_error(req, resp, "AccessDenied", "Access Denied", r, NULL);
    else if (err->code == TY_EBADKEY)
        s3_error(req, resp, "InvalidAccessKeyId",
                 "The AWS Access Key Id you provided does not exist in our records.", r, NULL);
    else
        s3_error(req, resp,
                 http_header(req, "Authorization") ? "AuthorizationHeaderMalformed"
                                                   : "AuthorizationQueryParametersError",
                 err->msg, r, NULL);
}

/* S3's words for a signature that does not verify (auth_request at AUTH_STAGE_VERIFY). */
static void s3_verify_error(struct http_request *req, struct http_response *resp,
                            const struct s3_req *r, const struct auth_out *ao,
                            const struct ty_err *err)
{
    const struct sigv4_auth *auth = &ao->a;

    if (err->code == TY_EBADSIG && strcmp(err->field, "service") == 0) {
        char msg[256];
        int hdr = !auth->presigned;
        snprintf(msg, sizeof(msg),
                 "%s; incorrect service \"%.64s\". This endpoint belongs to \"s3\".",
                 hdr ? "The authorization header is malformed"
                     : "Error parsing the X-Amz-Credential parameter",
                 auth->service);
        s3_error(req, resp,
                 hdr ? "AuthorizationHeaderMalformed" : "AuthorizationQueryParametersError", msg, r,
                 NULL);
    } else if (err->code == TY_ENOTFOUND) {
        struct s3_errx x = {{"AWSAccessKeyId"}, {auth->access_key}, 1};
        s3_error(req, resp, "InvalidAccessKeyId",
                 "The AWS Access Key Id you provided does not exist in our records.", r, &x);
    } else if (err->code == TY_EBADKEY) {
        s3_error(req, resp, "InvalidToken", "The provided token is malformed or otherwise invalid.",
                 r, NULL);
    } else if (err->code == TY_EEXPIREDTOKEN) {
        s3_error(req, resp, "ExpiredToken", "The provided token has expired.", r, NULL);
    } else if (err->code != TY_EBADSIG) {
        s3_error_from(req, resp, err, r);
    } else if (strncmp(err->msg, "Signature expired", 17) == 0 ||
               strncmp(err->msg, "Signature not yet", 17) == 0) {
        s3_error(req, resp, "RequestTimeTooSkewed",
                 "The difference between the request time and the current time is too large.", r,
                 NULL);
    } else if (strcmp(err->msg, "Request has expired") == 0) {
        s3_error(req, resp, "AccessDenied", "Request has expired", r, NULL);
    } else if (auth->sigv2 && strcmp(err->field, "Date") == 0 && !strstr(err->msg, "Signature")) {
        s3_error(req, resp, "AccessDenied", err->msg, r, NULL);
    } else if (strcmp(err->field, "x-amz-content-sha256") == 0) {
        s3_error(req, resp, "XAmzContentSHA256Mismatch",
                 "The provided 'x-amz-content-sha256' header does not match what was computed.", r,
                 NULL);
    } else {
        s3_sig_mismatch(req, resp, r, &ao->sreq, auth);
    }
}

/* What auth_request is asked for an S3 request (vb: room for the virtual-hosted bucket). */
static struct auth_in s3_auth_in(const struct http_request *req, const struct route_ctx *rc,
                                 int streamed, char vb[64])
{
    struct auth_in in = {rc->redis_url, "s3", 1, !streamed, NULL};
    if (s3_vhost_bucket(http_header(req, "Host"), vb, 64))
        in.v2_bucket = vb;
    return in;
}

/* Checks the request's signature (auth_request, once). 0, or an S3 error already written into
   resp. On success the worker's principal is the caller's ARN. */
static int s3_auth(struct http_request *req, struct http_response *resp, const struct s3_req *r,
                   const struct route_ctx *rc, int streamed, struct sigv4_auth *auth)
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
            s3_error_from(req, resp, &err, r);
        else
            s3_verify_error(req, resp, r, &ao, &err);
        return -1;
    }
    if (!s3_thread_os(rc, &err)) {
        s3_error_from(req, resp, &err, r);
        return -1;
    }
    return 0;
}

/*
 * The IAM action and resource ARN of an S3 request, as S3's service authorization reference
 * names them (bucket-level actions on arn:aws:s3:::bucket, object-level ones on
 * arn:aws:s3:::bucket/key). OUT: action, resource.
 */
static void s3_iam_action(const char *m, const struct s3_req *r, char *action, size_t an,
                          char *resource, size_t rn)
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
        else if (s3_has(r, "location"))
            a = "s3:GetBucketLocation";
        else if (s3_has(r, "versioning"))
            a = "s3:GetBucketVersioning";
        else if (s3_has(r, "uploads"))
            a = "s3:ListBucketMultipartUploads";
        else
            a = "s3:ListBucket";
        snprintf(action, an, "%s", a);
        if (strcmp(a, "s3:DeleteObject") == 0)
            snprintf(resource, rn, "arn:aws:s3:::%s/*", r->bucket);
        else
            snprintf(resource, rn, "arn:aws:s3:::%s", r->bucket);
        return;
    }
    if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
        a = s3_has(r, "uploadId") && strcmp(m, "GET") == 0 ? "s3:ListMultipartUploadParts"
                                                           : "s3:GetObject";
    else if (strcmp(m, "DELETE") == 0)
        a = s3_has(r, "uploadId") ? "s3:AbortMultipartUpload" : "s3:DeleteObject";
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
        char *d = s3_pct_decode(v, n, 0);
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
static int s3_discard(void *ctx, const char *data, size_t n)
{
    (void)ctx;
    (void)data;
    (void)n;
    return 0;
}

/* 1 when the request's signature is known bad at header time (so that an unauthenticated
   client cannot make the store write its body to disk); 0 when good or not decidable yet. */
static int s3_early_auth_fails(const struct http_request *req, const struct route_ctx *rc)
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
    const struct route_ctx *rc = ud;
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
    s3_parse_target(req, &r);
    if (r.bad_target || !r.key[0] || !r.bucket[0]) {
        s3_req_cleanup(&r);
        return;
    }
    s3_req_cleanup(&r);
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
        req->sink.write = s3_discard;
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
static struct s3_body *s3_body_open(struct http_request *req, struct objstore *os,
                                    struct ty_err *err)
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

/* ---- headers stored with an object ---------------------------------------------------------- */

static const char *const s3_kept_headers[] = {
    "Content-Type",
    "Content-Disposition",
    "Content-Language",
    "Cache-Control",
    "Expires",
    "x-amz-server-side-encryption",
    "x-amz-server-side-encryption-aws-kms-key-id",
    "x-amz-server-side-encryption-context",
    "x-amz-server-side-encryption-bucket-key-enabled",
    "x-amz-server-side-encryption-customer-algorithm",
    "x-amz-server-side-encryption-customer-key-MD5",
    "x-amz-storage-class",
    "x-amz-website-redirect-location",
    "x-amz-tagging-count",
};

/* new: the headers of req to keep with an object (standard ones, SSE, x-amz-meta-*). */
static json_t *s3_object_headers(const struct http_request *req, int meta_too)
{
    json_t *h = json_object();
    const char *ce;

    for (size_t i = 0; i < sizeof(s3_kept_headers) / sizeof(s3_kept_headers[0]); i++) {
        const char *v = http_header(req, s3_kept_headers[i]);
        if (v)
            json_object_set_new(h, s3_kept_headers[i], json_string(v));
    }
    if (!json_object_get(h, "Content-Type"))
        json_object_set_new(h, "Content-Type", json_string("binary/octet-stream"));
    /* aws-chunked is the transfer framing, not the object's encoding */
    ce = http_header(req, "Content-Encoding");
    if (ce) {
        char buf[256] = "";
        const char *p = ce;
        while (*p) {
            const char *comma = strchr(p, ',');
            size_t n = comma ? (size_t)(comma - p) : strlen(p);
            while (n && *p == ' ') {
                p++;
                n--;
            }
            if (n && !(n == 11 && strncasecmp(p, "aws-chunked", 11) == 0) &&
                strlen(buf) + n + 2 < sizeof(buf)) {
                if (buf[0])
                    strcat(buf, ",");
                strncat(buf, p, n);
            }
            p += n;
            if (*p == ',')
                p++;
        }
        if (buf[0])
            json_object_set_new(h, "Content-Encoding", json_string(buf));
    }
    for (size_t i = 0; meta_too && i < req->nheaders; i++) {
        const char *n = req->headers[i].name;
        if (strncasecmp(n, "x-amz-meta-", 11) == 0) {
            char low[256];
            size_t k;
            for (k = 0; n[k] && k + 1 < sizeof(low); k++)
                low[k] = (char)tolower((unsigned char)n[k]);
            low[k] = '\0';
            json_object_set_new(h, low, json_string(req->headers[i].value));
        }
    }
    return h;
}

static void s3_emit_object_headers(struct http_response *resp, const struct objstore_meta *m,
                                   int with_checksum)
{
    const char *k;
    json_t *v;
    char etag[64], date[64];

    snprintf(etag, sizeof(etag), "\"%s\"", m->etag);
    http_response_header(resp, "ETag", etag);
    s3_http_date(m->mtime_ms, date, sizeof(date));
    http_response_header(resp, "Last-Modified", date);
    http_response_header(resp, "Accept-Ranges", "bytes");
    json_object_foreach(m->hdrs, k, v)
    {
        if (!json_is_string(v))
            continue;
        if (strncmp(k, "x-amz-checksum-", 15) == 0 && !with_checksum)
            continue;
        http_response_header_dup(resp, k, json_string_value(v));
    }
    if (m->hdrs && !json_object_get(m->hdrs, "Content-Type"))
        http_response_header(resp, "Content-Type", "binary/octet-stream");
    if (!m->hdrs)
        http_response_header(resp, "Content-Type", "binary/octet-stream");
}

static void s3_malformed(struct http_request *req, struct http_response *resp,
                         const struct s3_req *r)
{
    s3_error(req, resp, "MalformedXML",
             "The XML you provided was not well-formed or did not validate against our "
             "published schema",
             r, NULL);
}

/* ---- operations: service and buckets -------------------------------------------------------- */

static void s3_list_buckets(struct http_request *req, struct http_response *resp,
                            struct objstore *os, const struct route_ctx *rc)
{
    struct objstore_bucket *v = NULL;
    size_t n = 0;
    struct ty_err err;
    struct ty_buf b;

    ty_err_clear(&err);
    if (objstore_bucket_list(os, &v, &n, &err) != 0) {
        s3_error_from(req, resp, &err, NULL);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_printf(&b,
                  S3_XML_HDR "<ListAllMyBucketsResult xmlns=\"" S3_NS "\"><Owner><ID>%s</ID>"
                             "<DisplayName>trainyard</DisplayName></Owner><Buckets>",
                  rc->account_id ? rc->account_id : "000000000000");
    for (size_t i = 0; i < n; i++) {
        char d[40];
        s3_iso8601(v[i].created_ms, d, sizeof(d));
        ty_buf_puts(&b, "<Bucket><Name>");
        s3_xml_esc(&b, v[i].name);
        ty_buf_printf(&b, "</Name><CreationDate>%s</CreationDate></Bucket>", d);
    }
    ty_buf_puts(&b, "</Buckets></ListAllMyBucketsResult>");
    free(v);
    s3_xml_resp(req, resp, 200, &b);
}

static void s3_create_bucket(struct http_request *req, struct http_response *resp,
                             struct objstore *os, const struct s3_req *r,
                             const struct sigv4_auth *auth)
{
    struct ty_err err;
    char region[64];
    char loc[300];

    ty_err_clear(&err);
    snprintf(region, sizeof(region), "%s", auth->region[0] ? auth->region : "us-east-1");
    if (!objstore_bucket_name_ok(r->bucket)) {
        struct s3_errx x = {{"BucketName"}, {r->bucket}, 1};
        s3_error(req, resp, "InvalidBucketName", "The specified bucket is not valid.", r, &x);
        return;
    }
    if (req->body.len) {
        const char *in, *in_end, *end = req->body.data + req->body.len;
        if (!ty_xml_find(req->body.data, end, "CreateBucketConfiguration", &in, &in_end)) {
            s3_malformed(req, resp, r);
            return;
        }
        if (ty_xml_find(in, in_end, "LocationConstraint", &in, &in_end)) {
            char *lc = ty_xml_text(in, in_end);
            if (lc && *lc)
                snprintf(region, sizeof(region), "%s", lc);
            free(lc);
        }
    }
    if (objstore_bucket_create(os, r->bucket, region, &err) != 0) {
        struct objstore_bucket bk;
        struct ty_err e2;
        ty_err_clear(&e2);
        /* us-east-1 (the legacy region) answers 200 to the owner re-creating its bucket there;
           every other region 409 BucketAlreadyOwnedByYou */
        if (!(err.code == TY_EINUSE && strcmp(err.field, "BucketAlreadyOwnedByYou") == 0 &&
              strcmp(region, "us-east-1") == 0 &&
              objstore_bucket_get(os, r->bucket, &bk, &e2) == 0 &&
              strcmp(bk.region, "us-east-1") == 0)) {
            s3_error_from(req, resp, &err, r);
            return;
        }
    }
    snprintf(loc, sizeof(loc), "/%s", r->bucket);
    s3_empty(req, resp, 200);
    http_response_header(resp, "Location", loc);
}

/* ListObjects (v1) and ListObjectsV2. */
static void s3_list_objects(struct http_request *req, struct http_response *resp,
                            struct objstore *os, const struct s3_req *r, int v2)
{
    const char *prefix = s3_qget(r, "prefix"), *delim = s3_qget(r, "delimiter");
    const char *token = v2 ? s3_qget(r, "continuation-token") : NULL;
    const char *after = v2 ? s3_qget(r, "start-after") : s3_qget(r, "marker");
    const char *mk = s3_qget(r, "max-keys"), *enc = s3_qget(r, "encoding-type");
    const char *fo = v2 ? s3_qget(r, "fetch-owner") : NULL;
    int url = enc && strcmp(enc, "url") == 0, max = 1000;
    /* v1 always names the owner; v2 when asked (fetch-owner=true) */
    int owner = !v2 || (fo && strcmp(fo, "true") == 0);
    struct objstore_listing l;
    struct ty_err err;
    struct ty_buf b;
    size_t nkeys = 0;

    ty_err_clear(&err);
    if (enc && !url) {
        s3_error(req, resp, "InvalidArgument", "Invalid Encoding Method specified in Request", r,
                 NULL);
        return;
    }
    if (mk) {
        char *e;
        long v = strtol(mk, &e, 10);
        if (!*mk || *e || v < 0) {
            s3_error(req, resp, "InvalidArgument",
                     "Provided max-keys not an integer or within integer range", r, NULL);
            return;
        }
        max = v > 1000 ? 1000 : (int)v;
    }
    if (delim && !*delim)
        delim = NULL;
    if (objstore_list(os, r->bucket, prefix, delim, token, after, max, &l, &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_puts(&b, S3_XML_HDR "<ListBucketResult xmlns=\"" S3_NS "\"><Name>");
    s3_xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Name><Prefix>");
    /* ListObjects (v1) answers Prefix as sent even with encoding-type=url (botocore decodes
       it only for v2) */
    s3_list_esc(&b, prefix ? prefix : "", url && v2);
    ty_buf_puts(&b, "</Prefix>");
    if (v2) {
        if (token) {
            ty_buf_puts(&b, "<ContinuationToken>");
            s3_xml_esc(&b, token);
            ty_buf_puts(&b, "</ContinuationToken>");
        }
        if (after) {
            ty_buf_puts(&b, "<StartAfter>");
            s3_list_esc(&b, after, url);
            ty_buf_puts(&b, "</StartAfter>");
        }
        ty_buf_printf(&b, "<KeyCount>%zu</KeyCount>", l.n);
    } else {
        ty_buf_puts(&b, "<Marker>");
        s3_list_esc(&b, after ? after : "", url);
        ty_buf_puts(&b, "</Marker>");
        if (l.truncated && delim && l.n) {
            ty_buf_puts(&b, "<NextMarker>");
            s3_list_esc(&b, l.e[l.n - 1].key, url);
            ty_buf_puts(&b, "</NextMarker>");
        }
    }
    ty_buf_printf(&b, "<MaxKeys>%d</MaxKeys>", max);
    if (delim) {
        ty_buf_puts(&b, "<Delimiter>");
        s3_list_esc(&b, delim, url);
        ty_buf_puts(&b, "</Delimiter>");
    }
    if (url)
        ty_buf_puts(&b, "<EncodingType>url</EncodingType>");
    ty_buf_printf(&b, "<IsTruncated>%s</IsTruncated>", l.truncated ? "true" : "false");
    if (v2 && l.truncated && l.next) {
        ty_buf_puts(&b, "<NextContinuationToken>");
        s3_xml_esc(&b, l.next);
        ty_buf_puts(&b, "</NextContinuationToken>");
    }
    for (size_t i = 0; i < l.n; i++) {
        char d[40];
        if (l.e[i].is_prefix)
            continue;
        nkeys++;
        s3_iso8601(l.e[i].meta.mtime_ms, d, sizeof(d));
        ty_buf_puts(&b, "<Contents><Key>");
        s3_list_esc(&b, l.e[i].key, url);
        ty_buf_printf(&b,
                      "</Key><LastModified>%s</LastModified><ETag>&quot;%s&quot;</ETag>"
                      "<Size>%llu</Size><StorageClass>STANDARD</StorageClass>",
                      d, l.e[i].meta.etag, (unsigned long long)l.e[i].meta.size);
        if (owner)
            ty_buf_puts(&b,
                        "<Owner><ID>trainyard</ID><DisplayName>trainyard</DisplayName></Owner>");
        ty_buf_puts(&b, "</Contents>");
    }
    for (size_t i = 0; i < l.n; i++) {
        if (!l.e[i].is_prefix)
            continue;
        ty_buf_puts(&b, "<CommonPrefixes><Prefix>");
        s3_list_esc(&b, l.e[i].key, url);
        ty_buf_puts(&b, "</Prefix></CommonPrefixes>");
    }
    (void)nkeys;
    ty_buf_puts(&b, "</ListBucketResult>");
    objstore_listing_cleanup(&l);
    if (b.len >= S3_XML_MAX - 1) {
        ty_buf_cleanup(&b);
        s3_error(req, resp, "InternalError", "listing too large", r, NULL);
        return;
    }
    s3_xml_resp(req, resp, 200, &b);
}

static void s3_list_uploads(struct http_request *req, struct http_response *resp,
                            struct objstore *os, const struct s3_req *r)
{
    struct objstore_upload *u = NULL;
    size_t n = 0;
    int trunc = 0, max = 1000;
    const char *mu = s3_qget(r, "max-uploads"), *prefix = s3_qget(r, "prefix");
    struct ty_err err;
    struct ty_buf b;

    ty_err_clear(&err);
    if (mu)
        max = atoi(mu);
    if (objstore_mpu_list(os, r->bucket, prefix, max, &u, &n, &trunc, &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_puts(&b, S3_XML_HDR "<ListMultipartUploadsResult xmlns=\"" S3_NS "\"><Bucket>");
    s3_xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker><Prefix>");
    s3_xml_esc(&b, prefix ? prefix : "");
    ty_buf_printf(&b, "</Prefix><MaxUploads>%d</MaxUploads><IsTruncated>%s</IsTruncated>",
                  max < 1 || max > 1000 ? 1000 : max, trunc ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        char d[40];
        s3_iso8601(u[i].initiated_ms, d, sizeof(d));
        ty_buf_puts(&b, "<Upload><Key>");
        s3_xml_esc(&b, u[i].key);
        ty_buf_printf(&b,
                      "</Key><UploadId>%s</UploadId><Initiator><ID>trainyard</ID></Initiator>"
                      "<Owner><ID>trainyard</ID></Owner><StorageClass>STANDARD</StorageClass>"
                      "<Initiated>%s</Initiated></Upload>",
                      u[i].id, d);
        free(u[i].key);
    }
    free(u);
    ty_buf_puts(&b, "</ListMultipartUploadsResult>");
    s3_xml_resp(req, resp, 200, &b);
}

static void s3_delete_objects(struct http_request *req, struct http_response *resp,
                              struct objstore *os, const struct s3_req *r)
{
    const char *p, *end, *in, *in_end, *oin, *oend;
    struct ty_buf b;
    int quiet = 0, count = 0;
    struct ty_err err;

    ty_err_clear(&err);
    if (req->too_big || !req->body.len) {
        s3_malformed(req, resp, r);
        return;
    }
    end = req->body.data + req->body.len;
    if (!ty_xml_find(req->body.data, end, "Delete", &in, &in_end)) {
        s3_malformed(req, resp, r);
        return;
    }
    {
        const char *qi, *qe;
        if (ty_xml_find(in, in_end, "Quiet", &qi, &qe))
            quiet = (size_t)(qe - qi) == 4 && strncmp(qi, "true", 4) == 0;
    }
    for (p = in; (p = ty_xml_find(p, in_end, "Object", &oin, &oend)) != NULL;)
        count++;
    if (count == 0 || count > S3_MAX_DELS) {
        s3_malformed(req, resp, r);
        return;
    }
    if (objstore_bucket_get(os, r->bucket, NULL, &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_puts(&b, S3_XML_HDR "<DeleteResult xmlns=\"" S3_NS "\">");
    for (p = in; (p = ty_xml_find(p, in_end, "Object", &oin, &oend)) != NULL;) {
        const char *ki, *ke;
        char *key = NULL;
        if (ty_xml_find(oin, oend, "Key", &ki, &ke))
            key = ty_xml_text(ki, ke);
        ty_err_clear(&err);
        if (!key || !objstore_key_ok(key)) {
            ty_buf_puts(&b, "<Error><Key>");
            s3_xml_esc(&b, key ? key : "");
            ty_buf_puts(&b, "</Key><Code>InvalidArgument</Code><Message>Invalid key</Message>"
                            "</Error>");
        } else if (objstore_delete(os, r->bucket, key, &err) != 0) {
            ty_buf_puts(&b, "<Error><Key>");
            s3_xml_esc(&b, key);
            ty_buf_puts(&b, "</Key><Code>InternalError</Code><Message>");
            s3_xml_esc(&b, err.msg);
            ty_buf_puts(&b, "</Message></Error>");
        } else if (!quiet) {
            ty_buf_puts(&b, "<Deleted><Key>");
            s3_xml_esc(&b, key);
            ty_buf_puts(&b, "</Key></Deleted>");
        }
        free(key);
    }
    ty_buf_puts(&b, "</DeleteResult>");
    s3_xml_resp(req, resp, 200, &b);
}

/* ---- operations: objects ------------------------------------------------------------------ */

/* Finishes the request body; on failure writes the error. Returns the body or NULL. */
static struct s3_body *s3_finish_body(struct http_request *req, struct http_response *resp,
                                      struct objstore *os, const struct s3_req *r)
{
    struct ty_err err;
    struct s3_body *b;

    ty_err_clear(&err);
    b = s3_body_open(req, os, &err);
    if (!b || s3_body_finish(b, &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return NULL;
    }
    if (req->sink_failed) {
        s3_error(req, resp, "InternalError", "the upload could not be stored", r, NULL);
        return NULL;
    }
    return b;
}

static void s3_checksum_header(struct http_response *resp, struct s3_body *b, json_t *hdrs)
{
    const char *v = NULL;
    enum s3_ck ck = s3_body_checksum(b, &v);
    char low[64];

    if (ck == S3_CK_NONE || !v || !*v)
        return;
    snprintf(low, sizeof(low), "x-amz-checksum-%s", s3_ck_name(ck));
    for (size_t i = 0; low[i]; i++)
        low[i] = (char)tolower((unsigned char)low[i]);
    http_response_header_dup(resp, low, v);
    if (hdrs)
        json_object_set_new(hdrs, low, json_string(v));
}

static void s3_echo_sse(struct http_request *req, struct http_response *resp, json_t *h)
{
    for (size_t i = 0; i < sizeof(s3_kept_headers) / sizeof(s3_kept_headers[0]); i++) {
        const char *n = s3_kept_headers[i];
        json_t *v;
        if (strncmp(n, "x-amz-server-side-encryption", 28) != 0)
            continue;
        v = h ? json_object_get(h, n) : NULL;
        if (json_is_string(v))
            http_response_header(resp, n, json_string_value(v));
    }
    (void)req;
}

static void s3_put_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                          const struct s3_req *r)
{
    struct s3_body *b;
    struct objstore_meta m;
    struct ty_err err;
    json_t *hdrs;
    char etag[64];

    ty_err_clear(&err);
    if (objstore_bucket_get(os, r->bucket, NULL, &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    if (!(b = s3_finish_body(req, resp, os, r)))
        return;
    hdrs = s3_object_headers(req, 1);
    s3_empty(req, resp, 200);
    s3_checksum_header(resp, b, hdrs);
    if (objstore_put_tmp(os, r->bucket, r->key, s3_body_path(b), s3_body_md5(b), s3_body_size(b), 0,
                         hdrs, &m, &err) != 0) {
        json_decref(hdrs);
        for (int i = 0; i < resp->nhdr; i++) {
            free(resp->hdr_value[i]);
            free(resp->hdr_name_dyn[i]);
            resp->hdr_name_dyn[i] = NULL;
        }
        resp->nhdr = 0;
        s3_error_from(req, resp, &err, r);
        return;
    }
    s3_body_release(b);
    snprintf(etag, sizeof(etag), "\"%s\"", m.etag);
    http_response_header(resp, "ETag", etag);
    s3_echo_sse(req, resp, hdrs);
    json_decref(hdrs);
}

/* The answer of a copy: <elem> (CopyObjectResult, CopyPartResult) with LastModified, ETag. */
static void s3_copy_result(struct http_request *req, struct http_response *resp, const char *elem,
                           int64_t mtime_ms, const char *etag)
{
    struct ty_buf b;
    char d[40];

    s3_iso8601(mtime_ms, d, sizeof(d));
    ty_buf_init(&b, 4096);
    ty_buf_printf(&b,
                  S3_XML_HDR "<%s xmlns=\"" S3_NS "\"><LastModified>%s</LastModified>"
                             "<ETag>&quot;%s&quot;</ETag></%s>",
                  elem, d, etag, elem);
    s3_xml_resp(req, resp, 200, &b);
}

#define S3_BAD_COPY_SOURCE                                                                         \
    "Copy Source must mention the source bucket and key: sourcebucket/sourcekey"

/* Splits x-amz-copy-source ("[/]bucket/key[?versionId=...]", percent-encoded) into the bucket
   sb (size sbn) and the decoded key. new (*dec, free()): the decoded copy *sk points into.
   0, or -1 when it names no bucket and key. */
static int s3_copy_source(const char *src, char *sb, size_t sbn, char **dec, char **sk)
{
    char *q, *k, *slash;

    *dec = s3_pct_decode(src, strlen(src), 0);
    if (!*dec)
        return -1;
    if ((q = strstr(*dec, "?versionId=")) != NULL)
        *q = '\0';
    k = (*dec)[0] == '/' ? *dec + 1 : *dec;
    slash = strchr(k, '/');
    if (!slash || slash == k || (size_t)(slash - k) >= sbn || !slash[1]) {
        free(*dec);
        *dec = NULL;
        return -1;
    }
    memcpy(sb, k, (size_t)(slash - k));
    sb[slash - k] = '\0';
    *sk = slash + 1;
    return 0;
}

/* The partNumber of an UploadPart(Copy): 1..10000, or -1 after answering InvalidArgument. */
static int s3_part_number(struct http_request *req, struct http_response *resp,
                          const struct s3_req *r)
{
    const char *pn = s3_qget(r, "partNumber");
    char *e;
    long n = pn ? strtol(pn, &e, 10) : 0;

    if (!pn || !*pn || *e || n < 1 || n > OBJSTORE_MAX_PARTS) {
        s3_error(req, resp, "InvalidArgument",
                 "Part number must be an integer between 1 and 10000, inclusive", r, NULL);
        return -1;
    }
    return (int)n;
}

/* UploadPartCopy: part partNumber of the upload is bytes of the source object (all of it, or
   x-amz-copy-source-range: bytes=first-last). */
static void s3_upload_part_copy(struct http_request *req, struct http_response *resp,
                                struct objstore *os, const struct s3_req *r, const char *src)
{
    const char *id = s3_qget(r, "uploadId");
    const char *range = http_header(req, "x-amz-copy-source-range");
    char sb[256], *dec = NULL, *sk;
    struct objstore_part part;
    struct ty_err err;
    uint64_t first = 0, last = UINT64_MAX;
    int n;

    ty_err_clear(&err);
    if ((n = s3_part_number(req, resp, r)) < 0)
        return;
    if (s3_copy_source(src, sb, sizeof(sb), &dec, &sk) != 0) {
        s3_error(req, resp, "InvalidArgument", S3_BAD_COPY_SOURCE, r, NULL);
        return;
    }
    if (range) {
        unsigned long long a, z;
        char tail;
        if (sscanf(range, "bytes=%llu-%llu%c", &a, &z, &tail) != 2 || a > z) {
            free(dec);
            s3_error(req, resp, "InvalidArgument",
                     "The x-amz-copy-source-range value must be of the form bytes=first-last "
                     "where first and last are the zero-based offsets of the first and last "
                     "bytes to copy",
                     r, NULL);
            return;
        }
        first = a;
        last = z;
    }
    if (objstore_mpu_copy_part(os, r->bucket, r->key, id, n, sb, sk, first, last, &part, &err) !=
        0) {
        free(dec);
        s3_error_from(req, resp, &err, r);
        return;
    }
    free(dec);
    s3_copy_result(req, resp, "CopyPartResult", part.mtime_ms, part.etag);
}

static void s3_upload_part(struct http_request *req, struct http_response *resp,
                           struct objstore *os, const struct s3_req *r)
{
    const char *id = s3_qget(r, "uploadId");
    struct s3_body *b;
    struct ty_err err;
    char etag[64];
    int n;

    ty_err_clear(&err);
    if ((n = s3_part_number(req, resp, r)) < 0)
        return;
    if (objstore_mpu_get(os, r->bucket, r->key, id, NULL, &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    if (!(b = s3_finish_body(req, resp, os, r)))
        return;
    if (objstore_mpu_put_part(os, r->bucket, r->key, id, n, s3_body_path(b), s3_body_md5(b),
                              s3_body_size(b), &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    s3_body_release(b);
    s3_empty(req, resp, 200);
    snprintf(etag, sizeof(etag), "\"%s\"", s3_body_md5(b));
    http_response_header(resp, "ETag", etag);
    s3_checksum_header(resp, b, NULL);
}

static void s3_copy_object(struct http_request *req, struct http_response *resp,
                           struct objstore *os, const struct s3_req *r, const char *src)
{
    char sb[256];
    char *dec, *sk;
    const char *dir = http_header(req, "x-amz-metadata-directive");
    int replace = dir && strcasecmp(dir, "REPLACE") == 0;
    struct objstore_meta m;
    struct ty_err err;
    json_t *hdrs = NULL;

    ty_err_clear(&err);
    if (s3_copy_source(src, sb, sizeof(sb), &dec, &sk) != 0) {
        s3_error(req, resp, "InvalidArgument", S3_BAD_COPY_SOURCE, r, NULL);
        return;
    }
    if (!replace && strcmp(sb, r->bucket) == 0 && strcmp(sk, r->key) == 0) {
        free(dec);
        s3_error(req, resp, "InvalidRequest",
                 "This copy request is illegal because it is trying to copy an object to itself "
                 "without changing the object's metadata, storage class, website redirect "
                 "location or encryption attributes.",
                 r, NULL);
        return;
    }
    if (replace)
        hdrs = s3_object_headers(req, 1);
    if (objstore_copy(os, sb, sk, r->bucket, r->key, hdrs, &m, &err) != 0) {
        free(dec);
        json_decref(hdrs);
        s3_error_from(req, resp, &err, r);
        return;
    }
    free(dec);
    json_decref(hdrs);
    s3_copy_result(req, resp, "CopyObjectResult", m.mtime_ms, m.etag);
}

/* Parses a Range header against size. 0: whole object; 1: [*a, *b]; -1: unsatisfiable. */
static int s3_range(const char *h, uint64_t size, uint64_t *a, uint64_t *b)
{
    const char *p;
    char *e;
    unsigned long long x, y;

    if (!h || strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
        return 0;
    p = h + 6;
    if (*p == '-') {
        if (!isdigit((unsigned char)p[1]))
            return 0;
        errno = 0;
        y = strtoull(p + 1, &e, 10);
        if (errno || *e)
            return 0;
        if (y == 0 || size == 0)
            return -1;
        *a = y >= size ? 0 : size - y;
        *b = size - 1;
        return 1;
    }
    if (!isdigit((unsigned char)*p))
        return 0;
    errno = 0;
    x = strtoull(p, &e, 10);
    if (errno || *e != '-')
        return 0;
    p = e + 1;
    if (*p == '\0') {
        y = size ? size - 1 : 0;
    } else {
        if (!isdigit((unsigned char)*p))
            return 0;
        y = strtoull(p, &e, 10);
        if (errno || *e || y < x)
            return 0;
        if (y >= size)
            y = size ? size - 1 : 0;
    }
    if (x >= size)
        return -1;
    *a = x;
    *b = y;
    return 1;
}

static int s3_etag_match(const char *list, const char *etag)
{
    const char *p = list;
    size_t el = strlen(etag);
    while (p && *p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (*p == '"' && strncmp(p + 1, etag, el) == 0 && p[1 + el] == '"')
            return 1;
        if (strncmp(p, etag, el) == 0 && (p[el] == '\0' || p[el] == ',' || p[el] == ' '))
            return 1;
        p = strchr(p, ',');
    }
    return 0;
}

static void s3_get_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                          const struct s3_req *r, int head)
{
    struct objstore_meta m;
    struct ty_err err;
    const char *cm = http_header(req, "x-amz-checksum-mode");
    const char *im = http_header(req, "If-Match"), *inm = http_header(req, "If-None-Match");
    uint64_t a = 0, z = 0;
    int fd, rg;

    ty_err_clear(&err);
    memset(&m, 0, sizeof(m));
    fd = objstore_open_read(os, r->bucket, r->key, &m, &err);
    if (fd < 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    if (im && !s3_etag_match(im, m.etag)) {
        close(fd);
        objstore_meta_cleanup(&m);
        s3_error(req, resp, "PreconditionFailed",
                 "At least one of the pre-conditions you specified did not hold", r, NULL);
        return;
    }
    if (inm && s3_etag_match(inm, m.etag)) {
        close(fd);
        s3_empty(req, resp, 304);
        s3_emit_object_headers(resp, &m, 0);
        objstore_meta_cleanup(&m);
        return;
    }
    rg = s3_range(http_header(req, "Range"), m.size, &a, &z);
    if (rg < 0) {
        char cr[64];
        close(fd);
        objstore_meta_cleanup(&m);
        {
            struct s3_errx x = {{"RangeRequested", "ActualObjectSize"}, {"", ""}, 2};
            char sz[32];
            snprintf(sz, sizeof(sz), "%llu", (unsigned long long)m.size);
            x.value[0] = http_header(req, "Range");
            x.value[1] = sz;
            s3_error(req, resp, "InvalidRange", "The requested range is not satisfiable", r, &x);
        }
        snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)m.size);
        http_response_header(resp, "Content-Range", cr);
        return;
    }
    /* response-* query parameters (presigned downloads) override the stored headers */
    {
        static const char *const ov[][2] = {{"response-content-type", "Content-Type"},
                                            {"response-content-disposition", "Content-Disposition"},
                                            {"response-content-encoding", "Content-Encoding"},
                                            {"response-content-language", "Content-Language"},
                                            {"response-cache-control", "Cache-Control"},
                                            {"response-expires", "Expires"}};
        for (size_t i = 0; i < sizeof(ov) / sizeof(ov[0]); i++) {
            const char *v = s3_qget(r, ov[i][0]);
            if (!v)
                continue;
            if (!m.hdrs)
                m.hdrs = json_object();
            json_object_set_new(m.hdrs, ov[i][1], json_string(v));
        }
    }
    s3_common_headers(req, resp);
    s3_emit_object_headers(resp, &m, cm && strcasecmp(cm, "ENABLED") == 0 && rg == 0);
    if (m.parts && s3_qget(r, "partNumber")) {
        char pc[16];
        snprintf(pc, sizeof(pc), "%d", m.parts);
        http_response_header(resp, "x-amz-mp-parts-count", pc);
    }
    resp->has_file = 1;
    resp->file_fd = fd;
    if (rg > 0) {
        char cr[96];
        snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)a,
                 (unsigned long long)z, (unsigned long long)m.size);
        http_response_header(resp, "Content-Range", cr);
        resp->status = 206;
        resp->file_off = a;
        resp->file_len = z - a + 1;
    } else {
        resp->status = 200;
        resp->file_off = 0;
        resp->file_len = m.size;
    }
    (void)head; /* MHD sends no body for HEAD, with the same Content-Length */
    objstore_meta_cleanup(&m);
}

static void s3_delete_object(struct http_request *req, struct http_response *resp,
                             struct objstore *os, const struct s3_req *r)
{
    struct ty_err err;
    ty_err_clear(&err);
    if (objstore_delete(os, r->bucket, r->key, &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    s3_empty(req, resp, 204);
}

static void s3_create_upload(struct http_request *req, struct http_response *resp,
                             struct objstore *os, const struct s3_req *r)
{
    char id[OBJSTORE_UPLOAD_ID_SZ];
    struct ty_err err;
    struct ty_buf b;
    json_t *hdrs = s3_object_headers(req, 1);
    const char *algo = http_header(req, "x-amz-checksum-algorithm");

    ty_err_clear(&err);
    if (objstore_mpu_create(os, r->bucket, r->key, hdrs, id, &err) != 0) {
        json_decref(hdrs);
        s3_error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, 8192);
    ty_buf_puts(&b, S3_XML_HDR "<InitiateMultipartUploadResult xmlns=\"" S3_NS "\"><Bucket>");
    s3_xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Bucket><Key>");
    s3_xml_esc(&b, r->key);
    ty_buf_printf(&b, "</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>", id);
    s3_xml_resp(req, resp, 200, &b);
    s3_echo_sse(req, resp, hdrs);
    if (algo)
        http_response_header(resp, "x-amz-checksum-algorithm", algo);
    json_decref(hdrs);
}

/* CompleteMultipartUploadResult for bucket/key with etag (and ChecksumSHA256 when composite is
   not empty). */
static void s3_complete_result(struct http_request *req, struct http_response *resp,
                               const struct s3_req *r, const char *etag, const char *composite)
{
    struct ty_buf b;
    const char *host = http_header(req, "Host");

    ty_buf_init(&b, 16384);
    ty_buf_puts(&b, S3_XML_HDR "<CompleteMultipartUploadResult xmlns=\"" S3_NS "\"><Location>");
    ty_buf_puts(&b, "http://");
    s3_xml_esc(&b, host ? host : "localhost");
    ty_buf_puts(&b, "/");
    s3_xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "/");
    s3_url_esc(&b, r->key);
    ty_buf_puts(&b, "</Location><Bucket>");
    s3_xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Bucket><Key>");
    s3_xml_esc(&b, r->key);
    ty_buf_printf(&b, "</Key><ETag>&quot;%s&quot;</ETag>", etag);
    if (composite && *composite) {
        ty_buf_puts(&b, "<ChecksumSHA256>");
        s3_xml_esc(&b, composite);
        ty_buf_puts(&b, "</ChecksumSHA256><ChecksumType>COMPOSITE</ChecksumType>");
    }
    ty_buf_puts(&b, "</CompleteMultipartUploadResult>");
    s3_xml_resp(req, resp, 200, &b);
}

static void s3_complete_upload(struct http_request *req, struct http_response *resp,
                               struct objstore *os, const struct s3_req *r, const char *id)
{
    const char *in, *in_end, *p, *pi, *pe, *end;
    const char *expect = http_header(req, "x-amz-checksum-sha256");
    const char *algo = http_header(req, "x-amz-checksum-algorithm");
    struct objstore_part *parts = NULL;
    char(*psha)[OBJSTORE_CK_SZ] = NULL;
    const char **pshap = NULL;
    struct objstore_meta m;
    struct ty_err err;
    size_t n = 0;
    json_t *hdrs = NULL;
    int want_ck = (expect && *expect) || (algo && strcasecmp(algo, "SHA256") == 0);
    char composite[OBJSTORE_CK_SZ] = "";

    ty_err_clear(&err);
    if (objstore_mpu_get(os, r->bucket, r->key, id, &hdrs, &err) != 0) {
        char etag[48];
        struct ty_err e2;
        ty_err_clear(&e2);
        /* completed already: S3 answers the same result again */
        if (err.code == TY_ENOTFOUND &&
            objstore_mpu_completed(os, r->bucket, r->key, id, etag, composite, &e2) == 0) {
            s3_complete_result(req, resp, r, etag, composite);
            return;
        }
        s3_error_from(req, resp, &err, r);
        return;
    }
    if (req->too_big || !req->body.len) {
        s3_malformed(req, resp, r);
        goto out;
    }
    end = req->body.data + req->body.len;
    if (!ty_xml_find(req->body.data, end, "CompleteMultipartUpload", &in, &in_end)) {
        s3_malformed(req, resp, r);
        goto out;
    }
    parts = calloc(OBJSTORE_MAX_PARTS, sizeof(*parts));
    psha = calloc(OBJSTORE_MAX_PARTS, sizeof(*psha));
    pshap = calloc(OBJSTORE_MAX_PARTS, sizeof(*pshap));
    if (!parts || !psha || !pshap) {
        s3_error(req, resp, "InternalError", "out of memory", r, NULL);
        goto out;
    }
    for (p = in; (p = ty_xml_find(p, in_end, "Part", &pi, &pe)) != NULL;) {
        const char *ni, *ne, *ei, *ee, *ci, *ce;
        char num[16];
        char *etag;
        if (n == OBJSTORE_MAX_PARTS || !ty_xml_find(pi, pe, "PartNumber", &ni, &ne) ||
            !ty_xml_find(pi, pe, "ETag", &ei, &ee) || (size_t)(ne - ni) >= sizeof(num) ||
            ne == ni) {
            n = 0;
            break;
        }
        memcpy(num, ni, (size_t)(ne - ni));
        num[ne - ni] = '\0';
        parts[n].number = atoi(num);
        etag = ty_xml_text(ei, ee);
        if (!etag || strlen(etag) >= sizeof(parts[n].etag)) {
            free(etag);
            n = 0;
            break;
        }
        snprintf(parts[n].etag, sizeof(parts[n].etag), "%s", etag);
        free(etag);
        if (ty_xml_find(pi, pe, "ChecksumSHA256", &ci, &ce)) {
            char *ck = ty_xml_text(ci, ce);
            snprintf(psha[n], sizeof(psha[n]), "%s", ck ? ck : "");
            free(ck);
            pshap[n] = psha[n];
            want_ck = 1;
        }
        n++;
    }
    if (n == 0) {
        s3_malformed(req, resp, r);
        goto out;
    }
    if (objstore_mpu_complete_ck(os, r->bucket, r->key, id, parts, n, pshap, expect,
                                 want_ck ? composite : NULL, &m, &err) != 0) {
        if (strcmp(err.field, "BadDigest") == 0)
            s3_error(req, resp, "BadDigest", err.msg, r, NULL);
        else
            s3_error_from(req, resp, &err, r);
        goto out;
    }
    s3_complete_result(req, resp, r, m.etag, want_ck ? composite : NULL);
    s3_echo_sse(req, resp, hdrs);
    objstore_meta_cleanup(&m);
out:
    json_decref(hdrs);
    free(parts);
    free(psha);
    free(pshap);
}

static void s3_list_parts(struct http_request *req, struct http_response *resp, struct objstore *os,
                          const struct s3_req *r, const char *id)
{
    struct objstore_part *parts = NULL;
    size_t n = 0, shown = 0;
    struct ty_err err;
    struct ty_buf b;
    const char *mp = s3_qget(r, "max-parts"), *pm = s3_qget(r, "part-number-marker");
    int max = mp ? atoi(mp) : 1000, marker = pm ? atoi(pm) : 0, last = 0, trunc = 0;

    ty_err_clear(&err);
    if (max < 1 || max > 1000)
        max = 1000;
    if (objstore_mpu_get(os, r->bucket, r->key, id, NULL, &err) != 0 ||
        objstore_mpu_parts(os, id, &parts, &n, &err) != 0) {
        s3_error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_puts(&b, S3_XML_HDR "<ListPartsResult xmlns=\"" S3_NS "\"><Bucket>");
    s3_xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Bucket><Key>");
    s3_xml_esc(&b, r->key);
    ty_buf_printf(&b, "</Key><UploadId>%s</UploadId><PartNumberMarker>%d</PartNumberMarker>", id,
                  marker);
    {
        struct ty_buf pb;
        ty_buf_init(&pb, S3_XML_MAX);
        for (size_t i = 0; i < n; i++) {
            char d[40];
            if (parts[i].number <= marker)
                continue;
            if ((int)shown == max) {
                trunc = 1;
                break;
            }
            s3_iso8601(parts[i].mtime_ms, d, sizeof(d));
            ty_buf_printf(&pb,
                          "<Part><PartNumber>%d</PartNumber><LastModified>%s</LastModified>"
                          "<ETag>&quot;%s&quot;</ETag><Size>%llu</Size></Part>",
                          parts[i].number, d, parts[i].etag, (unsigned long long)parts[i].size);
            last = parts[i].number;
            shown++;
        }
        ty_buf_printf(&b,
                      "<NextPartNumberMarker>%d</NextPartNumberMarker><MaxParts>%d</MaxParts>"
                      "<IsTruncated>%s</IsTruncated><StorageClass>STANDARD</StorageClass>",
                      last, max, trunc ? "true" : "false");
        if (pb.data)
            ty_buf_append(&b, pb.data, pb.len);
        ty_buf_cleanup(&pb);
    }
    ty_buf_puts(&b, "</ListPartsResult>");
    free(parts);
    s3_xml_resp(req, resp, 200, &b);
}

/* ---- dispatch ------------------------------------------------------------------------------ */

/* Sub-resources we do not serve: 501 NotImplemented rather than a wrong answer. */
static const char *s3_unsupported(const struct s3_req *r)
{
    static const char *const sub[] = {"acl",
                                      "policy",
                                      "cors",
                                      "lifecycle",
                                      "website",
                                      "tagging",
                                      "replication",
                                      "logging",
                                      "notification",
                                      "encryption",
                                      "object-lock",
                                      "retention",
                                      "legal-hold",
                                      "torrent",
                                      "accelerate",
                                      "analytics",
                                      "inventory",
                                      "metrics",
                                      "ownershipControls",
                                      "publicAccessBlock",
                                      "requestPayment",
                                      "restore",
                                      "select",
                                      "attributes",
                                      "intelligent-tiering",
                                      "versions",
                                      "policyStatus",
                                      "versionId"};
    for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
        if (s3_has(r, sub[i]))
            return sub[i];
    }
    return NULL;
}

/* With an external store: the request goes to it whole (s3_proxy.c), after trainyard's own
   checks; an upload's body is finished (decoded and verified) first. */
static void s3_forward(struct http_request *req, struct http_response *resp,
                       const struct route_ctx *rc, struct objstore *os, const struct s3_req *r)
{
    const char *pairs[2 * S3_MAX_QP];
    struct s3_body *b = NULL;
    struct ty_err err;

    ty_err_clear(&err);
    for (int i = 0; i < r->nqp; i++) {
        pairs[2 * i] = r->qp[i].name;
        pairs[2 * i + 1] = r->qp[i].value;
    }
    if (strcmp(req->method, "PUT") == 0 && r->key[0] && !http_header(req, "x-amz-copy-source") &&
        !(b = s3_finish_body(req, resp, os, r)))
        return;
    if (s3_proxy(req, resp, rc->s3_remote, os, r->bucket, r->key, pairs, (size_t)r->nqp, b, &err) !=
        0)
        s3_error_from(req, resp, &err, r);
}

void s3_route(struct http_request *req, struct http_response *resp, const struct route_ctx *rc)
{
    struct s3_req r;
    struct sigv4_auth auth;
    struct objstore *os;
    struct ty_err err;
    const char *m = req->method, *sub;
    int streamed = req->sink.write == s3_body_write || req->sink.write == s3_discard;

    ty_err_clear(&err);
    s3_parse_target(req, &r);
    if (s3_auth(req, resp, &r, rc, streamed, &auth) != 0)
        goto out;
    if (req->sink.write == s3_discard) { /* failed at header time, passes now: a race */
        s3_error(req, resp, "InternalError", "We encountered an internal error. Please try again.",
                 &r, NULL);
        goto out;
    }
    os = worker_self()->os;
    if (r.bad_target) {
        s3_error(req, resp, "InvalidURI", "Couldn't parse the specified URI.", &r, NULL);
        goto out;
    }
    if (r.key[0] && !objstore_key_ok(r.key)) {
        if (strlen(r.key) > OBJSTORE_MAX_KEY) {
            char sz[24];
            struct s3_errx x = {{"Size", "MaxSizeAllowed"}, {sz, "1024"}, 2};
            snprintf(sz, sizeof(sz), "%zu", strlen(r.key));
            s3_error(req, resp, "KeyTooLongError", "Your key is too long", &r, &x);
        } else {
            s3_error(req, resp, "InvalidArgument", "Object key is not valid UTF-8", &r, NULL);
        }
        goto out;
    }
    if (req->too_big && !streamed) {
        s3_error(req, resp, "EntityTooLarge",
                 "Your proposed upload exceeds the maximum allowed size", &r, NULL);
        goto out;
    }
    if (!rc->s3_remote && (sub = s3_unsupported(&r)) != NULL && strcmp(sub, "versionId") != 0) {
        if (strcmp(m, "GET") == 0 && strcmp(sub, "tagging") == 0 && r.key[0]) {
            struct ty_buf b;
            ty_buf_init(&b, 1024);
            ty_buf_puts(&b, S3_XML_HDR "<Tagging xmlns=\"" S3_NS "\"><TagSet></TagSet></Tagging>");
            s3_xml_resp(req, resp, 200, &b);
        } else {
            char msg[128];
            snprintf(msg, sizeof(msg), "The '%s' sub-resource is not implemented by trainyard",
                     sub);
            s3_error(req, resp, "NotImplemented", msg, &r, NULL);
        }
        goto out;
    }
    {
        /* IAM policies decide, as for every other service (authz.c) */
        char action[64], resource[2200];
        s3_iam_action(m, &r, action, sizeof(action), resource, sizeof(resource));
        if (authz_check(worker_self()->store, worker_self()->principal, action, resource, NULL, 0,
                        &err) != 0) {
            if (err.code == TY_EDENIED)
                s3_error(req, resp, "AccessDenied", "Access Denied", &r, NULL);
            else
                s3_error_from(req, resp, &err, &r);
            goto out;
        }
    }
    if (strcmp(m, "PUT") == 0 && r.key[0] && http_header(req, "x-amz-copy-source")) {
        /* a copy reads its source: the caller needs s3:GetObject on it too, as on S3 */
        char sb[256], resource[2200], *dec, *sk;
        if (s3_copy_source(http_header(req, "x-amz-copy-source"), sb, sizeof(sb), &dec, &sk)) {
            s3_error(req, resp, "InvalidArgument", S3_BAD_COPY_SOURCE, &r, NULL);
            goto out;
        }
        snprintf(resource, sizeof(resource), "arn:aws:s3:::%s/%s", sb, sk);
        free(dec);
        if (authz_check(worker_self()->store, worker_self()->principal, "s3:GetObject", resource,
                        NULL, 0, &err) != 0) {
            if (err.code == TY_EDENIED)
                s3_error(req, resp, "AccessDenied", "Access Denied", &r, NULL);
            else
                s3_error_from(req, resp, &err, &r);
            goto out;
        }
    }
    if (rc->s3_remote) {
        s3_forward(req, resp, rc, os, &r);
        goto out;
    }
    if (!r.bucket[0]) {
        if (strcmp(m, "GET") == 0)
            s3_list_buckets(req, resp, os, rc);
        else
            s3_error(req, resp, "MethodNotAllowed",
                     "The specified method is not allowed against this resource.", &r, NULL);
        goto out;
    }
    if (!r.key[0]) {
        if (strcmp(m, "PUT") == 0 && !r.nqp) {
            s3_create_bucket(req, resp, os, &r, &auth);
        } else if (strcmp(m, "HEAD") == 0) {
            struct objstore_bucket bk;
            if (objstore_bucket_get(os, r.bucket, &bk, &err) != 0) {
                s3_error_from(req, resp, &err, &r);
            } else {
                s3_empty(req, resp, 200);
                http_response_header(resp, "x-amz-bucket-region", bk.region);
            }
        } else if (strcmp(m, "DELETE") == 0 && !r.nqp) {
            if (objstore_bucket_delete(os, r.bucket, &err) != 0)
                s3_error_from(req, resp, &err, &r);
            else
                s3_empty(req, resp, 204);
        } else if (strcmp(m, "GET") == 0 && s3_has(&r, "location")) {
            struct objstore_bucket bk;
            if (objstore_bucket_get(os, r.bucket, &bk, &err) != 0) {
                s3_error_from(req, resp, &err, &r);
            } else {
                struct ty_buf b;
                ty_buf_init(&b, 1024);
                ty_buf_printf(&b,
                              S3_XML_HDR "<LocationConstraint xmlns=\"" S3_NS
                                         "\">%s</LocationConstraint>",
                              strcmp(bk.region, "us-east-1") == 0 ? "" : bk.region);
                s3_xml_resp(req, resp, 200, &b);
            }
        } else if (strcmp(m, "GET") == 0 && s3_has(&r, "versioning")) {
            if (objstore_bucket_get(os, r.bucket, NULL, &err) != 0) {
                s3_error_from(req, resp, &err, &r);
            } else {
                struct ty_buf b;
                ty_buf_init(&b, 1024);
                ty_buf_puts(&b, S3_XML_HDR "<VersioningConfiguration xmlns=\"" S3_NS "\"/>");
                s3_xml_resp(req, resp, 200, &b);
            }
        } else if (strcmp(m, "GET") == 0 && s3_has(&r, "uploads")) {
            s3_list_uploads(req, resp, os, &r);
        } else if (strcmp(m, "GET") == 0) {
            const char *lt = s3_qget(&r, "list-type");
            s3_list_objects(req, resp, os, &r, lt && strcmp(lt, "2") == 0);
        } else if (strcmp(m, "POST") == 0 && s3_has(&r, "delete")) {
            s3_delete_objects(req, resp, os, &r);
        } else {
            s3_error(req, resp, "MethodNotAllowed",
                     "The specified method is not allowed against this resource.", &r, NULL);
        }
        goto out;
    }
    /* objects */
    if (strcmp(m, "PUT") == 0) {
        const char *cs = http_header(req, "x-amz-copy-source");
        if (s3_has(&r, "uploadId")) {
            if (cs)
                s3_upload_part_copy(req, resp, os, &r, cs);
            else
                s3_upload_part(req, resp, os, &r);
        } else if (cs) {
            s3_copy_object(req, resp, os, &r, cs);
        } else {
            s3_put_object(req, resp, os, &r);
        }
    } else if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0) {
        const char *id = s3_qget(&r, "uploadId");
        if (id && strcmp(m, "GET") == 0)
            s3_list_parts(req, resp, os, &r, id);
        else
            s3_get_object(req, resp, os, &r, strcmp(m, "HEAD") == 0);
    } else if (strcmp(m, "DELETE") == 0) {
        const char *id = s3_qget(&r, "uploadId");
        if (id) {
            if (objstore_mpu_abort(os, r.bucket, r.key, id, &err) != 0)
                s3_error_from(req, resp, &err, &r);
            else
                s3_empty(req, resp, 204);
        } else {
            s3_delete_object(req, resp, os, &r);
        }
    } else if (strcmp(m, "POST") == 0 && s3_has(&r, "uploads")) {
        s3_create_upload(req, resp, os, &r);
    } else if (strcmp(m, "POST") == 0 && s3_has(&r, "uploadId")) {
        s3_complete_upload(req, resp, os, &r, s3_qget(&r, "uploadId"));
    } else {
        s3_error(req, resp, "MethodNotAllowed",
                 "The specified method is not allowed against this resource.", &r, NULL);
    }
out:
    /* an upload's temp file that was not committed goes now, before the answer leaves, so that
       a client that saw the answer never sees the file */
    if (req->sink.write == s3_body_write && req->sink.free) {
        req->sink.free(req->sink.ctx);
        req->sink.free = NULL;
        req->sink.ctx = NULL;
    }
    ty_log(TY_LOG_DEBUG, "s3.request", "req=%s method=%s status=%d", req->request_id, m,
           resp->status);
    s3_req_cleanup(&r);
}
