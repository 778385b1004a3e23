/*
 * admit.c - whether this agent takes a waiting job now (agent__admit): the job's need from its
 * ResourceConfig against the ledger's free resources (ledger.h), a job no live agent can ever
 * run failed fast with SageMaker's capacity wording, and a job that waits told why, in its
 * open Starting transition (what DescribeTrainingJob and the SDK's logs show).
 *
 * Owns: those decisions and the waiting message's writes (only when the words change). Does
 * not own the queue (queue.h) or the books (agent.c keeps the charges under a->mu).
 */
#include <stdio.h>
#include <string.h>

#include "agent_int.h"
#include "ty_log.h"
#include "ty_time.h"

/* The open transition's message as CreateTrainingJob writes it (ops/training.c). */
#define ADMIT_MSG_LAUNCHING "Launching requested ML instances"
#define ADMIT_WAIT_PREFIX   "waiting for "
#define ADMIT_MSG_CPU_ONLY                                                                         \
    ": this trainyard agent has no GPU, so the job runs on the CPU only (--cpu-fallback)"

/* What the job of doc asks for: ResourceConfig's InstanceType x InstanceCount, or the sum of
   its InstanceGroups. Writes "ml.x x N" (or "instance groups") into what. */
static void admit_need(json_t *doc, struct ledger_res *need, char *what, size_t n)
{
    json_t *rc = json_object_get(doc, "ResourceConfig"), *groups, *g;
    const char *type = json_string_value(json_object_get(rc, "InstanceType"));
    int count = (int)json_integer_value(json_object_get(rc, "InstanceCount"));
    size_t i;

    groups = json_object_get(rc, "InstanceGroups");
    if (!type && json_array_size(groups) > 0) {
        memset(need, 0, sizeof(*need));
        json_array_foreach(groups, i, g)
        {
            struct ledger_res one;
            ledger_need(json_string_value(json_object_get(g, "InstanceType")),
                        (int)json_integer_value(json_object_get(g, "InstanceCount")), &one);
            need->gpus += one.gpus;
            need->cpus += one.cpus;
            need->memory_bytes += one.memory_bytes;
        }
        snprintf(what, n, "its instance groups");
        return;
    }
    ledger_need(type, count, need);
    snprintf(what, n, "%s x %d", type ? type : "?", count > 0 ? count : 1);
}

/* The open transition's StatusMessage ("" when there is none). */
static const char *admit_open_message(json_t *doc)
{
    json_t *tr = json_object_get(doc, "SecondaryStatusTransitions");
    json_t *last = json_array_get(tr, json_array_size(tr) ? json_array_size(tr) - 1 : 0);
    const char *m = json_string_value(json_object_get(last, "StatusMessage"));

    return m ? m : "";
}

/* Says msg in the job's open Starting transition, when it says something else. */
static void admit_say(struct store *s, const char *job, json_t *doc, const char *msg)
{
    struct store_transition t = {.expect = "InProgress",
                                 .expect_secondary = "Starting",
                                 .secondary = "Starting",
                                 .message = msg,
                                 .now = ty_wall_s()};
    struct ty_err err;
    json_t *d;

    if (strcmp(admit_open_message(doc), msg) == 0)
        return;
    if ((d = store_job_transition(s, job, &t, &err)) != NULL)
        json_decref(d);
    else if (err.code != TY_ECONFLICT && err.code != TY_ENOTFOUND)
        ty_log(TY_LOG_WARN, "agent.admit.message_failed", "job=%s error='%s'", job, err.msg);
}

void agent__admit_taken(struct store *s, const char *job, int cpu_only)
{
    struct ty_err err;
    json_t *doc = store_job_get(s, job, &err);

    if (!doc)
        return;
    if (cpu_only)
        admit_say(s, job, doc, ADMIT_MSG_LAUNCHING ADMIT_MSG_CPU_ONLY);
    else if (strncmp(admit_open_message(doc), ADMIT_WAIT_PREFIX, strlen(ADMIT_WAIT_PREFIX)) == 0)
        admit_say(s, job, doc, ADMIT_MSG_LAUNCHING);
    json_decref(doc);
}

int agent__admit(struct agent *a, struct store *s, const struct queue_item *it, json_t **agents,
                 struct ledger_res *charge, int *cpu_only, char *fail, size_t fail_n,
                 struct ty_err *err)
{
    struct ledger_res need, free;
    char what[96], msg[240];
    json_t *doc = store_job_get(s, it->job, err);
    const char *status;
    int fits, fb = !a->cfg.no_cpu_fallback;

    memset(charge, 0, sizeof(*charge));
    *cpu_only = 0;
    fail[0] = '\0';
    if (!doc)
        return err->code == TY_ENOTFOUND ? 1 : -1; /* gone: the runner acknowledges it */
    status = json_string_value(json_object_get(doc, "TrainingJobStatus"));
    if (!status || strcmp(status, "InProgress") != 0) {
        json_decref(doc); /* Stopping or ended: the runner settles it at once, charged nothing */
        return 1;
    }
    if (a->sx) { /* on Slurm, the cluster's scheduler decides where and when it runs */
        json_decref(doc);
        return 1;
    }
    admit_need(doc, &need, what, sizeof(what));
    ledger_charge(&need, &a->cap, fb, charge);
    *cpu_only = need.gpus > 0 && charge->gpus == 0;
    if (!ledger_never(&need, &a->cap, fb)) {
        pthread_mutex_lock(&a->mu);
        agent__free_locked(a, &free);
        pthread_mutex_unlock(&a->mu);
        fits = ledger_fits(charge, &free);
        if (fits) {
            json_decref(doc);
            return 1;
        }
    }
    if (!*agents && !(*agents = queue_agents(s, err))) {
        json_decref(doc);
        return -1;
    }
    if (ledger_never_anywhere(&need, *agents)) {
        int most = 0;
        size_t i;
        json_t *ag;
        json_array_foreach(*agents, i, ag)
        {
            int g =
                (int)json_integer_value(json_object_get(json_object_get(ag, "capacity"), "gpus"));
            most = g > most ? g : most;
        }
        snprintf(fail, fail_n,
                 "CapacityError: Unable to provision requested ML compute capacity: %s needs %d "
                 "GPU%s, and the largest trainyard agent has %d. Please retry using a different "
                 "ML instance type.",
                 what, need.gpus, need.gpus == 1 ? "" : "s", most);
        memset(charge, 0, sizeof(*charge));
        json_decref(doc);
        return 1;
    }
    if (ledger_wait_message(&need, *agents, msg, sizeof(msg)) == 0)
        admit_say(s, it->job, doc, msg);
    json_decref(doc);
    return 0;
}
