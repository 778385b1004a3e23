/*
 * proc.c - the record-processing core: turns CUPTI activity records and host annotations into
 * timeline events, joins device work to the launching API call by correlation id, and keeps
 * the aggregates the summary reports (per-kernel times, launch latency samples, GPU busy time,
 * copy bytes per direction, sync time, CUPTI overhead, step durations).
 *
 * Does not own: any file output (trace.c, summary.c) or CUPTI itself (cupti.c). Thread model in
 * typrof_int.h (struct typrof_proc). Every array has a ceiling; beyond it events are counted
 * in `dropped` (segment) or sampled (latencies), never grown without bound.
 */
#include "cupti_abi.h"
#include "typrof_int.h"
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_EVENTS  (4u << 20)
#define DEFAULT_MAX_API     (1u << 20)
#define DEFAULT_MAX_SAMPLES (1u << 22)
#define MAX_NAMES           (1u << 20)
#define MAX_STATS           (1u << 16)

const char *(*typrof__api_name_hook)(int driver, uint32_t cbid);

static void samples_init(struct typrof_samples *s, size_t ceiling)
{
    memset(s, 0, sizeof(*s));
    s->ceiling = ceiling;
    s->rng = 0x9E3779B97F4A7C15ull;
}

int typrof__proc_init(struct typrof_proc *p, size_t max_events, size_t max_api)
{
    memset(p, 0, sizeof(*p));
    p->max_events = max_events ? max_events : DEFAULT_MAX_EVENTS;
    p->max_api = max_api ? max_api : DEFAULT_MAX_API;
    samples_init(&p->lat_start, DEFAULT_MAX_SAMPLES);
    samples_init(&p->lat_end, DEFAULT_MAX_SAMPLES);
    samples_init(&p->steps, 1u << 20);
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        return -TYPROF_ENOMEM;
    if (pthread_mutex_init(&p->flush_lock, NULL) != 0) {
        pthread_mutex_destroy(&p->lock);
        return -TYPROF_ENOMEM;
    }
    return 0;
}

void typrof__proc_cleanup(struct typrof_proc *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nnames; i++)
        typrof__free(p->names[i]);
    ty_safefree(p->names);
    ty_safefree(p->name_hash);
    ty_safefree(p->ev);
    ty_safefree(p->api);
    struct typrof_stattab *tabs[] = {&p->kern, &p->api_calls, &p->ranges};
    for (size_t i = 0; i < 3; i++) {
        ty_safefree(tabs[i]->v);
        ty_safefree(tabs[i]->idx);
    }
    ty_safefree(p->lat_start.v);
    ty_safefree(p->lat_end.v);
    ty_safefree(p->steps.v);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->flush_lock);
}

/* ---- names ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static int name_rehash(struct typrof_proc *p, size_t cap)
{
    size_t *nh = typrof__calloc(cap, sizeof(*nh));
    if (!nh)
        return -TYPROF_ENOMEM;
    for (size_t i = 0; i < p->nnames; i++) {
        size_t j = hash_str(p->names[i]) & (cap - 1);
        while (nh[j])
            j = (j + 1) & (cap - 1);
        nh[j] = i + 1;
    }
    typrof__free(p->name_hash);
    p->name_hash = nh;
    p->capnh = cap;
    return 0;
}

static const char *intern_locked(struct typrof_proc *p, const char *s)
{
    if (!s)
        s = "?";
    if (p->capnh) {
        size_t j = hash_str(s) & (p->capnh - 1);
        while (p->name_hash[j]) {
            const char *n = p->names[p->name_hash[j] - 1];
            if (!strcmp(n, s))
                return n;
            j = (j + 1) & (p->capnh - 1);
        }
    }
    if (p->nnames >= MAX_NAMES)
        return "(names over ceiling)";
    if (p->nnames + 1 > p->capnh / 2) {
        if (name_rehash(p, p->capnh ? p->capnh * 2 : 256) != 0)
            return NULL;
    }
    if (p->nnames == p->capnames) {
        size_t cap = p->capnames ? p->capnames * 2 : 128;
        char **nn = typrof__realloc(p->names, cap * sizeof(*nn));
        if (!nn)
            return NULL;
        p->names = nn;
        p->capnames = cap;
    }
    char *d = typrof__strdup(s);
    if (!d)
        return NULL;
    p->names[p->nnames++] = d;
    size_t j = hash_str(d) & (p->capnh - 1);
    while (p->name_hash[j])
        j = (j + 1) & (p->capnh - 1);
    p->name_hash[j] = p->nnames;
    return d;
}

const char *typrof__proc_intern(struct typrof_proc *p, const char *s)
{
    pthread_mutex_lock(&p->lock);
    const char *r = intern_locked(p, s);
    pthread_mutex_unlock(&p->lock);
    return r;
}

/* ---- API correlation map ---- */

