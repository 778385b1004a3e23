/*
 * store_principal.c - access keys and their secrets in Redis (store_principal_*, store.h).
 *
 * Invariants: every redisReply is freed on every path; a secret is never logged.
 */
#include "store.h"

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

/* ---- principals ---- */

int store_principal_put(struct store *s, const char *access_key, const char *secret,
                        const char *arn, const char *user, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    int rc = 0;
    if (!access_key || !*access_key || !secret || !arn)
        return ty_err_set(err, TY_EINVAL, NULL, "store_principal_put: bad arguments");
    if (store__key(key, sizeof(key), "ty:principal:", access_key, NULL, err) < 0)
        return -TY_EINVAL;
    r = store__cmdv(s, err, "HSET", key, "secret", secret, "arn", arn, "user", user ? user : "",
                    NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(r, "HSET", err);
    freeReplyObject(r);
    return rc;
}

int store_principal_get(struct store *s, const char *access_key, char *secret, size_t secret_n,
                        char *arn, size_t arn_n, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    redisReply *r;
    int rc = 0;
    if (store__key(key, sizeof(key), "ty:principal:", access_key, NULL, err) < 0)
        return -TY_EINVAL;
    /* status: "Inactive" after IAM UpdateAccessKey (store_iam.c): then the key is unknown */
    r = store__cmdv(s, err, "HMGET", key, "secret", "arn", "status", NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        rc = store__reply_err(r, "HMGET", err);
    } else if (r->element[0]->type != REDIS_REPLY_STRING ||
               (r->element[2]->type == REDIS_REPLY_STRING &&
                strcmp(r->element[2]->str, "Inactive") == 0)) {
        rc = ty_err_set(err, TY_ENOTFOUND, NULL, "unknown access key");
    } else {
        if (secret && secret_n)
            snprintf(secret, secret_n, "%s", r->element[0]->str);
        if (arn && arn_n)
            snprintf(arn, arn_n, "%s",
                     r->element[1]->type == REDIS_REPLY_STRING ? r->element[1]->str : "");
    }
    freeReplyObject(r);
    return rc;
}
