/*
 * iamapi_inline.c - the inline-policy actions that users and roles share (Put/Get/List/
 * Delete UserPolicy and RolePolicy): one implementation over a struct iamapi__owner that
 * names the owner's request member, its wording, its size limit and its store calls.
 *
 * Does not own the storage (store_iam.h) nor the owners themselves (iamapi_users.c,
 * iamapi_roles.c). Each handler writes its <Result> members into x->out.
 */
#include "iamapi_int.h"

#include "authz.h"
#include "iam.h"
#include "store_iam.h"

#include <stdlib.h>
#include <string.h>

/* iam_policy_each_key's callback: the first key no request carries (ud: where it goes). */
static int unprovided_key(const char *key, void *ud)
{
    if (authz_key_provided(key))
        return 0;
    *(const char **)ud = key;
    return 1;
}

static int no_policy(const struct iamapi__owner *o, struct ty_err *err, const char *pname)
{
    return ty_err_set(err, TY_ENOTFOUND, "PolicyName",
                      "The %s policy with name %.128s cannot be found.", o->noun, pname);
}

int iamapi__inline_put(struct iamapi__ctx *x, struct ty_err *err)
{
    const struct iamapi__owner *o = x->owner;
    const char *name = iamapi__s(x->in, o->param);
    const char *pname = iamapi__s(x->in, "PolicyName");
    json_t *jdoc = json_object_get(x->in, "PolicyDocument");
    const char *doc = json_string_value(jdoc);
    size_t len = json_string_length(jdoc), size;
    struct iam_policy *p = NULL;
    int rc = iam_policy_parse(doc, len, &p, err);
    if (rc == -TY_EINVAL)
        return ty_err_set(err, TY_EINVAL, "PolicyDocument", "%s", err->msg);
    if (rc)
        return rc;
    { /* a condition on a key no request carries would never match: refused, never stored */
        const char *key = NULL;
        if (iam_policy_each_key(p, unprovided_key, &key)) {
            rc = ty_err_set(err, TY_EMALFORMED, "PolicyDocument",
                            "Condition key %.128s is not provided by this server: a condition "
                            "on it would never match (see docs/iam.md for the keys requests "
                            "carry).",
                            key);
            iam_policy_free(p);
            return rc;
        }
    }
    iam_policy_free(p);
    size = iam_policy_chars(doc, len);
    rc = o->policy_put(x->c->store, name, pname, doc, len, size, o->limit, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return o->no_owner(err, name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "PolicyDocument",
                          "Maximum policy size of %zu bytes exceeded for %s %s", o->limit, o->noun,
                          name);
    return rc;
}

int iamapi__inline_get(struct iamapi__ctx *x, struct ty_err *err)
{
    const struct iamapi__owner *o = x->owner;
    const char *name = iamapi__s(x->in, o->param);
    const char *pname = iamapi__s(x->in, "PolicyName");
    char stored[STORE_IAM_NAME_MAX + 1];
    char *doc;
    int rc = o->get(x->c->store, name, stored, sizeof(stored), err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return o->no_owner(err, name);
    if (rc)
        return rc;
    doc = o->policy_get(x->c->store, name, pname, err);
    if (!doc) {
        if (err->code == TY_ENOTFOUND && strcmp(err->msg, "policy") == 0)
            return no_policy(o, err, pname);
        if (err->code == TY_ENOTFOUND)
            return o->no_owner(err, name);
        return -err->code;
    }
    iamapi__xml_el(x->out, o->param, stored);
    iamapi__xml_el(x->out, "PolicyName", pname);
    ty_buf_puts(x->out, "<PolicyDocument>");
    iamapi__urlencode(x->out, doc, strlen(doc));
    ty_buf_puts(x->out, "</PolicyDocument>");
    free(doc);
    return 0;
}

int iamapi__inline_list(struct iamapi__ctx *x, struct ty_err *err)
{
    const struct iamapi__owner *o = x->owner;
    const char *name = iamapi__s(x->in, o->param);
    const char *marker = iamapi__s(x->in, "Marker");
    long max = iamapi__max_items(x->in), n = 0;
    json_t *names = o->policy_list(x->c->store, name, err), *p;
    const char *next = NULL;
    size_t i;
    if (!names)
        return err->code == TY_ENOTFOUND ? o->no_owner(err, name) : -err->code;
    ty_buf_puts(x->out, "<PolicyNames>");
    json_array_foreach(names, i, p)
    {
        if (marker && strcmp(json_string_value(p), marker) < 0)
            continue;
        if (n == max) {
            next = json_string_value(p);
            break;
        }
        iamapi__xml_el(x->out, "member", json_string_value(p));
        n++;
    }
    ty_buf_puts(x->out, "</PolicyNames>");
    iamapi__page_end(x->out, next != NULL, next);
    json_decref(names);
    return 0;
}

int iamapi__inline_delete(struct iamapi__ctx *x, struct ty_err *err)
{
    const struct iamapi__owner *o = x->owner;
    const char *name = iamapi__s(x->in, o->param);
    const char *pname = iamapi__s(x->in, "PolicyName");
    int rc = o->policy_delete(x->c->store, name, pname, err);
    if (rc == -TY_ENOTFOUND && strcmp(err->msg, "policy") == 0)
        return no_policy(o, err, pname);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return o->no_owner(err, name);
    return rc;
}
