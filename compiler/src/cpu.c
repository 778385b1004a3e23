/* cpu.c - the CPU back end's kernels: GEMM (register-blocked, with a per-row-block epilogue
 * hook), elementwise ops, fused elementwise programs (tiles of TILE elements kept in L1),
 * column sums and softmax-cross-entropy. Eager and compiled modes call the same scalar
 * arithmetic in the same order, so they agree bitwise (libtyc is built with -ffp-contract=off:
 * no FMA contraction differs between a fused and an unfused loop). Kernels run on the thread
 * pool bound by the caller (pool.c; serial when none is bound): work is split only over
 * independent outputs, and every reduction (column sums, the loss, channel sums, the conv weight
 * gradient over samples) runs in the same order as the serial loop, so results are bitwise equal
 * for every thread count. */
#include "tyc_int.h"
#include "vmath.h"
#include <math.h>
#include <stddef.h>
#include <string.h>

#define TILE 256

typedef float v4f __attribute__((vector_size(16)));

/* GELU, tanh approximation: 0.5 x (1 + tanh(u)) = x sigmoid(2u) = x / (1 + exp(-2u)) (no
 * cancellation for negative x); its derivative s + 2 x s (1 - s) du with s = sigmoid(2u) */
static inline __attribute__((always_inline)) float gelu(float x)
{
    const float k = 0.7978845608f; /* sqrt(2/pi) */
    float u = k * (x + 0.044715f * x * x * x);
    return x / (1.0f + vmath_exp(-2.0f * u));
}

static inline __attribute__((always_inline)) float gelu_grad(float dy, float x)
{
    const float k = 0.7978845608f;
    float u = k * (x + 0.044715f * x * x * x);
    float sg = 1.0f / (1.0f + vmath_exp(-2.0f * u));
    float du = k * (1.0f + 3.0f * 0.044715f * x * x);
    return dy * (sg + 2.0f * x * sg * (1.0f - sg) * du);
}

/* o[i] = op(a[i], b[i]) over n elements; b is NULL, full (bstride 1) or a scalar (bstride 0).
 * Cloned for AVX-512 and AVX2 (ifunc): +, -, *, / and sqrt round the same at every vector width
 * and tanh and exp are vmath.h's straight-line code, so every clone gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
ew_vec(int op, float f, float *o, const float *a, const float *b, int bs, size_t n)
{
    size_t i;
#define LOOP(expr)                                                                                 \
    do {                                                                                           \
        if (bs)                                                                                    \
            for (i = 0; i < n; i++) {                                                              \
                const float x = a[i], y = b ? b[i] : 0.0f;                                         \
                (void)y;                                                                           \
                o[i] = (expr);                                                                     \
            }                                                                                      \
        else                                                                                       \
            for (i = 0; i < n; i++) {                                                              \
                const float x = a[i], y = b ? b[0] : 0.0f;                                         \
                (void)y;                                                                           \
                o[i] = (expr);                                                                     \
            }                                                                                      \
    } while (0)
    switch (op) {
    case OP_ADD:
        LOOP(x + y);
        break;
    case OP_SUB:
        LOOP(x - y);
        break;
    case OP_MUL:
        LOOP(x * y);
        break;
    case OP_DIV:
        LOOP(x / y);
        break;
    case OP_SQRT:
        LOOP(sqrtf(x));
        break;
    case OP_RELU:
        LOOP(x > 0.0f ? x : 0.0f);
        break;
    case OP_GELU:
        LOOP(gelu(x));
        break;
    case OP_TANH:
        LOOP(vmath_tanh(x));
        break;
    case OP_SIGMOID:
        LOOP(1.0f / (1.0f + vmath_exp(-x)));
        break;
    case OP_RELU_GRAD:
        LOOP(y > 0.0f ? x : 0.0f);
        break;
    case OP_GELU_GRAD:
        LOOP(gelu_grad(x, y));
        break;
    case OP_TANH_GRAD:
        LOOP(x * (1.0f - y * y));
        break;
    case OP_SIGMOID_GRAD:
        LOOP(x * y * (1.0f - y));
        break;
    case OP_SCALE:
        LOOP(x * f);
        break;
    default: /* COPY, ASSIGN, RESHAPE */
        if (o != a)
            memmove(o, a, n * sizeof(float));
        break;
    }
#undef LOOP
}

/* An elementwise node over [i0, i0+n): input k is full, last-dim broadcast or scalar. */
static const float *operand(const struct tyc__tensor *t, size_t full, int lastdim, size_t i0,
                            size_t n, float *tmp, int *bs)
{
    size_t i;
    *bs = 1;
    if (t->numel == full)
        return t->data + i0;
    if (t->numel == 1) {
        *bs = 0;
        return t->data;
    }
    for (i = 0; i < n; i++)
        tmp[i] = t->data[(i0 + i) % (size_t)lastdim];
    return tmp;
}

