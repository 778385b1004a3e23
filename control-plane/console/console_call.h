/*
 * console_call.h - every console action is an API operation performed as the signed-in
 * principal: the SageMaker and CloudWatch Logs operations through route.c's handler table
 * with the model's validation and authz_request, the IAM actions through op_iamapi_invoke.
 * The same validation, the same authorisation, the same messages as a signed request: a user
 * without rights gets AWS's AccessDenied text, which the page shows.
 *
 * Owns: the console's op context (region, account, principal) and turning the console's form
 * fields (p.<Member>, p.<A>.<B> for nested members, n.<Member> for integers, l.<Member> for a
 * one-string list, t.<Key> for a tag {Key, Value} of Tags) into an operation's input. Does not own
 * any page. Thread-safety: reentrant; uses the caller's per-thread store.
 */
#ifndef TY_CP_CONSOLE_CALL_H
#define TY_CP_CONSOLE_CALL_H

#include <jansson.h>

#include "console_auth.h"
#include "front_ctx.h"
#include "http.h"
#include "store.h"
#include "ty_buf.h"
#include "ty_err.h"

struct console_ctx {
    const struct front_ctx *rc;      /* borrowed */
    struct store *s;                 /* borrowed: this thread's connection */
    struct http_request *req;        /* borrowed */
    const struct console_sess *sess; /* borrowed; NULL before sign-in */
    const char *owned_job;           /* a Studio session's page of a job its profile owns
                                        (attrib_owns checked): console_call reads
                                        that job and its logs without asking the role */
};

/* The region the console's calls are scoped to (--region; "us-east-1" without one). */
const char *console_call_region(const struct console_ctx *c);

/*
 * Performs service/op ("sagemaker", "logs") with in (borrowed object) as c's principal. OUT:
 * *out (new, caller decrefs) on success. 0, or -TY_E* with err as route.c would answer
 * (-TY_EUNKNOWNOP for an operation not in the table, the model's ValidationException,
 * -TY_EDENIED with "User: <arn> is not authorized to perform: ...").
 */
int console_call(const struct console_ctx *c, const char *service, const char *op, json_t *in,
                 json_t **out, struct ty_err *err);

/*
 * Performs IAM action in["Action"] with in's string parameters as c's principal. OUT: xml the
 * result's members (IAM's XML). 0 or -TY_E* (op_iamapi_error_code names IAM's error code).
 */
int console_call_iam(const struct console_ctx *c, json_t *in, struct ty_buf *xml,
                     struct ty_err *err);

/*
 * The operation input of a console form (url-encoded body): every p.<path> field becomes a
 * string at <path> (dots nest objects), n.<path> an integer, l.<path> an array of one string,
 * t.<key> a tag of Tags;
 * empty values are left out. new: object, or NULL with -TY_EINVAL (bad field, too many).
 */
json_t *console_call_input(const char *body, size_t len, struct ty_err *err);

#endif
