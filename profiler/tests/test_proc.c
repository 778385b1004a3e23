/*
 * test_proc.c - the record-processing core fed with synthetic CUPTI activity buffers (the
 * layouts of cupti_abi.h): correlation launch -> kernel, latency percentiles, GPU busy time,
 * copies, syncs, ceilings; then the trace writer (checked as Perfetto's JSON importer needs it:
 * schema, metadata first, ts order, proper nesting, flow pairs) and the summary writer.
 * JSON is validated with jansson, independently of the writers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cupti_abi.h"
#include "typrof_int.h"

struct buf {
    _Alignas(8) uint8_t b[1 << 16];
    size_t n;
};

static void put(struct buf *b, const void *rec, size_t sz)
{
    assert_true(b->n + sz <= sizeof(b->b));
    memcpy(b->b + b->n, rec, sz);
    b->n += (sz + 7) & ~(size_t)7;
}

static void api(struct buf *b, int driver, uint32_t cbid, uint32_t corr, uint64_t s, uint64_t e,
                uint32_t tid)
{
    struct tp_act_api a;
    memset(&a, 0, sizeof(a));
    a.kind = driver ? TP_KIND_DRIVER : TP_KIND_RUNTIME;
    a.cbid = cbid;
    a.correlation_id = corr;
    a.start = s;
    a.end = e;
    a.process_id = 4242;
    a.thread_id = tid;
    put(b, &a, sizeof(a));
}

static void kernel(struct buf *b, const char *name, uint32_t corr, uint64_t s, uint64_t e,
                   uint32_t dev, uint32_t stream)
{
    struct tp_act_kernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = TP_KIND_CONCURRENT_KERNEL;
    k.name = name;
    k.correlation_id = corr;
    k.start = s;
    k.end = e;
    k.device_id = dev;
    k.stream_id = stream;
    put(b, &k, sizeof(k));
}

static void memcpy_rec(struct buf *b, uint8_t kind, uint64_t bytes, uint32_t corr, uint64_t s,
                       uint64_t e)
{
    struct tp_act_memcpy6 m;
    memset(&m, 0, sizeof(m));
    m.kind = TP_KIND_MEMCPY;
    m.copy_kind = kind;
    m.bytes = bytes;
    m.correlation_id = corr;
    m.start = s;
    m.end = e;
    m.stream_id = 7;
    put(b, &m, sizeof(m));
}

/* The scenario used by several tests. Times in ns. */
static void scenario(struct buf *b)
{
    memset(b, 0, sizeof(*b));
    api(b, 0, 31, 13, 100, 2000, 7); /* cudaMemcpy */
    memcpy_rec(b, 1, 1000000, 13, 950, 1950);
    api(b, 0, 211, 10, 2100, 2500, 7); /* cudaLaunchKernel */
    api(b, 1, 307, 10, 2200, 2400, 7); /* its cuLaunchKernel: same corr, runtime call wins */
    api(b, 0, 211, 11, 2600, 2800, 7);
    api(b, 0, 211, 12, 2900, 3000, 7);
    kernel(b, "k_add", 10, 4100, 6100, 0, 7);
    kernel(b, "k_add", 11, 6600, 7100, 0, 7);
    kernel(b, "k_mul", 12, 5400, 9400, 0, 8);
    kernel(b, "k_orphan", 99, 9400, 9500, 0, 8);
    struct tp_act_sync2 s;
    memset(&s, 0, sizeof(s));
    s.kind = TP_KIND_SYNCHRONIZATION;
    s.type = 3;
    s.start = 9500;
    s.end = 9900;
    s.correlation_id = 14;
    put(b, &s, sizeof(s));
    api(b, 0, 131, 14, 3100, 9950, 7);
    struct tp_act_overhead3 o;
    memset(&o, 0, sizeof(o));
    o.kind = TP_KIND_OVERHEAD;
    o.start = 3000;
    o.end = 3100;
    put(b, &o, sizeof(o));
}

