/*
 * store_iam.c - IAM users, tags, inline policies and access keys in Redis (store_iam.h).
 *
 * Owns: the ty:iam: keys and running lua/iam.lua (SHAs process-wide,
 * loaded on first use and again after NOSCRIPT). Does not own the connection (store.c,
 * through store_int.h).
 * Invariants: every write goes through iam.lua; every redisReply is freed on every path;
 * names reaching a key are checked here too ([\w+=,.@-], 1..64), so no input builds a key
 * outside ty:iam:.
 */
#include "store_iam.h"

#include <ctype.h>
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authgen.h"
#include "store_int.h"
#include "store_lua.h"
#include "store_script.h"

#define IAM_KEY_MAX  160
#define IAM_MAX_ARGV 128

static struct store_script iam_script = STORE_SCRIPT_INIT(store__lua_iam, "iam.lua");

/* ---- keys ---- */

static int iam_name_ok(const char *name)
{
    size_t n = 0;
    if (!name)
        return 0;
    for (const char *p = name; *p; p++, n++) {
        unsigned char c = (unsigned char)*p;
        if (!isalnum(c) && !strchr("_+=,.@-", c))
            return 0;
    }
    return n >= 1 && n <= STORE_IAM_NAME_MAX;
}

/* The key names of one kind of IAM entity (users and roles share iam.lua's verbs). */
struct store_iam_kind {
    const char *ent, *set, *tags, *pol, *polsz, *keys; /* key prefixes / the sorted set */
    const char *field, *what;                          /* "UserName", "user" */
};

static const struct store_iam_kind iam_user_kind = {
    "ty:iam:user:",   "ty:iam:users",  "ty:iam:utags:", "ty:iam:upol:",
    "ty:iam:upolsz:", "ty:iam:ukeys:", "UserName",      "user"};
static const struct store_iam_kind iam_role_kind = {
    "ty:iam:role:",   "ty:iam:roles",  "ty:iam:rtags:", "ty:iam:rpol:",
    "ty:iam:rpolsz:", "ty:iam:rkeys:", "RoleName",      "role"};

/* The eight keys of iam.lua for entity name (lower-cased) of kind kd. */
struct store_iam_keys {
    char user[IAM_KEY_MAX], tags[IAM_KEY_MAX], pol[IAM_KEY_MAX], polsz[IAM_KEY_MAX],
        keys[IAM_KEY_MAX], prin[IAM_KEY_MAX];
    const char *k[8];
    const struct store_iam_kind *kd;
};

static int iam_keys_init_kind(struct store_iam_keys *k, const struct store_iam_kind *kd,
                              const char *name, struct ty_err *err)
{
    char lname[STORE_IAM_NAME_MAX + 1];
    size_t i;
    if (!iam_name_ok(name))
        return ty_err_set(err, TY_EINVAL, kd->field, "bad %s name", kd->what);
    for (i = 0; name[i]; i++)
        lname[i] = (char)tolower((unsigned char)name[i]);
    lname[i] = '\0';
    snprintf(k->user, sizeof(k->user), "%s%s", kd->ent, lname);
    snprintf(k->tags, sizeof(k->tags), "%s%s", kd->tags, lname);
    snprintf(k->pol, sizeof(k->pol), "%s%s", kd->pol, lname);
    snprintf(k->polsz, sizeof(k->polsz), "%s%s", kd->polsz, lname);
    snprintf(k->keys, sizeof(k->keys), "%s%s", kd->keys, lname);
    k->prin[0] = '\0';
    k->kd = kd;
    k->k[0] = k->user;
    k->k[1] = kd->set;
    k->k[2] = k->tags;
    k->k[3] = k->pol;
    k->k[4] = k->polsz;
    k->k[5] = k->keys;
    k->k[6] = "ty:iam:version";
    k->k[7] = k->prin;
    return 0;
}

/* Maps iam.lua's error replies. */
static int iam_script_err(const redisReply *r, const struct store_iam_kind *kd, struct ty_err *err)
{
    if (r && r->type == REDIS_REPLY_ERROR) {
        /* Redis prefixes "ERR " to an error reply whose text is one word */
        const char *e = strncmp(r->str, "ERR ", 4) == 0 ? r->str + 4 : r->str;
        if (strcmp(e, "NOSUCHUSER") == 0)
            return ty_err_set(err, TY_ENOTFOUND, kd->field, "%s", kd->what);
        if (strcmp(e, "NOSUCHPOLICY") == 0)
            return ty_err_set(err, TY_ENOTFOUND, "PolicyName", "policy");
        if (strcmp(e, "NOSUCHKEY") == 0)
            return ty_err_set(err, TY_ENOTFOUND, "AccessKeyId", "key");
        if (strcmp(e, "EXISTS") == 0)
            return ty_err_set(err, TY_EINUSE, kd->field, "exists");
        if (strncmp(e, "CONFLICT ", 9) == 0)
            return ty_err_set(err, TY_ECONFLICT, kd->field, "%s", e + 9);
        if (strncmp(e, "LIMIT ", 6) == 0)
            return ty_err_set(err, TY_ELIMIT, NULL, "%s", e + 6);
    }
    return store__reply_err(r, "iam.lua", err);
}

