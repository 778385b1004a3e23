/*
 * console_html.c - the console's page frame, headers, banners and forms (console_html.h).
 */
#include "console_html.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* 1 when host is a Host header value fit for a CSP source (host[:port], no spaces, quotes,
   semicolons or commas). */
static int chtml_host_ok(const char *host)
{
    if (!host || !*host || strlen(host) > 255)
        return 0;
    for (const char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr(".-:[]", *p)))
            return 0;
    return 1;
}

/*
 * Scripts come from /console/assets/ only, not from the whole origin: the S3 API shares it,
 * so 'self' would let a tenant's object with a script type (a presigned URL on this origin)
 * run as the console through any markup injection. A path in a CSP source limits the first
 * request (a redirect keeps only the origin; nothing under /console/assets/ redirects), and
 * an http: source also matches the https: page a TLS proxy serves.
 */
void console_html_headers(struct http_request *req, struct http_response *resp)
{
    const char *host = http_header(req, "Host");
    char csp[600];

    snprintf(csp, sizeof(csp),
             "default-src 'none'; script-src %s%s%s; style-src 'self'; img-src 'self' data:; "
             "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
             chtml_host_ok(host) ? "http://" : "'self'", chtml_host_ok(host) ? host : "",
             chtml_host_ok(host) ? "/console/assets/" : "");
    http_response_header(resp, "Cache-Control", "no-store");
    http_response_header(resp, "X-Content-Type-Options", "nosniff");
    http_response_header(resp, "X-Frame-Options", "DENY");
    http_response_header(resp, "Referrer-Policy", "same-origin");
    http_response_header(resp, "Content-Security-Policy", csp);
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
}

static void chtml_nav(struct ty_buf *b, const char *href, const char *label)
{
    ty_buf_printf(b, "<li><a href=\"%s\">%s</a></li>", href, label);
}

void console_html_start(struct ty_buf *b, const char *title, const struct console_sess *sess)
{
    ty_buf_init(b, CONSOLE_PAGE_MAX);
    ty_buf_puts(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                   "<title>");
    ty_buf_put_html(b, title);
    ty_buf_puts(b, " - trainyard</title>"
                   "<link rel=\"stylesheet\" href=\"/console/assets/console.css\">"
                   "<link rel=\"stylesheet\" href=\"/console/assets/uPlot.min.css\">"
                   "<script defer src=\"/console/assets/uPlot.iife.min.js\"></script>"
                   "<script defer src=\"/console/assets/console.js\"></script>"
                   "</head><body>\n<a class=\"skip\" href=\"#main\">Skip to content</a>\n"
                   "<header><span class=\"brand\">trainyard</span>");
    if (sess) {
        ty_buf_puts(b, "<nav aria-label=\"Main\"><ul>");
        if (sess->kind == CONSOLE_IAM) {
            chtml_nav(b, "/console/home", "Home");
            chtml_nav(b, "/console/domains", "Domains");
            chtml_nav(b, "/console/jobs", "Training jobs");
            chtml_nav(b, "/console/iam/users", "IAM users");
            chtml_nav(b, "/console/iam/roles", "Roles");
            chtml_nav(b, "/console/system", "Agents, queue, quotas");
        } else {
            chtml_nav(b, "/console/profiler", "My training jobs");
        }
        ty_buf_puts(b, "</ul></nav><form class=\"signout\" method=\"post\" "
                       "action=\"/console/logout\">");
        console_html_csrf(b, sess);
        ty_buf_puts(b, "<span class=\"who\">");
        ty_buf_put_html(b, sess->user);
        ty_buf_puts(b, "</span> ");
        if (sess->kind == CONSOLE_IAM)
            ty_buf_puts(b, "<a class=\"pwlink\" href=\"/console/password\">Change password</a> ");
        ty_buf_puts(b, "<button type=\"submit\">Sign out</button></form>");
    }
    ty_buf_puts(b, "</header>\n<main id=\"main\" tabindex=\"-1\">\n<h1>");
    ty_buf_put_html(b, title);
    ty_buf_puts(b, "</h1>\n");
}

