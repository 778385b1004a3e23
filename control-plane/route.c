/*
 * route.c - from an HTTP request to an operation and back.
 *
 * Order of checks, as AWS does it: health and the container credentials endpoint (no SigV4)
 * -> which service the request is for, from its shape (auth_service_of: S3, STS and IAM go to
 * their own front ends) -> signature present -> scope names the service, known access key,
 * session token, valid signature and clock (auth_verify) -> operation known -> body is a JSON
 * object -> the model's validation -> the handler. Every error leaves here as
 * {"__type": <AWS name>, "message": ...} with the x-amzn-ErrorType header, which botocore
 * and the CLI both understand.
 */
#include "route.h"

#include "agent.h"
#include "auth.h"
#include "authz.h"
#include "console.h"
#include "docker.h"
#include "metrics.h"
#include "metrics_scrape.h"
#include "ops/cloudwatch.h"
#include "ops/iamapi.h"
#include "ops/ops.h"
#include "ops/s3.h"
#include "ops/sts.h"
#include "queue.h"
#include "session.h"
#include "sigv4.h"
#include "store.h"
#include "ty_log.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

struct route_op {
    const char *service; /* "sagemaker" | "logs" */
    const char *name;
    op_fn fn;
};

/* The operation table: every operation trainyard serves. */
static const struct route_op route_ops[] = {
    {"sagemaker", "CreateTrainingJob", op_training_create},
    {"sagemaker", "DescribeTrainingJob", op_training_describe},
    {"sagemaker", "ListTrainingJobs", op_training_list},
    {"sagemaker", "StopTrainingJob", op_training_stop},
    {"sagemaker", "UpdateTrainingJob", op_training_update},
    {"sagemaker", "DeleteTrainingJob", op_training_delete},
    /* hyperparameter tuning (ops/tuning.c) */
    {"sagemaker", "CreateHyperParameterTuningJob", op_tuning_create},
    {"sagemaker", "DescribeHyperParameterTuningJob", op_tuning_describe},
    {"sagemaker", "ListHyperParameterTuningJobs", op_tuning_list},
    {"sagemaker", "StopHyperParameterTuningJob", op_tuning_stop},
    {"sagemaker", "ListTrainingJobsForHyperParameterTuningJob", op_tuning_list_training_jobs},
    {"sagemaker", "AddTags", op_tags_add},
    {"sagemaker", "ListTags", op_tags_list},
    {"sagemaker", "DeleteTags", op_tags_delete},
    /* Studio: domains, user profiles, apps, presigned domain URLs (ops/studio.c) */
    {"sagemaker", "CreateDomain", op_studio_create_domain},
    {"sagemaker", "DescribeDomain", op_studio_describe_domain},
    {"sagemaker", "ListDomains", op_studio_list_domains},
    {"sagemaker", "UpdateDomain", op_studio_update_domain},
    {"sagemaker", "DeleteDomain", op_studio_delete_domain},
    {"sagemaker", "CreateUserProfile", op_studio_create_user_profile},
    {"sagemaker", "DescribeUserProfile", op_studio_describe_user_profile},
    {"sagemaker", "ListUserProfiles", op_studio_list_user_profiles},
    {"sagemaker", "UpdateUserProfile", op_studio_update_user_profile},
    {"sagemaker", "DeleteUserProfile", op_studio_delete_user_profile},
    {"sagemaker", "CreateApp", op_studio_create_app},
    {"sagemaker", "DescribeApp", op_studio_describe_app},
    {"sagemaker", "ListApps", op_studio_list_apps},
    {"sagemaker", "DeleteApp", op_studio_delete_app},
    {"sagemaker", "CreatePresignedDomainUrl", op_studio_create_presigned_url},
    {"logs", "DescribeLogGroups", op_logs_describe_groups},
    {"logs", "DescribeLogStreams", op_logs_describe_streams},
    {"logs", "GetLogEvents", op_logs_get_events},
    {"logs", "FilterLogEvents", op_logs_filter_events},
};

size_t route_op_count(void)
{
    return sizeof(route_ops) / sizeof(route_ops[0]);
}

const char *route_op_at(size_t i, const char **service)
{
    if (i >= route_op_count())
        return NULL;
    *service = route_ops[i].service;
    return route_ops[i].name;
}

op_fn route_op_find(const char *service, const char *op)
{
    for (size_t i = 0; service && op && i < route_op_count(); i++)
        if (strcmp(route_ops[i].service, service) == 0 && strcmp(route_ops[i].name, op) == 0)
            return route_ops[i].fn;
    return NULL;
}

static __thread struct store *route__store;
static __thread struct docker *route__docker;

/* Each worker thread's connections are closed when MHD ends the thread (pthread key
   destructor), so a clean shutdown leaves nothing behind. */
