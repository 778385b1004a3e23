/*
 * test_ledger.c - the resource ledger's arithmetic (agent/ledger.h) and its options
 * (agent_resources_parse): what an instance type asks, what it is charged on small and GPU
 * agents, fits, jobs no agent can ever run, and the words a waiting job is given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <string.h>

#include "agent.h"
#include "ledger.h"

#define GIB ((int64_t)1 << 30)

static void test_need_and_charge(void **state)
{
    struct ledger_res need, charge;
    struct ledger_res small = {0, 2, 8 * GIB}, gpu8 = {8, 96, 1152 * GIB};
    (void)state;

    ledger_need("ml.p3.8xlarge", 2, &need);
    assert_int_equal(need.gpus, 8);
    assert_int_equal(need.cpus, 64);
    assert_true(need.memory_bytes == 488 * GIB);
    ledger_need("ml.m5.large", 0, &need); /* a count of 0 is one host */
    assert_int_equal(need.cpus, 2);
    assert_true(need.memory_bytes == 8 * GIB);
    ledger_need("ml.no.such", 3, &need);
    assert_int_equal(need.cpus, 3);
    assert_int_equal(need.gpus, 0);
    ledger_need(NULL, 1, &need);
    assert_int_equal(need.cpus, 1);

    /* a type larger than the agent takes all of it; GPUs on a GPU-less agent run on the CPU */
    ledger_need("ml.p3.8xlarge", 1, &need);
    ledger_charge(&need, &small, 1, &charge);
    assert_int_equal(charge.gpus, 0);
    assert_int_equal(charge.cpus, 2);
    assert_true(charge.memory_bytes == 8 * GIB);
    assert_false(ledger_never(&need, &small, 1));
    /* --cpu-fallback no: a GPU-less agent charges the GPUs, and can never run the job */
    ledger_charge(&need, &small, 0, &charge);
    assert_int_equal(charge.gpus, 4);
    assert_true(ledger_never(&need, &small, 0));
    /* on a GPU agent, GPUs are charged whole */
    ledger_charge(&need, &gpu8, 1, &charge);
    assert_int_equal(charge.gpus, 4);
    assert_int_equal(charge.cpus, 32);
    assert_true(charge.memory_bytes == 244 * GIB);
}

static void test_fits_and_never(void **state)
{
    struct ledger_res need, charge, cap2 = {2, 16, 64 * GIB};
    struct ledger_res free = {2, 16, 64 * GIB};
    (void)state;

    ledger_need("ml.p3.2xlarge", 1, &need); /* 1 GPU, 8 vCPUs, 61 GiB */
    ledger_charge(&need, &cap2, 1, &charge);
    assert_true(ledger_fits(&charge, &free));
    free.gpus = 0;
    assert_false(ledger_fits(&charge, &free));
    free.gpus = 1;
    free.cpus = 7;
    assert_false(ledger_fits(&charge, &free));
    free.cpus = 8;
    free.memory_bytes = 60 * GIB;
    assert_false(ledger_fits(&charge, &free));
    ledger_need("ml.p4d.24xlarge", 1, &need); /* 8 GPUs */
    assert_true(ledger_never(&need, &cap2, 1));
    ledger_need("ml.m5.24xlarge", 4, &need); /* no GPU: never "never" */
    assert_false(ledger_never(&need, &cap2, 0));
}

/* {"capacity":..,"free":..,"slots":..,"busy":..} as agent.c's heartbeat writes it */
static json_t *agent_json(int gpus, int cpus, int64_t mem, int fgpus, int fcpus, int64_t fmem,
                          int slots, int busy)
{
    struct ledger_res c = {gpus, cpus, mem}, f = {fgpus, fcpus, fmem};
    return json_pack("{s:o, s:o, s:i, s:i}", "capacity", ledger_res_json(&c), "free",
                     ledger_res_json(&f), "slots", slots, "busy", busy);
}

