/*
 * spare.h - the agent's spare sandbox: one sandbox (sandbox.h) made ahead, with no network,
 * handed to the next one-host job so that its start does not wait for a second container to be
 * created and started (about 0.3 s on Podman).
 *
 * Owns: the spare container while it is spare (name sandbox_spare_name, labels
 * trainyard.deployment, trainyard.agent, trainyard.sandbox and trainyard.spare, no
 * trainyard.job), and the thread that makes it. A taken spare is renamed to the job's sandbox
 * name (sandbox_job_name) and is the job's from then on: run.c removes it with the job, reap.c
 * finds it by that name, and leftover.c removes a dead agent's spare. The agent's spare is
 * removed by spare_stop.
 * Thread-safety: every function may be called from any thread.
 */
#ifndef TY_AGENT_SPARE_H
#define TY_AGENT_SPARE_H

#include "ty_err.h"

#include <stddef.h>

struct docker;
struct spare;

struct spare_config {
    const char *docker_host; /* copied */
    const char *image;       /* the runtime image; copied */
    const char *seccomp;     /* the containers' profile, NULL = engine's; copied */
    const char *deployment;  /* store_deployment_id; copied */
    const char *agent;       /* the agent's id; copied */
};

/* Starts the thread that keeps one spare ready (the first at once; a new one a second after each
   take, or at spare_kick). new: stop with spare_stop. NULL (err) when out of memory. */
struct spare *spare_start(const struct spare_config *cfg, struct ty_err *err);

/*
 * Takes the spare for a job's one host, renaming it name (a container of that name is removed
 * first when the rename finds one). d: the caller's engine connection. OUT: id (n >= 65), *pid
 * (its process, for the relay). 0: the container is the caller's; -1: no spare ready (or it
 * died): make one (sandbox_make).
 */
int spare_take(struct spare *sp, struct docker *d, const char *name, char *id, size_t n, int *pid);

/* Makes the next spare now rather than a second after the last take (the taker's containers
   are up: the engine is free). */
void spare_kick(struct spare *sp);

/* Stops the thread, removes the spare and frees sp. NULL is a no-op. */
void spare_stop(struct spare *sp);

#endif
