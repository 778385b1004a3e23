/*
 * test_store.c - ty_store against a private redis-server: connection and URLs, job documents
 * (create, get, every transition path, exact round-trip, list, delete), tags, principals, logs,
 * and reconnecting after a Redis restart. Exits 77 when redis-server is not installed.
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

#include "redis_fixture.h"
#include "store.h"
#include "store_jobmemo.h"

static struct redis_fixture fx;

#define T0 1700000000.123

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
    if (!s)
        fprintf(stderr, "store_open: %s\n", err.msg);
    assert_non_null(s);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    store_close(*state);
    return 0;
}

static json_t *make_doc(const char *name, const char *status, double created)
{
    char arn[256];
    json_error_t je;
    json_t *doc;
    snprintf(arn, sizeof(arn), "arn:aws:sagemaker:us-east-1:123456789012:training-job/%s", name);
    doc = json_pack_ex(
        &je, 0,
        "{s:s, s:s, s:{s:s}, s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:o, s:o, s:b}, s:s,"
        " s:[{s:s, s:{s:{s:s, s:s, s:s}}, s:s, s:s, s:s}], s:{s:s, s:s, s:s},"
        " s:{s:s, s:i, s:i, s:o}, s:{s:o, s:o}, s:{s:i, s:i}, s:f, s:f, s:[], s:[],"
        " s:b, s:b, s:b, s:[], s:[], s:{}}",
        "TrainingJobName", name, "TrainingJobArn", arn, "ModelArtifacts", "S3ModelArtifacts", "",
        "TrainingJobStatus", status, "SecondaryStatus", "Starting", "HyperParameters", "epochs",
        "3", "lr", "0.001", "AlgorithmSpecification", "TrainingImage", "trainyard/train:latest",
        "TrainingInputMode", "File", "MetricDefinitions", json_array(), "ContainerEntrypoint",
        json_array(), "EnableSageMakerMetricsTimeSeries", 0, "RoleArn",
        "arn:aws:iam::123456789012:role/SageMakerRole", "InputDataConfig", "ChannelName", "train",
        "DataSource", "S3DataSource", "S3DataType", "S3Prefix", "S3Uri", "s3://bucket/train/",
        "S3DataDistributionType", "FullyReplicated", "ContentType", "text/csv", "CompressionType",
        "None", "RecordWrapperType", "None", "OutputDataConfig", "KmsKeyId", "", "S3OutputPath",
        "s3://bucket/out/", "CompressionType", "GZIP", "ResourceConfig", "InstanceType",
        "ml.m5.large", "InstanceCount", 1, "VolumeSizeInGB", 30, "KeepAlivePeriodInSeconds",
        json_real(0.5), "VpcConfig", "SecurityGroupIds", json_array(), "Subnets", json_array(),
        "StoppingCondition", "MaxRuntimeInSeconds", 86400, "MaxWaitTimeInSeconds", 172800,
        "CreationTime", created, "LastModifiedTime", created, "SecondaryStatusTransitions",
        "FinalMetricDataList", "EnableNetworkIsolation", 0, "EnableInterContainerTrafficEncryption",
        0, "EnableManagedSpotTraining", 0, "DebugRuleConfigurations",
        "ProfilerRuleEvaluationStatuses", "Environment");
    if (!doc)
        fprintf(stderr, "json_pack: %s\n", je.text);
    assert_non_null(doc);
    return doc;
}

static void create_job(struct store *s, const char *name, const char *status, double created)
{
    struct ty_err err;
    json_t *doc = make_doc(name, status, created);
    int rc = store_job_create(s, name, doc, created, &err);
    if (rc)
        fprintf(stderr, "create %s: %s\n", name, err.msg);
    assert_int_equal(rc, 0);
    json_decref(doc);
}

static void assert_json_same(json_t *a, json_t *b)
{
    char *x = json_dumps(a, JSON_SORT_KEYS | JSON_COMPACT);
    char *y = json_dumps(b, JSON_SORT_KEYS | JSON_COMPACT);
    if (strcmp(x, y) != 0)
        fprintf(stderr, "expected %s\n     got %s\n", x, y);
    assert_string_equal(x, y);
    assert_true(json_equal(a, b));
    free(x);
    free(y);
}

/* ---- connection ---- */

static void test_open_errors(void **state)
{
    struct ty_err err;
    char url[128];
    int port = redis_fixture_free_port();
    (void)state;
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    assert_null(store_open(url, &err));
    assert_int_equal(err.code, TY_EREDIS);
    {
        char want[128];
        snprintf(want, sizeof(want), "cannot connect to redis at 127.0.0.1:%d: Connection refused",
                 port);
        assert_string_equal(err.msg, want);
    }
    assert_null(store_open("http://localhost", &err));
    assert_int_equal(err.code, TY_EREDIS);
    assert_null(store_open("redis://127.0.0.1:notaport", &err));
    assert_null(store_open("redis://127.0.0.1:6379/x", &err));
    assert_null(store_open("unix://", &err));
    assert_null(store_open("unix:///nonexistent/redis.sock", &err));
    assert_non_null(strstr(err.msg, "cannot connect to redis at /nonexistent/redis.sock"));
    assert_null(store_open("", &err));
    store_close(NULL);
}

