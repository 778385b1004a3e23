/*
 * test_runtime.c - the recorder through libtyprof.so's public API, for real: ranges (nested,
 * cross-thread end, bad handles), marks, steps, many threads, rotation by size, stop/restart;
 * InitializeInjection on a machine without a GPU returns 1 and leaves GPU tracing off; the
 * files it writes parse and carry the annotations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "typrof.h"

int InitializeInjection(void); /* exported for the CUDA driver; not in the public header */

static char g_dir[256];

static size_t count_events(const char *dir, const char *ph, const char *name, size_t *files)
{
    char p[512];
    size_t n = 0;
    snprintf(p, sizeof(p), "%s/trace", dir);
    DIR *d = opendir(p);
    struct dirent *e;
    *files = 0;
    assert_non_null(d);
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".trace.json") || strstr(e->d_name, ".tmp"))
            continue;
        char fp[1024];
        snprintf(fp, sizeof(fp), "%s/%s", p, e->d_name);
        json_error_t err;
        json_t *root = json_load_file(fp, 0, &err);
        assert_non_null(root);
        (*files)++;
        json_t *evs = json_object_get(root, "traceEvents"), *ev;
        size_t i;
        json_array_foreach(evs, i, ev)
        {
            const char *eph = json_string_value(json_object_get(ev, "ph"));
            const char *en = json_string_value(json_object_get(ev, "name"));
            if (eph && en && !strcmp(eph, ph) && !strcmp(en, name))
                n++;
        }
        json_decref(root);
    }
    closedir(d);
    return n;
}

static json_t *summary(const char *dir)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/summary", dir);
    DIR *d = opendir(p);
    struct dirent *e;
    json_t *root = NULL;
    assert_non_null(d);
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".summary.json") && !strstr(e->d_name, ".tmp")) {
            char fp[1024];
            snprintf(fp, sizeof(fp), "%s/%s", p, e->d_name);
            json_error_t err;
            root = json_load_file(fp, 0, &err);
        }
    closedir(d);
    assert_non_null(root);
    return root;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 200; i++) {
        uint64_t h = typrof_range_begin("worker");
        uint64_t h2 = typrof_range_begin("inner");
        typrof_range_end(h2);
        typrof_range_end(h);
    }
    return NULL;
}

static uint64_t g_cross;
static void *ender(void *arg)
{
    (void)arg;
    typrof_range_end(g_cross);
    return NULL;
}

static void test_inactive_is_noop(void **state)
{
    (void)state;
    assert_int_equal(typrof_is_active(), 0);
    assert_int_equal(typrof_range_begin("x"), 0);
    typrof_range_end(0);
    typrof_mark("x");
    typrof_step_begin(1);
    typrof_step_end(1);
    assert_int_equal(typrof_stop(), -TYPROF_ESTATE);
    assert_int_equal(typrof_flush(), -TYPROF_ESTATE);
    assert_true(typrof_now_ns() > 1500000000ull * 1000000000ull);
    assert_string_equal(typrof_version(), TY_VERSION);
}

