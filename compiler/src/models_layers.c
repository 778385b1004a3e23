/* models_layers.c - layered models (dense, conv2d, maxpool2d, flatten): their spec fields and
 * its checks (shapes followed layer by layer), Glorot/He-uniform initialisation and the forward
 * graph. */
#include "model_int.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static int parse_act(const char *s)
{
    if (!s || strcmp(s, "none") == 0 || strcmp(s, "linear") == 0)
        return 0;
    if (strcmp(s, "relu") == 0)
        return OP_RELU;
    if (strcmp(s, "gelu") == 0)
        return OP_GELU;
    if (strcmp(s, "tanh") == 0)
        return OP_TANH;
    if (strcmp(s, "sigmoid") == 0)
        return OP_SIGMOID;
    return -1;
}

static int pos_int(const struct tyc__json *j, int max)
{
    if (!j || j->type != TJ_NUM || j->num != floor(j->num) || j->num < 1 || j->num > max)
        return -1;
    return (int)j->num;
}

/* 'input': a positive integer, or [N], [H, W] or [C, H, W]. 0, or -1 with err. */
static int parse_input(struct tyc_model *m, const struct tyc__json *v, struct tyc_err *err)
{
    m->input = 1;
    if (v && v->type == TJ_ARR && v->nkids >= 1 && v->nkids <= 3) {
        for (int i = 0; i < v->nkids; i++) {
            int d = pos_int(&v->kids[i], 1 << 16);
            if (d < 0 || m->input > (1 << 24) / d) {
                tyc__err_set(err, TYC_EMODEL, "input", "'input' must list positive dimensions");
                return -1;
            }
            m->input *= d;
            m->in_dims[i] = d;
        }
        m->in_nd = v->nkids;
    } else if ((m->input = pos_int(v, 1 << 24)) < 0) {
        tyc__err_set(err, TYC_EMODEL, "input",
                     "'input' must be a positive integer or an array of dimensions");
        return -1;
    }
    return 0;
}

/* The output shape of the layers parsed so far: C x H x W, and nd4 (0 before any layer, 1
   after a spatial layer, 2 once flat). */
struct shape {
    int C, H, W, nd4;
};

/* A conv2d or maxpool2d layer (t: its type) at layers[i] ("field"); updates the shape. */
static int parse_spatial(struct tyc_model *m, const struct tyc__json *l, const struct tyc__json *t,
                         int i, const char *field, struct shape *sh, struct tyc_err *err)
{
    const struct tyc__json *pj = tyc__json_get(l, "padding");
    struct layer *ly = &m->layers[i];

    if (sh->nd4 == 2) {
        tyc__err_set(err, TYC_EMODEL, field, "'%s' is a %s after a dense or flatten layer", field,
                     t->str);
        return -1;
    }
    if (m->in_nd < 2) {
        tyc__err_set(err, TYC_EMODEL, "input", "'input' must be [H, W] or [C, H, W] for %s layers",
                     t->str);
        return -1;
    }
    sh->nd4 = 1;
    if (t->str[0] == 'c') {
        ly->type = L_CONV;
        ly->units = pos_int(tyc__json_get(l, "filters"), 4096);
        ly->kernel = pos_int(tyc__json_get(l, "kernel"), 15);
        ly->stride = tyc__json_get(l, "stride") ? pos_int(tyc__json_get(l, "stride"), 8) : 1;
        if (pj && pj->type == TJ_STR && strcmp(pj->str, "same") == 0)
            ly->pad = ly->kernel / 2;
        else if (pj && pj->type == TJ_NUM && pj->num >= 0 && pj->num <= 8 &&
                 pj->num == floor(pj->num))
            ly->pad = (int)pj->num;
        else if (pj && !(pj->type == TJ_STR && strcmp(pj->str, "valid") == 0)) {
            tyc__err_set(err, TYC_EMODEL, field, "'%s.padding' must be 'same', 'valid' or 0..8",
                         field);
            return -1;
        }
        if (ly->units < 0 || ly->kernel < 0 || ly->stride < 0) {
            tyc__err_set(err, TYC_EMODEL, field,
                         "'%s' needs 'filters' (1..4096), 'kernel' (1..15) and an "
                         "optional 'stride' (1..8)",
                         field);
            return -1;
        }
        sh->H = (sh->H + 2 * ly->pad - ly->kernel) / ly->stride + 1;
        sh->W = (sh->W + 2 * ly->pad - ly->kernel) / ly->stride + 1;
        sh->C = ly->units;
    } else {
        ly->type = L_POOL;
        ly->size = tyc__json_get(l, "size") ? pos_int(tyc__json_get(l, "size"), 8) : 2;
        if (ly->size < 0 || ly->size > sh->H || ly->size > sh->W) {
            tyc__err_set(err, TYC_EMODEL, field, "'%s.size' must be 1..8 and fit the %dx%d input",
                         field, sh->H, sh->W);
            return -1;
        }
        sh->H /= ly->size;
        sh->W /= ly->size;
    }
    if (sh->H < 1 || sh->W < 1 || (size_t)sh->C * sh->H * sh->W > (1u << 24)) {
        tyc__err_set(err, TYC_EMODEL, field, "'%s' leaves an empty or huge output", field);
        return -1;
    }
    if (i == 0)
        m->spatial = 1;
    return 0;
}

