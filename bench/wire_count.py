#!/usr/bin/env python3
"""Every point-to-point message on the wire per replayed cycle, the messages inside MPI's collectives
and communicator creation included: Open MPI's pml monitoring (OMPI_MCA_pml_monitoring_enable=2, which
tells dtf's own messages from those MPI sends inside collectives), over the LETKF pattern (bench/letkf_io,
MEMBERS members of one rank per component, 16x16x4 points per rank, replay, one MPMD launch). Two runs,
of 5 and 15 cycles, differenced: what one replayed cycle costs, without dtf_init's connection and the
first, matched cycle. dtf's own counters (dtf_counters_read) see only the first kind (its collectives'
messages apart, as DTF_COUNT_COLLECTIVE_SENT / _RECEIVED).

Then the same for mpi-raw (the same pattern's messages by plain MPI), and the ratios. A run that Open
MPI 4.1's monitoring component crashes (SIGSEGV in mca_coll_monitoring or mca_pml_monitoring_del_comm
as dtf_finalize frees a communicator, most runs here) is run again, up to 6 times.

usage: bench/wire_count.py BUILD_DIR [--members N ...] [--api API] [--md FILE]     (Open MPI 4 only)
--api: letkf_io's (default pnetcdf; netcdf4, netcdf4-serial: netCDF-C, a file per model rank)
--md: replace the "Messages on the wire" section of FILE (appended if absent).
"""
import argparse
import csv
import glob
import statistics
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import letkf  # noqa: E402  (the benchmark's command line and config)
import mdsection  # noqa: E402

SENT = re.compile(r"([EI])\s+\d+\s+\d+\s+\d+ bytes\s+(\d+) msgs sent")


def counted(prefix, members):
    """dtf's own counters' messages per cycle over all ranks (letkf_io's msg.control, msg.data and
    msg.collective.wire rows: each message counted where it was sent and where it was received, so halved),
    the median over cycles 2 and up."""
    per_cycle = {}
    for comp in ("model", "assim"):
        with open(f"{prefix}.{comp}.csv") as f:
            for r in csv.DictReader(f):
                if r["agg"] == "mean" and r["phase"] in ("msg.control", "msg.data", "msg.collective.wire") and \
                        int(r["cycle"]) >= 2:
                    per_cycle[r["cycle"]] = per_cycle.get(r["cycle"], 0) + float(r["seconds"]) * members / 2
    return statistics.median(per_cycle.values()) if per_cycle else 0


