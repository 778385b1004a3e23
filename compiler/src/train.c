/* train.c - the built-in trainer shared by `tyc train` and trainyard-builtin: hyperparameters
 * (SageMaker passes every value as a string), data channels, the epoch loop with metric lines
 * that MetricDefinitions can match, the compiler debug dump and the saved model. Owns nothing
 * past the call. Errors are written to the failure file, one line, and returned. */
#include "tyc_int.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* text shipped by Debian's base-files (Essential: present on every install) */
#define TYC_TEXT_DEFAULT "/usr/share/common-licenses"

struct hp {
    char model[1024];
    int epochs, batch, compiler, debug, train_subset;
    int optimizer, precision, target;
    int threads; /* 0: all cores */
    double lr, momentum;
    uint64_t seed;
    unsigned passes;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void emit(void (*line_fn)(void *, const char *), void *ud, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void emit(void (*line_fn)(void *, const char *), void *ud, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (line_fn)
        line_fn(ud, line);
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "1") || !strcmp(v, "yes"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "0") || !strcmp(v, "no"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int parse_int(const char *v, int lo, int hi, int *out)
{
    char *end;
    long x;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return -1;
    *out = (int)x;
    return 0;
}

static int parse_num(const char *v, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x))
        return -1;
    *out = x;
    return 0;
}

static int set_hp(struct hp *h, const char *k, const char *v, struct tyc_err *err)
{
    int bad = 0;
    if (!strcmp(k, "model"))
        snprintf(h->model, sizeof(h->model), "%s", v);
    else if (!strcmp(k, "epochs"))
        bad = parse_int(v, 1, 10000, &h->epochs);
    else if (!strcmp(k, "batch_size"))
        bad = parse_int(v, 1, 1 << 16, &h->batch);
    else if (!strcmp(k, "threads") || !strcmp(k, "tyc_threads"))
        bad = parse_int(v, 0, 1024, &h->threads);
    else if (!strcmp(k, "train_subset"))
        bad = parse_int(v, 0, 1 << 24, &h->train_subset);
    else if (!strcmp(k, "learning_rate"))
        bad = parse_num(v, &h->lr) || !(h->lr > 0 && h->lr < 10);
    else if (!strcmp(k, "momentum"))
        bad = parse_num(v, &h->momentum) || h->momentum < 0 || h->momentum >= 1;
    else if (!strcmp(k, "seed")) {
        int s = 0;
        bad = parse_int(v, 0, 2147483647, &s);
        h->seed = (uint64_t)s;
    } else if (!strcmp(k, "optimizer")) {
        if (!strcmp(v, "adam"))
            h->optimizer = TYC_ADAM;
        else if (!strcmp(v, "sgd"))
            h->optimizer = TYC_SGD;
        else
            return tyc__err_set(err, TYC_EINVAL, k,
                                "hyperparameter 'optimizer' is '%s'; use 'adam' or 'sgd'", v);
    } else if (!strcmp(k, "precision") || !strcmp(k, "mixed_precision")) {
        /* the generated CUDA's compute precision; the CPU always runs fp32 */
        if ((h->precision = tyc_precision_from_name(v)) < 0)
            return tyc__err_set(err, TYC_EINVAL, k,
                                "hyperparameter '%s' is '%s'; use 'fp32', 'bf16' or 'fp16'", k, v);
    } else if (!strcmp(k, "target")) {
        if (!strcmp(v, "cpu") || !strcmp(v, "cuda"))
            h->target = v[0] == 'c' && v[1] == 'u' ? TYC_TARGET_CUDA : TYC_TARGET_CPU;
        else
            return tyc__err_set(err, TYC_EINVAL, k,
                                "hyperparameter 'target' is '%s'; use 'cpu' or 'cuda'", v);
    } else if (!strcmp(k, "sagemaker_training_compiler_enabled"))
        bad = parse_bool(v, &h->compiler);
    else if (!strcmp(k, "sagemaker_training_compiler_debug_mode"))
        bad = parse_bool(v, &h->debug);
    else if (!strcmp(k, "compiler_disable_passes")) {
        char tmp[256], *tok, *save = NULL;
        snprintf(tmp, sizeof(tmp), "%s", v);
        for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            unsigned bit = tyc_pass_from_name(tok);
            if (!bit)
                return tyc__err_set(err, TYC_EINVAL, k, "unknown pass '%s'", tok);
            h->passes &= ~bit;
        }
    } else if (strncmp(k, "sagemaker_", 10) != 0)
        tyc__log(1, "event=tyc.hyperparameter.ignored name=%s", k);
    if (bad)
        return tyc__err_set(err, TYC_EINVAL, k, "hyperparameter '%s' has a bad value '%s'", k, v);
    return 0;
}

