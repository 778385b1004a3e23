/*
 * store_res.c - Studio resources and console sessions in Redis (store_res.h).
 *
 * Owns: the ty:res:, ty:idx:res:, ty:kids: and ty:console: keys, and running res.lua (one
 * script with verbs; its SHA is process-wide, loaded on first use and again after NOSCRIPT).
 * Does not own the connection (store.c, through store_int.h) nor the documents' content.
 * Invariants: every redisReply is freed on every path; documents are opaque JSON text to Lua,
 * so they round-trip exactly.
 */
#include "store_res.h"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "store_lua.h"
#include "store_script.h"
#include "ty_codec.h"

#define RES_KEY_MAX 512

static struct store_script res_script = STORE_SCRIPT_INIT(store__lua_res, "res.lua");

static int res_key(char *out, size_t n, const char *prefix, const char *kind, const char *id,
                   struct ty_err *err)
{
    int w;
    if (!kind || !id || !*id || strchr(id, ':'))
        return ty_err_set(err, TY_EINVAL, NULL, "bad resource id");
    w = snprintf(out, n, "%s%s:%s", prefix, kind, id);
    if (w < 0 || (size_t)w >= n)
        return ty_err_set(err, TY_EINVAL, NULL, "resource id too long");
    return 0;
}

/*
 * Runs res.lua: EVALSHA sha nkeys keys... verb now pending deleting args...
 * new: the reply (possibly an error reply), or NULL with err.
 */
static redisReply *res_eval(struct store *s, const char *verb, int nkeys, const char **keys,
                            int nargs, const char **args, const size_t *arg_lens, double now,
                            const struct store_res_timing *t, struct ty_err *err)
{
    const char *argv[32];
    size_t lens[32];
    char snow[40], spend[40], sdel[40];
    int argc = 0;

    if (nkeys + nargs + 4 > 32)
        return ty_err_set(err, TY_EINVAL, NULL, "res.lua: too many arguments"), NULL;
    snprintf(snow, sizeof(snow), "%.3f", now);
    snprintf(spend, sizeof(spend), "%.3f", t ? t->pending_s : 0.0);
    snprintf(sdel, sizeof(sdel), "%.3f", t ? t->deleting_s : 0.0);
    for (int i = 0; i < nkeys; i++)
        argv[argc++] = keys[i];
    argv[argc++] = verb;
    argv[argc++] = snow;
    argv[argc++] = spend;
    argv[argc++] = sdel;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    for (int i = 0; i < nargs; i++) {
        argv[argc] = args[i];
        lens[argc] = arg_lens ? arg_lens[i] : strlen(args[i]);
        argc++;
    }
    return store_script_eval(s, &res_script, nkeys, argc, argv, lens, err);
}

/* Maps res.lua's error replies; other errors are Redis's. */
static int res_script_err(const redisReply *r, const char *what, struct ty_err *err)
{
    static const struct {
        const char *word;
        int code;
    } map[] = {
        {"NOTFOUND ", TY_ENOTFOUND}, {"NOPARENT ", TY_ENOTFOUND}, {"PARENTSTATE ", TY_ECONFLICT},
        {"INUSE ", TY_EINUSE},       {"CONFLICT ", TY_ECONFLICT}, {"HASKIDS ", TY_EINUSE},
    };
    if (r && r->type == REDIS_REPLY_ERROR) {
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
            size_t n = strlen(map[i].word);
            if (strncmp(r->str, map[i].word, n) == 0) {
                if (strcmp(map[i].word, "NOPARENT ") == 0)
                    return ty_err_set(err, map[i].code, NULL, "parent");
                return ty_err_set(err, map[i].code, NULL, "%s", r->str + n);
            }
        }
        if (strncmp(r->str, "STALE ", 6) == 0)
            return ty_err_set(err, TY_ECONFLICT, NULL, "stale");
    }
    return store__reply_err(r, what, err);
}

static const redisReply *res_field(const redisReply *h, const char *name)
{
    for (size_t i = 0; i + 1 < h->elements; i += 2) {
        const redisReply *k = h->element[i];
        if (k->type == REDIS_REPLY_STRING && strcmp(k->str, name) == 0)
            return h->element[i + 1]->type == REDIS_REPLY_STRING ? h->element[i + 1] : NULL;
    }
    return NULL;
}

static double res_num(const redisReply *h, const char *name)
{
    const redisReply *v = res_field(h, name);
    return v ? strtod(v->str, NULL) : 0.0;
}

