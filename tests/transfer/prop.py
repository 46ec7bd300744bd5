#!/usr/bin/env python3
"""Randomized property test of transfer mode, with file mode as the oracle.

usage: prop.py --dtfrun PATH --exe PATH [--writer-exe PATH] [--cases N] [--seed S|fixed] [--first K]
               [--shape MxN] [--second-reader N2] [--mode both|file|transfer] [--twice] [--keep DIR] [--walltime S]
               [--mpi-io romio321|ompio|default] [--inject value:K|padding:K] [--avoid F,...] [--repeat R] [--replay]
               [--launch jobs|mpmd] [-v]

Each case is a random scenario (tests/transfer/scenario.c) generated from (seed, case number): a CDF-5
file with 1..3 variables of every external type, 0-D to 4-D, with and without a record dimension,
attributes and fill settings, written by M writer ranks with a random decomposition and every access
kind, and read by N reader ranks with another one. Access kinds: var/var1/vara/vars/varm/varn (varn:
a list of non-overlapping boxes, or single elements with counts NULL, perhaps an empty box, one
buffer in list order), typed or flexible, collective (varn in rounds of their own, num=0 for the ranks
without one), independent, iput/iget/bput + wait/wait_all. Some pieces have a layered write: the
same elements put again by another rank in an earlier phase (the piece's values must win) or a later
one (the layer's must), the phases being separated by collective calls of the file, which order the
writes in PnetCDF's file (XFER_AVOID=layers leaves them out). Some nonblocking requests are cancelled
(right after they are posted, after the others, or by ncmpi_cancel(NC_REQ_ALL)); a cancelled put
writes different values to elements nobody writes or beyond the records (they must read as fill and
the record count must not change), a cancelled get must leave its buffer alone; the statuses, the
ids (NC_REQ_NULL after cancel and wait, and for a zero-length iget/iput from the start), cancelling
or waiting again for a stale id
(NC_EINVAL_REQUEST, the id unchanged) and NC_REQ_NULL ids in a wait list are checked too. All cases
run inside ONE dtfrun launch (the programs loop over the cases, one file case.<K>.nc each); with
--launch mpmd that launch is one MPMD mpirun (dtfrun --mpmd). --second-reader N2 adds a second reader
component of N2 ranks (writer=/readers=), reading every file with the accesses the scenario has for N2
reader ranks: both readers' dumps are compared.

Runs
  oracle  mode="file", C writer: the writer writes the real file, the reader reads it.
  test    mode="transfer" (or, with --mode file, a second file-mode run: --twice, or the
          --writer-exe writer, e.g. the Fortran one with --seed fixed).
Checks
  - self-check: every rank compares what it observed with the scenario's expected values, fill
    values and return codes (independent of dtf: the test can fail in file mode alone);
  - the dumps (return codes, inquiry results, raw get buffers including padding) of the two runs
    are identical byte for byte (reader dumps always; writer dumps when both runs use the same
    writer program).
On a failure it prints the case, the seed, the scenario in readable form and the first difference.
Reproduce one case: --seed S --first K --cases 1; print a scenario: xfer_prop describe S K M N;
feature counts of a seed: xfer_prop stats S NCASES M N. Triage: --avoid (XFER_AVOID) leaves features
out of the generator (varn, stale-cancel, cancel-beyond, zero-beyond, stale-wait, zero-nb: no
zero-length iget, layers) to look past a known failure. Debugging: --keep DIR keeps files and dumps;
XFER_TRACE=1 makes every rank print each call before it makes it (for hangs); the programs also run
without dtf (CONFIG "-"; start the writer, then the reader, with plain mpirun).

What the generator avoids, because the oracle (PnetCDF 1.12.3 + Open MPI 4.1 I/O) gets it wrong:
  - two nonblocking gets of one rank reading the same element in one wait (the second gets garbage);
  - blocking vars/varm with a stride along the record dimension of a 1-D record variable when the
    file has several record variables (the stride is ignored; iput/iget are right);
  - collective rounds where ranks access different kinds of variables (record vs fixed-size) or use
    varn for zero-length participation of a non-varn round (PnetCDF's collectives then mismatch and
    hang); a collective varn on a scalar variable with num=0 on another rank (hangs too: made
    independent);
  - varn boxes that overlap within one get_varn/iget_varn (wrong values in the buffer, also when
    blocking), and varn boxes with count > 1 along the record dimension (read and written as if the
    records were contiguous: wrong values, or MPI_ERR_TYPE from MPI_File_set_view); record
    variables get one box per record.
The writer separates its phases with barriers and disables ROMIO write data sieving (read-modify-
write of interleaved extents loses other ranks' writes); the driver selects ROMIO (see --mpi-io).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ncfiles  # noqa: E402

CONFIG = """[INFO]
ncomp={ncomp}
comp_name="writer"
comp_name="reader"
{more_names}buffer_data={buffer_data}
[FILE]
filename="case.%.nc"
{sharing}
mode="{mode}"
replay_io={replay_io}
persist={persist}
{aggregate}"""


class Run:
    def __init__(self, label, mode, writer_exe, subdir):
        self.label, self.mode, self.writer_exe, self.dir = label, mode, writer_exe, subdir
        self.status, self.output, self.seconds = None, "", 0.0
        self.check_fails = []  # (case, line)


def launch(args, run, work, extra_env=None):
    os.makedirs(run.dir, exist_ok=True)
    ini = os.path.join(work, f"dtf.{run.mode}.ini")
    with open(ini, "w") as f:
        two = args.second_reader is not None
        f.write(CONFIG.format(mode=run.mode, buffer_data=args.buffer_data, replay_io=int(args.replay),
                              persist=int(args.persist),
                              aggregate="".join(k + "\n" for k in args.aggregate.split()) if run.mode == "transfer" else "",
                              ncomp=3 if two else 2, more_names='comp_name="reader2"\n' if two else "",
                              sharing='writer="writer"\nreaders="reader reader2"' if two else
                              'comp1="writer"\ncomp2="reader"'))
    M, N = args.M, args.N
    common = [args.seed, str(args.first), str(args.cases), str(M)]
    cmd = [args.dtfrun, "--walltime", str(args.walltime)] + (["--mpmd"] if args.launch == "mpmd" else []) + \
        (["--mpirun", args.mpirun] if args.mpirun else []) + [
           "--name", "writer", "-n", str(M), run.writer_exe, "writer", ini, run.dir] + common + [str(N)] + [
           ":", "--name", "reader", "-n", str(N), args.exe, "reader", ini, run.dir] + common + [str(N)]
    if args.second_reader is not None:
        N2 = args.second_reader
        cmd += [":", "--name", "reader2", "-n", str(N2), args.exe, "reader2", ini, run.dir] + common + [str(N2)]
    env = dict(os.environ)
    env.setdefault("DTF_TIMEOUT", str(args.timeout))
    if args.mpi_io != "default":
        env["OMPI_MCA_io"] = args.mpi_io
    if args.avoid:
        env["XFER_AVOID"] = args.avoid
    env["DTF_PRINT_STATS"] = "2"  # the writer's stats say how put values were kept
    env["XFER_REPEAT"] = str(args.repeat)
    env["XFER_FILE_MODE"] = "1" if run.mode == "file" else "0"  # the real PnetCDF reads (its known defects)
    if args.thread is not None:
        env["DTF_PROGRESS_THREAD"] = str(args.thread)
    env.update(extra_env or {})
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=args.walltime + 60)
    run.seconds = time.monotonic() - t0
    run.status, run.output = p.returncode, p.stdout
    for line in run.output.splitlines():
        m = re.search(r"CHECK-FAIL case=(-?\d+)", line)
        if m:
            run.check_fails.append((int(m.group(1)), line))
    summary = [l for l in run.output.splitlines() if re.search(r"xfer_(prop|writer_f) (writer|reader2?): ", l)]
    print(f"== {run.label}: mode={run.mode} writer={os.path.basename(run.writer_exe)} {M}x{N}, "
          f"{args.cases} cases, exit status {run.status}, {run.seconds:.1f} s")
    for l in summary:
        print("   " + l)
    if args.verbose or (run.status != 0 and not run.check_fails):
        print("$ " + " ".join(cmd))
        print(run.output)
    return run


STATS = re.compile(r"\[dtf writer\] stats .* put values: (\d+) bytes copied, (\d+) referenced")
REPLAYED = re.compile(r"\[dtf reader\] stats .* (\d+) get batches replayed, (\d+) matched")
AHEAD = re.compile(r"\[dtf reader\] stats .* replay ahead of dtf_transfer: (\d+) get batches posted")
PUSHED = re.compile(r"\[dtf writer\] stats .* replay ahead of dtf_transfer: \d+ get batches posted, (\d+) of (\d+) data")
THREAD = re.compile(r"\[dtf writer\] stats .* progress thread (on|off[^;]*);")


def stats_numbers(run, pattern, what):
    """The two numbers `pattern` captures in dtf's statistics of `run`, or None (and a FAIL line)."""
    m = pattern.search(run.output)
    if not m:
        print(f"FAIL: no {what} in the {run.label} run")
        return None
    return int(m.group(1)), int(m.group(2))


