/* cuda_nvrtc.c - NVRTC (compile generated CUDA C to PTX) and the CUDA driver API, both opened
 * with dlopen so that binaries start and run the CPU back end on machines without the toolkit
 * or a GPU. Owns the process-wide library handles (opened once, never closed) and the on-disk
 * PTX cache: key = SHA-256(source, options, NVRTC version, arch, pipeline version), files
 * <dir>/<key>.ptx written to a temporary name and renamed (atomic). Not thread-safe on first use.
 */
#include "cuda_int.h"
#include "tyc_int.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TYC_PIPELINE_VERSION "tyc-1"

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    int tried, ok;
    void *h;
    nvrtcResult (*version)(int *, int *);
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*ptx_size)(nvrtcProgram, size_t *);
    nvrtcResult (*ptx)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    const char *(*errstr)(nvrtcResult);
} nv;

static int nvrtc_open(void)
{
    static const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                  "/usr/local/cuda/lib64/libnvrtc.so"};
    const char *env = getenv("TYC_NVRTC_PATH");
    size_t i;
    if (nv.tried)
        return nv.ok;
    nv.tried = 1;
    if (env && *env)
        nv.h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    for (i = 0; !nv.h && i < sizeof(names) / sizeof(names[0]); i++)
        nv.h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nv.h)
        return 0;
#define SYM(field, name)                                                                           \
    do {                                                                                           \
        *(void **)(&nv.field) = dlsym(nv.h, name);                                                 \
        if (!nv.field)                                                                             \
            return 0;                                                                              \
    } while (0)
    SYM(version, "nvrtcVersion");
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(ptx_size, "nvrtcGetPTXSize");
    SYM(ptx, "nvrtcGetPTX");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(errstr, "nvrtcGetErrorString");
#undef SYM
    nv.ok = 1;
    return 1;
}

int tyc_nvrtc_available(int *major, int *minor)
{
    int a = 0, b = 0;
    if (!nvrtc_open())
        return 0;
    nv.version(&a, &b);
    if (major)
        *major = a;
    if (minor)
        *minor = b;
    return 1;
}

static void cache_path(const char *dir, char *out, size_t n)
{
    const char *env = getenv("TYC_CACHE_DIR"), *home = getenv("HOME");
    if (dir && *dir)
        snprintf(out, n, "%s", dir);
    else if (env && *env)
        snprintf(out, n, "%s", env);
    else if (home && *home)
        snprintf(out, n, "%s/.cache/tyc", home);
    else
        snprintf(out, n, "/tmp/tyc-cache");
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *p;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > (64L << 20) ||
        fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    p = tyc__malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n)
        tyc__safefree(p);
    if (p)
        p[n] = 0;
    fclose(f);
    return p;
}

int tyc_nvrtc_compile(const char *src, const char *arch, const char *cache_dir, char **ptx,
                      int *cached, struct tyc_err *err)
{
    char optarch[64], dir[3000], path[3200], tmp[3300], hex[65];
    const char *opts[4];
    int maj = 0, min = 0;
    struct tyc__buf key;
    nvrtcProgram prog = NULL;
    nvrtcResult r;
    size_t n = 0;
    char *out;
    FILE *f;
    if (!nvrtc_open())
        return tyc__err_set(err, TYC_EUNSUPPORTED, "nvrtc",
                            "libnvrtc not found (install the CUDA toolkit or set TYC_NVRTC_PATH)");
    nv.version(&maj, &min);
    snprintf(optarch, sizeof(optarch), "--gpu-architecture=%s", arch);
    opts[0] = optarch;
    opts[1] = "--fmad=false"; /* same rounding as the CPU back end */
    opts[2] = "-default-device";
    opts[3] = "--std=c++17";
    tyc__buf_init(&key, 256u << 20);
    tyc__buf_printf(&key, "%s%c%s %s %s %s%cnvrtc %d.%d%c%s%c%s", src, 0, opts[0], opts[1], opts[2],
                    opts[3], 0, maj, min, 0, arch, 0, TYC_PIPELINE_VERSION);
    if (key.oom) {
        tyc__buf_cleanup(&key);
        return tyc__err_set(err, TYC_ENOMEM, "nvrtc", "out of memory");
    }
    tyc__sha256_hex(key.p, key.len, hex);
    tyc__buf_cleanup(&key);
    cache_path(cache_dir, dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/%s.ptx", dir, hex);
    if ((out = read_file(path))) {
        *ptx = out;
        if (cached)
            *cached = 1;
        tyc__log(2, "event=tyc.nvrtc.cache_hit key=%s", hex);
        return 0;
    }
    r = nv.create(&prog, src, "tyc_graph.cu", 0, NULL, NULL);
    if (r != 0)
        return tyc__err_set(err, TYC_EGPU, "nvrtc", "nvrtcCreateProgram: %s", nv.errstr(r));
    r = nv.compile(prog, 4, opts);
    if (r != 0) {
        char logbuf[200] = "";
        size_t ls = 0;
        if (nv.log_size(prog, &ls) == 0 && ls > 0) {
            char *l = tyc__malloc(ls);
            if (l && nv.log(prog, l) == 0) {
                snprintf(logbuf, sizeof(logbuf), "%s", l);
                tyc__log(0, "event=tyc.nvrtc.log log=%s", l);
            }
            tyc__free(l);
        }
        nv.destroy(&prog);
        return tyc__err_set(err, TYC_EGPU, "nvrtc", "nvrtcCompileProgram: %s: %s", nv.errstr(r),
                            logbuf);
    }
    if (nv.ptx_size(prog, &n) != 0 || !(out = tyc__malloc(n + 1)) || nv.ptx(prog, out) != 0) {
        nv.destroy(&prog);
        return tyc__err_set(err, TYC_EGPU, "nvrtc", "nvrtcGetPTX failed");
    }
    out[n] = 0;
    nv.destroy(&prog);
    /* best effort cache write */
    {
        char sub[3000], *p;
        snprintf(sub, sizeof(sub), "%s", dir);
        for (p = sub + 1; *p; p++)
            if (*p == '/') {
                *p = 0;
                mkdir(sub, 0755);
                *p = '/';
            }
        mkdir(sub, 0755);
    }
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (f) {
        int bad = fwrite(out, 1, strlen(out), f) != strlen(out);
        bad |= fclose(f) != 0;
        if (bad || rename(tmp, path) != 0)
            remove(tmp);
    }
    *ptx = out;
    if (cached)
        *cached = 0;
    return 0;
}

/* ---- driver API ------------------------------------------------------------------------------ */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;

static struct {
    int tried, ok;
    void *h;
    CUresult (*init)(unsigned);
    CUresult (*count)(int *);
    CUresult (*get)(CUdevice *, int);
    CUresult (*attr)(int *, int, CUdevice);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set)(CUcontext);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*func)(CUfunction *, CUmodule, const char *);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, void *, void **, void **);
    CUresult (*sync)(void);
    CUresult (*errstr)(CUresult, const char **);
    CUdevice dev;
    CUcontext ctx;
} cu;

