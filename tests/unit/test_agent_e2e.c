/*
 * test_agent_e2e.c - the agent end to end: job documents in a private redis-server, real
 * containers on the engine at $TY_DOCKER_HOST (default unix:///run/trainyard-podman.sock,
 * started by tests/engine.sh), the runtime image imported from its tarball when missing.
 * Covers: a job that completes (status path, logs in its stream, FinalMetricDataList, staged
 * config and channel data, model.tar.gz on disk, times), a failure with /opt/ml/output/failure,
 * a failure by exit code, a missing image, Stop, MaxRuntime, a Stop before the start, and a job
 * profiled by typrof with a profiler rule.
 * Exits 77 when redis-server or the engine is absent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "docker.h"
#include "queue.h"
#include "queue_first.h"
#include "redis_fixture.h"
#include "stage.h"
#include "store.h"
#include "store_iam.h"

#ifndef TY_RUNTIME_TAR
#define TY_RUNTIME_TAR ""
#endif
#ifndef TY_VERSION
#define TY_VERSION "0.0.0"
#endif

#define IMAGE   "trainyard/runtime:" TY_VERSION
#define BUCKET  "e2e-bucket"
#define TIMEOUT 120.0

static struct redis_fixture fx;
static char tmpdir[256], s3dir[320], datadir[320], stagedir[320];
static const char *docker_host;
static struct store *st;
static struct agent *ag;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* new: a Describe document as CreateTrainingJob writes it. script runs under sh -c. */
static json_t *make_job(const char *name, const char *image, const char *script, int max_runtime)
{
    char arn[256];
    json_error_t je;
    json_t *doc;
    double t = now_s();

    snprintf(arn, sizeof(arn), "arn:aws:sagemaker:us-east-1:000000000000:training-job/%s", name);
    doc = json_pack_ex(
        &je, 0,
        "{s:s, s:s, s:{s:s, s:s, s:[s,s,s], s:[{s:s, s:s}]}, s:{s:s, s:s},"
        " s:{s:s, s:i, s:i}, s:{s:i}, s:{s:s, s:s}, s:{s:s},"
        " s:[{s:s, s:{s:{s:s, s:s, s:s}}}], s:[{s:s, s:s}],"
        " s:s, s:s, s:[{s:s, s:f, s:s}], s:f, s:f, s:b, s:s}",
        "TrainingJobName", name, "TrainingJobArn", arn, "AlgorithmSpecification", "TrainingImage",
        image, "TrainingInputMode", "File", "ContainerEntrypoint", "sh", "-c", script,
        "MetricDefinitions", "Name", "train:loss", "Regex", "loss=([0-9.]+)", "HyperParameters",
        "lr", "0.1", "epochs", "3", "ResourceConfig", "InstanceType", "ml.m5.large",
        "InstanceCount", 1, "VolumeSizeInGB", 10, "StoppingCondition", "MaxRuntimeInSeconds",
        max_runtime, "OutputDataConfig", "S3OutputPath", "s3://" BUCKET "/out/", "KmsKeyId", "",
        "Environment", "MY_VAR", "from-env", "InputDataConfig", "ChannelName", "train",
        "DataSource", "S3DataSource", "S3Uri", "s3://" BUCKET "/data/train", "S3DataType",
        "S3Prefix", "S3DistributionType", "FullyReplicated", "MetricDefinitions", "Name",
        "train:loss", "Regex", "loss=([0-9.]+)", "TrainingJobStatus", "InProgress",
        "SecondaryStatus", "Starting", "SecondaryStatusTransitions", "Status", "Starting",
        "StartTime", t, "StatusMessage", "Starting the training job", "CreationTime", t,
        "LastModifiedTime", t, "EnableNetworkIsolation", 1, "RoleArn",
        "arn:aws:iam::000000000000:role/trainyard");
    if (!doc)
        fprintf(stderr, "json_pack: %s\n", je.text);
    assert_non_null(doc);
    return doc;
}

static void create_job(const char *name, const char *image, const char *script, int max_runtime)
{
    struct ty_err err;
    json_t *doc = make_job(name, image, script, max_runtime);
    int rc = store_job_create(st, name, doc, now_s(), &err);
    if (rc)
        fprintf(stderr, "store_job_create: %s\n", err.msg);
    assert_int_equal(rc, 0);
    json_decref(doc);
}

/* new: the job document once its status is one of want (comma list), or fails the test. */
static json_t *wait_status(const char *name, const char *want, double timeout)
{
    double end = now_s() + timeout;
    struct ty_err err;

    while (now_s() < end) {
        json_t *doc = store_job_get(st, name, &err);
        const char *s = json_string_value(json_object_get(doc, "TrainingJobStatus"));
        const char *sec = json_string_value(json_object_get(doc, "SecondaryStatus"));
        if (s && strstr(want, s) && (strcmp(want, "Training") != 0))
            return doc;
        if (sec && strcmp(want, "Training") == 0 && strcmp(sec, "Training") == 0)
            return doc;
        json_decref(doc);
        usleep(200 * 1000);
    }
    {
        json_t *doc = store_job_get(st, name, &err);
        char *txt = doc ? json_dumps(doc, JSON_INDENT(1)) : NULL;
        fprintf(stderr, "job %s never reached %s: %s\n", name, want, txt ? txt : err.msg);
        free(txt);
        json_decref(doc);
    }
    fail();
    return NULL;
}

/* Concatenation of every log message of the job's streams (new: caller frees). */
static char *job_logs(const char *name)
{
    struct ty_err err;
    char prefix[160];
    json_t *streams, *s;
    size_t i, j;
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);

    snprintf(prefix, sizeof(prefix), "%s/", name);
    streams = store_log_streams(st, "/aws/sagemaker/TrainingJobs", prefix, 0, 0, &err);
    assert_non_null(streams);
    json_array_foreach(streams, i, s)
    {
        const char *sn = json_string_value(json_object_get(s, "logStreamName"));
        json_t *evs, *e;
        char want[160];
        snprintf(want, sizeof(want), "%s/algo-1-", name);
        assert_non_null(sn);
        assert_true(strncmp(sn, want, strlen(want)) == 0);
        evs = store_log_range(st, "/aws/sagemaker/TrainingJobs", sn, "-", "+", 0, 10000, &err);
        assert_non_null(evs);
        json_array_foreach(evs, j, e)
        {
            const char *m = json_string_value(json_object_get(e, "message"));
            size_t ml = m ? strlen(m) : 0;
            assert_true(json_integer_value(json_object_get(e, "timestamp")) > 1600000000000LL);
            if (len + ml + 2 < cap) {
                memcpy(out + len, m, ml);
                len += ml;
                out[len++] = '\n';
            }
        }
        json_decref(evs);
    }
    json_decref(streams);
    return out;
}

static const char *last_transition(json_t *doc)
{
    json_t *tr = json_object_get(doc, "SecondaryStatusTransitions");
    json_t *last = json_array_get(tr, json_array_size(tr) - 1);
    assert_non_null(json_string_value(json_object_get(last, "StatusMessage")));
    return json_string_value(json_object_get(last, "Status"));
}

/* 1 when the tar.gz at path holds file name with content want. */
static int targz_has(const char *path, const char *name, const char *want)
{
    struct archive *ar = archive_read_new();
    struct archive_entry *e;
    int found = 0;

    archive_read_support_filter_gzip(ar);
    archive_read_support_format_tar(ar);
    if (archive_read_open_filename(ar, path, 16384) != ARCHIVE_OK) {
        archive_read_free(ar);
        return 0;
    }
    while (archive_read_next_header(ar, &e) == ARCHIVE_OK) {
        char buf[256] = {0};
        if (strcmp(archive_entry_pathname(e), name) != 0)
            continue;
        archive_read_data(ar, buf, sizeof(buf) - 1);
        found = strcmp(buf, want) == 0;
    }
    archive_read_free(ar);
    return found;
}

static void test_completes(void **state)
{
    json_t *doc, *m, *tr;
    char path[512], *logs;
    const char *want[] = {"Starting", "Downloading", "Training", "Uploading", "Completed"};
    struct stat sb;
    (void)state;

    doc = wait_status("e2e-ok", "Completed,Failed,Stopped", TIMEOUT);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Completed");
    assert_string_equal(json_string_value(json_object_get(doc, "SecondaryStatus")), "Completed");
    tr = json_object_get(doc, "SecondaryStatusTransitions");
    assert_int_equal(json_array_size(tr), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(tr, i), "Status")),
                            want[i]);
    assert_string_equal(last_transition(doc), "Completed");
    m = json_object_get(doc, "FinalMetricDataList");
    assert_int_equal(json_array_size(m), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "MetricName")),
                        "train:loss");
    assert_true(json_number_value(json_object_get(json_array_get(m, 0), "Value")) == 0.25);
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "ModelArtifacts"),
                                                          "S3ModelArtifacts")),
                        "s3://" BUCKET "/out/e2e-ok/output/model.tar.gz");
    assert_true(json_integer_value(json_object_get(doc, "TrainingTimeInSeconds")) >= 1);
    assert_true(json_integer_value(json_object_get(doc, "BillableTimeInSeconds")) >= 1);
    assert_true(json_number_value(json_object_get(doc, "TrainingStartTime")) > 0);
    assert_true(json_number_value(json_object_get(doc, "TrainingEndTime")) >=
                json_number_value(json_object_get(doc, "TrainingStartTime")));
    json_decref(doc);

    snprintf(path, sizeof(path), "%s/" BUCKET "/out/e2e-ok/output/model.tar.gz", s3dir);
    assert_true(targz_has(path, "m.txt", "hello\n"));
    snprintf(path, sizeof(path), "%s/" BUCKET "/out/e2e-ok/output/output.tar.gz", s3dir);
    assert_true(targz_has(path, "o.txt", "out\n"));
    /* its staging folder, <stagedir>/<HMAC of the name> (stage.h), is removed right after the
       final transition; the staging dir itself stays, 0700 */
    {
        unsigned char key[STAGE_KEY_LEN];
        struct ty_err kerr;
        assert_int_equal(stage_key_load(datadir, key, &kerr), 0);
        assert_int_equal(stage_job_dir(stagedir, key, "e2e-ok", path, sizeof(path)), 0);
    }
    for (int i = 0; i < 50 && stat(path, &sb) == 0; i++)
        usleep(100 * 1000);
    assert_int_equal(stat(path, &sb), -1);
    assert_int_equal(stat(stagedir, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);

    logs = job_logs("e2e-ok");
    assert_non_null(strstr(logs, "loss=0.5\n"));
    assert_non_null(strstr(logs, "loss=0.25\n"));
    assert_non_null(strstr(logs, "hp={\"epochs\":\"3\",\"lr\":\"0.1\"}"));
    assert_non_null(strstr(logs, "host=algo-1 env=from-env lr=0.1 channels=[\"train\"]"));
    assert_non_null(strstr(logs, "data=a,b"));
    assert_non_null(strstr(logs, "\"current_host\":\"algo-1\""));
    assert_non_null(strstr(logs, "\"TrainingInputMode\":\"File\""));
    assert_non_null(strstr(logs, "to stderr"));
    free(logs);
}

/* ProfilerConfig and a ProfilerRuleConfiguration: the command runs under typrof, whose system
   metrics are uploaded under profiler-output/, and the rule ends in a terminal status. */
static void test_profiler(void **state)
{
    json_t *doc, *rs, *e;
    char cmd[700], line[1024] = "", status[32];
    FILE *f;
    (void)state;

    doc = wait_status("e2e-prof", "Completed,Failed,Stopped", TIMEOUT);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Completed");
    rs = json_object_get(doc, "ProfilerRuleEvaluationStatuses");
    assert_int_equal(json_array_size(rs), 1);
    e = json_array_get(rs, 0);
    assert_string_equal(json_string_value(json_object_get(e, "RuleConfigurationName")), "LowGPU");
    assert_non_null(json_string_value(json_object_get(e, "RuleEvaluationStatus")));
    snprintf(status, sizeof(status), "%s",
             json_string_value(json_object_get(e, "RuleEvaluationStatus")));
    assert_true(strcmp(status, "IssuesFound") == 0 || strcmp(status, "NoIssuesFound") == 0 ||
                strcmp(status, "Error") == 0);
    assert_true(json_number_value(json_object_get(e, "LastModifiedTime")) > 0);
    json_decref(doc);

    /* system/incremental/<hour>/<epoch>.algo-1.json: JSON lines */
    snprintf(cmd, sizeof(cmd),
             "cat $(find %s/" BUCKET "/out/e2e-prof/profiler-output/system/incremental -type f "
             "-name '*.json') 2>/dev/null | head -n 1",
             s3dir);
    f = popen(cmd, "r");
    assert_non_null(f);
    if (!fgets(line, sizeof(line), f))
        line[0] = '\0';
    pclose(f);
    assert_true(line[0] == '{');
    assert_non_null(strstr(line, "\"Name\""));
    snprintf(cmd, sizeof(cmd),
             "%s/" BUCKET "/out/e2e-prof/profiler-output/rule-output/LowGPU/result.json", s3dir);
    doc = json_load_file(cmd, 0, NULL);
    assert_non_null(doc);
    /* the file says typrof's status; NoData ("not evaluated") is NoIssuesFound on the wire */
    if (strcmp(json_string_value(json_object_get(doc, "RuleEvaluationStatus")), "NoData") == 0)
        assert_string_equal(status, "NoIssuesFound");
    else
        assert_string_equal(json_string_value(json_object_get(doc, "RuleEvaluationStatus")),
                            status);
    json_decref(doc);
    /* the per-job dashboard at ProfilerReport's place, and the merged trace */
    snprintf(cmd, sizeof(cmd),
             "grep -q 'id=\"sec-timeline\"' %s/" BUCKET "/out/e2e-prof/rule-output/ProfilerReport/"
             "profiler-output/profiler-report.html",
             s3dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof(cmd), "%s/" BUCKET "/out/e2e-prof/profiler-output/timeline.trace.json",
             s3dir);
    doc = json_load_file(cmd, 0, NULL);
    assert_non_null(doc);
    assert_true(json_array_size(json_object_get(doc, "traceEvents")) > 0);
    json_decref(doc);
}

static void test_fails_with_reason(void **state)
{
    json_t *doc;
    const char *r;
    (void)state;

    doc = wait_status("e2e-fail", "Completed,Failed,Stopped", TIMEOUT);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Failed");
    assert_string_equal(json_string_value(json_object_get(doc, "SecondaryStatus")), "Failed");
    assert_string_equal(json_string_value(json_object_get(doc, "FailureReason")),
                        "ValueError: bad learning rate");
    assert_string_equal(last_transition(doc), "Failed");
    json_decref(doc);

    doc = wait_status("e2e-exit", "Completed,Failed,Stopped", TIMEOUT);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Failed");
    r = json_string_value(json_object_get(doc, "FailureReason"));
    assert_non_null(r);
    assert_non_null(strstr(r, "AlgorithmError"));
    assert_non_null(strstr(r, "exit code 4"));
    json_decref(doc);

    doc = wait_status("e2e-noimage", "Completed,Failed,Stopped", TIMEOUT);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Failed");
    r = json_string_value(json_object_get(doc, "FailureReason"));
    assert_non_null(r);
    assert_non_null(strstr(r, "ClientError: image 'trainyard/no-such-image:1' not found"));
    json_decref(doc);
}

static void test_stop(void **state)
{
    struct store_transition t = {.expect = "InProgress",
                                 .status = "Stopping",
                                 .secondary = "Stopping",
                                 .message = "Stopping the training job"};
    struct ty_err err;
    json_t *doc;
    double t0;
    char *logs;
    (void)state;

    doc = wait_status("e2e-stop", "Training", TIMEOUT);
    json_decref(doc);
    /* FinalMetricDataList is refreshed while the job trains, not only at its end */
    for (double end = now_s() + 15;; usleep(250 * 1000)) {
        json_t *m;
        doc = store_job_get(st, "e2e-stop", &err);
        m = json_object_get(doc, "FinalMetricDataList");
        if (json_array_size(m) == 1) {
            assert_true(json_number_value(json_object_get(json_array_get(m, 0), "Value")) == 7.5);
            assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")),
                                "InProgress");
            json_decref(doc);
            break;
        }
        json_decref(doc);
        assert_true(now_s() < end);
    }
    t.now = now_s();
    doc = store_job_transition(st, "e2e-stop", &t, &err);
    assert_non_null(doc);
    json_decref(doc);
    t0 = now_s();
    doc = wait_status("e2e-stop", "Completed,Failed,Stopped", 30);
    /* busybox sh as PID 1 ignores SIGTERM: grace (2 s) then SIGKILL. */
    assert_true(now_s() - t0 < 15);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Stopped");
    assert_string_equal(json_string_value(json_object_get(doc, "SecondaryStatus")), "Stopped");
    assert_non_null(json_object_get(doc, "ModelArtifacts"));
    json_decref(doc);
    logs = job_logs("e2e-stop");
    assert_non_null(strstr(logs, "sleeping"));
    free(logs);

    doc = wait_status("e2e-early", "Completed,Failed,Stopped", TIMEOUT);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Stopped");
    json_decref(doc);
}

