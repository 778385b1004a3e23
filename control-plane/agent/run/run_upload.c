/*
 * run_upload.c - what leaves the host for the object store: the model and output artifacts,
 * checkpoints (during training and at the end), the profiler's outputs, and the terminal
 * writes that follow the upload (Completed, Stopped, Failed), plus the agent's own lines in
 * the job's log stream.
 *
 * Owns the runner's objstore handle (its own Redis connection, reopened after a failure).
 * Does not own the transfer itself (transfer.h) nor the staging in (run.c). Runner thread
 * only.
 */
#include "run_int.h"

#include "artifacts.h"
#include "outbox.h"
#include "prof.h"
#include "s3uri.h"
#include "ty_log.h"

#include <string.h>
#include <unistd.h>

#define MSG_FAILED  "Training job failed"
#define MSG_STOPPED "Training job stopped"

/* The objstore handle of this runner, on its own Redis connection (opened on first use, and
   again after a failure). NULL with err when Redis is away. */
struct objstore *run__objstore(struct run_ctx *r, struct ty_err *err)
{
    if (r->io.os)
        return r->io.os;
    if (!r->io.os_store && !(r->io.os_store = store_open(r->a->cfg.redis_url, err)))
        return NULL;
    r->io.os = objstore_open(r->a->cfg.s3_dir, r->io.os_store, err);
    if (r->io.os && r->a->cfg.s3_remote &&
        objstore_use_remote(r->io.os, r->a->cfg.s3_remote, err) != 0) {
        objstore_close(r->io.os);
        r->io.os = NULL;
    }
    if (!r->io.os) {
        store_close(r->io.os_store);
        r->io.os_store = NULL;
    }
    return r->io.os;
}

/* Drops the objstore handle after an error, so that the next use reconnects. */
void run__objstore_reset(struct run_ctx *r)
{
    objstore_close(r->io.os);
    r->io.os = NULL;
    store_close(r->io.os_store);
    r->io.os_store = NULL;
}

/* Appends one line to the job's log stream now (progress of downloads and uploads). */
void run__log_line(void *ud, const char *line)
{
    struct run_ctx *r = ud;
    struct run_host *h = &r->h[r->log_host];
    struct ty_err err;
    json_t *ev;

    ty_log(TY_LOG_INFO, "agent.job.progress", "job=%s host=%s line='%s'", r->job, h->name, line);
    if (!r->io.s && !r->io.ob)
        run__store_reopen(r);
    if ((int64_t)ty_wall_ms() > h->last_log_ts)
        h->last_log_ts = (int64_t)ty_wall_ms();
    ev = json_pack("[{s:I, s:s}]", "timestamp", (json_int_t)h->last_log_ts, "message", line);
    if (!ev)
        return;
    ty_err_clear(&err);
    if (r->io.ob || !r->io.s ||
        store_log_append(r->io.s, RUN_LOG_GROUP, h->stream, ev, &err) != 0) {
        /* Redis away (or the outbox not yet replayed): the line goes behind the outbox */
        if (!r->io.ob && r->io.s)
            ty_log(TY_LOG_WARN, "agent.logs.append_failed", "job=%s stream='%s' error='%s'", r->job,
                   h->stream, err.msg);
        if (outbox_logs(r->a->cfg.data_dir, r->job, r->region, r->account, h->stream, ev, &err) ==
            0)
            r->io.ob = 1;
        run__outbox_drain(r);
    }
    json_decref(ev);
}

void run__transfer_init(struct run_ctx *r, struct transfer *t, struct objstore *os)
{
    memset(t, 0, sizeof(*t));
    t->os = os;
    t->region = r->region;
    t->log = run__log_line;
    t->ud = r;
    t->authz = r->io.os_store; /* the job's role authorises every object (access.h) */
    t->role_arn = r->sp.role_arn;
}

/* Host h's checkpoint folder as a root the container cannot replace (h->dir for a LocalPath
   under /opt/ml, else the folder bound at LocalPath) and a path below it. OUT: *rel. */
const char *run__ckpt_root(const struct run_ctx *r, const struct run_host *h, const char **rel)
{
    if (strncmp(r->sp.checkpoint_local, "/opt/ml/", 8) == 0) {
        *rel = r->sp.checkpoint_local + 8;
        return h->dir;
    }
    *rel = "";
    return h->ckpt_dir;
}

/* Uploads the checkpoint directory's new and changed files (all of them when final). Best
   effort: a failure is logged, the job goes on. */
