/*
 * store_watch.c - a watch on a key prefix through Redis's client-side caching invalidations
 * (store_watch.h).
 *
 * The watch's connection asks for its own invalidations (CLIENT TRACKING on REDIRECT <its id>
 * BCAST PREFIX p: every change to a key under p, by any client, whether or not anyone read it)
 * and subscribes to __redis__:invalidate, where RESP2 delivers them as ["message", channel,
 * [keys...]], or a nil payload when Redis flushed its data.
 * Invariant: w->epoch moves whenever a change may not have been delivered, so an epoch that did
 * not move means every change since has been (or will at the next poll be) reported.
 */
#include "store_watch.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"
#include "ty_log.h"
#include "ty_time.h"

#define STORE_WATCH_CHANNEL   "__redis__:invalidate"
#define STORE_WATCH_RETRY_MS  1000
#define STORE_WATCH_MAX_READS 64 /* socket reads per poll; past it, the epoch moves instead */

/* Runs one setup command; 0 when its reply has type want (an integer is written into why),
   else -1 with the reason in why[0..n). */
static int store_watch_setup(redisContext *c, int argc, const char **argv, int want, char *why,
                             size_t n)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    int rc = 0;

    if (!r) {
        snprintf(why, n, "%s %s: %s", argv[0], argc > 1 ? argv[1] : "", c->errstr);
        return -1;
    }
    if (r->type != want) {
        snprintf(why, n, "%s %s: %s", argv[0], argc > 1 ? argv[1] : "",
                 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
        rc = -1;
    } else if (want == REDIS_REPLY_INTEGER) {
        snprintf(why, n, "%lld", r->integer); /* the client id, for the caller */
    }
    freeReplyObject(r);
    return rc;
}

/* Opens w's subscribed connection. 0, or -1 (logged once per outage; retried later). */
static int store_watch_open(struct store *s, struct store_watch *w)
{
    char why[300] = "", id[300];
    struct ty_err err;
    redisContext *c = store__dial(s, &err);

    if (!c) {
        snprintf(why, sizeof(why), "%.290s", err.msg);
    } else if (store_watch_setup(c, 2, (const char *[]){"CLIENT", "ID"}, REDIS_REPLY_INTEGER, id,
                                 sizeof(id)) < 0) {
        snprintf(why, sizeof(why), "%.290s", id);
    } else if (store_watch_setup(c, 8,
                                 (const char *[]){"CLIENT", "TRACKING", "on", "REDIRECT", id,
                                                  "BCAST", "PREFIX", w->prefix},
                                 REDIS_REPLY_STATUS, why, sizeof(why)) == 0 &&
               store_watch_setup(c, 2, (const char *[]){"SUBSCRIBE", STORE_WATCH_CHANNEL},
                                 REDIS_REPLY_ARRAY, why, sizeof(why)) == 0) {
        w->c = c;
        w->epoch++;
        if (w->failed)
            ty_log(TY_LOG_INFO, "store.watch_ok", "prefix=%s", w->prefix);
        w->failed = 0;
        return 0;
    }
    if (c)
        redisFree(c);
    if (!w->failed)
        ty_log(TY_LOG_WARN, "store.watch_failed", "prefix=%s err='%s' (reads go to redis)",
               w->prefix, why);
    w->failed = 1;
    w->retry_at_ms = ty_mono_ms() + STORE_WATCH_RETRY_MS;
    return -1;
}

/* Drops w's connection after a failure; logged once per outage. */
static void store_watch_lost(struct store_watch *w, const char *why)
{
    if (!w->failed)
        ty_log(TY_LOG_WARN, "store.watch_lost", "prefix=%s err='%s'", w->prefix, why);
    w->failed = 1;
    store_watch_close(w);
    w->retry_at_ms = ty_mono_ms() + STORE_WATCH_RETRY_MS;
}

/* Delivers one pushed message. 0, or -1 when it cannot be trusted to name every change (a
   flush, or a message of another shape): then the caller moves the epoch. */
static int store_watch_message(struct store_watch *w, const redisReply *r, store_watch_fn fn,
                               void *arg)
{
    const redisReply *p;
    size_t plen = strlen(w->prefix);

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "message") != 0)
        return -1;
    w->messages++;
    p = r->element[2];
    if (p->type == REDIS_REPLY_STRING) { /* one key, as some versions send it */
        if (p->len >= plen && memcmp(p->str, w->prefix, plen) == 0)
            fn(arg, p->str, p->len);
        return 0;
    }
    if (p->type != REDIS_REPLY_ARRAY) /* nil: FLUSHALL or FLUSHDB */
        return -1;
    for (size_t i = 0; i < p->elements; i++) {
        const redisReply *k = p->element[i];
        if (k->type != REDIS_REPLY_STRING)
            return -1;
        if (k->len >= plen && memcmp(k->str, w->prefix, plen) == 0)
            fn(arg, k->str, k->len);
    }
    return 0;
}

int store_watch_poll(struct store *s, struct store_watch *w, store_watch_fn fn, void *arg)
{
    if (!w->c && (ty_mono_ms() < w->retry_at_ms || store_watch_open(s, w) < 0))
        return 0;
    for (int reads = 0;; reads++) {
        struct pollfd pfd = {.fd = w->c->fd, .events = POLLIN, .revents = 0};
        void *reply = NULL;
        int n;

        while (redisGetReplyFromReader(w->c, &reply) == REDIS_OK && reply) {
            if (store_watch_message(w, reply, fn, arg) < 0)
                w->epoch++;
            freeReplyObject(reply);
            reply = NULL;
        }
        if (w->c->err) {
            store_watch_lost(w, w->c->errstr);
            return 0;
        }
        n = poll(&pfd, 1, 0);
        if (n == 0)
            return 1;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            store_watch_lost(w, "poll failed");
            return 0;
        }
        if (reads == STORE_WATCH_MAX_READS) { /* a flood: what is still unread may name a key */
            w->epoch++;
            return 1;
        }
        if (redisBufferRead(w->c) != REDIS_OK) {
            store_watch_lost(w, w->c->errstr);
            return 0;
        }
    }
}

void store_watch_close(struct store_watch *w)
{
    if (w->c) {
        redisFree(w->c);
        w->c = NULL;
    }
    w->epoch++;
}
