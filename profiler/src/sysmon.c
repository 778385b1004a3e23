/*
 * sysmon.c - the system monitor: every interval it samples CPU use per core (/proc/stat),
 * memory (/proc/meminfo), disk I/O (/proc/diskstats, whole disks only), network I/O
 * (/proc/net/dev, all interfaces but lo; rates are per-device deltas summed, so a device that
 * appears, disappears or resets its counters adds nothing, never a negative rate) and, through NVML
 * opened with dlopen, GPU and GPU memory utilisation; it writes SageMaker's system-metrics JSON
 * lines to <out>/system/incremental/<YYYYMMDDHH>/<epoch>.<node>.json one file per node per minute,
 * named after its first sample's epoch second.
 *
 * Record layout (one JSON object per line, Timestamp in epoch seconds, Value in %, B/s):
 *   {"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":4.76,"NodeId":"algo-1",
 *    "Timestamp":1591160699.457}
 *   Type/Name/Dimension: cpu/cpuN/CPUUtilization, cpu/cpu_iowait/IOWait,
 *   memory/MemoryUsedPercent/Memory, gpu/gpuN/GPUUtilization, gpu/gpuN/GPUMemoryUtilization,
 *   disk/disk/{ReadBytesPerSecond,WriteBytesPerSecond},
 *   network/net/{ReceiveBytesPerSecond,TransmitBytesPerSecond}.
 * Owns: its thread, its open file and the NVML handle. Each line is flushed when written, so a
 * reader sees whole lines (SageMaker's reader also skips a torn last line).
 */
#define _GNU_SOURCE
#include "typrof_int.h"
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 1024
#define MAX_GPUS 64

struct cpu_times {
    uint64_t busy, total, iowait;
};

struct nvml_util {
    unsigned int gpu, memory;
};
struct nvml_mem {
    unsigned long long total, free, used;
};

struct typrof_sysmon {
    char out[4096];
    char node[128];
    unsigned interval_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    uint64_t samples;
    /* previous counters */
    int ncpu;
    struct cpu_times prev_cpu[MAX_CPUS + 1]; /* [0] = aggregate */
    struct typrof_devctr prev_disk[TYPROF_DEV_MAX], prev_net[TYPROF_DEV_MAX];
    size_t nprev_disk, nprev_net;
    struct typrof_devctr cur_disk[TYPROF_DEV_MAX], cur_net[TYPROF_DEV_MAX]; /* sample()'s */
    double prev_t;
    /* file */
    FILE *f;
    int64_t file_minute;
    /* NVML */
    void *nvml;
    int ngpu;
    void *gpu[MAX_GPUS];
    int (*nvml_shutdown)(void);
    int (*nvml_util)(void *, struct nvml_util *);
    int (*nvml_mem)(void *, struct nvml_mem *);
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads /proc/stat; c[0] is the aggregate, c[1..] the cores. Returns the core count. */
static int read_cpu(struct cpu_times *c, int max)
{
    FILE *f = fopen("/proc/stat", "r");
    char line[512];
    int n = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "cpu", 3) != 0)
            break;
        unsigned long long v[10] = {0};
        int idx;
        char *p = line + 3;
        if (*p == ' ') {
            idx = 0;
        } else {
            idx = 1 + (int)strtol(p, &p, 10);
        }
        if (idx > max)
            continue;
        sscanf(p, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
        /* user nice system idle iowait irq softirq steal (guest is inside user) */
        uint64_t total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
        c[idx].total = total;
        c[idx].busy = total - v[3] - v[4];
        c[idx].iowait = v[4];
        if (idx > n)
            n = idx;
    }
    fclose(f);
    return n;
}

static double read_mem_used_pct(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long total = 0, avail = 0, v;
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "MemTotal: %llu", &v) == 1)
            total = v;
        else if (sscanf(line, "MemAvailable: %llu", &v) == 1)
            avail = v;
    }
    fclose(f);
    return total ? 100.0 * (double)(total - avail) / (double)total : 0;
}

