/*
 * session.c - temporary role credentials for training jobs (session.h).
 *
 * Randomness comes from the kernel's CSPRNG (ty_rand.h); hashes are SHA-256 (EVP). The two
 * writes that must not interleave with a revoke (a grant, a mint) are one Lua script each, so
 * a revoke either sees what they wrote or makes them write nothing.
 */
#include "session.h"

#include "authgen.h"
#include "store.h"
#include "store_int.h"
#include "ty_codec.h"
#include "ty_log.h"
#include "ty_rand.h"

#include <hiredis/hiredis.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SESSION_KEY_MAX 1024

/* KEYS: token key, job set, session policy key. ARGV: job, role_arn, expires, key ttl, set
   member, policy member, policy text ("" for none). */
static const char session_lua_grant[] =
    "redis.call('HSET', KEYS[1], 'job', ARGV[1], 'role_arn', ARGV[2], 'expires', ARGV[3])\n"
    "redis.call('EXPIRE', KEYS[1], ARGV[4])\n"
    "redis.call('SADD', KEYS[2], ARGV[5], ARGV[6])\n"
    "if redis.call('TTL', KEYS[2]) < tonumber(ARGV[4]) then\n"
    "  redis.call('EXPIRE', KEYS[2], ARGV[4])\n"
    "end\n"
    "local ttl = redis.call('TTL', KEYS[3])\n"
    "redis.call('SET', KEYS[3], ARGV[7])\n"
    "if ttl > tonumber(ARGV[4]) then redis.call('EXPIRE', KEYS[3], ttl)\n"
    "else redis.call('EXPIRE', KEYS[3], ARGV[4]) end\n"
    "return 1\n";

/* KEYS: token key, job set, session key. ARGV: token member, key member, key ttl, then the
   session hash's field/value pairs. Returns 0 (and writes nothing) when the token is gone. */
static const char session_lua_mint[] = "if redis.call('EXISTS', KEYS[1]) == 0 or\n"
                                       "   redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 0 then\n"
                                       "  return 0\n"
                                       "end\n"
                                       "redis.call('HSET', KEYS[3], unpack(ARGV, 4))\n"
                                       "redis.call('EXPIRE', KEYS[3], ARGV[3])\n"
                                       "redis.call('SADD', KEYS[2], ARGV[2])\n"
                                       "if redis.call('TTL', KEYS[2]) < tonumber(ARGV[3]) then\n"
                                       "  redis.call('EXPIRE', KEYS[2], ARGV[3])\n"
                                       "end\n"
                                       "return 1\n";

/* KEYS: job set. Deletes every token and session key the set names, then the set. */
static const char session_lua_revoke[] =
    "local n = 0\n"
    "for _, m in ipairs(redis.call('SMEMBERS', KEYS[1])) do\n"
    "  local k\n"
    "  if string.sub(m, 1, 4) == 'tok:' then k = 'ty:jobtoken:' .. string.sub(m, 5)\n"
    "  elseif string.sub(m, 1, 4) == 'key:' then k = 'ty:session:' .. string.sub(m, 5)\n"
    "  elseif string.sub(m, 1, 4) == 'pol:' then k = 'ty:jobpol:' .. string.sub(m, 5) end\n"
    "  if k then n = n + redis.call('DEL', k) end\n"
    "end\n"
    "redis.call('DEL', KEYS[1])\n"
    "return n\n";

void session_sha256_hex(const char *s, char hex[65])
{
    unsigned char md[32];
    unsigned int ml = 0;

    if (EVP_Digest(s, strlen(s), md, &ml, EVP_sha256(), NULL) != 1 || ml != 32) {
        memset(hex, '0', 64); /* never equal to a real digest of a token we stored */
        hex[64] = '\0';
        return;
    }
    ty_hex_encode(md, 32, hex);
}

void session_iso8601(long long t, char *out, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
        if (n)
            out[0] = '\0';
    }
}

