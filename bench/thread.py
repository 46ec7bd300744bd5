#!/usr/bin/env python3
"""The progress thread's cost and gain in the LETKF benchmark (bench/letkf_io.c): one size, run with
DTF_PROGRESS_THREAD=0 and =1 alternately, modes transfer, transfer-replay and mpi-raw, optionally
with CPU work between each role's output and its next input (--compute MS), so that the thread can
move the data while the program computes.

usage: bench/thread.py BUILD_DIR [--members M] [--grid IMAX JMAX KMAX] [--compute MS] [--buffer-data 0|1]
                        [--pairs N]

Prints, per run, the median model and assimilation cycle (max over ranks) of each mode, and the
ratio mpi-raw / transfer (1 is the ceiling of raw pre-posted MPI). Compare the two settings within
one pair of runs (the machine is shared and noisy); --pairs repeats the pair.

With bench/letkf.ini's buffer_data=0 a writer's ncmpi_close waits until its readers have the data
(dtf refers to the program's buffers until then), so nothing is left to move during the work that
follows; --buffer-data 1 runs a copy of the configuration where dtf copies at put instead, and the
close returns at once with the thread.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile

from runlog import failure_text

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("transfer", "transfer-replay", "mpi-raw")


def config(a, work):
    """bench/letkf.ini, or a copy of it with buffer_data set as asked."""
    ini = os.path.join(HERE, "letkf.ini")
    if a.buffer_data is None:
        return ini
    with open(ini) as f:
        text = re.sub(r"(?m)^buffer_data=\d", f"buffer_data={a.buffer_data}", f.read())
    copy = os.path.join(work, "letkf.ini")
    with open(copy, "w") as f:
        f.write(text)
    return copy


def run(a, thread, work):
    files = os.path.join(work, "files")
    os.makedirs(files, exist_ok=True)
    ini = config(a, work)
    args = ["--members", str(a.members), "--px", "1", "--py", "1", "--grid", *map(str, a.grid), "--reps", "3",
            "--cycles", "6", "--dir", files, "--config", ini, "--label", "thread",
            "--compute", str(a.compute), "--modes", ",".join(MODES)]
    exe = os.path.join(a.build, "bench", "letkf_io")
    csvs = {role: os.path.join(work, f"{role}.csv") for role in ("model", "assim")}
    cmd = [os.path.join(a.build, "bin", "dtfrun"), "-c", ini, "--timeout", "60",
           "--walltime", "300"]
    for i, role in enumerate(("model", "assim")):
        cmd += ([":"] if i else []) + ["--name", role, "-n", str(a.members), exe, "--role", role, *args,
                                       "--csv", csvs[role]]
    env = dict(os.environ, DTF_PROGRESS_THREAD=str(thread))
    p = subprocess.run(cmd, cwd=files, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=400)
    if p.returncode != 0:
        sys.exit(f"thread.py: the run with DTF_PROGRESS_THREAD={thread} failed:\n{failure_text(p.stdout)}")
    medians, marks = {}, {}
    for role, path in csvs.items():
        cycles = {}
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["agg"] != "max" or int(r["cycle"]) < 1:  # cycle 0 of each rep: warm-up
                    continue
                if r["phase"] == "total":
                    cycles.setdefault(r["mode"], []).append(1e3 * float(r["seconds"]))
                elif r["phase"] == "mark":
                    marks[(role, r["mode"], r["rep"], r["cycle"])] = float(r["seconds"])
        medians[role] = {m: statistics.median(v) for m, v in cycles.items()}
    # The hand-off: from the end of the model's compute to the assimilation holding its output.
    lags = {}
    for (role, mode, rep, cycle), t in marks.items():
        if role == "model" and ("assim", mode, rep, cycle) in marks:
            lags.setdefault(mode, []).append(max(0.0, 1e3 * (marks[("assim", mode, rep, cycle)] - t)))
    medians["hand-off"] = {m: statistics.median(v) for m, v in lags.items()}
    return medians


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--members", type=int, default=1, help="ensemble members, one model rank each (default 1)")
    p.add_argument("--grid", type=int, nargs=3, default=[128, 128, 16], metavar=("IMAX", "JMAX", "KMAX"))
    p.add_argument("--compute", type=int, default=0, help="milliseconds of CPU work per cycle and role")
    p.add_argument("--buffer-data", type=int, choices=[0, 1],
                   help="buffer_data in a copy of bench/letkf.ini (default: as there, 0)")
    p.add_argument("--pairs", type=int, default=1)
    a = p.parse_args()
    a.build = os.path.abspath(a.build)
    print(f"{a.members} member(s) x 1 rank per role, {'x'.join(map(str, a.grid))} per rank, compute {a.compute} ms, "
          f"buffer_data={0 if a.buffer_data is None else a.buffer_data}; "
          "median cycle in ms (max over ranks), 3 reps x 6 cycles")
    print("hand-off: from the end of the model's compute to the assimilation holding all of its output "
          "(median over reps x cycles)")
    print(f"{'thread':>6} {'row':>8} " + " ".join(f"{m:>16}" for m in MODES) + "  raw/transfer raw/replay")
    with tempfile.TemporaryDirectory(prefix="dtf-thread-") as work:
        for _ in range(a.pairs):
            handoff = {}
            for thread in (0, 1):
                m = run(a, thread, work)
                handoff[thread] = m["hand-off"]
                for row in ("model", "assim", "hand-off"):
                    t = m[row]
                    print(f"{thread:>6} {row:>8} " + " ".join(f"{t[x]:16.1f}" for x in MODES) +
                          f"  {t['mpi-raw'] / max(t['transfer'], 1e-3):12.2f} "
                          f"{t['mpi-raw'] / max(t['transfer-replay'], 1e-3):10.2f}", flush=True)
            print("hand-off with the thread / without: " + ", ".join(
                f"{x} {handoff[1][x] / max(handoff[0][x], 1e-3):.2f}" for x in MODES), flush=True)


if __name__ == "__main__":
    main()
