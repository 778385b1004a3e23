/*
 * tuning.c - the hyperparameter tuning job operations: CreateHyperParameterTuningJob,
 * DescribeHyperParameterTuningJob, ListHyperParameterTuningJobs, StopHyperParameterTuningJob and
 * ListTrainingJobsForHyperParameterTuningJob.
 *
 * Owns: the validation SageMaker does beyond the model (ranges, strategy rules, the objective
 * among the MetricDefinitions, warm-start parents, a sample training request validated as a
 * CreateTrainingJob), the tuning job document at creation, and the answers of these operations.
 * Does not own: advancing tuning jobs (tuning.c, the driver), the strategies
 * (tuning_strategy.c). The document lives in store_res (kind "tuning-job"); members starting with
 * '_' are bookkeeping and never returned.
 */
#include "ops.h"

#include "authz.h"
#include "store_res.h"
#include "tuning.h"
#include "tuning_strategy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP_TUNING_TERMINAL "Completed,Failed,Stopped"

static const struct store_res_timing op_tuning_timing = {0, 0};

static json_t *op_tuning_config(json_t *in)
{
    return json_object_get(in, "HyperParameterTuningJobConfig");
}

/* The one training job definition (TrainingJobDefinition, or a TrainingJobDefinitions of one). */
static json_t *op_tuning_definition(json_t *in, struct ty_err *err)
{
    json_t *d = json_object_get(in, "TrainingJobDefinition");
    json_t *ds = json_object_get(in, "TrainingJobDefinitions");
    if (d && ds) {
        ty_err_set(err, TY_EINVAL, "TrainingJobDefinitions",
                   "Specify either TrainingJobDefinition or TrainingJobDefinitions, not both.");
        return NULL;
    }
    if (!d && json_array_size(ds) == 1)
        d = json_array_get(ds, 0);
    else if (!d && ds)
        ty_err_set(err, TY_EINVAL, "TrainingJobDefinitions",
                   "Tuning jobs with more than one training job definition are not supported.");
    else if (!d)
        ty_err_set(err, TY_EINVAL, "TrainingJobDefinition",
                   "The TrainingJobDefinition is required.");
    return d;
}

static int op_tuning_objective(json_t *cfg, json_t *def, struct ty_err *err)
{
    json_t *obj = json_object_get(cfg, "HyperParameterTuningJobObjective"), *md;
    const char *metric = op_str(obj, "MetricName");
    size_t i;

    if (!obj || !metric)
        return ty_err_set(err, TY_EINVAL, "HyperParameterTuningJobObjective",
                          "The HyperParameterTuningJobObjective is required.");
    json_array_foreach(
        json_object_get(json_object_get(def, "AlgorithmSpecification"), "MetricDefinitions"), i, md)
    {
        if (op_str(md, "Name") && strcmp(op_str(md, "Name"), metric) == 0)
            return 0;
    }
    return ty_err_set(err, TY_EINVAL, "HyperParameterTuningJobObjective",
                      "The objective metric '%s' is not defined in the MetricDefinitions of the "
                      "training job definition.",
                      metric);
}

static int op_tuning_warm_start(struct op_ctx *ctx, json_t *in, struct ty_err *err)
{
    json_t *ws = json_object_get(in, "WarmStartConfig"), *p;
    size_t i;

    json_array_foreach(json_object_get(ws, "ParentHyperParameterTuningJobs"), i, p)
    {
        const char *pn = op_str(p, "HyperParameterTuningJobName");
        json_t *rec;
        const char *st;
        if (!pn)
            continue;
        rec = store_res_get(ctx->store, TUNING_KIND, pn, ctx->now, &op_tuning_timing, err);
        if (!rec) {
            if (err->code != TY_ENOTFOUND)
                return -err->code;
            return ty_err_set(err, TY_EINVAL, "WarmStartConfig",
                              "The parent tuning job '%s' does not exist.", pn);
        }
        st = op_str(rec, "Status");
        if (!st || !strstr(OP_TUNING_TERMINAL, st)) {
            int rc = ty_err_set(err, TY_EINVAL, "WarmStartConfig",
                                "The parent tuning job '%s' is in status %s; warm start needs "
                                "parents that have ended.",
                                pn, st ? st : "");
            json_decref(rec);
            return rc;
        }
        json_decref(rec);
    }
    return 0;
}

