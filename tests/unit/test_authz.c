/*
 * test_authz.c - authz.c's operation table, resource ARNs and decisions; store_iam.c; quota.c.
 *
 * The table tests fail when an operation is added to ops/optable.c's op_table[], api/sagemaker.json
 * or api/logs.json without a row in authz.c (a call without a row is refused at run time).
 * The decision, IAM store and quota tests run against a private redis-server (skipped when it
 * is not installed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "authz.h"
#include "authz_s3.h"
#include "iamapi.h"
#include "jobpolicy.h"
#include "ops.h"
#include "quota.h"
#include "redis_fixture.h"
#include "session.h"
#include "spec.h"
#include "store.h"
#include "store_iam.h"

#ifndef TY_API_DIR
#define TY_API_DIR "api"
#endif

static struct redis_fixture fx;
static int have_redis;
static struct store *st;

/* ---- the table ---- */

static void test_every_route_op_has_a_row(void **state)
{
    size_t n = 0;
    (void)state;
    for (const struct op_entry *e; (e = op_entry_at(n)); n++) {
        const struct authz_op *row;
        char action[128];
        assert_non_null(e->name);
        assert_non_null(e->fn);
        assert_ptr_equal(op_lookup(e->service, e->name), e);
        row = authz_find(e->service, e->name);
        if (!row)
            fail_msg("ops/optable.c serves %s:%s but authz.c has no row for it", e->service,
                     e->name);
        snprintf(action, sizeof(action), "%s:%s", e->service, e->name);
        assert_string_equal(row->action, action);
    }
    assert_true(n > 20);
    assert_null(op_lookup("sagemaker", "NoSuchOperation"));
}

static void check_api_file(const char *file, const char *service)
{
    char path[512];
    json_error_t jerr;
    json_t *doc, *ops, *v;
    const char *name;
    snprintf(path, sizeof(path), "%s/%s", TY_API_DIR, file);
    doc = json_load_file(path, 0, &jerr);
    if (!doc)
        fail_msg("cannot read %s: %s", path, jerr.text);
    ops = json_object_get(doc, "operations");
    assert_true(json_object_size(ops) > 0);
    json_object_foreach(ops, name, v)
    {
        if (!authz_find(service, name))
            fail_msg("%s lists %s but authz.c has no row for %s:%s", file, name, service, name);
    }
    json_decref(doc);
}

static void test_every_api_op_has_a_row(void **state)
{
    (void)state;
    check_api_file("sagemaker.json", "sagemaker");
    check_api_file("logs.json", "logs");
}

static void test_table_is_consistent(void **state)
{
    const struct authz_op *rows;
    size_t n = authz_table(&rows);
    static const char *const iam_ops[] = {
        "CreateUser",      "GetUser",         "ListUsers",        "DeleteUser",
        "TagUser",         "CreateAccessKey", "ListAccessKeys",   "DeleteAccessKey",
        "PutUserPolicy",   "GetUserPolicy",   "ListUserPolicies", "DeleteUserPolicy",
        "UpdateAccessKey", "CreateRole",      "GetRole",          "ListRoles",
        "DeleteRole",      "PutRolePolicy",   "GetRolePolicy",    "ListRolePolicies",
        "DeleteRolePolicy"};
    (void)state;
    for (size_t i = 0; i < n; i++) {
        size_t sl = strlen(rows[i].service);
        assert_int_equal(strncmp(rows[i].action, rows[i].service, sl), 0);
        assert_int_equal(rows[i].action[sl], ':');
        assert_string_equal(rows[i].action + sl + 1, rows[i].op);
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(rows[i].service, rows[j].service) == 0 &&
                strcmp(rows[i].op, rows[j].op) == 0)
                fail_msg("duplicate row %s:%s", rows[i].service, rows[i].op);
        /* List operations act on "*" (but the two that list inside one resource, as AWS's
         * service authorization reference has them); no row reads resource tags of "*" */
        if (strncmp(rows[i].op, "List", 4) == 0 && strcmp(rows[i].service, "sagemaker") == 0 &&
            strcmp(rows[i].op, "ListTags") != 0 &&
            strcmp(rows[i].op, "ListTrainingJobsForHyperParameterTuningJob") != 0)
            assert_int_equal(rows[i].res, AUTHZ_RES_STAR);
    }
    for (size_t i = 0; i < sizeof(iam_ops) / sizeof(iam_ops[0]); i++)
        assert_non_null(authz_find("iam", iam_ops[i]));
    assert_null(authz_find("sagemaker", "NoSuchOperation"));
    assert_null(authz_find(NULL, "CreateTrainingJob"));
}

static void resource_is(const char *service, const char *op, const char *in_json, const char *want)
{
    const struct authz_op *row = authz_find(service, op);
    struct ty_err err;
    char buf[1024];
    json_t *in = json_loads(in_json, 0, NULL);
    assert_non_null(row);
    assert_non_null(in);
    assert_int_equal(authz_resource(row, in, "us-west-2", "123456789012",
                                    "arn:aws:iam::123456789012:user/alice", buf, sizeof(buf), &err),
                     0);
    assert_string_equal(buf, want);
    json_decref(in);
}

static void test_resource_arns(void **state)
{
    (void)state;
    resource_is("sagemaker", "CreateTrainingJob", "{\"TrainingJobName\":\"My-Job\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:training-job/my-job");
    resource_is("sagemaker", "ListTrainingJobs", "{}", "*");
    resource_is("sagemaker", "DescribeHyperParameterTuningJob",
                "{\"HyperParameterTuningJobName\":\"Tune-1\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:hyper-parameter-tuning-job/tune-1");
    resource_is("sagemaker", "DescribeDomain", "{\"DomainId\":\"d-abc123\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:domain/d-abc123");
    resource_is("sagemaker", "CreateDomain", "{\"DomainName\":\"x\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:domain/*");
    resource_is("sagemaker", "CreateUserProfile",
                "{\"DomainId\":\"d-abc123\",\"UserProfileName\":\"Alice\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:user-profile/d-abc123/alice");
    resource_is("sagemaker", "CreatePresignedDomainUrl",
                "{\"DomainId\":\"d-abc123\",\"UserProfileName\":\"alice\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:user-profile/d-abc123/alice");
    resource_is("sagemaker", "CreateApp",
                "{\"DomainId\":\"d-abc123\",\"UserProfileName\":\"Alice\",\"AppType\":"
                "\"DetailedProfiler\",\"AppName\":\"Default\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:app/d-abc123/alice/detailedprofiler/"
                "default");
    resource_is("sagemaker", "DeleteApp",
                "{\"DomainId\":\"d-1\",\"SpaceName\":\"s\",\"AppType\":\"JupyterLab\","
                "\"AppName\":\"a\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:app/d-1/s/jupyterlab/a");
    resource_is("sagemaker", "AddTags",
                "{\"ResourceArn\":\"arn:aws:sagemaker:us-west-2:123456789012:training-job/x\"}",
                "arn:aws:sagemaker:us-west-2:123456789012:training-job/x");
    resource_is("logs", "DescribeLogStreams", "{\"logGroupName\":\"/aws/sagemaker/TrainingJobs\"}",
                "arn:aws:logs:us-west-2:123456789012:log-group:/aws/sagemaker/TrainingJobs");
    resource_is("logs", "GetLogEvents",
                "{\"logGroupName\":\"/aws/sagemaker/TrainingJobs\",\"logStreamName\":"
                "\"j/algo-1-1\"}",
                "arn:aws:logs:us-west-2:123456789012:log-group:/aws/sagemaker/TrainingJobs:"
                "log-stream:j/algo-1-1");
    resource_is("iam", "CreateUser", "{\"UserName\":\"Bob\",\"Path\":\"/eng/\"}",
                "arn:aws:iam::123456789012:user/eng/Bob");
    resource_is("iam", "GetUser", "{}", "arn:aws:iam::123456789012:user/alice");
    resource_is("iam", "ListUsers", "{}", "*");
}

