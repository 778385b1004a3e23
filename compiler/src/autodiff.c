/* autodiff.c - reverse-mode autodiff on the unfused primitive graph (before any pass).
 * Only tensors that depend on a parameter get gradients (as PyTorch's requires_grad), so the
 * gradient wrt the input batch is never built. Gradients of a tensor with several consumers are
 * summed with ADD in reverse node order. */
#include "tyc_int.h"
#include <string.h>

static int bcast_grad(struct tyc__graph *g, int dy, int b)
{
    const struct tyc__tensor *tb = &g->t[b], *ty = &g->t[dy];
    int dim[1];
    if (tb->numel == ty->numel)
        return dy;
    if (tb->nd == 1 && ty->nd >= 1 && tb->dim[0] == ty->dim[ty->nd - 1]) {
        dim[0] = tb->dim[0];
        return tyc__op1(g, OP_REDUCE_COLS, 1, &dy, 1, dim);
    }
    g->failed = 1; /* scalar-broadcast params are not produced by the model builder */
    return -1;
}

static int acc(struct tyc__graph *g, int *grad, int t, int d)
{
    if (d < 0)
        return -1;
    grad[t] = grad[t] < 0 ? d : tyc__ew(g, OP_ADD, grad[t], d);
    return grad[t] < 0 ? -1 : 0;
}

/* Appends the backward nodes of forward node n (a copy: g->n may move while nodes are appended)
   whose output y has the gradient dy, accumulating into grad the inputs that need one (rg).
   0, or -1 for an op without a gradient rule or a failed append. */
static int backward_node(struct tyc__graph *g, const struct tyc__node *n, int y, int dy, int *grad,
                         const char *rg)
{
    int a = n->in[0], b = n->nin > 1 ? n->in[1] : -1;

    switch (n->op) {
    case OP_MATMUL:
        if (n->ta || n->tb)
            return -1;
        if (rg[a] && acc(g, grad, a, tyc__matmul(g, dy, b, 0, 1)) < 0)
            return -1;
        if (rg[b] && acc(g, grad, b, tyc__matmul(g, a, dy, 1, 0)) < 0)
            return -1;
        break;
    case OP_ADD:
    case OP_SUB:
        if (rg[a] && acc(g, grad, a, dy) < 0)
            return -1;
        if (rg[b]) {
            int d = n->op == OP_SUB ? tyc__ew(g, OP_SCALE, dy, -1) : dy;
            if (d >= 0 && n->op == OP_SUB)
                g->n[g->nn - 1].f = -1.0f;
            if (acc(g, grad, b, bcast_grad(g, d, b)) < 0)
                return -1;
        }
        break;
    case OP_MUL:
        if (rg[a] && acc(g, grad, a, tyc__ew(g, OP_MUL, dy, b)) < 0)
            return -1;
        if (rg[b] && acc(g, grad, b, bcast_grad(g, tyc__ew(g, OP_MUL, dy, a), b)) < 0)
            return -1;
        break;
    case OP_RELU:
        if (acc(g, grad, a, tyc__ew(g, OP_RELU_GRAD, dy, y)) < 0)
            return -1;
        break;
    case OP_TANH:
        if (acc(g, grad, a, tyc__ew(g, OP_TANH_GRAD, dy, y)) < 0)
            return -1;
        break;
    case OP_SIGMOID:
        if (acc(g, grad, a, tyc__ew(g, OP_SIGMOID_GRAD, dy, y)) < 0)
            return -1;
        break;
    case OP_GELU:
        if (acc(g, grad, a, tyc__ew(g, OP_GELU_GRAD, dy, a)) < 0)
            return -1;
        break;
    case OP_SCALE: {
        int d = tyc__ew(g, OP_SCALE, dy, -1);
        if (d >= 0)
            g->n[g->nn - 1].f = n->f;
        if (acc(g, grad, a, d) < 0)
            return -1;
        break;
    }
    case OP_COPY:
    case OP_RESHAPE: {
        int d = tyc__op1(g, OP_RESHAPE, 1, &dy, g->t[a].nd, g->t[a].dim);
        if (acc(g, grad, a, d) < 0)
            return -1;
        break;
    }
    case OP_CONV2D: {
        int in2[2], d;
        if (rg[a]) {
            in2[0] = dy;
            in2[1] = b;
            d = tyc__op1(g, OP_CONV2D_DX, 2, in2, g->t[a].nd, g->t[a].dim);
            if (d >= 0) {
                g->n[g->nn - 1].stride = n->stride;
                g->n[g->nn - 1].pad = n->pad;
            }
            if (acc(g, grad, a, d) < 0)
                return -1;
        }
        if (rg[b]) {
            in2[0] = a;
            in2[1] = dy;
            d = tyc__op1(g, OP_CONV2D_DW, 2, in2, g->t[b].nd, g->t[b].dim);
            if (d >= 0) {
                g->n[g->nn - 1].stride = n->stride;
                g->n[g->nn - 1].pad = n->pad;
            }
            if (acc(g, grad, b, d) < 0)
                return -1;
        }
        break;
    }
    case OP_BIAS_CHAN: {
        int c = g->t[b].dim[0];
        if (rg[a] && acc(g, grad, a, dy) < 0)
            return -1;
        if (rg[b] && acc(g, grad, b, tyc__op1(g, OP_REDUCE_CHAN, 1, &dy, 1, &c)) < 0)
            return -1;
        break;
    }
    case OP_MAXPOOL: {
        int in2[2] = {dy, a}, d = tyc__op1(g, OP_MAXPOOL_GRAD, 2, in2, 4, g->t[a].dim);
        if (d >= 0)
            g->n[g->nn - 1].stride = n->stride;
        if (acc(g, grad, a, d) < 0)
            return -1;
        break;
    }
    case OP_XENT: {
        int in[3] = {a, b, dy};
        if (rg[a] && acc(g, grad, a, tyc__op1(g, OP_XENT_GRAD, 3, in, g->t[a].nd, g->t[a].dim)) < 0)
            return -1;
        break;
    }
    default: {
        int din[TYC_MAXIN], k;
        if (!tyc__tf_is_op(n->op) || tyc__tf_backward(g, n, dy, din) < 0)
            return -1; /* op without a gradient rule */
        for (k = 0; k < n->nin; k++)
            if (din[k] >= 0 && rg[n->in[k]] && acc(g, grad, n->in[k], din[k]) < 0)
                return -1;
        break;
    }
    }
    return 0;
}

