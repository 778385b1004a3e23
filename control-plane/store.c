/*
 * store.c - trainyard's state in Redis: connection, Lua scripts, jobs, tags, principals, logs.
 *
 * Owns: one hiredis connection per struct store (reconnected once when it breaks), the
 * script SHAs, and the layout of the `ty:` keys (store.h). Does not own the queue's consumer
 * group (queue.c) nor any wire format (the ops layer turns documents into responses).
 *
 * Job documents are stored as a hash ty:job:<name>: one field per top-level member, whose value
 * is that member's JSON text written by jansson. The Lua scripts treat those texts as opaque,
 * except the status strings and SecondaryStatusTransitions (strings and ms timestamps, which
 * Lua's cjson keeps exactly), so numbers keep full precision and empty arrays stay arrays.
 * Reading rebuilds the object in DescribeTrainingJob's member order and re-normalises the
 * members cjson touched (empty {} back to [], integral timestamps back to reals).
 *
 * Invariants: every redisReply is freed on every path; every array this file allocates is
 * bounded by the reply it mirrors; a job document is written only by job_create.lua and
 * job_transition.lua.
 */
#include "store.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "queue.h"
#include "store_int.h"
#include "store_script.h"
#include "ty_buf.h"
#include "ty_log.h"

#define STORE_CONNECT_TIMEOUT_S 2
#define STORE_CMD_TIMEOUT_MS    10000
#define STORE_MAX_ARGS          100000
#define STORE_KEY_MAX           1024
#define STORE_TOKEN_MAX         2048
#define STORE_STATUS_PREFIX     "ty:idx:job:status:"

enum store_sc { SC_JOB_CREATE, SC_JOB_TRANSITION, SC_JOB_DELETE, SC_LOG_APPEND, SC_COUNT };

static struct store_script store_scripts[SC_COUNT] = {
    STORE_SCRIPT_INIT(store__lua_job_create, "job_create.lua"),
    STORE_SCRIPT_INIT(store__lua_job_transition, "job_transition.lua"),
    STORE_SCRIPT_INIT(store__lua_job_delete, "job_delete.lua"),
    STORE_SCRIPT_INIT(store__lua_log_append, "log_append.lua"),
};

struct store {
    redisContext *c; /* NULL while disconnected */
    int is_unix;
    char host[256];
    int port;
    char path[256];
    char user[128];
    char password[256];
    int db;
    char where[300]; /* "127.0.0.1:6379" or the socket path, for messages */
    char region[64];
    char account[32];
};

/* ---- connection ---- */

static int store_parse_url(struct store *s, const char *url, struct ty_err *err)
{
    const char *p;
    if (!url || !*url)
        return ty_err_set(err, TY_EREDIS, NULL, "empty redis url");
    if (strncmp(url, "unix://", 7) == 0) {
        const char *q;
        size_t n;
        s->is_unix = 1;
        p = url + 7;
        q = strchr(p, '?');
        n = q ? (size_t)(q - p) : strlen(p);
        if (n == 0 || n >= sizeof(s->path))
            return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': socket path", url);
        memcpy(s->path, p, n);
        s->path[n] = '\0';
        while (q && *q) {
            const char *amp;
            size_t len;
            q++;
            amp = strchr(q, '&');
            len = amp ? (size_t)(amp - q) : strlen(q);
            if (len > 3 && strncmp(q, "db=", 3) == 0) {
                char *end;
                long v = strtol(q + 3, &end, 10);
                if (end != q + len || v < 0 || v > 1000000)
                    return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': db", url);
                s->db = (int)v;
            } else if (len > 9 && strncmp(q, "password=", 9) == 0) {
                if (len - 9 >= sizeof(s->password))
                    return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': password", url);
                memcpy(s->password, q + 9, len - 9);
                s->password[len - 9] = '\0';
            } else if (len > 0) {
                return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': unknown parameter",
                                  url);
            }
            q = amp;
        }
        snprintf(s->where, sizeof(s->where), "%s", s->path);
        return 0;
    }
    if (strncmp(url, "redis://", 8) != 0)
        return ty_err_set(err, TY_EREDIS, NULL,
                          "bad redis url '%s': expected redis://host[:port][/db] or unix:///path",
                          url);
    p = url + 8;
    s->port = 6379;
    {
        const char *at = strrchr(p, '@');
        const char *slash = strchr(p, '/');
        if (at && (!slash || at < slash)) {
            const char *colon = memchr(p, ':', (size_t)(at - p));
            const char *pw = colon ? colon + 1 : p;
            size_t ulen = colon ? (size_t)(colon - p) : 0;
            size_t plen = (size_t)(at - pw);
            if (ulen >= sizeof(s->user) || plen >= sizeof(s->password))
                return ty_err_set(err, TY_EREDIS, NULL, "bad redis url: credentials too long");
            memcpy(s->user, p, ulen);
            s->user[ulen] = '\0';
            memcpy(s->password, pw, plen);
            s->password[plen] = '\0';
            p = at + 1;
        }
    }
    {
        const char *hend;
        size_t hlen;
        if (*p == '[') {
            hend = strchr(p, ']');
            if (!hend)
                return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': host", url);
            hlen = (size_t)(hend - p - 1);
            if (hlen == 0 || hlen >= sizeof(s->host))
                return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': host", url);
            memcpy(s->host, p + 1, hlen);
            hend++;
        } else {
            hend = p + strcspn(p, ":/");
            hlen = (size_t)(hend - p);
            if (hlen >= sizeof(s->host))
                return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': host", url);
            memcpy(s->host, p, hlen);
        }
        s->host[hlen] = '\0';
        if (hlen == 0)
            snprintf(s->host, sizeof(s->host), "127.0.0.1");
        p = hend;
    }
    if (*p == ':') {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || v <= 0 || v > 65535 || (*end && *end != '/'))
            return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': port", url);
        s->port = (int)v;
        p = end;
    }
    if (*p == '/' && p[1]) {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || *end || v < 0 || v > 1000000)
            return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s': db", url);
        s->db = (int)v;
    } else if (*p && strcmp(p, "/") != 0) {
        return ty_err_set(err, TY_EREDIS, NULL, "bad redis url '%s'", url);
    }
    snprintf(s->where, sizeof(s->where), "%s:%d", s->host, s->port);
    return 0;
}

static void store_set_timeout(redisContext *c, int ms)
{
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    redisSetTimeout(c, tv);
}

/* Runs one setup command on a fresh context; 0 or -TY_EREDIS. */
static int store_setup_cmd(struct store *s, redisContext *c, int argc, const char **argv,
                           struct ty_err *err)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    int rc = 0;
    if (!r)
        return ty_err_set(err, TY_EREDIS, NULL, "redis at %s: %s: %s", s->where, argv[0],
                          c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        rc = ty_err_set(err, TY_EREDIS, NULL, "redis at %s: %s failed: %s", s->where, argv[0],
                        r->str);
    freeReplyObject(r);
    return rc;
}

static int store_connect(struct store *s, struct ty_err *err)
{
    struct timeval tv = {STORE_CONNECT_TIMEOUT_S, 0};
    redisContext *c;
    if (s->is_unix)
        c = redisConnectUnixWithTimeout(s->path, tv);
    else
        c = redisConnectWithTimeout(s->host, s->port, tv);
    if (!c)
        return ty_err_set(err, TY_EREDIS, NULL, "cannot connect to redis at %s: out of memory",
                          s->where);
    if (c->err) {
        int rc = ty_err_set(err, TY_EREDIS, NULL, "cannot connect to redis at %s: %s", s->where,
                            c->errstr);
        redisFree(c);
        return rc;
    }
    store_set_timeout(c, STORE_CMD_TIMEOUT_MS);
    if (s->password[0]) {
        const char *argv[3] = {"AUTH", s->user, s->password};
        int rc = s->user[0] ? store_setup_cmd(s, c, 3, argv, err)
                            : store_setup_cmd(s, c, 2, (const char *[]){"AUTH", s->password}, err);
        if (rc < 0) {
            redisFree(c);
            return rc;
        }
    }
    if (s->db) {
        char db[16];
        const char *argv[2] = {"SELECT", db};
        snprintf(db, sizeof(db), "%d", s->db);
        if (store_setup_cmd(s, c, 2, argv, err) < 0) {
            redisFree(c);
            return -TY_EREDIS;
        }
    }
    s->c = c;
    return 0;
}

