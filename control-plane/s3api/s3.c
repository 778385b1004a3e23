/*
 * s3.c - the S3 REST API (see s3.h): the request target, S3's responses and XML errors, and
 * the dispatch table from (method, target, sub-resource) to an operation.
 *
 * Order of checks, as S3 does it: request target (bucket, key, sub-resource) -> signature
 * present -> known access key -> valid signature and clock (s3_auth.c) -> the operation -> the
 * body (streamed bodies are verified by s3_body_finish: framing, Content-MD5,
 * x-amz-content-sha256, checksums, chunk signatures) -> the object store. Every error is S3's
 * XML error document. The operations live in s3_bucket.c and s3_object.c.
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
#include "ty_codec.h"
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

/* ---- small helpers ------------------------------------------------------------------------- */

/* Percent-decodes n bytes of p into a new string; plus_space turns '+' into ' '. NULL when
   malformed or when the result holds a NUL. */
char *s3__pct_decode(const char *p, size_t n, int plus_space)
{
    char *o = malloc(n + 1);
    int flags = TY_PCT_NO_NUL | (plus_space ? TY_PCT_PLUS_SPACE : 0);

    if (o && ty_pct_decode(p, n, flags, o, n + 1, NULL) != 0) {
        free(o);
        return NULL;
    }
    return o;
}

const char *s3__qget(const struct s3_req *r, const char *name)
{
    for (int i = 0; i < r->nqp; i++) {
        if (strcmp(r->qp[i].name, name) == 0)
            return r->qp[i].value;
    }
    return NULL;
}

