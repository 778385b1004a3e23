/*
 * launchsrv.c - the executor's end of the launchers' wire (launchsrv.h): the listener, the
 * table of attempts, and each request's checks and answer.
 */
#include "launchsrv.h"

#include "http.h"
#include "ty_time.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAUNCHSRV_ENDED_KEEP_S 3600 /* an ended attempt's launchers are answered 410 this long */
#define LAUNCHSRV_THREADS      4

/* One attempt of one job. Freed only under the table's lock with refs 0. */
struct launchsrv_att {
    char token[LAUNCHWIRE_TOKEN_HEX + 1];
    char job[64];
    int attempt, hosts;
    long long *acked; /* per host: last applied seq */
    double *seen;     /* per host: last contact, epoch s */
    int stop, grace, upload;
    int ended;
    double ended_at;
    int refs;              /* requests using it outside the table's lock */
    pthread_mutex_t apply; /* one report of the job applied at a time */
};

struct launchsrv {
    struct http_server *http;
    launchsrv_report_fn report;
    launchsrv_assign_fn assign;
    void *ud;
    pthread_mutex_t mu; /* guards the table and every entry's members but apply */
    struct launchsrv_att **att;
    size_t n, cap;
};

static void launchsrv_att_free(struct launchsrv_att *a)
{
    if (!a)
        return;
    pthread_mutex_destroy(&a->apply);
    free(a->acked);
    free(a->seen);
    OPENSSL_cleanse(a->token, sizeof(a->token));
    free(a);
}

/* Drops ended attempts past their hour that no request holds. Under mu. */
static void launchsrv_purge(struct launchsrv *s, double now)
{
    size_t k = 0;

    for (size_t i = 0; i < s->n; i++) {
        struct launchsrv_att *a = s->att[i];
        if (a->ended && a->refs == 0 && now - a->ended_at > LAUNCHSRV_ENDED_KEEP_S)
            launchsrv_att_free(a);
        else
            s->att[k++] = a;
    }
    s->n = k;
}

/* The live (not ended) entry of job, or NULL. Under mu. */
static struct launchsrv_att *launchsrv_find_job(struct launchsrv *s, const char *job)
{
    for (size_t i = 0; i < s->n; i++)
        if (!s->att[i]->ended && strcmp(s->att[i]->job, job) == 0)
            return s->att[i];
    return NULL;
}

/* The entry holding token (live or ended), referenced; NULL when none. */
static struct launchsrv_att *launchsrv_take(struct launchsrv *s, const char *token)
{
    struct launchsrv_att *found = NULL;

    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++)
        if (CRYPTO_memcmp(s->att[i]->token, token, LAUNCHWIRE_TOKEN_HEX) == 0)
            found = s->att[i];
    if (found)
        found->refs++;
    pthread_mutex_unlock(&s->mu);
    return found;
}

static void launchsrv_drop(struct launchsrv *s, struct launchsrv_att *a)
{
    pthread_mutex_lock(&s->mu);
    a->refs--;
    pthread_mutex_unlock(&s->mu);
}

static void launchsrv_answer(struct http_response *resp, int status, json_t *body)
{
    resp->status = status;
    resp->content_type = "application/json";
    resp->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
    resp->len = resp->body ? strlen(resp->body) : 0;
    json_decref(body);
}

static void launchsrv_refuse(struct http_response *resp, int status, const char *msg)
{
    launchsrv_answer(resp, status, json_pack("{s:s}", "message", msg));
}

/* The bearer token of req, or NULL when it has none of the right form. */
static const char *launchsrv_bearer(const struct http_request *req)
{
    const char *h = http_header(req, "Authorization");

    if (!h || strncmp(h, "Bearer ", 7) != 0 || !launchwire_token_ok(h + 7))
        return NULL;
    return h + 7;
}