static void test_resource_too_long(void **state)
{
    const struct authz_op *row = authz_find("sagemaker", "DescribeTrainingJob");
    struct ty_err err;
    char buf[64];
    json_t *in = json_pack("{s:s}", "TrainingJobName", "a-rather-long-training-job-name-here");
    (void)state;
    assert_int_equal(
        authz_resource(row, in, "us-east-1", "000000000000", "", buf, sizeof(buf), &err),
        -TY_EINVAL);
    json_decref(in);
}

static void test_form(void **state)
{
    struct ty_err err;
    const char *f = "Action=CreateUser&Version=2010-05-08&UserName=a%2Bb&Path=%2Fx%2F&"
                    "Tags.member.2.Key=k2&Tags.member.1.Key=k1&Tags.member.1.Value=v+1&"
                    "Tags.member.2.Value=&TagKeys.member.1=z&Empty";
    json_t *o;
    (void)state;
    o = op_iamapi_form(NULL, f, strlen(f), &err);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "UserName")), "a+b");
    assert_string_equal(json_string_value(json_object_get(o, "Path")), "/x/");
    assert_int_equal(json_array_size(json_object_get(o, "Tags")), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "Tags"), 0), "Value")),
        "v 1");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(o, "Tags"), 1), "Key")),
        "k2");
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "TagKeys"), 0)), "z");
    assert_string_equal(json_string_value(json_object_get(o, "Empty")), "");
    json_decref(o);
    /* hostile input: bad escapes, indexes out of range, a list and a scalar mixed, NUL in a key */
    assert_null(op_iamapi_form(NULL, "A=%zz", 5, &err));
    assert_int_equal(err.code, TY_EINVAL);
    assert_null(op_iamapi_form(NULL, "Tags.member.0.Key=a", 19, &err));
    assert_null(op_iamapi_form(NULL, "Tags.member.99999.Key=a", 23, &err));
    assert_null(op_iamapi_form(NULL, "Tags.member.1=a&Tags.member.1.Key=b", 35, &err));
    assert_null(op_iamapi_form(NULL, "A%00B=1", 7, &err));
    assert_null(op_iamapi_form(NULL, "Tags=x&Tags.member.1.Key=y", 26, &err));
    assert_null(op_iamapi_form(NULL, "Tags.member.101.Key=y", 21, &err));
    assert_null(op_iamapi_form(NULL, "%ff.member.1=y", 14, &err));
    assert_null(op_iamapi_form(NULL, "A=%ff", 5, &err)); /* not UTF-8 */
    o = op_iamapi_form(NULL, "", 0, &err);
    assert_non_null(o);
    json_decref(o);
}

/* ---- decisions against Redis ---- */

static int setup(void **state)
{
    struct ty_err err;
    redisContext *c;
    (void)state;
    if (!have_redis)
        return 0;
    c = redis_fixture_raw(&fx);
    if (c) {
        freeReplyObject(redisCommand(c, "FLUSHALL"));
        redisFree(c);
    }
    st = store_open(fx.url_unix, &err);
    return st ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    store_close(st);
    st = NULL;
    return 0;
}

static void make_user(const char *name, const char *policy)
{
    struct store_iam_user u;
    struct ty_err err;
    json_t *tags = json_pack("[{s:s,s:s}]", "Key", "team", "Value", name);
    memset(&u, 0, sizeof(u));
    snprintf(u.name, sizeof(u.name), "%s", name);
    snprintf(u.id, sizeof(u.id), "AIDATEST%s", name);
    snprintf(u.path, sizeof(u.path), "/");
    snprintf(u.arn, sizeof(u.arn), "arn:aws:iam::000000000000:user/%s", name);
    u.created = 1.0;
    assert_int_equal(store_iam_user_create(st, &u, tags, &err), 0);
    json_decref(tags);
    if (policy)
        assert_int_equal(
            store_iam_policy_put(st, name, "p", policy, strlen(policy), strlen(policy), 2048, &err),
            0);
}

static int call(const char *user, const char *op, const char *in_json, struct ty_err *err)
{
    char arn[128];
    json_t *in = json_loads(in_json, 0, NULL);
    int rc;
    assert_non_null(in);
    snprintf(arn, sizeof(arn), "arn:aws:iam::000000000000:user/%s", user);
    ty_err_clear(err);
    rc = authz_request(st, "sagemaker", op, in, arn, "us-east-1", "000000000000", err);
    json_decref(in);
    return rc;
}

static const char *const POLICY =
    "{\"Version\":\"2012-10-17\",\"Statement\":["
    "{\"Effect\":\"Allow\",\"Action\":\"sagemaker:CreateTrainingJob\",\"Resource\":\"*\","
    "\"Condition\":{\"StringEquals\":{\"aws:RequestTag/team\":\"${aws:username}\","
    "\"sagemaker:InstanceTypes\":\"ml.m5.large\"}}},"
    "{\"Effect\":\"Allow\",\"Action\":\"sagemaker:DescribeTrainingJob\",\"Resource\":\"*\","
    "\"Condition\":{\"StringEquals\":{\"sagemaker:ResourceTag/team\":"
    "\"${aws:PrincipalTag/team}\"}}},"
    "{\"Effect\":\"Deny\",\"Action\":\"sagemaker:*\",\"Resource\":"
    "\"arn:aws:sagemaker:*:*:training-job/secret-*\"}]}";

#define JOB(name, itype, team)                                                                     \
    "{\"TrainingJobName\":\"" name "\",\"ResourceConfig\":{\"InstanceType\":\"" itype              \
    "\",\"InstanceCount\":1},\"Tags\":[{\"Key\":\"team\",\"Value\":\"" team "\"}]}"

static void test_decisions(void **state)
{
    struct ty_err err;
    json_t *tags;
    (void)state;
    if (!have_redis)
        skip();
    make_user("alice", POLICY);
    make_user("carol", NULL);
    assert_int_equal(call("alice", "CreateTrainingJob", JOB("j1", "ml.m5.large", "alice"), &err),
                     0);
    assert_int_equal(call("alice", "CreateTrainingJob", JOB("j1", "ml.m5.large", "bob"), &err),
                     -TY_EDENIED);
    assert_string_equal(err.msg, "User: arn:aws:iam::000000000000:user/alice is not authorized to "
                                 "perform: sagemaker:CreateTrainingJob on resource: "
                                 "arn:aws:sagemaker:us-east-1:000000000000:training-job/j1 "
                                 "because no identity-based policy allows the "
                                 "sagemaker:CreateTrainingJob action");
    assert_int_equal(call("alice", "CreateTrainingJob", JOB("j1", "ml.p3.2xlarge", "alice"), &err),
                     -TY_EDENIED);
    assert_int_equal(
        call("alice", "CreateTrainingJob", JOB("secret-1", "ml.m5.large", "alice"), &err),
        -TY_EDENIED);
    assert_non_null(strstr(err.msg, "with an explicit deny"));
    /* resource tags: read from the store (the policy mentions ResourceTag) */
    assert_int_equal(call("alice", "DescribeTrainingJob", "{\"TrainingJobName\":\"j1\"}", &err),
                     -TY_EDENIED);
    tags = json_pack("[{s:s,s:s}]", "Key", "team", "Value", "alice");
    assert_int_equal(
        store_tags_add(st, "arn:aws:sagemaker:us-east-1:000000000000:training-job/j1", tags, &err),
        0);
    json_decref(tags);
    assert_int_equal(call("alice", "DescribeTrainingJob", "{\"TrainingJobName\":\"J1\"}", &err), 0);
    /* no policy; unknown user; not an IAM user; unknown operation (fail closed) */
    assert_int_equal(call("carol", "ListTrainingJobs", "{}", &err), -TY_EDENIED);
    assert_int_equal(call("mallory", "ListTrainingJobs", "{}", &err), -TY_EDENIED);
    {
        json_t *in = json_object();
        assert_int_equal(authz_request(st, "sagemaker", "ListTrainingJobs", in,
                                       "arn:aws:sts::000000000000:assumed-role/r/s", "us-east-1",
                                       "000000000000", &err),
                         -TY_EDENIED);
        assert_int_equal(authz_request(st, "sagemaker", "NoSuchOp", in,
                                       "arn:aws:iam::000000000000:user/alice", "us-east-1",
                                       "000000000000", &err),
                         -TY_EINTERNAL);
        json_decref(in);
    }
}

