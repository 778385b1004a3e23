/*
 * training.c - the training-job operations: Create, Describe, List, Stop, Update, Delete.
 *
 * Owns: the shape of the job document at creation (the DescribeTrainingJob response as
 * AWS returns it, with the members the SDK indexes always present), the AWS error wording
 * of these operations, and mapping List's request onto a store query. State changes go
 * through store_job_transition; this file never rewrites a document itself. Members whose
 * names start with '_' are the agents' bookkeeping and are never returned.
 */
#include "attrib.h"
#include "ops.h"
#include "quota.h"

#include "authz.h"
#include "authz_s3.h"
#include "objstore.h"
#include "s3uri.h"
#include "ty_log.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define TERMINAL_STATUSES "Completed,Failed,Stopped"

void op_arn(const struct op_ctx *ctx, const char *type, const char *name, char *buf, size_t n)
{
    size_t off;
    int w = snprintf(buf, n, "arn:aws:sagemaker:%s:%s:%s/", ctx->region, ctx->account_id, type);
    if (w < 0 || (size_t)w >= n)
        return;
    off = (size_t)w;
    for (const char *p = name; *p && off + 1 < n; p++)
        buf[off++] = (char)tolower((unsigned char)*p);
    buf[off] = '\0';
}

/*
 * AWS rejects a channel whose S3Uri has no object under it (S3Prefix) or names no object
 * (ManifestFile), with its "No S3 objects found under S3 URL" message. Checked against the
 * embedded object store; 0 when every channel has data (or there is no store to ask). The
 * look is the job role's (access.h): a channel the role may not list (or, for a ManifestFile,
 * read) gets the same message, so that nothing is told about buckets the role cannot see.
 */
static int op_check_channels(struct op_ctx *ctx, json_t *in, struct ty_err *err)
{
    json_t *chans = json_object_get(in, "InputDataConfig"), *ch;
    struct objstore *os = NULL;
    size_t i;
    int rc = 0;

    if (!ctx->s3_dir || json_array_size(chans) == 0)
        return 0;
    json_array_foreach(chans, i, ch)
    {
        json_t *s3 = json_object_get(json_object_get(ch, "DataSource"), "S3DataSource");
        const char *uri = op_str(s3, "S3Uri"), *type = op_str(s3, "S3DataType");
        struct objstore_listing l;
        struct ty_err e2;
        char bucket[256], key[1100], msg[900];
        int found = 0;

        if (!uri || (type && strcmp(type, "S3Prefix") != 0 && strcmp(type, "ManifestFile") != 0))
            continue;
        if (s3uri_parse(uri, bucket, sizeof(bucket), key, sizeof(key)) != 0)
            continue; /* the model's pattern let it through; the agent fails the job */
        ty_err_clear(&e2);
        rc = authz_s3_check(ctx->store, op_str(in, "RoleArn"),
                            type && strcmp(type, "ManifestFile") == 0 ? "s3:GetObject"
                                                                      : "s3:ListBucket",
                            bucket, key, &e2);
        if (rc == -TY_EDENIED) {
            rc = 0;
            goto missing;
        }
        if (rc) {
            rc = ty_err_set(err, e2.code, NULL, "%s", e2.msg);
            break;
        }
        if (!os && !(os = objstore_open(ctx->s3_dir, ctx->store, &e2)))
            return 0; /* no store to ask: the agent checks again */
        if (ctx->s3_remote && !objstore_is_remote(os) &&
            objstore_use_remote(os, ctx->s3_remote, &e2) != 0)
            break;
        ty_err_clear(&e2);
        memset(&l, 0, sizeof(l));
        if (type && strcmp(type, "ManifestFile") == 0) {
            struct objstore_meta meta;
            memset(&meta, 0, sizeof(meta));
            found = objstore_head(os, bucket, key, &meta, &e2) == 0;
            objstore_meta_cleanup(&meta);
        } else if (objstore_list(os, bucket, key, NULL, NULL, NULL, 1, &l, &e2) == 0) {
            found = l.n > 0;
            objstore_listing_cleanup(&l);
        }
        if (!found && (e2.code == TY_EREDIS || e2.code == TY_EIO)) {
            /* the store could not answer: not the same as "no objects" */
            rc = ty_err_set(err, e2.code, NULL, "%s", e2.msg);
            break;
        }
        if (!found) {
missing:
            s3uri_no_objects_msg(msg, sizeof(msg), uri, ctx->region, op_str(in, "RoleArn"), bucket);
            rc = ty_err_set(err, TY_EINVAL, "InputDataConfig", "%s", msg);
            break;
        }
    }
    objstore_close(os);
    return rc;
}

