/*
 * test_rules.c - every built-in rule fires on crafted metrics and stays quiet on healthy ones;
 * parameters override defaults; the loader reads a real output layout and skips torn lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rules.h"

#define N 1600 /* more than the default patience (1000) */

typedef double (*gen_fn)(size_t i);

static void fill(struct typrof_metrics *m, const char *name, const char *dim, gen_fn g)
{
    for (size_t i = 0; i < N; i++)
        assert_int_equal(typrof__metrics_add(m, name, dim, 1000.0 + (double)i * 0.5, g(i)), 0);
}

static double v5(size_t i)
{
    (void)i;
    return 5;
}
static double v20(size_t i)
{
    (void)i;
    return 20;
}
static double v30(size_t i)
{
    (void)i;
    return 30;
}
static double v60(size_t i)
{
    (void)i;
    return 60;
}
static double v90(size_t i)
{
    (void)i;
    return 90;
}
static double v95(size_t i)
{
    (void)i;
    return 95;
}
static double vflip(size_t i)
{
    return i % 4 == 0 ? 0 : 95;
}
static double vrise(size_t i)
{
    return 10 + (double)i * 0.05;
}

static enum typrof_rule_status eval(const char *rule, struct typrof_metrics *m,
                                    const char *const *params, size_t np)
{
    struct typrof_rule_result r;
    assert_int_equal(typrof__rule_eval(rule, m, params, np, &r), 0);
    assert_string_equal(r.rule, rule);
    return r.status;
}

static void fresh(struct typrof_metrics *m)
{
    memset(m, 0, sizeof(*m));
    m->first_step_s = -1;
}

static void test_low_gpu(void **state)
{
    (void)state;
    struct typrof_metrics m;
    fresh(&m);
    fill(&m, "gpu0", "GPUUtilization", v20);
    assert_int_equal(eval("LowGPUUtilization", &m, NULL, 0), TYPROF_ISSUES);
    const char *p[] = {"threshold_p95=10"};
    assert_int_equal(eval("LowGPUUtilization", &m, p, 1), TYPROF_NO_ISSUES);
    /* smdebug_rulesconfig's scheduling parameters are accepted and change nothing */
    const char *sched[] = {"threshold_p95=10", "scan_interval_us=60000000", "mode=TRAIN"};
    assert_int_equal(eval("LowGPUUtilization", &m, sched, 3), TYPROF_NO_ISSUES);
    const char *bad[] = {"nope=1"};
    assert_int_equal(eval("LowGPUUtilization", &m, bad, 1), TYPROF_RULE_ERROR);
    const char *bad2[] = {"window=abc"};
    assert_int_equal(eval("LowGPUUtilization", &m, bad2, 1), TYPROF_RULE_ERROR);
    typrof__metrics_cleanup(&m);
    fill(&m, "gpu0", "GPUUtilization", v95);
    assert_int_equal(eval("LowGPUUtilization", &m, NULL, 0), TYPROF_NO_ISSUES);
    typrof__metrics_cleanup(&m);
    fill(&m, "gpu0", "GPUUtilization", vflip);
    assert_int_equal(eval("LowGPUUtilization", &m, NULL, 0), TYPROF_ISSUES);
    typrof__metrics_cleanup(&m);
    /* no gpu: not evaluated, not a pass */
    assert_int_equal(eval("LowGPUUtilization", &m, NULL, 0), TYPROF_NO_DATA);
    struct typrof_rule_result r;
    assert_int_equal(typrof__rule_eval("NoSuchRule", &m, NULL, 0, &r), -1);
}

static void test_bottlenecks(void **state)
{
    (void)state;
    struct typrof_metrics m;
    fresh(&m);
    fill(&m, "cpu0", "CPUUtilization", v95);
    fill(&m, "cpu1", "CPUUtilization", v95);
    fill(&m, "gpu0", "GPUUtilization", v5);
    fill(&m, "cpu_iowait", "IOWait", v60);
    assert_int_equal(eval("CPUBottleneck", &m, NULL, 0), TYPROF_ISSUES);
    assert_int_equal(eval("IOBottleneck", &m, NULL, 0), TYPROF_ISSUES);
    typrof__metrics_cleanup(&m);
    fill(&m, "cpu0", "CPUUtilization", v30);
    fill(&m, "gpu0", "GPUUtilization", v90);
    fill(&m, "cpu_iowait", "IOWait", v5);
    assert_int_equal(eval("CPUBottleneck", &m, NULL, 0), TYPROF_NO_ISSUES);
    assert_int_equal(eval("IOBottleneck", &m, NULL, 0), TYPROF_NO_ISSUES);
    typrof__metrics_cleanup(&m);
}

