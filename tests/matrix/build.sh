#!/usr/bin/env bash
# Builds the version matrix's fixtures with one Go toolchain: tests/matrix/build.sh VERSION OUTDIR
# (VERSION like 1.24.13). The toolchain comes once from the module proxy (GOTOOLCHAIN=goVERSION, the
# golang.org/toolchain module) into a cache outside the build tree, $WEAVE_CACHE or ~/.cache/weave,
# that later runs and fresh clones on this machine reuse; so do the Go build cache and the compiled
# cmd/compile. A toolchain that cannot be fetched writes OUTDIR/SKIP with the reason and exits 77
# (ctest: skipped), and the matrix tests of that toolchain then skip with the same reason.
#
# What is built (each as its own file in OUTDIR, named as the pinned 1.19 build names it):
#   fixture fixture_stripped fixture_pie fixture_386 fixture_386_stripped cgo   tests/e2e/*
#   cgo_stripped                                                               tests/e2e/cgo
#   zerosize zerosize_386 maps maps_386 maps_stripped failing failing_386       tests/e2e/*
#   spawn spawn_386 spawn_stripped spawn_386_stripped                          tests/e2e/spawn
#   spawn_arm64 spawn_arm64_stripped (traced in qemu)                           tests/e2e/spawn
#   inlined inlined_stripped inlined_386 inlined_pie                           tests/e2e/inline
#   generics generics_stripped generics_pie generics_386 generics_debug         tests/e2e/generics
#   dyntypes dyntypes_stripped dyntypes_pie                                    tests/e2e/dyntypes
#   assert assert_386 assert_pie assert_stripped assert_386_stripped            tests/e2e/assert
#   direct direct_stripped                                                     tests/e2e/direct
#   initinline                                                                 tests/e2e/initinline
#   fixture_arm64 fixture_arm64_stripped (traced in qemu)                       tests/e2e/fixture
#   newgo newgo_386 newgo_pgo                                                   tests/matrix/newgo
#   compile_amd64 compile_arm64 (only with --compile)                           cmd/compile
# (with --spawn-only, the six spawn fixtures alone),
# and OUTDIR/go, a link to the toolchain's go command, OUTDIR/objdump (cmd/objdump: the toolchain's
# own up to Go 1.24, built from Go 1.25 on), OUTDIR/GOROOT, and OUTDIR/gocache, a link to the Go build
# cache these builds fill, where the row's oracle builds too (its standard packages are then built).
set -euo pipefail
version=$1
out=$(realpath -m "$2")
shift 2
with_compile=0 spawn_only=0
[[ ${1:-} == --compile ]] && with_compile=1
[[ ${1:-} == --spawn-only ]] && spawn_only=1
src=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WEAVE_CACHE:-$HOME/.cache/weave}
export GOMODCACHE=$cache/gomod GOCACHE=$cache/gocache GOPATH=$cache/gopath
mkdir -p "$out" "$cache"
rm -f "$out/SKIP"

skip() {
  echo "SKIPPED: go$version: $*" | tee "$out/SKIP"
  exit 77
}

goroot=$GOMODCACHE/golang.org/toolchain@v0.0.1-go$version.linux-amd64
if [[ ! -x $goroot/bin/go ]]; then
  # Any go from 1.21 on can fetch another toolchain; Debian's 1.19 cannot.
  boot=""
  for candidate in "${WEAVE_BOOTSTRAP_GO:-}" /usr/local/go/bin/go "$(command -v go || true)"; do
    [[ -n $candidate && -x $candidate ]] || continue
    if GOTOOLCHAIN=local "$candidate" env GOTOOLCHAIN >/dev/null 2>&1 &&
       [[ $(GOTOOLCHAIN=local "$candidate" env GOVERSION) =~ ^go1\.(2[1-9]|[3-9][0-9]) ]]; then
      boot=$candidate
      break
    fi
  done
  [[ -n $boot ]] || skip "no go 1.21 or newer to fetch the toolchain with (install Go to /usr/local/go)"
  echo "fetching go$version into $GOMODCACHE"
  if ! log=$(cd "$cache" && GOTOOLCHAIN=go$version GOFLAGS= timeout 600 "$boot" version 2>&1); then
    skip "cannot fetch the toolchain through the module proxy: $(echo "$log" | tail -3 | tr '\n' ' ')"
  fi
  [[ -x $goroot/bin/go ]] || skip "fetched, but $goroot/bin/go is not there: $log"
fi
go=$goroot/bin/go
ln -sfn "$go" "$out/go"
echo "$goroot" >"$out/GOROOT" # test_abi_crosscheck reads the compiler's sources there
ln -sfn "$GOCACHE" "$out/gocache" # the row's oracle (matrix.cmake) builds with the same flags there
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod
got=$("$go" env GOVERSION)
[[ $got == go$version ]] || { echo "go$version: $go says $got" >&2; exit 1; }

# -trimpath and -buildvcs=false as for the pinned fixtures: paths and git state stay out.
build() { # name dir [env...] -- [flags...]
  local name=$1 dir=$2
  shift 2
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done
  shift
  (cd "$dir" && env CGO_ENABLED=0 GOARCH=amd64 "${envs[@]}" "$go" build -trimpath -buildvcs=false "$@" -o "$out/$name" .)
}
# --spawn-only: the spawn fixtures alone, for a toolchain before Go 1.21 whose row runs only
# test_calls (goroutine ancestry from the creation probe, where g has no parentGoid).
if ((spawn_only)); then
  build spawn "$src/tests/e2e/spawn" --
  build spawn_386 "$src/tests/e2e/spawn" GOARCH=386 --
  build spawn_stripped "$src/tests/e2e/spawn" -- -ldflags='-s -w'
  build spawn_386_stripped "$src/tests/e2e/spawn" GOARCH=386 -- -ldflags='-s -w'
  build spawn_arm64 "$src/tests/e2e/spawn" GOARCH=arm64 --
  build spawn_arm64_stripped "$src/tests/e2e/spawn" GOARCH=arm64 -- -ldflags='-s -w'
  echo "go$version: spawn fixtures in $out"
  exit 0
