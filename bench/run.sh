#!/usr/bin/env bash
# `make bench`: every benchmark in bench/, with its default sizes; regenerates docs/PERFORMANCE.md and
# its plots (docs/perf/). Figures are informative (this machine is shared and noisy): each benchmark
# compares ratios within one run and reports medians. About 15 minutes on a 2-core machine.
#
# usage: bench/run.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: bench/run.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# The interpreter scripts/install-deps.sh installs matplotlib for.
python=$(command -v /usr/bin/python3 || command -v python3)

echo "== pass-through overhead: PnetCDF calls on files dtf does not handle, with and without libdtf"
echo "   command: bench/passthrough_overhead.sh $build"
"$here/passthrough_overhead.sh" "$build"

echo
echo "== LETKF ensemble I/O: transfer vs file vs file-sync vs mpi-raw (writes docs/PERFORMANCE.md)"
echo "   command: bench/letkf.py $build --md docs/PERFORMANCE.md"
"$python" "$here/letkf.py" "$build" --md "$here/../docs/PERFORMANCE.md"

echo
echo "== what dtfrun costs: the LETKF two jobs under dtfrun and started by hand (a section of docs/PERFORMANCE.md)"
echo "   command: bench/launch_cost.py $build --md docs/PERFORMANCE.md"
"$python" "$here/launch_cost.py" "$build" --md "$here/../docs/PERFORMANCE.md"

echo
echo "== every message on the wire per replayed cycle, MPI's collectives included (a section of docs/PERFORMANCE.md)"
echo "   command: bench/wire_count.py $build --md docs/PERFORMANCE.md"
"$python" "$here/wire_count.py" "$build" --md "$here/../docs/PERFORMANCE.md"

echo
echo "== aggregated output and the I/O server: aggregators, subfiles, aggregate_steps vs every rank writing; dtf-ioserver vs file-sync; RMA pull vs point-to-point (a section of docs/PERFORMANCE.md)"
echo "   command: bench/aggregate.py $build --md docs/PERFORMANCE.md"
"$python" "$here/aggregate.py" "$build" --md "$here/../docs/PERFORMANCE.md"
