/*
 * fake_cupti.c - a stand-in for libcupti's activity API, so libtyprof's injection path
 * (InitializeInjection, callbacks, buffer queue, worker thread, flush) runs on CPU-only
 * machines (loaded through TYPROF_CUPTI_LIB). Each cuptiActivityFlushAll asks for one buffer,
 * fills it with FAKE_LAUNCHES cudaLaunchKernel records and their kernels (correlation ids
 * continue across flushes, launch latency 3 us) plus one HtoD copy, and completes it.
 * Records use the CUPTI 13.0 layouts of src/cupti_abi.h.
 */
#include "cupti_abi.h"
#include <string.h>
#include <time.h>

#define EXPORT        __attribute__((visibility("default")))
#define FAKE_LAUNCHES 50

static tp_buf_req_fn g_req;
static tp_buf_done_fn g_done;
static int g_enabled;
static uint32_t g_corr = 1;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

EXPORT int cuptiActivityRegisterCallbacks(tp_buf_req_fn req, tp_buf_done_fn done)
{
    g_req = req;
    g_done = done;
    return 0;
}

EXPORT int cuptiActivityEnable(uint32_t kind)
{
    (void)kind;
    g_enabled = 1;
    return 0;
}

EXPORT int cuptiActivityDisable(uint32_t kind)
{
    (void)kind;
    return 0;
}

EXPORT int cuptiGetTimestamp(uint64_t *t)
{
    *t = now_ns();
    return 0;
}

EXPORT int cuptiGetResultString(int r, const char **s)
{
    (void)r;
    *s = "FAKE_ERROR";
    return 0;
}

EXPORT int cuptiActivityGetNumDroppedRecords(void *c, uint32_t s, size_t *d)
{
    (void)c;
    (void)s;
    *d = 0;
    return 0;
}

static size_t rec_size(uint32_t kind)
{
    switch (kind) {
    case TP_KIND_CONCURRENT_KERNEL:
        return sizeof(struct tp_act_kernel10);
    case TP_KIND_RUNTIME:
        return sizeof(struct tp_act_api);
    case TP_KIND_MEMCPY:
        return sizeof(struct tp_act_memcpy6);
    default:
        return 0;
    }
}

EXPORT int cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, void **rec)
{
    size_t off = 0;
    if (*rec)
        off =
            (size_t)((uint8_t *)*rec - buf) + ((rec_size(((struct tp_act *)*rec)->kind) + 7) & ~7u);
    if (off + 4 > valid || rec_size(((struct tp_act *)(buf + off))->kind) == 0)
        return TP_CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = buf + off;
    return TP_CUPTI_SUCCESS;
}

static void put(uint8_t *buf, size_t *off, const void *r, size_t n)
{
    memcpy(buf + *off, r, n);
    *off += (n + 7) & ~(size_t)7;
}

EXPORT int cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    if (!g_enabled || !g_req || !g_done)
        return 999;
    uint8_t *buf = NULL;
    size_t size = 0, maxr = 0, off = 0;
    g_req(&buf, &size, &maxr);
    if (!buf)
        return 0;
    uint64_t t = now_ns() - 10000000u;
    for (int i = 0; i < FAKE_LAUNCHES && off + 512 < size; i++, g_corr++) {
        struct tp_act_api a;
        memset(&a, 0, sizeof(a));
        a.kind = TP_KIND_RUNTIME;
        a.cbid = 211;
        a.start = t + (uint64_t)i * 10000u;
        a.end = a.start + 2000;
        a.process_id = 1;
        a.thread_id = 2;
        a.correlation_id = g_corr;
        put(buf, &off, &a, sizeof(a));
        struct tp_act_kernel10 k;
        memset(&k, 0, sizeof(k));
        k.kind = TP_KIND_CONCURRENT_KERNEL;
        k.name = i % 2 ? "fake_gemm" : "fake_relu";
        k.start = a.start + 3000;
        k.end = k.start + 4000;
        k.stream_id = 7;
        k.correlation_id = g_corr;
        put(buf, &off, &k, sizeof(k));
    }
    struct tp_act_memcpy6 m;
    memset(&m, 0, sizeof(m));
    m.kind = TP_KIND_MEMCPY;
    m.copy_kind = 1;
    m.bytes = 1 << 20;
    m.start = t;
    m.end = t + 1000;
    put(buf, &off, &m, sizeof(m));
    g_done(NULL, 0, buf, size, off);
    return 0;
}