fi
# test_cgo reads the runtime's code with the toolchain's objdump: the one it ships up to Go 1.24
# (what `go tool objdump` runs), built from its sources from Go 1.25 on, which ship none. -trimpath
# as for the fixtures, so the standard packages it shares with them compile once.
rm -f "$out/objdump"
if [[ -x $goroot/pkg/tool/linux_amd64/objdump ]]; then
  ln -s "$goroot/pkg/tool/linux_amd64/objdump" "$out/objdump"
else
  (cd "$cache" && CGO_ENABLED=0 "$go" build -trimpath -o "$out/objdump" cmd/objdump)
fi
e2e=$src/tests/e2e/fixture
build fixture "$e2e" --
build fixture_stripped "$e2e" -- -ldflags='-s -w'
build fixture_pie "$e2e" -- -buildmode=pie
build fixture_pie_stripped "$e2e" -- -buildmode=pie -ldflags='-s -w'
build fixture_386 "$e2e" GOARCH=386 --
build fixture_386_stripped "$e2e" GOARCH=386 -- -ldflags='-s -w'
build fixture_arm64 "$e2e" GOARCH=arm64 --
build fixture_arm64_stripped "$e2e" GOARCH=arm64 -- -ldflags='-s -w'
build cgo "$src/tests/e2e/cgo" CGO_ENABLED=1 --
build cgo_stripped "$src/tests/e2e/cgo" CGO_ENABLED=1 -- -ldflags='-s -w'
build zerosize "$src/tests/e2e/zerosize" --
build inlined "$src/tests/e2e/inline" --
build inlined_stripped "$src/tests/e2e/inline" -- -ldflags='-s -w'
build inlined_386 "$src/tests/e2e/inline" GOARCH=386 --
build inlined_pie "$src/tests/e2e/inline" -- -buildmode=pie
build initinline "$src/tests/e2e/initinline" --
build zerosize_386 "$src/tests/e2e/zerosize" GOARCH=386 --
build maps "$src/tests/e2e/maps" --
build maps_386 "$src/tests/e2e/maps" GOARCH=386 --
build maps_stripped "$src/tests/e2e/maps" -- -ldflags='-s -w'
build spawn "$src/tests/e2e/spawn" --
build spawn_386 "$src/tests/e2e/spawn" GOARCH=386 --
build spawn_stripped "$src/tests/e2e/spawn" -- -ldflags='-s -w'
build spawn_386_stripped "$src/tests/e2e/spawn" GOARCH=386 -- -ldflags='-s -w'
build spawn_arm64 "$src/tests/e2e/spawn" GOARCH=arm64 --
build spawn_arm64_stripped "$src/tests/e2e/spawn" GOARCH=arm64 -- -ldflags='-s -w'
build failing "$src/tests/e2e/failing" --
build failing_386 "$src/tests/e2e/failing" GOARCH=386 --
generics=$src/tests/e2e/generics
build generics "$generics" --
build generics_stripped "$generics" -- -ldflags='-s -w'
build generics_pie "$generics" -- -buildmode=pie
build generics_386 "$generics" GOARCH=386 --
# -N -l for the main package, whose generic functions test_generics probes (the pinned build's
# all=-N -l recompiles the standard library for nothing they run: the main.* code and DWARF are the
# same, checked with go1.21.13 to go1.26.11).
build generics_debug "$generics" -- -gcflags='-N -l'
dyntypes=$src/tests/e2e/dyntypes
build dyntypes "$dyntypes" --
build dyntypes_stripped "$dyntypes" -- -ldflags='-s -w'
build dyntypes_pie "$dyntypes" -- -buildmode=pie
build assert "$src/tests/e2e/assert" --
build assert_386 "$src/tests/e2e/assert" GOARCH=386 --
build assert_pie "$src/tests/e2e/assert" -- -buildmode=pie
build assert_stripped "$src/tests/e2e/assert" -- -ldflags='-s -w'
build assert_386_stripped "$src/tests/e2e/assert" GOARCH=386 -- -ldflags='-s -w'
build direct "$src/tests/e2e/direct" --
build direct_stripped "$src/tests/e2e/direct" -- -ldflags='-s -w'
newgo=$src/tests/matrix/newgo
build newgo "$newgo" --
build newgo_386 "$newgo" GOARCH=386 --
# PGO: a CPU profile the program makes of itself (-cpuprofile), then a build that uses it. The
# profile is cut once per toolchain and kept, so the PGO build is the same on every warm run.
if [[ ! -s $out/newgo.pprof ]]; then
  "$out/newgo" -truth /dev/null -hot 1500 -cpuprofile "$out/newgo.pprof.tmp" >/dev/null 2>&1
  mv "$out/newgo.pprof.tmp" "$out/newgo.pprof"
fi
build newgo_pgo "$newgo" -- -pgo="$out/newgo.pprof"
if ((with_compile)); then
  # The compilers live in the cache, not the build tree: about a minute each cold on 2 cores, then
  # a no-op (go build leaves an up-to-date binary alone).
  mkdir -p "$cache/compile/go$version"
  for arch in amd64 arm64; do
    (cd "$cache" && CGO_ENABLED=0 GOARCH=$arch "$go" build -trimpath \
      -o "$cache/compile/go$version/compile_$arch" cmd/compile)
    ln -sfn "$cache/compile/go$version/compile_$arch" "$out/compile_$arch"
  done
fi
echo "go$version: fixtures in $out"
