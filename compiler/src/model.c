/* model.c - model specs (JSON layers), graph construction (forward, autodiff, optimizer), and
 * sessions: parameter store, execution of the training and evaluation graphs in eager or
 * compiled mode on the CPU, statistics, weights files and emission of IR/code.
 *
 * Eager mode: the primitive graph as autodiff built it, one kernel per op, a fresh malloc'ed
 * buffer per tensor, all freed at the end of the step. Compiled mode: the pass pipeline, then
 * one arena planned once per session. Both run the kernels in cpu.c. */
#include "cuda_int.h"
#include "tyc_int.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TYC_MAX_LAYERS 16
#define TYC_MAX_SPEC   (1u << 20)

enum { L_DENSE, L_CONV, L_POOL, L_FLATTEN };

struct layer {
    int type;
    int units; /* dense units or conv filters */
    int kernel, stride, pad, size;
    int act; /* OP_RELU.. or 0 */
};

struct tyc_model {
    char *json;
    char name[64];
    int in_dims[3], in_nd; /* the input as given ([H,W] is one channel for convolutions) */
    int spatial;           /* the first layer is a convolution or pooling: input is NCHW */
    int input;
    int classes;
    int nlayers;
    struct layer layers[TYC_MAX_LAYERS];
    struct tyc__tfspec tf; /* transformer models (models_gpt.c); tf.kind 0 otherwise */
};

#define TYC_MAX_PARAMS 128

static const char *builtin_gpt_tiny =
    "{\"name\": \"gpt-tiny\", \"type\": \"gpt\", \"vocab\": 128, \"context\": 64,\n"
    " \"width\": 128, \"heads\": 4, \"layers\": 2, \"mlp\": 512, \"dropout\": 0}\n";
static const char *builtin_bert_tiny =
    "{\"name\": \"bert-tiny\", \"type\": \"encoder\", \"vocab\": 128, \"context\": 64,\n"
    " \"width\": 128, \"heads\": 4, \"layers\": 2, \"mlp\": 512, \"dropout\": 0.1,\n"
    " \"classes\": 8}\n";

static const char *builtin_mlp =
    "{\"name\": \"mlp\", \"input\": [28, 28], \"classes\": 10,\n"
    " \"layers\": [{\"type\": \"dense\", \"units\": 256, \"activation\": \"relu\"},\n"
    "            {\"type\": \"dense\", \"units\": 10}],\n"
    " \"loss\": \"softmax_cross_entropy\"}\n";
static const char *builtin_mlp_small =
    "{\"name\": \"mlp-small\", \"input\": [28, 28], \"classes\": 10,\n"
    " \"layers\": [{\"type\": \"dense\", \"units\": 64, \"activation\": \"relu\"},\n"
    "            {\"type\": \"dense\", \"units\": 10}],\n"
    " \"loss\": \"softmax_cross_entropy\"}\n";
static const char *builtin_mlp_large =
    "{\"name\": \"mlp-large\", \"input\": [28, 28], \"classes\": 10,\n"
    " \"layers\": [{\"type\": \"dense\", \"units\": 1024, \"activation\": \"relu\"},\n"
    "            {\"type\": \"dense\", \"units\": 1024, \"activation\": \"relu\"},\n"
    "            {\"type\": \"dense\", \"units\": 10}],\n"
    " \"loss\": \"softmax_cross_entropy\"}\n";

static const char *builtin_cnn =
    "{\"name\": \"cnn\", \"input\": [1, 28, 28], \"classes\": 10,\n"
    " \"layers\": [{\"type\": \"conv2d\", \"filters\": 8, \"kernel\": 3, \"padding\": \"same\",\n"
    "             \"activation\": \"relu\"},\n"
    "            {\"type\": \"maxpool2d\", \"size\": 2},\n"
    "            {\"type\": \"conv2d\", \"filters\": 16, \"kernel\": 3, \"padding\": \"same\",\n"
    "             \"activation\": \"relu\"},\n"
    "            {\"type\": \"maxpool2d\", \"size\": 2},\n"
    "            {\"type\": \"flatten\"},\n"
    "            {\"type\": \"dense\", \"units\": 10}],\n"
    " \"loss\": \"softmax_cross_entropy\"}\n";

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

