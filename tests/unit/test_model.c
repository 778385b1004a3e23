/*
 * test_model.c - model.c: loading (embedded, from a directory, broken models), every constraint
 * kind with AWS's exact messages, nested member paths, several errors, unknown members, the body
 * the SageMaker SDK sends, wrong JSON types at every level, and concurrent use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apimodel.h"
#include "ty_err.h"

#define JOB_PATTERN "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"

static struct apimodel *M; /* the embedded model, shared by the tests */

/* The CreateTrainingJob body a plain Estimator sends (reference/sdk-flow.md §1). */
static const char *SDK_BODY =
    "{\"AlgorithmSpecification\":{\"TrainingInputMode\":\"File\",\"TrainingImage\":"
    "\"123456789012.dkr.ecr.us-west-2.amazonaws.com/img:latest\"},"
    "\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b/out\"},\"TrainingJobName\":\"job1\","
    "\"StoppingCondition\":{\"MaxRuntimeInSeconds\":86400},"
    "\"ResourceConfig\":{\"VolumeSizeInGB\":30,\"InstanceCount\":1,\"InstanceType\":\"ml.m5."
    "xlarge\"},"
    "\"RoleArn\":\"arn:aws:iam::123456789012:role/R\","
    "\"InputDataConfig\":[{\"DataSource\":{\"S3DataSource\":{\"S3DataType\":\"S3Prefix\","
    "\"S3Uri\":\"s3://b/train\",\"S3DataDistributionType\":\"FullyReplicated\"}},"
    "\"ChannelName\":\"train\"}],"
    "\"HyperParameters\":{\"epochs\":\"3\",\"lr\":\"0.1\",\"name\":\"abc\","
    "\"sagemaker_program\":\"\\\"train.py\\\"\"},"
    "\"DebugHookConfig\":{\"S3OutputPath\":\"s3://b/out\",\"CollectionConfigurations\":[]},"
    "\"ProfilerConfig\":{\"S3OutputPath\":\"s3://b/out\",\"DisableProfiler\":false}}";

static json_t *parse(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (!j)
        fail_msg("bad test JSON: %s: %s", jerr.text, text);
    return j;
}

static json_t *sdk_body(void)
{
    return parse(SDK_BODY);
}

/* Validates a SageMaker body and returns the rc; err filled. Steals body. */
static int check_sm(const char *op, json_t *body, struct ty_err *err)
{
    int rc;
    ty_err_clear(err);
    rc = apimodel_validate(M, "sagemaker", op, body, err);
    json_decref(body);
    return rc;
}

/* Asserts one validation error with exactly msg (the text after the "N ... detected: "). */
static void expect_one(const char *op, json_t *body, const char *field, const char *msg)
{
    struct ty_err err;
    char want[2048];
    assert_int_equal(check_sm(op, body, &err), -TY_EINVAL);
    assert_int_equal(err.code, TY_EINVAL);
    snprintf(want, sizeof(want), "1 validation error detected: %s", msg);
    assert_string_equal(err.msg, want);
    assert_string_equal(err.field, field);
}

/* The SDK body with path (dot-separated, "InputDataConfig.0.ChannelName") set to value. */
static json_t *sdk_with(const char *path, json_t *value)
{
    json_t *body = sdk_body(), *cur = body;
    char buf[256], *save = NULL, *tok;
    snprintf(buf, sizeof(buf), "%s", path);
    tok = strtok_r(buf, ".", &save);
    while (tok) {
        char *next = strtok_r(NULL, ".", &save);
        if (json_is_array(cur)) {
            size_t i = (size_t)strtoul(tok, NULL, 10);
            if (!next) {
                json_array_set_new(cur, i, value);
                return body;
            }
            cur = json_array_get(cur, i);
        } else {
            if (!next) {
                if (value)
                    json_object_set_new(cur, tok, value);
                else
                    json_object_del(cur, tok);
                return body;
            }
            if (!json_object_get(cur, tok))
                json_object_set_new(cur, tok, json_object());
            cur = json_object_get(cur, tok);
        }
        tok = next;
    }
    return body;
}

static int setup(void **state)
{
    struct ty_err err;
    (void)state;
    M = apimodel_load_embedded(&err);
    if (!M)
        fprintf(stderr, "apimodel_load_embedded: %s\n", err.msg);
    return M ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    apimodel_free(M);
    M = NULL;
    return 0;
}

/* ---------------------------------------------------------------- loading */

static void test_ops(void **state)
{
    static const char *sm[] = {"CreateTrainingJob", "DescribeTrainingJob",
                               "ListTrainingJobs",  "StopTrainingJob",
                               "UpdateTrainingJob", "DeleteTrainingJob",
                               "AddTags",           "ListTags",
                               "DeleteTags",        "CreateDomain",
                               "DescribeDomain",    "ListDomains",
                               "UpdateDomain",      "DeleteDomain",
                               "CreateUserProfile", "DescribeUserProfile",
                               "ListUserProfiles",  "UpdateUserProfile",
                               "DeleteUserProfile", "CreateApp",
                               "DescribeApp",       "ListApps",
                               "DeleteApp",         "CreatePresignedDomainUrl"};
    static const char *logs[] = {"DescribeLogStreams", "GetLogEvents", "FilterLogEvents",
                                 "DescribeLogGroups"};
    struct ty_err err;
    (void)state;
    for (size_t i = 0; i < sizeof(sm) / sizeof(sm[0]); i++)
        assert_true(apimodel_has_op(M, "sagemaker", sm[i]));
    for (size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++)
        assert_true(apimodel_has_op(M, "logs", logs[i]));
    assert_false(apimodel_has_op(M, "sagemaker", "CreateEndpoint"));
    assert_false(apimodel_has_op(M, "logs", "CreateTrainingJob"));
    assert_false(apimodel_has_op(M, "s3", "GetObject"));
    assert_false(apimodel_has_op(NULL, "sagemaker", "CreateTrainingJob"));
    assert_false(apimodel_has_op(M, NULL, "CreateTrainingJob"));
    assert_false(apimodel_has_op(M, "sagemaker", NULL));
    assert_int_equal(check_sm("CreateEndpoint", json_object(), &err), -TY_EUNKNOWNOP);
    assert_int_equal(err.code, TY_EUNKNOWNOP);
}

