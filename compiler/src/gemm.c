/* gemm.c - libtyc's single-precision GEMM: packing, register-blocked micro-kernels for AVX-512
 * (8x32), AVX2+FMA (6x16) and portable C (4x8, fmaf), chosen at run time with
 * __builtin_cpu_supports (TYC_ISA=portable|avx2|avx512 overrides, for tests), and a parallel
 * driver over the session's thread pool.
 *
 * Owns: nothing past a call. Invariant: every C element is c = fma(a_k, b_k, c) for k = 0..K-1
 * in order starting from +0 (a K block ends by storing c to memory and the next reloads it,
 * which is exact), so the result is the same bit for bit for every ISA path, block size, tile
 * partition and thread count. The B operand is read in place where it is row-major and a panel
 * is NR columns wide; transposed B and the last, narrower panel are packed once per call into
 * the shared scratch (in parallel); the A operand is packed per task into the thread's scratch.
 */
#include "tyc_int.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GEMM_X86 1
#endif

#define KC     256  /* K block: an 8x256 A strip and a 256x32 B panel slice stay in L1/L2 */
#define MC     128  /* rows per task (multiple of every MR) */
#define NC     1024 /* columns per task (multiple of every NR) */
#define MR_MAX 8
#define NR_MAX 32

enum { ISA_PORTABLE, ISA_AVX2, ISA_AVX512 };

typedef void (*uk_fn)(int kc, const float *a, const float *b, size_t ldb, float *c, size_t ldc,
                      int first);

/* ---- micro-kernels: c[MR x NR] (row stride ldc) = (first ? 0 : c) + a-strip * b-panel ------- *
 * b: NR floats per k, ldb apart (NR when packed, N when read in place) */
static void uk_portable(int kc, const float *a, const float *b, size_t ldb, float *c, size_t ldc,
                        int first)
{
    float acc[4][8];
    int k, r, j;
    for (r = 0; r < 4; r++)
        for (j = 0; j < 8; j++)
            acc[r][j] = first ? 0.0f : c[(size_t)r * ldc + j];
    for (k = 0; k < kc; k++, a += 4, b += ldb)
        for (r = 0; r < 4; r++)
            for (j = 0; j < 8; j++)
                acc[r][j] = fmaf(a[r], b[j], acc[r][j]);
    for (r = 0; r < 4; r++)
        for (j = 0; j < 8; j++)
            c[(size_t)r * ldc + j] = acc[r][j];
}

#ifdef GEMM_X86
__attribute__((target("avx2,fma"))) static void uk_avx2(int kc, const float *a, const float *b,
                                                        size_t ldb, float *c, size_t ldc, int first)
{
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    int k;
    if (first) {
        c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
        c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    } else {
#define LD(r) c##r##0 = _mm256_loadu_ps(c + r * ldc), c##r##1 = _mm256_loadu_ps(c + r * ldc + 8)
        LD(0), LD(1), LD(2), LD(3), LD(4), LD(5);
#undef LD
    }
    for (k = 0; k < kc; k++, a += 6, b += ldb) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), ar;
#define ROW(r)                                                                                     \
    ar = _mm256_broadcast_ss(a + r);                                                               \
    c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);                                                    \
    c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1)
        ROW(0);
        ROW(1);
        ROW(2);
        ROW(3);
        ROW(4);
        ROW(5);
#undef ROW
    }
#define ST(r) _mm256_storeu_ps(c + r * ldc, c##r##0), _mm256_storeu_ps(c + r * ldc + 8, c##r##1)
    ST(0), ST(1), ST(2), ST(3), ST(4), ST(5);
#undef ST
}

__attribute__((target("avx512f"))) static void
uk_avx512(int kc, const float *a, const float *b, size_t ldb, float *c, size_t ldc, int first)
{
    __m512 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, c60, c61, c70, c71;
    int k;
    if (first) {
        c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = _mm512_setzero_ps();
        c40 = c41 = c50 = c51 = c60 = c61 = c70 = c71 = _mm512_setzero_ps();
    } else {
#define LD(r) c##r##0 = _mm512_loadu_ps(c + r * ldc), c##r##1 = _mm512_loadu_ps(c + r * ldc + 16)
        LD(0), LD(1), LD(2), LD(3), LD(4), LD(5), LD(6), LD(7);
#undef LD
    }
    for (k = 0; k < kc; k++, a += 8, b += ldb) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), ar;
