#!/usr/bin/env bash
# bench/s3.sh - S3 PUT and GET throughput of trainyard's embedded object store, next to a plain
# copy of the same bytes on the same disk, measured in the same run.
#
# usage: bench/s3.sh
# env:   TY_S3_EXTERNAL=1 puts a second trainyard behind the first as its --s3-endpoint store,
#        so that every request is checked, forwarded and answered through the external-store
#        path (compare its ratios with a plain run to see what forwarding costs),
#        TY_BUILD_DIR (default build; use a release build), TY_KEEP=1 keeps the data dir and log,
#        BENCH_DIR where the server's data dir and the baseline files live (default: a new dir
#        under ${TMPDIR:-/tmp}), N1 (default 50) 1 MiB objects, N64 (default 5) 64 MiB objects
#
# The client is curl --aws-sigv4 (one process per request, streamed from/to a file: -T / -o).
# PUT is compared with `cp` + fsync of the copy (the store fsyncs every object before it
# answers) and with a plain `cp` (page cache only); GET with `cp` out of the store's file.
# Ratios are store time / baseline time: 1.0 = as fast as cp, 2.0 = twice as slow.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
bin=${TY_SERVER_BIN:-${TY_BUILD_DIR:-$here/build}/bin/trainyard-server}
n1=${N1:-50}
n64=${N64:-5}
[ -x "$bin" ] || { echo "s3.sh: no server binary at $bin (build first)" >&2; exit 1; }
command -v curl >/dev/null || { echo "s3.sh: curl is required" >&2; exit 1; }

work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ty-bench-s3.XXXXXX")}
mkdir -p "$work"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
wait_up() { # port credentials-file
    for _ in $(seq 100); do
        [ -f "$2" ] && curl -s -o /dev/null "http://127.0.0.1:$1/healthz" && return 0
        sleep 0.1
    done
    echo "s3.sh: no server on port $1 (see $work/*.log)" >&2
    exit 1
}
spid=
extra=()
if [ -n "${TY_S3_EXTERNAL:-}" ]; then
    sport=$(free_port)
    "$bin" --listen "127.0.0.1:$sport" --data-dir "$work/store" --agents 0 --log-level warn \
        >"$work/store.log" 2>&1 &
    spid=$!
    wait_up "$sport" "$work/store/credentials"
    export TRAINYARD_S3_ACCESS_KEY_ID TRAINYARD_S3_SECRET_ACCESS_KEY
    TRAINYARD_S3_ACCESS_KEY_ID=$(awk -F' = ' '/aws_access_key_id/{print $2}' "$work/store/credentials")
    TRAINYARD_S3_SECRET_ACCESS_KEY=$(awk -F' = ' '/aws_secret_access_key/{print $2}' "$work/store/credentials")
    extra=(--s3-endpoint "http://127.0.0.1:$sport")
fi
"$bin" --listen "127.0.0.1:$port" --data-dir "$work/data" --agents 0 --log-level warn \
    "${extra[@]}" >"$work/server.log" 2>&1 &
pid=$!
cleanup() {
    kill "$pid" $spid 2>/dev/null || true
    wait "$pid" $spid 2>/dev/null || true
    if [ -n "${TY_KEEP:-}" ]; then echo "kept: $work" >&2; elif [ -z "${BENCH_DIR:-}" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
wait_up "$port" "$work/data/credentials"
ak=$(awk -F' = ' '/aws_access_key_id/{print $2}' "$work/data/credentials")
sk=$(awk -F' = ' '/aws_secret_access_key/{print $2}' "$work/data/credentials")
url="http://127.0.0.1:$port"
s3() { curl -sS -f --aws-sigv4 "aws:amz:us-east-1:s3" -u "$ak:$sk" "$@"; }
s3 -X PUT "$url/bench" -o /dev/null

now() { date +%s.%N; }
el() { python3 -c "print(f'{$2 - $1:.3f}')"; }

run() { # size_mb count
    local mb=$1 n=$2 src="$work/src-$1m" t0 t1 put get cp cps cpget
    head -c $((mb * 1048576)) /dev/urandom >"$src"
    sync
    # baselines: cp of the same bytes on the same disk
    t0=$(now)
    for i in $(seq "$n"); do cp "$src" "$work/cp-$i"; done
    t1=$(now); cp=$(el "$t0" "$t1")
    rm -f "$work"/cp-*
    t0=$(now)
    for i in $(seq "$n"); do cp "$src" "$work/cp-$i" && sync "$work/cp-$i"; done
    t1=$(now); cps=$(el "$t0" "$t1")
    t0=$(now)
    for i in $(seq "$n"); do cp "$work/cp-$i" "$work/cpget-$i"; done
    t1=$(now); cpget=$(el "$t0" "$t1")
    rm -f "$work"/cp-* "$work"/cpget-*
    # the store
    t0=$(now)
    for i in $(seq "$n"); do s3 -T "$src" "$url/bench/o-$mb-$i" -o /dev/null; done
    t1=$(now); put=$(el "$t0" "$t1")
    t0=$(now)
    for i in $(seq "$n"); do s3 "$url/bench/o-$mb-$i" -o "$work/get-$i"; done
    t1=$(now); get=$(el "$t0" "$t1")
    cmp -s "$src" "$work/get-$n" || { echo "s3.sh: GET returned other bytes" >&2; exit 1; }
    rm -f "$work"/get-*
    python3 - "$mb" "$n" "$put" "$get" "$cp" "$cps" "$cpget" <<'EOF'
import sys
mb, n = int(sys.argv[1]), int(sys.argv[2])
put, get, cp, cps, cpget = map(float, sys.argv[3:])
tot = mb * n
def rate(t): return tot / t if t > 0 else float("inf")
print(f"{mb:>3} MiB x {n:<3} PUT {rate(put):8.1f} MiB/s   cp+fsync {rate(cps):8.1f} MiB/s   "
      f"ratio {put / cps:5.2f}   (plain cp {rate(cp):8.1f} MiB/s, ratio {put / cp:5.2f})")
print(f"{mb:>3} MiB x {n:<3} GET {rate(get):8.1f} MiB/s   cp       {rate(cpget):8.1f} MiB/s   "
      f"ratio {get / cpget:5.2f}")
EOF
}

echo "trainyard S3 bench: $bin${spid:+ (through --s3-endpoint to a second trainyard)}, data on $(df -P "$work" | awk 'NR==2{print $1}') ($work)"
run 1 "$n1"
run 64 "$n64"
