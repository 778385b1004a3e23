/*
 * logs.c - the CloudWatch Logs subset the SageMaker SDK and the CLI use on training jobs:
 * DescribeLogGroups, DescribeLogStreams, GetLogEvents, FilterLogEvents.
 *
 * Owns: CloudWatch's paging semantics on top of the per-stream Redis streams of store.c.
 * GetLogEvents tokens are "f/<entry id>" and "b/<entry id>" (the position after/before which
 * the next page starts); a page always carries nextForwardToken, and reading forward past the
 * end returns an empty page with the same token, which is how the SDK knows it has caught up.
 * DescribeLogStreams returns nextToken only when more streams remain (the SDK loops forever
 * otherwise). The training-job group always exists; other groups exist once they have a stream.
 */
#include "ops.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAINING_GROUP "/aws/sagemaker/TrainingJobs"
#define LOGS_BATCH     500

static const char *lg_str(json_t *in, const char *key)
{
    return json_string_value(json_object_get(in, key));
}

static int lg_group_missing(struct ty_err *err)
{
    return ty_err_set(err, TY_ELOGNOTFOUND, "logGroupName",
                      "The specified log group does not exist.");
}

/* 1 when group exists. */
static int lg_group_exists(struct op_ctx *ctx, const char *group, struct ty_err *err)
{
    json_t *streams;
    int exists;
    if (strcmp(group, TRAINING_GROUP) == 0)
        return 1;
    streams = store_log_streams(ctx->store, group, NULL, 0, 0, err);
    if (!streams)
        return -1;
    exists = json_array_size(streams) > 0;
    json_decref(streams);
    return exists;
}

/* 0 when group exists, else its ResourceNotFoundException (or the store's error) in err. */
static int lg_group_check(struct op_ctx *ctx, const char *group, struct ty_err *err)
{
    int ex = lg_group_exists(ctx, group, err);
    if (ex < 0)
        return -err->code;
    return ex ? 0 : lg_group_missing(err);
}

/* A list's nextToken (a decimal offset). OUT: *start (left as it is without a token). 0, or
   -TY_EINVAL with the wording of CloudWatch Logs. */
static int lg_offset_token(const char *token, long *start, struct ty_err *err)
{
    char *end;
    if (!token)
        return 0;
    *start = strtol(token, &end, 10);
    if (*end || *start < 0)
        return ty_err_set(err, TY_EINVAL, "nextToken", "The specified nextToken is invalid.");
    return 0;
}

/*
 * The training-job group's creationTime (epoch ms): recorded the first time it is asked for,
 * as the earliest of now and its streams' creation times, then stable. -1 (err).
 */
static long long lg_group_created(struct op_ctx *ctx, const char *group, struct ty_err *err)
{
    long long have = store_log_group_created_get(ctx->store, group, err), first;
    json_t *streams, *st;
    size_t i;

    if (have != 0)
        return have;
    first = (long long)(ctx->now * 1000.0);
    streams = store_log_streams(ctx->store, group, NULL, 0, 0, err);
    if (!streams)
        return -1;
    json_array_foreach(streams, i, st)
    {
        long long c = (long long)json_integer_value(json_object_get(st, "creationTime"));
        if (c > 0 && c < first)
            first = c;
    }
    json_decref(streams);
    return store_log_group_created(ctx->store, group, first, err);
}

int op_logs_describe_groups(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *prefix = lg_str(in, "logGroupNamePrefix");
    json_t *groups = json_array();
    char arn[512];

    if (!prefix || strncmp(TRAINING_GROUP, prefix, strlen(prefix)) == 0) {
        long long created = lg_group_created(ctx, TRAINING_GROUP, err);
        if (created < 0) {
            json_decref(groups);
            return -err->code;
        }
        snprintf(arn, sizeof(arn), "arn:aws:logs:%s:%s:log-group:%s:*", ctx->region,
                 ctx->account_id, TRAINING_GROUP);
        json_array_append_new(groups, json_pack("{s:s,s:I,s:i,s:s}", "logGroupName", TRAINING_GROUP,
                                                "creationTime", (json_int_t)created,
                                                "metricFilterCount", 0, "arn", arn));
    }
    *out = json_pack("{s:o}", "logGroups", groups);
    return 0;
}

