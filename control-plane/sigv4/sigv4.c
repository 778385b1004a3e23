/*
 * sigv4.c - AWS Signature Version 4: parsing, canonicalisation, verification and signing.
 *
 * Owns: the Authorization header and X-Amz-* query parsers, the canonical request (URI, query,
 * headers, payload hash), the string to sign, the signing key and the signature compare, the
 * skew and expiry checks, and the client-side signers used by tests and benchmarks. Signing and
 * verifying share one canonicaliser (build_canonical), so they cannot drift apart.
 * Does not own: principals or secrets (the caller looks them up), the wire form of errors
 * (route.c).
 * Invariants: every buffer is bounded (fixed arrays in struct sigv4_auth, ty_buf with a ceiling
 * for the canonical request); input is never trusted, so malformed input returns an error and
 * never reads or writes out of bounds. No global state: thread-safe.
 */
#include "sigv4.h"
#include "ty_codec.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#define SIGV4_ALGORITHM     "AWS4-HMAC-SHA256"
#define SIGV4_TERMINATOR    "aws4_request"
#define SIGV4_UNSIGNED      "UNSIGNED-PAYLOAD"
#define SIGV4_MAX_CANONICAL ((size_t)256 * 1024) /* ceiling on a canonical request */
#define SIGV4_MAX_PARAMS    1024                 /* query parameters in one request */
#define SIGV4_MAX_SECRET    512                  /* bytes of a secret access key */
#define SIGV4_MAX_NAME      128                  /* bytes of one header name */
#define SIGV4_MAX_ECHO      512                  /* bytes of client input echoed in a message */
#define SIGV4_MAX_TIME      253402300799LL       /* 9999-12-31T23:59:59Z */

static const char sigv4_msg_mismatch[] =
    "The request signature we calculated does not match the signature you provided. Check your "
    "AWS Secret Access Key and signing method. Consult the service documentation for details.";
static const char sigv4_msg_query_missing[] =
    "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, "
    "X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.";

/* ---- characters ------------------------------------------------------------------------- */

static int is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static unsigned char lower(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Case-insensitive (ASCII) equality of a NUL-terminated string and p[0..n). */
static int name_eq(const char *s, const char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (s[i] == '\0' || lower((unsigned char)s[i]) != lower((unsigned char)p[i]))
            return 0;
    }
    return s[i] == '\0';
}

/* Trims whitespace on both ends of p[0..*n); returns the new start. */
static const char *trim(const char *p, size_t *n)
{
    while (*n && is_ws((unsigned char)p[0])) {
        p++;
        (*n)--;
    }
    while (*n && is_ws((unsigned char)p[*n - 1]))
        (*n)--;
    return p;
}

/* Copies p[0..n) into dst (size dstsz) with a NUL; -1 when it does not fit. */
static int copy_str(char *dst, size_t dstsz, const char *p, size_t n)
{
    if (n >= dstsz)
        return -1;
    memcpy(dst, p, n);
    dst[n] = '\0';
    return 0;
}

/* 1 when s is NUL-terminated inside an array of size n. */
static int bounded(const char *s, size_t n)
{
    return memchr(s, '\0', n) != NULL;
}

/* ---- hashing ---------------------------------------------------------------------------- */

static EVP_MD *sigv4_md;
static pthread_once_t sigv4_md_once = PTHREAD_ONCE_INIT;

static void sigv4_md_fetch(void)
{
    sigv4_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* SHA-256, fetched from the provider once per process (EVP_sha256() is fetched again on every
   digest it starts); kept until exit. */
static const EVP_MD *sigv4_sha256(void)
{
    pthread_once(&sigv4_md_once, sigv4_md_fetch);
    return sigv4_md ? sigv4_md : EVP_sha256();
}

/* Writes the lower-case hex SHA-256 of p[0..n) into out (65 bytes). 0 or -TY_EINTERNAL. */
static int sha256_hex(const void *p, size_t n, char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    static const char empty = 0;

    if (!p)
        p = &empty;
    if (!EVP_Digest(p, n, md, &len, sigv4_sha256(), NULL) || len != 32)
        return -TY_EINTERNAL;
    ty_hex_encode(md, 32, out);
    return 0;
}

/* out = HMAC-SHA256(key, msg) (RFC 2104 over sigv4_sha256: one context, no per-call fetch of
   the MAC and digest as HMAC() does); 0 or -TY_EINTERNAL. */
static int hmac256(const void *key, size_t keylen, const char *msg, unsigned char *out)
{
    unsigned char k[64], pad[64], inner[32];
    const EVP_MD *md = sigv4_sha256();
    EVP_MD_CTX *ctx;
    unsigned int len = 0;
    int ok;

    memset(k, 0, sizeof(k));
    if (keylen > sizeof(k)) {
        if (!EVP_Digest(key, keylen, k, &len, md, NULL))
            return -TY_EINTERNAL;
    } else {
        memcpy(k, key, keylen);
    }
    if (!(ctx = EVP_MD_CTX_new())) {
        OPENSSL_cleanse(k, sizeof(k));
        return -TY_EINTERNAL;
    }
    for (size_t i = 0; i < sizeof(pad); i++)
        pad[i] = k[i] ^ 0x36;
    ok = EVP_DigestInit_ex(ctx, md, NULL) && EVP_DigestUpdate(ctx, pad, sizeof(pad)) &&
         EVP_DigestUpdate(ctx, msg, strlen(msg)) && EVP_DigestFinal_ex(ctx, inner, &len) &&
         len == 32;
    for (size_t i = 0; i < sizeof(pad); i++)
        pad[i] = k[i] ^ 0x5c;
    ok = ok && EVP_DigestInit_ex(ctx, md, NULL) && EVP_DigestUpdate(ctx, pad, sizeof(pad)) &&
         EVP_DigestUpdate(ctx, inner, sizeof(inner)) && EVP_DigestFinal_ex(ctx, out, &len) &&
         len == 32;
    EVP_MD_CTX_free(ctx);
    OPENSSL_cleanse(k, sizeof(k));
    OPENSSL_cleanse(pad, sizeof(pad));
    OPENSSL_cleanse(inner, sizeof(inner));
    return ok ? 0 : -TY_EINTERNAL;
}

/* ---- dates -------------------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (valid for years 1..9999). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    long long era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

static int num(const char *p, size_t n)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit((unsigned char)p[i]) || v > (INT_MAX - 9) / 10)
            return -1; /* not a number, or one too large to be a date field */
        v = v * 10 + (p[i] - '0');
    }
    return v;
}

