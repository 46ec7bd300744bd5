#!/usr/bin/env python3
"""Aggregated output (GRAPES): write bandwidth of a model's history output with A aggregator ranks
writing for 8 compute ranks, against every rank writing, as one file or one subfile per aggregator,
each step's file written at once or four steps' files together (aggregate_steps=4); then the model's
visible output time with an I/O server (dtf-ioserver) against writing the files itself (file-sync),
and RMA pull against point-to-point for the server's data (bench/rma_pull, one launch).

usage: bench/aggregate.py BUILD_DIR [--reps N] [--md FILE] [--png-dir DIR] [--smoke]

Each configuration is one launch of bench/output_io (8 model ranks, 1 post rank that reads one value of
each file) with persist=1 in transfer mode, plus the same program in file mode (every rank through
PnetCDF's collective puts). The bandwidth is the values' bytes over the model's time from its first
create to its last close (every file written by then); the launches run round-robin, `reps` times,
and the table gives medians. --md replaces the "Aggregated output" section of FILE (appended if absent).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import mdsection
from runlog import failure_text

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 8

CONFIG = """[INFO]
ncomp={ncomp}
comp_name="model"
{more}"""
FILE = """[FILE]
filename="out.%.nc"
writer="model"
{readers}mode="{mode}"
{keys}"""

# (label, aggregators, subfiles, steps); aggregators None: file mode (PnetCDF itself, every rank).
WRITERS = [(RANKS, "every rank"), (4, "4 aggregators"), (2, "2 aggregators"), (1, "1 aggregator")]
LAYOUTS = [("one file", False, 1), ("subfiles", True, 1), ("one file, 4 steps", False, 4), ("subfiles, 4 steps", True, 4)]


def configurations(smoke):
    runs = [("file mode", None, False, 1)]
    for a, _ in WRITERS:
        for name, sub, k in LAYOUTS:
            runs.append((f"{a}/{name}", a, sub, k))
    if smoke:
        runs = [runs[0], runs[1], ("2/subfiles, 4 steps", 2, True, 4)]
    return runs


def keys(aggregators, subfiles, steps):
    if aggregators is None:
        return ""
    # every rank writing its own values into one file: aggregators=0 (no gathering)
    a = 0 if aggregators == RANKS and not subfiles else aggregators
    return f"persist=1\naggregators={a}\nsubfiles={int(subfiles)}\naggregate_steps={steps}\n"


def launch(build, work, label, mode, keys, size, files, io=0, sync=False, compute=0.0, post=True, mpmd=False,
           timeout=120):
    """One launch of output_io: the model, with a post rank reading each file (`post`) and an I/O server
    of `io` ranks, as separate jobs or in one launch (`mpmd`); the model computing `compute` s after
    each step's output; mode None: out.*.nc is in no [FILE] section (plain PnetCDF). (seconds, bytes, the
    model's visible output seconds, the model's writing seconds from dtf's stats or None, the command)."""
    d = tempfile.mkdtemp(dir=work)
    ini = os.path.join(d, "dtf.ini")
    names = ["post"] * post + ["io"] * bool(io)
    with open(ini, "w") as f:
        f.write(CONFIG.format(ncomp=1 + len(names), more="".join(f'comp_name="{n}"\n' for n in names)))
        if mode:
            f.write(FILE.format(readers='readers="post"\n' if post else "", mode=mode, keys=keys))
    exe = os.path.join(build, "bench", "output_io")
    argv = [ini, d] + [str(x) for x in size]
    cmd = [os.path.join(build, "bin", "dtfrun")] + ["--mpmd"] * mpmd + ["-c", ini, "--timeout", "60", "--walltime",
                                                                         str(timeout), "--name", "model", "-n", str(RANKS), exe, "model"] + argv
    if post:
        cmd += [":", "--name", "post", "-n", "1", exe, "post"] + argv
    if io:
        cmd += [":", "--name", "io", "-n", str(io), os.path.join(build, "bin", "dtf-ioserver"), "io"]
    env = dict(os.environ, DTF_PRINT_STATS="2", OUTPUT_IO_SYNC="1" if sync else "0", OUTPUT_IO_COMPUTE=str(compute))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout + 30, env=env)
    m = re.search(r"RESULT (\S+) (\S+) (\S+)", p.stdout)
    # dtf's own figure: the time the model's ranks spent writing the files (the slowest rank)
    w = re.search(r"\[dtf model\] stats .*files written \(persist=1\) from (\d+) bytes of values in (\S+) s", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit(f"aggregate.py: {label}: exit status {p.returncode}\n{' '.join(cmd)}\n{failure_text(p.stdout)}")
    written = sorted(f for f in os.listdir(d) if f.startswith("out."))
    if len(written) != files:
        sys.exit(f"aggregate.py: {label}: {len(written)} files written, expected {files}: {written[:8]}")
    shutil.rmtree(d)
    writing = float(w.group(2)) if w and mode == "transfer" and not io else None
    return (float(m.group(1)), float(m.group(2)), float(m.group(3)), writing,
            " ".join(cmd).replace(d, "RUN").replace(build, "BUILD"))


def run_one(build, work, run, size):
    label, aggregators, subfiles, steps = run
    files = size[0] * (max(1, min(aggregators, RANKS)) if subfiles else 1)
    return launch(build, work, label, "file" if aggregators is None else "transfer", keys(aggregators, subfiles, steps),
                  size, files)


# The I/O server against the model writing its output itself (no reader: CFIO2's offload): (label,
# keys of the file's section (None: the file is in none, plain PnetCDF), server ranks, sync, one launch).
# The model computes COMPUTE_S after each step's output (a sleep: on cores the writing does not need).
COMPUTE_S = 0.25
SERVED = 'persist=1\nioserver="io"\n'
IO_RUNS = [("the model writes, synced (file-sync)", None, 0, True, False),
           ("the model writes, not synced", None, 0, False, False),
           ("the model's ranks write after the hand-off (persist=1)", "persist=1\n", 0, False, False),
           ("an I/O server of 2 ranks writes (ioserver=), separate jobs", SERVED, 2, False, False),
           ("an I/O server of 2 ranks writes (ioserver=), one launch", SERVED, 2, False, True)]


def plot(results, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.2
    for i, (name, _, _) in enumerate(LAYOUTS):
        xs = [j + (i - 1.5) * width for j in range(len(WRITERS))]
        ys = [results.get(f"{a}/{name}", 0) for a, _ in WRITERS]
        ax.bar(xs, ys, width, label=name)
    if "file mode" in results:
        ax.axhline(results["file mode"], color="k", linestyle="--", linewidth=1, label="file mode (PnetCDF, every rank)")
    ax.set_xticks(range(len(WRITERS)))
    ax.set_xticklabels([w for _, w in WRITERS])
    ax.set_ylabel("write bandwidth, MB/s (median)")
    ax.set_title(f"Aggregated output: {RANKS} compute ranks, persist=1")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=100)


def verdict(results, written):
    """Which wins, from the figures of this run, and why (for this machine: one node, the page cache)."""
    names = dict(WRITERS)
    best = max((k for k in results if k != "file mode"), key=results.get)
    every = max(results[f"{RANKS}/{n}"] for n, _, _ in LAYOUTS)
    aggregated = max(results[f"{a}/{n}"] for a, _ in WRITERS if a != RANKS for n, _, _ in LAYOUTS)
    def ratio(x, y):  # median over the rows (writers) of layout x / layout y
        return statistics.median(results[f"{a}/{x}"] / results[f"{a}/{y}"] for a, _ in WRITERS)
    one, sub, one4, sub4 = (n for n, _, _ in LAYOUTS)
    subfiles = statistics.median([ratio(sub, one), ratio(sub4, one4)])
    steps = statistics.median([ratio(one4, one), ratio(sub4, sub)])
    a, layout = best.split("/", 1)
    out = [f"**Which wins here:** {names[int(a)]}, {layout} "
           f"({results[best]:.0f} MB/s). Every rank writing against the best with aggregators: "
           f"{every:.0f} / {aggregated:.0f} MB/s; subfiles against one file: {subfiles:.2f}x (median over the rows); "
           f"four steps written together against one: {steps:.2f}x."]
    if every >= aggregated:
        out.append("**Why:** on one node there is nothing for aggregation to win. The data is in the memory of "
                   "the node already, and gathering it on fewer ranks is one more copy of every byte through "
                   "shared memory (8 ranks on 2 cores), while the page cache takes writes from any number of "
                   "ranks at memory speed: no file-system locks for fewer writers to avoid, no storage targets "
                   "for subfiles to spread over, no per-operation latency for aggregated steps to amortize. " +
                   ("Subfiles still help: each aggregator writes its own file alone, without the collective "
                    "open, header and close of a shared file. " if subfiles > 1.05 else "") +
                   "GRAPES's gains (fewer writers, one subfile per "
                   "Lustre OST, k steps per write) come from a parallel file system, which this machine does "
                   "not have; rerun `bench/aggregate.py` there.")
    return " ".join(out[:1]) + ("\n\n" + out[1] if len(out) > 1 else "")


def rma_pull(build, smoke):
    """bench/rma_pull in one launch: {mode: (bytes per round, server ms, writers' ms)} and the command."""
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-n", str(RANKS + 2), os.path.join(build, "bench", "rma_pull"),
           "2", str(4096 if smoke else 4 << 20), "3" if smoke else "20"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, env=env)
    found = re.findall(r"RESULT (\w+) \d+ \d+ (\d+) (\S+) (\S+)", p.stdout)
    if p.returncode != 0 or len(found) != 2:
        sys.exit(f"aggregate.py: rma_pull: exit status {p.returncode}\n{' '.join(cmd)}\n{failure_text(p.stdout)}")
    return {m: (int(b), float(s) * 1e3, float(w) * 1e3) for m, b, s, w in found}, " ".join(cmd).replace(build, "BUILD")