static void test_open_urls(void **state)
{
    struct ty_err err;
    char url[512];
    struct store *s;
    redisReply *r;
    (void)state;
    freeReplyObject(raw_cmd("FLUSHALL"));
    /* TCP with a db */
    snprintf(url, sizeof(url), "%s/2", fx.url_tcp);
    s = store_open(url, &err);
    assert_non_null(s);
    assert_int_equal(store_ping(s, &err), 0);
    assert_int_equal(store_principal_put(s, "AKIDDB2", "sec", "arn:x", "u", &err), 0);
    store_close(s);
    r = raw_cmd("SELECT 2");
    freeReplyObject(r);
    {
        redisContext *c = redis_fixture_raw(&fx);
        freeReplyObject(redisCommand(c, "SELECT 2"));
        r = redisCommand(c, "EXISTS ty:principal:AKIDDB2");
        assert_int_equal(r->integer, 1);
        freeReplyObject(r);
        freeReplyObject(redisCommand(c, "SELECT 0"));
        r = redisCommand(c, "EXISTS ty:principal:AKIDDB2");
        assert_int_equal(r->integer, 0);
        freeReplyObject(r);
        redisFree(c);
    }
    /* unix socket with a db */
    snprintf(url, sizeof(url), "%s?db=3", fx.url_unix);
    s = store_open(url, &err);
    assert_non_null(s);
    assert_int_equal(store_principal_put(s, "AKIDDB3", "sec", "arn:x", "u", &err), 0);
    store_close(s);
    {
        redisContext *c = redis_fixture_raw(&fx);
        freeReplyObject(redisCommand(c, "SELECT 3"));
        r = redisCommand(c, "EXISTS ty:principal:AKIDDB3");
        assert_int_equal(r->integer, 1);
        freeReplyObject(r);
        redisFree(c);
    }
    /* password */
    {
        redisContext *c = redis_fixture_raw(&fx);
        freeReplyObject(redisCommand(c, "CONFIG SET requirepass s3cret"));
        snprintf(url, sizeof(url), "redis://:s3cret@127.0.0.1:%d/1", fx.port);
        s = store_open(url, &err);
        assert_non_null(s);
        assert_int_equal(store_ping(s, &err), 0);
        store_close(s);
        snprintf(url, sizeof(url), "redis://:wrong@127.0.0.1:%d", fx.port);
        assert_null(store_open(url, &err));
        assert_int_equal(err.code, TY_EREDIS);
        assert_non_null(strstr(err.msg, "AUTH failed"));
        assert_null(store_open(fx.url_tcp, &err));
        assert_int_equal(err.code, TY_EREDIS);
        freeReplyObject(redisCommand(c, "CONFIG SET requirepass %s", ""));
        redisFree(c);
    }
}

/* ---- jobs ---- */

static void test_job_create_duplicate(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    json_t *doc = make_doc("job-a", "InProgress", T0);
    assert_int_equal(store_job_create(s, "job-a", doc, T0, &err), 0);
    assert_int_equal(store_job_create(s, "job-a", doc, T0, &err), -TY_EINUSE);
    assert_int_equal(err.code, TY_EINUSE);
    assert_string_equal(err.msg,
                        "Training job names must be unique within an AWS account and region, and "
                        "a training job with this name already exists "
                        "(arn:aws:sagemaker:us-east-1:123456789012:training-job/job-a)");
    assert_int_equal(raw_int("XLEN %s", "ty:queue:training"), 1);
    assert_int_equal(raw_int("ZCARD %s", "ty:idx:job"), 1);
    assert_int_equal(store_job_create(s, "", doc, T0, &err), -TY_EINVAL);
    json_decref(doc);
}

static void test_job_get_roundtrip(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    json_t *doc = make_doc("job-rt", "InProgress", T0);
    json_t *got;
    /* values that Lua's cjson would damage */
    json_object_set_new(doc, "FinalMetricDataList",
                        json_pack("[{s:s, s:f, s:f}]", "MetricName", "loss", "Value",
                                  0.12345678901234567, "Timestamp", 1700000123.456));
    json_object_set_new(doc, "FailureReason", json_string("path/with/slashes \"q\" é ☃"));
    json_object_set_new(doc, "BigNumber", json_integer(9007199254740993LL));
    assert_int_equal(store_job_create(s, "job-rt", doc, T0, &err), 0);
    got = store_job_get(s, "job-rt", &err);
    assert_non_null(got);
    assert_json_same(doc, got);
    assert_true(json_is_array(json_object_get(got, "SecondaryStatusTransitions")));
    assert_true(json_is_array(json_object_get(json_object_get(got, "VpcConfig"), "Subnets")));
    assert_true(json_is_object(json_object_get(got, "Environment")));
    /* the member order is DescribeTrainingJob's */
    {
        void *it = json_object_iter(got);
        assert_string_equal(json_object_iter_key(it), "TrainingJobName");
        it = json_object_iter_next(got, it);
        assert_string_equal(json_object_iter_key(it), "TrainingJobArn");
    }
    json_decref(got);

    /* a transition leaves every untouched member exactly as it was */
    {
        struct store_transition t = {.expect = "InProgress",
                                     .secondary = "Downloading",
                                     .message = "Preparing the instances for training.",
                                     .now = T0 + 60.5};
        got = store_job_transition(s, "job-rt", &t, &err);
        assert_non_null(got);
        json_object_set_new(doc, "SecondaryStatus", json_string("Downloading"));
        json_object_set_new(doc, "LastModifiedTime", json_real(T0 + 60.5));
        json_object_set_new(doc, "SecondaryStatusTransitions",
                            json_pack("[{s:s, s:f, s:s}]", "Status", "Downloading", "StartTime",
                                      T0 + 60.5, "StatusMessage",
                                      "Preparing the instances for training."));
        assert_json_same(doc, got);
        json_decref(got);
        got = store_job_get(s, "job-rt", &err);
        assert_json_same(doc, got);
        json_decref(got);
    }
    /* whole-second timestamps through cjson come back as reals */
    {
        struct store_transition t = {.secondary = "Training", .message = "m", .now = 1700000200.0};
        json_t *tr;
        got = store_job_transition(s, "job-rt", &t, &err);
        assert_non_null(got);
        tr = json_object_get(got, "SecondaryStatusTransitions");
        assert_int_equal(json_array_size(tr), 2);
        assert_true(json_is_real(json_object_get(json_array_get(tr, 0), "EndTime")));
        assert_true(json_is_real(json_object_get(json_array_get(tr, 1), "StartTime")));
        assert_true(json_real_value(json_object_get(json_array_get(tr, 0), "EndTime")) ==
                    1700000200.0);
        assert_true(json_real_value(json_object_get(json_array_get(tr, 0), "StartTime")) ==
                    T0 + 60.5);
        json_decref(got);
    }
    json_decref(doc);
}

