/* ops_transformer.c - the transformer ops of the graph IR: embedding lookup, layer norm,
 * multi-head self-attention (scale, causal mask, softmax and the value product in one kernel),
 * seeded dropout and the sequence mean; their graph builders, gradient rules and CPU kernels.
 * Layer norm forward and backward (dx, dgamma, dbeta) and the attention core are single fused
 * ops from the start (there is no unfused form to pass over). Every reduction runs in a fixed
 * order (rows in order, keys in order), so eager and compiled agree bitwise. */
#include "tyc_int.h"
#include "vmath.h"
#include <math.h>
#include <string.h>

int tyc__tf_is_op(int op)
{
    return op >= OP_EMBED && op <= OP_AMP_UPDATE;
}

/* ---- builders -------------------------------------------------------------------------------- */
int tyc__embed(struct tyc__graph *g, int ids, int table)
{
    int in[2] = {ids, table}, dim[2];
    if (ids < 0 || table < 0)
        return -1;
    dim[0] = (int)g->t[ids].numel;
    dim[1] = g->t[table].dim[1];
    return tyc__op1(g, OP_EMBED, 2, in, 2, dim);
}

int tyc__layernorm(struct tyc__graph *g, int x, int gamma, int beta, float eps)
{
    int in[3] = {x, gamma, beta}, y;
    if (x < 0 || gamma < 0 || beta < 0)
        return -1;
    y = tyc__op1(g, OP_LAYERNORM, 3, in, g->t[x].nd, g->t[x].dim);
    if (y >= 0)
        g->n[g->nn - 1].f = eps;
    return y;
}

int tyc__attention(struct tyc__graph *g, int qkv, int heads, int seq, int causal)
{
    int dim[2], pd[1], out[2], n;
    if (qkv < 0)
        return -1;
    dim[0] = g->t[qkv].dim[0];
    dim[1] = g->t[qkv].dim[1] / 3;
    pd[0] = dim[0] * heads * seq; /* probabilities [B, H, T, T], saved for the backward pass */
    out[0] = tyc__tensor_new(g, TK_TEMP, 2, dim, "attention");
    out[1] = tyc__tensor_new(g, TK_TEMP, 1, pd, "attention_probs");
    if (out[0] < 0 || out[1] < 0 || (n = tyc__node_add(g, OP_ATTN, 1, &qkv, 2, out)) < 0)
        return -1;
    g->n[n].aux[0] = heads;
    g->n[n].aux[1] = seq;
    g->n[n].aux[2] = causal;
    g->n[n].f = 1.0f / sqrtf((float)(dim[1] / heads));
    return out[0];
}

int tyc__dropout(struct tyc__graph *g, int x, int step, float p, uint32_t seed)
{
    int in[2] = {x, step}, y;
    if (x < 0 || step < 0)
        return -1;
    y = tyc__op1(g, OP_DROPOUT, 2, in, g->t[x].nd, g->t[x].dim);
    if (y >= 0) {
        g->n[g->nn - 1].f = p;
        g->n[g->nn - 1].aux[0] = (int)seed;
    }
    return y;
}

int tyc__seqmean(struct tyc__graph *g, int x, int seq)
{
    int dim[2], y;
    if (x < 0)
        return -1;
    dim[0] = g->t[x].dim[0] / seq;
    dim[1] = g->t[x].dim[1];
    y = tyc__op1(g, OP_SEQMEAN, 1, &x, 2, dim);
    if (y >= 0)
        g->n[g->nn - 1].aux[1] = seq;
    return y;
}

int tyc__dropout_keep(uint32_t seed, uint32_t step, uint32_t i, float p)
{
    uint32_t h = seed ^ (step * 0x9e3779b9u) ^ (i * 0x85ebca6bu);
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return (float)(h >> 8) * (1.0f / 16777216.0f) >= p;
}

