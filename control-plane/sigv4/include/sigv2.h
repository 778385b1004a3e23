/*
 * sigv2.h - AWS Signature Version 2 for S3 (the "Authorization: AWS <key>:<signature>" header
 * and presigned query URLs with AWSAccessKeyId, Signature and Expires), as botocore's
 * HmacV1Auth / HmacV1QueryAuth and the AWS CLI's `s3 presign` produce them.
 *
 * Owns: recognising and parsing a SigV2 signature into a struct sigv4_auth (sigv2 = 1), the
 * string to sign (verb, Content-MD5, Content-Type, Date or Expires, the x-amz-* headers, the
 * canonical resource with its sub-resources), HMAC-SHA1 + base64 and the constant-time
 * comparison, the 15-minute clock check of the header form and the Expires check of the query
 * form. Does not own principals or the order of checks: auth.c looks the key up and calls
 * sigv2_verify, as it calls sigv4_verify for SigV4. Pure functions; thread-safe.
 */
#ifndef TY_CP_SIGV2_H
#define TY_CP_SIGV2_H

#include <time.h>

#include "sigv4.h"
#include "ty_buf.h"
#include "ty_err.h"

/* 1 when req carries a SigV2 signature: an Authorization header "AWS ..." or, without an
   Authorization header, an AWSAccessKeyId query parameter. */
int sigv2_detect(const struct sigv4_request *req);

/*
 * Parses the SigV2 signature of req into OUT: auth (written only on success): access_key,
 * signature (base64), session_token (x-amz-security-token header or query parameter),
 * presigned and expires (the query form's Expires, seconds since the epoch), sigv2 = 1. The
 * caller sets auth->v2_bucket for a virtual-hosted request before verifying. Returns 0, or
 *   -TY_ENOAUTH  no SigV2 signature
 *   -TY_EINVAL   a malformed one (field "Authorization", "Signature" or "Expires"; AWS's words:
 *                "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature")
 *   -TY_EBADKEY  an access key or token longer than auth holds.
 */
int sigv2_parse(const struct sigv4_request *req, struct sigv4_auth *auth, struct ty_err *err);

/*
 * Writes the string to sign of req as auth describes it into OUT: out (reset first). Returns
 * 0, or -TY_ETOOBIG / -TY_ENOMEM.
 */
int sigv2_string_to_sign(const struct sigv4_request *req, const struct sigv4_auth *auth,
                         struct ty_buf *out, struct ty_err *err);

/*
 * Verifies a parsed SigV2 signature with secret_key at time now. Returns 0, or -TY_EBADSIG
 * with "Request has expired" (query form past Expires, or Expires more than
 * SIGV4_MAX_EXPIRES_S, a week, after now: no URL outlives a SigV4 one), "Signature expired: ..." /
 * "Signature not yet current: ..." (header form more than 15 minutes from now), "AWS authentication
 * requires a valid Date or x-amz-date header" (field "Date"), or "The request signature we
 * calculated does not match the signature you provided. ..."; -TY_EINVAL for bad arguments.
 */
int sigv2_verify(const struct sigv4_request *req, const struct sigv4_auth *auth,
                 const char *secret_key, time_t now, struct ty_err *err);

#endif
