/* cuda_transformer.c - CUDA C for the transformer ops (embedding and its gradient, layer norm
 * forward and backward, self-attention forward and backward, dropout, sequence mean) and for
 * the fp16 loss-scaling ops (finite check, unscale, scale update). Every kernel sums in the CPU's
 * order where one thread owns an output (no atomics: deterministic run to run). Attention
 * operands go through TY_LP(), the compute-precision rounding of the prelude (bf16/fp16). */
#include "cuda_int.h"
#include <stdio.h>
#include <string.h>

static void name(struct tyc__kdesc *k, int node, const char *what, size_t threads, unsigned blk)
{
    snprintf(k->name, sizeof(k->name), "k%d_%s", node, what);
    k->grid[0] = (unsigned)((threads + blk - 1) / blk);
    k->block[0] = blk;
}

int tyc__cuda_tf_kernels(const struct tyc__graph *g, int node, struct tyc__kdesc *k)
{
    const struct tyc__node *n = &g->n[node];
    const struct tyc__tensor *o = &g->t[n->out[0]], *a = &g->t[n->in[0]];
    switch (n->op) {
    case OP_LAYERNORM:
        name(&k[0], node, "layer_norm", a->numel / (size_t)a->dim[a->nd - 1], 128);
        return 1;
    case OP_LAYERNORM_GRAD: {
        const struct tyc__tensor *x = &g->t[n->in[1]];
        int D = x->dim[x->nd - 1];
        name(&k[0], node, "layer_norm_dx", x->numel / (size_t)D, 128);
        name(&k[1], node, "layer_norm_dparams", (size_t)D, 128);
        return 2;
    }
    case OP_ATTN: /* one thread per (batch, head, query) row */
        name(&k[0], node, "attention", (size_t)a->dim[0] * (size_t)n->aux[0], 64);
        return 1;
    case OP_ATTN_GRAD: {
        size_t rows = (size_t)o->dim[0] * (size_t)n->aux[0];
        name(&k[0], node, "attention_rowdot", rows, 64);
        name(&k[1], node, "attention_dqk", rows, 64);
        name(&k[2], node, "attention_dv", rows, 64);
        return 3;
    }
    case OP_AMP_CHECK:
        name(&k[0], node, "amp_check", 65536, 256);
        return 1;
    case OP_AMP_UPDATE:
        name(&k[0], node, "amp_update", 1, 1);
        return 1;
    default:
        name(&k[0], node, tyc__op_name(n->op), o->numel, 256);
        return 1;
    }
}

static void head(struct tyc__buf *b, const struct tyc__node *n, const char *kname)
{
    int i;
    tyc__buf_printf(b, "extern \"C\" __global__ void %s(", kname);
    for (i = 0; i < n->nin; i++)
        tyc__buf_printf(b, "%sconst float *__restrict__ in%d", i ? ", " : "", i);
    for (i = 0; i < n->nout; i++)
        tyc__buf_printf(b, ", float *out%d", i);
    tyc__buf_printf(b, ")\n{\n    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n");
}

/* the row statistics of layer norm, as cpu.c computes them */
static void ln_stats(struct tyc__buf *b, const char *x, int D, float eps)
{
    tyc__buf_printf(b,
                    "    float mean = 0.0f, var = 0.0f;\n"
                    "    for (int j = 0; j < %d; j++) mean += %s[j];\n"
                    "    mean /= (float)%d;\n"
                    "    for (int j = 0; j < %d; j++) { float d = %s[j] - mean; var += d * d; }\n"
                    "    var /= (float)%d;\n"
                    "    const float rstd = 1.0f / sqrtf(var + (float)%a);\n",
                    D, x, D, D, x, D, (double)eps);
}