static void store_drop(struct store *s)
{
    if (s->c) {
        redisFree(s->c);
        s->c = NULL;
    }
}

/* 1 when a failed call may be retried on a new connection (the old one broke). */
static int store_retryable(const redisContext *c, int saved_errno)
{
    if (c->err == REDIS_ERR_EOF)
        return 1;
    if (c->err == REDIS_ERR_IO && saved_errno != EAGAIN && saved_errno != EWOULDBLOCK)
        return 1;
    return 0;
}

redisReply *store__cmd(struct store *s, int argc, const char **argv, const size_t *lens,
                       int timeout_ms, struct ty_err *err)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *r;
        int saved_errno, retry;
        if (!s->c && store_connect(s, err) < 0)
            return NULL;
        if (timeout_ms > 0)
            store_set_timeout(s->c, timeout_ms);
        errno = 0;
        r = redisCommandArgv(s->c, argc, argv, lens);
        saved_errno = errno;
        if (r) {
            if (timeout_ms > 0)
                store_set_timeout(s->c, STORE_CMD_TIMEOUT_MS);
            return r;
        }
        retry = store_retryable(s->c, saved_errno);
        ty_err_set(err, TY_EREDIS, NULL, "redis at %s: %s: %s", s->where, argv[0], s->c->errstr);
        ty_log(TY_LOG_WARN, "store.redis_error", "where=%s cmd=%s err='%s' retry=%d", s->where,
               argv[0], s->c->errstr, retry && attempt == 0);
        store_drop(s);
        if (!retry)
            return NULL;
    }
    return NULL;
}

redisReply *store__cmdv(struct store *s, struct ty_err *err, const char *arg0, ...)
{
    const char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, arg0);
    for (const char *a = arg0; a && argc < 32; a = va_arg(ap, const char *))
        argv[argc++] = a;
    va_end(ap);
    return store__cmd(s, argc, argv, NULL, 0, err);
}

int store__pipeline(struct store *s, size_t n, const int *argc, const char *const *const *argv,
                    redisReply **replies, struct ty_err *err)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        size_t got = 0;
        int saved_errno = 0, retry;
        if (!s->c && store_connect(s, err) < 0)
            return -TY_EREDIS;
        for (size_t i = 0; i < n; i++) {
            if (redisAppendCommandArgv(s->c, argc[i], (const char **)argv[i], NULL) != REDIS_OK)
                goto broken;
        }
        for (got = 0; got < n; got++) {
            void *r = NULL;
            errno = 0;
            if (redisGetReply(s->c, &r) != REDIS_OK || !r) {
                saved_errno = errno;
                goto broken;
            }
            replies[got] = r;
        }
        return 0;
broken:
        for (size_t i = 0; i < got; i++) {
            freeReplyObject(replies[i]);
            replies[i] = NULL;
        }
        retry = store_retryable(s->c, saved_errno);
        ty_err_set(err, TY_EREDIS, NULL, "redis at %s: pipeline: %s", s->where, s->c->errstr);
        store_drop(s);
        if (!retry)
            return -TY_EREDIS;
    }
    return -TY_EREDIS;
}

int store__reply_err(const redisReply *r, const char *what, struct ty_err *err)
{
    if (r && r->type == REDIS_REPLY_ERROR)
        return ty_err_set(err, TY_EREDIS, NULL, "redis: %s: %s", what, r->str);
    return ty_err_set(err, TY_EREDIS, NULL, "redis: %s: unexpected reply", what);
}

/* EVALSHA this file's script sc (store_script.h). new: the reply, or NULL with err. */
static redisReply *store_eval(struct store *s, int sc, int nkeys, int nargs, const char **args,
                              const size_t *lens, struct ty_err *err)
{
    return store_script_eval(s, &store_scripts[sc], nkeys, nargs, args, lens, err);
}

struct store *store_open(const char *url, struct ty_err *err)
{
    struct store *s = calloc(1, sizeof(*s));
    struct sigaction old;
    if (!s) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    snprintf(s->region, sizeof(s->region), "us-east-1");
    snprintf(s->account, sizeof(s->account), "000000000000");
    if (store_parse_url(s, url, err) < 0)
        goto fail;
    /* A write on a connection Redis closed must fail with EPIPE, not kill the process. */
    if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    if (store_connect(s, err) < 0)
        goto fail;
    for (int sc = 0; sc < SC_COUNT; sc++) {
        if (store_script_load(s, &store_scripts[sc], err) < 0)
            goto fail;
    }
    return s;
fail:
    store_close(s);
    return NULL;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    store_drop(s);
    free(s);
}

void store_set_identity(struct store *s, const char *region, const char *account)
{
    if (region)
        snprintf(s->region, sizeof(s->region), "%s", region);
    if (account)
        snprintf(s->account, sizeof(s->account), "%s", account);
}

int store_ping(struct store *s, struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "PING", NULL);
    int rc = 0;
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_STATUS)
        rc = store__reply_err(r, "PING", err);
    freeReplyObject(r);
    return rc;
}

long long store_log_group_created_get(struct store *s, const char *group, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    long long v = 0;
    if (snprintf(key, sizeof(key), "ty:loggroup:%s:created", group) >= (int)sizeof(key))
        return ty_err_set(err, TY_EINVAL, "logGroupName", "log group name too long"), -1;
    r = store__cmdv(s, err, "GET", key, NULL);
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

long long store_log_group_created(struct store *s, const char *group, long long candidate_ms,
                                  struct ty_err *err)
{
    char key[STORE_KEY_MAX], val[32];
    redisReply *r;
    if (snprintf(key, sizeof(key), "ty:loggroup:%s:created", group) >= (int)sizeof(key))
        return ty_err_set(err, TY_EINVAL, "logGroupName", "log group name too long"), -1;
    snprintf(val, sizeof(val), "%lld", candidate_ms);
    r = store__cmdv(s, err, "SET", key, val, "NX", NULL);
    if (!r)
        return -1;
    freeReplyObject(r);
    return store_log_group_created_get(s, group, err);
}

long store_job_count(struct store *s, const char *status, struct ty_err *err)
{
    char key[128];
    redisReply *r;
    long n = -1;
    snprintf(key, sizeof(key), "ty:idx:job:status:%s", status);
    r = store__cmdv(s, err, "SCARD", key, NULL);
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER)
        n = (long)r->integer;
    else
        store__reply_err(r, "SCARD", err);
    freeReplyObject(r);
    return n;
}

/* ---- small helpers ---- */

static int store_key(char *out, size_t n, const char *a, const char *b, const char *c,
                     struct ty_err *err)
{
    int len = snprintf(out, n, "%s%s%s%s", a, b, c ? ":" : "", c ? c : "");
    if (len < 0 || (size_t)len >= n)
        return ty_err_set(err, TY_EINVAL, NULL, "name too long");
    return 0;
}

/* Epoch seconds rounded to milliseconds (timestamps keep ms, and cjson keeps 13 digits). */
static double store_ms_round(double t)
{
    double v = t * 1000.0;
    long long n = (long long)(v < 0 ? v - 0.5 : v + 0.5);
    return (double)n / 1000.0;
}

static long long store_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- job documents ---- */