static void test_correlation_and_aggregates(void **state)
{
    (void)state;
    struct typrof_proc p;
    static struct buf b;
    scenario(&b);
    assert_int_equal(typrof__proc_init(&p, 0, 0), 0);
    assert_int_equal(typrof__proc_buffer(&p, b.b, b.n, NULL), 13);
    struct typrof_ev *ev;
    size_t n;
    uint32_t seg;
    assert_int_equal(typrof__proc_begin_flush(&p, &ev, &n, &seg), 0);
    assert_int_equal(n, 13);
    assert_int_equal(seg, 0);
    for (size_t i = 1; i < n; i++)
        assert_true(ev[i - 1].start <= ev[i].start);
    typrof__proc_end_flush(&p);

    assert_int_equal(p.kernels_matched, 3);
    assert_int_equal(p.kernels_unmatched, 1);
    /* kernel.start - api.start: 2000, 4000, 2500 (the runtime call, not the driver call) */
    assert_int_equal(p.lat_start.seen, 3);
    assert_int_equal(typrof__samples_pct(&p.lat_start, 50), 2500);
    assert_int_equal(typrof__samples_pct(&p.lat_start, 99), 4000);
    assert_int_equal(typrof__samples_pct(&p.lat_start, 0), 2000);
    assert_int_equal(typrof__samples_pct(&p.lat_end, 50), 2400);
    /* busy: copy 950-1950, kernels 4100-9400 (overlaps merged), orphan 9400-9500 */
    assert_int_equal(p.dev[0].busy_ns, 1000 + 5300 + 100);
    assert_int_equal(p.dev[0].first_ns, 950);
    assert_int_equal(p.dev[0].last_ns, 9500);
    assert_int_equal(p.dev[0].kernels, 4);
    assert_int_equal(p.copy[1].count, 1);
    assert_int_equal(p.copy[1].bytes, 1000000);
    assert_int_equal(p.copy[1].total_ns, 1000);
    assert_int_equal(p.sync_count, 1);
    assert_int_equal(p.sync_ns, 400);
    assert_int_equal(p.sync_type_ns[3], 400);
    assert_int_equal(p.overhead_ns, 100);
    assert_int_equal(p.kern.n, 3);
    struct typrof_api a;
    assert_true(typrof__proc_api(&p, 10, &a));
    assert_int_equal(a.driver, 0);
    assert_int_equal(a.cbid, 211);
    assert_false(typrof__proc_api(&p, 99, &a));
    typrof__free(ev);
    typrof__proc_cleanup(&p);
}

static void test_buffer_walker_bounds(void **state)
{
    (void)state;
    struct typrof_proc p;
    static struct buf b;
    memset(&b, 0, sizeof(b));
    api(&b, 0, 211, 1, 10, 20, 1);
    kernel(&b, "k", 1, 30, 40, 0, 1);
    assert_int_equal(typrof__proc_init(&p, 0, 0), 0);
    /* truncated second record: only the first is read */
    assert_int_equal(typrof__proc_buffer(&p, b.b, sizeof(struct tp_act_api) + 100, NULL), 1);
    /* an unknown kind ends the walk (its size is unknown) */
    struct tp_act unk = {999};
    size_t at = b.n;
    put(&b, &unk, sizeof(unk));
    assert_int_equal(typrof__proc_buffer(&p, b.b, b.n, NULL), 2);
    (void)at;
    assert_int_equal(typrof__proc_buffer(&p, b.b, 0, NULL), 0);
    /* an unknown kind fed directly is ignored */
    assert_int_equal(typrof__proc_record(&p, &unk), 0);
    typrof__proc_cleanup(&p);
}

