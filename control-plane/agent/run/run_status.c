/*
 * run_status.c - the job document as the runner sees it: status transitions (each through
 * store_job_transition with `expect`, so a concurrent StopTrainingJob wins), the job's outbox
 * (outbox.h: what Redis did not take, replayed in order, spilled logs and metrics included),
 * the retry and backoff while Redis is away, and reading the document back.
 *
 * Does not own what is written (the callers build the sets) nor the connection's lifetime
 * beyond reopening it after an error. Runner thread only.
 */
#include "run_int.h"

#include "metricdefs.h"
#include "outbox.h"
#include "ty_log.h"

#include <math.h>
#include <string.h>

#define RUN_STORE_TRIES   3  /* a transition's direct tries before it goes to the outbox */
#define RUN_RETRY_FLOOR_S 60 /* waited at least, even past the job's MaxRuntime */

/* ---- store helpers ---- */

/* Reopens the runner's store connection after a Redis error. */
void run__store_reopen(struct run_ctx *r)
{
    struct ty_err err;

    store_close(r->io.s);
    r->io.s = store_open(r->a->cfg.redis_url, &err);
    if (!r->io.s)
        ty_log(TY_LOG_WARN, "agent.store.reconnect", "job=%s error='%s'", r->job, err.msg);
    else
        store_set_identity(r->io.s, r->region, r->account[0] ? r->account : NULL);
}

/* ---- the job's outbox (outbox.h): what Redis did not take, replayed in order ---- */

/* Replays the job's outbox when it has one. 0 when it is empty now (r->io.ob cleared, and the
   log readers write directly again), -1 while Redis is away. */
int run__outbox_drain(struct run_ctx *r)
{
    struct ty_err err;

    if (!r->io.ob)
        return 0;
    if (ty_wall_s() < r->io.drain_after)
        return -1; /* the last try failed less than a second ago */
    if (!r->io.s)
        run__store_reopen(r);
    ty_err_clear(&err);
    if (!r->io.s || outbox_replay(r->io.s, r->a->cfg.data_dir, r->job, &err) != 0) {
        store_close(r->io.s);
        r->io.s = NULL;
        r->io.drain_after = ty_wall_s() + 1.0;
        return -1;
    }
    store_set_identity(r->io.s, r->region, r->account[0] ? r->account : NULL);
    r->io.ob = 0;
    for (int i = 0; i < r->nh; i++) {
        struct run_logs *l = r->h[i].logs;
        if (!l)
            continue;
        pthread_mutex_lock(&l->mu);
        /* else the runner's next tick moves them first */
        if (json_array_size(l->batch) == 0 && json_array_size(l->mpend) == 0)
            atomic_store(&l->spill, 0);
        pthread_mutex_unlock(&l->mu);
    }
    ty_log(TY_LOG_INFO, "agent.outbox.drained", "job=%s", r->job);
    return 0;
}

/* Moves l's pending metric points into the outbox, one record per metric. Call with l->mu
   held. */
static void run_metrics_spill(struct run_ctx *r, struct run_logs *l)
{
    struct store_metric_point sp[256];
    struct ty_err err;
    json_t *dims;

    run__metrics_collect(l);
    if (json_array_size(l->mpend) == 0 || !(dims = run__metrics_dims(l)))
        return;
    for (int def = 0; def < metricdefs_count(l->metrics); def++) {
        size_t from = 0, k;
        while ((k = run__metrics_of(l, def, &from, sp, 256)) > 0) {
            int rc = outbox_metrics(r->a->cfg.data_dir, r->job, STORE_METRICS_NS_SAGEMAKER,
                                    metricdefs_name(l->metrics, def), dims, sp, k, &err);
            json_t *jdims = rc == 0 ? run__metrics_job_dims(l) : NULL;
            if (jdims) {
                run__metrics_job_seq(l, sp, k);
                rc = outbox_metrics(r->a->cfg.data_dir, r->job, STORE_METRICS_NS_SAGEMAKER,
                                    metricdefs_name(l->metrics, def), jdims, sp, k, &err);
                json_decref(jdims);
            }
            if (rc == 0)
                r->io.ob = 1;
            else if (rc == 1)
                l->dropped += (long)k;
            else
                ty_log(TY_LOG_WARN, "agent.outbox.write_failed", "job=%s error='%s'", r->job,
                       err.msg);
        }
    }
    json_decref(dims);
    json_array_clear(l->mpend);
}

/* Moves host h's events the reader could not append into the outbox (behind what is there). */
static void run_logs_spill(struct run_ctx *r, struct run_host *h)
{
    struct run_logs *l = h->logs;
    struct ty_err err;
    int rc;

    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    if (atomic_load(&l->spill) || r->io.ob)
        run_metrics_spill(r, l);
    if ((atomic_load(&l->spill) || r->io.ob) && json_array_size(l->batch) > 0) {
        rc = outbox_logs(r->a->cfg.data_dir, r->job, r->region, r->account, l->stream, l->batch,
                         &err);
        if (rc == 0)
            r->io.ob = 1;
        if (rc >= 0) { /* kept, or dropped because the outbox is full */
            if (rc == 1)
                l->dropped += (long)json_array_size(l->batch);
            json_array_clear(l->batch);
            l->batch_bytes = 0;
        } else {
            ty_log(TY_LOG_WARN, "agent.outbox.write_failed", "job=%s error='%s'", r->job, err.msg);
        }
        atomic_store(&l->spill, 1);
    }
    pthread_mutex_unlock(&l->mu);
}

