#!/usr/bin/env python3
"""The Python twin of ncpair.c: the same writer and reader of DIR/front.nc through mpi4py and
netCDF4-python in parallel mode (netCDF-C on PnetCDF), with the same values, checks and dump (the
reader's NCPAIR_DUMP=PREFIX files are byte for byte those of the C reader), and no dtf call.

usage: ncpair.py writer|reader DIR FORMAT ACCESS [NY NX NREC]   (ACCESS: collective, independent, serial)
"""
import os
import sys
import time

import numpy as np
from mpi4py import MPI
import netCDF4

FORMATS = {"classic": ("NETCDF3_CLASSIC", 1), "64bit-offset": ("NETCDF3_64BIT_OFFSET", 2),
           "cdf5": ("NETCDF3_64BIT_DATA", 5), "netcdf4": ("NETCDF4", 3),
           "netcdf4-classic": ("NETCDF4_CLASSIC", 4)}
TITLE, UNITS, SCALE = "dtf front ends", "K", np.array([0.5, 2.0])


def block(n, parts, p):
    base, extra = divmod(n, parts)
    return p * base + min(p, extra), base + (1 if p < extra else 0)


def tval(y, x):
    return 1000.0 * y + x + 0.25


def rval(r, y, x):
    return (100000 * r + 1000 * y + x).astype(np.float32) + np.float32(0.5)


RECORDS, RECORD = 3, 2  # (the records of r and q in a serial file, and the one of r written)


def nval(x):
    return 7 * x - 3


