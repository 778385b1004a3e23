/*
 * test_store_metrics.c - CloudWatch series in Redis (store_metrics.h) against a private
 * redis-server: canonical metric ids, put/range, points with the same timestamp kept apart,
 * the per-series cap and the retention, ListMetrics filters, and the memory cost per point
 * (printed: the figure docs/cloudwatch.md quotes). Exits 77 when redis-server is absent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_fixture.h"
#include "store.h"
#include "store_metrics.h"

static struct redis_fixture fx;
static struct store *st;

static json_t *host(const char *h)
{
    return json_pack("[{s:s,s:s}]", "Name", "Host", "Value", h);
}

static void test_id_canonical(void **state)
{
    json_t *a =
        json_pack("[{s:s,s:s},{s:s,s:s}]", "Name", "b", "Value", "2", "Name", "a", "Value", "1");
    json_t *b =
        json_pack("[{s:s,s:s},{s:s,s:s}]", "Value", "1", "Name", "a", "Name", "b", "Value", "2");
    char *x = store_metrics_id("ns", "m", a), *y = store_metrics_id("ns", "m", b);
    (void)state;
    assert_string_equal(x, y);
    assert_string_equal(x, "{\"Dimensions\":[{\"Name\":\"a\",\"Value\":\"1\"},{\"Name\":\"b\","
                           "\"Value\":\"2\"}],\"MetricName\":\"m\",\"Namespace\":\"ns\"}");
    free(x);
    free(y);
    json_decref(a);
    json_decref(b);
}

static void test_put_range_list(void **state)
{
    struct store_metric_point p[5] = {{1000000, 0, 0.5},
                                      {1000000, 1, 0.5},
                                      {1001000, 2, 0.25},
                                      {1002000, 3, -1e-3},
                                      {1003000, 4, 7}};
    struct store_metric_point *got = NULL;
    struct ty_err err;
    size_t n = 0;
    json_t *d = host("job-a/algo-1"), *l, *f;
    char *id = store_metrics_id(STORE_METRICS_NS_SAGEMAKER, "loss", d);
    (void)state;
    assert_int_equal(
        store_metrics_put(st, STORE_METRICS_NS_SAGEMAKER, "loss", d, p, 5, 1003000, &err), 0);
    assert_int_equal(store_metrics_range(st, id, 0, 1002000, 100, &got, &n, &err), 0);
    assert_int_equal(n, 3); /* the end is exclusive; two points at 1000000 both kept */
    assert_true(got[0].value == 0.5 && got[1].value == 0.5 && got[2].value == 0.25);
    free(got);
    assert_int_equal(store_metrics_range(st, id, 0, INT64_MAX, 100, &got, &n, &err), 0);
    assert_int_equal(n, 5);
    assert_true(got[3].value == -1e-3);
    free(got);
    /* a second series and filters */
    assert_int_equal(store_metrics_put(st, "Other", "loss", NULL, p, 1, 1003000, &err), 0);
    l = store_metrics_list(st, NULL, NULL, NULL, 0, 500, &err);
    assert_int_equal(json_array_size(l), 2);
    json_decref(l);
    l = store_metrics_list(st, STORE_METRICS_NS_SAGEMAKER, NULL, NULL, 0, 500, &err);
    assert_int_equal(json_array_size(l), 1);
    json_decref(l);
    f = json_pack("[{s:s}]", "Name", "Host");
    l = store_metrics_list(st, NULL, "loss", f, 0, 500, &err);
    assert_int_equal(json_array_size(l), 1);
    json_decref(l);
    json_decref(f);
    l = store_metrics_list(st, NULL, NULL, NULL, 1003001, 500, &err); /* RecentlyActive */
    assert_int_equal(json_array_size(l), 0);
    json_decref(l);
    free(id);
    json_decref(d);
}

static void test_cap_retention_memory(void **state)
{
    enum { N = 20000 };
    struct store_metric_point *p = calloc(N, sizeof(*p)), *got = NULL;
    struct ty_err err;
    size_t n = 0;
    json_t *d = host("job-mem/algo-1");
    char *id = store_metrics_id(STORE_METRICS_NS_SAGEMAKER, "acc", d), key[4200];
    int64_t now = 1700000000000LL;
    redisContext *c = redis_fixture_raw(&fx);
    redisReply *r;
    (void)state;
    for (int i = 0; i < N; i++)
        p[i] = (struct store_metric_point){now - (N - i) * 10, i, 0.123456789 * i};
    store_metrics_limits(3600, 100000);
    assert_int_equal(store_metrics_put(st, STORE_METRICS_NS_SAGEMAKER, "acc", d, p, N, now, &err),
                     0);
    snprintf(key, sizeof(key), "ty:cw:pts:%s", id);
    r = redisCommand(c, "MEMORY USAGE %s SAMPLES 0", key);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    printf("memory: %d points use %lld bytes in Redis = %.1f bytes/point\n", N, r->integer,
           (double)r->integer / N);
    assert_true(r->integer / N < 200);
    freeReplyObject(r);
    /* the cap keeps the newest */
    store_metrics_limits(3600, 1000);
    assert_int_equal(
        store_metrics_put(st, STORE_METRICS_NS_SAGEMAKER, "acc", d, p + N - 1, 1, now, &err), 0);
    assert_int_equal(store_metrics_range(st, id, 0, INT64_MAX, N, &got, &n, &err), 0);
    assert_int_equal(n, 1000);
    assert_true(got[n - 1].seq == N - 1);
    free(got);
    /* the retention drops what is older */
    store_metrics_limits(60, 1000);
    assert_int_equal(store_metrics_put(st, STORE_METRICS_NS_SAGEMAKER, "acc", d, p + N - 1, 1,
                                       now + 60000 + 1, &err),
                     0);
    assert_int_equal(store_metrics_range(st, id, 0, INT64_MAX, N, &got, &n, &err), 0);
    assert_int_equal(n, 0);
    free(got);
    r = redisCommand(c, "EXISTS %s", key); /* an empty series is gone */
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    assert_int_equal(
        store_metrics_put(st, STORE_METRICS_NS_SAGEMAKER, "acc", d, p + N - 1, 1, now, &err), 0);
    r = redisCommand(c, "PTTL %s", key);
    assert_true(r->integer > 0 && r->integer <= 60000);
    freeReplyObject(r);
    store_metrics_limits(STORE_METRICS_RETENTION_S, STORE_METRICS_MAX_POINTS);
    redisFree(c);
    free(id);
    free(p);
    json_decref(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_id_canonical),
        cmocka_unit_test(test_put_range_list),
        cmocka_unit_test(test_cap_retention_memory),
    };
    struct ty_err err;
    int rc = redis_fixture_start(&fx);
    if (rc == 77)
        return 77;
    if (rc != 0)
        return 1;
    st = store_open(fx.url_unix, &err);
    if (!st) {
        redis_fixture_stop(&fx);
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    store_close(st);
    redis_fixture_stop(&fx);
    return rc;
}
