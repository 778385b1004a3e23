/*
 * seccomp.h - the seccomp profile of a job's containers on Podman: the engine's own default
 * profile with new user namespaces refused.
 *
 * Why: a job runs with every capability dropped, but Podman's default profile lets any process
 * unshare(CLONE_NEWUSER) (or clone with it) and so hold every capability again inside a user
 * namespace of its own: raw sockets, netfilter netlink, mounts of tmpfs and the rest of the
 * kernel surface that dropping the capabilities was meant to close. Docker's default profile
 * already refuses namespace creation to a process without CAP_SYS_ADMIN, so there the engine's
 * default stays.
 *
 * Owns: turning a profile (containers-common's seccomp.json format, the one runc and crun
 * read) into one where unshare and clone are allowed only without CLONE_NEWUSER (EPERM with
 * it) and clone3, whose flags seccomp cannot see, fails with ENOSYS so that libc falls back to
 * clone. Everything else of the base profile is kept as it is. Does not own passing it to the
 * engine (SecurityOpt "seccomp=<path>", docker.h) nor finding the engine's kind.
 * Thread-safe: no shared state.
 */
#ifndef TY_CP_AGENT_SECCOMP_H
#define TY_CP_AGENT_SECCOMP_H

#include <jansson.h>

#include "ty_err.h"

/* Where Debian's and Fedora's containers-common put Podman's default profile. */
#define SECCOMP_PODMAN_DEFAULT "/usr/share/containers/seccomp.json"

/*
 * new: the profile base (borrowed) with new user namespaces refused, as above. NULL with err
 * set (-TY_EINVAL) when base is not a profile (no "syscalls" array, a rule without "names").
 */
json_t *seccomp_no_userns(json_t *base, struct ty_err *err);

/*
 * Reads the profile at base_path, applies seccomp_no_userns and writes the result to out_path
 * (mode 0644, replaced atomically through a temporary file beside it). Returns 0, -TY_ENOTFOUND
 * when base_path does not exist, or another negative code with err->msg.
 */
int seccomp_write_profile(const char *base_path, const char *out_path, struct ty_err *err);

#endif
