/*
 * store_iam.h - IAM users and roles, their tags, inline policies and access keys in Redis.
 *
 * Owns: the keys (lname = the user name lower-cased: IAM names are unique case-insensitively)
 *   ty:iam:user:<lname>    hash: name id path arn created ver
 *   ty:iam:users           sorted set of lname, score 0 (lexical order for ListUsers)
 *   ty:iam:utags:<lname>   hash: tag key -> value
 *   ty:iam:upol:<lname>    hash: inline policy name -> document (the text as put)
 *   ty:iam:upolsz:<lname>  hash: inline policy name -> size as IAM counts it
 *   ty:iam:ukeys:<lname>   hash: access key id -> "<Status> <created epoch seconds>"
 *   ty:iam:role:<lname>    hash: name id path arn created ver trust desc maxsess (a role;
 *                          trust = AssumeRolePolicyDocument as put)
 *   ty:iam:roles           sorted set of role lname; ty:iam:rtags:, ty:iam:rpol:,
 *                          ty:iam:rpolsz:<lname> as the user ones
 *   ty:principal:<akid>    (store.c's) field `status`: "Inactive" after UpdateAccessKey, which
 *                          makes store_principal_get answer -TY_ENOTFOUND
 *   ty:iam:version         counter; each change that authorisation depends on (create, tags,
 *                          policies) stores its next value in the user's `ver`, so a cache of
 *                          a user's parsed policies is valid while `ver` (and `id`) are equal
 * and running control-plane/store/lua/iam.lua (every write: check and write in one atomic step).
 * The SigV4 side of an access key (ty:principal:<akid>) belongs to store.c: CreateAccessKey
 * writes it with store_principal_put; DeleteAccessKey removes it inside iam.lua.
 * Does not own: validation of names and documents (ops/iamapi.c, iam.h), any wire form.
 * Built into ty_store (store.cmake), so ty_s3 (ops/sts.c) and the tests can use it.
 * Thread-safety: as store.h (one struct store per thread); the script SHAs are process-wide.
 */
#ifndef TY_CP_STORE_IAM_H
#define TY_CP_STORE_IAM_H

#include <jansson.h>
#include <stddef.h>

#include "store.h"
#include "ty_err.h"

#define STORE_IAM_NAME_MAX  64  /* UserName */
#define STORE_IAM_PATH_MAX  512 /* Path */
#define STORE_IAM_ARN_MAX   640
#define STORE_IAM_ID_MAX    32
#define STORE_IAM_MAX_TAGS  50 /* tags per user */
#define STORE_IAM_MAX_KEYS  2  /* access keys per user */
#define STORE_IAM_MAX_USERS 5000
#define STORE_IAM_MAX_ROLES 1000
#define STORE_IAM_DESC_MAX  4000 /* Description: 1000 characters, UTF-8 */

/*
 * The default execution role that exists from the first start (store_iam_bootstrap_role):
 * arn:aws:iam::<account>:role/trainyard, trusted by SageMaker, with one inline policy.
 */
