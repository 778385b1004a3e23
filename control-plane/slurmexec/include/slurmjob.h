/*
 * slurmjob.h - the submission of one attempt of a training job to Slurm (docs/slurm.md): its
 * name and batch script (slurmscript.h), its nodes, partition and GPUs (slurmmap.h), its time
 * limit, and the environment that tells each node's launcher its attempt.
 *
 * Owns: the submission's strings and environment (slurmjob_free). Pure: no cluster.
 */
#ifndef TY_SLURMEXEC_SLURMJOB_H
#define TY_SLURMEXEC_SLURMJOB_H

#include "slurmmap.h"
#include "slurmrest.h"
#include "ty_err.h"

#include <jansson.h>

#define SLURMJOB_DEFAULT_RUNTIME_S 86400 /* a job without MaxRuntimeInSeconds: SageMaker's */
#define SLURMJOB_SLACK_S           300   /* Slurm's limit is a backstop: this past trainyard's */

/* One attempt to submit. Strings borrowed. */
struct slurmjob_in {
    const char *deployment;             /* store_deployment_id */
    const char *job;                    /* TrainingJobName */
    int attempt;                        /* 1, 2, ... */
    int hosts;                          /* InstanceCount: one node each */
    long max_runtime_s;                 /* MaxRuntimeInSeconds, 0 = SLURMJOB_DEFAULT_RUNTIME_S */
    int stop_grace_s;                   /* the launchers' stop grace */
    const struct slurmmap_entry *place; /* where the instance type runs */
    const char *launcher;               /* trainyard-launch's path on the nodes */
    const char *launch_url;       /* the executor's listener as the nodes reach it (http://...) */
    const char *token;            /* the attempt's launch token */
    const char *node_docker_host; /* the nodes' engine for the launchers, NULL = theirs */
    const char *node_staging_dir; /* where the launchers stage, NULL = theirs */
    const char *workdir;          /* the job's working folder on the nodes (its output file
                                     lands there), NULL = "/tmp" */
};

/* A submission ready for slurmrest_submit_job(&j->sub). Points into itself. */
struct slurmjob {
    struct slurmrest_submit sub;
    char name[128];
    char comment[256];
    char gres[160];
    char output[1100];
    char *script; /* owned */
    json_t *env;  /* owned */
};

/*
 * Builds the submission of in: the Slurm job "ty-<deployment 8>-<job>" of hosts exclusive
 * nodes, one task each, on place's partition with its GRES, limited to MaxRuntime + the stop
 * grace + SLURMJOB_SLACK_S in whole minutes (trainyard's own clock stops it first), its comment
 * "trainyard <deployment 8> <job> attempt <n>", its environment PATH, TY_LAUNCH_URL,
 * TY_LAUNCH_TOKEN, TY_LAUNCH_JOB, TY_LAUNCH_ATTEMPT and the nodes' engine and staging folder
 * when given. OUT: j (slurmjob_free). 0, or -TY_EINVAL with err (a missing member, a launcher
 * path or URL a shell or the environment cannot carry), -TY_ENOMEM.
 */
int slurmjob_build(const struct slurmjob_in *in, struct slurmjob *j, struct ty_err *err);
void slurmjob_free(struct slurmjob *j);

#endif
