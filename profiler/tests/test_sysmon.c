/*
 * test_sysmon.c - the system monitor runs for real: files land under
 * system/incremental/<YYYYMMDDHH>/<epoch>.<node>.json and every line is a SageMaker system
 * metric record (Type, Name, Dimension, Value, NodeId, Timestamp in epoch seconds).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "typrof_int.h"

static int all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

static void test_sysmon_writes_sagemaker_lines(void **state)
{
    (void)state;
    char dir[] = "/tmp/typrof-test-sysmon-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct typrof_sysmon *s = NULL;
    struct typrof_sysmon_opts o = {dir, "algo-7", 100, 0};
    double t0 = (double)time(NULL);
    assert_int_equal(typrof__sysmon_start(&o, &s), 0);
    struct timespec ts = {0, 450 * 1000000L};
    nanosleep(&ts, NULL);
    typrof__sysmon_stop(s);
    double t1 = (double)time(NULL) + 1;

    char inc[512];
    snprintf(inc, sizeof(inc), "%s/system/incremental", dir);
    DIR *d = opendir(inc);
    assert_non_null(d);
    struct dirent *h, *f;
    int files = 0, cpu0 = 0, mem = 0, lines = 0, net = 0, disk = 0, iow = 0;
    while ((h = readdir(d))) {
        if (h->d_name[0] == '.')
            continue;
        assert_int_equal(strlen(h->d_name), 10); /* YYYYMMDDHH */
        assert_true(all_digits(h->d_name, 10));
        char hp[1024];
        snprintf(hp, sizeof(hp), "%s/%s", inc, h->d_name);
        DIR *hd = opendir(hp);
        assert_non_null(hd);
        while ((f = readdir(hd))) {
            if (f->d_name[0] == '.')
                continue;
            /* <10 digits>.algo-7.json, the pattern smdebug's reader matches */
            assert_true(strlen(f->d_name) == 10 + strlen(".algo-7.json"));
            assert_true(all_digits(f->d_name, 10));
            assert_string_equal(f->d_name + 10, ".algo-7.json");
            char hour[11];
            typrof__hour_dir(atoll(f->d_name), hour);
            assert_string_equal(hour, h->d_name);
            files++;
            char fp[2048];
            snprintf(fp, sizeof(fp), "%s/%s", hp, f->d_name);
            FILE *in = fopen(fp, "r");
            assert_non_null(in);
            char line[1024];
            while (fgets(line, sizeof(line), in)) {
                json_error_t err;
                json_t *j = json_loads(line, 0, &err);
                assert_non_null(j);
                const char *type = json_string_value(json_object_get(j, "Type"));
                const char *name = json_string_value(json_object_get(j, "Name"));
                const char *dim = json_string_value(json_object_get(j, "Dimension"));
                assert_non_null(type);
                assert_non_null(name);
                assert_non_null(dim);
                assert_true(json_is_number(json_object_get(j, "Value")));
                assert_string_equal(json_string_value(json_object_get(j, "NodeId")), "algo-7");
                double t = json_number_value(json_object_get(j, "Timestamp"));
                assert_true(t >= t0 - 1 && t <= t1);
                double v = json_number_value(json_object_get(j, "Value"));
                if (!strcmp(name, "cpu0")) {
                    assert_string_equal(type, "cpu");
                    assert_string_equal(dim, "CPUUtilization");
                    assert_true(v >= 0 && v <= 100);
                    cpu0++;
                }
                if (!strcmp(name, "MemoryUsedPercent")) {
                    assert_true(v > 0 && v <= 100);
                    mem++;
                }
                net += !strcmp(type, "network");
                disk += !strcmp(type, "disk");
                iow += !strcmp(dim, "IOWait");
                lines++;
                json_decref(j);
            }
            fclose(in);
        }
        closedir(hd);
    }
    closedir(d);
    assert_true(files >= 1);
    assert_true(cpu0 >= 3); /* ~4 ticks + the tail sample */
    assert_int_equal(mem, cpu0);
    assert_int_equal(net, 2 * cpu0);
    assert_int_equal(disk, 2 * cpu0);
    assert_int_equal(iow, cpu0);
    assert_true(lines > 0);
}

static void test_sysmon_bad_dir(void **state)
{
    (void)state;
    struct typrof_sysmon *s = (struct typrof_sysmon *)0x1;
    struct typrof_sysmon_opts o = {"/proc/typrof-cannot-write", "algo-1", 100, 1};
    assert_int_equal(typrof__sysmon_start(&o, &s), -TYPROF_EIO);
    assert_ptr_equal(s, (struct typrof_sysmon *)0x1); /* out-param untouched on failure */
    typrof__sysmon_stop(NULL);
}

static void test_sysmon_nvml(void **state)
{
    (void)state;
    const char *fake = getenv("TYPROF_TEST_FAKE_NVML");
    if (!fake)
        skip();
    setenv("TYPROF_NVML_LIB", fake, 1);
    char dir[] = "/tmp/typrof-test-nvml-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct typrof_sysmon *s = NULL;
    struct typrof_sysmon_opts o = {dir, "algo-2", 50, 0};
    assert_int_equal(typrof__sysmon_start(&o, &s), 0);
    assert_int_equal(typrof__sysmon_gpus(s), 2);
    typrof__sysmon_set_interval(s, 40);
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    assert_true(typrof__sysmon_samples(s) >= 2);
    typrof__sysmon_stop(s);
    unsetenv("TYPROF_NVML_LIB");
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "cat %s/system/incremental/*/*.algo-2.json", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[1024];
    int g0 = 0, g1 = 0, mem = 0;
    while (fgets(line, sizeof(line), p)) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        const char *type = json_string_value(json_object_get(j, "Type"));
        const char *name = json_string_value(json_object_get(j, "Name"));
        const char *dim = json_string_value(json_object_get(j, "Dimension"));
        double v = json_number_value(json_object_get(j, "Value"));
        if (!strcmp(type, "gpu") && !strcmp(dim, "GPUUtilization")) {
            if (!strcmp(name, "gpu0") && v == 40)
                g0++;
            if (!strcmp(name, "gpu1") && v == 50)
                g1++;
        }
        if (!strcmp(type, "gpu") && !strcmp(dim, "GPUMemoryUtilization") && v == 25)
            mem++;
        json_decref(j);
    }
    pclose(p);
    assert_true(g0 >= 2);
    assert_int_equal(g0, g1);
    assert_int_equal(mem, 2 * g0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sysmon_writes_sagemaker_lines),
        cmocka_unit_test(test_sysmon_bad_dir),
        cmocka_unit_test(test_sysmon_nvml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