/* ---- gradient rules -------------------------------------------------------------------------- */
int tyc__tf_backward(struct tyc__graph *g, const struct tyc__node *n, int dy, int *din)
{
    int j, nd;
    for (j = 0; j < TYC_MAXIN; j++)
        din[j] = -1;
    switch (n->op) {
    case OP_EMBED: { /* gradient wrt the table only: ids are data */
        int in[2] = {dy, n->in[0]};
        din[1] = tyc__op1(g, OP_EMBED_GRAD, 2, in, 2, g->t[n->in[1]].dim);
        return din[1] < 0 ? -1 : 0;
    }
    case OP_LAYERNORM: {
        int in[3] = {dy, n->in[0], n->in[1]}, out[3];
        out[0] = tyc__tensor_new(g, TK_TEMP, g->t[n->in[0]].nd, g->t[n->in[0]].dim, "ln_dx");
        out[1] = tyc__tensor_new(g, TK_TEMP, 1, g->t[n->in[1]].dim, "ln_dgamma");
        out[2] = tyc__tensor_new(g, TK_TEMP, 1, g->t[n->in[2]].dim, "ln_dbeta");
        if (out[0] < 0 || out[1] < 0 || out[2] < 0 ||
            (nd = tyc__node_add(g, OP_LAYERNORM_GRAD, 3, in, 3, out)) < 0)
            return -1;
        g->n[nd].f = n->f;
        din[0] = out[0];
        din[1] = out[1];
        din[2] = out[2];
        return 0;
    }
    case OP_ATTN: {
        int in[3] = {dy, n->in[0], n->out[1]};
        din[0] = tyc__op1(g, OP_ATTN_GRAD, 3, in, 2, g->t[n->in[0]].dim);
        if (din[0] < 0)
            return -1;
        memcpy(g->n[g->nn - 1].aux, n->aux, sizeof(n->aux));
        g->n[g->nn - 1].f = n->f;
        return 0;
    }
    case OP_DROPOUT: {
        int in[2] = {dy, n->in[1]};
        din[0] = tyc__op1(g, OP_DROPOUT_GRAD, 2, in, g->t[dy].nd, g->t[dy].dim);
        if (din[0] < 0)
            return -1;
        g->n[g->nn - 1].f = n->f;
        g->n[g->nn - 1].aux[0] = n->aux[0];
        return 0;
    }
    case OP_SEQMEAN:
        din[0] = tyc__op1(g, OP_SEQMEAN_GRAD, 1, &dy, 2, g->t[n->in[0]].dim);
        if (din[0] < 0)
            return -1;
        g->n[g->nn - 1].aux[1] = n->aux[1];
        return 0;
    }
    return -1;
}

/* ---- CPU kernels ------------------------------------------------------------------------------
 * Each kernel splits its work over the bound pool (c->pool; serial when NULL) into tasks that
 * write disjoint outputs: rows of layer norm, (batch, head) pairs of attention, row chunks of
 * the embedding and dropout. Sums over a row use LANES running sums (element j goes to lane
 * j mod LANES) and a fixed tree, so they vectorize and are the same for every thread count;
 * the layer-norm parameter gradients sum fixed blocks of LN_ROWS rows, then the blocks in order. */
#define LANES   16
#define LN_ROWS 16
#define ROWS    64 /* rows per task of the embedding; elements per task of dropout: ROWS * 256 */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TF_CLONES
#endif

static inline float lane_tree(float *l)
{
    int w, q;
    for (w = LANES / 2; w > 0; w /= 2)
        for (q = 0; q < w; q++)
            l[q] += l[q + w];
    return l[0];
}

static inline float lane_sum(const float *x, int n)
{
    float l[LANES] = {0};
    int j = 0, q;
    for (; j + LANES <= n; j += LANES)
        for (q = 0; q < LANES; q++)
            l[q] += x[j + q];
    for (q = 0; j < n; j++, q++)
        l[q] += x[j];
    return lane_tree(l);
}

/* OUT: mean and 1 / sqrt(var + eps) of a row */
static inline void ln_stats(const float *x, int D, float eps, float *mean, float *rstd)
{
    float l[LANES] = {0}, m, d;
    int j = 0, q;
    m = lane_sum(x, D) / (float)D;
    for (; j + LANES <= D; j += LANES)
        for (q = 0; q < LANES; q++) {
            d = x[j + q] - m;
            l[q] += d * d;
        }
    for (q = 0; j < D; j++, q++) {
        d = x[j] - m;
        l[q] += d * d;
    }
    *mean = m;
    *rstd = 1.0f / sqrtf(lane_tree(l) / (float)D + eps);
}

struct tf_job {
    const struct tyc__graph *g;
    const struct tyc__node *nd;
    const struct tyc__cpu_ctx *c;
    int rows, D;
};

static float *tf_local(const struct tf_job *j, int tid)
{
    return j->c->local + (size_t)tid * j->c->local_n;
}

