#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the whole test suite (unit, golden, end to end), then
# the sanitizer and fuzzing stage (scripts/sanitize.sh). Arguments go to ctest and select part of
# the suite, and then the stage is left out, as with WEAVE_SKIP_SANITIZE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
# A disk that fills halfway through shows up as dozens of unrelated failures: say so first. From
# nothing the run needs about 9 GB of toolchains and module caches and 6 GB of build tree.
free_gb=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "${free_gb:-0}" -lt 15 ]; then
  echo "scripts/test.sh: warning: $free_gb GB free here; a run from nothing needs about 15 GB" >&2
fi
# While weave compiles, the toolchains and modules the suite's setup steps need are downloaded
# (scripts/prefetch.sh): on a machine without caches that is minutes of waiting on the network
# taken off the run. Left out when only part of the suite is asked for.
prefetch="" builds=""
if [ $# -eq 0 ] && [ -z "${WEAVE_NO_PREFETCH:-}" ]; then
  mkdir -p build
  scripts/prefetch.sh build/prefetch.log &
  prefetch=$!
  # The suite's longest builds, the OTLP collector the fleet tests send spans to (about 7 min of
  # go build from nothing, tests/fleet/collector.sh) and then the real services (4 min,
  # tests/services/build.sh), start now at idle priority (SCHED_IDLE: only cycles that installing
  # and compiling weave leave unused, during apt's downloads most of them) and go on beside the
  # suite. The tests run the same scripts, which wait on these builds' locks or find them done.
  if command -v chrt >/dev/null 2>&1; then
    setsid chrt --idle 0 sh -c 'tests/fleet/collector.sh; tests/services/build.sh && tests/services/plugins/build.sh' \
      >build/early-builds.log 2>&1 &
    builds=$!
  fi
fi
scripts/build.sh
if [ -n "$prefetch" ]; then
  wait "$prefetch" || true
  cat build/prefetch.log
fi
# The sanitizer stage's build (about 4 minutes of compiling from nothing) runs beside the suite at
# idle priority (SCHED_IDLE: it gets a core only when no test wants it; the suite's tests wait on
# tracers, processes and the network much of the time). The stage then finds it built, or builds
# what is left and reports any error itself.
sanitize=$([ $# -eq 0 ] && [ -z "${WEAVE_SKIP_SANITIZE:-}" ] && echo 1 || true)
early=""
if [ -n "$sanitize" ] && command -v clang++-14 >/dev/null 2>&1; then
  setsid chrt --idle 0 nice -n 19 scripts/sanitize.sh --build-only >build/sanitize-build.log 2>&1 &
  early=$!
fi
if [ -n "$builds" ]; then
  # From idle priority to the ordinary class: a test waiting on one of these builds must not wait on
  # a build that only gets the cycles the other tests leave. The collector's go build keeps
  # collector.sh's nice 10 (which SCHED_IDLE ignored), as when the fleet test builds it; processes
  # started from now on inherit the class.
  for pid in $(pgrep -g "$builds" 2>/dev/null); do
    chrt --other -a -p 0 "$pid" 2>/dev/null || true
  done
fi
status=0
ctest --test-dir build --output-on-failure -j 2 "$@" || status=$?
if [ -n "$builds" ]; then
  kill -- -"$builds" 2>/dev/null || true # nothing left to stop when their tests ran
  wait "$builds" 2>/dev/null || true
fi
if [ "$status" -ne 0 ]; then
  [ -n "$early" ] && { kill -- -"$early" 2>/dev/null || true; } # its own process group (setsid)
  exit "$status"
fi
if [ -n "$early" ]; then
  wait "$early" || true
  tail -n 1 build/sanitize-build.log
fi
if [ -n "$sanitize" ]; then
  scripts/sanitize.sh
fi
