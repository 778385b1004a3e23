/*
 * run_int.h - what the files of one job's run share (run.c and its run_*.c): the runner's
 * context (struct run_ctx, its connections, profiler settings, credentials and warm pool in
 * struct run_io, run_prof, run_creds, run_warm), a host (struct run_host), the state a runner
 * shares with its log readers (struct run_logs), the timings and messages, and the run__* functions
 * one file calls in another. Not part of the agent's contract (agent.h); agent.c sees only
 * run_thread (agent_int.h).
 *
 * Invariants: a struct run_ctx belongs to one runner thread; a struct run_logs is shared by
 * the runner and one log reader under its mutex and freed by the last run__logs_unref().
 */
#ifndef TY_CP_AGENT_RUN_INT_H
#define TY_CP_AGENT_RUN_INT_H

#include "agent_int.h"
#include "docker.h"
#include "launchwire.h"
#include "session.h"
#include "spec.h"
#include "stage.h"
#include "store.h"
#include "store_metrics.h"
#include "transfer.h"
#include "ty_time.h"
#include "warmpool.h"

#include <jansson.h>
#include <limits.h>
#include <stdint.h>

#define RUN_LOG_GROUP     "/aws/sagemaker/TrainingJobs"
#define RUN_REASON_MAX    1024
#define RUN_RETRY_BASE_MS 1000  /* backoff of uploads and staging while Redis is away */
#define RUN_RETRY_MAX_MS  15000 /* its cap */
#define RUN_CREDS_DEF_S   86400 /* a job without MaxRuntimeInSeconds: SageMaker's default */

#define MSG_STOPPING "Stopping the training job"

/* Shared by a runner and its log reader; freed by the last run__logs_unref(). */
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
    struct metricdefs *metrics; /* owned; thread-safe itself */
    pthread_mutex_t mu;         /* guards the members below and serialises appends */
    pthread_cond_t cv;          /* signalled when done is set */
    json_t *batch;              /* events not yet appended */
    json_t *mpend;              /* metric points not yet put: [[def, ts, seq, value], ...] */
    size_t batch_bytes;
    int done;        /* the reader returned */
    long dropped;    /* events dropped while Redis refused them */
    int64_t last_ts; /* timestamp of the last event: a stream's timestamps never go back */
    long skip;       /* the container's first lines already in the stream (an earlier agent of
                        the job appended them, reattach.h): matched for metrics, not appended */
};

/* What run__transition did. */
enum run_tr {
    RUN_TR_DONE,     /* applied, or buffered in the job's outbox while Redis is away */
    RUN_TR_CONFLICT, /* the job is not in an expected state: r->cur holds it ("" when gone) */
    RUN_TR_ABANDON,  /* the agent is stopping (or no disk for the outbox): nothing written */
};

/* How a run ends: its queue entry acknowledged (the job is terminal, or gone), or left pending
   for a reclaim (the agent stops, Redis is away). */
enum run_end { RUN_END_ACK, RUN_END_PENDING };

/* RUN_HOST_FAILED: one host of several exited non-zero while others still run. */
enum run_outcome { RUN_EXITED, RUN_STOPPED, RUN_MAXRUNTIME, RUN_ABANDON, RUN_HOST_FAILED };

