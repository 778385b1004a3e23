/*
 * prof.c - profilerconfig.json for typrof, the in-process profiler rules and the per-job
 * dashboard (prof.h). The profiler is used only through its public typrof_report.h; the job's
 * output is always read from a confined private copy, never in place.
 */
#define _GNU_SOURCE /* mkdtemp, O_NOFOLLOW */
#include "prof.h"

#include "confine.h"
#include "stage.h"
#include "ty_log.h"
#include "typrof_report.h"

#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROF_DEFAULT_INTERVAL_MS 500
#define PROF_COPY_MAX            (512ull << 20) /* bytes of profiler output read for rules */
#define PROF_TRACE_MAX           (64ull << 20)  /* bytes of trace files read for the dashboard */

int prof_enabled(const json_t *pc)
{
    return json_is_object(pc) && !json_is_true(json_object_get(pc, "DisableProfiler"));
}

static long prof_interval(const json_t *pc)
{
    const json_t *v = json_object_get(pc, "ProfilingIntervalInMilliseconds");

    if (json_is_integer(v) && json_integer_value(v) > 0)
        return (long)json_integer_value(v);
    if (json_is_real(v) && json_real_value(v) >= 1)
        return (long)json_real_value(v);
    return PROF_DEFAULT_INTERVAL_MS;
}

/* New: the profilerconfig.json document of pc. */
static json_t *prof_config_doc(const json_t *pc)
{
    const json_t *pp = json_object_get(pc, "ProfilingParameters");
    json_t *params = json_is_object(pp) ? json_deep_copy(pp) : json_object();

    if (!params)
        return NULL;
    json_object_set_new(params, "LocalPath", json_string(PROF_LOCAL_PATH));
    return json_pack("{s:I, s:o, s:b}", "ProfilingIntervalInMilliseconds",
                     (json_int_t)prof_interval(pc), "ProfilingParameters", params,
                     "DisableProfiler", !prof_enabled(pc));
}

int prof_config_changed(const json_t *a, const json_t *b)
{
    json_t *da = prof_config_doc(a), *db = prof_config_doc(b);
    int changed = !da || !db || !json_equal(da, db);

    json_decref(da);
    json_decref(db);
    return changed;
}

/* Writes doc as the file rel below root (confine.h: never through a symlink; an existing entry
   of that name replaced), through a temp file renamed into place. 0 or -1. */
static int prof_dump_at(int root, const char *dir_rel, const char *file, json_t *doc,
                        unsigned dir_mode, size_t flags)
{
    char tmp[300];
    int dfd, fd, rc = -1;

    if ((dfd = confine_opendir(root, dir_rel, dir_mode)) < 0)
        return -1;
    snprintf(tmp, sizeof(tmp), ".%s.tmp", file);
    fd = confine_create(dfd, tmp, 0644, 0);
    if (fd >= 0) {
        if (json_dumpfd(doc, fd, flags) == 0 && close(fd) == 0 &&
            renameat(dfd, tmp, dfd, file) == 0)
            rc = 0;
        else
            unlinkat(dfd, tmp, 0);
    }
    close(dfd);
    return rc;
}

int prof_write_config(const char *host_dir, const json_t *pc)
{
    json_t *doc = prof_config_doc(pc);
    int root, dfd, rc = -1;

    if (!doc)
        return -1;
    /* the container may have replaced any folder below host_dir by a symlink by now */
    if ((root = confine_openroot(host_dir)) < 0)
        goto out;
    if ((dfd = confine_opendir(root, "output/profiler", 0777)) >= 0) {
        rc = fchmod(dfd, 0777);
        close(dfd);
    }
    if (rc == 0)
        rc = prof_dump_at(root, "input/config", "profilerconfig.json", doc, 0, JSON_SORT_KEYS);
    close(root);
out:
    json_decref(doc);
    return rc;
}

/* 1 when name can be a directory name of rule-output/. */
static int prof_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n == 0 || n > 256 || name[0] == '.')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (name[i] == '/' || name[i] == '\\' || (unsigned char)name[i] < 0x20)
            return 0;
    return 1;
}

