/* test_tyc.c - unit tests for libtyc: JSON reader, model spec errors, gradient checks of every
 * differentiable op against central finite differences, each pass on and off, eager vs compiled
 * bitwise equality, memory planning invariants, weights round trip, IDX data errors and the
 * built-in trainer's error reporting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "tyc_int.h"
#include "vmath.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------------------------- */
static void fill(float *x, size_t n, uint32_t seed, float lo, float hi)
{
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * (float)(seed >> 8) / 16777216.0f;
    }
}

static struct tyc_model *model_str(const char *json)
{
    struct tyc_err err = {0};
    struct tyc_model *m = tyc_model_parse(json, strlen(json), &err);
    if (!m)
        fail_msg("model: %s", err.msg);
    return m;
}

/* ---- JSON ------------------------------------------------------------------------------------ */
static void test_json(void **state)
{
    struct tyc_err err = {0};
    const char *ok = "{\"a\": [1, 2.5e1, -3], \"b\": {\"c\": \"x\\u00e9\\n\"}, \"d\": true, "
                     "\"e\": null}";
    struct tyc__json *j = tyc__json_parse(ok, strlen(ok), &err);
    (void)state;
    assert_non_null(j);
    assert_int_equal(tyc__json_get(j, "a")->nkids, 3);
    assert_true(tyc__json_get(j, "a")->kids[1].num == 25.0);
    assert_string_equal(tyc__json_get(tyc__json_get(j, "b"), "c")->str, "x\xc3\xa9\n");
    tyc__json_free(j);
    assert_null(tyc__json_parse("{\"a\": }", 7, &err));
    assert_non_null(strstr(err.msg, "offset"));
    assert_null(tyc__json_parse("[1,2", 4, &err));
    assert_null(tyc__json_parse("{} x", 4, &err));
    assert_null(tyc__json_parse("\"abc", 4, &err));
    tyc__json_free(NULL);
}

/* ---- model spec errors ----------------------------------------------------------------------- */
static void expect_model_error(const char *json, const char *needle)
{
    struct tyc_err err = {0};
    struct tyc_model *m = tyc_model_parse(json, strlen(json), &err);
    assert_null(m);
    assert_int_equal(err.code, TYC_EMODEL);
    if (!strstr(err.msg, needle))
        fail_msg("error '%s' lacks '%s'", err.msg, needle);
}

static void test_model_errors(void **state)
{
    struct tyc_err err = {0};
    (void)state;
    expect_model_error("[1]", "JSON object");
    expect_model_error("{\"input\": 4, \"classes\": 2}", "'layers'");
    expect_model_error("{\"input\": 4, \"classes\": 2, \"layers\": [{\"units\": 2}]}", ".type");
    expect_model_error("{\"input\": 4, \"classes\": 2, \"layers\": [{\"type\": \"conv9\", "
                       "\"units\": 2}]}",
                       "use dense, conv2d");
    expect_model_error("{\"input\": 4, \"classes\": 2, \"layers\": [{\"type\": \"dense\", "
                       "\"units\": 0}]}",
                       ".units");
    expect_model_error("{\"input\": 4, \"classes\": 3, \"layers\": [{\"type\": \"dense\", "
                       "\"units\": 2}]}",
                       "'classes' is 3");
    expect_model_error("{\"input\": -4, \"classes\": 2, \"layers\": []}", "'input'");
    expect_model_error("{\"input\": 4, \"classes\": 2, \"loss\": \"mse\", \"layers\": "
                       "[{\"type\": \"dense\", \"units\": 2}]}",
                       "'loss'");
    expect_model_error("{\"input\": 4,", "offset");
    assert_null(tyc_model_load(TYC_EXAMPLES_DIR "/bad-activation.json", &err));
    assert_non_null(strstr(err.msg, "swish"));
    assert_non_null(strstr(err.msg, "bad-activation.json"));
    assert_null(tyc_model_load("/nonexistent/model.json", &err));
    assert_non_null(strstr(err.msg, "cannot open model"));
    tyc_model_free(NULL);
}

