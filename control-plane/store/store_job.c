/*
 * store_job.c - training-job documents in Redis: create (with the queue entry), get,
 * transition, delete, count (store.h).
 *
 * Job documents are stored as a hash ty:job:<name>: one field per top-level member, whose value
 * is that member's JSON text written by jansson. The Lua scripts treat those texts as opaque,
 * except the status strings and SecondaryStatusTransitions (strings and ms timestamps, which
 * Lua's cjson keeps exactly), so numbers keep full precision and empty arrays stay arrays.
 * Reading rebuilds the object in DescribeTrainingJob's member order and re-normalises the
 * members cjson touched (empty {} back to [], integral timestamps back to reals).
 *
 * Invariants: every redisReply is freed on every path; a job document is written only by
 * job_create.lua and job_transition.lua.
 */
#include "store.h"

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"
#include "store_int.h"
#include "ty_log.h"

/* ---- job documents ---- */

/* DescribeTrainingJob's member order; members not listed follow, sorted by name. */
static const char *const store_job_order[] = {
    "TrainingJobName",
    "TrainingJobArn",
    "TuningJobArn",
    "LabelingJobArn",
    "AutoMLJobArn",
    "ModelArtifacts",
    "TrainingJobStatus",
    "SecondaryStatus",
    "FailureReason",
    "HyperParameters",
    "AlgorithmSpecification",
    "RoleArn",
    "InputDataConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "WarmPoolStatus",
    "VpcConfig",
    "StoppingCondition",
    "CreationTime",
    "TrainingStartTime",
    "TrainingEndTime",
    "LastModifiedTime",
    "SecondaryStatusTransitions",
    "FinalMetricDataList",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
    "CheckpointConfig",
    "TrainingTimeInSeconds",
    "BillableTimeInSeconds",
    "DebugHookConfig",
    "ExperimentConfig",
    "DebugRuleConfigurations",
    "TensorBoardOutputConfig",
    "DebugRuleEvaluationStatuses",
    "ProfilerConfig",
    "ProfilerRuleConfigurations",
    "ProfilerRuleEvaluationStatuses",
    "ProfilingStatus",
    "Environment",
    "RetryStrategy",
    "RemoteDebugConfig",
    "InfraCheckConfig",
};

/* Top-level members that are lists in the service model: never {} when empty. */
static const char *const store_job_arrays[] = {
    "SecondaryStatusTransitions",
    "InputDataConfig",
    "FinalMetricDataList",
    "MetricDefinitions",
    "ContainerEntrypoint",
    "ContainerArguments",
    "DebugRuleConfigurations",
    "ProfilerRuleConfigurations",
    "DebugRuleEvaluationStatuses",
    "ProfilerRuleEvaluationStatuses",
    "Tags",
    "InstanceGroups",
};

static int store_member_rank(const char *k)
{
    for (size_t i = 0; i < sizeof(store_job_order) / sizeof(store_job_order[0]); i++) {
        if (strcmp(k, store_job_order[i]) == 0)
            return (int)i;
    }
    return (int)(sizeof(store_job_order) / sizeof(store_job_order[0]));
}

static int store_is_array_member(const char *k)
{
    for (size_t i = 0; i < sizeof(store_job_arrays) / sizeof(store_job_arrays[0]); i++) {
        if (strcmp(k, store_job_arrays[i]) == 0)
            return 1;
    }
    return 0;
}

struct store_member {
    const char *key;
    int rank;
    json_t *value;
};