/* Resource tags are read when the parsed policy names a ResourceTag key, however the text
   spells it: a Deny keyed on aws:Resource\u0054ag/team (a JSON escape) used to be skipped by
   the raw-text search, so it never fired (issue 37, finding 4). */
static void test_escaped_resource_tag_key_fires(void **state)
{
    struct ty_err err;
    json_t *tags;
    const char *pol =
        "{\"Version\":\"2012-10-17\",\"Statement\":["
        "{\"Effect\":\"Allow\",\"Action\":\"sagemaker:*\",\"Resource\":\"*\"},"
        "{\"Effect\":\"Deny\",\"Action\":\"sagemaker:DescribeTrainingJob\",\"Resource\":\"*\","
        "\"Condition\":{\"StringEquals\":{\"aws:Resource\\u0054ag/team\":\"secret\"}}}]}";
    struct iam_policy *p = NULL;
    (void)state;
    assert_int_equal(iam_policy_parse(pol, strlen(pol), &p, &err), 0);
    assert_true(iam_policy_uses_key(p, "ResourceTag/"));
    assert_false(iam_policy_uses_key(p, "PrincipalTag/"));
    iam_policy_free(p);
    if (!have_redis)
        skip();
    make_user("esc", pol);
    tags = json_pack("[{s:s,s:s}]", "Key", "team", "Value", "secret");
    assert_int_equal(store_tags_add(st,
                                    "arn:aws:sagemaker:us-east-1:000000000000:training-job/esc-j",
                                    tags, &err),
                     0);
    json_decref(tags);
    assert_int_equal(call("esc", "DescribeTrainingJob", "{\"TrainingJobName\":\"esc-j\"}", &err),
                     -TY_EDENIED);
    assert_non_null(strstr(err.msg, "explicit deny"));
    assert_int_equal(call("esc", "DescribeTrainingJob", "{\"TrainingJobName\":\"other\"}", &err),
                     0);
}

/* Studio operations carry AWS's SageMaker keys of their settings (issue 37): a Deny on an
   instance type, image, security group, sharing key or network access of a domain, a profile
   or an app fires; before, those keys were never set and such policies were refused. */
static void test_studio_keys(void **state)
{
    struct ty_err err;
    const char *pol =
        "{\"Version\":\"2012-10-17\",\"Statement\":["
        "{\"Effect\":\"Allow\",\"Action\":\"sagemaker:*\",\"Resource\":\"*\"},"
        "{\"Effect\":\"Deny\",\"Action\":\"sagemaker:*\",\"Resource\":\"*\",\"Condition\":"
        "{\"ForAnyValue:StringLike\":{\"sagemaker:InstanceTypes\":\"ml.p*\"}}},"
        "{\"Effect\":\"Deny\",\"Action\":\"sagemaker:*\",\"Resource\":\"*\",\"Condition\":"
        "{\"ForAnyValue:StringLike\":{\"sagemaker:ImageArns\":\"*:image/evil*\"}}},"
        "{\"Effect\":\"Deny\",\"Action\":\"sagemaker:*\",\"Resource\":\"*\",\"Condition\":"
        "{\"ForAnyValue:StringEquals\":{\"sagemaker:VpcSecurityGroupIds\":\"sg-open\"}}},"
        "{\"Effect\":\"Deny\",\"Action\":\"sagemaker:CreateDomain\",\"Resource\":\"*\","
        "\"Condition\":{\"StringEquals\":{\"sagemaker:AppNetworkAccess\":"
        "\"PublicInternetOnly\"}}},"
        "{\"Effect\":\"Deny\",\"Action\":[\"sagemaker:CreateDomain\","
        "\"sagemaker:UpdateDomain\"],\"Resource\":\"*\","
        "\"Condition\":{\"Null\":{\"sagemaker:DomainSharingOutputKmsKey\":\"true\"}}}]}";
    const char *kms = "\"SharingSettings\":{\"S3KmsKeyId\":\"k1\"}";
    char in[1024];
    (void)state;
    if (!have_redis)
        skip();
    make_user("studio", pol);
    /* CreateDomain: network access defaults to PublicInternetOnly, as it is stored */
    snprintf(in, sizeof(in), "{\"DomainName\":\"d\",\"DefaultUserSettings\":{%s}}", kms);
    assert_int_equal(call("studio", "CreateDomain", in, &err), -TY_EDENIED);
    snprintf(in, sizeof(in),
             "{\"DomainName\":\"d\",\"AppNetworkAccessType\":\"VpcOnly\","
             "\"DefaultUserSettings\":{%s}}",
             kms);
    assert_int_equal(call("studio", "CreateDomain", in, &err), 0);
    assert_int_equal(call("studio", "CreateDomain",
                          "{\"DomainName\":\"d\",\"AppNetworkAccessType\":\"VpcOnly\","
                          "\"DefaultUserSettings\":{}}",
                          &err),
                     -TY_EDENIED);
    /* a default app type, a custom image (as its ARN), a security group of the space */
    snprintf(in, sizeof(in),
             "{\"DomainId\":\"d-1\",\"DefaultUserSettings\":{%s,\"JupyterServerAppSettings\":"
             "{\"DefaultResourceSpec\":{\"InstanceType\":\"ml.p3.2xlarge\"}}}}",
             kms);
    assert_int_equal(call("studio", "UpdateDomain", in, &err), -TY_EDENIED);
    snprintf(in, sizeof(in),
             "{\"DomainId\":\"d-1\",\"DefaultUserSettings\":{%s,\"KernelGatewayAppSettings\":"
             "{\"CustomImages\":[{\"ImageName\":\"evil-img\"}]}}}",
             kms);
    assert_int_equal(call("studio", "UpdateDomain", in, &err), -TY_EDENIED);
    snprintf(in, sizeof(in),
             "{\"DomainId\":\"d-1\",\"DefaultUserSettings\":{%s},"
             "\"DefaultSpaceSettings\":{\"SecurityGroups\":[\"sg-a\",\"sg-open\"]}}",
             kms);
    assert_int_equal(call("studio", "UpdateDomain", in, &err), -TY_EDENIED);
    snprintf(in, sizeof(in),
             "{\"DomainId\":\"d-1\",\"DefaultUserSettings\":{%s,\"SecurityGroups\":[\"sg-a\"],"
             "\"JupyterServerAppSettings\":{\"DefaultResourceSpec\":{\"InstanceType\":"
             "\"ml.t3.medium\"}}}}",
             kms);
    assert_int_equal(call("studio", "UpdateDomain", in, &err), 0);
    /* profiles and apps */
    assert_int_equal(call("studio", "CreateUserProfile",
                          "{\"DomainId\":\"d-1\",\"UserProfileName\":\"u\",\"UserSettings\":"
                          "{\"KernelGatewayAppSettings\":{\"DefaultResourceSpec\":"
                          "{\"InstanceType\":\"ml.p4d.24xlarge\"}}}}",
                          &err),
                     -TY_EDENIED);
    assert_int_equal(call("studio", "CreateUserProfile",
                          "{\"DomainId\":\"d-1\",\"UserProfileName\":\"u\",\"UserSettings\":{}}",
                          &err),
                     0);
    assert_int_equal(call("studio", "CreateApp",
                          "{\"DomainId\":\"d-1\",\"UserProfileName\":\"u\",\"AppType\":"
                          "\"JupyterServer\",\"AppName\":\"default\",\"ResourceSpec\":"
                          "{\"InstanceType\":\"system\",\"SageMakerImageArn\":"
                          "\"arn:aws:sagemaker:us-east-1:000000000000:image/evil-2\"}}",
                          &err),
                     -TY_EDENIED);
    assert_int_equal(call("studio", "CreateApp",
                          "{\"DomainId\":\"d-1\",\"UserProfileName\":\"u\",\"AppType\":"
                          "\"JupyterServer\",\"AppName\":\"default\",\"ResourceSpec\":"
                          "{\"InstanceType\":\"system\"}}",
                          &err),
                     0);
    assert_true(authz_key_provided("sagemaker:ImageVersionArns"));
    assert_true(authz_key_provided("sagemaker:HomeEfsFileSystemKmsKey"));
    assert_false(authz_key_provided("sagemaker:AppNetworkAccessType"));
}

