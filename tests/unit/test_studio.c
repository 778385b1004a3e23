/*
 * test_studio.c - the Studio pieces: pure helpers (ids, ARNs, store ids, landing URIs, hosts,
 * list paging, cookies, query parameters, HTML escaping) and store_res against a private
 * redis-server (create-if-absent, parent/child rules, lazy status machines with short delays,
 * compare-and-set updates, Deleted retention, one-time tokens, session revocation).
 * The Redis part is skipped (the pure part still runs) when redis-server is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"
#include "redis_fixture.h"
#include "store_res.h"
#include "studio.h"

static struct redis_fixture fx;
static int have_redis;

/* ---- pure helpers ---- */

static void test_ids(void **state)
{
    char id[16], hex[65];
    (void)state;
    memcpy(id, "d-", 2);
    assert_int_equal(op_studio_random_alnum(id + 2, 12), 0);
    assert_int_equal(strlen(id), 14);
    assert_true(op_studio_domain_id_ok(id));
    for (int i = 2; i < 14; i++)
        assert_true((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9'));
    assert_int_equal(op_studio_random_hex(hex, 64), 0);
    assert_int_equal(strlen(hex), 64);
    assert_int_equal(strspn(hex, "0123456789abcdef"), 64);
    assert_int_equal(op_studio_random_hex(hex, 17), 0);
    assert_int_equal(strlen(hex), 17);

    assert_false(op_studio_domain_id_ok(NULL));
    assert_false(op_studio_domain_id_ok("d-"));
    assert_false(op_studio_domain_id_ok("x-abc"));
    assert_false(op_studio_domain_id_ok("d-ABC"));
    assert_false(op_studio_domain_id_ok("d-ab/c"));
    assert_false(op_studio_domain_id_ok("d-ab:c"));
    assert_true(op_studio_domain_id_ok("d-a-b"));
}

static void test_store_ids_and_arns(void **state)
{
    char buf[512], arn[600];
    (void)state;
    assert_int_equal(op_studio_profile_id("d-abc", "Alice-1", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "d-abc/alice-1");
    assert_int_equal(
        op_studio_app_id("d-abc", "Alice", "DetailedProfiler", "Default", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "d-abc/alice/detailedprofiler/default");
    assert_int_not_equal(op_studio_profile_id("d-abc", "a/b", buf, sizeof(buf)), 0);
    assert_int_not_equal(op_studio_profile_id("d-abc", "a:b", buf, sizeof(buf)), 0);
    assert_int_not_equal(op_studio_profile_id("d-abc", "", buf, sizeof(buf)), 0);
    assert_int_not_equal(op_studio_profile_id(NULL, "x", buf, sizeof(buf)), 0);
    assert_int_not_equal(op_studio_profile_id("d-abc", "x", buf, 5), 0);
    assert_int_not_equal(op_studio_app_id("d-abc", "x", "Type", "a b", buf, sizeof(buf)), 0);

    op_studio_arn("us-east-1", "123456789012", "domain", "d-abc", arn, sizeof(arn));
    assert_string_equal(arn, "arn:aws:sagemaker:us-east-1:123456789012:domain/d-abc");
    op_studio_arn("eu-west-1", "000000000000", "app", "d-abc/Alice/DetailedProfiler/Default", arn,
                  sizeof(arn));
    assert_string_equal(arn, "arn:aws:sagemaker:eu-west-1:000000000000:app/d-abc/alice/"
                             "detailedprofiler/default");
    op_studio_arn("us-east-1", "000000000000", "user-profile", "d-abc/alice", arn, 20);
    assert_int_equal(strlen(arn), 19); /* truncated, still terminated */
}

static void test_landing(void **state)
{
    char buf[256];
    struct ty_err err;
    (void)state;
    ty_err_clear(&err);
    assert_int_equal(op_studio_landing(NULL, buf, sizeof(buf), &err), 0);
    assert_string_equal(buf, "/console/profiler");
    assert_int_equal(op_studio_landing("", buf, sizeof(buf), &err), 0);
    assert_string_equal(buf, "/console/profiler");
    assert_int_equal(op_studio_landing("app:DetailedProfiler:", buf, sizeof(buf), &err), 0);
    assert_string_equal(buf, "/console/profiler");
    assert_int_equal(op_studio_landing("app:DetailedProfiler:jobs/j-1", buf, sizeof(buf), &err), 0);
    assert_string_equal(buf, "/console/profiler/jobs/j-1");
    assert_int_equal(op_studio_landing("studio::profiler", buf, sizeof(buf), &err), 0);
    assert_string_equal(buf, "/console/profiler");
    assert_int_equal(op_studio_landing("/console/profiler/jobs/x", buf, sizeof(buf), &err), 0);
    assert_string_equal(buf, "/console/profiler/jobs/x");

    assert_int_equal(op_studio_landing("https://evil.example/", buf, sizeof(buf), &err),
                     -TY_EINVAL);
    assert_string_equal(err.field, "LandingUri");
    assert_int_equal(op_studio_landing("//evil.example/", buf, sizeof(buf), &err), -TY_EINVAL);
    assert_int_equal(op_studio_landing("studio::../../etc", buf, sizeof(buf), &err), -TY_EINVAL);
    assert_int_equal(op_studio_landing("studio::a\r\nSet-Cookie: x=y", buf, sizeof(buf), &err),
                     -TY_EINVAL);
    assert_int_equal(op_studio_landing("studio::<script>", buf, sizeof(buf), &err), -TY_EINVAL);
    assert_int_equal(op_studio_landing("studio::aaaaaaaaaaaaaaaaaaaa", buf, 16, &err), -TY_EINVAL);
}

static void test_host(void **state)
{
    char big[300];
    (void)state;
    assert_string_equal(op_studio_host(NULL), "localhost");
    assert_string_equal(op_studio_host(""), "localhost");
    assert_string_equal(op_studio_host("127.0.0.1:8080"), "127.0.0.1:8080");
    assert_string_equal(op_studio_host("[::1]:80"), "[::1]:80");
    assert_string_equal(op_studio_host("ty.example.com"), "ty.example.com");
    assert_string_equal(op_studio_host("evil.com/x?"), "localhost");
    assert_string_equal(op_studio_host("a\"b"), "localhost");
    assert_string_equal(op_studio_host("a b"), "localhost");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_string_equal(op_studio_host(big), "localhost");
}

static json_t *rec(const char *id, double t)
{
    return json_pack("{s:s,s:f}", "_id", id, "CreationTime", t);
}

static void test_page(void **state)
{
    struct ty_err err;
    json_t *all = json_array(), *p;
    char *next = NULL, *next2 = NULL;
    (void)state;
    ty_err_clear(&err);
    json_array_append_new(all, rec("c", 3));
    json_array_append_new(all, rec("a", 1));
    json_array_append_new(all, rec("b", 2));
    json_array_append_new(all, rec("b2", 2));
    json_array_append_new(all, rec("d", 4));

    p = op_studio_page(all, "CreationTime", 0, 2, NULL, &next, &err);
    assert_non_null(p);
    assert_int_equal(json_array_size(p), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(p, 0), "_id")), "d");
    assert_string_equal(json_string_value(json_object_get(json_array_get(p, 1), "_id")), "c");
    assert_non_null(next);
    json_decref(p);
    p = op_studio_page(all, "CreationTime", 0, 2, next, &next2, &err);
    assert_int_equal(json_array_size(p), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(p, 0), "_id")), "b2");
    assert_string_equal(json_string_value(json_object_get(json_array_get(p, 1), "_id")), "b");
    json_decref(p);
    free(next);
    p = op_studio_page(all, "CreationTime", 0, 2, next2, &next, &err);
    assert_int_equal(json_array_size(p), 1);
    assert_null(next);
    json_decref(p);
    free(next2);

    p = op_studio_page(all, "CreationTime", 1, 100, NULL, &next, &err);
    assert_int_equal(json_array_size(p), 5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(p, 0), "_id")), "a");
    assert_null(next);
    json_decref(p);

    assert_null(op_studio_page(all, "CreationTime", 1, 10, "garbage", &next, &err));
    assert_int_equal(err.code, TY_EINVAL);
    assert_null(op_studio_page(all, "CreationTime", 1, 10, "1.0|", &next, &err));
    json_decref(all);

    all = json_array();
    p = op_studio_page(all, "CreationTime", 1, 10, NULL, &next, &err);
    assert_int_equal(json_array_size(p), 0);
    assert_null(next);
    json_decref(p);
    json_decref(all);
}

