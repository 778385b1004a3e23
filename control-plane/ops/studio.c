/*
 * studio.c - the Studio operations: domains, user profiles, apps and presigned domain URLs.
 *
 * Owns: the documents of these resources as DescribeDomain / DescribeUserProfile / DescribeApp
 * return them, their status machines (Pending -> InService, Updating -> InService, Deleting ->
 * gone, apps Deleting -> Deleted -> gone after OP_STUDIO_APP_KEEP_S; applied lazily by the
 * store on every access), AWS's error wording for them, and the one-time tokens of presigned
 * URLs. Does not own: storage (store_res.c), the console that redeems tokens (console.c).
 * Members whose names start with '_' are bookkeeping and never returned.
 *
 * Parent/child rules: a domain with user profiles (in any status) cannot be deleted; a user
 * profile with apps that are not Deleted cannot be deleted; neither accepts children while it
 * is being deleted. Deleting a DetailedProfiler app, or a user profile, ends the profile's
 * console sessions.
 */
#include "studio.h"
#include "authz.h"
#include "ops.h"

#include <ctype.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "quota.h"
#include "ty_log.h"
#include "ty_rand.h"

#define LIVE_FOR_CHILDREN "Deleting,Failed,Delete_Failed"
#define TOKEN_HEX_LEN     64

static const struct store_res_timing op_studio_timing_def = {OP_STUDIO_PENDING_S,
                                                             OP_STUDIO_DELETING_S};

const struct store_res_timing *op_studio_timing(void)
{
    return &op_studio_timing_def;
}

/* ---- pure helpers (studio.h) ---- */

int op_studio_random_alnum(char *out, size_t n)
{
    return ty_rand_string(out, n, "abcdefghijklmnopqrstuvwxyz0123456789");
}

int op_studio_random_hex(char *out, size_t n)
{
    return ty_rand_hex(out, n);
}

int op_studio_domain_id_ok(const char *id)
{
    size_t n;
    if (!id || strncmp(id, "d-", 2) != 0)
        return 0;
    n = strlen(id + 2);
    if (n < 1 || n > 61)
        return 0;
    for (const char *p = id + 2; *p; p++) {
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
            return 0;
    }
    return 1;
}

static int op_studio_name_ok(const char *s)
{
    if (!s || !*s || strlen(s) > 63)
        return 0;
    for (const char *p = s; *p; p++) {
        if (!(isalnum((unsigned char)*p) || *p == '-'))
            return 0;
    }
    return 1;
}

/* Appends '/' (unless first) and lower-cased part to buf at *off. */
static int op_studio_append(char *buf, size_t n, size_t *off, const char *part, int first)
{
    size_t len = strlen(part);
    if (*off + len + (first ? 0 : 1) + 1 > n)
        return -TY_EINVAL;
    if (!first)
        buf[(*off)++] = '/';
    for (size_t i = 0; i < len; i++)
        buf[(*off)++] = (char)tolower((unsigned char)part[i]);
    buf[*off] = '\0';
    return 0;
}

int op_studio_profile_id(const char *domain, const char *profile, char *buf, size_t n)
{
    size_t off = 0;
    if (!op_studio_name_ok(domain) || !op_studio_name_ok(profile) || n == 0)
        return -TY_EINVAL;
    if (op_studio_append(buf, n, &off, domain, 1) || op_studio_append(buf, n, &off, profile, 0))
        return -TY_EINVAL;
    return 0;
}

int op_studio_app_id(const char *domain, const char *profile, const char *app_type,
                     const char *app_name, char *buf, size_t n)
{
    size_t off = 0;
    if (!op_studio_name_ok(domain) || !op_studio_name_ok(profile) || !op_studio_name_ok(app_type) ||
        !op_studio_name_ok(app_name) || n == 0)
        return -TY_EINVAL;
    if (op_studio_append(buf, n, &off, domain, 1) || op_studio_append(buf, n, &off, profile, 0) ||
        op_studio_append(buf, n, &off, app_type, 0) || op_studio_append(buf, n, &off, app_name, 0))
        return -TY_EINVAL;
    return 0;
}

void op_studio_arn(const char *region, const char *account, const char *type, const char *path,
                   char *buf, size_t n)
{
    size_t off;
    int w;
    if (n == 0)
        return;
    w = snprintf(buf, n, "arn:aws:sagemaker:%s:%s:%s/", region, account, type);
    if (w < 0 || (size_t)w >= n)
        return;
    off = (size_t)w;
    for (const char *p = path; *p && off + 1 < n; p++)
        buf[off++] = (char)tolower((unsigned char)*p);
    buf[off] = '\0';
}

static int op_studio_rel_ok(const char *rel)
{
    if (strstr(rel, ".."))
        return 0;
    for (const char *p = rel; *p; p++) {
        if (!(isalnum((unsigned char)*p) || strchr("/_.~=&?%-", *p)))
            return 0;
    }
    return 1;
}

