/* lm_curve.c - tyc-lm-curve: trains a transformer model on a text file for N steps with a fixed
 * data order (batch k holds windows k*B .. k*B+B-1, modulo the window count) and prints one loss
 * per line; with --init DIR it first saves the initial weights there (weights.tyw) so that
 * bench/compiler/torch_gpt.py can start PyTorch from the same point.
 * usage: tyc-lm-curve MODEL TEXT STEPS BATCH LR [--init DIR] [--target cpu|cuda]
 *        [--precision fp32|bf16|fp16] */
#include "tyc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    struct tyc_err err = {0};
    struct tyc_model *m;
    struct tyc_dataset ds;
    struct tyc_options o;
    struct tyc_session *s;
    const char *init = NULL;
    int steps, B, k, r, T, L, i;
    float *x;
    int32_t *y;
    double *ms;
    if (argc < 6) {
        fprintf(stderr, "usage: tyc-lm-curve MODEL TEXT STEPS BATCH LR [--init DIR] "
                        "[--target cpu|cuda] [--precision fp32|bf16|fp16]\n");
        return 2;
    }
    tyc_options_init(&o);
    steps = (int)strtol(argv[3], NULL, 10);
    o.batch = B = (int)strtol(argv[4], NULL, 10);
    o.lr = (float)atof(argv[5]);
    for (i = 6; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--init"))
            init = argv[i + 1];
        else if (!strcmp(argv[i], "--target"))
            o.target = !strcmp(argv[i + 1], "cuda") ? TYC_TARGET_CUDA : TYC_TARGET_CPU;
        else if (!strcmp(argv[i], "--precision"))
            o.precision = tyc_precision_from_name(argv[i + 1]);
    }
    m = tyc_model_load(argv[1], &err);
    if (!m || tyc_dataset_load_text(&ds, argv[2], m, &err) < 0) {
        fprintf(stderr, "tyc-lm-curve: %s\n", err.msg);
        return 1;
    }
    s = tyc_session_new(m, &o, &err);
    if (!s || (init && tyc_session_save(s, init, &err) < 0)) {
        fprintf(stderr, "tyc-lm-curve: %s\n", err.msg);
        return 1;
    }
    T = ds.dim;
    L = ds.ylen > 0 ? ds.ylen : 1;
    x = malloc((size_t)B * T * sizeof(float));
    y = malloc((size_t)B * L * sizeof(int32_t));
    ms = calloc((size_t)steps + 1, sizeof(double));
    for (k = 0; k < steps && x && y && ms; k++) {
        float loss = 0;
        double t0;
        for (r = 0; r < B; r++) {
            int w = (k * B + r) % ds.n;
            memcpy(x + (size_t)r * T, ds.x + (size_t)w * T, (size_t)T * sizeof(float));
            memcpy(y + (size_t)r * L, ds.y + (size_t)w * L, (size_t)L * sizeof(int32_t));
        }
        t0 = now_ms();
        if (tyc_session_step(s, x, y, &loss) < 0) {
            fprintf(stderr, "tyc-lm-curve: step %d failed\n", k);
            return 1;
        }
        ms[k] = now_ms() - t0; /* the loss read back synchronises a GPU step */
        printf("%.7g\n", (double)loss);
    }
    if (steps > 4 && ms) { /* the first steps load and warm up */
        struct tyc_stats st;
        tyc_session_stats(s, &st);
        qsort(ms + 3, (size_t)steps - 3, sizeof(double), cmp_d);
        fprintf(stderr,
                "tyc-lm-curve: target=%s precision=%d steps=%d batch=%d median_step_ms=%.3f "
                "planned_bytes=%zu kernels=%d\n",
                o.target == TYC_TARGET_CUDA && tyc_cuda_available() ? "cuda" : "cpu", o.precision,
                steps, B, ms[3 + (steps - 3) / 2], st.peak_bytes, st.train_kernels);
    }
    free(ms);
    free(x);
    free(y);
    tyc_session_free(s);
    tyc_dataset_cleanup(&ds);
    tyc_model_free(m);
    return 0;
}
