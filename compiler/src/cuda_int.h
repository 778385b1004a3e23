/* cuda_int.h - shared between CUDA code generation and the driver-API launcher. */
#ifndef TY_COMPILER_CUDA_INT_H
#define TY_COMPILER_CUDA_INT_H

#include "tyc_int.h"

#define TYC_CUDA_MAXK 3 /* kernels per node at most */

/* One kernel of a node: its name in the generated program and its launch geometry. */
struct tyc__kdesc {
    char name[48];
    unsigned grid[3], block[3];
};

/* Fills k[0..TYC_CUDA_MAXK-1] for graph node `node`; returns the number of kernels. */
int tyc__cuda_kernels(const struct tyc__graph *g, int node, struct tyc__kdesc *k);

/* cuda_transformer.c: the transformer and loss-scaling ops */
int tyc__cuda_tf_kernels(const struct tyc__graph *g, int node, struct tyc__kdesc *k);
void tyc__cuda_tf_gen(const struct tyc__graph *g, int node, const struct tyc__kdesc *k,
                      struct tyc__buf *b);

/* Writes "compute_XY" for device 0 (compute_90 when no device). */
void tyc__cuda_arch(char *buf, size_t n);

/* Device execution of a planned graph through the driver API (dlopen'ed libcuda). */
struct tyc__cuda_exec;
int tyc__cuda_exec_new(const struct tyc__graph *g, size_t arena_bytes, const char *ptx,
                       struct tyc__cuda_exec **out);
int tyc__cuda_exec_run(struct tyc__cuda_exec *x, const struct tyc__graph *g);
int tyc__cuda_exec_download(struct tyc__cuda_exec *x, const struct tyc__graph *g);
void tyc__cuda_exec_free(struct tyc__cuda_exec *x);

#endif
