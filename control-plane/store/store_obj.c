/*
 * store_obj.c - the embedded object store's records (store_obj.h): buckets, object records
 * and their key index, multipart uploads, completed uploads' answers.
 *
 * Invariants: the keys, the values and their encodings are those objstore.c wrote before the
 * records moved here (existing data reads as it is); every redisReply is freed on every path;
 * a write that changes a record and its index does both in one MULTI/EXEC.
 */
#include "store_obj.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define OBJ_BUCKETS_KEY "ty:s3:buckets"
#define OBJ_DONE_TTL    "86400"

/* new: prefix a, or prefix a "/" b when b is not NULL. NULL when out of memory. */
static char *obj_key(const char *prefix, const char *a, const char *b)
{
    size_t n = strlen(prefix) + strlen(a) + (b ? strlen(b) + 1 : 0) + 1;
    char *k = malloc(n);
    if (!k)
        return NULL;
    if (b)
        snprintf(k, n, "%s%s/%s", prefix, a, b);
    else
        snprintf(k, n, "%s%s", prefix, a);
    return k;
}

static int obj_nomem(struct ty_err *err)
{
    return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
}

/* EXEC's reply r: 0 when every queued command ran, else -TY_EREDIS with err (what). */
static int obj_exec_ok(const redisReply *r, const char *what, struct ty_err *err)
{
    if (r->type != REDIS_REPLY_ARRAY)
        return store__reply_err(r, what, err);
    for (size_t i = 0; i < r->elements; i++) {
        if (r->element[i]->type == REDIS_REPLY_ERROR)
            return store__reply_err(r->element[i], what, err);
    }
    return 0;
}

/* Runs n (at most 4) commands in one pipeline whose replies only have to be something other
   than an error. 0 or -TY_EREDIS. */
static int obj_pipe_ok(struct store *s, size_t n, const int *argc, const char *const *const *argv,
                       const char *what, struct ty_err *err)
{
    redisReply *rep[4] = {0};
    int rc = 0;

    if (n > 4)
        return ty_err_set(err, TY_EINVAL, NULL, "store: bad pipeline");
    if (store__pipeline(s, n, argc, argv, rep, err) != 0)
        return -TY_EREDIS;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && rep[i]->type == REDIS_REPLY_ERROR)
            rc = store__reply_err(rep[i], what, err);
        freeReplyObject(rep[i]);
    }
    return rc;
}

/* ---- buckets -------------------------------------------------------------------------------- */

static void obj_bucket_parse(const char *name, const char *json, struct store_obj_bucket *b)
{
    json_t *j = json_loads(json, 0, NULL);
    memset(b, 0, sizeof(*b));
    snprintf(b->name, sizeof(b->name), "%s", name);
    snprintf(b->region, sizeof(b->region), "us-east-1");
    if (j) {
        json_t *c = json_object_get(j, "created"), *rg = json_object_get(j, "region");
        if (json_is_integer(c))
            b->created_ms = json_integer_value(c);
        if (json_is_string(rg))
            snprintf(b->region, sizeof(b->region), "%s", json_string_value(rg));
        json_decref(j);
    }
}

int store_obj_bucket_add(struct store *s, const char *name, int64_t created_ms, const char *region,
                         struct ty_err *err)
{
    char val[128];
    redisReply *r;
    int rc;

    snprintf(val, sizeof(val), "{\"created\":%lld,\"region\":\"%.32s\"}", (long long)created_ms,
             region && *region ? region : "us-east-1");
    r = store__cmdv(s, err, "HSETNX", OBJ_BUCKETS_KEY, name, val, NULL);
    if (!r)
        return -TY_EREDIS;
    rc = r->type == REDIS_REPLY_INTEGER ? r->integer != 0 : store__reply_err(r, "s3 bucket", err);
    freeReplyObject(r);
    return rc;
}

int store_obj_bucket_get(struct store *s, const char *name, struct store_obj_bucket *b,
                         struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "HGET", OBJ_BUCKETS_KEY, name, NULL);
    int rc = 0;

    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_STRING) {
        if (b)
            obj_bucket_parse(name, r->str, b);
    } else if (r->type == REDIS_REPLY_NIL) {
        rc = ty_err_set(err, TY_ENOTFOUND, NULL, "no bucket '%s'", name);
    } else {
        rc = store__reply_err(r, "s3 bucket", err);
    }
    freeReplyObject(r);
    return rc;
}

