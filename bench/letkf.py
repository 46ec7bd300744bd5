#!/usr/bin/env python3
"""Run the LETKF I/O benchmark (bench/letkf_io.c) over a sweep of sizes and collect its output.

usage: bench/letkf.py BUILD_DIR [--sweep full|smoke] [--out DIR] [--md FILE] [--png-dir DIR]

Each run launches the model and the assimilation as two separate MPI jobs with dtfrun (or, for the
runs labelled launch.mpmd, as one MPMD mpirun: dtfrun --mpmd, shared memory in between; launch.srun:
dtfrun inside an allocation of a one-node Slurm cluster the driver starts, one srun; launch.mpich:
one MPICH mpiexec, with letkf_io and dtf built for MPICH in BUILD_DIR/bench/mpich); one launch
runs every mode (transfer, transfer-replay, file, file-sync, mpi-raw; the persist runs transfer,
transfer-persist and file-sync) for `reps` x `cycles` cycles, so the modes are compared within one
run. A run listed again in a sweep is launched again: its reps are numbered on after those of its
earlier launches, and report.py can tell the launches apart. The rows of all runs go to
OUT/letkf.csv, the machine and the exact command of every run to OUT/meta.json; then the planning
micro-benchmark (bench/plan_bench.cpp) writes OUT/planning.csv, and for the sweeps full, small and
smoke bench/callcost.py writes the instructions per cycle, call by call, of 1 member x 1 rank at
16x16x20 to OUT/callcost.md (under valgrind; about a minute). With --md, bench/report.py then
writes the report and its plots.

Sweeps:
  full   what `make bench` runs (about 16 minutes here): the default size, weak scaling (1, 2, 4, 8
         members of one rank each), strong scaling (one member's fixed grid on 1, 2, 4 ranks), runs
         with 100 ms of computing per cycle and role, without and with dtf's progress thread, the
         default size in one MPMD launch, in one srun launch and in one MPICH launch, small blocks
         (the sweep small), the original DTF's calls (the sweep original), messages against
         processes (the sweep growth), and stream and persist (the default size, three times, one
         member with a core per rank, and a control without persist=1). Ranks beyond the machine's
         cores are oversubscribed; the report says so.
  default the default size alone, as two jobs (about 40 seconds): a quick before/after comparison.
  launch the default size as two jobs, in one MPMD launch, in one srun launch and in one MPICH
         launch, in turn, twice each (about three minutes): the launch modes compared.
  persist the stream-and-persist runs of full alone (about three minutes).
  original the original DTF's own benchmark's calls and file names (letkf_io --calls original), 2 members
         x 2 ranks at 16x16x20 and 32x20x98 per rank, as two jobs and in one MPMD launch, and their
         instructions per cycle at 16x16x20 (bench/callcost.py, to OUT/callcost-original.md; about two
         minutes).
  small  small blocks (2 members x 2 ranks at 16x16x20 and 32x20x98 per rank, and 1 member x 1 rank
         at each: a core per rank), as two jobs and in one MPMD launch: the protocol's own cost; and
         the 16x16x20 runs in one launch once more with DTF_TRACE, summed by dtf-trace into
         OUT/runN.trace.txt (about two minutes).
  netcdf4 the LETKF pattern through netCDF-C on netCDF-4 files beside PnetCDF, parallel and one file
         per model rank (bench/netcdf4.py runs it and writes its report; about seven minutes).
  growth the messages per cycle against processes: 1 to 16 members of one rank per component in one
         MPMD launch (up to 32 processes; about 20 seconds); growth-small: 1 to 8 members.
  smoke  a tiny run of every mode with verification, for the test suite (a few seconds).
"""
import argparse
import atexit
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "mpich"))
from slurmcluster import SlurmCluster  # noqa: E402
import mpich  # noqa: E402

