/* model_int.h - the model and session structures shared by model.c (specs), models_layers.c
 * (layered models), optim.c (optimizer updates), session.c (sessions), weights.c (weights
 * files) and emit.c (emission); private to libtyc. */
#ifndef TY_COMPILER_MODEL_INT_H
#define TY_COMPILER_MODEL_INT_H

#include "tyc_int.h"

#define TYC_MAX_LAYERS 16
#define TYC_MAX_PARAMS 128

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

/* A session's store: parameters first (slots 0..nparams-1), then the optimizer state. */
struct entry {
    char name[48];
    float *data;
    size_t numel;
    int nd, dim[4];
    int trainable;
};

/* One graph (training or evaluation) ready to run on the CPU. */
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

struct tyc__cuda_exec;
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

/* models_layers.c: layered (dense, conv2d, maxpool2d, flatten) models */
/* The fields of a layered spec object j ('input', 'classes', 'loss', 'layers') into m.
   0, or -1 with err set. */
int tyc__layers_parse(struct tyc_model *m, const struct tyc__json *j, struct tyc_err *err);
/* The weights and biases of a layered model, Glorot/He-uniform from rng. 0 or -1 (out of
   memory). */
int tyc__layers_init_params(struct tyc_session *s, const struct tyc_model *m, uint64_t *rng);
/* Forward graph: returns logits; OUT: ptens[] param tensor ids in store order. */
int tyc__layers_build_forward(struct tyc__graph *g, const struct tyc_model *m,
                              const struct tyc_session *s, int *ptens);

/* optim.c: the training graph after autodiff */
/* fp16 loss scaling over the np gradients grads[] (replaced by the unscaled ones). 0 or -1. */
int tyc__amp_nodes(struct tyc__graph *g, int *grads, int np);
/* The update of parameter tensor pt from grad by s's optimizer, its state from slot state0.
   0 or -1. */
int tyc__build_optimizer(struct tyc__graph *g, struct tyc_session *s, int pt, int grad, int state0);

/* session.c */
/* Brings parameters back from the GPU before the host reads them. 0 or an error. */
int tyc__session_sync_host(struct tyc_session *s);

#endif