static void test_wait_message(void **state)
{
    struct ledger_res need;
    char msg[240];
    json_t *agents = json_array();
    (void)state;

    ledger_need("ml.p3.8xlarge", 1, &need); /* 4 GPUs */
    assert_int_equal(ledger_wait_message(&need, agents, msg, sizeof(msg)), 0);
    assert_string_equal(msg, "waiting for an agent that can run this job: none is running");
    assert_false(ledger_never_anywhere(&need, agents)); /* an agent may come */

    json_array_append_new(agents, agent_json(8, 64, 512 * GIB, 2, 40, 400 * GIB, 4, 2));
    json_array_append_new(agents, agent_json(8, 64, 512 * GIB, 1, 60, 500 * GIB, 4, 1));
    assert_int_equal(ledger_wait_message(&need, agents, msg, sizeof(msg)), 0);
    assert_string_equal(msg, "waiting for 4 GPUs: the largest agent has 2 free");
    assert_false(ledger_never_anywhere(&need, agents));

    ledger_need("ml.m5.4xlarge", 1, &need); /* 16 vCPUs, 64 GiB: no GPU */
    assert_int_equal(ledger_wait_message(&need, agents, msg, sizeof(msg)), 1);

    json_decref(agents);
    agents = json_array();
    json_array_append_new(agents, agent_json(0, 4, 16 * GIB, 0, 2, 12 * GIB, 4, 1));
    assert_int_equal(ledger_wait_message(&need, agents, msg, sizeof(msg)), 0);
    assert_string_equal(msg, "waiting for 4 vCPUs: the largest agent has 2 free");
    ledger_need("ml.m5.large", 1, &need); /* 2 vCPUs, 8 GiB */
    json_object_set_new(json_object_get(json_array_get(agents, 0), "free"), "memory_bytes",
                        json_integer(4 * GIB));
    assert_int_equal(ledger_wait_message(&need, agents, msg, sizeof(msg)), 0);
    assert_string_equal(msg, "waiting for 8 GiB of memory: the largest agent has 4 GiB free");
    json_object_set_new(json_array_get(agents, 0), "busy", json_integer(4));
    assert_int_equal(ledger_wait_message(&need, agents, msg, sizeof(msg)), 0);
    assert_true(strstr(msg, "job slot") != NULL);

    /* 8 GPUs on agents of 2: never; an agent without a published ledger might */
    json_decref(agents);
    agents = json_array();
    json_array_append_new(agents, agent_json(2, 16, 64 * GIB, 2, 16, 64 * GIB, 4, 0));
    ledger_need("ml.p4d.24xlarge", 1, &need);
    assert_true(ledger_never_anywhere(&need, agents));
    json_array_append_new(agents, agent_json(0, 2, 8 * GIB, 0, 2, 8 * GIB, 4, 0));
    assert_false(ledger_never_anywhere(&need, agents)); /* a GPU-less agent runs it on the CPU */
    json_object_set_new(json_array_get(agents, 1), "cpu_fallback", json_false());
    assert_true(ledger_never_anywhere(&need, agents)); /* unless its admin said no */
    json_array_remove(agents, 1);
    json_array_append_new(agents, json_pack("{s:s}", "id", "old-agent"));
    assert_false(ledger_never_anywhere(&need, agents));
    json_decref(agents);
}

static void test_resources_parse(void **state)
{
    struct agent_config c;
    struct ty_err err;
    (void)state;

    memset(&c, 0, sizeof(c));
    assert_int_equal(agent_resources_parse(&c, NULL, "", "auto", NULL, NULL, &err), 0);
    assert_int_equal(c.cpus, 0);
    assert_int_equal(c.gpus, 0);
    assert_true(c.overcommit == 1.0);
    assert_int_equal(agent_resources_parse(&c, "8", "64G", "2", NULL, "1.5", &err), 0);
    assert_int_equal(c.cpus, 8);
    assert_true(c.memory_bytes == 64 * GIB);
    assert_int_equal(c.gpus, 2);
    assert_true(c.overcommit == 1.5);
    assert_int_equal(agent_resources_parse(&c, "auto", "512Mi", "none", NULL, "1", &err), 0);
    assert_true(c.memory_bytes == 512LL << 20);
    assert_int_equal(c.gpus, -1);
    assert_int_equal(agent_resources_parse(&c, "auto", "1048576", "0", NULL, NULL, &err), 0);
    assert_true(c.memory_bytes == 1048576);
    assert_int_equal(c.gpus, -1); /* 0 declared: none */
    /* CDI names: the GPUs by name (MIG slices, a test's fake vendor) */
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, "nvidia.com/gpu=0:1,nvidia.com/gpu=1",
                                           NULL, NULL, &err),
                     0);
    assert_int_equal(c.gpus, 2);
    assert_string_equal(c.gpu_devices, "nvidia.com/gpu=0:1,nvidia.com/gpu=1");
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, "4", NULL, NULL, &err), 0);
    assert_null(c.gpu_devices);
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, "gpu=0", NULL, NULL, &err), -TY_EINVAL);
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, "a/b=0,,a/b=1", NULL, NULL, &err),
                     -TY_EINVAL);
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, "a/b=", NULL, NULL, &err), -TY_EINVAL);
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, "65", NULL, NULL, &err), -TY_EINVAL);
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, NULL, NULL, NULL, &err), 0);
    assert_int_equal(c.no_cpu_fallback, 0);
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, NULL, "no", NULL, &err), 0);
    assert_int_equal(c.no_cpu_fallback, 1);
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, NULL, "maybe", NULL, &err), -TY_EINVAL);
    assert_string_equal(err.field, "cpu-fallback");
    assert_int_equal(agent_resources_parse(&c, "0", NULL, NULL, NULL, NULL, &err), -TY_EINVAL);
    assert_string_equal(err.field, "cpus");
    assert_int_equal(agent_resources_parse(&c, "4x", NULL, NULL, NULL, NULL, &err), -TY_EINVAL);
    assert_int_equal(agent_resources_parse(&c, NULL, "lots", NULL, NULL, NULL, &err), -TY_EINVAL);
    assert_string_equal(err.field, "memory");
    assert_int_equal(agent_resources_parse(&c, NULL, "-1G", NULL, NULL, NULL, &err), -TY_EINVAL);
    assert_int_equal(agent_resources_parse(&c, NULL, "8Q", NULL, NULL, NULL, &err), -TY_EINVAL);
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, "two", NULL, NULL, &err), -TY_EINVAL);
    assert_string_equal(err.field, "gpus");
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, NULL, NULL, "0.5", &err), -TY_EINVAL);
    assert_string_equal(err.field, "overcommit");
    assert_int_equal(agent_resources_parse(&c, NULL, NULL, NULL, NULL, "65", &err), -TY_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_need_and_charge),
        cmocka_unit_test(test_fits_and_never),
        cmocka_unit_test(test_wait_message),
        cmocka_unit_test(test_resources_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
