/*
 * iamapi_int.h - what the files of the IAM query API share (iamapi.c and its iamapi_*.c):
 * one verified call, a handler's context and signature, the XML and parameter helpers, and
 * the handlers the action table (iamapi.c) names. Not part of the API's contract
 * (iamapi.h).
 *
 * Invariant: a handler writes only the <Result> members into x->out and reports failures
 * through err with IAM's code and wording; the envelope and the error document are
 * iamapi.c's.
 */
#ifndef TY_CP_OPS_IAMAPI_INT_H
#define TY_CP_OPS_IAMAPI_INT_H

#include "iamapi.h"
#include "ty_buf.h"

/* One verified call: who calls, where. */
struct iamapi__call {
    struct http_request *req;
    struct store *store;
    const char *account_id;
    const char *region;
    const char *principal_arn;
};

/* A handler's context and signature (the action table in iamapi.c names them). */
struct iamapi__owner;

struct iamapi__ctx {
    const struct iamapi__call *c;
    json_t *in;
    struct ty_buf *out;                /* the <Result> members */
    const struct iamapi__owner *owner; /* the action's owner of inline policies, or NULL */
};

typedef int (*iamapi__fn)(struct iamapi__ctx *x, struct ty_err *err);
/* Writes one listed entry j (its name and Path already read) as a <member> (list_page). */
typedef void (*iamapi__emit)(struct ty_buf *out, json_t *j, const char *name, const char *path);

/* A user or a role as the owner of inline policies (iamapi_inline.c). */
struct iamapi__owner {
    const char *param; /* its request and result member: "UserName", "RoleName" */
    const char *noun;  /* in "The <noun> policy with name ... cannot be found." */
    /* Its name as stored into out (size n): 0, -TY_ENOTFOUND or -TY_EINVAL when none. */
    int (*get)(struct store *s, const char *name, char *out, size_t n, struct ty_err *err);
    int (*no_owner)(struct ty_err *err, const char *name); /* its NoSuchEntity */
    size_t limit; /* the aggregate size of its inline policies (IAM's characters) */
    int (*policy_put)(struct store *s, const char *name, const char *polname, const char *doc,
                      size_t len, size_t size, size_t limit, struct ty_err *err);
    char *(*policy_get)(struct store *s, const char *name, const char *polname, struct ty_err *err);
    json_t *(*policy_list)(struct store *s, const char *name, struct ty_err *err);
    int (*policy_delete)(struct store *s, const char *name, const char *polname,
                         struct ty_err *err);
};

/* iamapi.c */
void iamapi__xml_el(struct ty_buf *b, const char *tag, const char *value);
void iamapi__xml_date(struct ty_buf *b, const char *tag, double t);
void iamapi__urlencode(struct ty_buf *b, const char *s, size_t n);
int iamapi__invalid(struct ty_err *err, const char *member, const char *value, const char *what);
const char *iamapi__s(json_t *in, const char *k);
const char *iamapi__target(struct iamapi__ctx *x);
int iamapi__no_user(struct ty_err *err, const char *name);

/* The store's tag or untag of one user or role (store_iam_user_tag, store_iam_role_untag...). */
typedef int (*iamapi__tag_fn)(struct store *s, const char *name, json_t *arg, struct ty_err *err);
/*
 * TagUser/TagRole (member "Tags") and UntagUser/UntagRole ("TagKeys"): applies fn with the
 * request's member to the entity named by its param_name; a missing one answers no_entity, too
 * many tags IAM's LimitExceeded.
 */
int iamapi__tags_apply(struct iamapi__ctx *x, const char *param_name, const char *member,
                       iamapi__tag_fn fn, int (*no_entity)(struct ty_err *, const char *),
                       struct ty_err *err);
long iamapi__max_items(json_t *in);
void iamapi__page_end(struct ty_buf *b, int truncated, const char *marker);
int iamapi__list_page(struct iamapi__ctx *x, json_t *list, const char *wrap, const char *name_key,
                      const char *need, iamapi__emit emit);

/* iamapi_boundary.c: permissions boundaries, refused (no managed policy exists here) */
/* 0 when x's request names no PermissionsBoundary, else the refusal (NoSuchEntity). */
int iamapi__boundary_refuse(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__put_user_boundary(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__put_role_boundary(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__delete_user_boundary(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__delete_role_boundary(struct iamapi__ctx *x, struct ty_err *err);

/* iamapi_users.c */
void iamapi__tags_xml(struct ty_buf *b, json_t *tags);
int iamapi__create_user(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__get_user(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__list_users(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__delete_user(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__tag_user(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__untag_user(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__list_user_tags(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__create_access_key(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__list_access_keys(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__delete_access_key(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__update_access_key(struct iamapi__ctx *x, struct ty_err *err);

/* iamapi_roles.c */
int iamapi__create_role(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__get_role(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__list_roles(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__delete_role(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__tag_role(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__untag_role(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__list_role_tags(struct iamapi__ctx *x, struct ty_err *err);

/* iamapi_login.c */
int iamapi__create_login_profile(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__update_login_profile(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__get_login_profile(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__delete_login_profile(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__change_password(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__authorize(struct store *s, const char *op, json_t *in, const char *arn,
                      const char *region, const char *account, struct ty_err *err);
int iamapi__get_password_policy(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__update_password_policy(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__delete_password_policy(struct iamapi__ctx *x, struct ty_err *err);

/* iamapi_users.c, iamapi_roles.c */
extern const struct iamapi__owner iamapi__user_owner;
extern const struct iamapi__owner iamapi__role_owner;

/* iamapi_inline.c: the handlers of the actions whose table entry names an owner */
int iamapi__inline_put(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__inline_get(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__inline_list(struct iamapi__ctx *x, struct ty_err *err);
int iamapi__inline_delete(struct iamapi__ctx *x, struct ty_err *err);

#endif
