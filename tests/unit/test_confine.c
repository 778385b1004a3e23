/*
 * test_confine.c - what the agent reads from and writes into a job's staged tree never leads
 * outside it (confine.h and its users): the walker never follows a symlink and skips FIFOs,
 * opens refuse symlinked parents and non-regular files without blocking, the tar.gz archiver
 * keeps links as links, the failure file, rm -rf, channel copies and sourcedir.tar.gz
 * extraction stay below their folder, and the staging folder's name is an HMAC of the job's.
 * Each test puts a canary file outside the tree and checks it is never read nor touched; one
 * swaps a folder for a link to the canary in a loop while the tree is archived and walked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "artifacts.h"
#include "channels.h"
#include "confine.h"
#include "stage.h"

#define CANARY "CANARY-7f3a9c1e-not-for-jobs"

static char tmp[256];  /* the test's folder */
static char tree[300]; /* the job's staging folder: tmp/job */
static char host[300]; /* a host folder with the canary: tmp/host */

static void write_file(const char *path, const char *data)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, strlen(data), f), strlen(data));
    assert_int_equal(fclose(f), 0);
}

/* out = "<a>/<b>" */
static void pathf(char *out, size_t n, const char *a, const char *b)
{
    assert_true(snprintf(out, n, "%s/%s", a, b) < (int)n);
}

static void on_alarm(int sig)
{
    (void)sig;
    fprintf(stderr, "test_confine: blocked (an open of a FIFO?)\n");
    _exit(1);
}

static int setup(void **state)
{
    char p[512];
    (void)state;
    snprintf(tmp, sizeof(tmp), "/tmp/ty-confine-XXXXXX");
    assert_non_null(mkdtemp(tmp));
    snprintf(tree, sizeof(tree), "%s/job", tmp);
    snprintf(host, sizeof(host), "%s/host", tmp);
    assert_int_equal(mkdir(tree, 0755), 0);
    assert_int_equal(mkdir(host, 0755), 0);
    pathf(p, sizeof(p), host, "secret.txt");
    write_file(p, CANARY "\n");
    pathf(p, sizeof(p), host, "failure");
    write_file(p, CANARY "\n");
    pathf(p, sizeof(p), host, "sub");
    assert_int_equal(mkdir(p, 0755), 0);
    pathf(p, sizeof(p), host, "sub/deep.txt");
    write_file(p, CANARY "\n");
    signal(SIGALRM, on_alarm);
    alarm(20);
    return 0;
}

