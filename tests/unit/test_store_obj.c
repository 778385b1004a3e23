/*
 * test_store_obj.c - the object store's records (store_obj.h) against a private redis-server:
 * buckets, object records and their index, listing from a cursor, multipart uploads and their
 * parts, completed uploads' answers; each write checked byte for byte against the hash or
 * string Redis holds (the encodings existing data is in), records written the old way read
 * back, and wrong-typed keys answered as errors. Exits 77 when redis-server is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_fixture.h"
#include "store.h"
#include "store_obj.h"

static struct redis_fixture fx;

#define ID  "0123456789abcdef0123456789abcdef"
#define ID2 "fedcba9876543210fedcba9876543210"

/* new: the reply of one command (argv form: binary-safe), on a connection of its own. */
static redisReply *raw(int argc, const char **argv)
{
    redisContext *c = redis_fixture_raw(&fx);
    redisReply *r;
    assert_non_null(c);
    r = redisCommandArgv(c, argc, argv, NULL);
    redisFree(c);
    assert_non_null(r);
    return r;
}

static void raw_do(int argc, const char **argv)
{
    freeReplyObject(raw(argc, argv));
}

/* The string value of HGET key field ("(nil)" when absent), into out (size n). */
static const char *raw_hget(const char *key, const char *field, char *out, size_t n)
{
    const char *a[] = {"HGET", key, field};
    redisReply *r = raw(3, a);
    snprintf(out, n, "%s", r->type == REDIS_REPLY_STRING ? r->str : "(nil)");
    freeReplyObject(r);
    return out;
}

static long long raw_int(int argc, const char **argv)
{
    redisReply *r = raw(argc, argv);
    long long v;
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    v = r->integer;
    freeReplyObject(r);
    return v;
}

static int setup(void **state)
{
    const char *flush[] = {"FLUSHALL"};
    struct ty_err err;
    struct store *s;
    raw_do(1, flush);
    s = store_open(fx.url_unix, &err);
    if (!s)
        fprintf(stderr, "store_open: %s\n", err.msg);
    assert_non_null(s);
    *state = s;
    return 0;
}

static int teardown(void **state)
{
    store_close(*state);
    return 0;
}