/* Members that current SageMaker models mark optional (training plans, recipes, instance
 * groups) but that a trainyard job needs: AlgorithmSpecification and ResourceConfig.InstanceType.
 */
static int op_check_needed(json_t *in, struct ty_err *err)
{
    json_t *rc = json_object_get(in, "ResourceConfig");
    if (!json_is_object(json_object_get(in, "AlgorithmSpecification")))
        return ty_err_set(err, TY_EINVAL, "AlgorithmSpecification",
                          "AlgorithmSpecification must be specified");
    if (!json_string_value(json_object_get(rc, "InstanceType"))) {
        if (json_object_get(rc, "InstanceGroups"))
            return ty_err_set(err, TY_EINVAL, "ResourceConfig.InstanceGroups",
                              "ResourceConfig.InstanceGroups is not supported; specify "
                              "InstanceType and InstanceCount");
        return ty_err_set(err, TY_EINVAL, "ResourceConfig.InstanceType",
                          "ResourceConfig.InstanceType must be specified");
    }
    return 0;
}

/* The instances a CreateTrainingJob request asks for: InstanceCount (default 1), or the sum of
   its InstanceGroups' counts. */
static long op_instances(json_t *in)
{
    json_t *rc = json_object_get(in, "ResourceConfig"), *g;
    json_int_t n = json_integer_value(json_object_get(rc, "InstanceCount"));
    size_t i;

    if (!json_object_get(rc, "InstanceType") &&
        json_array_size(json_object_get(rc, "InstanceGroups"))) {
        n = 0;
        json_array_foreach(json_object_get(rc, "InstanceGroups"), i, g) n +=
            json_integer_value(json_object_get(g, "InstanceCount"));
    }
    return n > 0 ? (long)n : 1;
}

