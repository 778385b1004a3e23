/*
 * store_tags.c - resource tags in Redis (store_tags_*, store.h): one hash per ARN.
 *
 * Invariants: every redisReply is freed on every path.
 */
#include "store.h"

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* ---- tags ---- */

int store_tags_add(struct store *s, const char *arn, json_t *tags, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    struct store_args a;
    size_t i;
    json_t *t;
    redisReply *r;
    int rc = 0;
    if (!json_is_array(tags))
        return ty_err_set(err, TY_EINVAL, "Tags", "tags must be a list");
    if (json_array_size(tags) == 0)
        return 0;
    if (store__key(key, sizeof(key), "ty:tags:", arn, NULL, err) < 0)
        return -TY_EINVAL;
    if (store__args_init(&a, 2 + 2 * (int)json_array_size(tags)) < 0) {
        store__args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc |= store__args_str(&a, "HSET");
    rc |= store__args_str(&a, key);
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        if (!k) {
            store__args_cleanup(&a);
            return ty_err_set(err, TY_EINVAL, "Tags", "tag without a Key");
        }
        rc |= store__args_str(&a, k);
        rc |= store__args_str(&a, v ? v : "");
    }
    if (rc) {
        store__args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    r = store__cmd(s, a.n, a.v, a.len, 0, err);
    store__args_cleanup(&a);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "HSET", err);
    freeReplyObject(r);
    return rc;
}

static int store_tag_cmp(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "Key"));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "Key"));
    return strcmp(x, y);
}

json_t *store_tags_list(struct store *s, const char *arn, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    json_t **items = NULL, *out = NULL;
    size_t n = 0;
    if (store__key(key, sizeof(key), "ty:tags:", arn, NULL, err) < 0)
        return NULL;
    r = store__cmdv(s, err, "HGETALL", key, NULL);
    if (!r)
        return NULL;
    if (r->type != REDIS_REPLY_ARRAY) {
        store__reply_err(r, "HGETALL", err);
        goto out;
    }
    items = calloc(r->elements / 2 + 1, sizeof(*items));
    out = json_array();
    if (!items || !out) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        json_decref(out);
        out = NULL;
        goto out;
    }
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        json_t *t = json_pack("{s:s%, s:s%}", "Key", r->element[i]->str, r->element[i]->len,
                              "Value", r->element[i + 1]->str, r->element[i + 1]->len);
        if (t)
            items[n++] = t;
    }
    qsort(items, n, sizeof(*items), store_tag_cmp);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, items[i]);
out:
    free(items);
    freeReplyObject(r);
    return out;
}

json_t *store_tags_value_many(struct store *s, const char *const *arns, size_t n, const char *key,
                              struct ty_err *err)
{
    char(*keys)[STORE_KEY_MAX] = malloc(STORE_TAGS_BATCH * sizeof(*keys));
    const char *argv[STORE_TAGS_BATCH][3];
    const char *const *cmds[STORE_TAGS_BATCH];
    redisReply *rep[STORE_TAGS_BATCH];
    int argc[STORE_TAGS_BATCH];
    json_t *out = json_array();

    if (!out || !keys) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    for (size_t base = 0; base < n; base += STORE_TAGS_BATCH) {
        size_t m = n - base < STORE_TAGS_BATCH ? n - base : STORE_TAGS_BATCH;
        for (size_t i = 0; i < m; i++) {
            if (store__key(keys[i], sizeof(keys[i]), "ty:tags:", arns[base + i], NULL, err) < 0)
                goto fail;
            argv[i][0] = "HGET";
            argv[i][1] = keys[i];
            argv[i][2] = key;
            cmds[i] = argv[i];
            argc[i] = 3;
        }
        if (store__pipeline(s, m, argc, cmds, rep, err) != 0)
            goto fail;
        for (size_t i = 0; i < m; i++) {
            json_t *v = rep[i]->type == REDIS_REPLY_STRING ? json_stringn(rep[i]->str, rep[i]->len)
                                                           : json_null();
            json_array_append_new(out, v ? v : json_null());
            freeReplyObject(rep[i]);
        }
    }
    free(keys);
    return out;
fail:
    free(keys);
    json_decref(out);
    return NULL;
}

int store_tags_delete(struct store *s, const char *arn, json_t *keys, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    struct store_args a;
    size_t i;
    json_t *k;
    redisReply *r;
    int rc = 0;
    if (!json_is_array(keys))
        return ty_err_set(err, TY_EINVAL, "TagKeys", "tag keys must be a list");
    if (json_array_size(keys) == 0)
        return 0;
    if (store__key(key, sizeof(key), "ty:tags:", arn, NULL, err) < 0)
        return -TY_EINVAL;
    if (store__args_init(&a, 2 + (int)json_array_size(keys)) < 0) {
        store__args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    rc |= store__args_str(&a, "HDEL");
    rc |= store__args_str(&a, key);
    json_array_foreach(keys, i, k)
    {
        if (!json_is_string(k)) {
            store__args_cleanup(&a);
            return ty_err_set(err, TY_EINVAL, "TagKeys", "tag key is not a string");
        }
        rc |= store__args_str(&a, json_string_value(k));
    }
    if (rc) {
        store__args_cleanup(&a);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    r = store__cmd(s, a.n, a.v, a.len, 0, err);
    store__args_cleanup(&a);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "HDEL", err);
    freeReplyObject(r);
    return rc;
}

int store_tags_clear(struct store *s, const char *arn, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    int rc = 0;
    if (store__key(key, sizeof(key), "ty:tags:", arn, NULL, err) < 0)
        return -TY_EINVAL;
    r = store__cmdv(s, err, "DEL", key, NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "DEL", err);
    freeReplyObject(r);
    return rc;
}