/* new: the record from an HGETALL-shaped reply, or NULL with err. */
static json_t *res_record(const redisReply *h, struct ty_err *err)
{
    const redisReply *doc, *st, *id;
    json_error_t je;
    json_t *rec;

    if (!h || h->type != REDIS_REPLY_ARRAY || h->elements % 2 || h->elements == 0) {
        store__reply_err(h, "res record", err);
        return NULL;
    }
    doc = res_field(h, "doc");
    st = res_field(h, "status");
    id = res_field(h, "id");
    if (!doc || !st || !id) {
        ty_err_set(err, TY_EREDIS, NULL, "redis: res record: missing fields");
        return NULL;
    }
    rec = json_loadb(doc->str, doc->len, 0, &je);
    if (!json_is_object(rec)) {
        json_decref(rec);
        ty_err_set(err, TY_EREDIS, NULL, "redis: res record: bad document: %s", je.text);
        return NULL;
    }
    json_object_set_new(rec, "Status", json_string(st->str));
    json_object_set_new(rec, "LastModifiedTime", json_real(res_num(h, "modified")));
    json_object_set_new(rec, "_id", json_string(id->str));
    json_object_set_new(rec, "_ver", json_integer((json_int_t)res_num(h, "ver")));
    json_object_set_new(rec, "_since", json_real(res_num(h, "since")));
    return rec;
}

/* The record of a reply that should be one, or NULL with the script's error mapped. */
static json_t *res_record_or_err(redisReply *r, const char *what, struct ty_err *err)
{
    json_t *rec = NULL;
    if (!r)
        return NULL;
    if (r->type == REDIS_REPLY_ARRAY)
        rec = res_record(r, err);
    else
        res_script_err(r, what, err);
    freeReplyObject(r);
    return rec;
}

json_t *store_res_create(struct store *s, const struct store_res_new *n, double now,
                         const struct store_res_timing *t, struct ty_err *err)
{
    char key[RES_KEY_MAX], idx[RES_KEY_MAX], parent[RES_KEY_MAX], pkids[RES_KEY_MAX],
        kids[RES_KEY_MAX], keep[40], tags[RES_KEY_MAX];
    const char *keys[5], *args[7];
    size_t lens[7];
    char *doc;
    redisReply *r;

    if (!n || !json_is_object(n->doc) || !n->status)
        return ty_err_set(err, TY_EINVAL, NULL, "store_res_create: bad arguments"), NULL;
    if (res_key(key, sizeof(key), "ty:res:", n->kind, n->id, err) < 0 ||
        res_key(kids, sizeof(kids), "ty:kids:", n->kind, n->id, err) < 0)
        return NULL;
    snprintf(idx, sizeof(idx), "ty:idx:res:%s", n->kind);
    parent[0] = pkids[0] = '\0';
    if (n->parent_kind && n->parent_id) {
        if (res_key(parent, sizeof(parent), "ty:res:", n->parent_kind, n->parent_id, err) < 0 ||
            res_key(pkids, sizeof(pkids), "ty:kids:", n->parent_kind, n->parent_id, err) < 0)
            return NULL;
    }
    doc = json_dumps(n->doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!doc)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory"), NULL;
    snprintf(keep, sizeof(keep), "%.3f", n->keep_s);
    tags[0] = '\0';
    if (n->tags_arn &&
        snprintf(tags, sizeof(tags), "ty:tags:%s", n->tags_arn) >= (int)sizeof(tags)) {
        free(doc);
        return ty_err_set(err, TY_EINVAL, NULL, "arn too long"), NULL;
    }
    keys[0] = key;
    keys[1] = idx;
    keys[2] = parent;
    keys[3] = pkids;
    keys[4] = kids;
    args[0] = n->id;
    args[1] = n->status;
    args[2] = doc;
    args[3] = keep;
    args[4] = n->replaceable ? n->replaceable : "";
    args[5] = n->parent_blocked ? n->parent_blocked : "";
    args[6] = tags;
    for (int i = 0; i < 7; i++)
        lens[i] = strlen(args[i]);
    r = res_eval(s, "create", 5, keys, 7, args, lens, now, t, err);
    free(doc);
    return res_record_or_err(r, "res create", err);
}

json_t *store_res_get(struct store *s, const char *kind, const char *id, double now,
                      const struct store_res_timing *t, struct ty_err *err)
{
    char key[RES_KEY_MAX];
    const char *keys[1] = {key};
    if (res_key(key, sizeof(key), "ty:res:", kind, id, err) < 0) {
        if (err && err->code == TY_EINVAL)
            ty_err_set(err, TY_ENOTFOUND, NULL, "not found");
        return NULL;
    }
    return res_record_or_err(res_eval(s, "get", 1, keys, 0, NULL, NULL, now, t, err), "res get",
                             err);
}

