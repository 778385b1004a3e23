/* tyc.h - libtyc, trainyard's training compiler: the one public header.
 *
 * Owns: model specs (JSON), training sessions (forward + reverse-mode autodiff + optimizer as one
 * graph), the pass pipeline, the CPU back end (eager and compiled), CUDA C code generation and
 * NVRTC compilation (libnvrtc and libcuda are opened with dlopen at run time), the IDX data reader
 * and the built-in trainer loop shared by `tyc train` and `trainyard-builtin`.
 * Does not own: the /opt/ml container contract beyond reading paths it is given.
 *
 * Conventions: functions return 0 or a negative -TYC_E* code, or a pointer or NULL; details go
 * into a caller-provided struct tyc_err. The library never prints: it logs through the callback
 * set with tyc_set_log(). Objects are not thread-safe; distinct objects may be used from distinct
 * threads. All tensors are fp32 with static shapes.
 */
#ifndef TY_COMPILER_TYC_H
#define TY_COMPILER_TYC_H

#include <stddef.h>
#include <stdint.h>

#ifndef TY_EXPORT
#define TY_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes; only ever appended. */
#define TYC_ERR_MAP(X)                                                                             \
    X(OK, 0, "ok")                                                                                 \
    X(EINVAL, 1, "invalid argument")                                                               \
    X(ENOMEM, 2, "out of memory")                                                                  \
    X(EIO, 3, "i/o error")                                                                         \
    X(EGPU, 4, "gpu error")                                                                        \
    X(EUNSUPPORTED, 5, "unsupported")                                                              \
    X(EDATA, 6, "bad data")                                                                        \
    X(EMODEL, 7, "bad model")
enum tyc_code {
#define TYC_X_ENUM(name, val, str) TYC_##name = val,
    TYC_ERR_MAP(TYC_X_ENUM)
#undef TYC_X_ENUM
};

/* Error details: code and a one-line lower-case message naming the field. */
struct tyc_err {
    int code;
    char field[64];
    char msg[256];
};

/* Returns a static string for a code (positive or negative). */
TY_EXPORT const char *tyc_strerror(int code);

/* Logging: the library calls fn(ud, level, line) with a complete line without newline.
 * Levels: 0 error, 1 warn, 2 info, 3 debug. Default: no logging. Not thread-safe to change. */
typedef void (*tyc_log_fn)(void *ud, int level, const char *line);
TY_EXPORT void tyc_set_log(tyc_log_fn fn, void *ud, int max_level);

/* Allocator hook (hiredis style); NULL members restore the libc default. Set before any object
 * is created. */
struct tyc_allocators {
    void *(*malloc_fn)(size_t);
    void *(*calloc_fn)(size_t, size_t);
    void *(*realloc_fn)(void *, size_t);
    void (*free_fn)(void *);
};
TY_EXPORT void tyc_set_allocators(const struct tyc_allocators *a);

/* ---- models ---------------------------------------------------------------------------------- */
struct tyc_model;

/* Parses a model spec (see compiler/README section and compiler/examples/).
 * Returns new: caller frees with tyc_model_free(); NULL with err set (TYC_EMODEL). */
TY_EXPORT struct tyc_model *tyc_model_parse(const char *json, size_t len, struct tyc_err *err);
/* Reads a model file, or returns a built-in: "mlp" (784-256-10), "mlp-small" (784-64-10),
 * "mlp-large" (784-1024-1024-10), "cnn" (conv8-pool-conv16-pool-dense10). Returns new or NULL
 * with err set (TYC_EMODEL, message names the file and the field). */
TY_EXPORT struct tyc_model *tyc_model_load(const char *path_or_name, struct tyc_err *err);
TY_EXPORT void tyc_model_free(struct tyc_model *m);
/* borrowed: valid while m lives */
TY_EXPORT const char *tyc_model_json(const struct tyc_model *m);
TY_EXPORT int tyc_model_input_size(const struct tyc_model *m);
TY_EXPORT int tyc_model_classes(const struct tyc_model *m);
/* Model kinds: layer lists (inputs are floats, one label per example), a GPT-style causal
 * character LM (inputs are `context` token ids, one label per position) and a BERT-style encoder
 * classifier (`context` token ids, one label per example). Built-ins "gpt-tiny", "bert-tiny". */
