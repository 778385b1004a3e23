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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_set_returns_negative_code),
        cmocka_unit_test(test_buf_ceiling),
        cmocka_unit_test(test_buf_put_xml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
