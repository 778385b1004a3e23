/* passes.c - the pass pipeline over the joint training graph (after autodiff):
 * DCE, CSE, algebraic simplification, matmul epilogue fusion, fused softmax-cross-entropy,
 * elementwise fusion and liveness-based memory planning. Each pass is switched by a TYC_PASS_*
 * bit and appends what it did to a log. Invariant kept by every pass: nodes stay in topological
 * order; a fused node takes the slot of its last member (reductions are hoisted to their
 * producer, which is legal because they read only that producer's output). */
#include "tyc_int.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void replace_uses(struct tyc__graph *g, int from, int to)
{
    int i, j;
    for (i = 0; i < g->nn; i++)
        for (j = 0; j < g->n[i].nin; j++)
            if (g->n[i].in[j] == from)
                g->n[i].in[j] = to;
    for (i = 0; i < g->nout; i++)
        if (g->outputs[i] == from)
            g->outputs[i] = to;
}

static int live_count(const struct tyc__graph *g)
{
    int i, c = 0;
    for (i = 0; i < g->nn; i++)
        c += !g->n[i].dead;
    return c;
}

static int writes_param(const struct tyc__graph *g, const struct tyc__node *n)
{
    int j;
    for (j = 0; j < n->nout; j++)
        if (g->t[n->out[j]].kind == TK_PARAM)
            return 1;
    return 0;
}

/* ---- DCE ------------------------------------------------------------------------------------- */
static int pass_dce(struct tyc__graph *g)
{
    char *need = tyc__calloc((size_t)g->nt, 1);
    int i, j, removed = 0;
    if (!need)
        return 0;
    for (i = 0; i < g->nout; i++)
        need[g->outputs[i]] = 1;
    for (i = g->nn - 1; i >= 0; i--) {
        struct tyc__node *n = &g->n[i];
        int keep = writes_param(g, n);
        if (n->dead)
            continue;
        for (j = 0; j < n->nout && !keep; j++)
            keep = need[n->out[j]];
        if (!keep) {
            n->dead = 1;
            removed++;
            continue;
        }
        for (j = 0; j < n->nin; j++)
            need[n->in[j]] = 1;
    }
    tyc__free(need);
    return removed;
}

/* ---- CSE ------------------------------------------------------------------------------------- */
static int same_node(const struct tyc__node *a, const struct tyc__node *b)
{
    return a->op == b->op && a->nin == b->nin && a->nout == 1 && b->nout == 1 &&
           memcmp(a->in, b->in, (size_t)a->nin * sizeof(int)) == 0 && a->ta == b->ta &&
           a->tb == b->tb && a->f == b->f && a->has_f == b->has_f && a->stride == b->stride &&
           a->pad == b->pad && memcmp(a->aux, b->aux, sizeof(a->aux)) == 0;
}

static int pass_cse(struct tyc__graph *g, int *consts)
{
    int i, j, merged = 0;
    *consts = 0;
    for (i = 0; i < g->nt; i++) {
        if (g->t[i].kind != TK_CONST || g->t[i].alias >= 0)
            continue;
        for (j = 0; j < i; j++)
            if (g->t[j].kind == TK_CONST && g->t[j].alias < 0 && g->t[j].cval == g->t[i].cval &&
                signbit(g->t[j].cval) == signbit(g->t[i].cval)) {
                g->t[i].alias = j;
                replace_uses(g, i, j);
                (*consts)++;
                break;
            }
    }
    for (i = 0; i < g->nn; i++) {
        struct tyc__node *n = &g->n[i];
        if (n->dead || n->op == OP_ASSIGN || g->t[n->out[0]].kind != TK_TEMP)
            continue;
        for (j = 0; j < i; j++) {
            if (g->n[j].dead || !same_node(&g->n[j], n))
                continue;
            replace_uses(g, n->out[0], g->n[j].out[0]);
            n->dead = 1;
            merged++;
            break;
        }
    }
    return merged;
}

