/*
 * test_slurmrest.c - the slurmrestd client's pure parts (slurmrest_int.h) on answers recorded
 * from Slurm 22.05.8's slurmrestd (tests/unit/data/slurm/README.md): the JWT against a
 * known answer computed apart (Python's hmac), errors as submit and job answers spell them, exit
 * statuses, and jobs pending, running, failed, cancelled and requeued.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "slurmrest.h"
#include "slurmrest_int.h"

static json_t *load(const char *name)
{
    char path[1024];
    json_error_t je;
    json_t *j;

    snprintf(path, sizeof(path), "%s/%s.json", TY_SLURM_DATA, name);
    j = json_load_file(path, 0, &je);
    if (!j)
        fail_msg("%s: %s", path, je.text);
    return j;
}

static json_t *first_job(json_t *answer)
{
    return json_array_get(json_object_get(answer, "jobs"), 0);
}

static void test_jwt_known_answer(void **state)
{
    static const char key[] = "0123456789abcdef-trainyard-test-key";
    char tok[SLURMREST_JWT_MAX];
    (void)state;

    assert_int_equal(slurmrest_jwt_mint((const unsigned char *)key, strlen(key), "slurm",
                                        1700000000, 600, tok, sizeof(tok)),
                     0);
    assert_string_equal(tok, "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
                             "eyJleHAiOjE3MDAwMDA2MDAsImlhdCI6MTcwMDAwMDAwMCwic3VuIjoic2x1cm0ifQ."
                             "zk9oH_b1sEjOl2QRZggN_pntW2omjK-jCZrVVpxHjlw");
    /* a user name that would break out of the claims is refused */
    assert_int_equal(slurmrest_jwt_mint((const unsigned char *)key, strlen(key), "a\",\"x",
                                        1700000000, 600, tok, sizeof(tok)),
                     -1);
    assert_int_equal(slurmrest_jwt_mint((const unsigned char *)key, strlen(key), "root", 1700000000,
                                        600, tok, 16),
                     -1);
}

static void test_submit_errors(void **state)
{
    char words[256];
    json_t *a;
    (void)state;

    a = load("submit_bad_partition");
    assert_int_equal(slurmrest_answer_error(a, words, sizeof(words)), SLURMREST_EBAD_PARTITION);
    assert_string_equal(words, "Invalid partition name specified");
    json_decref(a);
    a = load("submit_too_many_gpus");
    assert_int_equal(slurmrest_answer_error(a, words, sizeof(words)), SLURMREST_ENODE_CONFIG);
    assert_string_equal(words, "Requested node configuration is not available");
    json_decref(a);
    /* accepted with an error: a job id and 2015, and it waits for ever */
    a = load("submit_too_many_nodes");
    assert_int_equal(slurmrest_answer_error(a, words, sizeof(words)), SLURMREST_EPARTITION_NOW);
    assert_int_equal(json_integer_value(json_object_get(a, "job_id")), 3);
    json_decref(a);
    a = load("submit_sleeper");
    assert_int_equal(slurmrest_answer_error(a, words, sizeof(words)), 0);
    assert_string_equal(words, "");
    json_decref(a);
    /* a job answer spells it error_number, with a description */
    a = load("job_unknown");
    assert_int_equal(slurmrest_answer_error(a, words, sizeof(words)), SLURMREST_EJOB_ID);
    assert_string_equal(words, "Invalid job id specified: Unable to find JobId=9999");
    json_decref(a);
}

static void test_wait_status(void **state)
{
    int code, sig;
    (void)state;

    slurmrest_wait_status(768, &code, &sig); /* exit 3 */
    assert_int_equal(code, 3);
    assert_int_equal(sig, 0);
    slurmrest_wait_status(36608, &code, &sig); /* exit 143 */
    assert_int_equal(code, 143);
    assert_int_equal(sig, 0);
    slurmrest_wait_status(9, &code, &sig); /* killed */
    assert_int_equal(code, 137);
    assert_int_equal(sig, 9);
    slurmrest_wait_status(0, &code, &sig);
    assert_int_equal(code, 0);
}

static void test_jobs(void **state)
{
    struct slurmrest_job j;
    struct ty_err err;
    json_t *a;
    (void)state;

    a = load("job_running_2_nodes");
    assert_int_equal(slurmrest_job_parse(first_job(a), &j, &err), 0);
    assert_int_equal(j.id, 5);
    assert_string_equal(j.state, "RUNNING");
    assert_string_equal(j.nodes, "n[1-2]");
    assert_int_equal(j.node_count, 2);
    assert_string_equal(j.batch_host, "n1");
    assert_true(j.start_time > 0);
    assert_int_equal(j.end_time, 0); /* the time limit's end, not an end */
    json_decref(a);

    a = load("job_failed_exit3");
    assert_int_equal(slurmrest_job_parse(first_job(a), &j, &err), 0);
    assert_string_equal(j.state, "FAILED");
    assert_string_equal(j.reason, "NonZeroExitCode");
    assert_int_equal(j.exit_code, 3);
    assert_true(j.end_time >= j.start_time && j.end_time > 0);
    json_decref(a);

    a = load("job_pending_resources");
    assert_int_equal(slurmrest_job_parse(first_job(a), &j, &err), 0);
    assert_string_equal(j.state, "PENDING");
    assert_string_equal(j.reason, "Resources");
    assert_int_equal(j.start_time, 0); /* an estimate while pending */
    assert_string_equal(j.nodes, "");
    json_decref(a);

    a = load("job_pending_partition_limit");
    assert_int_equal(slurmrest_job_parse(first_job(a), &j, &err), 0);
    assert_string_equal(j.reason, "PartitionNodeLimit");
    json_decref(a);

    a = load("job_cancelled");
    assert_int_equal(slurmrest_job_parse(first_job(a), &j, &err), 0);
    assert_string_equal(j.state, "CANCELLED");
    json_decref(a);

    /* its node set down: Slurm put it back in the queue to run again (requeue cannot be turned
       off through REST) */
    a = load("job_requeued");
    assert_int_equal(slurmrest_job_parse(first_job(a), &j, &err), 0);
    assert_string_equal(j.state, "PENDING");
    assert_string_equal(j.reason, "BeginTime");
    assert_int_equal(j.restart_cnt, 1);
    json_decref(a);

    /* no job in the answer */
    a = load("job_unknown");
    assert_int_equal(slurmrest_job_parse(first_job(a), &j, &err), -TY_EENGINE);
    json_decref(a);
}

static void test_nodes_and_partitions(void **state)
{
    json_t *a = load("nodes"), *n;
    (void)state;

    assert_int_equal(json_array_size(json_object_get(a, "nodes")), 2);
    n = json_array_get(json_object_get(a, "nodes"), 0);
    assert_string_equal(json_string_value(json_object_get(n, "name")), "n1");
    assert_string_equal(json_string_value(json_object_get(n, "gres")), "gpu:2");
    json_decref(a);
    a = load("partitions");
    n = json_array_get(json_object_get(a, "partitions"), 0);
    assert_string_equal(json_string_value(json_object_get(n, "name")), "debug");
    assert_string_equal(json_string_value(json_object_get(n, "nodes")), "n[1-2]");
    json_decref(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jwt_known_answer),     cmocka_unit_test(test_submit_errors),
        cmocka_unit_test(test_wait_status),          cmocka_unit_test(test_jobs),
        cmocka_unit_test(test_nodes_and_partitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