static void test_load_dir_matches_embedded(void **state)
{
    struct ty_err err, e1, e2;
    struct apimodel *d;
    json_t *body;
    (void)state;
    d = apimodel_load(TY_API_DIR, &err);
    assert_non_null(d);
    assert_true(apimodel_has_op(d, "sagemaker", "DeleteTrainingJob"));
    assert_true(apimodel_has_op(d, "logs", "GetLogEvents"));
    body = sdk_with("TrainingJobName", json_string("bad_name!"));
    assert_int_equal(apimodel_validate(d, "sagemaker", "CreateTrainingJob", body, &e1), -TY_EINVAL);
    assert_int_equal(apimodel_validate(M, "sagemaker", "CreateTrainingJob", body, &e2), -TY_EINVAL);
    assert_string_equal(e1.msg, e2.msg);
    json_decref(body);
    apimodel_free(d);
    apimodel_free(NULL);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void remove_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
}

static struct apimodel *load_one(const char *text, struct ty_err *err)
{
    char dir[] = "/tmp/test_model.XXXXXX";
    struct apimodel *m;
    assert_non_null(mkdtemp(dir));
    write_file(dir, "svc.json", text);
    m = apimodel_load(dir, err);
    remove_file(dir, "svc.json");
    rmdir(dir);
    return m;
}

static void test_load_errors(void **state)
{
    struct ty_err err;
    char dir[] = "/tmp/test_model.XXXXXX";
    (void)state;
    assert_null(apimodel_load("/nonexistent/dir", &err));
    assert_int_equal(err.code, TY_EIO);
    assert_null(apimodel_load(NULL, &err));
    assert_non_null(mkdtemp(dir));
    assert_null(apimodel_load(dir, &err)); /* no *.json */
    assert_int_equal(err.code, TY_EIO);
    rmdir(dir);

    assert_null(load_one("{not json", &err));
    assert_int_equal(err.code, TY_EINTERNAL);
    assert_null(load_one("[]", &err));
    assert_null(load_one("{\"metadata\":{},\"shapes\":{},\"operations\":{}}", &err));
    assert_null(
        load_one("{\"metadata\":{\"signingName\":\"x\"},\"operations\":{},\"shapes\":"
                 "{\"S\":{\"type\":\"structure\",\"members\":{\"A\":{\"shape\":\"Nope\"}}}}}",
                 &err));
    assert_non_null(strstr(err.msg, "unknown shape"));
    assert_null(load_one("{\"metadata\":{\"signingName\":\"x\"},\"operations\":{},\"shapes\":"
                         "{\"S\":{\"type\":\"string\",\"pattern\":\"([a-z\"}}}",
                         &err));
    assert_non_null(strstr(err.msg, "does not compile"));
    assert_null(load_one("{\"metadata\":{\"signingName\":\"x\"},\"operations\":{},\"shapes\":"
                         "{\"L\":{\"type\":\"list\"}}}",
                         &err));
    assert_null(load_one("{\"metadata\":{\"signingName\":\"x\"},\"operations\":{},\"shapes\":"
                         "{\"M\":{\"type\":\"map\",\"key\":{\"shape\":\"M\"}}}}",
                         &err));
    assert_null(load_one("{\"metadata\":{\"signingName\":\"x\"},\"shapes\":{},\"operations\":"
                         "{\"Op\":{\"input\":{\"shape\":\"In\"}}}}",
                         &err));

    /* the same service twice */
    char dir2[] = "/tmp/test_model.XXXXXX";
    assert_non_null(mkdtemp(dir2));
    write_file(dir2, "a.json",
               "{\"metadata\":{\"signingName\":\"x\"},\"shapes\":{},\"operations\":{}}");
    write_file(dir2, "b.json",
               "{\"metadata\":{\"signingName\":\"x\"},\"shapes\":{},\"operations\":{}}");
    assert_null(apimodel_load(dir2, &err));
    assert_non_null(strstr(err.msg, "loaded twice"));
    remove_file(dir2, "a.json");
    remove_file(dir2, "b.json");
    rmdir(dir2);
}

/* ---------------------------------------------------------------- constraints */

static void test_sdk_body_valid(void **state)
{
    struct ty_err err;
    (void)state;
    assert_int_equal(check_sm("CreateTrainingJob", sdk_body(), &err), 0);
    assert_int_equal(err.code, TY_EOK);
    /* what framework estimators and script mode add */
    assert_int_equal(
        check_sm("CreateTrainingJob",
                 sdk_with("AlgorithmSpecification.EnableSageMakerMetricsTimeSeries", json_true()),
                 &err),
        0);
    assert_int_equal(
        check_sm("CreateTrainingJob",
                 sdk_with("ProfilerConfig.ProfilingIntervalInMilliseconds", json_integer(500)),
                 &err),
        0);
    assert_int_equal(
        check_sm(
            "CreateTrainingJob",
            parse(
                "{\"TrainingJobName\":\"j\",\"RoleArn\":\"arn:aws:iam::123456789012:role/R\","
                "\"AlgorithmSpecification\":{\"TrainingInputMode\":\"Pipe\","
                "\"TrainingImage\":\"i\"},\"OutputDataConfig\":{\"S3OutputPath\":\"s3://b\"},"
                "\"ResourceConfig\":{\"VolumeSizeInGB\":1,\"InstanceCount\":2,"
                "\"InstanceType\":\"ml.p3.2xlarge\"},"
                "\"StoppingCondition\":{\"MaxRuntimeInSeconds\":1},"
                "\"Environment\":{\"A_B\":\"line1\\nline2\"},"
                "\"Tags\":[{\"Key\":\"k\",\"Value\":\"\"}],"
                "\"EnableNetworkIsolation\":true,\"RetryStrategy\":{\"MaximumRetryAttempts\":1}}"),
            &err),
        0);
}

static void test_pattern(void **state)
{
    (void)state;
    expect_one("CreateTrainingJob", sdk_with("TrainingJobName", json_string("bad_name!")),
               "trainingJobName",
               "Value 'bad_name!' at 'trainingJobName' failed to satisfy constraint: Member must "
               "satisfy regular expression pattern: " JOB_PATTERN);
    /* the pattern is matched against the whole value, as AWS does */
    expect_one("DescribeTrainingJob", parse("{\"TrainingJobName\":\"job-\"}"), "trainingJobName",
               "Value 'job-' at 'trainingJobName' failed to satisfy constraint: Member must "
               "satisfy regular expression pattern: " JOB_PATTERN);
    expect_one("StopTrainingJob", parse("{\"TrainingJobName\":\"a\\nb\"}"), "trainingJobName",
               "Value 'a\nb' at 'trainingJobName' failed to satisfy constraint: Member must "
               "satisfy regular expression pattern: " JOB_PATTERN);
    /* a Unicode class, and ^...$ patterns */
    struct ty_err err;
    assert_int_equal(
        check_sm(
            "AddTags",
            parse("{\"ResourceArn\":\"arn:aws:sagemaker:us-east-1:123456789012:training-job/j\","
                  "\"Tags\":[{\"Key\":\"\\u00e9t\\u00e9 2024\",\"Value\":\"v@x.y\"}]}"),
            &err),
        0);
    expect_one("CreateTrainingJob",
               sdk_with("RoleArn", json_string("arn:aws:iam::12:role/R-role-x")), "roleArn",
               "Value 'arn:aws:iam::12:role/R-role-x' at 'roleArn' failed to satisfy constraint: "
               "Member must satisfy regular expression pattern: "
               "arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+");
}

