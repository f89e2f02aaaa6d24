#!/bin/bash
# The random-signature oracle: generate a Go program of COUNT functions with random signatures
# (tests/oracle/gen), build it, trace every function with args: all, return: true and stack: 12, and
# compare every value the tracer shows with what the program wrote it passed and returned, and every
# entry's stack with the program's own runtime.Callers (tests/oracle/compare). Exit 0: no mismatch;
# 1: mismatches (the seed and this command are printed); 77: cannot run here (not root: BPF and uprobes need it), which ctest reports as skipped.
#
#   tests/oracle/run.sh --seed 1 --count 2000 --arch amd64
#   tests/oracle/run.sh --seeds 1-5 --count 5000 --arch 386        # the longer run: several seeds
#   tests/oracle/run.sh --seed 1 --count 300 --arch arm64           # traced in qemu (tests/vm)
#
# Options: --build DIR (weave's build tree; default build/ beside this checkout), --go GO (default
# Debian's Go 1.19, the pinned toolchain), --omit generic,zerosize,float (leave a category out, for
# debugging only), --work DIR (where the program, tracer and outputs go), --delve N (also let Delve,
# which reads DWARF location lists, check the arguments of the first N chunks' calls: tests/delve),
# --lines N (in the first N chunks, also a line probe with `locals: all` on the line where each
# function starts printing its parameters, every parameter it reads there compared with what the
# program wrote at entry; amd64 and 386, where weave has line probes).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seeds=1
count=2000
arch=amd64
omit=
build=$root/build
go=/usr/lib/go-1.19/bin/go
work=
delve=0
lines=0
while [ $# -gt 0 ]; do
  case $1 in
    --seed | --seeds) seeds=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --omit) omit=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --go) go=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --delve) delve=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case $arch in
  amd64 | 386) runtime=$build/weave-tracer ;;
  # arm64 runs under emulation: weave builds every chunk's tracer here with the cross-built arm64
  # runtime, and one qemu boot (the arm64-vm command, tests/vm) runs them all.
  arm64) runtime=$build/weave-tracer-arm64 ;;
  *) echo "run.sh: --arch amd64, 386 or arm64 (in qemu)" >&2; exit 2 ;;
esac
if [ "$arch" = arm64 ] && ((lines > 0)); then
  echo "run.sh: --lines: weave builds line probes for amd64 and 386 binaries only" >&2
  exit 2
fi
if [ "$(id -u)" != 0 ]; then
  echo "run.sh: skipped: tracing needs root (BPF, uprobes)"
  exit 77
fi
weave=$build/weave
for f in "$weave" "$build/weave-tracer" "$go"; do
  [ -x "$f" ] || { echo "run.sh: $f is missing: build weave and weave-tracer first" >&2; exit 2; }
done
if [ "$arch" = arm64 ]; then
  [ -x "$runtime" ] || { echo "run.sh: skipped: $runtime was not built (g++-aarch64-linux-gnu and scripts/arm64-deps.sh)"; exit 77; }
  [ -x "$build/tests/arm64-vm" ] || { echo "run.sh: $build/tests/arm64-vm is missing: build the tests" >&2; exit 2; }
fi
work=${work:-$build/oracle}
export GOCACHE=${WEAVE_GOCACHE:-${GOCACHE:-$build/gocache}} GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0
mkdir -p "$work"
work=$(cd "$work" && pwd) # the builds below run in other directories

