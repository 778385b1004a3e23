/*
 * report.c - typrof_report's renderer (report_int.h), used by the public typrof_report.h and by
 * `typrof report` and the summary merge of `typrof run`: reads a profiler output directory
 * (system metrics, per-process summaries, traces), writes DIR/summary.json, prints a text
 * summary, and writes one self-contained HTML dashboard (inline CSS/JS, data embedded as JSON;
 * no network resources): utilisation charts, top kernels, copies, latency percentiles and a
 * zoomable timeline (wheel: zoom, drag: pan, double-click: reset).
 */
#define _GNU_SOURCE
#include "jsonmini.h"
#include "report_int.h"
#include "rules.h"
#include "typrof_int.h"
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_FILES             4096
#define MAX_POINTS_PER_SERIES 4000

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists files of dir ending in suffix, sorted. OUT: *names (free each and the array). */
static size_t list_files(const char *dir, const char *suffix, char ***names)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0, sl = strlen(suffix);
    *names = NULL;
    if (!d)
        return 0;
    char **v = calloc(MAX_FILES, sizeof(*v));
    while (v && (e = readdir(d)) && n < MAX_FILES) {
        size_t l = strlen(e->d_name);
        if (l > sl && !strcmp(e->d_name + l - sl, suffix)) {
            size_t pl = strlen(dir) + l + 2;
            v[n] = malloc(pl);
            if (v[n])
                snprintf(v[n++], pl, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    if (v)
        qsort(v, n, sizeof(*v), cmp_str);
    *names = v;
    return n;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stats(const double *v, size_t n, double *mean, double *p95, double *max)
{
    *mean = *p95 = *max = 0;
    if (!n)
        return;
    double *c = malloc(n * sizeof(*c)), s = 0;
    if (!c)
        return;
    memcpy(c, v, n * sizeof(*c));
    qsort(c, n, sizeof(*c), cmp_d);
    for (size_t i = 0; i < n; i++)
        s += c[i];
    *mean = s / (double)n;
    size_t r = (size_t)ceil(0.95 * (double)n);
    *p95 = c[(r ? r : 1) - 1];
    *max = c[n - 1];
    free(c);
}

/* Copies text to f, turning "</" into "<\/" so it can sit inside a <script> element. */
static void put_script_safe(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<' && i + 1 < n && s[i + 1] == '/') {
            fputs("<\\/", f);
            i++;
        } else {
            fputc(s[i], f);
        }
    }
}

static void write_system(FILE *f, const struct typrof_metrics *m, FILE *out)
{
    double mean, p95, max;
    size_t n = 0;
    const struct typrof_series *c0 = typrof__metrics_find(m, "cpu0", "CPUUtilization");
    double *cpu = NULL;
    if (c0) {
        n = c0->n;
        cpu = calloc(n ? n : 1, sizeof(*cpu));
        int cores = 0;
        for (int k = 0; cpu; k++) {
            char name[32];
            snprintf(name, sizeof(name), "cpu%d", k);
            const struct typrof_series *s = typrof__metrics_find(m, name, "CPUUtilization");
            if (!s)
                break;
            cores++;
            for (size_t i = 0; i < n && i < s->n; i++)
                cpu[i] += s->v[i];
        }
        for (size_t i = 0; cpu && i < n; i++)
            cpu[i] /= cores ? cores : 1;
    }
    fprintf(f, "{\"samples\":%zu,\"metric_files\":%zu,\"bad_lines\":%zu", n, m->files,
            m->bad_lines);
    if (cpu) {
        stats(cpu, n, &mean, &p95, &max);
        fputs(",\"cpu_util_mean\":", f);
        typrof__json_num(f, mean);
        fputs(",\"cpu_util_p95\":", f);
        typrof__json_num(f, p95);
        if (out)
            fprintf(out, "system: %zu samples; cpu mean %.1f%% p95 %.1f%%", n, mean, p95);
    } else if (out) {
        fprintf(out, "system: no system metrics");
    }
    free(cpu);
    const struct typrof_series *s = typrof__metrics_find(m, "MemoryUsedPercent", "Memory");
    if (s) {
        stats(s->v, s->n, &mean, &p95, &max);
        fputs(",\"memory_used_percent_mean\":", f);
        typrof__json_num(f, mean);
        fputs(",\"memory_used_percent_max\":", f);
        typrof__json_num(f, max);
        if (out)
            fprintf(out, "; memory max %.1f%%", max);
    }
    s = typrof__metrics_find(m, "cpu_iowait", "IOWait");
    if (s) {
        stats(s->v, s->n, &mean, &p95, &max);
        fputs(",\"iowait_mean\":", f);
        typrof__json_num(f, mean);
    }
    static const char *io[][3] = {{"disk", "ReadBytesPerSecond", "disk_read_Bps_mean"},
                                  {"disk", "WriteBytesPerSecond", "disk_write_Bps_mean"},
                                  {"net", "ReceiveBytesPerSecond", "net_rx_Bps_mean"},
                                  {"net", "TransmitBytesPerSecond", "net_tx_Bps_mean"}};
    for (size_t k = 0; k < 4; k++) {
        s = typrof__metrics_find(m, io[k][0], io[k][1]);
        if (!s)
            continue;
        stats(s->v, s->n, &mean, &p95, &max);
        fprintf(f, ",\"%s\":", io[k][2]);
        typrof__json_num(f, mean);
    }
    if (out)
        fputc('\n', out);
    fputs(",\"gpus\":[", f);
    int g;
    for (g = 0; g < 64; g++) {
        char name[32];
        snprintf(name, sizeof(name), "gpu%d", g);
        const struct typrof_series *u = typrof__metrics_find(m, name, "GPUUtilization");
        const struct typrof_series *mm = typrof__metrics_find(m, name, "GPUMemoryUtilization");
        if (!u)
            break;
        stats(u->v, u->n, &mean, &p95, &max);
        fprintf(f, "%s{\"name\":\"%s\",\"util_mean\":", g ? "," : "", name);
        typrof__json_num(f, mean);
        fputs(",\"util_p95\":", f);
        typrof__json_num(f, p95);
        if (out)
            fprintf(out, "        %s util mean %.1f%% p95 %.1f%%", name, mean, p95);
        if (mm) {
            stats(mm->v, mm->n, &mean, &p95, &max);
            fputs(",\"memory_util_max\":", f);
            typrof__json_num(f, max);
            if (out)
                fprintf(out, "; memory max %.1f%%", max);
        }
        if (out)
            fputc('\n', out);
        fputc('}', f);
    }
    if (g == 0 && out)
        fprintf(out, "        no gpu metrics (NVML not found or no GPU)\n");
    fputs("]}", f);
}

/* Prints a name from a profile with control characters made visible. */
static void put_name(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 ? '?' : *s, out);
}

