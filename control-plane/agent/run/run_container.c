/*
 * run_container.c - the job's containers and what surrounds them: the role's credentials and
 * trainyard's API inside (session.h, relay.h), the sandbox that owns each host's network
 * namespace, the job network's fence, container create and start, starting the log readers,
 * supervising (Stop, MaxRuntime, exits, instance metrics, the profiler's live uploads), the
 * kill, draining the logs and the failure reason.
 *
 * Does not own what happens after the containers end (run.c, run_upload.c). Runner thread
 * only; the log readers it starts are run_logs.c's.
 */
#include "run_int.h"

#include "fence.h"
#include "gpumetrics.h"
#include "hostcfg.h"
#include "instances.h"
#include "instmetrics.h"
#include "jobpolicy.h"
#include "metricdefs.h"
#include "prof.h"
#include "reap.h"
#include "relay.h"
#include "sandbox.h"
#include "spare.h"
#include "ty_log.h"
#include "ty_time.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RUN_TICK_MS       200
#define RUN_POLL_MS       1000  /* job document poll (Stop, MaxRuntime) */
#define RUN_METRICS_MS    5000  /* FinalMetricDataList refresh while training */
#define RUN_INSTANCE_MS   2000  /* instance metrics (CPU, memory, disk) sampling */
#define RUN_PROF_LIVE_MS  2000  /* the profiler's system metrics uploaded while training */
#define RUN_KILL_WAIT_S   30    /* after SIGKILL */
#define RUN_LOGS_DRAIN_S  10    /* for the log reader after the container is gone */
#define RUN_CKPT_MS       10000 /* checkpoint upload period while training */
#define RUN_CREDS_SLACK_S 3600  /* container token life past MaxRuntime (staging, upload) */
#define RUN_TYPROF        "/usr/local/bin/typrof"

/* ---- container ---- */

/* Deletes the host firewall rules of the job network's bridge (fence.h). */
void run__unfence(struct run_ctx *r)
{
    char br[FENCE_IFNAME_MAX];
    fence_ifname(r->net, br, sizeof(br));
    fence_unbridge(br);
}

/* Removes containers (and the network) of this job left by a previous (dead) agent on this
   engine. */
void run__remove_leftovers(struct run_ctx *r)
{
    struct ty_err err;

    reap_job(r->io.d, r->a->deployment, r->job,
             0); /* containers, sandboxes, network, fence (reap.h) */
    for (int h = 0; h < r->nh; h++)
        docker_remove(r->io.d, r->h[h].cname, 1, &err);
}

/* ---- role credentials and trainyard's API inside the containers (session.h, relay.h) ---- */

/* 1 when the job's containers get trainyard's API (and the role's credentials) on
   127.0.0.1:RELAY_PORT: not with EnableNetworkIsolation (as on SageMaker, no credentials
   either), and only when the agent knows trainyard's address. */
int run__relay_wanted(const struct run_ctx *r)
{
    const char *ep = r->a->cfg.endpoint_url;
    return !r->sp.network_isolation && ep && ep[0];
}

/* Grants the job a container token for its RoleArn (revoking what an earlier run of the job
   left). 0 (also when the job gets none), or -1 with reason filled. */
int run__creds_grant(struct run_ctx *r, char *reason, size_t n)
{
    struct ty_err err;
    char *policy = NULL;
    long ttl;

    if (!run__relay_wanted(r) || !r->sp.role_arn[0])
        return 0;
    ttl = (r->sp.max_runtime_s > 0 ? r->sp.max_runtime_s : RUN_CREDS_DEF_S) + RUN_CREDS_SLACK_S;
    if (ttl > SESSION_MAX_TTL_S)
        ttl = SESSION_MAX_TTL_S;
    if (!r->io.s)
        run__store_reopen(r);
    ty_err_clear(&err);
    if ((jobpolicy_scoped(r->sp.role_arn) && jobpolicy_build(&r->sp, &policy, &err) != 0) ||
        !r->io.s || session_job_revoke(r->io.s, r->job, &err) != 0 ||
        session_job_grant(r->io.s, r->job, r->sp.role_arn, policy, (int)ttl, r->creds.token,
                          sizeof(r->creds.token), &err) != 0) {
        free(policy);
        r->creds.token[0] = '\0';
        run__fmt(reason, n, "InternalServerError: cannot grant the role '%s' to the job: %s",
                 r->sp.role_arn, r->io.s ? err.msg : "no connection to the store");
        return -1;
    }
    r->creds.granted = 1;
    ty_log(TY_LOG_INFO, "agent.job.creds_granted", "job=%s role='%s' ttl_s=%ld scoped=%d", r->job,
           r->sp.role_arn, ttl, policy != NULL);
    free(policy);
    return 0;
}