static void test_job_get_not_found(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    assert_null(store_job_get(s, "nope", &err));
    assert_int_equal(err.code, TY_ENOTFOUND);
    assert_string_equal(err.msg, "Requested resource not found.");
}

static json_t *transition(struct store *s, const char *name, const char *expect,
                          const char *expect2, const char *status, const char *secondary,
                          const char *msg, double now, json_t *set, struct ty_err *err)
{
    struct store_transition t = {expect, expect2, status, secondary, msg, set, now};
    return store_job_transition(s, name, &t, err);
}

static void test_job_transitions(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    json_t *d, *tr, *set;
    create_job(s, "job-t", "InProgress", T0);

    /* the first transition, Starting */
    d = transition(s, "job-t", "InProgress", NULL, NULL, "Starting", "Starting the training job.",
                   T0, NULL, &err);
    assert_non_null(d);
    /* the job was created with SecondaryStatus Starting: no transition is appended */
    assert_int_equal(json_array_size(json_object_get(d, "SecondaryStatusTransitions")), 0);
    json_decref(d);

    /* set members, null removes */
    set = json_pack("{s:f, s:n}", "TrainingStartTime", T0 + 1, "HyperParameters");
    d = transition(s, "job-t", "InProgress", "Starting", NULL, "Downloading",
                   "Preparing the instances for training.", T0 + 1, set, &err);
    json_decref(set);
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "SecondaryStatus")), "Downloading");
    assert_null(json_object_get(d, "HyperParameters"));
    assert_true(json_real_value(json_object_get(d, "TrainingStartTime")) == T0 + 1);
    assert_true(json_real_value(json_object_get(d, "LastModifiedTime")) == T0 + 1);
    tr = json_object_get(d, "SecondaryStatusTransitions");
    assert_int_equal(json_array_size(tr), 1);
    assert_null(json_object_get(json_array_get(tr, 0), "EndTime"));
    json_decref(d);

    /* expect mismatch: the message is the current status */
    d = transition(s, "job-t", "Stopping,Completed", NULL, "Stopped", NULL, NULL, T0 + 2, NULL,
                   &err);
    assert_null(d);
    assert_int_equal(err.code, TY_ECONFLICT);
    assert_string_equal(err.msg, "InProgress");
    d = transition(s, "job-t", NULL, "Training,Uploading", NULL, "Completed", "x", T0 + 2, NULL,
                   &err);
    assert_null(d);
    assert_int_equal(err.code, TY_ECONFLICT);
    assert_string_equal(err.msg, "InProgress");

    /* same secondary: no duplicate; the open transition says the new message */
    d = transition(s, "job-t", "InProgress", NULL, NULL, "Downloading", "again", T0 + 3, NULL,
                   &err);
    assert_non_null(d);
    assert_int_equal(json_array_size(json_object_get(d, "SecondaryStatusTransitions")), 1);
    tr = json_array_get(json_object_get(d, "SecondaryStatusTransitions"), 0);
    assert_string_equal(json_string_value(json_object_get(tr, "StatusMessage")), "again");
    assert_true(json_real_value(json_object_get(tr, "StartTime")) == T0 + 1);
    assert_null(json_object_get(tr, "EndTime"));
    assert_true(json_real_value(json_object_get(d, "LastModifiedTime")) == T0 + 3);
    json_decref(d);

    d = transition(s, "job-t", "InProgress", NULL, NULL, "Training",
                   "Training image download completed. Training in progress.", T0 + 10.25, NULL,
                   &err);
    assert_non_null(d);
    json_decref(d);
    d = transition(s, "job-t", "InProgress", NULL, NULL, "Uploading", "Uploading generated model",
                   T0 + 20.5, NULL, &err);
    assert_non_null(d);
    json_decref(d);
    set = json_pack("{s:{s:s}, s:i, s:f}", "ModelArtifacts", "S3ModelArtifacts",
                    "s3://bucket/out/job-t/output/model.tar.gz", "TrainingTimeInSeconds", 20,
                    "TrainingEndTime", T0 + 30.75);
    d = transition(s, "job-t", "InProgress", NULL, "Completed", "Completed",
                   "Training job completed", T0 + 30.75, set, &err);
    json_decref(set);
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "TrainingJobStatus")), "Completed");
    tr = json_object_get(d, "SecondaryStatusTransitions");
    assert_int_equal(json_array_size(tr), 4);
    {
        static const char *const want[] = {"Downloading", "Training", "Uploading", "Completed"};
        static const double start[] = {T0 + 1, T0 + 10.25, T0 + 20.5, T0 + 30.75};
        for (size_t i = 0; i < 4; i++) {
            json_t *e = json_array_get(tr, i);
            assert_string_equal(json_string_value(json_object_get(e, "Status")), want[i]);
            assert_non_null(json_string_value(json_object_get(e, "StatusMessage")));
            assert_true(json_real_value(json_object_get(e, "StartTime")) == start[i]);
            if (i < 3)
                assert_true(json_real_value(json_object_get(e, "EndTime")) == start[i + 1]);
            else
                assert_null(json_object_get(e, "EndTime"));
        }
    }
    assert_string_equal(json_string_value(json_object_get(json_object_get(d, "ModelArtifacts"),
                                                          "S3ModelArtifacts")),
                        "s3://bucket/out/job-t/output/model.tar.gz");
    json_decref(d);

    /* a terminal job refuses Stop */
    d = transition(s, "job-t", "InProgress", NULL, "Stopping", "Stopping", "stop", T0 + 40, NULL,
                   &err);
    assert_null(d);
    assert_int_equal(err.code, TY_ECONFLICT);
    assert_string_equal(err.msg, "Completed");

    /* stop path on another job */
    create_job(s, "job-stop", "InProgress", T0);
    d = transition(s, "job-stop", "InProgress", NULL, "Stopping", "Stopping", "Stopping job",
                   T0 + 5, NULL, &err);
    assert_non_null(d);
    json_decref(d);
    d = transition(s, "job-stop", "Stopping", NULL, "Stopped", "Stopped", "Stopped by request",
                   T0 + 6, NULL, &err);
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "TrainingJobStatus")), "Stopped");
    assert_int_equal(json_array_size(json_object_get(d, "SecondaryStatusTransitions")), 2);
    json_decref(d);

    /* unknown job */
    d = transition(s, "job-none", NULL, NULL, "Failed", NULL, NULL, T0, NULL, &err);
    assert_null(d);
    assert_int_equal(err.code, TY_ENOTFOUND);
}