int op_training_create(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    static const char *const copied[] = {"AlgorithmSpecification",
                                         "RoleArn",
                                         "HyperParameters",
                                         "InputDataConfig",
                                         "VpcConfig",
                                         "CheckpointConfig",
                                         "DebugHookConfig",
                                         "DebugRuleConfigurations",
                                         "TensorBoardOutputConfig",
                                         "ExperimentConfig",
                                         "ProfilerConfig",
                                         "ProfilerRuleConfigurations",
                                         "Environment",
                                         "RetryStrategy",
                                         "RemoteDebugConfig",
                                         "InfraCheckConfig",
                                         "SessionChainingConfig",
                                         NULL};
    const char *name = op_str(in, "TrainingJobName"), *itype;
    char arn[512];
    json_t *doc, *v, *tr, *tags;
    int rc;

    /* iam:PassRole on RoleArn, after sagemaker:CreateTrainingJob was allowed (as AWS) */
    if ((rc = authz_pass_role(ctx->store, ctx->principal_arn, op_str(in, "RoleArn"),
                              ctx->account_id, err)) != 0)
        return rc;
    if ((rc = op_check_needed(in, err)) != 0)
        return rc;
    if ((rc = op_check_channels(ctx, in, err)) != 0)
        return rc;
    op_arn(ctx, "training-job", name, arn, sizeof(arn));
    doc = json_object();
    json_object_set_new(doc, "TrainingJobName", json_string(name));
    json_object_set_new(doc, "TrainingJobArn", json_string(arn));
    for (int i = 0; copied[i]; i++)
        op_copy(doc, in, copied[i]);
    if (!json_object_get(doc, "HyperParameters"))
        json_object_set_new(doc, "HyperParameters", json_object());

    v = json_deep_copy(json_object_get(in, "ResourceConfig"));
    if (!json_object_get(v, "InstanceCount"))
        json_object_set_new(v, "InstanceCount", json_integer(1));
    json_object_set_new(doc, "ResourceConfig", v);

    v = json_deep_copy(json_object_get(in, "OutputDataConfig"));
    if (!json_object_get(v, "KmsKeyId"))
        json_object_set_new(v, "KmsKeyId", json_string(""));
    json_object_set_new(doc, "OutputDataConfig", v);

    v = json_deep_copy(json_object_get(in, "StoppingCondition"));
    if (!v)
        v = json_object();
    if (!json_object_get(v, "MaxRuntimeInSeconds"))
        json_object_set_new(v, "MaxRuntimeInSeconds", json_integer(86400));
    json_object_set_new(doc, "StoppingCondition", v);

    json_object_set_new(doc, "EnableNetworkIsolation",
                        json_boolean(json_is_true(json_object_get(in, "EnableNetworkIsolation"))));
    json_object_set_new(
        doc, "EnableInterContainerTrafficEncryption",
        json_boolean(json_is_true(json_object_get(in, "EnableInterContainerTrafficEncryption"))));
    json_object_set_new(
        doc, "EnableManagedSpotTraining",
        json_boolean(json_is_true(json_object_get(in, "EnableManagedSpotTraining"))));
    json_object_set_new(doc, "ModelArtifacts", json_pack("{s:s}", "S3ModelArtifacts", ""));
    json_object_set_new(doc, "TrainingJobStatus", json_string("InProgress"));
    json_object_set_new(doc, "SecondaryStatus", json_string("Starting"));
    tr = json_pack("{s:s,s:f,s:s}", "Status", "Starting", "StartTime", ctx->now, "StatusMessage",
                   "Launching requested ML instances");
    json_object_set_new(doc, "SecondaryStatusTransitions", json_pack("[o]", tr));
    /* who asked: fair share orders the queue by it (queue.h), never shown */
    json_object_set_new(doc, "_principal",
                        json_string(ctx->principal_arn ? ctx->principal_arn : ""));
    json_object_set_new(doc, "CreationTime", json_real(ctx->now));
    json_object_set_new(doc, "LastModifiedTime", json_real(ctx->now));
    if (json_object_get(in, "ProfilerConfig")) {
        int disabled =
            json_is_true(json_object_get(json_object_get(in, "ProfilerConfig"), "DisableProfiler"));
        json_object_set_new(doc, "ProfilingStatus", json_string(disabled ? "Disabled" : "Enabled"));
    }

    /* quota: concurrent instances per instance type, reserved atomically (quota.c) */
    v = json_object_get(in, "ResourceConfig");
    itype = json_string_value(json_object_get(v, "InstanceType"));
    if (itype) {
        json_int_t count = json_integer_value(json_object_get(v, "InstanceCount"));
        rc = quota_training_reserve(ctx->store, name, itype, count > 0 ? (long)count : 1, ctx->now,
                                    err);
        if (rc) {
            json_decref(doc);
            return rc;
        }
    }
    /* quota: the creator's concurrent instances (quota.h), reserved atomically too */
    rc = quota_principal_reserve(ctx->store, name, ctx->principal_arn, op_instances(in), ctx->now,
                                 err);
    if (rc) {
        if (itype)
            quota_training_release(ctx->store, name, itype);
        json_decref(doc);
        return rc;
    }
    rc = store_job_create(ctx->store, name, doc, ctx->now, err);
    quota_principal_release(ctx->store, name);
    if (itype)
        quota_training_release(ctx->store, name, itype);
    json_decref(doc);
    if (rc)
        return rc;
    tags = json_object_get(in, "Tags");
    if (json_array_size(tags) > 0) {
        rc = store_tags_add(ctx->store, arn, tags, err);
        if (rc)
            return rc;
    }
    /* a job an IAM user creates belongs to his user profile, as Studio tags it */
    if (attrib_job(ctx->store, ctx->principal_arn, ctx->region, ctx->account_id, arn, tags, err) !=
        0) {
        ty_log(TY_LOG_WARN, "console.attrib_failed", "job=%s error='%s'", name, err->msg);
        ty_err_clear(err);
    }
    *out = json_pack("{s:s}", "TrainingJobArn", arn);
    return 0;
}

