/*
 * test_iam.c - IAM policy parsing and evaluation: each rule of the evaluation logic, each
 * condition operator (positive, negated, IfExists, ForAnyValue/ForAllValues, missing keys),
 * policy variables, NotAction/NotResource, wildcards, malformed documents rejected with IAM's
 * messages, size limits, hostile input (deep, huge, odd ARNs, non-UTF-8) and concurrent
 * evaluation of shared policies.
 *
 * The expected validation messages are those IAM returns (as recorded by moto's
 * test_iam_policies.py against CreatePolicy). In the JSON below a backtick stands for '"'.
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

#include "iam.h"

#define ACCOUNT "000000000000"
#define APP_ARN(user)                                                                              \
    "arn:aws:sagemaker:us-east-1:" ACCOUNT ":app/d-abcdefghijkl/" user "/detailedprofiler/default"
#define PROFILE_ARN(user)                                                                          \
    "arn:aws:sagemaker:us-east-1:" ACCOUNT ":user-profile/d-abcdefghijkl/" user

/* {"Version":"2012-10-17","Statement":[...]} around one or more statements */
#define DOC(stmts)      "{`Version`:`2012-10-17`,`Statement`:[" stmts "]}"
#define ALLOW(act, res) "{`Effect`:`Allow`,`Action`:" act ",`Resource`:" res "}"
#define DENY(act, res)  "{`Effect`:`Deny`,`Action`:" act ",`Resource`:" res "}"
/* An Allow-everything statement guarded by a condition block. */
#define COND(block) DOC("{`Effect`:`Allow`,`Action`:`*`,`Resource`:`*`,`Condition`:" block "}")

/* ---------------------------------------------------------------------------------------- */
/* helpers */

static char *jdup(const char *t)
{
    char *s = strdup(t);
    assert_non_null(s);
    for (char *p = s; *p; p++) {
        if (*p == '`')
            *p = '"';
    }
    return s;
}

static struct iam_policy *must_parse(const char *tmpl)
{
    char *s = jdup(tmpl);
    struct iam_policy *p = NULL;
    struct ty_err err;
    ty_err_clear(&err);
    int rc = iam_policy_parse(s, strlen(s), &p, &err);
    if (rc != 0)
        fail_msg("parse failed (%s): %s\n%s", ty_err_aws_name(err.code), err.msg, s);
    free(s);
    assert_non_null(p);
    return p;
}

static void expect_err_flags(const char *tmpl, unsigned flags, int code, const char *msg)
{
    char *s = jdup(tmpl);
    struct iam_policy *p = NULL;
    struct ty_err err;
    ty_err_clear(&err);
    int rc = iam_policy_parse_ex(s, strlen(s), flags, &p, &err);
    if (rc != -code || strcmp(err.msg, msg) != 0)
        fail_msg("doc %s\n  want %d '%s'\n  got  %d '%s'", s, -code, msg, rc, err.msg);
    assert_null(p);
    assert_int_equal(err.code, code);
    assert_string_equal(err.field, "PolicyDocument");
    free(s);
}

static void expect_malformed(const char *tmpl, const char *msg)
{
    expect_err_flags(tmpl, 0, TY_EMALFORMED, msg);
}

static enum iam_decision run_ctx(const char *tmpl, const char *action, const char *resource,
                                 const struct iam_ctx_entry *ctx, size_t n)
{
    struct iam_policy *p = must_parse(tmpl);
    const struct iam_policy *ps[1] = {p};
    struct iam_request req = {action, resource, ctx, n};
    enum iam_decision d = iam_evaluate(ps, 1, &req);
    iam_policy_free(p);
    return d;
}

static enum iam_decision run(const char *tmpl, const char *action, const char *resource)
{
    return run_ctx(tmpl, action, resource, NULL, 0);
}

/* 1 when the condition block lets COND()'s Allow statement apply. */
static int holds(const char *block, const struct iam_ctx_entry *ctx, size_t n)
{
    char doc[8192];
    snprintf(doc, sizeof(doc), COND("%s"), block);
    return run_ctx(doc, "sagemaker:CreateApp", APP_ARN("alice"), ctx, n) == IAM_ALLOW;
}

#define NCTX(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------------------------------- */
/* evaluation logic */

static void test_default_deny(void **state)
{
    (void)state;
    struct iam_request req = {"sagemaker:CreateApp", APP_ARN("alice"), NULL, 0};
    assert_int_equal(iam_evaluate(NULL, 0, &req), IAM_DENY_IMPLICIT);
    assert_int_equal(
        run(DOC(ALLOW("`sagemaker:DeleteApp`", "`*`")), "sagemaker:CreateApp", APP_ARN("alice")),
        IAM_DENY_IMPLICIT);
    assert_int_equal(run(DOC(ALLOW("`sagemaker:CreateApp`", "`" APP_ARN("bob") "`")),
                         "sagemaker:CreateApp", APP_ARN("alice")),
                     IAM_DENY_IMPLICIT);
}

static void test_allow_and_explicit_deny(void **state)
{
    (void)state;
    struct iam_policy *allow = must_parse(DOC(ALLOW("`sagemaker:*`", "`*`")));
    struct iam_policy *deny = must_parse(
        DOC("{`Sid`:`NoDelete`,`Effect`:`Deny`,`Action`:`sagemaker:DeleteApp`,`Resource`:`*`}"));
    struct iam_policy *both =
        must_parse(DOC(DENY("`sagemaker:DeleteApp`", "`*`") "," ALLOW("`sagemaker:*`", "`*`")));
    struct iam_request create = {"sagemaker:CreateApp", APP_ARN("alice"), NULL, 0};
    struct iam_request del = {"sagemaker:DeleteApp", APP_ARN("alice"), NULL, 0};
    struct iam_explain why;

    assert_int_equal(iam_policy_nstatements(allow), 1);
    assert_int_equal(iam_policy_nstatements(both), 2);
    const struct iam_policy *a[] = {allow};
    assert_int_equal(iam_evaluate_ex(a, 1, &create, &why), IAM_ALLOW);
    assert_int_equal(why.policy, 0);
    assert_int_equal(why.statement, 0);
    assert_int_equal(why.error, 0);

    /* explicit deny beats allow, whatever the order of policies */
    const struct iam_policy *ad[] = {allow, deny};
    const struct iam_policy *da[] = {deny, allow};
    assert_int_equal(iam_evaluate_ex(ad, 2, &del, &why), IAM_DENY_EXPLICIT);
    assert_int_equal(why.policy, 1);
    assert_string_equal(why.sid, "NoDelete");
    assert_int_equal(iam_evaluate(da, 2, &del), IAM_DENY_EXPLICIT);
    assert_int_equal(iam_evaluate(ad, 2, &create), IAM_ALLOW);
    /* in one policy too, whatever the order of statements */
    const struct iam_policy *b[] = {both};
    assert_int_equal(iam_evaluate(b, 1, &del), IAM_DENY_EXPLICIT);
    assert_int_equal(iam_evaluate(b, 1, &create), IAM_ALLOW);
    /* a deny alone is still a deny; one that does not apply leaves an implicit deny */
    const struct iam_policy *d[] = {deny};
    assert_int_equal(iam_evaluate(d, 1, &del), IAM_DENY_EXPLICIT);
    assert_int_equal(iam_evaluate(d, 1, &create), IAM_DENY_IMPLICIT);
    /* NULL entries are skipped */
    const struct iam_policy *nul[] = {NULL, allow, NULL};
    assert_int_equal(iam_evaluate_ex(nul, 3, &create, &why), IAM_ALLOW);
    assert_int_equal(why.policy, 1);
    iam_policy_free(allow);
    iam_policy_free(deny);
    iam_policy_free(both);
}