TF_CLONES static void layernorm_task(void *p, int task, int tid)
{
    struct tf_job *jb = p;
    const struct tyc__node *nd = jb->nd;
    const float *x = jb->g->t[nd->in[0]].data, *gm = jb->g->t[nd->in[1]].data;
    const float *bt = jb->g->t[nd->in[2]].data;
    float *y = jb->g->t[nd->out[0]].data, mean, rstd;
    int D = jb->D, r, r1 = (task + 1) * LN_ROWS < jb->rows ? (task + 1) * LN_ROWS : jb->rows, j;
    (void)tid;
    for (r = task * LN_ROWS; r < r1; r++) {
        const float *xr = x + (size_t)r * D;
        float *yr = y + (size_t)r * D;
        ln_stats(xr, D, nd->f, &mean, &rstd);
        for (j = 0; j < D; j++)
            yr[j] = (xr[j] - mean) * rstd * gm[j] + bt[j];
    }
}

/* dx per row; dgamma and dbeta partials of rows [task * LN_ROWS, +LN_ROWS) in c->shared */
TF_CLONES static void layernorm_grad_task(void *p, int task, int tid)
{
    struct tf_job *jb = p;
    const struct tyc__graph *g = jb->g;
    const struct tyc__node *nd = jb->nd;
    const float *dy = g->t[nd->in[0]].data, *x = g->t[nd->in[1]].data, *gm = g->t[nd->in[2]].data;
    float *dx = g->t[nd->out[0]].data, *xh = tf_local(jb, tid), *dxh = xh + jb->D;
    int D = jb->D, r, r1 = (task + 1) * LN_ROWS < jb->rows ? (task + 1) * LN_ROWS : jb->rows, j;
    float *dg = jb->c->shared + (size_t)task * 2 * D, *db = dg + D;
    memset(dg, 0, 2 * (size_t)D * sizeof(float));
    for (r = task * LN_ROWS; r < r1; r++) {
        const float *xr = x + (size_t)r * D, *dyr = dy + (size_t)r * D;
        float *dxr = dx + (size_t)r * D, mean, rstd, s1, s2;
        ln_stats(xr, D, nd->f, &mean, &rstd);
        for (j = 0; j < D; j++) {
            xh[j] = (xr[j] - mean) * rstd;
            dxh[j] = dyr[j] * gm[j];
            dg[j] += dyr[j] * xh[j];
            db[j] += dyr[j];
        }
        s1 = lane_sum(dxh, D) / (float)D;
        for (j = 0; j < D; j++)
            dxh[j] = dxh[j] * xh[j];
        s2 = lane_sum(dxh, D) / (float)D;
        for (j = 0; j < D; j++)
            dxr[j] = rstd * (dyr[j] * gm[j] - s1 - xh[j] * s2);
    }
}

/* dgamma, dbeta: the block partials summed in block order, split over column chunks */
TF_CLONES static void layernorm_gsum_task(void *p, int task, int tid)
{
    struct tf_job *jb = p;
    const struct tyc__node *nd = jb->nd;
    float *dg = jb->g->t[nd->out[1]].data, *db = jb->g->t[nd->out[2]].data;
    int D = jb->D, nb = (jb->rows + LN_ROWS - 1) / LN_ROWS, c0 = task * 256, b, j;
    int c1 = c0 + 256 < D ? c0 + 256 : D;
    (void)tid;
    for (j = c0; j < c1; j++)
        dg[j] = db[j] = 0.0f;
    for (b = 0; b < nb; b++) {
        const float *pg = jb->c->shared + (size_t)b * 2 * D, *pb = pg + D;
        for (j = c0; j < c1; j++) {
            dg[j] += pg[j];
            db[j] += pb[j];
        }
    }
}

/* qkv [B*T, 3D]: q at column h*hd, k at D + h*hd, v at 2D + h*hd of each row */
struct attn_dims {
    int H, T, causal, D3, D, hd, B;
};

static struct attn_dims adims(const struct tyc__graph *g, const struct tyc__node *nd, int qkv)
{
    struct attn_dims a;
    a.H = nd->aux[0], a.T = nd->aux[1], a.causal = nd->aux[2];
    a.D3 = g->t[qkv].dim[1], a.D = a.D3 / 3, a.hd = a.D / a.H, a.B = g->t[qkv].dim[0] / a.T;
    return a;
}

/* OUT: dst[j * ld + s] = src[s * D3 + j] for s < T, 0 for T <= s < ld: a head's keys (or
 * values) transposed, hd x ld, ld = T rounded up to ACC_W (whole register chunks) */