int store_obj_bucket_delete(struct store *s, const char *name, struct ty_err *err)
{
    char *zk = obj_key("ty:s3:keys:", name, NULL);
    int rc;

    if (!zk)
        return obj_nomem(err);
    {
        const char *c0[] = {"HDEL", OBJ_BUCKETS_KEY, name};
        const char *c1[] = {"DEL", zk};
        const char *const *cmds[] = {c0, c1};
        const int argc[] = {3, 2};
        rc = obj_pipe_ok(s, 2, argc, cmds, "s3 bucket delete", err);
    }
    free(zk);
    return rc;
}

static int obj_bucket_cmp(const void *a, const void *b)
{
    return strcmp(((const struct store_obj_bucket *)a)->name,
                  ((const struct store_obj_bucket *)b)->name);
}

int store_obj_bucket_list(struct store *s, struct store_obj_bucket **out, size_t *n,
                          struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "HGETALL", OBJ_BUCKETS_KEY, NULL);
    struct store_obj_bucket *v;
    size_t k = 0;

    *out = NULL;
    *n = 0;
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY) {
        int rc = store__reply_err(r, "s3 buckets", err);
        freeReplyObject(r);
        return rc;
    }
    v = calloc(r->elements / 2 + 1, sizeof(*v));
    if (!v) {
        freeReplyObject(r);
        return obj_nomem(err);
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        if (r->element[i]->str && r->element[i + 1]->str)
            obj_bucket_parse(r->element[i]->str, r->element[i + 1]->str, &v[k++]);
    }
    freeReplyObject(r);
    qsort(v, k, sizeof(*v), obj_bucket_cmp);
    *out = v;
    *n = k;
    return 0;
}

/* ---- objects -------------------------------------------------------------------------------- */

/* Fills rec (and *hdrs when hdrs is not NULL) from an HGETALL reply of an object's hash. */
static void obj_rec_fill(const redisReply *r, struct store_obj_rec *rec, json_t **hdrs)
{
    memset(rec, 0, sizeof(*rec));
    if (hdrs)
        *hdrs = NULL;
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const char *f = r->element[i]->str, *v = r->element[i + 1]->str;
        if (!f || !v)
            continue;
        if (strcmp(f, "etag") == 0)
            snprintf(rec->etag, sizeof(rec->etag), "%s", v);
        else if (strcmp(f, "size") == 0)
            rec->size = strtoull(v, NULL, 10);
        else if (strcmp(f, "mtime") == 0)
            rec->mtime_ms = strtoll(v, NULL, 10);
        else if (strcmp(f, "parts") == 0)
            rec->parts = (int)strtol(v, NULL, 10);
        else if (strcmp(f, "ino") == 0)
            rec->ino = strtoull(v, NULL, 10);
        else if (strcmp(f, "path") == 0)
            snprintf(rec->path, sizeof(rec->path), "%s", v);
        else if (strcmp(f, "hdrs") == 0 && hdrs && !*hdrs)
            *hdrs = json_loads(v, 0, NULL);
    }
}

int store_obj_put(struct store *s, const char *bucket, const char *key,
                  const struct store_obj_rec *r, const json_t *hdrs, const char *psizes,
                  struct ty_err *err)
{
    char *rk = obj_key("ty:s3:obj:", bucket, key);
    char *zk = obj_key("ty:s3:keys:", bucket, NULL);
    char size[32], mtime[32], parts[16], ino[32];
    char *hj = hdrs ? json_dumps(hdrs, JSON_COMPACT) : NULL;
    redisReply *rep[5] = {0};
    int rc = 0;

    if (!rk || !zk || (hdrs && !hj)) {
        rc = obj_nomem(err);
        goto out;
    }
    snprintf(size, sizeof(size), "%llu", (unsigned long long)r->size);
    snprintf(mtime, sizeof(mtime), "%lld", (long long)r->mtime_ms);
    snprintf(parts, sizeof(parts), "%d", r->parts);
    snprintf(ino, sizeof(ino), "%llu", (unsigned long long)r->ino);
    {
        const char *c0[] = {"MULTI"};
        const char *cd[] = {"DEL", rk};
        const char *c1[] = {"HSET",  rk,    "etag", r->etag,        "size",   size,
                            "mtime", mtime, "path", r->path,        "parts",  parts,
                            "ino",   ino,   "hdrs", hj ? hj : "{}", "psizes", psizes ? psizes : ""};
        const char *c2[] = {"ZADD", zk, "0", key};
        const char *c3[] = {"EXEC"};
        const char *const *cmds[] = {c0, cd, c1, c2, c3};
        const int argc[] = {1, 2, psizes ? 18 : 16, 4, 1};
        if (store__pipeline(s, 5, argc, cmds, rep, err) != 0) {
            rc = -TY_EREDIS;
            goto out;
        }
        rc = obj_exec_ok(rep[4], "s3 index", err);
        for (int i = 0; i < 5; i++)
            freeReplyObject(rep[i]);
    }
out:
    free(rk);
    free(zk);
    free(hj);
    return rc;
}

