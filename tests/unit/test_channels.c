/*
 * test_channels.c - the pure parts of staging a job's data (channels.h): the ShardedByS3Key
 * split, key -> path mapping, ManifestFile parsing, streamed copies with gunzip (multi-member,
 * empty, not gzip, larger than the copy buffer), and sourcedir.tar.gz extraction with its
 * path-traversal, absolute-path, symlink and hard-link rejections.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "channels.h"
#include "stage.h"

static char tmp[256];

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* new: the file's bytes (NUL-terminated), *len set. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n >= 0);
    rewind(f);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Appends one gzip member holding data to path (libarchive's raw format + gzip filter). */
static void gzip_append(const char *path, const char *data, size_t len)
{
    char part[512];
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    size_t plen;
    char *bytes;
    FILE *f;

    snprintf(part, sizeof(part), "%s.part", path);
    assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    assert_int_equal(archive_write_set_format_raw(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, part), ARCHIVE_OK);
    archive_entry_set_pathname(e, "x");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_size(e, (la_int64_t)len);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    if (len)
        assert_int_equal(archive_write_data(a, data, len), (la_ssize_t)len);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    archive_entry_free(e);
    bytes = read_file(part, &plen);
    f = fopen(path, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, plen, f), plen);
    fclose(f);
    free(bytes);
    unlink(part);
}

struct tar_entry {
    const char *name;
    int type;         /* 'f' file, 'd' directory, 'l' symlink, 'h' hard link */
    const char *data; /* file contents, or link target */
};

static void make_targz(const char *path, const struct tar_entry *ents, size_t n)
{
    struct archive *a = archive_write_new();

    assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, ents[i].name);
        archive_entry_set_perm(e, 0755);
        switch (ents[i].type) {
        case 'f':
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_size(e, (la_int64_t)strlen(ents[i].data));
            break;
        case 'd':
            archive_entry_set_filetype(e, AE_IFDIR);
            break;
        case 'l':
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_symlink(e, ents[i].data);
            break;
        default:
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, ents[i].data);
            break;
        }
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        if (ents[i].type == 'f' && ents[i].data[0])
            archive_write_data(a, ents[i].data, strlen(ents[i].data));
        archive_entry_free(e);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

static int untar(const char *tarpath, const char *dest, struct ty_err *err)
{
    int fd = open(tarpath, O_RDONLY);
    int rc;

    assert_true(fd >= 0);
    rc = channels_untar_fd(fd, dest, "sourcedir.tar.gz", err);
    close(fd);
    return rc;
}

/* ---- sharding ---- */

static void test_shard(void **state)
{
    int owners[2][7] = {{0}};
    (void)state;

    for (uint64_t i = 0; i < 7; i++) {
        assert_true(channels_shard_mine("FullyReplicated", i, 0, 2));
        assert_true(channels_shard_mine("FullyReplicated", i, 1, 2));
        assert_true(channels_shard_mine(NULL, i, 1, 2));
        assert_true(channels_shard_mine("ShardedByS3Key", i, 0, 1)); /* one host: all */
        for (int h = 0; h < 2; h++)
            owners[h][i] = channels_shard_mine("ShardedByS3Key", i, h, 2);
        /* exactly one of the hosts takes each object */
        assert_int_equal(owners[0][i] + owners[1][i], 1);
    }
    /* sorted key index mod host count: host 0 takes 0, 2, 4, 6 */
    assert_true(owners[0][0] && owners[0][2] && owners[0][4] && owners[0][6]);
    assert_true(owners[1][1] && owners[1][3] && owners[1][5]);
    /* three hosts */
    assert_true(channels_shard_mine("ShardedByS3Key", 5, 2, 3));
    assert_false(channels_shard_mine("ShardedByS3Key", 5, 1, 3));
    /* a host index outside the job takes nothing */
    assert_false(channels_shard_mine("ShardedByS3Key", 0, 3, 3));
    assert_false(channels_shard_mine("ShardedByS3Key", 0, -1, 3));
}

/* ---- key -> path ---- */

