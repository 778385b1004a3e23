/*
 * trace.c - writes one segment of timeline events as Chrome-trace / Perfetto JSON:
 * {"displayTimeUnit":"ns","otherData":{...},"traceEvents":[metadata..., events...]}.
 *
 * Layout: one pid per host process (tid = OS thread) plus two host lanes for CUDA
 * synchronisation and CUPTI overhead; one pid per GPU (TP_GPU_PID_BASE + device, tid = stream).
 * Invariants of the output (checked by tests/test_trace.c): all "M" events first; the other
 * events in non-decreasing ts; ts/dur in microseconds relative to otherData.base_time_ns; every
 * flow start "s" (on the launching API call) has one "f" with bp "e" and the same id/cat/name.
 */
#include "typrof_int.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TP_GPU_PID_BASE   1000000000u
#define TP_LANE_SYNC      2147483645u
#define TP_LANE_OVERHEAD  2147483646u
#define TP_MAX_META_TRACK 4096

enum { PH_X = 0, PH_I = 1, PH_S = 2, PH_F = 3 };

struct item {
    uint64_t ts, dur;
    uint32_t ph, idx;
    uint32_t pid, tid; /* used by flow start */
};

static int cmp_item(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->ph != y->ph)
        return x->ph < y->ph ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

static const char *cat_of(uint32_t type)
{
    switch (type) {
    case TP_EV_API_RUNTIME:
        return "cuda_runtime";
    case TP_EV_API_DRIVER:
        return "cuda_driver";
    case TP_EV_KERNEL:
        return "kernel";
    case TP_EV_MEMCPY:
        return "gpu_memcpy";
    case TP_EV_MEMSET:
        return "gpu_memset";
    case TP_EV_SYNC:
        return "cuda_sync";
    case TP_EV_OVERHEAD:
        return "cupti_overhead";
    case TP_EV_STEP:
        return "step";
    default:
        return "annotation";
    }
}

static int is_device(uint32_t type)
{
    return type == TP_EV_KERNEL || type == TP_EV_MEMCPY || type == TP_EV_MEMSET;
}

static void where(const struct typrof_ev *e, uint32_t host_pid, uint32_t *pid, uint32_t *tid)
{
    if (is_device(e->type)) {
        *pid = TP_GPU_PID_BASE + e->device;
        *tid = e->tid;
    } else if (e->type == TP_EV_SYNC) {
        *pid = host_pid;
        *tid = TP_LANE_SYNC;
    } else if (e->type == TP_EV_OVERHEAD) {
        *pid = e->pid ? e->pid : host_pid;
        *tid = TP_LANE_OVERHEAD;
    } else if (e->type == TP_EV_API_RUNTIME || e->type == TP_EV_API_DRIVER) {
        *pid = e->pid ? e->pid : host_pid;
        *tid = typrof__tid_lookup(e->tid);
    } else {
        *pid = e->pid ? e->pid : host_pid;
        *tid = e->tid;
    }
}

static void us(FILE *f, uint64_t ns, uint64_t base)
{
    uint64_t d = ns >= base ? ns - base : 0;
    fprintf(f, "%llu.%03llu", (unsigned long long)(d / 1000), (unsigned long long)(d % 1000));
}

struct track {
    uint32_t pid, tid;
};

static int track_seen(struct track *t, size_t *n, uint32_t pid, uint32_t tid)
{
    for (size_t i = 0; i < *n; i++)
        if (t[i].pid == pid && t[i].tid == tid)
            return 1;
    if (*n < TP_MAX_META_TRACK) {
        t[*n].pid = pid;
        t[*n].tid = tid;
        (*n)++;
    }
    return 0;
}