static int is_whole_disk(const char *name)
{
    char path[300];
    if (!strncmp(name, "loop", 4) || !strncmp(name, "ram", 3) || !strncmp(name, "zram", 4))
        return 0;
    snprintf(path, sizeof(path), "/sys/block/%s", name);
    return access(path, F_OK) == 0;
}

size_t typrof__disk_parse(FILE *f, int (*whole_disk)(const char *), struct typrof_devctr *dev,
                          size_t max)
{
    char line[512], name[128];
    unsigned long long v[11];
    size_t n = 0;
    while (n < max && fgets(line, sizeof(line), f)) {
        unsigned maj, min;
        if (sscanf(line, "%u %u %127s %llu %llu %llu %llu %llu %llu %llu %llu", &maj, &min, name,
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 11)
            continue;
        if (whole_disk && !whole_disk(name))
            continue;
        snprintf(dev[n].name, sizeof(dev[n].name), "%.63s", name);
        dev[n].a = (uint64_t)v[2] * 512; /* sectors read */
        dev[n].b = (uint64_t)v[6] * 512; /* sectors written */
        n++;
    }
    return n;
}

size_t typrof__net_parse(FILE *f, struct typrof_devctr *dev, size_t max)
{
    char line[512];
    size_t n = 0;
    while (n < max && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *name = line;
        while (*name == ' ')
            name++;
        if (!strcmp(name, "lo"))
            continue;
        unsigned long long r, t, skip;
        if (sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &r, &skip, &skip,
                   &skip, &skip, &skip, &skip, &skip, &t) == 9) {
            snprintf(dev[n].name, sizeof(dev[n].name), "%.63s", name);
            dev[n].a = r;
            dev[n].b = t;
            n++;
        }
    }
    return n;
}

void typrof__dev_delta(const struct typrof_devctr *prev, size_t np, const struct typrof_devctr *cur,
                       size_t nc, uint64_t *da, uint64_t *db)
{
    *da = *db = 0;
    for (size_t i = 0; i < nc; i++)
        for (size_t j = 0; j < np; j++) {
            if (strcmp(cur[i].name, prev[j].name))
                continue;
            if (cur[i].a >= prev[j].a)
                *da += cur[i].a - prev[j].a;
            if (cur[i].b >= prev[j].b)
                *db += cur[i].b - prev[j].b;
            break;
        }
}

/* Reads the per-device counters of kind 'd' (disks) or 'n' (network). Returns the count. */
static size_t read_devs(char kind, struct typrof_devctr *dev)
{
    FILE *f = fopen(kind == 'd' ? "/proc/diskstats" : "/proc/net/dev", "r");
    size_t n;
    if (!f)
        return 0;
    n = kind == 'd' ? typrof__disk_parse(f, is_whole_disk, dev, TYPROF_DEV_MAX)
                    : typrof__net_parse(f, dev, TYPROF_DEV_MAX);
    fclose(f);
    return n;
}

static void nvml_open(struct typrof_sysmon *s)
{
    int (*init)(void);
    int (*count)(unsigned int *);
    int (*handle)(unsigned int, void **);
    const char *path = getenv("TYPROF_NVML_LIB");
    s->nvml = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!s->nvml) {
        TP_LOG(TYPROF_LOG_INFO, "sysmon.nvml", "msg='libnvidia-ml.so.1 not found, no gpu metrics'");
        return;
    }
    *(void **)&init = dlsym(s->nvml, "nvmlInit_v2");
    *(void **)&count = dlsym(s->nvml, "nvmlDeviceGetCount_v2");
    *(void **)&handle = dlsym(s->nvml, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&s->nvml_shutdown = dlsym(s->nvml, "nvmlShutdown");
    *(void **)&s->nvml_util = dlsym(s->nvml, "nvmlDeviceGetUtilizationRates");
    *(void **)&s->nvml_mem = dlsym(s->nvml, "nvmlDeviceGetMemoryInfo");
    unsigned int n = 0;
    if (!init || !count || !handle || !s->nvml_util || !s->nvml_mem || init() != 0) {
        TP_LOG(TYPROF_LOG_WARN, "sysmon.nvml", "msg='nvmlInit failed, no gpu metrics'");
        dlclose(s->nvml);
        s->nvml = NULL;
        return;
    }
    if (count(&n) != 0)
        n = 0;
    for (unsigned int i = 0; i < n && s->ngpu < MAX_GPUS; i++)
        if (handle(i, &s->gpu[s->ngpu]) == 0)
            s->ngpu++;
    TP_LOG(TYPROF_LOG_INFO, "sysmon.nvml", "gpus=%d", s->ngpu);
}

