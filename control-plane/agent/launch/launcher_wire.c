/*
 * launcher_wire.c - trainyard-launch's side of the wire (launcher_int.h): the assignment, the
 * role's credentials from trainyard's endpoint, and the reporter thread that sends the host's
 * lines, phase and end to the executor, each report again until an answer acks it, and keeps
 * the executor's orders (stop, grace, upload; the attempt gone).
 */
#include "launcher_int.h"

#include "session.h"
#include "ty_log.h"
#include "ty_time.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LAUNCHER_HTTP_TIMEOUT_S 30
#define LAUNCHER_ANSWER_MAX     (1024 * 1024)

struct launcher_body {
    char *p;
    size_t n;
};

static size_t launcher_collect(char *data, size_t size, size_t nmemb, void *ud)
{
    struct launcher_body *b = ud;
    size_t add = size * nmemb;
    char *p;

    if (b->n + add > LAUNCHER_ANSWER_MAX || !(p = realloc(b->p, b->n + add + 1)))
        return 0;
    memcpy(p + b->n, data, add);
    b->p = p;
    b->n += add;
    b->p[b->n] = '\0';
    return add;
}

/* One request: GET (body NULL) or POST of body to url with the header auth. OUT: *status (0
   when nothing answered), out (new: free). 0, or -1 when nothing answered. */
static int launcher_http(CURL *c, const char *url, const char *auth, const char *body, long *status,
                         struct launcher_body *out)
{
    struct curl_slist *h = NULL;
    CURLcode rc;

    out->p = NULL;
    out->n = 0;
    *status = 0;
    curl_easy_reset(c);
    h = curl_slist_append(h, auth);
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)LAUNCHER_HTTP_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, launcher_collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        ty_log(TY_LOG_WARN, "launch.http.failed", "url='%s' error='%s'", url,
               curl_easy_strerror(rc));
        free(out->p);
        out->p = NULL;
        return -1;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    return 0;
}

/* The string member key of the assignment, "" when absent. */
static const char *launcher_asg_str(struct launcher *l, const char *key)
{
    const char *s = json_string_value(json_object_get(l->asg, key));
    return s ? s : "";
}

int launcher_assignment(struct launcher *l, struct ty_err *err)
{
    char url[700], auth[128];
    struct launcher_body b;
    CURL *c = curl_easy_init();
    long status = 0;
    json_t *doc;

    if (!c)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    snprintf(url, sizeof(url), "%s/launch/v1/job?host=%d", l->url, l->host);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", l->token);
    /* 503 at first while the executor learns where Slurm placed the job (its nodes'
       addresses); longer when it is restarting: 0.2 s, doubling to 5 s, about 45 s in all */
    for (int i = 0, ms = 200; i < 14; i++, ms = ms * 2 < 5000 ? ms * 2 : 5000) {
        if (launcher_http(c, url, auth, NULL, &status, &b) == 0 && status == 200)
            break;
        free(b.p);
        b.p = NULL;
        if (status == 401 || status == 403 || status == 410 || status == 400)
            break;
        usleep((useconds_t)ms * 1000);
    }
    curl_easy_cleanup(c);
    if (status != 200) {
        free(b.p);
        return ty_err_set(err, status == 410 ? TY_ENOTFOUND : TY_EIO, NULL,
                          "no assignment from the executor at %s (HTTP %ld)", l->url, status);
    }
    l->asg = json_loads(b.p, 0, NULL);
    free(b.p);
    doc = json_object_get(l->asg, "doc");
    if (!json_is_object(doc) || strcmp(launcher_asg_str(l, "job"), l->job) != 0)
        return ty_err_set(err, TY_EINVAL, NULL, "the executor's assignment is not this job's");
    if (spec_parse(doc, &l->sp, err) != 0)
        return -TY_EINVAL;
    l->have_spec = 1;
    l->endpoint = launcher_asg_str(l, "endpoint");
    l->creds_token = launcher_asg_str(l, "creds_token");
    l->region = launcher_asg_str(l, "region");
    l->deployment = launcher_asg_str(l, "deployment");
    l->runtime_image = launcher_asg_str(l, "runtime_image");
    l->hosts = (int)json_integer_value(json_object_get(l->asg, "hosts"));
    l->stop_grace = (int)json_integer_value(json_object_get(l->asg, "stop_grace"));
    l->addrs = json_object_get(l->asg, "addrs");
    if (l->addrs && (!json_is_array(l->addrs) || json_array_size(l->addrs) != (size_t)l->hosts))
        return ty_err_set(err, TY_EINVAL, NULL, "the executor's assignment has a bad addrs");
    if (l->hosts < 1 || l->host >= l->hosts || !l->deployment[0] || !l->runtime_image[0])
        return ty_err_set(err, TY_EINVAL, NULL, "the executor's assignment is incomplete");
    if (l->stop_grace <= 0)
        l->stop_grace = 120;
    return 0;
}

