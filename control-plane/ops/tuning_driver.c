/*
 * tuning.c - the driver of hyperparameter tuning jobs (tuning.h).
 */
#include "tuning.h"

#include "ops.h"
#include "store_lease.h"
#include "store_metrics.h"
#include "store_res.h"
#include "tuning_strategy.h"
#include "ty_log.h"
#include "ty_time.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TUNING_LEASE_MS   15000
#define TUNING_MAX_SERIES 2000 /* points of one objective series read for early stopping */
#define TUNING_MAX_JOBS   1000 /* training jobs of one tuning job the driver looks at */

static const struct store_res_timing tuning_timing = {0, 0};
static const struct apimodel *tuning_model_cur;

const struct apimodel *tuning_model(void)
{
    return tuning_model_cur;
}

static json_t *tuning_definition(json_t *doc)
{
    json_t *d = json_object_get(doc, "TrainingJobDefinition");
    return d ? d : json_array_get(json_object_get(doc, "TrainingJobDefinitions"), 0);
}

json_t *tuning_training_request(json_t *doc, const char *name, json_t *hp)
{
    static const char *const copied[] = {"RoleArn",
                                         "InputDataConfig",
                                         "VpcConfig",
                                         "OutputDataConfig",
                                         "StoppingCondition",
                                         "EnableNetworkIsolation",
                                         "EnableInterContainerTrafficEncryption",
                                         "EnableManagedSpotTraining",
                                         "CheckpointConfig",
                                         "RetryStrategy",
                                         "Environment",
                                         "ResourceConfig",
                                         NULL};
    json_t *def = tuning_definition(doc), *req = json_object(), *alg, *h, *rc;

    if (!req)
        return NULL;
    json_object_set_new(req, "TrainingJobName", json_string(name));
    for (int i = 0; copied[i]; i++)
        op_copy(req, def, copied[i]);
    alg = json_deep_copy(json_object_get(def, "AlgorithmSpecification"));
    json_object_set_new(req, "AlgorithmSpecification", alg ? alg : json_object());
    rc = json_object_get(def, "HyperParameterTuningResourceConfig");
    if (!json_object_get(req, "ResourceConfig") && rc) {
        json_t *r = json_object();
        op_copy(r, rc, "InstanceType");
        op_copy(r, rc, "InstanceCount");
        op_copy(r, rc, "VolumeSizeInGB");
        op_copy(r, rc, "VolumeKmsKeyId");
        json_object_set_new(req, "ResourceConfig", r);
    }
    h = json_deep_copy(json_object_get(def, "StaticHyperParameters"));
    if (!json_is_object(h)) {
        json_decref(h);
        h = json_object();
    }
    json_object_update(h, hp);
    json_object_set_new(req, "HyperParameters", h);
    return req;
}

int tuning_objective_of(json_t *job, const char *metric, double *v)
{
    json_t *m;
    size_t i;
    int found = -1;
    json_array_foreach(json_object_get(job, "FinalMetricDataList"), i, m)
    {
        const char *n = json_string_value(json_object_get(m, "MetricName"));
        if (n && strcmp(n, metric) == 0 && json_is_number(json_object_get(m, "Value"))) {
            *v = json_number_value(json_object_get(m, "Value"));
            found = 0;
        }
    }
    return found;
}

/* ---- one tuning job ---- */

struct tuning__child {
    const char *name; /* borrowed from the document */
    json_t *job;      /* new, NULL when the training job does not exist (yet) */
    const char *status;
    int has_y;
    double value, y; /* the objective; y lower is better */
    double *series;  /* new: the objective series (lower is better), for early stopping */
    size_t nseries;
};

struct tuning__pass {
    struct store *s;
    const struct tuning_config *c;
    double now;
    json_t *doc; /* the record being rebuilt (owned) */
    const char *name, *metric;
    int maximize;
    struct tuning_space sp;
    struct tuning__child *ch;
    size_t nch;
    struct op_ctx ctx;
};

static void tuning_stop_job(struct tuning__pass *p, const char *job)
{
    struct ty_err err;
    json_t *in = json_pack("{s:s}", "TrainingJobName", job), *out = NULL;
    ty_err_clear(&err);
    if (op_training_stop(&p->ctx, in, &out, &err) != 0 && err.code != TY_EINVAL)
        ty_log(TY_LOG_WARN, "tuning.stop_failed", "tuning=%s job=%s error='%s'", p->name, job,
               err.msg);
    json_decref(in);
    json_decref(out);
}

/* Creates training job name with hp (borrowed); links it to the tuning job. 0 or -1 with
   reason (the tuning job fails). */
