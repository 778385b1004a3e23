/* tyc_int.h - libtyc internals shared across src/ files (tyc__ prefix).
 *
 * The IR: a graph owns tensors and nodes. Tensors are typed by kind (input fed by the host,
 * param = persistent state incl. optimizer moments, const scalar, temp = produced by one node).
 * Nodes are kept in a valid topological order by index at all times; passes mark nodes dead and
 * compact. ASSIGN nodes write a persistent tensor and are the only writers of params; no node
 * reads a param after the param's ASSIGN (the graph builder guarantees it, passes keep it).
 */
#ifndef TY_COMPILER_TYC_INT_H
#define TY_COMPILER_TYC_INT_H

#include "tyc.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define TYC_MAXDIM 4
#define TYC_MAXIN  16
#define TYC_MAXOUT 6
#define TYC_MAXUOP 48

/* Tensor kinds */
enum { TK_INPUT, TK_PARAM, TK_CONST, TK_TEMP };

/* Ops. EW_* are elementwise (second input may broadcast: same numel, last dim, or 1). */
#define TYC_OP_MAP(X)                                                                              \
    X(MATMUL, "matmul")                                                                            \
    X(ADD, "add")                                                                                  \
    X(SUB, "sub")                                                                                  \
    X(MUL, "mul")                                                                                  \
    X(DIV, "div")                                                                                  \
    X(SQRT, "sqrt")                                                                                \
    X(RELU, "relu")                                                                                \
    X(GELU, "gelu")                                                                                \
    X(TANH, "tanh")                                                                                \
    X(SIGMOID, "sigmoid")                                                                          \
    X(RELU_GRAD, "relu_grad")                                                                      \
    X(GELU_GRAD, "gelu_grad")                                                                      \
    X(TANH_GRAD, "tanh_grad")                                                                      \
    X(SIGMOID_GRAD, "sigmoid_grad")                                                                \
    X(SCALE, "scale")                                                                              \
    X(COPY, "copy")                                                                                \
    X(ASSIGN, "assign")                                                                            \
    X(REDUCE_COLS, "reduce_cols")                                                                  \
    X(XENT, "softmax_xent")                                                                        \
    X(XENT_GRAD, "softmax_xent_grad")                                                              \
    X(RESHAPE, "reshape")                                                                          \
    X(CONV2D, "conv2d")                                                                            \
    X(CONV2D_DX, "conv2d_grad_input")                                                              \
    X(CONV2D_DW, "conv2d_grad_weight")                                                             \
    X(BIAS_CHAN, "bias_channel")                                                                   \
    X(REDUCE_CHAN, "reduce_channel")                                                               \
    X(MAXPOOL, "maxpool2d")                                                                        \
    X(MAXPOOL_GRAD, "maxpool2d_grad")                                                              \
    X(MAXPOOL_GRAD_IDX, "maxpool2d_grad_index")                                                    \
    X(FUSED_EW, "fused_elementwise")                                                               \
    X(MATMUL_EPI, "matmul_epilogue")                                                               \
    X(XENT_FUSED, "softmax_xent_fused")                                                            \
    X(EMBED, "embedding")                                                                          \
    X(EMBED_GRAD, "embedding_grad")                                                                \
    X(LAYERNORM, "layer_norm")                                                                     \
    X(LAYERNORM_GRAD, "layer_norm_grad")                                                           \
    X(ATTN, "self_attention")                                                                      \
    X(ATTN_GRAD, "self_attention_grad")                                                            \
    X(DROPOUT, "dropout")                                                                          \
    X(DROPOUT_GRAD, "dropout_grad")                                                                \
    X(SEQMEAN, "sequence_mean")                                                                    \
    X(SEQMEAN_GRAD, "sequence_mean_grad")                                                          \
    X(AMP_CHECK, "amp_check_finite")                                                               \
    X(AMP_UNSCALE, "amp_unscale")                                                                  \
    X(AMP_UPDATE, "amp_update_scale")
enum tyc__op {
#define TYC_X_OP(n, s) OP_##n,
    TYC_OP_MAP(TYC_X_OP)
#undef TYC_X_OP
        OP__COUNT
};

/* Activation ids used by epilogues (0 none) map to OP_RELU.. */

struct tyc__tensor {
    int kind;
    int nd;
    int dim[TYC_MAXDIM];
    size_t numel;
    float cval;   /* TK_CONST value */
    int slot;     /* TK_INPUT / TK_PARAM: index in the session store */
    int producer; /* TK_TEMP: producing node, -1 otherwise */
    int alias;    /* passes: replaced by this tensor when >= 0 */
    char name[48];
    /* planning */
    int def, last; /* positions in the final schedule */
    size_t off;    /* arena offset (compiled) */
    float *data;   /* bound storage during execution */
};