#define ACC_W 32
static void head_t(const float *src, int T, int D3, int hd, float *dst, size_t ld)
{
    int s, j;
    for (j = 0; j < hd; j++) {
        float *d = dst + (size_t)j * ld;
        for (s = 0; s < T; s++)
            d[s] = src[(size_t)s * D3 + j];
        for (; (size_t)s < ld; s++)
            d[s] = 0.0f;
    }
}

static size_t pad_w(int n)
{
    return ((size_t)n + ACC_W - 1) / ACC_W * ACC_W;
}

/* dst[c] = sum over i = 0..m-1, in order, of coef[i * cs] * src[i * ld + c], for c < n: each
 * sum starts from +0 and adds one product at a time; ACC_W columns are kept in two vector
 * registers (GCC vector extension: one zmm each with AVX-512, split into ymm/xmm below it; the
 * same operations in the same order at every width). padded: src rows are readable (and
 * finite) up to n rounded up to ACC_W, so the last chunk is computed whole too (only n columns
 * are stored) */
typedef float v16f __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4))); /* unaligned loads */

static inline __attribute__((always_inline)) void row_acc(float *dst, const float *coef, size_t cs,
                                                          int m, const float *src, size_t ld, int n,
                                                          int padded)
{
    int c0, i, q;
    for (c0 = 0; c0 < n; c0 += ACC_W) {
        int w = n - c0 < ACC_W ? n - c0 : ACC_W;
        if (w == ACC_W || padded) {
            v16f a0 = {0}, a1 = {0};
            float acc[ACC_W];
            for (i = 0; i < m; i++) {
                const float a = coef[(size_t)i * cs], *sr = src + (size_t)i * ld + c0;
                a0 += a * *(const v16u *)sr;
                a1 += a * *(const v16u *)(sr + 16);
            }
            if (w == ACC_W) {
                memcpy(dst + c0, &a0, sizeof(a0));
                memcpy(dst + c0 + 16, &a1, sizeof(a1));
                continue;
            }
            memcpy(acc, &a0, sizeof(a0));
            memcpy(acc + 16, &a1, sizeof(a1));
            memcpy(dst + c0, acc, (size_t)w * sizeof(float));
        } else {
            float acc[ACC_W];
            for (q = 0; q < w; q++)
                acc[q] = 0.0f;
            for (i = 0; i < m; i++) {
                const float a = coef[(size_t)i * cs], *sr = src + (size_t)i * ld + c0;
                for (q = 0; q < w; q++)
                    acc[q] += a * sr[q];
            }
            memcpy(dst + c0, acc, (size_t)w * sizeof(float));
        }
    }
}

/* one (batch, head): scores q.k (keys transposed), scale, mask, softmax (kept in P for the
 * backward pass), then y = P v */
TF_CLONES static void attention_task(void *p, int task, int tid)
{
    struct tf_job *jb = p;
    const struct tyc__node *nd = jb->nd;
    struct attn_dims a = adims(jb->g, nd, nd->in[0]);
    int b = task / a.H, h = task % a.H, t, s;
    const float *base = jb->g->t[nd->in[0]].data + (size_t)b * a.T * a.D3;
    float *y = jb->g->t[nd->out[0]].data + (size_t)b * a.T * a.D + h * a.hd;
    float *P = jb->g->t[nd->out[1]].data + (size_t)task * a.T * a.T;
    size_t ld = pad_w(a.T);
    float *kt = tf_local(jb, tid), *sc = kt + (size_t)a.hd * ld;
    head_t(base + a.D + h * a.hd, a.T, a.D3, a.hd, kt, ld);
    for (t = 0; t < a.T; t++) {
        const float *q = base + (size_t)t * a.D3 + h * a.hd;
        float *pr = P + (size_t)t * a.T, mx = -INFINITY, sum;
        int n = a.causal ? t + 1 : a.T;
        row_acc(sc, q, 1, a.hd, kt, ld, n, 1);
        for (s = 0; s < n; s++) {
            sc[s] = sc[s] * nd->f;
            mx = sc[s] > mx ? sc[s] : mx;
        }
        for (s = 0; s < n; s++)
            pr[s] = vmath_exp(sc[s] - mx);
        sum = lane_sum(pr, n);
        for (s = 0; s < n; s++)
            pr[s] = pr[s] / sum;
        for (s = n; s < a.T; s++)
            pr[s] = 0.0f;
        row_acc(y + (size_t)t * a.D, pr, 1, n, base + 2 * a.D + h * a.hd, (size_t)a.D3, a.hd, 0);
    }
}