/* 'layers' (1..TYC_MAX_LAYERS, the last dense with 'classes' units) into m->layers. */
static int parse_layers(struct tyc_model *m, const struct tyc__json *ls, struct tyc_err *err)
{
    struct shape sh = {1, 1, 1, 0};

    if (!ls || ls->type != TJ_ARR || ls->nkids < 1 || ls->nkids > TYC_MAX_LAYERS) {
        tyc__err_set(err, TYC_EMODEL, "layers", "'layers' must be an array of 1 to %d layers",
                     TYC_MAX_LAYERS);
        return -1;
    }
    if (m->in_nd == 3)
        sh.C = m->in_dims[0], sh.H = m->in_dims[1], sh.W = m->in_dims[2];
    else if (m->in_nd == 2)
        sh.H = m->in_dims[0], sh.W = m->in_dims[1];
    for (int i = 0; i < ls->nkids; i++) {
        const struct tyc__json *l = &ls->kids[i], *t = tyc__json_get(l, "type");
        const struct tyc__json *a = tyc__json_get(l, "activation");
        struct layer *ly = &m->layers[i];
        char field[32];
        snprintf(field, sizeof(field), "layers[%d]", i);
        if (!t || t->type != TJ_STR) {
            tyc__err_set(err, TYC_EMODEL, field, "'%s.type' is missing", field);
            return -1;
        }
        if (a && a->type != TJ_STR) {
            tyc__err_set(err, TYC_EMODEL, field, "'%s.activation' must be a string", field);
            return -1;
        }
        ly->act = parse_act(a ? a->str : NULL);
        if (ly->act < 0) {
            tyc__err_set(err, TYC_EMODEL, field,
                         "'%s.activation' is '%s'; use relu, gelu, tanh, sigmoid or none", field,
                         a->str);
            return -1;
        }
        if (strcmp(t->str, "dense") == 0) {
            ly->type = L_DENSE;
            ly->units = pos_int(tyc__json_get(l, "units"), 1 << 16);
            if (ly->units < 0) {
                tyc__err_set(err, TYC_EMODEL, field, "'%s.units' must be an integer in 1..65536",
                             field);
                return -1;
            }
            sh.nd4 = 2;
        } else if (strcmp(t->str, "conv2d") == 0 || strcmp(t->str, "maxpool2d") == 0) {
            if (parse_spatial(m, l, t, i, field, &sh, err) < 0)
                return -1;
        } else if (strcmp(t->str, "flatten") == 0) {
            ly->type = L_FLATTEN;
            sh.nd4 = 2;
        } else {
            tyc__err_set(err, TYC_EMODEL, field,
                         "'%s.type' is '%s'; use dense, conv2d, maxpool2d or flatten", field,
                         t->str);
            return -1;
        }
    }
    m->nlayers = ls->nkids;
    if (m->layers[m->nlayers - 1].type != L_DENSE) {
        tyc__err_set(err, TYC_EMODEL, "layers", "the last layer must be dense");
        return -1;
    }
    if (m->layers[m->nlayers - 1].units != m->classes) {
        tyc__err_set(err, TYC_EMODEL, "layers", "the last layer has %d units but 'classes' is %d",
                     m->layers[m->nlayers - 1].units, m->classes);
        return -1;
    }
    return 0;
}

