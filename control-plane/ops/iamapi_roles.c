/*
 * iamapi_roles.c - the IAM query API's role actions: roles (create with their trust policy,
 * get, list, delete) and their inline policies, with IAM's aggregate inline-policy limit.
 *
 * Does not own the storage (store_iam.h) nor the protocol (iamapi.c). Each handler writes
 * its <Result> members into x->out.
 */
#include "iamapi_int.h"

#include "iam.h"
#include "store_iam.h"
#include "ty_log.h"
#include "ty_rand.h"

#include <ctype.h>
#include <string.h>

/* ---- roles ---- */

#define IAMAPI_ROLE_INLINE_MAX 10240 /* aggregate of one role's inline policies */

static int iamapi_no_role(struct ty_err *err, const char *name)
{
    return ty_err_set(err, TY_ENOTFOUND, "RoleName", "The role with name %.64s cannot be found.",
                      name);
}

static void iamapi_role_xml(struct ty_buf *b, const char *tag, const struct store_iam_role *r,
                            const char *trust, json_t *tags)
{
    ty_buf_printf(b, "<%s>", tag);
    iamapi__xml_el(b, "Path", r->path);
    iamapi__xml_el(b, "RoleName", r->name);
    iamapi__xml_el(b, "RoleId", r->id);
    iamapi__xml_el(b, "Arn", r->arn);
    iamapi__xml_date(b, "CreateDate", r->created);
    ty_buf_puts(b, "<AssumeRolePolicyDocument>");
    iamapi__urlencode(b, trust, strlen(trust));
    ty_buf_puts(b, "</AssumeRolePolicyDocument>");
    if (r->desc[0])
        iamapi__xml_el(b, "Description", r->desc);
    ty_buf_printf(b, "<MaxSessionDuration>%d</MaxSessionDuration>", r->max_session);
    if (json_array_size(tags) > 0)
        iamapi__tags_xml(b, tags);
    ty_buf_printf(b, "</%s>", tag);
}

