/*
 * run.c - one training job's run on this agent, from the claimed queue entry to its ack: the
 * main sequence (run_job: read the job, stage, create, supervise, conclude), the warm-pool
 * hand-over (warmpool.h), the job's input staging and the run_thread entry point.
 *
 * The run's other concerns live beside it and share run_int.h: the log reader and metric
 * pumping (run_logs.c), the job document's transitions and outbox (run_status.c), the uploads
 * and terminal writes (run_upload.c), the containers, sandboxes and credentials
 * (run_container.c) and re-attaching to a job an earlier agent ran (run_reattach.c).
 * Does not own claiming, the heartbeat or the agent's lifetime (agent.c).
 * Threads: the runner (run_thread) and one log reader per container; they share a refcounted
 * struct run_logs so that a runner abandoning its job (agent stopping) can leave the reader
 * detached. Each thread has its own store and docker connection.
 * Invariant: the queue entry is acked only once the job document is terminal (or gone); a job
 * abandoned because the agent stops keeps its entry pending for a reclaim.
 */
#include "run_int.h"

#include "access.h"
#include "fence.h"
#include "instances.h"
#include "metricdefs.h"
#include "outbox.h"
#include "prof.h"
#include "reap.h"
#include "reattach.h"
#include "spare.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "ty_time.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define RUN_STORE_RETRIES 5
#define MSG_STARTING      "Preparing the instances for training"
#define MSG_RESTARTING    "Restarting the training job after its agent was lost"
#define MSG_DOWNLOAD      "Downloading input data"
#define MSG_TRAINING      "Training image download completed. Training in progress."
#define MSG_UPLOADING     "Uploading generated training model"
#define MSG_COMPLETED     "Training job completed"
#define MSG_MAXRUNTIME    "Training job reached the maximum runtime and was stopped"

/* 1 when the job's image is the runtime image, which ships typrof and libtyprof.so. */
int run__image_has_typrof(const struct run_ctx *r)
{
    const char *ri = r->a->cfg.runtime_image, *img = r->sp.image;

    if (strncmp(img, "localhost/", 10) == 0)
        img += 10;
    if (ri && ri[0])
        return strcmp(img, ri) == 0 ||
               (strncmp(ri, "localhost/", 10) == 0 && strcmp(img, ri + 10) == 0);
    return strncmp(img, "trainyard/runtime:", 18) == 0;
}

/* snprintf for text that may be cut short on purpose (reasons, names). */
__attribute__((format(printf, 3, 4))) int run__fmt(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    int w;

    va_start(ap, fmt);
    w = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return w;
}

/* ---- warm pools (warmpool.h) ---- */

/* Moves the hosts' sandboxes and the job network into r->warm.keep instead of removing them, when
   the job may retain its instance (a KeepAlivePeriodInSeconds at claim, or a warm pool it runs
   on); run_warm_end() decides once the job has ended. The relays stop and the credentials are
   revoked as for any job: nothing of the job but its network namespace stays. */
static void run_warm_detach(struct run_ctx *r)
{
    if ((r->warm.keep_alive <= 0 && !r->warm.reused) || !r->warm.key[0] ||
        atomic_load(&r->a->stopping))
        return;
    r->warm.keep.nh = r->nh;
    run__fmt(r->warm.keep.job, sizeof(r->warm.keep.job), "%s", r->job);
    run__fmt(r->warm.keep.key, sizeof(r->warm.keep.key), "%s", r->warm.key);
    for (int i = 0; i < r->nh; i++) {
        run__fmt(r->warm.keep.sbid[i], sizeof(r->warm.keep.sbid[i]), "%s", r->h[i].sbid);
        r->h[i].sbid[0] = '\0';
    }
    if (r->net[0]) {
        run__fmt(r->warm.keep.net, sizeof(r->warm.keep.net), "%s", r->net);
        r->net[0] = '\0';
    }
}

/* Takes a retained instance whose key equals the job's, when one is on this agent and its
   sandboxes still run: the hosts get its sandboxes (and network), its job's document says
   Reused. A pool found broken is terminated and the job starts cold. */