int store_obj_get(struct store *s, const char *bucket, const char *key, struct store_obj_rec *r,
                  json_t **hdrs, struct ty_err *err)
{
    char *rk = obj_key("ty:s3:obj:", bucket, key);
    redisReply *rep;
    int rc = 0;

    memset(r, 0, sizeof(*r));
    if (hdrs)
        *hdrs = NULL;
    if (!rk)
        return obj_nomem(err);
    rep = store__cmdv(s, err, "HGETALL", rk, NULL);
    free(rk);
    if (!rep)
        return -TY_EREDIS;
    if (rep->type != REDIS_REPLY_ARRAY) {
        rc = store__reply_err(rep, "s3 object", err);
    } else {
        obj_rec_fill(rep, r, hdrs);
        if (!r->path[0]) {
            if (hdrs) {
                json_decref(*hdrs);
                *hdrs = NULL;
            }
            rc = ty_err_set(err, TY_ENOTFOUND, NULL, "no record of %s/%s", bucket, key);
        }
    }
    freeReplyObject(rep);
    return rc;
}

int store_obj_get_many(struct store *s, const char *bucket, const char *const *keys, size_t n,
                       struct store_obj_rec *r, struct ty_err *err)
{
    const char ***cmds;
    const char **argvs;
    int *argc, rc = 0;
    char **rks;
    redisReply **rep;

    if (!n)
        return 0;
    cmds = calloc(n, sizeof(*cmds));
    argc = calloc(n, sizeof(*argc));
    rks = calloc(n, sizeof(*rks));
    argvs = calloc(n * 2, sizeof(*argvs));
    rep = calloc(n, sizeof(*rep));
    if (!cmds || !argc || !rks || !argvs || !rep) {
        rc = obj_nomem(err);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(rks[i] = obj_key("ty:s3:obj:", bucket, keys[i]))) {
            rc = obj_nomem(err);
            goto out;
        }
        argvs[2 * i] = "HGETALL";
        argvs[2 * i + 1] = rks[i];
        cmds[i] = &argvs[2 * i];
        argc[i] = 2;
    }
    if (store__pipeline(s, n, argc, (const char *const *const *)cmds, rep, err) != 0) {
        rc = -TY_EREDIS;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        obj_rec_fill(rep[i], &r[i], NULL);
        freeReplyObject(rep[i]);
    }
out:
    for (size_t i = 0; rks && i < n; i++)
        free(rks[i]);
    free(cmds);
    free(argc);
    free(rks);
    free(argvs);
    free(rep);
    return rc;
}

int store_obj_psizes(struct store *s, const char *bucket, const char *key, char **psizes,
                     struct ty_err *err)
{
    char *rk = obj_key("ty:s3:obj:", bucket, key);
    redisReply *r;
    int rc = 0;

    *psizes = NULL;
    if (!rk)
        return obj_nomem(err);
    r = store__cmdv(s, err, "HGET", rk, "psizes", NULL);
    free(rk);
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL) {
        *psizes = strdup(r->type == REDIS_REPLY_STRING ? r->str : "");
        if (!*psizes)
            rc = obj_nomem(err);
    } else {
        rc = store__reply_err(r, "s3 part sizes", err);
    }
    freeReplyObject(r);
    return rc;
}

int store_obj_delete(struct store *s, const char *bucket, const char *key, struct ty_err *err)
{
    char *rk = obj_key("ty:s3:obj:", bucket, key);
    char *zk = obj_key("ty:s3:keys:", bucket, NULL);
    int rc;

    if (!rk || !zk) {
        rc = obj_nomem(err);
    } else {
        const char *c0[] = {"DEL", rk};
        const char *c1[] = {"ZREM", zk, key};
        const char *const *cmds[] = {c0, c1};
        const int argc[] = {2, 3};
        rc = obj_pipe_ok(s, 2, argc, cmds, "s3 object delete", err);
    }
    free(rk);
    free(zk);
    return rc;
}

