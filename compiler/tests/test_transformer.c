/* test_transformer.c - the transformer ops and models: every new op against central finite
 * differences (embedding, layer norm, causal and full self-attention, sequence mean, dropout),
 * eager vs compiled bitwise for small GPT and encoder models (all passes, none, each off, both
 * optimizers, with dropout), the text loader and its errors, and gpt-tiny learning on Debian's
 * license texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tyc_int.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fill(float *p, size_t n, unsigned seed, float lo, float hi)
{
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = lo + (hi - lo) * (float)((seed >> 8) & 0xffff) / 65535.0f;
    }
}

static void run_graph(struct tyc__graph *g)
{
    static float scratch[8192];
    int i;
    for (i = 0; i < g->nt; i++) {
        struct tyc__tensor *t = &g->t[i];
        if (t->kind == TK_CONST) {
            if (!t->data)
                t->data = malloc(sizeof(float));
            t->data[0] = t->cval;
        } else if (t->kind == TK_TEMP && !t->data)
            t->data = calloc(t->numel, sizeof(float));
    }
    for (i = 0; i < g->nn; i++)
        tyc__cpu_run_node(g, &g->n[i], scratch);
}

enum { G_EMBED, G_LN, G_ATTN_CAUSAL, G_ATTN_FULL, G_SEQMEAN, G_DROPOUT, G__N };
static const char *gnames[] = {"embedding",       "layer_norm",    "attention(causal)",
                               "attention(full)", "sequence_mean", "dropout"};

/* loss = xent(f(params) @ w, y); checks d loss / d params against central differences */
static void gradcheck(int which)
{
    enum { B = 2, T = 3, D = 6, C = 4, V = 5 };
    struct tyc__graph g;
    int p[4], np = 0, grads[4], x, loss, y, ids = -1, step = -1, i, d, R = B * T;
    tyc__graph_init(&g);
    if (which == G_EMBED) {
        int idd = R, td[2] = {V, D};
        ids = tyc__tensor_new(&g, TK_INPUT, 1, &idd, "ids");
        p[np++] = tyc__tensor_new(&g, TK_PARAM, 2, td, "table");
        x = tyc__embed(&g, ids, p[0]);
    } else {
        int xd[2] = {R, which == G_ATTN_CAUSAL || which == G_ATTN_FULL ? 3 * D : D}, dd = D;
        p[np++] = tyc__tensor_new(&g, TK_PARAM, 2, xd, "x");
        if (which == G_LN) {
            p[np++] = tyc__tensor_new(&g, TK_PARAM, 1, &dd, "gamma");
            p[np++] = tyc__tensor_new(&g, TK_PARAM, 1, &dd, "beta");
            x = tyc__layernorm(&g, p[0], p[1], p[2], 1e-5f);
        } else if (which == G_SEQMEAN)
            x = tyc__seqmean(&g, p[0], T);
        else if (which == G_DROPOUT) {
            int one = 1;
            step = tyc__tensor_new(&g, TK_INPUT, 1, &one, "step");
            x = tyc__dropout(&g, p[0], step, 0.3f, 1234u);
        } else
            x = tyc__attention(&g, p[0], 2, T, which == G_ATTN_CAUSAL);
    }
    {
        int wd[2] = {D, C}, yd = g.t[x].dim[0], one = 1, in[2];
        p[np] = tyc__tensor_new(&g, TK_PARAM, 2, wd, "w");
        x = tyc__matmul(&g, x, p[np++], 0, 0);
        y = tyc__tensor_new(&g, TK_INPUT, 1, &yd, "y");
        in[0] = x;
        in[1] = y;
        loss = tyc__op1(&g, OP_XENT, 2, in, 1, &one);
        g.outputs[g.nout++] = loss;
    }
    assert_int_equal(tyc__autodiff(&g, loss, p, np, grads), 0);
    assert_false(g.failed);
    for (i = 0; i < np; i++) {
        g.t[p[i]].data = malloc(g.t[p[i]].numel * sizeof(float));
        fill(g.t[p[i]].data, g.t[p[i]].numel, 11u + (unsigned)(i * 7 + which), -1.0f, 1.0f);
    }
    g.t[y].data = malloc((size_t)g.t[y].numel * sizeof(float));
    for (i = 0; i < (int)g.t[y].numel; i++)
        g.t[y].data[i] = (float)((i * 3 + which) % C);
    if (ids >= 0) {
        g.t[ids].data = malloc(R * sizeof(float));
        for (i = 0; i < R; i++)
            g.t[ids].data[i] = (float)((i * 2) % V); /* repeated ids: gradients accumulate */
    }
    if (step >= 0) {
        g.t[step].data = malloc(sizeof(float));
        g.t[step].data[0] = 7.0f;
    }
    for (i = 0; i < np; i++) {
        size_t n = g.t[p[i]].numel;
        float *an = malloc(n * sizeof(float));
        run_graph(&g); /* the analytic gradient at the unperturbed point */
        memcpy(an, g.t[grads[i]].data, n * sizeof(float));
        for (d = 0; d < (int)n; d++) {
            float *w = &g.t[p[i]].data[d], save = *w, lp, lm, num, h = 1e-2f;
            *w = save + h;
            run_graph(&g);
            lp = g.t[loss].data[0];
            *w = save - h;
            run_graph(&g);
            lm = g.t[loss].data[0];
            *w = save;
            num = (lp - lm) / (2 * h);
            if (fabsf(num - an[d]) > 2e-3f + 3e-2f * fabsf(num))
                fail_msg("gradcheck %s param %d elem %d: analytic %g numeric %g", gnames[which], i,
                         d, (double)an[d], (double)num);
        }
        free(an);
    }
    for (i = 0; i < g.nt; i++)
        free(g.t[i].data);
    tyc__graph_cleanup(&g);
}

