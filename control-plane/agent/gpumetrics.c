/*
 * gpumetrics.c - GPUUtilization and GPUMemoryUtilization through NVML opened at run time
 * (gpumetrics.h). The NVML structures are declared here with the driver's layouts
 * (nvmlUtilization_t, nvmlMemory_t), so that nothing of the driver is needed to build.
 */
#include "gpumetrics.h"

#include <dlfcn.h>
#include <stdlib.h>

#define GPUMETRICS_MAX 64

struct gpumetrics_nvml_util {
    unsigned int gpu, memory;
};

struct gpumetrics_nvml_mem {
    unsigned long long total, free, used;
};

struct gpumetrics {
    void *lib;
    int n;
    void *dev[GPUMETRICS_MAX];
    int (*shutdown)(void);
    int (*util)(void *, struct gpumetrics_nvml_util *);
    int (*mem)(void *, struct gpumetrics_nvml_mem *);
};

struct gpumetrics *gpumetrics_open(const char *lib)
{
    struct gpumetrics *g = calloc(1, sizeof(*g));
    int (*init)(void);
    int (*count)(unsigned int *);
    int (*handle)(unsigned int, void **);
    unsigned int n = 0;

    if (!g)
        return NULL;
    g->lib = dlopen(lib && *lib ? lib : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g->lib)
        goto fail;
    *(void **)&init = dlsym(g->lib, "nvmlInit_v2");
    *(void **)&count = dlsym(g->lib, "nvmlDeviceGetCount_v2");
    *(void **)&handle = dlsym(g->lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&g->shutdown = dlsym(g->lib, "nvmlShutdown");
    *(void **)&g->util = dlsym(g->lib, "nvmlDeviceGetUtilizationRates");
    *(void **)&g->mem = dlsym(g->lib, "nvmlDeviceGetMemoryInfo");
    if (!init || !count || !handle || !g->util || !g->mem || init() != 0)
        goto fail;
    if (count(&n) != 0)
        n = 0;
    for (unsigned int i = 0; i < n && g->n < GPUMETRICS_MAX; i++)
        if (handle(i, &g->dev[g->n]) == 0)
            g->n++;
    return g;
fail:
    if (g->lib)
        dlclose(g->lib);
    free(g);
    return NULL;
}

void gpumetrics_close(struct gpumetrics *g)
{
    if (!g)
        return;
    if (g->shutdown)
        g->shutdown();
    dlclose(g->lib);
    free(g);
}

int gpumetrics_count(const struct gpumetrics *g)
{
    return g ? g->n : 0;
}

int gpumetrics_fold(const struct gpumetrics_gpu *gpus, int n, double *util, double *mem)
{
    double u = 0, m = 0;

    if (n <= 0)
        return -1;
    for (int i = 0; i < n; i++) {
        u += gpus[i].util > 100 ? 100 : gpus[i].util;
        if (gpus[i].mem_total > 0)
            m += (double)gpus[i].mem_used / (double)gpus[i].mem_total * 100.0;
    }
    *util = u;
    *mem = m;
    return 0;
}

int gpumetrics_sample(struct gpumetrics *g, uint64_t mask, double *util, double *mem)
{
    struct gpumetrics_gpu r[GPUMETRICS_MAX];
    int k = 0;

    if (!g)
        return -1;
    for (int i = 0; i < g->n && i < 64; i++) {
        struct gpumetrics_nvml_util u;
        struct gpumetrics_nvml_mem m;
        if (!(mask & ((uint64_t)1 << i)) || g->util(g->dev[i], &u) != 0)
            continue;
        r[k].util = u.gpu;
        r[k].mem_used = r[k].mem_total = 0;
        if (g->mem(g->dev[i], &m) == 0) {
            r[k].mem_used = m.used;
            r[k].mem_total = m.total;
        }
        k++;
    }
    return gpumetrics_fold(r, k, util, mem);
}
