/*
 * test_queue.c - the job queue against a private redis-server: claim/ack, two consumers, an
 * entry taken by choice past older ones, a race to take one entry, the wait for a new entry,
 * reclaim from a dead agent but not from a live one, heartbeat expiry, depth, and a lost
 * consumer group after a Redis restart. Exits 77 when redis-server is not installed.
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

#include "queue.h"
#include "queue_first.h"
#include "redis_fixture.h"
#include "store.h"

static struct redis_fixture fx;

struct two {
    struct store *a, *b;
};

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int setup(void **state)
{
    struct ty_err err;
    struct two *t = calloc(1, sizeof(*t));
    redisContext *c = redis_fixture_raw(&fx);
    assert_non_null(c);
    freeReplyObject(redisCommand(c, "FLUSHALL"));
    redisFree(c);
    t->a = store_open(fx.url_unix, &err);
    t->b = store_open(fx.url_tcp, &err);
    assert_non_null(t->a);
    assert_non_null(t->b);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct two *t = *state;
    store_close(t->a);
    store_close(t->b);
    free(t);
    return 0;
}

/* A job created by principal who ("" = not recorded, as before fair share). */
static void create_job_by(struct store *s, const char *name, const char *who)
{
    struct ty_err err;
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s}", "TrainingJobName", name, "TrainingJobArn",
                            "arn:aws:sagemaker:us-east-1:123456789012:training-job/x",
                            "TrainingJobStatus", "InProgress", "SecondaryStatus", "Starting");
    if (*who)
        json_object_set_new(doc, "_principal", json_string(who));
    assert_int_equal(store_job_create(s, name, doc, 1700000000.0, &err), 0);
    json_decref(doc);
}

static void create_job(struct store *s, const char *name)
{
    create_job_by(s, name, "");
}

static void test_claim_ack(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item it;
    /* entries added before the group exists are still delivered */
    create_job(t->a, "j1");
    create_job(t->a, "j2");
    assert_int_equal(queue_init(t->a, &err), 0);
    assert_int_equal(queue_init(t->a, &err), 0); /* BUSYGROUP is fine */
    assert_int_equal(queue_depth(t->a, &err), 2);
    assert_int_equal(queue_first(t->a, "agent-1", &it, &err), 1);
    assert_string_equal(it.job, "j1");
    assert_true(strchr(it.entry_id, '-') != NULL);
    assert_int_equal(queue_depth(t->a, &err), 2); /* one queued, one pending */
    assert_int_equal(queue_ack(t->a, it.entry_id, &err), 0);
    assert_int_equal(queue_depth(t->a, &err), 1);
    assert_int_equal(queue_first(t->a, "agent-1", &it, &err), 1);
    assert_string_equal(it.job, "j2");
    assert_int_equal(queue_ack(t->a, it.entry_id, &err), 0);
    assert_int_equal(queue_depth(t->a, &err), 0);
    memset(&it, 0, sizeof(it));
    assert_int_equal(queue_first(t->a, "agent-1", &it, &err), 0);
    assert_string_equal(it.job, ""); /* untouched */
    {
        char last[64];
        size_t n = 9;
        double t0 = mono_ms(), dt;
        assert_int_equal(queue_waiting(t->a, 10, NULL, &it, &n, last, sizeof(last), &err), 0);
        assert_int_equal(n, 0);
        assert_int_equal(queue_wait_new(t->a, last, 200, &err), 0);
        dt = mono_ms() - t0;
        assert_true(dt >= 150 && dt < 5000);
    }
    assert_int_equal(queue_take(t->a, "", &it, NULL, &err), -TY_EINVAL);
}

static void test_two_consumers(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item i1, i2, i3;
    assert_int_equal(queue_init(t->a, &err), 0);
    create_job(t->a, "j1");
    create_job(t->a, "j2");
    create_job(t->a, "j3");
    assert_int_equal(queue_first(t->a, "agent-a", &i1, &err), 1);
    assert_int_equal(queue_first(t->b, "agent-b", &i2, &err), 1);
    assert_string_not_equal(i1.job, i2.job);
    assert_string_not_equal(i1.entry_id, i2.entry_id);
    assert_int_equal(queue_first(t->b, "agent-b", &i3, &err), 1);
    assert_string_equal(i3.job, "j3");
    assert_int_equal(queue_first(t->a, "agent-a", &i3, &err), 0);
    assert_int_equal(queue_depth(t->a, &err), 3);
}

/* A restarted agent with the same id finds what its earlier run claimed: its heartbeat key
   may still be alive, so queue_reclaim (for others' entries) never gives them back. */
