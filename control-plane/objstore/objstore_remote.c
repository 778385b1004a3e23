/*
 * objstore_remote.c - the object store over an external S3-compatible store (objstore_remote.h).
 *
 * Every call is one or a few S3 requests through s3client.c. Uploads carry Content-MD5, so the
 * store rejects bytes that changed on the way; files over OBJR_MPU_THRESHOLD go up as a
 * multipart upload (parts of OBJR_PART bytes or more, at most 10000 parts), aborted when a part
 * fails so that nothing is left behind. Listings are ListObjectsV2 pages, read with ty_xml.
 */
#define _GNU_SOURCE /* timegm */
#include "objstore_remote.h"

#include "ty_buf.h"
#include "ty_log.h"
#include "ty_xml.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OBJR_MPU_THRESHOLD (64ull * 1024 * 1024)
#define OBJR_PART          (16ull * 1024 * 1024)

/* ---- answers ----------------------------------------------------------------------------------
 */

static int64_t objr_http_date_ms(const char *s)
{
    time_t t = s ? curl_getdate(s, NULL) : -1;
    return t < 0 ? 0 : (int64_t)t * 1000;
}

static int64_t objr_iso_ms(const char *s)
{
    struct tm tm;
    int ms = 0;
    memset(&tm, 0, sizeof(tm));
    if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                     &tm.tm_min, &tm.tm_sec) != 6)
        return 0;
    if (strchr(s, '.'))
        ms = (int)strtol(strchr(s, '.') + 1, NULL, 10) % 1000;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm) * 1000 + ms;
}

/* Copies an ETag without its quotes into out (48 bytes) and returns its part count. */
static int objr_etag(const char *v, char *out)
{
    size_t n;
    const char *dash;
    if (!v)
        v = "";
    if (*v == '"')
        v++;
    n = strcspn(v, "\"");
    if (n > 47)
        n = 47;
    memcpy(out, v, n);
    out[n] = '\0';
    dash = strchr(out, '-');
    return dash ? (int)strtol(dash + 1, NULL, 10) : 0;
}

/* The headers a GET/HEAD answer carries that objstore keeps with an object (objstore.h). */
static json_t *objr_hdrs(const struct s3c_resp *rs)
{
    static const char *const std[][2] = {
        {"content-type", "Content-Type"},         {"content-disposition", "Content-Disposition"},
        {"content-encoding", "Content-Encoding"}, {"content-language", "Content-Language"},
        {"cache-control", "Cache-Control"},       {"expires", "Expires"},
    };
    json_t *h = json_object();
    const char *k;
    json_t *v;

    for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++) {
        const char *s = s3c_resp_header(rs, std[i][0]);
        if (s)
            json_object_set_new(h, std[i][1], json_string(s));
    }
    json_object_foreach(rs->hdrs, k, v)
    {
        if (strncmp(k, "x-amz-meta-", 11) == 0 ||
            strncmp(k, "x-amz-server-side-encryption", 28) == 0)
            json_object_set(h, k, v);
    }
    return h;
}

static void objr_meta(const struct s3c_resp *rs, struct objstore_meta *meta)
{
    const char *cl = s3c_resp_header(rs, "content-length");
    memset(meta, 0, sizeof(*meta));
    meta->parts = objr_etag(s3c_resp_header(rs, "etag"), meta->etag);
    meta->size = cl ? strtoull(cl, NULL, 10) : 0;
    meta->mtime_ms = objr_http_date_ms(s3c_resp_header(rs, "last-modified"));
    meta->hdrs = objr_hdrs(rs);
}

/* One request whose answer must be 2xx; the failure otherwise (s3c_fail). */
static int objr_call(struct s3c *c, const struct s3c_req *rq, struct s3c_resp *rs,
                     const char *missing, struct ty_err *err)
{
    int rc = s3c_do(c, rq, rs, err);
    if (rc == 0 && (rs->status < 200 || rs->status >= 300))
        rc = s3c_fail(c, rs, missing, err);
    return rc;
}

/* ---- buckets ----------------------------------------------------------------------------------
 */

int objstore_remote_bucket_create(struct s3c *c, const char *name, const char *region,
                                  struct ty_err *err)
{
    struct s3c_req rq = {.method = "PUT", .bucket = name, .body_fd = -1, .out_fd = -1};
    struct s3c_resp rs;
    char body[256];
    int rc;

