/*
 * authgen.c - the generation of authentication and authorisation data (authgen.h).
 *
 * Invariant: gen only grows; remote holds the last value of AUTHGEN_KEY seen (-1: none yet),
 * polled_ms the time of the last poll started. A poll is claimed by a compare-and-swap on
 * polled_ms, so at most one thread polls at a time and the others never wait.
 */
#include "authgen.h"

#include "store_int.h"
#include "ty_log.h"
#include "ty_time.h"

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static _Atomic unsigned long long authgen_gen = 1;
static _Atomic long long authgen_remote = -1;
static _Atomic long long authgen_polled_ms;

/* Reads AUTHGEN_KEY; a value other than the last one seen (or a failure) bumps gen. */
static void authgen_poll(struct store *s)
{
    struct ty_err err;
    redisReply *r;
    long long v = -2;

    ty_err_clear(&err);
    r = store__cmdv(s, &err, "GET", AUTHGEN_KEY, NULL);
    if (r && r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    else if (r && r->type == REDIS_REPLY_NIL)
        v = 0;
    if (r)
        freeReplyObject(r);
    if (v == -2 || atomic_exchange(&authgen_remote, v) != v)
        atomic_fetch_add(&authgen_gen, 1);
}

unsigned long long authgen_current(struct store *s)
{
    long long now = ty_mono_ms(), last = atomic_load(&authgen_polled_ms);

    if (s && now - last >= AUTHGEN_POLL_MS &&
        atomic_compare_exchange_strong(&authgen_polled_ms, &last, now))
        authgen_poll(s);
    return atomic_load(&authgen_gen);
}

void authgen_changed(struct store *s)
{
    struct ty_err err;
    redisReply *r;

    atomic_fetch_add(&authgen_gen, 1);
    if (!s)
        return;
    ty_err_clear(&err);
    r = store__cmdv(s, &err, "INCR", AUTHGEN_KEY, NULL);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        ty_log(TY_LOG_WARN, "authgen.incr", "msg=\"%s\"",
               err.msg[0] ? err.msg : "unexpected reply to INCR");
    else
        atomic_store(&authgen_remote, r->integer); /* our own change: no second bump */
    if (r)
        freeReplyObject(r);
    atomic_fetch_add(&authgen_gen, 1);
}