static void test_cache_follows_changes(void **state)
{
    struct ty_err err;
    const char *allow = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
                        "\"Action\":\"sagemaker:List*\",\"Resource\":\"*\"}]}";
    struct store_iam_user u;
    (void)state;
    if (!have_redis)
        skip();
    make_user("dave", NULL);
    for (int i = 0; i < 2; i++)
        assert_int_equal(call("dave", "ListTrainingJobs", "{}", &err), -TY_EDENIED);
    assert_int_equal(
        store_iam_policy_put(st, "dave", "p", allow, strlen(allow), strlen(allow), 2048, &err), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(call("dave", "ListTrainingJobs", "{}", &err), 0);
    assert_int_equal(store_iam_policy_delete(st, "dave", "p", &err), 0);
    assert_int_equal(call("dave", "ListTrainingJobs", "{}", &err), -TY_EDENIED);
    assert_int_equal(
        store_iam_policy_put(st, "dave", "p", allow, strlen(allow), strlen(allow), 2048, &err), 0);
    assert_int_equal(call("dave", "ListTrainingJobs", "{}", &err), 0);
    /* deleted and re-created without the policy: a new id, nothing cached applies */
    assert_int_equal(store_iam_user_delete(st, "dave", &err), -TY_ECONFLICT);
    assert_string_equal(err.msg, "policies");
    assert_int_equal(store_iam_policy_delete(st, "dave", "p", &err), 0);
    assert_int_equal(store_iam_user_delete(st, "dave", &err), 0);
    assert_int_equal(store_iam_user_get(st, "dave", &u, NULL, &err), -TY_ENOTFOUND);
    assert_int_equal(call("dave", "ListTrainingJobs", "{}", &err), -TY_EDENIED);
}

static void test_authz_check_hook(void **state)
{
    struct ty_err err;
    const char *s3pol = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
                        "\"Action\":\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::b\","
                        "\"Condition\":{\"StringLike\":{\"s3:prefix\":\"${aws:username}/*\"}}}]}";
    struct iam_ctx_entry ctx[2] = {{"s3:prefix", NULL, 0, "erin/data"},
                                   {"aws:username", NULL, 0, "someone-else"}};
    (void)state;
    if (!have_redis)
        skip();
    make_user("erin", s3pol);
    assert_int_equal(authz_check(st, "arn:aws:iam::000000000000:user/erin", "s3:ListBucket",
                                 "arn:aws:s3:::b", ctx, 2, &err),
                     0);
    ctx[0].value = "other/data";
    assert_int_equal(authz_check(st, "arn:aws:iam::000000000000:user/erin", "s3:ListBucket",
                                 "arn:aws:s3:::b", ctx, 1, &err),
                     -TY_EDENIED);
    assert_int_equal(err.code, TY_EDENIED);
}

static void test_store_iam(void **state)
{
    struct ty_err err;
    struct store_iam_user u;
    json_t *tags = NULL, *list, *keys;
    char *doc;
    (void)state;
    if (!have_redis)
        skip();
    make_user("Frank", NULL);
    memset(&u, 0, sizeof(u));
    snprintf(u.name, sizeof(u.name), "FRANK");
    snprintf(u.id, sizeof(u.id), "AIDAX");
    assert_int_equal(store_iam_user_create(st, &u, NULL, &err), -TY_EINUSE);
    assert_int_equal(store_iam_user_get(st, "frank", &u, &tags, &err), 0);
    assert_string_equal(u.name, "Frank");
    assert_int_equal(json_array_size(tags), 1);
    json_decref(tags);
    assert_int_equal(store_iam_policy_put(st, "frank", "a", "{}", 2, 1500, 2048, &err), 0);
    assert_int_equal(store_iam_policy_put(st, "frank", "b", "{}", 2, 600, 2048, &err), -TY_ELIMIT);
    assert_int_equal(store_iam_policy_put(st, "frank", "a", "{}", 2, 2000, 2048, &err), 0);
    doc = store_iam_policy_get(st, "frank", "a", &err);
    assert_string_equal(doc, "{}");
    free(doc);
    assert_null(store_iam_policy_get(st, "frank", "zz", &err));
    assert_string_equal(err.msg, "policy");
    list = store_iam_policy_list(st, "frank", &err);
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);
    assert_int_equal(store_iam_key_create(st, "frank", "AKIA1", 1.0, 2, &err), 0);
    assert_int_equal(store_iam_key_create(st, "frank", "AKIA2", 1.0, 2, &err), 0);
    assert_int_equal(store_iam_key_create(st, "frank", "AKIA3", 1.0, 2, &err), -TY_ELIMIT);
    keys = store_iam_key_list(st, "frank", &err);
    assert_int_equal(json_array_size(keys), 2);
    json_decref(keys);
    assert_int_equal(store_iam_key_delete(st, "frank", "AKIA9", &err), -TY_ENOTFOUND);
    assert_string_equal(err.msg, "key");
    assert_int_equal(store_iam_user_delete(st, "frank", &err), -TY_ECONFLICT);
    assert_string_equal(err.msg, "keys");
    /* hostile names never build a key */
    assert_int_equal(store_iam_user_get(st, "a:b", &u, NULL, &err), -TY_ENOTFOUND);
    assert_int_equal(store_iam_user_get(st, "", &u, NULL, &err), -TY_ENOTFOUND);
    list = store_iam_user_list(st, &err);
    assert_int_equal(json_array_size(list), 1);
    json_decref(list);
    /* the admin bootstrap is idempotent */
    assert_int_equal(store_iam_bootstrap_admin(st, "000000000000", "AKIAADMIN", 1.0, &err), 0);
    assert_int_equal(store_iam_bootstrap_admin(st, "000000000000", "AKIAADMIN", 2.0, &err), 0);
    assert_int_equal(call("admin", "DeleteTrainingJob", "{\"TrainingJobName\":\"x\"}", &err), 0);
}

