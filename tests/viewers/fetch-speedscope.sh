#!/bin/sh
# fetch-speedscope.sh VERSION — prints the directory of speedscope's static web app (its npm
# package's dist/release), fetching the package once.
#
# speedscope is the profile viewer the timeline and flame graph outputs are checked in
# (tests/e2e/test_viewers.cpp). Its npm package ships the built app; `npm pack` fetches the tarball
# and checks it against the registry's integrity hash. Nothing is installed and no install script
# runs: the tarball is unpacked into the cache, $XDG_CACHE_HOME/weave (else ~/.cache/weave), under
# speedscope-VERSION/. npm's own cache is kept there too.
#
# Exit status: 0 and the directory on stdout; 77 (ctest's "skipped") when npm is missing or the
# registry cannot be reached; 1 for anything else.
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 VERSION" >&2
  exit 1
fi
version=$1
case ${XDG_CACHE_HOME:-} in
  /*) cache=$XDG_CACHE_HOME/weave ;;
  *) cache=$HOME/.cache/weave ;;
esac
npm_cache=$cache/npm
app=$cache/speedscope-$version/package/dist/release
tarball=$npm_cache/speedscope-$version.tgz

if [ -s "$app/index.html" ]; then
  echo "$app"
  exit 0
fi
mkdir -p "$npm_cache"
if [ ! -s "$tarball" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "fetch-speedscope.sh: SKIPPED: npm is not installed, cannot fetch speedscope@$version" >&2
    exit 77
  fi
  log=$npm_cache/.npm-pack-$$.log
  # Short timeouts and one retry: an unreachable registry must fail fast, not after minutes.
  if ! npm pack "speedscope@$version" --pack-destination "$npm_cache" --cache "$npm_cache/_npm" \
      --fetch-retries=1 --fetch-timeout=30000 --fetch-retry-mintimeout=2000 \
      --fetch-retry-maxtimeout=5000 --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
    if grep -Eq 'E404|404 Not Found|No matching version|ETARGET' "$log"; then
      echo "fetch-speedscope.sh: speedscope@$version does not exist on the npm registry:" >&2
      cat "$log" >&2
      rm -f "$log"
      exit 1
    fi
    echo "fetch-speedscope.sh: SKIPPED: cannot reach the npm registry to fetch speedscope@$version:" >&2
    grep -v '^npm warn' "$log" | head -5 >&2 || true
    rm -f "$log"
    exit 77
  fi
  rm -f "$log"
  if [ ! -s "$tarball" ]; then
    echo "fetch-speedscope.sh: npm pack did not produce $tarball" >&2
    exit 1
  fi
fi

# Unpacked beside and renamed into place, so a concurrent run never sees half an app.
tmp=$cache/.speedscope-$version.$$
rm -rf "$tmp"
mkdir -p "$tmp"
if ! tar -xzf "$tarball" -C "$tmp" package/dist/release || [ ! -s "$tmp/package/dist/release/index.html" ]; then
  rm -rf "$tmp"
  echo "fetch-speedscope.sh: $tarball has no package/dist/release/index.html" >&2
  exit 1
fi
if ! mv -T "$tmp" "$cache/speedscope-$version" 2>/dev/null; then
  rm -rf "$tmp" # another run put it there first
fi
echo "$app"
