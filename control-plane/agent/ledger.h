/*
 * ledger.h - the resource ledger's arithmetic: what a job asks of an agent (GPUs, vCPUs and
 * memory of its instance type times its instance count), what it is charged on a given agent,
 * whether that fits what the agent has free, whether it can never fit, and the words a job that
 * waits is given. No I/O: the agent keeps the books (agent.c), the claim loop asks here.
 *
 * The rules (docs/resources.md):
 *  - GPUs are never shared: a job is charged its GPUs whole, and never fits an agent with fewer.
 *    An agent with no GPUs at all runs GPU instance types on the CPU (charged no GPU; the job's
 *    log and its Starting message say so) unless its admin said --cpu-fallback no.
 *  - vCPUs and memory are charged as the instance type says, capped at the agent's capacity: a
 *    type larger than the agent takes all of it (its containers' limits are clamped to the host
 *    the same way, instances_limits), so it waits for an idle agent and never fails for size.
 *  - An agent's capacity is its host's (or what its admin declared) times its overcommit factor
 *    (default 1: nothing is promised twice).
 * Thread-safe: pure functions.
 */
#ifndef TY_CP_AGENT_LEDGER_H
#define TY_CP_AGENT_LEDGER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* An amount of the three resources the ledger counts. */
struct ledger_res {
    int gpus;
    int cpus;             /* vCPUs */
    int64_t memory_bytes; /* bytes */
};

/* What a job of count hosts of instance type asks (a type not in the table: 1 vCPU per host). */
void ledger_need(const char *type, int count, struct ledger_res *need);

/* What need is charged on an agent of capacity cap (the rules above); cpu_fallback: an agent
   without GPUs runs GPU types on the CPU (--cpu-fallback yes), else it charges their GPUs. */
void ledger_charge(const struct ledger_res *need, const struct ledger_res *cap, int cpu_fallback,
                   struct ledger_res *charge);

/* 1 when charge fits free, component by component. */
int ledger_fits(const struct ledger_res *charge, const struct ledger_res *free);

/* 1 when a job of need can never run on an agent of capacity cap (GPUs it has too few of; an
   agent with none and cpu_fallback runs any). */
int ledger_never(const struct ledger_res *need, const struct ledger_res *cap, int cpu_fallback);

/* {"gpus":..,"cpus":..,"memory_bytes":..} (new) and back (0, or -1 when o is not such). */
json_t *ledger_res_json(const struct ledger_res *r);
int ledger_res_from_json(json_t *o, struct ledger_res *r);

/*
 * Why a job of need waits, into out (n bytes), from agents (borrowed: queue_agents' array, each
 * with "capacity", "free", "slots", "busy" and "cpu_fallback" (absent: true) as agent.c's
 * heartbeat writes them): the first
 * resource no live agent has enough of free, and the most one has, e.g. "waiting for 4 GPUs:
 * the largest agent has 2 free". Returns 1 when some agent could take the job now (the message
 * then says so), else 0.
 */
int ledger_wait_message(const struct ledger_res *need, json_t *agents, char *out, size_t n);

/*
 * 1 when no agent of agents (as ledger_wait_message) can ever run a job of need; an agent that
 * does not publish a "capacity" counts as one that can. Also 0 for an empty array (an agent may
 * come: the job waits).
 */
int ledger_never_anywhere(const struct ledger_res *need, json_t *agents);

#endif
