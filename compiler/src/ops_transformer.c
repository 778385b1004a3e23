/* ops_transformer.c - the transformer ops of the graph IR: embedding lookup, layer norm,
 * multi-head self-attention (scale, causal mask, softmax and the value product in one kernel),
 * seeded dropout and the sequence mean; their graph builders, gradient rules and CPU kernels.
 * Layer norm forward and backward (dx, dgamma, dbeta) and the attention core are single fused
 * ops from the start (there is no unfused form to pass over). Every reduction runs in a fixed
 * order (rows in order, keys in order), so eager and compiled agree bitwise. */
#include "tyc_int.h"
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

/* ---- CPU kernels ----------------------------------------------------------------------------- */
static void layernorm_row(const float *x, const float *gm, const float *bt, float *y, int D,
                          float eps)
{
    float mean = 0.0f, var = 0.0f, rstd;
    int j;
    for (j = 0; j < D; j++)
        mean += x[j];
    mean /= (float)D;
    for (j = 0; j < D; j++) {
        float d = x[j] - mean;
        var += d * d;
    }
    var /= (float)D;
    rstd = 1.0f / sqrtf(var + eps);
    for (j = 0; j < D; j++)
        y[j] = (x[j] - mean) * rstd * gm[j] + bt[j];
}

static void layernorm_grad(const struct tyc__graph *g, const struct tyc__node *nd)
{
    const struct tyc__tensor *dy = &g->t[nd->in[0]], *x = &g->t[nd->in[1]];
    const float *gm = g->t[nd->in[2]].data;
    float *dx = g->t[nd->out[0]].data, *dg = g->t[nd->out[1]].data, *db = g->t[nd->out[2]].data;
    int D = x->dim[x->nd - 1], R = (int)(x->numel / (size_t)D), r, j;
    memset(dg, 0, (size_t)D * sizeof(float));
    memset(db, 0, (size_t)D * sizeof(float));
    for (r = 0; r < R; r++) {
        const float *xr = x->data + (size_t)r * D, *dyr = dy->data + (size_t)r * D;
        float *dxr = dx + (size_t)r * D;
        float mean = 0.0f, var = 0.0f, rstd, s1 = 0.0f, s2 = 0.0f;
        for (j = 0; j < D; j++)
            mean += xr[j];
        mean /= (float)D;
        for (j = 0; j < D; j++) {
            float d = xr[j] - mean;
            var += d * d;
        }
        var /= (float)D;
        rstd = 1.0f / sqrtf(var + nd->f);
        for (j = 0; j < D; j++) {
            float xh = (xr[j] - mean) * rstd, dxh = dyr[j] * gm[j];
            s1 += dxh;
            s2 += dxh * xh;
            dg[j] += dyr[j] * xh;
            db[j] += dyr[j];
        }
        s1 /= (float)D;
        s2 /= (float)D;
        for (j = 0; j < D; j++) {
            float xh = (xr[j] - mean) * rstd;
            dxr[j] = rstd * (dyr[j] * gm[j] - s1 - xh * s2);
        }
    }
}

/* qkv [B*T, 3D]: q at column h*hd, k at D + h*hd, v at 2D + h*hd of each row */
static void attention(const struct tyc__graph *g, const struct tyc__node *nd)
{
    const struct tyc__tensor *qkv = &g->t[nd->in[0]];
    float *y = g->t[nd->out[0]].data, *P = g->t[nd->out[1]].data;
    int H = nd->aux[0], T = nd->aux[1], causal = nd->aux[2], D3 = qkv->dim[1], D = D3 / 3;
    int hd = D / H, B = qkv->dim[0] / T, b, h, t, s, j;
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            for (t = 0; t < T; t++) {
                const float *q = qkv->data + ((size_t)b * T + t) * D3 + h * hd;
                float *p = P + (((size_t)b * H + h) * T + t) * T, mx = -INFINITY, sum = 0.0f;
                float *yr = y + ((size_t)b * T + t) * D + h * hd;
                int last = causal ? t : T - 1;
                for (s = 0; s <= last; s++) {
                    const float *k = qkv->data + ((size_t)b * T + s) * D3 + D + h * hd;
                    float acc = 0.0f;
                    for (j = 0; j < hd; j++)
                        acc += q[j] * k[j];
                    p[s] = acc * nd->f;
                    mx = p[s] > mx ? p[s] : mx;
                }
                for (s = 0; s <= last; s++) {
                    p[s] = expf(p[s] - mx);
                    sum += p[s];
                }
                for (s = 0; s <= last; s++)
                    p[s] = p[s] / sum;
                for (s = last + 1; s < T; s++)
                    p[s] = 0.0f;
                for (j = 0; j < hd; j++)
                    yr[j] = 0.0f;
                for (s = 0; s <= last; s++) {
                    const float *v = qkv->data + ((size_t)b * T + s) * D3 + 2 * D + h * hd;
                    for (j = 0; j < hd; j++)
                        yr[j] += p[s] * v[j];
                }
            }
}