    if (region && *region && strcmp(region, "us-east-1") != 0) {
        snprintf(body, sizeof(body),
                 "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                 "<LocationConstraint>%.64s</LocationConstraint></CreateBucketConfiguration>",
                 region);
        rq.body = body;
        rq.body_n = strlen(body);
    }
    rc = objr_call(c, &rq, &rs, "NoSuchBucket", err);
    s3c_resp_cleanup(&rs);
    return rc;
}

int objstore_remote_bucket_get(struct s3c *c, const char *name, struct objstore_bucket *b,
                               struct ty_err *err)
{
    struct s3c_req rq = {.method = "HEAD", .bucket = name, .body_fd = -1, .out_fd = -1};
    struct s3c_resp rs;
    int rc = objr_call(c, &rq, &rs, "NoSuchBucket", err);

    if (rc == -TY_ENOTFOUND)
        ty_err_set(err, TY_ENOTFOUND, "NoSuchBucket", "The specified bucket does not exist");
    if (rc == 0 && b) {
        const char *reg = s3c_resp_header(&rs, "x-amz-bucket-region");
        memset(b, 0, sizeof(*b));
        snprintf(b->name, sizeof(b->name), "%s", name);
        snprintf(b->region, sizeof(b->region), "%s", reg && *reg ? reg : "us-east-1");
    }
    s3c_resp_cleanup(&rs);
    return rc;
}

int objstore_remote_bucket_delete(struct s3c *c, const char *name, struct ty_err *err)
{
    struct s3c_req rq = {.method = "DELETE", .bucket = name, .body_fd = -1, .out_fd = -1};
    struct s3c_resp rs;
    int rc = objr_call(c, &rq, &rs, "NoSuchBucket", err);
    s3c_resp_cleanup(&rs);
    return rc;
}

int objstore_remote_bucket_list(struct s3c *c, struct objstore_bucket **out, size_t *n,
                                struct ty_err *err)
{
    struct s3c_req rq = {.method = "GET", .body_fd = -1, .out_fd = -1};
    struct s3c_resp rs;
    const char *p, *end, *in, *ie;
    size_t cap = 0;
    int rc = objr_call(c, &rq, &rs, NULL, err);

    *out = NULL;
    *n = 0;
    if (rc != 0) {
        s3c_resp_cleanup(&rs);
        return rc;
    }
    p = rs.body.data;
    end = p + rs.body.len;
    while ((p = ty_xml_find(p, end, "Bucket", &in, &ie)) != NULL) {
        const char *a, *b;
        struct objstore_bucket *bk;
        if (*n == cap) {
            void *g = realloc(*out, (cap = cap ? 2 * cap : 16) * sizeof(**out));
            if (!g) {
                rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
                break;
            }
            *out = g;
        }
        bk = &(*out)[*n];
        memset(bk, 0, sizeof(*bk));
        if (ty_xml_find(in, ie, "Name", &a, &b)) {
            char *t = ty_xml_text(a, b);
            snprintf(bk->name, sizeof(bk->name), "%s", t ? t : "");
            free(t);
        }
        if (ty_xml_find(in, ie, "CreationDate", &a, &b)) {
            char *t = ty_xml_text(a, b);
            bk->created_ms = objr_iso_ms(t);
            free(t);
        }
        snprintf(bk->region, sizeof(bk->region), "us-east-1");
        if (bk->name[0])
            (*n)++;
    }
    s3c_resp_cleanup(&rs);
    return rc;
}

/* ---- objects ----------------------------------------------------------------------------------
 */

int objstore_remote_head(struct s3c *c, const char *bucket, const char *key,
                         struct objstore_meta *meta, struct ty_err *err)
{
    struct s3c_req rq = {
        .method = "HEAD", .bucket = bucket, .key = key, .body_fd = -1, .out_fd = -1};
    struct s3c_resp rs;
    int rc = objr_call(c, &rq, &rs, "NoSuchKey", err);

    memset(meta, 0, sizeof(*meta));
    if (rc == -TY_ENOTFOUND)
        ty_err_set(err, TY_ENOTFOUND, "NoSuchKey", "The specified key does not exist.");
    if (rc == 0)
        objr_meta(&rs, meta);
    s3c_resp_cleanup(&rs);
    return rc;
}

