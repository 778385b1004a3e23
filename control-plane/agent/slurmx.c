/*
 * slurmx.c - the Slurm executor's agent-wide part (slurmx.h): its settings, the instance map
 * and its check against the cluster at start, the launchers' listener and the table that
 * routes their requests to the runners of their jobs.
 */
#include "slurmx.h"

#include "launchsrv.h"
#include "ty_log.h"
#include "ty_time.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLURMX_OWN 12

#define SLURMX_POLL_MS 1000 /* GET /jobs?update_time: every followed job's changes at once */

struct slurmx_ent {
    char job[64];
    struct slurmx_attempt at;
    long slurm_id; /* 0 until slurmx_follow */
    int have;      /* last holds the Slurm job as last seen */
    struct slurmrest_job last;
    double asked; /* when the request that brought last was sent: an answer to an older request
                     (the poller's, a runner's) does not replace it */
};

struct slurmx {
    struct agent_slurm cfg; /* strings point into own[] */
    char *own[SLURMX_OWN];
    struct slurmmap *map;
    struct launchsrv *ls;
    pthread_mutex_t mu; /* guards ent[] and is held while a runner's callback runs */
    struct slurmx_ent *ent;
    size_t n, cap;
    pthread_t poll_thr; /* the one poller of GET /jobs for every followed job */
    int poll_started;
    int stopping; /* under pmu */
    pthread_mutex_t pmu;
    pthread_cond_t pcv; /* signalled on stop */
};

/* Copies s into x's owned strings (slot i). NULL stays NULL; "" becomes NULL. */
static const char *slurmx_own(struct slurmx *x, int i, const char *s)
{
    if (!s || !s[0])
        return NULL;
    x->own[i] = strdup(s);
    return x->own[i] ? x->own[i] : "";
}

static struct slurmx_ent *slurmx_find(struct slurmx *x, const char *job)
{
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->ent[i].job, job) == 0)
            return &x->ent[i];
    return NULL;
}

static int slurmx_on_report(void *ud, const struct launchwire_report *r)
{
    struct slurmx *x = ud;
    struct slurmx_ent *e;
    int rc = -1;

    pthread_mutex_lock(&x->mu);
    if ((e = slurmx_find(x, r->job)) != NULL)
        rc = e->at.report(e->at.ud, r);
    pthread_mutex_unlock(&x->mu);
    return rc;
}

static json_t *slurmx_on_assign(void *ud, const char *job, int attempt, int host)
{
    struct slurmx *x = ud;
    struct slurmx_ent *e;
    json_t *j = NULL;

    (void)attempt; /* the listener checked it against the attempt's token */
    pthread_mutex_lock(&x->mu);
    if ((e = slurmx_find(x, job)) != NULL)
        j = e->at.assign(e->at.ud, host);
    pthread_mutex_unlock(&x->mu);
    return j;
}

struct slurmrest *slurmx_client(const struct slurmx *x, int one_shot, struct ty_err *err)
{
    struct slurmrest_config c = {.url = x->cfg.url,
                                 .api = x->cfg.api,
                                 .user = x->cfg.user,
                                 .jwt_key_path = x->cfg.jwt_key,
                                 .token_path = x->cfg.token_file,
                                 .one_shot = one_shot};
    return slurmrest_open(&c, err);
}

/* Checks the map against the cluster: what is wrong is logged (a type nobody runs may name a
   partition still to come; its jobs then fail with Slurm's own words). -1 when the cluster
   does not answer. */
static int slurmx_check(struct slurmx *x, struct ty_err *err)
{
    struct slurmrest *c = slurmx_client(x, 1, err);
    json_t *parts = NULL, *nodes = NULL;
    char report[2048];
    int rc = -1, problems;

    if (!c)
        return -1;
    if (slurmrest_ping(c, err) != 0 || !(parts = slurmrest_partitions(c, err)) ||
        !(nodes = slurmrest_nodes(c, err)))
        goto out;
    problems = slurmmap_check(x->map, parts, nodes, report, sizeof(report));
    for (char *nl = strchr(report, '\n'); nl; nl = strchr(nl, '\n')) /* one log line */
        *nl = nl[1] ? ';' : '\0';
    if (problems > 0)
        ty_log(TY_LOG_WARN, "agent.slurm.map", "problems=%d report='%s'", problems, report);
    ty_log(TY_LOG_INFO, "agent.slurm.cluster", "url='%s' partitions=%zu nodes=%zu", x->cfg.url,
           json_array_size(parts), json_array_size(nodes));
    rc = 0;
out:
    json_decref(parts);
    json_decref(nodes);
    slurmrest_close(c);
    return rc;
}