static int tuning_create_job(struct tuning__pass *p, const char *name, json_t *hp, char *reason,
                             size_t rn)
{
    json_t *req = tuning_training_request(p->doc, name, hp), *out = NULL, *set;
    struct store_transition t;
    struct ty_err err;
    int rc = 0;

    ty_err_clear(&err);
    if (!req)
        return -1;
    { /* the tuning job's tags (at this moment) go on each child, as SageMaker puts them */
        const char *tarn = json_string_value(json_object_get(p->doc, "HyperParameterTuningJobArn"));
        json_t *tags = tarn ? store_tags_list(p->s, tarn, &err) : json_array();
        if (!tags) {
            json_decref(req);
            snprintf(reason, rn, "Failed to create training job %.63s: %.900s", name, err.msg);
            return err.code == TY_EREDIS ? -2 : -1;
        }
        if (json_array_size(tags) == 0)
            json_decref(tags);
        else
            json_object_set_new(req, "Tags", tags); /* steals tags, also on failure */
    }
    if (p->c->model && apimodel_validate(p->c->model, "sagemaker", "CreateTrainingJob", req, &err))
        rc = -err.code;
    else
        rc = op_training_create(&p->ctx, req, &out, &err);
    json_decref(req);
    json_decref(out);
    if (rc == -TY_EINUSE)
        rc = 0; /* created by an earlier pass */
    if (rc) {
        snprintf(reason, rn, "Failed to create training job %.63s: %.900s", name, err.msg);
        return rc == -TY_EREDIS ? -2 : -1;
    }
    memset(&t, 0, sizeof(t));
    set = json_pack("{s:O}", "TuningJobArn", json_object_get(p->doc, "HyperParameterTuningJobArn"));
    t.set = set;
    t.now = p->now;
    json_decref(store_job_transition(p->s, name, &t, &err));
    json_decref(set);
    ty_log(TY_LOG_INFO, "tuning.job_created", "tuning=%s job=%s", p->name, name);
    return 0;
}

/* Reads the objective series of ch (lower is better). */
static void tuning_series(struct tuning__pass *p, struct tuning__child *ch)
{
    json_t *dims = json_pack("[{s:s,s:s}]", "Name", "TrainingJobName", "Value", ch->name);
    char *id = store_metrics_id(STORE_METRICS_NS_SAGEMAKER, p->metric, dims);
    struct store_metric_point *pts = NULL;
    struct ty_err err;
    size_t n = 0;

    json_decref(dims);
    if (id && store_metrics_range(p->s, id, 0, INT64_MAX, TUNING_MAX_SERIES, &pts, &n, &err) == 0) {
        ch->series = malloc(sizeof(double) * (n ? n : 1));
        for (size_t i = 0; ch->series && i < n; i++)
            ch->series[i] = p->maximize ? -pts[i].value : pts[i].value;
        ch->nseries = ch->series ? n : 0;
    }
    free(pts);
    free(id);
}

/* Early stopping of the running children (Auto: median rule; Hyperband: successive halving). */
static void tuning_early_stop(struct tuning__pass *p, int hyperband)
{
    const double **others = calloc(p->nch ? p->nch : 1, sizeof(*others));
    size_t *lens = calloc(p->nch ? p->nch : 1, sizeof(*lens));
    json_t *early = json_object_get(p->doc, "_stopped_early");

    for (size_t i = 0; others && lens && i < p->nch; i++)
        if (p->ch[i].job)
            tuning_series(p, &p->ch[i]);
    for (size_t i = 0; others && lens && i < p->nch; i++) {
        struct tuning__child *me = &p->ch[i];
        size_t n = 0;
        int stop;
        if (!me->status || strcmp(me->status, "InProgress") != 0 || me->nseries == 0)
            continue;
        for (size_t j = 0; j < p->nch; j++) {
            if (j == i || p->ch[j].nseries == 0)
                continue;
            /* the median rule compares with jobs that ended; Hyperband with every job */
            if (!hyperband && p->ch[j].status && strcmp(p->ch[j].status, "InProgress") == 0)
                continue;
            others[n] = p->ch[j].series;
            lens[n++] = p->ch[j].nseries;
        }
        stop = hyperband ? tuning_hyperband_stop(me->series, me->nseries, others, lens, n)
                         : tuning_median_stop(me->series, me->nseries, others, lens, n);
        if (stop) {
            ty_log(TY_LOG_INFO, "tuning.early_stop", "tuning=%s job=%s points=%zu rule=%s", p->name,
                   me->name, me->nseries, hyperband ? "hyperband" : "median");
            tuning_stop_job(p, me->name);
            json_array_append_new(early, json_string(me->name));
            me->status = "Stopping";
        }
    }
    free(others);
    free(lens);
}

