#!/usr/bin/env python3
"""PnetCDF's own example programs under dtf: a program must see on a served file exactly what plain
PnetCDF shows it, or a clear error. Every example writer of PnetCDF 1.12.3 (examples/C/*.c and
examples/F90/*.f90 of its source package), unchanged and preloaded with libdtf, beside a generic
reader of ours (ncreader.c), compared with the same pair run one after the other on plain files.

usage: examples.py list [--fortran]
       examples.py build --dir DIR --mpicc CC --pnetcdf-lib LIB [--mpif90 FC --fortran-modules DIR]
       examples.py run NAME --dir DIR ... --dtfrun PATH --lib LIBDTF --ncreader EXE

  list   the examples' test names (c.<name>, f90.<name> with --fortran), for CMake
  build  PnetCDF's source (scripts/pnetcdf-source.sh, cached in ~/.cache/dtf) and every example
         compiled with mpicc/mpif90 against plain PnetCDF into DIR, once: a stamp says with what
  run    one example (it builds what is missing first): the oracle, the writer with 4 ranks on a
         plain file then ncreader with 3 ranks on the file(s) it wrote; then under dtf, with a
         config naming the file(s) (writer="writer", readers="reader"), in mode="transfer" as two
         jobs (dtfrun) and as one launch (dtfrun --mpmd), and in mode="file" in one launch (the
         real PnetCDF serves the file there, however the programs were started), both programs
         preloaded. A variant holds when every reader rank's dump equals the oracle's byte for
         byte, each program's exit status (per rank) is the oracle's and so are the lines it
         printed (the examples print what they found wrong), dtf reported no error, and in file
         mode each file equals the oracle's (ncfiles.compare), in transfer mode none is on disk
         afterwards; a variant dtf refuses as documented (LIMITS) holds when it prints the refusal
         and no reader saw a wrong value. Exit status 1 when a variant does not hold (each one says why on FAIL lines,
         with the first error line of the launch). --keep keeps the runs' folders.

DTF_CONTRACT_LAUNCH=jobs|mpmd and DTF_CONTRACT_MODE=transfer|file run only that launch or mode
(e.g. one launch in the sanitizer run). Without PnetCDF's source (no network) the tests are skipped
(status 77), unless DTF_TEST_CONTRACT=required. Every launch runs under dtfrun --walltime, with
DTF_TIMEOUT=20 so that a hang inside dtf ends as an error (5 for a documented refusal, after which
the programs wait for what it refused).
"""
import argparse
import concurrent.futures
import fcntl
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "frontends"))
import ncfiles  # noqa: E402
from frontends import sanitizer_runtimes  # noqa: E402

SKIP = 77
PNETCDF = "1.12.3"
WRITER_RANKS, READER_RANKS = 4, 3

# The examples that write a netCDF file, each run as `EXE -q PATH` (it writes PATH). C/get_vara.c
# writes nothing (it reads put_vara's file): it runs as a second reader of c.put_vara (READERS).
C = ("block_cyclic bput_varn_int64 bput_varn_uint collective_write column_wise create_open fill_mode "
     "flexible_api get_info ghost_cell global_attributes hints i_varn_int64 mput nonblocking_write "
     "nonblocking_write_in_def pthread put_vara put_varn_float put_varn_int req_all time_var transpose "
     "transpose2D vard_int vard_mvars").split()
F90 = ("block_cyclic column_wise fill_mode flexible_api get_info hints nonblocking_write put_var put_varn_int "
       "put_varn_real transpose vard_int").split()
C_READERS = ["get_vara"]