static int cuda_open(void)
{
    int n = 0;
    if (cu.tried)
        return cu.ok;
    cu.tried = 1;
    cu.h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.h)
        return 0;
#define SYM(field, name)                                                                           \
    do {                                                                                           \
        *(void **)(&cu.field) = dlsym(cu.h, name);                                                 \
        if (!cu.field)                                                                             \
            return 0;                                                                              \
    } while (0)
    SYM(init, "cuInit");
    SYM(count, "cuDeviceGetCount");
    SYM(get, "cuDeviceGet");
    SYM(attr, "cuDeviceGetAttribute");
    SYM(retain, "cuDevicePrimaryCtxRetain");
    SYM(set, "cuCtxSetCurrent");
    SYM(load, "cuModuleLoadData");
    SYM(func, "cuModuleGetFunction");
    SYM(alloc, "cuMemAlloc_v2");
    SYM(free, "cuMemFree_v2");
    SYM(htod, "cuMemcpyHtoD_v2");
    SYM(dtoh, "cuMemcpyDtoH_v2");
    SYM(launch, "cuLaunchKernel");
    SYM(sync, "cuCtxSynchronize");
    SYM(errstr, "cuGetErrorString");
#undef SYM
    if (cu.init(0) != 0 || cu.count(&n) != 0 || n < 1 || cu.get(&cu.dev, 0) != 0 ||
        cu.retain(&cu.ctx, cu.dev) != 0 || cu.set(cu.ctx) != 0)
        return 0;
    cu.ok = 1;
    return 1;
}

int tyc_cuda_available(void)
{
    return cuda_open();
}

