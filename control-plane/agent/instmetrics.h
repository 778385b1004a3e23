/*
 * instmetrics.h - the instance metrics SageMaker publishes for a training job's hosts in
 * namespace /aws/sagemaker/TrainingJobs (CPUUtilization, MemoryUtilization, DiskUtilization,
 * dimension Host = <job>/algo-N), from two successive engine stats samples of the host's
 * container and the file system of its /opt/ml.
 *
 * Owns: the arithmetic (CPUUtilization is SageMaker's: percent of one core, summed over the
 * cores, so 4 busy cores read 400). Does not own: sampling (docker_stats), writing the series
 * (run.c, store_metrics.h). Pure; thread-safe.
 */
#ifndef TY_CP_AGENT_INSTMETRICS_H
#define TY_CP_AGENT_INSTMETRICS_H

#include "docker.h"

struct instmetrics {
    double cpu;  /* percent of one core, summed over cores; < 0 when unknown */
    double mem;  /* percent of the container's memory limit; < 0 when unknown */
    double disk; /* percent of the file system holding dir used; < 0 when unknown */
};

/* From prev (NULL on the first sample) and cur, and the file system of dir (may be NULL).
   OUT: m. */
void instmetrics_compute(const struct docker_stats *prev, const struct docker_stats *cur,
                         const char *dir, struct instmetrics *m);

#endif
