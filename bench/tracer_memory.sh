#!/bin/bash
# bench/tracer_memory.sh — a tracer's memory and start-up on a running Caddy, measured from /proc.
# Not part of the pass/fail suite. Needs root (BPF), curl, python3, and hey (bench/service.sh
# installs it). Usage:
#
#   bench/tracer_memory.sh CADDY TRACER_DIR [RUNTIME]
#
# TRACER_DIR is `weave build`'s output for CADDY; RUNTIME a weave-tracer to run it with (through
# --object/--manifest, so that two runtimes can be compared on one spec) instead of its own tracer.
# For each output (text, `--format json --pid`) and ring size (TRACER_RINGS, default "16M 4M"): Caddy
# is started on a free port, the tracer attached with --pid; once it says "Ctrl-C to stop" its CPU
# (every thread's /proc/PID/task/*/schedstat: time on a CPU) and RSS (VmRSS, RssAnon, RssFile) are
# read; then hey sends TRACER_REQUESTS requests (default 2000, concurrency 20) and RSS and its peak
# (VmHWM) are read again, and the proportional set size (Pss in /proc/PID/smaps_rollup, each shared
# page divided among the processes mapping it, each page counted once). One line per run:
#   output ring cpu_attach_s rss_attach_kb anon_kb file_kb | rss_load_kb anon_kb file_kb hwm_kb | pss_load_kb
set -euo pipefail
CADDY=$1 DIR=$2 RUNTIME=${3:-}
RINGS=${TRACER_RINGS:-16M 4M}
REQUESTS=${TRACER_REQUESTS:-2000}
HEY=${HEY:-$HOME/.cache/weave/hey/bin/hey}
WORK=$(mktemp -d /tmp/weave-tracer-memory.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/site" && echo "weave tracer memory" > "$WORK/site/index.html"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu_ns() { cat /proc/$1/task/*/schedstat 2> /dev/null | awk '{ s += $1 } END { print s }'; }
status() { awk -v k="$2" '$1 == k ":" { print $2 }' /proc/$1/status; }
pss() { awk '$1 == "Pss:" { print $2 }' /proc/$1/smaps_rollup; }

for output in text json; do
  for ring in $RINGS; do
    port=$(free_port)
    printf '{\n\tadmin off\n\tpersist_config off\n\tauto_https off\n}\nhttp://127.0.0.1:%s {\n\troot * %s\n\tfile_server\n}\n' \
      "$port" "$WORK/site" > "$WORK/Caddyfile"
    XDG_DATA_HOME=$WORK/data XDG_CONFIG_HOME=$WORK/config "$CADDY" run --config "$WORK/Caddyfile" \
      --adapter caddyfile > "$WORK/caddy.log" 2>&1 &
    caddy=$!
    for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
    args=(--pid $caddy --ring-size $ring -o "$WORK/events")
    [ $output = json ] && args+=(--format json)
    if [ -n "$RUNTIME" ]; then
      "$RUNTIME" --object "$DIR/probes.bpf.o" --manifest "$DIR/probes.json" "${args[@]}" 2> "$WORK/tracer.err" &
    else
      "$DIR/tracer" "${args[@]}" 2> "$WORK/tracer.err" &
    fi
    tracer=$!
    for _ in $(seq 1 30000); do grep -q "Ctrl-C to stop" "$WORK/tracer.err" && break; sleep 0.01; done
    line="$output $ring $(awk -v n="$(cpu_ns $tracer)" 'BEGIN { printf "%.4f", n / 1e9 }')"
    line+=" $(status $tracer VmRSS) $(status $tracer RssAnon) $(status $tracer RssFile)"
    "$HEY" -n "$REQUESTS" -c 20 "http://127.0.0.1:$port/" > /dev/null
    sleep 0.5
    line+=" | $(status $tracer VmRSS) $(status $tracer RssAnon) $(status $tracer RssFile) $(status $tracer VmHWM) | $(pss $tracer)"
    kill -INT $tracer && wait $tracer || true
    kill $caddy && wait $caddy 2> /dev/null || true
    echo "$line"
  done
done