/* One host of the job (InstanceCount N -> algo-1..algo-N): its /opt/ml, container and logs. */
struct run_host {
    int index;             /* 0-based */
    char name[16];         /* algo-<index + 1> */
    char vol[PATH_MAX];    /* <job dir>/<name>: the host's volume (volume.h) is mounted here */
    char dir[PATH_MAX];    /* <vol>/ml, bind-mounted at /opt/ml */
    char cname[200];       /* reap_job_name, "-", name */
    char cid[72];          /* container id, "" before create */
    uint64_t nvml_mask;    /* its GPUs by NVML index, for GPU metrics (0: none known) */
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

/* A runner's connections: each runner has its own (store and engine connections are not
   shared between threads), and the job's outbox stands in for Redis while it is away. */
struct run_io {
    struct store *s;        /* owned; NULL after a failure, reopened by run__store_reopen */
    struct docker *d;       /* owned */
    int store_down;         /* the last store call failed on Redis */
    int ob;                 /* the job's outbox holds writes not yet replayed: every write goes
                               there, behind them, until a replay empties it (outbox.h) */
    double drain_after;     /* no replay try before this time (the last one failed) */
    struct store *os_store; /* owned: the objstore's own connection */
    struct objstore *os;    /* owned, NULL until first used */
};

/* The job's profiler settings (prof.h). */
struct run_prof {
    json_t *cfg;          /* owned: ProfilerConfig as last written, NULL when none */
    json_t *rules;        /* owned: ProfilerRuleConfigurations, NULL when none */
    int on;               /* profilerconfig.json written at the start */
    json_t *seen;         /* owned: system-metrics files uploaded while training (signatures) */
    char report_etag[48]; /* the dashboard's ETag as the agent uploaded it, "" when none */
};

/* The job's container credentials (session.h). */
struct run_creds {
    char token[SESSION_TOKEN_LEN]; /* the job's container token, "" when none */
    int granted;                   /* session_job_grant succeeded and no revoke since */
};

/* The job's warm pool (warmpool.h). */
struct run_warm {
    char key[WARMPOOL_KEY_MAX]; /* the job's match key, "" when none */
    int reused;                 /* runs on a pool an earlier job retained */
    long keep_alive;            /* KeepAlivePeriodInSeconds when the job was claimed */
    struct warmpool_entry keep; /* the sandboxes and network, detached from the job when its
                                   containers were removed (keep.nh > 0): retained
                                   (warmpool_put) or released when the job has ended */
};

/* One runner's state: the job, its hosts, and the groups above. */
struct run_ctx {
    struct agent *a;
    struct agent_run *run;
    struct spec sp;
    char job[128];
    char dir[PATH_MAX]; /* <staging_dir>/<HMAC of the job name> (stage.h) */
    char region[32];    /* of the job (from its ARN), else the agent's */
    char account[32];   /* of the job (from its ARN), "" when unknown */
    struct run_host h[STAGE_MAX_HOSTS];
    int nh;                /* hosts in use: InstanceCount once the job is read, 1 before */
    int log_host;          /* host whose stream gets the agent's own lines (staging) */
    char net[200];         /* the job's network (several hosts), "" when none */
    int gpus;              /* GPUs each host's container was given (-1: all) */
    double t_start, t_end; /* container start and end, epoch seconds */
    char cur[64];          /* the job's status after a RUN_TR_CONFLICT */
    struct run_io io;
    struct run_prof prof;
    struct run_creds creds;
    struct run_warm warm;
};

/* run.c */
int run__image_has_typrof(const struct run_ctx *r);
__attribute__((format(printf, 3, 4))) int run__fmt(char *out, size_t n, const char *fmt, ...);
enum run_end run__conclude(struct run_ctx *r, enum run_outcome out);
void run__ckpt_dir(struct run_ctx *r, struct run_host *h);

/* run_logs.c */
void run__logs_unref(struct run_logs *l);
void run__metrics_collect(struct run_logs *l);
json_t *run__metrics_dims(const struct run_logs *l);
json_t *run__metrics_job_dims(const struct run_logs *l);
void run__metrics_job_seq(const struct run_logs *l, struct store_metric_point *p, size_t k);
size_t run__metrics_of(struct run_logs *l, int def, size_t *from, struct store_metric_point *p,
                       size_t max);
void run__logs_flush(struct run_logs *l, struct store *s);
void *run__logs_thread(void *arg);
/* 1 when l's batch has room for n more events (Redis takes them), 0 when the sender should
   keep them and offer them again. */
int run__logs_room(struct run_logs *l, size_t n);
/* Appends one line (text, borrowed) at ts_ms (0 = now) to l's batch, matched against its
   MetricDefinitions, as a reader would; the runner flushes. 0, or -1 out of memory. */
int run__logs_add(struct run_logs *l, const char *text, int64_t ts_ms);

/* run_status.c */
void run__store_reopen(struct run_ctx *r);
int run__outbox_drain(struct run_ctx *r);
void run__logs_flush_all(struct run_ctx *r, int force);
enum run_tr run__transition(struct run_ctx *r, const char *expect, const char *status,
                            const char *secondary, const char *message, json_t *set);
int run__redis_down(struct run_ctx *r);
int run__transient(struct run_ctx *r, const struct ty_err *err);
double run__retry_deadline(struct run_ctx *r);
int run__backoff(struct run_ctx *r, double deadline, int *attempt);
void run__arn_identity(struct run_ctx *r);
json_t *run__get(struct run_ctx *r, int *gone);
const char *run__status_of(json_t *doc);
void run__set_times(struct run_ctx *r, json_t *set);
void run__set_metrics(struct run_ctx *r, json_t *set);

/* run_upload.c */
struct objstore *run__objstore(struct run_ctx *r, struct ty_err *err);
void run__objstore_reset(struct run_ctx *r);
void run__log_line(void *ud, const char *line);
void run__transfer_init(struct run_ctx *r, struct transfer *t, struct objstore *os);
const char *run__ckpt_root(const struct run_ctx *r, const struct run_host *h, const char **rel);
void run__checkpoints_sync(struct run_ctx *r, int final);
void run__profiler_live(struct run_ctx *r);
int run__upload(struct run_ctx *r, json_t *set, int with_model, char *reason, size_t n);
enum run_end run__finish_stopped(struct run_ctx *r, int maxruntime, json_t *set);
enum run_end run__finish_failed(struct run_ctx *r, const char *reason);
enum run_end run__settle(struct run_ctx *r, enum run_tr tr);

/* run_volume.c */
/* Makes host h's volume at h->vol (or its plain folder without volumes), removing what an
   earlier run left. 0, or a negative code with err->msg a FailureReason (CapacityError when the
   disk cannot promise it). */
int run__volume_make(struct run_ctx *r, struct run_host *h, struct ty_err *err);
/* Unmounts and deletes every host's volume (before the job's folder is removed). */
void run__volume_drop(struct run_ctx *r);
/* When staging failed because h's volume is full, rewrites err as SageMaker's "Data download
   failed:Insufficient disk space" ClientError. */
void run__volume_full(struct run_ctx *r, struct run_host *h, struct ty_err *err);

/* run_container.c */
/* Records what the job's containers were given (instance limits, GPUs, volumes) in its
   agent_run, for the heartbeat and /healthz (agent.c). */
void run__use_record(struct run_ctx *r);
void run__unfence(struct run_ctx *r);
void run__remove_leftovers(struct run_ctx *r);
int run__relay_wanted(const struct run_ctx *r);
int run__creds_grant(struct run_ctx *r, char *reason, size_t n);
void run__relay_start(struct run_ctx *r, struct run_host *h, int pid);
int run__sandbox(struct run_ctx *r, struct run_host *h);
void run__relay_late(struct run_ctx *r, struct run_host *h);
void run__relay_cleanup(struct run_ctx *r, int remove);
int run__create(struct run_ctx *r, struct run_host *h, char *reason, size_t n);
int run__logs_new(struct run_ctx *r, struct run_host *h, long skip);
int run__start_logs(struct run_ctx *r, struct run_host *h, long skip);
int run__kill(struct run_ctx *r);
int run__host_failed(const struct run_host *h);
enum run_outcome run__supervise(struct run_ctx *r);
void run__drain_logs(struct run_ctx *r);
void run__failure_reason(struct run_ctx *r, char *reason, size_t n);

/* run_slurm_rec.c: the record of a job's Slurm attempt, for an agent restarted mid-job. */
struct run_slurm_rec_host {
    char stream[128]; /* its log stream */
    long long acked;  /* its launcher's last report applied and flushed */
    int64_t last_ts;  /* the stream's last event time */
    int phase;        /* -1 before any report, else enum launchwire_phase */
    double started;   /* its container's start, 0 before */
    int ended;        /* its end was reported: the members below hold it */
    char node[64];    /* the Slurm node it runs on */
    int exit_code, exit_signal, stopped;
    char failure[LAUNCHWIRE_FAILURE_MAX];
    char model_error[512];
    char error[LAUNCHWIRE_FAILURE_MAX];
};
struct run_slurm_rec {
    long slurm_id;
    int attempt;
    char token[LAUNCHWIRE_TOKEN_HEX + 1]; /* the attempt's launch token */
    char creds[SESSION_TOKEN_LEN];        /* the role's container token the launchers hold */
    char partition[128];
    double t_start; /* TrainingStartTime, 0 before */
    int said;       /* 1 Downloading said, 2 Training said */
    int stop;       /* 0, 1 StopTrainingJob, 2 MaxRuntimeInSeconds: told to the launchers */
    int nh;
    struct run_slurm_rec_host h[STAGE_MAX_HOSTS];
};
/* Replaces the job's record with rec (<data_dir>/slurm/<job>.json, 0600). 0 or -1 (errno). */
int run__slurm_rec_write(const struct run_ctx *r, const struct run_slurm_rec *rec);
/* Reads the job's record. 0, or -1 when there is none or it is not one. */
int run__slurm_rec_read(const struct run_ctx *r, struct run_slurm_rec *rec);
/* Removes the job's record (its attempt ended). */
void run__slurm_rec_drop(const struct run_ctx *r);

/* run_slurm.c */
/* Runs the job of r (read, InstanceCount set) on the Slurm cluster (--executor slurm): from its
   submission to its final status. */
enum run_end run__slurm(struct run_ctx *r);

/* run_reattach.c */
void run__host_init(struct run_ctx *r, int i);
int run__reattach(struct run_ctx *r, const char *secondary, double t_doc, int stopping,
                  enum run_end *out);

#endif
