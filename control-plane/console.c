/*
 * console.c - /console/...: presigned-URL sign-in, sessions, and the profiler app's plain pages.
 *
 * Owns: the session cookie (OP_STUDIO_COOKIE: HttpOnly, SameSite=Lax, Path=/console,
 * Max-Age = SessionExpirationDurationInSeconds), the pages and their access control (see
 * console.h). Does not own tokens' and sessions' storage (store_res.c) nor the Studio
 * resources (ops/studio.c). Denials are 403 pages; a user whose DetailedProfiler app is not
 * InService gets a 503 page; unknown pages 404; methods other than GET/HEAD 405.
 */
#include "console.h"

#include <ctype.h>
#include <jansson.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ops/studio.h"
#include "store_res.h"
#include "ty_log.h"

#define CONSOLE_PAGE_MAX  (2u * 1024u * 1024u)
#define CONSOLE_MAX_JOBS  1000
#define CONSOLE_SID_LEN   64
#define CONSOLE_TAG_OWNER "sagemaker:user-profile-arn"

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

static int console__hex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
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
            size_t o = 0;
            for (const char *v = p + nl + 1; v < end; v++) {
                int c = (unsigned char)*v;
                if (c == '%') {
                    int h, l;
                    if (end - v < 3)
                        return -1;
                    h = console__hex(v[1]);
                    l = console__hex(v[2]);
                    if (h < 0 || l < 0 || (h == 0 && l == 0))
                        return -1;
                    c = h * 16 + l;
                    v += 2;
                } else if (c == '+') {
                    c = ' ';
                }
                if (o + 1 >= n)
                    return -1;
                out[o++] = (char)c;
            }
            if (o == 0)
                return -1;
            out[o] = '\0';
            return 0;
        }
        p = *end ? end + 1 : end;
    }
    return -1;
}

/* ---- responses ---- */