void run__checkpoints_sync(struct run_ctx *r, int final)
{
    struct transfer t;
    struct ty_err err;
    struct objstore *os;
    int count = 0;

    if (!r->sp.checkpoint_uri[0] || !r->h[0].ckpt_seen)
        return;
    if (!(os = run__objstore(r, &err))) {
        ty_log(TY_LOG_WARN, "agent.checkpoints.store", "job=%s error='%s'", r->job, err.msg);
        return;
    }
    run__transfer_init(r, &t, os);
    t.log = NULL;
    /* every host syncs to the same S3 URI, as on SageMaker */
    for (int i = 0; i < r->nh; i++) {
        int c = 0;
        if (!r->h[i].ckpt_seen)
            continue;
        const char *rel, *root = run__ckpt_root(r, &r->h[i], &rel);
        if (transfer_upload_tree(&t, root, rel, r->sp.checkpoint_uri, r->h[i].ckpt_seen, 0, &c,
                                 &err) != 0) {
            ty_log(TY_LOG_WARN, "agent.checkpoints.upload_failed", "job=%s host=%s error='%s'",
                   r->job, r->h[i].name, err.msg);
            if (err.code == TY_EREDIS || err.code == TY_EIO) {
                run__objstore_reset(r);
                break;
            }
        }
        count += c;
    }
    if (count > 0 || final)
        ty_log(TY_LOG_INFO, "agent.checkpoints.uploaded", "job=%s files=%d final=%d", r->job, count,
               final);
    if (count > 0 && final)
        run__log_line(r, "Uploaded checkpoints");
}

/* What run_profiler_put writes through. */
struct run_prof_put {
    struct transfer *t;
    struct run_ctx *r;
};

/* prof_put_fn: one file into the object store through the job's transfer (ud: struct
   run_prof_put); the dashboard's ETag is kept (r->prof.report_etag) so that the console shows
   only the bytes the agent wrote (console_job.c). */
static int run_profiler_put(void *ud, const char *path, const char *uri, const char *type)
{
    struct run_prof_put *pp = ud;
    char bucket[256], key[1400];
    struct objstore_meta meta;
    struct ty_err err;

    if (s3uri_parse(uri, bucket, sizeof(bucket), key, sizeof(key)) != 0 ||
        transfer_put_file(pp->t, path, bucket, key, type, &err) != 0) {
        ty_log(TY_LOG_WARN, "agent.profiler.put_failed", "uri='%s'", uri);
        return -1;
    }
    if (strcmp(type, "text/html") == 0) {
        memset(&meta, 0, sizeof(meta));
        if (objstore_head(pp->t->os, bucket, key, &meta, &err) == 0)
            snprintf(pp->r->prof.report_etag, sizeof(pp->r->prof.report_etag), "%s", meta.etag);
        objstore_meta_cleanup(&meta);
    }
    return 0;
}

/* While training, uploads the profiler's new or grown system-metrics files (first host's
   output/profiler/system/...) under <ProfilerConfig.S3OutputPath>/<job>/profiler-output/system/,
   as SageMaker syncs them during the run: the console's live system charts read them there.
   Best effort; the end of the job uploads everything again. */
void run__profiler_live(struct run_ctx *r)
{
    char uri[1400];
    struct transfer t;
    struct ty_err err;
    struct objstore *os;
    size_t ul;
    int count = 0;

    if (!r->prof.on || !r->sp.profiler_uri[0] || !r->h[0].dir[0])
        return;
    if (!r->prof.seen && !(r->prof.seen = json_object()))
        return;
    ul = strlen(r->sp.profiler_uri);
    while (ul > 0 && r->sp.profiler_uri[ul - 1] == '/')
        ul--;
    run__fmt(uri, sizeof(uri), "%.*s/%s/profiler-output/system/", (int)ul, r->sp.profiler_uri,
             r->job);
    if (!(os = run__objstore(r, &err)))
        return;
    run__transfer_init(r, &t, os);
    t.log = NULL;
    if (transfer_upload_tree(&t, r->h[0].dir, "output/profiler/system", uri, r->prof.seen, 0,
                             &count, &err) != 0) {
        ty_log(TY_LOG_WARN, "agent.profiler.live_failed", "job=%s error='%s'", r->job, err.msg);
        if (err.code == TY_EREDIS || err.code == TY_EIO)
            run__objstore_reset(r);
    }
}

/* Uploads /opt/ml/output/profiler/ under <ProfilerConfig.S3OutputPath>/<job>/profiler-output/
   when the job has a profiler path and wrote something there, then the job's dashboard and
   merged trace (prof.h). Best effort. */
