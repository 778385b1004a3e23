/*
 * console_pages.c - the admin console's pages (console_pages.h).
 *
 * Each page: the reads it needs as API operations of the principal (a refused read shows
 * AWS's message where its table would be), then forms whose buttons post to /console/do.
 */
#include "console_pages.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "authz.h"
#include "console.h"
#include "console_html.h"
#include "iamapi.h"
#include "password.h"
#include "queue.h"
#include "quota.h"
#include "store_iam.h"
#include "ty_xml.h"

#define PAGES_NAME_MAX 128

/* ---- small helpers ---- */

static const char *pg_s(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? v : "";
}

static void pg_td(struct ty_buf *b, const char *text)
{
    ty_buf_puts(b, "<td>");
    ty_buf_put_html(b, text && *text ? text : "-");
    ty_buf_puts(b, "</td>");
}

static void pg_status(struct ty_buf *b, const char *st)
{
    ty_buf_puts(b, "<td><span class=\"status s-");
    ty_buf_put_html(b, st);
    ty_buf_puts(b, "\">");
    ty_buf_put_html(b, st && *st ? st : "-");
    ty_buf_puts(b, "</span></td>");
}

static void pg_thead(struct ty_buf *b, const char *caption, const char *const *cols)
{
    ty_buf_puts(b, "<table><caption>");
    ty_buf_put_html(b, caption);
    ty_buf_puts(b, "</caption><thead><tr>");
    for (; *cols; cols++) {
        ty_buf_puts(b, "<th scope=\"col\">");
        ty_buf_put_html(b, *cols);
        ty_buf_puts(b, "</th>");
    }
    ty_buf_puts(b, "</tr></thead><tbody>\n");
}

/* A form posting one operation: starts it (fields follow; end with pg_form_end). */
static void pg_form(struct ty_buf *b, const struct console_ctx *c, const char *svc, const char *op,
                    const char *back, const char *legend)
{
    ty_buf_puts(b, "<form class=\"card\" method=\"post\" action=\"/console/do\"><fieldset>"
                   "<legend>");
    ty_buf_put_html(b, legend);
    ty_buf_puts(b, "</legend>");
    console_html_csrf(b, c->sess);
    ty_buf_printf(b, "<input type=\"hidden\" name=\"svc\" value=\"%s\">", svc);
    ty_buf_printf(b, "<input type=\"hidden\" name=\"op\" value=\"%s\">", op);
    ty_buf_puts(b, "<input type=\"hidden\" name=\"back\" value=\"");
    ty_buf_put_html(b, back);
    ty_buf_puts(b, "\">");
}

static void pg_hidden(struct ty_buf *b, const char *name, const char *value)
{
    ty_buf_puts(b, "<input type=\"hidden\" name=\"");
    ty_buf_put_html(b, name);
    ty_buf_puts(b, "\" value=\"");
    ty_buf_put_html(b, value);
    ty_buf_puts(b, "\">");
}

/* A labelled text field; id is derived from name. type: "text", "password"... */
static void pg_field(struct ty_buf *b, const char *name, const char *label, const char *type,
                     const char *value, int required)
{
    char id[PAGES_NAME_MAX];
    size_t i;
    for (i = 0; name[i] && i + 1 < sizeof(id); i++)
        id[i] = isalnum((unsigned char)name[i]) ? name[i] : '-';
    id[i] = '\0';
    ty_buf_printf(b, "<label for=\"f-%s\">", id);
    ty_buf_put_html(b, label);
    ty_buf_printf(b, "</label><input id=\"f-%s\" name=\"", id);
    ty_buf_put_html(b, name);
    ty_buf_printf(b, "\" type=\"%s\"", type);
    if (value) {
        ty_buf_puts(b, " value=\"");
        ty_buf_put_html(b, value);
        ty_buf_puts(b, "\"");
    }
    ty_buf_puts(b, required ? " required>" : ">");
}

static void pg_form_end(struct ty_buf *b, const char *label)
{
    ty_buf_puts(b, "<button type=\"submit\">");
    ty_buf_put_html(b, label);
    ty_buf_puts(b, "</button></fieldset></form>\n");
}

void console_pages_banner(struct ty_buf *b, const struct console_banner *bn)
{
    const char *url;
    if (!bn)
        return;
    if (bn->err.code != TY_EOK) {
        console_html_error(b, &bn->err, bn->code_name);
        return;
    }
    console_html_ok(b, bn->ok);
    url = json_string_value(json_object_get(bn->result, "AuthorizedUrl"));
    if (url) {
        ty_buf_puts(b, "<div class=\"alert ok\" role=\"status\">Presigned domain URL (works once, "
                       "for 5 minutes): <a id=\"presigned-url\" href=\"");
        ty_buf_put_html(b, url);
        ty_buf_puts(b, "\">");
        ty_buf_put_html(b, url);
        ty_buf_puts(b, "</a></div>\n");
    }
    if (bn->op && strcmp(bn->op, "CreateAccessKey") == 0) {
        const char *x = json_string_value(json_object_get(bn->result, "Xml"));
        const char *in, *ie;
        if (x) {
            char *akid = NULL, *sk = NULL;
            if (ty_xml_find(x, x + strlen(x), "AccessKeyId", &in, &ie))
                akid = ty_xml_text(in, ie);
            if (ty_xml_find(x, x + strlen(x), "SecretAccessKey", &in, &ie))
                sk = ty_xml_text(in, ie);
            ty_buf_puts(b, "<div class=\"alert ok\" role=\"status\">New access key <code>");
            ty_buf_put_html(b, akid ? akid : "");
            ty_buf_puts(b, "</code>, secret <code id=\"new-secret\">");
            ty_buf_put_html(b, sk ? sk : "");
            ty_buf_puts(b, "</code>. The secret is shown only now: keep it.</div>\n");
            free(akid);
            free(sk);
        }
    }
}

/* The start of an admin page: frame, banner. */
static void pg_start(struct ty_buf *b, const struct console_ctx *c, const char *title,
                     const struct console_banner *bn)
{
    console_html_start(b, title, c->sess);
    console_pages_banner(b, bn);
}

static int pg_send(const struct console_ctx *c, struct http_response *resp, struct ty_buf *b)
{
    console_html_send(c->req, resp, 200, b);
    return 1;
}

/* The value of query parameter name (decoded) or "" (OUT: out). */
static const char *pg_q(const char *query, const char *name, char *out, size_t n)
{
    if (console_query_param(query, name, out, n) != 0)
        out[0] = '\0';
    return out;
}

/* 1 when s is a resource name the pages put in a path ([A-Za-z0-9_+=,.@-], 1..63). */
static int pg_name_ok(const char *s, size_t n)
{
    if (n < 1 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("_+=,.@-", s[i]))
            return 0;
    return 1;
}

/* ---- the user's own password (iam:ChangePassword) ---- */

/* 1 when the signed-in IAM user's login profile has PasswordResetRequired set. */
static int pg_reset_required(const struct console_ctx *c)
{
    struct store_iam_user u;
    struct ty_err err;
    ty_err_clear(&err);
    if (store_iam_user_get(c->s, c->sess->user, &u, NULL, &err) != 0)
        return 0;
    return password_reset_required(c->s, u.name, u.id);
}

