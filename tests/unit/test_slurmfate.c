/*
 * test_slurmfate.c - what a Slurm job's state means for its training job (slurmfate.h), on jobs
 * and nodes as slurmrestd 22.05.8 answered them (tests/unit/data/slurm), and Slurm's host lists
 * (slurmrest_hostlist).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "slurmfate.h"

static json_t *recorded(const char *name)
{
    char path[1024];
    json_t *a;

    snprintf(path, sizeof(path), "%s/%s.json", TY_SLURM_DATA, name);
    a = json_load_file(path, 0, NULL);
    assert_non_null(a);
    return a;
}

/* The first job of a recorded GET /job answer. */
static void recorded_job(const char *name, struct slurmrest_job *j)
{
    json_t *a = recorded(name);
    struct ty_err err;

    assert_int_equal(slurmrest_job_parse(json_array_get(json_object_get(a, "jobs"), 0), j, &err),
                     0);
    json_decref(a);
}

static struct slurmfate_ctx ctx(int hosts)
{
    struct slurmfate_ctx c = {0};

    c.slurm_id = 42;
    c.instance_type = "ml.p3.2xlarge";
    c.partition = "debug";
    c.hosts = hosts;
    c.lost_host = -1;
    return c;
}

static void test_hostlist(void **state)
{
    char names[8][SLURMREST_NODE_MAX];
    (void)state;

    assert_int_equal(slurmrest_hostlist("n[1-2]", names, 8), 2);
    assert_string_equal(names[0], "n1");
    assert_string_equal(names[1], "n2");
    assert_int_equal(slurmrest_hostlist("gpu[08-10,3],login,x[1]y", names, 8), 6);
    assert_string_equal(names[0], "gpu08");
    assert_string_equal(names[2], "gpu10");
    assert_string_equal(names[3], "gpu3");
    assert_string_equal(names[4], "login");
    assert_string_equal(names[5], "x1y");
    assert_int_equal(slurmrest_hostlist("", names, 8), 0);
    assert_int_equal(slurmrest_hostlist(NULL, names, 8), 0);
    static const char *const bad[] = {
        "n[1-", "n[2-1]", "n[a]", "n[1]x[2]", "n1,", ",n1",   "n1,,n2",
        "n 1",  "n[1-9]", "n]",   "n[1-2-3]", "n[]", "n[1,]", "n[1234567890]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (slurmrest_hostlist(bad[i], names, 8) != -1)
            fail_msg("'%s' was taken", bad[i]);
}

static void test_pending(void **state)
{
    struct slurmrest_job j;
    struct slurmfate_ctx c = ctx(2);
    struct slurmfate f;
    (void)state;

    recorded_job("job_pending_resources", &j);
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_WAIT);
    assert_int_equal(f.cancel, 0);
    assert_string_equal(f.msg, "Waiting for 2 free nodes of partition 'debug' for ml.p3.2xlarge "
                               "(Slurm job 42: Resources)");

    snprintf(j.reason, sizeof(j.reason), "%s", "Priority");
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_WAIT);
    assert_non_null(strstr(f.msg, "higher priority"));

    snprintf(j.reason, sizeof(j.reason), "%s", "ReqNodeNotAvail");
    snprintf(j.description, sizeof(j.description), "%s", "UnavailableNodes:n2");
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_WAIT);
    assert_string_equal(f.msg, "Waiting in Slurm, partition 'debug' (job 42: ReqNodeNotAvail, "
                               "UnavailableNodes:n2)");

    snprintf(j.reason, sizeof(j.reason), "%s", "JobHeldAdmin");
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_WAIT);
    assert_non_null(strstr(f.msg, "once released"));
}

static void test_never_starts(void **state)
{
    struct slurmrest_job j;
    struct slurmfate_ctx c = ctx(3);
    struct slurmfate f;
    (void)state;

    recorded_job("job_pending_partition_limit", &j);
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_int_equal(f.cancel, 1);
    assert_string_equal(f.msg, "ClientError: Slurm cannot place 3 x ml.p3.2xlarge in partition "
                               "'debug': the job asks more nodes than the partition has or lets "
                               "one job use (PartitionNodeLimit). Slurm job 42 was cancelled");
}

static void test_running(void **state)
{
    struct slurmrest_job j;
    struct slurmfate_ctx c = ctx(2);
    struct slurmfate f;
    (void)state;

    recorded_job("job_running_2_nodes", &j);
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_RUN);
    assert_int_equal(f.cancel, 0);
    assert_string_equal(f.msg, "");

    /* a launcher went silent (or /nodes shows its node lost) before Slurm's SlurmdTimeout */
    c.lost_node = "n2";
    c.lost_host = 1;
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_int_equal(f.cancel, 1);
    assert_string_equal(f.msg, "InternalServerError: Slurm node n2 (algo-2) failed (job 42); "
                               "trainyard cancelled the job: the training script is not run "
                               "again");

    /* ... but the launchers had all ended: their reports say how */
    c.launchers_done = 1;
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_RUN);
}

