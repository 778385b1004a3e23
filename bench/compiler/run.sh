#!/bin/sh
# bench/compiler/run.sh [BUILD_DIR] - libtyc CPU benchmark: eager vs compiled, measured in the
# same run, as ratios. Prints step time (median wall and thread-CPU time), kernels per step,
# planned peak memory, and the largest batch that fits a fixed memory cap in each mode.
#   eager         one kernel per primitive op, a fresh malloc'ed buffer per tensor per step
#   eager-cached  the same kernels, but each tensor keeps its buffer across steps
#   compiled      all passes (fusion, epilogues, fused xent, arena planning)
# Memory figures are libtyc's own accounting (params + optimizer state + intermediates +
# scratch), not RSS. Needs: a build with the tyc target (cmake --build BUILD --target tyc-cli).
set -eu
BUILD=${1:-$(dirname "$0")/../../build-compiler}
TYC=$BUILD/bin/tyc
[ -x "$TYC" ] || { echo "tyc not built: cmake --build $BUILD --target tyc-cli" >&2; exit 1; }
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -m) nproc=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
echo "## MLP 784-256-10 (the built-in 'mlp'), Adam, two batch sizes, 64 MiB cap"
"$TYC" bench --model mlp --batch 64,512 --steps 40 --warmup 5 --cap-mib 64
echo
echo "## MLP 784-1024-1024-10 ('mlp-large'), Adam, 256 MiB cap"
"$TYC" bench --model mlp-large --batch 64,256 --steps 10 --warmup 2 --cap-mib 256
echo
echo "## CNN conv8-pool-conv16-pool-dense10 ('cnn'), Adam, 64 MiB cap"
"$TYC" bench --model cnn --batch 32,128 --steps 10 --warmup 2 --cap-mib 64
echo
echo "## MLP 784-256-10, SGD with momentum"
"$TYC" bench --model mlp --batch 64 --steps 40 --warmup 5 --optimizer sgd --cap-mib 64
if "$TYC" compile mlp --emit ptx > /dev/null 2>&1; then
    echo
    echo "## NVRTC: PTX for the compiled MLP training step (GPU launch needs a device)"
    start=$(date +%s%N)
    TYC_CACHE_DIR=$(mktemp -d) "$TYC" compile mlp --emit ptx 2>/dev/null | grep -c '^.visible .entry' |
        sed 's/^/ptx_kernels=/'
    echo "cold_compile_ms=$(( ($(date +%s%N) - start) / 1000000 )) (includes graph build; cache bypassed)"
fi