/* ---- algebraic simplification ---------------------------------------------------------------- */
static int is_const(const struct tyc__graph *g, int t, float v)
{
    return g->t[t].kind == TK_CONST && g->t[t].cval == v;
}

static int pass_simplify(struct tyc__graph *g, struct tyc__buf *log)
{
    int i, c = 0;
    for (i = 0; i < g->nn; i++) {
        struct tyc__node *n = &g->n[i];
        int y = n->out[0], x = -1;
        if (n->dead)
            continue;
        if (n->op == OP_XENT_GRAD && n->nin == 3 && g->t[n->in[2]].kind == TK_CONST) {
            n->f = g->t[n->in[2]].cval;
            n->has_f = 1;
            n->nin = 2;
            tyc__buf_printf(log, "    fold constant dloss=%g into %%t%d\n", (double)n->f, y);
            c++;
            continue;
        }
        if ((n->op == OP_MUL || n->op == OP_DIV) && is_const(g, n->in[1], 1.0f))
            x = n->in[0];
        else if (n->op == OP_MUL && is_const(g, n->in[0], 1.0f) &&
                 g->t[n->in[1]].numel == g->t[y].numel)
            x = n->in[1];
        else if ((n->op == OP_ADD || n->op == OP_SUB) && is_const(g, n->in[1], 0.0f))
            x = n->in[0];
        else if (n->op == OP_SCALE && n->f == 1.0f)
            x = n->in[0];
        else if ((n->op == OP_COPY || n->op == OP_RESHAPE) && g->t[n->in[0]].nd == g->t[y].nd &&
                 memcmp(g->t[n->in[0]].dim, g->t[y].dim, sizeof(int) * (size_t)g->t[y].nd) == 0)
            x = n->in[0];
        if (x < 0 || g->t[y].kind != TK_TEMP || g->t[x].numel != g->t[y].numel)
            continue;
        tyc__buf_printf(log, "    %%t%d = %s(...) -> identity\n", y, tyc__op_name(n->op));
        replace_uses(g, y, x);
        n->dead = 1;
        c++;
    }
    return c;
}

/* ---- matmul epilogue fusion ------------------------------------------------------------------ */
static int only_consumer(const struct tyc__graph *g, int t, int *node)
{
    int first, count;
    if (tyc__is_output(g, t) || g->t[t].kind != TK_TEMP)
        return 0;
    tyc__consumers(g, t, &first, &count);
    if (count != 1)
        return 0;
    *node = first;
    return 1;
}

static int is_act(int op)
{
    return op == OP_RELU || op == OP_GELU || op == OP_TANH || op == OP_SIGMOID;
}

static int is_act_grad(int op)
{
    return op == OP_RELU_GRAD || op == OP_GELU_GRAD || op == OP_TANH_GRAD || op == OP_SIGMOID_GRAD;
}

/* t (a temp, not an output) read by exactly two nodes: an activation (t as its input) and, later,
 * anything else (the activation's gradient). Returns the activation's node or -1. */
static int act_keeping_pre(const struct tyc__graph *g, int t)
{
    int i, j, act = -1, other = -1;
    if (tyc__is_output(g, t) || g->t[t].kind != TK_TEMP)
        return -1;
    for (i = 0; i < g->nn; i++) {
        int reads = 0;
        if (g->n[i].dead)
            continue;
        for (j = 0; j < g->n[i].nin; j++)
            reads |= g->n[i].in[j] == t;
        if (!reads)
            continue;
        if (act < 0 && other < 0 && is_act(g->n[i].op) && g->n[i].in[0] == t)
            act = i;
        else if (other < 0)
            other = i;
        else
            return -1;
    }
    return act >= 0 && other > act ? act : -1;
}