enum { TYC_KIND_LAYERS = 0, TYC_KIND_GPT = 1, TYC_KIND_ENCODER = 2 };
TY_EXPORT int tyc_model_kind(const struct tyc_model *m);
/* Labels per example: context for TYC_KIND_GPT, else 1. */
TY_EXPORT int tyc_model_labels_per_example(const struct tyc_model *m);

/* ---- sessions -------------------------------------------------------------------------------- */
enum tyc_mode { TYC_EAGER = 0, TYC_COMPILED = 1 };
enum tyc_optimizer { TYC_SGD = 0, TYC_ADAM = 1 };
enum tyc_target { TYC_TARGET_CPU = 0, TYC_TARGET_CUDA = 1 };
enum tyc_precision { TYC_FP32 = 0, TYC_BF16 = 1, TYC_FP16 = 2 };
/* "fp32", "bf16", "fp16" (also "float32", "bfloat16", "float16") -> enum, or -1 */
TY_EXPORT int tyc_precision_from_name(const char *name);

/* Passes; TYC_PASS_ALL is the compiled default. Eager mode runs none of them. */
#define TYC_PASS_DCE      (1u << 0) /* dead-code elimination */
#define TYC_PASS_CSE      (1u << 1) /* common-subexpression elimination (incl. constants) */
#define TYC_PASS_SIMPLIFY (1u << 2) /* algebraic simplification, constant folding */
#define TYC_PASS_EPILOGUE (1u << 3) /* matmul epilogue: bias, activation, relu mask, bias grad */
#define TYC_PASS_XENT     (1u << 4) /* fused softmax-cross-entropy fwd+bwd (+ bias grad) */
#define TYC_PASS_EWFUSE   (1u << 5) /* elementwise fusion (whole optimizer update per param) */
#define TYC_PASS_MEMPLAN  (1u << 6) /* liveness-based buffer reuse in one arena */
#define TYC_PASS_MASKS    (1u << 7) /* keep pooling indices + pooled sign, not activations */
#define TYC_PASS_ALL      0xffu

/* Returns the pass bit for a name ("dce", "cse", "simplify", "epilogue", "xent", "ewfuse",
 * "memplan", "masks", "all") or 0. */
TY_EXPORT unsigned tyc_pass_from_name(const char *name);

struct tyc_options {
    int mode;        /* enum tyc_mode */
    unsigned passes; /* TYC_PASS_* bits, used when mode == TYC_COMPILED */
    int target;      /* enum tyc_target; CUDA runs the training step through the driver API
                        (untested: no GPU in CI) and falls back to the CPU, with a warning log
                        line, when libcuda.so.1 or a device is missing; evaluation (predict)
                        always runs on the CPU */
    int batch;       /* batch size, > 0 */
    int optimizer;   /* enum tyc_optimizer */
    float lr;        /* learning rate */
    float momentum;  /* SGD momentum */
    float beta1, beta2, eps;
    uint64_t seed;         /* weight initialisation */
    const char *cache_dir; /* NVRTC cache dir or NULL for $TYC_CACHE_DIR or ~/.cache/tyc */
    int precision;         /* enum tyc_precision: the generated CUDA's compute precision
                              (TYC_FP32 default; bf16/fp16 round GEMM and attention operands,
                              fp32 accumulation and fp32 master weights, fp16 with dynamic loss
                              scaling); the CPU always computes in fp32 */
    int eager_cache;       /* eager: keep each tensor's own buffer across steps (as a caching
                              allocator would) instead of malloc/free of every tensor every step */
    int threads;           /* CPU threads for the kernels, 0..1024; 0 (default): all online cores
                              the affinity mask allows. Results are bitwise equal for every
                              thread count (work is split over independent outputs only) */
};
/* Fills defaults: compiled, all passes, cpu, batch 64, adam, lr 1e-3, momentum 0.9, all cores. */
TY_EXPORT void tyc_options_init(struct tyc_options *o);

