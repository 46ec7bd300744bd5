#!/usr/bin/env python3
"""An ensemble that survives a member (see ensemble.c): a member is killed, the assimilation goes on.

usage: ensemble.py --dtfrun PATH --exe PATH [--members M] [--kill K] [--member-ranks N] [--assim-ranks N]

Transfer run: dtfrun --keep-going starts the members (each its own job) and the assimilation; member
K's rank 0 dies after its puts. The assimilation must say that member K was left out (DTF_ERR_PEER
naming it), read the others, end with status 0 and dtf_finalize succeeding; dtfrun must exit with
the killed member's status, the others' statuses in its summary. Oracle run: the same programs
without dtf (plain PnetCDF), the surviving members one after the other, then the assimilation.
analysis.nc of the two runs must be equal byte for byte.
"""
import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time

TIMEOUT = 5


def config(members):
    lines = ["[INFO]", f"ncomp={members + 1}"] + [f'comp_name="m{m}"' for m in range(members)] + ['comp_name="assim"']
    for m in range(members):
        lines += ["[FILE]", f'filename="hist.{m}.nc"', f'writer="m{m}"', 'readers="assim"', 'mode="transfer"']
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dtfrun", required=True)
    p.add_argument("--exe", required=True)
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
            f.write(config(a.members))
        cmd = [a.dtfrun, "--keep-going", "--timeout", str(TIMEOUT), "--walltime", "90"]
        for m in range(a.members):
            cmd += ["--name", f"m{m}", "-n", str(a.member_ranks), exe, "member", str(m), ini, str(a.kill), ":"]
        cmd += ["--name", "assim", "-n", str(a.assim_ranks), exe, "assim", ini, str(a.members), str(a.kill)]
        print("$ " + " ".join(cmd), flush=True)
        t0 = time.monotonic()
        run = subprocess.run(cmd, cwd=runs["transfer"], text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=150)
        elapsed = time.monotonic() - t0
        out = run.stdout
        print(out)
        print(f"exit status {run.returncode} after {elapsed:.1f} s")

        # The oracle: plain PnetCDF, the surviving members first, then the assimilation.
        env = dict(os.environ, ENSEMBLE_NODTF="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        mpirun = ["mpirun", "--bind-to", "none", "--oversubscribe"]
        steps = [(a.member_ranks, ["member", str(m), ini, "-1"]) for m in range(a.members) if m != a.kill]
        steps.append((a.assim_ranks, ["assim", ini, str(a.members), str(a.kill)]))
        for n, args in steps:
            ref = subprocess.run(mpirun + ["-n", str(n), exe] + args, cwd=runs["oracle"], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
            if ref.returncode != 0:
                failures.append(f"the oracle run ({' '.join(args[:2])}) failed:\n{ref.stdout}")
        got, want = (os.path.join(runs[r], "analysis.nc") for r in ("transfer", "oracle"))
        if not os.path.exists(got):
            failures.append("the assimilation wrote no analysis.nc")
        elif not os.path.exists(want) or not filecmp.cmp(got, want, shallow=False):
            failures.append("analysis.nc differs from the one plain PnetCDF wrote without the lost member")

    used = " ".join(str(m) for m in range(a.members) if m != a.kill)
    if f"[assim] ensemble assim: members used: {used}\n" not in out:
        failures.append(f"the assimilation must use members {used}")
    if f"[assim] ensemble assim: member {a.kill} left out: " not in out:
        failures.append(f"the assimilation must say that it left member {a.kill} out")
    if "[assim] ensemble assim: ok" not in out:
        failures.append("the assimilation did not report ok (a failed check, or dtf_finalize failed)")
    for m in range(a.members):
        if m != a.kill and f"[m{m}] ensemble m{m}: ok" not in out:
            failures.append(f"member {m} did not report ok")
    if run.returncode != 128 + 9 and run.returncode != 137:
        failures.append(f"dtfrun must exit with the killed member's status (137), not {run.returncode}")
    if "exited with status 0" not in next((l for l in out.splitlines() if l.startswith("dtfrun:   assim")), ""):
        failures.append("dtfrun's summary must show the assimilation exiting with status 0")
    if elapsed > TIMEOUT + 30:
        failures.append(f"took {elapsed:.1f} s with DTF_TIMEOUT={TIMEOUT}")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