static void gen_attention(const struct tyc__graph *g, const struct tyc__node *n,
                          const struct tyc__kdesc *k, struct tyc__buf *b)
{
    int fwd = n->op == OP_ATTN, q = fwd ? 0 : 1;
    const struct tyc__tensor *qkv = &g->t[n->in[q]];
    int H = n->aux[0], T = n->aux[1], causal = n->aux[2], D3 = qkv->dim[1], D = D3 / 3;
    int hd = D / H, rows = qkv->dim[0] * H, kk;
    char last[32];
    snprintf(last, sizeof(last), causal ? "t" : "%d", T - 1);
    /* row i = (b*H + h)*T + t */
    for (kk = 0; kk < (fwd ? 1 : 3); kk++) {
        head(b, n, k[kk].name);
        tyc__buf_printf(b,
                        "    if (i >= %du) return;\n"
                        "    const int t = (int)(i %% %d), h = (int)((i / %d) %% %d);\n"
                        "    const size_t b0 = i / %d / %d * %d;\n"
                        "    const int last = %s;\n"
                        "    const float *q = in%d + (b0 + t) * %d + h * %d;\n",
                        rows, T, T, H, T, H, T, last, q, D3, hd);
        tyc__buf_printf(b,
                        "#define KROW(s) (in%d + (b0 + (s)) * %d + %d + h * %d)\n"
                        "#define VROW(s) (in%d + (b0 + (s)) * %d + %d + h * %d)\n",
                        q, D3, D, hd, q, D3, 2 * D, hd);
        if (fwd) {
            tyc__buf_printf(
                b,
                "    float *p = out1 + i * %d, mx = -__int_as_float(0x7f800000), sum = 0.0f;\n"
                "    float *y = out0 + (b0 + t) * %d + h * %d;\n"
                "    for (int s = 0; s <= last; s++) {\n"
                "        const float *kr = KROW(s); float acc = 0.0f;\n"
                "        for (int j = 0; j < %d; j++) acc += TY_LP(q[j]) * "
                "TY_LP(kr[j]);\n"
                "        p[s] = acc * (float)%a; mx = p[s] > mx ? p[s] : mx;\n    }\n"
                "    for (int s = 0; s <= last; s++) { p[s] = expf(p[s] - mx); sum "
                "+= p[s]; }\n"
                "    for (int s = 0; s <= last; s++) p[s] = p[s] / sum;\n"
                "    for (int s = last + 1; s < %d; s++) p[s] = 0.0f;\n"
                "    for (int j = 0; j < %d; j++) {\n        float acc = 0.0f;\n"
                "        for (int s = 0; s <= last; s++) acc += TY_LP(p[s]) * "
                "TY_LP(VROW(s)[j]);\n"
                "        y[j] = acc;\n    }\n",
                T, D, hd, hd, (double)n->f, T, hd);
        } else {
            /* in0 dy [B*T, D], in1 qkv, in2 P; out0 dqkv. The row dot (sum_s P dP) is parked in
             * the dv slot of the row until the last kernel writes dv. */
            tyc__buf_printf(b,
                            "    const float *p = in2 + i * %d;\n"
                            "#define DYROW(s) (in0 + (b0 + (s)) * %d + h * %d)\n"
                            "#define DOT(s) out0[(b0 + (s)) * %d + %d + h * %d]\n"
                            "#define PR(s) (in2 + (((b0 / %d) * %d + h) * %d + (s)) * %d)\n",
                            T, D, hd, D3, 2 * D, hd, T, H, T, T);
            if (kk == 0)
                tyc__buf_printf(b,
                                "    float dot = 0.0f;\n"
                                "    for (int s = 0; s <= last; s++) {\n"
                                "        float acc = 0.0f;\n"
                                "        for (int j = 0; j < %d; j++) acc += DYROW(t)[j] * "
                                "VROW(s)[j];\n"
                                "        dot += p[s] * acc;\n    }\n    DOT(t) = dot;\n",
                                hd);
            else if (kk == 1)
                /* dq of row t sums over keys s; dk of row t (as a key) sums over queries u */
                tyc__buf_printf(b,
                                "    float *dq = out0 + (b0 + t) * %d + h * %d, *dk = dq + %d;\n"
                                "    for (int j = 0; j < %d; j++) { dq[j] = 0.0f; dk[j] = 0.0f; }\n"
                                "    const float dott = DOT(t);\n"
                                "    for (int s = 0; s <= last; s++) {\n"
                                "        float dp = 0.0f;\n"
                                "        for (int j = 0; j < %d; j++) dp += DYROW(t)[j] * "
                                "VROW(s)[j];\n"
                                "        const float ds = p[s] * (dp - dott) * (float)%a;\n"
                                "        for (int j = 0; j < %d; j++) dq[j] += ds * KROW(s)[j];\n"
                                "    }\n"
                                "    for (int u = %s; u < %d; u++) {\n"
                                "        const float pu = PR(u)[t];\n"
                                "        float dp = 0.0f;\n"
                                "        for (int j = 0; j < %d; j++) dp += DYROW(u)[j] * "
                                "VROW(t)[j];\n"
                                "        const float ds = pu * (dp - DOT(u)) * (float)%a;\n"
                                "        const float *qu = in1 + (b0 + u) * %d + h * %d;\n"
                                "        for (int j = 0; j < %d; j++) dk[j] += ds * qu[j];\n"
                                "    }\n",
                                D3, hd, D, hd, hd, (double)n->f, hd, causal ? "t" : "0", T, hd,
                                (double)n->f, D3, hd, hd);
            else
                tyc__buf_printf(b,
                                "    float dv[%d];\n"
                                "    for (int j = 0; j < %d; j++) dv[j] = 0.0f;\n"
                                "    for (int u = %s; u < %d; u++) {\n"
                                "        const float pu = PR(u)[t];\n"
                                "        for (int j = 0; j < %d; j++) dv[j] += pu * DYROW(u)[j];\n"
                                "    }\n"
                                "    float *o = out0 + (b0 + t) * %d + %d + h * %d;\n"
                                "    for (int j = 0; j < %d; j++) o[j] = dv[j];\n",
                                hd, hd, causal ? "t" : "0", T, hd, D3, 2 * D, hd, hd);
            tyc__buf_printf(b, "#undef DYROW\n#undef DOT\n#undef PR\n");
        }
        tyc__buf_printf(b, "#undef KROW\n#undef VROW\n}\n\n");
    }
}