def rma_section(rma, example):
    (nbytes, p2p_s, p2p_w), (_, rma_s, rma_w) = rma["p2p"], rma["rma"]
    return "\n".join([
        "### RMA pull against point-to-point", "",
        f"`bench/rma_pull` (one launch, {RANKS} writer ranks and 2 server ranks on this node's 2 cores): each writer "
        f"rank's {nbytes // RANKS >> 20} MiB (one step's output in the runs above) goes to its server rank as a message "
        "(what `dtf-ioserver` gets), or the server ranks pull it with `MPI_Get` from a window of the writers "
        "(CFIO2's RDMA read; the writers make no call). Median of 20 rounds, ms per round.", "",
        "| | server ranks have all the bytes | writers busy until their bytes are taken | MB/s (server) |",
        "|---|---|---|---|",
        f"| point-to-point | {p2p_s:.1f} | {p2p_w:.1f} | {nbytes / p2p_s / 1e3:.0f} |",
        f"| RMA pull | {rma_s:.1f} | {rma_w:.1f} | {nbytes / rma_s / 1e3:.0f} |", "",
        f"RMA pull / point-to-point, the server's time: {rma_s / p2p_s:.2f}x. The pull frees the writers "
        "(they need not be in an MPI call for their bytes to move) at the price of windows the server must know. "
        "dtf's I/O server takes messages: each large write's values are one message sent from dtf's copy, which "
        "in one launch Open MPI's shared-memory transport moves as one single-copy read by the receiving "
        "server rank, the writer not taking part either; a one-sided transport is not built (the data plane "
        "has none).", "", "```sh", example, "```"])