static void test_statement_forms(void **state)
{
    (void)state;
    /* Statement as an object, Action/Resource as strings or arrays, Version absent/2008 */
    const char *docs[] = {
        "{`Version`:`2012-10-17`,`Statement`:{`Effect`:`Allow`,`Action`:`sagemaker:CreateApp`,"
        "`Resource`:`*`}}",
        "{`Statement`:{`Effect`:`Allow`,`Action`:[`sagemaker:CreateApp`],`Resource`:[`*`]}}",
        "{`Version`:`2008-10-17`,`Id`:`x`,`Statement`:[{`Sid`:`A1`,`Effect`:`Allow`,`Action`:[`s3:"
        "Get*`,`sagemaker:CreateApp`],`Resource`:[`arn:aws:s3:::b`,`*`],`Condition`:{}}]}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
        assert_int_equal(run(docs[i], "sagemaker:CreateApp", APP_ARN("alice")), IAM_ALLOW);
}

static void test_action_wildcards(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *action;
        int match;
    } cases[] = {
        {"*", "sagemaker:CreateApp", 1},
        {"sagemaker:*", "sagemaker:CreateApp", 1},
        {"sagemaker:Create*", "sagemaker:CreateApp", 1},
        {"sagemaker:Create*", "sagemaker:DeleteApp", 0},
        {"sagemaker:*App", "sagemaker:DescribeApp", 1},
        {"sagemaker:*App", "sagemaker:ListApps", 0},
        {"sagemaker:Create???", "sagemaker:CreateApp", 1},
        {"sagemaker:Create??", "sagemaker:CreateApp", 0},
        {"sagemaker:createapp", "sagemaker:CreateApp", 1}, /* actions are case-insensitive */
        {"SageMaker:CREATEAPP", "sagemaker:CreateApp", 1},
        {"sagemaker:CreateApp", "sagemaker:CreateAppImageConfig", 0},
        {"s3:*", "sagemaker:CreateApp", 0},
        {"sage*", "sagemaker:CreateApp", -1}, /* malformed: no vendor */
        {"*:CreateApp", "sagemaker:CreateApp", 1},
        {"sagemaker:*a*p*", "sagemaker:CreateApp", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char doc[512];
        snprintf(doc, sizeof(doc), DOC(ALLOW("`%s`", "`*`")), cases[i].pattern);
        if (cases[i].match < 0) {
            expect_malformed(
                doc, "Actions/Conditions must be prefaced by a vendor, e.g., iam, sdb, ec2, etc.");
            continue;
        }
        if ((run(doc, cases[i].action, APP_ARN("a")) == IAM_ALLOW) != cases[i].match)
            fail_msg("action %s vs %s: want %d", cases[i].pattern, cases[i].action, cases[i].match);
    }
}

static void test_not_action(void **state)
{
    (void)state;
    const char *allow = DOC("{`Effect`:`Allow`,`NotAction`:[`sagemaker:Delete*`,`iam:*`],"
                            "`Resource`:`*`}");
    assert_int_equal(run(allow, "sagemaker:CreateApp", "*"), IAM_ALLOW);
    assert_int_equal(run(allow, "sagemaker:DeleteApp", "*"), IAM_DENY_IMPLICIT);
    assert_int_equal(run(allow, "IAM:CreateUser", "*"), IAM_DENY_IMPLICIT);
    const char *deny = DOC(ALLOW("`*`", "`*`") ",{`Effect`:`Deny`,`NotAction`:`sagemaker:"
                                               "Describe*`,`Resource`:`*`}");
    assert_int_equal(run(deny, "sagemaker:DescribeApp", "*"), IAM_ALLOW);
    assert_int_equal(run(deny, "sagemaker:CreateApp", "*"), IAM_DENY_EXPLICIT);
}

static void test_resource_matching(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *arn;
        int match;
    } cases[] = {
        {"*", APP_ARN("alice"), 1},
        {"*", "*", 1},
        {APP_ARN("alice"), APP_ARN("alice"), 1},
        {APP_ARN("alice"), APP_ARN("bob"), 0},
        {APP_ARN("Alice"), APP_ARN("alice"), 0}, /* resources are case-sensitive */
        {"arn:aws:sagemaker:*:*:app/d-abcdefghijkl/alice/*", APP_ARN("alice"), 1},
        {"arn:aws:sagemaker:*:*:app/d-abcdefghijkl/alice/*", APP_ARN("alicex"), 0},
        {"arn:aws:sagemaker:us-east-?:" ACCOUNT ":app/*", APP_ARN("bob"), 1},
        {"arn:aws:sagemaker:us-west-?:" ACCOUNT ":app/*", APP_ARN("bob"), 0},
        {"arn:aws:sagemaker:us-*:*:*", APP_ARN("bob"), 1},
        /* a '*' inside a field does not run across colons */
        {"arn:aws:sagemaker:*:app/*", APP_ARN("bob"), 0},
        {"arn:aws:sage*:us-east-1:" ACCOUNT ":app/*", APP_ARN("bob"), 1},
        /* a '*' ending a shorter pattern does */
        {"arn:aws:sagemaker:*", APP_ARN("bob"), 1},
        {"arn:aws:sagemaker:us-east-1:*", APP_ARN("bob"), 1},
        {"arn:aws:ec2:*", APP_ARN("bob"), 0},
        /* the resource field keeps its colons */
        {"arn:aws:logs:us-east-1:" ACCOUNT ":log-group:/aws/sagemaker/TrainingJobs:*",
         "arn:aws:logs:us-east-1:" ACCOUNT ":log-group:/aws/sagemaker/TrainingJobs:log-stream:j",
         1},
        {"arn:aws:s3:::bucket/*", "arn:aws:s3:::bucket/a/b:c", 1},
        {"arn:aws:s3:::bucket/*", "arn:aws:s3:::bucket2/a", 0},
        {"arn:aws:s3:::bucket", "arn:aws:s3:::bucket/x", 0},
        /* a specific pattern never matches "*" (actions without resource types) */
        {"arn:aws:sagemaker:*:*:*", "*", 0},
        /* odd request ARNs */
        {"arn:aws:sagemaker:*:*:*", "", 0},
        {"arn:aws:sagemaker:*:*:*", "arn", 0},
        {"arn:aws:sagemaker:*:*:*", ":::::", 0},
        {"arn:aws:sagemaker:*:*:*", "arn:aws:sagemaker::", 0},
        {"arn:aws:sagemaker:*:*:*", "arn:aws:sagemaker:::", 1},
        {"arn:aws:sagemaker:*:*:*", "arn:aws:sagemaker::::", 1},
        {"arn:aws:sagemaker:*:*:a?c",
         "arn:aws:sagemaker:r:1:a\xc3\xa9"
         "c",
         1}, /* '?' is one character, not one byte */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char doc[1024];
        snprintf(doc, sizeof(doc), DOC(ALLOW("`*`", "`%s`")), cases[i].pattern);
        if ((run(doc, "sagemaker:CreateApp", cases[i].arn) == IAM_ALLOW) != cases[i].match)
            fail_msg("resource %s vs %s: want %d", cases[i].pattern, cases[i].arn, cases[i].match);
    }
}

static void test_not_resource(void **state)
{
    (void)state;
    const char *allow = DOC("{`Effect`:`Allow`,`Action`:`sagemaker:*`,`NotResource`:[`arn:aws:"
                            "sagemaker:*:*:app/*/bob/*`]}");
    assert_int_equal(run(allow, "sagemaker:CreateApp", APP_ARN("alice")), IAM_ALLOW);
    assert_int_equal(run(allow, "sagemaker:CreateApp", APP_ARN("bob")), IAM_DENY_IMPLICIT);
    const char *deny = DOC(ALLOW("`*`", "`*`") ",{`Effect`:`Deny`,`Action`:`*`,`NotResource`:`"
                                               "arn:aws:sagemaker:*:*:*/d-abcdefghijkl/*`}");
    assert_int_equal(run(deny, "sagemaker:CreateApp", APP_ARN("alice")), IAM_ALLOW);
    assert_int_equal(run(deny, "sagemaker:CreateApp",
                         "arn:aws:sagemaker:us-east-1:" ACCOUNT ":app/d-other/alice/x/y"),
                     IAM_DENY_EXPLICIT);
}

/* ---------------------------------------------------------------------------------------- */
/* the decision table: (policy, request, expected decision), every expectation derived from
   AWS's documented evaluation logic, not from this evaluator:
     - a statement applies when its action element, its resource element and every condition
       match; Action/Resource match when a pattern matches, NotAction/NotResource when none does;
     - an explicit Deny that applies wins; else an Allow that applies allows; else the request
       is implicitly denied;
     - a condition on a key the request lacks does not hold, unless its operator ends in
       IfExists (then it holds). */

/* The action element, and whether it matches "sagemaker:CreateTrainingJob". */
static const struct {
    const char *json;
    int applies;
} T_ACTIONS[] = {
    {"`Action`:`sagemaker:CreateTrainingJob`", 1}, {"`Action`:`sagemaker:Create*`", 1},
    {"`Action`:`SageMaker:createtrainingjob`", 1}, {"`Action`:`sagemaker:Describe*`", 0},
    {"`NotAction`:`sagemaker:Describe*`", 1},      {"`NotAction`:`sagemaker:*`", 0},
};
/* The resource element, and whether it matches the job's ARN. */
static const struct {
    const char *json;
    int applies;
} T_RESOURCES[] = {
    {"`Resource`:`*`", 1},
    {"`Resource`:`arn:aws:sagemaker:us-east-1:" ACCOUNT ":training-job/t-*`", 1},
    {"`Resource`:`arn:aws:sagemaker:*:*:training-job/other`", 0},
    {"`NotResource`:`arn:aws:sagemaker:*:*:training-job/other`", 1},
    {"`NotResource`:`arn:aws:sagemaker:*:*:training-job/t-?ob`", 0},
};
/* The condition (none or one), and whether it holds for the context below. */
static const struct {
    const char *json;
    int holds;
} T_CONDS[] = {
    {"", 1},
    {",`Condition`:{`StringEquals`:{`aws:RequestTag/team`:`ml`}}", 1},
    {",`Condition`:{`StringEquals`:{`aws:RequestTag/team`:`admin`}}", 0},
    {",`Condition`:{`StringEquals`:{`aws:RequestTag/absent`:`x`}}", 0},
    {",`Condition`:{`StringEqualsIfExists`:{`aws:RequestTag/absent`:`x`}}", 1},
    {",`Condition`:{`NumericLessThanEquals`:{`sagemaker:MaxRuntimeInSeconds`:`3600`}}", 1},
    {",`Condition`:{`NumericGreaterThan`:{`sagemaker:MaxRuntimeInSeconds`:`3600`}}", 0},
};

static void test_decision_table(void **state)
{
    struct iam_ctx_entry ctx[] = {{.key = "aws:RequestTag/team", .value = "ml"},
                                  {.key = "sagemaker:MaxRuntimeInSeconds", .value = "600"}};
    const char *arn = "arn:aws:sagemaker:us-east-1:" ACCOUNT ":training-job/t-job";
    int cases = 0;
    (void)state;
    for (int deny = 0; deny < 2; deny++)
        for (size_t a = 0; a < NCTX(T_ACTIONS); a++)
            for (size_t r = 0; r < NCTX(T_RESOURCES); r++)
                for (size_t c = 0; c < NCTX(T_CONDS); c++) {
                    char doc[2048];
                    int applies =
                        T_ACTIONS[a].applies && T_RESOURCES[r].applies && T_CONDS[c].holds;
                    enum iam_decision want = deny ? (applies ? IAM_DENY_EXPLICIT : IAM_ALLOW)
                                                  : (applies ? IAM_ALLOW : IAM_DENY_IMPLICIT);
                    enum iam_decision got;
                    /* a Deny is tried under an Allow of everything, as an admin's policy */
                    snprintf(doc, sizeof(doc), DOC("%s{`Effect`:`%s`,%s,%s%s}"),
                             deny ? "{`Effect`:`Allow`,`Action`:`*`,`Resource`:`*`}," : "",
                             deny ? "Deny" : "Allow", T_ACTIONS[a].json, T_RESOURCES[r].json,
                             T_CONDS[c].json);
                    got = run_ctx(doc, "sagemaker:CreateTrainingJob", arn, ctx, NCTX(ctx));
                    if (got != want)
                        fail_msg("case %d: %s: want %d, got %d", cases, doc, want, got);
                    cases++;
                }
    assert_true(cases >= 400);
}

