#ifndef TY_PROFILER_CUPTI_ABI_H
#define TY_PROFILER_CUPTI_ABI_H
/*
 * cupti_abi.h - the few CUPTI activity records, enums and entry points libtyprof uses,
 * declared from the documented CUPTI 13.0 ABI (cupti_activity.h, CUPTI_API_VERSION 130001) so
 * that libtyprof builds and its record-processing tests run without the CUDA toolkit.
 *
 * The fields read from the kernel record (start, end, device, stream, correlation id, name) sit
 * at the same offsets in Kernel4..Kernel10, and record sizes only matter to
 * cuptiActivityGetNextRecord, which is CUPTI's own, so a newer CUPTI stays readable; its version
 * is logged at start.
 * Invariant: every struct here has the size and field offsets of its CUPTI namesake on LP64;
 * tests/test_cupti_abi.c checks that with static asserts against the real header whenever the
 * toolkit is found (TY_WITH_CUDA). Only fields libtyprof reads are named; the rest is padding.
 */
#include <stddef.h>
#include <stdint.h>

enum {
    TP_CUPTI_SUCCESS = 0,
    TP_CUPTI_ERROR_MAX_LIMIT_REACHED = 12,
};

enum {
    TP_KIND_MEMCPY = 1,
    TP_KIND_MEMSET = 2,
    TP_KIND_KERNEL = 3,
    TP_KIND_DRIVER = 4,
    TP_KIND_RUNTIME = 5,
    TP_KIND_CONCURRENT_KERNEL = 10,
    TP_KIND_OVERHEAD = 17,
    TP_KIND_SYNCHRONIZATION = 38,
};

#define TP_FLUSH_FORCED      1u
#define TP_CB_DOMAIN_DRIVER  1
#define TP_CB_DOMAIN_RUNTIME 2

struct tp_act { /* CUpti_Activity */
    uint32_t kind;
};

struct tp_act_kernel10 { /* CUpti_ActivityKernel10, 216 bytes */
    uint32_t kind;
    uint8_t cache_config, smem_config;
    uint16_t registers_per_thread;
    uint32_t pgc_requested, pgc_executed;
    uint64_t start;     /* 16 */
    uint64_t end;       /* 24 */
    uint64_t completed; /* 32 */
    uint32_t device_id; /* 40 */
    uint32_t context_id;
    uint32_t stream_id; /* 48 */
    int32_t grid_x, grid_y, grid_z, block_x, block_y, block_z;
    int32_t static_smem, dynamic_smem;
    uint32_t local_mem_per_thread, local_mem_total;
    uint32_t correlation_id; /* 92 */
    int64_t grid_id;         /* 96 */
    const char *name;        /* 104 */
    void *reserved0;
    uint64_t queued;    /* 120 */
    uint64_t submitted; /* 128 */
    uint8_t rest[216 - 136];
};

struct tp_act_memcpy6 { /* CUpti_ActivityMemcpy6, 96 bytes */
    uint32_t kind;
    uint8_t copy_kind, src_kind, dst_kind, flags;
    uint64_t bytes; /* 8 */
    uint64_t start; /* 16 */
    uint64_t end;   /* 24 */
    uint32_t device_id, context_id, stream_id, correlation_id;
    uint32_t runtime_correlation_id, pad;
    void *reserved0;
    uint64_t graph_node_id;
    uint32_t graph_id, channel_id, channel_type;
    uint8_t is_device_launched, pad2[3];
    uint64_t copy_count;
};

struct tp_act_memset4 { /* CUpti_ActivityMemset4, 88 bytes */
    uint32_t kind;
    uint32_t value;
    uint64_t bytes, start, end;
    uint32_t device_id, context_id, stream_id, correlation_id;
    uint16_t flags, memory_kind;
    uint32_t pad;
    void *reserved0;
    uint64_t graph_node_id;
    uint32_t graph_id, channel_id, channel_type;
    uint8_t is_device_launched, pad2[3];
};