/* Revokes the job's token and every credential minted from it (when the job ends). */
static void run_creds_revoke(struct run_ctx *r)
{
    struct ty_err err;

    if (!r->creds.granted)
        return;
    if (!r->io.s)
        run__store_reopen(r);
    if (r->io.s && session_job_revoke(r->io.s, r->job, &err) == 0) {
        r->creds.granted = 0;
        memset(r->creds.token, 0, sizeof(r->creds.token));
        ty_log(TY_LOG_INFO, "agent.job.creds_revoked", "job=%s", r->job);
    } else {
        ty_log(TY_LOG_WARN, "agent.job.creds_revoke_failed", "job=%s error='%s'", r->job,
               r->io.s ? err.msg : "no connection to the store");
    }
}

void run__use_record(struct run_ctx *r)
{
    struct instances_limits lim;
    struct agent_use u = {0};

    instances_limits(r->sp.instance_type, r->a->host_cpus, r->a->host_memory, r->a->host_gpus,
                     &lim);
    run__fmt(u.type, sizeof(u.type), "%s", r->sp.instance_type);
    u.hosts = r->nh;
    u.cpus = lim.cpus * r->nh;
    u.memory_bytes = lim.memory_bytes * r->nh;
    u.gpus = (lim.gpus > 0 ? lim.gpus : 0) * r->nh;
    u.volume_gb = r->a->volumes ? r->sp.volume_gb * r->nh : 0;
    agent__use_set(r->a, r->run, &u);
}

/* Starts host h's relay inside the network namespace of process pid. */
void run__relay_start(struct run_ctx *r, struct run_host *h, int pid)
{
    const char *proxy = r->a->cfg.relay_proxy;
    struct relay_opts o = {.pid = pid,
                           .port = RELAY_PORT,
                           .target = proxy ? proxy : r->a->cfg.endpoint_url,
                           .job = r->job,
                           .proxy_header = proxy != NULL};
    struct ty_err err;

    ty_err_clear(&err);
    if (!(h->relay = relay_start(&o, &err)))
        ty_log(TY_LOG_WARN, "agent.relay.failed",
               "job=%s host=%s pid=%d error='%s' note='no trainyard API or credentials inside'",
               r->job, h->name, pid, err.msg);
    else
        ty_log(TY_LOG_INFO, "agent.relay.started", "job=%s host=%s port=%d target='%s'", r->job,
               h->name, RELAY_PORT, o.target);
}

/* Removes host h's sandbox container (SIGKILL first: its sleep ignores SIGTERM as PID 1). */
static void run_sandbox_remove(struct run_ctx *r, struct run_host *h)
{
    struct ty_err err;

    if (h->sbid[0] && sandbox_remove(r->io.d, h->sbid, &err) == 0)
        h->sbid[0] = '\0';
}

/* The agent's spare sandbox for host h (spare.h), when the job can have it: one host, no job
   network, no warm pool to keep it in (a pool's sandbox must carry its job's label). 0 with
   h->sbid and *pid, or -1. */
static int run_sandbox_spare(struct run_ctx *r, struct run_host *h, int *pid)
{
    char name[240];
    double t0 = ty_wall_s();

    if (!r->a->spare || r->nh != 1 || r->net[0] || r->warm.keep_alive > 0)
        return -1;
    /* the name reap.c and run_reattach.c look it up by */
    sandbox_job_name(r->a->deployment, r->job, name, sizeof(name));
    if (spare_take(r->a->spare, r->io.d, name, h->sbid, sizeof(h->sbid), pid) != 0)
        return -1;
    ty_log(TY_LOG_INFO, "agent.sandbox.spare", "job=%s host=%s container=%.12s ms=%.0f", r->job,
           h->name, h->sbid, (ty_wall_s() - t0) * 1000.0);
    return 0;
}

