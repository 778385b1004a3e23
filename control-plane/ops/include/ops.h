/*
 * ops.h - the signature shared by every operation handler (ops/ files) and their context.
 *
 * Owns: struct op_ctx and the handler declarations. A handler gets a validated JSON input
 * (borrowed), writes its JSON output (new, caller decrefs) on success, and returns 0 or
 * -TY_E* with err filled in; it never chooses a wire form (route.c does).
 */
#ifndef TY_CP_OPS_OPS_H
#define TY_CP_OPS_OPS_H

#include <jansson.h>

#include "store.h"
#include "store_jobmemo.h"
#include "ty_err.h"

struct s3c_config;

struct op_ctx {
    struct store *store; /* borrowed: this thread's connection */
    const char *region;  /* region of the request's SigV4 scope */
    const char *account_id;
    const char *principal_arn; /* the caller */
    double now;                /* epoch seconds, millisecond resolution */
    const char *host;          /* the request's Host header, NULL when absent (untrusted) */
    const char *s3_dir;        /* the embedded object store's directory, NULL when none */
    const struct s3c_config *s3_remote; /* the external store (--s3-endpoint), NULL when none */
    struct store_jobmemo *jobmemo;      /* the thread's memo of job answers, NULL when none */
    /* OUT: a handler may answer with ready JSON text (malloc'd; the caller frees it) instead of
     *out, only when answer_text is set (the caller can send text) */
    int answer_text;
    char *text;
    size_t text_len;
};

/* How every JSON answer is serialised (route.c, and answers built as text). */
#define OP_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

/* ops/doc.c: borrowed string member of in, or NULL. */
const char *op_str(json_t *in, const char *key);
/* ops/doc.c: copies src[key] into dst when present. */
void op_copy(json_t *dst, json_t *src, const char *key);
/* ops/doc.c: removes the bookkeeping members (names starting with '_'); returns doc. */
json_t *op_public(json_t *doc);

typedef int (*op_fn)(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);

/* ops/optable.c: one row of the operation table (static, never freed). */
struct op_entry {
    const char *service; /* "sagemaker" | "logs" */
    const char *name;    /* the operation, as in X-Amz-Target */
    op_fn fn;
};

/* The row of service/name, or NULL when trainyard does not serve it. */
const struct op_entry *op_lookup(const char *service, const char *name);
/* The i-th row (0-based), or NULL past the end: for tests and listings. */
const struct op_entry *op_entry_at(size_t i);

/* ops/training.c */
int op_training_create(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_training_describe(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_training_list(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_training_stop(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_training_update(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_training_delete(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);

/* ops/tuning.c (hyperparameter tuning jobs; tuning.c advances them) */
int op_tuning_create(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_tuning_describe(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_tuning_list(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_tuning_stop(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_tuning_list_training_jobs(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);

/* ops/tags.c */
int op_tags_add(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_tags_list(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_tags_delete(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
/*
 * Tag keys are the system's when they start with "aws:" or "sagemaker:" (any case): Studio's
 * owner tags (attrib.h) are set from the caller's identity, never by the caller. Refuses a
 * sagemaker request in (validated; borrowed) whose Tags (any operation) or TagKeys
 * (DeleteTags) name one, or whose Tags name a key twice (case-insensitively):
 * ValidationException (-TY_EINVAL). 0 otherwise, and for other services. Called after
 * validation, before authorisation, wherever requests enter.
 */
int op_tags_reserved(const char *service, const char *op, json_t *in, struct ty_err *err);
/* 1 when the array of {"Key","Value"} tags (borrowed) names one key twice, compared
   case-insensitively (OUT: *dup, borrowed from tags: the second); 0 otherwise. */
int op_tags_dup_key(json_t *tags, const char **dup);

/* ops/logs.c (CloudWatch Logs) */
int op_logs_describe_groups(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_logs_describe_streams(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_logs_get_events(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_logs_filter_events(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);

/* ops/studio.c (domains, user profiles, apps, presigned domain URLs) */
int op_studio_create_domain(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_describe_domain(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_list_domains(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_update_domain(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_delete_domain(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_create_user_profile(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_describe_user_profile(struct op_ctx *ctx, json_t *in, json_t **out,
                                    struct ty_err *err);
int op_studio_list_user_profiles(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_update_user_profile(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_delete_user_profile(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_create_app(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_describe_app(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_list_apps(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_delete_app(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err);
int op_studio_create_presigned_url(struct op_ctx *ctx, json_t *in, json_t **out,
                                   struct ty_err *err);

/* Builds the ARN of a SageMaker resource: arn:aws:sagemaker:<region>:<account>:<type>/<name>
   (the name lower-cased, as SageMaker does). OUT: buf. */
void op_arn(const struct op_ctx *ctx, const char *type, const char *name, char *buf, size_t n);

#endif
