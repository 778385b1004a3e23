/*
 * console.c - /console/...: dispatch, sign-in (password and presigned URL), sign-out, the
 * action endpoint and the Studio user's profiler app (console.h).
 *
 * Answers: pages are HTML (console_html.c); an unknown page 404; a page without a session
 * 403 with a link to /console/login; methods other than GET/HEAD/POST 405; a POST whose CSRF
 * token or Origin is wrong 403 (nothing is done).
 */
#include "console.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "attrib.h"
#include "console_assets.h"
#include "console_auth.h"
#include "console_call.h"
#include "console_html.h"
#include "console_job.h"
#include "console_pages.h"
#include "console_presign.h"
#include "front_ctx.h"
#include "iamapi.h"
#include "password.h"
#include "store_iam.h"
#include "store_res.h"
#include "studio.h"
#include "ty_codec.h"
#include "ty_log.h"

#define CONSOLE_MAX_JOBS  1000
#define CONSOLE_TAG_OWNER ATTRIB_OWNER

/* ---- pure helpers ---- */

int console_path(const char *path)
{
    return path && strncmp(path, "/console", 8) == 0 && (path[8] == '\0' || path[8] == '/');
}

int console_cookie(const char *header, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    const char *p = header;
    if (!header || n == 0)
        return -1;
    while (*p) {
        const char *end;
        size_t vl;
        while (*p == ' ' || *p == '\t' || *p == ';')
            p++;
        end = strchr(p, ';');
        if (!end)
            end = p + strlen(p);
        if ((size_t)(end - p) > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            const char *v = p + nl + 1;
            vl = (size_t)(end - v);
            while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                vl--;
            if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
                v++;
                vl -= 2;
            }
            if (vl == 0 || vl >= n)
                return -1;
            memcpy(out, v, vl);
            out[vl] = '\0';
            return 0;
        }
        p = end;
    }
    return -1;
}

int console_query_param(const char *query, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    const char *p = query;
    if (!query || n == 0)
        return -1;
    while (*p) {
        const char *end = strchr(p, '&');
        if (!end)
            end = p + strlen(p);
        if ((size_t)(end - p) > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            const char *v = p + nl + 1;
            size_t o = 0;
            if (ty_pct_decode(v, (size_t)(end - v), TY_PCT_PLUS_SPACE | TY_PCT_NO_NUL, out, n,
                              &o) != 0 ||
                o == 0)
                return -1;
            return 0;
        }
        p = *end ? end + 1 : end;
    }
    return -1;
}

int console_back_ok(const char *back)
{
    return back && strncmp(back, "/console/", 9) == 0 && !strpbrk(back, "\r\n\\\"<>'") &&
           !strstr(back, "//") && strlen(back) < 1024;
}

static void console_forbidden(struct http_request *req, struct http_response *resp)
{
    struct ty_buf b;
    console_html_start(&b, "Sign in", NULL);
    ty_buf_puts(&b, "<p>You are not signed in to this console, or your session has ended.</p>"
                    "<p><a href=\"/console/login\">Sign in</a> with your IAM user name and "
                    "password, or open the console through a new presigned domain URL "
                    "(<code>aws sagemaker create-presigned-domain-url</code>).</p>\n");
    console_html_send(req, resp, 403, &b);
}

/* ---- sign-in with a password ---- */

static void password_form(struct http_request *req, struct http_response *resp,
                          const struct front_ctx *rc, int status, const char *error)
{
    struct ty_buf b;
    console_html_start(&b, "Sign in", NULL);
    if (error) {
        ty_buf_puts(&b, "<div class=\"alert error\" role=\"alert\">");
        ty_buf_put_html(&b, error);
        ty_buf_puts(&b, "</div>\n");
    }
    ty_buf_puts(&b, "<form class=\"card login\" method=\"post\" action=\"/console/login\">"
                    "<label for=\"account\">Account ID</label>"
                    "<input id=\"account\" name=\"account\" autocomplete=\"organization\" "
                    "required value=\"");
    ty_buf_put_html(&b, rc->account_id);
    ty_buf_puts(&b, "\"><label for=\"username\">IAM user name</label>"
                    "<input id=\"username\" name=\"username\" autocomplete=\"username\" "
                    "required autofocus>"
                    "<label for=\"password\">Password</label>"
                    "<input id=\"password\" name=\"password\" type=\"password\" "
                    "autocomplete=\"current-password\" required>"
                    "<button type=\"submit\">Sign in</button></form>\n"
                    "<p class=\"hint\">Domain users: open the console through a presigned domain "
                    "URL (<code>aws sagemaker create-presigned-domain-url</code>).</p>\n");
    console_html_send(req, resp, status, &b);
}