static void run_profiler_upload(struct run_ctx *r)
{
    char src[PATH_MAX], uri[1400];
    struct transfer t;
    struct ty_err err;
    struct objstore *os;
    size_t ul;
    int count = 0;

    if (!r->sp.profiler_uri[0])
        return;
    run__fmt(src, sizeof(src), "%s/output/profiler", r->h[0].dir);
    if (access(src, F_OK) != 0)
        return;
    ul = strlen(r->sp.profiler_uri);
    while (ul > 0 && r->sp.profiler_uri[ul - 1] == '/')
        ul--;
    run__fmt(uri, sizeof(uri), "%.*s/%s/profiler-output/", (int)ul, r->sp.profiler_uri, r->job);
    if (!(os = run__objstore(r, &err)))
        return;
    run__transfer_init(r, &t, os);
    t.log = NULL;
    if (transfer_upload_tree(&t, r->h[0].dir, "output/profiler", uri, NULL, 0, &count, &err) != 0)
        ty_log(TY_LOG_WARN, "agent.profiler.upload_failed", "job=%s error='%s'", r->job, err.msg);
    else
        ty_log(TY_LOG_INFO, "agent.profiler.uploaded", "job=%s files=%d uri='%s'", r->job, count,
               uri);
    if (r->prof.on) {
        struct run_prof_put pp = {&t, r};
        run__fmt(uri, sizeof(uri), "%.*s/%s", (int)ul, r->sp.profiler_uri, r->job);
        r->prof.report_etag[0] = '\0';
        prof_report_publish(r->h[0].dir, r->prof.rules, uri, run_profiler_put, &pp);
        if (r->prof.report_etag[0] && r->io.s) { /* best effort: else a download, not a view */
            struct store_transition tr;
            json_t *set = json_pack("{s:s}", "_profiler_report_etag", r->prof.report_etag);
            memset(&tr, 0, sizeof(tr));
            tr.set = set;
            tr.now = ty_wall_s();
            ty_err_clear(&err);
            json_decref(set ? store_job_transition(r->io.s, r->job, &tr, &err) : NULL);
            json_decref(set);
        }
    }
}

/*
 * Uploads the job's outputs into the object store under <S3OutputPath>/<job>/output/:
 * /opt/ml/model (when with_model) and /opt/ml/output/data as model.tar.gz and output.tar.gz,
 * or, with OutputDataConfig.CompressionType NONE, file by file under output/model/ and
 * output/data/ (as SageMaker's uncompressed upload mode does); for the model, adds
 * ModelArtifacts to set. First the final checkpoint sync and the profiler output (also for a
 * job that failed or was stopped).
 * Returns 0, or -1 with reason (size n) filled.
 */
static int run_upload_once(struct run_ctx *r, json_t *set, int with_model, char *reason, size_t n,
                           int *transient)
{
    char bucket[256], prefix[1100], key[1400], tmp[PATH_MAX], uri[1700];
    struct transfer t;
    struct ty_err err;
    struct objstore *os;

    run__checkpoints_sync(r, 1);
    if (with_model) {
        json_t *rs = prof_rules_eval(r->h[0].dir, r->prof.rules, ty_wall_s());
        if (rs && set)
            json_object_set_new(set, "ProfilerRuleEvaluationStatuses", rs);
        else
            json_decref(rs);
    }
    run_profiler_upload(r); /* a failed job's profile is the one most worth reading */
    if (!r->sp.output_path[0])
        return 0; /* nothing to upload to; the server requires OutputDataConfig anyway */
    if (s3uri_parse(r->sp.output_path, bucket, sizeof(bucket), prefix, sizeof(prefix))) {
        run__fmt(reason, n, "ClientError: OutputDataConfig.S3OutputPath '%s' is not a valid S3 URI",
                 r->sp.output_path);
        return -1;
    }
    if (!(os = run__objstore(r, &err))) {
        run__fmt(reason, n, "InternalServerError: object store: %s", err.msg);
        *transient = run__transient(r, &err);
        return -1;
    }
    run__transfer_init(r, &t, os);
    for (int i = with_model ? 0 : 1; i < 2; i++) {
        const char *file = i == 0 ? (r->sp.output_uncompressed ? "model" : "model.tar.gz")
                                  : (r->sp.output_uncompressed ? "data" : "output.tar.gz");
        int rc;
        if (artifacts_output_key(prefix, r->sp.name, file, key, sizeof(key)) != 0) {
            run__fmt(reason, n, "ClientError: S3OutputPath too long");
            return -1;
        }
        /* algo-1's model and output data, as SageMaker keeps them for a multi-host job */
        const char *src = i == 0 ? "model" : "output/data"; /* below h[0].dir, confined */
        run__fmt(uri, sizeof(uri), "s3://%s/%s", bucket, key);
        if (r->sp.output_uncompressed) {
            int count = 0;
            rc = transfer_upload_tree(&t, r->h[0].dir, src, uri, NULL, 0, &count, &err);
        } else {
            run__fmt(tmp, sizeof(tmp), "%s/%s", r->dir, file);
            rc = artifacts_targz(r->h[0].dir, src, tmp, &err);
            if (rc == 0)
                rc = transfer_put_file(&t, tmp, bucket, key, NULL, &err);
            unlink(tmp);
        }
        if (rc != 0) {
            run__fmt(reason, n, "InternalServerError: cannot upload %s: %s", file, err.msg);
            ty_log(TY_LOG_ERROR, "agent.job.upload_failed", "job=%s file=%s error='%s'", r->job,
                   file, err.msg);
            run__objstore_reset(r);
            *transient = run__transient(r, &err);
            return -1;
        }
        ty_log(TY_LOG_INFO, "agent.job.uploaded", "job=%s uri='%s'", r->job, uri);
        if (i == 0 && set)
            json_object_set_new(set, "ModelArtifacts", json_pack("{s:s}", "S3ModelArtifacts", uri));
    }
    return 0;
}

