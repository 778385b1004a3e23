/*
 * objstore_int.h - internals shared by objstore.c (paths, metadata, buckets, objects),
 * objstore_list.c (listing) and objstore_multipart.c (multipart uploads); not an API.
 *
 * Owns: struct objstore and the helpers the three files share (objstore__*).
 */
#ifndef TY_CP_OBJSTORE_INT_H
#define TY_CP_OBJSTORE_INT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "objstore.h"
#include "ty_err.h"

#define OBJSTORE_CHUNK (1024 * 1024)

struct s3c;
struct store;
struct store_obj_rec;

struct objstore {
    char dir[PATH_MAX];
    struct store *st;
    struct s3c *remote; /* the external store (--s3-endpoint), NULL for the local one */
};

/* snprintf into out (size n). 0, or -1 when it does not fit. */
int objstore__fmt(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* fsyncs the directory holding file. */
void objstore__fsync_parent(const char *file);
/* Nonzero (err set: NotImplemented) when os forwards to an external store. */
int objstore__local_only(const struct objstore *os, struct ty_err *err);
/* Fills m from an object's record r (store_obj.h); m->hdrs is left NULL. */
void objstore__meta_from_rec(const struct store_obj_rec *r, struct objstore_meta *m);
/* Removes the tree at path (depth: the recursion depth, 0 at the top). 0 or nonzero. */
int objstore__rmtree(const char *path, int depth);
/* Copies at most limit bytes of in (from its offset) into a new temp file while hashing.
   OUT: tmp (size tn), md5 (33 bytes, hex), size. 0 or error (no temp file left behind). */
int objstore__copy_to_tmp_n(struct objstore *os, int in, uint64_t limit, char *tmp, size_t tn,
                            char *md5, uint64_t *size, struct ty_err *err);

/* Removes files under <s3>/.ty/obj/ older than max_age_s that no record owns (what a crash
   between a hashed object's rename and its record, or its record and its unlink, leaves), and
   their key tags. Returns how many were removed, or -TY_EREDIS when Redis does not answer. */
int objstore__sweep_hashed(struct objstore *os, int max_age_s);
/* objstore_put_tmp with the part sizes psizes ("s1,s2,..."; NULL for a simple object) and the
   conditions cond (may be NULL) of a conditional write. */
int objstore__put_tmp(struct objstore *os, const char *bucket, const char *key,
                      const char *tmp_path, const char *etag, uint64_t size, int parts,
                      json_t *hdrs, const char *psizes, const struct objstore_cond *cond,
                      struct objstore_meta *meta, struct ty_err *err);
/* Whether cond holds for the current object old (NULL: none). 0, or PreconditionFailed
   (-TY_ECONFLICT) / NoSuchKey (-TY_ENOTFOUND) in err. */
int objstore__check_cond(const struct objstore_cond *cond, const struct objstore_meta *old,
                         struct ty_err *err);

#endif