static void meta(FILE *f, const char *what, uint32_t pid, int with_tid, uint32_t tid,
                 const char *name, int *first)
{
    fputs(*first ? "\n" : ",\n", f);
    *first = 0;
    fprintf(f, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%u,", what, pid);
    if (with_tid)
        fprintf(f, "\"tid\":%u,", tid);
    fputs("\"args\":{\"name\":", f);
    typrof__json_str(f, name);
    fputs("}}", f);
}

static void thread_label(uint32_t pid, uint32_t tid, char *out, size_t n)
{
    snprintf(out, n, "thread %u", tid);
    if (pid != (uint32_t)getpid())
        return;
    char path[96];
    snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
    FILE *c = fopen(path, "r");
    if (!c)
        return;
    char comm[64];
    if (fgets(comm, sizeof(comm), c)) {
        comm[strcspn(comm, "\n")] = '\0';
        snprintf(out, n, "%s (%u)", comm, tid);
    }
    fclose(c);
}

static void write_meta(FILE *f, const struct typrof_ev *evs, size_t nev,
                       const struct typrof_trace_meta *m, int *first)
{
    struct track *t = typrof__calloc(TP_MAX_META_TRACK, sizeof(*t));
    size_t nt = 0;
    char label[160];
    if (!t)
        return;
    snprintf(label, sizeof(label), "%s %s (pid %u)", m->node, m->process ? m->process : "host",
             m->pid);
    track_seen(t, &nt, m->pid, UINT32_MAX);
    meta(f, "process_name", m->pid, 0, 0, label, first);
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,"
            "\"args\":{\"sort_index\":0}}",
            m->pid);
    for (size_t i = 0; i < nev; i++) {
        uint32_t pid, tid;
        where(&evs[i], m->pid, &pid, &tid);
        if (!track_seen(t, &nt, pid, UINT32_MAX)) {
            if (pid >= TP_GPU_PID_BASE) {
                snprintf(label, sizeof(label), "GPU %u", pid - TP_GPU_PID_BASE);
                meta(f, "process_name", pid, 0, 0, label, first);
                fprintf(f,
                        ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,"
                        "\"args\":{\"sort_index\":%u}}",
                        pid, 1 + pid - TP_GPU_PID_BASE);
            } else {
                snprintf(label, sizeof(label), "%s pid %u", m->node, pid);
                meta(f, "process_name", pid, 0, 0, label, first);
            }
        }
        if (track_seen(t, &nt, pid, tid))
            continue;
        if (pid >= TP_GPU_PID_BASE)
            snprintf(label, sizeof(label), "stream %u", tid);
        else if (tid == TP_LANE_SYNC)
            snprintf(label, sizeof(label), "CUDA synchronization");
        else if (tid == TP_LANE_OVERHEAD)
            snprintf(label, sizeof(label), "CUPTI overhead");
        else
            thread_label(pid, tid, label, sizeof(label));
        meta(f, "thread_name", pid, 1, tid, label, first);
    }
    typrof__free(t);
}

static void write_args(FILE *f, const struct typrof_ev *e, const struct typrof_api *a, int has_api)
{
    fputs(",\"args\":{", f);
    int n = 0;
#define SEP() fputs(n++ ? "," : "", f)
    if (e->corr) {
        SEP();
        fprintf(f, "\"correlation\":%u", e->corr);
    }
    switch (e->type) {
    case TP_EV_KERNEL:
        SEP();
        fprintf(f, "\"device\":%u,\"stream\":%u", e->device, e->tid);
        if (has_api) {
            fputs(",\"launch_latency_us\":", f);
            typrof__json_num(f, ((double)e->start - (double)a->start) / 1000.0);
            fputs(",\"launched_by\":", f);
            typrof__json_str(f, typrof__api_name((int)a->driver, a->cbid));
        }
        break;
    case TP_EV_MEMCPY:
    case TP_EV_MEMSET:
        SEP();
        fprintf(f, "\"device\":%u,\"stream\":%u,\"bytes\":%llu", e->device, e->tid,
                (unsigned long long)e->bytes);
        if (e->end > e->start) {
            fputs(",\"bandwidth_GBps\":", f);
            typrof__json_num(f, (double)e->bytes / (double)(e->end - e->start));
        }
        break;
    case TP_EV_API_RUNTIME:
    case TP_EV_API_DRIVER:
        SEP();
        fprintf(f, "\"cbid\":%u", e->sub);
        break;
    case TP_EV_STEP:
        SEP();
        fprintf(f, "\"step_num\":\"%lld\"", (long long)e->step);
        break;
    case TP_EV_OVERHEAD:
        SEP();
        fprintf(f, "\"overhead_kind\":%u", e->sub);
        break;
    default:
        break;
    }
#undef SEP
    fputc('}', f);
}