int launcher_creds(struct launcher *l, char *ak, size_t akn, char *sk, size_t skn, char *tok,
                   size_t tokn, struct ty_err *err)
{
    char url[700], auth[128];
    struct launcher_body b;
    CURL *c;
    long status = 0;
    json_t *j;
    const char *a, *s, *t;
    int rc = 0;

    if (!l->endpoint[0] || !l->creds_token[0])
        return ty_err_set(err, TY_EDENIED, NULL,
                          "ClientError: the job has no role credentials on this node (no "
                          "trainyard endpoint, or EnableNetworkIsolation)");
    if (!(c = curl_easy_init()))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    snprintf(url, sizeof(url), "%s%s", l->endpoint, SESSION_CREDENTIALS_PATH);
    snprintf(auth, sizeof(auth), "Authorization: %s", l->creds_token);
    if (launcher_http(c, url, auth, NULL, &status, &b) != 0 || status != 200) {
        curl_easy_cleanup(c);
        free(b.p);
        return ty_err_set(err, status == 403 ? TY_EDENIED : TY_EIO, NULL,
                          "InternalServerError: no role credentials from %s (HTTP %ld)",
                          l->endpoint, status);
    }
    curl_easy_cleanup(c);
    j = json_loads(b.p, 0, NULL);
    free(b.p);
    a = json_string_value(json_object_get(j, "AccessKeyId"));
    s = json_string_value(json_object_get(j, "SecretAccessKey"));
    t = json_string_value(json_object_get(j, "Token"));
    if (!a || !s || !t || snprintf(ak, akn, "%s", a) >= (int)akn ||
        snprintf(sk, skn, "%s", s) >= (int)skn || snprintf(tok, tokn, "%s", t) >= (int)tokn)
        rc = ty_err_set(err, TY_EIO, NULL, "InternalServerError: bad credentials answer from %s",
                        l->endpoint);
    json_decref(j);
    return rc;
}