def replayed_as_configured(args, run):
    """With --replay the readers' stats must show replayed batches (repeats 2.. of each case), so
    that the test cannot pass without replay at work; without it, none."""
    if run.mode != "transfer":
        return True
    numbers = stats_numbers(run, REPLAYED, "reader stats line with get batches")
    if not numbers:
        return False
    replayed, matched = numbers
    m = AHEAD.search(run.output)
    ahead = int(m.group(1)) if m else 0
    pushed = stats_numbers(run, PUSHED, "writer stats line with replayed data messages")
    if not pushed:
        return False
    print(f"   get batches: {replayed} replayed ({ahead} posted ahead of the writers' dtf_transfer), {matched} "
          f"matched; writers sent {pushed[0]} of {pushed[1]} replayed data messages ahead "
          f"(replay_io={int(args.replay)}, {args.repeat} runs of each case)")
    if (replayed > 0) != (args.replay and args.repeat > 1):
        print(f"FAIL: replay_io={int(args.replay)} with {args.repeat} runs per case but {replayed} batches replayed")
        return False
    # Random scenarios have first batches that the plan covers whole and that come before anything
    # needs the final header: some must be posted ahead. (The fixed one asks for the record count
    # before its first get, which waits for the final header.)
    if args.seed != "fixed" and (ahead > 0) != (replayed > 0):
        print(f"FAIL: {replayed} batches replayed but {ahead} posted ahead of the final header")
        return False
    return True