int op_tuning_create(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *name = op_str(in, "HyperParameterTuningJobName");
    json_t *cfg = op_tuning_config(in), *def, *limits, *doc = NULL, *rec, *v, *stat;
    struct tuning_space sp;
    struct store_res_new n;
    const char *strategy = op_str(cfg, "Strategy"), *es;
    char arn[512];
    int rc;

    memset(&sp, 0, sizeof(sp));
    if (!(def = op_tuning_definition(in, err)))
        return -err->code;
    rc = tuning_space_parse(json_object_get(cfg, "ParameterRanges")
                                ? json_object_get(cfg, "ParameterRanges")
                                : json_object_get(def, "HyperParameterRanges"),
                            &sp, err);
    if (rc)
        goto out;
    limits = json_object_get(cfg, "ResourceLimits");
    if (strategy && strcmp(strategy, "Grid") == 0) {
        if (tuning_grid_size(&sp) == 0) {
            rc = ty_err_set(err, TY_EINVAL, "ParameterRanges",
                            "Grid search supports only categorical and integer parameter "
                            "ranges.");
            goto out;
        }
    } else if (!json_object_get(limits, "MaxNumberOfTrainingJobs")) {
        rc = ty_err_set(err, TY_EINVAL, "ResourceLimits",
                        "ResourceLimits.MaxNumberOfTrainingJobs is required for the %s strategy.",
                        strategy ? strategy : "Bayesian");
        goto out;
    }
    es = op_str(cfg, "TrainingJobEarlyStoppingType");
    if (strategy && strcmp(strategy, "Hyperband") == 0 && es && strcmp(es, "Off") != 0) {
        rc = ty_err_set(err, TY_EINVAL, "TrainingJobEarlyStoppingType",
                        "The Hyperband strategy stops training jobs itself: "
                        "TrainingJobEarlyStoppingType must be Off.");
        goto out;
    }
    if ((rc = op_tuning_objective(cfg, def, err)))
        goto out;
    stat = json_object_get(def, "StaticHyperParameters");
    for (int i = 0; i < sp.n; i++)
        if (json_object_get(stat, sp.p[i].name)) {
            rc = ty_err_set(err, TY_EINVAL, "StaticHyperParameters",
                            "The hyperparameter '%s' is both static and tunable.", sp.p[i].name);
            goto out;
        }
    if ((rc = op_tuning_warm_start(ctx, in, err)))
        goto out;
    if ((rc = authz_pass_role(ctx->store, ctx->principal_arn, op_str(def, "RoleArn"),
                              ctx->account_id, err)) != 0)
        goto out;

    op_arn(ctx, "hyper-parameter-tuning-job", name, arn, sizeof(arn));
    doc = json_object();
    json_object_set_new(doc, "HyperParameterTuningJobName", json_string(name));
    json_object_set_new(doc, "HyperParameterTuningJobArn", json_string(arn));
    v = json_deep_copy(cfg);
    if (!json_object_get(v, "Strategy"))
        json_object_set_new(v, "Strategy", json_string("Bayesian"));
    if (!json_object_get(v, "TrainingJobEarlyStoppingType"))
        json_object_set_new(v, "TrainingJobEarlyStoppingType", json_string("Off"));
    if (strategy && strcmp(strategy, "Grid") == 0 &&
        !json_object_get(json_object_get(v, "ResourceLimits"), "MaxNumberOfTrainingJobs"))
        json_object_set_new(json_object_get(v, "ResourceLimits"), "MaxNumberOfTrainingJobs",
                            json_integer(tuning_grid_size(&sp)));
    json_object_set_new(doc, "HyperParameterTuningJobConfig", v);
    if (json_object_get(in, "TrainingJobDefinition"))
        op_copy(doc, in, "TrainingJobDefinition");
    else
        json_object_set(doc, "TrainingJobDefinitions",
                        json_object_get(in, "TrainingJobDefinitions"));
    op_copy(doc, in, "WarmStartConfig");
    op_copy(doc, in, "Autotune");
    json_object_set_new(doc, "HyperParameterTuningJobStatus", json_string("InProgress"));
    json_object_set_new(doc, "CreationTime", json_real(ctx->now));
    json_object_set_new(doc, "LastModifiedTime", json_real(ctx->now));
    json_object_set_new(doc, "TrainingJobStatusCounters",
                        json_pack("{s:i,s:i,s:i,s:i,s:i}", "Completed", 0, "InProgress", 0,
                                  "RetryableError", 0, "NonRetryableError", 0, "Stopped", 0));
    json_object_set_new(doc, "ObjectiveStatusCounters",
                        json_pack("{s:i,s:i,s:i}", "Succeeded", 0, "Pending", 0, "Failed", 0));
    json_object_set_new(doc, "_principal", json_string(ctx->principal_arn));
    json_object_set_new(doc, "_region", json_string(ctx->region));
    json_object_set_new(doc, "_account", json_string(ctx->account_id));
    json_object_set_new(doc, "_jobs", json_array());
    json_object_set_new(doc, "_stopped_early", json_array());

    /* CreateTrainingJob's own validation on the first training job it would start */
    if (tuning_model()) {
        json_t *hp = tuning_point_params(&sp, (double[TUNING_MAX_PARAMS]){0});
        char probe[64];
        json_t *req;
        snprintf(probe, sizeof(probe), "%s-001-00000000", name);
        req = tuning_training_request(doc, probe, hp);
        json_decref(hp);
        rc =
            req ? apimodel_validate(tuning_model(), "sagemaker", "CreateTrainingJob", req, err) : 0;
        json_decref(req);
        if (rc)
            goto out;
    }

    memset(&n, 0, sizeof(n));
    n.kind = TUNING_KIND;
    n.id = name;
    n.doc = doc;
    n.status = "InProgress";
    n.tags_arn = arn;
    rec = store_res_create(ctx->store, &n, ctx->now, &op_tuning_timing, err);
    if (!rec) {
        if (err->code == TY_EINUSE)
            ty_err_set(err, TY_EINUSE, "HyperParameterTuningJobName",
                       "Tuning job with name %s already exists.", name);
        rc = -err->code;
        goto out;
    }
    json_decref(rec);
    if (json_array_size(json_object_get(in, "Tags")) > 0 &&
        (rc = store_tags_add(ctx->store, arn, json_object_get(in, "Tags"), err)) != 0)
        goto out;
    *out = json_pack("{s:s}", "HyperParameterTuningJobArn", arn);
out:
    json_decref(doc);
    tuning_space_cleanup(&sp);
    return rc;
}

