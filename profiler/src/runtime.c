/*
 * runtime.c - the in-process recorder's life cycle: start (from TYPROF_OUT on load, from
 * InitializeInjection, or typrof_start), the rotation thread, flush/stop at exit, and the
 * annotation API (ranges, marks, steps).
 *
 * Owns: the single process-wide struct typrof_proc and the open-range table. Output files:
 *   <out>/trace/<node>.<pid>.<seq>.trace.json   one per rotation (size or time)
 *   <out>/summary/<node>.<pid>.summary.json     rewritten at each rotation and at stop
 * Invariants: g_active changes only under g_life; annotation calls run between enter() and
 * leave(), and stop waits for them to drain after clearing g_active, so none touches a recorder
 * that is being torn down; a forked child stops recording (its parent
 * owns the files); the rotation thread never calls into CUPTI while holding a proc lock.
 */
#define _GNU_SOURCE
#include "typrof_int.h"
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANGES          65536u
#define EST_BYTES_PER_EVENT 200u

struct open_range {
    uint64_t start;
    const char *name; /* borrowed: interned */
    uint32_t tid, gen;
    int used;
};

static pthread_mutex_t g_life = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_rlock = PTHREAD_MUTEX_INITIALIZER;
static struct typrof_proc g_proc;
static atomic_int g_active;
static atomic_int g_inflight; /* annotation calls inside the recorder */
static char g_out[4096];
static char g_process[64];
static uint64_t g_start_ns;
static uint32_t g_pid;
static uint32_t g_seq;
static const char *g_gpu_note;
static uint64_t g_rotate_bytes = 10485760;
static uint64_t g_rotate_secs = 60;
static uint64_t g_last_flush_ns;
static pthread_t g_rot_thread;
static int g_rot_running;
static pthread_mutex_t g_rot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_rot_cv = PTHREAD_COND_INITIALIZER;
static int g_rot_stop;
static struct open_range *g_ranges;
static uint32_t *g_free_slots;
static uint32_t g_nfree;
static int g_atexit_done;
extern int typrof__started_once;

static __thread uint32_t t_tid;
static __thread uint64_t t_step_start;
static __thread int64_t t_step;
static __thread int t_step_open;

static uint32_t my_tid(void)
{
    if (!t_tid) {
        t_tid = (uint32_t)syscall(SYS_gettid);
        typrof__tid_register((uint32_t)pthread_self(), t_tid);
    }
    return t_tid;
}

static int enter(void)
{
    if (!atomic_load(&g_active))
        return 0;
    atomic_fetch_add(&g_inflight, 1);
    if (!atomic_load(&g_active)) {
        atomic_fetch_sub(&g_inflight, 1);
        return 0;
    }
    return 1;
}

static void leave(void)
{
    atomic_fetch_sub(&g_inflight, 1);
}

TY_EXPORT uint64_t typrof_now_ns(void)
{
    uint64_t t = typrof__cupti_now();
    return t ? t : typrof__realtime_ns();
}

TY_EXPORT const char *typrof_version(void)
{
    return TY_VERSION;
}

TY_EXPORT int typrof_is_active(void)
{
    return atomic_load(&g_active);
}

TY_EXPORT int typrof_gpu_tracing(void)
{
    return typrof__cupti_active();
}

void typrof__runtime_gpu_note(const char *why)
{
    g_gpu_note = why;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *e = getenv(name);
    if (!e || !*e)
        return def;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(e, &end, 10);
    if (errno || *end || v == 0)
        return def;
    return v;
}

static void path_of(char *buf, size_t n, const char *kind)
{
    if (!strcmp(kind, "summary"))
        snprintf(buf, n, "%s/summary/%s.%u.summary.json", g_out, typrof__node_id(), g_pid);
    else
        snprintf(buf, n, "%s/trace/%s.%u.%04u.trace.json", g_out, typrof__node_id(), g_pid, g_seq);
}

