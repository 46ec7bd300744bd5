#!/usr/bin/env bash
# Fetch and unpack PnetCDF 1.12.3's source (Debian 12's source package, with apt) into DIR.
#
#   scripts/pnetcdf-source.sh DIR      e.g. scripts/pnetcdf-source.sh ~/.cache/dtf/pnetcdf-1.12.3-source
#
# DIR then holds the upstream tree (configure.ac, src/, examples/, ...). Cached: when DIR holds it
# already, nothing is done; concurrent callers wait for the first (a lock beside DIR). Needs root (or
# sudo) the first time on a machine whose apt sources have no deb-src entry: it adds one for Debian's
# main archive (/etc/apt/sources.list.d/dtf-deb-src.sources). Exits 1, saying why, when the source
# cannot be had (no network, no such package).
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1 version=1.12.3
stamp="pnetcdf $version (Debian source package)"
[ -f "$dir/.dtf-source" ] && [ "$(cat "$dir/.dtf-source")" = "$stamp" ] && exit 0

mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
[ -f "$dir/.dtf-source" ] && [ "$(cat "$dir/.dtf-source")" = "$stamp" ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v xz >/dev/null; then
  echo "pnetcdf-source: installing xz-utils"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq xz-utils >/dev/null
fi
work=$(mktemp -d "$dir.tmp-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get source --download-only pnetcdf >fetch.log 2>&1; then
  if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d; then
    # No deb-src entry: add one for the main archive, as the machine's deb entry names it.
    src=/etc/apt/sources.list.d/dtf-deb-src.sources
    uri=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
    suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
    printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' \
      "${uri:-http://deb.debian.org/debian}" "$suite" /usr/share/keyrings/debian-archive-keyring.gpg |
      $sudo tee "$src" >/dev/null
    echo "pnetcdf-source: added $src"
  fi
  echo "pnetcdf-source: apt-get update"
  $sudo apt-get update -qq || true
  apt-get source --download-only pnetcdf >fetch.log 2>&1 || {
    echo "pnetcdf-source: apt-get source pnetcdf failed:" >&2; tail -5 fetch.log >&2; exit 1; }
fi
tarball=$(ls pnetcdf_"$version".orig.tar.* 2>/dev/null | head -1)
[ -n "$tarball" ] || { echo "pnetcdf-source: Debian's pnetcdf source is not $version:" >&2; ls >&2; exit 1; }
tar xf "$tarball" --no-same-owner
echo "$stamp" >"pnetcdf-$version/.dtf-source"
rm -rf "$dir"
mv "pnetcdf-$version" "$dir"
echo "pnetcdf-source: PnetCDF $version's source in $dir"
