/*
 * confine.h - file access confined to a directory fd: what the agent (root on the host) reads
 * from and writes into a job's staged /opt/ml tree, which the job's container can change at
 * any time (replace a folder by a symlink to a host path, plant FIFOs, swap things while the
 * agent walks them).
 *
 * Owns: walking and opening below a root directory fd without ever following a symlink: each
 * path component is opened with openat(O_NOFOLLOW | O_DIRECTORY), entries are looked at with
 * fstatat(AT_SYMLINK_NOFOLLOW), files are opened with O_NOFOLLOW | O_NONBLOCK (a FIFO never
 * blocks) and checked with fstat to be regular files; new files are made with O_CREAT | O_EXCL
 * | O_NOFOLLOW after unlinking whatever entry was there. "." and ".." segments are refused, so
 * nothing reached through these calls is outside the root, whatever the container does
 * meanwhile. Does not own what is done with the bytes (archives, uploads: artifacts.c,
 * transfer.c).
 * The root itself is opened by path (confine_openroot): it must be a folder the container
 * cannot replace (the bind mount's source, or a folder above it), and its path is the agent's.
 * Thread-safe: no shared state; never changes the process's working directory.
 */
#ifndef TY_CP_AGENT_CONFINE_H
#define TY_CP_AGENT_CONFINE_H

#include <stddef.h>
#include <sys/stat.h>

#define CONFINE_MAX_DEPTH 64 /* folder levels a walk enters */

/* open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC): a new fd, or -errno. */
int confine_openroot(const char *path);

/*
 * Opens the folder rel under the folder fd root (rel "" or NULL: root itself, as a new fd),
 * one component at a time, never through a symlink (-ELOOP or -ENOTDIR), refusing "." and
 * ".." segments (-EINVAL). With mode != 0 missing components are created with mode (fchmod'ed,
 * so the umask does not narrow it). Returns a new fd (caller closes) or -errno.
 */
int confine_opendir(int root, const char *rel, unsigned mode);

/*
 * Opens the regular file rel under root for reading (parents as confine_opendir without
 * creating). Anything but a regular file (symlink, FIFO, device, socket, folder) is -EINVAL
 * and was never opened in a way that blocks. OUT: st (may be NULL), its fstat.
 * Returns a new fd (caller closes) or -errno.
 */
int confine_open_read(int root, const char *rel, struct stat *st);

/*
 * Creates the file rel under root for writing: parents as confine_opendir (created with
 * dir_mode when dir_mode != 0), an existing non-folder entry of that name unlinked (never
 * followed), then openat(O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW) and fchmod(mode).
 * Returns a new fd (caller closes) or -errno (-EISDIR for a folder in the way).
 */
int confine_create(int root, const char *rel, unsigned mode, unsigned dir_mode);

/*
 * Splits rel into its parent folder and last component. OUT: parent (size pn; "" for a single
 * component), *leaf (points into rel). 0, or -EINVAL for an empty rel, a trailing '/' or a
 * parent that does not fit.
 */
int confine_split(const char *rel, char *parent, size_t pn, const char **leaf);

/* One entry met by confine_walk. */
struct confine_entry {
    int dirfd;        /* the folder holding it (borrowed: valid during the callback) */
    const char *name; /* its name in dirfd */
    const char *rel;  /* its path below the walk's top ("a/b/c") */
    struct stat st;   /* fstatat(AT_SYMLINK_NOFOLLOW): a symlink is a symlink */
    int depth;        /* 0 for the top's own entries */
};

/*
 * Called for every entry; returns 0 to go on, 1 (folders only) not to enter it, or a negative
 * value that stops the walk and is returned by it.
 */
typedef int (*confine_walk_fn)(void *ud, const struct confine_entry *e);

/*
 * Walks the tree under the folder fd top, each folder's entries in strcmp order, depth first,
 * a folder's callback before its content. Folders are entered with openat(O_NOFOLLOW |
 * O_DIRECTORY) and re-checked with fstat against what was listed: one swapped meanwhile for a
 * symlink or another folder is skipped. An entry that vanished between listing and looking is
 * skipped. Deeper than CONFINE_MAX_DEPTH: -ELOOP. Returns 0, fn's negative value, or -errno.
 */
int confine_walk(int top, confine_walk_fn fn, void *ud);

/*
 * rm -rf of the entry name in the folder fd dirfd, never following a symlink (a symlink is
 * removed, not its target). A missing entry is fine. 0, or -errno of the first failure.
 */
int confine_rmtree(int dirfd, const char *name);

/* The type of st as a word for log lines: "file", "folder", "symlink", "fifo", "socket",
   "device". */
const char *confine_type(const struct stat *st);

#endif
