/*
 * leftover.c - removes what dead agents left for ended jobs (leftover.h).
 *
 * Owns nothing between calls. Only this deployment's containers are looked at (their
 * trainyard.deployment label): a shared engine may hold another deployment's, whose job names
 * can be the same as ours.
 */
#define _POSIX_C_SOURCE 200809L
#include "leftover.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "docker.h"
#include "queue.h"
#include "reap.h"
#include "sandbox.h"
#include "store.h"
#include "ty_log.h"
#include "ty_time.h"

/* How many Reused links are followed (a pool reused by a job whose pool was reused ...). */
#define LEFTOVER_CHAIN_MAX 8
/* Jobs looked at in one sweep (the rest wait for the next). */
#define LEFTOVER_JOBS_MAX 64

static int leftover_status_ended(const char *st)
{
    return st && (strcmp(st, "Completed") == 0 || strcmp(st, "Failed") == 0 ||
                  strcmp(st, "Stopped") == 0);
}

/* 1 when the pool described by doc is over at now; *next = the job that reused it, if any. */
static int leftover_pool_over(json_t *doc, double now, int grace_s, const char **next)
{
    json_t *wp = json_object_get(doc, "WarmPoolStatus");
    const char *st = json_string_value(json_object_get(wp, "Status"));
    json_t *since = json_object_get(doc, "_warm_since");
    json_t *keep =
        json_object_get(json_object_get(doc, "ResourceConfig"), "KeepAlivePeriodInSeconds");

    *next = NULL;
    if (!wp || (st && strcmp(st, "Terminated") == 0))
        return 1;
    if (st && strcmp(st, "Available") == 0)
        return json_is_number(since) && json_is_integer(keep) &&
               now > json_number_value(since) + (double)json_integer_value(keep) + grace_s;
    if (st && strcmp(st, "Reused") == 0) {
        *next = json_string_value(json_object_get(wp, "ReusedByJob"));
        return 0;
    }
    return 0; /* InUse, or a status this code does not know: somebody's */
}

int leftover_job_ended(const char *job, leftover_doc_fn doc_of, void *ctx, double now, int grace_s)
{
    for (int depth = 0; job && depth < LEFTOVER_CHAIN_MAX; depth++) {
        json_t *doc = doc_of(job, ctx);
        const char *next;
        if (!doc ||
            !leftover_status_ended(json_string_value(json_object_get(doc, "TrainingJobStatus"))))
            return 0;
        if (leftover_pool_over(doc, now, grace_s, &next))
            return 1;
        job = next; /* the sandbox went on to this job's run: its fate decides */
    }
    return 0;
}

/* 1 when agent (a container's trainyard.agent) is neither self nor in live. */
static int leftover_agent_gone(const char *agent, json_t *live, const char *self)
{
    json_t *a;
    size_t i;

    if (!agent || (self && strcmp(agent, self) == 0))
        return 0;
    json_array_foreach(live, i, a)
    {
        const char *id = json_string_value(json_object_get(a, "id"));
        if (id && strcmp(id, agent) == 0)
            return 0;
    }
    return 1;
}

int leftover_candidate(json_t *c, json_t *live, const char *self)
{
    json_t *labels = json_object_get(c, "Labels");

    if (!json_string_value(json_object_get(labels, "trainyard.job")))
        return 0;
    return leftover_agent_gone(json_string_value(json_object_get(labels, "trainyard.agent")), live,
                               self);
}

int leftover_spare(json_t *c, json_t *live, const char *self, const char *deployment, char *job,
                   size_t n)
{
    json_t *labels = json_object_get(c, "Labels");
    const char *agent = json_string_value(json_object_get(labels, "trainyard.agent"));
    const char *name = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
    char spare[256];

    if (!json_object_get(labels, SANDBOX_SPARE_LABEL) || !name ||
        json_object_get(labels, "trainyard.job") || !leftover_agent_gone(agent, live, self))
        return 0;
    if (name[0] == '/')
        name++;
    sandbox_spare_name(deployment, agent, spare, sizeof(spare));
    if (strcmp(name, spare) == 0)
        return 1;
    return sandbox_spare_job(deployment, name, job, n) ? 2 : 0;
}

struct leftover_lookup {
    struct store *s;
    json_t *doc; /* the last document read (owned) */
    int failed;  /* Redis did not answer */
};

static json_t *leftover_doc(const char *job, void *ctx)
{
    struct leftover_lookup *l = ctx;
    struct ty_err err;

    json_decref(l->doc);
    ty_err_clear(&err);
    l->doc = store_job_get(l->s, job, &err);
    if (!l->doc && err.code != TY_ENOTFOUND)
        l->failed = 1;
    return l->doc;
}

int leftover_sweep(struct store *s, struct docker *d, const char *deployment, const char *self,
                   int grace_s)
{
    struct leftover_lookup l = {.s = s};
    char seen[LEFTOVER_JOBS_MAX][128], filter[128];
    int nseen = 0, reaped = 0;
    struct ty_err err;
    json_t *list, *live, *c;
    size_t i;

    if (!deployment || !deployment[0])
        return 0;
    snprintf(filter, sizeof(filter), "trainyard.deployment=%s", deployment);
    if (!(live = queue_agents(s, &err)))
        return -1;
    if (!(list = docker_list(d, filter, &err))) {
        json_decref(live);
        return -1;
    }
    json_array_foreach(list, i, c)
    {
        const char *job =
            json_string_value(json_object_get(json_object_get(c, "Labels"), "trainyard.job"));
        char spare_job[64];
        int dup = 0,
            spare = leftover_spare(c, live, self, deployment, spare_job, sizeof(spare_job));
        if (spare == 1) { /* a dead agent's spare, never taken */
            const char *id = json_string_value(json_object_get(c, "Id"));
            ty_log(TY_LOG_INFO, "agent.leftover.spare", "container=%.12s note='its agent is gone'",
                   id ? id : "");
            if (id)
                sandbox_remove(d, id, &err);
            continue;
        }
        if (spare == 2)
            job = spare_job; /* taken by this job: its fate decides */
        else if (!leftover_candidate(c, live, self))
            continue;
        if (strlen(job) >= sizeof(seen[0]))
            continue;
        for (int k = 0; k < nseen && !dup; k++)
            dup = strcmp(seen[k], job) == 0;
        if (dup || nseen == LEFTOVER_JOBS_MAX)
            continue;
        snprintf(seen[nseen++], sizeof(seen[0]), "%s", job);
        if (!leftover_job_ended(job, leftover_doc, &l, ty_wall_s(), grace_s)) {
            if (l.failed)
                break;
            continue;
        }
        ty_log(TY_LOG_INFO, "agent.leftover.reap", "job=%s agent='%s' note='its agent is gone'",
               job,
               json_string_value(json_object_get(json_object_get(c, "Labels"), "trainyard.agent")));
        if (reap_job(d, deployment, job, 0) >= 0)
            reaped++;
    }
    json_decref(l.doc);
    json_decref(list);
    json_decref(live);
    return l.failed ? -1 : reaped;
}
