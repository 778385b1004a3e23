/*
 * store_obj.h - the embedded object store's records in Redis, as stored (objstore.h has the
 * files, the commit locks and S3's rules): buckets, the objects' metadata and key index,
 * multipart uploads and the answers of completed ones.
 *
 * Owns: the keys
 *   ty:s3:buckets             hash: bucket -> {"created":<ms>,"region":"<region>"}
 *   ty:s3:keys:<bucket>       sorted set of the bucket's object keys, score 0, so that a
 *                             ZRANGEBYLEX walks them in byte order (prefix, start-after and
 *                             continuation listing in O(log n + page))
 *   ty:s3:obj:<bucket>/<key>  hash: etag, size, mtime (ms), path (relative to the s3 dir),
 *                             parts, ino, hdrs (JSON object), and psizes for a multipart
 *                             object (its part sizes "s1,s2,...")
 *   ty:s3:mpu:<id>            hash: bucket, key, initiated (ms), hdrs (JSON object)
 *   ty:s3:mpuparts:<id>       hash: part number -> "<etag> <size> <mtime ms>"
 *   ty:s3:mpus:<bucket>       sorted set of "<key>\n<id>", score 0: the bucket's uploads
 *   ty:s3:mpudone:<id>        string, EX 86400: JSON {"b","k","e","c","a"} (bucket, key, ETag,
 *                             composite checksum, its algorithm) of a completed upload
 * Invariants: an object's hash is replaced whole, together with its index entry (one
 * MULTI/EXEC); an upload's hash and its index entry are written together the same way. Names
 * are not checked here: a bucket, key or upload id goes into its key as given (the object
 * store checks them first).
 * Errors: 0 or a negative TY_E* code with err set (-TY_EREDIS: Redis failed or answered an
 * error); -TY_ENOTFOUND where a function says so.
 * Thread-safety: reentrant; the store is the caller's per-thread connection.
 */
#ifndef TY_CP_STORE_OBJ_H
#define TY_CP_STORE_OBJ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "ty_err.h"

#define STORE_OBJ_ETAG_SZ 48
#define STORE_OBJ_PATH_SZ 1200
#define STORE_OBJ_CK_SZ   64

/* ---- buckets ---- */

struct store_obj_bucket {
    char name[64];
    int64_t created_ms;
    char region[32]; /* "us-east-1" when the record has none */
};

/*
 * Adds bucket name, created at created_ms in region (NULL or "": us-east-1; at most 32 bytes
 * kept), unless it exists. Returns 1 when added, 0 when it existed (left as it was), or
 * -TY_EREDIS.
 */
int store_obj_bucket_add(struct store *s, const char *name, int64_t created_ms, const char *region,
                         struct ty_err *err);
/* Reads bucket name. OUT: b (may be NULL). 0, -TY_ENOTFOUND or -TY_EREDIS. */
int store_obj_bucket_get(struct store *s, const char *name, struct store_obj_bucket *b,
                         struct ty_err *err);
/* Removes bucket name's record and its key index (not its uploads). 0 or -TY_EREDIS. */
int store_obj_bucket_delete(struct store *s, const char *name, struct ty_err *err);
/* Every bucket, sorted by name. OUT: *out (new array: caller frees with free()), *n. 0,
   -TY_ENOMEM or -TY_EREDIS. */
int store_obj_bucket_list(struct store *s, struct store_obj_bucket **out, size_t *n,
                          struct ty_err *err);

/* ---- objects ---- */

/* An object's record, as ty:s3:obj:<bucket>/<key> holds it (headers and part sizes apart). */
struct store_obj_rec {
    char etag[STORE_OBJ_ETAG_SZ]; /* hex MD5, or "<hex>-<parts>" */
    uint64_t size;
    int64_t mtime_ms;
    int parts; /* 0 for a simple object */
    uint64_t ino;
    char path[STORE_OBJ_PATH_SZ]; /* relative to the s3 dir; "" when the record has none */
};

/*
 * Writes bucket/key's record r (replacing the old hash whole) with hdrs (borrowed; NULL: {})
 * and psizes (borrowed; NULL for a simple object: no psizes field), and puts key in the
 * bucket's index, in one MULTI/EXEC. 0, -TY_ENOMEM or -TY_EREDIS.
 */
int store_obj_put(struct store *s, const char *bucket, const char *key,
                  const struct store_obj_rec *r, const json_t *hdrs, const char *psizes,
                  struct ty_err *err);
/*
 * Reads bucket/key's record. OUT: r; *hdrs when hdrs is not NULL (new: caller json_decref()s
 * it; NULL when the record has none that parses). 0, -TY_ENOTFOUND (no record, or one without
 * a path), -TY_ENOMEM or -TY_EREDIS.
 */
int store_obj_get(struct store *s, const char *bucket, const char *key, struct store_obj_rec *r,
                  json_t **hdrs, struct ty_err *err);
/*
 * The records of bucket's keys keys[0..n) (borrowed), in one pipeline. OUT: r[0..n) (caller's
 * array), each with the fields its record has (all zero when it has none: test path[0]). 0,
 * -TY_ENOMEM or -TY_EREDIS.
 */
int store_obj_get_many(struct store *s, const char *bucket, const char *const *keys, size_t n,
                       struct store_obj_rec *r, struct ty_err *err);
