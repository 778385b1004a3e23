/*
 * test_leftover.c - which dead agents' containers a live agent removes (leftover.h), without
 * Redis or an engine: only ended jobs this deployment knows, whose warm pool is over (or was
 * reused by a job whose pool is over in turn), and only containers of agents that are gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "leftover.h"
#include "sandbox.h"

#define NOW 1000000.0

/* the jobs a test's deployment knows: {name: document} */
static json_t *docs_of(const char *job, void *ctx)
{
    return json_object_get((json_t *)ctx, job);
}

static json_t *doc(const char *status, const char *pool, double since, int keep,
                   const char *reused_by)
{
    json_t *d = json_pack("{s:s, s:{s:i}}", "TrainingJobStatus", status, "ResourceConfig",
                          "KeepAlivePeriodInSeconds", keep);
    if (pool) {
        json_t *wp = json_pack("{s:s}", "Status", pool);
        if (reused_by)
            json_object_set_new(wp, "ReusedByJob", json_string(reused_by));
        json_object_set_new(d, "WarmPoolStatus", wp);
        json_object_set_new(d, "_warm_since", json_real(since));
    }
    return d;
}

static void test_ended_without_pool(void **state)
{
    json_t *jobs = json_object();
    (void)state;
    json_object_set_new(jobs, "done", doc("Completed", NULL, 0, 0, NULL));
    json_object_set_new(jobs, "failed", doc("Failed", NULL, 0, 0, NULL));
    json_object_set_new(jobs, "stopped", doc("Stopped", NULL, 0, 0, NULL));
    json_object_set_new(jobs, "running", doc("InProgress", NULL, 0, 0, NULL));
    json_object_set_new(jobs, "stopping", doc("Stopping", NULL, 0, 0, NULL));
    assert_int_equal(leftover_job_ended("done", docs_of, jobs, NOW, 60), 1);
    assert_int_equal(leftover_job_ended("failed", docs_of, jobs, NOW, 60), 1);
    assert_int_equal(leftover_job_ended("stopped", docs_of, jobs, NOW, 60), 1);
    assert_int_equal(leftover_job_ended("running", docs_of, jobs, NOW, 60), 0);
    assert_int_equal(leftover_job_ended("stopping", docs_of, jobs, NOW, 60), 0);
    /* another deployment's job: never touched */
    assert_int_equal(leftover_job_ended("unknown", docs_of, jobs, NOW, 60), 0);
    json_decref(jobs);
}

static void test_pool_over_only_after_period_and_grace(void **state)
{
    json_t *jobs = json_object();
    (void)state;
    /* retained 100 s ago for 60 s, grace 60 s: over only once the grace has passed too */
    json_object_set_new(jobs, "young", doc("Completed", "Available", NOW - 100, 60, NULL));
    json_object_set_new(jobs, "old", doc("Completed", "Available", NOW - 200, 60, NULL));
    json_object_set_new(jobs, "gone", doc("Completed", "Terminated", NOW - 10, 60, NULL));
    json_object_set_new(jobs, "inuse", doc("Completed", "InUse", NOW - 9999, 60, NULL));
    assert_int_equal(leftover_job_ended("young", docs_of, jobs, NOW, 60), 0);
    assert_int_equal(leftover_job_ended("old", docs_of, jobs, NOW, 60), 1);
    assert_int_equal(leftover_job_ended("gone", docs_of, jobs, NOW, 60), 1);
    assert_int_equal(leftover_job_ended("inuse", docs_of, jobs, NOW, 60), 0);
    json_decref(jobs);
}

static void test_reused_pool_follows_the_reusing_job(void **state)
{
    json_t *jobs = json_object();
    (void)state;
    /* a's sandbox went to b (still training), c's to d (ended, pool over), e's to f (unknown) */
    json_object_set_new(jobs, "a", doc("Completed", "Reused", NOW - 9999, 60, "b"));
    json_object_set_new(jobs, "b", doc("InProgress", "InUse", NOW - 10, 60, NULL));
    json_object_set_new(jobs, "c", doc("Completed", "Reused", NOW - 9999, 60, "d"));
    json_object_set_new(jobs, "d", doc("Failed", NULL, 0, 0, NULL));
    json_object_set_new(jobs, "e", doc("Completed", "Reused", NOW - 9999, 60, "f"));
    /* a cycle can only come from a corrupt document: never taken as over */
    json_object_set_new(jobs, "x", doc("Completed", "Reused", NOW - 9999, 60, "y"));
    json_object_set_new(jobs, "y", doc("Completed", "Reused", NOW - 9999, 60, "x"));
    assert_int_equal(leftover_job_ended("a", docs_of, jobs, NOW, 60), 0);
    assert_int_equal(leftover_job_ended("c", docs_of, jobs, NOW, 60), 1);
    assert_int_equal(leftover_job_ended("e", docs_of, jobs, NOW, 60), 0);
    assert_int_equal(leftover_job_ended("x", docs_of, jobs, NOW, 60), 0);
    json_decref(jobs);
}