struct tyc_model *tyc_model_parse(const char *json, size_t len, struct tyc_err *err)
{
    struct tyc__json *j;
    const struct tyc__json *v;
    struct tyc_model *m = NULL;
    if (len > TYC_MAX_SPEC) {
        tyc__err_set(err, TYC_EMODEL, "model", "model spec is larger than %u bytes", TYC_MAX_SPEC);
        return NULL;
    }
    j = tyc__json_parse(json, len, err);
    if (!j) {
        if (err)
            err->code = TYC_EMODEL;
        return NULL;
    }
    if (j->type != TJ_OBJ) {
        tyc__err_set(err, TYC_EMODEL, "model", "model spec must be a JSON object");
        goto fail;
    }
    m = tyc__calloc(1, sizeof(*m));
    if (!m) {
        tyc__err_set(err, TYC_ENOMEM, "model", "out of memory");
        goto fail;
    }
    v = tyc__json_get(j, "name");
    snprintf(m->name, sizeof(m->name), "%s", v && v->type == TJ_STR ? v->str : "model");
    if (tyc__json_get(j, "type")) {
        if (tyc__tf_parse(j, &m->tf, &m->classes, err) < 0)
            goto fail;
        m->input = m->tf.context;
        goto done;
    }
    if (parse_input(m, tyc__json_get(j, "input"), err) < 0)
        goto fail;
    m->classes = pos_int(tyc__json_get(j, "classes"), 1 << 16);
    if (m->classes < 2) {
        tyc__err_set(err, TYC_EMODEL, "classes", "'classes' must be an integer >= 2");
        goto fail;
    }
    v = tyc__json_get(j, "loss");
    if (v && (v->type != TJ_STR || strcmp(v->str, "softmax_cross_entropy") != 0)) {
        tyc__err_set(err, TYC_EMODEL, "loss", "'loss' must be 'softmax_cross_entropy'");
        goto fail;
    }
    if (parse_layers(m, tyc__json_get(j, "layers"), err) < 0)
        goto fail;
done:
    m->json = tyc__malloc(len + 1);
    if (!m->json) {
        tyc__err_set(err, TYC_ENOMEM, "model", "out of memory");
        goto fail;
    }
    memcpy(m->json, json, len);
    m->json[len] = 0;
    tyc__json_free(j);
    return m;
fail:
    tyc__json_free(j);
    tyc_model_free(m);
    return NULL;
}

struct tyc_model *tyc_model_load(const char *path, struct tyc_err *err)
{
    FILE *f;
    char *buf;
    size_t n;
    struct tyc_model *m;
    if (strcmp(path, "mlp") == 0)
        return tyc_model_parse(builtin_mlp, strlen(builtin_mlp), err);
    if (strcmp(path, "mlp-small") == 0)
        return tyc_model_parse(builtin_mlp_small, strlen(builtin_mlp_small), err);
    if (strcmp(path, "mlp-large") == 0)
        return tyc_model_parse(builtin_mlp_large, strlen(builtin_mlp_large), err);
    if (strcmp(path, "cnn") == 0)
        return tyc_model_parse(builtin_cnn, strlen(builtin_cnn), err);
    if (strcmp(path, "gpt-tiny") == 0)
        return tyc_model_parse(builtin_gpt_tiny, strlen(builtin_gpt_tiny), err);
    if (strcmp(path, "bert-tiny") == 0)
        return tyc_model_parse(builtin_bert_tiny, strlen(builtin_bert_tiny), err);
    f = fopen(path, "rb");
    if (!f) {
        tyc__err_set(err, TYC_EMODEL, "model",
                     "cannot open model '%s': %s (built-in models: mlp, mlp-small, mlp-large, cnn, "
                     "gpt-tiny, "
                     "bert-tiny)",
                     path, strerror(errno));
        return NULL;
    }
    buf = tyc__malloc(TYC_MAX_SPEC + 1);
    if (!buf) {
        fclose(f);
        tyc__err_set(err, TYC_ENOMEM, "model", "out of memory");
        return NULL;
    }
    n = fread(buf, 1, TYC_MAX_SPEC + 1, f);
    fclose(f);
    m = tyc_model_parse(buf, n, err);
    if (!m && err && err->code == TYC_EMODEL) {
        char tmp[sizeof(err->msg)];
        snprintf(tmp, sizeof(tmp), "%s", err->msg);
        snprintf(err->msg, sizeof(err->msg), "model '%.80s': %.160s", path, tmp);
    }
    tyc__free(buf);
    return m;
}

void tyc_model_free(struct tyc_model *m)
{
    if (!m)
        return;
    tyc__free(m->json);
    tyc__free(m);
}

const char *tyc_model_json(const struct tyc_model *m)
{
    return m->json;
}

int tyc_model_input_size(const struct tyc_model *m)
{
    return m->input;
}

int tyc_model_classes(const struct tyc_model *m)
{
    return m->classes;
}

int tyc_model_kind(const struct tyc_model *m)
{
    return m->tf.kind;
}

int tyc_model_labels_per_example(const struct tyc_model *m)
{
    return m->tf.kind == TYC_KIND_GPT ? m->tf.context : 1;
}

int tyc_precision_from_name(const char *n)
{
    if (!strcmp(n, "fp32") || !strcmp(n, "float32"))
        return TYC_FP32;
    if (!strcmp(n, "bf16") || !strcmp(n, "bfloat16"))
        return TYC_BF16;
    if (!strcmp(n, "fp16") || !strcmp(n, "float16"))
        return TYC_FP16;
    return -1;
}

