/*
 * quota.c - account quotas: the limits and AWS's wording of a refusal (quota.h); the counting
 * and the reservations are the store's (store_quota.h).
 */
#include "quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_quota.h"

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

int quota_training_reserve(struct store *s, const char *job_name, const char *instance_type,
                           long instances, double now, struct ty_err *err)
{
    char what[128];
    long used = 0, limit = quota_current.training_instances_per_type;
    int rc;

    if (limit <= 0)
        return 0;
    if (instances < 1)
        instances = 1;
    if (!instance_type)
        instance_type = ""; /* refused by the store as a bad key */
    snprintf(what, sizeof(what), "%s for training job usage", instance_type);
    if (instances > limit)
        return quota_exceeded(err, what, limit, 0, instances, "Instances");
    rc = store_quota_jobs_reserve(s, instance_type, job_name, instances, limit, QUOTA_RESERVATION_S,
                                  now, &used, err);
    return rc == 1 ? quota_exceeded(err, what, limit, used, instances, "Instances") : rc;
}

void quota_training_release(struct store *s, const char *job_name, const char *instance_type)
{
    if (quota_current.training_instances_per_type > 0)
        store_quota_jobs_release(s, instance_type, job_name);
}

/* Reserves child_id among kind's children of parent_id: 0, -TY_ELIMIT, or a store error. */
static int quota_kids(struct store *s, enum store_quota_kind kind, const char *parent_id,
                      const char *child_id, long limit, double now, const char *what,
                      const char *unit, struct ty_err *err)
{
    long used = 0;
    int rc = store_quota_kids_reserve(s, kind, parent_id, child_id, limit, QUOTA_RESERVATION_S, now,
                                      &used, err);
    return rc == 1 ? quota_exceeded(err, what, limit, used, 1, unit) : rc;
}

int quota_reserve_profile(struct store *s, const char *domain_id, const char *profile_id,
                          double now, struct ty_err *err)
{
    long limit = quota_current.profiles_per_domain;
    if (limit <= 0)
        return 0;
    return quota_kids(s, STORE_QUOTA_PROFILES_OF_DOMAIN, domain_id, profile_id, limit, now,
                      "Maximum number of user profiles per domain", "UserProfiles", err);
}

void quota_release_profile(struct store *s, const char *domain_id, const char *profile_id)
{
    if (quota_current.profiles_per_domain > 0)
        store_quota_kids_release(s, STORE_QUOTA_PROFILES_OF_DOMAIN, domain_id, profile_id);
}

int quota_reserve_app(struct store *s, const char *profile_id, const char *app_id, double now,
                      struct ty_err *err)
{
    long limit = quota_current.apps_per_user;
    if (limit <= 0)
        return 0;
    return quota_kids(s, STORE_QUOTA_APPS_OF_PROFILE, profile_id, app_id, limit, now,
                      "Maximum number of apps per user profile", "Apps", err);
}

void quota_release_app(struct store *s, const char *profile_id, const char *app_id)
{
    if (quota_current.apps_per_user > 0)
        store_quota_kids_release(s, STORE_QUOTA_APPS_OF_PROFILE, profile_id, app_id);
}
