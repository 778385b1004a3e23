#!/bin/sh
# isa_bitwise.sh TYC_ORACLE - libtyc's results do not depend on the GEMM path or the thread
# count: trains the MLP and the CNN (3 Adam steps, compiled and eager) with TYC_ISA=portable,
# avx2 and avx512 (where the CPU has them; others fall back) and 1, 2 and 3 threads, and
# compares every final weights file with the first, byte for byte.
set -eu
ORACLE=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for model in mlp cnn; do
    ref=
    for isa in portable avx2 avx512; do
        for th in 1 2 3; do
            for mode in compiled eager; do
                d=$T/$model-$isa-$th-$mode
                TYC_ISA=$isa "$ORACLE" $model "$d" --batch 16 --steps 3 --threads $th --mode $mode
                if [ -z "$ref" ]; then
                    ref=$d/final/weights.tyw
                elif ! cmp -s "$ref" "$d/final/weights.tyw"; then
                    echo "FAIL: $model isa=$isa threads=$th mode=$mode differs from $ref"
                    exit 1
                fi
            done
        done
    done
    echo "ok: $model weights identical for every ISA path, thread count and mode"
done
