/*
 * attrib.h - which user profile a training job belongs to, for the profiler app:
 * SageMaker Studio tags the jobs it launches with sagemaker:user-profile-arn and
 * sagemaker:domain-arn; trainyard adds the same tags at CreateTrainingJob when the caller is an
 * IAM user mapped to a user profile. Callers cannot set these tags (op_tags_reserved, ops.h);
 * a tuning job's children carry their tuning job's, which attrib_job keeps.
 *
 * The mapping (documented in README's Console section): a user profile tagged
 *   trainyard:iam-user = <IAM user name>      (case-insensitive; the console's "IAM user it
 *                                              belongs to" field sets it)
 * belongs to that IAM user; with several, the first one in creation order wins. A profile
 * being deleted does not count.
 * Owns: the lookup, the two tags and the ownership test the profiler app applies. Does not own
 * tags' storage (store.c) nor the job. Thread-safety: reentrant.
 */
#ifndef TY_CP_OPS_ATTRIB_H
#define TY_CP_OPS_ATTRIB_H

#include <jansson.h>

#include "store.h"
#include "ty_err.h"

#define ATTRIB_TAG   "trainyard:iam-user"
#define ATTRIB_OWNER "sagemaker:user-profile-arn" /* the tag naming a job's profile */

/* 1 when the tags of job_arn name profile_arn (case-insensitive) as the job's owner; 0 when
   not, or when they cannot be read (fail closed). */
int attrib_owns(struct store *s, const char *job_arn, const char *profile_arn);

/*
 * Tags job_arn with the user profile and domain of principal_arn (an IAM user ARN; other
 * principals: nothing) unless tags (borrowed, the request's, may be NULL) already name a
 * profile. 0 (also when nothing was added), or a store error (the caller logs it: the job
 * exists already).
 */
int attrib_job(struct store *s, const char *principal_arn, const char *region, const char *account,
               const char *job_arn, json_t *tags, struct ty_err *err);

#endif
