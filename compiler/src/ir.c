/* ir.c - the graph IR: tensors, nodes, construction helpers, consumers, compaction and the text
 * dump. Invariant: nodes are in topological order by index (see tyc_int.h). */
#include "tyc_int.h"
#include <stdio.h>
#include <string.h>

static const char *op_names[] = {
#define TYC_X_NAME(n, s) s,
    TYC_OP_MAP(TYC_X_NAME)
#undef TYC_X_NAME
};

const char *tyc__op_name(int op)
{
    return op >= 0 && op < OP__COUNT ? op_names[op] : "?";
}

int tyc__op_is_ew(int op)
{
    switch (op) {
    case OP_ADD:
    case OP_SUB:
    case OP_MUL:
    case OP_DIV:
    case OP_SQRT:
    case OP_RELU:
    case OP_GELU:
    case OP_TANH:
    case OP_SIGMOID:
    case OP_RELU_GRAD:
    case OP_GELU_GRAD:
    case OP_TANH_GRAD:
    case OP_SIGMOID_GRAD:
    case OP_SCALE:
    case OP_COPY:
    case OP_ASSIGN:
        return 1;
    }
    return 0;
}

int tyc__graph_init(struct tyc__graph *g)
{
    memset(g, 0, sizeof(*g));
    return 0;
}

void tyc__graph_cleanup(struct tyc__graph *g)
{
    tyc__safefree(g->t);
    tyc__safefree(g->n);
    g->nt = g->nn = g->capt = g->capn = 0;
}

int tyc__tensor_new(struct tyc__graph *g, int kind, int nd, const int *dim, const char *name)
{
    struct tyc__tensor *t;
    int i, d[TYC_MAXDIM];
    if (g->failed || nd < 0 || nd > TYC_MAXDIM)
        return -1;
    for (i = 0; i < nd; i++)
        d[i] = dim[i]; /* dim may point into g->t, which realloc may move */
    if (g->nt == g->capt) {
        int ncap = g->capt ? g->capt * 2 : 64;
        struct tyc__tensor *nt = tyc__realloc(g->t, (size_t)ncap * sizeof(*nt));
        if (!nt) {
            g->failed = 1;
            return -1;
        }
        g->t = nt;
        g->capt = ncap;
    }
    t = &g->t[g->nt];
    memset(t, 0, sizeof(*t));
    t->kind = kind;
    t->nd = nd;
    t->numel = 1;
    for (i = 0; i < nd; i++) {
        t->dim[i] = d[i];
        t->numel *= (size_t)d[i];
    }
    t->producer = -1;
    t->alias = -1;
    t->slot = -1;
    snprintf(t->name, sizeof(t->name), "%s", name ? name : "");
    return g->nt++;
}

int tyc__const(struct tyc__graph *g, float v)
{
    int one = 1;
    int id = tyc__tensor_new(g, TK_CONST, 1, &one, "const");
    if (id >= 0)
        g->t[id].cval = v;
    return id;
}

int tyc__node_add(struct tyc__graph *g, int op, int nin, const int *in, int nout, const int *out)
{
    struct tyc__node *n;
    int i;
    if (g->failed)
        return -1;
    for (i = 0; i < nin; i++)
        if (in[i] < 0) {
            g->failed = 1;
            return -1;
        }
    if (g->nn == g->capn) {
        int ncap = g->capn ? g->capn * 2 : 64;
        struct tyc__node *nn = tyc__realloc(g->n, (size_t)ncap * sizeof(*nn));
        if (!nn) {
            g->failed = 1;
            return -1;
        }
        g->n = nn;
        g->capn = ncap;
    }
    n = &g->n[g->nn];
    memset(n, 0, sizeof(*n));
    n->op = op;
    n->nin = nin;
    n->nout = nout;
    memcpy(n->in, in, (size_t)nin * sizeof(int));
    memcpy(n->out, out, (size_t)nout * sizeof(int));
    n->epi_bias = n->epi_mask = n->epi_colsum = -1;
    for (i = 0; i < nout; i++)
        if (g->t[out[i]].kind == TK_TEMP)
            g->t[out[i]].producer = g->nn;
    return g->nn++;
}