/* ---- gradient checks ------------------------------------------------------------------------- */
/* Runs every node of g with fresh buffers; params/inputs must already have data. */
static void run_graph(struct tyc__graph *g, float *scratch)
{
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

static void free_graph(struct tyc__graph *g, int nparams)
{
    int i;
    for (i = nparams; i < g->nt; i++)
        if (g->t[i].kind != TK_INPUT)
            free(g->t[i].data);
    for (i = 0; i < g->nt; i++)
        if (g->t[i].kind == TK_INPUT || i < nparams)
            free(g->t[i].data);
    tyc__graph_cleanup(g);
}

enum {
    GC_MATMUL,
    GC_BIAS,
    GC_SUB,
    GC_MUL,
    GC_RELU,
    GC_GELU,
    GC_TANH,
    GC_SIGMOID,
    GC_SCALE,
    GC_RESHAPE,
    GC_CONV,
    GC_CONV_S2,
    GC_POOL,
    GC__N
};
static const char *gc_names[] = {"matmul",
                                 "add(bias)",
                                 "sub",
                                 "mul",
                                 "relu",
                                 "gelu",
                                 "tanh",
                                 "sigmoid",
                                 "scale",
                                 "reshape",
                                 "conv2d+bias_channel",
                                 "conv2d(stride 2)",
                                 "maxpool2d"};

/* loss = xent(f(p0, p1), y) with p0 [N,K] (or [N,C]) and p1 the op's second parameter. */
static void gradcheck(int which)
{
    enum { N = 3, K = 5, C = 4 };
    struct tyc__graph g;
    int p[3], np = 2, grads[3], logits, loss, y, i, k, dim[2] = {N, C}, d, ncls;
    float scratch[4096];
    tyc__graph_init(&g);
    if (which == GC_CONV || which == GC_CONV_S2 || which == GC_POOL) {
        int xd[4] = {N, 2, 6, 6}, wd[4] = {3, 2, 3, 3}, bd = 3, in2[2], fd[2];
        p[0] = tyc__tensor_new(&g, TK_PARAM, 4, xd, "x");
        p[1] = tyc__tensor_new(&g, TK_PARAM, 4, wd, "w");
        logits = tyc__conv2d(&g, p[0], p[1], which == GC_CONV_S2 ? 2 : 1, 1);
        if (which == GC_CONV) {
            p[2] = tyc__tensor_new(&g, TK_PARAM, 1, &bd, "b");
            np = 3;
            in2[0] = logits;
            in2[1] = p[2];
            logits = tyc__op1(&g, OP_BIAS_CHAN, 2, in2, 4, g.t[logits].dim);
        }
        if (which == GC_POOL)
            logits = tyc__maxpool(&g, logits, 2);
        fd[0] = N;
        fd[1] = (int)(g.t[logits].numel / N);
        logits = tyc__op1(&g, OP_RESHAPE, 1, &logits, 2, fd);
    } else if (which == GC_MATMUL) {
        int a[2] = {N, K}, b[2] = {K, C};
        p[0] = tyc__tensor_new(&g, TK_PARAM, 2, a, "a");
        p[1] = tyc__tensor_new(&g, TK_PARAM, 2, b, "b");
        logits = tyc__matmul(&g, p[0], p[1], 0, 0);
    } else {
        int bdim = C;
        p[0] = tyc__tensor_new(&g, TK_PARAM, 2, dim, "a");
        p[1] = which == GC_BIAS ? tyc__tensor_new(&g, TK_PARAM, 1, &bdim, "bias")
                                : tyc__tensor_new(&g, TK_PARAM, 2, dim, "b");
        switch (which) {
        case GC_BIAS:
            logits = tyc__ew(&g, OP_ADD, p[0], p[1]);
            break;
        case GC_SUB:
            logits = tyc__ew(&g, OP_SUB, p[0], p[1]);
            break;
        case GC_MUL:
            logits = tyc__ew(&g, OP_MUL, p[0], p[1]);
            break;
        case GC_SCALE:
            logits = tyc__ew(&g, OP_SCALE, p[0], -1);
            g.n[g.nn - 1].f = 2.5f;
            logits = tyc__ew(&g, OP_ADD, logits, p[1]);
            break;
        case GC_RESHAPE: {
            int flat[1] = {N * C};
            int r = tyc__op1(&g, OP_RESHAPE, 1, &p[0], 1, flat);
            logits = tyc__op1(&g, OP_RESHAPE, 1, &r, 2, dim);
            logits = tyc__ew(&g, OP_MUL, logits, p[1]);
            break;
        }
        default: {
            static const int act[] = {[GC_RELU] = OP_RELU,
                                      [GC_GELU] = OP_GELU,
                                      [GC_TANH] = OP_TANH,
                                      [GC_SIGMOID] = OP_SIGMOID};
            logits = tyc__ew(&g, act[which], tyc__ew(&g, OP_ADD, p[0], p[1]), -1);
            /* a second consumer of p0 exercises gradient accumulation */
            logits = tyc__ew(&g, OP_ADD, logits, p[0]);
        }
        }
    }
    {
        int yd = N, one = 1, in[2];
        y = tyc__tensor_new(&g, TK_INPUT, 1, &yd, "y");
        in[0] = logits;
        in[1] = y;
        loss = tyc__op1(&g, OP_XENT, 2, in, 1, &one);
    }
    g.outputs[g.nout++] = loss;
    assert_int_equal(tyc__autodiff(&g, loss, p, np, grads), 0);
    assert_false(g.failed);
    for (i = 0; i < np; i++) {
        g.t[p[i]].data = malloc(g.t[p[i]].numel * sizeof(float));
        /* keep pre-activations away from the ReLU kink */
        fill(g.t[p[i]].data, g.t[p[i]].numel, 7u + (unsigned)i * 31u + (unsigned)which,
             which == GC_RELU ? 0.2f : -1.0f, 1.0f);
        if (which == GC_RELU && i == 0)
            for (k = 0; k < (int)g.t[p[0]].numel; k += 2)
                g.t[p[0]].data[k] = -g.t[p[0]].data[k] - 1.5f;
    }
    g.t[y].data = malloc(N * sizeof(float));
    ncls = g.t[logits].dim[1];
    for (i = 0; i < N; i++)
        g.t[y].data[i] = (float)((i * 3 + which) % ncls);
    run_graph(&g, scratch);
    for (i = 0; i < np; i++) {
        size_t n = g.t[p[i]].numel;
        float *analytic = malloc(n * sizeof(float));
        memcpy(analytic, g.t[grads[i]].data, n * sizeof(float));
        for (d = 0; d < (int)n; d++) {
            float *w = &g.t[p[i]].data[d], save = *w, lp, lm, num;
            float h = which == GC_POOL ? 5e-4f : 1e-2f;
            *w = save + h;
            run_graph(&g, scratch);
            lp = g.t[loss].data[0];
            *w = save - h;
            run_graph(&g, scratch);
            lm = g.t[loss].data[0];
            *w = save;
            num = (lp - lm) / (2 * h);
            if (fabsf(num - analytic[d]) > 2e-3f + 2e-2f * fabsf(num))
                fail_msg("gradcheck %s param %d elem %d: analytic %g numeric %g", gc_names[which],
                         i, d, (double)analytic[d], (double)num);
        }
        free(analytic);
    }
    free_graph(&g, 0);
}

static void test_gradcheck_ops(void **state)
{
    int w;
    (void)state;
    for (w = 0; w < GC__N; w++)
        gradcheck(w);
}

/* softmax-xent itself, through the full session (dense layer + loss), compiled vs numeric */
static void test_gradcheck_session(void **state)
{
    const char *spec = "{\"input\": 6, \"classes\": 3, \"layers\": ["
                       "{\"type\": \"dense\", \"units\": 5, \"activation\": \"tanh\"},"
                       "{\"type\": \"dense\", \"units\": 3}]}";
    struct tyc_model *m = model_str(spec);
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *s;
    float x[4 * 6], *w0, *w1, loss0, lp, lm;
    int32_t y[4] = {0, 2, 1, 2};
    size_t n0, n1;
    int i;
    (void)state;
    fill(x, 24, 3, -1, 1);
    tyc_options_init(&o);
    o.batch = 4;
    o.optimizer = TYC_SGD;
    o.momentum = 0;
    o.lr = 1e-3f;
    /* with plain SGD, w_new = w - lr * grad: recover grad from one step, compare to numeric */
    s = tyc_session_new(m, &o, &err);
    assert_non_null(s);
    tyc_session_param(s, 0, &w0, &n0);
    tyc_session_param(s, 1, &w1, &n1);
    {
        float *before = malloc(n0 * sizeof(float)), *after = malloc(n0 * sizeof(float));
        memcpy(before, w0, n0 * sizeof(float));
        assert_int_equal(tyc_session_step(s, x, y, &loss0), 0);
        memcpy(after, w0, n0 * sizeof(float));
        for (i = 0; i < (int)n0; i += 3) {
            float g = (before[i] - after[i]) / o.lr, num;
            struct tyc_session *t;
            float *tw;
            o.lr = 1e-30f; /* a step that leaves weights unchanged: just evaluates the loss */
            t = tyc_session_new(m, &o, &err);
            tyc_session_param(t, 0, &tw, NULL);
            memcpy(tw, before, n0 * sizeof(float));
            tw[i] = before[i] + 1e-2f;
            tyc_session_step(t, x, y, &lp);
            memcpy(tw, before, n0 * sizeof(float));
            tw[i] = before[i] - 1e-2f;
            tyc_session_step(t, x, y, &lm);
            tyc_session_free(t);
            o.lr = 1e-3f;
            num = (lp - lm) / 2e-2f;
            if (fabsf(num - g) > 2e-3f + 3e-2f * fabsf(num))
                fail_msg("session gradcheck w0[%d]: %g vs numeric %g", i, (double)g, (double)num);
        }
        free(before);
        free(after);
    }
    tyc_session_free(s);
    tyc_model_free(m);
}

/* ---- passes on/off and eager vs compiled ----------------------------------------------------- */
static const char *deep_spec = "{\"input\": 20, \"classes\": 5, \"layers\": ["
                               "{\"type\": \"dense\", \"units\": 33, \"activation\": \"gelu\"},"
                               "{\"type\": \"dense\", \"units\": 17, \"activation\": \"relu\"},"
                               "{\"type\": \"dense\", \"units\": 9, \"activation\": \"sigmoid\"},"
                               "{\"type\": \"dense\", \"units\": 8, \"activation\": \"tanh\"},"
                               "{\"type\": \"dense\", \"units\": 5}]}";

/* Trains `steps` steps; OUT: all parameters concatenated (new: caller frees), losses. */
static float *train_params(const struct tyc_model *m, int mode, unsigned passes, int opt, int steps,
                           float *last_loss, struct tyc_stats *st)
{
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *s;
    float x[13 * 20], *all, *p;
    int32_t y[13];
    size_t total = 0, n, off = 0;
    int i, k;
    tyc_options_init(&o);
    o.mode = mode;
    o.passes = passes;
    o.batch = 13;
    o.optimizer = opt;
    o.lr = opt == TYC_SGD ? 0.05f : 0.01f;
    s = tyc_session_new(m, &o, &err);
    if (!s)
        fail_msg("session: %s", err.msg);
    for (k = 0; k < steps; k++) {
        fill(x, 13 * 20, 100u + (unsigned)k, -1, 1);
        for (i = 0; i < 13; i++)
            y[i] = (i + k) % 5;
        assert_int_equal(tyc_session_step(s, x, y, last_loss), 0);
    }
    for (i = 0; i < tyc_session_param_count(s); i++) {
        tyc_session_param(s, i, &p, &n);
        total += n;
    }
    all = malloc(total * sizeof(float));
    for (i = 0; i < tyc_session_param_count(s); i++) {
        tyc_session_param(s, i, &p, &n);
        memcpy(all + off, p, n * sizeof(float));
        off += n;
    }
    if (st)
        tyc_session_stats(s, st);
    tyc_session_free(s);
    return all;
}

static size_t nparams_total(const struct tyc_model *m)
{
    (void)m;
    return 20 * 33 + 33 + 33 * 17 + 17 + 17 * 9 + 9 + 9 * 8 + 8 + 8 * 5 + 5;
}

static void test_passes_bitwise(void **state)
{
    static const unsigned bits[] = {TYC_PASS_DCE,      TYC_PASS_CSE,  TYC_PASS_SIMPLIFY,
                                    TYC_PASS_EPILOGUE, TYC_PASS_XENT, TYC_PASS_EWFUSE,
                                    TYC_PASS_MEMPLAN,  TYC_PASS_MASKS};
    struct tyc_model *m = model_str(deep_spec);
    size_t n = nparams_total(m);
    int opt, b;
    (void)state;
    for (opt = 0; opt < 2; opt++) {
        float le, lc;
        float *ref = train_params(m, TYC_EAGER, 0, opt, 6, &le, NULL);
        float *all = train_params(m, TYC_COMPILED, TYC_PASS_ALL, opt, 6, &lc, NULL);
        float *none = train_params(m, TYC_COMPILED, 0, opt, 6, &lc, NULL);
        assert_memory_equal(ref, all, n * sizeof(float));
        assert_memory_equal(ref, none, n * sizeof(float));
        assert_true(le == lc);
        for (b = 0; b < 8; b++) {
            float *off = train_params(m, TYC_COMPILED, TYC_PASS_ALL & ~bits[b], opt, 6, &lc, NULL);
            float *only = train_params(m, TYC_COMPILED, bits[b], opt, 6, &lc, NULL);
            assert_memory_equal(ref, off, n * sizeof(float));
            assert_memory_equal(ref, only, n * sizeof(float));
            free(off);
            free(only);
        }
        free(ref);
        free(all);
        free(none);
    }
    tyc_model_free(m);
}

static void test_fusion_and_memory(void **state)
{
    struct tyc_model *m = model_str(deep_spec);
    struct tyc_stats se, sc;
    float l;
    (void)state;
    free(train_params(m, TYC_EAGER, 0, TYC_ADAM, 1, &l, &se));
    free(train_params(m, TYC_COMPILED, TYC_PASS_ALL, TYC_ADAM, 1, &l, &sc));
    assert_int_equal(se.train_kernels, se.nodes_before);
    /* 5 layers: 5 fwd matmuls, 9 bwd matmuls, 1 xent, 10 optimizer kernels, <= a few more */
    assert_true(sc.train_kernels <= 27);
    assert_true(sc.train_kernels * 4 < se.train_kernels);
    assert_true(sc.temp_bytes * 10 < se.temp_bytes * 6);
    tyc_model_free(m);
}

/* memplan's schedule moves each optimizer update up to the parameter's last use: the weight
 * gradients of the two large layers (400x400 and 300x400 floats) are never alive together, and
 * the update of the second layer runs before the first layer's weight gradient is made */
static void test_schedule_updates(void **state)
{
    static const char *spec = "{\"input\": 300, \"classes\": 10, \"layers\": [{\"type\": "
                              "\"dense\", \"units\": 400, \"activation\": \"relu\"}, "
                              "{\"type\": \"dense\", \"units\": 400, \"activation\": \"relu\"}, "
                              "{\"type\": \"dense\", \"units\": 10}]}";
    struct tyc_model *m = model_str(spec);
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *s;
    struct tyc_stats st;
    char *ir = NULL, *upd, *mm;
    (void)state;
    tyc_options_init(&o);
    o.batch = 8;
    s = tyc_session_new(m, &o, &err);
    assert_non_null(s);
    tyc_session_stats(s, &st);
    if (!(st.temp_bytes < (400 * 400 + 300 * 400) * sizeof(float)))
        fail_msg("temp bytes %zu: both weight gradients alive at once", (size_t)st.temp_bytes);
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_IR, &ir, &err), 0);
    upd = strstr(ir, "%dense1.weight[400,400] = fused_elementwise");
    mm = strstr(ir, "%t28[300,400] = matmul");
    assert_non_null(upd);
    if (!mm)
        mm = strstr(ir, "[300,400] = matmul");
    assert_non_null(mm);
    assert_true(upd < mm);
    tyc_free(ir);
    tyc_session_free(s);
    tyc_model_free(m);
}

