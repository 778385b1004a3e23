#!/usr/bin/env bash
# slurm.sh - the Slurm executor (trainyard-agent --executor slurm) on a real cluster on loopback
# (tests/slurm/cluster.sh: slurmctld, two slurmd, slurmrestd), beside the same containers
# started by hand: Create -> the first instruction on both nodes of a 2-node job vs `sbatch` +
# `srun podman run`, N runs each (default 5), medians and their ratio; then the CPU that
# slurmrestd, slurmctld and the agent spend per second while the agent follows JOBS jobs
# (default 200), and a DescribeTrainingJob's time meanwhile (bench/slurm.py).
#   bench/slurm.sh [N] [JOBS]      (root; the container engine: tests/engine.sh)
source "$(dirname "$0")/lib.sh"
N=${1:-5}
JOBS=${2:-200}
[ "$(id -u)" = 0 ] || die "needs root (slurmd, the launchers)"
engine_up || die "no container engine at $DOCKER_HOST_URL (run tests/engine.sh)"
command -v sbatch >/dev/null || die "sbatch missing (apt-get install slurm-wlm)"
[ -x "$BUILD/bin/trainyard-launch" ] || die "$BUILD/bin/trainyard-launch missing: build first"

WORK=$(mktemp -d /tmp/ty-bench-slurm-XXXXXX)
chmod 755 "$WORK" # slurmrestd runs as the user slurm
CLUSTER=$WORK/cluster
bench_slurm_cleanup() {
    "$REPO/tests/slurm/cluster.sh" down "$CLUSTER" >/dev/null 2>&1 || true
    [ -n "${TY_KEEP:-}" ] || rm -rf "$WORK"
}
trap bench_slurm_cleanup EXIT
TY_SLURM_EPILOG="$BUILD/bin/trainyard-launch" TY_DOCKER_HOST="$DOCKER_HOST_URL" \
    "$REPO/tests/slurm/cluster.sh" up "$CLUSTER" 2 2 >/dev/null
echo '{"*": {"partition": "debug"}}' >"$WORK/map.json"
TY_SERVER_BIN=$SERVER_BIN TY_AGENT_BIN=$BUILD/bin/trainyard-agent TY_RUNTIME_TAR=$RUNTIME_TAR \
    TY_DOCKER_HOST=$DOCKER_HOST_URL $PY "$BENCH_DIR/slurm.py" "$CLUSTER/cluster.env" "$WORK" \
    "$N" "$JOBS"
