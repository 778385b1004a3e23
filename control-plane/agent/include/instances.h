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
    /* Confinement sizes, set for every type (docs/job-sandbox.md). */
    int64_t pids_limit; /* docker PidsLimit: INSTANCES_PIDS_LIMIT */
    int64_t tmp_bytes;  /* size of the /tmp tmpfs (and of /var/tmp, a quarter of it) */
    int64_t shm_bytes;  /* docker ShmSize (/dev/shm) */
};

/* Processes and threads a job container may have at once: enough for data loaders with many
   workers and OpenMP/BLAS thread pools on the largest types (192 vCPUs x ~20), few enough that a
   fork bomb stops long before the host's pid table (CIS Docker 5.29). */
#define INSTANCES_PIDS_LIMIT 4096

/*
 * Linux capabilities a job keeps after CapDrop ALL (NULL-terminated; CIS Docker 5.3). Jobs run
 * as root in their image, and a training script writes its own files:
 *   CHOWN        chown files it wrote (tar/pip extraction keeps owners)
 *   DAC_OVERRIDE root reads/writes files of other uids or modes (staged inputs, extracted code)
 *   FOWNER       chmod/utime on files it does not own (tar, cp -p, pip)
 *   SETUID       images that drop root with su/gosu/setpriv before training
 *   SETGID       the same for groups (setgroups/setgid)
 *   KILL         signal its own processes after they changed uid (launchers, mpirun)
 * Not kept, among others: NET_RAW (raw sockets), NET_ADMIN, SYS_ADMIN (mount), MKNOD,
 * SYS_CHROOT, SETFCAP, SETPCAP, FSETID, AUDIT_WRITE, NET_BIND_SERVICE, SYS_PTRACE.
 */
extern const char *const instances_caps[];

/*
 * Limits for a job of instance type on a host with host_cpus, host_memory and host_gpus
 * (0 = unknown for cpus/memory). Types are clamped to the host so that a big instance type still
 * starts on a small machine; GPUs are granted only when both the type and the host have them.
 * An unknown type gets no CPU/memory limit and the host's CPU count. Every type gets the pids
 * limit and tmpfs sizes: /tmp a quarter of the memory limit, /dev/shm half of it (tmpfs pages
 * count against the memory limit), each within [256 MiB, 16 GiB], 1 GiB when there is no memory
 * limit. OUT: lim, always written.
 */
void instances_limits(const char *type, int host_cpus, int64_t host_memory, int host_gpus,
                      struct instances_limits *lim);

#endif