int tyc__op1(struct tyc__graph *g, int op, int nin, const int *in, int nd, const int *dim)
{
    int t = tyc__tensor_new(g, TK_TEMP, nd, dim, tyc__op_name(op));
    if (t < 0 || tyc__node_add(g, op, nin, in, 1, &t) < 0)
        return -1;
    return t;
}

int tyc__ew(struct tyc__graph *g, int op, int a, int b)
{
    int in[2] = {a, b};
    if (a < 0 || (b < 0 && op != OP_RELU && op != OP_GELU && op != OP_TANH && op != OP_SIGMOID &&
                  op != OP_SQRT && op != OP_SCALE && op != OP_COPY)) {
        g->failed = 1;
        return -1;
    }
    return tyc__op1(g, op, b < 0 ? 1 : 2, in, g->t[a].nd, g->t[a].dim);
}

int tyc__matmul(struct tyc__graph *g, int a, int b, int ta, int tb)
{
    int in[2] = {a, b}, dim[2], t, n;
    if (a < 0 || b < 0)
        return -1;
    dim[0] = ta ? g->t[a].dim[1] : g->t[a].dim[0];
    dim[1] = tb ? g->t[b].dim[0] : g->t[b].dim[1];
    t = tyc__tensor_new(g, TK_TEMP, 2, dim, "matmul");
    if (t < 0)
        return -1;
    n = tyc__node_add(g, OP_MATMUL, 2, in, 1, &t);
    if (n < 0)
        return -1;
    g->n[n].ta = ta;
    g->n[n].tb = tb;
    return t;
}

int tyc__conv2d(struct tyc__graph *g, int x, int w, int stride, int pad)
{
    int in[2] = {x, w}, dim[4], t, n;
    if (x < 0 || w < 0 || g->t[x].nd != 4 || g->t[w].nd != 4 || g->t[x].dim[1] != g->t[w].dim[1])
        return -1;
    dim[0] = g->t[x].dim[0];
    dim[1] = g->t[w].dim[0];
    dim[2] = (g->t[x].dim[2] + 2 * pad - g->t[w].dim[2]) / stride + 1;
    dim[3] = (g->t[x].dim[3] + 2 * pad - g->t[w].dim[3]) / stride + 1;
    if (dim[2] < 1 || dim[3] < 1)
        return -1;
    t = tyc__tensor_new(g, TK_TEMP, 4, dim, "conv2d");
    if (t < 0 || (n = tyc__node_add(g, OP_CONV2D, 2, in, 1, &t)) < 0)
        return -1;
    g->n[n].stride = stride;
    g->n[n].pad = pad;
    return t;
}

int tyc__maxpool(struct tyc__graph *g, int x, int k)
{
    int dim[4], t, n;
    if (x < 0 || g->t[x].nd != 4 || k < 1 || g->t[x].dim[2] < k || g->t[x].dim[3] < k)
        return -1;
    dim[0] = g->t[x].dim[0];
    dim[1] = g->t[x].dim[1];
    dim[2] = g->t[x].dim[2] / k;
    dim[3] = g->t[x].dim[3] / k;
    t = tyc__tensor_new(g, TK_TEMP, 4, dim, "maxpool");
    if (t < 0 || (n = tyc__node_add(g, OP_MAXPOOL, 1, &x, 1, &t)) < 0)
        return -1;
    g->n[n].stride = k;
    return t;
}

int tyc__is_output(const struct tyc__graph *g, int tensor)
{
    int i;
    for (i = 0; i < g->nout; i++)
        if (g->outputs[i] == tensor)
            return 1;
    return 0;
}

int tyc__consumers(const struct tyc__graph *g, int tensor, int *first, int *count)
{
    int i, j, c = 0, f = -1;
    for (i = 0; i < g->nn; i++) {
        if (g->n[i].dead)
            continue;
        for (j = 0; j < g->n[i].nin; j++)
            if (g->n[i].in[j] == tensor) {
                if (f < 0)
                    f = i;
                c++;
                break;
            }
    }
    if (first)
        *first = f;
    if (count)
        *count = c;
    return c;
}

void tyc__graph_compact(struct tyc__graph *g)
{
    int i, j = 0, k;
    for (i = 0; i < g->nn; i++) {
        if (g->n[i].dead)
            continue;
        if (i != j)
            g->n[j] = g->n[i];
        for (k = 0; k < g->n[j].nout; k++)
            if (g->t[g->n[j].out[k]].kind == TK_TEMP)
                g->t[g->n[j].out[k]].producer = j;
        j++;
    }
    g->nn = j;
}