/* Condition operators, each against AWS's documented meaning (one case a row). */
static void test_operator_table(void **state)
{
    static const struct {
        const char *op, *key, *policy_value, *ctx_value;
        int holds;
    } rows[] = {
        {"StringEquals", "aws:username", "alice", "alice", 1},
        {"StringEquals", "aws:username", "Alice", "alice", 0},
        {"StringNotEquals", "aws:username", "bob", "alice", 1},
        {"StringNotEquals", "aws:username", "alice", "alice", 0},
        {"StringEqualsIgnoreCase", "aws:username", "ALICE", "alice", 1},
        {"StringNotEqualsIgnoreCase", "aws:username", "ALICE", "alice", 0},
        {"StringLike", "aws:username", "al*", "alice", 1},
        {"StringLike", "aws:username", "a?ice", "alice", 1},
        {"StringLike", "aws:username", "b*", "alice", 0},
        {"StringNotLike", "aws:username", "b*", "alice", 1},
        {"NumericEquals", "sagemaker:MaxRuntimeInSeconds", "600", "600", 1},
        {"NumericNotEquals", "sagemaker:MaxRuntimeInSeconds", "600", "601", 1},
        {"NumericLessThan", "sagemaker:MaxRuntimeInSeconds", "600", "599", 1},
        {"NumericLessThan", "sagemaker:MaxRuntimeInSeconds", "600", "600", 0},
        {"NumericLessThanEquals", "sagemaker:MaxRuntimeInSeconds", "600", "600", 1},
        {"NumericGreaterThan", "sagemaker:MaxRuntimeInSeconds", "3600", "86400", 1},
        {"NumericGreaterThanEquals", "sagemaker:MaxRuntimeInSeconds", "3600", "3599", 0},
        {"NumericLessThan", "sagemaker:MaxRuntimeInSeconds", "600", "not-a-number", 0},
        {"DateLessThan", "aws:CurrentTime", "2027-01-01T00:00:00Z", "2026-12-07T00:00:00Z", 1},
        {"DateGreaterThan", "aws:CurrentTime", "2027-01-01T00:00:00Z", "2026-12-07T00:00:00Z", 0},
        {"DateEquals", "aws:EpochTime", "1796601600", "1796601600", 1},
        {"Bool", "aws:SecureTransport", "false", "false", 1},
        {"Bool", "aws:SecureTransport", "true", "false", 0},
        {"IpAddress", "aws:SourceIp", "127.0.0.0/8", "127.0.0.1", 1},
        {"IpAddress", "aws:SourceIp", "10.0.0.0/8", "127.0.0.1", 0},
        {"NotIpAddress", "aws:SourceIp", "10.0.0.0/8", "127.0.0.1", 1},
        {"IpAddress", "aws:SourceIp", "2001:db8::/32", "2001:db8:1::5", 1},
        {"ArnLike", "aws:PrincipalArn", "arn:aws:iam::*:user/a*", "arn:aws:iam::1:user/alice", 1},
        {"ArnEquals", "aws:PrincipalArn", "arn:aws:iam::1:user/bob", "arn:aws:iam::1:user/alice",
         0},
        {"ArnNotLike", "aws:PrincipalArn", "arn:aws:iam::*:role/*", "arn:aws:iam::1:user/alice", 1},
        {"StringEqualsIfExists", "aws:username", "bob", "alice", 0},
        {"StringEqualsIfExists", "aws:username", "alice", "alice", 1},
    };
    (void)state;
    for (size_t i = 0; i < NCTX(rows); i++) {
        char block[512];
        struct iam_ctx_entry c[] = {{.key = rows[i].key, .value = rows[i].ctx_value}};
        snprintf(block, sizeof(block), "{`%s`:{`%s`:`%s`}}", rows[i].op, rows[i].key,
                 rows[i].policy_value);
        if (holds(block, c, 1) != rows[i].holds)
            fail_msg("%s %s %s vs %s: want %d", rows[i].op, rows[i].key, rows[i].policy_value,
                     rows[i].ctx_value, rows[i].holds);
    }
    /* Null: true holds when the key is absent, false when present */
    {
        struct iam_ctx_entry c[] = {{.key = "aws:username", .value = "alice"}};
        assert_true(holds("{`Null`:{`aws:RequestTag/x`:`true`}}", c, 1));
        assert_false(holds("{`Null`:{`aws:username`:`true`}}", c, 1));
        assert_true(holds("{`Null`:{`aws:username`:`false`}}", c, 1));
    }
    /* set operators: ForAllValues holds for an empty or absent set, ForAnyValue does not */
    {
        const char *two[] = {"ml.m5.large", "ml.c5.xlarge"};
        struct iam_ctx_entry c[] = {
            {.key = "sagemaker:InstanceTypes", .values = two, .nvalues = 2}};
        assert_true(holds("{`ForAnyValue:StringEquals`:{`sagemaker:InstanceTypes`:"
                          "`ml.c5.xlarge`}}",
                          c, 1));
        assert_false(holds("{`ForAllValues:StringEquals`:{`sagemaker:InstanceTypes`:"
                           "`ml.c5.xlarge`}}",
                           c, 1));
        assert_true(holds("{`ForAllValues:StringLike`:{`sagemaker:InstanceTypes`:`ml.*`}}", c, 1));
        assert_true(
            holds("{`ForAllValues:StringEquals`:{`sagemaker:InstanceTypes`:`x`}}", NULL, 0));
        assert_false(
            holds("{`ForAnyValue:StringEquals`:{`sagemaker:InstanceTypes`:`x`}}", NULL, 0));
    }
    /* several values are ORed, several keys and operators ANDed */
    {
        struct iam_ctx_entry c[] = {{.key = "aws:username", .value = "alice"},
                                    {.key = "aws:RequestTag/team", .value = "ml"}};
        assert_true(holds("{`StringEquals`:{`aws:username`:[`bob`,`alice`]}}", c, 2));
        assert_false(holds("{`StringEquals`:{`aws:username`:`alice`,`aws:RequestTag/team`:"
                           "`admin`}}",
                           c, 2));
        assert_false(holds("{`StringEquals`:{`aws:username`:`alice`},`StringLike`:{"
                           "`aws:RequestTag/team`:`a*`}}",
                           c, 2));
    }
}

/* ---------------------------------------------------------------------------------------- */
/* policy variables */