static void test_ceilings(void **state)
{
    (void)state;
    struct typrof_proc p;
    static struct buf b;
    memset(&b, 0, sizeof(b));
    assert_int_equal(typrof__proc_init(&p, 5, 4), 0);
    for (uint32_t i = 1; i <= 40; i++)
        api(&b, 0, 211, i, i * 10, i * 10 + 5, 1);
    assert_int_equal(typrof__proc_buffer(&p, b.b, b.n, NULL), 40);
    assert_int_equal(p.nev, 5);
    assert_int_equal(p.dropped, 35);
    assert_true(p.napi <= 8);
    struct typrof_api a;
    assert_true(typrof__proc_api(&p, 40, &a)); /* the newest call survives the reset */

    struct typrof_samples s;
    memset(&s, 0, sizeof(s));
    s.ceiling = 100;
    s.rng = 12345;
    for (int i = 1; i <= 10000; i++)
        typrof__samples_add(&s, i);
    assert_int_equal(s.n, 100);
    assert_int_equal(s.seen, 10000);
    int64_t med = typrof__samples_pct(&s, 50);
    assert_true(med > 2500 && med < 7500); /* a uniform sample of 1..10000 */
    typrof__free(s.v);
    typrof__proc_cleanup(&p);
}

/* ---- trace validation ---- */

static json_t *load_json(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j)
        fprintf(stderr, "json: %s:%d: %s\n", path, err.line, err.text);
    assert_non_null(j);
    return j;
}

struct slice {
    double ts, end;
    long long pid, tid;
};

/* Checks what Perfetto's JSON importer relies on; returns the number of flow pairs. */
static int validate_trace(json_t *root)
{
    assert_true(json_is_object(root));
    assert_string_equal(json_string_value(json_object_get(root, "displayTimeUnit")), "ns");
    json_t *evs = json_object_get(root, "traceEvents");
    assert_true(json_is_array(evs));
    size_t i, n = json_array_size(evs);
    int seen_non_meta = 0, flows = 0;
    double last_ts = -1;
    struct slice *open = calloc(n + 1, sizeof(*open));
    size_t nopen = 0;
    assert_non_null(open);
    for (i = 0; i < n; i++) {
        json_t *e = json_array_get(evs, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        assert_non_null(ph);
        assert_true(json_is_integer(json_object_get(e, "pid")));
        if (!strcmp(ph, "M")) {
            assert_false(seen_non_meta); /* metadata first */
            const char *name = json_string_value(json_object_get(e, "name"));
            assert_non_null(name);
            assert_true(!strcmp(name, "process_name") || !strcmp(name, "thread_name") ||
                        !strcmp(name, "process_sort_index"));
            assert_true(json_is_object(json_object_get(e, "args")));
            continue;
        }
        seen_non_meta = 1;
        assert_true(json_is_integer(json_object_get(e, "tid")));
        json_t *ts = json_object_get(e, "ts");
        assert_true(json_is_number(ts));
        double t = json_number_value(ts);
        assert_true(t >= 0);
        assert_true(t >= last_ts); /* sorted */
        last_ts = t;
        long long pid = json_integer_value(json_object_get(e, "pid"));
        long long tid = json_integer_value(json_object_get(e, "tid"));
        if (!strcmp(ph, "X")) {
            assert_non_null(json_string_value(json_object_get(e, "name")));
            assert_non_null(json_string_value(json_object_get(e, "cat")));
            json_t *dur = json_object_get(e, "dur");
            assert_true(json_is_number(dur));
            double end = t + json_number_value(dur);
            /* proper nesting per (pid,tid): a slice that starts inside an open one ends in it */
            for (size_t k = 0; k < nopen; k++) {
                if (open[k].pid != pid || open[k].tid != tid)
                    continue;
                if (t < open[k].end)
                    assert_true(end <= open[k].end + 1e-9);
            }
            open[nopen++] = (struct slice){t, end, pid, tid};
        } else if (!strcmp(ph, "i")) {
            assert_non_null(json_string_value(json_object_get(e, "s")));
        } else if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
            json_t *id = json_object_get(e, "id");
            assert_true(json_is_integer(id));
            assert_string_equal(json_string_value(json_object_get(e, "cat")), "ac2g");
            /* bound to an enclosing slice on the same track */
            int inside = 0;
            for (size_t k = 0; k < nopen; k++)
                if (open[k].pid == pid && open[k].tid == tid && open[k].ts <= t && t <= open[k].end)
                    inside = 1;
            if (!strcmp(ph, "s")) {
                assert_true(inside);
                /* exactly one matching "f" later */
                int m = 0;
                for (size_t k = i + 1; k < n; k++) {
                    json_t *f = json_array_get(evs, k);
                    const char *fph = json_string_value(json_object_get(f, "ph"));
                    if (fph && !strcmp(fph, "f") &&
                        json_integer_value(json_object_get(f, "id")) == json_integer_value(id)) {
                        assert_string_equal(json_string_value(json_object_get(f, "bp")), "e");
                        assert_string_equal(json_string_value(json_object_get(f, "name")),
                                            json_string_value(json_object_get(e, "name")));
                        m++;
                    }
                }
                assert_int_equal(m, 1);
                flows++;
            } else {
                assert_true(inside);
            }
        } else {
            fail_msg("unexpected phase %s", ph);
        }
    }
    free(open);
    return flows;
}

