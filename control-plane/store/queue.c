/*
 * queue.c - the training-job queue (a Redis Stream with consumer group `agents`) and agent
 * liveness (ty:agent:<id> keys with a TTL).
 *
 * Owns: ty:queue:training's consumer group, the heartbeat keys, fair share's records of what
 * each running job holds (ty:share:held) and of each principal's last turn (ty:share:turn),
 * both written when a job is taken, and the reclaim rule: an
 * entry moves to another agent only when its consumer has no heartbeat key and it has been
 * idle at least min_idle_ms; XCLAIM's own min-idle check makes two reclaimers race safely.
 * Does not own the entries' creation (store_job_create adds them in its Lua call).
 * Invariants: entries are XACKed and XDELed together, so XLEN = undelivered + pending.
 * The group is created from id 0 so that entries added before it are delivered; when Redis
 * loses it (a restart without persistence) a NOGROUP reply recreates it once.
 */
#include "queue.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "store_lua.h"
#include "store_script.h"

#define QUEUE_GROUP     "agents"
#define QUEUE_AGENT_KEY "ty:agent:"
#define QUEUE_PENDING_N 100
#define QUEUE_ID_MAX    64
#define QUEUE_AGENT_MAX 256
#define QUEUE_EVAL_ARGS 6 /* the most ARGV queue.lua takes after the group */
#define QUEUE_TURN_KEY  "ty:share:turn"

int queue_init(struct store *s, struct ty_err *err)
{
    redisReply *r =
        store__cmdv(s, err, "XGROUP", "CREATE", QUEUE_KEY, QUEUE_GROUP, "0", "MKSTREAM", NULL);
    int rc = 0;
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9) != 0)
        rc = store__reply_err(r, "XGROUP CREATE", err);
    freeReplyObject(r);
    return rc;
}

static int queue_is_nogroup(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOGROUP", 7) == 0;
}

static int queue_agent_ok(const char *agent_id, struct ty_err *err)
{
    if (!agent_id || !*agent_id || strlen(agent_id) >= QUEUE_AGENT_MAX)
        return ty_err_set(err, TY_EINVAL, NULL, "bad agent id");
    return 0;
}

/* Fills item from one stream entry [id, [field, value, ...]]; 0 or -1 when malformed (no job). */
static int queue_item_from(const redisReply *e, struct queue_item *item)
{
    const redisReply *f;
    int found = 0;

    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != REDIS_REPLY_STRING)
        return -1;
    f = e->element[1];
    if (f->type != REDIS_REPLY_ARRAY)
        return -1;
    item->principal[0] = '\0';
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        const redisReply *k = f->element[i], *v = f->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            continue;
        if (strcmp(k->str, "job") == 0) {
            snprintf(item->entry_id, sizeof(item->entry_id), "%s", e->element[0]->str);
            snprintf(item->job, sizeof(item->job), "%s", v->str);
            found = 1;
        } else if (strcmp(k->str, "principal") == 0) {
            snprintf(item->principal, sizeof(item->principal), "%s", v->str);
        }
    }
    return found ? 0 : -1;
}

static struct store_script queue_script = STORE_SCRIPT_INIT(store__lua_queue, "queue.lua");

/* EVALSHA queue.lua with argv[0..n) after the keys and the group; recreates a lost group once.
   new: the reply (an error reply is mapped into err and freed: NULL). */
static redisReply *queue_eval(struct store *s, int n, const char **argv, const char *what,
                              struct ty_err *err)
{
    const char *v[QUEUE_EVAL_ARGS + 4] = {QUEUE_KEY, QUEUE_SHARE_KEY, QUEUE_TURN_KEY, QUEUE_GROUP};

    for (int i = 0; i < n && i < QUEUE_EVAL_ARGS; i++)
        v[4 + i] = argv[i];
    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *r = store_script_eval(s, &queue_script, 3, 4 + n, v, NULL, err);
        if (!r)
            return NULL;
        if (queue_is_nogroup(r) && attempt == 0) {
            freeReplyObject(r);
            if (queue_init(s, err) < 0)
                return NULL;
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            store__reply_err(r, what, err);
            freeReplyObject(r);
            return NULL;
        }
        return r;
    }
    ty_err_set(err, TY_EREDIS, NULL, "redis: %s: no consumer group", what);
    return NULL;
}

int queue_waiting(struct store *s, size_t max, const struct queue_res *total,
                  struct queue_item *items, size_t *n, char *last_id, size_t last_n,
                  struct ty_err *err)
{
    char maxs[24], tg[24], tc[24], tm[24];
    const char *argv[5] = {"waiting", maxs, tg, tc, tm};
    redisReply *r;

