/*
 * agent_int.h - what agent.c (lifecycle, claim loop, heartbeat) and run.c (one job's run)
 * share. Not part of the agent's contract (agent.h).
 *
 * Invariants: a struct agent outlives every runner thread (agent_stop joins them); runner
 * threads read a->cfg and the host figures without locking (written before they start) and
 * take a->mu only to mark themselves done. a->stopping is the one flag that asks every thread
 * to return: runners then leave their container running and their queue entry pending.
 */
#ifndef TY_CP_AGENT_AGENT_INT_H
#define TY_CP_AGENT_AGENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "agent.h"
#include "ledger.h"
#include "queue.h"
#include "store.h"

/* What a run's containers were given, all its hosts together (zero before they exist). */
struct agent_use {
    char type[64];        /* ResourceConfig.InstanceType */
    int hosts;            /* containers */
    int cpus;             /* their CPU limits, summed */
    int64_t memory_bytes; /* their memory limits, summed (0: no limit) */
    int gpus;             /* GPUs given, summed */
    int volume_gb;        /* their volumes, summed (0 without volumes) */
};

/* The most GPUs one agent counts (a bit each in agent_run.gpu_mask). */
#define AGENT_MAX_GPUS 64

struct agent_run;

/* One GPU of the ledger: how the engines name it. */
struct agent_gpu {
    char cdi[128]; /* CDI device name, for Podman: "nvidia.com/gpu=0" */
    char id[64];   /* Docker DeviceID and NVIDIA_VISIBLE_DEVICES item: "0", "0:1", a UUID */
};

/*
 * The GPUs of run's host `host` (0-based) of hosts: NULL-terminated CDI names into cdi[] and
 * ids into ids[] (each AGENT_MAX_GPUS + 1 long, borrowed from a->gpu_list). Returns how many.
 */
int agent__gpus_of(struct agent *a, struct agent_run *run, int host, int hosts, const char **cdi,
                   const char **ids);

struct agent_run {
    struct agent *a;        /* borrowed */
    struct queue_item item; /* the claimed entry */
    int reclaimed;          /* 1 when taken over from a dead agent */
    pthread_t thr;
    int done;                 /* guarded by a->mu: the runner returned and may be joined */
    struct agent_use use;     /* guarded by a->mu: set once its containers exist */
    struct ledger_res charge; /* guarded by a->mu: what the ledger holds for it (ledger.h) */
    uint64_t gpu_mask;        /* guarded by a->mu: its GPUs, bits of a->gpu_list (host i of
                                 the job gets the i-th charge.gpus/hosts of them) */
    char fail[320];           /* set at claim: the runner fails the job with this reason */
    struct agent_run *next;   /* guarded by a->mu */
};

/* Charges run with what a job of count hosts of type asks of this agent (ledger_charge); the
   runner calls it once it read the spec (a re-attached job is charged then). With take_gpus,
   also gives it free GPUs; a re-attached job first adopts those its containers hold. */
void agent__charge_set(struct agent *a, struct agent_run *run, const char *type, int count,
                       int take_gpus);
/* A re-attached run's GPUs: the CDI names (comma-separated) its containers were given, from
   their trainyard.gpus label, become its own again (one another run holds is logged). */
void agent__gpus_adopt(struct agent *a, struct agent_run *run, const char *names);
/* Gives run the GPUs it is charged when it holds none yet (a reclaimed job started afresh). */
void agent__gpus_take(struct agent *a, struct agent_run *run);

/* Records what run's containers were given (agent_use), shown by the heartbeat and /healthz. */
void agent__use_set(struct agent *a, struct agent_run *run, const struct agent_use *use);

#include "s3client.h"

struct slurmx;

struct agent {
    struct agent_config cfg; /* its strings point into the owned copies below */
    char id[128];
    char deployment[STORE_DEPLOYMENT_LEN + 1]; /* store_deployment_id, labels its containers */
    char *owned[16];                           /* owned copies of the config strings */
    struct s3c_config s3_remote; /* cfg.s3_remote points here when set; strings in owned */
    int host_cpus;               /* online CPUs of this host */
    int64_t host_memory;         /* physical memory of this host, bytes */
    int host_gpus;               /* NVIDIA GPUs seen in /dev, or as many as --gpus declared */
    struct ledger_res cap;       /* the ledger's capacity: declared or probed, times overcommit */
    struct agent_gpu gpu_list[AGENT_MAX_GPUS]; /* the ledger's GPUs (host_gpus of them) */
    int volumes;                 /* each job host gets a volume of VolumeSizeInGB (volume.h) */
    char volumes_off[200];       /* without: why, said in each job's log */
    unsigned char stage_key[32]; /* names the jobs' staging folders (stage_job_dir) */
    char seccomp_path[4200];     /* the containers' seccomp profile (seccomp.h), "" = engine's */
    int engine_docker;           /* the engine is Docker's own (not Podman's compatible API) */
    atomic_int stopping;
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* signalled on stop and when a runner finishes */
    struct agent_run *runs;  /* guarded by mu */
    int busy;                /* guarded by mu: runners not yet done */
    atomic_ulong runs_ended; /* runners done so far: the claim loop looks again when it moves */
    struct warmpool *wp;     /* owned: the retained instances (warmpool.h) */
    struct spare *spare;     /* owned: the spare sandbox (spare.h), NULL without */
    struct gpumetrics *gpu;  /* owned: NVML for GPU instance metrics, NULL without (gpumetrics.h) */
    struct slurmx *sx;       /* owned: the Slurm executor (slurmx.h), NULL: jobs run on the
                                engine */
    pthread_t claim_thr, hb_thr, sweep_thr;
    int claim_started, hb_started, sweep_started;
};

/* What the ledger has free: its capacity less the charges of the runs not done. Call with
   a->mu held. */
void agent__free_locked(struct agent *a, struct ledger_res *free);

/*
 * Whether this agent takes the waiting entry it now (admit.c). 1: take it, charged *charge
 * (*cpu_only: a GPU type this GPU-less agent runs on the CPU), or,
 * when fail[0] is set, to fail the job with that reason (no live agent can ever run it); 0: it
 * waits, and its open Starting transition says why; -1: Redis failed (err). agents: the live
 * agents' heartbeats, loaded on first need (new, the caller decrefs; may stay NULL).
 */
int agent__admit(struct agent *a, struct store *s, const struct queue_item *it, json_t **agents,
                 struct ledger_res *charge, int *cpu_only, char *fail, size_t fail_n,
                 struct ty_err *err);

/* After a take: a job whose open transition said why it waited says it is launching again;
   cpu_only (agent__admit's): it says it runs on the CPU only, this agent having no GPU. */
void agent__admit_taken(struct store *s, const char *job, int cpu_only);

/* Runner thread body for one claimed job (arg: struct agent_run *). Marks run->done and
   signals a->cv before it returns. */
void *run_thread(void *arg);

/* Sleeps up to ms, returning early (1) when the agent is stopping. */
int agent__sleep(struct agent *a, int ms);
/* As agent__sleep, and returns early (0) once a->runs_ended is no longer ended: a runner freed
   what it held. */
int agent__sleep_end(struct agent *a, int ms, unsigned long ended);

#endif