void console_html_send(struct http_request *req, struct http_response *resp, int status,
                       struct ty_buf *b)
{
    ty_buf_puts(b, "</main>\n</body></html>\n");
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
    console_html_headers(req, resp);
}

void console_html_message(struct http_request *req, struct http_response *resp, int status,
                          const char *title, const char *text, const struct console_sess *sess)
{
    struct ty_buf b;
    console_html_start(&b, title, sess);
    ty_buf_puts(&b, "<p>");
    ty_buf_put_html(&b, text);
    ty_buf_puts(&b, "</p>\n");
    console_html_send(req, resp, status, &b);
}

void console_html_redirect(struct http_request *req, struct http_response *resp,
                           const char *location)
{
    struct ty_buf b;
    console_html_start(&b, "Redirecting", NULL);
    ty_buf_puts(&b, "<p><a href=\"");
    ty_buf_put_html(&b, location);
    ty_buf_puts(&b, "\">Continue</a></p>\n");
    console_html_send(req, resp, 303, &b);
    http_response_header(resp, "Location", location);
}

void console_html_error(struct ty_buf *b, const struct ty_err *err, const char *code_name)
{
    if (!err || err->code == TY_EOK)
        return;
    ty_buf_puts(b, "<div class=\"alert error\" role=\"alert\"><strong>");
    ty_buf_put_html(b, code_name ? code_name : ty_err_aws_name(err->code));
    ty_buf_puts(b, "</strong>: ");
    ty_buf_put_html(b, err->msg[0] ? err->msg : ty_strerror(err->code));
    ty_buf_puts(b, "</div>\n");
}

void console_html_ok(struct ty_buf *b, const char *text)
{
    if (!text || !*text)
        return;
    ty_buf_puts(b, "<div class=\"alert ok\" role=\"status\">");
    ty_buf_put_html(b, text);
    ty_buf_puts(b, "</div>\n");
}

void console_html_csrf(struct ty_buf *b, const struct console_sess *sess)
{
    ty_buf_puts(b, "<input type=\"hidden\" name=\"csrf\" value=\"");
    ty_buf_put_html(b, sess && sess->csrf ? sess->csrf : "");
    ty_buf_puts(b, "\">");
}

void console_html_button(struct ty_buf *b, const struct console_sess *sess, const char *svc,
                         const char *op, const char *back, const char *label, const char *confirm,
                         const char *cls, ...)
{
    va_list ap;
    const char *k;
    ty_buf_puts(b, "<form class=\"inline\" method=\"post\" action=\"/console/do\"");
    if (confirm) {
        ty_buf_puts(b, " data-confirm=\"");
        ty_buf_put_html(b, confirm);
        ty_buf_puts(b, "\"");
    }
    ty_buf_puts(b, ">");
    console_html_csrf(b, sess);
    ty_buf_printf(b, "<input type=\"hidden\" name=\"svc\" value=\"%s\">", svc);
    ty_buf_printf(b, "<input type=\"hidden\" name=\"op\" value=\"%s\">", op);
    ty_buf_puts(b, "<input type=\"hidden\" name=\"back\" value=\"");
    ty_buf_put_html(b, back);
    ty_buf_puts(b, "\">");
    va_start(ap, cls);
    while ((k = va_arg(ap, const char *)) != NULL) {
        const char *v = va_arg(ap, const char *);
        ty_buf_puts(b, "<input type=\"hidden\" name=\"p.");
        ty_buf_put_html(b, k);
        ty_buf_puts(b, "\" value=\"");
        ty_buf_put_html(b, v ? v : "");
        ty_buf_puts(b, "\">");
    }
    va_end(ap);
    ty_buf_printf(b, "<button type=\"submit\"%s>", cls ? " class=\"danger\"" : "");
    ty_buf_put_html(b, label);
    ty_buf_puts(b, "</button></form>");
}

void console_html_time(struct ty_buf *b, json_t *v)
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

void console_html_url(struct ty_buf *b, const char *s)
{
    static const char h[] = "0123456789ABCDEF";
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-_.~", c)) {
            ty_buf_append(b, s, 1);
        } else {
            char e[3] = {'%', h[c >> 4], h[c & 15]};
            ty_buf_append(b, e, 3);
        }
    }
}