static void line(struct typrof_sysmon *s, const char *type, const char *name, const char *dim,
                 double v, double t)
{
    fprintf(s->f, "{\"Type\":\"%s\",\"Name\":\"%s\",\"Dimension\":\"%s\",\"Value\":", type, name,
            dim);
    typrof__json_num(s->f, (double)(int64_t)(v * 100.0 + (v >= 0 ? 0.5 : -0.5)) / 100.0);
    fputs(",\"NodeId\":", s->f);
    typrof__json_str(s->f, s->node);
    fprintf(s->f, ",\"Timestamp\":%.6f}\n", t);
}

static int open_file(struct typrof_sysmon *s, double t)
{
    int64_t minute = (int64_t)t / 60;
    if (s->f && minute == s->file_minute)
        return 0;
    if (s->f)
        fclose(s->f);
    s->f = NULL;
    char hour[11], dir[4300], path[4500];
    typrof__hour_dir((int64_t)t, hour);
    snprintf(dir, sizeof(dir), "%s/system/incremental/%s", s->out, hour);
    if (typrof__mkdirs(dir) != 0)
        return -TYPROF_EIO;
    snprintf(path, sizeof(path), "%s/%lld.%s.json", dir, (long long)t, s->node);
    s->f = fopen(path, "a");
    if (!s->f)
        return -TYPROF_EIO;
    s->file_minute = minute;
    return 0;
}

static void sample(struct typrof_sysmon *s)
{
    struct cpu_times cur[MAX_CPUS + 1];
    memset(cur, 0, sizeof(cur));
    double t = now_s();
    int n = read_cpu(cur, MAX_CPUS);
    uint64_t rd, wr, rx, tx;
    struct typrof_devctr *disk = s->cur_disk, *net = s->cur_net;
    size_t ndisk = read_devs('d', disk), nnet = read_devs('n', net);
    typrof__dev_delta(s->prev_disk, s->nprev_disk, disk, ndisk, &rd, &wr);
    typrof__dev_delta(s->prev_net, s->nprev_net, net, nnet, &rx, &tx);
    double dt = t - s->prev_t;
    if (dt <= 0)
        dt = 1e-3;
    if (open_file(s, t) != 0) {
        TP_LOG(TYPROF_LOG_ERROR, "sysmon.write", "out='%s' op=open", s->out);
        return;
    }
    char name[32];
    for (int i = 1; i <= n && i <= s->ncpu; i++) {
        uint64_t dtot = cur[i].total - s->prev_cpu[i].total;
        uint64_t dbusy = cur[i].busy - s->prev_cpu[i].busy;
        double u = dtot ? 100.0 * (double)dbusy / (double)dtot : 0;
        snprintf(name, sizeof(name), "cpu%d", i - 1);
        line(s, "cpu", name, "CPUUtilization", u, t);
    }
    uint64_t dtot = cur[0].total - s->prev_cpu[0].total;
    line(s, "cpu", "cpu_iowait", "IOWait",
         dtot ? 100.0 * (double)(cur[0].iowait - s->prev_cpu[0].iowait) / (double)dtot : 0, t);
    line(s, "memory", "MemoryUsedPercent", "Memory", read_mem_used_pct(), t);
    line(s, "disk", "disk", "ReadBytesPerSecond", (double)rd / dt, t);
    line(s, "disk", "disk", "WriteBytesPerSecond", (double)wr / dt, t);
    line(s, "network", "net", "ReceiveBytesPerSecond", (double)rx / dt, t);
    line(s, "network", "net", "TransmitBytesPerSecond", (double)tx / dt, t);
    for (int g = 0; g < s->ngpu; g++) {
        struct nvml_util u;
        struct nvml_mem m;
        snprintf(name, sizeof(name), "gpu%d", g);
        if (s->nvml_util(s->gpu[g], &u) == 0)
            line(s, "gpu", name, "GPUUtilization", u.gpu, t);
        if (s->nvml_mem(s->gpu[g], &m) == 0 && m.total)
            line(s, "gpu", name, "GPUMemoryUtilization", 100.0 * (double)m.used / (double)m.total,
                 t);
    }
    fflush(s->f);
    memcpy(s->prev_cpu, cur, sizeof(cur));
    memcpy(s->prev_disk, disk, ndisk * sizeof(disk[0]));
    s->nprev_disk = ndisk;
    memcpy(s->prev_net, net, nnet * sizeof(net[0]));
    s->nprev_net = nnet;
    s->prev_t = t;
    s->samples++;
}

