#!/bin/bash
# bench/stacks.sh — what a stack costs per event, by capture mode, in one run with ratios.
# Not part of the pass/fail suite. Needs root (BPF), Go and cmake/ninja.
#
#   bench/stacks.sh
#
# Traces bench/workload's main.Work (called from a loop in main.main: a shallow goroutine stack)
# with stack: 16 captured four ways: the frame-pointer walk in BPF (stack_mode: fp, amd64's
# default) and a window of 4, 16 and 64 KiB of the stack copied for the tracer to unwind
# (stack_mode: window), plus the 386 build of the workload with its default window. Each row is the
# BPF program's time per run from the kernel's bpf_stats (--stats: run_time_ns / run_cnt), the
# median of BENCH_ROUNDS interleaved rounds, and its ratio to the fp walk. The tracer's own time to
# unwind and print is not in it: --stats times the BPF program only.
#
# The workload pauses BENCH_PAUSE after each call, so that the tracer keeps up even with 64 KiB
# records: a full ring buffer makes runs cheaper (they skip the copy) and the numbers would lie.
# "lost" is the median count of events the ring buffer had no room for: 0 when the rows are
# comparable.
#
# Environment (all optional):
#   WEAVE_BUILD=DIR     a build directory with weave and weave-tracer (default: build)
#   BENCH_DIR=DIR       scratch directory (default /tmp/weave-bench-stacks)
#   BENCH_CALLS=N       calls per run (default 20000)
#   BENCH_ROUNDS=N      interleaved rounds (default 3)
#   BENCH_PAUSE=D       pause after each call, a Go duration (default 20us)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEAVE_BUILD:-$ROOT/build}
WORK=${BENCH_DIR:-/tmp/weave-bench-stacks}
CALLS=${BENCH_CALLS:-20000}
ROUNDS=${BENCH_ROUNDS:-3}
PAUSE=${BENCH_PAUSE:-20us}

. "$ROOT/bench/lib.sh" # say, median, ratio, run_ns
die() { say "bench: $*"; exit 1; }
column() { # the probe's --stats value in the column named $2
  awk -v name="$2" '$2 == "probe" && $3 == "kind" { for (i = 1; i <= NF; i++) if ($i == name) col = i }
       col && $2 == "main.Work" && $3 == "entry" { v = $col } END { print v + 0 }' "$1"
}

[ "$(id -u)" = 0 ] || die "needs root: it loads BPF programs and attaches uprobes"
command -v go > /dev/null || die "needs go"
[ -x "$BUILD/weave" ] && [ -x "$BUILD/weave-tracer" ] || die "no weave in $BUILD (scripts/build.sh, or WEAVE_BUILD=DIR)"

mkdir -p "$WORK"
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 GOCACHE=${GOCACHE:-$WORK/gocache}
(cd "$ROOT/bench/workload" && go build -trimpath -buildvcs=false -o "$WORK/workload" .)
(cd "$ROOT/bench/workload" && GOARCH=386 go build -trimpath -buildvcs=false -o "$WORK/workload_386" .)

configs="fp w4k w16k w64k w386"
for c in $configs; do
  binary=$WORK/workload
  mode="stack_mode: fp"
  case $c in
  w4k) mode="stack_bytes: 4096" ;;
  w16k) mode="stack_bytes: 16384" ;;
  w64k) mode="stack_bytes: 65536" ;;
  w386) mode="" binary=$WORK/workload_386 ;;
  esac
  printf 'probes:\n  - function: main.Work\n    stack: 16\n    %s\n' "$mode" > "$WORK/$c.yaml"
  "$BUILD/weave" build "$WORK/$c.yaml" "$binary" -o "$WORK/out-$c" 2> "$WORK/weave-$c.log" ||
    die "weave build ($c): $WORK/weave-$c.log"
done

say "bench: $CALLS calls per run x $ROUNDS rounds, configs: $configs"
: > "$WORK/ns.txt"
for r in $(seq "$ROUNDS"); do
  for c in $configs; do
    binary=$WORK/workload
    [ $c = w386 ] && binary=$WORK/workload_386
    "$WORK/out-$c/tracer" --stats -o /dev/null -- "$binary" -n "$CALLS" -pause "$PAUSE" > /dev/null 2> "$WORK/$c.err" || true
    echo "$c $(run_ns "$WORK/$c.err") $(column "$WORK/$c.err" lost)" >> "$WORK/ns.txt"
  done
done

echo
echo "## Stack capture: BPF ns/run per event (median of $ROUNDS), main.Work, stack: 16"
echo
printf '%-52s %8s %8s %8s\n' "mode" "ns/run" "x fp" "lost"
fp=$(awk '$1 == "fp" { print $2 }' "$WORK/ns.txt" | median)
for c in $configs; do
  m=$(awk -v c=$c '$1 == c { print $2 }' "$WORK/ns.txt" | median)
  case $c in
  fp) label="fp: frame-pointer walk in BPF (amd64 default)" ;;
  w4k) label="window 4 KiB copied, unwound by the tracer" ;;
  w16k) label="window 16 KiB" ;;
  w64k) label="window 64 KiB" ;;
  w386) label="386, window 8 KiB (its default)" ;;
  esac
  l=$(awk -v c=$c '$1 == c { print $3 }' "$WORK/ns.txt" | median)
  printf '%-52s %8s %8s %8s\n' "$label" "$m" "$(ratio "$m" "$fp")" "$l"
done