/* elements per parallel task of an elementwise kernel (a multiple of TILE) */
#define EW_CHUNK (64 * TILE)

struct ew_job {
    const struct tyc__graph *g;
    const struct tyc__node *nd;
    const struct tyc__cpu_ctx *c;
};

static void ew_range(const struct tyc__graph *g, const struct tyc__node *nd, size_t lo, size_t hi,
                     float *scratch)
{
    const struct tyc__tensor *o = &g->t[nd->out[0]], *a = &g->t[nd->in[0]];
    const struct tyc__tensor *b = nd->nin > 1 ? &g->t[nd->in[1]] : NULL;
    int lastdim = o->dim[o->nd - 1], bs = 1;
    size_t i0, n;
    if (!b || b->numel == o->numel || b->numel == 1) {
        size_t boff = b && b->numel != 1 ? lo : 0;
        ew_vec(nd->op, nd->f, o->data + lo, a->data + lo, b ? b->data + boff : NULL,
               !b || b->numel != 1, hi - lo);
        return;
    }
    for (i0 = lo; i0 < hi; i0 += TILE) {
        const float *bp;
        n = hi - i0 < TILE ? hi - i0 : TILE;
        bp = operand(b, o->numel, lastdim, i0, n, scratch, &bs);
        ew_vec(nd->op, nd->f, o->data + i0, a->data + i0, bp, bs, n);
    }
}

static void ew_task(void *p, int task, int tid)
{
    struct ew_job *j = p;
    size_t full = j->g->t[j->nd->out[0]].numel, lo = (size_t)task * EW_CHUNK;
    ew_range(j->g, j->nd, lo, full - lo < EW_CHUNK ? full : lo + EW_CHUNK,
             j->c->local + (size_t)tid * j->c->local_n);
}

static void run_ew(const struct tyc__graph *g, const struct tyc__node *nd,
                   const struct tyc__cpu_ctx *c)
{
    struct ew_job j = {g, nd, c};
    size_t full = g->t[nd->out[0]].numel;
    tyc__pool_run(c->pool, (int)((full + EW_CHUNK - 1) / EW_CHUNK), ew_task, &j);
}

static void fused_range(const struct tyc__graph *g, const struct tyc__node *nd, size_t lo,
                        size_t hi, float *scratch)
{
    const struct tyc__tensor *o0 = &g->t[nd->out[0]];
    size_t full = o0->numel, i0, n;
    int lastdim = o0->dim[o0->nd - 1], k, nreg = nd->nin + nd->nuop;
    const float *reg[TYC_MAXIN + TYC_MAXUOP];
    int rbs[TYC_MAXIN + TYC_MAXUOP];
    for (i0 = lo; i0 < hi; i0 += TILE) {
        n = hi - i0 < TILE ? hi - i0 : TILE;
        for (k = 0; k < nd->nin; k++)
            reg[k] = operand(&g->t[nd->in[k]], full, lastdim, i0, n, scratch + (size_t)k * TILE,
                             &rbs[k]);
        for (k = 0; k < nd->nuop; k++) {
            const struct tyc__uop *u = &nd->uop[k];
            float *dst = scratch + (size_t)(nd->nin + k) * TILE;
            const float *a = reg[u->a];
            float tmp[TILE];
            if (!rbs[u->a]) { /* scalar first operand: expand (rare) */
                size_t i;
                for (i = 0; i < n; i++)
                    tmp[i] = a[0];
                a = tmp;
            }
            ew_vec(u->op, u->f, dst, a, u->b >= 0 ? reg[u->b] : NULL, u->b >= 0 ? rbs[u->b] : 1, n);
            reg[nd->nin + k] = dst;
            rbs[nd->nin + k] = 1;
        }
        (void)nreg;
        for (k = 0; k < nd->nout; k++) {
            int r = nd->outreg[k];
            float *dst = g->t[nd->out[k]].data + i0;
            if (rbs[r])
                memmove(dst, reg[r], n * sizeof(float));
            else {
                size_t i;
                for (i = 0; i < n; i++)
                    dst[i] = reg[r][0];
            }
        }
    }
}

static void fused_task(void *p, int task, int tid)
{
    struct ew_job *j = p;
    size_t full = j->g->t[j->nd->out[0]].numel, lo = (size_t)task * EW_CHUNK;
    fused_range(j->g, j->nd, lo, full - lo < EW_CHUNK ? full : lo + EW_CHUNK,
                j->c->local + (size_t)tid * j->c->local_n);
}