def serial(comm, role, folder, fmt, ny, nx):
    """ACCESS serial, as ncpair.c's: a file per writer process, front.<rank>.nc (t; h of which only the
    first row is written; r and q of which only record 2 of r is written), written by it alone
    NCPAIR_VERSIONS times; each reader process reads every writer's file alone, version by version.
    (No write-back here.)"""
    rank, size = comm.Get_rank(), comm.Get_size()
    versions, writers = int(os.environ.get("NCPAIR_VERSIONS", "1")), int(os.environ.get("NCPAIR_WRITERS", "1"))
    y, x = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
    dump = open(f"{os.environ['NCPAIR_DUMP']}.{rank}", "wb") if os.environ.get("NCPAIR_DUMP") and role == "reader" \
        else None
    bad = 0
    for v in range(1, versions + 1):
        for w in ([rank] if role == "writer" else range(writers)):
            path = os.path.join(folder, f"front.{w}.nc")
            value = 1e6 * v + 1e4 * w + tval(y, x)
            if role == "writer":
                with netCDF4.Dataset(path, "w", format=FORMATS[fmt][0]) as nc:
                    nc.title = TITLE
                    nc.createDimension("y", ny)
                    nc.createDimension("x", nx)
                    nc.createDimension("time", None)
                    nc.createVariable("t", "f8", ("y", "x"))[:] = value
                    nc.set_fill_on()  # (nc_set_fill in data mode: the default already)
                    nc.createVariable("h", "f8", ("y", "x"))[0, :] = value[0]  # (the rest: the default fill)
                    nc.createVariable("r", "i4", ("time", "x"))[RECORD, :] = nval(np.arange(nx))
                    nc.createVariable("q", "i4", ("time", "x"))
                continue
            with netCDF4.Dataset(path, "r") as nc:
                nc.set_auto_mask(False)
                if v == 1 and rank == size - 1 and versions > 1:
                    time.sleep(1)
                disk_format = nc.disk_format  # (nc_inq_format_extended's)
                t = np.asarray(nc["t"][:], np.float64)
                h = np.asarray(nc["h"][:], np.float64)
                r, q = (np.asarray(nc[name][:RECORDS], np.int32) for name in ("r", "q"))
            fill = np.full_like(value, netCDF4.default_fillvals["f8"])
            fill[0] = value[0]
            qfill = np.full((RECORDS, nx), netCDF4.default_fillvals["i4"], np.int32)
            rfill = qfill.copy()
            rfill[RECORD] = nval(np.arange(nx))
            bad += sum(int(np.count_nonzero(a != b)) for a, b in ((t, value), (h, fill), (r, rfill), (q, qfill)))
            if dump:
                dump.write(disk_format.encode().ljust(16, b"\0") + b"".join(a.tobytes() for a in (t, h, r, q)))
    if dump:
        dump.close()
    bad = comm.allreduce(bad, op=MPI.SUM)
    if role == "reader" and rank == 0:
        print(f"ncpair reader: {bad} wrong values" if bad else "ncpair reader: all values verified", flush=True)
    return 1 if bad else 0


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    role, folder, fmt, access = sys.argv[1:5]
    ny, nx, nrec = (int(a) for a in sys.argv[5:8]) if len(sys.argv) > 7 else (7, 9, 3)
    if access == "serial":
        return serial(comm, role, folder, fmt, ny, nx)
    path = os.path.join(folder, "front.nc")
    collective = access == "collective"
    if role == "writer":
        time.sleep(float(os.environ.get("NCPAIR_DELAY", "0")))
        y0, ly = block(ny, size, rank)
        y, x = np.meshgrid(np.arange(y0, y0 + ly), np.arange(nx), indexing="ij")
        with netCDF4.Dataset(path, "w", parallel=True, comm=comm, format=FORMATS[fmt][0]) as nc:
            nc.title = TITLE
            nc.createDimension("time", None)
            nc.createDimension("y", ny)
            nc.createDimension("x", nx)
            t = nc.createVariable("t", "f8", ("y", "x"))
            t.units = UNITS
            t.setncattr("scale", SCALE)  # ('scale' is a reserved Python attribute of a Variable)
            rec = nc.createVariable("rec", "f4", ("time", "y", "x"))
            n = nc.createVariable("n", "i4", ("x",))
            for v in (t, rec, n):
                v.set_collective(collective)
            for r in range(nrec):
                rec[r, y0:y0 + ly, :] = rval(r, y, x)
            t[y0:y0 + ly, :] = tval(y, x)
            x0, lx = block(nx, size, rank)  # (each rank a block of n: another way than ncpair.c's)
            n[x0:x0 + lx] = 7 * np.arange(x0, x0 + lx) - 3
        return 0

    if not os.path.exists(path):  # (a restart check: the file exists for the reader before its writer's create)
        print(f"ncpair reader rank {rank}: {path} does not exist", flush=True)
        comm.Abort(3)
    dump = open(f"{os.environ['NCPAIR_DUMP']}.{rank}", "wb") if os.environ.get("NCPAIR_DUMP") else None
    x0, lx = block(nx, size, rank)
    y, x = np.meshgrid(np.arange(ny), np.arange(x0, x0 + lx), indexing="ij")
    bad = 0
    with netCDF4.Dataset(path, "r", parallel=True, comm=comm) as nc:
        nc.set_auto_mask(False)
        dims, variables = list(nc.dimensions), list(nc.variables)
        fmt_code = {name: code for name, code in FORMATS.values()}.get(nc.data_model, -1)
        nrecs = len(nc.dimensions["time"])
        head = np.array([fmt_code, len(dims), len(variables), len(nc.ncattrs()), dims.index("time"), nrecs], np.int32)
        bad += fmt_code != FORMATS[fmt][1] or list(head[1:5]) != [3, 3, 1, 0] or nrecs != nrec
        bad += len(nc.dimensions["y"]) != ny or len(nc.dimensions["x"]) != nx
        title, units = nc.title, nc["t"].units
        scale = np.asarray(nc["t"].getncattr("scale"), np.float64)
        bad += title != TITLE or units != UNITS or not np.array_equal(scale, SCALE)
        for v in nc.variables.values():
            v.set_collective(collective)
        t = np.asarray(nc["t"][:, x0:x0 + lx], np.float64)
        bad += int(np.count_nonzero(t != tval(y, x)))
        recs = [np.asarray(nc["rec"][r, :, x0:x0 + lx], np.float32) for r in range(nrec)]
        bad += sum(int(np.count_nonzero(recs[r] != rval(r, y, x))) for r in range(nrec))
        n = np.asarray(nc["n"][:], np.int32)
        bad += int(np.count_nonzero(n != 7 * np.arange(nx) - 3))
    if dump:
        dump.write(head.tobytes() + title.encode().ljust(64, b"\0") + units.encode().ljust(8, b"\0") +
                   scale.tobytes() + t.tobytes() + b"".join(r.tobytes() for r in recs) + n.tobytes())
        dump.close()
    bad = comm.allreduce(bad, op=MPI.SUM)
    if rank == 0:
        print(f"ncpair reader: {bad} wrong values" if bad else "ncpair reader: all values verified", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