/* DescribeTrainingJob's member order; members not listed follow, sorted by name. */
static const char *const store_job_order[] = {
    "TrainingJobName",
    "TrainingJobArn",
    "TuningJobArn",
    "LabelingJobArn",
    "AutoMLJobArn",
    "ModelArtifacts",
    "TrainingJobStatus",
    "SecondaryStatus",
    "FailureReason",
    "HyperParameters",
    "AlgorithmSpecification",
    "RoleArn",
    "InputDataConfig",
    "OutputDataConfig",
    "ResourceConfig",
    "WarmPoolStatus",
    "VpcConfig",
    "StoppingCondition",
    "CreationTime",
    "TrainingStartTime",
    "TrainingEndTime",
    "LastModifiedTime",
    "SecondaryStatusTransitions",
    "FinalMetricDataList",
    "EnableNetworkIsolation",
    "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining",
    "CheckpointConfig",
    "TrainingTimeInSeconds",
    "BillableTimeInSeconds",
    "DebugHookConfig",
    "ExperimentConfig",
    "DebugRuleConfigurations",
    "TensorBoardOutputConfig",
    "DebugRuleEvaluationStatuses",
    "ProfilerConfig",
    "ProfilerRuleConfigurations",
    "ProfilerRuleEvaluationStatuses",
    "ProfilingStatus",
    "Environment",
    "RetryStrategy",
    "RemoteDebugConfig",
    "InfraCheckConfig",
};

/* Top-level members that are lists in the service model: never {} when empty. */
static const char *const store_job_arrays[] = {
    "SecondaryStatusTransitions",
    "InputDataConfig",
    "FinalMetricDataList",
    "MetricDefinitions",
    "ContainerEntrypoint",
    "ContainerArguments",
    "DebugRuleConfigurations",
    "ProfilerRuleConfigurations",
    "DebugRuleEvaluationStatuses",
    "ProfilerRuleEvaluationStatuses",
    "Tags",
    "InstanceGroups",
};

static int store_member_rank(const char *k)
{
    for (size_t i = 0; i < sizeof(store_job_order) / sizeof(store_job_order[0]); i++) {
        if (strcmp(k, store_job_order[i]) == 0)
            return (int)i;
    }
    return (int)(sizeof(store_job_order) / sizeof(store_job_order[0]));
}

static int store_is_array_member(const char *k)
{
    for (size_t i = 0; i < sizeof(store_job_arrays) / sizeof(store_job_arrays[0]); i++) {
        if (strcmp(k, store_job_arrays[i]) == 0)
            return 1;
    }
    return 0;
}

struct store_member {
    const char *key;
    int rank;
    json_t *value;
};

static int store_member_cmp(const void *a, const void *b)
{
    const struct store_member *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Turns an empty object that stands for a list back into [], recursively for known lists. */
static void store_fix_arrays(json_t *obj)
{
    const char *k;
    json_t *v;
    void *tmp;
    if (!json_is_object(obj))
        return;
    json_object_foreach_safe(obj, tmp, k, v)
    {
        if (store_is_array_member(k) && json_is_object(v) && json_object_size(v) == 0)
            json_object_set_new(obj, k, json_array());
    }
    v = json_object_get(obj, "VpcConfig");
    if (json_is_object(v)) {
        json_t *x = json_object_get(v, "SecurityGroupIds");
        if (json_is_object(x) && json_object_size(x) == 0)
            json_object_set_new(v, "SecurityGroupIds", json_array());
        x = json_object_get(v, "Subnets");
        if (json_is_object(x) && json_object_size(x) == 0)
            json_object_set_new(v, "Subnets", json_array());
    }
    v = json_object_get(obj, "AlgorithmSpecification");
    if (json_is_object(v))
        store_fix_arrays(v);
}

/* Timestamps that went through cjson come back as integers when whole: make them reals. */
static void store_fix_transitions(json_t *doc)
{
    json_t *list = json_object_get(doc, "SecondaryStatusTransitions");
    size_t i;
    json_t *e;
    if (!json_is_array(list))
        return;
    json_array_foreach(list, i, e)
    {
        static const char *const ts[] = {"StartTime", "EndTime"};
        for (size_t j = 0; j < 2; j++) {
            json_t *t = json_object_get(e, ts[j]);
            if (json_is_integer(t))
                json_object_set_new(e, ts[j], json_real((double)json_integer_value(t)));
        }
    }
}

/* new: the document from an HGETALL reply, or NULL with err (NOTFOUND when empty). */
static json_t *store_doc_from_reply(const redisReply *r, struct ty_err *err)
{
    struct store_member *m = NULL;
    size_t n = 0;
    json_t *doc = NULL;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements % 2) {
        store__reply_err(r, "HGETALL", err);
        return NULL;
    }
    if (r->elements == 0) {
        ty_err_set(err, TY_ENOTFOUND, NULL, "Requested resource not found.");
        return NULL;
    }
    m = calloc(r->elements / 2, sizeof(*m));
    if (!m) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *k = r->element[i], *v = r->element[i + 1];
        json_error_t je;
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        m[n].value = json_loadb(v->str, v->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        if (!m[n].value) {
            ty_log(TY_LOG_WARN, "store.bad_member", "member=%s err='%s'", k->str, je.text);
            continue;
        }
        m[n].key = k->str;
        m[n].rank = store_member_rank(k->str);
        n++;
    }
    qsort(m, n, sizeof(*m), store_member_cmp);
    doc = json_object();
    for (size_t i = 0; i < n; i++) {
        if (doc)
            json_object_set_new(doc, m[i].key, m[i].value);
        else
            json_decref(m[i].value);
    }
    free(m);
    if (!doc) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    store_fix_arrays(doc);
    store_fix_transitions(doc);
    return doc;
}

/* An argument vector whose strings may be owned (freed by store_args_cleanup). */
struct store_args {
    const char **v;
    size_t *len;
    char **owned; /* per slot: the string to free, or NULL */
    int n, cap;
};

static int store_args_init(struct store_args *a, int cap)
{
    a->n = 0;
    a->cap = cap;
    a->v = calloc((size_t)cap, sizeof(*a->v));
    a->len = calloc((size_t)cap, sizeof(*a->len));
    a->owned = calloc((size_t)cap, sizeof(*a->owned));
    return a->v && a->len && a->owned ? 0 : -TY_ENOMEM;
}

static void store_args_cleanup(struct store_args *a)
{
    for (int i = 0; a->owned && i < a->n; i++)
        free(a->owned[i]);
    free(a->v);
    free(a->len);
    free(a->owned);
    memset(a, 0, sizeof(*a));
}

/* Adds s (borrowed) or, with own, a malloc'd string (stolen, even on failure). */
static int store_args_add(struct store_args *a, const char *s, size_t len, int own)
{
    if (!s || a->n >= a->cap) {
        if (own)
            free((char *)s);
        return -TY_ENOMEM;
    }
    a->v[a->n] = s;
    a->len[a->n] = len;
    a->owned[a->n] = own ? (char *)s : NULL;
    a->n++;
    return 0;
}

static int store_args_str(struct store_args *a, const char *s)
{
    return store_args_add(a, s, strlen(s), 0);
}

static int store_args_json(struct store_args *a, const json_t *v)
{
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    return store_args_add(a, t, t ? strlen(t) : 0, 1);
}

static int store_args_fmt(struct store_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int store_args_fmt(struct store_args *a, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return -TY_EINVAL;
    return store_args_add(a, strdup(tmp), (size_t)n, 1);
}

int store_job_create(struct store *s, const char *name, json_t *doc, double created,
                     struct ty_err *err)
{
    char key[STORE_KEY_MAX], skey[STORE_KEY_MAX];
    const char *status;
    struct store_args a;
    const char *k;
    json_t *v;
    redisReply *r = NULL;
    int rc = 0;
    if (!name || !*name || !json_is_object(doc) || json_object_size(doc) == 0)
        return ty_err_set(err, TY_EINVAL, NULL, "store_job_create: bad arguments");
    if (store_key(key, sizeof(key), "ty:job:", name, NULL, err) < 0)
        return -TY_EINVAL;
    status = json_string_value(json_object_get(doc, "TrainingJobStatus"));
    if (store_key(skey, sizeof(skey), STORE_STATUS_PREFIX, status ? status : "", NULL, err) < 0)
        return -TY_EINVAL;
    if (store_args_init(&a, 6 + 2 * (int)json_object_size(doc)) < 0) {
        store_args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc |= store_args_str(&a, key);
    rc |= store_args_str(&a, "ty:idx:job");
    rc |= store_args_str(&a, QUEUE_KEY);
    rc |= store_args_add(&a, skey, strlen(skey), 0);
    rc |= store_args_str(&a, name);
    rc |= store_args_fmt(&a, "%.17g", created);
    json_object_foreach(doc, k, v)
    {
        rc |= store_args_str(&a, k);
        rc |= store_args_json(&a, v);
    }
    if (rc) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    r = store_eval(s, SC_JOB_CREATE, 4, a.n, a.v, a.len, err);
    if (!r) {
        rc = -TY_EREDIS;
    } else if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "INUSE", 5) == 0) {
        const char *arn = r->str[5] == ' ' ? r->str + 6 : "";
        rc = ty_err_set(err, TY_EINUSE, "TrainingJobName",
                        "Training job names must be unique within an AWS account and region, and "
                        "a training job with this name already exists (%s)",
                        arn);
    } else if (r->type != REDIS_REPLY_STRING) {
        rc = store__reply_err(r, "job_create", err);
    }
out:
    if (r)
        freeReplyObject(r);
    store_args_cleanup(&a);
    return rc;
}

