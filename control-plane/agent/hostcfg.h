/*
 * hostcfg.h - the create request of one host's training container (docs/job-sandbox.md): its
 * image and command (wrapped in the profiler when asked), the SageMaker environment, the
 * instance's limits, exactly its GPUs, /opt/ml and the checkpoint folder, its network, and the
 * confinement every training container gets (all capabilities dropped but instances_caps, no
 * new privileges, the seccomp profile, a read-only root with sized tmpfs, a pids limit).
 *
 * Owns: the struct docker_create of one host and the memory it points into. Shared by the
 * local agent (run/run_container.c) and the per-node launchers, so that a container is
 * confined the same wherever it runs. Pure: no engine call.
 */
#ifndef TY_CP_AGENT_HOSTCFG_H
#define TY_CP_AGENT_HOSTCFG_H

#include "docker.h"
#include "instances.h"
#include "spec.h"
#include "stage.h"

#include <jansson.h>
#include <limits.h>

/* What one host's container is made of. Borrowed, and read only during hostcfg_build. */
struct hostcfg_in {
    const struct spec *sp;
    const struct instances_limits *lim; /* instances_limits of the job's type on this host */
    const struct stage_env_opts *eo;    /* the environment's inputs (stage_env) */
    const char *name;                   /* the container's name */
    const char *hostname;               /* algo-<host + 1>, also its alias on network */
    const char *opt_ml;                 /* the host folder bound at /opt/ml */
    const char *ckpt_dir;               /* host side of CheckpointConfig.LocalPath, bound there
                                           when the job checkpoints outside /opt/ml */
    const char *const *gpu_cdi;         /* exactly these GPUs (CDI names), ngpu of them */
    const char *const *gpu_ids;         /* the same as Docker DeviceIDs */
    int ngpu;                           /* 0: lim->gpus by count (-1 all, 0 none) */
    int libpod;              /* with GPUs: Podman's libpod API (CDI) instead of DeviceRequests */
    const char *typrof;      /* the profiler's path in the image: the command runs under
                                "<typrof> run --"; NULL = unprofiled */
    const char *seccomp;     /* the seccomp profile (docker_create's form), NULL = the engine's */
    const char *network;     /* the job's network (several hosts), NULL = none */
    const char *net_sandbox; /* the sandbox container whose network namespace it joins (the
                                relay is bound there), NULL = none */
    int engine_docker;       /* Docker (not Podman): no hostname with a sandbox's namespace */
    json_t *labels;          /* its labels */
};

/* The request, ready for docker_create(&cfg->c). Points into itself: never copied or moved. */
struct hostcfg {
    struct docker_create c;
    char **env;     /* owned (stage_env) */
    char **prof_ep; /* owned: the wrapped entrypoint, NULL when unprofiled */
    char bind[PATH_MAX + 16], bind2[2 * PATH_MAX + 16], tmp[64], vartmp[64];
    const char *binds[3];
    const char *tmpfs[4];
    const char *aliases[2];
};

/* Fills cfg from in. 0, or -1 when out of memory (cfg then holds nothing to free). */
int hostcfg_build(const struct hostcfg_in *in, struct hostcfg *cfg);
void hostcfg_free(struct hostcfg *cfg);

#endif
