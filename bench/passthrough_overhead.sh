#!/usr/bin/env bash
# What dtf costs on calls it passes through: runs bench/passthrough_overhead (1 rank) without and
# with LD_PRELOAD=libdtf, alternating, ROUNDS times, and prints per operation the median over rounds
# of each run's median ns/call, the difference and the ratio.
#
#   passthrough_overhead.sh BUILD_DIR [ITERS] [REPS] [ROUNDS]
#   passthrough_overhead.sh EXE LIBDTF [ITERS] [REPS] [ROUNDS]
#
# Defaults: ITERS=1000000 calls per timed loop (writes: ITERS/20), REPS=7 loops per run, ROUNDS=5.
# Timings are informative only; nothing here asserts speed.
set -euo pipefail

if [[ $# -ge 1 && -d $1 ]]; then
    exe=$1/bench/passthrough_overhead
    lib=$1/src/libdtf.so
    shift
else
    [[ $# -ge 2 ]] || { sed -n '2,11p' "$0"; exit 2; }
    exe=$1 lib=$2
    shift 2
fi
iters=${1:-1000000} reps=${2:-7} rounds=${3:-5}
[[ -x $exe && -f $lib ]] || { echo "missing $exe or $lib (build first)" >&2; exit 2; }
lib=$(readlink -f "$lib")

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/dtf-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# run <label> [env assignments...]: appends "<label> <op> <median> <min>" lines to $work/all
run() {
    local label=$1
    shift
    timeout -k 10 300 mpirun -n 1 --bind-to none env "$@" "$exe" "$work/bench.nc" "$iters" "$reps" \
        >"$work/out"
    sed "s/^/$label /" "$work/out" >>"$work/all"
}

for ((r = 0; r < rounds; r++)); do
    run base
    run dtf LD_PRELOAD="$lib"
done

echo "passthrough overhead: $rounds rounds x $reps loops x $iters calls (writes: $((iters / 20))), 1 rank"
echo "plain/dtf: median ns/call without/with LD_PRELOAD=libdtf (two processes: noisy);"
echo "wrapper: within the dtf process, ncmpi_x minus a direct call of libpnetcdf's ncmpi_x (the cost"
echo "of dtf's wrapper); control: the same difference in the plain process (should be ~0)."
printf '%-22s %10s %10s %7s %10s %10s\n' operation plain dtf ratio wrapper control
# Median over rounds of the per-run medians, per (variant, operation).
awk '
    { v[$1 " " $2] = v[$1 " " $2] " " $3; if ($2 !~ /@direct$/) ops[$2] = 1 }
    function median(s,   a, n, i, j, t) {
        n = split(s, a, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        for (op in ops) {
            b = median(v["base " op]); d = median(v["dtf " op])
            printf "%-22s %10.2f %10.2f %7.3f %10.2f %10.2f\n", op, b, d, d / b,
                   d - median(v["dtf " op "@direct"]), b - median(v["base " op "@direct"])
        }
    }' "$work/all" | sort