static json_t *tuning_summary(struct tuning__pass *p, struct tuning__child *ch, json_t *obj)
{
    static const char *const keys[] = {
        "TrainingJobName", "TrainingJobArn",    "CreationTime",  "TrainingStartTime",
        "TrainingEndTime", "TrainingJobStatus", "FailureReason", NULL};
    json_t *s = json_object(), *tuned = json_object(), *v;
    json_t *stat = json_object_get(tuning_definition(p->doc), "StaticHyperParameters");
    const char *k;

    for (int i = 0; keys[i]; i++)
        op_copy(s, ch->job, keys[i]);
    json_object_set_new(s, "TuningJobName", json_string(p->name));
    json_object_foreach(json_object_get(ch->job, "HyperParameters"), k, v)
    {
        if (!json_object_get(stat, k))
            json_object_set(tuned, k, v);
    }
    json_object_set_new(s, "TunedHyperParameters", tuned);
    json_object_set_new(s, "FinalHyperParameterTuningJobObjectiveMetric",
                        json_pack("{s:O,s:s,s:f}", "Type", json_object_get(obj, "Type"),
                                  "MetricName", p->metric, "Value", ch->value));
    json_object_set_new(s, "ObjectiveStatus", json_string("Succeeded"));
    return s;
}

/* Observations of the warm-start parents' training jobs, appended to obs. */
static size_t tuning_parents(struct tuning__pass *p, struct tuning_obs *obs, size_t nobs,
                             size_t max)
{
    json_t *par, *jn;
    size_t i, k;
    json_array_foreach(json_object_get(json_object_get(p->doc, "WarmStartConfig"),
                                       "ParentHyperParameterTuningJobs"),
                       i, par)
    {
        struct ty_err err;
        json_t *rec =
            store_res_get(p->s, TUNING_KIND,
                          json_string_value(json_object_get(par, "HyperParameterTuningJobName")),
                          p->now, &tuning_timing, &err);
        json_array_foreach(json_object_get(rec, "_jobs"), k, jn)
        {
            json_t *job;
            double v;
            if (nobs >= max)
                break;
            job = store_job_get(p->s, json_string_value(jn), &err);
            if (job && tuning_objective_of(job, p->metric, &v) == 0 &&
                tuning_point_of(&p->sp, json_object_get(job, "HyperParameters"), obs[nobs].u) ==
                    0) {
                obs[nobs].y = p->maximize ? -v : v;
                obs[nobs].has_y = 1;
                nobs++;
            }
            json_decref(job);
        }
        json_decref(rec);
    }
    return nobs;
}

static enum tuning_strategy_kind tuning_kind_of(const char *s)
{
    if (s && strcmp(s, "Random") == 0)
        return TUNING_RANDOM;
    if (s && strcmp(s, "Grid") == 0)
        return TUNING_GRID;
    if (s && strcmp(s, "Hyperband") == 0)
        return TUNING_HYPERBAND;
    return TUNING_BAYESIAN;
}

/* Frees what a pass holds. */
static void tuning_pass_cleanup(struct tuning__pass *p)
{
    for (size_t i = 0; i < p->nch; i++) {
        json_decref(p->ch[i].job);
        free(p->ch[i].series);
    }
    free(p->ch);
    tuning_space_cleanup(&p->sp);
    json_decref(p->doc);
}

static int tuning_better(const struct tuning__child *a, double best_y)
{
    return a->has_y && a->y < best_y;
}

/* Advances one tuning job (rec: its record, borrowed). */
/* Sets OverallBestTrainingJob: the best across this tuning job (bestj, of bestc; both may be
   NULL) and its warm-start parents, as SageMaker reports it. */
static void tuning_overall_best(struct tuning__pass *p, json_t *bestj,
                                const struct tuning__child *bestc)
{
    json_t *overall = json_incref(bestj), *par;
    double oy = bestc ? bestc->y : INFINITY;
    size_t i;

    json_array_foreach(json_object_get(json_object_get(p->doc, "WarmStartConfig"),
                                       "ParentHyperParameterTuningJobs"),
                       i, par)
    {
        struct ty_err e2;
        json_t *prec =
            store_res_get(p->s, TUNING_KIND,
                          json_string_value(json_object_get(par, "HyperParameterTuningJobName")),
                          p->now, &tuning_timing, &e2);
        json_t *pb = json_object_get(prec, "OverallBestTrainingJob");
        json_t *v;
        if (!pb)
            pb = json_object_get(prec, "BestTrainingJob");
        v = json_object_get(json_object_get(pb, "FinalHyperParameterTuningJobObjectiveMetric"),
                            "Value");
        if (json_is_number(v) &&
            (p->maximize ? -json_number_value(v) : json_number_value(v)) < oy) {
            oy = p->maximize ? -json_number_value(v) : json_number_value(v);
            json_decref(overall);
            overall = json_incref(pb);
        }
        json_decref(prec);
    }
    if (overall)
        json_object_set(p->doc, "OverallBestTrainingJob", overall);
    json_decref(overall);
}

