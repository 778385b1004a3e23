/*
 * janitor.h - the server's stand-in for agents that are gone: while no agent is live, it takes
 * over the queue entries of dead agents, stops the containers of jobs being stopped (the same
 * SIGTERM, grace, SIGKILL an agent uses) and records Stopped, and fails a running job that no
 * agent took over within a bounded time, so no job stays Stopping or InProgress for ever.
 */
#ifndef TY_AGENT_JANITOR_H
#define TY_AGENT_JANITOR_H

#include "ty_err.h"

struct janitor_config {
    const char *redis_url;   /* as store_open() */
    const char *docker_host; /* engine the dead agents used; NULL = no engine (record only) */
    int stop_grace_s;        /* SIGTERM -> SIGKILL grace of a stop */
    int orphan_timeout_s;    /* a running job with no live agent fails after this; 0 = never */
    int heartbeat_ttl_s;     /* the agents' heartbeat TTL: a dead agent's entry is taken once
                                its heartbeat expired and it was idle this long */
    int period_ms;           /* how often it looks, default 2000 */
};

struct janitor;

/* Starts the janitor's thread. new: caller stops and frees with janitor_stop(); NULL with err on
   failure. cfg's strings are copied. */
struct janitor *janitor_start(const struct janitor_config *cfg, struct ty_err *err);

/* Stops the thread (an ongoing stop of a job finishes first). NULL is a no-op. */
void janitor_stop(struct janitor *j);

#endif