/*
 * Runs iam.lua verb for user name with extra args (n of them, lens may be NULL), with the
 * principal key of akid when akid is not NULL. OUT: *ret (may be NULL) the integer reply.
 */
static int iam_run_kind(struct store *s, const struct store_iam_kind *kd, const char *name,
                        const char *verb, const char *akid, size_t n, const char *const *args,
                        const size_t *alens, long long *ret, struct ty_err *err)
{
    struct store_iam_keys k;
    const char *argv[IAM_MAX_ARGV];
    size_t lens[IAM_MAX_ARGV];
    int argc = 0, rc = 0;
    redisReply *r;

    if (iam_keys_init_kind(&k, kd, name, err) < 0)
        return -TY_EINVAL;
    if (n + 9 > IAM_MAX_ARGV)
        return ty_err_set(err, TY_EINVAL, NULL, "too many arguments");
    if (akid && snprintf(k.prin, sizeof(k.prin), "ty:principal:%s", akid) >= (int)sizeof(k.prin))
        return ty_err_set(err, TY_EINVAL, "AccessKeyId", "bad access key id");
    for (int i = 0; i < 8; i++) {
        argv[argc] = k.k[i];
        lens[argc++] = strlen(k.k[i]);
    }
    argv[argc] = verb;
    lens[argc++] = strlen(verb);
    for (size_t i = 0; i < n; i++) {
        argv[argc] = args[i];
        lens[argc++] = alens ? alens[i] : strlen(args[i]);
    }
    r = store_script_eval(s, &iam_script, 8, argc, argv, lens, err);
    if (!r)
        return -err->code;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (ret)
            *ret = r->integer;
        authgen_changed(s); /* every verb is a write: cached principals and policies go */
    } else {
        rc = iam_script_err(r, kd, err);
    }
    freeReplyObject(r);
    return rc;
}

static int iam_run(struct store *s, const char *name, const char *verb, const char *akid, size_t n,
                   const char *const *args, const size_t *alens, long long *ret, struct ty_err *err)
{
    return iam_run_kind(s, &iam_user_kind, name, verb, akid, n, args, alens, ret, err);
}

/* Appends tags (array of {"Key","Value"}) to args as pairs; 0 or -TY_EINVAL. */
static int iam_tag_args(json_t *tags, const char **args, size_t *n, size_t max, struct ty_err *err)
{
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        if (!k || !v)
            return ty_err_set(err, TY_EINVAL, "Tags", "bad tag");
        if (*n + 2 > max)
            return ty_err_set(err, TY_ELIMIT, "Tags", "tags");
        args[(*n)++] = k;
        args[(*n)++] = v;
    }
    return 0;
}

int store_iam_user_create(struct store *s, const struct store_iam_user *u, json_t *tags,
                          struct ty_err *err)
{
    const char *args[IAM_MAX_ARGV - 10];
    char created[40], maxtags[16];
    size_t n = 0;
    int rc;

    snprintf(created, sizeof(created), "%.3f", u->created);
    snprintf(maxtags, sizeof(maxtags), "%d", STORE_IAM_MAX_TAGS);
    args[n++] = u->name;
    args[n++] = u->id;
    args[n++] = u->path;
    args[n++] = u->arn;
    args[n++] = created;
    args[n++] = maxtags;
    rc = iam_tag_args(tags, args, &n, sizeof(args) / sizeof(args[0]), err);
    if (rc)
        return rc;
    return iam_run(s, u->name, "create", NULL, n, args, NULL, NULL, err);
}

static const char *iam_el(const redisReply *r, size_t i)
{
    if (r && r->type == REDIS_REPLY_ARRAY && i < r->elements &&
        r->element[i]->type == REDIS_REPLY_STRING)
        return r->element[i]->str;
    return NULL;
}

/* Fills u from an HMGET name id path arn created ver reply; 0 or -TY_ENOTFOUND. */
static int iam_user_from(const redisReply *r, struct store_iam_user *u, struct ty_err *err)
{
    const char *name = iam_el(r, 0), *id = iam_el(r, 1);
    if (!name || !id)
        return ty_err_set(err, TY_ENOTFOUND, "UserName", "user");
    memset(u, 0, sizeof(*u));
    snprintf(u->name, sizeof(u->name), "%s", name);
    snprintf(u->id, sizeof(u->id), "%s", id);
    snprintf(u->path, sizeof(u->path), "%s", iam_el(r, 2) ? iam_el(r, 2) : "/");
    snprintf(u->arn, sizeof(u->arn), "%s", iam_el(r, 3) ? iam_el(r, 3) : "");
    u->created = iam_el(r, 4) ? strtod(iam_el(r, 4), NULL) : 0;
    u->ver = iam_el(r, 5) ? strtoll(iam_el(r, 5), NULL, 10) : 0;
    return 0;
}

