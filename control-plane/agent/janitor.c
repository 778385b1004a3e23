/*
 * janitor.c - the server's stand-in for dead agents (janitor.h).
 *
 * Owns its thread, one store connection and one engine connection. Acts only while no agent is
 * live: a live agent reclaims a dead agent's entries itself (agent.c), and its run (run.c) ends a
 * reclaimed Stopping job. Entries the janitor claims are held under the consumer JANITOR_ID,
 * which never heartbeats, so an agent that comes back reclaims what the janitor left pending.
 * Orphan times live in memory: a server restart starts their clock again (still bounded).
 */
#define _POSIX_C_SOURCE 200809L
#include "janitor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "docker.h"
#include "queue.h"
#include "reap.h"
#include "session.h"
#include "store.h"
#include "ty_log.h"
#include "ty_time.h"

#define JANITOR_ID       "trainyard-server-janitor"
#define JANITOR_ORPHANS  64
#define JANITOR_STOP_MSG "Training job stopped"
#define JANITOR_FAIL_MSG "Training job failed"

struct janitor_orphan {
    char job[128];
    double since; /* wall clock seconds when first seen without a live agent */
};

struct janitor {
    struct janitor_config cfg;
    char *redis_url, *docker_host;
    atomic_int stop;
    pthread_t thr;
    struct store *s;
    struct docker *d;
    struct janitor_orphan orphans[JANITOR_ORPHANS];
    char deployment[STORE_DEPLOYMENT_LEN + 1]; /* whose containers it may reap (reap.h) */
    int redis_lost;                            /* the last pass could not reach Redis */
    double quiet_until; /* no action before: agents' heartbeats lost with Redis come back */
};

/* Seconds job has been orphaned (first call: 0). */
static double janitor_orphan_age(struct janitor *j, const char *job, double now)
{
    struct janitor_orphan *free_slot = NULL, *oldest = &j->orphans[0];
    for (int i = 0; i < JANITOR_ORPHANS; i++) {
        struct janitor_orphan *o = &j->orphans[i];
        if (o->job[0] && strcmp(o->job, job) == 0)
            return now - o->since;
        if (!o->job[0] && !free_slot)
            free_slot = o;
        if (o->since < oldest->since)
            oldest = o;
    }
    if (!free_slot)
        free_slot = oldest;
    snprintf(free_slot->job, sizeof(free_slot->job), "%s", job);
    free_slot->since = now;
    return 0;
}

static void janitor_orphan_forget(struct janitor *j, const char *job)
{
    for (int i = 0; i < JANITOR_ORPHANS; i++)
        if (strcmp(j->orphans[i].job, job) == 0)
            j->orphans[i].job[0] = '\0';
}

/* Records the end of job (status Stopped or Failed) and acknowledges its entry. */
static void janitor_finish(struct janitor *j, const struct queue_item *it, const char *expect,
                           const char *status, const char *msg, const char *reason)
{
    struct store_transition t;
    struct ty_err err;
    json_t *set = json_object(), *doc;

    memset(&t, 0, sizeof(t));
    if (reason)
        json_object_set_new(set, "FailureReason", json_string(reason));
    t.expect = expect;
    t.status = status;
    t.secondary = status;
    t.message = msg;
    t.set = set;
    t.now = ty_wall_s();
    if (session_job_revoke(j->s, it->job, &err) != 0)
        ty_log(TY_LOG_WARN, "janitor.revoke_failed", "job=%s error='%s'", it->job, err.msg);
    doc = store_job_transition(j->s, it->job, &t, &err);
    if (!doc && err.code != TY_ECONFLICT && err.code != TY_ENOTFOUND) {
        ty_log(TY_LOG_WARN, "janitor.transition_failed", "job=%s error='%s'", it->job, err.msg);
        json_decref(set);
        return; /* the entry stays pending: tried again */
    }
    ty_log(TY_LOG_INFO, "janitor.job_ended", "job=%s status=%s%s", it->job,
           doc ? status : "unchanged", doc ? "" : " note='already ended'");
    json_decref(doc);
    json_decref(set);
    if (queue_ack(j->s, it->entry_id, &err) != 0)
        ty_log(TY_LOG_WARN, "janitor.ack_failed", "job=%s error='%s'", it->job, err.msg);
    janitor_orphan_forget(j, it->job);
}

/* One orphaned entry, claimed by the janitor. */
static void janitor_handle(struct janitor *j, const struct queue_item *it)
{
    struct ty_err err;
    json_t *doc = store_job_get(j->s, it->job, &err);
    const char *status = doc ? json_string_value(json_object_get(doc, "TrainingJobStatus")) : NULL;
    char reason[512];

    if (!status || strcmp(status, "Completed") == 0 || strcmp(status, "Failed") == 0 ||
        strcmp(status, "Stopped") == 0) {
        /* gone or ended: nothing to run any more */
        if (queue_ack(j->s, it->entry_id, &err) == 0)
            janitor_orphan_forget(j, it->job);
    } else if (strcmp(status, "Stopping") == 0) {
        ty_log(TY_LOG_INFO, "janitor.stopping", "job=%s grace_s=%d engine=%s", it->job,
               j->cfg.stop_grace_s, j->d ? "yes" : "no");
        if (j->d)
            reap_job(j->d, j->deployment, it->job, j->cfg.stop_grace_s);
        janitor_finish(j, it, "Stopping", "Stopped", JANITOR_STOP_MSG, NULL);
    } else if (j->cfg.orphan_timeout_s > 0) {
        double age = janitor_orphan_age(j, it->job, ty_wall_s());
        if (age >= j->cfg.orphan_timeout_s) {
            snprintf(reason, sizeof(reason),
                     "InternalServerError: the agent running this job stopped answering and no "
                     "agent took the job over within %d seconds",
                     j->cfg.orphan_timeout_s);
            if (j->d)
                reap_job(j->d, j->deployment, it->job, j->cfg.stop_grace_s);
            janitor_finish(j, it, "InProgress", "Failed", JANITOR_FAIL_MSG, reason);
        }
    }
    json_decref(doc);
}

