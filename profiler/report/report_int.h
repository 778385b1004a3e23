#ifndef TY_PROFILER_REPORT_INT_H
#define TY_PROFILER_REPORT_INT_H
/*
 * report_int.h - typrof_report's internals: the summary merge, text report, HTML dashboard and
 * merged timeline (report.c), behind the public typrof_report.h (reportapi.c) and used directly
 * by the typrof CLI (`run` merges the summary, `report` prints it). Private to the profiler.
 */
#include <stddef.h>
#include <stdio.h>

/* Writes <dir>/summary.json: {"schema":"typrof.report/1","run":<dir/run.json or null>,
 * "system":{...utilisation...},"processes":[<each summary/NODE.PID.summary.json>]} and prints a
 * text summary to out (NULL: no text). Returns 0, or -1 with a message on stderr. */
int typrof__report_summary(const char *dir, FILE *out);

/* Writes the self-contained HTML dashboard to html_path (needs <dir>/summary.json), embedding
 * the merged timeline when its trace files fit in max_trace_bytes. job_rules_json (borrowed,
 * may be NULL): a JSON array of the job's rule results ({"RuleConfigurationName","Rule",
 * "RuleEvaluationStatus","StatusDetails","Datapoints"}) shown above the built-in defaults.
 * Returns 0 or -1. */
int typrof__report_html(const char *dir, const char *html_path, size_t max_trace_bytes,
                        const char *job_rules_json);

/* Writes one Perfetto/Chrome-trace JSON with the whole run: the command's span from run.json,
 * the system metrics as counter tracks ("ph":"C"), and every trace/<...>.trace.json re-based
 * on the earliest base_time_ns (files past max_trace_bytes in all are left out and counted in
 * otherData.skipped_trace_files). Exists for every run, with or without CUDA. 0 or -1. */
int typrof__report_timeline(const char *dir, const char *out_path, size_t max_trace_bytes);

#endif /* TY_PROFILER_REPORT_INT_H */