int op_studio_landing(const char *landing_uri, char *buf, size_t n, struct ty_err *err)
{
    const char *base, *rel;
    int w;
    if (!landing_uri || !*landing_uri) {
        base = "/console/profiler";
        rel = "";
    } else if (strncmp(landing_uri, "app:DetailedProfiler:", 21) == 0) {
        base = "/console/profiler";
        rel = landing_uri + 21;
    } else if (strncmp(landing_uri, "studio::", 8) == 0) {
        base = "/console";
        rel = landing_uri + 8;
    } else if (strncmp(landing_uri, "/console/", 9) == 0) {
        base = "/console";
        rel = landing_uri + 8;
    } else {
        return ty_err_set(err, TY_EINVAL, "LandingUri",
                          "1 validation error detected: Value '%.200s' at 'landingUri' failed to "
                          "satisfy constraint: trainyard serves 'app:DetailedProfiler:<path>', "
                          "'studio::<path>' or '/console/<path>'",
                          landing_uri);
    }
    while (*rel == '/')
        rel++;
    if (!op_studio_rel_ok(rel))
        return ty_err_set(err, TY_EINVAL, "LandingUri",
                          "1 validation error detected: Value '%.200s' at 'landingUri' failed to "
                          "satisfy constraint: the path may hold only letters, digits and "
                          "/_.~=&?%%- and no '..'",
                          landing_uri);
    w = snprintf(buf, n, "%s%s%s", base, *rel ? "/" : "", rel);
    if (w < 0 || (size_t)w >= n)
        return ty_err_set(err, TY_EINVAL, "LandingUri", "LandingUri is too long");
    return 0;
}

const char *op_studio_host(const char *host)
{
    size_t n;
    if (!host || !*host)
        return "localhost";
    n = strlen(host);
    if (n > 255)
        return "localhost";
    for (const char *p = host; *p; p++) {
        if (!(isalnum((unsigned char)*p) || strchr(".-:[]", *p)))
            return "localhost";
    }
    return host;
}

struct op_studio__ent {
    double v;
    const char *id;
    json_t *rec;
};

static int op_studio_ent_cmp(const void *a, const void *b)
{
    const struct op_studio__ent *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return strcmp(x->id, y->id);
}

json_t *op_studio_page(json_t *records, const char *sort_key, int ascending, int max_results,
                       const char *next_token, char **next, struct ty_err *err)
{
    struct op_studio__ent *e = NULL, cur;
    size_t n = json_array_size(records), start = 0, i;
    json_t *page;
    char *end;

    *next = NULL;
    if (max_results < 1 || max_results > 100)
        max_results = max_results < 1 ? 10 : 100;
    memset(&cur, 0, sizeof(cur));
    if (next_token) {
        const char *bar = strchr(next_token, '|');
        cur.v = strtod(next_token, &end);
        if (!bar || end != bar || !bar[1] || strlen(bar + 1) > 512)
            return ty_err_set(err, TY_EINVAL, "NextToken", "Invalid pagination token"), NULL;
        cur.id = bar + 1;
    }
    if (n) {
        e = calloc(n, sizeof(*e));
        if (!e)
            return ty_err_set(err, TY_ENOMEM, NULL, "out of memory"), NULL;
    }
    for (i = 0; i < n; i++) {
        json_t *r = json_array_get(records, i);
        e[i].rec = r;
        e[i].v = json_number_value(json_object_get(r, sort_key));
        e[i].id = json_string_value(json_object_get(r, "_id"));
        if (!e[i].id)
            e[i].id = "";
    }
    if (n)
        qsort(e, n, sizeof(*e), op_studio_ent_cmp);
    if (!ascending) {
        for (i = 0; i < n / 2; i++) {
            struct op_studio__ent t = e[i];
            e[i] = e[n - 1 - i];
            e[n - 1 - i] = t;
        }
    }
    if (next_token) {
        /* the first entry strictly after the cursor in this order */
        while (start < n) {
            int c = op_studio_ent_cmp(&e[start], &cur);
            if (ascending ? c > 0 : c < 0)
                break;
            start++;
        }
    }
    page = json_array();
    for (i = start; page && i < n && i - start < (size_t)max_results; i++)
        json_array_append(page, e[i].rec);
    if (page && i < n && i > start) {
        char buf[600];
        snprintf(buf, sizeof(buf), "%.3f|%s", e[i - 1].v, e[i - 1].id);
        *next = strdup(buf);
    }
    free(e);
    if (!page)
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    return page;
}

/* ---- shared pieces of the operations ---- */

static void op_studio_domain_arn(const struct op_ctx *ctx, const char *domain, char *buf, size_t n)
{
    op_studio_arn(ctx->region, ctx->account_id, "domain", domain, buf, n);
}

static void op_studio_profile_arn(const struct op_ctx *ctx, const char *profile_id, char *buf,
                                  size_t n)
{
    op_studio_arn(ctx->region, ctx->account_id, "user-profile", profile_id, buf, n);
}

static void op_studio_url(const struct op_ctx *ctx, const char *domain, char *buf, size_t n)
{
    snprintf(buf, n, "http://%s/console/domain/%s", op_studio_host(ctx->host), domain);
}

static int op_studio_domain_missing(const struct op_ctx *ctx, const char *domain,
                                    struct ty_err *err)
{
    (void)ctx;
    return ty_err_set(err, TY_ENOTFOUND, "DomainId", "Cannot find Domain with ID: %s", domain);
}