static void test_gradcheck_tf_ops(void **state)
{
    int w;
    (void)state;
    for (w = 0; w < G__N; w++)
        gradcheck(w);
}

static void test_dropout_mask(void **state)
{
    int i, kept = 0, same = 0;
    (void)state;
    for (i = 0; i < 100000; i++) {
        kept += tyc__dropout_keep(99u, 3u, (uint32_t)i, 0.25f);
        same += tyc__dropout_keep(99u, 3u, (uint32_t)i, 0.25f) ==
                tyc__dropout_keep(99u, 4u, (uint32_t)i, 0.25f);
    }
    assert_true(kept > 74000 && kept < 76000); /* keep rate 1 - p */
    assert_true(same < 70000);                 /* a new mask every step */
}

static struct tyc_model *model_str(const char *s)
{
    struct tyc_err err = {0};
    struct tyc_model *m = tyc_model_parse(s, strlen(s), &err);
    if (!m)
        fail_msg("model: %s", err.msg);
    return m;
}

static const char *gpt_small = "{\"type\": \"gpt\", \"vocab\": 11, \"context\": 5, \"width\": 8, "
                               "\"heads\": 2, \"layers\": 2, \"mlp\": 12, \"dropout\": 0.2}";
static const char *enc_small = "{\"type\": \"encoder\", \"vocab\": 11, \"context\": 6, \"width\": "
                               "8, \"heads\": 2, \"layers\": 1, \"mlp\": 16, \"classes\": 3, "
                               "\"dropout\": 0.1}";

/* trains 4 steps on `threads` threads (0: every core); returns every parameter concatenated
 * (caller frees) */