static uint32_t corr_slot(uint32_t corr, size_t cap)
{
    return (uint32_t)(((uint64_t)corr * 2654435761u) & (cap - 1));
}

static int api_put_locked(struct typrof_proc *p, const struct typrof_api *a)
{
    if (p->napi >= p->max_api && p->capapi) {
        /* ceiling: forget old calls; kernels launched by them lose their arrow */
        memset(p->api, 0, p->capapi * sizeof(*p->api));
        p->napi = 0;
    }
    if (p->napi + 1 > p->capapi / 2) {
        size_t cap = p->capapi ? p->capapi * 2 : 4096;
        struct typrof_api *na = typrof__calloc(cap, sizeof(*na));
        if (!na)
            return -TYPROF_ENOMEM;
        for (size_t i = 0; i < p->capapi; i++) {
            if (!p->api[i].corr)
                continue;
            uint32_t j = corr_slot(p->api[i].corr, cap);
            while (na[j].corr)
                j = (uint32_t)((j + 1) & (cap - 1));
            na[j] = p->api[i];
        }
        typrof__free(p->api);
        p->api = na;
        p->capapi = cap;
    }
    uint32_t j = corr_slot(a->corr, p->capapi);
    while (p->api[j].corr && p->api[j].corr != a->corr)
        j = (uint32_t)((j + 1) & (p->capapi - 1));
    if (!p->api[j].corr)
        p->napi++;
    else if (p->api[j].driver == 0 && a->driver)
        return 0; /* keep the runtime call: it is what the user wrote */
    p->api[j] = *a;
    return 0;
}

int typrof__proc_api(struct typrof_proc *p, uint32_t corr, struct typrof_api *api)
{
    int found = 0;
    pthread_mutex_lock(&p->lock);
    if (corr && p->capapi) {
        uint32_t j = corr_slot(corr, p->capapi);
        while (p->api[j].corr) {
            if (p->api[j].corr == corr) {
                *api = p->api[j];
                found = 1;
                break;
            }
            j = (uint32_t)((j + 1) & (p->capapi - 1));
        }
    }
    pthread_mutex_unlock(&p->lock);
    return found;
}

/* ---- events ---- */

static struct typrof_ev *ev_push_locked(struct typrof_proc *p)
{
    if (p->nev >= p->max_events) {
        p->dropped++;
        return NULL;
    }
    if (p->nev == p->capev) {
        size_t cap = p->capev ? p->capev * 2 : 1024;
        if (cap > p->max_events)
            cap = p->max_events;
        struct typrof_ev *ne = typrof__realloc(p->ev, cap * sizeof(*ne));
        if (!ne) {
            p->dropped++;
            return NULL;
        }
        p->ev = ne;
        p->capev = cap;
    }
    struct typrof_ev *e = &p->ev[p->nev++];
    memset(e, 0, sizeof(*e));
    return e;
}

