#!/bin/bash
# bench/run.sh — weave's performance, measured in one run and printed side by side with ratios.
# Not part of the pass/fail suite. Needs root (BPF), Go, clang, and bpftrace for its rows.
#
#   bench/run.sh            everything, ~6 minutes (bpftrace's detach of 1,000 probes dominates)
#
# Environment (all optional):
#   WEAVE_BUILD=DIR         a build directory with weave and weave-tracer (default: build-bench,
#                           configured and built here)
#   BENCH_DIR=DIR           scratch directory (default /tmp/weave-bench)
#   BENCH_CALLS=N           calls per per-call run (default 200000; a probe hit costs ~12 µs)
#   BENCH_ROUNDS=N          interleaved rounds of the per-call runs; medians are reported (default 3)
#   BENCH_MANY=N            functions of the attach benchmark (default 1000)
#   BENCH_BPFTRACE_MANY=N   functions bpftrace attaches to there (default: BENCH_MANY; 0 skips it)
#   BENCH_PERF_MANY=N       functions for weave --attach perf there (default 25; 0 skips it)
#   BENCH_TIMEOUT=S         bound on any one traced run (default 900)
#   BENCH_SKIP=LIST         steps to skip, of: overhead attach rate build format costs
#   BENCH_LADDER_CALLS=N    calls per rung of the cost ladder (default 20000)
#
# Steps:
#   1. overhead  per-call cost of a Go function (int, string, struct pointer) as the Go loop itself
#                measures it: unprobed; the floor (an empty BPF program on a uprobe_multi link,
#                loaded by the weave runtime); weave capturing 3 args to a file (text, JSON);
#                bpftrace printing the same 3 args to a file. Ratios against the floor.
#   2. attach    attach + detach of BENCH_MANY functions at entry and every RET (bench/gen_many.sh):
#                weave with uprobe_multi links, weave --attach perf on a few, bpftrace on the entries
#                (bpftrace cannot probe Go's RETs; uretprobes break Go, so it gets entries only).
#   3. rate      events/s delivered with zero loss while two goroutines call the traced function,
#                with events and lost from --stats.
#   4. build     `weave build` wall time and peak RSS on cmd/compile with 10 probes.
#   5. format    the tracer's user-space formatting alone, text vs JSON (bench/format_bench.cpp).
#   6. costs     BPF ns/run of bench/cost_ladder.bpf.c's rungs: what each part of a probe costs here.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEAVE_BUILD:-$ROOT/build-bench}
WORK=${BENCH_DIR:-/tmp/weave-bench}
CALLS=${BENCH_CALLS:-200000}
ROUNDS=${BENCH_ROUNDS:-3}
MANY=${BENCH_MANY:-1000}
BT_MANY=${BENCH_BPFTRACE_MANY:-$MANY}
PERF_MANY=${BENCH_PERF_MANY:-25}
TIMEOUT=${BENCH_TIMEOUT:-900}
SKIP=${BENCH_SKIP:-}

. "$ROOT/bench/lib.sh" # say, median, ratio, run_ns
die() { say "bench: $*"; exit 1; }
skipped() { [[ " $SKIP " == *" $1 "* ]]; }
now() { date +%s.%N; }
# median of the numbers on stdin

[ "$(id -u)" = 0 ] || die "needs root: it loads BPF programs and attaches uprobes"
for tool in go clang cmake ninja python3; do
  command -v $tool > /dev/null || die "needs $tool (scripts/install-deps.sh)"
done
HAVE_BPFTRACE=1
command -v bpftrace > /dev/null || { HAVE_BPFTRACE=0; say "bench: no bpftrace; its rows are left out (apt-get install bpftrace)"; }
[ -x /usr/bin/time ] || die "needs /usr/bin/time (apt-get install time)"

mkdir -p "$WORK"
export GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 GOCACHE=${GOCACHE:-$WORK/gocache}

# ---- Build what the runs need ------------------------------------------------------------------
say "bench: building weave, the workload and the generated programs in $WORK"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja > "$WORK/cmake.log" || die "cmake failed: $WORK/cmake.log"
fi
ninja -C "$BUILD" weave weave-tracer > "$WORK/ninja.log" || die "building weave failed: $WORK/ninja.log"
WEAVE=$BUILD/weave
RUNTIME=$BUILD/weave-tracer
(cd "$ROOT/bench/workload" && go build -trimpath -buildvcs=false -o "$WORK/workload" .)
WORKLOAD=$WORK/workload

