#!/usr/bin/env bash
# create_to_running.sh - time from CreateTrainingJob to the container's first instruction,
# next to a bare `podman run` of the same image and command; N runs each (default 5),
# medians and their ratio. The container reads the kernel's uptime clock (shared with the
# host) with shell builtins as its first action, so neither figure depends on log timestamps.
# Then N warm starts: jobs with ResourceConfig.KeepAlivePeriodInSeconds, each reusing the warm
# pool the previous one retained (docs/warm-pools.md), beside the cold median.
# Last, the median time the agent took to make a host's volume (VolumeSizeInGB), from its log,
# and how many cold starts found the agent's spare sandbox ready (docs/job-sandbox.md).
#   bench/create_to_running.sh [N]       (needs the container engine: tests/engine.sh)
source "$(dirname "$0")/lib.sh"
N=${1:-5}
engine_up || die "no container engine at $DOCKER_HOST_URL (run tests/engine.sh)"
command -v podman >/dev/null || die "podman missing"

ty_start 1 --stop-grace 2
# the server imports the runtime image when missing; wait until it is there for podman too
for _ in $(seq 1 300); do
    podman --storage-driver vfs image exists trainyard/runtime:0.1.0 && break
    sleep 0.2
done
podman --storage-driver vfs image exists trainyard/runtime:0.1.0 || die "runtime image not imported"

# warm-up (first container start pays for one-time setup on both paths)
$BENCHLIB ttr "$TY_URL" "$TY_CRED" "bench-warm-$$" >/dev/null
podman --runtime "$(command -v runc)" --storage-driver vfs run --rm \
    trainyard/runtime:0.1.0 sh -c 'true' >/dev/null

ty=()
for i in $(seq 1 "$N"); do
    t=$($BENCHLIB ttr "$TY_URL" "$TY_CRED" "bench-ttr-$$-$i")
    echo "trainyard run $i: $t s"
    ty+=("$t")
done
pm=()
for i in $(seq 1 "$N"); do
    t0=$($BENCHLIB uptime)
    up=$(podman --runtime "$(command -v runc)" --storage-driver vfs run --rm \
        trainyard/runtime:0.1.0 sh -c 'read up _ < /proc/uptime; echo "RUNNING_AT $up"' |
        awk '/^RUNNING_AT/ {print $2}')
    t=$(awk -v a="$up" -v b="$t0" 'BEGIN {printf "%.3f", a - b}')
    echo "podman run $i: $t s"
    pm+=("$t")
done
# warm: each job keeps its instance (KeepAlivePeriodInSeconds) and the next one reuses it; the
# first (priming) run is cold and discarded; benchlib refuses a run that did not reuse. Each warm
# run follows a cold run of a job that cannot match the pool (another volume size), so that both
# see the same load on this shared machine.
$BENCHLIB ttr "$TY_URL" "$TY_CRED" "bench-prime-$$" 120 >/dev/null
prev="bench-prime-$$"
wc=()
wm=()
for i in $(seq 1 "$N"); do
    c=$($BENCHLIB ttr "$TY_URL" "$TY_CRED" "bench-wc-$$-$i")
    t=$($BENCHLIB ttr "$TY_URL" "$TY_CRED" "bench-wp-$$-$i" 120 "$prev")
    echo "trainyard cold/warm pair $i: $c s / $t s"
    wc+=("$c")
    wm+=("$t")
    prev="bench-wp-$$-$i"
done
ty_med=$(printf '%s\n' "${ty[@]}" | median)
pm_med=$(printf '%s\n' "${pm[@]}" | median)
wm_med=$(printf '%s\n' "${wm[@]}" | median)
wc_med=$(printf '%s\n' "${wc[@]}" | median)
awk -v a="$ty_med" -v b="$pm_med" -v n="$N" 'BEGIN {
    printf "\nRESULT create_to_running (N=%d): trainyard median %.3f s | podman run median %.3f s | ratio %.2fx\n", n, a, b, a / b }'
awk -v a="$wm_med" -v b="$wc_med" -v p="$pm_med" -v n="$N" 'BEGIN {
    printf "RESULT create_to_running warm pool (N=%d): warm median %.3f s | cold median %.3f s | ratio %.2fx | warm / podman run %.2fx\n", n, a, b, a / b, a / p }'
# each host's volume (VolumeSizeInGB: image, mkfs.ext4, loop, mount), from the agent's log
vols=$(sed -n 's/.*event=agent.volume.created .* ms=\([0-9]*\).*/\1/p' "$TY_DATA.log")
if [ -n "$vols" ]; then
    printf '%s\n' $vols | median | awk -v n="$(printf '%s\n' $vols | wc -l)" '{
        printf "RESULT job volume (n=%d): median %d ms to create, format and mount one host'"'"'s volume\n", n, $1 }'
else
    echo "RESULT job volume: none made (the agent runs with --job-volumes none, or cannot make them)"
fi
spares=$(grep -c 'event=agent.sandbox.spare job=bench-ttr-' "$TY_DATA.log" || true)
echo "RESULT spare sandbox: $spares of $N cold starts took the agent's spare (the others made their own)"
echo "(uptime clock resolution 10 ms; machine: $(nproc) CPUs)"