static void test_own_pending_after_restart(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item i1, i2, got;
    assert_int_equal(queue_init(t->a, &err), 0);
    create_job(t->a, "j1");
    create_job(t->a, "j2");
    create_job(t->a, "j3");
    assert_int_equal(queue_first(t->a, "agent-x", &i1, &err), 1);
    assert_int_equal(queue_first(t->a, "agent-x", &i2, &err), 1);
    assert_int_equal(queue_first(t->b, "agent-y", &got, &err), 1); /* j3: another agent's */
    assert_int_equal(queue_ack(t->a, i1.entry_id, &err), 0);       /* j1 finished */
    /* "restart": agent-x looks for its own entries, then past the last one it got */
    memset(&got, 0, sizeof(got));
    assert_int_equal(queue_own_pending(t->b, "agent-x", "", &got, &err), 1);
    assert_string_equal(got.job, "j2");
    assert_string_equal(got.entry_id, i2.entry_id);
    assert_int_equal(queue_own_pending(t->b, "agent-x", got.entry_id, &got, &err), 0);
    assert_int_equal(queue_own_pending(t->b, "agent-z", "", &got, &err), 0);
    assert_int_equal(queue_own_pending(t->b, "", "", &got, &err), -TY_EINVAL);
}

static void test_reclaim_dead_not_live(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item it, got;
    json_t *cap =
        json_pack("{s:i, s:I, s:i}", "cpus", 8, "memory", (json_int_t)32 << 30, "gpus", 1);
    assert_int_equal(queue_init(t->a, &err), 0);
    create_job(t->a, "live-job");
    create_job(t->a, "dead-job");

    /* agent-live heartbeats and holds live-job */
    assert_int_equal(queue_heartbeat(t->a, "agent-live", cap, 30, &err), 0);
    assert_int_equal(queue_first(t->a, "agent-live", &it, &err), 1);
    assert_string_equal(it.job, "live-job");
    /* agent-dead never heartbeats (or its key expired) and holds dead-job */
    assert_int_equal(queue_first(t->a, "agent-dead", &it, &err), 1);
    assert_string_equal(it.job, "dead-job");

    assert_int_equal(queue_heartbeat(t->b, "agent-new", cap, 30, &err), 0);
    /* not idle long enough yet */
    assert_int_equal(queue_reclaim(t->b, "agent-new", 60000, &got, &err), 0);
    sleep_ms(20);
    assert_int_equal(queue_reclaim(t->b, "agent-new", 10, &got, &err), 1);
    assert_string_equal(got.job, "dead-job");
    assert_string_equal(got.entry_id, it.entry_id);
    /* the live agent's job stays with it, however long it has been idle */
    memset(&got, 0, sizeof(got));
    assert_int_equal(queue_reclaim(t->b, "agent-new", 0, &got, &err), 0);
    /* the entry now belongs to agent-new */
    {
        redisContext *c = redis_fixture_raw(&fx);
        redisReply *r = redisCommand(c, "XPENDING ty:queue:training agents - + 10 agent-new");
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 1);
        freeReplyObject(r);
        redisFree(c);
    }
    assert_int_equal(queue_ack(t->b, got.entry_id[0] ? got.entry_id : it.entry_id, &err), 0);
    assert_int_equal(queue_depth(t->a, &err), 1);
    json_decref(cap);
}

static void test_reclaim_many_pending(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item it;
    json_t *cap = json_object();
    assert_int_equal(queue_init(t->a, &err), 0);
    assert_int_equal(queue_heartbeat(t->a, "busy", cap, 30, &err), 0);
    /* more pending entries of a live agent than one XPENDING page, then a dead agent's */
    for (int i = 0; i < 230; i++) {
        char name[32];
        snprintf(name, sizeof(name), "busy-%d", i);
        create_job(t->a, name);
        assert_int_equal(queue_first(t->a, "busy", &it, &err), 1);
    }
    create_job(t->a, "orphan");
    assert_int_equal(queue_first(t->a, "gone", &it, &err), 1);
    assert_int_equal(queue_reclaim(t->b, "rescuer", 0, &it, &err), 1);
    assert_string_equal(it.job, "orphan");
    assert_int_equal(queue_reclaim(t->b, "rescuer", 0, &it, &err), 0);
    assert_int_equal(queue_depth(t->a, &err), 231);
    json_decref(cap);
}