static int make_time(int y, int mo, int d, int h, int mi, int s, time_t *out)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h < 0 || h > 23 || mi < 0 ||
        mi > 59 || s < 0 || s > 60)
        return -1;
    *out = (time_t)(days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400LL + h * 3600LL +
                    mi * 60LL + s);
    return 0;
}

/* Parses YYYYMMDD'T'HHMMSS'Z' (exactly 16 characters); 0 or -1. */
static int parse_amz_date(const char *s, time_t *out)
{
    if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
        return -1;
    return make_time(num(s, 4), num(s + 4, 2), num(s + 6, 2), num(s + 9, 2), num(s + 11, 2),
                     num(s + 13, 2), out);
}

/* Writes v as exactly n decimal digits at p. */
static void put_digits(char *p, int v, int n)
{
    while (n-- > 0) {
        p[n] = (char)('0' + v % 10);
        v /= 10;
    }
}

/* Formats t as YYYYMMDD'T'HHMMSS'Z' into out (17 bytes). */
static void format_amz_date(time_t t, char *out)
{
    struct tm tm;

    memcpy(out, "00000000T000000Z", 17);
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0)
        return;
    put_digits(out, tm.tm_year + 1900, 4);
    put_digits(out + 4, tm.tm_mon + 1, 2);
    put_digits(out + 6, tm.tm_mday, 2);
    put_digits(out + 9, tm.tm_hour, 2);
    put_digits(out + 11, tm.tm_min, 2);
    put_digits(out + 13, tm.tm_sec, 2);
}

/*
 * Converts an HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT"; zone GMT, UTC, +0000 or -0000, the
 * last as botocore writes it) to X-Amz-Date form.
 */
static int http_date_to_amz(const char *p, size_t n, char *out)
{
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    int mo = 0;
    time_t t;

    if (n < 29 || p[3] != ',' || p[4] != ' ' || p[7] != ' ' || p[11] != ' ' || p[16] != ' ' ||
        p[19] != ':' || p[22] != ':' || p[25] != ' ')
        return -1;
    if (!(n == 29 && (memcmp(p + 26, "GMT", 3) == 0 || memcmp(p + 26, "UTC", 3) == 0)) &&
        !(n == 31 && (memcmp(p + 26, "+0000", 5) == 0 || memcmp(p + 26, "-0000", 5) == 0)))
        return -1;
    for (int i = 0; i < 12; i++) {
        if (memcmp(months + (size_t)3 * (size_t)i, p + 8, 3) == 0)
            mo = i + 1;
    }
    if (make_time(num(p + 12, 4), mo, num(p + 5, 2), num(p + 17, 2), num(p + 20, 2), num(p + 23, 2),
                  &t) != 0)
        return -1;
    format_amz_date(t, out);
    return 0;
}

/* ---- request access ----------------------------------------------------------------------- */

/* The first header called name (any case), or NULL. Borrowed from req. */
static const char *header_get(const struct sigv4_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++) {
        const char *h = req->headers[i].name;
        if (h && req->headers[i].value && name_eq(name, h, strlen(h)))
            return req->headers[i].value;
    }
    return NULL;
}

/*
 * Percent-decodes p[0..n) into the bounded buffer out (size outsz, NUL-terminated). A '%' not
 * followed by two hex digits stands for itself. OUT: *outlen. Returns 0 or -1 when too long.
 */
static int pct_decode(const char *p, size_t n, char *out, size_t outsz, size_t *outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '%' && i + 2 < n && ty_hex_value((unsigned char)p[i + 1]) >= 0 &&
            ty_hex_value((unsigned char)p[i + 2]) >= 0) {
            c = (unsigned char)(ty_hex_value((unsigned char)p[i + 1]) * 16 +
                                ty_hex_value((unsigned char)p[i + 2]));
            i += 2;
        }
        if (o + 1 >= outsz)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    *outlen = o;
    return 0;
}

/*
 * Finds the first query parameter whose decoded name is key and writes its decoded value into
 * out (size outsz). Returns 1 when found, 0 when absent, -1 when the value does not fit.
 */
static int query_get(const char *query, const char *key, char *out, size_t outsz)
{
    const char *p = query;
    size_t keylen = strlen(key);
    char name[64];

    if (!p)
        return 0;
    while (*p) {
        const char *end = strchr(p, '&');
        const char *eq;
        size_t seglen = end ? (size_t)(end - p) : strlen(p);
        size_t nlen, klen;

        eq = memchr(p, '=', seglen);
        klen = eq ? (size_t)(eq - p) : seglen;
        if (pct_decode(p, klen, name, sizeof(name), &nlen) == 0 && nlen == keylen &&
            memcmp(name, key, keylen) == 0) {
            size_t vlen;
            if (!eq)
                return copy_str(out, outsz, "", 0) == 0 ? 1 : -1;
            if (pct_decode(eq + 1, seglen - klen - 1, out, outsz, &vlen) != 0)
                return -1;
            if (memchr(out, '\0', vlen))
                return -1;
            return 1;
        }
        p += seglen;
        if (*p == '&')
            p++;
    }
    return 0;
}

/* ---- canonical request -------------------------------------------------------------------- */

/*
 * Appends p[0..n) URI-encoded (RFC 3986 unreserved characters kept, upper-case hex). keep_slash
 * keeps '/'; keep_escapes keeps a valid %XX escape as it is (S3 paths arrive encoded once).
 */
static int uri_encode(struct ty_buf *b, const char *p, size_t n, int keep_slash, int keep_escapes)
{
    static const char digits[] = "0123456789ABCDEF";
    size_t run = 0;
    int rc;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        char esc[3];

        if (is_unreserved(c) || (keep_slash && c == '/')) {
            run++;
            continue;
        }
        if (keep_escapes && c == '%' && i + 2 < n && ty_hex_value((unsigned char)p[i + 1]) >= 0 &&
            ty_hex_value((unsigned char)p[i + 2]) >= 0) {
            run += 3;
            i += 2;
            continue;
        }
        if (run && (rc = ty_buf_append(b, p + i - run, run)) != 0)
            return rc;
        run = 0;
        esc[0] = '%';
        esc[1] = digits[c >> 4];
        esc[2] = digits[c & 15];
        if ((rc = ty_buf_append(b, esc, 3)) != 0)
            return rc;
    }
    if (run)
        return ty_buf_append(b, p + n - run, run);
    return 0;
}

