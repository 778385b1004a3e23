/*
 * access.h - what a training job's role may do in S3: every object the platform reads or
 * writes for a job (channels, manifests, sourcedir.tar.gz, checkpoints, model and output data,
 * profiler output) is authorised against the inline policies of the job's RoleArn (authz.h:
 * the role's policies, as an assumed role would have them), before any byte moves.
 *
 * Owns: the S3 resource ARNs and condition keys of those checks, and the FailureReason wording
 * of a refusal. Does not own the policies (store_iam.c) or their evaluation (authz.c, iam.c).
 * Thread-safety: as authz.h (the store connection is the caller's).
 */
#ifndef TY_CP_AGENT_ACCESS_H
#define TY_CP_AGENT_ACCESS_H

#include "spec.h"
#include "store.h"
#include "ty_err.h"

/* The S3 check itself is authz_s3_check (authz_s3.h). */

/*
 * Before a job starts: whether its role may write what the job will write - its model and
 * output data under <S3OutputPath>/<job>/output/ (s3:PutObject), its checkpoints
 * (s3:ListBucket on the CheckpointConfig prefix, s3:PutObject under it) and its profiler output
 * (s3:PutObject under <ProfilerConfig.S3OutputPath>/<job>/profiler-output/). 0, or as
 * authz_s3_check (the first refusal).
 */
int access_job_outputs(struct store *s, const struct spec *sp, struct ty_err *err);

#endif