static void run_fused(const struct tyc__graph *g, const struct tyc__node *nd,
                      const struct tyc__cpu_ctx *c)
{
    struct ew_job j = {g, nd, c};
    size_t full = g->t[nd->out[0]].numel;
    tyc__pool_run(c->pool, (int)((full + EW_CHUNK - 1) / EW_CHUNK), fused_task, &j);
}

/* ---- GEMM glue ---------------------------------------------------------------------------------
 */
void tyc__gemm(int M, int N, int K, const float *A, int ta, const float *B, int tb, float *C,
               float *scratch)
{
    const struct tyc__cpu_ctx *c = tyc__pool_bound();
    if (c)
        tyc__gemm_par(c, M, N, K, A, ta, B, tb, C, NULL, NULL);
    else
        tyc__gemm_serial(M, N, K, A, ta, B, tb, C, scratch, NULL, NULL);
}

struct epi_ctx {
    const struct tyc__graph *g;
    const struct tyc__node *nd;
    float *c;
    int N;
};

/* bias, activation and activation gradient on a finished tile, element by element */
static void epi_tile(void *p, int r0, int r1, int c0, int c1)
{
    struct epi_ctx *e = p;
    const struct tyc__node *nd = e->nd;
    const float *bias = nd->epi_bias >= 0 ? e->g->t[nd->in[nd->epi_bias]].data : NULL;
    const float *mask = nd->epi_mask >= 0 ? e->g->t[nd->in[nd->epi_mask]].data : NULL;
    size_t w = (size_t)(c1 - c0);
    int r;
    for (r = r0; r < r1; r++) {
        float *row = e->c + (size_t)r * e->N + c0;
        if (bias)
            ew_vec(OP_ADD, 0, row, row, bias + c0, 1, w);
        if (nd->epi_pre) /* the pre-activation, kept for the activation's gradient */
            memcpy(e->g->t[nd->out[nd->epi_pre]].data + (size_t)r * e->N + c0, row,
                   w * sizeof(float));
        if (nd->epi_act)
            ew_vec(nd->epi_act, 0, row, row, NULL, 1, w);
        if (mask)
            ew_vec(nd->epi_gop, 0, row, row, mask + (size_t)r * e->N + c0, 1, w);
    }
}

/* column sums in row order, split over column ranges */
#define COLS_CHUNK 64
struct cols_job {
    const float *x;
    size_t rows;
    int C;
    float *out;
};

static void cols_task(void *p, int task, int tid)
{
    struct cols_job *j = p;
    int c0 = task * COLS_CHUNK, w = j->C - c0 < COLS_CHUNK ? j->C - c0 : COLS_CHUNK;
    size_t r;
    (void)tid;
    memset(j->out + c0, 0, (size_t)w * sizeof(float));
    for (r = 0; r < j->rows; r++)
        ew_vec(OP_ADD, 0, j->out + c0, j->out + c0, j->x + r * (size_t)j->C + c0, 1, (size_t)w);
}

static void reduce_cols(const struct tyc__cpu_ctx *c, const float *x, size_t rows, int C,
                        float *out)
{
    struct cols_job j = {x, rows, C, out};
    tyc__pool_run(rows * (size_t)C >= 16384 ? c->pool : NULL, (C + COLS_CHUNK - 1) / COLS_CHUNK,
                  cols_task, &j);
}

/* ---- softmax cross-entropy ------------------------------------------------------------------- */
void tyc__xent_row(const float *x, int C, int label, float *loss_out, float *grad, float gscale)
{
    float mx = x[0], sum = 0.0f;
    int j;
    for (j = 1; j < C; j++)
        mx = x[j] > mx ? x[j] : mx;
    if (grad) { /* the exponentials once, in grad (vectorized), then the sum in order */
        for (j = 0; j < C; j++)
            grad[j] = vmath_exp(x[j] - mx);
        for (j = 0; j < C; j++)
            sum += grad[j];
    } else
        for (j = 0; j < C; j++)
            sum += vmath_exp(x[j] - mx);
    if (loss_out)
        *loss_out = logf(sum) - (x[label] - mx);
    if (grad)
        for (j = 0; j < C; j++)
            grad[j] = (grad[j] / sum - (j == label ? 1.0f : 0.0f)) * gscale;
}

static int label_of(float v, int C)
{
    int l = (int)v;
    return l < 0 || l >= C ? 0 : l;
}

struct xent_job {
    const float *x, *y;
    int C;
    float *loss, *grad, gscale;
};

