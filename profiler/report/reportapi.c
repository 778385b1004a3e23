/*
 * reportapi.c - typrof_report.h: the public face of the rules (rules.h) and of the dashboard
 * writer (report.c) for the agent and other callers that must not see the internals.
 */
#include "report_int.h"
#include "rules.h"
#include "typrof_report.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct typrof_data {
    struct typrof_metrics m;
};

int typrof_data_load(const char *dir, struct typrof_data **out)
{
    struct typrof_data *d = calloc(1, sizeof(*d));
    *out = NULL;
    if (!d)
        return -1;
    if (typrof__metrics_load(dir, &d->m) != 0) {
        free(d);
        return -1;
    }
    *out = d;
    return 0;
}

void typrof_data_free(struct typrof_data *d)
{
    if (!d)
        return;
    typrof__metrics_cleanup(&d->m);
    free(d);
}

int typrof_rule_run(const struct typrof_data *d, const char *rule, const char *const *params,
                    size_t n, struct typrof_rule_outcome *out)
{
    struct typrof_rule_result r;
    memset(out, 0, sizeof(*out));
    if (typrof__rule_eval(rule, &d->m, params, n, &r) != 0)
        return -1;
    out->status = typrof__rule_status_name(r.status);
    out->datapoints = r.datapoints;
    out->value = r.value;
    snprintf(out->detail, sizeof(out->detail), "%s", r.detail);
    return 0;
}

int typrof_report_write(const char *dir, const struct typrof_report_opts *o)
{
    char html[4200], trace[4200];
    size_t max = o && o->max_trace_bytes ? o->max_trace_bytes : (32u << 20);
    snprintf(html, sizeof(html), "%s/report.html", dir);
    snprintf(trace, sizeof(trace), "%s/timeline.trace.json", dir);
    if (typrof__report_summary(dir, NULL) != 0)
        return -1;
    if (typrof__report_html(dir, o && o->html_path ? o->html_path : html, max,
                            o ? o->job_rules_json : NULL) != 0)
        return -1;
    return typrof__report_timeline(dir, o && o->trace_path ? o->trace_path : trace, max);
}
