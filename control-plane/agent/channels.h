/*
 * channels.h - the pure parts of staging a job's data: where an S3 key lands under a channel
 * directory, which host of a ShardedByS3Key channel takes which object, ManifestFile parsing,
 * streaming an object into a file (gunzipped for CompressionType Gzip), and unpacking a
 * sourcedir.tar.gz without letting any entry escape its directory.
 *
 * Owns: no state. Does not own the object store (transfer.c lists and opens objects) nor the
 * job's life. Every copy is streamed through a fixed CHANNELS_CHUNK buffer; nothing is ever
 * held whole in memory except a ManifestFile, which is capped at CHANNELS_MANIFEST_MAX.
 * Errors carry a FailureReason in err->msg ("ClientError: ..." when the input is at fault).
 * Thread-safe: no shared state.
 */
#ifndef TY_CP_AGENT_CHANNELS_H
#define TY_CP_AGENT_CHANNELS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ty_err.h"

#define CHANNELS_CHUNK        65536
#define CHANNELS_MANIFEST_MAX (16 * 1024 * 1024) /* bytes of a ManifestFile */
#define CHANNELS_MAX_KEYS     1000000            /* keys of one ManifestFile */
#define CHANNELS_TAR_ENTRIES  100000             /* entries of one sourcedir.tar.gz */

/*
 * 1 when the object at index i of a channel's sorted key list belongs to host host_index
 * (0-based) of host_count under distribution dist ("ShardedByS3Key": i mod host_count;
 * anything else, FullyReplicated included: every host takes every object).
 */
int channels_shard_mine(const char *dist, uint64_t i, int host_index, int host_count);

/*
 * The path, relative to the channel directory, of object key listed under prefix (the key part
 * of the channel's S3Uri): the rest of the key after the prefix when the prefix ends at a '/'
 * (or the key continues with one), else the key relative to the prefix's last '/' ("data/tr"
 * takes "data/train/x.csv" as "train/x.csv"); an object whose key equals the prefix lands under
 * its base name. OUT: out (size n). Returns 0; 1 for a key to skip (a "folder/" marker); or
 * -TY_EINVAL (err set) for a key that cannot be a relative path (empty, "." or ".." segments,
 * "//", too long).
 */
int channels_rel_path(const char *prefix, const char *key, char *out, size_t n, struct ty_err *err);

/*
 * Reads the ManifestFile at path: a JSON array whose first element is {"prefix": "s3://b/p/"}
 * and whose others are keys relative to that prefix. OUT: bucket (size bn), prefix (the key
 * part, size pn) and *keys (new: array of full keys, prefix + relative, sorted, duplicates
 * removed). Returns 0, or -TY_EINVAL with err->msg "ClientError: ..." naming uri (the
 * manifest's own S3 URI, for the message).
 */
int channels_manifest_parse(const char *path, const char *uri, char *bucket, size_t bn,
                            char *prefix, size_t pn, json_t **keys, struct ty_err *err);

/*
 * Streams everything readable from fd into a new file dst (0666 before umask; dst's parent
 * directories created 0777), gunzipping it when gunzip (a gzip stream of one or more members;
 * anything else is a ClientError naming what, the object's URI). OUT: *bytes (may be NULL),
 * the bytes written. fd is not closed. Returns 0 or a negative code with err->msg.
 */
int channels_copy_fd(int fd, const char *dst, int gunzip, const char *what, uint64_t *bytes,
                     struct ty_err *err);

/*
 * As channels_copy_fd, into the new file rel below the folder fd root (confine.h: parents
 * created 0777 and opened without following symlinks; an existing entry of that name is
 * replaced, never followed; "." and ".." segments refused). A path through a symlink or a
 * file is a ClientError naming what.
 */
int channels_copy_fd_at(int fd, int root, const char *rel, int gunzip, const char *what,
                        uint64_t *bytes, struct ty_err *err);

/*
 * Unpacks the archive (tar, optionally gzip/bzip2/xz-compressed) readable from fd into dest
 * (which must exist and not be a symlink). Regular files, directories and symlinks whose
 * target stays inside dest; an absolute path, a ".." segment, a link leaving dest, a hard link
 * or an entry through a symlink made by an earlier entry is rejected: -TY_EINVAL with
 * "ClientError: ..." naming what. Every entry is made relative to a folder fd of dest, never
 * following a symlink (confine.h). FIFOs, devices and sockets are skipped (never made). Files
 * are made world-readable. Returns 0 or a negative code with err->msg.
 */
int channels_untar_fd(int fd, const char *dest, const char *what, struct ty_err *err);

/* Human figure for progress lines: "12.3 MB" (decimal units, as the AWS CLI prints). OUT: out. */
void channels_fmt_size(uint64_t bytes, char *out, size_t n);

#endif
