/*
 * authz.c - the operation table, request contexts, per-thread policy cache and the decision
 * (authz.h).
 *
 * Invariants: fails closed - an operation without a row, a principal that is not a current
 * IAM user, a stored policy that no longer parses (skipped) or a context too large to build
 * never allows more than the policies say. The cache holds parsed policies keyed by the user's
 * (id, ver); store_iam.c takes a new ver on every change of policies or tags. (id, ver) is read
 * again only when the generation (authgen.h) moved since it was last read.
 */
#define _GNU_SOURCE /* strcasestr, vasprintf */
#include "authz.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "authgen.h"
#include "session.h"
#include "store_iam.h"

#define SM(op, res, cond)                                                                          \
    {                                                                                              \
        "sagemaker", #op, "sagemaker:" #op, res, cond                                              \
    }
#define LG(op, res, cond)                                                                          \
    {                                                                                              \
        "logs", #op, "logs:" #op, res, cond                                                        \
    }
#define CW(op, res, cond)                                                                          \
    {                                                                                              \
        "cloudwatch", #op, "cloudwatch:" #op, res, cond                                            \
    }
#define IA(op, res, cond)                                                                          \
    {                                                                                              \
        "iam", #op, "iam:" #op, res, cond                                                          \
    }

/* The one table: every operation trainyard serves (ops/optable.c's op_table[], the IAM API). */
static const struct authz_op authz_ops[] = {
    /* training jobs */
    SM(CreateTrainingJob, AUTHZ_RES_TRAINING_JOB,
       AUTHZ_C_REQTAGS | AUTHZ_C_INSTTYPES | AUTHZ_C_TRAINING),
    SM(DescribeTrainingJob, AUTHZ_RES_TRAINING_JOB, AUTHZ_C_RESTAGS),
    SM(ListTrainingJobs, AUTHZ_RES_STAR, 0),
    SM(StopTrainingJob, AUTHZ_RES_TRAINING_JOB, AUTHZ_C_RESTAGS),
    SM(UpdateTrainingJob, AUTHZ_RES_TRAINING_JOB, AUTHZ_C_RESTAGS | AUTHZ_C_INSTTYPES),
    SM(DeleteTrainingJob, AUTHZ_RES_TRAINING_JOB, AUTHZ_C_RESTAGS),
    /* tags */
    SM(AddTags, AUTHZ_RES_TAGGED, AUTHZ_C_REQTAGS | AUTHZ_C_RESTAGS),
    SM(ListTags, AUTHZ_RES_TAGGED, AUTHZ_C_RESTAGS),
    SM(DeleteTags, AUTHZ_RES_TAGGED, AUTHZ_C_TAGKEYS | AUTHZ_C_RESTAGS),
    /* studio */
    SM(CreateDomain, AUTHZ_RES_DOMAIN_NEW, AUTHZ_C_REQTAGS | AUTHZ_C_STUDIO),
    SM(DescribeDomain, AUTHZ_RES_DOMAIN, AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN),
    SM(ListDomains, AUTHZ_RES_STAR, 0),
    SM(UpdateDomain, AUTHZ_RES_DOMAIN, AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_STUDIO),
    SM(DeleteDomain, AUTHZ_RES_DOMAIN, AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN),
    SM(CreateUserProfile, AUTHZ_RES_PROFILE,
       AUTHZ_C_REQTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_PROFILE | AUTHZ_C_STUDIO),
    SM(DescribeUserProfile, AUTHZ_RES_PROFILE, AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_PROFILE),
    SM(ListUserProfiles, AUTHZ_RES_STAR, 0),
    SM(UpdateUserProfile, AUTHZ_RES_PROFILE,
       AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_PROFILE | AUTHZ_C_STUDIO),
    SM(DeleteUserProfile, AUTHZ_RES_PROFILE, AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_PROFILE),
    SM(CreateApp, AUTHZ_RES_APP,
       AUTHZ_C_REQTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_PROFILE | AUTHZ_C_INSTTYPES | AUTHZ_C_STUDIO),
    SM(DescribeApp, AUTHZ_RES_APP, AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_PROFILE),
    SM(ListApps, AUTHZ_RES_STAR, 0),
    SM(DeleteApp, AUTHZ_RES_APP, AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_PROFILE),
    SM(CreatePresignedDomainUrl, AUTHZ_RES_PROFILE,
       AUTHZ_C_RESTAGS | AUTHZ_C_DOMAIN | AUTHZ_C_PROFILE),
    /* hyperparameter tuning jobs */
    SM(CreateHyperParameterTuningJob, AUTHZ_RES_TUNING_JOB,
       AUTHZ_C_REQTAGS | AUTHZ_C_INSTTYPES | AUTHZ_C_TRAINING),
    SM(DescribeHyperParameterTuningJob, AUTHZ_RES_TUNING_JOB, AUTHZ_C_RESTAGS),
    SM(ListHyperParameterTuningJobs, AUTHZ_RES_STAR, 0),
    SM(StopHyperParameterTuningJob, AUTHZ_RES_TUNING_JOB, AUTHZ_C_RESTAGS),
    SM(ListTrainingJobsForHyperParameterTuningJob, AUTHZ_RES_TUNING_JOB, AUTHZ_C_RESTAGS),
    /* CloudWatch Logs */
    LG(DescribeLogGroups, AUTHZ_RES_STAR, 0),
    LG(DescribeLogStreams, AUTHZ_RES_LOG_GROUP, 0),
    LG(GetLogEvents, AUTHZ_RES_LOG_STREAM, 0),
    LG(FilterLogEvents, AUTHZ_RES_LOG_GROUP, 0),
    /* CloudWatch metrics (ops/cloudwatch.c): no resource types, as AWS */
    CW(ListMetrics, AUTHZ_RES_STAR, 0),
    CW(GetMetricStatistics, AUTHZ_RES_STAR, 0),
    CW(GetMetricData, AUTHZ_RES_STAR, 0),
    CW(PutMetricData, AUTHZ_RES_STAR, 0),
    /* IAM (ops/iamapi.c) */
    IA(CreateUser, AUTHZ_RES_IAM_USER, AUTHZ_C_REQTAGS),
    IA(GetUser, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(ListUsers, AUTHZ_RES_STAR, 0),
    IA(DeleteUser, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(TagUser, AUTHZ_RES_IAM_USER, AUTHZ_C_REQTAGS | AUTHZ_C_RESTAGS),
    IA(UntagUser, AUTHZ_RES_IAM_USER, AUTHZ_C_TAGKEYS | AUTHZ_C_RESTAGS),
    IA(ListUserTags, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(CreateAccessKey, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(ListAccessKeys, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(DeleteAccessKey, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(PutUserPolicy, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(GetUserPolicy, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(ListUserPolicies, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(DeleteUserPolicy, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(UpdateAccessKey, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(PutUserPermissionsBoundary, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(DeleteUserPermissionsBoundary, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(CreateRole, AUTHZ_RES_IAM_ROLE, AUTHZ_C_REQTAGS),
    IA(GetRole, AUTHZ_RES_IAM_ROLE, 0),
    IA(ListRoles, AUTHZ_RES_STAR, 0),
    IA(DeleteRole, AUTHZ_RES_IAM_ROLE, 0),
    IA(TagRole, AUTHZ_RES_IAM_ROLE, AUTHZ_C_REQTAGS),
    IA(UntagRole, AUTHZ_RES_IAM_ROLE, AUTHZ_C_TAGKEYS),
    IA(ListRoleTags, AUTHZ_RES_IAM_ROLE, 0),
    IA(PutRolePolicy, AUTHZ_RES_IAM_ROLE, 0),
    IA(GetRolePolicy, AUTHZ_RES_IAM_ROLE, 0),
    IA(ListRolePolicies, AUTHZ_RES_IAM_ROLE, 0),
    IA(DeleteRolePolicy, AUTHZ_RES_IAM_ROLE, 0),
    IA(PutRolePermissionsBoundary, AUTHZ_RES_IAM_ROLE, 0),
    IA(DeleteRolePermissionsBoundary, AUTHZ_RES_IAM_ROLE, 0),
    /* console passwords (ops/password.c) */
    IA(CreateLoginProfile, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(UpdateLoginProfile, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(GetLoginProfile, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(DeleteLoginProfile, AUTHZ_RES_IAM_USER, AUTHZ_C_RESTAGS),
    IA(ChangePassword, AUTHZ_RES_IAM_USER, 0),
    IA(GetAccountPasswordPolicy, AUTHZ_RES_STAR, 0),
    IA(UpdateAccountPasswordPolicy, AUTHZ_RES_STAR, 0),
    IA(DeleteAccountPasswordPolicy, AUTHZ_RES_STAR, 0),
};

const struct authz_op *authz_find(const char *service, const char *op)
{
    if (!service || !op)
        return NULL;
    for (size_t i = 0; i < sizeof(authz_ops) / sizeof(authz_ops[0]); i++)
        if (strcmp(authz_ops[i].service, service) == 0 && strcmp(authz_ops[i].op, op) == 0)
            return &authz_ops[i];
    return NULL;
}

size_t authz_table(const struct authz_op **rows)
{
    *rows = authz_ops;
    return sizeof(authz_ops) / sizeof(authz_ops[0]);
}

/* ---- resources ---- */

static const char *authz_str(json_t *in, const char *key)
{
    const char *v = json_string_value(json_object_get(in, key));
    return v ? v : "";
}

/* The user name of a principal ARN arn:aws:iam::<acct>:user[/path]/<name>, or NULL. */
static const char *authz_user_of(const char *arn)
{
    const char *u, *slash;
    if (!arn || strncmp(arn, "arn:aws:iam::", 13) != 0)
        return NULL;
    u = strstr(arn + 13, ":user/");
    if (!u)
        return NULL;
    slash = strrchr(u, '/');
    return slash && slash[1] ? slash + 1 : NULL;
}

/* The principal kinds authz knows. */
enum authz__kind { AUTHZ_K_NONE, AUTHZ_K_USER, AUTHZ_K_ROLE, AUTHZ_K_ASSUMED };

/*
 * Parses a principal ARN: arn:aws:iam::<acct>:user[/path]/<name> (AUTHZ_K_USER),
 * arn:aws:iam::<acct>:role[/path]/<name> (AUTHZ_K_ROLE) or
 * arn:aws:sts::<acct>:assumed-role/<name>/<session> (AUTHZ_K_ASSUMED). OUT: name (size n),
 * acct (size an), *session (borrowed from arn; assumed roles only, else NULL).
 */
static enum authz__kind authz_parse(const char *arn, char *name, size_t n, char *acct, size_t an,
                                    const char **session)
{
    const char *a, *colon, *rest, *slash;
    enum authz__kind k;
    *session = NULL;
    if (!arn)
        return AUTHZ_K_NONE;
    if (strncmp(arn, "arn:aws:iam::", 13) == 0)
        a = arn + 13;
    else if (strncmp(arn, "arn:aws:sts::", 13) == 0)
        a = arn + 13;
    else
        return AUTHZ_K_NONE;
    colon = strchr(a, ':');
    if (!colon || (size_t)(colon - a) >= an)
        return AUTHZ_K_NONE;
    snprintf(acct, an, "%.*s", (int)(colon - a), a);
    rest = colon + 1;
    if (arn[8] == 'i' && strncmp(rest, "user/", 5) == 0)
        k = AUTHZ_K_USER;
    else if (arn[8] == 'i' && strncmp(rest, "role/", 5) == 0)
        k = AUTHZ_K_ROLE;
    else if (arn[8] == 's' && strncmp(rest, "assumed-role/", 13) == 0)
        k = AUTHZ_K_ASSUMED;
    else
        return AUTHZ_K_NONE;
    if (k == AUTHZ_K_ASSUMED) {
        const char *nm = rest + 13;
        slash = strchr(nm, '/');
        if (!slash || slash == nm || !slash[1] || (size_t)(slash - nm) >= n)
            return AUTHZ_K_NONE;
        snprintf(name, n, "%.*s", (int)(slash - nm), nm);
        *session = slash + 1;
        return k;
    }
    slash = strrchr(rest, '/');
    if (!slash || !slash[1] || strlen(slash + 1) >= n)
        return AUTHZ_K_NONE;
    snprintf(name, n, "%s", slash + 1);
    return k;
}

/* snprintf into buf with the part after `lower_from` lower-cased; 0 or -TY_EINVAL. */
static int authz_put(char *buf, size_t n, size_t lower_from, struct ty_err *err, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));
static int authz_put(char *buf, size_t n, size_t lower_from, struct ty_err *err, const char *fmt,
                     ...)
{
    va_list ap;
    int w;
    va_start(ap, fmt);
    w = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= n)
        return ty_err_set(err, TY_EINVAL, NULL, "resource ARN too long");
    for (size_t i = lower_from; i < (size_t)w; i++)
        buf[i] = (char)tolower((unsigned char)buf[i]);
    return 0;
}

int authz_resource(const struct authz_op *row, json_t *in, const char *region, const char *account,
                   const char *caller, char *buf, size_t n, struct ty_err *err)
{
    char head[256];
    const char *user, *path;
    size_t hl;
    int w;

    region = region ? region : "";
    account = account ? account : "";
    w = snprintf(head, sizeof(head), "arn:aws:sagemaker:%s:%s:", region, account);
    hl = w > 0 && (size_t)w < sizeof(head) ? (size_t)w : 0;

    switch (row->res) {
    case AUTHZ_RES_STAR:
        return authz_put(buf, n, n, err, "*");
    case AUTHZ_RES_TRAINING_JOB:
        return authz_put(buf, n, hl, err, "%straining-job/%s", head,
                         authz_str(in, "TrainingJobName"));
    case AUTHZ_RES_TUNING_JOB:
        return authz_put(buf, n, hl, err, "%shyper-parameter-tuning-job/%s", head,
                         authz_str(in, "HyperParameterTuningJobName"));
    case AUTHZ_RES_DOMAIN:
        return authz_put(buf, n, hl, err, "%sdomain/%s", head, authz_str(in, "DomainId"));
    case AUTHZ_RES_DOMAIN_NEW:
        return authz_put(buf, n, hl, err, "%sdomain/*", head);
    case AUTHZ_RES_PROFILE:
        return authz_put(buf, n, hl, err, "%suser-profile/%s/%s", head, authz_str(in, "DomainId"),
                         authz_str(in, "UserProfileName"));
    case AUTHZ_RES_APP:
        user = json_object_get(in, "UserProfileName") ? authz_str(in, "UserProfileName")
                                                      : authz_str(in, "SpaceName");
        return authz_put(buf, n, hl, err, "%sapp/%s/%s/%s/%s", head, authz_str(in, "DomainId"),
                         user, authz_str(in, "AppType"), authz_str(in, "AppName"));
    case AUTHZ_RES_TAGGED:
        return authz_put(buf, n, n, err, "%s", authz_str(in, "ResourceArn"));
    case AUTHZ_RES_LOG_GROUP:
        return authz_put(buf, n, n, err, "arn:aws:logs:%s:%s:log-group:%s", region, account,
                         json_object_get(in, "logGroupName") ? authz_str(in, "logGroupName")
                                                             : authz_str(in, "logGroupIdentifier"));
    case AUTHZ_RES_LOG_STREAM:
        return authz_put(buf, n, n, err, "arn:aws:logs:%s:%s:log-group:%s:log-stream:%s", region,
                         account,
                         json_object_get(in, "logGroupName") ? authz_str(in, "logGroupName")
                                                             : authz_str(in, "logGroupIdentifier"),
                         authz_str(in, "logStreamName"));
    case AUTHZ_RES_IAM_USER:
        user = json_string_value(json_object_get(in, "UserName"));
        if (!user) {
            /* the caller itself: its ARN when it is an IAM user */
            if (authz_user_of(caller))
                return authz_put(buf, n, n, err, "%s", caller);
            user = "";
        }
        path = json_string_value(json_object_get(in, "Path"));
        return authz_put(buf, n, n, err, "arn:aws:iam::%s:user%s%s", account, path ? path : "/",
                         user);
    case AUTHZ_RES_IAM_ROLE:
        path = json_string_value(json_object_get(in, "Path"));
        return authz_put(buf, n, n, err, "arn:aws:iam::%s:role%s%s", account, path ? path : "/",
                         authz_str(in, "RoleName"));
    }
    return ty_err_set(err, TY_EINTERNAL, NULL, "unknown resource kind");
}

/* ---- per-thread policy cache ---- */

#define AUTHZ_CACHE_N 16

struct authz__entry {
    char lname[STORE_IAM_NAME_MAX + 3]; /* "u:<lname>" (user) or "r:<lname>" (role) */
    int role;
    struct store_iam_user u;
    struct iam_policy **pols;
    size_t npol;
    json_t *tags; /* object key -> value */
    int restag;   /* a policy mentions ResourceTag */
    unsigned long long used;
    unsigned long long gen; /* authgen_current() when (id, ver) were last read from Redis */
};

struct authz_cache {
    struct authz__entry e[AUTHZ_CACHE_N];
    unsigned long long tick;
};

static pthread_key_t authz_key;
static pthread_once_t authz_once = PTHREAD_ONCE_INIT;

static void authz_entry_clear(struct authz__entry *e)
{
    for (size_t i = 0; i < e->npol; i++)
        iam_policy_free(e->pols[i]);
    free(e->pols);
    json_decref(e->tags);
    memset(e, 0, sizeof(*e));
}

static void authz_cache_free(void *p)
{
    struct authz_cache *c = p;
    if (!c)
        return;
    for (int i = 0; i < AUTHZ_CACHE_N; i++)
        authz_entry_clear(&c->e[i]);
    free(c);
}

static void authz_key_init(void)
{
    pthread_key_create(&authz_key, authz_cache_free);
}

static struct authz_cache *authz_cache(void)
{
    struct authz_cache *c;
    pthread_once(&authz_once, authz_key_init);
    c = pthread_getspecific(authz_key);
    if (!c) {
        c = calloc(1, sizeof(*c));
        if (c && pthread_setspecific(authz_key, c) != 0) {
            free(c);
            c = NULL;
        }
    }
    return c;
}

/* Fills e from the store (policies parsed). 0, -TY_ENOTFOUND or a store error. */
static int authz_entry_load(struct store *s, int role, const char *name, struct authz__entry *e,
                            struct ty_err *err)
{
    json_t *pols = NULL, *tags = NULL, *doc;
    const char *pname;
    struct store_iam_user u;
    size_t i = 0;
    int rc = role ? store_iam_role_load(s, name, &u, &pols, &tags, err)
                  : store_iam_load(s, name, &u, &pols, &tags, err);
    if (rc)
        return rc;
    authz_entry_clear(e);
    e->u = u;
    e->tags = tags;
    e->pols = calloc(json_object_size(pols) + 1, sizeof(*e->pols));
    if (!e->pols) {
        json_decref(pols);
        authz_entry_clear(e);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    json_object_foreach(pols, pname, doc)
    {
        struct ty_err perr;
        const char *text = json_string_value(doc);
        size_t len = json_string_length(doc);
        struct iam_policy *p = NULL;
        if (!text || iam_policy_parse(text, len, &p, &perr) != 0)
            continue; /* validated when put; skipping one can only deny more */
        e->pols[i++] = p;
        if (iam_policy_uses_key(p, "ResourceTag/"))
            e->restag = 1; /* as parsed: an escaped spelling counts too */
    }
    e->npol = i;
    e->role = role;
    json_decref(pols);
    snprintf(e->lname, sizeof(e->lname), "%c:%s", role ? 'r' : 'u', name);
    for (char *p = e->lname; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return 0;
}

/* Whether entry e (loaded) is the principal principal_arn of kind k, account acct. */
static int authz_is(const struct authz__entry *e, enum authz__kind k, const char *principal_arn,
                    const char *acct, const char *name)
{
    char want[STORE_IAM_ARN_MAX];
    size_t al, nl;
    if (k != AUTHZ_K_ASSUMED)
        return strcmp(e->u.arn, principal_arn) == 0;
    /* arn:aws:sts::<acct>:assumed-role/<name>/<s> is role arn:aws:iam::<acct>:role<path><name> */
    snprintf(want, sizeof(want), "arn:aws:iam::%s:role/", acct);
    al = strlen(e->u.arn);
    nl = strlen(name);
    return strncmp(e->u.arn, want, strlen(want)) == 0 && al > nl && e->u.arn[al - nl - 1] == '/' &&
           strcmp(e->u.arn + al - nl, name) == 0;
}

/*
 * The cache entry of principal_arn's user or role, up to date; OUT: *out (NULL when the
 * principal has no policies: not an IAM user or role, or no longer one). 0 or a store error.
 */
static int authz_principal(struct store *s, const char *principal_arn, struct authz__entry **out,
                           struct ty_err *err)
{
    struct authz_cache *c = authz_cache();
    char name[STORE_IAM_NAME_MAX + 2], acct[64];
    const char *session;
    enum authz__kind kind =
        authz_parse(principal_arn, name, sizeof(name), acct, sizeof(acct), &session);
    int role = kind == AUTHZ_K_ROLE || kind == AUTHZ_K_ASSUMED;
    char lname[STORE_IAM_NAME_MAX + 3];
    struct authz__entry *e = NULL, *victim;
    struct store_iam_user head;
    unsigned long long gen = authgen_current(s);
    size_t i;
    int rc;

    *out = NULL;
    if (kind == AUTHZ_K_NONE || strlen(name) > STORE_IAM_NAME_MAX)
        return 0;
    if (!c)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    lname[0] = role ? 'r' : 'u';
    lname[1] = ':';
    for (i = 0; name[i]; i++)
        lname[i + 2] = (char)tolower((unsigned char)name[i]);
    lname[i + 2] = '\0';
    victim = &c->e[0];
    for (int k = 0; k < AUTHZ_CACHE_N; k++) {
        if (c->e[k].lname[0] && strcmp(c->e[k].lname, lname) == 0)
            e = &c->e[k];
        if (c->e[k].used < victim->used)
            victim = &c->e[k];
    }
    if (e && e->gen != gen) {
        /* nothing changed anywhere since it was read: no round trip (authgen.h) */
        rc = role ? store_iam_role_head(s, name, &head, err) : store_iam_head(s, name, &head, err);
        if (rc == -TY_ENOTFOUND) {
            ty_err_clear(err);
            authz_entry_clear(e);
            return 0;
        }
        if (rc)
            return rc;
        if (head.ver != e->u.ver || strcmp(head.id, e->u.id) != 0)
            e = NULL;
        else
            e->gen = gen;
    }
    if (!e) {
        e = victim;
        for (int k = 0; k < AUTHZ_CACHE_N; k++)
            if (c->e[k].lname[0] && strcmp(c->e[k].lname, lname) == 0)
                e = &c->e[k];
        rc = authz_entry_load(s, role, name, e, err);
        if (rc == -TY_ENOTFOUND) {
            ty_err_clear(err);
            authz_entry_clear(e);
            return 0;
        }
        if (rc)
            return rc;
        e->gen = gen;
    }
    e->used = ++c->tick;
    if (!authz_is(e, kind, principal_arn, acct, name))
        return 0; /* same name, another path or account: not this principal */
    *out = e;
    return 0;
}

/* ---- request context ---- */

#define AUTHZ_MAX_CTX 320

struct authz__ctx {
    struct iam_ctx_entry e[AUTHZ_MAX_CTX];
    size_t n;
    void *own[AUTHZ_MAX_CTX * 2];
    size_t nown;
    int overflow;
};

static void *authz_own(struct authz__ctx *c, void *p)
{
    if (!p || c->nown >= sizeof(c->own) / sizeof(c->own[0])) {
        free(p);
        c->overflow = 1;
        return NULL;
    }
    c->own[c->nown++] = p;
    return p;
}

static const char *authz_fmt(struct authz__ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *authz_fmt(struct authz__ctx *c, const char *fmt, ...)
{
    va_list ap;
    char *p = NULL;
    int w;
    va_start(ap, fmt);
    w = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (w < 0)
        p = NULL;
    return authz_own(c, p);
}

static void authz_add(struct authz__ctx *c, const char *key, const char *value)
{
    if (!key || !value)
        return;
    if (c->n >= AUTHZ_MAX_CTX) {
        c->overflow = 1;
        return;
    }
    c->e[c->n].key = key;
    c->e[c->n].values = NULL;
    c->e[c->n].nvalues = 0;
    c->e[c->n].value = value;
    c->n++;
}

/* A multi-valued key; values (borrowed strings) copied into an owned array. */
static void authz_addv(struct authz__ctx *c, const char *key, const char *const *values, size_t n)
{
    const char **v;
    if (!key || n == 0)
        return;
    if (c->n >= AUTHZ_MAX_CTX) {
        c->overflow = 1;
        return;
    }
    v = authz_own(c, calloc(n, sizeof(*v)));
    if (!v)
        return;
    memcpy(v, values, n * sizeof(*v));
    c->e[c->n].key = key;
    c->e[c->n].values = v;
    c->e[c->n].nvalues = n;
    c->e[c->n].value = NULL;
    c->n++;
}

/* new: an empty context, or NULL. Not zeroed (15 KB): e[] and own[] are written before they
   are read (authz_add, authz_own). */
static struct authz__ctx *authz_ctx_new(void)
{
    struct authz__ctx *c = malloc(sizeof(*c));
    if (c) {
        c->n = 0;
        c->nown = 0;
        c->overflow = 0;
    }
    return c;
}

static void authz_ctx_cleanup(struct authz__ctx *c)
{
    for (size_t i = 0; i < c->nown; i++)
        free(c->own[i]);
    c->nown = 0;
    c->n = 0;
}

/* The principal's global keys (first, so that they win over request-derived ones). */
/* Every condition key some request carries (authz_key_provided): keep docs/iam.md's table in
   step with it. */
static const char *const authz_keys[] = {
    /* global */
    "aws:username", "aws:userid", "aws:PrincipalArn", "aws:PrincipalAccount", "aws:PrincipalType",
    "aws:CurrentTime", "aws:EpochTime", "aws:SecureTransport", "aws:RequestedRegion",
    "aws:SourceIp", "aws:UserAgent", "aws:TagKeys",
    /* SageMaker */
    "sagemaker:DomainId", "sagemaker:UserProfileName", "sagemaker:InstanceTypes",
    "sagemaker:MaxRuntimeInSeconds", "sagemaker:NetworkIsolation",
    "sagemaker:InterContainerTrafficEncryption", "sagemaker:VolumeKmsKey", "sagemaker:OutputKmsKey",
    "sagemaker:VpcSubnets", "sagemaker:VpcSecurityGroupIds", "sagemaker:AppNetworkAccess",
    "sagemaker:ImageArns", "sagemaker:ImageVersionArns", "sagemaker:DomainSharingOutputKmsKey",
    "sagemaker:HomeEfsFileSystemKmsKey",
    /* IAM */
    "iam:PassedToService",
    /* S3 (ops/s3.c's s3_allowed) */
    "s3:prefix", "s3:delimiter", "s3:max-keys", "s3:x-amz-acl", "s3:x-amz-server-side-encryption",
    "s3:x-amz-storage-class", "s3:x-amz-metadata-directive", "s3:x-amz-copy-source",
    "s3:signatureversion", "s3:authType", "s3:x-amz-content-sha256"};
static const char *const authz_key_prefixes[] = {"aws:RequestTag/", "aws:ResourceTag/",
                                                 "aws:PrincipalTag/", "sagemaker:ResourceTag/",
                                                 "iam:ResourceTag/"};

int authz_key_provided(const char *key)
{
    if (!key)
        return 0;
    for (size_t i = 0; i < sizeof(authz_keys) / sizeof(authz_keys[0]); i++)
        if (strcasecmp(key, authz_keys[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof(authz_key_prefixes) / sizeof(authz_key_prefixes[0]); i++) {
        size_t n = strlen(authz_key_prefixes[i]);
        if (strncasecmp(key, authz_key_prefixes[i], n) == 0 && key[n])
            return 1;
    }
    return 0;
}

static _Thread_local const char *authz_tl_client, *authz_tl_agent;

void authz_set_request(const char *client, const char *user_agent)
{
    authz_tl_client = client && *client ? client : NULL;
    authz_tl_agent = user_agent;
}

static void authz_principal_keys(struct authz__ctx *c, const char *principal_arn,
                                 const struct authz__entry *e)
{
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    const char *acct = "";
    json_t *v;
    const char *k;

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* a role's aws:PrincipalArn is the role's ARN, also for its sessions (as AWS) */
    authz_add(c, "aws:PrincipalArn", e && e->role ? e->u.arn : principal_arn);
    if (principal_arn && (strncmp(principal_arn, "arn:aws:iam::", 13) == 0 ||
                          strncmp(principal_arn, "arn:aws:sts::", 13) == 0)) {
        const char *end = strchr(principal_arn + 13, ':');
        if (end)
            acct = authz_fmt(c, "%.*s", (int)(end - principal_arn - 13), principal_arn + 13);
    }
    authz_add(c, "aws:PrincipalAccount", acct);
    authz_add(c, "aws:CurrentTime", authz_fmt(c, "%s", when));
    authz_add(c, "aws:EpochTime", authz_fmt(c, "%lld", (long long)now));
    authz_add(c, "aws:SecureTransport", "false");
    if (authz_tl_client)
        authz_add(c, "aws:SourceIp",
                  strncmp(authz_tl_client, "::ffff:", 7) == 0 && strchr(authz_tl_client + 7, '.')
                      ? authz_tl_client + 7
                      : authz_tl_client);
    if (authz_tl_agent)
        authz_add(c, "aws:UserAgent", authz_tl_agent);
    if (!e)
        return;
    if (e->role) {
        /* aws:username is undefined for roles; aws:userid is <RoleId>:<session> */
        const char *session =
            strncmp(principal_arn, "arn:aws:sts::", 13) == 0 ? strrchr(principal_arn, '/') : NULL;
        authz_add(c, "aws:PrincipalType", "AssumedRole");
        authz_add(c, "aws:userid", session ? authz_fmt(c, "%s:%s", e->u.id, session + 1) : e->u.id);
    } else {
        authz_add(c, "aws:PrincipalType", "User");
        authz_add(c, "aws:username", e->u.name);
        authz_add(c, "aws:userid", e->u.id);
    }
    json_object_foreach(e->tags, k, v)
    {
        authz_add(c, authz_fmt(c, "aws:PrincipalTag/%s", k), json_string_value(v));
    }
}

/* aws:RequestTag/<k> and aws:TagKeys from in's Tags array. */
static void authz_request_tags(struct authz__ctx *c, json_t *tags)
{
    const char *keys[64];
    size_t n = 0, i;
    json_t *t;
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        if (!k)
            continue;
        authz_add(c, authz_fmt(c, "aws:RequestTag/%s", k), v ? v : "");
        if (n < sizeof(keys) / sizeof(keys[0]))
            keys[n++] = k;
        else
            c->overflow = 1;
    }
    authz_addv(c, "aws:TagKeys", keys, n);
}

static void authz_tag_keys(struct authz__ctx *c, json_t *tagkeys)
{
    const char *keys[64];
    size_t n = 0, i;
    json_t *t;
    json_array_foreach(tagkeys, i, t)
    {
        if (!json_is_string(t))
            continue;
        if (n < sizeof(keys) / sizeof(keys[0]))
            keys[n++] = json_string_value(t);
        else
            c->overflow = 1;
    }
    authz_addv(c, "aws:TagKeys", keys, n);
}

static void authz_instance_types(struct authz__ctx *c, json_t *in)
{
    const char *types[32];
    size_t n = 0, i;
    json_t *rc = json_object_get(in, "ResourceConfig"), *g;
    const char *t = json_string_value(json_object_get(rc, "InstanceType"));
    if (t)
        types[n++] = t;
    json_array_foreach(json_object_get(rc, "InstanceGroups"), i, g)
    {
        t = json_string_value(json_object_get(g, "InstanceType"));
        if (t && n < sizeof(types) / sizeof(types[0]))
            types[n++] = t;
    }
    t = json_string_value(json_object_get(json_object_get(in, "ResourceSpec"), "InstanceType"));
    if (t && n < sizeof(types) / sizeof(types[0]))
        types[n++] = t;
    authz_addv(c, "sagemaker:InstanceTypes", types, n);
}

/* The training settings of in: in itself, or a tuning job's definition(s). OUT: defs (at most
   n). Returns how many. */
static size_t authz_training_defs(json_t *in, json_t **defs, size_t n)
{
    size_t k = 0, i;
    json_t *d;

    if (json_object_get(in, "StoppingCondition") || json_object_get(in, "ResourceConfig"))
        defs[k++] = in;
    if (k < n && json_is_object(d = json_object_get(in, "TrainingJobDefinition")))
        defs[k++] = d;
    json_array_foreach(json_object_get(in, "TrainingJobDefinitions"), i, d)
    {
        if (k < n && json_is_object(d))
            defs[k++] = d;
    }
    return k;
}

/* The instance types of a tuning job's definitions (HyperParameterTuningResourceConfig too). */
static void authz_tuning_types(struct authz__ctx *c, json_t *in)
{
    const char *types[32];
    json_t *defs[16], *g;
    size_t n = 0, nd = authz_training_defs(in, defs, 16), i;

    for (size_t k = 0; k < nd; k++) {
        json_t *rc = json_object_get(defs[k], "ResourceConfig");
        json_t *hc = json_object_get(defs[k], "HyperParameterTuningResourceConfig");
        const char *t = json_string_value(json_object_get(rc, "InstanceType"));
        if (t && n < 32)
            types[n++] = t;
        t = json_string_value(json_object_get(hc, "InstanceType"));
        if (t && n < 32)
            types[n++] = t;
        json_array_foreach(json_object_get(hc, "InstanceConfigs"), i, g)
        {
            t = json_string_value(json_object_get(g, "InstanceType"));
            if (t && n < 32)
                types[n++] = t;
        }
    }
    authz_addv(c, "sagemaker:InstanceTypes", types, n);
}

/*
 * SageMaker's training keys, from every training definition of in, read as conservatively as
 * the definitions allow: MaxRuntimeInSeconds the largest (86400, SageMaker's default, when
 * one gives none), NetworkIsolation and InterContainerTrafficEncryption "true" only when every
 * definition asks for it, the KMS keys and VPC lists when given.
 */
static void authz_training_keys(struct authz__ctx *c, json_t *in)
{
    json_t *defs[16];
    size_t nd = authz_training_defs(in, defs, 16);
    long long maxrt = 0;
    int iso = nd > 0, enc = nd > 0;
    const char *vk = NULL, *ok = NULL, *subnets[16], *sgs[16];
    size_t ns = 0, ng = 0, i;
    json_t *v;

    if (nd == 0)
        return;
    for (size_t k = 0; k < nd; k++) {
        json_t *d = defs[k], *vpc = json_object_get(d, "VpcConfig");
        json_t *rt =
            json_object_get(json_object_get(d, "StoppingCondition"), "MaxRuntimeInSeconds");
        long long r = json_is_integer(rt) ? json_integer_value(rt) : 86400;
        if (r > maxrt)
            maxrt = r;
        iso = iso && json_is_true(json_object_get(d, "EnableNetworkIsolation"));
        enc = enc && json_is_true(json_object_get(d, "EnableInterContainerTrafficEncryption"));
        if (!vk)
            vk = json_string_value(
                json_object_get(json_object_get(d, "ResourceConfig"), "VolumeKmsKeyId"));
        if (!ok)
            ok = json_string_value(
                json_object_get(json_object_get(d, "OutputDataConfig"), "KmsKeyId"));
        json_array_foreach(json_object_get(vpc, "Subnets"), i, v)
        {
            if (json_is_string(v) && ns < 16)
                subnets[ns++] = json_string_value(v);
        }
        json_array_foreach(json_object_get(vpc, "SecurityGroupIds"), i, v)
        {
            if (json_is_string(v) && ng < 16)
                sgs[ng++] = json_string_value(v);
        }
    }
    authz_add(c, "sagemaker:MaxRuntimeInSeconds", authz_fmt(c, "%lld", maxrt));
    authz_add(c, "sagemaker:NetworkIsolation", iso ? "true" : "false");
    authz_add(c, "sagemaker:InterContainerTrafficEncryption", enc ? "true" : "false");
    if (vk)
        authz_add(c, "sagemaker:VolumeKmsKey", vk);
    if (ok)
        authz_add(c, "sagemaker:OutputKmsKey", ok);
    if (ns)
        authz_addv(c, "sagemaker:VpcSubnets", subnets, ns);
    if (ng)
        authz_addv(c, "sagemaker:VpcSecurityGroupIds", sgs, ng);
}

/* A Studio settings object's keys into the lists (each at most 16): SecurityGroups,
   SharingSettings.S3KmsKeyId, and every *AppSettings' DefaultResourceSpec (InstanceType,
   SageMakerImageArn, SageMakerImageVersionArn) and CustomImages (as image ARNs). */
struct authz__studio {
    const char *types[16], *images[16], *versions[16], *sgs[16], *sharing;
    size_t nt, ni, nv, ng;
};

static void authz_studio_push(const char **list, size_t *n, const char *v)
{
    if (!v || *n >= 16)
        return;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(list[i], v) == 0)
            return;
    list[(*n)++] = v;
}

static void authz_studio_spec(struct authz__studio *k, json_t *spec)
{
    authz_studio_push(k->types, &k->nt, json_string_value(json_object_get(spec, "InstanceType")));
    authz_studio_push(k->images, &k->ni,
                      json_string_value(json_object_get(spec, "SageMakerImageArn")));
    authz_studio_push(k->versions, &k->nv,
                      json_string_value(json_object_get(spec, "SageMakerImageVersionArn")));
}

static void authz_studio_settings(struct authz__ctx *c, struct authz__studio *k, json_t *set,
                                  const char *region, const char *account)
{
    const char *name;
    json_t *v, *img;
    size_t i;

    if (!json_is_object(set))
        return;
    json_array_foreach(json_object_get(set, "SecurityGroups"), i, v)
        authz_studio_push(k->sgs, &k->ng, json_string_value(v));
    if (!k->sharing)
        k->sharing = json_string_value(
            json_object_get(json_object_get(set, "SharingSettings"), "S3KmsKeyId"));
    json_object_foreach(set, name, v)
    {
        size_t n = strlen(name);
        if (n < 11 || strcmp(name + n - 11, "AppSettings") != 0 || !json_is_object(v))
            continue;
        authz_studio_spec(k, json_object_get(v, "DefaultResourceSpec"));
        json_array_foreach(json_object_get(v, "CustomImages"), i, img)
        {
            const char *im = json_string_value(json_object_get(img, "ImageName"));
            if (im && region && account)
                authz_studio_push(
                    k->images, &k->ni,
                    authz_fmt(c, "arn:aws:sagemaker:%s:%s:image/%s", region, account, im));
        }
    }
}

/* sagemaker:InstanceTypes, ImageArns, ImageVersionArns, VpcSecurityGroupIds,
   DomainSharingOutputKmsKey from a domain's or a profile's settings; CreateDomain's
   AppNetworkAccess (PublicInternetOnly when not given, as it is stored), VpcSubnets and
   HomeEfsFileSystemKmsKey; an app's ResourceSpec images (its type: authz_instance_types). */
static void authz_studio_keys(struct authz__ctx *c, const struct authz_op *row, json_t *in,
                              const char *region, const char *account)
{
    struct authz__studio k = {0};
    const char *subnets[16], *net;
    size_t ns = 0, i;
    json_t *v;

    if (strcmp(row->op, "CreateApp") == 0) {
        json_t *spec = json_object_get(in, "ResourceSpec");
        authz_studio_push(k.images, &k.ni,
                          json_string_value(json_object_get(spec, "SageMakerImageArn")));
        authz_studio_push(k.versions, &k.nv,
                          json_string_value(json_object_get(spec, "SageMakerImageVersionArn")));
    } else {
        authz_studio_settings(c, &k, json_object_get(in, "UserSettings"), region, account);
        authz_studio_settings(c, &k, json_object_get(in, "DefaultUserSettings"), region, account);
        authz_studio_settings(c, &k, json_object_get(in, "DefaultSpaceSettings"), region, account);
        authz_addv(c, "sagemaker:InstanceTypes", k.types, k.nt);
    }
    if (strcmp(row->op, "CreateDomain") == 0) {
        net = json_string_value(json_object_get(in, "AppNetworkAccessType"));
        authz_add(c, "sagemaker:AppNetworkAccess", net ? net : "PublicInternetOnly");
        json_array_foreach(json_object_get(in, "SubnetIds"), i, v)
            authz_studio_push(subnets, &ns, json_string_value(v));
        authz_addv(c, "sagemaker:VpcSubnets", subnets, ns);
        v = json_object_get(in, "HomeEfsFileSystemKmsKeyId");
        if (!json_is_string(v))
            v = json_object_get(in, "KmsKeyId");
        authz_add(c, "sagemaker:HomeEfsFileSystemKmsKey", json_string_value(v));
    }
    authz_addv(c, "sagemaker:ImageArns", k.images, k.ni);
    authz_addv(c, "sagemaker:ImageVersionArns", k.versions, k.nv);
    authz_addv(c, "sagemaker:VpcSecurityGroupIds", k.sgs, k.ng);
    authz_add(c, "sagemaker:DomainSharingOutputKmsKey", k.sharing);
}

/* <svc>:ResourceTag/<k> and aws:ResourceTag/<k> from an array of {"Key","Value"}. */
static void authz_resource_tags(struct authz__ctx *c, const char *svc, json_t *tags)
{
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        if (!k || !v)
            continue;
        authz_add(c, authz_fmt(c, "%s:ResourceTag/%s", svc, k), v);
        authz_add(c, authz_fmt(c, "aws:ResourceTag/%s", k), v);
    }
}

/*
 * The session policy of an assumed-role principal (session.h: what the agent granted a job's
 * credentials with), as STS's AssumeRole Policy: the request must be allowed by it as well as
 * by the role's policies, and a Deny in it denies. A principal of another kind has none. Read
 * on every request (one GET; the policies are small and the job's credentials few), so a new
 * grant for a job of the same name is in force at once. Fails closed: an assumed role whose
 * session has no record (revoked, or granted by a release without session policies) is denied.
 */
static int authz_session(struct store *s, const char *principal_arn, const struct iam_request *req,
                         struct ty_err *err)
{
    char name[STORE_IAM_NAME_MAX + 2], acct[64], on[1200] = "";
    const char *session;
    enum iam_decision d = IAM_DENY_IMPLICIT;
    struct iam_policy *p = NULL;
    struct ty_err perr;
    char *text = NULL;
    int rc;

    if (authz_parse(principal_arn, name, sizeof(name), acct, sizeof(acct), &session) !=
        AUTHZ_K_ASSUMED)
        return 0;
    rc = session_policy_get(s, session, &text, err);
    if (rc != 0 && rc != -TY_ENOTFOUND)
        return rc;
    ty_err_clear(err);
    if (text && !*text) {
        free(text);
        return 0; /* granted without one */
    }
    if (text && iam_policy_parse(text, strlen(text), &p, &perr) == 0) {
        const struct iam_policy *one[1] = {p};
        d = iam_evaluate(one, 1, req);
    }
    iam_policy_free(p);
    free(text);
    if (d == IAM_ALLOW)
        return 0;
    if (req->resource && *req->resource && strcmp(req->resource, "*") != 0)
        snprintf(on, sizeof(on), " on resource: %s", req->resource);
    if (d == IAM_DENY_EXPLICIT) /* ty_err_set cuts an over-long message on a UTF-8 boundary */
        return ty_err_set(err, TY_EDENIED, "",
                          "User: %s is not authorized to perform: %s%s with an explicit deny in a "
                          "session policy",
                          principal_arn, req->action, on);
    return ty_err_set(err, TY_EDENIED, "",
                      "User: %s is not authorized to perform: %s%s because no session policy "
                      "allows the %s action",
                      principal_arn, req->action, on, req->action);
}

/* Evaluates (the role's or user's policies, then an assumed role's session policy) and turns a
   refusal into AWS's AccessDenied. */
static int authz_decide(struct store *s, const char *principal_arn, const struct authz__entry *e,
                        const char *action, const char *resource, struct authz__ctx *c,
                        struct ty_err *err)
{
    struct iam_request req;
    enum iam_decision d = IAM_DENY_IMPLICIT;
    req.action = action;
    req.resource = resource;
    req.context = c->e;
    req.ncontext = c->n;
    if (e && !c->overflow)
        d = iam_evaluate((const struct iam_policy *const *)e->pols, e->npol, &req);
    if (d == IAM_ALLOW)
        return authz_session(s, principal_arn, &req, err);
    return iam_deny_error(err, principal_arn, &req, d, NULL);
}

int authz_check(struct store *s, const char *principal_arn, const char *action,
                const char *resource, const struct iam_ctx_entry *ctx, size_t n, struct ty_err *err)
{
    struct authz__ctx *c;
    struct authz__entry *e = NULL;
    int rc;

    if (!s || !principal_arn || !action || !resource)
        return ty_err_set(err, TY_EINTERNAL, NULL, "authz_check: bad arguments");
    rc = authz_principal(s, principal_arn, &e, err);
    if (rc)
        return rc;
    c = authz_ctx_new();
    if (!c)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    authz_principal_keys(c, principal_arn, e);
    for (size_t i = 0; i < n; i++) {
        if (ctx[i].values)
            authz_addv(c, ctx[i].key, ctx[i].values, ctx[i].nvalues);
        else
            authz_add(c, ctx[i].key, ctx[i].value);
    }
    rc = authz_decide(s, principal_arn, e, action, resource, c, err);
    authz_ctx_cleanup(c);
    free(c);
    return rc;
}

int authz_request(struct store *s, const char *service, const char *op, json_t *in,
                  const char *principal_arn, const char *region, const char *account,
                  struct ty_err *err)
{
    const struct authz_op *row = authz_find(service, op);
    struct authz__entry *e = NULL;
    struct authz__ctx *c = NULL;
    char resource[2048];
    json_t *rtags = NULL;
    int rc;

    if (!row) /* fail closed: tests/unit/test_authz.c keeps the table complete */
        return ty_err_set(err, TY_EINTERNAL, NULL, "no authorization rule for %s:%s",
                          service ? service : "", op ? op : "");
    rc = authz_resource(row, in, region, account, principal_arn, resource, sizeof(resource), err);
    if (rc)
        return rc;
    rc = authz_principal(s, principal_arn, &e, err);
    if (rc)
        return rc;
    if (e && row->res == AUTHZ_RES_IAM_USER && strcmp(row->op, "CreateUser") != 0) {
        /* the target user's real ARN (its path) and its tags */
        struct store_iam_user u;
        const char *target = json_string_value(json_object_get(in, "UserName"));
        if (!target)
            target = authz_user_of(principal_arn);
        rc = target ? store_iam_user_get(s, target, &u, &rtags, err) : -TY_ENOTFOUND;
        if (rc == 0)
            snprintf(resource, sizeof(resource), "%s", u.arn);
        else if (rc != -TY_ENOTFOUND && rc != -TY_EINVAL)
            return rc;
        ty_err_clear(err);
    } else if (e && row->res == AUTHZ_RES_IAM_ROLE && strcmp(row->op, "CreateRole") != 0) {
        /* the target role's real ARN (its path) */
        struct store_iam_role r;
        rc = store_iam_role_get(s, authz_str(in, "RoleName"), &r, NULL, NULL, err);
        if (rc == 0)
            snprintf(resource, sizeof(resource), "%s", r.arn);
        else if (rc != -TY_ENOTFOUND && rc != -TY_EINVAL)
            return rc;
        ty_err_clear(err);
    } else if (e && e->restag && (row->cond & AUTHZ_C_RESTAGS) && strcmp(resource, "*") != 0) {
        rtags = store_tags_list(s, resource, err);
        if (!rtags)
            return -err->code;
    }
    c = authz_ctx_new();
    if (!c) {
        json_decref(rtags);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    authz_principal_keys(c, principal_arn, e);
    if (region)
        authz_add(c, "aws:RequestedRegion", region);
    if (row->cond & AUTHZ_C_REQTAGS)
        authz_request_tags(c, json_object_get(in, "Tags"));
    if (row->cond & AUTHZ_C_TAGKEYS)
        authz_tag_keys(c, json_object_get(in, "TagKeys"));
    if ((row->cond & AUTHZ_C_DOMAIN) && json_object_get(in, "DomainId"))
        authz_add(c, "sagemaker:DomainId", authz_str(in, "DomainId"));
    if ((row->cond & AUTHZ_C_PROFILE) && json_object_get(in, "UserProfileName"))
        authz_add(c, "sagemaker:UserProfileName", authz_str(in, "UserProfileName"));
    if ((row->cond & AUTHZ_C_INSTTYPES) && (row->cond & AUTHZ_C_TRAINING) &&
        !json_object_get(in, "ResourceConfig"))
        authz_tuning_types(c, in);
    else if (row->cond & AUTHZ_C_INSTTYPES)
        authz_instance_types(c, in);
    if (row->cond & AUTHZ_C_TRAINING)
        authz_training_keys(c, in);
    if (row->cond & AUTHZ_C_STUDIO)
        authz_studio_keys(c, row, in, region, account);
    if ((row->cond & AUTHZ_C_RESTAGS) && rtags)
        authz_resource_tags(c, row->service, rtags);
    rc = authz_decide(s, principal_arn, e, row->action, resource, c, err);
    authz_ctx_cleanup(c);
    free(c);
    json_decref(rtags);
    return rc;
}

int authz_pass_role(struct store *s, const char *principal_arn, const char *role_arn,
                    const char *account, struct ty_err *err)
{
    static const char svc[] = "sagemaker.amazonaws.com";
    struct iam_ctx_entry pctx[] = {{"iam:PassedToService", NULL, 0, svc}};
    struct iam_ctx_entry tctx[] = {{"aws:SourceAccount", NULL, 0, account ? account : ""}};
    char name[STORE_IAM_NAME_MAX + 2], acct[64];
    struct store_iam_role r;
    const char *session;
    char *trust = NULL;
    int rc, allowed = 0;

    if (!role_arn)
        return ty_err_set(err, TY_EINVAL, "RoleArn", "RoleArn is required");
    rc = authz_check(s, principal_arn, "iam:PassRole", role_arn, pctx, 1, err);
    if (rc)
        return rc;
    if (authz_parse(role_arn, name, sizeof(name), acct, sizeof(acct), &session) != AUTHZ_K_ROLE ||
        (account && strcmp(acct, account) != 0))
        goto cannot;
    rc = store_iam_role_get(s, name, &r, &trust, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        goto cannot;
    if (rc)
        return rc;
    if (strcmp(r.arn, role_arn) != 0 ||
        iam_trust_check(trust, strlen(trust), svc, "sts:AssumeRole", tctx, 1, &allowed, err) != 0 ||
        !allowed)
        goto cannot;
    free(trust);
    ty_err_clear(err);
    return 0;
cannot:
    free(trust);
    return ty_err_set(err, TY_EINVAL, "RoleArn",
                      "Could not assume role %.700s. Please ensure that the role exists and allows "
                      "principal '%s' to assume the role.",
                      role_arn, svc);
}