static json_t *find_event(json_t *root, const char *ph, const char *name)
{
    json_t *evs = json_object_get(root, "traceEvents"), *e;
    size_t i;
    json_array_foreach(evs, i, e)
    {
        const char *p = json_string_value(json_object_get(e, "ph"));
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (p && nm && !strcmp(p, ph) && !strcmp(nm, name))
            return e;
    }
    return NULL;
}

static char g_dir[256];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof(g_dir), "/tmp/typrof-test-proc-XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static void test_trace_writer(void **state)
{
    (void)state;
    struct typrof_proc p;
    static struct buf b;
    char path[512];
    scenario(&b);
    assert_int_equal(typrof__proc_init(&p, 0, 0), 0);
    typrof__proc_buffer(&p, b.b, b.n, NULL);
    /* CUPTI reports pthread ids: API events land on the OS thread's track once registered */
    typrof__tid_register(7, 7);
    typrof__tid_register(0xdeadbeefu, 4243);
    assert_int_equal(typrof__tid_lookup(0xdeadbeefu), 4243);
    assert_int_equal(typrof__tid_lookup(12345), 12345);
    /* host annotations on the launching thread: a step enclosing everything, a mark */
    typrof__proc_host(&p, TP_EV_STEP, "Step:1", 50, 9990, 4242, 7, 1);
    typrof__proc_host(&p, TP_EV_RANGE, "forward \"quoted\" \\ \n\x01 \xff", 2050, 3050, 4242, 7, 0);
    typrof__proc_host(&p, TP_EV_MARK, "checkpoint", 3060, 3060, 4242, 7, 0);
    struct typrof_ev *ev;
    size_t n;
    uint32_t seg;
    typrof__proc_begin_flush(&p, &ev, &n, &seg);
    struct typrof_trace_meta m = {1000, 4242, "algo-1", "python3"};
    snprintf(path, sizeof(path), "%s/t0.trace.json", g_dir);
    assert_int_equal(typrof__trace_write(&p, ev, n, seg, &m, path), 0);
    typrof__proc_end_flush(&p);
    typrof__free(ev);

    json_t *root = load_json(path);
    assert_int_equal(validate_trace(root), 4); /* 3 launches + 1 copy in this segment */
    json_t *od = json_object_get(root, "otherData");
    /* base is the earliest event (50 ns), not the later meta base */
    assert_int_equal(json_integer_value(json_object_get(od, "base_time_ns")), 50);
    json_t *k = find_event(root, "X", "k_mul");
    assert_non_null(k);
    assert_int_equal(json_integer_value(json_object_get(k, "pid")), 1000000000);
    assert_int_equal(json_integer_value(json_object_get(k, "tid")), 8);
    assert_true(fabs(json_number_value(json_object_get(k, "ts")) - 5.35) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(k, "dur")) - 4.0) < 1e-9);
    json_t *args = json_object_get(k, "args");
    assert_true(fabs(json_number_value(json_object_get(args, "launch_latency_us")) - 2.5) < 1e-9);
    assert_string_equal(json_string_value(json_object_get(args, "launched_by")),
                        "cudaLaunchKernel");
    json_t *c = find_event(root, "X", "Memcpy HtoD");
    assert_non_null(c);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "args"), "bytes")),
                     1000000);
    json_t *s = find_event(root, "X", "Step:1");
    assert_string_equal(json_string_value(json_object_get(s, "cat")), "step");
    assert_string_equal(json_string_value(json_object_get(json_object_get(s, "args"), "step_num")),
                        "1");
    assert_non_null(find_event(root, "X", "forward \"quoted\" \\ \n\x01 \xef\xbf\xbd"));
    assert_non_null(find_event(root, "i", "checkpoint"));
    assert_non_null(find_event(root, "X", "cudaStreamSynchronize"));
    assert_non_null(find_event(root, "X", "CUPTI overhead"));
    json_decref(root);

    /* a later segment: kernels launched by calls of segment 0 keep their latency but get no
     * flow arrow (the call is in another file) */
    memset(&b, 0, sizeof(b));
    kernel(&b, "k_late", 11, 20000, 21000, 1, 3);
    api(&b, 0, 20, 0, 15000, 16000, 0xdeadbeefu); /* cudaMalloc on a registered pthread id */
    typrof__proc_buffer(&p, b.b, b.n, NULL);
    typrof__proc_begin_flush(&p, &ev, &n, &seg);
    assert_int_equal(seg, 1);
    snprintf(path, sizeof(path), "%s/t1.trace.json", g_dir);
    assert_int_equal(typrof__trace_write(&p, ev, n, seg, &m, path), 0);
    typrof__proc_end_flush(&p);
    typrof__free(ev);
    root = load_json(path);
    assert_int_equal(validate_trace(root), 0);
    json_t *ma = find_event(root, "X", "cudaMalloc");
    assert_non_null(ma);
    assert_int_equal(json_integer_value(json_object_get(ma, "tid")), 4243);
    k = find_event(root, "X", "k_late");
    assert_int_equal(json_integer_value(json_object_get(k, "pid")), 1000000001);
    assert_non_null(json_object_get(json_object_get(k, "args"), "launch_latency_us"));
    json_decref(root);
    assert_int_equal(p.kernels_matched, 4);

    /* summary of both segments */
    struct typrof_summary_meta sm = {0, 20000000, 4242, "algo-1", "no gpu (synthetic)", 0};
    snprintf(path, sizeof(path), "%s/s.summary.json", g_dir);
    assert_int_equal(typrof__summary_write(&p, &sm, path), 0);
    root = load_json(path);
    assert_string_equal(json_string_value(json_object_get(root, "schema")), "typrof.summary/1");
    assert_string_equal(json_string_value(json_object_get(root, "gpu_note")), "no gpu (synthetic)");
    json_t *ks = json_object_get(root, "kernels");
    assert_int_equal(json_integer_value(json_object_get(ks, "count")), 5);
    assert_int_equal(json_integer_value(json_object_get(ks, "launches_matched")), 4);
    json_t *top = json_object_get(ks, "top_by_total");
    assert_string_equal(json_string_value(json_object_get(json_array_get(top, 0), "name")),
                        "k_mul");
    assert_string_equal(json_string_value(json_object_get(json_array_get(top, 1), "name")),
                        "k_add");
    assert_int_equal(json_integer_value(json_object_get(json_array_get(top, 1), "count")), 2);
    json_t *topm = json_object_get(ks, "top_by_mean");
    assert_string_equal(json_string_value(json_object_get(json_array_get(topm, 0), "name")),
                        "k_mul");
    json_t *lat = json_object_get(root, "launch_latency");
    assert_int_equal(json_integer_value(json_object_get(lat, "count")), 4);
    assert_true(fabs(json_number_value(json_object_get(lat, "p50_us")) - 2.5) < 1e-9);
    json_t *mc = json_array_get(json_object_get(root, "memcpy"), 0);
    assert_string_equal(json_string_value(json_object_get(mc, "kind")), "HtoD");
    assert_true(fabs(json_number_value(json_object_get(mc, "bandwidth_GBps")) - 1000.0) < 1e-6);
    json_t *g0 = json_array_get(json_object_get(root, "gpus"), 0);
    assert_true(fabs(json_number_value(json_object_get(g0, "idle_fraction")) -
                     (1.0 - 6400.0 / 8550.0)) < 1e-6);
    json_t *sy = json_object_get(root, "sync");
    assert_true(fabs(json_number_value(json_object_get(sy, "total_us")) - 0.4) < 1e-9);
    json_t *st = json_object_get(root, "steps");
    assert_int_equal(json_integer_value(json_object_get(st, "count")), 1);
    json_decref(root);
    typrof__proc_cleanup(&p);
}

