/*
 * test_slurm_live.c - the slurmrestd client (slurmrest.h) against a real Slurm cluster on
 * loopback, started by tests/slurm/cluster.sh (the ctest fixture "slurm"): ping, nodes and
 * partitions, a gang-scheduled 2-node job with GPUs, exit codes, Slurm's refusals with their
 * numbers, a job accepted that can never start, USR1 as a graceful stop, an unknown job, the
 * jobs-changed poll (304), both kinds of token (minted, from a file) and wrong ones, and the
 * executor's instance map (slurmmap.h) checked against the cluster, and its batch script
 * (slurmscript.h) keeping a job whose node fails from running twice.
 * Usage: test_slurm_live DIR/cluster.env
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slurmmap.h"
#include "slurmrest.h"

#include "cluster_env.h"
#include "slurmrest_int.h"
#include "slurmscript.h"

static struct cluster_env ce;
static struct slurmrest *sr;

/* Polls job id until its state is one of states ("A,B"); fails after timeout_s. */
static void wait_state(long id, const char *states, int timeout_s, struct slurmrest_job *j)
{
    struct ty_err err;
    char want[128];

    for (int i = 0; i < timeout_s * 10; i++) {
        assert_int_equal(slurmrest_job(sr, id, j, &err), 0);
        snprintf(want, sizeof(want), ",%s,", states);
        {
            char have[40];
            snprintf(have, sizeof(have), ",%s,", j->state);
            if (strstr(want, have))
                return;
        }
        nap_ms(100);
    }
    fail_msg("job %ld is %s (%s), not %s after %d s", id, j->state, j->reason, states, timeout_s);
}

static long submit(const char *name, const char *script, int nodes, const char *gres, int *warn)
{
    struct slurmrest_submit sub = {0};
    struct ty_err err;
    char out[1200];
    long id = 0;
    int w = 0;

    snprintf(out, sizeof(out), "%s/%%j.out", ce.jobs_dir);
    sub.name = name;
    sub.script = script;
    sub.cwd = ce.jobs_dir;
    sub.stdout_path = out;
    sub.nodes = nodes;
    sub.tasks_per_node = 1;
    sub.gres = gres;
    sub.comment = "trainyard test";
    assert_int_equal(slurmrest_submit_job(sr, &sub, &id, &w, &err), 0);
    assert_true(id > 0);
    if (warn)
        *warn = w;
    else
        assert_int_equal(w, 0);
    return id;
}

/* The job's output so far; "" while slurmd has not made the file (it may come after RUNNING). */
static char *job_output_now(long id)
{
    char path[1200];
    static char buf[8192];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "%s/%ld.out", ce.jobs_dir, id);
    buf[0] = '\0';
    if (!(f = fopen(path, "r")))
        return buf;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The output of a job that has ended (its file must exist). */
static char *job_output(long id)
{
    char path[1200];

    snprintf(path, sizeof(path), "%s/%ld.out", ce.jobs_dir, id);
    assert_int_equal(access(path, R_OK), 0);
    return job_output_now(id);
}

static void test_ping_nodes_partitions(void **state)
{
    struct ty_err err;
    json_t *a;
    (void)state;

    assert_int_equal(slurmrest_ping(sr, &err), 0);
    a = slurmrest_nodes(sr, &err);
    assert_non_null(a);
    assert_int_equal(json_array_size(a), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "name")), "n2");
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "gres")), "gpu:2");
    json_decref(a);
    a = slurmrest_partitions(sr, &err);
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "name")), "debug");
    json_decref(a);
}

/* Both nodes at once, one task each, each with its GPU; the comment comes back. */
static void test_two_node_job(void **state)
{
    struct slurmrest_job j;
    const char *out;
    long id;
    (void)state;

    id = submit("ty-two",
                "#!/bin/sh\nsrun sh -c 'echo \"NODE $SLURM_NODEID GPU $CUDA_VISIBLE_DEVICES\"'\n",
                2, "gpu:1", NULL);
    wait_state(id, "COMPLETED,FAILED,CANCELLED", 60, &j);
    assert_string_equal(j.state, "COMPLETED");
    assert_int_equal(j.exit_code, 0);
    assert_int_equal(j.node_count, 2);
    assert_string_equal(j.nodes, "n[1-2]");
    assert_string_equal(j.name, "ty-two");
    assert_string_equal(j.comment, "trainyard test");
    assert_true(j.end_time >= j.start_time && j.start_time > 0);
    out = job_output(id);
    assert_non_null(strstr(out, "NODE 0 GPU 0"));
    assert_non_null(strstr(out, "NODE 1 GPU 0"));
}

