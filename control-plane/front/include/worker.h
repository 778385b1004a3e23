/*
 * worker.h - the per-thread context of an HTTP worker: the one Redis connection every front
 * end of that thread uses (route.c, ops/s3*.c, ops/sts.c, ops/cloudwatch.c), the S3 object
 * store handle on it, the principal cache of auth.c, the job-answer memo, and scratch space.
 *
 * Owns: opening the connection on first use, dropping it (and everything opened on it) after
 * a Redis failure so that the thread's next request opens a new one, and closing all of it
 * when the thread ends (a pthread key destructor), so a clean shutdown leaves nothing behind.
 * Does not own: what is cached (auth.h), the object store (objstore.h).
 * Thread-safety: a struct worker belongs to one thread; worker_self() returns the caller's.
 */
#ifndef TY_CP_WORKER_H
#define TY_CP_WORKER_H

#include <stddef.h>

#include "auth.h"
#include "store_jobmemo.h"
#include "ty_err.h"

struct objstore;
struct store;

/* Thread-exit hooks a worker can hold (module-level per-thread state, such as S3's remote
   client). */
#define WORKER_MAX_HOOKS 4

struct worker {
    struct store *store;          /* the thread's Redis connection; NULL until worker_store() */
    struct objstore *os;          /* S3's object store on store; NULL until worker_objstore() */
    struct auth_cache cache;      /* verified principals (auth.c) */
    struct store_jobmemo jobmemo; /* DescribeTrainingJob answers (store_jobmemo.h) */
    char principal[512];          /* the ARN of the request being served ("" before auth) */
    void (*hooks[WORKER_MAX_HOOKS])(void);
    int nhooks;
};

/* The calling thread's context, created on first use. borrowed: valid until the thread ends.
   NULL only when out of memory. */
struct worker *worker_self(void);

/* The thread's Redis connection to url, opened on first use. borrowed (w owns it). NULL with
   err (-TY_EREDIS) when it cannot be opened. */
struct store *worker_store(struct worker *w, const char *url, struct ty_err *err);

/* The thread's object store handle on s3_dir (over worker_store's connection), opened on first
   use. borrowed. NULL with err on failure. */
struct objstore *worker_objstore(struct worker *w, const char *url, const char *s3_dir,
                                 struct ty_err *err);

/* Call after an error with code: -TY_EREDIS (or TY_EREDIS) closes the connection and the
   object store handle (the next worker_store reopens them); other codes do nothing. */
void worker_failed(struct worker *w, int code);

/* Registers fn to run when the thread ends (once per fn; at most WORKER_MAX_HOOKS). */
void worker_at_exit(struct worker *w, void (*fn)(void));

#endif