static void test_rel_path(void **state)
{
    char out[256];
    struct ty_err err;
    (void)state;

    assert_int_equal(channels_rel_path("data/train", "data/train/a.csv", out, sizeof(out), &err),
                     0);
    assert_string_equal(out, "a.csv");
    assert_int_equal(
        channels_rel_path("data/train/", "data/train/sub/b.csv", out, sizeof(out), &err), 0);
    assert_string_equal(out, "sub/b.csv");
    /* a partial last segment: relative to the prefix's directory */
    assert_int_equal(channels_rel_path("data/tr", "data/train/a.csv", out, sizeof(out), &err), 0);
    assert_string_equal(out, "train/a.csv");
    assert_int_equal(channels_rel_path("data/tr", "data/train-2.csv", out, sizeof(out), &err), 0);
    assert_string_equal(out, "train-2.csv");
    /* the exact object: its base name */
    assert_int_equal(channels_rel_path("data/x.csv", "data/x.csv", out, sizeof(out), &err), 0);
    assert_string_equal(out, "x.csv");
    assert_int_equal(channels_rel_path("x.csv", "x.csv", out, sizeof(out), &err), 0);
    assert_string_equal(out, "x.csv");
    /* the whole bucket */
    assert_int_equal(channels_rel_path("", "a/b.csv", out, sizeof(out), &err), 0);
    assert_string_equal(out, "a/b.csv");
    /* folder markers are skipped */
    assert_int_equal(channels_rel_path("data/", "data/sub/", out, sizeof(out), &err), 1);
    /* keys that cannot be files */
    assert_true(channels_rel_path("data/", "data/../../etc/passwd", out, sizeof(out), &err) < 0);
    assert_non_null(strstr(err.msg, "ClientError"));
    assert_true(channels_rel_path("data/", "data/a//b", out, sizeof(out), &err) < 0);
    assert_true(channels_rel_path("data/", "data/./a", out, sizeof(out), &err) < 0);
    assert_true(channels_rel_path("data", "data//a", out, sizeof(out), &err) < 0);
    assert_true(channels_rel_path("data/", "other/a", out, sizeof(out), &err) < 0);
    assert_true(channels_rel_path("", "a/b.csv", out, 4, &err) < 0); /* too long */
}

/* ---- ManifestFile ---- */

static void test_manifest(void **state)
{
    char path[512], bucket[64], prefix[256];
    struct ty_err err;
    json_t *keys = NULL;
    const char *good = "[{\"prefix\": \"s3://mb/data/\"}, \"b.csv\", \"a.csv\", \"sub/c.csv\", "
                       "\"a.csv\"]";
    (void)state;

    snprintf(path, sizeof(path), "%s/manifest.json", tmp);
    write_file(path, good, strlen(good));
    assert_int_equal(channels_manifest_parse(path, "s3://mb/m.json", bucket, sizeof(bucket), prefix,
                                             sizeof(prefix), &keys, &err),
                     0);
    assert_string_equal(bucket, "mb");
    assert_string_equal(prefix, "data/");
    assert_int_equal(json_array_size(keys), 3); /* sorted, duplicate dropped */
    assert_string_equal(json_string_value(json_array_get(keys, 0)), "data/a.csv");
    assert_string_equal(json_string_value(json_array_get(keys, 1)), "data/b.csv");
    assert_string_equal(json_string_value(json_array_get(keys, 2)), "data/sub/c.csv");
    json_decref(keys);

    {
        static const char *const bad[] = {
            "not json",
            "{\"prefix\": \"s3://mb/\"}",
            "[\"a.csv\"]",
            "[{\"prefix\": \"http://x/\"}, \"a\"]",
            "[{\"prefix\": \"s3://mb/\"}, 3]",
            "[{\"prefix\": \"s3://mb/\"}, \"\"]",
            "[]",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            keys = NULL;
            write_file(path, bad[i], strlen(bad[i]));
            assert_int_equal(channels_manifest_parse(path, "s3://mb/m.json", bucket, sizeof(bucket),
                                                     prefix, sizeof(prefix), &keys, &err),
                             -TY_EINVAL);
            assert_null(keys);
            assert_non_null(strstr(err.msg, "ClientError: ManifestFile 's3://mb/m.json'"));
        }
    }
    unlink(path);
}

/* ---- streamed copies and gunzip ---- */

