/*
 * s3client.c - requests to an external S3-compatible store through libcurl (s3client.h).
 *
 * Signing is libcurl's (CURLOPT_AWS_SIGV4, "aws:amz:<region>:s3"). libcurl 7.88 signs the
 * path and query as they stand in the URL, so both are written here in SigV4's canonical form
 * (every byte but A-Z a-z 0-9 - . _ ~ percent-encoded, '/' kept in the path; query pairs sorted
 * and each written name=value): what curl signs is then exactly what the store rebuilds.
 * x-amz-content-sha256 is always given: the SHA-256 of an in-memory body, UNSIGNED-PAYLOAD for
 * a streamed one (allowed by S3 over any transport; the store still checks Content-MD5 when
 * the caller sends one).
 */
#include "s3client.h"

#include "ty_codec.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "ty_xml.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define S3C_MEM_MAX   (16u * 1024u * 1024u)
#define S3C_URL_MAX   (8u * 1024u)
#define S3C_EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3c {
    CURL *curl;
    char *endpoint; /* no trailing '/' */
    char *userpwd;  /* "key:secret" */
    char *token;    /* "x-amz-security-token: <session token>", NULL without one */
    char sigv4[128];
};

static pthread_once_t s3c_once = PTHREAD_ONCE_INIT;

static void s3c_global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct s3c *s3c_new(const struct s3c_config *cfg, struct ty_err *err)
{
    struct s3c *c;
    const char *ep = cfg ? cfg->endpoint : NULL, *host;
    const char *region = cfg && cfg->region && *cfg->region ? cfg->region : "us-east-1";
    size_t n;

    if (!ep || (strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0)) {
        ty_err_set(err, TY_EINVAL, "s3-endpoint",
                   "--s3-endpoint must be an http:// or https:// URL, got '%.200s'", ep ? ep : "");
        return NULL;
    }
    host = strstr(ep, "://") + 3;
    n = strlen(ep);
    while (n > 0 && ep[n - 1] == '/')
        n--;
    if (!*host || *host == '/' || strchr(host, '?') || strchr(host, '#') ||
        (strchr(host, '/') && (size_t)(strchr(host, '/') - ep) < n) || n > 1024) {
        ty_err_set(err, TY_EINVAL, "s3-endpoint",
                   "--s3-endpoint must be scheme://host[:port] without a path, got '%.200s'", ep);
        return NULL;
    }
    if (!cfg->access_key || !*cfg->access_key || !cfg->secret_key || !*cfg->secret_key ||
        strchr(cfg->access_key, ':')) {
        ty_err_set(err, TY_EINVAL, "s3-access-key-id",
                   "--s3-endpoint needs --s3-access-key-id and --s3-secret-access-key (or "
                   "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)");
        return NULL;
    }
    if (strlen(region) > 64 || strchr(region, ':')) {
        ty_err_set(err, TY_EINVAL, "s3-region", "--s3-region is not a region: '%.80s'", region);
        return NULL;
    }
    pthread_once(&s3c_once, s3c_global_init);
    c = calloc(1, sizeof(*c));
    if (!c) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    c->endpoint = strndup(ep, n);
    n = strlen(cfg->access_key) + strlen(cfg->secret_key) + 2;
    c->userpwd = malloc(n);
    c->curl = curl_easy_init();
    if (!c->endpoint || !c->userpwd || !c->curl) {
        s3c_free(c);
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    snprintf(c->userpwd, n, "%s:%s", cfg->access_key, cfg->secret_key);
    if (cfg->session_token && cfg->session_token[0]) {
        n = strlen(cfg->session_token) + 32;
        if (strpbrk(cfg->session_token, "\r\n") || !(c->token = malloc(n))) {
            s3c_free(c);
            ty_err_set(err, TY_EINVAL, "s3-session-token", "a session token cannot be sent");
            return NULL;
        }
        snprintf(c->token, n, "x-amz-security-token: %s", cfg->session_token);
    }
    snprintf(c->sigv4, sizeof(c->sigv4), "aws:amz:%s:s3", region);
    return c;
}

void s3c_free(struct s3c *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    if (c->userpwd) {
        OPENSSL_cleanse(c->userpwd, strlen(c->userpwd));
        free(c->userpwd);
    }
    if (c->token) {
        OPENSSL_cleanse(c->token, strlen(c->token));
        free(c->token);
    }
    free(c->endpoint);
    free(c);
}

const char *s3c_endpoint(const struct s3c *c)
{
    return c->endpoint;
}

/* ---- encoding -------------------------------------------------------------------------------- */

static int s3c_unreserved(unsigned char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

static int s3c_enc(struct ty_buf *b, const char *s, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
        int rc = s3c_unreserved(*p) || (keep_slash && *p == '/') ? ty_buf_append(b, p, 1)
                                                                 : ty_buf_append(b, e, 3);
        if (rc != 0)
            return rc;
    }
    return 0;
}

struct s3c__pair {
    char *enc; /* "name=value", encoded */
    size_t name_len;
};

static int s3c_pair_cmp(const void *a, const void *b)
{
    const struct s3c__pair *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->enc, y->enc, n);
    if (c)
        return c;
    if (x->name_len != y->name_len)
        return x->name_len < y->name_len ? -1 : 1;
    return strcmp(x->enc + x->name_len, y->enc + y->name_len);
}

