#!/usr/bin/env python3
"""What one cycle of the LETKF pattern costs in instructions, call by call: bench/letkf_io run in one
MPMD launch with one role under valgrind's callgrind (the other runs plainly), once with C cycles and
once with 3C, and the difference divided by 2C. That removes the first cycle (which records the plans)
and everything outside the cycles (start-up, the values' generation and checks, the report), and
leaves what a steady cycle costs the role's rank: per PnetCDF call and dtf_transfer (their calls per
cycle and instructions per call, everything dtf does inside them included), and the whole cycle
(letkf_io's model_cycle or assim_cycle), beside the same calls in file mode (PnetCDF itself: dtf hands
them to the real library, which writes the file; its instructions are PnetCDF's and MPI-IO's, the
kernel's writes not counted) and mpi-raw's cycle moving the same blocks.

Instruction counts do not depend on what else runs on the machine, unlike times: they show where a
small cycle's CPU goes on a shared node, and an A/B of two builds in instructions needs no
alternation. They do not count waiting in the kernel, cache misses or what MPI's shared-memory copies
cost in the kernel; bench/letkf.py times the same runs.

  callcost.py BUILD [--grid 16 16 20] [--members 1] [--px 1] [--cycles 20] [--modes transfer-replay,file,mpi-raw]
              [--calls original] [--api pnetcdf|pnetcdf-blocking|netcdf4] [--out DIR] [--md FILE]

--calls original: the original DTF's benchmark's calls (letkf_io --calls original; its config sections
too: bench/letkf.ini).

Needs valgrind. Prints a table per role; --md writes them as a markdown section.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CYCLE_FN = {"model": "model_cycle", "assim": "assim_cycle"}


def run(build, role, mode, cycles, a):
    """One launch with `role` under callgrind; the callgrind output file (in a.out)."""
    out = a.out
    cg = os.path.join(out, f"cg.{role}.{mode}.{cycles}")
    args = ["--members", a.members, "--px", a.px, "--py", 1, "--grid", *a.grid, "--reps", 1, "--cycles", cycles,
            "--dir", out, "--config", a.config, "--modes", mode, "--verify", 0]
    if a.calls:
        args += ["--calls", a.calls]
    if a.api:
        args += ["--api", a.api]
    args = [str(x) for x in args]
    exe = os.path.join(build, "bench", "letkf_io")
    ranks = str(a.members * a.px)
    cmd = [os.path.join(build, "bin", "dtfrun"), "-c", a.config, "--timeout", "300", "--walltime", "900", "--mpmd"]
    for r in ("model", "assim"):
        # (a file per rank, named by its world rank: several ranks must not write one file)
        wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}.%q{{OMPI_COMM_WORLD_RANK}}"] \
            if r == role else []
        cmd += ["--name", r, "-n", ranks, *wrap, exe, "--role", r, *args, "--csv", os.path.join(out, f"{r}.csv")]
        if r == "model":
            cmd.append(":")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=960)
    if p.returncode != 0:
        sys.exit(f"callcost.py: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    first = min(int(f.rsplit(".", 1)[1]) for f in os.listdir(out) if f.startswith(os.path.basename(cg) + "."))
    return f"{cg}.{first}"  # the role's rank 0


def functions(cg):
    """{function: (inclusive instructions, calls)} from callgrind_annotate's caller tree."""
    text = subprocess.run(["callgrind_annotate", "--tree=caller", "--inclusive=yes", "--threshold=100", cg],
                          capture_output=True, text=True, check=True).stdout
    out = {}
    calls = 0
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+([<*])\s+(\S+?):(.+?)(?: \((\d[\d,]*)x\))?(?: \[.*\])?$", line)
        if not m:
            calls = 0
            continue
        if m.group(2) == "<":
            calls += int((m.group(5) or "0").replace(",", ""))
            continue
        name = m.group(4).split("(")[0].strip()
        if name not in out:
            out[name] = (int(m.group(1).replace(",", "")), calls)
        calls = 0
    return out


