/*
 * objstore_list.c - listing the embedded object store: ListObjects(V2) over the bucket's key
 * index (store_obj.h, walked in byte order from a cursor), common prefixes, continuation tokens.
 */
#include "objstore.h"
#include "objstore_int.h"
#include "objstore_remote.h"

#include "store_obj.h"

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

/* Where a listing goes on from: the first key of the index, or the first key after at (at
   itself too when incl). at ends in a 0xff byte to skip every key under a common prefix: no
   UTF-8 key has one. */
struct list_cursor {
    char at[OBJSTORE_MAX_KEY + 8];
    int incl;
    int first;
};

/* cur = after (incl: at) the first n bytes of k, with a 0xff byte after them when skip. */
static void list_cursor_set(struct list_cursor *cur, const char *k, int n, int incl, int skip)
{
    snprintf(cur->at, sizeof(cur->at), skip ? "%.*s\xff" : "%.*s", n, k);
    cur->incl = incl;
    cur->first = 0;
}

/* Where the listing starts: after token, else after start_after, else at prefix. OUT: cur.
   0 or -TY_EINVAL. */
static int objstore_list_cursor(const char *prefix, const char *delim, const char *token,
                                const char *start_after, struct list_cursor *cur,
                                struct ty_err *err)
{
    size_t plen = prefix ? strlen(prefix) : 0, dlen = delim ? strlen(delim) : 0;

    memset(cur, 0, sizeof(*cur));
    if (token && *token) {
        char dec[OBJSTORE_MAX_KEY + 8];
        size_t dl;
        if (objstore_unb64(token, dec, sizeof(dec), &dl) != 0 || dl < 2 ||
            dl > OBJSTORE_MAX_KEY + 1 || (dec[0] != 'k' && dec[0] != 'p') || strlen(dec) != dl)
            return ty_err_set(err, TY_EINVAL, "InvalidArgument",
                              "The continuation token provided is incorrect");
        if (dec[0] == 'k')
            list_cursor_set(cur, dec + 1, OBJSTORE_MAX_KEY, 0, 0);
        else
            list_cursor_set(cur, dec + 1, OBJSTORE_MAX_KEY, 1, 1);
    } else if (start_after && *start_after && (!prefix || strcmp(start_after, prefix) >= 0)) {
        size_t sl = strlen(start_after);
        if (sl > OBJSTORE_MAX_KEY)
            return ty_err_set(err, TY_EINVAL, "InvalidArgument", "start-after too long");
        /* a marker that is a common prefix (ListObjects v1's NextMarker) skips its keys */
        if (dlen && sl >= dlen && memcmp(start_after + sl - dlen, delim, dlen) == 0)
            list_cursor_set(cur, start_after, OBJSTORE_MAX_KEY, 1, 1);
        else
            list_cursor_set(cur, start_after, OBJSTORE_MAX_KEY, 0, 0);
    } else if (plen) {
        list_cursor_set(cur, prefix, OBJSTORE_MAX_KEY, 1, 0);
    } else {
        cur->first = 1;
    }
    return 0;
}

/* Walks bucket's key index from cur (moved along), adding up to max keys and common prefixes
   to l; sets l->truncated when more follow. 0 or error (l keeps what it has). */
static int objstore_list_scan(struct objstore *os, const char *bucket, const char *prefix,
                              const char *delim, int max, struct list_cursor *cur,
                              struct objstore_listing *l, size_t *cap, struct ty_err *err)
{
    size_t plen = prefix ? strlen(prefix) : 0, dlen = delim ? strlen(delim) : 0;
    int done = 0;

    while (!done) {
        struct store_obj_names pg;
        int want = max - (int)l->n + 1, rc;
        if (want < 1)
            want = 1;
        if (want > 1001)
            want = 1001;
        rc = store_obj_list(os->st, bucket, cur->first ? NULL : cur->at, cur->incl, want, &pg, err);
        if (rc != 0)
            return rc;
        if (pg.n == 0)
            done = 1;
        for (size_t i = 0; i < pg.n && !done; i++) {
            const char *k = pg.v[i];
            size_t kl = pg.len[i];
            const char *d;
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
                    store_obj_names_cleanup(&pg);
                    return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
                }
                /* skip every key under this common prefix */
                list_cursor_set(cur, k, (int)cl, 1, 1);
                break; /* re-query from the new cursor */
            }
            if (objstore_push(l, cap, k, kl, 0) != 0) {
                store_obj_names_cleanup(&pg);
                return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            }
            list_cursor_set(cur, k, (int)kl, 0, 0);
        }
        if (!done && pg.n < (size_t)want && (l->n == 0 || !l->e[l->n - 1].is_prefix))
            done = 1;
        store_obj_names_cleanup(&pg);
    }
    return 0;
}

/* Fills the metadata of l's objects (not its common prefixes), one pipeline. 0 or error. */
static int objstore_list_meta(struct objstore *os, const char *bucket, struct objstore_listing *l,
                              struct ty_err *err)
{
    size_t nobj = 0, j = 0;
    const char **keys;
    struct store_obj_rec *recs;
    int rc = 0;

    for (size_t i = 0; i < l->n; i++)
        nobj += !l->e[i].is_prefix;
    if (!nobj)
        return 0;
    keys = calloc(nobj, sizeof(*keys));
    recs = calloc(nobj, sizeof(*recs));
    if (!keys || !recs) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < l->n; i++) {
        if (!l->e[i].is_prefix)
            keys[j++] = l->e[i].key;
    }
    if ((rc = store_obj_get_many(os->st, bucket, keys, nobj, recs, err)) != 0)
        goto out;
    j = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (!l->e[i].is_prefix)
            objstore__meta_from_rec(&recs[j++], &l->e[i].meta);
    }
out:
    free(keys);
    free(recs);
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
    struct list_cursor cur;
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
    if ((rc = objstore_list_cursor(prefix, delim, token, start_after, &cur, err)) != 0)
        return rc;
    if ((rc = objstore_list_scan(os, bucket, prefix, delim, max, &cur, &l, &cap, err)) != 0 ||
        (rc = objstore_list_meta(os, bucket, &l, err)) != 0)
        goto fail;
    if (l.truncated && l.n) {
        if ((rc = objstore_list_next(&l, err)) != 0)
            goto fail;
    } else {
        l.truncated = 0;
    }
    *out = l;
    return 0;
fail:
    objstore_listing_cleanup(&l);
    return rc ? rc : -TY_EINTERNAL;
}