static void test_maxruntime(void **state)
{
    json_t *doc;
    (void)state;

    doc = wait_status("e2e-maxrt", "Completed,Failed,Stopped", TIMEOUT);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Stopped");
    assert_string_equal(json_string_value(json_object_get(doc, "SecondaryStatus")),
                        "MaxRuntimeExceeded");
    assert_string_equal(last_transition(doc), "MaxRuntimeExceeded");
    assert_true(json_integer_value(json_object_get(doc, "TrainingTimeInSeconds")) < 20);
    json_decref(doc);
}

static void test_status_and_no_leftovers(void **state)
{
    struct docker *d;
    struct ty_err err;
    json_t *st_, *list;
    (void)state;

    st_ = agent_status(ag);
    assert_non_null(st_);
    assert_string_equal(json_string_value(json_object_get(st_, "state")), "running");
    assert_int_equal(json_integer_value(json_object_get(st_, "slots")), 4);
    json_decref(st_);
    /* Every container of these jobs is removed once they are terminal (give the last a moment).
       The agent's spare sandbox stays (a taken one is renamed for its job, and counts). */
    d = docker_open(docker_host, &err);
    assert_non_null(d);
    for (int i = 0; i < 50; i++) {
        list = docker_list(d, "trainyard.agent=e2e-agent", &err);
        assert_non_null(list);
        for (size_t k = json_array_size(list); k-- > 0;) {
            json_t *c = json_array_get(list, k);
            const char *name = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
            if (json_object_get(json_object_get(c, "Labels"), "trainyard.spare") && name &&
                strstr(name, "-spare-e2e-agent"))
                json_array_remove(list, k);
        }
        if (json_array_size(list) == 0) {
            json_decref(list);
            break;
        }
        json_decref(list);
        usleep(200 * 1000);
        assert_true(i < 49);
    }
    docker_close(d);
}

static char leftover_id[72];

/* A job claimed by an agent that died mid-run, whose container exited while no agent watched it,
   is reclaimed: its container is taken over (its logs and its model collected, the script not
   run again), then removed. */
static void test_reclaim(void **state)
{
    struct docker *d;
    struct docker_state ds;
    struct ty_err err;
    json_t *doc, *tr, *e;
    size_t i;
    int restarted = 0;
    char *logs;
    (void)state;

    doc = wait_status("e2e-reclaim", "Completed,Failed,Stopped", TIMEOUT);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Completed");
    assert_non_null(json_object_get(doc, "ModelArtifacts"));
    tr = json_object_get(doc, "SecondaryStatusTransitions");
    json_array_foreach(tr, i, e)
    {
        restarted |= strcmp(json_string_value(json_object_get(e, "Status")), "Restarting") == 0;
    }
    assert_false(restarted);
    json_decref(doc);
    logs = job_logs("e2e-reclaim");
    assert_non_null(strstr(logs, "attached"));
    assert_null(strstr(strstr(logs, "attached") + 1, "attached")); /* once */
    free(logs);
    d = docker_open(docker_host, &err);
    assert_non_null(d);
    assert_int_equal(docker_inspect(d, leftover_id, &ds, &err), -TY_ENOTFOUND);
    docker_close(d);
}

static struct agent_config cfg;

/* agent_stop leaves a running job's container and queue entry; another agent reclaims it once
   the first one's heartbeat expired and takes the same container over; a Stop then ends it. */