static void test_variables(void **state)
{
    (void)state;
    const char *own =
        DOC(ALLOW("`sagemaker:*`", "`arn:aws:sagemaker:*:*:app/*/${aws:username}/*`"));
    struct iam_ctx_entry alice[] = {{.key = "aws:username", .value = "alice"}};
    struct iam_ctx_entry upper[] = {{.key = "AWS:UserName", .value = "alice"}};
    struct iam_ctx_entry star[] = {{.key = "aws:username", .value = "*"}};
    const char *two[] = {"alice", "bob"};
    struct iam_ctx_entry multi[] = {{.key = "aws:username", .values = two, .nvalues = 2}};

    assert_int_equal(run_ctx(own, "sagemaker:CreateApp", APP_ARN("alice"), alice, 1), IAM_ALLOW);
    assert_int_equal(run_ctx(own, "sagemaker:CreateApp", APP_ARN("bob"), alice, 1),
                     IAM_DENY_IMPLICIT);
    /* context keys are case-insensitive */
    assert_int_equal(run_ctx(own, "sagemaker:CreateApp", APP_ARN("alice"), upper, 1), IAM_ALLOW);
    /* a resolved value is literal: a username of "*" is not a wildcard */
    assert_int_equal(run_ctx(own, "sagemaker:CreateApp", APP_ARN("bob"), star, 1),
                     IAM_DENY_IMPLICIT);
    assert_int_equal(run_ctx(own, "sagemaker:CreateApp",
                             "arn:aws:sagemaker:r:1:app/d/*/detailedprofiler/default", star, 1),
                     IAM_ALLOW);
    /* unresolvable (absent or multi-valued) variables: an Allow does not apply */
    assert_int_equal(run_ctx(own, "sagemaker:CreateApp", APP_ARN("alice"), NULL, 0),
                     IAM_DENY_IMPLICIT);
    assert_int_equal(run_ctx(own, "sagemaker:CreateApp", APP_ARN("alice"), multi, 1),
                     IAM_DENY_IMPLICIT);
    /* a Deny stays in force: an unresolvable entry of its Resource matches everything
       (issue 37, finding 5: a principal without the tag escaped the Deny) */
    const char *deny = DOC(ALLOW("`*`", "`*`") "," DENY("`*`", "`arn:aws:sagemaker:*:*:app/*/"
                                                               "${aws:PrincipalTag/team}/*`"));
    assert_int_equal(run_ctx(deny, "sagemaker:CreateApp", APP_ARN("alice"), NULL, 0),
                     IAM_DENY_EXPLICIT);
    struct iam_ctx_entry team[] = {{.key = "aws:PrincipalTag/team", .value = "alice"}};
    assert_int_equal(run_ctx(deny, "sagemaker:CreateApp", APP_ARN("alice"), team, 1),
                     IAM_DENY_EXPLICIT);
    assert_int_equal(run_ctx(deny, "sagemaker:CreateApp", APP_ARN("bob"), team, 1), IAM_ALLOW);
    /* ... an unresolvable NotResource entry of a Deny exempts nothing: a user without a home
       tag does not escape a Deny with NotResource b/${aws:PrincipalTag/home}/... */
    const char *home = DOC(ALLOW("`*`", "`*`") ",{`Effect`:`Deny`,`Action`:`s3:*`,`NotResource`:"
                                               "`arn:aws:s3:::b/${aws:PrincipalTag/home}/*`}");
    assert_int_equal(run_ctx(home, "s3:GetObject", "arn:aws:s3:::b/x/secret", NULL, 0),
                     IAM_DENY_EXPLICIT);
    struct iam_ctx_entry hx[] = {{.key = "aws:PrincipalTag/home", .value = "x"}};
    assert_int_equal(run_ctx(home, "s3:GetObject", "arn:aws:s3:::b/x/mine", hx, 1), IAM_ALLOW);
    assert_int_equal(run_ctx(home, "s3:GetObject", "arn:aws:s3:::b/y/theirs", hx, 1),
                     IAM_DENY_EXPLICIT);
    /* ... one unresolvable entry in a Deny's list no longer drops the entries that match */
    const char *list = DOC(ALLOW("`*`", "`*`") ",{`Effect`:`Deny`,`Action`:`s3:*`,`Resource`:["
                                               "`arn:aws:s3:::b/${aws:PrincipalTag/none}/*`,"
                                               "`arn:aws:s3:::secret/*`]}");
    assert_int_equal(run_ctx(list, "s3:GetObject", "arn:aws:s3:::secret/k", hx, 1),
                     IAM_DENY_EXPLICIT);
    /* ... and an Allow is never widened: an unresolvable NotResource entry exempts everything */
    const char *anr = DOC("{`Effect`:`Allow`,`Action`:`s3:*`,`NotResource`:"
                          "`arn:aws:s3:::b/${aws:PrincipalTag/home}/*`}");
    assert_int_equal(run_ctx(anr, "s3:GetObject", "arn:aws:s3:::c/k", NULL, 0), IAM_DENY_IMPLICIT);
    assert_int_equal(run_ctx(anr, "s3:GetObject", "arn:aws:s3:::c/k", hx, 1), IAM_ALLOW);
    /* ... in a condition too: an unresolvable value makes a Deny's condition hold */
    const char *cdeny = DOC(ALLOW("`*`", "`*`") ",{`Effect`:`Deny`,`Action`:`*`,`Resource`:`*`,"
                                                "`Condition`:{`StringNotEquals`:{`aws:RequestTag/"
                                                "owner`:`${aws:PrincipalTag/owner}`}}}");
    struct iam_ctx_entry req_owner[] = {{.key = "aws:RequestTag/owner", .value = "bob"}};
    assert_int_equal(run_ctx(cdeny, "sagemaker:CreateApp", "*", req_owner, 1), IAM_DENY_EXPLICIT);
    struct iam_ctx_entry both_owner[] = {{.key = "aws:RequestTag/owner", .value = "bob"},
                                         {.key = "aws:PrincipalTag/owner", .value = "alice"}};
    assert_int_equal(run_ctx(cdeny, "sagemaker:CreateApp", "*", both_owner, 2), IAM_DENY_EXPLICIT);
    both_owner[0].value = "alice";
    assert_int_equal(run_ctx(cdeny, "sagemaker:CreateApp", "*", both_owner, 2), IAM_ALLOW);
    /* default values */
    const char *def = DOC(ALLOW("`*`", "`arn:aws:sagemaker:*:*:app/*/${aws:PrincipalTag/owner, "
                                       "'alice'}/*`"));
    assert_int_equal(run_ctx(def, "sagemaker:CreateApp", APP_ARN("alice"), NULL, 0), IAM_ALLOW);
    struct iam_ctx_entry owner[] = {{.key = "aws:PrincipalTag/owner", .value = "bob"}};
    assert_int_equal(run_ctx(def, "sagemaker:CreateApp", APP_ARN("alice"), owner, 1),
                     IAM_DENY_IMPLICIT);
    assert_int_equal(run_ctx(def, "sagemaker:CreateApp", APP_ARN("bob"), owner, 1), IAM_ALLOW);
    /* ${*} ${?} ${$}: literal characters */
    const char *lit = DOC(ALLOW("`*`", "`arn:aws:s3:::b/${*}${?}${$}`"));
    assert_int_equal(run(lit, "s3:GetObject", "arn:aws:s3:::b/*?$"), IAM_ALLOW);
    assert_int_equal(run(lit, "s3:GetObject", "arn:aws:s3:::b/ab$"), IAM_DENY_IMPLICIT);
    /* version 2008-10-17 (or none): no variables, the text is literal */
    const char *old =
        "{`Version`:`2008-10-17`,`Statement`:" ALLOW("`*`", "`arn:aws:s3:::b/${aws:username}`") "}";
    assert_int_equal(run_ctx(old, "s3:GetObject", "arn:aws:s3:::b/alice", alice, 1),
                     IAM_DENY_IMPLICIT);
    assert_int_equal(run_ctx(old, "s3:GetObject", "arn:aws:s3:::b/${aws:username}", alice, 1),
                     IAM_ALLOW);
    /* unterminated ${ is literal text */
    const char *open = DOC(ALLOW("`*`", "`arn:aws:s3:::b/${aws:username`"));
    assert_int_equal(run_ctx(open, "s3:GetObject", "arn:aws:s3:::b/${aws:username", alice, 1),
                     IAM_ALLOW);
    /* variables in condition values */
    const char *cond = COND("{`StringEquals`:{`sagemaker:UserProfileName`:`${aws:username}`}}");
    struct iam_ctx_entry match[] = {{.key = "aws:username", .value = "alice"},
                                    {.key = "sagemaker:UserProfileName", .value = "alice"}};
    struct iam_ctx_entry other[] = {{.key = "aws:username", .value = "alice"},
                                    {.key = "sagemaker:UserProfileName", .value = "bob"}};
    assert_int_equal(run_ctx(cond, "sagemaker:CreateApp", "*", match, 2), IAM_ALLOW);
    assert_int_equal(run_ctx(cond, "sagemaker:CreateApp", "*", other, 2), IAM_DENY_IMPLICIT);
    assert_int_equal(run_ctx(cond, "sagemaker:CreateApp", "*", match + 1, 1), IAM_DENY_IMPLICIT);
    /* StringLike with a variable: the resolved part is literal, the rest keeps wildcards */
    struct iam_ctx_entry like[] = {{.key = "aws:username", .value = "a*"},
                                   {.key = "s3:prefix", .value = "home/a*/x"}};
    struct iam_ctx_entry like2[] = {{.key = "aws:username", .value = "a*"},
                                    {.key = "s3:prefix", .value = "home/ab/x"}};
    assert_true(holds("{`StringLike`:{`s3:prefix`:`home/${aws:username}/*`}}", like, 2));
    assert_false(holds("{`StringLike`:{`s3:prefix`:`home/${aws:username}/*`}}", like2, 2));
}

/* ---------------------------------------------------------------------------------------- */
/* condition operators */

static void test_cond_string(void **state)
{
    (void)state;
    struct iam_ctx_entry c[] = {{.key = "sagemaker:DomainId", .value = "d-abcdefghijkl"},
                                {.key = "aws:RequestTag/team", .value = "ML-Ops"}};
    struct iam_ctx_entry empty_value[] = {{.key = "aws:RequestTag/team", .value = ""}};

    assert_true(holds("{`StringEquals`:{`sagemaker:DomainId`:`d-abcdefghijkl`}}", c, 2));
    assert_false(holds("{`StringEquals`:{`sagemaker:DomainId`:`D-ABCDEFGHIJKL`}}", c, 2));
    assert_false(holds("{`StringEquals`:{`sagemaker:DomainId`:`d-*`}}", c, 2));
    /* several values: OR; several keys: AND; several operators: AND */
    assert_true(holds("{`StringEquals`:{`sagemaker:DomainId`:[`x`,`d-abcdefghijkl`]}}", c, 2));
    assert_true(holds("{`StringEquals`:{`sagemaker:DomainId`:`d-abcdefghijkl`,"
                      "`aws:RequestTag/team`:`ML-Ops`}}",
                      c, 2));
    assert_false(holds("{`StringEquals`:{`sagemaker:DomainId`:`d-abcdefghijkl`,"
                       "`aws:RequestTag/team`:`x`}}",
                       c, 2));
    assert_false(holds("{`StringEquals`:{`sagemaker:DomainId`:`d-abcdefghijkl`},"
                       "`StringLike`:{`aws:RequestTag/team`:`x*`}}",
                       c, 2));
    /* condition key names are case-insensitive */
    assert_true(holds("{`StringEquals`:{`SageMaker:domainid`:`d-abcdefghijkl`}}", c, 2));
    /* missing key: positive operators fail, negated ones hold */
    assert_false(holds("{`StringEquals`:{`sagemaker:UserProfileName`:`alice`}}", c, 2));
    assert_true(holds("{`StringNotEquals`:{`sagemaker:UserProfileName`:`alice`}}", c, 2));
    assert_true(holds("{`StringNotEquals`:{`sagemaker:DomainId`:[`a`,`b`]}}", c, 2));
    assert_false(holds("{`StringNotEquals`:{`sagemaker:DomainId`:[`a`,`d-abcdefghijkl`]}}", c, 2));
    assert_true(holds("{`StringEqualsIgnoreCase`:{`aws:RequestTag/team`:`ml-ops`}}", c, 2));
    assert_false(holds("{`StringEqualsIgnoreCase`:{`aws:RequestTag/team`:`ml-ops2`}}", c, 2));
    assert_false(holds("{`StringNotEqualsIgnoreCase`:{`aws:RequestTag/team`:`ML-OPS`}}", c, 2));
    assert_true(holds("{`StringNotEqualsIgnoreCase`:{`aws:RequestTag/team`:`ops`}}", c, 2));
    assert_true(holds("{`StringLike`:{`aws:RequestTag/team`:`ML-*`}}", c, 2));
    assert_true(holds("{`StringLike`:{`aws:RequestTag/team`:`?"
                      "?-O?s`}}",
                      c, 2));
    assert_false(holds("{`StringLike`:{`aws:RequestTag/team`:`ml-*`}}", c, 2));
    assert_false(holds("{`StringNotLike`:{`aws:RequestTag/team`:[`x`,`ML-*`]}}", c, 2));
    assert_true(holds("{`StringNotLike`:{`aws:RequestTag/team`:`x*`}}", c, 2));
    assert_true(holds("{`StringNotLike`:{`aws:RequestTag/absent`:`x*`}}", c, 2));
    assert_false(holds("{`StringLike`:{`aws:RequestTag/absent`:`*`}}", c, 2));
    /* an empty value is present and equal to "" */
    assert_true(holds("{`StringEquals`:{`aws:RequestTag/team`:``}}", empty_value, 1));
    assert_true(holds("{`StringLike`:{`aws:RequestTag/team`:`*`}}", empty_value, 1));
    /* BinaryEquals compares the base64 text */
    struct iam_ctx_entry bin[] = {{.key = "x:bin", .value = "QmluYXJ5"}};
    assert_true(holds("{`BinaryEquals`:{`x:bin`:`QmluYXJ5`}}", bin, 1));
    assert_false(holds("{`BinaryEquals`:{`x:bin`:`qmluyxj5`}}", bin, 1));
}

