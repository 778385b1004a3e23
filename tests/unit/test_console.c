/*
 * test_console.c - the console's security pieces: the password KDF (PBKDF2-SHA256 with a
 * per-user salt), the password policy, the CSRF check, the session cookie's attributes and
 * cookie/form parsing, the form -> operation input mapping; and, against a private
 * redis-server, login profiles and the lock-out after repeated failures (skipped without
 * redis-server).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cloudwatch.h"
#include "console.h"
#include "console_auth.h"
#include "console_call.h"
#include "console_sysmon.h"
#include "iamapi.h"
#include "password.h"
#include "redis_fixture.h"
#include "store.h"
#include "store_iam.h"
#include "store_login.h"

static struct redis_fixture fx;
static int have_redis;

static void test_kdf(void **state)
{
    char h1[PASSWORD_HASH_MAX], h2[PASSWORD_HASH_MAX];
    struct ty_err err;
    (void)state;
    ty_err_clear(&err);
    assert_int_equal(password_hash("S3cret-pw", 1000, h1, sizeof(h1), &err), 0);
    assert_int_equal(password_hash("S3cret-pw", 1000, h2, sizeof(h2), &err), 0);
    assert_true(strncmp(h1, "pbkdf2-sha256$1000$", 19) == 0);
    assert_string_not_equal(h1, h2); /* a fresh salt each time */
    assert_int_equal(strlen(h1), 19 + 32 + 1 + 64);
    assert_true(password_verify("S3cret-pw", h1));
    assert_true(password_verify("S3cret-pw", h2));
    assert_false(password_verify("S3cret-pX", h1));
    assert_false(password_verify("", h1));
    assert_false(password_verify("S3cret-pw", "pbkdf2-sha256$1000$zz$00"));
    assert_false(password_verify("S3cret-pw", "md5$1$00$00"));
    assert_false(password_verify("S3cret-pw", ""));
    assert_false(password_verify(NULL, h1));
    h1[strlen(h1) - 1] = h1[strlen(h1) - 1] == '0' ? '1' : '0';
    assert_false(password_verify("S3cret-pw", h1));
    /* the default iteration count is the slow one */
    assert_true(PASSWORD_ITERATIONS >= 300000);
    assert_int_not_equal(password_hash("x", 1000, h1, 10, &err), 0);
}

static void test_policy(void **state)
{
    struct password_policy p;
    struct ty_err err;
    (void)state;
    ty_err_clear(&err);
    password_policy_default(&p);
    assert_int_equal(password_policy_check(&p, "Abcdef1!", &err), 0);
    assert_int_equal(password_policy_check(&p, "abcdefg1!", &err), 0); /* 3 of 4 */
    assert_int_equal(password_policy_check(&p, "Ab1!", &err), -TY_EPWPOLICY);
    assert_string_equal(err.field, "Password");
    assert_non_null(strstr(err.msg, "minimum length of 8"));
    assert_int_equal(password_policy_check(&p, "abcdefghij", &err), -TY_EPWPOLICY);
    assert_non_null(strstr(err.msg, "three of these"));
    assert_int_equal(password_policy_check(&p, "Abcdefg1\n", &err), -TY_EPWPOLICY);
    p.custom = 1;
    p.min_length = 10;
    p.req_symbols = 1;
    p.req_upper = 1;
    assert_int_equal(password_policy_check(&p, "abcdefghij!", &err), -TY_EPWPOLICY);
    assert_string_equal(err.msg, "Password should have at least one uppercase letter");
    assert_int_equal(password_policy_check(&p, "Abcdefghijk", &err), -TY_EPWPOLICY);
    assert_string_equal(err.msg, "Password should have at least one symbol");
    assert_int_equal(password_policy_check(&p, "Abcdefghij!", &err), 0);
}