static void test_cookie(void **state)
{
    char v[65];
    (void)state;
    assert_int_equal(console_cookie("ty_console=abc", "ty_console", v, sizeof(v)), 0);
    assert_string_equal(v, "abc");
    assert_int_equal(console_cookie("a=1; ty_console=xyz; b=2", "ty_console", v, sizeof(v)), 0);
    assert_string_equal(v, "xyz");
    assert_int_equal(console_cookie("a=1;ty_console=\"q\"", "ty_console", v, sizeof(v)), 0);
    assert_string_equal(v, "q");
    assert_int_equal(console_cookie("xty_console=1; ty_console_2=3", "ty_console", v, sizeof(v)),
                     -1);
    assert_int_equal(console_cookie("ty_console=", "ty_console", v, sizeof(v)), -1);
    assert_int_equal(console_cookie(NULL, "ty_console", v, sizeof(v)), -1);
    assert_int_equal(console_cookie(";;;", "ty_console", v, sizeof(v)), -1);
    assert_int_equal(console_cookie("ty_console=0123456789", "ty_console", v, 5), -1);
}

static void test_query(void **state)
{
    char v[65];
    (void)state;
    assert_int_equal(console_query_param("token=abc", "token", v, sizeof(v)), 0);
    assert_string_equal(v, "abc");
    assert_int_equal(console_query_param("x=1&token=a%2Fb+c&y", "token", v, sizeof(v)), 0);
    assert_string_equal(v, "a/b c");
    assert_int_equal(console_query_param("xtoken=1", "token", v, sizeof(v)), -1);
    assert_int_equal(console_query_param("token=", "token", v, sizeof(v)), -1);
    assert_int_equal(console_query_param("token=%zz", "token", v, sizeof(v)), -1);
    assert_int_equal(console_query_param("token=%4", "token", v, sizeof(v)), -1);
    assert_int_equal(console_query_param("token=%00", "token", v, sizeof(v)), -1);
    assert_int_equal(console_query_param("", "token", v, sizeof(v)), -1);
    assert_int_equal(console_query_param("token=0123456789", "token", v, 4), -1);
}

