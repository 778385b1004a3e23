#!/usr/bin/env bash
# logs.sh - a job that prints N numbered lines as fast as it can (default 1,000,000): how many
# lines per second reach its CloudWatch Logs stream (CreateTrainingJob until the stream holds
# the last line), and whether every line is there once and in order; beside a bare `run` of the
# same command and a `logs` of it by the engine's own CLI (podman, or docker when the engine at
# TY_DOCKER_HOST is Docker's), into wc -l.
#   bench/logs.sh [N]       (needs the container engine: tests/engine.sh, or a dockerd)
source "$(dirname "$0")/lib.sh"
N=${1:-1000000}
engine_up || die "no container engine at $DOCKER_HOST_URL (run tests/engine.sh)"
if curl -fsS --unix-socket "${DOCKER_HOST_URL#unix://}" http://d/version | grep -q Podman; then
    ENGINE=podman
    command -v podman >/dev/null || die "podman missing"
    P="podman --url $DOCKER_HOST_URL"
    image_exists() { $P image exists "$1"; }
else
    ENGINE=docker
    command -v docker >/dev/null || die "docker (the CLI) missing"
    P="docker -H $DOCKER_HOST_URL"
    image_exists() { $P image inspect "$1" >/dev/null 2>&1; }
fi

ty_start 1 --stop-grace 2
for _ in $(seq 1 300); do
    image_exists trainyard/runtime:0.1.0 && break
    sleep 0.2
done
image_exists trainyard/runtime:0.1.0 || die "runtime image not imported"

line=$($BENCHLIB logs "$TY_URL" "$TY_CRED" "bench-logs-$$" "$N")
echo "trainyard: $line"

t0=$($BENCHLIB uptime)
cid=$($P run -d trainyard/runtime:0.1.0 seq 1 "$N")
$P wait "$cid" >/dev/null
t1=$($BENCHLIB uptime)
got=$($P logs "$cid" 2>/dev/null | wc -l)
t2=$($BENCHLIB uptime)
$P rm -f "$cid" >/dev/null
run_s=$(awk -v a="$t1" -v b="$t0" 'BEGIN {printf "%.2f", a - b}')
logs_s=$(awk -v a="$t2" -v b="$t1" 'BEGIN {printf "%.2f", a - b}')
echo "$ENGINE: run+wait ${run_s} s; $ENGINE logs ${logs_s} s for $got of $N lines" \
    "($(awk -v n="$got" -v s="$logs_s" 'BEGIN {printf "%.0f", (s > 0 ? n / s : 0)}') lines/s)"
ty_s=$(echo "$line" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p')
echo "RESULT engine=$ENGINE lines=$N trainyard_s=$ty_s run_s=$run_s logs_s=$logs_s" \
    "ratio_trainyard_to_run_plus_logs=$(awk -v a="$ty_s" -v b="$run_s" -v c="$logs_s" \
    'BEGIN {printf "%.2f", a / (b + c)}')"