/* Re-reads the training jobs of the pass (a stop may have ended one) and counts them.
   OUT: counts[5] (Completed, InProgress, RetryableError, NonRetryableError, Stopped),
   ocounts[3] (objective Succeeded, Pending, Failed), *any_ok, *bestc, *since_best (jobs with
   an objective since the best one). Returns how many still run. */
static size_t tuning_count(struct tuning__pass *p, int *counts, int *ocounts, int *any_ok,
                           struct tuning__child **bestc, int *since_best)
{
    size_t running = 0, i;

    for (i = 0; i < p->nch; i++) {
        struct tuning__child *ch = &p->ch[i];
        struct ty_err e2;
        if (ch->job) { /* re-read: a stop above may have ended it */
            json_t *j = store_job_get(p->s, ch->name, &e2);
            if (j) {
                json_decref(ch->job);
                ch->job = j;
                ch->status = json_string_value(json_object_get(j, "TrainingJobStatus"));
                if (!ch->status)
                    ch->status = "InProgress";
            }
        }
        if (strcmp(ch->status, "Completed") == 0)
            counts[0]++;
        else if (strcmp(ch->status, "InProgress") == 0 || strcmp(ch->status, "Stopping") == 0)
            counts[1]++, running++;
        else if (strcmp(ch->status, "Stopped") == 0)
            counts[4]++;
        else
            counts[3]++;
        if (ch->job && !ch->has_y && strcmp(ch->status, "InProgress") != 0 &&
            strcmp(ch->status, "Stopping") != 0 &&
            tuning_objective_of(ch->job, p->metric, &ch->value) == 0) {
            ch->has_y = 1;
            ch->y = p->maximize ? -ch->value : ch->value;
        }
        if (ch->has_y)
            ocounts[0]++;
        else if (strcmp(ch->status, "InProgress") == 0 || strcmp(ch->status, "Stopping") == 0)
            ocounts[1]++;
        else
            ocounts[2]++;
        if (ch->has_y &&
            (strcmp(ch->status, "Completed") == 0 || strcmp(ch->status, "Stopped") == 0)) {
            *any_ok = 1;
            if (!*bestc || ch->y < (*bestc)->y) {
                *bestc = ch;
                *since_best = 0;
            } else {
                (*since_best)++;
            }
        }
    }
    return running;
}

/* Writes the rebuilt record when it changed (compare-and-set on status and ver; a record
   changed meanwhile is left to the next pass). 0 or error. */
static int tuning_write(struct tuning__pass *p, const char *status, const char *new_status,
                        const json_t *before, long long ver, struct ty_err *err)
{
    struct store_res_update upd;
    json_t *rec2;
    int rc = 0;

    if (strcmp(new_status, status) == 0 && json_equal(before, p->doc))
        return 0;
    memset(&upd, 0, sizeof(upd));
    upd.expect = status;
    upd.status = strcmp(new_status, status) != 0 ? new_status : NULL;
    upd.doc = p->doc;
    upd.ver = ver;
    rec2 = store_res_update(p->s, TUNING_KIND, p->name, &upd, p->now, &tuning_timing, err);
    if (!rec2 && err->code != TY_ECONFLICT && err->code != TY_ENOTFOUND)
        rc = -err->code;
    else
        ty_err_clear(err);
    if (rec2 && strcmp(new_status, status) != 0)
        ty_log(TY_LOG_INFO, "tuning.status", "tuning=%s status=%s jobs=%zu", p->name, new_status,
               p->nch);
    json_decref(rec2);
    return rc;
}

/* Reads the training jobs launched so far (recreating one a pass recorded but died before
   creating) into p->ch, and their objectives into obs. OUT: *nobs; reason (size rn) when a
   recreation failed. 0 or error. */
static int tuning_load(struct tuning__pass *p, const char *status, json_t *jobs, json_t *hpmap,
                       struct tuning_obs *obs, size_t *nobs, char *reason, size_t rn,
                       struct ty_err *err)
{
    size_t i;

