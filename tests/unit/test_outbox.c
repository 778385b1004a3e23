/*
 * test_outbox.c - the agent's outbox (outbox.h) against a private redis-server: records
 * written while Redis is away are replayed in order once it is back (the file then removed), a
 * replay cut short resumes after what was applied (no log batch twice), a transition already
 * applied is skipped, metric points reach their series once, a final Completed that meets a
 * Stopping job records Stopped, and the leftovers of an earlier run are replayed by
 * outbox_replay_all. Exits 77 without redis-server.
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
#include <time.h>
#include <unistd.h>

#include "outbox.h"
#include "queue.h"
#include "queue_first.h"
#include "redis_fixture.h"
#include "store.h"

#define GROUP "/aws/sagemaker/TrainingJobs"

static struct redis_fixture fx;

struct ctx {
    struct store *s;
    char dir[64];
};

static int setup(void **state)
{
    struct ty_err err;
    struct ctx *c = calloc(1, sizeof(*c));
    redisContext *rc = redis_fixture_raw(&fx);

    assert_non_null(rc);
    freeReplyObject(redisCommand(rc, "FLUSHALL"));
    redisFree(rc);
    snprintf(c->dir, sizeof(c->dir), "/tmp/ty-outbox-XXXXXX");
    assert_non_null(mkdtemp(c->dir));
    c->s = store_open(fx.url_unix, &err);
    assert_non_null(c->s);
    store_set_identity(c->s, "us-east-1", "123456789012");
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    struct ctx *c = *state;
    char cmd[128];

    store_close(c->s);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
    assert_int_equal(system(cmd), 0);
    free(c);
    return 0;
}

static void create_job(struct store *s, const char *name, const char *status)
{
    struct ty_err err;
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s}", "TrainingJobName", name, "TrainingJobArn",
                            "arn:aws:sagemaker:us-east-1:123456789012:training-job/x",
                            "TrainingJobStatus", status, "SecondaryStatus", "Training");
    assert_int_equal(store_job_create(s, name, doc, 1700000000.0, &err), 0);
    json_decref(doc);
}

static const char *status_of(struct store *s, const char *name, char *out, size_t n)
{
    struct ty_err err;
    json_t *doc = store_job_get(s, name, &err);

    assert_non_null(doc);
    snprintf(out, n, "%s", json_string_value(json_object_get(doc, "TrainingJobStatus")));
    json_decref(doc);
    return out;
}

static size_t transitions(struct store *s, const char *name, const char *which)
{
    struct ty_err err;
    json_t *doc = store_job_get(s, name, &err), *t;
    size_t i, n = 0;

    assert_non_null(doc);
    json_array_foreach(json_object_get(doc, "SecondaryStatusTransitions"), i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "Status")), which) == 0)
            n++;
    }
    json_decref(doc);
    return n;
}

static size_t events(struct store *s, const char *stream)
{
    struct ty_err err;
    json_t *r = store_log_range(s, GROUP, stream, "-", "+", 0, 1000, &err);
    size_t n = r ? json_array_size(r) : 0;

    json_decref(r);
    return n;
}

/* transition Uploading, two log events, Completed, ack */
static void write_finish(struct ctx *c, const char *job, const char *entry)
{
    struct store_transition up = {.expect = "InProgress",
                                  .secondary = "Uploading",
                                  .message = "Uploading",
                                  .now = 1700000100.0};
    struct store_transition done = {.expect = "InProgress",
                                    .status = "Completed",
                                    .secondary = "Completed",
                                    .message = "done",
                                    .now = 1700000200.0};
    struct ty_err err;
    char stream[128];
    json_t *ev =
        json_pack("[{s:I, s:s}, {s:I, s:s}]", "timestamp", (json_int_t)1700000150000, "message",
                  "one", "timestamp", (json_int_t)1700000150001, "message", "two");

    snprintf(stream, sizeof(stream), "%s/algo-1-1", job);
    done.set = json_pack("{s:i}", "TrainingTimeInSeconds", 9);
    assert_int_equal(outbox_transition(c->dir, job, &up, &err), 0);
    assert_int_equal(outbox_logs(c->dir, job, "us-east-1", "123456789012", stream, ev, &err), 0);
    assert_int_equal(outbox_transition(c->dir, job, &done, &err), 0);
    if (entry)
        assert_int_equal(outbox_ack(c->dir, job, entry, &err), 0);
    json_decref(done.set);
    json_decref(ev);
}

