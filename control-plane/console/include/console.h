/*
 * console.h - the browser side of trainyard: /console/... (no SigV4; a session cookie instead).
 *
 * Owns: the console's dispatch (which page or action a path is), the sign-in pages
 * (/console/login with an IAM user's password, GET /console/auth?token=... redeeming a
 * presigned domain URL's one-time token, POST /console/logout), the generic action endpoint
 * POST /console/do (one API operation as the signed-in principal, console_call.h, CSRF-checked)
 * and the Studio user's profiler app (/console/profiler...: his own jobs, served while his
 * DetailedProfiler app is InService; deleting the app or the profile revokes his sessions).
 * The admin pages are console_pages.c, the job page console_job.c, the static assets
 * console_assets.c.
 * A user's training jobs are the jobs tagged sagemaker:user-profile-arn = the profile's ARN
 * (the tag SageMaker Studio puts on the jobs it launches; CreateTrainingJob adds it for IAM
 * users mapped to a profile, ops/training.c).
 * Thread-safety: console_handle runs on any worker thread with that thread's store.
 */
#ifndef TY_CP_CONSOLE_H
#define TY_CP_CONSOLE_H

#include <stddef.h>

#include "http.h"
#include "store.h"
#include "ty_buf.h"

struct front_ctx;

/* 1 when path is "/console" or lies under "/console/" (what console_handle serves). */
int console_path(const char *path);

/*
 * Serves one /console request. s may be NULL (Redis unreachable: a 503 page). rc: the
 * server's routing context (model, account, region, object store). Always fills resp.
 */
void console_handle(struct http_request *req, struct http_response *resp, struct store *s,
                    const struct front_ctx *rc);

/*
 * The value of cookie name in a Cookie header ("a=1; name=v"). OUT: out (NUL-terminated).
 * 0, or -1 when absent, empty or longer than n - 1.
 */
int console_cookie(const char *header, const char *name, char *out, size_t n);

/*
 * The value of parameter name in a raw query string ("a=1&token=x"), percent-decoded.
 * OUT: out. 0, or -1 when absent, empty, badly encoded or longer than n - 1.
 */
int console_query_param(const char *query, const char *name, char *out, size_t n);

/* 1 when back is a console page to return to after an action ("/console/..." without CR, LF,
   backslash or "//"). */
int console_back_ok(const char *back);

#endif