    *n = 0;
    if (max == 0 || max > QUEUE_WAITING_MAX)
        return ty_err_set(err, TY_EINVAL, NULL, "queue_waiting: max is 1..%d", QUEUE_WAITING_MAX);
    snprintf(maxs, sizeof(maxs), "%zu", max);
    snprintf(tg, sizeof(tg), "%lld", total && total->gpus > 0 ? total->gpus : 0);
    snprintf(tc, sizeof(tc), "%lld", total && total->cpus > 0 ? total->cpus : 0);
    snprintf(tm, sizeof(tm), "%lld", total && total->memory_bytes > 0 ? total->memory_bytes : 0);
    if (!(r = queue_eval(s, 5, argv, "queue.lua waiting", err)))
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->elements % 3 != 1 ||
        r->element[0]->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return ty_err_set(err, TY_EREDIS, NULL, "redis: queue.lua waiting: unexpected reply");
    }
    if (last_id)
        snprintf(last_id, last_n, "%s", r->element[0]->str);
    for (size_t i = 1; i + 2 < r->elements && *n < max; i += 3) {
        const redisReply *id = r->element[i], *job = r->element[i + 1], *who = r->element[i + 2];
        if (id->type != REDIS_REPLY_STRING || job->type != REDIS_REPLY_STRING ||
            who->type != REDIS_REPLY_STRING)
            continue;
        snprintf(items[*n].entry_id, sizeof(items[*n].entry_id), "%s", id->str);
        snprintf(items[*n].job, sizeof(items[*n].job), "%s", job->str);
        snprintf(items[*n].principal, sizeof(items[*n].principal), "%s", who->str);
        (*n)++;
    }
    freeReplyObject(r);
    return 0;
}

int queue_take(struct store *s, const char *agent_id, const struct queue_item *it,
               const struct queue_res *held, struct ty_err *err)
{
    static const struct queue_res none;
    char rec[QUEUE_PRINCIPAL_MAX + 80];
    const char *argv[5] = {"take", agent_id, it ? it->entry_id : "", it ? it->job : "", rec};
    redisReply *r;
    int rc;

    if (queue_agent_ok(agent_id, err) < 0)
        return -TY_EINVAL;
    if (!it || !*it->entry_id || strlen(it->entry_id) > QUEUE_ID_MAX)
        return ty_err_set(err, TY_EINVAL, NULL, "bad entry id");
    if (!held)
        held = &none;
    snprintf(rec, sizeof(rec), "%lld %lld %lld %s", held->gpus > 0 ? held->gpus : 0,
             held->cpus > 0 ? held->cpus : 0, held->memory_bytes > 0 ? held->memory_bytes : 0,
             it->principal);
    if (!(r = queue_eval(s, 5, argv, "queue.lua take", err)))
        return -TY_EREDIS;
    rc = r->type == REDIS_REPLY_INTEGER
             ? r->integer == 1
             : ty_err_set(err, TY_EREDIS, NULL, "redis: queue.lua take: unexpected reply");
    freeReplyObject(r);
    return rc;
}

int queue_wait_new(struct store *s, const char *after, int block_ms, struct ty_err *err)
{
    char ms[16];
    const char *argv[7] = {"XREAD", "COUNT", "1", "BLOCK", ms, "STREAMS", QUEUE_KEY};
    const char *full[8];
    redisReply *r;
    int rc;

    if (!after || !*after || strlen(after) > QUEUE_ID_MAX || block_ms <= 0)
        return ty_err_set(err, TY_EINVAL, NULL, "queue_wait_new: bad arguments");
    snprintf(ms, sizeof(ms), "%d", block_ms);
    memcpy(full, argv, sizeof(argv));
    full[7] = after;
    if (!(r = store__cmd(s, 8, full, NULL, block_ms + 10000, err)))
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_NIL)
        rc = 0;
    else if (r->type == REDIS_REPLY_ARRAY)
        rc = 1;
    else
        rc = store__reply_err(r, "XREAD", err);
    freeReplyObject(r);
    return rc;
}

int queue_ack(struct store *s, const char *entry_id, struct ty_err *err)
{
    const char *a0[4] = {"XACK", QUEUE_KEY, QUEUE_GROUP, entry_id};
    const char *a1[3] = {"XDEL", QUEUE_KEY, entry_id};
    const char *const *argv[2] = {a0, a1};
    int argc[2] = {4, 3};
    redisReply *rep[2] = {NULL, NULL};
    int rc = 0;
    if (!entry_id || !*entry_id)
        return ty_err_set(err, TY_EINVAL, NULL, "empty entry id");
    if (store__pipeline(s, 2, argc, argv, rep, err) < 0)
        return -TY_EREDIS;
    /* A lost group (NOGROUP) leaves nothing to acknowledge; XDEL still removes the entry. */
    if (rep[0]->type != REDIS_REPLY_INTEGER && !queue_is_nogroup(rep[0]))
        rc = store__reply_err(rep[0], "XACK", err);
    else if (rep[1]->type != REDIS_REPLY_INTEGER)
        rc = store__reply_err(rep[1], "XDEL", err);
    freeReplyObject(rep[0]);
    freeReplyObject(rep[1]);
    return rc;
}