/* A fused elementwise micro-op: reg[nin + i] = op(reg[a], reg[b]) with attribute f. */
struct tyc__uop {
    int op;
    int a, b;
    float f;
};

struct tyc__node {
    int op;
    int dead;
    int nin, nout;
    int in[TYC_MAXIN];
    int out[TYC_MAXOUT];
    int ta, tb;      /* MATMUL transposes */
    int stride, pad; /* CONV2D*: stride, zero padding; MAXPOOL*: window = stride */
    float f;         /* SCALE factor; XENT_GRAD folded dloss; */
    int has_f;       /* XENT_GRAD: dloss folded into f (no third input) */
    /* MATMUL_EPI: in[0..1] = a,b; optional bias (in index), act op, activation-gradient op with
     * its saved tensor in[epi_mask] (dgrad epilogue), colsum output (out index) */
    int epi_bias, epi_act, epi_mask, epi_colsum;
    int epi_gop; /* activation-gradient op applied with in[epi_mask] (relu mask, tanh', ...) */
    int epi_pre; /* out index (>= 1) that also receives the pre-activation (bias added, before
                    the activation) when the activation's gradient needs it (GELU); 0 none */
    /* transformer ops (ops_transformer.c): ATTN/ATTN_GRAD aux = {heads, seq len, causal};
     * DROPOUT* aux[0] = seed, f = drop probability; SEQMEAN* aux[1] = seq len;
     * LAYERNORM* f = epsilon */
    int aux[4];
    /* XENT_FUSED: out[0] loss, out[1] dlogits, out[2] colsum of dlogits (or absent) */
    /* FUSED_EW: program */
    int nuop;
    struct tyc__uop uop[TYC_MAXUOP];
    int outreg[TYC_MAXOUT];
};

struct tyc__graph {
    struct tyc__tensor *t;
    int nt, capt;
    struct tyc__node *n;
    int nn, capn;
    int outputs[8]; /* graph outputs (loss, logits) kept alive to the end */
    int nout;
    int failed;    /* allocation failure while building */
    int precision; /* enum tyc_precision of the generated CUDA (the CPU ignores it) */
    /* training graphs: nodes [0, phase_end[0]) are the forward pass and the loss,
     * [phase_end[0], phase_end[1]) the backward pass, the rest the optimizer (profiler ranges;
     * passes keep node indices). 0: no phases (evaluation graphs). */
    int phase_end[2];
};

/* alloc shim */
void *tyc__malloc(size_t n);
void *tyc__calloc(size_t n, size_t m);
void *tyc__realloc(void *p, size_t n);
void tyc__free(void *p);
char *tyc__strdup(const char *s);
#define tyc__safefree(p)                                                                           \
    do {                                                                                           \
        tyc__free(p);                                                                              \
        (p) = NULL;                                                                                \
    } while (0)

