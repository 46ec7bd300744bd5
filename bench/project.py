#!/usr/bin/env python3
"""dtf's messages, bytes and matching time per process at the seeds' scale, from a model of its protocol.

usage: bench/project.py [--members 10] [--procs 320,640,1280,2560,5120] [--grid 2560 2560 36]
                        [--planning OUT/planning.csv] [--validate OUT | --measure BUILD_DIR]

The model counts, file by file, the messages that bench/letkf_io's LETKF pattern makes dtf send in one
cycle (the rules of docs/ARCHITECTURE.md, "Transfer mode"), for M members of P model ranks (a px x py
grid each, the most square) and M x P assimilation ranks (qx x qy, the most square with qx <= qy, as
letkf_io splits them), each rank's block of one member's global grid as letkf_io cuts it. Per file of a
cycle (a member's history and analysis, model -> assimilation; its written-back analysis, the
reverse):

  transfer-replay, a cycle that replays the plan of its very path (every cycle after the second):
    data: one message per (writer, reader) pair whose blocks meet (the same pairs as raw MPI), with
          the writers' 16-byte verdict at the end of those of at most 64 KiB;
    per reader rank, with its own writer rank: of the writers of its data (in rank order), the one the
          path's hash picks (leader_of, the same FNV-1a as dtf's; the writer leader if it gets no
          data): a FileDefined from it, a ReaderDone to it, and a HeaderFinal from it if none of the
          reader rank's messages carries the verdict.
  transfer, every cycle matched (also the first cycle of replay, which records the plans):
    FileDefined from the writer's rank 0 to every rank of the reader component; ReaderOpened from the
    reader leader to every writer rank; write metadata from every writer rank to its matcher (one per
    MAX_WORKGROUP_SIZE=64 writer ranks); HeaderFinal from rank 0 to every reader rank; per reader and
    matcher a ReadRequest, a ReadPlan and a ReaderDone; per request an order to each writer rank of
    the matcher's group whose block meets it; the data; the matcher's finish to each rank of its
    group.

Counts are those of dtf_counters_read: point-to-point messages, each counted at both ends, a rank's
messages to itself included. dtf's collectives (point-to-point messages on a kept communicator's
collective tag, which dtf_counters_read counts apart, as DTF_COUNT_COLLECTIVE_*) are counted apart: per replayed file a
writer rank takes part in 3 allreduces (the numrecs agreement at dtf_transfer, the close's "written
since", the epoch's end; wait_all's record count comes from the plan, which was replayed before; 3 in a
matched session too: wait_all's, dtf_transfer's and the close's, whose epoch ends with the matcher's
finish) and a reader rank in none (its open waits for its own FileDefined; with replay_io=0 a barrier
at the close), each over the file's ranks if it has several; the model counts 2 log2(g) messages for
the busiest rank of an allreduce over g ranks (every rank's in recursive doubling, the root's in the
binomial reduce and broadcast dtf uses beyond 4 ranks). Bytes: the
data, the verdicts, and the control messages at their mean size measured (replay: about 110 bytes;
transfer: the mean of the growth sweep's transfer runs, headers, requests and plans included).
Matching (transfer only, the first cycle; later cycles reuse the last session's result, or replay
the plan): each matcher's writes + reads + pieces times the time per unit of plan_bench's largest
"blocks" case.

--validate OUT checks the model against a growth sweep's measured counts (bench/letkf.py BUILD --sweep
growth --out OUT: the same pattern at 1 to 16 members, one rank per member): messages of all ranks
and of the busiest rank, per cycle, each mode; it exits 1 if a count differs by more than 2% and more
than 2 messages (a message sent while a cycle's counters are read counts in the next cycle).
--measure BUILD_DIR runs that sweep first, to 8 members (--sweep growth-small, into BUILD_DIR/project-check;
ctest bench.project.model; bench.growth.counts runs 16).
docs/PERFORMANCE.md, "The seeds' scale, projected", shows the projection (bench/report.py).
"""
import argparse
import csv
import math
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# bench/letkf_io.c: the variables each file has, the reads per rank, and the floats per column read.
WRITES = {"hist": 89, "anal": 143, "back": 11}       # put calls per writer rank and file
READS = {"hist": 20, "anal": 11, "back": 11}          # get calls per reader rank and file
COLUMN = {"hist": (13, 7), "anal": (8, 3), "back": (8, 3)}  # (3-D, 2-D) variables read
VERDICT_MAX = 64 * 1024   # kVerdictMax (src/session/session.hpp)
VERDICT_BYTES = 16        # kVerdictBytes
WORKGROUP = 64            # MAX_WORKGROUP_SIZE's default
REPLAY_CONTROL_BYTES = 110  # mean size of a replayed cycle's FileDefined / ReaderDone / HeaderFinal
MATCH_UNIT_S = 0.11e-6    # match() per write + read + piece when no planning.csv is given