/* The memo of answers: a hit only for the very document an answer was attached to. */
static void test_job_memo(void **state)
{
    struct store *s = *state;
    struct store_jobmemo m;
    struct ty_err err;
    json_t *doc, *want;
    char *text;
    size_t len;

    memset(&m, 0, sizeof(m));
    create_job(s, "memo-a", "InProgress", T0);
    create_job(s, "memo-b", "InProgress", T0);
    /* first read: the document, as store_job_get builds it */
    assert_int_equal(store_jobmemo_get(s, &m, "memo-a", &doc, &text, &len, &err), 0);
    assert_null(text);
    want = store_job_get(s, "memo-a", &err);
    assert_json_same(want, doc);
    json_decref(want);
    json_decref(doc);
    store_jobmemo_put(&m, "answer-a1", 9);
    /* the same document: the answer */
    assert_int_equal(store_jobmemo_get(s, &m, "memo-a", &doc, &text, &len, &err), 1);
    assert_null(doc);
    assert_string_equal(text, "answer-a1");
    assert_int_equal(len, 9);
    free(text);
    /* another job: no answer of its own, and put after a hit attaches nothing */
    store_jobmemo_put(&m, "stray", 5);
    assert_int_equal(store_jobmemo_get(s, &m, "memo-b", &doc, &text, &len, &err), 0);
    json_decref(doc);
    /* a change to the job: a miss, then the new answer replaces the old */
    json_decref(transition(s, "memo-a", NULL, NULL, NULL, "Starting", "m", T0 + 1, NULL, &err));
    assert_int_equal(store_jobmemo_get(s, &m, "memo-a", &doc, &text, &len, &err), 0);
    assert_string_equal(json_string_value(json_object_get(doc, "SecondaryStatus")), "Starting");
    json_decref(doc);
    store_jobmemo_put(&m, "answer-a2", 9);
    assert_int_equal(store_jobmemo_get(s, &m, "memo-a", &doc, &text, &len, &err), 1);
    assert_string_equal(text, "answer-a2");
    free(text);
    {
        int n = 0;
        for (int i = 0; i < STORE_JOBMEMO_N; i++)
            n += m.e[i].key != NULL;
        assert_int_equal(n, 1);
    }
    /* unknown job: the store's error; and no memo at all: always the document */
    assert_int_equal(store_jobmemo_get(s, &m, "memo-none", &doc, &text, &len, &err), -TY_ENOTFOUND);
    store_jobmemo_put(&m, "x", 1);
    assert_int_equal(store_jobmemo_get(s, NULL, "memo-a", &doc, &text, &len, &err), 0);
    assert_non_null(doc);
    json_decref(doc);
    /* more jobs than entries: the least recently used answer goes */
    for (int i = 0; i < STORE_JOBMEMO_N + 2; i++) {
        char name[32], ans[32];
        snprintf(name, sizeof(name), "memo-lru-%d", i);
        snprintf(ans, sizeof(ans), "ans-%d", i);
        create_job(s, name, "InProgress", T0);
        assert_int_equal(store_jobmemo_get(s, &m, name, &doc, &text, &len, &err), 0);
        json_decref(doc);
        store_jobmemo_put(&m, ans, strlen(ans));
    }
    assert_int_equal(store_jobmemo_get(s, &m, "memo-lru-0", &doc, &text, &len, &err), 0);
    json_decref(doc);
    assert_int_equal(store_jobmemo_get(s, &m, "memo-lru-9", &doc, &text, &len, &err), 1);
    assert_string_equal(text, "ans-9");
    free(text);
    store_jobmemo_cleanup(&m);
}

/* Calls of a command so far (INFO commandstats), to tell a read that went to Redis. */
static long long cmd_calls(const char *cmd)
{
    redisReply *r = raw_cmd("INFO commandstats");
    char key[64];
    const char *p;
    long long n = 0;
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", cmd);
    if ((p = strstr(r->str, key)))
        n = strtoll(p + strlen(key), NULL, 10);
    freeReplyObject(r);
    return n;
}

/* Reads watch-a through m until its SecondaryStatus is want (2 s at most: another process's
   write is seen once Redis has sent its invalidation). 1 when seen, 0 when never. */
static int memo_sees(struct store *s, struct store_jobmemo *m, const char *want)
{
    for (int i = 0; i < 200; i++) {
        struct ty_err err;
        json_t *doc;
        char *text;
        size_t len;
        int rc = store_jobmemo_get(s, m, "watch-a", &doc, &text, &len, &err);
        if (rc == 0) {
            int same = strcmp(json_string_value(json_object_get(doc, "SecondaryStatus")), want);
            json_decref(doc);
            if (same == 0)
                return 1;
        } else if (rc == -TY_ENOTFOUND && !want[0]) {
            return 1;
        }
        free(rc == 1 ? text : NULL);
        usleep(10000);
    }
    return 0;
}

