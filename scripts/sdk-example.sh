#!/usr/bin/env bash
# sdk-example.sh - runs the README's SageMaker Python SDK Estimator example, as written (the
# python block is read from README.md), against a private trainyard-server, and checks the model
# it gets back.
#
# usage: scripts/sdk-example.sh [--s3-endpoint-pair]
#   The SDK (v2) and a boto3 >= 1.28 must be importable by $PYTHON (default /usr/bin/python3):
#   pip-installed, or source trees on PYTHONPATH. CI cannot fetch them, so this is no ctest
#   entry; exit 77 when they are missing.
#   --s3-endpoint-pair runs the server with --s3-endpoint in front of a second trainyard.
# env: TY_BUILD_DIR (default build), TY_DOCKER_HOST (default unix:///run/trainyard-podman.sock)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${TY_BUILD_DIR:-$here/build}
py=${PYTHON:-/usr/bin/python3}
engine=${TY_DOCKER_HOST:-unix:///run/trainyard-podman.sock}
if ! "$py" -c 'import sagemaker, boto3, sys; v = tuple(int(x) for x in boto3.__version__.split(".")[:2]); sys.exit(0 if v >= (1, 28) else 1)' 2>/dev/null; then
    echo "sdk-example.sh: needs the SageMaker Python SDK v2 and boto3 >= 1.28 importable by $py" >&2
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ty-sdk-example.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { # port data-dir
    for _ in $(seq 300); do
        [ -f "$2/credentials" ] && curl -s -o /dev/null "http://127.0.0.1:$1/healthz" && return 0
        sleep 0.1
    done
    echo "sdk-example.sh: no server on port $1 (see $work/*.log)" >&2
    exit 1
}
cd "$work"
extra=()
if [ "${1:-}" = "--s3-endpoint-pair" ]; then
    sport=$(free_port)
    "$build/bin/trainyard-server" --listen "127.0.0.1:$sport" --data-dir "$work/store" --agents 0 \
        >"$work/store.log" 2>&1 &
    pids+=($!)
    wait_up "$sport" "$work/store"
    export TRAINYARD_S3_ACCESS_KEY_ID TRAINYARD_S3_SECRET_ACCESS_KEY
    TRAINYARD_S3_ACCESS_KEY_ID=$(awk -F' = ' '/aws_access_key_id/{print $2}' store/credentials)
    TRAINYARD_S3_SECRET_ACCESS_KEY=$(awk -F' = ' '/aws_secret_access_key/{print $2}' store/credentials)
    extra=(--s3-endpoint "http://127.0.0.1:$sport")
fi
port=$(free_port)
"$build/bin/trainyard-server" --listen "127.0.0.1:$port" --data-dir "$work/.trainyard" \
    --docker-host "$engine" --runtime-image-tar "$build/runtime-image/trainyard-runtime.tar" \
    "${extra[@]}" >"$work/server.log" 2>&1 &
pids+=($!)
wait_up "$port" "$work/.trainyard"

# the example's inputs: a data directory and a script-mode source directory
mkdir -p data/train src
printf 'a,b\n1,2\n' >data/train/part-0.csv
cat >src/train.sh <<'SH'
#!/bin/sh
echo "args: $*"
cat /opt/ml/input/data/train/part-0.csv
echo "model of $SM_CURRENT_HOST, args $*" > /opt/ml/model/model.txt
SH
sed -n '/^```python/,/^```/p' "$here/README.md" | sed -n '/import boto3, sagemaker/,/print(est.model_data)/p' >example.py
[ -s example.py ] || { echo "sdk-example.sh: no Estimator example in README.md" >&2; exit 1; }

export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_SHARED_CREDENTIALS_FILE="$work/.trainyard/credentials"
export AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true SAGEMAKER_SUPPRESS_V2_WARNING=1
t0=$(date +%s.%N)
"$py" example.py 2>&1 | tee example.log
t1=$(date +%s.%N)
uri=$(tail -1 example.log)
case "$uri" in s3://mybucket/out/*/output/model.tar.gz) ;; *) echo "sdk-example.sh: model_data is '$uri'" >&2; exit 1;; esac
"$py" - "$uri" <<'PY'
import io, sys, tarfile, boto3
bucket, key = sys.argv[1][5:].split("/", 1)
body = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tf:
    text = tf.extractfile("model.txt").read().decode()
assert text == "model of algo-1, args --epochs 3 --lr 0.1\n", text
print(f"model.tar.gz ok: {text.strip()}")
PY
grep -q "args: --epochs 3 --lr 0.1" example.log || { echo "sdk-example.sh: the job's log did not reach fit(logs='All')" >&2; exit 1; }
echo "sdk-example.sh: README Estimator example passed in $("$py" -c "print(f'{$t1 - $t0:.1f}')") s ($("$py" -c 'import logging; logging.disable(logging.CRITICAL); import sagemaker, boto3; print(f"sagemaker {sagemaker.__version__}, boto3 {boto3.__version__}")' 2>/dev/null))${extra:+, through --s3-endpoint}"
