#!/bin/sh
# fake_cuda.sh - the CUDA back end end to end without a GPU: the generated CUDA C is built by g++
# and run through libtyc's unchanged driver-API launcher against a stand-in libcuda.so.1
# (tools/fakecuda/); the training losses must match the CPU back end's (relative 1e-5) for a
# small GPT (2 layers, dropout) and a small encoder (and, with TYC_FAKE_MLP=1, test_tyc_cuda's
# MLP: it passes, 4 steps within 1e-6). Exits 77 without
# g++ or libnvrtc (the PTX step still runs NVRTC, for the launcher's cache).
# usage: fake_cuda.sh TYC TYC_LM_CURVE TEST_TYC_CUDA
set -eu
tyc=$1 curve=$2 cudatest=$3
src=$(cd "$(dirname "$0")/../tools/fakecuda" && pwd)
command -v g++ >/dev/null 2>&1 || { echo "no g++: skipped"; exit 77; }
d=$(mktemp -d /tmp/tyc-fakecuda.XXXXXX)
trap 'rm -rf "$d"' EXIT
export TYC_CACHE_DIR=$d/cache
"$tyc" compile mlp --batch 2 --emit ptx >/dev/null 2>"$d/probe" ||
    { grep -q libnvrtc "$d/probe" && { echo "no libnvrtc: skipped"; exit 77; }; cat "$d/probe"; exit 1; }
gcc -O1 -shared -fPIC -o "$d/libcuda.so.1" "$src/fakecuda.c" -ldl -lpthread
text=/usr/share/common-licenses/GPL-3
[ -r $text ] || { echo "no $text: skipped"; exit 77; }
# build: MODEL BATCH -> $d/k.cu, $d/k.so, the PTX in the cache (NVRTC runs before the fake loads)
build() {
    "$tyc" compile "$1" --batch "$2" --emit cuda >"$d/k.cu" 2>/dev/null
    "$tyc" compile "$1" --batch "$2" --emit ptx >/dev/null 2>&1
    g++ -O1 -w -shared -fPIC -include "$src/prelude.h" -x c++ "$d/k.cu" -o "$d/k.so"
}
fake() { LD_LIBRARY_PATH=$d TY_FAKE_SO=$d/k.so TY_FAKE_CU=$d/k.cu "$@"; }
if [ "${TYC_FAKE_MLP:-0}" = 1 ]; then # ~4 min: 256 threads per block as pthreads
    build mlp 64
    fake "$cudatest" >"$d/mlp.txt" 2>&1 || { cat "$d/mlp.txt"; exit 1; }
    echo "mlp: $(tail -1 "$d/mlp.txt")"
fi
echo '{"type": "gpt", "vocab": 128, "context": 8, "width": 16, "heads": 2, "layers": 2, "mlp": 24, "dropout": 0.1}' >"$d/gpt.json"
echo '{"type": "encoder", "vocab": 128, "context": 8, "width": 16, "heads": 2, "layers": 1, "mlp": 24, "dropout": 0.1, "classes": 3}' >"$d/enc.json"
for m in gpt enc; do
    build "$d/$m.json" 3
    "$curve" "$d/$m.json" $text 5 3 1e-3 >"$d/cpu.txt" 2>/dev/null
    fake "$curve" "$d/$m.json" $text 5 3 1e-3 --target cuda >"$d/gpu.txt" 2>"$d/gpu.err" || { cat "$d/gpu.err"; exit 1; }
    grep -q "target=cuda" "$d/gpu.err" || { echo "$m: did not run on the (fake) device"; cat "$d/gpu.err"; exit 1; }
    paste "$d/cpu.txt" "$d/gpu.txt" | awk -v m=$m '{d=($1-$2)/$1; if(d<0)d=-d; if(d>x)x=d; n++}
        END{printf "%s: %d steps, max relative loss gap %.2e\n", m, n, x; exit !(n == 5 && x < 1e-5)}'
done
echo ok
