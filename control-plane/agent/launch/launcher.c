/*
 * launcher.c - trainyard-launch: one host of a training job on a node its executor does not
 * reach, started there by the executor's Slurm job (srun, one per node; docs/slurm.md). Reads
 * its attempt from the environment the executor gave the Slurm job (TY_LAUNCH_URL,
 * TY_LAUNCH_TOKEN, TY_LAUNCH_JOB, TY_LAUNCH_ATTEMPT) and its host from Slurm's (SLURM_NODEID,
 * SLURMD_NODENAME); the token is never an argument, so ps does not show it.
 *
 * Owns: the options, the signals (USR1: the executor's graceful stop; TERM and INT: Slurm ends
 * the step) and the order of the host's life: assignment, staging, container, following,
 * upload, the end's report, removal. Exit status 0 when the container ended 0 or was stopped on
 * the executor's word, else 1 (srun then ends the job's other launchers). Run as the cluster's
 * Epilog (SLURM_SCRIPT_CONTEXT), it removes what a killed launcher of the job left instead.
 */
#include "launcher_int.h"

#include "ty_log.h"
#include "ty_opts.h"
#include "ty_time.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TY_VERSION
#define TY_VERSION "0.0.0"
#endif

static struct launcher launcher_l;

static void launcher_on_signal(int sig)
{
    if (sig == SIGUSR1)
        launcher_l.sig_stop = 1;
    else
        launcher_l.sig_term = 1;
}

/* The attempt from the environment. 0, or -1 after one line on stderr. */
static int launcher_env(struct launcher *l)
{
    const char *url = getenv("TY_LAUNCH_URL"), *tok = getenv("TY_LAUNCH_TOKEN");
    const char *job = getenv("TY_LAUNCH_JOB"), *att = getenv("TY_LAUNCH_ATTEMPT");
    const char *host = getenv("TY_LAUNCH_HOST"), *node = getenv("SLURMD_NODENAME");
    char hn[64] = "", *end;
    long a, h;

    if (!host)
        host = getenv("SLURM_NODEID");
    if (!url || strncmp(url, "http://", 7) != 0 || strlen(url) >= sizeof(l->url) || !tok ||
        !launchwire_token_ok(tok) || !job || !job[0] || strlen(job) >= sizeof(l->job) || !att ||
        !host) {
        fprintf(stderr, "trainyard-launch: TY_LAUNCH_URL (http://...), TY_LAUNCH_TOKEN, "
                        "TY_LAUNCH_JOB, TY_LAUNCH_ATTEMPT and SLURM_NODEID (or TY_LAUNCH_HOST) "
                        "must be set: the executor's Slurm job sets them\n");
        return -1;
    }
    a = strtol(att, &end, 10);
    if (*end || a < 1 || a > 1000000)
        return fprintf(stderr, "trainyard-launch: bad TY_LAUNCH_ATTEMPT '%s'\n", att), -1;
    h = strtol(host, &end, 10);
    if (*end || h < 0 || h >= LAUNCHWIRE_MAX_HOSTS)
        return fprintf(stderr, "trainyard-launch: bad host index '%s'\n", host), -1;
    if (!node || !node[0]) {
        gethostname(hn, sizeof(hn) - 1);
        node = hn;
    }
    snprintf(l->url, sizeof(l->url), "%s", url);
    while (strlen(l->url) > 7 && l->url[strlen(l->url) - 1] == '/')
        l->url[strlen(l->url) - 1] = '\0';
    snprintf(l->token, sizeof(l->token), "%s", tok);
    snprintf(l->job, sizeof(l->job), "%s", job);
    snprintf(l->node, sizeof(l->node), "%s", node);
    snprintf(l->name, sizeof(l->name), "algo-%ld", h + 1);
    l->attempt = (int)a;
    l->host = (int)h;
    return 0;
}

