/*
 * authz.h - authorisation of every call: which IAM action, resource ARN and condition keys
 * each operation has (one table), the caller's identity policies (loaded from Redis, parsed
 * once per thread and user version), and the decision (iam.h's evaluator).
 *
 * Owns: the operation -> (action, resource, condition keys) table for every operation that
 * ops/optable.c serves (SageMaker, CloudWatch Logs) and the IAM query API (ops/iamapi.c); the
 * request context's global keys (aws:username, aws:userid, aws:PrincipalArn,
 * aws:PrincipalAccount, aws:PrincipalType, aws:PrincipalTag/<k>, aws:CurrentTime,
 * aws:EpochTime, aws:SecureTransport = false, aws:RequestedRegion, and aws:SourceIp and
 * aws:UserAgent from authz_set_request); the per-thread policy cache.
 * Does not own: policy grammar and evaluation (iam.c), where policies are stored
 * (store_iam.c), any wire form (the protocol layers turn -TY_EDENIED into their error).
 *
 * Which policies apply: a principal arn:aws:iam::<account>:user[/path]/<name> has the inline
 * policies of IAM user <name> whose stored Arn is that principal; a principal
 * arn:aws:iam::<account>:role[/path]/<name> (the agent acting for a job) or
 * arn:aws:sts::<account>:assumed-role/<name>/<session> (temporary credentials) has those of
 * IAM role <name> of that account (aws:PrincipalArn = the role's ARN, aws:PrincipalType =
 * AssumedRole, aws:userid = <RoleId>:<session>, no aws:username); any other principal (or one
 * that no longer exists) has none and is denied (implicit deny).
 *
 * Cost: a cached user costs no Redis round trip while the generation (authgen.h) is unchanged,
 * one (HMGET of id and version) after it moved; a user seen for the first time or whose
 * policies or tags changed costs one pipeline. Resource tags
 * (sagemaker:ResourceTag/<k>, iam:ResourceTag/<k>, aws:ResourceTag/<k>) are read only when one
 * of the caller's policies mentions ResourceTag.
 *
 * Choices (documented): CreateDomain is authorised on domain/"*" (its id does not exist yet);
 * List operations on "*"; the order is AWS's: validation first, then authorisation.
 * Thread-safety: every function may be called from any thread; the cache is per thread and
 * freed when the thread exits.
 */
#ifndef TY_CP_AUTHZ_H
#define TY_CP_AUTHZ_H

#include <jansson.h>
#include <stddef.h>

#include "iam.h"
#include "store.h"
#include "ty_err.h"

/* How an operation's resource ARN is built from its (validated) input. */
enum authz_res {
    AUTHZ_RES_STAR,         /* "*" (List operations, actions without resource types) */
    AUTHZ_RES_TRAINING_JOB, /* training-job/<TrainingJobName lower-cased> */
    AUTHZ_RES_DOMAIN,       /* domain/<DomainId> */
    AUTHZ_RES_DOMAIN_NEW,   /* domain/"*" (CreateDomain) */
    AUTHZ_RES_PROFILE,      /* user-profile/<DomainId>/<UserProfileName> (lower-cased) */
    AUTHZ_RES_APP,    /* app/<DomainId>/<UserProfileName|SpaceName>/<AppType>/<AppName> (lower) */
    AUTHZ_RES_TAGGED, /* the request's ResourceArn (AddTags, ListTags, DeleteTags) */
    AUTHZ_RES_LOG_GROUP,  /* arn:aws:logs:<region>:<account>:log-group:<logGroupName> */
    AUTHZ_RES_LOG_STREAM, /* ...:log-group:<logGroupName>:log-stream:<logStreamName> */
    AUTHZ_RES_IAM_USER,   /* arn:aws:iam::<account>:user<path><UserName>; caller when absent */
    AUTHZ_RES_IAM_ROLE,   /* arn:aws:iam::<account>:role<path><RoleName> */
    AUTHZ_RES_TUNING_JOB, /* hyper-parameter-tuning-job/<HyperParameterTuningJobName> (lower) */
};

/* Condition keys an operation adds from its input (bits of authz_op.cond). */
#define AUTHZ_C_REQTAGS   0x01u /* aws:RequestTag/<k>, aws:TagKeys from Tags */
#define AUTHZ_C_TAGKEYS   0x02u /* aws:TagKeys from TagKeys (DeleteTags, UntagUser) */
#define AUTHZ_C_RESTAGS   0x04u /* <service>:ResourceTag/<k>, aws:ResourceTag/<k> */
#define AUTHZ_C_DOMAIN    0x08u /* sagemaker:DomainId from DomainId */
#define AUTHZ_C_PROFILE   0x10u /* sagemaker:UserProfileName from UserProfileName */
#define AUTHZ_C_INSTTYPES 0x20u /* sagemaker:InstanceTypes from ResourceConfig/ResourceSpec */
/* sagemaker:MaxRuntimeInSeconds, NetworkIsolation, InterContainerTrafficEncryption,
   VolumeKmsKey, OutputKmsKey, VpcSubnets, VpcSecurityGroupIds from a training job's settings
   (the request's, or its tuning job's training definitions) */