static void attention_grad(const struct tyc__graph *g, const struct tyc__node *nd)
{
    const struct tyc__tensor *dyt = &g->t[nd->in[0]], *qkv = &g->t[nd->in[1]];
    const float *P = g->t[nd->in[2]].data;
    float *dq = g->t[nd->out[0]].data;
    int H = nd->aux[0], T = nd->aux[1], causal = nd->aux[2], D3 = qkv->dim[1], D = D3 / 3;
    int hd = D / H, B = qkv->dim[0] / T, b, h, t, s, j;
    memset(dq, 0, qkv->numel * sizeof(float));
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            for (t = 0; t < T; t++) {
                const float *p = P + (((size_t)b * H + h) * T + t) * T;
                const float *dy = dyt->data + ((size_t)b * T + t) * D + h * hd;
                const float *q = qkv->data + ((size_t)b * T + t) * D3 + h * hd;
                float *dqr = dq + ((size_t)b * T + t) * D3 + h * hd, dot = 0.0f;
                int last = causal ? t : T - 1;
                float dp[1024];
                for (s = 0; s <= last; s++) {
                    const float *v = qkv->data + ((size_t)b * T + s) * D3 + 2 * D + h * hd;
                    float *dv = dq + ((size_t)b * T + s) * D3 + 2 * D + h * hd, acc = 0.0f;
                    for (j = 0; j < hd; j++) {
                        acc += dy[j] * v[j];
                        dv[j] += p[s] * dy[j];
                    }
                    dp[s] = acc;
                    dot += p[s] * acc;
                }
                for (s = 0; s <= last; s++) {
                    const float *k = qkv->data + ((size_t)b * T + s) * D3 + D + h * hd;
                    float *dk = dq + ((size_t)b * T + s) * D3 + D + h * hd;
                    float ds = p[s] * (dp[s] - dot) * nd->f;
                    for (j = 0; j < hd; j++) {
                        dqr[j] += ds * k[j];
                        dk[j] += ds * q[j];
                    }
                }
            }
}

void tyc__tf_cpu_run(const struct tyc__graph *g, const struct tyc__node *nd)
{
    const struct tyc__tensor *o = &g->t[nd->out[0]], *a = &g->t[nd->in[0]];
    size_t i;
    switch (nd->op) {
    case OP_EMBED: {
        const struct tyc__tensor *w = &g->t[nd->in[1]];
        int D = w->dim[1], V = w->dim[0];
        for (i = 0; i < a->numel; i++) {
            int id = (int)a->data[i];
            id = id < 0 || id >= V ? 0 : id;
            memcpy(o->data + i * (size_t)D, w->data + (size_t)id * D, (size_t)D * sizeof(float));
        }
        break;
    }
    case OP_EMBED_GRAD: {
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
    case OP_LAYERNORM: {
        int D = a->dim[a->nd - 1];
        size_t R = a->numel / (size_t)D;
        for (i = 0; i < R; i++)
            layernorm_row(a->data + i * D, g->t[nd->in[1]].data, g->t[nd->in[2]].data,
                          o->data + i * D, D, nd->f);
        break;
    }
    case OP_LAYERNORM_GRAD:
        layernorm_grad(g, nd);
        break;
    case OP_ATTN:
        attention(g, nd);
        break;
    case OP_ATTN_GRAD:
        attention_grad(g, nd);
        break;
    case OP_DROPOUT:
    case OP_DROPOUT_GRAD: {
        uint32_t step = (uint32_t)g->t[nd->in[1]].data[0];
        float sc = 1.0f / (1.0f - nd->f);
        for (i = 0; i < o->numel; i++)
            o->data[i] = tyc__dropout_keep((uint32_t)nd->aux[0], step, (uint32_t)i, nd->f)
                             ? a->data[i] * sc
                             : 0.0f;
        break;
    }
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