json_t *store_job_get(struct store *s, const char *name, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    json_t *doc;
    if (store_key(key, sizeof(key), "ty:job:", name, NULL, err) < 0)
        return NULL;
    r = store__cmdv(s, err, "HGETALL", key, NULL);
    if (!r)
        return NULL;
    doc = store_doc_from_reply(r, err);
    freeReplyObject(r);
    return doc;
}

/* Maps the scripts' "NOTFOUND ..." / "CONFLICT <status>" error replies (a bare word would
   come back as "ERR <word>" from Redis 7, hence the trailing text); other errors are redis's. */
static int store_script_err(const redisReply *r, const char *what, struct ty_err *err)
{
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOTFOUND ", 9) == 0)
        return ty_err_set(err, TY_ENOTFOUND, NULL, "Requested resource not found.");
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "CONFLICT", 8) == 0)
        return ty_err_set(err, TY_ECONFLICT, NULL, "%s", r->str[8] == ' ' ? r->str + 9 : "");
    return store__reply_err(r, what, err);
}

json_t *store_job_transition(struct store *s, const char *name, const struct store_transition *t,
                             struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    struct store_args a;
    json_t *entry = NULL, *now = NULL, *doc = NULL;
    redisReply *r = NULL;
    double ts = store_ms_round(t->now);
    const char *k;
    json_t *v;
    int rc = 0;
    if (store_key(key, sizeof(key), "ty:job:", name, NULL, err) < 0)
        return NULL;
    if (t->set && !json_is_object(t->set)) {
        ty_err_set(err, TY_EINVAL, NULL, "store_job_transition: set is not an object");
        return NULL;
    }
    if (store_args_init(&a, 10 + 2 * (int)json_object_size(t->set)) < 0) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    entry = json_pack("{s:s, s:f, s:s}", "Status", t->secondary ? t->secondary : "", "StartTime",
                      ts, "StatusMessage", t->message ? t->message : "");
    now = json_real(ts);
    rc |= store_args_str(&a, key);
    rc |= store_args_str(&a, t->expect ? t->expect : "");
    rc |= store_args_str(&a, t->expect_secondary ? t->expect_secondary : "");
    rc |= store_args_str(&a, t->status ? t->status : "");
    rc |= store_args_str(&a, t->secondary ? t->secondary : "");
    rc |= entry ? store_args_json(&a, entry) : -TY_ENOMEM;
    rc |= store_args_fmt(&a, "%.3f", ts);
    rc |= now ? store_args_json(&a, now) : -TY_ENOMEM;
    rc |= store_args_str(&a, STORE_STATUS_PREFIX);
    rc |= store_args_str(&a, name);
    if (t->set) {
        json_object_foreach(t->set, k, v)
        {
            rc |= store_args_str(&a, k);
            if (json_is_null(v))
                rc |= store_args_str(&a, "");
            else
                rc |= store_args_json(&a, v);
        }
    }
    if (rc) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    r = store_eval(s, SC_JOB_TRANSITION, 1, a.n, a.v, a.len, err);
    if (!r)
        goto out;
    if (r->type != REDIS_REPLY_ARRAY) {
        store_script_err(r, "job_transition", err);
        goto out;
    }
    doc = store_doc_from_reply(r, err);
out:
    if (r)
        freeReplyObject(r);
    json_decref(entry);
    json_decref(now);
    store_args_cleanup(&a);
    return doc;
}

int store_job_delete(struct store *s, const char *name, const char *expect, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    const char *args[6];
    redisReply *r;
    int rc = 0;
    if (store_key(key, sizeof(key), "ty:job:", name, NULL, err) < 0)
        return -TY_EINVAL;
    args[0] = key;
    args[1] = "ty:idx:job";
    args[2] = name;
    args[3] = expect ? expect : "";
    args[4] = "ty:tags:";
    args[5] = STORE_STATUS_PREFIX;
    r = store_eval(s, SC_JOB_DELETE, 2, 6, args, NULL, err);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store_script_err(r, "job_delete", err);
    freeReplyObject(r);
    return rc;
}

/* ---- job list ---- */

struct store_cand {
    const char *name; /* borrowed from the index reply */
    double created;
    const char *status; /* borrowed: store_job_statuses or the query; NULL when not needed */
    double modified;
};

enum store_sort { SORT_CREATION, SORT_NAME, SORT_STATUS };

struct store_cursor {
    enum store_sort sort;
    int ascending;
    double created;
    const char *status;
    const char *name;
};

/* Ascending comparison of a candidate and a cursor position under the sort key. */
static int store_cand_cmp_raw(enum store_sort sort, double ca, const char *sa, const char *na,
                              double cb, const char *sb, const char *nb)
{
    int c = 0;
    if (sort == SORT_CREATION && ca != cb)
        c = ca < cb ? -1 : 1;
    else if (sort == SORT_STATUS)
        c = strcmp(sa ? sa : "", sb ? sb : "");
    if (c == 0)
        c = strcmp(na, nb);
    return c;
}

/* Stable merge sort (qsort has no context argument; no global state across threads). */
static void store_sort_cands(struct store_cand *v, struct store_cand *tmp, size_t n,
                             enum store_sort sort, int asc)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    store_sort_cands(v, tmp, h, sort, asc);
    store_sort_cands(v + h, tmp, n - h, sort, asc);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int c = store_cand_cmp_raw(sort, v[i].created, v[i].status, v[i].name, v[j].created,
                                   v[j].status, v[j].name);
        if (!asc)
            c = -c;
        tmp[k++] = c <= 0 ? v[i++] : v[j++];
    }
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof(*v));
}

static int store_contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return 1;
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i]) {
            unsigned char a = (unsigned char)p[i], b = (unsigned char)needle[i];
            if (a >= 'A' && a <= 'Z')
                a = (unsigned char)(a - 'A' + 'a');
            if (b >= 'A' && b <= 'Z')
                b = (unsigned char)(b - 'A' + 'a');
            if (a != b)
                break;
            i++;
        }
        if (i == n)
            return 1;
    }
    return 0;
}

static uint64_t store_fnv(uint64_t h, const char *s)
{
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    h ^= 0xff; /* field separator */
    h *= 1099511628211ULL;
    return h;
}

static uint64_t store_query_fingerprint(const struct store_job_query *q)
{
    char num[128];
    uint64_t h = 14695981039346656037ULL;
    h = store_fnv(h, q->name_contains);
    h = store_fnv(h, q->status_equals);
    snprintf(num, sizeof(num), "%.17g|%.17g|%.17g|%.17g", q->created_after, q->created_before,
             q->modified_after, q->modified_before);
    return store_fnv(h, num);
}

