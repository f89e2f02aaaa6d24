#!/usr/bin/env bash
# line_locals.sh — how many of the values in scope at a source line DWARF locates at the line's PCs,
# measured with `weave funcs BIN --line FILE:LINE` over a sample of a package's lines: every STEP-th
# line of each .go file of SRC_DIR (tests and generated rewrite/opGen files left out), as PKG/FILE:LINE.
# Lines with no code are skipped. Prints the counts: PCs, values located, values unavailable by reason
# (numbers stripped so reasons group).
#
#   bench/line_locals.sh BIN SRC_DIR PKG [STEP]
#   e.g. bench/line_locals.sh ~/.cache/weave/compile/go1.26.11/compile_amd64 \
#          ~/.cache/weave/gomod/golang.org/toolchain@v0.0.1-go1.26.11.linux-amd64/src/cmd/compile/internal/ssa \
#          cmd/compile/internal/ssa 97
set -euo pipefail
bin=$1 src=$2 pkg=$3 step=${4:-100}
weave=${WEAVE:-$(dirname "$0")/../build/weave}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
lines=0 probed=0
for f in "$src"/*.go; do
  case $(basename "$f") in *_test.go | rewrite[A-Z0-9]*.go | opGen.go) continue ;; esac
  n=$(wc -l <"$f")
  for ((l = step / 2 + 1; l <= n; l += step)); do
    lines=$((lines + 1))
    if "$weave" funcs "$bin" --line "$pkg/$(basename "$f"):$l" >>"$out" 2>/dev/null; then
      probed=$((probed + 1))
    fi
  done
done
pcs=$(grep -c ' pc 0x' "$out" || true)
values=$(grep -c '^  ' "$out" || true)
unavailable=$(grep -c '^  .*: unavailable: ' "$out" || true)
echo "$lines lines sampled, $probed with code, $pcs PCs"
echo "$((values - unavailable)) of $values values located ($(( values ? 100 * (values - unavailable) / values : 0 ))%)"
grep '^  .*: unavailable: ' "$out" | sed -e 's/.*: unavailable: //' -e 's/0x[0-9a-f]*/N/g' -e 's/[0-9][0-9]*/N/g' |
  sort | uniq -c | sort -rn