static void console__headers(struct http_request *req, struct http_response *resp)
{
    http_response_header(resp, "Cache-Control", "no-store");
    http_response_header(resp, "X-Content-Type-Options", "nosniff");
    http_response_header(resp, "X-Frame-Options", "DENY");
    http_response_header(resp, "Content-Security-Policy",
                         "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
}

static void console__page_start(struct ty_buf *b, const char *title)
{
    ty_buf_puts(b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>");
    ty_buf_put_html(b, title);
    ty_buf_puts(b, "</title><style>body{font-family:sans-serif;margin:2em}"
                   "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
                   "text-align:left}</style></head><body>\n<h1>");
    ty_buf_put_html(b, title);
    ty_buf_puts(b, "</h1>\n");
}

static void console__send(struct http_request *req, struct http_response *resp, int status,
                          struct ty_buf *b)
{
    ty_buf_puts(b, "</body></html>\n");
    resp->status = status;
    resp->content_type = "text/html; charset=utf-8";
    if (strcmp(req->method, "HEAD") == 0) {
        ty_buf_cleanup(b);
        resp->body = NULL;
        resp->len = 0;
    } else {
        resp->len = b->len;
        resp->body = ty_buf_steal(b);
    }
    console__headers(req, resp);
}

/* A page with a title and one paragraph. */
static void console__message(struct http_request *req, struct http_response *resp, int status,
                             const char *title, const char *text)
{
    struct ty_buf b;
    ty_buf_init(&b, CONSOLE_PAGE_MAX);
    console__page_start(&b, title);
    ty_buf_puts(&b, "<p>");
    ty_buf_put_html(&b, text);
    ty_buf_puts(&b, "</p>\n");
    console__send(req, resp, status, &b);
}

static void console__redirect(struct http_request *req, struct http_response *resp,
                              const char *location)
{
    struct ty_buf b;
    ty_buf_init(&b, CONSOLE_PAGE_MAX);
    console__page_start(&b, "Redirecting");
    ty_buf_puts(&b, "<p><a href=\"");
    ty_buf_put_html(&b, location);
    ty_buf_puts(&b, "\">Continue</a></p>\n");
    console__send(req, resp, 302, &b);
    http_response_header(resp, "Location", location);
}

static void console__forbidden(struct http_request *req, struct http_response *resp)
{
    console__message(req, resp, 403, "Forbidden",
                     "You are not signed in to this console, or your session has ended. Open "
                     "the console through a new presigned domain URL "
                     "(aws sagemaker create-presigned-domain-url).");
}

/* ---- sign-in ---- */

static void console__auth(struct http_request *req, struct http_response *resp, struct store *s)
{
    char token[128], sid[CONSOLE_SID_LEN + 1], cookie[256], scope[256];
    const char *landing, *pid, *st;
    struct ty_err err;
    json_t *tok, *prof = NULL, *sess = NULL;
    int secs;

    ty_err_clear(&err);
    if (console_query_param(req->query, "token", token, sizeof(token)) != 0) {
        console__message(req, resp, 403, "Forbidden", "This sign-in link is not valid.");
        return;
    }
    tok = store_res_token_take(s, token, &err);
    if (!tok) {
        if (err.code == TY_ENOTFOUND)
            console__message(req, resp, 403, "Forbidden",
                             "This sign-in link has expired or has already been used. Ask for a "
                             "new presigned domain URL.");
        else
            console__message(req, resp, 503, "Service unavailable", err.msg);
        return;
    }
    landing = json_string_value(json_object_get(tok, "Landing"));
    pid = json_string_value(json_object_get(tok, "ProfileId"));
    secs = (int)json_integer_value(json_object_get(tok, "SessionSeconds"));
    if (!landing || !pid || secs < 1 || strncmp(landing, "/console", 8) != 0 ||
        strpbrk(landing, "\r\n")) {
        console__forbidden(req, resp);
        goto out;
    }
    /* the user profile must still exist */
    prof =
        store_res_get(s, OP_STUDIO_KIND_PROFILE, pid, (double)time(NULL), op_studio_timing(), &err);
    st = json_string_value(json_object_get(prof, "Status"));
    if (!prof || !st || strcmp(st, "Deleting") == 0) {
        console__forbidden(req, resp);
        goto out;
    }
    if (op_studio_random_hex(sid, CONSOLE_SID_LEN) != 0) {
        console__message(req, resp, 500, "Internal error", "random source failed");
        goto out;
    }
    sess = json_deep_copy(tok);
    json_object_del(sess, "Landing");
    json_object_set_new(sess, "Expires", json_integer((json_int_t)time(NULL) + secs));
    snprintf(scope, sizeof(scope), "%s", pid);
    if (store_res_session_put(s, sid, scope, sess, secs, &err) != 0) {
        console__message(req, resp, 503, "Service unavailable", err.msg);
        goto out;
    }
    ty_log(TY_LOG_INFO, "console.signin", "profile=%s ttl=%d", pid, secs);
    console__redirect(req, resp, landing);
    snprintf(cookie, sizeof(cookie), "%s=%s; Path=/console; Max-Age=%d; HttpOnly; SameSite=Lax",
             OP_STUDIO_COOKIE, sid, secs);
    http_response_header(resp, "Set-Cookie", cookie);
out:
    json_decref(tok);
    json_decref(prof);
    json_decref(sess);
}

/* ---- sessions ---- */

struct console_user {
    json_t *session; /* DomainId, ProfileId, UserProfileName, UserProfileArn, Region */
    const char *domain, *profile_id, *name, *arn;
};

/* 0 and u filled, or -1 with the response written (403 / 503). */
static int console__session(struct http_request *req, struct http_response *resp, struct store *s,
                            struct console_user *u)
{
    char sid[128];
    struct ty_err err;
    json_t *apps, *a;
    size_t i;
    int running = 0;

    ty_err_clear(&err);
    memset(u, 0, sizeof(*u));
    if (console_cookie(http_header(req, "Cookie"), OP_STUDIO_COOKIE, sid, sizeof(sid)) != 0) {
        console__forbidden(req, resp);
        return -1;
    }
    u->session = store_res_session_get(s, sid, &err);
    if (!u->session) {
        if (err.code == TY_ENOTFOUND)
            console__forbidden(req, resp);
        else
            console__message(req, resp, 503, "Service unavailable", err.msg);
        return -1;
    }
    u->domain = json_string_value(json_object_get(u->session, "DomainId"));
    u->profile_id = json_string_value(json_object_get(u->session, "ProfileId"));
    u->name = json_string_value(json_object_get(u->session, "UserProfileName"));
    u->arn = json_string_value(json_object_get(u->session, "UserProfileArn"));
    if (!u->domain || !u->profile_id || !u->name || !u->arn) {
        console__forbidden(req, resp);
        goto fail;
    }
    /* the profiler app is served only while the user's DetailedProfiler app is InService */
    apps = store_res_list(s, OP_STUDIO_KIND_APP, OP_STUDIO_KIND_PROFILE, u->profile_id,
                          (double)time(NULL), op_studio_timing(), &err);
    if (!apps) {
        console__message(req, resp, 503, "Service unavailable", err.msg);
        goto fail;
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
                 u->name);
        console__message(req, resp, 503, "Profiler app not running", text);
        goto fail;
    }
    return 0;
fail:
    json_decref(u->session);
    u->session = NULL;
    return -1;
}

/* 1 when the job's tags name the user's profile as its owner. */
static int console__owns(struct store *s, const char *job_arn, const char *profile_arn)
{
    struct ty_err err;
    json_t *tags, *t;
    size_t i;
    int mine = 0;
    ty_err_clear(&err);
    tags = store_tags_list(s, job_arn, &err);
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        if (k && v && strcmp(k, CONSOLE_TAG_OWNER) == 0 && strcasecmp(v, profile_arn) == 0)
            mine = 1;
    }
    json_decref(tags);
    return mine;
}