# (label, members, px, py, grid per rank (imax, jmax, kmax) or None, global grid (nx, ny) or None, reps, cycles
#  [, options: compute (ms of CPU work per cycle and role), thread (DTF_PROGRESS_THREAD), modes,
#   launch ("mpmd": one MPMD mpirun instead of two jobs; "srun": one srun; "mpich": one MPICH mpiexec),
#   buffer_data (instead of letkf.ini's),
#   rotate (letkf_io --rotate 1: each rep starts with the next mode), persist (0: letkf.ini without
#   persist=1), calls (letkf_io --calls: "original")])
# The compute.off / compute.on pairs measure how much of the model's output is still to move once it
# has computed, without and with dtf's progress thread (report.py: "Computing while the data moves").
COMPUTE = "transfer,transfer-replay,mpi-raw"
DEFAULT = ("default", 2, 1, 1, (128, 128, 16), None, 3, 6)
MPMD = ("launch.mpmd",) + DEFAULT[1:] + ({"launch": "mpmd"},)
# The same one launch started by Slurm's srun (dtfrun inside an allocation of a one-node Slurm cluster
# the driver starts, tests/lib/slurmcluster.py); left out, with a note, where Slurm cannot run here.
SRUN = ("launch.srun",) + DEFAULT[1:] + ({"launch": "srun"},)
# The same one launch under MPICH's mpiexec, with dtf and letkf_io built against MPICH (and PnetCDF for
# it: tests/mpich/mpich.py, cached); left out, with a note, without MPICH.
MPICH = ("launch.mpich",) + DEFAULT[1:] + ({"launch": "mpich"},)
# Stream and persist (transfer-persist) in launches of their own: the memory it leaves behind (heap
# not returned to the system) would count in the next modes' memory figures. The default size (4
# ranks on this machine's 2 cores) and one member (a core per rank), each with letkf.ini's
# buffer_data=0 and with dtf's default buffer_data=1 (".buffered"). Each rep starts with the next of
# the 3 modes (rotate), so that over 3 reps none is favoured by what ran before it. The target's run
# (persist.default.buffered) is launched three times, spread over the sweep: its ratio varies by
# several percent between launches on this shared machine, and the report takes the median. The
# control (persist.off.buffered) runs the same modes without persist=1: its ratio is what the
# benchmark shows when nothing is written.
PERSIST_MODES = {"modes": "transfer,transfer-persist,file-sync", "rotate": 1}
BUFFERED = dict(PERSIST_MODES, buffer_data=1)
PERSIST_TARGET = ("persist.default.buffered",) + DEFAULT[1:] + (BUFFERED,)
PERSIST = [PERSIST_TARGET,
           ("persist.default",) + DEFAULT[1:] + (PERSIST_MODES,),
           ("persist.core-per-rank.buffered", 1, 1, 1, (128, 128, 16), None, 3, 6, BUFFERED),
           PERSIST_TARGET,
           ("persist.off.buffered",) + DEFAULT[1:] + (dict(BUFFERED, persist=0),),
           ("persist.core-per-rank", 1, 1, 1, (128, 128, 16), None, 3, 6, PERSIST_MODES),
           PERSIST_TARGET]
# Small blocks (issue 31: the protocol's own cost): 2 members of 2 ranks, the two grids per rank of the
# original DTF's benchmark, as two jobs and in one MPMD launch, and one member of one rank per
# component at each grid (a core per rank, each rank moving as many bytes per cycle as in the 2 x 2
# runs: what those would come near on a node with a core per rank). Here a cycle's data takes a few
# milliseconds, so what dtf adds shows.
SMALL_MODES = {"modes": "transfer,transfer-replay,mpi-raw"}
SMALL = [(label, members, px, 1, grid, None, 3, 6, dict(SMALL_MODES, **launch))
         for label, launch in (("small", {}), ("small.mpmd", {"launch": "mpmd"}))
         for members, px in ((2, 2), (1, 1)) for grid in ((16, 16, 20), (32, 20, 98))]