/* Finds a REDUCE_COLS reading t (the bias gradient); returns its node or -1. */
static int find_colsum(const struct tyc__graph *g, int t)
{
    int i;
    for (i = 0; i < g->nn; i++)
        if (!g->n[i].dead && g->n[i].op == OP_REDUCE_COLS && g->n[i].in[0] == t &&
            g->t[t].nd == 2 && g->t[g->n[i].out[0]].numel == (size_t)g->t[t].dim[1])
            return i;
    return -1;
}

/* conv2d + per-channel bias + activation in one kernel */
static int conv_epilogue(struct tyc__graph *g, int i, struct tyc__buf *log)
{
    struct tyc__node m = g->n[i];
    int c = m.out[0], k, lastpos = i;
    if (!only_consumer(g, c, &k) || g->n[k].op != OP_BIAS_CHAN || g->n[k].in[0] != c ||
        g->n[k].in[1] == c)
        return 0;
    m.epi_bias = m.nin;
    m.in[m.nin++] = g->n[k].in[1];
    g->n[k].dead = 1;
    c = g->n[k].out[0];
    lastpos = k;
    if (only_consumer(g, c, &k) && is_act(g->n[k].op) && g->n[k].in[0] == c) {
        m.epi_act = g->n[k].op;
        g->n[k].dead = 1;
        c = g->n[k].out[0];
        lastpos = k;
    }
    m.out[0] = c;
    g->n[i].dead = 1;
    g->n[lastpos] = m;
    g->t[c].producer = lastpos;
    tyc__buf_printf(log, "    %%t%d = conv2d + channel bias%s%s\n", c, m.epi_act ? " + " : "",
                    m.epi_act ? tyc__op_name(m.epi_act) : "");
    return 1;
}

static int pass_epilogue(struct tyc__graph *g, struct tyc__buf *log)
{
    int i, fused = 0;
    for (i = 0; i < g->nn; i++) {
        if (!g->n[i].dead && g->n[i].op == OP_CONV2D && g->n[i].epi_bias < 0) {
            fused += conv_epilogue(g, i, log);
            continue;
        }
        struct tyc__node m = g->n[i], *last;
        int c = m.out[0], k, lastpos = i, nabs = 0, r;
        if (m.dead || m.op != OP_MATMUL)
            continue;
        m.op = OP_MATMUL_EPI;
        if (only_consumer(g, c, &k) && g->n[k].op == OP_ADD && g->n[k].in[0] == c &&
            g->n[k].in[1] != c && g->t[g->n[k].in[1]].nd == 1 &&
            g->t[g->n[k].in[1]].numel == (size_t)g->t[c].dim[1]) {
            m.epi_bias = m.nin;
            m.in[m.nin++] = g->n[k].in[1];
            g->n[k].dead = 1;
            c = g->n[k].out[0];
            lastpos = k;
            nabs++;
        }
        if (only_consumer(g, c, &k) && is_act(g->n[k].op) && g->n[k].in[0] == c) {
            m.epi_act = g->n[k].op;
            g->n[k].dead = 1;
            c = g->n[k].out[0];
            lastpos = k;
            nabs++;
        } else if (m.epi_bias >= 0 && (k = act_keeping_pre(g, c)) >= 0) {
            /* bias + activation whose gradient reads the pre-activation (GELU): one kernel
             * writes both */
            m.epi_act = g->n[k].op;
            m.epi_pre = m.nout;
            m.out[m.nout++] = c;
            g->n[k].dead = 1;
            c = g->n[k].out[0];
            lastpos = k;
            nabs++;
        } else if (m.epi_bias < 0 && only_consumer(g, c, &k) && is_act_grad(g->n[k].op) &&
                   g->n[k].in[0] == c && g->n[k].in[1] != c) {
            m.epi_gop = g->n[k].op;
            m.epi_mask = m.nin;
            m.in[m.nin++] = g->n[k].in[1];
            g->n[k].dead = 1;
            c = g->n[k].out[0];
            lastpos = k;
            nabs++;
        }
        m.out[0] = c;
        r = find_colsum(g, c);
        if (r >= 0) {
            m.epi_colsum = m.nout;
            m.out[m.nout++] = g->n[r].out[0];
            g->n[r].dead = 1;
            nabs++;
        }
        if (!nabs)
            continue;
        g->n[i].dead = 1;
        last = &g->n[lastpos];
        *last = m;
        last->dead = 0;
        g->t[c].producer = lastpos;
        if (m.epi_colsum >= 0)
            g->t[m.out[m.epi_colsum]].producer = lastpos;
        if (m.epi_pre)
            g->t[m.out[m.epi_pre]].producer = lastpos;
        tyc__buf_printf(log, "    %%t%d = matmul%s%s%s%s%s%s%s\n", c,
                        m.epi_bias >= 0 ? " + bias" : "", m.epi_act ? " + " : "",
                        m.epi_act ? tyc__op_name(m.epi_act) : "", m.epi_gop ? " + " : "",
                        m.epi_gop ? tyc__op_name(m.epi_gop) : "",
                        m.epi_colsum >= 0 ? " + bias-grad column sum" : "",
                        m.epi_pre ? " (pre-activation kept)" : "");
        fused++;
    }
    return fused;
}

