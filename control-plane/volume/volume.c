/*
 * volume.c - a job host's disk of its own: sparse image, ext4, loop device, mount (volume.h).
 *
 * Why a loop-mounted image: it needs nothing of the host's file system (project quotas need
 * XFS or ext4 mounted with prjquota; tmpfs is memory, not disk), it bounds everything written
 * below the mount, the agent's staging and the job's own writes alike (ENOSPC at the limit), and
 * `df /opt/ml` in the job shows its size. Measured on the development machine (ext4 host, see
 * bench/volume.sh): about 60 ms per host to create, format and mount a 1 GiB or a 30 GiB volume.
 * The image is sparse: the host's disk holds what the job wrote, and the reservations keep the
 * sum of what the live volumes may still write within the disk's free space.
 */
#define _GNU_SOURCE /* O_CLOEXEC, umount2 */
#include "volume.h"

#include "ty_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/loop.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define VOLUME_GIB        (1024ULL * 1024ULL * 1024ULL)
#define VOLUME_LOOP_TRIES 16
#define VOLUME_OUT_MAX    300

/* One live volume made by this process. */
struct volume__res {
    struct volume__res *next;
    char img[PATH_MAX];
    unsigned long long size;
};

static pthread_mutex_t volume_mu = PTHREAD_MUTEX_INITIALIZER;
static struct volume__res *volume_list; /* guarded by volume_mu */

int volume_supported(char *why, size_t n)
{
    char path[PATH_MAX];
    if (geteuid() != 0) {
        snprintf(why, n, "the agent does not run as root (mounting needs it)");
        return 0;
    }
    if (access("/dev/loop-control", R_OK | W_OK) != 0) {
        snprintf(why, n, "no loop devices (/dev/loop-control: %s; modprobe loop)", strerror(errno));
        return 0;
    }
    if (!ty_proc_find("mkfs.ext4", path, sizeof(path))) {
        snprintf(why, n, "mkfs.ext4 is not installed (Debian: e2fsprogs)");
        return 0;
    }
    return 1;
}

/* Bytes img still may grow by: its size less what it holds on disk. */
static unsigned long long volume_unused(const struct volume__res *v)
{
    struct stat st;
    unsigned long long used;
    if (stat(v->img, &st) != 0)
        return 0;
    used = (unsigned long long)st.st_blocks * 512ULL;
    return used < v->size ? v->size - used : 0;
}

unsigned long long volume_reserved(void)
{
    unsigned long long sum = 0;
    pthread_mutex_lock(&volume_mu);
    for (struct volume__res *v = volume_list; v; v = v->next)
        sum += volume_unused(v);
    pthread_mutex_unlock(&volume_mu);
    return sum;
}

static void volume_forget(const char *img)
{
    pthread_mutex_lock(&volume_mu);
    for (struct volume__res **p = &volume_list; *p; p = &(*p)->next)
        if (strcmp((*p)->img, img) == 0) {
            struct volume__res *v = *p;
            *p = v->next;
            free(v);
            break;
        }
    pthread_mutex_unlock(&volume_mu);
}