# Where the small cycle goes, call by call: replay at 16x16x20 in one MPMD launch, one member of one rank
# per component (a core per rank) and 2 members of 2 (crowded), traced (DTF_TRACE; about a microsecond
# per call), summed by dtf-trace.
SMALL_TRACE = [("small.trace", members, px, 1, (16, 16, 20), None, 1, 40,
                {"modes": "transfer-replay", "launch": "mpmd", "trace": 1}) for members, px in ((1, 1), (2, 2))]
# The original DTF's own benchmark (issue 43): the same data with its calls and file names (letkf_io
# --calls original: bput, put_var1_double_all, the write-back into the analysis file opened with
# NC_WRITE, igets with an MPI subarray type, a new name per cycle), its 2 members of 2 ranks at its two
# grids, as two jobs and in one MPMD launch.
ORIGINAL = [(label, 2, 2, 1, grid, None, 3, 6, dict(SMALL_MODES, calls="original", **launch))
            for label, launch in (("original", {}), ("original.mpmd", {"launch": "mpmd"}))
            for grid in ((16, 16, 20), (32, 20, 98))]
# Messages against processes (issue 31: messages that grow with the data): the LETKF pattern with
# 1 to 16 members of one rank per component (up to 32 processes, oversubscribed: these runs are for
# the counts, not the times), 16x16x4 points per rank, in one MPMD launch.
GROWTH = [("growth", m, 1, 1, (16, 16, 4), None, 1, 5,
           {"modes": "transfer,transfer-replay,mpi-raw", "launch": "mpmd"}) for m in (1, 2, 4, 8, 16)]
# netCDF-4 files (issue 45): the LETKF pattern through netCDF-C on netCDF-4 files (letkf_io --api
# netcdf4) beside the same through PnetCDF, at small blocks (16x16x20, 32x20x98 per rank: 2 members x
# 2 ranks, 8 processes on this machine's 2 cores; 16x16x20 also with 2 members x 1 rank, 4 processes
# as at the default size) and the default size, as two jobs and in one MPMD launch, and PnetCDF in netCDF-C's shape
# (--api pnetcdf-blocking: blocking calls, files read in turn), and netCDF-4 one file per model rank
# (--api netcdf4-serial); bench/netcdf4.py runs it and reports file-sync / transfer and transfer
# netCDF-4 / transfer PnetCDF.
NETCDF4_MODES = "transfer,transfer-replay,file-sync"
NETCDF4 = [(f"{api}{suffix}", members, px, 1, grid, None, 3, 6, dict(modes=NETCDF4_MODES, rotate=1, api=api, **launch))
           for members, px, grid in ((2, 2, (16, 16, 20)), (2, 2, (32, 20, 98)), (2, 1, (16, 16, 20)),
                                     (2, 1, (128, 128, 16)))
           for suffix, launch in (("", {}), (".mpmd", {"launch": "mpmd"}))
           for api in ("pnetcdf", "pnetcdf-blocking", "netcdf4", "netcdf4-serial")]
