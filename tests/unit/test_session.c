/*
 * test_session.c - session.c and auth.c against a private redis-server: container tokens
 * (grant, hashing, TTL), minting temporary credentials (format, ARN, lifetime capped by the
 * token), expiry, revocation (tokens and minted credentials, and a mint racing a revoke),
 * auth_lookup/auth_verify (session token missing, wrong, expired; an IAM key with a token;
 * scope service), auth_service_of on request shapes. Exits 77 when redis-server is absent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "http.h"
#include "redis_fixture.h"
#include "session.h"
#include "sigv4.h"
#include "store.h"

static struct redis_fixture fx;

#define ROLE "arn:aws:iam::123456789012:role/service/ty-exec"

static redisReply *raw_cmd(const char *fmt, ...)
{
    redisContext *c = redis_fixture_raw(&fx);
    redisReply *r;
    va_list ap;
    assert_non_null(c);
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    assert_non_null(r);
    return r;
}

static long long raw_int(const char *fmt, const char *arg)
{
    redisReply *r = raw_cmd(fmt, arg);
    long long v;
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    v = r->integer;
    freeReplyObject(r);
    return v;
}

static int setup(void **state)
{
    struct ty_err err;
    struct store *s;
    freeReplyObject(raw_cmd("FLUSHALL"));
    s = store_open(fx.url_unix, &err);
    assert_non_null(s);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    store_close(*state);
    return 0;
}

static int all_in(const char *s, const char *set)
{
    return strspn(s, set) == strlen(s);
}

static void test_grant(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    char tok[SESSION_TOKEN_LEN], tok2[SESSION_TOKEN_LEN], sha[65], key[128];
    redisReply *r;

    assert_int_equal(session_job_grant(s, "job-a", ROLE, NULL, 600, tok, sizeof(tok), &err), 0);
    assert_int_equal(strlen(tok), 64);
    assert_true(all_in(tok, "0123456789abcdef"));
    assert_int_equal(session_job_grant(s, "job-a", ROLE, NULL, 600, tok2, sizeof(tok2), &err), 0);
    assert_string_not_equal(tok, tok2);
    /* only the hash is stored, with the job, role and expiry, living past the expiry */
    session_sha256_hex(tok, sha);
    snprintf(key, sizeof(key), "ty:jobtoken:%s", sha);
    r = raw_cmd("HGET %s job", key);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "job-a");
    freeReplyObject(r);
    r = raw_cmd("HGET %s role_arn", key);
    assert_string_equal(r->str, ROLE);
    freeReplyObject(r);
    assert_true(raw_int("TTL %s", key) > 600 + SESSION_GRACE_S - 5);
    assert_true(raw_int("TTL %s", key) <= 600 + SESSION_GRACE_S);
    snprintf(key, sizeof(key), "ty:jobtoken:%s", tok);
    assert_int_equal(raw_int("EXISTS %s", key), 0);
    assert_int_equal(raw_int("SCARD %s", "ty:jobsess:job-a"), 3); /* two tokens, the policy */

    /* bad arguments */
    assert_int_equal(session_job_grant(s, "", ROLE, NULL, 600, tok, sizeof(tok), &err), -TY_EINVAL);
    assert_int_equal(session_job_grant(s, "j", "arn:aws:iam::123456789012:user/x", NULL, 600, tok,
                                       sizeof(tok), &err),
                     -TY_EINVAL);
    assert_int_equal(
        session_job_grant(s, "j", "arn:aws:iam::12:role/x", NULL, 600, tok, sizeof(tok), &err),
        -TY_EINVAL);
    assert_int_equal(session_job_grant(s, "j", ROLE, NULL, 0, tok, sizeof(tok), &err), -TY_EINVAL);
    assert_int_equal(
        session_job_grant(s, "j", ROLE, NULL, SESSION_MAX_TTL_S + 1, tok, sizeof(tok), &err),
        -TY_EINVAL);
    assert_int_equal(session_job_grant(s, "j", ROLE, NULL, 60, tok, 10, &err), -TY_EINVAL);
}

