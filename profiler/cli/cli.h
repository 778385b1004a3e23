#ifndef TY_PROFILER_CLI_H
#define TY_PROFILER_CLI_H
/*
 * cli.h - shared between typrof.c (argument handling, `run`, `rules`) and report.c (summary
 * merge, text report, HTML dashboard).
 */
#include <stddef.h>
#include <stdio.h>

/* Writes <dir>/summary.json: {"schema":"typrof.report/1","run":<dir/run.json or null>,
 * "system":{...utilisation...},"processes":[<each summary/NODE.PID.summary.json>]} and prints a
 * text summary to out (NULL: no text). Returns 0, or -1 with a message on stderr. */
int typrof_cli_summary(const char *dir, FILE *out);

/* Writes the self-contained HTML dashboard to html_path, embedding at most max_trace_bytes of
 * trace JSON. Returns 0 or -1. */
int typrof_cli_html(const char *dir, const char *html_path, size_t max_trace_bytes);

#endif /* TY_PROFILER_CLI_H */
