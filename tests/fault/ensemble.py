#!/usr/bin/env python3
"""An ensemble that survives a member, or members that survive their reader (see ensemble.c).

usage: ensemble.py --dtfrun PATH --exe PATH [--lost member|assim|absent|late|never|start-late]
                   [--persist | --fallback VALUE]
                   [--ioserver-exe PATH] [--late-at open|get] [--members M] [--kill K]
                   [--member-ranks N] [--assim-ranks N]

Transfer run: dtfrun --keep-going starts the members (each its own job) and the assimilation, with
DTF_VERBOSE_LEVEL=1 (no file may be left open at dtf_finalize) and DTF_PRINT_STATS=2. Oracle run:
the same programs without dtf (plain PnetCDF), the surviving members one after the other, then the
assimilation.
--lost member: member K's rank 0 dies after its puts. The assimilation must say that member K was
left out (DTF_ERR_PEER naming it), read the others, end with status 0 and dtf_finalize succeeding;
dtfrun must exit with the killed member's status, the others' statuses in its summary; analysis.nc
of the two runs must be equal byte for byte.
With --persist --ioserver-exe (lost member): an I/O server of 2 ranks ("io") writes the members'
files; it must say that member K was lost, end with status 0, and the survivors' files must be byte
for byte the oracle's (member K's not written).
--lost assim: the assimilation's rank 0 dies once it opened hist.0.nc. Every member must end with
status 0, its failed calls naming 'assim', and with --persist (persist=1 on the members' files) every
hist.<m>.nc must be on disk, byte for byte the oracle's: nothing is lost. With --fallback VALUE
(fallback=VALUE on the members' files) the same, but no member call may fail, and each member's
rank 0 must say that its session went to the file system, and why.
--lost absent --fallback N: nobody dies; the assimilation never opens member K's file. Member K's
session must go to the file system after N seconds, or once the assimilation came to dtf_finalize
if that is sooner (its hist.K.nc byte for byte the oracle's, its rank 0 saying so and why), the other members' files must not be written (they were read), and every
component must end with status 0.
--lost late --fallback N: nobody dies; the assimilation reads member K's file last, 2.5 s after the
others (ENSEMBLE_LATE=K, in the oracle run too), when member K's session has gone to the file system
after N seconds. The assimilation must read it from there (its rank 0 saying so) and use every
member: analysis.nc and hist.K.nc byte for byte the oracle's, the other members' files not written.
With --late-at get, the assimilation opens member K's file in time and is late with its get
(ENSEMBLE_LATE_AT=get): the same. With --ioserver-exe, an I/O server of 2 ranks ("io") writes the
file the member falls back to, and the assimilation reads it once the server has written it.
--lost never --fallback N: the assimilation is never started. Every member must go on without it
after DTF_TIMEOUT in dtf_init (its rank 0 saying so), write its file (byte for byte the oracle's,
its rank 0 saying that the session went to the file system) and end with status 0.
With --ioserver-exe, an I/O server of 2 ranks ("io") writes the files: it connects to the members
before it waits for the assimilation, and goes on without that too (so do the members, connecting to
the server first); it must say so and write every member's file.
--lost start-late --fallback N: the assimilation starts TIMEOUT + 3 s late (ENSEMBLE_START_LATE), when
the members have gone on without it as with --lost never; they write their files 3 s after that
(ENSEMBLE_WRITE_LATE). Its dtf_init must go on without each member (and the I/O server) at once, saying
so, and it must read every member's file from the file system once written (its rank 0 saying so):
analysis.nc and every hist.<m>.nc byte for byte the oracle's, every component ending with status 0.
"""
import argparse
import filecmp
import os
import re
import subprocess
import sys
import tempfile
import time

TIMEOUT = 5