def fnv1a(s):
    h = 1469598103934665603
    for c in s.encode():
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def leader_of(path, size):
    return fnv1a(path) % size


def split(n, parts, i):
    """letkf_io's split(): part i of parts of 0 .. n-1 as (start, count)."""
    return n * i // parts, n * (i + 1) // parts - n * i // parts


def squarest(a):
    """letkf_io's assimilation grid: qx x qy = a, the most square with qx <= qy."""
    q = 1
    while (q + 1) * (q + 1) <= a:
        q += 1
    while a % q:
        q -= 1
    return q, a // q


def overlaps(n, p, q):
    """{(i, j): length} of the parts i of p and j of q of 0 .. n-1 that meet."""
    out, j = {}, 0
    for i in range(p):
        s, c = split(n, p, i)
        while j < q and sum(split(n, q, j)) <= s:
            j += 1
        k = j
        while k < q:
            t, d = split(n, q, k)
            lo, hi = max(s, t), min(s + c, t + d)
            if lo >= hi:
                break
            out[(i, k)] = hi - lo
            k += 1
    return out


class Pattern:
    """letkf_io's decomposition: M members of px x py model ranks on an nx x ny grid of nz levels, and
    M px py assimilation ranks; pairs[(model rank in member, assim rank)] = columns they share."""

    def __init__(self, members, px, py, nx, ny, nz):
        self.M, self.px, self.py, self.nz = members, px, py, nz
        self.P = px * py
        self.A = members * self.P
        self.qx, self.qy = squarest(self.A)
        ox, oy = overlaps(nx, px, self.qx), overlaps(ny, py, self.qy)
        self.pairs = {}
        for (ix, jx), lx in ox.items():
            for (iy, jy), ly in oy.items():
                self.pairs[(iy * px + ix, jy * self.qx + jx)] = lx * ly

    def column_bytes(self, kind):
        three, two = COLUMN[kind]
        return 4 * (three * self.nz + two)


class Counts:
    """Per-rank counters of one cycle: control and data messages (each at both ends), bytes, collective
    messages, matching seconds; ranks named (component, rank)."""

    def __init__(self, pattern):
        size = {"model": pattern.M * pattern.P, "assim": pattern.A}
        self.ctl = {c: [0] * n for c, n in size.items()}
        self.data = {c: [0] * n for c, n in size.items()}
        self.bytes = {c: [0] * n for c, n in size.items()}
        self.coll = {c: [0] * n for c, n in size.items()}
        self.match = {c: [0.0] * n for c, n in size.items()}

    def send(self, a, b, nbytes, data=False, times=1):
        counter = self.data if data else self.ctl
        for (c, r) in (a, b):
            counter[c][r] += times
            self.bytes[c][r] += nbytes * times

    def summary(self):
        """(messages of all ranks, of the busiest rank, bytes of all ranks, collective messages of the
        busiest rank, matching seconds of the busiest rank), messages and bytes at both ends."""
        ranks = [(c, r) for c in self.ctl for r in range(len(self.ctl[c]))]
        per = [self.ctl[c][r] + self.data[c][r] for c, r in ranks]
        return (sum(per), max(per), sum(self.bytes[c][r] for c, r in ranks),
                max(self.coll[c][r] for c, r in ranks), max(self.match[c][r] for c, r in ranks))


