/* annot.c - the trainer's profiler annotations: step boundaries and forward / backward /
 * optimizer ranges through libtyprof's public API (profiler/include/typrof.h), found at run time:
 * the library already in the process (CUDA injection, LD_PRELOAD) or $TYPROF_LIB when $TYPROF_OUT
 * is set, as `typrof run` exports them (loading it starts the recorder). No link-time dependency:
 * without the library every call here is a cheap no-op. Resolved once, on the first call;
 * thread-safe (the pointers are published with release/acquire). */
#include "tyc_int.h"
#include "typrof.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

struct annot_api {
    __typeof__(typrof_range_begin) *begin;
    __typeof__(typrof_range_end) *end;
    __typeof__(typrof_step_begin) *step_begin;
    __typeof__(typrof_step_end) *step_end;
};

static struct annot_api annot_fns;
static int annot_state; /* 0 unresolved, 1 resolving, 2 done */

static void *annot_handle(void)
{
    const char *out = getenv("TYPROF_OUT"), *lib = getenv("TYPROF_LIB");
    const char *off = getenv("TYPROF_DISABLE");
    void *h;
    if (off && *off && strcmp(off, "0") != 0)
        return NULL;
    if ((h = dlopen("libtyprof.so", RTLD_NOW | RTLD_NOLOAD)))
        return h;
    if (lib && *lib && (h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD)))
        return h;
    if (out && *out && lib && *lib)
        return dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    return NULL;
}

static const struct annot_api *annot_api(void)
{
    int st = __atomic_load_n(&annot_state, __ATOMIC_ACQUIRE), want = 0;
    if (st == 2)
        return annot_fns.begin ? &annot_fns : NULL;
    if (st == 0 && __atomic_compare_exchange_n(&annot_state, &want, 1, 0, __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE)) {
        void *h = annot_handle();
        struct annot_api a;
        memset(&a, 0, sizeof(a));
        if (h) {
            *(void **)&a.begin = dlsym(h, "typrof_range_begin");
            *(void **)&a.end = dlsym(h, "typrof_range_end");
            *(void **)&a.step_begin = dlsym(h, "typrof_step_begin");
            *(void **)&a.step_end = dlsym(h, "typrof_step_end");
            if (!a.begin || !a.end || !a.step_begin || !a.step_end)
                memset(&a, 0, sizeof(a));
            else
                tyc__log(2, "event=tyc.profiler annotations=on");
        }
        annot_fns = a;
        __atomic_store_n(&annot_state, 2, __ATOMIC_RELEASE);
        return annot_fns.begin ? &annot_fns : NULL;
    }
    return NULL; /* another thread is resolving: this call goes unrecorded */
}

uint64_t tyc__annot_begin(const char *name)
{
    const struct annot_api *a = annot_api();
    return a ? a->begin(name) : 0;
}

void tyc__annot_end(uint64_t h)
{
    const struct annot_api *a;
    if (h && (a = annot_api()))
        a->end(h);
}

void tyc__annot_step(int64_t step, int begin)
{
    const struct annot_api *a = annot_api();
    if (a) {
        if (begin)
            a->step_begin(step);
        else
            a->step_end(step);
    }
}

void tyc__annot_phase(const struct tyc__graph *g, int i, int *phase, uint64_t *h)
{
    static const char *const names[] = {"forward", "backward", "optimizer"};
    int want = i < 0 || g->phase_end[0] <= 0 ? -1
               : i < g->phase_end[0]         ? 0
               : i < g->phase_end[1]         ? 1
                                             : 2;
    if (want == *phase)
        return;
    tyc__annot_end(*h);
    *h = want >= 0 ? tyc__annot_begin(names[want]) : 0;
    *phase = want;
}
