/* models_gpt.c - transformer models: the spec fields ("type": "gpt" for a causal character-level
 * language model, "encoder" for a BERT-style sequence classifier), their parameters (GPT-2
 * initialisation) and their forward graphs (token + positional embedding, pre-LN blocks of
 * multi-head self-attention and a GELU MLP with residual connections, optional dropout, a final
 * layer norm, then an LM head per position or a mean-pooled classifier). The loss is the
 * existing softmax cross-entropy over B*T rows (GPT) or B rows (encoder). */
#include "tyc_int.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define TF_MAX_LAYERS 8

static int get_int(const struct tyc__json *o, const char *key, int def, int lo, int hi,
                   struct tyc_err *err)
{
    const struct tyc__json *v = tyc__json_get(o, key);
    if (!v)
        return def;
    if (v->type != TJ_NUM || v->num != floor(v->num) || v->num < lo || v->num > hi) {
        tyc__err_set(err, TYC_EMODEL, key, "'%s' must be an integer in %d..%d", key, lo, hi);
        return -1;
    }
    return (int)v->num;
}

int tyc__tf_parse(const struct tyc__json *j, struct tyc__tfspec *ts, int *classes,
                  struct tyc_err *err)
{
    const struct tyc__json *t = tyc__json_get(j, "type"), *d;
    memset(ts, 0, sizeof(*ts));
    if (!t || t->type != TJ_STR || (strcmp(t->str, "gpt") && strcmp(t->str, "encoder")))
        return tyc__err_set(err, TYC_EMODEL, "type", "'type' must be 'gpt' or 'encoder'"), -1;
    ts->kind = t->str[0] == 'g' ? TYC_KIND_GPT : TYC_KIND_ENCODER;
    if ((ts->vocab = get_int(j, "vocab", 128, 2, 65536, err)) < 0 ||
        (ts->context = get_int(j, "context", 64, 1, 1024, err)) < 0 ||
        (ts->width = get_int(j, "width", 128, 1, 8192, err)) < 0 ||
        (ts->heads = get_int(j, "heads", 4, 1, 64, err)) < 0 ||
        (ts->layers = get_int(j, "layers", 2, 1, TF_MAX_LAYERS, err)) < 0 ||
        (ts->mlp = get_int(j, "mlp", 4 * ts->width, 1, 65536, err)) < 0)
        return -1;
    if (ts->width % ts->heads)
        return tyc__err_set(err, TYC_EMODEL, "heads", "'width' %d is not a multiple of 'heads' %d",
                            ts->width, ts->heads),
               -1;
    d = tyc__json_get(j, "dropout");
    if (d && (d->type != TJ_NUM || d->num < 0 || d->num >= 1))
        return tyc__err_set(err, TYC_EMODEL, "dropout", "'dropout' must be a number in [0, 1)"), -1;
    ts->dropout = d ? (float)d->num : 0.0f;
    if (ts->kind == TYC_KIND_GPT)
        *classes = ts->vocab;
    else if ((*classes = get_int(j, "classes", -1, 2, 65536, err)) < 0)
        return tyc__err_set(err, TYC_EMODEL, "classes",
                            "'classes' must be an integer >= 2 for an encoder"),
               -1;
    return 0;
}

int tyc__tf_nparams(const struct tyc__tfspec *ts)
{
    return 2 + 12 * ts->layers + 4;
}

