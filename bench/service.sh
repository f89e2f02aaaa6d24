#!/bin/bash
# bench/service.sh — a real service under load, traced and untraced, measured in one run.
# Not part of the pass/fail suite. Needs root (BPF), curl, python3; Caddy from the real-services
# cache (tests/services/build.sh builds it once from the Go module proxy); hey from the Go module
# proxy (installed here into ~/.cache/weave/hey); bpftrace (Debian package) for its row.
#
#   bench/service.sh        4 modes x 3 interleaved rounds of 20,000 requests, ~3 minutes when idle
#
# Caddy serves one static file (file_server) on a loopback port it was free to take; hey sends
# SERVICE_REQUESTS requests from SERVICE_CONCURRENCY connections. Modes, interleaved per round:
#   untraced  Caddy alone
#   weave-1   one weave probe: caddyhttp.(*Server).ServeHTTP's entry, 11 values of the request
#   weave-7   seven weave probes along the handler chain, each with its return (interfaces, errors)
#   bpftrace  one uprobe on the same function, printing one register per hit to a file
#   floor-sym   the micro floor: an empty BPF program (bench/floor.bpf.c) at the function's symbol,
#               where bpftrace attaches (its first instruction, the stack check, is single-stepped)
#   floor-weave the same empty program at weave's attach point (after the stack check: emulated)
# The floors run through the weave runtime (tracer --object/--manifest --stats); their BPF ns/run
# is printed beside weave-1's, whose tracer runs with --stats too.
# Per mode: requests/s and p99 (medians over rounds, hey's own figures), the tracer's CPU (user +
# sys from /proc, attach to exit) and peak RSS, and events == requests with 0 lost (weave's summary;
# bpftrace's output lines, a few more than requests: its uprobe at the symbol fires again when a
# call grows its stack and restarts the function). Ratios against untraced are printed last: those go in the README,
# absolute times depend on the host.
#
# Environment (all optional):
#   WEAVE_BUILD=DIR          build directory with weave and weave-tracer (default: build)
#   BENCH_DIR=DIR            scratch directory (default /tmp/weave-service-bench)
#   SERVICE_REQUESTS=N       requests per run (default 20000)
#   SERVICE_CONCURRENCY=N    hey's concurrency (default 20)
#   SERVICE_ROUNDS=N         interleaved rounds (default 3)
#   SERVICE_MODES="..."      modes to run (default: untraced weave-1 weave-7 bpftrace floor-sym floor-weave)
#   SERVICE_RING_SIZE=SIZE   the weave tracers' --ring-size (default: the manifest's, else the tracer's)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEAVE_BUILD:-$ROOT/build}
WORK=${BENCH_DIR:-/tmp/weave-service-bench}
REQUESTS=${SERVICE_REQUESTS:-20000}
CONCURRENCY=${SERVICE_CONCURRENCY:-20}
ROUNDS=${SERVICE_ROUNDS:-3}
MODES=${SERVICE_MODES:-untraced weave-1 weave-7 bpftrace floor-sym floor-weave}
RING=()
[ -n "${SERVICE_RING_SIZE:-}" ] && RING=(--ring-size "$SERVICE_RING_SIZE")

