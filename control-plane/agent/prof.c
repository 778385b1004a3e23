/*
 * prof.c - profilerconfig.json for typrof and the in-process profiler rules (prof.h).
 */
#include "prof.h"

#include "artifacts.h"
#include "rules.h"
#include "ty_log.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROF_DEFAULT_INTERVAL_MS 500

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

int prof_write_config(const char *host_dir, const json_t *pc)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    json_t *doc = prof_config_doc(pc);
    int rc = -1;

    if (!doc)
        return -1;
    snprintf(path, sizeof(path), "%s/output/profiler", host_dir);
    if (artifacts_mkdirs(path, 0777) != 0 || chmod(path, 0777) != 0)
        goto out;
    snprintf(path, sizeof(path), "%s/input/config/profilerconfig.json", host_dir);
    snprintf(tmp, sizeof(tmp), "%s/input/config/.profilerconfig.json.tmp", host_dir);
    if (json_dump_file(doc, tmp, JSON_SORT_KEYS) != 0 || chmod(tmp, 0644) != 0 ||
        rename(tmp, path) != 0) {
        unlink(tmp);
        goto out;
    }
    rc = 0;
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
static void prof_rule_one(const char *host_dir, const json_t *c, const struct typrof_metrics *m,
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
        snprintf(path, sizeof(path), "%s/output/profiler/rule-output/%s", host_dir, name);
        if (out && artifacts_mkdirs(path, 0777) == 0)
            snprintf(path, sizeof(path), "%s/output/profiler/rule-output/%s/result.json", host_dir,
                     name);
        if (!out || json_dump_file(out, path, JSON_SORT_KEYS | JSON_INDENT(2)) != 0)
            ty_log(TY_LOG_WARN, "agent.profiler.rule_output_failed", "rule=%s path='%s'", name,
                   path);
        json_decref(out);
    }
    for (size_t i = 0; i < np; i++)
        free(params[i]);
}

json_t *prof_rules_eval(const char *host_dir, const json_t *rules, double now)
{
    struct typrof_metrics m;
    char dir[PATH_MAX];
    json_t *out, *c;
    int loaded;
    size_t i;

    if (!json_is_array(rules) || json_array_size(rules) == 0)
        return NULL;
    snprintf(dir, sizeof(dir), "%s/output/profiler", host_dir);
    loaded = typrof__metrics_load(dir, &m) == 0;
    out = json_array();
    json_array_foreach((json_t *)rules, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "RuleConfigurationName"));
        const char *status;
        char details[512];
        prof_rule_one(host_dir, c, loaded ? &m : NULL, &status, details, sizeof(details));
        ty_log(TY_LOG_INFO, "agent.profiler.rule", "rule=%s status=%s details='%s'",
               name ? name : "", status, details);
        json_array_append_new(out, prof_status(name, status, details, now));
    }
    if (loaded)
        typrof__metrics_cleanup(&m);
    return out;
}
