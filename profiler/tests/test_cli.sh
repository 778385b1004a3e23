#!/bin/sh
# test_cli.sh TYPROF LIBTYPROF SRCDIR [PYTHON3] - typrof end to end on a CPU-only machine:
# `run` with a C-free workload and with a Python script using smprof, then `report` and
# `rules`. Checks the output layout, the summary, the HTML (self-contained) and rule output.
set -eu
export PYTHONDONTWRITEBYTECODE=1
TYPROF=$1 LIB=$2 SRC=$3 PY=${4:-}
DIR=$(mktemp -d /tmp/typrof-test-cli-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. a plain command: system metrics and the run record; exit status passes through
"$TYPROF" run --interval 50 --out "$DIR/a" -- sh -c 'sleep 0.3; exit 3' && fail "exit status lost"
[ $? -eq 3 ] || true
ls "$DIR"/a/system/incremental/*/*.algo-1.json >/dev/null || fail "no system metrics"
grep -q '"Dimension":"CPUUtilization"' "$DIR"/a/system/incremental/*/*.json || fail "no cpu lines"
grep -q '"exit_code":3' "$DIR/a/run.json" || fail "run.json"
grep -q '"schema":"typrof.report/1"' "$DIR/a/summary.json" || fail "summary.json"
# a run that never loads CUDA still has a timeline: the command's span and system counters
"$TYPROF" report "$DIR/a" >/dev/null || fail "report of a CPU-only run"
grep -q '"name":"command"' "$DIR/a/timeline.trace.json" || fail "no process span"
grep -q '"ph":"C"' "$DIR/a/timeline.trace.json" || fail "no counters"
if command -v node >/dev/null 2>&1; then
    node "$SRC/check_report.js" "$DIR/a/report.html" >/dev/null || fail "CPU-only dashboard script"
fi
"$TYPROF" run --out "$DIR/a" -- /nonexistent/cmd 2>/dev/null && fail "missing command ran"
"$TYPROF" run --interval 1 -- true 2>/dev/null && fail "bad interval accepted"

# 2. a Python script written for SageMaker Profiler, unchanged. A sanitizer build of
# libtyprof needs the ASan runtime first in an uninstrumented python.
if ldd "$LIB" | grep -q libasan; then
    export LD_PRELOAD="$(ldd "$LIB" | awk '/libasan/ {print $3}')"
    export ASAN_OPTIONS=detect_leaks=0
fi
if [ -n "$PY" ] && "$PY" -c 'import ctypes' 2>/dev/null; then
    cat > "$DIR/train.py" <<'PYEOF'
import time
try:
    import smprof
except ImportError:
    import smppy as smprof
SMProf = smprof.SMProfiler.instance()
config = smprof.Config()
config.profiler = {"EnableCuda": "1"}
SMProf.configure(config)
SMProf.start_profiling()
for step in range(5):
    smprof.step_begin(step)
    with smprof.annotate("Forward"):
        sum(i * i for i in range(20000))
    h = smprof.annotation_begin("Backward")
    time.sleep(0.01)
    smprof.annotation_end(h)
    smprof.step_end(step)

@smprof.annotate("decorated")
def f():
    return 1
f()
SMProf.stop_profiling()
PYEOF
    "$TYPROF" run --interval 50 --out "$DIR/p" -- "$PY" "$DIR/train.py" || fail "python run"
    T=$(ls "$DIR"/p/trace/*.trace.json | head -1)
    [ -n "$T" ] || fail "no trace"
    grep -q '"name":"Forward"' "$DIR"/p/trace/*.trace.json || fail "Forward missing"
    grep -q '"name":"Backward"' "$DIR"/p/trace/*.trace.json || fail "Backward missing"
    grep -q '"name":"decorated"' "$DIR"/p/trace/*.trace.json || fail "decorated missing"
    grep -q '"name":"Step".*"step_num":"4"' "$DIR"/p/trace/*.trace.json || fail "steps missing"
    "$PY" -c "import json,sys; [json.load(open(f)) for f in sys.argv[1:]]" "$DIR"/p/trace/*.json \
        "$DIR"/p/summary/*.json "$DIR/p/summary.json" || fail "invalid json"
    "$TYPROF" report "$DIR/p" > "$DIR/report.txt" || fail "report"
    grep -q "annotation Forward: 5x" "$DIR/report.txt" || { cat "$DIR/report.txt"; fail "report text"; }
    grep -q "steps: 5" "$DIR/report.txt" || fail "report steps"
    H="$DIR/p/report.html"
    [ -s "$H" ] || fail "no html"
    grep -q '<canvas id="tl"' "$H" || fail "no timeline"
    if grep -Eq '(src|href)="?(https?:)?//' "$H"; then fail "html loads external resources"; fi
    grep -q '"Forward"' "$H" || fail "trace not embedded"
    if command -v node >/dev/null 2>&1; then
        node "$SRC/check_report.js" "$H" || fail "dashboard script"
    fi
    # without typrof run, smprof falls back to TYPROF_OUT; the library loads and says no gpu
    TYPROF_LIB="$LIB" TYPROF_OUT="$DIR/q" PYTHONPATH="$SRC/../python" "$PY" "$DIR/train.py" \
        || fail "python without typrof run"
    grep -q '"gpu_note":"no gpu found' "$DIR"/q/summary/*.summary.json \
        || grep -q '"gpu_note":' "$DIR"/q/summary/*.summary.json || fail "no gpu note"
else
    echo "python3 not found: smprof part skipped"
fi

# 3. rules: documented list; on this short CPU-only run no rule has its data: all NoData
# ("not evaluated", exit 0), never NoIssuesFound; JSON for the agent
"$TYPROF" rules --list | grep -q "^LowGPUUtilization: " || fail "rules --list"
for r in LowGPUUtilization CPUBottleneck IOBottleneck GPUMemoryIncrease BatchSize \
         MaxInitializationTime StepOutlier LoadBalancing; do
    "$TYPROF" rules --list | grep -q "^$r: " || fail "rule $r missing"
done
"$TYPROF" rules "$DIR/a" > "$DIR/rules.txt" || fail "rules exit $?"
[ "$(grep -c ' NoData .*not evaluated' "$DIR/rules.txt")" -eq 8 ] || fail "rules not NoData"
grep -q NoIssuesFound "$DIR/rules.txt" && fail "a rule without data said NoIssuesFound"
"$TYPROF" rules "$DIR/a" --json | grep -q '"RuleEvaluationStatus":"NoData"' || fail "json"
# a crafted directory where the CPU is the bottleneck and the GPU idles
mkdir -p "$DIR/c/system/incremental/2020060305"
F="$DIR/c/system/incremental/2020060305/1591160699.algo-1.json"
i=0
while [ $i -lt 1100 ]; do
    echo "{\"Type\":\"cpu\",\"Name\":\"cpu0\",\"Dimension\":\"CPUUtilization\",\"Value\":97,\"NodeId\":\"algo-1\",\"Timestamp\":$((1591160699 + i))}"
    echo "{\"Type\":\"gpu\",\"Name\":\"gpu0\",\"Dimension\":\"GPUUtilization\",\"Value\":2,\"NodeId\":\"algo-1\",\"Timestamp\":$((1591160699 + i))}"
    i=$((i + 1))
done > "$F"
set +e
"$TYPROF" rules "$DIR/c" --rule CPUBottleneck > "$DIR/r2.txt"; rc=$?
set -e
[ $rc -eq 1 ] || fail "CPUBottleneck exit $rc"
grep -q "IssuesFound" "$DIR/r2.txt" || fail "CPUBottleneck quiet"
"$TYPROF" rules "$DIR/c" --rule CPUBottleneck --param cpu_threshold=99 >/dev/null \
    || fail "param override"
"$TYPROF" rules "$DIR/c" --rule Nope 2>/dev/null && fail "unknown rule"
# 4. SageMaker's container config: interval, LocalPath, DisableProfiler, live updates
cat > "$DIR/pc.json" <<JEOF
{"ProfilingIntervalInMilliseconds": 100, "ProfilingParameters": {"LocalPath": "$DIR/lp",
 "RotateMaxFileSizeInBytes": "1000000"}}
JEOF
SMPROFILER_CONFIG_PATH="$DIR/pc.json" "$TYPROF" run -- sleep 0.3 2>/dev/null || fail "config run"
grep -q '"interval_ms":100' "$DIR/lp/run.json" || fail "interval from profilerconfig.json"
echo '{"DisableProfiler": true}' > "$DIR/pc2.json"
SMPROFILER_CONFIG_PATH="$DIR/pc2.json" "$TYPROF" run --out "$DIR/dis" -- true || fail "disabled run"
[ ! -e "$DIR/dis" ] || fail "DisableProfiler ignored"
echo '{"ProfilingIntervalInMilliseconds": 100}' > "$DIR/pc3.json"
SMPROFILER_CONFIG_PATH="$DIR/pc3.json" "$TYPROF" run --out "$DIR/live" -- sh -c \
    "sleep 0.5; echo '{\"DisableProfiler\": true}' > '$DIR/pc3.json'; sleep 1.6" 2> "$DIR/live.err" \
    || fail "live run"
grep -q "profiling disabled" "$DIR/live.err" || { cat "$DIR/live.err"; fail "live update"; }
echo "ok"
