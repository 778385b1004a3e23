/*
 * slurmx.h - the Slurm executor's agent-wide part (docs/slurm.md, "The executor"): what one
 * trainyard-agent started with --executor slurm holds for all its jobs: the settings, the
 * instance map checked against the cluster at start, the launchers' listener (launchsrv.h),
 * and the table of live attempts that routes each launcher's report and assignment request to
 * the runner of its job (run/run_slurm.c).
 *
 * Owns: copies of the settings, the map, the listener, the table, and the poller: one thread
 * that reads every followed Slurm job's changes with one GET /jobs?update_time a second. Each
 * runner opens its own Slurm client too (slurmx_client: a client is not shared between
 * threads), for its submission, cancels, and a direct read now and then.
 * Thread-safety: every call may come from any thread. A callback runs under the table's lock:
 * once slurmx_detach returns, no callback of that attempt runs or will run.
 */
#ifndef TY_CP_AGENT_SLURMX_H
#define TY_CP_AGENT_SLURMX_H

#include "agent.h"
#include "launchwire.h"
#include "slurmmap.h"
#include "slurmrest.h"
#include "ty_err.h"

#include <jansson.h>

struct slurmx;

/* Starts the executor's part: checks the map against the cluster's partitions and nodes (a
   problem is logged, not fatal: a type nobody uses may name a partition to come), starts the
   listener. new: slurmx_stop. NULL with err (the cluster unreachable, the token refused, the
   map unreadable, the listener's address in use). */
struct slurmx *slurmx_start(const struct agent_slurm *cfg, struct ty_err *err);
void slurmx_stop(struct slurmx *x);

/* The settings as started (strings owned by x; launch_url filled in). */
const struct agent_slurm *slurmx_cfg(const struct slurmx *x);

/* new: a client of the cluster for one thread (slurmrest_close), one_shot: a connection per
   request (a runner's: slurmrestd serves few connections at a time, and hundreds of runners
   must not each hold one), else keep-alive (the poller's). NULL with err. */
struct slurmrest *slurmx_client(const struct slurmx *x, int one_shot, struct ty_err *err);

/* Where instance type runs (slurmmap_lookup). 0 or -TY_EINVAL with err. */
int slurmx_place(const struct slurmx *x, const char *type, struct slurmmap_entry *out,
                 struct ty_err *err);

/* A runner's side of one attempt: report applies a launcher's report (0, or -1: send again);
   assign returns the assignment of host (new, NULL: ask again). ud is the runner's. */
struct slurmx_attempt {
    int (*report)(void *ud, const struct launchwire_report *r);
    json_t *(*assign)(void *ud, int host);
    void *ud;
};

/* Accepts job's attempt of hosts hosts under token (launchwire_token_ok), routed to at
   (copied); acked: each host's last report already applied (hosts of them, NULL: none), for an
   agent that restarted. 0, or a negative code with err. */
int slurmx_attach(struct slurmx *x, const char *job, int attempt, int hosts, const char *token,
                  const struct slurmx_attempt *at, const long long *acked, struct ty_err *err);
/* No callback of job's attempt runs after this returns. ended: the attempt is over, its
   launchers are answered 410 from now on (they stop); else (the agent stops) they are answered
   503 until the listener goes, and keep their containers for the next agent. */
void slurmx_detach(struct slurmx *x, const char *job, int ended);
/* Every answer to job's launchers from now on tells them to stop (launchsrv_set_stop). */
void slurmx_stop_job(struct slurmx *x, const char *job, int grace_s, int upload);
/* job's attempt is Slurm job slurm_id: the poller (one GET /jobs?update_time a second for
   every followed job) keeps what Slurm shows of it. */
void slurmx_follow(struct slurmx *x, const char *job, long slurm_id);
/* OUT: *out, job's Slurm job as the poller (or slurmx_job_seen) last saw it. 0, or -1 when
   nothing was seen yet: the runner asks Slurm itself. */
int slurmx_job(struct slurmx *x, const char *job, struct slurmrest_job *out);
/* What the runner read of job's Slurm job itself (GET /job sent at asked, epoch seconds), kept
   as the poller's unless the poller's answer is to a later request. */
void slurmx_job_seen(struct slurmx *x, const char *job, const struct slurmrest_job *j,
                     double asked);
/* When host of job was last heard from, and OUT: *seq (may be NULL) its last report applied
   (launchsrv_last_seen). */
double slurmx_last_seen(struct slurmx *x, const char *job, int host, long long *seq);

#endif
