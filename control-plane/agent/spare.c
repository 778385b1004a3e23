/*
 * spare.c - the agent's spare sandbox and the thread that makes it (spare.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "spare.h"

#include "docker.h"
#include "sandbox.h"
#include "ty_log.h"
#include "ty_time.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SPARE_AFTER_TAKE_S 1.0 /* the taker's own containers go first */
#define SPARE_RETRY_MIN_S  1.0 /* after a failed make, doubling up to SPARE_RETRY_MAX_S */
#define SPARE_RETRY_MAX_S  60.0

struct spare {
    char *docker_host, *image, *seccomp, *deployment, *agent;
    char name[256];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thr;
    int started;
    int stopping;     /* guarded by mu */
    int have;         /* guarded by mu: id and pid hold a running spare */
    char id[72];      /* guarded by mu */
    int pid;          /* guarded by mu */
    double next;      /* guarded by mu: no make before this time */
    double retry_s;   /* the thread's: the wait after the next failure */
    struct docker *d; /* the thread's, then spare_stop's */
};

static char *spare_dup(const char *s)
{
    return strdup(s ? s : "");
}

/* Makes one spare. 0, or -1 (logged when the last try worked). */
static int spare_make(struct spare *sp, char *id, size_t n, int *pid)
{
    struct sandbox_opts o = {0};
    struct ty_err err;
    json_t *labels;
    double t0 = ty_wall_s();
    int rc = -1;

    ty_err_clear(&err);
    if (!sp->d && !(sp->d = docker_open(sp->docker_host, &err)))
        goto out;
    labels = json_pack("{s:s, s:s, s:s, s:s}", "trainyard.deployment", sp->deployment,
                       "trainyard.agent", sp->agent, SANDBOX_LABEL, "1", SANDBOX_SPARE_LABEL, "1");
    o.image = sp->image;
    o.name = sp->name;
    o.hostname = "algo-1"; /* a one-host job's only host */
    o.labels = labels;
    o.seccomp = sp->seccomp[0] ? sp->seccomp : NULL;
    rc = labels ? sandbox_make(sp->d, &o, id, n, pid, &err) : -1;
    json_decref(labels);
out:
    if (rc == 0) {
        ty_log(TY_LOG_INFO, "agent.spare.made", "container=%.12s ms=%.0f", id,
               (ty_wall_s() - t0) * 1000.0);
        sp->retry_s = SPARE_RETRY_MIN_S;
        return 0;
    }
    if (sp->retry_s <= SPARE_RETRY_MIN_S)
        ty_log(TY_LOG_WARN, "agent.spare.failed",
               "error='%s' note='jobs make their own sandbox; tried again within %.0f s'", err.msg,
               SPARE_RETRY_MAX_S);
    docker_close(sp->d); /* a fresh connection next time */
    sp->d = NULL;
    return -1;
}

static void *spare_thread(void *arg)
{
    struct spare *sp = arg;

    pthread_mutex_lock(&sp->mu);
    while (!sp->stopping) {
        double now = ty_wall_s();
        if (!sp->have && now >= sp->next) {
            char id[72];
            int pid, rc;
            pthread_mutex_unlock(&sp->mu);
            rc = spare_make(sp, id, sizeof(id), &pid);
            pthread_mutex_lock(&sp->mu);
            if (rc == 0) {
                memcpy(sp->id, id, sizeof(sp->id));
                sp->pid = pid;
                sp->have = 1;
            } else {
                sp->next = ty_wall_s() + sp->retry_s;
                sp->retry_s =
                    sp->retry_s * 2 > SPARE_RETRY_MAX_S ? SPARE_RETRY_MAX_S : sp->retry_s * 2;
            }
            continue;
        }
        {
            double until = sp->have ? now + 3600.0 : sp->next;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's clock */
            until = (double)ts.tv_sec + ts.tv_nsec / 1e9 + (until - now);
            ts.tv_sec = (time_t)until;
            ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
            pthread_cond_timedwait(&sp->cv, &sp->mu, &ts);
        }
    }
    pthread_mutex_unlock(&sp->mu);
    return NULL;
}