static void xent_task(void *p, int r, int tid)
{
    struct xent_job *j = p;
    (void)tid;
    tyc__xent_row(j->x + (size_t)r * j->C, j->C, label_of(j->y[r], j->C),
                  j->loss ? &j->loss[r] : NULL, j->grad ? j->grad + (size_t)r * j->C : NULL,
                  j->gscale);
}

/* ---- convolution (NCHW) as im2col + the GEMM above --------------------------------------------
 * Forward: Y[n] (F x OH*OW) = W (F x C*K*K) * col(x[n]); k runs over (c, kh, kw) in order and the
 * zero-padding entries add +0, so each output equals the direct convolution sum in that order
 * (the generated CUDA computes it directly). Backward: dcol = W^T dY[n] then col2im; dW sums
 * per-sample GEMMs in sample order. */
struct convdims {
    int N, C, H, W, F, K, OH, OW, st, pad;
    size_t ckk, ohow;
};

static struct convdims cdims(const struct tyc__tensor *x, const struct tyc__tensor *w,
                             const struct tyc__tensor *y, int st, int pad)
{
    struct convdims d;
    d.N = x->dim[0], d.C = x->dim[1], d.H = x->dim[2], d.W = x->dim[3];
    d.F = w->dim[0], d.K = w->dim[2], d.OH = y->dim[2], d.OW = y->dim[3];
    d.st = st, d.pad = pad;
    d.ckk = (size_t)d.C * d.K * d.K;
    d.ohow = (size_t)d.OH * d.OW;
    return d;
}

/* valid output columns [*lo, *hi) of kernel column kw: 0 <= ow * st - pad + kw < W */
static void ow_range(const struct convdims *d, int kw, int *lo, int *hi)
{
    int a = d->pad - kw, l = a > 0 ? (a + d->st - 1) / d->st : 0;
    int h = (d->W - 1 + d->pad - kw) / d->st + 1;
    if (d->W - 1 + d->pad - kw < 0)
        h = 0;
    *lo = l < d->OW ? l : d->OW;
    *hi = h < *lo ? *lo : (h > d->OW ? d->OW : h);
}

static void im2col(const struct convdims *d, const float *x, float *col)
{
    int c, kh, kw, oh, ow, lo, hi;
    size_t r = 0;
    for (c = 0; c < d->C; c++)
        for (kh = 0; kh < d->K; kh++)
            for (kw = 0; kw < d->K; kw++, r++) {
                float *row = col + r * d->ohow;
                ow_range(d, kw, &lo, &hi);
                for (oh = 0; oh < d->OH; oh++) {
                    int ih = oh * d->st - d->pad + kh;
                    float *o = row + (size_t)oh * d->OW;
                    ptrdiff_t base;
                    if (ih < 0 || ih >= d->H) {
                        memset(o, 0, (size_t)d->OW * sizeof(float));
                        continue;
                    }
                    base = (ptrdiff_t)(((size_t)c * d->H + (size_t)ih) * d->W) - d->pad + kw;
                    for (ow = 0; ow < lo; ow++)
                        o[ow] = 0.0f;
                    if (d->st == 1 && hi > lo)
                        memcpy(o + lo, x + base + lo, (size_t)(hi - lo) * sizeof(float));
                    else
                        for (ow = lo; ow < hi; ow++)
                            o[ow] = x[base + (ptrdiff_t)ow * d->st];
                    for (ow = hi; ow < d->OW; ow++)
                        o[ow] = 0.0f;
                }
            }
}

/* x = col2im(col): the sum over (c, kh, kw) rows in order, as before */
static void col2im(const struct convdims *d, const float *col, float *x)
{
    int c, kh, kw, oh, ow, lo, hi;
    size_t r = 0;
    memset(x, 0, (size_t)d->C * d->H * d->W * sizeof(float));
    for (c = 0; c < d->C; c++)
        for (kh = 0; kh < d->K; kh++)
            for (kw = 0; kw < d->K; kw++, r++) {
                const float *row = col + r * d->ohow;
                ow_range(d, kw, &lo, &hi);
                for (oh = 0; oh < d->OH; oh++) {
                    int ih = oh * d->st - d->pad + kh;
                    ptrdiff_t base;
                    const float *src = row + (size_t)oh * d->OW;
                    if (ih < 0 || ih >= d->H)
                        continue;
                    base = (ptrdiff_t)(((size_t)c * d->H + (size_t)ih) * d->W) - d->pad + kw;
                    for (ow = lo; ow < hi; ow++)
                        x[base + (ptrdiff_t)ow * d->st] += src[ow];
                }
            }
}