static json_t *op_get_job(struct op_ctx *ctx, json_t *in, struct ty_err *err)
{
    json_t *doc = store_job_get(ctx->store, op_str(in, "TrainingJobName"), err);
    if (!doc && err->code == TY_ENOTFOUND)
        ty_err_set(err, TY_EINVAL, "TrainingJobName", "Requested resource not found.");
    return doc;
}

/* Grace after a pool's period before it is shown Terminated although its agent never said so
   (the agent died holding it: agent/warmpool.c ends pools within a second of their period). */
#define OP_WARM_GRACE_S 60

/* An Available warm pool's ResourceRetainedBillableTimeInSeconds grows until it ends: computed
   from _warm_since (the agent's record of when the pool was retained). One past its period by
   more than OP_WARM_GRACE_S is shown Terminated, billed for its period. Returns 1 when doc
   now depends on ctx->now (an Available pool), 0 when it was left as stored. */
static int op_warm_billable(struct op_ctx *ctx, json_t *doc)
{
    json_t *wp = json_object_get(doc, "WarmPoolStatus");
    json_t *since = json_object_get(doc, "_warm_since");
    json_t *keep =
        json_object_get(json_object_get(doc, "ResourceConfig"), "KeepAlivePeriodInSeconds");
    const char *st = json_string_value(json_object_get(wp, "Status"));
    double t0, held;

    if (!st || strcmp(st, "Available") != 0 || !json_is_number(since))
        return 0;
    t0 = json_number_value(since);
    held = ctx->now > t0 ? ctx->now - t0 : 0;
    if (json_is_integer(keep) && held > (double)json_integer_value(keep) + OP_WARM_GRACE_S) {
        json_object_set_new(wp, "Status", json_string("Terminated"));
        held = (double)json_integer_value(keep);
    }
    json_object_set_new(wp, "ResourceRetainedBillableTimeInSeconds",
                        json_integer((json_int_t)held));
    return 1;
}

/*
 * The answer is a pure function of the stored document unless a warm pool is Available (its
 * billable time grows with the clock): such answers are kept as text in the thread's memo
 * (store_jobmemo.h) and served from it while the job's hash stays byte for byte the same.
 */
int op_training_describe(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    struct store_jobmemo *m = ctx->answer_text ? ctx->jobmemo : NULL;
    json_t *doc;
    char *text;
    size_t len;
    int rc =
        store_jobmemo_get(ctx->store, m, op_str(in, "TrainingJobName"), &doc, &text, &len, err);

    if (rc < 0) {
        if (err->code == TY_ENOTFOUND)
            ty_err_set(err, TY_EINVAL, "TrainingJobName", "Requested resource not found.");
        return rc;
    }
    if (rc == 1) {
        ctx->text = text;
        ctx->text_len = len;
        return 0;
    }
    if (op_warm_billable(ctx, doc) || !m) {
        *out = op_public(doc);
        return 0;
    }
    *out = op_public(doc);
    if ((text = json_dumps(*out, OP_JSON_FLAGS))) {
        ctx->text = text;
        ctx->text_len = strlen(text);
        store_jobmemo_put(m, text, ctx->text_len);
        json_decref(*out);
        *out = NULL;
    }
    return 0;
}

static double op_time(json_t *in, const char *key)
{
    json_t *v = json_object_get(in, key);
    if (json_is_number(v))
        return json_number_value(v);
    return 0;
}