/*
 * Gives host h its sandbox: a sleeping container of the runtime image that owns the host's
 * network namespace (the job network with the host's alias, or none for one host), and binds the
 * relay inside it, all before the training container (which joins it with NetworkMode
 * container:<sandbox>) exists, so that its first connection finds the relay. A warm pool's is
 * used again; else a one-host job takes the agent's spare (spare.h), made ahead; else one is
 * made. When none can be made (no runtime image), the relay is bound right after the training
 * container starts (run__relay_late). 0, or -1 with no sandbox.
 */
int run__sandbox(struct run_ctx *r, struct run_host *h)
{
    const char *aliases[2] = {h->name, NULL};
    const char *image = r->a->cfg.runtime_image;
    struct sandbox_opts o = {0};
    struct docker_state st;
    struct ty_err err;
    char name[240];
    json_t *labels = NULL;
    int pid = 0;

    if (!run__relay_wanted(r))
        return 0;
    ty_err_clear(&err);
    if (h->sbid[0]) { /* a warm pool's (run_warm_take checked that it runs) */
        if (docker_inspect(r->io.d, h->sbid, &st, &err) == 0 && st.running && st.pid > 0) {
            run__relay_start(r, h, st.pid);
            return 0;
        }
        run_sandbox_remove(r, h);
        h->sbid[0] = '\0';
    }
    if (run_sandbox_spare(r, h, &pid) == 0) {
        run__relay_start(r, h, pid);
        return 0;
    }
    if (!image || docker_image_exists(r->io.d, image, &err) != 1) {
        ty_log(TY_LOG_WARN, "agent.sandbox.no_image",
               "job=%s image='%s' note='relay bound after the container starts'", r->job,
               image ? image : "");
        return -1;
    }
    run__fmt(name, sizeof(name), "%s-net", h->cname);
    labels = json_pack("{s:s, s:s, s:s, s:s, s:s}", "trainyard.deployment", r->a->deployment,
                       "trainyard.job", r->job, "trainyard.agent", r->a->id, "trainyard.host",
                       h->name, SANDBOX_LABEL, "1");
    o.image = image;
    o.name = name;
    o.hostname = h->name;
    o.labels = labels;
    o.seccomp = r->a->seccomp_path[0] ? r->a->seccomp_path : NULL;
    if (r->net[0]) {
        o.network = r->net;
        o.aliases = aliases;
    }
    if (labels && sandbox_make(r->io.d, &o, h->sbid, sizeof(h->sbid), &pid, &err) == 0) {
        json_decref(labels);
        run__relay_start(r, h, pid);
        return 0;
    }
    ty_log(TY_LOG_WARN, "agent.sandbox.failed",
           "job=%s host=%s error='%s' note='relay bound after the container starts'", r->job,
           h->name, labels ? err.msg : "out of memory");
    json_decref(labels);
    h->sbid[0] = '\0';
    return -1;
}

/* Without a sandbox: binds the relay in the training container's namespace right after it
   started. Its first connections may come before (refused; botocore's container provider
   retries). */
void run__relay_late(struct run_ctx *r, struct run_host *h)
{
    struct docker_state st = {0};
    struct ty_err err;

    if (!run__relay_wanted(r) || h->sbid[0] || h->relay)
        return;
    if (docker_inspect(r->io.d, h->cid, &st, &err) != 0 || st.pid <= 0) {
        ty_log(TY_LOG_WARN, "agent.relay.failed", "job=%s host=%s error='%s'", r->job, h->name,
               st.pid <= 0 ? "no State.Pid" : err.msg);
        return;
    }
    run__relay_start(r, h, st.pid);
}

/* Stops every host's relay, removes its sandbox (with remove; not when the job is abandoned
   with its containers running: the training container lives in the sandbox's namespace, and a
   reclaim removes both by label), then revokes the job's credentials. */
void run__relay_cleanup(struct run_ctx *r, int remove)
{
    for (int i = 0; i < r->nh; i++) {
        relay_stop(r->h[i].relay);
        r->h[i].relay = NULL;
        if (r->io.d && remove)
            run_sandbox_remove(r, &r->h[i]);
    }
    run_creds_revoke(r);
}

