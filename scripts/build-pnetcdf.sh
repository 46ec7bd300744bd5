#!/usr/bin/env bash
# Build PnetCDF for another MPI than the one Debian builds it for (Open MPI 4.1): from Debian's own
# PnetCDF source package (1.12.3, fetched with apt by scripts/pnetcdf-source.sh into
# ~/.cache/dtf/pnetcdf-1.12.3-source), with that MPI's compiler wrappers, into PREFIX.
#
#   scripts/build-pnetcdf.sh PREFIX MPICC [MPIF90]
#   e.g. scripts/build-pnetcdf.sh ~/.cache/dtf/pnetcdf-mpich mpicc.mpich mpif90.mpich
#
# PREFIX gets include/, lib/ (shared libpnetcdf and lib/pkgconfig/pnetcdf.pc) and bin/ (ncmpidiff...).
# Cached: when PREFIX holds a build of the same source for the same `MPICC -show`, nothing is done.
# Without MPIF90 the Fortran interface is left out. Needs root (or sudo) the first time on a machine
# whose apt sources have no deb-src entry: it adds one for Debian's main archive
# (/etc/apt/sources.list.d/dtf-deb-src.sources) and installs autoconf, automake and libtool (Debian's
# source is a git snapshot without a configure script). Compiled with -O1 (a third faster to build
# than -O2; the tests and benchmarks that use it spend little time inside PnetCDF). About 35 s on 2
# cores for C only, 3 minutes with Fortran.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 PREFIX MPICC [MPIF90]" >&2; exit 2; }
prefix=$1 mpicc=$2 mpif90=${3:-}
version=1.12.3
command -v "$mpicc" >/dev/null || { echo "build-pnetcdf: MPI C compiler '$mpicc' not found" >&2; exit 1; }
stamp="pnetcdf $version; $("$mpicc" -show); ${mpif90:+$("$mpif90" -show)}"
if [ -f "$prefix/.dtf-build" ] && [ "$(cat "$prefix/.dtf-build")" = "$stamp" ]; then
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
need=()
for p in autoconf automake libtool m4; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "build-pnetcdf: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

srcdir="${XDG_CACHE_HOME:-$HOME/.cache}/dtf/pnetcdf-$version-source"
"$(dirname "$0")/pnetcdf-source.sh" "$srcdir"
work=$(mktemp -d /tmp/dtf-pnetcdf-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -a "$srcdir" "$work/pnetcdf-$version"   # built in a copy: autoreconf and configure write into the tree
cd "$work/pnetcdf-$version"
echo "build-pnetcdf: building PnetCDF $version with $mpicc${mpif90:+ and $mpif90} into $prefix"
autoreconf -fi >autoreconf.log 2>&1 || { tail -20 autoreconf.log >&2; exit 1; }
fortran=(--disable-fortran)
[ -z "$mpif90" ] || fortran=(MPIF77="$mpif90" MPIF90="$mpif90" FFLAGS=-O2 FCFLAGS=-O2)
./configure -q --prefix="$prefix" --enable-shared --disable-static --disable-cxx MPICC="$mpicc" \
  CFLAGS="-O1" --disable-dependency-tracking "${fortran[@]}" >configure.log 2>&1 || { tail -30 configure.log >&2; exit 1; }
make -s -j"$(nproc)" >make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
rm -rf "$prefix"
make -s install >install.log 2>&1 || { tail -30 install.log >&2; exit 1; }
echo "$stamp" >"$prefix/.dtf-build"
echo "build-pnetcdf: done"