static int op_studio_profile_missing(const struct op_ctx *ctx, const char *domain,
                                     const char *profile, struct ty_err *err)
{
    char id[256], arn[512];
    if (op_studio_profile_id(domain, profile, id, sizeof(id)) != 0)
        snprintf(id, sizeof(id), "%.60s/%.60s", domain, profile);
    op_studio_profile_arn(ctx, id, arn, sizeof(arn));
    return ty_err_set(err, TY_ENOTFOUND, "UserProfileName", "User profile %s does not exist.", arn);
}

/* The domain id of a request, checked for shape: an id AWS never hands out cannot exist. */
static const char *op_studio_domain_arg(struct op_ctx *ctx, json_t *in, const char *key,
                                        struct ty_err *err)
{
    const char *d = op_str(in, key);
    if (!d)
        return NULL;
    if (!op_studio_domain_id_ok(d)) {
        op_studio_domain_missing(ctx, d, err);
        return NULL;
    }
    return d;
}

static int op_studio_page_args(json_t *in, int *max, const char **token)
{
    json_t *mr = json_object_get(in, "MaxResults");
    *max = mr ? (int)json_integer_value(mr) : 10;
    *token = op_str(in, "NextToken");
    return 0;
}

/* Builds {"<list_key>": [summaries], "NextToken"?} from records, keeping only keys. Steals
   records. */
static int op_studio_list_out(json_t *records, json_t *in, const char *sort_key, int ascending,
                              const char *list_key, const char *const *keys, json_t **out,
                              struct ty_err *err)
{
    const char *token;
    char *next = NULL;
    int max;
    json_t *page, *list, *r;
    size_t i;

    op_studio_page_args(in, &max, &token);
    page = op_studio_page(records, sort_key, ascending, max, token, &next, err);
    if (!page) {
        json_decref(records);
        return -err->code;
    }
    list = json_array();
    json_array_foreach(page, i, r)
    {
        json_t *s = json_object();
        for (int k = 0; keys[k]; k++)
            op_copy(s, r, keys[k]);
        json_array_append_new(list, s);
    }
    json_decref(page);
    json_decref(records);
    *out = json_object();
    json_object_set_new(*out, list_key, list);
    if (next) {
        json_object_set_new(*out, "NextToken", json_string(next));
        free(next);
    }
    return 0;
}

static int op_studio_tags(struct op_ctx *ctx, json_t *in, const char *arn, struct ty_err *err)
{
    json_t *tags = json_object_get(in, "Tags");
    if (json_array_size(tags) == 0)
        return 0;
    return store_tags_add(ctx->store, arn, tags, err);
}

/* ---- domains ---- */

/* iam:PassRole on the ExecutionRole of in's settings member, when there is one (authz.h). */
static int op_studio_pass_role(struct op_ctx *ctx, json_t *in, const char *settings,
                               struct ty_err *err)
{
    const char *role = op_str(json_object_get(in, settings), "ExecutionRole");
    if (!role)
        return 0;
    return authz_pass_role(ctx->store, ctx->principal_arn, role, ctx->account_id, err);
}

int op_studio_create_domain(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    static const char *const copied[] = {"DomainName",
                                         "AuthMode",
                                         "DefaultUserSettings",
                                         "SubnetIds",
                                         "VpcId",
                                         "DomainSettings",
                                         "KmsKeyId",
                                         "HomeEfsFileSystemKmsKeyId",
                                         "AppSecurityGroupManagement",
                                         "DefaultSpaceSettings",
                                         NULL};
    char id[16], arn[512], fs[24], url[400];
    struct store_res_new n;
    json_t *doc, *rec = NULL;

    if (op_studio_pass_role(ctx, in, "DefaultUserSettings", err) != 0)
        return -err->code;
    doc = json_object();
    for (int i = 0; copied[i]; i++)
        op_copy(doc, in, copied[i]);
    if (!json_object_get(doc, "AppNetworkAccessType"))
        json_object_set_new(doc, "AppNetworkAccessType",
                            json_string(op_str(in, "AppNetworkAccessType")
                                            ? op_str(in, "AppNetworkAccessType")
                                            : "PublicInternetOnly"));
    memcpy(fs, "fs-", 3);
    if (op_studio_random_hex(fs + 3, 17) != 0) {
        json_decref(doc);
        return ty_err_set(err, TY_EINTERNAL, NULL, "random source failed");
    }
    json_object_set_new(doc, "HomeEfsFileSystemId", json_string(fs));
    json_object_set_new(doc, "CreationTime", json_real(ctx->now));
    memset(&n, 0, sizeof(n));
    n.kind = OP_STUDIO_KIND_DOMAIN;
    n.doc = doc;
    n.status = "Pending";
    for (int attempt = 0; attempt < 4 && !rec; attempt++) {
        memcpy(id, "d-", 2);
        if (op_studio_random_alnum(id + 2, 12) != 0)
            break;
        op_studio_domain_arn(ctx, id, arn, sizeof(arn));
        json_object_set_new(doc, "DomainId", json_string(id));
        json_object_set_new(doc, "DomainArn", json_string(arn));
        n.id = id;
        n.tags_arn = arn;
        ty_err_clear(err);
        rec = store_res_create(ctx->store, &n, ctx->now, op_studio_timing(), err);
        if (!rec && err->code != TY_EINUSE)
            break;
    }
    json_decref(doc);
    if (!rec)
        return err->code ? -err->code : ty_err_set(err, TY_EINTERNAL, NULL, "no domain id");
    json_decref(rec);
    if (op_studio_tags(ctx, in, arn, err) != 0)
        return -err->code;
    op_studio_url(ctx, id, url, sizeof(url));
    *out = json_pack("{s:s,s:s}", "DomainArn", arn, "Url", url);
    ty_log(TY_LOG_INFO, "studio.domain_created", "domain=%s", id);
    return 0;
}