static void print_process(FILE *out, const struct jm_val *v)
{
    fprintf(out, "process %s pid %d: %.2f s, gpu tracing %s", jm_str(v, "node", "?"),
            (int)jm_num(v, "pid", 0), jm_num(v, "duration_s", 0),
            jm_num(v, "gpu_tracing", 0) ? "on" : "off");
    const char *note = jm_str(v, "gpu_note", NULL);
    if (note)
        fprintf(out, " (%s)", note);
    fputc('\n', out);
    const struct jm_val *k = jm_get(v, "kernels"), *l = jm_get(v, "launch_latency");
    fprintf(out,
            "  kernels: %.0f (%.0f distinct), %.1f us total; launch latency p50 %.2f p95 "
            "%.2f p99 %.2f us (%.0f matched)\n",
            jm_num(k, "count", 0), jm_num(k, "distinct", 0), jm_num(k, "total_us", 0),
            jm_num(l, "p50_us", 0), jm_num(l, "p95_us", 0), jm_num(l, "p99_us", 0),
            jm_num(k, "launches_matched", 0));
    const struct jm_val *top = jm_get(k, "top_by_total");
    for (size_t i = 0; top && i < top->n && i < 5; i++) {
        fprintf(out, "    %10.1f us %6.0fx  ", jm_num(jm_at(top, i), "total_us", 0),
                jm_num(jm_at(top, i), "count", 0));
        put_name(out, jm_str(jm_at(top, i), "name", "?"));
        fputc('\n', out);
    }
    const struct jm_val *mc = jm_get(v, "memcpy");
    for (size_t i = 0; mc && i < mc->n; i++) {
        const struct jm_val *c = jm_at(mc, i);
        fprintf(out, "  memcpy %s: %.0f copies, %.0f bytes, %.2f GB/s\n", jm_str(c, "kind", "?"),
                jm_num(c, "count", 0), jm_num(c, "bytes", 0), jm_num(c, "bandwidth_GBps", 0));
    }
    const struct jm_val *sy = jm_get(v, "sync");
    if (jm_num(sy, "count", 0) > 0)
        fprintf(out, "  sync: %.0f, %.1f us\n", jm_num(sy, "count", 0), jm_num(sy, "total_us", 0));
    const struct jm_val *st = jm_get(v, "steps");
    if (jm_num(st, "count", 0) > 0)
        fprintf(out, "  steps: %.0f, mean %.2f ms, p95 %.2f ms, first after %.2f s\n",
                jm_num(st, "count", 0), jm_num(st, "mean_ms", 0), jm_num(st, "p95_ms", 0),
                jm_num(st, "first_step_start_s", 0));
    const struct jm_val *an = jm_get(jm_get(v, "annotations"), "top_by_total");
    for (size_t i = 0; an && i < an->n && i < 5; i++) {
        fputs("  annotation ", out);
        put_name(out, jm_str(jm_at(an, i), "name", "?"));
        fprintf(out, ": %.0fx, %.1f us\n", jm_num(jm_at(an, i), "count", 0),
                jm_num(jm_at(an, i), "total_us", 0));
    }
}

