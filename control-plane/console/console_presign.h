/*
 * console_presign.h - S3 presigned URLs for the console's download links: GET
 * /console/presign?uri=s3://bucket/key[&show=1] answers a 303 to a SigV4 presigned GET of the
 * object on this server's S3 endpoint (path style, the Host the browser used), valid
 * CONSOLE_PRESIGN_S seconds; with show=1 a page that shows the URL (to copy, to curl).
 *
 * Owns: the choice of credentials the URL is signed with, which are the signed-in principal's,
 * so the S3 endpoint authorises the download exactly as it would the principal's own request:
 *   - a Studio user (principal = the profile's execution role): temporary role credentials
 *     (session.h) minted for the link, under the session label "console/<ProfileId>", that
 *     expire with it;
 *   - an IAM user: his first Active access key (what `aws s3 presign` would sign with); a
 *     user without one gets the page with AWS's reason instead of a URL.
 * Before signing, s3:GetObject is checked as the principal (authz_check): a user without the
 * right gets AccessDenied in the page, not a URL that would fail.
 * Does not own: SigV4 (sigv4_presign), the credentials' storage (session.c, store.c).
 * Thread-safety: reentrant.
 */
#ifndef TY_CP_CONSOLE_PRESIGN_H
#define TY_CP_CONSOLE_PRESIGN_H

#include <stddef.h>

#include "console_call.h"
#include "http.h"
#include "ty_err.h"

#define CONSOLE_PRESIGN_S 900 /* a presigned link's life: 15 minutes */

/*
 * Presigns GET s3://bucket/key for c's principal, valid expires_s seconds. OUT: url (n bytes;
 * 4096 is enough for any key). 0, -TY_EDENIED (no s3:GetObject, message as AWS's),
 * -TY_ENOTFOUND (no credentials to sign with: an IAM user without an active access key, a
 * profile without an execution role), -TY_EINVAL, -TY_EREDIS, -TY_EINTERNAL.
 */
int console_presign_url(const struct console_ctx *c, const char *bucket, const char *key,
                        int expires_s, char *url, size_t n, struct ty_err *err);

/* Answers GET /console/presign (query: uri=s3://bucket/key[&show=1]). Always fills resp. */
void console_presign_serve(const struct console_ctx *c, const char *query,
                           struct http_response *resp);

#endif