/* per-thread floats of a convolution task: col (or dcol) + a serial GEMM's workspace */
static size_t conv_local(const struct convdims *d, int op)
{
    size_t sh, pt;
    if (op == OP_CONV2D)
        tyc__gemm_ws(d->F, (int)d->ohow, (int)d->ckk, 0, &sh, &pt);
    else if (op == OP_CONV2D_DX)
        tyc__gemm_ws((int)d->ckk, (int)d->ohow, d->F, 0, &sh, &pt);
    else
        tyc__gemm_ws(d->F, (int)d->ckk, (int)d->ohow, 1, &sh, &pt);
    return d->ckk * d->ohow + sh + pt;
}

#define DW_GROUP 16 /* samples whose weight-gradient partials are computed at once */

static size_t conv_shared(const struct convdims *d, int op)
{
    return op == OP_CONV2D_DW ? (size_t)(d->N < DW_GROUP ? d->N : DW_GROUP) * d->F * d->ckk : 0;
}

struct conv_job {
    struct convdims d;
    const float *x, *w, *dy, *bias;
    float *y, *part;
    int act, n0;
    const struct tyc__cpu_ctx *c;
};

static void conv_fwd_task(void *p, int n, int tid)
{
    struct conv_job *j = p;
    const struct convdims *d = &j->d;
    float *col = j->c->local + (size_t)tid * j->c->local_n, *gs = col + d->ckk * d->ohow;
    float *yn = j->y + (size_t)n * d->F * d->ohow;
    int f;
    im2col(d, j->x + (size_t)n * d->C * d->H * d->W, col);
    tyc__gemm_serial(d->F, (int)d->ohow, (int)d->ckk, j->w, 0, col, 0, yn, gs, NULL, NULL);
    if (j->bias) /* epilogue: the same ops as bias_channel and the activation */
        for (f = 0; f < d->F; f++) {
            float *row = yn + (size_t)f * d->ohow;
            ew_vec(OP_ADD, 0, row, row, j->bias + f, 0, d->ohow);
            if (j->act)
                ew_vec(j->act, 0, row, row, NULL, 1, d->ohow);
        }
}

static void conv_dx_task(void *p, int n, int tid)
{
    struct conv_job *j = p;
    const struct convdims *d = &j->d;
    float *dcol = j->c->local + (size_t)tid * j->c->local_n, *gs = dcol + d->ckk * d->ohow;
    /* dcol (CKK x OHOW) = W^T (CKK x F) * dY[n] (F x OHOW) */
    tyc__gemm_serial((int)d->ckk, (int)d->ohow, d->F, j->w, 1, j->dy + (size_t)n * d->F * d->ohow,
                     0, dcol, gs, NULL, NULL);
    col2im(d, dcol, j->y + (size_t)n * d->C * d->H * d->W);
}

static void conv_dw_task(void *p, int i, int tid)
{
    struct conv_job *j = p;
    const struct convdims *d = &j->d;
    float *col = j->c->local + (size_t)tid * j->c->local_n, *gs = col + d->ckk * d->ohow;
    int n = j->n0 + i;
    /* partial (F x CKK) = dY[n] (F x OHOW) * col^T (OHOW x CKK) */
    im2col(d, j->x + (size_t)n * d->C * d->H * d->W, col);
    tyc__gemm_serial(d->F, (int)d->ckk, (int)d->ohow, j->dy + (size_t)n * d->F * d->ohow, 0, col, 1,
                     j->part + (size_t)i * d->F * d->ckk, gs, NULL, NULL);
}

/* dw = part[0] + part[1] + ... in sample order, split over elements */
struct dwsum_job {
    float *dw;
    const float *part;
    int first, cnt;
    size_t len;
};

static void dwsum_task(void *p, int task, int tid)
{
    struct dwsum_job *j = p;
    size_t lo = (size_t)task * EW_CHUNK, hi = j->len - lo < EW_CHUNK ? j->len : lo + EW_CHUNK;
    int i;
    (void)tid;
    for (i = 0; i < j->cnt; i++) {
        const float *src = j->part + (size_t)i * j->len + lo;
        if (j->first && i == 0)
            memcpy(j->dw + lo, src, (hi - lo) * sizeof(float));
        else
            ew_vec(OP_ADD, 0, j->dw + lo, j->dw + lo, src, 1, hi - lo);
    }
}