# The generator and the comparator run on this machine, whatever the target. -trimpath as the
# fixtures and the programs below are built: the standard packages they share compile once per cache.
(cd "$here" && GOARCH= "$go" build -trimpath -o "$work/gen" ./gen)
(cd "$here" && GOARCH= "$go" build -trimpath -o "$work/compare" ./compare)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# One seed: 0 on success, 1 on a mismatch or a failure of any stage.
one() {
  local seed=$1 dir t
  dir=$work/$arch-$seed-$count${omit:+-omit-$omit}
  local repro
  repro="tests/oracle/run.sh --seed $seed --count $count --arch $arch${omit:+ --omit $omit} --go $go"
  rm -rf "$dir"
  mkdir -p "$dir"
  t=$(now)
  # -stacks: every function's entry also records runtime.Callers, which its probe's `stack:` must equal.
  if ! "$work/gen" -seed "$seed" -count "$count" -arch "$arch" -stacks ${omit:+-omit "$omit"} -o "$dir/src"; then
    echo "oracle: seed $seed: the generator failed; reproduce with: $repro"
    return 1
  fi
  if ! (cd "$dir/src" && GOARCH=$arch "$go" build -trimpath -buildvcs=false -o "$dir/prog" .); then
    echo "oracle: seed $seed: the generated program does not build (a generator bug); reproduce with: $repro"
    return 1
  fi
  echo "oracle: seed $seed: generated and built $count functions for $arch in $(elapsed "$t") s"
  # One tracer per hundred functions (F0100-F0199, ...): clang takes far longer on one large file
  # than on many small ones, and two chunks build at once.
  local chunks=() c pids=() failed=0
  for c in $(cut -d' ' -f1 "$dir/src/chunks.txt" | sort -u); do chunks+=("$c"); done
  line_chunks=" ${chunks[*]:0:$lines} " # read by chunk
  t=$(now)
  for c in "${chunks[@]}"; do
    if [ ${#pids[@]} -ge 2 ]; then
      wait "${pids[0]}" || failed=1
      pids=("${pids[@]:1}")
    fi
    chunk "$dir" "$c" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  if [ $failed != 0 ]; then
    echo "oracle: seed $seed: the test itself failed (above); reproduce with: $repro"
    return 1
  fi
  if [ "$arch" = arm64 ]; then
    in_vm "$dir" "${chunks[@]}" || return $?
  fi
  echo "oracle: seed $seed: ${#chunks[@]} chunks built and traced in $(elapsed "$t") s"
  local dirs=()
  for c in "${chunks[@]}"; do dirs+=("$dir/c$c"); done
  # 386's window (stack_bytes below) is larger than any stack the program makes, and ends at the
  # goroutine's stack's end: a stack it cuts short is a bug.
  local strict=()
  [ "$arch" != 386 ] || strict=(-window-holds-stacks)
  if ! "$work/compare" -meta "$dir/src/meta.json" -repro "$repro" "${strict[@]}" "${dirs[@]}" >"$dir/compare.txt"; then
    cat "$dir/compare.txt"
    # A fault is the tracer saying it could not read a value, never a wrong one. A read weave
    # computes wrongly faults on every run; bpf_probe_read_user can also fail once on memory the
    # kernel has just made absent (it may not fault pages in). So when every mismatch is a fault,
    # the chunks are traced once more, and only faults that come back fail the test.
    local kinds
    kinds=$(sed -n '/^oracle: mismatches, by kind:/,/^oracle: the first/p' "$dir/compare.txt" | grep '^  ' | awk '{print $1}' | sort -u)
    [ "$kinds" = fault ] && [ "$arch" != arm64 ] || return 1
    echo "oracle: seed $seed: every mismatch is a fault; tracing the chunks again to tell a transient one"
    for c in "${chunks[@]}"; do chunk "$dir" "$c"; done
    "$work/compare" -meta "$dir/src/meta.json" -repro "$repro" "${strict[@]}" "${dirs[@]}" || return 1
    echo "oracle: seed $seed: the faults above did not come back in the second run: transient"
  else
    cat "$dir/compare.txt"
  fi
  if ((lines > 0)); then
    # The line comparison is not blind: one parameter changed by 1 is exactly one mismatch.
    local mutated
    mutated=$("$work/compare" -meta "$dir/src/meta.json" -mutate-line "${strict[@]}" "${dirs[@]}" | grep -c '\] wrong value at a line' || true)
    if [ "$mutated" != 1 ]; then
      echo "oracle: seed $seed: one line value changed by 1 gave $mutated mismatches, not 1: the line comparison is blind"
      return 1
    fi
    echo "oracle: seed $seed: one line value changed by 1 is one mismatch"
  fi
  ((delve > 0)) && [ "$arch" != arm64 ] || return 0 # Delve reads the program on this host
  # A second, independent oracle over the same calls: Delve reads each argument from DWARF in a run
  # of its own (tests/delve/delve_oracle.h says what it skips and why, and counts it).
  local oracle=$build/tests/delve-oracle n=0 rc disagree=0
  [ -x "$oracle" ] || { echo "oracle: $oracle is missing: build the tests"; return 1; }
  for c in "${chunks[@]:0:$delve}"; do
    rc=0
    "$oracle" --manifest "$dir/c$c/out/probes.json" --events "$dir/c$c/events.jsonl" -- \
      "$dir/prog" "$dir/c$c/delve-truth.jsonl" >"$dir/c$c/delve.txt" 2>&1 || rc=$?
    sed "s/^/oracle: chunk $c: /" "$dir/c$c/delve.txt" | grep -E "delve oracle:|skipped|MISMATCH|cannot|dlv" || true
    case $rc in
      0) n=$((n + 1)) ;;
      # compare (above) has already found every one of the tracer's values equal to what the program
      # itself recorded: where Delve differs, Delve's reading of DWARF differs from the program too.
      1) n=$((n + 1)); disagree=$((disagree + $(grep -c MISMATCH "$dir/c$c/delve.txt"))) ;;
      77) echo "oracle: Delve comparison skipped: $(tail -1 "$dir/c$c/delve.txt")"; return 0 ;;
      *) echo "oracle: seed $seed: the Delve run failed (chunk $c, above); reproduce with: $repro --delve $delve"; return 1 ;;
    esac
  done
  echo "oracle: seed $seed: Delve compared $n chunks; it reads $disagree values differently from both the"
  echo "oracle: program's own record and the tracer (listed above: DWARF or Delve is wrong there)"
}