static void test_cond_numeric(void **state)
{
    (void)state;
    struct iam_ctx_entry c[] = {{.key = "sagemaker:MaxRuntimeInSeconds", .value = "3600"},
                                {.key = "x:bad", .value = "12abc"},
                                {.key = "x:dec", .value = "2.5"}};
    static const struct {
        const char *op, *v;
        int want;
    } cases[] = {
        {"NumericEquals", "3600", 1},
        {"NumericEquals", "3600.0", 1},
        {"NumericEquals", "3601", 0},
        {"NumericNotEquals", "3601", 1},
        {"NumericNotEquals", "3600", 0},
        {"NumericLessThan", "3601", 1},
        {"NumericLessThan", "3600", 0},
        {"NumericLessThanEquals", "3600", 1},
        {"NumericLessThanEquals", "3599", 0},
        {"NumericGreaterThan", "3599", 1},
        {"NumericGreaterThan", "3600", 0},
        {"NumericGreaterThanEquals", "3600", 1},
        {"NumericGreaterThanEquals", "3601", 0},
        {"NumericLessThan", "abc", 0}, /* a policy value that is no number matches nothing */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char block[256];
        snprintf(block, sizeof(block), "{`%s`:{`sagemaker:MaxRuntimeInSeconds`:`%s`}}", cases[i].op,
                 cases[i].v);
        if (holds(block, c, NCTX(c)) != cases[i].want)
            fail_msg("%s %s: want %d", cases[i].op, cases[i].v, cases[i].want);
    }
    /* JSON numbers as values */
    assert_true(holds("{`NumericLessThanEquals`:{`sagemaker:MaxRuntimeInSeconds`:3600}}", c, 3));
    assert_true(holds("{`NumericGreaterThan`:{`x:dec`:2.25}}", c, 3));
    assert_true(holds("{`NumericLessThan`:{`x:dec`:[1,`3`]}}", c, 3));
    /* a context value that is no number satisfies no numeric operator, negated or not */
    assert_false(holds("{`NumericEquals`:{`x:bad`:`12`}}", c, 3));
    assert_false(holds("{`NumericNotEquals`:{`x:bad`:`12`}}", c, 3));
    /* missing key */
    assert_false(holds("{`NumericLessThan`:{`x:absent`:`1`}}", c, 3));
    assert_true(holds("{`NumericNotEquals`:{`x:absent`:`1`}}", c, 3));
    assert_true(holds("{`NumericLessThanIfExists`:{`x:absent`:`1`}}", c, 3));
    assert_false(holds("{`NumericLessThanIfExists`:{`sagemaker:MaxRuntimeInSeconds`:`1`}}", c, 3));
}

static void test_cond_date(void **state)
{
    (void)state;
    struct iam_ctx_entry c[] = {{.key = "aws:CurrentTime", .value = "2026-12-02T10:30:00Z"},
                                {.key = "aws:EpochTime", .value = "1796207400"}};
    assert_true(holds("{`DateGreaterThan`:{`aws:CurrentTime`:`2026-12-01T00:00:00Z`}}", c, 2));
    assert_false(holds("{`DateGreaterThan`:{`aws:CurrentTime`:`2026-12-02T10:30:00Z`}}", c, 2));
    assert_true(
        holds("{`DateGreaterThanEquals`:{`aws:CurrentTime`:`2026-12-02T10:30:00Z`}}", c, 2));
    assert_true(holds("{`DateLessThan`:{`aws:CurrentTime`:`2027-01-01`}}", c, 2));
    assert_true(holds("{`DateLessThan`:{`aws:CurrentTime`:`2026-12-02T10:30:00.001Z`}}", c, 2));
    assert_false(holds("{`DateLessThanEquals`:{`aws:CurrentTime`:`2026-12-02`}}", c, 2));
    assert_true(holds("{`DateEquals`:{`aws:CurrentTime`:`2026-12-02T11:30:00+01:00`}}", c, 2));
    assert_true(holds("{`DateEquals`:{`aws:CurrentTime`:`2026-12-02T05:30:00-05:00`}}", c, 2));
    assert_true(holds("{`DateEquals`:{`aws:CurrentTime`:`1796207400`}}", c, 2));
    assert_true(holds("{`DateEquals`:{`aws:EpochTime`:`2026-12-02T10:30:00Z`}}", c, 2));
    assert_true(holds("{`DateEquals`:{`aws:EpochTime`:1796207400}}", c, 2));
    assert_false(holds("{`DateNotEquals`:{`aws:CurrentTime`:`2026-12-02T10:30:00Z`}}", c, 2));
    assert_true(holds("{`DateNotEquals`:{`aws:CurrentTime`:`2026-12-02T10:30:01Z`}}", c, 2));
    assert_false(holds("{`DateLessThan`:{`aws:TokenIssueTime`:`2030-01-01`}}", c, 2));
    assert_true(holds("{`DateLessThanIfExists`:{`aws:TokenIssueTime`:`2000-01-01`}}", c, 2));
    /* a malformed context date satisfies nothing */
    struct iam_ctx_entry bad[] = {{.key = "aws:CurrentTime", .value = "yesterday"}};
    assert_false(holds("{`DateLessThan`:{`aws:CurrentTime`:`2030-01-01`}}", bad, 1));
    assert_false(holds("{`DateNotEquals`:{`aws:CurrentTime`:`2030-01-01`}}", bad, 1));
}

static void test_cond_bool_null(void **state)
{
    (void)state;
    struct iam_ctx_entry c[] = {{.key = "aws:SecureTransport", .value = "true"},
                                {.key = "aws:MultiFactorAuthPresent", .value = "false"}};
    assert_true(holds("{`Bool`:{`aws:SecureTransport`:`true`}}", c, 2));
    assert_true(holds("{`Bool`:{`aws:SecureTransport`:true}}", c, 2));
    assert_true(holds("{`Bool`:{`aws:SecureTransport`:`TRUE`}}", c, 2));
    assert_false(holds("{`Bool`:{`aws:SecureTransport`:`false`}}", c, 2));
    assert_false(holds("{`Bool`:{`aws:ViaAWSService`:`false`}}", c, 2));
    assert_true(holds("{`BoolIfExists`:{`aws:ViaAWSService`:`false`}}", c, 2));
    assert_true(holds("{`BoolIfExists`:{`aws:MultiFactorAuthPresent`:`false`}}", c, 2));
    assert_false(holds("{`BoolIfExists`:{`aws:MultiFactorAuthPresent`:`true`}}", c, 2));
    /* Null: "true" holds when the key is absent, "false" when it is present */
    assert_true(holds("{`Null`:{`aws:RequestTag/team`:`true`}}", c, 2));
    assert_false(holds("{`Null`:{`aws:RequestTag/team`:`false`}}", c, 2));
    assert_false(holds("{`Null`:{`aws:SecureTransport`:`true`}}", c, 2));
    assert_true(holds("{`Null`:{`aws:SecureTransport`:false}}", c, 2));
    /* a multi-valued key with no values counts as absent */
    struct iam_ctx_entry none[] = {{.key = "aws:TagKeys", .values = NULL, .nvalues = 0}};
    assert_true(holds("{`Null`:{`aws:TagKeys`:`true`}}", none, 1));
}

static void test_cond_ip_arn(void **state)
{
    (void)state;
    struct iam_ctx_entry c[] = {
        {.key = "aws:SourceIp", .value = "203.0.113.7"},
        {.key = "x:ip6", .value = "2001:db8::1"},
        {.key = "aws:PrincipalArn", .value = "arn:aws:iam::" ACCOUNT ":user/alice"},
    };
    assert_true(holds("{`IpAddress`:{`aws:SourceIp`:`203.0.113.0/24`}}", c, 3));
    assert_true(holds("{`IpAddress`:{`aws:SourceIp`:[`10.0.0.0/8`,`203.0.113.7`]}}", c, 3));
    assert_false(holds("{`IpAddress`:{`aws:SourceIp`:`203.0.114.0/24`}}", c, 3));
    assert_true(holds("{`IpAddress`:{`aws:SourceIp`:`0.0.0.0/0`}}", c, 3));
    assert_false(holds("{`NotIpAddress`:{`aws:SourceIp`:`203.0.113.0/25`}}", c, 3));
    assert_true(holds("{`NotIpAddress`:{`aws:SourceIp`:`203.0.113.128/25`}}", c, 3));
    assert_true(holds("{`IpAddress`:{`x:ip6`:`2001:db8::/32`}}", c, 3));
    assert_false(holds("{`IpAddress`:{`x:ip6`:`2001:db9::/32`}}", c, 3));
    assert_false(holds("{`IpAddress`:{`x:ip6`:`203.0.113.0/24`}}", c, 3));
    assert_false(holds("{`IpAddress`:{`aws:SourceIp`:`203.0.113.0/33`}}", c, 3));
    assert_true(holds("{`ArnLike`:{`aws:PrincipalArn`:`arn:aws:iam::*:user/*`}}", c, 3));
    assert_true(
        holds("{`ArnEquals`:{`aws:PrincipalArn`:`arn:aws:iam::" ACCOUNT ":user/alice`}}", c, 3));
    assert_true(holds("{`ArnEquals`:{`aws:PrincipalArn`:`arn:aws:iam::*:user/al?ce`}}", c, 3));
    assert_false(holds("{`ArnLike`:{`aws:PrincipalArn`:`arn:aws:iam::*:role/*`}}", c, 3));
    assert_false(holds("{`ArnNotLike`:{`aws:PrincipalArn`:`arn:aws:iam::*:user/*`}}", c, 3));
    assert_true(holds("{`ArnNotEquals`:{`aws:PrincipalArn`:`arn:aws:iam::*:user/bob`}}", c, 3));
    assert_false(holds("{`ArnLike`:{`aws:SourceIp`:`*:*`}}", c, 3));
    assert_true(holds("{`ArnNotLike`:{`aws:SourceArn`:`arn:*`}}", c, 3));
}

