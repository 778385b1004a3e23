/*
 * test_s3client.c - the external-store client's pure parts (canonical query, configuration
 * checks, error mapping), the tiny XML reader it shares with the S3 API, and a store that is
 * not there. Requests against a live store are covered by the integration suite
 * (test_s3.py and test_sdk_flow.py run whole through --s3-endpoint).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "s3client.h"
#include "ty_xml.h"

static void test_query_is_canonical(void **state)
{
    const char *pairs[] = {"prefix", "a b/c+d~é",          "list-type", "2",        "uploads",
                           NULL,     "continuation-token", "x=y&z",     "max-keys", "1000"};
    char *q;
    (void)state;
    q = s3c_query(pairs, 5);
    assert_non_null(q);
    /* sorted by name; every name=value; only A-Z a-z 0-9 - . _ ~ left as they are */
    assert_string_equal(q, "continuation-token=x%3Dy%26z&list-type=2&max-keys=1000&"
                           "prefix=a%20b%2Fc%2Bd~%C3%A9&uploads=");
    free(q);
    q = s3c_query(NULL, 0);
    assert_string_equal(q, "");
    free(q);
}

static void test_query_sorts_equal_names_by_value(void **state)
{
    const char *pairs[] = {"a", "2", "a", "1", "A", "3", "a-", "0"};
    char *q;
    (void)state;
    q = s3c_query(pairs, 4);
    assert_string_equal(q, "A=3&a=1&a=2&a-=0");
    free(q);
}

static void test_config_checks(void **state)
{
    struct ty_err e;
    struct s3c_config c = {"http://127.0.0.1:9000", "AKID", "secret", NULL, NULL};
    struct s3c *cl;
    (void)state;

    cl = s3c_new(&c, &e);
    assert_non_null(cl);
    assert_string_equal(s3c_endpoint(cl), "http://127.0.0.1:9000");
    s3c_free(cl);
    c.endpoint = "https://store.example/";
    cl = s3c_new(&c, &e);
    assert_non_null(cl);
    assert_string_equal(s3c_endpoint(cl), "https://store.example");
    s3c_free(cl);

    c.endpoint = "ftp://x";
    assert_null(s3c_new(&c, &e));
    assert_int_equal(e.code, TY_EINVAL);
    assert_string_equal(e.field, "s3-endpoint");
    c.endpoint = "http://host:1/bucket";
    assert_null(s3c_new(&c, &e));
    assert_non_null(strstr(e.msg, "without a path"));
    c.endpoint = "http://";
    assert_null(s3c_new(&c, &e));
    c.endpoint = "http://h:1";
    c.secret_key = "";
    assert_null(s3c_new(&c, &e));
    assert_string_equal(e.field, "s3-access-key-id");
    c.secret_key = "s";
    c.access_key = "has:colon";
    assert_null(s3c_new(&c, &e));
    c.access_key = "AKID";
    c.region = "bad:region";
    assert_null(s3c_new(&c, &e));
    assert_string_equal(e.field, "s3-region");
}

static void test_fail_maps_s3_codes(void **state)
{
    struct ty_err e;
    struct s3c_config c = {"http://127.0.0.1:9", "AKID", "secret", "eu-west-1", NULL};
    struct s3c *cl = s3c_new(&c, &e);
    struct s3c_resp rs;
    (void)state;

    memset(&rs, 0, sizeof(rs));
    ty_buf_init(&rs.body, 4096);
    rs.status = 404;
    ty_buf_puts(&rs.body, "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The "
                          "specified bucket does not exist &amp; never did</Message></Error>");
    assert_int_equal(s3c_fail(cl, &rs, "NoSuchKey", &e), -TY_ENOTFOUND);
    assert_string_equal(e.field, "NoSuchBucket");
    assert_non_null(strstr(e.msg, "does not exist & never did"));
    assert_non_null(strstr(e.msg, "127.0.0.1:9"));

    ty_buf_reset(&rs.body);
    ty_buf_append(&rs.body, "", 0);
    assert_int_equal(s3c_fail(cl, &rs, "NoSuchKey", &e), -TY_ENOTFOUND); /* a HEAD 404 */
    assert_string_equal(e.field, "NoSuchKey");
    rs.status = 403;
    assert_int_equal(s3c_fail(cl, &rs, NULL, &e), -TY_EDENIED);
    assert_string_equal(e.field, "AccessDenied");
    rs.status = 409;
    ty_buf_puts(&rs.body, "<Error><Code>BucketNotEmpty</Code></Error>");
    assert_int_equal(s3c_fail(cl, &rs, NULL, &e), -TY_ECONFLICT);
    ty_buf_reset(&rs.body);
    ty_buf_puts(&rs.body, "<Error><Code>BucketAlreadyOwnedByYou</Code></Error>");
    assert_int_equal(s3c_fail(cl, &rs, NULL, &e), -TY_EINUSE);
    rs.status = 503;
    ty_buf_reset(&rs.body);
    ty_buf_append(&rs.body, "", 0);
    assert_int_equal(s3c_fail(cl, &rs, NULL, &e), -TY_EIO);
    assert_string_equal(e.field, "InternalError");
    ty_buf_cleanup(&rs.body);
    s3c_free(cl);
}

