/* optim.c - the training graph after autodiff: fp16 loss scaling and the SGD-with-momentum and
 * Adam updates, built from primitive graph ops (their state in session slots). */
#include "model_int.h"

/* fp16 loss scaling (CUDA only; no-ops on the CPU): finite checks over every gradient (chained,
 * 15 per node), then each gradient divided by the scale before the optimizer reads it. The
 * flag is left as the last graph output for the scale update appended after the optimizer. */
int tyc__amp_nodes(struct tyc__graph *g, int *grads, int np)
{
    int i = 0, flag = -1, one = 1;
    while (i < np) {
        int in[TYC_MAXIN], nin = 0;
        if (flag >= 0)
            in[nin++] = flag;
        while (i < np && nin < TYC_MAXIN)
            in[nin++] = grads[i++];
        flag = tyc__op1(g, OP_AMP_CHECK, nin, in, 1, &one);
        if (flag < 0)
            return -1;
    }
    for (i = 0; i < np; i++) {
        int in[2] = {grads[i], flag};
        grads[i] = tyc__op1(g, OP_AMP_UNSCALE, 2, in, g->t[grads[i]].nd, g->t[grads[i]].dim);
        if (grads[i] < 0)
            return -1;
    }
    g->outputs[g->nout++] = flag;
    return 0;
}

static int assign(struct tyc__graph *g, int dst, int val)
{
    return tyc__node_add(g, OP_ASSIGN, 1, &val, 1, &dst) < 0 ? -1 : 0;
}

int tyc__build_optimizer(struct tyc__graph *g, struct tyc_session *s, int pt, int grad, int state0)
{
    const struct tyc_options *o = &s->o;
    if (o->optimizer == TYC_SGD) {
        int upd = grad;
        if (o->momentum != 0.0f) {
            int buf = tyc__param_tensor(g, s, state0);
            int nb = tyc__ew(g, OP_ADD, tyc__ew(g, OP_MUL, buf, tyc__const(g, o->momentum)), grad);
            upd = nb;
            if (assign(g, buf, nb) < 0)
                return -1;
        }
        return assign(g, pt, tyc__ew(g, OP_SUB, pt, tyc__ew(g, OP_MUL, upd, tyc__const(g, o->lr))));
    } else {
        int one = 1;
        int mt = tyc__param_tensor(g, s, state0), vt = tyc__param_tensor(g, s, state0 + 1);
        int c1 = tyc__input_tensor(g, SLOT_C1, 1, &one, "adam_c1");
        int c2 = tyc__input_tensor(g, SLOT_C2, 1, &one, "adam_c2");
        int m1 = tyc__ew(g, OP_ADD, tyc__ew(g, OP_MUL, mt, tyc__const(g, o->beta1)),
                         tyc__ew(g, OP_MUL, grad, tyc__const(g, 1.0f - o->beta1)));
        int v1 = tyc__ew(
            g, OP_ADD, tyc__ew(g, OP_MUL, vt, tyc__const(g, o->beta2)),
            tyc__ew(g, OP_MUL, tyc__ew(g, OP_MUL, grad, grad), tyc__const(g, 1.0f - o->beta2)));
        int mh = tyc__ew(g, OP_MUL, m1, c1), vh = tyc__ew(g, OP_MUL, v1, c2);
        int den = tyc__ew(g, OP_ADD, tyc__ew(g, OP_SQRT, vh, -1), tyc__const(g, o->eps));
        int st = tyc__ew(g, OP_MUL, tyc__ew(g, OP_DIV, mh, den), tyc__const(g, o->lr));
        if (assign(g, mt, m1) < 0 || assign(g, vt, v1) < 0)
            return -1;
        return assign(g, pt, tyc__ew(g, OP_SUB, pt, st));
    }
}
