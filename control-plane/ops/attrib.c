/*
 * ops/attrib.c - a new job's owner profile from the IAM user who created it
 * (attrib.h).
 */
#include "attrib.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "store_res.h"
#include "studio.h"
#include "ty_log.h"

static int attrib_has(json_t *tags, const char *key)
{
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        if (k && strcmp(k, key) == 0)
            return 1;
    }
    return 0;
}

int attrib_job(struct store *s, const char *principal_arn, const char *region, const char *account,
               const char *job_arn, json_t *tags, struct ty_err *err)
{
    const char *user, *u;
    const char **arns;
    json_t *profiles, *owners, *p, *add = NULL;
    size_t i, n;
    int rc = 0;

    if (attrib_has(tags, "sagemaker:user-profile-arn") || !principal_arn ||
        strncmp(principal_arn, "arn:aws:iam::", 13) != 0 || !(u = strstr(principal_arn, ":user/")))
        return 0;
    user = strrchr(u, '/') + 1;
    if (!*user)
        return 0;
    profiles = store_res_list(s, OP_STUDIO_KIND_PROFILE, NULL, NULL, (double)time(NULL),
                              op_studio_timing(), err);
    if (!profiles)
        return -err->code;
    /* the candidates' owner tags, all in one round trip */
    n = json_array_size(profiles);
    arns = calloc(n + 1, sizeof(*arns));
    for (i = 0; arns && i < n; i++) {
        const char *arn =
            json_string_value(json_object_get(json_array_get(profiles, i), "UserProfileArn"));
        arns[i] = arn ? arn : "";
    }
    owners = arns ? store_tags_value_many(s, arns, n, ATTRIB_TAG, err) : NULL;
    if (!owners) {
        if (!arns)
            ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        free(arns);
        json_decref(profiles);
        return -err->code;
    }
    json_array_foreach(profiles, i, p)
    {
        const char *arn = json_string_value(json_object_get(p, "UserProfileArn"));
        const char *dom = json_string_value(json_object_get(p, "DomainId"));
        const char *st = json_string_value(json_object_get(p, "Status"));
        const char *owner = json_string_value(json_array_get(owners, i));
        if (!arn || !dom || (st && (strcmp(st, "Deleting") == 0 || strcmp(st, "Deleted") == 0)))
            continue;
        if (owner && strcasecmp(owner, user) == 0) {
            char darn[512];
            op_studio_arn(region, account, "domain", dom, darn, sizeof(darn));
            add = json_pack("[{s:s,s:s},{s:s,s:s}]", "Key", "sagemaker:user-profile-arn", "Value",
                            arn, "Key", "sagemaker:domain-arn", "Value", darn);
            break;
        }
    }
    json_decref(owners);
    free(arns);
    json_decref(profiles);
    if (add) {
        ty_err_clear(err);
        rc = store_tags_add(s, job_arn, add, err);
        if (rc == 0)
            ty_log(TY_LOG_INFO, "console.attributed", "job=%s profile=%s", job_arn,
                   json_string_value(json_object_get(json_array_get(add, 0), "Value")));
        json_decref(add);
    }
    return rc;
}

int attrib_owns(struct store *s, const char *job_arn, const char *profile_arn)
{
    struct ty_err err;
    json_t *tags, *t;
    size_t i;
    int mine = 0;
    ty_err_clear(&err);
    tags = store_tags_list(s, job_arn, &err);
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        if (k && v && profile_arn && strcmp(k, ATTRIB_OWNER) == 0 &&
            strcasecmp(v, profile_arn) == 0)
            mine = 1;
    }
    json_decref(tags);
    return mine;
}