int typrof__proc_record(struct typrof_proc *p, const void *record)
{
    const struct tp_act *r = record;
    struct typrof_ev tmp;
    memset(&tmp, 0, sizeof(tmp));
    const char *raw_name = NULL;
    int is_api = 0;
    struct typrof_api api;

    switch (r->kind) {
    case TP_KIND_CONCURRENT_KERNEL:
    case TP_KIND_KERNEL: {
        const struct tp_act_kernel10 *k = record;
        tmp.type = TP_EV_KERNEL;
        tmp.start = k->start;
        tmp.end = k->end;
        tmp.device = k->device_id;
        tmp.tid = k->stream_id;
        tmp.corr = k->correlation_id;
        raw_name = k->name ? k->name : "(unnamed kernel)";
        break;
    }
    case TP_KIND_MEMCPY: {
        const struct tp_act_memcpy6 *m = record;
        tmp.type = TP_EV_MEMCPY;
        tmp.start = m->start;
        tmp.end = m->end;
        tmp.device = m->device_id;
        tmp.tid = m->stream_id;
        tmp.corr = m->correlation_id;
        tmp.bytes = m->bytes;
        tmp.sub = m->copy_kind;
        raw_name = typrof__copy_kind_name(m->copy_kind);
        break;
    }
    case TP_KIND_MEMSET: {
        const struct tp_act_memset4 *m = record;
        tmp.type = TP_EV_MEMSET;
        tmp.start = m->start;
        tmp.end = m->end;
        tmp.device = m->device_id;
        tmp.tid = m->stream_id;
        tmp.corr = m->correlation_id;
        tmp.bytes = m->bytes;
        raw_name = "Memset";
        break;
    }
    case TP_KIND_RUNTIME:
    case TP_KIND_DRIVER: {
        const struct tp_act_api *a = record;
        int drv = r->kind == TP_KIND_DRIVER;
        tmp.type = drv ? TP_EV_API_DRIVER : TP_EV_API_RUNTIME;
        tmp.start = a->start;
        tmp.end = a->end;
        tmp.pid = a->process_id;
        tmp.tid = a->thread_id;
        tmp.corr = a->correlation_id;
        tmp.sub = a->cbid;
        raw_name = typrof__api_name(drv, a->cbid);
        memset(&api, 0, sizeof(api));
        api.start = a->start;
        api.end = a->end;
        api.corr = a->correlation_id;
        api.pid = a->process_id;
        api.tid = a->thread_id;
        api.cbid = a->cbid;
        api.driver = (uint32_t)drv;
        is_api = a->correlation_id != 0;
        break;
    }
    case TP_KIND_SYNCHRONIZATION: {
        const struct tp_act_sync2 *s = record;
        tmp.type = TP_EV_SYNC;
        tmp.start = s->start;
        tmp.end = s->end;
        tmp.corr = s->correlation_id;
        tmp.tid = s->stream_id;
        tmp.sub = s->type;
        raw_name = typrof__sync_type_name(s->type);
        break;
    }
    case TP_KIND_OVERHEAD: {
        const struct tp_act_overhead3 *o = record;
        tmp.type = TP_EV_OVERHEAD;
        tmp.start = o->start;
        tmp.end = o->end;
        tmp.sub = o->overhead_kind;
        tmp.pid = o->object_kind == 1 ? o->object_id[0] : 0; /* OBJECT_KIND_PROCESS/THREAD */
        tmp.tid = o->object_kind == 2 ? o->object_id[1] : 0;
        raw_name = "CUPTI overhead";
        break;
    }
    default:
        return 0;
    }
    if (tmp.end < tmp.start)
        tmp.end = tmp.start;

    char fallback[64];
    if (!raw_name) {
        snprintf(fallback, sizeof(fallback), "%s#%u",
                 tmp.type == TP_EV_API_DRIVER ? "cuDriver" : "cudaRuntime", tmp.sub);
        raw_name = fallback;
    }
    pthread_mutex_lock(&p->lock);
    tmp.name = intern_locked(p, raw_name);
    if (is_api) {
        api.segment = p->segment;
        api_put_locked(p, &api);
    }
    struct typrof_ev *e = ev_push_locked(p);
    if (e)
        *e = tmp;
    pthread_mutex_unlock(&p->lock);
    return 1;
}