static void test_heartbeat_ttl(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item it;
    json_t *cap = json_pack("{s:i, s:i}", "cpus", 4, "gpus", 0);
    json_t *agents;
    assert_int_equal(queue_init(t->a, &err), 0);
    assert_int_equal(queue_heartbeat(t->a, "agent-short", cap, 1, &err), 0);
    assert_int_equal(queue_heartbeat(t->a, "agent-long", cap, 60, &err), 0);
    assert_int_equal(queue_heartbeat(t->a, "agent-x", NULL, 60, &err), 0);
    assert_int_equal(queue_heartbeat(t->a, "agent-x", cap, 0, &err), -TY_EINVAL);
    agents = queue_agents(t->a, &err);
    assert_int_equal(json_array_size(agents), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(agents, 0), "id")),
                        "agent-long");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(agents, 0), "cpus")), 4);
    json_decref(agents);
    create_job(t->a, "j");
    assert_int_equal(queue_first(t->a, "agent-short", &it, &err), 1);
    assert_int_equal(queue_reclaim(t->b, "agent-long", 0, &it, &err), 0);
    sleep_ms(1600);
    agents = queue_agents(t->a, &err);
    assert_int_equal(json_array_size(agents), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(agents, 0), "id")),
                        "agent-long");
    json_decref(agents);
    /* its heartbeat expired: the job can move */
    assert_int_equal(queue_reclaim(t->b, "agent-long", 0, &it, &err), 1);
    assert_string_equal(it.job, "j");
    json_decref(cap);
}

/* An agent takes an entry past older ones it does not fit (agent/ledger.h); the older ones
   stay waiting, in order, and an entry is taken once. */