. "$ROOT/bench/lib.sh" # say, median, ratio, run_ns
die() { say "service-bench: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root: it loads BPF programs and attaches uprobes"
for tool in curl python3; do command -v $tool > /dev/null || die "needs $tool"; done
[ -x "$BUILD/weave" ] && [ -x "$BUILD/weave-tracer" ] || die "no weave build in $BUILD (scripts/build.sh, or WEAVE_BUILD=DIR)"

# Caddy, built once into the real-services cache.
BIN=$(sh "$ROOT/tests/services/build.sh" | head -1) || die "cannot build the real services (tests/services/build.sh)"
rm -rf "$WORK" && mkdir -p "$WORK/site"
cp "$BIN/default/caddy" "$WORK/caddy" # its own inode: the probes follow this file only
CADDY=$WORK/caddy

# hey, from the Go module proxy.
HEY=${HEY:-$HOME/.cache/weave/hey/bin/hey}
if [ ! -x "$HEY" ]; then
  GO=$(command -v go || echo /usr/local/go/bin/go)
  say "service-bench: installing hey into $(dirname "$HEY")"
  GOBIN=$(dirname "$HEY") GOFLAGS=-mod=mod "$GO" install github.com/rakyll/hey@latest >&2 ||
    die "cannot install hey (go install github.com/rakyll/hey@latest): is the module proxy reachable?"
fi
HAVE_BPFTRACE=1
command -v bpftrace > /dev/null || { HAVE_BPFTRACE=0; say "service-bench: no bpftrace; its row is left out (apt-get install bpftrace)"; }

F=github.com/caddyserver/caddy/v2/modules/caddyhttp
cat > "$WORK/one.yaml" << EOF
probes:
  - function: $F.(*Server).ServeHTTP
    capture: [r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Host, r.ContentLength, r.Proto,
              r.ProtoMajor, r.ProtoMinor, r.RemoteAddr, r.RequestURI]
EOF
cat > "$WORK/seven.yaml" << EOF
probes:
  - function: $F.(*Server).ServeHTTP
    capture: [w, r.Method, r.URL.Path, r.Host, r.Proto, r.ContentLength, r.Body]
    return: true
  - function: $F.(*Subroute).ServeHTTP
    capture: [w, r.URL.Path, next]
    return: true
  - function: $F.(*VarsMiddleware).ServeHTTP
    capture: [w, next]
    return: true
  - function: $F.(*HandlerFunc).ServeHTTP
    capture: [w, r.URL.Path]
    return: true
  - function: $F.(*Server).enforcementHandler
    capture: [w, r.URL.Path]
    return: true
  - function: github.com/caddyserver/caddy/v2/modules/caddyhttp/fileserver.(*FileServer).ServeHTTP
    capture: [w, r.URL.Path, next]
    return: true
  - function: github.com/caddyserver/caddy/v2/modules/caddyhttp/fileserver.(*FileServer).openFile
    capture: [fileSystem, filename, w]
    return: true
EOF
for spec in one seven; do
  "$BUILD/weave" build "$WORK/$spec.yaml" "$CADDY" -o "$WORK/$spec" > /dev/null 2> "$WORK/$spec.build" ||
    { cat "$WORK/$spec.build" >&2; die "weave build of $spec.yaml failed"; }
done
echo "weave bench $(date -u +%FT%TZ)" > "$WORK/site/index.html"

# The floors: bench/floor.bpf.c (returns at once) with weave-1's manifest, its one attach point at
# weave's place or moved to the function's first instruction.
clang -O2 -g -target bpf -I"$ROOT/templates" -c "$ROOT/bench/floor.bpf.c" -o "$WORK/floor.bpf.o"
python3 - "$WORK/one/probes.json" "$WORK" << 'EOF2'
import json, sys
m = json.load(open(sys.argv[1]))
p = m["probes"][0]
p["program"] = "floor_entry"
p["captures"] = []
json.dump(m, open(sys.argv[2] + "/floor-weave.json", "w"))
point = p["attach"][0]
entry = int(p["function_entry"], 16)
delta = int(point["vaddr"], 16) - int(point["file_offset"], 16)
point["vaddr"], point["file_offset"] = hex(entry), hex(entry - delta)
json.dump(m, open(sys.argv[2] + "/floor-sym.json", "w"))
EOF2

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu_seconds() { awk '{ printf "%.3f", ($14 + $15) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
peak_rss_kb() { awk '/VmHWM/ { print $2 }' "/proc/$1/status"; }

# run MODE ROUND: one measured run; appends "mode rps p99_ms cpu_s rss_kb events lost" to results.
run() {
  local mode=$1 round=$2 dir=$WORK/run-$1-$2 port caddy_pid tracer_pid="" ready=0
  mkdir -p "$dir"
  port=$(free_port)
  printf '{\n\tadmin off\n\tpersist_config off\n\tauto_https off\n}\nhttp://127.0.0.1:%s {\n\troot * %s\n\tfile_server\n}\n' \
    "$port" "$WORK/site" > "$dir/Caddyfile"
  XDG_DATA_HOME=$dir/data XDG_CONFIG_HOME=$dir/config "$CADDY" run --config "$dir/Caddyfile" --adapter caddyfile \
    > "$dir/caddy.log" 2>&1 &
  caddy_pid=$!
  for _ in $(seq 1 600); do
    curl -s -o /dev/null "http://127.0.0.1:$port/index.html" && { ready=1; break; }
    sleep 0.1
  done
  [ $ready = 1 ] || { kill $caddy_pid; die "caddy did not start (see $dir/caddy.log)"; }
  case $mode in
    weave-1 | weave-7)
      local out=$WORK/one
      [ $mode = weave-7 ] && out=$WORK/seven
      local stats=()
      [ $mode = weave-1 ] && stats=(--stats)
      "$out/tracer" --pid $caddy_pid "${stats[@]}" "${RING[@]}" --format json -o "$dir/events.jsonl" 2> "$dir/tracer.err" &
      tracer_pid=$!
      for _ in $(seq 1 3000); do grep -q "Ctrl-C to stop" "$dir/tracer.err" && break; sleep 0.1; done
      ;;
    floor-sym | floor-weave)
      "$WORK/one/tracer" --object "$WORK/floor.bpf.o" --manifest "$WORK/$mode.json" --stats --pid $caddy_pid \
        -o /dev/null 2> "$dir/tracer.err" &
      tracer_pid=$!
      for _ in $(seq 1 3000); do grep -q "Ctrl-C to stop" "$dir/tracer.err" && break; sleep 0.1; done
      ;;
    bpftrace)
      bpftrace -o "$dir/events.txt" -e "uprobe:$CADDY:\"$F.(*Server).ServeHTTP\" { printf(\"%lx\\n\", reg(\"di\")); }" \
        2> "$dir/tracer.err" &
      tracer_pid=$!
      for _ in $(seq 1 3000); do grep -q "Attaching" "$dir/events.txt" "$dir/tracer.err" 2> /dev/null && break; sleep 0.1; done
      sleep 1
      ;;
  esac
  "$HEY" -n "$REQUESTS" -c "$CONCURRENCY" "http://127.0.0.1:$port/index.html" > "$dir/hey.txt"
  local cpu=0 rss=0 events=$REQUESTS lost=0 bpf_ns=-
  if [ -n "$tracer_pid" ]; then
    sleep 0.5 # let the tracer drain what hey's last requests produced
    cpu=$(cpu_seconds $tracer_pid)
    rss=$(peak_rss_kb $tracer_pid)
    kill -INT $tracer_pid
    wait $tracer_pid || true
    bpf_ns=$(awk '/ BPF programs? for / { for (i = 1; i <= NF; i++) if ($i == "ns/run") print $(i-1) }' "$dir/tracer.err" | tail -1)
    if [ $mode = floor-sym ] || [ $mode = floor-weave ]; then
      events=$REQUESTS lost=0 # an empty program sends nothing
    elif [ $mode = bpftrace ]; then
      events=$(grep -c '^[0-9a-f]\+$' "$dir/events.txt" || true)
      lost=$({ grep -ho 'Lost [0-9]* events' "$dir/tracer.err" "$dir/events.txt" || true; } | awk '{ n += $2 } END { print n + 0 }')
    else
      events=$(grep -c "\"probe\":\"$F.(\*Server).ServeHTTP\",\"function\":\"[^\"]*\",\"kind\":\"entry\"" "$dir/events.jsonl" || true)
      # The summary's total line, or with one probe its only line.
      lost=$(sed -n 's/^weave: total: .*, \([0-9]*\) lost.*/\1/p' "$dir/tracer.err" | tail -1)
      [ -n "$lost" ] || lost=$(sed -n 's/^weave: .* events, \([0-9]*\) lost$/\1/p' "$dir/tracer.err" | awk '{ n += $1 } END { print NR ? n : "unknown" }')
    fi
  fi
  kill $caddy_pid
  wait $caddy_pid 2> /dev/null || true
  local rps p99
  rps=$(awk '/Requests\/sec:/ { print $2 }' "$dir/hey.txt")
  p99=$(awk '/ 99%%? in / { printf "%.3f", $3 * 1000 }' "$dir/hey.txt") # hey prints "99%% in"
  local ok=$(grep -o '\[200\][[:space:]]*[0-9]*' "$dir/hey.txt" | awk '{ print $2 }')
  [ "${ok:-0}" = "$REQUESTS" ] || say "service-bench: $mode round $round: $ok of $REQUESTS requests answered 200"
  echo "$mode $rps $p99 $cpu $rss $events $lost ${bpf_ns:--}" >> "$WORK/results"
  say "  $mode round $round: $rps req/s, p99 $p99 ms, tracer cpu $cpu s, peak rss $rss KB, events $events, lost $lost"
}