static void *sysmon_main(void *arg)
{
    struct typrof_sysmon *s = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        uint64_t ns = (uint64_t)s->interval_ms * 1000000ull;
        next.tv_sec += (time_t)(ns / 1000000000ull);
        next.tv_nsec += (long)(ns % 1000000000ull);
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        while (!s->stop && pthread_cond_timedwait(&s->cv, &s->mu, &next) == 0)
            ;
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->mu);
        sample(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int typrof__sysmon_start(const struct typrof_sysmon_opts *o, struct typrof_sysmon **out)
{
    struct typrof_sysmon *s = typrof__calloc(1, sizeof(*s));
    pthread_condattr_t ca;
    if (!s)
        return -TYPROF_ENOMEM;
    snprintf(s->out, sizeof(s->out), "%s", o->out_dir);
    snprintf(s->node, sizeof(s->node), "%s", o->node ? o->node : typrof__node_id());
    s->interval_ms = o->interval_ms ? o->interval_ms : 500;
    s->file_minute = -1;
    if (!o->no_gpu)
        nvml_open(s);
    s->ncpu = read_cpu(s->prev_cpu, MAX_CPUS);
    s->nprev_disk = read_devs('d', s->prev_disk);
    s->nprev_net = read_devs('n', s->prev_net);
    s->prev_t = now_s();
    if (open_file(s, s->prev_t) != 0) {
        TP_LOG(TYPROF_LOG_ERROR, "sysmon.start", "out='%s' op=open", s->out);
        if (s->nvml)
            dlclose(s->nvml);
        typrof__free(s);
        return -TYPROF_EIO;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&s->thread, NULL, sysmon_main, s) != 0) {
        fclose(s->f);
        if (s->nvml)
            dlclose(s->nvml);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        typrof__free(s);
        return -TYPROF_ENOMEM;
    }
    *out = s;
    return 0;
}

void typrof__sysmon_stop(struct typrof_sysmon *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    if (now_s() - s->prev_t >= 0.05 || s->samples == 0)
        sample(s); /* the tail of the run; at least one sample, however short the run */
    if (s->f)
        fclose(s->f);
    if (s->nvml) {
        if (s->nvml_shutdown)
            s->nvml_shutdown();
        dlclose(s->nvml);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    typrof__free(s);
}

uint64_t typrof__sysmon_samples(const struct typrof_sysmon *s)
{
    return s->samples;
}

int typrof__sysmon_gpus(const struct typrof_sysmon *s)
{
    return s->ngpu;
}

void typrof__sysmon_set_interval(struct typrof_sysmon *s, unsigned interval_ms)
{
    pthread_mutex_lock(&s->mu);
    s->interval_ms = interval_ms ? interval_ms : 500;
    pthread_mutex_unlock(&s->mu);
}
