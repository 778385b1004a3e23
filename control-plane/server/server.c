/*
 * server.c - trainyard-server's main: config -> data dir -> redis -> store -> credentials ->
 * agents -> http -> wait for a signal -> shut down in reverse order.
 *
 * Owns: the configuration table (flags, TRAINYARD_* variables, defaults, --help), start-up
 * errors (one clear line and exit status 1), and the shutdown order.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "agent.h"
#include "apimodel.h"
#include "creds.h"
#include "docker.h"
#include "http.h"
#include "janitor.h"
#include "metrics_scrape.h"
#include "password.h"
#include "queue.h"
#include "quota.h"
#include "redis_child.h"
#include "route.h"
#include "s3.h"
#include "s3client.h"
#include "store.h"
#include "tuning.h"
#include "ty_fs.h"
#include "ty_log.h"
#include "ty_mem.h"
#include "ty_opts.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TY_RUNTIME_TAR_DEFAULT
#define TY_RUNTIME_TAR_DEFAULT ""
#endif

/* X(field, flag, env, default, help) */
#define SERVER_CFG(X)                                                                              \
    X(listen, "listen", "TRAINYARD_LISTEN", "127.0.0.1:8080", "HOST:PORT to serve every API on")   \
    X(data_dir, "data-dir", "TRAINYARD_DATA_DIR", "./.trainyard",                                  \
      "state: credentials, private redis, object store")                                           \
    X(staging_dir, "staging-dir", "TRAINYARD_STAGING_DIR", "",                                     \
      "embedded agents stage jobs' /opt/ml under DIR/<HMAC of the job name>/ (0700); default "     \
      "/var/lib/trainyard/staging as root, else $XDG_RUNTIME_DIR/trainyard-staging or "            \
      "/tmp/trainyard-staging-<uid>; containers see this path, so keep it outside the data dir")   \
    X(redis, "redis", "TRAINYARD_REDIS", "",                                                       \
      "redis://[:pw@]host:port[/db] or unix:///path; empty: start a private redis-server")         \
    X(agents, "agents", "TRAINYARD_AGENTS", "1", "agents embedded in the server; 0 = API only")    \
    X(slots, "slots", "TRAINYARD_SLOTS", "4", "jobs each embedded agent runs at once")             \
    AGENT_LEDGER_FLAGS(X)                                                                          \
    X(job_volumes, "job-volumes", "TRAINYARD_JOB_VOLUMES", "auto",                                 \
      "each job host's /opt/ml on a volume of its VolumeSizeInGB: loop (refuse to start "          \
      "without), none, or auto (loop when this host can: root, loop devices, mkfs.ext4)")          \
    X(docker_host, "docker-host", "TRAINYARD_DOCKER_HOST", "",                                     \
      "container engine; default $DOCKER_HOST, else unix:///var/run/docker.sock")                  \
    X(region, "region", "TRAINYARD_REGION", "us-east-1",                                           \
      "the one region served: every signature must be scoped to it; ARNs use it")                  \
    X(account_id, "account-id", "TRAINYARD_ACCOUNT_ID", "000000000000", "account id in ARNs")      \
    X(stop_grace, "stop-grace", "TRAINYARD_STOP_GRACE", "120",                                     \
      "seconds between SIGTERM and SIGKILL when a job is stopped")                                 \
    X(orphan_timeout, "orphan-timeout", "TRAINYARD_ORPHAN_TIMEOUT", "600",                         \
      "seconds a running job may stay without a live agent before it fails; 0 = never (a "         \
      "Stopping job without one is stopped through the engine at once)")                           \
    X(runtime_image_tar, "runtime-image-tar", "TRAINYARD_RUNTIME_IMAGE_TAR",                       \
      TY_RUNTIME_TAR_DEFAULT, "rootfs tarball of the runtime image, imported when missing")        \
    X(endpoint_url, "endpoint-url", "TRAINYARD_ENDPOINT_URL", "",                                  \
      "trainyard's API URL as the embedded agents reach it, relayed into every job container at "  \
      "127.0.0.1:9911; default http://<listen>")                                                   \
    X(threads, "threads", "TRAINYARD_THREADS", "0",                                                \
      "HTTP worker threads; 0 = one per CPU the server may run on, at least 2")                    \
    X(max_conns, "max-connections", "TRAINYARD_MAX_CONNECTIONS", "4096",                           \
      "open HTTP connections in all; beyond, new ones wait in the listen backlog (lowered to "     \
      "fit ulimit -n)")                                                                            \
    X(max_conns_client, "max-connections-per-client", "TRAINYARD_MAX_CONNECTIONS_PER_CLIENT",      \
      "256", "open HTTP connections per client address; beyond, new ones are closed at once")      \
    X(idle_timeout, "idle-timeout", "TRAINYARD_IDLE_TIMEOUT", "60",                                \
      "seconds an HTTP connection may stay without a byte either way before it is closed")         \
    X(header_timeout, "header-timeout", "TRAINYARD_HEADER_TIMEOUT", "30",                          \
      "seconds to receive a request's line and headers, from the connection's start or the end "   \
      "of its previous response; slower ones are closed")                                          \
    X(body_timeout, "body-timeout", "TRAINYARD_BODY_TIMEOUT", "3600",                              \
      "seconds to receive a request body after its headers; 0 = no limit")                         \
    X(s3_orphan_age, "s3-orphan-age", "TRAINYARD_S3_ORPHAN_AGE", "3600",                           \
      "seconds after which an S3 temporary file or multipart part folder that nothing owns "       \
      "(left by a crash) is removed; swept every 10 minutes while the server runs")                \
    X(admin_password_file, "admin-password-file", "TRAINYARD_ADMIN_PASSWORD_FILE", "",             \
      "file whose first line becomes IAM user admin's console password at the first start "        \
      "(when admin has none); sign in at http://<listen>/console/login")                           \
    X(log_level, "log-level", "TRAINYARD_LOG_LEVEL", "info", "debug, info, warn or error")         \
    X(max_training, "max-training-jobs-per-instance-type", "TRAINYARD_MAX_TRAINING_JOBS", "100",   \
      "quota: concurrent InProgress training instances per instance type; 0 = no limit")           \
    X(max_principal, "max-training-instances-per-principal",                                       \
      "TRAINYARD_MAX_TRAINING_INSTANCES_PER_PRINCIPAL", "50",                                      \
      "quota: concurrent InProgress training instances of one IAM user or role session, unless "   \
      "its user or role has the IAM tag trainyard:max-training-instances; 0 = no limit")           \
    X(max_profiles, "max-user-profiles-per-domain", "TRAINYARD_MAX_USER_PROFILES", "100",          \
      "quota: live user profiles per domain; 0 = no limit")                                        \
    X(max_apps, "max-apps-per-user", "TRAINYARD_MAX_APPS_PER_USER", "10",                          \
      "quota: live apps per user profile; 0 = no limit")                                           \
    X(s3_endpoint, "s3-endpoint", "TRAINYARD_S3_ENDPOINT", "",                                     \
      "external S3-compatible store (http[s]://host[:port]) behind the S3 API, channels and "      \
      "artifacts; empty: the embedded store under DATA_DIR/s3")                                    \
    X(s3_access_key, "s3-access-key-id", "TRAINYARD_S3_ACCESS_KEY_ID", "",                         \
      "access key for --s3-endpoint; empty: $AWS_ACCESS_KEY_ID")                                   \
    X(s3_secret_key, "s3-secret-access-key", "TRAINYARD_S3_SECRET_ACCESS_KEY", "",                 \
      "secret key for --s3-endpoint; empty: $AWS_SECRET_ACCESS_KEY (prefer a variable to a flag)") \
    X(s3_region, "s3-region", "TRAINYARD_S3_REGION", "",                                           \
      "region requests to --s3-endpoint are signed for; empty: --region")                          \
    X(metrics_token, "metrics-token", "TRAINYARD_METRICS_TOKEN", "",                               \
      "bearer token GET /metrics (Prometheus) requires; empty: open on a loopback listen "         \
      "address, off (403) otherwise")                                                              \
    X(proxy_listen, "proxy-listen", "TRAINYARD_PROXY_LISTEN", "",                                  \
      "HOST:PORT for agents on other hosts started with --relay-proxy: each connection opens "     \
      "with a PROXY protocol v1 header naming the job it relays; empty: none")                     \
    X(proxy_from, "proxy-from", "TRAINYARD_PROXY_FROM", "",                                        \
      "addresses and CIDR blocks (comma-separated) of those agents: --proxy-listen closes any "    \
      "other peer, and any connection without a valid header")

