#!/usr/bin/env bash
# Installs everything weave needs to build and test, from Debian 12's packages only.
# Run as root on a fresh machine; on a machine that has them all it only checks.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config make   # toolchain
  clang llvm                                          # clang -target bpf compiles the probes
  libclang-rt-14-dev                                  # libFuzzer and the sanitizers' runtimes (fuzz/)
  libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev  # BPF loading, ELF and DWARF reading
  nlohmann-json3-dev libyaml-cpp-dev libkainjow-mustache-dev libcli11-dev libfmt-dev libzydis-dev
  doctest-dev                                         # unit tests
  golang-1.19                                         # the pinned toolchain of fixtures and goldens
  delve                                               # dlv: the second oracle (tests/delve), reads DWARF location lists
  util-linux                                          # setpriv, for the unprivileged-load test
  prometheus                                          # the fleet test scrapes the tracer's --metrics with it
  help2man go-md2man                                  # the man pages: weave(1), weave-tracer(1), weave-spec(5)
  file dpkg-dev                                       # cpack -G DEB: dpkg-shlibdeps finds the package's Depends
  debootstrap                                         # the package test installs the .deb into a fresh Debian root
  bash-completion zsh fish man-db groff-base          # the completion and man page tests run them
  curl                                                # the real-services test drives Caddy with it (tests/services)
  chromium                                            # headless, opens --perfetto/--folded in speedscope (e2e_test_viewers)
)

# npm fetches the real stripped Go binaries the esbuild tests trace (tests/npm/fetch.sh) and the
# speedscope viewer (tests/viewers/fetch-speedscope.sh, driven by Node); they skip with a message
# when the registry cannot be reached. Machines that already have Node.js and npm
# from elsewhere keep theirs: Debian's npm would conflict with another nodejs package.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(npm ca-certificates)
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

# arm64 under emulation: qemu, the cross compiler, and a cache of Debian's arm64 static libraries,
# kernel and busybox (scripts/arm64-deps.sh). Optional: without them weave-tracer-arm64 is not built
# and the arm64 VM tests skip (exit 77) saying what is missing.
if ! "$(dirname "$0")/arm64-deps.sh"; then
  echo "install-deps: the arm64 packages could not be fetched; the arm64 tests will be skipped" >&2
fi