static void run_warm_take(struct run_ctx *r)
{
    struct warmpool_entry *e;
    struct docker_state st;
    struct ty_err err;
    double t0;
    int ok = 1;

    if (!r->warm.key[0] || !(e = malloc(sizeof(*e))))
        return;
    if (!warmpool_take(r->a->wp, r->warm.key, e)) {
        free(e);
        return;
    }
    if (!r->io.s)
        run__store_reopen(r);
    t0 = ty_wall_s();
    ok = e->nh == r->nh;
    for (int i = 0; ok && i < e->nh; i++)
        if (e->sbid[i][0] && (docker_inspect(r->io.d, e->sbid[i], &st, &err) != 0 || !st.running))
            ok = 0;
    ty_log(TY_LOG_INFO, "agent.warmpool.checked", "job=%s pool=%s ok=%d check_ms=%.0f", r->job,
           e->job, ok, (ty_wall_s() - t0) * 1000);
    if (!ok) {
        ty_log(TY_LOG_WARN, "agent.warmpool.broken", "job=%s pool=%s note='starting cold'", r->job,
               e->job);
        warmpool_terminate(r->io.d, r->io.s, e, ty_wall_s());
        free(e);
        return;
    }
    for (int i = 0; i < r->nh; i++)
        run__fmt(r->h[i].sbid, sizeof(r->h[i].sbid), "%s", e->sbid[i]);
    if (e->net[0])
        run__fmt(r->net, sizeof(r->net), "%s", e->net);
    r->warm.reused = 1;
    warmpool_reused(r->io.s, e, r->job, ty_wall_s());
    free(e);
}

/* After the job ended (acked: terminal): retains r->warm.keep when SageMaker would
   (warmpool_retains), else removes it, recording Terminated when the job ran on a pool. */
static void run_warm_end(struct run_ctx *r, int acked)
{
    struct ty_err err;
    json_t *doc = NULL;
    int retain;

    if (r->warm.keep.nh == 0 && !r->warm.reused)
        return;
    if (!r->warm.keep.job[0]) {
        run__fmt(r->warm.keep.job, sizeof(r->warm.keep.job), "%s", r->job);
        run__fmt(r->warm.keep.key, sizeof(r->warm.keep.key), "%s", r->warm.key);
    }
    if (!r->io.s)
        run__store_reopen(r);
    if (acked && !r->io.ob && r->io.s && !atomic_load(&r->a->stopping))
        doc = store_job_get(r->io.s, r->job, &err);
    retain = doc && r->t_start > 0 && r->warm.keep.nh > 0 && warmpool_retains(doc);
    json_decref(doc);
    r->warm.keep.since = ty_wall_s();
    if (retain && warmpool_put(r->a->wp, r->io.s, &r->warm.keep, &err) == 0) {
        memset(&r->warm.keep, 0, sizeof(r->warm.keep));
        return;
    }
    if (r->warm.reused && acked)
        warmpool_terminate(r->io.d, r->io.s, &r->warm.keep, r->warm.keep.since);
    else
        warmpool_release(r->io.d, &r->warm.keep);
    memset(&r->warm.keep, 0, sizeof(r->warm.keep));
}

/* Removes every host's container (after its logs were read) and the job's network. */
static void run_remove_containers(struct run_ctx *r)
{
    struct ty_err err;

    for (int i = 0; i < r->nh; i++)
        if (r->h[i].cid[0] && docker_remove(r->io.d, r->h[i].cid, 1, &err) == 0)
            r->h[i].cid[0] = '\0';
    run_warm_detach(r);
    run__relay_cleanup(r, 1);
    if (r->net[0] && docker_network_remove(r->io.d, r->net, &err) != 0)
        ty_log(TY_LOG_WARN, "agent.job.network_remove_failed", "job=%s network=%s error='%s'",
               r->job, r->net, err.msg);
    if (r->net[0])
        run__unfence(r);
}

/* Runs the container phase: from Training to the final status. Returns 0 when the job reached a
   terminal state (ack), -1 to leave the entry pending. */
/* Writes the job's run record (reattach.h): each host's stream and, the first time (before the
   containers start), how many events it holds then; with_exits, the hosts' ends too. Best
   effort: without it a restarted agent reads a host's logs again from the start. */