/* The record of the request's tuning job, or NULL with ResourceNotFound in AWS's words. */
static json_t *op_tuning_get(struct op_ctx *ctx, json_t *in, struct ty_err *err)
{
    const char *name = op_str(in, "HyperParameterTuningJobName");
    json_t *rec = store_res_get(ctx->store, TUNING_KIND, name, ctx->now, &op_tuning_timing, err);
    if (!rec && err->code == TY_ENOTFOUND)
        ty_err_set(err, TY_ENOTFOUND, "HyperParameterTuningJobName",
                   "Amazon SageMaker can't find a tuning job with name %s", name);
    return rec;
}

/* The record made public: the record's status as HyperParameterTuningJobStatus, no '_' members.
   Returns rec. */
static json_t *op_tuning_public(json_t *rec)
{
    json_t *st = json_object_get(rec, "Status");
    if (st)
        json_object_set(rec, "HyperParameterTuningJobStatus", st);
    json_object_del(rec, "Status");
    return op_public(rec);
}

int op_tuning_describe(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    json_t *rec = op_tuning_get(ctx, in, err);
    if (!rec)
        return -err->code;
    *out = op_tuning_public(rec);
    return 0;
}

/* ---- List ---- */

struct op_tuning__sort {
    const char *key;
    int numeric;
    int asc;
};
static __thread struct op_tuning__sort op_tuning_by;

static int op_tuning_cmp(const void *a, const void *b)
{
    json_t *x = json_object_get(*(json_t *const *)a, op_tuning_by.key);
    json_t *y = json_object_get(*(json_t *const *)b, op_tuning_by.key);
    int c;
    if (!x || !y)
        c = (x != NULL) - (y != NULL);
    else if (op_tuning_by.numeric)
        c = json_number_value(x) < json_number_value(y)   ? -1
            : json_number_value(x) > json_number_value(y) ? 1
                                                          : 0;
    else
        c = strcmp(json_string_value(x) ? json_string_value(x) : "",
                   json_string_value(y) ? json_string_value(y) : "");
    return op_tuning_by.asc ? c : -c;
}

