/*
 * console_job.c - the training job page, its log feed and console downloads (console_job.h).
 */
#include "console_job.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attrib.h"
#include "authz.h"
#include "console.h"
#include "console_assets.h"
#include "console_html.h"
#include "console_sysmon.h"
#include "objstore.h"

#define JOB_LOG_GROUP "/aws/sagemaker/TrainingJobs"
#define JOB_MAX_FILES 200

static const char *job_s(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

char *console_job_profiler_prefix(json_t *job)
{
    const char *name = json_string_value(json_object_get(job, "TrainingJobName"));
    const char *st = json_string_value(json_object_get(job, "ProfilingStatus"));
    const char *path =
        json_string_value(json_object_get(json_object_get(job, "ProfilerConfig"), "S3OutputPath"));
    size_t len;
    char *out;
    if (!name || !st || strcmp(st, "Enabled") != 0)
        return NULL;
    if (!path)
        path = json_string_value(
            json_object_get(json_object_get(job, "OutputDataConfig"), "S3OutputPath"));
    if (!path)
        return NULL;
    len = strlen(path);
    while (len > 0 && path[len - 1] == '/')
        len--;
    out = malloc(len + strlen(name) + 2);
    if (out)
        snprintf(out, len + strlen(name) + 2, "%.*s/%s", (int)len, path, name);
    return out;
}

/* Splits s3://bucket/key. OUT: bucket (n >= 64), *key (borrowed from uri). 0 or -1. */
static int job_s3(const char *uri, char *bucket, size_t n, const char **key)
{
    const char *slash;
    if (!uri || strncmp(uri, "s3://", 5) != 0)
        return -1;
    uri += 5;
    slash = strchr(uri, '/');
    if (!slash || (size_t)(slash - uri) >= n || slash == uri)
        return -1;
    memcpy(bucket, uri, (size_t)(slash - uri));
    bucket[slash - uri] = '\0';
    *key = slash + 1;
    return 0;
}

/* A link to an object: view = job's HTML dashboard shown in the console's sandbox
   (/console/download, when its bytes are the ones the agent wrote: console_job_download);
   else a presigned S3 URL (/console/presign answers a 303 to it), with beside it the link to
   the page that shows the URL and the console's own download. */
static void job_dl(struct ty_buf *b, const char *uri, const char *label, int view, const char *job)
{
    ty_buf_puts(b, view ? "<a href=\"/console/download?uri=" : "<a href=\"/console/presign?uri=");
    console_html_url(b, uri);
    if (view) {
        ty_buf_puts(b, "&amp;view=1&amp;job=");
        console_html_url(b, job);
    }
    ty_buf_puts(b, "\">");
    ty_buf_put_html(b, label);
    ty_buf_puts(b, "</a>");
    if (view)
        return;
    ty_buf_puts(b, " <span class=\"dl-alt\">(<a href=\"/console/presign?uri=");
    console_html_url(b, uri);
    ty_buf_puts(b, "&amp;show=1\" aria-label=\"Presigned URL of ");
    ty_buf_put_html(b, label);
    ty_buf_puts(b, "\">presigned URL</a>, <a href=\"/console/download?uri=");
    console_html_url(b, uri);
    ty_buf_puts(b, "\" aria-label=\"Download through the console: ");
    ty_buf_put_html(b, label);
    ty_buf_puts(b, "\">via the console</a>)</span>");
}

static void job_row(struct ty_buf *b, const char *k, const char *v)
{
    ty_buf_puts(b, "<dt>");
    ty_buf_put_html(b, k);
    ty_buf_puts(b, "</dt><dd>");
    ty_buf_put_html(b, v && *v ? v : "-");
    ty_buf_puts(b, "</dd>");
}

static void job_dur(struct ty_buf *b, double s)
{
    long t = (long)(s + 0.5);
    if (s < 0)
        ty_buf_puts(b, "-");
    else if (t >= 3600)
        ty_buf_printf(b, "%ldh %02ldm %02lds", t / 3600, (t / 60) % 60, t % 60);
    else if (t >= 60)
        ty_buf_printf(b, "%ldm %02lds", t / 60, t % 60);
    else
        ty_buf_printf(b, "%lds", t);
}

/* The profiler section: the dashboard, the raw files, the trace, Perfetto. */
static void job_profiler(const struct console_ctx *c, struct ty_buf *b, json_t *job)
{
    char *prefix = console_job_profiler_prefix(job), bucket[64], uri[2200];
    const char *key;
    struct objstore *os = NULL;
    struct objstore_listing l;
    struct ty_err err;
    char lp[OBJSTORE_MAX_KEY + 1], arn[200];

    ty_err_clear(&err);
    memset(&l, 0, sizeof(l));
    ty_buf_puts(b, "<section aria-labelledby=\"h-prof\"><h2 id=\"h-prof\">Profiler</h2>\n");
    if (!prefix) {
        ty_buf_puts(b, "<p>Profiling is not enabled for this job.</p></section>\n");
        return;
    }
    snprintf(uri, sizeof(uri), "%s/rule-output/ProfilerReport/profiler-output/profiler-report.html",
             prefix);
    ty_buf_puts(b, "<p>Output: <code>");
    ty_buf_put_html(b, prefix);
    ty_buf_puts(b, "/</code></p>\n<p class=\"actions\">");
    job_dl(b, uri, "Open the profiler dashboard", 1, job_s(job, "TrainingJobName"));
    ty_buf_puts(b, " <a href=\"https://ui.perfetto.dev/\" rel=\"noopener noreferrer\" "
                   "target=\"_blank\">Open Perfetto (ui.perfetto.dev, external)</a> and load the "
                   "trace file below.</p>\n");
    if (job_s3(prefix, bucket, sizeof(bucket), &key) != 0)
        goto out;
    snprintf(arn, sizeof(arn), "arn:aws:s3:::%s", bucket);
    if (authz_check(c->s, c->sess->principal, "s3:ListBucket", arn, NULL, 0, &err) != 0) {
        console_html_error(b, &err, "AccessDenied");
        goto out;
    }
    os = objstore_open(c->rc->s3_dir ? c->rc->s3_dir : "", c->s, &err);
    if (os && c->rc->s3_remote)
        objstore_use_remote(os, c->rc->s3_remote, &err);
    snprintf(lp, sizeof(lp), "%s/profiler-output/", key);
    if (!os || objstore_list(os, bucket, lp, NULL, NULL, NULL, JOB_MAX_FILES, &l, &err) != 0) {
        ty_buf_puts(b, "<p>No profiler output yet.</p>\n");
        goto out;
    }
    ty_buf_puts(b, "<table><caption>Profiler output files</caption><thead><tr><th scope=\"col\">"
                   "File</th><th scope=\"col\">Size (bytes)</th></tr></thead><tbody>\n");
    for (size_t i = 0; i < l.n; i++) {
        snprintf(uri, sizeof(uri), "s3://%s/%s", bucket, l.e[i].key);
        ty_buf_puts(b, "<tr><td>");
        job_dl(b, uri, l.e[i].key + strlen(key) + 1, 0, NULL);
        ty_buf_printf(b, "</td><td>%llu</td></tr>\n", (unsigned long long)l.e[i].meta.size);
    }
    ty_buf_puts(b, "</tbody></table>\n");
    if (l.n == 0)
        ty_buf_puts(b, "<p>No profiler output yet.</p>\n");
out:
    ty_buf_puts(b, "</section>\n");
    objstore_listing_cleanup(&l);
    objstore_close(os);
    free(prefix);
}

/* The secondary status timeline, each status with its duration. */
static void job_timeline(struct ty_buf *b, json_t *job, const char *st)
{
    json_t *t;
    size_t i;

    ty_buf_puts(b, "<h2>Timeline</h2>\n<ol class=\"timeline\">");
    json_array_foreach(json_object_get(job, "SecondaryStatusTransitions"), i, t)
    {
        json_t *s0 = json_object_get(t, "StartTime"), *e0 = json_object_get(t, "EndTime");
        ty_buf_puts(b, "<li><strong>");
        ty_buf_put_html(b, job_s(t, "Status"));
        ty_buf_puts(b, "</strong> <span class=\"when\">");
        console_html_time(b, s0);
        ty_buf_puts(b, "</span>");
        if (!json_is_number(e0) &&
            i + 1 == json_array_size(json_object_get(job, "SecondaryStatusTransitions")) &&
            strcmp(st, "InProgress") != 0 && strcmp(st, "Stopping") != 0) {
            /* the final status has no duration */
            ty_buf_puts(b, "<br>");
            ty_buf_put_html(b, job_s(t, "StatusMessage"));
            ty_buf_puts(b, "</li>");
            continue;
        }
        ty_buf_puts(b, " <span class=\"dur\">(");
        job_dur(b, json_is_number(s0)
                       ? (json_is_number(e0) ? json_number_value(e0) : (double)time(NULL)) -
                             json_number_value(s0)
                       : -1);
        ty_buf_puts(b, json_is_number(e0) ? ")" : ", so far)");
        ty_buf_puts(b, "</span><br>");
        ty_buf_put_html(b, job_s(t, "StatusMessage"));
        ty_buf_puts(b, "</li>");
    }
    ty_buf_puts(b, "</ol>\n");
}

/* Metrics: the final values, and the charts console.js draws from the log stream. */
static void job_metrics(struct ty_buf *b, json_t *job, const char *back)
{
    json_t *v, *t;
    size_t i;

    ty_buf_puts(b, "<h2>Metrics</h2>\n");
    v = json_object_get(job, "FinalMetricDataList");
    if (json_array_size(v) > 0) {
        ty_buf_puts(b, "<table><caption>Latest metric values</caption><thead><tr><th "
                       "scope=\"col\">Metric</th><th scope=\"col\">Value</th></tr></thead>"
                       "<tbody>");
        json_array_foreach(v, i, t)
        {
            ty_buf_puts(b, "<tr><td>");
            ty_buf_put_html(b, job_s(t, "MetricName"));
            ty_buf_printf(b, "</td><td>%g</td></tr>",
                          json_number_value(json_object_get(t, "Value")));
        }
        ty_buf_puts(b, "</tbody></table>\n");
    }
    v = json_object_get(json_object_get(job, "AlgorithmSpecification"), "MetricDefinitions");
    if (json_array_size(v) > 0) {
        char *defs = json_dumps(v, JSON_COMPACT);
        ty_buf_puts(b, "<div id=\"charts\" class=\"charts\" data-defs=\"");
        ty_buf_put_html(b, defs ? defs : "[]");
        ty_buf_puts(b, "\" data-feed=\"");
        ty_buf_put_html(b, back);
        ty_buf_printf(b, "/logs.json\" data-uplot=\"%d\"></div>\n", console_assets_have_uplot());
        free(defs);
    } else {
        ty_buf_puts(b, "<p>This job defines no metrics (MetricDefinitions).</p>\n");
    }
}

/* The configuration: hyperparameters, input channels, resources (the list is left open). */
static void job_config(struct ty_buf *b, json_t *job)
{
    json_t *v, *t;
    const char *k;
    size_t i;

    ty_buf_puts(b, "<h2>Hyperparameters</h2>\n");
    v = json_object_get(job, "HyperParameters");
    if (json_object_size(v) == 0) {
        ty_buf_puts(b, "<p>None.</p>\n");
    } else {
        ty_buf_puts(b, "<table><caption>Hyperparameters</caption><thead><tr><th scope=\"col\">"
                       "Name</th><th scope=\"col\">Value</th></tr></thead><tbody>");
        json_object_foreach(v, k, t)
        {
            ty_buf_puts(b, "<tr><td>");
            ty_buf_put_html(b, k);
            ty_buf_puts(b, "</td><td>");
            ty_buf_put_html(b, json_string_value(t));
            ty_buf_puts(b, "</td></tr>");
        }
        ty_buf_puts(b, "</tbody></table>\n");
    }
    ty_buf_puts(b, "<h2>Input channels</h2>\n<table><caption>Input channels</caption><thead>"
                   "<tr><th scope=\"col\">Channel</th><th scope=\"col\">S3 URI</th></tr></thead>"
                   "<tbody>");
    json_array_foreach(json_object_get(job, "InputDataConfig"), i, t)
    {
        ty_buf_puts(b, "<tr><td>");
        ty_buf_put_html(b, job_s(t, "ChannelName"));
        ty_buf_puts(b, "</td><td>");
        ty_buf_put_html(
            b, job_s(json_object_get(json_object_get(t, "DataSource"), "S3DataSource"), "S3Uri"));
        ty_buf_puts(b, "</td></tr>");
    }
    ty_buf_puts(b, "</tbody></table>\n<h2>Resources</h2>\n<dl class=\"facts\">");
    v = json_object_get(job, "ResourceConfig");
    job_row(b, "Instance type", job_s(v, "InstanceType"));
    ty_buf_printf(b, "<dt>Instance count</dt><dd>%lld</dd><dt>Volume (GB)</dt><dd>%lld</dd>",
                  (long long)json_integer_value(json_object_get(v, "InstanceCount")),
                  (long long)json_integer_value(json_object_get(v, "VolumeSizeInGB")));
    ty_buf_printf(b, "<dt>Max runtime</dt><dd>");
    job_dur(b, (double)json_integer_value(json_object_get(json_object_get(job, "StoppingCondition"),
                                                          "MaxRuntimeInSeconds")));
}

/* Closes the resources list; the model and output artifacts, as download links. */
static void job_artifacts(struct ty_buf *b, json_t *job, const char *name)
{
    const char *k;

    ty_buf_puts(b, "</dd></dl>\n<h2>Artifacts</h2>\n<ul>");
    k = job_s(json_object_get(job, "ModelArtifacts"), "S3ModelArtifacts");
    if (*k) {
        ty_buf_puts(b, "<li>Model: ");
        job_dl(b, k, k, 0, NULL);
        ty_buf_puts(b, "</li>");
    }
    k = job_s(json_object_get(job, "OutputDataConfig"), "S3OutputPath");
    if (*k) {
        char out[2048];
        snprintf(out, sizeof(out), "%s%s%s/output/output.tar.gz", k,
                 k[strlen(k) - 1] == '/' ? "" : "/", name);
        ty_buf_puts(b, "<li>Output data: ");
        job_dl(b, out, out, 0, NULL);
        ty_buf_puts(b, "</li>");
    }
    ty_buf_puts(b, "</ul>\n");
}

/* "Runs on": the executor that ran the job, from the document's private _executor (the agent
   writes it once the job is placed; DescribeTrainingJob, which the caller was allowed, does not
   show it): a Slurm job with its id, partition and nodes, or an agent's container engine. */
static void job_where(const struct console_ctx *c, struct ty_buf *b, const char *name)
{
    struct ty_err err;
    json_t *doc = store_job_get(c->s, name, &err), *e = json_object_get(doc, "_executor");
    char line[600];

    if (json_is_object(e) && strcmp(job_s(e, "kind"), "slurm") == 0) {
        snprintf(line, sizeof(line), "Slurm job %lld, partition %s%s%s (agent %s)",
                 (long long)json_integer_value(json_object_get(e, "slurm_job")),
                 job_s(e, "partition"), *job_s(e, "nodes") ? ", nodes " : "", job_s(e, "nodes"),
                 job_s(e, "agent"));
        job_row(b, "Runs on", line);
    } else if (json_is_object(e)) {
        snprintf(line, sizeof(line), "the container engine of agent %s", job_s(e, "agent"));
        job_row(b, "Runs on", line);
    }
    json_decref(doc);
}

static void job_page(const struct console_ctx *c, const char *base, const char *name,
                     const struct console_banner *bn, struct http_response *resp)
{
    struct ty_buf b;
    struct ty_err err;
    json_t *in = json_pack("{s:s}", "TrainingJobName", name), *job = NULL;
    char back[200], title[120];
    const char *st;
    double created, end;

    ty_err_clear(&err);
    snprintf(back, sizeof(back), "%s%s", base, name);
    snprintf(title, sizeof(title), "Training job %s", name);
    console_html_start(&b, title, c->sess);
    console_pages_banner(&b, bn);
    ty_buf_printf(&b, "<p><a href=\"%s\">All training jobs</a></p>\n",
                  strcmp(base, "/console/jobs/") == 0 ? "/console/jobs" : "/console/profiler");
    if (console_call(c, "sagemaker", "DescribeTrainingJob", in, &job, &err) != 0) {
        console_html_error(&b, &err, NULL);
        goto send;
    }
    st = job_s(job, "TrainingJobStatus");
    ty_buf_printf(&b, "<div class=\"jobhead\" id=\"job\" data-job=\"%s\" data-status=\"%s\">", name,
                  st);
    ty_buf_printf(&b, "<span class=\"status big s-%s\" id=\"job-status\">%s</span> ", st, st);
    ty_buf_puts(&b, "<span class=\"secondary\">");
    ty_buf_put_html(&b, job_s(job, "SecondaryStatus"));
    ty_buf_puts(&b, "</span>");
    if (strcmp(st, "InProgress") == 0)
        console_html_button(&b, c->sess, "sagemaker", "StopTrainingJob", back, "Stop",
                            "Stop this training job? It will end as Stopped.", "danger",
                            "TrainingJobName", name, NULL);
    ty_buf_puts(&b, "</div>\n");
    if (*job_s(job, "FailureReason")) {
        ty_buf_puts(&b, "<div class=\"alert error\" role=\"alert\"><strong>Failure reason"
                        "</strong>: ");
        ty_buf_put_html(&b, job_s(job, "FailureReason"));
        ty_buf_puts(&b, "</div>\n");
    }
    created = json_number_value(json_object_get(job, "CreationTime"));
    end = json_is_number(json_object_get(job, "TrainingEndTime"))
              ? json_number_value(json_object_get(job, "TrainingEndTime"))
              : (double)time(NULL);
    ty_buf_puts(&b, "<dl class=\"facts\">");
    job_row(&b, "ARN", job_s(job, "TrainingJobArn"));
    ty_buf_puts(&b, "<dt>Created</dt><dd>");
    console_html_time(&b, json_object_get(job, "CreationTime"));
    ty_buf_puts(&b, "</dd><dt>Ended</dt><dd>");
    console_html_time(&b, json_object_get(job, "TrainingEndTime"));
    ty_buf_puts(&b, "</dd><dt>Duration</dt><dd>");
    job_dur(&b, created > 0 ? end - created : -1);
    ty_buf_puts(&b, "</dd>");
    job_row(&b, "Role", job_s(job, "RoleArn"));
    job_row(&b, "Image", job_s(json_object_get(job, "AlgorithmSpecification"), "TrainingImage"));
    job_where(c, &b, name);
    ty_buf_puts(&b, "</dl>\n");

    job_timeline(&b, job, st);

    job_metrics(&b, job, back);

    /* the log tail */
    ty_buf_puts(&b, "<h2 id=\"h-logs\">Log</h2>\n<pre id=\"log\" class=\"log\" tabindex=\"0\" "
                    "aria-labelledby=\"h-logs\" aria-live=\"polite\" data-feed=\"");
    ty_buf_put_html(&b, back);
    ty_buf_printf(&b, "/logs.json\" data-running=\"%d\"></pre>\n",
                  strcmp(st, "InProgress") == 0 || strcmp(st, "Stopping") == 0);

    job_config(&b, job);
    job_artifacts(&b, job, name);
    {
        char *pp = console_job_profiler_prefix(job);
        if (pp) {
            /* live system metrics (console_sysmon.h), drawn and refreshed by console.js */
            ty_buf_puts(&b, "<section aria-labelledby=\"h-sys\"><h2 id=\"h-sys\">System metrics"
                            "</h2>\n<p class=\"hint\">CPU, memory, GPU and network of the first "
                            "host, from the profiler's system metrics (refreshed while the job "
                            "runs).</p>\n<div id=\"sysmon\" class=\"charts\" data-feed=\"");
            ty_buf_put_html(&b, back);
            ty_buf_printf(&b,
                          "/system.json\" data-running=\"%d\" data-uplot=\"%d\"></div>"
                          "</section>\n",
                          strcmp(st, "InProgress") == 0 || strcmp(st, "Stopping") == 0,
                          console_assets_have_uplot());
        }
        free(pp);
    }
    job_profiler(c, &b, job);
send:
    json_decref(in);
    json_decref(job);
    console_html_send(c->req, resp, 200, &b);
}

/* GET <page>/logs.json[?nextToken=...]: the job's first log stream, as GetLogEvents. */
static void job_logs_page(const struct console_ctx *c, const char *name, const char *query,
                          struct http_response *resp)
{
    struct ty_err err;
    char prefix[80], token[1024];
    json_t *in, *out = NULL, *ev = NULL, *body;
    const char *stream;

    ty_err_clear(&err);
    snprintf(prefix, sizeof(prefix), "%s/", name);
    in = json_pack("{s:s,s:s}", "logGroupName", JOB_LOG_GROUP, "logStreamNamePrefix", prefix);
    if (console_call(c, "logs", "DescribeLogStreams", in, &out, &err) != 0)
        goto fail;
    stream = json_string_value(
        json_object_get(json_array_get(json_object_get(out, "logStreams"), 0), "logStreamName"));
    json_decref(in);
    if (!stream) {
        json_decref(out);
        body = json_pack("{s:[],s:n}", "events", "nextForwardToken");
        goto send;
    }
    in = json_pack("{s:s,s:s,s:b,s:i}", "logGroupName", JOB_LOG_GROUP, "logStreamName", stream,
                   "startFromHead", 1, "limit", 10000);
    if (console_query_param(query, "nextToken", token, sizeof(token)) == 0)
        json_object_set_new(in, "nextToken", json_string(token));
    json_decref(out);
    out = NULL;
    if (console_call(c, "logs", "GetLogEvents", in, &ev, &err) != 0)
        goto fail;
    body = json_pack("{s:O,s:O}", "events", json_object_get(ev, "events"), "nextForwardToken",
                     json_object_get(ev, "nextForwardToken"));
    json_decref(ev);
    json_decref(in);
    goto send;
fail:
    json_decref(in);
    json_decref(out);
    body = json_pack("{s:s,s:s}", "__type", ty_err_aws_name(err.code), "message", err.msg);
    resp->status = ty_err_http_status(err.code);
    goto out;
send:
    resp->status = 200;
out:
    resp->content_type = "application/json";
    resp->body = json_dumps(body, JSON_COMPACT);
    resp->len = resp->body ? strlen(resp->body) : 0;
    json_decref(body);
    console_html_headers(c->req, resp);
}

void console_job_serve(const struct console_ctx *c, const char *base, const char *name,
                       const char *sub, const char *query, const struct console_banner *bn,
                       struct http_response *resp)
{
    if (strcmp(sub, "logs.json") == 0)
        job_logs_page(c, name, query, resp);
    else if (strcmp(sub, "system.json") == 0)
        console_sysmon_feed(c, name, resp);
    else
        job_page(c, base, name, bn, resp);
}

/* 1 when uri is one of the console's links of job (console_job_studio_uri_ok). */
static int job_links(json_t *job, const char *name, const char *uri)
{
    const char *k = job_s(json_object_get(job, "ModelArtifacts"), "S3ModelArtifacts");
    char *prefix;
    char want[2200];
    int ok = 0;

    if (*k && strcmp(k, uri) == 0)
        return 1;
    k = job_s(json_object_get(job, "OutputDataConfig"), "S3OutputPath");
    if (*k) {
        snprintf(want, sizeof(want), "%s%s%s/output/output.tar.gz", k,
                 k[strlen(k) - 1] == '/' ? "" : "/", name);
        if (strcmp(want, uri) == 0)
            return 1;
    }
    if (!(prefix = console_job_profiler_prefix(job)))
        return 0;
    snprintf(want, sizeof(want),
             "%s/rule-output/ProfilerReport/profiler-output/profiler-report.html", prefix);
    ok = strcmp(want, uri) == 0;
    snprintf(want, sizeof(want), "%s/profiler-output/", prefix);
    if (!ok && strncmp(uri, want, strlen(want)) == 0 && uri[strlen(want)] &&
        !strstr(uri + strlen(want), "/../") && !strstr(uri + strlen(want), "//"))
        ok = 1;
    free(prefix);
    return ok;
}

int console_job_studio_uri_ok(const struct console_ctx *c, const char *uri)
{
    const char *profile = json_string_value(json_object_get(c->sess->doc, "UserProfileArn"));
    const char *key, *p;
    char bucket[64], seg[64];
    int tried = 0;

    if (!profile || job_s3(uri, bucket, sizeof(bucket), &key) != 0)
        return 0;
    for (p = key; *p && tried < 32; tried++) {
        const char *end = strchr(p, '/');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int ok = n > 0 && n < sizeof(seg);
        for (size_t i = 0; ok && i < n; i++)
            ok = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
                 (p[i] >= '0' && p[i] <= '9') || p[i] == '-';
        if (ok) {
            struct ty_err err;
            json_t *job;
            const char *arn;
            memcpy(seg, p, n);
            seg[n] = '\0';
            ty_err_clear(&err);
            job = store_job_get(c->s, seg, &err);
            arn = json_string_value(json_object_get(job, "TrainingJobArn"));
            ok = job && arn && attrib_owns(c->s, arn, profile) && job_links(job, seg, uri);
            json_decref(job);
            if (ok)
                return 1;
        }
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

/*
 * Whether the object at uri, whose ETag is etag, is job <query's job>'s profiler dashboard as
 * the agent wrote it: the job's own dashboard URI, and the ETag the agent recorded after its
 * upload (_profiler_report_etag). Only then do its scripts run in the console's sandbox: the
 * folder is the job creator's to write, and a page of hers at the console's address could draw
 * a sign-in form or navigate the admin away. Anything else downloads. 1 or 0.
 */
static int console_job_dashboard_ok(const struct console_ctx *c, const char *query, const char *uri,
                                    const char *etag)
{
    char name[64], want[2300];
    struct ty_err err;
    json_t *job;
    char *prefix;
    int ok = 0;

    if (console_query_param(query, "job", name, sizeof(name)) != 0 || !*name)
        return 0;
    ty_err_clear(&err);
    if (!(job = store_job_get(c->s, name, &err)))
        return 0;
    if ((prefix = console_job_profiler_prefix(job)) != NULL) {
        snprintf(want, sizeof(want),
                 "%s/rule-output/ProfilerReport/profiler-output/profiler-report.html", prefix);
        ok = strcmp(want, uri) == 0 && etag && *etag &&
             strcmp(job_s(job, "_profiler_report_etag"), etag) == 0;
        free(prefix);
    }
    json_decref(job);
    return ok;
}

void console_job_download(const struct console_ctx *c, const char *query,
                          struct http_response *resp)
{
    char uri[2100], bucket[64], arn[2200], view[4], disp[300];
    const char *key, *base;
    struct objstore *os = NULL;
    struct objstore_meta meta;
    struct ty_err err;
    int fd, html;

    ty_err_clear(&err);
    memset(&meta, 0, sizeof(meta));
    if (console_query_param(query, "uri", uri, sizeof(uri)) != 0 ||
        job_s3(uri, bucket, sizeof(bucket), &key) != 0 || !*key) {
        console_html_message(c->req, resp, 400, "Bad request", "uri must be s3://bucket/key.",
                             c->sess);
        return;
    }
    snprintf(arn, sizeof(arn), "arn:aws:s3:::%s/%s", bucket, key);
    if (authz_check(c->s, c->sess->principal, "s3:GetObject", arn, NULL, 0, &err) != 0) {
        struct ty_buf b;
        console_html_start(&b, "Access denied", c->sess);
        console_html_error(&b, &err, "AccessDenied");
        console_html_send(c->req, resp, 403, &b);
        return;
    }
    os = objstore_open(c->rc->s3_dir ? c->rc->s3_dir : "", c->s, &err);
    if (os && c->rc->s3_remote)
        objstore_use_remote(os, c->rc->s3_remote, &err);
    fd = os ? objstore_open_read(os, bucket, key, &meta, &err) : -1;
    objstore_close(os);
    if (fd < 0) {
        objstore_meta_cleanup(&meta);
        console_html_message(c->req, resp, 404, "Not found",
                             "The object does not exist (yet), or cannot be read.", c->sess);
        return;
    }
    base = strrchr(key, '/') ? strrchr(key, '/') + 1 : key;
    html = strlen(base) > 5 && strcmp(base + strlen(base) - 5, ".html") == 0;
    console_query_param(query, "view", view, sizeof(view));
    html = html && strcmp(view, "1") == 0 && console_job_dashboard_ok(c, query, uri, meta.etag);
    resp->status = 200;
    resp->has_file = 1;
    resp->file_fd = fd;
    resp->file_off = 0;
    resp->file_len = meta.size;
    objstore_meta_cleanup(&meta);
    http_response_header(resp, "Cache-Control", "no-store");
    http_response_header(resp, "X-Content-Type-Options", "nosniff");
    http_response_header(resp, "x-amzn-RequestId", c->req->request_id);
    if (html) {
        /* the report's own scripts run, in a sandbox: an opaque origin without the console's
           cookies, and it loads nothing from the network */
        resp->content_type = "text/html; charset=utf-8";
        http_response_header(resp, "Content-Security-Policy",
                             "sandbox allow-scripts; default-src 'none'; script-src "
                             "'unsafe-inline'; style-src 'unsafe-inline'; img-src data:");
        return;
    }
    resp->content_type = "application/octet-stream";
    {
        char fname[201];
        size_t k;
        for (k = 0; base[k] && k + 1 < sizeof(fname); k++)
            fname[k] = (base[k] == '"' || base[k] == '\\' || (unsigned char)base[k] < 0x20)
                           ? '_'
                           : base[k];
        fname[k] = '\0';
        snprintf(disp, sizeof(disp), "attachment; filename=\"%s\"", fname);
    }
    http_response_header(resp, "Content-Disposition", disp);
    http_response_header(resp, "Content-Security-Policy", "default-src 'none'; sandbox");
}