def per_cycle(build, role, mode, a):
    """{function: (instructions per cycle, calls per cycle)} for the cycle and the calls in it."""
    few = functions(run(build, role, mode, a.cycles, a))
    many = functions(run(build, role, mode, 3 * a.cycles, a))
    n = 2 * a.cycles
    wanted = lambda f: f == CYCLE_FN[role] or f == "dtf_transfer" or f.startswith(("ncmpi_", "nc_"))
    rows = {}
    for f in set(few) | set(many):
        if not wanted(f):
            continue
        ir = (many.get(f, (0, 0))[0] - few.get(f, (0, 0))[0]) / n
        calls = (many.get(f, (0, 0))[1] - few.get(f, (0, 0))[1]) / n
        if ir > 0:
            rows[f] = (ir, calls)
    return rows


def table(role, results, modes):
    cycle = CYCLE_FN[role]
    lines = [f"{role} rank 0, instructions per cycle (calls per cycle, instructions per call):", "",
             "| call | " + " | ".join(modes) + " |", "|---" * (len(modes) + 1) + "|"]
    total = {m: results[m].get(cycle, (0, 0))[0] for m in modes}
    lines.append(f"| whole cycle ({cycle}) | " + " | ".join(f"{total[m] / 1e3:,.0f} k" for m in modes) + " |")
    calls = sorted({f for m in modes for f in results[m] if f != cycle},
                   key=lambda f: -max(results[m].get(f, (0, 0))[0] for m in modes))
    for f in calls:
        cells = []
        for m in modes:
            ir, n = results[m].get(f, (0, 0))
            cells.append(f"{ir / 1e3:,.0f} k ({n:.0f} x {ir / n:,.0f})" if n >= 1 else (f"{ir / 1e3:,.0f} k" if ir else "–"))
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--grid", nargs=3, type=int, default=[16, 16, 20])
    ap.add_argument("--members", type=int, default=1)
    ap.add_argument("--px", type=int, default=1)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--modes", default="transfer-replay,file,mpi-raw")
    ap.add_argument("--roles", default="model,assim")
    ap.add_argument("--calls", default=None, help="letkf_io --calls (original: the original DTF's benchmark's calls)")
    ap.add_argument("--api", default=None, help="letkf_io --api (netcdf4: netCDF-C's calls on netCDF-4 files)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--md", default=None)
    a = ap.parse_args()
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        sys.exit("callcost.py: needs valgrind (apt-get install valgrind; scripts/install-deps.sh installs it)")
    a.out = os.path.abspath(a.out or os.path.join(a.build, "callcost"))
    os.makedirs(a.out, exist_ok=True)
    # The files of this run without persist=1 (as bench/letkf.py runs modes without transfer-persist).
    with open(os.path.join(HERE, "letkf.ini")) as f:
        ini = [line for line in f if not line.startswith("persist=1")]
    a.config = os.path.join(a.out, "letkf.ini")
    with open(a.config, "w") as f:
        f.writelines(ini)
    modes = a.modes.split(",")
    tables = []
    for role in a.roles.split(","):
        results = {m: per_cycle(a.build, role, m, a) for m in modes}
        if not results[modes[0]].get(CYCLE_FN[role]):
            sys.exit(f"callcost.py: no {CYCLE_FN[role]} in the callgrind output (was letkf_io built with it inlined?)")
        tables.append(table(role, results, modes))
    grid = "x".join(map(str, a.grid))
    head = (f"{a.members} member{'s' * (a.members != 1)} of {a.px} rank{'s' * (a.px != 1)}, {grid} points per rank, "
            "one MPMD launch; "
            f"callgrind, cycles {a.cycles} and {3 * a.cycles}, the difference per cycle (`bench/callcost.py`)")
    text = head + "\n\n" + "\n\n".join(tables) + "\n"
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
