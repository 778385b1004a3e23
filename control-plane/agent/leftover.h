/*
 * leftover.h - what agents that died hard left on the engine for jobs that have ended: a warm
 * pool's sandbox kept past its period, a container of a job finished by someone else. Found by
 * any live agent of the same deployment and removed (reap.h).
 */
#ifndef TY_AGENT_LEFTOVER_H
#define TY_AGENT_LEFTOVER_H

#include <jansson.h>

struct store;
struct docker;

/* The job document of a job (borrowed by the caller until the next call), NULL when this
   deployment does not know the job. */
typedef json_t *(*leftover_doc_fn)(const char *job, void *ctx);

/*
 * 1 when job's containers are nobody's: the job ended (Completed, Failed, Stopped) and its warm
 * pool, if any, is over (Terminated; Available past KeepAlivePeriodInSeconds + grace_s at now;
 * Reused by a job for which this holds in turn). 0 otherwise, and for a job this deployment
 * does not know (another deployment's, on a shared engine). A live owner ends its pool within a
 * second of the period: grace_s covers an owner whose heartbeat only lapsed.
 */
int leftover_job_ended(const char *job, leftover_doc_fn doc_of, void *ctx, double now, int grace_s);

/*
 * 1 when container c (an engine summary: Labels) is a candidate: labelled trainyard.job and
 * trainyard.agent, by an agent that is neither self nor in live (array of {"id"}).
 */
int leftover_candidate(json_t *c, json_t *live, const char *self);

/*
 * What container c (an engine summary: Id, Names, Labels) is when it is a spare sandbox
 * (spare.h) of an agent neither self nor in live: 1, a spare never taken (remove it); 2, a spare
 * taken by the job now in job (n >= 64: its name, sandbox_job_name, says which); 0, anything
 * else.
 */
int leftover_spare(json_t *c, json_t *live, const char *self, const char *deployment, char *job,
                   size_t n);

/*
 * Lists the engine's containers labelled trainyard.deployment=<deployment> (store_deployment_id)
 * and removes the leftovers (reap_job) of every ended job (leftover_job_ended with grace_s) whose
 * containers' agent is gone, and the spare sandboxes of gone agents (leftover_spare). Another
 * deployment's containers, even of a job with the same name, are never looked at. Returns the
 * number of jobs reaped, or -1 when Redis or the engine did not answer. Blocking (a few engine and
 * Redis calls per job).
 */
int leftover_sweep(struct store *s, struct docker *d, const char *deployment, const char *self,
                   int grace_s);

#endif