/* A request with a Cookie, Origin, Host and a form body. */
static void mkreq(struct http_request *r, const char *cookie, const char *origin, const char *host,
                  const char *body)
{
    memset(r, 0, sizeof(*r));
    r->method = "POST";
    r->path = (char *)"/console/do";
    r->query = (char *)"";
    if (cookie) {
        r->headers[r->nheaders].name = "Cookie";
        r->headers[r->nheaders++].value = cookie;
    }
    if (origin) {
        r->headers[r->nheaders].name = "Origin";
        r->headers[r->nheaders++].value = origin;
    }
    if (host) {
        r->headers[r->nheaders].name = "Host";
        r->headers[r->nheaders++].value = host;
    }
    ty_buf_init(&r->body, 65536);
    if (body)
        ty_buf_puts(&r->body, body);
}

static void test_csrf(void **state)
{
    struct console_sess s;
    struct http_request r;
    const char *tok = "6f1c2a9e0b7d4c3a8e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f70819";
    char body[256];
    (void)state;
    memset(&s, 0, sizeof(s));
    s.csrf = tok;
    snprintf(body, sizeof(body), "csrf=%s&op=StopTrainingJob", tok);
    mkreq(&r, NULL, NULL, "127.0.0.1:8080", body);
    assert_true(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    /* same origin: fine; another site: refused even with the right token */
    mkreq(&r, NULL, "http://127.0.0.1:8080", "127.0.0.1:8080", body);
    assert_true(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    mkreq(&r, NULL, "http://evil.example", "127.0.0.1:8080", body);
    assert_false(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    /* "Origin: null" (a sandboxed frame, a data: URL) is no origin of ours */
    mkreq(&r, NULL, "null", "127.0.0.1:8080", body);
    assert_false(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    /* missing, wrong, truncated, longer tokens */
    mkreq(&r, NULL, NULL, "h", "op=StopTrainingJob");
    assert_false(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    mkreq(&r, NULL, NULL, "h", "csrf=00&op=x");
    assert_false(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    snprintf(body, sizeof(body), "csrf=%.63s", tok);
    mkreq(&r, NULL, NULL, "h", body);
    assert_false(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    snprintf(body, sizeof(body), "csrf=%s0", tok);
    mkreq(&r, NULL, NULL, "h", body);
    assert_false(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    /* a session without a token accepts nothing */
    s.csrf = NULL;
    mkreq(&r, NULL, NULL, "h", "csrf=");
    assert_false(console_auth_csrf_ok(&s, &r));
    ty_buf_cleanup(&r.body);
    assert_false(console_auth_same("", ""));
    assert_true(console_auth_same("ab", "ab"));
    assert_false(console_auth_same("ab", "abc"));
}

static void test_cookie(void **state)
{
    char c[256], v[80];
    (void)state;
    console_auth_cookie(c, sizeof(c), "abc123", 43200, 0);
    assert_string_equal(c, "ty_console=abc123; Path=/console; Max-Age=43200; HttpOnly; "
                           "SameSite=Strict");
    console_auth_cookie(c, sizeof(c), "abc123", 60, 1);
    assert_non_null(strstr(c, "; Secure"));
    console_auth_cookie(c, sizeof(c), NULL, 60, 0);
    assert_true(strncmp(c, "ty_console=; Path=/console; Max-Age=0;", 38) == 0);
    /* parsing */
    assert_int_equal(console_cookie("a=1; ty_console=xyz; b=2", "ty_console", v, sizeof(v)), 0);
    assert_string_equal(v, "xyz");
    assert_int_equal(console_cookie("xty_console=1", "ty_console", v, sizeof(v)), -1);
    assert_int_equal(console_cookie("ty_console=", "ty_console", v, sizeof(v)), -1);
    assert_int_equal(console_cookie("ty_console=\"q\"", "ty_console", v, sizeof(v)), 0);
    assert_string_equal(v, "q");
    assert_int_equal(console_cookie("ty_console=0123456789", "ty_console", v, 5), -1);
    assert_int_equal(console_cookie(NULL, "ty_console", v, sizeof(v)), -1);
}

static void test_back_and_input(void **state)
{
    struct ty_err err;
    const char *body = "csrf=x&svc=sagemaker&op=CreateDomain&p.DomainName=d1&"
                       "p.DefaultUserSettings.ExecutionRole=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&"
                       "l.SubnetIds=subnet-1&n.MaxResults=5&p.Empty=&t.trainyard%3Aiam-user=bob";
    json_t *in;
    (void)state;
    ty_err_clear(&err);
    assert_true(console_back_ok("/console/domains"));
    assert_true(console_back_ok("/console/jobs?status=Failed"));
    assert_false(console_back_ok("https://evil.example/"));
    assert_false(console_back_ok("/console//evil.example"));
    assert_false(console_back_ok("/console/x\r\nSet-Cookie: a=b"));
    assert_false(console_back_ok("/consolex"));
    assert_false(console_back_ok(NULL));
    in = console_call_input(body, strlen(body), &err);
    assert_non_null(in);
    assert_string_equal(json_string_value(json_object_get(in, "DomainName")), "d1");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(in, "DefaultUserSettings"), "ExecutionRole")),
                        "arn:aws:iam::1:role/r");
    assert_string_equal(json_string_value(json_array_get(json_object_get(in, "SubnetIds"), 0)),
                        "subnet-1");
    assert_int_equal(json_integer_value(json_object_get(in, "MaxResults")), 5);
    assert_null(json_object_get(in, "Empty"));
    assert_null(json_object_get(in, "csrf"));
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(in, "Tags"), 0), "Key")),
        "trainyard:iam-user");
    json_decref(in);
    in = console_call_input("n.MaxResults=5x", 15, &err);
    assert_null(in);
    assert_int_equal(err.code, TY_EINVAL);
    in = console_call_input("p.a..b=1", 8, &err);
    assert_null(in);
}

/*
 * Form parsers given names and values that are not UTF-8 once decoded (issue 35): jansson
 * refuses such a key and frees the value it was handed, which CloudWatch's parser went on
 * appending to (a worker spinning forever) or writing into (heap corruption), as did the
 * console's. Each is refused now; under ASan the old code fails here.
 */
static void test_forms_not_utf8(void **state)
{
    static const char *const cw_bad[] = {
        "Action=ListMetrics&Version=2010-08-01&%FF.member.1=x",
        "Action=ListMetrics&%FF.x=1",
        "Dimensions.member.1.%FF=x",
        "Dimensions.member.1.Name=%FF",
        "Namespace=%C3",
        "%FF=1",
        "a.%FF.member.2.b=1",
    };
    static const char *const iam_bad[] = {
        "Action=ListUsers&%FF=1",
        "Action=TagUser&Tags.member.1.%FF=x",
        "Action=TagUser&Tags.member.1.Key=%FF",
        "Action=ListUsers&PathPrefix=%C3%28",
    };
    static const char *const console_bad[] = {"p.%FF.a=1", "p.a.%FF=1", "p.%FF=1", "p.a=%FF",
                                              "l.%FF=1"};
    struct ty_err err;
    json_t *in;
    (void)state;

    for (size_t i = 0; i < sizeof(cw_bad) / sizeof(cw_bad[0]); i++) {
        in = cloudwatch_form_to_json(cw_bad[i], strlen(cw_bad[i]));
        if (in)
            fail_msg("CloudWatch form '%s' was taken", cw_bad[i]);
    }
    {
        static const char ok[] = "Action=ListMetrics&Dimensions.member.2.Name=b&Namespace=%C3%A9";
        in = cloudwatch_form_to_json(ok, strlen(ok));
    }
    assert_non_null(in);
    assert_string_equal(json_string_value(json_object_get(in, "Namespace")), "\xc3\xa9");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(in, "Dimensions"), 0), "Name")),
                        "b");
    json_decref(in);
    for (size_t i = 0; i < sizeof(iam_bad) / sizeof(iam_bad[0]); i++) {
        ty_err_clear(&err);
        in = op_iamapi_form(NULL, iam_bad[i], strlen(iam_bad[i]), &err);
        if (in)
            fail_msg("IAM form '%s' was taken", iam_bad[i]);
        assert_int_equal(err.code, TY_EINVAL);
    }
    for (size_t i = 0; i < sizeof(console_bad) / sizeof(console_bad[0]); i++) {
        ty_err_clear(&err);
        in = console_call_input(console_bad[i], strlen(console_bad[i]), &err);
        if (in)
            fail_msg("console form '%s' was taken", console_bad[i]);
        assert_int_equal(err.code, TY_EINVAL);
    }
}

