/*
 * sandbox.h - the sandbox: the small container that owns a job host's network namespace, in
 * which the agent binds the relay before the training container joins it (docs/job-sandbox.md,
 * "Network"), and the names that tie an agent's spare sandbox (spare.h) to its agent and, once
 * taken, to its job.
 *
 * Owns nothing between calls. A sandbox is the runtime image running sleep: no capability, no
 * new privilege, a read-only root, 8 pids, 64 MiB.
 */
#ifndef TY_AGENT_SANDBOX_H
#define TY_AGENT_SANDBOX_H

#include "ty_err.h"

#include <jansson.h>
#include <stddef.h>

struct docker;

/* Its label: every sandbox carries trainyard.sandbox=1; a spare also trainyard.spare=1 (and no
   trainyard.job: whose it becomes is its name, sandbox_spare_job). */
#define SANDBOX_LABEL       "trainyard.sandbox"
#define SANDBOX_SPARE_LABEL "trainyard.spare"

struct sandbox_opts {
    const char *image;              /* required: the runtime image (its /bin/sleep) */
    const char *name;               /* required: the container's name */
    const char *hostname;           /* may be NULL */
    const char *network;            /* the job network, or NULL: NetworkMode none */
    const char *const *aliases;     /* NULL-terminated names on network, may be NULL */
    const char *network_mode;       /* without network: a NetworkMode as it is ("host", Podman's
                                       "ns:<path>": a Slurm node's own network), NULL = none */
    const char *const *extra_hosts; /* NULL-terminated "name:address" for /etc/hosts, may be
                                       NULL (a job that joins it shares it) */
    json_t *labels;                 /* borrowed, may be NULL */
    const char *seccomp;            /* the containers' profile (seccomp.h), NULL = engine's */
};

/*
 * Creates and starts a sandbox as o says, after removing a stale container of the same name.
 * OUT: id (n >= 65), *pid (its process on the engine's host, for the relay). 0, or a negative
 * code (err) with nothing left behind.
 */
int sandbox_make(struct docker *d, const struct sandbox_opts *o, char *id, size_t n, int *pid,
                 struct ty_err *err);

/* Kills (its sleep ignores SIGTERM as PID 1) and removes container id (or name). 0, or a
   negative code (err). */
int sandbox_remove(struct docker *d, const char *id, struct ty_err *err);

/* The name of the spare of agent agent in deployment deployment: "trainyard-<8 hex>-spare-"
   and the agent's id with every character a container name cannot hold made '-'. */
void sandbox_spare_name(const char *deployment, const char *agent, char *out, size_t n);

/* The name a spare takes when job's one host takes it: reap_job_name, "-algo-1-net" (the name
   run.c gives a one-host job's own sandbox). */
void sandbox_job_name(const char *deployment, const char *job, char *out, size_t n);

/* The job whose sandbox name (sandbox_job_name; a leading '/' as engines list names is
   skipped) is: 1 with job filled (n >= 64), 0 when name is no such name. */
int sandbox_spare_job(const char *deployment, const char *name, char *job, size_t n);

#endif
