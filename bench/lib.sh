# lib.sh - shared by bench/*.sh: locate the binaries, start a throwaway trainyard-server.
# Sourced, not run. Reads TY_BUILD_DIR (default <repo>/build) and TY_DOCKER_HOST.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
BUILD=${TY_BUILD_DIR:-$REPO/build}
SERVER_BIN=${TY_SERVER_BIN:-$BUILD/bin/trainyard-server}
RUNTIME_TAR=${TY_RUNTIME_TAR:-$BUILD/runtime-image/trainyard-runtime.tar}
DOCKER_HOST_URL=${TY_DOCKER_HOST:-unix:///run/trainyard-podman.sock}
PY=/usr/bin/python3
BENCHLIB="$PY $BENCH_DIR/benchlib.py"

die() { echo "${0##*/}: $*" >&2; exit 1; }

free_port() {
    $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

engine_up() {
    local sock=${DOCKER_HOST_URL#unix://}
    [ -S "$sock" ] && [ "$(curl -fsS --max-time 3 --unix-socket "$sock" http://d/_ping 2>/dev/null)" = OK ]
}

# ty_start AGENTS [extra flags...]: sets TY_URL, TY_DATA, TY_PID, TY_CRED; stopped by ty_cleanup.
ty_start() {
    local agents=$1; shift
    [ -x "$SERVER_BIN" ] || die "$SERVER_BIN missing: build first (cmake --build build)"
    TY_DATA=$(mktemp -d /tmp/ty-bench-XXXXXX)
    local port; port=$(free_port)
    TY_URL="http://127.0.0.1:$port"
    TY_CRED="$TY_DATA/credentials"
    "$SERVER_BIN" --listen "127.0.0.1:$port" --data-dir "$TY_DATA" --agents "$agents" \
        --docker-host "$DOCKER_HOST_URL" --runtime-image-tar "$RUNTIME_TAR" "$@" \
        >"$TY_DATA.log" 2>&1 &
    TY_PID=$!
    local i
    for i in $(seq 1 600); do
        grep -q 'event=server.ready' "$TY_DATA.log" 2>/dev/null && return 0
        kill -0 "$TY_PID" 2>/dev/null || { tail -5 "$TY_DATA.log" >&2; die "server exited"; }
        sleep 0.1
    done
    die "server not ready after 60 s (log: $TY_DATA.log)"
}

CLEANUP_PIDS=()
ty_cleanup() {
    local p
    if [ -n "${TY_PID:-}" ] && kill -0 "$TY_PID" 2>/dev/null; then
        kill -TERM "$TY_PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$TY_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$TY_PID" 2>/dev/null || true
    fi
    for p in "${CLEANUP_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ -n "${TY_DATA:-}" ] && [ -z "${TY_KEEP:-}" ]; then rm -rf "$TY_DATA" "$TY_DATA.log"; fi
}
trap ty_cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }
