/* session.c - sessions: options, the parameter store, building the training and evaluation
 * graphs, their execution in eager or compiled mode on the CPU (or the training graph on the
 * GPU), prediction, parameters and statistics.
 *
 * Eager mode: the primitive graph as autodiff built it, one kernel per op, a fresh malloc'ed
 * buffer per tensor, all freed at the end of the step. Compiled mode: the pass pipeline, then
 * one arena planned once per session. Both run the kernels in cpu.c. */
#include "cuda_int.h"
#include "model_int.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Brings parameters back from the GPU before the host reads them. */
int tyc__session_sync_host(struct tyc_session *s)
{
    int rc;
    if (!s->gpu || !s->gpu_dirty)
        return 0;
    rc = tyc__cuda_exec_download(s->gpu, &s->train.g);
    if (rc == 0)
        s->gpu_dirty = 0;
    return rc;
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
    } else if (tyc__layers_init_params(s, m, &rng) < 0) {
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
                 : tyc__layers_build_forward(&s->train.g, m, s, ptens);
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
    if (s->train.g.precision == TYC_FP16 && tyc__amp_nodes(&s->train.g, grads, s->nparams) < 0)
        goto oom;
    s->train.g.phase_end[1] = s->train.g.nn;
    for (i = 0; i < s->nparams; i++)
        if (tyc__build_optimizer(&s->train.g, s, ptens[i], grads[i], s->nparams + i * nstate) < 0)
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
                 : tyc__layers_build_forward(&s->eval.g, m, s, ptens);
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
    int B = s->o.batch, C = s->classes, i0, r, j, rc = tyc__session_sync_host(s);
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
    int B = s->o.batch, i0, rc = tyc__session_sync_host(s);
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
    if (i < 0 || i >= s->nparams || tyc__session_sync_host((struct tyc_session *)(uintptr_t)s) < 0)
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
