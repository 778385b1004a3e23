/*
 * rules.c - loads a profiler output directory into series and evaluates the built-in rules.
 *
 * Rules follow SageMaker Debugger's profiler rules (names, parameters, defaults; see
 * profiler/README.md for each threshold). A "datapoint" is one system-metrics sample; the first
 * `patience` datapoints are skipped, as Debugger does; a rule left without the data it needs
 * (no GPU series, nothing past patience, fewer than two steps) reports NoData ("not evaluated"),
 * never NoIssuesFound. Not thread-safe per metrics set.
 */
#include "rules.h"
#include "jsonmini.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERIES_POINTS (1u << 24)

/* ---- loading ---- */

int typrof__metrics_add(struct typrof_metrics *m, const char *name, const char *dim, double t,
                        double v)
{
    struct typrof_series *s = (struct typrof_series *)typrof__metrics_find(m, name, dim);
    if (!s) {
        if (m->n == m->cap) {
            size_t nc = m->cap ? m->cap * 2 : 32;
            struct typrof_series *ns = realloc(m->s, nc * sizeof(*ns));
            if (!ns)
                return -1;
            m->s = ns;
            m->cap = nc;
        }
        s = &m->s[m->n++];
        memset(s, 0, sizeof(*s));
        snprintf(s->name, sizeof(s->name), "%s", name);
        snprintf(s->dim, sizeof(s->dim), "%s", dim);
    }
    if (s->n >= MAX_SERIES_POINTS)
        return -1;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        double *nt = realloc(s->t, nc * sizeof(*nt));
        if (!nt)
            return -1;
        s->t = nt;
        double *nv = realloc(s->v, nc * sizeof(*nv));
        if (!nv)
            return -1;
        s->v = nv;
        s->cap = nc;
    }
    s->t[s->n] = t;
    s->v[s->n] = v;
    s->n++;
    return 0;
}

const struct typrof_series *typrof__metrics_find(const struct typrof_metrics *m, const char *name,
                                                 const char *dim)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->s[i].name, name) && !strcmp(m->s[i].dim, dim))
            return &m->s[i];
    return NULL;
}

static void sort_series(struct typrof_series *s)
{
    /* insertion sort: files are read mostly in order, so this is near linear */
    for (size_t i = 1; i < s->n; i++) {
        double t = s->t[i], v = s->v[i];
        size_t j = i;
        while (j > 0 && s->t[j - 1] > t) {
            s->t[j] = s->t[j - 1];
            s->v[j] = s->v[j - 1];
            j--;
        }
        s->t[j] = t;
        s->v[j] = v;
    }
}

void typrof__metrics_sort(struct typrof_metrics *m)
{
    for (size_t i = 0; i < m->n; i++)
        sort_series(&m->s[i]);
}

void typrof__metrics_cleanup(struct typrof_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->s[i].t);
        free(m->s[i].v);
    }
    free(m->s);
    free(m->step_ms);
    memset(m, 0, sizeof(*m));
    m->first_step_s = -1;
}