    for (i = 0; i < json_array_size(jobs) && i < TUNING_MAX_JOBS; i++) {
        struct tuning__child *ch = &p->ch[p->nch++];
        struct ty_err e2;
        ch->name = json_string_value(json_array_get(jobs, i));
        ch->job = store_job_get(p->s, ch->name, &e2);
        if (!ch->job && e2.code == TY_EREDIS) {
            return ty_err_set(err, TY_EREDIS, NULL, "%s", e2.msg);
        }
        if (!ch->job && strcmp(status, "InProgress") == 0) {
            /* recorded by a pass that died before creating it: create it now */
            int r = tuning_create_job(p, ch->name, json_object_get(hpmap, ch->name), reason, rn);
            if (r == -2) {
                return ty_err_set(err, TY_EREDIS, NULL, "%s", reason);
            }
            if (r == 0)
                ch->job = store_job_get(p->s, ch->name, &e2);
        }
        ch->status =
            ch->job ? json_string_value(json_object_get(ch->job, "TrainingJobStatus")) : "Failed";
        if (!ch->status)
            ch->status = "InProgress";
        if (ch->job && tuning_objective_of(ch->job, p->metric, &ch->value) == 0 &&
            strcmp(ch->status, "InProgress") != 0 && strcmp(ch->status, "Stopping") != 0) {
            ch->has_y = 1;
            ch->y = p->maximize ? -ch->value : ch->value;
            tuning_point_of(&p->sp, json_object_get(ch->job, "HyperParameters"), obs[*nobs].u);
            obs[*nobs].y = ch->y;
            obs[*nobs].has_y = 1;
            (*nobs)++;
        }
    }
    return 0;
}

/* Launches training jobs while the tuning job is InProgress, under MaxParallelTrainingJobs
   (running counts those running) and MaxNumberOfTrainingJobs: each is recorded in the record
   first (compare-and-set on *ver, updated), then created. OUT: *new_status "Failed" with
   reason (size rn) when a creation failed. 0, 1 when the record changed meanwhile (the pass
   ends quietly), or error. */
static int tuning_launch(struct tuning__pass *p, const char *strategy, long long maxpar,
                         long long maxjobs, size_t running, const struct tuning_obs *obs,
                         size_t nobs, long long *ver, const char **new_status, char *reason,
                         size_t rn, struct ty_err *err)
{
    while (strcmp(*new_status, "InProgress") == 0 && (long long)running < maxpar &&
           (long long)p->nch < maxjobs && p->nch < TUNING_MAX_JOBS) {
        struct tuning__child *ch = &p->ch[p->nch];
        double u[TUNING_MAX_PARAMS];
        char jname[128];
        long long idx = (long long)p->nch;
        json_t *hp, *rec2;
        struct store_res_update upd;
        int r;

        snprintf(jname, sizeof(jname), "%s-%03lld-%08x", p->name, idx + 1,
                 (unsigned)(tuning_rand_seed(p->name, idx + 1000000) & 0xffffffffu));
        if (tuning_kind_of(strategy) == TUNING_GRID)
            tuning_grid_point(&p->sp, idx, u);
        else
            tuning_suggest(tuning_kind_of(strategy), &p->sp, tuning_rand_seed(p->name, idx), obs,
                           nobs, u);
        hp = tuning_point_params(&p->sp, u);
        /* record it first (compare-and-set), then create it */
        json_array_append_new(json_object_get(p->doc, "_jobs"), json_string(jname));
        json_object_set_new(json_object_get(p->doc, "_hp"), jname, hp);
        memset(&upd, 0, sizeof(upd));
        upd.expect = "InProgress";
        upd.doc = p->doc;
        upd.ver = *ver;
        rec2 = store_res_update(p->s, TUNING_KIND, p->name, &upd, p->now, &tuning_timing, err);
        if (!rec2) {
            if (err->code == TY_ECONFLICT || err->code == TY_ENOTFOUND) {
                ty_err_clear(err); /* stopped or changed meanwhile: the next pass sees it */
                return 1;
            }
            return -err->code;
        }
        *ver = json_integer_value(json_object_get(rec2, "_ver"));
        json_decref(rec2);
        ch->name = json_string_value(
            json_array_get(json_object_get(p->doc, "_jobs"),
                           json_array_size(json_object_get(p->doc, "_jobs")) - 1));
        p->nch++;
        r = tuning_create_job(p, jname, hp, reason, rn);
        /* counted above: it has a status from here on, whatever the creation gave (every
           later step of the pass reads it) */
        ch->status = "Failed";
        if (r == -2) {
            return ty_err_set(err, TY_EREDIS, NULL, "%s", reason);
        }
        if (r != 0) {
            ty_log(TY_LOG_WARN, "tuning.create_failed", "tuning=%s reason='%s'", p->name, reason);
            *new_status = "Failed";
            break;
        }
        ch->job = store_job_get(p->s, jname, err);
        ch->status = "InProgress";
        running++;
    }
    return 0;
}