static void test_exit_code(void **state)
{
    struct slurmrest_job j;
    long id;
    (void)state;

    id = submit("ty-exit", "#!/bin/sh\nexit 3\n", 1, NULL, NULL);
    wait_state(id, "COMPLETED,FAILED", 60, &j);
    assert_string_equal(j.state, "FAILED");
    assert_int_equal(j.exit_code, 3);
    assert_int_equal(j.exit_signal, 0);
}

static void test_refusals(void **state)
{
    struct slurmrest_submit sub = {0};
    struct slurmrest_job j;
    struct ty_err err;
    long id = 0;
    int warn = 0;
    (void)state;

    sub.script = "#!/bin/sh\ntrue\n";
    sub.cwd = ce.jobs_dir;
    sub.nodes = 1;
    sub.partition = "no-such-partition";
    assert_int_equal(slurmrest_submit_job(sr, &sub, &id, &warn, &err), -TY_EINVAL);
    assert_string_equal(err.field, "slurm:2000");
    assert_non_null(strstr(err.msg, "Invalid partition name specified"));
    sub.partition = NULL;
    sub.gres = "gpu:8"; /* a node has 2 */
    assert_int_equal(slurmrest_submit_job(sr, &sub, &id, &warn, &err), -TY_EINVAL);
    assert_string_equal(err.field, "slurm:2014");
    /* more nodes than the partition has: accepted, and it would wait for ever */
    sub.gres = NULL;
    sub.nodes = 3;
    assert_int_equal(slurmrest_submit_job(sr, &sub, &id, &warn, &err), 0);
    assert_int_equal(warn, SLURMREST_EPARTITION_NOW);
    wait_state(id, "PENDING", 10, &j);
    for (int i = 0; i < 50 && strcmp(j.reason, "PartitionNodeLimit") != 0; i++) {
        nap_ms(100); /* PartitionConfig first, then this */
        assert_int_equal(slurmrest_job(sr, id, &j, &err), 0);
    }
    assert_string_equal(j.reason, "PartitionNodeLimit");
    assert_int_equal(slurmrest_cancel(sr, id, NULL, &err), 0);
    wait_state(id, "CANCELLED", 30, &j);
    /* cancelling what has ended is not an error */
    assert_int_equal(slurmrest_cancel(sr, id, NULL, &err), 0);
}

/* USR1 reaches the batch script and kills nothing: the script stops as it chooses. */
static void test_usr1_is_a_graceful_stop(void **state)
{
    struct slurmrest_job j;
    struct ty_err err;
    long id;
    (void)state;

    id = submit("ty-usr1",
                "#!/bin/sh\ntrap 'echo got-usr1; exit 0' USR1\necho started\nsleep 100 &\nwait\n",
                1, NULL, NULL);
    wait_state(id, "RUNNING", 90, &j);
    for (int i = 0; i < 100 && !strstr(job_output_now(id), "started"); i++)
        nap_ms(100);
    assert_int_equal(slurmrest_cancel(sr, id, "USR1", &err), 0);
    wait_state(id, "COMPLETED,FAILED,CANCELLED", 30, &j);
    assert_string_equal(j.state, "COMPLETED");
    assert_non_null(strstr(job_output(id), "got-usr1"));
    assert_int_equal(slurmrest_cancel(sr, id, "BAD;SIG", &err), -TY_EINVAL);
}