json_t *store_res_list(struct store *s, const char *kind, const char *parent_kind,
                       const char *parent_id, double now, const struct store_res_timing *t,
                       struct ty_err *err)
{
    char key[RES_KEY_MAX];
    const char *keys[1] = {key}, *args[1];
    redisReply *r;
    json_t *out;

    if (parent_kind && parent_id) {
        if (res_key(key, sizeof(key), "ty:kids:", parent_kind, parent_id, err) < 0)
            return json_array(); /* an impossible parent has no children */
        args[0] = "set";
    } else {
        snprintf(key, sizeof(key), "ty:idx:res:%s", kind);
        args[0] = "index";
    }
    r = res_eval(s, "list", 1, keys, 1, args, NULL, now, t, err);
    if (!r)
        return NULL;
    if (r->type != REDIS_REPLY_ARRAY) {
        res_script_err(r, "res list", err);
        freeReplyObject(r);
        return NULL;
    }
    out = json_array();
    for (size_t i = 0; out && i < r->elements; i++) {
        struct ty_err e2;
        json_t *rec;
        const redisReply *id;
        char prefix[128];
        ty_err_clear(&e2);
        /* children sets may hold other kinds in future: keep only this kind */
        id = r->element[i]->type == REDIS_REPLY_ARRAY ? res_field(r->element[i], "idx") : NULL;
        snprintf(prefix, sizeof(prefix), "ty:idx:res:%s", kind);
        if (!id || strcmp(id->str, prefix) != 0)
            continue;
        rec = res_record(r->element[i], &e2);
        if (rec)
            json_array_append_new(out, rec);
    }
    freeReplyObject(r);
    if (!out)
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    return out;
}

json_t *store_res_update(struct store *s, const char *kind, const char *id,
                         const struct store_res_update *u, double now,
                         const struct store_res_timing *t, struct ty_err *err)
{
    char key[RES_KEY_MAX], ver[32];
    const char *keys[1] = {key}, *args[4];
    char *doc = NULL;
    redisReply *r;

    if (res_key(key, sizeof(key), "ty:res:", kind, id, err) < 0)
        return NULL;
    if (u->doc) {
        doc = json_dumps(u->doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
        if (!doc)
            return ty_err_set(err, TY_ENOMEM, NULL, "out of memory"), NULL;
    }
    if (u->ver >= 0)
        snprintf(ver, sizeof(ver), "%lld", u->ver);
    else
        ver[0] = '\0';
    args[0] = u->expect ? u->expect : "";
    args[1] = u->status ? u->status : "";
    args[2] = doc ? doc : "";
    args[3] = ver;
    r = res_eval(s, "update", 1, keys, 4, args, NULL, now, t, err);
    free(doc);
    return res_record_or_err(r, "res update", err);
}

int store_res_delete(struct store *s, const char *kind, const char *id, const char *expect,
                     const char *kids_ignore, const char *status, double now,
                     const struct store_res_timing *t, struct ty_err *err)
{
    char key[RES_KEY_MAX];
    const char *keys[1] = {key}, *args[3];
    redisReply *r;
    int rc = 0;

    if (res_key(key, sizeof(key), "ty:res:", kind, id, err) < 0)
        return -TY_EINVAL;
    args[0] = expect ? expect : "";
    args[1] = kids_ignore ? kids_ignore : "";
    args[2] = status ? status : "";
    r = res_eval(s, "delete", 1, keys, 3, args, NULL, now, t, err);
    if (!r)
        return -err->code;
    if (r->type == REDIS_REPLY_ERROR)
        rc = res_script_err(r, "res delete", err);
    else if (r->type != REDIS_REPLY_ARRAY && r->type != REDIS_REPLY_STATUS)
        rc = store__reply_err(r, "res delete", err);
    freeReplyObject(r);
    return rc;
}

int store_res_counter(struct store *s, const char *name, long long *out, struct ty_err *err)
{
    char key[RES_KEY_MAX];
    redisReply *r;
    int rc = 0;
    if (snprintf(key, sizeof(key), "ty:res:counter:%s", name) >= (int)sizeof(key))
        return ty_err_set(err, TY_EINVAL, NULL, "counter name too long");
    r = store__cmdv(s, err, "INCR", key, NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_INTEGER)
        *out = r->integer;
    else
        rc = store__reply_err(r, "INCR", err);
    freeReplyObject(r);
    return rc;
}

/* ---- console tokens and sessions ---- */

/* OUT: key = prefix + hex SHA-256 of secret. */
static int res_secret_key(char *out, size_t n, const char *prefix, const char *secret,
                          struct ty_err *err)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t off;
    if (!secret || !*secret || strlen(secret) > 256)
        return ty_err_set(err, TY_ENOTFOUND, NULL, "not found");
    if (EVP_Digest(secret, strlen(secret), md, &mdlen, EVP_sha256(), NULL) != 1)
        return ty_err_set(err, TY_EINTERNAL, NULL, "sha256 failed");
    off = (size_t)snprintf(out, n, "%s", prefix);
    if (off + 2 * (size_t)mdlen + 1 > n)
        return ty_err_set(err, TY_EINVAL, NULL, "key too long");
    ty_hex_encode(md, mdlen, out + off);
    return 0;
}