static void test_copy_gunzip(void **state)
{
    char src[512], dst[512];
    struct ty_err err;
    uint64_t bytes = 0;
    size_t len, big = 3 * CHANNELS_CHUNK + 123;
    char *data = malloc(big), *got;
    int fd;
    (void)state;

    assert_non_null(data);
    for (size_t i = 0; i < big; i++)
        data[i] = (char)('a' + (i * 7) % 26);
    /* two gzip members, the first larger than the copy buffer */
    snprintf(src, sizeof(src), "%s/in.gz", tmp);
    unlink(src);
    gzip_append(src, data, big);
    gzip_append(src, "tail\n", 5);
    snprintf(dst, sizeof(dst), "%s/out/deep/dir/part.csv.gz", tmp);
    fd = open(src, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(channels_copy_fd(fd, dst, 1, "s3://b/in.gz", &bytes, &err), 0);
    close(fd);
    assert_int_equal(bytes, big + 5);
    got = read_file(dst, &len);
    assert_int_equal(len, big + 5);
    assert_memory_equal(got, data, big);
    assert_memory_equal(got + big, "tail\n", 5);
    free(got);

    /* a plain copy keeps the bytes as they are */
    fd = open(src, O_RDONLY);
    assert_int_equal(channels_copy_fd(fd, dst, 0, "s3://b/in.gz", &bytes, &err), 0);
    close(fd);
    got = read_file(dst, &len);
    free(got);
    {
        size_t slen;
        char *s = read_file(src, &slen);
        assert_int_equal(len, slen);
        assert_int_equal(bytes, slen);
        free(s);
    }

    /* not gzip: a ClientError, and no file left behind */
    write_file(src, "plain text\n", 11);
    fd = open(src, O_RDONLY);
    assert_true(channels_copy_fd(fd, dst, 1, "s3://b/plain.csv", &bytes, &err) < 0);
    close(fd);
    assert_non_null(strstr(err.msg, "ClientError: s3://b/plain.csv is not gzip data"));
    assert_false(exists(dst));

    /* truncated gzip */
    unlink(src);
    gzip_append(src, data, big);
    assert_int_equal(truncate(src, 200), 0);
    fd = open(src, O_RDONLY);
    assert_true(channels_copy_fd(fd, dst, 1, "s3://b/cut.gz", &bytes, &err) < 0);
    close(fd);
    assert_non_null(strstr(err.msg, "ClientError"));
    assert_false(exists(dst));

    /* an empty object stays an empty file */
    write_file(src, "", 0);
    fd = open(src, O_RDONLY);
    assert_int_equal(channels_copy_fd(fd, dst, 1, "s3://b/empty.gz", &bytes, &err), 0);
    close(fd);
    assert_int_equal(bytes, 0);
    assert_true(exists(dst));
    free(data);
}

/* ---- sourcedir.tar.gz ---- */

static void test_untar_ok(void **state)
{
    char tarp[512], dest[512], p[600];
    struct ty_err err;
    struct stat st;
    size_t len;
    char *got;
    const struct tar_entry ok[] = {
        {"./", 'd', ""},
        {"./train.sh", 'f', "echo hi\n"},
        {"sub/", 'd', ""},
        {"sub/util.sh", 'f', "x=1\n"},
        {"sub/link", 'l', "../train.sh"},
        {"sub/deeper/ok", 'l', "../util.sh"},
    };
    (void)state;

    snprintf(tarp, sizeof(tarp), "%s/ok.tar.gz", tmp);
    snprintf(dest, sizeof(dest), "%s/code-ok", tmp);
    stage_remove(dest);
    assert_int_equal(mkdir(dest, 0755), 0);
    make_targz(tarp, ok, sizeof(ok) / sizeof(ok[0]));
    assert_int_equal(untar(tarp, dest, &err), 0);
    snprintf(p, sizeof(p), "%s/train.sh", dest);
    got = read_file(p, &len);
    assert_string_equal(got, "echo hi\n");
    free(got);
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0444, 0444); /* readable by any container user */
    snprintf(p, sizeof(p), "%s/sub/util.sh", dest);
    assert_true(exists(p));
    snprintf(p, sizeof(p), "%s/sub/link", dest);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    stage_remove(dest);
}

