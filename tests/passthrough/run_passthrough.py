#!/usr/bin/env python3
"""Passthrough checks: dtf without a config must not change what a PnetCDF program does.

  run_passthrough.py run --variant linked|preload --ref EXE [--exe EXE] --dtf LIBDTF
      Runs the reference binary (PnetCDF only) and the variant (EXE linked with dtf before PnetCDF,
      or the reference binary with LD_PRELOAD=LIBDTF), each with 2 ranks. Asserts identical files
      and identical stdout, and proves from LD_DEBUG=bindings that the variant's ncmpi_* calls
      were bound to libdtf (and forwarded by it to libpnetcdf) while the reference's were not.
  run_passthrough.py exports --dtf LIBDTF --pnetcdf LIBPNETCDF
      Asserts that libdtf exports the same ncmpi_* names as libpnetcdf (documented exceptions
      below) and no internal dtf_pnc_* symbol, and that it NEEDs libpnetcdf.
  run_passthrough.py probe --ref PROBE_REF --exe PROBE_DTF --dtf LIBDTF
      Runs pnc_probe: resolves to libpnetcdf alone, to libdtf when linked first or preloaded.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Declared in pnetcdf.h 1.12.3 but not defined in libpnetcdf (so dtf, generating from the header,
# defines them: calls return NC_ENOTBUILT instead of failing to link).
EXTRA_IN_DTF = {"ncmpi_get_att_ubyte", "ncmpi_put_att_ubyte"}

MPIRUN = ["timeout", "-k", "10", "100", "mpirun", "-n", "2", "--oversubscribe", "--bind-to", "none"]


def fail(msg):
    sys.exit("FAIL: " + msg)


def base(path):
    return os.path.basename(path.strip())


def needed(exe):
    out = subprocess.run(["readelf", "-d", exe], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\).*\[(.+)\]", out)


def mpirun(args, env_vars, stdout_path):
    """mpirun -n 2 ... env K=V ... args; the environment reaches the ranks only, not mpirun."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = MPIRUN + ["env"] + ["%s=%s" % kv for kv in env_vars.items()] + args
    with open(stdout_path, "w") as out:
        r = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=True, env=env)
    if r.returncode != 0:
        fail("%s exited with %d\n%s" % (" ".join(cmd), r.returncode, r.stderr))
    return open(stdout_path).read()