static json_t *prof_status(const char *name, const char *status, const char *details, double now)
{
    json_t *e = json_pack("{s:s, s:s, s:f}", "RuleConfigurationName", name ? name : "",
                          "RuleEvaluationStatus", status, "LastModifiedTime", now);

    if (e && details && details[0])
        json_object_set_new(e, "StatusDetails", json_string(details));
    return e;
}

json_t *prof_rules_in_progress(const json_t *rules, double now)
{
    json_t *out, *c;
    size_t i;

    if (!json_is_array(rules) || json_array_size(rules) == 0)
        return NULL;
    out = json_array();
    json_array_foreach((json_t *)rules, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "RuleConfigurationName"));
        json_array_append_new(out, prof_status(name, "InProgress", NULL, now));
    }
    return out;
}

/* The status SageMaker's API can carry for a typrof status: NoData ("not evaluated") is not in
   RuleEvaluationStatus's enum, so the wire says NoIssuesFound and StatusDetails says why. */
static const char *prof_wire_status(const char *st)
{
    return strcmp(st, "NoData") == 0 ? "NoIssuesFound" : st;
}

/* Evaluates one configuration c on d (NULL: no profiler data). OUT: res (status "Error" with
   the reason when the configuration is bad). Returns the rule's name (borrowed from c) or "". */
static const char *prof_rule_run(const json_t *c, const struct typrof_data *d,
                                 struct typrof_rule_outcome *res)
{
    const char *name = json_string_value(json_object_get(c, "RuleConfigurationName"));
    const json_t *rp = json_object_get(c, "RuleParameters");
    const char *rule = json_string_value(json_object_get(rp, "rule_to_invoke"));
    char *params[32];
    size_t np = 0;
    const char *key;
    json_t *v;

    memset(res, 0, sizeof(*res));
    res->status = "Error";
    if (!prof_name_ok(name)) {
        snprintf(res->detail, sizeof(res->detail), "RuleConfigurationName is not a valid name");
        return "";
    }
    if (!rule || !rule[0]) {
        snprintf(res->detail, sizeof(res->detail), "RuleParameters.rule_to_invoke is missing");
        return "";
    }
    if (!d) {
        snprintf(res->detail, sizeof(res->detail), "no profiler data in %s", PROF_LOCAL_PATH);
        return rule;
    }
    json_object_foreach((json_t *)rp, key, v)
    {
        char buf[512];
        if (strcmp(key, "rule_to_invoke") == 0 || !json_is_string(v) || np >= 32)
            continue;
        snprintf(buf, sizeof(buf), "%s=%s", key, json_string_value(v));
        if (!(params[np] = strdup(buf)))
            break;
        np++;
    }
    if (typrof_rule_run(d, rule, (const char *const *)params, np, res) != 0) {
        res->status = "Error";
        snprintf(res->detail, sizeof(res->detail), "unknown rule '%s'", rule);
    }
    for (size_t i = 0; i < np; i++)
        free(params[i]);
    return rule;
}

/* New: the result document of one rule ({"RuleConfigurationName","Rule",
   "RuleEvaluationStatus" as typrof says it, "Datapoints","Value","StatusDetails"}). */
static json_t *prof_result_doc(const char *name, const char *rule,
                               const struct typrof_rule_outcome *res)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:f, s:s}", "RuleConfigurationName", name ? name : "",
                     "Rule", rule, "RuleEvaluationStatus", res->status, "Datapoints",
                     (json_int_t)res->datapoints, "Value", isfinite(res->value) ? res->value : 0.0,
                     "StatusDetails", res->detail);
}

/* Evaluates one configuration c on d (NULL: no profiler data) and writes its result.json
   under root. OUT: status (static, the API's enum), details. */
static void prof_rule_one(int root, const json_t *c, const struct typrof_data *d,
                          const char **status, char *details, size_t n)
{
    const char *name = json_string_value(json_object_get(c, "RuleConfigurationName"));
    struct typrof_rule_outcome res;
    const char *rule = prof_rule_run(c, d, &res);
    char path[PATH_MAX];
    json_t *out;

    *status = prof_wire_status(res.status);
    if (strcmp(res.status, "NoData") == 0)
        snprintf(details, n, "NoData: %s", res.detail);
    else
        snprintf(details, n, "%s", res.detail);
    if (!rule[0] || !d)
        return;
    out = prof_result_doc(name, rule, &res);
    snprintf(path, sizeof(path), "output/profiler/rule-output/%s", name);
    if (!out || root < 0 ||
        prof_dump_at(root, path, "result.json", out, 0777, JSON_SORT_KEYS | JSON_INDENT(2)))
        ty_log(TY_LOG_WARN, "agent.profiler.rule_output_failed", "rule=%s path='%s'", name, path);
    json_decref(out);
}

