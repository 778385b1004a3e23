/*
 * s3_int.h - internals shared by ops/s3.c and ops/s3_body.c; not an API.
 *
 * Owns: the forwarding of requests to an external store (s3_proxy), and struct s3_body, the
 * streaming receiver of an S3 upload body: it writes the payload to a temp file in the object store
 * (decoding aws-chunked framing on the way), computes the MD5 (ETag), the SHA-256 of the wire bytes
 * (x-amz-content-sha256), the requested additional checksum (CRC32, CRC32C, SHA1, SHA256; from a
 * header or an aws-chunked trailer) and verifies STREAMING-AWS4-HMAC-SHA256-PAYLOAD chunk
 * signatures. Memory use is bounded (a line buffer); the body itself never stays in memory. One
 * body per request; not thread-safe.
 */
#ifndef TY_CP_OPS_S3_INT_H
#define TY_CP_OPS_S3_INT_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "ty_err.h"

struct s3_body;

/* Checksum algorithms of x-amz-checksum-*. */
enum s3_ck { S3_CK_NONE = 0, S3_CK_CRC32, S3_CK_CRC32C, S3_CK_SHA1, S3_CK_SHA256 };

/* "crc32" -> S3_CK_CRC32 ... (case-insensitive); S3_CK_NONE for anything else. */
enum s3_ck s3_ck_from_name(const char *name);
/* "CRC32", ...: the algorithm's name as x-amz-checksum-algorithm spells it. */
const char *s3_ck_name(enum s3_ck ck);

/*
 * A receiver writing into the temp file path (created by the caller, fd steals). It reads
 * from req: x-amz-content-sha256 (STREAMING-* => aws-chunked framing), x-amz-decoded-content-
 * length, x-amz-trailer, x-amz-checksum-*, x-amz-sdk-checksum-algorithm, Content-MD5.
 * signing_key (32 bytes, may be NULL), seed_sig, amz_date and scope ("date/region/s3/aws4_request")
 * verify chunk signatures when the payload is STREAMING-AWS4-HMAC-SHA256-PAYLOAD*.
 * new: free with s3_body_free (which unlinks the file unless s3_body_release was called).
 */
struct s3_body *s3_body_new(int fd, const char *path, const struct http_request *req,
                            const unsigned char *signing_key, const char *seed_sig,
                            const char *amz_date, const char *scope);
/* http_sink write: 0, or -1 once the body is known to be bad (the error is kept). */
int s3_body_write(void *ctx, const char *data, size_t n);
/* http_sink free. NULL is a no-op. */
void s3_body_free(void *ctx);

/*
 * Ends the body: checks the framing is complete, lengths, Content-MD5, x-amz-content-sha256,
 * the additional checksum and chunk signatures; fsyncs and closes the file. Returns 0, or
 * -TY_EINVAL/-TY_EBADSIG/-TY_EIO with err->field the S3 error code (IncompleteBody, BadDigest,
 * XAmzContentSHA256Mismatch, SignatureDoesNotMatch, InvalidRequest, EntityTooLarge, ...).
 */
int s3_body_finish(struct s3_body *b, struct ty_err *err);

/* After a successful finish: the temp file's path (borrowed), the MD5 hex, the decoded size,
   the additional checksum (algorithm, base64 value; S3_CK_NONE when none was requested). */
const char *s3_body_path(const struct s3_body *b);
const char *s3_body_md5(const struct s3_body *b);
uint64_t s3_body_size(const struct s3_body *b);
enum s3_ck s3_body_checksum(const struct s3_body *b, const char **b64);
/* The file was committed elsewhere (renamed): do not unlink it. */
void s3_body_release(struct s3_body *b);

/* ---- ops/s3_proxy.c: forwarding to an external store (--s3-endpoint) ---- */

struct s3c_config;
struct objstore;

/*
 * Sends the request req (already authenticated and authorised) to the external store cfg,
 * path-style as bucket/key (key "" for bucket operations, bucket "" for the service), with the
 * decoded query pairs qpairs[2i]/[2i+1] (presigning's X-Amz-* are dropped), and puts the
 * store's answer into resp. body: the finished upload body of a PUT (NULL otherwise; a POST's
 * body is req->body). os gives temp files. Returns 0 when resp holds the store's answer (of any
 * status), or a negative code with err (field: the S3 error code to answer with, e.g.
 * ServiceUnavailable when the store could not be reached).
 */
int s3_proxy(struct http_request *req, struct http_response *resp, const struct s3c_config *cfg,
             struct objstore *os, const char *bucket, const char *key, const char *const *qpairs,
             size_t nq, struct s3_body *body, struct ty_err *err);
/* Frees this thread's client of the external store (thread exit). */
void s3_proxy_thread_end(void);

#endif
