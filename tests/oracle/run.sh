#!/bin/bash
# The random-signature oracle: generate a Go program of COUNT functions with random signatures
# (tests/oracle/gen), build it, trace every function with args: all and return: true, and compare
# every value the tracer shows with what the program wrote it passed and returned
# (tests/oracle/compare). Exit 0: no mismatch; 1: mismatches (the seed and this command are
# printed); 77: cannot run here (not root: BPF and uprobes need it), which ctest reports as skipped.
#
#   tests/oracle/run.sh --seed 1 --count 2000 --arch amd64
#   tests/oracle/run.sh --seeds 1-5 --count 5000 --arch 386        # the longer run: several seeds
#
# Options: --build DIR (weave's build tree; default build/ beside this checkout), --go GO (default
# Debian's Go 1.19, the pinned toolchain), --omit generic,zerosize,float (leave a category out, for
# debugging only), --work DIR (where the program, tracer and outputs go).
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
while [ $# -gt 0 ]; do
  case $1 in
    --seed | --seeds) seeds=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --omit) omit=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --go) go=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case $arch in
  amd64 | 386) ;;
  *) echo "run.sh: --arch amd64 or 386 (the architectures this machine runs)" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
  echo "run.sh: skipped: tracing needs root (BPF, uprobes)"
  exit 77
fi
weave=$build/weave
for f in "$weave" "$build/weave-tracer" "$go"; do
  [ -x "$f" ] || { echo "run.sh: $f is missing: build weave and weave-tracer first" >&2; exit 2; }
done
work=${work:-$build/oracle}
export GOCACHE=${WEAVE_GOCACHE:-${GOCACHE:-$build/gocache}} GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off CGO_ENABLED=0
mkdir -p "$work"

# The generator and the comparator run on this machine, whatever the target.
(cd "$here" && GOARCH= "$go" build -o "$work/gen" ./gen)
(cd "$here" && GOARCH= "$go" build -o "$work/compare" ./compare)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# One seed: 0 on success, 1 on a mismatch or a failure of any stage.
one() {
  local seed=$1 dir t
  dir=$work/$arch-$seed-$count${omit:+-omit-$omit}
  local repro
  repro="tests/oracle/run.sh --seed $seed --count $count --arch $arch${omit:+ --omit $omit}"
  rm -rf "$dir"
  mkdir -p "$dir"
  t=$(now)
  if ! "$work/gen" -seed "$seed" -count "$count" -arch "$arch" ${omit:+-omit "$omit"} -o "$dir/src"; then
    echo "oracle: seed $seed: the generator failed; reproduce with: $repro"
    return 1
  fi
  if ! (cd "$dir/src" && GOARCH=$arch "$go" build -trimpath -buildvcs=false -o "$dir/prog" .); then
    echo "oracle: seed $seed: the generated program does not build (a generator bug); reproduce with: $repro"
    return 1
  fi
  echo "oracle: seed $seed: generated and built $count functions for $arch in $(elapsed "$t") s"
  cat >"$dir/spec.yaml" <<EOF
# Every generated function: all arguments at entry, all results at every RET. The limits are above
# what the generator makes (strings of at most 40 bytes, at most 6 elements), so values are whole.
probes:
  - function: 'main.*'
    exclude: [main.main, 'main.x*', 'main.(*x*', 'main.init*']
    args: all
    return: true
options: {string_max: 64, slice_max: 8, max_functions: 100000}
EOF
  t=$(now)
  if ! WEAVE_RUNTIME=$build/weave-tracer "$weave" build "$dir/spec.yaml" "$dir/prog" -o "$dir/out" 2>"$dir/weave.err"; then
    cat "$dir/weave.err"
    echo "oracle: seed $seed: weave build failed; reproduce with: $repro"
    return 1
  fi
  echo "oracle: seed $seed: weave build in $(elapsed "$t") s ($(grep -c '"function"' "$dir/out/probes.json" || true) probes)"
  t=$(now)
  local status=0
  "$dir/out/tracer" --format json --no-summary -- "$dir/prog" "$dir/truth.jsonl" >"$dir/events.jsonl" 2>"$dir/tracer.err" || status=$?
  if [ "$status" != 0 ]; then
    tail -20 "$dir/tracer.err"
    echo "oracle: seed $seed: the tracer or the program failed (exit $status); reproduce with: $repro"
    return 1
  fi
  if grep -q 'lost' "$dir/tracer.err" && ! grep -q ' 0 lost' "$dir/tracer.err"; then
    grep lost "$dir/tracer.err"
  fi
  echo "oracle: seed $seed: traced in $(elapsed "$t") s"
  "$work/compare" -truth "$dir/truth.jsonl" -events "$dir/events.jsonl" -manifest "$dir/out/probes.json" \
    -weave-stderr "$dir/weave.err" -meta "$dir/src/meta.json" -repro "$repro" || return 1
}

case $seeds in
  *-*) list=$(seq "${seeds%-*}" "${seeds#*-}") ;;
  *) list=${seeds//,/ } ;;
esac
failed=0
for s in $list; do
  one "$s" || failed=1
done
exit $failed
