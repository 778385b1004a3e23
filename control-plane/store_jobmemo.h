/*
 * store_jobmemo.h - a per-thread memo of answers built from job documents: a read is still one
 * HGETALL of ty:job:<name>, but when the reply is byte for byte one this thread answered before,
 * the answer's text is reused instead of parsing the document and serialising it again
 * (DescribeTrainingJob, ops/training.c).
 *
 * Owns: the memo (per entry: the job's name and reply bytes, and the answer's text), its LRU
 * replacement and the byte comparison. Does not own: what the answer is; its caller may memoise
 * only an answer that is a pure function of the stored document (not of the time or the caller).
 * Since any change to the job changes its hash, a memoised answer is never stale.
 * Thread-safety: a memo belongs to one thread (struct worker holds one).
 */
#ifndef TY_CP_STORE_JOBMEMO_H
#define TY_CP_STORE_JOBMEMO_H

#include <jansson.h>
#include <stddef.h>

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
    unsigned long long used; /* LRU tick */
};

/* Zero-initialised before use; store_jobmemo_cleanup frees it. */
struct store_jobmemo {
    struct store_jobmemo_entry e[STORE_JOBMEMO_N];
    struct ty_buf cur; /* the key of the last read that returned a document */
    int cur_ok;        /* 1 when cur may be attached to an answer (store_jobmemo_put) */
    unsigned long long tick;
};

/*
 * Reads job name with one HGETALL. When m holds an answer for exactly this stored document:
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

/* Frees every entry of m. m may be NULL. */
void store_jobmemo_cleanup(struct store_jobmemo *m);

#endif