int store_obj_count(struct store *s, const char *bucket, long long *n, struct ty_err *err)
{
    char *zk = obj_key("ty:s3:keys:", bucket, NULL);
    redisReply *r;
    int rc = 0;

    *n = 0;
    if (!zk)
        return obj_nomem(err);
    r = store__cmdv(s, err, "ZCARD", zk, NULL);
    free(zk);
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_INTEGER)
        *n = r->integer;
    else
        rc = store__reply_err(r, "s3 count", err);
    freeReplyObject(r);
    return rc;
}

void store_obj_names_cleanup(struct store_obj_names *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->v && i < p->n; i++)
        free(p->v[i]);
    free(p->v);
    free(p->len);
    memset(p, 0, sizeof(*p));
}

/* ZRANGEBYLEX <prefix><bucket> from + LIMIT 0 limit into out (see store_obj_list). */
static int obj_range(struct store *s, const char *prefix, const char *bucket, const char *from,
                     int incl, int limit, struct store_obj_names *out, const char *what,
                     struct ty_err *err)
{
    char *zk = obj_key(prefix, bucket, NULL), *min = NULL, lim[16];
    redisReply *r = NULL;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (limit < 1) {
        free(zk);
        return ty_err_set(err, TY_EINVAL, NULL, "store: bad limit %d", limit);
    }
    if (from) {
        size_t fl = strlen(from);
        if ((min = malloc(fl + 2)) != NULL) {
            min[0] = incl ? '[' : '(';
            memcpy(min + 1, from, fl + 1);
        }
    }
    if (!zk || (from && !min)) {
        rc = obj_nomem(err);
        goto out;
    }
    snprintf(lim, sizeof(lim), "%d", limit);
    r = store__cmdv(s, err, "ZRANGEBYLEX", zk, from ? min : "-", "+", "LIMIT", "0", lim, NULL);
    if (!r) {
        rc = -TY_EREDIS;
        goto out;
    }
    if (r->type != REDIS_REPLY_ARRAY) {
        rc = store__reply_err(r, what, err);
        goto out;
    }
    out->v = calloc(r->elements + 1, sizeof(*out->v));
    out->len = calloc(r->elements + 1, sizeof(*out->len));
    if (!out->v || !out->len) {
        rc = obj_nomem(err);
        goto out;
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        char *m;
        if (!e->str)
            continue;
        if (!(m = malloc(e->len + 1))) {
            rc = obj_nomem(err);
            goto out;
        }
        memcpy(m, e->str, e->len);
        m[e->len] = '\0';
        out->v[out->n] = m;
        out->len[out->n++] = e->len;
    }
out:
    if (rc != 0)
        store_obj_names_cleanup(out);
    freeReplyObject(r);
    free(zk);
    free(min);
    return rc;
}

int store_obj_list(struct store *s, const char *bucket, const char *from, int incl, int limit,
                   struct store_obj_names *out, struct ty_err *err)
{
    return obj_range(s, "ty:s3:keys:", bucket, from, incl, limit, out, "s3 list", err);
}

/* ---- multipart uploads ---------------------------------------------------------------------- */

int store_obj_mpu_create(struct store *s, const char *id, const char *bucket, const char *key,
                         int64_t initiated_ms, const json_t *hdrs, struct ty_err *err)
{
    char *rk = obj_key("ty:s3:mpu:", id, NULL);
    char *zk = obj_key("ty:s3:mpus:", bucket, NULL);
    size_t ml = strlen(key) + strlen(id) + 2;
    char *member = malloc(ml);
    char *hj = hdrs ? json_dumps(hdrs, JSON_COMPACT) : NULL;
    char init[32];
    redisReply *rep[4] = {0};
    int rc = 0;

    if (!rk || !zk || !member || (hdrs && !hj)) {
        rc = obj_nomem(err);
        goto out;
    }
    snprintf(member, ml, "%s\n%s", key, id);
    snprintf(init, sizeof(init), "%lld", (long long)initiated_ms);
    {
        const char *c0[] = {"MULTI"};
        const char *c1[] = {"HSET", rk,          "bucket", bucket, "key",
                            key,    "initiated", init,     "hdrs", hj ? hj : "{}"};
        const char *c2[] = {"ZADD", zk, "0", member};
        const char *c3[] = {"EXEC"};
        const char *const *cmds[] = {c0, c1, c2, c3};
        const int argc[] = {1, 10, 4, 1};
        if (store__pipeline(s, 4, argc, cmds, rep, err) != 0) {
            rc = -TY_EREDIS;
            goto out;
        }
        rc = obj_exec_ok(rep[3], "s3 upload", err);
        for (int i = 0; i < 4; i++)
            freeReplyObject(rep[i]);
    }
out:
    free(rk);
    free(zk);
    free(member);
    free(hj);
    return rc;
}