int volume_mounted(const char *dir)
{
    char parent[PATH_MAX];
    struct stat a, b;
    int w = snprintf(parent, sizeof(parent), "%s/..", dir);
    if (w < 0 || (size_t)w >= sizeof(parent) || lstat(dir, &a) != 0 || !S_ISDIR(a.st_mode) ||
        stat(parent, &b) != 0)
        return 0;
    return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

/* Attaches img to a free loop device (auto-clear). OUT: dev (size n). The loop's fd, or -1
   with why. */
static int volume_loop(const char *img, char *dev, size_t n, char *why, size_t wn)
{
    int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), ifd, lfd = -1;
    struct loop_info64 li;

    if (ctl < 0) {
        snprintf(why, wn, "/dev/loop-control: %s", strerror(errno));
        return -1;
    }
    ifd = open(img, O_RDWR | O_CLOEXEC);
    if (ifd < 0) {
        snprintf(why, wn, "%.200s: %s", img, strerror(errno));
        close(ctl);
        return -1;
    }
    for (int i = 0; i < VOLUME_LOOP_TRIES; i++) {
        int nr = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (nr < 0) {
            snprintf(why, wn, "no free loop device: %s", strerror(errno));
            break;
        }
        snprintf(dev, n, "/dev/loop%d", nr);
        lfd = open(dev, O_RDWR | O_CLOEXEC);
        if (lfd < 0) {
            snprintf(why, wn, "%s: %s", dev, strerror(errno));
            break;
        }
        if (ioctl(lfd, LOOP_SET_FD, ifd) == 0)
            break;
        snprintf(why, wn, "%s: %s", dev, strerror(errno));
        close(lfd);
        lfd = -1;
        if (errno != EBUSY) /* EBUSY: another thread took it first */
            break;
    }
    close(ifd);
    close(ctl);
    if (lfd < 0)
        return -1;
    memset(&li, 0, sizeof(li));
    li.lo_flags = LO_FLAGS_AUTOCLEAR;
    snprintf((char *)li.lo_file_name, sizeof(li.lo_file_name), "%.63s", img);
    if (ioctl(lfd, LOOP_SET_STATUS64, &li) != 0) {
        snprintf(why, wn, "%s: %s", dev, strerror(errno));
        ioctl(lfd, LOOP_CLR_FD, 0);
        close(lfd);
        return -1;
    }
    return lfd;
}

int volume_create(const char *dir, int gb, struct ty_err *err)
{
    char img[PATH_MAX], mkfs[PATH_MAX], dev[64], out[VOLUME_OUT_MAX], lf[PATH_MAX + 16];
    unsigned long long size = (unsigned long long)gb * VOLUME_GIB, free_b, reserved = 0;
    struct volume__res *v;
    struct statvfs fs;
    int w, fd, lfd, rc;

    if (gb < 1 || gb > VOLUME_MAX_GB)
        return ty_err_set(err, TY_EINVAL, "VolumeSizeInGB",
                          "ClientError: VolumeSizeInGB %d is not within 1..%d", gb, VOLUME_MAX_GB);
    w = snprintf(img, sizeof(img), "%s.img", dir);
    if (w < 0 || (size_t)w >= sizeof(img))
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: volume path too long");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create %s: %s", dir,
                          strerror(errno));
    if (volume_mounted(dir))
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: %s is already mounted", dir);
    if (statvfs(dir, &fs) != 0)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: statvfs %s: %s", dir,
                          strerror(errno));
    free_b = (unsigned long long)fs.f_bavail * fs.f_frsize;
    if (!(v = calloc(1, sizeof(*v))))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    snprintf(v->img, sizeof(v->img), "%s", img);
    v->size = size;
    /* the check and the reservation under one lock: two jobs never both take the last space */
    pthread_mutex_lock(&volume_mu);
    for (struct volume__res *o = volume_list; o; o = o->next)
        reserved += volume_unused(o);
    if (free_b < reserved || free_b - reserved < size) {
        pthread_mutex_unlock(&volume_mu);
        free(v);
        return ty_err_set(err, TY_ELIMIT, "VolumeSizeInGB",
                          "CapacityError: Unable to provision requested ML compute capacity: "
                          "the job asks for a %d GB volume (VolumeSizeInGB) and this agent's "
                          "disk has %.1f GiB free, %.1f GiB of it promised to running jobs",
                          gb, (double)free_b / VOLUME_GIB, (double)reserved / VOLUME_GIB);
    }
    v->next = volume_list;
    volume_list = v;
    pthread_mutex_unlock(&volume_mu);

    unlink(img); /* a crashed run's */
    fd = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: volume image %s: %s", img,
                        strerror(errno));
        if (fd >= 0)
            close(fd);
        goto fail;
    }
    close(fd);
    {
        const char *argv[] = {ty_proc_find("mkfs.ext4", mkfs, sizeof(mkfs)),
                              "-q",
                              "-F",
                              "-O",
                              "^has_journal",
                              "-m",
                              "0",
                              "-E",
                              "nodiscard,lazy_itable_init=1",
                              "-L",
                              "opt-ml",
                              img,
                              NULL};
        if (!argv[0] || ty_proc_run(argv, out, sizeof(out)) != 0) {
            rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: mkfs.ext4 %s: %s", img,
                            argv[0] ? out : "not installed");
            goto fail;
        }
    }
    lfd = volume_loop(img, dev, sizeof(dev), out, sizeof(out));
    if (lfd < 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: loop device for %s: %s", img, out);
        goto fail;
    }
    if (mount(dev, dir, "ext4", MS_NODEV | MS_NOSUID | MS_NOATIME, "") != 0) {
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: mount %s on %s: %s", dev, dir,
                        strerror(errno));
        ioctl(lfd, LOOP_CLR_FD, 0);
        close(lfd);
        goto fail;
    }
    close(lfd); /* auto-clear: the device goes with the mount */
    snprintf(lf, sizeof(lf), "%s/lost+found", dir);
    rmdir(lf);
    chmod(dir, 0755);
    return 0;
