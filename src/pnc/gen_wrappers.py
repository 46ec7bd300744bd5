#!/usr/bin/env python3
"""Generate dtf's ncmpi_* wrappers from the installed pnetcdf.h.

    gen_wrappers.py --header /usr/include/pnetcdf.h --outdir build/src/pnc

Writes into --outdir:
  pnc_ids.h       enum dtf_pnc_fn { DTF_FN_ncmpi_create, ..., DTF_FN_COUNT_ }
  pnc_info.h      struct dtf_pnc_info (what a data function does, where its arguments are) + lookups
  pnc_table.c     names, dlsym(RTLD_NEXT) cache (dtf_pnc_real), the info table, dtf code names
  pnc_wrappers.c  one exported definition per ncmpi_* prototype, each a one-line hook + forward

Every prototype must parse; anything unexpected (a parameter without a name, varargs, a return
type other than int / const char *, a data function whose parameters are not where the naming
scheme says) stops the build with a message naming the prototype.
"""
import argparse
import os
import re
import sys

# Functions whose first parameter is a path: dispatched with DTF_PNC_HOOK_PATH.
PATH_FUNCS = {"ncmpi_create", "ncmpi_open", "ncmpi_delete", "ncmpi_inq_file_format"}
# Functions that know dtf's error codes before forwarding.
ERRTEXT_FUNCS = {"ncmpi_strerror", "ncmpi_strerrno"}

# Typed-API name suffix -> (nc_type of the memory buffer, MPI datatype). Same mapping as PnetCDF.
MEMTYPES = {
    "text": ("NC_CHAR", "MPI_CHAR"),
    "schar": ("NC_BYTE", "MPI_SIGNED_CHAR"),
    "uchar": ("NC_UBYTE", "MPI_UNSIGNED_CHAR"),
    "short": ("NC_SHORT", "MPI_SHORT"),
    "ushort": ("NC_USHORT", "MPI_UNSIGNED_SHORT"),
    "int": ("NC_INT", "MPI_INT"),
    "uint": ("NC_UINT", "MPI_UNSIGNED"),
    "long": ("(sizeof(long) == 8 ? NC_INT64 : NC_INT)", "MPI_LONG"),
    "float": ("NC_FLOAT", "MPI_FLOAT"),
    "double": ("NC_DOUBLE", "MPI_DOUBLE"),
    "longlong": ("NC_INT64", "MPI_LONG_LONG"),
    "ulonglong": ("NC_UINT64", "MPI_UNSIGNED_LONG_LONG"),
}
# ncmpi_<op>_<kind>[_<type>][_all]
DATA_RE = re.compile(r"^ncmpi_(put|get|iput|iget|bput|mput|mget)_(var|var1|vara|vars|varm|varn|vard)"
                     r"(?:_(" + "|".join(MEMTYPES) + r"))?(_all)?$")
# Per kind, the parameters (by name) that must be present besides varid.
KIND_PARAMS = {
    "var": [], "var1": ["start"], "vara": ["start", "count"], "vars": ["start", "count", "stride"],
    "varm": ["start", "count", "stride", "imap"], "varn": ["num", "starts", "counts"], "vard": ["filetype"],
}
# mput/mget spell the per-variable arrays in the plural.
MULTI_NAMES = {"varid": "varids", "start": "starts", "count": "counts", "stride": "strides", "imap": "imaps",
               "bufcount": "bufcounts", "buftype": "datatypes"}
# Index fields of struct dtf_pnc_info and the parameter names that fill them.
INDEX_FIELDS = [
    ("varid", ["varid", "varids"]), ("start", ["start", "starts"]), ("count", ["count", "counts"]),
    ("stride", ["stride", "strides"]), ("imap", ["imap", "imaps"]), ("buf", ["op", "ip", "buf", "bufs"]),
    ("bufcount", ["bufcount", "bufcounts"]), ("buftype", ["buftype", "datatypes"]), ("req", ["req"]),
    ("num", ["num"]), ("filetype", ["filetype"]),
]
# Words that can only be part of a type: a parameter "name" among them means the name is missing.
TYPE_WORDS = {"const", "volatile", "signed", "unsigned", "char", "short", "int", "long", "float", "double",
              "void", "MPI_Offset", "MPI_Comm", "MPI_Info", "MPI_Datatype", "MPI_Fint", "nc_type"}


def die(msg):
    sys.exit("gen_wrappers.py: error: " + msg)