struct server_cfg {
#define CFG_FIELD(field, flag, env, def, help) const char *field;
    SERVER_CFG(CFG_FIELD)
#undef CFG_FIELD
};

static const struct ty_opt server_opts[] = {
#define CFG_OPT(field, flag, env, def, help) {flag, env, def, help},
    SERVER_CFG(CFG_OPT)
#undef CFG_OPT
};
#define SERVER_NOPTS (sizeof(server_opts) / sizeof(server_opts[0]))

static const struct ty_opts_prog server_prog = {
    "trainyard-server", TY_VERSION, "A SageMaker-compatible training control plane.",
    "Admin keys: TRAINYARD_ADMIN_ACCESS_KEY_ID and TRAINYARD_ADMIN_SECRET_ACCESS_KEY set them;\n"
    "otherwise they are generated at first start and written to <data-dir>/credentials."};

static int server_parse(int argc, char **argv, struct server_cfg *cfg)
{
    const char *v[SERVER_NOPTS];
    size_t i = 0;

    if (ty_opts_parse(&server_prog, server_opts, SERVER_NOPTS, v, argc, argv) != 0)
        return -1;
#define CFG_SET(field, flag, env, def, help) cfg->field = v[i++];
    SERVER_CFG(CFG_SET)
#undef CFG_SET
    return 0;
}