static void test_cond_sets(void **state)
{
    (void)state;
    const char *keys[] = {"team", "owner"};
    const char *types[] = {"ml.m5.large", "ml.p4d.24xlarge"};
    struct iam_ctx_entry c[] = {{.key = "aws:TagKeys", .values = keys, .nvalues = 2},
                                {.key = "sagemaker:InstanceTypes", .values = types, .nvalues = 2}};
    struct iam_ctx_entry none[] = {{.key = "aws:TagKeys", .values = keys, .nvalues = 0}};

    /* ForAllValues: every request value is in the policy's set; vacuous when absent */
    assert_true(holds("{`ForAllValues:StringEquals`:{`aws:TagKeys`:[`team`,`owner`,`x`]}}", c, 2));
    assert_false(holds("{`ForAllValues:StringEquals`:{`aws:TagKeys`:[`team`]}}", c, 2));
    assert_true(holds("{`ForAllValues:StringEquals`:{`aws:TagKeys`:[`team`]}}", NULL, 0));
    assert_true(holds("{`ForAllValues:StringEquals`:{`aws:TagKeys`:[`team`]}}", none, 1));
    assert_true(holds("{`ForAllValues:StringLike`:{`sagemaker:InstanceTypes`:`ml.*`}}", c, 2));
    assert_false(holds("{`ForAllValues:StringLike`:{`sagemaker:InstanceTypes`:`ml.m5.*`}}", c, 2));
    assert_true(holds("{`ForAllValues:StringNotLike`:{`sagemaker:InstanceTypes`:`ml.g*`}}", c, 2));
    assert_false(holds("{`ForAllValues:StringNotLike`:{`sagemaker:InstanceTypes`:`ml.p*`}}", c, 2));
    /* ForAnyValue: at least one request value matches; false when absent */
    assert_true(holds("{`ForAnyValue:StringEquals`:{`aws:TagKeys`:[`owner`]}}", c, 2));
    assert_false(holds("{`ForAnyValue:StringEquals`:{`aws:TagKeys`:[`cost`]}}", c, 2));
    assert_false(holds("{`ForAnyValue:StringEquals`:{`aws:TagKeys`:[`team`]}}", NULL, 0));
    assert_false(holds("{`ForAnyValue:StringEquals`:{`aws:TagKeys`:[`team`]}}", none, 1));
    assert_true(holds("{`ForAnyValue:StringLike`:{`sagemaker:InstanceTypes`:`ml.p*`}}", c, 2));
    assert_true(holds("{`ForAnyValue:StringNotEquals`:{`aws:TagKeys`:`team`}}", c, 2));
    assert_false(holds("{`ForAnyValue:StringNotEquals`:{`aws:TagKeys`:[`team`,`owner`]}}", c, 2));
    /* IfExists with a qualifier */
    assert_true(holds("{`ForAnyValue:StringEqualsIfExists`:{`aws:TagKeys`:`x`}}", NULL, 0));
    assert_false(holds("{`ForAnyValue:StringEqualsIfExists`:{`aws:TagKeys`:`x`}}", c, 2));
    /* no qualifier on a multi-valued key: positive = any, negated = none matches */
    assert_true(holds("{`StringEquals`:{`aws:TagKeys`:`owner`}}", c, 2));
    assert_false(holds("{`StringNotEquals`:{`aws:TagKeys`:`owner`}}", c, 2));
    assert_true(holds("{`StringNotEquals`:{`aws:TagKeys`:`cost`}}", c, 2));
    /* the "deny GPU instance types" pattern from SageMaker's documentation */
    const char *gpu = DOC(ALLOW("`*`", "`*`") ",{`Effect`:`Deny`,`Action`:`sagemaker:*`,"
                                              "`Resource`:`*`,`Condition`:{`ForAnyValue:"
                                              "StringLike`:{`sagemaker:InstanceTypes`:`ml.p*`}}}");
    assert_int_equal(run_ctx(gpu, "sagemaker:CreateTrainingJob", "*", c, 2), IAM_DENY_EXPLICIT);
    const char *cpu[] = {"ml.m5.large"};
    struct iam_ctx_entry cpuc[] = {{.key = "sagemaker:InstanceTypes", .values = cpu, .nvalues = 1}};
    assert_int_equal(run_ctx(gpu, "sagemaker:CreateTrainingJob", "*", cpuc, 1), IAM_ALLOW);
}

static void test_cond_tags_scenario(void **state)
{
    (void)state;
    /* alice may create apps only in her own profile, tagged with her team, and tags limited */
    const char *doc =
        DOC("{`Effect`:`Allow`,`Action`:[`sagemaker:CreateApp`,`sagemaker:DeleteApp`],"
            "`Resource`:`arn:aws:sagemaker:*:*:app/*/${aws:username}/*`,"
            "`Condition`:{`StringEquals`:{`aws:RequestTag/team`:`${aws:PrincipalTag/team}`},"
            "`ForAllValues:StringEquals`:{`aws:TagKeys`:[`team`]},"
            "`StringEqualsIfExists`:{`sagemaker:ResourceTag/owner`:`${aws:username}`}}}");
    const char *tk[] = {"team"};
    const char *tk2[] = {"team", "cost"};
    struct iam_ctx_entry ok[] = {{.key = "aws:username", .value = "alice"},
                                 {.key = "aws:PrincipalTag/team", .value = "vision"},
                                 {.key = "aws:RequestTag/team", .value = "vision"},
                                 {.key = "aws:TagKeys", .values = tk, .nvalues = 1}};
    assert_int_equal(run_ctx(doc, "sagemaker:CreateApp", APP_ARN("alice"), ok, 4), IAM_ALLOW);
    assert_int_equal(run_ctx(doc, "sagemaker:CreateApp", APP_ARN("bob"), ok, 4), IAM_DENY_IMPLICIT);
    ok[2].value = "speech";
    assert_int_equal(run_ctx(doc, "sagemaker:CreateApp", APP_ARN("alice"), ok, 4),
                     IAM_DENY_IMPLICIT);
    ok[2].value = "vision";
    ok[3].values = tk2;
    ok[3].nvalues = 2;
    assert_int_equal(run_ctx(doc, "sagemaker:CreateApp", APP_ARN("alice"), ok, 4),
                     IAM_DENY_IMPLICIT);
    struct iam_ctx_entry del[] = {{.key = "aws:username", .value = "alice"},
                                  {.key = "aws:PrincipalTag/team", .value = "vision"},
                                  {.key = "aws:RequestTag/team", .value = "vision"},
                                  {.key = "sagemaker:ResourceTag/owner", .value = "bob"}};
    assert_int_equal(run_ctx(doc, "sagemaker:DeleteApp", APP_ARN("alice"), del, 4),
                     IAM_DENY_IMPLICIT);
    del[3].value = "alice";
    assert_int_equal(run_ctx(doc, "sagemaker:DeleteApp", APP_ARN("alice"), del, 4), IAM_ALLOW);
}

static void test_cond_unknown_empty_operator(void **state)
{
    (void)state;
    /* IAM accepts an unknown operator whose block is empty; it constrains nothing */
    assert_true(holds("{`NoSuchOperator`:{}}", NULL, 0));
    assert_true(holds("{`StringEquals`:{}}", NULL, 0));
    assert_true(holds("{}", NULL, 0));
    /* an empty value list never matches a positive operator */
    struct iam_ctx_entry c[] = {{.key = "x:k", .value = "v"}};
    assert_false(holds("{`StringEquals`:{`x:k`:[]}}", c, 1));
    assert_true(holds("{`StringNotEquals`:{`x:k`:[]}}", c, 1));
}

/* ---------------------------------------------------------------------------------------- */
/* validation */

