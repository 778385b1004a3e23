/*
 * run_slurm.c - one training job's run on a Slurm cluster (--executor slurm, docs/slurm.md "The
 * executor"): the attempt's launch token and assignment, its submission (slurmjob.h), following
 * it (the Slurm job through slurmfate.h, the launchers through their reports: slurmx.h), Stop
 * and MaxRuntimeInSeconds through the launchers' answers, and the final status from their ends.
 *
 * Owns: struct run_slurm, the state the launchers' reports (applied on the listener's threads)
 * share with the runner, under its mutex. The job document's transitions, the log streams and
 * metrics, the credentials and the terminal writes are the local runner's own (run_int.h).
 * Invariant: the training script runs at most once per job: a Slurm job that was requeued,
 * lost a node, or outlived its agent is cancelled and the job fails, never submitted again.
 */
#include "run_int.h"

#include "artifacts.h"
#include "launchwire.h"
#include "s3uri.h"
#include "slurmfate.h"
#include "slurmjob.h"
#include "slurmscript.h"
#include "slurmx.h"
#include "ty_log.h"
#include "ty_rand.h"

#include <errno.h>
#include <string.h>

#define SLURM_TICK_MS      250
#define SLURM_POLL_S       2.0  /* the Slurm job and the job document */
#define SLURM_SILENT_S     30.0 /* a launcher unheard this long (it reports every 2 s) is lost */
#define SLURM_LATE_ENDS_S  15.0 /* after Slurm ended the job, the launchers' last reports */
#define SLURM_STOP_SLACK_S 60   /* past the stop grace, the Slurm job is cancelled outright */
#define SLURM_SUBMIT_TRIES 5    /* a submission slurmrestd did not answer: 0.5 s to 8 s apart */
#define SLURM_DIRECT_S                                                                             \
    30 /* a runner reads its Slurm job itself this often (the poller's                             \
          update_time may miss a change while slurmctld's clock lags) */

#define MSG_SUBMITTED   "Submitted to Slurm as job %ld, in partition '%s'"
#define MSG_DOWNLOADING "Downloading input data"
#define MSG_TRAINING    "Training image download completed. Training in progress."
#define MSG_UPLOADING   "Uploading generated training model"
#define MSG_COMPLETED   "Training job completed"
#define MSG_MAXRUNTIME  "Training job reached the maximum runtime and was stopped"

/* One host as its launcher reported it. */
struct run_slurm_host {
    int phase; /* -1 before any report, else enum launchwire_phase */
    double started;
    int ended;
    struct launchwire_report end; /* its end (doc and lines NULL) */
    char node[64];
};

/* The attempt: shared by the runner and the listener's threads under mu. */
struct run_slurm {
    struct run_ctx *r;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled by every report applied */
    json_t *asg;       /* the assignment without "host" */
    struct run_slurm_host h[STAGE_MAX_HOSTS];
    int dirty;      /* a host's phase, start or end changed since the record was written */
    json_t *addrs;  /* each host's node address, once Slurm placed the job (several hosts) */
    int want_addrs; /* a launcher of a job of several hosts asked before they were known */
    /* the runner's alone: */
    long id; /* the Slurm job */
    int attempt;
    char token[LAUNCHWIRE_TOKEN_HEX + 1];
    char partition[128];
    int said;                         /* 1 Downloading said, 2 Training said */
    int stop;                         /* 0, 1 StopTrainingJob, 2 MaxRuntimeInSeconds: told */
    double stop_by;                   /* the Slurm job is cancelled outright past this */
    long long acked[STAGE_MAX_HOSTS]; /* each launcher's reports applied and flushed */
};

/* ---- the listener's side (called under slurmx's lock) ---- */