static int store_member_cmp(const void *a, const void *b)
{
    const struct store_member *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Turns an empty object that stands for a list back into [], recursively for known lists. */
static void store_fix_arrays(json_t *obj)
{
    const char *k;
    json_t *v;
    void *tmp;
    if (!json_is_object(obj))
        return;
    json_object_foreach_safe(obj, tmp, k, v)
    {
        if (store_is_array_member(k) && json_is_object(v) && json_object_size(v) == 0)
            json_object_set_new(obj, k, json_array());
    }
    v = json_object_get(obj, "VpcConfig");
    if (json_is_object(v)) {
        json_t *x = json_object_get(v, "SecurityGroupIds");
        if (json_is_object(x) && json_object_size(x) == 0)
            json_object_set_new(v, "SecurityGroupIds", json_array());
        x = json_object_get(v, "Subnets");
        if (json_is_object(x) && json_object_size(x) == 0)
            json_object_set_new(v, "Subnets", json_array());
    }
    v = json_object_get(obj, "AlgorithmSpecification");
    if (json_is_object(v))
        store_fix_arrays(v);
}

/* Timestamps that went through cjson come back as integers when whole: make them reals. */
static void store_fix_transitions(json_t *doc)
{
    json_t *list = json_object_get(doc, "SecondaryStatusTransitions");
    size_t i;
    json_t *e;
    if (!json_is_array(list))
        return;
    json_array_foreach(list, i, e)
    {
        static const char *const ts[] = {"StartTime", "EndTime"};
        for (size_t j = 0; j < 2; j++) {
            json_t *t = json_object_get(e, ts[j]);
            if (json_is_integer(t))
                json_object_set_new(e, ts[j], json_real((double)json_integer_value(t)));
        }
    }
}

/* new: the document from an HGETALL reply, or NULL with err (NOTFOUND when empty). */
json_t *store__doc_from_reply(const redisReply *r, struct ty_err *err)
{
    struct store_member *m = NULL;
    size_t n = 0;
    json_t *doc = NULL;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2) {
        store__reply_err(r, "HGETALL", err);
        return NULL;
    }
    if (r->elements == 0) {
        ty_err_set(err, TY_ENOTFOUND, NULL, "Requested resource not found.");
        return NULL;
    }
    m = calloc(r->elements / 2, sizeof(*m));
    if (!m) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        json_error_t je;
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        m[n].value = json_loadb(v->str, v->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!m[n].value) {
            ty_log(TY_LOG_WARN, "store.bad_member", "member=%s err='%s'", k->str, je.text);
            continue;
        }
        m[n].key = k->str;
        m[n].rank = store_member_rank(k->str);
        n++;
    }
    qsort(m, n, sizeof(*m), store_member_cmp);
    doc = json_object();
    for (size_t i = 0; i < n; i++) {
        if (doc)
            json_object_set_new(doc, m[i].key, m[i].value);
        else
            json_decref(m[i].value);
    }
    free(m);
    if (!doc) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    store_fix_arrays(doc);
    store_fix_transitions(doc);
    return doc;
}

int store_job_create(struct store *s, const char *name, json_t *doc, double created,
                     struct ty_err *err)
{
    char key[STORE_KEY_MAX], skey[STORE_KEY_MAX];
    const char *status;
    struct store_args a;
    const char *k;
    json_t *v;
    redisReply *r = NULL;
    int rc = 0;
    if (!name || !*name || !json_is_object(doc) || json_object_size(doc) == 0)
        return ty_err_set(err, TY_EINVAL, NULL, "store_job_create: bad arguments");
    if (store__key(key, sizeof(key), "ty:job:", name, NULL, err) < 0)
        return -TY_EINVAL;
    status = json_string_value(json_object_get(doc, "TrainingJobStatus"));
    if (store__key(skey, sizeof(skey), STORE_STATUS_PREFIX, status ? status : "", NULL, err) < 0)
        return -TY_EINVAL;
    if (store__args_init(&a, 6 + 2 * (int)json_object_size(doc)) < 0) {
        store__args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc |= store__args_str(&a, key);
    rc |= store__args_str(&a, "ty:idx:job");
    rc |= store__args_str(&a, QUEUE_KEY);
    rc |= store__args_add(&a, skey, strlen(skey), 0);
    rc |= store__args_str(&a, name);
    rc |= store__args_fmt(&a, "%.17g", created);
    json_object_foreach(doc, k, v)
    {
        rc |= store__args_str(&a, k);
        rc |= store__args_json(&a, v);
    }
    if (rc) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    r = store__eval(s, SC_JOB_CREATE, 4, a.n, a.v, a.len, err);
    if (!r) {
        rc = -TY_EREDIS;
    } else if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "INUSE", 5) == 0) {
        const char *arn = r->str[5] == ' ' ? r->str + 6 : "";
        rc = ty_err_set(err, TY_EINUSE, "TrainingJobName",
                        "Training job names must be unique within an AWS account and region, and "
                        "a training job with this name already exists (%s)",
                        arn);
    } else if (r->type != REDIS_REPLY_STRING) {
        rc = store__reply_err(r, "job_create", err);
    }
out:
    if (r)
        freeReplyObject(r);
    store__args_cleanup(&a);
    return rc;
}