unsigned tyc_pass_from_name(const char *n)
{
    static const struct {
        const char *name;
        unsigned bit;
    } t[] = {{"dce", TYC_PASS_DCE},           {"cse", TYC_PASS_CSE},
             {"simplify", TYC_PASS_SIMPLIFY}, {"epilogue", TYC_PASS_EPILOGUE},
             {"xent", TYC_PASS_XENT},         {"ewfuse", TYC_PASS_EWFUSE},
             {"memplan", TYC_PASS_MEMPLAN},   {"all", TYC_PASS_ALL}};
    size_t i;
    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcmp(t[i].name, n) == 0)
            return t[i].bit;
    return 0;
}

void tyc_options_init(struct tyc_options *o)
{
    memset(o, 0, sizeof(*o));
    o->mode = TYC_COMPILED;
    o->passes = TYC_PASS_ALL;
    o->target = TYC_TARGET_CPU;
    o->batch = 64;
    o->optimizer = TYC_ADAM;
    o->lr = 1e-3f;
    o->momentum = 0.9f;
    o->beta1 = 0.9f;
    o->beta2 = 0.999f;
    o->eps = 1e-8f;
    o->seed = 42;
}

/* ---- sessions -------------------------------------------------------------------------------- */

struct entry {
    char name[48];
    float *data;
    size_t numel;
    int nd, dim[4];
    int trainable;
};

struct exec {
    struct tyc__graph g;
    int compiled;
    int no_cache; /* eager: free temps at the end of every step */
    size_t arena_bytes, temp_bytes;
    char *arena;
    float *consts;
    size_t scratch_shared, scratch_local; /* floats the kernels need on the pool */
    const struct tyc__cpu_ctx *ctx;       /* borrowed: the session's pool and scratch */
    struct tyc__buf log;
    int nodes_before;
};

struct tyc_session {
    struct tyc_options o;
    int input, classes, lpe; /* lpe: labels per example */
    struct entry *e;
    int ne, nparams;
    float *ybuf;
    float *posbuf; /* transformers: position ids 0..T-1 per row */
    float stepf;   /* the step counter as an input (dropout masks) */
    float c1, c2;
    long step;
    struct exec train, eval;
    struct tyc__pool *pool; /* CPU threads (o.threads) and kernel scratch */
    struct tyc__cpu_ctx ctx;
    struct tyc__cuda_exec *gpu; /* training graph on the GPU (target cuda with a device) */
    int gpu_dirty;              /* device params newer than host copies */
    int grad_t[TYC_MAX_PARAMS]; /* gradient tensor of each parameter in the training graph */
};

