#ifndef TY_PROFILER_TYPROF_REPORT_H
#define TY_PROFILER_TYPROF_REPORT_H
/*
 * typrof_report.h - the profiler's rules and per-run dashboard as a library (libtyprof_report,
 * static), for programs that evaluate a profiler output directory after the run: the agent
 * (ProfilerRuleConfigurations, the per-job dashboard) and `typrof rules` / `typrof report`.
 *
 * Owns: loading a profiler output directory (system metrics, summaries, traces, run.json),
 * evaluating one built-in rule on it, writing the dashboard and the merged timeline. Does not
 * own: the recorder (typrof.h) or where the results go. Functions are reentrant; a
 * struct typrof_data is used by one thread at a time. Messages about unreadable files go to
 * stderr.
 */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct typrof_data; /* opaque: the metrics of one output directory */

/* Loads dir (system/incremental/<hour>/<epoch>.<node>.json, summary/<node>.<pid>.summary.json).
 * OUT: *out (caller frees with typrof_data_free()). Returns 0, or -1 when dir cannot be read
 * or memory runs out. */
int typrof_data_load(const char *dir, struct typrof_data **out);
void typrof_data_free(struct typrof_data *d);

/* One rule's outcome. status: "IssuesFound", "NoIssuesFound", "NoData" (not evaluated: the
 * data the rule needs is absent) or "Error" (static strings). */
struct typrof_rule_outcome {
    const char *status;
    size_t datapoints;
    double value; /* the measured quantity compared with the threshold */
    char detail[400];
};

/* Evaluates built-in rule `rule` (SageMaker Debugger's names) with params "key=value" (n of
 * them, borrowed; SageMaker's scheduling keys are accepted and ignored; other unknown keys give
 * "Error"). OUT: *out. Returns 0, or -1 when no such rule exists. */
int typrof_rule_run(const struct typrof_data *d, const char *rule, const char *const *params,
                    size_t n, struct typrof_rule_outcome *out);

struct typrof_report_opts {
    const char *html_path;      /* the dashboard; NULL: <dir>/report.html */
    const char *trace_path;     /* the merged Perfetto trace; NULL: <dir>/timeline.trace.json */
    const char *job_rules_json; /* NULL or a JSON array of {"RuleConfigurationName","Rule",
                                   "RuleEvaluationStatus","StatusDetails","Datapoints"} */
    size_t max_trace_bytes;     /* trace files read at most; 0: 32 MiB */
};

/* Writes <dir>/summary.json, the self-contained HTML dashboard (utilisation charts, rules,
 * kernels, launch latency, copies, steps, timeline; no network resources) and the merged
 * timeline (the command's span, system counters and every trace file; exists for every run,
 * CUDA or not). dir must be writable. Returns 0 or -1. */
int typrof_report_write(const char *dir, const struct typrof_report_opts *o);

#ifdef __cplusplus
}
#endif
#endif /* TY_PROFILER_TYPROF_REPORT_H */
