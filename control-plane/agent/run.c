/*
 * run.c - one training job's run on this agent, from the claimed queue entry to its ack.
 *
 * Owns: the job's status transitions (each through store_job_transition with `expect`, so a
 * concurrent StopTrainingJob wins), staging, the container (create, start, supervise, kill,
 * remove), the log reader thread (engine logs -> CloudWatch Logs stream, MetricDefinitions),
 * FinalMetricDataList, the artifact upload and the queue ack.
 * Does not own claiming, the heartbeat or the agent's lifetime (agent.c).
 * Threads: the runner (run_thread) and one log reader per container; they share a refcounted
 * struct run_logs so that a runner abandoning its job (agent stopping) can leave the reader
 * detached. Each thread has its own store and docker connection.
 * Invariant: the queue entry is acked only once the job document is terminal (or gone); a job
 * abandoned because the agent stops keeps its entry pending for a reclaim.
 */
#include "agent_int.h"

#include "access.h"
#include "artifacts.h"
#include "docker.h"
#include "fence.h"
#include "gpumetrics.h"
#include "instances.h"
#include "instmetrics.h"
#include "metrics.h"
#include "objstore.h"
#include "outbox.h"
#include "prof.h"
#include "reap.h"
#include "reattach.h"
#include "relay.h"
#include "s3uri.h"
#include "session.h"
#include "spec.h"
#include "stage.h"
#include "store.h"
#include "store_metrics.h"
#include "transfer.h"
#include "ty_buf.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "warmpool.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN_LOG_GROUP      "/aws/sagemaker/TrainingJobs"
#define RUN_TICK_MS        200
#define RUN_POLL_MS        1000 /* job document poll (Stop, MaxRuntime) */
#define RUN_METRICS_MS     5000 /* FinalMetricDataList refresh while training */
#define RUN_INSTANCE_MS    2000 /* instance metrics (CPU, memory, disk) sampling */
#define RUN_PROF_LIVE_MS   2000 /* the profiler's system metrics uploaded while training */
#define RUN_BATCH_EVENTS   500
#define RUN_BATCH_BYTES    (512 * 1024)
#define RUN_BATCH_HARD_MAX 20000             /* events kept when Redis does not take them */
#define RUN_MPEND_MAX      20000             /* metric points kept likewise */
#define RUN_LINE_MAX       (256 * 1024 - 26) /* CloudWatch's event size limit */
#define RUN_REASON_MAX     1024
#define RUN_KILL_WAIT_S    30  /* after SIGKILL */
#define RUN_LOGS_DRAIN_S   10  /* for the log reader after the container is gone */
#define RUN_LOGS_ENGINE_S  120 /* the log reader retries an unreachable engine this long */
#define RUN_ATTACH_LIST_S  60  /* a re-attach waits this long for the engine to list containers */
#define RUN_STORE_RETRIES  5
#define RUN_STORE_TRIES    3     /* a transition's direct tries before it goes to the outbox */
#define RUN_RETRY_BASE_MS  1000  /* backoff of uploads and staging while Redis is away */
#define RUN_RETRY_MAX_MS   15000 /* its cap */
#define RUN_RETRY_FLOOR_S  60    /* waited at least, even past the job's MaxRuntime */
#define RUN_CKPT_MS        10000 /* checkpoint upload period while training */
#define RUN_CREDS_DEF_S    86400 /* a job without MaxRuntimeInSeconds: SageMaker's default */
#define RUN_CREDS_SLACK_S  3600  /* container token life past MaxRuntime (staging, upload) */
#define RUN_SANDBOX_MEMORY (64LL * 1024 * 1024)
#define RUN_SANDBOX_PIDS   8

#define MSG_STARTING   "Preparing the instances for training"
#define MSG_RESTARTING "Restarting the training job after its agent was lost"
#define MSG_DOWNLOAD   "Downloading input data"
#define MSG_TRAINING   "Training image download completed. Training in progress."
#define MSG_UPLOADING  "Uploading generated training model"
#define MSG_COMPLETED  "Training job completed"
#define MSG_FAILED     "Training job failed"
#define MSG_STOPPING   "Stopping the training job"
#define MSG_STOPPED    "Training job stopped"
#define MSG_MAXRUNTIME "Training job reached the maximum runtime and was stopped"

/* Shared by a runner and its log reader; freed by the last run_logs_unref(). */
struct run_logs {
    atomic_int refs;
    atomic_int abandon; /* the runner asks the reader to stop at the next line */
    atomic_int spill;   /* Redis refused a batch: the reader keeps its events for the runner,
                           which moves them into the job's outbox (outbox.h), in order */
    char *redis_url;    /* owned */
    char *docker_host;  /* owned */
    char container[72];
    char job[64];
    char stream[128]; /* <job>/algo-1-<epoch> */
    char region[32];  /* for the log stream ARN, from the job ARN */
    char account[32];
    struct metrics *metrics; /* owned; thread-safe itself */
    pthread_mutex_t mu;      /* guards the members below and serialises appends */
    pthread_cond_t cv;       /* signalled when done is set */
    json_t *batch;           /* events not yet appended */
    json_t *mpend;           /* metric points not yet put: [[def, ts, seq, value], ...] */
    size_t batch_bytes;
    int done;        /* the reader returned */
    long dropped;    /* events dropped while Redis refused them */
    int64_t last_ts; /* timestamp of the last event: a stream's timestamps never go back */
    long skip;       /* the container's first lines already in the stream (an earlier agent of
                        the job appended them, reattach.h): matched for metrics, not appended */
};

/* RUN_HOST_FAILED: one host of several exited non-zero while others still run. */
enum run_outcome { RUN_EXITED, RUN_STOPPED, RUN_MAXRUNTIME, RUN_ABANDON, RUN_HOST_FAILED };

/* One host of the job (InstanceCount N -> algo-1..algo-N): its /opt/ml, container and logs. */
struct run_host {
    int index;             /* 0-based */
    char name[16];         /* algo-<index + 1> */
    char dir[PATH_MAX];    /* <job dir>/<name>, bind-mounted at /opt/ml */
    char cname[200];       /* trainyard-<job>-<name> */
    char cid[72];          /* container id, "" before create */
    char stream[128];      /* <job>/<name>-<epoch>: its log stream, named when staging starts */
    struct run_logs *logs; /* one ref held by the runner */
    pthread_t log_thr;
    int log_started;
    int64_t last_log_ts;         /* timestamp of the agent's last own line in the stream */
    long log_base;               /* events in the stream when the container started, -1 unknown */
    char ckpt_dir[PATH_MAX];     /* host side of CheckpointConfig.LocalPath */
    json_t *ckpt_seen;           /* owned: path -> signature of uploaded checkpoint files */
    struct docker_state st;      /* its end, once exited */
    struct docker_stats st_prev; /* the previous engine stats sample (instance metrics) */
    int st_have;                 /* st_prev holds one */
    int exited;

    char sbid[72];       /* its sandbox container (owns the network namespace the training
                            container joins), "" when none */
    struct relay *relay; /* owned: trainyard's API on 127.0.0.1:RELAY_PORT inside, or NULL */
};

struct run_ctx {
    struct agent *a;
    struct agent_run *run;
    struct store *s;  /* owned */
    struct docker *d; /* owned */
    struct spec sp;
    char job[128];
    char dir[PATH_MAX]; /* <staging_dir>/<HMAC of the job name> (stage.h) */
    struct run_host h[STAGE_MAX_HOSTS];
    int nh;                 /* hosts in use: InstanceCount once the job is read, 1 before */
    int log_host;           /* host whose stream gets the agent's own lines (staging) */
    char net[200];          /* the job's network (several hosts), "" when none */
    double t_start, t_end;  /* container start and end, epoch seconds */
    char cur[64];           /* current TrainingJobStatus after a conflict */
    char region[32];        /* of the job (from its ARN), else the agent's */
    char account[32];       /* of the job (from its ARN), "" when unknown */
    int store_down;         /* the last store call failed on Redis */
    int ob;                 /* the job's outbox holds writes not yet replayed: every write goes
                               there, behind them, until a replay empties it (outbox.h) */
    double drain_after;     /* no replay try before this time (the last one failed) */
    struct store *os_store; /* owned: the objstore's own connection */
    struct objstore *os;    /* owned, NULL until first used */
    json_t *prof_cfg;       /* owned: ProfilerConfig as last written, NULL when none */
    json_t *prof_rules;     /* owned: ProfilerRuleConfigurations, NULL when none */
    int prof_on;            /* profilerconfig.json written at the start */
    json_t *prof_seen;      /* owned: system-metrics files uploaded while training (signatures) */

    char token[SESSION_TOKEN_LEN]; /* the job's container token (session.h), "" when none */
    int granted;                   /* session_job_grant succeeded and no revoke since */

    /* warm pools (warmpool.h) */
    char warm_key[WARMPOOL_KEY_MAX]; /* the job's match key, "" when none */
    int warm;                        /* runs on a pool an earlier job retained */
    char net_job[64];                /* the job whose name r->net's bridge carries ("" = r->job) */
    int gpus;                        /* GPUs each host's container was given (-1: all) */
    long keep_alive;                 /* KeepAlivePeriodInSeconds when the job was claimed */
    struct warmpool_entry keep;      /* the sandboxes and network, detached from the job when
                                        its containers were removed (keep.nh > 0): retained
                                        (warmpool_put) or released when the job has ended */
};

#define RUN_TYPROF "/usr/local/bin/typrof"

/* 1 when the job's image is the runtime image, which ships typrof and libtyprof.so. */
static int run_image_has_typrof(const struct run_ctx *r)
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
__attribute__((format(printf, 3, 4))) static int run_fmt(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    int w;

    va_start(ap, fmt);
    w = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return w;
}

static double run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t run_now_ms(void)
{
    return (int64_t)(run_now() * 1000.0);
}

/* ---- log reader ---- */