static void test_html(void **state)
{
    struct ty_buf b;
    (void)state;
    ty_buf_init(&b, 1024);
    assert_int_equal(ty_buf_put_html(&b, "<a href=\"x\">'&'</a>\x01"), 0);
    assert_string_equal(b.data, "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;&#65533;");
    ty_buf_cleanup(&b);
    ty_buf_init(&b, 8);
    assert_int_not_equal(ty_buf_put_html(&b, "<<<<<<<<"), 0); /* over the ceiling: an error */
    ty_buf_cleanup(&b);
    assert_true(console_path("/console"));
    assert_true(console_path("/console/auth"));
    assert_false(console_path("/consolex"));
    assert_false(console_path("/"));
}

/* ---- store_res against Redis ---- */

static const struct store_res_timing fast = {1.0, 1.0};
#define T0 1700000000.0

static int setup(void **state)
{
    struct ty_err err;
    struct store *s;
    redisContext *c;
    *state = NULL;
    if (!have_redis)
        return 0;
    c = redis_fixture_raw(&fx);
    assert_non_null(c);
    freeReplyObject(redisCommand(c, "FLUSHALL"));
    redisFree(c);
    s = store_open(fx.url_unix, &err);
    assert_non_null(s);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    store_close(*state); /* NULL is a no-op */
    return 0;
}

static json_t *mk(struct store *s, const char *kind, const char *id, const char *pk,
                  const char *pid, double keep, double now, struct ty_err *err)
{
    struct store_res_new n;
    json_t *doc = json_pack("{s:s,s:f,s:[]}", "Name", id, "CreationTime", now, "List"), *r;
    memset(&n, 0, sizeof(n));
    n.kind = kind;
    n.id = id;
    n.parent_kind = pk;
    n.parent_id = pid;
    n.doc = doc;
    n.status = "Pending";
    n.keep_s = keep;
    n.replaceable = "Deleted";
    n.parent_blocked = "Deleting";
    r = store_res_create(s, &n, now, &fast, err);
    json_decref(doc);
    return r;
}