#define S_OK   "`Effect`:`Allow`,`Action`:`s3:ListBucket`,`Resource`:`arn:aws:s3:::b`"
#define V      "`Version`:`2012-10-17`"
#define SYNTAX "Syntax errors in policy."
#define LEGACY "The policy failed legacy parsing"
#define VENDOR "Actions/Conditions must be prefaced by a vendor, e.g., iam, sdb, ec2, etc."

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *doc, *msg;
    } cases[] = {
        {"This is not a json document", SYNTAX},
        {"[]", SYNTAX},
        {"{`Version`:`2013-10-17`,`Statement`:{" S_OK "}}", SYNTAX},
        {"{`Version`:null,`Statement`:{" S_OK "}}", SYNTAX},
        {"{" V "}", SYNTAX},
        {"{" V ",`Statement`:[]}", SYNTAX},
        {"{" V ",`Statement`:[`afd`]}", SYNTAX},
        {"{" V ",`Statement`:`x`}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK "},`Extra field`:`value`}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Extra field`:`value`}}", SYNTAX},
        {"{" V ",`Id`:[`x`],`Statement`:{" S_OK "}}", SYNTAX},
        {"{" V ",`Statement`:{`Effect`:`invalid`,`Action`:`s3:L`,`Resource`:`*`}}", SYNTAX},
        {"{" V ",`Statement`:{`Action`:`s3:L`,`Resource`:`*`}}", SYNTAX},
        {"{" V ",`Statement`:{`Effect`:1,`Action`:`s3:L`,`Resource`:`*`}}", SYNTAX},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:{`a`:`b`}}}", SYNTAX},
        {"{" V ",`Statement`:{`Effect`:`Deny`,`Action`:`s3:L`,`Resource`:[`x`,{}]}}", SYNTAX},
        {"{" V ",`Statement`:{`Effect`:`Deny`,`Action`:[[]],`Resource`:`*`}}", SYNTAX},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:{},`Resource`:`*`}}", SYNTAX},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:5,`Resource`:`*`}}", SYNTAX},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`NotAction`:`s3:L`,`Action`:`iam:d`,"
         "`Resource`:`*`}}",
         SYNTAX},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`*`,`NotResource`:"
         "`*`}}",
         SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:[]}}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:`a`}}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`a`:`b`}}}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`DateGreaterThan`:{`a`:{}}}}}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`StringEquals`:{`a`:null}}}}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`StringEquals`:{`a`:[[`x`]]}}}}", SYNTAX},
        /* an unknown operator (with a body) */
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`x`:{`a`:`1`}}}}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`StringEqualz`:{`a`:`1`}}}}", SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`ForAnyValue::StringEqualsIfExists`:"
         "{`a`:`1`}}}}",
         SYNTAX},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`stringequals`:{`a`:`1`}}}}", SYNTAX},
        {"{" V ",`Statement`:{`Sid`:{}," S_OK "}}", SYNTAX},
        /* duplicate keys are refused rather than silently dropped */
        {"{" V ",`Statement`:{" S_OK ",`Effect`:`Deny`}}", SYNTAX},
        /* principals belong to resource policies */
        {"{" V ",`Statement`:{" S_OK ",`Principal`:{`AWS`:`*`}}}",
         "Policy document should not specify a principal."},
        {"{" V ",`Statement`:{" S_OK ",`NotPrincipal`:`*`}}",
         "Policy document should not specify a principal."},
        /* legacy parsing */
        {"{" V ",`Statement`:{`Effect`:`denY`,`Action`:`s3:L`,`Resource`:`arn:aws:s3:::b`}}",
         LEGACY},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`DateGreaterThan`:{`a`:`sdfdsf`}}}}", LEGACY},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`DateLessThanEquals`:{`a`:`234-13`}}}}",
         LEGACY},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`DateLessThanEquals`:{`a`:"
         "`2016-12-13t2:00:00.593194+1`}}}}",
         LEGACY},
        {"{" V ",`Statement`:{" S_OK ",`Condition`:{`DateLessThan`:{`a`:"
         "`9223372036854775808`}}}}",
         LEGACY},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:"
         "`arn:aws:s3::example_bucket`}}",
         LEGACY},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`arn:aws::fdsasf`}}",
         LEGACY},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`NotAction`:`s3:L`,`Resource`:"
         "`arn:aws::::example_bucket`}}",
         LEGACY},
        /* Sid */
        {"{" V ",`Statement`:[{`Sid`:`sdf`," S_OK "},{`Sid`:`sdf`,`Effect`:`Allow`}]}",
         "Statement IDs (SID) in a single policy must be unique."},
        /* actions, resources */
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Resource`:`*`}}",
         "Policy statement must contain actions."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:[],`Resource`:`*`}}",
         "Policy statement must contain actions."},
        {"{" V ",`Statement`:[{`Effect`:`Deny`},{" S_OK "}]}",
         "Policy statement must contain actions."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`}}",
         "Policy statement must contain resources."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`invalid`}}",
         "Policy statement must contain resources."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:[]}}",
         "Policy statement must contain resources."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`invalid resource`}}",
         "Resource invalid resource must be in ARN format or \"*\"."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:``}}",
         "Resource  must be in ARN format or \"*\"."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`NotAction`:`s3:L`,`Resource`:`a:bsdfdsafsad`}}",
         "Partition \"bsdfdsafsad\" is not valid for resource \"arn:bsdfdsafsad:*:*:*:*\"."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`NotAction`:`s3:L`,`Resource`:`a:b:cadfsdf`}}",
         "Partition \"b\" is not valid for resource \"arn:b:cadfsdf:*:*:*\"."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`NotAction`:`s3:L`,`Resource`:`a:b:c:d:e:f:g:h`}}",
         "Partition \"b\" is not valid for resource \"arn:b:c:d:e:f:g:h\"."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`aws:s3:::b`}}",
         "Partition \"s3\" is not valid for resource \"arn:s3:::b:*\"."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`arn:aws`}}",
         "Resource vendor must be fully qualified and cannot contain regexes."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:"
         "`arn:aws:iam:us-east-1::user/x`}}",
         "IAM resource arn:aws:iam:us-east-1::user/x cannot contain region information."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:"
         "`arn:aws:s3:us-east-1::b`}}",
         "Resource arn:aws:s3:us-east-1::b can not contain region information."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`arn:aws:iam:::b`}}",
         "IAM resource path must either be \"*\" or start with user/, federated-user/, role/, "
         "group/, instance-profile/, mfa/, server-certificate/, policy/, sms-mfa/, "
         "saml-provider/, oidc-provider/, report/, access-report/."},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`invalid`,`Resource`:`*`}}", VENDOR},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`NotAction`:``,`Resource`:`*`}}", VENDOR},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`a a:ListBucket`,`Resource`:`*`}}",
         "Vendor a a is not valid"},
        {"{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:List:Bucket`,`Resource`:`*`}}",
         "Actions/Condition can contain only one colon."},
        /* the version stage comes before the legacy one; grammar before everything */
        {"{`Version`:`2012-10-17`,`Statement`:{`Effect`:`allow`,`Principal`:`*`}}",
         "Policy document should not specify a principal."},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        expect_malformed(cases[i].doc, cases[i].msg);
}

static void test_valid_documents(void **state)
{
    (void)state;
    /* documents IAM accepts (moto's list of valid policies, abridged) */
    const char *docs[] = {
        "{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`iam: asdf safdsf af `,`Resource`:`*`}}",
        "{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3-s.x:L`,`Resource`:`arn:aws:s33:::b`}}",
        "{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`arn:aws:fdsasf`}}",
        "{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`arn:aws:iam:::user/x`}}",
        "{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`arn:aws:iam::*:*`}}",
        "{" V ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:"
        "`arn:aws:ec2:us-east-1::b`}}",
        "{" V ",`Statement`:{" S_OK ",`Condition`:{`DateGreaterThan`:{`a`:`01T`}}}}",
        "{" V ",`Statement`:{" S_OK ",`Condition`:{`DateGreaterThan`:{`a`:[]}}}}",
        "{" V ",`Statement`:{" S_OK ",`Condition`:{`x`:{},`y`:{}}}}",
        "{" V ",`Statement`:{" S_OK ",`Condition`:{`DateLessThanEquals`:{`a`:"
        "`2016-12-13T21:20:37.593194+00:00`}}}}",
        "{" V ",`Statement`:{" S_OK ",`Condition`:{`DateLessThan`:{`a`:`-292275054`}}}}",
        "{" V ",`Statement`:{" S_OK ",`Condition`:{`ForAnyValue:StringEqualsIfExists`:{`a`:"
        "`asf`}}}}",
        "{" V ",`Statement`:{" S_OK ",`Condition`:{`NullIfExists`:{`a`:`true`}}}}",
        "{" V ",`Statement`:[{`Sid`:`a`," S_OK "},{`Sid`:``," S_OK "},{`Sid`:``," S_OK "}]}",
        "{" V ",`Statement`:{`Effect`:`Allow`,`NotAction`:`s3:L`,`NotResource`:`*`}}",
        /* Latin-1 range characters are allowed */
        "{" V
        ",`Statement`:{`Effect`:`Allow`,`Action`:`s3:L`,`Resource`:`arn:aws:s3:::caf\xc3\xa9`}}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
        iam_policy_free(must_parse(docs[i]));
}

static void test_managed_version(void **state)
{
    (void)state;
    const char *none = "{`Statement`:{" S_OK "}}";
    const char *old = "{`Version`:`2008-10-17`,`Statement`:{" S_OK "}}";
    const char *msg = "Policy document must be version 2012-10-17 or greater.";
    expect_err_flags(none, IAM_PARSE_MANAGED, TY_EMALFORMED, msg);
    expect_err_flags(old, IAM_PARSE_MANAGED, TY_EMALFORMED, msg);
    /* the version is checked before the legacy parser */
    expect_err_flags("{`Statement`:{`Effect`:`denY`,`Action`:`s3:L`,`Resource`:`*`}}",
                     IAM_PARSE_MANAGED, TY_EMALFORMED, msg);
    /* inline policies take the older versions */
    iam_policy_free(must_parse(none));
    iam_policy_free(must_parse(old));
    /* and the error maps to IAM's wire name */
    assert_string_equal(ty_err_aws_name(TY_EMALFORMED), "MalformedPolicyDocument");
    assert_int_equal(ty_err_http_status(TY_EMALFORMED), 400);
}

/* ---------------------------------------------------------------------------------------- */
/* limits and hostile input */

static void test_size_limits(void **state)
{
    (void)state;
    struct iam_policy *p = NULL;
    struct ty_err err;
    size_t cap = IAM_MAX_DOC_BYTES + 64;
    char *doc = malloc(cap);
    assert_non_null(doc);

    /* the character count ignores white space and counts code points */
    const char *ws = " { \"a\" :\t\"\xc3\xa9\" }\r\n";
    assert_int_equal(iam_policy_chars(ws, strlen(ws)), 9);
    assert_int_equal(iam_policy_chars(NULL, 4), 0);

    /* 6144 characters: accepted; one more: LimitExceeded */
    const char *head = "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\","
                       "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/";
    const char *tail = "\"}}";
    size_t fixed = strlen(head) + strlen(tail);
    for (int extra = 0; extra <= 1; extra++) {
        size_t body = IAM_MAX_CHARS - fixed + (size_t)extra;
        size_t n = 0;
        memcpy(doc, head, strlen(head));
        n += strlen(head);
        memset(doc + n, 'x', body);
        n += body;
        memcpy(doc + n, tail, strlen(tail));
        n += strlen(tail);
        assert_int_equal(iam_policy_chars(doc, n), IAM_MAX_CHARS + (size_t)extra);
        int rc = iam_policy_parse(doc, n, &p, &err);
        if (extra) {
            assert_int_equal(rc, -TY_ELIMIT);
            assert_string_equal(err.msg, "Cannot exceed quota for PolicySize: 6144");
            assert_null(p);
        } else {
            assert_int_equal(rc, 0);
            iam_policy_free(p);
            p = NULL;
        }
    }
    /* white space does not count, up to the API's 131072-byte limit */
    const char *small =
        "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"}}";
    memset(doc, ' ', IAM_MAX_DOC_BYTES);
    memcpy(doc + IAM_MAX_DOC_BYTES - strlen(small), small, strlen(small));
    assert_int_equal(iam_policy_parse(doc, IAM_MAX_DOC_BYTES, &p, &err), 0);
    iam_policy_free(p);
    p = NULL;
    memset(doc, ' ', IAM_MAX_DOC_BYTES + 1);
    memcpy(doc + IAM_MAX_DOC_BYTES + 1 - strlen(small), small, strlen(small));
    assert_int_equal(iam_policy_parse(doc, IAM_MAX_DOC_BYTES + 1, &p, &err), -TY_EINVAL);
    assert_non_null(strstr(err.msg, "less than or equal to 131072"));
    assert_int_equal(iam_policy_parse(doc, 0, &p, &err), -TY_EINVAL);
    assert_null(p);
    free(doc);
}