def run(build, members, cycles, mode, api):
    """Messages sent over the run: {'E': dtf's and the program's own, 'I': inside MPI}, the most one
    process sent, and what dtf's own counters counted per cycle (counted())."""
    with tempfile.TemporaryDirectory(prefix="wire_count-") as work:
        os.mkdir(os.path.join(work, "files"))
        os.mkdir(os.path.join(work, "mon"))
        spec = ("wire", members, 1, 1, (16, 16, 4), None, 1, cycles, {"modes": mode, "launch": "mpmd", "api": api})
        cmd = letkf.command(build, os.path.join(work, "files"), spec, os.path.join(work, "csv"), 300,
                            letkf.config(spec, work))
        env = dict(os.environ, OMPI_MCA_pml_monitoring_enable="2", OMPI_MCA_pml_monitoring_enable_output="3",
                   OMPI_MCA_pml_monitoring_filename=os.path.join(work, "mon", "prof"))
        for _ in range(6):  # Open MPI 4.1's monitoring component crashes freeing a communicator at times
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=330)
            if r.returncode != 139 or "_monitoring" not in r.stdout + r.stderr:
                break
            for f in glob.glob(os.path.join(work, "mon", "prof*")):
                os.remove(f)
        if r.returncode != 0:
            sys.exit(f"wire_count.py: the run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        total, most = {"E": 0, "I": 0}, 0
        files = glob.glob(os.path.join(work, "mon", "prof*"))
        if not files:
            sys.exit("wire_count.py: pml monitoring wrote nothing (Open MPI 4 with its monitoring component?)")
        for path in files:
            mine = 0
            with open(path) as f:
                for line in f:
                    m = SENT.match(line)
                    if m:
                        total[m.group(1)] += int(m.group(2))
                        mine += int(m.group(2))
            most = max(most, mine)
        return total, most, counted(os.path.join(work, "csv"), members)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--members", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--api", default="pnetcdf", choices=["pnetcdf", "pnetcdf-blocking", "netcdf4", "netcdf4-serial"])
    p.add_argument("--md", help="replace the section of this markdown file")
    a = p.parse_args()
    if a.md and a.api != "pnetcdf":
        p.error("--md replaces the section of the PnetCDF pattern: not with --api")
    build = os.path.abspath(a.build)
    print("messages sent per replayed cycle: dtf's own (its collectives included), inside MPI's collectives, "
          "all; the busiest process's; mpi-raw's; dtf / mpi-raw")
    print("members   own  counted  inside MPI   all  busiest   raw  busiest   all/raw  busiest/raw")
    rows = []
    for n in a.members:
        per_cycle = {}
        for mode in ("transfer-replay", "mpi-raw"):
            (t5, m5, _), (t15, m15, c15) = run(build, n, 5, mode, a.api), run(build, n, 15, mode, a.api)
            per_cycle[mode] = ((t15["E"] - t5["E"]) / 10, (t15["I"] - t5["I"]) / 10, (m15 - m5) / 10, c15)
        own, inside, most, mine = per_cycle["transfer-replay"]
        raw = sum(per_cycle["mpi-raw"][:2])  # (mpi-raw counts only its data in letkf_io's rows)
        raw_most = per_cycle["mpi-raw"][2]
        print(f"{n:7} {own:5.0f} {mine:8.0f} {inside:11.0f} {own + inside:5.0f} {most:8.1f} {raw:5.0f} {raw_most:8.1f} "
              f"{(own + inside) / raw:8.1f}x {most / raw_most:11.1f}x", flush=True)
        rows.append(f"| {n} | {own:.0f} | {mine:.0f} | {inside:.0f} | {own + inside:.0f} | {most:.0f} | {raw:.0f} | {raw_most:.0f} | "
                    f"{(own + inside) / raw:.1f}x | {most / raw_most:.1f}x |")
    if a.md:
        mdsection.replace(a.md, "wire_count.py", "\n".join([
            "## Messages on the wire", "",
            "Every point-to-point message sent per replayed cycle, those inside MPI's collectives included (Open "
            "MPI's pml monitoring; `bench/wire_count.py BUILD`): the LETKF pattern, members of one rank per "
            "component, 16x16x4 points per rank, one MPMD launch, runs of 5 and 15 cycles differenced. dtf's own "
            "messages include its collectives over a file's ranks, which are point-to-point messages on a "
            "communicator each set of ranks keeps; a cycle creates no communicator. Inside MPI: the benchmark "
            "program's own barrier per cycle. mpi-raw: the same pattern's data by plain MPI. Besides the data, "
            "per file and replayed cycle: a FileDefined and a ReaderDone per reader rank, each between it and its "
            "own writer rank (the assimilation's 16 ranks read each member's two files; a reader's open and "
            "close make no collective), and for the analysis the assimilation writes back, its writer ranks' "
            "allreduces at `dtf_transfer`, at the close and at the session's end (each a binomial tree over 16 "
            "ranks, 2 x 15 messages; `wait_all`'s record count comes from the plan). dtf's counters: what "
            "`dtf_counters_read` counted of the same (control, data and its collectives' messages, "
            "letkf_io's rows), median per cycle: equal to the wire's count of dtf's own messages.", "",
            "| members | dtf's own | dtf's counters | inside MPI | dtf, all | busiest process | mpi-raw | its busiest | "
            "all / mpi-raw | busiest / mpi-raw's |", "|---|---|---|---|---|---|---|---|---|---|", *rows, ""]))
        print(f"wrote {a.md}")


if __name__ == "__main__":
    main()
