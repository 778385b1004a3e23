/*
 * quota.c - account quotas counted in Redis (quota.h, lua/quota_count.lua).
 */
#include "quota.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_iam.h"

static struct quota_limits quota_current = {QUOTA_DEFAULT_TRAINING_INSTANCES,
                                            QUOTA_DEFAULT_PROFILES_PER_DOMAIN,
                                            QUOTA_DEFAULT_APPS_PER_USER};

void quota_configure(const struct quota_limits *l)
{
    if (l)
        quota_current = *l;
}

void quota_get(struct quota_limits *l)
{
    *l = quota_current;
}

static int quota_exceeded(struct ty_err *err, const char *what, long limit, long used, long delta,
                          const char *unit)
{
    return ty_err_set(err, TY_ELIMIT, NULL,
                      "The account-level service limit '%s' is %ld %s, with current utilization "
                      "of %ld %s and a request delta of %ld %s. Please use AWS Service Quotas to "
                      "request an increase for this quota.",
                      what, limit, unit, used, unit, delta, unit);
}

/* The "LIMIT <n>" error of quota_count.lua: 1 and *used, or 0. */
static int quota_limit_reply(const redisReply *r, long *used)
{
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "LIMIT ", 6) == 0) {
        *used = strtol(r->str + 6, NULL, 10);
        return 1;
    }
    return 0;
}

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

int quota_training_reserve(struct store *s, const char *job_name, const char *instance_type,
                           long instances, double now, struct ty_err *err)
{
    char key[256], snow[40], sn[24], slim[24], sttl[16], what[128];
    const char *argv[8];
    long used = 0, limit = quota_current.training_instances_per_type;
    redisReply *r;
    int rc = 0;

    if (limit <= 0)
        return 0;
    if (instances < 1)
        instances = 1;
    if (quota_key(key, sizeof(key), "ty:quota:jobs:", instance_type, err) < 0)
        return -TY_EINVAL;
    snprintf(what, sizeof(what), "%s for training job usage", instance_type);
    if (instances > limit)
        return quota_exceeded(err, what, limit, 0, instances, "Instances");
    snprintf(snow, sizeof(snow), "%.3f", now);
    snprintf(sn, sizeof(sn), "%ld", instances);
    snprintf(slim, sizeof(slim), "%ld", limit);
    snprintf(sttl, sizeof(sttl), "%d", QUOTA_RESERVATION_S);
    argv[0] = "ty:idx:job:status:InProgress";
    argv[1] = key;
    argv[2] = "job_reserve";
    argv[3] = snow;
    argv[4] = job_name;
    argv[5] = sn;
    argv[6] = slim;
    argv[7] = sttl;
    r = store_iam_quota_eval(s, 2, 8, argv, err);
    if (!r)
        return -err->code;
    if (quota_limit_reply(r, &used))
        rc = quota_exceeded(err, what, limit, used, instances, "Instances");
    else if (r->type != REDIS_REPLY_INTEGER)
        rc = ty_err_set(err, TY_EREDIS, NULL, "redis: quota_count.lua: %s",
                        r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    return rc;
}

void quota_training_release(struct store *s, const char *job_name, const char *instance_type)
{
    char key[256], snow[8] = "0";
    const char *argv[5];
    struct ty_err err;
    redisReply *r;
    if (quota_current.training_instances_per_type <= 0 ||
        quota_key(key, sizeof(key), "ty:quota:jobs:", instance_type, &err) < 0)
        return;
    argv[0] = "ty:idx:job:status:InProgress";
    argv[1] = key;
    argv[2] = "job_release";
    argv[3] = snow;
    argv[4] = job_name;
    r = store_iam_quota_eval(s, 2, 5, argv, &err);
    if (r)
        freeReplyObject(r);
}

/* Reserves child (a resource key) among kind/id's children: see kids_reserve. */
static int quota_kids(struct store *s, const char *kind, const char *id, const char *prefix,
                      const char *child_id, long limit, double now, const char *what,
                      const char *unit, struct ty_err *err)
{
    char kids[512], resv[512], child[512], snow[40], slim[24], sttl[16];
    const char *argv[8];
    long used = 0;
    redisReply *r;
    int rc = 0;

    if (quota_key(kids, sizeof(kids), kind, id, err) < 0 ||
        snprintf(resv, sizeof(resv), "ty:quota:kids:%s", kids + strlen("ty:kids:")) >=
            (int)sizeof(resv) ||
        snprintf(child, sizeof(child), "%s%s", prefix, child_id) >= (int)sizeof(child))
        return ty_err_set(err, TY_EINVAL, NULL, "invalid resource id");
    snprintf(snow, sizeof(snow), "%.3f", now);
    snprintf(slim, sizeof(slim), "%ld", limit);
    snprintf(sttl, sizeof(sttl), "%d", QUOTA_RESERVATION_S);
    argv[0] = kids;
    argv[1] = resv;
    argv[2] = "kids_reserve";
    argv[3] = snow;
    argv[4] = prefix;
    argv[5] = slim;
    argv[6] = child;
    argv[7] = sttl;
    r = store_iam_quota_eval(s, 2, 8, argv, err);
    if (!r)
        return -err->code;
    if (quota_limit_reply(r, &used))
        rc = quota_exceeded(err, what, limit, used, 1, unit);
    else if (r->type != REDIS_REPLY_INTEGER)
        rc = ty_err_set(err, TY_EREDIS, NULL, "redis: quota_count.lua: %s",
                        r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    return rc;
}

static void quota_kids_release(struct store *s, const char *kind, const char *id,
                               const char *prefix, const char *child_id)
{
    char kids[512], resv[512], child[512];
    const char *argv[5];
    struct ty_err err;
    redisReply *r;

    if (quota_key(kids, sizeof(kids), kind, id, &err) < 0 ||
        snprintf(resv, sizeof(resv), "ty:quota:kids:%s", kids + strlen("ty:kids:")) >=
            (int)sizeof(resv) ||
        snprintf(child, sizeof(child), "%s%s", prefix, child_id) >= (int)sizeof(child))
        return;
    argv[0] = kids;
    argv[1] = resv;
    argv[2] = "kids_release";
    argv[3] = "0";
    argv[4] = child;
    r = store_iam_quota_eval(s, 2, 5, argv, &err);
    if (r)
        freeReplyObject(r);
}

int quota_reserve_profile(struct store *s, const char *domain_id, const char *profile_id,
                          double now, struct ty_err *err)
{
    long limit = quota_current.profiles_per_domain;
    if (limit <= 0)
        return 0;
    return quota_kids(s, "ty:kids:domain:", domain_id, "ty:res:user-profile:", profile_id, limit,
                      now, "Maximum number of user profiles per domain", "UserProfiles", err);
}

void quota_release_profile(struct store *s, const char *domain_id, const char *profile_id)
{
    if (quota_current.profiles_per_domain > 0)
        quota_kids_release(s, "ty:kids:domain:", domain_id, "ty:res:user-profile:", profile_id);
}

int quota_reserve_app(struct store *s, const char *profile_id, const char *app_id, double now,
                      struct ty_err *err)
{
    long limit = quota_current.apps_per_user;
    if (limit <= 0)
        return 0;
    return quota_kids(s, "ty:kids:user-profile:", profile_id, "ty:res:app:", app_id, limit, now,
                      "Maximum number of apps per user profile", "Apps", err);
}

void quota_release_app(struct store *s, const char *profile_id, const char *app_id)
{
    if (quota_current.apps_per_user > 0)
        quota_kids_release(s, "ty:kids:user-profile:", profile_id, "ty:res:app:", app_id);
}
