/*
 * access.c - a job's S3 access, authorised against its role's policies (access.h).
 *
 * Invariants: fails closed - no role, an unknown role or a policy that does not allow the
 * action denies; the check comes before the object is opened, listed or created, so a refusal
 * tells nothing about whether the object exists.
 */
#include "access.h"

#include <stdio.h>
#include <string.h>

#include "artifacts.h"
#include "authz.h"

int access_s3(struct store *s, const char *role_arn, const char *action, const char *bucket,
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

/* s3:PutObject on "<uri's key without trailing '/'>/<job>/<sub>" (uri: an S3 URI). */
static int access__put_under(struct store *s, const struct spec *sp, const char *uri,
                             const char *sub, struct ty_err *err)
{
    char bucket[256], prefix[1100], key[1400];
    size_t pl;
    if (artifacts_s3_parse(uri, bucket, sizeof(bucket), prefix, sizeof(prefix)) != 0)
        return 0; /* the transfer fails the job with its own reason */
    pl = strlen(prefix);
    while (pl > 0 && prefix[pl - 1] == '/')
        prefix[--pl] = '\0';
    if (sub && sp)
        snprintf(key, sizeof(key), "%s%s%s/%s", prefix, pl ? "/" : "", sp->name, sub);
    else
        snprintf(key, sizeof(key), "%s%s", prefix, pl ? "/" : "");
    return access_s3(s, sp ? sp->role_arn : NULL, "s3:PutObject", bucket, key, err);
}

int access_job_outputs(struct store *s, const struct spec *sp, struct ty_err *err)
{
    int rc;

    if (sp->output_path[0]) {
        const char *files[2] = {sp->output_uncompressed ? "output/model/" : "output/model.tar.gz",
                                sp->output_uncompressed ? "output/data/" : "output/output.tar.gz"};
        for (int i = 0; i < 2; i++)
            if ((rc = access__put_under(s, sp, sp->output_path, files[i], err)) != 0)
                return rc;
    }
    if (sp->checkpoint_uri[0]) {
        char bucket[256], prefix[1100];
        if (artifacts_s3_parse(sp->checkpoint_uri, bucket, sizeof(bucket), prefix,
                               sizeof(prefix)) == 0 &&
            (rc = access_s3(s, sp->role_arn, "s3:ListBucket", bucket, prefix, err)) != 0)
            return rc;
        if ((rc = access__put_under(s, sp, sp->checkpoint_uri, NULL, err)) != 0)
            return rc;
    }
    if (sp->profiler_uri[0] &&
        (rc = access__put_under(s, sp, sp->profiler_uri, "profiler-output/", err)) != 0)
        return rc;
    return 0;
}