static float *train_t(const struct tyc_model *m, int mode, unsigned passes, int opt, int threads,
                      float *loss, size_t *total, struct tyc_stats *st)
{
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *s;
    int B = 3, T = tyc_model_input_size(m), L = tyc_model_labels_per_example(m), i, k;
    float *x = malloc((size_t)B * T * sizeof(float)), *all, *p;
    int32_t *y = malloc((size_t)B * L * sizeof(int32_t));
    size_t n, off = 0;
    tyc_options_init(&o);
    o.mode = mode;
    o.passes = passes;
    o.batch = B;
    o.optimizer = opt;
    o.lr = 0.01f;
    o.threads = threads;
    s = tyc_session_new(m, &o, &err);
    if (!s)
        fail_msg("session: %s", err.msg);
    for (k = 0; k < 4; k++) {
        for (i = 0; i < B * T; i++)
            x[i] = (float)((i * 7 + k * 3) % 11);
        for (i = 0; i < B * L; i++)
            y[i] = (i * 5 + k) % tyc_model_classes(m);
        assert_int_equal(tyc_session_step(s, x, y, loss), 0);
    }
    *total = 0;
    for (i = 0; i < tyc_session_param_count(s); i++) {
        tyc_session_param(s, i, &p, &n);
        *total += n;
    }
    all = malloc(*total * sizeof(float));
    for (i = 0; i < tyc_session_param_count(s); i++) {
        tyc_session_param(s, i, &p, &n);
        memcpy(all + off, p, n * sizeof(float));
        off += n;
    }
    if (st)
        tyc_session_stats(s, st);
    tyc_session_free(s);
    free(x);
    free(y);
    return all;
}

static float *train(const struct tyc_model *m, int mode, unsigned passes, int opt, float *loss,
                    size_t *total, struct tyc_stats *st)
{
    return train_t(m, mode, passes, opt, 0, loss, total, st);
}

static void bitwise(const char *spec)
{
    static const unsigned bits[] = {TYC_PASS_DCE,      TYC_PASS_CSE,  TYC_PASS_SIMPLIFY,
                                    TYC_PASS_EPILOGUE, TYC_PASS_XENT, TYC_PASS_EWFUSE,
                                    TYC_PASS_MEMPLAN,  TYC_PASS_MASKS};
    struct tyc_model *m = model_str(spec);
    int opt, b;
    for (opt = 0; opt < 2; opt++) {
        float le, lc;
        size_t n, n2;
        struct tyc_stats se, sc;
        float *ref = train(m, TYC_EAGER, 0, opt, &le, &n, &se);
        float *all = train(m, TYC_COMPILED, TYC_PASS_ALL, opt, &lc, &n2, &sc);
        assert_int_equal(n, n2);
        assert_memory_equal(ref, all, n * sizeof(float));
        assert_true(le == lc);
        assert_true(isfinite(le));
        /* fusion and planning pay: fewer kernels, a smaller arena */
        assert_true(sc.train_kernels * 2 < se.train_kernels);
        assert_true(sc.temp_bytes < se.temp_bytes / 2);
        free(all);
        for (b = 0; b < 8; b++) {
            float *off = train(m, TYC_COMPILED, TYC_PASS_ALL & ~bits[b], opt, &lc, &n2, NULL);
            assert_memory_equal(ref, off, n * sizeof(float));
            free(off);
        }
        free(ref);
    }
    tyc_model_free(m);
}

/* fp16 adds loss-scaling nodes that are no-ops on the CPU: the same weights as fp32, bitwise */
static void test_fp16_graph_on_cpu(void **state)
{
    struct tyc_model *m = model_str(gpt_small);
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *a, *b;
    float x[3 * 5], la, lb, *pa, *pb;
    int32_t y[3 * 5];
    size_t n;
    int i, k;
    (void)state;
    tyc_options_init(&o);
    o.batch = 3;
    a = tyc_session_new(m, &o, &err);
    o.precision = TYC_FP16;
    b = tyc_session_new(m, &o, &err);
    assert_non_null(a);
    assert_non_null(b);
    for (k = 0; k < 3; k++) {
        for (i = 0; i < 15; i++) {
            x[i] = (float)((i * 3 + k) % 11);
            y[i] = (i + k) % 11;
        }
        assert_int_equal(tyc_session_step(a, x, y, &la), 0);
        assert_int_equal(tyc_session_step(b, x, y, &lb), 0);
        assert_true(la == lb);
    }
    for (i = 0; i < tyc_session_param_count(a); i++) {
        tyc_session_param(a, i, &pa, &n);
        tyc_session_param(b, i, &pb, NULL);
        assert_memory_equal(pa, pb, n * sizeof(float));
    }
    tyc_session_free(a);
    tyc_session_free(b);
    tyc_model_free(m);
}