static void conv_run(const struct tyc__graph *g, const struct tyc__node *nd,
                     const struct tyc__cpu_ctx *c)
{
    const struct tyc__tensor *o = &g->t[nd->out[0]];
    struct conv_job j;
    memset(&j, 0, sizeof(j));
    j.c = c;
    if (nd->op == OP_CONV2D) {
        j.d = cdims(&g->t[nd->in[0]], &g->t[nd->in[1]], o, nd->stride, nd->pad);
        j.x = g->t[nd->in[0]].data;
        j.w = g->t[nd->in[1]].data;
        j.y = o->data;
        j.bias = nd->epi_bias >= 0 ? g->t[nd->in[nd->epi_bias]].data : NULL;
        j.act = nd->epi_act;
        tyc__pool_run(c->pool, j.d.N, conv_fwd_task, &j);
    } else if (nd->op == OP_CONV2D_DX) {
        j.d = cdims(o, &g->t[nd->in[1]], &g->t[nd->in[0]], nd->stride, nd->pad);
        j.dy = g->t[nd->in[0]].data;
        j.w = g->t[nd->in[1]].data;
        j.y = o->data;
        tyc__pool_run(c->pool, j.d.N, conv_dx_task, &j);
    } else {
        struct dwsum_job s;
        j.d = cdims(&g->t[nd->in[0]], o, &g->t[nd->in[1]], nd->stride, nd->pad);
        j.x = g->t[nd->in[0]].data;
        j.dy = g->t[nd->in[1]].data;
        j.part = c->shared;
        s.dw = o->data;
        s.part = c->shared;
        s.len = (size_t)j.d.F * j.d.ckk;
        for (j.n0 = 0; j.n0 < j.d.N; j.n0 += DW_GROUP) {
            int cnt = j.d.N - j.n0 < DW_GROUP ? j.d.N - j.n0 : DW_GROUP;
            tyc__pool_run(c->pool, cnt, conv_dw_task, &j);
            s.first = j.n0 == 0;
            s.cnt = cnt;
            tyc__pool_run(c->pool, (int)((s.len + EW_CHUNK - 1) / EW_CHUNK), dwsum_task, &s);
        }
    }
}

/* max pooling with window = stride = k over planes [p0, p1); the gradient goes to the first
 * maximum (windows do not overlap: every dx element gets at most one contribution) */
static void maxpool_planes(const struct tyc__tensor *x, float *y, float *dx, const float *dy, int k,
                           float *index, int p0, int p1)
{
    int H = x->dim[2], W = x->dim[3], OH = H / k, OW = W / k;
    int nc, oh, ow, i, jj;
    if (dx)
        memset(dx + (size_t)p0 * H * W, 0, (size_t)(p1 - p0) * H * W * sizeof(float));
    for (nc = p0; nc < p1; nc++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                const float *w0 = x->data + (size_t)nc * H * W + (size_t)(oh * k) * W + ow * k;
                size_t q = ((size_t)nc * OH + oh) * OW + ow;
                float bv = w0[0];
                int bi = 0, bj = 0;
                for (i = 0; i < k; i++)
                    for (jj = 0; jj < k; jj++)
                        if (w0[(size_t)i * W + jj] > bv) {
                            bv = w0[(size_t)i * W + jj];
                            bi = i;
                            bj = jj;
                        }
                if (index) /* position inside the window */
                    index[q] = (float)(bi * k + bj);
                if (y)
                    y[q] = bv;
                else
                    dx[(size_t)nc * H * W + (size_t)(oh * k + bi) * W + ow * k + bj] += dy[q];
            }
}

static void pool_idx_grad_planes(const struct tyc__tensor *o, const struct tyc__tensor *dy,
                                 const float *ix, int k, int p0, int p1)
{
    int H = o->dim[2], W = o->dim[3], OH = dy->dim[2], OW = dy->dim[3], oh, ow, nc;
    memset(o->data + (size_t)p0 * H * W, 0, (size_t)(p1 - p0) * H * W * sizeof(float));
    for (nc = p0; nc < p1; nc++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                size_t q = ((size_t)nc * OH + oh) * OW + ow;
                int pos = (int)ix[q];
                o->data[(size_t)nc * H * W + (size_t)(oh * k + pos / k) * W + ow * k + pos % k] +=
                    dy->data[q];
            }
}

#define PLANES_PER_TASK 16
struct plane_job {
    const struct tyc__graph *g;
    const struct tyc__node *nd;
    int planes;
};

