/*
 * route.c - from an HTTP request to a front end, and for the JSON services to an operation
 * and back.
 *
 * The front ends (route_fronts[]) are tried in order; the first whose match takes the request
 * serves it. Which service a request is for comes from its shape (auth_service_of), computed
 * once; an unclear shape goes by the signature's scope. For the JSON services (SageMaker, Logs)
 * the order of checks is AWS's: signature present -> scope names the service, known access
 * key, session token, valid signature and clock (auth_request) -> operation known -> body is a
 * JSON object -> the model's validation -> authorisation -> the handler. Every JSON error
 * leaves through route_json_error as {"__type": <AWS name>, "message": ...} with the
 * x-amzn-ErrorType header, which botocore and the CLI both understand.
 */
#include "route.h"

#include "apimodel.h"
#include "auth.h"
#include "authz.h"
#include "cloudwatch.h"
#include "console.h"
#include "iamapi.h"
#include "metrics.h"
#include "metrics_scrape.h"
#include "ops.h"
#include "queue.h"
#include "s3.h"
#include "session.h"
#include "sigv4.h"
#include "store.h"
#include "sts.h"
#include "ty_log.h"
#include "ty_time.h"
#include "worker.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One request on its way through the front ends. */
struct route_call {
    struct http_request *req;
    struct http_response *resp;
    const struct front_ctx *rc;
    struct worker *w;  /* the thread's context */
    const char *shape; /* auth_service_of(req): borrowed static string or NULL */
};

static void route_json(struct http_response *resp, int status, json_t *body, const char *ctype)
{
    resp->status = status;
    resp->content_type = ctype;
    resp->body = json_dumps(body, OP_JSON_FLAGS);
    resp->len = resp->body ? strlen(resp->body) : 0;
}

/* The JSON services' one error writer. */
static void route_json_error(struct http_request *req, struct http_response *resp,
                             const struct ty_err *err, const char *ctype)
{
    const char *name = ty_err_aws_name(err->code);
    json_t *body = json_pack("{s:s,s:s}", "__type", name, "message",
                             err->msg[0] ? err->msg : ty_strerror(err->code));
    route_json(resp, ty_err_http_status(err->code), body, ctype);
    json_decref(body);
    http_response_header(resp, "x-amzn-ErrorType", name);
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
    ty_log(TY_LOG_DEBUG, "http.error", "req=%s code=%s msg=\"%s\"", req->request_id, name,
           err->msg);
}

/* ---- health, metrics, container credentials ---- */

static int route_match_healthz(const struct route_call *c)
{
    return strcmp(c->req->path, "/healthz") == 0 && strcmp(c->req->method, "GET") == 0;
}

/* Redis's part of /healthz: "redis" and "live_agents" into body, reasons when degraded. */
static void route_health_redis(const struct route_call *c, json_t *body, json_t *reasons)
{
    struct ty_err err;
    struct store *s;
    json_t *redis = json_object();
    char why[1100];
    int nagents = c->rc->engine ? c->rc->engine->nagents : 0;

    ty_err_clear(&err);
    s = worker_store(c->w, c->rc->redis_url, &err);
    if (s && store_ping(s, &err) == 0) {
        json_t *live;
        json_object_set_new(redis, "ok", json_true());
        json_object_set_new(redis, "queue_depth", json_integer(queue_depth(s, &err)));
        live = queue_agents(s, &err);
        if (live) {
            if (nagents == 0 && json_array_size(live) == 0)
                json_array_append_new(reasons, json_string("agents: no agent has a live heartbeat; "
                                                           "training jobs wait in the queue"));
            json_object_set_new(body, "live_agents", live);
        }
    } else {
        worker_failed(c->w, err.code);
        json_object_set_new(redis, "ok", json_false());
        json_object_set_new(redis, "error", json_string(err.msg));
        snprintf(why, sizeof(why), "redis: %s", err.msg[0] ? err.msg : "unreachable");
        json_array_append_new(reasons, json_string(why));
    }
    json_object_set_new(body, "redis", redis);
}