/* new: the labels of host h's training container: whose it is, and the CDI names of its ngpu
   GPUs (trainyard.gpus, read back by a re-attach: run_reattach.c). NULL when out of memory. */
static json_t *run_labels(struct run_ctx *r, struct run_host *h, const char *const *gpu_cdi,
                          int ngpu)
{
    json_t *labels =
        json_pack("{s:s, s:s, s:s, s:s}", "trainyard.deployment", r->a->deployment, "trainyard.job",
                  r->job, "trainyard.agent", r->a->id, "trainyard.host", h->name);
    char names[256] = "";

    if (!labels || ngpu <= 0)
        return labels;
    for (int i = 0; i < ngpu; i++)
        run__fmt(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? "," : "",
                 gpu_cdi[i]);
    json_object_set_new(labels, "trainyard.gpus", json_string(names));
    return labels;
}

/* The GPUs the ledger gave host h (agent__gpus_of): their CDI names and ids into cdi[] and
   ids[], the ids comma-joined into visible (NVIDIA_VISIBLE_DEVICES), their NVML indexes into
   h->nvml_mask. Returns how many. */
static int run_gpus(struct run_ctx *r, struct run_host *h, int lim_gpus, const char **cdi,
                    const char **ids, char *visible, size_t vn)
{
    int n = lim_gpus > 0 ? agent__gpus_of(r->a, r->run, h->index, r->nh, cdi, ids) : 0;

    visible[0] = '\0';
    h->nvml_mask = 0;
    for (int i = 0; i < n; i++) {
        char *end;
        long idx = strtol(ids[i], &end, 10); /* "2", or a MIG slice's GPU, "2:1" */
        run__fmt(visible + strlen(visible), vn - strlen(visible), "%s%s", i ? "," : "", ids[i]);
        if (end != ids[i] && (*end == '\0' || *end == ':') && idx >= 0 && idx < 64)
            h->nvml_mask |= (uint64_t)1 << idx;
    }
    return n;
}

