/*
 * authz_s3.h - whether an IAM role of this platform may reach an S3 object or prefix: the
 * check behind every byte a training job moves (channels, manifests, checkpoints, model and
 * output data, profiler output) and behind CreateTrainingJob's early channel check.
 *
 * Owns: the S3 resource ARNs and the s3:prefix condition key of those checks, and the
 * FailureReason wording of a refusal. Does not own the policies (store_iam.c) or their
 * evaluation (authz.c, iam.c). Thread-safety: as authz.h (the store connection is the caller's).
 */
#ifndef TY_CP_AUTHZ_S3_H
#define TY_CP_AUTHZ_S3_H

#include "store.h"
#include "ty_err.h"

/*
 * Whether role_arn may perform action ("s3:GetObject", "s3:PutObject", "s3:ListBucket") on
 * bucket: for s3:ListBucket the resource is arn:aws:s3:::<bucket> with the condition key
 * s3:prefix = key_or_prefix; otherwise arn:aws:s3:::<bucket>/<key_or_prefix>. Returns 0, or
 * -TY_EDENIED with err->msg the job's FailureReason:
 *   "ClientError: Access Denied (403) for s3://<bucket>/<key>: the role <role_arn> is not
 *    authorized to perform <action> on arn:aws:s3:::<bucket>[/<key>]"
 * (an empty role or one that is not an IAM role of this platform is denied), or a store error
 * (-TY_EREDIS: the caller treats it as an internal error, not a denial).
 */
int authz_s3_check(struct store *s, const char *role_arn, const char *action, const char *bucket,
                   const char *key_or_prefix, struct ty_err *err);

#endif