int op_training_list(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    static const char *const summary_keys[] = {
        "TrainingJobName", "TrainingJobArn",   "CreationTime",
        "TrainingEndTime", "LastModifiedTime", "TrainingJobStatus",
        "SecondaryStatus", "WarmPoolStatus",   NULL};
    struct store_job_query q;
    const char *order;
    char *next = NULL;
    json_t *jobs, *summaries, *job;
    size_t i;

    memset(&q, 0, sizeof(q));
    q.name_contains = op_str(in, "NameContains");
    q.status_equals = op_str(in, "StatusEquals");
    q.created_after = op_time(in, "CreationTimeAfter");
    q.created_before = op_time(in, "CreationTimeBefore");
    q.modified_after = op_time(in, "LastModifiedTimeAfter");
    q.modified_before = op_time(in, "LastModifiedTimeBefore");
    q.sort_by = op_str(in, "SortBy");
    order = op_str(in, "SortOrder");
    q.ascending = order && strcmp(order, "Ascending") == 0;
    q.max_results = json_object_get(in, "MaxResults")
                        ? (int)json_integer_value(json_object_get(in, "MaxResults"))
                        : 10;
    q.next_token = op_str(in, "NextToken");
    q.warm_pool_status = op_str(in, "WarmPoolStatusEquals");
    jobs = store_job_list(ctx->store, &q, &next, err);
    if (!jobs)
        return -err->code;
    summaries = json_array();
    json_array_foreach(jobs, i, job)
    {
        json_t *s = json_object();
        op_warm_billable(ctx, job);
        for (int k = 0; summary_keys[k]; k++)
            op_copy(s, job, summary_keys[k]);
        json_array_append_new(summaries, s);
    }
    json_decref(jobs);
    *out = json_pack("{s:o}", "TrainingJobSummaries", summaries);
    if (next) {
        json_object_set_new(*out, "NextToken", json_string(next));
        free(next);
    }
    return 0;
}

/* Turns the store's status conflict into AWS's wording for action ("stop", "delete", ...). */
/* The answer to a failed change of job name (err from store_job_transition or _delete): not found,
   or, with what, a job in the wrong status (what ends the message), or the store's error. */
static int op_transition_failed(struct ty_err *err, const char *name, const char *what)
{
    char status[64];
    if (err->code == TY_ENOTFOUND)
        return ty_err_set(err, TY_EINVAL, "TrainingJobName", "Requested resource not found.");
    if (err->code != TY_ECONFLICT || !what)
        return -err->code;
    snprintf(status, sizeof(status), "%.63s", err->msg);
    return ty_err_set(err, TY_EINVAL, "TrainingJobName",
                      "The request was rejected because the training job %s is in status %s%s",
                      name, status, what);
}

int op_training_stop(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *name = op_str(in, "TrainingJobName");
    struct store_transition t;
    json_t *doc;

    /* A job no agent has started yet stops at once; one that runs goes through Stopping
       and its agent finishes the stop (SIGTERM, grace, SIGKILL). Both in the Lua script,
       so an agent claiming the job at the same moment sees one or the other. */
    memset(&t, 0, sizeof(t));
    t.expect = "InProgress";
    t.expect_secondary = "Starting";
    t.status = "Stopped";
    t.secondary = "Stopped";
    t.message = "The job was stopped before it started";
    t.now = ctx->now;
    doc = store_job_transition(ctx->store, name, &t, err);
    if (!doc && err->code == TY_ECONFLICT) {
        ty_err_clear(err);
        memset(&t, 0, sizeof(t));
        t.expect = "InProgress";
        t.status = "Stopping";
        t.secondary = "Stopping";
        t.message = "Stopping the training job";
        t.now = ctx->now;
        doc = store_job_transition(ctx->store, name, &t, err);
    }
    if (!doc)
        return op_transition_failed(err, name, ".");
    json_decref(doc);
    *out = json_object();
    return 0;
}

/* 1 when in only changes ResourceConfig.KeepAlivePeriodInSeconds of a job that has ended with
   a warm pool (cur: its document): SageMaker takes that while the pool is Available. */
static int op_warm_update_only(json_t *in, json_t *cur)
{
    const char *st = json_string_value(json_object_get(cur, "TrainingJobStatus"));
    if (!st || strcmp(st, "InProgress") == 0 || strcmp(st, "Stopping") == 0)
        return 0;
    return json_object_get(in, "ResourceConfig") && !json_object_get(in, "ProfilerConfig") &&
           !json_object_get(in, "ProfilerRuleConfigurations") &&
           !json_object_get(in, "RemoteDebugConfig");
}

/* UpdateTrainingJob of an ended job's KeepAlivePeriodInSeconds (steals cur): only while its warm
   pool is Available; the agent that holds the pool reads the new period at its next sweep, and
   0 ends the pool at once (warmpool.c). */
static int op_warm_update(struct op_ctx *ctx, json_t *in, json_t *cur, json_t **out,
                          struct ty_err *err)
{
    const char *name = op_str(in, "TrainingJobName");
    const char *wst =
        json_string_value(json_object_get(json_object_get(cur, "WarmPoolStatus"), "Status"));
    struct store_transition t;
    json_t *rc, *set, *doc;