char *s3c_query(const char *const *pairs, size_t n)
{
    struct s3c__pair *p = calloc(n ? n : 1, sizeof(*p));
    struct ty_buf b;
    size_t i;

    if (!p)
        return NULL;
    for (i = 0; i < n; i++) {
        struct ty_buf e;
        ty_buf_init(&e, S3C_URL_MAX);
        ty_buf_append(&e, "", 0);
        if (s3c_enc(&e, pairs[2 * i] ? pairs[2 * i] : "", 0) != 0)
            goto fail_one;
        p[i].name_len = e.len;
        if (ty_buf_puts(&e, "=") != 0 || s3c_enc(&e, pairs[2 * i + 1] ? pairs[2 * i + 1] : "", 0))
            goto fail_one;
        p[i].enc = ty_buf_steal(&e);
        continue;
fail_one:
        ty_buf_cleanup(&e);
        goto fail;
    }
    qsort(p, n, sizeof(*p), s3c_pair_cmp);
    ty_buf_init(&b, S3C_URL_MAX);
    ty_buf_append(&b, "", 0);
    for (i = 0; i < n; i++)
        if ((i && ty_buf_puts(&b, "&") != 0) || ty_buf_puts(&b, p[i].enc) != 0) {
            ty_buf_cleanup(&b);
            goto fail;
        }
    for (i = 0; i < n; i++)
        free(p[i].enc);
    free(p);
    return ty_buf_steal(&b);
fail:
    for (i = 0; i < n; i++)
        free(p[i].enc);
    free(p);
    return NULL;
}

/* ---- one request ------------------------------------------------------------------------------
 */

struct s3c__io {
    const struct s3c_req *rq;
    struct s3c_resp *rs;
    uint64_t sent; /* body bytes given to curl */
    int write_failed;
    int body_too_big;
};

static size_t s3c_read(char *buf, size_t size, size_t nitems, void *ud)
{
    struct s3c__io *io = ud;
    size_t want = size * nitems;
    ssize_t got;

    if (io->rq->body_fd < 0) {
        size_t left = io->rq->body_n - (size_t)io->sent;
        if (want > left)
            want = left;
        if (want)
            memcpy(buf, io->rq->body + io->sent, want);
        io->sent += want;
        return want;
    }
    if ((uint64_t)want > io->rq->body_len - io->sent)
        want = (size_t)(io->rq->body_len - io->sent);
    if (!want)
        return 0;
    do
        got = read(io->rq->body_fd, buf, want);
    while (got < 0 && errno == EINTR);
    if (got <= 0) /* the file shrank under us: never send a short body as a whole one */
        return CURL_READFUNC_ABORT;
    io->sent += (uint64_t)got;
    return (size_t)got;
}

static size_t s3c_write(char *data, size_t size, size_t nmemb, void *ud)
{
    struct s3c__io *io = ud;
    size_t n = size * nmemb;

    if (io->rq->out_fd < 0 || io->rs->status >= 300) {
        /* an error's body always goes to memory: the caller reads <Code> from it */
        if (ty_buf_append(&io->rs->body, data, n) != 0) {
            io->body_too_big = 1;
            return 0;
        }
        io->rs->body_bytes += n;
        return n;
    }
    if (ty_write_all(io->rq->out_fd, data, n) < 0) {
        io->write_failed = errno ? errno : EIO;
        return 0;
    }
    io->rs->body_bytes += n;
    return n;
}

