/*
 * test_objstore.c - the embedded object store against a private redis-server and a temp dir:
 * names, buckets, objects (natural and hashed layout, collisions, overwrite, delete), adoption
 * of files written beside the API, listing (prefix, delimiter, continuation, start-after, a
 * large bucket), copy, multipart (errors, ETag, cleanup, part ranges, a part sent twice),
 * conditional writes, CRC-32C, and the aws-chunked body receiver.
 * Exits 77 when redis-server is not installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "objstore.h"
#include "redis_fixture.h"
#include "s3_int.h"
#include "store.h"
#include "ty_crc32c.h"

static struct redis_fixture fx;

struct env {
    char dir[256];
    struct store *st;
    struct objstore *os;
};

static void rm_rf(const char *p)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));
    struct ty_err err;
    redisContext *c = redis_fixture_raw(&fx);
    freeReplyObject(redisCommand(c, "FLUSHALL"));
    redisFree(c);
    snprintf(e->dir, sizeof(e->dir), "/tmp/ty-objstore-XXXXXX");
    assert_non_null(mkdtemp(e->dir));
    e->st = store_open(fx.url_unix, &err);
    assert_non_null(e->st);
    e->os = objstore_open(e->dir, e->st, &err);
    assert_non_null(e->os);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;
    objstore_close(e->os);
    store_close(e->st);
    rm_rf(e->dir);
    free(e);
    return 0;
}

/* Writes bytes to a new temp file of the store; returns its md5 in hex (OUT: path). */
static void put_bytes(struct env *e, const char *bucket, const char *key, const void *p, size_t n,
                      int expect_rc)
{
    char path[PATH_MAX], hex[33];
    unsigned char md[16];
    unsigned int ml = 0;
    struct ty_err err;
    int fd = objstore_tmp_create(e->os, path, sizeof(path), &err);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    close(fd);
    EVP_Digest(p, n, md, &ml, EVP_md5(), NULL);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    assert_int_equal(objstore_put_tmp(e->os, bucket, key, path, hex, n, 0, NULL, NULL, &err),
                     expect_rc);
    if (expect_rc)
        unlink(path);
}

static char *read_obj(struct env *e, const char *bucket, const char *key, size_t *n)
{
    struct objstore_meta m;
    struct ty_err err;
    char *buf;
    int fd = objstore_open_read(e->os, bucket, key, &m, &err);
    if (fd < 0)
        return NULL;
    buf = calloc(1, m.size + 1);
    assert_int_equal(read(fd, buf, m.size), (ssize_t)m.size);
    close(fd);
    *n = m.size;
    objstore_meta_cleanup(&m);
    return buf;
}

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *de;
    int n = 0;
    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_names(void **state)
{
    (void)state;
    assert_true(objstore_bucket_name_ok("my-bucket.data1"));
    assert_true(objstore_bucket_name_ok("abc"));
    assert_false(objstore_bucket_name_ok("ab"));
    assert_false(objstore_bucket_name_ok("Abc"));
    assert_false(objstore_bucket_name_ok("a_b"));
    assert_false(objstore_bucket_name_ok("a..b"));
    assert_false(objstore_bucket_name_ok("a.-b"));
    assert_false(objstore_bucket_name_ok("-ab"));
    assert_false(objstore_bucket_name_ok("10.0.0.1"));
    assert_false(objstore_bucket_name_ok(NULL));
    assert_true(objstore_key_ok("a/b/c"));
    assert_true(objstore_key_ok("\xc3\xa9t\xc3\xa9"));
    assert_false(objstore_key_ok(""));
    assert_false(objstore_key_ok("\xff"));
    assert_false(objstore_key_ok("\xc3"));
    assert_false(objstore_key_ok("\xed\xa0\x80")); /* a surrogate */
    {
        char k[1026];
        memset(k, 'k', 1025);
        k[1025] = '\0';
        assert_false(objstore_key_ok(k));
        k[1024] = '\0';
        assert_true(objstore_key_ok(k));
    }
}

