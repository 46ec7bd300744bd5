#!/usr/bin/env python3
"""Differential test of random writer programs: what a reader sees on a file dtf serves must be what
plain PnetCDF shows it, or a clear error.

usage: differential.py --dtfrun PATH --lib LIBDTF --writer NCWRITER --reader NCREADER
                       [--seed S] [--cases N | --case K] [--shape MxN] [--mode transfer|file|both|oracle]
                       [--launch jobs|mpmd|both] [--access coll|indep|nb] [--avoid F,...] [--inject]
                       [--repeat R] [--refused report|fail] [--expect-refusal TEXT] [--program FILE] [--shrink]
                       [--keep DIR] [--walltime S]
                       [--timeout S] [--restarts N] [-v]

For a seed, randprog.py makes one random writer program per case (definitions, redefinitions after
data, fill settings, collective, independent, nonblocking and buffered puts, several ranks writing the
same elements in different phases: its docstring has the rules). ncwriter.c runs them all in one
launch, one file case.<K>.nc each, and ncreader.c reads every file in order, each rank dumping every
header item and value it saw (section `file case.<K>.nc` of its dump).
  oracle   the writer on plain files (no dtf), then the reader (two launches, dtfrun without a config);
  dtf      the same programs under dtf (dtfrun --preload: the zero-change mode) with
           filename="case.%.nc", writer="writer", readers="reader", mode= transfer and/or file, as two
           jobs and/or in one launch (--mpmd): one launch for all cases.
Each case's reader sections (and the writer's: the record counts its ranks saw) are compared per rank
with the oracle's, byte for byte; in file mode each file with the oracle's too (tests/lib/ncfiles.compare);
in transfer mode no file may reach the disk.
A case is
  same      every dump and file equal;
  silent    a difference while every call succeeded, in the writer and in the reader: FAILS the test;
  refused   a call failed under dtf (not in the oracle), or the run ended in the case: reported with the
            message; fails the test only with --refused fail, or (--expect-refusal TEXT) when dtf's
            message about the case does not say TEXT (e.g. the readers' error about a definition the
            writer changed after its first put: the only refusal the generated programs may meet);
  invalid   a call failed in the oracle itself (a generator bug): fails the test.
A run that ends early (a crash, the walltime) is started again after the case it ended in.
Failures print the seed, the case, the program (numbered lines: every put's values are
(K % 100) * 100000 + line * 1000 + rank * 100 + element % 100, reduced for the small types) and the
first difference. Reproduce one case: --seed S --case K (--keep DIR keeps programs, dumps and files).
--avoid leaves generator features out (randprog.py --features) to attribute failures.
--inject: the dtf run's writer adds 1 to one value of one case (NCW_INJECT, an element no later write
covers): the test passes only if that case is found as a silent difference. --mode oracle: the oracle
twice (the second reader with -a nb, or coll), which must agree (the oracle is deterministic).
--repeat R: every program R times in a row on its file, the dtf runs with replay_io=1, so that sessions
2..R replay the first one's pattern (overlapping writes and fills included); each session's dumps are
compared. Triage: --program FILE runs a program of one's own as case K; --shrink deletes operations of case K's
program as long as it still differs silently (or still fails under dtf) and prints what is left, with
every line in which the readers' dumps differ (a few launches per operation: minutes).
Every launch runs under dtfrun --walltime; DTF_TIMEOUT is --timeout; MPI-IO is ROMIO (prop.py says why).
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import ncfiles  # noqa: E402
import randprog  # noqa: E402

CONFIG = """[INFO]
ncomp=2
comp_name="writer"
comp_name="reader"
[FILE]
filename="case.%.nc"
writer="writer"
readers="reader"
mode="{mode}"
replay_io={replay}
"""
# the calls whose failures ncreader.c writes as "<call>: <code>"
READER_CALLS = ("open|inq_format|inq_header_size|inq_header_extent|inq|inq_dim|inq_attname|inq_att|get_att|"
                "inq_varndims|inq_var|inq_varoffset|inq_var_fill|begin_indep_data|end_indep_data|wait_all|get|close")
READER_FAILURE = re.compile(rf"(?:^|: )(?:{READER_CALLS}): (\S+)$")


def sanitizer_runtimes(lib):
    """The sanitizer runtimes a sanitizer build of libdtf needs preloaded before it (frontends.py)."""
    ldd = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    return re.findall(r"=> (\S*lib[at]san\.so\S*)", ldd)


class Launch:
    """One dtfrun launch: its status, output and time."""

    def __init__(self, args, cmd, cwd, env):
        full = dict(os.environ, OMPI_MCA_io="romio321", DTF_TIMEOUT=str(args.timeout), **env)
        t0 = time.monotonic()
        if args.verbose:
            print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, cwd=cwd, env=full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=args.walltime + 60)
        self.seconds = time.monotonic() - t0
        self.status, self.output = p.returncode, p.stdout
        if args.verbose:
            print(self.output)


def sections(path, start):
    """{case: text} of a dump, split at the lines matching `start` (group 1: the case)."""
    out, case = {}, None
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        m = re.match(start, line)
        if m:
            case = int(m.group(1))
            out.setdefault(case, "") # (--repeat: the sessions of a case one after the other)
        if case is not None:
            out[case] += line
    return out


class Run:
    """The dumps of one configuration (the oracle, or a dtf mode and launch), by case."""

    def __init__(self, label, folder):
        self.label, self.dir = label, folder
        self.writer, self.reader = {}, {}  # case -> [text per rank]
        self.ended = {}                    # case -> why the run ended in it
        self.output = ""
        self.seconds = 0.0
        os.makedirs(folder, exist_ok=True)

    def collect(self, tag, cases, M, N, finished):
        """Reads the dumps of launch `tag`; returns the cases it completed (in order, up to the first
        incomplete one). `finished`: the reader exited by itself (its dumps are whole)."""
        w = [sections(os.path.join(self.dir, f"w{tag}.{r}"), r"case (\d+)$") for r in range(M)]
        rd = [sections(os.path.join(self.dir, f"r{tag}.{r}"), r"file case\.(\d+)\.nc$") for r in range(N)]
        done = []
        for i, k in enumerate(cases):
            last = i + 1 == len(cases) or any(cases[i + 1] not in d for d in rd)
            whole = all(k in d and f"end {k}\n" in d[k] for d in w) and all(k in d for d in rd) and (
                finished or not last)
            if not whole:
                break
            self.writer[k] = [d[k] for d in w]
            self.reader[k] = [d[k] for d in rd]
            done.append(k)
        return done


def failures(text, writer):
    """The failure lines of a dump section."""
    if writer:
        return [l for l in text.splitlines() if l.startswith("op ")]
    return [l for l in text.splitlines() if READER_FAILURE.search(l)]


def dtf_messages(output, case):
    """dtf's lines about case.<case>.nc in a launch's output."""
    name = f"case.{case}.nc"
    return [l for l in output.splitlines() if name in l and ("dtf" in l or "DTF" in l)]


def program_text(args, case):
    text = open(os.path.join(args.progs, f"prog.{case}.txt")).read()
    return "\n".join(f"{i:3} {l}" for i, l in enumerate(text.splitlines(), 1))


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end of section>"
        y = lb[i] if i < len(lb) else "<end of section>"
        if x != y:
            return f"line {i + 1}:\n      plain PnetCDF: {x[:600]}\n      dtf:           {y[:600]}"
    return "(equal)"


def programs(args, cases):
    """The writer's programs and the reader's files for `cases`, each --repeat times in a row."""
    return ([os.path.join(args.progs, f"prog.{k}.txt") for k in cases for _ in range(args.repeat)],
            [f"case.{k}.nc" for k in cases for _ in range(args.repeat)])


def launch_oracle(args, oracle, cases):
    progs, files = programs(args, cases)
    w = Launch(args, [args.dtfrun, "--walltime", str(args.walltime), "-n", str(args.M), args.writer, "w0"] + progs,
               oracle.dir, {})
    r = Launch(args, [args.dtfrun, "--walltime", str(args.walltime), "-n", str(args.N), args.reader, "-a",
                      args.access, "r0"] + files, oracle.dir, {})
    oracle.seconds = w.seconds + r.seconds
    oracle.output = w.output + r.output
    done = oracle.collect(0, cases, args.M, args.N, r.status in (0, 1))
    if done != cases:
        print(f"FAIL: the oracle runs ended early (writer status {w.status}, reader status {r.status}):\n"
              f"{oracle.output[-3000:]}")
        return False
    if not args.quiet:
        print(f"== {oracle.label}: plain PnetCDF, {args.M} writer and {args.N} reader ranks (-a {args.access}), "
              f"{len(cases)} cases, {oracle.seconds:.1f} s")
    return True


def launch_dtf(args, run, mode, launch, cases, inject):
    """Runs the cases under dtf in as many launches as it takes (a launch that ends early is started
    again after the case it ended in)."""
    ini = os.path.join(run.dir, "dtf.ini")
    with open(ini, "w") as f:
        f.write(CONFIG.format(mode=mode, replay=1 if args.repeat > 1 else 0))
    runtimes = sanitizer_runtimes(args.lib)
    todo, tag = list(cases), 0
    while todo:
        tag += 1
        cmd = [args.dtfrun, "--walltime", str(args.walltime), "-c", ini] + (["--mpmd"] if launch == "mpmd" else [])
        cmd += [] if runtimes else ["--preload", args.lib]
        progs, files = programs(args, todo)
        for i, (name, n, argv) in enumerate((
                ("writer", args.M, [args.writer, f"w{tag}"] + progs),
                ("reader", args.N, [args.reader, "-a", args.access, f"r{tag}"] + files))):
            cmd += ([":"] if i else []) + ["--name", name, "-n", str(n)]
            if runtimes:
                cmd += ["--mpi-args", f"-x LD_PRELOAD={':'.join(runtimes + [args.lib])} -x DTF_COMPONENT={name}"]
            cmd += argv
        la = Launch(args, cmd, run.dir, {"NCW_INJECT": inject} if inject else {})
        run.seconds += la.seconds
        run.output += la.output
        m = re.search(r"^dtfrun:\s+reader\s+\d+ ranks\s+exited with status (\d+)", la.output, re.M)
        finished = la.status in (0, 1) or bool(m and int(m.group(1)) in (0, 1))  # ncreader's own exits
        done = run.collect(tag, todo, args.M, args.N, finished)
        todo = todo[len(done):]
        if todo:
            k = todo.pop(0)
            said = [l for l in la.output.splitlines() if re.search(rf"case[ .]{k}\b|^dtfrun: ", l)]
            run.ended[k] = f"the launch ended (dtfrun status {la.status}) in this case:\n      " + \
                "\n      ".join(said[-8:])
            if len(run.ended) > args.restarts:
                for k in todo:
                    run.ended[k] = "not run: too many launches ended early"
                todo = []


def judge(args, oracle, run, mode, cases):
    """{case: (verdict, detail)} of a dtf run against the oracle."""
    verdicts = {}
    for k in cases:
        bad = [f"writer rank {r}: {l}" for r, t in enumerate(oracle.writer[k]) for l in failures(t, True)]
        bad += [f"reader rank {r}: {l}" for r, t in enumerate(oracle.reader[k]) for l in failures(t, False)]
        if bad:
            verdicts[k] = ("invalid", "plain PnetCDF failed: " + bad[0])
            continue
        if k in run.ended:
            verdicts[k] = ("refused", run.ended[k])
            continue
        bad = [f"writer rank {r}: {l}" for r, t in enumerate(run.writer[k]) for l in failures(t, True)]
        bad += [f"reader rank {r}: {l}" for r, t in enumerate(run.reader[k]) for l in failures(t, False)]
        if bad:
            said = dtf_messages(run.output, k)
            # (--expect-refusal TEXT: a refusal whose message lacks TEXT is not the one expected)
            expected = not args.expect_refusal or any(args.expect_refusal in line for line in said)
            verdicts[k] = ("refused" if expected else "unexpected",
                           bad[0] + (f"\n    dtf said: {said[0][:600]}" if said else ""))
            continue
        diff = None
        for r in range(args.M):  # the record counts the writer's ranks saw
            if run.writer[k][r] != oracle.writer[k][r]:
                diff = f"writer rank {r}, {first_difference(oracle.writer[k][r], run.writer[k][r])}"
                break
        for r in range(args.N if diff is None else 0):
            if run.reader[k][r] != oracle.reader[k][r]:
                diff = f"reader rank {r}, {first_difference(oracle.reader[k][r], run.reader[k][r])}"
                break
        name = f"case.{k}.nc"
        if diff is None and mode == "file":
            why = ncfiles.compare(os.path.join(oracle.dir, name), os.path.join(run.dir, name)) \
                if os.path.exists(os.path.join(run.dir, name)) else f"{name} is missing"
            diff = f"the file differs from plain PnetCDF's: {why}" if why else None
        if diff is None and mode == "transfer" and os.path.exists(os.path.join(run.dir, name)):
            diff = f"{name} reached the disk in transfer mode"
        verdicts[k] = ("silent", diff) if diff else ("same", "")
    return verdicts


def report(args, label, verdicts, seconds):
    kinds = ("same", "silent", "refused", "unexpected", "invalid")
    count = {v: sorted(k for k, (x, _) in verdicts.items() if x == v) for v in kinds}
    print(f"== {label}: {len(count['same'])} same, {len(count['silent'])} silent differences, "
          f"{len(count['refused'])} refused or failed ({len(count['unexpected'])} unexpectedly), "
          f"{len(count['invalid'])} invalid, of {len(verdicts)} cases ({seconds:.1f} s)")
    for what in kinds[1:]:
        if count[what]:
            print(f"   {what}: {' '.join(map(str, count[what]))}")
    shown = 0
    for k in count["refused"] + count["unexpected"]:
        print(f"   {verdicts[k][0]}, case {k}: {verdicts[k][1]}")
    for k in count["silent"] + count["invalid"]:
        print(f"\n-- {verdicts[k][0]}: seed {args.seed}, case {k}, {label}, {args.M}x{args.N}, -a {args.access}")
        print(f"   first difference: {verdicts[k][1]}")
        print(f"   reproduce: --seed {args.seed} --case {k} --shape {args.M}x{args.N} --access {args.access}"
              f"{' --avoid ' + ','.join(args.avoid) if args.avoid else ''}")
        if shown < args.show:
            print(program_text(args, k))
            shown += 1
    return count


def shrink(args, work, case):
    """Deletes operations (with the barrier after them, or a redef/begin_indep block) and ranks' parts of
    puts from the program of `case` as long as it still gives a silent difference (or still fails under
    dtf, if it did), then prints it and the lines in which the readers' dumps differ."""
    mode = "file" if args.mode == "file" else "transfer"
    launch = "mpmd" if args.launch == "mpmd" else "jobs"
    path = os.path.join(args.progs, f"prog.{case}.txt")
    attempt = [0]
    args.quiet = True

    def verdict(lines):
        attempt[0] += 1
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        d = os.path.join(work, f"try{attempt[0]}")
        oracle, run = Run("oracle", os.path.join(d, "oracle")), Run("dtf", os.path.join(d, "dtf"))
        if not launch_oracle(args, oracle, [case]):
            return None
        launch_dtf(args, run, mode, launch, [case], None)
        v = judge(args, oracle, run, mode, [case])[case]
        return v, oracle, run

    lines = open(path).read().splitlines()
    first = verdict(lines)
    if not first or first[0][0] not in ("silent", "refused"):
        print(f"case {case} is {first and first[0][0]} in {mode} mode: nothing to shrink")
        return 1
    best, target = first, first[0][0]
    changed = True
    while changed:
        changed = False
        for i in reversed(range(2, len(lines) - 1)):  # keep `case`, `create` and `close`
            if i >= len(lines) - 1 or lines[i] == "barrier":
                continue
            end = {"redef": "enddef", "begin_indep": "end_indep"}.get(lines[i])
            if end and end in lines[i:]:  # the block, and the barrier after it
                j = lines.index(end, i)
                tries = [lines[:i] + lines[j + 1 + (j + 1 < len(lines) and lines[j + 1] == "barrier"):]]
            else:
                tries = []
            cut = 2 if i + 1 < len(lines) and lines[i + 1] == "barrier" else 1
            tokens = lines[i].split()
            parts = [j for j, t in enumerate(tokens) if "=" in t]
            tries += [lines[:i] + lines[i + cut:]]
            if len(parts) > 1:
                tries += [lines[:i] + [" ".join(t for j, t in enumerate(tokens) if j != p)] + lines[i + 1:]
                          for p in parts]
            for cand in tries:
                v = verdict(cand)
                if v and v[0][0] == target:
                    lines, best, changed = cand, v, True
                    break
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    (what, detail), oracle, run = best
    print(f"shrunk ({target}) in {attempt[0]} runs: seed {args.seed}, case {case}, {mode} mode, {launch}, "
          f"{args.M}x{args.N}, -a {args.access}\n{program_text(args, case)}\nfirst difference: {detail}\nall differing lines:")
    for r in range(args.N):
        diff = difflib.unified_diff(oracle.reader[case][r].splitlines(), run.reader[case][r].splitlines(),
                                    f"plain PnetCDF, reader rank {r}", f"dtf, reader rank {r}", n=0, lineterm="")
        print("\n".join("  " + l[:300] for l in diff))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dtfrun", required=True)
    p.add_argument("--lib", required=True, help="libdtf.so, preloaded (--preload) into both programs")
    p.add_argument("--writer", required=True, help="ncwriter (tests/contract/ncwriter.c)")
    p.add_argument("--reader", required=True, help="ncreader (tests/contract/ncreader.c)")
    p.add_argument("--seed", default="1")
    p.add_argument("--cases", type=int, default=40)
    p.add_argument("--case", type=int, help="run this case only")
    p.add_argument("--shape", default="3x2", help="writer ranks x reader ranks")
    p.add_argument("--mode", choices=["transfer", "file", "both", "oracle"], default="both",
                   help="the dtf runs; oracle: none, the oracle again instead (the other -a of coll and nb), "
                        "which must give the same dumps and files")
    p.add_argument("--launch", choices=["jobs", "mpmd", "both"], default="jobs")
    p.add_argument("--access", choices=["coll", "indep", "nb"], default="coll", help="ncreader -a")
    p.add_argument("--avoid", default="", help="generator features to leave out (randprog.py --features)")
    p.add_argument("--inject", action="store_true",
                   help="one wrong value in the dtf runs' writer (in --case, else in the middle case)")
    p.add_argument("--refused", choices=["report", "fail"], default="report",
                   help="whether calls that fail under dtf (not in the oracle) fail the test")
    p.add_argument("--repeat", type=int, default=1,
                   help="every program R times in a row on its file, with replay_io=1 (sessions 2..R replay the "
                        "first one's transfer pattern)")
    p.add_argument("--expect-refusal", default="",
                   help="a refusal fails the test unless dtf's message about it says this")
    p.add_argument("--show", type=int, default=3, help="print the programs of this many failing cases")
    p.add_argument("--keep", help="keep programs, dumps and files in this directory")
    p.add_argument("--walltime", type=int, default=120, help="dtfrun --walltime of each launch")
    p.add_argument("--timeout", type=int, default=20, help="DTF_TIMEOUT")
    p.add_argument("--restarts", type=int, default=3, help="launches that may end early, per dtf run")
    p.add_argument("--program", help="run this program file (randprog.py's syntax) as --case K (default 0)")
    p.add_argument("--shrink", action="store_true",
                   help="with --case K: delete operations of its program while it still differs silently (or "
                        "fails under dtf, if it did; --mode and --launch pick the dtf run), then print it "
                        "(triage; a few launches per operation)")
    p.add_argument("-v", "--verbose", action="store_true", help="print every command and its output")
    args = p.parse_args()
    m = re.fullmatch(r"(\d+)x(\d+)", args.shape)
    if not m:
        p.error("--shape must be MxN")
    args.M, args.N = int(m.group(1)), int(m.group(2))
    args.avoid = [a for a in args.avoid.split(",") if a]
    args.quiet = False
    if args.program and args.inject:
        p.error("--inject picks its element in a generated program: not with --program")
    if args.program and args.case is None:
        args.case = 0
    if args.shrink and args.case is None:
        p.error("--shrink needs --case")
    if set(args.avoid) - set(randprog.FEATURES):
        p.error(f"unknown features in --avoid; known: {', '.join(randprog.FEATURES)}")
    for a in ("dtfrun", "lib", "writer", "reader"):
        setattr(args, a, os.path.abspath(getattr(args, a)))
    cases = [args.case] if args.case is not None else list(range(args.cases))

    if args.keep:
        work = os.path.abspath(args.keep)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="dtf-differential-")
        work = tmp.name
    args.progs = os.path.join(work, "progs")
    os.makedirs(args.progs)
    inject = None
    for k in cases:
        text, target = randprog.generate(args.seed, k, args.M, args.avoid)
        if args.program:  # a program of one's own instead, as case k
            text = f"case {k}\n" + "".join(l for l in open(args.program) if not l.startswith("case "))
        with open(os.path.join(args.progs, f"prog.{k}.txt"), "w") as f:
            f.write(text)
        if args.inject and k == (args.case if args.case is not None else cases[len(cases) // 2]):
            inject = target
    if args.inject and not inject:
        p.error("the case to inject into writes nothing")
    print(f"seed {args.seed}, cases {cases[0]}..{cases[-1]}, shape {args.shape}, reader -a {args.access}"
          f"{', avoiding ' + ','.join(args.avoid) if args.avoid else ''}")

    if args.shrink:
        return shrink(args, work, cases[0])
    oracle = Run("oracle", os.path.join(work, "oracle"))
    if not launch_oracle(args, oracle, cases):
        return 1
    ok = True
    if args.mode == "oracle":  # the oracle is sound: a second run, its reader with -a nb (or coll)
        args.access = "coll" if args.access == "nb" else "nb"
        second = Run("second oracle", os.path.join(work, "second"))
        if not launch_oracle(args, second, cases):
            return 1
        count = report(args, f"second oracle (-a {args.access})", judge(args, oracle, second, "file", cases),
                       second.seconds)
        ok = len(count["same"]) == len(cases)
    for mode in (["transfer", "file"] if args.mode == "both" else [] if args.mode == "oracle" else [args.mode]):
        for launch in (["jobs", "mpmd"] if args.launch == "both" else [args.launch]):
            label = f"{mode} mode, {'two jobs' if launch == 'jobs' else 'one launch'}"
            run = Run(label, os.path.join(work, f"{mode}.{launch}"))
            launch_dtf(args, run, mode, launch, cases, inject)
            count = report(args, label, judge(args, oracle, run, mode, cases), run.seconds)
            if args.inject:
                want = int(inject.split(":")[0])
                print(f"injected NCW_INJECT={inject} (case:line:rank:element)")
                if want in count["silent"]:
                    print(f"the wrong value in case {want} was found as a silent difference (as it must be)")
                else:
                    print(f"FAIL: the wrong value in case {want} was not found as a silent difference")
                    ok = False
            else:
                ok &= not count["silent"] and not count["invalid"] and not count["unexpected"] and \
                    not (args.refused == "fail" and count["refused"])
    print("PASS" if ok else "FAIL")
    if args.keep:
        print(f"programs, dumps and files kept in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