# Every mode, for the smoke test.
ALL_MODES = "transfer,transfer-replay,transfer-persist,file,file-sync,mpi-raw"
SWEEPS = {
    "full": [
        DEFAULT,
        MPMD,
        SRUN,
        MPICH,
        ("weak", 1, 1, 1, (64, 64, 16), None, 2, 5),
        ("weak", 2, 1, 1, (64, 64, 16), None, 2, 5),
        ("weak", 4, 1, 1, (64, 64, 16), None, 2, 5),
        ("weak", 8, 1, 1, (64, 64, 16), None, 2, 5),
        ("strong", 1, 1, 1, (0, 0, 16), (256, 256), 2, 5),
        ("strong", 1, 2, 1, (0, 0, 16), (256, 256), 2, 5),
        ("strong", 1, 2, 2, (0, 0, 16), (256, 256), 2, 5),
        ("compute.off", 1, 1, 1, (256, 256, 16), None, 2, 5, {"compute": 100, "thread": 0, "modes": COMPUTE}),
        ("compute.on", 1, 1, 1, (256, 256, 16), None, 2, 5, {"compute": 100, "thread": 1, "modes": COMPUTE}),
        ("compute.off", 2, 1, 1, (128, 128, 16), None, 2, 5, {"compute": 100, "thread": 0, "modes": COMPUTE}),
        ("compute.on", 2, 1, 1, (128, 128, 16), None, 2, 5, {"compute": 100, "thread": 1, "modes": COMPUTE}),
    ] + SMALL + SMALL_TRACE + ORIGINAL + GROWTH + PERSIST,
    "launch": [DEFAULT, MPMD, SRUN, MPICH, DEFAULT, MPMD, SRUN, MPICH],
    "default": [DEFAULT],
    "small": SMALL + SMALL_TRACE,
    "original": ORIGINAL,
    "growth": GROWTH,
    "growth-small": [g for g in GROWTH if g[1] <= 8],
    "persist": PERSIST,
    "netcdf4": NETCDF4,
    # 2 x 1 ranks per member, so that halos, edges and an M x N decomposition are all exercised; the
    # second rep starts with the second mode. The original's calls in every mode they run in, replay
    # reaching its third cycle.
    "smoke": [("default", 2, 2, 1, (12, 10, 3), None, 2, 2, {"modes": ALL_MODES, "rotate": 1}),
              ("original", 2, 2, 1, (12, 10, 3), None, 1, 4,
               {"modes": ALL_MODES.replace("transfer-persist,", ""), "calls": "original"}),
              ("compute.off", 1, 1, 1, (12, 10, 3), None, 1, 3, {"compute": 5, "thread": 0, "modes": COMPUTE}),
              ("compute.on", 1, 1, 1, (12, 10, 3), None, 1, 3, {"compute": 5, "thread": 1, "modes": COMPUTE}),
              ("netcdf4", 2, 2, 1, (12, 10, 3), None, 1, 3, {"modes": NETCDF4_MODES + ",file", "api": "netcdf4"}),
              ("netcdf4-serial", 2, 2, 1, (12, 10, 3), None, 1, 3,
               {"modes": "transfer,transfer-replay,file", "api": "netcdf4-serial"})],
}


def options(spec):
    """The options of a sweep entry ({} if none)."""
    return spec[8] if len(spec) > 8 else {}