static void test_untar_rejects(void **state)
{
    char tarp[512], dest[512], p[600];
    struct ty_err err;
    const struct tar_entry dotdot[] = {{"ok.sh", 'f', "1"}, {"../evil.sh", 'f', "pwned"}};
    const struct tar_entry nested[] = {{"a/../../evil2.sh", 'f', "pwned"}};
    const struct tar_entry absolute[] = {{"/tmp/ty-evil-abs.sh", 'f', "pwned"}};
    const struct tar_entry symlink_out[] = {{"esc", 'l', "../../etc"}};
    const struct tar_entry symlink_abs[] = {{"esc", 'l', "/etc/passwd"}};
    const struct tar_entry symlink_then_write[] = {{"d", 'l', ".."}, {"d/evil3.sh", 'f', "x"}};
    const struct tar_entry hard[] = {{"f", 'f', "1"}, {"h", 'h', "f"}};
    const struct {
        const struct tar_entry *e;
        size_t n;
        const char *needle;
    } cases[] = {
        {dotdot, 2, "'../evil.sh'"},
        {nested, 1, "'a/../../evil2.sh'"},
        {absolute, 1, "absolute path"},
        {symlink_out, 1, "points outside"},
        {symlink_abs, 1, "points outside"},
        {symlink_then_write, 2, "points outside"},
        {hard, 2, "hard link"},
    };
    (void)state;

    snprintf(tarp, sizeof(tarp), "%s/bad.tar.gz", tmp);
    snprintf(dest, sizeof(dest), "%s/jail/code", tmp);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(p, sizeof(p), "%s/jail", tmp);
        stage_remove(p);
        assert_int_equal(mkdir(p, 0755), 0);
        assert_int_equal(mkdir(dest, 0755), 0);
        make_targz(tarp, cases[i].e, cases[i].n);
        assert_int_equal(untar(tarp, dest, &err), -TY_EINVAL);
        assert_non_null(strstr(err.msg, "ClientError: sourcedir.tar.gz"));
        assert_non_null(strstr(err.msg, cases[i].needle));
        /* nothing escaped */
        snprintf(p, sizeof(p), "%s/jail/evil.sh", tmp);
        assert_false(exists(p));
        snprintf(p, sizeof(p), "%s/evil2.sh", tmp);
        assert_false(exists(p));
        snprintf(p, sizeof(p), "%s/jail/evil3.sh", tmp);
        assert_false(exists(p));
        assert_false(exists("/tmp/ty-evil-abs.sh"));
    }
    /* not an archive at all */
    write_file(tarp, "garbage", 7);
    assert_int_equal(untar(tarp, dest, &err), -TY_EINVAL);
    assert_non_null(strstr(err.msg, "ClientError: cannot read sourcedir.tar.gz"));
    snprintf(p, sizeof(p), "%s/jail", tmp);
    stage_remove(p);
}

/* ---- the hostile-archive corpus: judged by where things resolve, not by their text ---- */

/* One snapshot of a host folder's own state, to show nothing outside the job's tree changed. */
struct snap {
    int exists;
    mode_t mode;
    uid_t uid;
    ino_t ino;
};

static struct snap snap_of(const char *path)
{
    struct snap s = {0};
    struct stat st;
    if (lstat(path, &st) == 0) {
        s.exists = 1;
        s.mode = st.st_mode;
        s.uid = st.st_uid;
        s.ino = st.st_ino;
    }
    return s;
}

static void snap_same(const char *path, struct snap before)
{
    struct snap after = snap_of(path);
    assert_int_equal(after.exists, before.exists);
    assert_int_equal(after.mode, before.mode);
    assert_int_equal(after.uid, before.uid);
    assert_int_equal(after.ino, before.ino);
}

/*
 * Every symlink the unpacker left under dest (walked without following) resolves, as the
 * kernel sees it, to dest or below it; a dangling one is checked on the part that resolves.
 */
static void links_stay_inside(const char *dest, const char *top)
{
    char real_top[PATH_MAX], p[PATH_MAX], res[PATH_MAX];
    DIR *d = opendir(dest);
    struct dirent *de;

    assert_non_null(realpath(top, real_top));
    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dest, de->d_name);
        assert_int_equal(lstat(p, &st), 0);
        if (S_ISLNK(st.st_mode)) {
            if (realpath(p, res) != NULL) {
                size_t l = strlen(real_top);
                if (strncmp(res, real_top, l) != 0 || (res[l] != '\0' && res[l] != '/'))
                    fail_msg("link '%s' resolves to '%s', outside '%s'", p, res, real_top);
            }
        } else if (S_ISDIR(st.st_mode)) {
            links_stay_inside(p, top);
        }
    }
    closedir(d);
}