/* Brings parameters back from the GPU before the host reads them. */
static int sync_host(struct tyc_session *s)
{
    int rc;
    if (!s->gpu || !s->gpu_dirty)
        return 0;
    rc = tyc__cuda_exec_download(s->gpu, &s->train.g);
    if (rc == 0)
        s->gpu_dirty = 0;
    return rc;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int add_entry(struct tyc_session *s, const char *name, int nd, const int *dim, int trainable)
{
    struct entry *e = &s->e[s->ne];
    int i;
    snprintf(e->name, sizeof(e->name), "%.47s", name);
    e->nd = nd;
    e->numel = 1;
    for (i = 0; i < nd; i++) {
        e->dim[i] = dim[i];
        e->numel *= (size_t)dim[i];
    }
    e->trainable = trainable;
    e->data = tyc__calloc(e->numel, sizeof(float));
    if (!e->data)
        return -1;
    return s->ne++;
}

int tyc__session_add_param(struct tyc_session *s, const char *name, int nd, const int *dim)
{
    return add_entry(s, name, nd, dim, 1);
}

float *tyc__session_param_data(struct tyc_session *s, int slot)
{
    return s->e[slot].data;
}

int tyc__session_batch(const struct tyc_session *s)
{
    return s->o.batch;
}

int tyc__param_tensor(struct tyc__graph *g, const struct tyc_session *s, int slot)
{
    int t = tyc__tensor_new(g, TK_PARAM, s->e[slot].nd, s->e[slot].dim, s->e[slot].name);
    if (t >= 0)
        g->t[t].slot = slot;
    return t;
}

int tyc__input_tensor(struct tyc__graph *g, int slot, int nd, const int *dim, const char *name)
{
    int t = tyc__tensor_new(g, TK_INPUT, nd, dim, name);
    if (t >= 0)
        g->t[t].slot = slot;
    return t;
}

/* forward: returns logits; OUT: ptens[] param tensor ids in store order */
static int build_forward(struct tyc__graph *g, const struct tyc_model *m,
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

/* fp16 loss scaling (CUDA only; no-ops on the CPU): finite checks over every gradient (chained,
 * 15 per node), then each gradient divided by the scale before the optimizer reads it. The
 * flag is left as the last graph output for the scale update appended after the optimizer. */
static int amp_nodes(struct tyc__graph *g, int *grads, int np)
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

static int build_optimizer(struct tyc__graph *g, struct tyc_session *s, int pt, int grad,
                           int state0)
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

static void exec_release(struct exec *x, int force);

static void exec_cleanup(struct exec *x)
{
    if (x->g.t)
        exec_release(x, 1);
    tyc__graph_cleanup(&x->g);
    tyc__safefree(x->arena);
    tyc__safefree(x->consts);
    tyc__buf_cleanup(&x->log);
}

/* Runs passes (compiled), plans memory, allocates the arena, constants and scratch. */
static int exec_prepare(struct exec *x, const struct tyc_options *o)
{
    int i, nc = 0;
    x->compiled = o->mode == TYC_COMPILED;
    x->no_cache = !o->eager_cache;
    x->nodes_before = x->g.nn;
    if (x->compiled)
        tyc__run_passes(&x->g, o->passes, &x->log);
    else
        tyc__buf_printf(&x->log, "eager: no passes, %d kernels\n", x->g.nn);
    x->temp_bytes = tyc__plan_memory(&x->g, x->compiled && (o->passes & TYC_PASS_MEMPLAN));
    if (x->compiled) {
        tyc__buf_printf(&x->log, "memplan   %s: arena %zu bytes\n",
                        (o->passes & TYC_PASS_MEMPLAN) ? "liveness best-fit" : "off (no reuse)",
                        x->temp_bytes);
        x->arena_bytes = x->temp_bytes;
        x->arena = tyc__malloc(x->arena_bytes + 64);
        if (!x->arena)
            return -TYC_ENOMEM;
    }
    for (i = 0; i < x->g.nt; i++)
        if (x->g.t[i].kind == TK_CONST)
            nc++;
    x->consts = tyc__malloc((size_t)(nc + 1) * sizeof(float));
    if (!x->consts)
        return -TYC_ENOMEM;
    nc = 0;
    for (i = 0; i < x->g.nt; i++)
        if (x->g.t[i].kind == TK_CONST) {
            x->consts[nc] = x->g.t[i].cval;
            x->g.t[i].data = &x->consts[nc++];
        }
    tyc__cpu_scratch_split(&x->g, &x->scratch_shared, &x->scratch_local);
    return 0;
}

static void bind_inputs(struct exec *x, struct tyc_session *s, const float *xin)
{
    int i;
    for (i = 0; i < x->g.nt; i++) {
        struct tyc__tensor *t = &x->g.t[i];
        if (t->kind == TK_PARAM)
            t->data = s->e[t->slot].data;
        else if (t->kind == TK_INPUT)
            t->data = t->slot == SLOT_X      ? (float *)(uintptr_t)xin
                      : t->slot == SLOT_Y    ? s->ybuf
                      : t->slot == SLOT_C1   ? &s->c1
                      : t->slot == SLOT_STEP ? &s->stepf
                      : t->slot == SLOT_POS  ? s->posbuf
                                             : &s->c2;
        else if (t->kind == TK_TEMP && x->compiled)
            t->data = (float *)(void *)(x->arena + t->off);
    }
}

/* Runs all kernels. Eager gives each temp its own buffer, malloc'ed right before its producer
 * runs and freed at the end of the step (all of them live until then), or with eager_cache kept
 * for later steps (as a caching allocator does). */
static int exec_run(struct exec *x)
{
    int i, j, rc = 0, phase = -1;
    uint64_t ph = 0;
    struct tyc__graph *g = &x->g;
    tyc__pool_bind(x->ctx);
    for (i = 0; i < g->nn; i++) {
        const struct tyc__node *n = &g->n[i];
        tyc__annot_phase(g, i, &phase, &ph);
        if (!x->compiled)
            for (j = 0; j < n->nout; j++) {
                struct tyc__tensor *t = &g->t[n->out[j]];
                if (t->kind == TK_TEMP && !t->data &&
                    !(t->data = tyc__malloc(t->numel * sizeof(float)))) {
                    rc = -TYC_ENOMEM;
                    goto out;
                }
            }
        tyc__cpu_run_node(g, n, NULL);
    }
out:
    tyc__annot_phase(g, -1, &phase, &ph);
    tyc__pool_bind(NULL);
    return rc;
}

static void exec_release(struct exec *x, int force)
{
    int i;
    if (x->compiled || (!x->no_cache && !force))
        return;
    for (i = 0; i < x->g.nt; i++)
        if (x->g.t[i].kind == TK_TEMP)
            tyc__safefree(x->g.t[i].data);
}

/* The weights and biases of a layered (non-transformer) model, Glorot/He-uniform from rng.
   0 or -1 (out of memory). */
static int init_layer_params(struct tyc_session *s, const struct tyc_model *m, uint64_t *rng)
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
            w = add_entry(s, nm, 4, wd, 1);
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
            w = add_entry(s, nm, 2, wd, 1);
            snprintf(nm, sizeof(nm), "dense%d.bias", l);
            flat = ly->units;
        }
        bd[0] = ly->units;
        b = add_entry(s, nm, 1, bd, 1);
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

/* Compiles the training graph for the GPU and loads it (NVRTC, then the CUDA driver); without
   a GPU it logs the fallback to the CPU and returns 0. 0 or error with err. */
static int cuda_prepare(struct tyc_session *s, const struct tyc_options *o, struct tyc_err *err)
{
    int rc = 0;

    if (!tyc_cuda_available()) {
        tyc__log(1, "event=tyc.cuda.unavailable fallback=cpu reason=%s",
                 "no libcuda.so.1 or no device");
    } else {
        struct tyc__buf src;
        char arch[32], *ptx = NULL;
        int cached = 0;
        tyc__cuda_arch(arch, sizeof(arch));
        tyc__buf_init(&src, 64u << 20);
        rc = tyc__cuda_codegen(&s->train.g, &src);
        if (rc == 0)
            rc = tyc_nvrtc_compile(src.p, arch, o->cache_dir, &ptx, &cached, err);
        tyc__buf_cleanup(&src);
        if (rc == 0) {
            bind_inputs(&s->train, s, NULL);
            rc = tyc__cuda_exec_new(&s->train.g, s->train.temp_bytes, ptx, &s->gpu);
            if (rc < 0)
                tyc__err_set(err, TYC_EGPU, "target", "cannot load the graph on the GPU");
        }
        tyc__free(ptx);
        if (rc < 0)
            return rc;
        tyc__log(2, "event=tyc.cuda.ready arch=%s cached=%d", arch, cached);
    }
    return 0;
}

struct tyc_session *tyc_session_new(const struct tyc_model *m, const struct tyc_options *o,
                                    struct tyc_err *err)
{
    struct tyc_session *s;
    int i, ptens[TYC_MAX_PARAMS], grads[TYC_MAX_PARAMS], logits, loss, ydim, rc;
    int nstate;
    uint64_t rng;
    if (o->batch < 1 || o->batch > (1 << 20))
        return tyc__err_set(err, TYC_EINVAL, "batch_size", "batch size must be in 1..1048576"),
               NULL;
    if (o->precision < TYC_FP32 || o->precision > TYC_FP16)
        return tyc__err_set(err, TYC_EINVAL, "precision", "precision must be fp32, bf16 or fp16"),
               NULL;
    if (!(o->lr > 0.0f) || !isfinite(o->lr))
        return tyc__err_set(err, TYC_EINVAL, "learning_rate", "learning rate must be > 0"), NULL;
    if (o->threads < 0 || o->threads > 1024)
        return tyc__err_set(err, TYC_EINVAL, "threads",
                            "threads must be in 0..1024 (0: all cores)"),
               NULL;
    s = tyc__calloc(1, sizeof(*s));
    if (!s)
        return tyc__err_set(err, TYC_ENOMEM, "", "out of memory"), NULL;
    s->o = *o;
    s->input = m->input;
    s->classes = m->classes;
    s->lpe = tyc_model_labels_per_example(m);
    nstate = o->optimizer == TYC_ADAM ? 2 : (o->momentum != 0.0f ? 1 : 0);
    s->e = tyc__calloc(
        (size_t)((m->tf.kind ? tyc__tf_nparams(&m->tf) : 2 * m->nlayers) * (1 + nstate)),
        sizeof(*s->e));
    s->ybuf = tyc__calloc((size_t)o->batch * (size_t)s->lpe, sizeof(float));
    tyc__buf_init(&s->train.log, 1u << 20);
    tyc__buf_init(&s->eval.log, 1u << 20);
    if (!s->e || !s->ybuf)
        goto oom;
    rng = o->seed ? o->seed : 42;
    if (m->tf.kind) {
        s->posbuf = tyc__malloc((size_t)o->batch * (size_t)m->tf.context * sizeof(float));
        if (!s->posbuf || tyc__tf_init_params(s, &m->tf, m->classes, &rng) < 0)
            goto oom;
        for (i = 0; i < o->batch * m->tf.context; i++)
            s->posbuf[i] = (float)(i % m->tf.context);
    } else if (init_layer_params(s, m, &rng) < 0) {
        goto oom;
    }
    s->nparams = s->ne;
    for (i = 0; i < s->nparams; i++) {
        char nm[64];
        int k;
        for (k = 0; k < nstate; k++) {
            snprintf(nm, sizeof(nm), "%.30s.%s", s->e[i].name,
                     o->optimizer == TYC_ADAM ? (k ? "adam_v" : "adam_m") : "momentum");
            if (add_entry(s, nm, s->e[i].nd, s->e[i].dim, 0) < 0)
                goto oom;
        }
    }
    /* training graph */
    tyc__graph_init(&s->train.g);
    logits = m->tf.kind
                 ? tyc__tf_build_forward(&s->train.g, &m->tf, m->classes, s, ptens, 1, o->seed)
                 : build_forward(&s->train.g, m, s, ptens);
    ydim = o->batch * s->lpe;
    {
        int in2[2] = {logits, tyc__input_tensor(&s->train.g, SLOT_Y, 1, &ydim, "y")}, one = 1;
        loss = tyc__op1(&s->train.g, OP_XENT, 2, in2, 1, &one);
    }
    if (s->train.g.failed || loss < 0)
        goto oom;
    s->train.g.outputs[s->train.g.nout++] = loss;
    s->train.g.phase_end[0] = s->train.g.nn;
    rc = tyc__autodiff(&s->train.g, loss, ptens, s->nparams, grads);
    memcpy(s->grad_t, grads, (size_t)s->nparams * sizeof(int));
    if (rc < 0) {
        tyc__err_set(err, -rc, "model", "autodiff failed: %s", tyc_strerror(rc));
        goto fail;
    }
    s->train.g.precision = o->precision; /* the generated CUDA's; the CPU computes fp32 */
    if (s->train.g.precision == TYC_FP16 && amp_nodes(&s->train.g, grads, s->nparams) < 0)
        goto oom;
    s->train.g.phase_end[1] = s->train.g.nn;
    for (i = 0; i < s->nparams; i++)
        if (build_optimizer(&s->train.g, s, ptens[i], grads[i], s->nparams + i * nstate) < 0)
            goto oom;
    if (s->train.g.precision == TYC_FP16) { /* after every update: adjust the loss scale */
        int one = 1, flag = s->train.g.outputs[s->train.g.nout - 1];
        s->train.g.outputs[s->train.g.nout - 1] =
            tyc__op1(&s->train.g, OP_AMP_UPDATE, 1, &flag, 1, &one);
    }
    if (s->train.g.failed)
        goto oom;
    /* evaluation graph */
    tyc__graph_init(&s->eval.g);
    logits = m->tf.kind
                 ? tyc__tf_build_forward(&s->eval.g, &m->tf, m->classes, s, ptens, 0, o->seed)
                 : build_forward(&s->eval.g, m, s, ptens);
    if (s->eval.g.failed || logits < 0)
        goto oom;
    s->eval.g.outputs[s->eval.g.nout++] = logits;
    if (exec_prepare(&s->train, o) < 0 || exec_prepare(&s->eval, o) < 0)
        goto oom;
    s->pool = tyc__pool_new(o->threads);
    if (!s->pool || tyc__pool_reserve(
                        s->pool,
                        s->train.scratch_shared > s->eval.scratch_shared ? s->train.scratch_shared
                                                                         : s->eval.scratch_shared,
                        s->train.scratch_local > s->eval.scratch_local ? s->train.scratch_local
                                                                       : s->eval.scratch_local) < 0)
        goto oom;
    tyc__pool_ctx(s->pool, &s->ctx);
    s->train.ctx = s->eval.ctx = &s->ctx;
    if (o->target == TYC_TARGET_CUDA && cuda_prepare(s, o, err) < 0)
        goto fail;
    tyc__log(2, "event=tyc.session mode=%s kernels=%d nodes=%d temp_bytes=%zu threads=%d gemm=%s",
             o->mode == TYC_COMPILED ? "compiled" : "eager", s->train.g.nn, s->train.nodes_before,
             s->train.temp_bytes, tyc__pool_threads(s->pool), tyc__gemm_isa());
    return s;
oom:
    tyc__err_set(err, TYC_ENOMEM, "", "out of memory building the graph");
fail:
    tyc_session_free(s);
    return NULL;
}

void tyc_session_free(struct tyc_session *s)
{
    int i;
    if (!s)
        return;
    tyc__cuda_exec_free(s->gpu);
    exec_cleanup(&s->train);
    exec_cleanup(&s->eval);
    tyc__pool_free(s->pool);
    for (i = 0; i < s->ne; i++)
        tyc__free(s->e[i].data);
    tyc__free(s->e);
    tyc__free(s->ybuf);
    tyc__free(s->posbuf);
    tyc__free(s);
}

int tyc_session_step(struct tyc_session *s, const float *x, const int32_t *y, float *loss)
{
    int i, rc;
    for (i = 0; i < s->o.batch * s->lpe; i++) {
        if (y[i] < 0 || y[i] >= s->classes)
            return -TYC_EDATA;
        s->ybuf[i] = (float)y[i];
    }
    s->step++;
    s->stepf = (float)(s->step & 0xffffff);
    s->c1 = (float)(1.0 / (1.0 - pow((double)s->o.beta1, (double)s->step)));
    s->c2 = (float)(1.0 / (1.0 - pow((double)s->o.beta2, (double)s->step)));
    bind_inputs(&s->train, s, x);
    if (s->gpu) {
        rc = tyc__cuda_exec_run(s->gpu, &s->train.g);
        s->gpu_dirty = 1;
    } else
        rc = exec_run(&s->train);
    if (rc == 0 && loss)
        *loss = s->train.g.t[s->train.g.outputs[0]].data[0];
    exec_release(&s->train, 0);
    return rc;
}

int tyc_session_predict(struct tyc_session *s, const float *x, int n, int32_t *pred)
{
    int B = s->o.batch, C = s->classes, i0, r, j, rc = sync_host(s);
    float *pad = NULL;
    for (i0 = 0; i0 < n && rc == 0; i0 += B) {
        const float *xb = x + (size_t)i0 * (size_t)s->input;
        const float *lg;
        int rows = n - i0 < B ? n - i0 : B;
        if (rows < B) {
            pad = tyc__calloc((size_t)B * (size_t)s->input, sizeof(float));
            if (!pad)
                return -TYC_ENOMEM;
            memcpy(pad, xb, (size_t)rows * (size_t)s->input * sizeof(float));
            xb = pad;
        }
        bind_inputs(&s->eval, s, xb);
        rc = exec_run(&s->eval);
        if (rc == 0) {
            lg = s->eval.g.t[s->eval.g.outputs[0]].data;
            for (r = 0; r < rows * s->lpe; r++) {
                int best = 0;
                for (j = 1; j < C; j++)
                    if (lg[(size_t)r * C + j] > lg[(size_t)r * C + best])
                        best = j;
                pred[(size_t)i0 * s->lpe + r] = best;
            }
        }
        exec_release(&s->eval, 0);
        tyc__safefree(pad);
    }
    return rc;
}

int tyc_session_logits(struct tyc_session *s, const float *x, int n, float *out)
{
    int B = s->o.batch, i0, rc = sync_host(s);
    size_t row = (size_t)s->classes * (size_t)s->lpe;
    float *pad = NULL;
    for (i0 = 0; i0 < n && rc == 0; i0 += B) {
        const float *xb = x + (size_t)i0 * (size_t)s->input;
        int rows = n - i0 < B ? n - i0 : B;
        if (rows < B) {
            pad = tyc__calloc((size_t)B * (size_t)s->input, sizeof(float));
            if (!pad)
                return -TYC_ENOMEM;
            memcpy(pad, xb, (size_t)rows * (size_t)s->input * sizeof(float));
            xb = pad;
        }
        bind_inputs(&s->eval, s, xb);
        rc = exec_run(&s->eval);
        if (rc == 0)
            memcpy(out + (size_t)i0 * row, s->eval.g.t[s->eval.g.outputs[0]].data,
                   (size_t)rows * row * sizeof(float));
        exec_release(&s->eval, 0);
        tyc__safefree(pad);
    }
    return rc;
}

const char *tyc_session_grad(const struct tyc_session *s, int i, float **data, size_t *numel)
{
    const struct tyc__tensor *t;
    if (i < 0 || i >= s->nparams || s->o.mode != TYC_EAGER || !s->o.eager_cache || s->gpu ||
        s->step == 0 || s->grad_t[i] < 0)
        return NULL;
    t = &s->train.g.t[s->grad_t[i]];
    if (!t->data || t->numel != s->e[i].numel)
        return NULL;
    if (data)
        *data = t->data;
    if (numel)
        *numel = t->numel;
    return s->e[i].name;
}

int tyc_session_param_shape(const struct tyc_session *s, int i, int *nd, int dims[4])
{
    int k;
    if (i < 0 || i >= s->nparams)
        return -TYC_EINVAL;
    *nd = s->e[i].nd;
    for (k = 0; k < s->e[i].nd && k < 4; k++)
        dims[k] = s->e[i].dim[k];
    return 0;
}

int tyc_session_param_count(const struct tyc_session *s)
{
    return s->nparams;
}

const char *tyc_session_param(const struct tyc_session *s, int i, float **data, size_t *numel)
{
    if (i < 0 || i >= s->nparams || sync_host((struct tyc_session *)(uintptr_t)s) < 0)
        return NULL;
    if (data)
        *data = s->e[i].data;
    if (numel)
        *numel = s->e[i].numel;
    return s->e[i].name;
}

void tyc_session_stats(const struct tyc_session *s, struct tyc_stats *st)
{
    int i;
    memset(st, 0, sizeof(*st));
    st->train_kernels = s->train.g.nn;
    st->eval_kernels = s->eval.g.nn;
    st->nodes_before = s->train.nodes_before;
    for (i = 0; i < s->ne; i++)
        st->param_bytes += s->e[i].numel * sizeof(float);
    st->temp_bytes = s->train.temp_bytes;
    st->peak_bytes = st->param_bytes + st->temp_bytes + tyc__pool_bytes(s->pool) +
                     (size_t)s->o.batch * sizeof(float);
    st->threads = tyc__pool_threads(s->pool);
}

/* ---- weights file ---------------------------------------------------------------------------- */
/* weights.tyw: "TYW1" u32 count, then per tensor: u32 name_len, name bytes, u32 ndim,
 * u32 dims[ndim], float32 data (little endian, row-major). */
static int wr32(FILE *f, uint32_t v)
{
    return fwrite(&v, 4, 1, f) == 1 ? 0 : -1;
}

int tyc_session_save(const struct tyc_session *s, const char *dir, struct tyc_err *err)
{
    char path[4096], tmp[4200];
    FILE *f;
    int i, bad = 0;
    if (sync_host((struct tyc_session *)(uintptr_t)s) < 0)
        return tyc__err_set(err, TYC_EGPU, "model_dir", "cannot copy parameters from the GPU");
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/weights.tyw", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "wb");
    if (!f)
        return tyc__err_set(err, TYC_EIO, "model_dir", "cannot write '%s': %s", tmp,
                            strerror(errno));
    bad |= fwrite("TYW1", 1, 4, f) != 4;
    bad |= wr32(f, (uint32_t)s->nparams);
    for (i = 0; i < s->nparams; i++) {
        const struct entry *e = &s->e[i];
        int d;
        bad |= wr32(f, (uint32_t)strlen(e->name));
        bad |= fwrite(e->name, 1, strlen(e->name), f) != strlen(e->name);
        bad |= wr32(f, (uint32_t)e->nd);
        for (d = 0; d < e->nd; d++)
            bad |= wr32(f, (uint32_t)e->dim[d]);
        bad |= fwrite(e->data, sizeof(float), e->numel, f) != e->numel;
    }
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return tyc__err_set(err, TYC_EIO, "model_dir", "cannot write '%s'", path);
    }
    return 0;
}