static int load_hp(struct hp *h, const char *path, struct tyc_err *err)
{
    FILE *f;
    char *buf;
    size_t n;
    struct tyc__json *j;
    int i, rc = 0;
    if (!path)
        return 0;
    f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        return tyc__err_set(err, TYC_EIO, "hyperparameters", "cannot open '%s': %s", path,
                            strerror(errno));
    }
    buf = tyc__malloc(1 << 20);
    if (!buf) {
        fclose(f);
        return tyc__err_set(err, TYC_ENOMEM, "hyperparameters", "out of memory");
    }
    n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    j = tyc__json_parse(buf, n, err);
    tyc__free(buf);
    if (!j || j->type != TJ_OBJ) {
        char tmp[sizeof(err->msg)];
        snprintf(tmp, sizeof(tmp), "%s", j ? "not a JSON object" : err->msg);
        tyc__json_free(j);
        return tyc__err_set(err, TYC_EINVAL, "hyperparameters", "'%s': %s", path, tmp);
    }
    for (i = 0; i < j->nkids && rc == 0; i++) {
        const struct tyc__json *k = &j->kids[i];
        char v[1024];
        if (k->type == TJ_STR) {
            size_t n2 = strlen(k->str);
            /* the SageMaker SDK JSON-encodes framework hyperparameters: "\"adam\"" */
            if (n2 >= 2 && k->str[0] == '"' && k->str[n2 - 1] == '"')
                snprintf(v, sizeof(v), "%.*s", (int)(n2 - 2), k->str + 1);
            else
                snprintf(v, sizeof(v), "%s", k->str);
        } else if (k->type == TJ_NUM)
            snprintf(v, sizeof(v), "%.17g", k->num);
        else if (k->type == TJ_BOOL)
            snprintf(v, sizeof(v), "%s", k->num ? "true" : "false");
        else
            continue;
        rc = set_hp(h, k->key, v, err);
    }
    tyc__json_free(j);
    return rc;
}

static void write_failure(const char *path, const struct tyc_err *err)
{
    FILE *f;
    if (!path)
        return;
    f = fopen(path, "w");
    if (!f)
        return;
    fprintf(f, "%s\n", err->msg);
    fclose(f);
}