/* one (batch, head): dp = dy.v, ds = p (dp - p.dp) scale (all of dS kept), then dq = dS k,
 * dk = dS^T q, dv = P^T dy, each a sum over keys (queries) in order; the head's columns of dqkv
 * are written by this task alone */
TF_CLONES static void attention_grad_task(void *p, int task, int tid)
{
    struct tf_job *jb = p;
    const struct tyc__node *nd = jb->nd;
    struct attn_dims a = adims(jb->g, nd, nd->in[1]);
    int b = task / a.H, h = task % a.H, t, s, T = a.T;
    const float *base = jb->g->t[nd->in[1]].data + (size_t)b * T * a.D3;
    const float *q = base + h * a.hd, *k = base + a.D + h * a.hd;
    const float *dy = jb->g->t[nd->in[0]].data + (size_t)b * T * a.D + h * a.hd;
    const float *P = jb->g->t[nd->in[2]].data + (size_t)task * T * T;
    float *dq = jb->g->t[nd->out[0]].data + (size_t)b * T * a.D3 + h * a.hd;
    size_t ld = pad_w(T);
    float *vt = tf_local(jb, tid), *dS = vt + (size_t)a.hd * ld, *dp = dS + (size_t)T * T;
    float *tmp = dp + ld;
    head_t(base + 2 * a.D + h * a.hd, T, a.D3, a.hd, vt, ld);
    for (t = 0; t < T; t++) {
        const float *pr = P + (size_t)t * T;
        float *ds = dS + (size_t)t * T, dot;
        int n = a.causal ? t + 1 : T;
        row_acc(dp, dy + (size_t)t * a.D, 1, a.hd, vt, ld, n, 1);
        for (s = 0; s < n; s++)
            tmp[s] = pr[s] * dp[s];
        dot = lane_sum(tmp, n);
        for (s = 0; s < n; s++)
            ds[s] = pr[s] * (dp[s] - dot) * nd->f;
        row_acc(dq + (size_t)t * a.D3, ds, 1, n, k, (size_t)a.D3, a.hd, 0);
    }
    for (s = 0; s < T; s++) { /* causal: only queries t >= s see key s */
        int t0 = a.causal ? s : 0;
        row_acc(dq + (size_t)s * a.D3 + a.D, dS + (size_t)t0 * T + s, (size_t)T, T - t0,
                q + (size_t)t0 * a.D3, (size_t)a.D3, a.hd, 0);
        row_acc(dq + (size_t)s * a.D3 + 2 * a.D, P + (size_t)t0 * T + s, (size_t)T, T - t0,
                dy + (size_t)t0 * a.D, (size_t)a.D, a.hd, 0);
    }
}

static void embed_task(void *p, int task, int tid)
{
    struct tf_job *jb = p;
    const struct tyc__tensor *ids = &jb->g->t[jb->nd->in[0]], *w = &jb->g->t[jb->nd->in[1]];
    float *o = jb->g->t[jb->nd->out[0]].data;
    int D = w->dim[1], V = w->dim[0], r,
        r1 = (task + 1) * ROWS < jb->rows ? (task + 1) * ROWS : jb->rows;
    (void)tid;
    for (r = task * ROWS; r < r1; r++) {
        int id = (int)ids->data[r];
        id = id < 0 || id >= V ? 0 : id;
        memcpy(o + (size_t)r * D, w->data + (size_t)id * D, (size_t)D * sizeof(float));
    }
}

static void dropout_task(void *p, int task, int tid)
{
    struct tf_job *jb = p;
    const struct tyc__node *nd = jb->nd;
    const float *a = jb->g->t[nd->in[0]].data;
    float *o = jb->g->t[nd->out[0]].data, sc = 1.0f / (1.0f - nd->f);
    uint32_t step = (uint32_t)jb->g->t[nd->in[1]].data[0];
    size_t i = (size_t)task * ROWS * 256, n = jb->g->t[nd->out[0]].numel;
    size_t end = n - i < (size_t)ROWS * 256 ? n : i + (size_t)ROWS * 256;
    (void)tid;
    for (; i < end; i++)
        o[i] = tyc__dropout_keep((uint32_t)nd->aux[0], step, (uint32_t)i, nd->f) ? a[i] * sc : 0.0f;
}

