/*
 * store_quota.c - the quotas' reservations and counts (store_quota.h), through
 * lua/quota_count.lua.
 *
 * Keys: ty:quota:jobs:<instance type> (hash, job name -> "<expiry> <instances>") counted with
 * ty:idx:job:status:InProgress; ty:quota:kids:<kind>:<id> (hash, child key -> expiry) counted
 * with res.lua's ty:kids:<kind>:<id>; ty:quota:principal (hash, job name -> "<expiry>
 * <instances> <principal>") counted with the InProgress jobs' _principal. A reservation's
 * expiry is written in the value; the script drops expired ones when it counts.
 */
#include "store_quota.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "store_lua.h"
#include "store_script.h"

#define STORE_QUOTA_PRINCIPAL_KEY "ty:quota:principal"

static struct store_script quota_script =
    STORE_SCRIPT_INIT(store__lua_quota_count, "quota_count.lua");

/* prefix + id into buf; -TY_EINVAL when id is empty, has ':' or ' ', or does not fit. */
static int quota_key(char *buf, size_t n, const char *prefix, const char *id, struct ty_err *err)
{
    int w;
    if (!id || !*id || strchr(id, ':') || strchr(id, ' '))
        return ty_err_set(err, TY_EINVAL, NULL, "bad quota key");
    w = snprintf(buf, n, "%s%s", prefix, id);
    if (w < 0 || (size_t)w >= n)
        return ty_err_set(err, TY_EINVAL, NULL, "quota key too long");
    return 0;
}

/* Runs the script; 0, 1 with *used on its "LIMIT <n>" error, or -TY_EREDIS with err. */
static int quota_eval(struct store *s, int nargs, const char *const *argv, long *used,
                      struct ty_err *err)
{
    redisReply *r = store_script_eval(s, &quota_script, 2, nargs, argv, NULL, err);
    int rc = 0;

    if (!r)
        return -err->code;
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "LIMIT ", 6) == 0) {
        if (used)
            *used = strtol(r->str + 6, NULL, 10);
        rc = 1;
    } else if (r->type != REDIS_REPLY_INTEGER) {
        rc = ty_err_set(err, TY_EREDIS, NULL, "redis: quota_count.lua: %s",
                        r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    }
    freeReplyObject(r);
    return rc;
}

/* The reserve verbs' call: key is the reservations' hash, who the principal (NULL for a type's
   quota). As store_quota_jobs_reserve. */
static int quota_reserve(struct store *s, const char *key, const char *verb, const char *job_name,
                         long instances, long limit, int ttl_s, double now, const char *who,
                         long *used, struct ty_err *err)
{
    char snow[40], sn[24], slim[24], sttl[16];
    const char *argv[9] = {
        "ty:idx:job:status:InProgress", key, verb, snow, job_name, sn, slim, sttl, who};

    snprintf(snow, sizeof(snow), "%.3f", now);
    snprintf(sn, sizeof(sn), "%ld", instances);
    snprintf(slim, sizeof(slim), "%ld", limit);
    snprintf(sttl, sizeof(sttl), "%d", ttl_s);
    return quota_eval(s, who ? 9 : 8, argv, used, err);
}

int store_quota_jobs_reserve(struct store *s, const char *instance_type, const char *job_name,
                             long instances, long limit, int ttl_s, double now, long *used,
                             struct ty_err *err)
{
    char key[256];

    if (quota_key(key, sizeof(key), "ty:quota:jobs:", instance_type, err) < 0)
        return -TY_EINVAL;
    return quota_reserve(s, key, "job_reserve", job_name, instances, limit, ttl_s, now, NULL, used,
                         err);
}

void store_quota_jobs_release(struct store *s, const char *instance_type, const char *job_name)
{
    char key[256];
    const char *argv[5];
    struct ty_err err;

    if (quota_key(key, sizeof(key), "ty:quota:jobs:", instance_type, &err) < 0)
        return;
    argv[0] = "ty:idx:job:status:InProgress";
    argv[1] = key;
    argv[2] = "job_release";
    argv[3] = "0";
    argv[4] = job_name;
    (void)quota_eval(s, 5, argv, NULL, &err);
}