static void test_length(void **state)
{
    char name[65];
    char want[512];
    (void)state;
    /* matches the pattern (dashes are free), one character too long */
    memset(name, '-', 64);
    name[0] = 'a';
    name[63] = 'b';
    name[64] = '\0';
    snprintf(want, sizeof(want),
             "Value '%s' at 'trainingJobName' failed to satisfy constraint: Member must have "
             "length less than or equal to 63",
             name);
    expect_one("DescribeTrainingJob", json_pack("{ss}", "TrainingJobName", name), "trainingJobName",
               want);
    name[62] = 'b';
    name[63] = '\0';
    struct ty_err err;
    assert_int_equal(
        check_sm("DescribeTrainingJob", json_pack("{ss}", "TrainingJobName", name), &err), 0);

    /* lengths count characters, not bytes: 63 two-byte characters fit */
    char wide[64 * 2 + 1];
    for (int i = 0; i < 63; i++)
        memcpy(wide + 2 * i, "\xc3\xa9", 2);
    wide[126] = '\0';
    json_t *tags = json_pack("{s:s,s:[{s:s,s:s}]}", "ResourceArn",
                             "arn:aws:sagemaker:us-east-1:123456789012:training-job/j", "Tags",
                             "Key", wide, "Value", "v");
    assert_int_equal(check_sm("AddTags", tags, &err), 0);

    /* min length: the empty name breaks the length and the pattern */
    assert_int_equal(check_sm("DescribeTrainingJob", parse("{\"TrainingJobName\":\"\"}"), &err),
                     -TY_EINVAL);
    assert_string_equal(err.msg,
                        "2 validation errors detected: Value '' at 'trainingJobName' failed to "
                        "satisfy constraint: Member must have length greater than or equal to 1; "
                        "Value '' at 'trainingJobName' failed to satisfy constraint: Member must "
                        "satisfy regular expression pattern: " JOB_PATTERN);
    assert_int_equal(
        check_sm("CreateTrainingJob", sdk_with("RoleArn", json_string("arn:aws:iam::1")), &err),
        -TY_EINVAL);
    assert_string_equal(
        err.msg,
        "2 validation errors detected: Value 'arn:aws:iam::1' at 'roleArn' failed to satisfy "
        "constraint: Member must have "
        "length greater than or equal to 20; Value 'arn:aws:iam::1' at 'roleArn' failed to "
        "satisfy constraint: Member must satisfy regular expression pattern: "
        "arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+");
}

static void test_length_two_errors_prefix(void **state)
{
    /* expect_one's "1 validation error" prefix must not match the case above */
    struct ty_err err;
    (void)state;
    assert_int_equal(
        check_sm("CreateTrainingJob", sdk_with("RoleArn", json_string("arn:aws:iam::1")), &err),
        -TY_EINVAL);
    assert_int_equal(strncmp(err.msg, "2 validation errors detected: ", 30), 0);
}

static void test_range(void **state)
{
    (void)state;
    expect_one("ListTrainingJobs", parse("{\"MaxResults\":101}"), "maxResults",
               "Value '101' at 'maxResults' failed to satisfy constraint: Member must have value "
               "less than or equal to 100");
    expect_one("ListTrainingJobs", parse("{\"MaxResults\":0}"), "maxResults",
               "Value '0' at 'maxResults' failed to satisfy constraint: Member must have value "
               "greater than or equal to 1");
    /* current models: VolumeSizeInGB is optional (OptionalVolumeSizeInGB, min 0) */
    expect_one("CreateTrainingJob", sdk_with("ResourceConfig.VolumeSizeInGB", json_integer(-1)),
               "resourceConfig.volumeSizeInGB",
               "Value '-1' at 'resourceConfig.volumeSizeInGB' failed to satisfy constraint: Member "
               "must have value greater than or equal to 0");
    expect_one("CreateTrainingJob",
               sdk_with("StoppingCondition.MaxRuntimeInSeconds", json_integer(-5)),
               "stoppingCondition.maxRuntimeInSeconds",
               "Value '-5' at 'stoppingCondition.maxRuntimeInSeconds' failed to satisfy "
               "constraint: Member must have value greater than or equal to 1");
    struct ty_err err;
    ty_err_clear(&err);
    json_t *b = parse("{\"logGroupName\":\"/aws/sagemaker/TrainingJobs\","
                      "\"logStreamName\":\"job1/algo-1-1604710358\",\"limit\":10001}");
    assert_int_equal(apimodel_validate(M, "logs", "GetLogEvents", b, &err), -TY_EINVAL);
    assert_string_equal(err.msg, "1 validation error detected: Value '10001' at 'limit' failed to "
                                 "satisfy constraint: Member must have value less than or equal "
                                 "to 10000");
    json_object_set_new(b, "limit", json_integer(10000));
    json_object_set_new(b, "startTime", json_integer(0));
    json_object_set_new(b, "startFromHead", json_true());
    assert_int_equal(apimodel_validate(M, "logs", "GetLogEvents", b, &err), 0);
    json_object_set_new(b, "startTime", json_integer(-1)); /* logs' Timestamp is a long, min 0 */
    assert_int_equal(apimodel_validate(M, "logs", "GetLogEvents", b, &err), -TY_EINVAL);
    assert_string_equal(err.field, "startTime");
    json_decref(b);
}

static void test_enum(void **state)
{
    (void)state;
    expect_one("CreateTrainingJob",
               sdk_with("AlgorithmSpecification.TrainingInputMode", json_string("Bogus")),
               "algorithmSpecification.trainingInputMode",
               "Value 'Bogus' at 'algorithmSpecification.trainingInputMode' failed to satisfy "
               "constraint: Member must satisfy enum value set: [Pipe, File, FastFile]");
    expect_one("ListTrainingJobs", parse("{\"SortOrder\":\"ascending\"}"), "sortOrder",
               "Value 'ascending' at 'sortOrder' failed to satisfy constraint: Member must "
               "satisfy enum value set: [Ascending, Descending]");
}