static void janitor_pass(struct janitor *j)
{
    struct ty_err err;
    struct queue_item it;
    json_t *live;
    /* the owner's heartbeat key is gone (queue_reclaim checks it): one TTL of idleness more
       keeps clear of an agent that claimed a moment before its first heartbeat landed */
    long min_idle_ms = (long)j->cfg.heartbeat_ttl_s * 1000;
    char after[sizeof(it.entry_id)] = "";
    int n = 0;

    if (!j->s && !(j->s = store_open(j->redis_url, &err))) {
        j->redis_lost = 1;
        return;
    }
    if (!j->deployment[0] &&
        store_deployment_id(j->s, j->deployment, sizeof(j->deployment), &err) != 0)
        goto broken;
    if (!(live = queue_agents(j->s, &err)))
        goto broken;
    if (j->redis_lost) {
        /* Redis is back, maybe without the agents' heartbeat keys (expired while it was away,
           or lost with it): a live agent writes its own again within a third of its TTL, so
           nothing is taken from it before two TTLs have passed */
        j->redis_lost = 0;
        j->quiet_until = ty_wall_s() + 2.0 * j->cfg.heartbeat_ttl_s;
        ty_log(TY_LOG_INFO, "janitor.redis_back", "quiet_s=%d", 2 * j->cfg.heartbeat_ttl_s);
    }
    if (ty_wall_s() < j->quiet_until) {
        json_decref(live);
        return;
    }
    n = (int)json_array_size(live);
    json_decref(live);
    if (n > 0)
        return; /* live agents reclaim dead agents' entries themselves */
    if (j->docker_host && !j->d)
        j->d = docker_open(j->docker_host, &err);
    /* the janitor's own entries first (taken earlier, pending under its id), then dead agents' */
    for (int k = 0; k < 64 && !atomic_load(&j->stop); k++) {
        int rc = queue_own_pending(j->s, JANITOR_ID, after, &it, &err);
        if (rc < 0)
            goto broken;
        if (rc == 0)
            break;
        snprintf(after, sizeof(after), "%s", it.entry_id);
        janitor_handle(j, &it);
    }
    for (int k = 0; k < 64 && !atomic_load(&j->stop); k++) {
        int rc = queue_reclaim(j->s, JANITOR_ID, min_idle_ms, &it, &err);
        if (rc < 0)
            goto broken;
        if (rc == 0)
            break;
        ty_log(TY_LOG_INFO, "janitor.claimed", "job=%s entry=%s", it.job, it.entry_id);
        janitor_handle(j, &it);
    }
    return;
broken:
    store_close(j->s);
    j->s = NULL;
    j->redis_lost = 1;
}

static void *janitor_thread(void *arg)
{
    struct janitor *j = arg;
    struct timespec tick = {0, 100 * 1000000L};

    while (!atomic_load(&j->stop)) {
        janitor_pass(j);
        for (int waited = 0; waited < j->cfg.period_ms && !atomic_load(&j->stop); waited += 100)
            nanosleep(&tick, NULL);
    }
    return NULL;
}

struct janitor *janitor_start(const struct janitor_config *cfg, struct ty_err *err)
{
    struct janitor *j = calloc(1, sizeof(*j));

    if (!j)
        goto oom;
    j->cfg = *cfg;
    j->redis_url = strdup(cfg->redis_url);
    j->docker_host = cfg->docker_host ? strdup(cfg->docker_host) : NULL;
    if (!j->redis_url || (cfg->docker_host && !j->docker_host))
        goto oom;
    if (j->cfg.period_ms <= 0)
        j->cfg.period_ms = 2000;
    if (j->cfg.heartbeat_ttl_s <= 0)
        j->cfg.heartbeat_ttl_s = 10;
    atomic_init(&j->stop, 0);
    if (pthread_create(&j->thr, NULL, janitor_thread, j) != 0) {
        ty_err_set(err, TY_EINTERNAL, NULL, "cannot start the janitor thread");
        goto fail;
    }
    return j;
oom:
    ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
fail:
    if (j) {
        free(j->redis_url);
        free(j->docker_host);
        free(j);
    }
    return NULL;
}

void janitor_stop(struct janitor *j)
{
    if (!j)
        return;
    atomic_store(&j->stop, 1);
    pthread_join(j->thr, NULL);
    docker_close(j->d);
    store_close(j->s);
    free(j->redis_url);
    free(j->docker_host);
    free(j);
}