/* The account policy in words, as the change-password page states it. */
static void pg_policy_text(const struct console_ctx *c, struct ty_buf *b)
{
    struct password_policy p;
    struct ty_err err;
    ty_err_clear(&err);
    if (password_policy_get(c->s, &p, &err) != 0)
        return;
    ty_buf_printf(b,
                  "<p class=\"hint\" id=\"pw-policy\">The account password policy: at "
                  "least %d characters",
                  p.min_length);
    if (!p.custom) {
        ty_buf_puts(b, ", with at least three of: uppercase letters, lowercase letters, numbers "
                       "and symbols");
    } else {
        if (p.req_upper)
            ty_buf_puts(b, ", an uppercase letter");
        if (p.req_lower)
            ty_buf_puts(b, ", a lowercase letter");
        if (p.req_numbers)
            ty_buf_puts(b, ", a number");
        if (p.req_symbols)
            ty_buf_puts(b, ", a symbol (! @ # $ % ^ &amp; * ( ) _ + - = [ ] { } | ')");
    }
    ty_buf_puts(b, ".</p>\n");
}

/* A checkbox posting "true" (unchecked: the field is absent, IAM's false). */
static void pg_check(struct ty_buf *b, const char *member, const char *label, int on)
{
    ty_buf_printf(b,
                  "<label class=\"check\"><input type=\"checkbox\" name=\"p.%s\" "
                  "value=\"true\"%s> ",
                  member, on ? " checked" : "");
    ty_buf_put_html(b, label);
    ty_buf_puts(b, "</label>");
}

/* The account password policy form (UpdateAccountPasswordPolicy), on the IAM users page. */
static void pg_policy_form(const struct console_ctx *c, struct ty_buf *b)
{
    struct password_policy p;
    struct ty_err err;
    char ml[16];
    ty_err_clear(&err);
    if (password_policy_get(c->s, &p, &err) != 0)
        password_policy_default(&p);
    snprintf(ml, sizeof(ml), "%d", p.min_length);
    ty_buf_puts(b, "<h2>Account password policy</h2>\n");
    pg_policy_text(c, b);
    pg_form(b, c, "iam", "UpdateAccountPasswordPolicy", "/console/iam/users",
            "Set the account password policy");
    pg_field(b, "p.MinimumPasswordLength", "Minimum password length (6-128)", "number", ml, 1);
    pg_check(b, "RequireUppercaseCharacters", "Require an uppercase letter",
             p.custom && p.req_upper);
    pg_check(b, "RequireLowercaseCharacters", "Require a lowercase letter",
             p.custom && p.req_lower);
    pg_check(b, "RequireNumbers", "Require a number", p.custom && p.req_numbers);
    pg_check(b, "RequireSymbols", "Require a symbol", p.custom && p.req_symbols);
    pg_check(b, "AllowUsersToChangePassword", "Allow users to change their own password",
             p.allow_change);
    pg_form_end(b, "Set policy");
}

static int pg_password(const struct console_ctx *c, const struct console_banner *bn,
                       struct http_response *resp)
{
    struct ty_buf b;
    pg_start(&b, c, "Change your password", bn);
    if (pg_reset_required(c))
        ty_buf_puts(&b, "<div class=\"alert error\" role=\"alert\">Your administrator requires "
                        "a new password before you go on.</div>\n");
    ty_buf_puts(&b, "<p>IAM user <code>");
    ty_buf_put_html(&b, c->sess->principal);
    ty_buf_puts(&b, "</code> changes his own console password (iam:ChangePassword; allowed by "
                    "the user's policies, or for everyone when the account password policy "
                    "says AllowUsersToChangePassword).</p>\n");
    pg_policy_text(c, &b);
    pg_form(&b, c, "iam", "ChangePassword", "/console/password", "Change your password");
    ty_buf_puts(&b, "<input type=\"hidden\" name=\"confirm-of\" value=\"p.NewPassword\">");
    ty_buf_puts(&b, "<label for=\"f-old\">Current password</label><input id=\"f-old\" "
                    "name=\"p.OldPassword\" type=\"password\" autocomplete=\"current-password\" "
                    "required><label for=\"f-new\">New password</label><input id=\"f-new\" "
                    "name=\"p.NewPassword\" type=\"password\" autocomplete=\"new-password\" "
                    "required><label for=\"f-confirm\">Confirm new password</label><input "
                    "id=\"f-confirm\" name=\"confirm\" type=\"password\" "
                    "autocomplete=\"new-password\" required>");
    pg_form_end(&b, "Change password");
    return pg_send(c, resp, &b);
}

/* ---- home ---- */

static int pg_home(const struct console_ctx *c, const struct console_banner *bn,
                   struct http_response *resp)
{
    struct ty_buf b;
    struct ty_err err;
    json_t *in = json_pack("{s:i}", "MaxResults", 10), *out = NULL, *j;
    size_t i;
    static const char *const cols[] = {"Training job", "Status", "Created", NULL};

    ty_err_clear(&err);
    pg_start(&b, c, "Home", bn);
    if (pg_reset_required(c))
        ty_buf_puts(&b, "<div class=\"alert error\" role=\"alert\">Your administrator requires "
                        "a new password: <a href=\"/console/password\">change your password"
                        "</a>.</div>\n");
    ty_buf_puts(&b, "<p>Signed in as <code>");
    ty_buf_put_html(&b, c->sess->principal);
    ty_buf_puts(&b,
                "</code>. Everything you do here is an API call made as this user, with its "
                "IAM permissions.</p>\n<ul class=\"tiles\">"
                "<li><a href=\"/console/domains\">Domains, user profiles and apps</a></li>"
                "<li><a href=\"/console/jobs\">Training jobs of all users</a></li>"
                "<li><a href=\"/console/iam/users\">IAM users, keys, policies, passwords</a></li>"
                "<li><a href=\"/console/iam/roles\">Roles</a></li>"
                "<li><a href=\"/console/system\">Agents and the queue</a></li></ul>\n"
                "<h2>Recent training jobs</h2>\n");
    if (console_call(c, "sagemaker", "ListTrainingJobs", in, &out, &err) != 0) {
        console_html_error(&b, &err, NULL);
    } else {
        pg_thead(&b, "Recent training jobs", cols);
        json_array_foreach(json_object_get(out, "TrainingJobSummaries"), i, j)
        {
            ty_buf_puts(&b, "<tr><td><a href=\"/console/jobs/");
            ty_buf_put_html(&b, pg_s(j, "TrainingJobName"));
            ty_buf_puts(&b, "\">");
            ty_buf_put_html(&b, pg_s(j, "TrainingJobName"));
            ty_buf_puts(&b, "</a></td>");
            pg_status(&b, pg_s(j, "TrainingJobStatus"));
            ty_buf_puts(&b, "<td>");
            console_html_time(&b, json_object_get(j, "CreationTime"));
            ty_buf_puts(&b, "</td></tr>\n");
        }
        ty_buf_puts(&b, "</tbody></table>\n");
    }
    json_decref(in);
    json_decref(out);
    return pg_send(c, resp, &b);
}

/* ---- domains ---- */

