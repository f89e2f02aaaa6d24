#!/bin/bash
# bench/cgo_stacks.sh — what a mixed Go/C stack costs per event, amd64 against 386, in one run.
# Not part of the pass/fail suite. Needs root (BPF), Go, gcc -m32 (Debian's gcc-multilib) and a
# build of weave.
#
#   bench/cgo_stacks.sh
#
# Traces the cgo fixture's callback (tests/e2e/cgo: Go calls C c1 -> c2 -> c3, which calls back
# into main.Probed) with stack: 32, on its amd64 and 386 builds: the frame-pointer walk (amd64
# only: 386 keeps no frame pointers) and the window at its default 8 KiB and at 4 KiB. In a cgo
# binary a window probe copies two windows as large, the goroutine's stack and the thread's (for
# the C frames). Each row is the BPF program's time per run from the kernel's bpf_stats (--stats:
# run_time_ns / run_cnt), the median of BENCH_ROUNDS interleaved rounds, and its ratio to amd64's
# fp walk. The tracer's own unwinding (libdw over the copy) is not in it.
#
# Environment (all optional):
#   WEAVE_BUILD=DIR     a build directory with weave and weave-tracer (default: build)
#   BENCH_DIR=DIR       scratch directory (default /tmp/weave-bench-cgo-stacks)
#   BENCH_CALLS=N       callbacks per run (default 3000)
#   BENCH_ROUNDS=N      interleaved rounds (default 3)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEAVE_BUILD:-$ROOT/build}
WORK=${BENCH_DIR:-/tmp/weave-bench-cgo-stacks}
CALLS=${BENCH_CALLS:-3000}
ROUNDS=${BENCH_ROUNDS:-3}

. "$ROOT/bench/lib.sh" # say, median, ratio, run_ns
die() { say "bench: $*"; exit 1; }
column() { # the probe's --stats value in the column named $2
  awk -v name="$2" '$2 == "probe" && $3 == "kind" { for (i = 1; i <= NF; i++) if ($i == name) col = i }
       col && $2 == "main.Probed" && $3 == "entry" { v = $col } END { print v + 0 }' "$1"
}

[ "$(id -u)" = 0 ] || die "needs root: it loads BPF programs and attaches uprobes"
[ -x "$BUILD/weave" ] && [ -x "$BUILD/weave-tracer" ] || die "no weave in $BUILD (scripts/build.sh, or WEAVE_BUILD=DIR)"
GO=${GO:-$(command -v /usr/lib/go-1.19/bin/go || command -v go)} || die "needs go"

mkdir -p "$WORK"
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=1 GOCACHE=${GOCACHE:-$WORK/gocache}
(cd "$ROOT/tests/e2e/cgo" && "$GO" build -trimpath -buildvcs=false -o "$WORK/cgo" .)
# gcc -m32's headers: see add_go_fixture in tests/CMakeLists.txt.
(cd "$ROOT/tests/e2e/cgo" && GOARCH=386 CC="gcc -m32 -idirafter /usr/include/x86_64-linux-gnu" \
  "$GO" build -trimpath -buildvcs=false -o "$WORK/cgo_386" .) || die "no 386 cgo build (gcc-multilib?)"

configs="fp w8k w4k w8k386 w4k386"
binary_of() { case $1 in *386) echo "$WORK/cgo_386" ;; *) echo "$WORK/cgo" ;; esac; }
for c in $configs; do
  case $c in
  fp) mode="stack_mode: fp" ;;
  w8k | w8k386) mode="stack_mode: window" ;;
  w4k | w4k386) mode="stack_bytes: 4096" ;;
  esac
  printf 'probes:\n  - function: main.Probed\n    args: all\n    stack: 32\n    %s\n' "$mode" > "$WORK/$c.yaml"
  "$BUILD/weave" build "$WORK/$c.yaml" "$(binary_of $c)" -o "$WORK/out-$c" 2> "$WORK/weave-$c.log" ||
    die "weave build ($c): $WORK/weave-$c.log"
done

say "bench: $CALLS callbacks per run x $ROUNDS rounds, configs: $configs"
: > "$WORK/ns.txt"
for r in $(seq "$ROUNDS"); do
  for c in $configs; do
    "$WORK/out-$c/tracer" --stats -o /dev/null -- "$(binary_of $c)" -callbacks "$CALLS" > /dev/null 2> "$WORK/$c.err" || true
    echo "$c $(run_ns "$WORK/$c.err") $(column "$WORK/$c.err" lost)" >> "$WORK/ns.txt"
  done
done

echo
echo "## Mixed Go/C stacks: BPF ns/run per event (median of $ROUNDS), cgo callback main.Probed, stack: 32"
echo
printf '%-52s %8s %8s %8s\n' "mode" "ns/run" "x fp" "lost"
fp=$(awk '$1 == "fp" { print $2 }' "$WORK/ns.txt" | median)
for c in $configs; do
  m=$(awk -v c=$c '$1 == c { print $2 }' "$WORK/ns.txt" | median)
  case $c in
  fp) label="amd64, fp: frame-pointer walk (stops at C)" ;;
  w8k) label="amd64, window 8 + 8 KiB (the default)" ;;
  w4k) label="amd64, window 4 + 4 KiB" ;;
  w8k386) label="386, window 8 + 8 KiB (the default)" ;;
  w4k386) label="386, window 4 + 4 KiB" ;;
  esac
  l=$(awk -v c=$c '$1 == c { print $3 }' "$WORK/ns.txt" | median)
  printf '%-52s %8s %8s %8s\n' "$label" "$m" "$(ratio "$m" "$fp")" "$l"
done
