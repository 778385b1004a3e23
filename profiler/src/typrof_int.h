#ifndef TY_PROFILER_TYPROF_INT_H
#define TY_PROFILER_TYPROF_INT_H
/*
 * typrof_int.h - library-internal declarations shared by libtyprof's files, the CLI and the
 * unit tests (which link the static core). Nothing here is exported from libtyprof.so.
 *
 * Modules: alloc/log/time (util.c), JSON text output (jsonw.c), the record-processing core
 * (proc.c), the trace and summary writers (trace.c, summary.c), the CUPTI glue (cupti.c),
 * the system monitor (sysmon.c) and the recorder life cycle (runtime.c).
 */
#include "typrof.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

/* ---- util.c: allocator hook, logger, clock ---- */
void *typrof__malloc(size_t n);
void *typrof__calloc(size_t n, size_t sz);
void *typrof__realloc(void *p, size_t n);
void typrof__free(void *p);
char *typrof__strdup(const char *s); /* new: caller frees with typrof__free() */
#define ty_safefree(p)                                                                             \
    do {                                                                                           \
        typrof__free(p);                                                                           \
        (p) = NULL;                                                                                \
    } while (0)

extern int typrof__log_level;
/* Reads TYPROF_LOG (error|warn|info|debug; default warn) unless a callback is set. */
void typrof__log_init(void);
void typrof__logf(int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define TP_LOG(lvl, ev, ...)                                                                       \
    do {                                                                                           \
        if ((lvl) <= typrof__log_level)                                                            \
            typrof__logf((lvl), (ev), __VA_ARGS__);                                                \
    } while (0)

uint64_t typrof__realtime_ns(void);
/* Creates dir and its parents (mode 0755). Returns 0 or -TYPROF_EIO. */
int typrof__mkdirs(const char *dir);
/* Node id: $TYPROF_NODE_ID, else $SM_CURRENT_HOST, else "algo-1". Borrowed, static. */
const char *typrof__node_id(void);
/* Writes "<YYYYMMDDHH>" (UTC) of epoch seconds t into out (11 bytes). */
void typrof__hour_dir(int64_t t, char out[11]);

/* Thread ids: CUPTI reports the thread of an API call as (uint32_t)pthread_self(), annotations
 * use the OS tid. Threads register both once (runtime.c); the trace writer maps CUPTI's id to
 * the OS tid so API calls and annotations share a track. Up to 4096 threads; thread-safe. */
void typrof__tid_register(uint32_t cupti_id, uint32_t os_tid);
/* The OS tid registered for id, or id itself. */
uint32_t typrof__tid_lookup(uint32_t id);

/* ---- jsonw.c: JSON text output on a FILE ---- */
/* Writes s as a JSON string literal (quotes included); invalid UTF-8 becomes U+FFFD. */
void typrof__json_str(FILE *f, const char *s);
/* Writes a double as a JSON number (non-finite values become 0). */
void typrof__json_num(FILE *f, double v);

/* ---- cupti_abi.h holds the record layouts; proc.c: the record-processing core ---- */
enum typrof_ev_type {
    TP_EV_API_RUNTIME = 1,
    TP_EV_API_DRIVER,
    TP_EV_KERNEL,
    TP_EV_MEMCPY,
    TP_EV_MEMSET,
    TP_EV_SYNC,
    TP_EV_OVERHEAD,
    TP_EV_RANGE, /* annotation range */
    TP_EV_MARK,  /* instant annotation */
    TP_EV_STEP,  /* step range */
};

/* One timeline event of the current segment (a trace file's worth). */
struct typrof_ev {
    uint64_t start, end; /* ns, profiler clock */
    const char *name;    /* borrowed: interned, lives as long as the proc */
    uint64_t bytes;      /* memcpy/memset */
    int64_t step;        /* TP_EV_STEP */
    uint32_t type;       /* enum typrof_ev_type */
    uint32_t pid;        /* host process id (host events) */
    uint32_t tid;        /* host thread id, or stream id for device events */
    uint32_t device;     /* device events */
    uint32_t corr;       /* CUPTI correlation id, 0 if none */
    uint32_t sub;        /* copyKind, cbid, sync type, overhead kind */
};

/* An API record remembered for correlation. */
struct typrof_api {
    uint64_t start, end;
    uint32_t corr, pid, tid, cbid;
    uint32_t segment; /* segment the API event was written in */
    uint32_t driver;
};

struct typrof_stat {  /* per-name aggregate */
    const char *name; /* borrowed: interned */
    uint64_t count, total_ns, min_ns, max_ns;
};

struct typrof_stattab { /* per-name aggregates, hashed on the interned name pointer */
    struct typrof_stat *v;
    size_t n, cap;
    size_t *idx; /* index+1 into v, 0 empty; capidx is a power of two */
    size_t capidx;
};

struct typrof_samples { /* bounded sample set for percentiles (reservoir beyond the ceiling) */
    int64_t *v;
    size_t n, cap, ceiling;
    uint64_t seen, rng;
};

#define TP_MAX_DEVICES    64
#define TP_MAX_COPY_KINDS 12
#define TP_MAX_SYNC_TYPES 8

struct typrof_devstat {
    int used;
    uint64_t first_ns, last_ns, busy_ns, merged_end;
    uint64_t kernels, kernel_ns;
};

struct typrof_copystat {
    uint64_t count, bytes, total_ns;
};

/*
 * The processing core. Producers (CUPTI buffer thread, annotating threads) add records under
 * `lock`; one flusher at a time (flush_lock) takes the segment, joins device work to API calls
 * by correlation id, updates the aggregates and hands the segment to the trace writer.
 * Invariants: names are interned once and never move; aggregates change only under flush_lock.
 */
struct typrof_proc {
    pthread_mutex_t lock;
    pthread_mutex_t flush_lock;
    /* current segment (under lock) */
    struct typrof_ev *ev;
    size_t nev, capev, max_events; /* max_events: ceiling, extra events are counted as dropped */
    uint64_t dropped;              /* events over the ceiling + CUPTI dropped records */
    uint32_t segment;              /* number of the current segment, from 0 */
    /* API correlation map (open addressing on corr, under lock) */
    struct typrof_api *api;
    size_t napi, capapi, max_api;
    /* interned names (under lock) */
    char **names;
    size_t nnames, capnames;
    size_t *name_hash; /* index+1 into names, 0 empty */
    size_t capnh;
    /* aggregates (under flush_lock) */
    struct typrof_stattab kern, api_calls, ranges;
    struct typrof_samples lat_start; /* kernel.start - api.start, ns */
    struct typrof_samples lat_end;   /* kernel.start - api.end, ns */
    struct typrof_samples steps;     /* step durations, ns */
    struct typrof_devstat dev[TP_MAX_DEVICES];
    struct typrof_copystat copy[TP_MAX_COPY_KINDS];
    struct typrof_copystat memset_stat;
    uint64_t sync_count, sync_ns, sync_type_ns[TP_MAX_SYNC_TYPES];
    uint64_t overhead_ns, overhead_count;
    uint64_t kernels_matched, kernels_unmatched;
    uint64_t first_step_ns; /* 0: no step seen */
    uint64_t events_total;
    uint64_t first_ns, last_ns; /* span of all events seen */
};

/* Initialises p with ceilings (0 = defaults: 4M events per segment, 1M API entries). Returns 0
 * or -TYPROF_ENOMEM. Thread-safe after init. */
int typrof__proc_init(struct typrof_proc *p, size_t max_events, size_t max_api);
void typrof__proc_cleanup(struct typrof_proc *p);

/* Feeds one CUPTI activity record (a CUpti_Activity pointer of a kind listed in cupti_abi.h); other
 * kinds are ignored. Thread-safe. Returns 1 if used, 0 if ignored. */
int typrof__proc_record(struct typrof_proc *p, const void *record);

/* Walks a buffer of packed activity records laid out as CUPTI does (8-byte aligned, sizes of
 * the kinds in cupti_abi.h) and feeds each; next may be NULL to use that built-in layout, or
 * CUPTI's cuptiActivityGetNextRecord. Returns the number of records fed. */
typedef int (*typrof_next_fn)(uint8_t *buf, size_t valid, void **rec);
size_t typrof__proc_buffer(struct typrof_proc *p, uint8_t *buf, size_t valid, typrof_next_fn next);
int typrof__next_record_builtin(uint8_t *buf, size_t valid, void **rec);

/* Host-side events (annotations). name is copied. Thread-safe. */
void typrof__proc_host(struct typrof_proc *p, enum typrof_ev_type type, const char *name,
                       uint64_t start, uint64_t end, uint32_t pid, uint32_t tid, int64_t step);

/* Interns s: returns a borrowed pointer valid while p lives, or NULL on ENOMEM. Locks. */
const char *typrof__proc_intern(struct typrof_proc *p, const char *s);

/* Takes the current segment, correlates it, updates aggregates. OUT: *evs, *nev (new: caller
 * frees *evs with typrof__free()), sorted by start. Serialises with other flushes through
 * flush_lock, which stays held until typrof__proc_end_flush(). Returns 0 or -TYPROF_ENOMEM. */
int typrof__proc_begin_flush(struct typrof_proc *p, struct typrof_ev **evs, size_t *nev,
                             uint32_t *segment);
void typrof__proc_end_flush(struct typrof_proc *p);
/* Looks up the API record of corr (call with flush_lock held). OUT: *api. Returns 1 if found. */
int typrof__proc_api(struct typrof_proc *p, uint32_t corr, struct typrof_api *api);

/* Percentile (0..100) of a sample set, nearest rank; 0 when empty. Sorts s->v. */
int64_t typrof__samples_pct(struct typrof_samples *s, double pct);
void typrof__samples_add(struct typrof_samples *s, int64_t v);

/* Names: CUPTI API callback id to a function name (built-in table of common calls; NULL if
 * unknown), copy kinds ("HtoD"...), sync types. Static strings. */
const char *typrof__api_name(int driver, uint32_t cbid);
const char *typrof__copy_kind_name(uint32_t kind);
const char *typrof__sync_type_name(uint32_t type);
/* Optional resolver for API names set by cupti.c when CUPTI is loaded. */
extern const char *(*typrof__api_name_hook)(int driver, uint32_t cbid);

/* ---- trace.c: Chrome trace / Perfetto JSON ---- */
struct typrof_trace_meta {
    uint64_t base_ns; /* time zero of the file, ns since epoch */
    uint32_t pid;
    const char *node;    /* borrowed */
    const char *process; /* borrowed: process label, e.g. the command name */
};
/* Writes evs (sorted by start) as {"displayTimeUnit":"ns","traceEvents":[...]} to path via a
 * temporary file and rename. Flow arrows join API→kernel/memcpy/memset when the API event is
 * in the same segment. Call with flush_lock held. Returns 0 or -TYPROF_EIO/-TYPROF_ENOMEM. */
int typrof__trace_write(struct typrof_proc *p, const struct typrof_ev *evs, size_t nev,
                        uint32_t segment, const struct typrof_trace_meta *m, const char *path);

/* ---- summary.c ---- */
struct typrof_summary_meta {
    uint64_t start_ns, end_ns;
    uint32_t pid;
    const char *node;
    const char *gpu_note; /* borrowed: why GPU tracing is off, or NULL */
    int gpu_tracing;
};
/* Writes the summary JSON of p's aggregates to path (temp + rename). Locks flush_lock.
 * Returns 0 or -TYPROF_EIO. */
int typrof__summary_write(struct typrof_proc *p, const struct typrof_summary_meta *m,
                          const char *path);

/* ---- cupti.c ---- */
/* Opens libcupti (dlopen), registers buffer callbacks, enables activity kinds. Records go to
 * p through a worker thread. Returns 0, or -TYPROF_EGPU with *why set (static string). */
int typrof__cupti_start(struct typrof_proc *p, const char **why);
/* Forces CUPTI to return all buffers and waits until they are processed. */
void typrof__cupti_flush(void);
void typrof__cupti_stop(void);
int typrof__cupti_active(void);
/* CUPTI's timestamp when loaded, else 0 (caller uses realtime). */
uint64_t typrof__cupti_now(void);

/* ---- runtime.c ---- */
/* Starts the recorder if TYPROF_OUT asks for it or force is set; returns the processing core
 * while recording, else NULL (borrowed: valid until typrof_stop()). */
struct typrof_proc *typrof__runtime_proc(int force);
/* Records why GPU tracing is off (static string), reported in the summary. */
void typrof__runtime_gpu_note(const char *why);

/* ---- sysmon.c: system monitor ---- */
struct typrof_sysmon; /* opaque */
struct typrof_sysmon_opts {
    const char *out_dir;  /* borrowed: copied by start */
    const char *node;     /* NULL: typrof__node_id() */
    unsigned interval_ms; /* 0: 500 */
    int no_gpu;           /* skip NVML */
};
/* Starts the sampling thread. OUT: *out (new: stop with typrof__sysmon_stop(), which frees).
 * Returns 0 or -TYPROF_EIO/-TYPROF_ENOMEM; on failure no thread runs. */
int typrof__sysmon_start(const struct typrof_sysmon_opts *o, struct typrof_sysmon **out);
/* Takes one last sample, stops the thread, closes files, frees s. NULL is a no-op. */
void typrof__sysmon_stop(struct typrof_sysmon *s);
/* Number of samples written so far; number of GPUs found through NVML. */
uint64_t typrof__sysmon_samples(const struct typrof_sysmon *s);
int typrof__sysmon_gpus(const struct typrof_sysmon *s);
/* Sets the interval while running (UpdateTrainingJob). */
void typrof__sysmon_set_interval(struct typrof_sysmon *s, unsigned interval_ms);

/* Per-device counters (network interfaces, whole disks): a pair of monotonic byte counters
 * (rx/tx, read/written) per name. Rates are computed per device, never on sums. */
#define TYPROF_DEV_MAX 256
struct typrof_devctr {
    char name[64];
    uint64_t a, b;
};
/* Parses /proc/net/dev text from f (all interfaces but lo). OUT: dev[0..max). Returns the count. */
size_t typrof__net_parse(FILE *f, struct typrof_devctr *dev, size_t max);
/* Parses /proc/diskstats text from f; whole_disk(name) filters (NULL: keep all). OUT: dev[] in
 * bytes. Returns the count. */
size_t typrof__disk_parse(FILE *f, int (*whole_disk)(const char *), struct typrof_devctr *dev,
                          size_t max);
/* Sums, per device present in both cur and prev (matched by name), cur - prev of a and of b;
 * a device that is new, gone, or whose counter went backwards (reset, wrap, a new device of
 * the same name) contributes 0 for that counter. OUT: *da, *db (never negative). */
void typrof__dev_delta(const struct typrof_devctr *prev, size_t np, const struct typrof_devctr *cur,
                       size_t nc, uint64_t *da, uint64_t *db);

#endif /* TY_PROFILER_TYPROF_INT_H */