int s3__int(const char *s)
{
    long v = strtol(s, NULL, 10);
    return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

int s3__has(const struct s3_req *r, const char *name)
{
    return s3__qget(r, name) != NULL;
}

void s3__req_cleanup(struct s3_req *r)
{
    free(r->key);
    for (int i = 0; i < r->nqp; i++) {
        free(r->qp[i].name);
        free(r->qp[i].value);
    }
    memset(r, 0, sizeof(*r));
}

/* The virtual-host bucket of a Host header: "<bucket>.localhost[:port]" or "<bucket>.s3.*". */
int s3__vhost_bucket(const char *host, char *out, size_t n)
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

void s3__parse_target(const struct http_request *req, struct s3_req *r)
{
    const char *path = req->path, *q = req->query;
    char vb[64];
    int vhost;

    memset(r, 0, sizeof(*r));
    vhost = s3__vhost_bucket(http_header(req, "Host"), vb, sizeof(vb));
    if (*path == '/')
        path++;
    if (vhost) {
        snprintf(r->bucket, sizeof(r->bucket), "%s", vb);
        r->key = s3__pct_decode(path, strlen(path), 0);
    } else {
        const char *slash = strchr(path, '/');
        size_t bl = slash ? (size_t)(slash - path) : strlen(path);
        char *b = s3__pct_decode(path, bl, 0);
        if (!b || strlen(b) >= sizeof(r->bucket)) {
            r->bad_target = 1;
            snprintf(r->bucket, sizeof(r->bucket), "%.*s", (int)(bl > 200 ? 200 : bl), path);
        } else {
            snprintf(r->bucket, sizeof(r->bucket), "%s", b);
        }
        free(b);
        r->key = slash ? s3__pct_decode(slash + 1, strlen(slash + 1), 0) : strdup("");
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
            p->name = s3__pct_decode(q, nl, 1);
            p->value = eq ? s3__pct_decode(eq + 1, len - nl - 1, 1) : strdup("");
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

void s3__xml_esc(struct ty_buf *b, const char *s)
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
void s3__url_esc(struct ty_buf *b, const char *s)
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
void s3__list_esc(struct ty_buf *b, const char *s, int url)
{
    if (url) {
        struct ty_buf t;
        ty_buf_init(&t, 16384);
        s3__url_esc(&t, s);
        s3__xml_esc(b, t.data ? t.data : "");
        ty_buf_cleanup(&t);
    } else {
        s3__xml_esc(b, s);
    }
}

void s3__iso8601(int64_t ms, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    size_t len;
    gmtime_r(&t, &tm);
    len = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    if (len + 6 <= n)
        snprintf(out + len, n - len, ".%03uZ", (unsigned)((ms % 1000 + 1000) % 1000));
}

void s3__http_date(int64_t ms, char *out, size_t n)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* ---- responses ----------------------------------------------------------------------------- */

void s3__common_headers(struct http_request *req, struct http_response *resp)
{
    http_response_header(resp, "x-amz-request-id", req->request_id);
    http_response_header(resp, "x-amz-id-2", req->request_id);
    http_response_header(resp, "Server", "trainyard");
}

void s3__xml_resp(struct http_request *req, struct http_response *resp, int status,
                  struct ty_buf *b)
{
    resp->status = status;
    resp->content_type = "application/xml";
    resp->len = b->len;
    resp->body = ty_buf_steal(b);
    s3__common_headers(req, resp);
}

void s3__empty(struct http_request *req, struct http_response *resp, int status)
{
    resp->status = status;
    resp->body = NULL;
    resp->len = 0;
    s3__common_headers(req, resp);
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
    {"MissingContentLength", 411}, {"ConditionalRequestConflict", 409},
};

static int s3_status_of(const char *code)
{
    for (size_t i = 0; i < sizeof(s3_codes) / sizeof(s3_codes[0]); i++) {
        if (strcmp(s3_codes[i].code, code) == 0)
            return s3_codes[i].status;
    }
    return 400;
}

void s3__error(struct http_request *req, struct http_response *resp, const char *code,
               const char *msg, const struct s3_req *r, const struct s3_errx *x)
{
    struct ty_buf b;
    int status = s3_status_of(code);

    ty_log(TY_LOG_DEBUG, "s3.error", "req=%s code=%s msg=\"%s\"", req->request_id, code, msg);
    if (strcmp(req->method, "HEAD") == 0) {
        s3__empty(req, resp, status);
        return;
    }
    ty_buf_init(&b, 1024 * 1024);
    ty_buf_puts(&b, S3_XML_HDR "<Error><Code>");
    s3__xml_esc(&b, code);
    ty_buf_puts(&b, "</Code><Message>");
    s3__xml_esc(&b, msg);
    ty_buf_puts(&b, "</Message>");
    if (r && r->bucket[0] && strcmp(code, "NoSuchBucket") == 0) {
        ty_buf_puts(&b, "<BucketName>");
        s3__xml_esc(&b, r->bucket);
        ty_buf_puts(&b, "</BucketName>");
    }
    if (r && r->key && r->key[0] && strcmp(code, "NoSuchKey") == 0) {
        ty_buf_puts(&b, "<Key>");
        s3__xml_esc(&b, r->key);
        ty_buf_puts(&b, "</Key>");
    }
    for (int i = 0; x && i < x->n; i++) {
        ty_buf_printf(&b, "<%s>", x->name[i]);
        s3__xml_esc(&b, x->value[i]);
        ty_buf_printf(&b, "</%s>", x->name[i]);
    }
    ty_buf_puts(&b, "<Resource>");
    s3__xml_esc(&b, req->path);
    ty_buf_puts(&b, "</Resource><RequestId>");
    ty_buf_puts(&b, req->request_id);
    ty_buf_puts(&b, "</RequestId><HostId>");
    ty_buf_puts(&b, req->request_id);
    ty_buf_puts(&b, "</HostId></Error>");
    s3__xml_resp(req, resp, status, &b);
}

/* The wire form of a ty_err: err->field holds S3's code when the layer below chose one. */
void s3__error_from(struct http_request *req, struct http_response *resp, const struct ty_err *err,
                    const struct s3_req *r)
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
    s3__error(req, resp, code,
              err->msg[0] ? err->msg : "We encountered an internal error. Please try again.", r,
              NULL);
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
        if (s3__has(r, sub[i]))
            return sub[i];
    }
    return NULL;
}

/* With an external store: the request goes to it whole (s3_proxy.c), after trainyard's own
   checks; an upload's body is finished (decoded and verified) first. */
static void s3_forward(struct http_request *req, struct http_response *resp,
                       const struct front_ctx *rc, struct objstore *os, const struct s3_req *r)
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
        !(b = s3__finish_body(req, resp, os, r)))
        return;
    if (s3_proxy(req, resp, rc->s3_remote, os, r->bucket, r->key, pairs, (size_t)r->nqp, b, &err) !=
        0)
        s3__error_from(req, resp, &err, r);
}

