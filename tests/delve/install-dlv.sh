#!/bin/sh
# install-dlv.sh [GOARCH] — installs Delve (default v1.27.2) with Go 1.26 from the Go module proxy
# into a cache, once: $WEAVE_DLV_CACHE, else ~/.cache/weave/dlv-VERSION, or dlv-VERSION-GOARCH for a
# GOARCH other than amd64 (its own module and build caches, so removing the directory removes all of
# it). Prints the path of dlv on stdout.
#
# Debian's delve (1.20) cannot read what Go 1.26 writes; the Delve oracle's Go 1.26 cases use this one.
# A 386 program needs a 386 Delve: an amd64 Delve stops it but reads nothing after the first stop
# (Debian's 1.20 fails every command there with "input/output error"); `install-dlv.sh 386` builds
# Delve for linux/386, which the amd64 kernel runs as it runs the 386 fixtures.
# Exit status: 0; 77 (ctest's "skipped") when Go 1.26 is missing or the module proxy cannot be
# reached, with the reason on stderr; 1 for anything else.
set -eu

version=${WEAVE_DLV_VERSION:-v1.27.2}
goarch=${1:-amd64}
case $goarch in
  amd64) suffix= ;;
  386) suffix=-386 ;;
  *) echo "install-dlv.sh: GOARCH $goarch: only amd64 and 386 run here" >&2; exit 1 ;;
esac
cache=${WEAVE_DLV_CACHE:-${HOME:-/root}/.cache/weave/dlv-${version#v}$suffix}
go=${WEAVE_DLV_GO:-/usr/local/go/bin/go}

if [ ! -x "$go" ]; then
  echo "install-dlv.sh: SKIPPED: no Go toolchain at $go (Delve $version is built with Go 1.26)" >&2
  exit 77
fi
case $("$go" env GOVERSION) in
  go1.26*) ;;
  *) echo "install-dlv.sh: SKIPPED: $go is $("$go" env GOVERSION), Delve $version is built with Go 1.26" >&2; exit 77 ;;
esac

mkdir -p "$cache"
# Test cases run in parallel (ctest -j) all call this: one installs, the others wait and find it.
exec 9>"$cache/.lock"
flock 9
dlv=$cache/bin/dlv
if [ -x "$dlv" ] && "$dlv" version 2>/dev/null | grep -q "Version: ${version#v}\$"; then
  echo "$dlv"
  exit 0
fi

log=$cache/.install.$$.log
start=$(date +%s)
# `go install` refuses GOBIN for a cross build and puts it in GOPATH/bin/linux_GOARCH instead.
if [ "$goarch" = amd64 ]; then gobin=$cache/bin; else gobin=; fi
if ! env GOBIN="$gobin" GOMODCACHE="$cache/gomod" GOCACHE="$cache/gocache" GOPATH="$cache/gopath" \
    GOARCH="$goarch" GOTOOLCHAIN=local GOFLAGS=-modcacherw CGO_ENABLED=0 \
    GOPROXY="${GOPROXY:-https://proxy.golang.org}" GOSUMDB="${GOSUMDB:-sum.golang.org}" \
    "$go" install -trimpath "github.com/go-delve/delve/cmd/dlv@$version" >"$log" 2>&1; then
  unreachable='dial tcp|no such host|connection refused|i/o timeout|network is unreachable|proxyconnect|TLS handshake|server misbehaving|GOPROXY=off|module lookup disabled'
  if grep -Eq "$unreachable" "$log"; then
    echo "install-dlv.sh: SKIPPED: cannot reach the Go module proxy ($GOPROXY) to install Delve $version:" >&2
    grep -E "$unreachable" "$log" | head -3 >&2
    rm -f "$log"
    exit 77
  fi
  echo "install-dlv.sh: go install github.com/go-delve/delve/cmd/dlv@$version failed:" >&2
  tail -20 "$log" >&2
  rm -f "$log"
  exit 1
fi
rm -f "$log"
if [ "$goarch" != amd64 ]; then
  mkdir -p "$cache/bin"
  mv -f "$cache/gopath/bin/linux_$goarch/dlv" "$dlv"
fi
# Only dlv is needed from here on: the module sources and the build cache (~100 MB) go.
rm -rf "$cache/gomod" "$cache/gocache" "$cache/gopath"
echo "install-dlv.sh: installed Delve $version for linux/$goarch in $(($(date +%s) - start)) s" >&2
echo "$dlv"
