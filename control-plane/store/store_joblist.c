/*
 * store_joblist.c - ListTrainingJobs over Redis (store_job_list, store.h): the creation-time
 * index, the filters (name, times, status, warm pool), sorting, and NextToken cursors bound to
 * the query that made them.
 *
 * Invariants: every redisReply is freed on every path; every array this file allocates is
 * bounded by the reply it mirrors; pipelines go in chunks.
 */
#include "store.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "ty_buf.h"

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
        if (store__key(keys[i], STORE_KEY_MAX, STORE_STATUS_PREFIX, sts[i], NULL, err) < 0)
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

/* Decides for one candidate from its job's field (a string reply): 1 keeps it (cand may be
   updated), 0 drops it. */
typedef int (*store_cand_keep_fn)(struct store_cand *cand, const char *val, size_t len,
                                  const void *ud);

/*
 * One pipelined HGET of field per candidate of c[0..n), in chunks: keeps, in order, the
 * candidates whose job still has the field and that keep() accepts; drops vanished jobs.
 * OUT: *n. 0 or error (*n = 0 then).
 */
static int store_cands_hget(struct store *s, const char *field, store_cand_keep_fn keep,
                            const void *ud, struct store_cand *c, size_t *n, struct ty_err *err)
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
            argv[i][2] = field;
            argvp[i] = argv[i];
            argc[i] = 3;
        }
        rc = store__pipeline(s, m, argc, argvp, rep, err);
        if (rc < 0)
            goto done;
        for (size_t i = 0; i < m; i++) {
            redisReply *r = rep[i];
            struct store_cand cand = c[base + i];
            if (r->type == REDIS_REPLY_STRING && keep(&cand, r->str, r->len, ud))
                c[out++] = cand;
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

/* store_cands_hget of LastModifiedTime: sets cand->modified (its creation time when unset). */
static int store_keep_modified(struct store_cand *cand, const char *val, size_t len, const void *ud)
{
    json_t *mod = json_loadb(val, len, JSON_DECODE_ANY, NULL);
    (void)ud;
    cand->modified = json_is_number(mod) ? json_number_value(mod) : cand->created;
    json_decref(mod);
    return 1;
}

/* store_cands_hget of WarmPoolStatus: keeps the candidates whose Status is ud (a string). */
static int store_keep_warm(struct store_cand *cand, const char *val, size_t len, const void *ud)
{
    json_t *w = json_loadb(val, len, 0, NULL);
    const char *st = json_string_value(json_object_get(w, "Status"));
    int keep = st && strcmp(st, (const char *)ud) == 0;
    (void)cand;
    json_decref(w);
    return keep;
}

/* The candidates of the creation-time index that pass q's name and creation-time filters.
   OUT: *c and *tmp (new, n + 1 entries each; the names borrow from *idx, also new), *n. 0 or
   error (nothing left to free then). */
static int store_job_cands(struct store *s, const struct store_job_query *q, redisReply **idx,
                           struct store_cand **c, struct store_cand **tmp, size_t *n,
                           struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "ZRANGE", "ty:idx:job", "0", "-1", "WITHSCORES", NULL);
    size_t k = 0;

    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2) {
        store__reply_err(r, "ZRANGE", err);
        freeReplyObject(r);
        return -TY_EREDIS;
    }
    *c = calloc(r->elements / 2 + 1, sizeof(**c));
    *tmp = calloc(r->elements / 2 + 1, sizeof(**tmp));
    if (!*c || !*tmp) {
        ty_safefree(*c);
        ty_safefree(*tmp);
        freeReplyObject(r);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *name = r->element[i]->str;
        double created;
        if (!name || !r->element[i + 1]->str)
            continue;
        created = strtod(r->element[i + 1]->str, NULL);
        if (q->name_contains && !store_contains_ci(name, q->name_contains))
            continue;
        if (q->created_after > 0 && !(created > q->created_after))
            continue;
        if (q->created_before > 0 && !(created < q->created_before))
            continue;
        (*c)[k].name = name;
        (*c)[k].created = created;
        (*c)[k].modified = created;
        k++;
    }
    *idx = r;
    *n = k;
    return 0;
}

