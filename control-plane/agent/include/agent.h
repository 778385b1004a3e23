/*
 * agent.h - the training agent: takes jobs from the queue and runs them as containers.
 *
 * Owns: the agent's threads (one claim loop plus one runner thread per running job), its
 * heartbeat, the reclaim of dead agents' jobs, staging of /opt/ml under the data dir, the
 * container's life (create, start, logs into CloudWatch Logs streams, MetricDefinitions,
 * Stop and MaxRuntimeInSeconds with SIGTERM, grace, SIGKILL), the upload of /opt/ml/model as
 * model.tar.gz into the local object store, and every status transition of a running job
 * (through store_job_transition). Used embedded in trainyard-server (--agents N) and alone as
 * trainyard-agent.
 */
#ifndef TY_CP_AGENT_AGENT_H
#define TY_CP_AGENT_AGENT_H

#include <jansson.h>

#include "ty_err.h"

struct s3c_config;

/* The Slurm executor's settings (docs/slurm.md): jobs run as Slurm jobs, one node per instance,
   each node's part run by trainyard-launch. Strings borrowed until agent_start returns. */
struct agent_slurm {
    const char *url;          /* slurmrestd, "http://host:port" (required) */
    const char *api;          /* its OpenAPI plugin, NULL = "v0.0.38" */
    const char *user;         /* whom jobs run as, NULL = "root" */
    const char *jwt_key;      /* the cluster's JWT key file, or */
    const char *token_file;   /* a file holding a token */
    const char *instance_map; /* instance type -> partition and GPUs (slurmmap.h), NULL = none */
    const char *launcher;     /* trainyard-launch's path on the nodes (required) */
    const char *listen;       /* HOST:PORT the launchers' listener binds (required) */
    const char *launch_url;   /* that listener as the nodes reach it, NULL = http://<listen> */
    const char *node_docker_host; /* the nodes' engine for the launchers, NULL = theirs */
    const char *node_staging_dir; /* where the launchers stage, NULL = theirs */
    const char *workdir;          /* the Slurm jobs' working folder on the nodes, NULL = /tmp */
};

struct agent_config {
    const char *id;            /* unique agent id; NULL = "<hostname>-<pid>-<n>" */
    const char *redis_url;     /* as store_open() */
    const char *docker_host;   /* as docker_open() */
    const char *data_dir;      /* state of the agent (staging.key); see staging_dir */
    const char *staging_dir;   /* jobs staged under <staging_dir>/<HMAC of the job name>/ (its
                                  host path shows inside containers: keep it out of data_dir);
                                  NULL = stage_default_root() */
    const char *s3_dir;        /* local object store root: <s3_dir>/<bucket>/<key>;
                                  NULL = <data_dir>/s3 */
    const char *runtime_tar;   /* rootfs tarball of trainyard/runtime, imported when missing;
                                  NULL = no import (a warning when the image is missing) */
    const char *runtime_image; /* NULL = "trainyard/runtime:<version>" */
    const char *endpoint_url;  /* trainyard's API URL as the agent reaches it: relayed into
                                  every job container at 127.0.0.1:RELAY_PORT (relay.h); NULL or
                                  "" = no API and no role credentials inside */
    const char *relay_proxy;   /* a server's --proxy-listen URL: the relays connect there instead
                                  and open each connection with a PROXY v1 header naming the
                                  job's own address (relay_source_addr); for agents on other
                                  hosts. NULL = endpoint_url, from the job's address when local */
    const char *region;        /* AWS_REGION in containers; NULL = "us-east-1" */
    const char *job_volumes;   /* "loop": every job host's /opt/ml is a volume of its
                                  VolumeSizeInGB (volume.h), the agent refuses to start when it
                                  cannot make them; "none": /opt/ml is a folder of the host's
                                  disk, said in each job's log; NULL or "auto": loop when this
                                  host can, else none with a warning at start */
    const struct s3c_config *s3_remote; /* external S3 store (--s3-endpoint), copied; NULL =
                                           the local store under s3_dir */
    int slots;                          /* jobs run at once by this agent: an upper bound
                                           beside the resource ledger (docs/resources.md) */
    int cpus;                           /* vCPUs the ledger counts; 0 = the host's online CPUs */
    long long memory_bytes;  /* memory the ledger counts; 0 = the host's physical memory */
    int gpus;                /* GPUs: 0 = those of /dev/nvidia<N>, N > 0 declares N (MIG slices,
                                tests), -1 declares none */
    const char *gpu_devices; /* with gpus > 0: the GPUs' CDI names, comma-separated
                                ("nvidia.com/gpu=0,nvidia.com/gpu=1"); NULL = nvidia.com/gpu=<i>
                                for i below gpus */
    double overcommit;       /* vCPUs and memory are promised this many times over; 0 = 1 */
    int no_cpu_fallback;     /* 1: an agent without GPUs never runs a GPU instance type (by
                                default it runs it on the CPU, and says so) */
    int stop_grace_s;        /* SIGTERM -> SIGKILL grace, default 120 */
    int heartbeat_ttl_s;     /* default 10 */
    const struct agent_slurm *slurm; /* jobs run on a Slurm cluster instead of the engine
                                        (--executor slurm); NULL = the local engine */
};

