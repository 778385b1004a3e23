/*
 * jobpolicy.c - a job's session policy (jobpolicy.h).
 *
 * Every S3 resource is built from a URI the job's own request named, so the policy grants
 * nothing its creator could not already name; a URI that does not parse grants nothing (the
 * transfer fails the job with its own reason).
 */
#include "jobpolicy.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3uri.h"

#define JOBPOLICY_DEFAULT_ROLE ":role/trainyard"

int jobpolicy_scoped(const char *role_arn)
{
    size_t n = role_arn ? strlen(role_arn) : 0, sl = strlen(JOBPOLICY_DEFAULT_ROLE);
    const char *colon;

    if (n <= sl || strncmp(role_arn, "arn:aws:iam::", 13) != 0 ||
        strcmp(role_arn + n - sl, JOBPOLICY_DEFAULT_ROLE) != 0)
        return 0;
    colon = strchr(role_arn + 13, ':'); /* the account is followed by the resource at once */
    return colon == role_arn + n - sl;
}

/* The policy being built: the buckets seen, each with its prefixes (for s3:ListBucket). */
struct jobpolicy {
    json_t *reads;   /* array of object ARNs */
    json_t *writes;  /* array of object ARNs */
    json_t *buckets; /* object: bucket -> array of s3:prefix patterns */
    int oom;
};

/* pre, then s with '*', '?' and '$' written as policy escapes, then tail (a wildcard or ""). */
static json_t *jobpolicy_pattern(const char *pre, const char *s, const char *tail)
{
    size_t pl = strlen(pre), tl = strlen(tail), n = pl + strlen(s) * 4 + tl + 1;
    char *b = malloc(n), *o = b;
    json_t *j;

    if (!b)
        return NULL;
    memcpy(o, pre, pl);
    o += pl;
    for (; *s; s++) {
        if (*s == '*' || *s == '?' || *s == '$') {
            o[0] = '$';
            o[1] = '{';
            o[2] = *s;
            o[3] = '}';
            o += 4;
        } else {
            *o++ = *s;
        }
    }
    memcpy(o, tail, tl + 1);
    j = json_string(b);
    free(b);
    return j;
}

static void jobpolicy_append(struct jobpolicy *p, json_t *arr, json_t *v)
{
    if (!v || json_array_append_new(arr, v) != 0)
        p->oom = 1;
}

/*
 * Adds bucket/prefix (uri's, with sub after it when sub is not NULL: "<prefix>/<sub>") to the
 * reads, and to the writes when write; whole: the URI names one object (no wildcard).
 */
static void jobpolicy_add(struct jobpolicy *p, const char *uri, const char *sub, int write,
                          int whole)
{
    char bucket[256], key[1400], full[1600], arn[300];
    json_t *list;
    size_t kl;

    if (!uri || !*uri || s3uri_parse(uri, bucket, sizeof(bucket), key, sizeof(key)) != 0)
        return;
    if (sub) {
        kl = strlen(key);
        while (kl > 0 && key[kl - 1] == '/')
            key[--kl] = '\0';
        if (snprintf(full, sizeof(full), "%s%s%s/", key, kl ? "/" : "", sub) >= (int)sizeof(full))
            return;
    } else {
        snprintf(full, sizeof(full), "%s", key);
    }
    snprintf(arn, sizeof(arn), "arn:aws:s3:::%s/", bucket);
    jobpolicy_append(p, p->reads, jobpolicy_pattern(arn, full, whole ? "" : "*"));
    if (write)
        jobpolicy_append(p, p->writes, jobpolicy_pattern(arn, full, "*"));
    if (!(list = json_object_get(p->buckets, bucket))) {
        if (json_object_set_new(p->buckets, bucket, json_array()) != 0) {
            p->oom = 1;
            return;
        }
        list = json_object_get(p->buckets, bucket);
    }
    jobpolicy_append(p, list, jobpolicy_pattern("", full, whole ? "" : "*"));
}

static json_t *jobpolicy_statement(const char *sid, json_t *actions, json_t *resources,
                                   json_t *cond)
{
    json_t *st = json_pack("{s:s, s:s, s:o, s:o}", "Sid", sid, "Effect", "Allow", "Action", actions,
                           "Resource", resources);
    if (st && cond && json_object_set_new(st, "Condition", cond) != 0) {
        json_decref(st);
        return NULL;
    }
    if (!st)
        json_decref(cond);
    return st;
}