int tyc_session_load_weights(struct tyc_session *s, const char *path, struct tyc_err *err)
{
    FILE *f;
    char magic[4], name[256];
    uint32_t n, len, nd, d;
    int i, k;
    if (s->gpu)
        return tyc__err_set(err, TYC_EUNSUPPORTED, "weights",
                            "loading weights into a GPU session is not supported");
    f = fopen(path, "rb");
    if (!f)
        return tyc__err_set(err, TYC_EIO, "weights", "cannot open '%s': %s", path, strerror(errno));
    if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "TYW1", 4) != 0 || fread(&n, 4, 1, f) != 1 ||
        n != (uint32_t)s->nparams)
        goto bad;
    for (i = 0; i < s->nparams; i++) {
        struct entry *e = &s->e[i];
        if (fread(&len, 4, 1, f) != 1 || len >= sizeof(name) || fread(name, 1, len, f) != len)
            goto bad;
        name[len] = 0;
        if (strcmp(name, e->name) != 0 || fread(&nd, 4, 1, f) != 1 || nd != (uint32_t)e->nd)
            goto bad;
        for (k = 0; k < e->nd; k++)
            if (fread(&d, 4, 1, f) != 1 || d != (uint32_t)e->dim[k])
                goto bad;
        if (fread(e->data, sizeof(float), e->numel, f) != e->numel)
            goto bad;
    }
    fclose(f);
    return 0;
