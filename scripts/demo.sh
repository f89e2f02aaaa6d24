#!/usr/bin/env bash
# The main job: build weave and its tracer runtime (only those, not the test suite), build the
# example Go program, generate its tracer from the example spec, then run the program under the
# tracer and show the events.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target weave weave-tracer
ninja -C build fixtures/hello >/dev/null # the example, built with the pinned Go like every fixture
echo "== weave examples/hello/spec.yaml build/fixtures/hello"
build/weave examples/hello/spec.yaml build/fixtures/hello -o build/hello-out
echo "== build/hello-out/tracer -- build/fixtures/hello"
build/hello-out/tracer -- build/fixtures/hello