static json_t *op_studio_get_domain(struct op_ctx *ctx, const char *domain, struct ty_err *err)
{
    json_t *rec =
        store_res_get(ctx->store, OP_STUDIO_KIND_DOMAIN, domain, ctx->now, op_studio_timing(), err);
    if (!rec && err->code == TY_ENOTFOUND)
        op_studio_domain_missing(ctx, domain, err);
    return rec;
}

int op_studio_describe_domain(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *domain = op_studio_domain_arg(ctx, in, "DomainId", err);
    char url[400];
    json_t *rec;
    if (!domain)
        return -err->code;
    rec = op_studio_get_domain(ctx, domain, err);
    if (!rec)
        return -err->code;
    op_studio_url(ctx, domain, url, sizeof(url));
    json_object_set_new(rec, "Url", json_string(url));
    *out = op_public(rec);
    return 0;
}

int op_studio_list_domains(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    static const char *const keys[] = {"DomainArn",    "DomainId",         "DomainName", "Status",
                                       "CreationTime", "LastModifiedTime", "Url",        NULL};
    json_t *all = store_res_list(ctx->store, OP_STUDIO_KIND_DOMAIN, NULL, NULL, ctx->now,
                                 op_studio_timing(), err);
    json_t *r;
    size_t i;
    if (!all)
        return -err->code;
    json_array_foreach(all, i, r)
    {
        char url[400];
        op_studio_url(ctx, json_string_value(json_object_get(r, "DomainId")), url, sizeof(url));
        json_object_set_new(r, "Url", json_string(url));
    }
    return op_studio_list_out(all, in, "CreationTime", 0, "Domains", keys, out, err);
}

/* Merges src's members into dst[key] (created when absent). */
static void op_studio_merge(json_t *dst, const char *key, json_t *src)
{
    json_t *cur;
    if (!json_is_object(src))
        return;
    cur = json_deep_copy(json_object_get(dst, key));
    if (!json_is_object(cur)) {
        json_decref(cur);
        cur = json_object();
    }
    json_object_update(cur, src);
    json_object_set_new(dst, key, cur);
}

/* Compare-and-set update of kind/id: edit(rec, in) changes the document; retried on a race. */
static json_t *op_studio_update(struct op_ctx *ctx, const char *kind, const char *id, json_t *in,
                                void (*edit)(json_t *doc, json_t *in), struct ty_err *err)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        struct store_res_update u;
        json_t *rec = store_res_get(ctx->store, kind, id, ctx->now, op_studio_timing(), err), *res;
        if (!rec)
            return NULL;
        memset(&u, 0, sizeof(u));
        u.expect = "InService";
        u.status = "Updating";
        u.ver = (long long)json_integer_value(json_object_get(rec, "_ver"));
        edit(rec, in);
        json_object_del(rec, "Status");
        json_object_del(rec, "LastModifiedTime");
        json_object_del(rec, "_id");
        json_object_del(rec, "_ver");
        json_object_del(rec, "_since");
        u.doc = rec;
        res = store_res_update(ctx->store, kind, id, &u, ctx->now, op_studio_timing(), err);
        json_decref(rec);
        if (res || err->code != TY_ECONFLICT || strcmp(err->msg, "stale") != 0)
            return res;
        ty_err_clear(err);
    }
    ty_err_set(err, TY_ETHROTTLE, NULL, "Too many concurrent updates, retry later");
    return NULL;
}

static void op_studio_edit_domain(json_t *doc, json_t *in)
{
    json_t *v = json_object_get(in, "DomainSettingsForUpdate");
    op_studio_merge(doc, "DefaultUserSettings", json_object_get(in, "DefaultUserSettings"));
    op_studio_merge(doc, "DefaultSpaceSettings", json_object_get(in, "DefaultSpaceSettings"));
    if (json_is_object(v)) {
        json_t *c = json_deep_copy(v),
               *rs = json_object_get(c, "RStudioServerProDomainSettingsForUpdate");
        if (rs) {
            json_object_set(c, "RStudioServerProDomainSettings", rs);
            json_object_del(c, "RStudioServerProDomainSettingsForUpdate");
        }
        op_studio_merge(doc, "DomainSettings", c);
        json_decref(c);
    }
}

int op_studio_update_domain(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *domain = op_studio_domain_arg(ctx, in, "DomainId", err);
    json_t *rec;
    if (!domain)
        return -err->code;
    if (op_studio_pass_role(ctx, in, "DefaultUserSettings", err) != 0)
        return -err->code;
    rec = op_studio_update(ctx, OP_STUDIO_KIND_DOMAIN, domain, in, op_studio_edit_domain, err);
    if (!rec) {
        if (err->code == TY_ENOTFOUND)
            return op_studio_domain_missing(ctx, domain, err);
        if (err->code == TY_ECONFLICT) {
            char st[64];
            snprintf(st, sizeof(st), "%.63s", err->msg);
            return ty_err_set(err, TY_EINUSE, "DomainId",
                              "Domain %s is in status %s and cannot be updated.", domain, st);
        }
        return -err->code;
    }
    *out = json_pack("{s:O}", "DomainArn", json_object_get(rec, "DomainArn"));
    json_decref(rec);
    return 0;
}

