/*
 * reap.h - ends what a job left on the engine: its containers (training containers first, then
 * the sandboxes whose network namespace they joined), its network and the network's host
 * firewall rules. Used by an agent for a dead agent's leftovers and by the server's janitor to
 * stop a job whose agent is gone.
 */
#ifndef TY_AGENT_REAP_H
#define TY_AGENT_REAP_H

#include "docker.h"

/*
 * Stops and removes every container labelled trainyard.job=<job> of this deployment (labelled
 * trainyard.deployment=<deployment>, or without that label, as containers made before it were;
 * deployment NULL or "": every one), then the job network
 * "trainyard-<job>" and its fence. grace_s > 0: the training containers get SIGTERM and up to
 * grace_s seconds to exit before SIGKILL (a stop, as an agent stops a job); 0: removed at once.
 * Best effort: engine errors are logged, not returned. Returns the number of training
 * containers found (sandboxes not counted), or -1 when the engine could not list them.
 * Blocking (up to grace_s + a few engine calls); thread-safe for distinct d.
 */
int reap_job(struct docker *d, const char *deployment, const char *job, int grace_s);

#endif