def bindings(prefix):
    """(from, to, symbol) for every ncmpi_* binding logged by LD_DEBUG=bindings in files prefix.*"""
    rx = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: \w+ symbol `(ncmpi_\w+)'")
    out = []
    for f in glob.glob(prefix + ".*"):
        out += [(base(a), base(b), s) for a, b, s in rx.findall(open(f, errors="replace").read())]
    return out


def is_dtf(lib):
    return lib.startswith("libdtf.so")


def is_pnc(lib):
    return lib.startswith("libpnetcdf.so")


# Called in every test program (directly, or by libpnetcdf's Fortran bindings).
KEY_CALLS = {"ncmpi_create", "ncmpi_open", "ncmpi_enddef", "ncmpi_put_vara_double_all", "ncmpi_wait_all",
             "ncmpi_buffer_attach", "ncmpi_close"}


def check_intercepted(binds, exe, what):
    """No ncmpi_* lookup (other than libdtf's own dlsym) got past libdtf, and the wrappers ran.

    A binding to libdtf alone proves little: libpnetcdf is linked with -z now, so all its PLT slots
    are bound at load time, called or not. But libdtf looks up the real function with
    dlsym(RTLD_NEXT) on the first call of a wrapper, so the libdtf -> libpnetcdf bindings are
    exactly the wrappers that ran. The program's own bindings are lazy, i.e. also calls."""
    wrong = sorted({(a, b, s) for a, b, s in binds if not is_dtf(a) and not is_dtf(b)})
    if wrong:
        fail("%s: ncmpi_* symbols bound past dtf: %s" % (what, wrong[:10]))
    forwarded = {s for a, b, s in binds if is_dtf(a) and is_pnc(b)}
    if KEY_CALLS - forwarded:
        fail("%s: never called through dtf: %s" % (what, sorted(KEY_CALLS - forwarded)))
    direct = {s for a, _, s in binds if a == base(exe)}
    if direct - forwarded:
        fail("%s: called by the program but not forwarded by dtf: %s" % (what, sorted(direct - forwarded)[:10]))
    via_pnc = {s for a, _, s in binds if is_pnc(a)} & forwarded - direct
    print("%s: %d ncmpi_* functions ran through dtf's wrappers (%d called by the program, %d only from "
          "inside libpnetcdf: Fortran bindings, ncmpi_open -> ncmpi_inq_file_format ...)" % (what, len(forwarded), len(direct), len(via_pnc)))
    return direct, via_pnc


def cmd_run(a):
    exe = a.ref if a.variant == "preload" else a.exe
    if a.variant == "linked":
        libs = needed(exe)
        i_dtf = next((i for i, l in enumerate(libs) if is_dtf(l)), None)
        i_pnc = next((i for i, l in enumerate(libs) if is_pnc(l)), None)
        if i_dtf is None or (i_pnc is not None and i_pnc < i_dtf):
            fail("%s: libdtf must come before libpnetcdf in NEEDED: %s" % (exe, libs))
        print("NEEDED order:", " ".join(libs))
    if any(is_dtf(l) for l in needed(a.ref)):
        fail("reference binary %s is linked with libdtf" % a.ref)

    work = tempfile.mkdtemp(prefix="dtf-pt-", dir=os.getcwd())
    try:
        dbg = {"LD_DEBUG": "bindings"}
        ref_out = mpirun([a.ref, os.path.join(work, "ref.nc")],
                         dict(dbg, LD_DEBUG_OUTPUT=os.path.join(work, "ld.ref")), os.path.join(work, "ref.out"))
        env = dict(dbg, LD_DEBUG_OUTPUT=os.path.join(work, "ld.var"))
        if a.variant == "preload":
            env["LD_PRELOAD"] = a.dtf
        var_out = mpirun([exe, os.path.join(work, "var.nc")], env, os.path.join(work, "var.out"))
        print("---- reference output ----\n" + ref_out, end="")

        if ref_out != var_out:
            fail("stdout differs:\n--- reference\n%s--- %s\n%s" % (ref_out, a.variant, var_out))
        if "checksum" not in ref_out:
            fail("no checksum in the output")
        r = subprocess.run(["cmp", os.path.join(work, "ref.nc"), os.path.join(work, "var.nc")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("files differ: " + r.stdout + r.stderr)
        print("files identical (%d bytes), stdout identical" % os.path.getsize(os.path.join(work, "ref.nc")))

        # Control: without dtf the same LD_DEBUG check sees libpnetcdf, so it can tell the two apart.
        ref_b = bindings(os.path.join(work, "ld.ref"))
        if not ref_b or any(is_dtf(b) for _, b, _ in ref_b):
            fail("reference run: expected ncmpi_* bound to libpnetcdf only, got %d bindings" % len(ref_b))
        direct, via_pnc = check_intercepted(bindings(os.path.join(work, "ld.var")), exe, a.variant + " run")
        if a.lang == "c" and not direct:
            fail("the C program's own ncmpi_* calls were not seen")
        if a.lang != "c" and (direct or not via_pnc):
            fail("Fortran: expected ncmpi_* calls from libpnetcdf's nfmpi_* code only")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("PASS")


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    return {l.split()[-1] for l in out.splitlines() if len(l.split()) >= 3}


def cmd_exports(a):
    dtf, pnc = exported(a.dtf), exported(a.pnetcdf)
    d = {s for s in dtf if s.startswith("ncmpi_")}
    p = {s for s in pnc if s.startswith("ncmpi_")}
    print("libdtf exports %d ncmpi_* functions, libpnetcdf %d" % (len(d), len(p)))
    if p - d:
        fail("in libpnetcdf but not wrapped by dtf: %s" % sorted(p - d))
    if d - p != EXTRA_IN_DTF:
        fail("extra ncmpi_* in libdtf %s, documented exceptions %s" % (sorted(d - p), sorted(EXTRA_IN_DTF)))
    internal = sorted(s for s in dtf if s.startswith("dtf_pnc"))
    if internal:
        fail("internal symbols exported: %s" % internal)
    # libdtf reaches PnetCDF only through dlsym: without this entry, a program linked -ldtf -lpnetcdf
    # under --as-needed would not load libpnetcdf at all.
    if not any(is_pnc(l) for l in needed(a.dtf)):
        fail("libdtf does not NEED libpnetcdf: %s" % needed(a.dtf))
    print("PASS (documented extras: %s)" % ", ".join(sorted(EXTRA_IN_DTF)))


def cmd_probe(a):
    def run(cmd, env=None):
        r = subprocess.run(["timeout", "30"] + cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
        print("$ %s%s\n%s%s" % ("LD_PRELOAD=%s " % env["LD_PRELOAD"] if env else "", " ".join(cmd), r.stdout, r.stderr))
        if r.returncode != 0:
            fail(" ".join(cmd))
    run([a.ref, "pnetcdf"])
    run([a.ref, "dtf"], {"LD_PRELOAD": a.dtf})
    run([a.exe, "dtf"])
    print("PASS")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--variant", choices=["linked", "preload"], required=True)
    r.add_argument("--lang", choices=["c", "f77", "f90"], required=True)
    r.add_argument("--ref", required=True)
    r.add_argument("--exe")
    r.add_argument("--dtf", required=True)
    r.add_argument("--keep", action="store_true", help="keep the work directory")
    e = sub.add_parser("exports")
    e.add_argument("--dtf", required=True)
    e.add_argument("--pnetcdf", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--ref", required=True)
    p.add_argument("--exe", required=True)
    p.add_argument("--dtf", required=True)
    a = ap.parse_args()
    if a.cmd == "run" and a.variant == "linked" and not a.exe:
        ap.error("--variant linked needs --exe")
    {"run": cmd_run, "exports": cmd_exports, "probe": cmd_probe}[a.cmd](a)


if __name__ == "__main__":
    main()