struct prof_copy {
    int dst;          /* folder fd of the private copy */
    uint64_t left;    /* bytes still allowed */
    const char *base; /* "system/incremental" or "summary" */
};

/* confine_walk callback: copies one regular file (its folders made in the copy). */
static int prof_copy_cb(void *ud, const struct confine_entry *e)
{
    struct prof_copy *pc = ud;
    char rel[PATH_MAX], buf[65536];
    struct stat st;
    ssize_t r;
    int in, out;

    if (S_ISDIR(e->st.st_mode))
        return e->depth < 1 ? 0 : 1; /* <hour>/ folders only */
    if (!S_ISREG(e->st.st_mode) || (uint64_t)e->st.st_size > pc->left)
        return 0;
    if ((in = confine_open_read(e->dirfd, e->name, &st)) < 0)
        return 0;
    snprintf(rel, sizeof(rel), "%s/%s", pc->base, e->rel);
    out = confine_create(pc->dst, rel, 0600, 0700);
    while (out >= 0 && pc->left > 0 &&
           (r = read(in, buf, sizeof(buf) < pc->left ? sizeof(buf) : (size_t)pc->left)) > 0) {
        if (write(out, buf, (size_t)r) != r)
            break;
        pc->left -= (uint64_t)r;
    }
    if (out >= 0)
        close(out);
    close(in);
    return 0;
}

/* Copies the profiler's files (system/incremental/<hour>/<file>, summary/<file>, with traces
   also trace/<file> and run.json) from <root>/output/profiler into the folder fd dst, at most
   PROF_COPY_MAX bytes of metrics and PROF_TRACE_MAX of traces, never following a symlink: the
   loader (typrof_report.h) reads plain paths. */
static void prof_copy_metrics(int root, int dst, int traces)
{
    static const char *const parts[] = {"system/incremental", "summary", "trace"};
    struct prof_copy pc = {dst, PROF_COPY_MAX, NULL};
    size_t nparts = traces ? 3 : 2;

    for (size_t i = 0; i < nparts; i++) {
        char rel[64];
        int top;
        snprintf(rel, sizeof(rel), "output/profiler/%s", parts[i]);
        if ((top = confine_opendir(root, rel, 0)) < 0)
            continue;
        pc.base = parts[i];
        if (i == 2)
            pc.left = PROF_TRACE_MAX;
        confine_walk(top, prof_copy_cb, &pc);
        close(top);
    }
    if (traces) {
        struct stat st;
        char buf[65536];
        ssize_t r;
        int in = confine_open_read(root, "output/profiler/run.json", &st), out = -1;
        if (in >= 0 && st.st_size < (off_t)sizeof(buf) && (r = read(in, buf, sizeof(buf))) > 0 &&
            (out = confine_create(dst, "run.json", 0600, 0700)) >= 0 &&
            write(out, buf, (size_t)r) != r)
            ty_log(TY_LOG_WARN, "agent.profiler.copy_failed", "file=run.json");
        if (out >= 0)
            close(out);
        if (in >= 0)
            close(in);
    }
}

/* Makes a private folder beside host_dir (outside the container's view) and copies the job's
   profiler output there. OUT: scratch (size n). Returns the folder's fd, or -1 (nothing left). */
static int prof_scratch(const char *host_dir, int root, int traces, char *scratch, size_t n)
{
    char parent[PATH_MAX];
    const char *leaf;
    int dst;

    scratch[0] = '\0';
    if (root < 0 || confine_split(host_dir, parent, sizeof(parent), &leaf) != 0 ||
        snprintf(scratch, n, "%s/.prof-XXXXXX", parent[0] ? parent : "/") >= (int)n ||
        !mkdtemp(scratch)) {
        scratch[0] = '\0';
        return -1;
    }
    if ((dst = confine_openroot(scratch)) < 0) {
        stage_remove(scratch);
        scratch[0] = '\0';
        return -1;
    }
    prof_copy_metrics(root, dst, traces);
    return dst;
}

