#!/usr/bin/env bash
# The dtf demo workflow: a two-member ensemble of a toy weather model (2 ranks per member) and a toy
# data assimilation (2 ranks), launched as two separate MPI jobs by dtfrun, exchanging netCDF files
# for several cycles; run once with the files in mode="file" (through the file system), once in
# mode="transfer" (directly over MPI), with the same programs, and once in transfer mode with the
# same programs built without any dtf call (the zero-change mode: dtfrun --preload). Both components
# check every value.
#
# usage: examples/demo.sh BUILD_DIR [--cycles N] [--grid NZ NY NX] [--members M]
#                        [--mode file|transfer|zero-change|both|all] [--fortran | --python PYTHON]
#                        [--mpmd] [--quiet]
# `make demo` runs it with the defaults (5 cycles, 2 members, 16 x 256 x 256 floats per field, all
# three modes; `both` is file and transfer; the Fortran model has no zero-change build).
# --python PYTHON: the assimilation is examples/Python/assim.py (mpi4py and netCDF4-python, run by
# PYTHON: the venv scripts/setup-python.sh makes), beside the C model built without dtf calls, both
# preloaded with libdtf (file and transfer mode). --mpmd: both components in one launch.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: demo.sh BUILD_DIR [options]}" && pwd)
shift
cycles=5 nz=16 ny=256 nx=256 members=2 modes=all model=demo_model quiet=0 python="" launch=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cycles) cycles=$2; shift 2 ;;
    --grid) nz=$2 ny=$3 nx=$4; shift 4 ;;
    --members) members=$2; shift 2 ;;
    --mode) modes=$2; shift 2 ;;
    --fortran) model=demo_model_f; shift ;;
    --python) python=$2; shift 2 ;;
    --mpmd) launch=(--mpmd); shift ;;
    --quiet) quiet=1; shift ;;
    *) echo "demo.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ "$modes" = both ] && modes="file transfer"
[ "$modes" = all ] && { [ "$model" = demo_model ] && [ -z "$python" ] && modes="file transfer zero-change" || modes="file transfer"; }
model_ranks=$((2 * members))
say() { [ "$quiet" = 1 ] || echo "$@"; }

assim_name=demo_assim
[ -n "$python" ] && model=demo_model_unaware assim_name=assim.py
say "== dtf demo: '$model' ($members members x 2 ranks) and '$assim_name' (2 ranks), $([ ${#launch[@]} = 0 ] && echo "two separate MPI jobs" || echo "one MPMD launch")"
say "   $cycles cycles; per cycle every member writes hist.m<member>.<cycle>.nc (T: $nz x $ny x $nx floats"
say "   and PS), the assimilation reads each, writes anal.m<member>.nc back, and the member reads it at"
say "   the next cycle. Output lines are prefixed by component; both components verify every value."

rundir="$build/demo-run/$model${python:+.python}${launch:+.mpmd}"
declare -A seconds
status=0
for mode in $modes; do
  run="$rundir/$mode"
  rm -rf "$run"
  mkdir -p "$run"
  sed "s/^mode=.*/mode=\"${mode/zero-change/transfer}\"/" "$here/dtf.ini" > "$run/dtf.ini"
  say ""
  exe_model=$model assim=("$build/examples/demo_assim") preload=()
  if [ -n "$python" ]; then
    assim=("$python" "$here/Python/assim.py") preload=(--preload "$build/src/libdtf.so")
    say "-- the assimilation in Python (mpi4py, netCDF4-python on netCDF-C on PnetCDF) and the C model without dtf calls, both run with dtfrun --preload libdtf.so"
  fi
  case $mode in
    file) say "-- mode=\"file\": the data goes through the file system; each reader's open waits (without polling) until the writer has closed the file" ;;
    transfer) say "-- mode=\"transfer\": the data moves from the writer's ranks to the reader's ranks over MPI; no file is written" ;;
    zero-change)
      say "-- zero-change: mode=\"transfer\" with the programs built without any dtf call (${model}_unaware, demo_assim_unaware),"
      say "   run with dtfrun --preload libdtf.so: dtf starts in MPI_Init and moves the data at ncmpi_close"
      exe_model=${model}_unaware assim=("$build/examples/demo_assim_unaware") preload=(--preload "$build/src/libdtf.so") ;;
    *) echo "demo.sh: unknown mode '$mode'" >&2; exit 2 ;;
  esac
  start=$EPOCHREALTIME
  set +e
  (cd "$run" && DTF_PRINT_STATS=1 timeout 600 "$build/bin/dtfrun" -c dtf.ini --timeout 60 --walltime 500 "${preload[@]}" "${launch[@]}" \
    --name model -n "$model_ranks" "$build/examples/$exe_model" "$cycles" "$nz" "$ny" "$nx" "$members" : \
    --name assim -n 2 "${assim[@]}" "$cycles" "$nz" "$ny" "$nx" "$members" 2>&1) | tee "$run.out"
  rc=${PIPESTATUS[0]}
  set -e
  seconds[$mode]=$(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $start }")
  # (counted as words, not lines: in one MPMD launch mpirun may join two programs' lines into one)
  verified=$(grep -o "values verified" "$run.out" | wc -l)
  files=$(find "$run" -maxdepth 1 -name '*.nc' | wc -l)
  if [ "$rc" -ne 0 ] || [ "$verified" -ne 2 ]; then
    echo "-- $mode FAILED (dtfrun status $rc, $verified of 2 components verified their data)" >&2
    status=1
  elif [ "$mode" != file ] && [ "$files" -ne 0 ]; then
    echo "-- $mode FAILED: $files netCDF files reached the file system" >&2
    status=1
  else
    say "-- $([ "$mode" = zero-change ] && echo zero-change || echo "mode=\"$mode\""): ${seconds[$mode]} s in all (launch included); $files netCDF files on disk in $run"
  fi
done

[ "$status" -eq 0 ] || exit 1
say ""
say "== demo finished: every value verified. Model cycle times in seconds (from its per-cycle lines):"
if [ "$quiet" = 0 ]; then
  printf '   %-6s' cycle; for m in $modes; do printf ' %10s' "$m"; done; echo
  for c in $(seq 1 "$cycles"); do
    printf '   %-6s' "$c"
    for m in $modes; do
      printf ' %10s' "$(sed -n "s/^\[model\] cycle $c: .*; cycle \([0-9.]*\) s$/\1/p" "$rundir/$m.out")"
    done
    echo
  done
  printf '   %-6s' all; for m in $modes; do printf ' %10s' "${seconds[$m]}"; done; echo "   (whole run, launch included)"
  # The median model cycle of each mode, cycle 1 (warm-up, and the one replay matches) left out.
  median() { sed -n 's/^\[model\] cycle \([0-9]*\): .*; cycle \([0-9.]*\) s$/\1 \2/p' "$1" |
             awk '$1 > 1 { print $2 }' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
  if [ "${modes#file transfer}" != "$modes" ]; then
    f=$(median "$rundir/file.out") t=$(median "$rundir/transfer.out")
    [ -n "$f" ] && [ -n "$t" ] && awk -v f="$f" -v t="$t" 'BEGIN {
      if (t <= f) printf "   median model cycle after the first: transfer %.3f s, file %.3f s: transfer is %.1fx faster\n", t, f, f / t
      else printf "   median model cycle after the first: transfer %.3f s, file %.3f s: transfer is %.1fx slower\n", t, f, t / f }'
  fi
fi
say "   This is a functional demo on a tiny grid; bench/ measures performance."
