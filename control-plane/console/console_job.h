/*
 * console_job.h - one training job's page (/console/jobs/<name> for IAM users,
 * /console/profiler/jobs/<name> for a Studio user's own jobs): status and the secondary-status
 * timeline with durations, failure reason, hyperparameters, channels, resource config,
 * artifacts with presigned download links, MetricDefinitions as charts over time (drawn by
 * console.js with uPlot from the log stream, the series the agent's metrics come from), the
 * log tail that follows a running job, Stop with a confirmation; for a profiled job the
 * profiler output (the per-job dashboard, the raw files, the trace and a Perfetto link).
 * Also its JSON feed for the page's script: <page>/logs.json?startFromHead=..&nextToken=..
 * (GetLogEvents of the job's first stream, as the principal).
 *
 * Owns: those pages' HTML and feeds, and /console/download?uri=s3://bucket/key: an object
 * of the object store, authorised as the principal (s3:GetObject through authz_check, as the
 * S3 API would) and streamed from it (the session cookie says who asks; an HTML profiler
 * report is shown there in a sandbox with no access to the console's origin). Artifact links
 * are S3 presigned URLs (console_presign.h), with the console download beside them. Every other
 * read is an API operation as the principal (DescribeTrainingJob, DescribeLogStreams,
 * GetLogEvents). Thread-safety: reentrant.
 */
#ifndef TY_CP_CONSOLE_JOB_H
#define TY_CP_CONSOLE_JOB_H

#include "console_pages.h"

/* Serves the job page (or its feed when sub is "logs.json"; sub "" = the page) of job name at
   base ("/console/jobs/" or "/console/profiler/jobs/"). Always fills resp. */
void console_job_serve(const struct console_ctx *c, const char *base, const char *name,
                       const char *sub, const char *query, const struct console_banner *bn,
                       struct http_response *resp);

/* Answers /console/download (query: uri=s3://bucket/key[&view=1]). */
void console_job_download(const struct console_ctx *c, const char *query,
                          struct http_response *resp);

/*
 * 1 when uri (s3://bucket/key) is one of the objects the console links for a job that the
 * Studio session c belongs to (attrib_owns of the session's UserProfileArn): the job's
 * S3ModelArtifacts, <S3OutputPath>/<job>/output/output.tar.gz, its profiler dashboard, or a
 * file under its <profiler prefix>/profiler-output/. Only exact keys and the profiler folder,
 * which end in the job's own (unique) name, count: a broad prefix such as another job's
 * S3OutputPath could be claimed by anyone naming it in a job of his. The job is found by a
 * path segment of the key (at most 32 are tried). 0 otherwise, also on a store error.
 */
int console_job_studio_uri_ok(const struct console_ctx *c, const char *uri);

/* new: the S3 prefix (no trailing '/') of a job's profiler output ("<S3OutputPath>/<job>"),
   or NULL when profiling is not enabled. */
char *console_job_profiler_prefix(json_t *job);

#endif
