/*
 * objstore_list.c - listing the embedded object store: ListObjects(V2) over the Redis key index
 * (a sorted set per bucket walked with ZRANGEBYLEX), common prefixes, continuation tokens.
 */
#include "objstore.h"
#include "objstore_int.h"
#include "objstore_remote.h"

#include "store_raw.h"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- listing ------------------------------------------------------------------------------- */

void objstore_listing_cleanup(struct objstore_listing *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->e[i].key);
    free(l->e);
    free(l->next);
    memset(l, 0, sizeof(*l));
}

static int objstore_b64(const unsigned char *in, size_t n, char **out)
{
    size_t cap = 4 * ((n + 2) / 3) + 1;
    char *o = malloc(cap);
    if (!o)
        return -1;
    EVP_EncodeBlock((unsigned char *)o, in, (int)n);
    *out = o;
    return 0;
}

static int objstore_unb64(const char *in, char *out, size_t outn, size_t *len)
{
    size_t n = strlen(in);
    int w;

    if (n == 0 || n % 4 || (n / 4) * 3 >= outn)
        return -1;
    w = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)in, (int)n);
    if (w < 0)
        return -1;
    while (n > 0 && in[n - 1] == '=') {
        n--;
        w--;
    }
    out[w] = '\0';
    *len = (size_t)w;
    return 0;
}

static int objstore_push(struct objstore_listing *l, size_t *cap, const char *key, size_t klen,
                         int is_prefix)
{
    if (l->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct objstore_entry *e = realloc(l->e, nc * sizeof(*e));
        if (!e)
            return -1;
        l->e = e;
        *cap = nc;
    }
    memset(&l->e[l->n], 0, sizeof(l->e[l->n]));
    l->e[l->n].key = strndup(key, klen);
    if (!l->e[l->n].key)
        return -1;
    l->e[l->n].is_prefix = is_prefix;
    l->n++;
    return 0;
}

/* The ZRANGEBYLEX bound the listing starts from ('[' inclusive, '(' exclusive): after token,
   else after start_after, else at prefix. OUT: cursor (size n). 0 or -TY_EINVAL. */
static int objstore_list_cursor(const char *prefix, const char *delim, const char *token,
                                const char *start_after, char *cursor, size_t n, struct ty_err *err)
{
    size_t plen = prefix ? strlen(prefix) : 0, dlen = delim ? strlen(delim) : 0;

    if (token && *token) {
        char dec[OBJSTORE_MAX_KEY + 8];
        size_t dl;
        if (objstore_unb64(token, dec, sizeof(dec), &dl) != 0 || dl < 2 ||
            dl > OBJSTORE_MAX_KEY + 1 || (dec[0] != 'k' && dec[0] != 'p') || strlen(dec) != dl)
            return ty_err_set(err, TY_EINVAL, "InvalidArgument",
                              "The continuation token provided is incorrect");
        if (dec[0] == 'k')
            snprintf(cursor, n, "(%.1024s", dec + 1);
        else
            snprintf(cursor, n, "[%.1024s\xff", dec + 1);
    } else if (start_after && *start_after && (!prefix || strcmp(start_after, prefix) >= 0)) {
        size_t sl = strlen(start_after);
        if (sl > OBJSTORE_MAX_KEY)
            return ty_err_set(err, TY_EINVAL, "InvalidArgument", "start-after too long");
        /* a marker that is a common prefix (ListObjects v1's NextMarker) skips its keys */
        if (dlen && sl >= dlen && memcmp(start_after + sl - dlen, delim, dlen) == 0)
            snprintf(cursor, n, "[%.1024s\xff", start_after);
        else
            snprintf(cursor, n, "(%.1024s", start_after);
    } else if (plen) {
        snprintf(cursor, n, "[%.1024s", prefix);
    } else {
        snprintf(cursor, n, "-");
    }
    return 0;
}

/* Walks the key index zk from cursor (size cn, moved along), adding up to max keys and common
   prefixes to l; sets l->truncated when more follow. 0 or error (l keeps what it has). */
static int objstore_list_scan(struct objstore *os, const char *zk, const char *prefix,
                              const char *delim, int max, char *cursor, size_t cn,
                              struct objstore_listing *l, size_t *cap, struct ty_err *err)
{
    size_t plen = prefix ? strlen(prefix) : 0, dlen = delim ? strlen(delim) : 0;
    int done = 0;

    while (!done) {
        char lim[16];
        int want = max - (int)l->n + 1;
        redisReply *r;
        if (want < 1)
            want = 1;
        if (want > 1001)
            want = 1001;
        snprintf(lim, sizeof(lim), "%d", want);
        r = store__cmdv(os->st, err, "ZRANGEBYLEX", zk, cursor, "+", "LIMIT", "0", lim, NULL);
        if (!r)
            return -TY_EREDIS;
        if (r->type != REDIS_REPLY_ARRAY) {
            int rc = store__reply_err(r, "s3 list", err);
            freeReplyObject(r);
            return rc;
        }
        if (r->elements == 0)
            done = 1;
        for (size_t i = 0; i < r->elements && !done; i++) {
            const char *k = r->element[i]->str;
            size_t kl = r->element[i]->len;
            const char *d;
            if (!k)
                continue;
            if (plen && (kl < plen || memcmp(k, prefix, plen) != 0)) {
                done = 1;
                break;
            }
            if ((int)l->n == max) {
                l->truncated = 1;
                done = 1;
                break;
            }
            d = dlen ? strstr(k + plen, delim) : NULL;
            if (d) {
                size_t cl = (size_t)(d - k) + dlen;
                if (objstore_push(l, cap, k, cl, 1) != 0) {
                    freeReplyObject(r);
                    return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
                }
                /* skip every key under this common prefix: no UTF-8 key has a 0xff byte */
                snprintf(cursor, cn, "[%.*s\xff", (int)cl, k);
                break; /* re-query from the new cursor */
            }
            if (objstore_push(l, cap, k, kl, 0) != 0) {
                freeReplyObject(r);
                return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            }
            snprintf(cursor, cn, "(%.*s", (int)kl, k);
        }
        if (!done && r->elements < (size_t)want && (l->n == 0 || !l->e[l->n - 1].is_prefix))
            done = 1;
        freeReplyObject(r);
    }
    return 0;
}