/* ---- softmax cross-entropy fwd+bwd ------------------------------------------------------------
 */
static int pass_xent(struct tyc__graph *g, struct tyc__buf *log)
{
    int i, j, fused = 0;
    for (i = 0; i < g->nn; i++) {
        struct tyc__node *x = &g->n[i], *gd = NULL;
        int r;
        if (x->dead || x->op != OP_XENT)
            continue;
        for (j = i + 1; j < g->nn; j++)
            if (!g->n[j].dead && g->n[j].op == OP_XENT_GRAD && g->n[j].in[0] == x->in[0] &&
                g->n[j].in[1] == x->in[1] &&
                (g->n[j].has_f || g->t[g->n[j].in[2]].kind == TK_CONST)) {
                gd = &g->n[j];
                break;
            }
        if (!gd)
            continue;
        x->op = OP_XENT_FUSED;
        x->f = gd->has_f ? gd->f : g->t[gd->in[2]].cval;
        x->has_f = 1;
        x->out[1] = gd->out[0];
        x->nout = 2;
        g->t[gd->out[0]].producer = i;
        gd->dead = 1;
        r = find_colsum(g, x->out[1]);
        if (r >= 0) {
            x->epi_colsum = 2;
            x->out[2] = g->n[r].out[0];
            x->nout = 3;
            g->t[x->out[2]].producer = i;
            g->n[r].dead = 1;
        }
        tyc__buf_printf(log, "    %%t%d,%%t%d = softmax_xent fwd+bwd%s\n", x->out[0], x->out[1],
                        r >= 0 ? " + bias-grad column sum" : "");
        fused++;
    }
    return fused;
}

/* ---- masks instead of activations ----------------------------------------------------------- *
 * relu_grad(maxpool_grad(dy, x), x) needs x only at each window's argmax, where x equals the
 * pooled output. Rewrite to maxpool_grad_index(relu_grad(dy, pooled), index) with the forward
 * maxpool also writing the argmax index: x then dies after the forward pass. Bitwise the same
 * (same first-maximum choice, same comparison). */