/* api/ follows a current botocore: instance types AWS added since 2022 validate */
static void test_current_instance_types(void **state)
{
    static const char *const types[] = {"ml.p5.48xlarge", "ml.g6.xlarge", "ml.g6e.12xlarge",
                                        "ml.trn1.32xlarge", "ml.trn1n.32xlarge"};
    struct ty_err err;
    (void)state;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        assert_int_equal(check_sm("CreateTrainingJob",
                                  sdk_with("ResourceConfig.InstanceType", json_string(types[i])),
                                  &err),
                         0);
    assert_int_equal(check_sm("CreateTrainingJob",
                              sdk_with("ResourceConfig.InstanceType", json_string("ml.p99.huge")),
                              &err),
                     -TY_EINVAL);
    assert_string_equal(err.field, "resourceConfig.instanceType");
}

static void test_required(void **state)
{
    (void)state;
    expect_one("CreateTrainingJob", sdk_with("RoleArn", NULL), "roleArn",
               "Value null at 'roleArn' failed to satisfy constraint: Member must not be null");
    /* JSON null is absent */
    expect_one("CreateTrainingJob", sdk_with("RoleArn", json_null()), "roleArn",
               "Value null at 'roleArn' failed to satisfy constraint: Member must not be null");
    expect_one("CreateTrainingJob", sdk_with("OutputDataConfig.S3OutputPath", NULL),
               "outputDataConfig.s3OutputPath",
               "Value null at 'outputDataConfig.s3OutputPath' failed to satisfy constraint: "
               "Member must not be null");
    expect_one("CreateTrainingJob", sdk_with("InputDataConfig.0.ChannelName", NULL),
               "inputDataConfig.1.member.channelName",
               "Value null at 'inputDataConfig.1.member.channelName' failed to satisfy "
               "constraint: Member must not be null");
    /* optional members may be null */
    struct ty_err err;
    assert_int_equal(check_sm("CreateTrainingJob", sdk_with("VpcConfig", json_null()), &err), 0);
}

static void test_nested_list_path(void **state)
{
    json_t *body = sdk_body(), *ch;
    (void)state;
    ch = json_deep_copy(json_array_get(json_object_get(body, "InputDataConfig"), 0));
    json_object_set_new(ch, "ChannelName", json_string("bad name"));
    json_array_append_new(json_object_get(body, "InputDataConfig"), ch);
    expect_one("CreateTrainingJob", body, "inputDataConfig.2.member.channelName",
               "Value 'bad name' at 'inputDataConfig.2.member.channelName' failed to satisfy "
               "constraint: Member must satisfy regular expression pattern: [A-Za-z0-9\\.\\-_]+");
    expect_one("CreateTrainingJob",
               sdk_with("InputDataConfig.0.DataSource.S3DataSource.S3DataType", json_string("x")),
               "inputDataConfig.1.member.dataSource.s3DataSource.s3DataType",
               "Value 'x' at 'inputDataConfig.1.member.dataSource.s3DataSource.s3DataType' failed "
               "to satisfy constraint: Member must satisfy enum value set: [ManifestFile, "
               "S3Prefix, AugmentedManifestFile, Converse]");
}

static void test_list_count_and_scalar_members(void **state)
{
    (void)state;
    expect_one("CreateTrainingJob", sdk_with("InputDataConfig", json_array()), "inputDataConfig",
               "Value '[]' at 'inputDataConfig' failed to satisfy constraint: Member must have "
               "length greater than or equal to 1");
    expect_one("CreateTrainingJob",
               sdk_with("VpcConfig", parse("{\"SecurityGroupIds\":[\"sg-1\"],"
                                           "\"Subnets\":[\"subnet-1\",\"bad_subnet\"]}")),
               "vpcConfig.subnets",
               "Value '[subnet-1, bad_subnet]' at 'vpcConfig.subnets' failed to satisfy "
               "constraint: Member must satisfy constraint: [Member must have length less than or "
               "equal to 32, Member must satisfy regular expression pattern: [-0-9a-zA-Z]+]");
    json_t *many = json_array();
    for (int i = 0; i < 6; i++)
        json_array_append_new(many, json_string("sg-1"));
    expect_one(
        "CreateTrainingJob",
        sdk_with("VpcConfig",
                 json_pack("{s:o,s:[s]}", "SecurityGroupIds", many, "Subnets", "subnet-1")),
        "vpcConfig.securityGroupIds",
        "Value '[sg-1, sg-1, sg-1, sg-1, sg-1, sg-1]' at 'vpcConfig.securityGroupIds' failed "
        "to satisfy constraint: Member must have length less than or equal to 5");
}

static void test_map(void **state)
{
    json_t *hp = json_object();
    char key[16], want[2048];
    (void)state;
    for (int i = 0; i < 101; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        json_object_set_new(hp, key, json_string("v"));
    }
    struct ty_err err;
    assert_int_equal(check_sm("CreateTrainingJob", sdk_with("HyperParameters", hp), &err),
                     -TY_EINVAL);
    assert_string_equal(err.field, "hyperParameters");
    assert_int_equal(strncmp(err.msg, "1 validation error detected: Value '{k0=v, k1=v, ", 48), 0);
    assert_non_null(strstr(err.msg, "}' at 'hyperParameters' failed to satisfy constraint: Member "
                                    "must have length less than or equal to 100"));

    /* values: '.' does not match a newline, and the whole value must match */
    expect_one("CreateTrainingJob", sdk_with("HyperParameters", parse("{\"a\":\"x\\ny\"}")),
               "hyperParameters",
               "Value '{a=x\ny}' at 'hyperParameters' failed to satisfy constraint: Map value must "
               "satisfy constraint: [Member must have length less than or equal to 2500, Member "
               "must satisfy regular expression pattern: .*]");
    /* keys */
    char longkey[258];
    memset(longkey, 'k', 257);
    longkey[257] = '\0';
    snprintf(want, sizeof(want),
             "Value '{%s=v}' at 'hyperParameters' failed to satisfy constraint: Map keys must "
             "satisfy constraint: [Member must have length less than or equal to 256, Member "
             "must satisfy regular expression pattern: .*]",
             longkey);
    expect_one("CreateTrainingJob", sdk_with("HyperParameters", json_pack("{ss}", longkey, "v")),
               "hyperParameters", want);
    /* keys and values at once: keys first */
    assert_int_equal(check_sm("CreateTrainingJob",
                              sdk_with("Environment", parse("{\"1bad\":\"x\",\"ok\":\"y\"}")),
                              &err),
                     -TY_EINVAL);
    assert_string_equal(err.msg, "1 validation error detected: Value '{1bad=x, ok=y}' at "
                                 "'environment' failed to satisfy constraint: Map keys must "
                                 "satisfy constraint: [Member must have length less than or "
                                 "equal to 512, Member must satisfy regular expression pattern: "
                                 "[a-zA-Z_][a-zA-Z0-9_]*]");
}