struct tyc_session;
/* Builds the training graph (forward, autodiff, optimizer) and the evaluation graph, runs the
 * passes and plans memory; with target CUDA and a GPU, also generates, compiles (NVRTC, cached)
 * and loads the step's kernels. Returns new: caller frees with tyc_session_free(); NULL with
 * err set (TYC_EINVAL for bad options, TYC_ENOMEM, TYC_EGPU). */
TY_EXPORT struct tyc_session *tyc_session_new(const struct tyc_model *m,
                                              const struct tyc_options *o, struct tyc_err *err);
TY_EXPORT void tyc_session_free(struct tyc_session *s);

/* One optimizer step on a batch: x is batch * input_size floats (NCHW for convolutional
 * models; token ids for transformers), y batch * labels_per_example labels in [0, classes). OUT:
 * *loss (mean over the batch) when loss is not NULL. Returns 0, -TYC_EDATA (label out of range),
 * -TYC_ENOMEM or -TYC_EGPU. */
TY_EXPORT int tyc_session_step(struct tyc_session *s, const float *x, const int32_t *y,
                               float *loss);
/* Predicts classes for n rows (any n; batched internally).
 * OUT: pred[n * labels_per_example] (one per position for TYC_KIND_GPT). */
TY_EXPORT int tyc_session_predict(struct tyc_session *s, const float *x, int n, int32_t *pred);

/* Logits of the evaluation graph for n rows (any n; batched internally), as the training step's
 * forward pass computes them. OUT: out[n * classes] (per token for sequence models:
 * n * context * classes). Returns 0, -TYC_ENOMEM or -TYC_EGPU. */
TY_EXPORT int tyc_session_logits(struct tyc_session *s, const float *x, int n, float *out);
/* The gradient of parameter i computed by the last tyc_session_step(), for tests against other
 * frameworks: only in eager mode with eager_cache set (compiled mode fuses it into the update and
 * reuses its memory). borrowed: valid until the next step. Returns the name or NULL.
 * OUT: *data, *numel. */
TY_EXPORT const char *tyc_session_grad(const struct tyc_session *s, int i, float **data,
                                       size_t *numel);
/* OUT: *nd and dims[0..nd) of parameter i. Returns 0 or -TYC_EINVAL. */
TY_EXPORT int tyc_session_param_shape(const struct tyc_session *s, int i, int *nd, int dims[4]);

/* Parameters, in a fixed order (layer order; weight then bias). */
TY_EXPORT int tyc_session_param_count(const struct tyc_session *s);
/* borrowed: valid while s lives. OUT: *numel. */
TY_EXPORT const char *tyc_session_param(const struct tyc_session *s, int i, float **data,
                                        size_t *numel);

struct tyc_stats {
    int train_kernels;  /* kernels launched per training step */
    int eval_kernels;   /* kernels per evaluation batch */
    size_t param_bytes; /* parameters + optimizer state */
    size_t temp_bytes;  /* peak bytes of intermediates per step (arena, or eager sum) */
    size_t peak_bytes;  /* param_bytes + temp_bytes + scratch */
    int nodes_before;   /* primitive nodes in the training graph */
    int threads;        /* CPU threads the session runs its kernels on */
};
TY_EXPORT void tyc_session_stats(const struct tyc_session *s, struct tyc_stats *st);

/* Writes the model (spec + weights) into dir: model.json and weights.tyw (see README).
 * Returns 0 or -TYC_EIO with err set. */
TY_EXPORT int tyc_session_save(const struct tyc_session *s, const char *dir, struct tyc_err *err);
/* Loads weights.tyw written by tyc_session_save() into s (names and shapes must match).
 * Returns 0, -TYC_EIO, -TYC_EDATA (mismatch) or -TYC_EUNSUPPORTED for a GPU session. */
TY_EXPORT int tyc_session_load_weights(struct tyc_session *s, const char *path,
                                       struct tyc_err *err);