void typrof__proc_host(struct typrof_proc *p, enum typrof_ev_type type, const char *name,
                       uint64_t start, uint64_t end, uint32_t pid, uint32_t tid, int64_t step)
{
    pthread_mutex_lock(&p->lock);
    const char *n = intern_locked(p, name);
    struct typrof_ev *e = n ? ev_push_locked(p) : NULL;
    if (e) {
        e->type = type;
        e->name = n;
        e->start = start;
        e->end = end < start ? start : end;
        e->pid = pid;
        e->tid = tid;
        e->step = step;
    }
    pthread_mutex_unlock(&p->lock);
}

/* ---- buffers ---- */

static size_t record_size(uint32_t kind)
{
    switch (kind) {
    case TP_KIND_CONCURRENT_KERNEL:
    case TP_KIND_KERNEL:
        return sizeof(struct tp_act_kernel10);
    case TP_KIND_MEMCPY:
        return sizeof(struct tp_act_memcpy6);
    case TP_KIND_MEMSET:
        return sizeof(struct tp_act_memset4);
    case TP_KIND_RUNTIME:
    case TP_KIND_DRIVER:
        return sizeof(struct tp_act_api);
    case TP_KIND_SYNCHRONIZATION:
        return sizeof(struct tp_act_sync2);
    case TP_KIND_OVERHEAD:
        return sizeof(struct tp_act_overhead3);
    default:
        return 0;
    }
}

/* The built-in walker: *rec NULL starts at buf. Mirrors cuptiActivityGetNextRecord's contract
 * (SUCCESS, then MAX_LIMIT_REACHED at the end) for buffers built by tests. */
int typrof__next_record_builtin(uint8_t *buf, size_t valid, void **rec)
{
    size_t off = 0;
    if (*rec) {
        const struct tp_act *r = *rec;
        size_t sz = record_size(r->kind);
        off = (size_t)((uint8_t *)*rec - buf) + ((sz + 7) & ~(size_t)7);
    }
    if (off + sizeof(struct tp_act) > valid)
        return TP_CUPTI_ERROR_MAX_LIMIT_REACHED;
    const struct tp_act *n = (const struct tp_act *)(buf + off);
    size_t sz = record_size(n->kind);
    if (sz == 0 || off + sz > valid)
        return TP_CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = buf + off;
    return TP_CUPTI_SUCCESS;
}

size_t typrof__proc_buffer(struct typrof_proc *p, uint8_t *buf, size_t valid, typrof_next_fn next)
{
    void *rec = NULL;
    size_t n = 0;
    if (!next)
        next = typrof__next_record_builtin;
    while (next(buf, valid, &rec) == TP_CUPTI_SUCCESS) {
        typrof__proc_record(p, rec);
        n++;
    }
    return n;
}

/* ---- samples ---- */

void typrof__samples_add(struct typrof_samples *s, int64_t v)
{
    s->seen++;
    if (s->n < s->ceiling) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 1024;
            if (cap > s->ceiling)
                cap = s->ceiling;
            int64_t *nv = typrof__realloc(s->v, cap * sizeof(*nv));
            if (!nv)
                return;
            s->v = nv;
            s->cap = cap;
        }
        s->v[s->n++] = v;
        return;
    }
    /* reservoir sampling (Algorithm R) with a xorshift generator */
    s->rng ^= s->rng << 13;
    s->rng ^= s->rng >> 7;
    s->rng ^= s->rng << 17;
    uint64_t j = s->rng % s->seen;
    if (j < s->n)
        s->v[j] = v;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t typrof__samples_pct(struct typrof_samples *s, double pct)
{
    if (s->n == 0)
        return 0;
    qsort(s->v, s->n, sizeof(*s->v), cmp_i64);
    if (pct <= 0)
        return s->v[0];
    size_t rank = (size_t)((pct / 100.0) * (double)s->n + 0.999999999);
    if (rank < 1)
        rank = 1;
    if (rank > s->n)
        rank = s->n;
    return s->v[rank - 1];
}

/* ---- aggregation at flush ---- */