/* ---- the dispatch table ---------------------------------------------------------------- */

/* One request on its way to an operation. */
struct s3_call {
    struct http_request *req;
    struct http_response *resp;
    const struct front_ctx *rc;
    struct objstore *os;
    struct s3_req *r;
    const struct sigv4_auth *auth;
};

static void s3_op_list_buckets(const struct s3_call *c)
{
    s3__list_buckets(c->req, c->resp, c->os, c->rc);
}

static void s3_op_create_bucket(const struct s3_call *c)
{
    s3__create_bucket(c->req, c->resp, c->os, c->r, c->rc->region);
}

static void s3_op_head_bucket(const struct s3_call *c)
{
    struct objstore_bucket bk;
    struct ty_err err;

    ty_err_clear(&err);
    if (objstore_bucket_get(c->os, c->r->bucket, &bk, &err) != 0) {
        s3__error_from(c->req, c->resp, &err, c->r);
        return;
    }
    s3__empty(c->req, c->resp, 200);
    http_response_header(c->resp, "x-amz-bucket-region", bk.region);
}

static void s3_op_delete_bucket(const struct s3_call *c)
{
    struct ty_err err;

    ty_err_clear(&err);
    if (objstore_bucket_delete(c->os, c->r->bucket, &err) != 0)
        s3__error_from(c->req, c->resp, &err, c->r);
    else
        s3__empty(c->req, c->resp, 204);
}

static void s3_op_bucket_location(const struct s3_call *c)
{
    struct objstore_bucket bk;
    struct ty_err err;
    struct ty_buf b;

    ty_err_clear(&err);
    if (objstore_bucket_get(c->os, c->r->bucket, &bk, &err) != 0) {
        s3__error_from(c->req, c->resp, &err, c->r);
        return;
    }
    ty_buf_init(&b, 1024);
    ty_buf_printf(&b, S3_XML_HDR "<LocationConstraint xmlns=\"" S3_NS "\">%s</LocationConstraint>",
                  strcmp(bk.region, "us-east-1") == 0 ? "" : bk.region);
    s3__xml_resp(c->req, c->resp, 200, &b);
}

static void s3_op_bucket_versioning(const struct s3_call *c)
{
    struct ty_err err;
    struct ty_buf b;

    ty_err_clear(&err);
    if (objstore_bucket_get(c->os, c->r->bucket, NULL, &err) != 0) {
        s3__error_from(c->req, c->resp, &err, c->r);
        return;
    }
    ty_buf_init(&b, 1024);
    ty_buf_puts(&b, S3_XML_HDR "<VersioningConfiguration xmlns=\"" S3_NS "\"/>");
    s3__xml_resp(c->req, c->resp, 200, &b);
}

static void s3_op_list_uploads(const struct s3_call *c)
{
    s3__list_uploads(c->req, c->resp, c->os, c->r);
}

static void s3_op_get_acl(const struct s3_call *c)
{
    s3__get_acl(c->req, c->resp, c->os, c->r);
}

static void s3_op_list_objects(const struct s3_call *c)
{
    const char *lt = s3__qget(c->r, "list-type");
    s3__list_objects(c->req, c->resp, c->os, c->r, lt && strcmp(lt, "2") == 0);
}

static void s3_op_delete_objects(const struct s3_call *c)
{
    s3__delete_objects(c->req, c->resp, c->os, c->r);
}

static void s3_op_upload_part_copy(const struct s3_call *c)
{
    s3__upload_part_copy(c->req, c->resp, c->os, c->r, http_header(c->req, "x-amz-copy-source"));
}

static void s3_op_upload_part(const struct s3_call *c)
{
    s3__upload_part(c->req, c->resp, c->os, c->r);
}