static int server_int(const char *name, const char *v, int lo, int hi, int *out)
{
    return ty_opts_int(&server_prog, name, v, lo, hi, out);
}

/* The engine and the embedded agents as /healthz and /metrics see them (route.h): one engine
   connection shared by the worker threads, opened on first use, dropped when it fails. */
struct server_engine {
    const char *host;
    struct agent **agents;
    int nagents;
    pthread_mutex_t mu; /* guards d */
    struct docker *d;
};

static int server_engine_ping(void *ud, char *why, size_t n)
{
    struct server_engine *e = ud;
    struct ty_err err;
    int ok;

    ty_err_clear(&err);
    pthread_mutex_lock(&e->mu);
    if (!e->d)
        e->d = docker_open(e->host, &err);
    ok = e->d && docker_ping(e->d, &err) == 0;
    if (!ok) {
        docker_close(e->d);
        e->d = NULL;
        snprintf(why, n, "%s", err.msg);
    }
    pthread_mutex_unlock(&e->mu);
    return ok;
}

static json_t *server_engine_agents(void *ud)
{
    struct server_engine *e = ud;
    json_t *a = json_array();

    for (int i = 0; a && i < e->nagents; i++) {
        json_t *st = agent_status(e->agents[i]);
        if (st)
            json_array_append_new(a, st);
    }
    return a;
}

static void server_die(const struct ty_err *err)
{
    fprintf(stderr, "trainyard-server: %s\n", err->msg[0] ? err->msg : ty_strerror(err->code));
}

/* The numeric options, checked (one clear line on stderr for a bad one). */
struct server_num {
    int nagents, threads, grace, slots, orphan_s, s3_orphan_s;
    struct http_limits limits;
};

/* The default number of HTTP threads: one per CPU this process may run on, at least 2. A request
   rarely waits (the principal cache, the watched Describe memo), and threads beyond the CPUs only
   queue behind each other: bench/README.md has the p99 figures. */
static int server_default_threads(void)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0)
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 2 ? 2 : n > 256 ? 256 : n;
}

/* 1 when r is a region name as AWS spells one: lower case, digits, '-', at most 63 bytes (a
   scope's region is compared byte for byte, so US-EAST-1 is another region). */
