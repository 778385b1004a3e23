/*
 * quota.c - account quotas: the limits and AWS's wording of a refusal (quota.h); the counting
 * and the reservations are the store's (store_quota.h).
 */
#include "quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store_iam.h"
#include "store_quota.h"

static struct quota_limits quota_current = {
    QUOTA_DEFAULT_TRAINING_INSTANCES, QUOTA_DEFAULT_PROFILES_PER_DOMAIN,
    QUOTA_DEFAULT_APPS_PER_USER, QUOTA_DEFAULT_PER_PRINCIPAL};

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

/* The tag's value as a limit: 0..QUOTA_PRINCIPAL_TAG_MAX, or -1 when it is not one. */
static long quota_tag_value(const char *v)
{
    char *end;
    long n;

    if (!v || !*v || strlen(v) > 7 || strspn(v, "0123456789") != strlen(v))
        return -1;
    n = strtol(v, &end, 10);
    return *end || n > QUOTA_PRINCIPAL_TAG_MAX ? -1 : n;
}

int quota_principal_tag_check(json_t *tags, struct ty_err *err)
{
    size_t i;
    json_t *t;

    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        if (k && strcasecmp(k, QUOTA_PRINCIPAL_TAG) == 0 && quota_tag_value(v) < 0)
            return ty_err_set(err, TY_EINVAL, "Tags",
                              "The tag %s is trainyard's quota of concurrent training instances: "
                              "its value must be a whole number from 0 (no limit) to %ld.",
                              QUOTA_PRINCIPAL_TAG, QUOTA_PRINCIPAL_TAG_MAX);
    }
    return 0;
}

/* The IAM entity whose tags hold principal_arn's limit: its user, or the role of its session.
   OUT: name (n bytes), *role. 0, or -1 for any other principal (the root, a malformed ARN). */
static int quota_entity(const char *arn, char *name, size_t n, int *role)
{
    const char *p, *end;

    if (!arn || strncmp(arn, "arn:aws:", 8) != 0)
        return -1;
    if ((p = strstr(arn, ":user/")) && strncmp(arn + 8, "iam::", 5) == 0) {
        p = strrchr(arn, '/') + 1;
        end = p + strlen(p);
        *role = 0;
    } else if ((p = strstr(arn, ":assumed-role/")) && strncmp(arn + 8, "sts::", 5) == 0) {
        p += strlen(":assumed-role/");
        if (!(end = strchr(p, '/')))
            return -1;
        *role = 1;
    } else {
        return -1;
    }
    if (end == p || (size_t)(end - p) >= n)
        return -1;
    memcpy(name, p, (size_t)(end - p));
    name[end - p] = '\0';
    return 0;
}

int quota_principal_limit(struct store *s, const char *principal_arn, long *limit, int *tagged,
                          struct ty_err *err)
{
    char name[160];
    json_t *tags = NULL, *t;
    size_t i;
    int role, rc;

    *limit = quota_current.training_instances_per_principal;
    *tagged = 0;
    if (quota_entity(principal_arn, name, sizeof(name), &role) != 0) {
        *limit = 0; /* the root: the account's quotas only */
        return 0;
    }
    if (role) {
        struct store_iam_role r;
        rc = store_iam_role_get(s, name, &r, NULL, &tags, err);
    } else {
        struct store_iam_user u;
        rc = store_iam_user_get(s, name, &u, &tags, err);
    }
    if (rc == -TY_ENOTFOUND) {
        ty_err_clear(err);
        return 0; /* deleted since it signed: the default */
    }
    if (rc)
        return rc;
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        long v = quota_tag_value(json_string_value(json_object_get(t, "Value")));
        if (k && strcasecmp(k, QUOTA_PRINCIPAL_TAG) == 0 && v >= 0) {
            *limit = v;
            *tagged = 1;
        }
    }
    json_decref(tags);
    return 0;
}

int quota_principal_reserve(struct store *s, const char *job_name, const char *principal_arn,
                            long instances, double now, struct ty_err *err)
{
    char what[700];
    long limit, used = 0;
    int tagged, rc;

    if ((rc = quota_principal_limit(s, principal_arn, &limit, &tagged, err)) != 0)
        return rc;
    if (limit <= 0)
        return 0;
    if (instances < 1)
        instances = 1;
    snprintf(what, sizeof(what), "training instances in progress for %s", principal_arn);
    if (instances <= limit) {
        rc = store_quota_principal_reserve(s, principal_arn, job_name, instances, limit,
                                           QUOTA_RESERVATION_S, now, &used, err);
        if (rc != 1)
            return rc;
    }
    return ty_err_set(err, TY_ELIMIT, NULL,
                      "The principal-level limit '%s' is %ld Instances, with current utilization "
                      "of %ld Instances and a request delta of %ld Instances. Ask your trainyard "
                      "administrator to raise it (the IAM tag %s on your user or role).",
                      what, limit, used, instances, QUOTA_PRINCIPAL_TAG);
}

void quota_principal_release(struct store *s, const char *job_name)
{
    store_quota_principal_release(s, job_name);
}