static void s3_op_copy_object(const struct s3_call *c)
{
    s3__copy_object(c->req, c->resp, c->os, c->r, http_header(c->req, "x-amz-copy-source"));
}

static void s3_op_put_object(const struct s3_call *c)
{
    s3__put_object(c->req, c->resp, c->os, c->r);
}

static void s3_op_list_parts(const struct s3_call *c)
{
    s3__list_parts(c->req, c->resp, c->os, c->r, s3__qget(c->r, "uploadId"));
}

static void s3_op_get_object(const struct s3_call *c)
{
    s3__get_object(c->req, c->resp, c->os, c->r, 0);
}

static void s3_op_head_object(const struct s3_call *c)
{
    s3__get_object(c->req, c->resp, c->os, c->r, 1);
}

static void s3_op_abort_upload(const struct s3_call *c)
{
    struct ty_err err;

    ty_err_clear(&err);
    if (objstore_mpu_abort(c->os, c->r->bucket, c->r->key, s3__qget(c->r, "uploadId"), &err) != 0)
        s3__error_from(c->req, c->resp, &err, c->r);
    else
        s3__empty(c->req, c->resp, 204);
}

static void s3_op_delete_object(const struct s3_call *c)
{
    s3__delete_object(c->req, c->resp, c->os, c->r);
}

static void s3_op_create_upload(const struct s3_call *c)
{
    s3__create_upload(c->req, c->resp, c->os, c->r);
}

static void s3_op_complete_upload(const struct s3_call *c)
{
    s3__complete_upload(c->req, c->resp, c->os, c->r, s3__qget(c->r, "uploadId"));
}

/* What a row applies to. */
enum s3_level { S3_SERVICE, S3_BUCKET, S3_OBJECT };
#define S3_NOQUERY 0x1u /* only without any query parameter */
#define S3_COPY    0x2u /* only with an x-amz-copy-source header */

struct s3_op_row {
    const char *method;
    enum s3_level level;
    const char *sub; /* a sub-resource the request must have; NULL: any */
    unsigned flags;  /* S3_NOQUERY, S3_COPY */
    void (*fn)(const struct s3_call *c);
};

/* The operations: the first row that matches serves; none is 405 MethodNotAllowed. */
static const struct s3_op_row s3_ops[] = {
    {"GET", S3_SERVICE, NULL, 0, s3_op_list_buckets},
    {"PUT", S3_BUCKET, NULL, S3_NOQUERY, s3_op_create_bucket},
    {"HEAD", S3_BUCKET, NULL, 0, s3_op_head_bucket},
    {"DELETE", S3_BUCKET, NULL, S3_NOQUERY, s3_op_delete_bucket},
    {"GET", S3_BUCKET, "location", 0, s3_op_bucket_location},
    {"GET", S3_BUCKET, "versioning", 0, s3_op_bucket_versioning},
    {"GET", S3_BUCKET, "uploads", 0, s3_op_list_uploads},
    {"GET", S3_BUCKET, "acl", 0, s3_op_get_acl},
    {"GET", S3_BUCKET, NULL, 0, s3_op_list_objects},
    {"POST", S3_BUCKET, "delete", 0, s3_op_delete_objects},
    {"PUT", S3_OBJECT, "uploadId", S3_COPY, s3_op_upload_part_copy},
    {"PUT", S3_OBJECT, "uploadId", 0, s3_op_upload_part},
    {"PUT", S3_OBJECT, NULL, S3_COPY, s3_op_copy_object},
    {"PUT", S3_OBJECT, NULL, 0, s3_op_put_object},
    {"GET", S3_OBJECT, "uploadId", 0, s3_op_list_parts},
    {"GET", S3_OBJECT, "acl", 0, s3_op_get_acl},
    {"GET", S3_OBJECT, NULL, 0, s3_op_get_object},
    {"HEAD", S3_OBJECT, NULL, 0, s3_op_head_object},
    {"DELETE", S3_OBJECT, "uploadId", 0, s3_op_abort_upload},
    {"DELETE", S3_OBJECT, NULL, 0, s3_op_delete_object},
    {"POST", S3_OBJECT, "uploads", 0, s3_op_create_upload},
    {"POST", S3_OBJECT, "uploadId", 0, s3_op_complete_upload},
};

