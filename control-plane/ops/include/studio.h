/*
 * studio.h - pure helpers of the Studio operations (ops/studio.c), shared with the console
 * (console.c) and the unit tests: ids, ARNs, resource ids, landing URIs, the request's host,
 * list paging, and the timing of the status machines.
 *
 * Owns: the shape of ids (AWS's: d-<12 lowercase alphanumerics>) and of the store ids
 * (<domain>, <domain>/<profile>, <domain>/<profile>/<apptype>/<app>, names lower-cased because
 * SageMaker treats them case-insensitively), and the console scope of a user profile.
 * No I/O except the random source (OpenSSL RAND_bytes). Thread-safe.
 */
#ifndef TY_CP_OPS_STUDIO_H
#define TY_CP_OPS_STUDIO_H

#include <jansson.h>
#include <stddef.h>

#include "store_res.h"
#include "ty_err.h"

#define OP_STUDIO_KIND_DOMAIN  "domain"
#define OP_STUDIO_KIND_PROFILE "user-profile"
#define OP_STUDIO_KIND_APP     "app"

/* Status-machine delays (seconds): Pending/Updating -> InService, Deleting -> Deleted/gone. */
#define OP_STUDIO_PENDING_S  2.0
#define OP_STUDIO_DELETING_S 2.0
/* How long a deleted app stays listed (Status Deleted) before it disappears. */
#define OP_STUDIO_APP_KEEP_S 3600.0
/* The console's cookie. */
#define OP_STUDIO_COOKIE "ty_console"

/* The timing the operations and the console use (the defines above). borrowed: static. */
const struct store_res_timing *op_studio_timing(void);

/*
 * Writes n random characters of [a-z0-9] and a NUL (out holds n + 1). 0, or -TY_EINTERNAL when
 * the random source fails.
 */
int op_studio_random_alnum(char *out, size_t n);
/* Writes n random lowercase hex characters and a NUL. 0 or -TY_EINTERNAL. */
int op_studio_random_hex(char *out, size_t n);

/* 1 when id looks like a domain id AWS hands out: "d-" followed by 1..61 of [a-z0-9-]. */
int op_studio_domain_id_ok(const char *id);

/*
 * Store ids. OUT: buf (NUL-terminated). 0, or -TY_EINVAL when a part is empty, holds a
 * character outside [A-Za-z0-9-] or the result does not fit.
 *   profile: <domain>/<profile lower-cased>
 *   app:     <domain>/<profile lower-cased>/<apptype lower-cased>/<app lower-cased>
 */
int op_studio_profile_id(const char *domain, const char *profile, char *buf, size_t n);
int op_studio_app_id(const char *domain, const char *profile, const char *app_type,
                     const char *app_name, char *buf, size_t n);

/*
 * ARNs, lower-cased after the resource type as SageMaker writes them:
 *   arn:aws:sagemaker:<region>:<account>:domain/<domain>
 *   arn:aws:sagemaker:<region>:<account>:user-profile/<domain>/<profile>
 *   arn:aws:sagemaker:<region>:<account>:app/<domain>/<profile>/<apptype>/<app>
 * OUT: buf, truncated to n.
 */
void op_studio_arn(const char *region, const char *account, const char *type, const char *path,
                   char *buf, size_t n);

/*
 * The console path a presigned URL lands on, from CreatePresignedDomainUrl's LandingUri:
 * NULL or "" -> "/console/profiler"; "app:DetailedProfiler:<rel>" -> "/console/profiler/<rel>";
 * "studio::<rel>" -> "/console/<rel>"; "/console/..." as is. <rel> may hold only
 * [A-Za-z0-9/_.~=&?%-] and no "..". OUT: buf. 0 or -TY_EINVAL (err names LandingUri).
 */
int op_studio_landing(const char *landing_uri, char *buf, size_t n, struct ty_err *err);

/*
 * The request's Host header if it is a plausible host[:port] (letters, digits, '.', '-', ':',
 * '[', ']', at most 255 characters), else "localhost". borrowed: host or a static string.
 */
const char *op_studio_host(const char *host);

/*
 * One page of records (borrowed array of objects with a numeric member sort_key and a string
 * member "_id"), sorted by (sort_key, _id), ascending or not. max_results in 1..100.
 * next_token: from a previous page or NULL. Returns a new array of the page's records
 * (references to the same objects); OUT: *next (new, caller frees) when more remain, else
 * NULL. An unreadable token gives NULL and -TY_EINVAL.
 */
json_t *op_studio_page(json_t *records, const char *sort_key, int ascending, int max_results,
                       const char *next_token, char **next, struct ty_err *err);

#endif
