/*
 * queue.h - the training-job queue and agent liveness in Redis.
 *
 * Owns: the stream ty:queue:training with consumer group `agents` (created on first use with
 * MKSTREAM), agent heartbeats ty:agent:<id> (JSON capacity, with a TTL), and the reclaim of
 * jobs held by agents whose heartbeat has expired (XPENDING + XCLAIM of entries whose
 * consumer has no live heartbeat key; a live agent's long-running job is never taken).
 * Entries carry the field `job` = training job name. Uses a struct store's connection.
 */
#ifndef TY_CP_QUEUE_H
#define TY_CP_QUEUE_H

/* The stream of queued training jobs; store_job_create adds to it in the same Lua call. */
#define QUEUE_KEY "ty:queue:training"

#include <jansson.h>
#include <stddef.h>

#include "store.h"
#include "ty_err.h"

struct queue_item {
    char entry_id[64]; /* stream entry id, for queue_ack */
    char job[128];     /* training job name */
};

/* Creates the consumer group if missing. 0 or -TY_EREDIS. */
int queue_init(struct store *s, struct ty_err *err);

/*
 * Takes the next new entry for agent_id, waiting up to block_ms (0 = do not wait).
 * Returns 1 with OUT: item filled, 0 when nothing arrived, or a negative error.
 */
int queue_claim(struct store *s, const char *agent_id, int block_ms, struct queue_item *item,
                struct ty_err *err);

/* Acknowledges and deletes an entry once its job reached a terminal state. */
int queue_ack(struct store *s, const char *entry_id, struct ty_err *err);

/*
 * Moves one pending entry whose consumer is not a live agent (no ty:agent:<consumer> key) and
 * that has been idle for at least min_idle_ms to agent_id. Returns 1 with OUT: item, 0 when
 * there is none, or a negative error.
 */
int queue_reclaim(struct store *s, const char *agent_id, long min_idle_ms, struct queue_item *item,
                  struct ty_err *err);

/*
 * The first entry pending for agent_id itself after entry id `after` ("" = from the start):
 * one an earlier run of an agent with the same id claimed and never acknowledged (the agent was
 * restarted; its heartbeat key outlived it, so queue_reclaim leaves the entry alone). It is
 * claimed again (its idle time reset). Returns 1 with OUT: item, 0 when there is none, or a
 * negative error. An agent calls it at start, before it runs anything.
 */
int queue_own_pending(struct store *s, const char *agent_id, const char *after,
                      struct queue_item *item, struct ty_err *err);

/* Writes ty:agent:<id> = capacity (borrowed JSON object) with a TTL of ttl_s seconds. */
int queue_heartbeat(struct store *s, const char *agent_id, json_t *capacity, int ttl_s,
                    struct ty_err *err);

/* new: array of {"id": ..., plus the capacity members} for every live agent. */
json_t *queue_agents(struct store *s, struct ty_err *err);

/* Number of entries not yet delivered plus pending ones, for /healthz. -1 on error. */
long queue_depth(struct store *s, struct ty_err *err);

#endif