static void s3_dispatch(const struct s3_call *c)
{
    const struct s3_req *r = c->r;
    enum s3_level level = !r->bucket[0] ? S3_SERVICE : !r->key[0] ? S3_BUCKET : S3_OBJECT;
    int copy = http_header(c->req, "x-amz-copy-source") != NULL;

    for (size_t i = 0; i < sizeof(s3_ops) / sizeof(s3_ops[0]); i++) {
        const struct s3_op_row *o = &s3_ops[i];
        if (o->level != level || strcmp(o->method, c->req->method) != 0 ||
            (o->sub && !s3__has(r, o->sub)) || ((o->flags & S3_NOQUERY) && r->nqp) ||
            ((o->flags & S3_COPY) && !copy))
            continue;
        o->fn(c);
        return;
    }
    s3__error(c->req, c->resp, "MethodNotAllowed",
              "The specified method is not allowed against this resource.", r, NULL);
}

/* ---- the checks before an operation ------------------------------------------------------ */

/* The target's own errors: an undecodable URI, a bad key, a body over the limit. 0, or -1
   with the error written. */
static int s3_check_target(struct http_request *req, struct http_response *resp,
                           const struct s3_req *r, int streamed)
{
    if (r->bad_target) {
        s3__error(req, resp, "InvalidURI", "Couldn't parse the specified URI.", r, NULL);
        return -1;
    }
    if (r->key[0] && !objstore_key_ok(r->key)) {
        if (strlen(r->key) > OBJSTORE_MAX_KEY) {
            char sz[24];
            struct s3_errx x = {{"Size", "MaxSizeAllowed"}, {sz, "1024"}, 2};
            snprintf(sz, sizeof(sz), "%zu", strlen(r->key));
            s3__error(req, resp, "KeyTooLongError", "Your key is too long", r, &x);
        } else {
            /* AWS's answer to a key that is not UTF-8 */
            s3__error(req, resp, "InvalidURI", "Couldn't parse the specified URI.", r, NULL);
        }
        return -1;
    }
    if (req->too_big && !streamed) {
        s3__error(req, resp, "EntityTooLarge",
                  "Your proposed upload exceeds the maximum allowed size", r, NULL);
        return -1;
    }
    return 0;
}

/* A sub-resource trainyard does not serve (the embedded store only): 1 with the answer written
   (an empty TagSet for GET ?tagging on an object, else 501 NotImplemented), else 0. GET ?acl
   is served (the owner's grant). SSE-C is refused, not ignored: the embedded store would keep
   the bytes unencrypted and serve them without the customer's key. */
static int s3_check_unsupported(struct http_request *req, struct http_response *resp,
                                const struct s3_req *r)
{
    const char *sub = s3_unsupported(r);

    if (http_header(req, "x-amz-server-side-encryption-customer-algorithm") ||
        http_header(req, "x-amz-copy-source-server-side-encryption-customer-algorithm")) {
        s3__error(req, resp, "NotImplemented",
                  "Server-side encryption with customer-provided keys (SSE-C) is not implemented "
                  "by trainyard's object store",
                  r, NULL);
        return 1;
    }
    if (!sub || strcmp(sub, "versionId") == 0)
        return 0;
    if (strcmp(req->method, "GET") == 0 && strcmp(sub, "acl") == 0)
        return 0; /* the owner's grant (s3__get_acl) */
    if (strcmp(req->method, "GET") == 0 && strcmp(sub, "tagging") == 0 && r->key[0]) {
        struct ty_buf b;
        ty_buf_init(&b, 1024);
        ty_buf_puts(&b, S3_XML_HDR "<Tagging xmlns=\"" S3_NS "\"><TagSet></TagSet></Tagging>");
        s3__xml_resp(req, resp, 200, &b);
    } else {
        char msg[128];
        snprintf(msg, sizeof(msg), "The '%s' sub-resource is not implemented by trainyard", sub);
        s3__error(req, resp, "NotImplemented", msg, r, NULL);
    }
    return 1;
}

