/*
 * test_launchsrv.c - the executor's end of the launchers' wire (launchsrv.h), over real HTTP on
 * loopback (libcurl): tokens (none, unknown, another job's), a report applied once however often
 * it is sent, a report the executor cannot take now (503, then sent again), the stop in the
 * answers, an ended attempt (410), the assignment, and when each host was last heard from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launchsrv.h"

#define TOKEN_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define TOKEN_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static struct {
    int applied;   /* reports applied */
    int lines;     /* their lines */
    int refuse;    /* the next report is refused (503) */
    long long seq; /* the last applied one's */
} ex;

static int on_report(void *ud, const struct launchwire_report *r)
{
    (void)ud;
    if (ex.refuse) {
        ex.refuse = 0;
        return -1;
    }
    ex.applied++;
    ex.lines += (int)json_array_size(r->lines);
    ex.seq = r->seq;
    return 0;
}

static json_t *on_assign(void *ud, const char *job, int attempt, int host)
{
    (void)ud;
    return json_pack("{s:s, s:i, s:i}", "job", job, "attempt", attempt, "host", host);
}

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
    char *out = ud;
    size_t have = strlen(out), add = size * n;
    if (have + add < 4096) {
        memcpy(out + have, p, add);
        out[have + add] = '\0';
    }
    return add;
}

/* One request; returns the HTTP status, the body in out (4096 bytes). */
static long call(int port, const char *method, const char *path, const char *token,
                 const char *body, char *out)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char url[256], auth[128];
    long status = 0;

    out[0] = '\0';
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return status;
}

static const char *report(const char *job, int attempt, int host, int seq)
{
    static char body[512];
    snprintf(body, sizeof(body),
             "{\"v\":1,\"job\":\"%s\",\"attempt\":%d,\"host\":%d,\"node\":\"n1\",\"seq\":%d,"
             "\"phase\":\"running\",\"started\":1765100000.5,\"lines\":[[1,\"a\",0],[2,\"b\",1]]}",
             job, attempt, host, seq);
    return body;
}

static void test_wire(void **state)
{
    struct ty_err err;
    struct launchsrv *s = launchsrv_start("127.0.0.1:0", on_report, on_assign, NULL, &err);
    struct launchwire_answer a;
    char out[4096];
    long long seq = -1;
    int port;
    (void)state;

    assert_non_null(s);
    port = launchsrv_port(s);
    assert_int_equal(launchsrv_add(s, TOKEN_A, "job-a", 2, 2, NULL), 0);
    assert_int_equal(launchsrv_add(s, TOKEN_B, "job-b", 1, 1, NULL), 0);
    assert_int_equal(launchsrv_add(s, "short", "job-c", 1, 1, NULL), -TY_EINVAL);
    assert_true(launchsrv_last_seen(s, "job-a", 1, NULL) == 0);

    /* no token, an unknown one, a path or method that is not the wire's */
    assert_int_equal(call(port, "POST", "/launch/v1/report", NULL, "{}", out), 401);
    assert_int_equal(call(port, "POST", "/launch/v1/report",
                          "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
                          report("job-a", 2, 0, 1), out),
                     401);
    assert_int_equal(call(port, "GET", "/launch/v1/report", TOKEN_A, NULL, out), 405);
    assert_int_equal(call(port, "GET", "/other", TOKEN_A, NULL, out), 404);

    /* job-b's token cannot report for job-a; nor an old attempt's launcher */
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_B, report("job-a", 2, 0, 1), out), 403);
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_A, report("job-a", 1, 0, 1), out), 403);
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_A, report("job-a", 2, 2, 1), out), 400);
    assert_int_equal(call(port, "POST", "/launch/v1/report", TOKEN_A, "{\"v\":1}", out), 400);
    assert_non_null(strstr(out, "TrainingJobName"));
    assert_int_equal(ex.applied, 0);

    /* applied once, however often it is sent */
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_A, report("job-a", 2, 1, 1), out), 200);
    assert_int_equal(launchwire_answer_parse(out, strlen(out), &a, &err), 0);
    assert_int_equal(a.ack, 1);
    assert_int_equal(a.stop, 0);
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_A, report("job-a", 2, 1, 1), out), 200);
    assert_int_equal(ex.applied, 1);
    assert_int_equal(ex.lines, 2);
    assert_true(launchsrv_last_seen(s, "job-a", 1, &seq) > 1e9);
    assert_true(seq == 1);
    assert_true(launchsrv_last_seen(s, "job-a", 0, NULL) == 0);

    /* the executor cannot take it now: 503, and it is applied when sent again */
    ex.refuse = 1;
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_A, report("job-a", 2, 1, 2), out), 503);
    assert_int_equal(ex.applied, 1);
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_A, report("job-a", 2, 1, 2), out), 200);
    assert_int_equal(ex.applied, 2);
    assert_true(ex.seq == 2);

    /* the stop rides on every answer from now on */
    launchsrv_set_stop(s, "job-a", 90, 1);
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_A, report("job-a", 2, 0, 1), out), 200);
    assert_int_equal(launchwire_answer_parse(out, strlen(out), &a, &err), 0);
    assert_int_equal(a.stop, 1);
    assert_int_equal(a.grace_s, 90);
    assert_int_equal(a.upload, 1);

    /* the assignment of one host */
    assert_int_equal(call(port, "GET", "/launch/v1/job?host=1", TOKEN_A, NULL, out), 200);
    assert_non_null(strstr(out, "\"job\":\"job-a\""));
    assert_non_null(strstr(out, "\"host\":1"));
    assert_int_equal(call(port, "GET", "/launch/v1/job?host=2", TOKEN_A, NULL, out), 400);
    assert_int_equal(call(port, "GET", "/launch/v1/job", TOKEN_A, NULL, out), 400);

    /* ended: 410, nothing applied; a new attempt's token replaces the old one */
    launchsrv_end(s, "job-a");
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_A, report("job-a", 2, 0, 2), out), 410);
    assert_int_equal(call(port, "GET", "/launch/v1/job?host=0", TOKEN_A, NULL, out), 410);
    assert_true(launchsrv_last_seen(s, "job-a", 0, NULL) < 0);
    {
        long long acked[1] = {5};
        assert_int_equal(launchsrv_add(s, TOKEN_A "x", "job-b", 2, 1, acked), -TY_EINVAL);
        assert_int_equal(launchsrv_add(s,
                                       "dddddddddddddddddddddddddddddddddddddddddddddddddd"
                                       "dddddddddddddd",
                                       "job-b", 2, 1, acked),
                         0);
    }
    assert_int_equal(
        call(port, "POST", "/launch/v1/report", TOKEN_B, report("job-b", 1, 0, 1), out), 410);
    /* a restarted executor's acked seq: an older report is not applied again */
    assert_int_equal(call(port, "POST", "/launch/v1/report",
                          "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
                          report("job-b", 2, 0, 5), out),
                     200);
    assert_int_equal(ex.applied, 3); /* the two of job-a's host 1, one of its host 0 */
    launchsrv_stop(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire),
    };
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
