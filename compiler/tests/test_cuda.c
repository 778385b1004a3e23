/* test_cuda.c - the CUDA back end end to end: NVRTC PTX loaded through the dlopen'ed driver API,
 * a few training steps on the GPU compared with the CPU back end. Exits 77 (skip) when libcuda
 * or a device is absent, which is every CI machine of this project so far: this path has not
 * been run yet. Tolerance, not bitwise: the GPU's expf/logf/tanhf differ from glibc's by ulps;
 * the GEMM sums k in the same order and NVRTC runs with --fmad=false. */
#include "tyc.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    struct tyc_err err = {0};
    struct tyc_model *m;
    struct tyc_options o;
    struct tyc_session *cpu, *gpu;
    static float x[64 * 784];
    int32_t y[64];
    int i, k, bad = 0;
    if (!tyc_nvrtc_available(NULL, NULL) || !tyc_cuda_available()) {
        printf("no libnvrtc, libcuda or GPU: skipped\n");
        return 77;
    }
    m = tyc_model_load("mlp", &err);
    if (!m)
        return 1;
    for (i = 0; i < 64 * 784; i++)
        x[i] = (float)((i * 7919) % 255) / 255.0f;
    for (i = 0; i < 64; i++)
        y[i] = i % 10;
    tyc_options_init(&o);
    cpu = tyc_session_new(m, &o, &err);
    o.target = TYC_TARGET_CUDA;
    gpu = tyc_session_new(m, &o, &err);
    if (!cpu || !gpu) {
        printf("session: %s\n", err.msg);
        return 1;
    }
    for (k = 0; k < 5; k++) {
        float lc = 0, lg = 0;
        if (tyc_session_step(cpu, x, y, &lc) || tyc_session_step(gpu, x, y, &lg)) {
            printf("step failed\n");
            return 1;
        }
        printf("step %d loss cpu=%.6f gpu=%.6f\n", k, (double)lc, (double)lg);
        bad |= fabsf(lc - lg) > 1e-4f * (1 + fabsf(lc));
    }
    for (i = 0; i < tyc_session_param_count(cpu); i++) {
        float *a, *b;
        size_t n, j;
        tyc_session_param(cpu, i, &a, &n);
        tyc_session_param(gpu, i, &b, NULL);
        for (j = 0; j < n; j++)
            if (fabsf(a[j] - b[j]) > 1e-4f * (fabsf(a[j]) + 1e-3f)) {
                printf("param %d[%zu]: cpu %g gpu %g\n", i, j, (double)a[j], (double)b[j]);
                bad = 1;
                break;
            }
    }
    tyc_session_free(cpu);
    tyc_session_free(gpu);
    tyc_model_free(m);
    printf("%s\n", bad ? "FAIL" : "ok");
    return bad;
}
