#!/bin/sh
# builtin_text.sh - trainyard-builtin trains gpt-tiny and bert-tiny on text channels (Debian's
# license texts) as the runtime image runs it, and reports a text channel that does not fit the
# encoder in the failure file. Exits 77 when /usr/share/common-licenses is absent.
# usage: builtin_text.sh TRAINYARD_BUILTIN
set -eu
bin=$1
lic=/usr/share/common-licenses
[ -r "$lic/GPL-3" ] && [ -r "$lic/Apache-2.0" ] || { echo "no $lic: skipped"; exit 77; }
d=$(mktemp -d /tmp/tyc-builtin-text.XXXXXX)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/config" "$d/train" "$d/val" "$d/model" "$d/out"
cp "$lic/GPL-3" "$lic/Apache-2.0" "$d/train/"
cp "$lic/Apache-2.0" "$d/val/"
run() {
    SM_INPUT_CONFIG_DIR=$d/config SM_CHANNEL_TRAIN=$d/train SM_CHANNEL_VALIDATION=$d/val \
        SM_MODEL_DIR=$d/model SM_OUTPUT_DATA_DIR=$d/out SM_OUTPUT_DIR=$d/out "$bin" >"$d/log" 2>&1
}
echo '{"model": "gpt-tiny", "epochs": "2", "train_subset": "64", "batch_size": "16",
       "sagemaker_training_compiler_enabled": "true", "precision": "\"bf16\""}' \
    >"$d/config/hyperparameters.json"
run || { cat "$d/log"; exit 1; }
grep -q 'model=gpt-tiny mode=compiled' "$d/log"
grep -Eq '^epoch=2 train_loss=[0-9.]+ val_accuracy=0\.[0-9]+' "$d/log" || { cat "$d/log"; exit 1; }
test -s "$d/model/weights.tyw" && grep -q '"type": "gpt"' "$d/model/model.json"
# bert-tiny: one class per file
rm -r "$d/val"
echo '{"model": "bert-tiny", "epochs": "1", "train_subset": "32", "batch_size": "16"}' \
    >"$d/config/hyperparameters.json"
run || { cat "$d/log"; exit 1; }
grep -q '^epoch=1 train_loss=' "$d/log"
# an encoder with fewer classes than files fails with the reason
echo '{"type": "encoder", "classes": 2, "width": 8, "heads": 2, "context": 16}' >"$d/enc.json"
echo "{\"model\": \"$d/enc.json\"}" >"$d/config/hyperparameters.json"
cp "$lic/MPL-2.0" "$d/train/" 2>/dev/null || cp "$lic/GPL-3" "$d/train/GPL-3b"
if run; then echo "expected a failure"; cat "$d/log"; exit 1; fi
grep -q "has 3 files but the encoder has 2 classes" "$d/out/failure" || { cat "$d/out/failure"; exit 1; }
echo ok