/* 1 when ty:agent:<consumer> exists, 0 when not, negative on error. */
static int queue_agent_live(struct store *s, const char *consumer, struct ty_err *err)
{
    char key[QUEUE_AGENT_MAX + 16];
    redisReply *r;
    int rc;
    snprintf(key, sizeof(key), QUEUE_AGENT_KEY "%s", consumer);
    r = store__cmdv(s, err, "EXISTS", key, NULL);
    if (!r)
        return -TY_EREDIS;
    rc = r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : store__reply_err(r, "EXISTS", err);
    freeReplyObject(r);
    return rc;
}

/*
 * Tries to XCLAIM id for agent_id. 1 with item when it moved, 0 when another reclaimer won or
 * the entry is gone (XCLAIM then drops it from the pending list), negative on error.
 */
static int queue_claim_one(struct store *s, const char *agent_id, const char *idle, const char *id,
                           struct queue_item *item, struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "XCLAIM", QUEUE_KEY, QUEUE_GROUP, agent_id, idle, id, NULL);
    int rc = 0;
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY) {
        rc = store__reply_err(r, "XCLAIM", err);
    } else if (r->elements >= 1 && r->element[0]->type == REDIS_REPLY_ARRAY) {
        struct queue_item it;
        if (queue_item_from(r->element[0], &it) == 0) {
            *item = it;
            rc = 1;
        }
    }
    freeReplyObject(r);
    return rc;
}

int queue_reclaim(struct store *s, const char *agent_id, long min_idle_ms, struct queue_item *item,
                  struct ty_err *err)
{
    char idle[32], count[16], start[QUEUE_ID_MAX + 1] = "-";
    if (queue_agent_ok(agent_id, err) < 0)
        return -TY_EINVAL;
    if (min_idle_ms < 0)
        min_idle_ms = 0;
    snprintf(idle, sizeof(idle), "%ld", min_idle_ms);
    snprintf(count, sizeof(count), "%d", QUEUE_PENDING_N);
    for (;;) {
        redisReply *r = store__cmdv(s, err, "XPENDING", QUEUE_KEY, QUEUE_GROUP, "IDLE", idle, start,
                                    "+", count, NULL);
        int rc = 0, done;
        if (!r)
            return -TY_EREDIS;
        if (queue_is_nogroup(r)) {
            freeReplyObject(r);
            return 0; /* no group: nothing was ever delivered */
        }
        if (r->type != REDIS_REPLY_ARRAY) {
            rc = store__reply_err(r, "XPENDING", err);
            freeReplyObject(r);
            return rc;
        }
        done = r->elements < QUEUE_PENDING_N;
        for (size_t i = 0; i < r->elements && rc == 0; i++) {
            const redisReply *p = r->element[i];
            const char *id, *consumer;
            if (p->type != REDIS_REPLY_ARRAY || p->elements < 2 ||
                p->element[0]->type != REDIS_REPLY_STRING ||
                p->element[1]->type != REDIS_REPLY_STRING)
                continue;
            id = p->element[0]->str;
            consumer = p->element[1]->str;
            snprintf(start, sizeof(start), "(%s", id);
            if (strcmp(consumer, agent_id) == 0)
                continue; /* already ours */
            rc = queue_agent_live(s, consumer, err);
            if (rc == 1) {
                rc = 0; /* a live agent keeps its job, however long it runs */
                continue;
            }
            if (rc < 0)
                break;
            rc = queue_claim_one(s, agent_id, idle, id, item, err);
        }
        freeReplyObject(r);
        if (rc != 0 || done)
            return rc;
    }
}

int queue_own_pending(struct store *s, const char *agent_id, const char *after,
                      struct queue_item *item, struct ty_err *err)
{
    char start[QUEUE_ID_MAX + 2] = "-";
    redisReply *r;
    int rc = 0;