/* Fills the metadata of l's objects (not its common prefixes), one pipeline. 0 or error. */
static int objstore_list_meta(struct objstore *os, const char *bucket, struct objstore_listing *l,
                              struct ty_err *err)
{
    size_t nobj = 0, j = 0;
    const char ***cmds;
    int *argc, rc = 0;
    char **keys;
    const char **argvs;
    redisReply **rep;

    for (size_t i = 0; i < l->n; i++)
        nobj += !l->e[i].is_prefix;
    if (!nobj)
        return 0;
    cmds = calloc(nobj, sizeof(*cmds));
    argc = calloc(nobj, sizeof(*argc));
    keys = calloc(nobj, sizeof(*keys));
    argvs = calloc(nobj * 2, sizeof(*argvs));
    rep = calloc(nobj, sizeof(*rep));
    if (!cmds || !argc || !keys || !argvs || !rep) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    } else {
        for (size_t i = 0; i < l->n && rc == 0; i++) {
            if (l->e[i].is_prefix)
                continue;
            keys[j] = objstore__rkey("ty:s3:obj:", bucket, l->e[i].key);
            if (!keys[j]) {
                rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
                break;
            }
            argvs[2 * j] = "HGETALL";
            argvs[2 * j + 1] = keys[j];
            cmds[j] = &argvs[2 * j];
            argc[j] = 2;
            j++;
        }
        if (rc == 0 &&
            store__pipeline(os->st, nobj, argc, (const char *const *const *)cmds, rep, err) != 0)
            rc = -TY_EREDIS;
        j = 0;
        for (size_t i = 0; i < l->n && rc == 0; i++) {
            if (l->e[i].is_prefix)
                continue;
            objstore__meta_from_reply(rep[j], &l->e[i].meta, 0);
            freeReplyObject(rep[j]);
            j++;
        }
    }
    for (size_t i = 0; keys && i < nobj; i++)
        free(keys[i]);
    free(cmds);
    free(argc);
    free(keys);
    free(argvs);
    free(rep);
    return rc;
}

/* Sets l->next, the continuation token after l's last entry. 0 or -TY_ENOMEM. */
static int objstore_list_next(struct objstore_listing *l, struct ty_err *err)
{
    const struct objstore_entry *e = &l->e[l->n - 1];
    size_t kl = strlen(e->key);
    unsigned char *raw = malloc(kl + 1);
    int rc;

    if (!raw)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    raw[0] = e->is_prefix ? 'p' : 'k';
    memcpy(raw + 1, e->key, kl);
    rc = objstore_b64(raw, kl + 1, &l->next);
    free(raw);
    return rc ? ty_err_set(err, TY_ENOMEM, NULL, "out of memory") : 0;
}

int objstore_list(struct objstore *os, const char *bucket, const char *prefix, const char *delim,
                  const char *token, const char *start_after, int max, struct objstore_listing *out,
                  struct ty_err *err)
{
    if (os->remote)
        return objstore_remote_list(os->remote, bucket, prefix, delim, token, start_after, max, out,
                                    err);
    struct objstore_listing l;
    size_t cap = 0, plen = prefix ? strlen(prefix) : 0, dlen = delim ? strlen(delim) : 0;
    char *zk = NULL, cursor[OBJSTORE_MAX_KEY + 8];
    int rc;

    memset(&l, 0, sizeof(l));
    if ((rc = objstore_bucket_get(os, bucket, NULL, err)) != 0)
        return rc;
    if (plen > OBJSTORE_MAX_KEY || dlen > 64)
        return ty_err_set(err, TY_EINVAL, "InvalidArgument", "prefix or delimiter too long");
    if (max < 0)
        max = 0;
    if (max > 1000)
        max = 1000;
    if ((rc = objstore_list_cursor(prefix, delim, token, start_after, cursor, sizeof(cursor),
                                   err)) != 0)
        return rc;
    zk = objstore__rkey("ty:s3:keys:", bucket, NULL);
    if (!zk)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    if ((rc = objstore_list_scan(os, zk, prefix, delim, max, cursor, sizeof(cursor), &l, &cap,
                                 err)) != 0 ||
        (rc = objstore_list_meta(os, bucket, &l, err)) != 0)
        goto fail;
    if (l.truncated && l.n) {
        if ((rc = objstore_list_next(&l, err)) != 0)
            goto fail;
    } else {
        l.truncated = 0;
    }
    free(zk);
    *out = l;
    return 0;
fail:
    free(zk);
    objstore_listing_cleanup(&l);
    return rc ? rc : -TY_EINTERNAL;
}
