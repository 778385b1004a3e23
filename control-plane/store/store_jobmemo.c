/*
 * store_jobmemo.c - the per-thread memo of answers built from job documents (store_jobmemo.h).
 *
 * Invariant: an entry's key is the job's name, a NUL, then for each element of the HGETALL reply
 * its length (4 bytes, host order) and its bytes; two reads with equal keys returned the same
 * document, so the answer built from the first serves the second. An entry's watched flag is set
 * only from a read made after a poll that found the watch running, in the epoch of that poll.
 */
#include "store_jobmemo.h"

#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define STORE_JOBMEMO_PREFIX "ty:job:"

/* OUT: m->cur = the key of name's reply r; 0, or -1 when r cannot be memoised. */
static int store_jobmemo_key(struct store_jobmemo *m, const char *name, const redisReply *r)
{
    ty_buf_reset(&m->cur);
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
        ty_buf_append(&m->cur, name, strlen(name) + 1) != 0)
        return -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        uint32_t n;
        if (e->type != REDIS_REPLY_STRING || e->len > STORE_JOBMEMO_MAX)
            return -1;
        n = (uint32_t)e->len;
        if (ty_buf_append(&m->cur, &n, sizeof(n)) != 0 || ty_buf_append(&m->cur, e->str, n) != 0)
            return -1;
    }
    return 0;
}

/* 1 when e's key is name's reply r (compared in place, without building r's key). */
static int store_jobmemo_same(const struct store_jobmemo_entry *e, const char *name,
                              const redisReply *r)
{
    size_t nl = strlen(name) + 1, off = nl;

    if (!e->key || e->key_len < nl || memcmp(e->key, name, nl) != 0 || r->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *x = r->element[i];
        uint32_t n;
        if (x->type != REDIS_REPLY_STRING || e->key_len - off < sizeof(n))
            return 0;
        memcpy(&n, e->key + off, sizeof(n));
        off += sizeof(n);
        if (n != x->len || e->key_len - off < n || memcmp(e->key + off, x->str, n) != 0)
            return 0;
        off += n;
    }
    return off == e->key_len;
}

/* The entry holding name's reply r, or NULL. */
static struct store_jobmemo_entry *store_jobmemo_find(struct store_jobmemo *m, const char *name,
                                                      const redisReply *r)
{
    for (int i = 0; i < STORE_JOBMEMO_N; i++) {
        if (store_jobmemo_same(&m->e[i], name, r))
            return &m->e[i];
    }
    return NULL;
}

/* The entry of job name (whatever its document), or NULL. */
static struct store_jobmemo_entry *store_jobmemo_named(struct store_jobmemo *m, const char *name,
                                                       size_t len)
{
    for (int i = 0; i < STORE_JOBMEMO_N; i++) {
        struct store_jobmemo_entry *e = &m->e[i];
        if (e->key && e->key_len > len && memcmp(e->key, name, len) == 0 && e->key[len] == '\0')
            return e;
    }
    return NULL;
}

/* store_watch_fn: key (ty:job:<name>) changed, so its entry is no longer vouched for. */
static void store_jobmemo_forget(void *arg, const char *key, size_t len)
{
    size_t plen = sizeof(STORE_JOBMEMO_PREFIX) - 1;
    struct store_jobmemo_entry *e = store_jobmemo_named(arg, key + plen, len - plen);
    if (e)
        e->watched = 0;
}

/* OUT: *text, *len = a copy of e's answer; 1, or 0 when memory is short. */
static int store_jobmemo_answer(struct store_jobmemo *m, struct store_jobmemo_entry *e, char **text,
                                size_t *len)
{
    if (!(*text = malloc(e->text_len + 1)))
        return 0;
    memcpy(*text, e->text, e->text_len + 1);
    *len = e->text_len;
    e->used = ++m->tick;
    return 1;
}

int store_jobmemo_get(struct store *s, struct store_jobmemo *m, const char *name, json_t **doc,
                      char **text, size_t *len, struct ty_err *err)
{
    char key[STORE_KEY_MAX];
    struct store_jobmemo_entry *e;
    redisReply *r;

    *doc = NULL;
    *text = NULL;
    *len = 0;
    if (store__key(key, sizeof(key), STORE_JOBMEMO_PREFIX, name, NULL, err) < 0)
        return -err->code;
    if (m) {
        if (!m->cur.max)
            ty_buf_init(&m->cur, STORE_JOBMEMO_MAX);
        m->cur_ok = 0;
        if (!m->watch.prefix)
            m->watch.prefix = STORE_JOBMEMO_PREFIX;
        m->cur_watched = store_watch_poll(s, &m->watch, store_jobmemo_forget, m);
        m->cur_epoch = m->watch.epoch;
        m->cur_writes = store__job_writes();
        e = store_jobmemo_named(m, name, strlen(name));
        if (m->cur_watched && e && e->watched && e->epoch == m->cur_epoch &&
            e->writes == m->cur_writes && store_jobmemo_answer(m, e, text, len)) {
            m->unread++;
            return 1;
        }
    }
    if (!(r = store__cmdv(s, err, "HGETALL", key, NULL)))
        return -err->code;
    if (m && (e = store_jobmemo_find(m, name, r)) && store_jobmemo_answer(m, e, text, len)) {
        e->watched = m->cur_watched;
        e->epoch = m->cur_epoch;
        e->writes = m->cur_writes;
        freeReplyObject(r);
        return 1;
    }
    if (m && store_jobmemo_key(m, name, r) == 0)
        m->cur_ok = 1;
    *doc = store__doc_from_reply(r, err);
    freeReplyObject(r);
    if (!*doc) {
        if (m)
            m->cur_ok = 0;
        return -err->code;
    }
    return 0;
}

void store_jobmemo_put(struct store_jobmemo *m, const char *text, size_t len)
{
    struct store_jobmemo_entry *victim;
    const char *name;
    char *k, *t;

    if (!m || !m->cur_ok || !text)
        return;
    m->cur_ok = 0;
    name = m->cur.data;
    victim = &m->e[0];
    for (int i = 0; i < STORE_JOBMEMO_N; i++) {
        struct store_jobmemo_entry *e = &m->e[i];
        if (e->key && strcmp(e->key, name) == 0) { /* the same job's older document */
            victim = e;
            break;
        }
        if (!e->key || (victim->key && e->used < victim->used))
            victim = e;
    }
    k = malloc(m->cur.len);
    t = malloc(len + 1);
    if (!k || !t) {
        free(k);
        free(t);
        return;
    }
    memcpy(k, m->cur.data, m->cur.len);
    memcpy(t, text, len);
    t[len] = '\0';
    free(victim->key);
    free(victim->text);
    victim->key = k;
    victim->key_len = m->cur.len;
    victim->text = t;
    victim->text_len = len;
    victim->used = ++m->tick;
    victim->watched = m->cur_watched;
    victim->epoch = m->cur_epoch;
    victim->writes = m->cur_writes;
}

void store_jobmemo_cleanup(struct store_jobmemo *m)
{
    if (!m)
        return;
    for (int i = 0; i < STORE_JOBMEMO_N; i++) {
        free(m->e[i].key);
        free(m->e[i].text);
    }
    ty_buf_cleanup(&m->cur);
    store_watch_close(&m->watch);
    memset(m, 0, sizeof(*m));
}
