/*
 * iamapi_login.c - the IAM query API's console-password actions: login profiles,
 * ChangePassword (and the grant every user has to change their own password), the account
 * password policy.
 *
 * Does not own the passwords' hashing and checks (ops/password.c) nor the protocol
 * (iamapi.c). Each handler writes its <Result> members into x->out.
 */
#include "iamapi_int.h"

#include "authz.h"
#include "password.h"
#include "store_iam.h"

#include <string.h>

/* ---- login profiles and the account password policy (ops/password.c) ---- */

/* The IAM user of a login-profile action. OUT: u. 0 or NoSuchEntity. */
static int iamapi_login_user(struct iamapi__ctx *x, struct store_iam_user *u, struct ty_err *err)
{
    const char *name = iamapi__target(x);
    int rc = store_iam_user_get(x->c->store, name, u, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi__no_user(err, name);
    return rc;
}

/* "true"/"false" of a boolean parameter: 1, 0, or dflt when absent. */
static int iamapi_bool(json_t *in, const char *k, int dflt)
{
    const char *v = iamapi__s(in, k);
    if (!v)
        return dflt;
    return strcmp(v, "true") == 0;
}

static void iamapi_login_xml(struct ty_buf *b, const char *name, double created, int reset)
{
    ty_buf_puts(b, "<LoginProfile>");
    iamapi__xml_el(b, "UserName", name);
    iamapi__xml_date(b, "CreateDate", created);
    iamapi__xml_el(b, "PasswordResetRequired", reset ? "true" : "false");
    ty_buf_puts(b, "</LoginProfile>");
}

int iamapi__create_login_profile(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    int reset = iamapi_bool(x->in, "PasswordResetRequired", 0), rc;
    double now = (double)time(NULL);
    if ((rc = iamapi_login_user(x, &u, err)) != 0)
        return rc;
    rc = password_put(x->c->store, u.name, u.id, iamapi__s(x->in, "Password"), 0, reset, now, err);
    if (rc)
        return rc;
    iamapi_login_xml(x->out, u.name, now, reset);
    return 0;
}

int iamapi__update_login_profile(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    int rc;
    if ((rc = iamapi_login_user(x, &u, err)) != 0)
        return rc;
    return password_put(x->c->store, u.name, u.id, iamapi__s(x->in, "Password"), 1,
                        iamapi_bool(x->in, "PasswordResetRequired", -1), (double)time(NULL), err);
}

int iamapi__get_login_profile(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    double created;
    int reset, rc;
    if ((rc = iamapi_login_user(x, &u, err)) != 0)
        return rc;
    if ((rc = password_get(x->c->store, u.name, u.id, &created, &reset, err)) != 0)
        return rc;
    iamapi_login_xml(x->out, u.name, created, reset);
    return 0;
}

int iamapi__delete_login_profile(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    double created;
    int reset, rc;
    if ((rc = iamapi_login_user(x, &u, err)) != 0)
        return rc;
    if ((rc = password_get(x->c->store, u.name, u.id, &created, &reset, err)) != 0)
        return rc;
    return password_delete(x->c->store, u.name, err);
}

/* ChangePassword: the caller (an IAM user) changes his own console password. */
int iamapi__change_password(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    const char *arn = x->c->principal_arn, *name;
    int rc;

    if (strncmp(arn, "arn:aws:iam::", 13) != 0 || !strstr(arn, ":user/"))
        return ty_err_set(err, TY_EUSERTYPE, NULL,
                          "The request was rejected because the type of user for the "
                          "transaction was incorrect.");
    name = strrchr(arn, '/') + 1;
    if ((rc = store_iam_user_get(x->c->store, name, &u, NULL, err)) != 0)
        return rc == -TY_EREDIS ? rc : iamapi__no_user(err, name);
    rc = password_change(x->c->store, u.name, u.id, iamapi__s(x->in, "OldPassword"),
                         iamapi__s(x->in, "NewPassword"), err);
    if (rc == -TY_ETHROTTLE)
        rc = ty_err_set(err, TY_ELIMIT, NULL, "%s", err->msg);
    return rc;
}

/*
 * ChangePassword is allowed by the caller's policies (iam:ChangePassword on his own ARN), or,
 * as on AWS, for every IAM user when the account password policy says
 * AllowUsersToChangePassword, or for a user whose login profile has PasswordResetRequired (AWS's
 * console attaches IAMUserChangePassword to such a user). 1 when one of the last two holds.
 */
static int iamapi_change_allowed(struct store *s, const char *arn)
{
    struct password_policy p;
    struct store_iam_user u;
    struct ty_err err;
    const char *slash = strrchr(arn, '/');

    ty_err_clear(&err);
    if (!strstr(arn, ":user/") || !slash)
        return 0;
    if (password_policy_get(s, &p, &err) == 0 && p.allow_change)
        return 1;
    if (store_iam_user_get(s, slash + 1, &u, NULL, &err) != 0)
        return 0;
    return password_reset_required(s, u.name, u.id);
}

/* authz_request, with ChangePassword's own grants (iamapi_change_allowed). */
int iamapi__authorize(struct store *s, const char *op, json_t *in, const char *arn,
                      const char *region, const char *account, struct ty_err *err)
{
    int rc = authz_request(s, "iam", op, in, arn, region, account, err);
    if (rc == -TY_EDENIED && strcmp(op, "ChangePassword") == 0 && iamapi_change_allowed(s, arn)) {
        ty_err_clear(err);
        return 0;
    }
    return rc;
}

int iamapi__get_password_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    struct password_policy p;
    int rc = password_policy_get(x->c->store, &p, err);
    if (rc)
        return rc;
    if (!p.custom)
        return ty_err_set(err, TY_ENOTFOUND, NULL,
                          "The Password Policy with domain name %s cannot be found.",
                          x->c->account_id);
    ty_buf_printf(x->out,
                  "<PasswordPolicy><MinimumPasswordLength>%d</MinimumPasswordLength>"
                  "<RequireSymbols>%s</RequireSymbols><RequireNumbers>%s</RequireNumbers>"
                  "<RequireUppercaseCharacters>%s</RequireUppercaseCharacters>"
                  "<RequireLowercaseCharacters>%s</RequireLowercaseCharacters>"
                  "<AllowUsersToChangePassword>%s</AllowUsersToChangePassword>"
                  "<ExpirePasswords>false</ExpirePasswords></PasswordPolicy>",
                  p.min_length, p.req_symbols ? "true" : "false", p.req_numbers ? "true" : "false",
                  p.req_upper ? "true" : "false", p.req_lower ? "true" : "false",
                  p.allow_change ? "true" : "false");
    return 0;
}