static void run_record(struct run_ctx *r, int with_exits)
{
    struct reattach_record rec;
    struct ty_err err;

    memset(&rec, 0, sizeof(rec));
    rec.nh = r->nh;
    rec.t_start = r->t_start;
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        struct reattach_rec_host *rh = &rec.h[i];
        if (!with_exits) {
            /* lines still in the outbox would land after the count: unknown then */
            long n = r->io.s && (!r->io.ob || run__outbox_drain(r) == 0)
                         ? store_log_count(r->io.s, RUN_LOG_GROUP, h->stream, &err)
                         : -1;
            h->log_base = n >= 0 ? n : -1;
        }
        run__fmt(rh->stream, sizeof(rh->stream), "%s", h->stream);
        rh->log_base = h->log_base;
        if (h->last_log_ts > rec.last_log_ts)
            rec.last_log_ts = h->last_log_ts;
        if (with_exits && h->exited) {
            rh->exited = 1;
            rh->exit_code = h->st.exit_code;
            rh->oom_killed = h->st.oom_killed;
        }
    }
    if (reattach_record_write(r->dir, &rec) != 0)
        ty_log(TY_LOG_WARN, "agent.job.record_failed", "job=%s error='%s'", r->job,
               strerror(errno));
}

static enum run_end run_container(struct run_ctx *r)
{
    char reason[RUN_REASON_MAX + 1] = "";
    struct ty_err err;
    enum run_tr tr;
    json_t *set;
    int rc;

    if (r->nh > 1 && !r->sp.network_isolation && !r->net[0]) {
        json_t *labels = json_pack("{s:s, s:s}", "trainyard.job", r->job, "trainyard.deployment",
                                   r->a->deployment);
        char br[FENCE_IFNAME_MAX];
        /* internal (no route out) and fenced from the host's own services */
        reap_job_name(r->a->deployment, r->job, r->net, sizeof(r->net));
        fence_ifname(r->net, br, sizeof(br));
        rc = docker_network_create(r->io.d, r->net, 1, br, labels, &err);
        json_decref(labels);
        if (rc == 0 && (rc = fence_bridge(br, &err)) != 0)
            docker_network_remove(r->io.d, r->net, NULL);
        if (rc != 0) {
            r->net[0] = '\0';
            run__fmt(reason, sizeof(reason),
                     "InternalServerError: cannot create the network of the job's %d hosts: %s",
                     r->nh, err.msg);
            return run__finish_failed(r, reason);
        }
    }
    {
        double deadline = run__retry_deadline(r);
        int attempt = 0;
        while ((rc = run__creds_grant(r, reason, sizeof(reason))) != 0 && run__redis_down(r) &&
               run__backoff(r, deadline, &attempt) == 0)
            ty_log(TY_LOG_INFO, "agent.job.creds_retry", "job=%s attempt=%d", r->job, attempt);
    }
    if (rc != 0) {
        run_remove_containers(r);
        return run__finish_failed(r, reason);
    }
    for (int i = 0; i < r->nh; i++)
        run__sandbox(r, &r->h[i]);
    for (int i = 0; i < r->nh; i++) {
        if (run__create(r, &r->h[i], reason, sizeof(reason)) != 0) {
            run_remove_containers(r);
            return run__finish_failed(r, reason);
        }
    }
    r->t_start = ty_wall_s();
    run__use_record(r);
    run_record(r, 0); /* before anything runs: a restarted agent takes the containers over */
    set = json_pack("{s:f}", "TrainingStartTime", r->t_start);
    {
        json_t *rs = prof_rules_in_progress(r->prof.rules, r->t_start);
        if (rs && set)
            json_object_set_new(set, "ProfilerRuleEvaluationStatuses", rs);
        else
            json_decref(rs);
    }
    tr = run__transition(r, "InProgress", NULL, "Training", MSG_TRAINING, set);
    if (tr != RUN_TR_DONE)
        return run__settle(r, tr);
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (docker_start(r->io.d, h->cid, &err) != 0) {
            run__fmt(reason, sizeof(reason), "ClientError: cannot start the training container: %s",
                     err.msg);
            r->t_end = ty_wall_s();
            if (run__kill(r) != 0)
                return RUN_END_PENDING;
            run__drain_logs(r);
            run_remove_containers(r);
            return run__finish_failed(r, reason);
        }
        ty_log(TY_LOG_INFO, "agent.job.started", "job=%s host=%s container=%.12s", r->job, h->name,
               h->cid);
        run__relay_late(r, h);
        if (run__start_logs(r, h, 0) != 0)
            ty_log(TY_LOG_ERROR, "agent.logs.start_failed", "job=%s host=%s", r->job, h->name);
    }
    spare_kick(r->a->spare); /* the next job's spare, now that the engine is free */
    return run__conclude(r, run__supervise(r));
}

/* From the end of supervision (out) to the final status: stops what still runs, reads the rest of
   the logs, removes the containers, uploads and records the end. Returns 0 when the job reached a
   terminal state or is gone (RUN_END_ACK), RUN_END_PENDING when the agent stops first. */