int op_logs_describe_streams(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *group = lg_str(in, "logGroupName");
    const char *prefix = lg_str(in, "logStreamNamePrefix");
    const char *order = lg_str(in, "orderBy");
    const char *token = lg_str(in, "nextToken");
    int by_last = order && strcmp(order, "LastEventTime") == 0;
    int desc = json_is_true(json_object_get(in, "descending"));
    json_t *lim = json_object_get(in, "limit");
    long limit = lim ? (long)json_integer_value(lim) : 50;
    long start = 0;
    json_t *all, *page;
    size_t n;

    if (!group)
        return ty_err_set(err, TY_EINVAL, "logGroupName", "logGroupName is required");
    if (by_last && prefix)
        return ty_err_set(err, TY_EINVAL, "orderBy",
                          "Cannot order by LastEventTime with a logStreamNamePrefix.");
    if (lg_offset_token(token, &start, err) != 0 || lg_group_check(ctx, group, err) != 0)
        return -err->code;
    all = store_log_streams(ctx->store, group, prefix, by_last, desc, err);
    if (!all)
        return -err->code;
    n = json_array_size(all);
    page = json_array();
    for (size_t i = (size_t)start; i < n && (long)(i - (size_t)start) < limit; i++)
        json_array_append(page, json_array_get(all, i));
    *out = json_pack("{s:o}", "logStreams", page);
    if ((size_t)start + (size_t)limit < n) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%ld", start + limit);
        json_object_set_new(*out, "nextToken", json_string(buf));
    }
    json_decref(all);
    return 0;
}

struct lg_window {
    int64_t start; /* inclusive, ms; INT64_MIN when unset */
    int64_t end;   /* exclusive, ms; INT64_MAX when unset */
};

static void lg_window_parse(json_t *in, struct lg_window *w)
{
    json_t *s = json_object_get(in, "startTime"), *e = json_object_get(in, "endTime");
    w->start = json_is_integer(s) ? json_integer_value(s) : INT64_MIN;
    w->end = json_is_integer(e) ? json_integer_value(e) : INT64_MAX;
}

static int lg_in_window(const struct lg_window *w, json_t *ev)
{
    int64_t ts = json_integer_value(json_object_get(ev, "timestamp"));
    return ts >= w->start && ts < w->end;
}

/*
 * Reads up to limit events of one stream in [window] after (forward) or before (backward)
 * position pos ("" = the stream's start or end). Returns a new array in ascending order.
 */
static json_t *lg_read(struct op_ctx *ctx, const char *group, const char *stream, const char *pos,
                       int forward, long limit, const struct lg_window *w, struct ty_err *err)
{
    json_t *res = json_array();
    char cursor[80];

    if (pos[0])
        snprintf(cursor, sizeof(cursor), "(%s", pos);
    else
        snprintf(cursor, sizeof(cursor), "%s", forward ? "-" : "+");
    while ((long)json_array_size(res) < limit) {
        json_t *batch, *ev;
        size_t i, n;
        batch = store_log_range(ctx->store, group, stream, forward ? cursor : "-",
                                forward ? "+" : cursor, !forward, LOGS_BATCH, err);
        if (!batch) {
            json_decref(res);
            return NULL;
        }
        n = json_array_size(batch);
        json_array_foreach(batch, i, ev)
        {
            if ((long)json_array_size(res) >= limit)
                break;
            if (lg_in_window(w, ev))
                json_array_append(res, ev);
        }
        if (n > 0)
            snprintf(cursor, sizeof(cursor), "(%s",
                     json_string_value(json_object_get(json_array_get(batch, n - 1), "id")));
        json_decref(batch);
        if (n < LOGS_BATCH)
            break;
    }
    if (!forward) {
        /* collected newest first: put them back in time order */
        json_t *asc = json_array();
        for (size_t i = json_array_size(res); i > 0; i--)
            json_array_append(asc, json_array_get(res, i - 1));
        json_decref(res);
        res = asc;
    }
    return res;
}

