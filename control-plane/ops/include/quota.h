/*
 * quota.h - per-account quotas (issue 4, item 5): concurrent training instances per instance
 * type, user profiles per domain, apps per user profile. Over a limit an operation fails with
 * ResourceLimitExceeded in AWS's wording:
 *   "The account-level service limit 'ml.m5.large for training job usage' is 2 Instances, with
 *    current utilization of 2 Instances and a request delta of 1 Instances. Please use AWS
 *    Service Quotas to request an increase for this quota."
 * Jobs within the limit but beyond the agents' capacity wait in the queue (queue.h).
 *
 * Owns: the limits (set once at start-up by trainyard-server's --max-* flags) and the
 * counting, which runs in Redis (lua/quota_count.lua) so that a count and its reservation are
 * one atomic step. Does not own the resources counted (store.c jobs, store_res.c studio).
 *
 * Counting:
 *  - training: the InstanceCount of every InProgress job of the instance type (the
 *    ty:idx:job:status:InProgress set and each job's ResourceConfig), plus reservations of
 *    creates under way. quota_training_reserve records a reservation (30 s at most) and
 *    quota_training_release drops it once the job exists (or failed to be created), so two
 *    concurrent creates cannot both take the last instance.
 *  - user profiles of a domain and apps of a user profile: the live children (status not
 *    Deleting, Deleted or Failed) in res.lua's ty:kids: sets, plus reservations of creates
 *    under way (ty:quota:kids:*), as for training.
 * A limit of 0 means no limit (nothing is read from Redis).
 * Defaults: AWS's per-account defaults vary by instance type and account (often 0 to 20
 * training instances); trainyard's are generous (100 instances per type, 100 profiles per
 * domain, 10 apps per profile) so that the agents' capacity, not the quota, is what makes
 * jobs wait; trainyard-server's --max-* flags set real limits.
 * Thread-safety: quota_configure before the server's threads start; the rest from any thread
 * with that thread's store.
 */
#ifndef TY_CP_QUOTA_H
#define TY_CP_QUOTA_H

#include <jansson.h>

#include "store.h"
#include "ty_err.h"

/* Defaults (trainyard-server --help shows them). */
#define QUOTA_DEFAULT_TRAINING_INSTANCES  100 /* per instance type (see above) */
#define QUOTA_DEFAULT_PROFILES_PER_DOMAIN 100
#define QUOTA_DEFAULT_APPS_PER_USER       10
#define QUOTA_DEFAULT_PER_PRINCIPAL       50 /* half the per-type default: see below */
#define QUOTA_RESERVATION_S               30

struct quota_limits {
    long training_instances_per_type; /* concurrent InProgress instances per instance type */
    long profiles_per_domain;
    long apps_per_user;
    long training_instances_per_principal; /* the default of a principal without the tag */
};

/*
 * Per principal (issue 23, fair share): the concurrent InProgress training instances (all
 * instance types; InstanceGroups count their instances) of the jobs one principal created.
 * The limit is the IAM tag QUOTA_PRINCIPAL_TAG on the IAM user, or on the role of a role
 * session (each session of the role is a principal of its own, as a Studio user's profile
 * session is), else training_instances_per_principal (trainyard-server's
 * --max-training-instances-per-principal); 0 means no limit. The account's root has none.
 * Setting the tag is IAM's TagUser/TagRole, so who may set a quota is who IAM allows to tag.
 * The default, 50, is half the per-type default, so that one principal's backlog cannot take
 * the whole account quota of a type and get another user's first job refused.
 */
#define QUOTA_PRINCIPAL_TAG     "trainyard:max-training-instances"
#define QUOTA_PRINCIPAL_TAG_MAX 1000000L

/* A ValidationError (the IAM API's form, field Tags) when tags (borrowed, an IAM request's
   Tags) give QUOTA_PRINCIPAL_TAG (any case) a value that is not a decimal
   0..QUOTA_PRINCIPAL_TAG_MAX; else 0. */
int quota_principal_tag_check(json_t *tags, struct ty_err *err);

/* The limit in force for principal_arn. OUT: *limit (0 = none), *tagged (1 when its IAM tag
   set it). 0, or a store error. */
int quota_principal_limit(struct store *s, const char *principal_arn, long *limit, int *tagged,
                          struct ty_err *err);

/*
 * Reserves instances instances for job job_name of principal_arn as quota_training_reserve
 * does: 0 (call quota_principal_release after the create), -TY_ELIMIT with the wording
 * "The principal-level limit 'training instances in progress for <arn>' is N Instances, ...",
 * or a store error.
 */
int quota_principal_reserve(struct store *s, const char *job_name, const char *principal_arn,
                            long instances, double now, struct ty_err *err);
void quota_principal_release(struct store *s, const char *job_name);

/* Sets the limits (copied). Call once, before any request. Default: the QUOTA_DEFAULT_*. */
void quota_configure(const struct quota_limits *l);
/* The limits in force. OUT: *l. */
void quota_get(struct quota_limits *l);

/*
 * Reserves instances instances of instance_type for job job_name (about to be created).
 * Returns 0 (reserved; call quota_training_release after the create, whatever its outcome),
 * -TY_ELIMIT with AWS's message, or a store error. Never fails when the limit is 0.
 */
int quota_training_reserve(struct store *s, const char *job_name, const char *instance_type,
                           long instances, double now, struct ty_err *err);
/* Drops job_name's reservation. Errors are ignored (the reservation expires anyway). */
void quota_training_release(struct store *s, const char *job_name, const char *instance_type);

/*
 * For CreateUserProfile (ops/studio.c), before store_res_create: reserves a slot for the
 * profile whose store id is profile_id in domain_id (res.lua's ty:res:domain:<id>) when the
 * domain's live user profiles plus other creates under way are fewer than the limit; else
 * -TY_ELIMIT ("The account-level service limit 'Maximum number of user profiles per domain' is
 * N UserProfiles, with current utilization of N UserProfiles and a request delta of 1
 * UserProfiles. ..."), or a store error. The count and the reservation are one step, so two
 * creates cannot both take the last slot. Call quota_release_profile after the create, whatever
 * its outcome (a reservation lives QUOTA_RESERVATION_S at most).
 */
int quota_reserve_profile(struct store *s, const char *domain_id, const char *profile_id,
                          double now, struct ty_err *err);
void quota_release_profile(struct store *s, const char *domain_id, const char *profile_id);

/*
 * For CreateApp: as quota_reserve_profile for the live apps of the user profile whose store id
 * is profile_id (op_studio_profile_id: "<domain>/<profile lower-cased>"); app_id is the app's
 * store id; limit name 'Maximum number of apps per user profile', unit Apps.
 */
int quota_reserve_app(struct store *s, const char *profile_id, const char *app_id, double now,
                      struct ty_err *err);
void quota_release_app(struct store *s, const char *profile_id, const char *app_id);

#endif
