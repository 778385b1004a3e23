/* tyc.c - the tyc command: compile (show passes, IR, generated CUDA/PTX/C), train (the built-in
 * trainer outside a container) and bench (eager vs compiled, side by side, with ratios). */
#include "tyc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(void)
{
    fprintf(
        stderr,
        "usage: tyc compile MODEL [--target cpu|cuda] [--emit ir|passes|cuda|ptx|c]\n"
        "                         [--mode eager|compiled] [--disable PASS[,PASS]] [--batch N]\n"
        "                         [--optimizer adam|sgd] [--precision fp32|bf16|fp16]\n"
        "                         [--threads N]\n"
        "       tyc train [--model MODEL] [--train DIR] [--validation DIR] [--model-dir DIR]\n"
        "                 [--debug-dir DIR] [--hyperparameters FILE] [--threads N]\n"
        "                 [key=value ...]\n"
        "                 (--train defaults to /usr/share/datasets/fashion-mnist, or to\n"
        "                 /usr/share/common-licenses for gpt-tiny and bert-tiny; keys are the\n"
        "                 built-in trainer's hyperparameters, e.g. epochs=2\n"
        "                 sagemaker_training_compiler_enabled=true)\n"
        "       tyc bench [--model MODEL] [--batch N[,N...]] [--steps N] [--warmup N]\n"
        "                 [--cap-mib N] [--optimizer adam|sgd] [--target cpu|cuda]\n"
        "                 [--precision fp32|bf16|fp16] (CUDA compute precision; the CPU is fp32)\n"
        "                 [--threads N[,N...]] [--modes eager,eager-cached,compiled]\n"
        "MODEL is a JSON file or a built-in name (mlp, mlp-small, mlp-large, cnn, gpt-tiny, "
        "bert-tiny);\n"
        "passes: dce cse simplify epilogue xent ewfuse memplan\n");
}

static void logline(void *ud, int level, const char *l)
{
    static const char *lv[] = {"error", "warn", "info", "debug"};
    (void)ud;
    fprintf(stderr, "ts=%ld level=%s %s\n", (long)time(NULL), lv[level & 3], l);
}

static int parse_disable(const char *list, unsigned *passes)
{
    char tmp[256], *tok, *save = NULL;
    snprintf(tmp, sizeof(tmp), "%s", list);
    for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned bit = tyc_pass_from_name(tok);
        if (!bit) {
            fprintf(stderr, "tyc: unknown pass '%s'\n", tok);
            return -1;
        }
        *passes &= ~bit;
    }
    return 0;
}

static int cmd_compile(int argc, char **argv)
{
    const char *model = NULL, *emit = "ir", *target = "cpu";
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_model *m;
    struct tyc_session *s;
    char *text = NULL;
    int i, what, rc;
    tyc_options_init(&o);
    for (i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--emit") && v)
            emit = argv[++i];
        else if (!strcmp(a, "--target") && v)
            target = argv[++i];
        else if (!strcmp(a, "--mode") && v) {
            o.mode = !strcmp(v, "eager") ? TYC_EAGER : TYC_COMPILED;
            i++;
        } else if (!strcmp(a, "--disable") && v) {
            if (parse_disable(argv[++i], &o.passes) < 0)
                return 2;
        } else if (!strcmp(a, "--batch") && v)
            o.batch = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--precision") && v) {
            if ((o.precision = tyc_precision_from_name(argv[++i])) < 0) {
                fprintf(stderr, "tyc: --precision must be fp32, bf16 or fp16\n");
                return 2;
            }
        } else if (!strcmp(a, "--optimizer") && v)
            o.optimizer = !strcmp(argv[++i], "sgd") ? TYC_SGD : TYC_ADAM;
        else if (!strcmp(a, "--threads") && v)
            o.threads = (int)strtol(argv[++i], NULL, 10);
        else if (a[0] != '-' && !model)
            model = a;
        else {
            usage();
            return 2;
        }
    }
    if (!model) {
        usage();
        return 2;
    }
    if (strcmp(target, "cpu") != 0 && strcmp(target, "cuda") != 0) {
        fprintf(stderr, "tyc: unknown target '%s'\n", target);
        return 2;
    }
    o.target = !strcmp(target, "cuda") ? TYC_TARGET_CUDA : TYC_TARGET_CPU;
    if (!strcmp(emit, "ir"))
        what = TYC_EMIT_IR;
    else if (!strcmp(emit, "passes"))
        what = TYC_EMIT_PASSLOG;
    else if (!strcmp(emit, "cuda"))
        what = TYC_EMIT_CUDA;
    else if (!strcmp(emit, "ptx"))
        what = TYC_EMIT_PTX;
    else if (!strcmp(emit, "c"))
        what = TYC_EMIT_C;
    else {
        fprintf(stderr, "tyc: unknown --emit '%s'\n", emit);
        return 2;
    }
    m = tyc_model_load(model, &err);
    if (!m) {
        fprintf(stderr, "tyc: %s\n", err.msg);
        return 1;
    }
    s = tyc_session_new(m, &o, &err);
    if (!s) {
        fprintf(stderr, "tyc: %s\n", err.msg);
        tyc_model_free(m);
        return 1;
    }
    if (tyc_session_emit(s, TYC_EMIT_PASSLOG, &text, &err) == 0) {
        fputs(text, stderr);
        tyc_free(text);
        text = NULL;
    }
    rc = tyc_session_emit(s, what, &text, &err);
    if (rc == 0) {
        fputs(text, stdout);
        tyc_free(text);
    } else
        fprintf(stderr, "tyc: %s\n", err.msg);
    tyc_session_free(s);
    tyc_model_free(m);
    return rc == 0 ? 0 : 1;
}