/* Fills cfg.launch_url when the admin gave none: http://<listen> with the port bound. */
static int slurmx_launch_url(struct slurmx *x, struct ty_err *err)
{
    char url[300], host[256];
    const char *colon = strrchr(x->cfg.listen, ':');
    size_t hl = colon ? (size_t)(colon - x->cfg.listen) : 0;

    if (x->cfg.launch_url)
        return 0;
    if (hl == 0 || hl >= sizeof(host))
        return ty_err_set(err, TY_EINVAL, "launch-listen", "--launch-listen '%s' is not HOST:PORT",
                          x->cfg.listen);
    memcpy(host, x->cfg.listen, hl);
    host[hl] = '\0';
    if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0)
        return ty_err_set(err, TY_EINVAL, "launch-url",
                          "--launch-url is required when --launch-listen binds every address: "
                          "the nodes need an address they can reach");
    snprintf(url, sizeof(url), "http://%s:%d", host, launchsrv_port(x->ls));
    x->cfg.launch_url = slurmx_own(x, SLURMX_OWN - 1, url);
    return 0;
}

/* Takes the jobs of one GET /jobs answer (asked at that time) into the followed entries they
   belong to. */
static void slurmx_take(struct slurmx *x, json_t *jobs, double asked)
{
    struct slurmrest_job j;
    struct ty_err err;
    size_t i;
    json_t *jj;

    json_array_foreach(jobs, i, jj)
    {
        if (slurmrest_job_parse(jj, &j, &err) != 0)
            continue;
        pthread_mutex_lock(&x->mu);
        for (size_t k = 0; k < x->n; k++)
            if (x->ent[k].slurm_id == j.id && asked >= x->ent[k].asked) {
                x->ent[k].last = j;
                x->ent[k].have = 1;
                x->ent[k].asked = asked;
            }
        pthread_mutex_unlock(&x->mu);
    }
}

/* The poller: one GET /jobs?update_time a second brings every followed job's changes (304 when
   none), instead of one GET /job per job. Runners read what it saw (slurmx_job). */
static void *slurmx_poll_thread(void *arg)
{
    struct slurmx *x = arg;
    struct slurmrest *c = NULL;
    struct ty_err err;
    int64_t since = 0;
    double warned = 0, asked;

    for (;;) {
        struct timespec ts;
        json_t *jobs = NULL;
        int followed;

        pthread_mutex_lock(&x->pmu);
        ty_deadline_ms(&ts, SLURMX_POLL_MS);
        while (!x->stopping && pthread_cond_timedwait(&x->pcv, &x->pmu, &ts) == 0)
            ;
        if (x->stopping) {
            pthread_mutex_unlock(&x->pmu);
            break;
        }
        pthread_mutex_unlock(&x->pmu);
        pthread_mutex_lock(&x->mu);
        followed = x->n > 0;
        pthread_mutex_unlock(&x->mu);
        if (!followed)
            continue;
        if (!c && !(c = slurmx_client(x, 0, &err)))
            continue;
        asked = ty_wall_s();
        if (slurmrest_jobs_since(c, &since, &jobs, &err) != 0) {
            if (ty_wall_s() - warned > 60) {
                ty_log(TY_LOG_WARN, "agent.slurm.poll_failed", "error='%s'", err.msg);
                warned = ty_wall_s();
            }
            continue; /* the runners read their jobs one by one meanwhile */
        }
        if (jobs)
            slurmx_take(x, jobs, asked);
        json_decref(jobs);
    }
    slurmrest_close(c);
    return NULL;
}

struct slurmx *slurmx_start(const struct agent_slurm *cfg, struct ty_err *err)
{
    struct slurmx *x = calloc(1, sizeof(*x));

    if (!x) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&x->mu, NULL);
    pthread_mutex_init(&x->pmu, NULL);
    pthread_cond_init(&x->pcv, NULL);
    x->cfg.url = slurmx_own(x, 0, cfg->url);
    x->cfg.api = slurmx_own(x, 1, cfg->api);
    x->cfg.user = slurmx_own(x, 2, cfg->user);
    x->cfg.jwt_key = slurmx_own(x, 3, cfg->jwt_key);
    x->cfg.token_file = slurmx_own(x, 4, cfg->token_file);
    x->cfg.instance_map = slurmx_own(x, 5, cfg->instance_map);
    x->cfg.launcher = slurmx_own(x, 6, cfg->launcher);
    x->cfg.listen = slurmx_own(x, 7, cfg->listen);
    x->cfg.launch_url = slurmx_own(x, 8, cfg->launch_url);
    x->cfg.node_docker_host = slurmx_own(x, 9, cfg->node_docker_host);
    x->cfg.node_staging_dir = slurmx_own(x, 10, cfg->node_staging_dir);
    x->cfg.workdir = cfg->workdir && cfg->workdir[0] ? strdup(cfg->workdir) : NULL;
    if (!x->cfg.url || !x->cfg.launcher || !x->cfg.listen) {
        ty_err_set(err, TY_EINVAL, "slurm",
                   "the Slurm executor needs --slurm-url, --slurm-launcher and --launch-listen");
        goto fail;
    }
    if (!(x->map = slurmmap_load(x->cfg.instance_map, err)) || slurmx_check(x, err) != 0)
        goto fail;
    if (!(x->ls = launchsrv_start(x->cfg.listen, slurmx_on_report, slurmx_on_assign, x, err)) ||
        slurmx_launch_url(x, err) != 0)
        goto fail;
    if (pthread_create(&x->poll_thr, NULL, slurmx_poll_thread, x) != 0) {
        ty_err_set(err, TY_EINTERNAL, NULL, "cannot start the Slurm poller");
        goto fail;
    }
    x->poll_started = 1;
    ty_log(TY_LOG_INFO, "agent.slurm.started", "url='%s' launcher='%s' listen='%s' launch_url='%s'",
           x->cfg.url, x->cfg.launcher, x->cfg.listen, x->cfg.launch_url);
    return x;