/*
 * Appends the canonical URI. For S3 the path is used as received (encoded once, escapes kept);
 * for every other service the path is normalised (empty and '.' segments dropped, '..'
 * resolved, as botocore does) and then encoded again, '%' included.
 */
static int canonical_uri(struct ty_buf *b, const char *path, int s3)
{
    size_t n = path ? strlen(path) : 0;
    size_t nseg = 0, cap = 1, i, start;
    size_t(*segs)[2];
    int rc = 0;

    if (n == 0)
        return ty_buf_puts(b, "/");
    if (s3)
        return uri_encode(b, path, n, 1, 1);
    for (i = 0; i < n; i++)
        cap += path[i] == '/';
    segs = calloc(cap, sizeof(*segs));
    if (!segs)
        return -TY_ENOMEM;
    for (start = 0; start <= n; start = i + 1) {
        const char *end = memchr(path + start, '/', n - start);
        size_t len;
        i = end ? (size_t)(end - path) : n;
        len = i - start;
        if (len == 0 || (len == 1 && path[start] == '.'))
            continue;
        if (len == 2 && path[start] == '.' && path[start + 1] == '.') {
            if (nseg)
                nseg--;
            continue;
        }
        if (nseg < cap) {
            segs[nseg][0] = start;
            segs[nseg][1] = len;
            nseg++;
        }
    }
    if (path[0] == '/')
        rc = ty_buf_puts(b, "/");
    for (i = 0; rc == 0 && i < nseg; i++) {
        if (i)
            rc = ty_buf_puts(b, "/");
        if (rc == 0)
            rc = uri_encode(b, path + segs[i][0], segs[i][1], 0, 0);
    }
    if (rc == 0 && path[n - 1] == '/' && nseg)
        rc = ty_buf_puts(b, "/");
    if (rc == 0 && path[0] != '/' && nseg == 0)
        rc = ty_buf_puts(b, "/");
    free(segs);
    return rc;
}

struct qparam {
    char *key; /* new: encoded */
    char *val; /* new: encoded */
};

static int qparam_cmp(const void *a, const void *b)
{
    const struct qparam *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->val, y->val);
}

/* Decodes p[0..n) and appends it encoded in canonical form (every reserved byte escaped). */
static int requote(struct ty_buf *b, const char *p, size_t n)
{
    size_t i = 0, run = 0;
    int rc;

    for (i = 0; i < n; i++) {
        if (p[i] != '%' || i + 2 >= n || ty_hex_value((unsigned char)p[i + 1]) < 0 ||
            ty_hex_value((unsigned char)p[i + 2]) < 0) {
            run++;
            continue;
        }
        if (run && (rc = uri_encode(b, p + i - run, run, 0, 0)) != 0)
            return rc;
        run = 0;
        {
            char c = (char)(ty_hex_value((unsigned char)p[i + 1]) * 16 +
                            ty_hex_value((unsigned char)p[i + 2]));
            if ((rc = uri_encode(b, &c, 1, 0, 0)) != 0)
                return rc;
        }
        i += 2;
    }
    if (run)
        return uri_encode(b, p + n - run, run, 0, 0);
    return 0;
}

/*
 * Appends the canonical query string: each name and value decoded and re-encoded, sorted by
 * name then value, joined by '&'. skip_signature drops X-Amz-Signature (presigned form).
 */
static int canonical_query(struct ty_buf *b, const char *query, int skip_signature)
{
    struct qparam *params = NULL;
    struct ty_buf tmp;
    size_t cap = 1, np = 0, i;
    const char *p = query;
    int rc = 0;

    if (!query || !*query)
        return 0;
    for (i = 0; query[i]; i++)
        cap += query[i] == '&';
    if (cap > SIGV4_MAX_PARAMS)
        return -TY_ETOOBIG;
    params = calloc(cap, sizeof(*params));
    if (!params)
        return -TY_ENOMEM;
    ty_buf_init(&tmp, SIGV4_MAX_CANONICAL);
    while (*p && rc == 0) {
        const char *end = strchr(p, '&');
        size_t seglen = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', seglen);
        size_t klen = eq ? (size_t)(eq - p) : seglen;

        if (seglen && np < cap) {
            rc = requote(&tmp, p, klen);
            if (rc == 0)
                params[np].key = ty_buf_steal(&tmp);
            if (rc == 0 && eq)
                rc = requote(&tmp, eq + 1, seglen - klen - 1);
            if (rc == 0)
                params[np].val = ty_buf_steal(&tmp);
            if (rc == 0 && (!params[np].key || !params[np].val))
                rc = -TY_ENOMEM;
            np++;
            if (rc == 0 && skip_signature && strcmp(params[np - 1].key, "X-Amz-Signature") == 0) {
                np--;
                ty_safefree(params[np].key);
                ty_safefree(params[np].val);
            }
        }
        p += seglen;
        if (*p == '&')
            p++;
    }
    if (rc == 0) {
        qsort(params, np, sizeof(*params), qparam_cmp);
        for (i = 0; rc == 0 && i < np; i++)
            rc = ty_buf_printf(b, "%s%s=%s", i ? "&" : "", params[i].key, params[i].val);
    }
    for (i = 0; i < np; i++) {
        free(params[i].key);
        free(params[i].val);
    }
    free(params);
    ty_buf_cleanup(&tmp);
    return rc;
}

/* Appends a header value trimmed, with internal runs of whitespace collapsed to one space. */
static int append_trimall(struct ty_buf *b, const char *v)
{
    size_t n = strlen(v);
    const char *p = trim(v, &n);
    size_t i = 0;
    int rc;

    while (i < n) {
        size_t run = 0;
        while (i + run < n && !is_ws((unsigned char)p[i + run]))
            run++;
        if ((rc = ty_buf_append(b, p + i, run)) != 0)
            return rc;
        i += run;
        if (i < n) {
            while (i < n && is_ws((unsigned char)p[i]))
                i++;
            if ((rc = ty_buf_append(b, " ", 1)) != 0)
                return rc;
        }
    }
    return 0;
}

/*
 * Appends "name:value\n" for each name of the signed-headers list, the values of repeated
 * headers joined by ',' in the order received; then the blank line and the list itself.
 */
