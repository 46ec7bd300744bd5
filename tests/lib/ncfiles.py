"""Comparing netCDF files byte for byte, as the tests of persist=1 need: the header and every
variable's bytes (every record) must be equal; the alignment padding between variables may differ,
since PnetCDF 1.12.3 writes it from uninitialized memory when it fills variables (NC_FILL): two
file-mode runs of the same program differ there too. Files that differ only there must also satisfy
ncmpidiff (files equal byte for byte do)."""
import os
import re
import subprocess


def _ranges(path):
    """[(start, end)] of the header and of each variable's bytes (each record), from ncoffsets -r."""
    out = subprocess.run(["ncoffsets", "-r", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         check=True).stdout
    header = int(re.search(r"size\s*=\s*(\d+) bytes", out).group(1))
    starts = [int(x) for x in re.findall(r"start file offset =\s*(\d+)", out)]
    ends = [int(x) for x in re.findall(r"end\s+file offset =\s*(\d+)", out)]
    return [(0, header)] + list(zip(starts, ends))


def compare(a, b):
    """None when the files hold the same header and values byte for byte (padding aside), else why not."""
    da, db = open(a, "rb").read(), open(b, "rb").read()
    if da == db:
        return None
    if len(da) != len(db):
        return f"{os.path.basename(b)}: {len(db)} bytes, {os.path.basename(a)}: {len(da)}"
    for start, end in _ranges(a):
        if da[start:end] != db[start:end]:
            at = next(i for i in range(start, end) if da[i] != db[i])
            return f"{os.path.basename(b)}: byte {at} (in [{start}, {end})) differs"
    diff = subprocess.run(["ncmpidiff", a, b], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if diff.returncode != 0:
        return f"{os.path.basename(b)}: ncmpidiff: {diff.stdout[-2000:]}"
    return None


# The default fill value of each external type, big-endian as in the file (PnetCDF's NC_FILL_*).
_DEFAULT_FILL = {"byte": b"\x81", "char": b"\x00", "short": b"\x80\x01", "int": b"\x80\x00\x00\x01",
                 "float": b"\x7c\xf0\x00\x00", "double": b"\x47\x9e\x00\x00\x00\x00\x00\x00",
                 "ubyte": b"\xff", "ushort": b"\xff\xff", "uint": b"\xff\xff\xff\xff",
                 "int64": b"\x80\x00\x00\x00\x00\x00\x00\x02", "uint64": b"\xff\xff\xff\xff\xff\xff\xff\xfe"}


def _typed_ranges(path):
    """[(start, end, type)] of each variable's bytes (each record), from ncoffsets -r."""
    out = subprocess.run(["ncoffsets", "-r", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         check=True).stdout
    found = re.findall(r"^\s*(\w+)\s+\w+(?:\([^)]*\))?(?:\[\d+\])?:\s*\n\s*start file offset =\s*(\d+)\s*\n"
                       r"\s*end\s+file offset =\s*(\d+)", out, re.M)
    return [(int(s), int(e), t) for t, s, e in found]


def compare_subfiles(oracle, parts):
    """subfiles=1: None when the subfiles `parts` (in group order) read back as the file `oracle`: each has
    its header, and each element is the one of the last subfile that wrote it (holds neither zero bytes,
    an unwritten element of a new file, nor the type's default fill value), else why not. Elements a
    program writes with exactly those values where another group wrote something else are not told apart
    (the tests' values are not such)."""
    want = open(oracle, "rb").read()
    datas = [open(p, "rb").read() for p in parts]
    header = _ranges(oracle)[0][1]
    for p, d in zip(parts, datas):
        if d[:header] != want[:header]:
            return f"{os.path.basename(p)}: the header differs from {os.path.basename(oracle)}'s"
    ranges = _typed_ranges(oracle)
    if len(ranges) != len(_ranges(oracle)) - 1:
        return f"{os.path.basename(oracle)}: ncoffsets output not understood"
    for start, end, typ in ranges:
        size = len(_DEFAULT_FILL[typ])
        unwritten = (bytes(size), _DEFAULT_FILL[typ])
        for at in range(start, end, size):
            values = [d[at:at + size] if len(d) >= at + size else bytes(size) for d in datas]
            written = [v for v in values if v not in unwritten]
            got = written[-1] if written else values[0]
            if got != want[at:at + size]:
                return f"{os.path.basename(oracle)}: element at byte {at} ({typ}) read back from the subfiles " \
                       f"is {got.hex()}, the file holds {want[at:at + size].hex()}"
    return None
