#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the whole test suite (unit, golden, end to end), then
# the sanitizer and fuzzing stage (scripts/sanitize.sh). Arguments go to ctest and select part of
# the suite, and then the stage is left out, as with WEAVE_SKIP_SANITIZE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
# While weave compiles, the toolchains and modules the suite's setup steps need are downloaded
# (scripts/prefetch.sh): on a machine without caches that is minutes of waiting on the network
# taken off the run. Left out when only part of the suite is asked for.
prefetch=""
if [ $# -eq 0 ] && [ -z "${WEAVE_NO_PREFETCH:-}" ]; then
  mkdir -p build
  scripts/prefetch.sh build/prefetch.log &
  prefetch=$!
fi
scripts/build.sh
if [ -n "$prefetch" ]; then
  wait "$prefetch" || true
  cat build/prefetch.log
fi
ctest --test-dir build --output-on-failure -j 2 "$@"
if [ $# -eq 0 ] && [ -z "${WEAVE_SKIP_SANITIZE:-}" ]; then
  scripts/sanitize.sh
fi
