/*
 * store_watch.h - a watch on a key prefix: Redis's client-side caching invalidations (CLIENT
 * TRACKING ... BCAST PREFIX) delivered to a subscribed connection of the watch's own, so that a
 * thread may keep what it read under that prefix and use it again until Redis says it changed.
 *
 * Owns: the subscribed connection, its (re)connection with a back-off, and the epoch: a counter
 * bumped whenever the watch may have missed a change (the connection broke, Redis flushed its
 * data, too many messages at once), after which nothing read earlier may be trusted.
 * Does not own what is kept (store_jobmemo.c keeps answers).
 * Ordering: Redis queues a change's invalidation while it runs the write and sends it in the same
 * pass of its event loop as the writer's reply (not always before it: measured, a reader in the
 * writer's process can be microseconds ahead), and store_watch_poll reads every byte already on
 * the socket; so a change is reported by the first poll after Redis sent it. A caller that needs
 * its own process's writes seen at once counts them itself (store__job_writes).
 * Thread-safety: a watch belongs to one thread.
 */
#ifndef TY_CP_STORE_WATCH_H
#define TY_CP_STORE_WATCH_H

#include <stddef.h>

struct store;
struct redisContext;

/* Zero-initialised before use (prefix set); store_watch_close frees it. */
struct store_watch {
    const char *prefix;          /* borrowed: the key prefix watched (a string literal) */
    struct redisContext *c;      /* owned: the subscribed connection, NULL when none */
    unsigned long long epoch;    /* bumped when a change may have been missed */
    long long retry_at_ms;       /* no new connection before this (monotonic ms) */
    unsigned long long messages; /* invalidations received (for tests and figures) */
    int failed;                  /* the last attempt to watch failed (logged once per outage) */
};

/* Called with each changed key (len bytes, not NUL-terminated) that starts with the prefix. */
typedef void (*store_watch_fn)(void *arg, const char *key, size_t len);

/*
 * Connects w when it has no connection (at most once a second after a failure), then delivers
 * every invalidation already on its socket to fn. Returns 1 when w is watching: a key under the
 * prefix read from Redis after this call, while w->epoch keeps its value, is reported to fn when
 * it changes. Returns 0 when not watching (Redis older than 6, CLIENT refused by an ACL, Redis
 * down): then nothing kept may be trusted.
 */
int store_watch_poll(struct store *s, struct store_watch *w, store_watch_fn fn, void *arg);

/* Closes w's connection (w->epoch is bumped); w may be polled again. */
void store_watch_close(struct store_watch *w);

#endif