fail:
    unlink(img);
    volume_forget(img);
    return rc;
}

int volume_adopt(const char *dir, int gb, struct ty_err *err)
{
    struct volume__res *v;
    char img[PATH_MAX];
    int w = snprintf(img, sizeof(img), "%s.img", dir);

    if (w < 0 || (size_t)w >= sizeof(img) || !volume_mounted(dir))
        return ty_err_set(err, TY_ENOTFOUND, NULL, "no volume is mounted on %s", dir);
    if (!(v = calloc(1, sizeof(*v))))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    snprintf(v->img, sizeof(v->img), "%s", img);
    v->size = (unsigned long long)(gb > 0 ? gb : 0) * VOLUME_GIB;
    pthread_mutex_lock(&volume_mu);
    for (struct volume__res *o = volume_list; o; o = o->next)
        if (strcmp(o->img, img) == 0) {
            pthread_mutex_unlock(&volume_mu);
            free(v);
            return 0;
        }
    v->next = volume_list;
    volume_list = v;
    pthread_mutex_unlock(&volume_mu);
    return 0;
}

int volume_remove(const char *dir)
{
    char img[PATH_MAX];
    int w = snprintf(img, sizeof(img), "%s.img", dir), rc = 0;

    if (w < 0 || (size_t)w >= sizeof(img))
        return -ENAMETOOLONG;
    if (volume_mounted(dir) && umount2(dir, 0) != 0) {
        if (errno != EBUSY || umount2(dir, MNT_DETACH) != 0)
            rc = -errno;
    }
    if (unlink(img) != 0 && errno != ENOENT && rc == 0)
        rc = -errno;
    volume_forget(img);
    return rc;
}

/* One mountinfo field unescaped (\040 and friends) into out (size n). */
static void volume_unescape(const char *s, size_t len, char *out, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < n; i++) {
        if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3') {
            out[k++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out[k++] = s[i];
        }
    }
    out[k] = '\0';
}

int volume_reap(const char *root, int (*keep)(const char *dir, void *ud), void *ud)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096], mp[PATH_MAX];
    size_t rl = strlen(root);
    char(*found)[PATH_MAX] = NULL;
    size_t nfound = 0, cap = 0;
    int n = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        /* id parent major:minor root mount-point options ... - fstype source */
        char *p = line, *sep = strstr(line, " - ");
        size_t len;
        for (int i = 0; i < 4 && p; i++)
            p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
        if (!p || !sep || strncmp(sep + 3, "ext4 /dev/loop", 14) != 0)
            continue;
        len = strcspn(p, " ");
        volume_unescape(p, len, mp, sizeof(mp));
        if (strncmp(mp, root, rl) != 0 || mp[rl] != '/')
            continue;
        if (nfound == cap) {
            size_t nc = cap ? cap * 2 : 8;
            void *g = realloc(found, nc * sizeof(*found));
            if (!g)
                break;
            found = g;
            cap = nc;
        }
        snprintf(found[nfound++], PATH_MAX, "%s", mp);
    }
    fclose(f);
    for (size_t i = 0; i < nfound; i++)
        if (!keep(found[i], ud) && volume_remove(found[i]) == 0)
            n++;
    free(found);
    return n;
}
