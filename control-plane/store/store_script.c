/*
 * store_script.c - EVALSHA with SCRIPT LOAD on first use and after NOSCRIPT (store_script.h).
 *
 * Invariants: a SHA is published only after Redis returned it for the script's own source, so
 * a cached SHA always names that source; a reply is freed on every path but the returned one.
 */
#include "store_script.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define STORE_SCRIPT_STACK_ARGS 48

static pthread_mutex_t store_script_lock = PTHREAD_MUTEX_INITIALIZER;

/* SCRIPT LOAD sc's source. OUT: sha (41 bytes), also published in sc. 0 or -TY_EREDIS. */
static int store_script_fetch(struct store *s, struct store_script *sc, char *sha,
                              struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "SCRIPT", "LOAD", sc->src, NULL);
    char what[96];
    int rc = 0;

    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_STRING && r->len == 40) {
        memcpy(sha, r->str, 41);
        pthread_mutex_lock(&store_script_lock);
        memcpy(sc->sha, sha, 41);
        pthread_mutex_unlock(&store_script_lock);
    } else {
        snprintf(what, sizeof(what), "SCRIPT LOAD %s", sc->name ? sc->name : "");
        rc = store__reply_err(r, what, err);
    }
    freeReplyObject(r);
    return rc;
}

int store_script_load(struct store *s, struct store_script *sc, struct ty_err *err)
{
    char sha[41];
    return store_script_fetch(s, sc, sha, err);
}

struct redisReply *store_script_eval(struct store *s, struct store_script *sc, int nkeys, int nargs,
                                     const char *const *argv, const size_t *lens,
                                     struct ty_err *err)
{
    const char *stack_v[STORE_SCRIPT_STACK_ARGS + 3];
    size_t stack_l[STORE_SCRIPT_STACK_ARGS + 3];
    const char **cmd = stack_v;
    size_t *clen = stack_l;
    char nk[16], sha[41];
    redisReply *r = NULL;

    if (!sc || !sc->src || nkeys < 0 || nargs < nkeys || nargs > STORE_SCRIPT_MAX_ARGS) {
        ty_err_set(err, TY_EINVAL, NULL, "store: bad script call");
        return NULL;
    }
    if (nargs > STORE_SCRIPT_STACK_ARGS) {
        cmd = calloc((size_t)nargs + 3, sizeof(*cmd));
        clen = calloc((size_t)nargs + 3, sizeof(*clen));
        if (!cmd || !clen) {
            ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            goto out;
        }
    }
    pthread_mutex_lock(&store_script_lock);
    memcpy(sha, sc->sha, sizeof(sha));
    pthread_mutex_unlock(&store_script_lock);
    snprintf(nk, sizeof(nk), "%d", nkeys);
    cmd[0] = "EVALSHA";
    clen[0] = 7;
    cmd[2] = nk;
    clen[2] = strlen(nk);
    for (int i = 0; i < nargs; i++) {
        cmd[i + 3] = argv[i];
        clen[i + 3] = lens ? lens[i] : strlen(argv[i]);
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!sha[0] && store_script_fetch(s, sc, sha, err) < 0)
            goto out;
        cmd[1] = sha;
        clen[1] = 40;
        r = store__cmd(s, nargs + 3, cmd, clen, 0, err);
        if (!r)
            goto out;
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0 && attempt == 0) {
            freeReplyObject(r);
            r = NULL;
            sha[0] = '\0';
            continue;
        }
        break;
    }
out:
    if (cmd != stack_v)
        free(cmd);
    if (clen != stack_l)
        free(clen);
    return r;
}
