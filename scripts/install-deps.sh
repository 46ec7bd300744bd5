#!/usr/bin/env bash
# Install what dtf needs, by Debian package name. Idempotent: prints nothing and changes nothing
# when every package is present. Needs root (or sudo) only when something is missing.
#   install-deps.sh            everything: the library's and the developer's (tests, demo, benchmarks)
#   install-deps.sh --runtime  what building and using the library needs: a compiler, CMake, MPI,
#                              PnetCDF, Python 3 (dtfrun); `make install` asks for this only
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config gfortran
  libopenmpi-dev openmpi-bin
  libpnetcdf-dev pnetcdf-bin
  python3
)
if [ "${1:-}" != "--runtime" ]; then
  packages+=(
    python3-matplotlib python3-pip
    clang
    iproute2
    valgrind
    slurm-wlm munge
    mpich libmpich-dev autoconf automake libtool
    libnetcdf-pnetcdf-dev libhdf5-openmpi-dev python3-venv python3-dev netcdf-bin
  )
fi
if ! command -v dpkg-query >/dev/null; then
  echo "install-deps: not a Debian system: install by hand a C/C++/Fortran compiler, CMake, MPI and PnetCDF" \
       "(dtf's README lists them); nothing installed" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
echo "install-deps: done"
