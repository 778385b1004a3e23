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
#include "authz_s3.h"
#include "s3uri.h"

/* s3:PutObject on "<uri's key without trailing '/'>/<job>/<sub>" (uri: an S3 URI). */
static int access_put_under(struct store *s, const struct spec *sp, const char *uri,
                            const char *sub, struct ty_err *err)
{
    char bucket[256], prefix[1100], key[1400];
    size_t pl;
    if (s3uri_parse(uri, bucket, sizeof(bucket), prefix, sizeof(prefix)) != 0)
        return 0; /* the transfer fails the job with its own reason */
    pl = strlen(prefix);
    while (pl > 0 && prefix[pl - 1] == '/')
        prefix[--pl] = '\0';
    if (sub && sp)
        snprintf(key, sizeof(key), "%s%s%s/%s", prefix, pl ? "/" : "", sp->name, sub);
    else
        snprintf(key, sizeof(key), "%s%s", prefix, pl ? "/" : "");
    return authz_s3_check(s, sp ? sp->role_arn : NULL, "s3:PutObject", bucket, key, err);
}

int access_job_outputs(struct store *s, const struct spec *sp, struct ty_err *err)
{
    int rc;

    if (sp->output_path[0]) {
        const char *files[2] = {sp->output_uncompressed ? "output/model/" : "output/model.tar.gz",
                                sp->output_uncompressed ? "output/data/" : "output/output.tar.gz"};
        for (int i = 0; i < 2; i++)
            if ((rc = access_put_under(s, sp, sp->output_path, files[i], err)) != 0)
                return rc;
    }
    if (sp->checkpoint_uri[0]) {
        char bucket[256], prefix[1100];
        if (s3uri_parse(sp->checkpoint_uri, bucket, sizeof(bucket), prefix, sizeof(prefix)) == 0 &&
            (rc = authz_s3_check(s, sp->role_arn, "s3:ListBucket", bucket, prefix, err)) != 0)
            return rc;
        if ((rc = access_put_under(s, sp, sp->checkpoint_uri, NULL, err)) != 0)
            return rc;
    }
    if (sp->profiler_uri[0] &&
        (rc = access_put_under(s, sp, sp->profiler_uri, "profiler-output/", err)) != 0)
        return rc;
    return 0;
}
