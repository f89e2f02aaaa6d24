#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the whole test suite (unit, golden, end to end), then
# the sanitizer and fuzzing stage (scripts/sanitize.sh). Arguments go to ctest and select part of
# the suite, and then the stage is left out, as with WEAVE_SKIP_SANITIZE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j 2 "$@"
if [ $# -eq 0 ] && [ -z "${WEAVE_SKIP_SANITIZE:-}" ]; then
  scripts/sanitize.sh
fi