static pthread_key_t route__key;
static pthread_once_t route__once = PTHREAD_ONCE_INIT;

static void route__thread_exit(void *unused)
{
    (void)unused;
    store_close(route__store);
    route__store = NULL;
    docker_close(route__docker);
    route__docker = NULL;
}

static void route__key_init(void)
{
    pthread_key_create(&route__key, route__thread_exit);
}

static struct store *route__thread_store(const struct route_ctx *rc, struct ty_err *err)
{
    if (!route__store) {
        pthread_once(&route__once, route__key_init);
        pthread_setspecific(route__key, (void *)1);
        route__store = store_open(rc->redis_url, err);
    }
    return route__store;
}

static void route__json(struct http_response *resp, int status, json_t *body, const char *ctype)
{
    resp->status = status;
    resp->content_type = ctype;
    resp->body = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(15));
    resp->len = resp->body ? strlen(resp->body) : 0;
}

static void route__error(struct http_request *req, struct http_response *resp,
                         const struct ty_err *err, const char *ctype)
{
    const char *name = ty_err_aws_name(err->code);
    json_t *body = json_pack("{s:s,s:s}", "__type", name, "message",
                             err->msg[0] ? err->msg : ty_strerror(err->code));
    route__json(resp, ty_err_http_status(err->code), body, ctype);
    json_decref(body);
    http_response_header(resp, "x-amzn-ErrorType", name);
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
    ty_log(TY_LOG_DEBUG, "http.error", "req=%s code=%s msg=\"%s\"", req->request_id, name,
           err->msg);
}

static double route__now(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)(tv.tv_usec / 1000) / 1000.0;
}

/*
 * GET /healthz: 200 {"status": "ok"} or 503 {"status": "degraded", "reasons": [...]} while
 * Redis, the engine (when this server runs agents) or every agent is unreachable; an API-only
 * server (--agents 0) counts the agents with a live heartbeat in Redis.
 */
static void route__healthz(const struct route_ctx *rc, struct http_response *resp)
{
    struct ty_err err;
    struct store *s;
    json_t *body = json_object(), *redis = json_object(), *agents = json_array();
    json_t *reasons = json_array();
    char why[1100];

    ty_err_clear(&err);
    s = route__thread_store(rc, &err);
    if (s && store_ping(s, &err) == 0) {
        json_t *live;
        json_object_set_new(redis, "ok", json_true());
        json_object_set_new(redis, "queue_depth", json_integer(queue_depth(s, &err)));
        live = queue_agents(s, &err);
        if (live) {
            if (rc->nagents == 0 && json_array_size(live) == 0)
                json_array_append_new(reasons, json_string("agents: no agent has a live heartbeat; "
                                                           "training jobs wait in the queue"));
            json_object_set_new(body, "live_agents", live);
        }
    } else {
        json_object_set_new(redis, "ok", json_false());
        json_object_set_new(redis, "error", json_string(err.msg));
        snprintf(why, sizeof(why), "redis: %s", err.msg[0] ? err.msg : "unreachable");
        json_array_append_new(reasons, json_string(why));
    }
    json_object_set_new(body, "redis", redis);
    if (rc->docker_host) {
        json_t *engine = json_pack("{s:s}", "host", rc->docker_host);
        ty_err_clear(&err);
        if (!route__docker)
            route__docker = docker_open(rc->docker_host, &err);
        if (route__docker && docker_ping(route__docker, &err) == 0) {
            json_object_set_new(engine, "ok", json_true());
        } else {
            json_object_set_new(engine, "ok", json_false());
            json_object_set_new(engine, "error", json_string(err.msg));
            snprintf(why, sizeof(why), "engine: %s", err.msg[0] ? err.msg : "unreachable");
            json_array_append_new(reasons, json_string(why));
        }
        json_object_set_new(body, "engine", engine);
    }
    for (int i = 0; i < rc->nagents; i++) {
        json_t *st = agent_status(rc->agents[i]);
        if (st)
            json_array_append_new(agents, st);
    }
    json_object_set_new(body, "agents", agents);
    {
        int ok = json_array_size(reasons) == 0;
        json_object_set_new(body, "status", json_string(ok ? "ok" : "degraded"));
        json_object_set_new(body, "reasons", reasons);
        json_object_set_new(body, "version", json_string(TY_VERSION));
        route__json(resp, ok ? 200 : 503, body, "application/json");
    }
    json_decref(body);
}

/* GET /metrics: Prometheus text (metrics_scrape.c), behind --metrics-token when set. */
static void route__metrics(const struct route_ctx *rc, struct http_request *req,
                           struct http_response *resp)
{
    struct ty_err err;
    struct store *s;