static void test_untar_hostile_corpus(void **state)
{
    /* the chain: a/b -> .. is fine, but a/b/.. is the tree's parent, not a */
    const struct tar_entry chain[] = {
        {"a/", 'd', ""},      {"a/b", 'l', ".."},   {"l1", 'l', "a/b/.."},     {"l2", 'l', "l1/.."},
        {"l3", 'l', "l2/.."}, {"l4", 'l', "l3/.."}, {"l4/evil", 'f', "pwned"},
    };
    const struct tar_entry chain2[] = {
        {"a/", 'd', ""}, {"a/b", 'l', ".."}, {"l1", 'l', "a/b/../x"}};
    const struct tar_entry dotted[] = {{"x/", 'd', ""}, {"x/y", 'l', "./../../.."}};
    const struct tar_entry mid_dotdot[] = {{"s/", 'd', ""}, {"s/t", 'l', "../s/../.."}};
    const struct tar_entry link_to_link[] = {
        {"a/", 'd', ""}, {"a/up", 'l', ".."}, {"b", 'l', "a/up/a/up/.."}};
    const struct tar_entry link_dir_then_file[] = {
        {"a/", 'd', ""}, {"a/b", 'l', ".."}, {"a/b/evil", 'f', "x"}};
    const struct tar_entry abs_entry[] = {{"/etc/ty-evil", 'f', "x"}};
    const struct tar_entry dd_entry[] = {{"a/../../ty-evil", 'f', "x"}};
    const struct tar_entry abs_link[] = {{"e", 'l', "/"}};
    const struct tar_entry hard_out[] = {{"h", 'h', "../../outside/canary"}};
    const struct tar_entry dir_over_link[] = {{"u", 'l', "."}, {"u/", 'd', ""}};
    const struct {
        const struct tar_entry *e;
        size_t n;
    } bad[] = {
        {chain, 7},      {chain2, 3},        {dotted, 2},
        {mid_dotdot, 2}, {link_to_link, 3},  {link_dir_then_file, 3},
        {abs_entry, 1},  {dd_entry, 1},      {abs_link, 1},
        {hard_out, 1},   {dir_over_link, 2},
    };
    /* links that stay inside, however they chain: these unpack */
    const struct tar_entry fine[] = {
        {"a/", 'd', ""},
        {"a/up", 'l', ".."},
        {"c", 'l', "a/up"},
        {"d", 'l', "c/c/c/a"},
        {"a/e", 'l', "../c/a/up"},
        {"a/f/", 'd', ""},
        {"a/f/g", 'l', "../../a/./f"},
        {"dev", 'f', "not a device"},
    };
    char jail[300], dest[400], outside[300], canary[400], tarp[300], p[700];
    struct snap s_out, s_can, s_jail;
    struct ty_err err;
    (void)state;

    snprintf(jail, sizeof(jail), "%s/corpus", tmp);
    snprintf(dest, sizeof(dest), "%s/code", jail);
    snprintf(outside, sizeof(outside), "%s/outside", tmp);
    snprintf(canary, sizeof(canary), "%s/canary", outside);
    snprintf(tarp, sizeof(tarp), "%s/corpus.tar.gz", tmp);
    stage_remove(outside);
    assert_int_equal(mkdir(outside, 0700), 0);
    write_file(canary, "canary", 6);
    assert_int_equal(chmod(canary, 0600), 0);
    s_out = snap_of(outside);
    s_can = snap_of(canary);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        stage_remove(jail);
        assert_int_equal(mkdir(jail, 0700), 0);
        assert_int_equal(mkdir(dest, 0755), 0);
        s_jail = snap_of(jail);
        make_targz(tarp, bad[i].e, bad[i].n);
        ty_err_clear(&err);
        if (untar(tarp, dest, &err) != -TY_EINVAL)
            fail_msg("hostile archive %zu was unpacked", i);
        assert_non_null(strstr(err.msg, "ClientError: sourcedir.tar.gz"));
        links_stay_inside(dest, dest);
        snap_same(outside, s_out);
        snap_same(canary, s_can);
        snap_same(jail, s_jail);
        snprintf(p, sizeof(p), "%s/evil", jail);
        assert_false(exists(p));
        snprintf(p, sizeof(p), "%s/evil", tmp);
        assert_false(exists(p));
        snprintf(p, sizeof(p), "%s/ty-evil", tmp);
        assert_false(exists(p));
        assert_false(exists("/etc/ty-evil"));
    }
    stage_remove(jail);
    assert_int_equal(mkdir(jail, 0700), 0);
    assert_int_equal(mkdir(dest, 0755), 0);
    make_targz(tarp, fine, sizeof(fine) / sizeof(fine[0]));
    ty_err_clear(&err);
    assert_int_equal(untar(tarp, dest, &err), 0);
    links_stay_inside(dest, dest);
    {
        char got[PATH_MAX], want[PATH_MAX];
        snprintf(p, sizeof(p), "%s/d", dest); /* c/c/c/a: the code folder's own a */
        assert_non_null(realpath(p, got));
        snprintf(p, sizeof(p), "%s/a", dest);
        assert_non_null(realpath(p, want));
        assert_string_equal(got, want);
    }
    snap_same(outside, s_out);
    stage_remove(jail);
    stage_remove(outside);
}