static int canonical_headers(struct ty_buf *b, const struct sigv4_request *req,
                             const char *signed_headers)
{
    const char *p = signed_headers;
    int rc = 0;

    while (rc == 0 && *p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int seen = 0;

        for (size_t k = 0; rc == 0 && k < len; k++) {
            char c = (char)lower((unsigned char)p[k]);
            rc = ty_buf_append(b, &c, 1);
        }
        if (rc == 0)
            rc = ty_buf_append(b, ":", 1);
        for (size_t i = 0; rc == 0 && i < req->nheaders; i++) {
            const char *h = req->headers[i].name;
            if (!h || !req->headers[i].value || !name_eq(h, p, len))
                continue;
            if (seen++)
                rc = ty_buf_append(b, ",", 1);
            if (rc == 0)
                rc = append_trimall(b, req->headers[i].value);
        }
        if (rc == 0)
            rc = ty_buf_append(b, "\n", 1);
        p += len;
        if (*p == ';')
            p++;
    }
    if (rc == 0)
        rc = ty_buf_printf(b, "\n%s\n", signed_headers);
    return rc;
}

/* 1 when name (lower-case) is in the ';'-separated list. */
static int list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && name_eq(name, p, len))
            return 1;
        p += len;
        if (*p == ';')
            p++;
    }
    return 0;
}

/*
 * The payload hash: x-amz-content-sha256 as sent when present (UNSIGNED-PAYLOAD and
 * STREAMING-* included; for a presigned request only when that header was signed), else
 * UNSIGNED-PAYLOAD for a presigned S3 request, else the SHA-256 of the body.
 */
static int append_payload_hash(struct ty_buf *b, const struct sigv4_request *req,
                               const struct sigv4_auth *auth, int s3)
{
    const char *h = header_get(req, "x-amz-content-sha256");
    char hex[65];
    int rc;

    if (h && (!auth->presigned || list_has(auth->signed_headers, "x-amz-content-sha256"))) {
        size_t n = strlen(h);
        const char *v = trim(h, &n);
        return ty_buf_append(b, v, n);
    }
    if (auth->presigned && s3)
        return ty_buf_puts(b, SIGV4_UNSIGNED);
    if ((rc = sha256_hex(req->body, req->body ? req->body_len : 0, hex)) != 0)
        return rc;
    return ty_buf_puts(b, hex);
}

/* Builds the canonical request into b (appended). 0 or a negative TY_E* code. */
static int build_canonical(struct ty_buf *b, const struct sigv4_request *req,
                           const struct sigv4_auth *auth)
{
    int s3 = strcmp(auth->service, "s3") == 0;
    int rc;

    if (!req->method || (req->nheaders && !req->headers))
        return -TY_EINVAL;
    if ((rc = ty_buf_printf(b, "%s\n", req->method)) != 0)
        return rc;
    if ((rc = canonical_uri(b, req->path, s3)) != 0 || (rc = ty_buf_append(b, "\n", 1)) != 0)
        return rc;
    if ((rc = canonical_query(b, req->query, auth->presigned)) != 0 ||
        (rc = ty_buf_append(b, "\n", 1)) != 0)
        return rc;
    if ((rc = canonical_headers(b, req, auth->signed_headers)) != 0)
        return rc;
    return append_payload_hash(b, req, auth, s3);
}

/* 1 when every string of auth is NUL-terminated inside its array. */
static int auth_bounded(const struct sigv4_auth *a)
{
    return bounded(a->access_key, sizeof(a->access_key)) && bounded(a->date, sizeof(a->date)) &&
           bounded(a->region, sizeof(a->region)) && bounded(a->service, sizeof(a->service)) &&
           bounded(a->amz_date, sizeof(a->amz_date)) &&
           bounded(a->signed_headers, sizeof(a->signed_headers)) &&
           bounded(a->signature, sizeof(a->signature)) &&
           bounded(a->session_token, sizeof(a->session_token));
}

/* OUT: key = the signing key of secret for auth's scope (date, region, service); 0 or
   -TY_EINTERNAL. */
static int derive_key(const struct sigv4_auth *auth, const char *secret, size_t slen,
                      unsigned char key[32])
{
    char key0[SIGV4_MAX_SECRET + 8];
    unsigned char k2[32];
    int rc;

    memcpy(key0, "AWS4", 5);
    memcpy(key0 + 4, secret, slen + 1);
    rc = hmac256(key0, slen + 4, auth->date, key);
    OPENSSL_cleanse(key0, sizeof(key0));
    if (rc == 0)
        rc = hmac256(key, 32, auth->region, k2);
    if (rc == 0)
        rc = hmac256(k2, 32, auth->service, key);
    if (rc == 0)
        rc = hmac256(key, 32, SIGV4_TERMINATOR, k2);
    if (rc == 0)
        memcpy(key, k2, 32);
    OPENSSL_cleanse(k2, sizeof(k2));
    return rc;
}

/* 1 when kc holds the key of auth's scope. */
static int key_matches(const struct sigv4_key *kc, const struct sigv4_auth *auth)
{
    return kc->date[0] && strcmp(kc->date, auth->date) == 0 &&
           strcmp(kc->region, auth->region) == 0 && strcmp(kc->service, auth->service) == 0;
}

/* Computes the hex signature of req under auth with secret into sig (65 bytes); the signing
   key comes from kc when it holds auth's scope, else is derived (and kept in kc when not NULL). */
static int compute_signature(const struct sigv4_request *req, const struct sigv4_auth *auth,
                             const char *secret, struct sigv4_key *kc, char *sig,
                             struct ty_err *err)
{
    struct ty_buf cr;
    char crhash[65], sts[512];
    unsigned char k[32], key[32];
    size_t slen = strlen(secret);
    int rc, n;

    if (slen > SIGV4_MAX_SECRET)
        return ty_err_set(err, TY_EINVAL, NULL, "secret key too long");
    ty_buf_init(&cr, SIGV4_MAX_CANONICAL);
    rc = build_canonical(&cr, req, auth);
    if (rc == 0)
        rc = sha256_hex(cr.data, cr.len, crhash);
    ty_buf_cleanup(&cr);
    if (rc == -TY_ETOOBIG)
        return ty_err_set(err, TY_ETOOBIG, NULL, "The request is too large to be signed.");
    if (rc == -TY_ENOMEM)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    if (rc)
        return ty_err_set(err, -rc, NULL, "cannot compute the request signature");