static const char store_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *store_b64_encode(const unsigned char *in, size_t n)
{
    char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        *o++ = store_b64[(v >> 18) & 63];
        *o++ = store_b64[(v >> 12) & 63];
        *o++ = i + 1 < n ? store_b64[(v >> 6) & 63] : '=';
        *o++ = i + 2 < n ? store_b64[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

/* Decodes into out (size cap, NUL-terminated); -1 when in is not base64 or too long. */
static int store_b64_decode(const char *in, char *out, size_t cap)
{
    size_t n = strlen(in), o = 0;
    if (n == 0 || n % 4 || n / 4 * 3 >= cap)
        return -1;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        for (int j = 0; j < 4; j++) {
            const char *p = in[i + (size_t)j] ? strchr(store_b64, in[i + (size_t)j]) : NULL;
            if (in[i + (size_t)j] == '=' && i + 4 == n && j >= 2)
                v[j] = -2;
            else if (!p)
                return -1;
            else
                v[j] = (int)(p - store_b64);
        }
        if (v[0] < 0 || v[1] < 0 || (v[2] == -2 && v[3] != -2))
            return -1;
        out[o++] = (char)((v[0] << 2) | (v[1] >> 4));
        if (v[2] >= 0)
            out[o++] = (char)(((v[1] & 15) << 4) | (v[2] >> 2));
        if (v[3] >= 0)
            out[o++] = (char)(((v[2] & 3) << 6) | v[3]);
    }
    out[o] = '\0';
    if (strlen(out) != o)
        return -1;
    return 0;
}

/* Token: base64("ty1\n<sort>\n<asc>\n<fingerprint>\n<created>\n<status>\n<name>"). */
static char *store_token_make(const struct store_job_query *q, enum store_sort sort, int asc,
                              const struct store_cand *last)
{
    struct ty_buf b;
    char *tok;
    ty_buf_init(&b, STORE_TOKEN_MAX);
    if (ty_buf_printf(&b, "ty1\n%d\n%d\n%016llx\n%.17g\n%s\n%s", (int)sort, asc,
                      (unsigned long long)store_query_fingerprint(q), last->created,
                      last->status ? last->status : "", last->name) < 0) {
        ty_buf_cleanup(&b);
        return NULL;
    }
    tok = store_b64_encode((const unsigned char *)b.data, b.len);
    ty_buf_cleanup(&b);
    return tok;
}

/* Parses a token into cur; buf (cap) holds the strings cur points into. */
static int store_token_parse(const struct store_job_query *q, enum store_sort sort, int asc,
                             const char *tok, char *buf, size_t cap, struct store_cursor *cur)
{
    char *f[7], *p = buf, *end;
    unsigned long long fp;
    if (store_b64_decode(tok, buf, cap) < 0)
        return -1;
    for (int i = 0; i < 7; i++) {
        f[i] = p;
        if (i < 6) {
            p = strchr(p, '\n');
            if (!p)
                return -1;
            *p++ = '\0';
        }
    }
    if (strcmp(f[0], "ty1") != 0 || f[1][0] != (char)('0' + (int)sort) || f[1][1] ||
        f[2][0] != (asc ? '1' : '0') || f[2][1])
        return -1;
    errno = 0;
    fp = strtoull(f[3], &end, 16);
    if (errno || *end || fp != (unsigned long long)store_query_fingerprint(q))
        return -1;
    cur->created = strtod(f[4], &end);
    if (*end || !*f[6])
        return -1;
    cur->sort = sort;
    cur->ascending = asc;
    cur->status = f[5];
    cur->name = f[6];
    return 0;
}

/* The training-job statuses; each has a set ty:idx:job:status:<status> kept by the scripts. */
static const char *const store_job_statuses[] = {"InProgress", "Completed", "Failed",
                                                 "Stopping",   "Stopped",   "Deleting"};
#define STORE_NSTATUS (sizeof(store_job_statuses) / sizeof(store_job_statuses[0]))

struct store_named {
    const char *name;   /* borrowed from a reply */
    const char *status; /* borrowed: store_job_statuses or the query */
};

static int store_named_cmp(const void *a, const void *b)
{
    return strcmp(((const struct store_named *)a)->name, ((const struct store_named *)b)->name);
}

/*
 * Sets the status of cands[0..n) from the status sets (only `only`'s set when given) and
 * drops the candidates that are in none of them (deleted meanwhile, or filtered out).
 */
static int store_fill_status(struct store *s, const char *only, struct store_cand *c, size_t *n,
                             struct ty_err *err)
{
    char keys[STORE_NSTATUS][STORE_KEY_MAX];
    const char *argv[STORE_NSTATUS][2];
    const char *const *argvp[STORE_NSTATUS];
    const char *sts[STORE_NSTATUS];
    int argc[STORE_NSTATUS];
    redisReply *rep[STORE_NSTATUS] = {NULL};
    struct store_named *all = NULL;
    size_t ns = only ? 1 : STORE_NSTATUS, total = 0, m = 0, out = 0;
    int rc = 0;
    for (size_t i = 0; i < ns; i++) {
        sts[i] = only ? only : store_job_statuses[i];
        if (store_key(keys[i], STORE_KEY_MAX, STORE_STATUS_PREFIX, sts[i], NULL, err) < 0)
            return -TY_EINVAL;
        argv[i][0] = "SMEMBERS";
        argv[i][1] = keys[i];
        argvp[i] = argv[i];
        argc[i] = 2;
    }
    if (store__pipeline(s, ns, argc, argvp, rep, err) < 0)
        return -TY_EREDIS;
    for (size_t i = 0; i < ns; i++) {
        if (rep[i]->type != REDIS_REPLY_ARRAY) {
            rc = store__reply_err(rep[i], "SMEMBERS", err);
            goto out;
        }
        total += rep[i]->elements;
    }
    all = calloc(total + 1, sizeof(*all));
    if (!all) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < ns; i++) {
        for (size_t j = 0; j < rep[i]->elements; j++) {
            if (rep[i]->element[j]->type != REDIS_REPLY_STRING)
                continue;
            all[m].name = rep[i]->element[j]->str;
            all[m].status = sts[i];
            m++;
        }
    }
    qsort(all, m, sizeof(*all), store_named_cmp);
    for (size_t i = 0; i < *n; i++) {
        struct store_named key = {c[i].name, NULL};
        const struct store_named *hit = bsearch(&key, all, m, sizeof(*all), store_named_cmp);
        if (!hit)
            continue;
        c[out] = c[i];
        c[out].status = hit->status;
        out++;
    }
    *n = out;
out:
    free(all);
    for (size_t i = 0; i < ns; i++)
        freeReplyObject(rep[i]);
    return rc;
}

/* Fills the LastModifiedTime of cands[0..n) with pipelined HGETs; drops vanished jobs. */
static int store_fill_modified(struct store *s, struct store_cand *c, size_t *n, struct ty_err *err)
{
    enum { CHUNK = 1024 };
    char(*keys)[STORE_KEY_MAX] = malloc((size_t)CHUNK * STORE_KEY_MAX);
    const char *(*argv)[3] = malloc(CHUNK * sizeof(*argv));
    const char *const **argvp = malloc(CHUNK * sizeof(*argvp));
    int *argc = malloc(CHUNK * sizeof(*argc));
    redisReply **rep = calloc(CHUNK, sizeof(*rep));
    size_t out = 0;
    int rc = 0;
    if (!keys || !argv || !argvp || !argc || !rep) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    for (size_t base = 0; base < *n; base += CHUNK) {
        size_t m = *n - base < CHUNK ? *n - base : CHUNK;
        for (size_t i = 0; i < m; i++) {
            snprintf(keys[i], STORE_KEY_MAX, "ty:job:%s", c[base + i].name);
            argv[i][0] = "HGET";
            argv[i][1] = keys[i];
            argv[i][2] = "LastModifiedTime";
            argvp[i] = argv[i];
            argc[i] = 3;
        }
        rc = store__pipeline(s, m, argc, argvp, rep, err);
        if (rc < 0)
            goto done;
        for (size_t i = 0; i < m; i++) {
            redisReply *r = rep[i];
            if (r->type == REDIS_REPLY_STRING) {
                struct store_cand cand = c[base + i];
                json_t *mod = json_loadb(r->str, r->len, JSON_DECODE_ANY, NULL);
                cand.modified = json_is_number(mod) ? json_number_value(mod) : cand.created;
                json_decref(mod);
                c[out++] = cand;
            }
            freeReplyObject(r);
            rep[i] = NULL;
        }
    }
done:
    *n = rc < 0 ? 0 : out;
    free(keys);
    free(argv);
    free(argvp);
    free(argc);
    free(rep);
    return rc;
}