void launcher_line(struct launcher *l, const char *text, size_t len, int64_t ts_ms, int is_stderr)
{
    json_t *line;

    if (len > LAUNCHER_MAX_LINE)
        len = LAUNCHER_MAX_LINE;
    pthread_mutex_lock(&l->mu);
    if (json_array_size(l->pending) >= LAUNCHER_MAX_QUEUED) {
        l->dropped++;
    } else if ((line = json_array())) {
        json_array_append_new(line, json_integer(ts_ms));
        json_array_append_new(line, json_stringn_nocheck(text, len));
        json_array_append_new(line, json_integer(is_stderr ? 1 : 0));
        json_array_append_new(l->pending, line);
    }
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void launcher_say(struct launcher *l, const char *fmt, ...)
{
    char line[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    ty_log(TY_LOG_INFO, "launch.say", "job=%s host=%s line='%s'", l->job, l->name, line);
    launcher_line(l, line, strlen(line), (int64_t)(ty_wall_s() * 1000.0), 0);
}

void launcher_set_phase(struct launcher *l, enum launchwire_phase phase, double started)
{
    pthread_mutex_lock(&l->mu);
    l->phase = phase;
    if (started > 0)
        l->started = started;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void launcher_set_end(struct launcher *l, const struct launchwire_report *end)
{
    pthread_mutex_lock(&l->mu);
    l->end = *end;
    l->end.doc = NULL;
    l->end.lines = NULL;
    l->end_set = 1;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void launcher_orders(struct launcher *l, int *stop, int *grace_s, int *upload, int *gone,
                     double *silent_s)
{
    pthread_mutex_lock(&l->mu);
    *stop = l->stop;
    *grace_s = l->stop_grace_ans;
    *upload = l->upload;
    *gone = l->gone;
    *silent_s = ty_wall_s() - l->last_ok;
    pthread_mutex_unlock(&l->mu);
}

/* The next report's body, under mu: up to LAUNCHWIRE_MAX_LINES pending lines (moved into it),
   the phase, and the end once every line went. NULL when out of memory. */
static char *launcher_next(struct launcher *l)
{
    struct launchwire_report r = {0};
    json_t *lines = json_array(), *o;
    size_t n = json_array_size(l->pending),
           take = n < LAUNCHWIRE_MAX_LINES ? n : LAUNCHWIRE_MAX_LINES;
    char *body;

    for (size_t i = 0; lines && i < take; i++)
        json_array_append(lines, json_array_get(l->pending, i));
    if (!lines)
        return NULL;
    snprintf(r.job, sizeof(r.job), "%s", l->job);
    snprintf(r.node, sizeof(r.node), "%s", l->node);
    r.attempt = l->attempt;
    r.host = l->host;
    r.seq = l->seq + 1;
    r.phase = l->phase;
    r.started = l->started;
    r.lines = lines;
    l->inflight_end = l->end_set && take == n;
    if (l->inflight_end) { /* the end goes last, after every line */
        r.phase = LAUNCHWIRE_ENDED;
        r.exit_code = l->end.exit_code;
        r.exit_signal = l->end.exit_signal;
        r.stopped = l->end.stopped;
        memcpy(r.failure, l->end.failure, sizeof(r.failure));
        memcpy(r.model_error, l->end.model_error, sizeof(r.model_error));
        memcpy(r.error, l->end.error, sizeof(r.error));
    } else if (r.phase == LAUNCHWIRE_ENDED) {
        r.phase = l->started > 0 ? LAUNCHWIRE_RUNNING : LAUNCHWIRE_STAGING;
    }
    o = launchwire_report_json(&r);
    json_decref(lines);
    body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!body)
        return NULL;
    for (size_t i = 0; i < take; i++) /* they ride in this report until it is acked */
        json_array_remove(l->pending, 0);
    l->seq++;
    return body;
}

/* Takes the answer to report seq, under mu. */
static void launcher_took(struct launcher *l, long status, const char *body, long long seq,
                          int was_end)
{
    struct launchwire_answer a;
    struct ty_err err;

    if (status == 401 || status == 403 || status == 410) {
        if (!l->gone)
            ty_log(TY_LOG_WARN, "launch.gone", "job=%s host=%s status=%ld", l->job, l->name,
                   status);
        l->gone = 1;
        free(l->inflight);
        l->inflight = NULL;
        return;
    }
    if (status != 200 || !body || launchwire_answer_parse(body, strlen(body), &a, &err) != 0)
        return; /* sent again */
    l->last_ok = ty_wall_s();
    l->stop = a.stop;
    l->stop_grace_ans = a.grace_s;
    l->upload = a.upload;
    if (a.ack >= seq) {
        free(l->inflight);
        l->inflight = NULL;
        if (was_end)
            l->end_acked = 1;
    }
}

static void *launcher_reporter(void *arg)
{
    struct launcher *l = arg;
    CURL *c = curl_easy_init();
    char url[700], auth[128];
    double last = 0;

    snprintf(url, sizeof(url), "%s%s", l->url, LAUNCHWIRE_PATH_REPORT);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", l->token);
    pthread_mutex_lock(&l->mu);
    while (c && !l->gone && !l->end_acked) {
        struct launcher_body b;
        long status;
        long long seq;
        char *body;
        int was_end;
        double now = ty_wall_s();

        if (!l->inflight &&
            (json_array_size(l->pending) || l->end_set || now - last >= LAUNCHER_BEAT_S))
            l->inflight = launcher_next(l);
        if (!l->inflight) {
            struct timespec ts;
            if (l->quit)
                break;
            ty_deadline_ms(&ts, 200);
            pthread_cond_timedwait(&l->cv, &l->mu, &ts);
            continue;
        }
        body = strdup(l->inflight);
        seq = l->seq;
        was_end = l->inflight_end;
        pthread_mutex_unlock(&l->mu);
        last = ty_wall_s();
        if (body && launcher_http(c, url, auth, body, &status, &b) == 0) {
            pthread_mutex_lock(&l->mu);
            launcher_took(l, status, b.p, seq, was_end);
            pthread_mutex_unlock(&l->mu);
            free(b.p);
            if (status != 200)
                usleep(1000000);
        } else {
            usleep(1000000); /* the executor is away: the same report again */
        }
        free(body);
        pthread_mutex_lock(&l->mu);
        if (l->quit && !l->end_set)
            break;
    }
    pthread_mutex_unlock(&l->mu);
    if (c)
        curl_easy_cleanup(c);
    return NULL;
}

int launcher_wire_start(struct launcher *l)
{
    l->last_ok = ty_wall_s();
    if (!(l->pending = json_array()) || pthread_create(&l->thr, NULL, launcher_reporter, l) != 0)
        return -1;
    l->thr_started = 1;
    return 0;
}

void launcher_wire_stop(struct launcher *l, double wait_s)
{
    double until = ty_mono_s() + wait_s;
    int done = 0;

    if (!l->thr_started)
        return;
    while (!done && ty_mono_s() < until) {
        pthread_mutex_lock(&l->mu);
        /* an executor silent past the timeout is not waited for: it is gone */
        done = l->gone || l->end_acked || !l->end_set || ty_wall_s() - l->last_ok > l->orphan_s;
        pthread_mutex_unlock(&l->mu);
        if (!done)
            usleep(100000);
    }
    pthread_mutex_lock(&l->mu);
    l->quit = 1;
    if (!l->end_acked)
        l->gone = 1; /* nothing more is sent: the thread stops at its next turn */
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thr, NULL);
    l->thr_started = 0;
}
