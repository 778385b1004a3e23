/*
 * test_reattach.c - the plan a reclaiming agent follows for a job an earlier agent started
 * (reattach.h): nothing that may have run is ever planned to start anew; containers found by
 * their labels are taken over (running or exited, sandboxes paired with their host); a job
 * whose containers are gone fails with a reason naming why, unless the run record or the
 * Uploading status says how they ended. And the run record's round trip, refusing a symlink and
 * a file that is not a record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reattach.h"
#include "ty_err.h"

/* A container summary as GET /containers/json gives it. */
static json_t *ctr(const char *id, const char *host, const char *state, int sandbox)
{
    json_t *labels = json_pack("{s:s, s:s}", "trainyard.job", "j", "trainyard.host", host);
    if (sandbox)
        json_object_set_new(labels, "trainyard.sandbox", json_string("1"));
    return json_pack("{s:s, s:o, s:s}", "Id", id, "Labels", labels, "State", state);
}

static void test_nothing_ran_starts_anew(void **state)
{
    struct reattach_plan p;
    json_t *none = json_array(), *created = json_array();
    (void)state;

    reattach_plan(none, NULL, 1, "Downloading", &p);
    assert_int_equal(p.action, REATTACH_FRESH);
    reattach_plan(none, NULL, 1, "", &p);
    assert_int_equal(p.action, REATTACH_FRESH);
    /* created, never started: the agent died between create and start */
    json_array_append_new(created, ctr("c1", "algo-1", "created", 0));
    json_array_append_new(created, ctr("s1", "algo-1", "running", 1));
    reattach_plan(created, NULL, 1, "Training", &p);
    assert_int_equal(p.action, REATTACH_FRESH);
    json_decref(none);
    json_decref(created);
}

static void test_running_and_exited_are_taken_over(void **state)
{
    struct reattach_plan p;
    json_t *l = json_array();
    (void)state;

    json_array_append_new(l, ctr("sb1", "algo-1", "running", 1));
    json_array_append_new(l, ctr("c1", "algo-1", "running", 0));
    json_array_append_new(l, ctr("c2", "algo-2", "exited", 0));
    json_array_append_new(l, ctr("sb2", "algo-2", "running", 1));
    json_array_append_new(l, ctr("c9", "algo-9", "running", 0)); /* not a host of this job */
    reattach_plan(l, NULL, 2, "Training", &p);
    assert_int_equal(p.action, REATTACH_ATTACH);
    assert_int_equal(p.nh, 2);
    assert_string_equal(p.h[0].cid, "c1");
    assert_string_equal(p.h[0].sbid, "sb1");
    assert_true(p.h[0].started && p.h[0].running);
    assert_string_equal(p.h[1].cid, "c2");
    assert_string_equal(p.h[1].sbid, "sb2");
    assert_true(p.h[1].started && !p.h[1].running);
    assert_int_equal(p.extra, 1);
    /* whatever the status says: a container that ran is never started again */
    reattach_plan(l, NULL, 2, "Downloading", &p);
    assert_int_equal(p.action, REATTACH_ATTACH);
    assert_string_equal(p.h[0].gpus, ""); /* no GPUs */
    json_decref(l);
}

/* The GPUs a host's container was given (its trainyard.gpus label) come back with the plan, so
   that the re-attached job holds those and no others (agent__gpus_adopt); a sandbox's do not
   count. */
static void test_gpus_come_back_from_the_label(void **state)
{
    struct reattach_plan p;
    json_t *l = json_array(), *c = ctr("c1", "algo-1", "running", 0);
    json_t *sb = ctr("sb1", "algo-1", "running", 1);
    (void)state;

    json_object_set_new(json_object_get(c, "Labels"), "trainyard.gpus",
                        json_string("nvidia.com/gpu=3,nvidia.com/gpu=5"));
    json_object_set_new(json_object_get(sb, "Labels"), "trainyard.gpus",
                        json_string("nvidia.com/gpu=0"));
    json_array_append_new(l, sb);
    json_array_append_new(l, c);
    reattach_plan(l, NULL, 1, "Training", &p);
    assert_int_equal(p.action, REATTACH_ATTACH);
    assert_string_equal(p.h[0].gpus, "nvidia.com/gpu=3,nvidia.com/gpu=5");
    json_decref(l);
}

static void test_unknown_state_counts_as_started(void **state)
{
    struct reattach_plan p;
    json_t *l = json_array(),
           *c = json_pack("{s:s, s:{s:s}}", "Id", "c1", "Labels", "trainyard.host", "algo-1");
    (void)state;

    json_array_append_new(l, c);
    reattach_plan(l, NULL, 1, "Training", &p);
    assert_int_equal(p.action, REATTACH_ATTACH);
    assert_true(p.h[0].started);
    json_decref(l);
}

