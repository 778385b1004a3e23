#!/bin/sh
# test_annot.sh TYPROF TYC - `tyc train` under `typrof run` on a tiny IDX data set (made here):
# the trainer finds libtyprof at run time and its trace has one Step per batch and the
# forward/backward/optimizer ranges; the report's timeline carries them. Without typrof the
# same command runs unannotated (no trace directory).
set -eu
TYPROF=$1 TYC=$2
DIR=$(mktemp -d /tmp/typrof-test-annot-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$DIR/data"
# 64 images of 28x28 (idx3) and their labels (idx1), big-endian headers
{ printf '\000\000\010\003\000\000\000\100\000\000\000\034\000\000\000\034'
  head -c $((64 * 784)) /dev/zero; } > "$DIR/data/train-images-idx3-ubyte"
{ printf '\000\000\010\001\000\000\000\100'
  i=0; while [ $i -lt 64 ]; do printf "\\00$((i % 8))"; i=$((i + 1)); done; } \
    > "$DIR/data/train-labels-idx1-ubyte"
"$TYPROF" run --out "$DIR/p" -- "$TYC" train --train "$DIR/data" --model mlp-small \
    --model-dir "$DIR/m" epochs=2 batch_size=16 > "$DIR/out.txt" 2>&1 || { cat "$DIR/out.txt"; fail "tyc train"; }
T=$(ls "$DIR"/p/trace/*.trace.json) || fail "no trace: the trainer did not load libtyprof"
[ "$(grep -o '"name":"Step"' $T | wc -l)" -eq 8 ] || fail "expected 8 steps (2 epochs x 4 batches)"
for r in forward backward optimizer; do
    [ "$(grep -o "\"name\":\"$r\"" $T | wc -l)" -eq 8 ] || fail "expected 8 '$r' ranges"
done
"$TYPROF" report "$DIR/p" > /dev/null || fail "report"
grep -q '"name":"optimizer"' "$DIR/p/timeline.trace.json" || fail "timeline lacks the ranges"
# without typrof: no recorder, same result
"$TYC" train --train "$DIR/data" --model mlp-small --model-dir "$DIR/m2" epochs=1 batch_size=16 \
    > /dev/null 2>&1 || fail "tyc train without the profiler"
echo "ok"