static void test_record_annotations(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/typrof-test-rt-XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    assert_int_equal(typrof_start(g_dir), 0);
    assert_int_equal(typrof_start(g_dir), -TYPROF_ESTATE);
    assert_int_equal(typrof_is_active(), 1);
    struct typrof_allocators a = {malloc, calloc, realloc, free};
    assert_int_equal(typrof_set_allocators(&a), -TYPROF_ESTATE);

    /* without a GPU the injection entry point succeeds and tracing stays off */
    assert_int_equal(InitializeInjection(), 1);
    assert_int_equal(typrof_gpu_tracing(), 0);

    uint64_t outer = typrof_range_begin("train");
    assert_true(outer != 0);
    for (int s = 0; s < 3; s++) {
        typrof_step_begin(s);
        uint64_t f = typrof_range_begin("forward");
        typrof_range_end(f);
        typrof_range_end(f); /* second end ignored */
        typrof_mark("after_forward");
        typrof_step_end(s);
    }
    typrof_step_end(99);         /* no open step 99: ignored */
    typrof_range_end(123456789); /* unknown handle: ignored */
    g_cross = typrof_range_begin("cross_thread");
    pthread_t t[4], e;
    pthread_create(&e, NULL, ender, NULL);
    pthread_join(e, NULL);
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    (void)typrof_range_begin("left_open"); /* closed by stop */
    typrof_range_end(outer);
    assert_int_equal(typrof_stop(), 0);
    assert_int_equal(typrof_is_active(), 0);

    size_t files;
    assert_int_equal(count_events(g_dir, "X", "forward", &files), 3);
    assert_int_equal(files, 1);
    assert_int_equal(count_events(g_dir, "X", "worker", &files), 800);
    assert_int_equal(count_events(g_dir, "X", "inner", &files), 800);
    assert_int_equal(count_events(g_dir, "X", "Step", &files), 3);
    assert_int_equal(count_events(g_dir, "i", "after_forward", &files), 3);
    assert_int_equal(count_events(g_dir, "X", "cross_thread", &files), 1);
    assert_int_equal(count_events(g_dir, "X", "left_open", &files), 1);
    assert_int_equal(count_events(g_dir, "X", "train", &files), 1);

    json_t *s = summary(g_dir);
    assert_false(json_is_true(json_object_get(s, "gpu_tracing")));
    assert_non_null(json_string_value(json_object_get(s, "gpu_note")));
    json_t *st = json_object_get(s, "steps");
    assert_int_equal(json_integer_value(json_object_get(st, "count")), 3);
    assert_int_equal(json_array_size(json_object_get(st, "durations_ms")), 3);
    assert_true(json_number_value(json_object_get(st, "first_step_start_s")) >= 0);
    json_t *top = json_object_get(json_object_get(s, "annotations"), "top_by_total");
    assert_true(json_array_size(top) >= 5);
    json_decref(s);
}

static void test_rotation_and_restart(void **state)
{
    (void)state;
    char dir[] = "/tmp/typrof-test-rot-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("TYPROF_ROTATE_BYTES", "100000", 1); /* ~500 events per file */
    assert_int_equal(typrof_start(dir), 0);
    for (int i = 0; i < 3000; i++) {
        typrof_mark("tick");
        if (i % 500 == 0)
            usleep(300 * 1000); /* let the rotation thread run */
    }
    assert_int_equal(typrof_flush(), 0);
    assert_int_equal(typrof_stop(), 0);
    unsetenv("TYPROF_ROTATE_BYTES");
    size_t files;
    assert_int_equal(count_events(dir, "i", "tick", &files), 3000);
    assert_true(files >= 3);
    /* a second session in the same process */
    assert_int_equal(typrof_start(dir), 0);
    typrof_mark("again");
    assert_int_equal(typrof_stop(), 0);
    assert_int_equal(count_events(dir, "i", "again", &files), 1);
}

static volatile int g_spin;

static void *hammer(void *arg)
{
    (void)arg;
    while (g_spin) {
        uint64_t h = typrof_range_begin("hammer");
        typrof_mark("m");
        typrof_range_end(h);
    }
    return NULL;
}

static void test_stop_while_annotating(void **state)
{
    (void)state;
    char dir[] = "/tmp/typrof-test-race-XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (int round = 0; round < 3; round++) {
        pthread_t t[3];
        assert_int_equal(typrof_start(dir), 0);
        g_spin = 1;
        for (int i = 0; i < 3; i++)
            pthread_create(&t[i], NULL, hammer, NULL);
        usleep(20 * 1000);
        assert_int_equal(typrof_stop(), 0); /* threads keep calling: calls become no-ops */
        usleep(5 * 1000);
        g_spin = 0;
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inactive_is_noop),
        cmocka_unit_test(test_record_annotations),
        cmocka_unit_test(test_rotation_and_restart),
        cmocka_unit_test(test_stop_while_annotating),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
