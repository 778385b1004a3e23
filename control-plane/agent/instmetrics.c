/*
 * instmetrics.c - CPUUtilization, MemoryUtilization and DiskUtilization of a host
 * (instmetrics.h).
 */
#include "instmetrics.h"

#include <sys/statvfs.h>
#include <unistd.h>

void instmetrics_compute(const struct docker_stats *prev, const struct docker_stats *cur,
                         const char *dir, struct instmetrics *m)
{
    struct statvfs vfs;

    m->cpu = m->mem = m->disk = -1;
    if (prev && cur->cpu_total_ns >= prev->cpu_total_ns) {
        double dc = cur->cpu_total_ns - prev->cpu_total_ns, ds = cur->system_ns - prev->system_ns;
        int n = cur->online_cpus > 0 ? cur->online_cpus : (int)sysconf(_SC_NPROCESSORS_ONLN);
        if (ds > 0 && n > 0)
            m->cpu = dc / ds * n * 100.0;
    }
    if (cur->mem_limit > 0)
        m->mem = cur->mem_usage / cur->mem_limit * 100.0;
    if (dir && statvfs(dir, &vfs) == 0 && vfs.f_blocks > 0)
        m->disk = (double)(vfs.f_blocks - vfs.f_bfree) / (double)vfs.f_blocks * 100.0;
}
