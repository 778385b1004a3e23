/*
 * objstore.h - the embedded S3 object store: buckets and objects on the local disk, their
 * metadata and listing index in Redis; or, with objstore_use_remote, the same calls against an
 * external S3-compatible store (objstore_remote.c).
 *
 * Owns: the layout under the s3 dir (<data-dir>/s3):
 *   <s3>/<bucket>/<key>          an object's bytes, when the key is a safe relative path (every
 *                                '/' segment non-empty, not "." or "..", at most 255 bytes, and
 *                                the path does not collide with a file or directory of another
 *                                key). This is the layout the agent reads channels from and
 *                                writes model.tar.gz to, so both stay plain files.
 *   <s3>/.ty/obj/<bucket>/<hh>/<sha256(key)>   any other key's bytes, with <...>.key beside
 *                                it holding the key (written first, so a sweep can ask its record)
 *   <s3>/.ty/tmp/                temp files (uploads in flight); same file system, so a commit
 *                                is a rename
 *   <s3>/.ty/mpu/<upload-id>/<n> the parts of a multipart upload
 * and what the records in Redis mean: buckets, each object's metadata (etag, size, mtime, path
 * relative to <s3>, parts, inode, the headers replayed on GET/HEAD, a multipart object's part
 * sizes) and the key index listings walk, uploads and their parts. The store keeps those
 * records (store_obj.h has the ty:s3:* keys); this module runs no Redis command of its own.
 * Invariants: bytes reach their final name only by rename(2) of an fsync'ed temp file, and the
 * index is written after the rename, under a per-key lock, so a crash leaves either the old or
 * the new object, never a torn one. An index that missed a commit (a crash or a Redis error
 * between the rename and the index write) is repaired by the next read of the key, which finds
 * the file is not the indexed version and indexes it again. A file found at <s3>/<bucket>/<key>
 * that the index lacks (written by the agent or copied by hand) is adopted on first access
 * (HEAD/GET, or a bucket directory seen for the first time), or at once through objstore_put_file.
 * Errors: ty_err codes, with err->field set to S3's error code (NoSuchBucket, NoSuchKey,
 * BucketNotEmpty, InvalidPart, ...) so that the S3 layer picks the wire form.
 * Thread-safety: a struct objstore wraps one borrowed struct store (one Redis connection): use
 * one per thread. Commits to one key are serialised within the process.
 */
#ifndef TY_CP_OBJSTORE_H
#define TY_CP_OBJSTORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "s3client.h"
#include "store.h"
#include "ty_err.h"

#define OBJSTORE_MAX_KEY      1024
#define OBJSTORE_MIN_PART     (5u * 1024u * 1024u)
#define OBJSTORE_MAX_PARTS    10000
#define OBJSTORE_MAX_OBJECT   (5ull * 1024ull * 1024ull * 1024ull)
#define OBJSTORE_UPLOAD_ID_SZ 33

struct objstore;

struct objstore_meta {
    char etag[48]; /* hex MD5, or "<hex>-<parts>"; no quotes */
    uint64_t size;
    int64_t mtime_ms;
    int parts;       /* 0 for a simple object */
    uint64_t ino;    /* inode of the file holding the bytes: the version a reader opened */
    char path[1200]; /* relative to the s3 dir */
    json_t *hdrs;    /* new (or NULL): header name -> value */
};

struct objstore_entry {
    char *key;                 /* new */
    int is_prefix;             /* a CommonPrefix (then meta is empty) */
    struct objstore_meta meta; /* hdrs is NULL in listings */
};

struct objstore_listing {
    struct objstore_entry *e; /* new */
    size_t n;
    int truncated;
    char *next; /* new: continuation token when truncated, else NULL */
};

struct objstore_bucket {
    char name[64];
    int64_t created_ms;
    char region[32];
};

struct objstore_part {
    int number;
    char etag[48];
    uint64_t size;
    int64_t mtime_ms;
};

/* new: caller frees with objstore_close(). s3_dir is copied (its .ty dirs are created); st is
   borrowed and must outlive the handle. NULL with err on failure. */
struct objstore *objstore_open(const char *s3_dir, struct store *st, struct ty_err *err);
void objstore_close(struct objstore *os);
/*
 * Makes os use the external S3-compatible store cfg (--s3-endpoint; copied) instead of the
 * local disk: buckets, head, open_read (the object is downloaded into an unlinked temp file
 * under <s3>/.ty/tmp), put_file (multipart above 64 MiB), delete and list go to it; tmp_create
 * stays local; put_tmp, copy and the mpu_* functions fail with NotImplemented (the S3 API
 * forwards those requests whole). 0, or -TY_EINVAL for a bad config (nothing is contacted).
 */