static int pass_masks(struct tyc__graph *g, struct tyc__buf *log)
{
    int i, j, n = 0;
    for (i = 0; i < g->nn; i++) {
        int a, x, pg = -1, mp = -1, k, idx, mt, pooled, dy;
        if (g->n[i].dead || g->n[i].op != OP_RELU_GRAD)
            continue;
        a = g->n[i].in[0];
        x = g->n[i].in[1];
        if (g->t[a].kind != TK_TEMP || !only_consumer(g, a, &k) || k != i)
            continue;
        pg = g->t[a].producer;
        if (pg < 0 || g->n[pg].op != OP_MAXPOOL_GRAD || g->n[pg].in[1] != x)
            continue;
        for (j = 0; j < pg; j++)
            if (!g->n[j].dead && g->n[j].op == OP_MAXPOOL && g->n[j].in[0] == x &&
                g->n[j].stride == g->n[pg].stride)
                mp = j;
        if (mp < 0)
            continue;
        pooled = g->n[mp].out[0];
        dy = g->n[pg].in[0];
        if (g->n[mp].nout == 1) {
            idx = tyc__tensor_new(g, TK_TEMP, 4, g->t[pooled].dim, "pool_index");
            if (idx < 0)
                return n;
            g->n[mp].out[1] = idx;
            g->n[mp].nout = 2;
            g->t[idx].producer = mp;
        }
        idx = g->n[mp].out[1];
        mt = tyc__tensor_new(g, TK_TEMP, 4, g->t[pooled].dim, "relu_grad");
        if (mt < 0)
            return n;
        /* pg's slot: mt = relu_grad(dy, pooled); i's slot: out = maxpool_grad_index(mt, idx) */
        g->n[pg].op = OP_RELU_GRAD;
        g->n[pg].in[0] = dy;
        g->n[pg].in[1] = pooled;
        g->n[pg].out[0] = mt;
        g->t[mt].producer = pg;
        g->t[a].producer = -1;
        g->n[i].op = OP_MAXPOOL_GRAD_IDX;
        g->n[i].in[0] = mt;
        g->n[i].in[1] = idx;
        g->n[i].stride = g->n[mp].stride;
        tyc__buf_printf(log, "    %%t%d: keep pooling index %%t%d and pooled sign, not %%t%d\n",
                        g->n[i].out[0], idx, x);
        n++;
    }
    return n;
}

/* ---- elementwise fusion ---------------------------------------------------------------------- */
struct ewctx {
    int *grp; /* node -> group id (the group's id is its first member) */
};

static size_t node_numel(const struct tyc__graph *g, const struct tyc__node *n)
{
    return g->t[n->out[0]].numel;
}

/* Legal to run group gid at position pos: outside readers of its outputs come after pos, and no
 * node reads a param after the group's ASSIGN of it. */
static int group_legal(const struct tyc__graph *g, const int *grp, int gid, int pos, int newm)
{
    int i, j, k, l;
    for (i = 0; i < g->nn; i++) {
        const struct tyc__node *m = &g->n[i];
        if (m->dead || grp[i] != gid)
            continue;
        for (j = 0; j < m->nout; j++) {
            int t = m->out[j];
            for (k = i + 1; k < g->nn; k++) {
                const struct tyc__node *c = &g->n[k];
                if (c->dead || grp[k] == gid || k == newm)
                    continue;
                for (l = 0; l < c->nin; l++)
                    if (c->in[l] == t && (k < pos || g->t[t].kind == TK_PARAM))
                        return 0;
            }
        }
    }
    return 1;
}