int tyc__autodiff(struct tyc__graph *g, int loss, const int *params, int np, int *grads)
{
    int nfwd = g->nn, i, j, rc = -TYC_EINVAL;
    char *rg = tyc__calloc((size_t)g->nt, 1);
    int *grad = tyc__malloc((size_t)g->nt * sizeof(int)); /* indexed by forward tensors only */
    if (!rg || !grad) {
        rc = -TYC_ENOMEM;
        goto fail;
    }
    for (i = 0; i < g->nt; i++)
        grad[i] = -1;
    for (i = 0; i < np; i++)
        rg[params[i]] = 1;
    for (i = 0; i < nfwd; i++) {
        const struct tyc__node *n = &g->n[i];
        int any = 0;
        for (j = 0; j < n->nin; j++)
            any |= rg[n->in[j]];
        for (j = 0; j < n->nout; j++)
            rg[n->out[j]] = (char)any;
    }
    if (!rg[loss])
        goto fail;
    grad[loss] = tyc__const(g, 1.0f);
    for (i = nfwd - 1; i >= 0; i--) {
        struct tyc__node n = g->n[i]; /* copy: g->n may move while we append */
        int y = n.out[0], dy = grad[y];
        if (dy < 0 || !rg[y])
            continue;
        if (backward_node(g, &n, y, dy, grad, rg) < 0)
            goto fail;
        if (g->failed)
            goto fail;
    }
    for (i = 0; i < np; i++) {
        if (grad[params[i]] < 0)
            goto fail;
        grads[i] = grad[params[i]];
    }
    rc = 0;
fail:
    tyc__free(rg);
    tyc__free(grad);
    return rc;
}