def config(members, persist, fallback, ioserver):
    names = [f"m{m}" for m in range(members)] + ["assim"] + (["io"] if ioserver else [])
    lines = ["[INFO]", f"ncomp={len(names)}"] + [f'comp_name="{n}"' for n in names]
    for m in range(members):
        lines += ["[FILE]", f'filename="hist.{m}.nc"', f'writer="m{m}"', 'readers="assim"', 'mode="transfer"']
        lines += ["persist=1"] if persist else []
        lines += ['ioserver="io"'] if ioserver else []
        lines += [f"fallback={fallback}"] if fallback else []
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dtfrun", required=True)
    p.add_argument("--exe", required=True)
    p.add_argument("--lost", choices=["member", "assim", "absent", "late", "never", "start-late"], default="member")
    p.add_argument("--persist", action="store_true")
    p.add_argument("--fallback", metavar="VALUE")
    p.add_argument("--ioserver-exe", help="dtf-ioserver (with --persist or --fallback): it writes the members' files")
    p.add_argument("--late-at", choices=["open", "get"], default="open")
    p.add_argument("--members", type=int, default=3)
    p.add_argument("--kill", type=int, default=1)
    p.add_argument("--member-ranks", type=int, default=2)
    p.add_argument("--assim-ranks", type=int, default=3)
    a = p.parse_args()
    exe = os.path.abspath(a.exe)
    failures = []
    with tempfile.TemporaryDirectory(prefix="dtf-ensemble-") as work:
        runs = {name: os.path.join(work, name) for name in ("transfer", "oracle")}
        for d in runs.values():
            os.mkdir(d)
        ini = os.path.join(work, "dtf.ini")
        with open(ini, "w") as f:
            f.write(config(a.members, a.persist, a.fallback, a.ioserver_exe))
        kill = {"member": a.kill, "assim": -2, "absent": -3 - a.kill, "late": -1, "never": -1, "start-late": -1}[a.lost]
        late = {"ENSEMBLE_LATE": str(a.kill), "ENSEMBLE_LATE_AT": a.late_at} if a.lost == "late" else {}
        # (the reader is there from the start: the members write once its dtf_init has returned, so
        # that their fallback= bound of a second or so does not run while it still connects)
        ready = {"ENSEMBLE_READY": os.path.join(work, "assim-ready")} if a.lost in ("absent", "late") else {}
        # (the members, having waited TIMEOUT for it, write their files 3 s after the assimilation started:
        # its opens wait for them)
        start = {"ENSEMBLE_START_LATE": str(TIMEOUT + 3), "ENSEMBLE_WRITE_LATE": "6"} \
            if a.lost == "start-late" else {}
        cmd = [a.dtfrun, "--keep-going", "--timeout", str(TIMEOUT), "--walltime", "90"]
        for m in range(a.members):
            cmd += ["--name", f"m{m}", "-n", str(a.member_ranks), exe, "member", str(m), ini, str(kill), ":"]
        if a.lost == "never":  # (the members only)
            cmd.pop()
        else:
            cmd += ["--name", "assim", "-n", str(a.assim_ranks), exe, "assim", ini, str(a.members), str(kill)]
        if a.ioserver_exe:
            cmd += [":", "--name", "io", "-n", "2", os.path.abspath(a.ioserver_exe), "io", ini]
        print("$ " + " ".join(cmd), flush=True)
        t0 = time.monotonic()
        env = dict(os.environ, DTF_VERBOSE_LEVEL="1", DTF_PRINT_STATS="2", **late, **start, **ready)
        run = subprocess.run(cmd, cwd=runs["transfer"], env=env, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=150)
        elapsed = time.monotonic() - t0
        out = run.stdout
        print(out)
        print(f"exit status {run.returncode} after {elapsed:.1f} s")

        # The oracle: plain PnetCDF, the surviving members first, then the assimilation.
        env = dict(os.environ, ENSEMBLE_NODTF="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **late)
        mpirun = ["mpirun", "--bind-to", "none", "--oversubscribe"]
        lost = a.kill if a.lost == "member" else -1
        steps = [(a.member_ranks, ["member", str(m), ini, "-1"]) for m in range(a.members) if m != lost]
        steps.append((a.assim_ranks, ["assim", ini, str(a.members), str(lost)]))
        for n, args in steps:
            ref = subprocess.run(mpirun + ["-n", str(n), exe] + args, cwd=runs["oracle"], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            if ref.returncode != 0:
                failures.append(f"the oracle run ({' '.join(args[:2])}) failed:\n{ref.stdout}")
        if a.lost == "member":
            files = ["analysis.nc"] + ([f"hist.{m}.nc" for m in range(a.members) if m != a.kill] if a.persist else [])
            if os.path.exists(os.path.join(runs["transfer"], f"hist.{a.kill}.nc")):
                failures.append(f"hist.{a.kill}.nc was written, though member {a.kill} died before its close")
        elif a.lost in ("absent", "late"):
            files = [f"hist.{a.kill}.nc"] + (["analysis.nc"] if a.lost == "late" else [])
            for m in range(a.members):
                if m != a.kill and os.path.exists(os.path.join(runs["transfer"], f"hist.{m}.nc")):
                    failures.append(f"hist.{m}.nc was written, though its reader read it")
        else:  # assim, never, start-late
            files = [f"hist.{m}.nc" for m in range(a.members)] if a.persist or a.fallback else []
            files += ["analysis.nc"] if a.lost == "start-late" else []
        for name in files:
            got, want = (os.path.join(runs[r], name) for r in ("transfer", "oracle"))
            if not os.path.exists(got):
                failures.append(f"{name} was not written")
            elif not os.path.exists(want) or not filecmp.cmp(got, want, shallow=False):
                failures.append(f"{name} differs from the one plain PnetCDF wrote")

    if "is still open" in out:
        failures.append("a file was left open at dtf_finalize (a failed close must close it all the same)")
    if a.lost == "member":
        used = " ".join(str(m) for m in range(a.members) if m != a.kill)
        if f"[assim] ensemble assim: members used: {used}\n" not in out:
            failures.append(f"the assimilation must use members {used}")
        if f"[assim] ensemble assim: member {a.kill} left out: " not in out:
            failures.append(f"the assimilation must say that it left member {a.kill} out")
        if "[assim] ensemble assim: ok" not in out:
            failures.append("the assimilation did not report ok (a failed check, or dtf_finalize failed)")
        survivors = [f"m{m}" for m in range(a.members) if m != a.kill] + ["assim"]
        if a.ioserver_exe:
            survivors.append("io")
            if f"[io] [dtf io:0] notice: dtf_ioserver 'io': component 'm{a.kill}' was lost" not in out:
                failures.append(f"the I/O server must say that member {a.kill} was lost")
    elif a.lost in ("absent", "late"):
        why = "gave up after" if a.lost == "late" else "(gave up after|but component 'assim' called dtf_finalize)"
        if not re.search(rf"\[m{a.kill}\] \[dtf m{a.kill}:0\] notice: '[^']*/hist\.{a.kill}\.nc' \(session 1\) went to "
                         rf"the file system \(fallback={a.fallback}, [^)]*\): .*{why}", out):
            failures.append(f"member {a.kill}'s rank 0 must say that its session went to the file system, and why")
        if len(re.findall(r"\(session \d+\) went to the file system", out)) != 1:
            failures.append("only the absent reader's session may go to the file system")
        if "[assim] ensemble assim: ok" not in out:
            failures.append("the assimilation did not report ok")
        if a.lost == "late":
            if not re.search(rf"\[assim\] \[dtf assim:0\] notice: reading '[^']*/hist\.{a.kill}\.nc' \(session 1\) from "
                             rf"the file system: component 'm{a.kill}' wrote it there", out):
                failures.append(f"the assimilation's rank 0 must say that it read hist.{a.kill}.nc from the file system")
            order = [m for m in range(a.members) if m != a.kill] + [a.kill]
            if f"[assim] ensemble assim: members used: {' '.join(map(str, order))}\n" not in out:
                failures.append("the assimilation must use every member")
            if "was never used" in out:
                failures.append("a control message was left unused (a protocol leak)")
        survivors = [f"m{m}" for m in range(a.members)] + ["assim"] + (["io"] if a.ioserver_exe else [])
    elif a.lost in ("never", "start-late"):
        for m in range(a.members):
            if not re.search(rf"\[m{m}\] \[dtf m{m}:0\] notice: going on without component 'assim', which did not "
                             rf"connect", out):
                failures.append(f"member {m}'s rank 0 must say that it goes on without the assimilation")
            if not re.search(rf"\[m{m}\] \[dtf m{m}:0\] notice: '[^']*/hist\.{m}\.nc' \(session 1\) went to the file "
                             rf"system \(fallback={a.fallback}, [^)]*\): .*component 'assim' never connected", out):
                failures.append(f"member {m}'s rank 0 must say that its session went to the file system, and why")
        survivors = [f"m{m}" for m in range(a.members)]
        if a.lost == "start-late":
            survivors.append("assim")
            for peer in [f"m{m}" for m in range(a.members)] + (["io"] if a.ioserver_exe else []):
                if f"[assim] [dtf assim:0] notice: going on without component '{peer}': component '{peer}' went on " \
                        "without this component earlier in this run" not in out:
                    failures.append(f"the assimilation must say that it goes on without '{peer}', which went on without it")
            for m in range(a.members):
                if not re.search(rf"\[assim\] \[dtf assim:0\] notice: reading '[^']*/hist\.{m}\.nc' \(session 1\) from "
                                 rf"the file system: component 'm{m}' went on without this component", out):
                    failures.append(f"the assimilation's rank 0 must say that it read hist.{m}.nc from the file system")
            if f"[assim] ensemble assim: members used: {' '.join(str(m) for m in range(a.members))}\n" not in out:
                failures.append("the assimilation must use every member")
            if "[assim] ensemble assim: ok" not in out:
                failures.append("the assimilation did not report ok")
        if a.ioserver_exe:
            survivors.append("io")
            if not re.search(r"\[io\] \[dtf io:0\] notice: going on without component 'assim', which did not connect", out):
                failures.append("the I/O server must say that it goes on without the assimilation")
            if f"[io] [dtf io] stats over 2 ranks: " not in out or \
                    not re.search(rf"\[dtf io\] stats .* {a.members} files written \(persist=1\)", out):
                failures.append(f"the I/O server must have written the {a.members} members' files")
    elif a.fallback:
        if "ensemble member: reader lost: " in out:
            failures.append("with fallback=, no member call may fail")
        for m in range(a.members):
            if not re.search(rf"\[m{m}\] \[dtf m{m}:0\] notice: '[^']*/hist\.{m}\.nc' \(session 1\) went to the file "
                             rf"system \(fallback={a.fallback}, [^)]*\): .*component 'assim'", out):
                failures.append(f"member {m}'s rank 0 must say that its session went to the file system, and why")
        survivors = [f"m{m}" for m in range(a.members)]
    else:
        if "[m0] ensemble member: reader lost: " not in out:
            failures.append("member 0 must report that its reader was lost")
        survivors = [f"m{m}" for m in range(a.members)]
    for name in survivors:
        if name not in ("assim", "io") and f"[{name}] ensemble {name}: ok" not in out:
            failures.append(f"{name} did not report ok")
        line = next((l for l in out.splitlines() if re.match(rf"dtfrun:\s+{name}\s", l)), "")
        if run.returncode != 0 and "exited with status 0" not in line:  # (no summary when all exit 0)
            failures.append(f"dtfrun's summary must show {name} exiting with status 0")
    want = 0 if a.lost in ("absent", "late", "never", "start-late") else 137
    if run.returncode != want:
        failures.append(f"dtfrun must exit with status {want}, not {run.returncode}")
    if elapsed > TIMEOUT + 30:
        failures.append(f"took {elapsed:.1f} s with DTF_TIMEOUT={TIMEOUT}")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
