/*
 * warmpool.c - SageMaker managed warm pools on one agent (warmpool.h).
 *
 * Owns: the list of retained pools (in memory, guarded by mu), the sweeper thread with its own
 * store and engine connections, and the WarmPoolStatus member of the documents of the jobs that
 * retained or reused a pool. The documents are written through store_job_transition with
 * `expect` set to the job's possible statuses, so a write never changes a job's status.
 * Invariant: a pool is in the list or owned by exactly one caller (warmpool_take hands it over
 * under mu), so its containers are removed once.
 */
#define _POSIX_C_SOURCE 200809L
#include "warmpool.h"

#include "docker.h"
#include "fence.h"
#include "store.h"
#include "ty_log.h"
#include "ty_time.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WARMPOOL_SWEEP_MS 500
#define WARMPOOL_ENDED    "Completed,Failed,Stopped"
#define WARMPOOL_ANY      "InProgress,Stopping,Completed,Failed,Stopped"

struct warmpool_node {
    struct warmpool_entry e;
    struct warmpool_node *next; /* newer first */
};

struct warmpool {
    char *redis_url, *docker_host; /* owned */
    int max_pools;
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;           /* signalled on stop */
    struct warmpool_node *pools; /* guarded by mu, newest first */
    int n;                       /* guarded by mu */
    pthread_t thr;
    int started;
};

static const char *warmpool_str(json_t *obj, const char *key)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v ? v : "";
}

int warmpool_key(json_t *doc, char *key, size_t n, struct ty_err *err)
{
    json_t *rc = json_object_get(doc, "ResourceConfig"), *vpc = json_object_get(doc, "VpcConfig");
    const char *arn = warmpool_str(doc, "TrainingJobArn");
    char region[64] = "", account[64] = "";
    json_t *arr;
    char *s;
    int rcode = 0;

    /* arn:aws:sagemaker:<region>:<account>:training-job/<name> */
    if (sscanf(arn, "arn:%*[^:]:sagemaker:%63[^:]:%63[^:]:", region, account) != 2)
        return ty_err_set(err, TY_EINVAL, "TrainingJobArn", "no account in '%s'", arn);
    arr = json_pack("[s,s,s,s,s,I,I,s,O?,b,b]", account, region, warmpool_str(doc, "RoleArn"),
                    warmpool_str(json_object_get(doc, "AlgorithmSpecification"), "TrainingImage"),
                    warmpool_str(rc, "InstanceType"),
                    json_integer_value(json_object_get(rc, "InstanceCount")),
                    json_integer_value(json_object_get(rc, "VolumeSizeInGB")),
                    warmpool_str(rc, "VolumeKmsKeyId"), vpc,
                    json_is_true(json_object_get(doc, "EnableNetworkIsolation")),
                    json_is_true(json_object_get(doc, "EnableInterContainerTrafficEncryption")));
    s = arr ? json_dumps(arr, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!s)
        rcode = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    else if (strlen(s) >= n)
        rcode = ty_err_set(err, TY_EINVAL, NULL, "warm pool key too long");
    else
        memcpy(key, s, strlen(s) + 1);
    free(s);
    json_decref(arr);
    return rcode;
}

long warmpool_keep_alive(json_t *doc)
{
    json_t *v = json_object_get(json_object_get(doc, "ResourceConfig"), "KeepAlivePeriodInSeconds");
    json_int_t k = json_integer_value(v);
    return k > 0 ? (long)k : 0;
}

int warmpool_retains(json_t *doc)
{
    const char *st = warmpool_str(doc, "TrainingJobStatus");
    const char *why = warmpool_str(doc, "FailureReason");

    if (warmpool_keep_alive(doc) <= 0)
        return 0;
    if (strcmp(st, "Completed") == 0 || strcmp(st, "Stopped") == 0)
        return 1;
    return strcmp(st, "Failed") == 0 &&
           (strncmp(why, "AlgorithmError", 14) == 0 || strncmp(why, "ClientError", 11) == 0);
}

/* Writes WarmPoolStatus (and set's other members) into job's document; expect as
   store_transition. Best effort: logged. */
static void warmpool_write(struct store *s, const char *job, const char *expect, json_t *status,
                           json_t *extra, double now)
{
    struct store_transition t;
    struct ty_err err;
    json_t *set = extra ? extra : json_object(), *doc;

    if (!s || !set || !status) {
        json_decref(status);
        json_decref(set);
        return;
    }
    json_object_set_new(set, "WarmPoolStatus", status);
    memset(&t, 0, sizeof(t));
    t.expect = expect;
    t.set = set;
    t.now = now;
    ty_err_clear(&err);
    doc = store_job_transition(s, job, &t, &err);
    if (!doc && err.code != TY_ENOTFOUND)
        ty_log(TY_LOG_WARN, "agent.warmpool.write_failed", "job=%s error='%s'", job, err.msg);
    json_decref(doc);
    json_decref(set);
}