# chunk DIR PP: build the tracer of the functions numbered PP00-PP99 and trace one run of the program.
chunk() {
  local dir=$1 c=$2 status=0 p
  local d=$dir/c$c
  mkdir -p "$d"
  echo "$c" >"$d/prefix"
  {
    echo "# The generated functions numbered ${c}00-${c}99: all arguments at entry, all results at every"
    echo "# RET, the stack at entry (the architecture's default mode). The limits are above what the"
    echo "# generator makes (strings of at most 40 bytes, at most 6 elements, 6 frames), so values are whole."
    echo "probes:"
    # 386 keeps no frame pointers: its stacks come from a window, here the largest, since main's
    # generated callers have frames of several KiB (a stack the window cuts short says so).
    local window=""
    [ "$arch" != 386 ] || window=", stack_bytes: 65536"
    for p in $(grep "^$c " "$dir/src/chunks.txt" | cut -d' ' -f2); do
      echo "  - {function: '$p', args: all, return: true, stack: 12$window}"
    done
    # The line where each function of the chunk starts printing its parameters (gen's lines.txt),
    # read with DWARF's location lists at the line's PCs (compare matches each line event with
    # the entry before it, of the same function and goroutine).
    if [[ $line_chunks == *" $c "* ]]; then
      local key line
      while read -r key line; do
        [[ $key =~ ^main\.\(?\*?(F|G|T|GT)([0-9][0-9])[0-9][0-9] ]] && [ "${BASH_REMATCH[2]}" = "$c" ] || continue
        echo "  - {name: 'line-$line', line: 'oracle.test/prog/main.go:$line', locals: all}"
      done <"$dir/src/lines.txt"
    fi
    echo "options: {string_max: 64, slice_max: 8, max_functions: 100000}"
  } >"$d/spec.yaml"
  # A chunk that cannot be traced is written down in "failed", and compare counts each of its
  # functions as a mismatch; the other chunks are still compared.
  if ! WEAVE_RUNTIME=$runtime "$weave" build "$d/spec.yaml" "$dir/prog" -o "$d/out" 2>"$d/weave.err"; then
    echo "weave build failed: $(grep -m1 error "$d/weave.err" || tail -1 "$d/weave.err")" >"$d/failed"
    return 0
  fi
  [ "$arch" != arm64 ] || return 0 # traced in the VM, by in_vm
  "$d/out/tracer" --format json --no-summary -- "$dir/prog" "$d/truth.jsonl" >"$d/events.jsonl" 2>"$d/tracer.err" || status=$?
  traced "$d" "$status"
}

# traced D STATUS: what a chunk's run left, checked the same way wherever it ran.
traced() {
  local d=$1 status=$2
  if [ "$status" != 0 ]; then
    echo "the tracer or the program failed (exit $status): $(grep -m1 -v ' events, ' "$d/tracer.err")" >"$d/failed"
    return 0
  fi
  # Lost events show up as calls without events; say where they went.
  grep 'lost' "$d/tracer.err" | grep -v ', 0 lost' || true
}

# in_vm DIR CHUNK...: one qemu boot runs every chunk's tracer on the program, one after another
# (each bounded), and their outputs come back into the chunks' directories as on amd64.
in_vm() {
  local dir=$1 c rc=0
  shift
  local puts=(--put "w/prog=$dir/prog") script=$dir/vm/script.sh
  rm -rf "$dir/vm"
  mkdir -p "$dir/vm/out"
  : >"$script"
  for c in "$@"; do
    [ -e "$dir/c$c/failed" ] && continue
    puts+=(--put "w/tracer-$c=$dir/c$c/out/tracer")
    echo "timeout -s KILL 300 ./tracer-$c --format json --no-summary -- ./prog /out/$c.truth >/out/$c.events 2>/out/$c.err; echo \$? >/out/$c.rc" >>"$script"
  done
  "$build/tests/arm64-vm" --work "$dir/vm" "${puts[@]}" --script "$script" --out "$dir/vm/out" --timeout 1500 || rc=$?
  case $rc in
    0) ;;
    77) echo "oracle: skipped: the arm64 VM cannot boot here"; return 77 ;;
    *) echo "oracle: the arm64 VM failed (above)"; return 1 ;;
  esac
  for c in "$@"; do
    [ -e "$dir/c$c/failed" ] && continue
    local out=$dir/vm/out
    [ -e "$out/$c.rc" ] || { echo "no result from the VM" >"$dir/c$c/failed"; continue; }
    mv "$out/$c.truth" "$dir/c$c/truth.jsonl" 2>/dev/null || : >"$dir/c$c/truth.jsonl"
    mv "$out/$c.events" "$dir/c$c/events.jsonl"
    mv "$out/$c.err" "$dir/c$c/tracer.err"
    traced "$dir/c$c" "$(cat "$out/$c.rc")"
  done
}

case $seeds in
  *-*) list=$(seq "${seeds%-*}" "${seeds#*-}") ;;
  *) list=${seeds//,/ } ;;
esac
failed=0
for s in $list; do
  rc=0
  one "$s" || rc=$?
  [ $rc != 77 ] || exit 77
  [ $rc = 0 ] || failed=1
  # A seed with no mismatch leaves nothing to look at but its program and tracers (hundreds of MB
  # over the suite): they go, unless WEAVE_KEEP_TMP=1. A failing seed's directory stays.
  if [ $rc = 0 ] && [ -z "${WEAVE_KEEP_TMP:-}" ]; then
    rm -rf "$work/$arch-$s-$count${omit:+-omit-$omit}"
  fi
done
exit $failed