static void test_gone_containers_fail_unless_their_end_is_known(void **state)
{
    struct reattach_plan p;
    struct reattach_record rec;
    json_t *none = json_array(), *half = json_array();
    (void)state;

    reattach_plan(none, NULL, 1, "Training", &p);
    assert_int_equal(p.action, REATTACH_FAIL);
    assert_non_null(strstr(p.reason, "InternalServerError: "));
    assert_non_null(strstr(p.reason, "not run again"));

    /* the agent died while uploading: every host exited 0 */
    reattach_plan(none, NULL, 2, "Uploading", &p);
    assert_int_equal(p.action, REATTACH_ATTACH);
    assert_true(p.h[0].from_record && p.h[1].from_record);
    assert_int_equal(p.h[0].exit_code, 0);

    /* the record has their ends (written before they were removed) */
    memset(&rec, 0, sizeof(rec));
    rec.nh = 2;
    rec.h[0].exited = 1;
    rec.h[0].exit_code = 3;
    rec.h[1].exited = 1;
    rec.h[1].oom_killed = 1;
    rec.h[1].exit_code = 137;
    reattach_plan(none, &rec, 2, "Training", &p);
    assert_int_equal(p.action, REATTACH_ATTACH);
    assert_int_equal(p.h[0].exit_code, 3);
    assert_true(p.h[1].oom_killed);

    /* one host of two is gone and nothing says how it ended */
    json_array_append_new(half, ctr("c1", "algo-1", "running", 0));
    reattach_plan(half, NULL, 2, "Training", &p);
    assert_int_equal(p.action, REATTACH_FAIL);
    assert_non_null(strstr(p.reason, "algo-2"));
    rec.h[0].exited = 0;
    reattach_plan(half, &rec, 2, "Training", &p); /* the record knows algo-2's end */
    assert_int_equal(p.action, REATTACH_ATTACH);
    assert_string_equal(p.h[0].cid, "c1");
    assert_true(p.h[1].from_record);
    json_decref(none);
    json_decref(half);
}

static void test_record_round_trip(void **state)
{
    char dir[] = "/tmp/ty-reattach-XXXXXX", path[300];
    struct reattach_record rec, back;
    FILE *f;
    (void)state;

    assert_non_null(mkdtemp(dir));
    assert_int_equal(reattach_record_read(dir, &back), -TY_ENOTFOUND);
    memset(&rec, 0, sizeof(rec));
    rec.nh = 2;
    rec.t_start = 1700000000.25;
    rec.last_log_ts = 1700000000123LL;
    snprintf(rec.h[0].stream, sizeof(rec.h[0].stream), "j/algo-1-1700000000");
    rec.h[0].log_base = 4;
    rec.h[1].log_base = -1;
    rec.h[1].exited = 1;
    rec.h[1].exit_code = 2;
    assert_int_equal(reattach_record_write(dir, &rec), 0);
    assert_int_equal(reattach_record_read(dir, &back), 0);
    assert_int_equal(back.nh, 2);
    assert_true(back.t_start > 1700000000.2 && back.t_start < 1700000000.3);
    assert_true(back.last_log_ts == 1700000000123LL);
    assert_string_equal(back.h[0].stream, "j/algo-1-1700000000");
    assert_int_equal(back.h[0].log_base, 4);
    assert_int_equal(back.h[1].log_base, -1);
    assert_true(back.h[1].exited && back.h[1].exit_code == 2 && !back.h[0].exited);

    /* not a record: garbage, then a symlink */
    snprintf(path, sizeof(path), "%s/%s", dir, REATTACH_RECORD);
    assert_non_null(f = fopen(path, "w"));
    fputs("{\"v\":2}", f);
    fclose(f);
    assert_int_equal(reattach_record_read(dir, &back), -TY_EINVAL);
    unlink(path);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    assert_int_equal(reattach_record_read(dir, &back), -TY_EINVAL);
    reattach_record_remove(dir);
    assert_int_equal(reattach_record_read(dir, &back), -TY_ENOTFOUND);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_ran_starts_anew),
        cmocka_unit_test(test_running_and_exited_are_taken_over),
        cmocka_unit_test(test_gpus_come_back_from_the_label),
        cmocka_unit_test(test_unknown_state_counts_as_started),
        cmocka_unit_test(test_gone_containers_fail_unless_their_end_is_known),
        cmocka_unit_test(test_record_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