/* Keeps the candidates whose WarmPoolStatus.Status is status (one HGET per candidate, pipelined
   as store_fill_modified). 0 or error. */
static int store_filter_warm(struct store *s, const char *status, struct store_cand *c, size_t *n,
                             struct ty_err *err)
{
    enum { CHUNK = 1024 };
    char(*keys)[STORE_KEY_MAX] = malloc((size_t)CHUNK * STORE_KEY_MAX);
    const char *(*argv)[3] = malloc(CHUNK * sizeof(*argv));
    const char *const **argvp = malloc(CHUNK * sizeof(*argvp));
    int *argc = malloc(CHUNK * sizeof(*argc));
    redisReply **rep = calloc(CHUNK, sizeof(*rep));
    size_t out = 0;
    int rc = 0;
    if (!keys || !argv || !argvp || !argc || !rep) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    for (size_t base = 0; base < *n; base += CHUNK) {
        size_t m = *n - base < CHUNK ? *n - base : CHUNK;
        for (size_t i = 0; i < m; i++) {
            snprintf(keys[i], STORE_KEY_MAX, "ty:job:%s", c[base + i].name);
            argv[i][0] = "HGET";
            argv[i][1] = keys[i];
            argv[i][2] = "WarmPoolStatus";
            argvp[i] = argv[i];
            argc[i] = 3;
        }
        rc = store__pipeline(s, m, argc, argvp, rep, err);
        if (rc < 0)
            goto done;
        for (size_t i = 0; i < m; i++) {
            redisReply *r = rep[i];
            if (r->type == REDIS_REPLY_STRING) {
                json_t *w = json_loadb(r->str, r->len, 0, NULL);
                const char *st = json_string_value(json_object_get(w, "Status"));
                if (st && strcmp(st, status) == 0)
                    c[out++] = c[base + i];
                json_decref(w);
            }
            freeReplyObject(r);
            rep[i] = NULL;
        }
    }
done:
    *n = rc < 0 ? 0 : out;
    free(keys);
    free(argv);
    free(argvp);
    free(argc);
    free(rep);
    return rc;
}

json_t *store_job_list(struct store *s, const struct store_job_query *q, char **next_token,
                       struct ty_err *err)
{
    redisReply *idx = NULL;
    redisReply **rep = NULL;
    struct store_cand *c = NULL, *tmp = NULL;
    size_t n = 0, start = 0, take = 0;
    enum store_sort sort = SORT_CREATION;
    int asc = q->ascending ? 1 : 0, max = q->max_results;
    int need_status = q->status_equals != NULL;
    int need_modified = q->modified_after > 0 || q->modified_before > 0;
    char tokbuf[STORE_TOKEN_MAX];
    struct store_cursor cur = {0};
    json_t *out = NULL;
    char *tok = NULL;

    if (q->sort_by && strcmp(q->sort_by, "Name") == 0)
        sort = SORT_NAME;
    else if (q->sort_by && strcmp(q->sort_by, "Status") == 0)
        sort = SORT_STATUS;
    else if (q->sort_by && *q->sort_by && strcmp(q->sort_by, "CreationTime") != 0) {
        ty_err_set(err, TY_EINVAL, "SortBy", "Invalid SortBy '%s'", q->sort_by);
        return NULL;
    }
    if (sort == SORT_STATUS)
        need_status = 1;
    if (max <= 0)
        max = 10;
    if (max > 100)
        max = 100;
    if (q->next_token && *q->next_token &&
        store_token_parse(q, sort, asc, q->next_token, tokbuf, sizeof(tokbuf), &cur) < 0) {
        ty_err_set(err, TY_EINVAL, "NextToken", "Invalid pagination token");
        return NULL;
    }

    idx = store__cmdv(s, err, "ZRANGE", "ty:idx:job", "0", "-1", "WITHSCORES", NULL);
    if (!idx)
        return NULL;
    if (idx->type != REDIS_REPLY_ARRAY || idx->elements % 2) {
        store__reply_err(idx, "ZRANGE", err);
        goto out;
    }
    c = calloc(idx->elements / 2 + 1, sizeof(*c));
    tmp = calloc(idx->elements / 2 + 1, sizeof(*tmp));
    if (!c || !tmp) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i + 1 < idx->elements; i += 2) {
        const char *name = idx->element[i]->str;
        double created;
        if (!name || !idx->element[i + 1]->str)
            continue;
        created = strtod(idx->element[i + 1]->str, NULL);
        if (q->name_contains && !store_contains_ci(name, q->name_contains))
            continue;
        if (q->created_after > 0 && !(created > q->created_after))
            continue;
        if (q->created_before > 0 && !(created < q->created_before))
            continue;
        c[n].name = name;
        c[n].created = created;
        c[n].modified = created;
        n++;
    }
    if (need_status && store_fill_status(s, q->status_equals, c, &n, err) < 0)
        goto out;
    if (need_modified) {
        size_t keep = 0;
        if (store_fill_modified(s, c, &n, err) < 0)
            goto out;
        for (size_t i = 0; i < n; i++) {
            if (q->modified_after > 0 && !(c[i].modified > q->modified_after))
                continue;
            if (q->modified_before > 0 && !(c[i].modified < q->modified_before))
                continue;
            c[keep++] = c[i];
        }
        n = keep;
    }
    if (q->warm_pool_status && store_filter_warm(s, q->warm_pool_status, c, &n, err) < 0)
        goto out;
    store_sort_cands(c, tmp, n, sort, asc);
    if (cur.name) {
        while (start < n) {
            int cmp = store_cand_cmp_raw(sort, c[start].created, c[start].status, c[start].name,
                                         cur.created, cur.status, cur.name);
            if ((asc ? cmp : -cmp) > 0)
                break;
            start++;
        }
    }
    take = n - start < (size_t)max ? n - start : (size_t)max;
    out = json_array();
    if (!out) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    if (take > 0) {
        char(*keys)[STORE_KEY_MAX] = malloc(take * STORE_KEY_MAX);
        const char *(*argv)[2] = malloc(take * sizeof(*argv));
        const char *const **argvp = malloc(take * sizeof(*argvp));
        int *argc = malloc(take * sizeof(*argc));
        int rc = -TY_ENOMEM;
        rep = calloc(take, sizeof(*rep));
        if (keys && argv && argvp && argc && rep) {
            for (size_t i = 0; i < take; i++) {
                snprintf(keys[i], STORE_KEY_MAX, "ty:job:%s", c[start + i].name);
                argv[i][0] = "HGETALL";
                argv[i][1] = keys[i];
                argvp[i] = argv[i];
                argc[i] = 2;
            }
            rc = store__pipeline(s, take, argc, argvp, rep, err);
        } else {
            ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        }
        free(keys);
        free(argv);
        free(argvp);
        free(argc);
        if (rc < 0) {
            ty_safefree(rep);
            json_decref(out);
            out = NULL;
            goto out;
        }
        for (size_t i = 0; i < take; i++) {
            struct ty_err e2;
            json_t *doc = store_doc_from_reply(rep[i], &e2);
            if (doc)
                json_array_append_new(out, doc);
        }
    }
    if (start + take < n) {
        tok = store_token_make(q, sort, asc, &c[start + take - 1]);
        if (!tok) {
            ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            json_decref(out);
            out = NULL;
            goto out;
        }
    }
out:
    if (rep) {
        for (size_t i = 0; i < take; i++)
            if (rep[i])
                freeReplyObject(rep[i]);
        free(rep);
    }
    free(c);
    free(tmp);
    if (idx)
        freeReplyObject(idx);
    if (out && next_token)
        *next_token = tok;
    else
        free(tok);
    return out;
}

/* ---- tags ---- */