/* 1 when IAM user name's login profile has PasswordResetRequired set. */
static int console_reset_pending(struct store *s, const char *name)
{
    struct store_iam_user u;
    struct ty_err err;
    ty_err_clear(&err);
    if (store_iam_user_get(s, name, &u, NULL, &err) != 0)
        return 0;
    return password_reset_required(s, u.name, u.id);
}

static void console_serve_login(struct http_request *req, struct http_response *resp,
                                struct store *s, const struct front_ctx *rc)
{
    char account[64] = "", user[130] = "", pw[260] = "", sid[CONSOLE_AUTH_SID_LEN + 1];
    char cookie[256], source[64], device[PASSWORD_DEVICE_MAX];
    struct password_try t;
    struct ty_err err;
    const char *origin = http_header(req, "Origin"), *host = http_header(req, "Host");

    ty_err_clear(&err);
    /* a login form posted from another site is refused (login CSRF) */
    if (origin &&
        (!strstr(origin, "://") || !host || strcasecmp(strstr(origin, "://") + 3, host) != 0)) {
        password_form(req, resp, rc, 403, "This sign-in request came from another site.");
        return;
    }
    console_auth_form(req, "account", account, sizeof(account));
    console_auth_form(req, "username", user, sizeof(user));
    console_auth_form(req, "password", pw, sizeof(pw));
    memset(&t, 0, sizeof(t));
    password_source(req->client, source, sizeof(source));
    t.source = source;
    if (console_cookie(http_header(req, "Cookie"), CONSOLE_DEVICE_COOKIE, device, sizeof(device)) ==
        0)
        t.device = device;
    if (console_auth_login(s, rc->account_id, account, user, pw, &t, sid, sizeof(sid), &err) != 0) {
        memset(pw, 0, sizeof(pw));
        if (err.code == TY_ETHROTTLE) {
            char after[24];
            snprintf(after, sizeof(after), "%lld", (t.wait_ms + 999) / 1000);
            http_response_header(resp, "Retry-After", after);
        }
        password_form(req, resp, rc,
                      err.code == TY_EREDIS      ? 503
                      : err.code == TY_ETHROTTLE ? 429
                                                 : 401,
                      err.msg);
        return;
    }
    memset(pw, 0, sizeof(pw));
    /* a user whose administrator asked for a new password goes to the change-password page */
    console_html_redirect(req, resp,
                          console_reset_pending(s, user) ? "/console/password" : "/console/home");
    console_auth_cookie(cookie, sizeof(cookie), sid, CONSOLE_AUTH_TTL_S, console_auth_secure(req));
    http_response_header(resp, "Set-Cookie", cookie);
    if (t.device_out[0]) { /* this browser is now a known device of the user (password.h) */
        snprintf(cookie, sizeof(cookie),
                 "%s=%s; Path=/console/login; Max-Age=%d; HttpOnly; "
                 "SameSite=Strict%s",
                 CONSOLE_DEVICE_COOKIE, t.device_out, CONSOLE_DEVICE_TTL_S,
                 console_auth_secure(req) ? "; Secure" : "");
        http_response_header(resp, "Set-Cookie", cookie);
    }
}

static void console_logout(struct http_request *req, struct http_response *resp, struct store *s)
{
    struct console_sess sess;
    struct ty_err err;
    char cookie[256];
    ty_err_clear(&err);
    if (console_auth_session(s, req, &sess, &err) == 0) {
        if (!console_auth_csrf_ok(&sess, req)) {
            console_html_message(req, resp, 403, "Forbidden",
                                 "This form is stale or came from another site; nothing was done.",
                                 &sess);
            console_auth_release(&sess);
            return;
        }
        console_auth_logout(s, req, &err);
        console_auth_release(&sess);
    }
    console_html_redirect(req, resp, "/console/login");
    console_auth_cookie(cookie, sizeof(cookie), NULL, 0, console_auth_secure(req));
    http_response_header(resp, "Set-Cookie", cookie);
}