: > "$WORK/results"
say "service-bench: caddy file_server, $REQUESTS requests x $ROUNDS rounds, concurrency $CONCURRENCY"
for round in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    [ $mode = bpftrace ] && [ $HAVE_BPFTRACE = 0 ] && continue
    run $mode $round
  done
done

col() { awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$WORK/results" | median; }
base_rps=$(col untraced 2)
base_p99=$(col untraced 3)
printf '\n%-10s %10s %9s %10s %9s %12s %12s %8s %8s\n' mode "req/s" "p99 ms" "cpu s" "rss MB" "events" "requests" lost "status"
for mode in $MODES; do
  grep -q "^$mode " "$WORK/results" || continue
  rps=$(col $mode 2); p99=$(col $mode 3); cpu=$(col $mode 4); rss=$(col $mode 5)
  events=$(awk -v m=$mode '$1 == m { s += $6 } END { print s }' "$WORK/results")
  lost=$(awk -v m=$mode '$1 == m { s += ($7 == "unknown" ? 0 : $7) } END { print s }' "$WORK/results")
  want=$((REQUESTS * ROUNDS))
  status=ok
  [ "$events" = "$want" ] && [ "$lost" = 0 ] || status=MISMATCH
  # A uprobe at the symbol (bpftrace's) fires again when a call grows its stack and restarts the
  # function: a few more hits than requests. weave attaches after the stack check.
  [ $mode = bpftrace ] && [ "$lost" = 0 ] && [ "$events" -gt "$want" ] && status="ok+$((events - want))"
  [ $mode = untraced ] || [ $mode = floor-sym ] || [ $mode = floor-weave ] && status=-
  printf '%-10s %10.0f %9.3f %10.3f %9.1f %12s %12s %8s %8s\n' $mode "$rps" "$p99" "$cpu" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" \
    "$events" "$want" "$lost" $status
done
printf '\nratios against untraced (medians of %s rounds):\n' "$ROUNDS"
printf '%-12s %12s %12s %22s %12s\n' mode "req/s ratio" "p99 ratio" "tracer cpu / request" "BPF ns/run"
for mode in $MODES; do
  grep -q "^$mode " "$WORK/results" || continue
  rps=$(col $mode 2); p99=$(col $mode 3); cpu=$(col $mode 4); ns=$(awk -v m="$mode" '$1 == m && $8 != "-" { print $8 }' "$WORK/results" | median)
  [ "$ns" = nan ] && ns=-
  printf '%-12s %12s %12s %19s µs %12s\n' $mode "$(ratio "$rps" "$base_rps")" "$(ratio "$p99" "$base_p99")" \
    "$(awk -v c="$cpu" -v n="$REQUESTS" 'BEGIN { printf "%.1f", c / n * 1e6 }')" "$ns"
done
# The micro floor: the same empty program at the symbol and at weave's point, and weave-1's whole
# probe beside them, in this run.
if grep -q "^floor-sym " "$WORK/results" && grep -q "^floor-weave " "$WORK/results"; then
  fs=$(col floor-sym 2); fw=$(col floor-weave 2)
  printf '\nmicro floor: req/s at weave'"'"'s point / at the symbol: %s' "$(ratio "$fw" "$fs")"
  grep -q "^weave-1 " "$WORK/results" && printf '; weave-1 / floor at weave'"'"'s point: %s' "$(ratio "$(col weave-1 2)" "$fw")"
  printf '\n'
fi
