/*
 * cupti.c - the CUPTI glue: InitializeInjection (called by the CUDA driver when
 * CUDA_INJECTION64_PATH names libtyprof.so), dlopen of libcupti, activity registration, and the
 * buffer callbacks.
 *
 * Owns: the buffer pool and the ready queue. Buffers come back from CUPTI on its own thread
 * (bufDone); we only queue them there. A worker thread walks each buffer with
 * cuptiActivityGetNextRecord and feeds the processing core, so record handling is off both the
 * application's and CUPTI's hot path. We never hold our queue lock while calling into CUPTI
 * (Kineto documents an ABBA deadlock otherwise).
 *
 * Built without CUDA headers: struct layouts and entry points come from cupti_abi.h.
 * Untested on a GPU in CI: without libcuda, cuptiActivityEnable fails and we report that.
 */
#define _GNU_SOURCE
#include "cupti_abi.h"
#include "typrof_int.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define BUF_SIZE    (4u << 20)
#define MAX_BUFFERS 64u /* 256 MiB of buffers in flight at most */

struct ready {
    uint8_t *buf;
    size_t valid;
};

static struct tp_cupti_api g_api;
static void *g_lib;
static struct typrof_proc *g_p;
static volatile int g_on;
static pthread_mutex_t g_qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_qcv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_idle = PTHREAD_COND_INITIALIZER;
static struct ready g_q[MAX_BUFFERS];
static size_t g_qn;
static unsigned g_outstanding;
static int g_busy, g_stop_worker;
static pthread_t g_worker;
static int g_worker_on;
static uint64_t g_refused;

static const char *result_str(int r)
{
    const char *s = NULL;
    if (g_api.get_result_string && g_api.get_result_string(r, &s) == 0 && s)
        return s;
    return "unknown CUPTI error";
}

static const char *api_name_hook(int driver, uint32_t cbid)
{
    static __thread char buf[128];
    const char *n = NULL;
    if (!g_api.get_callback_name ||
        g_api.get_callback_name(driver ? TP_CB_DOMAIN_DRIVER : TP_CB_DOMAIN_RUNTIME, cbid, &n) !=
            0 ||
        !n)
        return NULL;
    snprintf(buf, sizeof(buf), "%s", n);
    char *v = strrchr(buf, '_'); /* cudaLaunchKernel_v7000 -> cudaLaunchKernel */
    if (v && v[1] == 'v' && v[2] >= '0' && v[2] <= '9')
        *v = '\0';
    return buf;
}

static void buf_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    *max_records = 0;
    pthread_mutex_lock(&g_qmu);
    int ok = g_outstanding < MAX_BUFFERS;
    if (ok)
        g_outstanding++;
    else
        g_refused++;
    pthread_mutex_unlock(&g_qmu);
    *buf = ok ? aligned_alloc(8, BUF_SIZE) : NULL;
    *size = *buf ? BUF_SIZE : 0;
    if (ok && !*buf) {
        pthread_mutex_lock(&g_qmu);
        g_outstanding--;
        pthread_mutex_unlock(&g_qmu);
    }
}