/* The readers' pending events: appended now, or into the outbox when it is in use (order).
   force: what Redis did not take goes into the outbox now (the readers are done). */
void run__logs_flush_all(struct run_ctx *r, int force)
{
    for (int i = 0; i < r->nh; i++) {
        struct run_logs *l = r->h[i].logs;
        if (!l)
            continue;
        if (!r->io.ob && !atomic_load(&l->spill))
            run__logs_flush(l, r->io.s);
        if (force) {
            pthread_mutex_lock(&l->mu);
            run__metrics_collect(l);
            if (json_array_size(l->batch) > 0 || json_array_size(l->mpend) > 0)
                atomic_store(&l->spill, 1);
            pthread_mutex_unlock(&l->mu);
        }
        if (r->io.ob || atomic_load(&l->spill))
            run_logs_spill(r, &r->h[i]);
    }
    if (r->io.ob)
        run__outbox_drain(r);
}

/* Appends transition t into the outbox and tries a replay. 0, or -1 when the outbox cannot be
   written either. */
static int run_transition_outbox(struct run_ctx *r, struct store_transition *t)
{
    struct ty_err err;

    t->now = ty_wall_s();
    if (outbox_transition(r->a->cfg.data_dir, r->job, t, &err) != 0) {
        ty_log(TY_LOG_ERROR, "agent.outbox.write_failed", "job=%s error='%s'", r->job, err.msg);
        return -1;
    }
    r->io.ob = 1;
    ty_log(TY_LOG_INFO, "agent.job.transition_buffered", "job=%s status=%s secondary=%s", r->job,
           t->status ? t->status : "-", t->secondary ? t->secondary : "-");
    run__outbox_drain(r);
    return 0;
}

/*
 * Applies one transition. set is stolen (may be NULL). While Redis is away (or the job's
 * outbox is not yet replayed), the transition goes into the outbox, to be replayed in order
 * when Redis is back, and counts as applied: the runner goes on supervising.
 * Returns RUN_TR_DONE (applied or buffered), RUN_TR_CONFLICT (r->cur = the job's status, ""
 * when it is gone) or RUN_TR_ABANDON (the agent is stopping, or no disk for the outbox).
 */
enum run_tr run__transition(struct run_ctx *r, const char *expect, const char *status,
                            const char *secondary, const char *message, json_t *set)
{
    struct store_transition t = {
        .expect = expect, .status = status, .secondary = secondary, .message = message, .set = set};
    struct ty_err err;
    enum run_tr tr = RUN_TR_ABANDON;
    int answered = 0; /* Redis answered: applied, or refused */

    r->cur[0] = '\0';
    if (r->io.ob && !atomic_load(&r->a->stopping)) {
        tr = run_transition_outbox(r, &t) == 0 ? RUN_TR_DONE : RUN_TR_ABANDON;
        goto done;
    }
    for (int i = 0; i < RUN_STORE_TRIES; i++) {
        json_t *doc;
        if (!r->io.s)
            run__store_reopen(r);
        if (r->io.s) {
            t.now = ty_wall_s();
            ty_err_clear(&err);
            doc = store_job_transition(r->io.s, r->job, &t, &err);
            if (doc) {
                json_decref(doc);
                tr = RUN_TR_DONE;
                answered = 1;
                break;
            }
            if (err.code == TY_ECONFLICT) {
                run__fmt(r->cur, sizeof(r->cur), "%s", err.msg);
                tr = RUN_TR_CONFLICT;
                answered = 1;
                break;
            }
            if (err.code == TY_ENOTFOUND) {
                tr = RUN_TR_CONFLICT;
                answered = 1;
                break;
            }
            ty_log(TY_LOG_WARN, "agent.job.transition_failed", "job=%s to=%s/%s error='%s'", r->job,
                   status ? status : "-", secondary ? secondary : "-", err.msg);
            store_close(r->io.s);
            r->io.s = NULL;
        }
        if (agent__sleep(r->a, 500 << i))
            break;
    }
    if (!answered && !atomic_load(&r->a->stopping) && run_transition_outbox(r, &t) == 0)
        tr = RUN_TR_DONE; /* Redis away: buffered, replayed when it is back */
done:
    json_decref(set);
    if (tr == RUN_TR_DONE)
        ty_log(TY_LOG_INFO, "agent.job.transition", "job=%s status=%s secondary=%s", r->job,
               status ? status : "-", secondary ? secondary : "-");
    return tr;
}

/* 1 when Redis does not answer now (a fresh connection's PING fails). */
int run__redis_down(struct run_ctx *r)
{
    struct ty_err err;
    struct store *s = store_open(r->a->cfg.redis_url, &err);
    int down = !s || store_ping(s, &err) != 0;

    store_close(s);
    return down;
}

