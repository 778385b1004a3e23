/*
 * jobpolicy.h - the session policy a job's container credentials carry when its role is the
 * default execution role: the role's actions, limited to what the job owns.
 *
 * Owns: which roles are limited (the default role, arn:aws:iam::<acct>:role/trainyard: its
 * policy names every bucket, so without this any job could read another tenant's data; a role
 * an admin wrote keeps exactly its own policy, as on AWS) and the policy's text: s3:GetObject
 * on the job's channels (each S3Uri as a prefix), its sagemaker_submit_directory object and its
 * own outputs; s3:PutObject, AbortMultipartUpload and ListMultipartUploadParts under
 * <S3OutputPath>/<job>/, the CheckpointConfig prefix and <profiler S3OutputPath>/<job>/;
 * s3:ListBucket on those buckets only with s3:prefix under those prefixes; s3:GetBucketLocation
 * on them; CloudWatch Logs on the job's own streams (/aws/sagemaker/TrainingJobs, streams
 * named <job>/...); cloudwatch:PutMetricData. Does not own its enforcement (authz.c reads it
 * through session.h). Thread-safety: pure.
 */
#ifndef TY_CP_AGENT_JOBPOLICY_H
#define TY_CP_AGENT_JOBPOLICY_H

#include "spec.h"
#include "ty_err.h"

/* 1 when role_arn is the default execution role (jobs run with it get jobpolicy_build's
   policy), 0 otherwise. */
int jobpolicy_scoped(const char *role_arn);

/*
 * The session policy of sp's credentials (a policy document, Version 2012-10-17; '*', '?' and
 * '$' of S3 keys written as ${*}, ${?}, ${$} so that they match only themselves). OUT: *out
 * (new, the caller frees). 0, or -TY_ENOMEM.
 */
int jobpolicy_build(const struct spec *sp, char **out, struct ty_err *err);

#endif