/* ---- sign-in through a presigned domain URL ---- */

/* The execution role of a user profile (its own, else its domain's default). OUT: out. */
static void console_exec_role(struct store *s, json_t *prof, char *out, size_t n)
{
    const char *r =
        json_string_value(json_object_get(json_object_get(prof, "UserSettings"), "ExecutionRole"));
    json_t *dom = NULL;
    struct ty_err err;
    ty_err_clear(&err);
    if (!r) {
        const char *did = json_string_value(json_object_get(prof, "DomainId"));
        if (did)
            dom = store_res_get(s, OP_STUDIO_KIND_DOMAIN, did, (double)time(NULL),
                                op_studio_timing(), &err);
        r = json_string_value(
            json_object_get(json_object_get(dom, "DefaultUserSettings"), "ExecutionRole"));
    }
    snprintf(out, n, "%s", r ? r : "");
    json_decref(dom);
}

static void console_serve_auth(struct http_request *req, struct http_response *resp,
                               struct store *s)
{
    char token[128], sid[CONSOLE_AUTH_SID_LEN + 1], cookie[256], role[1024];
    const char *landing, *pid, *st;
    struct ty_err err;
    json_t *tok, *prof = NULL, *sess = NULL;
    struct ty_buf b;
    int secs;

    ty_err_clear(&err);
    if (console_query_param(req->query, "token", token, sizeof(token)) != 0) {
        console_html_message(req, resp, 403, "Forbidden", "This sign-in link is not valid.", NULL);
        return;
    }
    tok = store_res_token_take(s, token, &err);
    if (!tok) {
        if (err.code == TY_ENOTFOUND)
            console_html_message(req, resp, 403, "Forbidden",
                                 "This sign-in link has expired or has already been used. Ask "
                                 "for a new presigned domain URL.",
                                 NULL);
        else
            console_html_message(req, resp, 503, "Service unavailable", err.msg, NULL);
        return;
    }
    landing = json_string_value(json_object_get(tok, "Landing"));
    pid = json_string_value(json_object_get(tok, "ProfileId"));
    secs = (int)json_integer_value(json_object_get(tok, "SessionSeconds"));
    if (!landing || !pid || secs < 1 || !console_back_ok(landing)) {
        console_forbidden(req, resp);
        goto out;
    }
    /* the user profile must still exist */
    prof =
        store_res_get(s, OP_STUDIO_KIND_PROFILE, pid, (double)time(NULL), op_studio_timing(), &err);
    st = json_string_value(json_object_get(prof, "Status"));
    if (!prof || !st || strcmp(st, "Deleting") == 0) {
        console_forbidden(req, resp);
        goto out;
    }
    console_exec_role(s, prof, role, sizeof(role));
    sess = json_deep_copy(tok);
    json_object_del(sess, "Landing");
    json_object_set_new(sess, "Kind", json_string("studio"));
    json_object_set_new(sess, "Principal", json_string(role));
    json_object_set_new(sess, "Expires", json_integer((json_int_t)time(NULL) + secs));
    if (console_auth_start(s, sess, pid, secs, sid, sizeof(sid), &err) != 0) {
        console_html_message(req, resp, 503, "Service unavailable", err.msg, NULL);
        goto out;
    }
    ty_log(TY_LOG_INFO, "console.signin", "profile=%s ttl=%d", pid, secs);
    /* a page, not a redirect: the SameSite=Strict cookie rides on the same-site navigation
       that the page starts (a redirect from a cross-site link would not carry it) */
    console_html_start(&b, "Signing in", NULL);
    ty_buf_puts(&b, "<p>You are signed in. <a id=\"landing\" href=\"");
    ty_buf_put_html(&b, landing);
    ty_buf_puts(&b, "\">Continue</a></p>\n");
    console_html_send(req, resp, 200, &b);
    {
        char refresh[1100];
        snprintf(refresh, sizeof(refresh), "0; url=%s", landing);
        http_response_header(resp, "Refresh", refresh);
    }
    console_auth_cookie(cookie, sizeof(cookie), sid, secs, console_auth_secure(req));
    http_response_header(resp, "Set-Cookie", cookie);
out:
    json_decref(tok);
    json_decref(prof);
    json_decref(sess);
}

