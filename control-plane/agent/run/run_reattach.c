/*
 * run_reattach.c - taking over a job whose containers an earlier agent started (the
 * re-attach record and plan are reattach.h's): naming its hosts, finding their containers,
 * sandboxes and relays again, and resuming their log streams where the stream ends.
 *
 * Does not own the decision to re-attach (run.c, from the plan) nor supervising afterwards
 * (run_container.c). Runner thread only.
 */
#include "run_int.h"

#include "reap.h"
#include "reattach.h"
#include "sandbox.h"
#include "ty_log.h"
#include "volume.h"

#define RUN_ATTACH_LIST_S 60 /* a re-attach waits this long for the engine to list containers */

/* Names host i of the job: algo-<i+1>, its staging dir and container name. */
void run__host_init(struct run_ctx *r, int i)
{
    struct run_host *h = &r->h[i];

    h->index = i;
    stage_host_name(i, h->name, sizeof(h->name));
    run__fmt(h->vol, sizeof(h->vol), "%s/%s", r->dir, h->name);
    run__fmt(h->dir, sizeof(h->dir), "%s/ml", h->vol);
    char base[sizeof(h->cname)];

    reap_job_name(r->a->deployment, r->job, base, sizeof(base));
    run__fmt(h->cname, sizeof(h->cname), "%s-%s", base, h->name);
}

/* The name of host h's log stream as an earlier agent named it (the newest "<job>/<host>-<epoch>"),
   or a new one when the store has none. */
static void run_reattach_stream(struct run_ctx *r, struct run_host *h)
{
    char prefix[128];
    struct ty_err err;
    json_t *list = NULL, *last;

    run__fmt(prefix, sizeof(prefix), "%s/%s-", r->job, h->name);
    if (r->io.s)
        list = store_log_streams(r->io.s, RUN_LOG_GROUP, prefix, 0, 0, &err);
    last = json_array_get(list, json_array_size(list) - 1);
    if (json_string_value(json_object_get(last, "logStreamName")))
        run__fmt(h->stream, sizeof(h->stream), "%s",
                 json_string_value(json_object_get(last, "logStreamName")));
    else
        run__fmt(h->stream, sizeof(h->stream), "%s%lld", prefix, (long long)ty_wall_s());
    json_decref(list);
}

/* A one-host job's sandbox that was the agent's spare (spare.h) carries no job label: it is
   found by the name it took. Its id goes to h->sbid, so that it is removed with the job. */
static void run_reattach_spare(struct run_ctx *r, struct run_host *h)
{
    struct docker_state st;
    struct ty_err err;
    char name[256];

    if (h->sbid[0] || r->nh != 1 || !h->cid[0] || !r->a->deployment[0])
        return;
    sandbox_job_name(r->a->deployment, r->job, name, sizeof(name));
    if (docker_inspect(r->io.d, name, &st, &err) != 0 || !st.id[0])
        return;
    run__fmt(h->sbid, sizeof(h->sbid), "%s", st.id);
    ty_log(TY_LOG_INFO, "agent.reattach.spare", "job=%s host=%s container=%.12s", r->job, h->name,
           h->sbid);
}

/* Takes host h's container over: starts it when it never was, binds the relay again (in its
   sandbox, or in the container itself) and reads its logs from where the stream ends. */
static void run_reattach_host(struct run_ctx *r, struct run_host *h, const struct reattach_host *ph,
                              int stopping)
{
    struct docker_state st = {0};
    struct ty_err err;
    long skip = 0;

    if (!ph->started && !stopping) {
        if (docker_start(r->io.d, h->cid, &err) != 0) {
            ty_log(TY_LOG_WARN, "agent.reattach.start_failed", "job=%s host=%s error='%s'", r->job,
                   h->name, err.msg);
            h->exited = 1;
            h->st.exit_code = 127;
            return;
        }
        ty_log(TY_LOG_INFO, "agent.job.started", "job=%s host=%s container=%.12s", r->job, h->name,
               h->cid);
    }
    if (run__relay_wanted(r) && (ph->running || !ph->started) &&
        docker_inspect(r->io.d, h->sbid[0] ? h->sbid : h->cid, &st, &err) == 0 && st.pid > 0)
        run__relay_start(r, h, st.pid);
    if (h->log_base >= 0 && r->io.s) {
        long n = store_log_count(r->io.s, RUN_LOG_GROUP, h->stream, &err);
        skip = n > h->log_base ? n - h->log_base : 0;
    } else {
        ty_log(TY_LOG_WARN, "agent.reattach.log_base_unknown",
               "job=%s host=%s note='its log is read again from the start'", r->job, h->name);
    }
    if (run__start_logs(r, h, skip) != 0)
        ty_log(TY_LOG_ERROR, "agent.logs.start_failed", "job=%s host=%s", r->job, h->name);
}