static size_t ptr_slot(const char *name, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)name * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static int stat_rehash(struct typrof_stattab *t, size_t cap)
{
    size_t *idx = typrof__calloc(cap, sizeof(*idx));
    if (!idx)
        return -TYPROF_ENOMEM;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = ptr_slot(t->v[i].name, cap);
        while (idx[j])
            j = (j + 1) & (cap - 1);
        idx[j] = i + 1;
    }
    typrof__free(t->idx);
    t->idx = idx;
    t->capidx = cap;
    return 0;
}

static void stat_add(struct typrof_stattab *t, const char *name, uint64_t dur)
{
    /* names are interned: pointer equality is name equality */
    if (t->capidx) {
        size_t j = ptr_slot(name, t->capidx);
        while (t->idx[j]) {
            struct typrof_stat *s = &t->v[t->idx[j] - 1];
            if (s->name == name) {
                s->count++;
                s->total_ns += dur;
                if (dur < s->min_ns)
                    s->min_ns = dur;
                if (dur > s->max_ns)
                    s->max_ns = dur;
                return;
            }
            j = (j + 1) & (t->capidx - 1);
        }
    }
    if (t->n >= MAX_STATS)
        return;
    if (t->n + 1 > t->capidx / 2 && stat_rehash(t, t->capidx ? t->capidx * 2 : 128) != 0)
        return;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        struct typrof_stat *nv = typrof__realloc(t->v, nc * sizeof(*nv));
        if (!nv)
            return;
        t->v = nv;
        t->cap = nc;
    }
    struct typrof_stat *s = &t->v[t->n++];
    s->name = name;
    s->count = 1;
    s->total_ns = s->min_ns = s->max_ns = dur;
    size_t j = ptr_slot(name, t->capidx);
    while (t->idx[j])
        j = (j + 1) & (t->capidx - 1);
    t->idx[j] = t->n;
}

static int cmp_ev_start(const void *a, const void *b)
{
    const struct typrof_ev *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    /* longer first, so enclosing slices precede nested ones */
    uint64_t dx = x->end - x->start, dy = y->end - y->start;
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return 0;
}

static void dev_busy(struct typrof_proc *p, const struct typrof_ev *e)
{
    if (e->device >= TP_MAX_DEVICES)
        return;
    struct typrof_devstat *d = &p->dev[e->device];
    if (!d->used) {
        d->used = 1;
        d->first_ns = e->start;
        d->merged_end = e->start;
    }
    if (e->start < d->first_ns)
        d->first_ns = e->start;
    if (e->end > d->last_ns)
        d->last_ns = e->end;
    /* events arrive sorted by start within a segment: merge overlapping intervals */
    uint64_t s = e->start > d->merged_end ? e->start : d->merged_end;
    if (e->end > s)
        d->busy_ns += e->end - s;
    if (e->end > d->merged_end)
        d->merged_end = e->end;
}