static void test_buckets(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    struct objstore_bucket *v;
    struct objstore_bucket b;
    size_t n;

    assert_int_equal(objstore_bucket_create(e->os, "bkt-one", "eu-west-1", &err), 0);
    assert_int_equal(objstore_bucket_create(e->os, "bkt-one", NULL, &err), -TY_EINUSE);
    assert_string_equal(err.field, "BucketAlreadyOwnedByYou");
    assert_int_equal(objstore_bucket_create(e->os, "bkt-two", NULL, &err), 0);
    assert_int_equal(objstore_bucket_get(e->os, "bkt-one", &b, &err), 0);
    assert_string_equal(b.region, "eu-west-1");
    assert_int_equal(objstore_bucket_get(e->os, "nope", NULL, &err), -TY_ENOTFOUND);
    assert_string_equal(err.field, "NoSuchBucket");
    assert_int_equal(objstore_bucket_list(e->os, &v, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, "bkt-one");
    assert_string_equal(v[1].name, "bkt-two");
    free(v);
    put_bytes(e, "bkt-one", "k", "x", 1, 0);
    assert_int_equal(objstore_bucket_delete(e->os, "bkt-one", &err), -TY_ECONFLICT);
    assert_string_equal(err.field, "BucketNotEmpty");
    assert_int_equal(objstore_delete(e->os, "bkt-one", "k", &err), 0);
    assert_int_equal(objstore_bucket_delete(e->os, "bkt-one", &err), 0);
    assert_int_equal(objstore_bucket_get(e->os, "bkt-one", NULL, &err), -TY_ENOTFOUND);
    put_bytes(e, "bkt-one", "k", "x", 1, -TY_ENOTFOUND);
}

static void test_objects_layout(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    struct objstore_meta m;
    char p[PATH_MAX];
    struct stat st;
    size_t n;
    char *got;

    assert_int_equal(objstore_bucket_create(e->os, "lay", NULL, &err), 0);
    put_bytes(e, "lay", "dir/file.txt", "hello", 5, 0);
    snprintf(p, sizeof(p), "%s/lay/dir/file.txt", e->dir);
    assert_int_equal(stat(p, &st), 0); /* the natural path: what the agent reads */
    assert_int_equal(objstore_head(e->os, "lay", "dir/file.txt", &m, &err), 0);
    assert_string_equal(m.etag, "5d41402abc4b2a76b9719d911017c592");
    assert_int_equal(m.size, 5);
    objstore_meta_cleanup(&m);
    /* keys that are no plain path, and collisions between a file and a directory */
    put_bytes(e, "lay", "../../escape", "esc", 3, 0);
    put_bytes(e, "lay", "a//b", "dbl", 3, 0);
    put_bytes(e, "lay", "dir", "file-over-dir", 13, 0);
    put_bytes(e, "lay", "dir/file.txt/child", "child", 5, 0);
    snprintf(p, sizeof(p), "%s/escape", e->dir);
    assert_int_not_equal(stat(p, &st), 0);
    got = read_obj(e, "lay", "../../escape", &n);
    assert_non_null(got);
    assert_memory_equal(got, "esc", 3);
    free(got);
    got = read_obj(e, "lay", "dir", &n);
    assert_memory_equal(got, "file-over-dir", 13);
    free(got);
    got = read_obj(e, "lay", "dir/file.txt/child", &n);
    assert_memory_equal(got, "child", 5);
    free(got);
    /* overwrite, then delete: the directories left empty go too */
    put_bytes(e, "lay", "dir/file.txt", "bye", 3, 0);
    got = read_obj(e, "lay", "dir/file.txt", &n);
    assert_int_equal(n, 3);
    free(got);
    assert_int_equal(objstore_delete(e->os, "lay", "dir/file.txt", &err), 0);
    assert_int_equal(objstore_delete(e->os, "lay", "dir/file.txt", &err), 0);
    assert_int_equal(objstore_head(e->os, "lay", "dir/file.txt", &m, &err), -TY_ENOTFOUND);
    assert_string_equal(err.field, "NoSuchKey");
    snprintf(p, sizeof(p), "%s/lay/dir", e->dir);
    assert_int_not_equal(stat(p, &st), 0);
    snprintf(p, sizeof(p), "%s/.ty/tmp", e->dir);
    assert_int_equal(count_dir(p), 0);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_adoption(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    struct objstore_meta m;
    struct objstore_listing l;
    char p[PATH_MAX];

    /* a bucket directory made by hand, with files: a bucket with objects */
    snprintf(p, sizeof(p), "%s/handmade", e->dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/handmade/train", e->dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/handmade/train/part-0.csv", e->dir);
    write_file(p, "a,b\n");
    assert_int_equal(objstore_list(e->os, "handmade", NULL, NULL, NULL, NULL, 100, &l, &err), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.e[0].key, "train/part-0.csv");
    assert_int_equal(l.e[0].meta.size, 4);
    objstore_listing_cleanup(&l);
    /* a file the agent writes later into a known bucket: found by HEAD/GET */
    snprintf(p, sizeof(p), "%s/handmade/out", e->dir);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/handmade/out/model.tar.gz", e->dir);
    write_file(p, "model");
    assert_int_equal(objstore_head(e->os, "handmade", "out/model.tar.gz", &m, &err), 0);
    assert_int_equal(strlen(m.etag), 32);
    assert_int_equal(m.size, 5);
    objstore_meta_cleanup(&m);
    /* objstore_put_file indexes a file in place, or copies one from elsewhere */
    snprintf(p, sizeof(p), "%s/handmade/out/other.bin", e->dir);
    write_file(p, "other");
    assert_int_equal(objstore_put_file(e->os, "handmade", "out/other.bin", p, NULL, &err), 0);
    assert_int_equal(objstore_put_file(e->os, "handmade", "copied", p, "text/plain", &err), 0);
    assert_int_equal(objstore_list(e->os, "handmade", "out/", NULL, NULL, NULL, 100, &l, &err), 0);
    assert_int_equal(l.n, 2);
    objstore_listing_cleanup(&l);
    assert_int_equal(objstore_head(e->os, "handmade", "copied", &m, &err), 0);
    assert_string_equal(json_string_value(json_object_get(m.hdrs, "Content-Type")), "text/plain");
    objstore_meta_cleanup(&m);
}

/* A commit whose index write never happened (a crash or a Redis error between the rename and
   the index write): the next read finds the file is not the indexed version and reindexes it,
   instead of answering NoSuchKey for an object whose bytes are there. */
static void test_missed_index_write_is_repaired(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    struct objstore_meta m;
    char p[PATH_MAX], q[PATH_MAX];
    size_t n;
    char *got;

    assert_int_equal(objstore_bucket_create(e->os, "repair", NULL, &err), 0);
    put_bytes(e, "repair", "data/obj.txt", "version one", 11, 0);
    assert_int_equal(objstore_head(e->os, "repair", "data/obj.txt", &m, &err), 0);
    snprintf(p, sizeof(p), "%s/%s", e->dir, m.path);
    objstore_meta_cleanup(&m);
    /* the second version's bytes reach the object's path by rename; the index is not told */
    snprintf(q, sizeof(q), "%s/.ty/tmp/up.repair-test", e->dir);
    write_file(q, "version two!");
    assert_int_equal(rename(q, p), 0);
    /* HEAD sees the repair too: size and ETag of the bytes that are there */
    assert_int_equal(objstore_head(e->os, "repair", "data/obj.txt", &m, &err), 0);
    assert_int_equal(m.size, 12);
    objstore_meta_cleanup(&m);
    got = read_obj(e, "repair", "data/obj.txt", &n);
    assert_non_null(got);
    assert_int_equal(n, 12);
    assert_memory_equal(got, "version two!", 12);
    free(got);
    assert_int_equal(objstore_head(e->os, "repair", "data/obj.txt", &m, &err), 0);
    assert_int_equal(m.size, 12);
    assert_string_equal(m.etag, "4454c37d477892c28c0f3a87a373d526"); /* md5("version two!") */
    objstore_meta_cleanup(&m);
}

static void test_listing(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    struct objstore_listing l;
    static const char *const keys[] = {"a/1", "a/2", "a/b/3", "b", "c/x", "c/y", "d"};
    char *tok;

    assert_int_equal(objstore_bucket_create(e->os, "lst", NULL, &err), 0);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        put_bytes(e, "lst", keys[i], "x", 1, 0);
    assert_int_equal(objstore_list(e->os, "lst", NULL, "/", NULL, NULL, 1000, &l, &err), 0);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.e[0].key, "a/");
    assert_true(l.e[0].is_prefix);
    assert_string_equal(l.e[1].key, "b");
    assert_string_equal(l.e[2].key, "c/");
    assert_string_equal(l.e[3].key, "d");
    assert_false(l.truncated);
    objstore_listing_cleanup(&l);
    /* pages of one entry, a common prefix is never repeated */
    assert_int_equal(objstore_list(e->os, "lst", NULL, "/", NULL, NULL, 1, &l, &err), 0);
    assert_int_equal(l.n, 1);
    assert_true(l.truncated);
    tok = strdup(l.next);
    objstore_listing_cleanup(&l);
    assert_int_equal(objstore_list(e->os, "lst", NULL, "/", tok, NULL, 2, &l, &err), 0);
    free(tok);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.e[0].key, "b");
    assert_string_equal(l.e[1].key, "c/");
    assert_true(l.truncated);
    objstore_listing_cleanup(&l);
    assert_int_equal(objstore_list(e->os, "lst", "a/", "/", NULL, NULL, 10, &l, &err), 0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.e[2].key, "a/b/");
    objstore_listing_cleanup(&l);
    assert_int_equal(objstore_list(e->os, "lst", NULL, NULL, NULL, "c/x", 10, &l, &err), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.e[0].key, "c/y");
    objstore_listing_cleanup(&l);
    assert_int_equal(objstore_list(e->os, "lst", NULL, NULL, "!!bad", NULL, 10, &l, &err),
                     -TY_EINVAL);
}