/* A new object from an HGETALL reply. */
static json_t *iam_hash_obj(const redisReply *r)
{
    json_t *o = json_object();
    if (!o || !r || r->type != REDIS_REPLY_ARRAY)
        return o;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        if (r->element[i]->type == REDIS_REPLY_STRING &&
            r->element[i + 1]->type == REDIS_REPLY_STRING)
            json_object_set_new(o, r->element[i]->str,
                                json_stringn(r->element[i + 1]->str, r->element[i + 1]->len));
    }
    return o;
}

static int iam_cmp_key(const void *a, const void *b)
{
    const char *ka = json_string_value(json_object_get(*(json_t *const *)a, "Key"));
    const char *kb = json_string_value(json_object_get(*(json_t *const *)b, "Key"));
    return strcmp(ka ? ka : "", kb ? kb : "");
}

/* A new array of {"Key","Value"} sorted by key from an object key -> value. */
static json_t *iam_tag_array(json_t *obj)
{
    size_t n = json_object_size(obj), i = 0;
    json_t **v = n ? calloc(n, sizeof(*v)) : NULL, *arr = json_array(), *val;
    const char *key;
    if (n && !v)
        return arr;
    json_object_foreach(obj, key, val)
    {
        if (i < n)
            v[i++] = json_pack("{s:s,s:O}", "Key", key, "Value", val);
    }
    if (i > 1)
        qsort(v, i, sizeof(*v), iam_cmp_key);
    for (size_t j = 0; j < i; j++)
        json_array_append_new(arr, v[j]);
    free(v);
    return arr;
}

/* Runs the pipeline HMGET user fields + extra commands (HGETALL of keys); replies new. */
static int iam_read_kind(struct store *s, const struct store_iam_kind *kd, const char *name,
                         size_t nextra, const char *const *extra, redisReply **rep,
                         struct ty_err *err)
{
    struct store_iam_keys k;
    const char *hm[] = {"HMGET", NULL, "name", "id", "path", "arn", "created", "ver"};
    const char *hg[4][2];
    const char *const *cmds[5];
    int argc[5];
    if (iam_keys_init_kind(&k, kd, name, err) < 0)
        return -TY_ENOTFOUND;
    hm[1] = k.user;
    cmds[0] = hm;
    argc[0] = 8;
    for (size_t i = 0; i < nextra && i < 4; i++) {
        hg[i][0] = "HGETALL";
        hg[i][1] = strcmp(extra[i], "tags") == 0   ? k.tags
                   : strcmp(extra[i], "pol") == 0  ? k.pol
                   : strcmp(extra[i], "keys") == 0 ? k.keys
                                                   : k.polsz;
        cmds[i + 1] = hg[i];
        argc[i + 1] = 2;
    }
    return store__pipeline(s, nextra + 1, argc, cmds, rep, err);
}

static int iam_read(struct store *s, const char *name, size_t nextra, const char *const *extra,
                    redisReply **rep, struct ty_err *err)
{
    return iam_read_kind(s, &iam_user_kind, name, nextra, extra, rep, err);
}

static void iam_free_replies(redisReply **rep, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rep[i])
            freeReplyObject(rep[i]);
}

int store_iam_user_get(struct store *s, const char *name, struct store_iam_user *u, json_t **tags,
                       struct ty_err *err)
{
    const char *extra[] = {"tags"};
    redisReply *rep[2] = {NULL, NULL};
    struct store_iam_user tmp;
    int rc = iam_read(s, name, 1, extra, rep, err);
    if (rc)
        return rc;
    rc = iam_user_from(rep[0], &tmp, err);
    if (rc == 0) {
        *u = tmp;
        if (tags) {
            json_t *o = iam_hash_obj(rep[1]);
            *tags = iam_tag_array(o);
            json_decref(o);
        }
    }
    iam_free_replies(rep, 2);
    return rc;
}

static int iam_head_kind(struct store *s, const struct store_iam_kind *kd, const char *name,
                         struct store_iam_user *u, struct ty_err *err)
{
    redisReply *rep[1] = {NULL};
    struct store_iam_user tmp;
    int rc = iam_read_kind(s, kd, name, 0, NULL, rep, err);
    if (rc)
        return rc;
    rc = iam_user_from(rep[0], &tmp, err);
    if (rc == 0)
        *u = tmp;
    iam_free_replies(rep, 1);
    return rc;
}

