/*
 * outbox.h - what a job's runner could not write to Redis (status transitions, log events, the
 * queue ack), kept on disk in order and replayed, in order, once Redis is back.
 *
 * Owns: <data_dir>/outbox/<job>.jsonl (one record per line: {"seq":N,"k":"t"|"l"|"m"|"a",...},
 * appended with O_APPEND and fsync'ed before outbox_* returns) and <data_dir>/outbox/<job>.done
 * (the last seq applied, fsync'ed after each record, so a replay cut short by a crash resumes
 * after what was applied and never appends a log batch twice). A fully replayed outbox is
 * removed. Bounded: a job's outbox stops taking log events past OUTBOX_MAX_BYTES (counted as
 * dropped); transitions and the ack are always kept.
 * Replay is idempotent for transitions (job_transition.lua with the recorded `expect`): one
 * already applied (the job is in its target status, or terminal) is skipped; a final Completed or
 * Failed that meets a Stopping job (StopTrainingJob won meanwhile) is recorded as Stopped.
 * Thread-safety: one job's outbox is written and replayed by one thread at a time (its runner,
 * or the claim loop for leftovers of an earlier run of the agent).
 */
#ifndef TY_CP_AGENT_OUTBOX_H
#define TY_CP_AGENT_OUTBOX_H

#include <jansson.h>
#include <stddef.h>

#include "store.h"
#include "store_metrics.h"
#include "ty_err.h"

#define OUTBOX_MAX_BYTES (64L * 1024 * 1024)

/* 1 when job has an outbox not yet replayed, else 0. */
int outbox_pending(const char *data_dir, const char *job);

/* Appends a transition (as store_job_transition's t; t->set borrowed). 0 or -TY_EIO. */
int outbox_transition(const char *data_dir, const char *job, const struct store_transition *t,
                      struct ty_err *err);

/* Appends log events (borrowed JSON array) for stream with the job's identity (region,
   account: store_set_identity; account may be ""). 0, 1 when the outbox is full (dropped), or
   -TY_EIO. */
int outbox_logs(const char *data_dir, const char *job, const char *region, const char *account,
                const char *stream, json_t *events, struct ty_err *err);

/* Appends CloudWatch metric points (p[n]) of series ns/metric/dims (dims borrowed), put again
   with store_metrics_put on replay (idempotent: a point's member is its ts, seq and value).
   0, 1 when the outbox is full (dropped), or -TY_EIO. */
int outbox_metrics(const char *data_dir, const char *job, const char *ns, const char *metric,
                   json_t *dims, const struct store_metric_point *p, size_t n, struct ty_err *err);

/* Appends the queue ack of entry_id (the job is terminal once what precedes it is applied). */
int outbox_ack(const char *data_dir, const char *job, const char *entry_id, struct ty_err *err);

/*
 * Replays job's outbox with s, in order, from the first record not yet applied; removes it
 * when every record is applied. Returns 0 (nothing left), or a negative code with err when a
 * record could not be applied (Redis away again: the rest stays for the next replay).
 */
int outbox_replay(struct store *s, const char *data_dir, const char *job, struct ty_err *err);

/*
 * Replays every outbox under data_dir (left by an earlier run of the agent). skip(job, ud)
 * returning 1 leaves that job's outbox alone (a runner of this agent owns it). Returns the
 * number of outboxes still pending after the pass, or -1 when the folder cannot be read.
 */
int outbox_replay_all(struct store *s, const char *data_dir, int (*skip)(const char *, void *),
                      void *ud);

#endif