void tyc__tf_scratch(const struct tyc__graph *g, const struct tyc__node *n, size_t *shared,
                     size_t *local)
{
    *shared = 0;
    *local = 0;
    if (n->op == OP_ATTN || n->op == OP_ATTN_GRAD) {
        struct attn_dims a = adims(g, n, n->op == OP_ATTN ? n->in[0] : n->in[1]);
        *local = (size_t)a.hd * pad_w(a.T) + (size_t)a.T * a.T + 2 * pad_w(a.T);
    } else if (n->op == OP_LAYERNORM_GRAD) {
        const struct tyc__tensor *x = &g->t[n->in[1]];
        size_t D = (size_t)x->dim[x->nd - 1], R = x->numel / D;
        *local = 2 * D;
        *shared = (R + LN_ROWS - 1) / LN_ROWS * 2 * D;
    }
}

void tyc__tf_cpu_run(const struct tyc__graph *g, const struct tyc__node *nd,
                     const struct tyc__cpu_ctx *c)
{
    const struct tyc__tensor *o = &g->t[nd->out[0]], *a = &g->t[nd->in[0]];
    struct tf_job jb = {g, nd, c, 0, 0};
    size_t i;
    switch (nd->op) {
    case OP_EMBED:
        jb.rows = (int)a->numel;
        tyc__pool_run(c->pool, (jb.rows + ROWS - 1) / ROWS, embed_task, &jb);
        break;
    case OP_EMBED_GRAD: { /* rows in order: an id may repeat */
        const float *ids = g->t[nd->in[1]].data;
        int D = o->dim[1], V = o->dim[0], j;
        size_t R = g->t[nd->in[1]].numel;
        memset(o->data, 0, o->numel * sizeof(float));
        for (i = 0; i < R; i++) {
            int id = (int)ids[i];
            float *row = o->data + (size_t)(id < 0 || id >= V ? 0 : id) * D;
            for (j = 0; j < D; j++)
                row[j] += a->data[i * (size_t)D + j];
        }
        break;
    }
    case OP_LAYERNORM:
        jb.D = a->dim[a->nd - 1];
        jb.rows = (int)(a->numel / (size_t)jb.D);
        tyc__pool_run(c->pool, (jb.rows + LN_ROWS - 1) / LN_ROWS, layernorm_task, &jb);
        break;
    case OP_LAYERNORM_GRAD: {
        const struct tyc__tensor *x = &g->t[nd->in[1]];
        jb.D = x->dim[x->nd - 1];
        jb.rows = (int)(x->numel / (size_t)jb.D);
        tyc__pool_run(c->pool, (jb.rows + LN_ROWS - 1) / LN_ROWS, layernorm_grad_task, &jb);
        tyc__pool_run(c->pool, (jb.D + 255) / 256, layernorm_gsum_task, &jb);
        break;
    }
    case OP_ATTN:
    case OP_ATTN_GRAD: {
        struct attn_dims d = adims(g, nd, nd->op == OP_ATTN ? nd->in[0] : nd->in[1]);
        tyc__pool_run(c->pool, d.B * d.H, nd->op == OP_ATTN ? attention_task : attention_grad_task,
                      &jb);
        break;
    }
    case OP_DROPOUT:
    case OP_DROPOUT_GRAD:
        tyc__pool_run(c->pool, (int)((o->numel + ROWS * 256 - 1) / (ROWS * 256)), dropout_task,
                      &jb);
        break;
    case OP_SEQMEAN: {
        int T = nd->aux[1], D = o->dim[1], t, j;
        for (i = 0; i < (size_t)o->dim[0]; i++) {
            float *row = o->data + i * D;
            for (j = 0; j < D; j++)
                row[j] = 0.0f;
            for (t = 0; t < T; t++)
                for (j = 0; j < D; j++)
                    row[j] += a->data[(i * T + t) * D + j];
            for (j = 0; j < D; j++)
                row[j] /= (float)T;
        }
        break;
    }
    case OP_SEQMEAN_GRAD: {
        int T = nd->aux[1], D = o->dim[1];
        for (i = 0; i < o->numel; i++)
            o->data[i] = a->data[(i / ((size_t)D * T)) * D + i % D] / (float)T;
        break;
    }
    case OP_AMP_CHECK: /* the CPU computes in fp32: never overflows a loss scale of 1 */
    case OP_AMP_UPDATE:
        o->data[0] = 0.0f;
        break;
    case OP_AMP_UNSCALE: /* scale 1 on the CPU */
        if (o->data != a->data)
            memmove(o->data, a->data, o->numel * sizeof(float));
        break;
    }
}