static void test_listing_many(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    struct objstore_listing l;
    char key[64], *tok = NULL;
    size_t total = 0;
    int pages = 0;

    assert_int_equal(objstore_bucket_create(e->os, "many", NULL, &err), 0);
    for (int i = 0; i < 2500; i++) {
        snprintf(key, sizeof(key), "k/%05d", i);
        put_bytes(e, "many", key, "v", 1, 0);
    }
    do {
        assert_int_equal(objstore_list(e->os, "many", "k/", NULL, tok, NULL, 1000, &l, &err), 0);
        free(tok);
        tok = l.truncated ? strdup(l.next) : NULL;
        snprintf(key, sizeof(key), "k/%05zu", total);
        assert_string_equal(l.e[0].key, key);
        total += l.n;
        pages++;
        objstore_listing_cleanup(&l);
    } while (tok);
    assert_int_equal(total, 2500);
    assert_int_equal(pages, 3);
}

static void test_copy(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    struct objstore_meta m;
    size_t n;
    char *got;

    assert_int_equal(objstore_bucket_create(e->os, "cpy", NULL, &err), 0);
    put_bytes(e, "cpy", "src", "copy me", 7, 0);
    assert_int_equal(objstore_copy(e->os, "cpy", "src", "cpy", "dst/x", NULL, &m, &err), 0);
    got = read_obj(e, "cpy", "dst/x", &n);
    assert_int_equal(n, 7);
    assert_memory_equal(got, "copy me", 7);
    free(got);
    assert_int_equal(objstore_copy(e->os, "cpy", "nope", "cpy", "y", NULL, &m, &err),
                     -TY_ENOTFOUND);
}