/* Keeps the candidates whose LastModifiedTime passes q's filters. 0 or error. */
static int store_filter_modified(struct store *s, const struct store_job_query *q,
                                 struct store_cand *c, size_t *n, struct ty_err *err)
{
    size_t keep = 0;
    if (store_cands_hget(s, "LastModifiedTime", store_keep_modified, NULL, c, n, err) < 0)
        return -err->code;
    for (size_t i = 0; i < *n; i++) {
        if (q->modified_after > 0 && !(c[i].modified > q->modified_after))
            continue;
        if (q->modified_before > 0 && !(c[i].modified < q->modified_before))
            continue;
        c[keep++] = c[i];
    }
    *n = keep;
    return 0;
}

/* Appends the documents of c[0..take) to out (one pipelined HGETALL each; a job deleted
   meanwhile is skipped). 0 or error. */
static int store_job_page(struct store *s, const struct store_cand *c, size_t take, json_t *out,
                          struct ty_err *err)
{
    char(*keys)[STORE_KEY_MAX] = malloc(take * STORE_KEY_MAX);
    const char *(*argv)[2] = malloc(take * sizeof(*argv));
    const char *const **argvp = malloc(take * sizeof(*argvp));
    int *argc = malloc(take * sizeof(*argc));
    redisReply **rep = calloc(take, sizeof(*rep));
    int rc;

    if (keys && argv && argvp && argc && rep) {
        for (size_t i = 0; i < take; i++) {
            snprintf(keys[i], STORE_KEY_MAX, "ty:job:%s", c[i].name);
            argv[i][0] = "HGETALL";
            argv[i][1] = keys[i];
            argvp[i] = argv[i];
            argc[i] = 2;
        }
        rc = store__pipeline(s, take, argc, argvp, rep, err);
    } else {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; rc == 0 && i < take; i++) {
        struct ty_err e2;
        json_t *doc = store__doc_from_reply(rep[i], &e2);
        if (doc)
            json_array_append_new(out, doc);
    }
    for (size_t i = 0; rep && rc == 0 && i < take; i++)
        freeReplyObject(rep[i]);
    free(keys);
    free(argv);
    free(argvp);
    free(argc);
    free(rep);
    return rc;
}

/* q's sort order. 0, or -TY_EINVAL for an unknown SortBy. */
static int store_sort_of(const struct store_job_query *q, enum store_sort *sort, struct ty_err *err)
{
    if (q->sort_by && strcmp(q->sort_by, "Name") == 0)
        *sort = SORT_NAME;
    else if (q->sort_by && strcmp(q->sort_by, "Status") == 0)
        *sort = SORT_STATUS;
    else if (q->sort_by && *q->sort_by && strcmp(q->sort_by, "CreationTime") != 0)
        return ty_err_set(err, TY_EINVAL, "SortBy", "Invalid SortBy '%s'", q->sort_by);
    else
        *sort = SORT_CREATION;
    return 0;
}

json_t *store_job_list(struct store *s, const struct store_job_query *q, char **next_token,
                       struct ty_err *err)
{
    redisReply *idx = NULL;
    struct store_cand *c = NULL, *tmp = NULL;
    size_t n = 0, start = 0, take = 0;
    enum store_sort sort = SORT_CREATION;
    int asc = q->ascending ? 1 : 0, max = q->max_results;
    char tokbuf[STORE_TOKEN_MAX];
    struct store_cursor cur = {0};
    json_t *out = NULL;
    char *tok = NULL;

    if (store_sort_of(q, &sort, err) < 0)
        return NULL;
    if (max <= 0)
        max = 10;
    if (max > 100)
        max = 100;
    if (q->next_token && *q->next_token &&
        store_token_parse(q, sort, asc, q->next_token, tokbuf, sizeof(tokbuf), &cur) < 0) {
        ty_err_set(err, TY_EINVAL, "NextToken", "Invalid pagination token");
        return NULL;
    }
    if (store_job_cands(s, q, &idx, &c, &tmp, &n, err) < 0)
        return NULL;
    if ((q->status_equals || sort == SORT_STATUS) &&
        store_fill_status(s, q->status_equals, c, &n, err) < 0)
        goto out;
    if ((q->modified_after > 0 || q->modified_before > 0) &&
        store_filter_modified(s, q, c, &n, err) < 0)
        goto out;
    if (q->warm_pool_status &&
        store_cands_hget(s, "WarmPoolStatus", store_keep_warm, q->warm_pool_status, c, &n, err) < 0)
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
    if (take > 0 && store_job_page(s, c + start, take, out, err) < 0)
        goto fail;
    if (start + take < n) {
        tok = store_token_make(q, sort, asc, &c[start + take - 1]);
        if (!tok) {
            ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            goto fail;
        }
    }
    goto out;
fail:
    json_decref(out);
    out = NULL;
out:
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