static void test_stop_agent_then_reclaim(void **state)
{
    struct store_transition t = {.expect = "InProgress",
                                 .status = "Stopping",
                                 .secondary = "Stopping",
                                 .message = "Stopping the training job"};
    struct docker *d;
    struct docker_state ds;
    struct ty_err err;
    json_t *doc, *list, *tr, *e;
    char first_id[128] = "";
    size_t i;
    int restarted = 0, reattached = 0;
    (void)state;

    create_job("e2e-abandon", IMAGE, "echo sleeping; sleep 300", 600);
    doc = wait_status("e2e-abandon", "Training", TIMEOUT);
    json_decref(doc);
    d = docker_open(docker_host, &err);
    assert_non_null(d);
    for (int k = 0; k < 50 && !first_id[0]; k++) {
        list = docker_list(d, "trainyard.job=e2e-abandon", &err);
        if (json_array_size(list) == 1)
            snprintf(first_id, sizeof(first_id), "%s",
                     json_string_value(json_object_get(json_array_get(list, 0), "Id")));
        json_decref(list);
        usleep(100 * 1000);
    }
    assert_true(first_id[0] != '\0');
    agent_stop(ag);
    ag = NULL;
    /* left running, still InProgress */
    assert_int_equal(docker_inspect(d, first_id, &ds, &err), 0);
    assert_int_equal(ds.running, 1);
    doc = store_job_get(st, "e2e-abandon", &err);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "InProgress");
    json_decref(doc);

    cfg.id = "e2e-agent2";
    ag = agent_start(&cfg, &err);
    assert_non_null(ag);
    /* reclaimed: the same container, still running, is supervised by the new agent */
    for (double end = now_s() + 60; !reattached && now_s() < end;) {
        json_t *stj = agent_status(ag), *jobs = json_object_get(stj, "jobs");
        json_array_foreach(jobs, i, e)
        {
            reattached |= strcmp(json_string_value(e), "e2e-abandon") == 0;
        }
        json_decref(stj);
        usleep(200 * 1000);
    }
    assert_true(reattached);
    sleep(2);
    assert_int_equal(docker_inspect(d, first_id, &ds, &err), 0);
    assert_int_equal(ds.running, 1);
    doc = store_job_get(st, "e2e-abandon", &err);
    tr = json_object_get(doc, "SecondaryStatusTransitions");
    json_array_foreach(tr, i, e)
    {
        restarted |= strcmp(json_string_value(json_object_get(e, "Status")), "Restarting") == 0;
    }
    json_decref(doc);
    assert_false(restarted);
    t.now = now_s();
    doc = store_job_transition(st, "e2e-abandon", &t, &err);
    assert_non_null(doc);
    json_decref(doc);
    doc = wait_status("e2e-abandon", "Completed,Failed,Stopped", 30);
    assert_string_equal(json_string_value(json_object_get(doc, "TrainingJobStatus")), "Stopped");
    json_decref(doc);
    assert_int_equal(docker_inspect(d, first_id, &ds, &err), -TY_ENOTFOUND);
    docker_close(d);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