static void plane_task(void *p, int task, int tid)
{
    struct plane_job *j = p;
    const struct tyc__graph *g = j->g;
    const struct tyc__node *nd = j->nd;
    const struct tyc__tensor *o = &g->t[nd->out[0]];
    int p0 = task * PLANES_PER_TASK,
        p1 = p0 + PLANES_PER_TASK < j->planes ? p0 + PLANES_PER_TASK : j->planes;
    size_t i, hw;
    (void)tid;
    switch (nd->op) {
    case OP_MAXPOOL:
        maxpool_planes(&g->t[nd->in[0]], o->data, NULL, NULL, nd->stride,
                       nd->nout > 1 ? g->t[nd->out[1]].data : NULL, p0, p1);
        break;
    case OP_MAXPOOL_GRAD:
        maxpool_planes(&g->t[nd->in[1]], NULL, o->data, g->t[nd->in[0]].data, nd->stride, NULL, p0,
                       p1);
        break;
    case OP_MAXPOOL_GRAD_IDX:
        pool_idx_grad_planes(o, &g->t[nd->in[0]], g->t[nd->in[1]].data, nd->stride, p0, p1);
        break;
    case OP_BIAS_CHAN: {
        const struct tyc__tensor *x = &g->t[nd->in[0]];
        const float *b = g->t[nd->in[1]].data;
        int C = x->dim[1], pl;
        hw = (size_t)x->dim[2] * x->dim[3];
        for (pl = p0; pl < p1; pl++) {
            float bv = b[pl % C];
            const float *src = x->data + (size_t)pl * hw;
            float *dst = o->data + (size_t)pl * hw;
            for (i = 0; i < hw; i++)
                dst[i] = src[i] + bv;
        }
        break;
    }
    default: { /* OP_REDUCE_CHAN: "planes" are channels; samples, then positions, in order */
        const struct tyc__tensor *x = &g->t[nd->in[0]];
        int C = x->dim[1], n, ch;
        hw = (size_t)x->dim[2] * x->dim[3];
        for (ch = p0; ch < p1; ch++) {
            /* 8 running sums (element i of a plane goes to lane i mod 8), samples in order,
             * then a fixed tree: the same order for every thread count and mode */
            float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int q;
            for (n = 0; n < x->dim[0]; n++) {
                const float *src = x->data + ((size_t)n * C + ch) * hw;
                for (i = 0; i + 8 <= hw; i += 8)
                    for (q = 0; q < 8; q++)
                        l[q] += src[i + q];
                for (q = 0; i < hw; i++, q++)
                    l[q] += src[i];
            }
            o->data[ch] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
        }
        break;
    }
    }
}

static void run_planes(const struct tyc__graph *g, const struct tyc__node *nd,
                       const struct tyc__cpu_ctx *c, int planes)
{
    struct plane_job j = {g, nd, planes};
    tyc__pool_run(c->pool, (planes + PLANES_PER_TASK - 1) / PLANES_PER_TASK, plane_task, &j);
}

/* ---- dispatch -------------------------------------------------------------------------------- */
/* OUT: the node's scratch: shared floats and floats per thread */
static void node_need(const struct tyc__graph *g, const struct tyc__node *n, size_t *shared,
                      size_t *local)
{
    const struct tyc__tensor *o = &g->t[n->out[0]];
    *shared = 0;
    *local = 2 * TILE;
    if (n->op == OP_MATMUL || n->op == OP_MATMUL_EPI) {
        const struct tyc__tensor *a = &g->t[n->in[0]];
        tyc__gemm_ws(o->dim[0], o->dim[1], n->ta ? a->dim[0] : a->dim[1], n->tb, shared, local);
    }
    if (n->op == OP_FUSED_EW)
        *local = (size_t)(n->nin + n->nuop) * TILE;
    if (n->op == OP_XENT || n->op == OP_XENT_GRAD || n->op == OP_XENT_FUSED)
        *shared = (size_t)g->t[n->in[0]].dim[0];
    if (n->op == OP_CONV2D || n->op == OP_CONV2D_DW) {
        struct convdims d = cdims(&g->t[n->in[0]], n->op == OP_CONV2D ? &g->t[n->in[1]] : o,
                                  n->op == OP_CONV2D ? o : &g->t[n->in[1]], 1, 0);
        *local = conv_local(&d, n->op);
        *shared = conv_shared(&d, n->op);
    }
    if (n->op == OP_CONV2D_DX) {
        struct convdims d = cdims(o, &g->t[n->in[1]], &g->t[n->in[0]], 1, 0);
        *local = conv_local(&d, n->op);
    }
    if (tyc__tf_is_op(n->op))
        tyc__tf_scratch(g, n, shared, local);
    if (*local < 2 * TILE)
        *local = 2 * TILE;
}

void tyc__cpu_scratch_split(const struct tyc__graph *g, size_t *shared, size_t *local)
{
    int i;
    *shared = 0;
    *local = 2 * TILE;
    for (i = 0; i < g->nn; i++) {
        size_t s, l;
        node_need(g, &g->n[i], &s, &l);
        if (s > *shared)
            *shared = s;
        if (l > *local)
            *local = l;
    }
}

int tyc__cpu_scratch_need(const struct tyc__graph *g, size_t *floats)
{
    size_t s, l;
    tyc__cpu_scratch_split(g, &s, &l);
    *floats = s + l;
    return 0;
}

