/*
 * s3_proxy.c - the S3 API in front of an external store (--s3-endpoint): a request that passed
 * trainyard's own checks (signature with trainyard's keys, IAM policies, key and body checks,
 * aws-chunked decoding) is sent on to the store, signed with the store's keys, and the store's
 * answer (status, the headers S3 clients read, body) goes back to the client as it came.
 *
 * Forwarded: the method, bucket and key (path-style), the query without presigning's
 * X-Amz-* parameters, the object headers of s3p_req_headers, the decoded body (a PUT's
 * from the temp file s3_body wrote, with its checked additional checksum as a plain header; a
 * POST's XML from memory). A GetObject's body streams through as it comes (a pipe fed by a
 * transfer thread); other answers' bodies (listings, small XML) are spooled into an unlinked
 * temp file and served from it; a HEAD gets the store's Content-Length.
 * Thread-safety: one s3client handle per thread (its connections are kept).
 */
#define _GNU_SOURCE /* pipe2 */
#include "s3_int.h"

#include "objstore.h"
#include "s3client.h"
#include "ty_log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static __thread struct s3c *s3p_client;

/* Request headers a store needs to do what the client asked (besides the body's). */
static const char *const s3p_req_headers[] = {
    "Content-Type",
    "Content-MD5",
    "Content-Disposition",
    "Content-Language",
    "Cache-Control",
    "Expires",
    "Range",
    "If-Match",
    "If-None-Match",
    "If-Modified-Since",
    "If-Unmodified-Since",
    "x-amz-acl",
    "x-amz-storage-class",
    "x-amz-tagging",
    "x-amz-tagging-directive",
    "x-amz-website-redirect-location",
    "x-amz-metadata-directive",
    "x-amz-copy-source",
    "x-amz-copy-source-range",
    "x-amz-copy-source-if-match",
    "x-amz-copy-source-if-none-match",
    "x-amz-copy-source-if-modified-since",
    "x-amz-copy-source-if-unmodified-since",
    "x-amz-checksum-algorithm",
    "x-amz-checksum-mode",
};

/* Answer headers S3 clients read. */
static const char *const s3p_resp_headers[] = {
    "ETag",
    "Last-Modified",
    "Content-Type",
    "Content-Range",
    "Content-Disposition",
    "Content-Encoding",
    "Content-Language",
    "Cache-Control",
    "Expires",
    "Accept-Ranges",
    "Location",
    "x-amz-version-id",
    "x-amz-delete-marker",
    "x-amz-bucket-region",
    "x-amz-storage-class",
    "x-amz-mp-parts-count",
    "x-amz-copy-source-version-id",
    "x-amz-expiration",
    "x-amz-restore",
    "x-amz-tagging-count",
    "x-amz-website-redirect-location",
    "x-amz-missing-meta",
    "x-amz-checksum-type",
};

void s3_proxy_thread_end(void)
{
    s3c_free(s3p_client);
    s3p_client = NULL;
}

/* Content-Encoding without aws-chunked (which trainyard decoded). new, or NULL when empty. */
static char *s3p_content_encoding(const char *v)
{
    size_t cap = strlen(v) + 1, ol = 0;
    char *out = calloc(1, cap), *tok, *save = NULL, *copy = strdup(v);

    if (!out || !copy) {
        free(out);
        free(copy);
        return NULL;
    }
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        for (size_t l = strlen(tok); l && tok[l - 1] == ' ';)
            tok[--l] = '\0';
        if (!*tok || strcasecmp(tok, "aws-chunked") == 0)
            continue;
        ol += (size_t)snprintf(out + ol, cap - ol, "%s%s", ol ? "," : "", tok);
    }
    free(copy);
    if (!*out) {
        free(out);
        return NULL;
    }
    return out;
}

static int s3p_is_auth_param(const char *name)
{
    static const char *const auth[] = {
        "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders",
        "X-Amz-Signature", "X-Amz-Security-Token",
        /* SigV2 query authentication */
        "AWSAccessKeyId", "Signature", "Expires", "x-amz-security-token"};
    for (size_t i = 0; i < sizeof(auth) / sizeof(auth[0]); i++)
        if (strcmp(name, auth[i]) == 0)
            return 1;
    return 0;
}