static int pg_domains(const struct console_ctx *c, const struct console_banner *bn,
                      struct http_response *resp)
{
    struct ty_buf b;
    struct ty_err err;
    json_t *in = json_object(), *out = NULL, *d;
    size_t i;
    char role[256];
    static const char *const cols[] = {"Name", "Id", "Status", "Created", "Actions", NULL};

    ty_err_clear(&err);
    snprintf(role, sizeof(role), "arn:aws:iam::%s:role/" STORE_IAM_DEFAULT_ROLE, c->rc->account_id);
    pg_start(&b, c, "Domains", bn);
    if (console_call(c, "sagemaker", "ListDomains", in, &out, &err) != 0) {
        console_html_error(&b, &err, NULL);
    } else {
        pg_thead(&b, "Domains", cols);
        json_array_foreach(json_object_get(out, "Domains"), i, d)
        {
            ty_buf_puts(&b, "<tr><td><a href=\"/console/domains/");
            ty_buf_put_html(&b, pg_s(d, "DomainId"));
            ty_buf_puts(&b, "\">");
            ty_buf_put_html(&b, pg_s(d, "DomainName"));
            ty_buf_puts(&b, "</a></td>");
            pg_td(&b, pg_s(d, "DomainId"));
            pg_status(&b, pg_s(d, "Status"));
            ty_buf_puts(&b, "<td>");
            console_html_time(&b, json_object_get(d, "CreationTime"));
            ty_buf_puts(&b, "</td><td>");
            console_html_button(&b, c->sess, "sagemaker", "DeleteDomain", "/console/domains",
                                "Delete", "Delete this domain?", "danger", "DomainId",
                                pg_s(d, "DomainId"), NULL);
            ty_buf_puts(&b, "</td></tr>\n");
        }
        ty_buf_puts(&b, "</tbody></table>\n");
        if (json_array_size(json_object_get(out, "Domains")) == 0)
            ty_buf_puts(&b, "<p>No domains yet.</p>\n");
    }
    pg_form(&b, c, "sagemaker", "CreateDomain", "/console/domains", "Create a domain");
    pg_field(&b, "p.DomainName", "Domain name", "text", NULL, 1);
    pg_field(&b, "p.DefaultUserSettings.ExecutionRole", "Default execution role", "text", role, 1);
    pg_hidden(&b, "p.AuthMode", "IAM");
    pg_hidden(&b, "l.SubnetIds", "subnet-00000000");
    pg_hidden(&b, "p.VpcId", "vpc-00000000");
    pg_form_end(&b, "Create domain");
    json_decref(in);
    json_decref(out);
    return pg_send(c, resp, &b);
}

static int pg_domain(const struct console_ctx *c, const char *id, const struct console_banner *bn,
                     struct http_response *resp)
{
    struct ty_buf b;
    struct ty_err err;
    json_t *in = json_pack("{s:s}", "DomainId", id), *out = NULL, *p;
    json_t *lin = json_pack("{s:s}", "DomainIdEquals", id), *lout = NULL;
    char back[256], title[160];
    size_t i;
    static const char *const cols[] = {"User profile", "Status", "Created", "Actions", NULL};

    ty_err_clear(&err);
    snprintf(back, sizeof(back), "/console/domains/%s", id);
    snprintf(title, sizeof(title), "Domain %s", id);
    pg_start(&b, c, title, bn);
    ty_buf_puts(&b, "<p><a href=\"/console/domains\">All domains</a></p>\n");
    if (console_call(c, "sagemaker", "DescribeDomain", in, &out, &err) != 0) {
        console_html_error(&b, &err, NULL);
    } else {
        ty_buf_puts(&b, "<dl class=\"facts\"><dt>Name</dt><dd>");
        ty_buf_put_html(&b, pg_s(out, "DomainName"));
        ty_buf_puts(&b, "</dd><dt>ARN</dt><dd>");
        ty_buf_put_html(&b, pg_s(out, "DomainArn"));
        ty_buf_puts(&b, "</dd><dt>Status</dt><dd>");
        ty_buf_put_html(&b, pg_s(out, "Status"));
        ty_buf_puts(&b, "</dd><dt>Default execution role</dt><dd>");
        ty_buf_put_html(&b, pg_s(json_object_get(out, "DefaultUserSettings"), "ExecutionRole"));
        ty_buf_puts(&b, "</dd><dt>Created</dt><dd>");
        console_html_time(&b, json_object_get(out, "CreationTime"));
        ty_buf_puts(&b, "</dd></dl>\n");
        pg_form(&b, c, "sagemaker", "UpdateDomain", back, "Default user settings");
        pg_hidden(&b, "p.DomainId", id);
        pg_field(&b, "p.DefaultUserSettings.ExecutionRole", "Default execution role", "text",
                 pg_s(json_object_get(out, "DefaultUserSettings"), "ExecutionRole"), 1);
        pg_form_end(&b, "Update domain");
    }
    ty_buf_puts(&b, "<h2>User profiles</h2>\n");
    ty_err_clear(&err);
    if (console_call(c, "sagemaker", "ListUserProfiles", lin, &lout, &err) != 0) {
        console_html_error(&b, &err, NULL);
    } else {
        pg_thead(&b, "User profiles", cols);
        json_array_foreach(json_object_get(lout, "UserProfiles"), i, p)
        {
            ty_buf_puts(&b, "<tr><td><a href=\"");
            ty_buf_put_html(&b, back);
            ty_buf_puts(&b, "/users/");
            ty_buf_put_html(&b, pg_s(p, "UserProfileName"));
            ty_buf_puts(&b, "\">");
            ty_buf_put_html(&b, pg_s(p, "UserProfileName"));
            ty_buf_puts(&b, "</a></td>");
            pg_status(&b, pg_s(p, "Status"));
            ty_buf_puts(&b, "<td>");
            console_html_time(&b, json_object_get(p, "CreationTime"));
            ty_buf_puts(&b, "</td><td>");
            console_html_button(&b, c->sess, "sagemaker", "DeleteUserProfile", back, "Delete",
                                "Delete this user profile?", "danger", "DomainId", id,
                                "UserProfileName", pg_s(p, "UserProfileName"), NULL);
            ty_buf_puts(&b, "</td></tr>\n");
        }
        ty_buf_puts(&b, "</tbody></table>\n");
    }
    pg_form(&b, c, "sagemaker", "CreateUserProfile", back, "Create a user profile");
    pg_hidden(&b, "p.DomainId", id);
    pg_field(&b, "p.UserProfileName", "User profile name", "text", NULL, 1);
    pg_field(&b, "t.trainyard:iam-user",
             "IAM user it belongs to (optional: the jobs this user "
             "creates are attributed to this profile)",
             "text", NULL, 0);
    pg_form_end(&b, "Create user profile");
    json_decref(in);
    json_decref(out);
    json_decref(lin);
    json_decref(lout);
    return pg_send(c, resp, &b);
}

