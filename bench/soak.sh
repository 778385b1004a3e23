#!/usr/bin/env bash
# soak.sh - a long mixed load on one server and one agent, to see memory and latency stay flat:
# DescribeTrainingJob, ListTrainingJobs, S3 PutObject and GetObject (bytes checked) at a steady
# rate, and short training jobs created evenly over the run (bench/soak.py). Prints, per minute,
# the calls, errors, p50/p99 latency, jobs ended and the RSS of the server and of the agent (a
# separate trainyard-agent on the server's Redis, so that each has its own figure), then a
# RESULT line, a MEMORY line per process (RSS at start, after the warm-up, at the end, drained;
# slope over the second half) and MEMORY PASS or FAIL (bounded growth after the warm-up; see
# bench/README.md). Exits 1 when any call failed, any job did not complete or memory failed.
# Needs the container engine (tests/engine.sh).
#   bench/soak.sh [--minutes M] [--jobs J] [--rate CALLS_PER_S]   (defaults 10, 200, 40)
#                 [--warmup MIN] [--max-growth-pct G] [--max-slope-pct S]  (30 % of M, 10, 1)
source "$(dirname "$0")/lib.sh"
MINUTES=10
JOBS=200
RATE=40
MEM_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --minutes) MINUTES=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --warmup | --max-growth-pct | --max-slope-pct) MEM_ARGS+=("$1" "$2"); shift 2 ;;
    *) die "unknown option '$1' (--minutes M, --jobs J, --rate R, --warmup W, --max-growth-pct G, --max-slope-pct S)" ;;
    esac
done
engine_up || die "no container engine at $DOCKER_HOST_URL (run tests/engine.sh)"
AGENT_BIN=${TY_AGENT_BIN:-$BUILD/bin/trainyard-agent}
[ -x "$AGENT_BIN" ] || die "$AGENT_BIN missing: build first"

ty_start 0 --stop-grace 2
"$AGENT_BIN" --redis "unix://$TY_DATA/redis/redis.sock" --docker-host "$DOCKER_HOST_URL" \
    --data-dir "$TY_DATA/agent" --staging-dir "$TY_DATA.staging" --s3-dir "$TY_DATA/s3" \
    --id "soak-agent-$$" --slots 4 --stop-grace 2 --endpoint-url "$TY_URL" \
    --runtime-image-tar "$RUNTIME_TAR" >"$TY_DATA.agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP_PIDS+=("$AGENT_PID")
for _ in $(seq 1 300); do
    grep -q 'event=agent.started' "$TY_DATA.agent.log" 2>/dev/null && break
    kill -0 "$AGENT_PID" 2>/dev/null || { tail -5 "$TY_DATA.agent.log" >&2; die "agent exited"; }
    sleep 0.1
done
grep -q 'event=agent.started' "$TY_DATA.agent.log" || die "agent not started (log: $TY_DATA.agent.log)"

echo "== soak: $MINUTES min, $JOBS jobs, $RATE calls/s; server pid $TY_PID, agent pid $AGENT_PID"
rc=0
PYTHONPATH="$BENCH_DIR" $PY "$BENCH_DIR/soak.py" "$TY_URL" "$TY_CRED" "$TY_PID" "$AGENT_PID" \
    --minutes "$MINUTES" --jobs "$JOBS" --rate "$RATE" ${MEM_ARGS[@]+"${MEM_ARGS[@]}"} || rc=$?
echo "(machine: $(nproc) CPUs; $(uname -r))"
[ -z "${TY_KEEP:-}" ] && rm -rf "$TY_DATA.agent.log" "$TY_DATA.staging"
exit "$rc"