static const char *status(json_t *r)
{
    return json_string_value(json_object_get(r, "Status"));
}

static void test_res_lifecycle(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    json_t *r, *l;
    ty_err_clear(&err);
    if (!s)
        skip();

    r = mk(s, "domain", "d-1", NULL, NULL, 0, T0, &err);
    assert_non_null(r);
    assert_string_equal(status(r), "Pending");
    assert_true(json_is_array(json_object_get(r, "List"))); /* round-trips exactly */
    assert_int_equal(json_integer_value(json_object_get(r, "_ver")), 1);
    json_decref(r);
    assert_null(mk(s, "domain", "d-1", NULL, NULL, 0, T0, &err));
    assert_int_equal(err.code, TY_EINUSE);
    assert_string_equal(err.msg, "Pending");

    r = store_res_get(s, "domain", "d-1", T0 + 0.5, &fast, &err);
    assert_string_equal(status(r), "Pending");
    json_decref(r);
    r = store_res_get(s, "domain", "d-1", T0 + 1.5, &fast, &err);
    assert_string_equal(status(r), "InService");
    /* dated when it became due */
    assert_true(json_real_value(json_object_get(r, "LastModifiedTime")) == T0 + 1.0);
    json_decref(r);

    /* a child needs its parent */
    assert_null(mk(s, "user-profile", "d-2/a", "domain", "d-2", 0, T0 + 2, &err));
    assert_int_equal(err.code, TY_ENOTFOUND);
    r = mk(s, "user-profile", "d-1/a", "domain", "d-1", 0, T0 + 2, &err);
    assert_non_null(r);
    json_decref(r);
    r = mk(s, "user-profile", "d-1/b", "domain", "d-1", 0, T0 + 2.1, &err);
    json_decref(r);
    l = store_res_list(s, "user-profile", "domain", "d-1", T0 + 3, &fast, &err);
    assert_int_equal(json_array_size(l), 2);
    json_decref(l);
    l = store_res_list(s, "user-profile", NULL, NULL, T0 + 3, &fast, &err);
    assert_int_equal(json_array_size(l), 2);
    json_decref(l);

    /* the parent with children cannot go */
    assert_int_equal(
        store_res_delete(s, "domain", "d-1", NULL, NULL, "Deleting", T0 + 4, &fast, &err),
        -TY_EINUSE);
    assert_string_equal(err.msg, "2");
    /* apps under a, one Deleted-kept */
    r = mk(s, "app", "d-1/a/x/app1", "user-profile", "d-1/a", 100, T0 + 4, &err);
    assert_non_null(r);
    json_decref(r);
    assert_int_equal(store_res_delete(s, "user-profile", "d-1/a", NULL, "Deleted", "Deleting",
                                      T0 + 4.5, &fast, &err),
                     -TY_EINUSE);
    assert_int_equal(
        store_res_delete(s, "app", "d-1/a/x/app1", NULL, NULL, "Deleting", T0 + 6, &fast, &err), 0);
    r = store_res_get(s, "app", "d-1/a/x/app1", T0 + 6.5, &fast, &err);
    assert_string_equal(status(r), "Deleting");
    json_decref(r);
    /* still Deleting: counts */
    assert_int_equal(store_res_delete(s, "user-profile", "d-1/a", NULL, "Deleted", "Deleting",
                                      T0 + 6.5, &fast, &err),
                     -TY_EINUSE);
    r = store_res_get(s, "app", "d-1/a/x/app1", T0 + 7.5, &fast, &err);
    assert_string_equal(status(r), "Deleted");
    json_decref(r);
    /* Deleted children do not count; a parent that refuses children blocks creation */
    assert_int_equal(store_res_delete(s, "user-profile", "d-1/a", NULL, "Deleted", "Deleting",
                                      T0 + 8, &fast, &err),
                     0);
    assert_null(mk(s, "app", "d-1/a/x/app2", "user-profile", "d-1/a", 100, T0 + 8.1, &err));
    assert_int_equal(err.code, TY_ECONFLICT);
    assert_string_equal(err.msg, "Deleting");
    assert_int_equal(store_res_delete(s, "user-profile", "d-1/a", "InService", NULL, "Deleting",
                                      T0 + 8.2, &fast, &err),
                     -TY_ECONFLICT);
    /* the profile goes after the deleting delay; b is removed at once */
    assert_null(store_res_get(s, "user-profile", "d-1/a", T0 + 9.5, &fast, &err));
    assert_int_equal(err.code, TY_ENOTFOUND);
    assert_int_equal(
        store_res_delete(s, "user-profile", "d-1/b", NULL, NULL, NULL, T0 + 9.5, &fast, &err), 0);
    assert_int_equal(
        store_res_delete(s, "domain", "d-1", NULL, NULL, "Deleting", T0 + 10, &fast, &err), 0);
    l = store_res_list(s, "domain", NULL, NULL, T0 + 10.5, &fast, &err);
    assert_int_equal(json_array_size(l), 1);
    assert_string_equal(status(json_array_get(l, 0)), "Deleting");
    json_decref(l);
    l = store_res_list(s, "domain", NULL, NULL, T0 + 11.5, &fast, &err);
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);

    /* the Deleted app stays listed for keep seconds, can be replaced, then disappears */
    l = store_res_list(s, "app", NULL, NULL, T0 + 50, &fast, &err);
    assert_int_equal(json_array_size(l), 1);
    assert_string_equal(status(json_array_get(l, 0)), "Deleted");
    json_decref(l);
    l = store_res_list(s, "app", NULL, NULL, T0 + 108, &fast, &err);
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
}

