// prelude.h - compiles libtyc's generated CUDA C as C++ for tools/fakecuda/fakecuda.c: one
// pthread per CUDA thread, blocks in sequence (so a function-local static is block-shared).
#include <math.h>
#include <pthread.h>
#include <string.h>
struct dim3 { unsigned x, y, z; };
extern "C" {
__thread dim3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
pthread_barrier_t ty_fake_bar;
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
static inline void __syncthreads() { pthread_barrier_wait(&ty_fake_bar); }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
using std::isfinite;