int op_studio_delete_domain(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *domain = op_studio_domain_arg(ctx, in, "DomainId", err);
    const char *retain = op_str(json_object_get(in, "RetentionPolicy"), "HomeEfsFileSystem");
    int rc;
    if (!domain)
        return -err->code;
    rc = store_res_delete(ctx->store, OP_STUDIO_KIND_DOMAIN, domain,
                          "Pending,InService,Updating,Failed,Update_Failed,Delete_Failed", NULL,
                          "Deleting", ctx->now, op_studio_timing(), err);
    if (rc == -TY_ENOTFOUND)
        return op_studio_domain_missing(ctx, domain, err);
    if (rc == -TY_EINUSE) {
        char kids[32];
        snprintf(kids, sizeof(kids), "%.31s", err->msg);
        return ty_err_set(err, TY_EINUSE, "DomainId",
                          "Domain %s has %s user profile(s). Delete them before deleting the "
                          "domain.",
                          domain, kids);
    }
    if (rc == -TY_ECONFLICT)
        return ty_err_set(err, TY_EINUSE, "DomainId", "Domain %s is already being deleted.",
                          domain);
    if (rc)
        return rc;
    /* The home EFS volume is simulated: Retain (the default) and Delete differ only in name. */
    ty_log(TY_LOG_INFO, "studio.domain_deleting", "domain=%s home_efs=%s", domain,
           retain ? retain : "Retain");
    *out = json_object();
    return 0;
}

/* ---- user profiles ---- */

int op_studio_create_user_profile(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *domain = op_studio_domain_arg(ctx, in, "DomainId", err);
    const char *name = op_str(in, "UserProfileName");
    char id[256], arn[512], uid[24], key[64];
    struct store_res_new n;
    long long seq = 0;
    json_t *doc, *rec;

    if (!domain)
        return -err->code;
    if (op_studio_pass_role(ctx, in, "UserSettings", err) != 0)
        return -err->code;
    if (op_studio_profile_id(domain, name, id, sizeof(id)) != 0)
        return ty_err_set(err, TY_EINVAL, "UserProfileName", "Invalid user profile name");
    op_studio_profile_arn(ctx, id, arn, sizeof(arn));
    if (quota_reserve_profile(ctx->store, domain, id, ctx->now, err) != 0) /* quota.h */
        return -err->code;
    snprintf(key, sizeof(key), "uid:%s", domain);
    if (store_res_counter(ctx->store, key, &seq, err) != 0) {
        quota_release_profile(ctx->store, domain, id);
        return -err->code;
    }
    snprintf(uid, sizeof(uid), "%lld", 200000 + seq);
    doc = json_object();
    json_object_set_new(doc, "DomainId", json_string(domain));
    json_object_set_new(doc, "UserProfileArn", json_string(arn));
    json_object_set_new(doc, "UserProfileName", json_string(name));
    json_object_set_new(doc, "HomeEfsFileSystemUid", json_string(uid));
    json_object_set_new(doc, "CreationTime", json_real(ctx->now));
    op_copy(doc, in, "UserSettings");
    op_copy(doc, in, "SingleSignOnUserIdentifier");
    op_copy(doc, in, "SingleSignOnUserValue");
    memset(&n, 0, sizeof(n));
    n.kind = OP_STUDIO_KIND_PROFILE;
    n.id = id;
    n.parent_kind = OP_STUDIO_KIND_DOMAIN;
    n.parent_id = domain;
    n.doc = doc;
    n.status = "Pending";
    n.parent_blocked = LIVE_FOR_CHILDREN;
    n.tags_arn = arn;
    rec = store_res_create(ctx->store, &n, ctx->now, op_studio_timing(), err);
    quota_release_profile(ctx->store, domain, id);
    json_decref(doc);
    if (!rec) {
        if (err->code == TY_EINUSE)
            return ty_err_set(err, TY_EINUSE, "UserProfileName", "User profile %s already exists.",
                              arn);
        if (err->code == TY_ENOTFOUND)
            return op_studio_domain_missing(ctx, domain, err);
        if (err->code == TY_ECONFLICT) {
            char st[64];
            snprintf(st, sizeof(st), "%.63s", err->msg);
            return ty_err_set(err, TY_EINUSE, "DomainId",
                              "Domain %s is in status %s and cannot accept new user profiles.",
                              domain, st);
        }
        return -err->code;
    }
    json_decref(rec);
    if (op_studio_tags(ctx, in, arn, err) != 0)
        return -err->code;
    *out = json_pack("{s:s}", "UserProfileArn", arn);
    return 0;
}

int op_studio_describe_user_profile(struct op_ctx *ctx, json_t *in, json_t **out,
                                    struct ty_err *err)
{
    const char *domain = op_str(in, "DomainId");
    const char *name = op_str(in, "UserProfileName");
    char id[256];
    json_t *rec;
    if (op_studio_profile_id(domain, name, id, sizeof(id)) != 0)
        return op_studio_profile_missing(ctx, domain, name, err);
    rec = store_res_get(ctx->store, OP_STUDIO_KIND_PROFILE, id, ctx->now, op_studio_timing(), err);
    if (!rec) {
        if (err->code == TY_ENOTFOUND)
            return op_studio_profile_missing(ctx, domain, name, err);
        return -err->code;
    }
    *out = op_public(rec);
    return 0;
}