static double gauss(uint64_t *rng)
{
    uint64_t z;
    double u1, u2;
    z = (*rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    u1 = ((double)((z ^ (z >> 31)) >> 11) + 1.0) / 9007199254740993.0;
    z = (*rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    u2 = (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* kinds of initialisation */
enum { I_NORMAL, I_ONE, I_ZERO };

static int add(struct tyc_session *s, const char *name, int d0, int d1, int init, uint64_t *rng)
{
    int dim[2] = {d0, d1}, k;
    float *p;
    size_t n, i;
    k = tyc__session_add_param(s, name, d1 ? 2 : 1, dim);
    if (k < 0)
        return -1;
    p = tyc__session_param_data(s, k);
    n = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    for (i = 0; i < n; i++)
        p[i] = init == I_ONE ? 1.0f : init == I_ZERO ? 0.0f : (float)(0.02 * gauss(rng));
    return 0;
}

int tyc__tf_init_params(struct tyc_session *s, const struct tyc__tfspec *ts, int classes,
                        uint64_t *rng)
{
    int D = ts->width, l, rc = 0;
    char nm[48];
    rc |= add(s, "wte.weight", ts->vocab, D, I_NORMAL, rng);
    rc |= add(s, "wpe.weight", ts->context, D, I_NORMAL, rng);
    for (l = 0; l < ts->layers && rc == 0; l++) {
#define P(suffix, d0, d1, init)                                                                    \
    do {                                                                                           \
        snprintf(nm, sizeof(nm), "h%d.%s", l, suffix);                                             \
        rc |= add(s, nm, d0, d1, init, rng);                                                       \
    } while (0)
        P("ln1.weight", D, 0, I_ONE);
        P("ln1.bias", D, 0, I_ZERO);
        P("attn.qkv.weight", D, 3 * D, I_NORMAL);
        P("attn.qkv.bias", 3 * D, 0, I_ZERO);
        P("attn.proj.weight", D, D, I_NORMAL);
        P("attn.proj.bias", D, 0, I_ZERO);
        P("ln2.weight", D, 0, I_ONE);
        P("ln2.bias", D, 0, I_ZERO);
        P("mlp.fc.weight", D, ts->mlp, I_NORMAL);
        P("mlp.fc.bias", ts->mlp, 0, I_ZERO);
        P("mlp.proj.weight", ts->mlp, D, I_NORMAL);
        P("mlp.proj.bias", D, 0, I_ZERO);
#undef P
    }
    rc |= add(s, "lnf.weight", D, 0, I_ONE, rng);
    rc |= add(s, "lnf.bias", D, 0, I_ZERO, rng);
    rc |= add(s, "head.weight", D, ts->kind == TYC_KIND_GPT ? ts->vocab : classes, I_NORMAL, rng);
    rc |= add(s, "head.bias", ts->kind == TYC_KIND_GPT ? ts->vocab : classes, 0, I_ZERO, rng);
    return rc ? -1 : 0;
}

struct fwd {
    struct tyc__graph *g;
    const struct tyc_session *s;
    int *ptens, np, step;
    float p;
    uint64_t seed;
    int site;
};

static int param(struct fwd *f)
{
    int t = tyc__param_tensor(f->g, f->s, f->np);
    f->ptens[f->np++] = t;
    return t;
}

static int dense(struct fwd *f, int x, int act)
{
    int w = param(f), b = param(f);
    x = tyc__ew(f->g, OP_ADD, tyc__matmul(f->g, x, w, 0, 0), b);
    return act && x >= 0 ? tyc__ew(f->g, act, x, -1) : x;
}

static int drop(struct fwd *f, int x)
{
    uint32_t seed;
    if (!(f->p > 0.0f) || f->step < 0)
        return x;
    seed = (uint32_t)(f->seed * 0x9e3779b97f4a7c15ull >> 32) ^ (uint32_t)(0x632be5abu * ++f->site);
    return tyc__dropout(f->g, x, f->step, f->p, seed);
}

static int layernorm(struct fwd *f, int x)
{
    int gm = param(f), bt = param(f);
    return tyc__layernorm(f->g, x, gm, bt, 1e-5f);
}

int tyc__tf_build_forward(struct tyc__graph *g, const struct tyc__tfspec *ts, int classes,
                          const struct tyc_session *s, int *ptens, int train, uint64_t seed)
{
    struct fwd f = {g, s, ptens, 0, -1, ts->dropout, seed, 0};
    int B = tyc__session_batch(s), T = ts->context, BT = B * T, one = 1, x, ids, pos, l;
    (void)classes;
    ids = tyc__input_tensor(g, SLOT_X, 1, &BT, "tokens");
    pos = tyc__input_tensor(g, SLOT_POS, 1, &BT, "positions");
    if (train && ts->dropout > 0.0f)
        f.step = tyc__input_tensor(g, SLOT_STEP, 1, &one, "step");
    {
        int wte = param(&f), wpe = param(&f);
        x = tyc__ew(g, OP_ADD, tyc__embed(g, ids, wte), tyc__embed(g, pos, wpe));
    }
    x = drop(&f, x);
    for (l = 0; l < ts->layers && x >= 0; l++) {
        int h = layernorm(&f, x);
        h = tyc__attention(g, dense(&f, h, 0), ts->heads, T, ts->kind == TYC_KIND_GPT);
        h = drop(&f, dense(&f, h, 0));
        x = tyc__ew(g, OP_ADD, x, h);
        h = layernorm(&f, x);
        h = drop(&f, dense(&f, dense(&f, h, OP_GELU), 0));
        x = tyc__ew(g, OP_ADD, x, h);
    }
    x = layernorm(&f, x);
    if (ts->kind == TYC_KIND_ENCODER)
        x = tyc__seqmean(g, x, T);
    return dense(&f, x, 0);
}