static void test_take_by_choice(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item w[8];
    char last[64];
    size_t n = 0;
    assert_int_equal(queue_init(t->a, &err), 0);
    create_job(t->a, "big");
    create_job(t->a, "small");
    create_job(t->a, "other");
    assert_int_equal(queue_waiting(t->a, 8, NULL, w, &n, last, sizeof(last), &err), 0);
    assert_int_equal(n, 3);
    assert_string_equal(w[0].job, "big");
    assert_string_equal(w[1].job, "small");
    assert_string_equal(last, w[2].entry_id);
    assert_int_equal(queue_take(t->a, "agent-a", &w[1], NULL, &err), 1);
    /* the second taker loses, on either connection */
    assert_int_equal(queue_take(t->b, "agent-b", &w[1], NULL, &err), 0);
    assert_int_equal(queue_take(t->a, "agent-a", &w[1], NULL, &err), 0);
    assert_int_equal(queue_waiting(t->b, 8, NULL, w, &n, NULL, 0, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(w[0].job, "big");
    assert_string_equal(w[1].job, "other");
    assert_int_equal(queue_waiting(t->b, 1, NULL, w, &n, NULL, 0, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(w[0].job, "big");
    /* gone (acknowledged by whoever): nobody takes it */
    assert_int_equal(queue_ack(t->a, w[0].entry_id, &err), 0);
    assert_int_equal(queue_take(t->b, "agent-b", &w[0], NULL, &err), 0);
    {
        struct queue_item bad = {.entry_id = "not-an-id", .job = "x"};
        assert_int_equal(queue_take(t->b, "agent-b", &bad, NULL, &err) < 0, 1);
    }
    assert_int_equal(queue_waiting(t->b, 0, NULL, w, &n, NULL, 0, &err), -TY_EINVAL);
    /* the pending list says who holds what */
    {
        redisContext *c = redis_fixture_raw(&fx);
        redisReply *r = redisCommand(c, "XPENDING ty:queue:training agents - + 10 agent-a");
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        assert_int_equal(r->elements, 1);
        freeReplyObject(r);
        redisFree(c);
    }
}

/* A waiting agent wakes when an entry arrives, and at once when one arrived before it waited. */
static void test_wait_new_wakes(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item w[2];
    char last[64];
    size_t n;
    double t0;
    assert_int_equal(queue_init(t->a, &err), 0);
    assert_int_equal(queue_waiting(t->a, 2, NULL, w, &n, last, sizeof(last), &err), 0);
    assert_string_equal(last, "0-0");
    create_job(t->b, "late");
    t0 = mono_ms();
    assert_int_equal(queue_wait_new(t->a, last, 5000, &err), 1);
    assert_true(mono_ms() - t0 < 1000);
    assert_int_equal(queue_waiting(t->a, 2, NULL, w, &n, last, sizeof(last), &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(queue_wait_new(t->a, last, 100, &err), 0);
    assert_int_equal(queue_wait_new(t->a, "", 100, &err), -TY_EINVAL);
}

/* The order of fair share (lua/queue.lua): the principal whose running jobs hold the least
   dominant share first, then the oldest; a job's holding counts from its take to its end. */
static void expect_order(struct store *s, const struct queue_res *total, const char *want)
{
    struct queue_item w[8];
    char got[128] = "";
    size_t n = 0;
    struct ty_err err;
    assert_int_equal(queue_waiting(s, 8, total, w, &n, NULL, 0, &err), 0);
    for (size_t i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", w[i].job);
    assert_string_equal(got, want);
}

static struct queue_item take_job(struct store *s, const char *job, const struct queue_res *held)
{
    struct queue_item w[8];
    size_t n = 0;
    struct ty_err err;
    assert_int_equal(queue_waiting(s, 8, NULL, w, &n, NULL, 0, &err), 0);
    for (size_t i = 0; i < n; i++)
        if (strcmp(w[i].job, job) == 0) {
            assert_int_equal(queue_take(s, "agent-a", &w[i], held, &err), 1);
            return w[i];
        }
    fail_msg("%s is not waiting", job);
    return w[0];
}

static void test_fair_share_order(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    const struct queue_res total = {8, 64, 512LL << 30};
    const struct queue_res four_gpus = {4, 4, 8LL << 30}, cpus16 = {0, 16, 8LL << 30};
    const struct queue_res no_gpus = {0, 64, 512LL << 30};
    const char *alice = "arn:aws:iam::123456789012:user/alice";
    const char *bob = "arn:aws:sts::123456789012:assumed-role/Studio/console/d-1/bob";
    struct queue_item it;
    struct store_transition done = {.expect = "InProgress",
                                    .status = "Completed",
                                    .secondary = "Completed",
                                    .message = "done",
                                    .now = 1e9};
    json_t *d;
    redisContext *c;
    redisReply *r;

    assert_int_equal(queue_init(t->a, &err), 0);
    create_job_by(t->a, "a1", alice);
    create_job_by(t->a, "a2", alice);
    create_job_by(t->a, "a3", alice);
    create_job_by(t->a, "b1", bob);
    create_job_by(t->a, "b2", bob);
    create_job_by(t->a, "c1", "arn:aws:iam::123456789012:user/carol");
    create_job(t->a, "old"); /* from before fair share: its own principal, "" */
    expect_order(t->a, &total, "a1 a2 a3 b1 b2 c1 old"); /* nobody holds anything: by age */
    it = take_job(t->a, "a1", &four_gpus);
    assert_string_equal(it.principal, alice);
    /* alice holds half the GPUs: everyone else's first */
    expect_order(t->a, &total, "b1 b2 c1 old a2 a3");
    expect_order(t->a, NULL, "a2 a3 b1 b2 c1 old"); /* no totals: by age alone */
    /* bob holds a quarter of the vCPUs, less than alice's half of the GPUs */
    take_job(t->a, "b1", &cpus16);
    expect_order(t->a, &total, "c1 old b2 a2 a3");
    /* a resource no agent has does not count: without GPUs alice holds 4 of 64 vCPUs */
    expect_order(t->a, &no_gpus, "c1 old a2 a3 b2");
    /* a1 ends: alice holds nothing, as carol and "" do, but she had the last turn of them */
    d = store_job_transition(t->a, "a1", &done, &err);
    assert_non_null(d);
    json_decref(d);
    expect_order(t->a, &total, "c1 old a2 a3 b2");
    take_job(t->a, "c1", &(struct queue_res){0, 0, 0}); /* holds nothing, had a turn */
    expect_order(t->a, &total, "old a2 a3 b2");
    take_job(t->a, "old", &(struct queue_res){0, 0, 0});
    expect_order(t->a, &total, "a2 a3 b2"); /* alice holds nothing, bob a quarter */
    c = redis_fixture_raw(&fx);
    r = redisCommand(c, "HGET ty:share:held b1");
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "0 16 8589934592 arn:aws:sts::123456789012:assumed-role/Studio/"
                                "console/d-1/bob");
    freeReplyObject(r);
    r = redisCommand(c, "HEXISTS ty:share:held a1");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    assert_int_equal(store_job_delete(t->a, "b1", NULL, &err), 0);
    r = redisCommand(c, "HEXISTS ty:share:held b1");
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
    redisFree(c);
}

static void test_restart_lost_group(void **state)
{
    struct two *t = *state;
    struct ty_err err;
    struct queue_item it;
    assert_int_equal(queue_init(t->a, &err), 0);
    assert_int_equal(redis_fixture_restart(&fx), 0);
    /* the group is gone with the data; reclaim sees nothing, create + claim recreate it */
    assert_int_equal(queue_reclaim(t->a, "agent-1", 0, &it, &err), 0);
    create_job(t->b, "after-restart");
    assert_int_equal(queue_first(t->a, "agent-1", &it, &err), 1);
    assert_string_equal(it.job, "after-restart");
    assert_int_equal(queue_ack(t->a, it.entry_id, &err), 0);
    assert_int_equal(queue_depth(t->b, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_claim_ack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_consumers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_own_pending_after_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reclaim_dead_not_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reclaim_many_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heartbeat_ttl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_take_by_choice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_new_wakes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fair_share_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_lost_group, setup, teardown),
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
