/*
 * test_cupti_abi.c - checks at compile time that src/cupti_abi.h mirrors the real CUPTI
 * headers (sizes and the offsets libtyprof reads). Built only when the CUDA toolkit is found.
 */
#include <cupti.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cupti_abi.h"

#define SAME(ours, theirs, f1, f2)                                                                 \
    _Static_assert(offsetof(struct ours, f1) == offsetof(theirs, f2), #theirs "." #f2)
#define SIZE(ours, theirs) _Static_assert(sizeof(struct ours) == sizeof(theirs), #theirs " size")

SIZE(tp_act_kernel10, CUpti_ActivityKernel10);
SAME(tp_act_kernel10, CUpti_ActivityKernel10, start, start);
SAME(tp_act_kernel10, CUpti_ActivityKernel10, end, end);
SAME(tp_act_kernel10, CUpti_ActivityKernel10, device_id, deviceId);
SAME(tp_act_kernel10, CUpti_ActivityKernel10, stream_id, streamId);
SAME(tp_act_kernel10, CUpti_ActivityKernel10, correlation_id, correlationId);
SAME(tp_act_kernel10, CUpti_ActivityKernel10, name, name);
SAME(tp_act_kernel10, CUpti_ActivityKernel10, queued, queued);
SAME(tp_act_kernel10, CUpti_ActivityKernel10, submitted, submitted);
SIZE(tp_act_memcpy6, CUpti_ActivityMemcpy6);
SAME(tp_act_memcpy6, CUpti_ActivityMemcpy6, copy_kind, copyKind);
SAME(tp_act_memcpy6, CUpti_ActivityMemcpy6, bytes, bytes);
SAME(tp_act_memcpy6, CUpti_ActivityMemcpy6, start, start);
SAME(tp_act_memcpy6, CUpti_ActivityMemcpy6, device_id, deviceId);
SAME(tp_act_memcpy6, CUpti_ActivityMemcpy6, stream_id, streamId);
SAME(tp_act_memcpy6, CUpti_ActivityMemcpy6, correlation_id, correlationId);
SIZE(tp_act_memset4, CUpti_ActivityMemset4);
SAME(tp_act_memset4, CUpti_ActivityMemset4, bytes, bytes);
SAME(tp_act_memset4, CUpti_ActivityMemset4, start, start);
SAME(tp_act_memset4, CUpti_ActivityMemset4, device_id, deviceId);
SAME(tp_act_memset4, CUpti_ActivityMemset4, stream_id, streamId);
SAME(tp_act_memset4, CUpti_ActivityMemset4, correlation_id, correlationId);
SIZE(tp_act_api, CUpti_ActivityAPI);
SAME(tp_act_api, CUpti_ActivityAPI, cbid, cbid);
SAME(tp_act_api, CUpti_ActivityAPI, start, start);
SAME(tp_act_api, CUpti_ActivityAPI, process_id, processId);
SAME(tp_act_api, CUpti_ActivityAPI, thread_id, threadId);
SAME(tp_act_api, CUpti_ActivityAPI, correlation_id, correlationId);
SIZE(tp_act_sync2, CUpti_ActivitySynchronization2);
SAME(tp_act_sync2, CUpti_ActivitySynchronization2, type, type);
SAME(tp_act_sync2, CUpti_ActivitySynchronization2, start, start);
SAME(tp_act_sync2, CUpti_ActivitySynchronization2, correlation_id, correlationId);
SAME(tp_act_sync2, CUpti_ActivitySynchronization2, stream_id, streamId);
SIZE(tp_act_overhead3, CUpti_ActivityOverhead3);
SAME(tp_act_overhead3, CUpti_ActivityOverhead3, overhead_kind, overheadKind);
SAME(tp_act_overhead3, CUpti_ActivityOverhead3, object_kind, objectKind);
SAME(tp_act_overhead3, CUpti_ActivityOverhead3, start, start);
SAME(tp_act_overhead3, CUpti_ActivityOverhead3, correlation_id, correlationId);

_Static_assert((int)TP_KIND_CONCURRENT_KERNEL == (int)CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
               "kind");
_Static_assert((int)TP_KIND_MEMCPY == (int)CUPTI_ACTIVITY_KIND_MEMCPY, "kind");
_Static_assert((int)TP_KIND_MEMSET == (int)CUPTI_ACTIVITY_KIND_MEMSET, "kind");
_Static_assert((int)TP_KIND_RUNTIME == (int)CUPTI_ACTIVITY_KIND_RUNTIME, "kind");
_Static_assert((int)TP_KIND_DRIVER == (int)CUPTI_ACTIVITY_KIND_DRIVER, "kind");
_Static_assert((int)TP_KIND_SYNCHRONIZATION == (int)CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "kind");
_Static_assert((int)TP_KIND_OVERHEAD == (int)CUPTI_ACTIVITY_KIND_OVERHEAD, "kind");
_Static_assert((int)TP_CUPTI_ERROR_MAX_LIMIT_REACHED == (int)CUPTI_ERROR_MAX_LIMIT_REACHED,
               "result");
_Static_assert((int)TP_FLUSH_FORCED == (int)CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, "flag");
_Static_assert((int)TP_CB_DOMAIN_DRIVER == (int)CUPTI_CB_DOMAIN_DRIVER_API, "domain");
_Static_assert((int)TP_CB_DOMAIN_RUNTIME == (int)CUPTI_CB_DOMAIN_RUNTIME_API, "domain");
_Static_assert(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 == 211, "cbid");
_Static_assert(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel == 307, "cbid");
_Static_assert(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE == 3, "sync type");
_Static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD == 1, "copy kind");

static const uint32_t mute_rt[] = TP_MUTED_RUNTIME_CBIDS, mute_drv[] = TP_MUTED_DRIVER_CBIDS;
static const uint32_t real_rt[] = {CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
                                   CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010};
static const uint32_t real_drv[] = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice,      CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,     CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
    CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress,
    CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2};

int main(void)
{
    _Static_assert(sizeof(mute_rt) == sizeof(real_rt), "muted runtime list");
    _Static_assert(sizeof(mute_drv) == sizeof(real_drv), "muted driver list");
    for (size_t i = 0; i < sizeof(mute_rt) / sizeof(mute_rt[0]); i++)
        if (mute_rt[i] != real_rt[i]) {
            printf("runtime cbid %zu: %u != %u\n", i, mute_rt[i], real_rt[i]);
            return 1;
        }
    for (size_t i = 0; i < sizeof(mute_drv) / sizeof(mute_drv[0]); i++)
        if (mute_drv[i] != real_drv[i]) {
            printf("driver cbid %zu: %u != %u\n", i, mute_drv[i], real_drv[i]);
            return 1;
        }
    printf("cupti_abi.h matches cupti.h (CUPTI_API_VERSION %d)\n", CUPTI_API_VERSION);
    return 0;
}