int store_tags_add(struct store *s, const char *arn, json_t *tags, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    struct store_args a;
    size_t i;
    json_t *t;
    redisReply *r;
    int rc = 0;
    if (!json_is_array(tags))
        return ty_err_set(err, TY_EINVAL, "Tags", "tags must be a list");
    if (json_array_size(tags) == 0)
        return 0;
    if (store_key(key, sizeof(key), "ty:tags:", arn, NULL, err) < 0)
        return -TY_EINVAL;
    if (store_args_init(&a, 2 + 2 * (int)json_array_size(tags)) < 0) {
        store_args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc |= store_args_str(&a, "HSET");
    rc |= store_args_str(&a, key);
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        if (!k) {
            store_args_cleanup(&a);
            return ty_err_set(err, TY_EINVAL, "Tags", "tag without a Key");
        }
        rc |= store_args_str(&a, k);
        rc |= store_args_str(&a, v ? v : "");
    }
    if (rc) {
        store_args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    r = store__cmd(s, a.n, a.v, a.len, 0, err);
    store_args_cleanup(&a);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "HSET", err);
    freeReplyObject(r);
    return rc;
}

static int store_tag_cmp(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "Key"));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "Key"));
    return strcmp(x, y);
}

json_t *store_tags_list(struct store *s, const char *arn, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    json_t **items = NULL, *out = NULL;
    size_t n = 0;
    if (store_key(key, sizeof(key), "ty:tags:", arn, NULL, err) < 0)
        return NULL;
    r = store__cmdv(s, err, "HGETALL", key, NULL);
    if (!r)
        return NULL;
    if (r->type != REDIS_REPLY_ARRAY) {
        store__reply_err(r, "HGETALL", err);
        goto out;
    }
    items = calloc(r->elements / 2 + 1, sizeof(*items));
    out = json_array();
    if (!items || !out) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        json_decref(out);
        out = NULL;
        goto out;
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        json_t *t = json_pack("{s:s%, s:s%}", "Key", r->element[i]->str, r->element[i]->len,
                              "Value", r->element[i + 1]->str, r->element[i + 1]->len);
        if (t)
            items[n++] = t;
    }
    qsort(items, n, sizeof(*items), store_tag_cmp);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, items[i]);
out:
    free(items);
    freeReplyObject(r);
    return out;
}

int store_tags_delete(struct store *s, const char *arn, json_t *keys, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    struct store_args a;
    size_t i;
    json_t *k;
    redisReply *r;
    int rc = 0;
    if (!json_is_array(keys))
        return ty_err_set(err, TY_EINVAL, "TagKeys", "tag keys must be a list");
    if (json_array_size(keys) == 0)
        return 0;
    if (store_key(key, sizeof(key), "ty:tags:", arn, NULL, err) < 0)
        return -TY_EINVAL;
    if (store_args_init(&a, 2 + (int)json_array_size(keys)) < 0) {
        store_args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc |= store_args_str(&a, "HDEL");
    rc |= store_args_str(&a, key);
    json_array_foreach(keys, i, k)
    {
        if (!json_is_string(k)) {
            store_args_cleanup(&a);
            return ty_err_set(err, TY_EINVAL, "TagKeys", "tag key is not a string");
        }
        rc |= store_args_str(&a, json_string_value(k));
    }
    if (rc) {
        store_args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    r = store__cmd(s, a.n, a.v, a.len, 0, err);
    store_args_cleanup(&a);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "HDEL", err);
    freeReplyObject(r);
    return rc;
}

int store_tags_clear(struct store *s, const char *arn, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    int rc = 0;
    if (store_key(key, sizeof(key), "ty:tags:", arn, NULL, err) < 0)
        return -TY_EINVAL;
    r = store__cmdv(s, err, "DEL", key, NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "DEL", err);
    freeReplyObject(r);
    return rc;
}

/* ---- principals ---- */

int store_principal_put(struct store *s, const char *access_key, const char *secret,
                        const char *arn, const char *user, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    int rc = 0;
    if (!access_key || !*access_key || !secret || !arn)
        return ty_err_set(err, TY_EINVAL, NULL, "store_principal_put: bad arguments");
    if (store_key(key, sizeof(key), "ty:principal:", access_key, NULL, err) < 0)
        return -TY_EINVAL;
    r = store__cmdv(s, err, "HSET", key, "secret", secret, "arn", arn, "user", user ? user : "",
                    NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "HSET", err);
    freeReplyObject(r);
    return rc;
}

int store_principal_get(struct store *s, const char *access_key, char *secret, size_t secret_n,
                        char *arn, size_t arn_n, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    int rc = 0;
    if (store_key(key, sizeof(key), "ty:principal:", access_key, NULL, err) < 0)
        return -TY_EINVAL;
    /* status: "Inactive" after IAM UpdateAccessKey (store_iam.c): then the key is unknown */
    r = store__cmdv(s, err, "HMGET", key, "secret", "arn", "status", NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        rc = store__reply_err(r, "HMGET", err);
    } else if (r->element[0]->type != REDIS_REPLY_STRING ||
               (r->element[2]->type == REDIS_REPLY_STRING &&
                strcmp(r->element[2]->str, "Inactive") == 0)) {
        rc = ty_err_set(err, TY_ENOTFOUND, NULL, "unknown access key");
    } else {
        if (secret && secret_n)
            snprintf(secret, secret_n, "%s", r->element[0]->str);
        if (arn && arn_n)
            snprintf(arn, arn_n, "%s",
                     r->element[1]->type == REDIS_REPLY_STRING ? r->element[1]->str : "");
    }
    freeReplyObject(r);
    return rc;
}

/* ---- CloudWatch Logs ---- */

int store_log_append(struct store *s, const char *group, const char *stream, json_t *events,
                     struct ty_err *err)
{
    char k1[STORE_KEY_MAX], k2[STORE_KEY_MAX], k3[STORE_KEY_MAX];
    struct store_args a;
    size_t i;
    json_t *e;
    redisReply *r;
    int rc = 0;
    if (!json_is_array(events))
        return ty_err_set(err, TY_EINVAL, "logEvents", "events must be a list");
    if (!group || !*group || !stream || !*stream)
        return ty_err_set(err, TY_EINVAL, NULL, "log group and stream are required");
    if (store_key(k1, sizeof(k1), "ty:log:", group, stream, err) < 0 ||
        store_key(k2, sizeof(k2), "ty:logstreams:", group, NULL, err) < 0 ||
        store_key(k3, sizeof(k3), "ty:logstream:", group, stream, err) < 0)
        return -TY_EINVAL;
    if (json_array_size(events) > (size_t)STORE_MAX_ARGS / 2)
        return ty_err_set(err, TY_ETOOBIG, "logEvents", "too many events");
    if (store_args_init(&a, 5 + 2 * (int)json_array_size(events)) < 0) {
        store_args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc |= store_args_str(&a, k1);
    rc |= store_args_str(&a, k2);
    rc |= store_args_str(&a, k3);
    rc |= store_args_str(&a, stream);
    rc |= store_args_fmt(&a, "%lld", store_now_ms());
    json_array_foreach(events, i, e)
    {
        json_t *ts = json_object_get(e, "timestamp");
        json_t *msg = json_object_get(e, "message");
        if (!json_is_number(ts) || !json_is_string(msg)) {
            store_args_cleanup(&a);
            return ty_err_set(err, TY_EINVAL, "logEvents",
                              "each event needs a numeric timestamp and a string message");
        }
        rc |= store_args_fmt(&a, "%lld", (long long)json_number_value(ts));
        rc |= store_args_add(&a, json_string_value(msg), json_string_length(msg), 0);
    }
    if (rc) {
        store_args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    r = store_eval(s, SC_LOG_APPEND, 3, a.n, a.v, a.len, err);
    store_args_cleanup(&a);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "log_append", err);
    freeReplyObject(r);
    return rc;
}

long store_log_count(struct store *s, const char *group, const char *stream, struct ty_err *err)
{
    char k1[STORE_KEY_MAX];
    redisReply *r;
    long n;

    if (store_key(k1, sizeof(k1), "ty:log:", group, stream, err) < 0)
        return -TY_EINVAL;
    if (!(r = store__cmdv(s, err, "XLEN", k1, NULL)))
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER) {
        n = store__reply_err(r, "XLEN", err);
        freeReplyObject(r);
        return n;
    }
    n = (long)r->integer;
    freeReplyObject(r);
    return n;
}

static long long store_hash_ll(const redisReply *h, const char *field, int *found)
{
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        if (h->element[i]->type == REDIS_REPLY_STRING && strcmp(h->element[i]->str, field) == 0 &&
            h->element[i + 1]->type == REDIS_REPLY_STRING) {
            *found = 1;
            return strtoll(h->element[i + 1]->str, NULL, 10);
        }
    }
    *found = 0;
    return 0;
}