static void test_unknown_job_and_jobs_since(void **state)
{
    struct slurmrest_job j;
    struct ty_err err;
    int64_t since = 0;
    json_t *jobs = NULL;
    int unchanged = 0;
    (void)state;

    /* HTTP 500 with error 2017: a job Slurm does not know, not a failing server */
    assert_int_equal(slurmrest_job(sr, 99999999, &j, &err), -TY_ENOTFOUND);
    assert_int_equal(slurmrest_jobs_since(sr, &since, &jobs, &err), 0);
    assert_non_null(jobs);
    assert_true(json_array_size(jobs) >= 4);
    assert_true(since > 0);
    json_decref(jobs);
    /* asked again with the answer's time: 304, nothing changed (a job's record may still move
       once or twice as the controller ages it) */
    for (int i = 0; i < 20 && !unchanged; i++) {
        assert_int_equal(slurmrest_jobs_since(sr, &since, &jobs, &err), 0);
        unchanged = jobs == NULL;
        json_decref(jobs);
        if (!unchanged)
            nap_ms(200);
    }
    assert_true(unchanged);
}

/* Writes token as c's token file, then pings with a fresh client reading it: its answer. */
static int ping_with_token_file(const struct slurmrest_config *c, const char *token,
                                struct ty_err *err)
{
    struct slurmrest *other;
    int fd = open(c->token_path, O_WRONLY | O_TRUNC), rc;

    assert_true(fd >= 0);
    assert_true(dprintf(fd, "%s\n", token) > 0);
    close(fd);
    other = slurmrest_open(c, err);
    assert_non_null(other);
    rc = slurmrest_ping(other, err);
    slurmrest_close(other);
    return rc;
}

static void test_tokens(void **state)
{
    struct slurmrest_config c = {0};
    struct ty_err err;
    char path[] = "/tmp/ty-slurm-token-XXXXXX", tok[SLURMREST_JWT_MAX],
         line[SLURMREST_JWT_MAX + 16];
    unsigned char key[4096];
    size_t keylen;
    FILE *f;
    int fd;
    (void)state;

    f = fopen(ce.jwt_key, "rb");
    assert_non_null(f);
    keylen = fread(key, 1, sizeof(key), f);
    fclose(f);
    /* a token file as `scontrol token` prints it */
    assert_int_equal(
        slurmrest_jwt_mint(key, keylen, "root", (int64_t)time(NULL), 300, tok, sizeof(tok)), 0);
    fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    c.url = ce.rest_url;
    c.token_path = path;
    snprintf(line, sizeof(line), "SLURM_JWT=%s", tok);
    assert_int_equal(ping_with_token_file(&c, line, &err), 0);
    /* a token signed with another key is refused (as slurmctld down would be), and said so */
    key[0] ^= 1;
    assert_int_equal(
        slurmrest_jwt_mint(key, keylen, "root", (int64_t)time(NULL), 300, tok, sizeof(tok)), 0);
    assert_int_equal(ping_with_token_file(&c, tok, &err), -TY_EENGINE);
    assert_non_null(strstr(err.msg, "refused the token of user 'root'"));
    /* one that is no JWT at all: slurmrestd passes it on, and it reads the same */
    assert_int_equal(ping_with_token_file(&c, "not.a.token", &err), -TY_EENGINE);
    assert_non_null(strstr(err.msg, "refused the token of user 'root'"));
    unlink(path);
    /* neither key nor token: refused at open */
    c.token_path = NULL;
    assert_null(slurmrest_open(&c, &err));
    assert_int_equal(err.code, TY_EINVAL);
}

/* The executor's instance map checked against this cluster's own answers. */
static void test_instance_map(void **state)
{
    char path[] = "/tmp/ty-slurm-map-XXXXXX", report[1024];
    json_t *parts, *nodes;
    struct slurmmap *m;
    struct ty_err err;
    int fd;
    (void)state;

    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_true(dprintf(fd, "{\"ml.p3.2xlarge\": {\"partition\": \"debug\"}, "
                            "\"ml.g5.xlarge\": {\"partition\": \"debug\", \"gpus\": 2}, "
                            "\"ml.p3.8xlarge\": {\"partition\": \"debug\"}, "
                            "\"ml.m5.large\": {\"partition\": \"cpu\"}}") > 0);
    close(fd);
    m = slurmmap_load(path, &err);
    unlink(path);
    assert_non_null(m);
    parts = slurmrest_partitions(sr, &err);
    nodes = slurmrest_nodes(sr, &err);
    assert_non_null(parts);
    assert_non_null(nodes);
    assert_int_equal(slurmmap_check(m, parts, nodes, report, sizeof(report)), 2);
    assert_non_null(strstr(report, "ml.p3.8xlarge: no node of partition 'debug' has 4 GPUs"));
    assert_non_null(strstr(report, "ml.m5.large: partition 'cpu' does not exist"));
    json_decref(parts);
    json_decref(nodes);
    slurmmap_free(m);
}

