/*
 * authz_s3.c - a role's S3 access, authorised against its policies (authz_s3.h).
 *
 * Invariants: fails closed - no role, an unknown role or a policy that does not allow the
 * action denies; the check comes before the object is opened, listed or created, so a refusal
 * tells nothing about whether the object exists.
 */
#include "authz_s3.h"

#include "authz.h"

#include <stdio.h>
#include <string.h>

int authz_s3_check(struct store *s, const char *role_arn, const char *action, const char *bucket,
                   const char *key_or_prefix, struct ty_err *err)
{
    char resource[1600];
    const char *key = key_or_prefix ? key_or_prefix : "";
    int list = strcmp(action, "s3:ListBucket") == 0, w, rc;
    struct iam_ctx_entry ctx[] = {{"s3:prefix", NULL, 0, key}};

    if (list)
        w = snprintf(resource, sizeof(resource), "arn:aws:s3:::%s", bucket);
    else
        w = snprintf(resource, sizeof(resource), "arn:aws:s3:::%s/%s", bucket, key);
    if (w < 0 || (size_t)w >= sizeof(resource))
        return ty_err_set(err, TY_EINVAL, NULL, "ClientError: S3 key too long: s3://%.63s/%.200s",
                          bucket, key);
    if (!role_arn || !*role_arn)
        rc = ty_err_set(err, TY_EDENIED, NULL, "no role");
    else
        rc = authz_check(s, role_arn, action, resource, list ? ctx : NULL, list ? 1 : 0, err);
    if (rc != -TY_EDENIED)
        return rc;
    return ty_err_set(err, TY_EDENIED, NULL,
                      "ClientError: Access Denied (403) for s3://%.63s/%.700s: the role %.300s is "
                      "not authorized to perform %s on %.800s",
                      bucket, key, role_arn ? role_arn : "", action, resource);
}