    if (!wst || strcmp(wst, "Available") != 0) {
        char status[64], wstatus[64];
        int has_pool = wst != NULL;
        snprintf(status, sizeof(status), "%s",
                 json_string_value(json_object_get(cur, "TrainingJobStatus")));
        snprintf(wstatus, sizeof(wstatus), "%s", wst ? wst : "");
        json_decref(cur);
        if (has_pool)
            return ty_err_set(err, TY_EINVAL, "ResourceConfig",
                              "The warm pool of training job %s is in status %s; "
                              "KeepAlivePeriodInSeconds can only be updated while it is "
                              "Available.",
                              name, wstatus);
        return ty_err_set(err, TY_EINVAL, "TrainingJobName",
                          "The request was rejected because the training job %s is in status %s "
                          "and cannot be updated.",
                          name, status);
    }
    rc = json_deep_copy(json_object_get(cur, "ResourceConfig"));
    json_decref(cur);
    if (!json_is_object(rc)) {
        json_decref(rc);
        rc = json_object();
    }
    json_object_update(rc, json_object_get(in, "ResourceConfig"));
    set = json_pack("{s:o}", "ResourceConfig", rc);
    memset(&t, 0, sizeof(t));
    t.expect = TERMINAL_STATUSES;
    t.set = set;
    t.now = ctx->now;
    doc = store_job_transition(ctx->store, name, &t, err);
    json_decref(set);
    if (!doc)
        return op_transition_failed(err, name, NULL);
    *out = json_pack("{s:O}", "TrainingJobArn", json_object_get(doc, "TrainingJobArn"));
    json_decref(doc);
    return 0;
}

int op_training_update(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *name = op_str(in, "TrainingJobName");
    struct store_transition t;
    json_t *set, *doc, *cur, *v;

    cur = op_get_job(ctx, in, err);
    if (!cur)
        return -err->code;
    if (op_warm_update_only(in, cur))
        return op_warm_update(ctx, in, cur, out, err);
    set = json_object();
    v = json_object_get(in, "ProfilerConfig");
    if (v) {
        json_t *pc = json_deep_copy(json_object_get(cur, "ProfilerConfig"));
        if (!json_is_object(pc)) {
            json_decref(pc);
            pc = json_object();
        }
        json_object_update(pc, v);
        if (json_is_true(json_object_get(v, "DisableProfiler")))
            json_object_set_new(set, "ProfilingStatus", json_string("Disabled"));
        json_object_set_new(set, "ProfilerConfig", pc);
    }
    v = json_object_get(in, "ProfilerRuleConfigurations");
    if (v)
        json_object_set(set, "ProfilerRuleConfigurations", v);
    v = json_object_get(in, "ResourceConfig");
    if (v) {
        json_t *rc = json_deep_copy(json_object_get(cur, "ResourceConfig"));
        json_object_update(rc, v);
        json_object_set_new(set, "ResourceConfig", rc);
    }
    v = json_object_get(in, "RemoteDebugConfig");
    if (v)
        json_object_set(set, "RemoteDebugConfig", v);
    json_decref(cur);

    memset(&t, 0, sizeof(t));
    t.expect = "InProgress";
    t.set = set;
    t.now = ctx->now;
    doc = store_job_transition(ctx->store, name, &t, err);
    json_decref(set);
    if (!doc)
        return op_transition_failed(err, name, " and cannot be updated.");
    *out = json_pack("{s:O}", "TrainingJobArn", json_object_get(doc, "TrainingJobArn"));
    json_decref(doc);
    return 0;
}

int op_training_delete(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *name = op_str(in, "TrainingJobName");
    char arn[512];
    int rc;

    rc = store_job_delete(ctx->store, name, TERMINAL_STATUSES, err);
    if (rc)
        return op_transition_failed(err, name, " and cannot be deleted until it has stopped.");
    op_arn(ctx, "training-job", name, arn, sizeof(arn));
    store_tags_clear(ctx->store, arn, NULL);
    *out = json_object();
    return 0;
}