/* Sorts, pages (NextToken = offset) and wraps items (stolen) under key. */
static int op_tuning_page(json_t *in, json_t *items, const char *sort_key, int numeric,
                          const char *key, int defmax, json_t **out, struct ty_err *err)
{
    size_t n = json_array_size(items), off = 0, max = (size_t)defmax;
    json_t **v = calloc(n ? n : 1, sizeof(*v)), *page;
    const char *order = op_str(in, "SortOrder"), *tok = op_str(in, "NextToken");

    if (!v) {
        json_decref(items);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    if (tok) {
        char *end;
        long o = strtol(tok, &end, 10);
        if (*end || o < 0) {
            free(v);
            json_decref(items);
            return ty_err_set(err, TY_EINVAL, "NextToken", "Invalid pagination token");
        }
        off = (size_t)o;
    }
    if (json_integer_value(json_object_get(in, "MaxResults")) > 0)
        max = (size_t)json_integer_value(json_object_get(in, "MaxResults"));
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(items, i);
    op_tuning_by.key = sort_key;
    op_tuning_by.numeric = numeric;
    op_tuning_by.asc = order && strcmp(order, "Ascending") == 0;
    qsort(v, n, sizeof(*v), op_tuning_cmp);
    page = json_array();
    for (size_t i = off; i < n && i < off + max; i++)
        json_array_append(page, v[i]);
    *out = json_pack("{s:o}", key, page);
    if (off + max < n) {
        char next[32];
        snprintf(next, sizeof(next), "%zu", off + max);
        json_object_set_new(*out, "NextToken", json_string(next));
    }
    free(v);
    json_decref(items);
    return 0;
}

static const char *op_tuning_sort_key(const char *by, int *numeric)
{
    *numeric = 0;
    if (by && strcmp(by, "Name") == 0)
        return "HyperParameterTuningJobName";
    if (by && strcmp(by, "Status") == 0)
        return "HyperParameterTuningJobStatus";
    *numeric = 1;
    return "CreationTime";
}

static double op_tuning_t(json_t *in, const char *k)
{
    return json_is_number(json_object_get(in, k)) ? json_number_value(json_object_get(in, k)) : 0;
}

int op_tuning_list(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    static const char *const keys[] = {"HyperParameterTuningJobName",
                                       "HyperParameterTuningJobArn",
                                       "HyperParameterTuningJobStatus",
                                       "CreationTime",
                                       "HyperParameterTuningEndTime",
                                       "LastModifiedTime",
                                       "TrainingJobStatusCounters",
                                       "ObjectiveStatusCounters",
                                       NULL};
    const char *contains = op_str(in, "NameContains"), *status = op_str(in, "StatusEquals");
    json_t *all = store_res_list(ctx->store, TUNING_KIND, NULL, NULL, ctx->now, &op_tuning_timing,
                                 err),
           *items, *rec;
    size_t i;
    int numeric;
    const char *sk = op_tuning_sort_key(op_str(in, "SortBy"), &numeric);

    if (!all)
        return -err->code;
    items = json_array();
    json_array_foreach(all, i, rec)
    {
        json_t *s, *cfg;
        double c, m;
        op_tuning_public(rec);
        c = op_tuning_t(rec, "CreationTime");
        m = op_tuning_t(rec, "LastModifiedTime");
        if ((contains && !strstr(op_str(rec, "HyperParameterTuningJobName"), contains)) ||
            (status && strcmp(status, op_str(rec, "HyperParameterTuningJobStatus")) != 0) ||
            (op_tuning_t(in, "CreationTimeAfter") && c <= op_tuning_t(in, "CreationTimeAfter")) ||
            (op_tuning_t(in, "CreationTimeBefore") && c >= op_tuning_t(in, "CreationTimeBefore")) ||
            (op_tuning_t(in, "LastModifiedTimeAfter") &&
             m <= op_tuning_t(in, "LastModifiedTimeAfter")) ||
            (op_tuning_t(in, "LastModifiedTimeBefore") &&
             m >= op_tuning_t(in, "LastModifiedTimeBefore")))
            continue;
        s = json_object();
        for (int k = 0; keys[k]; k++)
            op_copy(s, rec, keys[k]);
        cfg = json_object_get(rec, "HyperParameterTuningJobConfig");
        op_copy(s, cfg, "Strategy");
        op_copy(s, cfg, "ResourceLimits");
        json_array_append_new(items, s);
    }
    json_decref(all);
    return op_tuning_page(in, items, sk, numeric, "HyperParameterTuningJobSummaries", 100, out,
                          err);
}

int op_tuning_stop(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *name = op_str(in, "HyperParameterTuningJobName");
    struct store_res_update u;
    json_t *rec;

    memset(&u, 0, sizeof(u));
    u.expect = "InProgress";
    u.status = "Stopping";
    u.ver = -1;
    rec = store_res_update(ctx->store, TUNING_KIND, name, &u, ctx->now, &op_tuning_timing, err);
    if (!rec) {
        if (err->code == TY_ENOTFOUND)
            return ty_err_set(err, TY_ENOTFOUND, "HyperParameterTuningJobName",
                              "Amazon SageMaker can't find a tuning job with name %s", name);
        if (err->code == TY_ECONFLICT) {
            char st[64];
            snprintf(st, sizeof(st), "%.63s", err->msg);
            return ty_err_set(err, TY_EINVAL, "HyperParameterTuningJobName",
                              "The request was rejected because the tuning job %s is in status "
                              "%s.",
                              name, st);
        }
        return -err->code;
    }
    json_decref(rec);
    *out = json_object();
    return 0;
}

int op_tuning_list_training_jobs(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    static const char *const keys[] = {
        "TrainingJobName", "TrainingJobArn",    "CreationTime",  "TrainingStartTime",
        "TrainingEndTime", "TrainingJobStatus", "FailureReason", NULL};
    const char *status = op_str(in, "StatusEquals"), *by = op_str(in, "SortBy"), *sk;
    json_t *rec = op_tuning_get(ctx, in, err), *items, *jn, *obj;
    const char *metric, *type, *tname;
    size_t i;
    int numeric = 1;

    if (!rec)
        return -err->code;
    obj = json_object_get(json_object_get(rec, "HyperParameterTuningJobConfig"),
                          "HyperParameterTuningJobObjective");
    metric = op_str(obj, "MetricName");
    type = op_str(obj, "Type");
    tname = op_str(rec, "HyperParameterTuningJobName");
    items = json_array();
    json_array_foreach(json_object_get(rec, "_jobs"), i, jn)
    {
        struct ty_err e2;
        json_t *job = store_job_get(ctx->store, json_string_value(jn), &e2), *s, *tuned, *hp;
        double v;
        const char *js;
        if (!job)
            continue;
        js = op_str(job, "TrainingJobStatus");
        if (status && (!js || strcmp(status, js) != 0)) {
            json_decref(job);
            continue;
        }
        s = json_object();
        for (int k = 0; keys[k]; k++)
            op_copy(s, job, keys[k]);
        json_object_set_new(s, "TuningJobName", json_string(tname));
        tuned = json_object();
        hp = json_object_get(job, "HyperParameters");
        {
            const char *k2;
            json_t *v2;
            json_t *stat = json_object_get(json_object_get(rec, "TrainingJobDefinition"),
                                           "StaticHyperParameters");
            json_object_foreach(hp, k2, v2)
            {
                if (!json_object_get(stat, k2))
                    json_object_set(tuned, k2, v2);
            }
        }
        json_object_set_new(s, "TunedHyperParameters", tuned);
        if (metric && tuning_objective_of(job, metric, &v) == 0) {
            json_object_set_new(s, "FinalHyperParameterTuningJobObjectiveMetric",
                                json_pack("{s:s,s:s,s:f}", "Type", type ? type : "Minimize",
                                          "MetricName", metric, "Value", v));
            json_object_set_new(s, "ObjectiveStatus", json_string("Succeeded"));
        } else {
            json_object_set_new(
                s, "ObjectiveStatus",
                json_string(js && strcmp(js, "InProgress") == 0 ? "Pending" : "Failed"));
        }
        json_array_append_new(items, s);
        json_decref(job);
    }
    json_decref(rec);
    if (by && strcmp(by, "Name") == 0) {
        sk = "TrainingJobName";
        numeric = 0;
    } else if (by && strcmp(by, "Status") == 0) {
        sk = "TrainingJobStatus";
        numeric = 0;
    } else if (by && strcmp(by, "FinalObjectiveMetricValue") == 0) {
        /* sorted on a flat copy of the value */
        json_array_foreach(items, i, jn)
        {
            json_t *f = json_object_get(jn, "FinalHyperParameterTuningJobObjectiveMetric");
            if (f)
                json_object_set(jn, "_v", json_object_get(f, "Value"));
        }
        sk = "_v";
    } else {
        sk = "CreationTime";
    }
    {
        int rc = op_tuning_page(in, items, sk, numeric, "TrainingJobSummaries", 10, out, err);
        if (rc == 0)
            json_array_foreach(json_object_get(*out, "TrainingJobSummaries"), i, jn)
            {
                json_object_del(jn, "_v");
            }
        return rc;
    }
}
