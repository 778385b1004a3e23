/*
 * store_lease.c - short leases in Redis (store_lease.h): one Lua call takes a free lease or
 * renews the caller's own.
 */
#include "store_lease.h"

#include "store_int.h"

#include <hiredis/hiredis.h>
#include <stdio.h>

static const char store_lease_lua[] =
    "local v = redis.call('GET', KEYS[1]) "
    "if v == false or v == ARGV[1] then "
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end "
    "return 0";

int store_lease(struct store *s, const char *name, const char *holder, long ttl_ms,
                struct ty_err *err)
{
    char key[512], ttl[32];
    redisReply *r;
    int rc;

    if (snprintf(key, sizeof(key), "ty:lease:%s", name) >= (int)sizeof(key))
        return ty_err_set(err, TY_EINVAL, NULL, "lease name too long");
    snprintf(ttl, sizeof(ttl), "%ld", ttl_ms);
    r = store__cmdv(s, err, "EVAL", store_lease_lua, "1", key, holder, ttl, NULL);
    if (!r)
        return -TY_EREDIS;
    rc = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : store__reply_err(r, "EVAL", err);
    freeReplyObject(r);
    return rc;
}