bad:
    fclose(f);
    return tyc__err_set(err, TYC_EDATA, "weights", "'%s' does not match the model", path);
}

/* ---- emission -------------------------------------------------------------------------------- */
int tyc_session_emit(struct tyc_session *s, int what, char **out, struct tyc_err *err)
{
    struct tyc__buf b;
    int rc = 0;
    tyc__buf_init(&b, 64u << 20);
    switch (what) {
    case TYC_EMIT_IR:
        tyc__buf_printf(&b, "# training graph (%s), %d kernels, temp %zu bytes\n",
                        s->train.compiled ? "compiled" : "eager", s->train.g.nn,
                        s->train.temp_bytes);
        tyc__graph_dump(&s->train.g, &b);
        break;
    case TYC_EMIT_PASSLOG:
        tyc__buf_printf(&b, "%s", s->train.log.p ? s->train.log.p : "");
        break;
    case TYC_EMIT_CUDA:
        rc = tyc__cuda_codegen(&s->train.g, &b);
        break;
    case TYC_EMIT_C:
        tyc__c_listing(&s->train.g, &b);
        break;
    case TYC_EMIT_PTX: {
        char *ptx = NULL;
        int cached = 0;
        rc = tyc__cuda_codegen(&s->train.g, &b);
        if (rc == 0 && !b.oom)
            rc = tyc_nvrtc_compile(b.p, "compute_90", s->o.cache_dir, &ptx, &cached, err);
        tyc__buf_cleanup(&b);
        if (rc < 0)
            return rc;
        *out = ptx;
        return 0;
    }
    default:
        rc = -TYC_EINVAL;
    }
    if (rc == 0 && b.oom)
        rc = -TYC_ENOMEM;
    if (rc < 0) {
        tyc__buf_cleanup(&b);
        return tyc__err_set(err, -rc, "emit", "cannot emit: %s", tyc_strerror(rc));
    }
    *out = b.p ? b.p : tyc__strdup("");
    return 0;
}
