#!/usr/bin/env python3
"""Fault injection with real, separately launched components (see fault.c for the scenarios).

usage: fault.py SCENARIO --dtfrun PATH --exe PATH [--writers N] [--readers N]

Every launch runs under dtfrun --walltime, so a hang fails the test.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

CONFIG = """[INFO]
ncomp=2
comp_name="writer"
comp_name="reader"
[FILE]
filename="f.nc"
comp1="writer"
comp2="reader"
mode="transfer"
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("scenario", choices=["ok", "mismatch", "badarg", "kill", "noexit", "noclose"])
    p.add_argument("--dtfrun", required=True)
    p.add_argument("--exe", required=True)
    p.add_argument("--writers", type=int, default=2)
    p.add_argument("--readers", type=int, default=3)
    a = p.parse_args()
    timeout = 5
    with tempfile.TemporaryDirectory(prefix="dtf-fault-") as work:
        ini = os.path.join(work, "dtf.ini")
        with open(ini, "w") as f:
            f.write(CONFIG)
        cmd = [a.dtfrun, "--timeout", str(timeout), "--walltime", "90",
               "--name", "writer", "-n", str(a.writers), a.exe, "writer", ini, a.scenario, ":",
               "--name", "reader", "-n", str(a.readers), a.exe, "reader", ini, a.scenario]
        print("$ " + " ".join(cmd), flush=True)
        t0 = time.monotonic()
        run = subprocess.run(cmd, cwd=work, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=150)
        elapsed = time.monotonic() - t0
    out = run.stdout
    print(out)
    print(f"exit status {run.returncode} after {elapsed:.1f} s")
    failures = []
    if a.scenario == "kill":
        # dtfrun tells the survivor (DTF_LOST_DIR): the reader's wait for the data must fail at once
        # with an error naming the writer and the killed rank, and the reader exit by itself; dtfrun
        # reports both, and nothing is left running.
        if run.returncode == 0:
            failures.append("a run in which a component was killed must fail")
        if not ("DTF_ERR_PEER" in out and "component 'writer' was lost" in out and "rank 1 killed by signal 9" in out):
            failures.append("the reader must report that component 'writer' was lost, rank 1 by SIGKILL")
        if "component 'reader' exited with status" not in out:
            failures.append("the reader must exit by itself (not be stopped by dtfrun)")
        if "dtfrun:   writer" not in out or "dtfrun:   reader" not in out:
            failures.append("dtfrun's summary must report both components")
        if "signal 9" not in out and "SIGKILL" not in out and "Killed" not in out:
            failures.append("the report must say that a writer rank was killed")
        if elapsed > timeout + 30:
            failures.append(f"took {elapsed:.1f} s with DTF_TIMEOUT={timeout}")
        name = os.path.basename(a.exe)[:15]  # the kernel's process name
        ps = subprocess.run(["ps", "-eo", "pid=,stat=,comm="], capture_output=True, text=True).stdout
        left = [f[0] for f in map(str.split, ps.splitlines())
                if len(f) == 3 and f[2] == name and not f[1].startswith("Z")]  # zombies are dead
        if left:
            failures.append(f"processes left behind: {left}")
    elif a.scenario == "noexit":
        if run.returncode == 0:
            failures.append("a component whose peer skipped dtf_finalize must fail")
        if "fault writer: noexit ok" not in out:
            failures.append("the writer did not finish its part")
        if not ("DTF_ERR_TIMEOUT" in out and "dtf_finalize waited for component 'writer'" in out):
            failures.append("the reader's dtf_finalize must time out naming the writer")
        if elapsed > timeout + 30:
            failures.append(f"took {elapsed:.1f} s with DTF_TIMEOUT={timeout}")
    else:
        if run.returncode != 0:
            failures.append(f"dtfrun exited with status {run.returncode}")
        for role in ("writer", "reader"):
            if f"fault {role}: {a.scenario} ok" not in out:
                failures.append(f"the {role} did not report '{a.scenario} ok'")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