static void buf_complete(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)size;
    size_t dropped = 0;
    if (g_api.get_num_dropped && g_api.get_num_dropped(ctx, stream, &dropped) == 0 && dropped) {
        pthread_mutex_lock(&g_p->lock);
        g_p->dropped += dropped;
        pthread_mutex_unlock(&g_p->lock);
    }
    if (!buf)
        return;
    pthread_mutex_lock(&g_qmu);
    if (g_qn < MAX_BUFFERS) {
        g_q[g_qn].buf = buf;
        g_q[g_qn].valid = valid;
        g_qn++;
        buf = NULL;
        pthread_cond_signal(&g_qcv);
    }
    pthread_mutex_unlock(&g_qmu);
    if (buf) { /* cannot happen: one slot per outstanding buffer */
        free(buf);
        pthread_mutex_lock(&g_qmu);
        g_outstanding--;
        pthread_mutex_unlock(&g_qmu);
    }
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_qmu);
    for (;;) {
        while (g_qn == 0 && !g_stop_worker)
            pthread_cond_wait(&g_qcv, &g_qmu);
        if (g_qn == 0 && g_stop_worker)
            break;
        struct ready r = g_q[0];
        memmove(g_q, g_q + 1, (g_qn - 1) * sizeof(*g_q));
        g_qn--;
        g_busy = 1;
        pthread_mutex_unlock(&g_qmu);
        typrof__proc_buffer(g_p, r.buf, r.valid, (typrof_next_fn)g_api.get_next_record);
        free(r.buf);
        pthread_mutex_lock(&g_qmu);
        g_outstanding--;
        g_busy = 0;
        if (g_qn == 0)
            pthread_cond_broadcast(&g_idle);
    }
    g_busy = 0;
    pthread_cond_broadcast(&g_idle);
    pthread_mutex_unlock(&g_qmu);
    return NULL;
}

#define SYM(field, name)                                                                           \
    do {                                                                                           \
        *(void **)(&g_api.field) = dlsym(g_lib, name);                                             \
    } while (0)

static int load_cupti(const char **why)
{
    const char *cands[] = {getenv("TYPROF_CUPTI_LIB"), "libcupti.so.13", "libcupti.so",
                           "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                           "/usr/local/cuda/lib64/libcupti.so"};
    for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]) && !g_lib; i++)
        if (cands[i] && *cands[i])
            g_lib = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
    if (!g_lib) {
        *why = "libcupti not found (set TYPROF_CUPTI_LIB); gpu tracing off";
        return -TYPROF_EGPU;
    }
    SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
    SYM(enable, "cuptiActivityEnable");
    SYM(disable, "cuptiActivityDisable");
    SYM(flush_all, "cuptiActivityFlushAll");
    SYM(flush_period, "cuptiActivityFlushPeriod");
    SYM(get_next_record, "cuptiActivityGetNextRecord");
    SYM(get_num_dropped, "cuptiActivityGetNumDroppedRecords");
    SYM(get_timestamp, "cuptiGetTimestamp");
    SYM(get_result_string, "cuptiGetResultString");
    SYM(enable_latency_ts, "cuptiActivityEnableLatencyTimestamps");
    SYM(get_callback_name, "cuptiGetCallbackName");
    SYM(finalize, "cuptiFinalize");
    SYM(enable_runtime_api, "cuptiActivityEnableRuntimeApi");
    SYM(enable_driver_api, "cuptiActivityEnableDriverApi");
    SYM(get_version, "cuptiGetVersion");
    if (!g_api.register_callbacks || !g_api.enable || !g_api.flush_all || !g_api.get_next_record) {
        *why = "libcupti lacks the activity API; gpu tracing off";
        dlclose(g_lib);
        g_lib = NULL;
        memset(&g_api, 0, sizeof(g_api));
        return -TYPROF_EGPU;
    }
    return 0;
}

