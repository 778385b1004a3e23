/*
 * s3_bucket.c - S3's service and bucket operations: ListBuckets, CreateBucket,
 * ListObjects(V2), ListMultipartUploads, DeleteObjects (their XML in S3's words).
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

/* ---- operations: service and buckets -------------------------------------------------------- */

void s3__list_buckets(struct http_request *req, struct http_response *resp, struct objstore *os,
                      const struct front_ctx *rc)
{
    struct objstore_bucket *v = NULL;
    size_t n = 0;
    struct ty_err err;
    struct ty_buf b;

    ty_err_clear(&err);
    if (objstore_bucket_list(os, &v, &n, &err) != 0) {
        s3__error_from(req, resp, &err, NULL);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_printf(&b,
                  S3_XML_HDR "<ListAllMyBucketsResult xmlns=\"" S3_NS "\"><Owner><ID>%s</ID>"
                             "<DisplayName>trainyard</DisplayName></Owner><Buckets>",
                  rc->account_id ? rc->account_id : "000000000000");
    for (size_t i = 0; i < n; i++) {
        char d[40];
        s3__iso8601(v[i].created_ms, d, sizeof(d));
        ty_buf_puts(&b, "<Bucket><Name>");
        s3__xml_esc(&b, v[i].name);
        ty_buf_printf(&b, "</Name><CreationDate>%s</CreationDate></Bucket>", d);
    }
    ty_buf_puts(&b, "</Buckets></ListAllMyBucketsResult>");
    free(v);
    s3__xml_resp(req, resp, 200, &b);
}

void s3__create_bucket(struct http_request *req, struct http_response *resp, struct objstore *os,
                       const struct s3_req *r, const char *served)
{
    struct ty_err err;
    char region[64];
    char loc[300];

    ty_err_clear(&err);
    /* without a LocationConstraint a bucket is in the region served (every signature names it) */
    snprintf(region, sizeof(region), "%s", served && *served ? served : "us-east-1");
    if (!objstore_bucket_name_ok(r->bucket)) {
        struct s3_errx x = {{"BucketName"}, {r->bucket}, 1};
        s3__error(req, resp, "InvalidBucketName", "The specified bucket is not valid.", r, &x);
        return;
    }
    if (req->body.len) {
        const char *in, *in_end, *end = req->body.data + req->body.len;
        if (!ty_xml_find(req->body.data, end, "CreateBucketConfiguration", &in, &in_end)) {
            s3__malformed(req, resp, r);
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
            s3__error_from(req, resp, &err, r);
            return;
        }
    }
    snprintf(loc, sizeof(loc), "/%s", r->bucket);
    s3__empty(req, resp, 200);
    http_response_header(resp, "Location", loc);
}

/* ListObjects (v1) and ListObjectsV2. */
void s3__list_objects(struct http_request *req, struct http_response *resp, struct objstore *os,
                      const struct s3_req *r, int v2)
{
    const char *prefix = s3__qget(r, "prefix"), *delim = s3__qget(r, "delimiter");
    const char *token = v2 ? s3__qget(r, "continuation-token") : NULL;
    const char *after = v2 ? s3__qget(r, "start-after") : s3__qget(r, "marker");
    const char *mk = s3__qget(r, "max-keys"), *enc = s3__qget(r, "encoding-type");
    const char *fo = v2 ? s3__qget(r, "fetch-owner") : NULL;
    int url = enc && strcmp(enc, "url") == 0, max = 1000;
    /* v1 always names the owner; v2 when asked (fetch-owner=true) */
    int owner = !v2 || (fo && strcmp(fo, "true") == 0);
    struct objstore_listing l;
    struct ty_err err;
    struct ty_buf b;
    size_t nkeys = 0;

    ty_err_clear(&err);
    if (enc && !url) {
        s3__error(req, resp, "InvalidArgument", "Invalid Encoding Method specified in Request", r,
                  NULL);
        return;
    }
    if (mk) {
        char *e;
        long v = strtol(mk, &e, 10);
        if (!*mk || *e || v < 0) {
            s3__error(req, resp, "InvalidArgument",
                      "Provided max-keys not an integer or within integer range", r, NULL);
            return;
        }
        max = v > 1000 ? 1000 : (int)v;
    }
    if (delim && !*delim)
        delim = NULL;
    if (objstore_list(os, r->bucket, prefix, delim, token, after, max, &l, &err) != 0) {
        s3__error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_puts(&b, S3_XML_HDR "<ListBucketResult xmlns=\"" S3_NS "\"><Name>");
    s3__xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Name><Prefix>");
    /* ListObjects (v1) answers Prefix as sent even with encoding-type=url (botocore decodes
       it only for v2) */
    s3__list_esc(&b, prefix ? prefix : "", url && v2);
    ty_buf_puts(&b, "</Prefix>");
    if (v2) {
        if (token) {
            ty_buf_puts(&b, "<ContinuationToken>");
            s3__xml_esc(&b, token);
            ty_buf_puts(&b, "</ContinuationToken>");
        }
        if (after) {
            ty_buf_puts(&b, "<StartAfter>");
            s3__list_esc(&b, after, url);
            ty_buf_puts(&b, "</StartAfter>");
        }
        ty_buf_printf(&b, "<KeyCount>%zu</KeyCount>", l.n);
    } else {
        ty_buf_puts(&b, "<Marker>");
        s3__list_esc(&b, after ? after : "", url);
        ty_buf_puts(&b, "</Marker>");
        if (l.truncated && delim && l.n) {
            ty_buf_puts(&b, "<NextMarker>");
            s3__list_esc(&b, l.e[l.n - 1].key, url);
            ty_buf_puts(&b, "</NextMarker>");
        }
    }
    ty_buf_printf(&b, "<MaxKeys>%d</MaxKeys>", max);
    if (delim) {
        ty_buf_puts(&b, "<Delimiter>");
        s3__list_esc(&b, delim, url);
        ty_buf_puts(&b, "</Delimiter>");
    }
    if (url)
        ty_buf_puts(&b, "<EncodingType>url</EncodingType>");
    ty_buf_printf(&b, "<IsTruncated>%s</IsTruncated>", l.truncated ? "true" : "false");
    if (v2 && l.truncated && l.next) {
        ty_buf_puts(&b, "<NextContinuationToken>");
        s3__xml_esc(&b, l.next);
        ty_buf_puts(&b, "</NextContinuationToken>");
    }
    for (size_t i = 0; i < l.n; i++) {
        char d[40];
        if (l.e[i].is_prefix)
            continue;
        nkeys++;
        s3__iso8601(l.e[i].meta.mtime_ms, d, sizeof(d));
        ty_buf_puts(&b, "<Contents><Key>");
        s3__list_esc(&b, l.e[i].key, url);
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
        s3__list_esc(&b, l.e[i].key, url);
        ty_buf_puts(&b, "</Prefix></CommonPrefixes>");
    }
    (void)nkeys;
    ty_buf_puts(&b, "</ListBucketResult>");
    objstore_listing_cleanup(&l);
    if (b.len >= S3_XML_MAX - 1) {
        ty_buf_cleanup(&b);
        s3__error(req, resp, "InternalError", "listing too large", r, NULL);
        return;
    }
    s3__xml_resp(req, resp, 200, &b);
}

void s3__list_uploads(struct http_request *req, struct http_response *resp, struct objstore *os,
                      const struct s3_req *r)
{
    struct objstore_upload *u = NULL;
    size_t n = 0;
    int trunc = 0, max = 1000;
    const char *mu = s3__qget(r, "max-uploads"), *prefix = s3__qget(r, "prefix");
    struct ty_err err;
    struct ty_buf b;

    ty_err_clear(&err);
    if (mu)
        max = s3__int(mu);
    if (objstore_mpu_list(os, r->bucket, prefix, max, &u, &n, &trunc, &err) != 0) {
        s3__error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, S3_XML_MAX);
    ty_buf_puts(&b, S3_XML_HDR "<ListMultipartUploadsResult xmlns=\"" S3_NS "\"><Bucket>");
    s3__xml_esc(&b, r->bucket);
    ty_buf_puts(&b, "</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker><Prefix>");
    s3__xml_esc(&b, prefix ? prefix : "");
    ty_buf_printf(&b, "</Prefix><MaxUploads>%d</MaxUploads><IsTruncated>%s</IsTruncated>",
                  max < 1 || max > 1000 ? 1000 : max, trunc ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        char d[40];
        s3__iso8601(u[i].initiated_ms, d, sizeof(d));
        ty_buf_puts(&b, "<Upload><Key>");
        s3__xml_esc(&b, u[i].key);
        ty_buf_printf(&b,
                      "</Key><UploadId>%s</UploadId><Initiator><ID>trainyard</ID>"
                      "<DisplayName>trainyard</DisplayName></Initiator><Owner><ID>trainyard</ID>"
                      "<DisplayName>trainyard</DisplayName></Owner><StorageClass>STANDARD"
                      "</StorageClass>"
                      "<Initiated>%s</Initiated></Upload>",
                      u[i].id, d);
        free(u[i].key);
    }
    free(u);
    ty_buf_puts(&b, "</ListMultipartUploadsResult>");
    s3__xml_resp(req, resp, 200, &b);
}

void s3__get_acl(struct http_request *req, struct http_response *resp, struct objstore *os,
                 const struct s3_req *r)
{
    static const char owner[] = "<ID>trainyard</ID><DisplayName>trainyard</DisplayName>";
    struct objstore_meta m;
    struct ty_err err;
    struct ty_buf b;
    int rc;

    ty_err_clear(&err);
    memset(&m, 0, sizeof(m));
    rc = r->key[0] ? objstore_head(os, r->bucket, r->key, &m, &err)
                   : objstore_bucket_get(os, r->bucket, NULL, &err);
    objstore_meta_cleanup(&m);
    if (rc != 0) {
        s3__error_from(req, resp, &err, r);
        return;
    }
    ty_buf_init(&b, 4096);
    ty_buf_printf(&b,
                  S3_XML_HDR "<AccessControlPolicy xmlns=\"" S3_NS "\"><Owner>%s</Owner>"
                             "<AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/"
                             "2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">%s</Grantee>"
                             "<Permission>FULL_CONTROL</Permission></Grant></AccessControlList>"
                             "</AccessControlPolicy>",
                  owner, owner);
    s3__xml_resp(req, resp, 200, &b);
}

/* s3:DeleteObject on bucket/key for the worker's caller, as S3 checks each key of a batch
   delete: 0, -TY_EDENIED, or a store error. */
static int s3_delete_allowed(const char *bucket, const char *key, struct ty_err *err)
{
    struct worker *w = worker_self();
    size_t n = strlen(bucket) + strlen(key) + 16;
    char *arn = malloc(n);
    int rc;

    if (!arn)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    snprintf(arn, n, "arn:aws:s3:::%s/%s", bucket, key);
    rc = authz_check(w->store, w->principal, "s3:DeleteObject", arn, NULL, 0, err);
    free(arn);
    return rc;
}

int s3__delete_keys_allowed(struct http_request *req, struct http_response *resp,
                            const struct s3_req *r)
{
    const char *p, *in, *in_end, *oin, *oend, *end;
    struct ty_err err;
    int rc = 0;

    if (req->too_big || !req->body.len)
        return 0; /* the store answers MalformedXML */
    end = req->body.data + req->body.len;
    if (!ty_xml_find(req->body.data, end, "Delete", &in, &in_end))
        return 0;
    for (p = in; rc == 0 && (p = ty_xml_find(p, in_end, "Object", &oin, &oend)) != NULL;) {
        const char *ki, *ke;
        char *key = ty_xml_find(oin, oend, "Key", &ki, &ke) ? ty_xml_text(ki, ke) : NULL;
        ty_err_clear(&err);
        if (key)
            rc = s3_delete_allowed(r->bucket, key, &err);
        free(key);
    }
    if (rc == -TY_EDENIED)
        s3__error(req, resp, "AccessDenied", "Access Denied", r, NULL);
    else if (rc != 0)
        s3__error_from(req, resp, &err, r);
    return rc == 0 ? 0 : -1;
}

void s3__delete_objects(struct http_request *req, struct http_response *resp, struct objstore *os,
                        const struct s3_req *r)
{
    const char *p, *end, *in, *in_end, *oin, *oend;
    struct ty_buf b;
    int quiet = 0, count = 0, rc;
    struct ty_err err;

    ty_err_clear(&err);
    if (req->too_big || !req->body.len) {
        s3__malformed(req, resp, r);
        return;
    }
    end = req->body.data + req->body.len;
    if (!ty_xml_find(req->body.data, end, "Delete", &in, &in_end)) {
        s3__malformed(req, resp, r);
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
        s3__malformed(req, resp, r);
        return;
    }
    if (objstore_bucket_get(os, r->bucket, NULL, &err) != 0) {
        s3__error_from(req, resp, &err, r);
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
            s3__xml_esc(&b, key ? key : "");
            ty_buf_puts(&b, "</Key><Code>InvalidArgument</Code><Message>Invalid key</Message>"
                            "</Error>");
        } else if ((rc = s3_delete_allowed(r->bucket, key, &err)) != 0) {
            ty_buf_puts(&b, "<Error><Key>");
            s3__xml_esc(&b, key);
            ty_buf_puts(&b, rc == -TY_EDENIED
                                ? "</Key><Code>AccessDenied</Code><Message>Access Denied</Message>"
                                  "</Error>"
                                : "</Key><Code>InternalError</Code><Message>We encountered an "
                                  "internal error. Please try again.</Message></Error>");
        } else if (objstore_delete(os, r->bucket, key, &err) != 0) {
            ty_buf_puts(&b, "<Error><Key>");
            s3__xml_esc(&b, key);
            ty_buf_puts(&b, "</Key><Code>InternalError</Code><Message>");
            s3__xml_esc(&b, err.msg);
            ty_buf_puts(&b, "</Message></Error>");
        } else if (!quiet) {
            ty_buf_puts(&b, "<Deleted><Key>");
            s3__xml_esc(&b, key);
            ty_buf_puts(&b, "</Key></Deleted>");
        }
        free(key);
    }
    ty_buf_puts(&b, "</DeleteResult>");
    s3__xml_resp(req, resp, 200, &b);
}