/* POST /launch/v1/report of attempt a. */
static void launchsrv_on_report(struct launchsrv *s, struct launchsrv_att *a,
                                struct http_request *req, struct http_response *resp)
{
    struct launchwire_report r;
    struct launchwire_answer ans = {0};
    struct ty_err err;
    int applied = 0;

    if (req->too_big || launchwire_report_parse(req->body.data ? req->body.data : "", req->body.len,
                                                &r, &err) != 0) {
        launchsrv_refuse(resp, 400, req->too_big ? "launcher report: too big" : err.msg);
        return;
    }
    if (strcmp(r.job, a->job) != 0 || r.attempt != a->attempt) {
        launchwire_report_free(&r);
        launchsrv_refuse(resp, 403, "this token is another job's or attempt's");
        return;
    }
    if (r.host >= a->hosts) {
        launchwire_report_free(&r);
        launchsrv_refuse(resp, 400, "launcher report: no such host in this job");
        return;
    }
    pthread_mutex_lock(&a->apply);
    pthread_mutex_lock(&s->mu);
    a->seen[r.host] = ty_wall_s();
    applied = a->ended ? -2 : r.seq <= a->acked[r.host];
    pthread_mutex_unlock(&s->mu);
    if (applied == 0)
        applied = s->report(s->ud, &r) == 0 ? 1 : -1;
    pthread_mutex_lock(&s->mu);
    if (applied == 1 && r.seq > a->acked[r.host])
        a->acked[r.host] = r.seq;
    ans.ack = a->acked[r.host];
    ans.stop = a->stop;
    ans.grace_s = a->grace;
    ans.upload = a->upload;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_unlock(&a->apply);
    launchwire_report_free(&r);
    if (applied == -2)
        launchsrv_refuse(resp, 410, "the attempt has ended");
    else if (applied == -1)
        launchsrv_refuse(resp, 503, "the executor cannot take the report now; send it again");
    else
        launchsrv_answer(resp, 200, launchwire_answer_json(&ans));
}

/* GET /launch/v1/job?host=N of attempt a. */
static void launchsrv_on_job(struct launchsrv *s, struct launchsrv_att *a, struct http_request *req,
                             struct http_response *resp)
{
    const char *q = req->query;
    char *end;
    long host = -1;
    json_t *j;

    if (strncmp(q, "host=", 5) == 0)
        host = strtol(q + 5, &end, 10);
    if (host < 0 || host >= a->hosts || q[5] < '0' || q[5] > '9' || *end) {
        launchsrv_refuse(resp, 400, "the query must be host=<0-based host index of this job>");
        return;
    }
    pthread_mutex_lock(&s->mu);
    a->seen[host] = ty_wall_s();
    pthread_mutex_unlock(&s->mu);
    if (!(j = s->assign(s->ud, a->job, a->attempt, (int)host))) {
        launchsrv_refuse(resp, 503, "no assignment now; ask again");
        return;
    }
    launchsrv_answer(resp, 200, j);
}

static void launchsrv_handle(struct http_request *req, struct http_response *resp, void *ud)
{
    struct launchsrv *s = ud;
    const char *token = launchsrv_bearer(req);
    struct launchsrv_att *a;
    int report = strcmp(req->path, LAUNCHWIRE_PATH_REPORT) == 0,
        job = strcmp(req->path, LAUNCHSRV_PATH_JOB) == 0, ended;

    req->metric_service = "launch";
    if (!report && !job) {
        launchsrv_refuse(resp, 404, "no such path");
        return;
    }
    if ((report && strcmp(req->method, "POST") != 0) || (job && strcmp(req->method, "GET") != 0)) {
        launchsrv_refuse(resp, 405, "method not allowed");
        return;
    }
    if (!token || !(a = launchsrv_take(s, token))) {
        launchsrv_refuse(resp, 401, "no launch token, or an unknown one");
        return;
    }
    pthread_mutex_lock(&s->mu);
    ended = a->ended;
    pthread_mutex_unlock(&s->mu);
    if (ended)
        launchsrv_refuse(resp, 410, "the attempt has ended");
    else if (report)
        launchsrv_on_report(s, a, req, resp);
    else
        launchsrv_on_job(s, a, req, resp);
    launchsrv_drop(s, a);
}