static size_t s3c_header(char *data, size_t size, size_t nitems, void *ud)
{
    struct s3c__io *io = ud;
    size_t n = size * nitems, nl;
    const char *colon;
    char name[128], *v;

    if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new answer (after 100 Continue) */
        const char *sp = memchr(data, ' ', n);
        json_object_clear(io->rs->hdrs);
        io->rs->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        return n;
    }
    if ((n == 2 && data[0] == '\r') || (n == 1 && data[0] == '\n')) { /* end of the headers */
        if (io->rs->status >= 200 && io->rq->on_headers)
            io->rq->on_headers(io->rq->ud, io->rs);
        return n;
    }
    colon = memchr(data, ':', n);
    if (!colon || (nl = (size_t)(colon - data)) == 0 || nl >= sizeof(name))
        return n;
    for (size_t i = 0; i < nl; i++)
        name[i] = (char)((data[i] >= 'A' && data[i] <= 'Z') ? data[i] + 32 : data[i]);
    name[nl] = '\0';
    colon++;
    while (colon < data + n && (*colon == ' ' || *colon == '\t'))
        colon++;
    v = strndup(colon, (size_t)(data + n - colon));
    if (!v)
        return 0;
    for (size_t l = strlen(v); l && (v[l - 1] == '\r' || v[l - 1] == '\n' || v[l - 1] == ' ');)
        v[--l] = '\0';
    json_object_set_new(io->rs->hdrs, name, json_string(v));
    free(v);
    return n;
}

static void s3c_sha256_hex(const char *p, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int ml = 0;
    EVP_Digest(p, n, md, &ml, EVP_sha256(), NULL);
    ty_hex_encode(md, 32, out);
}

int s3c_do(struct s3c *c, const struct s3c_req *rq, struct s3c_resp *rs, struct ty_err *err)
{
    struct ty_buf url, h;
    struct curl_slist *hl = NULL;
    struct s3c__io io;
    char sha[65];
    const char *m = rq->method;
    CURLcode cc;
    int rc = 0, has_body = rq->body_fd >= 0 || rq->body;

    memset(rs, 0, sizeof(*rs));
    rs->hdrs = json_object();
    ty_buf_init(&rs->body, rq->max_mem_body ? rq->max_mem_body : S3C_MEM_MAX);
    ty_buf_append(&rs->body, "", 0);
    memset(&io, 0, sizeof(io));
    io.rq = rq;
    io.rs = rs;

    ty_buf_init(&url, S3C_URL_MAX + 4096);
    ty_buf_puts(&url, c->endpoint);
    ty_buf_puts(&url, "/");
    if (rq->bucket && *rq->bucket) {
        s3c_enc(&url, rq->bucket, 0);
        if (rq->key && *rq->key) {
            ty_buf_puts(&url, "/");
            s3c_enc(&url, rq->key, 1);
        }
    }
    if (rq->query && *rq->query) {
        ty_buf_puts(&url, "?");
        ty_buf_puts(&url, rq->query);
    }
    if (!url.data || url.len >= url.max) {
        ty_buf_cleanup(&url);
        return ty_err_set(err, TY_EINVAL, "key", "the request URL for %s is too long", c->endpoint);
    }

    curl_easy_reset(c->curl);
    curl_easy_setopt(c->curl, CURLOPT_URL, url.data);
    curl_easy_setopt(c->curl, CURLOPT_AWS_SIGV4, c->sigv4);
    curl_easy_setopt(c->curl, CURLOPT_USERPWD, c->userpwd);
    curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L); /* stalled for a minute: give up */
    curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, s3c_header);
    curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, &io);
    curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, s3c_write);
    curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &io);
    curl_easy_setopt(c->curl, CURLOPT_PATH_AS_IS, 1L);

    if (strcmp(m, "HEAD") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_NOBODY, 1L);
    } else if (strcmp(m, "PUT") == 0) {
        curl_easy_setopt(c->curl, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c->curl, CURLOPT_READFUNCTION, s3c_read);
        curl_easy_setopt(c->curl, CURLOPT_READDATA, &io);
        curl_easy_setopt(c->curl, CURLOPT_INFILESIZE_LARGE,
                         (curl_off_t)(rq->body_fd >= 0 ? rq->body_len : rq->body_n));
    } else if (strcmp(m, "POST") == 0) {
        /* in-memory bodies only (S3's POSTs carry small XML documents) */
        curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
        curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(rq->body ? rq->body_n : 0));
    } else if (strcmp(m, "GET") != 0) {
        curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, m);
    }

    ty_buf_init(&h, 16 * 1024);
    if (rq->body_fd >= 0)
        snprintf(sha, sizeof(sha), "UNSIGNED-PAYLOAD");
    else if (has_body)
        s3c_sha256_hex(rq->body, rq->body_n, sha);
    else
        snprintf(sha, sizeof(sha), "%s", S3C_EMPTY_SHA);
    ty_buf_printf(&h, "x-amz-content-sha256: %s", sha);
    hl = curl_slist_append(hl, h.data);
    if (c->token) /* signed with the rest: curl signs the headers it is given */
        hl = curl_slist_append(hl, c->token);
    if (strcmp(m, "POST") == 0) { /* no form type unless the caller sets one */
        int ct = 0;
        for (size_t i = 0; i < rq->nhdr; i++)
            ct |= strcasecmp(rq->hdr[i].name, "Content-Type") == 0;
        if (!ct)
            hl = curl_slist_append(hl, "Content-Type:");
    }
    for (size_t i = 0; i < rq->nhdr; i++) {
        ty_buf_reset(&h);
        if (rq->hdr[i].value && *rq->hdr[i].value)
            ty_buf_printf(&h, "%s: %s", rq->hdr[i].name, rq->hdr[i].value);
        else
            ty_buf_printf(&h, "%s;", rq->hdr[i].name); /* curl's form of an empty header */
        if (h.data)
            hl = curl_slist_append(hl, h.data);
    }
    ty_buf_cleanup(&h);
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hl);

    cc = curl_easy_perform(c->curl);
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &rs->status);
    if (cc != CURLE_OK) {
        if (io.write_failed)
            rc = ty_err_set(err, TY_EIO, NULL, "writing an object from %s failed: %s", c->endpoint,
                            strerror(io.write_failed));
        else if (io.body_too_big)
            rc = ty_err_set(err, TY_EIO, NULL, "the answer of %s to %s is too large", c->endpoint,
                            m);
        else
            rc = ty_err_set(err, TY_EIO, NULL, "S3 endpoint %s: %s %s failed: %s", c->endpoint, m,
                            rq->bucket && *rq->bucket ? rq->bucket : "/", curl_easy_strerror(cc));
        ty_log(TY_LOG_WARN, "s3client.failed", "endpoint=%s method=%s status=%ld curl=%d",
               c->endpoint, m, rs->status, (int)cc);
    }
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    ty_buf_cleanup(&url);
    return rc;
}

