/*
 * store_jobmemo.h - a per-thread memo of answers built from job documents (DescribeTrainingJob,
 * ops/training.c). While the memo's watch on ty:job:* (store_watch.h) runs, an answer whose job
 * has not changed since it was read is served without asking Redis at all; otherwise a read is
 * one HGETALL of ty:job:<name>, and when the reply is byte for byte one this thread answered
 * before, the answer's text is reused instead of parsing the document and serialising it again.
 *
 * Owns: the memo (per entry: the job's name and reply bytes, the answer's text, and whether the
 * watch vouches for it), its LRU replacement, the byte comparison, and the watch. Does not own
 * what the answer is; its caller may memoise only an answer that is a pure function of the
 * stored document (not of the time or the caller).
 * Invariant: an answer is served without a read only when its entry was read while the watch ran
 * (same epoch), no invalidation of its key has arrived since, and no job document was written by
 * this process since (store__job_writes). So a read that starts after a write made in this
 * process returned (the API's writes, the embedded agents' transitions) always sees it; a write
 * made by another process (an agent of its own, a redis-cli) is seen once its invalidation has
 * arrived, which Redis sends in the same pass of its event loop as the writer's reply.
 * Thread-safety: a memo belongs to one thread (struct worker holds one).
 */
#ifndef TY_CP_STORE_JOBMEMO_H
#define TY_CP_STORE_JOBMEMO_H

#include <jansson.h>
#include <stddef.h>

#include "store_watch.h"
#include "ty_buf.h"
#include "ty_err.h"

struct store;

/* Answers kept per thread, and the largest reply memoised (bytes). */
#define STORE_JOBMEMO_N   8
#define STORE_JOBMEMO_MAX (256u * 1024u)

struct store_jobmemo_entry {
    char *key; /* owned: the name, a NUL, then the reply's fields (length-prefixed); NULL = free */
    size_t key_len;
    char *text; /* owned: the answer */
    size_t text_len;
    unsigned long long used;   /* LRU tick */
    unsigned long long epoch;  /* the watch's epoch when the entry's document was read */
    unsigned long long writes; /* store__job_writes() then */
    int watched;               /* 1: read while watching, and no invalidation of it since */
};

/* Zero-initialised before use; store_jobmemo_cleanup frees it. */
struct store_jobmemo {
    struct store_jobmemo_entry e[STORE_JOBMEMO_N];
    struct ty_buf cur; /* the key of the last read that returned a document */
    int cur_ok;        /* 1 when cur may be attached to an answer (store_jobmemo_put) */
    int cur_watched;   /* the watch ran when cur was read, in epoch cur_epoch */
    unsigned long long cur_epoch, cur_writes;
    unsigned long long tick;
    unsigned long long unread; /* answers served without a read (for tests and figures) */
    struct store_watch watch;  /* invalidations of ty:job:* */
};

/*
 * Reads job name with one HGETALL, or with none when m holds an answer the watch vouches for.
 * When m holds an answer for exactly this stored document:
 * OUT: *text = a copy of it (malloc'd, caller frees), *len its length, *doc = NULL; returns 1.
 * Otherwise OUT: *doc = the document (new, as store_job_get builds it), *text = NULL; returns 0,
 * and store_jobmemo_put may attach the answer to that document. m may be NULL (no memo).
 * -TY_ENOTFOUND ("Requested resource not found.") or another -TY_E* with err, as store_job_get.
 */
int store_jobmemo_get(struct store *s, struct store_jobmemo *m, const char *name, json_t **doc,
                      char **text, size_t *len, struct ty_err *err);

/* Keeps text[0..len) (copied) as the answer to the document the last store_jobmemo_get on m
   returned (0); replaces the same job's older answer, else the least recently used one. Does
   nothing when that read returned no document, or when memory is short. m may be NULL. */
void store_jobmemo_put(struct store_jobmemo *m, const char *text, size_t len);

/* Frees every entry of m and closes its watch. m may be NULL. */
void store_jobmemo_cleanup(struct store_jobmemo *m);

#endif