int objstore_use_remote(struct objstore *os, const struct s3c_config *cfg, struct ty_err *err);
/*
 * An object store that is only the S3-compatible store cfg (copied), with no Redis: what a
 * per-node launcher uses to reach trainyard's S3 with the job role's temporary credentials.
 * tmp_dir holds its temp files (<tmp_dir>/.ty/tmp). Every operation objstore_use_remote sends
 * to the external store works; the local-only ones fail. new: objstore_close. NULL with err.
 */
struct objstore *objstore_open_remote(const char *tmp_dir, const struct s3c_config *cfg,
                                      struct ty_err *err);
/* 1 when os uses an external store. */
int objstore_is_remote(const struct objstore *os);
/* Removes temp files under <s3_dir>/.ty/tmp older than max_age_s (uploads cut short by a crash).
   Returns how many were removed. Needs no Redis; safe while uploads run (they are younger). */
int objstore_sweep_tmp(const char *s3_dir, int max_age_s);
/*
 * What a crash left that nothing owns, older than max_age_s: temp files (objstore_sweep_tmp)
 * and part folders under <s3_dir>/.ty/mpu/ whose upload has no record (an abort or completion
 * cut short after its record went, a create cut short before), and object files under
 * <s3_dir>/.ty/obj/ whose key (read from the tag beside them) has no record or one naming
 * another path. A folder or file a record owns is left alone whatever its age; each is removed
 * under its upload's or key's lock. Returns how many
 * files and folders were removed, or -TY_EREDIS (nothing removed) when Redis does not answer.
 */
int objstore_sweep_orphans(struct objstore *os, int max_age_s);
/* borrowed: the s3 dir. */
const char *objstore_dir(const struct objstore *os);

/* 1 when name follows S3's bucket naming rules (3-63 chars, a-z 0-9 . -, ...). */
int objstore_bucket_name_ok(const char *name);
/* 1 when key is a valid key: 1..1024 bytes of UTF-8 without NUL. */
int objstore_key_ok(const char *key);

/* Creates a bucket. 0, or -TY_EINUSE (field BucketAlreadyOwnedByYou). */
int objstore_bucket_create(struct objstore *os, const char *name, const char *region,
                           struct ty_err *err);
/* 0 when the bucket exists (OUT: b, may be NULL), else -TY_ENOTFOUND (NoSuchBucket). */
int objstore_bucket_get(struct objstore *os, const char *name, struct objstore_bucket *b,
                        struct ty_err *err);
/* Deletes an empty bucket. 0, -TY_ENOTFOUND, -TY_ECONFLICT (BucketNotEmpty). */
int objstore_bucket_delete(struct objstore *os, const char *name, struct ty_err *err);
/* OUT: *out (new array, free()), *n, sorted by name. 0 or error. */
int objstore_bucket_list(struct objstore *os, struct objstore_bucket **out, size_t *n,
                         struct ty_err *err);

/*
 * A temp file for an upload in flight. OUT: path (size n). Returns an fd open for writing
 * (caller closes, and unlinks path unless it committed it), or -TY_EIO.
 */
int objstore_tmp_create(struct objstore *os, char *path, size_t n, struct ty_err *err);

/*
 * Commits the temp file tmp_path (written and fsync'ed by the caller; its bytes have MD5
 * md5_hex and length size) as bucket/key with headers hdrs (borrowed, may be NULL).
 * OUT: meta (may be NULL; its hdrs is left NULL). 0, -TY_ENOTFOUND (NoSuchBucket), -TY_EIO.
 */
int objstore_put_tmp(struct objstore *os, const char *bucket, const char *key, const char *tmp_path,
                     const char *etag, uint64_t size, int parts, json_t *hdrs,
                     struct objstore_meta *meta, struct ty_err *err);

/* A conditional write's conditions (PutObject, CompleteMultipartUpload), checked under the
   key's lock when the object is committed. */
