/*
 * test_launchwire.c - the launchers' reports and the executor's answers (launchwire.h): a
 * round trip of each, and the reports refused, each with what is wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "launchwire.h"

/* Parses text; returns its code, err.msg holds the refusal. */
static int parse(const char *text, struct launchwire_report *r, struct ty_err *err)
{
    return launchwire_report_parse(text, strlen(text), r, err);
}

static void test_round_trip(void **state)
{
    struct launchwire_report r = {0}, back;
    struct ty_err err;
    json_t *lines = json_pack("[[I, s, i], [I, s, i]]", (json_int_t)1700000000123,
                              "epoch 1 loss=0.5", 0, (json_int_t)1700000000100, "warning", 1);
    json_t *o;
    char *text;
    (void)state;

    snprintf(r.job, sizeof(r.job), "my-job-1");
    snprintf(r.node, sizeof(r.node), "n2");
    r.attempt = 3;
    r.host = 1;
    r.seq = 7;
    r.phase = LAUNCHWIRE_ENDED;
    r.started = 1700000000.25;
    r.lines = lines;
    r.exit_code = 2;
    r.stopped = 1;
    snprintf(r.failure, sizeof(r.failure), "ValueError: bad input\n");
    snprintf(r.model_error, sizeof(r.model_error), "ClientError: the model is over 5 TB");
    o = launchwire_report_json(&r);
    assert_non_null(o);
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (parse(text, &back, &err) != 0)
        fail_msg("%s: %s", text, err.msg);
    free(text);
    assert_string_equal(back.job, "my-job-1");
    assert_string_equal(back.node, "n2");
    assert_int_equal(back.attempt, 3);
    assert_int_equal(back.host, 1);
    assert_int_equal(back.seq, 7);
    assert_int_equal(back.phase, LAUNCHWIRE_ENDED);
    assert_true(back.started > 1700000000.24 && back.started < 1700000000.26);
    assert_int_equal(json_array_size(back.lines), 2);
    assert_string_equal(json_string_value(json_array_get(json_array_get(back.lines, 1), 1)),
                        "warning");
    assert_int_equal(back.exit_code, 2);
    assert_int_equal(back.exit_signal, 0);
    assert_int_equal(back.stopped, 1);
    assert_string_equal(back.failure, "ValueError: bad input\n");
    assert_string_equal(back.model_error, "ClientError: the model is over 5 TB");
    assert_string_equal(back.error, "");
    launchwire_report_free(&back);

    /* the container never ran: the launcher's own reason, no start */
    r.started = 0;
    r.lines = NULL;
    snprintf(r.error, sizeof(r.error), "ClientError: image 'x' not found on node n2");
    o = launchwire_report_json(&r);
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    assert_int_equal(parse(text, &back, &err), 0);
    free(text);
    assert_string_equal(back.error, "ClientError: image 'x' not found on node n2");
    assert_true(back.started == 0);
    launchwire_report_free(&back);
    json_decref(lines);

    /* a heartbeat while staging: no lines, no start */
    assert_int_equal(parse("{\"v\":1,\"job\":\"j\",\"attempt\":1,\"host\":0,\"node\":\"n1\","
                           "\"seq\":1,\"phase\":\"staging\"}",
                           &back, &err),
                     0);
    assert_null(back.lines);
    assert_int_equal(back.phase, LAUNCHWIRE_STAGING);
    launchwire_report_free(&back);
}