static void print_line(void *ud, const char *l)
{
    (void)ud;
    printf("%s\n", l);
    fflush(stdout);
}

static int cmd_train(int argc, char **argv)
{
    struct tyc_train_paths p = {0};
    const char **over = calloc((size_t)argc + 1, sizeof(char *));
    int i, n = 0, rc;
    if (!over)
        return 1;
    p.train_dir = NULL; /* the trainer's default for the model */
    p.val_dir = NULL;
    p.debug_dir = "tyc-debug";
    for (i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--model") && v) {
            static char buf[1100];
            snprintf(buf, sizeof(buf), "model=%s", argv[++i]);
            over[n++] = buf;
        } else if (!strcmp(a, "--threads") && v) {
            static char tbuf[64];
            snprintf(tbuf, sizeof(tbuf), "threads=%s", argv[++i]);
            over[n++] = tbuf;
        } else if (!strcmp(a, "--train") && v)
            p.train_dir = argv[++i];
        else if (!strcmp(a, "--validation") && v)
            p.val_dir = argv[++i];
        else if (!strcmp(a, "--model-dir") && v)
            p.model_dir = argv[++i];
        else if (!strcmp(a, "--debug-dir") && v)
            p.debug_dir = argv[++i];
        else if (!strcmp(a, "--hyperparameters") && v)
            p.hyperparameters = argv[++i];
        else if (strchr(a, '=') && a[0] != '-')
            over[n++] = a;
        else {
            usage();
            free(over);
            return 2;
        }
    }
    rc = tyc_train_main(&p, over, print_line, NULL);
    free(over);
    return rc == 0 ? 0 : 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of this thread: robust against other processes on a shared machine */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct result {
    double ms, cpu_ms;
    struct tyc_stats st;
};

static int bench_one(const struct tyc_model *m, struct tyc_options *o, int steps, int warmup,
                     struct result *r)
{
    struct tyc_err err = {0};
    struct tyc_session *s = tyc_session_new(m, o, &err);
    int in = tyc_model_input_size(m), C = tyc_model_classes(m), i;
    int lpe = tyc_model_labels_per_example(m), tokens = tyc_model_kind(m) != TYC_KIND_LAYERS;
    size_t n = (size_t)o->batch * (size_t)in;
    float *x = malloc(n * sizeof(float));
    int32_t *y = malloc((size_t)o->batch * (size_t)lpe * sizeof(int32_t));
    double *t = malloc((size_t)steps * sizeof(double));
    double *c = malloc((size_t)steps * sizeof(double));
    uint32_t seed = 12345;
    if (!s || !x || !y || !t || !c) {
        fprintf(stderr, "tyc: %s\n", s ? "out of memory" : err.msg);
        tyc_session_free(s);
        free(x), free(y), free(t), free(c);
        return -1;
    }
    for (i = 0; i < (int)n; i++) {
        seed = seed * 1664525u + 1013904223u;
        /* transformers take token ids (here below the class count: a vocabulary at least) */
        x[i] = tokens ? (float)((seed >> 8) % (uint32_t)C) : (float)(seed >> 8) / 16777216.0f;
    }
    for (i = 0; i < o->batch * lpe; i++)
        y[i] = i % C;
    for (i = 0; i < warmup + steps; i++) {
        double t0 = now_s(), c0 = cpu_s();
        int rc = tyc_session_step(s, x, y, NULL);
        if (rc < 0) {
            fprintf(stderr, "tyc: training step failed: %s\n", tyc_strerror(rc));
            tyc_session_free(s);
            free(x), free(y), free(t), free(c);
            return -1;
        }
        if (i >= warmup) {
            t[i - warmup] = now_s() - t0;
            c[i - warmup] = cpu_s() - c0;
        }
    }
    qsort(t, (size_t)steps, sizeof(double), cmp_d);
    qsort(c, (size_t)steps, sizeof(double), cmp_d);
    r->ms = t[steps / 2] * 1e3;
    r->cpu_ms = c[steps / 2] * 1e3;
    tyc_session_stats(s, &r->st);
    tyc_session_free(s);
    free(x), free(y), free(t), free(c);
    return 0;
}

