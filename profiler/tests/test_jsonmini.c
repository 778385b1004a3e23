/* test_jsonmini.c - the CLI's JSON reader: values, escapes, errors, depth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "jsonmini.h"

static struct jm_val *P(const char *s)
{
    return jm_parse(s, strlen(s), NULL);
}

static void test_values(void **state)
{
    (void)state;
    struct jm_val *v = P(" {\"a\":1.5,\"b\":[true,false,null,\"x\"],\"c\":{\"d\":-2e3}} ");
    assert_non_null(v);
    assert_int_equal(v->type, JM_OBJ);
    assert_true(jm_num(v, "a", 0) == 1.5);
    const struct jm_val *b = jm_get(v, "b");
    assert_int_equal(b->n, 4);
    assert_int_equal(jm_at(b, 0)->type, JM_BOOL);
    assert_true(jm_at(b, 0)->num == 1);
    assert_int_equal(jm_at(b, 2)->type, JM_NULL);
    assert_string_equal(jm_at(b, 3)->str, "x");
    assert_null(jm_at(b, 4));
    assert_true(jm_num(jm_get(v, "c"), "d", 0) == -2000);
    assert_string_equal(jm_str(v, "zz", "def"), "def");
    jm_free(v);
    v = P("[]");
    assert_int_equal(v->n, 0);
    jm_free(v);
    jm_free(NULL);
}

static void test_escapes(void **state)
{
    (void)state;
    struct jm_val *v = P("\"a\\\"b\\\\c\\/d\\n\\u00e9\\u003c\\ud83d\\ude00\"");
    assert_non_null(v);
    assert_string_equal(v->str, "a\"b\\c/d\n\xc3\xa9<\xf0\x9f\x98\x80");
    jm_free(v);
}

static void test_errors(void **state)
{
    (void)state;
    const char *bad[] = {"",    "{",       "[1,]",      "{\"a\"}", "{\"a\":1,}", "tru",     "\"abc",
                         "1 2", "\"\\x\"", "\"\\u12\"", "[1e999]", "{1:2}",      "\"a\nb\""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t off = 12345;
        struct jm_val *v = jm_parse(bad[i], strlen(bad[i]), &off);
        if (v)
            fail_msg("accepted '%s'", bad[i]);
        assert_true(off <= strlen(bad[i]));
    }
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    assert_null(jm_parse(deep, 200, NULL));
    memset(deep, '[', 30);
    memset(deep + 30, ']', 30);
    struct jm_val *v = jm_parse(deep, 60, NULL);
    assert_non_null(v);
    jm_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