/* ---- the Studio user's profiler app ---- */

/* 0 when sess's DetailedProfiler app is InService; else the page is written, -1. */
static int console_app_running(struct http_request *req, struct http_response *resp,
                               struct store *s, const struct console_sess *sess)
{
    struct ty_err err;
    const char *pid = json_string_value(json_object_get(sess->doc, "ProfileId"));
    json_t *apps, *a;
    size_t i;
    int running = 0;

    ty_err_clear(&err);
    if (!pid) {
        console_forbidden(req, resp);
        return -1;
    }
    apps = store_res_list(s, OP_STUDIO_KIND_APP, OP_STUDIO_KIND_PROFILE, pid, (double)time(NULL),
                          op_studio_timing(), &err);
    if (!apps) {
        console_html_message(req, resp, 503, "Service unavailable", err.msg, sess);
        return -1;
    }
    json_array_foreach(apps, i, a)
    {
        const char *t = json_string_value(json_object_get(a, "AppType"));
        const char *st = json_string_value(json_object_get(a, "Status"));
        if (t && st && strcmp(t, "DetailedProfiler") == 0 && strcmp(st, "InService") == 0)
            running = 1;
    }
    json_decref(apps);
    if (!running) {
        char text[512];
        snprintf(text, sizeof(text),
                 "The DetailedProfiler app of user profile %s is not InService. Create it (aws "
                 "sagemaker create-app --app-type DetailedProfiler ...) and reload this page "
                 "once it is InService.",
                 sess->user);
        console_html_message(req, resp, 503, "Profiler app not running", text, sess);
        return -1;
    }
    return 0;
}

static void console_profiler(struct http_request *req, struct http_response *resp, struct store *s,
                             const struct console_sess *sess)
{
    struct store_job_query q;
    struct ty_buf b;
    struct ty_err err;
    char *next = NULL, title[160];
    const char *arn = json_string_value(json_object_get(sess->doc, "UserProfileArn"));
    const char *dom = json_string_value(json_object_get(sess->doc, "DomainId"));
    int shown = 0, scanned = 0;

    ty_err_clear(&err);
    snprintf(title, sizeof(title), "Profiler - %.100s", sess->user);
    console_html_start(&b, title, sess);
    ty_buf_puts(&b, "<p>Domain <code>");
    ty_buf_put_html(&b, dom);
    ty_buf_puts(&b, "</code>, user profile <code>");
    ty_buf_put_html(&b, arn);
    ty_buf_puts(&b,
                "</code>. Your training jobs: the jobs tagged <code>" CONSOLE_TAG_OWNER
                "</code> with this profile's ARN (jobs you create are tagged "
                "automatically).</p>\n"
                "<table><caption>My training jobs</caption><thead><tr><th scope=\"col\">"
                "Training job</th><th scope=\"col\">Status</th><th scope=\"col\">Created"
                "</th><th scope=\"col\">Profiling</th><th scope=\"col\">Profiler output</th></tr>"
                "</thead><tbody>\n");
    memset(&q, 0, sizeof(q));
    q.max_results = 100;
    do {
        json_t *jobs, *j;
        size_t i;
        char *prev = next;
        q.next_token = prev;
        next = NULL;
        jobs = store_job_list(s, &q, &next, &err);
        free(prev);
        if (!jobs)
            break;
        json_array_foreach(jobs, i, j)
        {
            const char *name = json_string_value(json_object_get(j, "TrainingJobName"));
            const char *jarn = json_string_value(json_object_get(j, "TrainingJobArn"));
            const char *prof = json_string_value(json_object_get(j, "ProfilingStatus"));
            const char *st = json_string_value(json_object_get(j, "TrainingJobStatus"));
            scanned++;
            if (!name || !jarn || !attrib_owns(s, jarn, arn))
                continue;
            shown++;
            ty_buf_puts(&b, "<tr><td><a href=\"/console/profiler/jobs/");
            ty_buf_put_html(&b, name);
            ty_buf_puts(&b, "\">");
            ty_buf_put_html(&b, name);
            ty_buf_printf(&b, "</a></td><td><span class=\"status s-%s\">", st ? st : "");
            ty_buf_put_html(&b, st);
            ty_buf_puts(&b, "</span></td><td>");
            console_html_time(&b, json_object_get(j, "CreationTime"));
            ty_buf_puts(&b, "</td><td>");
            ty_buf_put_html(&b, prof ? prof : "Disabled");
            ty_buf_puts(&b, "</td><td>");
            {
                char *pp = console_job_profiler_prefix(j);
                if (pp) {
                    ty_buf_puts(&b, "<code>");
                    ty_buf_put_html(&b, pp);
                    ty_buf_puts(&b, "/profiler-output/</code>");
                } else {
                    ty_buf_puts(&b, "-");
                }
                free(pp);
            }
            ty_buf_puts(&b, "</td></tr>\n");
        }
        json_decref(jobs);
    } while (next && scanned < CONSOLE_MAX_JOBS);
    free(next);
    ty_buf_puts(&b, "</tbody></table>\n");
    if (shown == 0)
        ty_buf_puts(&b, "<p>No training jobs yet.</p>\n");
    console_html_send(req, resp, 200, &b);
}

