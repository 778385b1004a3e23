/*
 * slurmrest.c - the slurmrestd client's connection, token and requests (slurmrest.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "slurmrest.h"
#include "slurmrest_int.h"

#include "ty_buf.h"
#include "ty_time.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SR_MAX_ANSWER   (64u * 1024 * 1024) /* GET /jobs of a busy cluster */
#define SR_TIMEOUT_S    30L
#define SR_CONNECT_S    5L
#define SR_KEY_MAX      4096
#define SR_TOKEN_REREAD 60 /* a token file is read again after this many seconds */

struct slurmrest {
    CURL *curl;
    char url[512];
    char api[32];
    char user[72];
    unsigned char key[SR_KEY_MAX];
    size_t keylen; /* 0: the token comes from token_path */
    char token_path[1024];
    int life_s;
    char token[SLURMREST_JWT_MAX];
    int64_t token_at; /* when token was minted or read, 0 = never */
    int one_shot;     /* no keep-alive (slurmrest_config.one_shot) */
};

/* Reads at most n bytes of path. OUT: *len. 0 or -errno. */
static int read_small(const char *path, unsigned char *buf, size_t n, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t r;

    *len = 0;
    if (fd < 0)
        return -errno;
    while (*len < n && (r = read(fd, buf + *len, n - *len)) > 0)
        *len += (size_t)r;
    close(fd);
    return 0;
}

struct slurmrest *slurmrest_open(const struct slurmrest_config *cfg, struct ty_err *err)
{
    struct slurmrest *s;
    int rc;