/*
 * GET /healthz: 200 {"status": "ok"} or 503 {"status": "degraded", "reasons": [...]} while
 * Redis, the engine (when this server runs agents) or every agent is unreachable; an API-only
 * server (--agents 0) counts the agents with a live heartbeat in Redis.
 */
static void route_serve_healthz(struct route_call *c)
{
    const struct front_engine *eng = c->rc->engine;
    json_t *body = json_object(), *reasons = json_array(), *agents = NULL;
    char why[1100], msg[1024];

    c->req->metric_service = "trainyard";
    c->req->metric_op = "Healthz";
    route_health_redis(c, body, reasons);
    if (eng && eng->host && eng->ping) {
        json_t *engine = json_pack("{s:s}", "host", eng->host);
        msg[0] = '\0';
        if (eng->ping(eng->ud, msg, sizeof(msg)) == 1) {
            json_object_set_new(engine, "ok", json_true());
        } else {
            json_object_set_new(engine, "ok", json_false());
            json_object_set_new(engine, "error", json_string(msg));
            snprintf(why, sizeof(why), "engine: %s", msg[0] ? msg : "unreachable");
            json_array_append_new(reasons, json_string(why));
        }
        json_object_set_new(body, "engine", engine);
    }
    if (eng && eng->agents)
        agents = eng->agents(eng->ud);
    json_object_set_new(body, "agents", agents ? agents : json_array());
    {
        int ok = json_array_size(reasons) == 0;
        json_object_set_new(body, "status", json_string(ok ? "ok" : "degraded"));
        json_object_set_new(body, "reasons", reasons);
        json_object_set_new(body, "version", json_string(TY_VERSION));
        route_json(c->resp, ok ? 200 : 503, body, "application/json");
    }
    json_decref(body);
}

static int route_match_metrics(const struct route_call *c)
{
    return strcmp(c->req->path, "/metrics") == 0 && strcmp(c->req->method, "GET") == 0;
}

/* GET /metrics: Prometheus text (metrics_scrape.c), behind --metrics-token when set. */
static void route_serve_metrics(struct route_call *c)
{
    const struct front_engine *eng = c->rc->engine;
    struct metrics_scrape_engine me = {eng ? eng->ping : NULL, eng ? eng->ud : NULL};
    struct ty_err err;
    struct store *s;

    ty_err_clear(&err);
    s = worker_store(c->w, c->rc->redis_url, &err);
    metrics_scrape(c->req, c->resp, c->rc->metrics_token, s, eng && eng->host ? &me : NULL);
}

static int route_match_credentials(const struct route_call *c)
{
    return strcmp(c->req->path, SESSION_CREDENTIALS_PATH) == 0;
}

/*
 * GET SESSION_CREDENTIALS_PATH: the container credentials endpoint (session.h). The container
 * token in the Authorization header is the authentication; the answer is the JSON that the
 * ECS/container credentials provider of botocore and the AWS CLI reads.
 */
static void route_serve_credentials(struct route_call *c)
{
    struct http_request *req = c->req;
    struct session_creds cr;
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
    s = worker_store(c->w, c->rc->redis_url, &err);
    if (!s || session_mint(s, token, 0, time(NULL), &cr, &err) != 0) {
        worker_failed(c->w, err.code);
        status = err.code == TY_EDENIED ? 403 : ty_err_http_status(err.code);
        body = json_pack("{s:s,s:s}", "code",
                         err.code == TY_EDENIED ? "AccessDenied" : "InternalError", "message",
                         err.msg);
        ty_log(TY_LOG_INFO, "session.denied", "req=%s msg=\"%s\"", req->request_id, err.msg);
        goto done;
    }
    session_iso8601(cr.expires, exp, sizeof(exp));
    body = json_pack("{s:s,s:s,s:s,s:s,s:s}", "AccessKeyId", cr.access_key, "SecretAccessKey",
                     cr.secret, "Token", cr.token, "Expiration", exp, "RoleArn", cr.role_arn);
    ty_log(TY_LOG_DEBUG, "session.credentials", "req=%s job=%s akid=%s", req->request_id, cr.job,
           cr.access_key);
    memset(&cr, 0, sizeof(cr));
done:
    route_json(c->resp, status, body, "application/json");
    if (body)
        json_decref(body);
    http_response_header(c->resp, "Cache-Control", "no-store");
    http_response_header(c->resp, "x-amzn-RequestId", req->request_id);
}