#define ROW(r)                                                                                     \
    ar = _mm512_set1_ps(a[r]);                                                                     \
    c##r##0 = _mm512_fmadd_ps(ar, b0, c##r##0);                                                    \
    c##r##1 = _mm512_fmadd_ps(ar, b1, c##r##1)
        ROW(0);
        ROW(1);
        ROW(2);
        ROW(3);
        ROW(4);
        ROW(5);
        ROW(6);
        ROW(7);
#undef ROW
    }
#define ST(r) _mm512_storeu_ps(c + r * ldc, c##r##0), _mm512_storeu_ps(c + r * ldc + 16, c##r##1)
    ST(0), ST(1), ST(2), ST(3), ST(4), ST(5), ST(6), ST(7);
#undef ST
}
#endif

struct isa {
    int id, mr, nr;
    uk_fn uk;
    const char *name;
};

static struct isa isa_sel;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

static void isa_init(void)
{
    const char *force = getenv("TYC_ISA");
    struct isa p = {ISA_PORTABLE, 4, 8, uk_portable, "portable"};
    isa_sel = p;
#ifdef GEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        !(force && strcmp(force, "portable") == 0)) {
        struct isa a2 = {ISA_AVX2, 6, 16, uk_avx2, "avx2"};
        isa_sel = a2;
        if (__builtin_cpu_supports("avx512f") && !(force && strcmp(force, "avx2") == 0)) {
            struct isa a5 = {ISA_AVX512, 8, 32, uk_avx512, "avx512"};
            isa_sel = a5;
        }
    }
#else
    (void)force;
#endif
}

static const struct isa *isa_get(void)
{
    pthread_once(&isa_once, isa_init);
    return &isa_sel;
}

const char *tyc__gemm_isa(void)
{
    return isa_get()->name;
}

static size_t rup(size_t x, size_t m)
{
    return (x + m - 1) / m * m;
}

void tyc__gemm_ws(int M, int N, int K, int tb, size_t *shared, size_t *per_thread)
{
    size_t kc = (size_t)(K < KC ? (K > 0 ? K : 1) : KC), mc = (size_t)(M < MC ? M : MC);
    /* packed B: every panel when B is transposed, else the last (narrow) one */
    *shared = (tb ? rup((size_t)N, NR_MAX) : NR_MAX) * (size_t)(K > 0 ? K : 1);
    *per_thread = (mc + MR_MAX) * kc + MR_MAX * NR_MAX; /* A strips padded to MR, edge tile */
}

/* ---- the driver ------------------------------------------------------------------------------ */
struct job {
    const struct isa *is;
    int M, N, K, ta, tb;
    const float *A, *B;
    float *C, *bp; /* bp: packed B, panel p at bp + p * K * nr */
    float *local;
    size_t local_n;
    int mc, nc, mt, nt, panels, ppt; /* ppt: panels per packing task */
    tyc__epi_fn epi;
    void *ectx;
};

static void pack_b_task(void *p, int task, int tid)
{
    struct job *j = p;
    int nr = j->is->nr, pn, k, c, kb;
    (void)tid;
    for (pn = task * j->ppt; pn < (task + 1) * j->ppt && pn < j->panels; pn++) {
        float *dst = j->bp + (j->tb ? (size_t)pn * j->K * nr : 0); /* !tb: only the last */
        int j0 = pn * nr, w = j->N - j0 < nr ? j->N - j0 : nr;
        if (!j->tb && w == nr)
            continue; /* read in place by the micro-kernel */
        if (!j->tb) { /* the last, narrow panel: zero-padded rows */
            for (k = 0; k < j->K; k++, dst += nr) {
                memcpy(dst, j->B + (size_t)k * j->N + j0, (size_t)w * sizeof(float));
                memset(dst + w, 0, (size_t)(nr - w) * sizeof(float));
            }
            continue;
        }
        /* B stored [N, K]: transpose 16 k at a time (a cache line of each source row) */
        for (kb = 0; kb < j->K; kb += 16) {
            int kn = j->K - kb < 16 ? j->K - kb : 16;
            float *d = dst + (size_t)kb * nr;
            for (c = 0; c < w; c++) {
                const float *src = j->B + (size_t)(j0 + c) * j->K + kb;
                for (k = 0; k < kn; k++)
                    d[(size_t)k * nr + c] = src[k];
            }
            for (k = 0; k < kn && w < nr; k++)
                memset(d + (size_t)k * nr + w, 0, (size_t)(nr - w) * sizeof(float));
        }
    }
}