/* IR, pass log, CPU listing and CUDA source are emitted for a compiled session. */
static void test_emit(void **state)
{
    struct tyc_model *m = model_str(deep_spec);
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *s;
    char *ir = NULL;
    (void)state;
    tyc_options_init(&o);
    o.batch = 16;
    s = tyc_session_new(m, &o, &err);
    assert_non_null(s);
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_IR, &ir, &err), 0);
    assert_non_null(strstr(ir, "matmul_epilogue"));
    assert_non_null(strstr(ir, "fused_elementwise"));
    assert_non_null(strstr(ir, "softmax_xent_fused"));
    tyc_free(ir);
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_PASSLOG, &ir, &err), 0);
    assert_non_null(strstr(ir, "merged"));
    tyc_free(ir);
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_C, &ir, &err), 0);
    tyc_free(ir);
    assert_int_equal(tyc_session_emit(s, TYC_EMIT_CUDA, &ir, &err), 0);
    assert_non_null(strstr(ir, "__global__"));
    tyc_free(ir);
    tyc_session_free(s);
    tyc_model_free(m);
}

static void test_planner_graph(void **state)
{
    /* a chain a -> b -> c -> d: a and c may share, b and d may share */
    struct tyc__graph g;
    int dim[1] = {100}, x, a, b, c, d, i, j;
    size_t total;
    (void)state;
    tyc__graph_init(&g);
    x = tyc__tensor_new(&g, TK_INPUT, 1, dim, "x");
    a = tyc__ew(&g, OP_RELU, x, -1);
    b = tyc__ew(&g, OP_TANH, a, -1);
    c = tyc__ew(&g, OP_RELU, b, -1);
    d = tyc__ew(&g, OP_ADD, c, x);
    g.outputs[g.nout++] = d;
    total = tyc__plan_memory(&g, 1);
    assert_int_equal(total, 2 * 448); /* 400 bytes aligned to 64 */
    for (i = 0; i < g.nt; i++)
        for (j = 0; j < i; j++) {
            const struct tyc__tensor *p = &g.t[i], *q = &g.t[j];
            if (p->kind != TK_TEMP || q->kind != TK_TEMP)
                continue;
            if (!(p->last < q->def || q->last < p->def))
                assert_true(p->off + p->numel * 4 <= q->off || q->off + q->numel * 4 <= p->off);
        }
    assert_int_equal(tyc__plan_memory(&g, 0), 4 * 448);
    tyc__graph_cleanup(&g);
}

