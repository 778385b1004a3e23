/*
 * ledger.c - the resource ledger's arithmetic (ledger.h): needs, charges, fits, and the words
 * of a job that waits.
 */
#include "ledger.h"

#include <stdio.h>
#include <string.h>

#include "instances.h"

#define LEDGER_GIB (1024.0 * 1024.0 * 1024.0)

void ledger_need(const char *type, int count, struct ledger_res *need)
{
    const struct instances_type *t = type ? instances_lookup(type) : NULL;
    int hosts = count > 0 ? count : 1;

    memset(need, 0, sizeof(*need));
    if (!t) {
        need->cpus = hosts;
        return;
    }
    need->gpus = t->gpus * hosts;
    need->cpus = t->vcpus * hosts;
    need->memory_bytes = t->memory_bytes * hosts;
}

void ledger_charge(const struct ledger_res *need, const struct ledger_res *cap, int cpu_fallback,
                   struct ledger_res *charge)
{
    charge->gpus = cap->gpus > 0 || !cpu_fallback ? need->gpus : 0;
    charge->cpus = need->cpus < cap->cpus ? need->cpus : cap->cpus;
    charge->memory_bytes =
        need->memory_bytes < cap->memory_bytes ? need->memory_bytes : cap->memory_bytes;
}

int ledger_fits(const struct ledger_res *charge, const struct ledger_res *free)
{
    return charge->gpus <= free->gpus && charge->cpus <= free->cpus &&
           charge->memory_bytes <= free->memory_bytes;
}

int ledger_never(const struct ledger_res *need, const struct ledger_res *cap, int cpu_fallback)
{
    return need->gpus > cap->gpus && (cap->gpus > 0 || !cpu_fallback);
}

json_t *ledger_res_json(const struct ledger_res *r)
{
    return json_pack("{s:i, s:i, s:I}", "gpus", r->gpus, "cpus", r->cpus, "memory_bytes",
                     (json_int_t)r->memory_bytes);
}

int ledger_res_from_json(json_t *o, struct ledger_res *r)
{
    json_t *g = json_object_get(o, "gpus"), *c = json_object_get(o, "cpus"),
           *m = json_object_get(o, "memory_bytes");

    if (!json_is_integer(g) || !json_is_integer(c) || !json_is_integer(m))
        return -1;
    r->gpus = (int)json_integer_value(g);
    r->cpus = (int)json_integer_value(c);
    r->memory_bytes = (int64_t)json_integer_value(m);
    return 0;
}

/* An agent of agents as the ledger sees it; 0, or -1 when it publishes no ledger. */
static int ledger_agent(json_t *a, struct ledger_res *cap, struct ledger_res *free, int *slot_free,
                        int *fallback)
{
    json_t *fb = json_object_get(a, "cpu_fallback");

    *fallback = !json_is_false(fb);
    json_int_t slots = json_integer_value(json_object_get(a, "slots"));
    json_int_t busy = json_integer_value(json_object_get(a, "busy"));

    if (ledger_res_from_json(json_object_get(a, "capacity"), cap) != 0 ||
        ledger_res_from_json(json_object_get(a, "free"), free) != 0)
        return -1;
    *slot_free = slots <= 0 || busy < slots;
    return 0;
}

int ledger_never_anywhere(const struct ledger_res *need, json_t *agents)
{
    size_t i;
    json_t *a;

    if (json_array_size(agents) == 0)
        return 0;
    json_array_foreach(agents, i, a)
    {
        struct ledger_res cap, free;
        int slot, fb;
        if (ledger_agent(a, &cap, &free, &slot, &fb) != 0 || !ledger_never(need, &cap, fb))
            return 0;
    }
    return 1;
}

/* "4 GPUs", "1 vCPU", "16 GiB of memory" */
static void ledger_amount(char *out, size_t n, int what, int64_t v)
{
    if (what == 0)
        snprintf(out, n, "%lld GPU%s", (long long)v, v == 1 ? "" : "s");
    else if (what == 1)
        snprintf(out, n, "%lld vCPU%s", (long long)v, v == 1 ? "" : "s");
    else
        snprintf(out, n, "%.4g GiB of memory", (double)v / LEDGER_GIB);
}

static int64_t ledger_get(const struct ledger_res *r, int what)
{
    return what == 0 ? r->gpus : what == 1 ? r->cpus : r->memory_bytes;
}

int ledger_wait_message(const struct ledger_res *need, json_t *agents, char *out, size_t n)
{
    int64_t most[3] = {-1, -1, -1}, want[3] = {0, 0, 0};
    int any = 0, any_slot = 0;
    size_t i;
    json_t *a;

    json_array_foreach(agents, i, a)
    {
        struct ledger_res cap, free, charge;
        int slot, fb;
        if (ledger_agent(a, &cap, &free, &slot, &fb) != 0 || ledger_never(need, &cap, fb))
            continue;
        any = 1;
        any_slot |= slot;
        ledger_charge(need, &cap, fb, &charge);
        if (slot && ledger_fits(&charge, &free)) {
            snprintf(out, n, "an agent has room for this job: it starts at its next look");
            return 1;
        }
        for (int w = 0; w < 3; w++) {
            /* the largest free amount among agents that lack it, and what they are short of */
            if (ledger_get(&charge, w) > ledger_get(&free, w) && ledger_get(&free, w) > most[w]) {
                most[w] = ledger_get(&free, w);
                want[w] = ledger_get(&charge, w);
            }
        }
    }
    if (!any) {
        snprintf(out, n, "waiting for an agent that can run this job: none is running");
        return 0;
    }
    if (!any_slot) {
        snprintf(out, n,
                 "waiting for a job slot: every agent runs as many jobs as its --slots "
                 "allows");
        return 0;
    }
    for (int w = 0; w < 3; w++) {
        char need_s[48], have_s[48];
        if (most[w] < 0)
            continue;
        ledger_amount(need_s, sizeof(need_s), w, want[w]);
        if (w == 2)
            snprintf(have_s, sizeof(have_s), "%.4g GiB", (double)most[w] / LEDGER_GIB);
        else
            snprintf(have_s, sizeof(have_s), "%lld", (long long)most[w]);
        snprintf(out, n, "waiting for %s: the largest agent has %s free", need_s, have_s);
        return 0;
    }
    snprintf(out, n, "waiting for an agent with a free job slot and room for this job at once");
    return 0;
}
