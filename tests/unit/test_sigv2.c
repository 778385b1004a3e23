/*
 * test_sigv2.c - S3 SigV2 (sigv2.c) against vectors botocore's own signers produced
 * (tests/unit/sigv2_vectors.py prints them): header and presigned forms, x-amz-* headers,
 * sub-resources, bucket-only paths, virtual-hosted buckets, session tokens; then the checks
 * around them: expiry, clock skew, a missing Date, tampering, malformed headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sigv2.h"

#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define DATE   "Tue, 27 Mar 2007 19:36:42 +0000"
#define T_DATE 1175024202L /* DATE in seconds */
#define EXP    1175139620L

struct vec {
    const char *method, *path, *query;
    struct ty_kv h[8];
    size_t nh;
    const char *v2_bucket;
};

static struct sigv4_request mkreq(const struct vec *v)
{
    struct sigv4_request r;
    memset(&r, 0, sizeof(r));
    r.method = v->method;
    r.path = v->path;
    r.query = v->query;
    r.headers = v->h;
    r.nheaders = v->nh;
    return r;
}

/* parses and verifies v at time now; returns sigv2_verify's rc. OUT: err */
static int check(const struct vec *v, time_t now, struct ty_err *err)
{
    struct sigv4_request r = mkreq(v);
    struct sigv4_auth a;
    ty_err_clear(err);
    assert_true(sigv2_detect(&r));
    if (sigv2_parse(&r, &a, err) != 0)
        return -1000;
    assert_int_equal(a.sigv2, 1);
    assert_string_equal(a.access_key, "AKIDEXAMPLE");
    if (v->v2_bucket)
        snprintf(a.v2_bucket, sizeof(a.v2_bucket), "%s", v->v2_bucket);
    return sigv2_verify(&r, &a, SECRET, now, err);
}

static const struct vec vectors[] = {
    {"GET",
     "/bucket/photos/puppy.jpg",
     "",
     {{"Date", DATE}, {"Authorization", "AWS AKIDEXAMPLE:WB8CWLqRqvetIBP/5crhOnIXj8U="}},
     2,
     NULL},
    {"PUT",
     "/bucket/a%20b/c%2Bd.txt",
     "",
     {{"Content-Type", "image/jpeg"},
      {"Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="},
      {"x-amz-meta-Foo", " spaced "},
      {"X-Amz-Meta-bar", "b"},
      {"Date", DATE},
      {"Authorization", "AWS AKIDEXAMPLE:F/MTeNotmOepgu/5ORT17Db8G88="}},
     6,
     NULL},
    {"GET",
     "/bucket/k",
     "versionId=v1&acl&prefix=x&uploadId=u%2F1",
     {{"Date", DATE}, {"Authorization", "AWS AKIDEXAMPLE:soQA8i3HW5HA47dZzDtNp8WxmWI="}},
     2,
     NULL},
    /* a bucket-only path-style request: botocore signs "/bucket/" */
    {"PUT",
     "/bucket",
     "",
     {{"Date", DATE}, {"Authorization", "AWS AKIDEXAMPLE:e6AIbAdKvfIRBMacGCS1FE8Qe7o="}},
     2,
     NULL},
    {"GET",
     "/bucket/k",
     "",
     {{"x-amz-security-token", "TOKEN/with+chars"},
      {"Date", DATE},
      {"Authorization", "AWS AKIDEXAMPLE:WHoET79XxRo++1cnweN2nr6briA="}},
     3,
     NULL},
    {"GET",
     "/photos/puppy.jpg",
     "",
     {{"Host", "johnsmith.s3.amazonaws.com"},
      {"Date", DATE},
      {"Authorization", "AWS AKIDEXAMPLE:lULJOcuAScRyg5WxFjGeXEXYO54="}},
     3,
     "johnsmith"},
};

static const struct vec presigned[] = {
    {"GET",
     "/bucket/k",
     "response-content-type=text%2Fplain&AWSAccessKeyId=AKIDEXAMPLE&Signature=x0%"
     "2BAXpvHKkuJfh92HCCCQYSWpzM%3D&Expires=1175139620",
     {{"Host", "h"}},
     1,
     NULL},
    {"GET",
     "/bucket/k",
     "AWSAccessKeyId=AKIDEXAMPLE&Signature=IpXfYWGROOLBlVgpVPxc3pf%2FqCI%3D&x-amz-security-"
     "token=SESSION%2BTOKEN%2F%3D&Expires=1175139620",
     {{"Host", "h"}},
     1,
     NULL},
};

static void test_botocore_header_vectors(void **state)
{
    struct ty_err err;
    (void)state;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        int rc = check(&vectors[i], T_DATE + 60, &err);
        if (rc != 0)
            fail_msg("vector %zu: rc %d: %s", i, rc, err.msg);
    }
}