void tyc__cuda_tf_gen(const struct tyc__graph *g, int node, const struct tyc__kdesc *k,
                      struct tyc__buf *b)
{
    const struct tyc__node *n = &g->n[node];
    const struct tyc__tensor *o = &g->t[n->out[0]], *a = &g->t[n->in[0]];
    int i;
    if (n->op == OP_ATTN || n->op == OP_ATTN_GRAD) {
        gen_attention(g, n, k, b);
        return;
    }
    head(b, n, k[0].name);
    switch (n->op) {
    case OP_EMBED: {
        int D = o->dim[1], V = g->t[n->in[1]].dim[0];
        tyc__buf_printf(b,
                        "    if (i >= %zuu) return;\n"
                        "    int id = (int)in0[i / %d]; if (id < 0 || id >= %d) id = 0;\n"
                        "    out0[i] = in1[(size_t)id * %d + i %% %d];\n",
                        o->numel, D, V, D, D);
        break;
    }
    case OP_EMBED_GRAD: { /* one thread per table element: rows in order, no atomics */
        int D = o->dim[1], V = o->dim[0];
        size_t R = g->t[n->in[1]].numel;
        tyc__buf_printf(b,
                        "    if (i >= %zuu) return;\n"
                        "    const int v = (int)(i / %d), j = (int)(i %% %d);\n"
                        "    float acc = 0.0f;\n"
                        "    for (size_t r = 0; r < %zuu; r++) {\n"
                        "        int id = (int)in1[r]; if (id < 0 || id >= %d) id = 0;\n"
                        "        if (id == v) acc += in0[r * %d + j];\n    }\n"
                        "    out0[i] = acc;\n",
                        o->numel, D, D, R, V, D);
        break;
    }
    case OP_LAYERNORM: {
        int D = a->dim[a->nd - 1];
        tyc__buf_printf(b, "    if (i >= %zuu) return;\n    const float *x = in0 + i * %d;\n",
                        a->numel / (size_t)D, D);
        ln_stats(b, "x", D, n->f);
        tyc__buf_printf(b,
                        "    for (int j = 0; j < %d; j++)\n"
                        "        out0[i * %d + j] = (x[j] - mean) * rstd * in1[j] + in2[j];\n",
                        D, D);
        break;
    }
    case OP_LAYERNORM_GRAD: {
        const struct tyc__tensor *x = &g->t[n->in[1]];
        int D = x->dim[x->nd - 1];
        size_t R = x->numel / (size_t)D;
        tyc__buf_printf(b,
                        "    if (i >= %zuu) return;\n    const float *x = in1 + i * %d, *dy = in0 "
                        "+ i * %d;\n",
                        R, D, D);
        ln_stats(b, "x", D, n->f);
        tyc__buf_printf(b,
                        "    float s1 = 0.0f, s2 = 0.0f;\n"
                        "    for (int j = 0; j < %d; j++) {\n"
                        "        float xh = (x[j] - mean) * rstd, dxh = dy[j] * in2[j];\n"
                        "        s1 += dxh; s2 += dxh * xh;\n    }\n"
                        "    s1 /= (float)%d; s2 /= (float)%d;\n"
                        "    for (int j = 0; j < %d; j++) {\n"
                        "        float xh = (x[j] - mean) * rstd;\n"
                        "        out0[i * %d + j] = rstd * (dy[j] * in2[j] - s1 - xh * s2);\n"
                        "    }\n}\n\n",
                        D, D, D, D, D);
        /* dgamma, dbeta: one thread per column, rows in order */
        head(b, n, k[1].name);
        tyc__buf_printf(b,
                        "    if (i >= %du) return;\n    float dg = 0.0f, db = 0.0f;\n"
                        "    for (size_t r = 0; r < %zuu; r++) {\n"
                        "        const float *x = in1 + r * %d;\n",
                        D, R, D);
        ln_stats(b, "x", D, n->f);
        tyc__buf_printf(b,
                        "        const float dyv = in0[r * %d + i];\n"
                        "        dg += dyv * ((x[i] - mean) * rstd); db += dyv;\n    }\n"
                        "    out1[i] = dg; out2[i] = db;\n",
                        D);
        break;
    }
    case OP_DROPOUT:
    case OP_DROPOUT_GRAD:
        tyc__buf_printf(b,
                        "    if (i >= %zuu) return;\n"
                        "    unsigned int step = (unsigned int)in1[0];\n"
                        "    unsigned int hh = %uu ^ (step * 0x9e3779b9u) ^ ((unsigned int)i * "
                        "0x85ebca6bu);\n"
                        "    hh ^= hh >> 16; hh *= 0x7feb352du; hh ^= hh >> 15; hh *= 0x846ca68bu; "
                        "hh ^= hh >> 16;\n"
                        "    out0[i] = (float)(hh >> 8) * (1.0f / 16777216.0f) >= (float)%a ? "
                        "in0[i] * (float)%a : 0.0f;\n",
                        o->numel, (unsigned)n->aux[0], (double)n->f,
                        (double)(1.0f / (1.0f - n->f)));
        break;
    case OP_SEQMEAN: {
        int T = n->aux[1], D = o->dim[1];
        tyc__buf_printf(b,
                        "    if (i >= %zuu) return;\n    float acc = 0.0f;\n"
                        "    for (int t = 0; t < %d; t++) acc += in0[((i / %d) * %d + t) * %d + i "
                        "%% %d];\n"
                        "    out0[i] = acc / (float)%d;\n",
                        o->numel, T, D, T, D, D, T);
        break;
    }
    case OP_SEQMEAN_GRAD: {
        int T = n->aux[1], D = o->dim[1];
        tyc__buf_printf(b,
                        "    if (i >= %zuu) return;\n"
                        "    out0[i] = in0[(i / %d) * %d + i %% %d] / (float)%d;\n",
                        o->numel, D * T, D, D, T);
        break;
    }
    case OP_AMP_CHECK: /* any non-finite gradient: the step is skipped, the scale halved */
        for (i = 0; i < n->nin; i++)
            tyc__buf_printf(b,
                            "    for (size_t e = i; e < %zuu; e += (size_t)gridDim.x * "
                            "blockDim.x)\n"
                            "        if (!isfinite(in%d[e])) ty_amp_found_inf = 1;\n",
                            g->t[n->in[i]].numel, i);
        tyc__buf_printf(b, "    if (i == 0) out0[0] = 0.0f;\n");
        break;
    case OP_AMP_UNSCALE:
        tyc__buf_printf(b, "    if (i >= %zuu) return;\n    out0[i] = in0[i] / ty_amp_scale;\n",
                        o->numel);
        break;
    case OP_AMP_UPDATE: /* dynamic loss scaling: halve on overflow, double after 2000 good steps */
        tyc__buf_printf(b, "    if (i) return;\n"
                           "    if (ty_amp_found_inf) { ty_amp_scale *= 0.5f; ty_amp_good = 0; }\n"
                           "    else if (++ty_amp_good == 2000) { ty_amp_scale *= 2.0f; "
                           "ty_amp_good = 0; }\n"
                           "    ty_amp_found_inf = 0;\n    out0[0] = ty_amp_scale;\n");
        break;
    }
    tyc__buf_printf(b, "}\n\n");
}