/* system-metrics JSON lines folded into the live charts' series */
static void test_sysmon_series(void **state)
{
    static const char text[] =
        "{\"Type\":\"cpu\",\"Name\":\"cpu0\",\"Dimension\":\"CPUUtilization\",\"Value\":10,"
        "\"NodeId\":\"algo-1\",\"Timestamp\":100.5}\n"
        "{\"Type\":\"cpu\",\"Name\":\"cpu1\",\"Dimension\":\"CPUUtilization\",\"Value\":30,"
        "\"NodeId\":\"algo-1\",\"Timestamp\":100.5}\n"
        "{\"Type\":\"cpu\",\"Name\":\"cpu_iowait\",\"Dimension\":\"IOWait\",\"Value\":99,"
        "\"NodeId\":\"algo-1\",\"Timestamp\":100.5}\n"
        "{\"Type\":\"memory\",\"Name\":\"MemoryUsedPercent\",\"Dimension\":\"Memory\","
        "\"Value\":42,\"NodeId\":\"algo-1\",\"Timestamp\":100.5}\n"
        "{\"Type\":\"network\",\"Name\":\"net\",\"Dimension\":\"ReceiveBytesPerSecond\","
        "\"Value\":2048,\"NodeId\":\"algo-1\",\"Timestamp\":100.5}\n"
        /* another node's line is not ours */
        "{\"Type\":\"cpu\",\"Name\":\"cpu0\",\"Dimension\":\"CPUUtilization\",\"Value\":77,"
        "\"NodeId\":\"algo-2\",\"Timestamp\":100.5}\n"
        "{\"Type\":\"gpu\",\"Name\":\"gpu0\",\"Dimension\":\"GPUUtilization\",\"Value\":50,"
        "\"NodeId\":\"algo-1\",\"Timestamp\":101.5}\n"
        "{\"Type\":\"gpu\",\"Name\":\"gpu1\",\"Dimension\":\"GPUUtilization\",\"Value\":70,"
        "\"NodeId\":\"algo-1\",\"Timestamp\":101.5}\n"
        "{\"Type\":\"cpu\",\"Name\":\"cpu0\",\"Dimension\":\"CPUUtiliz"; /* torn */
    json_t *o;
    (void)state;
    o = console_sysmon_series(text, strlen(text), "algo-1", 100);
    assert_non_null(o);
    assert_int_equal(json_array_size(json_object_get(o, "t")), 2);
    assert_true(json_number_value(json_array_get(json_object_get(o, "t"), 0)) == 100.5);
    assert_true(json_number_value(json_array_get(json_object_get(o, "cpu"), 0)) == 20.0);
    assert_true(json_number_value(json_array_get(json_object_get(o, "mem"), 0)) == 42.0);
    assert_true(json_number_value(json_array_get(json_object_get(o, "rx"), 0)) == 2048.0);
    assert_true(json_is_null(json_array_get(json_object_get(o, "tx"), 0)));
    assert_true(json_is_null(json_array_get(json_object_get(o, "cpu"), 1)));
    assert_true(json_number_value(json_array_get(json_object_get(o, "gpu"), 1)) == 60.0);
    assert_int_equal(json_integer_value(json_object_get(o, "gpus")), 2);
    json_decref(o);
    /* only the newest max_points samples */
    o = console_sysmon_series(text, strlen(text), "algo-1", 1);
    assert_int_equal(json_array_size(json_object_get(o, "t")), 1);
    assert_true(json_number_value(json_array_get(json_object_get(o, "t"), 0)) == 101.5);
    json_decref(o);
    o = console_sysmon_series("", 0, "algo-1", 10);
    assert_int_equal(json_array_size(json_object_get(o, "t")), 0);
    json_decref(o);
}

