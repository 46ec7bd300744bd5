#!/usr/bin/env python3
"""assim.py - the "assim" component of the dtf demo workflow in Python: a twin of examples/C/assim.c.

Each cycle c = 1..CYCLES it reads T and PS of every ensemble member m from hist.m<m>.<c>.nc (slabs
along y over its ranks: another decomposition than the model's) and checks every value; then it adds
an analysis increment of 0.5 K to each member and writes T into anal.m<m>.nc (CDF-5), which member m
reads at the start of the next cycle.

Plain mpi4py and netCDF4-python in parallel mode on the PnetCDF flavour of netCDF-C, no dtf call:
dtfrun --preload couples it (its MPI_Init starts dtf, which then serves these files). Set up the
Python environment with scripts/setup-python.sh; examples/demo.sh --python runs it with the C model.

usage: assim.py [CYCLES [NZ NY NX [MEMBERS]]]   (as examples/C/assim.c: 3, 16 128 128, 2)
"""
import sys

import numpy as np
from mpi4py import MPI
import netCDF4

comm = MPI.COMM_WORLD
rank, nranks = comm.Get_rank(), comm.Get_size()
# (The C programs' arguments and defaults: 3 cycles, a 16 x 128 x 128 grid, 2 members.)
args = [int(a) for a in sys.argv[1:]]
cycles = args[0] if args else 3
nz, ny, nx = args[1:4] if len(args) > 3 else (16, 128, 128)
members = args[4] if len(args) > 4 else 2


def block(n, parts, p):
    """[start, start + count) of n split over parts, the first ones one longer (demo_block)."""
    base, extra = divmod(n, parts)
    start = p * base + min(p, extra)
    return start, base + (1 if p < extra else 0)


def hist_value(m, cycle, z, y, x):
    """The model's T (and, at z = 0, PS) of member m in cycle `cycle`, as float32 (hist_value)."""
    t0 = (np.float32(200) + np.float32(16) * np.float32(m) + np.float32(8) * z.astype(np.float32)
          + np.float32(0.5) * (y % 64).astype(np.float32) + np.float32(0.25) * (x % 64).astype(np.float32))
    return t0 + np.float32(1.5) * np.float32(cycle) - np.float32(0.5)


y0, ly = block(ny, nranks, rank)
z, y, x = np.meshgrid(np.arange(nz), np.arange(y0, y0 + ly), np.arange(nx), indexing="ij")
bad = 0
for c in range(1, cycles + 1):
    t0 = MPI.Wtime()
    analyses = []
    for m in range(members):
        with netCDF4.Dataset(f"hist.m{m}.{c:04d}.nc", "r", parallel=True, comm=comm) as nc:
            for name in ("T", "PS"):
                nc[name].set_collective(True)
            t = nc["T"][0, :, y0:y0 + ly, :]
            ps = nc["PS"][0, y0:y0 + ly, :]
        expected = hist_value(m, c, z, y, x)
        bad += int(np.count_nonzero(t != expected)) + int(np.count_nonzero(ps != expected[0]))
        analyses.append(np.asarray(t, dtype=np.float32) + np.float32(0.5))  # the analysis increment
    for m, t in enumerate(analyses):
        with netCDF4.Dataset(f"anal.m{m}.nc", "w", parallel=True, comm=comm, format="NETCDF3_64BIT_DATA") as nc:
            for name, n in (("z", nz), ("y", ny), ("x", nx)):
                nc.createDimension(name, n)
            var = nc.createVariable("T", "f4", ("z", "y", "x"))
            var.set_collective(True)
            var[:, y0:y0 + ly, :] = t
    seconds = comm.reduce(MPI.Wtime() - t0, op=MPI.MAX)
    if rank == 0:
        print(f"cycle {c}: read {members} histories and wrote {members} analyses in {seconds:.3f} s", flush=True)

total = comm.allreduce(bad, op=MPI.SUM)
if rank == 0:
    print(f"assim (Python): {nranks} ranks, {members} members, {cycles} cycles: "
          f"{'WRONG history values' if total else 'all history values verified'}", flush=True)
sys.exit(1 if total else 0)
