/*
 * warmpool.h - SageMaker managed warm pools on one agent (ResourceConfig.KeepAlivePeriodInSeconds).
 *
 * Owns: the agent's retained instances (each host's sandbox container, which holds the host's
 * network namespace, and the job network of a several-host job), the match key a later job must
 * equal to reuse one, their expiry, and the WarmPoolStatus member of the job documents involved
 * (Available, InUse, Reused, Terminated, ResourceRetainedBillableTimeInSeconds, ReusedByJob).
 * Does not own: the training containers (every job gets a fresh one, run.c), /opt/ml (every job
 * gets a fresh staging folder: nothing of one job's files reaches the next), the relay or the
 * role credentials (per job, run.c).
 * A pool is reused only by a job whose key is equal: same account, region, RoleArn, image,
 * instance type and count, volume size and KMS key, VpcConfig, network isolation and
 * inter-container encryption (docs/warm-pools.md). Pools live in the agent's memory: they end
 * with the agent (warmpool_stop terminates them), and a job claimed by another agent starts cold.
 * Thread-safety: every function may be called from any thread.
 */
#ifndef TY_AGENT_WARMPOOL_H
#define TY_AGENT_WARMPOOL_H

#include "stage.h"
#include "ty_err.h"

#include <jansson.h>
#include <stddef.h>

#define WARMPOOL_KEY_MAX 4096

struct docker;
struct store;

/* One retained instance: what a job left for the next matching one. */
struct warmpool_entry {
    char job[64];                   /* the job whose document shows the pool */
    char key[WARMPOOL_KEY_MAX];     /* warmpool_key() of that job */
    int nh;                         /* hosts */
    char sbid[STAGE_MAX_HOSTS][72]; /* each host's sandbox container, "" when none */
    char net[200];                  /* the job network (several hosts), "" when none */
    double since;                   /* epoch seconds: retained since (the job's end) */
};

struct warmpool;

/*
 * The match key of job document doc (borrowed): a compact JSON array of what AWS's matching
 * rules compare. OUT: key (NUL-terminated). 0, or -TY_EINVAL when doc lacks TrainingJobArn or
 * the key does not fit in n.
 */
int warmpool_key(json_t *doc, char *key, size_t n, struct ty_err *err);

/* ResourceConfig.KeepAlivePeriodInSeconds of doc (borrowed), 0 when absent. */
long warmpool_keep_alive(json_t *doc);

/* 1 when a job that ended as doc (borrowed) keeps its instance, as SageMaker decides: a
   KeepAlivePeriodInSeconds above 0 and Completed, Stopped, or Failed for an AlgorithmError or a
   ClientError. */
int warmpool_retains(json_t *doc);

/*
 * Starts the agent's pool: a thread that ends pools past their KeepAlivePeriodInSeconds (read
 * from the job document at every sweep, so that UpdateTrainingJob changes it) or whose job is
 * gone. max_pools caps the retained pools (the oldest is terminated first). redis_url and
 * docker_host are copied. new: caller stops with warmpool_stop(). NULL on failure.
 */
struct warmpool *warmpool_start(const char *redis_url, const char *docker_host, int max_pools,
                                struct ty_err *err);

/* Stops the thread, terminates every retained pool (Terminated in its document) and frees wp.
   NULL is a no-op. */
void warmpool_stop(struct warmpool *wp);

/*
 * Retains e (copied): records Available in e->job's document (through s, borrowed) and keeps the
 * pool until its period ends. 0, or a negative code (nothing retained: the caller removes what e
 * names).
 */
int warmpool_put(struct warmpool *wp, struct store *s, const struct warmpool_entry *e,
                 struct ty_err *err);

/*
 * Takes the newest pool whose key equals key. OUT: *e (the caller now owns its containers). 1
 * when found, 0 when none. The pool's document is not touched: the caller calls
 * warmpool_reused() or warmpool_terminate().
 */
int warmpool_take(struct warmpool *wp, const char *key, struct warmpool_entry *e);

/* Records in e->job's document that job reused its pool (Reused, ReusedByJob, billable time). */
void warmpool_reused(struct store *s, const struct warmpool_entry *e, const char *job, double now);

/* Removes what e names (d borrowed): its sandboxes, its network and the network's fence. */
void warmpool_release(struct docker *d, const struct warmpool_entry *e);

/* warmpool_release(), then records Terminated in e->job's document. */
void warmpool_terminate(struct docker *d, struct store *s, const struct warmpool_entry *e,
                        double now);

/* Retained pools now (for the agent's status). */
int warmpool_count(struct warmpool *wp);

#endif