static void test_buckets(void **state)
{
    struct store *s = *state;
    struct store_obj_bucket b, *v = NULL;
    struct ty_err err;
    char got[256];
    size_t n = 0;

    assert_int_equal(store_obj_bucket_add(s, "zeta", 1700000000123LL, "eu-west-1", &err), 1);
    assert_int_equal(store_obj_bucket_add(s, "zeta", 5, "us-west-2", &err), 0);
    assert_int_equal(store_obj_bucket_add(s, "alpha", 42, NULL, &err), 1);
    assert_string_equal(raw_hget("ty:s3:buckets", "zeta", got, sizeof(got)),
                        "{\"created\":1700000000123,\"region\":\"eu-west-1\"}");
    assert_string_equal(raw_hget("ty:s3:buckets", "alpha", got, sizeof(got)),
                        "{\"created\":42,\"region\":\"us-east-1\"}");

    assert_int_equal(store_obj_bucket_get(s, "zeta", &b, &err), 0);
    assert_string_equal(b.name, "zeta");
    assert_int_equal(b.created_ms, 1700000000123LL);
    assert_string_equal(b.region, "eu-west-1");
    assert_int_equal(store_obj_bucket_get(s, "zeta", NULL, &err), 0);
    assert_int_equal(store_obj_bucket_get(s, "nope", &b, &err), -TY_ENOTFOUND);

    /* a record without a region (or not JSON at all) reads as us-east-1 */
    {
        const char *a[] = {"HSET", "ty:s3:buckets", "old", "{\"created\":7}"};
        const char *c[] = {"HSET", "ty:s3:buckets", "odd", "not json"};
        raw_do(4, a);
        raw_do(4, c);
    }
    assert_int_equal(store_obj_bucket_get(s, "old", &b, &err), 0);
    assert_int_equal(b.created_ms, 7);
    assert_string_equal(b.region, "us-east-1");
    assert_int_equal(store_obj_bucket_get(s, "odd", &b, &err), 0);
    assert_int_equal(b.created_ms, 0);

    assert_int_equal(store_obj_bucket_list(s, &v, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_string_equal(v[0].name, "alpha");
    assert_string_equal(v[1].name, "odd");
    assert_string_equal(v[2].name, "old");
    assert_string_equal(v[3].name, "zeta");
    assert_string_equal(v[3].region, "eu-west-1");
    free(v);

    /* delete takes the record and the key index, not another bucket's */
    {
        struct store_obj_rec r;
        long long cnt = -1;
        const char *ex[] = {"EXISTS", "ty:s3:keys:zeta"};
        memset(&r, 0, sizeof(r));
        snprintf(r.path, sizeof(r.path), "zeta/k");
        assert_int_equal(store_obj_put(s, "zeta", "k", &r, NULL, NULL, &err), 0);
        assert_int_equal(store_obj_count(s, "zeta", &cnt, &err), 0);
        assert_int_equal(cnt, 1);
        assert_int_equal(store_obj_bucket_delete(s, "zeta", &err), 0);
        assert_int_equal(raw_int(2, ex), 0);
        assert_int_equal(store_obj_count(s, "zeta", &cnt, &err), 0);
        assert_int_equal(cnt, 0);
    }
    assert_int_equal(store_obj_bucket_get(s, "zeta", &b, &err), -TY_ENOTFOUND);
    assert_int_equal(store_obj_bucket_get(s, "alpha", &b, &err), 0);
    assert_int_equal(store_obj_bucket_delete(s, "never", &err), 0);
}

static void test_objects(void **state)
{
    struct store *s = *state;
    struct store_obj_rec r, got;
    struct ty_err err;
    json_t *hdrs = json_pack("{s:s,s:s}", "Content-Type", "text/plain", "x-amz-meta-a", "b");
    json_t *h = NULL;
    char buf[256], *ps = NULL;

    memset(&r, 0, sizeof(r));
    snprintf(r.etag, sizeof(r.etag), "0cc175b9c0f1b6a831c399e269772661-2");
    r.size = 10485761;
    r.mtime_ms = 1700000000123LL;
    r.parts = 2;
    r.ino = 4242;
    snprintf(r.path, sizeof(r.path), "bk/dir/a.txt");
    assert_int_equal(store_obj_put(s, "bk", "dir/a.txt", &r, hdrs, "5242880,5242881", &err), 0);

    /* the hash, field by field, as objstore.c always wrote it */
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "etag", buf, sizeof(buf)),
                        "0cc175b9c0f1b6a831c399e269772661-2");
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "size", buf, sizeof(buf)), "10485761");
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "mtime", buf, sizeof(buf)),
                        "1700000000123");
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "path", buf, sizeof(buf)),
                        "bk/dir/a.txt");
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "parts", buf, sizeof(buf)), "2");
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "ino", buf, sizeof(buf)), "4242");
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "hdrs", buf, sizeof(buf)),
                        "{\"Content-Type\":\"text/plain\",\"x-amz-meta-a\":\"b\"}");
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "psizes", buf, sizeof(buf)),
                        "5242880,5242881");
    {
        const char *hl[] = {"HLEN", "ty:s3:obj:bk/dir/a.txt"};
        const char *zs[] = {"ZSCORE", "ty:s3:keys:bk", "dir/a.txt"};
        redisReply *z;
        assert_int_equal(raw_int(2, hl), 8);
        z = raw(3, zs);
        assert_int_equal(z->type, REDIS_REPLY_STRING);
        assert_string_equal(z->str, "0");
        freeReplyObject(z);
    }

    assert_int_equal(store_obj_get(s, "bk", "dir/a.txt", &got, &h, &err), 0);
    assert_string_equal(got.etag, r.etag);
    assert_int_equal(got.size, r.size);
    assert_int_equal(got.mtime_ms, r.mtime_ms);
    assert_int_equal(got.parts, 2);
    assert_int_equal(got.ino, 4242);
    assert_string_equal(got.path, "bk/dir/a.txt");
    assert_true(json_equal(h, hdrs));
    json_decref(h);
    assert_int_equal(store_obj_get(s, "bk", "dir/a.txt", &got, NULL, &err), 0);
    assert_int_equal(store_obj_psizes(s, "bk", "dir/a.txt", &ps, &err), 0);
    assert_string_equal(ps, "5242880,5242881");
    free(ps);

    /* an overwrite replaces the hash whole: a simple object has no psizes, {} headers */
    r.parts = 0;
    assert_int_equal(store_obj_put(s, "bk", "dir/a.txt", &r, NULL, NULL, &err), 0);
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "psizes", buf, sizeof(buf)), "(nil)");
    assert_string_equal(raw_hget("ty:s3:obj:bk/dir/a.txt", "hdrs", buf, sizeof(buf)), "{}");
    assert_int_equal(store_obj_psizes(s, "bk", "dir/a.txt", &ps, &err), 0);
    assert_string_equal(ps, "");
    free(ps);
    assert_int_equal(store_obj_get(s, "bk", "dir/a.txt", &got, &h, &err), 0);
    assert_true(json_is_object(h) && json_object_size(h) == 0);
    json_decref(h);

    /* missing records, and a hash without a path, are not found */
    h = (json_t *)1;
    assert_int_equal(store_obj_get(s, "bk", "missing", &got, &h, &err), -TY_ENOTFOUND);
    assert_null(h);
    {
        const char *a[] = {"HSET", "ty:s3:obj:bk/nopath", "etag", "x", "hdrs", "{}"};
        raw_do(6, a);
    }
    assert_int_equal(store_obj_get(s, "bk", "nopath", &got, &h, &err), -TY_ENOTFOUND);
    assert_null(h);

    /* a record written by hand the old way (no ino, hdrs not JSON) still reads */
    {
        const char *a[] = {"HSET", "ty:s3:obj:bk/old", "etag",  "abc", "size", "3",   "mtime", "99",
                           "path", "bk/old",           "parts", "0",   "hdrs", "{bad"};
        raw_do(14, a);
    }
    assert_int_equal(store_obj_get(s, "bk", "old", &got, &h, &err), 0);
    assert_string_equal(got.etag, "abc");
    assert_int_equal(got.size, 3);
    assert_int_equal(got.mtime_ms, 99);
    assert_int_equal(got.ino, 0);
    assert_null(h);

    /* many at once: a missing one comes back zeroed */
    {
        const char *keys[] = {"old", "missing", "dir/a.txt"};
        struct store_obj_rec many[3];
        assert_int_equal(store_obj_get_many(s, "bk", keys, 3, many, &err), 0);
        assert_string_equal(many[0].path, "bk/old");
        assert_string_equal(many[1].path, "");
        assert_int_equal(many[1].size, 0);
        assert_string_equal(many[2].path, "bk/dir/a.txt");
        assert_int_equal(many[2].ino, 4242);
        assert_int_equal(store_obj_get_many(s, "bk", keys, 0, many, &err), 0);
    }

    /* delete takes the hash and the index entry; a second delete is no error */
    {
        long long n = -1;
        const char *ex[] = {"EXISTS", "ty:s3:obj:bk/dir/a.txt"};
        assert_int_equal(store_obj_count(s, "bk", &n, &err), 0);
        assert_int_equal(n, 1);
        assert_int_equal(store_obj_delete(s, "bk", "dir/a.txt", &err), 0);
        assert_int_equal(raw_int(2, ex), 0);
        assert_int_equal(store_obj_count(s, "bk", &n, &err), 0);
        assert_int_equal(n, 0);
        assert_int_equal(store_obj_delete(s, "bk", "dir/a.txt", &err), 0);
    }
    json_decref(hdrs);
}

