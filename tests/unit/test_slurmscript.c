/*
 * test_slurmscript.c - a training job's Slurm job (slurmscript.h): its name, and a batch script
 * that turns requeue off, refuses a requeued run or a short allocation, starts one launcher per
 * node, and cannot be made to run anything else through the names it is given. The script on
 * a real cluster (a node failure ends the job, no rerun): test_slurm_live.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "slurmscript.h"

static void test_name(void **state)
{
    char name[128];
    (void)state;

    slurmscript_name("0123456789abcdef", "my-job-1", name, sizeof(name));
    assert_string_equal(name, "ty-01234567-my-job-1");
}

static void test_script(void **state)
{
    struct slurmscript_job j = {"0123456789abcdef", "my-job-1", 3, "/opt/trainyard/bin/launch"};
    char *s = slurmscript_batch(&j);
    (void)state;

    assert_non_null(s);
    assert_true(strncmp(s, "#!/bin/sh\n", 10) == 0);
    /* requeue off before anything else runs */
    assert_true(strstr(s, "scontrol update jobid=\"$SLURM_JOB_ID\" requeue=0 ||") <
                strstr(s, "exec srun"));
    assert_non_null(strstr(s, "if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then"));
    assert_non_null(strstr(s, "if [ \"$SLURM_JOB_NUM_NODES\" != 3 ]; then"));
    assert_non_null(strstr(s, "exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 "
                              "'/opt/trainyard/bin/launch'\n"));
    free(s);
}

static void test_refused(void **state)
{
    static const char *const launchers[] = {"relative/launch", "/opt/x'; rm -rf /; '",
                                            "/opt/with space", "/opt/$(id)", ""};
    struct slurmscript_job j = {"0123456789abcdef", "my-job-1", 1, "/opt/launch"};
    (void)state;

    for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
        j.launcher = launchers[i];
        assert_null(slurmscript_batch(&j));
    }
    j.launcher = "/opt/launch";
    j.job = "job;reboot";
    assert_null(slurmscript_batch(&j));
    j.job = "my-job-1";
    j.hosts = 0;
    assert_null(slurmscript_batch(&j));
    assert_null(slurmscript_batch(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_script),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
