#!/usr/bin/env python3
"""Front ends on PnetCDF under dtf: netCDF-C's parallel API, Python (mpi4py and netCDF4-python), a
Fortran reader that asks inquire(exist=) first, in pairs with each other and with PnetCDF programs.

usage: frontends.py SCENARIO --dtfrun PATH --lib LIBDTF --ncpair EXE [options]

Scenarios
  pair     a writer and a reader of front.nc (ncpair.c: --writer/--reader nc or pnc; ncpair.py:
           python; inquire_f.F90: inquire), run first one after the other on a plain file without dtf
           (the oracle), then coupled by dtf (--mode, --launch jobs|mpmd; preloaded,
           or --linked: programs linked with libdtf, DTF_COMPONENT given per component). The writer
           starts --delay seconds late, so that the reader looks at the path first. Each reader rank
           must read byte for byte what the oracle's did, a file-mode file must equal the oracle's
           byte for byte, and a transfer-mode file must not reach the disk. --writeback: the reader
           then opens the file again with NC_WRITE and writes a variable back, and the writer reads
           it back (comp1=/comp2=, num_sessions=2: SCALE-LETKF's analysis file). --access serial: a
           file per writer process, front.<rank>.nc, written and read by one process each (nc_create,
           nc_open), every reader rank reading every file; --versions N: each written N times, the
           reader ranks reading each version (--named: each in a file of its own name); --replay:
           replay_io=1 (the later versions replay); --grid NY NX NREC: the C programs' sizes.
  refused  what dtf does not serve yet (in transfer mode a group in a netCDF-4 file: --format netcdf4;
           serial files with persist=1: --access serial) refused at the writer's call,
           naming the config line; the reader fails naming the lost writer, nothing hangs.
  unaware  dtfrun without --preload on programs not linked with libdtf that the config names: stops
           before launching, with the fix.
Python scenarios need --python (the venv of scripts/setup-python.sh): without one the test is
skipped (status 77) unless DTF_TEST_PYTHON=required. Every launch runs under dtfrun --walltime.
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

CONFIG = """[INFO]
ncomp=2
comp_name="writer"
comp_name="reader"
[FILE]
filename="front.nc"
writer="writer"
readers="reader"
mode="{mode}"
"""
# --writeback: the reader writes the file back (NC_WRITE), the writer reads it back: the roles
# change, so comp1=/comp2=, with both sessions kept (num_sessions=2, as SCALE-LETKF's analysis).
WRITEBACK_CONFIG = """[INFO]
ncomp=2
comp_name="writer"
comp_name="reader"
[FILE]
filename="front.nc"
comp1="writer"
comp2="reader"
mode="{mode}"
num_sessions=2
"""
# nc4model's classic.nc (a CDF-5 file its reader opens after the netCDF-4 one).
CLASSIC_SECTION = """[FILE]
filename="classic.nc"
writer="writer"
readers="reader"
mode="{mode}"
"""
SKIP = 77
REPLAYED = re.compile(r"\[dtf (\w+)\] stats .* (\d+) get batches replayed, (\d+) matched; (\d+) replayed batches")


def expect(cond, message):
    if not cond:
        print("FAIL: " + message)
        sys.exit(1)


def run(cmd, env=None, timeout=150):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=dict(os.environ, **(env or {})), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    print(p.stdout)
    print(f"exit status {p.returncode}", flush=True)
    return p.returncode, p.stdout


def program(args, kind, role, folder, linked=None):
    """The command of a writer or reader of kind nc, pnc, python or inquire."""
    if kind == "inquire":
        return [args.inquire, folder]
    if kind == "model":
        return [args.nc4model, role, "nc", folder, args.format, args.access]
    tail = [folder, args.format, args.access]
    if kind == "python":
        return [args.python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ncpair.py"), role] + tail
    return [args.ncpair_linked if (args.linked if linked is None else linked) else args.ncpair, role, kind] + tail + \
        [str(n) for n in args.grid or []]


def sanitizer_runtimes(lib):
    """The sanitizer runtimes a sanitizer build of libdtf needs preloaded before it (none otherwise)."""
    ldd = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    return re.findall(r"=> (\S*lib[at]san\.so\S*)", ldd)


def dtfrun(args, ini, writer, reader, walltime=90, preload=True):
    """dtfrun's command for the pair: --preload, or (a sanitizer build, whose runtime must come first)
    LD_PRELOAD and DTF_COMPONENT through --mpi-args; --linked: DTF_COMPONENT alone (a linked program
    that never calls dtf_init starts dtf in MPI_Init as that component)."""
    runtimes = sanitizer_runtimes(args.lib) if preload and not args.linked else []
    cmd = [args.dtfrun, "-c", ini, "--walltime", str(walltime)] + (["--mpmd"] if args.launch == "mpmd" else [])
    if preload and not args.linked and not runtimes:
        cmd += ["--preload", args.lib]
    for i, (name, ranks, argv) in enumerate((("writer", args.writer_ranks, writer), ("reader", args.reader_ranks, reader))):
        cmd += ([":"] if i else []) + ["--name", name, "-n", str(ranks)]
        if args.linked:
            cmd += ["--mpi-args", f"-x DTF_COMPONENT={name}"]
        elif runtimes:
            cmd += ["--mpi-args", f"-x LD_PRELOAD={':'.join(runtimes + [args.lib])} -x DTF_COMPONENT={name}"]
        cmd += argv
    return cmd


def same_file(a, b, fmt):
    """Whether two files hold the same: byte for byte; for netCDF-4 files everything netCDF-C reports
    of them (`ncdump -s`, full precision: header, storage, chunking, filters, endianness and every
    value), since HDF5 writes bytes of memory it never set into a file's padding (under ASan, whose
    malloc fills with 0xbe, two runs of one program differ there)."""
    if not fmt.startswith("netcdf4"):
        with open(a, "rb") as x, open(b, "rb") as y:
            return x.read() == y.read()
    expect(shutil.which("ncdump") is not None, "ncdump not found: scripts/install-deps.sh installs netcdf-bin")
    dump = lambda path: subprocess.run(["ncdump", "-s", "-p", "9,17", path], capture_output=True, text=True,  # noqa: E731
                                       check=True).stdout.split("\n", 1)[1]  # (the first line names the file)
    return dump(a) == dump(b)


def scenario_pair(args, work):
    if "python" in (args.writer, args.reader) and not args.python:
        print("no Python environment (scripts/setup-python.sh): skipped")
        return SKIP
    oracle = os.path.join(work, "oracle")
    os.mkdir(oracle)
    serial = {"NCPAIR_WRITERS": str(args.writer_ranks), "NCPAIR_VERSIONS": str(args.versions),
              "NCPAIR_NAMED": str(int(args.named))}
    # The oracle: the same programs one after the other on a plain file, without dtf (the inquire
    # reader, which checks every value itself, is not run; nor a reader of several versions of a file,
    # of which only the last is on disk then).
    for role, kind, ranks in (("writer", args.writer, args.writer_ranks), ("reader", args.reader, args.reader_ranks)):
        if kind != "inquire" and (role == "writer" or args.versions == 1):
            cmd = [args.dtfrun, "--walltime", "60", "-n", str(ranks)] + program(args, kind, role, oracle, linked=False)
            status, _ = run(cmd, {"NCPAIR_DUMP": os.path.join(work, "oracle.dump"),
                                  "NCPAIR_WRITEBACK": str(int(args.writeback)), **serial})
            expect(status == 0, f"the {role} without dtf failed")
    ini = os.path.join(work, "dtf.ini")
    with open(ini, "w") as f:
        text = (WRITEBACK_CONFIG if args.writeback else CONFIG).format(mode=args.mode)
        if args.access == "serial":  # (a file per writer process)
            text = text.replace('filename="front.nc"', 'filename="front.%.nc"')
        if args.replay:
            text += "replay_io=1\n"
        if args.reader == "model":  # (and a classic file beside it)
            text += CLASSIC_SECTION.format(mode=args.mode)
        f.write(text)
    data = os.path.join(work, "data")
    os.mkdir(data)
    env = {"DTF_TIMEOUT": "30", "NCPAIR_DELAY": str(args.delay), "NCPAIR_DUMP": os.path.join(work, "dtf.dump"),
           "NCPAIR_WRITEBACK": str(int(args.writeback)), "NCPAIR_READBACK": str(int(args.writeback)), **serial}
    if args.replay:
        env["DTF_PRINT_STATS"] = "2"
    env.update(kv.split("=", 1) for kv in args.env)
    status, out = run(dtfrun(args, ini, program(args, args.writer, "writer", data),
                             program(args, args.reader, "reader", data)), env)
    expect(status == 0, f"dtfrun exited with status {status}")
    verified = {"inquire": "inquire reader: all values verified", "model": "nc4model reader: dumped"}.get(
        args.reader, "ncpair reader: all values verified")
    expect(verified in out, "the reader must verify every value (nc4model: dump them, compared below)")
    if args.writeback:
        expect("ncpair writer: write-back verified" in out, "the writer must read back what the reader wrote back")
    if args.replay:  # (the first version's batches are matched, each later version's replayed)
        replayed, matched, bundled = {m.group(1): tuple(int(g) for g in m.groups()[1:])
                                      for m in REPLAYED.finditer(out)}.get("reader", (0, 0, 0))
        expect(matched > 0 and replayed >= (args.versions - 1) * matched,
               f"the reader must replay every version after the first: {replayed} batches replayed, {matched} matched")
        # (each get of a file is a batch of its own, its data small: a writer's messages to a reader go in
        # bundles, so most replayed batches find theirs in an earlier batch's message)
        expect(2 * bundled >= replayed,
               f"the replayed gets must come in bundles: {bundled} of {replayed} replayed batches took their data "
               "from an earlier one's message")
    if args.quiet:
        expect("[dtf " not in out, "DTF_VERBOSE_LEVEL=-1 (quiet): dtf must print nothing but errors")
    if args.mode == "transfer":
        expect(not os.listdir(data), f"a transfer-mode file reached the disk: {os.listdir(data)}")
    else:
        names = [f"front.{r}.nc" for r in range(args.writer_ranks)] if args.access == "serial" else ["front.nc"]
        for name in names:
            expect(same_file(os.path.join(oracle, name), os.path.join(data, name), args.format),
                   f"the file-mode file {name} differs from the one the same writer wrote without dtf")
    if args.reader != "inquire" and args.versions == 1:
        for r in range(args.reader_ranks):
            with open(os.path.join(work, f"oracle.dump.{r}"), "rb") as a, \
                 open(os.path.join(work, f"dtf.dump.{r}"), "rb") as b:
                oracle_bytes, dtf_bytes = a.read(), b.read()
            if oracle_bytes != dtf_bytes and args.reader == "model":  # (a text dump: the lines that differ)
                diff = difflib.unified_diff(oracle_bytes.decode().splitlines(True), dtf_bytes.decode().splitlines(True),
                                            "plain", "dtf")
                print("".join(line[:200] + ("...\n" if len(line) > 200 else "") for line in list(diff)[:40]))
            expect(oracle_bytes == dtf_bytes, f"reader rank {r} read other bytes than on a plain file")
    return 0


def scenario_refused(args, work):
    """What dtf does not serve yet, refused at the call, naming the config line: a group defined in a
    netCDF-4 file in transfer mode; serial files (--access serial) with persist=1."""
    ini = os.path.join(work, "dtf.ini")
    with open(ini, "w") as f:
        text = CONFIG.format(mode=args.mode).replace('filename="front.nc"', 'filename="front.%nc"')
        f.write(text + ("persist=1\n" if args.access == "serial" else ""))
    status, out = run(dtfrun(args, ini, program(args, "nc", "writer", work), program(args, "nc", "reader", work)),
                      {"DTF_TIMEOUT": "60", "NCPAIR_GROUP": "1"})
    expect(status != 0, "the run must fail")
    if args.access == "serial":  # (each side's first serial call is refused: whichever comes first ends the run)
        why = f"by one process: {ini}:5 serves it in transfer mode with persist=1, which dtf does not build for " \
              "serial files yet"
        expect(f"nc_create of '{work}/front.0.nc' {why}" in out or f"nc_open of '{work}/front.0.nc' {why}" in out,
               f"the writer's nc_create or the reader's nc_open must be refused, saying: {why}")
        return 0
    why = f"'{work}/front.nc' is a netCDF-4 file served in transfer mode ({ini}:5), which keeps the classic data " \
          "model: groups (nc_def_grp) cannot be served"
    expect(why in out, f"the writer must be refused, saying: {why}")
    expect("component 'writer' was lost" in out, "the reader must say that it waited for the lost writer")
    return 0


def scenario_unaware(args, work):
    ini = os.path.join(work, "dtf.ini")
    with open(ini, "w") as f:
        f.write(CONFIG.format(mode=args.mode))
    status, out = run(dtfrun(args, ini, program(args, "nc", "writer", work), program(args, "nc", "reader", work),
                             preload=False))
    expect(status == 2, "dtfrun must stop before launching (status 2)")
    expect(f"dtfrun: component 'writer': {ini} names files for it, but {args.ncpair} is not linked with libdtf: "
           f"add --preload " in out, "dtfrun must say that --preload is missing")
    expect("[writer]" not in out and "[reader]" not in out, "nothing may have been launched")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario", choices=["pair", "refused", "unaware"])
    ap.add_argument("--dtfrun", required=True)
    ap.add_argument("--lib", required=True, help="libdtf.so (for --preload)")
    ap.add_argument("--ncpair", required=True, help="ncpair.c built without dtf")
    ap.add_argument("--ncpair-linked", help="ncpair.c linked with libdtf (--linked)")
    ap.add_argument("--nc4model", help="nc4model.c (--writer model --reader model)")
    ap.add_argument("--inquire", help="inquire_f.F90")
    ap.add_argument("--python", help="the Python of the venv scripts/setup-python.sh makes")
    ap.add_argument("--writer", default="nc", choices=["nc", "pnc", "python", "model"])
    ap.add_argument("--reader", default="nc", choices=["nc", "pnc", "python", "inquire", "model"])
    ap.add_argument("--writer-ranks", type=int, default=2)
    ap.add_argument("--reader-ranks", type=int, default=3)
    ap.add_argument("--format", default="cdf5", choices=["classic", "64bit-offset", "cdf5", "netcdf4", "netcdf4-classic"])
    ap.add_argument("--access", default="collective", choices=["collective", "independent", "serial"])
    ap.add_argument("--mode", default="transfer", choices=["file", "transfer"])
    ap.add_argument("--launch", default="jobs", choices=["jobs", "mpmd"])
    ap.add_argument("--linked", action="store_true")
    ap.add_argument("--delay", type=float, default=1, help="seconds the writer waits before it creates the file")
    ap.add_argument("--versions", type=int, default=1,
                    help="--access serial: the writer writes each file this many times (the same path again)")
    ap.add_argument("--named", action="store_true", help="--versions: version v of a file named front.<w>.v<v>.nc")
    ap.add_argument("--replay", action="store_true", help="replay_io=1 for the file (its later versions replay)")
    ap.add_argument("--grid", type=int, nargs=3, metavar=("NY", "NX", "NREC"),
                    help="the C programs' variables: NY x NX (default 7 x 9), NREC records")
    ap.add_argument("--writeback", action="store_true",
                    help="the reader writes t + 1 back (NC_WRITE), the writer reads it back (C programs)")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for both components")
    ap.add_argument("--quiet", action="store_true", help="expect no dtf output (with --env DTF_VERBOSE_LEVEL=-1)")
    args = ap.parse_args()
    if args.python and not os.path.exists(args.python):
        if os.environ.get("DTF_TEST_PYTHON") == "required":
            expect(False, f"DTF_TEST_PYTHON=required, but {args.python} does not exist (scripts/setup-python.sh)")
        args.python = None
    with tempfile.TemporaryDirectory(prefix="dtf-frontends-") as work:
        scenarios = {"pair": scenario_pair, "refused": scenario_refused, "unaware": scenario_unaware}
        return scenarios[args.scenario](args, work)


if __name__ == "__main__":
    sys.exit(main())