int tyc__layers_parse(struct tyc_model *m, const struct tyc__json *j, struct tyc_err *err)
{
    const struct tyc__json *v;
    if (parse_input(m, tyc__json_get(j, "input"), err) < 0)
        return -1;
    m->classes = pos_int(tyc__json_get(j, "classes"), 1 << 16);
    if (m->classes < 2) {
        tyc__err_set(err, TYC_EMODEL, "classes", "'classes' must be an integer >= 2");
        return -1;
    }
    v = tyc__json_get(j, "loss");
    if (v && (v->type != TJ_STR || strcmp(v->str, "softmax_cross_entropy") != 0)) {
        tyc__err_set(err, TYC_EMODEL, "loss", "'loss' must be 'softmax_cross_entropy'");
        return -1;
    }
    return parse_layers(m, tyc__json_get(j, "layers"), err);
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int tyc__layers_init_params(struct tyc_session *s, const struct tyc_model *m, uint64_t *rng)
{
    int l, i;

    int C = m->spatial ? (m->in_nd == 3 ? m->in_dims[0] : 1) : 0;
    int H = m->spatial ? m->in_dims[m->in_nd - 2] : 0,
        W = m->spatial ? m->in_dims[m->in_nd - 1] : 0;
    int flat = m->input;
    for (l = 0; l < m->nlayers; l++) {
        const struct layer *ly = &m->layers[l];
        char nm[48];
        int w, b, fan_in, fan_out, wd[4], bd[1];
        float lim;
        if (ly->type == L_POOL) {
            H /= ly->size;
            W /= ly->size;
            flat = C * H * W;
            continue;
        }
        if (ly->type == L_FLATTEN)
            continue;
        if (ly->type == L_CONV) {
            wd[0] = ly->units;
            wd[1] = C;
            wd[2] = wd[3] = ly->kernel;
            fan_in = C * ly->kernel * ly->kernel;
            fan_out = ly->units * ly->kernel * ly->kernel;
            snprintf(nm, sizeof(nm), "conv%d.weight", l);
            w = tyc__session_add_param(s, nm, 4, wd);
            snprintf(nm, sizeof(nm), "conv%d.bias", l);
            H = (H + 2 * ly->pad - ly->kernel) / ly->stride + 1;
            W = (W + 2 * ly->pad - ly->kernel) / ly->stride + 1;
            C = ly->units;
            flat = C * H * W;
        } else {
            wd[0] = flat;
            wd[1] = ly->units;
            fan_in = flat;
            fan_out = ly->units;
            snprintf(nm, sizeof(nm), "dense%d.weight", l);
            w = tyc__session_add_param(s, nm, 2, wd);
            snprintf(nm, sizeof(nm), "dense%d.bias", l);
            flat = ly->units;
        }
        bd[0] = ly->units;
        b = tyc__session_add_param(s, nm, 1, bd);
        if (w < 0 || b < 0)
            return -1;
        lim = ly->act == OP_RELU ? sqrtf(6.0f / (float)fan_in)
                                 : sqrtf(6.0f / (float)(fan_in + fan_out));
        for (i = 0; i < (int)s->e[w].numel; i++) {
            double u = (double)(splitmix(rng) >> 11) / 9007199254740992.0;
            s->e[w].data[i] = (float)((2.0 * u - 1.0) * lim);
        }
    }
    return 0;
}

int tyc__layers_build_forward(struct tyc__graph *g, const struct tyc_model *m,
                              const struct tyc_session *s, int *ptens)
{
    int dim[4], x, l, p = 0;
    if (m->spatial) {
        dim[0] = s->o.batch;
        dim[1] = m->in_nd == 3 ? m->in_dims[0] : 1;
        dim[2] = m->in_dims[m->in_nd - 2];
        dim[3] = m->in_dims[m->in_nd - 1];
        x = tyc__input_tensor(g, SLOT_X, 4, dim, "x");
    } else {
        dim[0] = s->o.batch;
        dim[1] = m->input;
        x = tyc__input_tensor(g, SLOT_X, 2, dim, "x");
    }
    for (l = 0; l < m->nlayers && x >= 0; l++) {
        const struct layer *ly = &m->layers[l];
        int w = -1, b = -1;
        if (ly->type == L_DENSE || ly->type == L_CONV) {
            w = tyc__param_tensor(g, s, p);
            b = tyc__param_tensor(g, s, p + 1);
            ptens[p++] = w;
            ptens[p++] = b;
        }
        if ((ly->type == L_DENSE || ly->type == L_FLATTEN) && g->t[x].nd == 4) {
            int fd[2] = {g->t[x].dim[0], (int)(g->t[x].numel / (size_t)g->t[x].dim[0])};
            x = tyc__op1(g, OP_RESHAPE, 1, &x, 2, fd);
        }
        if (ly->type == L_DENSE) {
            x = tyc__matmul(g, x, w, 0, 0);
            x = tyc__ew(g, OP_ADD, x, b);
        } else if (ly->type == L_CONV) {
            int in2[2];
            x = tyc__conv2d(g, x, w, ly->stride, ly->pad);
            in2[0] = x;
            in2[1] = b;
            x = x < 0 ? -1 : tyc__op1(g, OP_BIAS_CHAN, 2, in2, 4, g->t[x].dim);
        } else if (ly->type == L_POOL)
            x = tyc__maxpool(g, x, ly->size);
        if (ly->act && x >= 0)
            x = tyc__ew(g, ly->act, x, -1);
    }
    return x;
}
