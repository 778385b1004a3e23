/* fakecuda.c - a stand-in libcuda.so.1 for machines without a GPU: libtyc's driver-API launcher
 * runs unchanged, and every kernel of the generated program runs on the CPU. The program is the
 * generated CUDA C ($TY_FAKE_CU) built by g++ with prelude.h into $TY_FAKE_SO; each CUDA thread
 * is a pthread (a block at a time, __syncthreads a barrier, __shared__ a static), "device memory"
 * is malloc. Test-only: tests/fake_cuda.sh. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct dim3 {
    unsigned x, y, z;
};
typedef void (*kfn)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *,
                    void *, void *, void *, void *, void *, void *, void *, void *, void *, void *,
                    void *, void *);
static void *so;
static char *src;
static struct {
    void *f;
    int n;
} nargs[4096];
static int nn;
static int count_args(const char *name)
{
    char pat[128];
    const char *p, *e;
    int n = 1;
    snprintf(pat, sizeof(pat), "void %s(", name);
    p = strstr(src, pat);
    if (!p)
        return 0;
    p += strlen(pat);
    e = strchr(p, ')');
    for (; p < e; p++)
        n += *p == ',';
    return n;
}
int cuInit(unsigned f)
{
    (void)f;
    return 0;
}
int cuDeviceGetCount(int *n)
{
    *n = 1;
    return 0;
}
int cuDeviceGet(int *d, int i)
{
    *d = i;
    return 0;
}
int cuDeviceGetAttribute(int *v, int a, int d)
{
    (void)d;
    *v = a == 75 ? 9 : 0;
    return 0;
}
int cuDevicePrimaryCtxRetain(void **c, int d)
{
    (void)d;
    *c = (void *)1;
    return 0;
}
int cuCtxSetCurrent(void *c)
{
    (void)c;
    return 0;
}
int cuModuleLoadData(void **m, const void *ptx)
{
    (void)ptx;
    {
        FILE *f = fopen(getenv("TY_FAKE_CU"), "rb");
        long n;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        fseek(f, 0, SEEK_SET);
        src = calloc(1, (size_t)n + 1);
        if (fread(src, 1, (size_t)n, f) != (size_t)n)
            return 1;
        fclose(f);
    }
    so = dlopen(getenv("TY_FAKE_SO"), RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "fake: %s\n", dlerror());
        return 1;
    }
    *m = so;
    return 0;
}
int cuModuleGetFunction(void **f, void *m, const char *name)
{
    *f = dlsym(m, name);
    if (!*f)
        fprintf(stderr, "fake: no %s\n", name);
    nargs[nn].f = *f;
    nargs[nn++].n = count_args(name);
    return *f ? 0 : 1;
}
int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
    *p = (unsigned long long)(size_t)calloc(1, n + 16);
    return 0;
}
int cuMemFree_v2(unsigned long long p)
{
    free((void *)(size_t)p);
    return 0;
}
int cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n)
{
    memcpy((void *)(size_t)d, s, n);
    return 0;
}
int cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n)
{
    memcpy(d, (void *)(size_t)s, n);
    return 0;
}
int cuCtxSynchronize(void)
{
    return 0;
}
int cuGetErrorString(int r, const char **s)
{
    (void)r;
    *s = "fake error";
    return 0;
}
struct targ {
    kfn f;
    void *a[22];
    struct dim3 t, b;
};
static void *thr(void *p)
{
    struct targ *t = p;
    struct dim3 *ti = dlsym(so, "threadIdx"), *bi = dlsym(so, "blockIdx");
    /* __thread variables: dlsym returns this thread's copy */
    *ti = t->t;
    *bi = t->b;
    t->f(t->a[0], t->a[1], t->a[2], t->a[3], t->a[4], t->a[5], t->a[6], t->a[7], t->a[8], t->a[9],
         t->a[10], t->a[11], t->a[12], t->a[13], t->a[14], t->a[15], t->a[16], t->a[17], t->a[18],
         t->a[19], t->a[20], t->a[21]);
    return NULL;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned sh, void *st, void **args, void **extra)
{
    struct dim3 *bd = dlsym(so, "blockDim"), *gd = dlsym(so, "gridDim");
    pthread_barrier_t *bar = dlsym(so, "ty_fake_bar");
    unsigned nt = bx * by * bz, x, y, z, i;
    struct targ *ta = calloc(nt, sizeof(*ta));
    pthread_t *th = calloc(nt, sizeof(*th));
    void *a[22] = {0};
    (void)sh;
    (void)st;
    (void)extra;
    int na = 0;
    for (i = 0; i < (unsigned)nn; i++)
        if (nargs[i].f == f)
            na = nargs[i].n;
    for (i = 0; i < (unsigned)na; i++)
        a[i] = *(void **)args[i];
    bd->x = bx, bd->y = by, bd->z = bz;
    gd->x = gx, gd->y = gy, gd->z = gz;
    pthread_barrier_init(bar, NULL, nt);
    for (z = 0; z < gz; z++)
        for (y = 0; y < gy; y++)
            for (x = 0; x < gx; x++) {
                for (i = 0; i < nt; i++) {
                    ta[i].f = (kfn)f;
                    memcpy(ta[i].a, a, sizeof(a));
                    ta[i].t.x = i % bx, ta[i].t.y = (i / bx) % by, ta[i].t.z = i / (bx * by);
                    ta[i].b.x = x, ta[i].b.y = y, ta[i].b.z = z;
                    pthread_create(&th[i], NULL, thr, &ta[i]);
                }
                for (i = 0; i < nt; i++)
                    pthread_join(th[i], NULL);
            }
    pthread_barrier_destroy(bar);
    if (getenv("FAKE_DEBUG") && na > 0) {
        float *o = a[na - 1];
        Dl_info di;
        dladdr(f, &di);
        fprintf(stderr, "G %s %g %g %g %g\n", di.dli_sname, o[0], o[1], o[2], o[3]);
    }
    free(ta);
    free(th);
    return 0;
}
