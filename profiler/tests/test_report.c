/*
 * test_report.c - typrof_report.h end to end on a synthetic output directory of a run that
 * never loaded CUDA (run.json and system metrics only): the merged timeline has the process
 * span and the system counters, the dashboard has every section, and the rules say NoData
 * where they lack data. Uses the public header only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "typrof_report.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    long n;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = calloc(1, (size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

/* A CPU-only run: 20 samples of cpu0, memory and network, and run.json of `sleep 2`. */
static void make_run(const char *dir)
{
    char p[512];
    FILE *f;
    snprintf(p, sizeof(p), "%s/system", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/system/incremental", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/system/incremental/2026120307", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/system/incremental/2026120307/1796281100.algo-1.json", dir);
    f = fopen(p, "w");
    assert_non_null(f);
    for (int i = 0; i < 20; i++) {
        double t = 1796281100.0 + 0.1 * i;
        fprintf(f,
                "{\"Type\":\"cpu\",\"Name\":\"cpu0\",\"Dimension\":\"CPUUtilization\","
                "\"Value\":%d,\"NodeId\":\"algo-1\",\"Timestamp\":%.3f}\n",
                10 + i, t);
        fprintf(f,
                "{\"Type\":\"memory\",\"Name\":\"MemoryUsedPercent\",\"Dimension\":\"Memory\","
                "\"Value\":40,\"NodeId\":\"algo-1\",\"Timestamp\":%.3f}\n",
                t);
        fprintf(f,
                "{\"Type\":\"network\",\"Name\":\"net\",\"Dimension\":\"ReceiveBytesPerSecond\","
                "\"Value\":1000,\"NodeId\":\"algo-1\",\"Timestamp\":%.3f}\n",
                t);
    }
    fclose(f);
    snprintf(p, sizeof(p), "%s/run.json", dir);
    f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "{\"exit_code\":0,\"wall_s\":2.0,\"interval_ms\":100,\"pid\":4242,"
               "\"start_ns\":1796281100000000000,\"end_ns\":1796281102000000000,"
               "\"command\":[\"sleep\",\"2\"]}\n");
    fclose(f);
}

static void test_timeline_without_cuda(void **state)
{
    char dir[] = "/tmp/typrof-test-report-XXXXXX", p[512];
    json_error_t je;
    (void)state;
    assert_non_null(mkdtemp(dir));
    make_run(dir);
    struct typrof_report_opts o = {NULL, NULL, NULL, 0};
    assert_int_equal(typrof_report_write(dir, &o), 0);

    snprintf(p, sizeof(p), "%s/timeline.trace.json", dir);
    json_t *tl = json_load_file(p, 0, &je);
    assert_non_null(tl);
    json_t *ev = json_object_get(tl, "traceEvents"), *e;
    size_t i, spans = 0, counters = 0;
    assert_true(json_array_size(ev) > 0);
    json_array_foreach(ev, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!strcmp(ph, "X") && !strcmp(json_string_value(json_object_get(e, "name")), "command")) {
            spans++;
            assert_int_equal(json_integer_value(json_object_get(e, "pid")), 4242);
            /* 2 s in µs, starting at the base (the run's start is the earliest time) */
            assert_true(fabs(json_number_value(json_object_get(e, "dur")) - 2e6) < 1);
            assert_true(fabs(json_number_value(json_object_get(e, "ts"))) < 1);
        }
        if (!strcmp(ph, "C")) {
            counters++;
            assert_non_null(json_object_get(json_object_get(e, "args"), "value"));
        }
    }
    assert_int_equal(spans, 1);
    assert_int_equal(counters, 60);
    json_decref(tl);

    snprintf(p, sizeof(p), "%s/report.html", dir);
    char *html = slurp(p);
    assert_non_null(html);
    const char *sections[] = {"id=\"sec-util\"",    "id=\"sec-rules\"", "id=\"sec-kernels\"",
                              "id=\"sec-latency\"", "id=\"sec-steps\"", "id=\"sec-timeline\"",
                              "class=\"trace\""};
    for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        assert_non_null(strstr(html, sections[i]));
    assert_non_null(strstr(html, "\"status\":\"NoData\""));
    assert_null(strstr(html, "\"status\":\"NoIssuesFound\"")); /* nothing to judge here */
    free(html);

    /* the rules through the public API */
    struct typrof_data *d;
    struct typrof_rule_outcome r;
    const char *bad[] = {"window=x"};
    assert_int_equal(typrof_data_load(dir, &d), 0);
    assert_int_equal(typrof_rule_run(d, "LowGPUUtilization", NULL, 0, &r), 0);
    assert_string_equal(r.status, "NoData");
    assert_int_equal(typrof_rule_run(d, "LowGPUUtilization", bad, 1, &r), 0);
    assert_string_equal(r.status, "Error");
    assert_int_equal(typrof_rule_run(d, "NoSuchRule", NULL, 0, &r), -1);
    typrof_data_free(d);
    assert_int_equal(typrof_data_load("/nonexistent/typrof", &d), -1);

    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeline_without_cuda),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