void s3c_resp_cleanup(struct s3c_resp *rs)
{
    if (!rs)
        return;
    json_decref(rs->hdrs);
    rs->hdrs = NULL;
    ty_buf_cleanup(&rs->body);
}

const char *s3c_resp_header(const struct s3c_resp *rs, const char *name)
{
    return json_string_value(json_object_get(rs->hdrs, name));
}

int s3c_fail(const struct s3c *c, const struct s3c_resp *rs, const char *missing,
             struct ty_err *err)
{
    char code[64] = "", msg[512] = "";
    const char *b = rs->body.data, *e = b ? b + rs->body.len : NULL, *in, *ie;
    int ty;

    if (b && ty_xml_find(b, e, "Code", &in, &ie)) {
        char *t = ty_xml_text(in, ie);
        snprintf(code, sizeof(code), "%s", t ? t : "");
        free(t);
    }
    if (b && ty_xml_find(b, e, "Message", &in, &ie)) {
        char *t = ty_xml_text(in, ie);
        snprintf(msg, sizeof(msg), "%s", t ? t : "");
        free(t);
    }
    if (!code[0]) {
        if (rs->status == 404)
            snprintf(code, sizeof(code), "%s", missing ? missing : "NoSuchKey");
        else if (rs->status == 403)
            snprintf(code, sizeof(code), "AccessDenied");
        else if (rs->status == 412)
            snprintf(code, sizeof(code), "PreconditionFailed");
        else if (rs->status >= 500)
            snprintf(code, sizeof(code), "InternalError");
        else
            snprintf(code, sizeof(code), "InvalidRequest");
    }
    if (strncmp(code, "NoSuch", 6) == 0)
        ty = TY_ENOTFOUND;
    else if (rs->status == 403)
        ty = TY_EDENIED;
    else if (strcmp(code, "BucketAlreadyOwnedByYou") == 0 ||
             strcmp(code, "BucketAlreadyExists") == 0)
        ty = TY_EINUSE;
    else if (strcmp(code, "BucketNotEmpty") == 0)
        ty = TY_ECONFLICT;
    else if (rs->status >= 400 && rs->status < 500)
        ty = TY_EINVAL;
    else
        ty = TY_EIO;
    if (!msg[0])
        snprintf(msg, sizeof(msg), "HTTP %ld", rs->status);
    return ty_err_set(err, ty, code, "%s (from S3 endpoint %s: %s)", msg, c->endpoint, code);
}