struct objstore_cond {
    const char *if_match; /* If-Match: ETags (quoted or not, comma-separated) or "*"; NULL: none */
    int if_none_match;    /* If-None-Match: * (the key must not exist) */
};
/*
 * As objstore_put_tmp (a simple object) when cond (borrowed, may be NULL) holds: If-None-Match
 * on an existing key and If-Match with another ETag are 412 PreconditionFailed (-TY_ECONFLICT),
 * If-Match on a missing key is NoSuchKey (-TY_ENOTFOUND); nothing is written then.
 */
int objstore_put_tmp_cond(struct objstore *os, const char *bucket, const char *key,
                          const char *tmp_path, const char *etag, uint64_t size, json_t *hdrs,
                          const struct objstore_cond *cond, struct objstore_meta *meta,
                          struct ty_err *err);
/* 1 when etag (unquoted) is in list: "*", or ETags quoted or not, comma-separated (the form of
   If-Match and If-None-Match), else 0. */
int objstore_etag_match(const char *list, const char *etag);
/* The same check against the current object, without writing (before costly work; the commit
   checks again). 0 or the error objstore_put_tmp_cond would give. */
int objstore_cond_check(struct objstore *os, const char *bucket, const char *key,
                        const struct objstore_cond *cond, struct ty_err *err);
/*
 * The bytes of part number of the object m describes (m from objstore_head/open_read of
 * bucket/key): a multipart object's part, or the whole of a simple one for part 1.
 * OUT: first, len. 0, or -TY_EINVAL (field InvalidPart) when there is no such part.
 */
int objstore_part_range(struct objstore *os, const char *bucket, const char *key,
                        const struct objstore_meta *m, int number, uint64_t *first, uint64_t *len,
                        struct ty_err *err);
/*
 * Stores the file at src (any path; read, hashed and copied, so src is left as it is) as
 * bucket/key with content_type (NULL: binary/octet-stream). For the agent and tools.
 * A src that already is the object's own file (<s3>/<bucket>/<key>) is indexed in place.
 */
int objstore_put_file(struct objstore *os, const char *bucket, const char *key, const char *src,
                      const char *content_type, struct ty_err *err);

/*
 * Copies sb/sk to db/dk (streamed; the copy's ETag is the MD5 of its bytes). hdrs (borrowed)
 * replaces the source's headers; NULL keeps them. OUT: meta (may be NULL; hdrs left NULL).
 */
int objstore_copy(struct objstore *os, const char *sb, const char *sk, const char *db,
                  const char *dk, json_t *hdrs, struct objstore_meta *meta, struct ty_err *err);

/* Metadata of bucket/key. OUT: meta (meta->hdrs new: objstore_meta_cleanup). 0, -TY_ENOTFOUND
   (NoSuchBucket or NoSuchKey). */
int objstore_head(struct objstore *os, const char *bucket, const char *key,
                  struct objstore_meta *meta, struct ty_err *err);
/* As objstore_head, and opens the bytes: returns an fd (caller closes) or a negative code. */
int objstore_open_read(struct objstore *os, const char *bucket, const char *key,
                       struct objstore_meta *meta, struct ty_err *err);
void objstore_meta_cleanup(struct objstore_meta *meta);

/* Deletes bucket/key; deleting a missing key is not an error (S3). 0 or error. */
int objstore_delete(struct objstore *os, const char *bucket, const char *key, struct ty_err *err);

/*
 * One page of keys under prefix (NULL = all), grouped at delimiter (NULL = none), after the
 * continuation token (from a previous page's next) or else strictly after start_after, at most
 * max entries (objects + common prefixes). OUT: out (objstore_listing_cleanup).
 */
int objstore_list(struct objstore *os, const char *bucket, const char *prefix, const char *delim,
                  const char *token, const char *start_after, int max, struct objstore_listing *out,
                  struct ty_err *err);
void objstore_listing_cleanup(struct objstore_listing *l);

/* ---- multipart uploads ---- */

/* Starts an upload. OUT: upload_id (OBJSTORE_UPLOAD_ID_SZ). hdrs borrowed, may be NULL. */
int objstore_mpu_create(struct objstore *os, const char *bucket, const char *key, json_t *hdrs,
                        char *upload_id, struct ty_err *err);
/* Checks that upload id exists for bucket/key. OUT: hdrs (new, may be NULL). 0 or -TY_ENOTFOUND
   (NoSuchUpload). */
int objstore_mpu_get(struct objstore *os, const char *bucket, const char *key, const char *id,
                     json_t **hdrs, struct ty_err *err);