/* password_attempt from source (and device: a device token, NULL for none); *reset on
   success. */
static int attempt(struct store *s, const char *name, const char *uid, const char *pw,
                   const char *source, const char *device, int *reset, struct ty_err *err)
{
    struct password_try t;
    int rc;

    memset(&t, 0, sizeof(t));
    t.source = source;
    t.device = device;
    rc = password_attempt(s, name, uid, pw, &t, err);
    if (rc == 0)
        *reset = t.reset;
    return rc;
}

/* Guessing from many addresses gains nothing (the user's own budget), a stranger on the user's
   address cannot keep her out (her browser's device token has a budget of its own), an IPv6
   host is one source per /64, and a device token is the user's alone and dies with her
   password. Before, failures were counted per user and address only. */
static void test_signin_budgets(void **state)
{
    struct store *s;
    struct store_iam_user u;
    struct password_try t;
    struct ty_err err;
    char src[64], dev[PASSWORD_DEVICE_MAX], ip[32];
    int reset = 0;

    (void)state;
    if (!have_redis)
        skip();
    ty_err_clear(&err);
    s = store_open(fx.url_tcp, &err);
    assert_non_null(s);
    memset(&u, 0, sizeof(u));
    snprintf(u.name, sizeof(u.name), "con-bea");
    snprintf(u.id, sizeof(u.id), "AIDABEA");
    snprintf(u.path, sizeof(u.path), "/");
    snprintf(u.arn, sizeof(u.arn), "arn:aws:iam::000000000000:user/con-bea");
    assert_int_equal(store_iam_user_create(s, &u, NULL, &err), 0);
    assert_int_equal(password_put(s, "con-bea", u.id, "Bea-Passw0rd", 0, 0, 1000, &err), 0);
    /* her browser signs in once and gets a device token */
    memset(&t, 0, sizeof(t));
    t.source = "10.1.0.1";
    assert_int_equal(password_attempt(s, "con-bea", u.id, "Bea-Passw0rd", &t, &err), 0);
    snprintf(dev, sizeof(dev), "%s", t.device_out);
    assert_int_equal(strlen(dev), 65);
    /* a stranger guesses from many addresses, 4 each (under the per-address budget) */
    for (int i = 0; i < PASSWORD_USER_FREE_FAILS; i++) {
        snprintf(ip, sizeof(ip), "10.2.%d.%d", i / 4, 1 + i % 4);
        assert_int_equal(attempt(s, "con-bea", u.id, "guess", ip, NULL, &reset, &err), -TY_EDENIED);
    }
    /* the user's own budget is spent: a new address waits, even with the right password
       (the wait starts at the last failure, and this attempt is checked before any KDF) */
    memset(&t, 0, sizeof(t));
    t.source = "10.3.0.1";
    assert_int_equal(password_attempt(s, "con-bea", u.id, "Bea-Passw0rd", &t, &err), -TY_ETHROTTLE);
    assert_true(t.wait_ms > 0 && t.wait_ms <= PASSWORD_WAIT_MAX_S * 1000);
    /* her known browser, on the stranger's very address, signs in at once */
    assert_int_equal(attempt(s, "con-bea", u.id, "Bea-Passw0rd", "10.2.0.1", dev, &reset, &err), 0);
    /* a stranger on her address spends that address's budget, not her device's */
    for (int i = 0; i < PASSWORD_FREE_FAILS; i++)
        assert_int_equal(attempt(s, "con-bea", u.id, "guess", "10.1.0.1", NULL, &reset, &err) ==
                                 -TY_EDENIED ||
                             err.code == TY_ETHROTTLE,
                         1);
    assert_int_equal(attempt(s, "con-bea", u.id, "Bea-Passw0rd", "10.1.0.1", dev, &reset, &err), 0);
    /* a forged or another user's token is no device of hers: it waits out the user's budget
       (held here for a minute, so a slow build's KDF cannot outlast the wait) */
    store_login_hold(s, "con-bea", PASSWORD_USER_SOURCE, 60000);
    {
        char forged[PASSWORD_DEVICE_MAX];
        snprintf(forged, sizeof(forged), "%s", dev);
        forged[40] = forged[40] == 'a' ? 'b' : 'a';
        assert_int_equal(
            attempt(s, "con-bea", u.id, "Bea-Passw0rd", "10.4.0.1", forged, &reset, &err),
            -TY_ETHROTTLE);
    }
    /* a new password ends every device token */
    assert_int_equal(password_put(s, "con-bea", u.id, "Bea-Passw0rd-2", 1, -1, 2000, &err), 0);
    assert_int_equal(attempt(s, "con-bea", u.id, "Bea-Passw0rd-2", "10.2.0.1", dev, &reset, &err),
                     -TY_ETHROTTLE);
    /* IPv6: one source per /64; IPv4-mapped addresses are their IPv4 one */
    password_source("2001:db8:1:2:aaaa:bbbb:cccc:dddd", src, sizeof(src));
    assert_string_equal(src, "2001:db8:1:2::/64");
    password_source("2001:db8:1:2::1", src, sizeof(src));
    assert_string_equal(src, "2001:db8:1:2::/64");
    password_source("::ffff:10.0.0.7", src, sizeof(src));
    assert_string_equal(src, "10.0.0.7");
    password_source("10.0.0.7", src, sizeof(src));
    assert_string_equal(src, "10.0.0.7");
    password_source("not an address", src, sizeof(src));
    assert_string_equal(src, "-");
    store_close(s);
}