def allreduce_msgs(g):
    return 2 * math.ceil(math.log2(g)) if g > 1 else 0


def collectives(n, writers, readers, writer_allreduces, reader_close=True):
    """The messages of a file's collectives (dtf's own): the writer ranks' allreduces and, with
    replay_io=0, the reader ranks' barrier at the close (their open makes none)."""
    for c, r in writers:
        n.coll[c][r] += writer_allreduces * allreduce_msgs(len(writers))
    if reader_close:
        for c, r in readers:
            n.coll[c][r] += allreduce_msgs(len(readers))


def files(p, directory, suffix):
    """The files of a cycle: (path, kind, writer group, reader group, reader component size, member),
    groups as lists of (component, rank) in the file communicator's order."""
    out = []
    assim = [("assim", a) for a in range(p.A)]
    for m in range(p.M):
        member = [("model", m * p.P + r) for r in range(p.P)]
        for kind in ("hist", "anal", "back"):
            path = f"{directory}/{kind}.m{m}.{suffix}.nc"
            if kind == "back":
                out.append((path, kind, assim, member, p.M * p.P, m))
            else:
                out.append((path, kind, member, assim, p.A, m))
    return out


def file_pairs(p, kind):
    """{(writer index in its group, reader index in its group): bytes} of a member's file (every
    member's are alike)."""
    col = p.column_bytes(kind)
    if kind == "back":
        return {(a, r): n * col for (r, a), n in p.pairs.items()}
    return {(r, a): n * col for (r, a), n in p.pairs.items()}


def replay_cycle(p, directory):
    n = Counts(p)
    for path, kind, writers, readers, _, _ in files(p, directory, "r"):
        wl = writers[leader_of(path, len(writers))]
        verdict = {}
        fed_by = {}
        for (w, r), nbytes in sorted(file_pairs(p, kind).items()):
            carries = nbytes <= VERDICT_MAX
            n.send(writers[w], readers[r], nbytes + (VERDICT_BYTES if carries else 0), data=True)
            verdict[r] = verdict.get(r, False) or carries
            fed_by.setdefault(r, []).append(w)
        for r in range(len(readers)):
            own = writers[fed_by[r][leader_of(path, len(fed_by[r]))]] if r in fed_by else wl
            n.send(own, readers[r], REPLAY_CONTROL_BYTES)  # FileDefined
            n.send(readers[r], own, REPLAY_CONTROL_BYTES)  # ReaderDone
            if not verdict.get(r):  # HeaderFinal
                n.send(own, readers[r], REPLAY_CONTROL_BYTES)
        collectives(n, writers, readers, 3, reader_close=False)
    return n


def transfer_cycle(p, directory, control_bytes, match_unit):
    """A cycle matched from scratch; control messages at control_bytes each."""
    n = Counts(p)
    for path, kind, writers, readers, component, _ in files(p, directory, "t"):
        root, rl = writers[0], readers[leader_of(path, len(readers))]
        reader_comp = readers[0][0]
        for r in range(component):  # FileDefined to every rank of the reader component
            n.send(root, (reader_comp, r), control_bytes)
        matchers = list(range(0, len(writers), WORKGROUP))
        pairs = file_pairs(p, kind)
        meets = {}  # reader -> writers whose blocks meet its own
        for (w, r), nbytes in pairs.items():
            meets.setdefault(r, []).append(w)
            n.send(writers[w], readers[r], nbytes, data=True)
        for w in range(len(writers)):
            n.send(rl, writers[w], control_bytes)                            # ReaderOpened
            n.send(writers[w], writers[w - w % WORKGROUP], control_bytes)    # write metadata
            n.send(writers[w - w % WORKGROUP], writers[w], control_bytes)    # finish
        for r in range(len(readers)):
            n.send(root, readers[r], control_bytes)                          # HeaderFinal
            for mt in matchers:
                n.send(readers[r], writers[mt], control_bytes, times=3)      # ReadRequest, ReadPlan, ReaderDone
                orders = sum(1 for w in meets.get(r, []) if mt <= w < mt + WORKGROUP)
                for w in meets.get(r, []):
                    if mt <= w < mt + WORKGROUP:
                        n.send(writers[mt], writers[w], control_bytes)      # order
                # match(): the group's writes, this reader's reads, a piece per read and writer met
                c, rank = writers[mt]
                n.match[c][rank] += match_unit * READS[kind] * (1 + orders)
        for mt in matchers:
            c, rank = writers[mt]
            n.match[c][rank] += match_unit * WRITES[kind] * len(writers[mt:mt + WORKGROUP])
        collectives(n, writers, readers, 3)
    return n


