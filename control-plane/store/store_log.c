/*
 * store_log.c - CloudWatch Logs in Redis (store_log_*, store.h): one stream per log stream
 * (the entry ID is the token), the stream index per group, and each group's creation time.
 *
 * Invariants: every redisReply is freed on every path; events are appended by log_append.lua.
 */
#include "store.h"

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "ty_buf.h"
#include "ty_time.h"

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
    if (store__key(k1, sizeof(k1), "ty:log:", group, stream, err) < 0 ||
        store__key(k2, sizeof(k2), "ty:logstreams:", group, NULL, err) < 0 ||
        store__key(k3, sizeof(k3), "ty:logstream:", group, stream, err) < 0)
        return -TY_EINVAL;
    if (json_array_size(events) > (size_t)STORE_MAX_ARGS / 2)
        return ty_err_set(err, TY_ETOOBIG, "logEvents", "too many events");
    if (store__args_init(&a, 5 + 2 * (int)json_array_size(events)) < 0) {
        store__args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc |= store__args_str(&a, k1);
    rc |= store__args_str(&a, k2);
    rc |= store__args_str(&a, k3);
    rc |= store__args_str(&a, stream);
    rc |= store__args_fmt(&a, "%lld", ty_wall_ms());
    json_array_foreach(events, i, e)
    {
        json_t *ts = json_object_get(e, "timestamp");
        json_t *msg = json_object_get(e, "message");
        if (!json_is_number(ts) || !json_is_string(msg)) {
            store__args_cleanup(&a);
            return ty_err_set(err, TY_EINVAL, "logEvents",
                              "each event needs a numeric timestamp and a string message");
        }
        rc |= store__args_fmt(&a, "%lld", (long long)json_number_value(ts));
        rc |= store__args_add(&a, json_string_value(msg), json_string_length(msg), 0);
    }
    if (rc) {
        store__args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    r = store__eval(s, SC_LOG_APPEND, 3, a.n, a.v, a.len, err);
    store__args_cleanup(&a);
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

    if (store__key(k1, sizeof(k1), "ty:log:", group, stream, err) < 0)
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
    if (store__key(key, sizeof(key), "ty:logstreams:", group, NULL, err) < 0)
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
        snprintf(arn, sizeof(arn), "arn:aws:logs:%s:%s:log-group:%s:log-stream:%s",
                 store__region(s), store__account(s), group, name);
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
    if (store__key(k1, sizeof(k1), "ty:log:", group, stream, err) < 0 ||
        store__key(k3, sizeof(k3), "ty:logstream:", group, stream, err) < 0)
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