/* ---- roles, PassRole, job-role access, inactive keys ---- */

static const char *const TRUST_SM =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"Service\":"
    "\"sagemaker.amazonaws.com\"},\"Action\":\"sts:AssumeRole\"}]}";
static const char *const TRUST_EC2 =
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"Service\":"
    "[\"ec2.amazonaws.com\"]},\"Action\":\"sts:AssumeRole\"}]}";

static void make_role(const char *name, const char *trust, const char *policy)
{
    struct store_iam_role r;
    struct ty_err err;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", name);
    snprintf(r.id, sizeof(r.id), "AROATEST%s", name);
    snprintf(r.path, sizeof(r.path), "/");
    snprintf(r.arn, sizeof(r.arn), "arn:aws:iam::000000000000:role/%s", name);
    r.max_session = 3600;
    r.created = 1.0;
    assert_int_equal(store_iam_role_create(st, &r, trust, NULL, &err), 0);
    if (policy)
        assert_int_equal(store_iam_role_policy_put(st, name, "p", policy, strlen(policy),
                                                   strlen(policy), 10240, &err),
                         0);
}

static void test_trust_policies(void **state)
{
    struct ty_err err;
    int ok = -1;
    (void)state;
    assert_int_equal(iam_trust_check(TRUST_SM, strlen(TRUST_SM), "sagemaker.amazonaws.com", NULL,
                                     NULL, 0, &ok, &err),
                     0);
    assert_int_equal(ok, 1);
    assert_int_equal(iam_trust_check(TRUST_EC2, strlen(TRUST_EC2), "sagemaker.amazonaws.com", NULL,
                                     NULL, 0, &ok, &err),
                     0);
    assert_int_equal(ok, 0);
    {
        const char *noprin = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
                             "\"Action\":\"sts:AssumeRole\"}]}";
        assert_int_equal(iam_trust_check(noprin, strlen(noprin), NULL, NULL, NULL, 0, NULL, &err),
                         -TY_EMALFORMED);
        assert_string_equal(err.msg, "Missing required field Principal");
    }
    {
        const char *res = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
                          "\"Principal\":\"*\",\"Action\":\"sts:AssumeRole\",\"Resource\":\"*\"}]}";
        assert_int_equal(iam_trust_check(res, strlen(res), NULL, NULL, NULL, 0, NULL, &err),
                         -TY_EMALFORMED);
        assert_string_equal(err.msg, "Has prohibited field Resource");
    }
    {
        const char *deny = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
                           "\"Principal\":\"*\",\"Action\":\"sts:*\"},{\"Effect\":\"Deny\","
                           "\"Principal\":{\"Service\":\"sagemaker.amazonaws.com\"},"
                           "\"Action\":\"sts:AssumeRole\"}]}";
        assert_int_equal(iam_trust_check(deny, strlen(deny), "sagemaker.amazonaws.com", NULL, NULL,
                                         0, &ok, &err),
                         0);
        assert_int_equal(ok, 0);
        assert_int_equal(
            iam_trust_check(deny, strlen(deny), "ec2.amazonaws.com", NULL, NULL, 0, &ok, &err), 0);
        assert_int_equal(ok, 1);
    }
    assert_int_equal(iam_trust_check("{", 1, NULL, NULL, NULL, 0, NULL, &err), -TY_EMALFORMED);
    assert_string_equal(err.msg, "Syntax errors in policy.");
}

static void test_roles_and_pass_role(void **state)
{
    struct ty_err err;
    struct store_iam_role r;
    char *trust = NULL;
    json_t *list;
    const char *pass = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
                       "\"Action\":\"iam:PassRole\",\"Resource\":"
                       "\"arn:aws:iam::000000000000:role/ok\",\"Condition\":{\"StringEquals\":"
                       "{\"iam:PassedToService\":\"sagemaker.amazonaws.com\"}}}]}";
    const char *all = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
                      "\"Action\":\"iam:PassRole\",\"Resource\":\"*\"}]}";
    (void)state;
    if (!have_redis)
        skip();
    make_role("ok", TRUST_SM, NULL);
    make_role("ec2only", TRUST_EC2, NULL);
    assert_int_equal(store_iam_role_get(st, "OK", &r, &trust, NULL, &err), 0);
    assert_string_equal(r.arn, "arn:aws:iam::000000000000:role/ok");
    assert_string_equal(trust, TRUST_SM);
    free(trust);
    list = store_iam_role_list(st, &err);
    assert_int_equal(json_array_size(list), 2);
    json_decref(list);
    assert_int_equal(store_iam_bootstrap_role(st, "000000000000", 2.0, &err), 0);
    assert_int_equal(store_iam_bootstrap_role(st, "000000000000", 3.0, &err), 0); /* idempotent */
    assert_int_equal(store_iam_role_get(st, "trainyard", &r, NULL, NULL, &err), 0);
    assert_string_equal(r.arn, "arn:aws:iam::000000000000:role/trainyard");
    assert_int_equal(store_iam_role_delete(st, "trainyard", &err), -TY_ECONFLICT);

    make_user("pat", pass);
    make_user("any", all);
    make_user("none", NULL);
    assert_int_equal(authz_pass_role(st, "arn:aws:iam::000000000000:user/pat",
                                     "arn:aws:iam::000000000000:role/ok", "000000000000", &err),
                     0);
    assert_int_equal(authz_pass_role(st, "arn:aws:iam::000000000000:user/none",
                                     "arn:aws:iam::000000000000:role/ok", "000000000000", &err),
                     -TY_EDENIED);
    assert_non_null(strstr(err.msg, "User: arn:aws:iam::000000000000:user/none is not authorized "
                                    "to perform: iam:PassRole on resource: "
                                    "arn:aws:iam::000000000000:role/ok"));
    assert_int_equal(authz_pass_role(st, "arn:aws:iam::000000000000:user/pat",
                                     "arn:aws:iam::000000000000:role/ec2only", "000000000000",
                                     &err),
                     -TY_EDENIED);
    assert_int_equal(authz_pass_role(st, "arn:aws:iam::000000000000:user/any",
                                     "arn:aws:iam::000000000000:role/ec2only", "000000000000",
                                     &err),
                     -TY_EINVAL);
    assert_string_equal(err.msg,
                        "Could not assume role arn:aws:iam::000000000000:role/ec2only. Please "
                        "ensure that the role exists and allows principal "
                        "'sagemaker.amazonaws.com' to assume the role.");
    assert_int_equal(authz_pass_role(st, "arn:aws:iam::000000000000:user/any",
                                     "arn:aws:iam::000000000000:role/missing", "000000000000",
                                     &err),
                     -TY_EINVAL);
    assert_int_equal(authz_pass_role(st, "arn:aws:iam::000000000000:user/any",
                                     "arn:aws:iam::111111111111:role/ok", "000000000000", &err),
                     -TY_EINVAL);
}