static int pg_profile(const struct console_ctx *c, const char *id, const char *user,
                      const struct console_banner *bn, struct http_response *resp)
{
    struct ty_buf b;
    struct ty_err err;
    json_t *in = json_pack("{s:s,s:s}", "DomainId", id, "UserProfileName", user), *out = NULL;
    json_t *lin = json_pack("{s:s,s:s}", "DomainIdEquals", id, "UserProfileNameEquals", user);
    json_t *lout = NULL, *a;
    char back[320], title[200];
    size_t i;
    static const char *const cols[] = {"App type", "App name", "Status",
                                       "Created",  "Actions",  NULL};

    ty_err_clear(&err);
    snprintf(back, sizeof(back), "/console/domains/%.63s/users/%.63s", id, user);
    snprintf(title, sizeof(title), "User profile %.63s", user);
    pg_start(&b, c, title, bn);
    ty_buf_puts(&b, "<p><a href=\"/console/domains/");
    ty_buf_put_html(&b, id);
    ty_buf_puts(&b, "\">Domain ");
    ty_buf_put_html(&b, id);
    ty_buf_puts(&b, "</a></p>\n");
    if (console_call(c, "sagemaker", "DescribeUserProfile", in, &out, &err) != 0) {
        console_html_error(&b, &err, NULL);
    } else {
        ty_buf_puts(&b, "<dl class=\"facts\"><dt>ARN</dt><dd>");
        ty_buf_put_html(&b, pg_s(out, "UserProfileArn"));
        ty_buf_puts(&b, "</dd><dt>Status</dt><dd>");
        ty_buf_put_html(&b, pg_s(out, "Status"));
        ty_buf_puts(&b, "</dd><dt>Execution role</dt><dd>");
        ty_buf_put_html(&b, pg_s(json_object_get(out, "UserSettings"), "ExecutionRole"));
        ty_buf_puts(&b, "</dd></dl>\n");
    }
    console_html_button(&b, c->sess, "sagemaker", "CreatePresignedDomainUrl", back,
                        "Create a presigned domain URL", NULL, NULL, "DomainId", id,
                        "UserProfileName", user, NULL);
    ty_buf_puts(&b, "<h2>Apps</h2>\n");
    ty_err_clear(&err);
    if (console_call(c, "sagemaker", "ListApps", lin, &lout, &err) != 0) {
        console_html_error(&b, &err, NULL);
    } else {
        pg_thead(&b, "Apps", cols);
        json_array_foreach(json_object_get(lout, "Apps"), i, a)
        {
            ty_buf_puts(&b, "<tr>");
            pg_td(&b, pg_s(a, "AppType"));
            pg_td(&b, pg_s(a, "AppName"));
            pg_status(&b, pg_s(a, "Status"));
            ty_buf_puts(&b, "<td>");
            console_html_time(&b, json_object_get(a, "CreationTime"));
            ty_buf_puts(&b, "</td><td>");
            if (strcmp(pg_s(a, "Status"), "Deleted") != 0 &&
                strcmp(pg_s(a, "Status"), "Deleting") != 0)
                console_html_button(&b, c->sess, "sagemaker", "DeleteApp", back, "Delete",
                                    "Delete this app?", "danger", "DomainId", id, "UserProfileName",
                                    user, "AppType", pg_s(a, "AppType"), "AppName",
                                    pg_s(a, "AppName"), NULL);
            ty_buf_puts(&b, "</td></tr>\n");
        }
        ty_buf_puts(&b, "</tbody></table>\n");
    }
    pg_form(&b, c, "sagemaker", "CreateApp", back, "Create an app");
    pg_hidden(&b, "p.DomainId", id);
    pg_hidden(&b, "p.UserProfileName", user);
    ty_buf_puts(&b, "<label for=\"f-apptype\">App type</label><select id=\"f-apptype\" "
                    "name=\"p.AppType\"><option>DetailedProfiler</option>"
                    "<option>JupyterServer</option><option>KernelGateway</option></select>");
    pg_field(&b, "p.AppName", "App name", "text", "default", 1);
    pg_form_end(&b, "Create app");
    json_decref(in);
    json_decref(out);
    json_decref(lin);
    json_decref(lout);
    return pg_send(c, resp, &b);
}

/* ---- IAM ---- */

/* Calls IAM action with pairs of string parameters (NULL-terminated). OUT: xml. */
static int pg_iam(const struct console_ctx *c, struct ty_buf *xml, struct ty_err *err,
                  const char **code, const char *action, const char *k1, const char *v1)
{
    json_t *in = json_pack("{s:s}", "Action", action);
    int rc;
    if (k1)
        json_object_set_new(in, k1, json_string(v1));
    ty_buf_init(xml, 4u << 20);
    rc = console_call_iam(c, in, xml, err);
    if (rc != 0)
        *code = op_iamapi_error_code(err->code);
    json_decref(in);
    return rc;
}

/* The text of element tag inside [p, end) into OUT: out ("" when absent). */
static const char *pg_x(const char *p, const char *end, const char *tag, char *out, size_t n)
{
    const char *in, *ie;
    char *t;
    out[0] = '\0';
    if (p && ty_xml_find(p, end, tag, &in, &ie) && (t = ty_xml_text(in, ie)) != NULL) {
        snprintf(out, n, "%s", t);
        free(t);
    }
    return out;
}

static int pg_users(const struct console_ctx *c, const struct console_banner *bn,
                    struct http_response *resp)
{
    struct ty_buf b, x;
    struct ty_err err;
    const char *code = NULL;
    static const char *const cols[] = {"User name", "ARN", "Created", "Actions", NULL};

    ty_err_clear(&err);
    pg_start(&b, c, "IAM users", bn);
    if (pg_iam(c, &x, &err, &code, "ListUsers", "MaxItems", "1000") != 0) {
        console_html_error(&b, &err, code);
    } else {
        const char *p = x.data ? x.data : "", *end = p + x.len, *in, *ie;
        pg_thead(&b, "IAM users", cols);
        while ((p = ty_xml_find(p, end, "member", &in, &ie)) != NULL) {
            char name[80], arn[700], created[40];
            pg_x(in, ie, "UserName", name, sizeof(name));
            pg_x(in, ie, "Arn", arn, sizeof(arn));
            pg_x(in, ie, "CreateDate", created, sizeof(created));
            ty_buf_puts(&b, "<tr><td><a href=\"/console/iam/users/");
            ty_buf_put_html(&b, name);
            ty_buf_puts(&b, "\">");
            ty_buf_put_html(&b, name);
            ty_buf_puts(&b, "</a></td>");
            pg_td(&b, arn);
            pg_td(&b, created);
            ty_buf_puts(&b, "<td>");
            console_html_button(&b, c->sess, "iam", "DeleteUser", "/console/iam/users", "Delete",
                                "Delete this user?", "danger", "UserName", name, NULL);
            ty_buf_puts(&b, "</td></tr>\n");
        }
        ty_buf_puts(&b, "</tbody></table>\n");
    }
    ty_buf_cleanup(&x);
    pg_form(&b, c, "iam", "CreateUser", "/console/iam/users", "Create an IAM user");
    pg_field(&b, "p.UserName", "User name", "text", NULL, 1);
    pg_form_end(&b, "Create user");
    pg_policy_form(c, &b);
    return pg_send(c, resp, &b);
}

static int pg_user(const struct console_ctx *c, const char *name, const struct console_banner *bn,
                   struct http_response *resp)
{
    struct ty_buf b, x;
    struct ty_err err;
    const char *code = NULL;
    char back[160], title[160];
    static const char *const kcols[] = {"Access key", "Status", "Created", "Actions", NULL};
    static const char *const pcols[] = {"Inline policy", "Actions", NULL};