int iamapi__create_role(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_role r;
    const char *name = iamapi__s(x->in, "RoleName");
    const char *path = iamapi__s(x->in, "Path");
    const char *desc = iamapi__s(x->in, "Description");
    const char *msd = iamapi__s(x->in, "MaxSessionDuration");
    json_t *jdoc = json_object_get(x->in, "AssumeRolePolicyDocument");
    const char *trust = json_string_value(jdoc);
    json_t *tags = json_object_get(x->in, "Tags");
    int rc;

    if ((rc = iamapi__boundary_refuse(x, err)) != 0)
        return rc;
    rc = iam_trust_check(trust, json_string_length(jdoc), NULL, NULL, NULL, 0, NULL, err);
    if (rc)
        return rc;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", name);
    snprintf(r.path, sizeof(r.path), "%s", path ? path : "/");
    snprintf(r.desc, sizeof(r.desc), "%s", desc ? desc : "");
    r.max_session = msd ? (int)strtol(msd, NULL, 10) : 3600;
    memcpy(r.id, "AROA", 4);
    if (ty_rand_string(r.id + 4, 17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot generate an id");
    if (snprintf(r.arn, sizeof(r.arn), "arn:aws:iam::%s:role%s%s", x->c->account_id, r.path,
                 r.name) >= (int)sizeof(r.arn))
        return ty_err_set(err, TY_EINVAL, "Path", "The ARN of role %s would be too long.", name);
    r.created = (double)time(NULL);
    rc = store_iam_role_create(x->c->store, &r, trust, tags, err);
    if (rc == -TY_EINUSE)
        return ty_err_set(err, TY_EINUSE, "RoleName", "Role with name %s already exists.", name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "Tags",
                          "The number of tags has reached the maximum "
                          "limit.");
    if (rc)
        return rc;
    ty_log(TY_LOG_INFO, "iam.role_created", "role=%s", r.arn);
    iamapi_role_xml(x->out, "Role", &r, trust, tags);
    return 0;
}

int iamapi__get_role(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_role r;
    const char *name = iamapi__s(x->in, "RoleName");
    json_t *tags = NULL;
    char *trust = NULL;
    int rc = store_iam_role_get(x->c->store, name, &r, &trust, &tags, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_role(err, name);
    if (rc)
        return rc;
    iamapi_role_xml(x->out, "Role", &r, trust, tags);
    free(trust);
    json_decref(tags);
    return 0;
}

int iamapi__tag_role(struct iamapi__ctx *x, struct ty_err *err)
{
    return iamapi__tags_apply(x, "RoleName", "Tags", store_iam_role_tag, iamapi_no_role, err);
}

int iamapi__untag_role(struct iamapi__ctx *x, struct ty_err *err)
{
    return iamapi__tags_apply(x, "RoleName", "TagKeys", store_iam_role_untag, iamapi_no_role, err);
}

int iamapi__list_role_tags(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_role r;
    const char *name = iamapi__s(x->in, "RoleName");
    json_t *tags = NULL;
    int rc = store_iam_role_get(x->c->store, name, &r, NULL, &tags, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_role(err, name);
    if (rc)
        return rc;
    iamapi__tags_xml(x->out, tags);
    iamapi__page_end(x->out, 0, NULL);
    json_decref(tags);
    return 0;
}

/* One role of ListRoles. */
static void role_member(struct ty_buf *out, json_t *j, const char *name, const char *path)
{
    struct store_iam_role r;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", name);
    snprintf(r.path, sizeof(r.path), "%s", path);
    snprintf(r.id, sizeof(r.id), "%s", json_string_value(json_object_get(j, "RoleId")));
    snprintf(r.arn, sizeof(r.arn), "%s", json_string_value(json_object_get(j, "Arn")));
    snprintf(r.desc, sizeof(r.desc), "%s", json_string_value(json_object_get(j, "Description")));
    r.created = json_number_value(json_object_get(j, "CreateDate"));
    r.max_session = (int)json_integer_value(json_object_get(j, "MaxSessionDuration"));
    iamapi_role_xml(out, "member", &r,
                    json_string_value(json_object_get(j, "AssumeRolePolicyDocument")), NULL);
}

int iamapi__list_roles(struct iamapi__ctx *x, struct ty_err *err)
{
    json_t *roles = store_iam_role_list(x->c->store, err);
    if (!roles)
        return -err->code;
    return iamapi__list_page(x, roles, "Roles", "RoleName", "AssumeRolePolicyDocument",
                             role_member);
}

int iamapi__delete_role(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi__s(x->in, "RoleName");
    int rc = store_iam_role_delete(x->c->store, name, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_role(err, name);
    if (rc == -TY_ECONFLICT)
        return ty_err_set(err, TY_ECONFLICT, "RoleName",
                          "Cannot delete entity, must delete policies first.");
    if (rc == 0)
        ty_log(TY_LOG_INFO, "iam.role_deleted", "role=%s", name);
    return rc;
}

/* A role as the owner of inline policies (iamapi_inline.c). */
static int role_stored_name(struct store *s, const char *name, char *out, size_t n,
                            struct ty_err *err)
{
    struct store_iam_role r;
    int rc = store_iam_role_get(s, name, &r, NULL, NULL, err);
    if (rc == 0)
        snprintf(out, n, "%s", r.name);
    return rc;
}

const struct iamapi__owner iamapi__role_owner = {
    .param = "RoleName",
    .noun = "role",
    .get = role_stored_name,
    .limit = IAMAPI_ROLE_INLINE_MAX,
    .policy_put = store_iam_role_policy_put,
    .no_owner = iamapi_no_role,
    .policy_get = store_iam_role_policy_get,
    .policy_list = store_iam_role_policy_list,
    .policy_delete = store_iam_role_policy_delete,
};