/* authz_check of action on resource for the worker's caller, with s3:prefix (the request's
   prefix, "" when it names none, as on S3) for a listing. 0, or -1 with the error written. */
static int s3_allowed(struct http_request *req, struct http_response *resp, const struct s3_req *r,
                      const char *action, const char *resource)
{
    struct worker *w = worker_self();
    struct iam_ctx_entry ctx[16];
    size_t n = 0;
    const char *v, *auth = http_header(req, "Authorization");
    struct ty_err err;

    /* S3's own keys, as its service authorization reference lists them for what we serve */
    if (strcmp(action, "s3:ListBucket") == 0) {
        ctx[n++] =
            (struct iam_ctx_entry){"s3:prefix", NULL, 0, (v = s3__qget(r, "prefix")) ? v : ""};
        if ((v = s3__qget(r, "delimiter")) != NULL)
            ctx[n++] = (struct iam_ctx_entry){"s3:delimiter", NULL, 0, v};
        if ((v = s3__qget(r, "max-keys")) != NULL)
            ctx[n++] = (struct iam_ctx_entry){"s3:max-keys", NULL, 0, v};
    }
    if (strcmp(action, "s3:PutObject") == 0) {
        static const char *const hk[][2] = {
            {"x-amz-acl", "s3:x-amz-acl"},
            {"x-amz-server-side-encryption", "s3:x-amz-server-side-encryption"},
            {"x-amz-storage-class", "s3:x-amz-storage-class"},
            {"x-amz-metadata-directive", "s3:x-amz-metadata-directive"},
            {"x-amz-copy-source", "s3:x-amz-copy-source"}};
        for (size_t i = 0; i < sizeof(hk) / sizeof(hk[0]); i++)
            if ((v = http_header(req, hk[i][0])) != NULL)
                ctx[n++] = (struct iam_ctx_entry){hk[i][1], NULL, 0, v};
    }
    if ((v = http_header(req, "x-amz-content-sha256")) != NULL)
        ctx[n++] = (struct iam_ctx_entry){"s3:x-amz-content-sha256", NULL, 0, v};
    /* how the request was signed: AWS4-HMAC-SHA256 or AWS (SigV2), in a header or a query */
    ctx[n++] = (struct iam_ctx_entry){"s3:signatureversion", NULL, 0,
                                      (auth && strncmp(auth, "AWS4-", 5) == 0) ||
                                              s3__qget(r, "X-Amz-Algorithm")
                                          ? "AWS4-HMAC-SHA256"
                                          : "AWS"};
    ctx[n++] =
        (struct iam_ctx_entry){"s3:authType", NULL, 0, auth ? "REST-HEADER" : "REST-QUERY-STRING"};
    ty_err_clear(&err);
    if (authz_check(w->store, w->principal, action, resource, ctx, n, &err) == 0)
        return 0;
    if (err.code == TY_EDENIED)
        s3__error(req, resp, "AccessDenied", "Access Denied", r, NULL);
    else
        s3__error_from(req, resp, &err, r);
    return -1;
}

/* IAM policies decide, as for every other service (authz.c); a copy reads its source, so the
   caller needs s3:GetObject on it too, as on S3. 0, or -1 with the error written. */
static int s3_authorize(struct http_request *req, struct http_response *resp,
                        const struct s3_req *r)
{
    char action[64], resource[2200], sb[256], *dec, *sk;
    const char *cs = http_header(req, "x-amz-copy-source");

    if (strcmp(req->method, "POST") == 0 && !r->key[0] && s3__has(r, "delete"))
        return 0; /* DeleteObjects: each key is authorised as S3 does (s3__delete_objects) */
    s3__iam_action(req->method, r, action, sizeof(action), resource, sizeof(resource));
    if (s3_allowed(req, resp, r, action, resource) != 0)
        return -1;
    if (strcmp(req->method, "PUT") != 0 || !r->key[0] || !cs)
        return 0;
    if (s3__copy_source(cs, sb, sizeof(sb), &dec, &sk)) {
        s3__error(req, resp, "InvalidArgument", S3_BAD_COPY_SOURCE, r, NULL);
        return -1;
    }
    snprintf(resource, sizeof(resource), "arn:aws:s3:::%s/%s", sb, sk);
    free(dec);
    return s3_allowed(req, resp, r, "s3:GetObject", resource);
}