/* Writes the pending segment (if any) and the summary. Caller ensures g_active. */
static int do_flush(int gpu_flush)
{
    struct typrof_ev *evs = NULL;
    size_t nev = 0;
    uint32_t seg = 0;
    char path[4300];
    int rc = 0;
    if (gpu_flush)
        typrof__cupti_flush();
    rc = typrof__proc_begin_flush(&g_proc, &evs, &nev, &seg);
    if (rc == 0 && nev > 0) {
        struct typrof_trace_meta m = {g_start_ns, g_pid, typrof__node_id(), g_process};
        path_of(path, sizeof(path), "trace");
        g_seq++;
        rc = typrof__trace_write(&g_proc, evs, nev, seg, &m, path);
    }
    typrof__proc_end_flush(&g_proc);
    typrof__free(evs);
    g_last_flush_ns = typrof__realtime_ns();

    struct typrof_summary_meta sm = {g_start_ns,        typrof_now_ns(), g_pid,
                                     typrof__node_id(), g_gpu_note,      typrof__cupti_active()};
    path_of(path, sizeof(path), "summary");
    int rc2 = typrof__summary_write(&g_proc, &sm, path);
    return rc ? rc : rc2;
}

static void *rotation_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&g_rot_mu);
    while (!g_rot_stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_rot_cv, &g_rot_mu, &ts);
        if (g_rot_stop)
            break;
        pthread_mutex_lock(&g_proc.lock);
        size_t pending = g_proc.nev;
        pthread_mutex_unlock(&g_proc.lock);
        uint64_t age = typrof__realtime_ns() - g_last_flush_ns;
        int by_size = (uint64_t)pending * EST_BYTES_PER_EVENT >= g_rotate_bytes;
        int by_time = pending > 0 && age >= g_rotate_secs * 1000000000ull;
        if (by_size || by_time) {
            pthread_mutex_unlock(&g_rot_mu);
            do_flush(0);
            pthread_mutex_lock(&g_rot_mu);
        }
    }
    pthread_mutex_unlock(&g_rot_mu);
    return NULL;
}

static void at_exit(void)
{
    if (atomic_load(&g_active))
        typrof_stop();
}

static void atfork_child(void)
{
    /* the parent owns the output; a forked child (data loader worker) records nothing */
    atomic_store(&g_active, 0);
    atomic_store(&g_inflight, 0);
    g_rot_running = 0;
}

static void note_gpu_presence(void)
{
    if (typrof__cupti_active() || g_gpu_note)
        return;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        dlclose(h);
        g_gpu_note = "libcuda is loaded but CUPTI tracing is off (load libtyprof through "
                     "CUDA_INJECTION64_PATH to trace kernels)";
        return;
    }
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        g_gpu_note = "no gpu found: libcuda.so.1 cannot be loaded; recording cpu-side data only";
        TP_LOG(TYPROF_LOG_INFO, "gpu.absent", "note='%s'", g_gpu_note);
        return;
    }
    dlclose(h);
    g_gpu_note = "this process did not initialise CUDA before profiling started";
}

