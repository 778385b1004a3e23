/* test_nvrtc.c - NVRTC compiles every generated kernel to PTX, on machines without a GPU.
 * Skips (exit 77) when libnvrtc cannot be dlopen'ed. Covers eager (one kernel per primitive op)
 * and compiled graphs, every activation, both optimizers, and the on-disk cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "cuda_int.h"
#include "tyc_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char cache_dir[] = "/tmp/tyc-nvrtc-XXXXXX";

static const char *spec = "{\"input\": 20, \"classes\": 5, \"layers\": ["
                          "{\"type\": \"dense\", \"units\": 33, \"activation\": \"gelu\"},"
                          "{\"type\": \"dense\", \"units\": 17, \"activation\": \"relu\"},"
                          "{\"type\": \"dense\", \"units\": 9, \"activation\": \"sigmoid\"},"
                          "{\"type\": \"dense\", \"units\": 8, \"activation\": \"tanh\"},"
                          "{\"type\": \"dense\", \"units\": 5}]}";

static const char *cnn_spec =
    "{\"input\": [2, 9, 9], \"classes\": 4, \"layers\": ["
    "{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": \"same\", "
    "\"activation\": \"relu\"},"
    "{\"type\": \"maxpool2d\", \"size\": 2},"
    "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"stride\": 2, \"padding\": 1},"
    "{\"type\": \"dense\", \"units\": 4}]}";

static void compile_spec(const char *spec_json, int mode, unsigned passes, int opt);

static void compile_all(int mode, unsigned passes, int opt)
{
    compile_spec(spec, mode, passes, opt);
    compile_spec(cnn_spec, mode, passes, opt);
}

static void compile_spec(const char *spec_json, int mode, unsigned passes, int opt)
{
    struct tyc_err err = {0};
    struct tyc_model *m = tyc_model_parse(spec_json, strlen(spec_json), &err);
    struct tyc_options o;
    struct tyc_session *s;
    char *cu = NULL, *ptx = NULL, *p;
    int cached = -1, kernels = 0, entries = 0;
    assert_non_null(m);
    tyc_options_init(&o);
    o.mode = mode;
    o.passes = passes;
    o.optimizer = opt;
    o.batch = 37;
    o.cache_dir = cache_dir;
    s = tyc_session_new(m, &o, &err);
    assert_non_null(s);
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_CUDA, &cu, &err), 0);
    for (p = cu; (p = strstr(p, "__global__ void ")); p++)
        kernels++;
    assert_int_equal(tyc_nvrtc_compile(cu, "compute_90", cache_dir, &ptx, &cached, &err), 0);
    assert_int_equal(cached, 0);
    assert_non_null(strstr(ptx, ".target sm_90"));
    /* every kernel of the source is an entry of the PTX */
    for (p = cu; (p = strstr(p, "__global__ void ")); p++) {
        char name[64], want[80];
        sscanf(p + 16, "%63[^(]", name);
        snprintf(want, sizeof(want), ".entry %s(", name);
        if (!strstr(ptx, want))
            fail_msg("kernel %s missing from PTX", name);
        entries++;
    }
    assert_int_equal(entries, kernels);
    assert_true(kernels > 5);
    tyc_free(ptx);
    /* second compile: served from the disk cache */
    assert_int_equal(tyc_nvrtc_compile(cu, "compute_90", cache_dir, &ptx, &cached, &err), 0);
    assert_int_equal(cached, 1);
    tyc_free(ptx);
    tyc_free(cu);
    /* PTX through the session emitter */
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_PTX, &ptx, &err), 0);
    assert_non_null(strstr(ptx, ".visible .entry"));
    tyc_free(ptx);
    tyc_session_free(s);
    tyc_model_free(m);
}

static void test_compiled_adam(void **state)
{
    (void)state;
    compile_all(TYC_COMPILED, TYC_PASS_ALL, TYC_ADAM);
}

static void test_compiled_sgd(void **state)
{
    (void)state;
    compile_all(TYC_COMPILED, TYC_PASS_ALL, TYC_SGD);
}

static void test_eager(void **state)
{
    (void)state;
    compile_all(TYC_EAGER, 0, TYC_ADAM);
}

static void test_compile_error(void **state)
{
    struct tyc_err err = {0};
    char *ptx = NULL;
    (void)state;
    assert_int_equal(
        tyc_nvrtc_compile("__global__ void broken( {", "compute_90", cache_dir, &ptx, NULL, &err),
        -TYC_EGPU);
    assert_non_null(strstr(err.msg, "nvrtcCompileProgram"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compiled_adam),
        cmocka_unit_test(test_compiled_sgd),
        cmocka_unit_test(test_eager),
        cmocka_unit_test(test_compile_error),
    };
    int maj = 0, min = 0, rc;
    char cmd[128];
    if (!tyc_nvrtc_available(&maj, &min)) {
        printf("libnvrtc not found: skipped\n");
        return 77;
    }
    printf("NVRTC %d.%d; GPU present: %s\n", maj, min, tyc_cuda_available() ? "yes" : "no");
    if (!mkdtemp(cache_dir))
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cache_dir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
