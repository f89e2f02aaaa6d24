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
# and three programs priced against full (their + ns are against it), which tell what cutting
# could still win: two that do more,
#   reads+2   every string read on its own read twice (here Host and RemoteAddr): what a helper
#             call to bpf_probe_read_user costs when the memory it reads is already warm
#   insns+200 200 more instructions, straight-line register moves before the regions: what the
#             program's own instructions cost
# and one that does less:
#   bare      the floor under any generated program for these values: the same reads (g's span,
#             `r`'s and `r.URL`'s regions, the request line, `Host`, `RemoteAddr`), the cookie,
#             the pid filter and hits counter, the clock and a 616-byte ring reservation, and none
#             of weave's bookkeeping (no fault fallbacks, no string joins, no scratch record). Not
#             exact (strings cut at 64 bytes, faults unmarked): it prices what no exact program can
#             go below, since each read is a separate allocation of the target's. Written for
#             this spec: it names the request line's strings, Host and RemoteAddr
# Programs that stop before the strings' bytes send records with every string empty.
#
# Environment (all optional): WEAVE_BUILD=DIR (default ./build), BENCH_ROUNDS (default 27, a
# multiple of the number of programs: 9, or 10 with WEAVE_BEFORE), BENCH_REQUESTS per round
# (default 4000), BENCH_DIR (default /tmp/weave-bench-parts), CADDY (default
# ~/.cache/weave/services/bin/default/caddy).
#   BENCH_ALONE=1        attach each program alone, in turn (the order rotating every round), so
#                        that each always runs first after the trap, as with one tracer: one
#                        median per program instead of two
#   WEAVE_BEFORE=FILE    a weave of an earlier revision (its weave-tracer next to it): its program
#                        for the same spec joins the run as the part "before", with its own tracer
#                        and manifest (bench/regions.sh builds one at $BENCH_BEFORE_REV)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WEAVE_BUILD:-$ROOT/build}
WORK=${BENCH_DIR:-/tmp/weave-bench-parts}
ROUNDS=${BENCH_ROUNDS:-27}
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
# bare: the same reads with none of the bookkeeping, from the offsets the generated comments give.
def grab(pattern, what):
    m = re.search(pattern, src)
    if not m:
        sys.exit(f"bench: no {what} in the generated program: cut it again")
    return m
gm = grab(r"bpf_probe_read_user\(gbuf, (\d+), \(const void \*\)\(g \+ (\d+)\)\)", "read of g's span")
parent = grab(r"e->hdr.parent_goid = gbuf\[(\d+)\]", "parent goid word").group(1)
if int(gm.group(1)) > 144:
    sys.exit("bench: g's span is larger than the bare program's room: cut it again")
bare = ["\t__u64 cookie = bpf_get_attach_cookie(ctx);",
        "\tstruct weave_event_header h;",
        "\tif (weave_begin(&h, cookie, ctx->ip, WEAVE_EVENT_ENTRY, 0))",
        "\t\treturn 0;",
        "\tstruct probe_0_entry_event *e = bpf_ringbuf_reserve(&weave_events, 616, 0);",
        "\tif (!e) {",
        "\t\tweave_count(&weave_lost, h.probe_id);",
        "\t\treturn 0;",
        "\t}",
        "\te->hdr = h;",
        "\te->hdr.ts_ns = bpf_ktime_get_ns();",
        "\tconst struct weave_pt_regs_x86_64 regs = *ctx;",
        "\t__u64 *gbuf = (__u64 *)e->strings; /* as the generated program: g's span and r's region in the area */",
        f"\tbpf_probe_read_user(gbuf, {gm.group(1)}, (const void *)(regs.r14 + {gm.group(2)}));",
        "\te->hdr.goid = gbuf[0];",
        f"\te->hdr.parent_goid = gbuf[{parent}];",
        f"\te->hdr.gopc = gbuf[{int(parent) + 1}];"]