int op_logs_get_events(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *group = lg_str(in, "logGroupName");
    const char *stream = lg_str(in, "logStreamName");
    const char *token = lg_str(in, "nextToken");
    json_t *lim = json_object_get(in, "limit");
    long limit = lim ? (long)json_integer_value(lim) : 10000;
    int forward = json_is_true(json_object_get(in, "startFromHead"));
    const char *pos = "";
    struct lg_window w;
    json_t *evs, *events, *ev;
    char fwd[80], bwd[80];
    size_t i, n;

    if (!group || !stream)
        return ty_err_set(err, TY_EINVAL, group ? "logStreamName" : "logGroupName",
                          "1 validation error detected: Value null at '%s' failed to satisfy "
                          "constraint: Member must not be null",
                          group ? "logStreamName" : "logGroupName");
    if (token) {
        if ((token[0] != 'f' && token[0] != 'b') || token[1] != '/' || !token[2] ||
            strlen(token) > 70)
            return ty_err_set(err, TY_EINVAL, "nextToken", "The specified nextToken is invalid.");
        forward = token[0] == 'f';
        pos = token + 2;
    }
    lg_window_parse(in, &w);
    evs = lg_read(ctx, group, stream, pos, forward, limit, &w, err);
    if (!evs) {
        if (err->code == TY_ELOGNOTFOUND) {
            int ex = lg_group_exists(ctx, group, err);
            if (ex == 0)
                return lg_group_missing(err);
            return ty_err_set(err, TY_ELOGNOTFOUND, "logStreamName",
                              "The specified log stream does not exist.");
        }
        return -err->code;
    }
    n = json_array_size(evs);
    events = json_array();
    json_array_foreach(evs, i, ev)
    {
        json_array_append_new(events, json_pack("{s:O,s:O,s:O}", "timestamp",
                                                json_object_get(ev, "timestamp"), "message",
                                                json_object_get(ev, "message"), "ingestionTime",
                                                json_object_get(ev, "ingestionTime")));
    }
    if (n > 0) {
        snprintf(fwd, sizeof(fwd), "f/%s",
                 json_string_value(json_object_get(json_array_get(evs, n - 1), "id")));
        snprintf(bwd, sizeof(bwd), "b/%s",
                 json_string_value(json_object_get(json_array_get(evs, 0), "id")));
    } else {
        snprintf(fwd, sizeof(fwd), "f/%s", pos[0] ? pos : "0-0");
        snprintf(bwd, sizeof(bwd), "b/%s", pos[0] ? pos : "0-0");
    }
    json_decref(evs);
    *out = json_pack("{s:o,s:s,s:s}", "events", events, "nextForwardToken", fwd,
                     "nextBackwardToken", bwd);
    return 0;
}

/* CloudWatch filter patterns on plain text: terms that must all appear, "quoted phrases",
   ?term (any of these), -term (none of these). An empty pattern matches everything. */
static int lg_match(const char *pattern, const char *msg)
{
    char term[512];
    const char *p = pattern;
    int any_or = 0, or_hit = 0;

    while (p && *p) {
        size_t n = 0;
        char kind = 0;
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        if (*p == '?' || *p == '-')
            kind = *p++;
        if (*p == '"') {
            p++;
            while (*p && *p != '"' && n + 1 < sizeof(term))
                term[n++] = *p++;
            if (*p == '"')
                p++;
        } else {
            while (*p && *p != ' ' && n + 1 < sizeof(term))
                term[n++] = *p++;
        }
        term[n] = '\0';
        if (!n)
            continue;
        if (kind == '?') {
            any_or = 1;
            if (strstr(msg, term))
                or_hit = 1;
        } else if (kind == '-') {
            if (strstr(msg, term))
                return 0;
        } else if (!strstr(msg, term)) {
            return 0;
        }
    }
    return !any_or || or_hit;
}

