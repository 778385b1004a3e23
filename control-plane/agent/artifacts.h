/*
 * artifacts.h - the local object store on disk (<s3_dir>/<bucket>/<key>), and the
 * tar.gz archives a job leaves there (model.tar.gz, output.tar.gz).
 *
 * Owns: key layout (URI parsing is s3uri.h), and writing an archive
 * atomically: streamed through libarchive into a temp file beside the destination, fsync'ed,
 * renamed. Does not own the S3 API (another module serves the same directory).
 * Thread-safe: no shared state.
 */
#ifndef TY_CP_AGENT_ARTIFACTS_H
#define TY_CP_AGENT_ARTIFACTS_H

#include <stddef.h>

#include "ty_err.h"

/*
 * The key of a job's artifact: "<prefix>/<job>/output/<file>" where prefix is the key part of
 * S3OutputPath without trailing slashes (no leading "/" when the prefix is empty).
 * OUT: out (size n). 0, or -TY_EINVAL when it does not fit.
 */
int artifacts_output_key(const char *prefix, const char *job, const char *file, char *out,
                         size_t n);

/*
 * Archives the tree of the folder rel under the folder root (entries relative to it, sorted:
 * regular files, directories and symlinks, a symlink as a symlink, never followed; FIFOs,
 * devices and sockets are skipped with a log line) as a gzip'ed tar at dest, creating dest's
 * parent directories. root is the agent's (a job's staging folder: its path is trusted); rel
 * is walked below it with confine.h, so that nothing outside root is ever read, whatever the
 * job's container does to the tree meanwhile. Writes dest.tmp.<pid>.<n>, fsyncs and renames
 * it, so readers never see a partial archive. A missing rel, or one that is a symlink (or on
 * its way through one), gives an empty archive. Returns 0 or -TY_EIO with err->msg.
 */
int artifacts_targz(const char *root, const char *rel, const char *dest, struct ty_err *err);

#endif