static int iam_load_kind(struct store *s, const struct store_iam_kind *kd, const char *name,
                         struct store_iam_user *u, json_t **policies, json_t **tags,
                         struct ty_err *err)
{
    const char *extra[] = {"pol", "tags"};
    redisReply *rep[3] = {NULL, NULL, NULL};
    struct store_iam_user tmp;
    int rc = iam_read_kind(s, kd, name, 2, extra, rep, err);
    if (rc)
        return rc;
    rc = iam_user_from(rep[0], &tmp, err);
    if (rc == 0) {
        *u = tmp;
        *policies = iam_hash_obj(rep[1]);
        *tags = iam_hash_obj(rep[2]);
    }
    iam_free_replies(rep, 3);
    return rc;
}

int store_iam_head(struct store *s, const char *name, struct store_iam_user *u, struct ty_err *err)
{
    return iam_head_kind(s, &iam_user_kind, name, u, err);
}

int store_iam_load(struct store *s, const char *name, struct store_iam_user *u, json_t **policies,
                   json_t **tags, struct ty_err *err)
{
    return iam_load_kind(s, &iam_user_kind, name, u, policies, tags, err);
}

int store_iam_role_head(struct store *s, const char *name, struct store_iam_user *u,
                        struct ty_err *err)
{
    return iam_head_kind(s, &iam_role_kind, name, u, err);
}

int store_iam_role_load(struct store *s, const char *name, struct store_iam_user *u,
                        json_t **policies, json_t **tags, struct ty_err *err)
{
    return iam_load_kind(s, &iam_role_kind, name, u, policies, tags, err);
}

json_t *store_iam_user_list(struct store *s, struct ty_err *err)
{
    char stop[16];
    redisReply *names, **rep = NULL;
    const char ***cmds = NULL;
    int *argc = NULL;
    json_t *out = NULL;
    size_t n;

    snprintf(stop, sizeof(stop), "%d", STORE_IAM_MAX_USERS - 1);
    names = store__cmdv(s, err, "ZRANGE", "ty:iam:users", "0", stop, NULL);
    if (!names)
        return NULL;
    if (names->type != REDIS_REPLY_ARRAY) {
        store__reply_err(names, "ZRANGE", err);
        freeReplyObject(names);
        return NULL;
    }
    n = names->elements;
    out = json_array();
    if (n == 0) {
        freeReplyObject(names);
        return out;
    }
    rep = calloc(n, sizeof(*rep));
    cmds = calloc(n, sizeof(*cmds));
    argc = calloc(n, sizeof(*argc));
    char(*keys)[IAM_KEY_MAX] = calloc(n, IAM_KEY_MAX);
    const char **argvs = calloc(n * 8, sizeof(*argvs));
    if (!rep || !cmds || !argc || !keys || !argvs) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        json_decref(out);
        out = NULL;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const char **a = argvs + i * 8;
        snprintf(keys[i], IAM_KEY_MAX, "ty:iam:user:%s",
                 names->element[i]->type == REDIS_REPLY_STRING ? names->element[i]->str : "");
        a[0] = "HMGET";
        a[1] = keys[i];
        a[2] = "name";
        a[3] = "id";
        a[4] = "path";
        a[5] = "arn";
        a[6] = "created";
        a[7] = "ver";
        cmds[i] = a;
        argc[i] = 8;
    }
    if (store__pipeline(s, n, argc, (const char *const *const *)cmds, rep, err) != 0) {
        json_decref(out);
        out = NULL;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        struct store_iam_user u;
        struct ty_err ignored;
        if (iam_user_from(rep[i], &u, &ignored) == 0)
            json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:f}", "UserName", u.name,
                                                 "UserId", u.id, "Path", u.path, "Arn", u.arn,
                                                 "CreateDate", u.created));
        freeReplyObject(rep[i]);
    }
done:
    free(rep);
    free(cmds);
    free(argc);
    free(keys);
    free(argvs);
    freeReplyObject(names);
    return out;
}

int store_iam_user_delete(struct store *s, const char *name, struct ty_err *err)
{
    return iam_run(s, name, "delete", NULL, 0, NULL, NULL, NULL, err);
}

static int iam_tag(struct store *s, const struct store_iam_kind *kd, const char *name, json_t *tags,
                   struct ty_err *err)
{
    const char *args[IAM_MAX_ARGV - 10];
    char maxtags[16];
    size_t n = 0;
    int rc;
    snprintf(maxtags, sizeof(maxtags), "%d", STORE_IAM_MAX_TAGS);
    args[n++] = maxtags;
    rc = iam_tag_args(tags, args, &n, sizeof(args) / sizeof(args[0]), err);
    if (rc)
        return rc;
    return iam_run_kind(s, kd, name, "tag", NULL, n, args, NULL, NULL, err);
}