static int lg_cmp_events(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t tx = json_integer_value(json_object_get(x, "timestamp"));
    json_int_t ty = json_integer_value(json_object_get(y, "timestamp"));
    if (tx != ty)
        return tx < ty ? -1 : 1;
    /* same millisecond: stream order, then the order within the stream */
    for (int k = 0; k < 2; k++) {
        const char *key = k ? "_p" : "_s";
        json_int_t ax = json_integer_value(json_object_get(x, key));
        json_int_t ay = json_integer_value(json_object_get(y, key));
        if (ax != ay)
            return ax < ay ? -1 : 1;
    }
    return 0;
}

int op_logs_filter_events(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *group = lg_str(in, "logGroupName");
    const char *prefix = lg_str(in, "logStreamNamePrefix");
    const char *pattern = lg_str(in, "filterPattern");
    const char *token = lg_str(in, "nextToken");
    json_t *names = json_object_get(in, "logStreamNames");
    json_t *lim = json_object_get(in, "limit");
    long limit = lim ? (long)json_integer_value(lim) : 10000;
    long start = 0;
    struct lg_window w;
    json_t *streams, *st, *searched, *page;
    json_t **all = NULL;
    size_t nall = 0, cap = 0, i;

    if (!group)
        return ty_err_set(err, TY_EINVAL, "logGroupName", "logGroupName is required");
    if (names && prefix)
        return ty_err_set(err, TY_EINVAL, "logStreamNames",
                          "logStreamNames and logStreamNamePrefix are mutually exclusive");
    if (pattern && pattern[0] == '{')
        return ty_err_set(err, TY_EINVAL, "filterPattern",
                          "JSON filter patterns are not supported by trainyard");
    if (lg_offset_token(token, &start, err) != 0 || lg_group_check(ctx, group, err) != 0)
        return -err->code;
    lg_window_parse(in, &w);
    streams = store_log_streams(ctx->store, group, prefix, 0, 0, err);
    if (!streams)
        return -err->code;
    searched = json_array();
    json_array_foreach(streams, i, st)
    {
        const char *sname = json_string_value(json_object_get(st, "logStreamName"));
        int wanted = !names;
        size_t j;
        json_t *nm, *evs, *ev;
        for (j = 0; names && j < json_array_size(names); j++) {
            nm = json_array_get(names, j);
            if (json_is_string(nm) && strcmp(json_string_value(nm), sname) == 0)
                wanted = 1;
        }
        if (!wanted)
            continue;
        evs = lg_read(ctx, group, sname, "", 1, 1000000, &w, err);
        if (!evs)
            continue;
        json_array_foreach(evs, j, ev)
        {
            const char *msg = json_string_value(json_object_get(ev, "message"));
            char eid[200];
            if (pattern && !lg_match(pattern, msg ? msg : ""))
                continue;
            if (nall == cap) {
                json_t **grown;
                cap = cap ? cap * 2 : 256;
                grown = realloc(all, cap * sizeof(*all));
                if (!grown)
                    break;
                all = grown;
            }
            snprintf(eid, sizeof(eid), "%s/%s", sname,
                     json_string_value(json_object_get(ev, "id")));
            all[nall++] = json_pack("{s:s,s:O,s:O,s:O,s:s,s:I,s:I}", "logStreamName", sname,
                                    "timestamp", json_object_get(ev, "timestamp"), "message",
                                    json_object_get(ev, "message"), "ingestionTime",
                                    json_object_get(ev, "ingestionTime"), "eventId", eid, "_s",
                                    (json_int_t)i, "_p", (json_int_t)j);
        }
        json_decref(evs);
        json_array_append_new(
            searched, json_pack("{s:s,s:b}", "logStreamName", sname, "searchedCompletely", 1));
    }
    json_decref(streams);
    if (nall)
        qsort(all, nall, sizeof(*all), lg_cmp_events);
    page = json_array();
    for (i = 0; i < nall; i++) {
        if ((long)i >= start && (long)i < start + limit) {
            json_object_del(all[i], "_s");
            json_object_del(all[i], "_p");
            json_array_append(page, all[i]);
        }
        json_decref(all[i]);
    }
    free(all);
    *out = json_pack("{s:o,s:o}", "events", page, "searchedLogStreams", searched);
    if ((size_t)(start + limit) < nall) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%ld", start + limit);
        json_object_set_new(*out, "nextToken", json_string(buf));
    }
    return 0;
}