static void test_multipart(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    char id[OBJSTORE_UPLOAD_ID_SZ], path[PATH_MAX], mpu[PATH_MAX];
    struct objstore_part want[2], *have;
    struct objstore_meta m;
    struct objstore_upload *u;
    size_t n;
    int trunc;
    char *big = malloc(OBJSTORE_MIN_PART);
    char *got;

    memset(big, 'a', OBJSTORE_MIN_PART);
    assert_int_equal(objstore_bucket_create(e->os, "mp", NULL, &err), 0);
    assert_int_equal(objstore_mpu_create(e->os, "mp", "obj", NULL, id, &err), 0);
    assert_int_equal(objstore_mpu_get(e->os, "mp", "other", id, NULL, &err), -TY_ENOTFOUND);
    assert_string_equal(err.field, "NoSuchUpload");
    for (int p = 1; p <= 2; p++) {
        const char *data = p == 1 ? big : "tail";
        size_t len = p == 1 ? OBJSTORE_MIN_PART : 4;
        unsigned char md[16];
        unsigned int ml;
        int fd = objstore_tmp_create(e->os, path, sizeof(path), &err);
        assert_int_equal(write(fd, data, len), (ssize_t)len);
        close(fd);
        EVP_Digest(data, len, md, &ml, EVP_md5(), NULL);
        for (int i = 0; i < 16; i++)
            snprintf(want[p - 1].etag + 2 * i, 3, "%02x", md[i]);
        want[p - 1].number = p;
        assert_int_equal(
            objstore_mpu_put_part(e->os, "mp", "obj", id, p, path, want[p - 1].etag, len, &err), 0);
    }
    assert_int_equal(objstore_mpu_parts(e->os, id, &have, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(have[0].size, OBJSTORE_MIN_PART);
    free(have);
    assert_int_equal(objstore_mpu_list(e->os, "mp", NULL, 10, &u, &n, &trunc, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(u[0].key, "obj");
    free(u[0].key);
    free(u);
    /* errors: order, unknown part, wrong etag, a small part that is not last */
    {
        struct objstore_part rev[2] = {want[1], want[0]};
        assert_int_equal(objstore_mpu_complete(e->os, "mp", "obj", id, rev, 2, &m, &err),
                         -TY_EINVAL);
        assert_string_equal(err.field, "InvalidPartOrder");
        rev[0] = want[0];
        rev[1] = want[1];
        rev[1].number = 3;
        assert_int_equal(objstore_mpu_complete(e->os, "mp", "obj", id, rev, 2, &m, &err),
                         -TY_EINVAL);
        assert_string_equal(err.field, "InvalidPart");
        rev[0] = want[1];
        rev[0].number = 1;
        assert_int_equal(objstore_mpu_complete(e->os, "mp", "obj", id, rev, 1, &m, &err),
                         -TY_EINVAL);
        assert_string_equal(err.field, "InvalidPart");
    }
    /* quotes around the etags are accepted, as S3 does */
    {
        struct objstore_part q[2] = {want[0], want[1]};
        q[0].etag[0] = '"';
        memcpy(q[0].etag + 1, want[0].etag, 32);
        q[0].etag[33] = '"';
        q[0].etag[34] = '\0';
        assert_int_equal(objstore_mpu_complete(e->os, "mp", "obj", id, q, 2, &m, &err), 0);
    }
    assert_int_equal(m.parts, 2);
    assert_non_null(strstr(m.etag, "-2"));
    assert_int_equal(strlen(m.etag), 34);
    /* partNumber: each part's bytes of the object */
    {
        uint64_t first = 1, len = 0;
        assert_int_equal(objstore_part_range(e->os, "mp", "obj", &m, 1, &first, &len, &err), 0);
        assert_true(first == 0 && len == OBJSTORE_MIN_PART);
        assert_int_equal(objstore_part_range(e->os, "mp", "obj", &m, 2, &first, &len, &err), 0);
        assert_true(first == OBJSTORE_MIN_PART && len == 4);
        assert_int_equal(objstore_part_range(e->os, "mp", "obj", &m, 3, &first, &len, &err),
                         -TY_EINVAL);
        assert_string_equal(err.field, "InvalidPart");
    }
    got = read_obj(e, "mp", "obj", &n);
    assert_int_equal(n, OBJSTORE_MIN_PART + 4);
    assert_memory_equal(got + OBJSTORE_MIN_PART, "tail", 4);
    free(got);
    snprintf(mpu, sizeof(mpu), "%s/.ty/mpu", e->dir);
    assert_int_equal(count_dir(mpu), 0);
    assert_int_equal(objstore_mpu_abort(e->os, "mp", "obj", id, &err), -TY_ENOTFOUND);
    /* abort removes the parts */
    assert_int_equal(objstore_mpu_create(e->os, "mp", "obj2", NULL, id, &err), 0);
    {
        int fd = objstore_tmp_create(e->os, path, sizeof(path), &err);
        close(fd);
        assert_int_equal(objstore_mpu_put_part(e->os, "mp", "obj2", id, 1, path,
                                               "d41d8cd98f00b204e9800998ecf8427e", 0, &err),
                         0);
    }
    assert_int_equal(count_dir(mpu), 1);
    assert_int_equal(objstore_mpu_abort(e->os, "mp", "obj2", id, &err), 0);
    assert_int_equal(count_dir(mpu), 0);
    snprintf(path, sizeof(path), "%s/.ty/tmp", e->dir);
    assert_int_equal(count_dir(path), 0);
    free(big);
}

/* A part number uploaded twice and listed twice: the entry whose ETag is the stored part's. */
static void test_multipart_part_twice(void **state)
{
    struct env *e = *state;
    struct objstore_part listed[2];
    struct objstore_meta m;
    struct ty_err err;
    char id[OBJSTORE_UPLOAD_ID_SZ], path[PATH_MAX], *got;
    size_t n;

    assert_int_equal(objstore_bucket_create(e->os, "twice", NULL, &err), 0);
    assert_int_equal(objstore_mpu_create(e->os, "twice", "k", NULL, id, &err), 0);
    for (int i = 0; i < 2; i++) {
        const char *data = i ? "AAAA" : "BBBB";
        unsigned char md[16];
        unsigned int ml;
        int fd = objstore_tmp_create(e->os, path, sizeof(path), &err);
        assert_int_equal(write(fd, data, 4), 4);
        close(fd);
        EVP_Digest(data, 4, md, &ml, EVP_md5(), NULL);
        for (int j = 0; j < 16; j++)
            snprintf(listed[i].etag + 2 * j, 3, "%02x", md[j]);
        listed[i].number = 1;
        assert_int_equal(
            objstore_mpu_put_part(e->os, "twice", "k", id, 1, path, listed[i].etag, 4, &err), 0);
    }
    assert_int_equal(objstore_mpu_complete(e->os, "twice", "k", id, listed, 2, &m, &err), 0);
    assert_int_equal(m.parts, 1);
    got = read_obj(e, "twice", "k", &n);
    assert_int_equal(n, 4);
    assert_memory_equal(got, "AAAA", 4);
    free(got);
}

/* If-None-Match: * and If-Match, checked when the object is committed. */
static void test_conditional_put(void **state)
{
    struct env *e = *state;
    struct objstore_cond none = {NULL, 1}, match = {NULL, 0};
    struct objstore_meta m, first;
    struct ty_err err;
    char path[PATH_MAX];
    uint64_t a = 9, len = 0;
    int fd;

    assert_int_equal(objstore_bucket_create(e->os, "cond", NULL, &err), 0);
    for (int round = 0; round < 2; round++) {
        fd = objstore_tmp_create(e->os, path, sizeof(path), &err);
        assert_int_equal(write(fd, "v1", 2), 2);
        close(fd);
        /* the first write creates the key; the second finds it there */
        assert_int_equal(objstore_put_tmp_cond(e->os, "cond", "k", path, "etag-one", 2, NULL, &none,
                                               &first, &err),
                         round ? -TY_ECONFLICT : 0);
        if (round) {
            assert_string_equal(err.field, "PreconditionFailed");
            unlink(path);
        }
    }
    assert_int_equal(objstore_cond_check(e->os, "cond", "k", &none, &err), -TY_ECONFLICT);
    assert_int_equal(objstore_cond_check(e->os, "cond", "new", &none, &err), 0);
    match.if_match = "\"other\", \"etag-one\"";
    assert_int_equal(objstore_cond_check(e->os, "cond", "k", &match, &err), 0);
    assert_int_equal(objstore_cond_check(e->os, "cond", "new", &match, &err), -TY_ENOTFOUND);
    assert_string_equal(err.field, "NoSuchKey");
    match.if_match = "other";
    fd = objstore_tmp_create(e->os, path, sizeof(path), &err);
    close(fd);
    assert_int_equal(
        objstore_put_tmp_cond(e->os, "cond", "k", path, "etag-two", 0, NULL, &match, &m, &err),
        -TY_ECONFLICT);
    unlink(path);
    /* a simple object is its own part 1 */
    assert_int_equal(objstore_head(e->os, "cond", "k", &m, &err), 0);
    assert_int_equal(objstore_part_range(e->os, "cond", "k", &m, 1, &a, &len, &err), 0);
    assert_true(a == 0 && len == 2);
    assert_int_equal(objstore_part_range(e->os, "cond", "k", &m, 2, &a, &len, &err), -TY_EINVAL);
    objstore_meta_cleanup(&m);
}

/* CRC-32C's check value (RFC 3720's polynomial), in one call and in pieces. */
static void test_crc32c(void **state)
{
    (void)state;
    assert_int_equal(ty_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(ty_crc32c(ty_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
    assert_int_equal(ty_crc32c(0, "", 0), 0);
}

/* ---- the aws-chunked receiver ------------------------------------------------------------ */

static struct s3_body *body_for(struct env *e, struct http_request *req, const char **names,
                                const char **values, size_t nh)
{
    char path[PATH_MAX];
    struct ty_err err;
    int fd = objstore_tmp_create(e->os, path, sizeof(path), &err);
    memset(req, 0, sizeof(*req));
    for (size_t i = 0; i < nh; i++) {
        req->headers[i].name = names[i];
        req->headers[i].value = values[i];
    }
    req->nheaders = nh;
    return s3_body_new(fd, path, req, NULL, NULL, NULL, NULL);
}

static void test_chunked(void **state)
{
    struct env *e = *state;
    struct http_request req;
    struct ty_err err;
    const char *names[] = {"x-amz-content-sha256", "x-amz-decoded-content-length", "x-amz-trailer"};
    const char *values[] = {"STREAMING-UNSIGNED-PAYLOAD-TRAILER", "11", "x-amz-checksum-crc32"};
    /* crc32("hello world") = 0x0d4a1185 -> DUoRhQ== */
    static const char good[] =
        "5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n";
    struct s3_body *b;
    const char *ck;

    /* fed one byte at a time: framing state survives any split */
    b = body_for(e, &req, names, values, 3);
    for (size_t i = 0; i < sizeof(good) - 1; i++)
        assert_int_equal(s3_body_write(b, good + i, 1), 0);
    assert_int_equal(s3_body_finish(b, &err), 0);
    assert_int_equal(s3_body_size(b), 11);
    assert_string_equal(s3_body_md5(b), "5eb63bbbe01eeed093cb22bb8f5acdc3");
    assert_int_equal(s3_body_checksum(b, &ck), S3_CK_CRC32);
    assert_string_equal(ck, "DUoRhQ==");
    s3_body_free(b);
    /* a wrong trailer checksum */
    b = body_for(e, &req, names, values, 3);
    {
        static const char bad[] = "b\r\nhello world\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n";
        assert_int_equal(s3_body_write(b, bad, sizeof(bad) - 1), 0);
    }
    assert_int_equal(s3_body_finish(b, &err), -TY_EINVAL);
    assert_string_equal(err.field, "BadDigest");
    s3_body_free(b);
    /* truncated, garbage sizes, data after the end */
    {
        static const char *const broken[] = {"5\r\nhel", "zz\r\nhello\r\n", "5\r\nhelloXX",
                                             "b\r\nhello world\r\n0\r\n\r\nmore"};
        for (size_t i = 0; i < 4; i++) {
            b = body_for(e, &req, names, values, 3);
            s3_body_write(b, broken[i], strlen(broken[i]));
            assert_int_not_equal(s3_body_finish(b, &err), 0);
            s3_body_free(b);
        }
    }
    /* Content-MD5 */
    {
        const char *n2[] = {"Content-MD5"};
        const char *v2[] = {"XrY7u+Ae7tCTyyK7j1rNww=="};
        b = body_for(e, &req, n2, v2, 1);
        assert_int_equal(s3_body_write(b, "hello world", 11), 0);
        assert_int_equal(s3_body_finish(b, &err), 0);
        s3_body_free(b);
        b = body_for(e, &req, n2, v2, 1);
        assert_int_equal(s3_body_write(b, "hello worle", 11), 0);
        assert_int_equal(s3_body_finish(b, &err), -TY_EINVAL);
        assert_string_equal(err.field, "BadDigest");
        s3_body_free(b);
    }
    {
        char p[PATH_MAX];
        snprintf(p, sizeof(p), "%s/.ty/tmp", e->dir);
        assert_int_equal(count_dir(p), 0);
    }
}

static void test_sweep(void **state)
{
    struct env *e = *state;
    struct ty_err err;
    char old[PATH_MAX], young[PATH_MAX], dir[PATH_MAX];
    struct timespec ts[2] = {{0, 0}, {0, 0}};
    int fd;

    fd = objstore_tmp_create(e->os, old, sizeof(old), &err);
    close(fd);
    fd = objstore_tmp_create(e->os, young, sizeof(young), &err);
    close(fd);
    ts[0].tv_sec = ts[1].tv_sec = time(NULL) - 2 * 86400;
    assert_int_equal(utimensat(AT_FDCWD, old, ts, 0), 0);
    assert_int_equal(objstore_sweep_tmp(e->dir, 86400), 1);
    assert_int_not_equal(access(old, F_OK), 0);
    assert_int_equal(access(young, F_OK), 0);
    unlink(young);
    snprintf(dir, sizeof(dir), "%s/.ty/tmp", e->dir);
    assert_int_equal(count_dir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test_setup_teardown(test_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_objects_layout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missed_index_write_is_repaired, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adoption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listing_many, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multipart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multipart_part_twice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conditional_put, setup, teardown),
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test_setup_teardown(test_chunked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
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