    n = snprintf(sts, sizeof(sts), "%s\n%s\n%s/%s/%s/%s\n%s", SIGV4_ALGORITHM, auth->amz_date,
                 auth->date, auth->region, auth->service, SIGV4_TERMINATOR, crhash);
    if (n < 0 || (size_t)n >= sizeof(sts))
        return ty_err_set(err, TY_EINVAL, NULL, "credential scope too long");
    if (kc && key_matches(kc, auth)) {
        memcpy(key, kc->key, 32);
    } else {
        rc = derive_key(auth, secret, slen, key);
        if (rc == 0 && kc) {
            OPENSSL_cleanse(kc, sizeof(*kc));
            /* the scope fits: date, region and service are bounded as kc's are */
            memcpy(kc->date, auth->date, sizeof(kc->date));
            memcpy(kc->region, auth->region, sizeof(kc->region));
            memcpy(kc->service, auth->service, sizeof(kc->service));
            memcpy(kc->key, key, 32);
        }
    }
    if (rc == 0)
        rc = hmac256(key, 32, sts, k);
    if (rc == 0)
        ty_hex_encode(k, 32, sig);
    OPENSSL_cleanse(key, sizeof(key));
    OPENSSL_cleanse(k, sizeof(k));
    if (rc)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot compute the request signature");
    return 0;
}

int sigv4_canonical_request(const struct sigv4_request *req, const struct sigv4_auth *auth,
                            struct ty_buf *out, struct ty_err *err)
{
    int rc;

    if (!req || !auth || !out || !auth_bounded(auth))
        return ty_err_set(err, TY_EINVAL, NULL, "invalid arguments");
    ty_buf_reset(out);
    rc = build_canonical(out, req, auth);
    if (rc == -TY_ETOOBIG)
        return ty_err_set(err, TY_ETOOBIG, NULL, "The request is too large to be signed.");
    if (rc == -TY_ENOMEM)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    if (rc)
        return ty_err_set(err, -rc, NULL, "cannot build the canonical request");
    return 0;
}

/* ---- parsing ------------------------------------------------------------------------------ */

/* Checks a scope field: non-empty, printable ASCII without '/' or spaces. */
static int scope_part_ok(const char *p, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= ' ' || c >= 0x7f || c == '/')
            return 0;
    }
    return 1;
}

/* Parses AKID/YYYYMMDD/region/service/aws4_request into a. where names the parameter. */
static int parse_credential(const char *p, size_t n, struct sigv4_auth *a, int presigned,
                            struct ty_err *err)
{
    const char *part[5];
    size_t len[5], k = 0, start = 0;
    const char *field = presigned ? "X-Amz-Credential" : "Authorization";

    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != '/')
            continue;
        if (k == 5) {
            k = 6;
            break;
        }
        part[k] = p + start;
        len[k] = i - start;
        k++;
        start = i + 1;
    }
    if (k != 5 || len[0] == 0 || !scope_part_ok(part[0], len[0]))
        return ty_err_set(err, TY_EINVAL, field,
                          "%s; the Credential is mal-formed; expecting "
                          "\"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
                          presigned ? "Error parsing the X-Amz-Credential parameter"
                                    : "Authorization header is malformed");
    if (len[4] != strlen(SIGV4_TERMINATOR) || memcmp(part[4], SIGV4_TERMINATOR, len[4]) != 0)
        return ty_err_set(err, TY_EINVAL, field,
                          "Credential should be scoped with a valid terminator: 'aws4_request', "
                          "not '%.*s'.",
                          (int)(len[4] < SIGV4_MAX_ECHO ? len[4] : SIGV4_MAX_ECHO), part[4]);
    if (!scope_part_ok(part[2], len[2]) || len[2] >= sizeof(a->region))
        return ty_err_set(err, TY_EINVAL, field, "Credential should be scoped to a valid region. ");
    if (!scope_part_ok(part[3], len[3]) || len[3] >= sizeof(a->service))
        return ty_err_set(err, TY_EINVAL, field,
                          "Credential should be scoped to correct service. ");
    if (len[1] != 8 || num(part[1], 8) < 0)
        return ty_err_set(err, TY_EINVAL, field,
                          "Invalid credential date \"%.*s\". Date must be in ISO-8601 'basic "
                          "format'.",
                          (int)(len[1] < 64 ? len[1] : 64), part[1]);
    if (copy_str(a->access_key, sizeof(a->access_key), part[0], len[0]) != 0)
        return ty_err_set(err, TY_EBADKEY, field,
                          "The security token included in the request is invalid.");
    copy_str(a->date, sizeof(a->date), part[1], len[1]);
    copy_str(a->region, sizeof(a->region), part[2], len[2]);
    copy_str(a->service, sizeof(a->service), part[3], len[3]);
    return 0;
}

/* Validates and copies the SignedHeaders list: lower-case names separated by ';'. */
static int parse_signed_headers(const char *p, size_t n, struct sigv4_auth *a, const char *field,
                                struct ty_err *err)
{
    int ok = n > 0 && p[0] != ';' && p[n - 1] != ';';
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= ' ' || c >= 0x7f || c == ',' || c == ':' ||
            (c == ';' && i + 1 < n && p[i + 1] == ';'))
            ok = 0;
    }
    if (!ok || copy_str(a->signed_headers, sizeof(a->signed_headers), p, n) != 0)
        return ty_err_set(err, TY_EINVAL, field, "Invalid SignedHeaders: '%.*s'.",
                          (int)(n < SIGV4_MAX_ECHO ? n : SIGV4_MAX_ECHO), p);
    for (size_t i = 0; i < n; i++)
        a->signed_headers[i] = (char)lower((unsigned char)a->signed_headers[i]);
    if (!list_has(a->signed_headers, "host"))
        return ty_err_set(err, TY_EINVAL, field,
                          "'Host' or ':authority' must be a 'SignedHeader' in the AWS "
                          "Authorization.");
    return 0;
}

/* Copies a 64-hex signature (lower-cased); anything else can only be a mismatch. */
static int parse_signature(const char *p, size_t n, struct sigv4_auth *a, struct ty_err *err)
{
    if (n != 64)
        return ty_err_set(err, TY_EBADSIG, NULL, "%s", sigv4_msg_mismatch);
    for (size_t i = 0; i < n; i++) {
        if (ty_hex_value((unsigned char)p[i]) < 0)
            return ty_err_set(err, TY_EBADSIG, NULL, "%s", sigv4_msg_mismatch);
        a->signature[i] = (char)lower((unsigned char)p[i]);
    }
    a->signature[64] = '\0';
    return 0;
}

