/*
 * iamapi.h - the IAM query API on trainyard's one endpoint.
 *
 * Owns: the query protocol of IAM (form body or query string: Action=CreateUser&
 * Version=2010-05-08&UserName=..., Tags.member.N.Key, TagKeys.member.N), its parameter
 * validation with IAM's wording, its XML responses in the namespace
 * https://iam.amazonaws.com/doc/2010-05-08/ and its XML errors
 *   <ErrorResponse><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>...</Message>
 *   </Error><RequestId>...</RequestId></ErrorResponse>
 * with IAM's HTTP statuses: 404 NoSuchEntity; 409 EntityAlreadyExists, LimitExceeded,
 * DeleteConflict; 400 MalformedPolicyDocument, ValidationError, InvalidAction; 403 AccessDenied.
 * 400 PasswordPolicyViolation (a password against the account policy), InvalidUserType.
 * Actions: CreateLoginProfile, UpdateLoginProfile, GetLoginProfile, DeleteLoginProfile,
 * ChangePassword (the caller's own; also allowed by AllowUsersToChangePassword or a pending
 * PasswordResetRequired), GetAccountPasswordPolicy, UpdateAccountPasswordPolicy,
 * DeleteAccountPasswordPolicy (console passwords: password.h), CreateUser, GetUser, ListUsers,
 * DeleteUser, TagUser, UntagUser, ListUserTags, CreateAccessKey, ListAccessKeys, DeleteAccessKey,
 * PutUserPolicy, GetUserPolicy, ListUserPolicies, DeleteUserPolicy, the roles' (CreateRole ...
 * DeleteRolePolicy, TagRole, UntagRole, ListRoleTags). (STS GetCallerIdentity is
 * ops/sts.c's.) Every IAM action is authorised through authz_request (authz.h) after
 * validation. Does not own: authentication (route.c calls auth_request before calling here),
 * storage (store_iam.c), policy grammar (iam.h). Thread-safety: reentrant; uses the caller's
 * per-thread store.
 */
#ifndef TY_CP_OPS_IAMAPI_H
#define TY_CP_OPS_IAMAPI_H

#include <jansson.h>
#include <stddef.h>

#include "auth.h"
#include "http.h"
#include "sigv4.h"
#include "store.h"
#include "ty_buf.h"
#include "ty_err.h"

/* One IAM call, authenticated by route.c (auth_request). Every member is borrowed for the
   duration of the call. */
struct op_iamapi_call {
    struct http_request *req;
    struct store *store;            /* this thread's connection */
    const char *account_id;         /* account in ARNs */
    const char *region;             /* the server's region (aws:RequestedRegion) */
    const struct sigv4_auth *auth;  /* the request's parsed signature */
    const struct auth_principal *p; /* the verified caller; NULL when verification failed */
    const struct ty_err *auth_err;  /* why it failed, when p is NULL */
};

/* 1 when a SigV4 scope service is one this module serves ("iam"). */
int op_iamapi_is_service(const char *service);

/*
 * Serves one IAM query-protocol request: when c->p is NULL answers the verification error
 * (InvalidClientTokenId for an unknown key or a wrong session token, SignatureDoesNotMatch,
 * ...), else runs the action; fills resp (XML body, status, the x-amzn-RequestId header).
 * Never fails: every error becomes IAM's XML error.
 */
void op_iamapi_route(const struct op_iamapi_call *c, struct http_response *resp);

/*
 * Decodes an application/x-www-form-urlencoded text of len bytes into a new JSON object
 * (caller decrefs): plain parameters as strings, Tags.member.N.Key/Value as "Tags" (array of
 * {"Key","Value"} in N order), TagKeys.member.N as "TagKeys" (array of strings). Parameters of
 * the same name: the last wins. NULL with -TY_EINVAL (err names the parameter) when a
 * parameter is malformed or there are more than 512, a list index is not 1..1000.
 * Exposed for the unit tests.
 */
json_t *op_iamapi_form(json_t *into, const char *text, size_t len, struct ty_err *err);

/*
 * Runs one IAM action on behalf of principal_arn without an HTTP request (the console's
 * path): in (borrowed) holds "Action" and the action's parameters as the form decoder makes
 * them (strings; "Tags", "TagKeys" arrays); the same validation, authorisation (authz_request)
 * and handler as a signed request. OUT: out receives the <XxxResult> members (XML, escaped).
 * 0, or the handler's -TY_E* with err (-TY_EDENIED: AWS's AccessDenied message).
 */
int op_iamapi_invoke(struct store *s, const char *account_id, const char *region,
                     const char *principal_arn, json_t *in, struct ty_buf *out, struct ty_err *err);

/* IAM's error code for a ty_err code ("NoSuchEntity", "AccessDenied", ...). borrowed static. */
const char *op_iamapi_error_code(int code);

#endif
