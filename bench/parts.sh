#!/bin/bash
# bench/parts.sh — where a generated probe's time goes: Caddy's 11-value ServeHTTP entry (the spec
# of bench/regions.sh) cut into programs that each add one part to the one before, all attached to
# one Caddy at once through the weave runtime (tracer --object/--manifest --stats), each with its
# BPF ns/run from the kernel's statistics. The attach order rotates every round so that each
# program runs first after the trap (the one attached last, which finds the memory coldest) in
# ROUNDS/N rounds; both medians are printed: running first, and after another program.
# Not part of the pass/fail suite. Needs root, curl, clang, and Caddy from tests/services/build.sh.
#
# Parts, cut from the generated probes.bpf.c at its comments:
#   empty     return at once
#   filter    the cookie, the pid filter and the hits counter (weave_begin)
#   reserve   + the record (a per-CPU scratch record, or a ring buffer reservation of the whole
#             record), the clock, and the send (the used bytes copied, or the reservation submitted)
#   g         + the goroutine id and ancestry reads
#   regions   + the regions and the captures' values (strings' lengths, not their bytes)
#   full      + the strings' bytes: the generated program as it is
# and two programs that add to the full one what it would cost to do more (their + ns are against
# full), which tells what cutting could still win:
#   reads+2   every string read on its own read twice (here Host and RemoteAddr): what a helper
#             call to bpf_probe_read_user costs when the memory it reads is already warm
#   insns+200 200 more instructions, straight-line register moves before the regions: what the
#             program's own instructions cost
# Programs that stop before the strings' bytes send records with every string empty.
#
# Environment (all optional): WEAVE_BUILD=DIR (default ./build), BENCH_ROUNDS (default 24, a
# multiple of 8, the number of programs), BENCH_REQUESTS per round (default 4000), BENCH_DIR
# (default /tmp/weave-bench-parts), CADDY (default ~/.cache/weave/services/bin/default/caddy).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEAVE_BUILD:-$ROOT/build}
WORK=${BENCH_DIR:-/tmp/weave-bench-parts}
ROUNDS=${BENCH_ROUNDS:-24}
REQUESTS=${BENCH_REQUESTS:-4000}
CADDY=${CADDY:-${HOME:-/root}/.cache/weave/services/bin/default/caddy}

