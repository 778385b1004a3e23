/*
 * main.c - trainyard-agent: one training agent for a host, talking to a shared Redis and the
 * host's container engine. The same agent runs embedded in trainyard-server (--agents N).
 *
 * Owns: the flag table (flags > TRAINYARD_* env > defaults), --help, signal handling
 * (SIGTERM/SIGINT -> agent_stop, exit 0). Errors at start-up: one line on stderr, exit 1.
 */
#include "agent.h"
#include "s3client.h"
#include "ty_err.h"
#include "ty_log.h"
#include "ty_mem.h"
#include "ty_opts.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TY_VERSION
#define TY_VERSION "0.0.0"
#endif

/* X(field, flag, env, default, help); a NULL default is computed below or left unset. */
#define MAIN_FLAGS(X)                                                                              \
    X(redis, "redis", "TRAINYARD_REDIS", "redis://127.0.0.1:6379",                                 \
      "Redis URL: redis://[:password@]host[:port][/db] or unix:///path?db=N")                      \
    X(docker_host, "docker-host", "TRAINYARD_DOCKER_HOST", NULL,                                   \
      "container engine: unix:///path or tcp://host:port (default $DOCKER_HOST, else "             \
      "unix:///var/run/docker.sock)")                                                              \
    X(data_dir, "data-dir", "TRAINYARD_DATA_DIR", "./.trainyard",                                  \
      "agent state (staging.key) lives in DIR")                                                    \
    X(staging_dir, "staging-dir", "TRAINYARD_STAGING_DIR", NULL,                                   \
      "jobs' /opt/ml trees are staged under DIR/<HMAC of the job name>/, created 0700 (default "   \
      "/var/lib/trainyard/staging as root, else $XDG_RUNTIME_DIR/trainyard-staging or "            \
      "/tmp/trainyard-staging-<uid>); keep it outside the data dir: containers see its path")      \
    X(s3_dir, "s3-dir", "TRAINYARD_S3_DIR", NULL,                                                  \
      "local object store root, <bucket>/<key> (default DATA_DIR/s3)")                             \
    X(id, "id", "TRAINYARD_AGENT_ID", NULL, "agent id (default <hostname>-<pid>-0)")               \
    X(slots, "slots", "TRAINYARD_SLOTS", "1", "jobs run at once")                                  \
    AGENT_LEDGER_FLAGS(X)                                                                          \
    X(stop_grace, "stop-grace", "TRAINYARD_STOP_GRACE", "120",                                     \
      "seconds between SIGTERM and SIGKILL on Stop and MaxRuntime")                                \
    X(heartbeat_ttl, "heartbeat-ttl", "TRAINYARD_HEARTBEAT_TTL", "10",                             \
      "seconds a heartbeat lives; dead agents' jobs are reclaimed after 3x")                       \
    X(runtime_tar, "runtime-image-tar", "TRAINYARD_RUNTIME_IMAGE_TAR", NULL,                       \
      "rootfs tarball imported as the runtime image when the engine lacks it")                     \
    X(runtime_image, "runtime-image", "TRAINYARD_RUNTIME_IMAGE", "trainyard/runtime:" TY_VERSION,  \
      "name of the runtime image")                                                                 \
    X(endpoint_url, "endpoint-url", "TRAINYARD_ENDPOINT_URL", NULL,                                \
      "trainyard's API URL as this agent reaches it, relayed into every job container at "         \
      "127.0.0.1:9911 (AWS_ENDPOINT_URL, role credentials); unset: neither inside")                \
    X(relay_proxy, "relay-proxy", "TRAINYARD_RELAY_PROXY", NULL,                                   \
      "for an agent on another host than the server: the server's --proxy-listen URL; job relays " \
      "connect there, each connection opening with a PROXY v1 header naming the job's address")    \
    X(region, "region", "TRAINYARD_REGION", "us-east-1", "AWS_REGION given to containers")         \
    X(job_volumes, "job-volumes", "TRAINYARD_JOB_VOLUMES", "auto",                                 \
      "each job host's /opt/ml on a volume of its VolumeSizeInGB: loop (refuse to start "          \
      "without), none, or auto (loop when this host can: root, loop devices, mkfs.ext4)")          \
    X(s3_endpoint, "s3-endpoint", "TRAINYARD_S3_ENDPOINT", NULL,                                   \
      "external S3-compatible store for channels and artifacts (http[s]://host[:port]); unset: "   \
      "the local store under --s3-dir")                                                            \
    X(s3_access_key, "s3-access-key-id", "TRAINYARD_S3_ACCESS_KEY_ID", NULL,                       \
      "access key for --s3-endpoint (default $AWS_ACCESS_KEY_ID)")                                 \
    X(s3_secret_key, "s3-secret-access-key", "TRAINYARD_S3_SECRET_ACCESS_KEY", NULL,               \
      "secret key for --s3-endpoint (default $AWS_SECRET_ACCESS_KEY; prefer the variable)")        \
    X(s3_region, "s3-region", "TRAINYARD_S3_REGION", NULL,                                         \
      "region requests to --s3-endpoint are signed for (default --region)")                        \
    X(executor, "executor", "TRAINYARD_EXECUTOR", "engine",                                        \
      "where jobs run: engine (this host's container engine) or slurm (a Slurm cluster through "   \
      "slurmrestd, one node per instance: docs/slurm.md)")                                         \
    X(slurm_url, "slurm-url", "TRAINYARD_SLURM_URL", NULL, "slurmrestd's URL, http://host:port")   \
    X(slurm_api, "slurm-api", "TRAINYARD_SLURM_API", "v0.0.38", "slurmrestd's OpenAPI plugin")     \
    X(slurm_user, "slurm-user", "TRAINYARD_SLURM_USER", "root", "the Slurm user jobs run as")      \
    X(slurm_jwt_key, "slurm-jwt-key", "TRAINYARD_SLURM_JWT_KEY", NULL,                             \
      "the cluster's JWT key file (AuthAltParameters=jwt_key=): tokens are minted from it")        \
    X(slurm_token_file, "slurm-token-file", "TRAINYARD_SLURM_TOKEN_FILE", NULL,                    \
      "instead of --slurm-jwt-key: a file holding a token (scontrol token), read again each "      \
      "minute")                                                                                    \
    X(slurm_map, "slurm-instance-map", "TRAINYARD_SLURM_INSTANCE_MAP", NULL,                       \
      "JSON file: instance type -> {partition, gpus, gres} (default: partition ml-p3-2xlarge "     \
      "for ml.p3.2xlarge, the type's GPUs)")                                                       \
    X(slurm_launcher, "slurm-launcher", "TRAINYARD_SLURM_LAUNCHER",                                \
      "/usr/local/bin/trainyard-launch", "trainyard-launch's path on the nodes")                   \
    X(launch_listen, "launch-listen", "TRAINYARD_LAUNCH_LISTEN", "127.0.0.1:0",                    \
      "HOST:PORT the launchers' reports are taken on (port 0: any free one)")                      \
    X(launch_url, "launch-url", "TRAINYARD_LAUNCH_URL", NULL,                                      \
      "that listener as the nodes reach it (default http://<launch-listen>)")                      \
    X(slurm_node_docker_host, "slurm-node-docker-host", "TRAINYARD_SLURM_NODE_DOCKER_HOST", NULL,  \
      "the nodes' container engine for the launchers (default: theirs)")                           \
    X(slurm_node_staging_dir, "slurm-node-staging-dir", "TRAINYARD_SLURM_NODE_STAGING_DIR", NULL,  \
      "where the launchers stage /opt/ml on the nodes (default: theirs)")                          \
    X(slurm_workdir, "slurm-workdir", "TRAINYARD_SLURM_WORKDIR", "/tmp",                           \
      "the Slurm jobs' working folder on the nodes (their output files land there)")               \
    X(log_level, "log-level", "TRAINYARD_LOG_LEVEL", "info", "debug, info, warn or error")