    ty_err_clear(&err);
    snprintf(back, sizeof(back), "/console/iam/users/%s", name);
    snprintf(title, sizeof(title), "IAM user %s", name);
    pg_start(&b, c, title, bn);
    ty_buf_puts(&b, "<p><a href=\"/console/iam/users\">All IAM users</a></p>\n");
    if (pg_iam(c, &x, &err, &code, "GetUser", "UserName", name) != 0) {
        console_html_error(&b, &err, code);
    } else {
        char v[700];
        const char *p = x.data ? x.data : "", *end = p + x.len;
        ty_buf_puts(&b, "<dl class=\"facts\"><dt>ARN</dt><dd>");
        ty_buf_put_html(&b, pg_x(p, end, "Arn", v, sizeof(v)));
        ty_buf_puts(&b, "</dd><dt>User id</dt><dd>");
        ty_buf_put_html(&b, pg_x(p, end, "UserId", v, sizeof(v)));
        ty_buf_puts(&b, "</dd><dt>Created</dt><dd>");
        ty_buf_put_html(&b, pg_x(p, end, "CreateDate", v, sizeof(v)));
        ty_buf_puts(&b, "</dd></dl>\n");
    }
    ty_buf_cleanup(&x);

    /* console password */
    ty_buf_puts(&b, "<h2>Console password</h2>\n");
    ty_err_clear(&err);
    if (pg_iam(c, &x, &err, &code, "GetLoginProfile", "UserName", name) == 0) {
        char v[64];
        const char *p = x.data ? x.data : "", *end = p + x.len;
        ty_buf_puts(&b, "<p>This user can sign in to the console (since ");
        ty_buf_put_html(&b, pg_x(p, end, "CreateDate", v, sizeof(v)));
        ty_buf_puts(&b, "). ");
        if (strcmp(pg_x(p, end, "PasswordResetRequired", v, sizeof(v)), "true") == 0)
            ty_buf_puts(&b, "<strong>A new password is required at the next sign-in.</strong> ");
        console_html_button(&b, c->sess, "iam", "DeleteLoginProfile", back, "Remove password",
                            "Remove this user's console password?", "danger", "UserName", name,
                            NULL);
        ty_buf_puts(&b, "</p>\n");
        pg_form(&b, c, "iam", "UpdateLoginProfile", back, "Set a new password");
        pg_hidden(&b, "p.UserName", name);
        pg_field(&b, "p.Password", "New password", "password", NULL, 1);
        pg_check(&b, "PasswordResetRequired", "User must create a new password at next sign-in", 0);
        pg_form_end(&b, "Update password");
    } else if (err.code == TY_ENOTFOUND) {
        ty_buf_puts(&b, "<p>No console password.</p>\n");
        pg_form(&b, c, "iam", "CreateLoginProfile", back, "Give a console password");
        pg_hidden(&b, "p.UserName", name);
        pg_field(&b, "p.Password", "Password", "password", NULL, 1);
        pg_check(&b, "PasswordResetRequired", "User must create a new password at next sign-in", 0);
        pg_form_end(&b, "Create login profile");
    } else {
        console_html_error(&b, &err, code);
    }
    ty_buf_cleanup(&x);

    /* access keys */
    ty_buf_puts(&b, "<h2>Access keys</h2>\n");
    ty_err_clear(&err);
    if (pg_iam(c, &x, &err, &code, "ListAccessKeys", "UserName", name) != 0) {
        console_html_error(&b, &err, code);
    } else {
        const char *p = x.data ? x.data : "", *end = p + x.len, *in, *ie;
        pg_thead(&b, "Access keys", kcols);
        while ((p = ty_xml_find(p, end, "member", &in, &ie)) != NULL) {
            char akid[140], st[20], created[40];
            pg_x(in, ie, "AccessKeyId", akid, sizeof(akid));
            ty_buf_puts(&b, "<tr>");
            pg_td(&b, akid);
            pg_td(&b, pg_x(in, ie, "Status", st, sizeof(st)));
            pg_td(&b, pg_x(in, ie, "CreateDate", created, sizeof(created)));
            ty_buf_puts(&b, "<td>");
            console_html_button(&b, c->sess, "iam", "DeleteAccessKey", back, "Delete",
                                "Delete this access key?", "danger", "UserName", name,
                                "AccessKeyId", akid, NULL);
            ty_buf_puts(&b, "</td></tr>\n");
        }
        ty_buf_puts(&b, "</tbody></table>\n");
    }
    ty_buf_cleanup(&x);
    console_html_button(&b, c->sess, "iam", "CreateAccessKey", back, "Create access key", NULL,
                        NULL, "UserName", name, NULL);

    /* inline policies */
    ty_buf_puts(&b, "<h2>Inline policies</h2>\n");
    ty_err_clear(&err);
    if (pg_iam(c, &x, &err, &code, "ListUserPolicies", "UserName", name) != 0) {
        console_html_error(&b, &err, code);
    } else {
        const char *p = x.data ? x.data : "", *end = p + x.len, *in, *ie;
        pg_thead(&b, "Inline policies", pcols);
        while ((p = ty_xml_find(p, end, "member", &in, &ie)) != NULL) {
            char *pol = ty_xml_text(in, ie);
            ty_buf_puts(&b, "<tr>");
            pg_td(&b, pol);
            ty_buf_puts(&b, "<td>");
            console_html_button(&b, c->sess, "iam", "DeleteUserPolicy", back, "Delete",
                                "Delete this policy?", "danger", "UserName", name, "PolicyName",
                                pol ? pol : "", NULL);
            ty_buf_puts(&b, "</td></tr>\n");
            free(pol);
        }
        ty_buf_puts(&b, "</tbody></table>\n");
    }
    ty_buf_cleanup(&x);
    pg_form(&b, c, "iam", "PutUserPolicy", back, "Put an inline policy");
    pg_hidden(&b, "p.UserName", name);
    pg_field(&b, "p.PolicyName", "Policy name", "text", NULL, 1);
    /* the starter a user who trains needs, scoped to him: his jobs, his buckets (<name>*) and
       passing his own execution role <name>-exec (README), never sagemaker:* or a broad role */
    ty_buf_puts(&b,
                "<label for=\"f-doc\">Policy document (JSON)</label><textarea id=\"f-doc\" "
                "name=\"p.PolicyDocument\" rows=\"8\" required>{\"Version\":\"2012-10-17\","
                "\"Statement\":[{\"Effect\":\"Allow\",\"Action\":[\"sagemaker:CreateTrainingJob\","
                "\"sagemaker:DescribeTrainingJob\",\"sagemaker:StopTrainingJob\"],"
                "\"Resource\":\"arn:aws:sagemaker:*:*:training-job/");
    ty_buf_put_html(&b, name);
    ty_buf_puts(&b, "-*\"},{\"Effect\":\"Allow\",\"Action\":\"s3:*\",\"Resource\":["
                    "\"arn:aws:s3:::");
    ty_buf_put_html(&b, name);
    ty_buf_puts(&b, "*\",\"arn:aws:s3:::");
    ty_buf_put_html(&b, name);
    ty_buf_puts(&b, "*/*\"]},{\"Effect\":\"Allow\",\"Action\":\"iam:PassRole\","
                    "\"Resource\":\"arn:aws:iam::*:role/");
    ty_buf_put_html(&b, name);
    ty_buf_puts(&b, "-exec\"}]}</textarea>");
    pg_form_end(&b, "Put policy");
    return pg_send(c, resp, &b);
}

