/*
 * console_pages.h - the admin console's pages (/console/home, domains, user profiles, apps,
 * IAM users, roles, training jobs, agents and queue), each made of API operations performed
 * as the signed-in principal (console_call.h): a page whose read is refused shows AWS's
 * AccessDenied message instead of its table, a refused button shows it above the page.
 *
 * Owns: the HTML of those pages and the forms that drive /console/do. Does not own the
 * training job page (console_job.c), sessions or the actions themselves.
 * Thread-safety: reentrant.
 */
#ifndef TY_CP_CONSOLE_PAGES_H
#define TY_CP_CONSOLE_PAGES_H

#include <jansson.h>

#include "console_call.h"
#include "http.h"
#include "ty_err.h"

/* What the last action said, shown at the top of the page it returns to. */
struct console_banner {
    struct ty_err err;     /* clear: no error */
    const char *code_name; /* the error's name when not ty_err_aws_name's (IAM's) */
    char ok[512];          /* "" or the success line */
    json_t *result;        /* borrowed, may be NULL: the operation's output (keys, URLs) */
    const char *op;        /* the operation it came from */
};

/*
 * Serves the admin page at path (query: the raw query string) for c's IAM session, with bn
 * (may be NULL) at its top. 1 when path is an admin page (resp filled), 0 when not.
 */
int console_pages_serve(const struct console_ctx *c, const char *path, const char *query,
                        const struct console_banner *bn, struct http_response *resp);

/* Writes bn (error, success line, result) into b. */
void console_pages_banner(struct ty_buf *b, const struct console_banner *bn);

#endif
