/*
 * store_login.c - console passwords as stored (store_login.h): login profiles, the sign-in
 * throttle's counters and waits (per user and client address) and the account password policy.
 *
 * Invariants: a key is built only from a name IAM accepts (lower-cased); every redisReply is
 * freed on every path; a hash passes through here untouched (never logged).
 */
#include "store_login.h"

#include <ctype.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define LOGIN_KEY_MAX    128
#define LOGIN_POLICY_KEY "ty:iam:pwpolicy"

/* The ty:iam:<what>:<lname> key of user name; -1 for a name IAM would refuse. */
static int login_key(const char *what, const char *name, char *out, size_t n)
{
    char lname[65];
    size_t i;
    for (i = 0; name && name[i]; i++) {
        int c = (unsigned char)name[i];
        if (i >= 64 || !(isalnum(c) || strchr("_+=,.@-", c)))
            return -1;
        lname[i] = (char)tolower(c);
    }
    if (i == 0)
        return -1;
    lname[i] = '\0';
    snprintf(out, n, "ty:iam:%s:%s", what, lname);
    return 0;
}

/* A command whose reply is only freed (best effort). */
static void login_fire(struct store *s, const char *a0, const char *a1, const char *a2)
{
    struct ty_err err;
    redisReply *r = store__cmdv(s, &err, a0, a1, a2, NULL);
    if (r)
        freeReplyObject(r);
}

/* DEL key: 1, 0 when absent, or -TY_EREDIS. */
static int login_del(struct store *s, const char *key, const char *what, struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "DEL", key, NULL);
    int rc;
    if (!r)
        return -TY_EREDIS;
    rc = r->type == REDIS_REPLY_INTEGER ? r->integer > 0 : store__reply_err(r, what, err);
    freeReplyObject(r);
    return rc;
}

int store_login_policy_get(struct store *s, char **text, struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "GET", LOGIN_POLICY_KEY, NULL);
    int rc = 0;
    *text = NULL;
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_STRING) {
        if (!(*text = strdup(r->str)))
            rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    } else if (r->type == REDIS_REPLY_ERROR) {
        rc = store__reply_err(r, "GET pwpolicy", err);
    }
    freeReplyObject(r);
    return rc;
}

int store_login_policy_set(struct store *s, const char *text, struct ty_err *err)
{
    redisReply *r = store__cmdv(s, err, "SET", LOGIN_POLICY_KEY, text, NULL);
    int rc = 0;
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_ERROR)
        rc = store__reply_err(r, "SET pwpolicy", err);
    freeReplyObject(r);
    return rc;
}

int store_login_policy_delete(struct store *s, struct ty_err *err)
{
    return login_del(s, LOGIN_POLICY_KEY, "DEL pwpolicy", err);
}

int store_login_read(struct store *s, const char *name, char *hash, size_t hn, char *uid, size_t un,
                     double *created, int *reset, struct ty_err *err)
{
    char key[LOGIN_KEY_MAX];
    redisReply *r;
    int rc = 0;
    if (login_key("login", name, key, sizeof(key)) != 0)
        return -TY_EINVAL;
    r = store__cmdv(s, err, "HMGET", key, "hash", "uid", "created", "reset", NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4) {
        rc = store__reply_err(r, "HMGET login", err);
        goto out;
    }
    if (r->element[0]->type != REDIS_REPLY_STRING) {
        rc = -TY_ENOTFOUND;
        goto out;
    }
    if (hash)
        snprintf(hash, hn, "%s", r->element[0]->str);
    snprintf(uid, un, "%s", r->element[1]->type == REDIS_REPLY_STRING ? r->element[1]->str : "");
    *created = r->element[2]->type == REDIS_REPLY_STRING ? strtod(r->element[2]->str, NULL) : 0;
    *reset = r->element[3]->type == REDIS_REPLY_STRING && strcmp(r->element[3]->str, "1") == 0;
out:
    freeReplyObject(r);
    return rc;
}