static int server_region_ok(const char *r)
{
    size_t n = strlen(r);
    if (n == 0 || n > 63 || r[0] == '-' || r[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
            return 0;
    return 1;
}

/* Parses the numeric options of cfg into OUT: n and configures the quotas. 0 or -1. */
static int server_numbers(const struct server_cfg *c, struct server_num *n)
{
    const struct server_cfg cfg = *c;
    struct quota_limits ql;
    int qt, qp, qa, qpr;

    if (server_int("agents", cfg.agents, 0, 64, &n->nagents) ||
        server_int("threads", cfg.threads, 0, 256, &n->threads) ||
        server_int("stop-grace", cfg.stop_grace, 0, 86400, &n->grace) ||
        server_int("orphan-timeout", cfg.orphan_timeout, 0, 30 * 86400, &n->orphan_s) ||
        server_int("slots", cfg.slots, 1, 1024, &n->slots) ||
        server_int("max-connections", cfg.max_conns, 1, 1000000, &n->limits.max_connections) ||
        server_int("max-connections-per-client", cfg.max_conns_client, 1, 1000000,
                   &n->limits.max_per_client) ||
        server_int("idle-timeout", cfg.idle_timeout, 1, 86400, &n->limits.idle_timeout_s) ||
        server_int("header-timeout", cfg.header_timeout, 1, 86400, &n->limits.header_timeout_s) ||
        server_int("body-timeout", cfg.body_timeout, 0, 7 * 86400, &n->limits.body_timeout_s) ||
        server_int("s3-orphan-age", cfg.s3_orphan_age, 1, 30 * 86400, &n->s3_orphan_s))
        return -1;
    if (n->threads == 0)
        n->threads = server_default_threads();
    if (!server_region_ok(cfg.region)) {
        fprintf(stderr,
                "trainyard-server: --region %s: not a region name (lower-case letters, "
                "digits and '-', as us-east-1)\n",
                cfg.region);
        return -1;
    }
    if (server_int("max-training-jobs-per-instance-type", cfg.max_training, 0, 1000000, &qt) ||
        server_int("max-user-profiles-per-domain", cfg.max_profiles, 0, 1000000, &qp) ||
        server_int("max-apps-per-user", cfg.max_apps, 0, 1000000, &qa) ||
        server_int("max-training-instances-per-principal", cfg.max_principal, 0, 1000000, &qpr))
        return -1;
    ql.training_instances_per_principal = qpr;
    ql.training_instances_per_type = qt;
    ql.profiles_per_domain = qp;
    ql.apps_per_user = qa;
    quota_configure(&ql);
    return 0;
}

/* The external store of --s3-endpoint, its keys and region, probed once. 0, or -1 with err. */
static int server_s3_remote(const struct server_cfg *c, struct s3c_config *out, struct ty_err *err)
{
    const struct server_cfg cfg = *c;
    struct s3c_config s3_remote = {0};
    struct s3c *probe;

    s3_remote.endpoint = cfg.s3_endpoint;
    s3_remote.access_key = cfg.s3_access_key[0] ? cfg.s3_access_key : getenv("AWS_ACCESS_KEY_ID");
    s3_remote.secret_key =
        cfg.s3_secret_key[0] ? cfg.s3_secret_key : getenv("AWS_SECRET_ACCESS_KEY");
    s3_remote.region = cfg.s3_region[0] ? cfg.s3_region : cfg.region;
    if (!(probe = s3c_new(&s3_remote, err)))
        return -1;
    s3c_free(probe);
    *out = s3_remote;
    return 0;
}

/* Where the server keeps things, as the agents need them. */
struct server_paths {
    const char *data_dir, *redis_url, *docker_host, *s3_dir, *endpoint;
};

/* Starts the embedded agents into agents[0..n->nagents). 0, or -1 with err (the ones started
   are in agents, for the caller to stop). */
static int server_start_agents(const struct server_cfg *c, const struct server_num *n,
                               const struct server_paths *p, const struct s3c_config *s3_remote,
                               struct agent **agents, struct ty_err *err)
{
    char agent_id[128];

    for (int i = 0; i < n->nagents; i++) {
        struct agent_config ac;
        char host[64];
        memset(&ac, 0, sizeof(ac));
        gethostname(host, sizeof(host));
        host[sizeof(host) - 1] = '\0';
        snprintf(agent_id, sizeof(agent_id), "%s-%d-%d", host, (int)getpid(), i + 1);
        ac.id = agent_id;
        ac.redis_url = p->redis_url;
        ac.docker_host = p->docker_host;
        ac.data_dir = p->data_dir;
        ac.staging_dir = c->staging_dir[0] ? c->staging_dir : NULL;
        ac.s3_dir = p->s3_dir;
        ac.runtime_tar = c->runtime_image_tar;
        ac.runtime_image = "trainyard/runtime:" TY_VERSION;
        ac.endpoint_url = p->endpoint;
        ac.region = c->region;
        ac.job_volumes = c->job_volumes;
        if (agent_resources_parse(&ac, c->cpus, c->memory, c->gpus, c->cpu_fallback, c->overcommit,
                                  err) != 0)
            return -1;
        ac.slots = n->slots;
        ac.stop_grace_s = n->grace;
        ac.heartbeat_ttl_s = 10;
        ac.s3_remote = s3_remote;
        agents[i] = agent_start(&ac, err);
        if (!agents[i])
            return -1;
    }
    return 0;
}

/* The engine's address (--docker-host, $DOCKER_HOST, the default socket) into OUT: docker
   (size dn), and the API's URL as the agents reach it into OUT: endpoint (size en). */
static void server_addresses(const struct server_cfg *cfg, char *docker, size_t dn, char *endpoint,
                             size_t en)
{
    const char *env = getenv("DOCKER_HOST");

    if (cfg->docker_host[0])
        snprintf(docker, dn, "%s", cfg->docker_host);
    else if (env && *env)
        snprintf(docker, dn, "%s", env);
    else
        snprintf(docker, dn, "unix:///var/run/docker.sock");
    if (cfg->endpoint_url[0])
        snprintf(endpoint, en, "%s", cfg->endpoint_url);
    else
        snprintf(endpoint, en, "http://%s", cfg->listen);
}

/* What the router is handed (route.h): OUT: rctx, with reng (the engine's callbacks over seng)
   as its engine. Every pointer is borrowed and must outlive the HTTP server. */
static void server_front_ctx(const struct server_cfg *cfg, const struct apimodel *model,
                             const char *redis_url, const char *s3_dir,
                             const struct s3c_config *s3_remote, struct server_engine *seng,
                             struct front_engine *reng, struct front_ctx *rctx)
{
    memset(rctx, 0, sizeof(*rctx));
    rctx->model = model;
    rctx->redis_url = redis_url;
    rctx->region = cfg->region;
    rctx->account_id = cfg->account_id;
    reng->host = seng->nagents > 0 ? seng->host : NULL;
    reng->nagents = seng->nagents;
    reng->ping = server_engine_ping;
    reng->agents = server_engine_agents;
    reng->ud = seng;
    rctx->engine = reng;
    rctx->s3_dir = s3_dir;
    rctx->s3_remote = s3_remote;
    rctx->metrics_token = cfg->metrics_token;
    if (!cfg->metrics_token[0] && !metrics_listen_loopback(cfg->listen)) {
        rctx->metrics_token = METRICS_TOKEN_OFF;
        ty_log(TY_LOG_WARN, "server.metrics.off",
               "listen=%s note='/metrics answers 403 until --metrics-token is set'", cfg->listen);
    }
}

int main(int argc, char **argv)
{
    struct server_cfg cfg;
    struct ty_err err;
    char data_dir[PATH_MAX], redis_url[4200], docker_host[1024], s3_dir[PATH_MAX + 8];
    char endpoint[300];
    struct server_num num;
    struct server_paths paths;
    int sig, status = 1, mk;
    struct janitor *janitor = NULL;
    struct tuning_driver *tuning = NULL;
    struct tuning_config tc;
    struct janitor_config jc;
    struct redis_child *redis_child = NULL;
    struct store *store = NULL;
    struct apimodel *model = NULL;
    struct agent **agents = NULL;
    struct http_server *http = NULL;
    struct front_ctx rctx;
    struct front_engine reng;
    struct server_engine seng = {NULL, NULL, 0, PTHREAD_MUTEX_INITIALIZER, NULL};
    struct s3c_config s3_remote = {0};
    sigset_t sigs;

    ty_err_clear(&err);
    if (server_parse(argc, argv, &cfg) != 0)
        return 1;
    if (ty_log_set_level(cfg.log_level) != 0) {
        fprintf(stderr, "trainyard-server: --log-level must be debug, info, warn or error\n");
        return 1;
    }
    /* before any thread starts: the HTTP workers share malloc's arenas (ty_mem.h) */
    ty_mem_init(TY_MEM_ARENAS);
    if (server_numbers(&cfg, &num) != 0)
        return 1;

    if (cfg.s3_endpoint[0] && server_s3_remote(&cfg, &s3_remote, &err) != 0) {
        server_die(&err);
        return 1;
    }

    /* signals are taken by sigwait below; every thread inherits the mask */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    mk = ty_mkdirs(cfg.data_dir, 0755);
    if (mk != 0 || !realpath(cfg.data_dir, data_dir)) {
        fprintf(stderr, "trainyard-server: cannot create --data-dir '%s': %s\n", cfg.data_dir,
                strerror(mk != 0 ? -mk : errno));
        return 1;
    }
    snprintf(s3_dir, sizeof(s3_dir), "%s/s3", data_dir);
    ty_mkdirs(s3_dir, 0755);

    model = apimodel_load_embedded(&err);
    if (!model)
        goto fail;
    if (cfg.redis[0]) {
        snprintf(redis_url, sizeof(redis_url), "%s", cfg.redis);
    } else if (!(redis_child = redis_child_start(data_dir, redis_url, sizeof(redis_url), &err))) {
        goto fail;
    }
    store = store_open(redis_url, &err);
    if (!store)
        goto fail;
    if (queue_init(store, &err) != 0 || creds_bootstrap(store, data_dir, cfg.account_id, &err))
        goto fail;
    if (cfg.admin_password_file[0] && password_bootstrap(store, cfg.admin_password_file, &err) != 0)
        goto fail;

    server_addresses(&cfg, docker_host, sizeof(docker_host), endpoint, sizeof(endpoint));

    paths.data_dir = data_dir;
    paths.redis_url = redis_url;
    paths.docker_host = docker_host;
    paths.s3_dir = s3_dir;
    paths.endpoint = endpoint;
    agents = calloc((size_t)num.nagents + 1, sizeof(*agents));
    if (!agents || server_start_agents(&cfg, &num, &paths, cfg.s3_endpoint[0] ? &s3_remote : NULL,
                                       agents, &err) != 0)
        goto fail;

    /* jobs whose agent is gone while no agent is live: stopped, or failed after orphan_s */
    memset(&jc, 0, sizeof(jc));
    jc.redis_url = redis_url;
    jc.docker_host = docker_host;
    jc.stop_grace_s = num.grace;
    jc.orphan_timeout_s = num.orphan_s;
    jc.heartbeat_ttl_s = 10;
    janitor = janitor_start(&jc, &err);
    if (!janitor)
        goto fail;

    /* hyperparameter tuning jobs: one pass per second, state in Redis (tuning.h) */
    memset(&tc, 0, sizeof(tc));
    tc.redis_url = redis_url;
    tc.model = model;
    tc.s3_dir = s3_dir;
    tc.s3_remote = cfg.s3_endpoint[0] ? &s3_remote : NULL;
    if (!(tuning = tuning_driver_start(&tc, &err)))
        goto fail;

    seng.host = docker_host;
    seng.agents = agents;
    seng.nagents = num.nagents;
    server_front_ctx(&cfg, model, redis_url, s3_dir, cfg.s3_endpoint[0] ? &s3_remote : NULL, &seng,
                     &reng, &rctx);
    rctx.s3_orphan_age_s = num.s3_orphan_s;
    http = http_start(cfg.listen, num.threads, &num.limits, route_handle, &rctx, &err);
    if (!http)
        goto fail;
    http_set_prepare(http, s3_prepare);
    if ((cfg.proxy_listen[0] || cfg.proxy_from[0]) &&
        (!cfg.proxy_listen[0] || !cfg.proxy_from[0])) {
        ty_err_set(&err, TY_EINVAL, NULL, "--proxy-listen and --proxy-from go together");
        goto fail;
    }
    if (cfg.proxy_listen[0] && http_proxy_listen(http, cfg.proxy_listen, cfg.proxy_from, &err))
        goto fail;
    ty_log(TY_LOG_INFO, "server.ready",
           "listen=%s port=%d proxy_port=%d data_dir=%s redis=%s agents=%d docker_host=%s s3=%s "
           "version=%s",
           cfg.listen, http_port(http), http_proxy_port(http), data_dir,
           cfg.redis[0] ? "external" : "private", num.nagents, docker_host,
           cfg.s3_endpoint[0] ? cfg.s3_endpoint : "embedded", TY_VERSION);

    sig = ty_mem_sigwait(&sigs); /* trims malloc's free pages once a minute meanwhile */
    ty_log(TY_LOG_INFO, "server.stopping", "signal=%d", sig);
    status = 0;
    goto out;
fail:
    server_die(&err);
out:
    http_stop(http);
    docker_close(seng.d);
    tuning_driver_stop(tuning);
    janitor_stop(janitor);
    for (int i = 0; agents && i < num.nagents; i++)
        agent_stop(agents[i]);
    free(agents);
    store_close(store);
    apimodel_free(model);
    redis_child_stop(redis_child);
    if (status == 0)
        ty_log(TY_LOG_INFO, "server.stopped", "status=0");
    return status;
}