cat > "$WORK/work.yaml" << 'EOF'
# main.Work(n int, s string, p *Item): n in RAX, s in RBX/RCX, p in RDI; p.Count at +8.
probes:
  - function: main.Work
    capture: [n, s, p.Count]
EOF
cat > "$WORK/empty.yaml" << 'EOF'
probes:
  - function: main.Work
EOF
"$WEAVE" build "$WORK/work.yaml" "$WORKLOAD" -o "$WORK/out-work" 2> "$WORK/weave-work.log" || die "weave build: $WORK/weave-work.log"
"$WEAVE" build "$WORK/empty.yaml" "$WORKLOAD" -o "$WORK/out-empty" 2> "$WORK/weave-empty.log" || die "weave build: $WORK/weave-empty.log"
cat > "$WORK/dropped.yaml" << 'EOF'
# The same 3 captures behind a condition no call meets: what a dropped call costs.
probes:
  - function: main.Work
    capture: [n, s, p.Count]
    when: 'n < 0'
EOF
"$WEAVE" build "$WORK/dropped.yaml" "$WORKLOAD" -o "$WORK/out-dropped" 2> "$WORK/weave-dropped.log" || die "weave build: $WORK/weave-dropped.log"

# The floor: an empty program, loaded and attached (uprobe_multi) by the weave runtime itself, with
# the no-capture probe's manifest pointing at it.
clang -O2 -g -target bpf -I"$ROOT/templates" -c "$ROOT/bench/floor.bpf.c" -o "$WORK/floor.bpf.o"
python3 - "$WORK/out-empty/probes.json" "$WORK/floor.json" << 'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["probes"] = m["probes"][:1]
m["probes"][0]["program"] = "floor_entry"
json.dump(m, open(sys.argv[2], "w"), indent=1)
EOF

# ---- 1. Per-call overhead --------------------------------------------------------------------
# Each config prints the workload's "calls=N ns_per_call=X ..." line on stderr; the rounds are
# interleaved so that a noisy neighbour hits every config alike.
ns_per_call() { sed -n 's/.* ns_per_call=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
best_ns_per_call() { sed -n 's/.*best_ns_per_call=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
stats_row() { # the probe's --stats row at exit and its program's runs: "hits events lost runs ns/run"
  awk '/stats at exit/ { on = 1; next }
       on && $2 == "main.Work" && $3 == "entry" { row = $(NF-3) " " $(NF-2) " " $(NF-1); ns = $NF }
       on && / BPF programs? for / { for (i = 1; i <= NF; i++) if ($(i+1) == "runs,") runs = $i }
       END { print row, runs, ns }' "$1"
}
BT_PROG='uprobe:'$WORKLOAD':main.Work { printf("%d %s %d\n", reg("ax"), str(reg("bx"), reg("cx")), *(int64*)(reg("di")+8)); }'

run_config() { # name: runs one measurement, leaves the workload's stderr line in $WORK/$name.err
  local name=$1 out=$WORK/$1.out err=$WORK/$1.err
  case $name in
  unprobed) "$WORKLOAD" -n $((CALLS * 50)) 2> "$err" > "$out" ;;
  floor) timeout "$TIMEOUT" "$RUNTIME" --object "$WORK/floor.bpf.o" --manifest "$WORK/floor.json" --stats -- "$WORKLOAD" -n "$CALLS" > "$out" 2> "$err" ;;
  weave_nocapture) timeout "$TIMEOUT" "$WORK/out-empty/tracer" --stats -- "$WORKLOAD" -n "$CALLS" > "$out" 2> "$err" ;;
  weave_text) timeout "$TIMEOUT" "$WORK/out-work/tracer" --stats -- "$WORKLOAD" -n "$CALLS" > "$out" 2> "$err" ;;
  weave_json) timeout "$TIMEOUT" "$WORK/out-work/tracer" --stats --format json -- "$WORKLOAD" -n "$CALLS" > "$out" 2> "$err" ;;
  bpftrace) timeout "$TIMEOUT" bpftrace -e "$BT_PROG" -c "$WORKLOAD -n $CALLS" > "$out" 2> "$err" ;;
  esac
}

