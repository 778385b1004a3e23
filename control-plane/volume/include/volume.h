/*
 * volume.h - a disk of a given size for one job host: VolumeSizeInGB kept as a promise.
 *
 * Owns: the volume's image (<dir>.img, a sparse file), its ext4 file system (mkfs.ext4: no
 * journal, no reserved blocks), its loop device (auto-clear: it goes with the mount) and the
 * mount on dir (nodev, nosuid); and this process's reservations: the bytes each live volume
 * may still grow by, so that the volumes it made can never together fill the disk that holds
 * them. Does not own what is staged inside (stage.h) nor deciding which job gets one.
 *
 * Needs root (mount, loop devices) and mkfs.ext4 (e2fsprogs); volume_supported says which is
 * missing. Thread-safe: the reservations are one locked list.
 */
#ifndef TY_VOLUME_H
#define TY_VOLUME_H

#include <stddef.h>

#include "ty_err.h"

#define VOLUME_MAX_GB 16384 /* ResourceConfig.VolumeSizeInGB's maximum on SageMaker */

/* 1 when this process can make volumes; 0 with why (size n) saying what is missing. */
int volume_supported(char *why, size_t n);

/*
 * Makes a gb GiB volume mounted on dir (created 0755 when absent; it must be empty), its
 * image at <dir>.img. Refused when the file system holding dir has not gb GiB free beyond what
 * this process's other live volumes may still write: -TY_ELIMIT with err naming both figures.
 * Other failures: -TY_EIO with err (mkfs's or mount's reason). On failure nothing is left.
 */
int volume_create(const char *dir, int gb, struct ty_err *err);

/*
 * Counts a volume mounted on dir that an earlier run of the agent made (a job it re-attached
 * after a restart) in this process's reservations, as gb GiB. 0, or -TY_ENOTFOUND when nothing
 * is mounted there. A volume already counted is left as it is.
 */
int volume_adopt(const char *dir, int gb, struct ty_err *err);

/* 1 when a volume (any file system) is mounted on dir. */
int volume_mounted(const char *dir);

/* Unmounts dir (lazily when something still holds it), removes <dir>.img and the
   reservation. Idempotent: 0 when nothing was there. 0 or -errno of a failure. */
int volume_remove(const char *dir);

/* Bytes reserved now: what this process's live volumes may still write. */
unsigned long long volume_reserved(void);

/*
 * Removes every volume mounted below root (its mount table) whose dir keep() answers 0 for:
 * a crashed agent's, a job's that ended without cleaning. keep gets the mount point and ud.
 * Returns how many it removed.
 */
int volume_reap(const char *root, int (*keep)(const char *dir, void *ud), void *ud);

#endif
