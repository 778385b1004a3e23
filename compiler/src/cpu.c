/* cpu.c - the CPU back end's kernels: GEMM (register-blocked, with a per-row-block epilogue
 * hook), elementwise ops, fused elementwise programs (tiles of TILE elements kept in L1),
 * column sums and softmax-cross-entropy. Eager and compiled modes call the same scalar
 * arithmetic in the same order, so they agree bitwise (libtyc is built with -ffp-contract=off:
 * no FMA contraction differs between a fused and an unfused loop). Single-threaded. */
#include "tyc_int.h"
#include <math.h>
#include <string.h>

#define TILE 256

typedef float v4f __attribute__((vector_size(16)));

static float gelu(float x)
{
    const float k = 0.7978845608f; /* sqrt(2/pi) */
    float u = k * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

static float gelu_grad(float dy, float x)
{
    const float k = 0.7978845608f;
    float u = k * (x + 0.044715f * x * x * x);
    float th = tanhf(u);
    float du = k * (1.0f + 3.0f * 0.044715f * x * x);
    return dy * (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du);
}

/* o[i] = op(a[i], b[i]) over n elements; b is NULL, full (bstride 1) or a scalar (bstride 0). */
static void ew_vec(int op, float f, float *o, const float *a, const float *b, int bs, size_t n)
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
        LOOP(tanhf(x));
        break;
    case OP_SIGMOID:
        LOOP(1.0f / (1.0f + expf(-x)));
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

static void run_ew(const struct tyc__graph *g, const struct tyc__node *nd, float *scratch)
{
    const struct tyc__tensor *o = &g->t[nd->out[0]], *a = &g->t[nd->in[0]];
    const struct tyc__tensor *b = nd->nin > 1 ? &g->t[nd->in[1]] : NULL;
    int lastdim = o->dim[o->nd - 1], bs = 1;
    size_t i0, n;
    if (!b || b->numel == o->numel || b->numel == 1) {
        ew_vec(nd->op, nd->f, o->data, a->data, b ? b->data : NULL, !b || b->numel != 1, o->numel);
        return;
    }
    for (i0 = 0; i0 < o->numel; i0 += TILE) {
        const float *bp;
        n = o->numel - i0 < TILE ? o->numel - i0 : TILE;
        bp = operand(b, o->numel, lastdim, i0, n, scratch, &bs);
        ew_vec(nd->op, nd->f, o->data + i0, a->data + i0, bp, bs, n);
    }
}

static void run_fused(const struct tyc__graph *g, const struct tyc__node *nd, float *scratch)
{
    const struct tyc__tensor *o0 = &g->t[nd->out[0]];
    size_t full = o0->numel, i0, n;
    int lastdim = o0->dim[o0->nd - 1], k, nreg = nd->nin + nd->nuop;
    const float *reg[TYC_MAXIN + TYC_MAXUOP];
    int rbs[TYC_MAXIN + TYC_MAXUOP];
    for (i0 = 0; i0 < full; i0 += TILE) {
        n = full - i0 < TILE ? full - i0 : TILE;
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

/* ---- GEMM ------------------------------------------------------------------------------------ */
typedef void (*epi_fn)(void *ctx, int r0, int r1);

/* C[M,N] = A(M,K) * B[K,N]; A(i,k) = A[i*sai + k*sak]; every C element is the sum over k in
 * increasing order starting from 0, whatever the blocking. */
static void gemm_nn(int M, int N, int K, const float *A, size_t sai, size_t sak, const float *B,
                    float *C, epi_fn epi, void *ctx)
{
    int i0, j0, k, r;
    for (i0 = 0; i0 < M; i0 += 4) {
        int mi = M - i0 < 4 ? M - i0 : 4;
        for (j0 = 0; j0 + 8 <= N && mi == 4; j0 += 8) {
            v4f acc[4][2];
            memset(acc, 0, sizeof(acc));
            for (k = 0; k < K; k++) {
                v4f b0, b1;
                memcpy(&b0, B + (size_t)k * N + j0, sizeof(b0));
                memcpy(&b1, B + (size_t)k * N + j0 + 4, sizeof(b1));
                for (r = 0; r < 4; r++) {
                    float av = A[(size_t)(i0 + r) * sai + (size_t)k * sak];
                    v4f a = {av, av, av, av};
                    acc[r][0] += a * b0;
                    acc[r][1] += a * b1;
                }
            }
            for (r = 0; r < 4; r++) {
                memcpy(C + (size_t)(i0 + r) * N + j0, &acc[r][0], sizeof(v4f));
                memcpy(C + (size_t)(i0 + r) * N + j0 + 4, &acc[r][1], sizeof(v4f));
            }
        }
        for (r = 0; r < mi; r++) {
            int j;
            for (j = mi == 4 ? j0 : 0; j < N; j++) {
                float c = 0.0f;
                for (k = 0; k < K; k++)
                    c += A[(size_t)(i0 + r) * sai + (size_t)k * sak] * B[(size_t)k * N + j];
                C[(size_t)(i0 + r) * N + j] = c;
            }
        }
        if (epi)
            epi(ctx, i0, i0 + mi);
    }
}

static void gemm_any(int M, int N, int K, const float *A, int ta, const float *B, int tb, float *C,
                     float *scratch, epi_fn epi, void *ctx)
{
    size_t sai = ta ? 1 : (size_t)K, sak = ta ? (size_t)M : 1;
    if (tb) { /* B is stored [N,K]: transpose into scratch */
        int k, j;
        for (k = 0; k < K; k++)
            for (j = 0; j < N; j++)
                scratch[(size_t)k * N + j] = B[(size_t)j * K + k];
        B = scratch;
    }
    gemm_nn(M, N, K, A, sai, sak, B, C, epi, ctx);
}

void tyc__gemm(int M, int N, int K, const float *A, int ta, const float *B, int tb, float *C,
               float *scratch)
{
    gemm_any(M, N, K, A, ta, B, tb, C, scratch, NULL, NULL);
}

struct epi_ctx {
    const struct tyc__graph *g;
    const struct tyc__node *nd;
    float *c, *cs;
    int N;
};

static void epi_rows(void *p, int r0, int r1)
{
    struct epi_ctx *e = p;
    const struct tyc__node *nd = e->nd;
    const float *bias = nd->epi_bias >= 0 ? e->g->t[nd->in[nd->epi_bias]].data : NULL;
    const float *mask = nd->epi_mask >= 0 ? e->g->t[nd->in[nd->epi_mask]].data : NULL;
    int r;
    for (r = r0; r < r1; r++) {
        float *row = e->c + (size_t)r * e->N;
        if (bias)
            ew_vec(OP_ADD, 0, row, row, bias, 1, (size_t)e->N);
        if (nd->epi_pre)
            memcpy(e->g->t[nd->out[nd->epi_pre]].data + (size_t)r * e->N, row,
                   (size_t)e->N * sizeof(float));
        if (nd->epi_act)
            ew_vec(nd->epi_act, 0, row, row, NULL, 1, (size_t)e->N);
        if (mask)
            ew_vec(nd->epi_gop, 0, row, row, mask + (size_t)r * e->N, 1, (size_t)e->N);
        if (e->cs)
            ew_vec(OP_ADD, 0, e->cs, e->cs, row, 1, (size_t)e->N);
    }
}

static void reduce_cols(const float *x, size_t rows, int C, float *out)
{
    size_t r;
    memset(out, 0, (size_t)C * sizeof(float));
    for (r = 0; r < rows; r++)
        ew_vec(OP_ADD, 0, out, out, x + r * (size_t)C, 1, (size_t)C);
}

/* ---- softmax cross-entropy ------------------------------------------------------------------- */
void tyc__xent_row(const float *x, int C, int label, float *loss_out, float *grad, float gscale)
{
    float mx = x[0], sum = 0.0f;
    int j;
    for (j = 1; j < C; j++)
        mx = x[j] > mx ? x[j] : mx;
    for (j = 0; j < C; j++)
        sum += expf(x[j] - mx);
    if (loss_out)
        *loss_out = logf(sum) - (x[label] - mx);
    if (grad)
        for (j = 0; j < C; j++)
            grad[j] = (expf(x[j] - mx) / sum - (j == label ? 1.0f : 0.0f)) * gscale;
}

static int label_of(float v, int C)
{
    int l = (int)v;
    return l < 0 || l >= C ? 0 : l;
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

static void im2col(const struct convdims *d, const float *x, float *col)
{
    int c, kh, kw, oh, ow;
    size_t r = 0;
    for (c = 0; c < d->C; c++)
        for (kh = 0; kh < d->K; kh++)
            for (kw = 0; kw < d->K; kw++, r++) {
                float *row = col + r * d->ohow;
                for (oh = 0; oh < d->OH; oh++) {
                    int ih = oh * d->st - d->pad + kh;
                    for (ow = 0; ow < d->OW; ow++) {
                        int iw = ow * d->st - d->pad + kw;
                        row[(size_t)oh * d->OW + ow] = ih < 0 || ih >= d->H || iw < 0 || iw >= d->W
                                                           ? 0.0f
                                                           : x[((size_t)c * d->H + ih) * d->W + iw];
                    }
                }
            }
}

static void col2im(const struct convdims *d, const float *col, float *x)
{
    int c, kh, kw, oh, ow;
    size_t r = 0;
    memset(x, 0, (size_t)d->C * d->H * d->W * sizeof(float));
    for (c = 0; c < d->C; c++)
        for (kh = 0; kh < d->K; kh++)
            for (kw = 0; kw < d->K; kw++, r++) {
                const float *row = col + r * d->ohow;
                for (oh = 0; oh < d->OH; oh++) {
                    int ih = oh * d->st - d->pad + kh;
                    if (ih < 0 || ih >= d->H)
                        continue;
                    for (ow = 0; ow < d->OW; ow++) {
                        int iw = ow * d->st - d->pad + kw;
                        if (iw >= 0 && iw < d->W)
                            x[((size_t)c * d->H + ih) * d->W + iw] += row[(size_t)oh * d->OW + ow];
                    }
                }
            }
}

static size_t conv_scratch(const struct convdims *d)
{
    /* col + (dcol or a dW partial) + the GEMM's transposed B */
    size_t a = d->ckk * d->ohow, b = (size_t)d->F * d->ckk;
    return 2 * a + (a > b ? a : b) + b;
}

static void conv2d(const struct tyc__tensor *x, const struct tyc__tensor *w, float *y, int st,
                   int pad, const struct tyc__tensor *o, const float *bias, int act, float *scratch)
{
    struct convdims d = cdims(x, w, o, st, pad);
    float *col = scratch, *gs = scratch + d.ckk * d.ohow;
    int n, f;
    for (n = 0; n < d.N; n++) {
        float *yn = y + (size_t)n * d.F * d.ohow;
        im2col(&d, x->data + (size_t)n * d.C * d.H * d.W, col);
        gemm_any(d.F, (int)d.ohow, (int)d.ckk, w->data, 0, col, 0, yn, gs, NULL, NULL);
        if (bias) /* epilogue: the same ops as bias_channel and the activation */
            for (f = 0; f < d.F; f++) {
                float *row = yn + (size_t)f * d.ohow;
                ew_vec(OP_ADD, 0, row, row, bias + f, 0, d.ohow);
                if (act)
                    ew_vec(act, 0, row, row, NULL, 1, d.ohow);
            }
    }
}

static void conv2d_dx(const struct tyc__tensor *dy, const struct tyc__tensor *w, float *dx, int st,
                      int pad, const struct tyc__tensor *xs, float *scratch)
{
    struct convdims d = cdims(xs, w, dy, st, pad);
    float *dcol = scratch, *gs = scratch + d.ckk * d.ohow;
    int n;
    for (n = 0; n < d.N; n++) {
        /* dcol (CKK x OHOW) = W^T (CKK x F) * dY[n] (F x OHOW) */
        gemm_any((int)d.ckk, (int)d.ohow, d.F, w->data, 1, dy->data + (size_t)n * d.F * d.ohow, 0,
                 dcol, gs, NULL, NULL);
        col2im(&d, dcol, dx + (size_t)n * d.C * d.H * d.W);
    }
}

static void conv2d_dw(const struct tyc__tensor *x, const struct tyc__tensor *dy, float *dw, int st,
                      int pad, const struct tyc__tensor *ws, float *scratch)
{
    struct convdims d = cdims(x, ws, dy, st, pad);
    float *col = scratch, *part = scratch + d.ckk * d.ohow;
    float *gs =
        part + (d.ckk * d.ohow > (size_t)d.F * d.ckk ? d.ckk * d.ohow : (size_t)d.F * d.ckk);
    int n;
    for (n = 0; n < d.N; n++) {
        /* dW (F x CKK) += dY[n] (F x OHOW) * col^T (OHOW x CKK) */
        im2col(&d, x->data + (size_t)n * d.C * d.H * d.W, col);
        gemm_any(d.F, (int)d.ckk, (int)d.ohow, dy->data + (size_t)n * d.F * d.ohow, 0, col, 1,
                 n ? part : dw, gs, NULL, NULL);
        if (n)
            ew_vec(OP_ADD, 0, dw, dw, part, 1, (size_t)d.F * d.ckk);
    }
}

/* max pooling with window = stride = k; the gradient goes to the first maximum */
static void maxpool(const struct tyc__tensor *x, float *y, float *dx, const float *dy, int k,
                    float *index)
{
    int N = x->dim[0], C = x->dim[1], H = x->dim[2], W = x->dim[3], OH = H / k, OW = W / k;
    int nc, oh, ow, i, j;
    if (dx)
        memset(dx, 0, x->numel * sizeof(float));
    for (nc = 0; nc < N * C; nc++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                const float *p = x->data + (size_t)nc * H * W;
                int best = (oh * k) * W + ow * k;
                for (i = 0; i < k; i++)
                    for (j = 0; j < k; j++) {
                        int idx = (oh * k + i) * W + ow * k + j;
                        if (p[idx] > p[best])
                            best = idx;
                    }
                if (index) /* position inside the window */
                    index[((size_t)nc * OH + oh) * OW + ow] =
                        (float)((best / W - oh * k) * k + (best % W - ow * k));
                if (y)
                    y[((size_t)nc * OH + oh) * OW + ow] = p[best];
                else
                    dx[(size_t)nc * H * W + best] += dy[((size_t)nc * OH + oh) * OW + ow];
            }
}

/* ---- dispatch -------------------------------------------------------------------------------- */
int tyc__cpu_scratch_need(const struct tyc__graph *g, size_t *floats)
{
    size_t need = 2 * TILE;
    int i;
    for (i = 0; i < g->nn; i++) {
        const struct tyc__node *n = &g->n[i];
        const struct tyc__tensor *o = &g->t[n->out[0]];
        size_t s = 0;
        if ((n->op == OP_MATMUL || n->op == OP_MATMUL_EPI) && n->tb)
            s = g->t[n->in[1]].numel;
        if (n->op == OP_FUSED_EW)
            s = (size_t)(n->nin + n->nuop) * TILE;
        if (n->op != OP_FUSED_EW && tyc__op_is_ew(n->op))
            s = TILE;
        if (n->op == OP_CONV2D || n->op == OP_CONV2D_DW) {
            struct convdims d = cdims(&g->t[n->in[0]], n->op == OP_CONV2D ? &g->t[n->in[1]] : o,
                                      n->op == OP_CONV2D ? o : &g->t[n->in[1]], 1, 0);
            s = conv_scratch(&d);
        }
        if (n->op == OP_CONV2D_DX) {
            struct convdims d = cdims(o, &g->t[n->in[1]], &g->t[n->in[0]], 1, 0);
            s = conv_scratch(&d);
        }
        if (s > need)
            need = s;
    }
    *floats = need;
    return 0;
}

void tyc__cpu_run_node(const struct tyc__graph *g, const struct tyc__node *nd, float *scratch)
{
    const struct tyc__tensor *o = &g->t[nd->out[0]];
    if (tyc__tf_is_op(nd->op)) {
        tyc__tf_cpu_run(g, nd);
        return;
    }
    switch (nd->op) {
    case OP_MATMUL:
    case OP_MATMUL_EPI: {
        const struct tyc__tensor *a = &g->t[nd->in[0]], *b = &g->t[nd->in[1]];
        int M = o->dim[0], N = o->dim[1], K = nd->ta ? a->dim[0] : a->dim[1];
        struct epi_ctx e = {g, nd, o->data, NULL, N};
        if (nd->op == OP_MATMUL) {
            gemm_any(M, N, K, a->data, nd->ta, b->data, nd->tb, o->data, scratch, NULL, NULL);
            break;
        }
        if (nd->epi_colsum >= 0) {
            e.cs = g->t[nd->out[nd->epi_colsum]].data;
            memset(e.cs, 0, (size_t)N * sizeof(float));
        }
        gemm_any(M, N, K, a->data, nd->ta, b->data, nd->tb, o->data, scratch, epi_rows, &e);
        break;
    }
    case OP_REDUCE_COLS: {
        const struct tyc__tensor *x = &g->t[nd->in[0]];
        int C = (int)o->numel;
        reduce_cols(x->data, x->numel / (size_t)C, C, o->data);
        break;
    }
    case OP_XENT:
    case OP_XENT_GRAD:
    case OP_XENT_FUSED: {
        const struct tyc__tensor *x = &g->t[nd->in[0]], *y = &g->t[nd->in[1]];
        int N = x->dim[0], C = x->dim[1], r;
        float total = 0.0f, dloss, gscale;
        float *loss = nd->op == OP_XENT_GRAD ? NULL : o->data;
        float *grad = nd->op == OP_XENT        ? NULL
                      : nd->op == OP_XENT_GRAD ? o->data
                                               : g->t[nd->out[1]].data;
        float *cs = nd->op == OP_XENT_FUSED && nd->epi_colsum >= 0
                        ? g->t[nd->out[nd->epi_colsum]].data
                        : NULL;
        dloss = nd->has_f ? nd->f : nd->op == OP_XENT_GRAD ? g->t[nd->in[2]].data[0] : 1.0f;
        gscale = dloss / (float)N;
        if (cs)
            memset(cs, 0, (size_t)C * sizeof(float));
        for (r = 0; r < N; r++) {
            float l = 0.0f;
            float *gr = grad ? grad + (size_t)r * C : NULL;
            tyc__xent_row(x->data + (size_t)r * C, C, label_of(y->data[r], C), loss ? &l : NULL, gr,
                          gscale);
            total += l;
            if (cs)
                ew_vec(OP_ADD, 0, cs, cs, gr, 1, (size_t)C);
        }
        if (loss)
            loss[0] = total / (float)N;
        break;
    }
    case OP_FUSED_EW:
        run_fused(g, nd, scratch);
        break;
    case OP_CONV2D:
        conv2d(&g->t[nd->in[0]], &g->t[nd->in[1]], o->data, nd->stride, nd->pad, o,
               nd->epi_bias >= 0 ? g->t[nd->in[nd->epi_bias]].data : NULL, nd->epi_act, scratch);
        break;
    case OP_CONV2D_DX:
        conv2d_dx(&g->t[nd->in[0]], &g->t[nd->in[1]], o->data, nd->stride, nd->pad, o, scratch);
        break;
    case OP_CONV2D_DW:
        conv2d_dw(&g->t[nd->in[0]], &g->t[nd->in[1]], o->data, nd->stride, nd->pad, o, scratch);
        break;
    case OP_BIAS_CHAN: {
        const struct tyc__tensor *x = &g->t[nd->in[0]];
        const float *b = g->t[nd->in[1]].data;
        size_t hw = (size_t)x->dim[2] * x->dim[3], i;
        int C = x->dim[1];
        for (i = 0; i < x->numel; i++)
            o->data[i] = x->data[i] + b[(i / hw) % (size_t)C];
        break;
    }
    case OP_REDUCE_CHAN: {
        const struct tyc__tensor *x = &g->t[nd->in[0]];
        size_t hw = (size_t)x->dim[2] * x->dim[3], i;
        int C = x->dim[1];
        memset(o->data, 0, (size_t)C * sizeof(float));
        for (i = 0; i < x->numel; i++)
            o->data[(i / hw) % (size_t)C] += x->data[i];
        break;
    }
    case OP_MAXPOOL:
        maxpool(&g->t[nd->in[0]], o->data, NULL, NULL, nd->stride,
                nd->nout > 1 ? g->t[nd->out[1]].data : NULL);
        break;
    case OP_MAXPOOL_GRAD_IDX: {
        const struct tyc__tensor *dy = &g->t[nd->in[0]];
        const float *ix = g->t[nd->in[1]].data;
        int k = nd->stride, H = o->dim[2], W = o->dim[3], OH = dy->dim[2], OW = dy->dim[3], oh, ow,
            nc;
        memset(o->data, 0, o->numel * sizeof(float));
        for (nc = 0; nc < dy->dim[0] * dy->dim[1]; nc++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) {
                    size_t q = ((size_t)nc * OH + oh) * OW + ow;
                    int pos = (int)ix[q];
                    o->data[(size_t)nc * H * W + (size_t)(oh * k + pos / k) * W + ow * k +
                            pos % k] += dy->data[q];
                }
        break;
    }
    case OP_MAXPOOL_GRAD:
        maxpool(&g->t[nd->in[1]], NULL, o->data, g->t[nd->in[0]].data, nd->stride, NULL);
        break;
    case OP_RESHAPE:
    case OP_COPY:
    case OP_ASSIGN:
        if (o->data != g->t[nd->in[0]].data)
            memmove(o->data, g->t[nd->in[0]].data, o->numel * sizeof(float));
        break;
    default:
        run_ew(g, nd, scratch);
        break;
    }
}