static void test_gpt_bitwise(void **state)
{
    struct tyc_model *m = model_str(gpt_small);
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *s;
    char *log = NULL;
    (void)state;
    bitwise(gpt_small);
    /* the fusions that pay for transformers: bias + GELU (keeping the pre-activation for the
     * gradient), bias-gradient column sums, the whole Adam update per parameter */
    tyc_options_init(&o);
    o.batch = 2;
    s = tyc_session_new(m, &o, &err);
    assert_non_null(s);
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_PASSLOG, &log, &err), 0);
    assert_non_null(strstr(log, "matmul + bias + gelu (pre-activation kept)"));
    assert_non_null(strstr(log, "gelu_grad + bias-grad column sum"));
    tyc_free(log);
    tyc_session_free(s);
    tyc_model_free(m);
}

static void test_encoder_bitwise(void **state)
{
    (void)state;
    bitwise(enc_small);
}

/* The transformer kernels split rows, (batch, head) pairs and layer-norm blocks over the pool:
 * 1, 2 and 3 threads, eager and compiled, give the same bits. Shapes with a head width and a
 * context that are not multiples of the 32-column register chunks, and a row count that is not
 * a multiple of the layer-norm block. */
static void test_tf_threads_bitwise(void **state)
{
    static const char *specs[2] = {
        "{\"type\": \"gpt\", \"vocab\": 19, \"context\": 40, \"width\": 64, \"heads\": 2, "
        "\"layers\": 1, \"mlp\": 96, \"dropout\": 0.1}",
        "{\"type\": \"encoder\", \"vocab\": 13, \"context\": 37, \"width\": 48, \"heads\": 2, "
        "\"layers\": 1, \"mlp\": 64, \"classes\": 5, \"dropout\": 0}"};
    static const int threads[3] = {2, 3, 1};
    int k, t, opt;
    (void)state;
    for (k = 0; k < 2; k++) {
        struct tyc_model *m = model_str(specs[k]);
        for (opt = 0; opt < 2; opt++) {
            float l0, l1;
            size_t n, n2;
            float *ref = train_t(m, TYC_EAGER, 0, opt, 1, &l0, &n, NULL);
            assert_true(isfinite(l0));
            for (t = 0; t < 3; t++) {
                float *got =
                    train_t(m, TYC_COMPILED, TYC_PASS_ALL, opt, threads[t], &l1, &n2, NULL);
                assert_int_equal(n, n2);
                assert_memory_equal(ref, got, n * sizeof(float));
                assert_true(l0 == l1);
                free(got);
                if (threads[t] == 3) {
                    got = train_t(m, TYC_EAGER, 0, opt, 3, &l1, &n2, NULL);
                    assert_memory_equal(ref, got, n * sizeof(float));
                    free(got);
                }
            }
            free(ref);
        }
        tyc_model_free(m);
    }
}

static void test_tf_spec_errors(void **state)
{
    static const struct {
        const char *spec, *want;
    } bad[] = {
        {"{\"type\": \"rnn\"}", "'type'"},
        {"{\"type\": \"gpt\", \"width\": 10, \"heads\": 4}", "multiple of 'heads'"},
        {"{\"type\": \"gpt\", \"context\": 0}", "'context'"},
        {"{\"type\": \"gpt\", \"dropout\": 1.5}", "'dropout'"},
        {"{\"type\": \"encoder\"}", "'classes'"},
        {"{\"type\": \"gpt\", \"layers\": 99}", "'layers'"},
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tyc_err err = {0};
        struct tyc_model *m = tyc_model_parse(bad[i].spec, strlen(bad[i].spec), &err);
        assert_null(m);
        assert_int_equal(err.code, TYC_EMODEL);
        if (!strstr(err.msg, bad[i].want))
            fail_msg("%s: '%s' lacks '%s'", bad[i].spec, err.msg, bad[i].want);
    }
}