/* Creates host h's container. 0, or -1 with reason filled. */
int run__create(struct run_ctx *r, struct run_host *h, char *reason, size_t n)
{
    struct instances_limits lim;
    struct stage_env_opts eo = {0};
    struct hostcfg_in in = {0};
    struct hostcfg cfg;
    struct ty_err err;
    char visible[512] = "";
    const char *gpu_cdi[AGENT_MAX_GPUS + 1], *gpu_ids[AGENT_MAX_GPUS + 1];
    json_t *labels = NULL;
    int rc = -1, ex;

    ex = docker_image_exists(r->io.d, r->sp.image, &err);
    if (ex == 0) {
        run__fmt(reason, n,
                 "ClientError: image '%s' not found on this agent's container engine and no "
                 "registry is reachable; import it into the engine first",
                 r->sp.image);
        return -1;
    }
    if (ex < 0) {
        run__fmt(reason, n, "InternalServerError: container engine: %s", err.msg);
        return -1;
    }
    instances_limits(r->sp.instance_type, r->a->host_cpus, r->a->host_memory, r->a->host_gpus,
                     &lim);
    if (!lim.known)
        ty_log(TY_LOG_WARN, "agent.job.instance_unknown", "job=%s type='%s' limits=none", r->job,
               r->sp.instance_type);
    if (lim.clamped)
        ty_log(TY_LOG_INFO, "agent.job.limits_clamped",
               "job=%s type=%s cpus=%d memory_bytes=%lld host_cpus=%d host_memory=%lld", r->job,
               r->sp.instance_type, lim.cpus, (long long)lim.memory_bytes, r->a->host_cpus,
               (long long)r->a->host_memory);
    in.ngpu = run_gpus(r, h, lim.gpus, gpu_cdi, gpu_ids, visible, sizeof(visible));
    eo.cpus = lim.cpus;
    eo.gpus = in.ngpu > 0 ? in.ngpu : lim.gpus;
    eo.visible_devices = visible;
    eo.region = r->a->cfg.region;
    eo.endpoint_url = r->a->cfg.endpoint_url;
    eo.host = h->index;
    if (run__relay_wanted(r) && (h->relay || !h->sbid[0])) { /* no sandbox: bound after start */
        eo.relay_port = RELAY_PORT;
        eo.creds_path = SESSION_CREDENTIALS_PATH;
        eo.creds_token = r->creds.token;
    }
    if (r->prof.on && !run__image_has_typrof(r))
        ty_log(TY_LOG_WARN, "agent.profiler.no_typrof",
               "job=%s image='%s' note='profiling needs typrof in the image (the runtime image "
               "has it); the command runs unprofiled'",
               r->job, r->sp.image);
    labels = run_labels(r, h, gpu_cdi, in.ngpu);
    in.sp = &r->sp;
    in.lim = &lim;
    in.eo = &eo;
    in.name = h->cname;
    in.hostname = h->name;
    in.opt_ml = h->dir;
    in.ckpt_dir = h->ckpt_dir;
    in.gpu_cdi = gpu_cdi;
    in.gpu_ids = gpu_ids;
    in.libpod = !r->a->engine_docker;
    in.typrof = r->prof.on && run__image_has_typrof(r) ? RUN_TYPROF : NULL;
    in.seccomp = r->a->seccomp_path[0] ? r->a->seccomp_path : NULL;
    in.network = r->net[0] ? r->net : NULL;
    in.net_sandbox = h->sbid[0] ? h->sbid : NULL;
    in.engine_docker = r->a->engine_docker;
    in.labels = labels;
    if (!labels || hostcfg_build(&in, &cfg) != 0) {
        json_decref(labels);
        run__fmt(reason, n, "InternalServerError: out of memory");
        return -1;
    }
    r->gpus = lim.gpus;
    if (docker_create(r->io.d, &cfg.c, h->cid, sizeof(h->cid), &err) != 0) {
        h->cid[0] = '\0';
        run__fmt(reason, n, "ClientError: cannot create the training container: %s", err.msg);
        goto done;
    }
    ty_log(TY_LOG_INFO, "agent.job.container_created",
           "job=%s host=%s container=%.12s image='%s' cpus=%d memory_bytes=%lld gpus=%d", r->job,
           h->name, h->cid, r->sp.image, lim.cpus, (long long)lim.memory_bytes, lim.gpus);
    rc = 0;
done:
    hostcfg_free(&cfg);
    json_decref(labels);
    return rc;
}

/* Makes host h's log state (its stream's batch and MetricDefinitions) without a reader; the
   first skip lines of its container are in the stream already. 0 or -1 (h->logs may then be
   set, freed by the runner as usual). */
int run__logs_new(struct run_ctx *r, struct run_host *h, long skip)
{
    struct run_logs *l = calloc(1, sizeof(*l));

    if (!l)
        return -1;
    atomic_init(&l->refs, 1);
    atomic_init(&l->abandon, 0);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->redis_url = strdup(r->a->cfg.redis_url);
    l->docker_host = strdup(r->a->cfg.docker_host);
    l->batch = json_array();
    l->mpend = json_array();
    l->metrics = metricdefs_new(r->sp.metric_defs);
    run__fmt(l->container, sizeof(l->container), "%s", h->cid);
    run__fmt(l->job, sizeof(l->job), "%s", r->job);
    run__fmt(l->region, sizeof(l->region), "%s", r->region);
    run__fmt(l->account, sizeof(l->account), "%s", r->account);
    run__fmt(l->stream, sizeof(l->stream), "%s", h->stream);
    l->last_ts = h->last_log_ts;
    /* an engine that stamps whole seconds would put the first lines (and their metric points)
       before TrainingStartTime, where TrainingJobAnalytics does not look */
    if (r->t_start > 0 && (int64_t)(r->t_start * 1000.0) > l->last_ts)
        l->last_ts = (int64_t)(r->t_start * 1000.0);
    l->skip = skip > 0 ? skip : 0;
    h->logs = l;
    if (!l->redis_url || !l->docker_host || !l->batch || !l->mpend || !l->metrics)
        return -1;
    return 0;
}

/* Starts the log reader for host h's running container; its first skip lines are in the
   stream already (0 for a new container). 0 or -1. */
