#!/usr/bin/env bash
# engine.sh - makes sure a Docker-compatible container engine answers at $TY_DOCKER_HOST.
#
# Idempotent: when an engine already answers (Docker, or a Podman service started earlier) it
# does nothing. Otherwise it configures and starts Podman's Docker API service the way the
# suite needs it (runc, vfs storage, no default ulimits) on the unix socket named by TY_DOCKER_HOST,
# detached, logging to $TY_ENGINE_LOG, and waits up to $TY_ENGINE_TIMEOUT seconds (30) for
# `GET /_ping` to answer OK. Installs nothing: podman and runc must be present
# (apt-get install -y podman runc). Needs root for the socket under /run.
#
# Exit: 0 when the engine answers, 1 otherwise (with one line on stderr saying why).
set -euo pipefail

host="${TY_DOCKER_HOST:-unix:///run/trainyard-podman.sock}"
log="${TY_ENGINE_LOG:-/tmp/trainyard-podman.log}"
timeout="${TY_ENGINE_TIMEOUT:-30}"
conf_dir=/etc/containers/containers.conf.d
conf="$conf_dir/trainyard.conf"

die() {
    echo "engine.sh: $*" >&2
    exit 1
}

ping_engine() {
    local out
    case "$host" in
    unix://*)
        [ -S "${host#unix://}" ] || return 1
        out=$(curl -fsS --max-time 3 --unix-socket "${host#unix://}" http://d/_ping 2>/dev/null) || return 1
        ;;
    tcp://*)
        out=$(curl -fsS --max-time 3 "http://${host#tcp://}/_ping" 2>/dev/null) || return 1
        ;;
    *) return 1 ;;
    esac
    [ "$out" = "OK" ]
}

command -v curl >/dev/null || die "curl not found (apt-get install -y curl)"

if ping_engine; then
    echo "engine.sh: engine answers at $host"
    exit 0
fi

case "$host" in
unix://*) sock="${host#unix://}" ;;
*) die "no engine answers at '$host' and only a unix:// socket can be started here" ;;
esac

command -v podman >/dev/null || die "podman not found (apt-get install -y podman runc)"
runtime=$(command -v runc || true)
[ -n "$runtime" ] || die "runc not found (apt-get install -y runc); crun refuses hybrid cgroups"

# Rlimits may not be raised in this kind of sandbox: ask Podman not to set any by default.
want=$(printf '[containers]\ndefault_ulimits=[]\n')
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want" ]; then
    mkdir -p "$conf_dir"
    printf '%s\n' "$want" >"$conf"
fi

# A stale socket from a service that died would make podman fail to listen.
if [ -S "$sock" ]; then
    rm -f "$sock"
fi
mkdir -p "$(dirname "$sock")"

echo "engine.sh: starting podman system service on $sock (log $log)"
# The service outlives this script: it must not keep the caller's other descriptors (a lock
# held by `flock`, a pipe a test reads to its end), so they are closed in the child first; nor
# its working directory (conmon fails every container start once that folder is deleted).
(
    cd /
    for fd in /proc/$BASHPID/fd/*; do
        fd=${fd##*/}
        [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null
    done
    exec setsid nohup podman --runtime "$runtime" --storage-driver vfs system service --time=0 \
        "unix://$sock" >>"$log" 2>&1 </dev/null
) &
pid=$!

deadline=$((SECONDS + timeout))
while [ $SECONDS -lt $deadline ]; do
    if ping_engine; then
        echo "engine.sh: engine answers at $host (podman pid $pid)"
        exit 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
        tail -n 5 "$log" >&2 || true
        die "podman system service exited; see '$log'"
    fi
    sleep 0.5
done
tail -n 5 "$log" >&2 || true
die "no answer from '$host' after ${timeout}s; see '$log'"