static json_int_t warmpool_billable(const struct warmpool_entry *e, double now)
{
    return now > e->since ? (json_int_t)(now - e->since) : 0;
}

void warmpool_reused(struct store *s, const struct warmpool_entry *e, const char *job, double now)
{
    warmpool_write(s, e->job, WARMPOOL_ENDED,
                   json_pack("{s:s,s:I,s:s}", "Status", "Reused",
                             "ResourceRetainedBillableTimeInSeconds", warmpool_billable(e, now),
                             "ReusedByJob", job),
                   json_pack("{s:n}", "_warm_since"), now);
    ty_log(TY_LOG_INFO, "agent.warmpool.reused", "job=%s by=%s retained_s=%.1f", e->job, job,
           now - e->since);
}

void warmpool_release(struct docker *d, const struct warmpool_entry *e)
{
    struct ty_err err;

    for (int i = 0; i < e->nh && i < STAGE_MAX_HOSTS; i++) {
        if (!e->sbid[i][0] || !d)
            continue;
        docker_kill(d, e->sbid[i], "SIGKILL", &err); /* its sleep ignores SIGTERM as PID 1 */
        if (docker_remove(d, e->sbid[i], 1, &err) != 0)
            ty_log(TY_LOG_WARN, "agent.warmpool.remove_failed", "job=%s container=%.12s error='%s'",
                   e->job, e->sbid[i], err.msg);
    }
    if (e->net[0]) {
        char br[FENCE_IFNAME_MAX];
        if (d && docker_network_remove(d, e->net, &err) != 0)
            ty_log(TY_LOG_WARN, "agent.warmpool.network_remove_failed",
                   "job=%s network=%s error='%s'", e->job, e->net, err.msg);
        fence_ifname(e->net, br, sizeof(br));
        fence_unbridge(br);
    }
}

void warmpool_terminate(struct docker *d, struct store *s, const struct warmpool_entry *e,
                        double now)
{
    warmpool_release(d, e);
    warmpool_write(s, e->job, WARMPOOL_ENDED,
                   json_pack("{s:s,s:I}", "Status", "Terminated",
                             "ResourceRetainedBillableTimeInSeconds", warmpool_billable(e, now)),
                   json_pack("{s:n}", "_warm_since"), now);
    ty_log(TY_LOG_INFO, "agent.warmpool.terminated", "job=%s retained_s=%.1f", e->job,
           now - e->since);
}

/* Unlinks and returns the oldest pool when more than max are kept. Call with mu held. */
static struct warmpool_node *warmpool_over_locked(struct warmpool *wp)
{
    struct warmpool_node **pp = &wp->pools, *last;

    if (wp->n <= wp->max_pools || !*pp)
        return NULL;
    while ((*pp)->next)
        pp = &(*pp)->next;
    last = *pp;
    *pp = NULL;
    wp->n--;
    return last;
}

/* Unlinks the pool of job, if still listed (a take may have won). Call with mu held. */
static struct warmpool_node *warmpool_unlink_locked(struct warmpool *wp, const char *job)
{
    for (struct warmpool_node **pp = &wp->pools; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->e.job, job) == 0) {
            struct warmpool_node *n = *pp;
            *pp = n->next;
            wp->n--;
            return n;
        }
    }
    return NULL;
}

int warmpool_put(struct warmpool *wp, struct store *s, const struct warmpool_entry *e,
                 struct ty_err *err)
{
    struct warmpool_node *node, *old;
    struct docker *d;

    if (!wp)
        return ty_err_set(err, TY_EINVAL, NULL, "no warm pool");
    if (!(node = calloc(1, sizeof(*node))))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    node->e = *e;
    warmpool_write(
        s, e->job, WARMPOOL_ENDED,
        json_pack("{s:s,s:i}", "Status", "Available", "ResourceRetainedBillableTimeInSeconds", 0),
        json_pack("{s:f}", "_warm_since", e->since), e->since);
    pthread_mutex_lock(&wp->mu);
    node->next = wp->pools;
    wp->pools = node;
    wp->n++;
    old = warmpool_over_locked(wp);
    pthread_mutex_unlock(&wp->mu);
    ty_log(TY_LOG_INFO, "agent.warmpool.retained", "job=%s hosts=%d sandbox=%.12s network='%s'",
           e->job, e->nh, e->sbid[0], e->net);
    if (old) {
        ty_log(TY_LOG_INFO, "agent.warmpool.evicted", "job=%s note='more pools than slots'",
               old->e.job);
        d = docker_open(wp->docker_host, err);
        warmpool_terminate(d, s, &old->e, ty_wall_s());
        docker_close(d);
        free(old);
    }
    return 0;
}