/* run_upload_once, again while Redis is away (capped, jittered backoff), within the job's
   remaining time (run__retry_deadline). Returns 0, or -1 with reason (size n) filled. */
int run__upload(struct run_ctx *r, json_t *set, int with_model, char *reason, size_t n)
{
    double deadline = run__retry_deadline(r);
    int attempt = 0, transient = 0;

    while (run_upload_once(r, set, with_model, reason, n, &transient) != 0) {
        if (!transient || run__backoff(r, deadline, &attempt) != 0)
            return -1;
        ty_log(TY_LOG_INFO, "agent.job.upload_retry", "job=%s attempt=%d", r->job, attempt);
        transient = 0;
    }
    if (attempt > 0)
        ty_log(TY_LOG_INFO, "agent.job.upload_recovered", "job=%s attempts=%d", r->job,
               attempt + 1);
    return 0;
}

/* Final Stopped: expects Stopping (or InProgress), keeps a MaxRuntimeExceeded secondary. */
enum run_end run__finish_stopped(struct run_ctx *r, int maxruntime, json_t *set)
{
    if (!set)
        set = json_object();
    run__set_times(r, set);
    run__set_metrics(r, set);
    return run__transition(r, "Stopping,InProgress", "Stopped", maxruntime ? NULL : "Stopped",
                           MSG_STOPPED, set) == RUN_TR_ABANDON
               ? RUN_END_PENDING
               : RUN_END_ACK;
}

/* Final Failed with reason; a job being stopped ends Stopped instead. */
enum run_end run__finish_failed(struct run_ctx *r, const char *reason)
{
    char why[RUN_REASON_MAX + 1];
    json_t *set = json_object();
    enum run_tr tr;

    run__fmt(why, sizeof(why), "%s", reason);
    stage_utf8_fix(why, strlen(why));
    json_object_set_new(set, "FailureReason", json_string(why));
    run__set_times(r, set);
    run__set_metrics(r, set);
    if (r->t_start > 0) { /* the rules set InProgress at Training end too */
        json_t *rs = prof_rules_eval(r->h[0].dir, r->prof.rules, ty_wall_s());
        if (rs)
            json_object_set_new(set, "ProfilerRuleEvaluationStatuses", rs);
    }
    ty_log(TY_LOG_INFO, "agent.job.failed", "job=%s reason='%s'", r->job, why);
    tr = run__transition(r, "InProgress", "Failed", "Failed", MSG_FAILED, set);
    if (tr == RUN_TR_CONFLICT && strcmp(r->cur, "Stopping") == 0)
        return run__finish_stopped(r, 0, NULL);
    return tr == RUN_TR_ABANDON ? RUN_END_PENDING : RUN_END_ACK;
}

/* Ends a run whose early transition tr was not applied: the agent stopping leaves the entry
   pending; a conflict with a job being stopped ends it Stopped (it never ran); a job already
   terminal, or gone, is acknowledged as it is. */
enum run_end run__settle(struct run_ctx *r, enum run_tr tr)
{
    if (tr == RUN_TR_ABANDON)
        return RUN_END_PENDING;
    if (tr == RUN_TR_CONFLICT && strcmp(r->cur, "Stopping") == 0)
        return run__finish_stopped(r, 0, NULL);
    return RUN_END_ACK;
}