json_t *prof_rules_eval(const char *host_dir, const json_t *rules, double now)
{
    struct typrof_data *d = NULL;
    char scratch[PATH_MAX];
    json_t *out, *c;
    int root, dst;
    size_t i;

    if (!json_is_array(rules) || json_array_size(rules) == 0)
        return NULL;
    root = confine_openroot(host_dir);
    if ((dst = prof_scratch(host_dir, root, 0, scratch, sizeof(scratch))) >= 0 &&
        typrof_data_load(scratch, &d) != 0)
        d = NULL;
    out = json_array();
    json_array_foreach((json_t *)rules, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "RuleConfigurationName"));
        const char *status;
        char details[512];
        prof_rule_one(root, c, d, &status, details, sizeof(details));
        ty_log(TY_LOG_INFO, "agent.profiler.rule", "rule=%s status=%s details='%s'",
               name ? name : "", status, details);
        json_array_append_new(out, prof_status(name, status, details, now));
    }
    typrof_data_free(d);
    if (dst >= 0) {
        close(dst);
        stage_remove(scratch);
    }
    if (root >= 0)
        close(root);
    return out;
}

void prof_report_publish(const char *host_dir, const json_t *rules, const char *uri_base,
                         prof_put_fn put, void *ud)
{
    struct typrof_data *d = NULL;
    char scratch[PATH_MAX], html[PATH_MAX + 32], trace[PATH_MAX + 32], uri[2200];
    struct typrof_report_opts o;
    json_t *results = json_array(), *c;
    char *rules_txt = NULL;
    size_t i, ul = strlen(uri_base);
    int root = confine_openroot(host_dir), dst;

    while (ul > 0 && uri_base[ul - 1] == '/')
        ul--;
    if ((dst = prof_scratch(host_dir, root, 1, scratch, sizeof(scratch))) < 0) {
        ty_log(TY_LOG_WARN, "agent.profiler.report_failed", "dir='%s' reason='no scratch copy'",
               host_dir);
        goto out;
    }
    /* the job's configured rules, as typrof says them (NoData included), for the dashboard */
    if (json_is_array(rules) && json_array_size(rules) > 0 && typrof_data_load(scratch, &d) != 0)
        d = NULL;
    json_array_foreach((json_t *)rules, i, c)
    {
        struct typrof_rule_outcome res;
        const char *rule = prof_rule_run(c, d, &res);
        json_array_append_new(
            results, prof_result_doc(json_string_value(json_object_get(c, "RuleConfigurationName")),
                                     rule, &res));
    }
    typrof_data_free(d);
    rules_txt = json_dumps(results, JSON_COMPACT);
    snprintf(html, sizeof(html), "%s/%s", scratch, PROF_REPORT_FILE);
    snprintf(trace, sizeof(trace), "%s/%s", scratch, PROF_TRACE_FILE);
    memset(&o, 0, sizeof(o));
    o.html_path = html;
    o.trace_path = trace;
    o.job_rules_json = rules_txt;
    o.max_trace_bytes = PROF_TRACE_MAX;
    if (typrof_report_write(scratch, &o) != 0) {
        ty_log(TY_LOG_WARN, "agent.profiler.report_failed", "dir='%s' reason='typrof report'",
               host_dir);
        goto out;
    }
    snprintf(uri, sizeof(uri), "%.*s/%s", (int)ul, uri_base, PROF_REPORT_KEY);
    if (put(ud, html, uri, "text/html") == 0)
        ty_log(TY_LOG_INFO, "agent.profiler.report_uploaded", "uri='%s'", uri);
    snprintf(uri, sizeof(uri), "%.*s/%s", (int)ul, uri_base, PROF_TRACE_KEY);
    if (put(ud, trace, uri, "application/json") == 0)
        ty_log(TY_LOG_INFO, "agent.profiler.trace_uploaded", "uri='%s'", uri);
out:
    free(rules_txt);
    json_decref(results);
    if (dst >= 0) {
        close(dst);
        stage_remove(scratch);
    }
    if (root >= 0)
        close(root);
}