TY_EXPORT int typrof_start(const char *out_dir)
{
    int rc = 0;
    pthread_mutex_lock(&g_life);
    if (atomic_load(&g_active)) {
        rc = -TYPROF_ESTATE;
        goto out;
    }
    if (!out_dir || !*out_dir)
        out_dir = getenv("TYPROF_OUT");
    if (!out_dir || !*out_dir)
        out_dir = "/opt/ml/output/profiler";
    if (strlen(out_dir) >= sizeof(g_out) - 64) {
        rc = -TYPROF_EINVAL;
        goto out;
    }
    snprintf(g_out, sizeof(g_out), "%s", out_dir);
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/trace", g_out);
    if (typrof__mkdirs(dir) != 0) {
        rc = -TYPROF_EIO;
        goto out;
    }
    snprintf(dir, sizeof(dir), "%s/summary", g_out);
    if (typrof__mkdirs(dir) != 0) {
        rc = -TYPROF_EIO;
        goto out;
    }
    typrof__started_once = 1;
    if (!g_ranges) {
        g_ranges = typrof__calloc(MAX_RANGES, sizeof(*g_ranges));
        g_free_slots = typrof__malloc(MAX_RANGES * sizeof(*g_free_slots));
        if (!g_ranges || !g_free_slots) {
            ty_safefree(g_ranges);
            ty_safefree(g_free_slots);
            rc = -TYPROF_ENOMEM;
            goto out;
        }
        for (uint32_t i = 0; i < MAX_RANGES; i++)
            g_free_slots[i] = MAX_RANGES - 1 - i;
        g_nfree = MAX_RANGES;
    }
    rc = typrof__proc_init(&g_proc, env_u64("TYPROF_MAX_EVENTS", 0), 0);
    if (rc)
        goto out;
    g_pid = (uint32_t)getpid();
    g_rotate_bytes = env_u64("TYPROF_ROTATE_BYTES", 10485760);
    g_rotate_secs = env_u64("TYPROF_ROTATE_SECS", 60);
    g_start_ns = env_u64("TYPROF_START_NS", 0);
    uint64_t now = typrof_now_ns();
    if (!g_start_ns || g_start_ns > now)
        g_start_ns = now;
    g_last_flush_ns = typrof__realtime_ns();
    FILE *c = fopen("/proc/self/comm", "r");
    if (c) {
        if (fgets(g_process, sizeof(g_process), c))
            g_process[strcspn(g_process, "\n")] = '\0';
        fclose(c);
    }
    g_rot_stop = 0;
    g_rot_running = pthread_create(&g_rot_thread, NULL, rotation_main, NULL) == 0;
    if (!g_atexit_done) {
        g_atexit_done = 1;
        atexit(at_exit);
        pthread_atfork(NULL, NULL, atfork_child);
    }
    atomic_store(&g_active, 1);
    TP_LOG(TYPROF_LOG_INFO, "recorder.start", "out='%s' pid=%u", g_out, g_pid);
out:
    pthread_mutex_unlock(&g_life);
    if (rc == 0)
        note_gpu_presence();
    return rc;
}

TY_EXPORT int typrof_stop(void)
{
    pthread_mutex_lock(&g_life);
    if (!atomic_load(&g_active)) {
        pthread_mutex_unlock(&g_life);
        return -TYPROF_ESTATE;
    }
    atomic_store(&g_active, 0); /* new annotations are refused from here */
    while (atomic_load(&g_inflight) > 0)
        sched_yield();
    if (g_rot_running) {
        pthread_mutex_lock(&g_rot_mu);
        g_rot_stop = 1;
        pthread_cond_signal(&g_rot_cv);
        pthread_mutex_unlock(&g_rot_mu);
        pthread_join(g_rot_thread, NULL);
        g_rot_running = 0;
    }
    /* ranges still open at stop are closed now */
    uint64_t now = typrof_now_ns();
    pthread_mutex_lock(&g_rlock);
    for (uint32_t i = 0; i < MAX_RANGES && g_nfree < MAX_RANGES; i++) {
        if (!g_ranges[i].used)
            continue;
        typrof__proc_host(&g_proc, TP_EV_RANGE, g_ranges[i].name, g_ranges[i].start, now, g_pid,
                          g_ranges[i].tid, 0);
        g_ranges[i].used = 0;
        g_ranges[i].gen++;
        g_free_slots[g_nfree++] = i;
    }
    pthread_mutex_unlock(&g_rlock);
    int rc = do_flush(1);
    typrof__cupti_stop();
    typrof__proc_cleanup(&g_proc);
    TP_LOG(TYPROF_LOG_INFO, "recorder.stop", "out='%s' rc=%d", g_out, rc);
    pthread_mutex_unlock(&g_life);
    return rc;
}

