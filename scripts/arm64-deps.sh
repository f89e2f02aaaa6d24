#!/usr/bin/env bash
# Fetches what the arm64 tracer runtime and its emulated test need, from Debian's packages only:
#  - on the host: qemu-system-arm (qemu-system-aarch64) and g++-aarch64-linux-gnu;
#  - into a cache: a sysroot of arm64 static libraries and headers (libbpf, libelf, libdw with the
#    compressors its static archive needs: zlib, zstd, lzma, bzip2; and the header-only nlohmann-json,
#    fmt, CLI11) that CMake cross-builds weave-tracer-arm64 against, plus
#    Debian's arm64 kernel (its vmlinuz is an uncompressed Image qemu boots directly) and
#    busybox-static:arm64 for the test VM's initramfs.
# The arm64 packages are `apt-get download`ed and unpacked with `dpkg-deb -x`, never installed:
# installing libbpf-dev:arm64 with apt would upgrade a dozen amd64 packages to keep versions in step.
#
# Cache: $WEAVE_ARM64_CACHE, default /var/cache/weave/arm64 (CMake's WEAVE_ARM64_CACHE is the same).
# Idempotent: a complete cache is only checked. Its stamp records the package list it was made from, so
# a cache made from an older list (say, before libdw was added) is fetched again. Exit 0 when the cache is complete; otherwise it says
# what failed and exits 1 (scripts/install-deps.sh then warns that the arm64 tests will be skipped).
set -euo pipefail

cache=${WEAVE_ARM64_CACHE:-/var/cache/weave/arm64}
stamp=$cache/complete
# The kernel is the one Debian's linux-image-arm64 meta package names; pinning it here would break
# when the archive moves on to the next ABI, and any 6.1 kernel of bookworm does for the test.
sysroot_packages=(libbpf-dev libelf-dev libdw-dev zlib1g-dev libzstd-dev liblzma-dev libbz2-dev
  nlohmann-json3-dev libfmt-dev libcli11-dev)
key="sysroot: ${sysroot_packages[*]}"

if [ -f "$stamp" ] && [ "$(sed -n 2p "$stamp")" = "$key" ] && [ -f "$cache/vmlinuz" ] && [ -x "$cache/busybox" ] &&
   [ -f "$cache/sysroot/usr/lib/aarch64-linux-gnu/libbpf.a" ] &&
   command -v qemu-system-aarch64 >/dev/null && command -v aarch64-linux-gnu-g++ >/dev/null; then
  echo "arm64-deps: complete in $cache ($(head -1 "$stamp"))"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "arm64-deps: need root (apt-get, dpkg --add-architecture) to fetch the arm64 packages" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive

host_missing=()
for p in qemu-system-arm g++-aarch64-linux-gnu; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || host_missing+=("$p")
done
updated=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
fi
if ! apt-cache show busybox-static:arm64 >/dev/null 2>&1 || ((${#host_missing[@]})); then
  apt-get update -qq
  updated=1
fi
if ((${#host_missing[@]})); then
  echo "arm64-deps: installing ${host_missing[*]}"
  apt-get install -y -qq --no-install-recommends "${host_missing[@]}" >/dev/null
fi

kernel=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\):arm64$/\1/p' | head -1)
if [ -z "$kernel" ] && [ "$updated" = 0 ]; then
  apt-get update -qq
  kernel=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\):arm64$/\1/p' | head -1)
fi
if [ -z "$kernel" ]; then
  echo "arm64-deps: cannot resolve Debian's arm64 kernel package (linux-image-arm64:arm64)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weave-arm64-deps.XXXXXX")
trap 'rm -rf "$work"' EXIT
# apt's sandbox user must be able to write the download directory.
chmod 755 "$work"
pkgs=()
for p in "${sysroot_packages[@]}" busybox-static "$kernel"; do pkgs+=("$p:arm64"); done
# Header-only packages are Architecture: all; apt accepts :arm64 for them only when they are
# Multi-Arch: foreign, so ask for those by plain name.
for i in "${!pkgs[@]}"; do
  case ${pkgs[$i]} in nlohmann-json3-dev:arm64 | libcli11-dev:arm64) pkgs[$i]=${pkgs[$i]%:arm64} ;; esac
done
echo "arm64-deps: downloading ${pkgs[*]}"
(cd "$work" && apt-get download -qq "${pkgs[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
for p in "${sysroot_packages[@]}" busybox-static "$kernel"; do
  ls "$work/${p}"_*.deb >/dev/null 2>&1 || { echo "arm64-deps: download of $p failed" >&2; exit 1; }
done

new=$cache.new.$$
rm -rf "$new"
mkdir -p "$new/sysroot" "$work/bb" "$work/kernel"
for p in "${sysroot_packages[@]}"; do dpkg-deb -x "$work/${p}"_*.deb "$new/sysroot"; done
dpkg-deb -x "$work"/busybox-static_*.deb "$work/bb"
install -m 755 "$work/bb/bin/busybox" "$new/busybox"
# Only the kernel image is kept (the 60 MB of modules are not needed: what the test uses is built in).
dpkg-deb --fsys-tarfile "$work/${kernel}"_*.deb | tar -x -C "$work/kernel" --wildcards './boot/vmlinuz-*'
install -m 644 "$work"/kernel/boot/vmlinuz-* "$new/vmlinuz"
printf '%s\n%s\n' "$kernel" "$key" > "$new/complete"
rm -rf "$cache"
mkdir -p "$(dirname "$cache")"
mv "$new" "$cache"
echo "arm64-deps: complete in $cache ($kernel)"
