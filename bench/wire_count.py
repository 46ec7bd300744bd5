#!/usr/bin/env python3
"""Every point-to-point message on the wire per replayed cycle, the messages inside MPI's collectives
and communicator creation included: Open MPI's pml monitoring (OMPI_MCA_pml_monitoring_enable=2, which
tells dtf's own messages from those MPI sends inside collectives), over the LETKF pattern (bench/letkf_io,
MEMBERS members of one rank per component, 16x16x4 points per rank, replay, one MPMD launch). Two runs,
of 5 and 15 cycles, differenced: what one replayed cycle costs, without dtf_init's connection and the
first, matched cycle. dtf's own counters (dtf_counters_read) see only the first kind.

usage: bench/wire_count.py BUILD_DIR [--members N ...]     (Open MPI 4 only)
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import letkf  # noqa: E402  (the benchmark's command line and config)

SENT = re.compile(r"([EI])\s+\d+\s+\d+\s+\d+ bytes\s+(\d+) msgs sent")


def run(build, members, cycles):
    """Messages sent over the run: {'E': dtf's and the program's own, 'I': inside MPI}, and the most one
    process sent."""
    with tempfile.TemporaryDirectory(prefix="wire_count-") as work:
        os.mkdir(os.path.join(work, "files"))
        os.mkdir(os.path.join(work, "mon"))
        spec = ("wire", members, 1, 1, (16, 16, 4), None, 1, cycles, {"modes": "transfer-replay", "launch": "mpmd"})
        cmd = letkf.command(build, os.path.join(work, "files"), spec, os.path.join(work, "csv"), 300,
                            letkf.config(spec, work))
        env = dict(os.environ, OMPI_MCA_pml_monitoring_enable="2", OMPI_MCA_pml_monitoring_enable_output="3",
                   OMPI_MCA_pml_monitoring_filename=os.path.join(work, "mon", "prof"))
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=330)
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
        return total, most


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("build", metavar="BUILD_DIR")
    p.add_argument("--members", type=int, nargs="+", default=[1, 4, 16])
    a = p.parse_args()
    build = os.path.abspath(a.build)
    print("members  own  inside MPI  all  busiest process   (messages sent per replayed cycle)")
    for n in a.members:
        (t5, m5), (t15, m15) = run(build, n, 5), run(build, n, 15)
        own, inside = (t15["E"] - t5["E"]) / 10, (t15["I"] - t5["I"]) / 10
        print(f"{n:7} {own:5.0f} {inside:11.0f} {own + inside:5.0f} {(m15 - m5) / 10:16.1f}", flush=True)


if __name__ == "__main__":
    main()