class Param:
    def __init__(self, text, proto):
        m = re.fullmatch(r"(?P<type>[A-Za-z_][\w\s\*]*?[\s\*])(?P<name>[A-Za-z_]\w*)\s*(?P<arr>(?:\[\s*\w*\s*\]\s*)*)",
                         text)
        if not m or m.group("name") in TYPE_WORDS:
            die("cannot parse parameter '%s' of prototype:\n  %s" % (text, proto))
        self.name = m.group("name")
        self.type = " ".join(m.group("type").split())
        self.arr = "".join(m.group("arr").split())
        self.decl = (self.type + ("" if self.type.endswith("*") else " ") + self.name + self.arr)


class Func:
    def __init__(self, ret, name, params, proto):
        self.ret, self.name, self.params, self.proto = ret, name, params, proto
        self.idx = {p.name: i for i, p in enumerate(params)}
        names = [p.name for p in params]
        # ncid-like parameters: plain ints named ncid, ncid_in, ncid_out ...
        self.ncids = [p.name for p in params if p.type == "int" and not p.arr and re.fullmatch(r"ncid\w*", p.name)]
        if ret not in ("int", "const char *", "char *"):
            die("unsupported return type '%s' in prototype:\n  %s" % (ret, proto))
        if len(set(names)) != len(names):
            die("duplicate parameter names in prototype:\n  %s" % proto)
        if name in PATH_FUNCS:
            self.cls = "path"
            if ret != "int" or not any(p.type == "const char *" for p in params):
                die("path function without a const char * parameter:\n  %s" % proto)
        elif name in ERRTEXT_FUNCS:
            self.cls = "errtext"
        elif self.ncids and params[0].name == self.ncids[0]:
            self.cls = "ncid"
            if ret != "int":
                die("ncid function not returning int:\n  %s" % proto)
        else:
            self.cls = "other"
        self.info = self.classify_data()

    def classify_data(self):
        m = DATA_RE.match(self.name)
        if not m:
            return None
        op, kind, mem, coll = m.groups()
        multi = op in ("mput", "mget")
        flexible = mem is None
        need = ["varid"] + KIND_PARAMS[kind] + (["bufcount", "buftype"] if flexible else [])
        if multi:
            need = ["num"] + [MULTI_NAMES.get(n, n) for n in need]
        if op in ("iput", "iget", "bput"):
            need.append("req")
        if self.cls != "ncid" or any(n not in self.idx for n in need):
            die("data function does not have the parameters %s its name implies:\n  %s" % (need, self.proto))
        info = {
            "kind": "DTF_PNC_KIND_" + kind.upper(),
            "dir": "DTF_PNC_DIR_PUT" if "put" in op else "DTF_PNC_DIR_GET",
            "mode": ("DTF_PNC_MODE_COLL" if coll else "DTF_PNC_MODE_NB" if op in ("iput", "iget")
                     else "DTF_PNC_MODE_BPUT" if op == "bput" else "DTF_PNC_MODE_INDEP"),
            "multi": int(multi), "flexible": int(flexible),
            "memtype": MEMTYPES[mem][0] if mem else "NC_NAT",
            "mpitype": MEMTYPES[mem][1] if mem else "MPI_DATATYPE_NULL",
        }
        for field, pnames in INDEX_FIELDS:
            found = [self.idx[n] for n in pnames if n in self.idx]
            if len(found) > 1:
                die("ambiguous '%s' parameter in prototype:\n  %s" % (field, self.proto))
            info[field] = found[0] if found else -1
        if info["buf"] < 0:
            die("data function without a buffer parameter:\n  %s" % self.proto)
        return info


