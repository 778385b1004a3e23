#!/usr/bin/env bash
# Sets up and runs trainyard on its embedded defaults: installs missing Debian packages, builds,
# starts a container engine when none answers (Podman's Docker-compatible service), then runs
# trainyard-server in the foreground (it starts its own Redis). Extra arguments go to the server.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$top/build" -j"$(nproc)" >/dev/null
if [ -z "${TRAINYARD_DOCKER_HOST:-}" ] && [ -z "${DOCKER_HOST:-}" ]; then
  if [ -S /var/run/docker.sock ] && curl -sf --unix-socket /var/run/docker.sock http://d/_ping >/dev/null; then
    export TRAINYARD_DOCKER_HOST=unix:///var/run/docker.sock
  else
    export TRAINYARD_DOCKER_HOST=unix:///run/trainyard-podman.sock
    TY_DOCKER_HOST=$TRAINYARD_DOCKER_HOST "$top/tests/engine.sh"
  fi
fi
cd "$top"
exec "$top/build/bin/trainyard-server" "$@"