static int teardown(void **state)
{
    char cmd[600];
    (void)state;
    alarm(0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    return system(cmd) == 0 ? 0 : -1;
}

/* The canary folder is as setup left it. */
static void host_untouched(void)
{
    char p[512];
    struct stat st;
    FILE *f;
    char buf[64] = {0};

    pathf(p, sizeof(p), host, "secret.txt");
    f = fopen(p, "rb");
    assert_non_null(f);
    assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
    fclose(f);
    assert_string_equal(buf, CANARY "\n");
    pathf(p, sizeof(p), host, "sub/deep.txt");
    assert_int_equal(stat(p, &st), 0);
    pathf(p, sizeof(p), host, "pwned");
    assert_int_not_equal(lstat(p, &st), 0);
}

/* tree/<rel> = symlink to target. */
static void link_in_tree(const char *rel, const char *target)
{
    char p[512];
    pathf(p, sizeof(p), tree, rel);
    assert_int_equal(symlink(target, p), 0);
}

static void mkdir_in_tree(const char *rel)
{
    char p[512];
    pathf(p, sizeof(p), tree, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

static void file_in_tree(const char *rel, const char *data)
{
    char p[512];
    pathf(p, sizeof(p), tree, rel);
    write_file(p, data);
}

static void fifo_in_tree(const char *rel)
{
    char p[512];
    pathf(p, sizeof(p), tree, rel);
    assert_int_equal(mkfifo(p, 0644), 0);
}

struct seen {
    char names[32][64];
    char types[32][16];
    int n;
};

static int record(void *ud, const struct confine_entry *e)
{
    struct seen *s = ud;
    assert_true(s->n < 32);
    snprintf(s->names[s->n], sizeof(s->names[0]), "%s", e->rel);
    snprintf(s->types[s->n], sizeof(s->types[0]), "%s", confine_type(&e->st));
    s->n++;
    return 0;
}

static void test_walk_never_follows(void **state)
{
    char abs_link[512];
    struct seen s;
    int root, top;
    (void)state;

    mkdir_in_tree("model");
    mkdir_in_tree("model/sub");
    file_in_tree("model/a.txt", "a");
    file_in_tree("model/sub/b.txt", "b");
    pathf(abs_link, sizeof(abs_link), host, "secret.txt");
    link_in_tree("model/f_abs", abs_link);
    link_in_tree("model/d_abs", host);
    link_in_tree("model/d_rel", "../../host");
    fifo_in_tree("model/fifo");

    memset(&s, 0, sizeof(s));
    root = confine_openroot(tree);
    assert_true(root >= 0);
    top = confine_opendir(root, "model", 0);
    assert_true(top >= 0);
    assert_int_equal(confine_walk(top, record, &s), 0);
    close(top);
    close(root);
    /* sorted, depth first, links and FIFOs reported as what they are, never entered */
    assert_int_equal(s.n, 7);
    assert_string_equal(s.names[0], "a.txt");
    assert_string_equal(s.names[1], "d_abs");
    assert_string_equal(s.types[1], "symlink");
    assert_string_equal(s.names[2], "d_rel");
    assert_string_equal(s.types[2], "symlink");
    assert_string_equal(s.names[3], "f_abs");
    assert_string_equal(s.types[3], "symlink");
    assert_string_equal(s.names[4], "fifo");
    assert_string_equal(s.types[4], "fifo");
    assert_string_equal(s.names[5], "sub");
    assert_string_equal(s.names[6], "sub/b.txt");
    host_untouched();
}

static void test_open_refuses_links_and_specials(void **state)
{
    struct stat st;
    int root, fd;
    (void)state;

    mkdir_in_tree("output");
    link_in_tree("model", host); /* /opt/ml/model replaced by a link to a host folder */
    link_in_tree("output/link.txt", "../../host/secret.txt");
    fifo_in_tree("output/fifo");
    file_in_tree("output/ok.txt", "ok");

    root = confine_openroot(tree);
    assert_true(root >= 0);
    assert_int_equal(confine_opendir(root, "model", 0), -ENOTDIR);
    assert_int_equal(confine_open_read(root, "model/secret.txt", NULL), -ENOTDIR);
    assert_int_equal(confine_open_read(root, "output/link.txt", NULL), -EINVAL);
    assert_int_equal(confine_open_read(root, "output/fifo", NULL), -EINVAL); /* no block */
    assert_int_equal(confine_open_read(root, "output", NULL), -EINVAL);
    assert_int_equal(confine_open_read(root, "../host/secret.txt", NULL), -EINVAL);
    assert_int_equal(confine_opendir(root, "output/..", 0), -EINVAL);
    fd = confine_open_read(root, "output/ok.txt", &st);
    assert_true(fd >= 0);
    assert_int_equal(st.st_size, 2);
    close(fd);
    /* a root that is itself a link is refused */
    {
        char p[512];
        pathf(p, sizeof(p), tmp, "rootlink");
        assert_int_equal(symlink(host, p), 0);
        assert_true(confine_openroot(p) < 0);
    }
    /* creating through a link fails; creating over a link replaces the link, not its target */
    assert_true(confine_create(root, "model/pwned", 0644, 0777) < 0);
    fd = confine_create(root, "output/link.txt", 0644, 0);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "mine", 4), 4);
    close(fd);
    fd = confine_create(root, "new/deeper/file", 0644, 0777);
    assert_true(fd >= 0);
    close(fd);
    close(root);
    host_untouched();
}

/* The archive's entries as "name:type[:target or content]" lines, in order. */
static void archive_listing(const char *path, char *out, size_t n)
{
    struct archive *ar = archive_read_new();
    struct archive_entry *e;
    size_t used = 0;

    out[0] = '\0';
    archive_read_support_filter_gzip(ar);
    archive_read_support_format_tar(ar);
    assert_int_equal(archive_read_open_filename(ar, path, 16384), ARCHIVE_OK);
    while (archive_read_next_header(ar, &e) == ARCHIVE_OK) {
        char data[128] = {0};
        mode_t t = archive_entry_filetype(e);
        if (t == AE_IFREG)
            assert_true(archive_read_data(ar, data, sizeof(data) - 1) >= 0);
        used += (size_t)snprintf(out + used, n - used, "%s:%s%s%s\n", archive_entry_pathname(e),
                                 t == AE_IFREG   ? "file:"
                                 : t == AE_IFDIR ? "dir"
                                                 : "link:",
                                 t == AE_IFLNK ? archive_entry_symlink(e) : "", data);
        assert_true(used < n);
    }
    archive_read_free(ar);
}

static void test_targz_links_as_links(void **state)
{
    char dest[512], list[4096], abs_link[512];
    struct ty_err err;
    (void)state;

    mkdir_in_tree("model");
    file_in_tree("model/a.txt", "alpha");
    pathf(abs_link, sizeof(abs_link), host, "secret.txt");
    link_in_tree("model/f_abs", abs_link);
    link_in_tree("model/d_abs", host);
    link_in_tree("model/d_rel", "../../../../../../../../..");
    fifo_in_tree("model/fifo");
    pathf(dest, sizeof(dest), tmp, "out/model.tar.gz");
    assert_int_equal(artifacts_targz(tree, "model", dest, &err), 0);
    archive_listing(dest, list, sizeof(list));
    assert_non_null(strstr(list, "a.txt:file:alpha\n"));
    assert_non_null(strstr(list, "d_abs:link:"));
    assert_non_null(strstr(list, "d_rel:link:../../../../../../../../..\n"));
    assert_non_null(strstr(list, "f_abs:link:"));
    assert_null(strstr(list, "fifo"));
    assert_null(strstr(list, CANARY));
    assert_null(strstr(list, "secret.txt:file"));
    host_untouched();
}

static void test_targz_symlinked_top_is_empty(void **state)
{
    char dest[512], list[4096];
    struct ty_err err;
    (void)state;

    /* /opt/ml/model itself, and a parent on the way, replaced by links to the host */
    link_in_tree("model", host);
    mkdir_in_tree("output");
    link_in_tree("output/data", "../../host/sub");
    pathf(dest, sizeof(dest), tmp, "model.tar.gz");
    assert_int_equal(artifacts_targz(tree, "model", dest, &err), 0);
    archive_listing(dest, list, sizeof(list));
    assert_string_equal(list, "");
    assert_int_equal(artifacts_targz(tree, "output/data", dest, &err), 0);
    archive_listing(dest, list, sizeof(list));
    assert_string_equal(list, "");
    assert_int_equal(artifacts_targz(tree, "model/sub", dest, &err), 0);
    archive_listing(dest, list, sizeof(list));
    assert_string_equal(list, "");
    host_untouched();
}

static void test_failure_file_confined(void **state)
{
    char buf[256];
    (void)state;

    /* output/ a link to a host folder holding a file named failure */
    link_in_tree("output", host);
    assert_int_equal(stage_read_failure(tree, buf, sizeof(buf)), 0);
    assert_null(strstr(buf, CANARY));
    {
        char p[512];
        pathf(p, sizeof(p), tree, "output");
        assert_int_equal(unlink(p), 0);
    }
    /* a FIFO as the failure file: ignored, and the read does not block */
    mkdir_in_tree("output");
    fifo_in_tree("output/failure");
    assert_int_equal(stage_read_failure(tree, buf, sizeof(buf)), 0);
    /* a plain file still works */
    {
        char p[512];
        pathf(p, sizeof(p), tree, "output/failure");
        assert_int_equal(unlink(p), 0);
        write_file(p, "boom\n");
    }
    assert_int_equal(stage_read_failure(tree, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "boom");
}

static void test_remove_never_follows(void **state)
{
    char p[512];
    struct stat st;
    (void)state;

    mkdir_in_tree("algo-1");
    mkdir_in_tree("algo-1/model");
    file_in_tree("algo-1/model/x", "x");
    link_in_tree("algo-1/model/d_abs", host);
    link_in_tree("algo-1/output", "../../host");
    fifo_in_tree("algo-1/fifo");
    assert_int_equal(stage_remove(tree), 0);
    assert_int_not_equal(lstat(tree, &st), 0);
    host_untouched();
    pathf(p, sizeof(p), host, "failure");
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(stage_remove(tree), 0); /* missing: fine */
    assert_int_equal(mkdir(tree, 0755), 0);
}

static void test_copy_fd_at_confined(void **state)
{
    struct ty_err err;
    uint64_t bytes = 0;
    int root, fd;
    char p[512];
    (void)state;

    mkdir_in_tree("input");
    link_in_tree("input/data", host);
    pathf(p, sizeof(p), host, "sub/deep.txt");
    root = confine_openroot(tree);
    assert_true(root >= 0);
    fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    assert_true(
        channels_copy_fd_at(fd, root, "input/data/train/pwned", 0, "s3://b/k", &bytes, &err) < 0);
    assert_non_null(strstr(err.msg, "ClientError"));
    assert_true(channels_copy_fd_at(fd, root, "input/../x", 0, "s3://b/k", &bytes, &err) < 0);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    assert_int_equal(channels_copy_fd_at(fd, root, "ckpt/deep/x.txt", 0, "s3://b/k", &bytes, &err),
                     0);
    assert_int_equal(bytes, strlen(CANARY) + 1);
    close(fd);
    close(root);
    host_untouched();
}

struct tar_ent {
    const char *name;
    mode_t type;
    const char *data_or_target;
};

static void make_tar(const char *path, const struct tar_ent *ents, size_t n)
{
    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, ents[i].name);
        archive_entry_set_filetype(e, ents[i].type);
        archive_entry_set_perm(e, 0644);
        if (ents[i].type == AE_IFLNK)
            archive_entry_set_symlink(e, ents[i].data_or_target);
        if (ents[i].type == AE_IFREG)
            archive_entry_set_size(e, (la_int64_t)strlen(ents[i].data_or_target));
        if (ents[i].type == AE_IFCHR)
            archive_entry_set_rdev(e, makedev(1, 3));
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        if (ents[i].type == AE_IFREG)
            archive_write_data(a, ents[i].data_or_target, strlen(ents[i].data_or_target));
        archive_entry_free(e);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

static int untar_into_code(const struct tar_ent *ents, size_t n, struct ty_err *err)
{
    char tarpath[512], code[512];
    int fd, rc;

    pathf(tarpath, sizeof(tarpath), tmp, "src.tar.gz");
    pathf(code, sizeof(code), tree, "code");
    mkdir(code, 0755);
    make_tar(tarpath, ents, n);
    fd = open(tarpath, O_RDONLY);
    assert_true(fd >= 0);
    memset(err, 0, sizeof(*err));
    rc = channels_untar_fd(fd, code, "sourcedir.tar.gz", err);
    close(fd);
    return rc;
}

static void test_untar_confined(void **state)
{
    struct ty_err err;
    struct stat st;
    char p[512], abs_target[512];
    (void)state;

    /* a link inside the tree, then a file through it: refused (libarchive's SECURE_SYMLINKS) */
    {
        const struct tar_ent e[] = {
            {"sub", AE_IFDIR, NULL}, {"lnk", AE_IFLNK, "sub"}, {"lnk/x", AE_IFREG, "through"}};
        assert_true(untar_into_code(e, 3, &err) < 0);
        assert_non_null(strstr(err.msg, "ClientError"));
        pathf(p, sizeof(p), tree, "code/sub/x");
        assert_int_not_equal(lstat(p, &st), 0);
    }
    /* a link out of the tree, relative or absolute: refused before anything is made */
    pathf(abs_target, sizeof(abs_target), host, "");
    {
        const struct tar_ent e[] = {{"out", AE_IFLNK, abs_target}, {"out/pwned", AE_IFREG, "x"}};
        assert_true(untar_into_code(e, 2, &err) < 0);
        assert_non_null(strstr(err.msg, "points outside"));
    }
    {
        const struct tar_ent e[] = {{"out2", AE_IFLNK, "../../host"},
                                    {"out2/pwned", AE_IFREG, "x"}};
        assert_true(untar_into_code(e, 2, &err) < 0);
    }
    {
        const struct tar_ent e[] = {{"../../host/pwned", AE_IFREG, "x"}};
        assert_true(untar_into_code(e, 1, &err) < 0);
        assert_non_null(strstr(err.msg, "'..'"));
    }
    {
        char abs_name[512];
        const struct tar_ent e[] = {{abs_name, AE_IFREG, "x"}};
        pathf(abs_name, sizeof(abs_name), host, "pwned");
        assert_true(untar_into_code(e, 1, &err) < 0);
    }
    /* a file already in place as a link (from an earlier run) is replaced, not written through */
    link_in_tree("code/train.sh", "../../host/secret.txt");
    {
        const struct tar_ent e[] = {{"fifo", AE_IFIFO, NULL},
                                    {"dev", AE_IFCHR, NULL},
                                    {"train.sh", AE_IFREG, "echo ok\n"},
                                    {"lib/", AE_IFDIR, NULL},
                                    {"lib/m.sh", AE_IFREG, "m"},
                                    {"lib/up", AE_IFLNK, "../train.sh"}};
        assert_int_equal(untar_into_code(e, 6, &err), 0);
    }
    pathf(p, sizeof(p), tree, "code/fifo");
    assert_int_not_equal(lstat(p, &st), 0);
    pathf(p, sizeof(p), tree, "code/dev");
    assert_int_not_equal(lstat(p, &st), 0);
    pathf(p, sizeof(p), tree, "code/train.sh");
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 8);
    pathf(p, sizeof(p), tree, "code/lib/up");
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    host_untouched();
}

struct swapper {
    atomic_int stop;
    long swaps;
};

/* The container's side of the race: model/sub is a folder with a file, then a link to the
   host's canary folder, and back, as fast as it goes. */
static void *swap_loop(void *arg)
{
    struct swapper *sw = arg;
    char sub[512], f[600], tmpname[512];

    pathf(sub, sizeof(sub), tree, "model/sub");
    pathf(f, sizeof(f), sub, "f.txt");
    pathf(tmpname, sizeof(tmpname), tree, "model/sub.new");
    while (!atomic_load(&sw->stop)) {
        unlink(sub);
        if (mkdir(sub, 0755) == 0)
            write_file(f, "mine");
        /* replace the folder by a link in one rename, as a hostile job can */
        unlink(tmpname);
        if (symlink(host, tmpname) == 0 && rename(tmpname, sub) != 0) {
            unlink(f);
            rmdir(sub);
            rename(tmpname, sub);
        }
        unlink(f); /* f.txt may now name the host's: never touched, it is through a link */
        sw->swaps++;
    }
    return NULL;
}

static void test_swap_race(void **state)
{
    struct swapper sw;
    pthread_t thr;
    char dest[512], list[8192];
    struct ty_err err;
    (void)state;

    mkdir_in_tree("model");
    file_in_tree("model/a.txt", "a");
    atomic_init(&sw.stop, 0);
    sw.swaps = 0;
    assert_int_equal(pthread_create(&thr, NULL, swap_loop, &sw), 0);
    pathf(dest, sizeof(dest), tmp, "race.tar.gz");
    for (int i = 0; i < 300; i++) {
        int root, top;
        struct seen s;
        assert_int_equal(artifacts_targz(tree, "model", dest, &err), 0);
        archive_listing(dest, list, sizeof(list));
        assert_null(strstr(list, CANARY));
        assert_null(strstr(list, "secret.txt"));
        assert_null(strstr(list, "deep.txt"));
        /* the walker itself never reports an entry of the host's folder */
        memset(&s, 0, sizeof(s));
        root = confine_openroot(tree);
        top = confine_opendir(root, "model", 0);
        assert_true(top >= 0);
        assert_int_equal(confine_walk(top, record, &s), 0);
        for (int j = 0; j < s.n; j++)
            assert_null(strstr(s.names[j], "secret"));
        close(top);
        close(root);
    }
    atomic_store(&sw.stop, 1);
    pthread_join(thr, NULL);
    assert_true(sw.swaps > 0);
    host_untouched();
}

static void test_staging_names(void **state)
{
    unsigned char k1[STAGE_KEY_LEN], k2[STAGE_KEY_LEN], k3[STAGE_KEY_LEN];
    char a[256], b[256], c[256], root[300], def[256];
    struct ty_err err;
    struct stat st;
    (void)state;

    assert_int_equal(stage_key_load(tmp, k1, &err), 0);
    assert_int_equal(stage_key_load(tmp, k2, &err), 0);
    assert_memory_equal(k1, k2, STAGE_KEY_LEN); /* kept, not drawn again */
    pathf(a, sizeof(a), tmp, "staging.key");
    assert_int_equal(stat(a, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(stage_job_dir("/stg", k1, "my-job", a, sizeof(a)), 0);
    assert_int_equal(stage_job_dir("/stg", k1, "my-job", b, sizeof(b)), 0);
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), strlen("/stg/") + 32);
    assert_null(strstr(a, "my-job"));
    assert_int_equal(stage_job_dir("/stg", k1, "my-job2", c, sizeof(c)), 0);
    assert_string_not_equal(a, c);
    memcpy(k3, k1, sizeof(k3));
    k3[0] ^= 1;
    assert_int_equal(stage_job_dir("/stg", k3, "my-job", c, sizeof(c)), 0);
    assert_string_not_equal(a, c);

    pathf(root, sizeof(root), tmp, "stg/x");
    assert_int_equal(stage_root_init(root, &err), 0);
    assert_int_equal(stat(root, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    pathf(root, sizeof(root), tmp, "stglink");
    assert_int_equal(symlink(host, root), 0);
    assert_true(stage_root_init(root, &err) < 0);
    stage_default_root(def, sizeof(def));
    assert_true(def[0] == '/');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_walk_never_follows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_links_and_specials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_targz_links_as_links, setup, teardown),
        cmocka_unit_test_setup_teardown(test_targz_symlinked_top_is_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_file_confined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_never_follows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_fd_at_confined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untar_confined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swap_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_staging_names, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