if ! skipped overhead; then
  say "bench: 1. per-call overhead, $CALLS calls x $ROUNDS rounds"
  CONFIGS="unprobed floor weave_nocapture weave_text weave_json"
  [ $HAVE_BPFTRACE = 1 ] && CONFIGS="$CONFIGS bpftrace"
  for c in $CONFIGS; do : > "$WORK/overhead-$c.txt"; done
  for r in $(seq "$ROUNDS"); do
    for c in $CONFIGS; do
      run_config "$c" || say "bench: $c failed in round $r (see $WORK/$c.err)"
      echo "$(ns_per_call "$WORK/$c.err") $(best_ns_per_call "$WORK/$c.err")" >> "$WORK/overhead-$c.txt"
      case $c in
      weave_text | weave_json) lines=$(wc -l < "$WORK/$c.out") ;;
      bpftrace) lines=$(($(wc -l < "$WORK/$c.out") - 1)) ;; # "Attaching 1 probe..."
      *) lines=- ;;
      esac
      say "bench:   round $r $c: $(ns_per_call "$WORK/$c.err") ns/call (fastest chunk $(best_ns_per_call "$WORK/$c.err")), $lines lines out"
    done
  done
  floor_median=$(awk '{ print $1 }' "$WORK/overhead-floor.txt" | median)
  floor_best=$(awk '{ print $2 }' "$WORK/overhead-floor.txt" | sort -g | head -1)
  {
    echo
    echo "## 1. Per-call overhead: main.Work(int, string, *Item), $CALLS calls, $ROUNDS interleaved rounds"
    echo
    echo "median: of the rounds' ns/call over the whole loop; best: the fastest 1/20 of the loop in any"
    echo "round (the least disturbed by other work on the machine)."
    echo
    printf '%-52s %10s %8s %10s %8s\n' "config" "median" "/ floor" "best" "/ floor"
    for c in $CONFIGS; do
      m=$(awk '{ print $1 }' "$WORK/overhead-$c.txt" | median)
      b=$(awk '{ print $2 }' "$WORK/overhead-$c.txt" | sort -g | head -1)
      case $c in
      unprobed) label="unprobed" ;;
      floor) label="floor: empty BPF program, uprobe_multi (weave loader)" ;;
      weave_nocapture) label="weave, no captures (header-only event)" ;;
      weave_text) label="weave, 3 args, text to a file" ;;
      weave_json) label="weave, 3 args, JSON to a file" ;;
      bpftrace) label="bpftrace, 3 args, printf to a file" ;;
      esac
      if [ $c = unprobed ]; then
        printf '%-52s %10s %8s %10s %8s\n' "$label" "$m" - "$b" -
      else
        printf '%-52s %10s %8s %10s %8s\n' "$label" "$m" "$(ratio "$m" "$floor_median")" "$b" "$(ratio "$b" "$floor_best")"
      fi
    done
    echo
    echo "weave_text --stats (hits events lost runs ns/run, last round): $(stats_row "$WORK/weave_text.err")"
    echo "weave_json --stats (hits events lost runs ns/run, last round): $(stats_row "$WORK/weave_json.err")"
    echo "floor      --stats (runs ns/run of the empty program):          $(stats_row "$WORK/floor.err" | awk '{ print $4, $5 }')"
  } | tee "$WORK/report-1.txt"
fi