def output(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def machine(build):
    mem_kib = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    version = "?"
    with open(os.path.join(HERE, "..", "include", "dtf.h")) as f:
        for line in f:
            if line.startswith("#define DTF_VERSION "):
                version = line.split()[2].strip('"')
    commit = output(["git", "-C", HERE, "describe", "--always", "--dirty"])
    return {
        "uname": " ".join(platform.uname()),
        "cpus": os.cpu_count(),
        "mem_gib": round(mem_kib / 2**20, 1),
        "mpi": output(["mpirun", "--version"]).splitlines()[0] if output(["mpirun", "--version"]) else "?",
        "pnetcdf": output(["pnetcdf-config", "--version"]) or "?",
        "dtf": f"{version} ({commit})" if commit else version,
    }


def config(spec, out):
    """The run's config: letkf.ini, or a copy of it in OUT with the run's buffer_data, or without
    persist=1 (run option persist=0: the *.p.nc files then move as the *.t.nc files do). A run without
    the transfer-persist mode gets it without persist=1 too, as a user who writes no file would: dtf
    makes the file communicators ahead only where no file is written at a rank's own time
    (docs/ARCHITECTURE.md, "Layers")."""
    ini = os.path.join(HERE, "letkf.ini")
    opt = dict(options(spec))
    opt.setdefault("persist", 1 if "transfer-persist" in opt.get("modes", "") else 0)
    if "buffer_data" not in opt and opt["persist"]:
        return ini
    with open(ini) as f:
        lines = f.read().splitlines(keepends=True)
    for key, changed in (("buffer_data=", "buffer_data" in opt), ("persist=1", not opt["persist"])):
        if changed and not any(line.startswith(key) for line in lines):
            sys.exit(f"letkf.py: letkf.ini has no {key} line to change")
    if "buffer_data" in opt:
        lines = [f"buffer_data={opt['buffer_data']}\n" if line.startswith("buffer_data=") else line for line in lines]
    if not opt["persist"]:
        lines = [line for line in lines if not line.startswith("persist=1")]
    path = os.path.join(out, "letkf." + ".".join(f"{k}={opt[k]}" for k in ("buffer_data", "persist") if k in opt) + ".ini")
    with open(path, "w") as f:
        f.write("".join(lines))
    return path


def command(build, run_dir, spec, csv_prefix, timeout, ini):
    label, members, px, py, grid, glob, reps, cycles = spec[:8]
    ranks = members * px * py
    args = ["--members", members, "--px", px, "--py", py, "--grid", *grid, "--reps", reps, "--cycles", cycles,
            "--dir", run_dir, "--config", ini, "--label", label]
    if glob:
        args += ["--global", *glob]
    opt = options(spec)
    if "compute" in opt:
        args += ["--compute", opt["compute"]]
    if "modes" in opt:
        args += ["--modes", opt["modes"]]
    if opt.get("rotate"):
        args += ["--rotate", "1"]
    if "calls" in opt:
        args += ["--calls", opt["calls"]]
    if "api" in opt:
        args += ["--api", opt["api"]]
    args = [str(a) for a in args]
    if opt.get("launch") == "mpich":  # (the MPICH build of letkf_io and dtf; bench/letkf.py main)
        build = opt["build"]
    exe = os.path.join(build, "bench", "letkf_io")
    launch = {"mpmd": ["--mpmd"], "mpich": ["--mpmd", "--mpirun", "mpiexec.mpich"]}.get(opt.get("launch"), [])
    # (srun: dtfrun inside an allocation starts one srun by itself)
    alloc = ["salloc", "--quiet", "--overcommit", "-n", str(2 * ranks)] if opt.get("launch") == "srun" else []
    return alloc + [os.path.join(build, "bin", "dtfrun"), "-c", ini, "--timeout", "60",
            "--walltime", str(timeout), *launch,
            "--name", "model", "-n", str(ranks), exe, "--role", "model", *args, "--csv", csv_prefix + ".model.csv",
            ":", "--name", "assim", "-n", str(ranks), exe, "--role", "assim", *args, "--csv", csv_prefix + ".assim.csv"]


# The fields that name a run in letkf.csv (bench/plot.py's Run).
RUN_KEY = ("label", "members", "px", "py", "imax", "jmax", "kmax", "model_ranks", "assim_ranks")


def renumbered(header, rows, first):
    """The rows with `first` added to their rep."""
    if not first:
        return rows
    col = header.split(",").index("rep")
    out = []
    for line in rows:
        cells = line.split(",")
        cells[col] = str(int(cells[col]) + first)
        out.append(",".join(cells))
    return out


def consistency_errors(header, rows):
    """What is wrong with the rows of one run, beyond the values the programs verify themselves: the
    assimilation must move the same bytes in every mode (the same blocks, whatever the transport),
    and in transfer mode dtf's own timers must have counted bytes on both sides."""
    cols = header.split(",")
    io, dtf = {}, {}
    for line in rows:
        r = dict(zip(cols, line.split(",")))
        if r["agg"] != "max":
            continue
        if r["component"] == "assim" and r["phase"] == "io":
            io.setdefault(r["mode"], set()).add(float(r["bytes"]))
        if r["mode"] == "transfer" and r["phase"] == "dtf.transfer":
            dtf.setdefault(r["component"], set()).add(float(r["bytes"]))
    errors = []
    if len(set().union(*io.values())) != 1:
        errors.append(f"the assimilation's bytes per cycle differ between modes: {io}")
    if "transfer" in io and not all(min(dtf.get(c, {0})) > 0 for c in ("model", "assim")):
        errors.append(f"dtf's timers counted no transferred bytes: {dtf}")
    return errors


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--sweep", choices=sorted(SWEEPS), default="full")
    p.add_argument("--out", help="output directory (default: BUILD_DIR/bench-<sweep>)")
    p.add_argument("--md", help="also write this report (bench/report.py) from the results")
    p.add_argument("--png-dir", help="where the report's plots go (default: perf/ beside --md)")
    p.add_argument("--timeout", type=int, default=300, help="wall-time limit of one run in seconds")
    a = p.parse_args()
    build = os.path.abspath(a.build)
    out = os.path.abspath(a.out or os.path.join(build, f"bench-{a.sweep}"))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    files = os.path.join(out, "files")  # the file modes' netCDF files, removed after each run

    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": "make bench" if a.sweep == "full" else " ".join(map(shlex.quote, sys.argv)),
            "machine": machine(build), "runs": []}
    header, rows = None, []
    slurm, no_slurm = None, None  # the Slurm cluster of the srun runs, started before the first; why not
    for i, spec in enumerate(SWEEPS[a.sweep]):
        label, members, px, py, grid, glob, reps, cycles = spec[:8]
        opt = options(spec)
        env = dict(os.environ)
        if opt.get("launch") == "srun":
            if slurm is None:
                slurm = SlurmCluster(os.path.join(out, "slurm-cluster"))
                atexit.register(slurm.stop)
                no_slurm = slurm.start()
            if no_slurm:
                print(f"== run {i + 1}/{len(SWEEPS[a.sweep])} ({label}) left out: no Slurm cluster here: {no_slurm}")
                continue
            env = slurm.env(env)
        if opt.get("launch") == "mpich":
            if mpich.missing():
                print(f"== run {i + 1}/{len(SWEEPS[a.sweep])} ({label}) left out: {mpich.missing()}")
                continue
            spec = spec[:8] + (dict(opt, build=mpich.build(os.path.join(build, "bench", "mpich"), os.path.dirname(HERE),
                                                          ["dtfrun", "letkf_io"], optimize=True)),)
        os.makedirs(files, exist_ok=True)
        prefix = os.path.join(out, f"run{i}")
        cmd = command(build, files, spec, prefix, a.timeout, config(spec, out))
        if "thread" in opt:
            env["DTF_PROGRESS_THREAD"] = str(opt["thread"])
        if opt.get("trace"):
            shutil.rmtree(prefix + ".trace", ignore_errors=True)
            env["DTF_TRACE"] = prefix + ".trace"
        shown = (f"DTF_PROGRESS_THREAD={opt['thread']} " if "thread" in opt else "") + " ".join(
            map(shlex.quote, cmd)).replace(build, "BUILD").replace(os.path.dirname(HERE), ".")
        print(f"== run {i + 1}/{len(SWEEPS[a.sweep])} ({label}): {members} members x {px}x{py} ranks, "
              f"{'global ' + 'x'.join(map(str, glob)) if glob else 'x'.join(map(str, grid)) + ' per rank'}, "
              f"{reps} reps x {cycles} cycles", flush=True)
        start = time.time()
        # The timeout is dtfrun's --walltime; this one only guards against dtfrun itself hanging.
        rc = subprocess.run(cmd, cwd=files, env=env, timeout=a.timeout + 60).returncode
        wall = time.time() - start
        shutil.rmtree(files, ignore_errors=True)
        if rc != 0:
            sys.exit(f"letkf.py: run {i + 1} failed (status {rc}): {shown}")
        run_rows = []
        for role in ("model", "assim"):
            with open(f"{prefix}.{role}.csv") as f:
                lines = f.read().splitlines()
            header = header or lines[0]
            run_rows += lines[1:]
        errors = consistency_errors(header, run_rows)
        if errors:
            sys.exit(f"letkf.py: run {i + 1} is inconsistent: " + "; ".join(errors))
        nx = glob[0] // px if glob else grid[0]
        ny = glob[1] // py if glob else grid[1]
        if opt.get("trace"):  # where the calls' time went, rank by rank (the report shows it)
            summary = subprocess.run([os.path.join(build, "bin", "dtf-trace"), prefix + ".trace", "--top", "8"],
                                     capture_output=True, text=True)
            if summary.returncode != 0:
                sys.exit(f"letkf.py: dtf-trace failed on run {i + 1}: {summary.stderr}")
            with open(prefix + ".trace.txt", "w") as f:
                f.write(summary.stdout)
        run = {"label": label, "command": shown, "members": members, "px": px, "py": py,
               "imax": nx, "jmax": ny, "kmax": grid[2], "model_ranks": members * px * py,
               "assim_ranks": members * px * py, "reps": reps, "cycles": cycles,
               "compute_ms": opt.get("compute", 0), "wall_s": round(wall, 1),
               **{k: opt[k] for k in ("buffer_data", "persist") if k in opt},
               **({"trace": os.path.basename(prefix) + ".trace.txt"} if opt.get("trace") else {})}
        # A run launched again (the same label and sizes) continues the rep numbers of its earlier
        # launches: its samples add to theirs, and report.py tells the launches apart.
        same = [r for r in meta["runs"] if all(r[k] == run[k] for k in RUN_KEY)]
        rows += renumbered(header, run_rows, sum(r["reps"] for r in same))
        meta["runs"].append(run)
        print(f"   {wall:.1f} s", flush=True)
    # The planning micro-benchmark (one core, no MPI), for the report's planning section.
    plan = [os.path.join(build, "bench", "plan_bench"), "--csv", os.path.join(out, "planning.csv")]
    if a.sweep == "smoke":
        plan += ["--max", "1000", "--reps", "1"]
    print("== planning micro-benchmark: " + " ".join(plan).replace(build, "BUILD"), flush=True)
    if subprocess.run(plan, timeout=a.timeout).returncode != 0:
        sys.exit("letkf.py: the planning micro-benchmark failed")
    # What a small cycle costs call by call, in instructions (bench/callcost.py, under valgrind), for
    # the report's "Where the cycle goes"; and the original DTF's pattern, 2 members x 2 ranks, for "The
    # original DTF's pattern" (its file column: what the original, a patched PnetCDF, runs per call).
    costs = []
    if a.sweep in ("full", "small", "smoke"):
        quick = ["--grid", "12", "10", "3", "--cycles", "2", "--roles", "model"] if a.sweep == "smoke" else []
        costs.append(("callcost", quick))
    if a.sweep in ("full", "original"):
        costs.append(("callcost-original", ["--calls", "original", "--members", "2", "--px", "2",
                                            "--grid", "16", "16", "20", "--cycles", "6"]))
    for name, extra in costs:
        cost = [sys.executable, os.path.join(HERE, "callcost.py"), build, "--out", os.path.join(out, name),
                "--md", os.path.join(out, name + ".md"), *extra]
        print("== instructions per cycle: " + " ".join(cost[1:]).replace(build, "BUILD"), flush=True)
        if subprocess.run(cost, stdout=subprocess.DEVNULL, timeout=a.timeout).returncode != 0:
            sys.exit(f"letkf.py: bench/callcost.py {' '.join(extra)} failed")
    with open(os.path.join(out, "letkf.csv"), "w") as f:
        f.write("\n".join([header] + rows) + "\n")
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"results: {out}/letkf.csv, {out}/meta.json")
    if a.md:
        report = [sys.executable, os.path.join(HERE, "report.py"), out, "--md", a.md]
        if a.png_dir:
            report += ["--png-dir", a.png_dir]
        sys.exit(subprocess.run(report).returncode)


if __name__ == "__main__":
    main()