static void test_list(void **state)
{
    struct store *s = *state;
    static const char *const keys[] = {"a", "b", "b/c", "b/d", "c"};
    struct store_obj_names p;
    struct store_obj_rec r;
    struct ty_err err;

    memset(&r, 0, sizeof(r));
    snprintf(r.path, sizeof(r.path), "x");
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_int_equal(store_obj_put(s, "bk", keys[i], &r, NULL, NULL, &err), 0);

    assert_int_equal(store_obj_list(s, "bk", NULL, 0, 3, &p, &err), 0);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.v[0], "a");
    assert_string_equal(p.v[2], "b/c");
    assert_int_equal(p.len[2], 3);
    store_obj_names_cleanup(&p);

    assert_int_equal(store_obj_list(s, "bk", "b", 0, 10, &p, &err), 0);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.v[0], "b/c");
    store_obj_names_cleanup(&p);
    assert_int_equal(store_obj_list(s, "bk", "b", 1, 10, &p, &err), 0);
    assert_int_equal(p.n, 4);
    assert_string_equal(p.v[0], "b");
    store_obj_names_cleanup(&p);
    /* past every key under a prefix: no UTF-8 key has a 0xff byte */
    assert_int_equal(store_obj_list(s, "bk", "b/\xff", 1, 10, &p, &err), 0);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.v[0], "c");
    store_obj_names_cleanup(&p);
    assert_int_equal(store_obj_list(s, "bk", "c", 0, 10, &p, &err), 0);
    assert_int_equal(p.n, 0);
    store_obj_names_cleanup(&p);
    assert_int_equal(store_obj_list(s, "other", NULL, 0, 10, &p, &err), 0);
    assert_int_equal(p.n, 0);
    store_obj_names_cleanup(&p);
    assert_int_equal(store_obj_list(s, "bk", NULL, 0, 0, &p, &err), -TY_EINVAL);
    assert_int_equal(p.n, 0);
}