int session_is_temporary_key(const char *k)
{
    if (!k || strncmp(k, "ASIA", 4) != 0 || strlen(k) != SESSION_AKID_LEN - 1)
        return 0;
    for (const char *p = k + 4; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

/* A job name as a key component: 1..255 printable characters (job names are [a-zA-Z0-9-]). */
static int session_job_ok(const char *job)
{
    size_t n = job ? strlen(job) : 0;
    if (n == 0 || n > 255)
        return 0;
    for (const char *p = job; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return 0;
    return 1;
}

/* arn:aws:iam::<12 digits>:role/[path/]name. OUT: acct (13 bytes), name (the last segment). */
static int session_role_parts(const char *arn, char *acct, char *name, size_t nn)
{
    const char *a, *r, *last;
    if (!arn || strncmp(arn, "arn:aws:iam::", 13) != 0 || strlen(arn) >= SESSION_ARN_MAX)
        return -1;
    a = arn + 13;
    r = strchr(a, ':');
    if (!r || r - a != 12 || strncmp(r, ":role/", 6) != 0)
        return -1;
    for (const char *p = a; p < r; p++)
        if (*p < '0' || *p > '9')
            return -1;
    memcpy(acct, a, 12);
    acct[12] = '\0';
    last = strrchr(r + 6, '/');
    last = last ? last + 1 : r + 6;
    if (!*last || strlen(last) >= nn)
        return -1;
    snprintf(name, nn, "%s", last);
    return 0;
}

static int session_eval(struct store *s, const char *script, int nkeys, int nargs,
                        const char **args, long long *out, struct ty_err *err)
{
    const char *argv[32];
    char nk[16];
    redisReply *r;
    int argc = 0, rc = 0;

    if (nkeys + nargs + 3 > 32)
        return ty_err_set(err, TY_EINTERNAL, NULL, "session: too many script arguments");
    snprintf(nk, sizeof(nk), "%d", nkeys);
    argv[argc++] = "EVAL";
    argv[argc++] = script;
    argv[argc++] = nk;
    for (int i = 0; i < nkeys + nargs; i++)
        argv[argc++] = args[i];
    r = store__cmd(s, argc, argv, NULL, 0, err);
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_INTEGER)
        *out = r->integer;
    else
        rc = store__reply_err(r, "EVAL session", err);
    freeReplyObject(r);
    return rc;
}

int session_job_grant(struct store *s, const char *job, const char *role_arn, const char *policy,
                      int ttl_s, char *token, size_t n, struct ty_err *err)
{
    char tok[SESSION_TOKEN_LEN], sha[65], tkey[SESSION_KEY_MAX], jkey[SESSION_KEY_MAX];
    char acct[13], name[SESSION_ARN_MAX], expires[32], kttl[32], member[80];
    char pkey[SESSION_KEY_MAX], pmember[80];
    const char *args[10];
    long long one = 0;
    int rc;

    if (!session_job_ok(job))
        return ty_err_set(err, TY_EINVAL, "job", "session: bad job name");
    if (session_role_parts(role_arn, acct, name, sizeof(name)) != 0)
        return ty_err_set(err, TY_EINVAL, "RoleArn", "session: '%.200s' is not a role ARN",
                          role_arn ? role_arn : "");
    if (ttl_s < 1 || ttl_s > SESSION_MAX_TTL_S)
        return ty_err_set(err, TY_EINVAL, "ttl_s", "session: ttl must be 1..%d seconds",
                          SESSION_MAX_TTL_S);
    if (!token || n < SESSION_TOKEN_LEN)
        return ty_err_set(err, TY_EINVAL, "token", "session: token buffer too small");
    if (policy && strlen(policy) > SESSION_POLICY_MAX)
        return ty_err_set(err, TY_EINVAL, "policy", "session: policy over %d bytes",
                          SESSION_POLICY_MAX);
    if (ty_rand_hex(tok, 64) != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "session: no randomness");
    session_sha256_hex(tok, sha);
    snprintf(tkey, sizeof(tkey), "ty:jobtoken:%s", sha);
    snprintf(jkey, sizeof(jkey), "ty:jobsess:%s", job);
    snprintf(expires, sizeof(expires), "%lld", (long long)time(NULL) + ttl_s);
    snprintf(kttl, sizeof(kttl), "%d", ttl_s + SESSION_GRACE_S);
    snprintf(member, sizeof(member), "tok:%s", sha);
    snprintf(pkey, sizeof(pkey), "ty:jobpol:%.64s", job); /* the session name (session_mint) */
    snprintf(pmember, sizeof(pmember), "pol:%.64s", job);
    args[0] = tkey;
    args[1] = jkey;
    args[2] = pkey;
    args[3] = job;
    args[4] = role_arn;
    args[5] = expires;
    args[6] = kttl;
    args[7] = member;
    args[8] = pmember;
    args[9] = policy ? policy : "";
    rc = session_eval(s, session_lua_grant, 3, 7, args, &one, err);
    if (rc == 0) {
        memcpy(token, tok, SESSION_TOKEN_LEN);
        ty_log(TY_LOG_INFO, "session.grant", "job=%s role=%s ttl=%d", job, role_arn, ttl_s);
    }
    OPENSSL_cleanse(tok, sizeof(tok));
    return rc;
}

int session_job_revoke(struct store *s, const char *job, struct ty_err *err)
{
    char jkey[SESSION_KEY_MAX];
    const char *args[1];
    long long n = 0;
    int rc;

    if (!session_job_ok(job))
        return ty_err_set(err, TY_EINVAL, "job", "session: bad job name");
    snprintf(jkey, sizeof(jkey), "ty:jobsess:%s", job);
    args[0] = jkey;
    rc = session_eval(s, session_lua_revoke, 1, 0, args, &n, err);
    if (rc == 0 && n > 0)
        authgen_changed(s); /* cached credentials of the job stop working everywhere */
    if (rc == 0)
        ty_log(TY_LOG_INFO, "session.revoke", "job=%s deleted=%lld", job, n);
    return rc;
}

int session_policy_get(struct store *s, const char *session_name, char **policy, struct ty_err *err)
{
    char pkey[SESSION_KEY_MAX];
    redisReply *r;
    int rc = 0;

    *policy = NULL;
    if (!session_name || !*session_name || strlen(session_name) > 64)
        return ty_err_set(err, TY_ENOTFOUND, NULL, "session: no such session");
    snprintf(pkey, sizeof(pkey), "ty:jobpol:%s", session_name);
    r = store__cmdv(s, err, "GET", pkey, NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type == REDIS_REPLY_NIL)
        rc = ty_err_set(err, TY_ENOTFOUND, NULL, "session: no session policy record");
    else if (r->type != REDIS_REPLY_STRING)
        rc = store__reply_err(r, "GET session policy", err);
    else if (!(*policy = strndup(r->str, r->len)))
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    freeReplyObject(r);
    return rc;
}

/* A container token as sent: exactly 64 lower-case hex digits. */
static int session_token_ok(const char *t)
{
    if (!t || strlen(t) != 64)
        return 0;
    for (const char *p = t; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

/* Fields of a hash reply to HMGET as strings ("" when absent). */
static const char *session_field(const redisReply *r, size_t i)
{
    if (i < r->elements && r->element[i]->type == REDIS_REPLY_STRING)
        return r->element[i]->str;
    return "";
}

int session_mint(struct store *s, const char *token, int lifetime_s, time_t now,
                 struct session_creds *out, struct ty_err *err)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char upper[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    struct session_creds c;
    char sha[65], tkey[SESSION_KEY_MAX], jkey[SESSION_KEY_MAX], skey[SESSION_KEY_MAX];
    char acct[13], role[SESSION_ARN_MAX], tmember[80], kmember[40], kttl[32], exp[32];
    const char *args[32];
    long long token_expires, ok = 0, life;
    redisReply *r;
    int rc = 0, na = 0;

    memset(&c, 0, sizeof(c));
    if (!session_token_ok(token))
        return ty_err_set(err, TY_EDENIED, NULL, "The container authorization token is invalid.");
    session_sha256_hex(token, sha);
    snprintf(tkey, sizeof(tkey), "ty:jobtoken:%s", sha);
    r = store__cmdv(s, err, "HMGET", tkey, "job", "role_arn", "expires", NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        rc = store__reply_err(r, "HMGET", err);
        freeReplyObject(r);
        return rc;
    }
    if (r->element[0]->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return ty_err_set(err, TY_EDENIED, NULL, "The container authorization token is invalid.");
    }
    snprintf(c.job, sizeof(c.job), "%s", session_field(r, 0));
    snprintf(c.role_arn, sizeof(c.role_arn), "%s", session_field(r, 1));
    token_expires = atoll(session_field(r, 2));
    freeReplyObject(r);
    if (token_expires <= (long long)now)
        return ty_err_set(err, TY_EDENIED, NULL, "The container authorization token has expired.");
    if (session_role_parts(c.role_arn, acct, role, sizeof(role)) != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "session: stored role ARN is malformed");
    life = lifetime_s > 0 ? lifetime_s : SESSION_CRED_TTL_S;
    if (token_expires - (long long)now < life)
        life = token_expires - (long long)now;
    c.expires = (long long)now + life;
    snprintf(c.session_name, sizeof(c.session_name), "%.64s", c.job);
    if (snprintf(c.arn, sizeof(c.arn), "arn:aws:sts::%s:assumed-role/%s/%s", acct, role,
                 c.session_name) >= (int)sizeof(c.arn))
        return ty_err_set(err, TY_EINTERNAL, NULL, "session: assumed-role ARN too long");
    memcpy(c.access_key, "ASIA", 4);
    memcpy(c.token, "IQoJ", 4);
    if (ty_rand_string(c.access_key + 4, SESSION_AKID_LEN - 5, upper) != 0 ||
        ty_rand_string(c.secret, SESSION_SECRET_LEN - 1, b64) != 0 ||
        ty_rand_string(c.token + 4, SESSION_STOKEN_LEN - 5, b64) != 0) {
        OPENSSL_cleanse(&c, sizeof(c));
        return ty_err_set(err, TY_EINTERNAL, NULL, "session: no randomness");
    }
    session_sha256_hex(c.token, c.token_sha);
    snprintf(jkey, sizeof(jkey), "ty:jobsess:%s", c.job);
    snprintf(skey, sizeof(skey), "ty:session:%s", c.access_key);
    snprintf(tmember, sizeof(tmember), "tok:%s", sha);
    snprintf(kmember, sizeof(kmember), "key:%s", c.access_key);
    snprintf(kttl, sizeof(kttl), "%lld", life + SESSION_GRACE_S);
    snprintf(exp, sizeof(exp), "%lld", c.expires);
    args[na++] = tkey;
    args[na++] = jkey;
    args[na++] = skey;
    args[na++] = tmember;
    args[na++] = kmember;
    args[na++] = kttl;
    args[na++] = "secret";
    args[na++] = c.secret;
    args[na++] = "token_sha";
    args[na++] = c.token_sha;
    args[na++] = "arn";
    args[na++] = c.arn;
    args[na++] = "role_arn";
    args[na++] = c.role_arn;
    args[na++] = "session_name";
    args[na++] = c.session_name;
    args[na++] = "job";
    args[na++] = c.job;
    args[na++] = "expires";
    args[na++] = exp;
    rc = session_eval(s, session_lua_mint, 3, na - 3, args, &ok, err);
    if (rc == 0 && ok != 1)
        rc = ty_err_set(err, TY_EDENIED, NULL, "The container authorization token is invalid.");
    if (rc == 0) {
        *out = c;
        ty_log(TY_LOG_DEBUG, "session.mint", "job=%s akid=%s expires=%lld", c.job, c.access_key,
               c.expires);
    }
    OPENSSL_cleanse(&c, sizeof(c));
    return rc;
}

int session_get(struct store *s, const char *access_key, struct session_creds *out,
                struct ty_err *err)
{
    struct session_creds c;
    char skey[SESSION_KEY_MAX];
    redisReply *r;
    int rc = 0;

    if (!session_is_temporary_key(access_key))
        return ty_err_set(err, TY_ENOTFOUND, NULL, "unknown access key");
    snprintf(skey, sizeof(skey), "ty:session:%s", access_key);
    r = store__cmdv(s, err, "HMGET", skey, "secret", "token_sha", "arn", "role_arn", "session_name",
                    "job", "expires", NULL);
    if (!r)
        return -TY_EREDIS;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 7) {
        rc = store__reply_err(r, "HMGET", err);
    } else if (r->element[0]->type != REDIS_REPLY_STRING) {
        rc = ty_err_set(err, TY_ENOTFOUND, NULL, "unknown access key");
    } else {
        memset(&c, 0, sizeof(c));
        snprintf(c.access_key, sizeof(c.access_key), "%s", access_key);
        snprintf(c.secret, sizeof(c.secret), "%s", session_field(r, 0));
        snprintf(c.token_sha, sizeof(c.token_sha), "%s", session_field(r, 1));
        snprintf(c.arn, sizeof(c.arn), "%s", session_field(r, 2));
        snprintf(c.role_arn, sizeof(c.role_arn), "%s", session_field(r, 3));
        snprintf(c.session_name, sizeof(c.session_name), "%s", session_field(r, 4));
        snprintf(c.job, sizeof(c.job), "%s", session_field(r, 5));
        c.expires = atoll(session_field(r, 6));
        *out = c;
        OPENSSL_cleanse(&c, sizeof(c));
    }
    freeReplyObject(r);
    return rc;
}
