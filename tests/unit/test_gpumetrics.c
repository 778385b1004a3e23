/*
 * test_gpumetrics.c - GPU instance metrics without a GPU (gpumetrics.h): SageMaker's folding
 * (percent per GPU, summed), no handle when libnvidia-ml is absent or is not NVML (so nothing
 * is published), and the dlopen path through the profiler's stand-in NVML (two GPUs at 40 % and
 * 50 %, memory 25 % used each; its path in TY_TEST_FAKE_NVML, else that case is skipped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

#include "gpumetrics.h"

static void test_fold(void **state)
{
    const struct gpumetrics_gpu g[] = {
        {50, 1000, 4000}, {100, 3000, 4000}, {250, 10, 0} /* clamped; no total */};
    double u = -1, m = -1;
    (void)state;
    assert_int_equal(gpumetrics_fold(g, 2, &u, &m), 0);
    assert_true(u == 150.0 && m == 100.0);
    assert_int_equal(gpumetrics_fold(g, 3, &u, &m), 0);
    assert_true(u == 250.0 && m == 100.0);
    u = m = -1;
    assert_int_equal(gpumetrics_fold(g, 0, &u, &m), -1);
    assert_true(u == -1 && m == -1); /* OUT untouched on failure */
}

static void test_absent_library_means_no_metrics(void **state)
{
    double u, m;
    (void)state;
    assert_null(gpumetrics_open("/nonexistent/libnvidia-ml.so.1"));
    assert_null(gpumetrics_open("libm.so.6")); /* a library, but not NVML */
    assert_int_equal(gpumetrics_sample(NULL, GPUMETRICS_ALL, &u, &m), -1);
    assert_int_equal(gpumetrics_count(NULL), 0);
    gpumetrics_close(NULL);
}

static void test_fake_nvml(void **state)
{
    const char *lib = getenv("TY_TEST_FAKE_NVML");
    struct gpumetrics *g;
    double u, m;
    (void)state;
    if (!lib || !*lib)
        skip();
    g = gpumetrics_open(lib);
    assert_non_null(g);
    assert_int_equal(gpumetrics_count(g), 2);
    assert_int_equal(gpumetrics_sample(g, GPUMETRICS_ALL, &u, &m), 0);
    assert_true(u == 90.0 && m == 50.0);
    assert_int_equal(gpumetrics_sample(g, 1, &u, &m), 0); /* a job given GPU 0 */
    assert_true(u == 40.0 && m == 25.0);
    assert_int_equal(gpumetrics_sample(g, 2, &u, &m), 0); /* a job given GPU 1: its own only */
    assert_true(u == 50.0 && m == 25.0);
    assert_int_equal(gpumetrics_sample(g, 4, &u, &m), -1); /* a GPU NVML does not have */
    gpumetrics_close(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_absent_library_means_no_metrics),
        cmocka_unit_test(test_fake_nvml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
