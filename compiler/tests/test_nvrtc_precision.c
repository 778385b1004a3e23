/* test_nvrtc_precision.c - NVRTC compiles the generated CUDA of the MLP, the CNN, gpt-tiny and
 * bert-tiny in fp32, bf16 and fp16 (no GPU needed), and the program carries what each precision
 * promises: operand rounding (TY_LP), and for fp16 the loss scale, the finite checks, the skipped
 * update and the scale update. Exits 77 when libnvrtc cannot be dlopen'ed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tyc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tyc-nvrtc-prec-XXXXXX";

static void compile(const char *model, int precision)
{
    struct tyc_err err = {0};
    struct tyc_model *m = tyc_model_load(model, &err);
    struct tyc_options o;
    struct tyc_session *s;
    char *src = NULL, *ptx = NULL;
    int cached = 0;
    assert_non_null(m);
    tyc_options_init(&o);
    o.batch = 4;
    o.precision = precision;
    o.cache_dir = cache_dir;
    s = tyc_session_new(m, &o, &err);
    if (!s)
        fail_msg("%s: %s", model, err.msg);
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_CUDA, &src, &err), 0);
    assert_non_null(strstr(src, precision == TYC_FP32   ? "#define TY_LP(x) (x)"
                                : precision == TYC_BF16 ? "bf16 compute"
                                                        : "cvt.rn.f16.f32"));
    assert_non_null(strstr(src, "TY_LP(in0["));
    if (precision == TYC_FP16) {
        assert_non_null(strstr(src, "ty_amp_scale = 65536.0f"));
        assert_non_null(strstr(src, "if (ty_amp_found_inf) return;"));
        assert_non_null(strstr(src, "_amp_update("));
        assert_non_null(strstr(src, "in0[i] / ty_amp_scale"));
    } else
        assert_null(strstr(src, "_amp_check("));
    if (tyc_nvrtc_compile(src, "compute_90", cache_dir, &ptx, &cached, &err) != 0)
        fail_msg("%s precision %d: %s", model, precision, err.msg);
    assert_non_null(strstr(ptx, ".entry"));
    tyc_free(ptx);
    tyc_free(src);
    tyc_session_free(s);
    tyc_model_free(m);
}

static void test_precisions(void **state)
{
    static const char *models[] = {"mlp", "cnn", "gpt-tiny", "bert-tiny"};
    size_t i;
    int p;
    (void)state;
    for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
        for (p = TYC_FP32; p <= TYC_FP16; p++)
            compile(models[i], p);
}

static void test_bad_precision(void **state)
{
    struct tyc_err err = {0};
    struct tyc_model *m = tyc_model_load("mlp", &err);
    struct tyc_options o;
    (void)state;
    tyc_options_init(&o);
    o.precision = 7;
    assert_null(tyc_session_new(m, &o, &err));
    assert_string_equal(err.field, "precision");
    assert_int_equal(tyc_precision_from_name("bfloat16"), TYC_BF16);
    assert_int_equal(tyc_precision_from_name("fp8"), -1);
    tyc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_precisions),
                                       cmocka_unit_test(test_bad_precision)};
    int rc;
    if (!tyc_nvrtc_available(NULL, NULL)) {
        printf("libnvrtc not found: skipped\n");
        return 77;
    }
    if (!mkdtemp(cache_dir))
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", cache_dir);
        if (system(cmd) != 0)
            rc = rc ? rc : 1;
    }
    return rc;
}
