/*
 * reap.h - ends what a job left on the engine: its containers (training containers first, then
 * the sandboxes whose network namespace they joined), its network and the network's host
 * firewall rules. Used by an agent for a dead agent's leftovers and by the server's janitor to
 * stop a job whose agent is gone.
 */
#ifndef TY_AGENT_REAP_H
#define TY_AGENT_REAP_H

#include <jansson.h>
#include <stddef.h>

#include "docker.h"

/*
 * Stops and removes every container labelled trainyard.job=<job> of this deployment (labelled
 * trainyard.deployment=<deployment>, or without that label, as containers made before it were;
 * deployment NULL or "": every one), then the job network (reap_job_name) and its fence. grace_s >
 * 0: the training containers get SIGTERM and up to grace_s seconds to exit before SIGKILL (a stop,
 * as an agent stops a job); 0: removed at once. Best effort: engine errors are logged, not
 * returned. Returns the number of training containers found (sandboxes not counted), or -1 when the
 * engine could not list them. Blocking (up to grace_s + a few engine calls); thread-safe for
 * distinct d.
 */
int reap_job(struct docker *d, const char *deployment, const char *job, int grace_s);

/* Engine names carry the deployment (the first REAP_DEPLOYMENT_CHARS of its id), since job names
   are unique only within one deployment and a shared engine may run another's job of the same
   name. */
#define REAP_DEPLOYMENT_CHARS 8

/*
 * The engine name of job's objects: "trainyard-<deployment's first REAP_DEPLOYMENT_CHARS>-<job>",
 * or "trainyard-<job>" when deployment is NULL or "". It names the job network; a host's
 * container is that name, "-" and the host ("algo-1"). Its bridge is fence_ifname of it.
 * OUT: out (truncated to n - 1 bytes).
 */
void reap_job_name(const char *deployment, const char *job, char *out, size_t n);

/* 1 when container c (an element of docker_list's answer) belongs to deployment: labelled
   trainyard.deployment=<deployment>, or without that label (made before it), or deployment NULL
   or "". */
int reap_is_ours(json_t *c, const char *deployment);

#endif
