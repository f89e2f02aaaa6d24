#!/bin/sh
# plugins/build.sh — builds the real services with test-only modules compiled in (caddytypes: Caddy
# plus a handler that prints the dynamic types it is handed), into the real-services cache, with the
# module pins, module cache and Go build cache of ../build.sh (run that first: it fetches the
# modules). Kept apart from ../build.sh so that changing a plugin rebuilds only the plugin.
#
# Exit status: 0 and the bin directory on stdout; 77 when Go 1.26 or the modules are missing.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
services=$(cd "$here/.." && pwd)
cache=${WEAVE_SERVICES_CACHE:-${HOME:-/root}/.cache/weave/services}
go=${WEAVE_SERVICES_GO:-/usr/local/go/bin/go}
[ -x "$go" ] || { echo "plugins/build.sh: SKIPPED: no Go toolchain at $go" >&2; exit 77; }
mkdir -p "$cache/gomod" "$cache/gocache" "$cache/bin"
exec 9>"$cache/.lock"
flock 9
export GOMODCACHE="$cache/gomod" GOCACHE="$cache/gocache" GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
  CGO_ENABLED=0 GOPROXY="${GOPROXY:-https://proxy.golang.org}" GOSUMDB="${GOSUMDB:-sum.golang.org}"
export GOPATH="$cache/gopath"
out=$cache/bin/plugins
want=$({ "$go" version; cat "$here/build.sh" "$services/go.mod" "$services/go.sum" "$here"/*/*.go; } | sha256sum | cut -d' ' -f1)
if [ ! -f "$out/.stamp" ] || [ "$(cat "$out/.stamp")" != "$want" ]; then
  rm -rf "$out"
  mkdir -p "$out"
  log=$cache/.build-plugins.$$.log
  if ! (cd "$services" && "$go" build -trimpath -buildvcs=false -o "$out/" ./plugins/caddytypes) >"$log" 2>&1; then
    if grep -Eq 'dial tcp|no such host|connection refused|i/o timeout|network is unreachable|GOPROXY=off' "$log"; then
      echo "plugins/build.sh: SKIPPED: cannot reach the Go module proxy:" >&2
      head -3 "$log" >&2
      rm -f "$log"
      exit 77
    fi
    echo "plugins/build.sh: go build failed:" >&2
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  echo "$want" >"$out/.stamp"
fi
echo "$out"