int store_obj_mpu_get(struct store *s, const char *id, const char *bucket, const char *key,
                      json_t **hdrs, struct ty_err *err)
{
    char *rk = obj_key("ty:s3:mpu:", id, NULL);
    redisReply *r;
    int rc = 0;

    if (hdrs)
        *hdrs = NULL;
    if (!rk)
        return obj_nomem(err);
    r = store__cmdv(s, err, "HMGET", rk, "bucket", "key", "hdrs", NULL);
    free(rk);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY) {
        rc = store__reply_err(r, "s3 upload", err);
    } else if (r->elements == 3 && r->element[0]->str && r->element[1]->str &&
               strcmp(r->element[0]->str, bucket) == 0 && strcmp(r->element[1]->str, key) == 0) {
        if (hdrs && r->element[2]->str)
            *hdrs = json_loads(r->element[2]->str, 0, NULL);
    } else {
        rc = ty_err_set(err, TY_ENOTFOUND, NULL, "no upload '%s' of %s/%s", id, bucket, key);
    }
    freeReplyObject(r);
    return rc;
}

int store_obj_mpu_initiated(struct store *s, const char *id, int64_t *ms, struct ty_err *err)
{
    char *rk = obj_key("ty:s3:mpu:", id, NULL);
    redisReply *r;
    int rc = 0;

    *ms = 0;
    if (!rk)
        return obj_nomem(err);
    r = store__cmdv(s, err, "HGET", rk, "initiated", NULL);
    free(rk);
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_STRING)
        *ms = strtoll(r->str, NULL, 10);
    else if (r->type != REDIS_REPLY_NIL)
        rc = store__reply_err(r, "s3 upload", err);
    freeReplyObject(r);
    return rc;
}

int store_obj_mpu_list(struct store *s, const char *bucket, const char *from, int incl, int limit,
                       struct store_obj_names *out, struct ty_err *err)
{
    return obj_range(s, "ty:s3:mpus:", bucket, from, incl, limit, out, "s3 uploads", err);
}

int store_obj_mpu_drop(struct store *s, const char *id, const char *bucket, const char *key,
                       struct ty_err *err)
{
    char *rk = obj_key("ty:s3:mpu:", id, NULL);
    char *pk = obj_key("ty:s3:mpuparts:", id, NULL);
    char *zk = obj_key("ty:s3:mpus:", bucket, NULL);
    size_t ml = strlen(key) + strlen(id) + 2;
    char *member = malloc(ml);
    int rc;

    if (!rk || !pk || !zk || !member) {
        rc = obj_nomem(err);
    } else {
        const char *c0[] = {"DEL", rk, pk};
        const char *c1[] = {"ZREM", zk, member};
        const char *const *cmds[] = {c0, c1};
        const int argc[] = {3, 3};
        snprintf(member, ml, "%s\n%s", key, id);
        rc = obj_pipe_ok(s, 2, argc, cmds, "s3 upload drop", err);
    }
    free(rk);
    free(pk);
    free(zk);
    free(member);
    return rc;
}

int store_obj_mpu_part_put(struct store *s, const char *id, const struct store_obj_part *p,
                           struct ty_err *err)
{
    char *pk = obj_key("ty:s3:mpuparts:", id, NULL);
    char num[16], val[96];
    redisReply *r;
    int rc = 0;

    if (!pk)
        return obj_nomem(err);
    snprintf(num, sizeof(num), "%d", p->number);
    snprintf(val, sizeof(val), "%s %llu %lld", p->etag, (unsigned long long)p->size,
             (long long)p->mtime_ms);
    r = store__cmdv(s, err, "HSET", pk, num, val, NULL);
    free(pk);
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_ERROR)
        rc = store__reply_err(r, "s3 part", err);
    freeReplyObject(r);
    return rc;
}

static int obj_part_cmp(const void *a, const void *b)
{
    return ((const struct store_obj_part *)a)->number - ((const struct store_obj_part *)b)->number;
}