/* Keeps "answer" for watch-a's document as read now, and checks it is then served unread. */
static void memo_keep(struct store *s, struct store_jobmemo *m)
{
    struct ty_err err;
    json_t *doc;
    char *text;
    size_t len;
    unsigned long long unread = m->unread;
    long long hget;

    assert_int_equal(store_jobmemo_get(s, m, "watch-a", &doc, &text, &len, &err), 0);
    json_decref(doc);
    store_jobmemo_put(m, "answer", 6);
    hget = cmd_calls("hgetall");
    assert_int_equal(store_jobmemo_get(s, m, "watch-a", &doc, &text, &len, &err), 1);
    assert_string_equal(text, "answer");
    free(text);
    assert_int_equal(m->unread, unread + 1);
    assert_int_equal(cmd_calls("hgetall"), hget); /* served without asking Redis */
}

/* The watch: an answer it vouches for is served without a read; a write made in this process
   (on another connection) is seen by the very next read, and every other change (another
   process's write, a flush, a lost watch connection) as soon as Redis has sent it. */
static void test_job_memo_watch(void **state)
{
    struct store *s = *state, *s2;
    struct store_jobmemo m;
    struct ty_err err;
    json_t *doc;
    char *text;
    size_t len;

    memset(&m, 0, sizeof(m));
    assert_non_null(s2 = store_open(fx.url_unix, &err));
    create_job(s, "watch-a", "InProgress", T0);
    memo_keep(s, &m);
    /* this process writes through another connection: the next read sees it, no wait */
    json_decref(transition(s2, "watch-a", NULL, NULL, NULL, "Training", "m", T0 + 1, NULL, &err));
    assert_int_equal(store_jobmemo_get(s, &m, "watch-a", &doc, &text, &len, &err), 0);
    assert_string_equal(json_string_value(json_object_get(doc, "SecondaryStatus")), "Training");
    json_decref(doc);
    /* another process writes */
    memo_keep(s, &m);
    freeReplyObject(raw_cmd("HSET ty:job:watch-a SecondaryStatus \"Uploading\""));
    assert_true(memo_sees(s, &m, "Uploading"));
    /* a flush: the job is gone, not answered from the memo */
    memo_keep(s, &m);
    freeReplyObject(raw_cmd("FLUSHALL"));
    assert_true(memo_sees(s, &m, ""));
    /* the watch's connection is killed: the change made meanwhile is seen */
    create_job(s, "watch-a", "InProgress", T0);
    memo_keep(s, &m);
    freeReplyObject(raw_cmd("CLIENT KILL TYPE pubsub"));
    freeReplyObject(raw_cmd("HSET ty:job:watch-a SecondaryStatus \"Stopping\""));
    assert_true(memo_sees(s, &m, "Stopping"));
    /* and the watch is back after its back-off */
    usleep(1100 * 1000);
    memo_keep(s, &m);
    store_jobmemo_cleanup(&m);
    store_close(s2);
}

static void test_job_delete(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    const char *arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/job-d";
    json_t *tags = json_pack("[{s:s, s:s}]", "Key", "team", "Value", "ml");
    create_job(s, "job-d", "InProgress", T0);
    assert_int_equal(store_tags_add(s, arn, tags, &err), 0);
    json_decref(tags);
    assert_int_equal(store_job_delete(s, "job-d", "Completed,Failed,Stopped", &err), -TY_ECONFLICT);
    assert_string_equal(err.msg, "InProgress");
    assert_int_equal(store_job_delete(s, "job-x", NULL, &err), -TY_ENOTFOUND);
    assert_int_equal(store_job_delete(s, "job-d", "Failed,InProgress", &err), 0);
    assert_null(store_job_get(s, "job-d", &err));
    assert_int_equal(raw_int("ZCARD %s", "ty:idx:job"), 0);
    assert_int_equal(raw_int("SCARD %s", "ty:idx:job:status:InProgress"), 0);
    assert_int_equal(raw_int("EXISTS ty:tags:%s", arn), 0);
    assert_int_equal(store_job_delete(s, "job-d", NULL, &err), -TY_ENOTFOUND);
}

/* Collects every page's names into a ','-separated string. */
static void list_all(struct store *s, struct store_job_query *q, char *out, size_t n, int *pages)
{
    struct ty_err err;
    char *tok = NULL;
    out[0] = '\0';
    *pages = 0;
    do {
        json_t *page, *d;
        size_t i;
        char *next = NULL;
        q->next_token = tok;
        page = store_job_list(s, q, &next, &err);
        if (!page)
            fprintf(stderr, "list: %s\n", err.msg);
        assert_non_null(page);
        (*pages)++;
        json_array_foreach(page, i, d)
        {
            size_t len = strlen(out);
            snprintf(out + len, n - len, "%s%s", len ? "," : "",
                     json_string_value(json_object_get(d, "TrainingJobName")));
        }
        json_decref(page);
        free(tok);
        tok = next;
    } while (tok);
    q->next_token = NULL;
}

