/*
 * test_slurmjob.c - one attempt's submission to Slurm (slurmjob.h): name, nodes, partition,
 * GRES, the time limit as a backstop, the comment, the launchers' environment, and the
 * submissions refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "slurmjob.h"

#define TOKEN "abababababababababababababababababababababababababababababababab"

static struct slurmjob_in base(const struct slurmmap_entry *place)
{
    struct slurmjob_in in = {0};

    in.deployment = "0123456789abcdef";
    in.job = "train-1";
    in.attempt = 2;
    in.hosts = 3;
    in.max_runtime_s = 3600;
    in.stop_grace_s = 120;
    in.place = place;
    in.launcher = "/usr/local/bin/trainyard-launch";
    in.launch_url = "http://10.0.0.5:9920";
    in.token = TOKEN;
    in.workdir = "/srv/trainyard";
    return in;
}

static const char *env(const struct slurmjob *j, const char *k)
{
    return json_string_value(json_object_get(j->env, k));
}

static void test_build(void **state)
{
    struct slurmmap_entry place = {"gpu", 4, "gpu:a100:4", 1};
    struct slurmjob_in in = base(&place);
    struct slurmjob j;
    struct ty_err err;
    (void)state;

    assert_int_equal(slurmjob_build(&in, &j, &err), 0);
    assert_string_equal(j.sub.name, "ty-01234567-train-1");
    assert_string_equal(j.sub.partition, "gpu");
    assert_string_equal(j.sub.gres, "gpu:a100:4");
    assert_int_equal(j.sub.nodes, 3);
    assert_int_equal(j.sub.tasks_per_node, 1);
    assert_int_equal(j.sub.exclusive, 1);
    assert_int_equal(j.sub.time_limit_min, 67); /* (3600 + 120 + 300) / 60 */
    slurmjob_free(&j);
    in.stop_grace_s = 121; /* a second more is a minute more: never below trainyard's clock */
    assert_int_equal(slurmjob_build(&in, &j, &err), 0);
    assert_int_equal(j.sub.time_limit_min, 68);
    assert_string_equal(j.sub.comment, "trainyard 01234567 train-1 attempt 2");
    assert_string_equal(j.sub.cwd, "/srv/trainyard");
    assert_string_equal(j.sub.stdout_path, "/srv/trainyard/%x-%j.out");
    assert_non_null(strstr(j.sub.script, "srun --ntasks-per-node=1 --kill-on-bad-exit=1 "
                                         "'/usr/local/bin/trainyard-launch'"));
    assert_string_equal(env(&j, "TY_LAUNCH_URL"), "http://10.0.0.5:9920");
    assert_string_equal(env(&j, "TY_LAUNCH_TOKEN"), TOKEN);
    assert_string_equal(env(&j, "TY_LAUNCH_JOB"), "train-1");
    assert_string_equal(env(&j, "TY_LAUNCH_ATTEMPT"), "2");
    assert_non_null(env(&j, "PATH"));
    assert_null(env(&j, "TRAINYARD_DOCKER_HOST"));
    slurmjob_free(&j);

    /* no GPU, no MaxRuntime (SageMaker's day), the nodes' engine and staging folder */
    snprintf(place.gres, sizeof(place.gres), "%s", "");
    in.max_runtime_s = 0;
    in.stop_grace_s = 0;
    in.node_docker_host = "unix:///run/podman/podman.sock";
    in.node_staging_dir = "/scratch/trainyard";
    in.workdir = NULL;
    assert_int_equal(slurmjob_build(&in, &j, &err), 0);
    assert_null(j.sub.gres);
    assert_int_equal(j.sub.time_limit_min, (86400 + 300 + 59) / 60);
    assert_string_equal(env(&j, "TRAINYARD_DOCKER_HOST"), "unix:///run/podman/podman.sock");
    assert_string_equal(env(&j, "TRAINYARD_LAUNCH_STAGING_DIR"), "/scratch/trainyard");
    assert_string_equal(j.sub.cwd, "/tmp");
    slurmjob_free(&j);
}

static void test_refused(void **state)
{
    struct slurmmap_entry place = {"debug", 0, "", 0};
    struct slurmjob_in in;
    struct slurmjob j;
    struct ty_err err;
    (void)state;

    in = base(&place);
    in.launcher = "/opt/x; rm -rf /";
    assert_int_equal(slurmjob_build(&in, &j, &err), -TY_EINVAL);
    assert_non_null(strstr(err.msg, "batch script"));
    in = base(&place);
    in.launch_url = "https://x";
    assert_int_equal(slurmjob_build(&in, &j, &err), -TY_EINVAL);
    in = base(&place);
    in.node_staging_dir = "/a b";
    assert_int_equal(slurmjob_build(&in, &j, &err), -TY_EINVAL);
    in = base(&place);
    in.hosts = 0;
    assert_int_equal(slurmjob_build(&in, &j, &err), -TY_EINVAL);
    in = base(&place);
    in.place = NULL;
    assert_int_equal(slurmjob_build(&in, &j, &err), -TY_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
