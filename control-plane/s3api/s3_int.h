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

#include "front_ctx.h"
#include "http.h"
#include "sigv4.h"
#include "ty_buf.h"
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

/* ---- ops/s3*.c: the S3 front end's parts (s3.c: request target, responses, errors, the
   dispatch table; s3_auth.c: authentication and the prepare hook; s3_bucket.c: service and
   bucket operations; s3_object.c: object and multipart operations) ---- */

#define S3_XML_HDR  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define S3_NS       "http://s3.amazonaws.com/doc/2006-03-01/"
#define S3_XML_MAX  (64u * 1024u * 1024u)
#define S3_MAX_QP   32
#define S3_MAX_DELS 1000

struct s3_qp {
    char *name;
    char *value; /* "" when absent */
    int has_value;
};

struct s3_req {
    char bucket[256];
    char *key; /* new, decoded; "" for bucket operations */
    struct s3_qp qp[S3_MAX_QP];
    int nqp;
    int bad_target; /* undecodable path */
};

/* Extra elements of an S3 error document: name/value pairs. */
struct s3_errx {
    const char *name[4]; /* extra elements: name/value pairs */
    const char *value[4];
    int n;
};

#define S3_BAD_COPY_SOURCE                                                                         \
    "Copy Source must mention the source bucket and key: sourcebucket/sourcekey"

/* s3.c */
char *s3__pct_decode(const char *p, size_t n, int plus_space);
const char *s3__qget(const struct s3_req *r, const char *name);
int s3__has(const struct s3_req *r, const char *name);
/* The decimal integer at the start of s (0 when none), clamped to int (atoi without its UB). */
int s3__int(const char *s);
void s3__req_cleanup(struct s3_req *r);
int s3__vhost_bucket(const char *host, char *out, size_t n);
void s3__parse_target(const struct http_request *req, struct s3_req *r);
void s3__xml_esc(struct ty_buf *b, const char *s);
void s3__url_esc(struct ty_buf *b, const char *s);
void s3__list_esc(struct ty_buf *b, const char *s, int url);
void s3__iso8601(int64_t ms, char *out, size_t n);
void s3__http_date(int64_t ms, char *out, size_t n);
void s3__common_headers(struct http_request *req, struct http_response *resp);
void s3__xml_resp(struct http_request *req, struct http_response *resp, int status,
                  struct ty_buf *b);
void s3__empty(struct http_request *req, struct http_response *resp, int status);
void s3__error(struct http_request *req, struct http_response *resp, const char *code,
               const char *msg, const struct s3_req *r, const struct s3_errx *x);
void s3__error_from(struct http_request *req, struct http_response *resp, const struct ty_err *err,
                    const struct s3_req *r);
/* s3_auth.c */
int s3__auth(struct http_request *req, struct http_response *resp, const struct s3_req *r,
             const struct front_ctx *rc, int streamed, struct sigv4_auth *auth);
void s3__iam_action(const char *m, const struct s3_req *r, char *action, size_t an, char *resource,
                    size_t rn);
int s3__discard(void *ctx, const char *data, size_t n);
struct s3_body *s3__body(struct http_request *req, struct objstore *os, struct ty_err *err);
/* s3_object.c */
/* Parses a Range header against size. 0: whole object; 1: [*a, *b]; -1: unsatisfiable. */
int s3__range(const char *h, uint64_t size, uint64_t *a, uint64_t *b);
void s3__malformed(struct http_request *req, struct http_response *resp, const struct s3_req *r);
/* s3_bucket.c */
void s3__list_buckets(struct http_request *req, struct http_response *resp, struct objstore *os,
                      const struct front_ctx *rc);
void s3__create_bucket(struct http_request *req, struct http_response *resp, struct objstore *os,
                       const struct s3_req *r, const char *region);
void s3__list_objects(struct http_request *req, struct http_response *resp, struct objstore *os,
                      const struct s3_req *r, int v2);
/* GetBucketAcl / GetObjectAcl: the owner's FULL_CONTROL, the one grant trainyard keeps (IAM
   policies decide access); NoSuchBucket / NoSuchKey as S3. */
void s3__get_acl(struct http_request *req, struct http_response *resp, struct objstore *os,
                 const struct s3_req *r);
void s3__list_uploads(struct http_request *req, struct http_response *resp, struct objstore *os,
                      const struct s3_req *r);
/* An external store's DeleteObjects is forwarded whole: every key must be allowed
   s3:DeleteObject first, or the whole request is S3's 403 AccessDenied. 0, or -1 with the
   error written. */
int s3__delete_keys_allowed(struct http_request *req, struct http_response *resp,
                            const struct s3_req *r);
void s3__delete_objects(struct http_request *req, struct http_response *resp, struct objstore *os,
                        const struct s3_req *r);
/* s3_object.c */
struct s3_body *s3__finish_body(struct http_request *req, struct http_response *resp,
                                struct objstore *os, const struct s3_req *r);
void s3__put_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                    const struct s3_req *r);
int s3__copy_source(const char *src, char *sb, size_t sbn, char **dec, char **sk);
void s3__upload_part_copy(struct http_request *req, struct http_response *resp, struct objstore *os,
                          const struct s3_req *r, const char *src);
void s3__upload_part(struct http_request *req, struct http_response *resp, struct objstore *os,
                     const struct s3_req *r);
void s3__copy_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                     const struct s3_req *r, const char *src);
void s3__get_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                    const struct s3_req *r, int head);
void s3__delete_object(struct http_request *req, struct http_response *resp, struct objstore *os,
                       const struct s3_req *r);
void s3__create_upload(struct http_request *req, struct http_response *resp, struct objstore *os,
                       const struct s3_req *r);
void s3__complete_upload(struct http_request *req, struct http_response *resp, struct objstore *os,
                         const struct s3_req *r, const char *id);
void s3__list_parts(struct http_request *req, struct http_response *resp, struct objstore *os,
                    const struct s3_req *r, const char *id);

#endif
