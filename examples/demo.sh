#!/usr/bin/env bash
# The dtf demo workflow: a toy weather model (4 ranks) and a toy data assimilation (2 ranks), launched
# as two separate MPI jobs by dtfrun, exchanging netCDF files for several cycles as dtf.ini says.
#
# usage: examples/demo.sh BUILD_DIR [--cycles N] [--grid NZ NY NX] [--fortran] [--quiet]
# `make demo` runs it with the defaults (5 cycles, 16 x 256 x 256 floats per field).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: demo.sh BUILD_DIR [options]}" && pwd)
shift
cycles=5 nz=16 ny=256 nx=256 model=demo_model quiet=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cycles) cycles=$2; shift 2 ;;
    --grid) nz=$2 ny=$3 nx=$4; shift 4 ;;
    --fortran) model=demo_model_f; shift ;;
    --quiet) quiet=1; shift ;;
    *) echo "demo.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

run="$build/demo-run/$model"
rm -rf "$run"
mkdir -p "$run"
cp "$here/dtf.ini" "$run/"
cd "$run"

say() { [ "$quiet" = 1 ] || echo "$@"; }
mb=$(( nz * ny * nx * 4 / 1000000 ))
say "== dtf demo: '$model' (4 ranks) and 'demo_assim' (2 ranks) as two separate MPI jobs"
say "   $cycles cycles; per cycle the model writes hist.<cycle>.nc (T: $nz x $ny x $nx floats, ~$mb MB, and PS),"
say "   the assimilation reads it, writes anal.nc back, and the model reads that at the next cycle."
say "   dtf.ini puts both files in mode=\"file\": each reader's open waits, without polling the file"
say "   system, until the writer has closed the file. Output lines are prefixed by component."
say ""

start=$EPOCHREALTIME
set +e
DTF_PRINT_STATS=1 timeout 600 "$build/bin/dtfrun" -c dtf.ini --timeout 60 --walltime 500 \
  --name model -n 4 "$build/examples/$model" "$cycles" "$nz" "$ny" "$nx" : \
  --name assim -n 2 "$build/examples/demo_assim" "$cycles" "$nz" "$ny" "$nx" 2>&1 | tee output.txt
status=${PIPESTATUS[0]}
set -e
elapsed=$(awk "BEGIN { printf \"%.1f\", $EPOCHREALTIME - $start }")

verified=$(grep -c "values verified" output.txt || true)
say ""
if [ "$status" -eq 0 ] && [ "$verified" -eq 2 ]; then
  say "== demo finished in ${elapsed} s: both components verified every value they received."
  say "   The files are in $run (look at one: ncmpidump -h $run/hist.0001.nc)."
  exit 0
fi
echo "== demo FAILED (dtfrun status $status, $verified of 2 components verified their data)" >&2
exit 1
