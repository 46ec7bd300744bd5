#!/usr/bin/env python3
"""Fault injection with real, separately launched components (see fault.c for the scenarios).

usage: fault.py SCENARIO --dtfrun PATH --exe PATH [--writers N] [--readers N] [--launch jobs|mpmd] [--unlabelled]

Every launch runs under dtfrun --walltime, so a hang fails the test; the lost-* scenarios run
without dtfrun (two mpiruns meeting through an ompi-server, as a site may launch them), each bounded
by a timeout of this script. --launch mpmd runs both components in one MPMD mpirun (dtfrun --mpmd).
--unlabelled launches them as a user may: no --name, no -c (the programs name their config), and
executables named otherwise than their components, so that dtfrun's labels are not the comp_names.
"""
import argparse
import os
import re
import signal
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
[FILE]
; wrongrole: only the writer writes it (and reads it back only within its turn), only the reader reads it
filename="g.nc"
writer="writer"
readers="reader"
mode="transfer"
[FILE]
; persist-rename: written with persist=1, then written back by the reader, which renames a variable
filename="p.nc"
comp1="writer"
comp2="reader"
mode="transfer"
persist=1
num_sessions=2
[FILE]
; persist-late-reader: written with persist=1, read a second after the writer's close began
filename="q.nc"
comp1="writer"
comp2="reader"
mode="transfer"
persist=1
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("scenario", choices=["ok", "mismatch", "badarg", "kill", "noexit", "noclose", "twowriters",
                                        "wrongrole", "persist-rename", "persist-late-reader", "onemore", "lost-connect",
                                        "lost-transfer", "lost-finalize"])
    p.add_argument("--dtfrun", required=True)
    p.add_argument("--exe", required=True)
    p.add_argument("--writers", type=int, default=2)
    p.add_argument("--readers", type=int, default=3)
    p.add_argument("--launch", choices=["jobs", "mpmd"], default="jobs")
    p.add_argument("--unlabelled", action="store_true")
    a = p.parse_args()
    # (onemore: long enough that a wait that ends only at DTF_TIMEOUT fails the test)
    timeout = 60 if a.scenario == "onemore" else 5
    if a.scenario.startswith("lost-"):
        return lost(a, timeout)
    with tempfile.TemporaryDirectory(prefix="dtf-fault-") as work:
        ini = os.path.join(work, "dtf.ini")
        with open(ini, "w") as f:
            f.write(CONFIG)
        exe = {role: a.exe for role in ("writer", "reader")}
        label = {role: ["--name", role] for role in exe}
        if a.unlabelled:  # labelled "w_prog" and "r_prog" by dtfrun
            for role in exe:
                exe[role] = os.path.join(work, role[0] + "_prog")
                os.symlink(os.path.abspath(a.exe), exe[role])
                label[role] = []
        cmd = [a.dtfrun, "--timeout", str(timeout), "--walltime", "90"] + (["--mpmd"] if a.launch == "mpmd" else []) + \
            label["writer"] + ["-n", str(a.writers), exe["writer"], "writer", ini, a.scenario, ":"] + \
            label["reader"] + ["-n", str(a.readers), exe["reader"], "reader", ini, a.scenario]
        print("$ " + " ".join(cmd), flush=True)
        t0 = time.monotonic()
        run = subprocess.run(cmd, cwd=work, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=150)
        elapsed = time.monotonic() - t0
        # persist-rename: the file on disk is still the writer's session (the refused rename not in it)
        # persist-late-reader: q.nc written once the reader was served
        dumped = {"persist-rename": "p.nc", "persist-late-reader": "q.nc"}.get(a.scenario)
        kept = subprocess.run(["ncmpidump", os.path.join(work, dumped)], text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT).stdout if dumped else ""
    out = run.stdout
    print(out)
    print(f"exit status {run.returncode} after {elapsed:.1f} s")
    failures = []
    if a.scenario == "kill":
        # The run fails within seconds, saying that a writer rank was killed, with nothing left.
        # Two jobs: dtfrun tells the survivor (DTF_LOST_DIR): the reader's wait for the data must fail
        # at once with an error naming the writer and the killed rank, and the reader exit by itself;
        # dtfrun reports both. One MPMD launch: Open MPI ends every process of it.
        if run.returncode == 0:
            failures.append("a run in which a rank was killed must fail")
        if "signal 9" not in out and "SIGKILL" not in out and "Killed" not in out:
            failures.append("the report must say that a writer rank was killed")
        if elapsed > timeout + 30:
            failures.append(f"took {elapsed:.1f} s with DTF_TIMEOUT={timeout}")
        failures += leftovers(a.exe, ini)
        if a.launch == "mpmd" and "dtfrun:   writer+reader" not in out:
            failures.append("dtfrun's summary must report the launch")
        if a.launch == "jobs":
            if not ("DTF_ERR_PEER" in out and "component 'writer' was lost" in out and "rank 1 killed by signal 9" in out):
                failures.append("the reader must report that component 'writer' was lost, rank 1 by SIGKILL")
            names = ("w_prog", "r_prog") if a.unlabelled else ("writer", "reader")
            if f"component '{names[1]}' exited with status" not in out:
                failures.append("the reader must exit by itself (not be stopped by dtfrun)")
            if any(f"dtfrun:   {name}" not in out for name in names):
                failures.append("dtfrun's summary must report both components")
    elif a.scenario == "persist-rename" and "float T(x)" not in kept:
        failures.append(f"p.nc must keep the writer's session (variable T):\n{kept}")
    elif a.scenario == "persist-late-reader" and "T = 0, 1, 2, 3, 4, 5, 6, 7 ;" not in kept:
        failures.append(f"q.nc must hold the writer's values of T:\n{kept}")
    elif a.scenario == "noexit":
        # dtf finalizes the writer inside MPI_Finalize, where the reader's dtf_finalize meets it (else
        # that dtf_finalize fails after DTF_TIMEOUT, and the reader aborts).
        if run.returncode != 0:
            failures.append(f"dtfrun exited with status {run.returncode}")
        for role in ("writer", "reader"):
            if f"fault {role}: noexit ok" not in out:
                failures.append(f"the {role} did not report 'noexit ok'")
        if elapsed > timeout + 30:
            failures.append(f"took {elapsed:.1f} s with DTF_TIMEOUT={timeout}")
    else:
        if run.returncode != 0:
            failures.append(f"dtfrun exited with status {run.returncode}")
        # Told at once: no rank waited DTF_TIMEOUT out (that wait's error says "gave up after"); the
        # run's time includes starting the MPI jobs, which under ThreadSanitizer alone takes seconds.
        if a.scenario == "onemore" and elapsed > 30:
            failures.append(f"the reader's extra open must fail once the writer is in dtf_finalize, not after "
                            f"DTF_TIMEOUT={timeout} ({elapsed:.1f} s)")
        if a.scenario == "onemore":  # two failed opens on each rank: dtf's error printed once (or never)
            printed = [len(re.findall(rf"\[dtf reader:{r}\] error: ", out)) for r in range(a.readers)]
            want = 0 if os.environ.get("DTF_PRINT_ERRORS") == "0" else 1
            if sum(printed) != want:
                failures.append(f"dtf's error lines per reader rank: {printed}, expected {want} in all (one line "
                                f"per error and component)")
        if a.scenario == "twowriters" and ("gave up after" in out or "writes session 1" not in out):
            failures.append(f"two writers of one session must be told at once that the other writes it too, not "
                            f"after DTF_TIMEOUT={timeout} ({elapsed:.1f} s)")
        for role in ("writer", "reader"):
            if f"fault {role}: {a.scenario} ok" not in out:
                failures.append(f"the {role} did not report '{a.scenario} ok'")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASS")


