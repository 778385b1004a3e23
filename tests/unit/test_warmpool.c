/*
 * test_warmpool.c - the warm pool's matching and retention rules (warmpool.h), without Redis or
 * an engine: the key differs for every member AWS compares (account, role, image, instance type
 * and count, volume, VPC, isolation) and not for what it does not (name, hyperparameters,
 * entrypoint, keep-alive period); which ended jobs keep their instance; the in-memory take hands
 * a pool over once and only for an equal key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ty_err.h"
#include "warmpool.h"

static json_t *job(const char *name)
{
    char arn[200];
    snprintf(arn, sizeof(arn), "arn:aws:sagemaker:us-east-1:000000000000:training-job/%s", name);
    return json_pack("{s:s, s:s, s:s, s:{s:s, s:[s,s,s]}, s:{s:s, s:i, s:i, s:i}, s:{s:s}, "
                     "s:b}",
                     "TrainingJobName", name, "TrainingJobArn", arn, "RoleArn",
                     "arn:aws:iam::000000000000:role/trainyard", "AlgorithmSpecification",
                     "TrainingImage", "trainyard/runtime:0.1.0", "ContainerEntrypoint", "sh", "-c",
                     name, "ResourceConfig", "InstanceType", "ml.m5.large", "InstanceCount", 1,
                     "VolumeSizeInGB", 1, "KeepAlivePeriodInSeconds", 60, "HyperParameters", "lr",
                     name, "EnableNetworkIsolation", 0);
}

static void key_of(json_t *doc, char *k)
{
    struct ty_err err;
    assert_int_equal(warmpool_key(doc, k, WARMPOOL_KEY_MAX, &err), 0);
}

static void test_key_same_for_matching_jobs(void **state)
{
    static char k1[WARMPOOL_KEY_MAX], k2[WARMPOOL_KEY_MAX];
    json_t *a = job("a"), *b = job("b-other-name");
    (void)state;
    json_object_set_new(json_object_get(b, "ResourceConfig"), "KeepAlivePeriodInSeconds",
                        json_integer(5));
    key_of(a, k1);
    key_of(b, k2);
    assert_string_equal(k1, k2);
    json_decref(a);
    json_decref(b);
}

static void test_key_differs_for_each_compared_member(void **state)
{
    static char k0[WARMPOOL_KEY_MAX], k[WARMPOOL_KEY_MAX];
    const char *changes[] = {
        "{\"TrainingJobArn\": \"arn:aws:sagemaker:us-east-1:111111111111:training-job/a\"}",
        "{\"TrainingJobArn\": \"arn:aws:sagemaker:eu-west-1:000000000000:training-job/a\"}",
        "{\"RoleArn\": \"arn:aws:iam::000000000000:role/other\"}",
        "{\"AlgorithmSpecification\": {\"TrainingImage\": \"other:1\"}}",
        "{\"ResourceConfig\": {\"InstanceType\": \"ml.m5.xlarge\", \"InstanceCount\": 1, "
        "\"VolumeSizeInGB\": 1}}",
        "{\"ResourceConfig\": {\"InstanceType\": \"ml.m5.large\", \"InstanceCount\": 2, "
        "\"VolumeSizeInGB\": 1}}",
        "{\"ResourceConfig\": {\"InstanceType\": \"ml.m5.large\", \"InstanceCount\": 1, "
        "\"VolumeSizeInGB\": 2}}",
        "{\"ResourceConfig\": {\"InstanceType\": \"ml.m5.large\", \"InstanceCount\": 1, "
        "\"VolumeSizeInGB\": 1, \"VolumeKmsKeyId\": \"k\"}}",
        "{\"VpcConfig\": {\"Subnets\": [\"s-1\"], \"SecurityGroupIds\": [\"sg-1\"]}}",
        "{\"EnableNetworkIsolation\": true}",
        "{\"EnableInterContainerTrafficEncryption\": true}",
        NULL};
    json_t *base = job("a");
    (void)state;
    key_of(base, k0);
    for (int i = 0; changes[i]; i++) {
        json_t *d = job("a"), *ch = json_loads(changes[i], 0, NULL);
        assert_non_null(ch);
        json_object_update(d, ch);
        key_of(d, k);
        if (strcmp(k, k0) == 0)
            fail_msg("change %d (%s) gives the same key", i, changes[i]);
        json_decref(ch);
        json_decref(d);
    }
    json_decref(base);
}

static void test_key_needs_an_account(void **state)
{
    char k[WARMPOOL_KEY_MAX];
    struct ty_err err;
    json_t *d = job("a");
    (void)state;
    json_object_set_new(d, "TrainingJobArn", json_string("not-an-arn"));
    assert_int_equal(warmpool_key(d, k, sizeof(k), &err), -TY_EINVAL);
    json_object_del(d, "TrainingJobArn");
    assert_int_equal(warmpool_key(d, k, sizeof(k), &err), -TY_EINVAL);
    json_decref(d);
}

static void test_retains(void **state)
{
    json_t *d = job("a");
    (void)state;
    json_object_set_new(d, "TrainingJobStatus", json_string("Completed"));
    assert_int_equal(warmpool_retains(d), 1);
    json_object_set_new(d, "TrainingJobStatus", json_string("Stopped"));
    assert_int_equal(warmpool_retains(d), 1);
    json_object_set_new(d, "TrainingJobStatus", json_string("Failed"));
    json_object_set_new(d, "FailureReason", json_string("AlgorithmError: exit 1"));
    assert_int_equal(warmpool_retains(d), 1);
    json_object_set_new(d, "FailureReason", json_string("InternalServerError: engine"));
    assert_int_equal(warmpool_retains(d), 0);
    json_object_set_new(d, "TrainingJobStatus", json_string("InProgress"));
    assert_int_equal(warmpool_retains(d), 0);
    json_object_set_new(d, "TrainingJobStatus", json_string("Completed"));
    json_object_set_new(json_object_get(d, "ResourceConfig"), "KeepAlivePeriodInSeconds",
                        json_integer(0));
    assert_int_equal(warmpool_retains(d), 0);
    assert_int_equal(warmpool_keep_alive(d), 0);
    json_object_del(json_object_get(d, "ResourceConfig"), "KeepAlivePeriodInSeconds");
    assert_int_equal(warmpool_retains(d), 0);
    json_decref(d);
}

/* put with no store writes nothing; take hands each pool over once, for its own key only */
static void test_take_once_by_key(void **state)
{
    static struct warmpool_entry e, got;
    struct ty_err err;
    struct warmpool *wp = warmpool_start("unix:///nonexistent/redis.sock",
                                         "unix:///nonexistent/engine.sock", 2, &err);
    (void)state;
    assert_non_null(wp);
    memset(&e, 0, sizeof(e));
    snprintf(e.job, sizeof(e.job), "a");
    snprintf(e.key, sizeof(e.key), "k1");
    e.nh = 1;
    e.since = 1e12; /* far in the future: the sweeper never ends it here */
    assert_int_equal(warmpool_put(wp, NULL, &e, &err), 0);
    assert_int_equal(warmpool_count(wp), 1);
    assert_int_equal(warmpool_take(wp, "k2", &got), 0);
    assert_int_equal(warmpool_take(wp, "k1", &got), 1);
    assert_string_equal(got.job, "a");
    assert_int_equal(warmpool_take(wp, "k1", &got), 0);
    assert_int_equal(warmpool_count(wp), 0);
    warmpool_stop(wp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_same_for_matching_jobs),
        cmocka_unit_test(test_key_differs_for_each_compared_member),
        cmocka_unit_test(test_key_needs_an_account),
        cmocka_unit_test(test_retains),
        cmocka_unit_test(test_take_once_by_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