static int count_lines(const char *path)
{
    char line[256];
    int n = 0;
    FILE *f = fopen(path, "r");

    while (f && fgets(line, sizeof(line), f))
        n++;
    if (f)
        fclose(f);
    return n;
}

/* A node of a running job fails (set down): with slurmscript's batch script the job ends
   NODE_FAIL and is not run again. Without its requeue line, Slurm 22.05 puts it back in the queue
   (PENDING BeginTime, restart_cnt 1: tests/unit/data/slurm/job_requeued.json) and runs the
   launchers a second time. Last: it takes n2 down and back. */
static void test_no_rerun_after_a_node_failure(void **state)
{
    struct slurmscript_job sj = {"0123456789abcdef", "node-fail", 2, NULL};
    struct slurmrest_submit sub = {0};
    struct slurmrest_job j;
    struct ty_err err;
    char launcher[1200], marks[1200], name[128], out[1200];
    char *script;
    long id = 0;
    int warn = 0, fd;
    (void)state;

    snprintf(launcher, sizeof(launcher), "%s/launch.sh", ce.jobs_dir);
    snprintf(marks, sizeof(marks), "%s/launched.log", ce.jobs_dir);
    fd = open(launcher, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    assert_true(fd >= 0);
    assert_true(dprintf(fd, "#!/bin/sh\necho \"$SLURM_NODEID\" >> '%s'\nsleep 30\n", marks) > 0);
    close(fd);
    unlink(marks);
    sj.launcher = launcher;
    script = slurmscript_batch(&sj);
    assert_non_null(script);
    slurmscript_name(sj.deployment, sj.job, name, sizeof(name));
    snprintf(out, sizeof(out), "%s/%%j.out", ce.jobs_dir);
    sub.name = name;
    sub.script = script;
    sub.cwd = ce.jobs_dir;
    sub.stdout_path = out;
    sub.nodes = 2;
    sub.tasks_per_node = 1;
    sub.exclusive = 1;
    assert_int_equal(slurmrest_submit_job(sr, &sub, &id, &warn, &err), 0);
    free(script);
    wait_state(id, "RUNNING", 90, &j);
    for (int i = 0; i < 100 && count_lines(marks) < 2; i++)
        nap_ms(100);
    assert_int_equal(count_lines(marks), 2);
    setenv("SLURM_CONF", ce.slurm_conf, 1);
    assert_int_equal(system("scontrol update nodename=n2 state=down reason=trainyard-test"), 0);
    wait_state(id, "NODE_FAIL,PENDING,FAILED,CANCELLED,COMPLETED", 60, &j);
    nap_ms(2000); /* a requeue would show by now */
    assert_int_equal(slurmrest_job(sr, id, &j, &err), 0);
    assert_string_equal(j.state, "NODE_FAIL");
    assert_int_equal(j.restart_cnt, 0);
    assert_int_equal(count_lines(marks), 2); /* the launchers ran once */
    /* back in service (ReturnToService=2 may have done it already: then resume is refused) */
    cluster_n2_resume("test_slurm_live", sr);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ping_nodes_partitions),
        cmocka_unit_test(test_two_node_job),
        cmocka_unit_test(test_exit_code),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_usr1_is_a_graceful_stop),
        cmocka_unit_test(test_unknown_job_and_jobs_since),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_instance_map),
        cmocka_unit_test(test_no_rerun_after_a_node_failure),
    };
    struct slurmrest_config c = {0};
    struct ty_err err;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: test_slurm_live DIR/cluster.env\n");
        return 2;
    }
    cluster_env_read("test_slurm_live", argv[1], &ce);
    c.url = ce.rest_url;
    c.jwt_key_path = ce.jwt_key;
    if (!(sr = slurmrest_open(&c, &err))) {
        fprintf(stderr, "test_slurm_live: %s\n", err.msg);
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    slurmrest_close(sr);
    return rc;
}