static void test_res_update_and_replace(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct store_res_update u;
    json_t *r, *doc;
    long long ver;
    ty_err_clear(&err);
    if (!s)
        skip();

    r = mk(s, "domain", "d-9", NULL, NULL, 0, T0, &err);
    json_decref(r);
    memset(&u, 0, sizeof(u));
    u.expect = "InService";
    u.status = "Updating";
    u.ver = -1;
    assert_null(store_res_update(s, "domain", "d-9", &u, T0 + 0.1, &fast, &err));
    assert_int_equal(err.code, TY_ECONFLICT);
    assert_string_equal(err.msg, "Pending");
    r = store_res_get(s, "domain", "d-9", T0 + 2, &fast, &err);
    ver = json_integer_value(json_object_get(r, "_ver"));
    json_decref(r);
    doc = json_pack("{s:s}", "Name", "renamed");
    u.doc = doc;
    u.ver = ver + 5;
    assert_null(store_res_update(s, "domain", "d-9", &u, T0 + 2, &fast, &err));
    assert_string_equal(err.msg, "stale");
    u.ver = ver;
    r = store_res_update(s, "domain", "d-9", &u, T0 + 2, &fast, &err);
    assert_non_null(r);
    assert_string_equal(status(r), "Updating");
    assert_string_equal(json_string_value(json_object_get(r, "Name")), "renamed");
    json_decref(r);
    json_decref(doc);
    r = store_res_get(s, "domain", "d-9", T0 + 3.5, &fast, &err);
    assert_string_equal(status(r), "InService");
    json_decref(r);
    u.doc = NULL;
    assert_null(store_res_update(s, "domain", "nope", &u, T0, &fast, &err));
    assert_int_equal(err.code, TY_ENOTFOUND);

    /* a Deleted resource may be created again */
    r = mk(s, "user-profile", "d-9/p", "domain", "d-9", 0, T0 + 4, &err);
    json_decref(r);
    r = mk(s, "app", "d-9/p/t/a", "user-profile", "d-9/p", 100, T0 + 4, &err);
    json_decref(r);
    assert_int_equal(
        store_res_delete(s, "app", "d-9/p/t/a", NULL, NULL, "Deleting", T0 + 5, &fast, &err), 0);
    assert_null(mk(s, "app", "d-9/p/t/a", "user-profile", "d-9/p", 100, T0 + 5.5, &err));
    assert_int_equal(err.code, TY_EINUSE);
    r = mk(s, "app", "d-9/p/t/a", "user-profile", "d-9/p", 100, T0 + 7, &err);
    assert_non_null(r);
    assert_string_equal(status(r), "Pending");
    json_decref(r);
    r = store_res_list(s, "app", "user-profile", "d-9/p", T0 + 7, &fast, &err);
    assert_int_equal(json_array_size(r), 1);
    json_decref(r);

    /* a resource's tags go with it */
    {
        struct store_res_new n;
        json_t *tags = json_pack("[{s:s,s:s}]", "Key", "k", "Value", "v"), *got;
        doc = json_pack("{s:s}", "Name", "t");
        memset(&n, 0, sizeof(n));
        n.kind = "domain";
        n.id = "d-tags";
        n.doc = doc;
        n.status = "Pending";
        n.tags_arn = "arn:aws:sagemaker:us-east-1:0:domain/d-tags";
        r = store_res_create(s, &n, T0, &fast, &err);
        assert_non_null(r);
        json_decref(r);
        json_decref(doc);
        assert_int_equal(store_tags_add(s, n.tags_arn, tags, &err), 0);
        got = store_tags_list(s, n.tags_arn, &err);
        assert_int_equal(json_array_size(got), 1);
        json_decref(got);
        assert_int_equal(
            store_res_delete(s, "domain", "d-tags", NULL, NULL, "Deleting", T0 + 1, &fast, &err),
            0);
        assert_null(store_res_get(s, "domain", "d-tags", T0 + 2.5, &fast, &err));
        got = store_tags_list(s, n.tags_arn, &err);
        assert_int_equal(json_array_size(got), 0);
        json_decref(got);
        json_decref(tags);
    }

    /* hostile ids */
    assert_null(store_res_get(s, "domain", "a:b", T0, &fast, &err));
    assert_int_equal(err.code, TY_ENOTFOUND);
    assert_null(mk(s, "domain", "", NULL, NULL, 0, T0, &err));
}

