#!/usr/bin/env bash
# Set up a Python virtual environment whose netCDF4 reads and writes netCDF files in parallel through
# the PnetCDF flavour of netCDF-C (Debian's libnetcdf-pnetcdf-dev), for the Python components of
# coupled workflows and their tests.
#
#   scripts/setup-python.sh [VENV_DIR]      default: ${DTF_VENV:-$HOME/.cache/dtf/venv}
#
# Prints the venv's python as the last line of stdout (py=$(scripts/setup-python.sh | tail -1));
# progress goes to stderr. Idempotent: a stamp file in the venv records what was built, and a rerun
# with the same stamp only checks the apt packages. A cold setup takes about 3 minutes (mpi4py and
# netCDF4 are compiled here). Needs root or sudo only when an apt package is missing.
set -euo pipefail

die() { echo "setup-python: $*" >&2; exit 1; }
say() { echo "setup-python: $*" >&2; }

venv=${1:-${DTF_VENV:-$HOME/.cache/dtf/venv}}
venv=${venv%/}

# Debian's packages: the venv module, Python headers, Open MPI's mpicc, and netCDF-C built on PnetCDF
# (its parallel HDF5 headers are needed to compile netCDF4 too).
packages=(python3-venv python3-dev libopenmpi-dev libhdf5-openmpi-dev libnetcdf-pnetcdf-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "need root or sudo to install: ${missing[*]}"
    sudo="sudo"
  fi
  say "installing ${missing[*]}"
  $sudo apt-get update -qq >&2 || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
fi

# Debian's own python3, the one python3-dev and python3-venv belong to (not a pyenv or conda one
# that may come first in PATH).
python=/usr/bin/python3
multiarch=$($python -c 'import sysconfig; print(sysconfig.get_config_var("MULTIARCH"))')
ncdir=/usr/lib/$multiarch/netcdf/pnetcdf          # netCDF-C 4.9.0, PnetCDF flavour
hdf5inc=/usr/include/hdf5/openmpi
hdf5lib=/usr/lib/$multiarch/hdf5/openmpi
[ -f "$ncdir/include/netcdf_par.h" ] && [ -e "$ncdir/lib/libnetcdf.so" ] \
  || die "netCDF-C PnetCDF flavour not found in $ncdir (package libnetcdf-pnetcdf-dev)"
command -v mpicc >/dev/null || die "mpicc not found (package libopenmpi-dev)"

# Pinned for Python 3.11 (Debian 12). netCDF4 1.7.x does not compile against netCDF-C 4.9.0, so 1.6.5;
# numpy 1.26 is the last series it was released against.
tools=(pip==24.3.1 setuptools==69.5.1 wheel==0.43.0 cython==3.0.11)
deps=(numpy==1.26.4 cftime==1.6.4.post1 certifi==2026.10.19.post1)
mpi4py=mpi4py==4.0.3
netcdf4=netCDF4==1.6.5
stamp_want="$($python -V 2>&1) ${tools[*]} ${deps[*]} $mpi4py $netcdf4 netcdf=$ncdir mpicc=$(command -v mpicc)"
stamp=$venv/.dtf-setup-stamp
py=$venv/bin/python

mkdir -p "$(dirname "$venv")"
# Tests may call this concurrently: one builds, the others wait and then find the stamp.
exec 9>"$venv.lock"
flock 9

if [ -x "$py" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$stamp_want" ]; then
  echo "$py"
  exit 0
fi

# Rebuild from scratch rather than upgrade in place: netCDF4 and mpi4py are compiled against numpy,
# MPI and netCDF-C, and pip would keep an old build whose version number still matches.
if [ -e "$venv" ] && [ -n "$(ls -A "$venv")" ] && [ ! -f "$venv/pyvenv.cfg" ]; then
  die "$venv exists and is not a virtual environment; refusing to clear it"
fi
say "creating $venv (about 3 minutes: mpi4py and netCDF4 are compiled)"
$python -m venv --clear "$venv" >&2 || die "python3 -m venv $venv failed"
vpip() { "$py" -m pip --disable-pip-version-check -q "$@" >&2; }
vpip install "${tools[@]}" || die "pip install ${tools[*]} failed"
vpip install "${deps[@]}" || die "pip install ${deps[*]} failed"
# Built from source with mpicc against the system Open MPI (not a wheel bundling another MPI);
# no build isolation so that netCDF4's build below sees this mpi4py and numpy; no cache, since pip
# would reuse a wheel of the same version built elsewhere against another MPI or netCDF-C.
say "building $mpi4py"
CC=mpicc vpip install --no-cache-dir --no-build-isolation --no-binary mpi4py "$mpi4py" || die "building $mpi4py failed"
# USE_NCCONFIG=0: the PnetCDF flavour has no nc-config (one on PATH would be the serial flavour's);
# name its directories instead.
# netCDF4's setup.py links with an rpath to these dirs, and the library's soname
# (libnetcdf_pnetcdf.so.19) differs from the serial one's, so no LD_LIBRARY_PATH is needed.
say "building $netcdf4 against $ncdir"
CC=mpicc USE_NCCONFIG=0 NETCDF4_INCDIR="$ncdir/include" NETCDF4_LIBDIR="$ncdir/lib" \
  HDF5_INCDIR="$hdf5inc" HDF5_LIBDIR="$hdf5lib" \
  vpip install --no-cache-dir --no-build-isolation --no-binary netCDF4 "$netcdf4" || die "building $netcdf4 failed"

# Check that it works: parallel support compiled in, the PnetCDF flavour loaded at run time, and a
# CDF-5 file written and read back in parallel (one MPI process, no mpirun needed).
say "checking"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp/check.nc" >&2 <<'EOF' || die "check of $venv failed (see above)"
import sys, netCDF4, mpi4py
from mpi4py import MPI
assert netCDF4.__has_parallel4_support__ and netCDF4.__has_pnetcdf_support__, "netCDF4 built without parallel/PnetCDF support"
libs = {l.split()[-1] for l in open("/proc/self/maps") if "libnetcdf" in l}
assert any("libnetcdf_pnetcdf" in l for l in libs) and not any("libnetcdf.so" in l for l in libs), f"wrong libnetcdf loaded: {libs}"
with netCDF4.Dataset(sys.argv[1], "w", parallel=True, comm=MPI.COMM_WORLD, format="NETCDF3_64BIT_DATA") as d:
    d.createDimension("x", 4)
    d.createVariable("v", "i8", ("x",))[:] = [1, 2, 3, 4]
with netCDF4.Dataset(sys.argv[1], "r", parallel=True, comm=MPI.COMM_WORLD) as d:
    assert d.data_model == "NETCDF3_64BIT_DATA" and list(d["v"][:]) == [1, 2, 3, 4]
EOF

echo "$stamp_want" > "$stamp"
say "ready: $netcdf4 on netCDF-C $("$py" -c 'import netCDF4; print(netCDF4.__netcdf4libversion__)') (PnetCDF flavour), $mpi4py"
echo "$py"
