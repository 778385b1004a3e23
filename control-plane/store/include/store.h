/*
 * store.h - trainyard's state in Redis (hiredis); every key is listed in
 * docs/internals/redis-keys.md.
 *
 * Owns: the `ty:` key space, the connection, and the Lua scripts (control-plane/store/lua/, loaded
 * with SCRIPT LOAD and called by EVALSHA, reloaded on NOSCRIPT). Keys:
 *   ty:job:<name>            training job: the DescribeTrainingJob JSON document, as a hash
 *                            of top-level member -> that member's JSON text (so that Lua
 *                            edits members without re-encoding the rest)
 *   ty:idx:job               sorted set, name scored by CreationTime (creation-time index)
 *   ty:idx:job:status:<st>   set of the job names whose TrainingJobStatus is st (kept by the
 *                            scripts; StatusEquals and SortBy=Status read it, not the docs)
 *   ty:tags:<arn>            hash, tag key -> value
 *   ty:principal:<akid>      hash: secret, arn, user
 *   ty:log:<group>:<stream>  stream of log events (entry id = CloudWatch token)
 *   ty:logstreams:<group>    sorted set of stream names (score 0, ordered by name, so a prefix
 *                            is a ZRANGEBYLEX) + hash ty:logstream:<group>:<stream> per stream
 *                            (creationTime, first/lastEventTimestamp, lastIngestionTime,
 *                            storedBytes)
 *   ty:queue:training        the job queue (queue.h), ty:agent:<id> heartbeats (queue.h)
 * Invariants: a job document changes only through the one transition script (compare status,
 * write the new one, append SecondaryStatusTransitions, set LastModifiedTime) - never by a
 * read-modify-write from C. Documents round-trip exactly: Lua's cjson turns empty arrays into
 * {} and limits number precision, so the store normalises both ways (known array members stay
 * arrays; epoch timestamps keep milliseconds).
 * Thread-safety: a struct store is one hiredis connection; use one per thread.
 * A call whose connection broke (Redis restarted) reconnects once and retries; a write that
 * reached Redis before the break may then be applied twice. store_open ignores SIGPIPE when
 * its disposition is still the default, so that such a break is an error, not a signal.
 */
#ifndef TY_CP_STORE_H
#define TY_CP_STORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "ty_err.h"

struct store;

/*
 * Connects to url: redis://[:password@]host[:port][/db] or unix:///path/to/socket[?db=N].
 * Loads the Lua scripts. new: caller frees with store_close(). NULL and err (-TY_EREDIS with a
 * one-line reason) on failure.
 */
struct store *store_open(const char *url, struct ty_err *err);
void store_close(struct store *s);
/* Region and account used in the ARNs the store builds (log streams). Defaults: us-east-1,
   000000000000. Call before sharing s. */
void store_set_identity(struct store *s, const char *region, const char *account);
/* PING. 0 or -TY_EREDIS. */
int store_ping(struct store *s, struct ty_err *err);
/* The deployment's id: ty:deployment, STORE_DEPLOYMENT_LEN hex digits drawn once by the first
   caller and kept with the data; it tells this deployment's containers from another's on a
   shared engine. OUT: out (size >= STORE_DEPLOYMENT_LEN + 1). 0 or -TY_EREDIS. */
#define STORE_DEPLOYMENT_LEN 16
int store_deployment_id(struct store *s, char *out, size_t n, struct ty_err *err);
/* Number of training jobs whose TrainingJobStatus is status (its index set), or -1 (err). */
long store_job_count(struct store *s, const char *status, struct ty_err *err);

/* ---- training jobs ---- */

/*
 * Creates job name with document doc (borrowed; the full Describe document with status
 * InProgress/Starting) indexed at created (epoch seconds), and enqueues it on
 * ty:queue:training, all in one Lua call. Returns 0, or -TY_EINUSE when the name exists.
 */
int store_job_create(struct store *s, const char *name, json_t *doc, double created,
                     struct ty_err *err);

/* new: the job document, or NULL with -TY_ENOTFOUND ("Requested resource not found.") in err. */
json_t *store_job_get(struct store *s, const char *name, struct ty_err *err);

struct store_transition {
    const char *expect; /* comma-separated TrainingJobStatus values the job must be in, NULL=any */
    const char *expect_secondary; /* same for SecondaryStatus, NULL=any */
    const char *status;           /* new TrainingJobStatus, NULL keeps it */
    const char *secondary; /* new SecondaryStatus, NULL keeps it (no transition is appended) */
    const char *message;   /* StatusMessage of the appended transition */
    json_t *set;           /* borrowed, may be NULL: top-level members written into the doc
                              (a JSON null value removes the member) */
    double now; /* epoch seconds: transition StartTime/previous EndTime, LastModifiedTime */
};

/*
 * Applies t to job name atomically (one Lua script). Returns the new document (new: caller
 * decrefs), or NULL with -TY_ENOTFOUND, or -TY_ECONFLICT when the current status does not match
 * t->expect (err->msg then holds the current TrainingJobStatus, nothing else).
 * When status or secondary is unchanged from the current value no duplicate transition is added;
 * a secondary that stays with another message restates it: the open transition's StatusMessage
 * becomes message.
 */