int typrof__trace_write(struct typrof_proc *p, const struct typrof_ev *evs, size_t nev,
                        uint32_t segment, const struct typrof_trace_meta *m, const char *path)
{
    char tmp[4200];
    const char *err_op = "alloc";
    FILE *f = NULL;
    struct item *it = NULL;
    size_t ni = 0;
    int rc;
    uint64_t base = m->base_ns;
    if (nev && evs[0].start < base)
        base = evs[0].start;

    it = typrof__malloc((2 * nev + 1) * sizeof(*it));
    if (!it)
        goto fail;
    for (size_t i = 0; i < nev; i++) {
        const struct typrof_ev *e = &evs[i];
        struct item x = {
            e->start, e->end - e->start, e->type == TP_EV_MARK ? PH_I : PH_X, (uint32_t)i, 0, 0};
        it[ni++] = x;
        struct typrof_api a;
        if (is_device(e->type) && typrof__proc_api(p, e->corr, &a) && a.segment == segment &&
            a.start >= base) {
            struct item s = {
                a.start, 0, PH_S, (uint32_t)i, a.pid ? a.pid : m->pid, typrof__tid_lookup(a.tid)};
            it[ni++] = s;
        }
    }
    qsort(it, ni, sizeof(*it), cmp_item);

    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    err_op = "fopen";
    f = fopen(tmp, "w");
    if (!f)
        goto fail;
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"typrof ", f);
    fputs(TY_VERSION, f);
    fprintf(f, "\",\"node\":");
    typrof__json_str(f, m->node);
    fprintf(f,
            ",\"pid\":%u,\"segment\":%u,\"base_time_ns\":%llu,"
            "\"start_time_since_epoch_in_micros\":%llu},\n\"traceEvents\":[",
            m->pid, segment, (unsigned long long)base, (unsigned long long)(base / 1000));
    int first = 1;
    write_meta(f, evs, nev, m, &first);
    for (size_t k = 0; k < ni; k++) {
        const struct item *x = &it[k];
        const struct typrof_ev *e = &evs[x->idx];
        uint32_t pid, tid;
        struct typrof_api a;
        int has_api = e->corr && is_device(e->type) && typrof__proc_api(p, e->corr, &a);
        fputs(first ? "\n" : ",\n", f);
        first = 0;
        if (x->ph == PH_S) {
            fprintf(f,
                    "{\"ph\":\"s\",\"id\":%u,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"pid\":%u,"
                    "\"tid\":%u,\"ts\":",
                    e->corr, x->pid, x->tid);
            us(f, x->ts, base);
            fputc('}', f);
            continue;
        }
        where(e, m->pid, &pid, &tid);
        fputs(x->ph == PH_I ? "{\"ph\":\"i\",\"s\":\"t\"" : "{\"ph\":\"X\"", f);
        fputs(",\"cat\":", f);
        typrof__json_str(f, cat_of(e->type));
        fputs(",\"name\":", f);
        typrof__json_str(f, e->name);
        fprintf(f, ",\"pid\":%u,\"tid\":%u,\"ts\":", pid, tid);
        us(f, e->start, base);
        if (x->ph == PH_X) {
            fputs(",\"dur\":", f);
            us(f, e->end, e->start);
        }
        write_args(f, e, &a, has_api);
        fputc('}', f);
        if (has_api && a.segment == segment && a.start >= base) {
            fprintf(f,
                    ",\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%u,\"cat\":\"ac2g\",\"name\":\"ac2g\","
                    "\"pid\":%u,\"tid\":%u,\"ts\":",
                    e->corr, pid, tid);
            us(f, e->start, base);
            fputc('}', f);
        }
    }
    fputs("\n]}\n", f);
    err_op = "write";
    if (ferror(f))
        goto fail;
    err_op = "fclose";
    rc = fclose(f);
    f = NULL;
    if (rc != 0)
        goto fail;
    err_op = "rename";
    if (rename(tmp, path) != 0)
        goto fail;
    typrof__free(it);
    return 0;
fail:
    TP_LOG(TYPROF_LOG_ERROR, "trace.write", "path='%s' op=%s", path, err_op);
    if (f) {
        fclose(f);
        unlink(tmp);
    }
    rc = it ? -TYPROF_EIO : -TYPROF_ENOMEM;
    typrof__free(it);
    return rc;
}
