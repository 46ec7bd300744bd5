#!/usr/bin/env bash
# Install dtf into a temporary prefix and use it the ways a user would:
#   - only the C API, the ncmpi_* wrappers and MPI's initialization are exported from libdtf.so;
#   - a CMake project finds it with find_package(dtf) and builds the C and Fortran examples;
#   - pkg-config --cflags --libs dtf (its paths the prefix's, plainly) builds the C example;
#   - the installed tools run (dtf-config --check, dtfrun --help), dtf-ioserver uses the installed libdtf.so.
# usage: run.sh BUILD_DIR SOURCE_DIR PNETCDF_FORTRAN_MODULE_DIR
set -euo pipefail
build=$1 src=$2 fmod=$3
prefix=$(mktemp -d "${TMPDIR:-/tmp}/dtf-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(ls "$prefix"/lib*/libdtf.so 2>/dev/null | head -1)
[ -n "$lib" ] || fail "libdtf.so not installed"
for f in include/dtf.h include/dtf.mod bin/dtfrun bin/dtf-config bin/dtf-ioserver; do
  [ -e "$prefix/$f" ] || fail "$f not installed"
done

# Exported symbols: dtf_* (C API and Fortran externals), ncmpi_* wrappers, MPI's initialization
# (zero-change mode) and the MPI functions that take a communicator (MPMD mode; C, mpif.h and
# mpi_f08 entry points), netCDF-C's open, create and close calls (frontend/netcdf.cpp), the looks at a
# path that frontend/probe.cpp answers; nothing else.
extra=$(nm -D --defined-only "$lib" | awk '{print $3}' |
        grep -v -E '^(dtf_[a-z_]+|ncmpi_[a-z0-9_]+|_init|_fini|MPI_[A-Z][a-z_0-9]+|mpi_[a-z_0-9]+_(f08_)?)$' |
        grep -v -x -E 'nc_(create|open)(_par)?|nc__(create|open)|nc_close|nc_abort' |
        grep -v -x -E '(l|f)?stat(at)?(64)?|f?access(at)?|euidaccess|eaccess' || true)
[ -z "$extra" ] || fail "libdtf.so exports symbols outside its API: $(echo "$extra" | head -5 | tr '\n' ' ')"
echo "exported symbols: $(nm -D --defined-only "$lib" | grep -c ' ncmpi_') ncmpi_* wrappers, $(nm -D --defined-only "$lib" | grep -c ' dtf_') dtf_*"

# find_package(dtf)
cmake -S "$src/tests/install/consumer" -B "$prefix/consumer" -DCMAKE_PREFIX_PATH="$prefix" \
  -DEXAMPLES="$src/examples" -DPNETCDF_FORTRAN_MODULE_DIR="$fmod" >/dev/null || fail "consumer configure"
cmake --build "$prefix/consumer" >/dev/null || fail "consumer build"
for exe in model_c model_f; do
  readelf -d "$prefix/consumer/$exe" | grep -q 'NEEDED.*libdtf.so' || fail "$exe does not load libdtf"
done
echo "find_package(dtf): built the C and Fortran examples"

# pkg-config
export PKG_CONFIG_PATH="$(dirname "$lib")/pkgconfig"
libs=$(pkg-config --libs dtf)
case "$libs" in
  *"-L$(dirname "$lib") "*"-Wl,-rpath,$(dirname "$lib") "*) ;;
  *) fail "pkg-config --libs dtf does not name $(dirname "$lib") plainly: $libs" ;;
esac
mpicc -I"$src/examples/C" "$src/examples/C/model.c" $(pkg-config --cflags --libs dtf) -o "$prefix/model_pc" \
  || fail "pkg-config build"
used=$(ldd "$prefix/model_pc" | awk '/libdtf\.so/ {print $3}')
[ -n "$used" ] && [ "$(readlink -f "$used")" = "$(readlink -f "$lib")" ] \
  || fail "model_pc uses '$used', not the installed $lib"
echo "pkg-config dtf: built the C example"

"$prefix/bin/dtf-config" --check "$src/examples/dtf.ini" || fail "installed dtf-config"
"$prefix/bin/dtfrun" --help >/dev/null || fail "installed dtfrun"
used=$(ldd "$prefix/bin/dtf-ioserver" | awk '/libdtf\.so/ {print $3}')
[ -n "$used" ] && [ "$(readlink -f "$used")" = "$(readlink -f "$lib")" ] \
  || fail "dtf-ioserver uses '$used', not the installed $lib"
echo "installed tools run"
echo "PASS"
