/*
 * artifacts.h - S3 URIs and the local object store on disk (<s3_dir>/<bucket>/<key>), and the
 * tar.gz archives a job leaves there (model.tar.gz, output.tar.gz).
 *
 * Owns: URI parsing (with path-traversal checks), key layout, and writing an archive
 * atomically: streamed through libarchive into a temp file beside the destination, fsync'ed,
 * renamed. Does not own the S3 API (another module serves the same directory).
 * Thread-safe: no shared state.
 */
#ifndef TY_CP_AGENT_ARTIFACTS_H
#define TY_CP_AGENT_ARTIFACTS_H

#include <stddef.h>

#include "ty_err.h"

/*
 * Splits "s3://bucket/key/prefix" into bucket and key (key without a leading '/', may be "").
 * OUT: bucket (size bn), key (size kn), written only on success. Returns 0, or -TY_EINVAL for a
 * URI that is not s3://, has an empty or invalid bucket, is too long, or has "." / ".."
 * key segments (they would escape the store's directory).
 */
int artifacts_s3_parse(const char *uri, char *bucket, size_t bn, char *key, size_t kn);

/*
 * The key of a job's artifact: "<prefix>/<job>/output/<file>" where prefix is the key part of
 * S3OutputPath without trailing slashes (no leading "/" when the prefix is empty).
 * OUT: out (size n). 0, or -TY_EINVAL when it does not fit.
 */
int artifacts_output_key(const char *prefix, const char *job, const char *file, char *out,
                         size_t n);

/*
 * Archives the tree under src_dir (entries relative to it, sorted, regular files, directories
 * and symlinks; other types are skipped) as a gzip'ed tar at dest, creating dest's parent
 * directories. Writes dest.tmp.<pid>.<n>, fsyncs and renames it, so readers never see a partial
 * archive. A missing src_dir gives an empty archive. Returns 0 or -TY_EIO with err->msg.
 */
int artifacts_targz(const char *src_dir, const char *dest, struct ty_err *err);

/* mkdir -p with mode (existing directories are fine). 0 or -errno. */
int artifacts_mkdirs(const char *path, unsigned mode);

#endif
