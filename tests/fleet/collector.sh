#!/usr/bin/env bash
# Builds the OpenTelemetry Collector the fleet tests send spans to (tests/fleet/otelcol: its core,
# the OTLP receiver and the debug exporter, at the versions go.mod pins) through the Go module proxy,
# once, into ~/.cache/weave/otelcol-KEY (KEY: a hash of its sources, so a version change rebuilds),
# and prints the binary's path. Exit 77 (ctest's skip) with the reason when it cannot be had: no Go
# new enough, or the module proxy unreachable.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
go=${WEAVE_COLLECTOR_GO:-/usr/local/go/bin/go}
if ! [ -x "$go" ]; then
  go=$(command -v go || true)
fi
if [ -z "$go" ] || ! [ -x "$go" ]; then
  echo "no Go toolchain to build the OpenTelemetry Collector with (looked for /usr/local/go/bin/go and go in PATH)" >&2
  exit 77
fi
need=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$here/otelcol/go.mod")
have=$("$go" env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
  echo "the OpenTelemetry Collector needs Go $need or newer; $go is $have" >&2
  exit 77
fi
key=$(cat "$here/otelcol/go.mod" "$here/otelcol/go.sum" "$here/otelcol/main.go" | sha256sum | cut -c1-16)
cache=${WEAVE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weave}/otelcol-$key
binary=$cache/otelcol-weave
mkdir -p "$cache"
# Tests running in parallel wait for one build instead of racing it.
exec 9>"$cache/lock"
flock 9
if [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp "$here/otelcol/go.mod" "$here/otelcol/go.sum" "$here/otelcol/main.go" "$src/"
# GOSUMDB=off: go.sum, committed, pins every module's hash; the checksum database is not always
# reachable through the proxy here. GOFLAGS=-mod=mod lets go add the hashes of test-only modules.
if ! (cd "$src" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOSUMDB=off \
      nice "$go" build -trimpath -o "$binary.tmp" .) >"$cache/build.log" 2>&1; then
  if grep -qE 'dial tcp|no such host|connection refused|i/o timeout|403 Forbidden|404 Not Found|proxyconnect|TLS handshake' "$cache/build.log"; then
    echo "the Go module proxy could not be reached to build the OpenTelemetry Collector:" >&2
    grep -m3 -E 'dial tcp|no such host|connection refused|i/o timeout|403|404|proxyconnect|TLS' "$cache/build.log" >&2
    exit 77
  fi
  cat "$cache/build.log" >&2
  exit 1
fi
mv "$binary.tmp" "$binary"
echo "$binary"