def io_section(steps_ms, example):
    """The model's visible output time with an I/O server against writing the files itself."""
    base = steps_ms[IO_RUNS[0][0]][0]
    compute_ms = COMPUTE_S * 1e3
    out = ["### I/O server", "",
           "The model's output alone (no reader: CFIO2's offload; the same 8 model ranks and files as above), "
           "written by the model itself through PnetCDF, synced to disk before each close (`file-sync`, the "
           "issue's baseline) or not (the files are in no `[FILE]` section), by its ranks after the hand-off "
           "(`persist=1`), or by an I/O server (`dtf-ioserver`, 2 ranks, `ioserver=\"io\"`) launched as a "
           "separate job or in the model's launch (`dtfrun --mpmd`, as CFIO2 runs its servers). After each "
           f"step's output the model computes {compute_ms:.0f} ms (`OUTPUT_IO_COMPUTE`, a sleep: computation "
           "on cores the writing does not need, as an I/O server on cores or nodes of its own has them; this "
           "machine has 2 cores for the 10 processes). The model's *visible output time* is its time per step "
           "from the create to the close returning (the slowest rank); the step is that plus the compute; "
           "medians over the launches, ms.", "",
           "| who writes the files | visible output, ms per step | / file-sync | step, ms |", "|---|---|---|---|"]
    for label, *_ in IO_RUNS:
        out_ms, step_ms = steps_ms[label]
        out.append(f"| {label} | {out_ms:.1f} | {out_ms / base:.2f}x | {step_ms:.1f} |")
    ratio = steps_ms[IO_RUNS[-1][0]][0] / base
    jobs = steps_ms[IO_RUNS[-2][0]][0] / base
    out += ["", f"With an I/O server in the model's launch the model's visible output time is {ratio:.2f}x "
            f"file-sync's (target <= 0.2: {'met' if ratio <= 0.2 else 'not met'}); as a separate job {jobs:.2f}x. "
            "What the model sees is the hand-off: its values copied at the put, one small message per rank "
            "with the writes' metadata and each large write's values sent from that copy as a message of its "
            "own, and the collectives of the create and close over 8 ranks on 2 cores; the server receives and "
            "writes while the model computes. In one launch Open MPI's shared-memory transport moves each "
            "message with a single-copy read by the server, without the model; between separately launched jobs "
            "the bytes go through TCP, and only while the model is in an MPI call (its next create), since "
            "on this crowded node no progress thread runs. Writing to the page cache is a memory copy too, so "
            "the model's ranks writing the files themselves after the hand-off (persist=1) cost them about what "
            "PnetCDF's unsynced writes cost; file-sync pays for the disk.",
            "", "One launch:", "", "```sh", f"OUTPUT_IO_COMPUTE={COMPUTE_S:g} " + example, "```"]
    return "\n".join(out)