/* Largest batch whose planned peak bytes fit cap (binary search on batch sizes). */
static int max_batch(const struct tyc_model *m, struct tyc_options o, size_t cap)
{
    int lo = 0, hi = 1 << 16;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        struct tyc_err err = {0};
        struct tyc_session *s;
        struct tyc_stats st;
        o.batch = mid;
        s = tyc_session_new(m, &o, &err);
        if (!s)
            return -1;
        tyc_session_stats(s, &st);
        tyc_session_free(s);
        if (st.peak_bytes <= cap)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* 1 when the comma-separated list holds name */
static int has_token(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;
    while ((p = strstr(p, name)) != NULL) {
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return 1;
        p += n;
    }
    return 0;
}

static void print_row(int batch, int threads, const char *mode, const struct result *r)
{
    printf("%-6d %-7d %-14s %10.3f %10.3f %10.0f %8d %14zu %14zu\n", batch, threads, mode, r->ms,
           r->cpu_ms, batch / r->ms * 1e3, r->st.train_kernels, r->st.temp_bytes, r->st.peak_bytes);
}

static int cmd_bench(int argc, char **argv)
{
    const char *model = "mlp", *batches = "64,512", *threads = "1", *modes = NULL;
    int steps = 30, warmup = 5, cap_mib = 64, i, rc = 0, opt = TYC_ADAM, cuda = 0;
    int do_eager = 1, do_cached = 1;
    struct tyc_model *m;
    struct tyc_err err = {0};
    char tmp[256], *tok, *save = NULL;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--model") && v)
            model = argv[++i];
        else if (!strcmp(a, "--batch") && v)
            batches = argv[++i];
        else if (!strcmp(a, "--steps") && v)
            steps = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--warmup") && v)
            warmup = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--cap-mib") && v)
            cap_mib = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--optimizer") && v)
            opt = !strcmp(argv[++i], "sgd") ? TYC_SGD : TYC_ADAM;
        else if (!strcmp(a, "--target") && v)
            cuda = !strcmp(argv[++i], "cuda");
        else if (!strcmp(a, "--threads") && v)
            threads = argv[++i];
        else if (!strcmp(a, "--modes") && v)
            modes = argv[++i];
        else {
            usage();
            return 2;
        }
    }
    if (modes) {
        do_eager = has_token(modes, "eager");
        do_cached = has_token(modes, "eager-cached");
    }
    if (cuda && !tyc_cuda_available()) {
        printf("target cuda: no libcuda.so.1 or no GPU here; CPU figures only\n");
        cuda = 0;
    }
    if (steps < 1 || warmup < 0 || cap_mib < 1) {
        usage();
        return 2;
    }
    m = tyc_model_load(model, &err);
    if (!m) {
        fprintf(stderr, "tyc: %s\n", err.msg);
        return 1;
    }
    printf("model=%s optimizer=%s target=cpu steps=%d warmup=%d (medians of wall and thread-cpu "
           "time per step; synthetic deterministic data)\n"
           "eager: one kernel per op, fresh malloc per tensor per step; eager-cached: same, but "
           "each tensor keeps its buffer across steps (caching allocator)\n",
           model, opt == TYC_ADAM ? "adam" : "sgd", steps, warmup);
    printf("%-6s %-7s %-14s %10s %10s %10s %8s %14s %14s\n", "batch", "threads", "mode", "step_ms",
           "cpu_ms", "samples/s", "kernels", "temp_bytes", "peak_bytes");
    snprintf(tmp, sizeof(tmp), "%s", batches);
    for (tok = strtok_r(tmp, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        char ttmp[128], *ttok, *tsave = NULL;
        snprintf(ttmp, sizeof(ttmp), "%s", threads);
        for (ttok = strtok_r(ttmp, ",", &tsave); ttok && rc == 0;
             ttok = strtok_r(NULL, ",", &tsave)) {
            struct tyc_options o;
            struct result re, rcmp, rca;
            tyc_options_init(&o);
            o.batch = (int)strtol(tok, NULL, 10);
            o.optimizer = opt;
            o.threads = (int)strtol(ttok, NULL, 10);
            if (o.batch < 1) {
                rc = 1;
                break;
            }
            o.mode = TYC_EAGER;
            if (do_eager && bench_one(m, &o, steps, warmup, &re) < 0) {
                rc = 1;
                break;
            }
            o.eager_cache = 1;
            if (do_cached && bench_one(m, &o, steps, warmup, &rca) < 0) {
                rc = 1;
                break;
            }
            o.eager_cache = 0;
            o.mode = TYC_COMPILED;
            if (bench_one(m, &o, steps, warmup, &rcmp) < 0) {
                rc = 1;
                break;
            }
            if (do_eager)
                print_row(o.batch, rcmp.st.threads, "eager", &re);
            if (do_cached)
                print_row(o.batch, rcmp.st.threads, "eager-cached", &rca);
            print_row(o.batch, rcmp.st.threads, "compiled", &rcmp);
            if (cuda) {
                struct result ge, gc;
                o.target = TYC_TARGET_CUDA;
                o.mode = TYC_EAGER;
                if (bench_one(m, &o, steps, warmup, &ge) < 0) {
                    rc = 1;
                    break;
                }
                o.mode = TYC_COMPILED;
                if (bench_one(m, &o, steps, warmup, &gc) < 0) {
                    rc = 1;
                    break;
                }
                o.target = TYC_TARGET_CPU;
                printf("%-6d %-7s %-14s %10.3f %10.3f %10.0f %8d\n", o.batch, "-", "cuda-eager",
                       ge.ms, ge.cpu_ms, o.batch / ge.ms * 1e3, ge.st.train_kernels);
                printf("%-6d %-7s %-14s %10.3f %10.3f %10.0f %8d\n", o.batch, "-", "cuda-compiled",
                       gc.ms, gc.cpu_ms, o.batch / gc.ms * 1e3, gc.st.train_kernels);
                printf("ratio batch=%d cuda_speedup_vs_cuda_eager=%.2fx\n", o.batch, ge.ms / gc.ms);
            }
            if (do_eager && do_cached)
                printf("ratio batch=%d threads=%d speedup_vs_eager=%.2fx (cpu %.2fx) "
                       "speedup_vs_eager_cached=%.2fx (cpu %.2fx) peak_memory=%.2fx "
                       "temp_memory=%.2fx kernels=%d->%d\n",
                       o.batch, rcmp.st.threads, re.ms / rcmp.ms, re.cpu_ms / rcmp.cpu_ms,
                       rca.ms / rcmp.ms, rca.cpu_ms / rcmp.cpu_ms,
                       (double)rcmp.st.peak_bytes / (double)re.st.peak_bytes,
                       (double)rcmp.st.temp_bytes / (double)re.st.temp_bytes, re.st.train_kernels,
                       rcmp.st.train_kernels);
        }
    }
    if (rc == 0 && cap_mib > 0 && do_eager) {
        struct tyc_options o;
        int be, bc;
        tyc_options_init(&o);
        o.optimizer = opt;
        o.threads = 1;
        o.mode = TYC_EAGER;
        be = max_batch(m, o, (size_t)cap_mib << 20);
        o.mode = TYC_COMPILED;
        bc = max_batch(m, o, (size_t)cap_mib << 20);
        printf("max_batch cap=%dMiB eager=%d compiled=%d ratio=%.2fx\n", cap_mib, be, bc,
               be > 0 ? (double)bc / be : 0.0);
    }
    tyc_model_free(m);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 2;
    }
    if (getenv("TYC_LOG"))
        tyc_set_log(logline, NULL, (int)strtol(getenv("TYC_LOG"), NULL, 10));
    if (!strcmp(argv[1], "compile"))
        return cmd_compile(argc - 2, argv + 2);
    if (!strcmp(argv[1], "train"))
        return cmd_train(argc - 2, argv + 2);
    if (!strcmp(argv[1], "bench"))
        return cmd_bench(argc - 2, argv + 2);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage();
        return 0;
    }
    usage();
    return 2;
}