static void console__time(struct ty_buf *b, json_t *v)
{
    char buf[64];
    time_t t;
    struct tm tm;
    if (!json_is_number(v)) {
        ty_buf_puts(b, "-");
        return;
    }
    t = (time_t)json_number_value(v);
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
    ty_buf_put_html(b, buf);
}

/* The S3 prefix of a job's profiler output, or "" when profiling is not enabled. OUT: buf. */
static void console__profiler_uri(json_t *job, char *buf, size_t n)
{
    const char *name = json_string_value(json_object_get(job, "TrainingJobName"));
    const char *st = json_string_value(json_object_get(job, "ProfilingStatus"));
    const char *path =
        json_string_value(json_object_get(json_object_get(job, "ProfilerConfig"), "S3OutputPath"));
    size_t len;
    buf[0] = '\0';
    if (!name || !st || strcmp(st, "Enabled") != 0)
        return;
    if (!path)
        path = json_string_value(
            json_object_get(json_object_get(job, "OutputDataConfig"), "S3OutputPath"));
    if (!path)
        return;
    len = strlen(path);
    while (len > 0 && path[len - 1] == '/')
        len--;
    snprintf(buf, n, "%.*s/%s/profiler-output/", (int)(len > 900 ? 900 : len), path, name);
}

static void console__jobs(struct http_request *req, struct http_response *resp, struct store *s,
                          const struct console_user *u)
{
    struct store_job_query q;
    struct ty_buf b;
    struct ty_err err;
    char *next = NULL, title[160];
    int shown = 0, scanned = 0;

    ty_err_clear(&err);
    ty_buf_init(&b, CONSOLE_PAGE_MAX);
    snprintf(title, sizeof(title), "Profiler - %s", u->name);
    console__page_start(&b, title);
    ty_buf_puts(&b, "<p>Domain <code>");
    ty_buf_put_html(&b, u->domain);
    ty_buf_puts(&b, "</code>, user profile <code>");
    ty_buf_put_html(&b, u->arn);
    ty_buf_puts(&b, "</code>. Training jobs tagged <code>" CONSOLE_TAG_OWNER
                    "</code> with this user profile's ARN:</p>\n"
                    "<table><tr><th>Training job</th><th>Status</th><th>Created</th>"
                    "<th>Profiling</th><th>Profiler output</th></tr>\n");
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
            const char *arn = json_string_value(json_object_get(j, "TrainingJobArn"));
            const char *prof = json_string_value(json_object_get(j, "ProfilingStatus"));
            char uri[1024];
            scanned++;
            if (!name || !arn || !console__owns(s, arn, u->arn))
                continue;
            shown++;
            console__profiler_uri(j, uri, sizeof(uri));
            ty_buf_puts(&b, "<tr><td><a href=\"/console/profiler/jobs/");
            ty_buf_put_html(&b, name);
            ty_buf_puts(&b, "\">");
            ty_buf_put_html(&b, name);
            ty_buf_puts(&b, "</a></td><td>");
            ty_buf_put_html(&b, json_string_value(json_object_get(j, "TrainingJobStatus")));
            ty_buf_puts(&b, "</td><td>");
            console__time(&b, json_object_get(j, "CreationTime"));
            ty_buf_puts(&b, "</td><td>");
            ty_buf_put_html(&b, prof ? prof : "Disabled");
            ty_buf_puts(&b, "</td><td>");
            ty_buf_put_html(&b, uri[0] ? uri : "-");
            ty_buf_puts(&b, "</td></tr>\n");
        }
        json_decref(jobs);
    } while (next && scanned < CONSOLE_MAX_JOBS);
    free(next);
    ty_buf_puts(&b, "</table>\n");
    if (shown == 0)
        ty_buf_puts(&b, "<p>No training jobs yet.</p>\n");
    console__send(req, resp, 200, &b);
}

