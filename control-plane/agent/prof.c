/*
 * prof.c - profilerconfig.json for typrof and the in-process profiler rules (prof.h).
 */
#define _GNU_SOURCE /* mkdtemp, O_NOFOLLOW */
#include "prof.h"

#include "confine.h"
#include "rules.h"
#include "stage.h"
#include "ty_log.h"

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

/* Evaluates one configuration c on m (NULL: no profiler data). OUT: status (static), details. */
static void prof_rule_one(int root, const json_t *c, const struct typrof_metrics *m,
                          const char **status, char *details, size_t n)
{
    const char *name = json_string_value(json_object_get(c, "RuleConfigurationName"));
    const json_t *rp = json_object_get(c, "RuleParameters");
    const char *rule = json_string_value(json_object_get(rp, "rule_to_invoke"));
    char *params[32];
    size_t np = 0;
    struct typrof_rule_result res;
    const char *key;
    json_t *v, *out;
    char path[PATH_MAX];

    *status = "Error";
    if (!prof_name_ok(name)) {
        snprintf(details, n, "RuleConfigurationName is not a valid name");
        return;
    }
    if (!rule || !rule[0]) {
        snprintf(details, n, "RuleParameters.rule_to_invoke is missing");
        return;
    }
    if (!m) {
        snprintf(details, n, "no profiler data in %s", PROF_LOCAL_PATH);
        return;
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
    if (typrof__rule_eval(rule, m, (const char *const *)params, np, &res) != 0) {
        snprintf(details, n, "unknown rule '%s'", rule);
    } else {
        *status = res.status == TYPROF_ISSUES      ? "IssuesFound"
                  : res.status == TYPROF_NO_ISSUES ? "NoIssuesFound"
                                                   : "Error";
        snprintf(details, n, "%s", res.detail);
        out =
            json_pack("{s:s, s:s, s:s, s:I, s:f, s:s}", "RuleConfigurationName", name, "Rule", rule,
                      "RuleEvaluationStatus", *status, "Datapoints", (json_int_t)res.datapoints,
                      "Value", isfinite(res.value) ? res.value : 0.0, "StatusDetails", res.detail);
        snprintf(path, sizeof(path), "output/profiler/rule-output/%s", name);
        if (!out || root < 0 ||
            prof_dump_at(root, path, "result.json", out, 0777, JSON_SORT_KEYS | JSON_INDENT(2)))
            ty_log(TY_LOG_WARN, "agent.profiler.rule_output_failed", "rule=%s path='%s'", name,
                   path);
        json_decref(out);
    }
    for (size_t i = 0; i < np; i++)
        free(params[i]);
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

/* Copies the profiler's metrics files (system/incremental/<hour>/<file>, summary/<file>) from
   <root>/output/profiler into the folder fd dst, at most PROF_COPY_MAX bytes in all, never
   following a symlink: the loader (rules.h) reads plain paths. */
static void prof_copy_metrics(int root, int dst)
{
    static const char *const parts[] = {"system/incremental", "summary"};
    struct prof_copy pc = {dst, PROF_COPY_MAX, NULL};

    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        char rel[64];
        int top;
        snprintf(rel, sizeof(rel), "output/profiler/%s", parts[i]);
        if ((top = confine_opendir(root, rel, 0)) < 0)
            continue;
        pc.base = parts[i];
        confine_walk(top, prof_copy_cb, &pc);
        close(top);
    }
}

json_t *prof_rules_eval(const char *host_dir, const json_t *rules, double now)
{
    struct typrof_metrics m;
    char scratch[PATH_MAX], parent[PATH_MAX];
    const char *leaf;
    json_t *out, *c;
    int loaded = 0, root, dst = -1;
    size_t i;

    if (!json_is_array(rules) || json_array_size(rules) == 0)
        return NULL;
    /* the job's profiler output is copied, confined, into a folder of the agent beside
       host_dir (outside the container's view) and read there */
    root = confine_openroot(host_dir);
    scratch[0] = '\0';
    if (root >= 0 && confine_split(host_dir, parent, sizeof(parent), &leaf) == 0 &&
        snprintf(scratch, sizeof(scratch), "%s/.prof-XXXXXX", parent[0] ? parent : "/") <
            (int)sizeof(scratch) &&
        mkdtemp(scratch) && (dst = confine_openroot(scratch)) >= 0) {
        prof_copy_metrics(root, dst);
        loaded = typrof__metrics_load(scratch, &m) == 0;
    }
    out = json_array();
    json_array_foreach((json_t *)rules, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "RuleConfigurationName"));
        const char *status;
        char details[512];
        prof_rule_one(root, c, loaded ? &m : NULL, &status, details, sizeof(details));
        ty_log(TY_LOG_INFO, "agent.profiler.rule", "rule=%s status=%s details='%s'",
               name ? name : "", status, details);
        json_array_append_new(out, prof_status(name, status, details, now));
    }
    if (loaded)
        typrof__metrics_cleanup(&m);
    if (dst >= 0) {
        close(dst);
        stage_remove(scratch);
    }
    if (root >= 0)
        close(root);
    return out;
}