struct main_cfg {
#define MAIN__FIELD(field, flag, env, def, help) const char *field;
    MAIN_FLAGS(MAIN__FIELD)
#undef MAIN__FIELD
};

static const struct ty_opt main_opts[] = {
#define MAIN__OPT(field, flag, env, def, help) {flag, env, def, help},
    MAIN_FLAGS(MAIN__OPT)
#undef MAIN__OPT
};
#define MAIN_NOPTS (sizeof(main_opts) / sizeof(main_opts[0]))

static const struct ty_opts_prog main_prog = {
    "trainyard-agent", TY_VERSION,
    "Takes training jobs from trainyard's Redis queue and runs them in containers.", NULL};

static int main_parse(int argc, char **argv, struct main_cfg *c)
{
    const char *v[MAIN_NOPTS], *dh;
    size_t i = 0;

    if (ty_opts_parse(&main_prog, main_opts, MAIN_NOPTS, v, argc, argv) != 0)
        return -1;
#define MAIN__SET(field, flag, env, def, help) c->field = v[i++];
    MAIN_FLAGS(MAIN__SET)
#undef MAIN__SET
    if (!c->docker_host) {
        dh = getenv("DOCKER_HOST");
        c->docker_host = dh && *dh ? dh : "unix:///var/run/docker.sock";
    }
    return 0;
}

/* The Redis URL with any password masked, for the start-up log. */
static void main_mask_url(const char *url, char *out, size_t n)
{
    const char *at = strchr(url, '@'), *scheme = strstr(url, "://");

    if (at && scheme && scheme < at)
        snprintf(out, n, "%.*s://***%s", (int)(scheme - url), url, at);
    else
        snprintf(out, n, "%s", url);
}