/* one full strip of MR rows (MR a compile-time constant after inlining) */
static inline __attribute__((always_inline)) void pack_strip(const struct job *j, size_t i, int k0,
                                                             int kc, float *dst, const int MR)
{
    int k, r;
    if (j->ta) { /* A stored [K, M]: MR consecutive floats per k */
        const float *src = j->A + (size_t)k0 * j->M + i;
        for (k = 0; k < kc; k++, dst += MR, src += j->M)
            for (r = 0; r < MR; r++)
                dst[r] = src[r];
    } else {
        const float *src = j->A + i * (size_t)j->K + k0;
        for (k = 0; k < kc; k++, dst += MR)
            for (r = 0; r < MR; r++)
                dst[r] = src[(size_t)r * j->K + k];
    }
}

static void pack_a(const struct job *j, int i0, int mrows, int k0, int kc, float *dst)
{
    int mr = j->is->mr, s, r, k, full = mrows / mr * mr;
    if (j->ta && full) { /* A stored [K, M]: 16 k rows at a time across the full strips (the
                          * rows' current lines stay in L1, each strip gets 16 k contiguous) */
        int kb, kn;
        for (kb = 0; kb < kc; kb += 16) {
            kn = kc - kb < 16 ? kc - kb : 16;
            for (s = 0; s < full; s += mr) {
                const float *src = j->A + (size_t)(k0 + kb) * j->M + i0 + s;
                float *d = dst + (size_t)s * kc + (size_t)kb * mr;
                if (mr == 8) /* constant sizes: inlined copies, not libc calls */
                    for (k = 0; k < kn; k++, d += 8, src += j->M)
                        memcpy(d, src, 8 * sizeof(float));
                else if (mr == 6)
                    for (k = 0; k < kn; k++, d += 6, src += j->M)
                        memcpy(d, src, 6 * sizeof(float));
                else
                    for (k = 0; k < kn; k++, d += mr, src += j->M)
                        memcpy(d, src, (size_t)mr * sizeof(float));
            }
        }
        s = full;
        dst += (size_t)kc * full;
        for (; s < mrows; s += mr, dst += (size_t)kc * mr) {
            int h = mrows - s;
            float *d = dst;
            for (k = 0; k < kc; k++, d += mr) {
                for (r = 0; r < h; r++)
                    d[r] = j->A[(size_t)(k0 + k) * j->M + (size_t)(i0 + s + r)];
                for (; r < mr; r++)
                    d[r] = 0.0f;
            }
        }
        return;
    }
    for (s = 0; s < mrows; s += mr, dst += (size_t)kc * mr) {
        int h = mrows - s < mr ? mrows - s : mr;
        if (h == mr && mr == 8)
            pack_strip(j, (size_t)(i0 + s), k0, kc, dst, 8);
        else if (h == mr && mr == 6)
            pack_strip(j, (size_t)(i0 + s), k0, kc, dst, 6);
        else if (h == mr && mr == 4)
            pack_strip(j, (size_t)(i0 + s), k0, kc, dst, 4);
        else {
            float *d = dst;
            for (k = 0; k < kc; k++, d += mr) {
                for (r = 0; r < h; r++) {
                    size_t ii = (size_t)(i0 + s + r), kk = (size_t)(k0 + k);
                    d[r] = j->ta ? j->A[kk * j->M + ii] : j->A[ii * j->K + kk];
                }
                for (; r < mr; r++)
                    d[r] = 0.0f;
            }
        }
    }
}

