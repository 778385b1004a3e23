/*
 * test_slurmmap.c - the Slurm executor's instance map (slurmmap.h): the defaults, the admin's
 * file and its mistakes, GRES strings, and the check against a cluster's partitions and nodes as
 * slurmrestd answered them (tests/unit/data/slurm: partition debug, nodes n1 and n2 of 2 GPUs).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurmmap.h"

static char map_path[64];

/* Writes text to a fresh file; its path in map_path. */
static const char *map_file(const char *text)
{
    FILE *f;
    int fd;

    snprintf(map_path, sizeof(map_path), "/tmp/ty-slurmmap-XXXXXX");
    fd = mkstemp(map_path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return map_path;
}

static json_t *recorded(const char *name, const char *key)
{
    char path[1024];
    json_t *a, *arr;

    snprintf(path, sizeof(path), "%s/%s.json", TY_SLURM_DATA, name);
    a = json_load_file(path, 0, NULL);
    assert_non_null(a);
    arr = json_incref(json_object_get(a, key));
    json_decref(a);
    return arr;
}

static void test_defaults(void **state)
{
    struct slurmmap *m = slurmmap_load(NULL, NULL);
    struct slurmmap_entry e;
    struct ty_err err;
    (void)state;

    assert_non_null(m);
    assert_int_equal(slurmmap_lookup(m, "ml.p3.8xlarge", &e, &err), 0);
    assert_string_equal(e.partition, "ml-p3-8xlarge");
    assert_int_equal(e.gpus, 4);
    assert_string_equal(e.gres, "gpu:4");
    assert_int_equal(e.from_map, 0);
    assert_int_equal(slurmmap_lookup(m, "ml.m5.xlarge", &e, &err), 0);
    assert_string_equal(e.partition, "ml-m5-xlarge");
    assert_int_equal(e.gpus, 0);
    assert_string_equal(e.gres, "");
    assert_int_equal(slurmmap_lookup(m, "ml.p3.2xlarge; rm -rf /", &e, &err), -TY_EINVAL);
    slurmmap_free(m);
}

static void test_file(void **state)
{
    struct slurmmap_entry e;
    struct slurmmap *m;
    struct ty_err err;
    (void)state;

    m = slurmmap_load(map_file("{\"ml.p3.2xlarge\": {\"partition\": \"debug\"},"
                               " \"ml.p4d.24xlarge\": {\"partition\": \"a100\","
                               " \"gres\": \"gpu:a100:8\"},"
                               " \"*\": {\"partition\": \"cpu\"}}"),
                      &err);
    unlink(map_path);
    assert_non_null(m);
    assert_int_equal(slurmmap_lookup(m, "ml.p3.2xlarge", &e, &err), 0);
    assert_string_equal(e.partition, "debug");
    assert_int_equal(e.gpus, 1); /* the type's */
    assert_string_equal(e.gres, "gpu:1");
    assert_int_equal(e.from_map, 1);
    assert_int_equal(slurmmap_lookup(m, "ml.p4d.24xlarge", &e, &err), 0);
    assert_string_equal(e.gres, "gpu:a100:8");
    assert_int_equal(e.gpus, 8);
    assert_int_equal(slurmmap_lookup(m, "ml.m5.large", &e, &err), 0); /* "*" */
    assert_string_equal(e.partition, "cpu");
    slurmmap_free(m);
}

static void test_bad_files(void **state)
{
    static const char *const bad[][2] = {
        {"[1, 2]", "must be a JSON object"},
        {"{\"ml.p3.2xlarge\": ", "line"},
        {"{\"ml.q9.huge\": {\"partition\": \"x\"}}", "not an instance type"},
        {"{\"ml.p3.2xlarge\": \"debug\"}", "must be an object"},
        {"{\"ml.p3.2xlarge\": {\"partiton\": \"debug\"}}", "unknown member \"partiton\""},
        {"{\"ml.p3.2xlarge\": {\"partition\": \"a b\"}}", "partition's name"},
        {"{\"ml.p3.2xlarge\": {\"gpus\": -1}}", "whole number"},
        {"{\"ml.p3.2xlarge\": {\"gres\": \"gpu;8\"}}", "GRES string"},
        {"{\"*\": {}, \"*\": {}}", "duplicate"},
    };
    struct ty_err err;
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct slurmmap *m = slurmmap_load(map_file(bad[i][0]), &err);
        unlink(map_path);
        if (m || !strstr(err.msg, bad[i][1]))
            fail_msg("%s: %s", bad[i][0], m ? "loaded" : err.msg);
        assert_int_equal(err.code, TY_EINVAL);
    }
    assert_null(slurmmap_load("/nonexistent/map.json", &err));
    assert_int_equal(err.code, TY_EINVAL);
}

static void test_gres(void **state)
{
    (void)state;
    assert_int_equal(slurmmap_gres_gpus("gpu:2"), 2);
    assert_int_equal(slurmmap_gres_gpus("gpu:a100:8(S:0-1)"), 8);
    assert_int_equal(slurmmap_gres_gpus("gpu:a100:4,gpu:t4:1,mps:100"), 5);
    assert_int_equal(slurmmap_gres_gpus("(null)"), 0);
    assert_int_equal(slurmmap_gres_gpus(""), 0);
    assert_int_equal(slurmmap_gres_gpus(NULL), 0);
}

static void test_check_against_the_cluster(void **state)
{
    json_t *parts = recorded("partitions", "partitions"), *nodes = recorded("nodes", "nodes");
    char report[1024];
    struct slurmmap *m;
    struct ty_err err;
    (void)state;

    m = slurmmap_load(map_file("{\"ml.p3.2xlarge\": {\"partition\": \"debug\"},"
                               " \"ml.p3.8xlarge\": {\"partition\": \"debug\"},"
                               " \"ml.g5.xlarge\": {\"partition\": \"gpu\"}}"),
                      &err);
    unlink(map_path);
    assert_non_null(m);
    assert_int_equal(slurmmap_check(m, parts, nodes, report, sizeof(report)), 2);
    assert_non_null(strstr(report, "ml.p3.8xlarge: no node of partition 'debug' has 4 GPUs "
                                   "(the most: 2)\n"));
    assert_non_null(strstr(report, "ml.g5.xlarge: partition 'gpu' does not exist\n"));
    assert_null(strstr(report, "ml.p3.2xlarge"));
    slurmmap_free(m);
    /* the defaults name no partition of this cluster, and are not checked at start */
    m = slurmmap_load(NULL, &err);
    assert_int_equal(slurmmap_check(m, parts, nodes, report, sizeof(report)), 0);
    slurmmap_free(m);
    json_decref(parts);
    json_decref(nodes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_file),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_gres),
        cmocka_unit_test(test_check_against_the_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
