/*
 * transfer.h - moving a job's bytes between the object store (objstore.h) and its staged
 * /opt/ml tree: input channels, the script-mode sourcedir.tar.gz, checkpoints (restore and
 * incremental upload), uncompressed outputs, profiler output, and single files (model.tar.gz).
 *
 * Owns: the listing/sharding/download loop of each channel and its progress lines, the
 * FailureReasons of bad input ("ClientError: ..."). Does not own the object store, the job's
 * transitions or the log stream (progress goes through the caller's log callback).
 * Every object is streamed (channels.h); listings are paged (1000 keys at a time).
 * Thread-safety: a struct transfer is used by one thread (its objstore is per thread).
 */
#ifndef TY_CP_AGENT_TRANSFER_H
#define TY_CP_AGENT_TRANSFER_H

#include <jansson.h>
#include <stdint.h>

#include "objstore.h"
#include "spec.h"
#include "store.h"
#include "ty_err.h"

/* One progress line for the job's log stream (no trailing newline). */
typedef void (*transfer_log_fn)(void *ud, const char *line);

struct transfer {
    struct objstore *os; /* borrowed */
    const char *region;  /* for messages, "us-east-1" when NULL */
    transfer_log_fn log; /* may be NULL */
    void *ud;
    /* the job's role: every object read or written is first authorised for it (access.h) */
    struct store *authz;  /* borrowed: a store connection of this thread */
    const char *role_arn; /* borrowed: RoleArn ("" or NULL: every access denied) */
    int role_creds;       /* 1: os is reached with the role's own temporary credentials (a node's
                             launcher: objstore_open_remote), so the store decides each access and
                             authz is not used */
};

/*
 * Stages every channel of sp into <host_dir>/input/data/<channel>/ (created by stage_prepare):
 * S3Prefix or ManifestFile, FullyReplicated or ShardedByS3Key (object i of the sorted key list
 * goes to host i mod host_count; host_index is 0-based), CompressionType None or Gzip (each
 * object gunzipped while it is written, under its own name), any input mode (Pipe and FastFile
 * are delivered as files). scratch is a directory outside the container's view for manifests.
 * Returns 0, or a negative code with err->msg a FailureReason.
 */
int transfer_channels(struct transfer *t, const struct spec *sp, const char *host_dir,
                      const char *scratch, int host_index, int host_count, struct ty_err *err);

/*
 * Script mode: when the hyperparameter sagemaker_submit_directory (JSON-encoded or raw) is an
 * s3:// URI of a tar.gz, or a path under /opt/ml (network isolation's code channel), unpacks it
 * into <host_dir>/code. Nothing to do (0) without it or for a file:// or other local URI.
 * Returns 0 or a negative code with err->msg a FailureReason.
 */
int transfer_code(struct transfer *t, const struct spec *sp, const char *host_dir,
                  struct ty_err *err);

/*
 * Downloads every object under the S3 URI uri into the folder rel below the folder root
 * (checkpoint restore), keeping key paths relative to the prefix; every file is made below a
 * folder fd of root, never through a symlink (confine.h). A missing bucket or no objects is
 * not an error. OUT: *count (may be NULL). Returns 0 or a negative code with err->msg.
 */
int transfer_download_prefix(struct transfer *t, const char *uri, const char *root, const char *rel,
                             int *count, struct ty_err *err);

/*
 * Uploads the regular files of the folder rel below the folder root (recursively) to the S3
 * URI prefix uri ("<uri>/<relative path>"), creating the bucket when missing. root is the
 * agent's (a job's staging folder or a bind-mount source: the container cannot replace it);
 * rel is walked below it with confine.h, so symlinks (a symlink rel included), FIFOs, devices
 * and sockets are skipped with a log line and never followed or opened, even when the
 * container swaps things meanwhile. With seen (an object, borrowed, relative path ->
 * "size:mtime" signature), only files whose signature changed are uploaded and seen is
 * updated; with seed_only nothing is uploaded, seen is only filled. A missing src_dir uploads
 * nothing. OUT: *count (may be NULL). Returns 0 or a negative code.
 */
int transfer_upload_tree(struct transfer *t, const char *root, const char *rel, const char *uri,
                         json_t *seen, int seed_only, int *count, struct ty_err *err);

/* Stores the local file src as s3://bucket/key, creating the bucket when missing. 0 or code. */
int transfer_put_file(struct transfer *t, const char *src, const char *bucket, const char *key,
                      const char *content_type, struct ty_err *err);

#endif