static void test_multiple_errors(void **state)
{
    json_t *body = sdk_with("RoleArn", NULL);
    struct ty_err err;
    (void)state;
    json_object_set_new(body, "TrainingJobName", json_string("bad_name!"));
    json_object_set_new(json_object_get(body, "ResourceConfig"), "VolumeSizeInGB",
                        json_integer(-1));
    assert_int_equal(check_sm("CreateTrainingJob", body, &err), -TY_EINVAL);
    assert_string_equal(
        err.msg, "3 validation errors detected: Value '-1' at 'resourceConfig.volumeSizeInGB' "
                 "failed to satisfy constraint: Member must have value greater than or equal to "
                 "0; Value null at 'roleArn' failed to satisfy constraint: Member must not be "
                 "null; Value 'bad_name!' at 'trainingJobName' failed to satisfy constraint: "
                 "Member must satisfy regular expression pattern: " JOB_PATTERN);
    assert_string_equal(err.field, "resourceConfig.volumeSizeInGB");

    /* an empty body lacks every required member */
    assert_int_equal(check_sm("CreateTrainingJob", json_object(), &err), -TY_EINVAL);
    assert_int_equal(strncmp(err.msg,
                             "3 validation errors detected: Value null at "
                             "'outputDataConfig' failed",
                             69),
                     0);
}

static void test_unknown_members_ignored(void **state)
{
    json_t *body = sdk_body();
    struct ty_err err;
    (void)state;
    json_object_set_new(body, "NoSuchMember", json_string("x"));
    json_object_set_new(body, "trainingJobName", json_integer(3)); /* case matters */
    json_object_set_new(json_object_get(body, "ResourceConfig"), "Extra", parse("[1,{}]"));
    assert_int_equal(check_sm("CreateTrainingJob", body, &err), 0);
}

/* ---------------------------------------------------------------- types */

static void expect_type(const char *path, json_t *value, const char *field, const char *need)
{
    struct ty_err err;
    char want[1024];
    assert_int_equal(check_sm("CreateTrainingJob", sdk_with(path, value), &err), -TY_EINVAL);
    assert_string_equal(err.field, field);
    snprintf(want, sizeof(want), "failed to satisfy constraint: %s", need);
    if (!strstr(err.msg, want))
        fail_msg("%s: got '%s', want '%s'", path, err.msg, want);
}

static void test_wrong_types(void **state)
{
    struct ty_err err;
    (void)state;
    expect_type("ResourceConfig", json_string("x"), "resourceConfig",
                "Member must be a structure (JSON object)");
    expect_type("ResourceConfig", parse("[]"), "resourceConfig",
                "Member must be a structure (JSON object)");
    expect_type("ResourceConfig.InstanceCount", json_string("1"), "resourceConfig.instanceCount",
                "Member must be an integer between -2147483648 and 2147483647");
    expect_type("ResourceConfig.InstanceCount", json_real(1.5), "resourceConfig.instanceCount",
                "Member must be an integer between -2147483648 and 2147483647");
    expect_type("ResourceConfig.InstanceCount", json_integer(4294967296LL),
                "resourceConfig.instanceCount",
                "Member must be an integer between -2147483648 and 2147483647");
    expect_type("ResourceConfig.InstanceCount", json_true(), "resourceConfig.instanceCount",
                "Member must be an integer between -2147483648 and 2147483647");
    expect_type("ProfilerConfig.ProfilingIntervalInMilliseconds", json_string("5"),
                "profilerConfig.profilingIntervalInMilliseconds", "Member must be an integer");
    expect_type("TrainingJobName", json_integer(7), "trainingJobName", "Member must be a string");
    expect_type("TrainingJobName", parse("{}"), "trainingJobName", "Member must be a string");
    expect_type("EnableNetworkIsolation", json_string("true"), "enableNetworkIsolation",
                "Member must be a boolean");
    expect_type("InputDataConfig", parse("{}"), "inputDataConfig",
                "Member must be a list (JSON array)");
    expect_type("InputDataConfig.0", json_string("train"), "inputDataConfig.1.member",
                "Member must be a structure (JSON object)");
    expect_type("InputDataConfig.0", json_null(), "inputDataConfig.1.member",
                "Member must not be null");
    expect_type("HyperParameters", parse("[]"), "hyperParameters",
                "Member must be a map (JSON object)");
    expect_type("HyperParameters", parse("{\"epochs\":3}"), "hyperParameters.epochs",
                "Member must be a string");
    expect_type("HyperParameters", parse("{\"epochs\":null}"), "hyperParameters.epochs",
                "Member must not be null");
    expect_type("VpcConfig", parse("{\"SecurityGroupIds\":[1],\"Subnets\":[\"s\"]}"),
                "vpcConfig.securityGroupIds.1.member", "Member must be a string");
    expect_type("InputDataConfig.0.DataSource.S3DataSource", json_integer(1),
                "inputDataConfig.1.member.dataSource.s3DataSource",
                "Member must be a structure (JSON object)");
    expect_one("CreateTrainingJob", sdk_with("ResourceConfig.InstanceCount", json_real(2.0)),
               "resourceConfig.instanceCount",
               "Value '2.0' at 'resourceConfig.instanceCount' failed to satisfy constraint: "
               "Member must be an integer between -2147483648 and 2147483647");

    /* the body itself */
    json_t *arr = parse("[1]");
    assert_int_equal(apimodel_validate(M, "sagemaker", "CreateTrainingJob", arr, &err),
                     -TY_ESERIAL);
    json_decref(arr);
    assert_int_equal(apimodel_validate(M, "sagemaker", "CreateTrainingJob", NULL, &err),
                     -TY_ESERIAL);
    /* an operation with no input takes any object */
    assert_int_equal(check_sm("ListDomains", parse("{\"junk\":[1,2]}"), &err), 0);
}