    ty_err_clear(&err);
    s = route__thread_store(rc, &err);
    if (rc->docker_host && !route__docker)
        route__docker = docker_open(rc->docker_host, &err);
    metrics_scrape(req, resp, rc->metrics_token, s, route__docker, rc->docker_host != NULL);
}

/*
 * GET SESSION_CREDENTIALS_PATH: the container credentials endpoint (session.h). The container
 * token in the Authorization header is the authentication; the answer is the JSON that the
 * ECS/container credentials provider of botocore and the AWS CLI reads.
 */
static void route__credentials(const struct route_ctx *rc, struct http_request *req,
                               struct http_response *resp)
{
    struct session_creds c;
    struct ty_err err;
    struct store *s;
    char token[SESSION_TOKEN_LEN + 2] = "", exp[32];
    const char *h = http_header(req, "Authorization");
    json_t *body;
    int status = 200;

    ty_err_clear(&err);
    if (strcmp(req->method, "GET") != 0) {
        status = 405;
        body = json_pack("{s:s,s:s}", "code", "MethodNotAllowed", "message",
                         "The credentials endpoint answers GET only.");
        goto done;
    }
    if (h) {
        while (*h == ' ' || *h == '\t')
            h++;
        snprintf(token, sizeof(token), "%s", h);
        for (size_t n = strlen(token); n > 0 && (token[n - 1] == ' ' || token[n - 1] == '\t');)
            token[--n] = '\0';
    }
    s = route__thread_store(rc, &err);
    if (!s || session_mint(s, token, 0, time(NULL), &c, &err) != 0) {
        if (err.code == TY_EREDIS) {
            store_close(route__store);
            route__store = NULL;
        }
        status = err.code == TY_EDENIED ? 403 : ty_err_http_status(err.code);
        body = json_pack("{s:s,s:s}", "code",
                         err.code == TY_EDENIED ? "AccessDenied" : "InternalError", "message",
                         err.msg);
        ty_log(TY_LOG_INFO, "session.denied", "req=%s msg=\"%s\"", req->request_id, err.msg);
        goto done;
    }
    session_iso8601(c.expires, exp, sizeof(exp));
    body = json_pack("{s:s,s:s,s:s,s:s,s:s}", "AccessKeyId", c.access_key, "SecretAccessKey",
                     c.secret, "Token", c.token, "Expiration", exp, "RoleArn", c.role_arn);
    ty_log(TY_LOG_DEBUG, "session.credentials", "req=%s job=%s akid=%s", req->request_id, c.job,
           c.access_key);
    memset(&c, 0, sizeof(c));
done:
    route__json(resp, status, body, "application/json");
    if (body)
        json_decref(body);
    http_response_header(resp, "Cache-Control", "no-store");
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
}

