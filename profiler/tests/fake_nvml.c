/*
 * fake_nvml.c - a stand-in for libnvidia-ml with two GPUs, so the system monitor's NVML path
 * runs on CPU-only machines (loaded through TYPROF_NVML_LIB). GPU g reports utilisation
 * 40+10g % and memory 25 % used.
 */
#include <stdint.h>

struct util {
    unsigned int gpu, memory;
};
struct mem {
    unsigned long long total, free, used;
};

__attribute__((visibility("default"))) int nvmlInit_v2(void)
{
    return 0;
}
__attribute__((visibility("default"))) int nvmlShutdown(void)
{
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = 2;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
    *h = (void *)(uintptr_t)(i + 1);
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(void *h, struct util *u)
{
    u->gpu = 40 + 10 * (unsigned int)((uintptr_t)h - 1);
    u->memory = 5;
    return 0;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(void *h, struct mem *m)
{
    (void)h;
    m->total = 4000;
    m->used = 1000;
    m->free = 3000;
    return 0;
}
