/*
 * store_metrics.c - CloudWatch metric series in Redis sorted sets (store_metrics.h).
 */
#include "store_metrics.h"

#include "store_int.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SM_INDEX   "ty:cw:index"
#define SM_PREFIX  "ty:cw:pts:"
#define SM_BATCH   256 /* points per ZADD */
#define SM_KEY_MAX 4096

static long store_metrics_retention_s = STORE_METRICS_RETENTION_S;
static long store_metrics_max_points = STORE_METRICS_MAX_POINTS;

void store_metrics_limits(long retention_s, long max_points)
{
    if (retention_s >= 60)
        store_metrics_retention_s = retention_s;
    if (max_points >= 10)
        store_metrics_max_points = max_points;
}

static int store_metrics_cmp_dim(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "Name"));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "Name"));
    return strcmp(x ? x : "", y ? y : "");
}

/* new: dims as canonical {"Name","Value"} objects sorted by Name (only those two members). */
static json_t *store_metrics_dims(json_t *dims)
{
    json_t *tmp[32], *out = json_array(), *d;
    size_t i, n = 0;
    json_array_foreach(dims, i, d)
    {
        if (n < 32 && json_is_string(json_object_get(d, "Name")))
            tmp[n++] = d;
    }
    qsort(tmp, n, sizeof(tmp[0]), store_metrics_cmp_dim);
    for (i = 0; out && i < n; i++) {
        json_t *o = json_object();
        json_object_set(o, "Name", json_object_get(tmp[i], "Name"));
        if (json_object_get(tmp[i], "Value"))
            json_object_set(o, "Value", json_object_get(tmp[i], "Value"));
        json_array_append_new(out, o);
    }
    return out;
}

char *store_metrics_id(const char *ns, const char *metric, json_t *dims)
{
    json_t *o = json_pack("{s:s,s:s,s:o}", "Namespace", ns ? ns : "", "MetricName",
                          metric ? metric : "", "Dimensions", store_metrics_dims(dims));
    char *id;
    if (!o)
        return NULL;
    id = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return id;
}

int store_metrics_put(struct store *s, const char *ns, const char *metric, json_t *dims,
                      const struct store_metric_point *p, size_t n, int64_t now_ms,
                      struct ty_err *err)
{
    char *id = store_metrics_id(ns, metric, dims), *key = NULL;
    char cut[32], cap[32], ttl[32], last[32];
    char(*members)[96] = NULL;
    char(*scores)[32] = NULL;
    const char **argv = NULL;
    int64_t newest = 0;
    int rc = 0;

    if (n == 0) {
        free(id);
        return 0;
    }
    key = id ? malloc(strlen(SM_PREFIX) + strlen(id) + 1) : NULL;
    members = calloc(SM_BATCH, sizeof(*members));
    scores = calloc(SM_BATCH, sizeof(*scores));
    argv = calloc(2 + 2 * SM_BATCH, sizeof(*argv));
    if (!key || !members || !scores || !argv) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    snprintf(key, strlen(SM_PREFIX) + strlen(id) + 1, "%s%s", SM_PREFIX, id);
    for (size_t off = 0; off < n && rc == 0; off += SM_BATCH) {
        size_t k = n - off < SM_BATCH ? n - off : SM_BATCH;
        redisReply *r;
        argv[0] = "ZADD";
        argv[1] = key;
        for (size_t i = 0; i < k; i++) {
            const struct store_metric_point *q = &p[off + i];
            snprintf(scores[i], sizeof(scores[i]), "%" PRId64, q->ts_ms);
            snprintf(members[i], sizeof(members[i]), "%" PRId64 ":%ld:%.17g", q->ts_ms, q->seq,
                     q->value);
            argv[2 + 2 * i] = scores[i];
            argv[3 + 2 * i] = members[i];
            if (q->ts_ms > newest)
                newest = q->ts_ms;
        }
        r = store__cmd(s, (int)(2 + 2 * k), argv, NULL, 0, err);
        if (!r)
            rc = -TY_EREDIS;
        else if (r->type == REDIS_REPLY_ERROR)
            rc = store__reply_err(r, "ZADD", err);
        if (r)
            freeReplyObject(r);
    }
    if (rc)
        goto out;
    {
        const char *c1[] = {"ZREMRANGEBYSCORE", key, "-inf", cut};
        const char *c2[] = {"ZREMRANGEBYRANK", key, "0", cap};
        const char *c3[] = {"PEXPIRE", key, ttl};
        const char *c4[] = {"ZADD", SM_INDEX, "GT", last, id};
        const char *c5[] = {"ZREMRANGEBYSCORE", SM_INDEX, "-inf", cut};
        const char *const *cmds[] = {c1, c2, c3, c4, c5};
        const int argc[] = {4, 4, 3, 5, 4};
        redisReply *rep[5];
        snprintf(cut, sizeof(cut), "(%" PRId64, now_ms - store_metrics_retention_s * 1000);
        snprintf(cap, sizeof(cap), "%ld", -(store_metrics_max_points + 1));
        snprintf(ttl, sizeof(ttl), "%ld", store_metrics_retention_s * 1000);
        snprintf(last, sizeof(last), "%" PRId64, newest);
        rc = store__pipeline(s, 5, argc, cmds, rep, err);
        if (rc == 0) {
            for (int i = 0; i < 5; i++) {
                if (rep[i]->type == REDIS_REPLY_ERROR && rc == 0)
                    rc = store__reply_err(rep[i], cmds[i][0], err);
                freeReplyObject(rep[i]);
            }
        }
    }
out:
    free(id);
    free(key);
    free(members);
    free(scores);
    free(argv);
    return rc;
}

