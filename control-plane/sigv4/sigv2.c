/*
 * sigv2.c - S3's Signature Version 2 (sigv2.h): parsing, the string to sign, HMAC-SHA1
 * verification and the time checks.
 *
 * The string to sign (AWS S3 developer guide, "Signing and authenticating REST requests"):
 *   VERB \n Content-MD5 \n Content-Type \n Date-or-Expires \n
 *   x-amz-* headers (lower-cased, sorted, values trimmed, repeats joined by ',') "k:v\n" each
 *   /bucket (virtual-hosted requests) + the path as sent + ?sub-resources (sorted, values
 *   decoded).
 * Date is "" when an x-amz-date header is present (AWS ignores Date then); the query form puts
 * Expires there, and its x-amz-* query parameters count as x-amz-* headers (botocore moves the
 * session token there). Invariant: nothing here allocates without a ceiling.
 */
#define _GNU_SOURCE /* strptime, timegm */
#include "sigv2.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ty_codec.h"

#define SIGV2_MAX_STS (64 * 1024)
#define SIGV2_MAX_AMZ 64

/* The sub-resources that belong to the canonical resource (AWS's list and botocore's). */
static const char *const sigv2_subresources[] = {
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "legal-hold",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "retention",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
};

/* The value of header name (any case), or NULL. borrowed. */
static const char *sigv2_header(const struct sigv4_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (req->headers[i].name && strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}

/* Percent-decodes s[0..n) into out (size outn, cut). '+' stays '+' (botocore encodes it); a
   bad escape stays as it is. */
static void sigv2_decode(const char *s, size_t n, char *out, size_t outn)
{
    (void)ty_pct_decode(s, n, TY_PCT_KEEP_BAD | TY_PCT_CUT, out, outn, NULL);
}

/*
 * The decoded value of query parameter name (exact, raw name), 1 when present; with
 * ci the name matches in any case. OUT: out (size n).
 */
static int sigv2_qparam(const char *q, const char *name, int ci, char *out, size_t n)
{
    size_t nl = strlen(name);
    while (q && *q) {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        size_t kl = eq ? (size_t)(eq - q) : len;
        if (kl == nl && (ci ? strncasecmp(q, name, nl) : strncmp(q, name, nl)) == 0) {
            if (eq)
                sigv2_decode(eq + 1, len - kl - 1, out, n);
            else if (n)
                out[0] = '\0';
            return 1;
        }
        q = amp ? amp + 1 : NULL;
    }
    return 0;
}

int sigv2_detect(const struct sigv4_request *req)
{
    const char *a = sigv2_header(req, "Authorization");
    char v[8];
    if (a)
        return strncmp(a, "AWS ", 4) == 0;
    return sigv2_qparam(req->query, "AWSAccessKeyId", 0, v, sizeof(v));
}

static void sigv2_trim(const char *s, const char **start, size_t *len)
{
    const char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *start = s;
    *len = (size_t)(e - s);
}

int sigv2_parse(const struct sigv4_request *req, struct sigv4_auth *auth, struct ty_err *err)
{
    struct sigv4_auth a;
    const char *h = sigv2_header(req, "Authorization"), *tok;
    char buf[2048];

    if (!sigv2_detect(req))
        return ty_err_set(err, TY_ENOAUTH, NULL, "Missing Authentication Token");
    memset(&a, 0, sizeof(a));
    a.sigv2 = 1;
    snprintf(a.service, sizeof(a.service), "s3");
    if (h) {
        const char *p = h + 4, *colon;
        size_t kl;
        while (*p == ' ')
            p++;
        colon = strrchr(p, ':');
        if (!colon || colon == p || !colon[1])
            return ty_err_set(err, TY_EINVAL, "Authorization",
                              "AWS authorization header is invalid.  Expected "
                              "AwsAccessKeyId:signature");
        kl = (size_t)(colon - p);
        if (kl >= sizeof(a.access_key))
            return ty_err_set(err, TY_EBADKEY, "Authorization", "access key too long");
        memcpy(a.access_key, p, kl);
        if (strlen(colon + 1) >= sizeof(a.signature))
            return ty_err_set(err, TY_EINVAL, "Authorization",
                              "AWS authorization header is invalid.  Expected "
                              "AwsAccessKeyId:signature");
        snprintf(a.signature, sizeof(a.signature), "%s", colon + 1);
        tok = sigv2_header(req, "x-amz-security-token");
        if (tok && strlen(tok) >= sizeof(a.session_token))
            return ty_err_set(err, TY_EBADKEY, "x-amz-security-token", "token too long");
        snprintf(a.session_token, sizeof(a.session_token), "%s", tok ? tok : "");
    } else {
        char *end = NULL;
        long long ex;
        if (!sigv2_qparam(req->query, "AWSAccessKeyId", 0, buf, sizeof(buf)) || !buf[0] ||
            strlen(buf) >= sizeof(a.access_key))
            return ty_err_set(err, buf[0] ? TY_EBADKEY : TY_EINVAL, "AWSAccessKeyId",
                              "Query-string authentication requires the Signature, Expires and "
                              "AWSAccessKeyId parameters");
        memcpy(a.access_key, buf, strlen(buf) + 1); /* length checked above */
        if (!sigv2_qparam(req->query, "Signature", 0, buf, sizeof(buf)) || !buf[0] ||
            strlen(buf) >= sizeof(a.signature))
            return ty_err_set(err, TY_EINVAL, "Signature",
                              "Query-string authentication requires the Signature, Expires and "
                              "AWSAccessKeyId parameters");
        memcpy(a.signature, buf, strlen(buf) + 1); /* length checked above */
        if (!sigv2_qparam(req->query, "Expires", 0, buf, sizeof(buf)) || !buf[0])
            return ty_err_set(err, TY_EINVAL, "Expires",
                              "Query-string authentication requires the Signature, Expires and "
                              "AWSAccessKeyId parameters");
        ex = strtoll(buf, &end, 10);
        if (*end || buf[0] == '-' || ex < 0 || ex > 0x7fffffffffLL)
            return ty_err_set(err, TY_EINVAL, "Expires",
                              "Invalid date (should be seconds since epoch): %.64s", buf);
        a.expires = (long)ex;
        a.presigned = 1;
        if (sigv2_qparam(req->query, "x-amz-security-token", 1, a.session_token,
                         sizeof(a.session_token)) &&
            strlen(a.session_token) >= sizeof(a.session_token) - 1)
            return ty_err_set(err, TY_EBADKEY, "x-amz-security-token", "token too long");
        if (!a.session_token[0] && (tok = sigv2_header(req, "x-amz-security-token")))
            snprintf(a.session_token, sizeof(a.session_token), "%s", tok);
    }
    *auth = a;
    OPENSSL_cleanse(&a, sizeof(a));
    return 0;
}

struct sigv2_kv {
    char name[128];
    char value[2048];
};

static int sigv2_kv_cmp(const void *x, const void *y)
{
    const struct sigv2_kv *a = x, *b = y;
    return strcmp(a->name, b->name);
}

/* Adds (or joins with ',') an x-amz-* value under its lower-cased name. */
static void sigv2_amz_add(struct sigv2_kv *kv, size_t *n, const char *name, size_t nl,
                          const char *value, size_t vl)
{
    char lname[128];
    size_t i;
    if (nl >= sizeof(lname))
        return;
    for (i = 0; i < nl; i++)
        lname[i] = (char)tolower((unsigned char)name[i]);
    lname[nl] = '\0';
    for (i = 0; i < *n; i++) {
        if (strcmp(kv[i].name, lname) == 0) {
            size_t cur = strlen(kv[i].value);
            snprintf(kv[i].value + cur, sizeof(kv[i].value) - cur, ",%.*s", (int)vl, value);
            return;
        }
    }
    if (*n >= SIGV2_MAX_AMZ)
        return;
    snprintf(kv[*n].name, sizeof(kv[*n].name), "%s", lname);
    snprintf(kv[*n].value, sizeof(kv[*n].value), "%.*s", (int)vl, value);
    (*n)++;
}

static int sigv2_is_subresource(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof(sigv2_subresources) / sizeof(sigv2_subresources[0]); i++)
        if (strlen(sigv2_subresources[i]) == n && strncmp(sigv2_subresources[i], s, n) == 0)
            return 1;
    return 0;
}

