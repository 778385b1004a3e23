/*
 * slurmscript.h - the Slurm job that runs one training job (docs/slurm.md): its name, by which a
 * restarted executor finds it, and its batch script, which keeps Slurm from running the training
 * script twice.
 *
 * Owns nothing between calls. Pure: no cluster, no allocation but the script returned.
 */
#ifndef TY_SLURMEXEC_SLURMSCRIPT_H
#define TY_SLURMEXEC_SLURMSCRIPT_H

#include <stddef.h>

struct slurmscript_job {
    const char *deployment; /* store_deployment_id (its first 8 characters name the job) */
    const char *job;        /* the TrainingJobName */
    int hosts;              /* InstanceCount: the nodes asked, one per host */
    const char *launcher;   /* the per-node launcher's path on the nodes */
};

/* The Slurm job's name: "ty-<deployment's first 8>-<job>". OUT: out (truncated to n - 1). */
void slurmscript_name(const char *deployment, const char *job, char *out, size_t n);

/*
 * The batch script: it turns Slurm's requeue off for this job (slurmrestd 22.05 ignores
 * "requeue": false, and a node failure would run the job again), exits 1 without starting
 * anything when Slurm did requeue it (SLURM_RESTART_COUNT) or gave another number of nodes,
 * and starts one launcher per node with srun (a launcher that fails ends them all). new:
 * free(); NULL when a member is missing or the launcher's path holds a character a shell would
 * read (only letters, digits and "/._-+" pass).
 */
char *slurmscript_batch(const struct slurmscript_job *j);

#endif