. "$ROOT/bench/lib.sh" # say, median, ratio, run_ns
die() { say "bench: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root: it loads BPF programs and attaches uprobes"
for tool in curl clang python3; do command -v $tool > /dev/null || die "needs $tool"; done
[ -x "$CADDY" ] || die "no Caddy at $CADDY: run tests/services/build.sh default"
[ -x "$BUILD/weave" ] || die "no weave in $BUILD"
rm -rf "$WORK" && mkdir -p "$WORK"

cat > "$WORK/spec.yaml" << 'EOF2'
probes:
  - function: github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP
    capture: [r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Host, r.ContentLength, r.Proto,
              r.RemoteAddr, r.RequestURI, r.ProtoMajor, r.ProtoMinor]
options:
  string_max: 300
EOF2
cp "$CADDY" "$WORK/caddy"
"$BUILD/weave" "$WORK/spec.yaml" "$WORK/caddy" -o "$WORK/out" > /dev/null 2> "$WORK/build.log" || die "weave failed: $WORK/build.log"

# The parts: the generated program with everything after a cut left out.
python3 - "$WORK/out/probes.bpf.c" "$WORK" << 'EOF2'
import re, sys
src = open(sys.argv[1]).read()
def at(marker):
    i = src.find(marker)
    if i < 0:
        sys.exit(f"bench: no '{marker}' in the generated program: cut it again")
    return src.rfind("\n", 0, i) + 1
body = at("/* A copy of the registers")
g = at("/* goroutine id")
regions = at("/* region 0")
strings = at("/* The strings' bytes")
# The send: a scratch record's copy of its used bytes, or a reservation's submit.
submit = at("{ /* into the ring buffer" if "{ /* into the ring buffer" in src else "bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP)")
end = src.index("\n}", submit)
head = src[:src.index("__u64 cookie")]
lens = sorted(set(re.findall(r"e->(c\d+_len) = len;", src)))
empty = "".join(f"\te->{m} = 0;\n" for m in lens) + ("\te->strings_len = 0;\n" if "strings_len" in src else "")
def program(upto, strings_empty=True):
    return src[:body] + src[body:upto] + (empty if strings_empty else "") + src[submit:]
parts = {
    "empty": head + "return 0;\n}\n",
    "filter": head + "__u64 cookie = bpf_get_attach_cookie(ctx);\n\tstruct weave_event_header h;\n"
              "\tif (weave_begin(&h, cookie, ctx->ip, WEAVE_EVENT_ENTRY, 0))\n\t\treturn 0;\n"
              "\t*(volatile __u32 *)&h.pid;\n\treturn 0;\n}\n",
    "reserve": program(g),
    "g": program(regions),
    "regions": program(strings),
    "full": src,
    "reads+2": re.sub(r"long err = (weave_read_string\([^;]*\));", r"\1; long err = \1;", src),
    "insns+200": src[:regions] + "\tasm volatile(" + " ".join(f'"r0 = {i}\\n"' for i in range(200))
                 + ' ::: "r0");\n' + src[regions:],
}
if parts["reads+2"] == src:
    sys.exit("bench: no string read on its own in the generated program: cut it again")
for name, text in parts.items():
    open(f"{sys.argv[2]}/{name}.bpf.c", "w").write(text)
EOF2
PARTS="empty filter reserve g regions full reads+2 insns+200"
for p in $PARTS; do
  cp "$WORK/$p.bpf.c" "$WORK/out/part.bpf.c"
  clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I"$WORK/out" -c "$WORK/out/part.bpf.c" -o "$WORK/$p.bpf.o" ||
    die "clang failed on the part $p"
done

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '{\n\tadmin off\n\tpersist_config off\n\tauto_https off\n}\nhttp://127.0.0.1:%s {\n\trespond "ok" 200\n}\n' "$port" > "$WORK/Caddyfile"
XDG_DATA_HOME=$WORK/data XDG_CONFIG_HOME=$WORK/config "$WORK/caddy" run --config "$WORK/Caddyfile" --adapter caddyfile > "$WORK/caddy.log" 2>&1 &
caddy_pid=$!
trap 'kill $caddy_pid 2> /dev/null || true' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

ns_per_run() { awk '/ BPF programs? for / { for (i = 1; i <= NF; i++) if ($i == "ns/run") print $(i-1) }' "$1" | tail -1; }
read -r -a names <<< "$PARTS"
n=${#names[@]}
: > "$WORK/runs.txt"
for r in $(seq "$ROUNDS"); do
  pids=() last=""
  for k in $(seq 0 $((n - 1))); do
    p=${names[$(((k + r) % n))]}
    "$WORK/out/tracer" --object "$WORK/$p.bpf.o" --manifest "$WORK/out/probes.json" --stats -o /dev/null \
      --pid "$caddy_pid" > /dev/null 2> "$WORK/$p-$r.err" &
    pids+=($!) last=$p
    for _ in $(seq 300); do grep -q 'tracing' "$WORK/$p-$r.err" 2> /dev/null && break; sleep 0.1; done
  done
  curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/items/[1-$REQUESTS]?page=2&sort=name" || true
  for pid in "${pids[@]}"; do kill -INT "$pid"; done
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  for p in $PARTS; do
    if [ "$p" = "$last" ]; then pos=first; else pos=after; fi
    echo "$p $(ns_per_run "$WORK/$p-$r.err") $pos" >> "$WORK/runs.txt"
  done
done
pick() { awk -v w="$1" -v p="$2" '$1 == w && $3 == p { print $2 }' "$WORK/runs.txt" | median; }
{
  echo "## Caddy ServeHTTP entry, 11 values: BPF ns/run by part ($ROUNDS rounds of $REQUESTS requests, all attached at once)"
  printf '%-10s %14s %8s %16s %8s\n' part "running first" "+ ns" "after another" "+ ns"
  pf="" pa=""
  for p in $PARTS; do
    f=$(pick "$p" first) a=$(pick "$p" after)
    df=$([ -n "$pf" ] && awk -v x="$f" -v y="$pf" 'BEGIN { printf "%+.0f", x - y }' || true)
    da=$([ -n "$pa" ] && awk -v x="$a" -v y="$pa" 'BEGIN { printf "%+.0f", x - y }' || true)
    printf '%-10s %14s %8s %16s %8s\n' "$p" "$f" "$df" "$a" "$da"
    case $p in reads+* | insns+*) ;; *) pf=$f pa=$a ;; esac # the probes after full: against full
  done
} | tee "$WORK/report.txt"
