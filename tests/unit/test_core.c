/*
 * test_core.c - ty_err tables and ty_buf's ceiling.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "ty_buf.h"
#include "ty_err.h"
#include "ty_opts.h"

static void test_err_set_returns_negative_code(void **state)
{
    struct ty_err e;
    (void)state;
    assert_int_equal(ty_err_set(&e, TY_EINVAL, "trainingJobName", "bad %s", "x"), -TY_EINVAL);
    assert_string_equal(e.field, "trainingJobName");
    assert_string_equal(e.msg, "bad x");
    assert_string_equal(ty_err_aws_name(TY_EINUSE), "ResourceInUse");
    assert_int_equal(ty_err_http_status(TY_EBADSIG), 403);
    assert_int_equal(ty_err_http_status(-TY_EDENIED), 403);
    assert_string_equal(ty_strerror(9999), "unknown error");
}

static void test_buf_ceiling(void **state)
{
    struct ty_buf b;
    (void)state;
    ty_buf_init(&b, 8);
    assert_int_equal(ty_buf_puts(&b, "abcd"), 0);
    assert_int_equal(ty_buf_printf(&b, "%d", 123), 0);
    assert_string_equal(b.data, "abcd123");
    assert_int_equal(ty_buf_puts(&b, "xy"), -TY_ETOOBIG);
    assert_string_equal(b.data, "abcd123");
    assert_int_equal(ty_buf_puts(&b, "z"), 0);
    char *s = ty_buf_steal(&b);
    assert_string_equal(s, "abcd123z");
    free(s);
    assert_null(b.data);
    ty_buf_cleanup(&b);
}

static void test_buf_put_xml(void **state)
{
    struct ty_buf b;
    (void)state;
    ty_buf_init(&b, 256);
    assert_int_equal(ty_buf_put_xml(&b, "a<b>&\"c'\r\t\n\x01z"), 0);
    assert_string_equal(b.data, "a&lt;b&gt;&amp;&quot;c&apos;&#13;\t\nz");
    assert_int_equal(ty_buf_put_xml(&b, NULL), 0);
    ty_buf_cleanup(&b);
    ty_buf_init(&b, 4);
    assert_int_equal(ty_buf_put_xml(&b, "<<"), -TY_ETOOBIG);
    ty_buf_cleanup(&b);
}

static void test_opts_precedence_and_errors(void **state)
{
    static const struct ty_opt opts[] = {
        {"listen", "TY_TEST_LISTEN", "127.0.0.1:8080", "where"},
        {"data-dir", "TY_TEST_DATA", NULL, "state"},
        {"slots", "TY_TEST_SLOTS", "4", "jobs"},
    };
    static const struct ty_opts_prog prog = {"ty-test", "0", NULL, NULL};
    const char *v[3];
    char *argv1[] = {"p", "--listen", "0.0.0.0:1", "--slots=9", NULL};
    char *argv2[] = {"p", "--data-dir", NULL};
    char *argv3[] = {"p", "--nope", "x", NULL};
    char *argv4[] = {"p", "stray", NULL};
    char *argv5[] = {"p", NULL};
    int n = 0;
    (void)state;

    setenv("TY_TEST_DATA", "/from/env", 1);
    setenv("TY_TEST_SLOTS", "", 1); /* empty: unset */
    assert_int_equal(ty_opts_parse(&prog, opts, 3, v, 4, argv1), 0);
    assert_string_equal(v[0], "0.0.0.0:1");
    assert_string_equal(v[1], "/from/env");
    assert_string_equal(v[2], "9");
    setenv("TY_TEST_LISTEN", "10.0.0.1:2", 1);
    assert_int_equal(ty_opts_parse(&prog, opts, 3, v, 1, argv5), 0);
    assert_string_equal(v[0], "10.0.0.1:2"); /* the variable beats the default */
    assert_string_equal(v[2], "4");
    unsetenv("TY_TEST_DATA");
    assert_int_equal(ty_opts_parse(&prog, opts, 3, v, 1, argv5), 0);
    assert_null(v[1]);
    assert_int_equal(ty_opts_parse(&prog, opts, 3, v, 2, argv2), -1); /* needs a value */
    assert_int_equal(ty_opts_parse(&prog, opts, 3, v, 3, argv3), -1); /* unknown */
    assert_int_equal(ty_opts_parse(&prog, opts, 3, v, 2, argv4), -1); /* stray argument */
    assert_int_equal(ty_opts_int(&prog, "slots", "12", 1, 16, &n), 0);
    assert_int_equal(n, 12);
    assert_int_equal(ty_opts_int(&prog, "slots", "17", 1, 16, &n), -1);
    assert_int_equal(ty_opts_int(&prog, "slots", "1x", 1, 16, &n), -1);
    assert_int_equal(ty_opts_int(&prog, "slots", "", 1, 16, &n), -1);
    assert_int_equal(ty_opts_int(&prog, "slots", NULL, 1, 16, &n), -1);
    unsetenv("TY_TEST_LISTEN");
    unsetenv("TY_TEST_SLOTS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_set_returns_negative_code),
        cmocka_unit_test(test_opts_precedence_and_errors),
        cmocka_unit_test(test_buf_ceiling),
        cmocka_unit_test(test_buf_put_xml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