/* TY_CU: run a driver call, log its error string and return -TYC_EGPU on failure. */
#define TY_CU(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != 0) {                                                                             \
            const char *s_ = "?";                                                                  \
            cu.errstr(r_, &s_);                                                                    \
            tyc__log(0, "event=tyc.cuda.error call=%s error=%s", #call, s_);                       \
            rc = -TYC_EGPU;                                                                        \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

void tyc__cuda_arch(char *buf, size_t n)
{
    int major = 9, minor = 0;
    if (cuda_open()) {
        cu.attr(&major, 75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */, cu.dev);
        cu.attr(&minor, 76 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */, cu.dev);
    }
    snprintf(buf, n, "compute_%d%d", major, minor);
}

struct tyc__cuda_exec {
    CUmodule mod;
    CUdeviceptr arena;
    CUdeviceptr *dptr; /* per tensor; temps point into the arena */
    char *own;         /* per tensor: dptr[i] is a separate allocation */
    CUfunction (*fn)[TYC_CUDA_MAXK];
    int nt, nn;
};

void tyc__cuda_exec_free(struct tyc__cuda_exec *x)
{
    int i;
    if (!x)
        return;
    for (i = 0; x->dptr && x->own && i < x->nt; i++)
        if (x->own[i] && x->dptr[i])
            cu.free(x->dptr[i]);
    if (x->arena)
        cu.free(x->arena);
    tyc__free(x->dptr);
    tyc__free(x->own);
    tyc__free(x->fn);
    tyc__free(x);
}

/* Loads the PTX, allocates the arena and one buffer per non-temp tensor, uploads params and
 * constants from their bound host data (t->data), and resolves every kernel.
 * OUT: *out new: free with tyc__cuda_exec_free(). Untested on this project's CI: no GPU. */
int tyc__cuda_exec_new(const struct tyc__graph *g, size_t arena_bytes, const char *ptx,
                       struct tyc__cuda_exec **out)
{
    struct tyc__cuda_exec *x;
    int i, j, rc = 0;
    if (!cuda_open())
        return -TYC_EUNSUPPORTED;
    x = tyc__calloc(1, sizeof(*x));
    if (!x)
        return -TYC_ENOMEM;
    x->nt = g->nt;
    x->nn = g->nn;
    x->dptr = tyc__calloc((size_t)g->nt, sizeof(*x->dptr));
    x->fn = tyc__calloc((size_t)g->nn + 1, sizeof(*x->fn));
    x->own = tyc__calloc((size_t)g->nt, 1);
    if (!x->dptr || !x->fn || !x->own) {
        rc = -TYC_ENOMEM;
        goto fail;
    }
    TY_CU(cu.load(&x->mod, ptx));
    TY_CU(cu.alloc(&x->arena, arena_bytes + 256));
    for (i = 0; i < g->nt; i++) {
        const struct tyc__tensor *t = &g->t[i];
        if (t->kind == TK_TEMP)
            continue;
        TY_CU(cu.alloc(&x->dptr[i], t->numel * sizeof(float)));
        x->own[i] = 1;
        if ((t->kind == TK_PARAM || t->kind == TK_CONST) && t->data)
            TY_CU(cu.htod(x->dptr[i], t->data, t->numel * sizeof(float)));
    }
    for (i = 0; i < g->nt; i++)
        if (g->t[i].kind == TK_TEMP)
            x->dptr[i] = x->arena + g->t[i].off;
    for (i = 0; i < g->nn; i++) {
        struct tyc__kdesc k[TYC_CUDA_MAXK];
        int nk = tyc__cuda_kernels(g, i, k);
        for (j = 0; j < nk; j++)
            TY_CU(cu.func(&x->fn[i][j], x->mod, k[j].name));
    }
    *out = x;
    return 0;
fail:
    tyc__cuda_exec_free(x);
    return rc;
}

/* One run of the graph: uploads TK_INPUT tensors from t->data, launches every kernel in order
 * on the default stream, downloads the graph outputs into their t->data. */
int tyc__cuda_exec_run(struct tyc__cuda_exec *x, const struct tyc__graph *g)
{
    int i, j, rc = 0, phase = -1;
    uint64_t ph = 0;
    for (i = 0; i < g->nt; i++)
        if (g->t[i].kind == TK_INPUT && g->t[i].data)
            TY_CU(cu.htod(x->dptr[i], g->t[i].data, g->t[i].numel * sizeof(float)));
    for (i = 0; i < g->nn; i++) {
        const struct tyc__node *n = &g->n[i];
        struct tyc__kdesc k[TYC_CUDA_MAXK];
        void *args[TYC_MAXIN + TYC_MAXOUT];
        int nk = tyc__cuda_kernels(g, i, k), na = 0;
        tyc__annot_phase(g, i, &phase, &ph); /* launch order: the GPU runs them in this order */
        for (j = 0; j < n->nin; j++)
            args[na++] = &x->dptr[n->in[j]];
        for (j = 0; j < n->nout; j++)
            args[na++] = &x->dptr[n->out[j]];
        for (j = 0; j < nk; j++)
            TY_CU(cu.launch(x->fn[i][j], k[j].grid[0], k[j].grid[1], k[j].grid[2], k[j].block[0],
                            k[j].block[1], k[j].block[2], 0, NULL, args, NULL));
    }
    for (i = 0; i < g->nout; i++) {
        int t = g->outputs[i];
        if (g->t[t].data)
            TY_CU(cu.dtoh(g->t[t].data, x->dptr[t], g->t[t].numel * sizeof(float)));
    }
fail:
    tyc__annot_phase(g, -1, &phase, &ph);
    return rc;
}

/* Copies every TK_PARAM tensor (weights and optimizer state) back into its host t->data. */
int tyc__cuda_exec_download(struct tyc__cuda_exec *x, const struct tyc__graph *g)
{
    int i, rc = 0;
    TY_CU(cu.sync());
    for (i = 0; i < g->nt; i++)
        if (g->t[i].kind == TK_PARAM && g->t[i].data)
            TY_CU(cu.dtoh(g->t[i].data, x->dptr[i], g->t[i].numel * sizeof(float)));
fail:
    return rc;
}
