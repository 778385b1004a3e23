/*
 * store.c - trainyard's connection to Redis: the connection, the command helpers, the
 * argument vectors and keys shared by the store's files (store_int.h), the scripts' table.
 *
 * Owns: one hiredis connection per struct store (reconnected once when it breaks), the
 * script table, and the layout of the `ty:` keys (store.h). The rest of the store is one file
 * a concern: store_job.c (job documents), store_joblist.c (ListTrainingJobs),
 * store_tags.c, store_principal.c, store_log.c (CloudWatch Logs). Does not own the queue's
 * consumer group (queue.c) nor any wire format (the ops layer turns documents into responses).
 *
 * Invariants: every redisReply is freed on every path; a command that fails on a broken
 * connection is retried once on a new one.
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

#include "store_int.h"
#include "store_lua.h"
#include "store_script.h"
#include "ty_buf.h"
#include "ty_log.h"
#include "ty_rand.h"
#include "ty_time.h"

#define STORE_CONNECT_TIMEOUT_S 2
#define STORE_DEPLOYMENT_KEY    "ty:deployment"
#define STORE_CMD_TIMEOUT_MS    10000

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

const char *store__region(const struct store *s)
{
    return s->region;
}

const char *store__account(const struct store *s)
{
    return s->account;
}

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

redisContext *store__dial(struct store *s, struct ty_err *err)
{
    struct timeval tv = {STORE_CONNECT_TIMEOUT_S, 0};
    redisContext *c;
    if (s->is_unix)
        c = redisConnectUnixWithTimeout(s->path, tv);
    else
        c = redisConnectWithTimeout(s->host, s->port, tv);
    if (!c) {
        ty_err_set(err, TY_EREDIS, NULL, "cannot connect to redis at %s: out of memory", s->where);
        return NULL;
    }
    if (c->err) {
        ty_err_set(err, TY_EREDIS, NULL, "cannot connect to redis at %s: %s", s->where, c->errstr);
        redisFree(c);
        return NULL;
    }
    store_set_timeout(c, STORE_CMD_TIMEOUT_MS);
    if (s->password[0]) {
        const char *argv[3] = {"AUTH", s->user, s->password};
        int rc = s->user[0] ? store_setup_cmd(s, c, 3, argv, err)
                            : store_setup_cmd(s, c, 2, (const char *[]){"AUTH", s->password}, err);
        if (rc < 0) {
            redisFree(c);
            return NULL;
        }
    }
    if (s->db) {
        char db[16];
        const char *argv[2] = {"SELECT", db};
        snprintf(db, sizeof(db), "%d", s->db);
        if (store_setup_cmd(s, c, 2, argv, err) < 0) {
            redisFree(c);
            return NULL;
        }
    }
    return c;
}

static int store_connect(struct store *s, struct ty_err *err)
{
    if (!(s->c = store__dial(s, err)))
        return -TY_EREDIS;
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

int store__set_json_ex(struct store *s, const char *key, const json_t *value, int ttl_s,
                       struct ty_err *err)
{
    char ttl[16], *text;
    redisReply *r;
    int rc = 0;
    if (ttl_s < 1)
        return ty_err_set(err, TY_EINVAL, NULL, "ttl must be positive");
    text = json_dumps(value, JSON_COMPACT);
    if (!text)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    snprintf(ttl, sizeof(ttl), "%d", ttl_s);
    r = store__cmdv(s, err, "SET", key, text, "EX", ttl, NULL);
    free(text);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_STATUS)
        rc = store__reply_err(r, "SET", err);
    freeReplyObject(r);
    return rc;
}

int store__reply_err(const redisReply *r, const char *what, struct ty_err *err)
{
    if (r && r->type == REDIS_REPLY_ERROR)
        return ty_err_set(err, TY_EREDIS, NULL, "redis: %s: %s", what, r->str);
    return ty_err_set(err, TY_EREDIS, NULL, "redis: %s: unexpected reply", what);
}

/* EVALSHA this file's script sc (store_script.h). new: the reply, or NULL with err. */
/* Job documents written by this process so far (store__job_writes); every script of the table
   but the log's writes one. */
static _Atomic unsigned long long store_job_writes;

unsigned long long store__job_writes(void)
{
    return store_job_writes;
}

redisReply *store__eval(struct store *s, enum store_sc sc, int nkeys, int nargs, const char **args,
                        const size_t *lens, struct ty_err *err)
{
    redisReply *r = store_script_eval(s, &store_scripts[sc], nkeys, nargs, args, lens, err);
    /* counted once the script returned, whatever it answered: it may have written */
    if (sc != SC_LOG_APPEND)
        store_job_writes++;
    return r;
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

int store_deployment_id(struct store *s, char *out, size_t n, struct ty_err *err)
{
    char fresh[STORE_DEPLOYMENT_LEN + 1];
    redisReply *r;
    int rc = 0;

    if (n < sizeof(fresh) || ty_rand_hex(fresh, STORE_DEPLOYMENT_LEN) != 0) {
        ty_err_set(err, TY_EINTERNAL, NULL, "cannot draw a deployment id");
        return -TY_EINTERNAL;
    }
    r = store__cmdv(s, err, "SET", STORE_DEPLOYMENT_KEY, fresh, "NX", NULL);
    if (!r)
        return -TY_EREDIS;
    freeReplyObject(r);
    if (!(r = store__cmdv(s, err, "GET", STORE_DEPLOYMENT_KEY, NULL)))
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_STRING && r->len > 0 && r->len < n)
        snprintf(out, n, "%s", r->str);
    else
        rc = store__reply_err(r, "GET " STORE_DEPLOYMENT_KEY, err);
    freeReplyObject(r);
    return rc;
}

/* ---- small helpers ---- */

int store__key(char *out, size_t n, const char *a, const char *b, const char *c, struct ty_err *err)
{
    int len = snprintf(out, n, "%s%s%s%s", a, b, c ? ":" : "", c ? c : "");
    if (len < 0 || (size_t)len >= n)
        return ty_err_set(err, TY_EINVAL, NULL, "name too long");
    return 0;
}

/* Epoch seconds rounded to milliseconds (timestamps keep ms, and cjson keeps 13 digits). */
double store__ms_round(double t)
{
    double v = t * 1000.0;
    long long n = (long long)(v < 0 ? v - 0.5 : v + 0.5);
    return (double)n / 1000.0;
}

/* ---- argument vectors (store_int.h) ---- */

int store__args_init(struct store_args *a, int cap)
{
    a->n = 0;
    a->cap = cap;
    a->v = calloc((size_t)cap, sizeof(*a->v));
    a->len = calloc((size_t)cap, sizeof(*a->len));
    a->owned = calloc((size_t)cap, sizeof(*a->owned));
    return a->v && a->len && a->owned ? 0 : -TY_ENOMEM;
}

void store__args_cleanup(struct store_args *a)
{
    for (int i = 0; a->owned && i < a->n; i++)
        free(a->owned[i]);
    free(a->v);
    free(a->len);
    free(a->owned);
    memset(a, 0, sizeof(*a));
}

/* Adds s (borrowed) or, with own, a malloc'd string (stolen, even on failure). */
int store__args_add(struct store_args *a, const char *s, size_t len, int own)
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

int store__args_str(struct store_args *a, const char *s)
{
    return store__args_add(a, s, strlen(s), 0);
}

int store__args_json(struct store_args *a, const json_t *v)
{
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    return store__args_add(a, t, t ? strlen(t) : 0, 1);
}

int store__args_fmt(struct store_args *a, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return -TY_EINVAL;
    return store__args_add(a, strdup(tmp), (size_t)n, 1);
}