int store_login_write(struct store *s, const char *name, const char *hash, const char *uid,
                      double created, int reset, struct ty_err *err)
{
    char key[LOGIN_KEY_MAX], fkey[LOGIN_KEY_MAX], c[32], rs[2];
    redisReply *r;
    int rc;
    if (login_key("login", name, key, sizeof(key)) != 0 ||
        login_key("loginfail", name, fkey, sizeof(fkey)) != 0)
        return -TY_EINVAL;
    snprintf(c, sizeof(c), "%.3f", created);
    snprintf(rs, sizeof(rs), "%d", reset != 0);
    if (hash)
        r = store__cmdv(s, err, "HSET", key, "hash", hash, "uid", uid, "created", c, "reset", rs,
                        NULL);
    else
        r = store__cmdv(s, err, "HSET", key, "reset", rs, NULL);
    if (!r)
        return -TY_EREDIS;
    rc = r->type == REDIS_REPLY_ERROR ? store__reply_err(r, "HSET login", err) : 0;
    freeReplyObject(r);
    if (rc == 0)
        login_fire(s, "DEL", fkey, NULL);
    return rc;
}

int store_login_delete(struct store *s, const char *name, struct ty_err *err)
{
    char key[LOGIN_KEY_MAX];
    if (login_key("login", name, key, sizeof(key)) != 0)
        return -TY_EINVAL;
    return login_del(s, key, "DEL login", err);
}

/* The ty:iam:<what>:<lname>:<source> key of name signing in from source (an address: hex
   digits, '.', ':'; anything else, or more than 64 bytes, is folded to '_'); -1 as login_key. */
static int login_src_key(const char *what, const char *name, const char *source, char *out,
                         size_t n)
{
    char base[LOGIN_KEY_MAX], src[65];
    size_t i;
    if (login_key(what, name, base, sizeof(base)) != 0)
        return -1;
    for (i = 0; source && source[i] && i < 64; i++) {
        int c = (unsigned char)source[i];
        src[i] = (char)(isxdigit(c) || c == '.' || c == ':' ? c : '_');
    }
    src[i] = '\0';
    snprintf(out, n, "%s:%s", base, i ? src : "-");
    return 0;
}

int store_login_wait(struct store *s, const char *name, const char *source, long long *wait_ms,
                     struct ty_err *err)
{
    char wkey[LOGIN_KEY_MAX + 80];
    redisReply *r;
    if (login_src_key("loginwait", name, source, wkey, sizeof(wkey)) != 0)
        return -TY_EINVAL;
    r = store__cmdv(s, err, "PTTL", wkey, NULL);
    if (!r)
        return -TY_EREDIS;
    *wait_ms = r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? r->integer : 0;
    freeReplyObject(r);
    return 0;
}

long long store_login_fail(struct store *s, const char *name, const char *source, int window_s)
{
    char fkey[LOGIN_KEY_MAX + 80], ttl[16];
    struct ty_err err;
    redisReply *r;
    long long n = -1;
    if (login_src_key("loginfail", name, source, fkey, sizeof(fkey)) != 0)
        return -1;
    snprintf(ttl, sizeof(ttl), "%d", window_s);
    r = store__cmdv(s, &err, "INCR", fkey, NULL);
    if (r && r->type == REDIS_REPLY_INTEGER)
        n = r->integer;
    if (r)
        freeReplyObject(r);
    login_fire(s, "EXPIRE", fkey, ttl);
    return n;
}

void store_login_hold(struct store *s, const char *name, const char *source, long long ms)
{
    char wkey[LOGIN_KEY_MAX + 80], px[24];
    struct ty_err err;
    redisReply *r;
    if (ms <= 0 || login_src_key("loginwait", name, source, wkey, sizeof(wkey)) != 0)
        return;
    snprintf(px, sizeof(px), "%lld", ms);
    r = store__cmdv(s, &err, "SET", wkey, "1", "PX", px, NULL);
    if (r)
        freeReplyObject(r);
}

void store_login_fails_clear(struct store *s, const char *name, const char *source)
{
    char fkey[LOGIN_KEY_MAX + 80], wkey[LOGIN_KEY_MAX + 80];
    if (login_src_key("loginfail", name, source, fkey, sizeof(fkey)) == 0 &&
        login_src_key("loginwait", name, source, wkey, sizeof(wkey)) == 0)
        login_fire(s, "DEL", fkey, wkey);
}
