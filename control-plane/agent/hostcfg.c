/*
 * hostcfg.c - one host's training container as a create request (hostcfg.h). Owns the request's
 * memory; no engine call.
 */
#include "hostcfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const hostcfg_train[] = {"train", NULL};
static const char *const hostcfg_no_args[] = {NULL};

/* The command: the job's entrypoint and arguments (SageMaker runs "train" when it gives none),
   wrapped in the profiler when asked. 0 or -1. */
static int hostcfg_command(const struct hostcfg_in *in, struct hostcfg *cfg)
{
    const struct spec *sp = in->sp;
    size_t ne = 0;

    if (sp->entrypoint) {
        cfg->c.entrypoint = (const char *const *)sp->entrypoint;
        cfg->c.cmd = sp->arguments ? (const char *const *)sp->arguments : hostcfg_no_args;
    } else {
        cfg->c.cmd = sp->arguments ? (const char *const *)sp->arguments : hostcfg_train;
    }
    if (!in->typrof)
        return 0;
    /* typrof run -- <entrypoint or the image's command>: system metrics, traces */
    while (sp->entrypoint && sp->entrypoint[ne])
        ne++;
    if (!(cfg->prof_ep = calloc(ne + 4, sizeof(*cfg->prof_ep))))
        return -1;
    cfg->prof_ep[0] = (char *)in->typrof;
    cfg->prof_ep[1] = (char *)"run";
    cfg->prof_ep[2] = (char *)"--";
    for (size_t i = 0; i < ne; i++)
        cfg->prof_ep[3 + i] = sp->entrypoint[i];
    cfg->c.entrypoint = (const char *const *)cfg->prof_ep;
    return 0;
}

/* Confinement, docs/job-sandbox.md: the root file system is read-only, /opt/ml (binds) and
   these tmpfs are the writable places. */
static void hostcfg_confine(const struct hostcfg_in *in, struct hostcfg *cfg)
{
    const struct instances_limits *lim = in->lim;

    snprintf(cfg->tmp, sizeof(cfg->tmp), "/tmp:rw,nosuid,nodev,size=%lld,mode=1777",
             (long long)lim->tmp_bytes);
    snprintf(cfg->vartmp, sizeof(cfg->vartmp), "/var/tmp:rw,nosuid,nodev,size=%lld,mode=1777",
             (long long)lim->tmp_bytes / 4);
    cfg->tmpfs[0] = cfg->tmp;
    cfg->tmpfs[1] = cfg->vartmp;
    cfg->tmpfs[2] = "/run:rw,nosuid,nodev,size=67108864,mode=0755";
    cfg->tmpfs[3] = NULL;
    cfg->c.cap_drop_all = 1;
    cfg->c.cap_add = instances_caps;
    cfg->c.no_new_privileges = 1;
    cfg->c.seccomp = in->seccomp; /* no user namespace */
    cfg->c.pids_limit = lim->pids_limit;
    cfg->c.readonly_rootfs = 1;
    cfg->c.tmpfs = cfg->tmpfs;
    cfg->c.shm_bytes = lim->shm_bytes;
}

int hostcfg_build(const struct hostcfg_in *in, struct hostcfg *cfg)
{
    const struct spec *sp = in->sp;

    memset(cfg, 0, sizeof(*cfg));
    if (!(cfg->env = stage_env(sp, in->eo)) || hostcfg_command(in, cfg) < 0) {
        hostcfg_free(cfg);
        return -1;
    }
    snprintf(cfg->bind, sizeof(cfg->bind), "%s:/opt/ml", in->opt_ml);
    cfg->binds[0] = cfg->bind;
    if (sp->checkpoint_uri[0] && strncmp(sp->checkpoint_local, "/opt/ml/", 8) != 0) {
        snprintf(cfg->bind2, sizeof(cfg->bind2), "%s:%s", in->ckpt_dir, sp->checkpoint_local);
        cfg->binds[1] = cfg->bind2;
    }
    cfg->c.image = sp->image;
    cfg->c.name = in->name;
    cfg->c.hostname = in->hostname;
    cfg->c.env = (const char *const *)cfg->env;
    cfg->c.binds = cfg->binds;
    cfg->c.labels = in->labels;
    cfg->c.memory_bytes = in->lim->memory_bytes;
    cfg->c.nano_cpus = in->lim->nano_cpus;
    cfg->c.network_none = sp->network_isolation;
    if (!cfg->c.network_none && in->network) { /* the hosts find each other by name */
        cfg->aliases[0] = in->hostname;
        cfg->c.network = in->network;
        cfg->c.aliases = cfg->aliases;
    }
    if (in->ngpu > 0) { /* exactly these GPUs: CDI on Podman, DeviceIDs on Docker */
        cfg->c.devices = in->gpu_cdi;
        cfg->c.device_ids = in->gpu_ids;
        cfg->c.libpod = in->libpod;
    } else {
        cfg->c.gpus = in->lim->gpus;
    }
    hostcfg_confine(in, cfg);
    if (in->net_sandbox) {
        cfg->c.net_container = in->net_sandbox; /* with the relay already in it */
        if (in->engine_docker)
            cfg->c.hostname = NULL; /* Docker refuses one here: it takes the sandbox's */
    }
    return 0;
}

void hostcfg_free(struct hostcfg *cfg)
{
    free(cfg->prof_ep);
    stage_env_free(cfg->env);
    cfg->prof_ep = NULL;
    cfg->env = NULL;
}