int main(void)
{
    static const char ok_script[] =
        "echo loss=0.5; echo to stderr >&2; "
        "echo hp=$(cat /opt/ml/input/config/hyperparameters.json); "
        "echo host=$SM_CURRENT_HOST env=$MY_VAR lr=$SM_HP_LR channels=$SM_CHANNELS; "
        "echo data=$(cat /opt/ml/input/data/train/a.csv),$(cat "
        "/opt/ml/input/data/train/sub/b.csv); "
        "cat /opt/ml/input/config/resourceconfig.json; echo; "
        "cat /opt/ml/input/config/inputdataconfig.json; echo; "
        "echo hello > /opt/ml/model/m.txt; echo out > /opt/ml/output/data/o.txt; "
        "sleep 1; echo loss=0.25";
    struct docker *d;
    struct ty_err err;
    struct store_transition t = {.expect = "InProgress",
                                 .status = "Stopping",
                                 .secondary = "Stopping",
                                 .message = "Stopping the training job"};
    char path[512];
    json_t *doc;
    int rc;

    docker_host = getenv("TY_DOCKER_HOST");
    if (!docker_host || !*docker_host)
        docker_host = "unix:///run/trainyard-podman.sock";
    d = docker_open(docker_host, &err);
    if (!d || docker_ping(d, &err) != 0) {
        fprintf(stderr, "skipped: no container engine at %s: %s\n", docker_host, err.msg);
        docker_close(d);
        return 77;
    }
    if (docker_image_exists(d, IMAGE, &err) != 1 && access(TY_RUNTIME_TAR, R_OK) != 0) {
        fprintf(stderr, "skipped: no image %s and no tarball '%s'\n", IMAGE, TY_RUNTIME_TAR);
        docker_close(d);
        return 77;
    }
    docker_close(d);
    rc = redis_fixture_start(&fx);
    if (rc == 77) {
        fprintf(stderr, "skipped: redis-server not installed\n");
        return 77;
    }
    if (rc != 0)
        return 1;

    snprintf(tmpdir, sizeof(tmpdir), "/tmp/ty-agent-e2e-XXXXXX");
    if (!mkdtemp(tmpdir))
        goto setup_failed;
    snprintf(s3dir, sizeof(s3dir), "%s/s3", tmpdir);
    snprintf(datadir, sizeof(datadir), "%s/data", tmpdir);
    snprintf(stagedir, sizeof(stagedir), "%s/staging", tmpdir);
    snprintf(path, sizeof(path), "mkdir -p %s/" BUCKET "/data/train/sub", s3dir);
    if (system(path) != 0)
        goto setup_failed;
    snprintf(path, sizeof(path), "%s/" BUCKET "/data/train/a.csv", s3dir);
    write_file(path, "a");
    snprintf(path, sizeof(path), "%s/" BUCKET "/data/train/sub/b.csv", s3dir);
    write_file(path, "b");

    st = store_open(fx.url_unix, &err);
    if (!st) {
        fprintf(stderr, "store_open: %s\n", err.msg);
        goto setup_failed;
    }
    /* the jobs' role: the agent authorises every object against it (access.h) */
    if (store_iam_bootstrap_role(st, "000000000000", now_s(), &err) != 0) {
        fprintf(stderr, "store_iam_bootstrap_role: %s\n", err.msg);
        goto setup_failed;
    }
    /* Claimed by an agent that then "dies" (it never heartbeats) while training. */
    {
        struct queue_item item;
        struct store_transition tt = {
            .expect = "InProgress", .secondary = "Training", .message = "Training in progress."};
        doc = make_job("e2e-reclaim", IMAGE, "echo again; echo r > /opt/ml/model/r.txt", 600);
        if (store_job_create(st, "e2e-reclaim", doc, now_s(), &err) != 0)
            goto setup_failed;
        json_decref(doc);
        if (queue_first(st, "dead-agent", &item, &err) != 1 || strcmp(item.job, "e2e-reclaim") != 0)
            goto setup_failed;
        tt.now = now_s();
        json_decref(store_job_transition(st, "e2e-reclaim", &tt, &err));
    }
    /* Queued before the agent starts, so that the Stop lands before the claim. */
    doc = make_job("e2e-early", IMAGE, "echo never; sleep 100", 0);
    if (store_job_create(st, "e2e-early", doc, now_s(), &err) != 0)
        goto setup_failed;
    json_decref(doc);
    t.now = now_s();
    json_decref(store_job_transition(st, "e2e-early", &t, &err));

    cfg.id = "e2e-agent";
    cfg.redis_url = fx.url_unix;
    cfg.docker_host = docker_host;
    cfg.data_dir = datadir;
    cfg.staging_dir = stagedir;
    cfg.s3_dir = s3dir;
    cfg.runtime_tar = TY_RUNTIME_TAR;
    cfg.runtime_image = IMAGE;
    cfg.endpoint_url = "http://127.0.0.1:1";
    cfg.region = "us-east-1";
    cfg.slots = 4;
    /* the jobs here run at once on a CI machine of 2 CPUs: vCPUs and memory promised 16 times
       over (ledger.h; test_ledger and test_ledger.py check the ledger itself) */
    cfg.overcommit = 16;
    cfg.stop_grace_s = 2;
    cfg.heartbeat_ttl_s = 3;
    ag = agent_start(&cfg, &err);
    if (!ag) {
        fprintf(stderr, "agent_start: %s\n", err.msg);
        goto setup_failed;
    }
    {
        /* The dead agent's container, in the job's staging folder; it ends before anyone
           reclaims the job (3 heartbeat TTLs). */
        static const char *const run_cmd[] = {
            "sh", "-c", "echo attached; sleep 1; echo r > /opt/ml/model/r.txt", NULL};
        struct docker_create c = {
            .image = IMAGE, .name = "trainyard-e2e-reclaim-algo-1", .cmd = run_cmd};
        json_t *labels = json_pack("{s:s, s:s, s:s}", "trainyard.job", "e2e-reclaim",
                                   "trainyard.agent", "dead-agent", "trainyard.host", "algo-1");
        unsigned char key[STAGE_KEY_LEN];
        char jdir[400], bind[480], cmdl[1000];
        const char *binds[2] = {bind, NULL};
        if (stage_key_load(datadir, key, &err) != 0 ||
            stage_job_dir(stagedir, key, "e2e-reclaim", jdir, sizeof(jdir)) != 0)
            goto setup_failed;
        snprintf(cmdl, sizeof(cmdl), "mkdir -p %s/algo-1/model %s/algo-1/output/data", jdir, jdir);
        if (system(cmdl) != 0)
            goto setup_failed;
        snprintf(bind, sizeof(bind), "%s/algo-1:/opt/ml", jdir);
        c.binds = binds;
        c.labels = labels;
        d = docker_open(docker_host, &err);
        /* an engine under load may fail one start (runc: "write child: broken pipe") */
        for (int attempt = 0; attempt < 3; attempt++) {
            docker_remove(d, c.name, 1, &err);
            if (docker_create(d, &c, leftover_id, sizeof(leftover_id), &err) == 0 &&
                docker_start(d, leftover_id, &err) == 0)
                break;
            leftover_id[0] = '\0';
            sleep(1);
        }
        if (!leftover_id[0]) {
            fprintf(stderr, "leftover container: %s\n", err.msg);
            goto setup_failed;
        }
        docker_close(d);
        json_decref(labels);
    }
    {
        /* Jobs the tests below wait for; they run concurrently on the agent's 4 slots. */
        struct CMUnitTest tests[] = {
            cmocka_unit_test(test_completes),
            cmocka_unit_test(test_fails_with_reason),
            cmocka_unit_test(test_profiler),
            cmocka_unit_test(test_stop),
            cmocka_unit_test(test_maxruntime),
            cmocka_unit_test(test_reclaim),
            cmocka_unit_test(test_status_and_no_leftovers),
            cmocka_unit_test(test_stop_agent_then_reclaim),
        };
        create_job("e2e-ok", IMAGE, ok_script, 600);
        create_job("e2e-stop", IMAGE, "echo sleeping loss=7.5; sleep 300", 600);
        create_job("e2e-maxrt", IMAGE, "echo sleeping; sleep 300", 2);
        create_job("e2e-fail", IMAGE,
                   "echo 'ValueError: bad learning rate' > /opt/ml/output/failure; exit 3", 600);
        create_job("e2e-exit", IMAGE, "echo bye; exit 4", 600);
        create_job("e2e-noimage", "trainyard/no-such-image:1", "true", 600);
        doc = make_job("e2e-prof", IMAGE, "sleep 2; echo done", 600);
        json_object_set_new(doc, "ProfilerConfig",
                            json_pack("{s:i}", "ProfilingIntervalInMilliseconds", 200));
        json_object_set_new(doc, "ProfilerRuleConfigurations",
                            json_pack("[{s:s, s:s, s:{s:s}}]", "RuleConfigurationName", "LowGPU",
                                      "RuleEvaluatorImage", "x", "RuleParameters", "rule_to_invoke",
                                      "LowGPUUtilization"));
        if (store_job_create(st, "e2e-prof", doc, now_s(), &err) != 0)
            goto setup_failed;
        json_decref(doc);
        rc = cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (0) {
setup_failed:
        /* stop what runs (agent threads, redis-server) so that ctest is not left waiting on
           their descriptors until its timeout */
        rc = 1;
    }
    if (ag)
        agent_stop(ag);
    if (st)
        store_close(st);
    redis_fixture_stop(&fx);
    snprintf(path, sizeof(path), "rm -rf %s", tmpdir);
    if (system(path) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    return rc;
}
