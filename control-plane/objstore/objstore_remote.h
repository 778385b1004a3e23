/*
 * objstore_remote.h - the object store's operations against an external S3-compatible store
 * (--s3-endpoint), for objstore.c only; not an API. Each function has the contract of the
 * objstore_* function of the same name (objstore.h), over an s3client handle (borrowed).
 */
#ifndef TY_CP_OBJSTORE_REMOTE_H
#define TY_CP_OBJSTORE_REMOTE_H

#include "objstore.h"
#include "s3client.h"

int objstore_remote_bucket_create(struct s3c *c, const char *name, const char *region,
                                  struct ty_err *err);
int objstore_remote_bucket_get(struct s3c *c, const char *name, struct objstore_bucket *b,
                               struct ty_err *err);
int objstore_remote_bucket_delete(struct s3c *c, const char *name, struct ty_err *err);
int objstore_remote_bucket_list(struct s3c *c, struct objstore_bucket **out, size_t *n,
                                struct ty_err *err);
int objstore_remote_head(struct s3c *c, const char *bucket, const char *key,
                         struct objstore_meta *meta, struct ty_err *err);
/* GET into fd (an empty file the caller made; left at its end). OUT: meta as objstore_head. */
int objstore_remote_get(struct s3c *c, const char *bucket, const char *key, int fd,
                        struct objstore_meta *meta, struct ty_err *err);
int objstore_remote_put_file(struct s3c *c, const char *bucket, const char *key, const char *src,
                             const char *content_type, struct ty_err *err);
int objstore_remote_delete(struct s3c *c, const char *bucket, const char *key, struct ty_err *err);
int objstore_remote_list(struct s3c *c, const char *bucket, const char *prefix, const char *delim,
                         const char *token, const char *start_after, int max,
                         struct objstore_listing *out, struct ty_err *err);

#endif
