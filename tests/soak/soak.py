#!/usr/bin/env python3
"""Soak test: the demo workflow (examples/) for many cycles, checking that dtf leaks nothing per cycle.

usage: tests/soak/soak.py BUILD_DIR [--cycles N] [--warmup W] [--mode transfer|file] [--members M]
                          [--grid NZ NY NX] [--rss-growth-kib K]

Both demo components print, per cycle, the largest resident memory, open file descriptors and
communicator handle index over their ranks (DEMO_RESOURCES=1, see examples/C/demo_common.h). After
the warm-up cycles, resident memory may grow by less than K KiB (default 1024), the descriptors
must not change, and the communicator index must not climb: its lowest value in the second half of
the cycles after the warm-up is no higher than its highest in the first half. (It goes up and down:
a writer session's communicator is freed at the first file opened after the session is served,
which can come before or after a cycle's probe, and several may be served at a probe; leaked ones
lift every later probe.) And no control message may be left unused at
dtf_finalize (DTF_PRINT_STATS=2 counts them): one per cycle is a leak too small for RSS to show
in 50 cycles; and of the definitions of files other ranks read, at most one cycle's (the writer withdraws
each with its next FileDefined). In transfer mode no per-path record may be left either (num_sessions). CI runs 50 cycles; the full soak is
`tests/soak/soak.py build --cycles 1000` (a few minutes).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"^\[(\w+)\] resources (\w+) cycle (\d+): rss_kib (\d+) fds (\d+) comm_index (\d+)$")
UNUSED = re.compile(r"^\[(\w+)\] \[dtf \w+\] stats .* (\d+) never used; (\d+) definitions of files other ranks read "
                    r"dropped at the end(;.*)?$")
KEPT = re.compile(r"^\[(\w+)\] \[dtf \w+\] stats .*; (\d+) path records kept$")
THREAD = re.compile(r"^\[(\w+)\] \[dtf \w+\] stats .*; progress thread (on|off[^;]*);")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("build")
    p.add_argument("--cycles", type=int, default=1000)
    p.add_argument("--warmup", type=int, help="cycles before the baseline (default: a tenth, at least 5)")
    p.add_argument("--mode", choices=["transfer", "file"], default="transfer")
    p.add_argument("--members", type=int, default=2)
    p.add_argument("--grid", type=int, nargs=3, default=[4, 32, 32], metavar=("NZ", "NY", "NX"))
    p.add_argument("--rss-growth-kib", type=int, default=1024)
    p.add_argument("--no-rss-check", action="store_true",
                   help="report resident memory but do not judge it (sanitizer builds: ASan keeps freed "
                        "memory in quarantine, so it grows by design)")
    a = p.parse_args()
    warmup = a.warmup if a.warmup is not None else max(5, a.cycles // 10)
    if a.cycles <= warmup:
        sys.exit(f"soak.py: --cycles ({a.cycles}) must exceed the warm-up ({warmup})")
    build = os.path.abspath(a.build)
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "examples", "dtf.ini")) as f:
        ini = re.sub(r'(?m)^mode=.*$', f'mode="{a.mode}"', f.read())
    args = [str(a.cycles), *map(str, a.grid), str(a.members)]
    with tempfile.TemporaryDirectory(prefix="dtf-soak-") as work:
        with open(os.path.join(work, "dtf.ini"), "w") as f:
            f.write(ini)
        cmd = [os.path.join(build, "bin", "dtfrun"), "-c", "dtf.ini", "--timeout", "60",
               "--walltime", str(120 + a.cycles), "--name", "model", "-n", str(2 * a.members),
               os.path.join(build, "examples", "demo_model"), *args, ":",
               "--name", "assim", "-n", "2", os.path.join(build, "examples", "demo_assim"), *args]
        print("$ DEMO_RESOURCES=1 DTF_PRINT_STATS=2 " + " ".join(cmd), flush=True)
        run = subprocess.run(cmd, cwd=work, env=dict(os.environ, DEMO_RESOURCES="1", DTF_PRINT_STATS="2"), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180 + a.cycles)
    samples = {}  # component -> {cycle: (rss, fds, comm)}
    unused = {}  # component -> control messages never used
    dropped = {}  # component -> FileDefined of files other ranks read, left at dtf_finalize
    kept = {}  # component -> path records left at dtf_finalize
    thread = {}  # component -> whether its progress thread ran
    for line in run.stdout.splitlines():
        m, u, k, t = LINE.match(line), UNUSED.match(line), KEPT.match(line), THREAD.match(line)
        if t:
            thread[t[1]] = t[2]
        if m:
            samples.setdefault(m[2], {})[int(m[3])] = tuple(map(int, m.group(4, 5, 6)))
        elif u:
            unused[u[1]], dropped[u[1]] = int(u[2]), int(u[3])
            if k:
                kept[k[1]] = int(k[2])
        elif "resources" not in line and "cycle" not in line:
            print(line)
    if run.returncode != 0:
        print(run.stdout[-4000:])
        sys.exit(f"soak.py: the workflow failed (dtfrun status {run.returncode})")
    failures = []
    print(f"{a.cycles} cycles, {a.mode} mode, baseline after cycle {warmup}:")
    print(f"{'component':10} {'rss KiB at warm-up':>18} {'max after':>10} {'growth':>7}   fds   comm index")
    for comp in ("model", "assim"):
        s = samples.get(comp, {})
        if sorted(s) != list(range(1, a.cycles + 1)):
            failures.append(f"{comp}: expected a resource line for every cycle, got {len(s)}")
            continue
        base, after = s[warmup], [s[c] for c in range(warmup + 1, a.cycles + 1)]
        growth = max(r for r, _, _ in after) - base[0]
        fds, comms = sorted({f for _, f, _ in after} | {base[1]}), sorted({c for _, _, c in after} | {base[2]})
        print(f"{comp:10} {base[0]:18} {max(r for r, _, _ in after):10} {growth:7}   {fds}   {comms}")
        if growth >= a.rss_growth_kib and not a.no_rss_check:
            # Where it grew: the resident memory every tenth of the run.
            step = max(1, a.cycles // 10)
            trend = ", ".join(f"{c}: {s[c][0]}" for c in range(warmup, a.cycles + 1, step))
            failures.append(f"{comp}: resident memory grew by {growth} KiB after warm-up ({trend})")
        if len(fds) > 1:
            failures.append(f"{comp}: open file descriptors changed after warm-up: {fds}")
        # (A probe sees one index more or less as a served session's communicator is freed before or
        # after it, at the next create or open, and more than one may be served; leaked communicators
        # lift every later probe above all earlier ones.)
        half = len(after) // 2
        first, second = max(c for _, _, c in after[:half]), min(c for _, _, c in after[half:])
        if second > first:
            failures.append(f"{comp}: the communicator index climbed after warm-up (leaked communicators): at most "
                            f"{first} in cycles {warmup + 1}-{warmup + half}, at least {second} in every later one")
        # The progress thread must have run (the demo asks for MPI_THREAD_MULTIPLE), unless
        # DTF_PROGRESS_THREAD=0 turned it off or, without DTF_PROGRESS_THREAD=1, the two components
        # have more ranks than the node has cores.
        env = os.environ.get("DTF_PROGRESS_THREAD")
        want = ("off (DTF_PROGRESS_THREAD=0)" if env == "0" else "on" if env == "1" or 2 * a.members + 2 <= os.cpu_count()
                else "off (more ranks on the node than cores)")
        if thread.get(comp) != want:
            failures.append(f"{comp}: its progress thread was {thread.get(comp, 'not reported')}, expected {want}")
        if unused.get(comp) != 0:
            failures.append(f"{comp}: {unused.get(comp, 'an unknown number of')} control messages were never used "
                            "(DTF_VERBOSE_LEVEL=1 lists them)")
        # Each member's analysis is read by its 2 ranks of the model: the assimilation withdraws it
        # from the others with its next FileDefined, so at most one cycle's are left at the end.
        if dropped.get(comp, 0) > a.members * 2 * (a.members - 1):
            failures.append(f"{comp}: {dropped[comp]} file definitions left at dtf_finalize, more than one cycle's "
                            f"({a.members * 2 * (a.members - 1)}): the withdrawals did not reach the readers")
        # Transfer mode forgets each path after its sessions (num_sessions=1): nothing per path is left.
        if a.mode == "transfer" and kept.get(comp) != 0:
            failures.append(f"{comp}: {kept.get(comp, 'an unknown number of')} path records kept at the end; "
                            "transfer mode must forget every path after its num_sessions sessions")
    for f in failures:
        print("FAIL: " + f)
    if failures:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
