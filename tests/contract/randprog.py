#!/usr/bin/env python3
"""Random writer programs for the differential test (differential.py), run by ncwriter.c.

usage: randprog.py SEED CASE RANKS [--avoid F,...]    prints the program of one case
       randprog.py --features                          lists the features --avoid can leave out

A program is deterministic in (seed, case, ranks, avoid). One operation a line (the interpreter
numbers the lines from 1, and every put's values say which line and rank wrote them):

  case K                          the file is case.K.nc
  create cdf1|cdf2|cdf5           NC_CLOBBER | the format (ncwriter.c gives ROMIO hints: see there)
  set_fill fill|nofill            def_dim NAME LEN|unlim          def_var NAME TYPE D1,D2|-
  put_att VAR|global NAME TYPE V1,V2 (TYPE char: the text, '_' for a space)
  del_att VAR|global NAME         rename_att VAR|global OLD NEW   rename_var OLD NEW   rename_dim OLD NEW
  def_var_fill VAR nofill|fill [VALUE]
  enddef  redef  begin_indep  end_indep  flush  barrier  buffer_attach BYTES  buffer_detach  close
  put_all|put|iput|bput VAR API MEM R=REGION...
      ncmpi_{put_<api>_<mem>_all, put_<api>_<mem>, iput_..., bput_...} by the listed ranks (put_all: the
      others take part with an empty vara); API var (REGION *), var1 (START), vara (START/COUNT), vars
      (START/COUNT/STRIDE), comma-separated, '.' for a scalar's; MEM a memory type, flex:MEM for the
      flexible API (an MPI vector type over every second element of the buffer)
  wait_all [ids]                  collective: NC_REQ_ALL, or the list of the rank's pending ids
  wait R1,R2                      independent ncmpi_wait by those ranks of all their pending requests
  fill_var_rec VAR REC
  records                         every rank writes the record count it sees (ncmpi_inq_dimlen) into its dump

What the generator keeps defined (PnetCDF leaves the rest undefined, so there is no oracle for it): a
phase ends at each collective call of the file (a collective put, wait_all, end_indep, fill_var_rec,
flush, enddef, redef), which the program follows with an MPI_Barrier (`barrier`: a rank may return from
a collective write before another rank's part is in the file). Two ranks write the same element only in
different phases (a nonblocking request writes in the phase of the wait that completes it); the
requests of one wait_all do not overlap; a rank's pending request does not overlap a later write of that
rank before its wait, nor a fill_var_rec. Everything else is allowed: overlapping writes of any ranks
across phases, a rank's blocking puts over its own earlier writes in program order.

PnetCDF's own rules it keeps (the oracle must succeed on every call; found by running it):
_FillValue and def_var_fill only on variables defined since the last enddef (else NC_ELATEFILL, also for
a variable never written); fill_var_rec only on record variables whose fill mode is on (NC_ENOTRECVAR,
NC_ENOTFILL; set_fill in redef turns every variable's mode); wait_all only in collective and wait only in
independent data mode (NC_EINDEP, NC_ENOTINDEP); CDF-5 types only in CDF-5 files; blocking vars with
stride 1 along the record dimension (PnetCDF 1.12.3 ignores a larger one there: tests/transfer/prop.py);
no collective put of a scalar variable (an empty part of a scalar is its element); no put_var of a record
variable (its extent depends on each rank's record count); every request completed before redef and
close. And the program writes the file's last element if nothing else did (write_last_element): a
nonblocking get of a variable that ends beyond the end of the file returns garbage in PnetCDF 1.12.3;
and a variable added by a redef after data was written is in fill mode: in NC_NOFILL mode its unwritten
elements hold what the file held there before PnetCDF moved its sections at that enddef.
"""
import argparse
import itertools
import random
import sys