/* The host's life once the wire runs. OUT: end. Returns the exit status. */
static int launcher_life(struct launcher *l, struct launchwire_report *end)
{
    struct ty_err err;
    char reason[LAUNCHWIRE_FAILURE_MAX];
    int stop, grace, upload, gone, forced;
    double silent;

    if (launcher_assignment(l, &err) != 0) {
        snprintf(end->error, sizeof(end->error), "InternalServerError: node %s: %.900s", l->node,
                 err.msg);
        return 1;
    }
    if (launcher_stage(l, reason, sizeof(reason)) != 0 || l->sig_term) {
        snprintf(end->error, sizeof(end->error), "%s",
                 l->sig_term ? "InternalServerError: Slurm ended the job while staging" : reason);
        return 1;
    }
    if (launcher_run(l, reason, sizeof(reason)) != 0) {
        snprintf(end->error, sizeof(end->error), "%s", reason);
        return 1;
    }
    launcher_follow(l, end);
    if (end->error[0])
        return 1;
    launcher_orders(l, &stop, &grace, &upload, &gone, &silent);
    forced = end->stopped == 2; /* Slurm ends it, or the executor is gone: nothing uploaded */
    if (forced) {
        end->stopped = 1;
        return 1;
    }
    launcher_upload(l, end->stopped ? (upload || l->sig_stop) : end->exit_code == 0,
                    end->model_error, sizeof(end->model_error));
    if (end->model_error[0])
        return 1;
    return end->exit_code == 0 || end->stopped ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct ty_opt opts[] = {
        {"docker-host", "TRAINYARD_DOCKER_HOST", NULL,
         "the node's container engine: unix:///path or tcp://host:port (default $DOCKER_HOST, "
         "else unix:///var/run/docker.sock)"},
        {"staging-dir", "TRAINYARD_LAUNCH_STAGING_DIR", "/var/lib/trainyard/launch",
         "each host's /opt/ml is staged under DIR/<job>-<attempt>-algo-<n>/"},
        {"executor-timeout", "TRAINYARD_LAUNCH_EXECUTOR_TIMEOUT", "60",
         "seconds without an answer from the executor after which the container is stopped "
         "and nothing is uploaded (5 to 3600)"},
        {"log-level", "TRAINYARD_LOG_LEVEL", "info", "debug, info, warn or error"},
    };
    static const struct ty_opts_prog prog = {
        "trainyard-launch", TY_VERSION,
        "Runs one host of a training job on a Slurm node, for trainyard's Slurm executor, which "
        "starts it with srun and gives it its attempt in the environment (TY_LAUNCH_URL, "
        "TY_LAUNCH_TOKEN, TY_LAUNCH_JOB, TY_LAUNCH_ATTEMPT).",
        NULL};
    const char *v[4];
    struct launcher *l = &launcher_l;
    struct launchwire_report end = {0};
    struct sigaction sa = {0};
    const char *ctx;
    int status;

    if (ty_opts_parse(&prog, opts, 4, v, argc, argv) != 0 ||
        ty_opts_int(&prog, "executor-timeout", v[2], 5, 3600, &l->orphan_s) != 0)
        return 2;
    if (ty_log_set_level(v[3]) != 0) {
        fprintf(stderr, "trainyard-launch: --log-level must be debug, info, warn or error\n");
        return 2;
    }
    l->docker_host = v[0] ? v[0] : getenv("DOCKER_HOST");
    if (!l->docker_host || !l->docker_host[0])
        l->docker_host = "unix:///var/run/docker.sock";
    l->staging_root = v[1];
    if (!l->staging_root || l->staging_root[0] != '/' || strlen(l->staging_root) > 1024) {
        fprintf(stderr, "trainyard-launch: --staging-dir must be an absolute path (at most "
                        "1024 bytes)\n");
        return 2;
    }
    ctx = getenv("SLURM_SCRIPT_CONTEXT");
    if (ctx && strncmp(ctx, "epilog", 6) == 0) /* the cluster's Epilog (docs/slurm.md) */
        return launcher_epilog(l->docker_host, l->staging_root);
    if (launcher_env(l) != 0)
        return 2;
    sa.sa_handler = launcher_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    if (launcher_wire_start(l) != 0) {
        fprintf(stderr, "trainyard-launch: out of memory\n");
        return 1;
    }
    ty_log(TY_LOG_INFO, "launch.start", "job=%s attempt=%d host=%s node=%s executor=%s", l->job,
           l->attempt, l->name, l->node, l->url);
    status = launcher_life(l, &end);
    if (end.error[0])
        launcher_say(l, "trainyard: %s", end.error);
    launcher_set_end(l, &end);
    launcher_wire_stop(l, 120);
    launcher_cleanup(l);
    ty_log(TY_LOG_INFO, "launch.end", "job=%s host=%s exit=%d stopped=%d error='%s' status=%d",
           l->job, l->name, end.exit_code, end.stopped, end.error, status);
    if (l->have_spec)
        spec_cleanup(&l->sp);
    json_decref(l->asg);
    json_decref(l->pending);
    free(l->inflight);
    curl_global_cleanup();
    return status;
}
