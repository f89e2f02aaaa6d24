#!/bin/bash
# bench/regions.sh — BPF time per run of Caddy's 11-value ServeHTTP entry capture, weave before vs.
# after a change to how it reads (one read per region, generator/codegen: plan_regions; strings that
# lie together read at once, plan/captures.cpp: place_strings), side by side in one run: both
# tracers attach to the same Caddy at once, so every request runs both programs under the same
# load, and each one's time comes from the kernel's BPF statistics (bpf_enable_stats(
# BPF_STATS_RUN_TIME), run_time_ns / run_cnt of bpf_prog_info, printed by --stats). Rounds alternate
# which tracer attaches first. Prints both medians, their ratio, and each record's size.
# Not part of the pass/fail suite. Needs root, curl, and Caddy from tests/services/build.sh.
#
# Environment (all optional):
#   WEAVE_BUILD=DIR      build directory with weave and weave-tracer (default: ./build)
#   WEAVE_BEFORE=FILE    the weave to compare with (its weave-tracer next to it), e.g. main's build;
#                        default: revision $BENCH_BEFORE_REV built here
#   BENCH_BEFORE_REV=REV default 8eec658 (the last revision with one helper call per load)
#   BENCH_REQUESTS=N     requests per round (default 20000)
#   BENCH_ROUNDS=N       rounds (default 3)
#   BENCH_DIR=DIR        scratch directory (default /tmp/weave-bench-regions)
#   CADDY=FILE           the Caddy binary (default ~/.cache/weave/services/bin/default/caddy)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEAVE_BUILD:-$ROOT/build}
WORK=${BENCH_DIR:-/tmp/weave-bench-regions}
REV=${BENCH_BEFORE_REV:-8eec658}
REQUESTS=${BENCH_REQUESTS:-20000}
ROUNDS=${BENCH_ROUNDS:-3}
CADDY=${CADDY:-${HOME:-/root}/.cache/weave/services/bin/default/caddy}

. "$ROOT/bench/lib.sh" # say, median, ratio, run_ns
die() { say "bench: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root: it loads BPF programs and attaches uprobes"
command -v curl > /dev/null || die "needs curl"
[ -x "$CADDY" ] || die "no Caddy at $CADDY: run tests/services/build.sh default"
[ -x "$BUILD/weave" ] || die "no weave in $BUILD"
mkdir -p "$WORK"

BEFORE=${WEAVE_BEFORE:-}
if [ -z "$BEFORE" ]; then
  src=$WORK/before-src
  if [ ! -x "$WORK/before-build/weave" ]; then
    say "bench: building weave at $REV in $WORK/before-build"
    rm -rf "$src" && mkdir -p "$src"
    git -C "$ROOT" archive "$REV" | tar -x -C "$src"
    cmake -S "$src" -B "$WORK/before-build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$WORK/before-cmake.log"
    cmake --build "$WORK/before-build" --target weave > "$WORK/before-ninja.log"
  fi
  BEFORE=$WORK/before-build/weave
fi

cat > "$WORK/spec.yaml" << 'EOF2'
# Caddy's request entry, 11 values (issue: "Performance on real services").
probes:
  - function: github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP
    capture: [r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Host, r.ContentLength, r.Proto,
              r.RemoteAddr, r.RequestURI, r.ProtoMajor, r.ProtoMinor]
options:
  string_max: 300
EOF2
cp "$CADDY" "$WORK/caddy"
"$BEFORE" "$WORK/spec.yaml" "$WORK/caddy" -o "$WORK/out-before" > /dev/null 2> "$WORK/build-before.log" || die "weave (before) failed: $WORK/build-before.log"
"$BUILD/weave" "$WORK/spec.yaml" "$WORK/caddy" -o "$WORK/out-after" > /dev/null 2> "$WORK/build-after.log" || die "weave (after) failed: $WORK/build-after.log"
size() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["probes"][0]["event_size"])' "$1"; }

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$WORK/Caddyfile" << EOF2
{
	admin off
	persist_config off
	auto_https off
}
http://127.0.0.1:$port {
	respond "ok" 200
}
EOF2
export XDG_DATA_HOME=$WORK/data XDG_CONFIG_HOME=$WORK/config
"$WORK/caddy" run --config "$WORK/Caddyfile" --adapter caddyfile > "$WORK/caddy.log" 2>&1 &
caddy_pid=$!
trap 'kill $caddy_pid 2> /dev/null || true' EXIT
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" && break
  sleep 0.1
done

ns_per_run() { awk '/ BPF programs? for / { for (i = 1; i <= NF; i++) if ($i == "ns/run") print $(i-1) }' "$1" | tail -1; }
: > "$WORK/runs.txt"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  pids=()
  for which in $order; do
    "$WORK/out-$which/tracer" --stats -o /dev/null --pid "$caddy_pid" > /dev/null 2> "$WORK/$which-$r.err" &
    pids+=($!)
    for _ in $(seq 300); do # until it has attached
      grep -q 'tracing' "$WORK/$which-$r.err" 2> /dev/null && break
      sleep 0.1
    done
  done
  # One connection, REQUESTS requests (curl's URL range); paths and queries of ordinary length.
  curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/items/[1-$REQUESTS]?page=2&sort=name" || true
  for pid in "${pids[@]}"; do kill -INT "$pid"; done
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  # The program attached last runs first after the trap (as measured: its figures move with the
  # order) and finds the target's memory and its own maps colder: with one tracer a
  # program always runs first, so that column is the one that applies; "second" is the same
  # program after the other one warmed the caches.
  last=${order##* }
  for which in before after; do
    if [ "$which" = "$last" ]; then pos=first; else pos=second; fi
    echo "$which $(ns_per_run "$WORK/$which-$r.err") $pos" >> "$WORK/runs.txt"
  done
done
pick() { awk -v w="$1" -v p="$2" '$1 == w && (p == "" || $3 == p) { print $2 }' "$WORK/runs.txt" | median; }
b=$(pick before "") a=$(pick after "")
bf=$(pick before first) af=$(pick after first) bs=$(pick before second) as=$(pick after second)
{
  echo "## Caddy ServeHTTP entry, 11 values, string_max 300: BPF ns/run (medians of $ROUNDS rounds of $REQUESTS requests, both attached at once)"
  printf '%-8s %8s %10s %10s %12s\n' "" "ns/run" "first" "second" "record (B)"
  printf '%-8s %8s %10s %10s %12s\n' before "$b" "$bf" "$bs" "$(size "$WORK/out-before/probes.json")"
  printf '%-8s %8s %10s %10s %12s\n' after "$a" "$af" "$as" "$(size "$WORK/out-after/probes.json")"
  awk -v a="$a" -v b="$b" -v af="$af" -v bf="$bf" -v as="$as" -v bs="$bs" 'BEGIN {
    if (a > 0 && af > 0 && as > 0) printf "ratio before/after: %.2f (running first: %.2f, second: %.2f)\n", b / a, bf / af, bs / as }'
} | tee "$WORK/report.txt"