/* The ledger's options, shared by trainyard-agent and the server's embedded agents:
   X(field, flag, env, default, help). */
#define AGENT_LEDGER_FLAGS(X)                                                                      \
    X(cpus, "cpus", "TRAINYARD_CPUS", "auto",                                                      \
      "vCPUs the resource ledger counts: auto (the host's online CPUs) or N")                      \
    X(memory, "memory", "TRAINYARD_MEMORY", "auto",                                                \
      "memory the resource ledger counts: auto (the host's) or a size such as 64G or 512M")        \
    X(gpus, "gpus", "TRAINYARD_GPUS", "auto",                                                      \
      "GPUs the resource ledger counts: auto (/dev/nvidia<N>), none, N, or CDI device names "      \
      "(vendor/class=name,...: MIG slices, tests)")                                                \
    X(cpu_fallback, "cpu-fallback", "TRAINYARD_CPU_FALLBACK", "yes",                               \
      "an agent without GPUs runs GPU instance types on the CPU, and says so (yes), or never "     \
      "(no: they wait for a GPU agent, or fail fast when none has enough)")                        \
    X(overcommit, "overcommit", "TRAINYARD_OVERCOMMIT", "1",                                       \
      "vCPUs and memory are promised this many times over, 1 to 64 (GPUs never are)")

/*
 * Sets cfg's ledger fields from the text of the AGENT_LEDGER_FLAGS options (each NULL or "" =
 * the default): cpus "auto" or N; memory "auto" or a size ("64G",
 * "512M", "1T", bytes without a suffix; binary units); gpus "auto", "none", N, or a comma list of
 * CDI device names ("vendor/class=name", e.g. MIG slices; cfg->gpu_devices then points into
 * gpus, which must outlive cfg's use); overcommit a
 * factor of 1 to 64 (vCPUs and memory only; GPUs are never shared); cpu_fallback "yes" or
 * "no". 0, or -TY_EINVAL with err naming the option.
 */
int agent_resources_parse(struct agent_config *cfg, const char *cpus, const char *memory,
                          const char *gpus, const char *cpu_fallback, const char *overcommit,
                          struct ty_err *err);

struct agent;

/*
 * Connects to Redis and the engine (checking both: an unreachable one is an error with one
 * clear line), imports the runtime image when missing, and starts the agent's threads.
 * new: caller stops and frees with agent_stop(). NULL and err on failure.
 */
struct agent *agent_start(const struct agent_config *cfg, struct ty_err *err);

/*
 * Stops taking jobs, stops the heartbeat and joins the threads. Running containers are left
 * running and their jobs pending in the queue, so another agent (or this one after a restart
 * under a new id) reclaims them once this agent's heartbeat has expired. A running job's log
 * reader may outlive the call (detached) until its container writes a line or ends.
 * NULL is a no-op.
 */
void agent_stop(struct agent *a);

/* new: {"id":..., "state":"running|stopping", "slots":N, "busy":N, "jobs":[names]} */
json_t *agent_status(struct agent *a);

#endif