static void run_logs_unref(struct run_logs *l)
{
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
        return;
    json_decref(l->batch);
    json_decref(l->mpend);
    metrics_free(l->metrics);
    free(l->redis_url);
    free(l->docker_host);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

/* Moves the points matched so far into l->mpend ([[def, ts, seq, value], ...]), keeping at
   most RUN_MPEND_MAX (the oldest go). Call with l->mu held. */
static void run_metrics_collect(struct run_logs *l)
{
    struct metrics_point pts[256];
    size_t n;

    if (!l->metrics || !l->mpend)
        return;
    while ((n = metrics_take(l->metrics, pts, 256)) > 0) {
        for (size_t i = 0; i < n; i++)
            json_array_append_new(l->mpend,
                                  json_pack("[i, I, I, f]", pts[i].def, (json_int_t)pts[i].ts_ms,
                                            (json_int_t)pts[i].seq, pts[i].value));
    }
    while (json_array_size(l->mpend) > RUN_MPEND_MAX) {
        json_array_remove(l->mpend, 0);
        l->dropped++;
    }
}

/* The series dimension of l: Host = <job>/algo-N. new: [{"Name":"Host","Value":...}]. */
static json_t *run_metrics_dims(const struct run_logs *l)
{
    char host[128];
    size_t hl;

    snprintf(host, sizeof(host), "%s", l->stream); /* <job>/algo-N-<epoch> -> <job>/algo-N */
    hl = strlen(host);
    while (hl > 0 && host[hl - 1] >= '0' && host[hl - 1] <= '9')
        hl--;
    if (hl > 0 && host[hl - 1] == '-')
        host[hl - 1] = '\0';
    return json_pack("[{s:s,s:s}]", "Name", "Host", "Value", host);
}

/* The second series of every point: dimension TrainingJobName = <job>, what the SDK's
   TrainingJobAnalytics asks for (every host's points in one series). new. */
static json_t *run_metrics_job_dims(const struct run_logs *l)
{
    return json_pack("[{s:s,s:s}]", "Name", "TrainingJobName", "Value", l->job);
}

/* Rewrites p[0..k)'s seq for the TrainingJobName series, where the hosts' points meet:
   seq * 1000 + N for host algo-N. */
static void run_metrics_job_seq(const struct run_logs *l, struct store_metric_point *p, size_t k)
{
    const char *dash = strrchr(l->stream, '/');
    long hostno = 1;
    if (dash && strncmp(dash + 1, "algo-", 5) == 0)
        hostno = strtol(dash + 6, NULL, 10);
    for (size_t i = 0; i < k; i++)
        p[i].seq = p[i].seq * 1000 + hostno;
}

/* OUT: p[<= max] = the pending points of definition def from index *from on (advanced). */
static size_t run_metrics_of(struct run_logs *l, int def, size_t *from,
                             struct store_metric_point *p, size_t max)
{
    size_t k = 0;

    for (; *from < json_array_size(l->mpend) && k < max; (*from)++) {
        json_t *e = json_array_get(l->mpend, *from);
        if (json_integer_value(json_array_get(e, 0)) != def)
            continue;
        p[k++] = (struct store_metric_point){json_integer_value(json_array_get(e, 1)),
                                             (long)json_integer_value(json_array_get(e, 2)),
                                             json_number_value(json_array_get(e, 3))};
    }
    return k;
}

/* Hands the MetricDefinitions points matched so far to their CloudWatch series in namespace
   /aws/sagemaker/TrainingJobs, dimension Host = <job>/algo-N (store_metrics.h). What Redis
   refuses stays pending (l->spill set: the runner moves it into the outbox); putting a point
   twice is harmless (its member is its ts, seq and value). Call with l->mu held. */
static void run_metrics_push(struct run_logs *l, struct store *s)
{
    struct store_metric_point sp[256];
    json_t *dims, *jdims;
    int failed = 0;

    run_metrics_collect(l);
    if (json_array_size(l->mpend) == 0 || !(dims = run_metrics_dims(l)))
        return;
    if (!(jdims = run_metrics_job_dims(l))) {
        json_decref(dims);
        return;
    }
    for (int def = 0; def < metrics_count(l->metrics) && !failed; def++) {
        size_t from = 0, k;
        while (!failed && (k = run_metrics_of(l, def, &from, sp, 256)) > 0) {
            struct ty_err err;
            int rc = store_metrics_put(s, STORE_METRICS_NS_SAGEMAKER, metrics_name(l->metrics, def),
                                       dims, sp, k, run_now_ms(), &err);
            if (rc == 0) {
                run_metrics_job_seq(l, sp, k);
                rc = store_metrics_put(s, STORE_METRICS_NS_SAGEMAKER, metrics_name(l->metrics, def),
                                       jdims, sp, k, run_now_ms(), &err);
            }
            if (rc != 0) {
                ty_log(TY_LOG_WARN, "agent.metrics.put_failed", "job=%s metric='%s' error='%s'",
                       l->job, metrics_name(l->metrics, def), err.msg);
                failed = 1;
            }
        }
    }
    json_decref(dims);
    json_decref(jdims);
    if (failed)
        atomic_store(&l->spill, 1);
    else
        json_array_clear(l->mpend);
}

/* Appends the pending batch with s (may be NULL: kept for later). Call with l->mu held. */
static void run_logs_flush_locked(struct run_logs *l, struct store *s)
{
    struct ty_err err;

    if (s && l->metrics)
        run_metrics_push(l, s);
    if (!l->batch || json_array_size(l->batch) == 0 || !s)
        goto bound;
    if (store_log_append(s, RUN_LOG_GROUP, l->stream, l->batch, &err) == 0) {
        json_array_clear(l->batch);
        l->batch_bytes = 0;
        return;
    }
    ty_log(TY_LOG_WARN, "agent.logs.append_failed", "job=%s stream='%s' error='%s'", l->job,
           l->stream, err.msg);
    atomic_store(&l->spill, 1);
bound:
    /* Keep memory bounded while Redis is away: drop the oldest events. */
    while (l->batch && json_array_size(l->batch) > RUN_BATCH_HARD_MAX) {
        json_array_remove(l->batch, 0);
        l->dropped++;
    }
}

static void run_logs_flush(struct run_logs *l, struct store *s)
{
    pthread_mutex_lock(&l->mu);
    run_logs_flush_locked(l, s);
    pthread_mutex_unlock(&l->mu);
}

struct run_reader {
    struct run_logs *l;
    struct store *s; /* the reader's own connection, may be NULL */
    char *line;      /* RUN_LINE_MAX + 1 bytes of scratch */
    long seen;       /* lines the engine has delivered so far in this pass */
    long kept;       /* lines already appended: a later pass skips that many */
    long fed;        /* lines already matched against the MetricDefinitions */
};

static int run_logs_line(const char *line, size_t len, int64_t ts_ms, int is_stderr, void *ud)
{
    struct run_reader *rd = ud;
    struct run_logs *l = rd->l;
    long idx = rd->seen++;
    json_t *ev;

    (void)is_stderr;
    if (idx < rd->kept && idx < rd->fed)
        return atomic_load(&l->abandon) ? 1 : 0; /* delivered by an earlier pass */
    if (len > RUN_LINE_MAX)
        len = RUN_LINE_MAX;
    memcpy(rd->line, line, len);
    while (len > 0 && (rd->line[len - 1] == '\r' || rd->line[len - 1] == '\n'))
        len--;
    rd->line[len] = '\0';
    stage_utf8_fix(rd->line, len);
    if (ts_ms <= 0)
        ts_ms = run_now_ms();
    pthread_mutex_lock(&l->mu);
    /* Engines stamp lines with whole seconds (Podman) and the agent's own lines come first:
       keep the stream chronological, as CloudWatch and the SDK's tailing (startTime = the last
       timestamp seen) need. */
    if (ts_ms < l->last_ts)
        ts_ms = l->last_ts;
    l->last_ts = ts_ms;
    pthread_mutex_unlock(&l->mu);
    if (idx >= rd->fed) {
        metrics_feed(l->metrics, rd->line, len, ts_ms);
        rd->fed = idx + 1;
    }
    if (idx < rd->kept)
        return atomic_load(&l->abandon) ? 1 : 0; /* in the stream already */
    rd->kept++;
    ev = json_pack("{s:I, s:s%}", "timestamp", (json_int_t)ts_ms, "message", rd->line, len);
    pthread_mutex_lock(&l->mu);
    if (ev && json_array_append_new(l->batch, ev) == 0)
        l->batch_bytes += len + 26;
    if (json_array_size(l->batch) >= RUN_BATCH_EVENTS || l->batch_bytes >= RUN_BATCH_BYTES)
        run_logs_flush_locked(l, atomic_load(&l->spill) ? NULL : rd->s);
    pthread_mutex_unlock(&l->mu);
    return atomic_load(&l->abandon) ? 1 : 0;
}

static void *run_logs_thread(void *arg)
{
    struct run_logs *l = arg;
    struct run_reader rd = {.l = l, .kept = l->skip};
    struct docker *d;
    struct ty_err err;
    double engine_deadline = 0;

    rd.s = store_open(l->redis_url, &err);
    if (!rd.s)
        ty_log(TY_LOG_WARN, "agent.logs.store", "job=%s error='%s'", l->job, err.msg);
    else
        store_set_identity(rd.s, l->region, l->account[0] ? l->account : NULL);
    rd.line = malloc(RUN_LINE_MAX + 1);
    d = docker_open(l->docker_host, &err);
    if (d && rd.line) {
        /* The engine may end a follow stream before it has sent every line (Podman does so
           when the container exits while it reads): after each pass, read again from the
           start, skipping the lines already kept, until the container has exited and a
           non-following pass has delivered the rest. */
        for (int pass = 0; pass < 50 && !atomic_load(&l->abandon);) {
            struct docker_state st;
            int exited, irc;
            memset(&st, 0, sizeof(st));
            irc = docker_inspect(d, l->container, &st, &err);
            exited = irc != 0 || !st.running;
            rd.seen = 0;
            if (docker_logs(d, l->container, !exited, 0, run_logs_line, &rd, &err) != 0) {
                if (atomic_load(&l->abandon))
                    break;
                ty_log(TY_LOG_WARN, "agent.logs.read_failed", "job=%s error='%s'", l->job, err.msg);
                /* The engine's service may be restarting while the container goes on: read
                   again (skipping what was kept) once it answers, for a bounded time. */
                if (irc == -TY_ENOTFOUND)
                    break;
                if (engine_deadline == 0)
                    engine_deadline = run_now() + RUN_LOGS_ENGINE_S;
                if (run_now() >= engine_deadline)
                    break;
                sleep(1);
                continue;
            }
            engine_deadline = 0;
            if (exited)
                break;
            pass++;
        }
    } else {
        ty_log(TY_LOG_WARN, "agent.logs.engine", "job=%s error='%s'", l->job,
               d ? "out of memory" : err.msg);
    }
    docker_close(d);
    pthread_mutex_lock(&l->mu);
    run_logs_flush_locked(l, atomic_load(&l->spill) ? NULL : rd.s);
    l->done = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    store_close(rd.s);
    free(rd.line);
    run_logs_unref(l);
    return NULL;
}

/* ---- store helpers ---- */

/* Reopens the runner's store connection after a Redis error. */
static void run_store_reopen(struct run_ctx *r)
{
    struct ty_err err;

    store_close(r->s);
    r->s = store_open(r->a->cfg.redis_url, &err);
    if (!r->s)
        ty_log(TY_LOG_WARN, "agent.store.reconnect", "job=%s error='%s'", r->job, err.msg);
    else
        store_set_identity(r->s, r->region, r->account[0] ? r->account : NULL);
}

/* ---- the job's outbox (outbox.h): what Redis did not take, replayed in order ---- */

/* Replays the job's outbox when it has one. 0 when it is empty now (r->ob cleared, and the
   log readers write directly again), -1 while Redis is away. */
static int run_outbox_drain(struct run_ctx *r)
{
    struct ty_err err;

    if (!r->ob)
        return 0;
    if (run_now() < r->drain_after)
        return -1; /* the last try failed less than a second ago */
    if (!r->s)
        run_store_reopen(r);
    ty_err_clear(&err);
    if (!r->s || outbox_replay(r->s, r->a->cfg.data_dir, r->job, &err) != 0) {
        store_close(r->s);
        r->s = NULL;
        r->drain_after = run_now() + 1.0;
        return -1;
    }
    store_set_identity(r->s, r->region, r->account[0] ? r->account : NULL);
    r->ob = 0;
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

    run_metrics_collect(l);
    if (json_array_size(l->mpend) == 0 || !(dims = run_metrics_dims(l)))
        return;
    for (int def = 0; def < metrics_count(l->metrics); def++) {
        size_t from = 0, k;
        while ((k = run_metrics_of(l, def, &from, sp, 256)) > 0) {
            int rc = outbox_metrics(r->a->cfg.data_dir, r->job, STORE_METRICS_NS_SAGEMAKER,
                                    metrics_name(l->metrics, def), dims, sp, k, &err);
            json_t *jdims = rc == 0 ? run_metrics_job_dims(l) : NULL;
            if (jdims) {
                run_metrics_job_seq(l, sp, k);
                rc = outbox_metrics(r->a->cfg.data_dir, r->job, STORE_METRICS_NS_SAGEMAKER,
                                    metrics_name(l->metrics, def), jdims, sp, k, &err);
                json_decref(jdims);
            }
            if (rc == 0)
                r->ob = 1;
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
    if (atomic_load(&l->spill) || r->ob)
        run_metrics_spill(r, l);
    if ((atomic_load(&l->spill) || r->ob) && json_array_size(l->batch) > 0) {
        rc = outbox_logs(r->a->cfg.data_dir, r->job, r->region, r->account, l->stream, l->batch,
                         &err);
        if (rc == 0)
            r->ob = 1;
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
static void run_logs_flush_all(struct run_ctx *r, int force)
{
    for (int i = 0; i < r->nh; i++) {
        struct run_logs *l = r->h[i].logs;
        if (!l)
            continue;
        if (!r->ob && !atomic_load(&l->spill))
            run_logs_flush(l, r->s);
        if (force) {
            pthread_mutex_lock(&l->mu);
            run_metrics_collect(l);
            if (json_array_size(l->batch) > 0 || json_array_size(l->mpend) > 0)
                atomic_store(&l->spill, 1);
            pthread_mutex_unlock(&l->mu);
        }
        if (r->ob || atomic_load(&l->spill))
            run_logs_spill(r, &r->h[i]);
    }
    if (r->ob)
        run_outbox_drain(r);
}

/* Appends transition t into the outbox and tries a replay. 0, or -1 when the outbox cannot be
   written either. */
static int run_transition_outbox(struct run_ctx *r, struct store_transition *t)
{
    struct ty_err err;

    t->now = run_now();
    if (outbox_transition(r->a->cfg.data_dir, r->job, t, &err) != 0) {
        ty_log(TY_LOG_ERROR, "agent.outbox.write_failed", "job=%s error='%s'", r->job, err.msg);
        return -1;
    }
    r->ob = 1;
    ty_log(TY_LOG_INFO, "agent.job.transition_buffered", "job=%s status=%s secondary=%s", r->job,
           t->status ? t->status : "-", t->secondary ? t->secondary : "-");
    run_outbox_drain(r);
    return 0;
}

/*
 * Applies one transition. set is stolen (may be NULL). While Redis is away (or the job's
 * outbox is not yet replayed), the transition goes into the outbox, to be replayed in order
 * when Redis is back, and counts as applied: the runner goes on supervising.
 * Returns 0 on success (or buffered), 1 when the job is not in an expected state (r->cur = its
 * status, "" when the job is gone), -1 when the agent is stopping (or no disk for the outbox).
 */
static int run_transition(struct run_ctx *r, const char *expect, const char *status,
                          const char *secondary, const char *message, json_t *set)
{
    struct store_transition t = {
        .expect = expect, .status = status, .secondary = secondary, .message = message, .set = set};
    struct ty_err err;
    int rc = -1;

    r->cur[0] = '\0';
    if (r->ob && !atomic_load(&r->a->stopping)) {
        rc = run_transition_outbox(r, &t);
        goto done;
    }
    for (int i = 0; i < RUN_STORE_TRIES; i++) {
        json_t *doc;
        if (!r->s)
            run_store_reopen(r);
        if (r->s) {
            t.now = run_now();
            ty_err_clear(&err);
            doc = store_job_transition(r->s, r->job, &t, &err);
            if (doc) {
                json_decref(doc);
                rc = 0;
                break;
            }
            if (err.code == TY_ECONFLICT) {
                run_fmt(r->cur, sizeof(r->cur), "%s", err.msg);
                rc = 1;
                break;
            }
            if (err.code == TY_ENOTFOUND) {
                rc = 1;
                break;
            }
            ty_log(TY_LOG_WARN, "agent.job.transition_failed", "job=%s to=%s/%s error='%s'", r->job,
                   status ? status : "-", secondary ? secondary : "-", err.msg);
            store_close(r->s);
            r->s = NULL;
        }
        if (agent__sleep(r->a, 500 << i))
            break;
    }
    if (rc < 0 && !atomic_load(&r->a->stopping))
        rc = run_transition_outbox(r, &t); /* Redis away: buffered, replayed when it is back */
done:
    json_decref(set);
    if (rc == 0)
        ty_log(TY_LOG_INFO, "agent.job.transition", "job=%s status=%s secondary=%s", r->job,
               status ? status : "-", secondary ? secondary : "-");
    return rc;
}

/* 1 when Redis does not answer now (a fresh connection's PING fails). */
static int run_redis_down(struct run_ctx *r)
{
    struct ty_err err;
    struct store *s = store_open(r->a->cfg.redis_url, &err);
    int down = !s || store_ping(s, &err) != 0;

    store_close(s);
    return down;
}

/* 1 when err (a failed store, object store or transfer call) is worth retrying: Redis is
   behind it, or does not answer now. */
static int run_transient(struct run_ctx *r, const struct ty_err *err)
{
    return err->code == TY_EREDIS || strstr(err->msg, "redis") != NULL || run_redis_down(r);
}

/* Epoch seconds until which a Redis outage is waited out: the job's remaining time
   (MaxRuntimeInSeconds from the start, SageMaker's default without one), at least
   RUN_RETRY_FLOOR_S from now. */
static double run_retry_deadline(struct run_ctx *r)
{
    double start = r->t_start > 0 ? r->t_start : run_now();
    double d = start + (r->sp.max_runtime_s > 0 ? r->sp.max_runtime_s : RUN_CREDS_DEF_S);

    return d > run_now() + RUN_RETRY_FLOOR_S ? d : run_now() + RUN_RETRY_FLOOR_S;
}

/* Sleeps before retry number *attempt (capped exponential backoff with jitter), then counts
   it. 0 to retry, -1 when the deadline would pass or the agent is stopping. */
static int run_backoff(struct run_ctx *r, double deadline, int *attempt)
{
    int base = RUN_RETRY_BASE_MS << (*attempt < 5 ? *attempt : 5), ms;

    if (base > RUN_RETRY_MAX_MS)
        base = RUN_RETRY_MAX_MS;
    ms = base / 2 + (int)((unsigned)rand() % (unsigned)(base / 2 + 1)); /* jitter: 50-100% */
    if (run_now() + ms / 1000.0 > deadline)
        return -1;
    (*attempt)++;
    if (agent__sleep(r->a, ms))
        return -1;
    run_logs_flush_all(r, 0); /* and the outbox, when Redis is back meanwhile */
    return 0;
}

/* Region and account of the job from its ARN (arn:aws:sagemaker:<region>:<account>:...), so
   that the log stream ARNs the store builds match the job's. */
static void run_arn_identity(struct run_ctx *r)
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
            run_fmt(r->region, sizeof(r->region), "%.*s", rl, f[3]);
        if (al > 0 && al < (int)sizeof(r->account))
            run_fmt(r->account, sizeof(r->account), "%.*s", al, f[4]);
    }
    if (r->s)
        store_set_identity(r->s, r->region, r->account[0] ? r->account : NULL);
}

/* new: the job document, NULL when gone (*gone = 1) or on a Redis error (*gone = 0). */
static json_t *run_get(struct run_ctx *r, int *gone)
{
    struct ty_err err;
    json_t *doc;

    *gone = 0;
    if (!r->s)
        run_store_reopen(r);
    if (!r->s)
        return NULL;
    doc = store_job_get(r->s, r->job, &err);
    if (!doc) {
        if (err.code == TY_ENOTFOUND)
            *gone = 1;
        else {
            store_close(r->s);
            r->s = NULL;
        }
    }
    return doc;
}

static const char *run_status_of(json_t *doc)
{
    const char *s = json_string_value(json_object_get(doc, "TrainingJobStatus"));
    return s ? s : "";
}

/* Adds the timing members to set (not stolen). */
static void run_set_times(struct run_ctx *r, json_t *set)
{
    double end = r->t_end > 0 ? r->t_end : run_now();
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

static void run_set_metrics(struct run_ctx *r, json_t *set)
{
    json_t *m;

    /* FinalMetricDataList comes from algo-1's log, the host SageMaker's metrics follow */
    if (!r->h[0].logs || metrics_count(r->h[0].logs->metrics) == 0)
        return;
    m = metrics_final(r->h[0].logs->metrics, NULL);
    if (m)
        json_object_set_new(set, "FinalMetricDataList", m);
}

/* The objstore handle of this runner, on its own Redis connection (opened on first use, and
   again after a failure). NULL with err when Redis is away. */
static struct objstore *run_objstore(struct run_ctx *r, struct ty_err *err)
{
    if (r->os)
        return r->os;
    if (!r->os_store && !(r->os_store = store_open(r->a->cfg.redis_url, err)))
        return NULL;
    r->os = objstore_open(r->a->cfg.s3_dir, r->os_store, err);
    if (r->os && r->a->cfg.s3_remote && objstore_use_remote(r->os, r->a->cfg.s3_remote, err) != 0) {
        objstore_close(r->os);
        r->os = NULL;
    }
    if (!r->os) {
        store_close(r->os_store);
        r->os_store = NULL;
    }
    return r->os;
}

/* Drops the objstore handle after an error, so that the next use reconnects. */
static void run_objstore_reset(struct run_ctx *r)
{
    objstore_close(r->os);
    r->os = NULL;
    store_close(r->os_store);
    r->os_store = NULL;
}

/* Appends one line to the job's log stream now (progress of downloads and uploads). */
static void run_log_line(void *ud, const char *line)
{
    struct run_ctx *r = ud;
    struct run_host *h = &r->h[r->log_host];
    struct ty_err err;
    json_t *ev;

    ty_log(TY_LOG_INFO, "agent.job.progress", "job=%s host=%s line='%s'", r->job, h->name, line);
    if (!r->s && !r->ob)
        run_store_reopen(r);
    if (run_now_ms() > h->last_log_ts)
        h->last_log_ts = run_now_ms();
    ev = json_pack("[{s:I, s:s}]", "timestamp", (json_int_t)h->last_log_ts, "message", line);
    if (!ev)
        return;
    ty_err_clear(&err);
    if (r->ob || !r->s || store_log_append(r->s, RUN_LOG_GROUP, h->stream, ev, &err) != 0) {
        /* Redis away (or the outbox not yet replayed): the line goes behind the outbox */
        if (!r->ob && r->s)
            ty_log(TY_LOG_WARN, "agent.logs.append_failed", "job=%s stream='%s' error='%s'", r->job,
                   h->stream, err.msg);
        if (outbox_logs(r->a->cfg.data_dir, r->job, r->region, r->account, h->stream, ev, &err) ==
            0)
            r->ob = 1;
        run_outbox_drain(r);
    }
    json_decref(ev);
}

static void run_transfer_init(struct run_ctx *r, struct transfer *t, struct objstore *os)
{
    memset(t, 0, sizeof(*t));
    t->os = os;
    t->region = r->region;
    t->log = run_log_line;
    t->ud = r;
    t->authz = r->os_store; /* the job's role authorises every object (access.h) */
    t->role_arn = r->sp.role_arn;
}

/* Host h's checkpoint folder as a root the container cannot replace (h->dir for a LocalPath
   under /opt/ml, else the folder bound at LocalPath) and a path below it. OUT: *rel. */
static const char *run_ckpt_root(const struct run_ctx *r, const struct run_host *h,
                                 const char **rel)
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
static void run_checkpoints_sync(struct run_ctx *r, int final)
{
    struct transfer t;
    struct ty_err err;
    struct objstore *os;
    int count = 0;

    if (!r->sp.checkpoint_uri[0] || !r->h[0].ckpt_seen)
        return;
    if (!(os = run_objstore(r, &err))) {
        ty_log(TY_LOG_WARN, "agent.checkpoints.store", "job=%s error='%s'", r->job, err.msg);
        return;
    }
    run_transfer_init(r, &t, os);
    t.log = NULL;
    /* every host syncs to the same S3 URI, as on SageMaker */
    for (int i = 0; i < r->nh; i++) {
        int c = 0;
        if (!r->h[i].ckpt_seen)
            continue;
        const char *rel, *root = run_ckpt_root(r, &r->h[i], &rel);
        if (transfer_upload_tree(&t, root, rel, r->sp.checkpoint_uri, r->h[i].ckpt_seen, 0, &c,
                                 &err) != 0) {
            ty_log(TY_LOG_WARN, "agent.checkpoints.upload_failed", "job=%s host=%s error='%s'",
                   r->job, r->h[i].name, err.msg);
            if (err.code == TY_EREDIS || err.code == TY_EIO) {
                run_objstore_reset(r);
                break;
            }
        }
        count += c;
    }
    if (count > 0 || final)
        ty_log(TY_LOG_INFO, "agent.checkpoints.uploaded", "job=%s files=%d final=%d", r->job, count,
               final);
    if (count > 0 && final)
        run_log_line(r, "Uploaded checkpoints");
}

/* prof_put_fn: one file into the object store through the job's transfer (ud). */
static int run_profiler_put(void *ud, const char *path, const char *uri, const char *type)
{
    char bucket[256], key[1400];
    struct ty_err err;

    if (s3uri_parse(uri, bucket, sizeof(bucket), key, sizeof(key)) != 0 ||
        transfer_put_file(ud, path, bucket, key, type, &err) != 0) {
        ty_log(TY_LOG_WARN, "agent.profiler.put_failed", "uri='%s'", uri);
        return -1;
    }
    return 0;
}

/* While training, uploads the profiler's new or grown system-metrics files (first host's
   output/profiler/system/...) under <ProfilerConfig.S3OutputPath>/<job>/profiler-output/system/,
   as SageMaker syncs them during the run: the console's live system charts read them there.
   Best effort; the end of the job uploads everything again. */
static void run_profiler_live(struct run_ctx *r)
{
    char uri[1400];
    struct transfer t;
    struct ty_err err;
    struct objstore *os;
    size_t ul;
    int count = 0;

    if (!r->prof_on || !r->sp.profiler_uri[0] || !r->h[0].dir[0])
        return;
    if (!r->prof_seen && !(r->prof_seen = json_object()))
        return;
    ul = strlen(r->sp.profiler_uri);
    while (ul > 0 && r->sp.profiler_uri[ul - 1] == '/')
        ul--;
    run_fmt(uri, sizeof(uri), "%.*s/%s/profiler-output/system/", (int)ul, r->sp.profiler_uri,
            r->job);
    if (!(os = run_objstore(r, &err)))
        return;
    run_transfer_init(r, &t, os);
    t.log = NULL;
    if (transfer_upload_tree(&t, r->h[0].dir, "output/profiler/system", uri, r->prof_seen, 0,
                             &count, &err) != 0) {
        ty_log(TY_LOG_WARN, "agent.profiler.live_failed", "job=%s error='%s'", r->job, err.msg);
        if (err.code == TY_EREDIS || err.code == TY_EIO)
            run_objstore_reset(r);
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
    run_fmt(src, sizeof(src), "%s/output/profiler", r->h[0].dir);
    if (access(src, F_OK) != 0)
        return;
    ul = strlen(r->sp.profiler_uri);
    while (ul > 0 && r->sp.profiler_uri[ul - 1] == '/')
        ul--;
    run_fmt(uri, sizeof(uri), "%.*s/%s/profiler-output/", (int)ul, r->sp.profiler_uri, r->job);
    if (!(os = run_objstore(r, &err)))
        return;
    run_transfer_init(r, &t, os);
    t.log = NULL;
    if (transfer_upload_tree(&t, r->h[0].dir, "output/profiler", uri, NULL, 0, &count, &err) != 0)
        ty_log(TY_LOG_WARN, "agent.profiler.upload_failed", "job=%s error='%s'", r->job, err.msg);
    else
        ty_log(TY_LOG_INFO, "agent.profiler.uploaded", "job=%s files=%d uri='%s'", r->job, count,
               uri);
    if (r->prof_on) {
        run_fmt(uri, sizeof(uri), "%.*s/%s", (int)ul, r->sp.profiler_uri, r->job);
        prof_report_publish(r->h[0].dir, r->prof_rules, uri, run_profiler_put, &t);
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

    run_checkpoints_sync(r, 1);
    if (with_model) {
        json_t *rs = prof_rules_eval(r->h[0].dir, r->prof_rules, run_now());
        if (rs && set)
            json_object_set_new(set, "ProfilerRuleEvaluationStatuses", rs);
        else
            json_decref(rs);
    }
    run_profiler_upload(r); /* a failed job's profile is the one most worth reading */
    if (!r->sp.output_path[0])
        return 0; /* nothing to upload to; the server requires OutputDataConfig anyway */
    if (s3uri_parse(r->sp.output_path, bucket, sizeof(bucket), prefix, sizeof(prefix))) {
        run_fmt(reason, n, "ClientError: OutputDataConfig.S3OutputPath '%s' is not a valid S3 URI",
                r->sp.output_path);
        return -1;
    }
    if (!(os = run_objstore(r, &err))) {
        run_fmt(reason, n, "InternalServerError: object store: %s", err.msg);
        *transient = run_transient(r, &err);
        return -1;
    }
    run_transfer_init(r, &t, os);
    for (int i = with_model ? 0 : 1; i < 2; i++) {
        const char *file = i == 0 ? (r->sp.output_uncompressed ? "model" : "model.tar.gz")
                                  : (r->sp.output_uncompressed ? "data" : "output.tar.gz");
        int rc;
        if (artifacts_output_key(prefix, r->sp.name, file, key, sizeof(key)) != 0) {
            run_fmt(reason, n, "ClientError: S3OutputPath too long");
            return -1;
        }
        /* algo-1's model and output data, as SageMaker keeps them for a multi-host job */
        const char *src = i == 0 ? "model" : "output/data"; /* below h[0].dir, confined */
        run_fmt(uri, sizeof(uri), "s3://%s/%s", bucket, key);
        if (r->sp.output_uncompressed) {
            int count = 0;
            rc = transfer_upload_tree(&t, r->h[0].dir, src, uri, NULL, 0, &count, &err);
        } else {
            run_fmt(tmp, sizeof(tmp), "%s/%s", r->dir, file);
            rc = artifacts_targz(r->h[0].dir, src, tmp, &err);
            if (rc == 0)
                rc = transfer_put_file(&t, tmp, bucket, key, NULL, &err);
            unlink(tmp);
        }
        if (rc != 0) {
            run_fmt(reason, n, "InternalServerError: cannot upload %s: %s", file, err.msg);
            ty_log(TY_LOG_ERROR, "agent.job.upload_failed", "job=%s file=%s error='%s'", r->job,
                   file, err.msg);
            run_objstore_reset(r);
            *transient = run_transient(r, &err);
            return -1;
        }
        ty_log(TY_LOG_INFO, "agent.job.uploaded", "job=%s uri='%s'", r->job, uri);
        if (i == 0 && set)
            json_object_set_new(set, "ModelArtifacts", json_pack("{s:s}", "S3ModelArtifacts", uri));
    }
    return 0;
}

/* run_upload_once, again while Redis is away (capped, jittered backoff), within the job's
   remaining time (run_retry_deadline). Returns 0, or -1 with reason (size n) filled. */
static int run_upload(struct run_ctx *r, json_t *set, int with_model, char *reason, size_t n)
{
    double deadline = run_retry_deadline(r);
    int attempt = 0, transient = 0;

    while (run_upload_once(r, set, with_model, reason, n, &transient) != 0) {
        if (!transient || run_backoff(r, deadline, &attempt) != 0)
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
static int run_finish_stopped(struct run_ctx *r, int maxruntime, json_t *set)
{
    if (!set)
        set = json_object();
    run_set_times(r, set);
    run_set_metrics(r, set);
    return run_transition(r, "Stopping,InProgress", "Stopped", maxruntime ? NULL : "Stopped",
                          MSG_STOPPED, set);
}

/* Final Failed with reason; a job being stopped ends Stopped instead. */
static int run_finish_failed(struct run_ctx *r, const char *reason)
{
    char why[RUN_REASON_MAX + 1];
    json_t *set = json_object();
    int rc;

    run_fmt(why, sizeof(why), "%s", reason);
    stage_utf8_fix(why, strlen(why));
    json_object_set_new(set, "FailureReason", json_string(why));
    run_set_times(r, set);
    run_set_metrics(r, set);
    if (r->t_start > 0) { /* the rules set InProgress at Training end too */
        json_t *rs = prof_rules_eval(r->h[0].dir, r->prof_rules, run_now());
        if (rs)
            json_object_set_new(set, "ProfilerRuleEvaluationStatuses", rs);
    }
    ty_log(TY_LOG_INFO, "agent.job.failed", "job=%s reason='%s'", r->job, why);
    rc = run_transition(r, "InProgress", "Failed", "Failed", MSG_FAILED, set);
    if (rc == 1 && strcmp(r->cur, "Stopping") == 0)
        rc = run_finish_stopped(r, 0, NULL);
    return rc;
}

/* Ends a job that never ran (conflict on an early transition): Stopping -> Stopped. */
static int run_settle_conflict(struct run_ctx *r)
{
    if (strcmp(r->cur, "Stopping") == 0)
        return run_finish_stopped(r, 0, NULL);
    return 0; /* already terminal or gone: nothing to do */
}

/* ---- container ---- */

/* Deletes the host firewall rules of the job network's bridge (fence.h). */
static void run_unfence(struct run_ctx *r)
{
    char br[FENCE_IFNAME_MAX];
    fence_ifname(r->net_job[0] ? r->net_job : r->job, br, sizeof(br));
    fence_unbridge(br);
}

/* Removes containers (and the network) of this job left by a previous (dead) agent on this
   engine. */
static void run_remove_leftovers(struct run_ctx *r)
{
    struct ty_err err;

    reap_job(r->d, r->job, 0); /* containers, sandboxes, network, fence (reap.h) */
    for (int h = 0; h < r->nh; h++)
        docker_remove(r->d, r->h[h].cname, 1, &err);
}

/* ---- role credentials and trainyard's API inside the containers (session.h, relay.h) ---- */

/* 1 when the job's containers get trainyard's API (and the role's credentials) on
   127.0.0.1:RELAY_PORT: not with EnableNetworkIsolation (as on SageMaker, no credentials
   either), and only when the agent knows trainyard's address. */
static int run_relay_wanted(const struct run_ctx *r)
{
    const char *ep = r->a->cfg.endpoint_url;
    return !r->sp.network_isolation && ep && ep[0];
}

/* Grants the job a container token for its RoleArn (revoking what an earlier run of the job
   left). 0 (also when the job gets none), or -1 with reason filled. */
static int run_creds_grant(struct run_ctx *r, char *reason, size_t n)
{
    struct ty_err err;
    long ttl;

    if (!run_relay_wanted(r) || !r->sp.role_arn[0])
        return 0;
    ttl = (r->sp.max_runtime_s > 0 ? r->sp.max_runtime_s : RUN_CREDS_DEF_S) + RUN_CREDS_SLACK_S;
    if (ttl > SESSION_MAX_TTL_S)
        ttl = SESSION_MAX_TTL_S;
    if (!r->s)
        run_store_reopen(r);
    ty_err_clear(&err);
    if (!r->s || session_job_revoke(r->s, r->job, &err) != 0 ||
        session_job_grant(r->s, r->job, r->sp.role_arn, (int)ttl, r->token, sizeof(r->token),
                          &err) != 0) {
        r->token[0] = '\0';
        run_fmt(reason, n, "InternalServerError: cannot grant the role '%s' to the job: %s",
                r->sp.role_arn, r->s ? err.msg : "no connection to the store");
        return -1;
    }
    r->granted = 1;
    ty_log(TY_LOG_INFO, "agent.job.creds_granted", "job=%s role='%s' ttl_s=%ld", r->job,
           r->sp.role_arn, ttl);
    return 0;
}

/* Revokes the job's token and every credential minted from it (when the job ends). */
static void run_creds_revoke(struct run_ctx *r)
{
    struct ty_err err;

    if (!r->granted)
        return;
    if (!r->s)
        run_store_reopen(r);
    if (r->s && session_job_revoke(r->s, r->job, &err) == 0) {
        r->granted = 0;
        memset(r->token, 0, sizeof(r->token));
        ty_log(TY_LOG_INFO, "agent.job.creds_revoked", "job=%s", r->job);
    } else {
        ty_log(TY_LOG_WARN, "agent.job.creds_revoke_failed", "job=%s error='%s'", r->job,
               r->s ? err.msg : "no connection to the store");
    }
}

/* Starts host h's relay inside the network namespace of process pid. */
static void run_relay_start(struct run_ctx *r, struct run_host *h, int pid)
{
    struct relay_opts o = {.pid = pid, .port = RELAY_PORT, .target = r->a->cfg.endpoint_url};
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

    if (!h->sbid[0])
        return;
    docker_kill(r->d, h->sbid, "SIGKILL", &err);
    if (docker_remove(r->d, h->sbid, 1, &err) == 0)
        h->sbid[0] = '\0';
}

/*
 * Creates and starts host h's sandbox: a sleeping container of the runtime image that owns the
 * host's network namespace (the job network with the host's alias, or none for one host), and
 * binds the relay inside it, all before the training container (which joins it with
 * NetworkMode container:<sandbox>) exists, so that its first connection finds the relay. When
 * no sandbox can be made (no runtime image), the relay is bound right after the training
 * container starts (run_relay_late). 0, or -1 with no sandbox.
 */
static int run_sandbox(struct run_ctx *r, struct run_host *h)
{
    static const char *const ep[] = {"/bin/sleep", NULL};
    static const char *const cmd[] = {"2147483647", NULL};
    const char *aliases[2] = {h->name, NULL};
    const char *image = r->a->cfg.runtime_image;
    struct docker_create c = {0};
    struct docker_state st;
    struct ty_err err;
    char name[240];
    json_t *labels = NULL;

    if (!run_relay_wanted(r))
        return 0;
    ty_err_clear(&err);
    if (h->sbid[0]) { /* a warm pool's (run_warm_take checked that it runs) */
        if (docker_inspect(r->d, h->sbid, &st, &err) == 0 && st.running && st.pid > 0) {
            run_relay_start(r, h, st.pid);
            return 0;
        }
        run_sandbox_remove(r, h);
        h->sbid[0] = '\0';
    }
    if (!image || docker_image_exists(r->d, image, &err) != 1) {
        ty_log(TY_LOG_WARN, "agent.sandbox.no_image",
               "job=%s image='%s' note='relay bound after the container starts'", r->job,
               image ? image : "");
        return -1;
    }
    run_fmt(name, sizeof(name), "%s-net", h->cname);
    docker_remove(r->d, name, 1, &err); /* a stale one with our name */
    labels = json_pack("{s:s, s:s, s:s, s:s}", "trainyard.job", r->job, "trainyard.agent", r->a->id,
                       "trainyard.host", h->name, "trainyard.sandbox", "1");
    c.image = image;
    c.name = name;
    c.hostname = h->name;
    c.entrypoint = ep;
    c.cmd = cmd;
    c.labels = labels;
    c.memory_bytes = RUN_SANDBOX_MEMORY;
    c.cap_drop_all = 1; /* it only sleeps: no capability, no new privilege, nothing to write */
    c.no_new_privileges = 1;
    c.readonly_rootfs = 1;
    c.pids_limit = RUN_SANDBOX_PIDS;
    if (r->net[0]) {
        c.network = r->net;
        c.aliases = aliases;
    } else {
        c.network_none = 1;
    }
    if (!labels || docker_create(r->d, &c, h->sbid, sizeof(h->sbid), &err) != 0) {
        h->sbid[0] = '\0';
        goto fail;
    }
    if (docker_start(r->d, h->sbid, &err) != 0 || docker_inspect(r->d, h->sbid, &st, &err) != 0)
        goto fail;
    if (st.pid <= 0) {
        run_fmt(err.msg, sizeof(err.msg), "no State.Pid");
        goto fail;
    }
    json_decref(labels);
    run_relay_start(r, h, st.pid);
    return 0;
fail:
    ty_log(TY_LOG_WARN, "agent.sandbox.failed",
           "job=%s host=%s error='%s' note='relay bound after the container starts'", r->job,
           h->name, err.msg);
    json_decref(labels);
    run_sandbox_remove(r, h);
    h->sbid[0] = '\0';
    return -1;
}

/* Without a sandbox: binds the relay in the training container's namespace right after it
   started. Its first connections may come before (refused; botocore's container provider
   retries). */
static void run_relay_late(struct run_ctx *r, struct run_host *h)
{
    struct docker_state st = {0};
    struct ty_err err;

    if (!run_relay_wanted(r) || h->sbid[0] || h->relay)
        return;
    if (docker_inspect(r->d, h->cid, &st, &err) != 0 || st.pid <= 0) {
        ty_log(TY_LOG_WARN, "agent.relay.failed", "job=%s host=%s error='%s'", r->job, h->name,
               st.pid <= 0 ? "no State.Pid" : err.msg);
        return;
    }
    run_relay_start(r, h, st.pid);
}

/* Stops every host's relay, removes its sandbox (with remove; not when the job is abandoned
   with its containers running: the training container lives in the sandbox's namespace, and a
   reclaim removes both by label), then revokes the job's credentials. */
static void run_relay_cleanup(struct run_ctx *r, int remove)
{
    for (int i = 0; i < r->nh; i++) {
        relay_stop(r->h[i].relay);
        r->h[i].relay = NULL;
        if (r->d && remove)
            run_sandbox_remove(r, &r->h[i]);
    }
    run_creds_revoke(r);
}

/* Creates host h's container. 0, or -1 with reason filled. */
static int run_create(struct run_ctx *r, struct run_host *h, char *reason, size_t n)
{
    const char *aliases[2] = {h->name, NULL};
    static const char *const train_cmd[] = {"train", NULL};
    static const char *const no_args[] = {NULL};
    struct instances_limits lim;
    struct stage_env_opts eo = {0};
    struct docker_create c = {0};
    struct ty_err err;
    char bind[PATH_MAX + 16], bind2[2 * PATH_MAX + 16], tmp[64], vartmp[64];
    const char *tmpfs[4] = {tmp, vartmp, "/run:rw,nosuid,nodev,size=67108864,mode=0755", NULL};
    const char *binds[3] = {bind, NULL, NULL};
    char **env = NULL, **prof_ep = NULL;
    json_t *labels = NULL;
    int rc = -1, ex;

    ex = docker_image_exists(r->d, r->sp.image, &err);
    if (ex == 0) {
        run_fmt(reason, n,
                "ClientError: image '%s' not found on this agent's container engine and no "
                "registry is reachable; import it into the engine first",
                r->sp.image);
        return -1;
    }
    if (ex < 0) {
        run_fmt(reason, n, "InternalServerError: container engine: %s", err.msg);
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
    eo.cpus = lim.cpus;
    eo.gpus = lim.gpus;
    eo.region = r->a->cfg.region;
    eo.endpoint_url = r->a->cfg.endpoint_url;
    eo.host = h->index;
    if (run_relay_wanted(r) && (h->relay || !h->sbid[0])) { /* no sandbox: bound after start */
        eo.relay_port = RELAY_PORT;
        eo.creds_path = SESSION_CREDENTIALS_PATH;
        eo.creds_token = r->token;
    }
    env = stage_env(&r->sp, &eo);
    labels = json_pack("{s:s, s:s, s:s}", "trainyard.job", r->job, "trainyard.agent", r->a->id,
                       "trainyard.host", h->name);
    run_fmt(bind, sizeof(bind), "%s:/opt/ml", h->dir);
    if (r->sp.checkpoint_uri[0] && strncmp(r->sp.checkpoint_local, "/opt/ml/", 8) != 0) {
        run_fmt(bind2, sizeof(bind2), "%s:%s", h->ckpt_dir, r->sp.checkpoint_local);
        binds[1] = bind2;
    }
    if (!env || !labels) {
        run_fmt(reason, n, "InternalServerError: out of memory");
        goto done;
    }
    c.image = r->sp.image;
    c.name = h->cname;
    c.hostname = h->name;
    if (r->sp.entrypoint) {
        c.entrypoint = (const char *const *)r->sp.entrypoint;
        c.cmd = r->sp.arguments ? (const char *const *)r->sp.arguments : no_args;
    } else {
        c.cmd = r->sp.arguments ? (const char *const *)r->sp.arguments : train_cmd;
    }
    if (r->prof_on && run_image_has_typrof(r)) {
        /* typrof run -- <entrypoint or the image's command>: system metrics, traces */
        size_t ne = 0;
        while (r->sp.entrypoint && r->sp.entrypoint[ne])
            ne++;
        if (!(prof_ep = calloc(ne + 4, sizeof(*prof_ep)))) {
            run_fmt(reason, n, "InternalServerError: out of memory");
            goto done;
        }
        prof_ep[0] = (char *)RUN_TYPROF;
        prof_ep[1] = (char *)"run";
        prof_ep[2] = (char *)"--";
        for (size_t i = 0; i < ne; i++)
            prof_ep[3 + i] = r->sp.entrypoint[i];
        c.entrypoint = (const char *const *)prof_ep;
    } else if (r->prof_on) {
        ty_log(TY_LOG_WARN, "agent.profiler.no_typrof",
               "job=%s image='%s' note='profiling needs typrof in the image (the runtime image "
               "has it); the command runs unprofiled'",
               r->job, r->sp.image);
    }
    c.env = (const char *const *)env;
    c.binds = binds;
    c.labels = labels;
    c.memory_bytes = lim.memory_bytes;
    c.nano_cpus = lim.nano_cpus;
    c.network_none = r->sp.network_isolation;
    if (!c.network_none && r->net[0]) { /* the hosts find each other by name */
        c.network = r->net;
        c.aliases = aliases;
    }
    c.gpus = lim.gpus;
    r->gpus = lim.gpus;
    /* confinement, docs/job-sandbox.md: the root file system is read-only, /opt/ml (binds) and
       these tmpfs are the writable places */
    run_fmt(tmp, sizeof(tmp), "/tmp:rw,nosuid,nodev,size=%lld,mode=1777", (long long)lim.tmp_bytes);
    run_fmt(vartmp, sizeof(vartmp), "/var/tmp:rw,nosuid,nodev,size=%lld,mode=1777",
            (long long)lim.tmp_bytes / 4);
    c.cap_drop_all = 1;
    c.cap_add = instances_caps;
    c.no_new_privileges = 1;
    c.pids_limit = lim.pids_limit;
    c.readonly_rootfs = 1;
    c.tmpfs = tmpfs;
    c.shm_bytes = lim.shm_bytes;
    if (h->sbid[0])
        c.net_container = h->sbid; /* the sandbox's namespace, with the relay already in it */
    if (docker_create(r->d, &c, h->cid, sizeof(h->cid), &err) != 0) {
        h->cid[0] = '\0';
        run_fmt(reason, n, "ClientError: cannot create the training container: %s", err.msg);
        goto done;
    }
    ty_log(TY_LOG_INFO, "agent.job.container_created",
           "job=%s host=%s container=%.12s image='%s' cpus=%d memory_bytes=%lld gpus=%d", r->job,
           h->name, h->cid, r->sp.image, lim.cpus, (long long)lim.memory_bytes, lim.gpus);
    rc = 0;
done:
    free(prof_ep);
    stage_env_free(env);
    json_decref(labels);
    return rc;
}

/* Starts the log reader for host h's running container; its first skip lines are in the
   stream already (0 for a new container). 0 or -1. */
static int run_start_logs(struct run_ctx *r, struct run_host *h, long skip)
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
    l->metrics = metrics_new(r->sp.metric_defs);
    run_fmt(l->container, sizeof(l->container), "%s", h->cid);
    run_fmt(l->job, sizeof(l->job), "%s", r->job);
    run_fmt(l->region, sizeof(l->region), "%s", r->region);
    run_fmt(l->account, sizeof(l->account), "%s", r->account);
    run_fmt(l->stream, sizeof(l->stream), "%s", h->stream);
    l->last_ts = h->last_log_ts;
    /* an engine that stamps whole seconds would put the first lines (and their metric points)
       before TrainingStartTime, where TrainingJobAnalytics does not look */
    if (r->t_start > 0 && (int64_t)(r->t_start * 1000.0) > l->last_ts)
        l->last_ts = (int64_t)(r->t_start * 1000.0);
    l->skip = skip > 0 ? skip : 0;
    h->logs = l;
    if (!l->redis_url || !l->docker_host || !l->batch || !l->mpend || !l->metrics)
        return -1;
    atomic_fetch_add(&l->refs, 1);
    if (pthread_create(&h->log_thr, NULL, run_logs_thread, l) != 0) {
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
    rc = docker_inspect(r->d, h->cid, &h->st, &err);
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

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
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
        if (h->cid[0] && !h->exited && docker_kill(r->d, h->cid, sig, &err) != 0)
            ty_log(TY_LOG_WARN, "agent.job.kill_failed", "job=%s host=%s signal=%s error='%s'",
                   r->job, h->name, sig, err.msg);
    }
}

/* SIGTERM to every host still running, up to stop_grace_s for them to exit, SIGKILL, then wait
   for them to be gone. Returns 0, or -1 when the agent began stopping meanwhile (the containers
   are left to a reclaim). */
static int run_kill(struct run_ctx *r)
{
    struct ty_err err;
    double deadline;

    run_signal_all(r, "SIGTERM");
    deadline = run_now() + r->a->cfg.stop_grace_s;
    while (run_now() < deadline) {
        if (run_all_exited(r))
            return 0;
        if (atomic_load(&r->a->stopping))
            return -1;
        run_tick(r);
    }
    ty_log(TY_LOG_INFO, "agent.job.sigkill", "job=%s grace_s=%d", r->job, r->a->cfg.stop_grace_s);
    run_signal_all(r, "SIGKILL");
    deadline = run_now() + RUN_KILL_WAIT_S;
    while (run_now() < deadline) {
        if (run_all_exited(r))
            return 0;
        run_tick(r);
    }
    /* Still there: force-remove them; the job ends either way. */
    for (int i = 0; i < r->nh; i++) {
        if (r->h[i].cid[0] && !r->h[i].exited) {
            docker_remove(r->d, r->h[i].cid, 1, &err);
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
    if (!pc || !prof_config_changed(r->prof_cfg, pc))
        return;
    for (int i = 0; i < r->nh; i++) {
        if (prof_write_config(r->h[i].dir, pc) != 0) {
            ty_log(TY_LOG_WARN, "agent.profiler.config_failed", "job=%s host=%s", r->job,
                   r->h[i].name);
            return;
        }
    }
    json_decref(r->prof_cfg);
    r->prof_cfg = json_deep_copy(pc);
    ty_log(TY_LOG_INFO, "agent.profiler.config_updated", "job=%s disabled=%d", r->job,
           !prof_enabled(pc));
}

/* 1 when host h exited with a non-zero code. */
static int run_host_failed(const struct run_host *h)
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

    if (!r->s)
        return; /* Redis away (the connection was dropped): no sample this time */
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        struct docker_stats cur;
        struct instmetrics m;
        struct ty_err err;
        double gutil, gmem;
        char host[200];
        json_t *dims;
        int64_t now = run_now_ms();

        if (!h->cid[0] || h->exited || docker_stats(r->d, h->cid, &cur, &err) != 0)
            continue;
        instmetrics_compute(h->st_have ? &h->st_prev : NULL, &cur, h->dir, &m);
        h->st_prev = cur;
        h->st_have = 1;
        run_fmt(host, sizeof(host), "%s/%s", r->job, h->name);
        dims = json_pack("[{s:s,s:s}]", "Name", "Host", "Value", host);
        /* with GPUs and NVML: GPUUtilization and GPUMemoryUtilization, summed over the GPUs
           the container was given (the engine hands out the first ones) */
        if (r->gpus == 0 || gpumetrics_sample(r->a->gpu, r->gpus, &gutil, &gmem) != 0)
            gutil = gmem = -1;
        for (int k = 0; dims && k < 5; k++) {
            double v = k == 0 ? m.cpu : k == 1 ? m.mem : k == 2 ? m.disk : k == 3 ? gutil : gmem;
            struct store_metric_point p = {now, (long)(now / 1000), v};
            if (v >= 0 && store_metrics_put(r->s, STORE_METRICS_NS_SAGEMAKER, names[k], dims, &p, 1,
                                            now, &err) != 0)
                break; /* Redis away: the next sample will do */
        }
        json_decref(dims);
    }
}

static enum run_outcome run_supervise(struct run_ctx *r)
{
    double next_poll = 0, next_metrics = run_now() + RUN_METRICS_MS / 1000.0, next_inst = 0;
    double next_prof = run_now() + RUN_PROF_LIVE_MS / 1000.0;
    double next_ckpt = run_now() + RUN_CKPT_MS / 1000.0;

    for (;;) {
        double now;
        int ex;

        run_tick(r);
        if (atomic_load(&r->a->stopping))
            return RUN_ABANDON;
        run_logs_flush_all(r, 0);
        now = run_now();
        ex = 1;
        for (int i = 0; i < r->nh; i++) {
            struct run_host *h = &r->h[i];
            if (!h->exited &&
                ((h->logs && h->log_started && run_logs_done(h->logs)) || now >= next_poll))
                run_exited(r, h);
            if (run_host_failed(h) && r->nh > 1)
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
            json_t *doc = run_get(r, &gone);
            const char *status = run_status_of(doc);
            int stop = gone || strcmp(status, "Stopping") == 0 || strcmp(status, "Stopped") == 0;
            if (doc && !stop && r->prof_on)
                run_profiler_update(r, json_object_get(doc, "ProfilerConfig"));
            json_decref(doc);
            if (stop)
                return RUN_STOPPED;
        }
        if (r->sp.max_runtime_s > 0 && now - r->t_start >= (double)r->sp.max_runtime_s)
            return RUN_MAXRUNTIME;
        if (now >= next_ckpt) {
            run_checkpoints_sync(r, 0);
            next_ckpt = run_now() + RUN_CKPT_MS / 1000.0;
        }
        if (now >= next_inst) {
            run_instance_metrics(r);
            next_inst = now + RUN_INSTANCE_MS / 1000.0;
        }
        if (now >= next_prof) {
            run_profiler_live(r);
            next_prof = run_now() + RUN_PROF_LIVE_MS / 1000.0;
        }
        if (now >= next_metrics && r->h[0].logs) {
            int changed = 0;
            json_t *m = metrics_final(r->h[0].logs->metrics, &changed);
            next_metrics = now + RUN_METRICS_MS / 1000.0;
            if (changed && m && json_array_size(m) > 0) {
                json_t *set = json_pack("{s:O}", "FinalMetricDataList", m);
                run_transition(r, "InProgress", NULL, NULL, NULL, set);
            }
            json_decref(m);
        }
    }
}

/* After the containers are gone: lets the readers drain, then flushes what is left. */
static void run_drain_logs(struct run_ctx *r)
{
    double deadline = run_now() + RUN_LOGS_DRAIN_S;

    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (!h->logs)
            continue;
        if (h->log_started) {
            int left_ms = (int)((deadline - run_now()) * 1000.0);
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
    run_logs_flush_all(r, 1);
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (h->logs && h->logs->dropped)
            ty_log(TY_LOG_WARN, "agent.logs.dropped", "job=%s host=%s events=%ld", r->job, h->name,
                   h->logs->dropped);
    }
}

/* The failure reason of a job one of whose hosts exited with a non-zero code: the first such
   host that wrote /opt/ml/output/failure, else the first that failed. */
static void run_failure_reason(struct run_ctx *r, char *reason, size_t n)
{
    const struct run_host *f = NULL;

    for (int i = 0; i < r->nh; i++) {
        if (!run_host_failed(&r->h[i]))
            continue;
        if (!f)
            f = &r->h[i];
        if (stage_read_failure(r->h[i].dir, reason, n))
            return;
    }
    if (!f)
        f = &r->h[0];
    if (f->st.oom_killed)
        run_fmt(reason, n,
                "OutOfMemoryError: the training container ran out of memory (instance type %s, "
                "exit code %d). Use an instance type with more memory or reduce the memory "
                "the training uses.",
                r->sp.instance_type[0] ? r->sp.instance_type : "unknown", f->st.exit_code);
    else if (r->nh > 1)
        run_fmt(reason, n,
                "AlgorithmError: the training container of host %s exited with exit code %d. "
                "See the job logs for more information.",
                f->name, f->st.exit_code);
    else
        run_fmt(reason, n,
                "AlgorithmError: the training container exited with exit code %d. See the job "
                "logs for more information.",
                f->st.exit_code);
}

/* Removes every host's container (after its logs were read) and the job's network. */
/* ---- warm pools (warmpool.h) ---- */

/* Moves the hosts' sandboxes and the job network into r->keep instead of removing them, when
   the job may retain its instance (a KeepAlivePeriodInSeconds at claim, or a warm pool it runs
   on); run_warm_end() decides once the job has ended. The relays stop and the credentials are
   revoked as for any job: nothing of the job but its network namespace stays. */
static void run_warm_detach(struct run_ctx *r)
{
    if ((r->keep_alive <= 0 && !r->warm) || !r->warm_key[0] || atomic_load(&r->a->stopping))
        return;
    r->keep.nh = r->nh;
    run_fmt(r->keep.job, sizeof(r->keep.job), "%s", r->job);
    run_fmt(r->keep.key, sizeof(r->keep.key), "%s", r->warm_key);
    for (int i = 0; i < r->nh; i++) {
        run_fmt(r->keep.sbid[i], sizeof(r->keep.sbid[i]), "%s", r->h[i].sbid);
        r->h[i].sbid[0] = '\0';
    }
    if (r->net[0]) {
        run_fmt(r->keep.net, sizeof(r->keep.net), "%s", r->net);
        run_fmt(r->keep.net_job, sizeof(r->keep.net_job), "%s",
                r->net_job[0] ? r->net_job : r->job);
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

    if (!r->warm_key[0] || !(e = malloc(sizeof(*e))))
        return;
    if (!warmpool_take(r->a->wp, r->warm_key, e)) {
        free(e);
        return;
    }
    if (!r->s)
        run_store_reopen(r);
    t0 = run_now();
    ok = e->nh == r->nh;
    for (int i = 0; ok && i < e->nh; i++)
        if (e->sbid[i][0] && (docker_inspect(r->d, e->sbid[i], &st, &err) != 0 || !st.running))
            ok = 0;
    ty_log(TY_LOG_INFO, "agent.warmpool.checked", "job=%s pool=%s ok=%d check_ms=%.0f", r->job,
           e->job, ok, (run_now() - t0) * 1000);
    if (!ok) {
        ty_log(TY_LOG_WARN, "agent.warmpool.broken", "job=%s pool=%s note='starting cold'", r->job,
               e->job);
        warmpool_terminate(r->d, r->s, e, run_now());
        free(e);
        return;
    }
    for (int i = 0; i < r->nh; i++)
        run_fmt(r->h[i].sbid, sizeof(r->h[i].sbid), "%s", e->sbid[i]);
    if (e->net[0]) {
        run_fmt(r->net, sizeof(r->net), "%s", e->net);
        run_fmt(r->net_job, sizeof(r->net_job), "%s", e->net_job[0] ? e->net_job : e->job);
    }
    r->warm = 1;
    warmpool_reused(r->s, e, r->job, run_now());
    free(e);
}

/* After the job ended (acked: terminal): retains r->keep when SageMaker would
   (warmpool_retains), else removes it, recording Terminated when the job ran on a pool. */
static void run_warm_end(struct run_ctx *r, int acked)
{
    struct ty_err err;
    json_t *doc = NULL;
    int retain;

    if (r->keep.nh == 0 && !r->warm)
        return;
    if (!r->keep.job[0]) {
        run_fmt(r->keep.job, sizeof(r->keep.job), "%s", r->job);
        run_fmt(r->keep.key, sizeof(r->keep.key), "%s", r->warm_key);
    }
    if (!r->s)
        run_store_reopen(r);
    if (acked && !r->ob && r->s && !atomic_load(&r->a->stopping))
        doc = store_job_get(r->s, r->job, &err);
    retain = doc && r->t_start > 0 && r->keep.nh > 0 && warmpool_retains(doc);
    json_decref(doc);
    r->keep.since = run_now();
    if (retain && warmpool_put(r->a->wp, r->s, &r->keep, &err) == 0) {
        memset(&r->keep, 0, sizeof(r->keep));
        return;
    }
    if (r->warm && acked)
        warmpool_terminate(r->d, r->s, &r->keep, r->keep.since);
    else
        warmpool_release(r->d, &r->keep);
    memset(&r->keep, 0, sizeof(r->keep));
}

static void run_remove_containers(struct run_ctx *r)
{
    struct ty_err err;

    for (int i = 0; i < r->nh; i++)
        if (r->h[i].cid[0] && docker_remove(r->d, r->h[i].cid, 1, &err) == 0)
            r->h[i].cid[0] = '\0';
    run_warm_detach(r);
    run_relay_cleanup(r, 1);
    if (r->net[0] && docker_network_remove(r->d, r->net, &err) != 0)
        ty_log(TY_LOG_WARN, "agent.job.network_remove_failed", "job=%s network=%s error='%s'",
               r->job, r->net, err.msg);
    if (r->net[0])
        run_unfence(r);
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
            long n = r->s && (!r->ob || run_outbox_drain(r) == 0)
                         ? store_log_count(r->s, RUN_LOG_GROUP, h->stream, &err)
                         : -1;
            h->log_base = n >= 0 ? n : -1;
        }
        run_fmt(rh->stream, sizeof(rh->stream), "%s", h->stream);
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

static int run_conclude(struct run_ctx *r, enum run_outcome out);

static int run_container(struct run_ctx *r)
{
    char reason[RUN_REASON_MAX + 1] = "";
    struct ty_err err;
    json_t *set;
    int rc;

    if (r->nh > 1 && !r->sp.network_isolation && !r->net[0]) {
        json_t *labels = json_pack("{s:s}", "trainyard.job", r->job);
        char br[FENCE_IFNAME_MAX];
        /* internal (no route out) and fenced from the host's own services */
        fence_ifname(r->job, br, sizeof(br));
        run_fmt(r->net, sizeof(r->net), "trainyard-%s", r->job);
        rc = docker_network_create(r->d, r->net, 1, br, labels, &err);
        json_decref(labels);
        if (rc == 0 && (rc = fence_bridge(br, &err)) != 0)
            docker_network_remove(r->d, r->net, NULL);
        if (rc != 0) {
            r->net[0] = '\0';
            run_fmt(reason, sizeof(reason),
                    "InternalServerError: cannot create the network of the job's %d hosts: %s",
                    r->nh, err.msg);
            return run_finish_failed(r, reason) < 0 ? -1 : 0;
        }
    }
    {
        double deadline = run_retry_deadline(r);
        int attempt = 0;
        while ((rc = run_creds_grant(r, reason, sizeof(reason))) != 0 && run_redis_down(r) &&
               run_backoff(r, deadline, &attempt) == 0)
            ty_log(TY_LOG_INFO, "agent.job.creds_retry", "job=%s attempt=%d", r->job, attempt);
    }
    if (rc != 0) {
        run_remove_containers(r);
        return run_finish_failed(r, reason) < 0 ? -1 : 0;
    }
    for (int i = 0; i < r->nh; i++)
        run_sandbox(r, &r->h[i]);
    for (int i = 0; i < r->nh; i++) {
        if (run_create(r, &r->h[i], reason, sizeof(reason)) != 0) {
            run_remove_containers(r);
            return run_finish_failed(r, reason) < 0 ? -1 : 0;
        }
    }
    r->t_start = run_now();
    run_record(r, 0); /* before anything runs: a restarted agent takes the containers over */
    set = json_pack("{s:f}", "TrainingStartTime", r->t_start);
    {
        json_t *rs = prof_rules_in_progress(r->prof_rules, r->t_start);
        if (rs && set)
            json_object_set_new(set, "ProfilerRuleEvaluationStatuses", rs);
        else
            json_decref(rs);
    }
    rc = run_transition(r, "InProgress", NULL, "Training", MSG_TRAINING, set);
    if (rc != 0)
        return rc < 0 ? -1 : (run_settle_conflict(r) < 0 ? -1 : 0);
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (docker_start(r->d, h->cid, &err) != 0) {
            run_fmt(reason, sizeof(reason), "ClientError: cannot start the training container: %s",
                    err.msg);
            r->t_end = run_now();
            if (run_kill(r) != 0)
                return -1;
            run_drain_logs(r);
            run_remove_containers(r);
            return run_finish_failed(r, reason) < 0 ? -1 : 0;
        }
        ty_log(TY_LOG_INFO, "agent.job.started", "job=%s host=%s container=%.12s", r->job, h->name,
               h->cid);
        run_relay_late(r, h);
        if (run_start_logs(r, h, 0) != 0)
            ty_log(TY_LOG_ERROR, "agent.logs.start_failed", "job=%s host=%s", r->job, h->name);
    }
    return run_conclude(r, run_supervise(r));
}

/* From the end of supervision (out) to the final status: stops what still runs, reads the rest of
   the logs, removes the containers, uploads and records the end. Returns 0 when the job reached a
   terminal state (ack), -1 to leave the entry pending. */
static int run_conclude(struct run_ctx *r, enum run_outcome out)
{
    char reason[RUN_REASON_MAX + 1] = "";
    json_t *set;
    int rc, failed = 0;

    if (out == RUN_ABANDON)
        return -1;
    if (out == RUN_MAXRUNTIME) {
        rc =
            run_transition(r, "InProgress", "Stopping", "MaxRuntimeExceeded", MSG_MAXRUNTIME, NULL);
        if (rc < 0)
            return -1;
        if (rc == 1 && strcmp(r->cur, "Stopping") != 0)
            return 0; /* terminal already (or gone) */
        if (rc == 1)
            out = RUN_STOPPED;
    }
    if (out != RUN_EXITED && run_kill(r) != 0)
        return -1;
    if (out == RUN_HOST_FAILED)
        out = RUN_EXITED;
    r->t_end = run_now();
    run_drain_logs(r);
    if (r->h[0].logs && metrics_count(r->h[0].logs->metrics) > 0) {
        /* the last values, recorded before the upload (in the outbox while Redis is away):
           an agent that takes the ended job over after this one died reads no log again */
        json_t *fm = json_object();
        run_set_metrics(r, fm);
        if (json_object_size(fm) > 0)
            run_transition(r, "InProgress,Stopping", NULL, NULL, NULL, fm);
        else
            json_decref(fm);
    }
    for (int i = 0; i < r->nh; i++) {
        failed |= run_host_failed(&r->h[i]);
        ty_log(TY_LOG_INFO, "agent.job.exited", "job=%s host=%s exit_code=%d oom=%d outcome=%d",
               r->job, r->h[i].name, r->h[i].st.exit_code, r->h[i].st.oom_killed, (int)out);
    }
    run_record(r, 1); /* their ends outlive the containers, should this agent die now */
    /* Exited and their logs read: gone before the job turns terminal, so that nothing is left
       behind should this process die between the final transition and the ack. */
    run_remove_containers(r);

    if (out != RUN_EXITED) {
        set = json_object();
        if (run_upload(r, set, 1, reason, sizeof(reason)) != 0)
            ty_log(TY_LOG_WARN, "agent.job.upload_on_stop_failed", "job=%s reason='%s'", r->job,
                   reason);
        return run_finish_stopped(r, out == RUN_MAXRUNTIME, set) < 0 ? -1 : 0;
    }
    if (failed) {
        char ignored[RUN_REASON_MAX + 1];
        run_failure_reason(r, reason, sizeof(reason));
        run_upload(r, NULL, 0, ignored, sizeof(ignored)); /* output.tar.gz, best effort */
        return run_finish_failed(r, reason) < 0 ? -1 : 0;
    }
    rc = run_transition(r, "InProgress", NULL, "Uploading", MSG_UPLOADING, NULL);
    if (rc < 0)
        return -1;
    set = json_object();
    if (run_upload(r, set, 1, reason, sizeof(reason)) != 0) {
        json_decref(set);
        return run_finish_failed(r, reason) < 0 ? -1 : 0;
    }
    if (rc == 1) /* stopped while it finished: Stopped, with its model */
        return strcmp(r->cur, "Stopping") == 0 ? (run_finish_stopped(r, 0, set) < 0 ? -1 : 0)
                                               : (json_decref(set), 0);
    run_set_times(r, set);
    run_set_metrics(r, set);
    rc = run_transition(r, "InProgress", "Completed", "Completed", MSG_COMPLETED, set);
    if (rc == 1 && strcmp(r->cur, "Stopping") == 0) {
        set = json_object();
        run_upload(r, set, 1, reason, sizeof(reason));
        rc = run_finish_stopped(r, 0, set);
    }
    return rc < 0 ? -1 : 0;
}

/* Names host h's checkpoint folder: <h->dir>/<LocalPath under /opt/ml>, else
   <dir>/checkpoints (checkpoints-<host> with several hosts). */
static void run_ckpt_dir(struct run_ctx *r, struct run_host *h)
{
    if (strncmp(r->sp.checkpoint_local, "/opt/ml/", 8) == 0)
        run_fmt(h->ckpt_dir, sizeof(h->ckpt_dir), "%s/%s", h->dir, r->sp.checkpoint_local + 8);
    else if (r->nh > 1)
        run_fmt(h->ckpt_dir, sizeof(h->ckpt_dir), "%s/checkpoints-%s", r->dir, h->name);
    else
        run_fmt(h->ckpt_dir, sizeof(h->ckpt_dir), "%s/checkpoints", r->dir);
}

/*
 * Stages host h's data through the object store: its channels (its share of ShardedByS3Key
 * ones), script-mode code, checkpoints. The checkpoint directory is <h->dir>/<LocalPath under
 * /opt/ml>, or <dir>/checkpoints (checkpoints-<host> with several hosts) bound at LocalPath.
 * Returns 0 or a negative code with err->msg a FailureReason.
 */
static int run_stage_data(struct run_ctx *r, struct run_host *h, struct ty_err *err)
{
    struct transfer t;
    struct objstore *os;
    int rc, count = 0;

    run_ckpt_dir(r, h);
    /* the role must be allowed to write what the job will write: refused before it runs */
    if (h->index == 0 &&
        (!(os = run_objstore(r, err)) || (rc = access_job_outputs(r->os_store, &r->sp, err)) != 0))
        return os ? rc
                  : ty_err_set(err, TY_EIO, NULL, "InternalServerError: object store: %s",
                               err->msg);
    if (json_array_size(r->sp.channels) == 0 && !r->sp.checkpoint_uri[0] &&
        !json_object_get(r->sp.hyperparameters, "sagemaker_submit_directory"))
        return 0;
    if (!(os = run_objstore(r, err)))
        return ty_err_set(err, TY_EIO, NULL, "InternalServerError: object store: %s", err->msg);
    r->log_host = h->index;
    run_transfer_init(r, &t, os);
    rc = transfer_channels(&t, &r->sp, h->dir, r->dir, h->index, r->nh, err);
    if (rc == 0)
        rc = transfer_code(&t, &r->sp, h->dir, err);
    if (rc == 0 && r->sp.checkpoint_uri[0]) {
        if ((rc = ty_mkdirs(h->ckpt_dir, 0777)) != 0 || chmod(h->ckpt_dir, 0777) != 0) {
            r->log_host = 0;
            return ty_err_set(err, TY_EIO, NULL, "InternalServerError: cannot create '%s'",
                              h->ckpt_dir);
        }
        const char *rel, *root = run_ckpt_root(r, h, &rel);
        rc = transfer_download_prefix(&t, r->sp.checkpoint_uri, root, rel, &count, err);
        if (rc == 0 && count > 0) {
            char line[1300];
            run_fmt(line, sizeof(line), "Restored %d checkpoint files from %s into %s", count,
                    r->sp.checkpoint_uri, r->sp.checkpoint_local);
            run_log_line(r, line);
        }
        if (rc == 0 && (h->ckpt_seen = json_object()) != NULL)
            transfer_upload_tree(&t, root, rel, r->sp.checkpoint_uri, h->ckpt_seen, 1, NULL, err);
        ty_err_clear(err);
    }
    r->log_host = 0;
    if (rc != 0 && (err->code == TY_EREDIS || err->code == TY_EIO))
        run_objstore_reset(r);
    return rc;
}

/* Names host i of the job: algo-<i+1>, its staging dir and container name. */
static void run_host_init(struct run_ctx *r, int i)
{
    struct run_host *h = &r->h[i];

    h->index = i;
    stage_host_name(i, h->name, sizeof(h->name));
    run_fmt(h->dir, sizeof(h->dir), "%s/%s", r->dir, h->name);
    run_fmt(h->cname, sizeof(h->cname), "trainyard-%s-%s", r->job, h->name);
}

/* The name of host h's log stream as an earlier agent named it (the newest "<job>/<host>-<epoch>"),
   or a new one when the store has none. */
static void run_reattach_stream(struct run_ctx *r, struct run_host *h)
{
    char prefix[128];
    struct ty_err err;
    json_t *list = NULL, *last;

    run_fmt(prefix, sizeof(prefix), "%s/%s-", r->job, h->name);
    if (r->s)
        list = store_log_streams(r->s, RUN_LOG_GROUP, prefix, 0, 0, &err);
    last = json_array_get(list, json_array_size(list) - 1);
    if (json_string_value(json_object_get(last, "logStreamName")))
        run_fmt(h->stream, sizeof(h->stream), "%s",
                json_string_value(json_object_get(last, "logStreamName")));
    else
        run_fmt(h->stream, sizeof(h->stream), "%s%lld", prefix, (long long)run_now());
    json_decref(list);
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
        if (docker_start(r->d, h->cid, &err) != 0) {
            ty_log(TY_LOG_WARN, "agent.reattach.start_failed", "job=%s host=%s error='%s'", r->job,
                   h->name, err.msg);
            h->exited = 1;
            h->st.exit_code = 127;
            return;
        }
        ty_log(TY_LOG_INFO, "agent.job.started", "job=%s host=%s container=%.12s", r->job, h->name,
               h->cid);
    }
    if (run_relay_wanted(r) && (ph->running || !ph->started) &&
        docker_inspect(r->d, h->sbid[0] ? h->sbid : h->cid, &st, &err) == 0 && st.pid > 0)
        run_relay_start(r, h, st.pid);
    if (h->log_base >= 0 && r->s) {
        long n = store_log_count(r->s, RUN_LOG_GROUP, h->stream, &err);
        skip = n > h->log_base ? n - h->log_base : 0;
    } else {
        ty_log(TY_LOG_WARN, "agent.reattach.log_base_unknown",
               "job=%s host=%s note='its log is read again from the start'", r->job, h->name);
    }
    if (run_start_logs(r, h, skip) != 0)
        ty_log(TY_LOG_ERROR, "agent.logs.start_failed", "job=%s host=%s", r->job, h->name);
}

/*
 * A reclaimed job (its agent died, or restarted): takes over what an earlier agent of this engine
 * started instead of running the job's script again (reattach.h), and follows it to its end as
 * that agent would have. secondary and t_doc: the job's SecondaryStatus and TrainingStartTime;
 * stopping: it is Stopping. Returns 1 when the job was dealt with (OUT: *out, as run_job's
 * result), 0 when nothing of it ever ran: start it anew.
 */
static int run_reattach(struct run_ctx *r, const char *secondary, double t_doc, int stopping,
                        int *out)
{
    static const char *const actions[] = {"fresh", "attach", "fail"};
    struct reattach_record rec;
    struct reattach_plan plan;
    struct ty_err err;
    char filter[200], reason[RUN_REASON_MAX + 1];
    double deadline = run_now() + RUN_ATTACH_LIST_S;
    json_t *list;
    int have_rec, running = 0;

    run_fmt(filter, sizeof(filter), "trainyard.job=%s", r->job);
    while (!(list = docker_list(r->d, filter, &err))) {
        ty_log(TY_LOG_WARN, "agent.reattach.list_failed", "job=%s error='%s'", r->job, err.msg);
        if (run_now() >= deadline) {
            run_fmt(reason, sizeof(reason),
                    "InternalServerError: the agent running this job was lost, and the container "
                    "engine did not answer to take its containers over: %s",
                    err.msg);
            *out = run_finish_failed(r, reason) < 0 ? -1 : 0;
            return 1;
        }
        if (agent__sleep(r->a, 2000)) {
            *out = -1;
            return 1;
        }
    }
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
        run_remove_leftovers(r);
        r->t_end = run_now();
        *out = run_finish_failed(r, plan.reason) < 0 ? -1 : 0;
        return 1;
    }
    if (r->t_start <= 0)
        r->t_start = run_now();
    if (r->nh > 1 && !r->sp.network_isolation)
        run_fmt(r->net, sizeof(r->net), "trainyard-%s", r->job);
    r->granted = run_relay_wanted(r) && r->sp.role_arn[0]; /* revoked when the job ends */
    r->prof_on = r->prof_cfg != NULL;
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        const struct reattach_host *ph = &plan.h[i];
        run_ckpt_dir(r, h);
        if (r->sp.checkpoint_uri[0])
            h->ckpt_seen = json_object(); /* the first sync uploads them all again */
        h->log_base = -1;
        if (have_rec && i < rec.nh && rec.h[i].stream[0]) {
            run_fmt(h->stream, sizeof(h->stream), "%s", rec.h[i].stream);
            h->log_base = rec.h[i].log_base;
            h->last_log_ts = rec.last_log_ts;
        } else {
            run_reattach_stream(r, h);
        }
        run_fmt(h->cid, sizeof(h->cid), "%s", ph->cid);
        run_fmt(h->sbid, sizeof(h->sbid), "%s", ph->sbid);
        if (ph->from_record) {
            h->exited = 1;
            h->st.exit_code = ph->exit_code;
            h->st.oom_killed = ph->oom_killed;
        }
        running += ph->running;
    }
    ty_log(TY_LOG_INFO, "agent.job.reattached", "job=%s hosts=%d running=%d t_start=%.3f", r->job,
           r->nh, running, r->t_start);
    for (int i = 0; i < r->nh; i++)
        if (r->h[i].cid[0])
            run_reattach_host(r, &r->h[i], &plan.h[i], stopping);
    *out = run_conclude(r, stopping ? RUN_STOPPED : run_supervise(r));
    return 1;
}

/* Everything from the claimed entry to a terminal job. Returns 0 to ack, -1 to leave pending. */
static int run_job(struct run_ctx *r)
{
    char reason[RUN_REASON_MAX + 1], secondary[64];
    struct ty_err err;
    const char *status;
    json_t *doc;
    double t_doc;
    int gone = 0, rc, stopping;

    for (int i = 0; i < RUN_STORE_RETRIES && !(doc = run_get(r, &gone)) && !gone; i++) {
        if (agent__sleep(r->a, 1000))
            return -1;
    }
    if (!doc)
        return gone ? 0 : -1; /* deleted: ack; Redis away: leave it pending */
    status = run_status_of(doc);
    stopping = strcmp(status, "Stopping") == 0;
    if (r->run->reclaimed && strcmp(status, "InProgress") != 0 && !stopping) {
        /* Ended while its agent was away: what that agent left on the engine goes. */
        if ((r->d = docker_open(r->a->cfg.docker_host, &err)) != NULL)
            run_remove_leftovers(r);
    }
    if (stopping && !r->run->reclaimed) {
        json_decref(doc);
        ty_log(TY_LOG_INFO, "agent.job.stopped_before_start", "job=%s", r->job);
        return run_finish_stopped(r, 0, NULL) < 0 ? -1 : 0;
    }
    if (strcmp(status, "InProgress") != 0 && !stopping) {
        json_decref(doc);
        ty_log(TY_LOG_INFO, "agent.job.skipped", "job=%s status=%s", r->job, status);
        return 0;
    }
    run_fmt(secondary, sizeof(secondary), "%s",
            json_string_value(json_object_get(doc, "SecondaryStatus"))
                ? json_string_value(json_object_get(doc, "SecondaryStatus"))
                : "");
    t_doc = json_number_value(json_object_get(doc, "TrainingStartTime"));
    r->keep_alive = warmpool_keep_alive(doc);
    if (warmpool_key(doc, r->warm_key, sizeof(r->warm_key), &err) != 0)
        r->warm_key[0] = '\0';
    rc = spec_parse(doc, &r->sp, &err);
    if (rc == 0) {
        json_t *pc = json_object_get(doc, "ProfilerConfig");
        json_t *rules = json_object_get(doc, "ProfilerRuleConfigurations");
        if (prof_enabled(pc))
            r->prof_cfg = json_deep_copy(pc);
        if (json_is_array(rules) && json_array_size(rules) > 0)
            r->prof_rules = json_deep_copy(rules);
    }
    json_decref(doc);
    if (rc != 0)
        return run_finish_failed(r, err.msg) < 0 ? -1 : 0;
    run_arn_identity(r);
    if (r->sp.instance_count > STAGE_MAX_HOSTS) {
        run_fmt(reason, sizeof(reason),
                "ClientError: InstanceCount %d is more than one trainyard agent runs for a job "
                "(%d)",
                r->sp.instance_count, STAGE_MAX_HOSTS);
        return run_finish_failed(r, reason) < 0 ? -1 : 0;
    }
    r->nh = r->sp.instance_count > 1 ? r->sp.instance_count : 1;
    for (int i = 1; i < r->nh; i++)
        run_host_init(r, i);

    if (!r->d)
        r->d = docker_open(r->a->cfg.docker_host, &err);
    if (!r->d) {
        run_fmt(reason, sizeof(reason), "InternalServerError: container engine: %s", err.msg);
        return run_finish_failed(r, reason) < 0 ? -1 : 0;
    }
    if (r->run->reclaimed) {
        /* its containers, if any ever ran, are taken over: the script runs once per attempt */
        if (run_reattach(r, secondary, t_doc, stopping, &rc))
            return rc;
        run_remove_leftovers(r);
        if (stopping) {
            ty_log(TY_LOG_INFO, "agent.job.stopped_before_start", "job=%s", r->job);
            return run_finish_stopped(r, 0, NULL) < 0 ? -1 : 0;
        }
        rc = run_transition(r, "InProgress", NULL, "Restarting", MSG_RESTARTING, NULL);
        if (rc == 0)
            rc = run_transition(r, "InProgress", NULL, "Starting", MSG_STARTING, NULL);
        if (rc != 0)
            return rc < 0 ? -1 : (run_settle_conflict(r) < 0 ? -1 : 0);
    } else {
        for (int i = 0; i < r->nh; i++) /* stale ones with our names */
            docker_remove(r->d, r->h[i].cname, 1, &err);
        run_warm_take(r);
    }

    rc = run_transition(r, "InProgress", NULL, "Downloading", MSG_DOWNLOAD,
                        r->warm ? json_pack("{s:{s:s}}", "WarmPoolStatus", "Status", "InUse")
                                : NULL);
    if (rc != 0)
        return rc < 0 ? -1 : (run_settle_conflict(r) < 0 ? -1 : 0);
    /* The log streams are named now, so that download progress lands in the stream the
       container's output continues. */
    for (int i = 0; i < r->nh; i++)
        run_fmt(r->h[i].stream, sizeof(r->h[i].stream), "%s/%s-%lld", r->job, r->h[i].name,
                (long long)run_now());
    if (r->prof_cfg)
        r->prof_on = 1;
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (stage_prepare(h->dir, &r->sp, i, NULL, &err) != 0)
            return run_finish_failed(r, err.msg) < 0 ? -1 : 0;
        if (r->prof_cfg && prof_write_config(h->dir, r->prof_cfg) != 0) {
            ty_log(TY_LOG_WARN, "agent.profiler.config_failed", "job=%s host=%s", r->job, h->name);
            r->prof_on = 0;
        }
        double deadline = run_retry_deadline(r);
        int attempt = 0, src;
        /* Redis away: staging waits for it (capped backoff) instead of failing the job */
        while ((src = run_stage_data(r, h, &err)) != 0 && !atomic_load(&r->a->stopping) &&
               run_transient(r, &err) && run_backoff(r, deadline, &attempt) == 0)
            ty_log(TY_LOG_INFO, "agent.job.stage_retry", "job=%s host=%s attempt=%d error='%s'",
                   r->job, h->name, attempt, err.msg);
        if (src != 0) {
            if (atomic_load(&r->a->stopping))
                return -1;
            r->log_host = i;
            run_log_line(r, err.msg);
            r->log_host = 0;
            return run_finish_failed(r, err.msg) < 0 ? -1 : 0;
        }
        if (atomic_load(&r->a->stopping))
            return -1;
    }
    if (atomic_load(&r->a->stopping))
        return -1;
    return run_container(r);
}

/* Replays the job's outbox until it is empty, waiting for Redis (capped backoff). 0, or -1
   when the agent stops first (the outbox stays on disk). */
static int run_outbox_wait(struct run_ctx *r)
{
    int ms = RUN_RETRY_BASE_MS;

    while (r->ob) {
        if (run_outbox_drain(r) == 0)
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
    int rc = -1;

    if (!r)
        goto out;
    r->a = a;
    r->run = run;
    run_fmt(r->job, sizeof(r->job), "%s", run->item.job);
    if (stage_job_dir(a->cfg.staging_dir, a->stage_key, r->job, r->dir, sizeof(r->dir)) != 0)
        r->dir[0] = '\0'; /* refused below */
    r->nh = 1;
    run_host_init(r, 0);
    run_fmt(r->region, sizeof(r->region), "%s", a->cfg.region);
    ty_log(TY_LOG_INFO, "agent.job.claimed", "job=%s entry=%s reclaimed=%d", r->job,
           run->item.entry_id, run->reclaimed);

    if (!r->dir[0]) {
        /* no staging folder name (HMAC failed): touch nothing, leave the entry pending */
        ty_log(TY_LOG_ERROR, "agent.job.no_staging_dir", "job=%s", r->job);
        rc = -1;
    } else if (run_name_ok(r->job)) {
        /* What an earlier run of this agent could not write goes first (outbox.h). */
        r->ob = outbox_pending(a->cfg.data_dir, r->job);
        rc = run_outbox_wait(r) == 0 ? run_job(r) : -1;
    } else {
        /* Not a name the API accepts: touch no path or container, drop the entry. */
        ty_log(TY_LOG_ERROR, "agent.job.bad_name", "entry=%s", run->item.entry_id);
        r->dir[0] = '\0';
        rc = 0;
    }

    run_warm_end(r, rc == 0);
    if (rc == 0) {
        for (int i = 0; i < r->nh && r->d; i++)
            if (r->h[i].cid[0])
                docker_remove(r->d, r->h[i].cid, 1, &err);
        if (r->net[0] && r->d)
            docker_network_remove(r->d, r->net, &err);
        if (r->net[0])
            run_unfence(r);
        if (r->dir[0])
            stage_remove(r->dir);
        for (int i = 0; i < RUN_STORE_RETRIES && !r->ob; i++) {
            if (!r->s)
                run_store_reopen(r);
            if (r->s && queue_ack(r->s, run->item.entry_id, &err) == 0)
                break;
            ty_log(TY_LOG_WARN, "agent.queue.ack_failed", "job=%s error='%s'", r->job,
                   r->s ? err.msg : "no connection");
            store_close(r->s);
            r->s = NULL;
            if (i == 2 || agent__sleep(a, 1000)) {
                r->ob = 1; /* the ack goes behind the rest, into the outbox */
                break;
            }
        }
        if (r->ob && outbox_ack(a->cfg.data_dir, r->job, run->item.entry_id, &err) != 0)
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
    run_relay_cleanup(r, rc == 0); /* also when abandoned: the relay ends with the runner */
    for (int i = 0; i < r->nh; i++) {
        struct run_host *h = &r->h[i];
        if (h->logs) {
            if (h->log_started) {
                /* Abandoned while the container runs: the reader stops at its next line. */
                atomic_store(&h->logs->abandon, 1);
                pthread_detach(h->log_thr);
            }
            run_logs_unref(h->logs);
        }
        json_decref(h->ckpt_seen);
    }
    spec_cleanup(&r->sp);
    docker_close(r->d);
    run_objstore_reset(r);
    json_decref(r->prof_cfg);
    json_decref(r->prof_rules);
    json_decref(r->prof_seen);
    store_close(r->s);
    free(r);
out:
    pthread_mutex_lock(&a->mu);
    run->done = 1;
    a->busy--;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}