static void test_memory_and_batch(void **state)
{
    (void)state;
    struct typrof_metrics m;
    fresh(&m);
    fill(&m, "gpu0", "GPUMemoryUtilization", vrise);
    assert_int_equal(eval("GPUMemoryIncrease", &m, NULL, 0), TYPROF_NO_ISSUES); /* +0.5/window */
    const char *p[] = {"window=200"};                                           /* +10/window */
    assert_int_equal(eval("GPUMemoryIncrease", &m, p, 1), TYPROF_ISSUES);
    typrof__metrics_cleanup(&m);
    fill(&m, "gpu0", "GPUMemoryUtilization", v30);
    assert_int_equal(eval("GPUMemoryIncrease", &m, p, 1), TYPROF_NO_ISSUES);
    typrof__metrics_cleanup(&m);

    fill(&m, "cpu0", "CPUUtilization", v30);
    fill(&m, "gpu0", "GPUUtilization", v30);
    fill(&m, "gpu0", "GPUMemoryUtilization", v30);
    assert_int_equal(eval("BatchSize", &m, NULL, 0), TYPROF_ISSUES);
    typrof__metrics_cleanup(&m);
    fill(&m, "cpu0", "CPUUtilization", v30);
    fill(&m, "gpu0", "GPUUtilization", v95);
    fill(&m, "gpu0", "GPUMemoryUtilization", v30);
    assert_int_equal(eval("BatchSize", &m, NULL, 0), TYPROF_NO_ISSUES);
    typrof__metrics_cleanup(&m);
}

static void test_steps_and_init(void **state)
{
    (void)state;
    struct typrof_metrics m;
    fresh(&m);
    assert_int_equal(eval("MaxInitializationTime", &m, NULL, 0), TYPROF_NO_DATA);
    m.first_step_s = 25 * 60;
    assert_int_equal(eval("MaxInitializationTime", &m, NULL, 0), TYPROF_ISSUES);
    m.first_step_s = 30;
    assert_int_equal(eval("MaxInitializationTime", &m, NULL, 0), TYPROF_NO_ISSUES);
    m.first_step_s = -1;
    m.run_s = 21 * 60;
    assert_int_equal(eval("MaxInitializationTime", &m, NULL, 0), TYPROF_ISSUES);

    m.step_ms = malloc(1011 * sizeof(double));
    for (size_t i = 0; i < 1000; i++)
        m.step_ms[i] = 10.0 + (double)(i % 3) * 0.1;
    m.nsteps = 1000;
    assert_int_equal(eval("StepOutlier", &m, NULL, 0), TYPROF_NO_ISSUES);
    for (size_t i = 1000; i < 1011; i++)
        m.step_ms[i] = 500;
    m.nsteps = 1011;
    assert_int_equal(eval("StepOutlier", &m, NULL, 0), TYPROF_ISSUES);
    const char *p[] = {"n_outliers=20"};
    assert_int_equal(eval("StepOutlier", &m, p, 1), TYPROF_NO_ISSUES);
    typrof__metrics_cleanup(&m);
}

static void test_load_balancing(void **state)
{
    (void)state;
    struct typrof_metrics m;
    fresh(&m);
    fill(&m, "gpu0", "GPUUtilization", v90);
    assert_int_equal(eval("LoadBalancing", &m, NULL, 0), TYPROF_NO_DATA); /* one gpu */
    fill(&m, "gpu1", "GPUUtilization", v20);
    assert_int_equal(eval("LoadBalancing", &m, NULL, 0), TYPROF_ISSUES);
    typrof__metrics_cleanup(&m);
    fill(&m, "gpu0", "GPUUtilization", v90);
    fill(&m, "gpu1", "GPUUtilization", v95);
    assert_int_equal(eval("LoadBalancing", &m, NULL, 0), TYPROF_NO_ISSUES);
    typrof__metrics_cleanup(&m);
}