int run__start_logs(struct run_ctx *r, struct run_host *h, long skip)
{
    struct run_logs *l;

    if (run__logs_new(r, h, skip) != 0)
        return -1;
    l = h->logs;
    atomic_fetch_add(&l->refs, 1);
    if (pthread_create(&h->log_thr, NULL, run__logs_thread, l) != 0) {
        atomic_fetch_sub(&l->refs, 1);
        return -1;
    }
    h->log_started = 1;
    return 0;
}

/* 1 when host h's container is not running any more (or gone; h->st then holds its end and
   h->exited is set), 0 while it runs, -1 unknown. */
static int run_exited(struct run_ctx *r, struct run_host *h)
{
    struct ty_err err;
    int rc;

    if (h->exited)
        return 1;
    rc = docker_inspect(r->io.d, h->cid, &h->st, &err);
    if (rc == -TY_ENOTFOUND) {
        memset(&h->st, 0, sizeof(h->st));
        h->st.exit_code = 137;
        h->exited = 1;
        return 1;
    }
    if (rc != 0)
        return -1;
    h->exited = !h->st.running;
    return h->exited;
}

/* 1 when every host's container has exited. */
static int run_all_exited(struct run_ctx *r)
{
    int all = 1;
    for (int i = 0; i < r->nh; i++)
        all &= run_exited(r, &r->h[i]) == 1;
    return all;
}

/* Waits until the reader is done, at most ms. Returns 1 when done. */
static int run_logs_wait(struct run_logs *l, int ms)
{
    struct timespec ts;
    int done;

    ty_deadline_ms(&ts, ms);
    pthread_mutex_lock(&l->mu);
    while (!l->done) {
        if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == ETIMEDOUT)
            break;
    }
    done = l->done;
    pthread_mutex_unlock(&l->mu);
    return done;
}

/* 1 once the reader returned (the container's log stream ended). */
static int run_logs_done(struct run_logs *l)
{
    int done;

    pthread_mutex_lock(&l->mu);
    done = l->done;
    pthread_mutex_unlock(&l->mu);
    return done;
}

/* One tick: waits for a reader still reading (it ends when its container does) or
   RUN_TICK_MS. */
static void run_tick(struct run_ctx *r)
{
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (h->logs && h->log_started && !run_logs_done(h->logs)) {
            run_logs_wait(h->logs, RUN_TICK_MS);
            return;
        }
    }
    agent__sleep(r->a, RUN_TICK_MS);
}

/* Signals every host's container that has not exited. */
static void run_signal_all(struct run_ctx *r, const char *sig)
{
    struct ty_err err;
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (h->cid[0] && !h->exited && docker_kill(r->io.d, h->cid, sig, &err) != 0)
            ty_log(TY_LOG_WARN, "agent.job.kill_failed", "job=%s host=%s signal=%s error='%s'",
                   r->job, h->name, sig, err.msg);
    }
}

/* SIGTERM to every host still running, up to stop_grace_s for them to exit, SIGKILL, then wait
   for them to be gone. Returns 0, or -1 when the agent began stopping meanwhile (the containers
   are left to a reclaim). */
int run__kill(struct run_ctx *r)
{
    struct ty_err err;
    double deadline;

    run_signal_all(r, "SIGTERM");
    deadline = ty_wall_s() + r->a->cfg.stop_grace_s;
    while (ty_wall_s() < deadline) {
        if (run_all_exited(r))
            return 0;
        if (atomic_load(&r->a->stopping))
            return -1;
        run_tick(r);
    }
    ty_log(TY_LOG_INFO, "agent.job.sigkill", "job=%s grace_s=%d", r->job, r->a->cfg.stop_grace_s);
    run_signal_all(r, "SIGKILL");
    deadline = ty_wall_s() + RUN_KILL_WAIT_S;
    while (ty_wall_s() < deadline) {
        if (run_all_exited(r))
            return 0;
        run_tick(r);
    }
    /* Still there: force-remove them; the job ends either way. */
    for (int i = 0; i < r->nh; i++) {
        if (r->h[i].cid[0] && !r->h[i].exited) {
            docker_remove(r->io.d, r->h[i].cid, 1, &err);
            r->h[i].exited = 1;
            r->h[i].st.exit_code = 137;
        }
    }
    return 0;
}

