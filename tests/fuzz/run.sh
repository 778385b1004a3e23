#!/bin/sh
# run.sh - runs one libFuzzer harness for ctest (tests/fuzz/CMakeLists.txt).
#   run.sh fuzz HARNESS SEED_DIR WORK_DIR CRASH_DIR [libFuzzer flags]
#     copies the committed seed corpus into WORK_DIR (in the build dir: the source tree is never
#     written) and fuzzes it for the bounded time the flags give; new inputs stay in WORK_DIR.
#     The seed is fixed (TY_FUZZ_SEED, default 35) so that a failure CI saw is seen again;
#     TY_FUZZ_SEED=0 lets libFuzzer pick one (a campaign of your own).
#   run.sh regress HARNESS REGRESSION_DIR CRASH_DIR [libFuzzer flags]
#     runs every file of REGRESSION_DIR once (none: passes).
# A crash, leak, UB report or timeout fails the test; the input is left in CRASH_DIR and is to be
# committed under tests/fuzz/regressions/<harness>/ once the bug is fixed.
set -u
mode=$1 bin=$2 src=$3
shift 3
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
limits="-timeout=5 -rss_limit_mb=1024 -print_final_stats=1"
case $mode in
fuzz)
  work=$1 crash=$2
  shift 2
  mkdir -p "$work" "$crash" || exit 1
  cp -p "$src"/* "$work"/ 2>/dev/null
  "$bin" $limits -seed=${TY_FUZZ_SEED:-35} -artifact_prefix="$crash/" "$@" "$work"
  rc=$?
  ;;
regress)
  crash=$1
  shift
  mkdir -p "$crash" || exit 1
  set -- "$@" $(find "$src" -type f ! -name '.*' 2>/dev/null | sort)
  case "$*" in
  *"$src"*) ;;
  *) echo "run.sh: no regression inputs in $src"; exit 0 ;;
  esac
  "$bin" $limits -artifact_prefix="$crash/" "$@"
  rc=$?
  ;;
*)
  echo "run.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac
[ $rc -eq 0 ] || echo "run.sh: $(basename "$bin") failed ($rc); the input is in the crash dir above: fix the bug, then add it to tests/fuzz/regressions/" >&2
exit $rc