/* Whether the best objective so far reaches TuningJobCompletionCriteria's
   TargetObjectiveMetricValue. */
static int tuning_target_hit(const struct tuning__pass *p, json_t *cfg)
{
    json_t *t = json_object_get(json_object_get(cfg, "TuningJobCompletionCriteria"),
                                "TargetObjectiveMetricValue");
    double best_y = INFINITY;

    for (size_t i = 0; i < p->nch; i++)
        if (tuning_better(&p->ch[i], best_y))
            best_y = p->ch[i].y;
    if (!json_is_number(t) || !isfinite(best_y))
        return 0;
    return p->maximize ? -best_y >= json_number_value(t) : best_y <= json_number_value(t);
}

/* Whether the tuning job has run for ResourceLimits' MaxRuntimeInSeconds. */
static int tuning_out_of_time(const struct tuning__pass *p, json_t *limits)
{
    json_t *mr = json_object_get(limits, "MaxRuntimeInSeconds");
    double created = json_number_value(json_object_get(p->doc, "CreationTime"));
    return json_is_integer(mr) && p->now - created >= (double)json_integer_value(mr);
}

/* Starts a pass over the record rec: p (zeroed first) gets a copy of the record without its
   bookkeeping members, its name, objective and request context; the work lists (_jobs, _hp,
   _stopped_early) exist. OUT: *before, a copy to compare with at the end (new). 0 or -1 (out of
   memory; p is then cleaned up by tuning_pass_cleanup as usual). */
static int tuning_pass_init(struct tuning__pass *p, struct store *s, const struct tuning_config *c,
                            json_t *rec, double now, json_t **before)
{
    static const char *const book[] = {"_id", "_ver", "_since", "Status", NULL};
    json_t *obj;

    memset(p, 0, sizeof(*p));
    p->s = s;
    p->c = c;
    p->now = now;
    p->doc = json_deep_copy(rec);
    if (!p->doc)
        return -1;
    for (int k = 0; book[k]; k++)
        json_object_del(p->doc, book[k]);
    *before = json_deep_copy(p->doc);
    p->name = json_string_value(json_object_get(p->doc, "HyperParameterTuningJobName"));
    obj = json_object_get(json_object_get(p->doc, "HyperParameterTuningJobConfig"),
                          "HyperParameterTuningJobObjective");
    p->metric = json_string_value(json_object_get(obj, "MetricName"));
    p->maximize = json_string_value(json_object_get(obj, "Type")) &&
                  strcmp(json_string_value(json_object_get(obj, "Type")), "Maximize") == 0;
    if (!json_is_array(json_object_get(p->doc, "_jobs")))
        json_object_set_new(p->doc, "_jobs", json_array());
    if (!json_is_object(json_object_get(p->doc, "_hp")))
        json_object_set_new(p->doc, "_hp", json_object());
    if (!json_is_array(json_object_get(p->doc, "_stopped_early")))
        json_object_set_new(p->doc, "_stopped_early", json_array());
    p->ctx.store = s;
    p->ctx.region = json_string_value(json_object_get(p->doc, "_region"));
    p->ctx.account_id = json_string_value(json_object_get(p->doc, "_account"));
    p->ctx.principal_arn = json_string_value(json_object_get(p->doc, "_principal"));
    p->ctx.now = now;
    p->ctx.s3_dir = c->s3_dir;
    p->ctx.s3_remote = c->s3_remote;
    return *before ? 0 : -1;
}

static int tuning_advance(struct store *s, const struct tuning_config *c, json_t *rec, double now,
                          struct ty_err *err)
{
    struct tuning__pass p;
    json_t *cfg, *limits, *obj, *jobs, *hpmap, *before = NULL, *bestj = NULL;
    const char *status = json_string_value(json_object_get(rec, "Status")), *strategy, *es;
    const char *new_status;
    long long maxjobs, maxpar, ver = json_integer_value(json_object_get(rec, "_ver"));
    struct tuning_obs *obs = NULL;
    size_t nobs = 0, running = 0, nlaunched, i;
    int counts[5] = {0}, ocounts[3] = {0}, rc = 0, target_hit = 0, any_ok = 0, since_best = 0;
    char reason[1024] = "";
    struct tuning__child *bestc = NULL;