int typrof__report_summary(const char *dir, FILE *out)
{
    char path[4200], tmp[4300], sdir[4200];
    struct typrof_metrics m;
    if (typrof__metrics_load(dir, &m) != 0) {
        fprintf(stderr, "typrof: cannot read '%s'\n", dir);
        return -1;
    }
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "typrof: cannot write '%s'\n", path);
        typrof__metrics_cleanup(&m);
        return -1;
    }
    if (out)
        fprintf(out, "typrof report: %s\n", dir);
    fputs("{\"schema\":\"typrof.report/1\",\"run\":", f);
    snprintf(sdir, sizeof(sdir), "%s/run.json", dir);
    size_t len;
    char *run = jm_read_file(sdir, 1 << 20, &len);
    struct jm_val *rv = run ? jm_parse(run, len, NULL) : NULL;
    if (rv) {
        fwrite(run, 1, strcspn(run, "\n"), f);
        if (out)
            fprintf(out, "run: exit %d, %.2f s, interval %d ms\n", (int)jm_num(rv, "exit_code", 0),
                    jm_num(rv, "wall_s", 0), (int)jm_num(rv, "interval_ms", 0));
    } else {
        fputs("null", f);
    }
    jm_free(rv);
    free(run);
    fputs(",\n\"system\":", f);
    write_system(f, &m, out);
    typrof__metrics_cleanup(&m);
    fputs(",\n\"processes\":[", f);
    char **files;
    snprintf(sdir, sizeof(sdir), "%s/summary", dir);
    size_t n = list_files(sdir, ".summary.json", &files), written = 0;
    for (size_t i = 0; i < n; i++) {
        char *txt = jm_read_file(files[i], 64u << 20, &len);
        struct jm_val *v = txt ? jm_parse(txt, len, NULL) : NULL;
        if (v) {
            fputs(written++ ? ",\n" : "\n", f);
            while (len && (txt[len - 1] == '\n' || txt[len - 1] == ' '))
                len--;
            fwrite(txt, 1, len, f);
            if (out)
                print_process(out, v);
        }
        jm_free(v);
        free(txt);
    }
    free_list(files, n);
    if (out && written == 0)
        fprintf(out, "no process summaries (no process loaded libtyprof)\n");
    fputs("]}\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        fprintf(stderr, "typrof: cannot write '%s'\n", path);
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void write_metrics_json(FILE *f, const struct typrof_metrics *m)
{
    double t0 = -1;
    for (size_t i = 0; i < m->n; i++)
        if (m->s[i].n && (t0 < 0 || m->s[i].t[0] < t0))
            t0 = m->s[i].t[0];
    fprintf(f, "{\"t0\":%.6f,\"series\":{", t0 < 0 ? 0 : t0);
    for (size_t i = 0; i < m->n; i++) {
        const struct typrof_series *s = &m->s[i];
        size_t stride = s->n / MAX_POINTS_PER_SERIES + 1;
        fprintf(f, "%s\"%s|%s\":{\"t\":[", i ? "," : "", s->name, s->dim);
        for (size_t k = 0; k < s->n; k += stride)
            fprintf(f, "%s%.3f", k ? "," : "", s->t[k] - t0);
        fputs("],\"v\":[", f);
        for (size_t k = 0; k < s->n; k += stride)
            fprintf(f, "%s%.2f", k ? "," : "", s->v[k]);
        fputs("]}", f);
    }
    fputs("}}", f);
}

#include "report_html.inc"

/* Writes v as JSON. */
static void put_json(FILE *f, const struct jm_val *v)
{
    switch (v ? v->type : JM_NULL) {
    case JM_NULL:
        fputs("null", f);
        break;
    case JM_BOOL:
        fputs(v->num ? "true" : "false", f);
        break;
    case JM_NUM:
        if (isfinite(v->num) && v->num == (double)(int64_t)v->num && fabs(v->num) < 9e15)
            fprintf(f, "%lld", (long long)v->num);
        else
            fprintf(f, "%.15g", isfinite(v->num) ? v->num : 0.0);
        break;
    case JM_STR:
        typrof__json_str(f, v->str);
        break;
    case JM_ARR:
    case JM_OBJ:
        fputc(v->type == JM_ARR ? '[' : '{', f);
        for (size_t i = 0; i < v->n; i++) {
            if (i)
                fputc(',', f);
            if (v->type == JM_OBJ) {
                typrof__json_str(f, v->keys[i]);
                fputc(':', f);
            }
            put_json(f, &v->items[i]);
        }
        fputc(v->type == JM_ARR ? ']' : '}', f);
        break;
    }
}

/* One trace file's events, re-based on base_ns. Returns the number written. */
static size_t put_trace_events(FILE *f, const struct jm_val *tr, uint64_t base_ns, int *first)
{
    double off_us = (jm_num(jm_get(tr, "otherData"), "base_time_ns", 0) - (double)base_ns) / 1e3;
    const struct jm_val *ev = jm_get(tr, "traceEvents");
    size_t n = 0;
    for (size_t i = 0; ev && ev->type == JM_ARR && i < ev->n; i++) {
        const struct jm_val *e = &ev->items[i];
        if (e->type != JM_OBJ)
            continue;
        fputs(*first ? "\n{" : ",\n{", f);
        *first = 0;
        for (size_t k = 0; k < e->n; k++) {
            if (k)
                fputc(',', f);
            typrof__json_str(f, e->keys[k]);
            fputc(':', f);
            if (!strcmp(e->keys[k], "ts") && e->items[k].type == JM_NUM)
                fprintf(f, "%.3f", e->items[k].num + off_us);
            else
                put_json(f, &e->items[k]);
        }
        fputc('}', f);
        n++;
    }
    return n;
}

/* The run record's span (typrof run) and the system counters, on track pid. */
static void put_run_events(FILE *f, const struct jm_val *run, const struct typrof_metrics *m,
                           uint64_t base_ns, int pid, int *first)
{
    double start = jm_num(run, "start_ns", 0), end = jm_num(run, "end_ns", 0);
    const struct jm_val *cmd = jm_get(run, "command");
    fprintf(f,
            "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":"
            "\"typrof run (process span, system counters)\"}}",
            *first ? "\n" : ",\n", pid);
    *first = 0;
    fprintf(f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":"
            "\"command\"}}",
            pid, pid);
    if (run && start > 0 && end >= start) {
        fprintf(f,
                ",\n{\"ph\":\"X\",\"cat\":\"process\",\"name\":\"command\",\"pid\":%d,\"tid\":%d,"
                "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"exit_code\":%d,\"wall_s\":%.3f,\"command\":",
                pid, pid, (start - (double)base_ns) / 1e3, (end - start) / 1e3,
                (int)jm_num(run, "exit_code", 0), jm_num(run, "wall_s", 0));
        put_json(f, cmd);
        fputs("}}", f);
    }
    for (size_t i = 0; i < m->n; i++) {
        const struct typrof_series *sr = &m->s[i];
        size_t stride = sr->n / MAX_POINTS_PER_SERIES + 1;
        for (size_t k = 0; k < sr->n; k += stride) {
            fprintf(f,
                    ",\n{\"ph\":\"C\",\"cat\":\"system\",\"name\":\"%s %s\",\"pid\":%d,\"tid\":0,"
                    "\"ts\":%.3f,\"args\":{\"value\":",
                    sr->name, sr->dim, pid, (sr->t[k] * 1e9 - (double)base_ns) / 1e3);
            typrof__json_num(f, sr->v[k]);
            fputs("}}", f);
        }
    }
}

/* The merged timeline of dir into f: see typrof__report_timeline. */
static int timeline_write(FILE *f, const char *dir, size_t max_trace_bytes)
{
    char path[4200];
    size_t len, used = 0, skipped = 0;
    struct typrof_metrics m;
    snprintf(path, sizeof(path), "%s/run.json", dir);
    char *runtxt = jm_read_file(path, 1 << 20, &len);
    struct jm_val *run = runtxt ? jm_parse(runtxt, len, NULL) : NULL;
    free(runtxt);
    if (typrof__metrics_load(dir, &m) != 0) {
        memset(&m, 0, sizeof(m));
        m.first_step_s = -1;
    }
    char **files;
    snprintf(path, sizeof(path), "%s/trace", dir);
    size_t n = list_files(path, ".trace.json", &files);
    struct jm_val **tr = calloc(n ? n : 1, sizeof(*tr));
    double base = jm_num(run, "start_ns", 0);
    for (size_t i = 0; i < m.n; i++)
        if (m.s[i].n && (base <= 0 || m.s[i].t[0] * 1e9 < base))
            base = m.s[i].t[0] * 1e9;
    for (size_t i = 0; tr && i < n; i++) {
        char *txt = jm_read_file(files[i], max_trace_bytes + 1, &len);
        if (!txt || used + len > max_trace_bytes) {
            skipped++;
            free(txt);
            continue;
        }
        used += len;
        tr[i] = jm_parse(txt, len, NULL);
        free(txt);
        double b = jm_num(jm_get(tr[i], "otherData"), "base_time_ns", 0);
        if (b > 0 && (base <= 0 || b < base))
            base = b;
    }
    uint64_t base_ns = base > 0 ? (uint64_t)base : 0;
    int pid = (int)jm_num(run, "pid", 0), first = 1;
    fprintf(f,
            "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"base_time_ns\":%llu,\"generator\":"
            "\"typrof report\",\"trace_files\":%zu,\"skipped_trace_files\":%zu},\"traceEvents\":[",
            (unsigned long long)base_ns, n - skipped, skipped);
    put_run_events(f, run, &m, base_ns, pid > 0 ? pid : 1, &first);
    for (size_t i = 0; tr && i < n; i++)
        if (tr[i])
            put_trace_events(f, tr[i], base_ns, &first);
    fputs("\n]}\n", f);
    for (size_t i = 0; tr && i < n; i++)
        jm_free(tr[i]);
    free(tr);
    free_list(files, n);
    jm_free(run);
    typrof__metrics_cleanup(&m);
    return ferror(f) ? -1 : 0;
}

int typrof__report_timeline(const char *dir, const char *out_path, size_t max_trace_bytes)
{
    char tmp[4300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", out_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "typrof: cannot write '%s'\n", out_path);
        return -1;
    }
    int rc = timeline_write(f, dir, max_trace_bytes);
    if (fclose(f) != 0 || rc != 0 || rename(tmp, out_path) != 0) {
        fprintf(stderr, "typrof: cannot write '%s'\n", out_path);
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* The built-in rules with their defaults, as the dashboard's JSON array. */
static void put_default_rules(FILE *f, const char *dir)
{
    struct typrof_metrics m;
    size_t nr;
    const struct typrof_rule_def *defs = typrof__rules(&nr);
    int loaded = typrof__metrics_load(dir, &m) == 0;
    fputc('[', f);
    for (size_t r = 0; r < nr; r++) {
        struct typrof_rule_result res;
        if (loaded)
            typrof__rule_eval(defs[r].name, &m, NULL, 0, &res);
        else {
            memset(&res, 0, sizeof(res));
            res.rule = defs[r].name;
            res.status = TYPROF_NO_DATA;
            snprintf(res.detail, sizeof(res.detail), "not evaluated: no profiler output");
        }
        fprintf(f,
                "%s{\"rule\":\"%s\",\"status\":\"%s\",\"datapoints\":%zu,\"detail\":", r ? "," : "",
                res.rule, typrof__rule_status_name(res.status), res.datapoints);
        typrof__json_str(f, res.detail);
        fputs(",\"doc\":", f);
        typrof__json_str(f, defs[r].doc);
        fputc('}', f);
    }
    fputc(']', f);
    if (loaded)
        typrof__metrics_cleanup(&m);
}

int typrof__report_html(const char *dir, const char *html_path, size_t max_trace_bytes,
                        const char *job_rules_json)
{
    char path[4200], tmp[4300];
    size_t len;
    snprintf(path, sizeof(path), "%s/summary.json", dir);
    char *summary = jm_read_file(path, 64u << 20, &len);
    if (!summary) {
        fprintf(stderr, "typrof: cannot read '%s'\n", path);
        return -1;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", html_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "typrof: cannot write '%s'\n", html_path);
        free(summary);
        return -1;
    }
    fputs(HTML_HEAD, f);
    fputs("<script type=\"application/json\" id=\"summary\">", f);
    put_script_safe(f, summary, len);
    free(summary);
    fputs("</script>\n<script type=\"application/json\" id=\"metrics\">", f);
    struct typrof_metrics m;
    if (typrof__metrics_load(dir, &m) == 0) {
        write_metrics_json(f, &m);
        typrof__metrics_cleanup(&m);
    } else {
        fputs("{\"t0\":0,\"series\":{}}", f);
    }
    fputs("</script>\n<script type=\"application/json\" id=\"rules\">", f);
    put_default_rules(f, dir);
    fputs("</script>\n<script type=\"application/json\" id=\"jobrules\">", f);
    if (job_rules_json && *job_rules_json)
        put_script_safe(f, job_rules_json, strlen(job_rules_json));
    else
        fputs("[]", f);
    fputs("</script>\n", f);
    /* the merged timeline (process span, system counters, every trace file) */
    char *tl = NULL;
    size_t tln = 0;
    FILE *mf = open_memstream(&tl, &tln);
    int tl_ok = mf && timeline_write(mf, dir, max_trace_bytes) == 0;
    if (mf)
        fclose(mf);
    if (tl_ok && tln <= max_trace_bytes + (8u << 20)) {
        fputs("<script type=\"application/json\" class=\"trace\">", f);
        put_script_safe(f, tl, tln);
        fputs("</script>\n", f);
    } else {
        fputs("<p class=\"muted\">the timeline is over --max-trace-mb; open "
              "timeline.trace.json in ui.perfetto.dev</p>\n",
              f);
    }
    free(tl);
    fputs(HTML_JS, f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, html_path) != 0) {
        fprintf(stderr, "typrof: cannot write '%s'\n", html_path);
        unlink(tmp);
        return -1;
    }
    return 0;
}