static void test_replay_in_order(void **state)
{
    struct ctx *c = *state;
    struct ty_err err;
    char st[32];

    create_job(c->s, "j1", "InProgress");
    write_finish(c, "j1", NULL);
    assert_int_equal(outbox_pending(c->dir, "j1"), 1);
    assert_int_equal(outbox_replay(c->s, c->dir, "j1", &err), 0);
    assert_int_equal(outbox_pending(c->dir, "j1"), 0);
    assert_string_equal(status_of(c->s, "j1", st, sizeof(st)), "Completed");
    assert_int_equal(transitions(c->s, "j1", "Uploading"), 1);
    assert_int_equal(transitions(c->s, "j1", "Completed"), 1);
    assert_int_equal(events(c->s, "j1/algo-1-1"), 2);
    /* the same records again (a second outbox): transitions skipped, nothing fails */
    write_finish(c, "j1", NULL);
    assert_int_equal(outbox_replay(c->s, c->dir, "j1", &err), 0);
    assert_string_equal(status_of(c->s, "j1", st, sizeof(st)), "Completed");
    assert_int_equal(transitions(c->s, "j1", "Completed"), 1);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Metric points buffered while Redis was away reach their series once, however often the
   record is replayed. */
static void test_metrics(void **state)
{
    struct ctx *c = *state;
    struct ty_err err;
    int64_t t = now_ms() - 5000;
    struct store_metric_point p[3] = {{t, 0, 1.5}, {t + 1000, 1, 1.25}, {t + 2000, 2, 1.0}};
    struct store_metric_point *got = NULL;
    json_t *dims = json_pack("[{s:s, s:s}]", "Name", "Host", "Value", "j6/algo-1");
    char *id = store_metrics_id(STORE_METRICS_NS_SAGEMAKER, "train:loss", dims);
    size_t n = 0;

    assert_non_null(id);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(outbox_metrics(c->dir, "j6", STORE_METRICS_NS_SAGEMAKER, "train:loss",
                                        dims, p, 3, &err),
                         0);
        assert_int_equal(outbox_replay(c->s, c->dir, "j6", &err), 0);
    }
    assert_int_equal(store_metrics_range(c->s, id, t - 1, t + 10000, 100, &got, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_true(got[1].value == 1.25 && got[1].ts_ms == t + 1000);
    free(got);
    free(id);
    json_decref(dims);
}

static void test_resume_after_crash(void **state)
{
    struct ctx *c = *state;
    struct ty_err err;
    char p[256], st[32];
    FILE *f;

    create_job(c->s, "j2", "InProgress");
    write_finish(c, "j2", NULL);
    /* a replay that applied records 1 and 2 (the log batch) and died before removing them */
    assert_int_equal(outbox_replay(c->s, c->dir, "j2", &err), 0);
    write_finish(c, "j2", NULL); /* same content, seq 1..3 again */
    snprintf(p, sizeof(p), "%s/outbox/j2.done", c->dir);
    assert_non_null(f = fopen(p, "w"));
    fprintf(f, "2\n");
    fclose(f);
    assert_int_equal(outbox_replay(c->s, c->dir, "j2", &err), 0);
    assert_int_equal(events(c->s, "j2/algo-1-1"), 2); /* not 4 */
    assert_string_equal(status_of(c->s, "j2", st, sizeof(st)), "Completed");
    assert_int_equal(access(p, F_OK), -1);
}

static void test_stop_wins(void **state)
{
    struct ctx *c = *state;
    struct ty_err err;
    char st[32];

    create_job(c->s, "j3", "Stopping");
    write_finish(c, "j3", NULL);
    assert_int_equal(outbox_replay(c->s, c->dir, "j3", &err), 0);
    assert_string_equal(status_of(c->s, "j3", st, sizeof(st)), "Stopped");
}

static void test_redis_away_then_back(void **state)
{
    struct ctx *c = *state;
    struct ty_err err;
    struct queue_item it;
    struct store *s2;
    char st[32];

    create_job(c->s, "j4", "InProgress");
    assert_int_equal(queue_init(c->s, &err), 0);
    assert_int_equal(queue_first(c->s, "agent-1", &it, &err), 1);
    assert_string_equal(it.job, "j4");
    write_finish(c, "j4", it.entry_id);
    /* Redis killed (SIGKILL) and started again (the fixture's is a fresh, empty one: the job
       is made again); the leftover outbox is replayed by the next start's outbox_replay_all */
    assert_int_equal(redis_fixture_restart(&fx), 0);
    store_close(c->s);
    c->s = NULL;
    assert_non_null(s2 = store_open(fx.url_unix, &err));
    store_set_identity(s2, "us-east-1", "123456789012");
    create_job(s2, "j4", "InProgress");
    assert_int_equal(queue_init(s2, &err), 0);
    assert_int_equal(outbox_replay_all(s2, c->dir, NULL, NULL), 0);
    assert_int_equal(outbox_pending(c->dir, "j4"), 0);
    assert_string_equal(status_of(s2, "j4", st, sizeof(st)), "Completed");
    assert_int_equal(events(s2, "j4/algo-1-1"), 2);
    c->s = s2;
}

static int skip_all(const char *job, void *ud)
{
    (void)job;
    (void)ud;
    return 1;
}

static void test_store_down_keeps_outbox(void **state)
{
    struct ctx *c = *state;
    struct ty_err err;
    char url[64];
    struct store *dead;

    /* a store on a port nobody listens on: the replay stops at the first record */
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", redis_fixture_free_port());
    dead = store_open(url, &err);
    write_finish(c, "j5", NULL);
    if (dead) {
        assert_true(outbox_replay(dead, c->dir, "j5", &err) < 0);
        store_close(dead);
    }
    assert_int_equal(outbox_pending(c->dir, "j5"), 1);
    /* a runner owns it: left alone */
    assert_int_equal(outbox_replay_all(c->s, c->dir, skip_all, NULL), 0);
    assert_int_equal(outbox_pending(c->dir, "j5"), 1);
    /* no such job (deleted meanwhile): its transitions are dropped, the outbox goes */
    assert_int_equal(outbox_replay_all(c->s, c->dir, NULL, NULL), 0);
    assert_int_equal(outbox_pending(c->dir, "j5"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replay_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_after_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redis_away_then_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_down_keeps_outbox, setup, teardown),
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