def strip_comments(text):
    # Keep newlines so that line-based preprocessor handling below still works.
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_header(path):
    text = strip_comments(open(path).read())
    # Blank out preprocessor lines (with continuations), remembering the #if depth of every line.
    lines, depth, depths, cont = text.split("\n"), 0, [], False
    for i, line in enumerate(lines):
        directive = cont or line.lstrip().startswith("#")
        if directive and not cont:
            d = line.strip()[1:].strip()
            if re.match(r"if(n?def)?\b", d):
                depth += 1
            elif d.startswith("endif"):
                depth -= 1
        cont = directive and line.rstrip().endswith("\\")
        if directive:
            lines[i] = ""
        depths.append(depth)
    text = "\n".join(lines)
    line_of = lambda pos: text.count("\n", 0, pos)

    funcs, seen, proto_depth = [], set(), None
    for m in re.finditer(r"\bncmpi_\w+\s*\(", text):
        # The declaration runs from the end of the previous statement to the next ';'.
        start = max(text.rfind(c, 0, m.start()) for c in ";{}") + 1
        end = text.find(";", m.end())
        proto = " ".join(text[start:end + 1].split())
        d = re.fullmatch(r"(?:extern\s+)?(?P<ret>[A-Za-z_][\w\s\*]*?)\s*\b(?P<name>ncmpi_\w+)\s*\((?P<args>[^()]*)\)\s*;",
                         proto)
        if not d:
            die("cannot parse prototype (or a non-prototype use of an ncmpi_ name):\n  %s" % proto)
        depth = depths[line_of(m.start())]
        if proto_depth is None:
            proto_depth = depth
        elif depth != proto_depth:
            die("prototype inside a preprocessor conditional, cannot tell whether it applies:\n  %s" % proto)
        name = d.group("name")
        if name in seen:
            die("%s is declared twice" % name)
        seen.add(name)
        ret = re.sub(r"\s*\*", " *", " ".join(d.group("ret").split()))
        args = d.group("args").strip()
        if "..." in args:
            die("varargs prototype:\n  %s" % proto)
        params = [] if args in ("", "void") else [Param(a.strip(), proto) for a in args.split(",")]
        funcs.append(Func(ret, name, params, proto))
    if not funcs:
        die("no ncmpi_ prototypes found in %s" % path)
    return funcs


def arglist(f):
    return "(" + ", ".join(p.name for p in f.params) + ")"


def wrapper(f):
    sig = "%s%s%s(%s)" % (f.ret, "" if f.ret.endswith("*") else " ", f.name,
                          ", ".join(p.decl for p in f.params) or "void")
    fid = "DTF_FN_" + f.name
    ptrs = ", ".join("(void *)&" + p.name for p in f.params)
    fwd = "DTF_PNC_FORWARD_%s_(%s, %s);" % ("INT" if f.ret == "int" else "STR", f.name, arglist(f))
    if f.cls == "path":
        body = "DTF_PNC_HOOK_PATH(%s, %s); %s" % (fid, ptrs, fwd)
    elif f.cls == "ncid":
        # Several ncids (ncmpi_copy_att: ncid_in, ncid_out): hook on whichever one dtf owns.
        key = f.ncids[-1]
        for n in reversed(f.ncids[:-1]):
            key = "dtf_pnc_owns(%s) ? %s : (%s)" % (n, n, key)
        body = "DTF_PNC_HOOK_NCID(%s, %s, %s); %s" % (fid, key, ptrs, fwd)
    elif f.name == "ncmpi_strerror":
        body = "if (DTF_PNC_IS_DTF_CODE_(err)) return dtf_strerror(err); " + fwd
    elif f.name == "ncmpi_strerrno":
        body = "if (DTF_PNC_IS_DTF_CODE_(err)) return dtf_pnc_errname(err); " + fwd
    else:
        body = fwd
    return "DTF_PNC_API_ %s { %s }\n" % (sig, body)


def write(outdir, name, text):
    path = os.path.join(outdir, name)
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--header", required=True, help="the installed pnetcdf.h")
    ap.add_argument("--outdir", required=True)
    a = ap.parse_args()
    funcs = parse_header(a.header)
    for need in sorted(PATH_FUNCS | ERRTEXT_FUNCS):
        if need not in {f.name for f in funcs}:
            die("%s not found in %s" % (need, a.header))
    os.makedirs(a.outdir, exist_ok=True)
    banner = "/* Generated by src/pnc/gen_wrappers.py from %s. Do not edit. */\n" % a.header

    write(a.outdir, "pnc_ids.h", banner + "#ifndef DTF_PNC_IDS_H\n#define DTF_PNC_IDS_H\n\n"
          "/* One id per ncmpi_* function declared in pnetcdf.h, in header order. */\nenum dtf_pnc_fn {\n"
          + "".join("    DTF_FN_%s,\n" % f.name for f in funcs) + "    DTF_FN_COUNT_\n};\n\n#endif\n")

    write(a.outdir, "pnc_info.h", banner + INFO_H)

    none = "{DTF_PNC_KIND_NONE, DTF_PNC_DIR_NONE, DTF_PNC_MODE_NONE, 0, 0, NC_NAT, MPI_DATATYPE_NULL, %s}"
    rows = []
    for f in funcs:
        i = f.info
        if i is None:  # not a data function: only varid, when there is one
            idx = ", ".join(str(f.idx.get("varid", -1) if fld == "varid" else -1) for fld, _ in INDEX_FIELDS)
            rows.append("    /* %s */ %s,\n" % (f.name, none % idx))
        else:
            vals = [i[k] for k in ("kind", "dir", "mode", "multi", "flexible", "memtype", "mpitype")]
            vals += [i[fld] for fld, _ in INDEX_FIELDS]
            rows.append("    /* %s */ {%s},\n" % (f.name, ", ".join(str(v) for v in vals)))
    write(a.outdir, "pnc_table.c", banner + TABLE_C.replace("@NAMES@", "".join(
        '    "%s",\n' % f.name for f in funcs)).replace("@INFO@", "".join(rows)))

    write(a.outdir, "pnc_wrappers.c", banner + WRAPPERS_C + "".join(wrapper(f) for f in funcs))

    count = lambda c: sum(1 for f in funcs if f.cls == c)
    data = [f for f in funcs if f.info]
    print("gen_wrappers.py: %d ncmpi_* wrappers: %d path, %d ncid (%d of them data functions: %d typed, "
          "%d flexible, %d mput/mget), %d other, %d error-text"
          % (len(funcs), count("path"), count("ncid"), len(data), sum(1 for f in data if not f.info["flexible"]),
             sum(1 for f in data if f.info["flexible"]), sum(1 for f in data if f.info["multi"]),
             count("other"), count("errtext")))