static int op_studio_contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

int op_studio_list_user_profiles(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    static const char *const keys[] = {"DomainId",     "UserProfileName",  "Status",
                                       "CreationTime", "LastModifiedTime", NULL};
    const char *domain = op_str(in, "DomainIdEquals");
    const char *contains = op_str(in, "UserProfileNameContains");
    const char *sort = op_str(in, "SortBy");
    const char *order = op_str(in, "SortOrder");
    json_t *all, *r;
    size_t i;

    if (domain && !op_studio_domain_id_ok(domain))
        all = json_array();
    else
        all = store_res_list(ctx->store, OP_STUDIO_KIND_PROFILE,
                             domain ? OP_STUDIO_KIND_DOMAIN : NULL, domain, ctx->now,
                             op_studio_timing(), err);
    if (!all)
        return -err->code;
    if (contains) {
        json_t *kept = json_array();
        json_array_foreach(all, i, r)
        {
            const char *nm = json_string_value(json_object_get(r, "UserProfileName"));
            if (nm && op_studio_contains_ci(nm, contains))
                json_array_append(kept, r);
        }
        json_decref(all);
        all = kept;
    }
    return op_studio_list_out(
        all, in,
        sort && strcmp(sort, "LastModifiedTime") == 0 ? "LastModifiedTime" : "CreationTime",
        order && strcmp(order, "Ascending") == 0, "UserProfiles", keys, out, err);
}

static void op_studio_edit_profile(json_t *doc, json_t *in)
{
    op_studio_merge(doc, "UserSettings", json_object_get(in, "UserSettings"));
}

int op_studio_update_user_profile(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *domain = op_str(in, "DomainId");
    const char *name = op_str(in, "UserProfileName");
    char id[256];
    json_t *rec;
    if (op_studio_profile_id(domain, name, id, sizeof(id)) != 0)
        return op_studio_profile_missing(ctx, domain, name, err);
    if (op_studio_pass_role(ctx, in, "UserSettings", err) != 0)
        return -err->code;
    rec = op_studio_update(ctx, OP_STUDIO_KIND_PROFILE, id, in, op_studio_edit_profile, err);
    if (!rec) {
        if (err->code == TY_ENOTFOUND)
            return op_studio_profile_missing(ctx, domain, name, err);
        if (err->code == TY_ECONFLICT) {
            char st[64];
            snprintf(st, sizeof(st), "%.63s", err->msg);
            return ty_err_set(err, TY_EINUSE, "UserProfileName",
                              "User profile %s is in status %s and cannot be updated.", name, st);
        }
        return -err->code;
    }
    *out = json_pack("{s:O}", "UserProfileArn", json_object_get(rec, "UserProfileArn"));
    json_decref(rec);
    return 0;
}

int op_studio_delete_user_profile(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *domain = op_str(in, "DomainId");
    const char *name = op_str(in, "UserProfileName");
    char id[256];
    int rc;
    if (op_studio_profile_id(domain, name, id, sizeof(id)) != 0)
        return op_studio_profile_missing(ctx, domain, name, err);
    rc = store_res_delete(ctx->store, OP_STUDIO_KIND_PROFILE, id,
                          "Pending,InService,Updating,Failed,Update_Failed,Delete_Failed",
                          "Deleted", "Deleting", ctx->now, op_studio_timing(), err);
    if (rc == -TY_ENOTFOUND)
        return op_studio_profile_missing(ctx, domain, name, err);
    if (rc == -TY_EINUSE) {
        char kids[32];
        snprintf(kids, sizeof(kids), "%.31s", err->msg);
        return ty_err_set(err, TY_EINUSE, "UserProfileName",
                          "User profile %s has %s app(s) that are not deleted. Delete them "
                          "before deleting the user profile.",
                          name, kids);
    }
    if (rc == -TY_ECONFLICT)
        return ty_err_set(err, TY_EINUSE, "UserProfileName",
                          "User profile %s is already being deleted.", name);
    if (rc)
        return rc;
    ty_err_clear(err);
    if (store_res_session_revoke(ctx->store, id, NULL, err) != 0)
        ty_log(TY_LOG_WARN, "studio.revoke_failed", "profile=%s err='%s'", id, err->msg);
    ty_err_clear(err);
    *out = json_object();
    return 0;
}

/* ---- apps ---- */

/* Resolves an app request's id and ARN; spaces are not served (none can exist). */
static int op_studio_app_ids(struct op_ctx *ctx, json_t *in, char *id, size_t idn, char *arn,
                             size_t arnn, struct ty_err *err)
{
    const char *domain = op_str(in, "DomainId");
    const char *profile = op_str(in, "UserProfileName");
    const char *space = op_str(in, "SpaceName");
    const char *type = op_str(in, "AppType");
    const char *name = op_str(in, "AppName");
    if (profile && space)
        return ty_err_set(err, TY_EINVAL, "SpaceName",
                          "Only one of UserProfileName and SpaceName may be specified.");
    if (!profile && !space)
        return ty_err_set(err, TY_EINVAL, "UserProfileName",
                          "Either UserProfileName or SpaceName must be specified.");
    if (space)
        return ty_err_set(err, TY_ENOTFOUND, "SpaceName", "Space %s does not exist.", space);
    if (op_studio_app_id(domain, profile, type, name, id, idn) != 0) {
        snprintf(id, idn, "%.60s/%.60s/%.40s/%.60s", domain ? domain : "", profile ? profile : "",
                 type ? type : "", name ? name : "");
        op_studio_arn(ctx->region, ctx->account_id, "app", id, arn, arnn);
        return ty_err_set(err, TY_ENOTFOUND, "AppName", "App %s does not exist.", arn);
    }
    op_studio_arn(ctx->region, ctx->account_id, "app", id, arn, arnn);
    return 0;
}

