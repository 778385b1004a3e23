#!/usr/bin/env bash
# describe.sh - DescribeTrainingJob throughput and p99 latency (wrk: 2 threads, 1, 16 and 256
# keep-alive connections, 10 s each, one SigV4-signed request replayed; SigV4 has no replay
# check and the X-Amz-Date stays inside the 15-minute window) next to redis-benchmark GET at the
# same concurrency on a fresh redis-server on the same machine in the same run, and the ratios
# (targets: >= 0.5x redis and p99 < 2 ms at 16), and the CPU time each server spent per request
# (from /proc: steadier than req/s when other work shares the machine). Not a test: it prints
# figures.
#   bench/describe.sh   (TY_BUILD_DIR, TY_DOCKER_HOST, WRK_DURATION=10s, CONNECTIONS="1 16 256")
source "$(dirname "$0")/lib.sh"
command -v wrk >/dev/null || die "wrk missing (apt-get install -y wrk)"
command -v redis-benchmark >/dev/null || die "redis-benchmark missing (apt-get install -y redis-tools)"
DURATION=${WRK_DURATION:-10s}

# A completed job when an engine is there (its document has the full transition history);
# otherwise a queued one on a pure API server.
if engine_up; then agents=1; else agents=0; fi
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
ty_start "$agents" --stop-grace 2 --max-connections-per-client 1024
name="bench-describe-$$"
$BENCHLIB create "$TY_URL" "$TY_CRED" "$name" 'echo "loss=0.5"; echo done' >/dev/null
if [ "$agents" = 1 ]; then
    status=$($BENCHLIB wait "$TY_URL" "$TY_CRED" "$name" 120)
    echo "job $name: $status"
fi
lua="$TY_DATA/describe.lua"
$BENCHLIB wrk-lua "$TY_URL" "$TY_CRED" "$name" "$lua"

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$TY_DATA/redis-bench.log" 2>&1 &
BENCH_REDIS_PID=$!
CLEANUP_PIDS+=($!)
for _ in $(seq 1 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done

# CPU seconds (user + system) used so far by process $1, from /proc.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
TY_REDIS_PID=$(pgrep -P "$TY_PID" redis-server | head -1 || true)

lua_field() { awk -v k="$1" '/^LUA / {for (i=2;i<=NF;i++) {split($i,kv,"="); if (kv[1]==k) print kv[2]}}'; }

# one run at C connections: trainyard, then redis-benchmark GET at the same concurrency
run_at() {
    local c=$1 t=2 wrk_out ty_rps ty_p99_us non2xx rcsv redis_rps redis_p99_ms
    [ "$c" -ge 2 ] || t=1
    local s0 r0 s1 r1 nreq
    echo "== trainyard DescribeTrainingJob: wrk -t$t -c$c -d$DURATION --latency -s describe.lua $TY_URL/"
    s0=$(cpu_s "$TY_PID"); r0=$(cpu_s "${TY_REDIS_PID:-0}")
    wrk_out=$(wrk -t"$t" -c"$c" -d"$DURATION" --latency -s "$lua" "$TY_URL/")
    s1=$(cpu_s "$TY_PID"); r1=$(cpu_s "${TY_REDIS_PID:-0}")
    echo "$wrk_out" | grep -E 'Requests/sec|Latency|99%|Non-2xx|Socket errors|requests in'
    ty_rps=$(echo "$wrk_out" | awk '/^Requests\/sec:/ {print $2}')
    ty_p99_us=$(echo "$wrk_out" | lua_field p99_us)
    non2xx=$(echo "$wrk_out" | lua_field non2xx)
    [ "${non2xx:-1}" = 0 ] || die "wrk saw $non2xx non-2xx responses: the signed request was refused"
    nreq=$(echo "$wrk_out" | lua_field requests)
    # CPU time per request: steadier than req/s when other work shares the machine
    awk -v c="$c" -v n="${nreq:-0}" -v s="$s0 $s1" -v r="$r0 $r1" 'BEGIN {
        split(s, a, " "); split(r, b, " "); if (n == 0) n = 1
        printf "CPU describe c=%d: trainyard-server %.1f us/request, its redis-server %.1f us/request\n",
            c, (a[2] - a[1]) * 1e6 / n, (b[2] - b[1]) * 1e6 / n }'
    echo "== redis-benchmark -h 127.0.0.1 -p $rport -t get -c $c -n 200000 --csv"
    r0=$(cpu_s "$BENCH_REDIS_PID")
    rcsv=$(redis-benchmark -h 127.0.0.1 -p "$rport" -t get -c "$c" -n 200000 --csv | grep '^"GET"')
    r1=$(cpu_s "$BENCH_REDIS_PID")
    echo "$rcsv"
    awk -v c="$c" -v r="$r0 $r1" 'BEGIN { split(r, b, " ");
        printf "CPU redis GET c=%d: redis-server %.1f us/request\n", c, (b[2] - b[1]) * 1e6 / 200000 }'
    redis_rps=$(echo "$rcsv" | tr -d '"' | awk -F, '{print $2}')
    redis_p99_ms=$(echo "$rcsv" | tr -d '"' | awk -F, '{print $7}')
    awk -v c="$c" -v a="$ty_rps" -v b="$redis_rps" -v p="$ty_p99_us" -v q="$redis_p99_ms" 'BEGIN {
        printf "RESULT describe c=%d: trainyard %.0f req/s p99 %.2f ms | redis GET %.0f req/s p99 %.3f ms | throughput ratio trainyard/redis = %.3f | p99 ratio = %.1fx\n",
            c, a, p / 1000, b, q, a / b, (p / 1000) / q }'
}

for c in ${CONNECTIONS:-1 16 256}; do run_at "$c"; echo; done
echo "(machine: $(nproc) CPUs; $(uname -r); load average before the runs: $LOAD0)"
