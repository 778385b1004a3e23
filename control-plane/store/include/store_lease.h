/*
 * store_lease.h - short leases in Redis: at most one holder of a name at a time across
 * threads, processes and server replicas (the tuning driver's per-job lease, tuning.h).
 *
 * Owns the keys ty:lease:<name> (value = the holder, PX = the lease's life). A holder that dies
 * loses the lease when it expires. Thread-safety: as store.h.
 */
#ifndef TY_CP_STORE_LEASE_H
#define TY_CP_STORE_LEASE_H

#include "store.h"
#include "ty_err.h"

/* Takes or renews the lease name for holder (ttl_ms > 0). 1 when holder has it now, 0 when
   another holder has it, -TY_EREDIS on failure. */
int store_lease(struct store *s, const char *name, const char *holder, long ttl_ms,
                struct ty_err *err);

#endif