    if (tuning_pass_init(&p, s, c, rec, now, &before) != 0) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    cfg = json_object_get(p.doc, "HyperParameterTuningJobConfig");
    limits = json_object_get(cfg, "ResourceLimits");
    obj = json_object_get(cfg, "HyperParameterTuningJobObjective");
    strategy = json_string_value(json_object_get(cfg, "Strategy"));
    es = json_string_value(json_object_get(cfg, "TrainingJobEarlyStoppingType"));
    maxjobs = json_integer_value(json_object_get(limits, "MaxNumberOfTrainingJobs"));
    maxpar = json_integer_value(json_object_get(limits, "MaxParallelTrainingJobs"));
    if (maxpar < 1)
        maxpar = 1;
    jobs = json_object_get(p.doc, "_jobs");
    hpmap = json_object_get(p.doc, "_hp");
    if (!p.metric || !p.ctx.region || !p.ctx.account_id || !p.ctx.principal_arn ||
        tuning_space_parse(json_object_get(cfg, "ParameterRanges")
                               ? json_object_get(cfg, "ParameterRanges")
                               : json_object_get(tuning_definition(p.doc), "HyperParameterRanges"),
                           &p.sp, err) != 0) {
        snprintf(reason, sizeof(reason), "The tuning job's configuration cannot be read.");
        new_status = "Failed";
        ty_err_clear(err);
        goto write;
    }

    /* the training jobs launched so far */
    nlaunched = json_array_size(jobs);
    p.ch = calloc(nlaunched + (size_t)maxpar + 1, sizeof(*p.ch));
    obs = calloc(nlaunched + (size_t)maxpar + TUNING_MAX_OBS + 1, sizeof(*obs));
    if (!p.ch || !obs) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    if ((rc = tuning_load(&p, status, jobs, hpmap, obs, &nobs, reason, sizeof(reason), err)) < 0)
        goto out;
    if (reason[0]) {
        new_status = "Failed";
        goto count;
    }
    nobs = tuning_parents(&p, obs, nobs, nlaunched + (size_t)maxpar + TUNING_MAX_OBS);
    new_status = status;

    if (strcmp(status, "InProgress") == 0) {
        if (strcmp(strategy ? strategy : "", "Hyperband") == 0)
            tuning_early_stop(&p, 1);
        else if (es && strcmp(es, "Auto") == 0)
            tuning_early_stop(&p, 0);
        target_hit = tuning_target_hit(&p, cfg);
        if (tuning_out_of_time(&p, limits)) {
            new_status = "Stopping";
            ty_log(TY_LOG_INFO, "tuning.max_runtime", "tuning=%s", p.name);
        }
        if (target_hit)
            for (i = 0; i < p.nch; i++)
                if (strcmp(p.ch[i].status, "InProgress") == 0)
                    tuning_stop_job(&p, p.ch[i].name);
        for (i = 0; i < p.nch; i++)
            running += strcmp(p.ch[i].status, "InProgress") == 0 ||
                       strcmp(p.ch[i].status, "Stopping") == 0;
        /* launch up to the limits */
        if (!target_hit &&
            (rc = tuning_launch(&p, strategy, maxpar, maxjobs, running, obs, nobs, &ver,
                                &new_status, reason, sizeof(reason), err)) != 0) {
            rc = rc > 0 ? 0 : rc; /* > 0: stopped or changed meanwhile, the next pass sees it */
            goto out;
        }
        if (strcmp(new_status, "Failed") == 0)
            for (i = 0; i < p.nch; i++)
                if (strcmp(p.ch[i].status, "InProgress") == 0)
                    tuning_stop_job(&p, p.ch[i].name);
    }
    if (strcmp(new_status, "Stopping") == 0)
        for (i = 0; i < p.nch; i++)
            if (strcmp(p.ch[i].status, "InProgress") == 0)
                tuning_stop_job(&p, p.ch[i].name);

count:
    /* counters, the best training job, the end */
    running = tuning_count(&p, counts, ocounts, &any_ok, &bestc, &since_best);
    if (strcmp(new_status, "Stopping") == 0 && running == 0)
        new_status = "Stopped";
    if (strcmp(new_status, "InProgress") == 0 && running == 0 &&
        (target_hit || (long long)p.nch >= maxjobs)) {
        new_status = any_ok ? "Completed" : "Failed";
        if (!any_ok && !reason[0])
            snprintf(reason, sizeof(reason),
                     "No training job succeeded with an objective "
                     "metric value.");
    }
    if (strcmp(new_status, "Failed") == 0 && running > 0)
        new_status = status; /* end once the training jobs stopped */
    json_object_set_new(p.doc, "TrainingJobStatusCounters",
                        json_pack("{s:i,s:i,s:i,s:i,s:i}", "Completed", counts[0], "InProgress",
                                  counts[1], "RetryableError", counts[2], "NonRetryableError",
                                  counts[3], "Stopped", counts[4]));
    json_object_set_new(p.doc, "ObjectiveStatusCounters",
                        json_pack("{s:i,s:i,s:i}", "Succeeded", ocounts[0], "Pending", ocounts[1],
                                  "Failed", ocounts[2]));
    if (bestc) {
        bestj = tuning_summary(&p, bestc, obj);
        json_object_set(p.doc, "BestTrainingJob", bestj);
        json_object_set_new(
            p.doc, "TuningJobCompletionDetails",
            json_pack("{s:i}", "NumberOfTrainingJobsObjectiveNotImproving", since_best));
    }
    if (json_object_get(p.doc, "WarmStartConfig"))
        tuning_overall_best(&p, bestj, bestc);
    json_decref(bestj);
write:
    if (reason[0])
        json_object_set_new(p.doc, "FailureReason", json_string(reason));
    json_object_set_new(p.doc, "HyperParameterTuningJobStatus", json_string(new_status));
    if (strcmp(new_status, "Completed") == 0 || strcmp(new_status, "Failed") == 0 ||
        strcmp(new_status, "Stopped") == 0) {
        double created = json_number_value(json_object_get(p.doc, "CreationTime"));
        json_object_set_new(p.doc, "HyperParameterTuningEndTime", json_real(now));
        json_object_set_new(p.doc, "ConsumedResources",
                            json_pack("{s:i}", "RuntimeInSeconds", (int)lround(now - created)));
    }
    rc = tuning_write(&p, status, new_status, before, ver, err);
out:
    free(obs);
    json_decref(before);
    tuning_pass_cleanup(&p);
    return rc;
}