static void shape(const struct tyc__tensor *t, char *s, size_t n)
{
    int i;
    size_t o = 0;
    o += (size_t)snprintf(s + o, n - o, "[");
    for (i = 0; i < t->nd && o < n; i++)
        o += (size_t)snprintf(s + o, n - o, i ? ",%d" : "%d", t->dim[i]);
    if (o < n)
        snprintf(s + o, n - o, "]");
}

static void tname(const struct tyc__graph *g, int id, char *s, size_t n)
{
    const struct tyc__tensor *t = &g->t[id];
    switch (t->kind) {
    case TK_CONST:
        snprintf(s, n, "%g", (double)t->cval);
        break;
    case TK_PARAM:
    case TK_INPUT:
        snprintf(s, n, "%%%s", t->name);
        break;
    default:
        snprintf(s, n, "%%t%d", id);
    }
}

void tyc__graph_dump(const struct tyc__graph *g, struct tyc__buf *b)
{
    int i, j;
    char s1[64], s2[64];
    for (i = 0; i < g->nn; i++) {
        const struct tyc__node *n = &g->n[i];
        if (n->dead)
            continue;
        tyc__buf_printf(b, "  %3d: ", i);
        for (j = 0; j < n->nout; j++) {
            tname(g, n->out[j], s1, sizeof(s1));
            shape(&g->t[n->out[j]], s2, sizeof(s2));
            tyc__buf_printf(b, "%s%s%s", j ? ", " : "", s1, s2);
        }
        tyc__buf_printf(b, " = %s(", tyc__op_name(n->op));
        for (j = 0; j < n->nin; j++) {
            tname(g, n->in[j], s1, sizeof(s1));
            tyc__buf_printf(b, "%s%s", j ? ", " : "", s1);
        }
        tyc__buf_printf(b, ")");
        if (n->op == OP_MATMUL || n->op == OP_MATMUL_EPI)
            tyc__buf_printf(b, " ta=%d tb=%d", n->ta, n->tb);
        if (n->op >= OP_CONV2D && n->op <= OP_CONV2D_DW)
            tyc__buf_printf(b, " stride=%d pad=%d", n->stride, n->pad);
        if (n->op == OP_CONV2D && n->epi_bias >= 0)
            tyc__buf_printf(b, " bias=%d act=%s", n->epi_bias,
                            n->epi_act ? tyc__op_name(n->epi_act) : "none");
        if (n->op == OP_MAXPOOL || n->op == OP_MAXPOOL_GRAD)
            tyc__buf_printf(b, " size=%d", n->stride);
        if (n->op == OP_MATMUL_EPI)
            tyc__buf_printf(b, " bias=%d act=%s grad=%s saved=%d colsum=%d pre=%d", n->epi_bias,
                            n->epi_act ? tyc__op_name(n->epi_act) : "none",
                            n->epi_gop ? tyc__op_name(n->epi_gop) : "none", n->epi_mask,
                            n->epi_colsum, n->epi_pre);
        if (n->op == OP_SCALE || (n->op == OP_XENT_GRAD && n->has_f))
            tyc__buf_printf(b, " f=%g", (double)n->f);
        if (n->op == OP_FUSED_EW) {
            tyc__buf_printf(b, " {");
            for (j = 0; j < n->nuop; j++) {
                if (n->uop[j].b >= 0)
                    tyc__buf_printf(b, "%s r%d=%s(r%d,r%d)", j ? ";" : "", n->nin + j,
                                    tyc__op_name(n->uop[j].op), n->uop[j].a, n->uop[j].b);
                else
                    tyc__buf_printf(b, "%s r%d=%s(r%d)", j ? ";" : "", n->nin + j,
                                    tyc__op_name(n->uop[j].op), n->uop[j].a);
            }
            tyc__buf_printf(b, " }");
        }
        if (g->t[n->out[0]].kind == TK_TEMP && g->t[n->out[0]].last >= 0)
            tyc__buf_printf(b, "  @%zu", g->t[n->out[0]].off);
        tyc__buf_printf(b, "\n");
    }
}
