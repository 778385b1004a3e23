/*
 * slurmfate.h - what a training job's Slurm job means for the training job (docs/slurm.md): the
 * Slurm executor reads the Slurm job (slurmrest.h) and, with what it knows itself (a stop it
 * sent, the launchers' reports, a node found lost), decides whether the training job waits in
 * Starting (and with which StatusMessage), runs, ended as its launchers report, or failed (and
 * whether the Slurm job must be cancelled first, so that nothing runs twice).
 *
 * Owns nothing between calls. Pure: no cluster, no allocation.
 */
#ifndef TY_SLURMEXEC_SLURMFATE_H
#define TY_SLURMEXEC_SLURMFATE_H

#include "slurmrest.h"

#include <jansson.h>
#include <stddef.h>

/* What the executor knows besides Slurm's view of the job. Strings borrowed. */
struct slurmfate_ctx {
    long slurm_id;             /* the Slurm job's id */
    const char *instance_type; /* ResourceConfig.InstanceType */
    const char *partition;     /* where it was submitted (slurmmap.h) */
    int hosts;                 /* InstanceCount: the nodes asked */
    int seen_running;          /* Slurm showed it allocated before (Slurm's own answers only: a
                                  launcher's report may be fresher than the answer at hand, and
                                  PENDING after it would read as a requeue) */
    int stop_sent;             /* the executor asked the launchers to stop (StopTrainingJob or
                                  MaxRuntimeInSeconds), or cancelled the job itself */
    int launchers_done;        /* every host's launcher reported its end */
    const char *lost_node;     /* a node of the job found down, or whose launcher went silent
                                  (slurmfate_lost_node); NULL when none */
    int lost_host;             /* its host index (0-based), -1 when unknown */
};

enum slurmfate_kind {
    SLURMFATE_WAIT,    /* pending in Slurm: the job stays Starting, msg is its StatusMessage */
    SLURMFATE_RUN,     /* allocated: the launchers run, their reports are followed */
    SLURMFATE_REPORTS, /* ended: the launchers' reports (exit codes, failure files) and the
                          executor's own stop decide Completed, Failed or Stopped */
    SLURMFATE_FAIL,    /* the training job fails, msg its FailureReason */
};

struct slurmfate {
    enum slurmfate_kind kind;
    int cancel;    /* the executor cancels the Slurm job first (it would wait for ever, was
                      requeued, or lost a node while still running) */
    char msg[640]; /* WAIT: the StatusMessage; FAIL: the FailureReason ("ClientError: ...",
                      "InternalServerError: ..."); else "" */
};

/*
 * Decides what j (NULL: Slurm no longer knows the job, purged after MinJobAge) means, given c.
 * A job Slurm requeued (restart_cnt > 0, or pending again after running), a node lost while
 * running, or a job cancelled outside trainyard fails with "the training script is not run
 * again"; a job that can never start (PartitionNodeLimit, ...) fails as a ClientError naming the
 * partition and the limit. OUT: out.
 */
void slurmfate_decide(const struct slurmrest_job *j, const struct slurmfate_ctx *c,
                      struct slurmfate *out);

/*
 * Finds a node of j's allocation (its first 128) that nodes (GET /nodes' array) shows down, in
 * error, or not responding (a drained node still runs its jobs). OUT: node (truncated to n), *host
 * its index in j's node list. Returns 1 when one is found, else 0.
 */
int slurmfate_lost_node(const struct slurmrest_job *j, json_t *nodes, char *node, size_t n,
                        int *host);

#define SLURMFATE_ADDR_MAX 64 /* a node address's room, with its NUL */

/*
 * The addresses of j's nodes in its node list's order (host i = algo-(i + 1)), from nodes (GET
 * /nodes' array: each node's "address"), for the hosts to reach each other by name. OUT:
 * addrs[0..count). Returns the count, or -1 when j has no nodes yet, more than max, or a node
 * that nodes does not show with an address.
 */
int slurmfate_node_addrs(const struct slurmrest_job *j, json_t *nodes,
                         char (*addrs)[SLURMFATE_ADDR_MAX], int max);

#endif
