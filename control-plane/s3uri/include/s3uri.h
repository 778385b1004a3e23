/*
 * s3uri.h - "s3://bucket/key" URIs as the SageMaker API takes them (S3Uri, S3OutputPath,
 * CheckpointConfig.S3Uri ...), with the object store they name.
 *
 * Owns: URI parsing with its path-traversal checks, and the wording AWS uses for a URI with no
 * objects under it. Does not own the objects (objstore.h) or who may reach them (authz_s3.h).
 * Thread-safe: no shared state.
 */
#ifndef TY_CP_S3URI_H
#define TY_CP_S3URI_H

#include <stddef.h>

/*
 * Splits "s3://bucket/key/prefix" into bucket and key (key without a leading '/', may be "").
 * OUT: bucket (size bn), key (size kn), written only on success. Returns 0, or -TY_EINVAL for a
 * URI that is not s3://, has an empty or invalid bucket, is too long, or has "." / ".."
 * key segments (they would escape the store's directory).
 */
int s3uri_parse(const char *uri, char *bucket, size_t bn, char *key, size_t kn);

/*
 * The message AWS gives for an input channel without objects under uri (region defaults to
 * us-east-1). OUT: out (size n), always NUL-terminated.
 */
void s3uri_no_objects_msg(char *out, size_t n, const char *uri, const char *region,
                          const char *role, const char *bucket);

#endif