static void test_refused(void **state)
{
#define HEAD "{\"v\":1,\"job\":\"j\",\"attempt\":1,\"node\":\"n1\",\"seq\":1,"
    static const char *const bad[][2] = {
        {"[]", "not a JSON object"},
        {"{\"v\":2}", "\"v\" must be 1"},
        {HEAD "\"host\":0,\"phase\":\"staging\",\"job\":\"x\"}", "not a JSON object"},
        {"{\"v\":1,\"job\":\"-j\"}", "TrainingJobName"},
        {"{\"v\":1,\"job\":\"a/b\"}", "TrainingJobName"},
        {HEAD "\"host\":256,\"phase\":\"staging\"}", "in range"},
        {HEAD "\"host\":-1,\"phase\":\"staging\"}", "in range"},
        {"{\"v\":1,\"job\":\"j\",\"attempt\":1,\"host\":0,\"node\":\"n1\",\"seq\":0,"
         "\"phase\":\"staging\"}",
         "in range"},
        {"{\"v\":1,\"job\":\"j\",\"attempt\":1,\"host\":0,\"node\":\"n 1\",\"seq\":1,"
         "\"phase\":\"staging\"}",
         "node's name"},
        {HEAD "\"host\":0,\"phase\":\"done\"}", "\"phase\""},
        {HEAD "\"host\":0,\"phase\":\"running\"}", "\"started\""},
        {HEAD "\"host\":0,\"phase\":\"running\",\"started\":-1}", "epoch seconds"},
        {HEAD "\"host\":0,\"phase\":\"staging\",\"lines\":{}}", "must be an array"},
        {HEAD "\"host\":0,\"phase\":\"staging\",\"lines\":[[1,\"a\"]]}", "[epoch_ms"},
        {HEAD "\"host\":0,\"phase\":\"staging\",\"lines\":[[1,\"a\",2]]}", "[epoch_ms"},
        {HEAD "\"host\":0,\"phase\":\"staging\",\"lines\":[[-1,\"a\",0]]}", "[epoch_ms"},
        {HEAD "\"host\":0,\"phase\":\"ended\",\"started\":5}", "\"exit\""},
        {HEAD "\"host\":0,\"phase\":\"ended\",\"exit\":{\"code\":0,\"signal\":0}}",
         "must say its \"error\""},
        {HEAD "\"host\":0,\"phase\":\"ended\",\"started\":5,\"exit\":{\"code\":256,"
              "\"signal\":0}}",
         "\"exit\""},
        {HEAD "\"host\":0,\"phase\":\"ended\",\"started\":5,\"exit\":{\"code\":1,"
              "\"signal\":0,\"failure\":3}}",
         "must be strings"},
        {HEAD "\"host\":0,\"phase\":\"ended\",\"started\":5,\"exit\":{\"code\":1,"
              "\"signal\":0,\"error\":[]}}",
         "must be strings"},
        {HEAD "\"host\":0,\"phase\":\"running\",\"started\":5,\"exit\":{\"code\":1,"
              "\"signal\":0}}",
         "only an ended host"},
    };
#undef HEAD
    struct launchwire_report r;
    struct ty_err err;
    (void)state;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse(bad[i][0], &r, &err);
        if (rc != -TY_EINVAL || !strstr(err.msg, bad[i][1]))
            fail_msg("%s: %d %s", bad[i][0], rc, rc ? err.msg : "taken");
        assert_null(r.doc);
    }
}

static void test_limits(void **state)
{
    struct launchwire_report r = {0}, back;
    struct ty_err err;
    json_t *lines = json_array(), *o;
    char *big = malloc(LAUNCHWIRE_MAX_LINE + 2), *text;
    (void)state;

    memset(big, 'x', LAUNCHWIRE_MAX_LINE + 1);
    big[LAUNCHWIRE_MAX_LINE + 1] = '\0';
    json_array_append_new(lines, json_pack("[i, s, i]", 1, big, 0));
    snprintf(r.job, sizeof(r.job), "j");
    snprintf(r.node, sizeof(r.node), "n1");
    r.attempt = r.seq = 1;
    r.lines = lines;
    o = launchwire_report_json(&r);
    text = json_dumps(o, JSON_COMPACT);
    assert_int_equal(parse(text, &back, &err), -TY_EINVAL);
    assert_non_null(strstr(err.msg, "over 256 KiB"));
    free(text);
    json_decref(o);

    json_array_clear(lines);
    for (int i = 0; i <= LAUNCHWIRE_MAX_LINES; i++)
        json_array_append_new(lines, json_pack("[i, s, i]", i, "l", 0));
    o = launchwire_report_json(&r);
    text = json_dumps(o, JSON_COMPACT);
    assert_int_equal(parse(text, &back, &err), -TY_EINVAL);
    assert_non_null(strstr(err.msg, "more than 1000 lines"));
    assert_int_equal(launchwire_report_parse(text, LAUNCHWIRE_MAX_BODY + 1, &back, &err),
                     -TY_EINVAL);
    assert_non_null(strstr(err.msg, "over 4 MiB"));
    free(text);
    json_decref(o);
    json_decref(lines);
    free(big);
}

static void test_answer(void **state)
{
    struct launchwire_answer a = {.ack = 9, .stop = 1, .grace_s = 120, .upload = 1}, back;
    struct ty_err err;
    json_t *o = launchwire_answer_json(&a);
    char *text = json_dumps(o, JSON_COMPACT);
    (void)state;

    assert_int_equal(launchwire_answer_parse(text, strlen(text), &back, &err), 0);
    assert_int_equal(back.ack, 9);
    assert_int_equal(back.stop, 1);
    assert_int_equal(back.grace_s, 120);
    assert_int_equal(back.upload, 1);
    free(text);
    json_decref(o);
    assert_int_equal(launchwire_answer_parse("{\"ack\":1}", 9, &back, &err), -TY_EINVAL);
    assert_int_equal(launchwire_answer_parse("<html>", 6, &back, &err), -TY_EINVAL);

    assert_true(
        launchwire_token_ok("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
    assert_false(
        launchwire_token_ok("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
    assert_false(launchwire_token_ok("0123"));
    assert_false(launchwire_token_ok(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