TY_EXPORT int typrof_flush(void)
{
    pthread_mutex_lock(&g_life);
    int rc = atomic_load(&g_active) ? do_flush(1) : -TYPROF_ESTATE;
    pthread_mutex_unlock(&g_life);
    return rc;
}

struct typrof_proc *typrof__runtime_proc(int force)
{
    if (!atomic_load(&g_active) && (force || getenv("TYPROF_OUT")))
        typrof_start(NULL);
    return atomic_load(&g_active) ? &g_proc : NULL;
}

__attribute__((constructor)) static void runtime_init(void)
{
    const char *e = getenv("TYPROF_OUT");
    const char *d = getenv("TYPROF_DISABLE");
    typrof__log_init();
    if (e && *e && !(d && *d && strcmp(d, "0")))
        typrof_start(e);
}

/* Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library.
 * Returns 1 (success) even when CUPTI cannot start, so the application still runs. */
TY_EXPORT int InitializeInjection(void)
{
    struct typrof_proc *p = typrof__runtime_proc(1);
    const char *why = NULL;
    if (!p)
        return 1;
    if (typrof__cupti_start(p, &why) != 0)
        typrof__runtime_gpu_note(why);
    else
        typrof__runtime_gpu_note(NULL);
    return 1;
}

/* ---- annotations ---- */

TY_EXPORT uint64_t typrof_range_begin(const char *name)
{
    uint64_t h = 0;
    if (!name || !enter())
        return 0;
    uint64_t now = typrof_now_ns();
    const char *n = typrof__proc_intern(&g_proc, name);
    pthread_mutex_lock(&g_rlock);
    if (n && g_nfree > 0) {
        uint32_t slot = g_free_slots[--g_nfree];
        struct open_range *r = &g_ranges[slot];
        r->used = 1;
        r->start = now;
        r->name = n;
        r->tid = my_tid();
        if (++r->gen == 0)
            r->gen = 1;
        h = ((uint64_t)r->gen << 32) | slot;
    }
    pthread_mutex_unlock(&g_rlock);
    leave();
    return h;
}

TY_EXPORT void typrof_range_end(uint64_t handle)
{
    uint32_t slot = (uint32_t)(handle & 0xffffffffu), gen = (uint32_t)(handle >> 32);
    if (!handle || slot >= MAX_RANGES || !enter())
        return;
    uint64_t now = typrof_now_ns();
    pthread_mutex_lock(&g_rlock);
    struct open_range r = g_ranges[slot];
    int ok = r.used && r.gen == gen;
    if (ok) {
        g_ranges[slot].used = 0;
        g_free_slots[g_nfree++] = slot;
    }
    pthread_mutex_unlock(&g_rlock);
    if (ok)
        typrof__proc_host(&g_proc, TP_EV_RANGE, r.name, r.start, now, g_pid, r.tid, 0);
    leave();
}

TY_EXPORT void typrof_mark(const char *name)
{
    if (!name || !enter())
        return;
    uint64_t now = typrof_now_ns();
    typrof__proc_host(&g_proc, TP_EV_MARK, name, now, now, g_pid, my_tid(), 0);
    leave();
}

TY_EXPORT void typrof_step_end(int64_t step)
{
    if (!t_step_open || step != t_step || !enter())
        return;
    t_step_open = 0;
    /* one name for all steps (the number is in args.step_num), as SageMaker's timeline does */
    typrof__proc_host(&g_proc, TP_EV_STEP, "Step", t_step_start, typrof_now_ns(), g_pid, my_tid(),
                      step);
    leave();
}

TY_EXPORT void typrof_step_begin(int64_t step)
{
    if (!atomic_load(&g_active))
        return;
    if (t_step_open)
        typrof_step_end(t_step);
    t_step_open = 1;
    t_step = step;
    t_step_start = typrof_now_ns();
}