int typrof__cupti_start(struct typrof_proc *p, const char **why)
{
    static const uint32_t kinds[] = {
        TP_KIND_CONCURRENT_KERNEL, TP_KIND_MEMCPY,  TP_KIND_MEMSET, TP_KIND_RUNTIME, TP_KIND_DRIVER,
        TP_KIND_SYNCHRONIZATION,   TP_KIND_OVERHEAD};
    const char *err_op = "load";
    int r = 0;
    *why = NULL;
    if (g_on)
        return 0;
    if (!g_lib && load_cupti(why) != 0)
        return -TYPROF_EGPU;
    g_p = p;
    uint32_t version = 0;
    if (g_api.get_version && g_api.get_version(&version) == 0)
        TP_LOG(TYPROF_LOG_INFO, "cupti.version", "api=%u built_for=130001", version);
    if (g_api.enable_latency_ts)
        g_api.enable_latency_ts(1); /* before CUDA init; failure only loses queued/submitted */
    err_op = "cuptiActivityRegisterCallbacks";
    r = g_api.register_callbacks(buf_request, buf_complete);
    if (r != 0)
        goto fail;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        err_op = "cuptiActivityEnable";
        r = g_api.enable(kinds[i]);
        if (r != 0 && (kinds[i] == TP_KIND_CONCURRENT_KERNEL || kinds[i] == TP_KIND_RUNTIME))
            goto fail;
        if (r != 0)
            TP_LOG(TYPROF_LOG_WARN, "cupti.enable", "kind=%u err='%s'", kinds[i], result_str(r));
    }
    static const uint32_t mute_rt[] = TP_MUTED_RUNTIME_CBIDS, mute_drv[] = TP_MUTED_DRIVER_CBIDS;
    for (size_t i = 0; g_api.enable_runtime_api && i < sizeof(mute_rt) / sizeof(mute_rt[0]); i++)
        g_api.enable_runtime_api(mute_rt[i], 0);
    for (size_t i = 0; g_api.enable_driver_api && i < sizeof(mute_drv) / sizeof(mute_drv[0]); i++)
        g_api.enable_driver_api(mute_drv[i], 0);
    if (g_api.flush_period)
        g_api.flush_period(1000);
    g_stop_worker = 0;
    if (pthread_create(&g_worker, NULL, worker_main, NULL) != 0) {
        err_op = "pthread_create";
        r = -1;
        goto fail;
    }
    g_worker_on = 1;
    typrof__api_name_hook = api_name_hook;
    g_on = 1;
    TP_LOG(TYPROF_LOG_INFO, "cupti.start", "kinds=%zu", sizeof(kinds) / sizeof(kinds[0]));
    return 0;
fail:
    for (size_t i = 0; g_api.disable && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        g_api.disable(kinds[i]);
    *why = "CUPTI activity tracing could not start (no GPU or driver?); recording cpu-side data";
    TP_LOG(TYPROF_LOG_WARN, "cupti.start", "op=%s err=%d msg='%s'", err_op, r,
           r > 0 ? result_str(r) : "system");
    return -TYPROF_EGPU;
}

void typrof__cupti_flush(void)
{
    if (!g_on)
        return;
    g_api.flush_all(TP_FLUSH_FORCED); /* calls buf_complete for every buffer */
    pthread_mutex_lock(&g_qmu);
    while (g_qn > 0 || g_busy)
        pthread_cond_wait(&g_idle, &g_qmu);
    pthread_mutex_unlock(&g_qmu);
}

void typrof__cupti_stop(void)
{
    if (!g_on)
        return;
    typrof__cupti_flush();
    for (uint32_t k = 1; k < 64 && g_api.disable; k++)
        if (k == TP_KIND_CONCURRENT_KERNEL || k == TP_KIND_MEMCPY || k == TP_KIND_MEMSET ||
            k == TP_KIND_RUNTIME || k == TP_KIND_DRIVER || k == TP_KIND_SYNCHRONIZATION ||
            k == TP_KIND_OVERHEAD)
            g_api.disable(k);
    pthread_mutex_lock(&g_qmu);
    g_stop_worker = 1;
    pthread_cond_signal(&g_qcv);
    pthread_mutex_unlock(&g_qmu);
    if (g_worker_on)
        pthread_join(g_worker, NULL);
    g_worker_on = 0;
    g_on = 0;
    if (g_refused)
        TP_LOG(TYPROF_LOG_WARN, "cupti.buffers", "refused=%llu", (unsigned long long)g_refused);
}

int typrof__cupti_active(void)
{
    return g_on;
}

uint64_t typrof__cupti_now(void)
{
    uint64_t t = 0;
    if (g_on && g_api.get_timestamp && g_api.get_timestamp(&t) == 0)
        return t;
    return 0;
}
