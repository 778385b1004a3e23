#!/bin/sh
# bench/gpu.sh - the first GPU run of libtyc's CUDA back end, in one script (< 8 min on an H200):
#   1. build (tyc, tyc-lm-curve, test_tyc_cuda, typrof) unless --no-build
#   2. NVRTC: the generated CUDA of the MLP, the CNN and gpt-tiny in fp32/bf16/fp16, cold cache
#   3. CPU reference: gpt-tiny on the CPU (and against PyTorch on the CPU when torch is present)
#   4. GPU: test_tyc_cuda (the MLP's CUDA step against the CPU back end, tolerance), gpt-tiny's
#      CUDA loss curve against the CPU's (fp32 tolerance; bf16/fp16 reported), tyc CUDA vs
#      PyTorch eager for the MLP (tyc bench / torch_mlp.py) and gpt-tiny (torch_gpt.py), peak
#      device memory (nvidia-smi sampled every 100 ms, torch's max_memory_allocated, tyc's plan),
#      and `typrof run` on a tyc CUDA training run: kernel, copy and launch-latency tables and the
#      tracing overhead (the same run with and without the profiler)
#   5. one summary block to paste into the README
# --dry-run does 1-3 only (what needs no GPU) and passes on CPU-only machines (ctest gpu_dryrun).
# usage: bench/gpu.sh [--dry-run] [--build-dir DIR] [--no-build] [--steps N]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dry=0
build=${TY_GPU_BUILD:-/tmp/ty-gpu-build}
nobuild=0
steps=60
while [ $# -gt 0 ]; do
    case "$1" in
    --dry-run) dry=1 ;;
    --build-dir) build=$2; shift ;;
    --no-build) nobuild=1 ;;
    --steps) steps=$2; shift ;;
    *) echo "usage: $0 [--dry-run] [--build-dir DIR] [--no-build] [--steps N]" >&2; exit 2 ;;
    esac
    shift
done

t_start=$(date +%s)
work=$(mktemp -d /tmp/ty-gpu.XXXXXX)
smi_pid=
cleanup() {
    [ -n "$smi_pid" ] && kill "$smi_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
summary=$work/summary
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
fail=0
PY=/usr/bin/python3
TEXT=/usr/share/common-licenses/GPL-3 # base-files: on every Debian install

# ---- 1. build -----------------------------------------------------------------------------------
if [ "$nobuild" = 0 ]; then
    echo "== build ($build)"
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 ||
        { tail -20 "$work/cmake.log"; exit 1; }
    cmake --build "$build" -j"$(nproc)" --target tyc-cli tyc-lm-curve test_tyc_cuda \
        >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
    cmake --build "$build" -j"$(nproc)" --target typrof_cli typrof >>"$work/build.log" 2>&1 || true
fi
TYC=$build/bin/tyc
CURVE=$build/bin/tyc-lm-curve
for b in "$TYC" "$CURVE"; do
    [ -x "$b" ] || { echo "gpu.sh: $b is missing (build first or drop --no-build)" >&2; exit 1; }
done
export TYC_CACHE_DIR=$work/nvrtc-cache # cold compiles, measured

say "----- bench/gpu.sh summary ($(date -u +%Y-%m-%dT%H:%MZ), $(uname -m), $(nproc) cores) -----"
gpu_name=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || true)
say "gpu: ${gpu_name:-none}"
torch_desc=$($PY -c 'import torch; print(torch.__version__, "cuda" if torch.cuda.is_available() else "cpu-only")' 2>/dev/null || echo "absent")
say "torch: $torch_desc"

# ---- 2. NVRTC -----------------------------------------------------------------------------------
for m in mlp cnn gpt-tiny; do
    line="nvrtc $m:"
    for p in fp32 bf16 fp16; do
        t0=$(date +%s%N)
        if "$TYC" compile "$m" --batch 64 --precision "$p" --emit ptx >"$work/$m.$p.ptx" 2>"$work/$m.$p.err"; then
            t1=$(date +%s%N)
            line="$line $p ok $(( (t1 - t0) / 1000000 )) ms ($(grep -c '\.entry' "$work/$m.$p.ptx") kernels);"
        elif grep -q "libnvrtc" "$work/$m.$p.err"; then
            line="$line $p skipped (no libnvrtc);"
        else
            line="$line $p FAILED;"
            sed -n 1,20p "$work/$m.$p.err" >&2
            fail=1
        fi
    done
    say "$line"
done

# ---- 3. CPU reference ---------------------------------------------------------------------------
"$CURVE" gpt-tiny "$TEXT" 12 8 3e-3 >"$work/cpu.curve" 2>"$work/cpu.err" || { cat "$work/cpu.err"; fail=1; }
say "cpu gpt-tiny batch 8: loss step1 $(sed -n 1p "$work/cpu.curve") step12 $(sed -n 12p "$work/cpu.curve"); $(tail -1 "$work/cpu.err" | sed 's/^tyc-lm-curve: //')"
if [ "$torch_desc" != absent ]; then
    if $PY "$here/compiler/torch_gpt.py" "$CURVE" "$TEXT" --steps 20 >"$work/torch_cpu.txt" 2>&1; then
        say "cpu vs torch: $(grep '^gpt-tiny' "$work/torch_cpu.txt" | sed 's/; wall.*//')"
    else
        cat "$work/torch_cpu.txt"
        say "cpu vs torch: FAILED"
        fail=1
    fi
fi

if [ "$dry" = 1 ]; then
    say "dry run: GPU steps skipped; $(( $(date +%s) - t_start )) s"
    say "-----"
    exit $fail
fi