static int iam_untag(struct store *s, const struct store_iam_kind *kd, const char *name,
                     json_t *keys, struct ty_err *err)
{
    const char *args[IAM_MAX_ARGV - 10];
    size_t n = 0, i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        if (!json_is_string(k) || n >= sizeof(args) / sizeof(args[0]))
            return ty_err_set(err, TY_EINVAL, "TagKeys", "bad tag keys");
        args[n++] = json_string_value(k);
    }
    return iam_run_kind(s, kd, name, "untag", NULL, n, args, NULL, NULL, err);
}

int store_iam_user_tag(struct store *s, const char *name, json_t *tags, struct ty_err *err)
{
    return iam_tag(s, &iam_user_kind, name, tags, err);
}

int store_iam_user_untag(struct store *s, const char *name, json_t *keys, struct ty_err *err)
{
    return iam_untag(s, &iam_user_kind, name, keys, err);
}

int store_iam_role_tag(struct store *s, const char *name, json_t *tags, struct ty_err *err)
{
    return iam_tag(s, &iam_role_kind, name, tags, err);
}

int store_iam_role_untag(struct store *s, const char *name, json_t *keys, struct ty_err *err)
{
    return iam_untag(s, &iam_role_kind, name, keys, err);
}

static int iam_policy_put(struct store *s, const struct store_iam_kind *kd, const char *name,
                          const char *polname, const char *doc, size_t len, size_t size,
                          size_t limit, struct ty_err *err)
{
    char ssize[32], slimit[32];
    const char *args[4];
    size_t lens[4];
    snprintf(ssize, sizeof(ssize), "%zu", size);
    snprintf(slimit, sizeof(slimit), "%zu", limit);
    args[0] = polname;
    args[1] = doc;
    args[2] = ssize;
    args[3] = slimit;
    lens[0] = strlen(polname);
    lens[1] = len;
    lens[2] = strlen(ssize);
    lens[3] = strlen(slimit);
    return iam_run_kind(s, kd, name, "put_policy", NULL, 4, args, lens, NULL, err);
}

int store_iam_policy_put(struct store *s, const char *name, const char *polname, const char *doc,
                         size_t len, size_t size, size_t limit, struct ty_err *err)
{
    return iam_policy_put(s, &iam_user_kind, name, polname, doc, len, size, limit, err);
}

int store_iam_role_policy_put(struct store *s, const char *name, const char *polname,
                              const char *doc, size_t len, size_t size, size_t limit,
                              struct ty_err *err)
{
    return iam_policy_put(s, &iam_role_kind, name, polname, doc, len, size, limit, err);
}

static char *iam_policy_get(struct store *s, const struct store_iam_kind *kd, const char *name,
                            const char *polname, struct ty_err *err)
{
    struct store_iam_keys k;
    const char *a1[] = {"EXISTS", NULL};
    const char *a2[] = {"HGET", NULL, polname};
    const char *const *cmds[] = {a1, a2};
    int argc[] = {2, 3};
    redisReply *rep[2] = {NULL, NULL};
    char *doc = NULL;
    if (iam_keys_init_kind(&k, kd, name, err) < 0) {
        ty_err_set(err, TY_ENOTFOUND, kd->field, "%s", kd->what);
        return NULL;
    }
    a1[1] = k.user;
    a2[1] = k.pol;
    if (store__pipeline(s, 2, argc, cmds, rep, err) != 0)
        return NULL;
    if (rep[0]->type != REDIS_REPLY_INTEGER || rep[0]->integer == 0)
        ty_err_set(err, TY_ENOTFOUND, kd->field, "%s", kd->what);
    else if (rep[1]->type != REDIS_REPLY_STRING)
        ty_err_set(err, TY_ENOTFOUND, "PolicyName", "policy");
    else if (!(doc = strndup(rep[1]->str, rep[1]->len)))
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    iam_free_replies(rep, 2);
    return doc;
}

char *store_iam_policy_get(struct store *s, const char *name, const char *polname,
                           struct ty_err *err)
{
    return iam_policy_get(s, &iam_user_kind, name, polname, err);
}

char *store_iam_role_policy_get(struct store *s, const char *name, const char *polname,
                                struct ty_err *err)
{
    return iam_policy_get(s, &iam_role_kind, name, polname, err);
}