int tuning_driver_pass(struct store *s, const struct tuning_config *c, double now,
                       struct ty_err *err)
{
    char holder[64];
    json_t *all = store_res_list(s, TUNING_KIND, NULL, NULL, now, &tuning_timing, err), *rec;
    size_t i;
    int rc = 0;

    if (!all)
        return -err->code;
    snprintf(holder, sizeof(holder), "%ld-%p", (long)getpid(), (const void *)c);
    json_array_foreach(all, i, rec)
    {
        const char *st = json_string_value(json_object_get(rec, "Status"));
        const char *name = json_string_value(json_object_get(rec, "HyperParameterTuningJobName"));
        char lease[300];
        int got;
        if (!st || !name || (strcmp(st, "InProgress") != 0 && strcmp(st, "Stopping") != 0))
            continue;
        snprintf(lease, sizeof(lease), "tuning:%s", name);
        got = store_lease(s, lease, holder, TUNING_LEASE_MS, err);
        if (got < 0) {
            rc = got;
            break;
        }
        if (got == 0)
            continue; /* another replica drives it */
        if ((rc = tuning_advance(s, c, rec, now, err)) != 0) {
            ty_log(TY_LOG_WARN, "tuning.pass_failed", "tuning=%s error='%s'", name, err->msg);
            if (rc == -TY_EREDIS)
                break;
            rc = 0;
        }
    }
    json_decref(all);
    return rc;
}

/* ---- the thread ---- */

struct tuning_driver {
    struct tuning_config c;
    pthread_t thr;
    atomic_int stop;
};

static void *tuning_thread(void *arg)
{
    struct tuning_driver *d = arg;
    struct store *s = NULL;
    struct ty_err err;
    long step_us = (long)(d->c.period_s * 1e6 / 10);

    while (!atomic_load(&d->stop)) {
        ty_err_clear(&err);
        if (!s && !(s = store_open(d->c.redis_url, &err)))
            ty_log(TY_LOG_WARN, "tuning.store", "error='%s'", err.msg);
        if (s && tuning_driver_pass(s, &d->c, ty_wall_s(), &err) == -TY_EREDIS) {
            store_close(s);
            s = NULL;
        }
        for (int i = 0; i < 10 && !atomic_load(&d->stop); i++)
            usleep((useconds_t)step_us);
    }
    store_close(s);
    return NULL;
}

struct tuning_driver *tuning_driver_start(const struct tuning_config *c, struct ty_err *err)
{
    struct tuning_driver *d = calloc(1, sizeof(*d));
    if (!d) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    d->c = *c;
    if (d->c.period_s <= 0)
        d->c.period_s = TUNING_PERIOD_S;
    tuning_model_cur = c->model;
    atomic_init(&d->stop, 0);
    if (pthread_create(&d->thr, NULL, tuning_thread, d) != 0) {
        free(d);
        ty_err_set(err, TY_EINTERNAL, NULL, "cannot start the tuning driver thread");
        return NULL;
    }
    return d;
}

void tuning_driver_stop(struct tuning_driver *d)
{
    if (!d)
        return;
    atomic_store(&d->stop, 1);
    pthread_join(d->thr, NULL);
    free(d);
}