/* The psizes field of bucket/key's record. OUT: *psizes (new: caller frees; "" when none). 0,
   -TY_ENOMEM or -TY_EREDIS. */
int store_obj_psizes(struct store *s, const char *bucket, const char *key, char **psizes,
                     struct ty_err *err);
/* Deletes bucket/key's record and takes key out of the bucket's index (a missing one is not an
   error). 0 or -TY_EREDIS. */
int store_obj_delete(struct store *s, const char *bucket, const char *key, struct ty_err *err);
/* How many keys bucket's index holds. OUT: *n. 0 or -TY_EREDIS. */
int store_obj_count(struct store *s, const char *bucket, long long *n, struct ty_err *err);

/* A page of an index's members, in byte order. */
struct store_obj_names {
    char **v;    /* new, each new */
    size_t *len; /* new: v[i]'s length in bytes */
    size_t n;
};
/* Frees what p holds; p may be filled again. */
void store_obj_names_cleanup(struct store_obj_names *p);

/*
 * Up to limit (>= 1) keys of bucket's index, in byte order, from from: NULL starts at the
 * first key; else the first key after from (or from itself when incl and it is there). OUT:
 * out (store_obj_names_cleanup; empty past the end). 0, -TY_EINVAL, -TY_ENOMEM or -TY_EREDIS.
 */
int store_obj_list(struct store *s, const char *bucket, const char *from, int incl, int limit,
                   struct store_obj_names *out, struct ty_err *err);

/* ---- multipart uploads ---- */

/*
 * Records upload id of bucket/key, initiated at initiated_ms with hdrs (borrowed; NULL: {}),
 * and puts "<key>\n<id>" in the bucket's uploads, in one MULTI/EXEC. 0, -TY_ENOMEM or
 * -TY_EREDIS.
 */
int store_obj_mpu_create(struct store *s, const char *id, const char *bucket, const char *key,
                         int64_t initiated_ms, const json_t *hdrs, struct ty_err *err);
/*
 * Whether upload id is one of bucket/key. OUT: *hdrs when hdrs is not NULL (new: caller
 * json_decref()s it; NULL when none parses). 0, -TY_ENOTFOUND (no such upload, or another
 * object's) or -TY_EREDIS.
 */
int store_obj_mpu_get(struct store *s, const char *id, const char *bucket, const char *key,
                      json_t **hdrs, struct ty_err *err);
/* When upload id was initiated. OUT: *ms (0 when unknown). 0 or -TY_EREDIS. */
int store_obj_mpu_initiated(struct store *s, const char *id, int64_t *ms, struct ty_err *err);
/*
 * As store_obj_list over bucket's uploads: members "<key>\n<id>", in byte order.
 */
int store_obj_mpu_list(struct store *s, const char *bucket, const char *from, int incl, int limit,
                       struct store_obj_names *out, struct ty_err *err);
/* Forgets upload id of bucket/key: its hash, its parts and its entry in the bucket's uploads.
   0 or -TY_EREDIS. */
int store_obj_mpu_drop(struct store *s, const char *id, const char *bucket, const char *key,
                       struct ty_err *err);

/* A part of an upload, as ty:s3:mpuparts:<id> holds it. */
struct store_obj_part {
    int number;
    char etag[STORE_OBJ_ETAG_SZ];
    uint64_t size;
    int64_t mtime_ms;
};
/* Records part p (borrowed) of upload id, replacing one of the same number. 0 or -TY_EREDIS. */
int store_obj_mpu_part_put(struct store *s, const char *id, const struct store_obj_part *p,
                           struct ty_err *err);
/* The parts of upload id, by number (entries that do not parse are left out). OUT: *out (new
   array: caller frees with free()), *n. 0, -TY_ENOMEM or -TY_EREDIS. */
int store_obj_mpu_parts(struct store *s, const char *id, struct store_obj_part **out, size_t *n,
                        struct ty_err *err);

/* A completed upload's answer, kept for a repeated CompleteMultipartUpload. */
struct store_obj_done {
    char etag[STORE_OBJ_ETAG_SZ];
    char algo[16];                   /* "CRC32", ...; "" when none */
    char composite[STORE_OBJ_CK_SZ]; /* "" when none */
    char parts[33];                  /* digest of the part list it completed with, "" unknown */
};
/*
 * Records for a day that upload id completed bucket/key with etag, algo and composite (each
 * borrowed; NULL: ""), and parts, the digest of the part list (NULL: not recorded, as before
 * it was kept). The id is cut to 64 bytes in the key. 0, -TY_ENOMEM or -TY_EREDIS.
 */
int store_obj_mpu_done_put(struct store *s, const char *id, const char *bucket, const char *key,
                           const char *etag, const char *algo, const char *composite,
                           const char *parts, struct ty_err *err);
/*
 * The answer recorded for upload id when it completed bucket/key. OUT: d (a record from
 * before the algorithm was kept, with a composite, reads as SHA256). 0, -TY_ENOTFOUND (none,
 * or another object's) or -TY_EREDIS.
 */
int store_obj_mpu_done_get(struct store *s, const char *id, const char *bucket, const char *key,
                           struct store_obj_done *d, struct ty_err *err);

#endif