static void test_timestamps(void **state)
{
    struct ty_err err;
    static const char *good[] = {"2024-01-02T03:04:05Z",      "2024-01-02T03:04:05.123Z",
                                 "2024-01-02T03:04:05+01:00", "2024-01-02",
                                 "2024-01-02T03:04Z",         "2024-01-02T03:04:05-0800"};
    static const char *bad[] = {
        "yesterday", "2024-13-01", "2024-01-02T25:00:00Z", "1700000000", "2024-01-02T03:04:05Zjunk",
        ""};
    (void)state;
    assert_int_equal(
        check_sm("ListTrainingJobs", parse("{\"CreationTimeAfter\":1700000000}"), &err), 0);
    assert_int_equal(
        check_sm("ListTrainingJobs", parse("{\"CreationTimeAfter\":1700000000.25}"), &err), 0);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(
            check_sm("ListTrainingJobs", json_pack("{ss}", "CreationTimeBefore", good[i]), &err),
            0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(
            check_sm("ListTrainingJobs", json_pack("{ss}", "CreationTimeBefore", bad[i]), &err),
            -TY_EINVAL);
        assert_string_equal(err.field, "creationTimeBefore");
        assert_non_null(strstr(err.msg, "Member must be a timestamp (epoch seconds or ISO-8601)"));
    }
    assert_int_equal(check_sm("ListTrainingJobs", parse("{\"CreationTimeAfter\":true}"), &err),
                     -TY_EINVAL);
}

/* ---------------------------------------------------------------- a synthetic model */

static const char *SYNTH =
    "{\"metadata\":{\"signingName\":\"synth\"},"
    "\"operations\":{\"Op\":{\"name\":\"Op\",\"input\":{\"shape\":\"In\"}},"
    "\"NoInput\":{\"name\":\"NoInput\"}},"
    "\"shapes\":{"
    "\"In\":{\"type\":\"structure\",\"required\":[\"F\"],\"members\":{"
    "\"F\":{\"shape\":\"Ratio\"},\"D\":{\"shape\":\"Dbl\"},\"B\":{\"shape\":\"Bin\"},"
    "\"L\":{\"shape\":\"Big\"},\"Tree\":{\"shape\":\"Node\"},\"Modes\":{\"shape\":\"ModeList\"},"
    "\"Nested\":{\"shape\":\"StructMap\"},\"Any\":{\"shape\":\"Odd\"}}},"
    "\"Ratio\":{\"type\":\"float\",\"min\":0,\"max\":1},"
    "\"Dbl\":{\"type\":\"double\",\"min\":-0.5,\"max\":2.5},"
    "\"Bin\":{\"type\":\"blob\"},"
    "\"Big\":{\"type\":\"long\",\"min\":0,\"max\":9007199254740993},"
    "\"Node\":{\"type\":\"structure\",\"members\":{\"Name\":{\"shape\":\"Str\"},"
    "\"Kids\":{\"shape\":\"NodeList\"}}},"
    "\"NodeList\":{\"type\":\"list\",\"member\":{\"shape\":\"Node\"},\"max\":3},"
    "\"Str\":{\"type\":\"string\",\"min\":2,\"max\":4},"
    "\"Mode\":{\"type\":\"string\",\"enum\":[\"A\",\"B\",\"C\"]},"
    "\"ModeList\":{\"type\":\"list\",\"member\":{\"shape\":\"Mode\"}},"
    "\"StructMap\":{\"type\":\"map\",\"key\":{\"shape\":\"Mode\"},\"value\":{\"shape\":\"Node\"}},"
    "\"Odd\":{\"type\":\"union-of-things\"}}}";

/* Java-only regex syntax that botocore patterns use, compiled for PCRE2. */
static const char *JAVA =
    "{\"metadata\":{\"signingName\":\"java\"},"
    "\"operations\":{\"Op\":{\"input\":{\"shape\":\"In\"}}},"
    "\"shapes\":{\"In\":{\"type\":\"structure\",\"members\":{"
    "\"Arn\":{\"shape\":\"Arn\"},\"Text\":{\"shape\":\"Text\"},\"NoDigits\":{\"shape\":\"ND\"}}},"
    "\"Arn\":{\"type\":\"string\",\"pattern\":\"arn:[\\\\p{Alnum}\\\\-]+:lambda:\\\\p{Alpha}+\"},"
    "\"Text\":{\"type\":\"string\",\"pattern\":"
    "\"[\\\\u0020-\\\\uD7FF\\\\uE000-\\\\uFFFD\\\\uD800\\\\uDC00-\\\\uDBFF\\\\uDFFF\\\\t]*\"},"
    "\"ND\":{\"type\":\"string\",\"pattern\":\"\\\\P{Digit}+\"}}}";

static void test_java_patterns(void **state)
{
    struct ty_err err;
    struct apimodel *m = load_one(JAVA, &err);
    json_t *b;
    (void)state;
    if (!m)
        fail_msg("%s", err.msg);
#define JV(text, rc)                                                                               \
    do {                                                                                           \
        b = parse(text);                                                                           \
        assert_int_equal(apimodel_validate(m, "java", "Op", b, &err), rc);                         \
        json_decref(b);                                                                            \
    } while (0)
    JV("{\"Arn\":\"arn:aws-cn:lambda:abc\"}", 0);
    JV("{\"Arn\":\"arn:aws_cn:lambda:abc\"}", -TY_EINVAL);
    assert_string_equal(err.msg, "1 validation error detected: Value 'arn:aws_cn:lambda:abc' at "
                                 "'arn' failed to satisfy constraint: Member must satisfy regular "
                                 "expression pattern: arn:[\\p{Alnum}\\-]+:lambda:\\p{Alpha}+");
    JV("{\"Text\":\"caf\\u00e9 \\ud83d\\ude00\\tok\"}", 0); /* an astral code point */
    JV("{\"Text\":\"bell\\u0007\"}", -TY_EINVAL);
    JV("{\"NoDigits\":\"abc\"}", 0);
    JV("{\"NoDigits\":\"ab1\"}", -TY_EINVAL);
#undef JV
    apimodel_free(m);
}