static json_t *res_json_reply(redisReply *r, const char *what, struct ty_err *err)
{
    json_t *v = NULL;
    if (!r)
        return NULL;
    if (r->type == REDIS_REPLY_NIL) {
        ty_err_set(err, TY_ENOTFOUND, NULL, "not found");
    } else if (r->type == REDIS_REPLY_STRING) {
        v = json_loadb(r->str, r->len, 0, NULL);
        if (!json_is_object(v)) {
            json_decref(v);
            v = NULL;
            ty_err_set(err, TY_ENOTFOUND, NULL, "not found");
        }
    } else {
        store__reply_err(r, what, err);
    }
    freeReplyObject(r);
    return v;
}

int store_res_token_put(struct store *s, const char *token, json_t *value, int ttl_s,
                        struct ty_err *err)
{
    char key[RES_KEY_MAX];
    if (res_secret_key(key, sizeof(key), "ty:console:token:", token, err) < 0)
        return -err->code;
    return store__set_json_ex(s, key, value, ttl_s, err);
}

json_t *store_res_token_take(struct store *s, const char *token, struct ty_err *err)
{
    char key[RES_KEY_MAX];
    if (res_secret_key(key, sizeof(key), "ty:console:token:", token, err) < 0)
        return NULL;
    return res_json_reply(store__cmdv(s, err, "GETDEL", key, NULL), "GETDEL", err);
}

int store_res_session_put(struct store *s, const char *sid, const char *scope, json_t *value,
                          int ttl_s, struct ty_err *err)
{
    char key[RES_KEY_MAX], set[RES_KEY_MAX], ttl[16];
    redisReply *r;
    int rc;
    if (res_secret_key(key, sizeof(key), "ty:console:session:", sid, err) < 0)
        return -err->code;
    if (snprintf(set, sizeof(set), "ty:console:sessions:%s", scope) >= (int)sizeof(set))
        return ty_err_set(err, TY_EINVAL, NULL, "scope too long");
    /* the set first: a session that exists is always revocable */
    r = store__cmdv(s, err, "SADD", set, key, NULL);
    if (!r)
        return -TY_EREDIS;
    freeReplyObject(r);
    snprintf(ttl, sizeof(ttl), "%d", 43200 + 60);
    r = store__cmdv(s, err, "EXPIRE", set, ttl, NULL);
    if (!r)
        return -TY_EREDIS;
    freeReplyObject(r);
    rc = store__set_json_ex(s, key, value, ttl_s, err);
    return rc;
}

json_t *store_res_session_get(struct store *s, const char *sid, struct ty_err *err)
{
    char key[RES_KEY_MAX];
    if (res_secret_key(key, sizeof(key), "ty:console:session:", sid, err) < 0)
        return NULL;
    return res_json_reply(store__cmdv(s, err, "GET", key, NULL), "GET", err);
}

int store_res_session_end(struct store *s, const char *sid, struct ty_err *err)
{
    char key[RES_KEY_MAX];
    redisReply *r;
    if (res_secret_key(key, sizeof(key), "ty:console:session:", sid, err) < 0)
        return 0;
    r = store__cmdv(s, err, "DEL", key, NULL);
    if (!r)
        return -TY_EREDIS;
    freeReplyObject(r);
    return 0;
}

int store_res_session_revoke(struct store *s, const char *scope, long long *n, struct ty_err *err)
{
    char set[RES_KEY_MAX];
    const char *keys[1] = {set};
    redisReply *r;
    int rc = 0;
    if (snprintf(set, sizeof(set), "ty:console:sessions:%s", scope) >= (int)sizeof(set))
        return ty_err_set(err, TY_EINVAL, NULL, "scope too long");
    r = res_eval(s, "revoke", 1, keys, 0, NULL, NULL, 0, NULL, err);
    if (!r)
        return -err->code;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (n)
            *n = r->integer;
    } else {
        rc = res_script_err(r, "res revoke", err);
    }
    freeReplyObject(r);
    return rc;
}
