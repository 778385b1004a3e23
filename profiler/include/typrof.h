#ifndef TY_PROFILER_TYPROF_H
#define TY_PROFILER_TYPROF_H
/*
 * typrof.h - the public API of libtyprof, trainyard's GPU/CPU profiler.
 *
 * Owns: the annotation API (ranges, instant marks, step boundaries), start/stop/flush of the
 * in-process recorder, and the log and allocator hooks. Does not own: the system monitor and
 * the rules, which the `typrof` CLI runs (see profiler/README.md).
 *
 * The library is normally loaded by the CUDA driver through CUDA_INJECTION64_PATH, or by the
 * Python `smprof` module through ctypes; it starts recording on load when TYPROF_OUT is set.
 * Every function here is thread-safe and cheap when the recorder is not active (a no-op).
 * Timestamps are nanoseconds on CUPTI's clock (CLOCK_REALTIME when CUPTI is absent).
 */
#include <stddef.h>
#include <stdint.h>

#ifndef TY_EXPORT
#define TY_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: functions return 0 or one of these, negated. Codes are only ever appended. */
#define TYPROF_EINVAL  1 /* bad argument */
#define TYPROF_ENOMEM  2 /* allocation failed or a ceiling was reached */
#define TYPROF_EIO     3 /* a file could not be written */
#define TYPROF_ESTATE  4 /* wrong state (already started, not started) */
#define TYPROF_EGPU    5 /* CUDA/CUPTI/NVML failure or absence */
#define TYPROF_ENOTSUP 6 /* not built with this feature */

enum typrof_log_level {
    TYPROF_LOG_ERROR = 0,
    TYPROF_LOG_WARN = 1,
    TYPROF_LOG_INFO = 2,
    TYPROF_LOG_DEBUG = 3,
};

/* Log callback: event is a dotted name ("cupti.init"), msg is "k=v ..." text without newline.
 * Both are borrowed for the duration of the call. May be called from any thread. */
typedef void (*typrof_log_fn)(int level, const char *event, const char *msg, void *userdata);

/* Replaces the logger (NULL restores the default stderr logger, level from TYPROF_LOG). */
TY_EXPORT void typrof_set_log(typrof_log_fn fn, void *userdata, int max_level);

struct typrof_allocators {
    void *(*malloc_fn)(size_t);
    void *(*calloc_fn)(size_t, size_t);
    void *(*realloc_fn)(void *, size_t);
    void (*free_fn)(void *);
};

/* Replaces the allocator. Returns 0, or -TYPROF_ESTATE once the recorder has started. */
TY_EXPORT int typrof_set_allocators(const struct typrof_allocators *a);

/* Starts recording into out_dir (NULL: $TYPROF_OUT, else /opt/ml/output/profiler). Creates the
 * directory. Returns 0, -TYPROF_ESTATE if already started, -TYPROF_EIO, -TYPROF_ENOMEM. */
TY_EXPORT int typrof_start(const char *out_dir);

/* Flushes pending GPU records, writes the last trace file and the summary, stops recording.
 * Returns 0 or -TYPROF_ESTATE when not started, -TYPROF_EIO. Registered with atexit on start. */
TY_EXPORT int typrof_stop(void);

/* Writes the events recorded so far as one trace file (a rotation). Returns 0 or -TYPROF_E*. */
TY_EXPORT int typrof_flush(void);

/* 1 while recording, else 0. */
TY_EXPORT int typrof_is_active(void);

/* 1 when CUPTI activity tracing is running in this process, else 0. */
TY_EXPORT int typrof_gpu_tracing(void);

/* Opens a range named name (copied) on the calling thread's timeline. Returns a handle for
 * typrof_range_end(), or 0 when not recording or too many ranges are open (65536). */
TY_EXPORT uint64_t typrof_range_begin(const char *name);

/* Closes the range; may be called from another thread. Unknown or 0 handles are ignored. */
TY_EXPORT void typrof_range_end(uint64_t handle);

/* Records an instant mark named name (copied). */
TY_EXPORT void typrof_mark(const char *name);

/* Step boundaries: a range "Step" in category "step" with args.step_num; one step is open per
 * thread (beginning another ends it). Durations feed the summary and the StepOutlier and
 * MaxInitializationTime rules. */
TY_EXPORT void typrof_step_begin(int64_t step);
TY_EXPORT void typrof_step_end(int64_t step);

/* Current time on the profiler clock, in ns. */
TY_EXPORT uint64_t typrof_now_ns(void);

/* Library version, e.g. "0.1.0". Static string. */
TY_EXPORT const char *typrof_version(void);

#ifdef __cplusplus
}
#endif
#endif /* TY_PROFILER_TYPROF_H */