# The examples that close their file and open it again (the writer's turn on the file ends at its
# N-th close: writer_closes=N); every other example closes its file once.
WRITER_CLOSES = {
    "c.block_cyclic": 2,       # opens it again NC_NOWRITE and reads it back (iget_vara, wait_all) to check
    "c.column_wise": 2,        # the same
    "c.create_open": 2,        # creates an empty file, closes it, opens it NC_NOWRITE and closes it
    "c.global_attributes": 2,  # opens it again to read back its global attributes
    "c.req_all": 2,            # opens it again to read it back (iget_vara, wait_all with NC_REQ_ALL)
    "c.time_var": 2,           # opens it again to read back its record and fixed-size variables
    "c.vard_int": 2,           # opens it again to read it back with get_vard_all
    "c.pthread": 2,            # each file: closed by the thread that wrote it, then opened NC_NOWRITE and
                               # closed by the thread before it (id - 1: another rank for a rank's first file)
    "f90.block_cyclic": 2,     # as c.block_cyclic
    "f90.vard_int": 2,         # as c.vard_int
}
# c.pthread: 6 threads per rank, each writes PATH.<thread id> alone (MPI_COMM_SELF); the others one file.
THREADS = 6
# The variants dtf refuses, as documented (docs/USER-GUIDE.md, "Reading back what it wrote"): the
# refusal each must print. Such a variant holds when it prints it and no reader rank saw a value other
# than the oracle's before its first error (a refusal, never a silent difference); it runs in one launch
# (the first of DTF_CONTRACT_LAUNCH's), the refusal being the same in both.
LIMITS = {
    # A thread opens the file another rank's thread wrote (MPI_COMM_SELF on both): in transfer mode a
    # writer reads back only what its own ranks hold.
    ("c.pthread", "transfer"): "it cannot read a file after its last close or one another of its ranks wrote",
}
# More reader programs beside ncreader: (component, ranks, program and its arguments).
READERS = {"c.put_vara": [("getvara", 2, ["c/get_vara", "-q", "put_vara.nc"])]}


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def skip_or_fail(why):
    if os.environ.get("DTF_TEST_CONTRACT") == "required":
        fail(f"PnetCDF's examples required (DTF_TEST_CONTRACT=required): {why}")
    print(f"SKIP: {why}")
    sys.exit(SKIP)


# C/pthread.c calls PnetCDF from 6 threads at once, which only a PnetCDF built with
# --enable-thread-safe allows: elsewhere (Debian's) its plain run, the oracle, is undefined (it
# crashed in CI once), so it is left out.
THREADED = "c.pthread"