static void test_role_principals_and_access(void **state)
{
    struct ty_err err;
    const char *pol = "{\"Version\":\"2012-10-17\",\"Statement\":["
                      "{\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\",\"s3:PutObject\"],"
                      "\"Resource\":\"arn:aws:s3:::mine/*\"},"
                      "{\"Effect\":\"Allow\",\"Action\":\"s3:ListBucket\",\"Resource\":"
                      "\"arn:aws:s3:::mine\",\"Condition\":{\"StringLike\":{\"s3:prefix\":"
                      "\"data/*\"}}},"
                      "{\"Effect\":\"Allow\",\"Action\":\"sagemaker:ListTrainingJobs\","
                      "\"Resource\":\"*\",\"Condition\":{\"StringEquals\":{\"aws:userid\":"
                      "\"AROATESTlim:sess1\",\"aws:PrincipalArn\":"
                      "\"arn:aws:iam::000000000000:role/lim\"},\"Null\":{\"aws:username\":"
                      "\"true\"}}}]}";
    const char *role = "arn:aws:iam::000000000000:role/lim";
    (void)state;
    if (!have_redis)
        skip();
    make_role("lim", TRUST_SM, pol);
    assert_int_equal(authz_s3_check(st, role, "s3:GetObject", "mine", "data/a.csv", &err), 0);
    assert_int_equal(authz_s3_check(st, role, "s3:ListBucket", "mine", "data/x", &err), 0);
    assert_int_equal(authz_s3_check(st, role, "s3:ListBucket", "mine", "other/", &err),
                     -TY_EDENIED);
    assert_int_equal(authz_s3_check(st, role, "s3:GetObject", "admin", "secret.csv", &err),
                     -TY_EDENIED);
    assert_string_equal(err.msg,
                        "ClientError: Access Denied (403) for s3://admin/secret.csv: the role "
                        "arn:aws:iam::000000000000:role/lim is not authorized to perform "
                        "s3:GetObject on arn:aws:s3:::admin/secret.csv");
    assert_int_equal(authz_s3_check(st, role, "s3:PutObject", "admin", "out/model.tar.gz", &err),
                     -TY_EDENIED);
    assert_int_equal(authz_s3_check(st, "", "s3:GetObject", "mine", "data/a.csv", &err),
                     -TY_EDENIED);
    assert_int_equal(authz_s3_check(st, "arn:aws:iam::000000000000:role/nope", "s3:GetObject",
                                    "mine", "data/a.csv", &err),
                     -TY_EDENIED);
    /* the assumed-role form has the role's policies, with aws:userid <RoleId>:<session>; a
       session with no grant recorded is denied whatever the role allows (fail closed) */
    json_t *empty = json_object(); /* authz_request borrows its input */
    assert_int_equal(authz_request(st, "sagemaker", "ListTrainingJobs", empty,
                                   "arn:aws:sts::000000000000:assumed-role/lim/sess1", "us-east-1",
                                   "000000000000", &err),
                     -TY_EDENIED);
    {
        char tok[SESSION_TOKEN_LEN];
        assert_int_equal(session_job_grant(st, "sess1", role, NULL, 600, tok, sizeof(tok), &err),
                         0);
    }
    assert_int_equal(authz_request(st, "sagemaker", "ListTrainingJobs", empty,
                                   "arn:aws:sts::000000000000:assumed-role/lim/sess1", "us-east-1",
                                   "000000000000", &err),
                     0);
    assert_int_equal(authz_request(st, "sagemaker", "ListTrainingJobs", empty,
                                   "arn:aws:sts::000000000000:assumed-role/lim/other", "us-east-1",
                                   "000000000000", &err),
                     -TY_EDENIED);
    json_decref(empty);
    assert_int_equal(authz_check(st, "arn:aws:sts::111111111111:assumed-role/lim/sess1",
                                 "s3:GetObject", "arn:aws:s3:::mine/data/a", NULL, 0, &err),
                     -TY_EDENIED);
    /* a policy change reaches the cache */
    assert_int_equal(store_iam_role_policy_delete(st, "lim", "p", &err), 0);
    assert_int_equal(authz_s3_check(st, role, "s3:GetObject", "mine", "data/a.csv", &err),
                     -TY_EDENIED);
}

/* A job's session policy (jobpolicy.h, granted as the agent does) limits its credentials to
   what the job owns, on top of the role's policies; a Deny in a session policy denies. */
static void test_session_policy(void **state)
{
    const char *pol = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
                      "\"Action\":[\"s3:*\",\"logs:*\"],\"Resource\":\"*\"}]}";
    const char *role = "arn:aws:iam::000000000000:role/wide";
    const char *who = "arn:aws:sts::000000000000:assumed-role/wide/sp-job";
    const char *doc = "{\"TrainingJobName\":\"sp-job\",\"RoleArn\":"
                      "\"arn:aws:iam::000000000000:role/wide\",\"AlgorithmSpecification\":{"
                      "\"TrainingImage\":\"x\",\"TrainingInputMode\":\"File\"},"
                      "\"ResourceConfig\":{\"InstanceType\":\"ml.m5.large\",\"InstanceCount\":1,"
                      "\"VolumeSizeInGB\":1},\"StoppingCondition\":{\"MaxRuntimeInSeconds\":60},"
                      "\"InputDataConfig\":[{\"ChannelName\":\"train\",\"DataSource\":{"
                      "\"S3DataSource\":{\"S3DataType\":\"S3Prefix\",\"S3Uri\":"
                      "\"s3://alice/data/tr*in\"}}}],\"HyperParameters\":{"
                      "\"sagemaker_submit_directory\":\"\\\"s3://alice/code/src.tar.gz\\\"\"},"
                      "\"OutputDataConfig\":{\"S3OutputPath\":\"s3://alice/out/\"}}";
    struct iam_ctx_entry pre[] = {{"s3:prefix", NULL, 0, "data/tr*in/x"}};
    struct iam_ctx_entry wide[] = {{"s3:prefix", NULL, 0, "data/"}};
    struct iam_ctx_entry star[] = {{"s3:prefix", NULL, 0, "data/trXin"}};
    char tok[SESSION_TOKEN_LEN], *text = NULL;
    struct ty_err err;
    struct spec sp;
    json_t *d;
    (void)state;
    if (!have_redis)
        skip();
    make_role("wide", TRUST_SM, pol);
    memset(&sp, 0, sizeof(sp));
    d = json_loads(doc, 0, NULL);
    assert_non_null(d);
    assert_int_equal(spec_parse(d, &sp, &err), 0);
    json_decref(d);
    assert_false(jobpolicy_scoped(role));
    assert_true(jobpolicy_scoped("arn:aws:iam::000000000000:role/trainyard"));
    assert_false(jobpolicy_scoped("arn:aws:iam::000000000000:role/x/trainyard"));
    assert_false(jobpolicy_scoped("arn:aws:iam::000000000000:role/nottrainyard"));
    assert_int_equal(jobpolicy_build(&sp, &text, &err), 0);
    assert_int_equal(session_job_grant(st, "sp-job", role, text, 600, tok, sizeof(tok), &err), 0);
#define CHECK(action, res, ctx, n, want)                                                           \
    assert_int_equal(authz_check(st, who, action, res, ctx, n, &err), want)
    /* its own: channel (the '*' of its name is a letter, not a wildcard), code, output */
    CHECK("s3:GetObject", "arn:aws:s3:::alice/data/tr*in/part-0", NULL, 0, 0);
    CHECK("s3:GetObject", "arn:aws:s3:::alice/data/trXin/part-0", NULL, 0, -TY_EDENIED);
    CHECK("s3:GetObject", "arn:aws:s3:::alice/code/src.tar.gz", NULL, 0, 0);
    CHECK("s3:PutObject", "arn:aws:s3:::alice/out/sp-job/output/model.tar.gz", NULL, 0, 0);
    CHECK("s3:ListBucket", "arn:aws:s3:::alice", pre, 1, 0);
    CHECK("logs:PutLogEvents",
          "arn:aws:logs:us-east-1:000000000000:log-group:/aws/sagemaker/TrainingJobs:log-stream:"
          "sp-job/algo-1-1",
          NULL, 0, 0);
    /* not its own: the role allows it, the session does not */
    CHECK("s3:ListBucket", "arn:aws:s3:::alice", wide, 1, -TY_EDENIED);
    CHECK("s3:ListBucket", "arn:aws:s3:::alice", star, 1, -TY_EDENIED);
    CHECK("s3:ListBucket", "arn:aws:s3:::alice", NULL, 0, -TY_EDENIED);
    CHECK("s3:GetObject", "arn:aws:s3:::bob/secret.txt", NULL, 0, -TY_EDENIED);
    assert_non_null(strstr(err.msg, "because no session policy allows the s3:GetObject action"));
    CHECK("s3:PutObject", "arn:aws:s3:::alice/out/other-job/output/model.tar.gz", NULL, 0,
          -TY_EDENIED);
    CHECK("s3:PutObject", "arn:aws:s3:::alice/code/src.tar.gz", NULL, 0, -TY_EDENIED);
    CHECK("s3:DeleteObject", "arn:aws:s3:::alice/out/sp-job/output/model.tar.gz", NULL, 0,
          -TY_EDENIED);
    CHECK("logs:PutLogEvents",
          "arn:aws:logs:us-east-1:000000000000:log-group:/aws/sagemaker/TrainingJobs:log-stream:"
          "other-job/algo-1-1",
          NULL, 0, -TY_EDENIED);
    /* the role still bounds the session: what the role does not allow stays denied */
    CHECK("sagemaker:ListTrainingJobs", "*", NULL, 0, -TY_EDENIED);
    free(text);
    /* an explicit Deny in a session policy */
    assert_int_equal(session_job_grant(st, "sp-job", role,
                                       "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":"
                                       "\"Allow\",\"Action\":\"s3:*\",\"Resource\":\"*\"},{"
                                       "\"Effect\":\"Deny\",\"Action\":\"s3:GetObject\","
                                       "\"Resource\":\"arn:aws:s3:::bob/*\"}]}",
                                       600, tok, sizeof(tok), &err),
                     0);
    CHECK("s3:GetObject", "arn:aws:s3:::bob/secret.txt", NULL, 0, -TY_EDENIED);
    assert_non_null(strstr(err.msg, "with an explicit deny in a session policy"));
    CHECK("s3:GetObject", "arn:aws:s3:::carol/x", NULL, 0, 0);
    /* revoked: nothing of the session is left, so its credentials are denied */
    assert_int_equal(session_job_revoke(st, "sp-job", &err), 0);
    CHECK("s3:GetObject", "arn:aws:s3:::carol/x", NULL, 0, -TY_EDENIED);
#undef CHECK
    spec_cleanup(&sp);
}

