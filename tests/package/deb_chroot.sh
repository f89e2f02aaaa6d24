#!/usr/bin/env bash
# The Debian package on a clean machine: builds weave_*.deb with CPack, installs it with
# `apt install ./weave_*.deb` into a fresh Debian 12 root (debootstrap --variant=minbase, nothing
# else), and there runs the README's first lines verbatim with the installed weave on the example:
#   weave spec.yaml ./bin && weave-out/tracer -- ./bin
# The traced arguments must be the ones the program printed, value for value. apt pulls in exactly
# what the package declares (clang, the shared libraries dpkg-shlibdeps found), so a missing
# dependency fails here.
#
# usage: deb_chroot.sh BUILD_DIR SOURCE_DIR   (as root; ctest runs it)
# The root is made once into $WEAVE_CACHE/chroot (default ~/.cache/weave/chroot) and never changed:
# each run works on an overlay of it (or a copy), which is thrown away. The packages apt fetches are
# kept there too, so later runs need no network. Exit 77 (skipped) without root, debootstrap or a
# reachable Debian mirror.
set -euo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
t0=$(date +%s%N)
say() {
  local tenths=$((($(date +%s%N) - t0) / 100000000))
  printf 'deb_chroot: [%4d.%d s] %s\n' $((tenths / 10)) $((tenths % 10)) "$*"
}
skip() {
  echo "SKIPPED: $*"
  exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root: debootstrap, chroot, mounts and BPF"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (scripts/install-deps.sh installs it)"
command -v dpkg-deb >/dev/null || skip "dpkg-deb is missing: not a Debian system"
for file in weave weave-tracer man/weave.1.gz fixtures/hello; do
  [ -e "$build/$file" ] || { echo "deb_chroot: $build/$file is not built (cmake --build $build)" >&2; exit 1; }
done

mirror=${WEAVE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${WEAVE_CACHE:-${HOME:-/root}/.cache/weave}/chroot
base=$cache/bookworm-minbase
archives=$cache/apt-archives
mkdir -p "$cache" "$archives/partial"

# A run killed outright (ctest's timeout sends SIGKILL: no trap runs) leaves its mounts and files:
# the next run removes those of processes that are gone.
for stale in "$build"/deb-chroot.*; do
  [ -d "$stale" ] || continue
  kill -0 "${stale##*.}" 2>/dev/null && continue
  grep -o " $stale/[^ ]*" /proc/mounts | sort -r | while read -r point; do umount -l "$point" 2>/dev/null || true; done
  grep -q " $stale/" /proc/mounts || rm -rf --one-file-system "$stale"
done

work=$build/deb-chroot.$$
mkdir "$work"
root=$work/root
mounts=() # mount points to undo, in order

cleanup() {
  local status=$?
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[i]}" 2>/dev/null || umount -lR "${mounts[i]}" 2>/dev/null || true
  done
  # Never delete through a mount that is still there (the host's /dev or /sys bound inside).
  if grep -q " $work/" /proc/mounts; then
    echo "deb_chroot: mounts under $work remain; leaving it in place" >&2
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "cpack -G DEB"
(cd "$work" && "${WEAVE_CPACK:-cpack}" -G DEB --config "$build/CPackConfig.cmake" -B "$work/cpack" \
  -D CPACK_OUTPUT_FILE_PREFIX="$work/pkg" >"$work/cpack.log" 2>&1) || {
  cat "$work/cpack.log" >&2
  exit 1
}
deb=$(ls "$work"/pkg/weave_*.deb)
say "$(basename "$deb"): $(stat -c %s "$deb") bytes; Depends: $(dpkg-deb -f "$deb" Depends)"

# The clean root, made once. A lock keeps two runs from making it at the same time.
if [ ! -e "$base/.weave-complete" ]; then
  exec 9>"$cache/.lock"
  flock 9
  if [ ! -e "$base/.weave-complete" ]; then
    wget -q -T 20 -t 1 -O /dev/null "$mirror/dists/bookworm/Release" ||
      skip "the Debian mirror $mirror cannot be reached: no root to install into"
    say "debootstrap --variant=minbase bookworm (once, into $base)"
    rm -rf --one-file-system "$base.tmp"
    debootstrap --variant=minbase bookworm "$base.tmp" "$mirror" >"$work/debootstrap.log" 2>&1 || {
      tail -20 "$work/debootstrap.log" >&2
      exit 1
    }
    # The package lists, so a run can install without fetching them again.
    cp /etc/resolv.conf "$base.tmp/etc/resolv.conf"
    chroot "$base.tmp" apt-get update -qq
    rm -rf --one-file-system "$base"
    mv "$base.tmp" "$base"
    touch "$base/.weave-complete"
    say "root ready: $(du -sh "$base" | cut -f1)"
  fi
  exec 9>&-
fi

# This run's root: an overlay over the cached one (a copy where overlayfs cannot be mounted).
mkdir -p "$root" "$work/upper" "$work/overlay-work"
if mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/upper,workdir=$work/overlay-work" "$root" 2>/dev/null; then
  mounts+=("$root")
  say "root: overlay over $base"
else
  cp -a "$base/." "$root/"
  say "root: a copy of $base (overlayfs unavailable)"
fi
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys" && mounts+=("$root/sys")
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" && mounts+=("$root/dev")
mount --bind "$archives" "$root/var/cache/apt/archives" && mounts+=("$root/var/cache/apt/archives")
cp /etc/resolv.conf "$root/etc/resolv.conf"

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
  DEBIAN_FRONTEND=noninteractive "$@"; }

cp "$deb" "$root/tmp/"
say "apt install ./$(basename "$deb")"
# unsafe-io: dpkg skips its fsyncs, which take most of the time, in a root thrown away afterwards.
install="cd /tmp && apt-get install -y -q -o Dpkg::Options::=--force-unsafe-io ./$(basename "$deb")"
if ! in_root /bin/sh -c "$install" >"$work/apt.log" 2>&1; then
  # The cached lists are older than the mirror (a point release moved a version): refresh them.
  say "apt-get update (the cached package lists are stale)"
  in_root apt-get update -qq >>"$work/apt.log" 2>&1 || skip "apt-get update failed: the Debian mirror cannot be reached"
  in_root /bin/sh -c "$install" >>"$work/apt.log" 2>&1 || {
    tail -30 "$work/apt.log" >&2
    exit 1
  }
fi
say "$(grep -c '^Setting up ' "$work/apt.log") packages set up"

# What the package installed, where the README and the man pages say.
for file in /usr/bin/weave /usr/libexec/weave/weave-tracer /usr/share/man/man1/weave.1.gz \
  /usr/share/man/man1/weave-tracer.1.gz /usr/share/man/man5/weave-spec.5.gz \
  /usr/share/bash-completion/completions/weave /usr/share/zsh/vendor-completions/_weave \
  /usr/share/fish/vendor_completions.d/weave.fish /usr/share/weave/weave.schema.json \
  /usr/share/doc/weave/examples/hello/spec.yaml; do
  [ -e "$root$file" ] || { echo "deb_chroot: the package did not install $file" >&2; exit 1; }
done
in_root weave --version

# The README's first lines, verbatim, on the example: its spec from the package, its binary built
# here with the pinned Go (the root has no Go).
mkdir -p "$root/root/demo"
cp "$build/fixtures/hello" "$root/root/demo/bin"
say "weave spec.yaml ./bin && weave-out/tracer -- ./bin"
in_root /bin/sh -c 'cd /root/demo && cp /usr/share/doc/weave/examples/hello/spec.yaml . &&
  weave spec.yaml ./bin && weave-out/tracer -- ./bin' >"$work/out" 2>"$work/err" || {
  cat "$work/out" "$work/err" >&2
  exit 1
}
cat "$work/out"
# The program prints "hello: Handle(ARGS)" before each call; the tracer "... main.(*Server).Handle(ARGS)".
printed=$(sed -n 's/^hello: Handle(\(.*\))$/\1/p' "$work/out")
traced=$(sed -n 's/^.* goid=[0-9]* main\.(\*Server)\.Handle(\(.*\))$/\1/p' "$work/out")
if [ "$(printf '%s\n' "$printed" | grep -c .)" != 3 ] || [ "$printed" != "$traced" ]; then
  echo "deb_chroot: the traced arguments differ from what the program printed" >&2
  diff <(echo "$printed") <(echo "$traced") >&2 || true
  cat "$work/err" >&2
  exit 1
fi
say "ok: 3 calls, 12 values traced as the program printed them"
