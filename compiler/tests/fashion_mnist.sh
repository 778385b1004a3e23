#!/bin/sh
# fashion_mnist.sh BUILTIN TYC FMNIST_DIR [HAVE_ZLIB] - the built-in MLP (784-256-10, Adam, batch 64) reaches
# >= 84% test accuracy on Fashion-MNIST in 2 epochs on the CPU, compiled mode, trained on all
# 60,000 training images and evaluated on the 10,000 t10k images (the validation channel).
# Then the CNN, kept short for CI: 1 epoch on the first 6,000 training images, >= 75%.
set -u
BIN=$1
DATA=$3
[ -r "$DATA/t10k-images-idx3-ubyte.gz" ] || { echo "dataset-fashion-mnist not installed"; exit 77; }
[ "${4:-1}" != 0 ] || { echo "built without zlib: cannot read the gzip'ed data set"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/val" "$T/config"
ln -s "$DATA"/t10k-* "$T/val/"
printf '{"epochs": "2", "sagemaker_training_compiler_enabled": "true"}' > "$T/config/hyperparameters.json"
SM_INPUT_CONFIG_DIR="$T/config" SM_CHANNEL_TRAIN="$DATA" SM_CHANNEL_VALIDATION="$T/val" \
SM_MODEL_DIR="$T/model" SM_OUTPUT_DATA_DIR="$T/out/data" SM_OUTPUT_DIR="$T/out" \
    "$BIN" | tee "$T/log" || exit 1
acc=$(sed -n 's/^epoch=2 .*val_accuracy=\([0-9.]*\).*/\1/p' "$T/log")
echo "final val_accuracy=$acc"
awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.84) }' || exit 1
TYC=$2
"$TYC" train --model cnn --train "$DATA" --validation "$T/val" epochs=1 train_subset=6000 \
    batch_size=32 sagemaker_training_compiler_enabled=true | tee "$T/cnn.log" || exit 1
acc=$(sed -n 's/^epoch=1 .*val_accuracy=\([0-9.]*\).*/\1/p' "$T/cnn.log")
echo "cnn val_accuracy=$acc (6000 training images, 1 epoch)"
awk -v a="$acc" 'BEGIN { exit !(a != "" && a >= 0.75) }'