static int store_stream_cmp_last(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "lastEventTimestamp"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "lastEventTimestamp"));
    if (x != y)
        return x < y ? -1 : 1;
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "logStreamName")),
                  json_string_value(json_object_get(*(json_t *const *)b, "logStreamName")));
}

json_t *store_log_streams(struct store *s, const char *group, const char *prefix, int by_last_event,
                          int descending, struct ty_err *err)
{
    char key[STORE_KEY_MAX], lo[STORE_KEY_MAX], hi[STORE_KEY_MAX];
    redisReply *names = NULL, **rep = NULL;
    json_t **items = NULL, *out = NULL;
    size_t n = 0, count;
    if (store_key(key, sizeof(key), "ty:logstreams:", group, NULL, err) < 0)
        return NULL;
    if (prefix && *prefix) {
        if (snprintf(lo, sizeof(lo), "[%s", prefix) >= (int)sizeof(lo) ||
            snprintf(hi, sizeof(hi), "[%s\xff", prefix) >= (int)sizeof(hi)) {
            ty_err_set(err, TY_EINVAL, "logStreamNamePrefix", "prefix too long");
            return NULL;
        }
    } else {
        snprintf(lo, sizeof(lo), "-");
        snprintf(hi, sizeof(hi), "+");
    }
    names = store__cmdv(s, err, "ZRANGEBYLEX", key, lo, hi, NULL);
    if (!names)
        return NULL;
    if (names->type != REDIS_REPLY_ARRAY) {
        store__reply_err(names, "ZRANGEBYLEX", err);
        goto out;
    }
    count = names->elements;
    out = json_array();
    if (!out) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    if (count == 0)
        goto out;
    {
        char(*keys)[STORE_KEY_MAX] = malloc(count * STORE_KEY_MAX);
        const char *(*argv)[2] = malloc(count * sizeof(*argv));
        const char *const **argvp = malloc(count * sizeof(*argvp));
        int *argc = malloc(count * sizeof(*argc));
        int rc = -TY_ENOMEM;
        rep = calloc(count, sizeof(*rep));
        items = calloc(count, sizeof(*items));
        if (keys && argv && argvp && argc && rep && items) {
            for (size_t i = 0; i < count; i++) {
                snprintf(keys[i], STORE_KEY_MAX, "ty:logstream:%s:%s", group,
                         names->element[i]->str);
                argv[i][0] = "HGETALL";
                argv[i][1] = keys[i];
                argvp[i] = argv[i];
                argc[i] = 2;
            }
            rc = store__pipeline(s, count, argc, argvp, rep, err);
        } else {
            ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        }
        free(keys);
        free(argv);
        free(argvp);
        free(argc);
        if (rc < 0) {
            ty_safefree(rep);
            json_decref(out);
            out = NULL;
            goto out;
        }
    }
    for (size_t i = 0; i < count; i++) {
        const char *name = names->element[i]->str;
        const redisReply *h = rep[i];
        char arn[2 * STORE_KEY_MAX], token[64];
        int has_first, has_last, has_ing, has_c, has_b;
        long long created, first, last, ing, bytes;
        json_t *o;
        if (h->type != REDIS_REPLY_ARRAY || h->elements == 0)
            continue;
        created = store_hash_ll(h, "creationTime", &has_c);
        first = store_hash_ll(h, "firstEventTimestamp", &has_first);
        last = store_hash_ll(h, "lastEventTimestamp", &has_last);
        ing = store_hash_ll(h, "lastIngestionTime", &has_ing);
        bytes = store_hash_ll(h, "storedBytes", &has_b);
        snprintf(arn, sizeof(arn), "arn:aws:logs:%s:%s:log-group:%s:log-stream:%s", s->region,
                 s->account, group, name);
        snprintf(token, sizeof(token), "49%030lld%022lld", bytes, has_ing ? ing : created);
        o = json_pack("{s:s, s:I, s:s, s:s, s:I}", "logStreamName", name, "creationTime",
                      (json_int_t)created, "arn", arn, "uploadSequenceToken", token, "storedBytes",
                      (json_int_t)bytes);
        if (!o)
            continue;
        if (has_first)
            json_object_set_new(o, "firstEventTimestamp", json_integer(first));
        if (has_last)
            json_object_set_new(o, "lastEventTimestamp", json_integer(last));
        if (has_ing)
            json_object_set_new(o, "lastIngestionTime", json_integer(ing));
        items[n++] = o;
    }
    if (by_last_event)
        qsort(items, n, sizeof(*items), store_stream_cmp_last);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, items[descending ? n - 1 - i : i]);
out:
    if (rep) {
        for (size_t i = 0; i < names->elements; i++)
            if (rep[i])
                freeReplyObject(rep[i]);
        free(rep);
    }
    free(items);
    freeReplyObject(names);
    return out;
}

json_t *store_log_range(struct store *s, const char *group, const char *stream,
                        const char *start_id, const char *end_id, int reverse, int count,
                        struct ty_err *err)
{
    char k1[STORE_KEY_MAX], k3[STORE_KEY_MAX], cnt[16];
    const char *a0[2], *a1[6];
    const char *const *argv[2] = {a0, a1};
    int argc[2] = {2, 6};
    redisReply *rep[2] = {NULL, NULL};
    json_t *out = NULL;
    if (store_key(k1, sizeof(k1), "ty:log:", group, stream, err) < 0 ||
        store_key(k3, sizeof(k3), "ty:logstream:", group, stream, err) < 0)
        return NULL;
    if (count <= 0)
        count = 10000;
    snprintf(cnt, sizeof(cnt), "%d", count);
    a0[0] = "EXISTS";
    a0[1] = k3;
    a1[0] = reverse ? "XREVRANGE" : "XRANGE";
    a1[1] = k1;
    a1[2] = reverse ? (end_id ? end_id : "+") : (start_id ? start_id : "-");
    a1[3] = reverse ? (start_id ? start_id : "-") : (end_id ? end_id : "+");
    a1[4] = "COUNT";
    a1[5] = cnt;
    if (store__pipeline(s, 2, argc, argv, rep, err) < 0)
        return NULL;
    if (rep[0]->type != REDIS_REPLY_INTEGER) {
        store__reply_err(rep[0], "EXISTS", err);
        goto out;
    }
    if (rep[0]->integer == 0) {
        ty_err_set(err, TY_ELOGNOTFOUND, "logStreamName",
                   "The specified log stream does not exist.");
        goto out;
    }
    if (rep[1]->type != REDIS_REPLY_ARRAY) {
        store__reply_err(rep[1], a1[0], err);
        goto out;
    }
    out = json_array();
    for (size_t i = 0; out && i < rep[1]->elements; i++) {
        const redisReply *e = rep[1]->element[i];
        const char *msg = "";
        size_t msg_len = 0;
        long long ts = 0;
        json_t *o;
        if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
            e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_ARRAY)
            continue;
        for (size_t j = 0; j + 1 < e->element[1]->elements; j += 2) {
            const redisReply *f = e->element[1]->element[j], *v = e->element[1]->element[j + 1];
            if (strcmp(f->str, "ts") == 0)
                ts = strtoll(v->str, NULL, 10);
            else if (strcmp(f->str, "msg") == 0) {
                msg = v->str;
                msg_len = v->len;
            }
        }
        o = json_pack("{s:s, s:I, s:s%, s:I}", "id", e->element[0]->str, "timestamp",
                      (json_int_t)ts, "message", msg, msg_len, "ingestionTime",
                      (json_int_t)strtoll(e->element[0]->str, NULL, 10));
        if (o)
            json_array_append_new(out, o);
    }
    if (!out)
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
out:
    freeReplyObject(rep[0]);
    freeReplyObject(rep[1]);
    return out;
}