/* The store's answer rs into resp: status, the headers S3 clients read, and an error
   document (status >= 300, read into memory) as the body. */
static void s3p_answer(struct http_response *resp, struct s3c_resp *rs)
{
    const char *v, *name;
    json_t *val;

    resp->status = (int)rs->status;
    resp->content_type = NULL;
    for (size_t i = 0; i < sizeof(s3p_resp_headers) / sizeof(s3p_resp_headers[0]); i++) {
        char low[64];
        size_t j;
        for (j = 0; s3p_resp_headers[i][j] && j < sizeof(low) - 1; j++)
            low[j] = (char)tolower((unsigned char)s3p_resp_headers[i][j]);
        low[j] = '\0';
        if ((v = s3c_resp_header(rs, low)) != NULL)
            http_response_header(resp, s3p_resp_headers[i], v);
    }
    json_object_foreach(rs->hdrs, name, val)
    {
        if (strncmp(name, "x-amz-meta-", 11) == 0 ||
            strncmp(name, "x-amz-server-side-encryption", 28) == 0 ||
            (strncmp(name, "x-amz-checksum-", 15) == 0 && strcmp(name, "x-amz-checksum-type")))
            http_response_header_dup(resp, name, json_string_value(val));
    }
    if (rs->status >= 300 && rs->body.len) { /* error documents came into memory */
        resp->len = rs->body.len;
        resp->body = ty_buf_steal(&rs->body);
        if (!s3c_resp_header(rs, "content-type"))
            http_response_header(resp, "Content-Type", "application/xml");
    }
}

/* ---- a GetObject streamed through: the store's body goes to the client as it comes ---------
   A thread of its own runs the request (with a client of its own) and writes the body into a
   pipe; the handler waits for the answer's headers, then hands the pipe's read end to http.c
   as the body. A client that goes away closes the pipe, which ends the transfer. */

struct s3p_stream {
    struct s3c *c;
    struct s3c_req rq;
    struct s3c_resp rs;
    struct ty_err err;
    char *strs[2 * 64 + 3]; /* owned copies: bucket, key, query, header names and values */
    size_t nstrs;
    struct s3c_hdr hdr[64];
    int rd, wr; /* the pipe */
    pthread_t thr;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int headers, finished, rc;
};

static const char *s3p_own(struct s3p_stream *st, const char *s)
{
    char *d = s ? strdup(s) : NULL;
    if (d && st->nstrs < sizeof(st->strs) / sizeof(st->strs[0]))
        st->strs[st->nstrs++] = d;
    else {
        free(d);
        d = NULL;
    }
    return d;
}