static void test_dce_cse_simplify(void **state)
{
    struct tyc__graph g;
    struct tyc__buf log;
    int dim[1] = {8}, x, a1, a2, dead, s, out;
    (void)state;
    tyc__graph_init(&g);
    tyc__buf_init(&log, 1 << 16);
    x = tyc__tensor_new(&g, TK_INPUT, 1, dim, "x");
    a1 = tyc__ew(&g, OP_MUL, x, tyc__const(&g, 2.0f));
    a2 = tyc__ew(&g, OP_MUL, x, tyc__const(&g, 2.0f)); /* same as a1 after constant CSE */
    dead = tyc__ew(&g, OP_TANH, a1, -1);
    (void)dead;
    s = tyc__ew(&g, OP_MUL, a2, tyc__const(&g, 1.0f)); /* x * 1 -> x */
    out = tyc__ew(&g, OP_ADD, a1, s);
    g.outputs[g.nout++] = out;
    tyc__run_passes(&g, TYC_PASS_DCE | TYC_PASS_CSE | TYC_PASS_SIMPLIFY, &log);
    assert_non_null(strstr(log.p, "removed 1 dead"));
    assert_non_null(strstr(log.p, "merged 1 duplicate nodes"));
    assert_non_null(strstr(log.p, "applied 1 rewrites"));
    assert_int_equal(g.nn, 2);
    tyc__buf_cleanup(&log);
    tyc__graph_cleanup(&g);
}

