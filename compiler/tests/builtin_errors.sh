#!/bin/sh
# builtin_errors.sh BUILTIN FMNIST_DIR [HAVE_ZLIB] - trainyard-builtin outside a container (SM_* overrides):
# bad hyperparameters, models and data end in a clear /opt/ml/output/failure line and exit 1; a
# short real run writes metrics lines, the model and the compiler debug dump.
set -u
BIN=$1
DATA=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
mkdir -p "$T/config" "$T/train" "$T/empty" "$T/out/data" "$T/model"
export SM_INPUT_CONFIG_DIR="$T/config" SM_CHANNEL_TRAIN="$T/train" SM_MODEL_DIR="$T/model"
export SM_OUTPUT_DATA_DIR="$T/out/data" SM_OUTPUT_DIR="$T/out" SM_CHANNEL_VALIDATION="$T/none"

expect_fail() { # name, hyperparameters json, expected failure text
    printf '%s' "$2" > "$T/config/hyperparameters.json"
    rm -f "$T/out/failure"
    if "$BIN" > "$T/log" 2>&1; then
        echo "FAIL $1: exit 0"; fails=$((fails + 1)); return
    fi
    if ! grep -q -- "$3" "$T/out/failure" 2>/dev/null; then
        echo "FAIL $1: failure file lacks '$3':"; cat "$T/out/failure" 2>/dev/null
        fails=$((fails + 1)); return
    fi
    echo "ok   $1: $(cat "$T/out/failure")"
}

# no data at all
expect_fail no-data '{}' "needs an IDX images file"
if [ "${3:-1}" = 0 ]; then
    echo "built without zlib: the gzip'ed data set cannot be read; skipping the rest"
    exit 77
fi
if [ ! -r "$DATA/train-images-idx3-ubyte.gz" ]; then
    echo "fashion-mnist not installed (apt-get install dataset-fashion-mnist): skipping the rest"
    exit 77
fi
ln -s "$DATA/train-images-idx3-ubyte.gz" "$DATA/train-labels-idx1-ubyte.gz" "$T/train/"
expect_fail bad-epochs '{"epochs": "abc"}' "hyperparameter 'epochs' has a bad value 'abc'"
expect_fail bad-optimizer '{"optimizer": "rmsprop"}' "'optimizer' is 'rmsprop'"
expect_fail bad-bool '{"sagemaker_training_compiler_enabled": "maybe"}' \
    "sagemaker_training_compiler_enabled"
expect_fail bad-model '{"model": "/nonexistent.json"}' "cannot open model"
expect_fail bad-json '{"epochs": ' "hyperparameters"
expect_fail bad-pass '{"compiler_disable_passes": "ewfuse,nope"}' "unknown pass 'nope'"
printf '{"input": 100, "classes": 10, "layers": [{"type": "dense", "units": 10}]}' > "$T/m.json"
expect_fail wrong-input "{\"model\": \"$T/m.json\"}" "784 features but model"
mkdir -p "$T/bad"
printf 'not an idx file' | gzip > "$T/bad/train-images-idx3-ubyte.gz"
cp "$DATA/train-labels-idx1-ubyte.gz" "$T/bad/"
SM_CHANNEL_TRAIN="$T/bad" expect_fail bad-idx '{}' "not an IDX file"

# a short real run: compiled, debug mode, SageMaker-style string values
printf '{"epochs": "1", "batch_size": "100", "train_subset": "3000", "seed": "7",
  "sagemaker_training_compiler_enabled": "true",
  "sagemaker_training_compiler_debug_mode": "true", "sagemaker_program": "ignored",
  "optimizer": "\\"adam\\""}' \
    > "$T/config/hyperparameters.json"
rm -f "$T/out/failure"
if ! "$BIN" > "$T/log" 2>&1; then
    echo "FAIL short run:"; cat "$T/log"; fails=$((fails + 1))
fi
grep -q '^Found configuration for Training Compiler$' "$T/log" || { echo "FAIL: no SMTC line"; fails=$((fails + 1)); }
grep -Eq '^epoch=1 train_loss=[0-9.]+ ' "$T/log" || { echo "FAIL: no metric line"; cat "$T/log"; fails=$((fails + 1)); }
for f in model/model.json model/weights.tyw out/data/compiler/passes.log out/data/compiler/graph.ir \
         out/data/compiler/kernels.cu out/data/compiler/cpu_kernels.txt; do
    [ -s "$T/$f" ] || { echo "FAIL: missing $f"; fails=$((fails + 1)); }
done
[ ! -e "$T/out/failure" ] || { echo "FAIL: failure file after success"; fails=$((fails + 1)); }
cat "$T/log"
[ "$fails" -eq 0 ] && echo "all builtin checks passed"
[ "$fails" -eq 0 ]