static void test_job_list(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct store_job_query q;
    char names[4096];
    int pages;
    json_t *page;
    char *tok = NULL;
    /* a-0 .. a-9 created one second apart; b-0..b-4 Completed */
    for (int i = 0; i < 10; i++) {
        char n[32];
        snprintf(n, sizeof(n), "Alpha-%d", i);
        create_job(s, n, i % 3 == 0 ? "Completed" : "InProgress", T0 + i);
    }
    memset(&q, 0, sizeof(q));
    q.max_results = 3;
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-9,Alpha-8,Alpha-7,Alpha-6,Alpha-5,Alpha-4,Alpha-3,Alpha-2,"
                               "Alpha-1,Alpha-0");
    assert_int_equal(pages, 4);
    q.ascending = 1;
    q.max_results = 5;
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-0,Alpha-1,Alpha-2,Alpha-3,Alpha-4,Alpha-5,Alpha-6,Alpha-7,"
                               "Alpha-8,Alpha-9");
    assert_int_equal(pages, 2);

    /* filters */
    memset(&q, 0, sizeof(q));
    q.max_results = 100;
    q.status_equals = "Completed";
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-9,Alpha-6,Alpha-3,Alpha-0");
    q.status_equals = NULL;
    q.name_contains = "PHA-1";
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-1");
    q.name_contains = NULL;
    q.created_after = T0 + 2; /* strict */
    q.created_before = T0 + 5;
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-4,Alpha-3");
    q.created_after = q.created_before = 0;
    {
        struct store_transition t = {.secondary = "Training", .message = "m", .now = T0 + 100};
        json_t *d = store_job_transition(s, "Alpha-2", &t, &err);
        json_decref(d);
        t.now = T0 + 200;
        d = store_job_transition(s, "Alpha-5", &t, &err);
        json_decref(d);
    }
    q.modified_after = T0 + 100;
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-5");
    q.modified_after = 0;
    q.modified_before = T0 + 150;
    q.modified_after = T0 + 50;
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-2");
    q.modified_after = q.modified_before = 0;

    /* sorting by name and status */
    q.sort_by = "Name";
    q.ascending = 1;
    q.max_results = 4;
    create_job(s, "Beta", "Failed", T0 + 50);
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-0,Alpha-1,Alpha-2,Alpha-3,Alpha-4,Alpha-5,Alpha-6,Alpha-7,"
                               "Alpha-8,Alpha-9,Beta");
    q.sort_by = "Status";
    q.ascending = 0;
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-8,Alpha-7,Alpha-5,Alpha-4,Alpha-2,Alpha-1,Beta,Alpha-9,"
                               "Alpha-6,Alpha-3,Alpha-0");
    /* a status change moves the job between the status filters */
    {
        struct store_transition t = {.expect = "InProgress", .status = "Stopping", .now = T0 + 300};
        json_t *d = store_job_transition(s, "Alpha-8", &t, &err);
        assert_non_null(d);
        json_decref(d);
    }
    q.sort_by = NULL;
    q.status_equals = "Stopping";
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-8");
    q.status_equals = "InProgress";
    list_all(s, &q, names, sizeof(names), &pages);
    assert_string_equal(names, "Alpha-7,Alpha-5,Alpha-4,Alpha-2,Alpha-1");
    q.status_equals = NULL;

    /* jobs created between pages neither repeat nor shift the pages */
    memset(&q, 0, sizeof(q));
    q.max_results = 4;
    page = store_job_list(s, &q, &tok, &err);
    assert_int_equal(json_array_size(page), 4);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(page, 0), "TrainingJobName")), "Beta");
    json_decref(page);
    assert_non_null(tok);
    create_job(s, "Gamma-new", "InProgress", T0 + 1000);
    q.next_token = tok;
    page = store_job_list(s, &q, NULL, &err);
    assert_int_equal(json_array_size(page), 4);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(page, 0), "TrainingJobName")), "Alpha-6");
    json_decref(page);

    /* a token belongs to its query */
    q.status_equals = "Completed";
    assert_null(store_job_list(s, &q, NULL, &err));
    assert_int_equal(err.code, TY_EINVAL);
    assert_string_equal(err.msg, "Invalid pagination token");
    free(tok);
    q.status_equals = NULL;
    q.next_token = "garbage!";
    assert_null(store_job_list(s, &q, NULL, &err));
    assert_int_equal(err.code, TY_EINVAL);
    q.next_token = "dHkxCjAK"; /* base64 of a truncated token */
    assert_null(store_job_list(s, &q, NULL, &err));
    assert_int_equal(err.code, TY_EINVAL);

    /* the last page has no token; an empty store gives an empty page */
    q.next_token = NULL;
    q.max_results = 100;
    tok = (char *)"x";
    page = store_job_list(s, &q, &tok, &err);
    assert_int_equal(json_array_size(page), 12);
    assert_null(tok);
    json_decref(page);
    q.name_contains = "zzz";
    page = store_job_list(s, &q, &tok, &err);
    assert_int_equal(json_array_size(page), 0);
    assert_null(tok);
    json_decref(page);
}

#define BULK_JOBS 3000