def thread_as_configured(args, run):
    """The writer's stats must say its progress thread ran (--thread 1, and by default where the
    node has a core per rank of both programs: they ask for MPI_THREAD_MULTIPLE), or did not
    (--thread 0, or more ranks than cores), so that a test of either cannot pass with the other."""
    if run.mode != "transfer":
        return True
    m = THREAD.search(run.output)
    print(f"   progress thread: {m.group(1) if m else 'not reported'}")
    ranks = sum(map(int, args.shape.split("x")))
    thread = args.thread if args.thread is not None else os.environ.get("DTF_PROGRESS_THREAD")
    thread = None if thread is None else int(thread)
    want = ("off (DTF_PROGRESS_THREAD=0)" if thread == 0 else "on" if thread == 1 or ranks <= os.cpu_count()
            else "off (more ranks on the node than cores)")
    if not m or m.group(1) != want:
        print(f"FAIL: the writer's progress thread should be {want}")
        return False
    return True


def kept_as_configured(args, run):
    """In transfer mode the writer's stats must show buffer_data at work: referenced bytes with 0,
    none with 1 (so that the option cannot silently lose its effect)."""
    if run.mode != "transfer":
        return True
    numbers = stats_numbers(run, STATS, "writer stats line with put values")
    if not numbers:
        return False
    copied, referenced = numbers
    print(f"   put values: {copied} bytes copied, {referenced} referenced (buffer_data={args.buffer_data})")
    if (referenced > 0) != (args.buffer_data == 0):
        print(f"FAIL: buffer_data={args.buffer_data} but {referenced} bytes were referenced")
        return False
    return True


_described = set()