/* ---- the front ends with their own protocols ---- */

static int route_match_s3(const struct route_call *c)
{
    return c->shape ? strcmp(c->shape, "s3") == 0 : s3_is_request(c->req);
}

/* S3: its own auth, XML errors and streamed bodies (ops/s3.c) */
static void route_serve_s3(struct route_call *c)
{
    c->req->metric_service = "s3";
    c->req->metric_op = metrics_method(c->req->method);
    s3_route(c->req, c->resp, c->rc);
}

static int route_match_sts(const struct route_call *c)
{
    return c->shape ? strcmp(c->shape, "sts") == 0 : sts_is_request(c->req);
}

/* STS: query protocol, XML answers and errors (ops/sts.c) */
static void route_serve_sts(struct route_call *c)
{
    c->req->metric_service = "sts";
    sts_route(c->req, c->resp, c->rc);
}

static int route_match_cloudwatch(const struct route_call *c)
{
    return c->shape && strcmp(c->shape, "monitoring") == 0;
}

/* CloudWatch metrics: query and JSON 1.0 protocols (ops/cloudwatch.c) */
static void route_serve_cloudwatch(struct route_call *c)
{
    cloudwatch_route(c->req, c->resp, c->rc);
}

static int route_match_console(const struct route_call *c)
{
    return console_path(c->req->path);
}

/* the console authenticates with its own session cookie, not SigV4 (console.c) */
static void route_serve_console(struct route_call *c)
{
    struct ty_err err;
    struct store *s;

    ty_err_clear(&err);
    s = worker_store(c->w, c->rc->redis_url, &err);
    console_handle(c->req, c->resp, s, c->rc);
}

/* ---- the JSON services (SageMaker, Logs) and IAM ---- */

/* The JSON services' wording of an auth_request failure. */
static void route_auth_error(struct ty_err *err, enum auth_stage stage)
{
    if (stage == AUTH_STAGE_PARSE) {
        if (err->code == TY_ENOAUTH)
            ty_err_set(err, TY_ENOAUTH, NULL, "Missing Authentication Token");
        else if (err->code == TY_EINVAL) /* a malformed signature: AWS's JSON services say so */
            err->code = TY_EINCOMPLETESIG;
    } else if (err->code == TY_ENOTFOUND || err->code == TY_EBADKEY) {
        /* an unknown key and a wrong session token read the same on the JSON services */
        ty_err_set(err, TY_EBADKEY, NULL, "The security token included in the request is invalid.");
    }
}

/* The content type of the JSON services' answers to req. */
static const char *route_ctype(const struct http_request *req)
{
    return strncmp(req->path, "/sagemaker/", 11) == 0 ? "application/json"
                                                      : "application/x-amz-json-1.1";
}

static int route_match_iam(const struct route_call *c)
{
    char scope[32];
    if (c->shape)
        return strcmp(c->shape, "iam") == 0;
    return auth_scope_service(c->req, scope, sizeof(scope)) && op_iamapi_is_service(scope);
}

/* IAM: query protocol, XML answers and errors, its own authorisation (ops/iamapi.c); a
   request without a well-formed signature is refused in the JSON services' words. */
