/*
 * queue.h - the training-job queue and agent liveness in Redis.
 *
 * Owns: the stream ty:queue:training with consumer group `agents` (created on first use with
 * MKSTREAM; an entry is held by the consumer whose pending list has it, taken by choice with
 * queue_waiting and queue_take, never read in order with XREADGROUP), agent heartbeats
 * ty:agent:<id> (JSON capacity, with a TTL), and the reclaim of jobs held by agents whose heartbeat
 * has expired (XPENDING + XCLAIM of entries whose consumer has no live heartbeat key; a live
 * agent's long-running job is never taken). Entries carry the field `job` = training job name. Uses
 * a struct store's connection.
 */
#ifndef TY_CP_QUEUE_H
#define TY_CP_QUEUE_H

/* The stream of queued training jobs; store_job_create adds to it in the same Lua call. */
#define QUEUE_KEY "ty:queue:training"

#include <jansson.h>
#include <stddef.h>

#include "store.h"
#include "ty_err.h"

#define QUEUE_PRINCIPAL_MAX 512
/* What fair share counts a running job as holding (queue_take records it), and the live
   agents' totals it is a share of (queue_waiting). */
#define QUEUE_SHARE_KEY "ty:share:held"

struct queue_item {
    char entry_id[64];                   /* stream entry id, for queue_ack */
    char job[128];                       /* training job name */
    char principal[QUEUE_PRINCIPAL_MAX]; /* who created it ("" when not recorded) */
};

struct queue_res {
    long long gpus, cpus, memory_bytes;
};

/* Creates the consumer group if missing. 0 or -TY_EREDIS. */
int queue_init(struct store *s, struct ty_err *err);

/* The most entries one queue_waiting call lists. */
#define QUEUE_WAITING_MAX 1000

/*
 * The entries no agent holds (in no consumer's pending list), at most max (1..QUEUE_WAITING_MAX)
 * into items[]; OUT: n. The order is fair share's (lua/queue.lua; docs/resources.md): the
 * principal whose running jobs hold the least dominant share of total (the live agents' GPUs,
 * vCPUs and memory) first, then the principal whose last take is the oldest (round robin among
 * equals), then the oldest entry; total NULL or all 0: oldest first. last_id (last_n
 * bytes, may be NULL) gets the newest entry's id, or "0-0" for an empty stream: queue_wait_new's
 * `after`. An agent chooses among them (agent/ledger.h) and takes one with queue_take. 0 or a
 * negative error.
 */
int queue_waiting(struct store *s, size_t max, const struct queue_res *total,
                  struct queue_item *items, size_t *n, char *last_id, size_t last_n,
                  struct ty_err *err);

/*
 * Takes it->entry_id for agent_id, atomically: 1 when it exists and no agent held it (it is now
 * in agent_id's pending list, and fair share counts it->principal as holding *held, borrowed,
 * until the job ends), 0 when another agent took it first or it is gone, or a negative error.
 */
int queue_take(struct store *s, const char *agent_id, const struct queue_item *it,
               const struct queue_res *held, struct ty_err *err);

/*
 * Waits up to block_ms (> 0) for an entry newer than `after` (an id from queue_waiting).
 * 1 when one is there (at once when it already was), 0 when the wait ran out, or a negative
 * error.
 */
int queue_wait_new(struct store *s, const char *after, int block_ms, struct ty_err *err);

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

/* The sum of agents' (queue_agents' array, borrowed) "capacity" members into total; an agent
   without one adds nothing: the whole that fair share's dominant shares are shares of. */
void queue_capacity_total(json_t *agents, struct queue_res *total);

/* Number of entries not yet delivered plus pending ones, for /healthz. -1 on error. */
long queue_depth(struct store *s, struct ty_err *err);

#endif