var = {}
for rm in re.finditer(r"/\* region (\d+): .*?\*/\n(.*?)\n\t}\n", src, re.S):
    k, text = rm.group(1), rm.group(2)
    base = re.search(r"__u64 base = ([^,]+),", text)
    rd = re.search(r"bpf_probe_read_user\(buf, (\d+), \(const void \*\)\(base \+ (\d+)\)\)", text)
    if not base or not rd:
        sys.exit(f"bench: region {k} has no base or read: cut it again")
    if int(rd.group(1)) > 240:
        sys.exit(f"bench: region {k} is larger than the bare program's room: cut it again")
    decl = f"\t__u64 *b{k} = (__u64 *)(e->strings + 144);" if k == "0" else f"\t__u64 b{k}[{int(rd.group(1)) // 8}];"
    bare += [decl,
             f"\tbpf_probe_read_user(b{k}, {rd.group(1)}, (const void *)({base.group(1)} + {rd.group(2)}));"]
    for pm in re.finditer(r"(w\d+_\d+) = weave_pick\(buf, (\d+), 8\); /\* ([^:]+):", text):
        bare.append(f"\t__u64 {pm.group(1)} = b{k}[{int(pm.group(2)) // 8}];")
        var[pm.group(3)] = pm.group(1)
def v(label):
    if label not in var:
        sys.exit(f"bench: no region value {label} in the generated program: cut it again")
    return var[label]
# Each capture's slot from its region value: a string's length (its bytes' place left 0), or the value.
for cm in re.finditer(r"e->(c\d+)(_len = len|\s*= \(__s64\)v);", src):
    label = re.search(r"/\* (\S+) \*/", src[src.rfind("{ /* capture", 0, cm.start()):]).group(1)
    if cm.group(2).startswith("_len"):
        bare += [f"\te->{cm.group(1)}_len = {v(label + '.len')};", f"\te->{cm.group(1)}_at = 0;"]
    else:
        bare.append(f"\te->{cm.group(1)} = {v(label)};")
# The request line's strings as one span, from the lowest start to the highest end.
bare.append("\t__u64 lo = ~0ULL, hi = 0;")
for s_ in ["r.Method", "r.Proto", "r.RequestURI"]:
    at, end = v(s_ + ".ptr"), f"{v(s_ + '.ptr')} + {v(s_ + '.len')}"
    bare += [f"\tif ({at} < lo)", f"\t\tlo = {at};", f"\tif ({end} > hi)", f"\t\thi = {end};"]
bare += ["\t__u64 n = hi > lo ? hi - lo : 0;",
         "\tif (n > 256)",
         "\t\tn = 256;",
         "\tbpf_probe_read_user(e->strings, n, (const void *)lo);",
         f"\tbpf_probe_read_user(e->strings + 256, {v('r.Host.len')} & 63, (const void *){v('r.Host.ptr')});",
         f"\tbpf_probe_read_user(e->strings + 320, {v('r.RemoteAddr.len')} & 63, (const void *){v('r.RemoteAddr.ptr')});",
         "\te->strings_len = 0;",
         "\tbpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);",
         "\treturn 0;", "}", ""]
parts["bare"] = head + "\n".join(bare)[1:]
if parts["reads+2"] == src:
    sys.exit("bench: no string read on its own in the generated program: cut it again")
for name, text in parts.items():
    open(f"{sys.argv[2]}/{name}.bpf.c", "w").write(text)
EOF2
PARTS="empty filter reserve g regions full reads+2 insns+200 bare"
for p in $PARTS; do
  cp "$WORK/$p.bpf.c" "$WORK/out/part.bpf.c"
  clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I"$WORK/out" -c "$WORK/out/part.bpf.c" -o "$WORK/$p.bpf.o" ||
    die "clang failed on the part $p"
done
# Each part runs with the tracer and manifest of the weave that generated it.
outdir() { if [ "$1" = before ]; then echo "$WORK/out-before"; else echo "$WORK/out"; fi; }
if [ -n "${WEAVE_BEFORE:-}" ]; then
  "$WEAVE_BEFORE" "$WORK/spec.yaml" "$WORK/caddy" -o "$WORK/out-before" > /dev/null 2> "$WORK/build-before.log" ||
    die "weave (before) failed: $WORK/build-before.log"
  cp "$WORK/out-before/probes.bpf.o" "$WORK/before.bpf.o"
  PARTS="before $PARTS"
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '{\n\tadmin off\n\tpersist_config off\n\tauto_https off\n}\nhttp://127.0.0.1:%s {\n\trespond "ok" 200\n}\n' "$port" > "$WORK/Caddyfile"
XDG_DATA_HOME=$WORK/data XDG_CONFIG_HOME=$WORK/config "$WORK/caddy" run --config "$WORK/Caddyfile" --adapter caddyfile > "$WORK/caddy.log" 2>&1 &
caddy_pid=$!
trap 'kill $caddy_pid 2> /dev/null || true' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