enum run_end run__conclude(struct run_ctx *r, enum run_outcome out)
{
    char reason[RUN_REASON_MAX + 1] = "";
    enum run_tr tr;
    json_t *set;
    int failed = 0;

    if (out == RUN_ABANDON)
        return RUN_END_PENDING;
    if (out == RUN_MAXRUNTIME) {
        tr = run__transition(r, "InProgress", "Stopping", "MaxRuntimeExceeded", MSG_MAXRUNTIME,
                             NULL);
        if (tr == RUN_TR_ABANDON)
            return RUN_END_PENDING;
        if (tr == RUN_TR_CONFLICT && strcmp(r->cur, "Stopping") != 0)
            return RUN_END_ACK; /* terminal already (or gone) */
        if (tr == RUN_TR_CONFLICT)
            out = RUN_STOPPED;
    }
    if (out != RUN_EXITED && run__kill(r) != 0)
        return RUN_END_PENDING;
    if (out == RUN_HOST_FAILED)
        out = RUN_EXITED;
    r->t_end = ty_wall_s();
    run__drain_logs(r);
    if (r->h[0].logs && metricdefs_count(r->h[0].logs->metrics) > 0) {
        /* the last values, recorded before the upload (in the outbox while Redis is away):
           an agent that takes the ended job over after this one died reads no log again */
        json_t *fm = json_object();
        run__set_metrics(r, fm);
        if (json_object_size(fm) > 0)
            run__transition(r, "InProgress,Stopping", NULL, NULL, NULL, fm);
        else
            json_decref(fm);
    }
    for (int i = 0; i < r->nh; i++) {
        failed |= run__host_failed(&r->h[i]);
        ty_log(TY_LOG_INFO, "agent.job.exited", "job=%s host=%s exit_code=%d oom=%d outcome=%d",
               r->job, r->h[i].name, r->h[i].st.exit_code, r->h[i].st.oom_killed, (int)out);
    }
    run_record(r, 1); /* their ends outlive the containers, should this agent die now */
    /* Exited and their logs read: gone before the job turns terminal, so that nothing is left
       behind should this process die between the final transition and the ack. */
    run_remove_containers(r);

    if (out != RUN_EXITED) {
        set = json_object();
        if (run__upload(r, set, 1, reason, sizeof(reason)) != 0)
            ty_log(TY_LOG_WARN, "agent.job.upload_on_stop_failed", "job=%s reason='%s'", r->job,
                   reason);
        return run__finish_stopped(r, out == RUN_MAXRUNTIME, set);
    }
    if (failed) {
        char ignored[RUN_REASON_MAX + 1];
        run__failure_reason(r, reason, sizeof(reason));
        run__upload(r, NULL, 0, ignored, sizeof(ignored)); /* output.tar.gz, best effort */
        return run__finish_failed(r, reason);
    }
    tr = run__transition(r, "InProgress", NULL, "Uploading", MSG_UPLOADING, NULL);
    if (tr == RUN_TR_ABANDON)
        return RUN_END_PENDING;
    set = json_object();
    if (run__upload(r, set, 1, reason, sizeof(reason)) != 0) {
        json_decref(set);
        return run__finish_failed(r, reason);
    }
    if (tr == RUN_TR_CONFLICT) { /* stopped while it finished: Stopped, with its model */
        if (strcmp(r->cur, "Stopping") == 0)
            return run__finish_stopped(r, 0, set);
        json_decref(set);
        return RUN_END_ACK;
    }
    run__set_times(r, set);
    run__set_metrics(r, set);
    tr = run__transition(r, "InProgress", "Completed", "Completed", MSG_COMPLETED, set);
    if (tr == RUN_TR_CONFLICT && strcmp(r->cur, "Stopping") == 0) {
        set = json_object();
        run__upload(r, set, 1, reason, sizeof(reason));
        return run__finish_stopped(r, 0, set);
    }
    return tr == RUN_TR_ABANDON ? RUN_END_PENDING : RUN_END_ACK;
}

/* Names host h's checkpoint folder: <h->dir>/<LocalPath under /opt/ml>, else
   <h->vol>/checkpoints: on the host's volume, beside /opt/ml, not in it. */