/* logging */
void tyc__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tyc__err_set(struct tyc_err *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* growable string with a ceiling */
struct tyc__buf {
    char *p;
    size_t len, cap, max;
    int oom;
};
void tyc__buf_init(struct tyc__buf *b, size_t max);
void tyc__buf_printf(struct tyc__buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tyc__buf_cleanup(struct tyc__buf *b);

/* ir.c */
const char *tyc__op_name(int op);
int tyc__op_is_ew(int op);
int tyc__graph_init(struct tyc__graph *g);
void tyc__graph_cleanup(struct tyc__graph *g);
int tyc__tensor_new(struct tyc__graph *g, int kind, int nd, const int *dim, const char *name);
int tyc__const(struct tyc__graph *g, float v);
int tyc__node_add(struct tyc__graph *g, int op, int nin, const int *in, int nout, const int *out);
/* Adds a node with one new temp output of the given shape; returns the output tensor id. */
int tyc__op1(struct tyc__graph *g, int op, int nin, const int *in, int nd, const int *dim);
int tyc__ew(struct tyc__graph *g, int op, int a, int b);
int tyc__matmul(struct tyc__graph *g, int a, int b, int ta, int tb);
/* x [N,C,H,W] conv w [F,C,K,K] -> [N,F,OH,OW]; returns the output tensor or -1. */
int tyc__conv2d(struct tyc__graph *g, int x, int w, int stride, int pad);
int tyc__maxpool(struct tyc__graph *g, int x, int k);
void tyc__graph_compact(struct tyc__graph *g);
void tyc__graph_dump(const struct tyc__graph *g, struct tyc__buf *b);
int tyc__consumers(const struct tyc__graph *g, int tensor, int *first, int *count);
int tyc__is_output(const struct tyc__graph *g, int tensor);

/* autodiff.c: appends backward nodes for loss wrt params (requires_grad from params only);
 * OUT: grads[i] = grad tensor of params[i]. */
int tyc__autodiff(struct tyc__graph *g, int loss, const int *params, int np, int *grads);

/* passes.c */
struct tyc__passlog {
    struct tyc__buf b;
};
void tyc__run_passes(struct tyc__graph *g, unsigned passes, struct tyc__buf *log);
/* Plans liveness; with arena != 0 assigns offsets by best fit; returns the bytes needed. */
size_t tyc__plan_memory(struct tyc__graph *g, int arena);

/* pool.c: the session's thread pool (see pool.c's header for the determinism contract) */
struct tyc__pool;
/* What kernels run with: the pool (NULL: serial), shared scratch and per-thread scratch
 * (thread t owns local + t * local_n). */
struct tyc__cpu_ctx {
    struct tyc__pool *pool;
    int threads;
    float *shared, *local;
    size_t local_n;
};
/* Online CPUs allowed by the affinity mask (>= 1). */
int tyc__pool_default_threads(void);
/* threads <= 0: tyc__pool_default_threads(). Returns new (free with tyc__pool_free) or NULL. */
struct tyc__pool *tyc__pool_new(int threads);
void tyc__pool_free(struct tyc__pool *p);
int tyc__pool_threads(const struct tyc__pool *p);
/* Grows the scratch to at least shared + per_thread floats per thread. 0 or -TYC_ENOMEM. */
int tyc__pool_reserve(struct tyc__pool *p, size_t shared, size_t per_thread);
size_t tyc__pool_bytes(const struct tyc__pool *p);
/* OUT: c describes p's threads and scratch (valid until the next reserve). */
void tyc__pool_ctx(struct tyc__pool *p, struct tyc__cpu_ctx *c);
/* Runs fn(ctx, task, tid) for task in [0, ntasks) on the pool's threads (the caller is tid 0)
 * and returns when all are done; p NULL runs them in order on the caller. */
void tyc__pool_run(struct tyc__pool *p, int ntasks, void (*fn)(void *ctx, int task, int tid),
                   void *ctx);
/* Binds the context the calling thread's kernels use (NULL: serial with the scratch argument).
 * borrowed: c must outlive the binding. */
void tyc__pool_bind(const struct tyc__cpu_ctx *c);
const struct tyc__cpu_ctx *tyc__pool_bound(void);

/* gemm.c: C[M,N] = op(A) op(B) (row-major; ta: A stored [K,M], tb: B stored [N,K]). Every C
 * element is one fused multiply-add chain over k = 0..K-1 in order, whatever the ISA path
 * (AVX-512, AVX2+FMA or portable fmaf), blocking or thread count: results are bitwise
 * reproducible. epi(ctx, r0, r1, c0, c1) runs once per finished C tile, on the thread that
 * computed it. Workspace: tyc__gemm_ws() floats shared + per thread (serial: their sum). */
typedef void (*tyc__epi_fn)(void *ctx, int r0, int r1, int c0, int c1);
void tyc__gemm_ws(int M, int N, int K, int tb, size_t *shared, size_t *per_thread);
void tyc__gemm_par(const struct tyc__cpu_ctx *c, int M, int N, int K, const float *A, int ta,
                   const float *B, int tb, float *C, tyc__epi_fn epi, void *ectx);
/* One thread; ws holds tyc__gemm_ws()'s shared + per_thread floats. */
void tyc__gemm_serial(int M, int N, int K, const float *A, int ta, const float *B, int tb, float *C,
                      float *ws, tyc__epi_fn epi, void *ectx);
/* "avx512", "avx2" or "portable": the micro-kernel this CPU runs. */
const char *tyc__gemm_isa(void);

/* cpu.c */
struct tyc__cpu {
    float *scratch; /* tile registers + transposes */
    size_t scratch_n;
};
int tyc__cpu_scratch_need(const struct tyc__graph *g, size_t *floats);
/* OUT: the most shared floats and floats per thread any node of g needs on a pool. */
void tyc__cpu_scratch_split(const struct tyc__graph *g, size_t *shared, size_t *local);
void tyc__cpu_run_node(const struct tyc__graph *g, const struct tyc__node *nd, float *scratch);
void tyc__gemm(int M, int N, int K, const float *A, int ta, const float *B, int tb, float *C,
               float *scratch);
void tyc__xent_row(const float *x, int C, int label, float *loss_out, float *grad, float gscale);

/* Session input slots (TK_INPUT tensors): the batch, labels, Adam bias corrections, the step
 * counter (dropout masks) and the position ids 0..T-1 per row (positional embeddings). */
enum { SLOT_X, SLOT_Y, SLOT_C1, SLOT_C2, SLOT_STEP, SLOT_POS, SLOT__N };

/* ops_transformer.c: the transformer ops' CPU kernels and gradient rules */
int tyc__tf_is_op(int op);
/* Runs a transformer op on c's pool and scratch (bitwise the same for every thread count). */
void tyc__tf_cpu_run(const struct tyc__graph *g, const struct tyc__node *nd,
                     const struct tyc__cpu_ctx *c);
/* OUT: the floats of shared and per-thread scratch tyc__tf_cpu_run needs for n. */
void tyc__tf_scratch(const struct tyc__graph *g, const struct tyc__node *n, size_t *shared,
                     size_t *local);
/* Appends the backward nodes of forward node n given dy (gradient of n->out[0]).
 * OUT: din[j] = gradient tensor of n->in[j] or -1. Returns 0 or -1. */
int tyc__tf_backward(struct tyc__graph *g, const struct tyc__node *n, int dy, int *din);
int tyc__embed(struct tyc__graph *g, int ids, int table);
int tyc__layernorm(struct tyc__graph *g, int x, int gamma, int beta, float eps);
int tyc__attention(struct tyc__graph *g, int qkv, int heads, int seq, int causal);
int tyc__dropout(struct tyc__graph *g, int x, int step, float p, uint32_t seed);
int tyc__seqmean(struct tyc__graph *g, int x, int seq);
/* the dropout mask: 1 when element i is kept at this step (the same hash on CPU and GPU) */
int tyc__dropout_keep(uint32_t seed, uint32_t step, uint32_t i, float p);

/* models_gpt.c: transformer model specs ("type": "gpt" or "encoder") and their graphs */
struct tyc__tfspec {
    int kind; /* 0 not a transformer, TYC_KIND_GPT, TYC_KIND_ENCODER */
    int vocab, context, width, heads, layers, mlp;
    float dropout;
};
struct tyc__json;
/* Parses the transformer fields of a spec object into ts. Returns 0 or -1 with err set. */
int tyc__tf_parse(const struct tyc__json *j, struct tyc__tfspec *ts, int *classes,
                  struct tyc_err *err);
int tyc__tf_nparams(const struct tyc__tfspec *ts);
struct tyc_session;
/* session hooks (session.c) used by models_gpt.c and models_layers.c */
int tyc__session_add_param(struct tyc_session *s, const char *name, int nd, const int *dim);
float *tyc__session_param_data(struct tyc_session *s, int slot);
int tyc__session_batch(const struct tyc_session *s);
int tyc__param_tensor(struct tyc__graph *g, const struct tyc_session *s, int slot);
int tyc__input_tensor(struct tyc__graph *g, int slot, int nd, const int *dim, const char *name);
/* Creates the parameters (GPT-2 style init: N(0, 0.02), LN 1/0, biases 0) from rng. */
int tyc__tf_init_params(struct tyc_session *s, const struct tyc__tfspec *ts, int classes,
                        uint64_t *rng);
/* Forward graph: returns logits ([B*T, vocab] or [B, classes]); OUT: ptens[] in store order. */
int tyc__tf_build_forward(struct tyc__graph *g, const struct tyc__tfspec *ts, int classes,
                          const struct tyc_session *s, int *ptens, int train, uint64_t seed);

/* cuda_codegen.c */
int tyc__cuda_codegen(const struct tyc__graph *g, struct tyc__buf *b);
void tyc__c_listing(const struct tyc__graph *g, struct tyc__buf *b);

/* json.c: a small JSON reader (objects, arrays, strings, numbers, bools, null). */
enum { TJ_NULL, TJ_BOOL, TJ_NUM, TJ_STR, TJ_ARR, TJ_OBJ };
struct tyc__json {
    int type;
    double num;
    char *str; /* TJ_STR */
    char *key; /* member name inside an object */
    struct tyc__json *kids;
    int nkids;
};
/* Returns new (free with tyc__json_free) or NULL with err (position in msg). */
struct tyc__json *tyc__json_parse(const char *s, size_t len, struct tyc_err *err);
void tyc__json_free(struct tyc__json *j);
const struct tyc__json *tyc__json_get(const struct tyc__json *o, const char *key);

/* annot.c: profiler annotations through libtyprof when it is present (no-ops otherwise). */
uint64_t tyc__annot_begin(const char *name); /* name borrowed; returns 0 when not recording */
void tyc__annot_end(uint64_t h);
void tyc__annot_step(int64_t step, int begin);
/* Before node i of g (i = -1: after the last): closes the open phase range *h and opens the
 * next one when node i starts another phase. IN/OUT: *phase (-1 at first), *h (0 at first). */
void tyc__annot_phase(const struct tyc__graph *g, int i, int *phase, uint64_t *h);

/* sha256.c */
void tyc__sha256(const void *data, size_t len, uint8_t out[32]);
void tyc__sha256_hex(const void *data, size_t len, char out[65]);

#endif