static void test_synthetic(void **state)
{
    struct ty_err err;
    struct apimodel *m;
    json_t *b;
    (void)state;
    m = load_one(SYNTH, &err);
    assert_non_null(m);
    assert_true(apimodel_has_op(m, "synth", "Op"));
#define SYN(text, rc)                                                                              \
    do {                                                                                           \
        b = parse(text);                                                                           \
        ty_err_clear(&err);                                                                        \
        assert_int_equal(apimodel_validate(m, "synth", "Op", b, &err), rc);                        \
        json_decref(b);                                                                            \
    } while (0)
    SYN("{\"F\":0.5,\"D\":2,\"B\":\"aGk=\",\"L\":9007199254740992,\"Any\":[1,{\"x\":null}],"
        "\"Modes\":[\"A\",\"C\"],\"Tree\":{\"Name\":\"ab\",\"Kids\":[{\"Name\":\"cd\"}]},"
        "\"Nested\":{\"B\":{\"Name\":\"xyz\"}}}",
        0);
    SYN("{\"F\":1}", 0);
    SYN("{\"F\":1.5}", -TY_EINVAL);
    assert_string_equal(err.msg, "1 validation error detected: Value '1.5' at 'f' failed to "
                                 "satisfy constraint: Member must have value less than or equal "
                                 "to 1.0");
    SYN("{\"F\":-1}", -TY_EINVAL);
    assert_string_equal(err.msg, "1 validation error detected: Value '-1' at 'f' failed to "
                                 "satisfy constraint: Member must have value greater than or "
                                 "equal to 0.0");
    SYN("{\"F\":0,\"D\":-0.75}", -TY_EINVAL);
    assert_string_equal(err.msg, "1 validation error detected: Value '-0.75' at 'd' failed to "
                                 "satisfy constraint: Member must have value greater than or "
                                 "equal to -0.5");
    SYN("{\"F\":0,\"D\":\"1\"}", -TY_EINVAL);
    assert_non_null(strstr(err.msg, "Member must be a number"));
    SYN("{\"F\":0,\"B\":5}", -TY_EINVAL);
    assert_non_null(strstr(err.msg, "Member must be a base64-encoded string"));
    SYN("{\"F\":0,\"L\":-1}", -TY_EINVAL);
    SYN("{\"F\":0,\"L\":1.0}", -TY_EINVAL);
    /* recursion: nested list-of-structure paths */
    SYN("{\"F\":0,\"Tree\":{\"Kids\":[{\"Name\":\"ok\"},{\"Kids\":[{\"Name\":\"toolong\"}]}]}}",
        -TY_EINVAL);
    assert_string_equal(err.msg, "1 validation error detected: Value 'toolong' at "
                                 "'tree.kids.2.member.kids.1.member.name' failed to satisfy "
                                 "constraint: Member must have length less than or equal to 4");
    assert_string_equal(err.field, "tree.kids.2.member.kids.1.member.name");
    SYN("{\"F\":0,\"Modes\":[\"A\",\"D\"]}", -TY_EINVAL);
    assert_string_equal(err.msg, "1 validation error detected: Value '[A, D]' at 'modes' failed "
                                 "to satisfy constraint: Member must satisfy constraint: [Member "
                                 "must satisfy enum value set: [A, B, C]]");
    SYN("{\"F\":0,\"Nested\":{\"Z\":{\"Name\":\"q\"}}}", -TY_EINVAL);
    assert_string_equal(err.msg,
                        "2 validation errors detected: Value 'q' at 'nested.Z.name' failed to "
                        "satisfy constraint: Member must have length greater than or equal to 2; "
                        "Value '{Z={Name=q}}' at 'nested' failed to satisfy constraint: Map keys "
                        "must satisfy constraint: [Member must satisfy enum value set: [A, B, C]]");
#undef SYN
    b = parse("{}");
    assert_int_equal(apimodel_validate(m, "synth", "NoInput", b, &err), 0);
    json_decref(b);
    apimodel_free(m);
}

/* ---------------------------------------------------------------- robustness */

static void test_deep_nesting(void **state)
{
    struct ty_err err;
    struct apimodel *m = load_one(SYNTH, &err);
    json_t *root, *cur;
    (void)state;
    assert_non_null(m);
    root = json_pack("{s:i}", "F", 0);
    cur = json_object();
    json_object_set_new(root, "Tree", cur);
    for (int i = 0; i < 500; i++) {
        json_t *kid = json_object();
        json_object_set_new(cur, "Kids", json_pack("[o]", kid));
        cur = kid;
    }
    json_object_set_new(cur, "Name", json_string("x"));
    /* beyond the depth bound the request is not looked into; no crash, no stack overflow */
    assert_int_equal(apimodel_validate(m, "synth", "Op", root, &err), 0);
    json_decref(root);
    apimodel_free(m);
}

static void test_long_values_bounded(void **state)
{
    struct ty_err err;
    size_t n = 100000;
    char *big = malloc(n + 1);
    (void)state;
    assert_non_null(big);
    for (size_t i = 0; i + 1 < n; i += 2)
        memcpy(big + i, "\xc3\xa9", 2); /* é: a cut must not split it */
    big[n] = '\0';
    assert_int_equal(
        check_sm("CreateTrainingJob", sdk_with("TrainingJobName", json_string(big)), &err),
        -TY_EINVAL);
    assert_true(strlen(err.msg) < sizeof(err.msg));
    json_t *s = json_string(err.msg); /* valid UTF-8 after the cut */
    assert_non_null(s);
    json_decref(s);
    assert_int_equal(strncmp(err.msg, "2 validation errors detected: Value '\xc3\xa9", 39), 0);

    /* many errors are all counted */
    json_t *hp = json_object();
    json_t *body = sdk_body();
    json_t *chans = json_array();
    for (int i = 0; i < 300; i++) {
        json_array_append_new(chans, json_pack("{s:s}", "ChannelName", "bad name"));
    }
    json_object_set_new(body, "InputDataConfig", chans);
    json_decref(hp);
    assert_int_equal(check_sm("CreateTrainingJob", body, &err), -TY_EINVAL);
    /* 300 lists too long (1) + 300 bad names + 300 missing DataSource */
    assert_int_equal(strncmp(err.msg, "601 validation errors detected: ", 32), 0);
    free(big);
}

/* A small deterministic generator of JSON junk using the model's own member names. */
static uint32_t rng = 12345;
static uint32_t next_rand(void)
{
    rng = rng * 1103515245u + 12345u;
    return (rng >> 16) & 0x7fff;
}

