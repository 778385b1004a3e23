#!/usr/bin/env bash
# Installs the Debian packages in scripts/packages.txt that are missing (apt-get; root or sudo),
# then the console's npm packages (web/: uPlot, bundled into the server at build time, and
# playwright-core for the browser test) from web/package-lock.json with `npm ci`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t pkgs < <(grep -v '^#' "$here/packages.txt" | sed '/^$/d')
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# npm: part of NodeSource's nodejs, a package of its own in Debian's
if ! command -v npm >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq npm >/dev/null
fi
# web/node_modules as the lockfile pins it (again only when the lockfile changed)
web="$here/../web"
if [ -f "$web/package-lock.json" ] && \
   ! cmp -s "$web/package-lock.json" "$web/node_modules/.trainyard-lock" 2>/dev/null; then
  echo "installing: web/node_modules (npm ci)" >&2
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$web/package-lock.json" "$web/node_modules/.trainyard-lock"
fi
