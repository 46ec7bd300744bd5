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