# feature -> what leaving it out (--avoid) removes from the programs
FEATURES = {
    "overlap": "writes of several ranks to the same elements (in different phases)",
    "rewrite": "a rank writing elements again that it wrote before",
    "redef": "redef after data was written, new dims/vars/atts, changed attributes, more writes after",
    "rename": "rename_var, rename_att, rename_dim and del_att in redef",
    "growth": "attributes that outgrow the header's extent in redef (PnetCDF moves the data)",
    "fill": "set_fill, def_var_fill, _FillValue, fill_var_rec",
    "skip-records": "writes to records beyond the next one (records left unwritten)",
    "indep": "independent puts and waits (begin_indep_data ... end_indep_data)",
    "nonblocking": "iput + wait_all/wait",
    "bput": "bput with buffer_attach/detach",
    "flexible": "the flexible API (MPI derived datatypes)",
    "convert": "memory types other than the variable's own",
    "strided": "put_vars with strides > 1",
    "formats": "CDF-1 and CDF-2 files (without: CDF-5 only)",
    "records": "the unlimited dimension and record variables",
    "scalar": "0-D variables",
    "flush": "ncmpi_flush",
    "count": "every rank asking for the record count after a collective call (`records`)",
}

CDF2_TYPES = ["byte", "char", "short", "int", "float", "double"]
CDF5_TYPES = CDF2_TYPES + ["ubyte", "ushort", "uint", "int64", "uint64"]
# the largest value ncwriter.c's value() gives a variable of each type
MAXVAL = {"byte": 126, "ubyte": 254, "short": 32000, "ushort": 65000}
BIG = 10 ** 7
MEMMAX = {"schar": 127, "uchar": 255, "short": 32767, "ushort": 65535, "int": 2 ** 31 - 1, "uint": 2 ** 32 - 1,
          "long": 2 ** 63 - 1, "float": 2 ** 24, "double": 2 ** 53, "longlong": 2 ** 63 - 1, "ulonglong": 2 ** 64 - 1}
NATURAL = {"byte": "schar", "char": "text", "short": "short", "int": "int", "float": "float", "double": "double",
           "ubyte": "uchar", "ushort": "ushort", "uint": "uint", "int64": "longlong", "uint64": "ulonglong"}
FILLS = {"byte": [-3, -100], "char": [], "short": [-30, -7], "int": [-300, -70000], "float": [-3.5, 1.25],
         "double": [-30.25, 2.5], "ubyte": [250, 200], "ushort": [65500, 65001], "uint": [4000000000, 12345678],
         "int64": [-3000000000, -1], "uint64": [10 ** 12, 20000000]}
RECORDS = 4  # record indices a program writes: 0 .. RECORDS-1


class Var:
    def __init__(self, vid, name, xtype, dims, nofill):
        self.id, self.name, self.type, self.dims, self.nofill = vid, name, xtype, dims, nofill
        self.atts = []