def describe(args, case):
    if case in _described:
        return f"(scenario of case {case}: see above)"
    _described.add(case)
    env = dict(os.environ)
    if args.avoid:
        env["XFER_AVOID"] = args.avoid
    p = subprocess.run([args.exe, "describe", args.seed, str(case), str(args.M), str(args.N)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60, env=env)
    return p.stdout


def report_check_fails(args, run):
    if not run.check_fails:
        return True
    cases = sorted({c for c, _ in run.check_fails})
    print(f"FAIL: self-check of the {run.label} run ({run.mode} mode) failed in {len(cases)} case(s): "
          f"{' '.join(map(str, cases[:20]))}{' ...' if len(cases) > 20 else ''}")
    first = cases[0]
    for c, line in run.check_fails:
        if c == first:
            print("  " + line)
    print(f"reproduce: --seed {args.seed} --first {first} --cases 1 --shape {args.M}x{args.N} --mode {run.mode}"
          f"{f' --avoid {args.avoid}' if args.avoid else ''}")
    print(describe(args, first))
    return False


def split_record(line):
    """(key, payload) of a dump line: payload is the hex after 'data=' or 'value='."""
    m = re.search(r" (data|value)=([0-9a-f]*)$", line)
    if m:
        return line[:m.start()], m.group(2)
    return line, None


def first_difference(a_text, b_text):
    a, b = a_text.splitlines(), b_text.splitlines()
    if a_text == b_text:  # both "<missing>"
        return "  the dump is missing in both runs (they stopped early: see above)"
    for i in range(max(len(a), len(b))):
        la = a[i] if i < len(a) else "<end of dump>"
        lb = b[i] if i < len(b) else "<end of dump>"
        if la == lb:
            continue
        ka, pa = split_record(la)
        kb, pb = split_record(lb)
        out = [f"  record {i + 1}:"]
        if ka != kb or pa is None or pb is None:
            out += [f"    oracle: {la[:400]}", f"    test:   {lb[:400]}"]
        else:
            j = next((k for k in range(0, min(len(pa), len(pb)), 2) if pa[k:k + 2] != pb[k:k + 2]),
                     min(len(pa), len(pb)))
            byte = j // 2
            lo = max(0, j - 32)
            out += [f"    {ka}",
                    f"    first differing byte {byte} of the buffer dump (guard of 8 bytes included), "
                    f"lengths {len(pa) // 2} / {len(pb) // 2}",
                    f"    oracle: ...{pa[lo:j + 48]}...", f"    test:   ...{pb[lo:j + 48]}..."]
        return "\n".join(out)
    return None


def compare(args, oracle, test, compare_writer, expected=False):
    differing = []
    for case in range(args.first, args.first + args.cases):
        names = [f"dump.{case:04d}.{r}" for r in range(args.N)]
        if args.second_reader is not None:
            names += [f"dump2.{case:04d}.{r}" for r in range(args.second_reader)]
        if compare_writer:
            names += [f"wdump.{case:04d}.{r}" for r in range(args.M)]
        for name in names:
            pa, pb = os.path.join(oracle.dir, name), os.path.join(test.dir, name)
            ta = open(pa).read() if os.path.exists(pa) else "<missing>"
            tb = open(pb).read() if os.path.exists(pb) else "<missing>"
            if ta != tb or ta == "<missing>":  # a run that stopped early wrote no dumps: never "identical"
                differing.append((case, name, ta, tb))
                break
    if not differing:
        print(f"dumps identical: {args.cases} cases x ({args.N} reader"
              f"{f' + {args.second_reader} second-reader' if args.second_reader is not None else ''}"
              f"{f' + {args.M} writer' if compare_writer else ''} ranks), {oracle.label} vs {test.label}")
        return []
    cases = [c for c, *_ in differing]
    print(f"{'DIFFERENCE (expected, injected)' if expected else 'FAIL'}: the {test.label} run ({test.mode} mode) "
          f"differs from the {oracle.label} run in "
          f"{len(cases)} of {args.cases} cases: {' '.join(map(str, cases[:20]))}{' ...' if len(cases) > 20 else ''}")
    case, name, ta, tb = differing[0]
    print(f"first: case {case}, seed {args.seed}, shape {args.M}x{args.N}, dump {name}")
    print(first_difference(ta, tb))
    print(f"reproduce: --seed {args.seed} --first {case} --cases 1 --shape {args.M}x{args.N}"
          f"{f' --avoid {args.avoid}' if args.avoid else ''}")
    print(describe(args, case))
    return cases


def same_files(oracle, test):
    """persist=1: the transfer run wrote the files, byte for byte those of the file-mode run (header
    and values; tests/lib/ncfiles.py)."""
    names = sorted(f for f in os.listdir(oracle.dir) if f.endswith(".nc"))
    have = sorted(f for f in os.listdir(test.dir) if f.endswith(".nc"))
    if names != have:
        print(f"FAIL: persist=1: the {test.label} run left {len(have)} files, the {oracle.label} run {len(names)}")
        return False
    differ = [why for n in names if (why := ncfiles.compare(os.path.join(oracle.dir, n), os.path.join(test.dir, n)))]
    if differ:
        print(f"FAIL: persist=1: {len(differ)} of {len(names)} files differ from file mode's; first: {differ[0]}")
        return False
    print(f"persist=1: {len(names)} files with the header and values file mode wrote, byte for byte")
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtfrun", required=True, help="the dtfrun launcher")
    p.add_argument("--exe", required=True, help="xfer_prop (C writer and reader)")
    p.add_argument("--writer-exe", help="writer of the test run (e.g. the Fortran one; use --seed fixed)")
    p.add_argument("--cases", type=int, default=100, help="number of cases (default 100)")
    p.add_argument("--first", type=int, default=0, help="first case number")
    p.add_argument("--seed", default="1", help="integer, or 'fixed' for the Fortran writer's scenario")
    p.add_argument("--shape", default="2x3", help="writer ranks x reader ranks")
    p.add_argument("--persist", action="store_true",
                   help="persist=1: the transfer run must also write the files, byte for byte as the file-mode run")
    p.add_argument("--aggregate", default="", metavar="KEYS",
                   help="with --persist: [FILE] keys of the transfer run, e.g. 'aggregators=2 aggregate_steps=3'")
    p.add_argument("--second-reader", type=int, metavar="N2",
                   help="a second reader component of N2 ranks (writer=/readers=; not with --replay)")
    p.add_argument("--mode", choices=["both", "file", "transfer"], default="both",
                   help="both: file-mode oracle vs transfer; file: oracle only (plus a second file-mode "
                        "run with --twice or --writer-exe); transfer: the transfer run only")
    p.add_argument("--twice", action="store_true", help="with --mode file: run the oracle twice and compare")
    p.add_argument("--keep", help="keep the files and dumps in this directory")
    p.add_argument("--walltime", type=int, default=300, help="dtfrun --walltime per run")
    p.add_argument("--launch", choices=["jobs", "mpmd"], default="jobs",
                   help="writer and reader as separate MPI jobs, or both runs in one MPMD mpirun (dtfrun --mpmd)")
    p.add_argument("--mpirun", help="dtfrun's --mpirun (e.g. MPICH's mpiexec; default: mpirun from PATH)")
    p.add_argument("--timeout", type=int, default=60, help="DTF_TIMEOUT")
    p.add_argument("--mpi-io", default="romio321",
                   help="Open MPI io component for the programs (OMPI_MCA_io; 'default': leave it). "
                        "ROMIO by default: the collective reads of Open MPI 4.1's OMPIO (fcoll vulcan, "
                        "dynamic, dynamic_gen2) return zeros for some patterns, so it is no oracle")
    p.add_argument("--inject", metavar="KIND:K",
                   help="test the test: in the second/test run, corrupt case K (value:K = the writer puts "
                        "one wrong value, padding:K = the reader changes a guard byte of a get buffer); "
                        "PASS only if the self-check and the dump comparison both flag exactly case K")
    p.add_argument("--avoid", metavar="FEATURES", default=os.environ.get("XFER_AVOID", ""),
                   help="comma-separated generator features to leave out (XFER_AVOID; to triage a known "
                        "failure): varn, stale-cancel, cancel-beyond, zero-beyond, stale-wait, zero-nb")
    p.add_argument("--buffer-data", type=int, choices=[0, 1], default=1,
                   help="buffer_data= in [INFO]; with 0 (writes refer to the put buffers until close) the "
                        "transfer run must report referenced bytes")
    p.add_argument("--repeat", type=int, default=1,
                   help="run every case this many times in a row on one file (sessions 1..R of one path; "
                        "the files are then named case.<letters>.nc, one replay plan per case)")
    p.add_argument("--replay", action="store_true",
                   help="replay_io=1: with --repeat R > 1 the transfer run must replay the runs 2..R of "
                        "each case (checked from the readers' statistics)")
    p.add_argument("--thread", type=int, choices=[0, 1],
                   help="DTF_PROGRESS_THREAD (default: the environment's, else dtf's); the writer's stats must "
                        "show whether the thread ran")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    m = re.fullmatch(r"(\d+)x(\d+)", args.shape)
    if not m:
        p.error("--shape must be MxN")
    args.M, args.N = int(m.group(1)), int(m.group(2))
    if args.second_reader is not None and (args.replay or args.writer_exe):
        p.error("--second-reader takes neither --replay (replay_io=1 has one reader) nor --writer-exe")
    # Sanitizer builds run the large tests with fewer cases (XFER_PROP_SCALE, set by the test
    # environment of such builds): the instrumented programs are slow and CI's time is bounded.
    scale = float(os.environ.get("XFER_PROP_SCALE", "1"))
    if scale < 1 and args.cases >= 50:
        args.cases = max(20, round(args.cases * scale))
    args.exe = os.path.abspath(args.exe)
    args.dtfrun = os.path.abspath(args.dtfrun)
    if args.writer_exe:
        args.writer_exe = os.path.abspath(args.writer_exe)

    if args.keep:
        work = os.path.abspath(args.keep)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        cleanup = None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="dtf-xfer-")
        work = cleanup.name
    try:
        ok = True
        test_writer = args.writer_exe or args.exe
        runs = []
        if args.mode in ("both", "file"):
            runs.append(Run("oracle", "file", args.exe, os.path.join(work, "oracle")))
        if args.mode in ("both", "transfer"):
            runs.append(Run("test", "transfer", test_writer, os.path.join(work, "transfer")))
        elif args.twice or args.writer_exe:
            runs.append(Run("second", "file", test_writer, os.path.join(work, "second")))
        if args.inject and len(runs) != 2:
            p.error("--inject needs two runs (--mode both, or --mode file with --twice)")
        for i, run in enumerate(runs):
            launch(args, run, work, {"XFER_INJECT": args.inject} if args.inject and i == 1 else None)
            if args.inject and i == 1:
                continue  # judged below
            ok &= (report_check_fails(args, run) and kept_as_configured(args, run) and
                   replayed_as_configured(args, run) and thread_as_configured(args, run))
            if run.status != 0 and not run.check_fails:
                print(f"FAIL: the {run.label} run exited with status {run.status}")
                ok = False
        if len(runs) == 2:
            differing = compare(args, runs[0], runs[1], compare_writer=runs[0].writer_exe == runs[1].writer_exe,
                                expected=bool(args.inject))
            if args.inject:
                want = int(args.inject.split(":")[1])
                flagged = sorted({c for c, _ in runs[1].check_fails})
                injected = [l for l in runs[1].output.splitlines() if "INJECTED" in l]
                print(f"injected: {injected}")
                print(f"self-check flagged cases {flagged}, dump comparison flagged cases {differing}")
                if flagged == [want] and differing == [want] and injected:
                    print(f"the corruption of case {want} was caught by both checks (as it must be)")
                else:
                    print(f"FAIL: expected exactly case {want} to be flagged by both checks")
                    ok = False
            else:
                ok &= not differing
            if args.persist and runs[1].mode == "transfer":
                ok &= same_files(runs[0], runs[1])
        print("PASS" if ok else "FAIL")
        if args.keep:
            print(f"files and dumps kept in {work}")
        sys.exit(0 if ok else 1)
    finally:
        if cleanup:
            cleanup.cleanup()


if __name__ == "__main__":
    main()