static void test_uploads(void **state)
{
    struct store *s = *state;
    json_t *hdrs = json_pack("{s:s}", "Content-Type", "image/png"), *h = NULL;
    struct store_obj_part p, *parts = NULL;
    struct store_obj_names names;
    struct ty_err err;
    int64_t ms = -1;
    size_t n = 0;
    char buf[256];

    assert_int_equal(store_obj_mpu_create(s, ID, "bk", "dir/k", 1700000000555LL, hdrs, &err), 0);
    assert_int_equal(store_obj_mpu_create(s, ID2, "bk", "a", 1700000000666LL, NULL, &err), 0);
    assert_string_equal(raw_hget("ty:s3:mpu:" ID, "bucket", buf, sizeof(buf)), "bk");
    assert_string_equal(raw_hget("ty:s3:mpu:" ID, "key", buf, sizeof(buf)), "dir/k");
    assert_string_equal(raw_hget("ty:s3:mpu:" ID, "initiated", buf, sizeof(buf)), "1700000000555");
    assert_string_equal(raw_hget("ty:s3:mpu:" ID, "hdrs", buf, sizeof(buf)),
                        "{\"Content-Type\":\"image/png\"}");
    assert_string_equal(raw_hget("ty:s3:mpu:" ID2, "hdrs", buf, sizeof(buf)), "{}");

    assert_int_equal(store_obj_mpu_get(s, ID, "bk", "dir/k", &h, &err), 0);
    assert_true(json_equal(h, hdrs));
    json_decref(h);
    assert_int_equal(store_obj_mpu_get(s, ID, "bk", "dir/k", NULL, &err), 0);
    assert_int_equal(store_obj_mpu_get(s, ID, "bk", "other", &h, &err), -TY_ENOTFOUND);
    assert_null(h);
    assert_int_equal(store_obj_mpu_get(s, ID, "bk2", "dir/k", &h, &err), -TY_ENOTFOUND);
    assert_int_equal(store_obj_mpu_get(s, "00", "bk", "dir/k", &h, &err), -TY_ENOTFOUND);
    assert_int_equal(store_obj_mpu_initiated(s, ID2, &ms, &err), 0);
    assert_int_equal(ms, 1700000000666LL);
    assert_int_equal(store_obj_mpu_initiated(s, "00", &ms, &err), 0);
    assert_int_equal(ms, 0);

    /* the uploads index: "<key>\n<id>" in byte order */
    assert_int_equal(store_obj_mpu_list(s, "bk", NULL, 0, 10, &names, &err), 0);
    assert_int_equal(names.n, 2);
    assert_string_equal(names.v[0], "a\n" ID2);
    assert_string_equal(names.v[1], "dir/k\n" ID);
    store_obj_names_cleanup(&names);
    assert_int_equal(store_obj_mpu_list(s, "bk", "dir/", 1, 10, &names, &err), 0);
    assert_int_equal(names.n, 1);
    store_obj_names_cleanup(&names);

    /* parts: "<etag> <size> <mtime>", read back by number */
    memset(&p, 0, sizeof(p));
    p.number = 3;
    snprintf(p.etag, sizeof(p.etag), "cccccccccccccccccccccccccccccccc");
    p.size = 7;
    p.mtime_ms = 1700000000777LL;
    assert_int_equal(store_obj_mpu_part_put(s, ID, &p, &err), 0);
    assert_string_equal(raw_hget("ty:s3:mpuparts:" ID, "3", buf, sizeof(buf)),
                        "cccccccccccccccccccccccccccccccc 7 1700000000777");
    p.number = 1;
    p.size = 5242880;
    snprintf(p.etag, sizeof(p.etag), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_int_equal(store_obj_mpu_part_put(s, ID, &p, &err), 0);
    p.size = 5242881; /* the same number again replaces it */
    assert_int_equal(store_obj_mpu_part_put(s, ID, &p, &err), 0);
    {
        const char *a[] = {"HSET", "ty:s3:mpuparts:" ID, "9", "garbage"};
        raw_do(4, a);
    }
    assert_int_equal(store_obj_mpu_parts(s, ID, &parts, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(parts[0].number, 1);
    assert_int_equal(parts[0].size, 5242881);
    assert_string_equal(parts[0].etag, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_int_equal(parts[1].number, 3);
    assert_int_equal(parts[1].mtime_ms, 1700000000777LL);
    free(parts);
    assert_int_equal(store_obj_mpu_parts(s, ID2, &parts, &n, &err), 0);
    assert_int_equal(n, 0);
    free(parts);

    /* drop forgets the hash, the parts and the index entry, and only this upload's */
    assert_int_equal(store_obj_mpu_drop(s, ID, "bk", "dir/k", &err), 0);
    {
        const char *ex[] = {"EXISTS", "ty:s3:mpu:" ID, "ty:s3:mpuparts:" ID};
        assert_int_equal(raw_int(3, ex), 0);
    }
    assert_int_equal(store_obj_mpu_get(s, ID, "bk", "dir/k", NULL, &err), -TY_ENOTFOUND);
    assert_int_equal(store_obj_mpu_list(s, "bk", NULL, 0, 10, &names, &err), 0);
    assert_int_equal(names.n, 1);
    assert_string_equal(names.v[0], "a\n" ID2);
    store_obj_names_cleanup(&names);
    json_decref(hdrs);
}

static void test_completed(void **state)
{
    struct store *s = *state;
    struct store_obj_done d;
    struct ty_err err;
    char buf[256];

    assert_int_equal(store_obj_mpu_done_put(s, ID, "bk", "k", "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0-2",
                                            "CRC32C", "AAAAAA==-2", NULL, &err),
                     0);
    {
        const char *g[] = {"GET", "ty:s3:mpudone:" ID};
        const char *t[] = {"TTL", "ty:s3:mpudone:" ID};
        redisReply *r = raw(2, g);
        long long ttl = raw_int(2, t);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        snprintf(buf, sizeof(buf), "%s", r->str);
        freeReplyObject(r);
        assert_string_equal(buf, "{\"b\":\"bk\",\"k\":\"k\",\"e\":\"e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0"
                                 "e0-2\",\"c\":\"AAAAAA==-2\",\"a\":\"CRC32C\"}");
        assert_true(ttl > 86000 && ttl <= 86400);
    }
    assert_int_equal(store_obj_mpu_done_get(s, ID, "bk", "k", &d, &err), 0);
    assert_string_equal(d.etag, "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0-2");
    assert_string_equal(d.algo, "CRC32C");
    assert_string_equal(d.composite, "AAAAAA==-2");
    assert_int_equal(store_obj_mpu_done_get(s, ID, "bk", "other", &d, &err), -TY_ENOTFOUND);
    assert_int_equal(store_obj_mpu_done_get(s, ID2, "bk", "k", &d, &err), -TY_ENOTFOUND);

    /* no checksum: both empty */
    assert_int_equal(store_obj_mpu_done_put(s, ID2, "bk", "k", "ee-1", NULL, NULL, NULL, &err), 0);
    assert_int_equal(store_obj_mpu_done_get(s, ID2, "bk", "k", &d, &err), 0);
    assert_string_equal(d.etag, "ee-1");
    assert_string_equal(d.algo, "");
    assert_string_equal(d.composite, "");
    assert_string_equal(d.parts, ""); /* not recorded */

    /* the digest of the part list it completed with */
    assert_int_equal(store_obj_mpu_done_put(s, ID2, "bk", "k", "ee-1", NULL, NULL,
                                            "0123456789abcdef0123456789abcdef", &err),
                     0);
    assert_int_equal(store_obj_mpu_done_get(s, ID2, "bk", "k", &d, &err), 0);
    assert_string_equal(d.parts, "0123456789abcdef0123456789abcdef");

    /* a record from before the algorithm was kept: its composite is SHA-256 */
    {
        const char *a[] = {"SET", "ty:s3:mpudone:old",
                           "{\"b\":\"bk\",\"k\":\"k\",\"e\":\"x\",\"c\":\"Zm9v-1\"}"};
        raw_do(3, a);
    }
    assert_int_equal(store_obj_mpu_done_get(s, "old", "bk", "k", &d, &err), 0);
    assert_string_equal(d.algo, "SHA256");
    assert_string_equal(d.composite, "Zm9v-1");

    /* the id is cut to 64 bytes in the key, as it always was */
    {
        char longid[100];
        memset(longid, 'f', 80);
        longid[80] = '\0';
        assert_int_equal(store_obj_mpu_done_put(s, longid, "bk", "k", "e", NULL, NULL, NULL, &err),
                         0);
        longid[64] = '\0';
        assert_int_equal(store_obj_mpu_done_get(s, longid, "bk", "k", &d, &err), 0);
    }
}

/* A key of the wrong type is an error, not an empty answer. */
static void test_wrong_types(void **state)
{
    struct store *s = *state;
    struct store_obj_bucket *v = NULL;
    struct store_obj_part *parts = NULL;
    struct store_obj_names names;
    struct store_obj_rec r;
    struct store_obj_done d;
    struct ty_err err;
    long long cnt;
    int64_t ms;
    size_t n;
    char *ps = NULL;
    const char *a[] = {"SET", "ty:s3:buckets", "x"};
    const char *b[] = {"SET", "ty:s3:obj:bk/k", "x"};
    const char *c[] = {"SET", "ty:s3:keys:bk", "x"};
    const char *d1[] = {"SET", "ty:s3:mpu:" ID, "x"};
    const char *d2[] = {"SET", "ty:s3:mpuparts:" ID, "x"};
    const char *d3[] = {"HSET", "ty:s3:mpudone:" ID, "f", "v"};

    raw_do(3, a);
    raw_do(3, b);
    raw_do(3, c);
    raw_do(3, d1);
    raw_do(3, d2);
    raw_do(4, d3);
    assert_int_equal(store_obj_bucket_add(s, "bk", 1, NULL, &err), -TY_EREDIS);
    assert_int_equal(store_obj_bucket_get(s, "bk", NULL, &err), -TY_EREDIS);
    assert_int_equal(store_obj_bucket_list(s, &v, &n, &err), -TY_EREDIS);
    assert_null(v);
    assert_int_equal(store_obj_get(s, "bk", "k", &r, NULL, &err), -TY_EREDIS);
    assert_int_equal(store_obj_psizes(s, "bk", "k", &ps, &err), -TY_EREDIS);
    assert_null(ps);
    assert_int_equal(store_obj_count(s, "bk", &cnt, &err), -TY_EREDIS);
    assert_int_equal(store_obj_list(s, "bk", NULL, 0, 5, &names, &err), -TY_EREDIS);
    assert_int_equal(names.n, 0);
    memset(&r, 0, sizeof(r));
    assert_int_equal(store_obj_put(s, "bk", "k2", &r, NULL, NULL, &err), -TY_EREDIS);
    assert_int_equal(store_obj_mpu_get(s, ID, "bk", "k", NULL, &err), -TY_EREDIS);
    assert_int_equal(store_obj_mpu_initiated(s, ID, &ms, &err), -TY_EREDIS);
    assert_int_equal(store_obj_mpu_parts(s, ID, &parts, &n, &err), -TY_EREDIS);
    assert_null(parts);
    assert_int_equal(store_obj_mpu_done_get(s, ID, "bk", "k", &d, &err), -TY_EREDIS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_objects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uploads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_completed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_types, setup, teardown),
    };
    int rc = redis_fixture_start(&fx);
    if (rc == 77) {
        fprintf(stderr, "redis-server not installed: skipped\n");
        return 77;
    }
    if (rc != 0) {
        fprintf(stderr, "cannot start redis-server\n");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    redis_fixture_stop(&fx);
    return rc;
}