static void route_serve_iam(struct route_call *c)
{
    struct auth_in in = {.redis_url = c->rc->redis_url,
                         .service = "iam",
                         .with_body = 1,
                         .region = c->rc->region,
                         .global = 1};
    struct auth_out ao;
    struct ty_err err;
    int rc;

    ty_err_clear(&err);
    if (c->req->too_big) {
        ty_err_set(&err, TY_ETOOBIG, NULL, "Request body is larger than %u bytes", HTTP_MAX_BODY);
        route_json_error(c->req, c->resp, &err, route_ctype(c->req));
        return;
    }
    rc = auth_request(c->w, c->req, &in, time(NULL), &ao, &err);
    if (rc != 0 && ao.stage != AUTH_STAGE_VERIFY) {
        route_auth_error(&err, ao.stage);
        route_json_error(c->req, c->resp, &err, route_ctype(c->req));
        return;
    }
    {
        struct op_iamapi_call ic = {c->req,        ao.store, c->rc->account_id,
                                    c->rc->region, &ao.a,    rc == 0 ? &ao.p : NULL,
                                    &err};
        op_iamapi_route(&ic, c->resp);
    }
}

/* The operation of a SageMaker or Logs request, or NULL. */
static const struct op_entry *route_op_of(const struct http_request *req)
{
    const char *target = http_header(req, "X-Amz-Target"), *service = NULL, *opname = NULL;

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
    return op_lookup(service, opname);
}

/* The operation's input: the body as a JSON object (new), or NULL with err. */
static json_t *route_input(const struct http_request *req, struct ty_err *err)
{
    json_t *in;

    if (req->body.len == 0)
        return json_object();
    in = json_loadb(req->body.data, req->body.len, 0, NULL);
    if (json_is_object(in))
        return in;
    json_decref(in);
    ty_err_set(err, TY_ESERIAL, NULL, "Start of structure or map found where not expected.");
    return NULL;
}

static int route_match_any(const struct route_call *c)
{
    (void)c;
    return 1;
}

/* SageMaker and Logs: JSON 1.1 (X-Amz-Target) and the /sagemaker/<Op> REST alias. */
static void route_serve_json(struct route_call *c)
{
    struct http_request *req = c->req;
    const struct front_ctx *rc = c->rc;
    const char *ctype = route_ctype(req);
    struct auth_in ain = {
        .redis_url = rc->redis_url, .service = c->shape, .with_body = 1, .region = rc->region};
    const struct op_entry *op;
    struct auth_out ao;
    struct ty_err err;
    json_t *in = NULL, *out = NULL;
    struct op_ctx ctx;

    ty_err_clear(&err);
    if (req->too_big) {
        ty_err_set(&err, TY_ETOOBIG, NULL, "Request body is larger than %u bytes", HTTP_MAX_BODY);
        goto fail;
    }
    if (auth_request(c->w, req, &ain, time(NULL), &ao, &err) != 0) {
        route_auth_error(&err, ao.stage);
        goto fail;
    }
    if (!(op = route_op_of(req))) {
        const char *t = http_header(req, "X-Amz-Target"), *dot = t ? strchr(t, '.') : NULL;
        const char *name =
            strncmp(req->path, "/sagemaker/", 11) == 0 ? req->path + 11
            : dot && (strncmp(t, "SageMaker.", 10) == 0 || strncmp(t, "Logs_20140328.", 14) == 0)
                ? dot + 1
                : "";
        ty_err_set(&err, TY_EUNKNOWNOP, NULL, "Unknown operation %s", name);
        goto fail;
    }
    req->metric_service = op->service;
    req->metric_op = op->name;
    if (strcmp(req->method, "POST") != 0) {
        ty_err_set(&err, TY_EUNKNOWNOP, NULL, "%s must be called with POST", op->name);
        goto fail;
    }
    if (!(in = route_input(req, &err)))
        goto fail;
    if (apimodel_validate(rc->model, op->service, op->name, in, &err) != 0 ||
        op_tags_reserved(op->service, op->name, in, &err) != 0)
        goto fail;
    /* validation first, then authorisation, as AWS orders them (authz.c) */
    if (authz_request(ao.store, op->service, op->name, in, ao.p.arn, rc->region, rc->account_id,
                      &err) != 0)
        goto fail;
    memset(&ctx, 0, sizeof(ctx));
    ctx.store = ao.store;
    ctx.region = rc->region;
    ctx.account_id = rc->account_id;
    ctx.principal_arn = ao.p.arn;
    ctx.now = ty_wall_s();
    ctx.host = http_header(req, "Host");
    ctx.s3_dir = rc->s3_dir;
    ctx.s3_remote = rc->s3_remote;
    ctx.jobmemo = c->w ? &c->w->jobmemo : NULL;
    ctx.answer_text = 1;
    if (op->fn(&ctx, in, &out, &err) != 0) {
        free(ctx.text);
        goto fail;
    }
    if (ctx.text) {
        c->resp->status = 200;
        c->resp->content_type = ctype;
        c->resp->body = ctx.text;
        c->resp->len = ctx.text_len;
    } else {
        route_json(c->resp, 200, out, ctype);
    }
    http_response_header(c->resp, "x-amzn-RequestId", req->request_id);
    ty_log(TY_LOG_DEBUG, "http.ok", "req=%s op=%s", req->request_id, op->name);
    json_decref(in);
    json_decref(out);
    return;
fail:
    if (err.code == TY_EOK)
        ty_err_set(&err, TY_EINTERNAL, NULL, "internal failure");
    /* a broken connection is reopened on the next request of this thread */
    worker_failed(c->w, err.code);
    route_json_error(req, c->resp, &err, ctype);
    json_decref(in);
    json_decref(out);
}