INFO_H = r"""#ifndef DTF_PNC_INFO_H
#define DTF_PNC_INFO_H

#include <mpi.h>
#include <pnetcdf.h>

#ifdef __cplusplus
extern "C" {
#endif

enum dtf_pnc_kind {
    DTF_PNC_KIND_NONE, /* not a data function */
    DTF_PNC_KIND_VAR,  /* whole variable */
    DTF_PNC_KIND_VAR1, /* one element: start */
    DTF_PNC_KIND_VARA, /* subarray: start, count */
    DTF_PNC_KIND_VARS, /* strided: start, count, stride */
    DTF_PNC_KIND_VARM, /* mapped: start, count, stride, imap */
    DTF_PNC_KIND_VARN, /* num subarrays: starts[num][ndims], counts[num][ndims] */
    DTF_PNC_KIND_VARD  /* file layout given by an MPI datatype: filetype */
};
enum dtf_pnc_dir { DTF_PNC_DIR_NONE, DTF_PNC_DIR_PUT, DTF_PNC_DIR_GET };
enum dtf_pnc_mode {
    DTF_PNC_MODE_NONE,
    DTF_PNC_MODE_COLL,  /* blocking collective (_all) */
    DTF_PNC_MODE_INDEP, /* blocking independent (between begin/end_indep_data) */
    DTF_PNC_MODE_NB,    /* nonblocking iput/iget: *req, completed by ncmpi_wait(_all) */
    DTF_PNC_MODE_BPUT   /* buffered nonblocking put (ncmpi_buffer_attach) */
};

/* What a function does and where its arguments are. Indices are positions in the parameter list,
 * i.e. in the args array of the dispatch hooks (args[0] points to ncid); -1 when absent.
 * multi (ncmpi_mput_* / ncmpi_mget_*): num variables at once; varid is then the index of varids[],
 * start/count/stride/imap of the arrays of per-variable arrays, buf of bufs[], and for the flexible
 * ones bufcount/buftype of the bufcounts[] / datatypes[] arrays.
 * varn: start/count are the index of starts/counts (num arrays each). */
struct dtf_pnc_info {
    unsigned char kind;   /* enum dtf_pnc_kind */
    unsigned char dir;    /* enum dtf_pnc_dir */
    unsigned char mode;   /* enum dtf_pnc_mode */
    unsigned char multi;  /* 1 for mput/mget */
    unsigned char flexible; /* 1: buffer described by (bufcount, buftype); 0: typed by the name */
    nc_type memtype;      /* typed: C type of buf as nc_type (text: NC_CHAR; long: by sizeof(long)); else NC_NAT */
    MPI_Datatype mpitype; /* typed: the matching MPI datatype; else MPI_DATATYPE_NULL */
    signed char varid, start, count, stride, imap, buf, bufcount, buftype, req, num, filetype;
};

/* Info of function `fn` (enum dtf_pnc_fn); NULL when out of range. Every function has an entry;
 * non-data functions have kind NONE and only varid set (when they take one). */
const struct dtf_pnc_info *dtf_pnc_info(int fn);

/* Name of a DTF_ERR_* code ("DTF_ERR_TIMEOUT"), or NULL (used by the ncmpi_strerrno wrapper). */
const char *dtf_pnc_errname(int code);

#ifdef __cplusplus
}
#endif

#endif
"""

