#!/usr/bin/env bash
# `make bench`: every benchmark in bench/, with its default sizes. Figures are informative (this
# machine is shared and noisy): each script compares ratios within one run and reports medians.
#
# usage: bench/run.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: bench/run.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

echo "== pass-through overhead: PnetCDF calls on files dtf does not handle, with and without libdtf"
echo "   command: bench/passthrough_overhead.sh $build"
"$here/passthrough_overhead.sh" "$build"