static void test_job_list_many(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    struct store_job_query q;
    char names[256];
    int pages;
    struct timespec a, b;
    json_t *doc = make_doc("x", "InProgress", T0);
    for (int i = 0; i < BULK_JOBS; i++) {
        char n[32];
        snprintf(n, sizeof(n), "bulk-%05d", i);
        json_object_set_new(doc, "TrainingJobName", json_string(n));
        json_object_set_new(doc, "TrainingJobStatus",
                            json_string(i == 1234 ? "Failed" : "InProgress"));
        assert_int_equal(store_job_create(s, n, doc, T0 + i, &err), 0);
    }
    json_decref(doc);
    memset(&q, 0, sizeof(q));
    q.status_equals = "Failed";
    q.max_results = 10;
    clock_gettime(CLOCK_MONOTONIC, &a);
    list_all(s, &q, names, sizeof(names), &pages);
    clock_gettime(CLOCK_MONOTONIC, &b);
    assert_string_equal(names, "bulk-01234");
    fprintf(stderr, "list with a status filter over %d jobs: %.1f ms\n", BULK_JOBS,
            (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
}

/* ---- tags, principals ---- */

static void test_tags(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    const char *arn = "arn:aws:sagemaker:us-east-1:123456789012:training-job/t";
    json_t *tags = json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]", "Key", "b", "Value", "2",
                             "Key", "a", "Value", "1", "Key", "c", "Value", "");
    json_t *got, *want, *keys;
    got = store_tags_list(s, arn, &err);
    assert_int_equal(json_array_size(got), 0);
    json_decref(got);
    assert_int_equal(store_tags_add(s, arn, tags, &err), 0);
    json_decref(tags);
    tags = json_pack("[{s:s, s:s}]", "Key", "b", "Value", "two");
    assert_int_equal(store_tags_add(s, arn, tags, &err), 0);
    json_decref(tags);
    got = store_tags_list(s, arn, &err);
    want = json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]", "Key", "a", "Value", "1", "Key", "b",
                     "Value", "two", "Key", "c", "Value", "");
    assert_json_same(want, got);
    json_decref(got);
    json_decref(want);
    {
        /* one tag of many resources: past one pipeline batch, with and without the tag */
        static const char *arns[STORE_TAGS_BATCH + 3];
        for (size_t i = 0; i < STORE_TAGS_BATCH + 3; i++)
            arns[i] = i % 2 ? arn : "arn:aws:sagemaker:us-east-1:123456789012:training-job/none";
        got = store_tags_value_many(s, arns, STORE_TAGS_BATCH + 3, "b", &err);
        assert_non_null(got);
        assert_int_equal(json_array_size(got), STORE_TAGS_BATCH + 3);
        for (size_t i = 0; i < STORE_TAGS_BATCH + 3; i++) {
            if (i % 2)
                assert_string_equal(json_string_value(json_array_get(got, i)), "two");
            else
                assert_true(json_is_null(json_array_get(got, i)));
        }
        json_decref(got);
        got = store_tags_value_many(s, arns, 0, "b", &err);
        assert_int_equal(json_array_size(got), 0);
        json_decref(got);
    }
    keys = json_pack("[s, s]", "a", "zz");
    assert_int_equal(store_tags_delete(s, arn, keys, &err), 0);
    json_decref(keys);
    got = store_tags_list(s, arn, &err);
    assert_int_equal(json_array_size(got), 2);
    json_decref(got);
    assert_int_equal(store_tags_clear(s, arn, &err), 0);
    got = store_tags_list(s, arn, &err);
    assert_int_equal(json_array_size(got), 0);
    json_decref(got);
    tags = json_pack("[{s:s}]", "Value", "x");
    assert_int_equal(store_tags_add(s, arn, tags, &err), -TY_EINVAL);
    json_decref(tags);
}

static void test_principals(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    char secret[64], arn[16];
    assert_int_equal(
        store_principal_get(s, "AKIDNONE", secret, sizeof(secret), arn, sizeof(arn), &err),
        -TY_ENOTFOUND);
    assert_int_equal(store_principal_put(s, "AKID1", "wJalrXUtnFEMI/K7MDENG",
                                         "arn:aws:iam::123456789012:user/admin", "admin", &err),
                     0);
    assert_int_equal(
        store_principal_get(s, "AKID1", secret, sizeof(secret), arn, sizeof(arn), &err), 0);
    assert_string_equal(secret, "wJalrXUtnFEMI/K7MDENG");
    assert_string_equal(arn, "arn:aws:iam::12"); /* truncated to its size */
    assert_int_equal(store_principal_put(s, "AKID1", "new", "arn:a", "admin", &err), 0);
    assert_int_equal(
        store_principal_get(s, "AKID1", secret, sizeof(secret), arn, sizeof(arn), &err), 0);
    assert_string_equal(secret, "new");
    assert_string_equal(arn, "arn:a");
}

/* The deployment id is drawn once and then the same for every caller; a buffer too small for
   it is refused. */
static void test_deployment_id(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    char a[STORE_DEPLOYMENT_LEN + 1], b[64], small[8];
    assert_int_equal(store_deployment_id(s, a, sizeof(a), &err), 0);
    assert_int_equal(strlen(a), STORE_DEPLOYMENT_LEN);
    assert_int_equal(strspn(a, "0123456789abcdef"), STORE_DEPLOYMENT_LEN);
    assert_int_equal(store_deployment_id(s, b, sizeof(b), &err), 0);
    assert_string_equal(a, b);
    assert_int_not_equal(store_deployment_id(s, small, sizeof(small), &err), 0);
}

/* ---- logs ---- */

