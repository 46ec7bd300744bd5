#!/usr/bin/env python3
"""Figures of the LETKF I/O benchmark; bench/report.py turns them into docs/PERFORMANCE.md.

usage: python3 bench/plot.py OUT [--png-dir DIR]

OUT holds letkf.csv (one row per run, mode, rep, cycle, component, aggregate over the component's
ranks, and phase) and meta.json (the machine and the command of every run). Cycle 0 of every rep is
a warm-up: load() drops it, so every figure is a median over reps x cycles >= 1.
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys
from collections import namedtuple

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import LogLocator, ScalarFormatter
except ImportError:
    sys.exit(f"plot.py: matplotlib is not installed for {sys.executable} "
             "(Debian: apt-get install python3-matplotlib, for /usr/bin/python3)")

MODES = ("transfer", "transfer-replay", "transfer-persist", "file", "file-sync", "mpi-raw")  # display order of every figure and table
COMPONENTS = ("model", "assim")
PHASES = ("open", "io", "transfer", "close")  # application phases, timed in every mode
# dtf's own exclusive timers, transfer modes only
DTF_PHASES = ("dtf.open", "dtf.match", "dtf.pack", "dtf.transfer", "dtf.wait", "dtf.close")

# The parameters of one launch of the benchmark, repeated on every row of that launch.
Run = namedtuple("Run", "label members px py imax jmax kmax model_ranks assim_ranks")
COLUMNS = Run._fields + ("mode", "rep", "cycle", "component", "agg", "phase", "bytes", "seconds")


class DataError(Exception):
    """Unusable benchmark output; the scripts print it as a one-line message."""


def load(out):
    """Read OUT/letkf.csv and OUT/meta.json -> (samples, meta).

    samples[(run, mode, component, agg, phase)] lists (seconds, bytes) over the reps and the
    cycles >= 1, in file order.
    """
    path = os.path.join(out, "letkf.csv")
    samples = {}
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None:
                raise DataError(f"{path} is empty")
            missing = [c for c in COLUMNS if c not in reader.fieldnames]
            if missing:
                raise DataError(f"{path}: no column {', '.join(missing)}")
            for row in reader:
                if int(row["cycle"]) == 0:  # warm-up
                    continue
                run = Run(row["label"], *(int(row[c]) for c in Run._fields[1:]))
                key = (run, row["mode"], row["component"], row["agg"], row["phase"])
                samples.setdefault(key, []).append((float(row["seconds"]), float(row["bytes"])))
    except OSError as e:
        raise DataError(f"{path}: {e.strerror}") from None
    except (ValueError, TypeError) as e:  # TypeError: a short row
        raise DataError(f"{path}, line {reader.line_num}: {e}") from None
    if not samples:
        raise DataError(f"{path}: no measured cycle (cycle >= 1)")

    path = os.path.join(out, "meta.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except OSError as e:
        raise DataError(f"{path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: {e}") from None
    missing = [k for k in ("date", "command", "machine", "runs") if k not in meta]
    if missing:
        raise DataError(f"{path}: no {', '.join(missing)}")
    return samples, meta


def seconds(samples, run, mode, component, phase, agg="mean"):
    """Seconds of a phase, aggregated by agg over the component's ranks, one per rep and cycle."""
    return [s for s, _ in samples.get((run, mode, component, agg, phase), ())]


def nbytes(samples, run, mode, component, phase):
    """Bytes a phase moved, summed over the component's ranks, one per rep and cycle."""
    # Both aggregates carry the same bytes.
    return [b for _, b in samples.get((run, mode, component, "max", phase), ())]


def cycle_times(samples, run, mode):
    """Cycle times of a run in a mode: the slowest model rank's total, one per rep and cycle."""
    return seconds(samples, run, mode, "model", "total", agg="max")


def messages(samples, run, mode):
    """Median per cycle of a run's messages (dtf_counters_read; mpi-raw: its own), each counted at both
    ends: (messages of all ranks, messages of the busiest rank, bytes of all ranks), control and data
    together; None without counts."""
    ranks = {"model": run.model_ranks, "assim": run.assim_ranks}
    total, busiest, nbytes = [], [], []
    for kind in ("msg.control", "msg.data"):
        mean = {c: samples.get((run, mode, c, "mean", kind)) for c in COMPONENTS}
        most = {c: samples.get((run, mode, c, "max", kind)) for c in COMPONENTS}
        if not all(mean.values()) or not all(most.values()):
            return None
        cycles = min(len(v) for v in mean.values())
        total.append([sum(mean[c][i][0] * ranks[c] for c in COMPONENTS) for i in range(cycles)])
        busiest.append([max(most[c][i][0] for c in COMPONENTS) for i in range(cycles)])
        nbytes.append([sum(mean[c][i][1] for c in COMPONENTS) for i in range(cycles)])
    return tuple(median([a + b for a, b in zip(*pair)]) for pair in (total, busiest, nbytes))


