#!/usr/bin/env bash
# Installs what building and running weave needs, from Debian 12's packages only; with --tests also
# the test stack (the oracles, viewers, the package and VM tests' tools, the arm64 cross sysroot),
# as scripts/build.sh and scripts/test.sh ask. Run as root on a fresh machine; on a machine that has
# them all it only checks.
#   scripts/install-deps.sh           weave, its tracer runtime, man pages, the example
#   scripts/install-deps.sh --tests   and everything the test suite runs
set -euo pipefail

tests=
case "${1:-}" in
--tests) tests=1 ;;
"") ;;
-h | --help)
  sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
  ;;
*)
  echo "install-deps: unknown argument '$1' (--tests: also the test stack)" >&2
  exit 2
  ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config make   # toolchain
  clang llvm                                          # clang -target bpf compiles the probes
  libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev  # BPF loading, ELF and DWARF reading
  liblzma-dev libbz2-dev                              # libdw.a's decompressors, in the static tracer
  nlohmann-json3-dev libyaml-cpp-dev libkainjow-mustache-dev libcli11-dev libfmt-dev libzydis-dev
  doctest-dev                                         # unit tests (CMake looks for it always)
  golang-1.19                                         # the pinned toolchain of the example, fixtures and goldens
  help2man go-md2man                                  # the man pages: weave(1), weave-tracer(1), weave-spec(5)
  file dpkg-dev                                       # cpack -G DEB: dpkg-shlibdeps finds the package's Depends
)

test_packages=(
  libclang-rt-14-dev                                  # libFuzzer and the sanitizers' runtimes (fuzz/)
  delve                                               # dlv: the second oracle (tests/delve), reads DWARF location lists
  util-linux                                          # setpriv, for the unprivileged-load test
  prometheus                                          # the fleet test scrapes the tracer's --metrics with it
  bpftrace                                            # bench/ (run.sh, service.sh) measures weave against it side by side
  debootstrap                                         # the package test installs the .deb into a fresh Debian root
  bash-completion zsh fish man-db groff-base          # the completion and man page tests run them
  curl                                                # the real-services test drives Caddy with it (tests/services)
  chromium                                            # headless, opens --perfetto/--folded in speedscope (e2e_test_viewers)
  gcc-multilib                                        # gcc -m32 builds the 386 cgo fixture (C frames on 386, e2e_test_cgo)
)

if [ -n "$tests" ]; then
  packages+=("${test_packages[@]}")
  # npm fetches the real stripped Go binaries the esbuild tests trace (tests/npm/fetch.sh) and the
  # speedscope viewer (tests/viewers/fetch-speedscope.sh, driven by Node); they skip with a message
  # when the registry cannot be reached. Machines that already have Node.js and npm
  # from elsewhere keep theirs: Debian's npm would conflict with another nodejs package.
  if ! command -v npm >/dev/null 2>&1; then
    packages+=(npm ca-certificates)
  fi
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -z "$tests" ]; then
  echo "install-deps: weave's build and run dependencies are installed (the test stack: scripts/install-deps.sh --tests)"
  exit 0
fi

# arm64 under emulation: qemu, the cross compiler, and a cache of Debian's arm64 static libraries,
# kernel and busybox (scripts/arm64-deps.sh). Optional: without them weave-tracer-arm64 is not built
# and the arm64 VM tests skip (exit 77) saying what is missing.
if ! "$(dirname "$0")/arm64-deps.sh"; then
  echo "install-deps: the arm64 packages could not be fetched; the arm64 tests will be skipped" >&2
fi