/* ---- the action endpoint ---- */

static void console_render(const struct console_ctx *c, const char *path, const char *query,
                           const struct console_banner *bn, struct http_response *resp);

/* 1 when the form has a "confirm" field (a password typed twice) that differs from the field
   that "confirm-of" names. */
static int console_confirm_differs(const struct http_request *req)
{
    char of[64] = "", a[260] = "", b[260] = "";
    int differs;
    if (!console_auth_form(req, "confirm-of", of, sizeof(of)) ||
        !console_auth_form(req, "confirm", b, sizeof(b)))
        return 0;
    console_auth_form(req, of, a, sizeof(a));
    differs = !console_auth_same(a, b);
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    return differs;
}

/*
 * What a Studio session may do through /console/do: the profiler app's one action, stopping a
 * training job its profile owns (attrib_owns). Its execution role may allow much more (other
 * jobs, IAM, Logs), but a presigned domain URL hands a browser the app, not the role: every
 * other service, operation or job is refused, before the role is asked. 1 when allowed.
 */
static int console_do_studio_ok(const struct console_ctx *c, const char *svc, const char *op,
                                json_t *in)
{
    const char *name = json_string_value(json_object_get(in, "TrainingJobName"));
    const char *arn;
    struct ty_err err;
    json_t *job;
    int ok;

    if (strcmp(svc, "sagemaker") != 0 || strcmp(op, "StopTrainingJob") != 0 || !name ||
        json_object_size(in) != 1)
        return 0;
    ty_err_clear(&err);
    job = store_job_get(c->s, name, &err);
    arn = json_string_value(json_object_get(job, "TrainingJobArn"));
    ok = arn &&
         attrib_owns(c->s, arn, json_string_value(json_object_get(c->sess->doc, "UserProfileArn")));
    json_decref(job);
    return ok;
}