static void test_logs(void **state)
{
    struct store *s = *state;
    struct ty_err err;
    const char *g = "/aws/sagemaker/TrainingJobs";
    json_t *ev, *got, *st;
    char first_id[64], last_id[64];
    got = store_log_streams(s, g, NULL, 0, 0, &err);
    assert_int_equal(json_array_size(got), 0);
    json_decref(got);
    assert_null(store_log_range(s, g, "job/algo-1-1", "-", "+", 0, 10, &err));
    assert_int_equal(err.code, TY_ELOGNOTFOUND);

    ev = json_pack("[{s:I, s:s}, {s:I, s:s}, {s:I, s:s}]", "timestamp", (json_int_t)1000, "message",
                   "one", "timestamp", (json_int_t)2000, "message", "two", "timestamp",
                   (json_int_t)3000, "message", "three é");
    assert_int_equal(store_log_append(s, g, "job/algo-1-1700000000", ev, &err), 0);
    json_decref(ev);
    ev = json_pack("[{s:I, s:s}]", "timestamp", (json_int_t)5000, "message", "four");
    assert_int_equal(store_log_append(s, g, "job/algo-1-1700000000", ev, &err), 0);
    json_decref(ev);
    ev = json_pack("[{s:I, s:s}]", "timestamp", (json_int_t)4000, "message", "other");
    assert_int_equal(store_log_append(s, g, "job/algo-2-1700000000", ev, &err), 0);
    assert_int_equal(store_log_append(s, g, "zz-other/algo-1-1", ev, &err), 0);
    json_decref(ev);
    ev = json_pack("[{s:s}]", "message", "no ts");
    assert_int_equal(store_log_append(s, g, "job/algo-1-1700000000", ev, &err), -TY_EINVAL);
    json_decref(ev);

    /* streams by prefix and name */
    st = store_log_streams(s, g, "job/", 0, 0, &err);
    assert_int_equal(json_array_size(st), 2);
    {
        json_t *a = json_array_get(st, 0);
        assert_string_equal(json_string_value(json_object_get(a, "logStreamName")),
                            "job/algo-1-1700000000");
        assert_int_equal(json_integer_value(json_object_get(a, "firstEventTimestamp")), 1000);
        assert_int_equal(json_integer_value(json_object_get(a, "lastEventTimestamp")), 5000);
        assert_int_equal(json_integer_value(json_object_get(a, "storedBytes")),
                         (json_int_t)strlen("onetwothree é") + 4);
        assert_true(json_integer_value(json_object_get(a, "creationTime")) > 1600000000000LL);
        assert_true(json_integer_value(json_object_get(a, "lastIngestionTime")) >=
                    json_integer_value(json_object_get(a, "creationTime")));
        assert_string_equal(json_string_value(json_object_get(a, "arn")),
                            "arn:aws:logs:us-east-1:000000000000:log-group:/aws/sagemaker/"
                            "TrainingJobs:log-stream:job/algo-1-1700000000");
        assert_non_null(json_string_value(json_object_get(a, "uploadSequenceToken")));
    }
    json_decref(st);
    st = store_log_streams(s, g, NULL, 0, 1, &err);
    assert_int_equal(json_array_size(st), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(st, 0), "logStreamName")),
                        "zz-other/algo-1-1");
    json_decref(st);
    st = store_log_streams(s, g, NULL, 1, 1, &err);
    assert_string_equal(json_string_value(json_object_get(json_array_get(st, 0), "logStreamName")),
                        "job/algo-1-1700000000");
    json_decref(st);
    st = store_log_streams(s, "/no/such/group", NULL, 0, 0, &err);
    assert_int_equal(json_array_size(st), 0);
    json_decref(st);

    /* ranges */
    got = store_log_range(s, g, "job/algo-1-1700000000", "-", "+", 0, 100, &err);
    assert_int_equal(json_array_size(got), 4);
    assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "message")),
                        "one");
    assert_string_equal(json_string_value(json_object_get(json_array_get(got, 2), "message")),
                        "three é");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(got, 3), "timestamp")),
                     5000);
    assert_true(json_integer_value(json_object_get(json_array_get(got, 0), "ingestionTime")) >
                1600000000000LL);
    snprintf(first_id, sizeof(first_id), "%s",
             json_string_value(json_object_get(json_array_get(got, 0), "id")));
    snprintf(last_id, sizeof(last_id), "%s",
             json_string_value(json_object_get(json_array_get(got, 3), "id")));
    for (size_t i = 1; i < 4; i++) {
        const char *p = json_string_value(json_object_get(json_array_get(got, i - 1), "id"));
        const char *c = json_string_value(json_object_get(json_array_get(got, i), "id"));
        unsigned long long pm, ps, cm, cs;
        assert_int_equal(sscanf(p, "%llu-%llu", &pm, &ps), 2);
        assert_int_equal(sscanf(c, "%llu-%llu", &cm, &cs), 2);
        assert_true(cm > pm || (cm == pm && cs > ps));
    }
    json_decref(got);
    got = store_log_range(s, g, "job/algo-1-1700000000", "-", "+", 0, 2, &err);
    assert_int_equal(json_array_size(got), 2);
    json_decref(got);
    {
        char excl[80];
        snprintf(excl, sizeof(excl), "(%s", first_id);
        got = store_log_range(s, g, "job/algo-1-1700000000", excl, "+", 0, 2, &err);
        assert_int_equal(json_array_size(got), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "message")),
                            "two");
        json_decref(got);
        snprintf(excl, sizeof(excl), "(%s", last_id);
        got = store_log_range(s, g, "job/algo-1-1700000000", excl, "+", 0, 2, &err);
        assert_int_equal(json_array_size(got), 0);
        json_decref(got);
    }
    got = store_log_range(s, g, "job/algo-1-1700000000", "-", "+", 1, 3, &err);
    assert_int_equal(json_array_size(got), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "message")),
                        "four");
    assert_string_equal(json_string_value(json_object_get(json_array_get(got, 2), "message")),
                        "two");
    json_decref(got);
    {
        char excl[80];
        snprintf(excl, sizeof(excl), "(%s", last_id);
        got = store_log_range(s, g, "job/algo-1-1700000000", "-", excl, 1, 10, &err);
        assert_int_equal(json_array_size(got), 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "message")),
                            "three é");
        json_decref(got);
    }
    got = store_log_range(s, g, "job/algo-1-1700000000", "-", last_id, 1, 1, &err);
    assert_string_equal(json_string_value(json_object_get(json_array_get(got, 0), "message")),
                        "four");
    json_decref(got);
}

/* ---- reconnect ---- */

static void test_reconnect(void **state)
{
    struct ty_err err;
    struct store *s = *state;
    struct store *t;
    json_t *d;
    t = store_open(fx.url_tcp, &err);
    assert_non_null(t);
    create_job(s, "before", "InProgress", T0);
    assert_int_equal(redis_fixture_restart(&fx), 0);
    /* both connections broke; the next call reconnects, and the scripts are loaded again */
    assert_int_equal(store_ping(s, &err), 0);
    create_job(t, "after", "InProgress", T0);
    d = store_job_get(s, "after", &err);
    assert_non_null(d);
    json_decref(d);
    assert_null(store_job_get(t, "before", &err)); /* no persistence in the fixture */
    assert_int_equal(err.code, TY_ENOTFOUND);
    {
        struct store_transition tr = {.status = "Failed", .now = T0 + 1};
        assert_int_equal(redis_fixture_restart(&fx), 0);
        d = store_job_transition(s, "after", &tr, &err);
        assert_null(d);
        assert_int_equal(err.code, TY_ENOTFOUND);
    }
    store_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_open_urls),
        cmocka_unit_test_setup_teardown(test_job_create_duplicate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deployment_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_get_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_get_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_memo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_memo_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_transitions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_list_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tags, setup, teardown),
        cmocka_unit_test_setup_teardown(test_principals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reconnect, setup, teardown),
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