static void test_inactive_key(void **state)
{
    struct ty_err err;
    char secret[64], arn[128];
    json_t *keys;
    (void)state;
    if (!have_redis)
        skip();
    make_user("kim", NULL);
    assert_int_equal(store_iam_key_create(st, "kim", "AKIAKIMKIMKIMKIM0001", 5.0, 2, &err), 0);
    assert_int_equal(store_principal_put(st, "AKIAKIMKIMKIMKIM0001", "s3cr3t",
                                         "arn:aws:iam::000000000000:user/kim", "kim", &err),
                     0);
    assert_int_equal(store_principal_get(st, "AKIAKIMKIMKIMKIM0001", secret, sizeof(secret), arn,
                                         sizeof(arn), &err),
                     0);
    assert_int_equal(store_iam_key_update(st, "kim", "AKIAKIMKIMKIMKIM0001", "Inactive", &err), 0);
    assert_int_equal(store_principal_get(st, "AKIAKIMKIMKIMKIM0001", secret, sizeof(secret), arn,
                                         sizeof(arn), &err),
                     -TY_ENOTFOUND);
    keys = store_iam_key_list(st, "kim", &err);
    assert_string_equal(json_string_value(json_object_get(json_array_get(keys, 0), "Status")),
                        "Inactive");
    assert_true(json_number_value(json_object_get(json_array_get(keys, 0), "CreateDate")) == 5.0);
    json_decref(keys);
    assert_int_equal(store_iam_key_update(st, "kim", "AKIAKIMKIMKIMKIM0001", "Active", &err), 0);
    assert_int_equal(store_principal_get(st, "AKIAKIMKIMKIMKIM0001", secret, sizeof(secret), arn,
                                         sizeof(arn), &err),
                     0);
    assert_int_equal(store_iam_key_update(st, "kim", "AKIANOSUCHKEY0000000", "Active", &err),
                     -TY_ENOTFOUND);
    assert_string_equal(err.msg, "key");
    assert_int_equal(store_iam_key_update(st, "kim", "AKIAKIMKIMKIMKIM0001", "Maybe", &err),
                     -TY_EINVAL);
}

static void test_quota(void **state)
{
    struct ty_err err;
    struct quota_limits l = {2, 1, 1, 0}, old;
    json_t *doc;
    (void)state;
    if (!have_redis)
        skip();
    quota_get(&old);
    quota_configure(&l);
    assert_int_equal(quota_training_reserve(st, "a", "ml.m5.large", 1, 10.0, &err), 0);
    assert_int_equal(quota_training_reserve(st, "b", "ml.m5.large", 1, 10.0, &err), 0);
    assert_int_equal(quota_training_reserve(st, "c", "ml.m5.large", 1, 10.0, &err), -TY_ELIMIT);
    assert_string_equal(err.msg, "The account-level service limit 'ml.m5.large for training job "
                                 "usage' is 2 Instances, with current utilization of 2 Instances "
                                 "and a request delta of 1 Instances. Please use AWS Service "
                                 "Quotas to request an increase for this quota.");
    assert_int_equal(quota_training_reserve(st, "c", "ml.c5.xlarge", 2, 10.0, &err), 0);
    assert_int_equal(quota_training_reserve(st, "d", "ml.c5.xlarge", 3, 10.0, &err), -TY_ELIMIT);
    quota_training_release(st, "b", "ml.m5.large");
    /* an InProgress job counts with its InstanceCount */
    doc = json_pack("{s:s,s:s,s:{s:s,s:i}}", "TrainingJobName", "b", "TrainingJobStatus",
                    "InProgress", "ResourceConfig", "InstanceType", "ml.m5.large", "InstanceCount",
                    1);
    assert_int_equal(store_job_create(st, "b", doc, 10.0, &err), 0);
    json_decref(doc);
    assert_int_equal(quota_training_reserve(st, "e", "ml.m5.large", 1, 10.0, &err), -TY_ELIMIT);
    quota_training_release(st, "a", "ml.m5.large");
    assert_int_equal(quota_training_reserve(st, "e", "ml.m5.large", 1, 10.0, &err), 0);
    /* reservations expire */
    assert_int_equal(quota_training_reserve(st, "f", "ml.m5.large", 1, 10.0 + 2 * 30, &err), 0);
    /* studio counts: reservations of creates under way count until released or expired, so
       two creates cannot both take the last slot (one app per profile here) */
    assert_int_equal(quota_reserve_profile(st, "d-abc", "d-abc/alice", 10.0, &err), 0);
    assert_int_equal(quota_reserve_profile(st, "d-abc", "d-abc/bob", 10.0, &err), -TY_ELIMIT);
    quota_release_profile(st, "d-abc", "d-abc/alice");
    assert_int_equal(quota_reserve_profile(st, "d-abc", "d-abc/bob", 10.0, &err), 0);
    assert_int_equal(quota_reserve_app(st, "d-abc/alice", "app-1", 10.0, &err), 0);
    assert_int_equal(quota_reserve_app(st, "d-abc/alice", "app-1", 10.0, &err), 0); /* itself */
    assert_int_equal(quota_reserve_app(st, "d-abc/alice", "app-2", 10.0, &err), -TY_ELIMIT);
    assert_non_null(strstr(err.msg, "'Maximum number of apps per user profile' is 1 Apps"));
    quota_release_app(st, "d-abc/alice", "app-1");
    assert_int_equal(quota_reserve_app(st, "d-abc/alice", "app-2", 10.0, &err), 0);
    assert_int_equal(quota_reserve_app(st, "d-abc/alice", "app-3", 10.0 + 2 * 30, &err), 0);
    assert_int_equal(quota_reserve_app(st, "bad:id", "app-1", 10.0, &err), -TY_EINVAL);
    quota_configure(&old);
}