struct tp_act_api { /* CUpti_ActivityAPI, 40 bytes (kinds DRIVER and RUNTIME) */
    uint32_t kind;
    uint32_t cbid;
    uint64_t start, end;
    uint32_t process_id, thread_id, correlation_id, return_value;
};

struct tp_act_sync2 { /* CUpti_ActivitySynchronization2, 56 bytes */
    uint32_t kind;
    uint32_t type;
    uint64_t start, end;
    uint32_t correlation_id, context_id, stream_id, cuda_event_id;
    uint64_t cuda_event_sync_id;
    uint32_t return_value, pad;
};

struct tp_act_overhead3 { /* CUpti_ActivityOverhead3, 56 bytes */
    uint32_t kind;
    uint32_t overhead_kind, object_kind;
    uint32_t object_id[3];
    uint64_t start, end;
    uint32_t correlation_id, reserved0;
    void *overhead_data;
};

_Static_assert(sizeof(struct tp_act_kernel10) == 216, "Kernel10 size");
_Static_assert(offsetof(struct tp_act_kernel10, correlation_id) == 92, "Kernel10 corr");
_Static_assert(offsetof(struct tp_act_kernel10, name) == 104, "Kernel10 name");
_Static_assert(sizeof(struct tp_act_memcpy6) == 96, "Memcpy6 size");
_Static_assert(sizeof(struct tp_act_memset4) == 88, "Memset4 size");
_Static_assert(sizeof(struct tp_act_api) == 40, "API size");
_Static_assert(sizeof(struct tp_act_sync2) == 56, "Synchronization2 size");
_Static_assert(sizeof(struct tp_act_overhead3) == 56, "Overhead3 size");

/* Entry points resolved with dlsym from libcupti.so (all return CUptiResult, 0 = success). */
typedef void (*tp_buf_req_fn)(uint8_t **buf, size_t *size, size_t *max_records);
typedef void (*tp_buf_done_fn)(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid);
struct tp_cupti_api {
    int (*register_callbacks)(tp_buf_req_fn, tp_buf_done_fn);
    int (*enable)(uint32_t kind);
    int (*disable)(uint32_t kind);
    int (*flush_all)(uint32_t flag);
    int (*flush_period)(uint32_t ms);
    int (*get_next_record)(uint8_t *buf, size_t valid, void **rec);
    int (*get_num_dropped)(void *ctx, uint32_t stream, size_t *dropped);
    int (*get_timestamp)(uint64_t *ts);
    int (*get_result_string)(int res, const char **str);
    int (*enable_latency_ts)(uint8_t enable);
    int (*get_callback_name)(uint32_t domain, uint32_t cbid, const char **name);
    int (*finalize)(void);
    int (*enable_runtime_api)(uint32_t cbid, uint8_t enable);
    int (*enable_driver_api)(uint32_t cbid, uint8_t enable);
    int (*get_version)(uint32_t *version);
};

/* Noisy calls muted when fine-grained API tracing is available (as Kineto does): runtime
 * cudaGetDeviceCount, cudaGetLastError, cudaPeekAtLastError, cudaSetDevice, cudaGetDevice,
 * cudaEventQuery, cudaStreamIsCapturing, cudaStreamGetCaptureInfo; driver cuCtxGetDevice,
 * cuCtxSetCurrent, cuCtxGetCurrent, cuDevicePrimaryCtxGetState, cuStreamIsCapturing,
 * cuGetProcAddress, cuGetProcAddress_v2. tests/test_cupti_abi.c checks the values. */
#define TP_MUTED_RUNTIME_CBIDS                                                                     \
    {                                                                                              \
        3, 10, 11, 16, 17, 138, 317, 324                                                           \
    }
#define TP_MUTED_DRIVER_CBIDS                                                                      \
    {                                                                                              \
        16, 303, 304, 392, 499, 626, 677                                                           \
    }

#endif /* TY_PROFILER_CUPTI_ABI_H */