ns_per_run() { awk '/ BPF programs? for / { for (i = 1; i <= NF; i++) if ($i == "ns/run") print $(i-1) }' "$1" | tail -1; }
start() { # start the tracer of part $1 for round $2; its pid in $started
  "$(outdir "$1")/tracer" --object "$WORK/$1.bpf.o" --manifest "$(outdir "$1")/probes.json" --stats -o /dev/null \
    --pid "$caddy_pid" > /dev/null 2> "$WORK/$1-$2.err" &
  started=$!
  for _ in $(seq 300); do grep -q 'tracing' "$WORK/$1-$2.err" 2> /dev/null && break; sleep 0.1; done
}
drive() { curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/items/[1-$REQUESTS]?page=2&sort=name" || true; }
read -r -a names <<< "$PARTS"
n=${#names[@]}
: > "$WORK/runs.txt"
for r in $(seq "$ROUNDS"); do
  if [ -n "${BENCH_ALONE:-}" ]; then # one program at a time: it always runs first
    for k in $(seq 0 $((n - 1))); do
      p=${names[$(((k + r) % n))]}
      start "$p" "$r"
      drive
      kill -INT "$started"
      wait "$started" || true
      echo "$p $(ns_per_run "$WORK/$p-$r.err") first" >> "$WORK/runs.txt"
    done
    continue
  fi
  pids=() last=""
  for k in $(seq 0 $((n - 1))); do
    p=${names[$(((k + r) % n))]}
    start "$p" "$r"
    pids+=("$started") last=$p
  done
  drive
  for pid in "${pids[@]}"; do kill -INT "$pid"; done
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  for p in $PARTS; do
    if [ "$p" = "$last" ]; then pos=first; else pos=after; fi
    echo "$p $(ns_per_run "$WORK/$p-$r.err") $pos" >> "$WORK/runs.txt"
  done
done
pick() { awk -v w="$1" -v p="$2" '$1 == w && $3 == p { print $2 }' "$WORK/runs.txt" | median; }
delta() { [ -n "$2" ] && awk -v x="$1" -v y="$2" 'BEGIN { printf "%+.0f", x - y }' || true; }
{
  how=$([ -n "${BENCH_ALONE:-}" ] && echo "each program attached alone" || echo "all attached at once")
  echo "## Caddy ServeHTTP entry, 11 values: BPF ns/run by part ($ROUNDS rounds of $REQUESTS requests, $how)"
  if [ -n "${BENCH_ALONE:-}" ]; then
    printf '%-10s %14s %8s\n' part "running alone" "+ ns"
  else
    printf '%-10s %14s %8s %16s %8s\n' part "running first" "+ ns" "after another" "+ ns"
  fi
  pf="" pa=""
  for p in $PARTS; do
    f=$(pick "$p" first) a=$(pick "$p" after)
    if [ -n "${BENCH_ALONE:-}" ]; then
      printf '%-10s %14s %8s\n' "$p" "$f" "$(delta "$f" "$pf")"
    else
      printf '%-10s %14s %8s %16s %8s\n' "$p" "$f" "$(delta "$f" "$pf")" "$a" "$(delta "$a" "$pa")"
    fi
    case $p in before | reads+* | insns+* | bare) ;; *) pf=$f pa=$a ;; esac # those after full: against full
  done
  full=$(pick full first) bare=$(pick bare first)
  echo "running first: full / bare $(ratio "$full" "$bare")$([ -n "${WEAVE_BEFORE:-}" ] && echo ", before / full $(ratio "$(pick before first)" "$full")")"
} | tee "$WORK/report.txt"
