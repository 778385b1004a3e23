#!/bin/sh
# test_gpu.sh TYPROF SRCDIR - on a machine with a GPU: profile a tiny CUDA program under
# `typrof run` and check kernels, copies and launch latencies in the summary. Exits 77 (skip)
# without libcuda or nvcc. NOT YET RUN ON A GPU: written for the device machine.
set -eu
TYPROF=$1
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then echo "no libcuda: skip"; exit 77; fi
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "no nvcc: skip"; exit 77; }
DIR=$(mktemp -d /tmp/typrof-test-gpu-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
cat > "$DIR/k.cu" <<'CUEOF'
#include <cstdio>
__global__ void axpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
int main()
{
    const int n = 1 << 20;
    float *x, *y, *h = new float[n]();
    cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4);
    cudaMemcpy(x, h, n * 4, cudaMemcpyHostToDevice);
    cudaMemset(y, 0, n * 4);
    for (int i = 0; i < 100; i++) axpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, n);
    cudaDeviceSynchronize();
    cudaMemcpy(h, y, n * 4, cudaMemcpyDeviceToHost);
    printf("%f\n", h[0]);
    return 0;
}
CUEOF
"$NVCC" -o "$DIR/k" "$DIR/k.cu"
"$TYPROF" run --out "$DIR/o" -- "$DIR/k"
S=$(ls "$DIR"/o/summary/*.summary.json)
grep -q '"gpu_tracing":true' $S || { cat $S; echo "FAIL: gpu tracing off"; exit 1; }
grep -q 'axpy' $S || { echo "FAIL: no axpy kernel"; exit 1; }  # names are mangled
grep -q '"kind":"HtoD"' $S || { echo "FAIL: no HtoD copy"; exit 1; }
grep -q '"kind":"DtoH"' $S || { echo "FAIL: no DtoH copy"; exit 1; }
grep -q '"kernels":{"count":100,' $S || { echo "FAIL: expected 100 kernels"; exit 1; }
grep -q '"launches_matched":100,' $S || { echo "FAIL: launches not joined to kernels"; exit 1; }
ls "$DIR"/o/trace/*.trace.json >/dev/null || { echo "FAIL: no trace"; exit 1; }
"$TYPROF" report "$DIR/o"
echo ok