json_t *store_job_get(struct store *s, const char *name, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    json_t *doc;
    if (store__key(key, sizeof(key), "ty:job:", name, NULL, err) < 0)
        return NULL;
    r = store__cmdv(s, err, "HGETALL", key, NULL);
    if (!r)
        return NULL;
    doc = store__doc_from_reply(r, err);
    freeReplyObject(r);
    return doc;
}

/* Maps the scripts' "NOTFOUND ..." / "CONFLICT <status>" error replies (a bare word would
   come back as "ERR <word>" from Redis 7, hence the trailing text); other errors are redis's. */
static int store_script_err(const redisReply *r, const char *what, struct ty_err *err)
{
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOTFOUND ", 9) == 0)
        return ty_err_set(err, TY_ENOTFOUND, NULL, "Requested resource not found.");
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "CONFLICT", 8) == 0)
        return ty_err_set(err, TY_ECONFLICT, NULL, "%s", r->str[8] == ' ' ? r->str + 9 : "");
    return store__reply_err(r, what, err);
}

json_t *store_job_transition(struct store *s, const char *name, const struct store_transition *t,
                             struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    struct store_args a;
    json_t *entry = NULL, *now = NULL, *doc = NULL;
    redisReply *r = NULL;
    double ts = store__ms_round(t->now);
    const char *k;
    json_t *v;
    int rc = 0;
    if (store__key(key, sizeof(key), "ty:job:", name, NULL, err) < 0)
        return NULL;
    if (t->set && !json_is_object(t->set)) {
        ty_err_set(err, TY_EINVAL, NULL, "store_job_transition: set is not an object");
        return NULL;
    }
    if (store__args_init(&a, 10 + 2 * (int)json_object_size(t->set)) < 0) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    entry = json_pack("{s:s, s:f, s:s}", "Status", t->secondary ? t->secondary : "", "StartTime",
                      ts, "StatusMessage", t->message ? t->message : "");
    now = json_real(ts);
    rc |= store__args_str(&a, key);
    rc |= store__args_str(&a, t->expect ? t->expect : "");
    rc |= store__args_str(&a, t->expect_secondary ? t->expect_secondary : "");
    rc |= store__args_str(&a, t->status ? t->status : "");
    rc |= store__args_str(&a, t->secondary ? t->secondary : "");
    rc |= entry ? store__args_json(&a, entry) : -TY_ENOMEM;
    rc |= store__args_fmt(&a, "%.3f", ts);
    rc |= now ? store__args_json(&a, now) : -TY_ENOMEM;
    rc |= store__args_str(&a, STORE_STATUS_PREFIX);
    rc |= store__args_str(&a, name);
    if (t->set) {
        json_object_foreach(t->set, k, v)
        {
            rc |= store__args_str(&a, k);
            if (json_is_null(v))
                rc |= store__args_str(&a, "");
            else
                rc |= store__args_json(&a, v);
        }
    }
    if (rc) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    r = store__eval(s, SC_JOB_TRANSITION, 1, a.n, a.v, a.len, err);
    if (!r)
        goto out;
    if (r->type != REDIS_REPLY_ARRAY) {
        store_script_err(r, "job_transition", err);
        goto out;
    }
    doc = store__doc_from_reply(r, err);
out:
    if (r)
        freeReplyObject(r);
    json_decref(entry);
    json_decref(now);
    store__args_cleanup(&a);
    return doc;
}

int store_job_delete(struct store *s, const char *name, const char *expect, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    const char *args[6];
    redisReply *r;
    int rc = 0;
    if (store__key(key, sizeof(key), "ty:job:", name, NULL, err) < 0)
        return -TY_EINVAL;
    args[0] = key;
    args[1] = "ty:idx:job";
    args[2] = name;
    args[3] = expect ? expect : "";
    args[4] = "ty:tags:";
    args[5] = STORE_STATUS_PREFIX;
    r = store__eval(s, SC_JOB_DELETE, 2, 6, args, NULL, err);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store_script_err(r, "job_delete", err);
    freeReplyObject(r);
    return rc;
}

long store_job_count(struct store *s, const char *status, struct ty_err *err)
{
    char key[128];
    redisReply *r;
    long n = -1;
    snprintf(key, sizeof(key), "ty:idx:job:status:%s", status);
    r = store__cmdv(s, err, "SCARD", key, NULL);
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER)
        n = (long)r->integer;
    else
        store__reply_err(r, "SCARD", err);
    freeReplyObject(r);
    return n;
}