# ---- 2. Attach + detach of many functions -------------------------------------------------------
if ! skipped attach; then
  say "bench: 2. attach + detach, $MANY functions at entry and every RET"
  "$ROOT/bench/gen_many.sh" "$MANY" "$WORK/many"
  (cd "$WORK/many" && go build -trimpath -buildvcs=false -o "$WORK/many/many" .)
  t0=$(now)
  "$WEAVE" build "$WORK/many/spec.yaml" "$WORK/many/many" -o "$WORK/out-many" 2> "$WORK/weave-many.log" || die "weave build: $WORK/weave-many.log"
  t1=$(now)
  build_many=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  : > "$WORK/attach-multi.txt"
  for r in $(seq "$ROUNDS"); do
    t0=$(now)
    timeout "$TIMEOUT" "$WORK/out-many/tracer" --exit-after-attach --binary "$WORK/many/many" 2> "$WORK/attach-multi.err"
    t1=$(now)
    a=$(sed -n 's/.*links in \([0-9.]*\) s.*/\1/p' "$WORK/attach-multi.err")
    d=$(sed -n 's/.*detached .* in \([0-9.]*\) s.*/\1/p' "$WORK/attach-multi.err")
    echo "$a $d $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" >> "$WORK/attach-multi.txt"
    say "bench:   round $r: $(grep -o 'attached .*' "$WORK/attach-multi.err" | head -1); detach $d s"
  done
  multi_attach=$(awk '{ print $1 }' "$WORK/attach-multi.txt" | median)
  multi_detach=$(awk '{ print $2 }' "$WORK/attach-multi.txt" | median)
  multi_wall=$(awk '{ print $3 }' "$WORK/attach-multi.txt" | median)
  multi_points=$(sed -n 's/.*attached \([0-9]*\) points with \([0-9]*\) .*/\1 points, \2 links/p' "$WORK/attach-multi.err")

  perf_line="(skipped)"
  if [ "$PERF_MANY" -gt 0 ]; then
    say "bench:   weave --attach perf on $PERF_MANY functions (each perf-event link takes ~0.1 s to close)"
    head -n $((PERF_MANY + 2)) "$WORK/many/spec.yaml" > "$WORK/many/spec-perf.yaml"
    "$WEAVE" build "$WORK/many/spec-perf.yaml" "$WORK/many/many" -o "$WORK/out-many-perf" 2> "$WORK/weave-many-perf.log"
    timeout "$TIMEOUT" "$WORK/out-many-perf/tracer" --attach perf --exit-after-attach --binary "$WORK/many/many" 2> "$WORK/attach-perf.err" || true
    pa=$(sed -n 's/.*links in \([0-9.]*\) s.*/\1/p' "$WORK/attach-perf.err")
    pd=$(sed -n 's/.*detached .* in \([0-9.]*\) s.*/\1/p' "$WORK/attach-perf.err")
    pp=$(sed -n 's/.*attached \([0-9]*\) points.*/\1/p' "$WORK/attach-perf.err")
    perf_line="$PERF_MANY functions ($pp points): attach $pa s, detach $pd s = $(awk -v a="$pd" -v n="$pp" 'BEGIN { printf "%.0f", a / n * 1000 }') ms per point closing"
  fi

  bt_line="(skipped)"
  if [ $HAVE_BPFTRACE = 1 ] && [ "$BT_MANY" -gt 0 ]; then
    say "bench:   bpftrace on $BT_MANY function entries (bounded by $TIMEOUT s)"
    # One probe per function by name; wildcards would match the same set.
    probes=$(awk -v n="$BT_MANY" -v bin="$WORK/many/many" 'BEGIN { for (i = 0; i < n; i++) printf "%suprobe:%s:main.F%04d", (i ? "," : ""), bin, i }')
    t0=$(now)
    BPFTRACE_MAX_PROBES=$((BT_MANY + 10)) BPFTRACE_MAX_BPF_PROGS=$((BT_MANY + 10)) \
      timeout "$TIMEOUT" stdbuf -oL bpftrace -e "BEGIN { printf(\"attached\\n\"); exit(); } $probes { @[probe] = count(); }" 2> "$WORK/attach-bpftrace.err" |
      while IFS= read -r line; do [ "$line" = attached ] && now > "$WORK/attach-bpftrace.ready"; done || true
    t2=$(now)
    if [ -s "$WORK/attach-bpftrace.ready" ]; then
      t1=$(cat "$WORK/attach-bpftrace.ready")
      bt_attach=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
      bt_detach=$(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.2f", b - a }')
      bt_line="$BT_MANY functions, entries only: start + attach $bt_attach s, detach + exit $bt_detach s, total $(awk -v a="$t0" -v b="$t2" 'BEGIN { printf "%.1f", b - a }') s"
    else
      bt_line="did not attach within $TIMEOUT s (see $WORK/attach-bpftrace.err)"
    fi
    rm -f "$WORK/attach-bpftrace.ready"
  fi
  {
    echo
    echo "## 2. Attach + detach: $MANY Go functions at entry and every RET ($multi_points)"
    echo
    echo "weave build of the spec:            $build_many s"
    echo "weave, uprobe_multi (median of $ROUNDS): attach $multi_attach s + detach $multi_detach s = $(awk -v a="$multi_attach" -v b="$multi_detach" 'BEGIN { printf "%.3f", a + b }') s; whole tracer process (load included) $(printf '%.2f' "$multi_wall") s"
    echo "weave --attach perf:                $perf_line"
    echo "bpftrace:                           $bt_line"
  } | tee "$WORK/report-2.txt"
fi

# ---- 3. Events per second, two goroutines -------------------------------------------------------
if ! skipped rate; then
  say "bench: 3. events/s with two goroutines calling main.Work, $ROUNDS rounds"
  : > "$WORK/rate.txt"
  for r in $(seq "$ROUNDS"); do
    for format in text json; do
      timeout "$TIMEOUT" "$WORK/out-work/tracer" --stats --format $format -- "$WORKLOAD" -n "$CALLS" -goroutines 2 > "$WORK/rate-$format.out" 2> "$WORK/rate-$format.err" || true
      cps=$(sed -n 's/.*calls_per_sec=\([0-9.]*\).*/\1/p' "$WORK/rate-$format.err")
      row="$format $cps $(stats_row "$WORK/rate-$format.err") $(wc -l < "$WORK/rate-$format.out")"
      echo "$row" >> "$WORK/rate.txt"
      say "bench:   round $r: $row"
    done
  done
  {
    echo
    echo "## 3. Delivery rate: 2 goroutines x $CALLS calls of main.Work, 3 args captured, output to a file"
    echo
    echo "events/s = calls/s as the Go program measures it; every call is one event. Median of $ROUNDS rounds;"
    echo "hits, events, lost and lines summed over the rounds."
    echo
    printf '%-6s %14s %10s %10s %8s %12s\n' format "events/s" hits events lost "lines out"
    for format in text json; do
      m=$(awk -v f=$format '$1 == f { print $2 }' "$WORK/rate.txt" | median)
      awk -v f=$format -v m="$m" '$1 == f { h += $3; e += $4; l += $5; n += $8 }
        END { printf "%-6s %14.0f %10d %10d %8d %12d\n", f, m, h, e, l, n }' "$WORK/rate.txt"
    done
  } | tee "$WORK/report-3.txt"
fi

# ---- 4. weave build on a big binary ---------------------------------------------------------------
if ! skipped build; then
  say "bench: 4. weave build on cmd/compile (go build cmd/compile first: ~1 minute when not cached)"
  [ -x "$WORK/compile" ] || (cd "$WORK" && go build -trimpath -o "$WORK/compile" cmd/compile)
  : > "$WORK/build.txt"
  for r in 1 2 3; do
    /usr/bin/time -v "$WEAVE" build --timings "$ROOT/bench/compile.yaml" "$WORK/compile" -o "$WORK/out-compile" 2> "$WORK/build-compile.err" > /dev/null ||
      die "weave build on cmd/compile failed: $WORK/build-compile.err"
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$WORK/build-compile.err" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$WORK/build-compile.err")
    # weave's own account (--timings): the stages, and the time without clang.
    stages=$(sed -n 's/^weave: \(spec .*\)/\1/p' "$WORK/build-compile.err")
    noclang=$(sed -n 's/.*(\([0-9.]*\) s without clang).*/\1/p' "$WORK/build-compile.err")
    echo "$wall $rss $noclang | $stages" >> "$WORK/build.txt"
  done
  size=$(stat -c %s "$WORK/compile")
  {
    echo
    echo "## 4. weave build: cmd/compile ($((size / 1024 / 1024)) MiB, $(grep -c 'function:' "$ROOT/bench/compile.yaml") probes in bench/compile.yaml)"
    echo
    awk -v n=1 '{ printf "run %d: %.2f s wall (%.3f s without clang), peak RSS %.0f MiB (weave or clang, whichever is larger)\n", n++, $1, $3, $2 / 1024 }' "$WORK/build.txt"
    echo "stages of the last run: $(tail -1 "$WORK/build.txt" | sed 's/^[^|]*| //')"
  } | tee "$WORK/report-4.txt"
