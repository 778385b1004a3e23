/*
 * iamapi_users.c - the IAM query API's user actions: users (create, get, list, delete, tags),
 * their access keys and their inline policies.
 *
 * Does not own the storage (store_iam.h) nor the protocol (iamapi.c: parameters arrive
 * validated, the caller authorised). Each handler writes its <Result> members into x->out.
 */
#include "iamapi_int.h"

#include "iam.h"
#include "password.h"
#include "store_iam.h"
#include "ty_log.h"
#include "ty_rand.h"

#include <ctype.h>
#include <string.h>

void iamapi__tags_xml(struct ty_buf *b, json_t *tags)
{
    size_t i;
    json_t *t;
    ty_buf_puts(b, "<Tags>");
    json_array_foreach(tags, i, t)
    {
        ty_buf_puts(b, "<member>");
        iamapi__xml_el(b, "Key", json_string_value(json_object_get(t, "Key")));
        iamapi__xml_el(b, "Value", json_string_value(json_object_get(t, "Value")));
        ty_buf_puts(b, "</member>");
    }
    ty_buf_puts(b, "</Tags>");
}

static void iamapi_user_xml(struct ty_buf *b, const struct store_iam_user *u, json_t *tags)
{
    ty_buf_puts(b, "<User>");
    iamapi__xml_el(b, "Path", u->path);
    iamapi__xml_el(b, "UserName", u->name);
    iamapi__xml_el(b, "UserId", u->id);
    iamapi__xml_el(b, "Arn", u->arn);
    iamapi__xml_date(b, "CreateDate", u->created);
    if (json_array_size(tags) > 0)
        iamapi__tags_xml(b, tags);
    ty_buf_puts(b, "</User>");
}

