#!/usr/bin/env bash
# describe.sh - DescribeTrainingJob throughput and p99 latency (wrk: 2 threads, 16 keep-alive
# connections, 10 s, one SigV4-signed request replayed; SigV4 has no replay check and the
# X-Amz-Date stays inside the 15-minute window) next to redis-benchmark GET (16 clients) on a
# fresh redis-server on the same machine, and the ratios. Not a test: it prints figures.
#   bench/describe.sh            (TY_BUILD_DIR, TY_DOCKER_HOST, WRK_DURATION=10s optional)
source "$(dirname "$0")/lib.sh"
command -v wrk >/dev/null || die "wrk missing (apt-get install -y wrk)"
command -v redis-benchmark >/dev/null || die "redis-benchmark missing (apt-get install -y redis-tools)"
DURATION=${WRK_DURATION:-10s}

# A completed job when an engine is there (its document has the full transition history);
# otherwise a queued one on a pure API server.
if engine_up; then agents=1; else agents=0; fi
ty_start "$agents" --stop-grace 2
name="bench-describe-$$"
$BENCHLIB create "$TY_URL" "$TY_CRED" "$name" 'echo "loss=0.5"; echo done' >/dev/null
if [ "$agents" = 1 ]; then
    status=$($BENCHLIB wait "$TY_URL" "$TY_CRED" "$name" 120)
    echo "job $name: $status"
fi
lua="$TY_DATA/describe.lua"
$BENCHLIB wrk-lua "$TY_URL" "$TY_CRED" "$name" "$lua"

echo "== trainyard DescribeTrainingJob: wrk -t2 -c16 -d$DURATION --latency -s describe.lua $TY_URL/"
wrk_out=$(wrk -t2 -c16 -d"$DURATION" --latency -s "$lua" "$TY_URL/")
echo "$wrk_out" | grep -E 'Requests/sec|Latency|99%|Non-2xx|Socket errors|requests in'
ty_rps=$(echo "$wrk_out" | awk '/^Requests\/sec:/ {print $2}')
ty_p99_us=$(echo "$wrk_out" | awk '/^LUA / {for (i=2;i<=NF;i++) {split($i,kv,"="); if (kv[1]=="p99_us") print kv[2]}}')
non2xx=$(echo "$wrk_out" | awk '/^LUA / {for (i=2;i<=NF;i++) {split($i,kv,"="); if (kv[1]=="non2xx") print kv[2]}}')
[ "${non2xx:-1}" = 0 ] || die "wrk saw $non2xx non-2xx responses: the signed request was refused"

rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no >"$TY_DATA/redis-bench.log" 2>&1 &
CLEANUP_PIDS+=($!)
for _ in $(seq 1 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "== redis-benchmark -h 127.0.0.1 -p $rport -t get -c 16 -n 200000 -q"
rq=$(redis-benchmark -h 127.0.0.1 -p "$rport" -t get -c 16 -n 200000 -q | tr '\r' '\n' | grep -E '^GET: [0-9]')
echo "$rq"
redis_rps=$(echo "$rq" | awk '{print $2}')
echo "== redis-benchmark -h 127.0.0.1 -p $rport -t get -c 16 -n 200000 --csv (for p99)"
rcsv=$(redis-benchmark -h 127.0.0.1 -p "$rport" -t get -c 16 -n 200000 --csv | grep '^"GET"')
echo "$rcsv"
redis_p99_ms=$(echo "$rcsv" | tr -d '"' | awk -F, '{print $7}')

awk -v a="$ty_rps" -v b="$redis_rps" -v p="$ty_p99_us" -v q="$redis_p99_ms" 'BEGIN {
    printf "\nRESULT describe: trainyard %.0f req/s p99 %.2f ms | redis GET %.0f req/s p99 %.3f ms | throughput ratio trainyard/redis = %.3f | p99 ratio = %.1fx\n",
        a, p / 1000, b, q, a / b, (p / 1000) / q }'
echo "(machine: $(nproc) CPUs; $(uname -r))"
