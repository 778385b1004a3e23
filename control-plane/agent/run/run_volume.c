/*
 * run_volume.c - each host's volume of ResourceConfig.VolumeSizeInGB (volume.h): made before
 * anything is staged, so that the channels, the code archive and restored checkpoints are bounded
 * by it as the job's own writes are; removed when the job's staging folder goes. Without
 * volumes on this agent (agent_config.job_volumes), each job's log says so.
 */
#include "run_int.h"

#include "stage.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "volume.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define RUN_VOLUME_FULL (4ULL << 20) /* a volume with less free than this is full */

/* <job dir>/job: the job's name, for the reaper (agent.c) to tell whose a volume is. The job dir
   is the agent's (0700): no container sees it. 0 or -1. */
static int run_volume_mark(struct run_ctx *r)
{
    char path[sizeof(r->dir) + 8];
    size_t n = strlen(r->job);
    int fd, ok, w = run__fmt(path, sizeof(path), "%s/job", r->dir);
    if (w < 0 || (size_t)w >= sizeof(path))
        return -1;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    ok = ty_write_all(fd, r->job, n) == 0;
    return close(fd) == 0 && ok ? 0 : -1;
}

int run__volume_make(struct run_ctx *r, struct run_host *h, struct ty_err *err)
{
    char line[400];
    double t0 = ty_mono_s();
    int rc;

    /* what an earlier run of the job left: its volume, then its files */
    volume_remove(h->vol);
    stage_remove(h->vol);
    if (mkdir(r->dir, 0700) != 0 && errno != EEXIST)
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create the job's folder");
    if (!r->a->volumes) {
        if (mkdir(h->vol, 0755) != 0 && errno != EEXIST)
            return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create '%s'", h->vol);
        if (h->index == 0) {
            run__fmt(line, sizeof(line),
                     "VolumeSizeInGB is not enforced on this agent (%s): /opt/ml is a folder of "
                     "the host's disk",
                     r->a->volumes_off);
            run__log_line(r, line);
        }
        return 0;
    }
    if (run_volume_mark(r) != 0)
        return ty_err_set(err, TY_EIO, NULL,
                          "InternalServerError: cannot mark the job's folder: %s", strerror(errno));
    rc = volume_create(h->vol, r->sp.volume_gb, err);
    if (rc != 0)
        return rc;
    ty_log(TY_LOG_INFO, "agent.volume.created", "job=%s host=%s gb=%d ms=%.0f", r->job, h->name,
           r->sp.volume_gb, (ty_mono_s() - t0) * 1000);
    return 0;
}

void run__volume_drop(struct run_ctx *r)
{
    for (int i = 0; i < r->nh; i++) {
        int rc = volume_remove(r->h[i].vol);
        if (rc != 0)
            ty_log(TY_LOG_WARN, "agent.volume.remove_failed", "job=%s host=%s error='%s'", r->job,
                   r->h[i].name, strerror(-rc));
    }
}

void run__volume_full(struct run_ctx *r, struct run_host *h, struct ty_err *err)
{
    struct statvfs fs;
    char was[sizeof(err->msg)];

    if (!r->a->volumes || !volume_mounted(h->vol) || statvfs(h->vol, &fs) != 0 ||
        (unsigned long long)fs.f_bavail * fs.f_frsize >= RUN_VOLUME_FULL)
        return;
    snprintf(was, sizeof(was), "%s", err->msg);
    ty_err_set(err, TY_EINVAL, NULL,
               "ClientError: Data download failed:Insufficient disk space. The job's data does "
               "not fit its %d GB volume (ResourceConfig.VolumeSizeInGB) on %s: %.300s",
               r->sp.volume_gb, h->name, was);
}