static void test_tokens_sessions(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    json_t *v = json_pack("{s:s}", "DomainId", "d-1"), *got;
    long long n = -1;
    ty_err_clear(&err);
    if (!s)
        skip();

    assert_int_equal(store_res_token_put(s, "tok1", v, 60, &err), 0);
    got = store_res_token_take(s, "tok1", &err);
    assert_non_null(got);
    assert_string_equal(json_string_value(json_object_get(got, "DomainId")), "d-1");
    json_decref(got);
    assert_null(store_res_token_take(s, "tok1", &err)); /* one time */
    assert_int_equal(err.code, TY_ENOTFOUND);
    assert_null(store_res_token_take(s, "", &err));
    assert_int_equal(store_res_token_put(s, "tok2", v, 0, &err), -TY_EINVAL);

    assert_int_equal(store_res_session_put(s, "sid1", "d-1/alice", v, 60, &err), 0);
    assert_int_equal(store_res_session_put(s, "sid2", "d-1/alice", v, 60, &err), 0);
    assert_int_equal(store_res_session_put(s, "sid3", "d-1/bob", v, 60, &err), 0);
    got = store_res_session_get(s, "sid1", &err);
    assert_non_null(got);
    json_decref(got);
    assert_int_equal(store_res_session_revoke(s, "d-1/alice", &n, &err), 0);
    assert_int_equal(n, 2);
    assert_null(store_res_session_get(s, "sid1", &err));
    assert_null(store_res_session_get(s, "sid2", &err));
    got = store_res_session_get(s, "sid3", &err);
    assert_non_null(got);
    json_decref(got);
    assert_int_equal(store_res_session_revoke(s, "d-1/nobody", &n, &err), 0);
    assert_int_equal(n, 0);
    json_decref(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ids),
        cmocka_unit_test(test_store_ids_and_arns),
        cmocka_unit_test(test_landing),
        cmocka_unit_test(test_host),
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_cookie),
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_html),
        cmocka_unit_test_setup_teardown(test_res_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_res_update_and_replace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tokens_sessions, setup, teardown),
    };
    int rc = redis_fixture_start(&fx);
    if (rc == 0)
        have_redis = 1;
    else
        fprintf(stderr, "redis-server unavailable: the store_res tests are skipped\n");
    signal(SIGPIPE, SIG_IGN);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (have_redis)
        redis_fixture_stop(&fx);
    return rc;
}