def section(results, written, steps_ms, rma, rma_example, size, reps, example, io_example, png_rel):
    steps, nx, ny, nz, nvars = size
    mb = steps * nvars * nx * ny * nz * 4 * RANKS / 1e6
    out = ["## Aggregated output", "",
           f"`bench/aggregate.py` (in `make bench`): {RANKS} model ranks write {steps} steps, each a file of {nvars} float "
           f"variables of {nz} x {ny * RANKS} x {nx} points ({mb / steps:.0f} MB per step, {mb:.0f} MB per launch), row "
           f"blocks; one post rank reads a value of each file. dtf writes the files (`persist=1`) with `aggregators=A` "
           f"(every rank: `aggregators=0`; with subfiles, one subfile per rank), `subfiles=1` and `aggregate_steps=4`; "
           f"file mode is the same program writing through PnetCDF's collective puts. Bandwidth: the bytes over the "
           f"model's time from its first create to its last close, median of {reps} launches run round-robin, MB/s.",
           "", "| writers | " + " | ".join(n for n, _, _ in LAYOUTS) + " |", "|---|" + "---|" * len(LAYOUTS)]
    for a, w in WRITERS:
        out.append(f"| {w} | " + " | ".join(f"{results[f'{a}/{n}']:.0f}" for n, _, _ in LAYOUTS) + " |")
    out += ["", f"File mode (PnetCDF, every rank): {results['file mode']:.0f} MB/s. The model's time includes its "
            "puts (dtf copies the values) and the hand-off to the post rank; the writing alone (dtf's stats: the "
            "slowest model rank's time in writing the files, with the gathering), MB/s:", "",
            "| writers | " + " | ".join(n for n, _, _ in LAYOUTS) + " |", "|---|" + "---|" * len(LAYOUTS)]
    for a, w in WRITERS:
        out.append(f"| {w} | " + " | ".join(f"{written.get(f'{a}/{n}', 0):.0f}" for n, _, _ in LAYOUTS) + " |")
    out += ["", verdict(results, written), "",
            f"![aggregated output bandwidth]({png_rel})", "", "One launch (RUN: the directory with the `dtf.ini` that aggregate.py writes for it):", "", "```sh",
            example, "```", "", io_section(steps_ms, io_example), "", rma_section(rma, rma_example)]
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--md", help="replace the Aggregated output section of this markdown file")
    p.add_argument("--png-dir", help="where the plot goes (default: docs/perf next to --md)")
    p.add_argument("--smoke", action="store_true", help="three tiny launches (the test suite's run)")
    a = p.parse_args()
    build = os.path.abspath(a.build)
    size = (2, 16, 4, 4, 2) if a.smoke else (8, 256, 32, 32, 4)  # steps, nx, ny (rows per rank), nz, variables
    runs = configurations(a.smoke)
    work = tempfile.mkdtemp(prefix="dtf-aggregate-")
    samples = {r[0]: [] for r in runs}
    writing = {r[0]: [] for r in runs}
    visible = {r[0]: [] for r in IO_RUNS}
    example = io_example = ""
    try:
        for rep in range(1 if a.smoke else a.reps):
            for i, run in enumerate(runs):
                seconds, nbytes, _, write_s, cmd = run_one(build, work, run, size)
                samples[run[0]].append(nbytes / seconds / 1e6)
                if write_s:
                    writing[run[0]].append(nbytes / write_s / 1e6)
                example = example or cmd
                print(f"rep {rep + 1} run {i + 1}/{len(runs)} {run[0]}: {nbytes / 1e6:.0f} MB in {seconds:.3f} s, "
                      f"{nbytes / seconds / 1e6:.0f} MB/s", flush=True)
            for i, (label, k, io, sync, mpmd) in enumerate(IO_RUNS if not a.smoke else IO_RUNS[-2:]):
                seconds, nbytes, out_s, _, cmd = launch(build, work, label, k and "transfer", k, size, size[0], io=io,
                                                        sync=sync, compute=0 if a.smoke else COMPUTE_S, post=False,
                                                        mpmd=mpmd)
                visible[label].append((out_s / size[0] * 1e3, seconds / size[0] * 1e3))
                io_example = cmd if io and mpmd else io_example
                print(f"rep {rep + 1} I/O run {i + 1}/{len(IO_RUNS)} {label}: output {out_s / size[0] * 1e3:.1f} ms, "
                      f"{seconds / size[0] * 1e3:.1f} ms per step", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = {k: statistics.median(v) for k, v in samples.items()}
    written = {k: statistics.median(v) for k, v in writing.items() if v}
    for k, v in results.items():
        print(f"{k}: {v:.0f} MB/s (median)" + (f"; writing alone {written[k]:.0f} MB/s" if k in written else ""))
    steps_ms = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
                for k, v in visible.items() if v}
    for k, (out_ms, step_ms) in steps_ms.items():
        print(f"{k}: output {out_ms:.1f} ms per step, {step_ms:.1f} ms per step in all (medians)")
    rma, rma_example = rma_pull(build, a.smoke)
    for mode, (nbytes, server_ms, writer_ms) in rma.items():
        print(f"rma_pull {mode}: {nbytes} bytes, server {server_ms:.1f} ms, writers {writer_ms:.1f} ms")
    if a.md and not a.smoke:
        png_dir = a.png_dir or os.path.join(os.path.dirname(os.path.abspath(a.md)), "perf")
        os.makedirs(png_dir, exist_ok=True)
        png = os.path.join(png_dir, "aggregate.png")
        plot(results, png)
        mdsection.replace(a.md, "aggregate.py", section(results, written, steps_ms, rma, rma_example, size, a.reps, example, io_example, os.path.relpath(png, os.path.dirname(os.path.abspath(a.md)))))
        print(f"wrote {a.md} and {png}")


if __name__ == "__main__":
    main()