enum tyc_emit { TYC_EMIT_IR = 0, TYC_EMIT_PASSLOG, TYC_EMIT_CUDA, TYC_EMIT_PTX, TYC_EMIT_C };
/* Renders the training graph after passes (IR), the pass log, the generated CUDA C, the PTX
 * compiled by NVRTC, or the CPU kernel schedule (C-like listing).
 * OUT: *out new: caller frees with tyc_free(). Returns 0, -TYC_EUNSUPPORTED (no NVRTC) or error. */
TY_EXPORT int tyc_session_emit(struct tyc_session *s, int what, char **out, struct tyc_err *err);
TY_EXPORT void tyc_free(void *p);

/* ---- NVRTC ----------------------------------------------------------------------------------- */
/* 1 when libnvrtc could be opened (dlopen), else 0. OUT: version when not NULL. */
TY_EXPORT int tyc_nvrtc_available(int *major, int *minor);
/* 1 when libcuda opened, cuInit succeeded and a device exists, else 0. */
TY_EXPORT int tyc_cuda_available(void);
/* Compiles CUDA C source to PTX for arch ("compute_90") with NVRTC, using the on-disk cache.
 * OUT: *ptx new (caller frees with tyc_free()), *cached 1 when served from cache. */
TY_EXPORT int tyc_nvrtc_compile(const char *src, const char *arch, const char *cache_dir,
                                char **ptx, int *cached, struct tyc_err *err);

/* ---- data ------------------------------------------------------------------------------------ */
struct tyc_dataset {
    int n;      /* examples */
    int dim;    /* features per example (rows*cols) */
    float *x;   /* n*dim, scaled to [0,1] */
    int32_t *y; /* n * ylen labels */
    int ylen;   /* labels per example (0 means 1) */
};
/* Reads the regular files of dir (sorted by name; or dir itself when it is a file) as text for a
 * transformer model: bytes >= 128 become '?'. TYC_KIND_GPT: consecutive windows of context + 1
 * bytes (x = the first context bytes, y = the next ones); TYC_KIND_ENCODER: windows of context
 * bytes labelled by the index of their file (fewer than `classes` files). Returns 0 or
 * -TYC_EDATA / -TYC_EIO with err set. */
TY_EXPORT int tyc_dataset_load_text(struct tyc_dataset *ds, const char *dir,
                                    const struct tyc_model *m, struct tyc_err *err);
/* Reads an IDX image file and an IDX label file (gzip or not). Returns 0 or -TYC_EDATA /
 * -TYC_EIO with err set. ds: filled on success; release with tyc_dataset_cleanup(). */
TY_EXPORT int tyc_dataset_load(struct tyc_dataset *ds, const char *images, const char *labels,
                               struct tyc_err *err);
/* Finds the images/labels pair in a channel directory; prefer: a name prefix such as "train" or
 * "t10k" chosen when several pairs exist (may be NULL). */
TY_EXPORT int tyc_dataset_load_dir(struct tyc_dataset *ds, const char *dir, const char *prefer,
                                   struct tyc_err *err);
TY_EXPORT void tyc_dataset_cleanup(struct tyc_dataset *ds);

/* ---- the built-in trainer -------------------------------------------------------------------- */
struct tyc_train_paths {
    const char *hyperparameters; /* hyperparameters.json or NULL */
    const char *train_dir;       /* train channel */
    const char *val_dir;         /* validation channel or NULL */
    const char *model_dir;       /* output model dir */
    const char *debug_dir;       /* compiler debug dump dir (used in debug mode) */
    const char *failure_file;    /* failure reason file or NULL */
};
/* Runs the built-in trainer: parses hyperparameters (SageMaker string values accepted), loads
 * data, trains, logs `epoch=N train_loss=X val_accuracy=Y` lines through line_fn, saves the
 * model. Returns 0, or a negative code after writing the reason to failure_file. */
TY_EXPORT int tyc_train_main(const struct tyc_train_paths *p, const char *const *overrides,
                             void (*line_fn)(void *ud, const char *line), void *ud);

#ifdef __cplusplus
}
#endif
#endif