static int iam_cmp_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* EXISTS user + HKEYS/HGETALL of one of its hashes. */
static redisReply *iam_hash_kind(struct store *s, const struct store_iam_kind *kd, const char *name,
                                 const char *which, struct ty_err *err)
{
    struct store_iam_keys k;
    const char *a1[] = {"EXISTS", NULL};
    const char *a2[] = {"HGETALL", NULL};
    const char *const *cmds[] = {a1, a2};
    int argc[] = {2, 2};
    redisReply *rep[2] = {NULL, NULL};
    if (iam_keys_init_kind(&k, kd, name, err) < 0) {
        ty_err_set(err, TY_ENOTFOUND, kd->field, "%s", kd->what);
        return NULL;
    }
    a1[1] = k.user;
    a2[1] = strcmp(which, "pol") == 0 ? k.pol : k.keys;
    if (store__pipeline(s, 2, argc, cmds, rep, err) != 0)
        return NULL;
    if (rep[0]->type != REDIS_REPLY_INTEGER || rep[0]->integer == 0 ||
        rep[1]->type != REDIS_REPLY_ARRAY) {
        ty_err_set(err, TY_ENOTFOUND, kd->field, "%s", kd->what);
        iam_free_replies(rep, 2);
        return NULL;
    }
    freeReplyObject(rep[0]);
    return rep[1];
}

static redisReply *iam_user_hash(struct store *s, const char *name, const char *which,
                                 struct ty_err *err)
{
    return iam_hash_kind(s, &iam_user_kind, name, which, err);
}

/* Sorts a JSON array in place with cmp. */
static void iam_sort(json_t *arr, int (*cmp)(const void *, const void *))
{
    size_t n = json_array_size(arr);
    json_t **v;
    if (n < 2 || !(v = calloc(n, sizeof(*v))))
        return;
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort(v, n, sizeof(*v), cmp);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, v[i]);
    free(v);
}

static json_t *iam_policy_list(struct store *s, const struct store_iam_kind *kd, const char *name,
                               struct ty_err *err)
{
    redisReply *r = iam_hash_kind(s, kd, name, "pol", err);
    json_t *out;
    if (!r)
        return NULL;
    out = json_array();
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            json_array_append_new(out, json_string(r->element[i]->str));
    freeReplyObject(r);
    iam_sort(out, iam_cmp_str);
    return out;
}

json_t *store_iam_policy_list(struct store *s, const char *name, struct ty_err *err)
{
    return iam_policy_list(s, &iam_user_kind, name, err);
}

json_t *store_iam_role_policy_list(struct store *s, const char *name, struct ty_err *err)
{
    return iam_policy_list(s, &iam_role_kind, name, err);
}

int store_iam_policy_delete(struct store *s, const char *name, const char *polname,
                            struct ty_err *err)
{
    const char *args[] = {polname};
    return iam_run(s, name, "delete_policy", NULL, 1, args, NULL, NULL, err);
}

int store_iam_role_policy_delete(struct store *s, const char *name, const char *polname,
                                 struct ty_err *err)
{
    const char *args[] = {polname};
    return iam_run_kind(s, &iam_role_kind, name, "delete_policy", NULL, 1, args, NULL, NULL, err);
}

int store_iam_key_create(struct store *s, const char *name, const char *akid, double created,
                         int max, struct ty_err *err)
{
    char screated[40], smax[16];
    const char *args[3];
    snprintf(screated, sizeof(screated), "%.3f", created);
    snprintf(smax, sizeof(smax), "%d", max);
    args[0] = akid;
    args[1] = screated;
    args[2] = smax;
    return iam_run(s, name, "create_key", NULL, 3, args, NULL, NULL, err);
}

static int iam_cmp_akid(const void *a, const void *b)
{
    const char *ka = json_string_value(json_object_get(*(json_t *const *)a, "AccessKeyId"));
    const char *kb = json_string_value(json_object_get(*(json_t *const *)b, "AccessKeyId"));
    return strcmp(ka ? ka : "", kb ? kb : "");
}

json_t *store_iam_key_list(struct store *s, const char *name, struct ty_err *err)
{
    redisReply *r = iam_user_hash(s, name, "keys", err);
    json_t *out;
    if (!r)
        return NULL;
    out = json_array();
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        char status[32] = "Active";
        double created = 0;
        const char *v;
        if (r->element[i]->type != REDIS_REPLY_STRING ||
            r->element[i + 1]->type != REDIS_REPLY_STRING)
            continue;
        v = r->element[i + 1]->str;
        if (sscanf(v, "%31s %lf", status, &created) < 1)
            snprintf(status, sizeof(status), "Active");
        json_array_append_new(out, json_pack("{s:s,s:s,s:f}", "AccessKeyId", r->element[i]->str,
                                             "Status", status, "CreateDate", created));
    }
    freeReplyObject(r);
    iam_sort(out, iam_cmp_akid);
    return out;
}

int store_iam_key_delete(struct store *s, const char *name, const char *akid, struct ty_err *err)
{
    const char *args[] = {akid};
    return iam_run(s, name, "delete_key", akid, 1, args, NULL, NULL, err);
}