json_t *store_job_transition(struct store *s, const char *name, const struct store_transition *t,
                             struct ty_err *err);

/* Deletes a job and its index entry, only when its status is one of expect (comma list).
   0, -TY_ENOTFOUND, or -TY_ECONFLICT (msg = current status). */
int store_job_delete(struct store *s, const char *name, const char *expect, struct ty_err *err);

struct store_job_query {
    const char *name_contains;              /* NULL = any */
    const char *status_equals;              /* NULL = any */
    double created_after, created_before;   /* 0 = unset; strict comparisons as AWS */
    double modified_after, modified_before; /* 0 = unset */
    const char *sort_by;                    /* "Name", "CreationTime" (default), "Status" */
    int ascending;                          /* 0 = Descending (AWS's default) */
    int max_results;                        /* 1..100 */
    const char *next_token;                 /* from a previous page, NULL for the first */
    const char *warm_pool_status;           /* WarmPoolStatus.Status, NULL = any */
};

/*
 * One page of jobs matching q. Returns a new array of job documents (caller decrefs); OUT:
 * *next_token is a new string (caller frees) when more results remain, else NULL.
 * An unreadable next_token gives -TY_EINVAL ("Invalid pagination token").
 */
json_t *store_job_list(struct store *s, const struct store_job_query *q, char **next_token,
                       struct ty_err *err);

/* ---- tags (any resource, keyed by ARN) ---- */

/* Adds or overwrites tags (borrowed array of {"Key","Value"}). 0 or error. */
int store_tags_add(struct store *s, const char *arn, json_t *tags, struct ty_err *err);
/* new: array of {"Key","Value"} sorted by key (empty array when none). */
json_t *store_tags_list(struct store *s, const char *arn, struct ty_err *err);
/* new: an array of n members, one per arn: the value of tag `key` of that resource (string), or
   null without it; one pipelined round trip per STORE_TAGS_BATCH resources. NULL and err on
   failure. */
#define STORE_TAGS_BATCH 256
json_t *store_tags_value_many(struct store *s, const char *const *arns, size_t n, const char *key,
                              struct ty_err *err);
/* Removes the keys (borrowed array of strings). */
int store_tags_delete(struct store *s, const char *arn, json_t *keys, struct ty_err *err);
/* Removes every tag of arn. */
int store_tags_clear(struct store *s, const char *arn, struct ty_err *err);

/* ---- principals (SigV4 credentials; IAM policies attach to the arn later) ---- */

/* Stores a principal: access key id -> secret, arn, user name. Overwrites. */
int store_principal_put(struct store *s, const char *access_key, const char *secret,
                        const char *arn, const char *user, struct ty_err *err);
/* Looks up access_key; OUT: secret/arn (NUL-terminated, truncated to their sizes).
   0 or -TY_ENOTFOUND (also for a key made Inactive by IAM UpdateAccessKey). */
int store_principal_get(struct store *s, const char *access_key, char *secret, size_t secret_n,
                        char *arn, size_t arn_n, struct ty_err *err);

/* ---- CloudWatch Logs events ---- */

/*
 * Appends events to group/stream, creating the stream (and its entry in the group's stream
 * index) on first use. msgs is a borrowed array of {"timestamp": ms, "message": "..."}; the
 * stream's lastEventTimestamp / lastIngestionTime / storedBytes are kept up to date.
 */
int store_log_append(struct store *s, const char *group, const char *stream, json_t *events,
                     struct ty_err *err);

/* Number of events in group/stream (0 when it does not exist), or a negative error. */
long store_log_count(struct store *s, const char *group, const char *stream, struct ty_err *err);

/*
 * Streams of group whose names start with prefix (NULL = all), ordered by name (or by
 * lastEventTimestamp when by_last_event), as CloudWatch's DescribeLogStreams objects
 * (logStreamName, creationTime, firstEventTimestamp, lastEventTimestamp, lastIngestionTime,
 * uploadSequenceToken, arn, storedBytes). new: array. Empty array for an unknown group.
 */
json_t *store_log_streams(struct store *s, const char *group, const char *prefix, int by_last_event,
                          int descending, struct ty_err *err);

/*
 * The creation time (epoch ms) of log group group: the one recorded (ty:loggroup:<group>:created)
 * or, the first time, candidate_ms, recorded then (SET NX, so concurrent first calls agree).
 * Returns it, or -1 (err).
 */
long long store_log_group_created(struct store *s, const char *group, long long candidate_ms,
                                  struct ty_err *err);
/* The recorded creation time of group, 0 when none yet, -1 (err). */
long long store_log_group_created_get(struct store *s, const char *group, struct ty_err *err);

/*
 * Raw event range of one stream: entries with stream ids in [start_id, end_id] ("-" and "+"
 * for open ends), at most count, in reverse order when reverse. Returns a new array of
 * {"id": "<stream id>", "timestamp": ms, "message": "...", "ingestionTime": ms}.
 * -TY_ELOGNOTFOUND when the stream does not exist.
 */
json_t *store_log_range(struct store *s, const char *group, const char *stream,
                        const char *start_id, const char *end_id, int reverse, int count,
                        struct ty_err *err);

#endif