static void console__job(struct http_request *req, struct http_response *resp, struct store *s,
                         const struct console_user *u, const char *name)
{
    struct ty_buf b;
    struct ty_err err;
    char uri[1024], title[160];
    json_t *job;
    const char *arn;

    ty_err_clear(&err);
    job = strlen(name) <= 63 ? store_job_get(s, name, &err) : NULL;
    arn = json_string_value(json_object_get(job, "TrainingJobArn"));
    if (!job || !arn || !console__owns(s, arn, u->arn)) {
        json_decref(job);
        console__message(req, resp, 404, "Not found",
                         "There is no such training job among this user's jobs.");
        return;
    }
    ty_buf_init(&b, CONSOLE_PAGE_MAX);
    snprintf(title, sizeof(title), "Training job %.63s", name);
    console__page_start(&b, title);
    console__profiler_uri(job, uri, sizeof(uri));
    ty_buf_puts(&b, "<table><tr><th>ARN</th><td>");
    ty_buf_put_html(&b, arn);
    ty_buf_puts(&b, "</td></tr><tr><th>Status</th><td>");
    ty_buf_put_html(&b, json_string_value(json_object_get(job, "TrainingJobStatus")));
    ty_buf_puts(&b, " / ");
    ty_buf_put_html(&b, json_string_value(json_object_get(job, "SecondaryStatus")));
    ty_buf_puts(&b, "</td></tr><tr><th>Created</th><td>");
    console__time(&b, json_object_get(job, "CreationTime"));
    ty_buf_puts(&b, "</td></tr><tr><th>Profiling</th><td>");
    ty_buf_put_html(&b, json_string_value(json_object_get(job, "ProfilingStatus"))
                            ? json_string_value(json_object_get(job, "ProfilingStatus"))
                            : "Disabled");
    ty_buf_puts(&b, "</td></tr><tr><th>Profiler output</th><td>");
    ty_buf_put_html(&b, uri[0] ? uri : "-");
    ty_buf_puts(&b, "</td></tr></table>\n<p><a href=\"/console/profiler\">All jobs</a></p>\n");
    json_decref(job);
    console__send(req, resp, 200, &b);
}

void console_handle(struct http_request *req, struct http_response *resp, struct store *s,
                    const char *account_id)
{
    const char *path = req->path;
    struct console_user u;
    (void)account_id;

    if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
        console__message(req, resp, 405, "Method not allowed", "The console serves GET only.");
        http_response_header(resp, "Allow", "GET, HEAD");
        return;
    }
    if (!s) {
        console__message(req, resp, 503, "Service unavailable", "The state store is unreachable.");
        return;
    }
    if (strcmp(path, "/console/auth") == 0) {
        console__auth(req, resp, s);
        return;
    }
    if (strcmp(path, "/console") == 0 || strcmp(path, "/console/") == 0 ||
        strncmp(path, "/console/domain/", 16) == 0) {
        char sid[128];
        if (console_cookie(http_header(req, "Cookie"), OP_STUDIO_COOKIE, sid, sizeof(sid)) == 0)
            console__redirect(req, resp, "/console/profiler");
        else
            console__forbidden(req, resp);
        return;
    }
    if (strcmp(path, "/console/profiler") == 0 || strcmp(path, "/console/profiler/") == 0) {
        if (console__session(req, resp, s, &u) != 0)
            return;
        console__jobs(req, resp, s, &u);
        json_decref(u.session);
        return;
    }
    if (strncmp(path, "/console/profiler/jobs/", 23) == 0 && path[23]) {
        const char *name = path + 23;
        for (const char *p = name; *p; p++) {
            if (!(isalnum((unsigned char)*p) || *p == '-')) {
                console__message(req, resp, 404, "Not found", "No such page.");
                return;
            }
        }
        if (console__session(req, resp, s, &u) != 0)
            return;
        console__job(req, resp, s, &u, name);
        json_decref(u.session);
        return;
    }
    console__message(req, resp, 404, "Not found", "No such page.");
}