int iamapi__create_user(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    const char *name = iamapi__s(x->in, "UserName");
    const char *path = iamapi__s(x->in, "Path");
    json_t *tags = json_object_get(x->in, "Tags");
    int rc;

    if ((rc = iamapi__boundary_refuse(x, err)) != 0)
        return rc;
    memset(&u, 0, sizeof(u));
    snprintf(u.name, sizeof(u.name), "%s", name);
    snprintf(u.path, sizeof(u.path), "%s", path ? path : "/");
    memcpy(u.id, "AIDA", 4);
    if (ty_rand_string(u.id + 4, 17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot generate an id");
    if (snprintf(u.arn, sizeof(u.arn), "arn:aws:iam::%s:user%s%s", x->c->account_id, u.path,
                 u.name) >= (int)sizeof(u.arn))
        return ty_err_set(err, TY_EINVAL, "Path", "The ARN of user %s would be too long.", name);
    u.created = (double)time(NULL);
    rc = store_iam_user_create(x->c->store, &u, tags, err);
    if (rc == -TY_EINUSE)
        return ty_err_set(err, TY_EINUSE, "UserName", "User with name %s already exists.", name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "Tags",
                          "The number of tags has reached the maximum "
                          "limit.");
    if (rc)
        return rc;
    iamapi_user_xml(x->out, &u, tags);
    return 0;
}

int iamapi__get_user(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    json_t *tags = NULL;
    const char *name = iamapi__target(x);
    int rc = store_iam_user_get(x->c->store, name, &u, &tags, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi__no_user(err, name);
    if (rc)
        return rc;
    iamapi_user_xml(x->out, &u, tags);
    json_decref(tags);
    return 0;
}

/* One user of ListUsers. */
static void user_member(struct ty_buf *out, json_t *u, const char *name, const char *path)
{
    struct store_iam_user su;
    memset(&su, 0, sizeof(su));
    snprintf(su.name, sizeof(su.name), "%s", name);
    snprintf(su.path, sizeof(su.path), "%s", path);
    snprintf(su.id, sizeof(su.id), "%s", json_string_value(json_object_get(u, "UserId")));
    snprintf(su.arn, sizeof(su.arn), "%s", json_string_value(json_object_get(u, "Arn")));
    su.created = json_number_value(json_object_get(u, "CreateDate"));
    ty_buf_puts(out, "<member>");
    iamapi__xml_el(out, "Path", su.path);
    iamapi__xml_el(out, "UserName", su.name);
    iamapi__xml_el(out, "UserId", su.id);
    iamapi__xml_el(out, "Arn", su.arn);
    iamapi__xml_date(out, "CreateDate", su.created);
    ty_buf_puts(out, "</member>");
}

int iamapi__list_users(struct iamapi__ctx *x, struct ty_err *err)
{
    json_t *users = store_iam_user_list(x->c->store, err);
    if (!users)
        return -err->code;
    return iamapi__list_page(x, users, "Users", "UserName", NULL, user_member);
}

int iamapi__delete_user(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi__s(x->in, "UserName");
    struct store_iam_user u;
    double created;
    int reset, rc;
    /* as IAM: a user with a console password keeps it until DeleteLoginProfile */
    if (store_iam_user_get(x->c->store, name, &u, NULL, err) == 0 &&
        password_get(x->c->store, name, u.id, &created, &reset, err) == 0)
        return ty_err_set(err, TY_ECONFLICT, "UserName",
                          "Cannot delete entity, must delete login profile first.");
    ty_err_clear(err);
    rc = store_iam_user_delete(x->c->store, name, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi__no_user(err, name);
    if (rc == -TY_ECONFLICT)
        return ty_err_set(err, TY_ECONFLICT, "UserName",
                          "Cannot delete entity, must delete %s first.",
                          strcmp(err->msg, "keys") == 0 ? "access keys" : "policies");
    return rc;
}

int iamapi__tags_apply(struct iamapi__ctx *x, const char *param_name, const char *member,
                       iamapi__tag_fn fn, int (*no_entity)(struct ty_err *, const char *),
                       struct ty_err *err)
{
    const char *name = iamapi__s(x->in, param_name);
    int rc = fn(x->c->store, name, json_object_get(x->in, member), err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return no_entity(err, name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "Tags",
                          "The number of tags has reached the maximum limit.");
    return rc;
}

int iamapi__tag_user(struct iamapi__ctx *x, struct ty_err *err)
{
    return iamapi__tags_apply(x, "UserName", "Tags", store_iam_user_tag, iamapi__no_user, err);
}

int iamapi__untag_user(struct iamapi__ctx *x, struct ty_err *err)
{
    return iamapi__tags_apply(x, "UserName", "TagKeys", store_iam_user_untag, iamapi__no_user, err);
}

int iamapi__list_user_tags(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    json_t *tags = NULL;
    const char *name = iamapi__s(x->in, "UserName");
    int rc = store_iam_user_get(x->c->store, name, &u, &tags, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi__no_user(err, name);
    if (rc)
        return rc;
    iamapi__tags_xml(x->out, tags);
    iamapi__page_end(x->out, 0, NULL);
    json_decref(tags);
    return 0;
}

static void iamapi_key_xml(struct ty_buf *b, const char *user, const char *akid, const char *status,
                           const char *secret, double created)
{
    iamapi__xml_el(b, "UserName", user);
    iamapi__xml_el(b, "AccessKeyId", akid);
    iamapi__xml_el(b, "Status", status);
    if (secret)
        iamapi__xml_el(b, "SecretAccessKey", secret);
    iamapi__xml_date(b, "CreateDate", created);
}

int iamapi__create_access_key(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    const char *name = iamapi__target(x);
    char akid[24], secret[48];
    double now = (double)time(NULL);
    int rc = store_iam_user_get(x->c->store, name, &u, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi__no_user(err, name);
    if (rc)
        return rc;
    memcpy(akid, "AKIA", 4);
    if (ty_rand_string(akid + 4, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != 0 ||
        ty_rand_string(secret, 40,
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot generate keys");
    rc = store_iam_key_create(x->c->store, u.name, akid, now, STORE_IAM_MAX_KEYS, err);
    if (rc == -TY_ENOTFOUND)
        return iamapi__no_user(err, name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "UserName",
                          "Cannot exceed quota for AccessKeysPerUser: %d", STORE_IAM_MAX_KEYS);
    if (rc)
        return rc;
    rc = store_principal_put(x->c->store, akid, secret, u.arn, u.name, err);
    if (rc) {
        struct ty_err ignored;
        store_iam_key_delete(x->c->store, u.name, akid, &ignored);
        return rc;
    }
    ty_buf_puts(x->out, "<AccessKey>");
    iamapi_key_xml(x->out, u.name, akid, "Active", secret, now);
    ty_buf_puts(x->out, "</AccessKey>");
    ty_log(TY_LOG_INFO, "iam.key_created", "user=%s access_key=%s", u.name, akid);
    return 0;
}

int iamapi__list_access_keys(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    const char *name = iamapi__target(x);
    json_t *keys, *k;
    size_t i;
    int rc = store_iam_user_get(x->c->store, name, &u, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi__no_user(err, name);
    if (rc)
        return rc;
    keys = store_iam_key_list(x->c->store, u.name, err);
    if (!keys)
        return err->code == TY_ENOTFOUND ? iamapi__no_user(err, name) : -err->code;
    ty_buf_puts(x->out, "<AccessKeyMetadata>");
    json_array_foreach(keys, i, k)
    {
        ty_buf_puts(x->out, "<member>");
        iamapi_key_xml(x->out, u.name, json_string_value(json_object_get(k, "AccessKeyId")),
                       json_string_value(json_object_get(k, "Status")), NULL,
                       json_number_value(json_object_get(k, "CreateDate")));
        ty_buf_puts(x->out, "</member>");
    }
    ty_buf_puts(x->out, "</AccessKeyMetadata>");
    iamapi__page_end(x->out, 0, NULL);
    json_decref(keys);
    return 0;
}

int iamapi__delete_access_key(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi__target(x);
    const char *akid = iamapi__s(x->in, "AccessKeyId");
    int rc = store_iam_key_delete(x->c->store, name, akid, err);
    if (rc == -TY_ENOTFOUND && strcmp(err->msg, "key") == 0)
        return ty_err_set(err, TY_ENOTFOUND, "AccessKeyId",
                          "The Access Key with id %s cannot be found.", akid);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi__no_user(err, name);
    if (rc == 0)
        ty_log(TY_LOG_INFO, "iam.key_deleted", "user=%s access_key=%s", name, akid);
    return rc;
}

/* A user as the owner of inline policies (iamapi_inline.c). */
static int user_stored_name(struct store *s, const char *name, char *out, size_t n,
                            struct ty_err *err)
{
    struct store_iam_user u;
    int rc = store_iam_user_get(s, name, &u, NULL, err);
    if (rc == 0)
        snprintf(out, n, "%s", u.name);
    return rc;
}

const struct iamapi__owner iamapi__user_owner = {
    .param = "UserName",
    .noun = "user",
    .get = user_stored_name,
    .limit = IAM_MAX_CHARS_USER_INLINE,
    .policy_put = store_iam_policy_put,
    .no_owner = iamapi__no_user,
    .policy_get = store_iam_policy_get,
    .policy_list = store_iam_policy_list,
    .policy_delete = store_iam_policy_delete,
};

int iamapi__update_access_key(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi__target(x);
    const char *akid = iamapi__s(x->in, "AccessKeyId");
    const char *status = iamapi__s(x->in, "Status");
    int rc = store_iam_key_update(x->c->store, name, akid, status, err);
    if (rc == -TY_ENOTFOUND && strcmp(err->msg, "key") == 0)
        return ty_err_set(err, TY_ENOTFOUND, "AccessKeyId",
                          "The Access Key with id %s cannot be found.", akid);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi__no_user(err, name);
    if (rc == 0)
        ty_log(TY_LOG_INFO, "iam.key_updated", "user=%s access_key=%s status=%s", name, akid,
               status);
    return rc;
}