int store_metrics_range(struct store *s, const char *id, int64_t t0_ms, int64_t t1_ms, size_t max,
                        struct store_metric_point **out, size_t *n, struct ty_err *err)
{
    char key[SM_KEY_MAX], a[32], b[32], lim[32];
    struct store_metric_point *v = NULL;
    redisReply *r;
    size_t k = 0;

    if (snprintf(key, sizeof(key), SM_PREFIX "%s", id) >= (int)sizeof(key))
        return ty_err_set(err, TY_EINVAL, "Dimensions", "The metric is too long.");
    snprintf(a, sizeof(a), "%" PRId64, t0_ms);
    snprintf(b, sizeof(b), "(%" PRId64, t1_ms);
    snprintf(lim, sizeof(lim), "%zu", max);
    r = store__cmdv(s, err, "ZRANGEBYSCORE", key, a, b, "LIMIT", "0", lim, NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY) {
        int rc = store__reply_err(r, "ZRANGEBYSCORE", err);
        freeReplyObject(r);
        return rc;
    }
    v = calloc(r->elements ? r->elements : 1, sizeof(*v));
    if (!v) {
        freeReplyObject(r);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < r->elements; i++) {
        const char *m = r->element[i]->str;
        char *end;
        if (!m)
            continue;
        v[k].ts_ms = strtoll(m, &end, 10);
        if (*end != ':')
            continue;
        v[k].seq = strtol(end + 1, &end, 10);
        if (*end != ':')
            continue;
        v[k].value = strtod(end + 1, NULL);
        k++;
    }
    freeReplyObject(r);
    *out = v;
    *n = k;
    return 0;
}

/* 1 when metric m (an object) carries every dimension of want (Name and, when given, Value). */
static int store_metrics_has_dims(json_t *m, json_t *want)
{
    json_t *w, *d;
    size_t i, j;
    json_array_foreach(want, i, w)
    {
        const char *wn = json_string_value(json_object_get(w, "Name"));
        const char *wv = json_string_value(json_object_get(w, "Value"));
        int found = 0;
        json_array_foreach(json_object_get(m, "Dimensions"), j, d)
        {
            const char *dn = json_string_value(json_object_get(d, "Name"));
            const char *dv = json_string_value(json_object_get(d, "Value"));
            if (wn && dn && strcmp(wn, dn) == 0 && (!wv || (dv && strcmp(wv, dv) == 0)))
                found = 1;
        }
        if (!found)
            return 0;
    }
    return 1;
}

json_t *store_metrics_list(struct store *s, const char *ns, const char *metric, json_t *dims,
                           int64_t since_ms, size_t max, struct ty_err *err)
{
    char a[32];
    redisReply *r;
    json_t *out;

    snprintf(a, sizeof(a), "%" PRId64, since_ms);
    r = store__cmdv(s, err, "ZRANGEBYSCORE", SM_INDEX, a, "+inf", NULL);
    if (!r)
        return NULL;
    if (r->type != REDIS_REPLY_ARRAY) {
        store__reply_err(r, "ZRANGEBYSCORE", err);
        freeReplyObject(r);
        return NULL;
    }
    out = json_array();
    for (size_t i = 0; out && i < r->elements && json_array_size(out) < max; i++) {
        json_t *m = r->element[i]->str ? json_loads(r->element[i]->str, 0, NULL) : NULL;
        const char *mns = json_string_value(json_object_get(m, "Namespace"));
        const char *mn = json_string_value(json_object_get(m, "MetricName"));
        if (m && mns && mn && (!ns || strcmp(ns, mns) == 0) &&
            (!metric || strcmp(metric, mn) == 0) && store_metrics_has_dims(m, dims))
            json_array_append(out, m);
        json_decref(m);
    }
    freeReplyObject(r);
    return out;
}