/* Commits the temp file as part number (1..10000) of upload id. */
int objstore_mpu_put_part(struct objstore *os, const char *bucket, const char *key, const char *id,
                          int number, const char *tmp_path, const char *etag, uint64_t size,
                          struct ty_err *err);
/*
 * UploadPartCopy: bytes first..last (inclusive; 0 and UINT64_MAX for the whole object) of
 * object sk in bucket sb become part number of upload id (copied, streamed, hashed). OUT: out
 * (number, etag, size, mtime). A range outside the source is InvalidArgument.
 */
int objstore_mpu_copy_part(struct objstore *os, const char *bucket, const char *key, const char *id,
                           int number, const char *sb, const char *sk, uint64_t first,
                           uint64_t last, struct objstore_part *out, struct ty_err *err);
/* The parts uploaded so far, by number. OUT: *out (new, free()), *n. */
int objstore_mpu_parts(struct objstore *os, const char *id, struct objstore_part **out, size_t *n,
                       struct ty_err *err);
/*
 * Completes upload id with the parts the client lists (numbers ascending; etags with or without
 * quotes): InvalidPartOrder, InvalidPart, EntityTooSmall (a part but the last under 5 MiB) as
 * S3 checks them. The object's bytes are the parts concatenated (streamed, never in memory);
 * its ETag is MD5(concatenated binary part MD5s)-N. OUT: meta (may be NULL).
 */
int objstore_mpu_complete(struct objstore *os, const char *bucket, const char *key, const char *id,
                          const struct objstore_part *parts, size_t n, struct objstore_meta *meta,
                          struct ty_err *err);
/*
 * As objstore_mpu_complete, with S3's additional checksums: algo ("CRC32", "CRC32C", "SHA1",
 * "SHA256"; NULL = none, then nothing below is checked). part_ck[i] (base64; NULL, or a
 * NULL/"" entry = not given) must be that checksum of part i's bytes, else InvalidPart; the
 * composite, base64(algo(the parts' binary checksums, concatenated)) "-" n (CRCs as 4 big-endian
 * bytes), goes to OUT: composite (OBJSTORE_CK_SZ), is kept with the object (header
 * x-amz-checksum-<algo>) and, when expect (base64, with or without "-n") is given, must equal
 * it, else BadDigest. A part number listed twice (a part uploaded again) counts once, as the
 * listed ETag that matches the stored part. cond (may be NULL): as objstore_put_tmp_cond. All
 * is checked before anything is written.
 */
#define OBJSTORE_CK_SZ 64
int objstore_mpu_complete_ck(struct objstore *os, const char *bucket, const char *key,
                             const char *id, const struct objstore_part *parts, size_t n,
                             const char *algo, const char *const *part_ck, const char *expect,
                             char *composite, const struct objstore_cond *cond,
                             struct objstore_meta *meta, struct ty_err *err);
/*
 * The digest of a CompleteMultipartUpload part list parts[0..n) as the client gave it (part
 * numbers and ETags, quotes and case aside), to tell a retried Complete from another one.
 * OUT: out (33 bytes, hex).
 */
void objstore_mpu_list_digest(const struct objstore_part *parts, size_t n, char *out);

/*
 * Whether upload id completed bucket/key within the last day (S3 answers a repeated
 * CompleteMultipartUpload with the same result): 0 with OUT: etag (48), algo (16, "CRC32" ...,
 * "" when none), composite (OBJSTORE_CK_SZ, "" when none) and parts (33: the digest of the part
 * list it completed with, objstore_mpu_list_digest; "" when not recorded), or -TY_ENOTFOUND
 * (NoSuchUpload), -TY_EREDIS.
 */
int objstore_mpu_completed(struct objstore *os, const char *bucket, const char *key, const char *id,
                           char *etag, char *algo, char *composite, char *parts,
                           struct ty_err *err);
/* Aborts upload id, removing its parts. 0 or -TY_ENOTFOUND (NoSuchUpload). */
int objstore_mpu_abort(struct objstore *os, const char *bucket, const char *key, const char *id,
                       struct ty_err *err);

struct objstore_upload {
    char *key; /* new */
    char id[OBJSTORE_UPLOAD_ID_SZ];
    int64_t initiated_ms;
};
/* The uploads in progress in bucket, ordered by key then id; at most max. OUT: *out (free each
   key, then the array), *n, *truncated. */
int objstore_mpu_list(struct objstore *os, const char *bucket, const char *prefix, int max,
                      struct objstore_upload **out, size_t *n, int *truncated, struct ty_err *err);

#endif
