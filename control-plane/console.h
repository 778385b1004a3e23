/*
 * console.h - the browser side of Studio: /console/... (no SigV4; a session cookie instead).
 *
 * Owns: redeeming a presigned domain URL's one-time token for a session cookie
 * (GET /console/auth?token=...), the profiler app's pages (GET /console/profiler, one page per
 * training job under /console/profiler/jobs/<name>), and their access control: a session is
 * scoped to one domain and user profile, pages are served only while that user's
 * DetailedProfiler app is InService, and deleting the app (or the profile) revokes its sessions.
 * Every page is plain HTML with every dynamic string HTML-escaped.
 * A user's training jobs are the jobs tagged sagemaker:user-profile-arn = the profile's ARN
 * (the tag SageMaker Studio puts on the jobs it launches).
 * Thread-safety: console_handle runs on any worker thread with that thread's store.
 */
#ifndef TY_CP_CONSOLE_H
#define TY_CP_CONSOLE_H

#include <stddef.h>

#include "http.h"
#include "store.h"
#include "ty_buf.h"

/* 1 when path is "/console" or lies under "/console/" (what console_handle serves). */
int console_path(const char *path);

/*
 * Serves one /console request. s may be NULL (Redis unreachable: a 503 page). account_id:
 * the account in ARNs. Always fills resp.
 */
void console_handle(struct http_request *req, struct http_response *resp, struct store *s,
                    const char *account_id);

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

#endif
