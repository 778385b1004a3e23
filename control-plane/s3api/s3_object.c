/*
 * s3_object.c - S3's object operations: PutObject, CopyObject, GetObject/HeadObject (ranges,
 * conditions), DeleteObject, and multipart uploads (create, upload part [copy], complete,
 * list parts), with the headers kept with an object.
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
    "x-amz-storage-class",
    "x-amz-website-redirect-location",
    "x-amz-tagging-count",
};

/*
 * Keeps user metadata value v (the header's bytes) as h[name]: a string when v is UTF-8, else
 * {"latin1": v read as ISO-8859-1} so that the same bytes go back out (JSON holds only UTF-8).
 */
static void s3_meta_set(json_t *h, const char *name, const char *v)
{
    json_t *s = json_string(v);
    char *u;
    size_t k = 0;

    if (s) {
        json_object_set_new(h, name, s);
        return;
    }
    u = malloc(2 * strlen(v) + 1);
    if (!u)
        return;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p < 0x80) {
            u[k++] = (char)*p;
        } else {
            u[k++] = (char)(0xc0 | (*p >> 6));
            u[k++] = (char)(0x80 | (*p & 0x3f));
        }
    }
    u[k] = '\0';
    json_object_set_new(h, name, json_pack("{s:s}", "latin1", u));
    free(u);
}