fail:
    slurmx_stop(x);
    return NULL;
}

void slurmx_stop(struct slurmx *x)
{
    if (!x)
        return;
    if (x->poll_started) {
        pthread_mutex_lock(&x->pmu);
        x->stopping = 1;
        pthread_cond_broadcast(&x->pcv);
        pthread_mutex_unlock(&x->pmu);
        pthread_join(x->poll_thr, NULL);
    }
    launchsrv_stop(x->ls);
    slurmmap_free(x->map);
    for (int i = 0; i < SLURMX_OWN; i++)
        free(x->own[i]);
    free((char *)x->cfg.workdir);
    free(x->ent);
    pthread_mutex_destroy(&x->mu);
    pthread_mutex_destroy(&x->pmu);
    pthread_cond_destroy(&x->pcv);
    free(x);
}

const struct agent_slurm *slurmx_cfg(const struct slurmx *x)
{
    return &x->cfg;
}

int slurmx_place(const struct slurmx *x, const char *type, struct slurmmap_entry *out,
                 struct ty_err *err)
{
    return slurmmap_lookup(x->map, type, out, err);
}

int slurmx_attach(struct slurmx *x, const char *job, int attempt, int hosts, const char *token,
                  const struct slurmx_attempt *at, const long long *acked, struct ty_err *err)
{
    struct slurmx_ent *e;
    int rc;

    pthread_mutex_lock(&x->mu);
    if (!(e = slurmx_find(x, job))) {
        if (x->n == x->cap) {
            size_t cap = x->cap ? x->cap * 2 : 16;
            struct slurmx_ent *ne = realloc(x->ent, cap * sizeof(*ne));
            if (!ne) {
                pthread_mutex_unlock(&x->mu);
                return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            }
            x->ent = ne;
            x->cap = cap;
        }
        e = &x->ent[x->n++];
        snprintf(e->job, sizeof(e->job), "%s", job);
    }
    e->at = *at;
    e->slurm_id = 0;
    e->have = 0;
    e->asked = 0;
    rc = launchsrv_add(x->ls, token, job, attempt, hosts, acked);
    if (rc != 0) {
        *e = x->ent[--x->n];
        pthread_mutex_unlock(&x->mu);
        return ty_err_set(err, -rc, NULL, "cannot register the attempt's launchers");
    }
    pthread_mutex_unlock(&x->mu);
    return 0;
}

void slurmx_detach(struct slurmx *x, const char *job, int ended)
{
    struct slurmx_ent *e;

    if (ended)
        launchsrv_end(x->ls, job);
    pthread_mutex_lock(&x->mu);
    if ((e = slurmx_find(x, job)) != NULL)
        *e = x->ent[--x->n];
    pthread_mutex_unlock(&x->mu);
}

void slurmx_stop_job(struct slurmx *x, const char *job, int grace_s, int upload)
{
    launchsrv_set_stop(x->ls, job, grace_s, upload);
}

double slurmx_last_seen(struct slurmx *x, const char *job, int host, long long *seq)
{
    if (seq)
        *seq = 0;
    return launchsrv_last_seen(x->ls, job, host, seq);
}

void slurmx_follow(struct slurmx *x, const char *job, long slurm_id)
{
    struct slurmx_ent *e;

    pthread_mutex_lock(&x->mu);
    if ((e = slurmx_find(x, job)) != NULL && e->slurm_id != slurm_id) {
        e->slurm_id = slurm_id;
        e->have = 0;
        e->asked = 0;
    }
    pthread_mutex_unlock(&x->mu);
}

int slurmx_job(struct slurmx *x, const char *job, struct slurmrest_job *out)
{
    struct slurmx_ent *e;
    int rc = -1;

    pthread_mutex_lock(&x->mu);
    if ((e = slurmx_find(x, job)) != NULL && e->have) {
        *out = e->last;
        rc = 0;
    }
    pthread_mutex_unlock(&x->mu);
    return rc;
}

void slurmx_job_seen(struct slurmx *x, const char *job, const struct slurmrest_job *j, double asked)
{
    struct slurmx_ent *e;

    pthread_mutex_lock(&x->mu);
    if ((e = slurmx_find(x, job)) != NULL && e->slurm_id == j->id && asked >= e->asked) {
        e->last = *j;
        e->have = 1;
        e->asked = asked;
    }
    pthread_mutex_unlock(&x->mu);
}