int op_studio_create_app(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *domain = op_str(in, "DomainId");
    const char *profile = op_str(in, "UserProfileName");
    const char *type = op_str(in, "AppType");
    char id[512], arn[768], pid[256];
    struct store_res_new n;
    json_t *doc, *rec, *spec;

    if (op_studio_app_ids(ctx, in, id, sizeof(id), arn, sizeof(arn), err) != 0) {
        if (err->code == TY_ENOTFOUND && strcmp(err->field, "AppName") == 0)
            return op_studio_profile_missing(ctx, domain ? domain : "", profile ? profile : "",
                                             err);
        return -err->code;
    }
    if (op_studio_profile_id(domain, profile, pid, sizeof(pid)) != 0)
        return op_studio_profile_missing(ctx, domain, profile, err);
    if (quota_reserve_app(ctx->store, pid, id, ctx->now, err) != 0) /* quota.h */
        return -err->code;
    doc = json_object();
    json_object_set_new(doc, "AppArn", json_string(arn));
    json_object_set_new(doc, "AppType", json_string(type));
    json_object_set_new(doc, "AppName", json_string(op_str(in, "AppName")));
    json_object_set_new(doc, "DomainId", json_string(domain));
    json_object_set_new(doc, "UserProfileName", json_string(profile));
    json_object_set_new(doc, "CreationTime", json_real(ctx->now));
    json_object_set_new(doc, "LastHealthCheckTimestamp", json_real(ctx->now));
    json_object_set_new(doc, "LastUserActivityTimestamp", json_real(ctx->now));
    spec = json_deep_copy(json_object_get(in, "ResourceSpec"));
    if (!json_is_object(spec)) {
        json_decref(spec);
        spec = json_object();
    }
    if (!json_object_get(spec, "InstanceType"))
        json_object_set_new(
            spec, "InstanceType",
            json_string(strcmp(type, "KernelGateway") == 0 ? "ml.t3.medium" : "system"));
    json_object_set_new(doc, "ResourceSpec", spec);
    memset(&n, 0, sizeof(n));
    n.kind = OP_STUDIO_KIND_APP;
    n.id = id;
    n.parent_kind = OP_STUDIO_KIND_PROFILE;
    n.parent_id = pid;
    n.doc = doc;
    n.status = "Pending";
    n.keep_s = OP_STUDIO_APP_KEEP_S;
    n.replaceable = "Deleted,Failed";
    n.parent_blocked = LIVE_FOR_CHILDREN;
    n.tags_arn = arn;
    rec = store_res_create(ctx->store, &n, ctx->now, op_studio_timing(), err);
    quota_release_app(ctx->store, pid, id);
    json_decref(doc);
    if (!rec) {
        if (err->code == TY_EINUSE)
            return ty_err_set(err, TY_EINUSE, "AppName", "App %s already exists.", arn);
        if (err->code == TY_ENOTFOUND)
            return op_studio_profile_missing(ctx, domain, profile, err);
        if (err->code == TY_ECONFLICT) {
            char st[64];
            snprintf(st, sizeof(st), "%.63s", err->msg);
            return ty_err_set(err, TY_EINUSE, "UserProfileName",
                              "User profile %s is in status %s and cannot run new apps.", profile,
                              st);
        }
        return -err->code;
    }
    json_decref(rec);
    if (op_studio_tags(ctx, in, arn, err) != 0)
        return -err->code;
    *out = json_pack("{s:s}", "AppArn", arn);
    return 0;
}

int op_studio_describe_app(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    char id[512], arn[768];
    json_t *rec;
    if (op_studio_app_ids(ctx, in, id, sizeof(id), arn, sizeof(arn), err) != 0)
        return -err->code;
    rec = store_res_get(ctx->store, OP_STUDIO_KIND_APP, id, ctx->now, op_studio_timing(), err);
    if (!rec) {
        if (err->code == TY_ENOTFOUND)
            return ty_err_set(err, TY_ENOTFOUND, "AppName", "App %s does not exist.", arn);
        return -err->code;
    }
    *out = op_public(rec);
    return 0;
}