static int build_fused(struct tyc__graph *g, const int *grp, int gid, int lastpos)
{
    struct tyc__node f;
    int i, j, *reg, nm = 0, members[TYC_MAXUOP + 16], ok = 0;
    memset(&f, 0, sizeof(f));
    f.op = OP_FUSED_EW;
    f.epi_bias = f.epi_mask = f.epi_colsum = -1;
    for (i = 0; i <= lastpos; i++)
        if (!g->n[i].dead && grp[i] == gid) {
            if (nm == TYC_MAXUOP + 16)
                return 0;
            members[nm++] = i;
        }
    if (nm < 2 || !(reg = tyc__malloc((size_t)g->nt * sizeof(int))))
        return 0;
    for (i = 0; i < g->nt; i++)
        reg[i] = -1;
    /* external inputs */
    for (i = 0; i < nm; i++) {
        const struct tyc__node *m = &g->n[members[i]];
        for (j = 0; j < m->nin; j++) {
            int t = m->in[j], p = g->t[t].producer;
            if (reg[t] >= 0 || (g->t[t].kind == TK_TEMP && p >= 0 && grp[p] == gid))
                continue;
            if (f.nin == TYC_MAXIN)
                goto out;
            reg[t] = f.nin;
            f.in[f.nin++] = t;
        }
    }
    for (i = 0; i < nm; i++) {
        const struct tyc__node *m = &g->n[members[i]];
        if (m->op == OP_ASSIGN) {
            if (f.nout == TYC_MAXOUT)
                goto out;
            f.outreg[f.nout] = reg[m->in[0]];
            f.out[f.nout++] = m->out[0];
            continue;
        }
        if (f.nuop == TYC_MAXUOP)
            goto out;
        f.uop[f.nuop].op = m->op;
        f.uop[f.nuop].a = reg[m->in[0]];
        f.uop[f.nuop].b = m->nin > 1 ? reg[m->in[1]] : -1;
        f.uop[f.nuop].f = m->f;
        reg[m->out[0]] = f.nin + f.nuop;
        f.nuop++;
    }
    /* temp outputs read outside the group */
    for (i = 0; i < nm; i++) {
        const struct tyc__node *m = &g->n[members[i]];
        int t = m->out[0], k, l, ext = tyc__is_output(g, t);
        if (m->op == OP_ASSIGN)
            continue;
        for (k = 0; k < g->nn && !ext; k++)
            if (!g->n[k].dead && grp[k] != gid)
                for (l = 0; l < g->n[k].nin; l++)
                    ext |= g->n[k].in[l] == t;
        if (!ext)
            continue;
        if (f.nout == TYC_MAXOUT)
            goto out;
        f.outreg[f.nout] = reg[t];
        f.out[f.nout++] = t;
    }
    for (i = 0; i < nm; i++)
        g->n[members[i]].dead = 1;
    g->n[lastpos] = f;
    for (i = 0; i < f.nout; i++)
        if (g->t[f.out[i]].kind == TK_TEMP)
            g->t[f.out[i]].producer = lastpos;
    ok = nm;
out:
    tyc__free(reg);
    return ok;
}

static int pass_ewfuse(struct tyc__graph *g, struct tyc__buf *log)
{
    int *grp = tyc__malloc((size_t)(g->nn + 1) * sizeof(int));
    int *size = tyc__calloc((size_t)(g->nn + 1), sizeof(int));
    int i, j, k, kernels = 0, absorbed = 0;
    if (!grp || !size) {
        tyc__free(grp);
        tyc__free(size);
        return 0;
    }
    for (i = 0; i < g->nn; i++)
        grp[i] = -1;
    for (i = 0; i < g->nn; i++) {
        struct tyc__node *n = &g->n[i];
        int cand[TYC_MAXIN], nc = 0, total = 1;
        if (n->dead || !tyc__op_is_ew(n->op))
            continue;
        for (j = 0; j < n->nin; j++) {
            int t = n->in[j], p = g->t[t].kind == TK_TEMP ? g->t[t].producer : -1, dup = 0;
            if (p < 0 || grp[p] < 0 || node_numel(g, &g->n[p]) != node_numel(g, n))
                continue;
            for (k = 0; k < nc; k++)
                dup |= cand[k] == grp[p];
            if (!dup && group_legal(g, grp, grp[p], i, i) && total + size[grp[p]] <= TYC_MAXUOP) {
                cand[nc++] = grp[p];
                total += size[grp[p]];
            }
        }
        grp[i] = nc ? cand[0] : i;
        for (k = 1; k < nc; k++)
            for (j = 0; j < i; j++)
                if (grp[j] == cand[k])
                    grp[j] = cand[0];
        size[grp[i]] = total;
    }
    /* build each group at the slot of its last member (met first when walking backwards) */
    for (i = g->nn - 1; i >= 0; i--) {
        int gid = grp[i], n;
        if (gid < 0 || g->n[i].dead)
            continue;
        n = build_fused(g, grp, gid, i);
        for (j = 0; j <= i; j++)
            if (grp[j] == gid)
                grp[j] = -1;
        if (n > 0) {
            kernels++;
            absorbed += n;
            tyc__buf_printf(log,
                            "    fused %d elementwise ops into one kernel (%d uops, %d in, "
                            "%d out)\n",
                            n, g->n[i].nuop, g->n[i].nin, g->n[i].nout);
        }
    }
    tyc__free(grp);
    tyc__free(size);
    return absorbed - kernels;
}