void run__ckpt_dir(struct run_ctx *r, struct run_host *h)
{
    if (strncmp(r->sp.checkpoint_local, "/opt/ml/", 8) == 0)
        run__fmt(h->ckpt_dir, sizeof(h->ckpt_dir), "%s/%s", h->dir, r->sp.checkpoint_local + 8);
    else
        run__fmt(h->ckpt_dir, sizeof(h->ckpt_dir), "%s/checkpoints", h->vol);
}

/*
 * Stages host h's data through the object store: its channels (its share of ShardedByS3Key
 * ones), script-mode code, checkpoints. The checkpoint directory is <h->dir>/<LocalPath under
 * /opt/ml>, or <h->vol>/checkpoints bound at LocalPath.
 * Returns 0 or a negative code with err->msg a FailureReason.
 */
static int run_stage_data(struct run_ctx *r, struct run_host *h, struct ty_err *err)
{
    struct transfer t;
    struct objstore *os;
    int rc, count = 0;

    run__ckpt_dir(r, h);
    /* the role must be allowed to write what the job will write: refused before it runs */
    if (h->index == 0 && (!(os = run__objstore(r, err)) ||
                          (rc = access_job_outputs(r->io.os_store, &r->sp, err)) != 0))
        return os ? rc
                  : ty_err_set(err, TY_EIO, NULL, "InternalServerError: object store: %s",
                               err->msg);
    if (json_array_size(r->sp.channels) == 0 && !r->sp.checkpoint_uri[0] &&
        !json_object_get(r->sp.hyperparameters, "sagemaker_submit_directory"))
        return 0;
    if (!(os = run__objstore(r, err)))
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: object store: %s", err->msg);
    r->log_host = h->index;
    run__transfer_init(r, &t, os);
    rc = transfer_channels(&t, &r->sp, h->dir, r->dir, h->index, r->nh, err);
    if (rc == 0)
        rc = transfer_code(&t, &r->sp, h->dir, err);
    if (rc == 0 && r->sp.checkpoint_uri[0]) {
        const char *rel, *root = run__ckpt_root(r, h, &rel);
        /* under /opt/ml: below the job's own tree, never through a link it planted; elsewhere:
           the agent's own folder, which the container sees only as the bind's source */
        if (rel[0])
            rc = stage_ckpt_dir(root, rel, r->sp.checkpoint_local, err);
        else if (ty_mkdirs(h->ckpt_dir, 0777) != 0 || chmod(h->ckpt_dir, 0777) != 0)
            rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create '%s'",
                            h->ckpt_dir);
        if (rc != 0) {
            r->log_host = 0;
            return rc;
        }
        rc = transfer_download_prefix(&t, r->sp.checkpoint_uri, root, rel, &count, err);
        if (rc == 0 && count > 0) {
            char line[1300];
            run__fmt(line, sizeof(line), "Restored %d checkpoint files from %s into %s", count,
                     r->sp.checkpoint_uri, r->sp.checkpoint_local);
            run__log_line(r, line);
        }
        if (rc == 0 && (h->ckpt_seen = json_object()) != NULL)
            transfer_upload_tree(&t, root, rel, r->sp.checkpoint_uri, h->ckpt_seen, 1, NULL, err);
        ty_err_clear(err);
    }
    r->log_host = 0;
    if (rc != 0 && (err->code == TY_EREDIS || err->code == TY_EIO))
        run__objstore_reset(r);
    return rc;
}

/* Says in the job's log what its instance type got on this agent when that is less than the
   type promises: GPUs that run on the CPU, vCPUs or memory clamped to the host (ledger.h). */
static void run_log_fit(struct run_ctx *r)
{
    const struct instances_type *t = instances_lookup(r->sp.instance_type);
    char line[400];

    if (!t)
        return;
    if (t->gpus > 0 && r->a->host_gpus == 0) {
        run__fmt(line, sizeof(line),
                 "trainyard: %s has %d GPU%s; this agent has none, so this job runs on the CPU "
                 "only",
                 t->name, t->gpus, t->gpus == 1 ? "" : "s");
        run__log_line(r, line);
    }
    if (t->vcpus > r->a->host_cpus ||
        (r->a->host_memory > 0 && t->memory_bytes > r->a->host_memory)) {
        run__fmt(line, sizeof(line),
                 "trainyard: %s has %d vCPUs and %.4g GiB; this agent's host has %d vCPUs and "
                 "%.4g GiB, so each instance gets at most those",
                 t->name, t->vcpus, (double)t->memory_bytes / (1 << 30), r->a->host_cpus,
                 (double)r->a->host_memory / (1 << 30));
        run__log_line(r, line);
    }
}