static const char *NAMES[] = {"TrainingJobName",
                              "RoleArn",
                              "ResourceConfig",
                              "InstanceCount",
                              "InstanceType",
                              "InputDataConfig",
                              "ChannelName",
                              "DataSource",
                              "S3DataSource",
                              "S3Uri",
                              "HyperParameters",
                              "VpcConfig",
                              "Subnets",
                              "Tags",
                              "Key",
                              "Value",
                              "StoppingCondition",
                              "MaxRuntimeInSeconds",
                              "AlgorithmSpecification",
                              "MetricDefinitions",
                              "Name",
                              "Regex",
                              "OutputDataConfig",
                              "Environment",
                              "CreationTimeAfter",
                              "MaxResults",
                              "DomainId",
                              "UserProfileName",
                              "AppType",
                              "DefaultUserSettings",
                              "logGroupName",
                              "logStreamName",
                              "limit",
                              "startTime",
                              "filterPattern",
                              "logStreamNames",
                              "SecurityGroupIds",
                              "ExecutionRole",
                              "AuthMode",
                              "SubnetIds",
                              "VpcId"};

static json_t *junk(int depth)
{
    uint32_t r = next_rand() % (depth > 4 ? 7 : 10);
    switch (r) {
    case 0:
        return json_null();
    case 1:
        return json_integer((json_int_t)next_rand() - 100);
    case 2:
        return json_real((double)next_rand() / 7.0);
    case 3:
        return json_boolean(next_rand() & 1);
    case 4:
        return json_string(NAMES[next_rand() % (sizeof(NAMES) / sizeof(NAMES[0]))]);
    case 5:
        return json_string("arn:aws:sagemaker:us-east-1:123456789012:domain/d-x");
    case 6:
        return json_string("");
    case 7:
    case 8: {
        json_t *o = json_object();
        int n = (int)(next_rand() % 6);
        for (int i = 0; i < n; i++)
            json_object_set_new(o, NAMES[next_rand() % (sizeof(NAMES) / sizeof(NAMES[0]))],
                                junk(depth + 1));
        return o;
    }
    default: {
        json_t *a = json_array();
        int n = (int)(next_rand() % 5);
        for (int i = 0; i < n; i++)
            json_array_append_new(a, junk(depth + 1));
        return a;
    }
    }
}

static void test_junk_every_op(void **state)
{
    static const char *sm[] = {"CreateTrainingJob", "DescribeTrainingJob",
                               "ListTrainingJobs",  "StopTrainingJob",
                               "UpdateTrainingJob", "DeleteTrainingJob",
                               "AddTags",           "ListTags",
                               "DeleteTags",        "CreateDomain",
                               "DescribeDomain",    "ListDomains",
                               "UpdateDomain",      "DeleteDomain",
                               "CreateUserProfile", "DescribeUserProfile",
                               "ListUserProfiles",  "UpdateUserProfile",
                               "DeleteUserProfile", "CreateApp",
                               "DescribeApp",       "ListApps",
                               "DeleteApp",         "CreatePresignedDomainUrl"};
    static const char *logs[] = {"DescribeLogStreams", "GetLogEvents", "FilterLogEvents",
                                 "DescribeLogGroups"};
    struct ty_err err;
    (void)state;
    for (int round = 0; round < 300; round++) {
        for (size_t i = 0; i < sizeof(sm) / sizeof(sm[0]); i++) {
            json_t *b = junk(0);
            int rc = apimodel_validate(M, "sagemaker", sm[i], b, &err);
            assert_true(rc == 0 || rc == -TY_EINVAL || rc == -TY_ESERIAL);
            json_decref(b);
        }
        for (size_t i = 0; i < sizeof(logs) / sizeof(logs[0]); i++) {
            json_t *b = junk(0);
            int rc = apimodel_validate(M, "logs", logs[i], b, &err);
            assert_true(rc == 0 || rc == -TY_EINVAL || rc == -TY_ESERIAL);
            json_decref(b);
        }
    }
    /* junk inside the SDK body, at every top-level member */
    json_t *proto = sdk_body();
    const char *k;
    json_t *v;
    json_object_foreach(proto, k, v)
    {
        for (int t = 0; t < 40; t++) {
            int rc = check_sm("CreateTrainingJob", sdk_with(k, junk(1)), &err);
            assert_true(rc == 0 || rc == -TY_EINVAL);
        }
    }
    json_decref(proto);
}

struct thread_arg {
    int failures;
};

static void *validate_many(void *p)
{
    struct thread_arg *a = p;
    json_t *good = parse(SDK_BODY);
    json_t *bad = sdk_with("TrainingJobName", json_string("bad_name!"));
    for (int i = 0; i < 300; i++) {
        struct ty_err err;
        if (apimodel_validate(M, "sagemaker", "CreateTrainingJob", good, &err) != 0)
            a->failures++;
        if (apimodel_validate(M, "sagemaker", "CreateTrainingJob", bad, &err) != -TY_EINVAL ||
            strcmp(err.field, "trainingJobName") != 0)
            a->failures++;
    }
    json_decref(good);
    json_decref(bad);
    return NULL;
}

static void test_threads(void **state)
{
    pthread_t t[6];
    struct thread_arg a[6];
    (void)state;
    for (int i = 0; i < 6; i++) {
        a[i].failures = 0;
        assert_int_equal(pthread_create(&t[i], NULL, validate_many, &a[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
}

static void test_null_err(void **state)
{
    json_t *b = parse("{\"TrainingJobName\":\"bad_name!\"}");
    (void)state;
    assert_int_equal(apimodel_validate(M, "sagemaker", "DescribeTrainingJob", b, NULL), -TY_EINVAL);
    assert_int_equal(apimodel_validate(M, "sagemaker", "Nope", b, NULL), -TY_EUNKNOWNOP);
    assert_int_equal(apimodel_validate(NULL, "sagemaker", "DescribeTrainingJob", b, NULL),
                     -TY_EUNKNOWNOP);
    json_decref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_load_dir_matches_embedded),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_sdk_body_valid),
        cmocka_unit_test(test_pattern),
        cmocka_unit_test(test_length),
        cmocka_unit_test(test_length_two_errors_prefix),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_enum),
        cmocka_unit_test(test_required),
        cmocka_unit_test(test_current_instance_types),
        cmocka_unit_test(test_nested_list_path),
        cmocka_unit_test(test_list_count_and_scalar_members),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_multiple_errors),
        cmocka_unit_test(test_unknown_members_ignored),
        cmocka_unit_test(test_wrong_types),
        cmocka_unit_test(test_timestamps),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_java_patterns),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_long_values_bounded),
        cmocka_unit_test(test_junk_every_op),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_null_err),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