int objstore_remote_get(struct s3c *c, const char *bucket, const char *key, int fd,
                        struct objstore_meta *meta, struct ty_err *err)
{
    struct s3c_req rq = {
        .method = "GET", .bucket = bucket, .key = key, .body_fd = -1, .out_fd = fd};
    struct s3c_resp rs;
    int rc = objr_call(c, &rq, &rs, "NoSuchKey", err);

    memset(meta, 0, sizeof(*meta));
    if (rc == 0) {
        objr_meta(&rs, meta);
        if (rs.body_bytes != meta->size)
            rc = ty_err_set(err, TY_EIO, NULL,
                            "s3://%s/%s from %s: %llu bytes came, Content-Length said %llu", bucket,
                            key, s3c_endpoint(c), (unsigned long long)rs.body_bytes,
                            (unsigned long long)meta->size);
    }
    if (rc != 0)
        objstore_meta_cleanup(meta);
    s3c_resp_cleanup(&rs);
    return rc;
}

/* Content-MD5 (base64) of len bytes of fd from offset off. 0 or -errno. */
static int objr_md5(int fd, uint64_t off, uint64_t len, char b64[32])
{
    unsigned char md[EVP_MAX_MD_SIZE], buf[1 << 16];
    unsigned int ml = 0;
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    int rc = 0;

    if (!x)
        return -ENOMEM;
    EVP_DigestInit_ex(x, EVP_md5(), NULL);
    while (len > 0) {
        size_t want = len < sizeof(buf) ? (size_t)len : sizeof(buf);
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = got < 0 ? -errno : -EIO;
            break;
        }
        EVP_DigestUpdate(x, buf, (size_t)got);
        off += (uint64_t)got;
        len -= (uint64_t)got;
    }
    EVP_DigestFinal_ex(x, md, &ml);
    EVP_MD_CTX_free(x);
    EVP_EncodeBlock((unsigned char *)b64, md, (int)ml);
    return rc;
}