static void test_login_profiles(void **state)
{
    struct store *s;
    struct ty_err err;
    struct store_iam_user u;
    double created;
    int reset = -1, rc;
    char sid[CONSOLE_AUTH_SID_LEN + 1];
    (void)state;
    if (!have_redis)
        skip();
    ty_err_clear(&err);
    s = store_open(fx.url_tcp, &err);
    assert_non_null(s);
    memset(&u, 0, sizeof(u));
    snprintf(u.name, sizeof(u.name), "con-ann");
    snprintf(u.id, sizeof(u.id), "AIDAANN");
    snprintf(u.path, sizeof(u.path), "/");
    snprintf(u.arn, sizeof(u.arn), "arn:aws:iam::000000000000:user/con-ann");
    assert_int_equal(store_iam_user_create(s, &u, NULL, &err), 0);

    assert_int_equal(password_get(s, "con-ann", u.id, &created, &reset, &err), -TY_ENOTFOUND);
    assert_int_equal(password_put(s, "con-ann", u.id, "short", 0, 0, 1000, &err), -TY_EPWPOLICY);
    assert_int_equal(password_put(s, "con-ann", u.id, "Ann-Passw0rd", 0, 1, 1000, &err), 0);
    assert_int_equal(password_put(s, "con-ann", u.id, "Ann-Passw0rd", 0, 0, 1000, &err),
                     -TY_EINUSE);
    assert_int_equal(password_get(s, "CON-ANN", u.id, &created, &reset, &err), 0);
    assert_true(created == 1000 && reset == 1);
    /* another user of the same name (a new id) has no password */
    assert_int_equal(password_get(s, "con-ann", "AIDAOTHER", &created, &reset, &err),
                     -TY_ENOTFOUND);
    assert_int_equal(
        attempt(s, "con-ann", "AIDAOTHER", "Ann-Passw0rd", "10.0.0.1", NULL, &reset, &err),
        -TY_EDENIED);

    /* sign-in: right, wrong; then source A waits (growing), source B signs in at once */
    assert_int_equal(attempt(s, "con-ann", u.id, "Ann-Passw0rd", "10.0.0.1", NULL, &reset, &err),
                     0);
    assert_int_equal(attempt(s, "nobody", "", "x", "10.0.0.1", NULL, &reset, &err), -TY_EDENIED);
    for (int i = 0; i < PASSWORD_FREE_FAILS; i++) {
        rc = attempt(s, "con-ann", u.id, "wrong", "10.0.0.1", NULL, &reset, &err);
        assert_int_equal(rc, -TY_EDENIED);
        assert_string_equal(err.msg,
                            "Your authentication information is incorrect. Please try again.");
    }
    assert_int_equal(attempt(s, "con-ann", u.id, "Ann-Passw0rd", "10.0.0.1", NULL, &reset, &err),
                     -TY_ETHROTTLE);
    assert_string_equal(err.msg, "Too many failed sign-in attempts. Try again in 1 seconds.");
    assert_int_equal(attempt(s, "con-ann", u.id, "Ann-Passw0rd", "10.0.0.2", NULL, &reset, &err),
                     0);
    {
        long long w = 0;
        store_login_hold(s, "con-ann", "10.0.0.1", 0); /* no-op */
        assert_int_equal(store_login_wait(s, "con-ann", "10.0.0.1", &w, &err), 0);
        assert_true(w > 0 && w <= 1000);
        usleep((useconds_t)(w + 50) * 1000);
        /* the sixth failure waits 2 s, the seventh 4 s */
        assert_int_equal(attempt(s, "con-ann", u.id, "wrong", "10.0.0.1", NULL, &reset, &err),
                         -TY_EDENIED);
        assert_int_equal(store_login_wait(s, "con-ann", "10.0.0.1", &w, &err), 0);
        assert_true(w > 1000 && w <= 2000);
        store_login_fails_clear(s, "con-ann", "10.0.0.1");
        assert_int_equal(store_login_wait(s, "con-ann", "10.0.0.1", &w, &err), 0);
        assert_int_equal(w, 0);
    }
    /* an administrator's new password */
    assert_int_equal(password_put(s, "con-ann", u.id, "Ann-Passw0rd-2", 1, -1, 2000, &err), 0);
    assert_int_equal(attempt(s, "con-ann", u.id, "Ann-Passw0rd", "10.0.0.1", NULL, &reset, &err),
                     -TY_EDENIED);
    assert_int_equal(attempt(s, "con-ann", u.id, "Ann-Passw0rd-2", "10.0.0.1", NULL, &reset, &err),
                     0);
    assert_int_equal(reset, 1); /* kept by the update */

    /* a whole sign-in makes a session with a CSRF token; a wrong account is refused */
    {
        struct password_try t;
        memset(&t, 0, sizeof(t));
        t.source = "10.0.0.1";
        assert_int_equal(console_auth_login(s, "000000000000", "111111111111", "con-ann",
                                            "Ann-Passw0rd-2", &t, sid, sizeof(sid), &err),
                         -TY_EDENIED);
        assert_int_equal(console_auth_login(s, "000000000000", "000000000000", "con-ann",
                                            "Ann-Passw0rd-2", &t, sid, sizeof(sid), &err),
                         0);
        assert_int_equal(strlen(t.device_out), 65); /* "<id>.<mac>" */
    }
    assert_int_equal(strlen(sid), CONSOLE_AUTH_SID_LEN);

    /* the policy */
    {
        struct password_policy p;
        assert_int_equal(password_policy_get(s, &p, &err), 0);
        assert_false(p.custom);
        p.custom = 1;
        p.min_length = 12;
        assert_int_equal(password_policy_put(s, &p, &err), 0);
        assert_int_equal(password_put(s, "con-ann", u.id, "Ann-Passw0r", 1, -1, 3000, &err),
                         -TY_EPWPOLICY);
        assert_int_equal(password_policy_delete(s, &err), 0);
        assert_int_equal(password_policy_delete(s, &err), -TY_ENOTFOUND);
    }
    assert_int_equal(password_delete(s, "con-ann", &err), 0);
    assert_int_equal(password_delete(s, "con-ann", &err), -TY_ENOTFOUND);
    store_close(s);
}

static int setup(void **state)
{
    int rc = redis_fixture_start(&fx);
    (void)state;
    have_redis = rc == 0;
    return rc == 0 || rc == 77 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (have_redis)
        redis_fixture_stop(&fx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kdf),
        cmocka_unit_test(test_policy),
        cmocka_unit_test(test_csrf),
        cmocka_unit_test(test_cookie),
        cmocka_unit_test(test_back_and_input),
        cmocka_unit_test(test_login_profiles),
        cmocka_unit_test(test_signin_budgets),
        cmocka_unit_test(test_sysmon_series),
        cmocka_unit_test(test_forms_not_utf8),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