/* a small CNN: eager vs compiled (all passes, none, each off) bitwise, both optimizers */
static void test_cnn_bitwise(void **state)
{
    const char *spec = "{\"input\": [2, 8, 8], \"classes\": 4, \"layers\": ["
                       "{\"type\": \"conv2d\", \"filters\": 3, \"kernel\": 3, \"padding\": "
                       "\"same\", \"activation\": \"relu\"},"
                       "{\"type\": \"maxpool2d\", \"size\": 2},"
                       "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"stride\": 2, "
                       "\"padding\": 1, \"activation\": \"tanh\"},"
                       "{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 4}]}";
    struct tyc_model *m = model_str(spec);
    int opt, mode;
    (void)state;
    for (opt = 0; opt < 2; opt++) {
        float *ref = NULL;
        for (mode = 0; mode < 5; mode++) {
            struct tyc_options o;
            struct tyc_err err = {0};
            struct tyc_session *s;
            float x[5 * 128], *p;
            int32_t y[5] = {0, 1, 2, 3, 1};
            size_t n;
            int k;
            tyc_options_init(&o);
            o.batch = 5;
            o.optimizer = opt;
            o.mode = mode == 0 ? TYC_EAGER : TYC_COMPILED;
            o.passes = mode == 2   ? 0
                       : mode == 3 ? TYC_PASS_ALL & ~TYC_PASS_EPILOGUE
                       : mode == 4 ? TYC_PASS_ALL & ~TYC_PASS_MASKS
                                   : TYC_PASS_ALL;
            s = tyc_session_new(m, &o, &err);
            if (!s)
                fail_msg("cnn session: %s", err.msg);
            for (k = 0; k < 4; k++) {
                fill(x, 5 * 128, 40u + (unsigned)k, 0, 1);
                assert_int_equal(tyc_session_step(s, x, y, NULL), 0);
            }
            tyc_session_param(s, 0, &p, &n); /* conv0.weight */
            assert_int_equal(n, 3 * 2 * 3 * 3);
            if (!ref) {
                ref = malloc(n * sizeof(float));
                memcpy(ref, p, n * sizeof(float));
            } else
                assert_memory_equal(ref, p, n * sizeof(float));
            tyc_session_free(s);
        }
        free(ref);
    }
    tyc_model_free(m);
    expect_model_error("{\"input\": 784, \"classes\": 2, \"layers\": [{\"type\": \"conv2d\", "
                       "\"filters\": 2, \"kernel\": 3}, {\"type\": \"dense\", \"units\": 2}]}",
                       "[H, W]");
    expect_model_error("{\"input\": [8, 8], \"classes\": 2, \"layers\": [{\"type\": \"dense\", "
                       "\"units\": 4}, {\"type\": \"conv2d\", \"filters\": 2, \"kernel\": 3}, "
                       "{\"type\": \"dense\", \"units\": 2}]}",
                       "after a dense");
    expect_model_error("{\"input\": [8, 8], \"classes\": 2, \"layers\": [{\"type\": \"conv2d\", "
                       "\"filters\": 2}, {\"type\": \"dense\", \"units\": 2}]}",
                       "'kernel'");
}