/* PUT of len bytes of fd at off, as the object or as part number of upload id. OUT: etag. */
static int objr_put_range(struct s3c *c, const char *bucket, const char *key, int fd, uint64_t off,
                          uint64_t len, const char *content_type, const char *id, int number,
                          char *etag, struct ty_err *err)
{
    struct s3c_hdr h[2];
    struct s3c_req rq = {.method = "PUT",
                         .bucket = bucket,
                         .key = key,
                         .hdr = h,
                         .body_fd = fd,
                         .body_len = len,
                         .out_fd = -1};
    struct s3c_resp rs;
    char md5[32], num[16], *q = NULL;
    int rc;

    if ((rc = objr_md5(fd, off, len, md5)) != 0 || lseek(fd, (off_t)off, SEEK_SET) < 0)
        return ty_err_set(err, TY_EIO, NULL, "reading s3://%s/%s for upload: %s", bucket, key,
                          strerror(rc ? -rc : errno));
    h[rq.nhdr++] = (struct s3c_hdr){"Content-MD5", md5};
    if (!id)
        h[rq.nhdr++] =
            (struct s3c_hdr){"Content-Type", content_type ? content_type : "binary/octet-stream"};
    if (id) {
        const char *pairs[4] = {"partNumber", num, "uploadId", id};
        snprintf(num, sizeof(num), "%d", number);
        rq.query = q = s3c_query(pairs, 2);
        if (!q)
            return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc = objr_call(c, &rq, &rs, "NoSuchBucket", err);
    if (rc == 0 && etag)
        objr_etag(s3c_resp_header(&rs, "etag"), etag);
    s3c_resp_cleanup(&rs);
    free(q);
    return rc;
}

/* Text of the first <tag> in an answer's body. new (free()), or NULL. */
static char *objr_body_text(const struct s3c_resp *rs, const char *tag)
{
    const char *in, *ie;
    if (!rs->body.data || !ty_xml_find(rs->body.data, rs->body.data + rs->body.len, tag, &in, &ie))
        return NULL;
    return ty_xml_text(in, ie);
}

static int objr_multipart(struct s3c *c, const char *bucket, const char *key, int fd, uint64_t size,
                          const char *content_type, struct ty_err *err)
{
    struct s3c_hdr h[1] = {{"Content-Type", content_type ? content_type : "binary/octet-stream"}};
    const char *up[2] = {"uploads", ""};
    struct s3c_req rq = {.method = "POST",
                         .bucket = bucket,
                         .key = key,
                         .hdr = h,
                         .nhdr = 1,
                         .body_fd = -1,
                         .out_fd = -1};
    struct s3c_resp rs;
    struct ty_buf doc;
    uint64_t part = OBJR_PART, off = 0;
    char *id = NULL, *q = s3c_query(up, 1), etag[48];
    int rc, number = 0;

    if (size / part >= 10000) /* at most 10000 parts: grow them, whole MiB */
        part = ((size / 9999) / (1024 * 1024) + 1) * 1024 * 1024;
    rq.query = q;
    rc = q ? objr_call(c, &rq, &rs, "NoSuchBucket", err)
           : ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    if (rc == 0 && !(id = objr_body_text(&rs, "UploadId")))
        rc = ty_err_set(err, TY_EIO, NULL, "%s gave no UploadId", s3c_endpoint(c));
    if (q)
        s3c_resp_cleanup(&rs);
    free(q);
    if (rc != 0)
        return rc;
    ty_buf_init(&doc, 2u * 1024 * 1024);
    ty_buf_puts(&doc, "<CompleteMultipartUpload>");
    while (rc == 0 && off < size) {
        uint64_t len = size - off < part ? size - off : part;
        rc = objr_put_range(c, bucket, key, fd, off, len, NULL, id, ++number, etag, err);
        if (rc == 0)
            ty_buf_printf(&doc, "<Part><PartNumber>%d</PartNumber><ETag>\"%s\"</ETag></Part>",
                          number, etag);
        off += len;
    }
    if (rc == 0 && ty_buf_puts(&doc, "</CompleteMultipartUpload>") != 0)
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    {
        const char *idq[2] = {"uploadId", id};
        q = s3c_query(idq, 1);
    }
    if (rc == 0 && q) {
        struct s3c_req cq = {.method = "POST",
                             .bucket = bucket,
                             .key = key,
                             .query = q,
                             .body = doc.data,
                             .body_n = doc.len,
                             .body_fd = -1,
                             .out_fd = -1};
        rc = objr_call(c, &cq, &rs, "NoSuchUpload", err);
        /* S3 may answer 200 with an error document once the parts were joined */
        if (rc == 0 && rs.body.data && strstr(rs.body.data, "<Error>"))
            rc = s3c_fail(c, &(struct s3c_resp){.status = 500, .body = rs.body}, NULL, err);
        s3c_resp_cleanup(&rs);
    }
    if (rc != 0 && q) { /* leave nothing behind */
        struct s3c_req aq = {.method = "DELETE",
                             .bucket = bucket,
                             .key = key,
                             .query = q,
                             .body_fd = -1,
                             .out_fd = -1};
        struct ty_err e2;
        ty_err_clear(&e2);
        if (s3c_do(c, &aq, &rs, &e2) == 0)
            ty_log(TY_LOG_INFO, "s3client.mpu.aborted", "bucket=%s upload=%s status=%ld", bucket,
                   id, rs.status);
        s3c_resp_cleanup(&rs);
    }
    ty_buf_cleanup(&doc);
    free(q);
    free(id);
    return rc;
}

int objstore_remote_put_file(struct s3c *c, const char *bucket, const char *key, const char *src,
                             const char *content_type, struct ty_err *err)
{
    struct stat st;
    int fd = open(src, O_RDONLY | O_CLOEXEC), rc;

    if (fd < 0 || fstat(fd, &st) != 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "cannot read '%s': %s", src, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if ((uint64_t)st.st_size > OBJR_MPU_THRESHOLD)
        rc = objr_multipart(c, bucket, key, fd, (uint64_t)st.st_size, content_type, err);
    else
        rc = objr_put_range(c, bucket, key, fd, 0, (uint64_t)st.st_size, content_type, NULL, 0,
                            NULL, err);
    close(fd);
    return rc;
}

int objstore_remote_delete(struct s3c *c, const char *bucket, const char *key, struct ty_err *err)
{
    struct s3c_req rq = {
        .method = "DELETE", .bucket = bucket, .key = key, .body_fd = -1, .out_fd = -1};
    struct s3c_resp rs;
    int rc = objr_call(c, &rq, &rs, "NoSuchBucket", err);
    s3c_resp_cleanup(&rs);
    return rc;
}

static int objr_push(struct objstore_listing *l, size_t *cap, char *key, int is_prefix)
{
    if (!key)
        return -1;
    if (l->n == *cap) {
        void *g = realloc(l->e, (*cap = *cap ? 2 * *cap : 64) * sizeof(*l->e));
        if (!g) {
            free(key);
            return -1;
        }
        l->e = g;
    }
    memset(&l->e[l->n], 0, sizeof(l->e[l->n]));
    l->e[l->n].key = key;
    l->e[l->n].is_prefix = is_prefix;
    l->n++;
    return 0;
}

static int objr_entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct objstore_entry *)a)->key, ((const struct objstore_entry *)b)->key);
}

