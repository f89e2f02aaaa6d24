#!/bin/sh
# build.sh [VARIANT...] — builds the real services of tests/services (Caddy, etcd, nats-server) and
# the Go clients that drive etcd and NATS, from the Go module proxy, with Go 1.26, into a cache.
#
# One Go module (this directory's go.mod and go.sum pin every version) holds all five mains, so
# the module downloads and the Go build cache are shared and common packages compile once. Each
# variant is one `go build` of several mains:
#   default   caddy etcd nats-server etcd-client nats-client, with DWARF
#   stripped  caddy etcd nats-server, -ldflags='-s -w' (relinks the default's packages)
#   pie       caddy etcd nats-server, -buildmode=pie (compiles every package again, position-independent:
#             as costly as the default build; $WEAVE_SERVICES_PIE names fewer, e.g. "nats-server")
# Binaries land in $cache/bin/VARIANT/ and a stamp records what built them, so an unchanged tree
# costs nothing the next time. $cache is $WEAVE_SERVICES_CACHE, else ~/.cache/weave/services; the
# module cache and the Go build cache live there too.
#
# Exit status: 0 and the bin directory on stdout; 77 (ctest's "skipped") when Go 1.26 is missing or
# the module proxy cannot be reached; 1 for anything else.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${WEAVE_SERVICES_CACHE:-${HOME:-/root}/.cache/weave/services}
go=${WEAVE_SERVICES_GO:-/usr/local/go/bin/go}
[ $# -gt 0 ] || set -- default stripped pie
pie_mains=""
for name in ${WEAVE_SERVICES_PIE-caddy etcd nats-server}; do
  case $name in
    caddy|etcd|nats-server) pie_mains="$pie_mains ./$name" ;;
    *) echo "build.sh: WEAVE_SERVICES_PIE names '$name' (caddy, etcd, nats-server)" >&2; exit 1 ;;
  esac
done

if [ ! -x "$go" ]; then
  echo "build.sh: SKIPPED: no Go toolchain at $go (the services need Go 1.26)" >&2
  exit 77
fi
case $("$go" env GOVERSION) in
  go1.26*) ;;
  *) echo "build.sh: SKIPPED: $go is $("$go" env GOVERSION), the services are built with Go 1.26" >&2; exit 77 ;;
esac

mkdir -p "$cache/gomod" "$cache/gocache" "$cache/bin"
# Cases run in parallel (ctest -j) all call this: one builds, the others wait and find the stamps.
exec 9>"$cache/.lock"
flock 9
export GOMODCACHE="$cache/gomod" GOCACHE="$cache/gocache" GOTOOLCHAIN=local GOFLAGS=-mod=readonly \
  CGO_ENABLED=0 GOPROXY="${GOPROXY:-https://proxy.golang.org}" GOSUMDB="${GOSUMDB:-sum.golang.org}"
export GOPATH="$cache/gopath"

# What the binaries depend on besides the module cache: sources, pins, toolchain, this script.
stamp_of() {
  { "$go" version; cat "$here/build.sh" "$here/go.mod" "$here/go.sum" "$here"/*/*.go; echo "$1"; } | sha256sum | cut -d' ' -f1
}

for variant in "$@"; do
  case $variant in
    default)  flags=""; mains="./caddy ./etcd ./nats-server ./etcd-client ./nats-client" ;;
    stripped) flags="-ldflags=-s -w"; mains="./caddy ./etcd ./nats-server" ;;
    pie)      flags="-buildmode=pie"; mains=$pie_mains ;;
    *) echo "build.sh: unknown variant '$variant' (default, stripped, pie)" >&2; exit 1 ;;
  esac
  out=$cache/bin/$variant
  want=$(stamp_of "$variant $mains")
  if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ]; then
    continue
  fi
  rm -rf "$out"
  mkdir -p "$out"
  if [ -z "$mains" ]; then
    echo "$want" >"$out/.stamp"
    continue
  fi
  log=$cache/.build-$variant.$$.log
  start=$(date +%s)
  # shellcheck disable=SC2086 # mains is a list of package paths
  if ! (cd "$here" && "$go" build -trimpath -buildvcs=false ${flags:+"$flags"} -o "$out/" $mains) >"$log" 2>&1; then
    unreachable='dial tcp|no such host|connection refused|i/o timeout|network is unreachable|proxyconnect|TLS handshake|server misbehaving|GOPROXY=off'
    if grep -Eq "$unreachable" "$log"; then
      echo "build.sh: SKIPPED: cannot reach the Go module proxy ($GOPROXY) to build the services:" >&2
      grep -E "$unreachable" "$log" | head -3 >&2
      rm -f "$log"
      exit 77
    fi
    echo "build.sh: go build ($variant) failed:" >&2
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  echo "build.sh: built $variant in $(($(date +%s) - start)) s" >&2
  echo "$want" >"$out/.stamp"
done
echo "$cache/bin"