def pnetcdf_thread_safe():
    """Whether the PnetCDF on PATH (pnetcdf-config) was built thread-safe."""
    try:
        out = subprocess.run(["pnetcdf-config", "--thread-safe"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return out.strip() == "enabled"


def names(fortran):
    """The examples run here, as test names."""
    c = [f"c.{n}" for n in C if f"c.{n}" != THREADED or pnetcdf_thread_safe()]
    return c + ([f"f90.{n}" for n in F90] if fortran else [])


def files(name):
    """The example's argument, the files it writes (relative to its working directory), and the
    config's pattern for them."""
    path = name.split(".", 1)[1] + ".nc"
    if name == "c.pthread":
        return path, [f"{path}.{i}" for i in range(THREADS * WRITER_RANKS)], path + ".%"
    return path, [path], path


def sh(cmd, limit, cwd=None, env=None):
    """Runs cmd, printing it and its output; (status, output). A run past `limit` is status 124."""
    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace", timeout=limit)
        status, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        status, out = 124, (e.stdout or b"").decode(errors="replace") + f"\n(killed after {limit} s)"
    print(out + f"exit status {status}", flush=True)
    return status, out


def compile_commands(a, source):
    """[(example, command)] compiling every example against plain PnetCDF (no dtf), the F90 ones after
    the examples' utils.F90 (their get_args), which the first command compiles."""
    libdir = os.path.dirname(a.pnetcdf_lib)
    link = [f"-L{libdir}", f"-Wl,-rpath,{libdir}", "-lpnetcdf"]
    cflags = ["-O1"] + [f"-I{d}" for d in a.pnetcdf_include]
    cmds = [(n, [a.mpicc] + cflags + ["-o", os.path.join(a.dir, "c", n), f"{source}/examples/C/{n}.c"] + link)
            for n in C + C_READERS]
    if a.mpif90:
        fflags = ["-O1", f"-I{a.fortran_modules}"]
        utils = os.path.join(a.dir, "f90", "utils.o")
        cmds.insert(0, ("utils", [a.mpif90] + fflags + ["-c", "-o", utils, f"{source}/examples/F90/utils.F90"]))
        cmds += [(n, [a.mpif90] + fflags + ["-o", os.path.join(a.dir, "f90", n), f"{source}/examples/F90/{n}.f90",
                                            utils] + link) for n in F90]
    return cmds


def build(a):
    """PnetCDF's source, and every example compiled into a.dir/c and a.dir/f90: once (a stamp holds the
    commands and the compilers' -show), concurrent callers waiting for the first (a lock)."""
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dtf")
    source = os.path.join(cache, f"pnetcdf-{PNETCDF}-source")
    os.makedirs(a.dir, exist_ok=True)
    with open(os.path.join(a.dir, "build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cmds = compile_commands(a, source)
        shows = [subprocess.run([c, "-show"], capture_output=True, text=True).stdout for c in (a.mpicc, a.mpif90) if c]
        stamp = "".join(shows) + "".join(" ".join(cmd) + "\n" for _, cmd in cmds)
        stamp_file = os.path.join(a.dir, "stamp")
        if os.path.exists(stamp_file) and open(stamp_file).read() == stamp:
            return
        status, out = sh([os.path.join(HERE, "..", "..", "scripts", "pnetcdf-source.sh"), source], 600)
        if status != 0:
            skip_or_fail(f"PnetCDF {PNETCDF}'s source cannot be had: {(out.strip().splitlines() or ['?'])[-1]}")
        for d in ("c", "f90") if a.mpif90 else ("c",):
            os.makedirs(os.path.join(a.dir, d), exist_ok=True)
        t0 = time.monotonic()
        first = 1 if cmds[0][0] == "utils" else 0
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
            for batch in (cmds[:first], cmds[first:]):
                done = pool.map(lambda c: (c[0], c[1], subprocess.run(c[1], stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, text=True, timeout=300)), batch)
                for name, cmd, p in done:
                    print("$ " + " ".join(cmd) + "\n" + p.stdout, end="", flush=True)
                    p.returncode == 0 or fail(f"PnetCDF's example {name} did not compile")
        with open(stamp_file, "w") as f:
            f.write(stamp)
        print(f"built {len(cmds) - first} examples in {time.monotonic() - t0:.1f} s into {a.dir}")


# Open MPI's own notices: a block between lines of dashes (show_help), and "[host:pid] ..." lines about
# them. A stray TCP connection from another job on the node ("accepted a TCP connection from what
# appears to be another Open MPI process") prints one in any run, under dtf or not.
OMPI_RULE = re.compile(r"-{20,}")
OMPI_NOTE = re.compile(r"\[[\w.-]+:\d+\] ")


def programs_own(lines):
    """The lines a program printed, Open MPI's notices left out."""
    own, inside = [], False
    for line in lines:
        if OMPI_RULE.fullmatch(line.strip()):
            inside = not inside
        elif not inside and not OMPI_NOTE.match(line):
            own.append(line)
    return own


# Each rank's exit status, also in one MPMD launch, where mpirun reports only the first failure.
STATUS_SH = """#!/bin/sh
# status.sh DIR PROGRAM ARGS...: runs the program, then leaves its exit status in DIR/<rank>
# (written whole or not at all: a rank killed meanwhile leaves none).
d=$1; shift
"$@"; s=$?
f="$d/${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
echo $s >"$f.tmp" && mv "$f.tmp" "$f"
exit $s
"""


def statuses(folder, ranks):
    """Each rank's exit status ('-' where a rank left none: killed), in rank order."""
    got = sorted((r for r in os.listdir(folder) if r.isdigit()), key=int) if os.path.isdir(folder) else []
    return [open(os.path.join(folder, r)).read().strip() for r in got] + ["-"] * (ranks - len(got))


class Pair:
    """The example `name`'s programs: the writer, ncreader and the READERS; commands run from a folder
    of their own, so the files have the same (relative) names in every run and in the dumps."""

    def __init__(self, a, work):
        self.a, self.work, self.name = a, work, a.name
        path, self.files, self.pattern = files(a.name)
        lang, short = a.name.split(".", 1)
        self.wrapper = os.path.join(work, "status.sh")
        with open(self.wrapper, "w") as f:
            f.write(STATUS_SH)
        os.chmod(self.wrapper, 0o755)
        self.programs = [("writer", WRITER_RANKS, [os.path.join(a.dir, lang, short), "-q", path]),
                         ("reader", READER_RANKS, [a.ncreader, "OUT"] + self.files)]
        self.programs += [(c, n, [os.path.join(a.dir, argv[0])] + argv[1:]) for c, n, argv in READERS.get(a.name, [])]

    def argv(self, run, comp, argv):
        """A program's command in run `run`: its exit status per rank to run/status/<comp>/, ncreader's
        dumps to run/dump/dump.<rank>."""
        os.makedirs(os.path.join(run, "status", comp), exist_ok=True)
        os.makedirs(os.path.join(run, "dump"), exist_ok=True)
        return [self.wrapper, os.path.join(run, "status", comp)] + \
            [os.path.join(run, "dump", "dump") if w == "OUT" else w for w in argv]

    def result(self, run, out):
        """What a run left: each program's exit statuses and the lines it printed itself (sorted, since
        ranks interleave; dtf's own lines aside), and each reader rank's dump."""
        dumps = []
        for r in range(READER_RANKS):
            p = os.path.join(run, "dump", f"dump.{r}")
            dumps.append(open(p, errors="replace").read().splitlines() if os.path.exists(p) else None)
        printed = {c: sorted(programs_own([line[len(c) + 3:] for line in out.splitlines()
                                           if line.startswith(f"[{c}] ") and not line.startswith(f"[{c}] [dtf")]))
                   for c, _, _ in self.programs}
        return {c: statuses(os.path.join(run, "status", c), n) for c, n, _ in self.programs}, printed, dumps

    def oracle(self):
        """The programs one after the other on plain files, without dtf; the run's folder and output."""
        run, out = os.path.join(self.work, "oracle"), ""
        os.makedirs(os.path.join(run, "files"))
        for comp, ranks, argv in self.programs:
            cmd = [self.a.dtfrun, "--walltime", "60", "--name", comp, "-n", str(ranks)] + self.argv(run, comp, argv)
            out += sh(cmd, 90, cwd=os.path.join(run, "files"))[1]
        return run, out

    def config(self, mode):
        comps = [c for c, _, _ in self.programs]
        closes = WRITER_CLOSES.get(self.name)
        return (f"[INFO]\nncomp={len(comps)}\n" + "".join(f'comp_name="{c}"\n' for c in comps) +
                f'[FILE]\nfilename="{self.pattern}"\nwriter="writer"\nreaders="{" ".join(comps[1:])}"\n'
                f'mode="{mode}"\n' + (f"writer_closes={closes}\n" if closes else ""))

    def coupled(self, mode, launch):
        """The programs under dtf, both preloaded; returns the run's folder and dtfrun's output."""
        run = os.path.join(self.work, f"{mode}.{launch}")
        os.makedirs(os.path.join(run, "files"))
        ini = os.path.join(run, "dtf.ini")
        with open(ini, "w") as f:
            f.write(self.config(mode))
        # A sanitizer build's runtime must be preloaded before libdtf (as frontends.py does).
        runtimes = sanitizer_runtimes(self.a.lib)
        cmd = [self.a.dtfrun, "-c", ini, "--walltime", "60"] + (["--mpmd"] if launch == "mpmd" else []) + \
            ([] if runtimes else ["--preload", self.a.lib])
        for i, (comp, ranks, argv) in enumerate(self.programs):
            cmd += ([":"] if i else []) + ["--name", comp, "-n", str(ranks)]
            if runtimes:
                cmd += ["--mpi-args", f"-x LD_PRELOAD={':'.join(runtimes + [self.a.lib])} -x DTF_COMPONENT={comp}"]
            cmd += self.argv(run, comp, argv)
        # (a documented refusal leaves the others waiting for what never comes: a shorter bound)
        timeout = "5" if (self.name, mode) in LIMITS else "20"
        _, out = sh(cmd, 90, cwd=os.path.join(run, "files"), env={"DTF_TIMEOUT": timeout})
        return run, out


def first_difference(want, got):
    """The first line where two lists of lines (a dump, or what a program printed) differ, as text."""
    if got is None:
        return "no dump (the rank did not finish)"
    for i, (w, g) in enumerate(zip(want, got)):
        if w == g:
            continue
        if len(w) <= 160 and len(g) <= 160:
            return f"line {i + 1}: oracle '{w}', under dtf '{g}'"
        # A long line (a variable's values): where it starts to differ.
        ws, gs = w.split(" "), g.split(" ")
        k = next((k for k, (x, y) in enumerate(zip(ws, gs)) if x != y), min(len(ws), len(gs)))
        return f"line {i + 1} ('{' '.join(ws[:3])} ...'), from word {k + 1}: oracle '{' '.join(ws[k:k + 8])}', " \
            f"under dtf '{' '.join(gs[k:k + 8])}'"
    n = min(len(want), len(got))
    return f"line {n + 1} of {max(len(want), len(got))}, {'only the oracle' if len(want) > n else 'only under dtf'}: " \
        f"'{(want if len(want) > n else got)[n][:160]}'"


# dtf's error lines, and any error line, for the one-line reason of a variant that does not hold.
DTF_ERROR = re.compile(r"\[dtf[^\]]*\] error: ")
ERROR = re.compile(r"error|DTF_ERR|walltime|timed out|FAIL", re.I)


def judge_limit(refusal, want_dumps, got_dumps, out):
    """judge() for a documented refusal: printed, and every dump equals the oracle's up to its first error."""
    why = [] if refusal in out else [f"the documented refusal was not printed: '{refusal}'"]
    for r, (w, g) in enumerate(zip(want_dumps, got_dumps)):
        n = next((i for i, line in enumerate(g or []) if "DTF_ERR" in line), len(g or []))
        if (g or [])[:n] != (w or [])[:n]:
            why.append(f"reader rank {r}'s dump differs from the oracle's before its first error, at "
                       f"{first_difference((w or [])[:n], (g or [])[:n])}")
    return why


def judge(pair, oracle, want, mode, launch):
    """The reasons why a variant does not hold (none: it holds); `want`: the oracle's result."""
    run, out = pair.coupled(mode, launch)
    if (pair.name, mode) in LIMITS:
        return judge_limit(LIMITS[pair.name, mode], want[2], pair.result(run, out)[2], out)
    (want_status, want_printed, want_dumps), (got_status, got_printed, got_dumps) = want, pair.result(run, out)
    why = []
    for comp in want_status:
        if got_status[comp] != want_status[comp]:
            why.append(f"{comp}'s exit statuses (per rank) {' '.join(got_status[comp])}, the oracle's "
                       f"{' '.join(want_status[comp])}")
        # What a program says about what it saw (the examples print the errors and the wrong values they
        # find); when it failed, mpirun's report differs in any case.
        elif got_printed[comp] != want_printed[comp] and set(want_status[comp]) == {"0"}:
            why.append(f"{comp} printed other lines than on plain files: "
                       f"{first_difference(want_printed[comp], got_printed[comp])}")
    for r, (w, g) in enumerate(zip(want_dumps, got_dumps)):
        if w != g:
            why.append(f"reader rank {r}'s dump differs from the oracle's at {first_difference(w or [], g)}")
    on_disk = [f for f in pair.files if os.path.exists(os.path.join(run, "files", f))]
    if mode == "transfer" and on_disk:
        why.append(f"transfer-mode file(s) on disk: {' '.join(on_disk[:4])}")
    if mode == "file":
        for f in pair.files:
            plain, served = os.path.join(oracle, "files", f), os.path.join(run, "files", f)
            if os.path.exists(plain) != os.path.exists(served):
                why.append(f"{f} {'is missing' if os.path.exists(plain) else 'exists, unlike the oracle'}")
            elif os.path.exists(plain):
                differs = ncfiles.compare(plain, served)
                if differs:
                    why.append(f"the file differs from the oracle's: {differs}")
    # An error from dtf fails the variant even when the rest matches: after a config error, say,
    # the programs ran on plain files, and only timing decided what the reader saw.
    said = [line.strip() for line in out.splitlines() if DTF_ERROR.search(line)]
    if said and not why:
        why.append("dtf reported an error")
    if why:
        said = said or [line.strip() for line in out.splitlines() if ERROR.search(line)] or ["(none)"]
        why.append(f"first error line: {said[0][:400]}")
    return why


def run_example(a):
    build(a)
    modes, launches = (("transfer", "file"), ("jobs", "mpmd"))
    for var, choices in (("DTF_CONTRACT_MODE", modes), ("DTF_CONTRACT_LAUNCH", launches)):
        if os.environ.get(var, choices[0]) not in choices:
            fail(f"{var}={os.environ[var]}: expected one of {', '.join(choices)}")
    modes = [m for m in modes if os.environ.get("DTF_CONTRACT_MODE", m) == m]
    launches = [x for x in launches if os.environ.get("DTF_CONTRACT_LAUNCH", x) == x]
    with tempfile.TemporaryDirectory(prefix="dtf-contract-") as temporary:
        work = tempfile.mkdtemp(prefix=f"dtf-contract-{a.name}-") if a.keep else temporary
        if a.keep:
            print(f"the runs' folders are kept in {work}")
        pair = Pair(a, work)
        oracle, out = pair.oracle()
        status, _, dumps = want = pair.result(oracle, out)
        said = ", ".join(f"{c} exit statuses {' '.join(s)}" for c, s in status.items())
        print(f"oracle: {said}; reader dumps of {', '.join(str(len(d)) if d else '-' for d in dumps)} lines",
              flush=True)
        if any(d is None for d in dumps):
            fail("ncreader left no dump on plain files")
        verdicts = []
        for mode in modes:
            # Neither file mode (the real PnetCDF writes and reads the file) nor a documented refusal
            # depends on how the programs were started: file mode is checked in one launch (the faster),
            # a refusal as two jobs (where dtfrun reports the side that ended; in one launch each reader
            # rank waits out DTF_TIMEOUT for the files it leads, one after the other).
            runs = launches[:1] if (a.name, mode) in LIMITS else launches[-1:] if mode == "file" else launches
            for launch in runs:
                t0 = time.monotonic()
                why = judge(pair, oracle, want, mode, launch)
                verdicts.append((f"{mode}/{launch}", why, time.monotonic() - t0))
        print(f"\n{a.name}:")
        for variant, why, took in verdicts:
            limit = " as a documented refusal" if (a.name, variant.split("/")[0]) in LIMITS else ""
            print(f"  {variant}: {'does not hold' if why else 'holds' + limit} ({took:.1f} s)")
            for w in why:
                print(f"FAIL: {a.name} {variant}: {w}")
        held = sum(not why for _, why, _ in verdicts)
        print(f"{held} of {len(verdicts)} variants hold")
        return 0 if held == len(verdicts) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["list", "build", "run"])
    ap.add_argument("name", nargs="?", help="run: the example, c.<name> or f90.<name>")
    ap.add_argument("--fortran", action="store_true", help="list: the Fortran examples too")
    ap.add_argument("--dir", help="where the examples are built (kept between tests)")
    ap.add_argument("--mpicc")
    ap.add_argument("--mpif90", help="without it the Fortran examples are not built")
    ap.add_argument("--fortran-modules", help="the directory of PnetCDF's pnetcdf.mod")
    ap.add_argument("--pnetcdf-lib", help="libpnetcdf.so (its directory is linked with -lpnetcdf)")
    ap.add_argument("--pnetcdf-include", action="append", default=[], help="PnetCDF's include directory")
    ap.add_argument("--dtfrun")
    ap.add_argument("--lib", help="libdtf.so (preloaded)")
    ap.add_argument("--ncreader", help="ncreader.c built without dtf")
    ap.add_argument("--keep", action="store_true", help="run: keep the runs' folders (files, dumps, configs)")
    a = ap.parse_args()
    if a.action == "list":
        print("\n".join(names(a.fortran)))
        return 0
    if a.action == "build":
        build(a)
        return 0
    if a.name == THREADED and not pnetcdf_thread_safe():
        fail(f"{a.name} needs a thread-safe PnetCDF (pnetcdf-config --thread-safe does not say enabled)")
    if a.name not in names(True):
        ap.error(f"unknown example {a.name!r}")
    return run_example(a)


if __name__ == "__main__":
    sys.exit(main())