/* Validates an X-Amz-Date value and copies it. */
static int parse_date(const char *p, size_t n, struct sigv4_auth *a, const char *field,
                      struct ty_err *err)
{
    time_t t;
    if (copy_str(a->amz_date, sizeof(a->amz_date), p, n) != 0 ||
        parse_amz_date(a->amz_date, &t) != 0) {
        a->amz_date[0] = '\0';
        return ty_err_set(err, TY_EINVAL, field,
                          "Date must be in ISO-8601 'basic format'. Got '%.*s'. See "
                          "http://en.wikipedia.org/wiki/ISO_8601",
                          (int)(n < 64 ? n : 64), p);
    }
    return 0;
}

/* The credential scope's date must be the date of X-Amz-Date. */
static int check_scope_date(const struct sigv4_auth *a, const char *field, struct ty_err *err)
{
    if (memcmp(a->date, a->amz_date, 8) != 0)
        return ty_err_set(err, TY_EBADSIG, field,
                          "Date in Credential scope does not match YYYYMMDD from ISO-8601 version "
                          "of date from HTTP: '%s' != '%.8s', from '%s'.",
                          a->date, a->amz_date, a->amz_date);
    return 0;
}

static int parse_header_form(const struct sigv4_request *req, const char *value,
                             struct sigv4_auth *a, struct ty_err *err)
{
    const char *cred = NULL, *sh = NULL, *sig = NULL, *p;
    size_t credn = 0, shn = 0, sign = 0, vlen = strlen(value);
    const char *xdate = header_get(req, "x-amz-date");
    const char *hdate = header_get(req, "date");
    const char *tok = header_get(req, "x-amz-security-token");
    const char *v = trim(value, &vlen);
    size_t alg = strlen(SIGV4_ALGORITHM);
    int echo = (int)(vlen < SIGV4_MAX_ECHO ? vlen : SIGV4_MAX_ECHO);
    int rc;

    if (vlen > alg && memcmp(v, SIGV4_ALGORITHM, alg) == 0 && is_ws((unsigned char)v[alg])) {
        p = v + alg;
        while (p < v + vlen) {
            const char *end = memchr(p, ',', (size_t)(v + vlen - p));
            size_t n = end ? (size_t)(end - p) : (size_t)(v + vlen - p);
            const char *part = trim(p, &n);
            const char *eq = memchr(part, '=', n);

            p += (end ? (size_t)(end - p) + 1 : (size_t)(v + vlen - p));
            if (n == 0)
                continue;
            if (!eq)
                return ty_err_set(err, TY_EINVAL, "Authorization",
                                  "'%.*s' not a valid key=value pair (missing equal-sign) in "
                                  "Authorization header: '%.*s'.",
                                  (int)(n < SIGV4_MAX_ECHO ? n : SIGV4_MAX_ECHO), part, echo, v);
            {
                size_t kn = (size_t)(eq - part), valn = n - kn - 1;
                const char *k = trim(part, &kn), *val = trim(eq + 1, &valn);
                if (kn == 10 && memcmp(k, "Credential", 10) == 0 && !cred) {
                    cred = val;
                    credn = valn;
                } else if (kn == 13 && memcmp(k, "SignedHeaders", 13) == 0 && !sh) {
                    sh = val;
                    shn = valn;
                } else if (kn == 9 && memcmp(k, "Signature", 9) == 0 && !sig) {
                    sig = val;
                    sign = valn;
                }
            }
        }
    }
    if (!cred || !sh || !sig || (!xdate && !hdate))
        return ty_err_set(err, TY_EINVAL, "Authorization", "%s%s%s%sAuthorization=%.*s",
                          cred ? "" : "Authorization header requires 'Credential' parameter. ",
                          sig ? "" : "Authorization header requires 'Signature' parameter. ",
                          sh ? "" : "Authorization header requires 'SignedHeaders' parameter. ",
                          (xdate || hdate) ? ""
                                           : "Authorization header requires existence of either "
                                             "a 'X-Amz-Date' or a 'Date' header. ",
                          echo, v);
    if ((rc = parse_credential(cred, credn, a, 0, err)) != 0)
        return rc;
    if ((rc = parse_signed_headers(sh, shn, a, "Authorization", err)) != 0)
        return rc;
    if ((rc = parse_signature(sig, sign, a, err)) != 0)
        return rc;
    if (xdate) {
        size_t n = strlen(xdate);
        const char *d = trim(xdate, &n);
        if ((rc = parse_date(d, n, a, "X-Amz-Date", err)) != 0)
            return rc;
    } else {
        size_t n = strlen(hdate);
        const char *d = trim(hdate, &n);
        if (http_date_to_amz(d, n, a->amz_date) != 0)
            return ty_err_set(err, TY_EINVAL, "Date",
                              "Date must be in RFC 1123 format. Got '%.*s'.",
                              (int)(n < 64 ? n : 64), d);
    }
    if (tok) {
        size_t n = strlen(tok);
        const char *t = trim(tok, &n);
        if (copy_str(a->session_token, sizeof(a->session_token), t, n) != 0)
            return ty_err_set(err, TY_EINVAL, "X-Amz-Security-Token",
                              "The security token included in the request is invalid.");
    }
    return check_scope_date(a, "Authorization", err);
}

static int parse_query_form(const struct sigv4_request *req, struct sigv4_auth *a,
                            struct ty_err *err)
{
    static const char *const names[] = {"X-Amz-Algorithm", "X-Amz-Credential",    "X-Amz-Signature",
                                        "X-Amz-Date",      "X-Amz-SignedHeaders", "X-Amz-Expires"};
    char val[6][1024];
    int found[6], any = 0, all = 1, rc;
    long expires = 0;