/* A standard header's trimmed value; for the query form, the query parameter of that name
   when the header is absent. */
static int sigv2_std(struct ty_buf *b, const struct sigv4_request *req,
                     const struct sigv4_auth *auth, const char *name)
{
    const char *v = sigv2_header(req, name), *s;
    size_t n;
    char q[1024];
    if (!v && auth->presigned && sigv2_qparam(req->query, name, 1, q, sizeof(q)))
        v = q;
    if (v) {
        sigv2_trim(v, &s, &n);
        if (ty_buf_append(b, s, n) != 0)
            return -1;
    }
    return ty_buf_puts(b, "\n");
}

/* 1 when the path names a bucket alone ("/bucket" path-style, "" or "/" virtual-hosted). */
static int sigv2_bare_bucket(const struct sigv4_request *req, const struct sigv4_auth *auth)
{
    const char *p = req->path && req->path[0] ? req->path : "/";
    if (auth->v2_bucket[0])
        return strcmp(p, "/") == 0;
    return p[0] == '/' && p[1] && !strchr(p + 1, '/');
}

/* The string to sign; bucket_slash: a bucket-only resource ends in '/' ("/bucket/"), as
   botocore signs it and AWS's examples show. */
static int sigv2_sts(const struct sigv4_request *req, const struct sigv4_auth *auth,
                     int bucket_slash, struct ty_buf *out, struct ty_err *err)
{
    struct sigv2_kv *kv = NULL, *sub = NULL;
    size_t nkv = 0, nsub = 0;
    int bad = 0; /* any append failed */
    const char *q, *s;
    size_t n;

    ty_buf_cleanup(out);
    ty_buf_init(out, SIGV2_MAX_STS);
    kv = calloc(SIGV2_MAX_AMZ, sizeof(*kv));
    sub = calloc(SIGV2_MAX_AMZ, sizeof(*sub));
    if (!kv || !sub)
        goto nomem;

    bad |= ty_buf_printf(out, "%s\n", req->method ? req->method : "");
    bad |= sigv2_std(out, req, auth, "Content-MD5");
    bad |= sigv2_std(out, req, auth, "Content-Type");
    if (auth->presigned) {
        bad |= ty_buf_printf(out, "%ld\n", auth->expires);
    } else {
        const char *d = sigv2_header(req, "x-amz-date") ? NULL : sigv2_header(req, "Date");
        if (d) {
            sigv2_trim(d, &s, &n);
            bad |= ty_buf_append(out, s, n);
        }
        bad |= ty_buf_puts(out, "\n");
    }

    for (size_t i = 0; i < req->nheaders; i++) {
        const char *hn = req->headers[i].name;
        if (hn && strncasecmp(hn, "x-amz-", 6) == 0 && req->headers[i].value) {
            sigv2_trim(req->headers[i].value, &s, &n);
            sigv2_amz_add(kv, &nkv, hn, strlen(hn), s, n);
        }
    }
    for (q = req->query; auth->presigned && q && *q;) {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        size_t kl = eq ? (size_t)(eq - q) : len;
        char name[128], value[2048];
        sigv2_decode(q, kl, name, sizeof(name));
        if (strncasecmp(name, "x-amz-", 6) == 0) {
            sigv2_decode(eq ? eq + 1 : "", eq ? len - kl - 1 : 0, value, sizeof(value));
            sigv2_trim(value, &s, &n);
            sigv2_amz_add(kv, &nkv, name, strlen(name), s, n);
        }
        q = amp ? amp + 1 : NULL;
    }
    qsort(kv, nkv, sizeof(*kv), sigv2_kv_cmp);
    for (size_t i = 0; i < nkv; i++)
        bad |= ty_buf_printf(out, "%s:%s\n", kv[i].name, kv[i].value);

    if (auth->v2_bucket[0])
        bad |= ty_buf_printf(out, "/%s", auth->v2_bucket);
    bad |= ty_buf_puts(out, req->path && req->path[0] ? req->path : "/");
    if (bucket_slash && !auth->v2_bucket[0] && sigv2_bare_bucket(req, auth))
        bad |= ty_buf_puts(out, "/");
    for (q = req->query; q && *q;) {
        const char *amp = strchr(q, '&');
        size_t len = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', len);
        size_t kl = eq ? (size_t)(eq - q) : len;
        if (sigv2_is_subresource(q, kl) && nsub < SIGV2_MAX_AMZ) {
            snprintf(sub[nsub].name, sizeof(sub[nsub].name), "%.*s", (int)kl, q);
            if (eq) {
                sub[nsub].value[0] = '=';
                sigv2_decode(eq + 1, len - kl - 1, sub[nsub].value + 1,
                             sizeof(sub[nsub].value) - 1);
            }
            nsub++;
        }
        q = amp ? amp + 1 : NULL;
    }
    /* a stable sort by name, as botocore's */
    for (size_t i = 1; i < nsub; i++) {
        for (size_t j = i; j > 0 && strcmp(sub[j - 1].name, sub[j].name) > 0; j--) {
            struct sigv2_kv t = sub[j];
            sub[j] = sub[j - 1];
            sub[j - 1] = t;
        }
    }
    for (size_t i = 0; i < nsub; i++)
        bad |= ty_buf_printf(out, "%c%s%s", i ? '&' : '?', sub[i].name, sub[i].value);
    free(kv);
    free(sub);
    if (bad || !out->data)
        return ty_err_set(err, TY_ETOOBIG, NULL, "string to sign too large");
    return 0;
nomem:
    free(kv);
    free(sub);
    return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
}