struct spare *spare_start(const struct spare_config *cfg, struct ty_err *err)
{
    struct spare *sp = calloc(1, sizeof(*sp));

    if (!sp)
        goto nomem;
    pthread_mutex_init(&sp->mu, NULL);
    pthread_cond_init(&sp->cv, NULL);
    sp->docker_host = spare_dup(cfg->docker_host);
    sp->image = spare_dup(cfg->image);
    sp->seccomp = spare_dup(cfg->seccomp);
    sp->deployment = spare_dup(cfg->deployment);
    sp->agent = spare_dup(cfg->agent);
    sp->retry_s = SPARE_RETRY_MIN_S;
    if (!sp->docker_host || !sp->image || !sp->seccomp || !sp->deployment || !sp->agent)
        goto nomem;
    sandbox_spare_name(sp->deployment, sp->agent, sp->name, sizeof(sp->name));
    if (pthread_create(&sp->thr, NULL, spare_thread, sp) != 0)
        goto nomem;
    sp->started = 1;
    return sp;
nomem:
    spare_stop(sp);
    ty_err_set(err, TY_ENOMEM, NULL, "cannot start the spare sandbox's thread");
    return NULL;
}

int spare_take(struct spare *sp, struct docker *d, const char *name, char *id, size_t n, int *pid)
{
    struct docker_state st;
    struct ty_err err;

    if (!sp || n < sizeof(sp->id))
        return -1;
    pthread_mutex_lock(&sp->mu);
    if (!sp->have || sp->stopping) {
        pthread_mutex_unlock(&sp->mu);
        return -1;
    }
    memcpy(id, sp->id, sizeof(sp->id));
    *pid = sp->pid;
    sp->have = 0;
    sp->next = ty_wall_s() + SPARE_AFTER_TAKE_S;
    pthread_mutex_unlock(&sp->mu);
    ty_err_clear(&err);
    if (docker_rename(d, id, name, &err) != 0) {
        docker_remove(d, name, 1, &err); /* a stale one with the job's name */
        if (docker_rename(d, id, name, &err) != 0)
            goto fail;
    }
    /* its process may have died since it was made (an engine restart) */
    if (docker_inspect(d, id, &st, &err) != 0 || !st.running || st.pid <= 0)
        goto fail;
    *pid = st.pid;
    return 0;
fail:
    ty_log(TY_LOG_WARN, "agent.spare.lost", "container=%.12s error='%s'", id,
           err.msg[0] ? err.msg : "not running");
    sandbox_remove(d, id, &err);
    id[0] = '\0';
    return -1;
}

void spare_kick(struct spare *sp)
{
    if (!sp)
        return;
    pthread_mutex_lock(&sp->mu);
    sp->next = 0;
    pthread_cond_signal(&sp->cv);
    pthread_mutex_unlock(&sp->mu);
}

void spare_stop(struct spare *sp)
{
    struct ty_err err;

    if (!sp)
        return;
    if (sp->started) {
        pthread_mutex_lock(&sp->mu);
        sp->stopping = 1;
        pthread_cond_signal(&sp->cv);
        pthread_mutex_unlock(&sp->mu);
        pthread_join(sp->thr, NULL);
    }
    if (sp->have && sp->d && sandbox_remove(sp->d, sp->id, &err) == 0)
        ty_log(TY_LOG_INFO, "agent.spare.removed", "container=%.12s", sp->id);
    docker_close(sp->d);
    pthread_mutex_destroy(&sp->mu);
    pthread_cond_destroy(&sp->cv);
    free(sp->docker_host);
    free(sp->image);
    free(sp->seccomp);
    free(sp->deployment);
    free(sp->agent);
    free(sp);
}