/*
 * A reclaimed job (its agent died, or restarted): takes over what an earlier agent of this engine
 * started instead of running the job's script again (reattach.h), and follows it to its end as
 * that agent would have. secondary and t_doc: the job's SecondaryStatus and TrainingStartTime;
 * stopping: it is Stopping. Returns 1 when the job was dealt with (OUT: *out, how its run ends),
 * 0 when nothing of it ever ran: start it anew.
 */
int run__reattach(struct run_ctx *r, const char *secondary, double t_doc, int stopping,
                  enum run_end *out)
{
    static const char *const actions[] = {"fresh", "attach", "fail"};
    struct reattach_record rec;
    struct reattach_plan plan;
    struct ty_err err;
    char filter[200], reason[RUN_REASON_MAX + 1];
    double deadline = ty_wall_s() + RUN_ATTACH_LIST_S;
    json_t *list;
    int have_rec, running = 0;

    run__fmt(filter, sizeof(filter), "trainyard.job=%s", r->job);
    while (!(list = docker_list(r->io.d, filter, &err))) {
        ty_log(TY_LOG_WARN, "agent.reattach.list_failed", "job=%s error='%s'", r->job, err.msg);
        if (ty_wall_s() >= deadline) {
            run__fmt(reason, sizeof(reason),
                     "InternalServerError: the agent running this job was lost, and the container "
                     "engine did not answer to take its containers over: %s",
                     err.msg);
            *out = run__finish_failed(r, reason);
            return 1;
        }
        if (agent__sleep(r->a, 2000)) {
            *out = RUN_END_PENDING;
            return 1;
        }
    }
    for (size_t i = json_array_size(list); i-- > 0;)
        if (!reap_is_ours(json_array_get(list, i), r->a->deployment))
            json_array_remove(list, i); /* another deployment's job of the same name */
    have_rec = reattach_record_read(r->dir, &rec) == 0;
    reattach_plan(list, have_rec ? &rec : NULL, r->nh, secondary, &plan);
    json_decref(list);
    ty_log(TY_LOG_INFO, "agent.reattach.plan",
           "job=%s action=%s hosts=%d record=%d secondary=%s stopping=%d extra=%d", r->job,
           actions[plan.action], r->nh, have_rec, secondary, stopping, plan.extra);
    if (plan.action == REATTACH_FRESH) {
        reattach_record_remove(r->dir);
        return 0;
    }
    r->t_start = t_doc > 0 ? t_doc : (have_rec && rec.t_start > 0 ? rec.t_start : 0);
    if (plan.action == REATTACH_FAIL) {
        run__remove_leftovers(r);
        r->t_end = ty_wall_s();
        *out = run__finish_failed(r, plan.reason);
        return 1;
    }
    if (r->t_start <= 0)
        r->t_start = ty_wall_s();
    if (r->nh > 1 && !r->sp.network_isolation)
        reap_job_name(r->a->deployment, r->job, r->net, sizeof(r->net));
    r->creds.granted = run__relay_wanted(r) && r->sp.role_arn[0]; /* revoked when the job ends */
    r->prof.on = r->prof.cfg != NULL;
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        const struct reattach_host *ph = &plan.h[i];
        run__ckpt_dir(r, h);
        if (r->sp.checkpoint_uri[0])
            h->ckpt_seen = json_object(); /* the first sync uploads them all again */
        h->log_base = -1;
        if (have_rec && i < rec.nh && rec.h[i].stream[0]) {
            run__fmt(h->stream, sizeof(h->stream), "%s", rec.h[i].stream);
            h->log_base = rec.h[i].log_base;
            h->last_log_ts = rec.last_log_ts;
        } else {
            run_reattach_stream(r, h);
        }
        run__fmt(h->cid, sizeof(h->cid), "%s", ph->cid);
        run__fmt(h->sbid, sizeof(h->sbid), "%s", ph->sbid);
        run_reattach_spare(r, h);
        if (ph->gpus[0]) /* the GPUs its container holds are its own again, not fresh ones */
            agent__gpus_adopt(r->a, r->run, ph->gpus);
        if (ph->from_record) {
            h->exited = 1;
            h->st.exit_code = ph->exit_code;
            h->st.oom_killed = ph->oom_killed;
        }
        running += ph->running;
    }
    ty_log(TY_LOG_INFO, "agent.job.reattached", "job=%s hosts=%d running=%d t_start=%.3f", r->job,
           r->nh, running, r->t_start);
    run__use_record(r);
    for (int i = 0; r->a->volumes && i < r->nh; i++) {
        struct ty_err verr;
        if (volume_adopt(r->h[i].vol, r->sp.volume_gb, &verr) != 0)
            ty_log(TY_LOG_WARN, "agent.volume.not_found", "job=%s host=%s note='%s'", r->job,
                   r->h[i].name, verr.msg);
    }
    for (int i = 0; i < r->nh; i++)
        if (r->h[i].cid[0])
            run_reattach_host(r, &r->h[i], &plan.h[i], stopping);
    *out = run__conclude(r, stopping ? RUN_STOPPED : run__supervise(r));
    return 1;
}