/* ---- schedule: each optimizer update right after the last node it depends on ----------------
 * An update node (one that writes a parameter: the fused Adam/SGD step of ewfuse) moves up to
 * just after the last earlier node it conflicts with: one that produces a tensor it reads, reads
 * a tensor it writes (the parameter's last use in the backward pass) or writes a tensor it reads
 * or writes. Its gradient is then dead before the next weight gradient is made (memplan reuses
 * the buffer) and is read while still in cache. Only independent nodes change places, so the
 * results are the same bits. Returns the number of updates that moved. */
static int touches(const struct tyc__node *n, int t, int as_out)
{
    int j;
    if (as_out) {
        for (j = 0; j < n->nout; j++)
            if (n->out[j] == t)
                return 1;
        return 0;
    }
    for (j = 0; j < n->nin; j++)
        if (n->in[j] == t)
            return 1;
    return 0;
}

static int conflicts(const struct tyc__node *early, const struct tyc__node *u)
{
    int j;
    for (j = 0; j < u->nin; j++)
        if (touches(early, u->in[j], 1))
            return 1;
    for (j = 0; j < u->nout; j++)
        if (touches(early, u->out[j], 0) || touches(early, u->out[j], 1))
            return 1;
    return 0;
}

struct sched_key {
    int after, upd, idx;
};

