/*
 * console_html.h - the console's page frame: the layout (header, navigation, sign-out, main),
 * the security headers every console answer carries, messages, banners for API errors, and
 * the CSRF field of every form.
 *
 * Owns: the HTML skeleton and the Content-Security-Policy (scripts, styles and data only from
 * this server: pages load nothing external). Every dynamic string goes through
 * ty_buf_put_html. Does not own sessions (console_auth.c) nor any page's content.
 * Thread-safety: reentrant.
 */
#ifndef TY_CP_CONSOLE_HTML_H
#define TY_CP_CONSOLE_HTML_H

#include "console_auth.h"
#include "http.h"
#include "ty_buf.h"
#include "ty_err.h"

#define CONSOLE_PAGE_MAX (4u * 1024u * 1024u)

/* Starts a page: doctype, head (title, the stylesheet, console.js), the header with the
   navigation for sess (NULL: none, as on the sign-in page) and <main>. b: initialised here. */
void console_html_start(struct ty_buf *b, const char *title, const struct console_sess *sess);

/* Ends the page and answers it with status (HEAD: no body) and the console's headers. */
void console_html_send(struct http_request *req, struct http_response *resp, int status,
                       struct ty_buf *b);

/* A whole page of one paragraph. */
void console_html_message(struct http_request *req, struct http_response *resp, int status,
                          const char *title, const char *text, const struct console_sess *sess);

/* A 303 to location (a console path; the caller checked it). */
void console_html_redirect(struct http_request *req, struct http_response *resp,
                           const char *location);

/* The console's headers (CSP, no-store, nosniff, frame denial, request id) on resp. */
void console_html_headers(struct http_request *req, struct http_response *resp);

/* <div role="alert">: err's AWS error name (code) and message; nothing when err is NULL or
   clear. code_name NULL: ty_err_aws_name. */
void console_html_error(struct ty_buf *b, const struct ty_err *err, const char *code_name);
/* <div role="status"> with text (nothing when NULL or ""). */
void console_html_ok(struct ty_buf *b, const char *text);

/* The hidden CSRF field of a form of sess. */
void console_html_csrf(struct ty_buf *b, const struct console_sess *sess);

/* A one-button form that performs svc/op with the hidden parameters given as NULL-terminated
   name, value pairs (names without the "p." prefix), back to back. confirm: a question the
   browser asks first (NULL: none). cls: the button's class ("danger" or NULL). */
void console_html_button(struct ty_buf *b, const struct console_sess *sess, const char *svc,
                         const char *op, const char *back, const char *label, const char *confirm,
                         const char *cls, ...) __attribute__((sentinel));

/* Epoch seconds as "YYYY-MM-DD HH:MM:SS UTC" ("-" when v is not a number). */
void console_html_time(struct ty_buf *b, json_t *v);

/* Percent-encodes s for a URL path segment or query value. */
void console_html_url(struct ty_buf *b, const char *s);

#endif
