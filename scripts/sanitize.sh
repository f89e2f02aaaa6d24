#!/usr/bin/env bash
# CI's sanitizer and fuzzing stage (scripts/test.sh runs it after the main suite). Builds weave,
# the unit tests and the libFuzzer targets with clang 14 under AddressSanitizer and UBSan (the
# "asan" preset of CMakePresets.json, in build-asan/), then runs, with any sanitizer report fatal:
#   - every unit test;
#   - the end-to-end tests of bad input, outputs and `weave check` (e2e_test_hostile, _build,
#     _check): weave itself is sanitized there. The tracer runtime is not: it links with -static,
#     which ASan cannot, so the preset builds it unsanitized and it runs as usual;
#   - each fuzz target for WEAVE_FUZZ_SECONDS (default 20) from its seed corpus (fuzz/).
# Prints how long the stage took. Extra arguments go to ctest. With --build-only it configures and
# builds, and stops there: scripts/test.sh runs that at idle priority while the main suite runs, so
# the stage's build uses the cores the suite leaves idle and the stage itself then finds it done.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=
if [ "${1:-}" = --build-only ]; then
  build_only=1
  shift
fi
if ! command -v clang++-14 >/dev/null 2>&1; then
  echo "sanitize: SKIPPED: clang++-14 is missing (scripts/install-deps.sh installs it)"
  exit 0
fi
start=$(date +%s)
# The main build's Go cache, when there is one: the fixtures are then relinked, not recompiled.
gocache=${WEAVE_GOCACHE:-$PWD/build/gocache}
cmake --preset asan -DWEAVE_GOCACHE="$gocache" -DWEAVE_FUZZ_SECONDS="${WEAVE_FUZZ_SECONDS:-20}" >/dev/null
unit=()
for source in tests/unit/test_*.cpp; do
  unit+=("$(basename "$source" .cpp)")
done
e2e=(e2e_test_hostile e2e_test_build e2e_test_check)
cmake --build build-asan -j "$(nproc)" --target weave weave-tracer "${unit[@]}" "${e2e[@]}" fuzz_targets
built=$(date +%s)
if [ -n "$build_only" ]; then
  echo "sanitize: built in $((built - start)) s"
  exit 0
fi
# A sanitizer report exits 99 (the preset's ASAN_OPTIONS), never 1 or 3, which tests expect of weave
# on bad input. libstdc++'s std::regex recurses once per character it matches, and ASan's frames are
# larger: test_golden's comment-stripping regex overflows the default 8 MiB stack under ASan.
ulimit -s 1048576 2>/dev/null || ulimit -s unlimited
# ctest names a test "EXECUTABLE:CASE". The arm64 cases need weave-tracer-arm64, which this build
# leaves out (it is a cross build of its own, unsanitized anyway).
pattern="^($(IFS='|'; echo "${unit[*]}" "${e2e[*]}" | tr ' ' '|')):"
ctest --preset asan -j 2 -R "$pattern" -E "arm64" "$@"
tested=$(date +%s)
ctest --preset asan -j 2 -L fuzz "$@"
end=$(date +%s)
echo "sanitize: build $((built - start)) s, unit and e2e tests $((tested - built)) s," \
  "fuzzing $((end - tested)) s: $((end - start)) s in all"