static void test_trace_many_threads_sorted(void **state)
{
    (void)state;
    /* random interleaving of nested host ranges across threads still yields sorted output */
    struct typrof_proc p;
    char path[512];
    assert_int_equal(typrof__proc_init(&p, 0, 0), 0);
    unsigned r = 7;
    for (int i = 0; i < 2000; i++) {
        r = r * 1103515245u + 12345u;
        uint64_t s = 1000 + (uint64_t)(i / 4) * 100;
        uint32_t tid = 1 + r % 4;
        typrof__proc_host(&p, TP_EV_RANGE, "outer", s, s + 90, 1, tid, 0);
        typrof__proc_host(&p, TP_EV_RANGE, "inner", s + 10, s + 50, 1, tid, 0);
        (void)tid;
    }
    struct typrof_ev *ev;
    size_t n;
    uint32_t seg;
    typrof__proc_begin_flush(&p, &ev, &n, &seg);
    struct typrof_trace_meta m = {0, 1, "algo-1", "x"};
    snprintf(path, sizeof(path), "%s/t2.trace.json", g_dir);
    assert_int_equal(typrof__trace_write(&p, ev, n, seg, &m, path), 0);
    typrof__proc_end_flush(&p);
    typrof__free(ev);
    json_t *root = load_json(path);
    validate_trace(root);
    json_decref(root);
    typrof__proc_cleanup(&p);
}