static void load_metrics_file(struct typrof_metrics *m, const char *path)
{
    size_t len;
    char *buf = jm_read_file(path, 256u << 20, &len);
    if (!buf)
        return;
    m->files++;
    char *line = buf;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if (n > 0) {
            struct jm_val *v = jm_parse(line, n, NULL);
            const char *name = jm_str(v, "Name", NULL), *dim = jm_str(v, "Dimension", NULL);
            const struct jm_val *val = jm_get(v, "Value"), *ts = jm_get(v, "Timestamp");
            if (name && dim && val && val->type == JM_NUM && ts && ts->type == JM_NUM)
                typrof__metrics_add(m, name, dim, ts->num, val->num);
            else
                m->bad_lines++;
            jm_free(v);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(buf);
}

static void load_summary(struct typrof_metrics *m, const char *path)
{
    size_t len;
    char *buf = jm_read_file(path, 64u << 20, &len);
    struct jm_val *v = buf ? jm_parse(buf, len, NULL) : NULL;
    free(buf);
    if (!v)
        return;
    double run = jm_num(v, "duration_s", 0);
    if (run > m->run_s)
        m->run_s = run;
    const struct jm_val *steps = jm_get(v, "steps");
    const struct jm_val *d = jm_get(steps, "durations_ms");
    double first = jm_num(steps, "first_step_start_s", -1);
    if (first >= 0 && (m->first_step_s < 0 || first < m->first_step_s))
        m->first_step_s = first;
    for (size_t i = 0; d && d->type == JM_ARR && i < d->n; i++) {
        if (d->items[i].type != JM_NUM)
            continue;
        if (m->nsteps == m->capsteps) {
            size_t nc = m->capsteps ? m->capsteps * 2 : 256;
            double *ns = realloc(m->step_ms, nc * sizeof(*ns));
            if (!ns)
                break;
            m->step_ms = ns;
            m->capsteps = nc;
        }
        m->step_ms[m->nsteps++] = d->items[i].num;
    }
    jm_free(v);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

int typrof__metrics_load(const char *dir, struct typrof_metrics *m)
{
    char path[4096];
    memset(m, 0, sizeof(*m));
    m->first_step_s = -1;
    DIR *top = opendir(dir);
    if (!top)
        return -1;
    closedir(top);
    snprintf(path, sizeof(path), "%s/system/incremental", dir);
    DIR *inc = opendir(path);
    struct dirent *h, *f;
    while (inc && (h = readdir(inc))) {
        if (h->d_name[0] == '.')
            continue;
        char hour[4400];
        snprintf(hour, sizeof(hour), "%s/%s", path, h->d_name);
        DIR *hd = opendir(hour);
        while (hd && (f = readdir(hd))) {
            if (f->d_name[0] == '.' || !ends_with(f->d_name, ".json"))
                continue;
            char file[4700];
            snprintf(file, sizeof(file), "%s/%s", hour, f->d_name);
            load_metrics_file(m, file);
        }
        if (hd)
            closedir(hd);
    }
    if (inc)
        closedir(inc);
    snprintf(path, sizeof(path), "%s/summary", dir);
    DIR *sd = opendir(path);
    while (sd && (f = readdir(sd))) {
        if (!ends_with(f->d_name, ".summary.json"))
            continue;
        char file[4400];
        snprintf(file, sizeof(file), "%s/%s", path, f->d_name);
        load_summary(m, file);
    }
    if (sd)
        closedir(sd);
    typrof__metrics_sort(m);
    return 0;
}

/* ---- helpers ---- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of v[0..n) (copied). */
static double pct(const double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    double *c = malloc(n * sizeof(*c));
    if (!c)
        return 0;
    memcpy(c, v, n * sizeof(*c));
    qsort(c, n, sizeof(*c), cmp_d);
    size_t rank = (size_t)ceil(p / 100.0 * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    double r = c[rank - 1];
    free(c);
    return r;
}

static double mean(const double *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0;
}

/* GPU series gpu0, gpu1, ... of dim, in order. Returns the count. */
static size_t gpu_series(const struct typrof_metrics *m, const char *dim,
                         const struct typrof_series **out, size_t max)
{
    size_t n = 0;
    for (size_t g = 0; g < max; g++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu%zu", g);
        const struct typrof_series *s = typrof__metrics_find(m, name, dim);
        if (!s)
            break;
        out[n++] = s;
    }
    return n;
}

/* Mean CPU utilisation over the cores at each datapoint of cpu0. OUT: new array (free()). */
static double *cpu_mean_series(const struct typrof_metrics *m, size_t *n)
{
    const struct typrof_series *c0 = typrof__metrics_find(m, "cpu0", "CPUUtilization");
    *n = 0;
    if (!c0)
        return NULL;
    double *out = calloc(c0->n ? c0->n : 1, sizeof(*out));
    size_t *cnt = calloc(c0->n ? c0->n : 1, sizeof(*cnt));
    if (!out || !cnt) {
        free(out);
        free(cnt);
        return NULL;
    }
    for (int k = 0;; k++) {
        char name[32];
        snprintf(name, sizeof(name), "cpu%d", k);
        const struct typrof_series *s = typrof__metrics_find(m, name, "CPUUtilization");
        if (!s)
            break;
        for (size_t i = 0; i < s->n && i < c0->n; i++) {
            out[i] += s->v[i];
            cnt[i]++;
        }
    }
    for (size_t i = 0; i < c0->n; i++)
        out[i] = cnt[i] ? out[i] / (double)cnt[i] : 0;
    free(cnt);
    *n = c0->n;
    return out;
}

/* ---- the table ---- */

static const struct typrof_rule_def RULES[] = {
    {"LowGPUUtilization",
     "GPU utilisation is low or fluctuates: over the last `window` datapoints of a GPU, p95 < "
     "threshold_p95 (underused) or p95 > threshold_p95 with p5 < threshold_p5 (fluctuating)",
     {"threshold_p95", "threshold_p5", "window", "patience", NULL},
     {70, 10, 500, 1000},
     {"p95 of GPU utilisation below this, in %", "p5 below this while p95 is high, in %",
      "datapoints per evaluation window", "datapoints skipped at the start"}},
    {"CPUBottleneck",
     "the CPU is busy while the GPU waits: datapoints with mean CPU > cpu_threshold and GPU < "
     "gpu_threshold are more than `threshold` % of all datapoints",
     {"threshold", "gpu_threshold", "cpu_threshold", "patience", NULL},
     {50, 10, 90, 1000},
     {"% of datapoints that are bottlenecks", "GPU utilisation below this, in %",
      "CPU utilisation above this, in %", "datapoints skipped at the start"}},
    {"IOBottleneck",
     "I/O wait is high while the GPU waits: datapoints with iowait > io_threshold and GPU < "
     "gpu_threshold are more than `threshold` % of all datapoints",
     {"threshold", "gpu_threshold", "io_threshold", "patience", NULL},
     {50, 10, 50, 1000},
     {"% of datapoints that are bottlenecks", "GPU utilisation below this, in %",
      "CPU iowait above this, in %", "datapoints skipped at the start"}},
    {"GPUMemoryIncrease",
     "GPU memory grows: the mean GPU memory utilisation of a window of `window` datapoints "
     "exceeds the previous window's mean by more than `increase` percentage points",
     {"increase", "patience", "window", NULL},
     {5, 1000, 10},
     {"allowed increase between windows, in percentage points", "datapoints skipped at the start",
      "datapoints per window"}},
    {"BatchSize",
     "the batch is probably too small: over the last `window` datapoints, p95 of CPU, GPU and "
     "GPU memory utilisation are all below their thresholds",
     {"cpu_threshold_p95", "gpu_threshold_p95", "gpu_memory_threshold_p95", "patience", "window",
      NULL},
     {70, 70, 70, 1000, 500},
     {"p95 CPU utilisation below this, in %", "p95 GPU utilisation below this, in %",
      "p95 GPU memory utilisation below this, in %", "datapoints skipped at the start",
      "datapoints per window"}},
    {"MaxInitializationTime",
     "initialisation takes too long: the first step starts more than `threshold` minutes after "
     "the process started (or no step started within that time)",
     {"threshold", NULL},
     {20},
     {"minutes"}},
    {"StepOutlier",
     "step durations have outliers: more than n_outliers steps last longer than mean + stddev "
     "* standard deviation",
     {"stddev", "n_outliers", NULL},
     {3, 10},
     {"factor of the standard deviation", "outliers tolerated"}},
    {"LoadBalancing",
     "work is unbalanced across GPUs: the total-variation distance between the utilisation "
     "histograms (10 bins) of two GPUs exceeds `threshold`",
     {"threshold", "patience", NULL},
     {0.5, 1000},
     {"distance in [0,1]", "datapoints skipped at the start"}},
};

const struct typrof_rule_def *typrof__rules(size_t *n)
{
    *n = sizeof(RULES) / sizeof(RULES[0]);
    return RULES;
}

const char *typrof__rule_status_name(enum typrof_rule_status s)
{
    switch (s) {
    case TYPROF_ISSUES:
        return "IssuesFound";
    case TYPROF_RULE_ERROR:
        return "Error";
    case TYPROF_NO_DATA:
        return "NoData";
    default:
        return "NoIssuesFound";
    }
}

static double P(const struct typrof_rule_def *d, const double *vals, const char *key)
{
    for (int i = 0; i < TYPROF_RULE_MAX_PARAMS && d->param[i]; i++)
        if (!strcmp(d->param[i], key))
            return vals[i];
    return 0;
}

#define SET(r, st, ...)                                                                            \
    do {                                                                                           \
        (r)->status = (st);                                                                        \
        snprintf((r)->detail, sizeof((r)->detail), __VA_ARGS__);                                   \
    } while (0)

static void low_gpu(const struct typrof_rule_def *d, const double *pv,
                    const struct typrof_metrics *m, struct typrof_rule_result *r)
{
    const struct typrof_series *g[64];
    size_t ng = gpu_series(m, "GPUUtilization", g, 64);
    size_t patience = (size_t)P(d, pv, "patience"), window = (size_t)P(d, pv, "window");
    SET(r, TYPROF_NO_DATA, "not evaluated: no gpu metrics");
    for (size_t k = 0; k < ng; k++) {
        if (g[k]->n <= patience) {
            if (r->status == TYPROF_NO_DATA)
                SET(r, TYPROF_NO_DATA, "not evaluated: %zu datapoints, not more than patience %zu",
                    g[k]->n, patience);
            continue;
        }
        size_t n = g[k]->n - patience, w = window && window < n ? window : n;
        const double *v = g[k]->v + g[k]->n - w;
        double p95 = pct(v, w, 95), p5 = pct(v, w, 5);
        r->datapoints += n;
        r->value = p95;
        if (p95 < P(d, pv, "threshold_p95")) {
            SET(r, TYPROF_ISSUES, "gpu%zu underused: p95 %.1f%% < %.0f%%", k, p95,
                P(d, pv, "threshold_p95"));
            return;
        }
        if (p5 < P(d, pv, "threshold_p5")) {
            SET(r, TYPROF_ISSUES, "gpu%zu fluctuates: p95 %.1f%%, p5 %.1f%% < %.0f%%", k, p95, p5,
                P(d, pv, "threshold_p5"));
            return;
        }
        SET(r, TYPROF_NO_ISSUES, "gpu p95 %.1f%%, p5 %.1f%%", p95, p5);
    }
}

static void bottleneck(const struct typrof_rule_def *d, const double *pv,
                       const struct typrof_metrics *m, struct typrof_rule_result *r, int io)
{
    const struct typrof_series *g[64];
    size_t ng = gpu_series(m, "GPUUtilization", g, 64), n = 0, hits = 0;
    size_t patience = (size_t)P(d, pv, "patience");
    double *busy = NULL;
    const struct typrof_series *iow = typrof__metrics_find(m, "cpu_iowait", "IOWait");
    if (io) {
        n = iow ? iow->n : 0;
    } else {
        busy = cpu_mean_series(m, &n);
    }
    if (ng == 0 || n == 0) {
        SET(r, TYPROF_NO_DATA,
            ng ? "not evaluated: no cpu metrics" : "not evaluated: no gpu metrics");
        free(busy);
        return;
    }
    size_t total = 0;
    for (size_t i = patience; i < n; i++) {
        double hostv = io ? iow->v[i] : busy[i];
        double gmax = 0;
        for (size_t k = 0; k < ng; k++)
            if (i < g[k]->n && g[k]->v[i] > gmax)
                gmax = g[k]->v[i];
        total++;
        if (hostv > P(d, pv, io ? "io_threshold" : "cpu_threshold") &&
            gmax < P(d, pv, "gpu_threshold"))
            hits++;
    }
    free(busy);
    r->datapoints = total;
    if (total == 0) {
        SET(r, TYPROF_NO_DATA, "not evaluated: %zu datapoints, not more than patience %zu", n,
            patience);
        return;
    }
    r->value = 100.0 * (double)hits / (double)total;
    if (r->value > P(d, pv, "threshold"))
        SET(r, TYPROF_ISSUES, "%s bottleneck in %.1f%% of %zu datapoints (> %.0f%%)",
            io ? "io" : "cpu", r->value, total, P(d, pv, "threshold"));
    else
        SET(r, TYPROF_NO_ISSUES, "%s bottleneck in %.1f%% of %zu datapoints", io ? "io" : "cpu",
            r->value, total);
}

static void gpu_mem_increase(const struct typrof_rule_def *d, const double *pv,
                             const struct typrof_metrics *m, struct typrof_rule_result *r)
{
    const struct typrof_series *g[64];
    size_t ng = gpu_series(m, "GPUMemoryUtilization", g, 64);
    size_t patience = (size_t)P(d, pv, "patience"), window = (size_t)P(d, pv, "window");
    SET(r, TYPROF_NO_DATA, "not evaluated: no gpu memory metrics");
    if (window == 0)
        window = 1;
    for (size_t k = 0; k < ng; k++) {
        double prev = -1;
        if (g[k]->n <= patience && r->status == TYPROF_NO_DATA)
            SET(r, TYPROF_NO_DATA, "not evaluated: %zu datapoints, not more than patience %zu",
                g[k]->n, patience);
        for (size_t i = patience; i + window <= g[k]->n; i += window) {
            double cur = mean(g[k]->v + i, window);
            r->datapoints += window;
            if (prev >= 0 && cur - prev > P(d, pv, "increase")) {
                r->value = cur - prev;
                SET(r, TYPROF_ISSUES, "gpu%zu memory rose %.1f points (%.1f%% -> %.1f%%)", k,
                    cur - prev, prev, cur);
                return;
            }
            if (prev >= 0)
                SET(r, TYPROF_NO_ISSUES, "largest window mean %.1f%%", cur > prev ? cur : prev);
            prev = cur;
        }
    }
}

static void batch_size(const struct typrof_rule_def *d, const double *pv,
                       const struct typrof_metrics *m, struct typrof_rule_result *r)
{
    const struct typrof_series *g[64], *gm[64];
    size_t ng = gpu_series(m, "GPUUtilization", g, 64);
    size_t ngm = gpu_series(m, "GPUMemoryUtilization", gm, 64);
    size_t patience = (size_t)P(d, pv, "patience"), window = (size_t)P(d, pv, "window"), n;
    double *cpu = cpu_mean_series(m, &n);
    if (ng == 0 || ngm == 0 || !cpu) {
        SET(r, TYPROF_NO_DATA, "not evaluated: no gpu or cpu metrics");
        free(cpu);
        return;
    }
    SET(r, TYPROF_NO_DATA, "not evaluated: %zu datapoints, not more than patience %zu", g[0]->n,
        patience);
    for (size_t k = 0; k < ng && k < ngm; k++) {
        if (g[k]->n <= patience || gm[k]->n <= patience || n <= patience)
            continue;
        size_t w = g[k]->n - patience;
        if (window && window < w)
            w = window;
        if (w > gm[k]->n - patience)
            w = gm[k]->n - patience;
        if (w > n - patience)
            w = n - patience;
        double pg = pct(g[k]->v + g[k]->n - w, w, 95), pm = pct(gm[k]->v + gm[k]->n - w, w, 95);
        double pc = pct(cpu + n - w, w, 95);
        r->datapoints += w;
        r->value = pg;
        if (pg < P(d, pv, "gpu_threshold_p95") && pm < P(d, pv, "gpu_memory_threshold_p95") &&
            pc < P(d, pv, "cpu_threshold_p95")) {
            SET(r, TYPROF_ISSUES,
                "gpu%zu: p95 gpu %.1f%%, gpu memory %.1f%%, cpu %.1f%% all below thresholds; try "
                "a larger batch",
                k, pg, pm, pc);
            break;
        }
        SET(r, TYPROF_NO_ISSUES, "gpu%zu: p95 gpu %.1f%%, gpu memory %.1f%%, cpu %.1f%%", k, pg, pm,
            pc);
    }
    free(cpu);
}

static void max_init(const struct typrof_rule_def *d, const double *pv,
                     const struct typrof_metrics *m, struct typrof_rule_result *r)
{
    double limit = P(d, pv, "threshold") * 60.0;
    if (m->first_step_s >= 0) {
        r->value = m->first_step_s / 60.0;
        r->datapoints = 1;
        if (m->first_step_s > limit)
            SET(r, TYPROF_ISSUES, "first step began after %.1f min (> %.0f min)", r->value,
                limit / 60);
        else
            SET(r, TYPROF_NO_ISSUES, "first step began after %.2f min", r->value);
    } else if (m->run_s > limit) {
        r->value = m->run_s / 60.0;
        SET(r, TYPROF_ISSUES, "no step began in %.1f min (> %.0f min)", r->value, limit / 60);
    } else {
        SET(r, TYPROF_NO_DATA, "not evaluated: no steps recorded");
    }
}

static void step_outlier(const struct typrof_rule_def *d, const double *pv,
                         const struct typrof_metrics *m, struct typrof_rule_result *r)
{
    size_t n = m->nsteps, outliers = 0;
    r->datapoints = n;
    if (n < 2) {
        SET(r, TYPROF_NO_DATA, "not evaluated: %zu step(s) recorded, 2 needed", n);
        return;
    }
    double mu = mean(m->step_ms, n), var = 0;
    for (size_t i = 0; i < n; i++)
        var += (m->step_ms[i] - mu) * (m->step_ms[i] - mu);
    double sd = sqrt(var / (double)n), limit = mu + P(d, pv, "stddev") * sd;
    for (size_t i = 0; i < n; i++)
        if (m->step_ms[i] > limit)
            outliers++;
    r->value = (double)outliers;
    if ((double)outliers > P(d, pv, "n_outliers"))
        SET(r, TYPROF_ISSUES, "%zu of %zu steps longer than %.2f ms (mean %.2f, std %.2f)",
            outliers, n, limit, mu, sd);
    else
        SET(r, TYPROF_NO_ISSUES, "%zu outlier steps of %zu (limit %.2f ms)", outliers, n, limit);
}

static void load_balancing(const struct typrof_rule_def *d, const double *pv,
                           const struct typrof_metrics *m, struct typrof_rule_result *r)
{
    const struct typrof_series *g[64];
    size_t ng = gpu_series(m, "GPUUtilization", g, 64);
    size_t patience = (size_t)P(d, pv, "patience");
    double hist[64][10];
    if (ng < 2) {
        SET(r, TYPROF_NO_DATA, "not evaluated: %zu gpu(s), 2 needed", ng);
        return;
    }
    for (size_t k = 0; k < ng; k++) {
        memset(hist[k], 0, sizeof(hist[k]));
        size_t cnt = 0;
        for (size_t i = patience; i < g[k]->n; i++) {
            int b = (int)(g[k]->v[i] / 10.0);
            hist[k][b < 0 ? 0 : b > 9 ? 9 : b] += 1;
            cnt++;
        }
        if (cnt == 0) {
            SET(r, TYPROF_NO_DATA, "not evaluated: %zu datapoints, not more than patience %zu",
                g[k]->n, patience);
            return;
        }
        r->datapoints += cnt;
        for (int b = 0; b < 10; b++)
            hist[k][b] /= (double)cnt;
    }
    double worst = 0;
    size_t wa = 0, wb = 1;
    for (size_t a = 0; a < ng; a++)
        for (size_t b = a + 1; b < ng; b++) {
            double tv = 0;
            for (int i = 0; i < 10; i++)
                tv += fabs(hist[a][i] - hist[b][i]);
            tv /= 2;
            if (tv > worst) {
                worst = tv;
                wa = a;
                wb = b;
            }
        }
    r->value = worst;
    if (worst > P(d, pv, "threshold"))
        SET(r, TYPROF_ISSUES, "gpu%zu and gpu%zu differ by %.2f (> %.2f)", wa, wb, worst,
            P(d, pv, "threshold"));
    else
        SET(r, TYPROF_NO_ISSUES, "largest distance %.2f", worst);
}

/* 1 for the parameters SageMaker's rule configurations (smdebug_rulesconfig) pass to every
   profiler rule to schedule it, which do not change what a rule finds: how often it scans
   (scan_interval_us), which steps or mode it reads. */
static int typrof_rule_framework_param(const char *key, size_t n)
{
    static const char *const keys[] = {"scan_interval_us", "eval_frequency", "mode", "start_step",
                                       "end_step"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strlen(keys[i]) == n && !strncmp(keys[i], key, n))
            return 1;
    return 0;
}

int typrof__rule_eval(const char *name, const struct typrof_metrics *m, const char *const *params,
                      size_t n_params, struct typrof_rule_result *r)
{
    size_t nr;
    const struct typrof_rule_def *defs = typrof__rules(&nr), *d = NULL;
    double pv[TYPROF_RULE_MAX_PARAMS];
    for (size_t i = 0; i < nr; i++)
        if (!strcmp(defs[i].name, name))
            d = &defs[i];
    if (!d)
        return -1;
    memset(r, 0, sizeof(*r));
    r->rule = d->name;
    memcpy(pv, d->def, sizeof(pv));
    for (size_t i = 0; i < n_params; i++) {
        const char *eq = strchr(params[i], '=');
        int found = 0;
        for (int k = 0; eq && k < TYPROF_RULE_MAX_PARAMS && d->param[k]; k++) {
            if (strlen(d->param[k]) == (size_t)(eq - params[i]) &&
                !strncmp(d->param[k], params[i], (size_t)(eq - params[i]))) {
                char *end;
                pv[k] = strtod(eq + 1, &end);
                found = *end == '\0' && end != eq + 1;
            }
        }
        if (!found && eq && typrof_rule_framework_param(params[i], (size_t)(eq - params[i])))
            continue; /* smdebug's scheduling knobs: one evaluation at the end needs none */
        if (!found) {
            SET(r, TYPROF_RULE_ERROR, "bad rule parameter '%s'", params[i]);
            return 0;
        }
    }
    if (!strcmp(d->name, "LowGPUUtilization"))
        low_gpu(d, pv, m, r);
    else if (!strcmp(d->name, "CPUBottleneck"))
        bottleneck(d, pv, m, r, 0);
    else if (!strcmp(d->name, "IOBottleneck"))
        bottleneck(d, pv, m, r, 1);
    else if (!strcmp(d->name, "GPUMemoryIncrease"))
        gpu_mem_increase(d, pv, m, r);
    else if (!strcmp(d->name, "BatchSize"))
        batch_size(d, pv, m, r);
    else if (!strcmp(d->name, "MaxInitializationTime"))
        max_init(d, pv, m, r);
    else if (!strcmp(d->name, "StepOutlier"))
        step_outlier(d, pv, m, r);
    else
        load_balancing(d, pv, m, r);
    return 0;
}
