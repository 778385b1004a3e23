/*
 * summary.c - writes the per-process summary JSON from the processing core's aggregates: top
 * kernels by total and mean time, launch-latency percentiles, GPU busy/idle per device, bytes
 * and bandwidth per copy direction, synchronisation time, API call totals, annotation ranges,
 * step durations and CUPTI overhead. Schema "typrof.summary/1", documented in README.md.
 */
#include "typrof_int.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOP_N 15

static int cmp_total(const void *a, const void *b)
{
    const struct typrof_stat *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_mean(const void *a, const void *b)
{
    const struct typrof_stat *x = a, *y = b;
    double mx = (double)x->total_ns / (double)x->count, my = (double)y->total_ns / (double)y->count;
    if (mx != my)
        return mx > my ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Writes the TOP_N entries of t by total or mean time; sorts a copy (t's index stays valid). */
static void stat_list(FILE *f, const struct typrof_stattab *t, int by_mean)
{
    size_t n = t->n;
    struct typrof_stat *s = typrof__malloc((n ? n : 1) * sizeof(*s));
    if (!s)
        n = 0;
    else if (n)
        memcpy(s, t->v, n * sizeof(*s));
    if (n > 1)
        qsort(s, n, sizeof(*s), by_mean ? cmp_mean : cmp_total);
    fputc('[', f);
    for (size_t i = 0; i < n && i < TOP_N; i++) {
        fputs(i ? ",\n    {\"name\":" : "\n    {\"name\":", f);
        typrof__json_str(f, s[i].name);
        fprintf(f, ",\"count\":%llu,\"total_us\":", (unsigned long long)s[i].count);
        typrof__json_num(f, (double)s[i].total_ns / 1e3);
        fputs(",\"mean_us\":", f);
        typrof__json_num(f, (double)s[i].total_ns / 1e3 / (double)s[i].count);
        fputs(",\"min_us\":", f);
        typrof__json_num(f, (double)s[i].min_ns / 1e3);
        fputs(",\"max_us\":", f);
        typrof__json_num(f, (double)s[i].max_ns / 1e3);
        fputc('}', f);
    }
    fputs("]", f);
    typrof__free(s);
}

static void pct_obj(FILE *f, struct typrof_samples *s)
{
    static const double pcts[] = {50, 90, 95, 99};
    static const char *names[] = {"p50", "p90", "p95", "p99"};
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += (double)s->v[i];
    fprintf(f, "{\"count\":%llu,\"sampled\":%zu", (unsigned long long)s->seen, s->n);
    for (size_t i = 0; i < 4; i++) {
        fprintf(f, ",\"%s_us\":", names[i]);
        typrof__json_num(f, (double)typrof__samples_pct(s, pcts[i]) / 1e3);
    }
    fputs(",\"min_us\":", f);
    typrof__json_num(f, s->n ? (double)s->v[0] / 1e3 : 0);
    fputs(",\"max_us\":", f);
    typrof__json_num(f, s->n ? (double)s->v[s->n - 1] / 1e3 : 0);
    fputs(",\"mean_us\":", f);
    typrof__json_num(f, s->n ? sum / (double)s->n / 1e3 : 0);
    fputc('}', f);
}

static void steps_obj(FILE *f, struct typrof_proc *p, uint64_t start_ns)
{
    struct typrof_samples *s = &p->steps;
    double sum = 0, sq = 0;
    /* durations in arrival order first (StepOutlier reads them), then percentiles (sorts) */
    fprintf(f, "{\"count\":%llu", (unsigned long long)s->seen);
    if (p->first_step_ns) {
        fputs(",\"first_step_start_s\":", f);
        typrof__json_num(f, (double)(p->first_step_ns -
                                     (p->first_step_ns > start_ns ? start_ns : p->first_step_ns)) /
                                1e9);
    }
    fputs(",\"durations_ms\":[", f);
    for (size_t i = 0; i < s->n && i < 10000; i++) {
        if (i)
            fputc(',', f);
        typrof__json_num(f, (double)s->v[i] / 1e6);
        sum += (double)s->v[i];
        sq += (double)s->v[i] * (double)s->v[i];
    }
    fputs("]", f);
    if (s->n) {
        double mean = sum / (double)(s->n < 10000 ? s->n : 10000);
        double var = sq / (double)(s->n < 10000 ? s->n : 10000) - mean * mean;
        fputs(",\"mean_ms\":", f);
        typrof__json_num(f, mean / 1e6);
        fputs(",\"std_ms\":", f);
        typrof__json_num(f, var > 0 ? sqrt(var) / 1e6 : 0);
        fputs(",\"p50_ms\":", f);
        typrof__json_num(f, (double)typrof__samples_pct(s, 50) / 1e6);
        fputs(",\"p95_ms\":", f);
        typrof__json_num(f, (double)typrof__samples_pct(s, 95) / 1e6);
        fputs(",\"max_ms\":", f);
        typrof__json_num(f, (double)s->v[s->n - 1] / 1e6);
    }
    fputc('}', f);
}

int typrof__summary_write(struct typrof_proc *p, const struct typrof_summary_meta *m,
                          const char *path)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    pthread_mutex_lock(&p->flush_lock); /* also serialises writers of the same file */
    FILE *f = fopen(tmp, "w");
    if (!f) {
        pthread_mutex_unlock(&p->flush_lock);
        TP_LOG(TYPROF_LOG_ERROR, "summary.write", "path='%s' op=fopen", path);
        return -TYPROF_EIO;
    }
    uint64_t span = m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0;
    fputs("{\"schema\":\"typrof.summary/1\",\"producer\":\"typrof " TY_VERSION "\",\"node\":", f);
    typrof__json_str(f, m->node);
    fprintf(f, ",\"pid\":%u,\"start_ns\":%llu,\"end_ns\":%llu,\"duration_s\":", m->pid,
            (unsigned long long)m->start_ns, (unsigned long long)m->end_ns);
    typrof__json_num(f, (double)span / 1e9);
    fprintf(f, ",\n\"gpu_tracing\":%s,\"gpu_note\":", m->gpu_tracing ? "true" : "false");
    if (m->gpu_note)
        typrof__json_str(f, m->gpu_note);
    else
        fputs("null", f);
    fprintf(f, ",\"events\":%llu,\"dropped_records\":%llu,", (unsigned long long)p->events_total,
            (unsigned long long)p->dropped);

    uint64_t kcount = 0, ktotal = 0;
    for (size_t i = 0; i < p->kern.n; i++) {
        kcount += p->kern.v[i].count;
        ktotal += p->kern.v[i].total_ns;
    }
    fprintf(f, "\n\"kernels\":{\"count\":%llu,\"total_us\":", (unsigned long long)kcount);
    typrof__json_num(f, (double)ktotal / 1e3);
    fprintf(f, ",\"distinct\":%zu,\"launches_matched\":%llu,\"launches_unmatched\":%llu,",
            p->kern.n, (unsigned long long)p->kernels_matched,
            (unsigned long long)p->kernels_unmatched);
    fputs("\n  \"top_by_total\":", f);
    stat_list(f, &p->kern, 0);
    fputs(",\n  \"top_by_mean\":", f);
    stat_list(f, &p->kern, 1);
    fputs("},\n\"launch_latency\":", f);
    pct_obj(f, &p->lat_start);
    fputs(",\n\"launch_latency_after_api_end\":", f);
    pct_obj(f, &p->lat_end);

    fputs(",\n\"gpus\":[", f);
    int first = 1;
    for (int d = 0; d < TP_MAX_DEVICES; d++) {
        struct typrof_devstat *ds = &p->dev[d];
        if (!ds->used)
            continue;
        uint64_t dspan = ds->last_ns > ds->first_ns ? ds->last_ns - ds->first_ns : 0;
        fprintf(f, "%s{\"device\":%d,\"kernels\":%llu,\"busy_us\":", first ? "" : ",", d,
                (unsigned long long)ds->kernels);
        first = 0;
        typrof__json_num(f, (double)ds->busy_ns / 1e3);
        fputs(",\"active_span_us\":", f);
        typrof__json_num(f, (double)dspan / 1e3);
        fputs(",\"idle_fraction\":", f);
        typrof__json_num(f, dspan ? 1.0 - (double)ds->busy_ns / (double)dspan : 0);
        fputs(",\"idle_fraction_of_run\":", f);
        typrof__json_num(f, span ? 1.0 - (double)ds->busy_ns / (double)span : 0);
        fputc('}', f);
    }
    fputs("],\n\"memcpy\":[", f);
    first = 1;
    for (uint32_t k = 0; k < TP_MAX_COPY_KINDS; k++) {
        struct typrof_copystat *c = &p->copy[k];
        if (!c->count)
            continue;
        fprintf(f, "%s{\"kind\":", first ? "" : ",");
        first = 0;
        typrof__json_str(f, typrof__copy_kind_name(k) + 7); /* skip "Memcpy " */
        fprintf(f, ",\"count\":%llu,\"bytes\":%llu,\"total_us\":", (unsigned long long)c->count,
                (unsigned long long)c->bytes);
        typrof__json_num(f, (double)c->total_ns / 1e3);
        fputs(",\"bandwidth_GBps\":", f);
        typrof__json_num(f, c->total_ns ? (double)c->bytes / (double)c->total_ns : 0);
        fputc('}', f);
    }
    fprintf(f, "],\n\"memset\":{\"count\":%llu,\"bytes\":%llu,\"total_us\":",
            (unsigned long long)p->memset_stat.count, (unsigned long long)p->memset_stat.bytes);
    typrof__json_num(f, (double)p->memset_stat.total_ns / 1e3);
    fprintf(f, "},\n\"sync\":{\"count\":%llu,\"total_us\":", (unsigned long long)p->sync_count);
    typrof__json_num(f, (double)p->sync_ns / 1e3);
    fputs(",\"by_type_us\":{", f);
    first = 1;
    for (uint32_t t = 1; t < TP_MAX_SYNC_TYPES; t++) {
        if (!p->sync_type_ns[t])
            continue;
        fputs(first ? "" : ",", f);
        first = 0;
        typrof__json_str(f, typrof__sync_type_name(t));
        fputc(':', f);
        typrof__json_num(f, (double)p->sync_type_ns[t] / 1e3);
    }
    fputs("}},\n\"api\":{\"top_by_total\":", f);
    stat_list(f, &p->api_calls, 0);
    fputs("},\n\"annotations\":{\"top_by_total\":", f);
    stat_list(f, &p->ranges, 0);
    fputs("},\n\"steps\":", f);
    steps_obj(f, p, m->start_ns);
    fprintf(f, ",\n\"cupti_overhead\":{\"count\":%llu,\"total_us\":",
            (unsigned long long)p->overhead_count);
    typrof__json_num(f, (double)p->overhead_ns / 1e3);
    fputs("}}\n", f);
    int bad = ferror(f);
    int rc = 0;
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        TP_LOG(TYPROF_LOG_ERROR, "summary.write", "path='%s' op=write", path);
        unlink(tmp);
        rc = -TYPROF_EIO;
    }
    pthread_mutex_unlock(&p->flush_lock);
    return rc;
}