def raw_cycle(p):
    n = Counts(p)
    for _, kind, writers, readers, _, _ in files(p, ".", "f"):
        for (w, r), nbytes in file_pairs(p, kind).items():
            n.send(writers[w], readers[r], nbytes, data=True)
    return n


def match_unit(planning):
    """Seconds of match() per write + read + piece: plan_bench's largest "blocks" case."""
    if not planning or not os.path.exists(planning):
        return MATCH_UNIT_S
    with open(planning) as f:
        rows = [r for r in csv.DictReader(f) if r["case"] == "blocks"]
    r = max(rows, key=lambda r: int(r["writes"]))
    return float(r["match_s"]) / (int(r["writes"]) + int(r["reads"]) + int(r["pieces"]))


def measured_growth(out):
    """{(members, mode): (messages, busiest, bytes, control messages of all ranks, directory)} of a
    growth sweep, medians per cycle."""
    sys.path.insert(0, HERE)
    import plot  # noqa: E402  (bench/plot.py: the same figures as the report)
    samples, meta = plot.load(out)
    result = {}
    for run in plot.runs(samples, meta, "growth"):
        info = next(r for r in meta["runs"] if r["label"] == "growth" and r["members"] == run.members)
        args = shlex.split(info["command"])
        directory = args[args.index("--dir") + 1]
        for mode in ("transfer", "transfer-replay", "mpi-raw"):
            m = plot.messages(samples, run, mode)
            if m:
                result[(run.members, run.imax, run.jmax, run.kmax, mode)] = m + (directory,)
    return result


def transfer_control_bytes(measured):
    """The mean size of a control message in the growth sweep's transfer runs (its largest)."""
    best = max((k for k in measured if k[4] == "transfer"), key=lambda k: k[0], default=None)
    if best is None:
        return 400
    members, nx, ny, nz, _ = best
    p = Pattern(members, 1, 1, nx, ny, nz)
    model = transfer_cycle(p, measured[best][3], 1, 0)
    raw = raw_cycle(p)
    ctl_ends = model.summary()[0] - raw.summary()[0]
    return max(1, round((measured[best][2] - raw.summary()[2]) / ctl_ends))


def validate(measured):
    """Rows (members, mode, model, measured) and the failures (more than 2 messages and 2% apart)."""
    rows, failures = [], []
    ctl_bytes = transfer_control_bytes(measured)
    for key in sorted(measured):
        members, nx, ny, nz, mode = key
        p = Pattern(members, 1, 1, nx, ny, nz)
        directory = measured[key][3]
        n = {"transfer": lambda: transfer_cycle(p, directory, ctl_bytes, 0),
             "transfer-replay": lambda: replay_cycle(p, directory), "mpi-raw": lambda: raw_cycle(p)}[mode]()
        s = n.summary()
        got = measured[key][:2]
        rows.append((members, mode, s[:2], got))
        for what, a, b in (("messages", s[0], got[0]), ("busiest rank's messages", s[1], got[1])):
            if abs(a - b) > max(2, 0.02 * b):  # (a message sent as a cycle's counters are read counts in the next)
                failures.append(f"{members} members, {mode}: {what} {a} in the model, {b:g} measured")
    return rows, failures


def squarest_model(P):
    """The model's px x py for P ranks per member: the most square, px >= py."""
    py, px = squarest(P)
    return px, py