/* ---- the front-end table ---- */

struct route_front {
    const char *name;
    int (*match)(const struct route_call *c);
    void (*serve)(struct route_call *c);
    int to_jobs; /* served to a job's relayed connections (route_relayed) */
};

/* Tried in order; the last takes every request. */
static const struct route_front route_fronts[] = {
    {"healthz", route_match_healthz, route_serve_healthz, 0},
    {"metrics", route_match_metrics, route_serve_metrics, 0},
    {"credentials", route_match_credentials, route_serve_credentials,
     1}, /* the token is the auth */
    {"s3", route_match_s3, route_serve_s3, 1},
    {"sts", route_match_sts, route_serve_sts, 1},
    {"monitoring", route_match_cloudwatch, route_serve_cloudwatch, 1},
    {"console", route_match_console, route_serve_console, 0},
    {"iam", route_match_iam, route_serve_iam, 1},
    {"json", route_match_any, route_serve_json, 1},
};

/* 1 when req came through a job's relay: a loopback peer outside 127.0.0.0/16, the range the
   agent's relays connect from (relay_source_addr in agent/relay.h), also IPv4-mapped. Such a
   peer is served the signed AWS APIs and the credentials endpoint only. */
static int route_relayed(const struct http_request *req)
{
    const char *a = req->client;
    if (strncmp(a, "::ffff:", 7) == 0)
        a += 7;
    return strncmp(a, "127.", 4) == 0 && strncmp(a + 4, "0.", 2) != 0;
}

void route_handle(struct http_request *req, struct http_response *resp, void *ud)
{
    struct route_call c = {req, resp, ud, worker_self(), NULL};
    size_t n = sizeof(route_fronts) / sizeof(route_fronts[0]);

    /* the service is the request's shape's; a signature scoped to another one is refused by
       that service's front end, in its words (auth.h). Unclear shapes go by the scope. */
    c.shape = auth_service_of(req);
    for (size_t i = 0; i < n; i++) {
        if (route_fronts[i].match(&c)) {
            if (!route_fronts[i].to_jobs && route_relayed(req)) {
                struct ty_err err;
                ty_err_set(&err, TY_EDENIED, NULL,
                           "%s is not served to training jobs: their relay reaches the AWS APIs "
                           "and the credentials endpoint only",
                           route_fronts[i].name);
                route_json_error(req, resp, &err, "application/json");
                return;
            }
            /* aws:SourceIp and aws:UserAgent of whatever this request authorises */
            authz_set_request(req->client, http_header(req, "User-Agent"));
            route_fronts[i].serve(&c);
            authz_set_request(NULL, NULL);
            return;
        }
    }
}
