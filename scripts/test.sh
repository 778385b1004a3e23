#!/usr/bin/env bash
# Runs the whole test suite: installs missing packages, runs the style check
# (scripts/style-check.py: format, headers alone, banned functions, naming, dependency rules),
# starts the container engine, builds a
# release and an ASan+UBSan build, runs the unit tests and the integration suite under the
# sanitizers (servers and agents built with them), the libFuzzer harnesses for a bounded time (a
# clang build), then every other ctest of the release build (the integration suite runs once, against
# the sanitizer builds: the same tests, with ASan and UBSan watching the server and the agent).
# Exits non-zero when any test fails; ctest's summary lines are the last thing printed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh" || exit 1
echo "== style check =="
style=0
python3 "$top/scripts/style-check.py" || style=1
export TY_DOCKER_HOST=${TY_DOCKER_HOST:-unix:///run/trainyard-podman.sock}
"$top/tests/engine.sh" || { echo "test.sh: no container engine" >&2; exit 1; }
jobs=$(nproc)
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
build() { # dir: builds quietly, shows the log's tail when the build fails
  cmake --build "$1" -j"$jobs" >"$1/build.log" 2>&1 || { tail -n 60 "$1/build.log"; echo "test.sh: build failed in $1" >&2; exit 1; }
}
build "$top/build"
cmake -S "$top" -B "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DTY_SANITIZE=ON \
  -DTY_SANITIZED_RUNTIME_TAR="$top/build/runtime-image/trainyard-runtime.tar" >/dev/null || exit 1
build "$top/build-asan"
status=$style
echo "== unit tests and the integration suite under ASan+UBSan =="
(cd "$top/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -L 'unit|sanitized' --output-on-failure -j"$jobs") || status=1
echo "== libFuzzer harnesses (clang, bounded time, tests/fuzz) =="
if CC=clang cmake -S "$top" -B "$top/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTY_FUZZ=ON >/dev/null &&
  cmake --build "$top/build-fuzz" --target fuzz_all -j"$jobs" >"$top/build-fuzz/build.log" 2>&1; then
  (cd "$top/build-fuzz" && ctest -L fuzz --output-on-failure -j"$jobs") || status=1
else
  tail -n 60 "$top/build-fuzz/build.log" 2>/dev/null
  echo "test.sh: the fuzz build failed in $top/build-fuzz" >&2
  status=1
fi
echo "== all tests (the integration suite ran above, under the sanitizers) =="
(cd "$top/build" && ctest --output-on-failure -E '^integration$') || status=1
exit $status
