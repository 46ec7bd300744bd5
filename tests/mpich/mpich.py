#!/usr/bin/env python3
"""dtf under MPICH (Debian's 4.0.2, beside Open MPI): PnetCDF built for MPICH from Debian's source
package and dtf against both in DIR (tests/lib/mpibuild.py); the programs then run under MPICH's
mpiexec (Hydra), launched by the same dtfrun.

usage: mpich.py CASE --dir DIR --source SRC [--werror]

Cases
  build  only the builds (ctest runs it first, alone; every case builds what is missing)
  pair   the coupled programs in one MPMD launch (dtfrun --mpmd: mpiexec -n A ... : -n B ..., Hydra
         gives each executable its MPI_APPNUM) in the shapes 1x1, 2x3 and 3x2, both files in transfer
         mode, every value checked (coupled.py pair).
  letkf  the SCALE-LETKF pattern in one launch, file mode then transfer mode, the same bytes.
  prop   the property test, 2x3, 100 cases in one launch: transfer mode byte for byte as file mode.
  zero   the zero-change mode: programs without dtf calls, preloaded (mpiexec -env per executable).
  jobs   the components as separate mpiexec jobs: MPICH 4.0 built with UCX cannot open a port, so
         dtf_init must fail at once in both, saying why and how to launch instead, not wait.

Every case builds what is missing first (a lock keeps concurrent ones waiting); later runs reuse the
builds. Without
MPICH (mpicc.mpich, mpiexec.mpich) the test is skipped (status 77), unless DTF_TEST_MPICH=required.
"""
import argparse
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "coupled"))
import mpibuild  # noqa: E402
from coupled import write_config as coupled_config  # noqa: E402  (the coupled programs' dtf.ini)
TARGETS = ["dtf", "dtfrun", "coupled_filemode", "coupled_letkf", "coupled_unaware", "xfer_prop"]


def skip_or_fail(why):
    if os.environ.get("DTF_TEST_MPICH") == "required":
        print(f"FAIL: MPICH required (DTF_TEST_MPICH=required): {why}")
        sys.exit(1)
    print(f"SKIP: no MPICH here: {why}")
    sys.exit(77)


expect, run = mpibuild.fail_unless, mpibuild.run


def missing():
    """Why MPICH cannot be used here, or None."""
    gone = [p for p in ("mpicc.mpich", "mpicxx.mpich", "mpiexec.mpich") if not shutil.which(p)]
    return f"{', '.join(gone)} not found (apt-get install mpich libmpich-dev)" if gone else None


def build(directory, source, targets, werror=False, optimize=False):
    """PnetCDF for MPICH (cached) and dtf's `targets` against it in `directory`; returns the build
    tree (bench/letkf.py builds letkf_io so too, optimized)."""
    return mpibuild.build("mpich", directory, source, targets, "mpicc.mpich", "mpicxx.mpich", werror=werror,
                          optimize=optimize)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", choices=["build", "pair", "letkf", "prop", "zero", "jobs"])
    p.add_argument("--dir", required=True, help="where the MPICH build goes (kept between tests)")
    p.add_argument("--source", required=True, help="dtf's source tree")
    p.add_argument("--werror", action="store_true", help="build with -DDTF_WERROR=ON")
    a = p.parse_args()
    if missing():
        skip_or_fail(missing())
    tree = build(a.dir, a.source, TARGETS, a.werror)
    if a.case == "build":
        print("PASS")
        return
    exe = {t: os.path.join(tree, d, t) for d, ts in (("tests/coupled", ("coupled_filemode", "coupled_letkf",
                                                                        "coupled_unaware")),
                                                       ("tests/transfer", ("xfer_prop",))) for t in ts}
    dtfrun = os.path.join(tree, "bin", "dtfrun")
    coupled = [sys.executable, os.path.join(a.source, "tests", "coupled", "coupled.py")]
    common = ["--dtfrun", dtfrun, "--mpirun", "mpiexec.mpich", "--c-exe", exe["coupled_filemode"]]
    if a.case == "pair":
        for m, n in ((1, 1), (2, 3), (3, 2)):
            says = r"dtf model:0. MPI: MPICH 4[0-9.]+; started by mpiexec .MPICH's Hydra.; one launch, this program " \
                r"number 0 .MPI_APPNUM."
            status, out, _ = run(coupled + ["pair"] + common + ["--launch", "mpmd", "--model-ranks", str(m),
                                 "--assim-ranks", str(n), "--cycles", "2", "--hist-mode", "transfer",
                                 "--state-mode", "transfer", "--says", says], 200)
            expect(status == 0 and out.rstrip().endswith("PASS"), f"the coupled programs {m}x{n} must pass under MPICH")
    elif a.case == "letkf":
        status, out, _ = run(coupled + ["letkf"] + common + ["--launch", "mpmd", "--model-exe", exe["coupled_letkf"],
                             "--assim-exe", exe["coupled_letkf"], "--members", "2", "--model-ranks", "4",
                             "--assim-ranks", "3", "--cycles", "4"], 280)
        expect(status == 0 and out.rstrip().endswith("PASS"), "the LETKF pattern must pass under MPICH")
    elif a.case == "prop":
        status, out, _ = run([sys.executable, os.path.join(a.source, "tests", "transfer", "prop.py"), "--dtfrun", dtfrun,
                              "--mpirun", "mpiexec.mpich", "--exe", exe["xfer_prop"], "--launch", "mpmd",
                              "--shape", "2x3", "--cases", "100", "--seed", "16", "--walltime", "240"], 300)
        expect(status == 0, "the property test must pass under MPICH")
    elif a.case == "zero":
        status, out, _ = run(coupled + ["unaware"] + common + ["--launch", "mpmd", "--unaware-exe",
                             exe["coupled_unaware"], "--lib", os.path.join(tree, "src", "libdtf.so"),
                             "--model-ranks", "2", "--assim-ranks", "3"], 200)
        expect(status == 0 and out.rstrip().endswith("PASS"), "the zero-change mode must pass under MPICH")
    else:
        with tempfile.TemporaryDirectory(prefix="dtf-mpich-") as work:
            ini = os.path.join(work, "dtf.ini")
            coupled_config(ini, hist_mode="transfer")
            status, out, took = run([dtfrun, "--mpirun", "mpiexec.mpich", "--timeout", "60", "--walltime", "90",
                                     "-c", ini] + [w for i, (role, n) in enumerate((("model", 2), ("assim", 3)))
                                                   for w in [":"][:i] + ["--name", role, "-n", str(n),
                                                                         exe["coupled_filemode"], role, ini, work, "1"]],
                                    120)
        for role in ("model", "assim"):
            expect(re.search(rf"DTF_ERR_CONNECT: component '{role}' runs as a job of its own, but this MPI cannot "
                             r"connect separately launched jobs \(MPI_Open_port fails: .*not supported.*\): "
                             r"start all components in one launch, `dtfrun --mpmd`", out),
                   f"{role}: dtf_init must say why it cannot connect and how to launch instead")
        expect(status != 0 and took < 30, f"the refusal must come at once, not after DTF_TIMEOUT=60 ({took:.1f} s)")
    print("PASS")


if __name__ == "__main__":
    main()