int store_obj_mpu_parts(struct store *s, const char *id, struct store_obj_part **out, size_t *n,
                        struct ty_err *err)
{
    char *pk = obj_key("ty:s3:mpuparts:", id, NULL);
    redisReply *r;
    struct store_obj_part *v;
    size_t k = 0;

    *out = NULL;
    *n = 0;
    if (!pk)
        return obj_nomem(err);
    r = store__cmdv(s, err, "HGETALL", pk, NULL);
    free(pk);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY) {
        int rc = store__reply_err(r, "s3 parts", err);
        freeReplyObject(r);
        return rc;
    }
    v = calloc(r->elements / 2 + 1, sizeof(*v));
    if (!v) {
        freeReplyObject(r);
        return obj_nomem(err);
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        struct store_obj_part *p = &v[k];
        unsigned long long sz = 0;
        long long mt = 0;
        char et[STORE_OBJ_ETAG_SZ];
        if (!r->element[i]->str || !r->element[i + 1]->str)
            continue;
        if (sscanf(r->element[i + 1]->str, "%47s %llu %lld", et, &sz, &mt) != 3)
            continue;
        p->number = (int)strtol(r->element[i]->str, NULL, 10);
        snprintf(p->etag, sizeof(p->etag), "%s", et);
        p->size = sz;
        p->mtime_ms = mt;
        k++;
    }
    freeReplyObject(r);
    qsort(v, k, sizeof(*v), obj_part_cmp);
    *out = v;
    *n = k;
    return 0;
}

int store_obj_mpu_done_put(struct store *s, const char *id, const char *bucket, const char *key,
                           const char *etag, const char *algo, const char *composite,
                           const char *parts, struct ty_err *err)
{
    char rk[96];
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "b", bucket, "k", key, "e", etag ? etag : "",
                          "c", composite ? composite : "", "a", algo ? algo : "");
    char *v;

    if (j && parts && json_object_set_new(j, "p", json_string(parts)) != 0) {
        json_decref(j);
        j = NULL;
    }
    v = j ? json_dumps(j, JSON_COMPACT) : NULL;
    redisReply *r;
    int rc = 0;

    json_decref(j);
    if (!v)
        return obj_nomem(err);
    snprintf(rk, sizeof(rk), "ty:s3:mpudone:%.64s", id);
    r = store__cmdv(s, err, "SET", rk, v, "EX", OBJ_DONE_TTL, NULL);
    free(v);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_STATUS)
        rc = store__reply_err(r, "s3 completed upload", err);
    freeReplyObject(r);
    return rc;
}

int store_obj_mpu_done_get(struct store *s, const char *id, const char *bucket, const char *key,
                           struct store_obj_done *d, struct ty_err *err)
{
    char rk[96];
    redisReply *r;
    json_t *j = NULL, *b, *k;
    int rc;

    memset(d, 0, sizeof(*d));
    snprintf(rk, sizeof(rk), "ty:s3:mpudone:%.64s", id);
    r = store__cmdv(s, err, "GET", rk, NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) {
        rc = store__reply_err(r, "s3 completed upload", err);
        freeReplyObject(r);
        return rc;
    }
    if (r->type == REDIS_REPLY_STRING)
        j = json_loads(r->str, 0, NULL);
    freeReplyObject(r);
    b = json_object_get(j, "b");
    k = json_object_get(j, "k");
    if (json_is_string(b) && json_is_string(k) && strcmp(json_string_value(b), bucket) == 0 &&
        strcmp(json_string_value(k), key) == 0) {
        const char *e = json_string_value(json_object_get(j, "e"));
        const char *c = json_string_value(json_object_get(j, "c"));
        const char *a = json_string_value(json_object_get(j, "a"));
        const char *pd = json_string_value(json_object_get(j, "p"));
        snprintf(d->parts, sizeof(d->parts), "%s", pd ? pd : "");
        snprintf(d->etag, sizeof(d->etag), "%s", e ? e : "");
        snprintf(d->composite, sizeof(d->composite), "%s", c ? c : "");
        /* records from before "a" was kept were SHA-256 */
        snprintf(d->algo, sizeof(d->algo), "%s", a && *a ? a : (c && *c ? "SHA256" : ""));
        rc = 0;
    } else {
        rc = ty_err_set(err, TY_ENOTFOUND, NULL, "no completed upload '%.64s' of %s/%s", id, bucket,
                        key);
    }
    json_decref(j);
    return rc;
}