static int pg_roles(const struct console_ctx *c, const struct console_banner *bn,
                    struct http_response *resp)
{
    struct ty_buf b, x;
    struct ty_err err;
    const char *code = NULL;
    static const char *const cols[] = {"Role", "ARN", "Created", "Description", NULL};

    ty_err_clear(&err);
    pg_start(&b, c, "Roles", bn);
    if (pg_iam(c, &x, &err, &code, "ListRoles", "MaxItems", "1000") != 0) {
        console_html_error(&b, &err, code);
    } else {
        const char *p = x.data ? x.data : "", *end = p + x.len, *in, *ie;
        pg_thead(&b, "Roles", cols);
        while ((p = ty_xml_find(p, end, "member", &in, &ie)) != NULL) {
            char v[STORE_IAM_DESC_MAX + 1];
            ty_buf_puts(&b, "<tr>");
            pg_td(&b, pg_x(in, ie, "RoleName", v, sizeof(v)));
            pg_td(&b, pg_x(in, ie, "Arn", v, sizeof(v)));
            pg_td(&b, pg_x(in, ie, "CreateDate", v, sizeof(v)));
            pg_td(&b, pg_x(in, ie, "Description", v, sizeof(v)));
            ty_buf_puts(&b, "</tr>\n");
        }
        ty_buf_puts(&b, "</tbody></table>\n");
    }
    ty_buf_cleanup(&x);
    return pg_send(c, resp, &b);
}

/* ---- training jobs ---- */

static void pg_jobs_link(struct ty_buf *b, const char *status, const char *name, const char *sort,
                         const char *order, const char *next)
{
    ty_buf_puts(b, "/console/jobs?status=");
    console_html_url(b, status);
    ty_buf_puts(b, "&amp;name=");
    console_html_url(b, name);
    ty_buf_puts(b, "&amp;sort=");
    console_html_url(b, sort);
    ty_buf_puts(b, "&amp;order=");
    console_html_url(b, order);
    if (next) {
        ty_buf_puts(b, "&amp;next=");
        console_html_url(b, next);
    }
}

static int pg_jobs(const struct console_ctx *c, const char *query, const struct console_banner *bn,
                   struct http_response *resp)
{
    static const char *const states[] = {"",         "InProgress", "Completed", "Failed",
                                         "Stopping", "Stopped",    NULL};
    static const char *const sorts[] = {"CreationTime", "Name", "Status", NULL};
    char status[32], name[64], sort[32], order[16], next[2048];
    struct ty_buf b;
    struct ty_err err;
    json_t *in = json_object(), *out = NULL, *j;
    const char *ntok;
    size_t i;
    static const char *const cols[] = {"Training job", "Status",  "Created",
                                       "Ended",        "Actions", NULL};

    ty_err_clear(&err);
    pg_q(query, "status", status, sizeof(status));
    pg_q(query, "name", name, sizeof(name));
    pg_q(query, "sort", sort, sizeof(sort));
    pg_q(query, "order", order, sizeof(order));
    pg_q(query, "next", next, sizeof(next));
    if (!sort[0])
        snprintf(sort, sizeof(sort), "CreationTime");
    if (strcmp(order, "Ascending") != 0)
        snprintf(order, sizeof(order), "Descending");
    pg_start(&b, c, "Training jobs", bn);
    ty_buf_puts(&b, "<form class=\"filters\" method=\"get\" action=\"/console/jobs\">"
                    "<label for=\"f-name\">Name contains</label><input id=\"f-name\" "
                    "name=\"name\" value=\"");
    ty_buf_put_html(&b, name);
    ty_buf_puts(&b, "\"><label for=\"f-status\">Status</label><select id=\"f-status\" "
                    "name=\"status\">");
    for (i = 0; states[i]; i++) {
        ty_buf_printf(&b, "<option value=\"%s\"%s>%s</option>", states[i],
                      strcmp(states[i], status) == 0 ? " selected" : "",
                      states[i][0] ? states[i] : "Any");
    }
    ty_buf_puts(&b, "</select><label for=\"f-sort\">Sort by</label><select id=\"f-sort\" "
                    "name=\"sort\">");
    for (i = 0; sorts[i]; i++)
        ty_buf_printf(&b, "<option%s>%s</option>", strcmp(sorts[i], sort) == 0 ? " selected" : "",
                      sorts[i]);
    ty_buf_printf(&b,
                  "</select><label for=\"f-order\">Order</label><select id=\"f-order\" "
                  "name=\"order\"><option%s>Descending</option><option%s>Ascending</option>"
                  "</select><button type=\"submit\">Filter</button></form>\n",
                  strcmp(order, "Descending") == 0 ? " selected" : "",
                  strcmp(order, "Ascending") == 0 ? " selected" : "");
    json_object_set_new(in, "MaxResults", json_integer(20));
    json_object_set_new(in, "SortBy", json_string(sort));
    json_object_set_new(in, "SortOrder", json_string(order));
    if (status[0])
        json_object_set_new(in, "StatusEquals", json_string(status));
    if (name[0])
        json_object_set_new(in, "NameContains", json_string(name));
    if (next[0])
        json_object_set_new(in, "NextToken", json_string(next));
    if (console_call(c, "sagemaker", "ListTrainingJobs", in, &out, &err) != 0) {
        console_html_error(&b, &err, NULL);
    } else {
        pg_thead(&b, "Training jobs", cols);
        json_array_foreach(json_object_get(out, "TrainingJobSummaries"), i, j)
        {
            const char *st = pg_s(j, "TrainingJobStatus");
            ty_buf_puts(&b, "<tr><td><a href=\"/console/jobs/");
            ty_buf_put_html(&b, pg_s(j, "TrainingJobName"));
            ty_buf_puts(&b, "\">");
            ty_buf_put_html(&b, pg_s(j, "TrainingJobName"));
            ty_buf_puts(&b, "</a></td>");
            pg_status(&b, st);
            ty_buf_puts(&b, "<td>");
            console_html_time(&b, json_object_get(j, "CreationTime"));
            ty_buf_puts(&b, "</td><td>");
            console_html_time(&b, json_object_get(j, "TrainingEndTime"));
            ty_buf_puts(&b, "</td><td>");
            if (strcmp(st, "InProgress") == 0)
                console_html_button(&b, c->sess, "sagemaker", "StopTrainingJob", "/console/jobs",
                                    "Stop", "Stop this training job?", "danger", "TrainingJobName",
                                    pg_s(j, "TrainingJobName"), NULL);
            ty_buf_puts(&b, "</td></tr>\n");
        }
        ty_buf_puts(&b, "</tbody></table>\n");
        if (json_array_size(json_object_get(out, "TrainingJobSummaries")) == 0)
            ty_buf_puts(&b, "<p>No training jobs match.</p>\n");
        ntok = json_string_value(json_object_get(out, "NextToken"));
        ty_buf_puts(&b, "<nav class=\"pages\" aria-label=\"Pages\">");
        if (next[0]) {
            ty_buf_puts(&b, "<a href=\"");
            pg_jobs_link(&b, status, name, sort, order, NULL);
            ty_buf_puts(&b, "\">First page</a> ");
        }
        if (ntok) {
            ty_buf_puts(&b, "<a rel=\"next\" href=\"");
            pg_jobs_link(&b, status, name, sort, order, ntok);
            ty_buf_puts(&b, "\">Next page</a>");
        }
        ty_buf_puts(&b, "</nav>\n");
    }
    json_decref(in);
    json_decref(out);
    return pg_send(c, resp, &b);
}