static void test_hostile_input(void **state)
{
    (void)state;
    struct iam_policy *p = NULL;
    struct ty_err err;
    char deep[4096];
    size_t n = 0;

    /* deep nesting, inside and outside a valid shape */
    for (int i = 0; i < 2000; i++)
        deep[n++] = '[';
    assert_int_equal(iam_policy_parse(deep, n, &p, &err), -TY_EMALFORMED);
    assert_string_equal(err.msg, SYNTAX);
    expect_malformed("{" V ",`Statement`:{" S_OK ",`Condition`:{`StringEquals`:{`a`:[[[[[`x`]]]]]}}"
                     "}}",
                     SYNTAX);
    /* brackets inside strings do not count as depth */
    iam_policy_free(must_parse(DOC(ALLOW("`s3:x`", "`arn:aws:s3:::[[[[[[[[[[[[{{{{{{{{{{`"))));
    /* ill-formed UTF-8 and NUL */
    const char *bad[] = {
        "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"\xff\"}}",
        "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"\xc3\"}}",
        "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"\xed\xa0\x80\"}}",
        "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"\\u0000\"}}",
        "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"}",
        "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"*\"}}}",
        "\"",
        "{",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = iam_policy_parse(bad[i], strlen(bad[i]), &p, &err);
        if (rc != -TY_EMALFORMED)
            fail_msg("bad[%zu]: rc %d %s", i, rc, err.msg);
        assert_null(p);
    }
    /* characters the API refuses: controls, and code points above U+00FF */
    const char nul[] = "{\"Statement\":{}}\0garbage";
    assert_int_equal(iam_policy_parse(nul, sizeof(nul) - 1, &p, &err), -TY_EINVAL);
    const char *cjk =
        "{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"*\",\"Resource\":\"\xe4\xb8"
        "\xad\"}}";
    assert_int_equal(iam_policy_parse(cjk, strlen(cjk), &p, &err), -TY_EINVAL);
    assert_null(p);
    /* NULL arguments */
    assert_int_equal(iam_policy_parse(NULL, 3, &p, &err), -TY_EINVAL);
    assert_int_equal(iam_policy_parse("{}", 2, NULL, &err), -TY_EINVAL);
    assert_int_equal(iam_policy_parse("{}", 2, &p, NULL), -TY_EMALFORMED);
    iam_policy_free(NULL);
    assert_int_equal(iam_policy_nstatements(NULL), 0);
    assert_int_equal(iam_evaluate(NULL, 3, NULL), IAM_DENY_IMPLICIT);

    /* a request with NULL or empty strings is evaluated, never crashes */
    struct iam_policy *all = must_parse(DOC(ALLOW("`*`", "`*`")));
    struct iam_policy *own = must_parse(DOC(ALLOW("`*`", "`arn:aws:s3:::${aws:username}`") "," DENY(
        "`*`", "`arn:aws:*`") ",{`Effect`:`Deny`,`Action`:`*`,`Resource`:`*`,`Condition`:{"
                              "`StringLike`:{`a:b`:`${c:d}*`}}}"));
    const struct iam_policy *ps[] = {all, own};
    struct iam_ctx_entry weird[] = {{.key = NULL, .value = "x"},
                                    {.key = "aws:username", .values = NULL, .nvalues = 5},
                                    {.key = "a:b", .value = NULL}};
    const char *holes[] = {NULL, "v", NULL};
    struct iam_ctx_entry sparse[] = {{.key = "c:d", .values = holes, .nvalues = 3},
                                     {.key = "a:b", .value = "v-and-more"}};
    struct iam_request r1 = {NULL, NULL, weird, 3};
    struct iam_request r2 = {"", "", NULL, 0};
    struct iam_request r3 = {"s3:GetObject", "x", sparse, 2};
    assert_int_equal(iam_evaluate(ps, 2, &r1), IAM_ALLOW);
    assert_int_equal(iam_evaluate(ps, 2, &r2), IAM_ALLOW);
    /* the one non-NULL value of c:d resolves the variable */
    assert_int_equal(iam_evaluate(ps, 2, &r3), IAM_DENY_EXPLICIT);

    /* pathological wildcards stay polynomial */
    char pat[4096], arn[4096];
    size_t pl = (size_t)snprintf(pat, sizeof(pat), "arn:aws:s3:::");
    for (int i = 0; i < 400; i++)
        pl += (size_t)snprintf(pat + pl, sizeof(pat) - pl, "*a");
    snprintf(pat + pl, sizeof(pat) - pl, "b");
    snprintf(arn, sizeof(arn), "arn:aws:s3:::");
    memset(arn + strlen(arn), 'a', 3000);
    arn[13 + 3000] = '\0';
    char doc[8192];
    snprintf(doc, sizeof(doc), DOC(ALLOW("`s3:*`", "`%s`")), pat);
    assert_int_equal(run(doc, "s3:GetObject", arn), IAM_DENY_IMPLICIT);
    iam_policy_free(all);
    iam_policy_free(own);
}

/* ---------------------------------------------------------------------------------------- */
/* concurrency and messages */

struct worker {
    const struct iam_policy *const *ps;
    size_t n;
    int bad;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct iam_ctx_entry alice[] = {{.key = "aws:username", .value = "alice"}};
    struct iam_ctx_entry bob[] = {{.key = "aws:username", .value = "bob"}};
    for (int i = 0; i < 2000; i++) {
        struct iam_request a = {"sagemaker:CreateApp", APP_ARN("alice"), alice, 1};
        struct iam_request b = {"sagemaker:CreateApp", APP_ARN("alice"), bob, 1};
        struct iam_request d = {"sagemaker:DeleteDomain", "*", alice, 1};
        if (iam_evaluate(w->ps, w->n, &a) != IAM_ALLOW ||
            iam_evaluate(w->ps, w->n, &b) != IAM_DENY_IMPLICIT ||
            iam_evaluate(w->ps, w->n, &d) != IAM_DENY_EXPLICIT)
            w->bad++;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    struct iam_policy *p = must_parse(
        DOC(ALLOW("`sagemaker:*`", "`arn:aws:sagemaker:*:*:app/*/${aws:username}/*`") "," DENY(
            "`sagemaker:Delete*`", "`*`")));
    const struct iam_policy *ps[] = {p};
    pthread_t t[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){ps, 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].bad, 0);
    }
    iam_policy_free(p);
}

static void test_denial_message(void **state)
{
    (void)state;
    char buf[1024];
    const char *user = "arn:aws:iam::" ACCOUNT ":user/alice";
    const char *app =
        "arn:aws:sagemaker:us-east-1:" ACCOUNT ":app/d-xxxx/alice/detailedprofiler/default";
    iam_denial_message(buf, sizeof(buf), user, "sagemaker:CreateApp", app, IAM_DENY_IMPLICIT, NULL);
    assert_string_equal(buf, "User: arn:aws:iam::000000000000:user/alice is not authorized to "
                             "perform: sagemaker:CreateApp on resource: arn:aws:sagemaker:us-"
                             "east-1:000000000000:app/d-xxxx/alice/detailedprofiler/default "
                             "because no identity-based policy allows the sagemaker:CreateApp "
                             "action");
    iam_denial_message(buf, sizeof(buf), user, "sagemaker:CreateApp", app, IAM_DENY_EXPLICIT, NULL);
    assert_string_equal(buf, "User: arn:aws:iam::000000000000:user/alice is not authorized to "
                             "perform: sagemaker:CreateApp on resource: arn:aws:sagemaker:us-"
                             "east-1:000000000000:app/d-xxxx/alice/detailedprofiler/default "
                             "with an explicit deny in an identity-based policy");
    iam_denial_message(buf, sizeof(buf), user, "sagemaker:ListDomains", "*", IAM_DENY_EXPLICIT,
                       "arn:aws:iam::000000000000:policy/NoStudio");
    assert_string_equal(buf, "User: arn:aws:iam::000000000000:user/alice is not authorized to "
                             "perform: sagemaker:ListDomains with an explicit deny in an "
                             "identity-based policy: arn:aws:iam::000000000000:policy/NoStudio");
    /* truncation is safe and reports the full length */
    int full = iam_denial_message(buf, 10, user, "a:b", app, IAM_DENY_IMPLICIT, NULL);
    assert_int_equal(strlen(buf), 9);
    assert_true(full > 100);

    struct ty_err err;
    struct iam_request req = {"sagemaker:DeleteApp", app, NULL, 0};
    assert_int_equal(iam_deny_error(&err, user, &req, IAM_DENY_IMPLICIT, NULL), -TY_EDENIED);
    assert_int_equal(err.code, TY_EDENIED);
    assert_string_equal(ty_err_aws_name(err.code), "AccessDeniedException");
    assert_int_equal(ty_err_http_status(err.code), 403);
    assert_non_null(strstr(err.msg, "because no identity-based policy allows the "
                                    "sagemaker:DeleteApp action"));
    assert_int_equal(iam_deny_error(NULL, user, &req, IAM_DENY_EXPLICIT, NULL), -TY_EDENIED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_deny),
        cmocka_unit_test(test_allow_and_explicit_deny),
        cmocka_unit_test(test_statement_forms),
        cmocka_unit_test(test_action_wildcards),
        cmocka_unit_test(test_not_action),
        cmocka_unit_test(test_resource_matching),
        cmocka_unit_test(test_not_resource),
        cmocka_unit_test(test_variables),
        cmocka_unit_test(test_decision_table),
        cmocka_unit_test(test_operator_table),
        cmocka_unit_test(test_cond_string),
        cmocka_unit_test(test_cond_numeric),
        cmocka_unit_test(test_cond_date),
        cmocka_unit_test(test_cond_bool_null),
        cmocka_unit_test(test_cond_ip_arn),
        cmocka_unit_test(test_cond_sets),
        cmocka_unit_test(test_cond_tags_scenario),
        cmocka_unit_test(test_cond_unknown_empty_operator),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_valid_documents),
        cmocka_unit_test(test_managed_version),
        cmocka_unit_test(test_size_limits),
        cmocka_unit_test(test_hostile_input),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_denial_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