int objstore_remote_list(struct s3c *c, const char *bucket, const char *prefix, const char *delim,
                         const char *token, const char *start_after, int max,
                         struct objstore_listing *out, struct ty_err *err)
{
    const char *pairs[12];
    char maxs[16];
    size_t np = 0, cap = 0;
    struct s3c_req rq = {.method = "GET",
                         .bucket = bucket,
                         .body_fd = -1,
                         .out_fd = -1,
                         .max_mem_body = 64u * 1024 * 1024};
    struct s3c_resp rs;
    const char *p, *end, *in, *ie;
    char *q, *t;
    int rc;

    memset(out, 0, sizeof(*out));
    snprintf(maxs, sizeof(maxs), "%d", max < 0 ? 0 : max > 1000 ? 1000 : max);
    pairs[np++] = "list-type";
    pairs[np++] = "2";
    pairs[np++] = "max-keys";
    pairs[np++] = maxs;
    if (prefix && *prefix) {
        pairs[np++] = "prefix";
        pairs[np++] = prefix;
    }
    if (delim && *delim) {
        pairs[np++] = "delimiter";
        pairs[np++] = delim;
    }
    if (token && *token) {
        pairs[np++] = "continuation-token";
        pairs[np++] = token;
    } else if (start_after && *start_after) {
        pairs[np++] = "start-after";
        pairs[np++] = start_after;
    }
    if (!(q = s3c_query(pairs, np / 2)))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    rq.query = q;
    rc = objr_call(c, &rq, &rs, "NoSuchBucket", err);
    free(q);
    if (rc != 0) {
        s3c_resp_cleanup(&rs);
        return rc;
    }
    p = rs.body.data;
    end = p + rs.body.len;
    while (rc == 0 && (p = ty_xml_find(p, end, "Contents", &in, &ie)) != NULL) {
        const char *a, *b;
        struct objstore_meta *m;
        if (!ty_xml_find(in, ie, "Key", &a, &b) || objr_push(out, &cap, ty_xml_text(a, b), 0)) {
            rc = ty_err_set(err, TY_EIO, NULL, "a listing from %s is not understood",
                            s3c_endpoint(c));
            break;
        }
        m = &out->e[out->n - 1].meta;
        if (ty_xml_find(in, ie, "ETag", &a, &b) && (t = ty_xml_text(a, b))) {
            m->parts = objr_etag(t, m->etag);
            free(t);
        }
        if (ty_xml_find(in, ie, "Size", &a, &b) && (t = ty_xml_text(a, b))) {
            m->size = strtoull(t, NULL, 10);
            free(t);
        }
        if (ty_xml_find(in, ie, "LastModified", &a, &b) && (t = ty_xml_text(a, b))) {
            m->mtime_ms = objr_iso_ms(t);
            free(t);
        }
    }
    p = rs.body.data;
    while (rc == 0 && (p = ty_xml_find(p, end, "CommonPrefixes", &in, &ie)) != NULL) {
        const char *a, *b;
        if (ty_xml_find(in, ie, "Prefix", &a, &b) && objr_push(out, &cap, ty_xml_text(a, b), 1))
            rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    if (rc == 0 && out->n > 1) /* S3 orders objects and common prefixes together, by key */
        qsort(out->e, out->n, sizeof(*out->e), objr_entry_cmp);
    if (rc == 0 && (t = objr_body_text(&rs, "IsTruncated")) != NULL) {
        out->truncated = strcmp(t, "true") == 0;
        free(t);
    }
    if (rc == 0 && out->truncated)
        out->next = objr_body_text(&rs, "NextContinuationToken");
    if (rc != 0)
        objstore_listing_cleanup(out);
    s3c_resp_cleanup(&rs);
    return rc;
}