/* UpdateTrainingJob changed ProfilerConfig (pc, borrowed): rewrites profilerconfig.json, which
   typrof in the container re-reads when its mtime changes. */
static void run_profiler_update(struct run_ctx *r, json_t *pc)
{
    if (!pc || !prof_config_changed(r->prof.cfg, pc))
        return;
    for (int i = 0; i < r->nh; i++) {
        if (prof_write_config(r->h[i].dir, pc) != 0) {
            ty_log(TY_LOG_WARN, "agent.profiler.config_failed", "job=%s host=%s", r->job,
                   r->h[i].name);
            return;
        }
    }
    json_decref(r->prof.cfg);
    r->prof.cfg = json_deep_copy(pc);
    ty_log(TY_LOG_INFO, "agent.profiler.config_updated", "job=%s disabled=%d", r->job,
           !prof_enabled(pc));
}

/* 1 when host h exited with a non-zero code. */
int run__host_failed(const struct run_host *h)
{
    return h->exited && h->st.exit_code != 0;
}

/* Watches the running containers until all exited (or one failed while others run), the job is
   stopped, hits MaxRuntime, or the agent stops. */
/* Samples each running host's CPUUtilization, MemoryUtilization and DiskUtilization into its
   CloudWatch series (Host = <job>/algo-N), as SageMaker publishes them (instmetrics.h), and the
   GPU ones when the agent has NVML (gpumetrics.h). */
static void run_instance_metrics(struct run_ctx *r)
{
    static const char *const names[] = {"CPUUtilization", "MemoryUtilization", "DiskUtilization",
                                        "GPUUtilization", "GPUMemoryUtilization"};

    if (!r->io.s)
        return; /* Redis away (the connection was dropped): no sample this time */
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        struct docker_stats cur;
        struct instmetrics m;
        struct ty_err err;
        double gutil, gmem;
        char host[200];
        json_t *dims;
        int64_t now = (int64_t)ty_wall_ms();

        if (!h->cid[0] || h->exited || docker_stats(r->io.d, h->cid, &cur, &err) != 0)
            continue;
        instmetrics_compute(h->st_have ? &h->st_prev : NULL, &cur, h->dir, &m);
        h->st_prev = cur;
        h->st_have = 1;
        run__fmt(host, sizeof(host), "%s/%s", r->job, h->name);
        dims = json_pack("[{s:s,s:s}]", "Name", "Host", "Value", host);
        /* with GPUs and NVML: GPUUtilization and GPUMemoryUtilization, summed over the GPUs
           the ledger gave this host (run__create's nvml_mask) */
        if (r->gpus == 0 || !h->nvml_mask ||
            gpumetrics_sample(r->a->gpu, h->nvml_mask, &gutil, &gmem) != 0)
            gutil = gmem = -1;
        for (int k = 0; dims && k < 5; k++) {
            double v = k == 0 ? m.cpu : k == 1 ? m.mem : k == 2 ? m.disk : k == 3 ? gutil : gmem;
            struct store_metric_point p = {now, (long)(now / 1000), v};
            if (v >= 0 && store_metrics_put(r->io.s, STORE_METRICS_NS_SAGEMAKER, names[k], dims, &p,
                                            1, now, &err) != 0)
                break; /* Redis away: the next sample will do */
        }
        json_decref(dims);
    }
}

enum run_outcome run__supervise(struct run_ctx *r)
{
    double next_poll = 0, next_metrics = ty_wall_s() + RUN_METRICS_MS / 1000.0, next_inst = 0;
    double next_prof = ty_wall_s() + RUN_PROF_LIVE_MS / 1000.0;
    double next_ckpt = ty_wall_s() + RUN_CKPT_MS / 1000.0;