/* The bytes of a value s3_meta_set kept as {"latin1": ...}. new (free()), or NULL. */
static char *s3_meta_bytes(const json_t *v)
{
    const char *s = json_string_value(json_object_get(v, "latin1"));
    char *out;
    size_t k = 0;

    if (!s || !(out = malloc(strlen(s) + 1)))
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xe0) == 0xc0 && (p[1] & 0xc0) == 0x80) {
            out[k++] = (char)(((*p & 0x1f) << 6) | (p[1] & 0x3f));
            p++;
        } else {
            out[k++] = (char)*p;
        }
    }
    out[k] = '\0';
    return out;
}

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
                size_t bl = strlen(buf);
                snprintf(buf + bl, sizeof(buf) - bl, "%s%.*s", bl ? "," : "", (int)n, p);
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
            s3_meta_set(h, low, req->headers[i].value);
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
    s3__http_date(m->mtime_ms, date, sizeof(date));
    http_response_header(resp, "Last-Modified", date);
    http_response_header(resp, "Accept-Ranges", "bytes");
    json_object_foreach(m->hdrs, k, v)
    {
        if (json_is_object(v)) { /* user metadata that was not UTF-8: its own bytes */
            char *raw = s3_meta_bytes(v);
            if (raw)
                http_response_header_dup(resp, k, raw);
            free(raw);
            continue;
        }
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

void s3__malformed(struct http_request *req, struct http_response *resp, const struct s3_req *r)
{
    s3__error(req, resp, "MalformedXML",
              "The XML you provided was not well-formed or did not validate against our "
              "published schema",
              r, NULL);
}

/* ---- operations: objects ------------------------------------------------------------------ */

/* Finishes the request body; on failure writes the error. Returns the body or NULL. */
struct s3_body *s3__finish_body(struct http_request *req, struct http_response *resp,
                                struct objstore *os, const struct s3_req *r)
{
    struct ty_err err;
    struct s3_body *b;

    ty_err_clear(&err);
    b = s3__body(req, os, &err);
    if (!b || s3_body_finish(b, &err) != 0) {
        s3__error_from(req, resp, &err, r);
        return NULL;
    }
    if (req->sink_failed) {
        s3__error(req, resp, "InternalError", "the upload could not be stored", r, NULL);
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

/* The conditions of a conditional write (If-None-Match: *, If-Match: <etag>). OUT: c. 0, or -1
   with the error written (If-None-Match takes only "*", as on AWS). */
static int s3_write_cond(struct http_request *req, struct http_response *resp,
                         const struct s3_req *r, struct objstore_cond *c)
{
    const char *inm = http_header(req, "If-None-Match");

    memset(c, 0, sizeof(*c));
    c->if_match = http_header(req, "If-Match");
    if (c->if_match && !*c->if_match)
        c->if_match = NULL;
    if (inm) {
        const char *p = inm;
        while (*p == ' ')
            p++;
        if (strcmp(p, "*") != 0) {
            struct s3_errx x = {{"Header", "additionalMessage"},
                                {"If-None-Match", "We don't accept the provided value of "
                                                  "If-None-Match header for this API"},
                                2};
            s3__error(req, resp, "NotImplemented",
                      "A header you provided implies functionality that is not implemented", r, &x);
            return -1;
        }
        c->if_none_match = 1;
    }
    return 0;
}

/* Drops the headers already added to resp (a late error replaces a prepared answer). */
static void s3_drop_headers(struct http_response *resp)
{
    for (int i = 0; i < resp->nhdr; i++) {
        free(resp->hdr_value[i]);
        free(resp->hdr_name_dyn[i]);
        resp->hdr_name_dyn[i] = NULL;
    }
    resp->nhdr = 0;
}

void s3__put_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                    const struct s3_req *r)
{
    struct objstore_cond cond;
    struct s3_body *b;
    struct objstore_meta m;
    struct ty_err err;
    json_t *hdrs;
    char etag[64];

    ty_err_clear(&err);
    if (objstore_bucket_get(os, r->bucket, NULL, &err) != 0) {
        s3__error_from(req, resp, &err, r);
        return;
    }
    if (s3_write_cond(req, resp, r, &cond) != 0)
        return;
    if (!(b = s3__finish_body(req, resp, os, r)))
        return;
    hdrs = s3_object_headers(req, 1);
    s3__empty(req, resp, 200);
    s3_checksum_header(resp, b, hdrs);
    if (objstore_put_tmp_cond(os, r->bucket, r->key, s3_body_path(b), s3_body_md5(b),
                              s3_body_size(b), hdrs, &cond, &m, &err) != 0) {
        json_decref(hdrs);
        s3_drop_headers(resp);
        s3__error_from(req, resp, &err, r);
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

    s3__iso8601(mtime_ms, d, sizeof(d));
    ty_buf_init(&b, 4096);
    ty_buf_printf(&b,
                  S3_XML_HDR "<%s xmlns=\"" S3_NS "\"><LastModified>%s</LastModified>"
                             "<ETag>&quot;%s&quot;</ETag></%s>",
                  elem, d, etag, elem);
    s3__xml_resp(req, resp, 200, &b);
}

/* Splits x-amz-copy-source ("[/]bucket/key[?versionId=...]", percent-encoded) into the bucket
   sb (size sbn) and the decoded key. new (*dec, free()): the decoded copy *sk points into.
   0, or -1 when it names no bucket and key. */
int s3__copy_source(const char *src, char *sb, size_t sbn, char **dec, char **sk)
{
    char *q, *k, *slash;

    *dec = s3__pct_decode(src, strlen(src), 0);
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
    const char *pn = s3__qget(r, "partNumber");
    char *e;
    long n = pn ? strtol(pn, &e, 10) : 0;

    if (!pn || !*pn || *e || n < 1 || n > OBJSTORE_MAX_PARTS) {
        s3__error(req, resp, "InvalidArgument",
                  "Part number must be an integer between 1 and 10000, inclusive", r, NULL);
        return -1;
    }
    return (int)n;
}

/* UploadPartCopy: part partNumber of the upload is bytes of the source object (all of it, or
   x-amz-copy-source-range: bytes=first-last). */
void s3__upload_part_copy(struct http_request *req, struct http_response *resp, struct objstore *os,
                          const struct s3_req *r, const char *src)
{
    const char *id = s3__qget(r, "uploadId");
    const char *range = http_header(req, "x-amz-copy-source-range");
    char sb[256], *dec = NULL, *sk;
    struct objstore_part part;
    struct ty_err err;
    uint64_t first = 0, last = UINT64_MAX;
    int n;

    ty_err_clear(&err);
    if ((n = s3_part_number(req, resp, r)) < 0)
        return;
    if (s3__copy_source(src, sb, sizeof(sb), &dec, &sk) != 0) {
        s3__error(req, resp, "InvalidArgument", S3_BAD_COPY_SOURCE, r, NULL);
        return;
    }
    if (range) {
        unsigned long long a, z;
        char tail;
        if (sscanf(range, "bytes=%llu-%llu%c", &a, &z, &tail) != 2 || a > z) {
            free(dec);
            s3__error(req, resp, "InvalidArgument",
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
        s3__error_from(req, resp, &err, r);
        return;
    }
    free(dec);
    s3_copy_result(req, resp, "CopyPartResult", part.mtime_ms, part.etag);
}

void s3__upload_part(struct http_request *req, struct http_response *resp, struct objstore *os,
                     const struct s3_req *r)
{
    const char *id = s3__qget(r, "uploadId");
    struct s3_body *b;
    struct ty_err err;
    char etag[64];
    int n;

    ty_err_clear(&err);
    if ((n = s3_part_number(req, resp, r)) < 0)
        return;
    if (objstore_mpu_get(os, r->bucket, r->key, id, NULL, &err) != 0) {
        s3__error_from(req, resp, &err, r);
        return;
    }
    if (!(b = s3__finish_body(req, resp, os, r)))
        return;
    if (objstore_mpu_put_part(os, r->bucket, r->key, id, n, s3_body_path(b), s3_body_md5(b),
                              s3_body_size(b), &err) != 0) {
        s3__error_from(req, resp, &err, r);
        return;
    }
    s3_body_release(b);
    s3__empty(req, resp, 200);
    snprintf(etag, sizeof(etag), "\"%s\"", s3_body_md5(b));
    http_response_header(resp, "ETag", etag);
    s3_checksum_header(resp, b, NULL);
}

void s3__copy_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                     const struct s3_req *r, const char *src)
{
    char sb[256];
    char *dec, *sk;
    const char *dir = http_header(req, "x-amz-metadata-directive");
    int replace = dir && strcasecmp(dir, "REPLACE") == 0;
    struct objstore_meta m;
    struct ty_err err;
    json_t *hdrs = NULL;

    ty_err_clear(&err);
    if (s3__copy_source(src, sb, sizeof(sb), &dec, &sk) != 0) {
        s3__error(req, resp, "InvalidArgument", S3_BAD_COPY_SOURCE, r, NULL);
        return;
    }
    if (!replace && strcmp(sb, r->bucket) == 0 && strcmp(sk, r->key) == 0) {
        free(dec);
        s3__error(req, resp, "InvalidRequest",
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
        s3__error_from(req, resp, &err, r);
        return;
    }
    free(dec);
    json_decref(hdrs);
    s3_copy_result(req, resp, "CopyObjectResult", m.mtime_ms, m.etag);
}

/* Parses a Range header against size. 0: whole object; 1: [*a, *b]; -1: unsatisfiable. */
int s3__range(const char *h, uint64_t size, uint64_t *a, uint64_t *b)
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

/* GetObject/HeadObject's partNumber: 1..10000 without a Range header, or -1 after answering
   InvalidArgument / InvalidRequest. */
static int s3_get_part_number(struct http_request *req, struct http_response *resp,
                              const struct s3_req *r)
{
    if (http_header(req, "Range")) {
        s3__error(req, resp, "InvalidRequest",
                  "Cannot specify both Range header and partNumber query parameter", r, NULL);
        return -1;
    }
    return s3_part_number(req, resp, r);
}

void s3__get_object(struct http_request *req, struct http_response *resp, struct objstore *os,
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
        s3__error_from(req, resp, &err, r);
        return;
    }
    if (im && !objstore_etag_match(im, m.etag)) {
        close(fd);
        objstore_meta_cleanup(&m);
        s3__error(req, resp, "PreconditionFailed",
                  "At least one of the pre-conditions you specified did not hold", r, NULL);
        return;
    }
    if (inm && objstore_etag_match(inm, m.etag)) {
        close(fd);
        s3__empty(req, resp, 304);
        s3_emit_object_headers(resp, &m, 0);
        objstore_meta_cleanup(&m);
        return;
    }
    if (s3__qget(r, "partNumber")) { /* a part of a multipart object: its bytes, as a range */
        uint64_t len = 0;
        int pn = s3_get_part_number(req, resp, r);
        if (pn < 0 || objstore_part_range(os, r->bucket, r->key, &m, pn, &a, &len, &err) != 0) {
            close(fd);
            objstore_meta_cleanup(&m);
            if (pn >= 0)
                s3__error_from(req, resp, &err, r);
            return;
        }
        rg = len ? 1 : 0;
        z = len ? a + len - 1 : 0;
    } else {
        rg = s3__range(http_header(req, "Range"), m.size, &a, &z);
    }
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
            s3__error(req, resp, "InvalidRange", "The requested range is not satisfiable", r, &x);
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
            const char *v = s3__qget(r, ov[i][0]);
            if (!v)
                continue;
            if (!m.hdrs)
                m.hdrs = json_object();
            json_object_set_new(m.hdrs, ov[i][1], json_string(v));
        }
    }
    s3__common_headers(req, resp);
    s3_emit_object_headers(resp, &m, cm && strcasecmp(cm, "ENABLED") == 0 && rg == 0);
    if (m.parts && s3__qget(r, "partNumber")) {
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

void s3__delete_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                       const struct s3_req *r)
{
    struct ty_err err;
    ty_err_clear(&err);
    if (objstore_delete(os, r->bucket, r->key, &err) != 0) {
        s3__error_from(req, resp, &err, r);
        return;
    }
    s3__empty(req, resp, 204);
}

void s3__create_upload(struct http_request *req, struct http_response *resp, struct objstore *os,
                       const struct s3_req *r)
{
    char id[OBJSTORE_UPLOAD_ID_SZ];
    struct ty_err err;
    struct ty_buf b;
    json_t *hdrs = s3_object_headers(req, 1);
    const char *algo = http_header(req, "x-amz-checksum-algorithm");

    ty_err_clear(&err);
    if (algo && s3_ck_from_name(algo) != S3_CK_NONE) /* for CompleteMultipartUpload */
        json_object_set_new(hdrs, "x-amz-checksum-algorithm",
                            json_string(s3_ck_name(s3_ck_from_name(algo))));
    if (objstore_mpu_create(os, r->bucket, r->key, hdrs, id, &err) != 0) {
        json_decref(hdrs);
        s3__error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, 8192);
    ty_buf_puts(&b, S3_XML_HDR "<InitiateMultipartUploadResult xmlns=\"" S3_NS "\"><Bucket>");
    s3__xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Bucket><Key>");
    s3__xml_esc(&b, r->key);
    ty_buf_printf(&b, "</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>", id);
    s3__xml_resp(req, resp, 200, &b);
    s3_echo_sse(req, resp, hdrs);
    if (algo)
        http_response_header(resp, "x-amz-checksum-algorithm", algo);
    json_decref(hdrs);
}

/* CompleteMultipartUploadResult for bucket/key with etag (and Checksum<algo> when composite is
   not empty). */
static void s3_complete_result(struct http_request *req, struct http_response *resp,
                               const struct s3_req *r, const char *etag, const char *algo,
                               const char *composite)
{
    struct ty_buf b;
    const char *host = http_header(req, "Host");

    ty_buf_init(&b, 16384);
    ty_buf_puts(&b, S3_XML_HDR "<CompleteMultipartUploadResult xmlns=\"" S3_NS "\"><Location>");
    ty_buf_puts(&b, "http://");
    s3__xml_esc(&b, host ? host : "localhost");
    ty_buf_puts(&b, "/");
    s3__xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "/");
    s3__url_esc(&b, r->key);
    ty_buf_puts(&b, "</Location><Bucket>");
    s3__xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Bucket><Key>");
    s3__xml_esc(&b, r->key);
    ty_buf_printf(&b, "</Key><ETag>&quot;%s&quot;</ETag>", etag);
    if (composite && *composite) {
        ty_buf_printf(&b, "<Checksum%s>", algo);
        s3__xml_esc(&b, composite);
        ty_buf_printf(&b, "</Checksum%s><ChecksumType>COMPOSITE</ChecksumType>", algo);
    }
    ty_buf_puts(&b, "</CompleteMultipartUploadResult>");
    s3__xml_resp(req, resp, 200, &b);
}

/*
 * The additional checksum of a CompleteMultipartUpload: the algorithm the upload was created
 * with, else the one whose x-amz-checksum-<algo> header the request has, else the one its
 * parts name (<ChecksumCRC32> ...). OUT: *expect (the header's value, borrowed, or NULL).
 * Returns the algorithm's name ("CRC32", ...) or NULL.
 */
static const char *s3_complete_algo(struct http_request *req, json_t *up_hdrs, const char *in,
                                    const char *in_end, const char **expect)
{
    static const char *const algos[] = {"CRC32", "CRC32C", "SHA1", "SHA256"};
    const char *created = json_string_value(json_object_get(up_hdrs, "x-amz-checksum-algorithm"));
    const char *pick = NULL;

    *expect = NULL;
    for (size_t i = 0; i < 4; i++) {
        char hn[40], el[24];
        const char *v, *ci, *ce;
        snprintf(hn, sizeof(hn), "x-amz-checksum-%s", algos[i]);
        snprintf(el, sizeof(el), "Checksum%s", algos[i]);
        v = http_header(req, hn);
        if (created && strcasecmp(created, algos[i]) == 0) {
            *expect = v;
            return algos[i];
        }
        if (!pick && v) {
            pick = algos[i];
            *expect = v;
        }
        if (!pick && in && ty_xml_find(in, in_end, el, &ci, &ce))
            pick = algos[i];
    }
    return pick;
}

void s3__complete_upload(struct http_request *req, struct http_response *resp, struct objstore *os,
                         const struct s3_req *r, const char *id)
{
    const char *in = NULL, *in_end = NULL, *p, *pi, *pe, *end, *expect = NULL, *algo = NULL;
    struct objstore_part *parts = NULL;
    char(*pck)[OBJSTORE_CK_SZ] = NULL;
    const char **pckp = NULL;
    struct objstore_cond cond;
    struct objstore_meta m;
    struct ty_err err;
    size_t n = 0;
    json_t *hdrs = NULL;
    char composite[OBJSTORE_CK_SZ] = "", ckel[24] = "";
    char done_etag[48], done_algo[16], done_parts[33];
    int repeat = 0;

    ty_err_clear(&err);
    if (s3_write_cond(req, resp, r, &cond) != 0)
        return;
    if (objstore_mpu_get(os, r->bucket, r->key, id, &hdrs, &err) != 0) {
        struct ty_err e2;
        ty_err_clear(&e2);
        /* completed already: the same part list gets the same result again (below, once the
           list is read); another list gets NoSuchUpload, never the first list's object */
        if (err.code != TY_ENOTFOUND ||
            objstore_mpu_completed(os, r->bucket, r->key, id, done_etag, done_algo, composite,
                                   done_parts, &e2) != 0) {
            s3__error_from(req, resp, &err, r);
            return;
        }
        repeat = 1;
    }
    if (req->too_big || !req->body.len) {
        s3__malformed(req, resp, r);
        goto out;
    }
    end = req->body.data + req->body.len;
    if (!ty_xml_find(req->body.data, end, "CompleteMultipartUpload", &in, &in_end)) {
        s3__malformed(req, resp, r);
        goto out;
    }
    algo = s3_complete_algo(req, hdrs, in, in_end, &expect);
    if (algo)
        snprintf(ckel, sizeof(ckel), "Checksum%s", algo);
    parts = calloc(OBJSTORE_MAX_PARTS, sizeof(*parts));
    pck = calloc(OBJSTORE_MAX_PARTS, sizeof(*pck));
    pckp = calloc(OBJSTORE_MAX_PARTS, sizeof(*pckp));
    if (!parts || !pck || !pckp) {
        s3__error(req, resp, "InternalError", "out of memory", r, NULL);
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
        parts[n].number = s3__int(num);
        etag = ty_xml_text(ei, ee);
        if (!etag || strlen(etag) >= sizeof(parts[n].etag)) {
            free(etag);
            n = 0;
            break;
        }
        snprintf(parts[n].etag, sizeof(parts[n].etag), "%s", etag);
        free(etag);
        if (algo && ty_xml_find(pi, pe, ckel, &ci, &ce)) {
            char *ck = ty_xml_text(ci, ce);
            snprintf(pck[n], sizeof(pck[n]), "%s", ck ? ck : "");
            free(ck);
            pckp[n] = pck[n];
        }
        n++;
    }
    if (n == 0) {
        s3__malformed(req, resp, r);
        goto out;
    }
    if (repeat) {
        char digest[33];
        objstore_mpu_list_digest(parts, n, digest);
        if (done_parts[0] && strcmp(digest, done_parts) != 0)
            s3__error_from(req, resp, &err, r); /* NoSuchUpload: it completed with another list */
        else
            s3_complete_result(req, resp, r, done_etag, done_algo, composite);
        goto out;
    }
    if (objstore_mpu_complete_ck(os, r->bucket, r->key, id, parts, n, algo, pckp, expect, composite,
                                 &cond, &m, &err) != 0) {
        char digest[33];
        struct ty_err e2;
        ty_err_clear(&e2);
        /* another Complete of the same list ended it while this one waited: its result */
        objstore_mpu_list_digest(parts, n, digest);
        if (err.code == TY_ENOTFOUND &&
            objstore_mpu_completed(os, r->bucket, r->key, id, done_etag, done_algo, composite,
                                   done_parts, &e2) == 0 &&
            strcmp(digest, done_parts) == 0)
            s3_complete_result(req, resp, r, done_etag, done_algo, composite);
        else if (strcmp(err.field, "BadDigest") == 0)
            s3__error(req, resp, "BadDigest", err.msg, r, NULL);
        else
            s3__error_from(req, resp, &err, r);
        goto out;
    }
    s3_complete_result(req, resp, r, m.etag, algo, composite);
    s3_echo_sse(req, resp, hdrs);
    objstore_meta_cleanup(&m);
out:
    json_decref(hdrs);
    free(parts);
    free(pck);
    free(pckp);
}

void s3__list_parts(struct http_request *req, struct http_response *resp, struct objstore *os,
                    const struct s3_req *r, const char *id)
{
    struct objstore_part *parts = NULL;
    size_t n = 0, shown = 0;
    struct ty_err err;
    struct ty_buf b;
    const char *mp = s3__qget(r, "max-parts"), *pm = s3__qget(r, "part-number-marker");
    int max = mp ? s3__int(mp) : 1000, marker = pm ? s3__int(pm) : 0, last = 0, trunc = 0;

    ty_err_clear(&err);
    if (max < 1 || max > 1000)
        max = 1000;
    if (objstore_mpu_get(os, r->bucket, r->key, id, NULL, &err) != 0 ||
        objstore_mpu_parts(os, id, &parts, &n, &err) != 0) {
        s3__error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_puts(&b, S3_XML_HDR "<ListPartsResult xmlns=\"" S3_NS "\"><Bucket>");
    s3__xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Bucket><Key>");
    s3__xml_esc(&b, r->key);
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
            s3__iso8601(parts[i].mtime_ms, d, sizeof(d));
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
    s3__xml_resp(req, resp, 200, &b);
}