/* new: what the Downloading transition sets besides its status: where the job runs, private
   (_executor: the console's job page shows it), and a warm pool's InUse. */
static json_t *run_where(struct run_ctx *r)
{
    json_t *set = json_pack("{s:{s:s, s:s}}", "_executor", "kind", "engine", "agent", r->a->id);

    if (set && r->warm.reused)
        json_object_set_new(set, "WarmPoolStatus", json_pack("{s:s}", "Status", "InUse"));
    return set;
}

/* Everything from the claimed entry to a terminal job. */
static enum run_end run_job(struct run_ctx *r)
{
    char reason[RUN_REASON_MAX + 1], secondary[64];
    struct ty_err err;
    const char *status;
    enum run_end end;
    enum run_tr tr;
    json_t *doc;
    double t_doc;
    int gone = 0, rc, stopping;

    for (int i = 0; i < RUN_STORE_RETRIES && !(doc = run__get(r, &gone)) && !gone; i++) {
        if (agent__sleep(r->a, 1000))
            return RUN_END_PENDING;
    }
    if (!doc) /* deleted: ack; Redis away: leave it pending */
        return gone ? RUN_END_ACK : RUN_END_PENDING;
    status = run__status_of(doc);
    stopping = strcmp(status, "Stopping") == 0;
    if (r->run->reclaimed && strcmp(status, "InProgress") != 0 && !stopping && !r->a->sx) {
        /* Ended while its agent was away: what that agent left on the engine goes. */
        if ((r->io.d = docker_open(r->a->cfg.docker_host, &err)) != NULL)
            run__remove_leftovers(r);
    }
    if (stopping && !r->run->reclaimed) {
        json_decref(doc);
        ty_log(TY_LOG_INFO, "agent.job.stopped_before_start", "job=%s", r->job);
        return run__finish_stopped(r, 0, NULL);
    }
    if (r->run->fail[0] && !stopping && strcmp(status, "InProgress") == 0) {
        json_decref(doc);
        ty_log(TY_LOG_INFO, "agent.job.cannot_fit", "job=%s reason='%s'", r->job, r->run->fail);
        return run__finish_failed(r, r->run->fail);
    }
    if (strcmp(status, "InProgress") != 0 && !stopping) {
        /* status points into doc: logged before doc goes */
        ty_log(TY_LOG_INFO, "agent.job.skipped", "job=%s status=%s", r->job, status);
        json_decref(doc);
        return RUN_END_ACK;
    }
    run__fmt(secondary, sizeof(secondary), "%s",
             json_string_value(json_object_get(doc, "SecondaryStatus"))
                 ? json_string_value(json_object_get(doc, "SecondaryStatus"))
                 : "");
    t_doc = json_number_value(json_object_get(doc, "TrainingStartTime"));
    r->warm.keep_alive = warmpool_keep_alive(doc);
    if (warmpool_key(doc, r->warm.key, sizeof(r->warm.key), &err) != 0)
        r->warm.key[0] = '\0';
    rc = spec_parse(doc, &r->sp, &err);
    if (rc == 0) {
        json_t *pc = json_object_get(doc, "ProfilerConfig");
        json_t *rules = json_object_get(doc, "ProfilerRuleConfigurations");
        if (prof_enabled(pc))
            r->prof.cfg = json_deep_copy(pc);
        if (json_is_array(rules) && json_array_size(rules) > 0)
            r->prof.rules = json_deep_copy(rules);
    }
    json_decref(doc);
    if (rc != 0)
        return run__finish_failed(r, err.msg);
    run__arn_identity(r);
    if (r->sp.instance_count > STAGE_MAX_HOSTS) {
        run__fmt(reason, sizeof(reason),
                 "ClientError: InstanceCount %d is more than one trainyard agent runs for a job "
                 "(%d)",
                 r->sp.instance_count, STAGE_MAX_HOSTS);
        return run__finish_failed(r, reason);
    }
    r->nh = r->sp.instance_count > 1 ? r->sp.instance_count : 1;
    for (int i = 1; i < r->nh; i++)
        run__host_init(r, i);
    if (r->a->sx)
        return run__slurm(r);
    if (r->run->reclaimed) /* a fresh claim was charged when it was taken; GPUs: below */
        agent__charge_set(r->a, r->run, r->sp.instance_type, r->nh, 0);