class Gen:
    def __init__(self, seed, case, ranks, avoid):
        self.rng = random.Random(f"{seed}:{case}:{ranks}")
        self.count_rng = random.Random(f"{seed}:{case}:{ranks}:count")  # (the programs' other choices unchanged)
        self.case, self.ranks, self.avoid = case, ranks, set(avoid)
        self.lines = [f"case {case}"]
        self.dims = []          # [name, length or None (unlimited)]
        self.vars = []
        self.gatts = []
        self.fill = False       # the file's fill mode
        self.mode = "define"
        self.pending = {r: [] for r in range(ranks)}  # rank -> [(line, var id, elements, buffer order)]
        self.phase = {r: set() for r in range(ranks)}  # elements each rank wrote in the current phase
        self.touched = {}       # element -> ranks that wrote (or posted a write of) it
        self.final = {}         # element -> (line of the write, 'put' rank index | 'fill')
        self.numrecs = 0
        self.names = itertools.count()
        self.bput = False

    def on(self, feature):
        return feature not in self.avoid

    def emit(self, text):
        self.lines.append(text)
        return len(self.lines)  # the line number ncwriter gives it

    def chance(self, p):
        return self.rng.random() < p

    # ---- definitions -------------------------------------------------------------------------------

    def types(self):
        return CDF5_TYPES if self.format == "cdf5" else CDF2_TYPES

    def att_value(self, xtype, n=None):
        n = n or self.rng.randint(1, 3)
        if xtype == "char":
            return self.rng.choice(["m/s", "K", "hello_world", "a_b_c", "x"])
        lo = 0 if xtype.startswith("u") else -5
        vals = [self.rng.randint(lo, 99) for _ in range(n)]
        if xtype in ("float", "double"):
            return ",".join(f"{v}.5" for v in vals)
        return ",".join(map(str, vals))

    def put_att(self, owner, name=None, xtype=None, text=None):
        owner_name = "global" if owner is None else owner.name
        xtype = xtype or self.rng.choice(self.types())
        atts = self.gatts if owner is None else owner.atts
        if name is None:
            name = f"{'g' if owner is None else 'a'}{next(self.names)}"
        if name not in atts:
            atts.append(name)
        self.emit(f"put_att {owner_name} {name} {xtype} {text or self.att_value(xtype)}")

    def def_dim(self, unlimited=False):
        name = "t" if unlimited else f"d{next(self.names)}"
        length = None if unlimited else self.rng.randint(1, 5)
        self.dims.append([name, length])
        self.emit(f"def_dim {name} {'unlim' if unlimited else length}")

    def def_var(self):
        xtype = self.rng.choice(self.types())
        fixed = [i for i, d in enumerate(self.dims) if d[1] is not None]
        unlim = [i for i, d in enumerate(self.dims) if d[1] is None]
        ndims = self.rng.randint(0 if self.on("scalar") else 1, 3)
        dims = []
        if unlim and ndims and self.chance(0.5):
            dims.append(unlim[0])
        dims += self.rng.sample(fixed, min(len(fixed), ndims - len(dims)))
        if not dims and not self.on("scalar"):
            dims = [self.rng.choice(fixed or unlim)]
        v = Var(len(self.vars), f"v{next(self.names)}", xtype, dims, not self.fill)
        self.vars.append(v)
        self.emit(f"def_var {v.name} {xtype} {','.join(self.dims[d][0] for d in dims) or '-'}")
        for _ in range(self.rng.randint(0, 2)):
            self.put_att(v)
        if self.on("fill") and self.chance(0.4):
            self.fill_setting(v)
        return v

    def fill_setting(self, v):
        """def_var_fill or a _FillValue attribute on a variable defined since the last enddef."""
        choice = self.rng.choice(["nofill", "fill", "value", "att"] if FILLS[v.type] else ["nofill", "fill"])
        if choice == "att":
            self.put_att(v, "_FillValue", v.type, str(self.rng.choice(FILLS[v.type])))
            return
        v.nofill = choice == "nofill"
        value = f" {self.rng.choice(FILLS[v.type])}" if choice == "value" else ""
        self.emit(f"def_var_fill {v.name} {'nofill' if v.nofill else 'fill'}{value}")

    def set_fill(self):
        self.fill = self.chance(0.6)
        for v in self.vars:  # set_fill sets every variable's fill mode
            v.nofill = not self.fill
        self.emit(f"set_fill {'fill' if self.fill else 'nofill'}")

    def enddef(self):
        self.emit("enddef")
        self.mode = "coll"
        self.boundary()

    # ---- phases and element bookkeeping ------------------------------------------------------------

    def boundary(self, barrier=True):
        for r in self.phase:
            self.phase[r] = set()
        if barrier:
            self.emit("barrier")
        if (self.on("count") and self.mode != "define" and any(d[1] is None for d in self.dims)
                and self.count_rng.random() < 0.5):
            self.emit("records")

    def record(self, line, rank, vid, order):
        """A write completes: its elements' last writer (for NCW_INJECT) and the phase's writes."""
        for idx, e in enumerate(order):
            self.final[(vid,) + e] = (line, rank, idx)
            self.phase[rank].add((vid,) + e)

    def allowed(self, rank, vid, elements, blocking, taken=()):
        """Whether `rank` may write `elements` of variable `vid` now (the rules in the docstring)."""
        keys = {(vid,) + e for e in elements}
        if keys & set(taken):
            return False
        for r, reqs in self.pending.items():
            if (r == rank or not blocking) and any(keys & req[2] for req in reqs):
                return False
        for r in range(self.ranks):
            if r != rank and keys & self.phase[r]:
                return False
        for k in keys:
            others = self.touched.get(k, set())
            if (not self.on("overlap") and others - {rank}) or (not self.on("rewrite") and rank in others):
                return False
        return True

    def touch(self, rank, vid, elements):
        for e in elements:
            self.touched.setdefault((vid,) + e, set()).add(rank)
        recs = [e[0] for e in elements if self.is_record(self.vars[vid])]
        if recs:
            self.numrecs = max(self.numrecs, max(recs) + 1)

    def is_record(self, v):
        return bool(v.dims) and self.dims[v.dims[0]][1] is None

    # ---- writes ------------------------------------------------------------------------------------

    def region(self, v, api, blocking):
        """(REGION text, elements in buffer order) of a random region of v for api."""
        shape = []
        for d in v.dims:
            length = self.dims[d][1]
            if length is None:
                length = RECORDS if self.on("skip-records") else min(RECORDS, self.numrecs + 1)
            shape.append(length)
        if api == "var":
            return "*", list(itertools.product(*[range(n) for n in shape]))
        if api == "var1":
            start = [self.rng.randrange(n) for n in shape]
            return ",".join(map(str, start)) or ".", [tuple(start)]
        start, count, stride = [], [], []
        for i, n in enumerate(shape):
            s = 1
            if api == "vars" and self.on("strided") and not (blocking and i == 0 and self.is_record(v)):
                s = self.rng.randint(1, 3)
            st = self.rng.randrange(n)
            start.append(st)
            stride.append(s)
            count.append(self.rng.randint(1, 1 + (n - 1 - st) // s))
        order = list(itertools.product(*[range(st, st + c * s, s) for st, c, s in zip(start, count, stride)]))
        text = f"{','.join(map(str, start)) or '.'}/{','.join(map(str, count)) or '.'}"
        if api == "vars":
            text += f"/{','.join(map(str, stride)) or '.'}"
        return text, order

    def memtype(self, v):
        natural = NATURAL[v.type]
        if v.type == "char" or not self.on("convert") or self.chance(0.6):
            m = natural
        else:
            need = MAXVAL.get(v.type, BIG)
            m = self.rng.choice([m for m, top in MEMMAX.items() if top >= need])
        return f"flex:{m}" if self.on("flexible") and self.chance(0.25) else m

    def apis(self, v, kind):
        if not v.dims:
            return ["var1", "var"]
        out = ["vara", "vara", "var1", "vars"]
        if kind != "put_all" and not self.is_record(v):
            out.append("var")
        return out

    def put(self, kind, candidates):
        """One put op of `kind` by the ranks in `candidates`, each with a region the rules allow."""
        vs = [v for v in self.vars if v.dims or kind != "put_all"]
        if not vs:
            return False
        v = self.rng.choice(vs)
        api = self.rng.choice(self.apis(v, kind))
        blocking = kind in ("put_all", "put")
        parts, taken = [], set()
        for r in candidates:
            for _ in range(6):
                text, order = self.region(v, api, blocking)
                if self.allowed(r, v.id, order, blocking, taken):
                    parts.append((r, text, order))
                    taken |= {(v.id,) + e for e in order}
                    break
        if not parts:
            return False
        line = self.emit(f"{kind} {v.name} {api} {self.memtype(v)} " + " ".join(f"{r}={t}" for r, t, _ in parts))
        for r, _, order in parts:
            self.touch(r, v.id, order)
            if blocking:
                self.record(line, r, v.id, order)
            else:
                self.pending[r].append((line, v.id, {(v.id,) + e for e in order}, order))
        if kind == "put_all":
            self.boundary()
        return True

    def complete(self, line, rank):
        for pline, vid, _, order in self.pending[rank]:
            self.record(pline, rank, vid, order)  # the values are the post line's; written at `line`
        self.pending[rank] = []

    def wait_all(self):
        line = self.emit("wait_all ids" if self.chance(0.3) else "wait_all")
        for r in range(self.ranks):
            self.complete(line, r)
        self.boundary()

    def fill_var_rec(self):
        vs = [v for v in self.vars if self.is_record(v) and not v.nofill]
        if not vs:
            return False
        v = self.rng.choice(vs)
        rec = self.rng.randrange(RECORDS if self.on("skip-records") else min(RECORDS, self.numrecs + 1))
        shape = [self.dims[d][1] for d in v.dims[1:]]
        elements = [(rec,) + e for e in itertools.product(*[range(n) for n in shape])]
        keys = {(v.id,) + e for e in elements}
        if any(keys & req[2] for reqs in self.pending.values() for req in reqs):
            return False
        line = self.emit(f"fill_var_rec {v.name} {rec}")
        for k in keys:
            self.final[k] = (line, None, None)
        self.numrecs = max(self.numrecs, rec + 1)
        self.boundary()
        return True

    def kinds(self):
        return (["put"] + (["iput"] if self.on("nonblocking") else []) +
                (["bput"] if self.bput else []))

    def independent(self):
        self.emit("begin_indep")
        self.mode = "indep"
        for _ in range(self.rng.randint(1, 4)):
            ranks = self.rng.sample(range(self.ranks), self.rng.randint(1, self.ranks))
            if self.chance(0.35) and any(self.pending[r] for r in ranks):
                # a rank's wait writes its requests in this phase: not over other ranks' writes of it
                ok = [r for r in ranks if self.pending[r] and all(
                    not (req[2] & self.phase[o]) for req in self.pending[r] for o in range(self.ranks) if o != r)]
                if ok:
                    line = self.emit(f"wait {','.join(map(str, sorted(ok)))}")
                    for r in ok:
                        self.complete(line, r)
            else:
                self.put(self.rng.choice(self.kinds()), ranks)
        self.emit("end_indep")
        self.mode = "coll"
        self.boundary()

    def redefine(self):
        if any(self.pending.values()):
            self.wait_all()
        self.emit("redef")
        self.mode = "define"
        self.boundary()
        before = len(self.vars)
        for _ in range(self.rng.randint(1, 4)):
            what = self.rng.choice(["dim", "var", "var", "att", "att"] +
                                   (["rename", "rename"] if self.on("rename") else []) +
                                   (["set_fill"] if self.on("fill") else []) +
                                   (["growth"] if self.on("growth") else []))
            if what == "dim":
                self.def_dim()
            elif what == "var":
                self.def_var()
            elif what == "att":
                owners = [None] + self.vars
                owner = self.rng.choice(owners)
                atts = [a for a in (self.gatts if owner is None else owner.atts) if a != "_FillValue"]
                self.put_att(owner, self.rng.choice(atts) if atts and self.chance(0.6) else None)
            elif what == "set_fill":
                self.set_fill()
            elif what == "growth":
                self.put_att(None, None, "char", "h" * self.rng.randint(200, 600))
            else:
                self.rename()
        # A variable added after data was written is filled: without, its unwritten elements hold
        # whatever the file held there before PnetCDF moved its sections (old record bytes).
        for v in self.vars[before:]:
            if v.nofill:
                v.nofill = False
                self.emit(f"def_var_fill {v.name} fill")
        self.enddef()

    def rename(self):
        kind = self.rng.choice(["var", "att", "del", "dim"])
        if kind == "var" and self.vars:
            v = self.rng.choice(self.vars)
            old, v.name = v.name, f"{v.name}r"
            self.emit(f"rename_var {old} {v.name}")
        elif kind == "dim":
            d = self.rng.choice(self.dims)
            old, d[0] = d[0], f"{d[0]}r"
            self.emit(f"rename_dim {old} {d[0]}")
        else:
            owners = [o for o in [None] + self.vars
                      if [a for a in (self.gatts if o is None else o.atts) if a != "_FillValue"]]
            if not owners:
                return
            o = self.rng.choice(owners)
            atts = self.gatts if o is None else o.atts
            a = self.rng.choice([a for a in atts if a != "_FillValue"])
            owner = "global" if o is None else o.name
            if kind == "del":
                atts.remove(a)
                self.emit(f"del_att {owner} {a}")
            else:
                atts[atts.index(a)] = f"{a}r"
                self.emit(f"rename_att {owner} {a} {a}r")

    # ---- the program -------------------------------------------------------------------------------

    def program(self):
        self.format = self.rng.choice(["cdf1", "cdf2", "cdf5", "cdf5"]) if self.on("formats") else "cdf5"
        self.emit(f"create {self.format}")
        if self.on("fill") and self.chance(0.4):
            self.set_fill()
        if self.on("records") and self.chance(0.7):
            self.def_dim(unlimited=True)
        for _ in range(self.rng.randint(1, 3)):
            self.def_dim()
        for _ in range(self.rng.randint(0, 2)):
            self.put_att(None)
        for _ in range(self.rng.randint(1, 4)):
            self.def_var()
        self.enddef()
        self.bput = self.on("bput") and self.chance(0.4)
        if self.bput:
            self.emit("buffer_attach 65536")
        blocks = ["put_all"] * 4 + (["indep"] * 2 if self.on("indep") else []) + \
                 (["iput", "iput", "wait_all"] if self.on("nonblocking") else []) + \
                 (["bput", "bput", "wait_all"] if self.bput else []) + \
                 (["fill_var_rec"] * 2 if self.on("fill") else []) + \
                 (["flush"] if self.on("flush") else []) + (["redef"] if self.on("redef") else [])
        for _ in range(self.rng.randint(5, 12)):
            b = self.rng.choice(blocks)
            everyone = list(range(self.ranks))
            if b == "put_all":
                k = self.rng.randint(1, self.ranks)
                self.put("put_all", self.rng.sample(everyone, k))
            elif b in ("iput", "bput"):
                self.put(b, self.rng.sample(everyone, self.rng.randint(1, self.ranks)))
            elif b == "wait_all":
                self.wait_all()
            elif b == "indep":
                self.independent()
            elif b == "fill_var_rec":
                self.fill_var_rec()
            elif b == "flush":
                self.emit("flush")
                self.boundary()
            elif b == "redef":
                self.redefine()
        if any(self.pending.values()):
            self.wait_all()
        self.write_last_element()
        if self.bput:
            self.emit("buffer_detach")
        self.emit("close")
        return "\n".join(self.lines) + "\n"

    def write_last_element(self):
        """Writes the file's last element if nothing did, so that no variable ends beyond the end of the
        file: PnetCDF 1.12.3's nonblocking gets of elements there return garbage (blocking ones leave the
        reader's buffer alone), so the reader's -a nb would have no oracle."""
        recs = [v for v in self.vars if self.is_record(v)]
        fixed = [v for v in self.vars if not self.is_record(v)]
        v = recs[-1] if recs and self.numrecs else fixed[-1] if fixed else None
        if v is None:
            return
        e = tuple(self.numrecs - 1 if self.dims[d][1] is None else self.dims[d][1] - 1 for d in v.dims)
        if (v.id,) + e in self.final:
            return
        self.emit("begin_indep")
        rank = self.rng.randrange(self.ranks)
        line = self.emit(f"put {v.name} var1 {NATURAL[v.type]} {rank}={','.join(map(str, e)) or '.'}")
        self.touch(rank, v.id, [e])
        self.record(line, rank, v.id, [e])
        self.emit("end_indep")
        self.boundary()

    def inject_target(self):
        """NCW_INJECT's K:N:R:I: an element whose value in the file comes from a put (no later write)."""
        puts = sorted((line, rank, idx) for line, rank, idx in self.final.values() if rank is not None)
        if not puts:
            return None
        line, rank, idx = puts[len(puts) // 2]
        return f"{self.case}:{line}:{rank}:{idx}"


def generate(seed, case, ranks, avoid=()):
    """(program text, NCW_INJECT target or None) of one case."""
    g = Gen(seed, case, ranks, avoid)
    text = g.program()
    return text, g.inject_target()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("seed", nargs="?")
    p.add_argument("case", nargs="?", type=int)
    p.add_argument("ranks", nargs="?", type=int)
    p.add_argument("--avoid", default="", help="comma-separated features to leave out (--features lists them)")
    p.add_argument("--features", action="store_true")
    args = p.parse_args()
    if args.features:
        for name, what in FEATURES.items():
            print(f"{name:14} {what}")
        return
    if args.ranks is None:
        p.error("SEED CASE RANKS needed")
    avoid = [a for a in args.avoid.split(",") if a]
    unknown = set(avoid) - set(FEATURES)
    if unknown:
        p.error(f"unknown features: {', '.join(sorted(unknown))}")
    sys.stdout.write(generate(args.seed, args.case, args.ranks, avoid)[0])


if __name__ == "__main__":
    main()