static void test_text_loader(void **state)
{
    char dir[] = "/tmp/tyc-text-XXXXXX", path[256];
    struct tyc_dataset ds;
    struct tyc_err err = {0};
    struct tyc_model *gm = model_str(gpt_small), *em = model_str(enc_small);
    FILE *f;
    (void)state;
    assert_non_null(mkdtemp(dir));
    assert_int_equal(tyc_dataset_load_text(&ds, dir, gm, &err), -TYC_EDATA); /* empty */
    snprintf(path, sizeof(path), "%s/a.txt", dir);
    f = fopen(path, "w");
    fputs("hello world\xc3\xa9!", f); /* 14 bytes; the two UTF-8 bytes become '?' */
    fclose(f);
    snprintf(path, sizeof(path), "%s/b.txt", dir);
    f = fopen(path, "w");
    fputs("abcdefghijklm", f);
    fclose(f);
    assert_int_equal(tyc_dataset_load_text(&ds, dir, gm, &err), 0);
    /* 27 bytes: (27 - 1) / 5 = 5 windows of 5, targets shifted by one */
    assert_int_equal(ds.n, 5);
    assert_int_equal(ds.ylen, 5);
    assert_true(ds.x[0] == 'h' && ds.y[0] == 'e' && ds.y[4] == ' ');
    assert_true(ds.x[11] == '?' && ds.x[12] == '?');
    tyc_dataset_cleanup(&ds);
    assert_int_equal(tyc_dataset_load_text(&ds, dir, em, &err), 0);
    /* encoder: 14 / 6 = 2 windows of a.txt (label 0), 13 / 6 = 2 of b.txt (label 1) */
    assert_int_equal(ds.n, 4);
    assert_int_equal(ds.ylen, 1);
    assert_true(ds.y[0] == 0 && ds.y[1] == 0 && ds.y[2] == 1 && ds.y[3] == 1);
    assert_true(ds.x[12] == 'a');
    tyc_dataset_cleanup(&ds);
    snprintf(path, sizeof(path), "%s/a.txt", dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/b.txt", dir);
    unlink(path);
    rmdir(dir);
    assert_int_equal(tyc_dataset_load_text(&ds, dir, gm, &err), -TYC_EIO);
    assert_non_null(strstr(err.msg, dir));
    tyc_model_free(gm);
    tyc_model_free(em);
}

/* gpt-tiny at batch 8 on the GPL-3 text: 30 Adam steps bring the loss from ln(128) to < 3.3 */
static void test_gpt_tiny_learns(void **state)
{
    struct tyc_err err = {0};
    struct tyc_model *m = tyc_model_load("gpt-tiny", &err);
    struct tyc_dataset ds;
    struct tyc_options o;
    struct tyc_session *s;
    float first = 0, loss = 0;
    int k;
    (void)state;
    assert_non_null(m);
    if (tyc_dataset_load_text(&ds, "/usr/share/common-licenses/GPL-3", m, &err) < 0)
        skip();
    tyc_options_init(&o);
    o.batch = 8;
    o.lr = 3e-3f;
    s = tyc_session_new(m, &o, &err);
    assert_non_null(s);
    for (k = 0; k < 30; k++) {
        assert_int_equal(
            tyc_session_step(s, ds.x + (size_t)k * 8 * 64, ds.y + (size_t)k * 8 * 64, &loss), 0);
        if (k == 0)
            first = loss;
    }
    assert_true(fabsf(first - logf(128.0f)) < 0.3f);
    if (!(loss < 3.3f))
        fail_msg("gpt-tiny loss after 30 steps: %g (first %g)", (double)loss, (double)first);
    tyc_session_free(s);
    tyc_dataset_cleanup(&ds);
    tyc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradcheck_tf_ops),   cmocka_unit_test(test_dropout_mask),
        cmocka_unit_test(test_gpt_bitwise),        cmocka_unit_test(test_encoder_bitwise),
        cmocka_unit_test(test_tf_spec_errors),     cmocka_unit_test(test_text_loader),
        cmocka_unit_test(test_gpt_tiny_learns),    cmocka_unit_test(test_fp16_graph_on_cpu),
        cmocka_unit_test(test_tf_threads_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