/* 1 when err (a failed store, object store or transfer call) is worth retrying: Redis is
   behind it, or does not answer now. */
int run__transient(struct run_ctx *r, const struct ty_err *err)
{
    /* a ClientError is waited out only while Redis is really down (a lookup that failed with
       it reads as a missing object), never for its text: a key or a LocalPath naming "redis"
       once retried a refused archive until MaxRuntime */
    if (strncmp(err->msg, "ClientError", 11) == 0)
        return run__redis_down(r);
    return err->code == TY_EREDIS || strstr(err->msg, "redis") != NULL || run__redis_down(r);
}

/* Epoch seconds until which a Redis outage is waited out: the job's remaining time
   (MaxRuntimeInSeconds from the start, SageMaker's default without one), at least
   RUN_RETRY_FLOOR_S from now. */
double run__retry_deadline(struct run_ctx *r)
{
    double start = r->t_start > 0 ? r->t_start : ty_wall_s();
    double d = start + (r->sp.max_runtime_s > 0 ? r->sp.max_runtime_s : RUN_CREDS_DEF_S);

    return d > ty_wall_s() + RUN_RETRY_FLOOR_S ? d : ty_wall_s() + RUN_RETRY_FLOOR_S;
}

/* Sleeps before retry number *attempt (capped exponential backoff with jitter), then counts
   it. 0 to retry, -1 when the deadline would pass or the agent is stopping. */
int run__backoff(struct run_ctx *r, double deadline, int *attempt)
{
    int base = RUN_RETRY_BASE_MS << (*attempt < 5 ? *attempt : 5), ms;

    if (base > RUN_RETRY_MAX_MS)
        base = RUN_RETRY_MAX_MS;
    ms = base / 2 + (int)((unsigned)rand() % (unsigned)(base / 2 + 1)); /* jitter: 50-100% */
    if (ty_wall_s() + ms / 1000.0 > deadline)
        return -1;
    (*attempt)++;
    if (agent__sleep(r->a, ms))
        return -1;
    run__logs_flush_all(r, 0); /* and the outbox, when Redis is back meanwhile */
    return 0;
}

/* Region and account of the job from its ARN (arn:aws:sagemaker:<region>:<account>:...), so
   that the log stream ARNs the store builds match the job's. */
void run__arn_identity(struct run_ctx *r)
{
    const char *arn = r->sp.arn, *f[6];
    int n = 0;

    /* fields: arn : aws : sagemaker : region : account : resource */
    f[n++] = arn;
    for (const char *p = arn; *p && n < 6; p++) {
        if (*p == ':')
            f[n++] = p + 1;
    }
    if (n == 6 && strncmp(arn, "arn:", 4) == 0) {
        int rl = (int)(f[4] - f[3] - 1), al = (int)(f[5] - f[4] - 1);
        if (rl > 0 && rl < (int)sizeof(r->region))
            run__fmt(r->region, sizeof(r->region), "%.*s", rl, f[3]);
        if (al > 0 && al < (int)sizeof(r->account))
            run__fmt(r->account, sizeof(r->account), "%.*s", al, f[4]);
    }
    if (r->io.s)
        store_set_identity(r->io.s, r->region, r->account[0] ? r->account : NULL);
}

/* new: the job document, NULL when gone (*gone = 1) or on a Redis error (*gone = 0). */
json_t *run__get(struct run_ctx *r, int *gone)
{
    struct ty_err err;
    json_t *doc;

    *gone = 0;
    if (!r->io.s)
        run__store_reopen(r);
    if (!r->io.s)
        return NULL;
    doc = store_job_get(r->io.s, r->job, &err);
    if (!doc) {
        if (err.code == TY_ENOTFOUND)
            *gone = 1;
        else {
            store_close(r->io.s);
            r->io.s = NULL;
        }
    }
    return doc;
}

const char *run__status_of(json_t *doc)
{
    const char *s = json_string_value(json_object_get(doc, "TrainingJobStatus"));
    return s ? s : "";
}

/* Adds the timing members to set (not stolen). */
void run__set_times(struct run_ctx *r, json_t *set)
{
    double end = r->t_end > 0 ? r->t_end : ty_wall_s();
    long secs;

    if (r->t_start <= 0)
        return;
    secs = lround(end - r->t_start);
    if (secs < 1)
        secs = 1;
    json_object_set_new(set, "TrainingEndTime", json_real(end));
    json_object_set_new(set, "TrainingTimeInSeconds", json_integer(secs));
    json_object_set_new(set, "BillableTimeInSeconds", json_integer(secs));
}

void run__set_metrics(struct run_ctx *r, json_t *set)
{
    json_t *m;

    /* FinalMetricDataList comes from algo-1's log, the host SageMaker's metrics follow */
    if (!r->h[0].logs || metricdefs_count(r->h[0].logs->metrics) == 0)
        return;
    m = metricdefs_final(r->h[0].logs->metrics, NULL);
    if (m)
        json_object_set_new(set, "FinalMetricDataList", m);
}