static void test_botocore_presigned_vectors(void **state)
{
    struct ty_err err;
    struct sigv4_auth a;
    struct sigv4_request r = mkreq(&presigned[1]);
    (void)state;
    for (size_t i = 0; i < sizeof(presigned) / sizeof(presigned[0]); i++) {
        int rc = check(&presigned[i], EXP - 10, &err);
        if (rc != 0)
            fail_msg("presigned %zu: rc %d: %s", i, rc, err.msg);
        /* past Expires: refused whatever the signature */
        assert_int_equal(check(&presigned[i], EXP + 1, &err), -TY_EBADSIG);
        assert_string_equal(err.msg, "Request has expired");
        /* an Expires more than a week ahead (SigV4's limit): refused, though well signed */
        assert_int_equal(check(&presigned[i], EXP - SIGV4_MAX_EXPIRES_S, &err), 0);
        assert_int_equal(check(&presigned[i], EXP - SIGV4_MAX_EXPIRES_S - 1, &err), -TY_EBADSIG);
        assert_string_equal(err.msg, "Request has expired");
    }
    assert_int_equal(sigv2_parse(&r, &a, &err), 0);
    assert_string_equal(a.session_token, "SESSION+TOKEN/=");
    assert_int_equal(a.presigned, 1);
    assert_int_equal(a.expires, EXP);
}

static void test_tampering_refused(void **state)
{
    struct ty_err err;
    struct vec v = vectors[1];
    (void)state;
    v.path = "/bucket/a%20b/c%2Bd.txx";
    assert_int_equal(check(&v, T_DATE, &err), -TY_EBADSIG);
    assert_string_equal(err.field, "Signature");
    v = vectors[1];
    v.h[0].value = "text/plain"; /* Content-Type is signed */
    assert_int_equal(check(&v, T_DATE, &err), -TY_EBADSIG);
    v = vectors[2];
    v.query = "versionId=v2&acl&prefix=x&uploadId=u%2F1"; /* a sub-resource is signed */
    assert_int_equal(check(&v, T_DATE, &err), -TY_EBADSIG);
    v = vectors[2];
    v.query = "versionId=v1&acl&prefix=y&uploadId=u%2F1"; /* other parameters are not */
    assert_int_equal(check(&v, T_DATE, &err), 0);
    v = vectors[5];
    v.v2_bucket = "other";
    assert_int_equal(check(&v, T_DATE, &err), -TY_EBADSIG);
}

static void test_clock(void **state)
{
    struct ty_err err;
    struct vec v = vectors[0];
    (void)state;
    assert_int_equal(check(&v, T_DATE + 901, &err), -TY_EBADSIG);
    assert_int_equal(strncmp(err.msg, "Signature expired", 17), 0);
    assert_int_equal(check(&v, T_DATE - 901, &err), -TY_EBADSIG);
    assert_int_equal(strncmp(err.msg, "Signature not yet current", 25), 0);
    v.h[0].name = "X-Other"; /* no Date */
    assert_int_equal(check(&v, T_DATE, &err), -TY_EBADSIG);
    assert_string_equal(err.field, "Date");
    assert_string_equal(err.msg, "AWS authentication requires a valid Date or x-amz-date header");
}

static void test_malformed(void **state)
{
    struct ty_err err;
    struct sigv4_auth a;
    struct ty_kv h[1] = {{"Authorization", "AWS nocolon"}};
    struct sigv4_request r;
    (void)state;
    memset(&r, 0, sizeof(r));
    r.method = "GET";
    r.path = "/b/k";
    r.headers = h;
    r.nheaders = 1;
    assert_int_equal(sigv2_parse(&r, &a, &err), -TY_EINVAL);
    assert_string_equal(err.field, "Authorization");
    h[0].value = "AWS4-HMAC-SHA256 Credential=x";
    assert_false(sigv2_detect(&r));
    r.nheaders = 0;
    r.query = "AWSAccessKeyId=AKIDEXAMPLE&Signature=abc&Expires=soon";
    assert_true(sigv2_detect(&r));
    assert_int_equal(sigv2_parse(&r, &a, &err), -TY_EINVAL);
    assert_string_equal(err.field, "Expires");
    r.query = "AWSAccessKeyId=AKIDEXAMPLE&Expires=1";
    assert_int_equal(sigv2_parse(&r, &a, &err), -TY_EINVAL);
    assert_string_equal(err.field, "Signature");
    r.query = "X-Amz-Signature=abc";
    assert_false(sigv2_detect(&r));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_botocore_header_vectors),
        cmocka_unit_test(test_botocore_presigned_vectors),
        cmocka_unit_test(test_tampering_refused),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
