#!/usr/bin/env bash
# The main job: build weave, build the example Go program, generate its tracer from the example
# spec, then run the program under the tracer and show the events.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
echo "== weave examples/hello/spec.yaml build/fixtures/hello"
build/weave examples/hello/spec.yaml build/fixtures/hello -o build/hello-out
echo "== build/hello-out/tracer -- build/fixtures/hello"
build/hello-out/tracer -- build/fixtures/hello