static void console_do(const struct console_ctx *c, struct http_response *resp)
{
    struct console_banner bn;
    char svc[16] = "", op[64] = "", back[1100] = "", path[1100], *q;
    json_t *in = NULL, *out = NULL;

    memset(&bn, 0, sizeof(bn));
    ty_err_clear(&bn.err);
    console_auth_form(c->req, "svc", svc, sizeof(svc));
    console_auth_form(c->req, "op", op, sizeof(op));
    console_auth_form(c->req, "back", back, sizeof(back));
    if (!console_back_ok(back))
        snprintf(back, sizeof(back), "%s",
                 c->sess->kind == CONSOLE_IAM ? "/console/home" : "/console/profiler");
    bn.op = op;
    if (console_confirm_differs(c->req)) {
        ty_err_set(&bn.err, TY_EINVAL, "confirm",
                   "The new password and its confirmation do not match.");
        bn.code_name = strcmp(svc, "iam") == 0 ? "ValidationError" : NULL;
        goto show;
    }
    in = console_call_input(c->req->body.data ? c->req->body.data : "", c->req->body.len, &bn.err);
    if (!in)
        goto show;
    if (c->sess->kind == CONSOLE_STUDIO && !console_do_studio_ok(c, svc, op, in)) {
        ty_log(TY_LOG_WARN, "console.action.refused", "principal=%s op=%.16s:%.64s kind=studio",
               c->sess->principal, svc, op);
        console_html_message(c->req, resp, 403, "Forbidden",
                             "A Studio session may stop its own training jobs only; nothing was "
                             "done.",
                             c->sess);
        json_decref(in);
        return;
    }
    if (strcmp(svc, "iam") == 0) {
        struct ty_buf xml;
        ty_buf_init(&xml, 1u << 20);
        json_object_set_new(in, "Action", json_string(op));
        if (console_call_iam(c, in, &xml, &bn.err) == 0) {
            out = json_pack("{s:s}", "Xml", xml.data ? xml.data : "");
        } else {
            bn.code_name = op_iamapi_error_code(bn.err.code);
        }
        ty_buf_cleanup(&xml);
    } else if (strcmp(svc, "sagemaker") == 0 || strcmp(svc, "logs") == 0) {
        console_call(c, svc, op, in, &out, &bn.err);
    } else {
        ty_err_set(&bn.err, TY_EUNKNOWNOP, NULL, "Unknown service %.16s", svc);
    }
    if (bn.err.code == TY_EOK)
        snprintf(bn.ok, sizeof(bn.ok), "%s succeeded.", op);
    ty_log(TY_LOG_INFO, "console.action", "principal=%s op=%s:%s code=%s", c->sess->principal, svc,
           op, bn.err.code ? ty_err_aws_name(bn.err.code) : "ok");
show:
    bn.result = out;
    snprintf(path, sizeof(path), "%s", back);
    q = strchr(path, '?');
    if (q)
        *q++ = '\0';
    console_render(c, path, q ? q : "", &bn, resp);
    json_decref(in);
    json_decref(out);
}

/* ---- dispatch ---- */

/* 1 when name is a job name's shape ([A-Za-z0-9-], 1..63). */
static int console_job_name_ok(const char *name, size_t n)
{
    if (n < 1 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(isalnum((unsigned char)name[i]) || name[i] == '-'))
            return 0;
    return 1;
}

/* A job path's name and sub-page: "<name>" or "<name>/<sub>". 0 or -1. */
static int console_job_path(const char *rest, char *name, char *sub)
{
    const char *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    if (!console_job_name_ok(rest, n))
        return -1;
    memcpy(name, rest, n);
    name[n] = '\0';
    snprintf(sub, 32, "%s", slash ? slash + 1 : "");
    if (sub[0] && strcmp(sub, "logs.json") != 0 && strcmp(sub, "system.json") != 0)
        return -1;
    return 0;
}

static void console_render(const struct console_ctx *c, const char *path, const char *query,
                           const struct console_banner *bn, struct http_response *resp)
{
    struct http_request *req = c->req;
    char name[64], sub[32];

    if (c->sess->kind == CONSOLE_STUDIO) {
        if (console_app_running(req, resp, c->s, c->sess) != 0)
            return;
        if (strcmp(path, "/console/profiler") == 0 || strcmp(path, "/console/profiler/") == 0) {
            console_profiler(req, resp, c->s, c->sess);
            return;
        }
        if (strncmp(path, "/console/profiler/jobs/", 23) == 0 &&
            console_job_path(path + 23, name, sub) == 0) {
            json_t *job;
            struct ty_err err;
            const char *arn;
            ty_err_clear(&err);
            job = store_job_get(c->s, name, &err);
            arn = json_string_value(json_object_get(job, "TrainingJobArn"));
            if (!job || !arn ||
                !attrib_owns(c->s, arn,
                             json_string_value(json_object_get(c->sess->doc, "UserProfileArn")))) {
                json_decref(job);
                console_html_message(req, resp, 404, "Not found",
                                     "There is no such training job among this user's jobs.",
                                     c->sess);
                return;
            }
            json_decref(job);
            {
                struct console_ctx own = *c;
                own.owned_job = name;
                console_job_serve(&own, "/console/profiler/jobs/", name, sub, query, bn, resp);
            }
            return;
        }
        if (strcmp(path, "/console/download") == 0 || strcmp(path, "/console/presign") == 0) {
            /* a domain user reaches his own jobs' artifacts only, whatever his role may read */
            char uri[2100];
            if (console_query_param(query, "uri", uri, sizeof(uri)) == 0 &&
                !console_job_studio_uri_ok(c, uri)) {
                console_html_message(req, resp, 404, "Not found",
                                     "There is no such object among this user's jobs' artifacts.",
                                     c->sess);
                return;
            }
            if (strcmp(path, "/console/download") == 0)
                console_job_download(c, query, resp);
            else
                console_presign_serve(c, query, resp);
            return;
        }
        if (strncmp(path, "/console/profiler", 17) == 0) {
            console_html_message(req, resp, 404, "Not found", "No such page.", c->sess);
            return;
        }
        console_html_message(req, resp, 403, "Forbidden",
                             "Domain users see their profiler app only (/console/profiler).",
                             c->sess);
        return;
    }
    if (strcmp(path, "/console/download") == 0) {
        console_job_download(c, query, resp);
        return;
    }
    if (strcmp(path, "/console/presign") == 0) {
        console_presign_serve(c, query, resp);
        return;
    }
    if (strncmp(path, "/console/jobs/", 14) == 0 && console_job_path(path + 14, name, sub) == 0) {
        console_job_serve(c, "/console/jobs/", name, sub, query, bn, resp);
        return;
    }
    if (console_pages_serve(c, path, query, bn, resp))
        return;
    console_html_message(req, resp, 404, "Not found", "No such page.", c->sess);
}

