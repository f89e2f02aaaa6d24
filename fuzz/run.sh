#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from its seed corpus (the ctest tests of
# fuzz/CMakeLists.txt, and longer campaigns by hand). Fails on any crash, sanitizer report, leak,
# timeout (10 s per input) or escaping exception; the input at fault is kept in WORKDIR/artifacts.
#
#   fuzz/run.sh TARGET FUZZER WORKDIR SECONDS [libFuzzer options...]
#
# Seeds: checked in for the text parsers (fuzz/corpus/TARGET, and tests/specs for the spec); for
# the binary readers they are the Go fixtures of the build (megabytes each, so not checked in).
# Inputs libFuzzer finds interesting accumulate in WORKDIR/corpus, so a later run starts from them.
set -euo pipefail
target=$1 fuzzer=$2 work=$3 seconds=$4
shift 4
src=${WEAVE_SOURCE_DIR:?}/fuzz
fixtures=${WEAVE_FIXTURE_DIR:?}
mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"

dirs=("$work/corpus")
# libFuzzer exits 77 on a crash by default, which ctest would take for a skip.
opts=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -print_final_stats=1 -error_exitcode=1 -timeout_exitcode=1
      -artifact_prefix="$work/artifacts/")
fixture_seeds() {
  for name in "$@"; do
    if [ ! -f "$fixtures/$name" ]; then
      echo "skipped: fixture $fixtures/$name is missing (build the fixtures target)"
      exit 77
    fi
    cp -f "$fixtures/$name" "$work/seeds/$name"
  done
  dirs+=("$work/seeds")
}
case $target in
spec)
  dirs+=("$src/corpus/spec" "$WEAVE_SOURCE_DIR/tests/specs")
  opts+=(-dict="$src/spec.dict" -max_len=4096) ;;
type_expr | capture_expr)
  dirs+=("$src/corpus/$target")
  opts+=(-max_len=512) ;;
http)
  # Responses (chunked, Content-Length, to the close, 1xx, hostile) and /metrics requests.
  dirs+=("$src/corpus/http")
  opts+=(-max_len=8192) ;;
binary)
  # Stripped, 32-bit, PIE and inline-tree layouts of .gopclntab; ELF notes and both build-info forms.
  fixture_seeds pcln_inline_stripped fixture_386 fixture_pie_stripped
  opts+=(-max_len=3000000) ;;
dwarf)
  fixture_seeds hello
  opts+=(-max_len=3000000) ;;
*)
  echo "unknown fuzz target $target" >&2
  exit 2 ;;
esac

echo "fuzzing $target for ${seconds}s: $fuzzer ${opts[*]} $* ${dirs[*]}"
"$fuzzer" "${opts[@]}" "$@" "${dirs[@]}"