/* Results do not depend on the thread count: an MLP big enough to split every kernel (GEMM
 * tiles, elementwise chunks, column sums) and a CNN with more samples than one weight-gradient
 * group, trained with 1, 2, 3 and 5 threads, in eager and compiled mode, give the same bits. */
static float *train_threads(const struct tyc_model *m, int in, int batch, int mode, int opt,
                            int threads, size_t *total)
{
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *s;
    float *x = malloc((size_t)batch * (size_t)in * sizeof(float)), *all, *p;
    int32_t *y = malloc((size_t)batch * sizeof(int32_t));
    size_t n, off = 0;
    int i, k;
    tyc_options_init(&o);
    o.mode = mode;
    o.batch = batch;
    o.optimizer = opt;
    o.threads = threads;
    s = tyc_session_new(m, &o, &err);
    if (!s)
        fail_msg("session: %s", err.msg);
    for (k = 0; k < 3; k++) {
        fill(x, (size_t)batch * (size_t)in, 7u + (unsigned)k, -1, 1);
        for (i = 0; i < batch; i++)
            y[i] = (i * 7 + k) % 10;
        assert_int_equal(tyc_session_step(s, x, y, NULL), 0);
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
    tyc_session_free(s);
    free(x);
    free(y);
    return all;
}

static void test_threads_bitwise(void **state)
{
    static const char *specs[2] = {
        "{\"input\": 150, \"classes\": 10, \"layers\": ["
        "{\"type\": \"dense\", \"units\": 300, \"activation\": \"relu\"},"
        "{\"type\": \"dense\", \"units\": 70, \"activation\": \"gelu\"},"
        "{\"type\": \"dense\", \"units\": 10}]}",
        "{\"input\": [1, 12, 12], \"classes\": 10, \"layers\": ["
        "{\"type\": \"conv2d\", \"filters\": 4, \"kernel\": 3, \"padding\": \"same\", "
        "\"activation\": \"relu\"}, {\"type\": \"maxpool2d\", \"size\": 2},"
        "{\"type\": \"conv2d\", \"filters\": 6, \"kernel\": 3, \"activation\": \"tanh\"},"
        "{\"type\": \"dense\", \"units\": 10}]}"};
    static const int ins[2] = {150, 144}, batches[2] = {70, 37}, threads[3] = {2, 3, 5};
    int k, opt, mode, t;
    (void)state;
    for (k = 0; k < 2; k++) {
        struct tyc_model *m = model_str(specs[k]);
        for (opt = 0; opt < 2; opt++) {
            size_t n, n2;
            float *ref = train_threads(m, ins[k], batches[k], TYC_EAGER, opt, 1, &n);
            for (mode = 0; mode < 2; mode++)
                for (t = 0; t < 3; t++) {
                    float *got = train_threads(m, ins[k], batches[k], mode, opt, threads[t], &n2);
                    assert_int_equal(n, n2);
                    assert_memory_equal(ref, got, n * sizeof(float));
                    free(got);
                }
            free(ref);
        }
        tyc_model_free(m);
    }
}

/* target cuda without a GPU: logs a fallback and runs the CPU back end (bitwise equal) */
static void test_cuda_fallback(void **state)
{
    struct tyc_model *m = model_str(deep_spec);
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *a, *b;
    float x[8 * 20], la, lb, *pa, *pb;
    int32_t y[8] = {0, 1, 2, 3, 4, 0, 1, 2};
    size_t n;
    (void)state;
    if (tyc_cuda_available())
        skip(); /* covered by test_tyc_cuda */
    fill(x, 8 * 20, 5, -1, 1);
    tyc_options_init(&o);
    o.batch = 8;
    a = tyc_session_new(m, &o, &err);
    o.target = TYC_TARGET_CUDA;
    b = tyc_session_new(m, &o, &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(tyc_session_step(a, x, y, &la), 0);
    assert_int_equal(tyc_session_step(b, x, y, &lb), 0);
    assert_true(la == lb);
    tyc_session_param(a, 0, &pa, &n);
    tyc_session_param(b, 0, &pb, NULL);
    assert_memory_equal(pa, pb, n * sizeof(float));
    tyc_session_free(a);
    tyc_session_free(b);
    tyc_model_free(m);
}

/* ---- weights round trip ---------------------------------------------------------------------- */
static void test_save_load(void **state)
{
    struct tyc_model *m = model_str(deep_spec);
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_session *a, *b;
    char dir[] = "/tmp/tyc-test-XXXXXX", path[256];
    float *pa, *pb;
    size_t n;
    int i;
    (void)state;
    assert_non_null(mkdtemp(dir));
    tyc_options_init(&o);
    o.batch = 4;
    a = tyc_session_new(m, &o, &err);
    o.seed = 999;
    b = tyc_session_new(m, &o, &err);
    assert_int_equal(tyc_session_save(a, dir, &err), 0);
    snprintf(path, sizeof(path), "%s/weights.tyw", dir);
    assert_int_equal(tyc_session_load_weights(b, path, &err), 0);
    for (i = 0; i < tyc_session_param_count(a); i++) {
        tyc_session_param(a, i, &pa, &n);
        tyc_session_param(b, i, &pb, NULL);
        assert_memory_equal(pa, pb, n * sizeof(float));
    }
    unlink(path);
    rmdir(dir);
    assert_true(tyc_session_load_weights(b, path, &err) < 0);
    tyc_session_free(a);
    tyc_session_free(b);
    tyc_model_free(m);
}

/* ---- data errors ----------------------------------------------------------------------------- */
static void write_bytes(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void test_bad_data(void **state)
{
    char dir[] = "/tmp/tyc-data-XXXXXX", im[256], lb[256];
    unsigned char img[16 + 2 * 4] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2};
    unsigned char lab[8 + 3] = {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3};
    struct tyc_dataset ds = {0};
    struct tyc_err err = {0};
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(im, sizeof(im), "%s/train-images-idx3-ubyte", dir);
    snprintf(lb, sizeof(lb), "%s/train-labels-idx1-ubyte", dir);
    write_bytes(im, img, sizeof(img));
    write_bytes(lb, lab, sizeof(lab));
    assert_int_equal(tyc_dataset_load(&ds, im, lb, &err), -TYC_EDATA);
    assert_non_null(strstr(err.msg, "2 images"));
    lab[7] = 2;
    write_bytes(lb, lab, 10);
    assert_int_equal(tyc_dataset_load_dir(&ds, dir, "train", &err), 0);
    assert_int_equal(ds.n, 2);
    assert_int_equal(ds.dim, 4);
    tyc_dataset_cleanup(&ds);
    write_bytes(im, img, sizeof(img) - 3); /* truncated */
    assert_int_equal(tyc_dataset_load(&ds, im, lb, &err), -TYC_EDATA);
    assert_non_null(strstr(err.msg, "truncated"));
    img[3] = 1; /* wrong rank */
    write_bytes(im, img, sizeof(img));
    assert_int_equal(tyc_dataset_load(&ds, im, lb, &err), -TYC_EDATA);
    assert_non_null(strstr(err.msg, "not an IDX"));
    unlink(im);
    assert_int_equal(tyc_dataset_load_dir(&ds, dir, "train", &err), -TYC_EDATA);
    assert_non_null(strstr(err.msg, "needs an IDX images file"));
    unlink(lb);
    rmdir(dir);
    assert_true(tyc_dataset_load_dir(&ds, "/nonexistent-dir", NULL, &err) < 0);
}

/* ---- real data slice ------------------------------------------------------------------------- */
static void test_fashion_mnist_slice(void **state)
{
    struct tyc_dataset tr = {0};
    struct tyc_err err = {0};
    struct tyc_model *m;
    struct tyc_options o;
    struct tyc_session *s;
    int32_t *pred;
    int i, ok = 0, b;
    (void)state;
    if (!TYC_HAVE_ZLIB || access(TYC_FMNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0)
        skip();
    assert_int_equal(tyc_dataset_load_dir(&tr, TYC_FMNIST_DIR, "train", &err), 0);
    assert_int_equal(tr.n, 60000);
    assert_int_equal(tr.dim, 784);
    m = tyc_model_load("mlp-small", &err);
    tyc_options_init(&o);
    o.batch = 50;
    s = tyc_session_new(m, &o, &err);
    /* 4000 training examples (80 steps), evaluated on the next 2000 */
    for (b = 0; b < 80; b++)
        assert_int_equal(tyc_session_step(s, tr.x + (size_t)b * 50 * 784, tr.y + b * 50, NULL), 0);
    pred = malloc(2000 * sizeof(int32_t));
    assert_int_equal(tyc_session_predict(s, tr.x + (size_t)4000 * 784, 2000, pred), 0);
    for (i = 0; i < 2000; i++)
        ok += pred[i] == tr.y[4000 + i];
    assert_true(ok > 2000 * 70 / 100);
    free(pred);
    tyc_session_free(s);
    tyc_model_free(m);
    tyc_dataset_cleanup(&tr);
}

/* vmath.h against double precision, every 61st float of the ranges the kernels use: tanh within
 * 1.5 ulp on [-12, 12] (exactly +-1 beyond), exp within 1.5 ulp on [-87, 88]; odd symmetry */
static double ulps(float got, double want)
{
    float w = (float)want;
    double sp = (double)(nextafterf(fabsf(w), INFINITY) - fabsf(w));
    return fabs((double)got - want) / sp;
}

static void test_vmath(void **state)
{
    uint32_t u;
    double worst_t = 0, worst_e = 0;
    (void)state;
    for (u = 0; u < 0x41400000u; u += 61) { /* +0 .. 12 */
        float x;
        memcpy(&x, &u, sizeof(x));
        double et = ulps(vmath_tanh(x), tanh((double)x));
        worst_t = et > worst_t ? et : worst_t;
        assert_true(vmath_tanh(-x) == -vmath_tanh(x));
        if (x <= 87.0f) {
            double e1 = ulps(vmath_exp(x), exp((double)x)),
                   e2 = ulps(vmath_exp(-x), exp(-(double)x));
            worst_e = e1 > worst_e ? e1 : worst_e;
            worst_e = e2 > worst_e ? e2 : worst_e;
        }
    }
    for (u = 0x41400000u; u < 0x42b00000u; u += 61) { /* 12 .. 88 */
        float x;
        memcpy(&x, &u, sizeof(x));
        double e1 = ulps(vmath_exp(x), exp((double)x));
        assert_true(vmath_tanh(x) == 1.0f);
        worst_e = e1 > worst_e ? e1 : worst_e;
        if (x <= 87.0f) {
            double e2 = ulps(vmath_exp(-x), exp(-(double)x));
            worst_e = e2 > worst_e ? e2 : worst_e;
        }
    }
    if (!(worst_t < 1.5 && worst_e < 1.5))
        fail_msg("vmath: tanh %.3f ulp, exp %.3f ulp", worst_t, worst_e);
    assert_true(vmath_exp(0.0f) == 1.0f && vmath_tanh(0.0f) == 0.0f);
    assert_true(isnan(vmath_tanh(NAN)) && isnan(vmath_exp(NAN)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_model_errors),
        cmocka_unit_test(test_gradcheck_ops),
        cmocka_unit_test(test_gradcheck_session),
        cmocka_unit_test(test_passes_bitwise),
        cmocka_unit_test(test_fusion_and_memory),
        cmocka_unit_test(test_emit),
        cmocka_unit_test(test_planner_graph),
        cmocka_unit_test(test_dce_cse_simplify),
        cmocka_unit_test(test_save_load),
        cmocka_unit_test(test_cuda_fallback),
        cmocka_unit_test(test_cnn_bitwise),
        cmocka_unit_test(test_threads_bitwise),
        cmocka_unit_test(test_vmath),
        cmocka_unit_test(test_schedule_updates),
        cmocka_unit_test(test_bad_data),
        cmocka_unit_test(test_fashion_mnist_slice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
