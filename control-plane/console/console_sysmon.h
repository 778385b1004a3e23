/*
 * console_sysmon.h - a profiled job's system metrics for the console's charts: GET
 * <job page>/system.json (the admin's /console/jobs/<name>/ and a Studio user's
 * /console/profiler/jobs/<name>/) answers the CPU, memory, GPU, GPU memory and network series
 * of the job's first host, read from the system-metrics files that the agent uploads while the
 * job runs (SageMaker's layout: <profiler prefix>/profiler-output/system/incremental/
 * <YYYYMMDDHH>/<epoch>.algo-1.json, JSON lines, profiler-compiler.md). console.js polls it
 * every few seconds while the job runs and draws the charts with uPlot.
 *
 * Owns: the feed's reads (DescribeTrainingJob as the principal; s3:ListBucket and s3:GetObject
 * checked with authz_check, as the S3 API would; at most CONSOLE_SYSMON_FILES newest files and
 * CONSOLE_SYSMON_BYTES bytes) and the folding of the JSON lines into series.
 * Answer: {"enabled": false} for a job without profiling, else {"enabled": true, "t": [epoch s],
 * "cpu": [% mean of the cores], "mem": [%], "gpu": [% mean of the GPUs], "gpumem": [%],
 * "rx": [B/s], "tx": [B/s], "gpus": <GPUs seen>} (null where a sample lacks a value); an error
 * as {"__type", "message"} with its HTTP status.
 * Thread-safety: reentrant.
 */
#ifndef TY_CP_CONSOLE_SYSMON_H
#define TY_CP_CONSOLE_SYSMON_H

#include <jansson.h>
#include <stddef.h>

#include "console_call.h"
#include "http.h"

#define CONSOLE_SYSMON_FILES  60         /* newest files read: an hour of a per-minute rotation */
#define CONSOLE_SYSMON_BYTES  (8u << 20) /* bytes read at most */
#define CONSOLE_SYSMON_POINTS 1200       /* samples answered at most (the newest) */

/*
 * Folds SageMaker system-metrics JSON lines (text, len: files concatenated oldest first) of
 * node (e.g. "algo-1") into the series object above (without "enabled"), keeping the newest
 * max_points samples. Lines of one sample share a Timestamp; a torn or foreign line is
 * skipped. new: object (never NULL unless out of memory).
 */
json_t *console_sysmon_series(const char *text, size_t len, const char *node, size_t max_points);

/* Answers <job page>/system.json for training job name as c's principal. */
void console_sysmon_feed(const struct console_ctx *c, const char *name, struct http_response *resp);

#endif