int store_iam_userid(struct store *s, const char *principal_arn, char *id, size_t n,
                     struct ty_err *err)
{
    struct store_iam_user u;
    const char *slash;
    int rc;
    if (!principal_arn || strncmp(principal_arn, "arn:aws:iam::", 13) != 0 ||
        !strstr(principal_arn, ":user/") || !(slash = strrchr(principal_arn, '/')))
        return ty_err_set(err, TY_ENOTFOUND, NULL, "not an IAM user");
    rc = store_iam_head(s, slash + 1, &u, err);
    if (rc)
        return rc;
    if (strcmp(u.arn, principal_arn) != 0)
        return ty_err_set(err, TY_ENOTFOUND, NULL, "not an IAM user");
    snprintf(id, n, "%s", u.id);
    return 0;
}

int store_iam_bootstrap_admin(struct store *s, const char *account, const char *akid, double now,
                              struct ty_err *err)
{
    static const char admin_policy[] = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":"
                                       "\"AdministratorAccess\",\"Effect\":\"Allow\",\"Action\":"
                                       "\"*\",\"Resource\":\"*\"}]}";
    struct store_iam_user u;
    int rc;

    memset(&u, 0, sizeof(u));
    snprintf(u.name, sizeof(u.name), "admin");
    /* a fixed id: the admin is the same user whatever its keys are */
    snprintf(u.id, sizeof(u.id), "AIDAADMINTRAINYARD000");
    snprintf(u.path, sizeof(u.path), "/");
    snprintf(u.arn, sizeof(u.arn), "arn:aws:iam::%s:user/admin", account);
    u.created = now;
    rc = store_iam_user_create(s, &u, NULL, err);
    if (rc == 0) {
        rc = store_iam_policy_put(s, "admin", "AdministratorAccess", admin_policy,
                                  strlen(admin_policy), strlen(admin_policy), (size_t)1 << 30, err);
        if (rc)
            return rc;
    } else if (rc != -TY_EINUSE) {
        return rc;
    }
    ty_err_clear(err);
    return store_iam_key_create(s, "admin", akid, now, 0, err);
}

/* ---- roles ---- */

int store_iam_key_update(struct store *s, const char *name, const char *akid, const char *status,
                         struct ty_err *err)
{
    const char *args[] = {akid, status};
    if (!status || (strcmp(status, "Active") != 0 && strcmp(status, "Inactive") != 0))
        return ty_err_set(err, TY_EINVAL, "Status", "bad status");
    return iam_run(s, name, "update_key", akid, 2, args, NULL, NULL, err);
}

int store_iam_role_create(struct store *s, const struct store_iam_role *r, const char *trust,
                          json_t *tags, struct ty_err *err)
{
    const char *args[IAM_MAX_ARGV - 10];
    char created[40], maxtags[16], maxsess[16];
    size_t n = 0;
    int rc;

    if (!trust)
        return ty_err_set(err, TY_EINVAL, "AssumeRolePolicyDocument", "no trust policy");
    snprintf(created, sizeof(created), "%.3f", r->created);
    snprintf(maxtags, sizeof(maxtags), "%d", STORE_IAM_MAX_TAGS);
    snprintf(maxsess, sizeof(maxsess), "%d", r->max_session);
    args[n++] = r->name;
    args[n++] = r->id;
    args[n++] = r->path;
    args[n++] = r->arn;
    args[n++] = created;
    args[n++] = maxtags;
    args[n++] = trust;
    args[n++] = r->desc;
    args[n++] = maxsess;
    rc = iam_tag_args(tags, args, &n, sizeof(args) / sizeof(args[0]), err);
    if (rc)
        return rc;
    return iam_run_kind(s, &iam_role_kind, r->name, "create_role", NULL, n, args, NULL, NULL, err);
}

int store_iam_role_get(struct store *s, const char *name, struct store_iam_role *r, char **trust,
                       json_t **tags, struct ty_err *err)
{
    struct store_iam_keys k;
    const char *hm[] = {"HMGET",   NULL,  "name", "id",      "path", "arn",
                        "created", "ver", "desc", "maxsess", "trust"};
    const char *hg[] = {"HGETALL", NULL};
    const char *const *cmds[] = {hm, hg};
    int argc[] = {11, 2};
    redisReply *rep[2] = {NULL, NULL};
    struct store_iam_user u;
    int rc;

    if (iam_keys_init_kind(&k, &iam_role_kind, name, err) < 0)
        return ty_err_set(err, TY_ENOTFOUND, "RoleName", "role");
    hm[1] = k.user;
    hg[1] = k.tags;
    if ((rc = store__pipeline(s, 2, argc, cmds, rep, err)) != 0)
        return rc;
    rc = iam_user_from(rep[0], &u, err);
    if (rc) {
        rc = ty_err_set(err, TY_ENOTFOUND, "RoleName", "role");
        goto done;
    }
    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%s", u.name);
    snprintf(r->id, sizeof(r->id), "%s", u.id);
    snprintf(r->path, sizeof(r->path), "%s", u.path);
    snprintf(r->arn, sizeof(r->arn), "%s", u.arn);
    r->created = u.created;
    r->ver = u.ver;
    snprintf(r->desc, sizeof(r->desc), "%s", iam_el(rep[0], 6) ? iam_el(rep[0], 6) : "");
    r->max_session = iam_el(rep[0], 7) ? (int)strtol(iam_el(rep[0], 7), NULL, 10) : 3600;
    if (trust) {
        const char *t = iam_el(rep[0], 8);
        *trust = strdup(t ? t : "");
        if (!*trust) {
            rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            goto done;
        }
    }
    if (tags) {
        json_t *o = iam_hash_obj(rep[1]);
        *tags = iam_tag_array(o);
        json_decref(o);
    }
done:
    iam_free_replies(rep, 2);
    return rc;
}