/* ---- agents and the queue ---- */

/* One cell: "gpus / cpus / GiB" of a ledger amount (agent/ledger.h), "of" the capacity when
   given; "-" from an agent that publishes no ledger. */
static void pg_td_res(struct ty_buf *b, json_t *r, json_t *of)
{
    if (!json_is_object(r)) {
        ty_buf_puts(b, "<td>-</td>");
        return;
    }
    ty_buf_printf(b, "<td>%lld / %lld / %.1f",
                  (long long)json_integer_value(json_object_get(r, "gpus")),
                  (long long)json_integer_value(json_object_get(r, "cpus")),
                  (double)json_integer_value(json_object_get(r, "memory_bytes")) / 1073741824.0);
    if (json_is_object(of))
        ty_buf_printf(
            b, " of %lld / %lld / %.1f", (long long)json_integer_value(json_object_get(of, "gpus")),
            (long long)json_integer_value(json_object_get(of, "cpus")),
            (double)json_integer_value(json_object_get(of, "memory_bytes")) / 1073741824.0);
    ty_buf_puts(b, "</td>");
}

#define PG_QUOTAS_SHOWN 500 /* users and roles looked at for a quota tag */

/* The IAM users' or roles' (roles) quota tags (quota.h) as table rows, of the first
   PG_QUOTAS_SHOWN of them. */
static void pg_quota_rows(const struct console_ctx *c, struct ty_buf *b, int roles)
{
    struct ty_err err;
    json_t *list = roles ? store_iam_role_list(c->s, &err) : store_iam_user_list(c->s, &err), *e;
    size_t i;

    json_array_foreach(list, i, e)
    {
        const char *name = json_string_value(json_object_get(e, roles ? "RoleName" : "UserName"));
        json_t *tags = NULL, *t;
        size_t k;
        int rc;
        if (i >= PG_QUOTAS_SHOWN || !name)
            break;
        if (roles) {
            struct store_iam_role r;
            rc = store_iam_role_get(c->s, name, &r, NULL, &tags, &err);
        } else {
            struct store_iam_user u;
            rc = store_iam_user_get(c->s, name, &u, &tags, &err);
        }
        json_array_foreach(rc == 0 ? tags : NULL, k, t)
        {
            const char *key = json_string_value(json_object_get(t, "Key"));
            if (!key || strcasecmp(key, QUOTA_PRINCIPAL_TAG) != 0)
                continue;
            ty_buf_printf(b, "<tr><td>%s</td>", roles ? "role (each session)" : "user");
            pg_td(b, name);
            pg_td(b, json_string_value(json_object_get(t, "Value")));
            ty_buf_puts(b, "</tr>\n");
        }
        json_decref(tags);
    }
    json_decref(list);
}

/* The quotas: the account's (the --max-* flags), the principals' default and the users and
   roles with their own (an IAM tag), with forms that set one through IAM's TagUser/TagRole.
   The principals' are shown to who may list IAM users (iam:ListUsers), as IAM would. */
static void pg_quotas(const struct console_ctx *c, struct ty_buf *b)
{
    static const char *const cols[] = {"Principal", "Name", "Training instances in progress", NULL};
    struct quota_limits q;
    struct ty_buf xml;
    struct ty_err err;
    const char *code = NULL;
    int may;

    quota_get(&q);
    ty_buf_puts(b, "<h2>Quotas</h2>\n<dl class=\"facts\">");
    ty_buf_printf(b, "<dt>Training instances per instance type (InProgress)</dt><dd>%ld</dd>",
                  q.training_instances_per_type);
    ty_buf_printf(b,
                  "<dt>Training instances in progress per principal (default)</dt>"
                  "<dd id=\"quota-principal-default\">%ld</dd>",
                  q.training_instances_per_principal);
    ty_buf_printf(b, "<dt>User profiles per domain</dt><dd>%ld</dd>", q.profiles_per_domain);
    ty_buf_printf(b, "<dt>Apps per user profile</dt><dd>%ld</dd></dl>\n", q.apps_per_user);
    ty_buf_puts(b, "<p class=\"hint\">0 means no limit; trainyard-server's --max-* flags set "
                   "them. A user's or a role's own quota is its IAM tag " QUOTA_PRINCIPAL_TAG
                   " (docs/resources.md).</p>\n");
    ty_err_clear(&err);
    may = pg_iam(c, &xml, &err, &code, "ListUsers", "MaxItems", "1") == 0;
    ty_buf_cleanup(&xml);
    if (!may) {
        ty_buf_puts(b, "<p class=\"hint\">Your IAM policy does not allow iam:ListUsers: the "
                       "principals' own quotas are not shown.</p>\n");
        return;
    }
    pg_thead(b, "Principals with a quota of their own", cols);
    pg_quota_rows(c, b, 0);
    pg_quota_rows(c, b, 1);
    ty_buf_puts(b, "</tbody></table>\n");
    pg_form(b, c, "iam", "TagUser", "/console/system", "Set an IAM user's quota");
    pg_field(b, "p.UserName", "IAM user", "text", NULL, 1);
    pg_field(b, "t." QUOTA_PRINCIPAL_TAG, "Training instances in progress (0: no limit)", "number",
             NULL, 1);
    pg_form_end(b, "Set quota");
    pg_form(b, c, "iam", "TagRole", "/console/system",
            "Set a role's quota (each of its sessions: a Studio profile's, a job's)");
    pg_field(b, "p.RoleName", "IAM role", "text", NULL, 1);
    pg_field(b, "t." QUOTA_PRINCIPAL_TAG, "Training instances in progress (0: no limit)", "number",
             NULL, 1);
    pg_form_end(b, "Set quota");
}

#define PG_QUEUE_SHOWN 50

/* The first PG_QUEUE_SHOWN waiting jobs in the order agents consider them (fair share,
   queue.h), from agents' (borrowed) capacities. */
static void pg_queue_order(const struct console_ctx *c, struct ty_buf *b, json_t *agents)
{
    static const char *const cols[] = {"#", "Job", "Principal", NULL};
    struct queue_item w[PG_QUEUE_SHOWN];
    struct queue_res total;
    struct ty_err err;
    size_t n = 0;

    queue_capacity_total(agents, &total);
    if (queue_waiting(c->s, PG_QUEUE_SHOWN, &total, w, &n, NULL, 0, &err) < 0) {
        console_html_error(b, &err, NULL);
        return;
    }
    pg_thead(b, "Waiting jobs, in the order agents consider them (fair share)", cols);
    for (size_t i = 0; i < n; i++) {
        ty_buf_printf(b, "<tr><td>%zu</td>", i + 1);
        pg_td(b, w[i].job);
        pg_td(b, w[i].principal);
        ty_buf_puts(b, "</tr>\n");
    }
    ty_buf_puts(b, "</tbody></table>\n<p class=\"hint\">The principal whose running jobs hold "
                   "the least share of the agents' GPUs, vCPUs and memory goes first, then the "
                   "one served longest ago, then the oldest job; an agent takes the first that "
                   "fits it (docs/resources.md).</p>\n");
}

