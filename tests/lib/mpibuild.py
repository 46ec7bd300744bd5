"""dtf built against another MPI than the suite's, for tests and benchmarks: PnetCDF built for that
MPI from Debian's source package (scripts/build-pnetcdf.sh, C only, cached in ~/.cache/dtf), then
dtf's given targets against both (cmake -DDTF_FORTRAN=OFF with that MPI's compiler wrappers).

    tree = mpibuild.build("mpich", directory, source, ["dtf", "coupled_filemode"],
                          mpicc="mpicc.mpich", mpicxx="mpicxx.mpich")

Concurrent callers (ctest -j) wait for the first: a lock in `directory`. A failed step ends the
process with "FAIL: ..." (status 1).
"""
import fcntl
import os
import subprocess
import sys
import time

PNETCDF = "1.12.3"  # Debian 12's source package


def run(cmd, limit, env=None):
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=limit)
    print(p.stdout, flush=True)
    return p.returncode, p.stdout, time.monotonic() - t0


def fail_unless(cond, message):
    if not cond:
        print("FAIL: " + message)
        sys.exit(1)


def build(name, directory, source, targets, mpicc, mpicxx, env=None, werror=False, optimize=False):
    """PnetCDF for MPI `name` (cached) and dtf's `targets` against it in `directory`/build; returns
    that tree. `env`: the environment the MPI's compiler wrappers need (default: this one). dtf is
    compiled with -O1 and no debug information (tests: 40% less build time), or as the main build
    with `optimize` (benchmarks)."""
    env = dict(env if env is not None else os.environ)
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dtf")
    pnetcdf = os.path.join(cache, f"pnetcdf-{PNETCDF}-{name}")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        status, _, took = run([os.path.join(source, "scripts", "build-pnetcdf.sh"), pnetcdf, mpicc], 900, env)
        fail_unless(status == 0, f"PnetCDF for {name} did not build")
        print(f"PnetCDF for {name}: {took:.0f} s ({pnetcdf})")
        tree = os.path.join(directory, "build")
        env["PKG_CONFIG_PATH"] = os.path.join(pnetcdf, "lib", "pkgconfig")
        if not os.path.exists(os.path.join(tree, "CMakeCache.txt")):
            flags = [] if optimize else ["-DCMAKE_BUILD_TYPE=None", "-DCMAKE_C_FLAGS=-O1", "-DCMAKE_CXX_FLAGS=-O1"]
            status, _, _ = run(["cmake", "-S", source, "-B", tree, "-G", "Ninja", "-DDTF_FORTRAN=OFF",
                                f"-DMPI_C_COMPILER={mpicc}", f"-DMPI_CXX_COMPILER={mpicxx}",
                                f"-DDTF_WERROR={'ON' if werror else 'OFF'}"] + flags, 300, env)
            fail_unless(status == 0, f"dtf did not configure against {name}")
        status, _, took = run(["cmake", "--build", tree, "--target"] + targets, 900, env)
        fail_unless(status == 0, f"dtf did not build against {name}")
        print(f"dtf against {name}: {took:.0f} s")
    return tree