static void test_many_kernel_names(void **state)
{
    (void)state;
    struct typrof_proc p;
    static struct buf b;
    char names[3000][16];
    assert_int_equal(typrof__proc_init(&p, 0, 0), 0);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3000; i += 200) {
            memset(&b, 0, sizeof(b));
            for (int k = i; k < i + 200; k++) {
                snprintf(names[k], sizeof(names[k]), "kern_%d", k);
                kernel(&b, names[k], 0, (uint64_t)k * 10, (uint64_t)k * 10 + 5 + round, 0, 1);
            }
            typrof__proc_buffer(&p, b.b, b.n, NULL);
        }
    }
    struct typrof_ev *ev;
    size_t n;
    uint32_t seg;
    typrof__proc_begin_flush(&p, &ev, &n, &seg);
    typrof__proc_end_flush(&p);
    typrof__free(ev);
    assert_int_equal(n, 6000);
    assert_int_equal(p.kern.n, 3000);
    for (size_t i = 0; i < p.kern.n; i++) {
        assert_int_equal(p.kern.v[i].count, 2);
        assert_int_equal(p.kern.v[i].min_ns, 5);
        assert_int_equal(p.kern.v[i].max_ns, 6);
    }
    assert_int_equal(p.kernels_unmatched, 6000);
    typrof__proc_cleanup(&p);
}

static void test_api_names(void **state)
{
    (void)state;
    assert_string_equal(typrof__api_name(0, 211), "cudaLaunchKernel");
    assert_string_equal(typrof__api_name(1, 307), "cuLaunchKernel");
    assert_null(typrof__api_name(0, 99999));
    assert_string_equal(typrof__copy_kind_name(2), "Memcpy DtoH");
    assert_string_equal(typrof__copy_kind_name(200), "Memcpy ?");
    assert_string_equal(typrof__sync_type_name(4), "cudaDeviceSynchronize");
    char hour[11];
    typrof__hour_dir(1591160699, hour);
    assert_string_equal(hour, "2020060305");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correlation_and_aggregates),
        cmocka_unit_test(test_buffer_walker_bounds),
        cmocka_unit_test(test_ceilings),
        cmocka_unit_test(test_trace_writer),
        cmocka_unit_test(test_trace_many_threads_sorted),
        cmocka_unit_test(test_many_kernel_names),
        cmocka_unit_test(test_api_names),
    };
    return cmocka_run_group_tests(tests, setup_dir, NULL);
}