void console_handle(struct http_request *req, struct http_response *resp, struct store *s,
                    const struct front_ctx *rc)
{
    const char *path = req->path;
    int get = strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0;
    int post = strcmp(req->method, "POST") == 0;
    struct console_sess sess;
    struct console_ctx c;
    struct ty_err err;

    ty_err_clear(&err);
    if (strncmp(path, "/console/assets/", 16) == 0 && get) {
        console_assets_serve(req, resp, path + 16);
        return;
    }
    if (!get && !post) {
        console_html_message(req, resp, 405, "Method not allowed",
                             "The console serves GET and POST only.", NULL);
        http_response_header(resp, "Allow", "GET, HEAD, POST");
        return;
    }
    if (!s) {
        console_html_message(req, resp, 503, "Service unavailable",
                             "The state store is unreachable.", NULL);
        return;
    }
    if (strcmp(path, "/console/auth") == 0) {
        if (!get) {
            console_html_message(req, resp, 405, "Method not allowed",
                                 "Sign-in links are opened with GET.", NULL);
            http_response_header(resp, "Allow", "GET, HEAD");
            return;
        }
        console_serve_auth(req, resp, s);
        return;
    }
    if (strcmp(path, "/console/login") == 0) {
        if (post)
            console_serve_login(req, resp, s, rc);
        else
            password_form(req, resp, rc, 200, NULL);
        return;
    }
    if (strcmp(path, "/console/logout") == 0 && post) {
        console_logout(req, resp, s);
        return;
    }
    if (console_auth_session(s, req, &sess, &err) != 0) {
        if (err.code == TY_EREDIS)
            console_html_message(req, resp, 503, "Service unavailable", err.msg, NULL);
        else if (strcmp(path, "/console") == 0 || strcmp(path, "/console/") == 0 ||
                 strncmp(path, "/console/domain/", 16) == 0)
            console_html_redirect(req, resp, "/console/login");
        else
            console_forbidden(req, resp);
        return;
    }
    memset(&c, 0, sizeof(c));
    c.rc = rc;
    c.s = s;
    c.req = req;
    c.sess = &sess;
    if (strcmp(path, "/console") == 0 || strcmp(path, "/console/") == 0 ||
        strncmp(path, "/console/domain/", 16) == 0) {
        console_html_redirect(req, resp,
                              sess.kind == CONSOLE_IAM ? "/console/home" : "/console/profiler");
    } else if (post) {
        if (!console_auth_csrf_ok(&sess, req))
            console_html_message(req, resp, 403, "Forbidden",
                                 "This form is stale or came from another site; nothing was done. "
                                 "Reload the page and try again.",
                                 &sess);
        else if (strcmp(path, "/console/do") == 0)
            console_do(&c, resp);
        else
            console_html_message(req, resp, 404, "Not found", "No such action.", &sess);
    } else {
        console_render(&c, path, req->query ? req->query : "", NULL, resp);
    }
    console_auth_release(&sess);
}