static void test_mint(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct session_creds c, g;
    char tok[SESSION_TOKEN_LEN], sha[65], iso[32], job[100];
    time_t now = time(NULL);

    /* a 70-character job name: the session name is its first 64 */
    memset(job, 'j', 70);
    job[70] = '\0';
    assert_int_equal(session_job_grant(s, job, ROLE, NULL, 7200, tok, sizeof(tok), &err), 0);
    assert_int_equal(session_mint(s, tok, 0, now, &c, &err), 0);
    assert_int_equal(strlen(c.access_key), 20);
    assert_memory_equal(c.access_key, "ASIA", 4);
    assert_true(all_in(c.access_key + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"));
    assert_true(session_is_temporary_key(c.access_key));
    assert_int_equal(strlen(c.secret), 40);
    assert_int_equal(strlen(c.token), SESSION_STOKEN_LEN - 1);
    assert_memory_equal(c.token, "IQoJ", 4);
    assert_int_equal(c.expires, (long long)now + SESSION_CRED_TTL_S);
    assert_string_equal(c.role_arn, ROLE);
    assert_int_equal(strlen(c.session_name), 64);
    assert_string_equal(c.arn, "arn:aws:sts::123456789012:assumed-role/ty-exec/"
                               "jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj");
    assert_string_equal(c.job, job);

    /* looked up by key: the secret, and the session token's hash only */
    assert_int_equal(session_get(s, c.access_key, &g, &err), 0);
    assert_string_equal(g.secret, c.secret);
    assert_string_equal(g.token, "");
    session_sha256_hex(c.token, sha);
    assert_string_equal(g.token_sha, sha);
    assert_string_equal(g.arn, c.arn);
    assert_int_equal(g.expires, c.expires);

    /* each mint is fresh; the lifetime never passes the token's */
    {
        struct session_creds d;
        assert_int_equal(session_mint(s, tok, 0, now + 7000, &d, &err), 0);
        assert_string_not_equal(d.access_key, c.access_key);
        assert_int_equal(d.expires, (long long)now + 7200);
        assert_int_equal(session_mint(s, tok, 30, now, &d, &err), 0);
        assert_int_equal(d.expires, (long long)now + 30);
    }
    session_iso8601(0, iso, sizeof(iso));
    assert_string_equal(iso, "1970-01-01T00:00:00Z");
    session_iso8601(1700000000, iso, sizeof(iso));
    assert_string_equal(iso, "2023-11-14T22:13:20Z");
}

static void test_mint_refused(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct session_creds c;
    char tok[SESSION_TOKEN_LEN];
    time_t now = time(NULL);

    assert_int_equal(session_mint(s, "", 0, now, &c, &err), -TY_EDENIED);
    assert_int_equal(session_mint(s, "not-hex", 0, now, &c, &err), -TY_EDENIED);
    assert_int_equal(
        session_mint(s, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 0, now,
                     &c, &err),
        -TY_EDENIED);
    assert_string_equal(err.msg, "The container authorization token is invalid.");
    assert_int_equal(session_job_grant(s, "job-e", ROLE, NULL, 5, tok, sizeof(tok), &err), 0);
    assert_int_equal(session_mint(s, tok, 0, now + 6, &c, &err), -TY_EDENIED);
    assert_string_equal(err.msg, "The container authorization token has expired.");
    assert_int_equal(session_get(s, "ASIAAAAAAAAAAAAAAAAA", &c, &err), -TY_ENOTFOUND);
    assert_int_equal(session_get(s, "AKIAAAAAAAAAAAAAAAAA", &c, &err), -TY_ENOTFOUND);
}

static void test_revoke(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct session_creds c1, c2, other, g;
    char t1[SESSION_TOKEN_LEN], t2[SESSION_TOKEN_LEN], t3[SESSION_TOKEN_LEN];
    time_t now = time(NULL);

    assert_int_equal(session_job_grant(s, "job-r", ROLE, NULL, 600, t1, sizeof(t1), &err), 0);
    assert_int_equal(session_job_grant(s, "job-r", ROLE, NULL, 600, t2, sizeof(t2), &err), 0);
    assert_int_equal(session_job_grant(s, "job-other", ROLE, NULL, 600, t3, sizeof(t3), &err), 0);
    assert_int_equal(session_mint(s, t1, 0, now, &c1, &err), 0);
    assert_int_equal(session_mint(s, t2, 0, now, &c2, &err), 0);
    assert_int_equal(session_mint(s, t3, 0, now, &other, &err), 0);
    assert_int_equal(session_job_revoke(s, "job-r", &err), 0);
    assert_int_equal(session_get(s, c1.access_key, &g, &err), -TY_ENOTFOUND);
    assert_int_equal(session_get(s, c2.access_key, &g, &err), -TY_ENOTFOUND);
    assert_int_equal(session_mint(s, t1, 0, now, &g, &err), -TY_EDENIED);
    assert_int_equal(session_mint(s, t2, 0, now, &g, &err), -TY_EDENIED);
    assert_int_equal(raw_int("EXISTS %s", "ty:jobsess:job-r"), 0);
    /* another job is untouched */
    assert_int_equal(session_get(s, other.access_key, &g, &err), 0);
    assert_int_equal(session_mint(s, t3, 0, now, &g, &err), 0);
    /* revoking twice, or a job with nothing, is fine */
    assert_int_equal(session_job_revoke(s, "job-r", &err), 0);
    assert_int_equal(session_job_revoke(s, "never-granted", &err), 0);
    assert_int_equal(session_job_revoke(s, "", &err), -TY_EINVAL);
}

/* A mint whose token disappears from the job's set between its read and its write (a revoke
   that ran in between) writes nothing. */
static void test_revoke_race(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct session_creds c;
    char t[SESSION_TOKEN_LEN], sha[65];
    redisReply *r;

    assert_int_equal(session_job_grant(s, "job-race", ROLE, NULL, 600, t, sizeof(t), &err), 0);
    session_sha256_hex(t, sha);
    r = raw_cmd("SREM ty:jobsess:job-race tok:%s", sha);
    freeReplyObject(r);
    assert_int_equal(session_mint(s, t, 0, time(NULL), &c, &err), -TY_EDENIED);
    r = raw_cmd("KEYS ty:session:*");
    assert_int_equal(r->elements, 0);
    freeReplyObject(r);
}

static void test_auth_lookup(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct session_creds c;
    struct auth_principal p;
    struct sigv4_auth a;
    char tok[SESSION_TOKEN_LEN];
    time_t now = time(NULL);

    assert_int_equal(session_job_grant(s, "job-auth", ROLE, NULL, 600, tok, sizeof(tok), &err), 0);
    assert_int_equal(session_mint(s, tok, 0, now, &c, &err), 0);
    memset(&a, 0, sizeof(a));
    snprintf(a.access_key, sizeof(a.access_key), "%s", c.access_key);
    snprintf(a.service, sizeof(a.service), "sts");

    /* no token, a wrong one, the right one */
    assert_int_equal(auth_lookup(s, &a, now, &p, &err), -TY_EBADKEY);
    assert_string_equal(err.field, "X-Amz-Security-Token");
    assert_string_equal(err.msg, "The security token included in the request is invalid.");
    snprintf(a.session_token, sizeof(a.session_token), "%sX", c.token);
    assert_int_equal(auth_lookup(s, &a, now, &p, &err), -TY_EBADKEY);
    snprintf(a.session_token, sizeof(a.session_token), "%s", c.token);
    assert_int_equal(auth_lookup(s, &a, now, &p, &err), 0);
    assert_true(p.temporary);
    assert_string_equal(p.secret, c.secret);
    assert_string_equal(p.arn, "arn:aws:sts::123456789012:assumed-role/ty-exec/job-auth");
    assert_string_equal(p.role_arn, ROLE);
    assert_string_equal(p.session_name, "job-auth");
    {
        char uid[128];
        auth_user_id(s, &p, uid, sizeof(uid));
        assert_int_equal(strlen(uid), 21 + 1 + strlen("job-auth"));
        assert_memory_equal(uid, "AROA", 4);
        assert_string_equal(uid + 21, ":job-auth");
    }
    auth_principal_cleanse(&p);
    assert_int_equal(p.secret[0], 0);

    /* expired */
    assert_int_equal(auth_lookup(s, &a, (time_t)c.expires, &p, &err), -TY_EEXPIREDTOKEN);
    assert_string_equal(err.msg, "The security token included in the request is expired");

    /* revoked */
    assert_int_equal(session_job_revoke(s, "job-auth", &err), 0);
    assert_int_equal(auth_lookup(s, &a, now, &p, &err), -TY_ENOTFOUND);

    /* an IAM key: known without a token, refused with one */
    assert_int_equal(store_principal_put(s, "AKIDTEST00000001", "sekrit",
                                         "arn:aws:iam::123456789012:user/u", "u", &err),
                     0);
    snprintf(a.access_key, sizeof(a.access_key), "AKIDTEST00000001");
    assert_int_equal(auth_lookup(s, &a, now, &p, &err), -TY_EBADKEY);
    a.session_token[0] = '\0';
    assert_int_equal(auth_lookup(s, &a, now, &p, &err), 0);
    assert_false(p.temporary);
    assert_string_equal(p.arn, "arn:aws:iam::123456789012:user/u");
    snprintf(a.access_key, sizeof(a.access_key), "AKIDNOSUCHKEY");
    assert_int_equal(auth_lookup(s, &a, now, &p, &err), -TY_ENOTFOUND);
}

/* auth_check_region: the served region byte for byte, the global one where allowed, SigV2 */
static void test_auth_check_region(void **state)
{
    struct sigv4_auth a;
    struct ty_err err;

    (void)state;
    memset(&a, 0, sizeof(a));
    snprintf(a.region, sizeof(a.region), "eu-west-1");
    assert_int_equal(auth_check_region(&a, "eu-west-1", 0, &err), 0);
    assert_int_equal(auth_check_region(&a, NULL, 0, &err), 0);
    ty_err_clear(&err);
    assert_int_equal(auth_check_region(&a, "us-east-1", 1, &err), -TY_EBADSIG);
    assert_string_equal(err.field, "region");
    assert_string_equal(err.msg, "Credential should be scoped to a valid region. ");
    snprintf(a.region, sizeof(a.region), "EU-WEST-1");
    assert_int_equal(auth_check_region(&a, "eu-west-1", 0, &err), -TY_EBADSIG);
    snprintf(a.region, sizeof(a.region), "us-east-1");
    assert_int_equal(auth_check_region(&a, "eu-west-1", 0, &err), -TY_EBADSIG);
    assert_int_equal(auth_check_region(&a, "eu-west-1", 1, &err), 0); /* IAM, STS */
    a.region[0] = '\0';
    assert_int_equal(auth_check_region(&a, "eu-west-1", 0, &err), -TY_EBADSIG);
    a.sigv2 = 1; /* no scope to check */
    assert_int_equal(auth_check_region(&a, "eu-west-1", 0, &err), 0);
}

/* auth_verify on a request signed with temporary credentials, as a client signs it */
static void test_auth_verify(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct session_creds c;
    struct auth_principal p;
    struct sigv4_auth a;
    struct ty_kv h[4];
    struct sigv4_request req;
    char tok[SESSION_TOKEN_LEN], amz[17], authz[2048];
    const char *body = "{}";
    time_t now = time(NULL);
    struct tm tm;

    assert_int_equal(session_job_grant(s, "job-v", ROLE, NULL, 600, tok, sizeof(tok), &err), 0);
    assert_int_equal(session_mint(s, tok, 0, now, &c, &err), 0);
    gmtime_r(&now, &tm);
    strftime(amz, sizeof(amz), "%Y%m%dT%H%M%SZ", &tm);
    h[0] = (struct ty_kv){"host", "127.0.0.1:1"};
    h[1] = (struct ty_kv){"x-amz-date", amz};
    h[2] = (struct ty_kv){"x-amz-security-token", c.token};
    memset(&req, 0, sizeof(req));
    req.method = "POST";
    req.path = "/";
    req.query = "";
    req.headers = h;
    req.nheaders = 3;
    req.body = body;
    req.body_len = strlen(body);
    assert_int_equal(sigv4_sign(&req, c.access_key, c.secret, "us-east-1", "sagemaker", amz, authz,
                                sizeof(authz)),
                     0);
    h[3] = (struct ty_kv){"authorization", authz};
    req.nheaders = 4;
    assert_int_equal(sigv4_parse(&req, &a, &err), 0);
    assert_string_equal(a.session_token, c.token);
    assert_int_equal(auth_verify(s, &req, &a, "sagemaker", now, &p, &err), 0);
    assert_string_equal(p.arn, "arn:aws:sts::123456789012:assumed-role/ty-exec/job-v");
    assert_int_equal(p.secret[0], 0); /* cleansed */
    /* another service's scope */
    assert_int_equal(auth_verify(s, &req, &a, "logs", now, &p, &err), -TY_EBADSIG);
    assert_string_equal(err.field, "service");
    assert_string_equal(err.msg, "Credential should be scoped to correct service: 'logs'. ");
    /* a wrong secret */
    {
        char bad[SESSION_SECRET_LEN];
        redisReply *r;
        char key[64];
        snprintf(bad, sizeof(bad), "%s", c.secret);
        bad[0] = bad[0] == 'A' ? 'B' : 'A';
        snprintf(key, sizeof(key), "ty:session:%s", c.access_key);
        r = raw_cmd("HSET %s secret %s", key, bad);
        freeReplyObject(r);
        assert_int_equal(auth_verify(s, &req, &a, "sagemaker", now, &p, &err), -TY_EBADSIG);
    }
}

static struct http_request *mkreq(struct http_request *r, const char *method, const char *path,
                                  const char *query, const char *target, const char *body)
{
    memset(r, 0, sizeof(*r));
    r->method = method;
    r->path = (char *)path;
    r->query = (char *)query;
    if (target) {
        r->headers[0] = (struct ty_kv){"X-Amz-Target", target};
        r->nheaders = 1;
    }
    r->body.data = (char *)body;
    r->body.len = body ? strlen(body) : 0;
    return r;
}

static void test_service_of(void **state)
{
    struct http_request r;
    const char *v;
    (void)state;
#define SVC(expect, ...)                                                                           \
    do {                                                                                           \
        v = auth_service_of(mkreq(&r, __VA_ARGS__));                                               \
        if (expect)                                                                                \
            assert_string_equal(v ? v : "(null)", (const char *)(expect));                         \
        else                                                                                       \
            assert_null(v);                                                                        \
    } while (0)
    SVC("sagemaker", "POST", "/", "", "SageMaker.ListTrainingJobs", "{}");
    SVC("logs", "POST", "/", "", "Logs_20140328.GetLogEvents", "{}");
    SVC(NULL, "POST", "/", "", "DynamoDB_20120810.ListTables", "{}");
    SVC("sagemaker", "POST", "/sagemaker/ListTrainingJobs", "", NULL, "{}");
    SVC("sts", "POST", "/", "", NULL, "Action=GetCallerIdentity&Version=2011-06-15");
    SVC("iam", "POST", "/", "", NULL, "Action=ListUsers&Version=2010-05-08");
    SVC("iam", "GET", "/", "Action=ListUsers&Version=2010-05-08", NULL, NULL);
    SVC(NULL, "POST", "/", "", NULL, "Action=ListUsers");
    SVC(NULL, "POST", "/", "", NULL, "{}");
    SVC("s3", "GET", "/", "", NULL, NULL);
    SVC("s3", "PUT", "/bucket/key", "", NULL, "data");
    SVC("s3", "POST", "/bucket", "delete", NULL, "<Delete/>");
    SVC(NULL, "GET", "/healthz", "", NULL, NULL);
    SVC(NULL, "GET", SESSION_CREDENTIALS_PATH, "", NULL, NULL);
    SVC(NULL, "GET", "/console/", "", NULL, NULL);
#undef SVC
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mint_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoke, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoke_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_lookup, setup, teardown),
        cmocka_unit_test(test_auth_check_region),
        cmocka_unit_test_setup_teardown(test_auth_verify, setup, teardown),
        cmocka_unit_test(test_service_of),
    };
    int rc = redis_fixture_start(&fx);
    if (rc == 77) {
        fprintf(stderr, "redis-server not installed: skipped\n");
        return 77;
    }
    if (rc != 0) {
        fprintf(stderr, "cannot start redis-server\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    redis_fixture_stop(&fx);
    return rc;
}
