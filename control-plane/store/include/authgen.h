/*
 * authgen.h - the generation of everything authentication and authorisation read from Redis
 * (access keys, temporary credentials, IAM users, roles and their policies), so that those
 * can be cached in process and the caches dropped when any of it changes.
 *
 * Owns: the key ty:iam:version (a counter INCRed on every change) and this process's view of
 * it: a local generation bumped at once by a change made here (authgen_changed) and, at most
 * AUTHGEN_POLL_MS after another process's change, by a poll of the key. A cache entry stamped
 * with authgen_current() taken before it was read from Redis is valid while authgen_current()
 * still returns that value. So a key revoked or deleted anywhere is refused here within
 * AUTHGEN_POLL_MS plus one request.
 * Does not own: the caches (auth.c for principals, authz.c for policies), what a change is
 * (its callers: ops/iamapi.c's mutating actions, session.c's revocation).
 * Thread-safety: every function may be called from any thread (atomics; one thread polls).
 */
#ifndef TY_CP_AUTHGEN_H
#define TY_CP_AUTHGEN_H

struct store;

/* The Redis counter of changes. */
#define AUTHGEN_KEY "ty:iam:version"
/* Longest time between two polls of AUTHGEN_KEY in one process. */
#define AUTHGEN_POLL_MS 250

/*
 * This process's generation: a number that changes whenever anything a cache may hold could
 * have changed. Polls AUTHGEN_KEY through s (one GET, on one thread at a time) when the last
 * poll is older than AUTHGEN_POLL_MS; a failed poll also changes the generation (nothing
 * cached is trusted across a Redis outage). s may be NULL (no poll). Never fails.
 */
unsigned long long authgen_current(struct store *s);

/*
 * Records a change made by this process: the local generation changes at once and
 * AUTHGEN_KEY is INCRed through s (when s is not NULL) so that other processes see it at
 * their next poll. A failed INCR is logged; the local change stands.
 */
void authgen_changed(struct store *s);

#endif
