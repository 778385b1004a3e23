/*
 * gpumetrics.h - the GPU instance metrics SageMaker publishes for a training job's hosts
 * (GPUUtilization, GPUMemoryUtilization in /aws/sagemaker/TrainingJobs, dimension
 * Host = <job>/algo-N), read through NVML.
 *
 * Owns: libnvidia-ml, opened with dlopen at run time (no build or link dependency on the
 * driver): absent, or nvmlInit failing, gives no handle and the metrics are not published.
 * The arithmetic is SageMaker's: each metric is a percentage per GPU summed over the host's
 * GPUs, so 4 fully busy GPUs read 400.
 * Does not own: writing the series (run.c, store_metrics.h).
 * Thread-safety: NVML is thread-safe; one handle serves every runner.
 */
#ifndef TY_CP_AGENT_GPUMETRICS_H
#define TY_CP_AGENT_GPUMETRICS_H

#include <stdint.h>

struct gpumetrics;

/* One GPU's reading as NVML gives it. */
struct gpumetrics_gpu {
    unsigned int util;            /* nvmlUtilization_t.gpu, percent */
    unsigned long long mem_used;  /* nvmlMemory_t.used, bytes */
    unsigned long long mem_total; /* nvmlMemory_t.total, bytes (0: unknown) */
};

/*
 * Opens NVML from lib (NULL = "libnvidia-ml.so.1") and initialises it. new: caller frees with
 * gpumetrics_close(). NULL when the library is absent, lacks a symbol, or nvmlInit fails (no
 * GPU metrics then).
 */
struct gpumetrics *gpumetrics_open(const char *lib);
/* nvmlShutdown and dlclose. NULL is a no-op. */
void gpumetrics_close(struct gpumetrics *g);
/* GPUs NVML sees. */
int gpumetrics_count(const struct gpumetrics *g);

/*
 * Folds n readings into SageMaker's two figures. OUT: *util (sum of GPU utilisation percents)
 * and *mem (sum of memory used percents; a GPU without total counts 0). 0, or -1 when n <= 0.
 */
int gpumetrics_fold(const struct gpumetrics_gpu *gpus, int n, double *util, double *mem);

/*
 * Reads the GPUs whose NVML index has its bit set in mask (bit i: GPU i; GPUMETRICS_ALL: every
 * GPU) and folds them (gpumetrics_fold): a job's own GPUs, as the ledger gave them. GPUs whose
 * reading fails are left out. 0, or -1 when no GPU could be read (nothing to publish).
 */
#define GPUMETRICS_ALL (~(uint64_t)0)
int gpumetrics_sample(struct gpumetrics *g, uint64_t mask, double *util, double *mem);

#endif