static int pg_system(const struct console_ctx *c, const struct console_banner *bn,
                     struct http_response *resp)
{
    struct ty_buf b;
    struct ty_err err;
    json_t *agents = NULL, *a, *in = json_pack("{s:i}", "MaxResults", 1), *out = NULL;
    long depth;
    size_t i;
    long long slots = 0, busy = 0;
    static const char *const cols[] = {
        "Agent",       "CPUs in use",  "Memory in use (GiB)",
        "GPUs in use", "Slots in use", "Ledger free (GPUs / vCPUs / GiB)",
        NULL};
    static const char *const jcols[] = {
        "Agent", "Job",          "Principal", "Instance type", "Hosts",
        "CPUs",  "Memory (GiB)", "GPUs",      "Volume (GB)",   "Charged (GPUs / vCPUs / GiB)",
        NULL};

    ty_err_clear(&err);
    pg_start(&b, c, "Agents, queue and quotas", bn);
    /* who may list training jobs may see what runs them */
    if (console_call(c, "sagemaker", "ListTrainingJobs", in, &out, &err) != 0) {
        console_html_error(&b, &err, NULL);
        goto done;
    }
    depth = queue_depth(c->s, &err);
    agents = queue_agents(c->s, &err);
    if (!agents) {
        console_html_error(&b, &err, NULL);
        goto done;
    }
    json_array_foreach(agents, i, a)
    {
        slots += json_integer_value(json_object_get(a, "slots"));
        busy += json_integer_value(json_object_get(a, "busy"));
    }
    ty_buf_printf(&b,
                  "<dl class=\"facts\"><dt>Live agents</dt><dd id=\"live-agents\">%zu</dd>"
                  "<dt>Slots in use</dt><dd id=\"slots-in-use\">%lld of %lld</dd>"
                  "<dt>Queue depth</dt><dd id=\"queue-depth\">%ld</dd></dl>\n",
                  json_array_size(agents), busy, slots, depth);
    pg_thead(&b, "Live agents", cols);
    json_array_foreach(agents, i, a)
    {
        json_t *u = json_object_get(a, "in_use");
        ty_buf_puts(&b, "<tr>");
        pg_td(&b, pg_s(a, "id"));
        ty_buf_printf(&b,
                      "<td>%lld / %lld</td><td>%.1f / %.1f</td><td>%lld / %lld</td>"
                      "<td>%lld / %lld</td>",
                      (long long)json_integer_value(json_object_get(u, "cpus")),
                      (long long)json_integer_value(json_object_get(a, "cpus")),
                      (double)json_integer_value(json_object_get(u, "memory_bytes")) / 1073741824.0,
                      (double)json_integer_value(json_object_get(a, "memory_bytes")) / 1073741824.0,
                      (long long)json_integer_value(json_object_get(u, "gpus")),
                      (long long)json_integer_value(json_object_get(a, "gpus")),
                      (long long)json_integer_value(json_object_get(a, "busy")),
                      (long long)json_integer_value(json_object_get(a, "slots")));
        pg_td_res(&b, json_object_get(a, "free"), json_object_get(a, "capacity"));
        ty_buf_puts(&b, "</tr>\n");
    }
    ty_buf_puts(&b, "</tbody></table>\n");
    pg_thead(&b, "What the running jobs hold (their containers' limits)", jcols);
    json_array_foreach(agents, i, a)
    {
        size_t k;
        json_t *j;
        json_array_foreach(json_object_get(a, "holding"), k, j)
        {
            ty_buf_puts(&b, "<tr>");
            pg_td(&b, pg_s(a, "id"));
            pg_td(&b, pg_s(j, "job"));
            pg_td(&b, pg_s(j, "principal"));
            pg_td(&b, pg_s(j, "instance_type"));
            ty_buf_printf(&b, "<td>%lld</td><td>%lld</td><td>%.1f</td><td>%lld</td><td>%lld</td>",
                          (long long)json_integer_value(json_object_get(j, "hosts")),
                          (long long)json_integer_value(json_object_get(j, "cpus")),
                          (double)json_integer_value(json_object_get(j, "memory_bytes")) /
                              1073741824.0,
                          (long long)json_integer_value(json_object_get(j, "gpus")),
                          (long long)json_integer_value(json_object_get(j, "volume_gb")));
            pg_td_res(&b, json_object_get(j, "charged"), NULL);
            ty_buf_puts(&b, "</tr>\n");
        }
    }
    ty_buf_puts(&b, "</tbody></table>\n");
    pg_queue_order(c, &b, agents);
    pg_quotas(c, &b);
done:
    json_decref(agents);
    json_decref(in);
    json_decref(out);
    return pg_send(c, resp, &b);
}

/* ---- dispatch ---- */

int console_pages_serve(const struct console_ctx *c, const char *path, const char *query,
                        const struct console_banner *bn, struct http_response *resp)
{
    char a[PAGES_NAME_MAX], u[PAGES_NAME_MAX];
    const char *rest, *slash;

    if (c->sess->kind != CONSOLE_IAM)
        return 0;
    if (strcmp(path, "/console/home") == 0)
        return pg_home(c, bn, resp);
    if (strcmp(path, "/console/domains") == 0)
        return pg_domains(c, bn, resp);
    if (strncmp(path, "/console/domains/", 17) == 0) {
        rest = path + 17;
        slash = strchr(rest, '/');
        if (!slash) {
            if (!pg_name_ok(rest, strlen(rest)))
                return 0;
            return pg_domain(c, rest, bn, resp);
        }
        if (!pg_name_ok(rest, (size_t)(slash - rest)) || strncmp(slash, "/users/", 7) != 0 ||
            !pg_name_ok(slash + 7, strlen(slash + 7)))
            return 0;
        snprintf(a, sizeof(a), "%.*s", (int)(slash - rest), rest);
        snprintf(u, sizeof(u), "%s", slash + 7);
        return pg_profile(c, a, u, bn, resp);
    }
    if (strcmp(path, "/console/iam/users") == 0)
        return pg_users(c, bn, resp);
    if (strncmp(path, "/console/iam/users/", 19) == 0) {
        rest = path + 19;
        if (strcmp(rest, "me") == 0)
            rest = c->sess->user;
        if (!pg_name_ok(rest, strlen(rest)))
            return 0;
        return pg_user(c, rest, bn, resp);
    }
    if (strcmp(path, "/console/iam/roles") == 0)
        return pg_roles(c, bn, resp);
    if (strcmp(path, "/console/jobs") == 0)
        return pg_jobs(c, query, bn, resp);
    if (strcmp(path, "/console/system") == 0)
        return pg_system(c, bn, resp);
    if (strcmp(path, "/console/password") == 0)
        return pg_password(c, bn, resp);
    return 0;
}