# ---- 4. GPU -------------------------------------------------------------------------------------
if ! nvidia-smi >/dev/null 2>&1; then
    say "no GPU (nvidia-smi failed): run with --dry-run on CPU-only machines"
    exit 1
fi
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$work/smi.txt" 2>/dev/null &
smi_pid=$!
base_mib=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)

# 4a. CUDA step against the CPU back end
if "$build/compiler/test_tyc_cuda" >"$work/cuda_test.txt" 2>&1; then
    say "cuda vs cpu (mlp, test_tyc_cuda): pass; $(tail -1 "$work/cuda_test.txt")"
else
    say "cuda vs cpu (mlp, test_tyc_cuda): FAIL rc=$?"
    tail -20 "$work/cuda_test.txt"
    fail=1
fi
# 4b. gpt-tiny loss curve: CUDA vs CPU, fp32 within 1e-3 relative per step; bf16 and fp16 shown
"$CURVE" gpt-tiny "$TEXT" 20 8 3e-3 >"$work/cpu20.curve" 2>/dev/null
for p in fp32 bf16 fp16; do
    if "$CURVE" gpt-tiny "$TEXT" 20 8 3e-3 --target cuda --precision "$p" >"$work/gpu.$p.curve" 2>"$work/gpu.$p.err"; then
        worst=$(paste "$work/cpu20.curve" "$work/gpu.$p.curve" | awk '{d=($1-$2)/$1; if(d<0)d=-d; if(d>m)m=d} END{printf "%.2e", m}')
        ok=pass
        if [ "$p" = fp32 ] && awk -v w="$worst" 'BEGIN{exit !(w > 1e-3)}'; then ok=FAIL; fail=1; fi
        [ "$p" != fp32 ] && ok="reported (tolerance applies to fp32)"
        say "cuda vs cpu gpt-tiny $p: max relative loss gap over 20 steps $worst: $ok; $(tail -1 "$work/gpu.$p.err" | sed 's/^tyc-lm-curve: //')"
    else
        say "cuda gpt-tiny $p: FAILED"; tail -5 "$work/gpu.$p.err"; fail=1
    fi
done
# 4c. tyc CUDA vs PyTorch eager
"$TYC" bench --model mlp --target cuda --batch 64,512 --steps 100 >"$work/bench_mlp.txt" 2>&1 || fail=1
say "tyc cuda mlp (tyc bench):"
grep -iE "cuda|batch" "$work/bench_mlp.txt" | head -8 | sed 's/^/  /' | tee -a "$summary"
if $PY -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    $PY "$here/compiler/torch_mlp.py" --batch 64,512 --steps 100 >"$work/torch_mlp.txt" 2>&1 || true
    say "torch cuda mlp (torch_mlp.py):"
    sed 's/^/  /' "$work/torch_mlp.txt" | head -8 | tee -a "$summary"
    if $PY "$here/compiler/torch_gpt.py" "$CURVE" "$TEXT" --steps "$steps" --batch 64 --lr 1e-3 \
        --device cuda --tyc-target cuda >"$work/torch_gpt.txt" 2>&1; then r=pass; else r=FAIL; fail=1; fi
    say "gpt-tiny batch 64, $steps steps, tyc cuda vs torch cuda eager: $r"
    grep -E "^torch:|^tyc-lm-curve:|^gpt-tiny" "$work/torch_gpt.txt" | sed 's/^/  /' | tee -a "$summary"
else
    say "torch has no CUDA here: tyc alone"
    "$CURVE" gpt-tiny "$TEXT" "$steps" 64 1e-3 --target cuda >/dev/null 2>"$work/tyc_gpt64.err" || fail=1
    say "  $(tail -1 "$work/tyc_gpt64.err")"
fi
kill "$smi_pid" 2>/dev/null || true
smi_pid=
peak_mib=$(sort -n "$work/smi.txt" | tail -1)
peak_mib=${peak_mib:-$base_mib}
say "peak device memory (nvidia-smi, all of the above): $((peak_mib - base_mib)) MiB above the idle $base_mib MiB"

# 4d. typrof on a tyc CUDA training run, and the tracing overhead
TYPROF=$build/bin/typrof
if [ -x "$TYPROF" ]; then
    run_train() {
        "$TYC" train --model gpt-tiny --train "$TEXT" epochs=1 batch_size=64 train_subset=1280 \
            target=cuda sagemaker_training_compiler_enabled=true
    }
    t0=$(date +%s%N); run_train >"$work/plain.txt" 2>&1 || fail=1; t1=$(date +%s%N)
    "$TYPROF" run --out "$work/prof" -- "$TYC" train --model gpt-tiny --train "$TEXT" epochs=1 \
        batch_size=64 train_subset=1280 target=cuda sagemaker_training_compiler_enabled=true \
        >"$work/traced.txt" 2>&1 || fail=1
    t2=$(date +%s%N)
    ep_plain=$(grep -o 'epoch_time_s=[0-9.]*' "$work/plain.txt" | cut -d= -f2)
    ep_traced=$(grep -o 'epoch_time_s=[0-9.]*' "$work/traced.txt" | cut -d= -f2)
    say "typrof: gpt-tiny cuda epoch (20 steps of 64): ${ep_plain:-?} s plain, ${ep_traced:-?} s traced; process wall $(( (t1 - t0) / 1000000 )) ms vs $(( (t2 - t1) / 1000000 )) ms"
    "$TYPROF" report "$work/prof" >"$work/report.txt" 2>&1 || true
    sed -n 1,80p "$work/report.txt" | tee -a "$summary"
else
    say "typrof: not built"
fi

say "total $(( $(date +%s) - t_start )) s; result: $([ $fail = 0 ] && echo pass || echo FAIL)"
say "-----"
echo
echo "== summary (paste into the README)"
cat "$summary"
exit $fail