int main(int argc, char **argv)
{
    struct main_cfg c;
    struct agent_config ac = {0};
    struct agent *a;
    struct ty_err err;
    sigset_t set;
    char masked[512];
    int sig = 0;

    if (main_parse(argc, argv, &c) != 0)
        return 1;
    if (ty_log_set_level(c.log_level) != 0) {
        fprintf(stderr, "trainyard-agent: invalid --log-level '%s'\n", c.log_level);
        return 1;
    }
    /* before any thread starts: the job threads share malloc's arenas (ty_mem.h) */
    ty_mem_init(TY_MEM_ARENAS);
    if (ty_opts_int(&main_prog, "slots", c.slots, 1, 1024, &ac.slots) != 0 ||
        ty_opts_int(&main_prog, "stop-grace", c.stop_grace, 1, 86400, &ac.stop_grace_s) != 0 ||
        ty_opts_int(&main_prog, "heartbeat-ttl", c.heartbeat_ttl, 1, 3600, &ac.heartbeat_ttl_s) !=
            0)
        return 1;
    ac.id = c.id;
    ac.redis_url = c.redis;
    ac.docker_host = c.docker_host;
    ac.data_dir = c.data_dir;
    ac.staging_dir = c.staging_dir;
    ac.s3_dir = c.s3_dir;
    ac.runtime_tar = c.runtime_tar;
    ac.runtime_image = c.runtime_image;
    ac.endpoint_url = c.endpoint_url;
    ac.relay_proxy = c.relay_proxy;
    ac.region = c.region;
    ac.job_volumes = c.job_volumes;
    {
        struct ty_err rerr;
        if (agent_resources_parse(&ac, c.cpus, c.memory, c.gpus, c.cpu_fallback, c.overcommit,
                                  &rerr) != 0) {
            fprintf(stderr, "trainyard-agent: %s\n", rerr.msg);
            return 1;
        }
    }
    struct agent_slurm sl = {.url = c.slurm_url,
                             .api = c.slurm_api,
                             .user = c.slurm_user,
                             .jwt_key = c.slurm_jwt_key,
                             .token_file = c.slurm_token_file,
                             .instance_map = c.slurm_map,
                             .launcher = c.slurm_launcher,
                             .listen = c.launch_listen,
                             .launch_url = c.launch_url,
                             .node_docker_host = c.slurm_node_docker_host,
                             .node_staging_dir = c.slurm_node_staging_dir,
                             .workdir = c.slurm_workdir};
    if (strcmp(c.executor, "slurm") == 0) {
        ac.slurm = &sl;
    } else if (strcmp(c.executor, "engine") != 0) {
        fprintf(stderr, "trainyard-agent: invalid --executor '%s' (engine or slurm)\n", c.executor);
        return 1;
    }
    struct s3c_config s3r = {0};
    if (c.s3_endpoint && *c.s3_endpoint) {
        s3r.endpoint = c.s3_endpoint;
        s3r.access_key = c.s3_access_key ? c.s3_access_key : getenv("AWS_ACCESS_KEY_ID");
        s3r.secret_key = c.s3_secret_key ? c.s3_secret_key : getenv("AWS_SECRET_ACCESS_KEY");
        s3r.region = c.s3_region ? c.s3_region : c.region;
        ac.s3_remote = &s3r;
    }

    main_mask_url(c.redis, masked, sizeof(masked));
    ty_log(
        TY_LOG_INFO, "agent.config",
        "redis='%s' docker_host='%s' data_dir='%s' staging_dir='%s' s3_dir='%s' id='%s' slots=%d "
        "stop_grace_s=%d heartbeat_ttl_s=%d runtime_image='%s' runtime_tar='%s' "
        "endpoint_url='%s' relay_proxy='%s' region='%s' s3_endpoint='%s'",
        masked, c.docker_host, c.data_dir, c.staging_dir ? c.staging_dir : "",
        c.s3_dir ? c.s3_dir : "", c.id ? c.id : "", ac.slots, ac.stop_grace_s, ac.heartbeat_ttl_s,
        c.runtime_image, c.runtime_tar ? c.runtime_tar : "", c.endpoint_url ? c.endpoint_url : "",
        c.relay_proxy ? c.relay_proxy : "", c.region, c.s3_endpoint ? c.s3_endpoint : "");

    /* Every thread inherits the blocked set; main alone takes the signals with sigwait. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    ty_err_clear(&err);
    a = agent_start(&ac, &err);
    if (!a) {
        fprintf(stderr, "trainyard-agent: %s\n", err.msg[0] ? err.msg : ty_strerror(err.code));
        return 1;
    }
    sig = ty_mem_sigwait(&set); /* trims malloc's free pages once a minute meanwhile */
    ty_log(TY_LOG_INFO, "agent.signal", "signal=%d", sig);
    agent_stop(a);
    return 0;
}
