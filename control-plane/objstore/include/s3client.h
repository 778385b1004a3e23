/*
 * s3client.h - a client of an external S3-compatible store (--s3-endpoint): AWS S3, MinIO, or
 * another trainyard. Requests go through libcurl, signed by CURLOPT_AWS_SIGV4 with the
 * configured keys, always path-style (<endpoint>/<bucket>/<key>).
 *
 * Owns: one curl easy handle (connections are kept between requests), the request's URL
 * (key and query encoded as SigV4's canonical form, so that what curl signs is what the store
 * rebuilds), and the response (status, headers, body into memory or a file descriptor).
 * Does not own: what the requests mean (objstore_remote.c, ops/s3_proxy.c).
 * Thread-safety: one struct s3c per thread.
 */
#ifndef TY_CP_S3CLIENT_H
#define TY_CP_S3CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ty_buf.h"
#include "ty_err.h"

/* Where the external store is and how to sign for it. Strings are borrowed by s3c_new (it
   copies them). */
struct s3c_config {
    const char *endpoint;   /* http://host[:port] or https://...; no path */
    const char *access_key; /* AWS access key id */
    const char *secret_key;
    const char *region;        /* signing region; NULL or "" = us-east-1 */
    const char *session_token; /* temporary credentials' token (x-amz-security-token, signed),
                                  NULL or "" = none */
};

struct s3c;

/* new: free with s3c_free. Checks the endpoint's form and that keys are present; NULL with
   err (TY_EINVAL naming the option) otherwise. Contacts nothing. */
struct s3c *s3c_new(const struct s3c_config *cfg, struct ty_err *err);
void s3c_free(struct s3c *c);
/* borrowed: the endpoint as configured, without a trailing '/'. */
const char *s3c_endpoint(const struct s3c *c);

struct s3c_hdr {
    const char *name, *value;
};

struct s3c_resp;

struct s3c_req {
    const char *method;        /* GET, HEAD, PUT, POST, DELETE */
    const char *bucket;        /* NULL or "" for the service (ListBuckets) */
    const char *key;           /* NULL or "" for a bucket operation; raw bytes (encoded here) */
    const char *query;         /* canonical query from s3c_query (may be NULL) */
    const struct s3c_hdr *hdr; /* extra headers (may be NULL) */
    size_t nhdr;
    int body_fd;         /* -1: none, else body_len bytes from its current offset (unsigned) */
    uint64_t body_len;   /* with body_fd */
    const char *body;    /* in-memory body (signed), when body_fd is -1; may be NULL */
    size_t body_n;       /* with body */
    int out_fd;          /* -1: the answer's body into resp->body, else written to out_fd */
    size_t max_mem_body; /* cap on resp->body; 0 = 16 MiB */
    /* called (from s3c_do's thread) once the final answer's headers are in, before its body;
       may be NULL */
    void (*on_headers)(void *ud, const struct s3c_resp *rs);
    void *ud;
};

struct s3c_resp {
    long status;        /* HTTP status of the final answer (0 when none came) */
    json_t *hdrs;       /* new: lower-case header name -> value */
    struct ty_buf body; /* the body when out_fd was -1 (always NUL-terminated) */
    uint64_t body_bytes;
};

/*
 * Sends rq and waits for the whole answer. Returns 0 when an HTTP answer came (any status:
 * the caller reads rs->status), or -TY_EIO with err->msg naming the endpoint and curl's reason
 * when none did (connection refused, timeout, write to out_fd failed). rs is always
 * initialised: clean it up with s3c_resp_cleanup.
 */
int s3c_do(struct s3c *c, const struct s3c_req *rq, struct s3c_resp *rs, struct ty_err *err);
void s3c_resp_cleanup(struct s3c_resp *rs);
/* borrowed: a response header (name in lower case), or NULL. */
const char *s3c_resp_header(const struct s3c_resp *rs, const char *name);

/*
 * The canonical query string of n name/value pairs (pairs[2i], pairs[2i+1]; a NULL value is
 * ""), each name and value percent-encoded as SigV4 wants, sorted, joined with '&', every pair
 * written "name=value". new (free()); "" when n is 0.
 */
char *s3c_query(const char *const *pairs, size_t n);

/*
 * Turns a failed answer (status >= 300) into err: the S3 error code (from the XML body, or
 * from the status for bodiless answers: 404 -> missing, 403 -> AccessDenied) in err->field,
 * and a ty code: -TY_ENOTFOUND (NoSuchBucket, NoSuchKey, NoSuchUpload, and HEAD 404, which
 * gives missing), -TY_EDENIED, -TY_EINUSE (BucketAlreadyOwnedByYou/Exists), -TY_ECONFLICT
 * (BucketNotEmpty), -TY_EINVAL (other 4xx), -TY_EIO (5xx). Returns the negative code.
 */
int s3c_fail(const struct s3c *c, const struct s3c_resp *rs, const char *missing,
             struct ty_err *err);

#endif