void route_handle(struct http_request *req, struct http_response *resp, void *ud)
{
    const struct route_ctx *rc = ud;
    const char *ctype = "application/x-amz-json-1.1";
    const char *target, *service = NULL, *opname = NULL, *shape;
    struct auth_principal prin;
    struct sigv4_request sreq;
    struct sigv4_auth auth;
    struct ty_err err;
    struct store *s;
    const struct route_op *op = NULL;
    json_t *in = NULL, *out = NULL;
    json_error_t jerr;
    struct op_ctx ctx;

    ty_err_clear(&err);
    if (strcmp(req->path, "/healthz") == 0 && strcmp(req->method, "GET") == 0) {
        req->metric_service = "trainyard";
        req->metric_op = "Healthz";
        route__healthz(rc, resp);
        return;
    }
    if (strcmp(req->path, "/metrics") == 0 && strcmp(req->method, "GET") == 0) {
        route__metrics(rc, req, resp);
        return;
    }
    if (strcmp(req->path, SESSION_CREDENTIALS_PATH) == 0) { /* the container token is the auth */
        route__credentials(rc, req, resp);
        return;
    }
    /* the service is the request's shape's; a signature scoped to another one is refused by
       that service's front end, in its words (auth.h). Unclear shapes go by the scope. */
    shape = auth_service_of(req);
    if (shape ? strcmp(shape, "s3") == 0 : s3_is_request(req)) {
        /* S3: its own auth, XML errors and streamed bodies (ops/s3.c) */
        req->metric_service = "s3";
        req->metric_op = metrics_method(req->method);
        s3_route(req, resp, rc);
        return;
    }
    if (shape ? strcmp(shape, "sts") == 0 : sts_is_request(req)) {
        /* STS: query protocol, XML answers and errors (ops/sts.c) */
        req->metric_service = "sts";
        sts_route(req, resp, rc);
        return;
    }
    if (shape && strcmp(shape, "monitoring") == 0) {
        /* CloudWatch metrics: query and JSON 1.0 protocols (ops/cloudwatch.c) */
        cloudwatch_route(req, resp, rc);
        return;
    }
    /* the console authenticates with its own session cookie, not SigV4 (console.c) */
    if (console_path(req->path)) {
        console_handle(req, resp, route__thread_store(rc, &err), rc);
        return;
    }
    if (strncmp(req->path, "/sagemaker/", 11) == 0)
        ctype = "application/json";
    if (req->too_big) {
        ty_err_set(&err, TY_ETOOBIG, NULL, "Request body is larger than %u bytes", HTTP_MAX_BODY);
        goto fail;
    }

    memset(&sreq, 0, sizeof(sreq));
    sreq.method = req->method;
    sreq.path = req->path;
    sreq.query = req->query;
    sreq.headers = req->headers;
    sreq.nheaders = req->nheaders;
    sreq.body = req->body.data;
    sreq.body_len = req->body.len;
    if (sigv4_parse(&sreq, &auth, &err) != 0) {
        if (err.code == TY_ENOAUTH)
            ty_err_set(&err, TY_ENOAUTH, NULL, "Missing Authentication Token");
        else if (err.code == TY_EINVAL) /* a malformed signature: AWS's JSON services say so */
            err.code = TY_EINCOMPLETESIG;
        goto fail;
    }
    s = route__thread_store(rc, &err);
    if (!s)
        goto fail;
    if (shape ? strcmp(shape, "iam") == 0 : op_iamapi_is_service(auth.service)) {
        /* IAM and STS query APIs: their own key check, XML errors and authorisation (iamapi.c) */
        struct op_iamapi_call ic = {req, s, rc->account_id, &sreq, &auth};
        op_iamapi_route(&ic, resp);
        return;
    }
    if (auth_verify(s, &sreq, &auth, shape, time(NULL), &prin, &err) != 0) {
        /* an unknown key and a wrong session token read the same on the JSON services */
        if (err.code == TY_ENOTFOUND || err.code == TY_EBADKEY)
            ty_err_set(&err, TY_EBADKEY, NULL,
                       "The security token included in the request is invalid.");
        goto fail;
    }

    target = http_header(req, "X-Amz-Target");
    if (strncmp(req->path, "/sagemaker/", 11) == 0) {
        service = "sagemaker";
        opname = req->path + 11;
    } else if (target && strncmp(target, "SageMaker.", 10) == 0) {
        service = "sagemaker";
        opname = target + 10;
    } else if (target && strncmp(target, "Logs_20140328.", 14) == 0) {
        service = "logs";
        opname = target + 14;
    }
    for (size_t i = 0; service && i < sizeof(route_ops) / sizeof(route_ops[0]); i++) {
        if (strcmp(route_ops[i].service, service) == 0 && strcmp(route_ops[i].name, opname) == 0)
            op = &route_ops[i];
    }
    if (!op) {
        ty_err_set(&err, TY_EUNKNOWNOP, NULL, "Unknown operation %s", opname ? opname : "");
        goto fail;
    }
    req->metric_service = op->service;
    req->metric_op = op->name;
    if (strcmp(req->method, "POST") != 0) {
        ty_err_set(&err, TY_EUNKNOWNOP, NULL, "%s must be called with POST", op->name);
        goto fail;
    }
    if (req->body.len == 0)
        in = json_object();
    else
        in = json_loadb(req->body.data, req->body.len, 0, &jerr);
    if (!json_is_object(in)) {
        ty_err_set(&err, TY_ESERIAL, NULL, "Start of structure or map found where not expected.");
        goto fail;
    }
    if (model_validate(rc->model, op->service, op->name, in, &err) != 0)
        goto fail;
    /* validation first, then authorisation, as AWS orders them (authz.c) */
    if (authz_request(s, op->service, op->name, in, prin.arn, auth.region, rc->account_id, &err) !=
        0)
        goto fail;

    ctx.store = s;
    ctx.region = auth.region;
    ctx.account_id = rc->account_id;
    ctx.principal_arn = prin.arn;
    ctx.now = route__now();
    ctx.host = http_header(req, "Host");
    ctx.s3_dir = rc->s3_dir;
    ctx.s3_remote = rc->s3_remote;
    if (op->fn(&ctx, in, &out, &err) != 0)
        goto fail;
    route__json(resp, 200, out, ctype);
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
    ty_log(TY_LOG_DEBUG, "http.ok", "req=%s op=%s", req->request_id, op->name);
    json_decref(in);
    json_decref(out);
    return;
fail:
    if (err.code == TY_EOK)
        ty_err_set(&err, TY_EINTERNAL, NULL, "internal failure");
    if (err.code == TY_EREDIS) {
        /* a broken connection is reopened on the next request of this thread */
        store_close(route__store);
        route__store = NULL;
    }
    route__error(req, resp, &err, ctype);
    json_decref(in);
    json_decref(out);
}