    if (!r->io.d)
        r->io.d = docker_open(r->a->cfg.docker_host, &err);
    if (!r->io.d) {
        run__fmt(reason, sizeof(reason), "InternalServerError: container engine: %s", err.msg);
        return run__finish_failed(r, reason);
    }
    if (r->run->reclaimed) {
        /* its containers, if any ever ran, are taken over: the script runs once per attempt */
        if (run__reattach(r, secondary, t_doc, stopping, &end))
            return end;
        run__remove_leftovers(r);
        agent__gpus_take(r->a, r->run); /* nothing ran: it starts afresh, on free GPUs */
        if (stopping) {
            ty_log(TY_LOG_INFO, "agent.job.stopped_before_start", "job=%s", r->job);
            return run__finish_stopped(r, 0, NULL);
        }
        tr = run__transition(r, "InProgress", NULL, "Restarting", MSG_RESTARTING, NULL);
        if (tr == RUN_TR_DONE)
            tr = run__transition(r, "InProgress", NULL, "Starting", MSG_STARTING, NULL);
        if (tr != RUN_TR_DONE)
            return run__settle(r, tr);
    } else {
        for (int i = 0; i < r->nh; i++) /* stale ones with our names */
            docker_remove(r->io.d, r->h[i].cname, 1, &err);
        run_warm_take(r);
    }

    tr = run__transition(r, "InProgress", NULL, "Downloading", MSG_DOWNLOAD, run_where(r));
    if (tr != RUN_TR_DONE)
        return run__settle(r, tr);
    /* The log streams are named now, so that download progress lands in the stream the
       container's output continues. */
    for (int i = 0; i < r->nh; i++)
        run__fmt(r->h[i].stream, sizeof(r->h[i].stream), "%s/%s-%lld", r->job, r->h[i].name,
                 (long long)ty_wall_s());
    run_log_fit(r);
    if (r->prof.cfg)
        r->prof.on = 1;
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (run__volume_make(r, h, &err) != 0 || stage_prepare(h->dir, &r->sp, i, NULL, &err) != 0)
            return run__finish_failed(r, err.msg);
        if (r->prof.cfg && prof_write_config(h->dir, r->prof.cfg) != 0) {
            ty_log(TY_LOG_WARN, "agent.profiler.config_failed", "job=%s host=%s", r->job, h->name);
            r->prof.on = 0;
        }
        double deadline = run__retry_deadline(r);
        int attempt = 0, src;
        /* Redis away: staging waits for it (capped backoff) instead of failing the job */
        while ((src = run_stage_data(r, h, &err)) != 0 && !atomic_load(&r->a->stopping) &&
               run__transient(r, &err) && run__backoff(r, deadline, &attempt) == 0)
            ty_log(TY_LOG_INFO, "agent.job.stage_retry", "job=%s host=%s attempt=%d error='%s'",
                   r->job, h->name, attempt, err.msg);
        if (src != 0) {
            if (atomic_load(&r->a->stopping))
                return RUN_END_PENDING;
            run__volume_full(r, h, &err);
            r->log_host = i;
            run__log_line(r, err.msg);
            r->log_host = 0;
            return run__finish_failed(r, err.msg);
        }
        if (atomic_load(&r->a->stopping))
            return RUN_END_PENDING;
    }
    if (atomic_load(&r->a->stopping))
        return RUN_END_PENDING;
    return run_container(r);
}

/* Replays the job's outbox until it is empty, waiting for Redis (capped backoff). 0, or -1
   when the agent stops first (the outbox stays on disk). */
static int run_outbox_wait(struct run_ctx *r)
{
    int ms = RUN_RETRY_BASE_MS;

    while (r->io.ob) {
        if (run__outbox_drain(r) == 0)
            return 0;
        if (agent__sleep(r->a, ms))
            return -1;
        ms = ms * 2 < RUN_RETRY_MAX_MS ? ms * 2 : RUN_RETRY_MAX_MS;
    }
    return 0;
}

/* 1 when name is a valid TrainingJobName (it becomes a path and a container name). */
static int run_name_ok(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > 63 || name[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-'))
            return 0;
    }
    return 1;
}