static void tile_task(void *p, int task, int tid)
{
    struct job *j = p;
    const struct isa *is = j->is;
    int mr = is->mr, nr = is->nr;
    int i0 = (task / j->nt) * j->mc, j0 = (task % j->nt) * j->nc;
    int mrows = j->M - i0 < j->mc ? j->M - i0 : j->mc,
        ncols = j->N - j0 < j->nc ? j->N - j0 : j->nc;
    float *ap = j->local + (size_t)tid * j->local_n;
    float *edge = ap + (size_t)(mrows + MR_MAX) * (size_t)(j->K < KC ? j->K : KC);
    int k0, s, q, r;
    for (k0 = 0; k0 < j->K; k0 += KC) {
        int kc = j->K - k0 < KC ? j->K - k0 : KC;
        pack_a(j, i0, mrows, k0, kc, ap);
        for (q = 0; q < ncols; q += nr) {
            int w = ncols - q < nr ? ncols - q : nr;
            int inplace = !j->tb && w == nr;
            const float *bpan =
                inplace
                    ? j->B + (size_t)k0 * j->N + j0 + q
                    : j->bp + (j->tb ? (size_t)((j0 + q) / nr) * j->K * nr : 0) + (size_t)k0 * nr;
            size_t ldb = inplace ? (size_t)j->N : (size_t)nr;
            for (s = 0; s < mrows; s += mr) {
                int h = mrows - s < mr ? mrows - s : mr;
                float *c = j->C + (size_t)(i0 + s) * j->N + j0 + q;
                const float *as = ap + (size_t)s * kc;
                if (h == mr && w == nr) {
                    is->uk(kc, as, bpan, ldb, c, (size_t)j->N, k0 == 0);
                    continue;
                }
                if (k0)
                    for (r = 0; r < h; r++)
                        memcpy(edge + (size_t)r * nr, c + (size_t)r * j->N,
                               (size_t)w * sizeof(float));
                is->uk(kc, as, bpan, ldb, edge, (size_t)nr, k0 == 0);
                for (r = 0; r < h; r++)
                    memcpy(c + (size_t)r * j->N, edge + (size_t)r * nr, (size_t)w * sizeof(float));
            }
        }
    }
    if (j->K == 0)
        for (r = 0; r < mrows; r++)
            memset(j->C + (size_t)(i0 + r) * j->N + j0, 0, (size_t)ncols * sizeof(float));
    if (j->epi)
        j->epi(j->ectx, i0, i0 + mrows, j0, j0 + ncols);
}

static void gemm_run(struct tyc__pool *pool, int threads, float *shared, float *local,
                     size_t local_n, int M, int N, int K, const float *A, int ta, const float *B,
                     int tb, float *C, tyc__epi_fn epi, void *ectx)
{
    struct job j;
    int packt;
    if (M <= 0 || N <= 0)
        return;
    memset(&j, 0, sizeof(j));
    j.is = isa_get();
    j.M = M, j.N = N, j.K = K, j.ta = ta, j.tb = tb;
    j.A = A, j.B = B, j.C = C, j.bp = shared;
    j.local = local, j.local_n = local_n;
    j.epi = epi, j.ectx = ectx;
    j.panels = (N + j.is->nr - 1) / j.is->nr;
    /* tiles: shrink columns, then rows, until every thread has about two tasks */
    j.mc = MC;
    j.nc = NC;
    for (;;) {
        j.mt = (M + j.mc - 1) / j.mc;
        j.nt = (N + j.nc - 1) / j.nc;
        if (threads == 1 || j.mt * j.nt >= 2 * threads)
            break;
        if (j.nc > 2 * j.is->nr && j.nc / 2 >= 2 * j.is->nr && N > j.nc / 2)
            j.nc /= 2;
        else if (j.mc > 2 * MR_MAX && M > j.mc / 2)
            j.mc /= 2;
        else
            break;
    }
    j.ppt = threads == 1 ? j.panels : (j.panels + 2 * threads - 1) / (2 * threads);
    if (j.ppt < 1)
        j.ppt = 1;
    packt = (j.panels + j.ppt - 1) / j.ppt;
    if (K > 0)
        tyc__pool_run(threads > 1 ? pool : NULL, packt, pack_b_task, &j);
    tyc__pool_run(threads > 1 ? pool : NULL, j.mt * j.nt, tile_task, &j);
}

void tyc__gemm_par(const struct tyc__cpu_ctx *c, int M, int N, int K, const float *A, int ta,
                   const float *B, int tb, float *C, tyc__epi_fn epi, void *ectx)
{
    gemm_run(c->pool, c->threads, c->shared, c->local, c->local_n, M, N, K, A, ta, B, tb, C, epi,
             ectx);
}

void tyc__gemm_serial(int M, int N, int K, const float *A, int ta, const float *B, int tb, float *C,
                      float *ws, tyc__epi_fn epi, void *ectx)
{
    size_t sh, pt;
    tyc__gemm_ws(M, N, K, tb, &sh, &pt);
    gemm_run(NULL, 1, ws, ws + sh, pt, M, N, K, A, ta, B, tb, C, epi, ectx);
}