#define STORE_IAM_DEFAULT_ROLE             "trainyard"
#define STORE_IAM_DEFAULT_ROLE_POLICY_NAME "TrainyardExecution"
#define STORE_IAM_DEFAULT_ROLE_TRUST                                                               \
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{"             \
    "\"Service\":\"sagemaker.amazonaws.com\"},\"Action\":\"sts:AssumeRole\"}]}"
/* What a training job does with its role's credentials, and no more: read and write its data
   in S3 (the agent checks channels, checkpoints and outputs against these same actions:
   agent/access.h), write its own logs under /aws/sagemaker/ and put metrics. No sagemaker:*
   (no CreatePresignedDomainUrl, no other job), no iam:*, no bucket administration. The S3
   actions are on every bucket: the admin's role reaches every tenant's data, so users are
   given roles of their own (README), never iam:PassRole on this one. */
#define STORE_IAM_DEFAULT_ROLE_POLICY                                                              \
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":\"JobData\",\"Effect\":\"Allow\","        \
    "\"Action\":[\"s3:GetObject\",\"s3:PutObject\",\"s3:ListBucket\",\"s3:GetBucketLocation\","    \
    "\"s3:AbortMultipartUpload\",\"s3:ListMultipartUploadParts\","                                 \
    "\"s3:ListBucketMultipartUploads\"],\"Resource\":\"*\"},{\"Sid\":\"JobLogs\",\"Effect\":"      \
    "\"Allow\",\"Action\":[\"logs:CreateLogGroup\",\"logs:CreateLogStream\",\"logs:"               \
    "PutLogEvents\","                                                                              \
    "\"logs:DescribeLogStreams\"],\"Resource\":\"arn:aws:logs:*:*:log-group:/aws/sagemaker/*\"},"  \
    "{\"Sid\":\"JobMetrics\",\"Effect\":\"Allow\",\"Action\":\"cloudwatch:PutMetricData\","        \
    "\"Resource\":\"*\"}]}"
/* The inline policy every release before this one created (s3:*, logs:*, sagemaker:* on *):
   store_iam_bootstrap_role replaces it, byte for byte this text only, with the one above. */
#define STORE_IAM_DEFAULT_ROLE_POLICY_V1                                                           \
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":\"TrainyardExecution\",\"Effect\":"       \
    "\"Allow\",\"Action\":[\"s3:*\",\"logs:*\",\"sagemaker:*\"],\"Resource\":\"*\"}]}"

struct store_iam_user {
    char name[STORE_IAM_NAME_MAX + 1]; /* as created (case kept) */
    char id[STORE_IAM_ID_MAX];         /* AIDA... */
    char path[STORE_IAM_PATH_MAX + 1]; /* "/" or "/a/b/" */
    char arn[STORE_IAM_ARN_MAX];       /* arn:aws:iam::<account>:user<path><name> */
    double created;                    /* epoch seconds */
    long long ver;                     /* policy-cache version (see ty:iam:version) */
};

/*
 * Creates user u with tags (borrowed array of {"Key","Value"}, may be NULL). 0, -TY_EINUSE
 * (a user with that name, any case, exists), -TY_ELIMIT (more than STORE_IAM_MAX_TAGS tags),
 * -TY_EINVAL (bad name), -TY_EREDIS.
 */
int store_iam_user_create(struct store *s, const struct store_iam_user *u, json_t *tags,
                          struct ty_err *err);

/*
 * Reads user name (any case). OUT: *u; *tags (may be NULL: not read) a new array of
 * {"Key","Value"} sorted by key. 0, -TY_ENOTFOUND or -TY_EREDIS; out-params written only on 0.
 */
int store_iam_user_get(struct store *s, const char *name, struct store_iam_user *u, json_t **tags,
                       struct ty_err *err);

/*
 * Every user, ordered by lower-cased name, as a new array of objects {"UserName", "UserId",
 * "Path", "Arn", "CreateDate" (epoch seconds)} (at most STORE_IAM_MAX_USERS), or NULL with err.
 */
json_t *store_iam_user_list(struct store *s, struct ty_err *err);

/* Deletes user name. 0, -TY_ENOTFOUND, -TY_ECONFLICT (msg "keys" or "policies": it still has
   access keys or inline policies). */
int store_iam_user_delete(struct store *s, const char *name, struct ty_err *err);

/* Adds or overwrites tags (borrowed array of {"Key","Value"}). 0, -TY_ENOTFOUND, -TY_ELIMIT. */
int store_iam_user_tag(struct store *s, const char *name, json_t *tags, struct ty_err *err);
/* Removes tag keys (borrowed array of strings). 0 or -TY_ENOTFOUND. */
int store_iam_user_untag(struct store *s, const char *name, json_t *keys, struct ty_err *err);

/*
 * Puts inline policy polname (doc: len bytes, already validated) whose size is size, when
 * the sizes of the user's other inline policies plus size stay within limit. 0,
 * -TY_ENOTFOUND (no such user), -TY_ELIMIT (msg "size").
 */
int store_iam_policy_put(struct store *s, const char *name, const char *polname, const char *doc,
                         size_t len, size_t size, size_t limit, struct ty_err *err);
/* new: the document (caller frees), or NULL with -TY_ENOTFOUND (msg "user" or "policy"). */
char *store_iam_policy_get(struct store *s, const char *name, const char *polname,
                           struct ty_err *err);
/* new: sorted array of the user's inline policy names, or NULL with -TY_ENOTFOUND. */
json_t *store_iam_policy_list(struct store *s, const char *name, struct ty_err *err);
/* 0, or -TY_ENOTFOUND (msg "user" or "policy"). */
int store_iam_policy_delete(struct store *s, const char *name, const char *polname,
                            struct ty_err *err);

/*
 * Records access key akid (created: epoch seconds) for user name when it has fewer than max
 * keys (0 = no limit). 0, -TY_ENOTFOUND, -TY_ELIMIT. The caller then stores the principal.
 */
int store_iam_key_create(struct store *s, const char *name, const char *akid, double created,
                         int max, struct ty_err *err);
/* new: array of {"AccessKeyId", "Status", "CreateDate" (epoch seconds)} sorted by id, or NULL
   with -TY_ENOTFOUND. */
json_t *store_iam_key_list(struct store *s, const char *name, struct ty_err *err);
/* Removes the key from the user and its SigV4 principal. 0, -TY_ENOTFOUND (msg "user" or
   "key"). */
int store_iam_key_delete(struct store *s, const char *name, const char *akid, struct ty_err *err);

/*
 * Sets access key akid of user name Active or Inactive (status), in the user's key list and
 * in its SigV4 principal. 0, -TY_ENOTFOUND (msg "user" or "key"), -TY_EINVAL.
 */
int store_iam_key_update(struct store *s, const char *name, const char *akid, const char *status,
                         struct ty_err *err);

/* An IAM role (the trust policy travels separately: it may be long). */
struct store_iam_role {
    char name[STORE_IAM_NAME_MAX + 1]; /* as created */
    char id[STORE_IAM_ID_MAX];         /* AROA... */
    char path[STORE_IAM_PATH_MAX + 1];
    char arn[STORE_IAM_ARN_MAX]; /* arn:aws:iam::<account>:role<path><name> */
    double created;
    long long ver;
    char desc[STORE_IAM_DESC_MAX + 1]; /* "" when none */
    int max_session;                   /* MaxSessionDuration, seconds */
};

/*
 * Creates role r with the trust policy trust (borrowed, validated by the caller) and tags
 * (borrowed, may be NULL). 0, -TY_EINUSE, -TY_ELIMIT (tags), -TY_EINVAL.
 */
int store_iam_role_create(struct store *s, const struct store_iam_role *r, const char *trust,
                          json_t *tags, struct ty_err *err);
/* As store_iam_user_tag and store_iam_user_untag, for role name. */
int store_iam_role_tag(struct store *s, const char *name, json_t *tags, struct ty_err *err);
int store_iam_role_untag(struct store *s, const char *name, json_t *keys, struct ty_err *err);
/*
 * Reads role name (any case). OUT: *r; *trust (may be NULL: not read) new string; *tags (may be
 * NULL) new array of {"Key","Value"}. 0, -TY_ENOTFOUND (msg "role"), -TY_EREDIS.
 */
int store_iam_role_get(struct store *s, const char *name, struct store_iam_role *r, char **trust,
                       json_t **tags, struct ty_err *err);
/* new: every role (at most STORE_IAM_MAX_ROLES) ordered by lower-cased name, as objects
   {"RoleName","RoleId","Path","Arn","CreateDate","Description","MaxSessionDuration",
   "AssumeRolePolicyDocument"}, or NULL with err. */
json_t *store_iam_role_list(struct store *s, struct ty_err *err);
/* 0, -TY_ENOTFOUND, -TY_ECONFLICT (msg "policies": it still has inline policies). */
int store_iam_role_delete(struct store *s, const char *name, struct ty_err *err);
/* The role forms of the inline-policy calls above (msg "role" instead of "user"). */
int store_iam_role_policy_put(struct store *s, const char *name, const char *polname,
                              const char *doc, size_t len, size_t size, size_t limit,
                              struct ty_err *err);
char *store_iam_role_policy_get(struct store *s, const char *name, const char *polname,
                                struct ty_err *err);
json_t *store_iam_role_policy_list(struct store *s, const char *name, struct ty_err *err);
int store_iam_role_policy_delete(struct store *s, const char *name, const char *polname,
                                 struct ty_err *err);
/* As store_iam_head/store_iam_load for role name (u holds its name, id, path, arn, ver). */
int store_iam_role_head(struct store *s, const char *name, struct store_iam_user *u,
                        struct ty_err *err);
int store_iam_role_load(struct store *s, const char *name, struct store_iam_user *u,
                        json_t **policies, json_t **tags, struct ty_err *err);

/*
 * Creates the default execution role STORE_IAM_DEFAULT_ROLE of account (trust
 * STORE_IAM_DEFAULT_ROLE_TRUST, inline policy STORE_IAM_DEFAULT_ROLE_POLICY) when no role of
 * that name exists. An existing one is left as it is, except that an inline policy
 * STORE_IAM_DEFAULT_ROLE_POLICY_NAME that is byte for byte STORE_IAM_DEFAULT_ROLE_POLICY_V1
 * (the old broad default, never edited) is replaced by STORE_IAM_DEFAULT_ROLE_POLICY; one the
 * admin changed is kept. Idempotent. 0 or error.
 */
int store_iam_bootstrap_role(struct store *s, const char *account, double now, struct ty_err *err);

/*
 * The authorisation hot path. store_iam_head reads user name's id, arn and ver in one round
 * trip; store_iam_load reads them with the inline policies (OUT: *policies, new object name ->
 * document text) and tags (OUT: *tags, new object key -> value) in one pipeline. Both return
 * 0 or -TY_ENOTFOUND (no such user) or -TY_EREDIS.
 */
int store_iam_head(struct store *s, const char *name, struct store_iam_user *u, struct ty_err *err);
int store_iam_load(struct store *s, const char *name, struct store_iam_user *u, json_t **policies,
                   json_t **tags, struct ty_err *err);

/*
 * The unique id (AIDA...) of the IAM user that principal_arn (arn:aws:iam::<account>:user
 * [/path]/<name>) names, for STS GetCallerIdentity's UserId. OUT: id (size n, NUL-terminated),
 * written only on success. 0, or -TY_ENOTFOUND when principal_arn is not a current IAM user
 * (callers then answer with the access key id), or -TY_EREDIS.
 */
int store_iam_userid(struct store *s, const char *principal_arn, char *id, size_t n,
                     struct ty_err *err);

/*
 * Makes the admin principal an IAM user: creates user "admin" (arn
 * arn:aws:iam::<account>:user/admin) with the all-allowing inline policy
 * "AdministratorAccess" when it does not exist, and records akid as one of its keys.
 * Idempotent. 0 or error.
 */
int store_iam_bootstrap_admin(struct store *s, const char *account, const char *akid, double now,
                              struct ty_err *err);

#endif