json_t *store_iam_role_list(struct store *s, struct ty_err *err)
{
    char stop[16];
    redisReply *names;
    json_t *out;

    snprintf(stop, sizeof(stop), "%d", STORE_IAM_MAX_ROLES - 1);
    names = store__cmdv(s, err, "ZRANGE", "ty:iam:roles", "0", stop, NULL);
    if (!names)
        return NULL;
    if (names->type != REDIS_REPLY_ARRAY) {
        store__reply_err(names, "ZRANGE", err);
        freeReplyObject(names);
        return NULL;
    }
    out = json_array();
    for (size_t i = 0; out && i < names->elements; i++) {
        struct store_iam_role r;
        struct ty_err e2;
        char *trust = NULL;
        int rc;
        if (names->element[i]->type != REDIS_REPLY_STRING)
            continue;
        ty_err_clear(&e2);
        rc = store_iam_role_get(s, names->element[i]->str, &r, &trust, NULL, &e2);
        if (rc == -TY_ENOTFOUND)
            continue; /* deleted meanwhile */
        if (rc) {
            *err = e2;
            json_decref(out);
            out = NULL;
            break;
        }
        json_array_append_new(out,
                              json_pack("{s:s,s:s,s:s,s:s,s:f,s:s,s:i,s:s}", "RoleName", r.name,
                                        "RoleId", r.id, "Path", r.path, "Arn", r.arn, "CreateDate",
                                        r.created, "Description", r.desc, "MaxSessionDuration",
                                        r.max_session, "AssumeRolePolicyDocument", trust));
        free(trust);
    }
    freeReplyObject(names);
    return out;
}

int store_iam_role_delete(struct store *s, const char *name, struct ty_err *err)
{
    return iam_run_kind(s, &iam_role_kind, name, "delete", NULL, 0, NULL, NULL, NULL, err);
}

int store_iam_bootstrap_role(struct store *s, const char *account, double now, struct ty_err *err)
{
    struct store_iam_role r;
    int rc;

    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", STORE_IAM_DEFAULT_ROLE);
    /* a fixed id, as the admin's: the default role is the same role on every start */
    snprintf(r.id, sizeof(r.id), "AROATRAINYARDDEFAULT0");
    snprintf(r.path, sizeof(r.path), "/");
    snprintf(r.arn, sizeof(r.arn), "arn:aws:iam::%s:role/%s", account, STORE_IAM_DEFAULT_ROLE);
    snprintf(r.desc, sizeof(r.desc), "trainyard's default execution role (owned by the admin)");
    r.max_session = 3600;
    r.created = now;
    rc = store_iam_role_create(s, &r, STORE_IAM_DEFAULT_ROLE_TRUST, NULL, err);
    if (rc == -TY_EINUSE) {
        /* exists: left as the admin may have changed it, but the old broad default itself
           (never edited) is narrowed to today's */
        char *doc;
        ty_err_clear(err);
        doc = store_iam_role_policy_get(s, STORE_IAM_DEFAULT_ROLE,
                                        STORE_IAM_DEFAULT_ROLE_POLICY_NAME, err);
        rc = doc && strcmp(doc, STORE_IAM_DEFAULT_ROLE_POLICY_V1) == 0;
        free(doc);
        ty_err_clear(err);
        if (!rc)
            return 0;
    } else if (rc) {
        return rc;
    }
    return store_iam_role_policy_put(s, STORE_IAM_DEFAULT_ROLE, STORE_IAM_DEFAULT_ROLE_POLICY_NAME,
                                     STORE_IAM_DEFAULT_ROLE_POLICY,
                                     strlen(STORE_IAM_DEFAULT_ROLE_POLICY),
                                     strlen(STORE_IAM_DEFAULT_ROLE_POLICY), (size_t)1 << 30, err);
}