static int write_text(const char *dir, const char *name, const char *text)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static void mkdirs(const char *dir)
{
    char tmp[4096], *p;
    snprintf(tmp, sizeof(tmp), "%s", dir);
    for (p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    mkdir(tmp, 0755);
}

static void debug_dump(struct tyc_session *s, const char *dir,
                       void (*line_fn)(void *, const char *), void *ud)
{
    static const struct {
        int what;
        const char *file;
    } items[] = {{TYC_EMIT_PASSLOG, "passes.log"},
                 {TYC_EMIT_IR, "graph.ir"},
                 {TYC_EMIT_C, "cpu_kernels.txt"},
                 {TYC_EMIT_CUDA, "kernels.cu"},
                 {TYC_EMIT_PTX, "kernels.ptx"}};
    size_t i;
    mkdirs(dir);
    for (i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
        char *text = NULL;
        struct tyc_err e = {0};
        if (tyc_session_emit(s, items[i].what, &text, &e) == 0) {
            write_text(dir, items[i].file, text);
            tyc_free(text);
        } else
            emit(line_fn, ud, "compiler debug: skipped %s: %s", items[i].file, e.msg);
    }
    emit(line_fn, ud, "compiler debug: wrote IR, pass log and generated code to %s", dir);
}

static double accuracy(struct tyc_session *s, const struct tyc_dataset *d, int *rc)
{
    int yl = d->ylen > 0 ? d->ylen : 1;
    int32_t *pred = tyc__malloc((size_t)d->n * (size_t)yl * sizeof(int32_t));
    long i, ok = 0;
    if (!pred) {
        *rc = -TYC_ENOMEM;
        return 0;
    }
    *rc = tyc_session_predict(s, d->x, d->n, pred);
    for (i = 0; i < (long)d->n * yl && *rc == 0; i++)
        ok += pred[i] == d->y[i];
    tyc__free(pred);
    return d->n ? (double)ok / ((double)d->n * yl) : 0;
}

/* The hyperparameters: defaults, then p's hyperparameters file, then overrides ("key=value").
   0 or error with err. */
static int hp_read(struct hp *h, const struct tyc_train_paths *p, const char *const *overrides,
                   struct tyc_err *err)
{
    int rc, i;

    memset(h, 0, sizeof(*h));
    snprintf(h->model, sizeof(h->model), "mlp");
    h->epochs = 2;
    h->batch = 64;
    h->lr = 1e-3;
    h->momentum = 0.9;
    h->seed = 42;
    h->optimizer = TYC_ADAM;
    h->passes = TYC_PASS_ALL;
    rc = load_hp(h, p->hyperparameters, err);
    for (i = 0; rc == 0 && overrides && overrides[i]; i++) {
        char k[128];
        const char *eq = strchr(overrides[i], '=');
        if (!eq || (size_t)(eq - overrides[i]) >= sizeof(k)) {
            rc = tyc__err_set(err, TYC_EINVAL, "", "bad override '%s' (want key=value)",
                              overrides[i]);
            break;
        }
        memcpy(k, overrides[i], (size_t)(eq - overrides[i]));
        k[eq - overrides[i]] = 0;
        rc = set_hp(h, k, eq + 1, err);
    }
    return rc;
}

/* Every label of tr and va (may be NULL), yl per example, is below classes. 0 or error. */
static int labels_check(const struct tyc_dataset *tr, const struct tyc_dataset *va, int yl,
                        int classes, struct tyc_err *err)
{
    int nv = va ? va->n : 0;

    for (int i = 0; i < (tr->n + nv) * yl; i++) {
        int lab = i < tr->n * yl ? tr->y[i] : va->y[i - tr->n * yl];
        if (lab >= classes)
            return tyc__err_set(err, TYC_EDATA, "data",
                                "%s label %d at index %d is not below the model's %d classes",
                                i < tr->n * yl ? "training" : "validation", lab,
                                (i < tr->n * yl ? i : i - tr->n * yl) / yl, classes);
    }
    return 0;
}

/* Fisher-Yates over perm[0..n) with an LCG whose state is *rng. */
static void shuffle(int32_t *perm, int n, uint64_t *rng)
{
    for (int i = n - 1; i > 0; i--) {
        int j, t;
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        j = (int)((*rng >> 33) % (uint64_t)(i + 1));
        t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* The session options the hyperparameters h ask for. OUT: o. */
static void options_of(struct tyc_options *o, const struct hp *h)
{
    tyc_options_init(o);
    o->mode = h->compiler ? TYC_COMPILED : TYC_EAGER;
    o->passes = h->passes;
    o->batch = h->batch;
    o->optimizer = h->optimizer;
    o->lr = (float)h->lr;
    o->momentum = (float)h->momentum;
    o->seed = h->seed;
    o->precision = h->precision;
    o->target = h->target;
    o->threads = h->threads;
}

/* Saves the trained weights and model.json in p->model_dir. 0 or error with err. */
static int model_save(const struct tyc_train_paths *p, struct tyc_session *s,
                      const struct tyc_model *m, void (*line_fn)(void *, const char *), void *ud,
                      struct tyc_err *err)
{
    int rc;

    mkdirs(p->model_dir);
    rc = tyc_session_save(s, p->model_dir, err);
    if (rc < 0)
        return rc;
    if (write_text(p->model_dir, "model.json", tyc_model_json(m)) != 0) {
        rc = tyc__err_set(err, TYC_EIO, "model_dir", "cannot write model.json in '%s'",
                          p->model_dir);
        return rc;
    }
    emit(line_fn, ud, "saved model to %s (model.json, weights.tyw)", p->model_dir);
    return 0;
}

/* The line that describes the run: model, mode, optimizer, sizes and the session's stats. */
static void emit_setup(void (*line_fn)(void *, const char *), void *ud, const struct hp *h,
                       struct tyc_session *s, int ntrain, int nval)
{
    struct tyc_stats stt;
    tyc_session_stats(s, &stt);
    emit(line_fn, ud,
         "model=%s mode=%s optimizer=%s batch_size=%d train_examples=%d val_examples=%d "
         "kernels_per_step=%d primitive_ops=%d peak_bytes=%zu threads=%d",
         h->model, h->compiler ? "compiled" : "eager", h->optimizer == TYC_ADAM ? "adam" : "sgd",
         h->batch, ntrain, nval, stt.train_kernels, stt.nodes_before, stt.peak_bytes, stt.threads);
}

int tyc_train_main(const struct tyc_train_paths *p, const char *const *overrides,
                   void (*line_fn)(void *, const char *), void *ud)
{
    struct hp h;
    struct tyc_err err = {0};
    struct tyc_model *m = NULL;
    struct tyc_session *s = NULL;
    struct tyc_dataset tr = {0}, va = {0};
    struct tyc_options o;
    struct stat st;
    float *xb = NULL;
    int32_t *yb = NULL, *perm = NULL;
    int rc, e, i, b, have_val = 0, yl;
    const char *train_dir;
    uint64_t rng;
    int64_t step = 0; /* profiler step number, over all epochs */
    double t_all = now_s();

    rc = hp_read(&h, p, overrides, &err);
    if (rc < 0)
        goto fail;
    if (h.compiler) {
        emit(line_fn, ud, "Found configuration for Training Compiler");
        emit(line_fn, ud, "Configuring SM Training Compiler...");
        if (h.debug)
            emit(line_fn, ud, "Training Compiler set to debug mode");
    }
    m = tyc_model_load(h.model, &err);
    if (!m) {
        rc = -TYC_EMODEL;
        goto fail;
    }
    train_dir = p->train_dir        ? p->train_dir
                : tyc_model_kind(m) ? TYC_TEXT_DEFAULT
                                    : "/usr/share/datasets/fashion-mnist";
    rc = tyc_model_kind(m) ? tyc_dataset_load_text(&tr, train_dir, m, &err)
                           : tyc_dataset_load_dir(&tr, train_dir, "train", &err);
    if (rc < 0)
        goto fail;
    if (p->val_dir && stat(p->val_dir, &st) == 0) {
        rc = tyc_model_kind(m) ? tyc_dataset_load_text(&va, p->val_dir, m, &err)
                               : tyc_dataset_load_dir(&va, p->val_dir, "t10k", &err);
        if (rc < 0)
            goto fail;
        have_val = 1;
    }
    if (tr.dim != tyc_model_input_size(m) || (have_val && va.dim != tr.dim)) {
        rc = tyc__err_set(&err, TYC_EDATA, "data",
                          "examples have %d features but model '%s' expects %d", tr.dim, h.model,
                          tyc_model_input_size(m));
        goto fail;
    }
    yl = tr.ylen > 0 ? tr.ylen : 1;
    if ((rc = labels_check(&tr, have_val ? &va : NULL, yl, tyc_model_classes(m), &err)) < 0)
        goto fail;
    if (h.train_subset > 0 && h.train_subset < tr.n)
        tr.n = h.train_subset;
    if (tr.n < h.batch) {
        rc = tyc__err_set(&err, TYC_EDATA, "batch_size",
                          "batch size %d is larger than the %d training examples", h.batch, tr.n);
        goto fail;
    }
    options_of(&o, &h);
    s = tyc_session_new(m, &o, &err);
    if (!s) {
        rc = -err.code;
        goto fail;
    }
    emit_setup(line_fn, ud, &h, s, tr.n, have_val ? va.n : 0);
    if (h.compiler && h.debug && p->debug_dir)
        debug_dump(s, p->debug_dir, line_fn, ud);
    xb = tyc__malloc((size_t)h.batch * (size_t)tr.dim * sizeof(float));
    yb = tyc__malloc((size_t)h.batch * (size_t)yl * sizeof(int32_t));
    perm = tyc__malloc((size_t)tr.n * sizeof(int32_t));
    if (!xb || !yb || !perm) {
        rc = tyc__err_set(&err, TYC_ENOMEM, "", "out of memory");
        goto fail;
    }
    for (i = 0; i < tr.n; i++)
        perm[i] = i;
    rng = h.seed * 2654435761u + 1;
    for (e = 1; e <= h.epochs; e++) {
        double t0 = now_s(), loss_sum = 0, secs;
        int nb = tr.n / h.batch;
        shuffle(perm, tr.n, &rng);
        for (b = 0; b < nb; b++) {
            float loss = 0;
            int r;
            for (r = 0; r < h.batch; r++) {
                int idx = perm[b * h.batch + r];
                memcpy(xb + (size_t)r * tr.dim, tr.x + (size_t)idx * tr.dim,
                       (size_t)tr.dim * sizeof(float));
                memcpy(yb + (size_t)r * yl, tr.y + (size_t)idx * yl, (size_t)yl * sizeof(int32_t));
            }
            tyc__annot_step(step, 1);
            rc = tyc_session_step(s, xb, yb, &loss);
            tyc__annot_step(step++, 0);
            if (rc < 0) {
                tyc__err_set(&err, -rc, "", "training step failed: %s", tyc_strerror(rc));
                goto fail;
            }
            if (!isfinite(loss)) {
                rc = tyc__err_set(&err, TYC_EINVAL, "learning_rate",
                                  "training diverged (loss is not finite) at epoch %d", e);
                goto fail;
            }
            loss_sum += loss;
        }
        secs = now_s() - t0;
        if (have_val) {
            uint64_t ev = tyc__annot_begin("evaluate");
            double acc = accuracy(s, &va, &rc);
            tyc__annot_end(ev);
            if (rc < 0) {
                tyc__err_set(&err, -rc, "", "evaluation failed");
                goto fail;
            }
            emit(line_fn, ud,
                 "epoch=%d train_loss=%.4f val_accuracy=%.4f epoch_time_s=%.2f samples_per_s=%.0f",
                 e, loss_sum / nb, acc, secs, nb * h.batch / secs);
        } else
            emit(line_fn, ud, "epoch=%d train_loss=%.4f epoch_time_s=%.2f samples_per_s=%.0f", e,
                 loss_sum / nb, secs, nb * h.batch / secs);
    }
    if (p->model_dir && (rc = model_save(p, s, m, line_fn, ud, &err)) < 0)
        goto fail;
    emit(line_fn, ud, "training finished in %.1f s", now_s() - t_all);
    rc = 0;
    goto out;
fail:
    emit(line_fn, ud, "error: %s", err.msg);
    write_failure(p->failure_file, &err);
    if (rc >= 0)
        rc = -TYC_EINVAL;
out:
    tyc__free(xb);
    tyc__free(yb);
    tyc__free(perm);
    tyc_session_free(s);
    tyc_model_free(m);
    tyc_dataset_cleanup(&tr);
    tyc_dataset_cleanup(&va);
    return rc;
}