void tyc__cpu_run_node(const struct tyc__graph *g, const struct tyc__node *nd, float *scratch)
{
    const struct tyc__tensor *o = &g->t[nd->out[0]];
    const struct tyc__cpu_ctx *c = tyc__pool_bound();
    struct tyc__cpu_ctx serial;
    if (!c) { /* no pool bound: one thread, the caller's scratch */
        size_t sh, lo;
        node_need(g, nd, &sh, &lo);
        memset(&serial, 0, sizeof(serial));
        serial.threads = 1;
        serial.shared = scratch;
        serial.local = scratch + sh;
        serial.local_n = lo;
        c = &serial;
    }
    if (tyc__tf_is_op(nd->op)) {
        tyc__tf_cpu_run(g, nd, c);
        return;
    }
    switch (nd->op) {
    case OP_MATMUL:
    case OP_MATMUL_EPI: {
        const struct tyc__tensor *a = &g->t[nd->in[0]], *b = &g->t[nd->in[1]];
        int M = o->dim[0], N = o->dim[1], K = nd->ta ? a->dim[0] : a->dim[1];
        struct epi_ctx e = {g, nd, o->data, N};
        int epi = nd->op == OP_MATMUL_EPI &&
                  (nd->epi_bias >= 0 || nd->epi_act || nd->epi_mask >= 0 || nd->epi_pre);
        tyc__gemm_par(c, M, N, K, a->data, nd->ta, b->data, nd->tb, o->data, epi ? epi_tile : NULL,
                      &e);
        if (nd->op == OP_MATMUL_EPI && nd->epi_colsum >= 0)
            reduce_cols(c, o->data, (size_t)M, N, g->t[nd->out[nd->epi_colsum]].data);
        break;
    }
    case OP_REDUCE_COLS: {
        const struct tyc__tensor *x = &g->t[nd->in[0]];
        int C = (int)o->numel;
        reduce_cols(c, x->data, x->numel / (size_t)C, C, o->data);
        break;
    }
    case OP_XENT:
    case OP_XENT_GRAD:
    case OP_XENT_FUSED: {
        const struct tyc__tensor *x = &g->t[nd->in[0]], *y = &g->t[nd->in[1]];
        int N = x->dim[0], C = x->dim[1], r;
        float total = 0.0f, dloss;
        float *loss = nd->op == OP_XENT_GRAD ? NULL : o->data;
        float *grad = nd->op == OP_XENT        ? NULL
                      : nd->op == OP_XENT_GRAD ? o->data
                                               : g->t[nd->out[1]].data;
        float *cs = nd->op == OP_XENT_FUSED && nd->epi_colsum >= 0
                        ? g->t[nd->out[nd->epi_colsum]].data
                        : NULL;
        struct xent_job j;
        dloss = nd->has_f ? nd->f : nd->op == OP_XENT_GRAD ? g->t[nd->in[2]].data[0] : 1.0f;
        j.x = x->data;
        j.y = y->data;
        j.C = C;
        j.loss = loss ? c->shared : NULL; /* per-row losses, summed below in row order */
        j.grad = grad;
        j.gscale = dloss / (float)N;
        tyc__pool_run((size_t)N * C >= 4096 ? c->pool : NULL, N, xent_task, &j);
        if (loss) {
            for (r = 0; r < N; r++)
                total += c->shared[r];
            loss[0] = total / (float)N;
        }
        if (cs)
            reduce_cols(c, grad, (size_t)N, C, cs);
        break;
    }
    case OP_FUSED_EW:
        run_fused(g, nd, c);
        break;
    case OP_CONV2D:
    case OP_CONV2D_DX:
    case OP_CONV2D_DW:
        conv_run(g, nd, c);
        break;
    case OP_BIAS_CHAN:
    case OP_MAXPOOL:
    case OP_MAXPOOL_GRAD:
        run_planes(g, nd, c, o->dim[0] * o->dim[1]);
        break;
    case OP_MAXPOOL_GRAD_IDX:
        run_planes(g, nd, c, g->t[nd->in[0]].dim[0] * g->t[nd->in[0]].dim[1]);
        break;
    case OP_REDUCE_CHAN:
        run_planes(g, nd, c, g->t[nd->in[0]].dim[1]);
        break;
    case OP_RESHAPE:
    case OP_COPY:
    case OP_ASSIGN:
        if (o->data != g->t[nd->in[0]].data)
            memmove(o->data, g->t[nd->in[0]].data, o->numel * sizeof(float));
        break;
    default:
        run_ew(g, nd, c);
        break;
    }
}
