#!/usr/bin/env bash
# Downloads, through the Go module proxy, what the test suite's own setup steps would otherwise
# download one after another while the tests wait: the version matrix's toolchains
# (tests/matrix/build.sh), the real services' modules (tests/services/build.sh) and the
# OpenTelemetry Collector's (tests/fleet/collector.sh), into the same caches those scripts use.
# scripts/test.sh starts it in the background, at low priority, while weave compiles: the fetches
# wait on the network, the compiler on the CPU. It only fills caches; each setup step still checks
# and builds what it needs, so a failed or partial prefetch changes nothing but the time taken.
# Usage: scripts/prefetch.sh [LOG]   (progress goes to LOG, default stderr)
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] && exec >>"$1" 2>&1
go=/usr/local/go/bin/go
if ! [ -x "$go" ]; then
  echo "prefetch: no $go; nothing fetched ahead"
  exit 0
fi
cache=${WEAVE_CACHE:-$HOME/.cache/weave}
mkdir -p "$cache"
proxy=${GOPROXY:-https://proxy.golang.org}

step() {
  local what=$1 start=$SECONDS
  shift
  if "$@" >/dev/null 2>&1; then
    echo "prefetch: $what in $((SECONDS - start)) s"
  else
    echo "prefetch: $what failed (the setup step will try again and say why)"
  fi
}

# The matrix toolchains: the lists tests/matrix/matrix.cmake declares (the rows', then the Go before
# 1.21 whose spawn fixtures it builds), fetched as its build.sh does.
toolchains=$(sed -n 's/^set(WEAVE_MATRIX_\(ANCESTRY_\)\{0,1\}TOOLCHAINS\{0,1\} \([0-9. ]*\) CACHE.*/\2/p' "$src/tests/matrix/matrix.cmake")
for version in $toolchains; do
  [ -x "$cache/gomod/golang.org/toolchain@v0.0.1-go$version.linux-amd64/bin/go" ] && continue
  step "go$version" env -C "$cache" GOMODCACHE="$cache/gomod" GOCACHE="$cache/gocache" GOPATH="$cache/gopath" \
    GOTOOLCHAIN="go$version" GOFLAGS= GOPROXY="$proxy" nice -n 10 timeout 900 "$go" version
done

# Module downloads run in a copy of each go.mod/go.sum, so the checked-in files are never touched.
modules() {
  local what=$1 dir=$2
  shift 2
  local tmp
  tmp=$(mktemp -d) || return 0
  cp "$dir/go.mod" "$dir/go.sum" "$tmp/"
  step "$what modules" env -C "$tmp" GOTOOLCHAIN=local GOPROXY="$proxy" "$@" nice -n 10 timeout 900 "$go" mod download
  rm -rf "$tmp"
}
services=${WEAVE_SERVICES_CACHE:-$HOME/.cache/weave/services}
mkdir -p "$services/gomod"
modules services "$src/tests/services" GOMODCACHE="$services/gomod" GOCACHE="$services/gocache" \
  GOPATH="$services/gopath" GOFLAGS=-mod=mod
# The collector's build uses the default module cache (tests/fleet/collector.sh).
modules collector "$src/tests/fleet/otelcol" GOFLAGS=-mod=mod GOSUMDB=off
echo "prefetch: done"