fi

# ---- 5. Formatting alone ------------------------------------------------------------------------
if ! skipped format; then
  say "bench: 5. formatting events in user space, text vs JSON"
  # Against the runtime's own library, as the tracer links it (it may need libelf).
  g++ -O2 -std=c++20 -I"$ROOT/runtime" -I"$ROOT" -I"$ROOT/generator" "$ROOT/bench/format_bench.cpp" \
    "$BUILD/libweave_runtime_core.a" "$BUILD/libweave_gobinary.a" -lelf -o "$WORK/format_bench" || die "building bench/format_bench.cpp failed"
  {
    echo
    echo "## 5. The tracer's formatting alone: 2,000,000 main.Work events to a file"
    echo
    "$WORK/format_bench" "$WORK/out-work/probes.json" 2000000 "$WORK/format.out"
  } | tee "$WORK/report-5.txt"
fi

# ---- 6. What each part of a probe costs ---------------------------------------------------------
# BPF time per run (--stats, the kernel's bpf_stats) of bench/cost_ladder.bpf.c's rungs, each one
# thing more than the last; the generated 3-capture program and the floor beside them. ns/run is
# the program alone, which a busy machine disturbs far less than the per-call loop of step 1.
if ! skipped costs; then
  LADDER_CALLS=${BENCH_LADDER_CALLS:-20000}
  say "bench: 6. cost ladder, $LADDER_CALLS calls per rung x $ROUNDS rounds"
  rungs="0 1 2 3 4 5 6 7 8"
  for n in $rungs; do
    clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -DRUNG=$n -I"$ROOT/templates" -c "$ROOT/bench/cost_ladder.bpf.c" -o "$WORK/ladder-$n.bpf.o"
  done
  run_ns() { awk '/ BPF programs? for / { for (i = 1; i <= NF; i++) if ($i == "ns/run") print $(i-1) }' "$1" | tail -1; }
  : > "$WORK/ladder.txt"
  for r in $(seq "$ROUNDS"); do
    for n in $rungs generated dropped; do
      if [ $n = generated ] || [ $n = dropped ]; then
        out=$WORK/out-work
        [ $n = dropped ] && out=$WORK/out-dropped
        timeout "$TIMEOUT" "$out/tracer" --stats -o /dev/null -- "$WORKLOAD" -n "$LADDER_CALLS" > /dev/null 2> "$WORK/ladder.err" || true
      else
        timeout "$TIMEOUT" "$RUNTIME" --object "$WORK/ladder-$n.bpf.o" --manifest "$WORK/floor.json" --stats -o /dev/null -- "$WORKLOAD" -n "$LADDER_CALLS" > /dev/null 2> "$WORK/ladder.err" || true
      fi
      echo "$n $(run_ns "$WORK/ladder.err")" >> "$WORK/ladder.txt"
    done
  done
  {
    echo
    echo "## 6. What each part of a probe costs: BPF ns/run (median of $ROUNDS), main.Work, 3 captures"
    echo
    printf '%-58s %8s %8s\n' "rung (each adds one thing to the one above)" "ns/run" "+ns"
    prev=
    for n in $rungs generated dropped; do
      m=$(awk -v n=$n '$1 == n { print $2 }' "$WORK/ladder.txt" | median)
      case $n in
      0) label="0 floor: return at once" ;;
      1) label="1 + bpf_get_attach_cookie" ;;
      2) label="2 + pid_tgid, pid filter, hits counter" ;;
      3) label="3 + ring buffer reserve/submit (152-byte event)" ;;
      4) label="4 + bpf_ktime_get_ns" ;;
      5) label="5 + bpf_probe_read_user: goroutine id" ;;
      6) label="6 + bpf_probe_read_user: parentGoid+gopc (16 B)" ;;
      7) label="7 + bpf_probe_read_user: p.Count" ;;
      8) label="8 + bpf_probe_read_user: s's bytes (12 of 64)" ;;
      generated) label="the generated probe (weave build of work.yaml)" ;;
      dropped) label="the same with when: 'n < 0', every call dropped" ;;
      esac
      if [ $n = generated ] || [ $n = dropped ]; then
        printf '%-58s %8s %8s\n' "$label" "$m" "($(awk -v a="$m" -v b="$floor_ns" 'BEGIN { printf "%+.0f", a - b }') over the floor)"
      elif [ -n "$prev" ]; then
        printf '%-58s %8s %8s\n' "$label" "$m" "$(awk -v a="$m" -v b="$prev" 'BEGIN { printf "%+.0f", a - b }')"
      else
        printf '%-58s %8s %8s\n' "$label" "$m" "-"
        floor_ns=$m
      fi
      prev=$m
    done
  } | tee "$WORK/report-6.txt"
fi

cat "$WORK"/report-*.txt > "$WORK/report.txt"
say "bench: report in $WORK/report.txt"
