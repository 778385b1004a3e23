/*
 * test_instmetrics.c - instance metrics arithmetic (agent/instmetrics.h): CPUUtilization as
 * SageMaker counts it (percent of one core summed over cores), memory against the limit, disk
 * of a real directory, and what is unknown on a first sample.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "instmetrics.h"

static void test_compute(void **state)
{
    struct docker_stats a = {1e9, 100e9, 4, 0, 0}, b = {3e9, 101e9, 4, 512, 2048};
    struct instmetrics m;
    (void)state;
    instmetrics_compute(NULL, &b, NULL, &m);
    assert_true(m.cpu < 0 && m.disk < 0); /* first sample: no CPU; no directory: no disk */
    assert_true(fabs(m.mem - 25.0) < 1e-9);
    /* Docker's formula: cpu delta / system delta * online CPUs * 100 = 2 * 4 * 100 */
    instmetrics_compute(&a, &b, "/", &m);
    assert_true(fabs(m.cpu - 800.0) < 1e-9);
    assert_true(m.disk >= 0 && m.disk <= 100);
    /* a counter that went back (container restarted): unknown */
    instmetrics_compute(&b, &a, NULL, &m);
    assert_true(m.cpu < 0 && m.mem < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_compute)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