static void test_loader(void **state)
{
    (void)state;
    char dir[] = "/tmp/typrof-test-rules-XXXXXX", p[512];
    assert_non_null(mkdtemp(dir));
    snprintf(p, sizeof(p), "%s/system", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/system/incremental", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/system/incremental/2020060305", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/system/incremental/2020060305/1591160699.algo-1.json", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    /* out of order on purpose, and a torn last line */
    fputs("{\"Type\":\"cpu\",\"Name\":\"cpu0\",\"Dimension\":\"CPUUtilization\",\"Value\":7,"
          "\"NodeId\":\"algo-1\",\"Timestamp\":1591160700.5}\n"
          "{\"Type\":\"cpu\",\"Name\":\"cpu0\",\"Dimension\":\"CPUUtilization\",\"Value\":4.76,"
          "\"NodeId\":\"algo-1\",\"Timestamp\":1591160699.4570894}\n"
          "{\"Type\":\"gpu\",\"Name\":\"gpu0\",\"Dimension\":\"GPUUtilization\",\"Val",
          f);
    fclose(f);
    snprintf(p, sizeof(p), "%s/summary", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/summary/algo-1.1.summary.json", dir);
    f = fopen(p, "w");
    fputs("{\"duration_s\":12.5,\"steps\":{\"count\":3,\"first_step_start_s\":2.5,"
          "\"durations_ms\":[10,11,12]}}\n",
          f);
    fclose(f);
    struct typrof_metrics m;
    assert_int_equal(typrof__metrics_load(dir, &m), 0);
    assert_int_equal(m.files, 1);
    assert_int_equal(m.bad_lines, 1);
    const struct typrof_series *s = typrof__metrics_find(&m, "cpu0", "CPUUtilization");
    assert_non_null(s);
    assert_int_equal(s->n, 2);
    assert_true(s->v[0] == 4.76 && s->v[1] == 7);
    assert_null(typrof__metrics_find(&m, "gpu0", "GPUUtilization"));
    assert_int_equal(m.nsteps, 3);
    assert_true(m.first_step_s == 2.5);
    assert_true(m.run_s == 12.5);
    typrof__metrics_cleanup(&m);
    assert_int_equal(typrof__metrics_load("/nonexistent/typrof", &m), -1);
    typrof__metrics_cleanup(&m);

    size_t n;
    const struct typrof_rule_def *d = typrof__rules(&n);
    assert_int_equal(n, 8);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(d[i].doc);
        assert_non_null(d[i].param[0]);
        assert_non_null(d[i].pdoc[0]);
    }
}

/* Without the data a rule needs, every rule says NoData ("not evaluated"), never
   NoIssuesFound: no series at all, CPU-only metrics, or fewer datapoints than patience. */
static void test_no_data(void **state)
{
    (void)state;
    struct typrof_metrics m;
    size_t nr;
    const struct typrof_rule_def *defs = typrof__rules(&nr);
    struct typrof_rule_result r;
    fresh(&m);
    for (size_t i = 0; i < nr; i++) {
        assert_int_equal(typrof__rule_eval(defs[i].name, &m, NULL, 0, &r), 0);
        assert_int_equal(r.status, TYPROF_NO_DATA);
        assert_non_null(strstr(r.detail, "not evaluated"));
        assert_string_equal(typrof__rule_status_name(r.status), "NoData");
    }
    /* a CPU-only run: the GPU rules are not evaluated either */
    fill(&m, "cpu0", "CPUUtilization", v95);
    fill(&m, "cpu_iowait", "IOWait", v60);
    for (size_t i = 0; i < nr; i++) {
        assert_int_equal(typrof__rule_eval(defs[i].name, &m, NULL, 0, &r), 0);
        assert_int_equal(r.status, TYPROF_NO_DATA);
    }
    typrof__metrics_cleanup(&m);
    /* GPU data, but no more datapoints than patience */
    for (int k = 0; k < 10; k++) {
        typrof__metrics_add(&m, "cpu0", "CPUUtilization", k, 50);
        typrof__metrics_add(&m, "gpu0", "GPUUtilization", k, 5);
        typrof__metrics_add(&m, "gpu0", "GPUMemoryUtilization", k, 5);
        typrof__metrics_add(&m, "gpu1", "GPUUtilization", k, 95);
        typrof__metrics_add(&m, "cpu_iowait", "IOWait", k, 0);
    }
    const char *gpu_rules[] = {"LowGPUUtilization", "CPUBottleneck", "IOBottleneck",
                               "GPUMemoryIncrease", "BatchSize",     "LoadBalancing"};
    for (size_t i = 0; i < sizeof(gpu_rules) / sizeof(gpu_rules[0]); i++) {
        assert_int_equal(typrof__rule_eval(gpu_rules[i], &m, NULL, 0, &r), 0);
        assert_int_equal(r.status, TYPROF_NO_DATA);
    }
    const char *p0[] = {"patience=0"};
    assert_int_equal(typrof__rule_eval("LowGPUUtilization", &m, p0, 1, &r), 0);
    assert_int_equal(r.status, TYPROF_ISSUES); /* now it has data: gpu0 underused */
    typrof__metrics_cleanup(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_low_gpu),          cmocka_unit_test(test_bottlenecks),
        cmocka_unit_test(test_memory_and_batch), cmocka_unit_test(test_steps_and_init),
        cmocka_unit_test(test_load_balancing),   cmocka_unit_test(test_loader),
        cmocka_unit_test(test_no_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