int store_quota_principal_reserve(struct store *s, const char *principal, const char *job_name,
                                  long instances, long limit, int ttl_s, double now, long *used,
                                  struct ty_err *err)
{
    if (!principal || !*principal || strchr(principal, ' ') || !job_name || !*job_name)
        return ty_err_set(err, TY_EINVAL, NULL, "bad quota principal");
    return quota_reserve(s, STORE_QUOTA_PRINCIPAL_KEY, "principal_reserve", job_name, instances,
                         limit, ttl_s, now, principal, used, err);
}

void store_quota_principal_release(struct store *s, const char *job_name)
{
    const char *argv[5] = {"ty:idx:job:status:InProgress", STORE_QUOTA_PRINCIPAL_KEY,
                           "principal_release", "0", job_name};
    struct ty_err err;

    if (job_name && *job_name)
        (void)quota_eval(s, 5, argv, NULL, &err);
}

/* The kind's key prefixes: the parent's set of children and the children's records. */
static void quota_kind(enum store_quota_kind kind, const char **kids, const char **child)
{
    if (kind == STORE_QUOTA_APPS_OF_PROFILE) {
        *kids = "user-profile:";
        *child = "ty:res:app:";
    } else {
        *kids = "domain:";
        *child = "ty:res:user-profile:";
    }
}

/* The three keys of kind/parent_id/child_id; -TY_EINVAL with err when an id is bad. */
static int quota_kid_keys(enum store_quota_kind kind, const char *parent_id, const char *child_id,
                          char kids[512], char resv[512], char child[512],
                          const char **child_prefix, struct ty_err *err)
{
    const char *kp;
    char pk[256];

    quota_kind(kind, &kp, child_prefix);
    if (quota_key(pk, sizeof(pk), kp, parent_id, err) < 0 ||
        snprintf(kids, 512, "ty:kids:%s", pk) >= 512 ||
        snprintf(resv, 512, "ty:quota:kids:%s", pk) >= 512 || !child_id ||
        snprintf(child, 512, "%s%s", *child_prefix, child_id) >= 512)
        return ty_err_set(err, TY_EINVAL, NULL, "invalid resource id");
    return 0;
}

int store_quota_kids_reserve(struct store *s, enum store_quota_kind kind, const char *parent_id,
                             const char *child_id, long limit, int ttl_s, double now, long *used,
                             struct ty_err *err)
{
    char kids[512], resv[512], child[512], snow[40], slim[24], sttl[16];
    const char *argv[8], *prefix;

    if (quota_kid_keys(kind, parent_id, child_id, kids, resv, child, &prefix, err) < 0)
        return -TY_EINVAL;
    snprintf(snow, sizeof(snow), "%.3f", now);
    snprintf(slim, sizeof(slim), "%ld", limit);
    snprintf(sttl, sizeof(sttl), "%d", ttl_s);
    argv[0] = kids;
    argv[1] = resv;
    argv[2] = "kids_reserve";
    argv[3] = snow;
    argv[4] = prefix;
    argv[5] = slim;
    argv[6] = child;
    argv[7] = sttl;
    return quota_eval(s, 8, argv, used, err);
}

void store_quota_kids_release(struct store *s, enum store_quota_kind kind, const char *parent_id,
                              const char *child_id)
{
    char kids[512], resv[512], child[512];
    const char *argv[5], *prefix;
    struct ty_err err;

    if (quota_kid_keys(kind, parent_id, child_id, kids, resv, child, &prefix, &err) < 0)
        return;
    argv[0] = kids;
    argv[1] = resv;
    argv[2] = "kids_release";
    argv[3] = "0";
    argv[4] = child;
    (void)quota_eval(s, 5, argv, NULL, &err);
}