    if (!cfg || !cfg->url || strncmp(cfg->url, "http", 4) != 0) {
        ty_err_set(err, TY_EINVAL, "slurm-url", "the slurmrestd URL must be http://host:port");
        return NULL;
    }
    if (!(cfg->jwt_key_path && cfg->jwt_key_path[0]) && !(cfg->token_path && cfg->token_path[0])) {
        ty_err_set(err, TY_EINVAL, "slurm-jwt-key",
                   "slurmrestd needs a JWT: give the cluster's JWT key or a token file");
        return NULL;
    }
    if (!(s = calloc(1, sizeof(*s))) || !(s->curl = curl_easy_init())) {
        free(s);
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    snprintf(s->url, sizeof(s->url), "%s", cfg->url);
    for (size_t n = strlen(s->url); n > 0 && s->url[n - 1] == '/'; n--)
        s->url[n - 1] = '\0';
    snprintf(s->api, sizeof(s->api), "%s", cfg->api && cfg->api[0] ? cfg->api : "v0.0.38");
    snprintf(s->user, sizeof(s->user), "%s", cfg->user && cfg->user[0] ? cfg->user : "root");
    s->life_s = cfg->token_life_s > 0 ? cfg->token_life_s : 600;
    s->one_shot = cfg->one_shot;
    if (cfg->jwt_key_path && cfg->jwt_key_path[0]) {
        rc = read_small(cfg->jwt_key_path, s->key, sizeof(s->key), &s->keylen);
        if (rc != 0 || s->keylen == 0) {
            ty_err_set(err, TY_EINVAL, "slurm-jwt-key", "cannot read the JWT key '%s': %s",
                       cfg->jwt_key_path, rc ? strerror(-rc) : "empty");
            slurmrest_close(s);
            return NULL;
        }
    } else {
        snprintf(s->token_path, sizeof(s->token_path), "%s", cfg->token_path);
    }
    return s;
}

void slurmrest_close(struct slurmrest *s)
{
    if (!s)
        return;
    if (s->curl)
        curl_easy_cleanup(s->curl);
    memset(s->key, 0, sizeof(s->key));
    memset(s->token, 0, sizeof(s->token));
    free(s);
}

/* A token that lives at least another half of its life. 0 or a negative code. */
static int sr_token(struct slurmrest *s, struct ty_err *err)
{
    int64_t now = (int64_t)ty_wall_s();

    if (s->keylen) {
        if (s->token_at && now < s->token_at + s->life_s / 2)
            return 0;
        if (slurmrest_jwt_mint(s->key, s->keylen, s->user, now, s->life_s, s->token,
                               sizeof(s->token)) != 0)
            return ty_err_set(err, TY_EINVAL, "slurm-user", "cannot mint a JWT for user '%s'",
                              s->user);
    } else {
        unsigned char buf[SLURMREST_JWT_MAX];
        size_t len;
        int rc;
        if (s->token_at && now < s->token_at + SR_TOKEN_REREAD)
            return 0;
        rc = read_small(s->token_path, buf, sizeof(buf) - 1, &len);
        while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
            len--;
        if (rc != 0 || len == 0)
            return ty_err_set(err, TY_EINVAL, "slurm-token-file",
                              "cannot read a token from '%s': %s", s->token_path,
                              rc ? strerror(-rc) : "empty");
        buf[len] = '\0';
        /* "SLURM_JWT=<token>", as scontrol token prints it, or the token alone */
        snprintf(s->token, sizeof(s->token), "%s",
                 strncmp((char *)buf, "SLURM_JWT=", 10) == 0 ? (char *)buf + 10 : (char *)buf);
    }
    s->token_at = now;
    return 0;
}

static size_t sr_sink(char *p, size_t size, size_t nmemb, void *ud)
{
    return ty_buf_append(ud, p, size * nmemb) == 0 ? size * nmemb : 0;
}

/*
 * One request: method path (below /slurm/<api>) with body (JSON, or NULL). OUT: *status, *out
 * (the answer's JSON, new; NULL when empty or not JSON: then words holds its start). 0, or a
 * negative code when no HTTP answer came.
 */
static int sr_call(struct slurmrest *s, const char *method, const char *path, const char *body,
                   long *status, json_t **out, char *words, size_t wn, struct ty_err *err)
{
    char url[1024], h1[128], h2[SLURMREST_JWT_MAX + 32];
    struct curl_slist *hdrs = NULL;
    struct ty_buf answer;
    CURLcode cc;
    int rc;

    *status = 0;
    *out = NULL;
    if (wn)
        words[0] = '\0';
    if ((rc = sr_token(s, err)) != 0)
        return rc;
    snprintf(url, sizeof(url), "%s/slurm/%s%s", s->url, s->api, path);
    snprintf(h1, sizeof(h1), "X-SLURM-USER-NAME: %s", s->user);
    snprintf(h2, sizeof(h2), "X-SLURM-USER-TOKEN: %s", s->token);
    hdrs = curl_slist_append(hdrs, h1);
    hdrs = curl_slist_append(hdrs, h2);
    hdrs = curl_slist_append(hdrs, "Accept: application/json");
    if (body)
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
    ty_buf_init(&answer, SR_MAX_ANSWER);
    curl_easy_reset(s->curl);
    curl_easy_setopt(s->curl, CURLOPT_URL, url);
    curl_easy_setopt(s->curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(s->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s->curl, CURLOPT_TIMEOUT, SR_TIMEOUT_S);
    curl_easy_setopt(s->curl, CURLOPT_CONNECTTIMEOUT, SR_CONNECT_S);
    curl_easy_setopt(s->curl, CURLOPT_WRITEFUNCTION, sr_sink);
    curl_easy_setopt(s->curl, CURLOPT_WRITEDATA, &answer);
    curl_easy_setopt(s->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(s->curl, CURLOPT_FORBID_REUSE, s->one_shot ? 1L : 0L);
    if (body) {
        curl_easy_setopt(s->curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(s->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    cc = curl_easy_perform(s->curl);
    curl_slist_free_all(hdrs);
    if (cc != CURLE_OK) {
        rc = ty_err_set(err, TY_EENGINE, NULL, "slurmrestd at %s: %s", s->url,
                        curl_easy_strerror(cc));
        goto done;
    }
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, status);
    if (answer.len > 0) {
        *out = json_loadb(answer.data, answer.len, 0, NULL);
        if (!*out && wn) {
            snprintf(words, wn, "%.*s", (int)(answer.len < 200 ? answer.len : 200), answer.data);
            words[strcspn(words, "\r\n")] = '\0';
        }
    }
done:
    ty_buf_cleanup(&answer);
    return rc;
}

/* The error of a request whose answer was not the one wanted: 401 is TY_EDENIED, the rest
   TY_EENGINE, with Slurm's words and number. */
static int sr_fail(struct slurmrest *s, const char *what, long status, json_t *answer,
                   const char *words, struct ty_err *err)
{
    char why[512];
    int num = slurmrest_answer_error(answer, why, sizeof(why));

    if (status == 401 || (!answer && strstr(words, "Authentication failure")))
        return ty_err_set(err, TY_EDENIED, NULL,
                          "slurmrestd at %s refused the token of user '%s' (%s, HTTP %ld)", s->url,
                          s->user, what, status);
    /* slurmctld down and slurmctld refusing the token's signature look the same */
    if (num == -1 && strstr(why, "unable to load"))
        return ty_err_set(err, TY_EENGINE, NULL,
                          "slurmrestd at %s cannot reach slurmctld, or slurmctld refused the "
                          "token of user '%s' (%s: %s, HTTP %ld)",
                          s->url, s->user, what, why, status);
    if (num != 0)
        return ty_err_set(err, TY_EENGINE, NULL, "slurmrestd %s: Slurm error %d: %s (HTTP %ld)",
                          what, num, why, status);
    return ty_err_set(err, TY_EENGINE, NULL, "slurmrestd %s: HTTP %ld%s%s", what, status,
                      words[0] ? ": " : "", words);
}

/* GET path, wanting 200 and a JSON object. new: the answer, or NULL with err. */
static json_t *sr_get(struct slurmrest *s, const char *what, const char *path, struct ty_err *err)
{
    char words[256];
    json_t *a;
    long status;

    if (sr_call(s, "GET", path, NULL, &status, &a, words, sizeof(words), err) != 0)
        return NULL;
    if (status == 200 && json_is_object(a) && slurmrest_answer_error(a, words, 0) == 0)
        return a;
    sr_fail(s, what, status, a, words, err);
    json_decref(a);
    return NULL;
}

int slurmrest_ping(struct slurmrest *s, struct ty_err *err)
{
    json_t *a = sr_get(s, "ping", "/ping", err);
    if (!a)
        return -(err && err->code ? err->code : TY_EENGINE);
    json_decref(a);
    return 0;
}

static json_t *sr_list(struct slurmrest *s, const char *what, const char *key, struct ty_err *err)
{
    char path[64];
    json_t *a, *arr;

    snprintf(path, sizeof(path), "/%s", what);
    if (!(a = sr_get(s, what, path, err)))
        return NULL;
    arr = json_object_get(a, key);
    if (!json_is_array(arr)) {
        json_decref(a);
        ty_err_set(err, TY_EENGINE, NULL, "slurmrestd %s: no \"%s\" array in the answer", what,
                   key);
        return NULL;
    }
    json_incref(arr);
    json_decref(a);
    return arr;
}

json_t *slurmrest_nodes(struct slurmrest *s, struct ty_err *err)
{
    return sr_list(s, "nodes", "nodes", err);
}

json_t *slurmrest_partitions(struct slurmrest *s, struct ty_err *err)
{
    return sr_list(s, "partitions", "partitions", err);
}

/* The submission's JSON body. new, NULL when out of memory. */
static char *sr_submit_body(const struct slurmrest_submit *sub)
{
    json_t *job = json_object(), *root;
    char *out;

    json_object_set_new(job, "nodes", json_integer(sub->nodes > 0 ? sub->nodes : 1));
    json_object_set_new(job, "current_working_directory", json_string(sub->cwd ? sub->cwd : "/"));
    if (sub->environment)
        json_object_set(job, "environment", sub->environment);
    else
        json_object_set_new(job, "environment", json_pack("{s:s}", "PATH", "/usr/bin:/bin"));
    if (sub->name)
        json_object_set_new(job, "name", json_string(sub->name));
    if (sub->partition)
        json_object_set_new(job, "partition", json_string(sub->partition));
    if (sub->comment)
        json_object_set_new(job, "comment", json_string(sub->comment));
    if (sub->stdout_path)
        json_object_set_new(job, "standard_output", json_string(sub->stdout_path));
    if (sub->gres)
        json_object_set_new(job, "gres", json_string(sub->gres));
    if (sub->tasks_per_node > 0)
        json_object_set_new(job, "tasks_per_node", json_integer(sub->tasks_per_node));
    if (sub->exclusive) /* "true" is in the spec's enum, and refused */
        json_object_set_new(job, "exclusive", json_string("exclusive"));
    if (sub->time_limit_min > 0)
        json_object_set_new(job, "time_limit", json_integer(sub->time_limit_min));
    root = json_pack("{s:s, s:o}", "script", sub->script, "job", job);
    out = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return out;
}

int slurmrest_submit_job(struct slurmrest *s, const struct slurmrest_submit *sub, long *job_id,
                         int *warn, struct ty_err *err)
{
    char words[512];
    char *body;
    json_t *a = NULL, *id;
    long status;
    int rc, num;

    *job_id = 0;
    *warn = 0;
    if (!sub || !sub->script)
        return ty_err_set(err, TY_EINVAL, NULL, "a Slurm job needs a script");
    if (!(body = sr_submit_body(sub)))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    rc = sr_call(s, "POST", "/job/submit", body, &status, &a, words, sizeof(words), err);
    free(body);
    if (rc != 0)
        return rc;
    id = json_object_get(a, "job_id");
    num = slurmrest_answer_error(a, words, sizeof(words));
    if (status == 200 && json_is_integer(id) && json_integer_value(id) > 0) {
        *job_id = (long)json_integer_value(id);
        *warn = num > 0 ? num : 0;
        json_decref(a);
        return 0;
    }
    if (num > 0 && status != 401) {
        char field[32];
        snprintf(field, sizeof(field), "slurm:%d", num);
        rc = ty_err_set(err, TY_EINVAL, field, "Slurm refused the job: %s (error %d)", words, num);
    } else {
        rc = sr_fail(s, "job submit", status, a, words, err);
    }
    json_decref(a);
    return rc;
}

int slurmrest_job(struct slurmrest *s, long id, struct slurmrest_job *out, struct ty_err *err)
{
    char path[64], words[256];
    json_t *a;
    long status;
    int rc;

    snprintf(path, sizeof(path), "/job/%ld", id);
    if ((rc = sr_call(s, "GET", path, NULL, &status, &a, words, sizeof(words), err)) != 0)
        return rc;
    if (slurmrest_answer_error(a, words, sizeof(words)) == SLURMREST_EJOB_ID) {
        json_decref(a); /* HTTP 500 for a purged job: it is not a server failure */
        return ty_err_set(err, TY_ENOTFOUND, NULL, "Slurm does not know job %ld", id);
    }
    if (status != 200 || !json_is_object(a)) {
        rc = sr_fail(s, "job", status, a, words, err);
        json_decref(a);
        return rc;
    }
    rc = slurmrest_job_parse(json_array_get(json_object_get(a, "jobs"), 0), out, err);
    json_decref(a);
    return rc;
}

int slurmrest_jobs_since(struct slurmrest *s, int64_t *since, json_t **jobs, struct ty_err *err)
{
    char path[64], words[256];
    json_t *a, *arr;
    long status;
    int rc;

    int64_t asked = (int64_t)ty_wall_s() - 1; /* a change in the same second is not lost */

    *jobs = NULL;
    snprintf(path, sizeof(path), "/jobs?update_time=%lld", (long long)*since);
    if ((rc = sr_call(s, "GET", path, NULL, &status, &a, words, sizeof(words), err)) != 0)
        return rc;
    if (status == 304) {
        json_decref(a);
        return 0;
    }
    arr = json_object_get(a, "jobs");
    if (status != 200 || !json_is_array(arr)) {
        rc = sr_fail(s, "jobs", status, a, words, err);
        json_decref(a);
        return rc;
    }
    *since = asked;
    *jobs = json_incref(arr);
    json_decref(a);
    return 0;
}

int slurmrest_cancel(struct slurmrest *s, long id, const char *signal, struct ty_err *err)
{
    char path[96], words[256];
    json_t *a;
    long status;
    int rc, num;

    if (signal && (strlen(signal) > 16 ||
                   strspn(signal, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != strlen(signal)))
        return ty_err_set(err, TY_EINVAL, NULL, "bad signal name '%s'", signal);
    snprintf(path, sizeof(path), "/job/%ld%s%s", id, signal ? "?signal=" : "",
             signal ? signal : "");
    if ((rc = sr_call(s, "DELETE", path, NULL, &status, &a, words, sizeof(words), err)) != 0)
        return rc;
    num = slurmrest_answer_error(a, words, sizeof(words));
    /* 2017: gone; 2021 (ESLURM_ALREADY_DONE): ended already */
    if ((status == 200 && num == 0) || num == SLURMREST_EJOB_ID || num == 2021) {
        json_decref(a);
        return 0;
    }
    rc = sr_fail(s, "job cancel", status, a, words, err);
    json_decref(a);
    return rc;
}