static void test_xml_reader(void **state)
{
    const char *doc = "<R><Contents><Key>a&lt;b&#x263A;&#65;</Key></Contents><Empty/>"
                      "<Contents a=\"1\"><Key>two</Key></Contents><Bad>&nope;</Bad></R>";
    const char *end = doc + strlen(doc), *in, *ie, *p;
    char *t;
    (void)state;

    p = ty_xml_find(doc, end, "Contents", &in, &ie);
    assert_non_null(p);
    assert_non_null(ty_xml_find(in, ie, "Key", &in, &ie));
    t = ty_xml_text(in, ie);
    assert_string_equal(t, "a<b\xe2\x98\xba"
                           "A");
    free(t);
    p = ty_xml_find(p, end, "Contents", &in, &ie);
    assert_non_null(p);
    assert_non_null(ty_xml_find(in, ie, "Key", &in, &ie));
    t = ty_xml_text(in, ie);
    assert_string_equal(t, "two");
    free(t);
    assert_non_null(ty_xml_find(doc, end, "Empty", &in, &ie));
    assert_ptr_equal(in, ie);
    assert_non_null(ty_xml_find(doc, end, "Bad", &in, &ie));
    assert_null(ty_xml_text(in, ie));
    assert_null(ty_xml_find(doc, end, "Missing", &in, &ie));
}

static void test_unreachable_store(void **state)
{
    struct ty_err e;
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    char ep[64];
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct s3c_config c = {ep, "AKID", "secret", NULL, NULL};
    struct s3c *cl;
    struct s3c_req rq = {.method = "GET", .bucket = "b", .body_fd = -1, .out_fd = -1};
    struct s3c_resp rs;
    (void)state;

    /* a port that was free a moment ago: bound, never listened on, closed */
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    getsockname(fd, (struct sockaddr *)&a, &al);
    close(fd);
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", ntohs(a.sin_port));
    cl = s3c_new(&c, &e);
    assert_non_null(cl);
    assert_int_equal(s3c_do(cl, &rq, &rs, &e), -TY_EIO);
    assert_int_equal(rs.status, 0);
    assert_non_null(strstr(e.msg, ep));
    s3c_resp_cleanup(&rs);
    s3c_free(cl);
}

/* One connection's request, taken by a listener that answers 200 with no body. */
struct capture {
    int fd;
    char req[8192];
};

static void *capture_one(void *arg)
{
    struct capture *c = arg;
    int conn = accept(c->fd, NULL, NULL);
    size_t n = 0;
    ssize_t r;

    while (conn >= 0 && n < sizeof(c->req) - 1 &&
           (r = read(conn, c->req + n, sizeof(c->req) - 1 - n)) > 0) {
        n += (size_t)r;
        c->req[n] = '\0';
        if (strstr(c->req, "\r\n\r\n"))
            break;
    }
    if (conn >= 0) {
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        if (write(conn, ok, sizeof(ok) - 1) < 0)
            c->req[0] = '\0';
        close(conn);
    }
    return NULL;
}

static void test_session_token(void **state)
{
    struct ty_err e;
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    struct capture cap = {0};
    char ep[64];
    struct s3c_config c = {ep, "ASIAEXAMPLE", "secret", NULL, "FQoGZXIvYXdzEBYa+token/="};
    struct s3c *cl;
    struct s3c_req rq = {.method = "GET", .bucket = "b", .key = "k", .body_fd = -1, .out_fd = -1};
    struct s3c_resp rs;
    pthread_t thr;
    const char *signed_hdrs;
    (void)state;

    cap.fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(cap.fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(cap.fd, 1), 0);
    getsockname(cap.fd, (struct sockaddr *)&a, &al);
    snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", ntohs(a.sin_port));
    assert_int_equal(pthread_create(&thr, NULL, capture_one, &cap), 0);
    cl = s3c_new(&c, &e);
    assert_non_null(cl);
    assert_int_equal(s3c_do(cl, &rq, &rs, &e), 0);
    pthread_join(thr, NULL);
    close(cap.fd);
    s3c_resp_cleanup(&rs);
    s3c_free(cl);
    /* sent, and covered by the signature */
    assert_non_null(strstr(cap.req, "\r\nx-amz-security-token: FQoGZXIvYXdzEBYa+token/=\r\n"));
    signed_hdrs = strstr(cap.req, "SignedHeaders=");
    assert_non_null(signed_hdrs);
    assert_non_null(strstr(signed_hdrs, "x-amz-security-token"));
    assert_non_null(strstr(cap.req, "Credential=ASIAEXAMPLE/"));

    /* a token that would split the request's headers is refused */
    c.session_token = "abc\r\nHost: evil";
    assert_null(s3c_new(&c, &e));
    assert_int_equal(e.code, TY_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_is_canonical),
        cmocka_unit_test(test_query_sorts_equal_names_by_value),
        cmocka_unit_test(test_config_checks),
        cmocka_unit_test(test_fail_maps_s3_codes),
        cmocka_unit_test(test_xml_reader),
        cmocka_unit_test(test_unreachable_store),
        cmocka_unit_test(test_session_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