def projection(members, procs, grid, unit, ctl_bytes):
    """Rows per process count: (N, mode, messages per process (mean, busiest), bytes per process (mean,
    busiest), collective messages of the busiest rank, matching s of the busiest rank)."""
    rows = []
    for n in procs:
        px, py = squarest_model(n // members)
        p = Pattern(members, px, py, *grid)
        for mode, counts in (("transfer", transfer_cycle(p, "/run/files", ctl_bytes, unit)),
                             ("transfer-replay", replay_cycle(p, "/run/files")), ("mpi-raw", raw_cycle(p))):
            ranks = [(c, r) for c in counts.ctl for r in range(len(counts.ctl[c]))]
            msgs = [counts.ctl[c][r] + counts.data[c][r] for c, r in ranks]
            nbytes = [counts.bytes[c][r] for c, r in ranks]
            ctl = [counts.ctl[c][r] for c, r in ranks]
            rows.append({"procs": n, "px": px, "py": py, "qx": p.qx, "qy": p.qy, "mode": mode,
                         "mean": statistics.mean(msgs), "busiest": max(msgs), "control_busiest": max(ctl),
                         "bytes_mean": statistics.mean(nbytes), "bytes_busiest": max(nbytes),
                         "collective": max(counts.coll[c][r] for c, r in ranks),
                         "match_s": max(counts.match[c][r] for c, r in ranks)})
    return rows


def main():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--members", type=int, default=10)
    a.add_argument("--procs", default="320,640,1280,2560,5120",
                   help="processes per component (the model's ranks over all members; as many assimilation ranks)")
    a.add_argument("--grid", type=int, nargs=3, default=(2560, 2560, 36), metavar=("NX", "NY", "NZ"),
                   help="one member's global grid")
    a.add_argument("--planning", help="plan_bench's CSV (OUT/planning.csv) for the matching time")
    a.add_argument("--validate", metavar="OUT", help="a growth sweep's output (bench/letkf.py --sweep growth)")
    a.add_argument("--measure", metavar="BUILD_DIR", help="run the growth sweep with this build, then --validate it")
    args = a.parse_args()
    if args.measure:
        args.validate = os.path.join(os.path.abspath(args.measure), "project-check")
        sweep = [sys.executable, os.path.join(HERE, "letkf.py"), args.measure, "--sweep", "growth-small", "--out",
                 args.validate]
        if subprocess.run(sweep).returncode != 0:
            sys.exit("project.py: the growth sweep failed")
        args.planning = args.planning or os.path.join(args.validate, "planning.csv")
    ctl_bytes = 400
    if args.validate:
        measured = measured_growth(args.validate)
        ctl_bytes = transfer_control_bytes(measured)
        rows, failures = validate(measured)
        print("members  mode              model (messages, busiest)  measured")
        for members, mode, model, got in rows:
            print(f"{members:7}  {mode:16}  {model[0]:>9} {model[1]:>8}        {got[0]:>9g} {got[1]:>8g}")
        for f in failures:
            print("FAIL: " + f)
        if failures:
            sys.exit(1)
        print(f"model agrees with the measured counts; control messages of transfer average {ctl_bytes} bytes")
    unit = match_unit(args.planning)
    procs = [int(x) for x in args.procs.split(",")]
    print(f"\n{args.members} members, grid {args.grid[0]}x{args.grid[1]}x{args.grid[2]} per member; per cycle:")
    print("procs  model ranks  assim    mode              msgs/proc  busiest  ctl busiest  MiB/proc  busiest  "
          "coll busiest  match s")
    for r in projection(args.members, procs, args.grid, unit, ctl_bytes):
        print(f"{r['procs']:5}  {r['px']:>4}x{r['py']:<4}   {r['qx']:>3}x{r['qy']:<3}  {r['mode']:16}  "
              f"{r['mean']:9.1f}  {r['busiest']:7}  {r['control_busiest']:11}  {r['bytes_mean'] / 2**20:8.1f}  "
              f"{r['bytes_busiest'] / 2**20:7.1f}  {r['collective']:12}  {r['match_s']:.4f}")


if __name__ == "__main__":
    main()