int typrof__proc_begin_flush(struct typrof_proc *p, struct typrof_ev **evs, size_t *nev,
                             uint32_t *segment)
{
    pthread_mutex_lock(&p->flush_lock);
    pthread_mutex_lock(&p->lock);
    struct typrof_ev *e = p->ev;
    size_t n = p->nev;
    uint32_t seg = p->segment;
    p->ev = NULL;
    p->nev = p->capev = 0;
    p->segment++;
    pthread_mutex_unlock(&p->lock);

    if (n)
        qsort(e, n, sizeof(*e), cmp_ev_start);
    for (size_t i = 0; i < n; i++) {
        struct typrof_ev *x = &e[i];
        uint64_t dur = x->end - x->start;
        if (p->events_total == 0 || x->start < p->first_ns)
            p->first_ns = x->start;
        if (x->end > p->last_ns)
            p->last_ns = x->end;
        p->events_total++;
        switch (x->type) {
        case TP_EV_KERNEL: {
            struct typrof_api a;
            stat_add(&p->kern, x->name, dur);
            if (x->device < TP_MAX_DEVICES) {
                p->dev[x->device].kernels++;
                p->dev[x->device].kernel_ns += dur;
            }
            if (typrof__proc_api(p, x->corr, &a)) {
                p->kernels_matched++;
                typrof__samples_add(&p->lat_start, (int64_t)x->start - (int64_t)a.start);
                typrof__samples_add(&p->lat_end, (int64_t)x->start - (int64_t)a.end);
            } else {
                p->kernels_unmatched++;
            }
            dev_busy(p, x);
            break;
        }
        case TP_EV_MEMCPY:
            if (x->sub < TP_MAX_COPY_KINDS) {
                p->copy[x->sub].count++;
                p->copy[x->sub].bytes += x->bytes;
                p->copy[x->sub].total_ns += dur;
            }
            dev_busy(p, x);
            break;
        case TP_EV_MEMSET:
            p->memset_stat.count++;
            p->memset_stat.bytes += x->bytes;
            p->memset_stat.total_ns += dur;
            dev_busy(p, x);
            break;
        case TP_EV_API_RUNTIME:
        case TP_EV_API_DRIVER:
            stat_add(&p->api_calls, x->name, dur);
            break;
        case TP_EV_SYNC:
            p->sync_count++;
            p->sync_ns += dur;
            if (x->sub < TP_MAX_SYNC_TYPES)
                p->sync_type_ns[x->sub] += dur;
            break;
        case TP_EV_OVERHEAD:
            p->overhead_count++;
            p->overhead_ns += dur;
            break;
        case TP_EV_RANGE:
            stat_add(&p->ranges, x->name, dur);
            break;
        case TP_EV_STEP:
            if (p->first_step_ns == 0 || x->start < p->first_step_ns)
                p->first_step_ns = x->start;
            typrof__samples_add(&p->steps, (int64_t)dur);
            break;
        default:
            break;
        }
    }
    *evs = e;
    *nev = n;
    *segment = seg;
    return 0;
}

void typrof__proc_end_flush(struct typrof_proc *p)
{
    pthread_mutex_unlock(&p->flush_lock);
}

/* ---- names of enums ---- */

const char *typrof__copy_kind_name(uint32_t kind)
{
    static const char *n[] = {"Memcpy ?",    "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA",
                              "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA",
                              "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
    return kind < sizeof(n) / sizeof(n[0]) ? n[kind] : n[0];
}

const char *typrof__sync_type_name(uint32_t type)
{
    static const char *n[] = {"Sync ?", "cudaEventSynchronize", "cudaStreamWaitEvent",
                              "cudaStreamSynchronize", "cudaDeviceSynchronize"};
    return type < sizeof(n) / sizeof(n[0]) ? n[type] : n[0];
}

const char *typrof__api_name(int driver, uint32_t cbid)
{
    static const struct {
        uint32_t cbid;
        const char *name;
    } rt[] = {{17, "cudaGetDevice"},
              {20, "cudaMalloc"},
              {22, "cudaFree"},
              {31, "cudaMemcpy"},
              {41, "cudaMemcpyAsync"},
              {49, "cudaMemset"},
              {51, "cudaMemsetAsync"},
              {131, "cudaStreamSynchronize"},
              {137, "cudaEventSynchronize"},
              {147, "cudaStreamWaitEvent"},
              {165, "cudaDeviceSynchronize"},
              {211, "cudaLaunchKernel"},
              {311, "cudaGraphLaunch"},
              {430, "cudaLaunchKernelExC"}},
      drv[] = {{17, "cuCtxSynchronize"}, {126, "cuStreamSynchronize"}, {243, "cuMemAlloc_v2"},
               {245, "cuMemFree_v2"},    {276, "cuMemcpyHtoD_v2"},     {278, "cuMemcpyDtoH_v2"},
               {304, "cuCtxGetCurrent"}, {306, "cuMemcpyAsync"},       {307, "cuLaunchKernel"},
               {652, "cuLaunchKernelEx"}};
    if (typrof__api_name_hook) {
        const char *h = typrof__api_name_hook(driver, cbid);
        if (h)
            return h;
    }
    if (driver) {
        for (size_t i = 0; i < sizeof(drv) / sizeof(drv[0]); i++)
            if (drv[i].cbid == cbid)
                return drv[i].name;
    } else {
        for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++)
            if (rt[i].cbid == cbid)
                return rt[i].name;
    }
    return NULL;
}
