#!/usr/bin/env bash
# Installs the dependencies and builds weave, the tracer runtime, the tests and the Go fixtures.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests # the suite's tools too: scripts/test.sh and CI run what this builds
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
