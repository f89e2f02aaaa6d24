#!/bin/bash
# bench/fleet.sh — what the fleet exports cost the tracer: its CPU time per event (user + system, all
# threads, from /proc/PID/stat) while the Go workload calls main.Work with entry and return probes,
# plain (JSON lines to a file), with --metrics (and a scrape a second), and with --otlp to a real
# collector (tests/fleet/collector.sh, debug exporter at basic verbosity). The traced program's cost
# per call is the uprobe's and does not change with the exports: they run in the tracer.
# Not part of the pass/fail suite. Needs root (BPF), Go, and a built tree.
#
# Environment (all optional):
#   WEAVE_BUILD=DIR   a build directory with weave and weave-tracer (default: build)
#   BENCH_DIR=DIR     scratch directory (default /tmp/weave-bench-fleet)
#   BENCH_CALLS=N     calls per run (default 100000: 200,000 events)
#   BENCH_ROUNDS=N    rounds per config, interleaved; medians are reported (default 3)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEAVE_BUILD:-$ROOT/build}
WORK=${BENCH_DIR:-/tmp/weave-bench-fleet}
CALLS=${BENCH_CALLS:-100000}
ROUNDS=${BENCH_ROUNDS:-3}
GO=${GO:-go}

. "$ROOT/bench/lib.sh" # say, median, ratio, run_ns
die() { say "bench: $*"; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# CPU seconds (user + system, every thread) of a live process.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"; }

[ "$(id -u)" = 0 ] || die "needs root: it loads BPF programs and attaches uprobes"
[ -x "$BUILD/weave" ] && [ -x "$BUILD/weave-tracer" ] || die "build weave and weave-tracer in $BUILD first"
mkdir -p "$WORK"
(cd "$ROOT/bench/workload" && "$GO" build -trimpath -buildvcs=false -o "$WORK/workload" .)
cat > "$WORK/spec.yaml" <<'EOF'
probes:
  - function: main.Work
    capture: [n, s, p.Count]
    return: true
EOF
"$BUILD/weave" "$WORK/spec.yaml" "$WORK/workload" -o "$WORK/out" > /dev/null
COLLECTOR=$(bash "$ROOT/tests/fleet/collector.sh") || die "no collector (tests/fleet/collector.sh)"
OTLP_PORT=$(free_port)
cat > "$WORK/otelcol.yaml" <<EOF
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$OTLP_PORT
exporters:
  debug:
    verbosity: basic
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
EOF
"$COLLECTOR" --config "file:$WORK/otelcol.yaml" > "$WORK/otelcol.out" 2> "$WORK/otelcol.err" &
COLLECTOR_PID=$!
trap 'kill $COLLECTOR_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "Everything is ready" "$WORK/otelcol.err" && break; sleep 0.2; done

# run NAME ARGS...: the tracer on every process running the workload, the workload once, then the
# tracer's CPU once its event counts (and, with --otlp, its sent spans) stop moving.
run() {
  local name=$1; shift
  local port
  port=$(free_port)
  local extra=()
  [ "$name" = metrics ] && extra=(--metrics "127.0.0.1:$port")
  [ "$name" = otlp ] && extra=(--otlp "http://127.0.0.1:$OTLP_PORT")
  [ "$name" = both ] && extra=(--metrics "127.0.0.1:$port" --otlp "http://127.0.0.1:$OTLP_PORT")
  "$WORK/out/tracer" --format json -o "$WORK/$name.jsonl" --no-summary "${extra[@]}" 2> "$WORK/$name.err" &
  local tracer=$!
  for _ in $(seq 100); do grep -q "Ctrl-C" "$WORK/$name.err" && break; sleep 0.1; done
  local scraper=
  if [ "$name" = metrics ] || [ "$name" = both ]; then
    (while sleep 1; do curl -s "http://127.0.0.1:$port/metrics" > /dev/null || true; done) &
    scraper=$!
  fi
  local before
  before=$(cpu_of $tracer)
  "$WORK/workload" -n "$CALLS" 2> "$WORK/$name.workload" > /dev/null
  # Let the tracer drain (and send): CPU stops moving.
  local last=x now
  for _ in $(seq 60); do sleep 0.5; now=$(cpu_of $tracer); [ "$now" = "$last" ] && break; last=$now; done
  local after
  after=$(cpu_of $tracer)
  [ -n "$scraper" ] && kill "$scraper" 2>/dev/null
  kill -INT $tracer; wait $tracer || true
  local events
  events=$(wc -l < "$WORK/$name.jsonl")
  awk -v a="$after" -v b="$before" -v e="$events" 'BEGIN { printf "%.0f\n", (a - b) * 1e9 / e }' >> "$WORK/$name.ns"
  grep -h "otlp:" "$WORK/$name.err" | tail -1 >&2 || true
}

rm -f "$WORK"/*.ns
for r in $(seq "$ROUNDS"); do
  for name in plain metrics otlp both; do
    run $name
  done
done
printf '%-40s %12s\n' "tracer CPU per event (median of $ROUNDS)" "ns/event"
for name in plain metrics otlp both; do
  printf '%-40s %12s\n' "$name" "$(median < "$WORK/$name.ns")"
done