void *run_thread(void *arg)
{
    struct agent_run *run = arg;
    struct agent *a = run->a;
    struct run_ctx *r = calloc(1, sizeof(*r));
    struct ty_err err;
    enum run_end end = RUN_END_PENDING;

    if (!r)
        goto out;
    r->a = a;
    r->run = run;
    run__fmt(r->job, sizeof(r->job), "%s", run->item.job);
    if (stage_job_dir(a->cfg.staging_dir, a->stage_key, r->job, r->dir, sizeof(r->dir)) != 0)
        r->dir[0] = '\0'; /* refused below */
    r->nh = 1;
    run__host_init(r, 0);
    run__fmt(r->region, sizeof(r->region), "%s", a->cfg.region);
    ty_log(TY_LOG_INFO, "agent.job.claimed", "job=%s entry=%s reclaimed=%d", r->job,
           run->item.entry_id, run->reclaimed);

    if (!r->dir[0]) {
        /* no staging folder name (HMAC failed): touch nothing, leave the entry pending */
        ty_log(TY_LOG_ERROR, "agent.job.no_staging_dir", "job=%s", r->job);
        end = RUN_END_PENDING;
    } else if (run_name_ok(r->job)) {
        /* What an earlier run of this agent could not write goes first (outbox.h). */
        r->io.ob = outbox_pending(a->cfg.data_dir, r->job);
        end = run_outbox_wait(r) == 0 ? run_job(r) : RUN_END_PENDING;
    } else {
        /* Not a name the API accepts: touch no path or container, drop the entry. */
        ty_log(TY_LOG_ERROR, "agent.job.bad_name", "entry=%s", run->item.entry_id);
        r->dir[0] = '\0';
        end = RUN_END_ACK;
    }

    run_warm_end(r, end == RUN_END_ACK);
    if (end == RUN_END_ACK) {
        for (int i = 0; i < r->nh && r->io.d; i++)
            if (r->h[i].cid[0])
                docker_remove(r->io.d, r->h[i].cid, 1, &err);
        if (r->net[0] && r->io.d)
            docker_network_remove(r->io.d, r->net, &err);
        if (r->net[0])
            run__unfence(r);
        if (r->dir[0]) {
            run__volume_drop(r);
            stage_remove(r->dir);
        }
        for (int i = 0; i < RUN_STORE_RETRIES && !r->io.ob; i++) {
            if (!r->io.s)
                run__store_reopen(r);
            if (r->io.s && queue_ack(r->io.s, run->item.entry_id, &err) == 0)
                break;
            ty_log(TY_LOG_WARN, "agent.queue.ack_failed", "job=%s error='%s'", r->job,
                   r->io.s ? err.msg : "no connection");
            store_close(r->io.s);
            r->io.s = NULL;
            if (i == 2 || agent__sleep(a, 1000)) {
                r->io.ob = 1; /* the ack goes behind the rest, into the outbox */
                break;
            }
        }
        if (r->io.ob && outbox_ack(a->cfg.data_dir, r->job, run->item.entry_id, &err) != 0)
            ty_log(TY_LOG_ERROR, "agent.outbox.write_failed", "job=%s error='%s'", r->job, err.msg);
        /* Redis away: the runner waits for it (its slot busy); if the agent stops first, its
           next start replays the outbox (agent.c) */
        if (run_outbox_wait(r) == 0)
            ty_log(TY_LOG_INFO, "agent.job.done", "job=%s", r->job);
        else
            ty_log(TY_LOG_INFO, "agent.job.outbox_left", "job=%s", r->job);
    } else {
        ty_log(TY_LOG_INFO, "agent.job.left_pending", "job=%s stopping=%d", r->job,
               atomic_load(&a->stopping));
    }
    run__relay_cleanup(
        r, end == RUN_END_ACK); /* also when abandoned: the relay ends with the runner */
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (h->logs) {
            if (h->log_started) {
                /* Abandoned while the container runs: the reader stops at its next line. */
                atomic_store(&h->logs->abandon, 1);
                pthread_detach(h->log_thr);
            }
            run__logs_unref(h->logs);
        }
        json_decref(h->ckpt_seen);
    }
    spec_cleanup(&r->sp);
    docker_close(r->io.d);
    run__objstore_reset(r);
    json_decref(r->prof.cfg);
    json_decref(r->prof.rules);
    json_decref(r->prof.seen);
    store_close(r->io.s);
    free(r);
out:
    pthread_mutex_lock(&a->mu);
    run->done = 1;
    a->busy--;
    atomic_fetch_add(&a->runs_ended, 1);
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    /* its charge is free from here: the claim loop looks again (agent.c) */
    ty_log(TY_LOG_INFO, "agent.run.freed", "job=%s gpus=%d cpus=%d memory_bytes=%lld",
           run->item.job, run->charge.gpus, run->charge.cpus, (long long)run->charge.memory_bytes);
    return NULL;
}
