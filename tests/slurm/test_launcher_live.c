/*
 * test_launcher_live.c - trainyard-launch (control-plane/agent/launch/) on a real Slurm cluster
 * (tests/slurm/cluster.sh, the ctest fixture "slurm") and a real container engine (Podman's
 * Docker API, tests/engine.sh): the Slurm job is the executor's own submission (slurmjob.h),
 * started through slurmrestd, and its launchers report to the executor's real
 * listener (launchsrv.h). The test holds the executor's part: it registers the attempt, serves
 * the assignment and reads the reports. Cases: one host's lines (stdout, stderr), exit status
 * and failure file; two hosts, each its own algo-N; a stop through the answers (SIGTERM inside,
 * the host ends stopped); an attempt the executor ended (410: the launcher stops its container);
 * a launcher killed outright (the cluster's Epilog, trainyard-launch, removes what it left);
 * a node set down under a 2-node job (NODE_FAIL, what it means, both launchers stop); the
 * executor gone for good (the launcher stops after --executor-timeout).
 * Each case checks that nothing of the job is left on the engine or on disk.
 * Usage: test_launcher_live DIR/cluster.env LAUNCHER RUNTIME_TAR DOCKER_HOST
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "docker.h"
#include "launchsrv.h"
#include "slurmfate.h"
#include "slurmjob.h"
#include "slurmrest.h"

#include "cluster_env.h"

#define IMAGE "localhost/trainyard-launch-test:1"
#define DEPL  "0123456789abcdef0123456789abcdef"

static struct cluster_env ce;
static char launcher[1024], runtime_tar[1024], docker_host[1024], staging[1024];
static char executor_timeout[16]; /* the launchers' --executor-timeout, "" = theirs */
static struct slurmrest *sr;
static struct launchsrv *ls;
static struct docker *dk;

/* What the listener was told, per job (one job at a time here). */
static struct {
    pthread_mutex_t mu;
    char job[64];
    const char *script; /* the container's /bin/sh -c */
    int hosts;
    char lines[8192];         /* "<host>|<0/1>|<text>\n" */
    int started[4], ended[4]; /* per host */
    struct launchwire_report end[4];
} seen = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int on_report(void *ud, const struct launchwire_report *r)
{
    size_t i;
    json_t *l;
    (void)ud;

    pthread_mutex_lock(&seen.mu);
    json_array_foreach(r->lines, i, l)
    {
        size_t have = strlen(seen.lines);
        snprintf(seen.lines + have, sizeof(seen.lines) - have, "%d|%d|%s\n", r->host,
                 (int)json_integer_value(json_array_get(l, 2)),
                 json_string_value(json_array_get(l, 1)));
    }
    if (r->started > 0)
        seen.started[r->host] = 1;
    if (r->phase == LAUNCHWIRE_ENDED) {
        seen.ended[r->host] = 1;
        seen.end[r->host] = *r;
        seen.end[r->host].doc = NULL;
        seen.end[r->host].lines = NULL;
    }
    pthread_mutex_unlock(&seen.mu);
    return 0;
}

static json_t *on_assign(void *ud, const char *job, int attempt, int host)
{
    char arn[200];
    (void)ud;

    snprintf(arn, sizeof(arn), "arn:aws:sagemaker:us-east-1:000000000000:training-job/%s", job);
    return json_pack("{s:s, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:i, s:{s:s, s:s, s:s, s:{s:s, "
                     "s:s, s:[s, s, s]},"
                     " s:{s:s, s:i, s:i}, s:{s:s}, s:{s:i}}}",
                     "job", job, "attempt", attempt, "host", host, "hosts", seen.hosts, "endpoint",
                     "", "creds_token", "", "region", "us-east-1", "deployment", DEPL,
                     "runtime_image", IMAGE, "stop_grace", 10, "doc", "TrainingJobName", job,
                     "TrainingJobArn", arn, "RoleArn", "arn:aws:iam::000000000000:role/R",
                     "AlgorithmSpecification", "TrainingImage", IMAGE, "TrainingInputMode", "File",
                     "ContainerEntrypoint", "/bin/sh", "-c", seen.script, "ResourceConfig",
                     "InstanceType", "ml.m5.large", "InstanceCount", seen.hosts, "VolumeSizeInGB",
                     1, "OutputDataConfig", "S3OutputPath", "s3://b/out", "StoppingCondition",
                     "MaxRuntimeInSeconds", 3600);
}