TABLE_C = r"""#include <dlfcn.h>
#include <stddef.h>

#include "dtf.h"
#include "pnc/hook.h"
#include "pnc_info.h"

static const char *const names_[DTF_FN_COUNT_] = {
@NAMES@};

/* Real functions, resolved on first use. Written once (racing threads store the same value). */
void *dtf_pnc_real_cache_[DTF_FN_COUNT_];

const char *dtf_pnc_name(int fn) { return fn >= 0 && fn < DTF_FN_COUNT_ ? names_[fn] : NULL; }

void *dtf_pnc_real(int fn) {
    if (fn < 0 || fn >= DTF_FN_COUNT_) return NULL;
    void *p = __atomic_load_n(&dtf_pnc_real_cache_[fn], __ATOMIC_ACQUIRE);
    if (DTF_PNC_LIKELY_(p != NULL)) return p;
    /* RTLD_NEXT: the next definition after libdtf in the lookup order, i.e. libpnetcdf's. A failure
     * is not cached: a library loaded later may still provide it. */
    p = dlsym(RTLD_NEXT, names_[fn]);
    if (p) __atomic_store_n(&dtf_pnc_real_cache_[fn], p, __ATOMIC_RELEASE);
    return p;
}

static const struct dtf_pnc_info info_[DTF_FN_COUNT_] = {
/* kind, dir, mode, multi, flexible, memtype, mpitype,
 * varid, start, count, stride, imap, buf, bufcount, buftype, req, num, filetype */
@INFO@};

const struct dtf_pnc_info *dtf_pnc_info(int fn) { return fn >= 0 && fn < DTF_FN_COUNT_ ? &info_[fn] : NULL; }

const char *dtf_pnc_errname(int code) {
    switch (code) {
#define DTF_PNC_ERRNAME_(name, value, message) case value: return #name;
        DTF_ERROR_TABLE(DTF_PNC_ERRNAME_)
#undef DTF_PNC_ERRNAME_
    }
    return NULL;
}
"""

WRAPPERS_C = r"""/* Every wrapper is one line: the hook (dispatch to the runtime when dtf may own the call; see
 * pnc/hook.h), then a tail call of the real function, typed from its prototype in pnetcdf.h. */
#include <pnetcdf.h>
#include <stddef.h>

#include "dtf.h"
/* Internal declarations are hidden, so the fast path uses direct, PC-relative accesses. */
#pragma GCC visibility push(hidden)
#include "pnc/hook.h"
#include "pnc_info.h"
extern void *dtf_pnc_real_cache_[DTF_FN_COUNT_];
#pragma GCC visibility pop

#define DTF_PNC_API_ __attribute__((visibility("default")))

/* The real function f: read from the cache inline, resolved by dtf_pnc_real on first use. */
static inline void *dtf_pnc_real_fast_(int fn) {
    void *p = __atomic_load_n(&dtf_pnc_real_cache_[fn], __ATOMIC_ACQUIRE);
    return DTF_PNC_LIKELY_(p != NULL) ? p : dtf_pnc_real(fn);
}
#define DTF_PNC_REAL_(f) ((__typeof__(&f))dtf_pnc_real_fast_(DTF_FN_##f))
/* return f(args), or an error when the real PnetCDF function cannot be found. */
#define DTF_PNC_FORWARD_INT_(f, args)                                                              \
    do {                                                                                           \
        __typeof__(&f) dtf_f_ = DTF_PNC_REAL_(f);                                                  \
        return DTF_PNC_LIKELY_(dtf_f_ != NULL) ? dtf_f_ args : NC_ENOTBUILT;                       \
    } while (0)
#define DTF_PNC_FORWARD_STR_(f, args)                                                              \
    do {                                                                                           \
        __typeof__(&f) dtf_f_ = DTF_PNC_REAL_(f);                                                  \
        return DTF_PNC_LIKELY_(dtf_f_ != NULL) ? dtf_f_ args : "dtf: PnetCDF library not found";  \
    } while (0)
#define DTF_PNC_IS_DTF_CODE_(err) ((err) <= DTF_ERR_ARG && (err) >= DTF_ERR_LAST_)

"""

if __name__ == "__main__":
    main()