#define AUTHZ_C_TRAINING 0x40u
/* sagemaker:InstanceTypes, ImageArns, ImageVersionArns, VpcSecurityGroupIds,
   DomainSharingOutputKmsKey from Studio settings; CreateDomain's AppNetworkAccess, VpcSubnets,
   HomeEfsFileSystemKmsKey */
#define AUTHZ_C_STUDIO 0x80u

struct authz_op {
    const char *service; /* "sagemaker", "logs", "iam" (route.c's names) */
    const char *op;      /* "CreateTrainingJob" */
    const char *action;  /* "sagemaker:CreateTrainingJob" */
    enum authz_res res;
    unsigned cond; /* AUTHZ_C_* */
};

/* The table's row of service/op, or NULL. borrowed: static. */
const struct authz_op *authz_find(const char *service, const char *op);

/* The whole table. OUT: *rows (borrowed, static). Returns the number of rows. */
size_t authz_table(const struct authz_op **rows);

/*
 * Builds row's resource ARN from in (borrowed object) into OUT: buf (size n). caller is the
 * caller's principal ARN (IAM operations without UserName act on the caller). 0, or
 * -TY_EINVAL when the ARN does not fit.
 */
int authz_resource(const struct authz_op *row, json_t *in, const char *region, const char *account,
                   const char *caller, char *buf, size_t n, struct ty_err *err);

/*
 * Authorises one call of a route.c / IAM API operation: finds its row, builds the resource
 * ARN and condition keys from in (borrowed, the validated input), adds the principal's keys,
 * and evaluates the principal's policies. Returns 0 (allowed), -TY_EDENIED with AWS's
 * message (iam_deny_error), -TY_EINTERNAL when the operation has no row (fail closed), or a
 * store error (-TY_EREDIS).
 */
int authz_request(struct store *s, const char *service, const char *op, json_t *in,
                  const char *principal_arn, const char *region, const char *account,
                  struct ty_err *err);

/*
 * 1 when some request carries condition key (compared case-insensitively, as IAM compares
 * keys): a global key authz sets, a tag key (aws:RequestTag/..., aws:ResourceTag/...,
 * aws:PrincipalTag/..., sagemaker:ResourceTag/..., iam:ResourceTag/...), or a service key of
 * an operation served here (docs/iam.md has the table). 0 for any other key: a condition on it
 * could never match, so a policy naming one is refused when it is written.
 */
int authz_key_provided(const char *key);

/*
 * The calling request's own part of the context, which only the front end knows: aws:SourceIp
 * (client: the peer's address, an IPv4-mapped one as IPv4; a job's relayed calls come from the
 * job's own address) and aws:UserAgent (user_agent; either may be NULL). Per thread: set before
 * a request is authorised, cleared (NULL, NULL) after it; both are borrowed until then.
 * Without it (the agent's own checks) neither key is in the context.
 */
void authz_set_request(const char *client, const char *user_agent);

/*
 * The hook for protocol layers with their own request parsing (S3): authorises action on
 * resource for principal_arn with the caller's condition keys ctx[0..n) (borrowed; e.g.
 * s3:prefix, aws:RequestedRegion) plus the principal's global keys, which win over keys of
 * the same name in ctx. Resource tags are the caller's to put in ctx. Returns 0 (allowed),
 * -TY_EDENIED (err holds "User: <arn> is not authorized to perform: <action> on resource:
 * <resource> because ..."), or a store error. S3 maps -TY_EDENIED to its AccessDenied 403.
 */
int authz_check(struct store *s, const char *principal_arn, const char *action,
                const char *resource, const struct iam_ctx_entry *ctx, size_t n,
                struct ty_err *err);

/*
 * iam:PassRole, as SageMaker checks it when an operation takes a role (CreateTrainingJob's
 * RoleArn, a domain's or profile's ExecutionRole), after the operation itself was allowed:
 * principal_arn must be allowed iam:PassRole on role_arn with iam:PassedToService =
 * sagemaker.amazonaws.com (else -TY_EDENIED, "User: <arn> is not authorized to perform:
 * iam:PassRole on resource: <role> because ..."), and role_arn must be a role of account whose
 * trust policy allows sagemaker.amazonaws.com sts:AssumeRole (else -TY_EINVAL, field "RoleArn":
 * "Could not assume role <arn>. Please ensure that the role exists and allows principal
 * 'sagemaker.amazonaws.com' to assume the role."). 0 or a store error otherwise.
 */
int authz_pass_role(struct store *s, const char *principal_arn, const char *role_arn,
                    const char *account, struct ty_err *err);

#endif