/* Registers job's attempt 1 and submits its Slurm job as the executor does (slurmjob.h);
   returns the Slurm job id. */
static long start_job(const char *job, int hosts, const char *script, const char *token)
{
    struct slurmmap_entry place = {"debug", 0, "", 1};
    struct slurmjob_in in = {0};
    struct slurmjob sj;
    struct ty_err err;
    char url[64];
    long id = 0;
    int warn = 0;

    pthread_mutex_lock(&seen.mu);
    memset(seen.started, 0, sizeof(seen.started));
    memset(seen.ended, 0, sizeof(seen.ended));
    memset(seen.end, 0, sizeof(seen.end));
    seen.lines[0] = '\0';
    snprintf(seen.job, sizeof(seen.job), "%s", job);
    seen.script = script;
    seen.hosts = hosts;
    pthread_mutex_unlock(&seen.mu);
    assert_int_equal(launchsrv_add(ls, token, job, 1, hosts, NULL), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", launchsrv_port(ls));
    in.deployment = DEPL;
    in.job = job;
    in.attempt = 1;
    in.hosts = hosts;
    in.max_runtime_s = 600;
    in.stop_grace_s = 10;
    in.place = &place;
    in.launcher = launcher;
    in.launch_url = url;
    in.token = token;
    in.node_docker_host = docker_host;
    in.node_staging_dir = staging;
    in.workdir = ce.jobs_dir;
    assert_int_equal(slurmjob_build(&in, &sj, &err), 0);
    if (executor_timeout[0])
        json_object_set_new(sj.env, "TRAINYARD_LAUNCH_EXECUTOR_TIMEOUT",
                            json_string(executor_timeout));
    assert_int_equal(slurmrest_submit_job(sr, &sj.sub, &id, &warn, &err), 0);
    assert_int_equal(warn, 0);
    slurmjob_free(&sj);
    return id;
}

/* Waits until every host of the job reported its end (and Slurm ended the job). */
static void wait_ended(long id, int hosts, int timeout_s, struct slurmrest_job *j)
{
    struct ty_err err;

    for (int i = 0; i < timeout_s * 10; i++) {
        int n = 0;
        pthread_mutex_lock(&seen.mu);
        for (int h = 0; h < hosts; h++)
            n += seen.ended[h];
        pthread_mutex_unlock(&seen.mu);
        if (n == hosts && slurmrest_job(sr, id, j, &err) == 0 &&
            (strcmp(j->state, "COMPLETED") == 0 || strcmp(j->state, "FAILED") == 0 ||
             strcmp(j->state, "CANCELLED") == 0))
            return;
        nap_ms(100);
    }
    pthread_mutex_lock(&seen.mu);
    fail_msg("job %ld: not every host ended after %d s; lines:\n%s", id, timeout_s, seen.lines);
}

/* How many containers of job the engine holds (-1: it did not answer). */
static int containers_of(const char *job)
{
    struct ty_err err;
    char filter[200];
    json_t *list;
    int n;

    snprintf(filter, sizeof(filter), "trainyard.job=%s", job);
    if (!(list = docker_list(dk, filter, &err)))
        return -1;
    n = (int)json_array_size(list);
    json_decref(list);
    return n;
}

/* Nothing of job is left: no container on the engine, no staging folder. */
static void nothing_left(const char *job)
{
    json_t *list;
    struct ty_err err;
    char filter[200];
    DIR *d;
    struct dirent *e;

    snprintf(filter, sizeof(filter), "trainyard.job=%s", job);
    list = docker_list(dk, filter, &err);
    assert_non_null(list);
    if (json_array_size(list) != 0)
        fail_msg("%zu containers of %s left", json_array_size(list), job);
    json_decref(list);
    d = opendir(staging);
    while (d && (e = readdir(d)))
        if (strncmp(e->d_name, job, strlen(job)) == 0)
            fail_msg("staging folder %s/%s left", staging, e->d_name);
    if (d)
        closedir(d);
}

/* Fails, showing every line seen, unless line was seen. */
static void want_line(const char *line);

static int has_line(const char *line)
{
    int yes;
    pthread_mutex_lock(&seen.mu);
    yes = strstr(seen.lines, line) != NULL;
    pthread_mutex_unlock(&seen.mu);
    return yes;
}

static void want_line(const char *line)
{
    if (!has_line(line)) {
        pthread_mutex_lock(&seen.mu);
        fail_msg("no line '%s' among:\n%s", line, seen.lines);
    }
}

static void test_one_host(void **state)
{
    struct slurmrest_job j;
    long id;
    (void)state;

    id = start_job("lt-one", 1,
                   "echo hello from $SM_CURRENT_HOST; echo oops >&2; "
                   "echo it broke > /opt/ml/output/failure; exit 3",
                   "1111111111111111111111111111111111111111111111111111111111111111");
    wait_ended(id, 1, 90, &j);
    want_line("0|0|hello from algo-1\n");
    want_line("0|1|oops\n");
    want_line("runs on Slurm node n");
    assert_int_equal(seen.started[0], 1);
    assert_int_equal(seen.end[0].exit_code, 3);
    assert_int_equal(seen.end[0].stopped, 0);
    assert_string_equal(seen.end[0].failure, "it broke");
    assert_string_equal(seen.end[0].error, "");
    assert_string_equal(seen.end[0].model_error, ""); /* a failed job uploads no model */
    assert_string_equal(j.state, "FAILED");           /* the launcher's exit 1 */
    launchsrv_end(ls, "lt-one");
    nothing_left("lt-one");
}

static void test_two_hosts(void **state)
{
    struct slurmrest_job j;
    long id;
    (void)state;

    id = start_job("lt-two", 2, "echo I am $SM_CURRENT_HOST of $SM_HOSTS",
                   "2222222222222222222222222222222222222222222222222222222222222222");
    wait_ended(id, 2, 90, &j);
    want_line("0|0|I am algo-1 of [\"algo-1\",\"algo-2\"]\n");
    want_line("1|0|I am algo-2 of [\"algo-1\",\"algo-2\"]\n");
    assert_int_equal(seen.end[0].exit_code, 0);
    assert_int_equal(seen.end[1].exit_code, 0);
    /* algo-1 would upload the model; this job has no role on the nodes */
    assert_non_null(strstr(seen.end[0].model_error, "no role credentials"));
    assert_string_equal(seen.end[1].model_error, "");
    launchsrv_end(ls, "lt-two");
    nothing_left("lt-two");
}

static void test_stop(void **state)
{
    struct slurmrest_job j;
    long id;
    int i;
    (void)state;

    id = start_job("lt-stop", 1,
                   "trap 'echo got TERM; exit 0' TERM; echo waiting; "
                   "while :; do sleep 0.2; done",
                   "3333333333333333333333333333333333333333333333333333333333333333");
    for (i = 0; i < 900 && !has_line("0|0|waiting\n"); i++)
        nap_ms(100);
    want_line("0|0|waiting\n");
    launchsrv_set_stop(ls, "lt-stop", 10, 0);
    wait_ended(id, 1, 60, &j);
    want_line("0|0|got TERM\n");
    assert_int_equal(seen.end[0].stopped, 1);
    assert_int_equal(seen.end[0].exit_code, 0);
    assert_string_equal(j.state, "COMPLETED");
    launchsrv_end(ls, "lt-stop");
    nothing_left("lt-stop");
}

static void test_attempt_ended(void **state)
{
    struct slurmrest_job j;
    struct ty_err err;
    long id;
    int i;
    (void)state;

    id = start_job("lt-gone", 1, "echo waiting; while :; do sleep 0.2; done",
                   "4444444444444444444444444444444444444444444444444444444444444444");
    for (i = 0; i < 900 && !has_line("0|0|waiting\n"); i++)
        nap_ms(100);
    want_line("0|0|waiting\n");
    launchsrv_end(ls, "lt-gone"); /* a new attempt, or the job ended: 410 from now on */
    for (i = 0; i < 600; i++) {
        assert_int_equal(slurmrest_job(sr, id, &j, &err), 0);
        if (strcmp(j.state, "COMPLETED") == 0 || strcmp(j.state, "FAILED") == 0)
            break;
        nap_ms(100);
    }
    assert_string_equal(j.state, "FAILED"); /* stopped, not on the executor's word: exit 1 */
    nothing_left("lt-gone");
}

/* SIGKILLs every trainyard-launch process of job (found by its environment). Returns how many. */
static int kill_launchers(const char *job)
{
    char want[128], path[300], buf[16384];
    struct dirent *e;
    DIR *d = opendir("/proc");
    int n = 0;

    snprintf(want, sizeof(want), "TY_LAUNCH_JOB=%s", job);
    while (d && (e = readdir(d))) {
        FILE *f;
        size_t len;
        int match = 0;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        if (!strstr(buf, "trainyard-launch"))
            continue;
        snprintf(path, sizeof(path), "/proc/%s/environ", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        for (size_t off = 0; off < len; off += strlen(buf + off) + 1)
            match |= strcmp(buf + off, want) == 0;
        if (match && kill((pid_t)strtol(e->d_name, NULL, 10), SIGKILL) == 0)
            n++;
    }
    if (d)
        closedir(d);
    return n;
}

/* A launcher killed outright (SIGKILL: nothing of it runs after) leaves its containers and
   folder; the cluster's Epilog, trainyard-launch again, removes them when the job ends. */
static void test_killed(void **state)
{
    struct slurmrest_job j;
    struct ty_err err;
    long id;
    int i;
    (void)state;

    id = start_job("lt-kill", 1, "echo waiting; while :; do sleep 0.2; done",
                   "6666666666666666666666666666666666666666666666666666666666666666");
    for (i = 0; i < 900 && !has_line("0|0|waiting\n"); i++)
        nap_ms(100);
    want_line("0|0|waiting\n");
    assert_int_equal(containers_of("lt-kill"), 2); /* the sandbox and the training container */
    assert_int_equal(kill_launchers("lt-kill"), 1);
    for (i = 0; i < 300; i++) {
        assert_int_equal(slurmrest_job(sr, id, &j, &err), 0);
        if (strcmp(j.state, "RUNNING") != 0 && strcmp(j.state, "COMPLETING") != 0)
            break;
        nap_ms(100);
    }
    assert_string_equal(j.state, "FAILED");
    for (i = 0; i < 300 && containers_of("lt-kill") != 0; i++)
        nap_ms(100);
    nothing_left("lt-kill");
    launchsrv_end(ls, "lt-kill");
}

/* n2 set down under a running 2-node job: Slurm ends it NODE_FAIL, what that means for the
   training job names the node when GET /nodes still shows it, the executor ends the attempt,
   and both launchers stop their containers (the live node's on Slurm's SIGTERM, the other on
   the executor's 410 should its step outlive the node). */
static void test_node_down(void **state)
{
    struct slurmfate_ctx c = {0};
    struct slurmrest_job j;
    struct slurmfate f;
    struct ty_err err;
    char node[64] = "";
    json_t *nodes = NULL;
    long id;
    int i, host = -1;
    (void)state;

    id = start_job("lt-down", 2, "echo waiting; while :; do sleep 0.2; done",
                   "5555555555555555555555555555555555555555555555555555555555555555");
    for (i = 0; i < 900 && !(has_line("0|0|waiting\n") && has_line("1|0|waiting\n")); i++)
        nap_ms(100);
    want_line("1|0|waiting\n");
    setenv("SLURM_CONF", ce.slurm_conf, 1);
    assert_int_equal(system("scontrol update nodename=n2 state=down reason=trainyard-test"), 0);
    for (i = 0; i < 600; i++) {
        assert_int_equal(slurmrest_job(sr, id, &j, &err), 0);
        if (strcmp(j.state, "RUNNING") != 0 && strcmp(j.state, "COMPLETING") != 0)
            break;
        nap_ms(100);
    }
    nodes = slurmrest_nodes(sr, &err);
    assert_string_equal(j.state, "NODE_FAIL");
    assert_int_equal(j.restart_cnt, 0);
    c.slurm_id = id;
    c.instance_type = "ml.m5.large";
    c.partition = "debug";
    c.hosts = 2;
    c.seen_running = 1;
    c.lost_host = -1;
    if (slurmfate_lost_node(&j, nodes, node, sizeof(node), &host)) {
        assert_string_equal(node, "n2");
        assert_int_equal(host, 1);
        c.lost_node = node;
        c.lost_host = host;
    }
    json_decref(nodes);
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_non_null(strstr(f.msg, "NODE_FAIL); the training script is not run again"));
    if (c.lost_node)
        assert_non_null(strstr(f.msg, "node n2 (algo-2)"));
    launchsrv_end(ls, "lt-down"); /* the executor ends the attempt */
    for (i = 0; i < 600 && containers_of("lt-down") != 0; i++)
        nap_ms(100);
    nap_ms(500); /* the launchers remove their folders after their containers */
    nothing_left("lt-down");
    cluster_n2_resume("test_launcher_live", sr);
}

/* The executor goes away for good (its listener stops): after --executor-timeout without an
   answer the launcher stops its container, uploads nothing and removes everything. Last: it
   stops the test's listener. */
static void test_executor_gone(void **state)
{
    struct slurmrest_job j;
    struct ty_err err;
    long id;
    int i;
    (void)state;

    snprintf(executor_timeout, sizeof(executor_timeout), "5");
    id = start_job("lt-orphan", 1, "echo waiting; while :; do sleep 0.2; done",
                   "7777777777777777777777777777777777777777777777777777777777777777");
    for (i = 0; i < 900 && !has_line("0|0|waiting\n"); i++)
        nap_ms(100);
    want_line("0|0|waiting\n");
    launchsrv_stop(ls);
    ls = NULL;
    for (i = 0; i < 600; i++) {
        assert_int_equal(slurmrest_job(sr, id, &j, &err), 0);
        if (strcmp(j.state, "RUNNING") != 0 && strcmp(j.state, "COMPLETING") != 0)
            break;
        nap_ms(100);
    }
    assert_string_equal(j.state, "FAILED"); /* stopped, not on the executor's word */
    assert_true(i > 40);                    /* not before the 5 s had passed */
    nothing_left("lt-orphan");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_host),      cmocka_unit_test(test_two_hosts),
        cmocka_unit_test(test_stop),          cmocka_unit_test(test_attempt_ended),
        cmocka_unit_test(test_killed),        cmocka_unit_test(test_node_down),
        cmocka_unit_test(test_executor_gone),
    };
    struct slurmrest_config cfg = {0};
    struct ty_err err;
    int rc;

    if (argc != 5) {
        fprintf(stderr, "usage: test_launcher_live DIR/cluster.env LAUNCHER RUNTIME_TAR "
                        "DOCKER_HOST\n");
        return 2;
    }
    cluster_env_read("test_launcher_live", argv[1], &ce);
    snprintf(launcher, sizeof(launcher), "%s", argv[2]);
    snprintf(runtime_tar, sizeof(runtime_tar), "%s", argv[3]);
    snprintf(docker_host, sizeof(docker_host), "%s", argv[4]);
    snprintf(staging, sizeof(staging), "%.900s/launch-staging", ce.jobs_dir);
    cfg.url = ce.rest_url;
    cfg.jwt_key_path = ce.jwt_key;
    if (!(sr = slurmrest_open(&cfg, &err)) || !(dk = docker_open(docker_host, &err))) {
        fprintf(stderr, "test_launcher_live: %s\n", err.msg);
        return 1;
    }
    if (docker_image_exists(dk, IMAGE, &err) != 1) {
        static const char *const changes[] = {
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "WORKDIR /",
            NULL};
        if (docker_image_import(dk, runtime_tar, IMAGE, changes, &err) != 0) {
            fprintf(stderr, "test_launcher_live: cannot import %s: %s\n", runtime_tar, err.msg);
            return 1;
        }
    }
    if (!(ls = launchsrv_start("127.0.0.1:0", on_report, on_assign, NULL, &err))) {
        fprintf(stderr, "test_launcher_live: %s\n", err.msg);
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    launchsrv_stop(ls);
    docker_close(dk);
    slurmrest_close(sr);
    return rc;
}