/* A checkpoint LocalPath under /opt/ml is made below the job's tree, never through a link. */
static void test_ckpt_dir_not_through_links(void **state)
{
    char host[512], outside[512], p[700], link[700];
    struct snap s_out;
    struct stat st;
    struct ty_err err;
    (void)state;

    snprintf(host, sizeof(host), "%s/ckpt-host", tmp);
    snprintf(outside, sizeof(outside), "%s/ckpt-outside", tmp);
    stage_remove(host);
    stage_remove(outside);
    assert_int_equal(mkdir(host, 0755), 0);
    assert_int_equal(mkdir(outside, 0700), 0);
    snprintf(p, sizeof(p), "%s/code", host);
    assert_int_equal(mkdir(p, 0777), 0);
    /* what the archive achieved: code/l4 is a host folder */
    snprintf(link, sizeof(link), "%s/code/l4", host);
    assert_int_equal(symlink(outside, link), 0);
    s_out = snap_of(outside);

    ty_err_clear(&err);
    assert_int_equal(stage_ckpt_dir(host, "code/l4", "/opt/ml/code/l4", &err), -TY_EINVAL);
    assert_non_null(strstr(err.msg, "ClientError: CheckpointConfig.LocalPath '/opt/ml/code/l4'"));
    ty_err_clear(&err);
    assert_int_equal(stage_ckpt_dir(host, "code/l4/redis", "/opt/ml/code/l4/redis", &err),
                     -TY_EINVAL);
    snap_same(outside, s_out);
    snprintf(p, sizeof(p), "%s/redis", outside);
    assert_false(exists(p));

    /* a plain path is made, 0777 whatever the umask */
    ty_err_clear(&err);
    assert_int_equal(stage_ckpt_dir(host, "checkpoints/run1", "/opt/ml/checkpoints/run1", &err), 0);
    snprintf(p, sizeof(p), "%s/checkpoints/run1", host);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0777);
    /* again: an existing folder is fine */
    assert_int_equal(stage_ckpt_dir(host, "checkpoints/run1", "/opt/ml/checkpoints/run1", &err), 0);
    stage_remove(host);
    stage_remove(outside);
}

static void test_fmt_size(void **state)
{
    char s[32];
    (void)state;

    channels_fmt_size(0, s, sizeof(s));
    assert_string_equal(s, "0 bytes");
    channels_fmt_size(999, s, sizeof(s));
    assert_string_equal(s, "999 bytes");
    channels_fmt_size(12300000, s, sizeof(s));
    assert_string_equal(s, "12.3 MB");
    channels_fmt_size(1500, s, sizeof(s));
    assert_string_equal(s, "1.5 KB");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard),
        cmocka_unit_test(test_rel_path),
        cmocka_unit_test(test_manifest),
        cmocka_unit_test(test_copy_gunzip),
        cmocka_unit_test(test_untar_ok),
        cmocka_unit_test(test_untar_rejects),
        cmocka_unit_test(test_fmt_size),
        cmocka_unit_test(test_untar_hostile_corpus),
        cmocka_unit_test(test_ckpt_dir_not_through_links),
    };
    int rc;

    snprintf(tmp, sizeof(tmp), "/tmp/ty-test-channels-XXXXXX");
    if (!mkdtemp(tmp))
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    stage_remove(tmp);
    return rc;
}
