#!/bin/sh
# overhead.sh [BUILD_DIR] [RUNS] [STEPS] - overhead of `typrof run` against the bare command
# for a CPU workload (bench/profiler/cpu_work.c), measured in the same run, runs interleaved.
# Prints the median wall time and CPU time (user+sys of the whole process tree, monitor
# included; needs /usr/bin/time) of each variant and their ratios to the bare command. On a
# shared, loaded machine trust the CPU-time ratio more than the wall-time ratio.
#   bare          cpu_work STEPS
#   metrics500    typrof run --interval 500 -- cpu_work STEPS      (system monitor only)
#   metrics100    typrof run --interval 100 -- cpu_work STEPS
#   annotated     typrof run --interval 500 -- cpu_work STEPS 1    (libtyprof in the process,
#                 one step + one range per ~1 ms step, trace and summary written at exit)
# Goal: <= 3 % with CPU metrics. Kernel tracing needs a GPU (not measured here).
set -eu
B=${1:-$(cd "$(dirname "$0")/../.." && pwd)/build-profiler}
RUNS=${2:-7}
STEPS=${3:-1500}
TYPROF=$B/bin/typrof
[ -x "$TYPROF" ] || { echo "no $TYPROF: build the typrof_cli target first" >&2; exit 2; }
W=$(mktemp -d /tmp/typrof-bench-XXXXXX)
trap 'rm -rf "$W"' EXIT
cc -O2 -o "$W/cpu_work" "$(dirname "$0")/cpu_work.c" -lm -ldl

now() { date +%s%N; }
TIME=/usr/bin/time
[ -x "$TIME" ] || TIME=
run() { # name cmd...
    name=$1; shift
    t0=$(now)
    if [ -n "$TIME" ]; then
        "$TIME" -f "%U %S" -o "$W/t" "$@" >/dev/null 2>&1 || true
    else
        "$@" >/dev/null 2>&1 || true
        echo "0 0" > "$W/t"
    fi
    t1=$(now)
    echo "$(( (t1 - t0) / 1000 ))" >> "$W/$name"
    awk '{printf "%d\n", ($1 + $2) * 1000000}' "$W/t" >> "$W/$name.cpu"
}
"$W/cpu_work" 100 >/dev/null # warm up
i=0
while [ "$i" -lt "$RUNS" ]; do
    run bare "$W/cpu_work" "$STEPS"
    run metrics500 "$TYPROF" run --interval 500 --out "$W/o1" -- "$W/cpu_work" "$STEPS"
    run metrics100 "$TYPROF" run --interval 100 --out "$W/o2" -- "$W/cpu_work" "$STEPS"
    run annotated "$TYPROF" run --interval 500 --out "$W/o3" -- "$W/cpu_work" "$STEPS" 1
    i=$((i + 1))
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(median "$W/bare")
cbase=$(median "$W/bare.cpu")
printf "%-11s %9s %7s %9s %7s   (medians of %s runs, %s steps)\n" variant wall_ms ratio cpu_ms \
    ratio "$RUNS" "$STEPS"
for v in bare metrics500 metrics100 annotated; do
    m=$(median "$W/$v")
    c=$(median "$W/$v.cpu")
    awk -v n="$v" -v m="$m" -v b="$base" -v c="$c" -v cb="$cbase" 'BEGIN {
        printf "%-11s %9.1f %7.4f %9.1f %7.4f\n", n, m/1000, m/b, c/1000, (cb > 0 ? c/cb : 0) }'
done
echo "annotated run recorded $(grep -o '"steps":{"count":[0-9]*' "$W"/o3/summary/*.summary.json \
    | grep -o '[0-9]*$' | tail -1) steps (last run)"