/* Per-principal quotas (quota.h): the IAM tag of the user, or of a session's role, else the
   default; every session of a role counts apart; a job counts while InProgress. */
static void test_quota_principal(void **state)
{
    const char *pam = "arn:aws:iam::000000000000:user/pam";
    const char *s1 = "arn:aws:sts::000000000000:assumed-role/Runner/s1";
    const char *s2 = "arn:aws:sts::000000000000:assumed-role/Runner/s2";
    struct quota_limits l = {0, 0, 0, 3}, old;
    struct store_transition done = {.status = "Completed", .secondary = "Completed", .now = 20};
    struct ty_err err;
    json_t *tags, *doc, *d;
    long limit;
    int tagged;
    (void)state;
    if (!have_redis)
        skip();
    quota_get(&old);
    quota_configure(&l);
    make_user("pam", NULL);
    make_role("Runner", TRUST_SM, NULL);
    tags = json_pack("[{s:s,s:s}]", "Key", "Trainyard:Max-Training-Instances", "Value", "2");
    assert_int_equal(quota_principal_tag_check(tags, &err), 0);
    assert_int_equal(store_iam_user_tag(st, "pam", tags, &err), 0);
    json_decref(tags);
    tags = json_pack("[{s:s,s:s}]", "Key", QUOTA_PRINCIPAL_TAG, "Value", "1");
    assert_int_equal(store_iam_role_tag(st, "Runner", tags, &err), 0);
    json_decref(tags);
    /* a value that is no whole number is refused when tagged */
    for (const char *const *v =
             (const char *const[]){"", "-1", "two", "1e3", "2000000", " 2", NULL};
         *v; v++) {
        tags = json_pack("[{s:s,s:s}]", "Key", QUOTA_PRINCIPAL_TAG, "Value", *v);
        assert_int_equal(quota_principal_tag_check(tags, &err), -TY_EINVAL);
        json_decref(tags);
    }
    assert_int_equal(quota_principal_limit(st, pam, &limit, &tagged, &err), 0);
    assert_true(limit == 2 && tagged == 1);
    assert_int_equal(quota_principal_limit(st, s2, &limit, &tagged, &err), 0);
    assert_true(limit == 1 && tagged == 1);
    assert_int_equal(
        quota_principal_limit(st, "arn:aws:iam::000000000000:user/nobody", &limit, &tagged, &err),
        0);
    assert_true(limit == 3 && tagged == 0);
    assert_int_equal(
        quota_principal_limit(st, "arn:aws:iam::000000000000:root", &limit, &tagged, &err), 0);
    assert_int_equal(limit, 0);

    assert_int_equal(quota_principal_reserve(st, "p1", pam, 1, 10.0, &err), 0);
    assert_int_equal(quota_principal_reserve(st, "p2", pam, 1, 10.0, &err), 0);
    assert_int_equal(quota_principal_reserve(st, "p3", pam, 1, 10.0, &err), -TY_ELIMIT);
    assert_string_equal(err.msg,
                        "The principal-level limit 'training instances in progress for "
                        "arn:aws:iam::000000000000:user/pam' is 2 Instances, with current "
                        "utilization of 2 Instances and a request delta of 1 Instances. Ask your "
                        "trainyard administrator to raise it (the IAM tag "
                        "trainyard:max-training-instances on your user or role).");
    /* p1 exists now, with 2 instance groups of 1: it counts 2 while InProgress */
    doc = json_pack("{s:s,s:s,s:s,s:{s:[{s:s,s:i},{s:s,s:i}]}}", "TrainingJobName", "p1",
                    "TrainingJobStatus", "InProgress", "_principal", pam, "ResourceConfig",
                    "InstanceGroups", "InstanceType", "ml.m5.large", "InstanceCount", 1,
                    "InstanceType", "ml.c5.xlarge", "InstanceCount", 1);
    assert_int_equal(store_job_create(st, "p1", doc, 10.0, &err), 0);
    json_decref(doc);
    quota_principal_release(st, "p1");
    quota_principal_release(st, "p2");
    assert_int_equal(quota_principal_reserve(st, "p3", pam, 1, 10.0, &err), -TY_ELIMIT);
    assert_non_null(strstr(err.msg, "current utilization of 2 Instances"));
    d = store_job_transition(st, "p1", &done, &err);
    assert_non_null(d);
    json_decref(d);
    assert_int_equal(quota_principal_reserve(st, "p3", pam, 2, 10.0, &err), 0);
    /* each session of a role is a principal of its own, under its role's tag */
    assert_int_equal(quota_principal_reserve(st, "r1", s1, 1, 10.0, &err), 0);
    assert_int_equal(quota_principal_reserve(st, "r2", s2, 1, 10.0, &err), 0);
    assert_int_equal(quota_principal_reserve(st, "r3", s1, 1, 10.0, &err), -TY_ELIMIT);
    assert_int_equal(quota_principal_reserve(st, "r4", s1, 2, 10.0, &err), -TY_ELIMIT);
    /* reservations expire */
    assert_int_equal(quota_principal_reserve(st, "r3", s1, 1, 10.0 + 2 * 30, &err), 0);
    /* the root has none */
    assert_int_equal(
        quota_principal_reserve(st, "x", "arn:aws:iam::000000000000:root", 99, 10.0, &err), 0);
    quota_configure(&old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_route_op_has_a_row),
        cmocka_unit_test(test_every_api_op_has_a_row),
        cmocka_unit_test(test_table_is_consistent),
        cmocka_unit_test(test_resource_arns),
        cmocka_unit_test(test_resource_too_long),
        cmocka_unit_test(test_form),
        cmocka_unit_test_setup_teardown(test_decisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_follows_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escaped_resource_tag_key_fires, setup, teardown),
        cmocka_unit_test_setup_teardown(test_studio_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_authz_check_hook, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_iam, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quota, setup, teardown),
        cmocka_unit_test(test_trust_policies),
        cmocka_unit_test_setup_teardown(test_quota_principal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roles_and_pass_role, setup, teardown),
        cmocka_unit_test_setup_teardown(test_role_principals_and_access, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inactive_key, setup, teardown),
    };
    int rc = redis_fixture_start(&fx);
    if (rc == 0)
        have_redis = 1;
    else
        fprintf(stderr, "redis-server unavailable: the Redis-backed tests are skipped\n");
    signal(SIGPIPE, SIG_IGN);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (have_redis)
        redis_fixture_stop(&fx);
    return rc;
}
