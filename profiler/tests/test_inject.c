/*
 * test_inject.c - the CUPTI injection path without a GPU: InitializeInjection loads the fake
 * CUPTI of fake_cupti.c (TYPROF_CUPTI_LIB), registers callbacks and enables activity kinds;
 * flushes move buffers through the queue and worker thread into the trace and summary, with
 * launches joined to kernels by correlation id. Exercises cupti.c, not a real GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typrof.h"

int InitializeInjection(void);

static void test_injection_with_fake_cupti(void **state)
{
    (void)state;
    char dir[] = "/tmp/typrof-test-inject-XXXXXX", p[512];
    assert_non_null(getenv("TYPROF_CUPTI_LIB"));
    assert_non_null(mkdtemp(dir));
    setenv("TYPROF_OUT", dir, 1);
    assert_int_equal(InitializeInjection(), 1); /* starts the recorder and CUPTI */
    assert_int_equal(typrof_is_active(), 1);
    assert_int_equal(typrof_gpu_tracing(), 1);
    uint64_t h = typrof_range_begin("host_side");
    typrof_range_end(h);
    assert_int_equal(typrof_flush(), 0); /* flush 1: 50 launches */
    assert_int_equal(typrof_stop(), 0);  /* flush 2 (+ stop's): more launches */
    assert_int_equal(typrof_gpu_tracing(), 0);

    snprintf(p, sizeof(p), "%s/summary", dir);
    DIR *d = opendir(p);
    struct dirent *e;
    json_t *s = NULL;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".summary.json") && !strstr(e->d_name, ".tmp")) {
            char fp[1024];
            snprintf(fp, sizeof(fp), "%s/%s", p, e->d_name);
            s = json_load_file(fp, 0, NULL);
        }
    if (d)
        closedir(d);
    assert_non_null(s);
    assert_true(json_is_true(json_object_get(s, "gpu_tracing")));
    json_t *k = json_object_get(s, "kernels");
    long long n = json_integer_value(json_object_get(k, "count"));
    assert_true(n >= 100 && n % 50 == 0);
    assert_int_equal(json_integer_value(json_object_get(k, "launches_matched")), n);
    assert_int_equal(json_integer_value(json_object_get(k, "distinct")), 2);
    json_t *lat = json_object_get(s, "launch_latency");
    assert_true(fabs(json_number_value(json_object_get(lat, "p50_us")) - 3.0) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(lat, "p99_us")) - 3.0) < 1e-9);
    json_t *mc = json_array_get(json_object_get(s, "memcpy"), 0);
    assert_string_equal(json_string_value(json_object_get(mc, "kind")), "HtoD");
    json_decref(s);

    /* the trace of the first flush has arrows from every launch to its kernel */
    snprintf(p, sizeof(p), "%s/trace", dir);
    d = opendir(p);
    int flows = 0, kernels = 0;
    while (d && (e = readdir(d))) {
        if (!strstr(e->d_name, ".trace.json") || strstr(e->d_name, ".tmp"))
            continue;
        char fp[1024];
        snprintf(fp, sizeof(fp), "%s/%s", p, e->d_name);
        json_t *t = json_load_file(fp, 0, NULL);
        assert_non_null(t);
        json_t *evs = json_object_get(t, "traceEvents"), *ev;
        size_t i;
        json_array_foreach(evs, i, ev)
        {
            const char *ph = json_string_value(json_object_get(ev, "ph"));
            const char *cat = json_string_value(json_object_get(ev, "cat"));
            flows += ph && !strcmp(ph, "s");
            kernels += ph && cat && !strcmp(ph, "X") && !strcmp(cat, "kernel");
        }
        json_decref(t);
    }
    if (d)
        closedir(d);
    assert_int_equal(kernels, n);
    assert_true(flows >= kernels); /* + the copy's arrow when its call is known */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_injection_with_fake_cupti),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
