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
                /* epoch seconds (not ms, not a monotonic clock); time() is the coarse clock
                   and the sampler reads CLOCK_REALTIME, which a slewing or stepping machine
                   clock sets apart by more than a second now and then: a minute of slack */
                assert_true(t >= t0 - 60 && t <= t1 + 60);
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

/* /proc/net/dev text with the given interface lines. OUT: count parsed into dev. */
static size_t net_text(const char *ifaces, struct typrof_devctr *dev)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "Inter-|   Receive                            |  Transmit\n"
             " face |bytes    packets errs drop fifo frame compressed multicast|bytes ...\n"
             "    lo: 999999 10 0 0 0 0 0 0 999999 10 0 0 0 0 0 0\n%s",
             ifaces);
    FILE *f = fmemopen(buf, strlen(buf), "r");
    assert_non_null(f);
    size_t n = typrof__net_parse(f, dev, TYPROF_DEV_MAX);
    fclose(f);
    return n;
}

/* Rates are per-interface deltas: an interface that disappears, appears, or whose counter goes
 * backwards (reset, a new veth of the same name) contributes nothing; a sum of counters over
 * interfaces with an unsigned difference gave -9.2e16 B/s before. */
static void test_net_per_interface(void **state)
{
    (void)state;
    static struct typrof_devctr a[TYPROF_DEV_MAX], b[TYPROF_DEV_MAX];
    uint64_t rx, tx;
    size_t na = net_text("  eth0: 1000 1 0 0 0 0 0 0 2000 1 0 0 0 0 0 0\n"
                         "veth9: 5000000 1 0 0 0 0 0 0 7000000 1 0 0 0 0 0 0\n",
                         a);
    assert_int_equal(na, 2); /* lo left out */
    assert_string_equal(a[0].name, "eth0");
    assert_int_equal(a[1].a, 5000000);
    assert_int_equal(a[1].b, 7000000);
    /* veth9 is gone, eth0 grew by 500/300: the sum of counters fell, the rate does not */
    size_t nb = net_text("  eth0: 1500 1 0 0 0 0 0 0 2300 1 0 0 0 0 0 0\n", b);
    typrof__dev_delta(a, na, b, nb, &rx, &tx);
    assert_int_equal(rx, 500);
    assert_int_equal(tx, 300);
    /* eth0's counters went backwards (driver reset) and eth1 is new: nothing from either */
    na = net_text("  eth0: 10 1 0 0 0 0 0 0 20 1 0 0 0 0 0 0\n"
                  "  eth1: 4000 1 0 0 0 0 0 0 4000 1 0 0 0 0 0 0\n",
                  a);
    typrof__dev_delta(b, nb, a, na, &rx, &tx);
    assert_int_equal(rx, 0);
    assert_int_equal(tx, 0);
    /* one counter backwards, the other forwards: only the forward one counts */
    nb = net_text("  eth0: 5 1 0 0 0 0 0 0 120 1 0 0 0 0 0 0\n"
                  "  eth1: 4100 1 0 0 0 0 0 0 4000 1 0 0 0 0 0 0\n",
                  b);
    typrof__dev_delta(a, na, b, nb, &rx, &tx);
    assert_int_equal(rx, 100);
    assert_int_equal(tx, 100);
    /* nothing before, nothing now */
    typrof__dev_delta(a, 0, b, nb, &rx, &tx);
    assert_int_equal(rx + tx, 0);
    typrof__dev_delta(a, na, b, 0, &rx, &tx);
    assert_int_equal(rx + tx, 0);
}

static int only_sd(const char *name)
{
    return strncmp(name, "sd", 2) == 0 && strlen(name) == 3;
}

static void test_disk_per_device(void **state)
{
    (void)state;
    static struct typrof_devctr a[TYPROF_DEV_MAX], b[TYPROF_DEV_MAX];
    const char *t1 = "   8       0 sda 10 0 100 0 20 0 200 0 0 0 0\n"
                     "   8       1 sda1 10 0 100 0 20 0 200 0 0 0 0\n"
                     "   8      16 sdb 1 0 8 0 1 0 8 0 0 0 0\n";
    const char *t2 = "   8       0 sda 12 0 110 0 22 0 204 0 0 0 0\n";
    FILE *f = fmemopen((void *)t1, strlen(t1), "r");
    size_t na = typrof__disk_parse(f, only_sd, a, TYPROF_DEV_MAX);
    fclose(f);
    assert_int_equal(na, 2);
    assert_int_equal(a[0].a, 100 * 512);
    f = fmemopen((void *)t2, strlen(t2), "r");
    size_t nb = typrof__disk_parse(f, only_sd, b, TYPROF_DEV_MAX);
    fclose(f);
    uint64_t rd, wr;
    typrof__dev_delta(a, na, b, nb, &rd, &wr); /* sdb detached: sda's growth only */
    assert_int_equal(rd, 10 * 512);
    assert_int_equal(wr, 4 * 512);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sysmon_writes_sagemaker_lines),
        cmocka_unit_test(test_sysmon_bad_dir),
        cmocka_unit_test(test_sysmon_nvml),
        cmocka_unit_test(test_net_per_interface),
        cmocka_unit_test(test_disk_per_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