int sigv2_string_to_sign(const struct sigv4_request *req, const struct sigv4_auth *auth,
                         struct ty_buf *out, struct ty_err *err)
{
    return sigv2_sts(req, auth, 1, out, err);
}

/* 1 when HMAC-SHA1(secret, string to sign) in base64 is auth's signature; 0 when not; < 0 on
   error (err set). */
static int sigv2_matches(const struct sigv4_request *req, const struct sigv4_auth *auth,
                         const char *secret_key, int bucket_slash, struct ty_err *err)
{
    struct ty_buf sts;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    char b64[64];
    int rc;

    ty_buf_init(&sts, SIGV2_MAX_STS);
    if ((rc = sigv2_sts(req, auth, bucket_slash, &sts, err)) != 0) {
        ty_buf_cleanup(&sts);
        return rc;
    }
    if (!HMAC(EVP_sha1(), secret_key, (int)strlen(secret_key), (const unsigned char *)sts.data,
              sts.len, md, &ml)) {
        ty_buf_cleanup(&sts);
        return ty_err_set(err, TY_EINVAL, NULL, "HMAC failed");
    }
    ty_buf_cleanup(&sts);
    EVP_EncodeBlock((unsigned char *)b64, md, (int)ml);
    return strlen(b64) == strlen(auth->signature) &&
           CRYPTO_memcmp(b64, auth->signature, strlen(b64)) == 0;
}

