/*
 * instances.h - the SageMaker instance-type table: vCPUs, memory and GPUs per ml.* type, and
 * the container limits an agent grants a job on a given host.
 *
 * Owns: the static table. Does not own the host probe (callers pass what the host has).
 * Thread-safe: read-only data.
 */
#ifndef TY_CP_AGENT_INSTANCES_H
#define TY_CP_AGENT_INSTANCES_H

#include <stdint.h>

struct instances_type {
    const char *name;     /* "ml.m5.xlarge" */
    int vcpus;            /* virtual CPUs */
    int64_t memory_bytes; /* memory */
    int gpus;             /* NVIDIA GPUs, 0 for CPU types */
};

/* borrowed: static row for type, or NULL when the type is not in the table. */
const struct instances_type *instances_lookup(const char *type);

struct instances_limits {
    int64_t nano_cpus;    /* docker NanoCpus, 0 = no limit */
    int64_t memory_bytes; /* docker Memory, 0 = no limit */
    int cpus;             /* SM_NUM_CPUS */
    int gpus;             /* DeviceRequests count and SM_NUM_GPUS, 0 = none */
    int clamped;          /* 1 when cpus or memory were reduced to what the host has */
    int known;            /* 1 when the type is in the table */
};

/*
 * Limits for a job of instance type on a host with host_cpus, host_memory and host_gpus
 * (0 = unknown for cpus/memory). Types are clamped to the host so that a big instance type still
 * starts on a small machine; GPUs are granted only when both the type and the host have them.
 * An unknown type gets no CPU/memory limit and the host's CPU count. OUT: lim, always written.
 */
void instances_limits(const char *type, int host_cpus, int64_t host_memory, int host_gpus,
                      struct instances_limits *lim);

#endif