int op_studio_list_apps(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    static const char *const keys[] = {"DomainId", "UserProfileName", "SpaceName",    "AppType",
                                       "AppName",  "Status",          "CreationTime", NULL};
    const char *domain = op_str(in, "DomainIdEquals");
    const char *profile = op_str(in, "UserProfileNameEquals");
    const char *order = op_str(in, "SortOrder");
    char pid[256];
    json_t *all, *r, *kept;
    size_t i;

    if (op_str(in, "SpaceNameEquals"))
        all = json_array(); /* no spaces, so no space apps */
    else if (domain && profile) {
        if (op_studio_profile_id(domain, profile, pid, sizeof(pid)) != 0)
            all = json_array();
        else
            all = store_res_list(ctx->store, OP_STUDIO_KIND_APP, OP_STUDIO_KIND_PROFILE, pid,
                                 ctx->now, op_studio_timing(), err);
    } else {
        all = store_res_list(ctx->store, OP_STUDIO_KIND_APP, NULL, NULL, ctx->now,
                             op_studio_timing(), err);
    }
    if (!all)
        return -err->code;
    kept = json_array();
    json_array_foreach(all, i, r)
    {
        const char *d = json_string_value(json_object_get(r, "DomainId"));
        const char *p = json_string_value(json_object_get(r, "UserProfileName"));
        if (domain && (!d || strcmp(d, domain) != 0))
            continue;
        if (profile && (!p || strcasecmp(p, profile) != 0))
            continue;
        json_array_append(kept, r);
    }
    json_decref(all);
    return op_studio_list_out(kept, in, "CreationTime", order && strcmp(order, "Ascending") == 0,
                              "Apps", keys, out, err);
}

int op_studio_delete_app(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *type = op_str(in, "AppType");
    char id[512], arn[768], pid[256];
    int rc;
    if (op_studio_app_ids(ctx, in, id, sizeof(id), arn, sizeof(arn), err) != 0)
        return -err->code;
    rc = store_res_delete(ctx->store, OP_STUDIO_KIND_APP, id, "Pending,InService,Failed", NULL,
                          "Deleting", ctx->now, op_studio_timing(), err);
    if (rc == -TY_ENOTFOUND)
        return ty_err_set(err, TY_ENOTFOUND, "AppName", "App %s does not exist.", arn);
    if (rc == -TY_ECONFLICT) {
        char st[64];
        snprintf(st, sizeof(st), "%.63s", err->msg);
        return ty_err_set(err, TY_EINUSE, "AppName",
                          "App %s is in status %s and cannot be deleted.", arn, st);
    }
    if (rc)
        return rc;
    if (strcmp(type, "DetailedProfiler") == 0 &&
        op_studio_profile_id(op_str(in, "DomainId"), op_str(in, "UserProfileName"), pid,
                             sizeof(pid)) == 0) {
        long long n = 0;
        if (store_res_session_revoke(ctx->store, pid, &n, err) != 0)
            ty_log(TY_LOG_WARN, "studio.revoke_failed", "profile=%s err='%s'", pid, err->msg);
        else
            ty_log(TY_LOG_INFO, "studio.sessions_revoked", "profile=%s n=%lld", pid, n);
        ty_err_clear(err);
    }
    *out = json_object();
    return 0;
}

/* ---- presigned domain URLs ---- */

int op_studio_create_presigned_url(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *domain = op_str(in, "DomainId");
    const char *profile = op_str(in, "UserProfileName");
    json_t *ev = json_object_get(in, "ExpiresInSeconds");
    json_t *sv = json_object_get(in, "SessionExpirationDurationInSeconds");
    int expires = ev ? (int)json_integer_value(ev) : 300;
    int session = sv ? (int)json_integer_value(sv) : 43200;
    char id[256], arn[512], landing[1200], token[TOKEN_HEX_LEN + 1], url[1600];
    json_t *rec, *val;
    const char *st;
    int rc;

    if (op_str(in, "SpaceName"))
        return ty_err_set(err, TY_ENOTFOUND, "SpaceName", "Space %s does not exist.",
                          op_str(in, "SpaceName"));
    if (op_studio_landing(op_str(in, "LandingUri"), landing, sizeof(landing), err) != 0)
        return -err->code;
    if (op_studio_profile_id(domain, profile, id, sizeof(id)) != 0)
        return op_studio_profile_missing(ctx, domain, profile, err);
    rec = store_res_get(ctx->store, OP_STUDIO_KIND_PROFILE, id, ctx->now, op_studio_timing(), err);
    if (!rec) {
        if (err->code == TY_ENOTFOUND)
            return op_studio_profile_missing(ctx, domain, profile, err);
        return -err->code;
    }
    st = json_string_value(json_object_get(rec, "Status"));
    if (st && strcmp(st, "Deleting") == 0) {
        json_decref(rec);
        return op_studio_profile_missing(ctx, domain, profile, err);
    }
    if (op_studio_random_hex(token, TOKEN_HEX_LEN) != 0) {
        json_decref(rec);
        return ty_err_set(err, TY_EINTERNAL, NULL, "random source failed");
    }
    op_studio_profile_arn(ctx, id, arn, sizeof(arn));
    val = json_pack("{s:s,s:s,s:O,s:s,s:s,s:s,s:i}", "DomainId", domain, "ProfileId", id,
                    "UserProfileName", json_object_get(rec, "UserProfileName"), "UserProfileArn",
                    arn, "Region", ctx->region, "Landing", landing, "SessionSeconds", session);
    json_decref(rec);
    if (!val)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    rc = store_res_token_put(ctx->store, token, val, expires, err);
    json_decref(val);
    if (rc)
        return rc;
    snprintf(url, sizeof(url), "http://%s/console/auth?token=%s", op_studio_host(ctx->host), token);
    *out = json_pack("{s:s}", "AuthorizedUrl", url);
    return 0;
}
