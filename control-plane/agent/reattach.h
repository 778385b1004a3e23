/*
 * reattach.h - what an agent needs to take over the containers of a job that an earlier agent
 * of the same host (the same agent restarted, or another id on the same data dir and engine)
 * started, instead of running the job's script again: a job's script runs once per attempt.
 *
 * Owns: the job's run record, <job staging dir>/attach.json (outside every host's /opt/ml, so
 * no container can write it), written by the runner just before the containers start and again
 * with their exit codes once they exited and their logs were read; and the plan, a pure
 * decision from the engine's containers of the job (found by their trainyard.* labels), that
 * record and the job's SecondaryStatus. Does not own the containers, the log streams or the
 * job's transitions (run.c). Thread-safe: no shared state.
 *
 * Invariant of the plan: a job whose script may have started is never planned to start anew;
 * it is taken over (REATTACH_ATTACH) or failed with a reason (REATTACH_FAIL).
 */
#ifndef TY_CP_AGENT_REATTACH_H
#define TY_CP_AGENT_REATTACH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "stage.h"

#define REATTACH_RECORD     "attach.json"
#define REATTACH_REASON_MAX 512

/* One host of the job as the record keeps it. */
struct reattach_rec_host {
    char stream[128]; /* its CloudWatch log stream, "" unknown */
    long log_base;    /* events in that stream before the container started, -1 unknown */
    int exited;       /* its exit below is known (the container may be gone) */
    int exit_code;
    int oom_killed;
};

struct reattach_record {
    int nh;              /* hosts */
    double t_start;      /* TrainingStartTime the runner set, epoch seconds */
    int64_t last_log_ts; /* timestamp (ms) of the agent's last own line in the streams */
    struct reattach_rec_host h[STAGE_MAX_HOSTS];
};

/* Writes <job_dir>/attach.json (a new file renamed over the old one). 0 or -TY_EIO. */
int reattach_record_write(const char *job_dir, const struct reattach_record *rec);

/* OUT: rec from <job_dir>/attach.json. 0, -TY_ENOTFOUND when there is none, -TY_EINVAL when it
   is not a record (a symlink, too big, bad JSON). */
int reattach_record_read(const char *job_dir, struct reattach_record *rec);

/* Removes <job_dir>/attach.json (no-op when absent). */
void reattach_record_remove(const char *job_dir);

enum reattach_action {
    REATTACH_FRESH,  /* no container of the job ever started: run it as a new claim would */
    REATTACH_ATTACH, /* take the containers over (those exited: collect their end) */
    REATTACH_FAIL    /* the script may have run but cannot be followed: fail with reason */
};

/* One host of the job as the plan found it. */
struct reattach_host {
    char cid[72];    /* its training container, "" when the engine has none */
    char sbid[72];   /* its sandbox container (network namespace and relay), "" when none */
    int started;     /* the container ran (State is not "created") */
    int running;     /* State "running" (or "paused") */
    int from_record; /* no container: its end comes from the record (exit_code, oom_killed) */
    int exit_code;
    int oom_killed;
    char gpus[256]; /* its container's trainyard.gpus label: the GPUs' CDI names, "" for none */
};

struct reattach_plan {
    enum reattach_action action;
    int nh;
    struct reattach_host h[STAGE_MAX_HOSTS];
    int extra;                        /* containers of the job that belong to no host 0..nh-1 */
    char reason[REATTACH_REASON_MAX]; /* REATTACH_FAIL: a FailureReason */
};

/*
 * Decides how to go on with a job of nh hosts (host i is named algo-<i+1>) whose entry this
 * agent reclaimed. containers: the engine's summaries of the containers labelled
 * trainyard.job=<job> (borrowed; docker_list()); rec: its record, NULL when none; secondary:
 * the job's SecondaryStatus ("" unknown). OUT: plan. Never fails: anything it cannot follow
 * is REATTACH_FAIL with plan->reason.
 */
void reattach_plan(json_t *containers, const struct reattach_record *rec, int nh,
                   const char *secondary, struct reattach_plan *plan);

#endif