static int run_slurm_report(void *ud, const struct launchwire_report *rep)
{
    struct run_slurm *rs = ud;
    struct run_ctx *r = rs->r;
    struct run_slurm_host *sh;
    struct run_host *h;
    size_t i;
    json_t *l;

    if (rep->host < 0 || rep->host >= r->nh)
        return -1;
    sh = &rs->h[rep->host];
    h = &r->h[rep->host];
    if (!h->logs || !run__logs_room(h->logs, json_array_size(rep->lines)))
        return -1; /* Redis is not taking the lines: the launcher keeps them and sends again */
    json_array_foreach(rep->lines, i, l)
    {
        const char *text = json_string_value(json_array_get(l, 1));
        if (text)
            run__logs_add(h->logs, text, json_integer_value(json_array_get(l, 0)));
    }
    pthread_mutex_lock(&rs->mu);
    snprintf(sh->node, sizeof(sh->node), "%s", rep->node);
    rs->dirty |= (int)rep->phase > sh->phase || (rep->started > 0 && sh->started == 0);
    if ((int)rep->phase > sh->phase)
        sh->phase = (int)rep->phase;
    if (rep->started > 0)
        sh->started = rep->started;
    if (rep->phase == LAUNCHWIRE_ENDED && !sh->ended) {
        rs->dirty = 1;
        sh->ended = 1;
        sh->end = *rep;
        sh->end.doc = NULL;
        sh->end.lines = NULL;
    }
    pthread_cond_broadcast(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
    return 0;
}

static json_t *run_slurm_assign(void *ud, int host)
{
    struct run_slurm *rs = ud;
    json_t *j = NULL;

    pthread_mutex_lock(&rs->mu);
    if (rs->r->nh > 1 && !rs->addrs) {
        rs->want_addrs = 1; /* the launcher asks again shortly */
    } else if ((j = json_deep_copy(rs->asg)) != NULL) {
        json_object_set_new(j, "host", json_integer(host));
        if (rs->addrs)
            json_object_set_new(j, "addrs", json_deep_copy(rs->addrs));
    }
    pthread_mutex_unlock(&rs->mu);
    return j;
}

/* ---- the runner's side ---- */

/* Writes the attempt's record (run_slurm_rec.c) from rs and r: what a restarted agent needs to
   follow the same Slurm job. Best effort: without it, a restarted agent cancels the job. */
static void run_slurm_save(struct run_ctx *r, struct run_slurm *rs)
{
    struct run_slurm_rec *rec = calloc(1, sizeof(*rec));

    if (!rec)
        return;
    rec->slurm_id = rs->id;
    rec->attempt = rs->attempt;
    run__fmt(rec->token, sizeof(rec->token), "%s", rs->token);
    run__fmt(rec->creds, sizeof(rec->creds), "%s", r->creds.token);
    run__fmt(rec->partition, sizeof(rec->partition), "%s", rs->partition);
    rec->t_start = r->t_start;
    rec->said = rs->said;
    rec->stop = rs->stop;
    rec->nh = r->nh;
    for (int i = 0; i < r->nh; i++) {
        struct run_slurm_rec_host *rh = &rec->h[i];
        const struct run_slurm_host *sh = &rs->h[i];
        run__fmt(rh->stream, sizeof(rh->stream), "%s", r->h[i].stream);
        rh->acked = rs->acked[i];
        if (r->h[i].logs) {
            pthread_mutex_lock(&r->h[i].logs->mu);
            rh->last_ts = r->h[i].logs->last_ts;
            pthread_mutex_unlock(&r->h[i].logs->mu);
        }
        pthread_mutex_lock(&rs->mu);
        rh->phase = sh->phase;
        rh->started = sh->started;
        rh->ended = sh->ended;
        run__fmt(rh->node, sizeof(rh->node), "%s", sh->node);
        rh->exit_code = sh->end.exit_code;
        rh->exit_signal = sh->end.exit_signal;
        rh->stopped = sh->end.stopped;
        run__fmt(rh->failure, sizeof(rh->failure), "%s", sh->end.failure);
        run__fmt(rh->model_error, sizeof(rh->model_error), "%s", sh->end.model_error);
        run__fmt(rh->error, sizeof(rh->error), "%s", sh->end.error);
        pthread_mutex_unlock(&rs->mu);
    }
    if (run__slurm_rec_write(r, rec) != 0)
        ty_log(TY_LOG_WARN, "agent.slurm.record_failed", "job=%s error='%s'", r->job,
               strerror(errno));
    free(rec);
}

/* Takes rs's state back from a record (an agent restarted mid-job). */
static void run_slurm_restore(struct run_ctx *r, struct run_slurm *rs,
                              const struct run_slurm_rec *rec)
{
    rs->id = rec->slurm_id;
    rs->attempt = rec->attempt;
    run__fmt(rs->token, sizeof(rs->token), "%s", rec->token);
    run__fmt(rs->partition, sizeof(rs->partition), "%s", rec->partition);
    run__fmt(r->creds.token, sizeof(r->creds.token), "%s", rec->creds);
    r->creds.granted = rec->creds[0] != '\0';
    r->t_start = rec->t_start;
    rs->said = rec->said;
    for (int i = 0; i < r->nh; i++) {
        const struct run_slurm_rec_host *rh = &rec->h[i];
        struct run_slurm_host *sh = &rs->h[i];
        run__fmt(r->h[i].stream, sizeof(r->h[i].stream), "%s", rh->stream);
        r->h[i].last_log_ts = rh->last_ts;
        rs->acked[i] = rh->acked;
        sh->phase = rh->phase;
        sh->started = rh->started;
        sh->ended = rh->ended;
        run__fmt(sh->node, sizeof(sh->node), "%s", rh->node);
        sh->end.host = i;
        sh->end.exit_code = rh->exit_code;
        sh->end.exit_signal = rh->exit_signal;
        sh->end.stopped = rh->stopped;
        run__fmt(sh->end.failure, sizeof(sh->end.failure), "%s", rh->failure);
        run__fmt(sh->end.model_error, sizeof(sh->end.model_error), "%s", rh->model_error);
        run__fmt(sh->end.error, sizeof(sh->end.error), "%s", rh->error);
    }
}

/* After a flush: the reports applied before it (seq, per host) are in Redis or the outbox;
   the record says so when anything moved. */
static void run_slurm_checkpoint(struct run_ctx *r, struct run_slurm *rs, const long long *seq)
{
    int changed;

    pthread_mutex_lock(&rs->mu);
    changed = rs->dirty;
    rs->dirty = 0;
    pthread_mutex_unlock(&rs->mu);
    for (int i = 0; i < r->nh; i++) {
        changed |= seq[i] != rs->acked[i];
        rs->acked[i] = seq[i];
    }
    if (changed)
        run_slurm_save(r, rs);
}

/* The assignment every launcher of the attempt gets (its host added per request). new. */
static json_t *run_slurm_asg(struct run_ctx *r, json_t *doc, int attempt)
{
    const char *ep = r->a->cfg.endpoint_url;

    return json_pack("{s:s, s:i, s:i, s:O, s:s, s:s, s:s, s:s, s:s, s:i}", "job", r->job, "attempt",
                     attempt, "hosts", r->nh, "doc", doc, "endpoint",
                     run__relay_wanted(r) ? ep : "", "creds_token", r->creds.token, "region",
                     r->region, "deployment", r->a->deployment, "runtime_image",
                     r->a->cfg.runtime_image ? r->a->cfg.runtime_image : "", "stop_grace",
                     r->a->cfg.stop_grace_s);
}

/* The id of the Slurm job named name that waits or runs, 0 when none (or Slurm does not
   answer). */
static long run_slurm_find(struct slurmrest *c, const char *name)
{
    struct slurmrest_job j;
    struct ty_err err;
    int64_t since = 0;
    json_t *jobs = NULL, *jj;
    long found = 0;
    size_t i;

    if (slurmrest_jobs_since(c, &since, &jobs, &err) != 0)
        return 0;
    json_array_foreach(jobs, i, jj)
    {
        if (slurmrest_job_parse(jj, &j, &err) == 0 && strcmp(j.name, name) == 0 &&
            (strcmp(j.state, "PENDING") == 0 || strcmp(j.state, "RUNNING") == 0 ||
             strcmp(j.state, "CONFIGURING") == 0 || strcmp(j.state, "SUSPENDED") == 0))
            found = j.id;
    }
    json_decref(jobs);
    return found;
}

/* Submits the attempt. 0 with rs->id, or -1 with reason (a FailureReason). */
static int run_slurm_submit(struct run_ctx *r, struct run_slurm *rs, struct slurmrest *c,
                            const char *token, int attempt, char *reason, size_t n)
{
    const struct agent_slurm *cfg = slurmx_cfg(r->a->sx);
    struct slurmmap_entry place;
    struct slurmjob_in in = {0};
    struct slurmjob sj;
    struct ty_err err;
    int warn = 0, rc;

    if (slurmx_place(r->a->sx, r->sp.instance_type, &place, &err) != 0) {
        run__fmt(reason, n, "ClientError: %s", err.msg);
        return -1;
    }
    run__fmt(rs->partition, sizeof(rs->partition), "%s", place.partition);
    in.deployment = r->a->deployment;
    in.job = r->job;
    in.attempt = attempt;
    in.hosts = r->nh;
    in.max_runtime_s = r->sp.max_runtime_s;
    in.stop_grace_s = r->a->cfg.stop_grace_s;
    in.place = &place;
    in.launcher = cfg->launcher;
    in.launch_url = cfg->launch_url;
    in.token = token;
    in.node_docker_host = cfg->node_docker_host;
    in.node_staging_dir = cfg->node_staging_dir;
    in.workdir = cfg->workdir;
    if (slurmjob_build(&in, &sj, &err) != 0) {
        run__fmt(reason, n, "InternalServerError: cannot build the Slurm job: %s", err.msg);
        return -1;
    }
    /* a submission that timed out may have been taken: it is looked for by name before it is
       sent again, so that one attempt is never two Slurm jobs */
    for (int tries = 0, ms = 500;; tries++, ms *= 2) {
        rc = slurmrest_submit_job(c, &sj.sub, &rs->id, &warn, &err);
        if (rc == 0 || rc == -TY_EINVAL || tries >= SLURM_SUBMIT_TRIES ||
            atomic_load(&r->a->stopping))
            break;
        ty_log(TY_LOG_WARN, "agent.slurm.submit_retry", "job=%s try=%d error='%s'", r->job,
               tries + 1, err.msg);
        if (agent__sleep(r->a, ms))
            break;
        if ((rs->id = run_slurm_find(c, sj.name)) > 0) {
            rc = 0;
            break;
        }
    }
    slurmjob_free(&sj);
    if (rc == -TY_EINVAL) {
        run__fmt(reason, n, "ClientError: Slurm refused the job on partition '%s' (%s x %d): %s",
                 place.partition, r->sp.instance_type, r->nh, err.msg);
        return -1;
    }
    if (rc != 0) {
        run__fmt(reason, n, "InternalServerError: cannot submit the job to Slurm: %s", err.msg);
        return -1;
    }
    ty_log(TY_LOG_INFO, "agent.slurm.submitted",
           "job=%s slurm_job=%ld partition=%s hosts=%d warn=%d", r->job, rs->id, place.partition,
           r->nh, warn);
    return 0;
}

/* The model's URI as algo-1's launcher uploads it (launcher_upload), "" when the job has none. */
static void run_slurm_model_uri(struct run_ctx *r, char *uri, size_t n)
{
    char bucket[256], prefix[1100], key[1400];

    uri[0] = '\0';
    if (!r->sp.output_path[0] ||
        s3uri_parse(r->sp.output_path, bucket, sizeof(bucket), prefix, sizeof(prefix)) != 0 ||
        artifacts_output_key(prefix, r->sp.name,
                             r->sp.output_uncompressed ? "model" : "model.tar.gz", key,
                             sizeof(key)) != 0)
        return;
    run__fmt(uri, n, "s3://%s/%s", bucket, key);
}

/* Adds ModelArtifacts to set when algo-1 reported its upload done. */
static void run_slurm_model(struct run_ctx *r, const struct run_slurm_host *h0, json_t *set)
{
    char uri[1700];

    if (!h0->ended || h0->end.model_error[0] || h0->end.error[0] || h0->end.stopped == 2)
        return;
    run_slurm_model_uri(r, uri, sizeof(uri));
    if (uri[0] && set)
        json_object_set_new(set, "ModelArtifacts", json_pack("{s:s}", "S3ModelArtifacts", uri));
}

/* The FailureReason of ended hosts one of which failed, "" when none did: a launcher's own
   reason, else the first failure file, else the first non-zero exit. */
static void run_slurm_failure(struct run_ctx *r, struct run_slurm *rs, char *reason, size_t n)
{
    const struct run_slurm_host *f = NULL;

    reason[0] = '\0';
    for (int i = 0; i < r->nh; i++)
        if (rs->h[i].end.error[0]) {
            run__fmt(reason, n, "%s", rs->h[i].end.error);
            return;
        }
    for (int i = 0; i < r->nh; i++) {
        const struct run_slurm_host *h = &rs->h[i];
        if (h->end.exit_code == 0)
            continue;
        if (!f)
            f = h;
        if (h->end.failure[0]) {
            run__fmt(reason, n, "%s", h->end.failure);
            return;
        }
    }
    if (f && r->nh > 1)
        run__fmt(reason, n,
                 "AlgorithmError: the training container of host algo-%d (Slurm node %s) exited "
                 "with exit code %d. See the job logs for more information.",
                 (int)(f - rs->h) + 1, f->node, f->end.exit_code);
    else if (f)
        run__fmt(reason, n,
                 "AlgorithmError: the training container exited with exit code %d. See the job "
                 "logs for more information.",
                 f->end.exit_code);
}

/* Every host ended: the final status from their reports and the executor's own stop. */
static enum run_end run_slurm_ended(struct run_ctx *r, struct run_slurm *rs)
{
    char reason[RUN_REASON_MAX + 1];
    enum run_tr tr;
    json_t *set;

    r->t_end = ty_wall_s();
    run__logs_flush_all(r, 1);
    if (rs->stop) {
        set = json_object();
        run_slurm_model(r, &rs->h[0], set);
        return run__finish_stopped(r, rs->stop == 2, set);
    }
    run_slurm_failure(r, rs, reason, sizeof(reason));
    if (!reason[0] && rs->h[0].end.model_error[0])
        run__fmt(reason, sizeof(reason), "%s", rs->h[0].end.model_error);
    if (reason[0])
        return run__finish_failed(r, reason);
    tr = run__transition(r, "InProgress", NULL, "Uploading", MSG_UPLOADING, NULL);
    if (tr == RUN_TR_ABANDON)
        return RUN_END_PENDING;
    set = json_object();
    run_slurm_model(r, &rs->h[0], set);
    if (tr == RUN_TR_CONFLICT) {
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
        run_slurm_model(r, &rs->h[0], set);
        return run__finish_stopped(r, 0, set);
    }
    return tr == RUN_TR_ABANDON ? RUN_END_PENDING : RUN_END_ACK;
}

/* What the hosts reported so far. */
struct run_slurm_seen {
    int staging, running, ended, heard;
    double started; /* the earliest container start */
};

static void run_slurm_snapshot(struct run_ctx *r, struct run_slurm *rs, struct run_slurm_seen *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_lock(&rs->mu);
    for (int i = 0; i < r->nh; i++) {
        const struct run_slurm_host *h = &rs->h[i];
        s->heard += h->phase >= 0;
        s->staging += h->phase >= LAUNCHWIRE_STAGING;
        s->running += h->started > 0;
        s->ended += h->ended;
        if (h->started > 0 && (s->started == 0 || h->started < s->started))
            s->started = h->started;
    }
    pthread_mutex_unlock(&rs->mu);
}

/* A host whose launcher went silent while the Slurm job runs: its node from GET /nodes when
   Slurm shows it lost, else the node it last reported from. 1 when one is lost. */
static int run_slurm_lost(struct run_ctx *r, struct run_slurm *rs, struct slurmrest *c,
                          const struct slurmrest_job *j, char *node, size_t n, int *host)
{
    struct ty_err err;
    double now = ty_wall_s();
    json_t *nodes;
    int found = 0;

    for (int i = 0; i < r->nh && !found; i++) {
        double seen = slurmx_last_seen(r->a->sx, r->job, i, NULL);
        if (seen > 0 && now - seen > SLURM_SILENT_S && !rs->h[i].ended) {
            *host = i;
            pthread_mutex_lock(&rs->mu);
            run__fmt(node, n, "%s", rs->h[i].node);
            pthread_mutex_unlock(&rs->mu);
            found = 1;
        }
    }
    if (!found && strcmp(j->state, "RUNNING") != 0)
        return 0;
    if ((nodes = slurmrest_nodes(c, &err)) != NULL) {
        found |= slurmfate_lost_node(j, nodes, node, n, host);
        json_decref(nodes);
    }
    return found;
}

/* Secondary statuses from the launchers' phases: Downloading at the first staging, Training
   (with TrainingStartTime) once every host's container runs. */
static int run_slurm_phases(struct run_ctx *r, const struct run_slurm_seen *s, int *said)
{
    enum run_tr tr = RUN_TR_DONE;
    int was = *said;

    if (*said < 1 && s->staging > 0) {
        tr = run__transition(r, "InProgress", NULL, "Downloading", MSG_DOWNLOADING, NULL);
        *said = 1;
    }
    if (tr == RUN_TR_DONE && *said < 2 && s->running == r->nh) {
        r->t_start = s->started;
        run__transition(r, "InProgress", NULL, "Training", MSG_TRAINING,
                        json_pack("{s:f}", "TrainingStartTime", r->t_start));
        *said = 2;
    }
    return *said != was;
}

/* Tells the launchers to stop (kind 1 StopTrainingJob, 2 MaxRuntimeInSeconds), uploading the
   model after, as SageMaker does for both. */
static void run_slurm_stop(struct run_ctx *r, struct run_slurm *rs, int kind)
{
    if (rs->stop)
        return;
    rs->stop = kind;
    rs->stop_by = ty_wall_s() + r->a->cfg.stop_grace_s + SLURM_STOP_SLACK_S;
    slurmx_stop_job(r->a->sx, r->job, r->a->cfg.stop_grace_s, 1);
    ty_log(TY_LOG_INFO, "agent.slurm.stop", "job=%s slurm_job=%ld kind=%d", r->job, rs->id, kind);
    run_slurm_save(r, rs);
}

/* Reads the job document: a Stop asked, or MaxRuntimeInSeconds reached, tells the launchers.
   Returns 1 when the run must end now (the job gone or ended elsewhere: *end). */
static int run_slurm_doc(struct run_ctx *r, struct run_slurm *rs, enum run_end *end)
{
    int gone = 0;
    json_t *doc = run__get(r, &gone);
    const char *status = run__status_of(doc);
    int stopping = doc && strcmp(status, "Stopping") == 0;
    int over = doc && strcmp(status, "InProgress") != 0 && !stopping;

    json_decref(doc);
    if (gone || over) {
        *end = RUN_END_ACK;
        return 1;
    }
    if (stopping)
        run_slurm_stop(r, rs, 1);
    if (!rs->stop && r->t_start > 0 && r->sp.max_runtime_s > 0 &&
        ty_wall_s() - r->t_start >= (double)r->sp.max_runtime_s) {
        enum run_tr tr = run__transition(r, "InProgress", "Stopping", "MaxRuntimeExceeded",
                                         MSG_MAXRUNTIME, NULL);
        if (tr == RUN_TR_DONE || (tr == RUN_TR_CONFLICT && strcmp(r->cur, "Stopping") == 0))
            run_slurm_stop(r, rs, tr == RUN_TR_DONE ? 2 : 1);
    }
    return 0;
}

/* A job of several hosts, placed: its nodes' addresses for the launchers' assignments (each
   host's /etc/hosts names the others). Tried at each poll until known. */
static void run_slurm_addrs(struct run_ctx *r, struct run_slurm *rs, struct slurmrest *c,
                            const struct slurmrest_job *j)
{
    char addrs[STAGE_MAX_HOSTS][SLURMFATE_ADDR_MAX];
    struct ty_err err;
    json_t *nodes, *arr;
    int k;

    if (r->nh < 2 || rs->addrs || !j->nodes[0] || !(nodes = slurmrest_nodes(c, &err)))
        return;
    k = slurmfate_node_addrs(j, nodes, addrs, STAGE_MAX_HOSTS);
    json_decref(nodes);
    if (k != r->nh || !(arr = json_array()))
        return;
    for (int i = 0; i < k; i++)
        json_array_append_new(arr, json_string(addrs[i]));
    pthread_mutex_lock(&rs->mu);
    rs->addrs = arr;
    pthread_mutex_unlock(&rs->mu);
    ty_log(TY_LOG_INFO, "agent.slurm.placed", "job=%s slurm_job=%ld nodes='%s'", r->job, rs->id,
           j->nodes);
}

/* new: the job document's private record of where it runs (the console's job page shows it):
   {"_executor": {"kind": "slurm", "agent", "slurm_job", "partition"[, "nodes"]}}. */
static json_t *run_slurm_where(struct run_ctx *r, struct run_slurm *rs, const char *nodes)
{
    json_t *e = json_pack("{s:s, s:s, s:I, s:s}", "kind", "slurm", "agent", r->a->id, "slurm_job",
                          (json_int_t)rs->id, "partition", rs->partition);

    if (e && nodes && nodes[0])
        json_object_set_new(e, "nodes", json_string(nodes));
    return e ? json_pack("{s:o}", "_executor", e) : NULL;
}

/* Records where the job runs from the nodes its launchers reported (SLURMD_NODENAME), in host
   order: a short job may end before Slurm's view of it was read while it ran. */
static void run_slurm_placed(struct run_ctx *r, struct run_slurm *rs)
{
    char nodes[256] = "";

    pthread_mutex_lock(&rs->mu);
    for (int i = 0; i < r->nh; i++)
        run__fmt(nodes + strlen(nodes), sizeof(nodes) - strlen(nodes), "%s%s", i ? "," : "",
                 rs->h[i].node);
    pthread_mutex_unlock(&rs->mu);
    run__transition(r, "InProgress,Stopping", NULL, NULL, NULL, run_slurm_where(r, rs, nodes));
}

/* Follows the submitted attempt until its end. */
static enum run_end run_slurm_follow(struct run_ctx *r, struct run_slurm *rs, struct slurmrest *c)
{
    struct slurmfate_ctx fc = {.slurm_id = rs->id,
                               .instance_type = r->sp.instance_type,
                               .partition = rs->partition,
                               .hosts = r->nh,
                               .lost_host = -1};
    char waitmsg[640] = "", lost[SLURMREST_NODE_MAX] = "";
    double next_poll = 0, slurm_ended = 0, next_direct = 0;
    int placed = 0;

    for (;;) {
        long long seq[STAGE_MAX_HOSTS];
        struct run_slurm_seen s;
        struct slurmrest_job j;
        struct slurmfate fate;
        struct ty_err err;
        enum run_end end;
        int rc;

        if (agent__sleep(r->a, SLURM_TICK_MS))
            return RUN_END_PENDING;
        for (int i = 0; i < r->nh; i++) /* before the flush: what it makes durable */
            slurmx_last_seen(r->a->sx, r->job, i, &seq[i]);
        run__logs_flush_all(r, 0);
        run_slurm_checkpoint(r, rs, seq);
        run_slurm_snapshot(r, rs, &s);
        if (run_slurm_phases(r, &s, &rs->said)) { /* a conflict (Stopping): from the document */
            run_slurm_save(r, rs);
            if (rs->said == 2 && !placed) { /* every launcher said on which node it runs */
                placed = 1;
                run_slurm_placed(r, rs);
            }
        }
        if (s.ended == r->nh)
            return run_slurm_ended(r, rs);
        pthread_mutex_lock(&rs->mu);
        if (rs->want_addrs && !rs->addrs) /* a launcher waits for its assignment: ask Slurm */
            next_poll = next_direct = 0;
        rs->want_addrs = 0;
        pthread_mutex_unlock(&rs->mu);
        if (ty_wall_s() < next_poll)
            continue;
        next_poll = ty_wall_s() + SLURM_POLL_S;
        if (run_slurm_doc(r, rs, &end))
            return end;
        if (rs->stop && ty_wall_s() > rs->stop_by) {
            slurmrest_cancel(c, rs->id, NULL, &err);
            run__log_line(r, "trainyard: the launchers did not stop within the grace; the Slurm "
                             "job was cancelled");
            return run__finish_stopped(r, rs->stop == 2, NULL);
        }
        if (slurmx_job(r->a->sx, r->job, &j) == 0 && ty_wall_s() < next_direct) {
            rc = 0; /* as the agent's poller last saw it */
        } else {    /* now and then, and until the poller saw it: from Slurm itself */
            double asked = ty_wall_s();
            rc = slurmrest_job(c, rs->id, &j, &err);
            next_direct = asked + SLURM_DIRECT_S;
            if (rc == 0)
                slurmx_job_seen(r->a->sx, r->job, &j, asked);
        }
        if (rc != 0 && rc != -TY_ENOTFOUND) {
            ty_log(TY_LOG_WARN, "agent.slurm.poll_failed", "job=%s slurm_job=%ld error='%s'",
                   r->job, rs->id, err.msg);
            continue; /* slurmrestd away: the launchers go on, and so does the job */
        }
        if (rc == 0)
            run_slurm_addrs(r, rs, c, &j);
        if (rc == 0 && j.nodes[0] && !placed) { /* where it runs, for the console */
            placed = 1;
            run__transition(r, "InProgress,Stopping", NULL, NULL, NULL,
                            run_slurm_where(r, rs, j.nodes));
        }
        fc.seen_running |= rc == 0 && j.start_time > 0 && j.nodes[0];
        fc.stop_sent = rs->stop != 0;
        fc.launchers_done = s.ended == r->nh;
        if (rc == 0 && !lost[0] && (fc.seen_running || s.heard > 0) &&
            run_slurm_lost(r, rs, c, &j, lost, sizeof(lost), &fc.lost_host))
            fc.lost_node = lost;
        slurmfate_decide(rc == 0 ? &j : NULL, &fc, &fate);
        if (fate.kind == SLURMFATE_WAIT && strcmp(fate.msg, waitmsg) != 0) {
            run__fmt(waitmsg, sizeof(waitmsg), "%s", fate.msg);
            if (run__transition(r, "InProgress", NULL, "Starting", waitmsg, NULL) == RUN_TR_ABANDON)
                return RUN_END_PENDING;
        }
        if (fate.kind == SLURMFATE_WAIT && rs->stop) { /* never ran: nothing to stop inside */
            slurmrest_cancel(c, rs->id, NULL, &err);
            return run__finish_stopped(r, rs->stop == 2, NULL);
        }
        if (fate.kind == SLURMFATE_FAIL) {
            if (fate.cancel && slurmrest_cancel(c, rs->id, NULL, &err) != 0)
                ty_log(TY_LOG_WARN, "agent.slurm.cancel_failed", "job=%s slurm_job=%ld error='%s'",
                       r->job, rs->id, err.msg);
            r->t_end = ty_wall_s();
            run__logs_flush_all(r, 1);
            return run__finish_failed(r, fate.msg);
        }
        if (fate.kind == SLURMFATE_REPORTS) {
            if (slurm_ended == 0)
                slurm_ended = ty_wall_s();
            if (ty_wall_s() - slurm_ended > SLURM_LATE_ENDS_S) {
                char reason[RUN_REASON_MAX + 1];
                run__fmt(reason, sizeof(reason),
                         "InternalServerError: Slurm job %ld ended (%s) before %d of its %d hosts "
                         "reported their end; the training script is not run again",
                         rs->id, rc == 0 ? j.state : "purged", r->nh - s.ended, r->nh);
                r->t_end = ty_wall_s();
                run__logs_flush_all(r, 1);
                return run__finish_failed(r, reason);
            }
        }
    }
}

/* A reclaimed job (its agent was lost): a Slurm job of its name that exists, running or ended,
   is never followed blind nor run again: cancelled, and the job fails. 1 when it did (*end),
   0 when none exists and the job had not gone past Starting (it is submitted afresh). */
static int run_slurm_reclaimed(struct run_ctx *r, struct slurmrest *c, const char *secondary,
                               enum run_end *end)
{
    char name[128], reason[RUN_REASON_MAX + 1];
    struct ty_err err;
    int64_t since = 0;
    json_t *jobs = NULL, *jj;
    long found = 0;
    size_t i;

    slurmscript_name(r->a->deployment, r->job, name, sizeof(name));
    if (slurmrest_jobs_since(c, &since, &jobs, &err) != 0) {
        run__fmt(reason, sizeof(reason),
                 "InternalServerError: the job's agent was lost and its Slurm job cannot be "
                 "looked up (%s); the training script is not run again",
                 err.msg);
        *end = run__finish_failed(r, reason);
        return 1;
    }
    json_array_foreach(jobs, i, jj)
    {
        struct slurmrest_job j;
        if (slurmrest_job_parse(jj, &j, &err) != 0 || strcmp(j.name, name) != 0)
            continue;
        found = j.id;
        slurmrest_cancel(c, j.id, NULL, &err);
    }
    json_decref(jobs);
    if (!found && (!secondary[0] || strcmp(secondary, "Starting") == 0))
        return 0;
    if (found)
        run__fmt(reason, sizeof(reason),
                 "InternalServerError: the trainyard agent that followed Slurm job %ld was lost; "
                 "the Slurm job was cancelled and the training script is not run again",
                 found);
    else
        run__fmt(reason, sizeof(reason),
                 "InternalServerError: the trainyard agent that followed the job was lost and "
                 "its Slurm job is gone; the training script is not run again");
    *end = run__finish_failed(r, reason);
    return 1;
}

/* Names the streams and makes each host's log state. 0 or -1. */
static int run_slurm_streams(struct run_ctx *r)
{
    for (int i = 0; i < r->nh; i++) {
        run__fmt(r->h[i].stream, sizeof(r->h[i].stream), "%s/%s-%lld", r->job, r->h[i].name,
                 (long long)ty_wall_s());
        if (run__logs_new(r, &r->h[i], 0) != 0)
            return -1;
    }
    return 0;
}

/* Follows the attempt to its end, then unregisters it: ended (RUN_END_ACK), its launchers are
   answered 410, anything of it left in Slurm is cancelled and its record goes; left pending
   (the agent stops), the record and the role's token stay for the next agent. */
static enum run_end run_slurm_run(struct run_ctx *r, struct run_slurm *rs, struct slurmrest *c)
{
    enum run_end end = run_slurm_follow(r, rs, c);
    struct ty_err err;

    slurmx_detach(r->a->sx, r->job, end == RUN_END_ACK); /* no report is applied after this */
    run__logs_flush_all(r, 1);
    if (end == RUN_END_ACK) {
        slurmrest_cancel(c, rs->id, NULL, &err);
        run__slurm_rec_drop(r);
    } else {
        r->creds.granted = 0; /* the launchers go on with it: not revoked */
    }
    return end;
}

/* Grants the role, registers the attempt, submits it and follows it. */
static enum run_end run_slurm_attempt(struct run_ctx *r, struct run_slurm *rs, struct slurmrest *c,
                                      json_t *doc)
{
    char reason[RUN_REASON_MAX + 1] = "", msg[300];
    struct slurmx_attempt at = {run_slurm_report, run_slurm_assign, rs};
    struct ty_err err;
    double deadline = run__retry_deadline(r);
    int rc, tries = 0;

    while ((rc = run__creds_grant(r, reason, sizeof(reason))) != 0 && run__redis_down(r) &&
           run__backoff(r, deadline, &tries) == 0)
        ty_log(TY_LOG_INFO, "agent.job.creds_retry", "job=%s attempt=%d", r->job, tries);
    if (rc != 0)
        return run__finish_failed(r, reason);
    if (run_slurm_streams(r) != 0 || ty_rand_hex(rs->token, LAUNCHWIRE_TOKEN_HEX) != 0 ||
        !(rs->asg = run_slurm_asg(r, doc, rs->attempt)))
        return run__finish_failed(r, "InternalServerError: out of memory");
    if (r->warm.keep_alive > 0)
        run__log_line(r, "trainyard: warm pools are not kept on Slurm: the nodes go back to the "
                         "cluster when the job ends");
    if (slurmx_attach(r->a->sx, r->job, rs->attempt, r->nh, rs->token, &at, NULL, &err) != 0) {
        run__fmt(reason, sizeof(reason), "InternalServerError: %s", err.msg);
        return run__finish_failed(r, reason);
    }
    if (run_slurm_submit(r, rs, c, rs->token, rs->attempt, reason, sizeof(reason)) != 0) {
        slurmx_detach(r->a->sx, r->job, 1);
        run__log_line(r, reason);
        run__logs_flush_all(r, 1);
        return run__finish_failed(r, reason);
    }
    slurmx_follow(r->a->sx, r->job, rs->id);
    run_slurm_save(r, rs); /* from here a restarted agent follows this Slurm job */
    run__fmt(msg, sizeof(msg), "trainyard: " MSG_SUBMITTED, rs->id, rs->partition);
    run__log_line(r, msg);
    run__fmt(msg, sizeof(msg), MSG_SUBMITTED, rs->id, rs->partition);
    if (run__transition(r, "InProgress", NULL, "Starting", msg, run_slurm_where(r, rs, NULL)) ==
        RUN_TR_ABANDON) {
        slurmx_detach(r->a->sx, r->job, 0);
        r->creds.granted = 0;
        return RUN_END_PENDING;
    }
    return run_slurm_run(r, rs, c);
}

/* A reclaimed job with a record (its agent restarted, or died, mid-job) whose Slurm job Slurm
   still knows by its id and name: followed again under the same launch token, each launcher's
   reports taken from where the record says they were made durable. 1 when it did (*end). */
static int run_slurm_resume(struct run_ctx *r, struct run_slurm *rs, struct slurmrest *c,
                            json_t *doc, enum run_end *end)
{
    struct run_slurm_rec *rec = calloc(1, sizeof(*rec));
    struct slurmx_attempt at = {run_slurm_report, run_slurm_assign, rs};
    long long acked[STAGE_MAX_HOSTS];
    struct slurmrest_job j;
    struct ty_err err;
    char name[128], msg[300];
    int ok, stop;

    if (!rec)
        return 0;
    slurmscript_name(r->a->deployment, r->job, name, sizeof(name));
    ok = run__slurm_rec_read(r, rec) == 0 && rec->nh == r->nh &&
         slurmrest_job(c, rec->slurm_id, &j, &err) == 0 && strcmp(j.name, name) == 0;
    if (ok) {
        run_slurm_restore(r, rs, rec);
        for (int i = 0; i < r->nh; i++)
            acked[i] = rec->h[i].acked;
    }
    stop = rec->stop;
    free(rec);
    if (!ok)
        return 0;
    for (int i = 0; i < r->nh; i++)
        if (run__logs_new(r, &r->h[i], 0) != 0) {
            *end = run__finish_failed(r, "InternalServerError: out of memory");
            return 1;
        }
    if (!(rs->asg = run_slurm_asg(r, doc, rs->attempt)) ||
        slurmx_attach(r->a->sx, r->job, rs->attempt, r->nh, rs->token, &at, acked, &err) != 0) {
        *end = run__finish_failed(r, "InternalServerError: cannot follow the job's Slurm job "
                                     "again after its agent restarted");
        return 1;
    }
    slurmx_follow(r->a->sx, r->job, rs->id);
    if (stop)
        run_slurm_stop(r, rs, stop);
    run__fmt(msg, sizeof(msg), "trainyard: the agent restarted and follows Slurm job %ld again",
             rs->id);
    run__log_line(r, msg);
    ty_log(TY_LOG_INFO, "agent.slurm.resumed", "job=%s slurm_job=%ld state=%s", r->job, rs->id,
           j.state);
    *end = run_slurm_run(r, rs, c);
    return 1;
}

enum run_end run__slurm(struct run_ctx *r)
{
    char reason[RUN_REASON_MAX + 1], secondary[64] = "";
    struct run_slurm *rs = calloc(1, sizeof(*rs));
    struct slurmrest *c = NULL;
    struct ty_err err;
    enum run_end end = RUN_END_PENDING;
    json_t *doc;
    int gone = 0;

    if (!rs)
        return RUN_END_PENDING;
    rs->r = r;
    pthread_mutex_init(&rs->mu, NULL);
    pthread_cond_init(&rs->cv, NULL);
    for (int i = 0; i < STAGE_MAX_HOSTS; i++)
        rs->h[i].phase = -1;
    if (!(doc = run__get(r, &gone))) {
        end = gone ? RUN_END_ACK : RUN_END_PENDING;
        goto out;
    }
    run__fmt(secondary, sizeof(secondary), "%s",
             json_string_value(json_object_get(doc, "SecondaryStatus"))
                 ? json_string_value(json_object_get(doc, "SecondaryStatus"))
                 : "");
    if (!(c = slurmx_client(r->a->sx, 1, &err))) {
        run__fmt(reason, sizeof(reason), "InternalServerError: Slurm: %s", err.msg);
        end = run__finish_failed(r, reason);
    } else if (!r->run->reclaimed || (!run_slurm_resume(r, rs, c, doc, &end) &&
                                      !run_slurm_reclaimed(r, c, secondary, &end))) {
        rs->attempt = r->run->reclaimed ? 2 : 1;
        end = run_slurm_attempt(r, rs, c, doc);
    }
    json_decref(doc);
out:
    slurmrest_close(c);
    json_decref(rs->asg);
    json_decref(rs->addrs);
    pthread_cond_destroy(&rs->cv);
    pthread_mutex_destroy(&rs->mu);
    free(rs);
    return end;
}