int warmpool_take(struct warmpool *wp, const char *key, struct warmpool_entry *e)
{
    struct warmpool_node *found = NULL;

    if (!wp)
        return 0;
    pthread_mutex_lock(&wp->mu);
    for (struct warmpool_node **pp = &wp->pools; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->e.key, key) == 0) {
            found = *pp;
            *pp = found->next;
            wp->n--;
            break;
        }
    }
    pthread_mutex_unlock(&wp->mu);
    if (!found)
        return 0;
    *e = found->e;
    free(found);
    return 1;
}

int warmpool_count(struct warmpool *wp)
{
    int n;

    if (!wp)
        return 0;
    pthread_mutex_lock(&wp->mu);
    n = wp->n;
    pthread_mutex_unlock(&wp->mu);
    return n;
}

/* One sweep: ends the pools whose period is over (from their documents) or whose job is gone. */
static void warmpool_sweep(struct warmpool *wp, struct store **s, struct docker **d)
{
    char jobs[64][64];
    int n = 0;
    struct ty_err err;

    pthread_mutex_lock(&wp->mu);
    for (struct warmpool_node *p = wp->pools; p && n < 64; p = p->next)
        snprintf(jobs[n++], sizeof(jobs[0]), "%s", p->e.job);
    pthread_mutex_unlock(&wp->mu);
    if (n == 0)
        return;
    if (!*s && !(*s = store_open(wp->redis_url, &err)))
        return; /* Redis away: the pools wait (their periods are read again later) */
    if (!*d)
        *d = docker_open(wp->docker_host, &err);
    for (int i = 0; i < n; i++) {
        json_t *doc;
        struct warmpool_node *node = NULL;
        double now = ty_wall_s(), since = 0;
        int end;

        ty_err_clear(&err);
        doc = store_job_get(*s, jobs[i], &err);
        if (!doc && err.code != TY_ENOTFOUND) {
            store_close(*s);
            *s = NULL;
            return;
        }
        pthread_mutex_lock(&wp->mu);
        for (struct warmpool_node *p = wp->pools; p; p = p->next)
            if (strcmp(p->e.job, jobs[i]) == 0)
                since = p->e.since;
        end = !doc || now >= since + (double)warmpool_keep_alive(doc);
        if (end)
            node = warmpool_unlink_locked(wp, jobs[i]);
        pthread_mutex_unlock(&wp->mu);
        json_decref(doc);
        if (node) {
            warmpool_terminate(*d, *s, &node->e, now);
            free(node);
        }
    }
}

static void *warmpool_thread(void *arg)
{
    struct warmpool *wp = arg;
    struct store *s = NULL;
    struct docker *d = NULL;

    while (!atomic_load(&wp->stop)) {
        struct timespec ts;
        warmpool_sweep(wp, &s, &d);
        pthread_mutex_lock(&wp->mu);
        ty_deadline_ms(&ts, WARMPOOL_SWEEP_MS);
        if (!atomic_load(&wp->stop))
            pthread_cond_timedwait(&wp->cv, &wp->mu, &ts);
        pthread_mutex_unlock(&wp->mu);
    }
    store_close(s);
    docker_close(d);
    return NULL;
}

struct warmpool *warmpool_start(const char *redis_url, const char *docker_host, int max_pools,
                                struct ty_err *err)
{
    struct warmpool *wp = calloc(1, sizeof(*wp));

    if (!wp) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    wp->redis_url = strdup(redis_url ? redis_url : "");
    wp->docker_host = strdup(docker_host ? docker_host : "");
    wp->max_pools = max_pools > 0 ? max_pools : 1;
    pthread_mutex_init(&wp->mu, NULL);
    pthread_cond_init(&wp->cv, NULL);
    if (!wp->redis_url || !wp->docker_host ||
        pthread_create(&wp->thr, NULL, warmpool_thread, wp) != 0) {
        ty_err_set(err, TY_ENOMEM, NULL, "cannot start the warm pool thread");
        warmpool_stop(wp);
        return NULL;
    }
    wp->started = 1;
    return wp;
}

void warmpool_stop(struct warmpool *wp)
{
    struct store *s;
    struct docker *d;
    struct ty_err err;

    if (!wp)
        return;
    pthread_mutex_lock(&wp->mu);
    atomic_store(&wp->stop, 1);
    pthread_cond_broadcast(&wp->cv);
    pthread_mutex_unlock(&wp->mu);
    if (wp->started)
        pthread_join(wp->thr, NULL);
    if (wp->pools) {
        s = store_open(wp->redis_url, &err);
        d = docker_open(wp->docker_host, &err);
        while (wp->pools) {
            struct warmpool_node *p = wp->pools;
            wp->pools = p->next;
            warmpool_terminate(d, s, &p->e, ty_wall_s());
            free(p);
        }
        docker_close(d);
        store_close(s);
    }
    pthread_mutex_destroy(&wp->mu);
    pthread_cond_destroy(&wp->cv);
    free(wp->redis_url);
    free(wp->docker_host);
    free(wp);
}