static void s3p_stream_headers(void *ud, const struct s3c_resp *rs)
{
    struct s3p_stream *st = ud;
    (void)rs;
    pthread_mutex_lock(&st->mu);
    st->headers = 1;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

static void *s3p_stream_thread(void *arg)
{
    struct s3p_stream *st = arg;
    int rc = s3c_do(st->c, &st->rq, &st->rs, &st->err);

    close(st->wr); /* the reader sees the end */
    st->wr = -1;
    pthread_mutex_lock(&st->mu);
    st->rc = rc;
    st->finished = 1;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

static long s3p_stream_read(void *ctx, char *buf, size_t max)
{
    struct s3p_stream *st = ctx;
    ssize_t n;
    do
        n = read(st->rd, buf, max);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -1 : (long)n;
}

static void s3p_stream_free(void *ctx)
{
    struct s3p_stream *st = ctx;
    if (st->rd >= 0)
        close(st->rd); /* a transfer still running fails its next write and ends */
    pthread_join(st->thr, NULL);
    s3c_resp_cleanup(&st->rs);
    s3c_free(st->c);
    for (size_t i = 0; i < st->nstrs; i++)
        free(st->strs[i]);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st);
}

/* Streams GET rq (its strings copied) into resp. 0 when resp holds the store's answer, or a
   negative code with err when the store was not reached. */
static int s3p_stream_get(struct http_request *req, struct http_response *resp,
                          const struct s3c_config *cfg, const struct s3c_req *rq,
                          struct ty_err *err)
{
    struct s3p_stream *st = calloc(1, sizeof(*st));
    int fds[2], rc;

    (void)req;
    if (!st)
        return ty_err_set(err, TY_ENOMEM, "InternalError", "out of memory");
    st->rd = st->wr = -1;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    st->rq = *rq;
    st->rq.bucket = s3p_own(st, rq->bucket);
    st->rq.key = s3p_own(st, rq->key);
    st->rq.query = s3p_own(st, rq->query ? rq->query : "");
    for (size_t i = 0; i < rq->nhdr && i < 64; i++)
        st->hdr[i] = (struct s3c_hdr){s3p_own(st, rq->hdr[i].name), s3p_own(st, rq->hdr[i].value)};
    st->rq.hdr = st->hdr;
    st->rq.on_headers = s3p_stream_headers;
    st->rq.ud = st;
    ty_err_clear(&st->err);
    if (!(st->c = s3c_new(cfg, err)) || pipe2(fds, O_CLOEXEC) != 0) {
        rc = st->c ? ty_err_set(err, TY_EIO, "InternalError", "pipe: %s", strerror(errno))
                   : -err->code;
        s3c_free(st->c);
        st->c = NULL;
        goto fail;
    }
    st->rd = fds[0];
    st->wr = st->rq.out_fd = fds[1];
    if (pthread_create(&st->thr, NULL, s3p_stream_thread, st) != 0) {
        close(st->rd);
        close(st->wr);
        st->rd = st->wr = -1;
        rc = ty_err_set(err, TY_EIO, "InternalError", "no thread for the transfer");
        s3c_free(st->c);
        st->c = NULL;
        goto fail;
    }
    pthread_mutex_lock(&st->mu);
    while (!st->headers && !st->finished)
        pthread_cond_wait(&st->cv, &st->mu);
    if (st->rs.status >= 300 || st->finished) /* an error's body goes to memory: wait for it */
        while (!st->finished)
            pthread_cond_wait(&st->cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
    if (st->finished && (st->rc != 0 || st->rs.status >= 300 || st->rs.status < 200)) {
        rc = st->rc;
        if (rc != 0) {
            *err = st->err;
            snprintf(err->field, sizeof(err->field), "ServiceUnavailable");
        } else {
            s3p_answer(resp, &st->rs);
        }
        s3p_stream_free(st);
        return rc;
    }
    s3p_answer(resp, &st->rs);
    {
        const char *cl = s3c_resp_header(&st->rs, "content-length");
        resp->stream_len = cl ? strtoull(cl, NULL, 10) : ULLONG_MAX;
    }
    resp->stream_read = s3p_stream_read;
    resp->stream_free = s3p_stream_free;
    resp->stream_ctx = st;
    ty_log(TY_LOG_DEBUG, "s3.proxy.stream", "req=%s status=%ld length=%llu", req->request_id,
           st->rs.status, resp->stream_len);
    return 0;
fail:
    for (size_t i = 0; i < st->nstrs; i++)
        free(st->strs[i]);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st);
    return rc;
}

int s3_proxy(struct http_request *req, struct http_response *resp, const struct s3c_config *cfg,
             struct objstore *os, const char *bucket, const char *key, const char *const *qpairs,
             size_t nq, struct s3_body *body, struct ty_err *err)
{
    struct s3c_hdr hdr[64];
    const char **pairs = calloc(2 * nq + 2, sizeof(*pairs));
    char *query = NULL, *enc = NULL, ckname[64];
    struct s3c_req rq;
    struct s3c_resp rs;
    size_t np = 0;
    int rc, in_fd = -1, out_fd = -1, is_head = strcmp(req->method, "HEAD") == 0, err_doc;
    const char *v;

    memset(&rq, 0, sizeof(rq));
    memset(&rs, 0, sizeof(rs));
    if (!pairs)
        return ty_err_set(err, TY_ENOMEM, "InternalError", "out of memory");
    if (!s3p_client && !(s3p_client = s3c_new(cfg, err))) {
        free(pairs);
        return -err->code;
    }
    for (size_t i = 0; i < nq; i++) {
        if (s3p_is_auth_param(qpairs[2 * i]))
            continue;
        pairs[2 * np] = qpairs[2 * i];
        pairs[2 * np + 1] = qpairs[2 * i + 1];
        np++;
    }
    query = s3c_query(pairs, np);
    free(pairs);
    if (!query)
        return ty_err_set(err, TY_ENOMEM, "InternalError", "out of memory");

    for (size_t i = 0; i < sizeof(s3p_req_headers) / sizeof(s3p_req_headers[0]); i++) {
        if ((v = http_header(req, s3p_req_headers[i])) != NULL && *v && rq.nhdr < 48)
            hdr[rq.nhdr++] = (struct s3c_hdr){s3p_req_headers[i], v};
    }
    for (size_t i = 0; i < req->nheaders && rq.nhdr < 60; i++) {
        const char *n = req->headers[i].name;
        if (strncasecmp(n, "x-amz-meta-", 11) == 0 ||
            strncasecmp(n, "x-amz-server-side-encryption", 28) == 0)
            hdr[rq.nhdr++] = (struct s3c_hdr){n, req->headers[i].value};
    }
    if ((v = http_header(req, "Content-Encoding")) != NULL && (enc = s3p_content_encoding(v)))
        hdr[rq.nhdr++] = (struct s3c_hdr){"Content-Encoding", enc};
    rq.method = req->method;
    rq.bucket = bucket;
    rq.key = key;
    rq.query = query;
    rq.hdr = hdr;
    rq.body_fd = -1;
    rq.out_fd = -1;
    if (body) {
        const char *ck = NULL;
        enum s3_ck alg = s3_body_checksum(body, &ck);
        if (alg != S3_CK_NONE && ck && *ck) {
            snprintf(ckname, sizeof(ckname), "x-amz-checksum-%s", s3_ck_name(alg));
            for (char *p = ckname; *p; p++)
                *p = (char)tolower((unsigned char)*p);
            hdr[rq.nhdr++] = (struct s3c_hdr){ckname, ck};
        }
        in_fd = open(s3_body_path(body), O_RDONLY | O_CLOEXEC);
        if (in_fd < 0) {
            rc = ty_err_set(err, TY_EIO, "InternalError", "the upload could not be read: %s",
                            strerror(errno));
            goto out;
        }
        rq.body_fd = in_fd;
        rq.body_len = s3_body_size(body);
    } else if (req->body.len || strcmp(req->method, "POST") == 0) {
        rq.body = req->body.data ? req->body.data : "";
        rq.body_n = req->body.len;
    }
    if (strcmp(req->method, "GET") == 0 && key && *key && !body) {
        rc = s3p_stream_get(req, resp, cfg, &rq, err);
        goto out;
    }
    if (!is_head) { /* the answer's body: spooled, then served from the file */
        char path[4096];
        out_fd = objstore_tmp_create(os, path, sizeof(path), err);
        if (out_fd < 0) {
            rc = out_fd;
            goto out;
        }
        unlink(path);
        rq.out_fd = out_fd;
        rq.max_mem_body = 4u * 1024 * 1024;
    }
    rc = s3c_do(s3p_client, &rq, &rs, err);
    if (rc != 0) {
        /* the store was not reached: clients retry a 503 */
        snprintf(err->field, sizeof(err->field), "ServiceUnavailable");
        goto out;
    }
    err_doc = rs.status >= 300 && rs.body.len;
    s3p_answer(resp, &rs);
    if (err_doc) {
        /* an error document: s3p_answer moved it into resp */
    } else if (is_head) {
        /* no body goes out for HEAD; MHD takes Content-Length from the response's size */
        const char *cl = s3c_resp_header(&rs, "content-length");
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (nul >= 0) {
            resp->has_file = 1;
            resp->file_fd = nul;
            resp->file_off = 0;
            resp->file_len = cl ? strtoull(cl, NULL, 10) : 0;
        }
    } else {
        resp->has_file = 1;
        resp->file_fd = out_fd;
        resp->file_off = 0;
        resp->file_len = rs.body_bytes;
        out_fd = -1; /* http.c owns it now */
    }
    ty_log(TY_LOG_DEBUG, "s3.proxy", "req=%s method=%s bucket=%s status=%ld bytes=%llu",
           req->request_id, req->method, bucket ? bucket : "", rs.status,
           (unsigned long long)rs.body_bytes);
out:
    if (in_fd >= 0)
        close(in_fd);
    if (out_fd >= 0)
        close(out_fd);
    s3c_resp_cleanup(&rs);
    free(query);
    free(enc);
    return rc;
}