int jobpolicy_build(const struct spec *sp, char **out, struct ty_err *err)
{
    struct jobpolicy p = {json_array(), json_array(), json_object(), 0};
    json_t *stmts = json_array(), *doc = NULL, *ch;
    const char *submit, *bucket;
    char sub[160], stream[200];
    json_t *v;
    size_t i;

    *out = NULL;
    if (!p.reads || !p.writes || !p.buckets || !stmts)
        p.oom = 1;
    json_array_foreach(sp->channels, i, ch)
    {
        json_t *src = json_object_get(json_object_get(ch, "DataSource"), "S3DataSource");
        jobpolicy_add(&p, json_string_value(json_object_get(src, "S3Uri")), NULL, 0, 0);
    }
    submit = json_string_value(json_object_get(sp->hyperparameters, "sagemaker_submit_directory"));
    if (submit) { /* a JSON string in a string, as the SDK writes it, or the plain URI */
        json_t *s = json_loads(submit, JSON_DECODE_ANY, NULL);
        jobpolicy_add(&p, json_is_string(s) ? json_string_value(s) : submit, NULL, 0, 1);
        json_decref(s);
    }
    snprintf(sub, sizeof(sub), "%s", sp->name);
    jobpolicy_add(&p, sp->output_path, sub, 1, 0);
    jobpolicy_add(&p, sp->checkpoint_uri, NULL, 1, 0);
    jobpolicy_add(&p, sp->profiler_uri, sub, 1, 0);

    if (json_array_size(p.reads))
        jobpolicy_append(&p, stmts,
                         jobpolicy_statement("JobReads", json_pack("[s]", "s3:GetObject"),
                                             json_incref(p.reads), NULL));
    if (json_array_size(p.writes))
        jobpolicy_append(
            &p, stmts,
            jobpolicy_statement("JobWrites",
                                json_pack("[s,s,s]", "s3:PutObject", "s3:AbortMultipartUpload",
                                          "s3:ListMultipartUploadParts"),
                                json_incref(p.writes), NULL));
    json_object_foreach(p.buckets, bucket, v)
    {
        char arn[300], sid[32];
        snprintf(arn, sizeof(arn), "arn:aws:s3:::%s", bucket);
        snprintf(sid, sizeof(sid), "JobList%zu", json_array_size(stmts));
        jobpolicy_append(&p, stmts,
                         jobpolicy_statement(sid, json_pack("[s]", "s3:ListBucket"),
                                             json_pack("[s]", arn),
                                             json_pack("{s:{s:O}}", "StringLike", "s3:prefix", v)));
        snprintf(sid, sizeof(sid), "JobBucket%zu", json_array_size(stmts));
        jobpolicy_append(&p, stmts,
                         jobpolicy_statement(sid, json_pack("[s]", "s3:GetBucketLocation"),
                                             json_pack("[s]", arn), NULL));
    }
    snprintf(stream, sizeof(stream),
             "arn:aws:logs:*:*:log-group:/aws/sagemaker/TrainingJobs:log-stream:%s/*", sp->name);
    jobpolicy_append(&p, stmts,
                     jobpolicy_statement("JobLogStreams",
                                         json_pack("[s,s,s]", "logs:CreateLogStream",
                                                   "logs:PutLogEvents", "logs:GetLogEvents"),
                                         json_pack("[s]", stream), NULL));
    jobpolicy_append(
        &p, stmts,
        jobpolicy_statement("JobLogGroup",
                            json_pack("[s,s]", "logs:CreateLogGroup", "logs:DescribeLogStreams"),
                            json_pack("[s]", "arn:aws:logs:*:*:log-group:/aws/sagemaker/"
                                             "TrainingJobs"),
                            NULL));
    jobpolicy_append(&p, stmts,
                     jobpolicy_statement("JobMetrics", json_pack("[s]", "cloudwatch:PutMetricData"),
                                         json_pack("[s]", "*"), NULL));
    if (!p.oom)
        doc = json_pack("{s:s, s:O}", "Version", "2012-10-17", "Statement", stmts);
    if (doc)
        *out = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    json_decref(stmts);
    json_decref(p.reads);
    json_decref(p.writes);
    json_decref(p.buckets);
    if (!*out)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    return 0;
}
