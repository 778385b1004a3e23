#!/usr/bin/env bash
# schedule.sh - the resource ledger and fair share at scale (issue 23): JOBS jobs (default 200)
# of mixed GPU sizes from 5 IAM users, queued at once, on AGENTS server-embedded agents
# (default 2) that each declare 8 fake GPUs: device nodes (mknod c 195 N) and a CDI spec of a
# bench-only vendor, as tests/integration/test_gpus.py makes them. Every job is a real
# container; bench/schedule.py says what is measured.
#   bench/schedule.sh [JOBS] [AGENTS]      (root for mknod and /etc/cdi; Podman: tests/engine.sh)
source "$(dirname "$0")/lib.sh"
JOBS=${1:-200}
AGENTS=${2:-2}
[ "$(id -u)" = 0 ] || die "needs root (mknod, /etc/cdi)"
engine_up || die "no container engine at $DOCKER_HOST_URL (run tests/engine.sh)"
curl -fsS --unix-socket "${DOCKER_HOST_URL#unix://}" http://d/version | grep -q Podman ||
    die "the fake GPUs are CDI devices: Podman's service is needed"

VENDOR=trainyard-bench.example/gpu
SPEC=/etc/cdi/trainyard-bench-gpus.json
DEVS=$(mktemp -d /tmp/ty-bench-gpus-XXXXXX)
trap 'ty_cleanup; rm -f "$SPEC"; rm -rf "$DEVS"' EXIT
names=()
devices=()
for i in 0 1 2 3 4 5 6 7; do
    mknod -m 666 "$DEVS/nvidia$i" c 195 "$i"
    names+=("$VENDOR=$i")
    devices+=("{\"name\":\"$i\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia$i\",\"hostPath\":\"$DEVS/nvidia$i\"}]}}")
done
mkdir -p /etc/cdi
(IFS=,; echo "{\"cdiVersion\":\"0.5.0\",\"kind\":\"$VENDOR\",\"devices\":[${devices[*]}]}") >"$SPEC"

ty_start "$AGENTS" --gpus "$(IFS=,; echo "${names[*]}")" --cpus 96 --memory 1152G --slots 16 \
    --job-volumes none --stop-grace 1 --max-training-instances-per-principal 0 \
    --max-training-jobs-per-instance-type 0
$PY "$BENCH_DIR/schedule.py" "$TY_URL" "$TY_CRED" "$TY_DATA.log" --jobs "$JOBS" \
    --gpus $((8 * AGENTS))
