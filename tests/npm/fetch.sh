#!/bin/sh
# fetch.sh NAME@VERSION DEST_DIR — puts the esbuild executable of an npm package at DEST_DIR/esbuild.
#
# The pclntab tests (tests/npm/test_npm_binaries.cpp) use real third-party Go binaries built with Go
# versions this machine cannot build: esbuild's release packages on the npm registry (the only
# registry besides Debian's reachable here). Each package is fetched once with `npm pack`, which
# checks the tarball against the registry's integrity hash, into a cache that git ignores:
# $WEAVE_NPM_CACHE, else build/npm-cache in the checkout. npm's own cache is kept there too.
#
# Exit status: 0 and the binary's path on stdout; 77 (ctest's "skipped") when the registry cannot be
# reached; 1 for anything else (bad arguments, unknown package, no bin/esbuild in the tarball).
set -eu

if [ $# -ne 2 ]; then
  echo "usage: $0 NAME@VERSION DEST_DIR" >&2
  exit 1
fi
spec=$1
dest=$2
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEAVE_NPM_CACHE:-$here/../../build/npm-cache}

case $spec in
  *@*) ;;
  *) echo "fetch.sh: '$spec' is not NAME@VERSION" >&2; exit 1 ;;
esac

# npm names the tarball after the package: "@esbuild/linux-x64@0.17.19" -> esbuild-linux-x64-0.17.19.tgz
name=${spec%@*}
version=${spec##*@}
tarball=$(printf '%s' "$name" | sed -e 's/^@//' -e 's#/#-#')-$version.tgz

mkdir -p "$cache" "$dest"
if [ ! -s "$cache/$tarball" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "fetch.sh: SKIPPED: npm is not installed, cannot fetch $spec" >&2
    exit 77
  fi
  log=$cache/.npm-pack-$$.log
  # Short timeouts and one retry: an unreachable registry must fail fast, not after minutes.
  if ! npm pack "$spec" --pack-destination "$cache" --cache "$cache/_npm" \
      --fetch-retries=1 --fetch-timeout=30000 --fetch-retry-mintimeout=2000 \
      --fetch-retry-maxtimeout=5000 --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
    if grep -Eq 'E404|404 Not Found|No matching version|ETARGET' "$log"; then
      echo "fetch.sh: $spec does not exist on the npm registry:" >&2
      cat "$log" >&2
      rm -f "$log"
      exit 1
    fi
    echo "fetch.sh: SKIPPED: cannot reach the npm registry to fetch $spec:" >&2
    grep -v '^npm warn' "$log" | head -5 >&2 || true
    rm -f "$log"
    exit 77
  fi
  rm -f "$log"
  if [ ! -s "$cache/$tarball" ]; then
    echo "fetch.sh: npm pack did not produce $cache/$tarball" >&2
    exit 1
  fi
fi

tmp=$dest/.esbuild.$$
if ! tar -xzOf "$cache/$tarball" package/bin/esbuild >"$tmp" 2>/dev/null || [ ! -s "$tmp" ]; then
  rm -f "$tmp"
  echo "fetch.sh: $cache/$tarball has no package/bin/esbuild" >&2
  exit 1
fi
chmod 755 "$tmp"
mv -f "$tmp" "$dest/esbuild"
echo "$dest/esbuild"
