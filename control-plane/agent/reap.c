/*
 * reap.c - stops and removes what a job left on the engine (reap.h).
 *
 * Owns nothing between calls. Order matters to the engine: a sandbox container cannot be removed
 * while a training container still uses its network namespace, so training containers go first.
 */
#define _POSIX_C_SOURCE 200809L
#include "reap.h"
#include "sandbox.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fence.h"
#include "ty_log.h"
#include "ty_time.h"

static int reap_is_sandbox(json_t *c)
{
    return json_object_get(json_object_get(c, "Labels"), "trainyard.sandbox") != NULL;
}

void reap_job_name(const char *deployment, const char *job, char *out, size_t n)
{
    if (deployment && deployment[0])
        snprintf(out, n, "trainyard-%.*s-%s", REAP_DEPLOYMENT_CHARS, deployment, job);
    else
        snprintf(out, n, "trainyard-%s", job);
}

int reap_is_ours(json_t *c, const char *deployment)
{
    const char *dep =
        json_string_value(json_object_get(json_object_get(c, "Labels"), "trainyard.deployment"));
    return !deployment || !deployment[0] || !dep || strcmp(dep, deployment) == 0;
}

/* SIGTERM to every training container, then waits until none runs or grace_s passed. */
static void reap_term(struct docker *d, json_t *list, int grace_s)
{
    struct timespec tick = {0, 250 * 1000000L};
    double deadline = ty_mono_s() + grace_s;
    struct ty_err err;
    json_t *c;
    size_t i;
    int running = 1;

    json_array_foreach(list, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "Id"));
        if (id && !reap_is_sandbox(c))
            docker_kill(d, id, "SIGTERM", &err);
    }
    while (running && ty_mono_s() < deadline) {
        running = 0;
        json_array_foreach(list, i, c)
        {
            const char *id = json_string_value(json_object_get(c, "Id"));
            struct docker_state st;
            if (id && !reap_is_sandbox(c) && docker_inspect(d, id, &st, &err) == 0 && st.running)
                running = 1;
        }
        if (running)
            nanosleep(&tick, NULL);
    }
}

int reap_job(struct docker *d, const char *deployment, const char *job, int grace_s)
{
    char filter[200], net[200], br[FENCE_IFNAME_MAX];
    struct docker_state st;
    struct ty_err err;
    json_t *list, *c;
    size_t i;
    int found = 0;

    snprintf(filter, sizeof(filter), "trainyard.job=%s", job);
    list = docker_list(d, filter, &err);
    if (!list) {
        ty_log(TY_LOG_WARN, "agent.reap.list_failed", "job=%s error='%s'", job, err.msg);
        return -1;
    }
    for (i = json_array_size(list); i-- > 0;)
        if (!reap_is_ours(json_array_get(list, i), deployment))
            json_array_remove(list, i); /* another deployment's job of the same name */
    if (grace_s > 0)
        reap_term(d, list, grace_s);
    for (int sandbox = 0; sandbox < 2; sandbox++) {
        json_array_foreach(list, i, c)
        {
            const char *id = json_string_value(json_object_get(c, "Id"));
            if (!id || reap_is_sandbox(c) != sandbox)
                continue;
            found += !sandbox;
            ty_log(TY_LOG_INFO, "agent.job.leftover_removed", "job=%s container=%.12s sandbox=%d",
                   job, id, sandbox);
            docker_kill(d, id, "SIGKILL", &err); /* a sandbox's sleep ignores SIGTERM */
            docker_remove(d, id, 1, &err);
        }
    }
    json_decref(list);
    /* a spare sandbox the job took (spare.h) has no job label: its name is the job's */
    sandbox_job_name(deployment, job, net, sizeof(net));
    if (deployment && deployment[0] && docker_inspect(d, net, &st, &err) == 0) {
        ty_log(TY_LOG_INFO, "agent.job.leftover_removed", "job=%s container=%.12s sandbox=1", job,
               st.id);
        sandbox_remove(d, net, &err);
    }
    reap_job_name(deployment, job, net, sizeof(net));
    docker_network_remove(d, net, &err);
    fence_ifname(net, br, sizeof(br));
    fence_unbridge(br);
    return found;
}