def collective_messages(samples, run, mode):
    """Median per cycle of the point-to-point messages of dtf's collectives over all ranks (letkf_io's
    msg.collective.wire rows: each counted at both ends), None without counts."""
    ranks = {"model": run.model_ranks, "assim": run.assim_ranks}
    mean = {c: samples.get((run, mode, c, "mean", "msg.collective.wire")) for c in COMPONENTS}
    if not all(mean.values()):
        return None
    cycles = min(len(v) for v in mean.values())
    return median([sum(mean[c][i][0] * ranks[c] for c in COMPONENTS) for i in range(cycles)])


def growth(points):
    """The exponent k of y ~ x^k fitted (least squares in log-log) to (x, y) points; None if fewer than 2."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y and y > 0]
    if len(pts) < 2 or len({x for x, _ in pts}) < 2:
        return None
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def plot_messages(samples, meta, label):
    """Messages and bytes per process per cycle (all ranks, and the busiest) against the processes."""
    rs = sorted(runs(samples, meta, label), key=total_ranks)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
    for mode in MODES:
        pts = [(total_ranks(r), messages(samples, r, mode)) for r in rs]
        pts = [(n, m) for n, m in pts if m is not None]
        if not pts:
            continue
        line, = ax.plot([n for n, _ in pts], [m[1] for _, m in pts], marker="o", label=f"{mode}, busiest rank")
        ax.plot([n for n, _ in pts], [m[0] / n for n, m in pts], marker=".", ls="--", color=line.get_color(),
                label=f"{mode}, mean per rank")
        bx.plot([n for n, _ in pts], [m[2] / n / 1e3 for n, m in pts], marker="o", label=mode)
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
        a.yaxis.set_major_formatter(ScalarFormatter())
        a.set_xticks([total_ranks(r) for r in rs], [str(total_ranks(r)) for r in rs])
        a.minorticks_off()
        a.grid(alpha=0.3)
        a.set_xlabel("processes (model + assim)")
    ax.set(title="messages per cycle (sent + received)", ylabel="messages")
    bx.set(title="bytes per process per cycle (sent + received)", ylabel="kB")
    ax.legend(fontsize=7)
    bx.legend(fontsize=7)
    return fig


def collectives(samples, run, mode):
    """Median per cycle of the collectives dtf made on the busiest rank (letkf_io's msg.collective rows:
    over more than one rank, communicator duplications included); None without counts."""
    most = [samples.get((run, mode, c, "max", "msg.collective")) for c in COMPONENTS]
    if not all(most):
        return None
    return median([max(m[i][0] for m in most) for i in range(min(len(m) for m in most))])


def median(values):
    """Median of values, None if there is none."""
    return statistics.median(values) if values else None


def runs(samples, meta, label=None):
    """Runs with a cycle time (of label, if given), in meta.json order; unlisted runs last."""
    found = dict.fromkeys(run for run, _, *rest in samples
                          if rest == ["model", "max", "total"] and label in (None, run.label))
    listed = [tuple(r.get(f) for f in Run._fields) for r in meta["runs"]]
    return sorted(found, key=lambda run: listed.index(run) if run in listed else len(listed))


def run_info(meta, run):
    """The meta.json entry of a run (command, reps, cycles, wall_s, ...), {} if not listed."""
    return next((r for r in meta["runs"] if tuple(r.get(f) for f in Run._fields) == run), {})


def launch_count(meta, run):
    """How many times a run was launched (bench/letkf.py: the samples of its launches follow each
    other, their reps numbered on)."""
    return max(1, sum(1 for r in meta["runs"] if tuple(r.get(f) for f in Run._fields) == run))


def modes(samples, run):
    """The modes a run was measured in, in display order."""
    return [m for m in MODES if cycle_times(samples, run, m)]


def total_ranks(run):
    return run.model_ranks + run.assim_ranks


def fmt_ms(ms):
    """Milliseconds with 3 significant digits, without an exponent."""
    return f"{ms:.3g}" if ms < 1000 else f"{ms:.0f}"


def describe(run):
    """One line with the parameters of a run."""
    return (f"{run.members} member{'s' * (run.members != 1)}, px x py = {run.px}x{run.py}, "
            f"{run.imax}x{run.jmax}x{run.kmax} points per rank, "
            f"{run.model_ranks} model + {run.assim_ranks} assim ranks")


def plot_cycle_time(samples, run):
    """Box plot of the cycle times per mode, every sample drawn over its box."""
    times = {m: [1e3 * t for t in cycle_times(samples, run, m)] for m in modes(samples, run)}
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    ax.boxplot(list(times.values()), labels=list(times), whis=(0, 100), widths=0.5)
    for x, ts in enumerate(times.values(), start=1):
        # Samples in rep/cycle order, spread across the box so that drifts show.
        ax.plot([x - 0.2 + 0.4 * i / max(len(ts) - 1, 1) for i in range(len(ts))], ts, ".",
                color="tab:gray", alpha=0.6)
        ax.annotate(f"{fmt_ms(median(ts))} ms", (x + 0.27, median(ts)), va="center")
    medians = [median(ts) for ts in times.values()]
    if max(medians) > 10 * min(medians):
        ax.set_yscale("log")
    ax.set_xlim(0.5, len(times) + 0.8)  # room for the last annotation
    ax.set(title=f"LETKF cycle time per mode\n{describe(run)}", xlabel="mode",
           ylabel="cycle time, slowest model rank (ms)")
    ax.grid(axis="y", alpha=0.3)
    return fig


def plot_phases(samples, run):
    """Stacked bars of the median phase times, one panel per component."""
    colors = dict(zip(PHASES + DTF_PHASES, plt.get_cmap("tab10").colors))
    # (bar label, mode, stacked phases): the application phases of every mode, then dtf's timers.
    bars = [(m, m, PHASES) for m in modes(samples, run)]
    if any(seconds(samples, run, "transfer", c, p) for c in COMPONENTS for p in DTF_PHASES):
        bars.append(("transfer\n(dtf internals)", "transfer", DTF_PHASES))
    fig, axes = plt.subplots(1, len(COMPONENTS), figsize=(12, 5), layout="constrained")
    for ax, component in zip(axes, COMPONENTS):  # one time scale per component
        for y, (_, mode, phases) in enumerate(bars):
            left = 0
            for phase in phases:
                width = 1e3 * (median(seconds(samples, run, mode, component, phase)) or 0)
                ax.barh(y, width, left=left, color=colors[phase])
                left += width
            ax.annotate(f" {fmt_ms(left)}", (left, y), va="center")
        ax.set_yticks(range(len(bars)), [label for label, _, _ in bars])
        ax.invert_yaxis()
        ax.margins(x=0.15)  # room for the annotations
        ax.set(title=component, xlabel="median time, mean over ranks (ms)")
        ax.grid(axis="x", alpha=0.3)
    shown = dict.fromkeys(p for _, _, phases in bars for p in phases)
    axes[-1].legend(handles=[Patch(color=colors[p], label=p) for p in shown],
                    loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.suptitle(f"LETKF time per phase\n{describe(run)}")
    return fig


def plot_scaling(samples, meta, label):
    """Median cycle time against the total number of ranks, one line per mode."""
    rs = sorted(runs(samples, meta, label), key=total_ranks)
    fig, ax = plt.subplots(figsize=(8, 5), layout="constrained")
    for mode in MODES:
        points = [(total_ranks(r), median(cycle_times(samples, r, mode))) for r in rs]
        points = [(x, 1e3 * y) for x, y in points if y is not None]
        if points:
            ax.plot(*zip(*points), marker="o", label=mode)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))  # readable values, not only powers of 10
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.set_xticks([total_ranks(r) for r in rs], [str(total_ranks(r)) for r in rs])
    ax.minorticks_off()

    # What stays constant: the points per model rank (weak), or the grid per member (strong).
    if len({(r.imax, r.jmax, r.kmax) for r in rs}) == 1:
        work = f": {rs[0].imax}x{rs[0].jmax}x{rs[0].kmax} points per model rank"
    elif len({(r.px * r.imax, r.py * r.jmax, r.kmax) for r in rs}) == 1:
        work = f": {rs[0].px * rs[0].imax}x{rs[0].py * rs[0].jmax}x{rs[0].kmax} points per member"
    else:
        work = ""
    most, cpus = max(map(total_ranks, rs)), meta["machine"]["cpus"]
    over = "oversubscribed: up to" if most > cpus else "at most"
    ax.set(title=f"{label} scaling{work}\n({over} {most} ranks on {cpus} cores)",
           xlabel="total ranks (model + assim)", ylabel="median cycle time (ms)")
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def make_plots(out, png_dir):
    """Write the figures of benchmark output OUT into png_dir; returns the paths written."""
    samples, meta = load(out)
    os.makedirs(png_dir, exist_ok=True)
    figures = {}
    default = runs(samples, meta, "default")
    if default:
        figures["cycle_time.png"] = plot_cycle_time(samples, default[0])
        figures["phases.png"] = plot_phases(samples, default[0])
    else:
        print("plot.py: no run labelled 'default', skipping cycle_time.png and phases.png",
              file=sys.stderr)
    if runs(samples, meta, "growth"):
        figures["messages.png"] = plot_messages(samples, meta, "growth")
    for label in ("weak", "strong"):
        if runs(samples, meta, label):
            figures[f"{label}_scaling.png"] = plot_scaling(samples, meta, label)
        else:
            print(f"plot.py: no run labelled '{label}', skipping {label}_scaling.png",
                  file=sys.stderr)
    paths = []
    for name, fig in figures.items():
        paths.append(os.path.join(png_dir, name))
        fig.savefig(paths[-1], dpi=100)
        plt.close(fig)
    return paths


def main():
    parser = argparse.ArgumentParser(description="Plot the LETKF benchmark output OUT.")
    parser.add_argument("out", metavar="OUT", help="benchmark output directory")
    parser.add_argument("--png-dir", metavar="DIR", help="where to write the PNGs (default: OUT)")
    args = parser.parse_args()
    try:
        for path in make_plots(args.out, args.png_dir or args.out):
            print(path)
    except DataError as e:
        sys.exit(f"plot.py: {e}")


if __name__ == "__main__":
    main()
