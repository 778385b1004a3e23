/*
 * test_volume.c - a job host's volume (volume.c) made for real: its size is what df says, a
 * writer past it gets ENOSPC while the host's disk does not move, a volume the disk cannot
 * promise is refused as capacity, removal unmounts and deletes, and the reaper removes what no
 * one keeps. Skipped where this process cannot mount (not root, no loop devices, no mkfs.ext4).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "volume.h"

static char base[256];

static int setup(void **state)
{
    char why[200];
    (void)state;
    if (!volume_supported(why, sizeof(why))) {
        fprintf(stderr, "test_volume: skipped: %s\n", why);
        return 0;
    }
    snprintf(base, sizeof(base), "/var/tmp/ty-volume-XXXXXX");
    if (!mkdtemp(base))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    char p[512];
    (void)state;
    if (!base[0])
        return 0;
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s/v%d", base, i);
        volume_remove(p);
        rmdir(p);
    }
    rmdir(base);
    return 0;
}

static void path(char *out, size_t n, int i)
{
    snprintf(out, n, "%s/v%d", base, i);
}

/* Writes 1 MiB blocks to file until a write fails; returns the errno of that failure. */
static int fill(const char *file, unsigned long long *written)
{
    static char block[1 << 20];
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600), e = 0;
    *written = 0;
    if (fd < 0)
        return errno;
    memset(block, 'x', sizeof(block));
    for (;;) {
        ssize_t w = write(fd, block, sizeof(block));
        if (w < 0) {
            e = errno;
            break;
        }
        *written += (unsigned long long)w;
        if (*written > (3ULL << 30))
            break; /* never: the volume is 1 GiB */
    }
    close(fd);
    return e;
}

static void test_volume_is_its_size(void **state)
{
    char v[512], f[600], why[200];
    struct ty_err err = {0};
    struct statvfs fs;
    unsigned long long written;
    struct stat st;
    (void)state;
    if (!volume_supported(why, sizeof(why)))
        skip();
    path(v, sizeof(v), 0);
    assert_int_equal(volume_create(v, 1, &err), 0);
    assert_true(volume_mounted(v));
    assert_int_equal(statvfs(v, &fs), 0);
    /* 1 GiB less ext4's own tables: between 0.9 and 1 GiB */
    assert_true((double)fs.f_blocks * fs.f_frsize > 0.9 * (1 << 30));
    assert_true((double)fs.f_blocks * fs.f_frsize <= 1.0 * (1 << 30));
    assert_true(volume_reserved() > (900ULL << 20));
    snprintf(f, sizeof(f), "%s/lost+found", v);
    assert_int_not_equal(stat(f, &st), 0); /* nothing of ext4's shows in /opt/ml */
    snprintf(f, sizeof(f), "%s/big", v);
    assert_int_equal(fill(f, &written), ENOSPC);
    assert_true(written > (900ULL << 20) && written <= (1ULL << 30));
    /* what was written is no longer promised: the reservation shrank as much */
    assert_true(volume_reserved() < (100ULL << 20));
    /* the same dir cannot take a second volume while one is mounted */
    assert_int_equal(volume_create(v, 1, &err), -TY_EIO);
    assert_int_equal(volume_remove(v), 0);
    assert_false(volume_mounted(v));
    snprintf(f, sizeof(f), "%s.img", v);
    assert_int_not_equal(stat(f, &st), 0);
    assert_int_equal(volume_remove(v), 0); /* idempotent */
    assert_true(volume_reserved() < (1ULL << 20));
}

static void test_volume_capacity(void **state)
{
    char v[512], why[200];
    struct ty_err err = {0};
    struct statvfs fs;
    (void)state;
    if (!volume_supported(why, sizeof(why)))
        skip();
    path(v, sizeof(v), 1);
    assert_int_equal(statvfs(base, &fs), 0);
    if ((double)fs.f_bavail * fs.f_frsize > (double)VOLUME_MAX_GB * (1ULL << 30))
        skip(); /* a disk of more than 16 TiB free: nothing to refuse */
    assert_int_equal(volume_create(v, VOLUME_MAX_GB, &err), -TY_ELIMIT);
    assert_non_null(strstr(err.msg, "CapacityError"));
    assert_non_null(strstr(err.msg, "16384 GB"));
    assert_false(volume_mounted(v));
    assert_int_equal(volume_create(v, 0, &err), -TY_EINVAL);
    assert_int_equal(volume_create(v, VOLUME_MAX_GB + 1, &err), -TY_EINVAL);
}

/* A volume an earlier agent made (here: a child process that exits without removing it) is
   counted again once adopted, and only once. */
static void test_volume_adopt(void **state)
{
    char v[512], why[200];
    struct ty_err err = {0};
    unsigned long long before;
    pid_t pid;
    int status = 0;
    (void)state;
    if (!volume_supported(why, sizeof(why)))
        skip();
    path(v, sizeof(v), 1);
    assert_int_equal(volume_adopt(v, 1, &err), -TY_ENOTFOUND);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(volume_create(v, 1, &err) == 0 ? 0 : 1);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(volume_mounted(v));
    before = volume_reserved();
    assert_int_equal(volume_adopt(v, 1, &err), 0);
    assert_true(volume_reserved() > before + (900ULL << 20));
    assert_int_equal(volume_adopt(v, 1, &err), 0); /* once */
    assert_true(volume_reserved() < before + (1100ULL << 20));
    assert_int_equal(volume_remove(v), 0);
    assert_true(volume_reserved() <= before);
}

static int keep_v2(const char *dir, void *ud)
{
    (*(int *)ud)++;
    return strstr(dir, "/v2") != NULL;
}

static void test_volume_reap(void **state)
{
    char v2[512], v3[512], why[200];
    struct ty_err err = {0};
    int asked = 0;
    (void)state;
    if (!volume_supported(why, sizeof(why)))
        skip();
    path(v2, sizeof(v2), 2);
    path(v3, sizeof(v3), 3);
    assert_int_equal(volume_create(v2, 1, &err), 0);
    assert_int_equal(volume_create(v3, 2, &err), 0);
    assert_int_equal(volume_reap(base, keep_v2, &asked), 1);
    assert_int_equal(asked, 2);
    assert_true(volume_mounted(v2));
    assert_false(volume_mounted(v3));
    assert_int_equal(volume_remove(v2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_volume_is_its_size),
        cmocka_unit_test(test_volume_capacity),
        cmocka_unit_test(test_volume_adopt),
        cmocka_unit_test(test_volume_reap),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