static void test_candidates_are_dead_agents_containers(void **state)
{
    json_t *live = json_pack("[{s:s}, {s:s}]", "id", "agent-live", "id", "agent-other");
    json_t *dead = json_pack("{s:{s:s, s:s}}", "Labels", "trainyard.job", "j", "trainyard.agent",
                             "agent-dead");
    json_t *mine = json_pack("{s:{s:s, s:s}}", "Labels", "trainyard.job", "j", "trainyard.agent",
                             "agent-self");
    json_t *alive = json_pack("{s:{s:s, s:s}}", "Labels", "trainyard.job", "j", "trainyard.agent",
                              "agent-other");
    json_t *nojob = json_pack("{s:{s:s}}", "Labels", "trainyard.agent", "agent-dead");
    json_t *noagent = json_pack("{s:{s:s}}", "Labels", "trainyard.job", "j");
    json_t *nolabels = json_object();
    (void)state;
    assert_int_equal(leftover_candidate(dead, live, "agent-self"), 1);
    assert_int_equal(leftover_candidate(mine, live, "agent-self"), 0);
    assert_int_equal(leftover_candidate(alive, live, "agent-self"), 0);
    assert_int_equal(leftover_candidate(nojob, live, "agent-self"), 0);
    assert_int_equal(leftover_candidate(noagent, live, "agent-self"), 0);
    assert_int_equal(leftover_candidate(nolabels, live, "agent-self"), 0);
    json_decref(live);
    json_decref(dead);
    json_decref(mine);
    json_decref(alive);
    json_decref(nojob);
    json_decref(noagent);
    json_decref(nolabels);
}

/* A spare sandbox (spare.h) has no job label: a gone agent's is removed while it is still
   named as its spare; once renamed for a job, that job's fate decides; anything else is kept. */
static void test_spares_of_gone_agents(void **state)
{
    const char *dep = "0123456789abcdef";
    json_t *live = json_pack("[{s:s}]", "id", "agent-live");
    char name[256], taken[256], job[64];
    json_t *c;
    (void)state;

    sandbox_spare_name(dep, "vm:42/1", name, sizeof(name));
    assert_string_equal(name, "trainyard-01234567-spare-vm-42-1");
    sandbox_job_name(dep, "my-job-7", taken, sizeof(taken));
    assert_string_equal(taken, "trainyard-01234567-my-job-7-algo-1-net");
    assert_int_equal(
        sandbox_spare_job(dep, "/trainyard-01234567-my-job-7-algo-1-net", job, sizeof(job)), 1);
    assert_string_equal(job, "my-job-7");
    /* another deployment's, a second host's, an empty or odd job name: not a taken spare */
    assert_int_equal(sandbox_spare_job(dep, "trainyard-76543210-j-algo-1-net", job, sizeof(job)),
                     0);
    assert_int_equal(sandbox_spare_job(dep, "trainyard-01234567-j-algo-2-net", job, sizeof(job)),
                     0);
    assert_int_equal(sandbox_spare_job(dep, "trainyard-01234567--algo-1-net", job, sizeof(job)), 0);
    assert_int_equal(sandbox_spare_job(dep, "trainyard-01234567-a.b-algo-1-net", job, sizeof(job)),
                     0);

    c = json_pack("{s:[s], s:{s:s, s:s, s:s}}", "Names", "/trainyard-01234567-spare-vm-42-1",
                  "Labels", "trainyard.agent", "vm:42/1", "trainyard.sandbox", "1",
                  "trainyard.spare", "1");
    assert_int_equal(leftover_spare(c, live, "agent-self", dep, job, sizeof(job)), 1);
    assert_int_equal(leftover_spare(c, live, "vm:42/1", dep, job, sizeof(job)), 0); /* mine */
    json_array_set_new(json_object_get(c, "Names"), 0,
                       json_string("/trainyard-01234567-my-job-7-algo-1-net"));
    assert_int_equal(leftover_spare(c, live, "agent-self", dep, job, sizeof(job)), 2);
    assert_string_equal(job, "my-job-7");
    json_object_set_new(json_object_get(c, "Labels"), "trainyard.agent", json_string("agent-live"));
    assert_int_equal(leftover_spare(c, live, "agent-self", dep, job, sizeof(job)), 0); /* alive */
    json_object_set_new(json_object_get(c, "Labels"), "trainyard.agent", json_string("gone"));
    json_array_set_new(json_object_get(c, "Names"), 0, json_string("/somebody-elses"));
    assert_int_equal(leftover_spare(c, live, "agent-self", dep, job, sizeof(job)), 0);
    json_object_del(json_object_get(c, "Labels"), "trainyard.spare");
    json_array_set_new(json_object_get(c, "Names"), 0,
                       json_string("/trainyard-01234567-spare-gone"));
    assert_int_equal(leftover_spare(c, live, "agent-self", dep, job, sizeof(job)), 0);
    json_decref(c);
    json_decref(live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ended_without_pool),
        cmocka_unit_test(test_pool_over_only_after_period_and_grace),
        cmocka_unit_test(test_reused_pool_follows_the_reusing_job),
        cmocka_unit_test(test_candidates_are_dead_agents_containers),
        cmocka_unit_test(test_spares_of_gone_agents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