struct launchsrv *launchsrv_start(const char *listen, launchsrv_report_fn report,
                                  launchsrv_assign_fn assign, void *ud, struct ty_err *err)
{
    struct http_limits lim = HTTP_LIMITS_DEFAULT;
    struct launchsrv *s = calloc(1, sizeof(*s));

    if (!s) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    s->report = report;
    s->assign = assign;
    s->ud = ud;
    pthread_mutex_init(&s->mu, NULL);
    lim.body_timeout_s = 60;
    if (!(s->http = http_start(listen, LAUNCHSRV_THREADS, &lim, launchsrv_handle, s, err))) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    return s;
}

void launchsrv_stop(struct launchsrv *s)
{
    if (!s)
        return;
    http_stop(s->http);
    for (size_t i = 0; i < s->n; i++)
        launchsrv_att_free(s->att[i]);
    free(s->att);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int launchsrv_port(const struct launchsrv *s)
{
    return http_port(s->http);
}

int launchsrv_add(struct launchsrv *s, const char *token, const char *job, int attempt, int hosts,
                  const long long *acked)
{
    struct launchsrv_att *a, *old;

    if (!launchwire_token_ok(token) || hosts < 1 || hosts > LAUNCHWIRE_MAX_HOSTS || !job ||
        strlen(job) >= sizeof(a->job))
        return -TY_EINVAL;
    if (!(a = calloc(1, sizeof(*a))) || !(a->acked = calloc((size_t)hosts, sizeof(*a->acked))) ||
        !(a->seen = calloc((size_t)hosts, sizeof(*a->seen)))) {
        if (a) {
            free(a->acked);
            free(a);
        }
        return -TY_ENOMEM;
    }
    memcpy(a->token, token, LAUNCHWIRE_TOKEN_HEX + 1);
    snprintf(a->job, sizeof(a->job), "%s", job);
    a->attempt = attempt;
    a->hosts = hosts;
    for (int h = 0; acked && h < hosts; h++)
        a->acked[h] = acked[h];
    pthread_mutex_init(&a->apply, NULL);
    pthread_mutex_lock(&s->mu);
    launchsrv_purge(s, ty_wall_s());
    if ((old = launchsrv_find_job(s, job))) {
        old->ended = 1;
        old->ended_at = ty_wall_s();
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct launchsrv_att **v = realloc(s->att, cap * sizeof(*v));
        if (!v) {
            pthread_mutex_unlock(&s->mu);
            launchsrv_att_free(a);
            return -TY_ENOMEM;
        }
        s->att = v;
        s->cap = cap;
    }
    s->att[s->n++] = a;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void launchsrv_end(struct launchsrv *s, const char *job)
{
    struct launchsrv_att *a;

    pthread_mutex_lock(&s->mu);
    if ((a = launchsrv_find_job(s, job))) {
        a->ended = 1;
        a->ended_at = ty_wall_s();
    }
    pthread_mutex_unlock(&s->mu);
}

void launchsrv_set_stop(struct launchsrv *s, const char *job, int grace_s, int upload)
{
    struct launchsrv_att *a;

    pthread_mutex_lock(&s->mu);
    if ((a = launchsrv_find_job(s, job))) {
        a->stop = 1;
        a->grace = grace_s;
        a->upload = upload;
    }
    pthread_mutex_unlock(&s->mu);
}

double launchsrv_last_seen(struct launchsrv *s, const char *job, int host, long long *seq)
{
    struct launchsrv_att *a;
    double t = -1;

    pthread_mutex_lock(&s->mu);
    if ((a = launchsrv_find_job(s, job)) && host >= 0 && host < a->hosts) {
        t = a->seen[host];
        if (seq)
            *seq = a->acked[host];
    }
    pthread_mutex_unlock(&s->mu);
    return t;
}