    for (;;) {
        double now;
        int ex;

        run_tick(r);
        if (atomic_load(&r->a->stopping))
            return RUN_ABANDON;
        run__logs_flush_all(r, 0);
        now = ty_wall_s();
        ex = 1;
        for (int i = 0; i < r->nh; i++) {
            struct run_host *h = &r->h[i];
            if (!h->exited &&
                ((h->logs && h->log_started && run_logs_done(h->logs)) || now >= next_poll))
                run_exited(r, h);
            if (run__host_failed(h) && r->nh > 1)
                return RUN_HOST_FAILED; /* one host failed: the job fails, the rest are stopped */
            ex &= h->exited;
        }
        if (ex)
            return RUN_EXITED;
        if (now < next_poll)
            continue;
        next_poll = now + RUN_POLL_MS / 1000.0;
        {
            int gone;
            json_t *doc = run__get(r, &gone);
            const char *status = run__status_of(doc);
            int stop = gone || strcmp(status, "Stopping") == 0 || strcmp(status, "Stopped") == 0;
            if (doc && !stop && r->prof.on)
                run_profiler_update(r, json_object_get(doc, "ProfilerConfig"));
            json_decref(doc);
            if (stop)
                return RUN_STOPPED;
        }
        if (r->sp.max_runtime_s > 0 && now - r->t_start >= (double)r->sp.max_runtime_s)
            return RUN_MAXRUNTIME;
        if (now >= next_ckpt) {
            run__checkpoints_sync(r, 0);
            next_ckpt = ty_wall_s() + RUN_CKPT_MS / 1000.0;
        }
        if (now >= next_inst) {
            run_instance_metrics(r);
            next_inst = now + RUN_INSTANCE_MS / 1000.0;
        }
        if (now >= next_prof) {
            run__profiler_live(r);
            next_prof = ty_wall_s() + RUN_PROF_LIVE_MS / 1000.0;
        }
        if (now >= next_metrics && r->h[0].logs) {
            int changed = 0;
            json_t *m = metricdefs_final(r->h[0].logs->metrics, &changed);
            next_metrics = now + RUN_METRICS_MS / 1000.0;
            if (changed && m && json_array_size(m) > 0) {
                json_t *set = json_pack("{s:O}", "FinalMetricDataList", m);
                run__transition(r, "InProgress", NULL, NULL, NULL, set);
            }
            json_decref(m);
        }
    }
}

/* After the containers are gone: lets the readers drain, then flushes what is left. */
void run__drain_logs(struct run_ctx *r)
{
    double deadline = ty_wall_s() + RUN_LOGS_DRAIN_S;

    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (!h->logs)
            continue;
        if (h->log_started) {
            int left_ms = (int)((deadline - ty_wall_s()) * 1000.0);
            if (run_logs_wait(h->logs, left_ms > 0 ? left_ms : 0)) {
                pthread_join(h->log_thr, NULL);
            } else {
                atomic_store(&h->logs->abandon, 1);
                pthread_detach(h->log_thr);
                ty_log(TY_LOG_WARN, "agent.logs.detached", "job=%s host=%s", r->job, h->name);
            }
            h->log_started = 0;
        }
    }
    run__logs_flush_all(r, 1);
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (h->logs && h->logs->dropped)
            ty_log(TY_LOG_WARN, "agent.logs.dropped", "job=%s host=%s events=%ld", r->job, h->name,
                   h->logs->dropped);
    }
}

/* The failure reason of a job one of whose hosts exited with a non-zero code: the first such
   host that wrote /opt/ml/output/failure, else the first that failed. */
void run__failure_reason(struct run_ctx *r, char *reason, size_t n)
{
    const struct run_host *f = NULL;

    for (int i = 0; i < r->nh; i++) {
        if (!run__host_failed(&r->h[i]))
            continue;
        if (!f)
            f = &r->h[i];
        if (stage_read_failure(r->h[i].dir, reason, n))
            return;
    }
    if (!f)
        f = &r->h[0];
    if (f->st.oom_killed)
        run__fmt(reason, n,
                 "OutOfMemoryError: the training container ran out of memory (instance type %s, "
                 "exit code %d). Use an instance type with more memory or reduce the memory "
                 "the training uses.",
                 r->sp.instance_type[0] ? r->sp.instance_type : "unknown", f->st.exit_code);
    else if (r->nh > 1)
        run__fmt(reason, n,
                 "AlgorithmError: the training container of host %s exited with exit code %d. "
                 "See the job logs for more information.",
                 f->name, f->st.exit_code);
    else
        run__fmt(reason, n,
                 "AlgorithmError: the training container exited with exit code %d. See the job "
                 "logs for more information.",
                 f->st.exit_code);
}