def leftovers(exe, ini):
    """A failure message for every live process of `exe` left behind by this run (its command line
    names the run's `ini`; other tests may run the same program meanwhile): none expected."""
    name = os.path.basename(exe)[:15]  # the kernel's process name
    ps = subprocess.run(["ps", "-eo", "pid=,stat=,comm=,args="], capture_output=True, text=True).stdout
    left = [f[0] for f in (line.split(None, 3) for line in ps.splitlines())
            if len(f) == 4 and f[2] == name and ini in f[3] and not f[1].startswith("Z")]  # zombies are dead
    return [f"processes left behind: {left}"] if left else []


def run_bounded(proc, limit):
    """Output and status of `proc`, or (output, None) after killing its session if it ran `limit` s."""
    try:
        out, _ = proc.communicate(timeout=limit)
        return out, proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return out, None


def lost(a, timeout):
    """The reader dies (fault.c: before dtf_init, while the writer transfers, before dtf_finalize) and no
    dtfrun tells the writer: its first wait for the reader ends after DTF_TIMEOUT, every later one at
    once, and the writer ends by itself, non-zero, naming the reader (and, should MPI_Finalize wait for
    the dead job, dtf's watchdog ends it min(DTF_TIMEOUT, 10 s) later)."""
    failures = []
    with tempfile.TemporaryDirectory(prefix="dtf-fault-") as work:
        ini = os.path.join(work, "dtf.ini")
        with open(ini, "w") as f:
            f.write(CONFIG)
        uri = os.path.join(work, "server.uri")
        env = dict(os.environ, DTF_TIMEOUT=str(timeout), DTF_INI_FILE=ini, OMPI_MCA_oob_tcp_if_include="lo",
                   OMPI_MCA_btl_tcp_if_include="lo", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        server = subprocess.Popen(["ompi-server", "--no-daemonize", "--report-uri", uri], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            for _ in range(100):
                if os.path.exists(uri) and os.path.getsize(uri) > 0:
                    break
                time.sleep(0.1)
            base = ["mpirun", "--ompi-server", "file:" + uri, "--bind-to", "none", "--oversubscribe",
                    "-x", "DTF_TIMEOUT", "-x", "DTF_INI_FILE"]
            launch = lambda role, n: subprocess.Popen(  # noqa: E731
                base + ["-n", str(n), os.path.abspath(a.exe), role, ini, a.scenario], cwd=work, env=env, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            print("$ " + " ".join(base + ["-n", str(a.writers), a.exe, "writer", ini, a.scenario]) + " &", flush=True)
            print("$ " + " ".join(base + ["-n", str(a.readers), a.exe, "reader", ini, a.scenario]), flush=True)
            t0 = time.monotonic()
            writer, reader = launch("writer", a.writers), launch("reader", a.readers)
            limit = 4 * timeout + 40  # far beyond what is allowed: a hang fails, and the rest is still checked
            out, status = run_bounded(writer, limit)
            elapsed = time.monotonic() - t0
            rout, rstatus = run_bounded(reader, 10)
        finally:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    print("--- writer\n" + out + "--- reader\n" + rout)
    print(f"writer: exit status {status} after {elapsed:.1f} s; reader: exit status {rstatus}")
    if status is None:
        failures.append(f"the writer hung: still running after {limit} s (DTF_TIMEOUT={timeout})")
    elif status == 0:
        failures.append("the writer of a run whose reader was lost must exit with a non-zero status")
    # One wait for the lost reader times out, every later one fails at once: DTF_TIMEOUT and a margin
    # (a wait per call, as before, took 3 x DTF_TIMEOUT in lost-transfer), plus the watchdog's
    # min(DTF_TIMEOUT, 10 s) if MPI_Finalize waits for the dead job (it does not with Open MPI 4.1 here).
    bound = timeout + 8 + (timeout if "still waits for it" in out else 0)
    if elapsed > bound:
        failures.append(f"the writer took {elapsed:.1f} s to end with DTF_TIMEOUT={timeout} (at most {bound} s)")
    if "component 'reader'" not in out:
        failures.append("the writer's messages must name component 'reader'")
    if a.scenario == "lost-transfer" and "already failed to answer" not in out:
        failures.append("after one timeout, the writer's later waits for the reader must fail at once, saying so")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