/* Seconds since the epoch of an RFC 1123 date ("Thu, 03 Dec 2026 06:58:04 GMT") or an ISO 8601
   basic one ("20261203T065804Z"); -1 when neither. */
static time_t sigv2_parse_date(const char *s)
{
    struct tm tm;
    const char *end;
    memset(&tm, 0, sizeof(tm));
    while (*s == ' ')
        s++;
    end = strptime(s, "%a, %d %b %Y %H:%M:%S", &tm);
    if (!end) {
        memset(&tm, 0, sizeof(tm));
        end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);
        if (!end || *end)
            return -1;
    }
    return timegm(&tm);
}

int sigv2_verify(const struct sigv4_request *req, const struct sigv4_auth *auth,
                 const char *secret_key, time_t now, struct ty_err *err)
{
    int rc;

    if (!req || !auth || !secret_key || !auth->sigv2)
        return ty_err_set(err, TY_EINVAL, NULL, "bad arguments");
    if (auth->presigned) {
        /* a URL lives at most a week, as SigV4's X-Amz-Expires: one that claims longer is
           refused with the words of an expired one (S3's AccessDenied), never served */
        if ((long long)now > (long long)auth->expires ||
            (long long)auth->expires > (long long)now + SIGV4_MAX_EXPIRES_S)
            return ty_err_set(err, TY_EBADSIG, "Expires", "Request has expired");
    } else {
        const char *d = sigv2_header(req, "x-amz-date");
        time_t t;
        if (!d)
            d = sigv2_header(req, "Date");
        t = d ? sigv2_parse_date(d) : (time_t)-1;
        if (t == (time_t)-1)
            return ty_err_set(err, TY_EBADSIG, "Date",
                              "AWS authentication requires a valid Date or x-amz-date header");
        if (t + SIGV4_MAX_SKEW_S < now)
            return ty_err_set(err, TY_EBADSIG, "Date",
                              "Signature expired: %s is now earlier than the allowed skew", d);
        if (t - SIGV4_MAX_SKEW_S > now)
            return ty_err_set(err, TY_EBADSIG, "Date",
                              "Signature not yet current: %s is still later than the allowed "
                              "skew",
                              d);
    }
    /* "/bucket/" as botocore signs it; "/bucket" as sent, for clients that sign the path */
    rc = sigv2_matches(req, auth, secret_key, 1, err);
    if (rc == 0 && sigv2_bare_bucket(req, auth) && !auth->v2_bucket[0])
        rc = sigv2_matches(req, auth, secret_key, 0, err);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return ty_err_set(err, TY_EBADSIG, "Signature",
                          "The request signature we calculated does not match the signature you "
                          "provided. Check your key and signing method.");
    return 0;
}