/*
 * The confused-deputy check tools send: x-amz-expected-bucket-owner (the bucket the request
 * names) and x-amz-source-expected-bucket-owner (a copy's source) must be the account that owns
 * the bucket, this server's account (every bucket here is its), or the answer is S3's 403
 * AccessDenied and nothing is done. 0, or -1 with the error written.
 */
static int s3_expected_owner(struct http_request *req, struct http_response *resp,
                             const struct s3_req *r, const struct front_ctx *rc)
{
    static const char *const hdrs[] = {"x-amz-expected-bucket-owner",
                                       "x-amz-source-expected-bucket-owner"};

    for (size_t i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
        const char *v = http_header(req, hdrs[i]);
        if (v && strcmp(v, rc->account_id) != 0) {
            s3__error(req, resp, "AccessDenied", "Access Denied", r, NULL);
            return -1;
        }
    }
    return 0;
}

/* Every S3 answer (objects, listings, errors; embedded or proxied store) is inert in a browser:
   the console shares this origin, so a tenant's HTML, SVG or XHTML object must never run as it.
   CSP sandbox (no allow-scripts, no allow-same-origin) gives the document an opaque origin
   and runs none of its scripts; nosniff keeps a browser from guessing an active type. Added
   last, after any s3_drop_headers, with room made when the table is full (the last headers,
   user metadata, give way: the sandbox never does). */
static void s3_sandbox_headers(struct http_response *resp)
{
    while (resp->nhdr > HTTP_MAX_RESP_HEADERS - 2) {
        resp->nhdr--;
        free(resp->hdr_value[resp->nhdr]);
        free(resp->hdr_name_dyn[resp->nhdr]);
        resp->hdr_value[resp->nhdr] = NULL;
        resp->hdr_name_dyn[resp->nhdr] = NULL;
    }
    http_response_header(resp, "Content-Security-Policy", "default-src 'none'; sandbox");
    http_response_header(resp, "X-Content-Type-Options", "nosniff");
}

void s3_route(struct http_request *req, struct http_response *resp, const struct front_ctx *rc)
{
    struct s3_req r;
    struct sigv4_auth auth;
    int streamed = req->sink.write == s3_body_write || req->sink.write == s3__discard;
    struct s3_call c = {req, resp, rc, NULL, &r, &auth};

    s3__parse_target(req, &r);
    if (s3__auth(req, resp, &r, rc, streamed, &auth) != 0)
        goto out;
    if (req->sink.write == s3__discard) { /* failed at header time, passes now: a race */
        s3__error(req, resp, "InternalError", "We encountered an internal error. Please try again.",
                  &r, NULL);
        goto out;
    }
    c.os = worker_self()->os;
    if (s3_check_target(req, resp, &r, streamed) != 0)
        goto out;
    if (!rc->s3_remote && s3_check_unsupported(req, resp, &r))
        goto out;
    if (s3_authorize(req, resp, &r) != 0 || s3_expected_owner(req, resp, &r, rc) != 0)
        goto out;
    if (rc->s3_remote && strcmp(req->method, "POST") == 0 && !r.key[0] && s3__has(&r, "delete") &&
        s3__delete_keys_allowed(req, resp, &r) != 0)
        goto out;
    if (rc->s3_remote)
        s3_forward(req, resp, rc, c.os, &r);
    else
        s3_dispatch(&c);
out:
    /* an upload's temp file that was not committed goes now, before the answer leaves, so that
       a client that saw the answer never sees the file */
    if (req->sink.write == s3_body_write && req->sink.free) {
        req->sink.free(req->sink.ctx);
        req->sink.free = NULL;
        req->sink.ctx = NULL;
    }
    s3_sandbox_headers(resp);
    ty_log(TY_LOG_DEBUG, "s3.request", "req=%s method=%s status=%d", req->request_id, req->method,
           resp->status);
    s3__req_cleanup(&r);
}