int iamapi__update_password_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    struct password_policy p;
    const char *ml = iamapi__s(x->in, "MinimumPasswordLength");
    password_policy_default(&p);
    p.custom = 1;
    p.allow_change = iamapi_bool(x->in, "AllowUsersToChangePassword", 0);
    p.req_symbols = iamapi_bool(x->in, "RequireSymbols", 0);
    p.req_numbers = iamapi_bool(x->in, "RequireNumbers", 0);
    p.req_upper = iamapi_bool(x->in, "RequireUppercaseCharacters", 0);
    p.req_lower = iamapi_bool(x->in, "RequireLowercaseCharacters", 0);
    if (ml) {
        char *end;
        long v = strtol(ml, &end, 10);
        if (*end || v < 6 || v > 128)
            return iamapi__invalid(err, "minimumPasswordLength", ml,
                                   v < 6 ? "have value greater than or equal to 6"
                                         : "have value less than or equal to 128");
        p.min_length = (int)v;
    }
    return password_policy_put(x->c->store, &p, err);
}

int iamapi__delete_password_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    int rc = password_policy_delete(x->c->store, err);
    if (rc == -TY_ENOTFOUND)
        return ty_err_set(err, TY_ENOTFOUND, NULL,
                          "The account policy with name PasswordPolicy cannot be found.");
    return rc;
}
