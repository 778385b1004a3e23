/*
 * launcher_int.h - what the files of trainyard-launch share (launcher.c, launcher_wire.c,
 * launcher_host.c). trainyard-launch runs one host of a training job on a node its executor
 * does not reach (a Slurm node, started by srun): it asks the executor for its assignment,
 * stages the host's /opt/ml from trainyard's S3 with the job role's credentials, runs the
 * training container through the node's engine confined as the local agent does (hostcfg.h,
 * the sandbox and the relay), reports its lines, start and end to the executor
 * (launchwire.h), stops on the executor's word, and algo-1 uploads the model.
 *
 * Invariants: struct launcher belongs to the main thread, but for the members under mu, which
 * the reporter thread (launcher_wire.c) shares.
 */
#ifndef TY_LAUNCH_LAUNCHER_INT_H
#define TY_LAUNCH_LAUNCHER_INT_H

#include "launchwire.h"
#include "spec.h"
#include "stage.h"
#include "ty_err.h"

#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>

#define LAUNCHER_ORPHAN_S    60                    /* default --executor-timeout */
#define LAUNCHER_SLURM_LABEL "trainyard.slurm.job" /* the Slurm job of its containers */
#define LAUNCHER_BEAT_S      2.0                   /* a report at least this often */
#define LAUNCHER_MAX_LINE    262144                /* longest line kept (CloudWatch's event) */
#define LAUNCHER_MAX_HOSTS   STAGE_MAX_HOSTS       /* hosts of a job named in /etc/hosts */
#define LAUNCHER_MAX_QUEUED  100000 /* lines waiting for the executor; more are dropped, counted */

struct docker;
struct relay;

struct launcher {
    /* options and environment */
    const char *docker_host;
    const char *staging_root;
    char url[512];                        /* the executor's listener */
    char token[LAUNCHWIRE_TOKEN_HEX + 1]; /* the attempt's launch token */
    char job[64];
    char node[64];
    int attempt, host;
    /* the assignment (GET /launch/v1/job) */
    json_t *asg; /* owned; the strings below point into it */
    struct spec sp;
    int have_spec;
    const char *endpoint;    /* trainyard's API as this node reaches it, "" when none */
    const char *creds_token; /* the job's container token, "" when it has no role inside */
    const char *region;
    const char *deployment;
    const char *runtime_image; /* its sandbox's image */
    int hosts, stop_grace;
    json_t *addrs; /* borrowed from asg: each host's node address (the assignment's "addrs"),
                      NULL when absent */
    int orphan_s;  /* no answer from the executor this long: stop, upload nothing */
    /* the host */
    char root[PATH_MAX]; /* <staging_root>/<job>-<attempt>-algo-<n>: the launcher's folder */
    char dir[PATH_MAX];  /* <root>/ml, bound at /opt/ml */
    char ckpt[PATH_MAX]; /* <root>/checkpoints, bound at a LocalPath outside /opt/ml */
    char name[16];       /* algo-<host + 1> */
    char cname[200], sbname[240], seccomp[PATH_MAX];
    char cid[72], sbid[72];
    int engine_docker;
    struct docker *d; /* owned */
    struct relay *relay;
    volatile sig_atomic_t sig_stop; /* USR1: the executor's graceful stop; TERM: Slurm's */
    volatile sig_atomic_t sig_term;

    /* the wire, under mu (launcher_wire.c) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    json_t *pending;  /* lines not yet in a report */
    long dropped;     /* lines dropped over LAUNCHER_MAX_QUEUED */
    char *inflight;   /* the report being sent until an answer acks it (its body) */
    int inflight_end; /* it is the end's report */
    long long seq;    /* of the last report made */
    enum launchwire_phase phase;
    double started;
    struct launchwire_report end; /* the exit, once end_set */
    int end_set, end_acked;
    int stop, stop_grace_ans, upload; /* the executor's answer */
    int gone;                         /* 401, 403, 410: the attempt is over for the executor */
    double last_ok;                   /* last answer 200, epoch s */
    int quit;
    pthread_t thr;
    int thr_started;
};

/* launcher_wire.c */
int launcher_assignment(struct launcher *l, struct ty_err *err);
int launcher_creds(struct launcher *l, char *ak, size_t akn, char *sk, size_t skn, char *tok,
                   size_t tokn, struct ty_err *err);
int launcher_wire_start(struct launcher *l);
/* Sends what is pending and the end, waits (at most wait_s, and not once the executor was silent
   past orphan_s) for its ack, stops the thread. */
void launcher_wire_stop(struct launcher *l, double wait_s);
void launcher_line(struct launcher *l, const char *text, size_t len, int64_t ts_ms, int is_stderr);
__attribute__((format(printf, 2, 3))) void launcher_say(struct launcher *l, const char *fmt, ...);
void launcher_set_phase(struct launcher *l, enum launchwire_phase phase, double started);
void launcher_set_end(struct launcher *l, const struct launchwire_report *end);
/* OUT: what the executor said: *stop (1: stop now), *grace_s, *upload; *gone (the attempt is
   over); *silent_s (seconds since its last answer). */
void launcher_orders(struct launcher *l, int *stop, int *grace_s, int *upload, int *gone,
                     double *silent_s);

/* launcher_host.c */
int launcher_stage(struct launcher *l, char *reason, size_t n);
int launcher_run(struct launcher *l, char *reason, size_t n);
void launcher_follow(struct launcher *l, struct launchwire_report *end);
void launcher_upload(struct launcher *l, int with_model, char *reason, size_t n);
void launcher_cleanup(struct launcher *l);
/* As the cluster's Epilog (SLURM_SCRIPT_CONTEXT epilog_slurmd): removes the containers labelled
   with SLURM_JOB_ID on the node's engine and the staging folders marked with it, which a
   launcher killed before its end left. Returns 0 always: a failed Epilog drains the node. */
int launcher_epilog(const char *docker_host, const char *staging_root);

#endif
