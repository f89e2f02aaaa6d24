#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the whole test suite (unit, golden, end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j 2 "$@"
