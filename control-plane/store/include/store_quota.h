/*
 * store_quota.h - the quotas' records in Redis: the reservations of creates under way
 * (ty:quota:jobs:<instance type>, ty:quota:principal, ty:quota:kids:<kind>:<id>) and the counts
 * they are checked against, each read and its reservation one atomic step (lua/quota_count.lua).
 *
 * Owns: those keys, the script and the decoding of its replies. Does not own the limits or
 * AWS's wording of a refusal (quota.h), nor the records counted (jobs: store_job.c; studio's
 * children: store_res.c).
 * Thread-safety: any thread with its own store.
 */
#ifndef TY_CP_STORE_QUOTA_H
#define TY_CP_STORE_QUOTA_H

#include "store.h"
#include "ty_err.h"

/* A resource whose children are counted: a domain's user profiles, a profile's apps. */
enum store_quota_kind {
    STORE_QUOTA_PROFILES_OF_DOMAIN, /* parent: a domain's store id, child: a profile's */
    STORE_QUOTA_APPS_OF_PROFILE,    /* parent: a profile's store id, child: an app's */
};

/*
 * Counts the instances of instance_type in use (InProgress jobs plus live reservations of
 * others) and, when adding instances stays within limit, reserves them for job_name for
 * ttl_s seconds. 0 (reserved), 1 (over the limit; OUT: *used, the count without this
 * request), or -TY_EINVAL (an instance type with ':' or ' ') / -TY_EREDIS with err.
 */
int store_quota_jobs_reserve(struct store *s, const char *instance_type, const char *job_name,
                             long instances, long limit, int ttl_s, double now, long *used,
                             struct ty_err *err);
/* Drops job_name's reservation; errors are ignored (the reservation expires anyway). */
void store_quota_jobs_release(struct store *s, const char *instance_type, const char *job_name);

/*
 * As store_quota_jobs_reserve, for the instances of the InProgress jobs that principal created
 * (their _principal) plus its live reservations, in ty:quota:principal.
 */
int store_quota_principal_reserve(struct store *s, const char *principal, const char *job_name,
                                  long instances, long limit, int ttl_s, double now, long *used,
                                  struct ty_err *err);
/* Drops job_name's reservation; errors are ignored. */
void store_quota_principal_release(struct store *s, const char *job_name);

/*
 * The same for the live children of kind's parent (status not Deleting, Deleted or Failed):
 * reserves child_id when the count is below limit. 0, 1 with *used, or -TY_EINVAL (a bad id)
 * / -TY_EREDIS with err.
 */
int store_quota_kids_reserve(struct store *s, enum store_quota_kind kind, const char *parent_id,
                             const char *child_id, long limit, int ttl_s, double now, long *used,
                             struct ty_err *err);
/* Drops child_id's reservation; errors are ignored. */
void store_quota_kids_release(struct store *s, enum store_quota_kind kind, const char *parent_id,
                              const char *child_id);

#endif