static int sched_cmp(const void *pa, const void *pb)
{
    const struct sched_key *a = pa, *b = pb;
    if (a->after != b->after)
        return a->after < b->after ? -1 : 1;
    if (a->upd != b->upd)
        return a->upd < b->upd ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int pass_schedule(struct tyc__graph *g)
{
    struct sched_key *key = tyc__calloc((size_t)(g->nn > 0 ? g->nn : 1), sizeof(*key));
    struct tyc__node *tmp = tyc__calloc((size_t)(g->nn > 0 ? g->nn : 1), sizeof(*tmp));
    int i, j, k, moved = 0;
    if (!key || !tmp) {
        tyc__free(key);
        tyc__free(tmp);
        return 0;
    }
    for (i = 0; i < g->nn; i++) {
        key[i].idx = i;
        key[i].after = i;
        if (!writes_param(g, &g->n[i]))
            continue;
        key[i].upd = 1;
        key[i].after = -1;
        for (j = i - 1; j >= 0; j--)
            if (conflicts(&g->n[j], &g->n[i])) {
                key[i].after = j;
                break;
            }
        moved += key[i].after < i - 1;
    }
    qsort(key, (size_t)g->nn, sizeof(*key), sched_cmp);
    for (i = 0; i < g->nn; i++)
        tmp[i] = g->n[key[i].idx];
    memcpy(g->n, tmp, (size_t)g->nn * sizeof(*tmp));
    for (i = 0; i < g->nn; i++)
        for (k = 0; k < g->n[i].nout; k++)
            if (g->t[g->n[i].out[k]].kind == TK_TEMP)
                g->t[g->n[i].out[k]].producer = i;
    tyc__free(key);
    tyc__free(tmp);
    return moved;
}

/* ---- memory planning ------------------------------------------------------------------------- */
#define TYC_ALIGN 64

static size_t align_up(size_t n)
{
    return (n + TYC_ALIGN - 1) & ~(size_t)(TYC_ALIGN - 1);
}

size_t tyc__plan_memory(struct tyc__graph *g, int arena)
{
    int i, j, k;
    size_t total = 0;
    for (i = 0; i < g->nt; i++) {
        g->t[i].def = -1;
        g->t[i].last = -1;
        g->t[i].off = 0;
    }
    for (i = 0; i < g->nn; i++) {
        const struct tyc__node *n = &g->n[i];
        for (j = 0; j < n->nout; j++)
            if (g->t[n->out[j]].kind == TK_TEMP) {
                g->t[n->out[j]].def = i;
                g->t[n->out[j]].last = i;
            }
        for (j = 0; j < n->nin; j++)
            if (g->t[n->in[j]].kind == TK_TEMP && g->t[n->in[j]].last < i)
                g->t[n->in[j]].last = i;
    }
    for (i = 0; i < g->nout; i++)
        if (g->t[g->outputs[i]].kind == TK_TEMP)
            g->t[g->outputs[i]].last = g->nn;
    for (i = 0; i < g->nt; i++) {
        struct tyc__tensor *t = &g->t[i];
        size_t sz = align_up(t->numel * sizeof(float)), off = 0;
        int moved = 1;
        if (t->kind != TK_TEMP || t->def < 0)
            continue;
        if (!arena) {
            t->off = total;
            total += sz;
            continue;
        }
        /* lowest offset not overlapping any placed tensor whose live range overlaps */
        while (moved) {
            moved = 0;
            for (k = 0; k < i; k++) {
                const struct tyc__tensor *o = &g->t[k];
                if (o->kind != TK_TEMP || o->def < 0 || o->last < t->def || o->def > t->last)
                    continue;
                if (off < o->off + align_up(o->numel * sizeof(float)) && o->off < off + sz) {
                    off = o->off + align_up(o->numel * sizeof(float));
                    moved = 1;
                }
            }
        }
        t->off = off;
        if (off + sz > total)
            total = off + sz;
    }
    return total;
}

/* ---- pipeline -------------------------------------------------------------------------------- */
void tyc__run_passes(struct tyc__graph *g, unsigned passes, struct tyc__buf *log)
{
    int before = live_count(g), n, consts;
    tyc__buf_printf(log, "pass pipeline: %d primitive nodes\n", before);
#define RUN(bit, name, expr, fmt)                                                                  \
    do {                                                                                           \
        if (!(passes & (bit))) {                                                                   \
            tyc__buf_printf(log, "%-9s off\n", name);                                              \
            break;                                                                                 \
        }                                                                                          \
        n = (expr);                                                                                \
        tyc__graph_compact(g);                                                                     \
        tyc__buf_printf(log, "%-9s " fmt " (%d nodes left)\n", name, n, g->nn);                    \
    } while (0)
    RUN(TYC_PASS_DCE, "dce", pass_dce(g), "removed %d dead nodes");
    RUN(TYC_PASS_SIMPLIFY, "simplify", pass_simplify(g, log), "applied %d rewrites");
    consts = 0;
    RUN(TYC_PASS_CSE, "cse", pass_cse(g, &consts), "merged %d duplicate nodes");
    if (passes & TYC_PASS_CSE)
        tyc__buf_printf(log, "          merged %d duplicate constants\n", consts);
    RUN(TYC_PASS_XENT, "xent", pass_xent(g, log), "fused %d softmax-xent pairs");
    RUN(TYC_PASS_EPILOGUE, "epilogue", pass_epilogue(g, log), "fused %d matmul epilogues");
    RUN(TYC_PASS_MASKS, "masks", pass_masks(g, log), "replaced %d saved activations");
    RUN(TYC_PASS_EWFUSE, "ewfuse", pass_ewfuse(g, log), "saved %d kernels");
    if (passes & TYC_PASS_DCE) {
        n = pass_dce(g);
        tyc__graph_compact(g);
    }
    RUN(TYC_PASS_MEMPLAN, "schedule", pass_schedule(g), "moved %d optimizer updates up");
#undef RUN
    tyc__buf_printf(log, "result: %d kernels (from %d)\n", g->nn, before);
}