    if (queue_agent_ok(agent_id, err) < 0)
        return -TY_EINVAL;
    if (after && *after) {
        if (strlen(after) > QUEUE_ID_MAX)
            return ty_err_set(err, TY_EINVAL, NULL, "entry id too long");
        snprintf(start, sizeof(start), "(%s", after);
    }
    for (;;) {
        const redisReply *p;
        r = store__cmdv(s, err, "XPENDING", QUEUE_KEY, QUEUE_GROUP, start, "+", "1", agent_id,
                        NULL);
        if (!r)
            return -TY_EREDIS;
        if (queue_is_nogroup(r)) {
            freeReplyObject(r);
            return 0;
        }
        if (r->type != REDIS_REPLY_ARRAY) {
            rc = store__reply_err(r, "XPENDING", err);
            freeReplyObject(r);
            return rc;
        }
        if (r->elements == 0) {
            freeReplyObject(r);
            return 0;
        }
        p = r->element[0];
        if (p->type != REDIS_REPLY_ARRAY || p->elements < 1 ||
            p->element[0]->type != REDIS_REPLY_STRING) {
            freeReplyObject(r);
            return ty_err_set(err, TY_EREDIS, NULL, "XPENDING: unexpected reply");
        }
        snprintf(start, sizeof(start), "(%s", p->element[0]->str);
        rc = queue_claim_one(s, agent_id, "0", p->element[0]->str, item, err);
        freeReplyObject(r);
        if (rc != 0)
            return rc; /* 1: found; < 0: error */
        /* 0: the entry's message is gone (XCLAIM dropped it): look further */
    }
}

int queue_heartbeat(struct store *s, const char *agent_id, json_t *capacity, int ttl_s,
                    struct ty_err *err)
{
    char key[QUEUE_AGENT_MAX + 16];
    json_t *empty;
    int rc;
    if (queue_agent_ok(agent_id, err) < 0)
        return -TY_EINVAL;
    if (ttl_s <= 0)
        return ty_err_set(err, TY_EINVAL, NULL, "heartbeat ttl must be positive");
    snprintf(key, sizeof(key), QUEUE_AGENT_KEY "%s", agent_id);
    if (json_is_object(capacity))
        return store__set_json_ex(s, key, capacity, ttl_s, err);
    if (!(empty = json_object()))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    rc = store__set_json_ex(s, key, empty, ttl_s, err);
    json_decref(empty);
    return rc;
}

static int queue_agent_cmp(const void *a, const void *b)
{
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "id")),
                  json_string_value(json_object_get(*(json_t *const *)b, "id")));
}

json_t *queue_agents(struct store *s, struct ty_err *err)
{
    char cursor[32] = "0";
    json_t *out = json_array();
    size_t n;
    if (!out) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    do {
        redisReply *r = store__cmdv(s, err, "SCAN", cursor, "MATCH", QUEUE_AGENT_KEY "*", "COUNT",
                                    "1000", NULL);
        const redisReply *keys;
        if (!r)
            goto fail;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
            store__reply_err(r, "SCAN", err);
            freeReplyObject(r);
            goto fail;
        }
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            const char *key = keys->element[i]->str;
            redisReply *v = store__cmdv(s, err, "GET", key, NULL);
            json_t *cap;
            if (!v) {
                freeReplyObject(r);
                goto fail;
            }
            if (v->type == REDIS_REPLY_STRING) {
                cap = json_loadb(v->str, v->len, 0, NULL);
                if (!json_is_object(cap)) {
                    json_decref(cap);
                    cap = json_object();
                }
                if (cap) {
                    json_object_set_new(cap, "id", json_string(key + strlen(QUEUE_AGENT_KEY)));
                    json_array_append_new(out, cap);
                }
            }
            freeReplyObject(v);
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    /* SCAN may return a key twice: sort by id and drop repeats. */
    n = json_array_size(out);
    if (n > 1) {
        json_t **v = malloc(n * sizeof(*v));
        json_t *sorted = json_array();
        if (!v || !sorted) {
            free(v);
            json_decref(sorted);
            ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            goto fail;
        }
        for (size_t i = 0; i < n; i++)
            v[i] = json_array_get(out, i);
        qsort(v, n, sizeof(*v), queue_agent_cmp);
        for (size_t i = 0; i < n; i++) {
            if (i > 0 && queue_agent_cmp(&v[i - 1], &v[i]) == 0)
                continue;
            json_array_append(sorted, v[i]);
        }
        free(v);
        json_decref(out);
        out = sorted;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

long queue_depth(struct store *s, struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "XLEN", QUEUE_KEY, NULL);
    long n;
    if (!r)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER) {
        n = (long)r->integer;
    } else {
        store__reply_err(r, "XLEN", err);
        n = -1;
    }
    freeReplyObject(r);
    return n;
}

void queue_capacity_total(json_t *agents, struct queue_res *total)
{
    size_t i;
    json_t *a;

    memset(total, 0, sizeof(*total));
    json_array_foreach(agents, i, a)
    {
        json_t *cap = json_object_get(a, "capacity");
        json_int_t g = json_integer_value(json_object_get(cap, "gpus"));
        json_int_t c = json_integer_value(json_object_get(cap, "cpus"));
        json_int_t m = json_integer_value(json_object_get(cap, "memory_bytes"));
        total->gpus += g > 0 ? g : 0;
        total->cpus += c > 0 ? c : 0;
        total->memory_bytes += m > 0 ? m : 0;
    }
}