    for (int i = 0; i < 6; i++) {
        found[i] = query_get(req->query, names[i], val[i], sizeof(val[i]));
        if (found[i] < 0)
            return ty_err_set(err, TY_EINVAL, names[i], "%s is too long.", names[i]);
        any |= found[i];
        all &= found[i];
    }
    if (!any)
        return ty_err_set(err, TY_ENOAUTH, NULL, "Missing Authentication Token");
    if (!all)
        return ty_err_set(err, TY_EINVAL, NULL, "%s", sigv4_msg_query_missing);
    if (strcmp(val[0], SIGV4_ALGORITHM) != 0)
        return ty_err_set(err, TY_EINVAL, "X-Amz-Algorithm",
                          "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
    if ((rc = parse_credential(val[1], strlen(val[1]), a, 1, err)) != 0)
        return rc;
    if ((rc = parse_date(val[3], strlen(val[3]), a, "X-Amz-Date", err)) != 0)
        return rc;
    if ((rc = parse_signed_headers(val[4], strlen(val[4]), a, "X-Amz-SignedHeaders", err)) != 0)
        return rc;
    if (val[5][0] == '-' && val[5][1] != '\0' &&
        strspn(val[5] + 1, "0123456789") == strlen(val[5] + 1))
        return ty_err_set(err, TY_EINVAL, "X-Amz-Expires", "X-Amz-Expires must be non-negative");
    if (val[5][0] == '\0' || strlen(val[5]) > 18)
        return ty_err_set(err, TY_EINVAL, "X-Amz-Expires", "X-Amz-Expires should be a number");
    for (const char *q = val[5]; *q; q++) {
        if (!is_digit((unsigned char)*q))
            return ty_err_set(err, TY_EINVAL, "X-Amz-Expires", "X-Amz-Expires should be a number");
        expires = expires > SIGV4_MAX_EXPIRES_S ? expires : expires * 10 + (*q - '0');
    }
    if (expires > SIGV4_MAX_EXPIRES_S)
        return ty_err_set(err, TY_EINVAL, "X-Amz-Expires",
                          "X-Amz-Expires must be less than a week (in seconds) that is 604800");
    a->expires = expires;
    a->presigned = 1;
    if ((rc = parse_signature(val[2], strlen(val[2]), a, err)) != 0)
        return rc;
    rc = query_get(req->query, "X-Amz-Security-Token", a->session_token, sizeof(a->session_token));
    if (rc < 0)
        return ty_err_set(err, TY_EINVAL, "X-Amz-Security-Token",
                          "The security token included in the request is invalid.");
    return check_scope_date(a, "X-Amz-Credential", err);
}

int sigv4_parse(const struct sigv4_request *req, struct sigv4_auth *auth, struct ty_err *err)
{
    struct sigv4_auth a;
    const char *authz;
    int rc;

    if (!req || !auth || (req->nheaders && !req->headers))
        return ty_err_set(err, TY_EINVAL, NULL, "invalid arguments");
    memset(&a, 0, sizeof(a));
    authz = header_get(req, "authorization");
    if (authz)
        rc = parse_header_form(req, authz, &a, err);
    else
        rc = parse_query_form(req, &a, err);
    if (rc == 0)
        *auth = a;
    OPENSSL_cleanse(&a, sizeof(a));
    return rc;
}

/* ---- verifying ---------------------------------------------------------------------------- */

/* Checks the request time against now: skew for the header form, expiry for presigned. */
static int check_time(const struct sigv4_auth *auth, time_t t, time_t now, struct ty_err *err)
{
    char lo[17], hi[17], cur[17];

    format_amz_date(now, cur);
    if ((long long)t > (long long)now + SIGV4_MAX_SKEW_S) {
        format_amz_date(now + SIGV4_MAX_SKEW_S, hi);
        return ty_err_set(err, TY_EBADSIG, NULL,
                          "Signature not yet current: %s is still later than %s (%s + 15 min.)",
                          auth->amz_date, hi, cur);
    }
    if (auth->presigned) {
        /* AWS documents X-Amz-Expires as 1..604800: a URL valid for 0 seconds never is */
        if (auth->expires < 1 || (long long)now > (long long)t + auth->expires)
            return ty_err_set(err, TY_EBADSIG, NULL, "Request has expired");
        return 0;
    }
    if ((long long)t < (long long)now - SIGV4_MAX_SKEW_S) {
        format_amz_date(now - SIGV4_MAX_SKEW_S, lo);
        return ty_err_set(err, TY_EBADSIG, NULL,
                          "Signature expired: %s is now earlier than %s (%s - 15 min.)",
                          auth->amz_date, lo, cur);
    }
    return 0;
}

/* 1 when s is 64 hex digits. */
static int is_sha256_hex(const char *s, size_t n)
{
    if (n != 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (ty_hex_value((unsigned char)s[i]) < 0)
            return 0;
    }
    return 1;
}

int sigv4_verify(const struct sigv4_request *req, const struct sigv4_auth *auth,
                 const char *secret_key, time_t now, struct ty_err *err)
{
    return sigv4_verify_key(req, auth, secret_key, NULL, now, err);
}

int sigv4_verify_key(const struct sigv4_request *req, const struct sigv4_auth *auth,
                     const char *secret_key, struct sigv4_key *kc, time_t now, struct ty_err *err)
{
    char sig[65];
    const char *h;
    time_t t;
    int rc;

    if (!req || !auth || !secret_key || !auth_bounded(auth) || auth->expires < 0 ||
        auth->expires > SIGV4_MAX_EXPIRES_S || now < 0 || (long long)now > SIGV4_MAX_TIME)
        return ty_err_set(err, TY_EINVAL, NULL, "invalid arguments");
    if (parse_amz_date(auth->amz_date, &t) != 0)
        return ty_err_set(err, TY_EINVAL, "X-Amz-Date",
                          "Date must be in ISO-8601 'basic format'. Got '%s'. See "
                          "http://en.wikipedia.org/wiki/ISO_8601",
                          auth->amz_date);
    if ((rc = check_time(auth, t, now, err)) != 0)
        return rc;
    if ((rc = compute_signature(req, auth, secret_key, kc, sig, err)) != 0)
        return rc;
    if (strlen(auth->signature) != 64 || CRYPTO_memcmp(sig, auth->signature, 64) != 0)
        return ty_err_set(err, TY_EBADSIG, NULL, "%s", sigv4_msg_mismatch);
    /* A signed content hash must also match the body, when the body is at hand. */
    h = header_get(req, "x-amz-content-sha256");
    if (h && req->body) {
        size_t n = strlen(h);
        const char *v = trim(h, &n);
        char body[65];
        if (is_sha256_hex(v, n)) {
            if (sha256_hex(req->body, req->body_len, body) != 0)
                return ty_err_set(err, TY_EINTERNAL, NULL, "cannot hash the payload");
            for (size_t i = 0; i < 64; i++) {
                if (lower((unsigned char)v[i]) != (unsigned char)body[i])
                    return ty_err_set(err, TY_EBADSIG, "x-amz-content-sha256",
                                      "The provided 'x-amz-content-sha256' header does not match "
                                      "what was computed.");
            }
        }
    }
    return 0;
}

/* ---- signing ------------------------------------------------------------------------------ */

static int name_ptr_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Fills a for signing req: scope from the arguments, SignedHeaders = every header name of req,
 * lower-cased, sorted and unique. Returns 0 or -TY_EINVAL.
 */
static int sign_prepare(const struct sigv4_request *req, const char *access_key, const char *region,
                        const char *service, const char *amz_date, struct sigv4_auth *a)
{
    char(*names)[SIGV4_MAX_NAME];
    char **sorted;
    size_t pos = 0;
    time_t t;
    int rc = 0;

    memset(a, 0, sizeof(*a));
    if (!req || !req->method || !access_key || !region || !service || !amz_date ||
        (req->nheaders && !req->headers) || req->nheaders > 256 ||
        !scope_part_ok(access_key, strlen(access_key)) || !scope_part_ok(region, strlen(region)) ||
        !scope_part_ok(service, strlen(service)) ||
        copy_str(a->access_key, sizeof(a->access_key), access_key, strlen(access_key)) ||
        copy_str(a->region, sizeof(a->region), region, strlen(region)) ||
        copy_str(a->service, sizeof(a->service), service, strlen(service)) ||
        copy_str(a->amz_date, sizeof(a->amz_date), amz_date, strlen(amz_date)) ||
        parse_amz_date(a->amz_date, &t) != 0 || !header_get(req, "host"))
        return -TY_EINVAL;
    memcpy(a->date, amz_date, 8);
    a->date[8] = '\0';
    if (req->nheaders == 0)
        return -TY_EINVAL;
    names = calloc(req->nheaders, sizeof(*names));
    sorted = calloc(req->nheaders, sizeof(*sorted));
    if (!names || !sorted) {
        rc = -TY_EINVAL;
        goto fail;
    }
    for (size_t i = 0; i < req->nheaders; i++) {
        const char *h = req->headers[i].name;
        size_t n = h ? strlen(h) : 0;
        if (n == 0 || n >= SIGV4_MAX_NAME || !req->headers[i].value) {
            rc = -TY_EINVAL;
            goto fail;
        }
        for (size_t k = 0; k < n; k++) {
            unsigned char c = (unsigned char)h[k];
            if (c <= ' ' || c >= 0x7f || c == ';' || c == ':' || c == ',') {
                rc = -TY_EINVAL;
                goto fail;
            }
            names[i][k] = (char)lower(c);
        }
        sorted[i] = names[i];
    }
    qsort(sorted, req->nheaders, sizeof(*sorted), name_ptr_cmp);
    for (size_t i = 0; i < req->nheaders; i++) {
        size_t n = strlen(sorted[i]);
        if (i && strcmp(sorted[i], sorted[i - 1]) == 0)
            continue;
        if (pos + n + 2 > sizeof(a->signed_headers)) {
            rc = -TY_EINVAL;
            goto fail;
        }
        if (pos)
            a->signed_headers[pos++] = ';';
        memcpy(a->signed_headers + pos, sorted[i], n);
        pos += n;
        a->signed_headers[pos] = '\0';
    }
fail:
    free(names);
    free(sorted);
    return rc;
}

int sigv4_sign(const struct sigv4_request *req, const char *access_key, const char *secret_key,
               const char *region, const char *service, const char *amz_date, char *out, size_t n)
{
    struct sigv4_auth a;
    char sig[65];
    int rc, len;

    if (!secret_key || !out || n == 0)
        return -TY_EINVAL;
    rc = sign_prepare(req, access_key, region, service, amz_date, &a);
    if (rc == 0 && !header_get(req, "x-amz-date"))
        rc = -TY_EINVAL;
    if (rc == 0 && compute_signature(req, &a, secret_key, NULL, sig, NULL) != 0)
        rc = -TY_EINVAL;
    if (rc == 0) {
        len = snprintf(out, n, "%s Credential=%s/%s/%s/%s/%s, SignedHeaders=%s, Signature=%s",
                       SIGV4_ALGORITHM, a.access_key, a.date, a.region, a.service, SIGV4_TERMINATOR,
                       a.signed_headers, sig);
        if (len < 0 || (size_t)len >= n)
            rc = -TY_EINVAL;
    }
    if (rc)
        out[0] = '\0';
    return rc;
}

int sigv4_presign(const struct sigv4_request *req, const char *access_key, const char *secret_key,
                  const char *session_token, const char *region, const char *service,
                  const char *amz_date, long expires, char *out, size_t n)
{
    struct sigv4_auth a;
    struct sigv4_request r;
    struct ty_buf q;
    char sig[65], scope[512];
    int rc;

    if (!secret_key || !out || n == 0 || expires < 0 || expires > SIGV4_MAX_EXPIRES_S)
        return -TY_EINVAL;
    rc = sign_prepare(req, access_key, region, service, amz_date, &a);
    if (rc)
        return rc;
    a.presigned = 1;
    a.expires = expires;
    snprintf(scope, sizeof(scope), "%s/%s/%s/%s/%s", a.access_key, a.date, a.region, a.service,
             SIGV4_TERMINATOR);
    ty_buf_init(&q, SIGV4_MAX_CANONICAL);
    if (req->query && *req->query)
        rc = ty_buf_printf(&q, "%s&", req->query);
    if (rc == 0)
        rc = ty_buf_puts(&q, "X-Amz-Algorithm=" SIGV4_ALGORITHM "&X-Amz-Credential=");
    if (rc == 0)
        rc = uri_encode(&q, scope, strlen(scope), 0, 0);
    if (rc == 0)
        rc = ty_buf_printf(&q, "&X-Amz-Date=%s&X-Amz-Expires=%ld&X-Amz-SignedHeaders=", a.amz_date,
                           expires);
    if (rc == 0)
        rc = uri_encode(&q, a.signed_headers, strlen(a.signed_headers), 0, 0);
    if (rc == 0 && session_token && *session_token) {
        rc = ty_buf_puts(&q, "&X-Amz-Security-Token=");
        if (rc == 0)
            rc = uri_encode(&q, session_token, strlen(session_token), 0, 0);
    }
    if (rc == 0) {
        r = *req;
        r.query = q.data;
        rc = compute_signature(&r, &a, secret_key, NULL, sig, NULL);
    }
    if (rc == 0)
        rc = ty_buf_printf(&q, "&X-Amz-Signature=%s", sig);
    if (rc == 0 && copy_str(out, n, q.data, q.len) != 0)
        rc = -TY_EINVAL;
    ty_buf_cleanup(&q);
    if (rc) {
        out[0] = '\0';
        return -TY_EINVAL;
    }
    return 0;
}