static void test_node_fail(void **state)
{
    struct slurmrest_job j;
    struct slurmfate_ctx c = ctx(2);
    struct slurmfate f;
    json_t *nodes = recorded("nodes_one_down");
    char node[64];
    int host;
    (void)state;

    recorded_job("job_node_fail", &j);
    c.seen_running = 1;
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_int_equal(f.cancel, 0);
    assert_string_equal(f.msg, "InternalServerError: Slurm a node of n[1-2] failed (job 42: "
                               "NODE_FAIL); the training script is not run again");

    assert_int_equal(
        slurmfate_lost_node(&j, json_object_get(nodes, "nodes"), node, sizeof(node), &host), 1);
    assert_string_equal(node, "n2");
    assert_int_equal(host, 1);
    c.lost_node = node;
    c.lost_host = host;
    slurmfate_decide(&j, &c, &f);
    assert_string_equal(f.msg, "InternalServerError: Slurm node n2 (algo-2) failed (job 42: "
                               "NODE_FAIL); the training script is not run again");

    /* a stop does not hide a node failure; finished launchers do */
    c.stop_sent = 1;
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    c.launchers_done = 1;
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_REPORTS);
    json_decref(nodes);

    /* none of the job's nodes is lost in the healthy answer */
    nodes = recorded("nodes");
    assert_int_equal(
        slurmfate_lost_node(&j, json_object_get(nodes, "nodes"), node, sizeof(node), &host), 0);
    assert_int_equal(host, -1);
    json_decref(nodes);
}

/* The addresses of a running job's nodes, in its node list's order; none before it has nodes,
   nor for a node GET /nodes does not show. */
static void test_node_addrs(void **state)
{
    char addrs[4][SLURMFATE_ADDR_MAX];
    struct slurmrest_job j;
    json_t *nodes = recorded("nodes");
    (void)state;

    recorded_job("job_running_2_nodes", &j);
    assert_int_equal(slurmfate_node_addrs(&j, json_object_get(nodes, "nodes"), addrs, 4), 2);
    assert_string_equal(addrs[0], "127.0.0.1");
    assert_string_equal(addrs[1], "127.0.0.1");
    assert_int_equal(slurmfate_node_addrs(&j, json_object_get(nodes, "nodes"), addrs, 1), -1);
    json_object_set_new(json_array_get(json_object_get(nodes, "nodes"), 1), "address",
                        json_string(""));
    assert_int_equal(slurmfate_node_addrs(&j, json_object_get(nodes, "nodes"), addrs, 4), -1);
    recorded_job("job_pending_resources", &j);
    assert_int_equal(slurmfate_node_addrs(&j, json_object_get(nodes, "nodes"), addrs, 4), -1);
    json_decref(nodes);
}

static void test_requeued(void **state)
{
    struct slurmrest_job j;
    struct slurmfate_ctx c = ctx(2);
    struct slurmfate f;
    (void)state;

    recorded_job("job_requeued", &j);
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_int_equal(f.cancel, 1);
    assert_string_equal(f.msg, "InternalServerError: Slurm requeued job 42 (PENDING, BeginTime) "
                               "after a node failed; trainyard cancelled it: the training script "
                               "is not run again");

    /* pending again after it ran, even without a restart count */
    recorded_job("job_pending_resources", &j);
    c.seen_running = 1;
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_int_equal(f.cancel, 1);
}

static void test_ended(void **state)
{
    struct slurmrest_job j;
    struct slurmfate_ctx c = ctx(1);
    struct slurmfate f;
    (void)state;

    recorded_job("job_failed_exit3", &j);
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_int_equal(f.cancel, 0);
    assert_string_equal(f.msg, "InternalServerError: Slurm job 42 ended FAILED (exit status 3, "
                               "NonZeroExitCode) before its launchers reported their end");
    c.launchers_done = 1;
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_REPORTS);

    recorded_job("job_cancelled", &j);
    c.launchers_done = 0;
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_non_null(strstr(f.msg, "cancelled outside trainyard"));
    c.stop_sent = 1; /* trainyard's own cancel after a stop */
    slurmfate_decide(&j, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_REPORTS);

    c.stop_sent = 0;
    snprintf(j.state, sizeof(j.state), "%s", "TIMEOUT");
    slurmfate_decide(&j, &c, &f);
    assert_non_null(strstr(f.msg, "at its time limit before trainyard's MaxRuntimeInSeconds"));
    snprintf(j.state, sizeof(j.state), "%s", "PREEMPTED");
    slurmfate_decide(&j, &c, &f);
    assert_non_null(strstr(f.msg, "preempted job 42; the training script is not run again"));
}

static void test_purged(void **state)
{
    struct slurmfate_ctx c = ctx(1);
    struct slurmfate f;
    (void)state;

    slurmfate_decide(NULL, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_FAIL);
    assert_string_equal(f.msg, "InternalServerError: Slurm no longer knows job 42, and its "
                               "launchers did not report their end");
    c.launchers_done = 1;
    slurmfate_decide(NULL, &c, &f);
    assert_int_equal(f.kind, SLURMFATE_REPORTS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostlist),     cmocka_unit_test(test_pending),
        cmocka_unit_test(test_never_starts), cmocka_unit_test(test_running),
        cmocka_unit_test(test_node_fail),    cmocka_unit_test(test_node_addrs),
        cmocka_unit_test(test_requeued),     cmocka_unit_test(test_ended),
        cmocka_unit_test(test_purged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
