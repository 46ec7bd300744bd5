#!/usr/bin/env python3
"""Coupled tests: real components launched as separate MPI jobs by dtfrun.

usage: coupled.py SCENARIO --dtfrun PATH --c-exe PATH [--model-exe PATH] [options]

Scenarios
  pair      model x assim ranks exchange files for CYCLES cycles (role reversal on state.nc, a new
            hist.<c>.nc per cycle; --state-mode/--hist-mode choose file or transfer mode);
            both must report "all values verified"; transfer-mode files must not reach the disk.
  missing   only one component starts: dtf_init must fail within DTF_TIMEOUT (+ slack), naming the
            component it waited for.
  mismatch  the components start with different config files (mode, file pattern, component
            list): dtf_init fails on both sides and says which line differs.
  sizes     pair for 2 cycles in file mode, then in transfer mode: ncmpi_inq_put_size, _get_size and
            _inq_file_info must answer alike on every rank before every close.
  unaware   the zero-change mode: a writer and a reader that never call dtf, preloaded with libdtf
            (DTF_COMPONENT names each), move a transfer-mode file: every value checked, no file on disk.
  misnamed  the same with the writer's DTF_COMPONENT not in the config: its MPI_Init stops it (and the
            launch fails within seconds), rather than let it run on plain PnetCDF.
  wrongname a linked model's dtf_init given a name not in the config: both components' dtf_init fail
            within seconds, the assimilation saying why.
  s3dio     the original DTF's example: S3D-IO's I/O (s3dio_f.F90) as writer and reader, its config as it
            was; file mode, then transfer mode: the reader's values byte for byte the same, no file on disk.
  letkf     the SCALE-LETKF pattern (letkf_pattern.c or its Fortran twin): an ensemble model writes
            history and analysis files, the assimilation reads them, opens the analysis files again
            with NC_WRITE and writes them back, the model reads that back; in file mode, then in
            transfer mode: every value checked, each rank's values and I/O sizes byte for byte the
            same in both, no transfer-mode file on disk, and in the first cycle a read of what the
            assimilation did not write back refused in transfer mode (file mode: the model's values).
            --readers adds components that read the history files too (one writer, several readers).
  output    an output file (writer=, no readers=, persist=1) written by the ranks, aggregators or an
            I/O server, each as plain PnetCDF writes it (bench/output_io)
  absent    a writer's first optional reader (fallback=1) never starts: the second one must wait for
            the writer longer than DTF_TIMEOUT and read every file over MPI, every value as in the
            file-mode run (bench/output_io)
Every launch runs under dtfrun --walltime (or `timeout`), so a hang fails the test; --launch mpmd
runs the components under one mpirun (dtfrun --mpmd) instead of one job each, --launch mpirun
under a plain MPMD mpirun; --launch srun runs dtfrun inside a Slurm allocation (salloc), which starts
the components with one `srun --multi-prog` (the zero-change scenario: `dtfrun --launcher srun`
outside one), and --launch srun-steps starts each component with an srun of its own in one allocation
(scenario pair: refused at once, saying why), and --launch sbatch runs dtfrun in a batch job, all on a
one-node Slurm cluster the test starts (slurmcluster.py; root, slurm-wlm and munge, else skipped with
status 77 unless DTF_TEST_SLURM=required).
--hosts netns runs the components on two hosts made of network namespaces (see NetnsHosts; needs root
and iproute2, else the test is skipped with status 77).
"""
import argparse
import os
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ncfiles  # noqa: E402
from slurmcluster import SlurmCluster  # noqa: E402

CONFIG = """[INFO]
ncomp=2
comp_name="model"
comp_name="assim"
[FILE]
filename="state.nc"
comp1="model"
comp2="assim"
mode="{mode}"
replay_io={replay}
num_sessions={state_sessions}
[FILE]
filename="hist.%.nc"
comp1="model"
comp2="assim"
mode="{hist_mode}"
replay_io={replay}
"""

REPLAYED = re.compile(r"\[dtf (\w+)\] stats .* (\d+) get batches replayed, (\d+) matched")
REUSED = re.compile(r"\[dtf (\w+)\] stats .* requests served (\d+) by matching, (\d+) with the last session's result")


KEPT = re.compile(r"\[dtf (\w+)\] stats over (\d+) ranks: .*; (\d+) path records kept")
PERSISTED = re.compile(r"\[dtf (\w+)\] stats .*; (\d+) files written \(persist=1\)")
COUNTED = re.compile(r"\[dtf (\w+)\] messages over \d+ ranks \(dtf_counters_read\): control sent (\d+) \((\d+) bytes\), "
                     r"busiest rank \d+; control received (\d+) \((\d+) bytes\), busiest rank \d+; data sent (\d+) "
                     r"\((\d+) bytes\), busiest rank \d+; data received (\d+) \((\d+) bytes\), busiest rank \d+; "
                     r"collectives (\d+), busiest rank \d+; collective sent (\d+) \((\d+) bytes\), busiest rank \d+; "
                     r"collective received (\d+) \((\d+) bytes\), busiest rank \d+")


DROPPED = re.compile(r"\[dtf (\w+)\] stats .* (\d+) never used; (\d+) definitions of files other ranks read dropped")


def check_counts(out, components, data_at_least, dropped_at_most=None):
    """The message counters of every component (DTF_PRINT_STATS=2): each message sent was received, control
    and data, in number and bytes, and at least `data_at_least` bytes of data moved. And no control message
    was left unused, and at most `dropped_at_most` FileDefined of files read by other ranks were left at
    dtf_finalize (the writer withdraws each with its next FileDefined: what is left is the last ones)."""
    left = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in DROPPED.finditer(out)}
    expect(sorted(left) == sorted(components), f"stats of {sorted(components)} expected: {sorted(left)}")
    expect(all(unused == 0 for unused, _ in left.values()) and "was never used" not in out,
           f"control messages left unused at dtf_finalize: {left}")
    dropped = sum(d for _, d in left.values())
    if dropped_at_most is not None:
        expect(dropped <= dropped_at_most, f"{dropped} file definitions left at dtf_finalize, more than the "
               f"{dropped_at_most} of one cycle: the writer's withdrawals did not reach the readers")
    counts = {m.group(1): [int(x) for x in m.groups()[1:]] for m in COUNTED.finditer(out)}
    expect(sorted(counts) == sorted(components), f"message counters of {sorted(components)} expected: {sorted(counts)}")
    total = [sum(c[i] for c in counts.values()) for i in range(13)]
    expect(total[0:2] == total[2:4], f"control messages (count, bytes) sent {total[0:2]} but received {total[2:4]}")
    expect(total[4:6] == total[6:8], f"data messages (count, bytes) sent {total[4:6]} but received {total[6:8]}")
    expect(total[9:11] == total[11:13],
           f"messages of collectives (count, bytes) sent {total[9:11]} but received {total[11:13]}")
    expect(total[5] >= data_at_least, f"data bytes sent: {total[5]}, less than the {data_at_least} read")
    print(f"counters: {total[0]} control messages ({total[1]} bytes), {total[4]} data messages ({total[5]} bytes), "
          f"{total[8]} collectives ({total[9]} messages); every one sent was received")


def check_trace(args, trace_dir, ranks):
    """A DTF_TRACE directory: one file per rank of `ranks` ({component: count}), each a JSON array with the
    program's PnetCDF calls, its waits (what for, and from whom), the control and data messages; dtf-trace
    merges them all and summarizes each rank."""
    want = sorted(f"{comp}.{r}.json" for comp, n in ranks.items() for r in range(n))
    expect(sorted(os.listdir(trace_dir)) == want, f"DTF_TRACE: {want} expected: {sorted(os.listdir(trace_dir))}")
    events = 0
    for name in want:
        with open(os.path.join(trace_dir, name)) as f:
            evs = json.load(f)
        events += len(evs)
        names = {e["name"] for e in evs}
        waits = [e for e in evs if e.get("cat") == "wait"]
        expect({"ncmpi_open", "ncmpi_close"} <= names, f"{name}: the PnetCDF calls are missing")
        expect(waits and all(e["ph"] == "X" and e["dur"] >= 0 and e["args"]["for"] and e["args"]["peer"]
                             for e in waits), f"{name}: waits must say what for and from whom")
        expect(any(e.get("cat") == "data" for e in evs), f"{name}: no data message")
        expect(any(n.startswith("received ") for n in names) and any(n.startswith("send ") for n in names),
               f"{name}: control messages sent and received expected")
    tool = os.path.join(os.path.dirname(args.dtfrun), "dtf-trace")
    p = subprocess.run([tool, trace_dir, "--out", trace_dir + ".json"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    expect(p.returncode == 0, f"dtf-trace failed: {p.stdout}")
    with open(trace_dir + ".json") as f:
        merged = json.load(f)["traceEvents"]
    expect(len(merged) == events and p.stdout.count(" waiting (") == len(want),
           f"dtf-trace: {len(merged)} events merged of {events}; its summary:\n{p.stdout}")
    print(f"DTF_TRACE: {len(want)} ranks, {events} events; dtf-trace merged and summarized them")


def write_config(path, mode="file", hist_mode="file", replay=False, state_sessions=1):
    with open(path, "w") as f:
        f.write(CONFIG.format(mode=mode, hist_mode=hist_mode, replay=int(replay), state_sessions=state_sessions))


def launch_mode(args):
    """dtfrun's options for --launch: separate jobs (the default), one MPMD mpirun, or one srun."""
    return {"mpmd": ["--mpmd"], "srun": ["--launcher", "srun"]}.get(args.launch, [])


class NetnsHosts:
    """Two hosts on this machine (--hosts netns): two network namespaces joined by a veth pair, every
    process in them with its host's name (its own UTS namespace), so that Open MPI sees two nodes: no
    shared memory between them, its TCP over the veth pair. dtfrun, the name server and every mpirun
    run on the first host; Open MPI starts the ranks placed on the second (`--host`) through its rsh
    agent, a script that runs `ip netns exec`, as ssh would on a cluster. The file system is shared,
    as on a cluster."""
    NAMES = ("dtfhost-a", "dtfhost-b")  # component i runs on host i
    SUBNET = "10.77.0"

    def __init__(self, work):
        tag = f"dtf{os.getpid()}"
        self.ns = [tag + "a", tag + "b"]  # namespace and veth names (at most 15 characters)
        self.work = work
        self.made = []

    def start(self):
        """Make the hosts; None, or why they cannot be made here."""
        if os.geteuid() != 0:
            return "not root"
        missing = [p for p in ("ip", "unshare") if not shutil.which(p)]
        if missing:
            return f"{' and '.join(missing)} not found"
        ip = lambda *a: subprocess.run(["ip"] + list(a), check=True, capture_output=True, text=True)  # noqa: E731
        try:
            for ns in self.ns:
                ip("netns", "add", ns)
                self.made.append(ns)
            ip("link", "add", self.ns[0], "type", "veth", "peer", "name", self.ns[1])
            for i, ns in enumerate(self.ns):
                ip("link", "set", ns, "netns", ns)
                ip("-n", ns, "addr", "add", f"{self.SUBNET}.{i + 1}/24", "dev", ns)
                ip("-n", ns, "link", "set", ns, "up")
                ip("-n", ns, "link", "set", "lo", "up")
        except subprocess.CalledProcessError as e:
            return f"{' '.join(e.cmd)}: {e.stderr.strip()}"
        hosts = "".join(f"  {n}) ns={ns};;\n" for n, ns in zip(self.NAMES, self.ns))
        on_host = 'exec ip netns exec "$ns" unshare --uts sh -c \'hostname "$0" && exec {}\' "$host" "$@"\n'
        # Open MPI's rsh agent, called as `AGENT HOST COMMAND`, as it would call ssh.
        self.agent = os.path.join(self.work, "netns-agent.sh")
        with open(self.agent, "w") as f:
            f.write("#!/bin/sh\nhost=$1; shift\ncase $host in\n" + hosts +
                    '  *) echo "netns agent: unknown host $host" >&2; exit 255;;\nesac\n' +
                    on_host.format('sh -c "$*"'))
        # dtfrun's --mpirun: mpirun run on the first host its --host option names (else on host A).
        self.mpirun = os.path.join(self.work, "netns-mpirun.sh")
        with open(self.mpirun, "w") as f:
            f.write("#!/bin/sh\nhost=\nprev=\nfor a in \"$@\"; do [ \"$prev\" = --host ] && host=${a%%:*}; prev=$a; done\n"
                    "case $host in\n" + hosts + '  *) exec mpirun "$@";;\nesac\n' + on_host.format('mpirun "$@"'))
        for script in (self.agent, self.mpirun):
            os.chmod(script, 0o755)
        return None

    def stop(self):
        for ns in self.made:  # deleting a namespace deletes its end of the veth pair, and the pair
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)

    @classmethod
    def placement(cls, component, ranks, spread):
        """mpirun's --host for a component: host i for component i; with `spread` the second one's
        ranks over both hosts, one on the first (where its mpirun then runs) and the rest on the other."""
        if spread and component == 1:
            return f"{cls.NAMES[0]}:1,{cls.NAMES[1]}:{ranks - 1}"
        return f"{cls.NAMES[component]}:{ranks}"

    def env(self):
        """Open MPI on these hosts: ranks of host B started through the agent, TCP on the veth pair."""
        net = f"{self.SUBNET}.0/24"
        return {"OMPI_MCA_plm_rsh_agent": self.agent, "OMPI_MCA_oob_tcp_if_include": net,
                "OMPI_MCA_btl_tcp_if_include": net}

    def wrap(self, cmd):
        """cmd run on the first host."""
        return ["ip", "netns", "exec", self.ns[0], "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                self.NAMES[0]] + cmd

    def bytes_moved(self):
        """Bytes sent plus received on the first host's end of the veth pair so far."""
        out = subprocess.run(["ip", "-n", self.ns[0], "-s", "-j", "link", "show", "dev", self.ns[0]],
                             check=True, capture_output=True, text=True).stdout
        stats = json.loads(out)[0]["stats64"]
        return stats["rx"]["bytes"] + stats["tx"]["bytes"]


def launch(args, components, env_extra=None, walltime=90):
    """Run dtfrun with the given [(ranks, argv)] components (--launch mpirun: a plain MPMD mpirun
    under `timeout`, dtf finding the contexts by itself; --hosts: component i on host i); return
    (status, output, seconds)."""
    env = dict(os.environ, **(env_extra or {}))
    total = sum(ranks for ranks, _ in components)
    if args.launch == "mpirun":
        exported = [w for name in sorted(env) if name.startswith("DTF_") for w in ("-x", name)]
        cmd = ["timeout", str(walltime), "mpirun", "--oversubscribe", "--bind-to", "none"]
        for i, (ranks, argv) in enumerate(components):
            cmd += ([":"] if i else []) + ["-n", str(ranks)] + exported + argv
    elif args.launch == "srun-steps":  # an srun step per component, as a user might try
        env.update(OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")
        steps = "".join(f"srun --mpi=pmix --overcommit --overlap -n {ranks} {' '.join(map(shlex.quote, argv))} & "
                        f"p{i}=$!; " for i, (ranks, argv) in enumerate(components))
        status = " ".join(f"wait $p{i} || s=1;" for i in range(len(components)))
        cmd = ["timeout", str(walltime), "salloc", "--quiet", "--overcommit", "-n", str(total), "sh", "-c",
               f"{steps}s=0; {status} exit $s"]
    else:
        # --launch srun: dtfrun inside an allocation, where it starts the components with srun by itself
        cmd = [args.dtfrun, "--walltime", str(walltime)] + \
            ([] if args.launch in ("srun", "sbatch") else launch_mode(args)) + \
            (["--mpirun", args.mpirun] if args.mpirun else [])
        if args.hosts:
            cmd += ["--no-loopback", "--mpirun", args.hosts.mpirun]
        for i, (ranks, argv) in enumerate(components):
            cmd += ([":"] if i else []) + ["--name", argv[1], "-n", str(ranks)]
            if args.hosts:
                cmd += ["--mpi-args", "--host " + NetnsHosts.placement(i, ranks, args.spread)]
            cmd += argv
        if args.hosts:
            cmd = args.hosts.wrap(cmd)
            env.update(args.hosts.env())
        if args.launch == "srun":
            cmd = ["salloc", "--quiet", "--overcommit", "-n", str(total)] + cmd
        elif args.launch == "sbatch":  # the batch script of docs/USER-GUIDE.md, waited for
            script, output = os.path.join(args.work, "job.sh"), os.path.join(args.work, "job.out")
            with open(script, "w") as f:
                f.write(f"#!/bin/sh\n#SBATCH --ntasks={total}\n#SBATCH --overcommit\n#SBATCH --time=00:05:00\n"
                        f"{' '.join(map(shlex.quote, cmd))}\n")
            cmd = ["sbatch", "--wait", "--quiet", "-o", output, script]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=walltime + 30)
    elapsed = time.monotonic() - t0
    if args.launch == "sbatch":
        with open(output) as f:
            p.stdout += f.read()
    print("$ " + " ".join(cmd))
    print(p.stdout)
    print(f"exit status {p.returncode} after {elapsed:.1f} s")
    return p.returncode, p.stdout, elapsed


def expect(cond, message):
    if not cond:
        print("FAIL: " + message)
        sys.exit(1)


def scenario_pair(args, work):
    ini = os.path.join(work, "dtf.ini")
    write_config(ini, mode=args.state_mode, hist_mode=args.hist_mode, replay=bool(args.replay),
                 state_sessions=args.num_sessions)
    data = os.path.join(work, "data")
    os.mkdir(data)
    env = {"DTF_TIMEOUT": "30", "DTF_PRINT_STATS": "2"}
    if args.replay == "rematch":
        # Both sides change their pattern at cycle 4: the writers notice at their first put, before
        # any value was dropped, and the session is matched again; replays before and after.
        env.update(DTF_PRINT_STATS="2", FILEMODE_WRITE_VARN="0001111", FILEMODE_READ_VARN="0001111")
    elif args.replay == "steady":
        # A new hist.<c>.nc every cycle, the same pattern (vara every cycle): replayed from the second
        # cycle on (plans are kept per file name with its digits wildcarded).
        env.update(DTF_PRINT_STATS="2", FILEMODE_WRITE_VARN="0" * args.cycles, FILEMODE_READ_VARN="0" * args.cycles)
    elif args.steady:
        # The same pattern every cycle without replay: the matchers answer the requests of every cycle
        # after the first with the last session's result (same writes, same reads).
        env.update(DTF_PRINT_STATS="2", FILEMODE_WRITE_VARN="0" * args.cycles, FILEMODE_READ_VARN="0" * args.cycles)
    elif args.replay == "break":
        # Only the readers change, at cycle 3, while the writers replay and kept only what the old
        # pattern reads: the readers' gets must fail, saying so, never return other values.
        env.update(FILEMODE_WRITE_VARN="0000000", FILEMODE_READ_VARN="0010000")
    elif args.replay == "records":
        # A record variable whose record count grows at cycle 4 and shrinks back at cycle 5, read two
        # records at a time before anything else: the readers' gets, checked against the replayed
        # plan's count, stand under the new one, and the changed puts are matched again.
        env.update(FILEMODE_RECORDS="2223222", FILEMODE_READ_RECORDS="2222222", FILEMODE_WRITE_VARN="0000000",
                   FILEMODE_READ_VARN="0000000")
    elif args.replay == "records-short":
        # At cycle 3 the writers write one record where the readers, checked against the plan's two,
        # get two: the get must fail, saying so (in file mode PnetCDF refuses it), never return values.
        env.update(FILEMODE_RECORDS="2212222", FILEMODE_READ_RECORDS="2222222", FILEMODE_WRITE_VARN="0000000",
                   FILEMODE_READ_VARN="0000000")
    if args.late_put:
        # One writer rank writes after dtf_transfer, the others do not, and the readers close after
        # their one dtf_transfer. The late row can reach no reader (their gets were answered at the
        # transfer): the writers' close must say so after DTF_TIMEOUT, not hang in a collective.
        env.update(FILEMODE_LATE_PUT="1", DTF_TIMEOUT="5")
    if args.spread:
        env.update(DTF_TIMEOUT="10")
    if args.rendezvous == "file":
        env.update(DTF_RENDEZVOUS="file", DTF_GLOBAL_PATH=work)
        if args.stale:  # leftovers of a crashed earlier run: a dead port, an old ack and go
            for suffix, text in ((".port", "0123456789abcdef otherhost 1 0\nbogus-port-name"),
                                 (".ack", "0123456789abcdef fedcba9876543210"), (".go", "fedcba9876543210")):
                with open(os.path.join(work, ".dtf-model--assim" + suffix), "w") as f:
                    f.write(text)
    if args.says:  # (what dtf_init says at DTF_VERBOSE_LEVEL=1)
        env.update(DTF_VERBOSE_LEVEL="1")
    model = args.model_exe or args.c_exe
    status, out, elapsed = launch(args, [
        (args.model_ranks, [model, "model", ini, data, str(args.cycles)]),
        (args.assim_ranks, [args.c_exe, "assim", ini, data, str(args.cycles)])], env)
    for text in args.says:
        expect(re.search(text, out), f"the output must say /{text}/")
    if args.spread and args.launch == "jobs":
        refused = (rf"component 'assim' has {args.assim_ranks - 1} of its {args.assim_ranks} ranks on nodes other "
                   r"than the one its mpirun runs on, and separately launched Open MPI 4 jobs cannot connect")
        expect(status != 0 and re.search(refused, out) and "SIGSEGV" not in out and elapsed < 20,
               "a separately launched job with ranks away from its mpirun's node must fail dtf_init saying why, "
               "before Open MPI's mpirun crashes in MPI_Comm_connect")
        expect("dtf_init waited for component 'assim' to connect; but component 'assim' was lost (dtfrun: exited "
               "with status" in out, "the model must stop waiting in dtf_init once dtfrun reports the assimilation lost")
        return
    if args.launch == "srun-steps":
        for comp in ("model", "assim"):
            expect(re.search(rf"DTF_ERR_CONNECT: component '{comp}' was started by an srun of its own "
                             r"\(PMIX_NAMESPACE=slurm\.pmix\.[\d.]+\), and the ranks of separate srun steps cannot "
                             r"connect .*`dtfrun` does inside an allocation", out),
                   f"dtf_init of '{comp}', started by an srun of its own, must refuse at once, saying why and how")
        expect(status != 0 and elapsed < 20, "separate srun steps must fail at once, not wait out DTF_TIMEOUT")
        return
    if args.late_put:
        expect(status != 0, "a write no reader can take must fail the writer's close")
        # The close fails; or, when a progress thread serves the session after the close, the next
        # open of the path, which waits for it.
        expect(re.search(r"rank 0 \(model\): (opening '[^']*state.nc' waited for the readers of the session this rank "
                         r"wrote before to finish reading it \()?dtf_transfer of '[^']*state.nc' \(session 1, writer "
                         r"rank 0\) waited for component 'assim': 0 of 3 reader ranks done", out),
               "the writer's close (or its next open) must time out naming the readers it waited for")
        return
    transfer = "transfer" in (args.state_mode, args.hist_mode)
    if args.replay == "records-short" and not transfer:  # the file-mode oracle: PnetCDF's NC_EEDGE
        expect(status != 0 and "Start+count exceeds dimension bound" in out and "WRONG DATA" not in out,
               "in file mode PnetCDF must refuse the get of a record that was not written")
        return
    if args.replay == "records-short":
        expect(status != 0, "a get of records the writers did not write must fail")
        expect(re.search(r"gets on record variables were checked against the 2 records of session [0-9]+ of "
                         r"'[^']*(state|hist)[^']*' \(2 sessions before this one\), whose transfer pattern the "
                         r"writers may replay \(replay_io=1, [^)]*\), but component '(model|assim)' wrote 1 records "
                         r"this time \(a get read up to record 1\); set replay_io=0 for this file", out)
               and "WRONG DATA" not in out,
               "the failing get must say which record count it was checked against and what to do")
        return
    if args.replay == "break":
        expect(status != 0, "a reader that leaves the replayed pattern must fail")
        expect(re.search(r"is not the one of session 1 of '[^']*state.nc' \(2 sessions before this one\), whose transfer "
                         r"pattern the writers replay", out) and
               "set replay_io=0 for this file" in out and "WRONG DATA" not in out,
               "the failing get must say which batch left which replayed pattern (recorded 2 cycles before) and "
               "what to do")
        return
    expect(status == 0, "dtfrun failed")
    expect(out.count("all values verified") == 2, "both components must verify all values")
    expect(f"{args.model_ranks} ranks, {args.cycles} cycles" in out, "model rank/cycle count not reported")
    expect(f"{args.assim_ranks} ranks, {args.cycles} cycles" in out, "assim rank/cycle count not reported")
    leftovers = [f for f in os.listdir(work) if f.startswith(".dtf-") and not args.stale]
    expect(not leftovers, f"rendezvous files left behind: {leftovers}")
    hist_files = [f for f in os.listdir(data) if f.startswith("hist.")]
    if args.replay and transfer:
        counts = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in REPLAYED.finditer(out)}
        readers = ["assim"] if args.replay == "steady" else ["model", "assim"]  # who reads in transfer mode
        expect(all(c in counts and counts[c][0] > 0 and counts[c][1] > 0 for c in readers),
               f"{' and '.join(readers)} must replay some get batches and match others: {counts}")
        if args.replay == "steady":
            expect(counts["assim"][0] >= (args.cycles - 1) * counts["assim"][1],
                   f"every cycle after the first must be replayed: {counts['assim']}")
    if args.steady and not args.replay:
        served = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in REUSED.finditer(out)}
        matched, reused = served.get("model", (0, 0))
        expect(matched > 0 and reused >= (args.cycles - 1) * matched,
               f"the model's matchers must reuse the first cycle's results in every later cycle: {served}")
    # What each rank still knows of the paths at the end. Transfer mode forgets a path after its
    # num_sessions sessions (state.nc: every rank takes part in two per cycle, writing and reading;
    # each hist file has one, and the default num_sessions=1); file mode keeps every path.
    kept = {m.group(1): (int(m.group(2)), int(m.group(3))) for m in KEPT.finditer(out)}
    for comp, (ranks, records) in sorted(kept.items()):
        state = ranks * (args.state_mode == "file" or (2 * args.cycles) % args.num_sessions != 0)
        hist = ranks * args.cycles * (args.hist_mode == "file")
        expect(records == state + hist, f"{comp}: {records} path records kept at the end, expected {state + hist} "
               f"(state.nc: {state}, hist files: {hist})")
    expect(sorted(kept) == ["assim", "model"], f"both components must print their statistics: {sorted(kept)}")
    if args.state_mode == "transfer":
        expect("state.nc" not in os.listdir(data), "transfer-mode state.nc reached the file system")
    if args.hist_mode == "transfer":
        expect(not hist_files, f"transfer-mode files reached the file system: {hist_files}")
    else:
        expect(len(hist_files) == args.cycles, f"expected {args.cycles} hist files, found {hist_files}")


SIZES = re.compile(r"^\[\w+\] (sizes .*)$", re.M)


def scenario_sizes(args, work):
    """ncmpi_inq_put_size, _inq_get_size and _inq_file_info on every rank before every close: the
    same answers in transfer mode as on the real files of file mode (2 cycles: vara, then varn and a
    record variable)."""
    answers = {}
    for mode in ("file", "transfer"):
        run = os.path.join(work, mode)
        data = os.path.join(run, "data")
        os.makedirs(data)
        ini = os.path.join(run, "dtf.ini")
        write_config(ini, mode=mode, hist_mode=mode)
        status, out, _ = launch(args, [
            (args.model_ranks, [args.c_exe, "model", ini, data, "2"]),
            (args.assim_ranks, [args.c_exe, "assim", ini, data, "2"])],
            # the second cycle's files have a record variable too (2 records), read first
            {"DTF_TIMEOUT": "30", "FILEMODE_SIZES": "1", "FILEMODE_RECORDS": "02", "FILEMODE_READ_RECORDS": "02"})
        expect(status == 0, f"the {mode}-mode run failed")
        answers[mode] = sorted(SIZES.findall(out))
    expect(answers["file"], "no sizes were printed")
    diff = [f"file:     {a}\ntransfer: {b}" for a, b in zip(answers["file"], answers["transfer"]) if a != b]
    expect(len(answers["file"]) == len(answers["transfer"]) and not diff,
           "transfer mode must answer as the real files do:\n" + "\n".join(diff))


def unaware_setup(args, work):
    """The zero-change scenarios' config (dtf.ini: unaware.nc in transfer mode between model and assim) and
    data directory, and what preloads libdtf by hand: (ini, data, runtimes, libs), `runtimes` being the
    sanitizer runtimes a sanitizer build of libdtf needs preloaded before it (the programs are not built
    with it), `libs` those and libdtf, as LD_PRELOAD takes them."""
    ini = os.path.join(work, "dtf.ini")
    with open(ini, "w") as f:
        f.write('[INFO]\nncomp=2\ncomp_name="model"\ncomp_name="assim"\n'
                '[FILE]\nfilename="unaware.nc"\ncomp1="model"\ncomp2="assim"\nmode="transfer"\n')
    data = os.path.join(work, "data")
    os.mkdir(data)
    ldd = subprocess.run(["ldd", args.lib], capture_output=True, text=True).stdout
    runtimes = re.findall(r"=> (\S*lib[at]san\.so\S*)", ldd)
    return ini, data, runtimes, ":".join(runtimes + [os.path.abspath(args.lib)])


def scenario_unaware(args, work):
    """The zero-change mode: a program without a dtf call, not linked with dtf, preloaded with it;
    DTF_COMPONENT names its component. In transfer mode its file never reaches the disk, and each
    reader rank gets the bytes it gets when the same programs run one after the other without dtf
    (the file-mode oracle)."""
    writer = args.writer_exe or args.unaware_exe
    oracle = os.path.join(work, "oracle")
    os.mkdir(oracle)
    for ranks, argv in ((args.model_ranks, [writer, "writer", oracle]), (args.assim_ranks, [args.unaware_exe, "reader", oracle])):
        status, _, _ = launch(args, [(ranks, argv)], {"UNAWARE_DUMP": os.path.join(work, "oracle.dump")})
        expect(status == 0, f"the run without dtf failed ({argv[1]})")
    ini, data, runtimes, libs = unaware_setup(args, work)
    # dtfrun --preload sets LD_PRELOAD and DTF_COMPONENT; with a sanitizer build, through mpirun
    preload = (lambda name: ["--mpi-args", f"-x LD_PRELOAD={libs} -x DTF_COMPONENT={name}"]) if runtimes else \
        (lambda name: [])
    cmd = [args.dtfrun, "-c", ini, "--walltime", "90"] + launch_mode(args) + \
        (["--mpirun", args.mpirun] if args.mpirun else []) + \
        ([] if runtimes else ["--preload", args.lib]) + \
        ["--name", "model", "-n", str(args.model_ranks)] + preload("model") + \
        [writer, "writer", data, ":", "--name", "assim", "-n", str(args.assim_ranks)] + \
        preload("assim") + [args.unaware_exe, "reader", data]
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, env=dict(os.environ, DTF_TIMEOUT="30", DTF_PRINT_STATS="2",
                                      UNAWARE_DUMP=os.path.join(work, "dtf.dump")), text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=150)
    print(p.stdout)
    expect(p.returncode == 0, f"dtfrun exited with status {p.returncode}")
    expect("unaware reader: all values verified" in p.stdout, "the reader must verify every value")
    expect(not os.listdir(data), f"a transfer-mode file reached the disk: {os.listdir(data)}")
    expect(f"[dtf model] stats over {args.model_ranks} ranks" in p.stdout and
           f"{args.model_ranks} write and 0 read sessions closed" in p.stdout and
           f"[dtf assim] stats over {args.assim_ranks} ranks" in p.stdout and
           f"0 write and {args.assim_ranks} read sessions closed" in p.stdout,
           "both components must report dtf's statistics (dtf ran in both, and finalized in MPI_Finalize)")
    for r in range(args.assim_ranks):
        with open(os.path.join(work, f"oracle.dump.{r}"), "rb") as a, open(os.path.join(work, f"dtf.dump.{r}"), "rb") as b:
            expect(a.read() == b.read(), f"reader rank {r} got other bytes than through the file system")


def scenario_misnamed(args, work):
    """The zero-change mode with a DTF_COMPONENT that is not a comp_name (set by hand, past dtfrun's
    check of --name): dtf cannot start in the writer's MPI_Init, and the program, which never looks at
    what MPI_Init returns, must not go on as plain PnetCDF (writing the transfer-mode file to disk, its
    reader reading it, all "successfully"): it stops there, saying why, and the run fails within
    seconds, nothing written."""
    ini, data, _, libs = unaware_setup(args, work)
    preload = lambda name: ["--mpi-args", f"-x LD_PRELOAD={libs} -x DTF_COMPONENT={name}"]  # noqa: E731
    cmd = [args.dtfrun, "-c", ini, "--walltime", "60"] + launch_mode(args) + \
        ["--name", "model", "-n", str(args.model_ranks)] + preload("modl") + [args.unaware_exe, "writer", data, ":",
         "--name", "assim", "-n", str(args.assim_ranks)] + preload("assim") + [args.unaware_exe, "reader", data]
    print("$ " + " ".join(cmd))
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=dict(os.environ, DTF_TIMEOUT="30"), text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    elapsed = time.monotonic() - t0
    print(p.stdout)
    expect(p.returncode != 0, "the run must fail")
    expect("component 'modl' is not listed" in p.stdout and
           "DTF_COMPONENT=modl: dtf could not start (above), and without it this program would run on plain "
           f"PnetCDF with the files of {ini}: it stops here" in p.stdout, "the writer must say why it stops")
    expect("all values verified" not in p.stdout, "the reader must not read anything")
    expect(not os.listdir(data), f"a transfer-mode file reached the disk: {os.listdir(data)}")
    expect(elapsed < 25, f"the run must fail within seconds, not after DTF_TIMEOUT (took {elapsed:.0f} s)")


def scenario_wrongname(args, work):
    """Programs linked with dtf, the model's dtf_init given a component name the config does not
    list: it fails there, and every rank of the assimilation's dtf_init fails within seconds too, not
    after DTF_TIMEOUT: as separate jobs dtfrun reports a program lost before its dtf said which component
    it runs; in one launch the model's root tells the programs it has not met why it cannot start, and
    their error says it."""
    ini = os.path.join(work, "dtf.ini")
    write_config(ini)
    status, out, elapsed = launch(args, [(args.model_ranks, [args.c_exe, "modl", ini, work, "1"]),
                                         (args.assim_ranks, [args.c_exe, "assim", ini, work, "1"])],
                                  {"DTF_TIMEOUT": "30"}, walltime=60)
    expect(status != 0, "the run must fail")
    listed = f"component 'modl' is not listed in {ini}"
    expect(len(re.findall(r"modl rank \d+: dtf_init failed .*" + re.escape(listed), out)) == args.model_ranks,
           "every model rank's dtf_init must fail, naming the name")
    assim = re.findall(r"assim rank \d+: dtf_init failed after ([0-9.]+) s .*", out)
    expect(len(assim) == args.assim_ranks, f"every assimilation rank's dtf_init must fail: {assim}")
    expect(all(float(t) < 10 for t in assim), f"the assimilation must fail within seconds: {assim}")
    why = "but a program of this launch ended before its dtf said which component it runs (dtfrun: component " \
        "'modl': exited with status 2): if it was 'model', its output says why" if args.launch == "jobs" else \
        "program 0 of this launch (MPI_APPNUM) could not start dtf, so this component cannot connect to it: " \
        "dtf_init: " + listed
    expect(why in out, f"the assimilation must say why: {why}")
    expect(elapsed < 25, f"the run must end within seconds, not after DTF_TIMEOUT (took {elapsed:.0f} s)")


# The original DTF's example configuration for two S3D-IO instances ("part of the file name").
S3DIO_CONFIG = """[INFO]
ncomp=2
comp_name="writer"
comp_name="reader"
[FILE]
filename="pressure_wave_test"
comp1="writer"
comp2="reader"
mode="{mode}"
"""


def scenario_s3dio(args, work):
    """The original DTF's example as it runs there: S3D-IO (its I/O, s3dio_f.F90) twice, a writer of 3
    checkpoints (2x2x1 ranks) and a reader of them (1x1x2), the original's Fortran externals and config
    (filename="pressure_wave_test"). In file mode the files reach the disk; in transfer mode none does,
    and each reader rank reads what it read in file mode, byte for byte; both sides print the MPI-IO
    hints nfmpi_get_file_info gives them, in both modes."""
    grid, dumps, hints = ["16", "8", "4"], {}, {}
    for mode in ("file", "transfer"):
        data = os.path.join(work, mode)
        os.mkdir(data)
        ini = os.path.join(data, "dtf.ini")
        with open(ini, "w") as f:
            f.write(S3DIO_CONFIG.format(mode=mode))
        status, out, _ = launch(args, [(4, [args.model_exe, "writer", ini, data, "3", "2", "2", "1"] + grid),
                                       (2, [args.model_exe, "reader", ini, data, "3", "1", "1", "2"] + grid)],
                                {"DTF_TIMEOUT": "30", "S3D_DUMP": os.path.join(work, mode + ".dump")})
        expect(status == 0, f"{mode} mode: dtfrun exited with status {status}")
        for role, ranks in (("writer", 4), ("reader", 2)):
            expect(f"s3dio {role}: 3 checkpoints, {ranks} ranks, every value right" in out,
                   f"{mode} mode: the {role} must finish with every value right")
            expect(f"s3dio {role}: hint nc_header_align_size" in out and
                   (role == "reader" or "s3dio writer: hint romio_ds_write" in out),
                   f"{mode} mode: the {role} must see PnetCDF's hints (the writer its own too)")
        hints[mode] = sorted(set(re.findall(r"s3dio \w+: \d+ MPI-IO hints", out)))
        files = sorted(f for f in os.listdir(data) if f.endswith(".field.nc"))
        want = [f"pressure_wave_test.{t}E-06.field.nc" for t in ("1.000", "2.000", "3.000")]
        expect(files == (want if mode == "file" else []), f"{mode} mode: files on disk {files}")
        for r in range(2):
            with open(os.path.join(work, f"{mode}.dump.{r}"), "rb") as f:
                dumps.setdefault(r, []).append(f.read())
    for r, (file_mode, transfer) in dumps.items():
        expect(len(file_mode) > 0 and file_mode == transfer, f"reader rank {r} read other bytes in transfer mode")
    expect(hints["file"] == hints["transfer"], f"as many MPI-IO hints in both modes: {hints}")


LETKF_CONFIG = """[INFO]
ncomp={ncomp}
comp_name="model"
comp_name="assim"
{more_names}[FILE]
filename="hist.%.nc"
{hist_sharing}
mode="{mode}"
persist={persist}
{hist_keys}[FILE]
; the analysis: written by the model, read by the assimilation, then opened with NC_WRITE and
; written back by it, and read by the model: two sessions per file
filename="anal.%.nc"
comp1="model"
comp2="assim"
mode="{mode}"
num_sessions=2
replay_io=1
mirror_io_root=1
persist={persist}
{anal_keys}"""


# Values read per member and cycle in letkf_pattern.c: the assimilation reads 20 history and 11
# analysis variables, the model reads the 11 written back; every variable NZ x NY x NX = 3 x 13 x 10.
LETKF_VALUES_READ = (20 + 11 + 11) * 3 * 13 * 10


def letkf_config(mode, readers, persist=False, hist_keys="", anal_keys="", ioserver=False):
    """The LETKF pattern's config; `readers`: more components reading the history files besides the
    assimilation ([(name, ranks)]: then the hist rule is writer=/readers=); `hist_keys`, `anal_keys`:
    more keys of each rule in transfer mode (e.g. "aggregators=2 subfiles=1"); `ioserver`: in transfer
    mode a component "io" (dtf-ioserver) writes both rules' files."""
    names = [name for name, _ in readers]
    sharing = ('writer="model"\nreaders="' + " ".join(names + ["assim"]) + '"') if readers else \
        'comp1="model"\ncomp2="assim"'
    io = ioserver and mode == "transfer"
    keys = (lambda k: "".join(x + "\n" for x in k.split() + (['ioserver="io"'] if io else []))
            if mode == "transfer" else "")
    return LETKF_CONFIG.format(mode=mode, ncomp=2 + len(readers) + io, hist_sharing=sharing, persist=int(persist),
                               hist_keys=keys(hist_keys), anal_keys=keys(anal_keys),
                               more_names="".join(f'comp_name="{name}"\n' for name in names + (["io"] if io else [])))


def scenario_letkf(args, work):
    members, cycles = args.members, args.cycles
    model_exe, assim_exe = args.model_exe or args.c_exe, args.assim_exe or args.c_exe
    readers = [(r.split(":")[0], int(r.split(":")[1])) for r in args.readers]
    runs = {}
    for mode in ("file", "transfer"):
        run = os.path.join(work, mode)
        os.mkdir(run)
        ini = os.path.join(run, "dtf.ini")
        with open(ini, "w") as f:
            f.write(letkf_config(mode, readers, args.persist, args.hist_keys, args.anal_keys, bool(args.ioserver)))
        moved = args.hosts.bytes_moved() if args.hosts else 0
        argv = [ini, run, str(cycles), str(members)]
        trace = {"DTF_TRACE": os.path.join(run, "trace")} if args.trace and mode == "transfer" else {}
        status, out, _ = launch(args, [(args.model_ranks, [model_exe, "model"] + argv),
                                       (args.assim_ranks, [assim_exe, "assim"] + argv)] +
                                [(ranks, [assim_exe, name] + argv) for name, ranks in readers] +
                                ([(args.ioserver, [args.ioserver_exe, "io", ini])] if args.ioserver and mode == "transfer"
                                 else []),
                                dict({"DTF_TIMEOUT": "30", "LETKF_UNWRITTEN": "1", "DTF_PRINT_STATS": "2"}, **trace),
                                walltime=120)
        expect(status == 0, f"{mode} mode: exit status {status}")
        if mode == "transfer":
            # (each member's written-back analysis is read by its ranks of the model only)
            check_counts(out, ["model", "assim"] + [n for n, _ in readers] + (["io"] if args.ioserver else []),
                         LETKF_VALUES_READ * members * cycles * 4,
                         dropped_at_most=members * (args.model_ranks - args.model_ranks // members))
        if trace:
            check_trace(args, trace["DTF_TRACE"], dict([("model", args.model_ranks), ("assim", args.assim_ranks)] + readers))
        if args.hosts:
            moved = args.hosts.bytes_moved() - moved
            print(f"{mode} mode: {moved} bytes through the veth pair between the hosts")
            if mode == "transfer":  # at least every value read across it (the data does not go by disk)
                # (--spread: one assimilation rank, 4 of the 10 columns with 3 ranks, is on the model's host)
                least = LETKF_VALUES_READ * members * cycles * 4 // (2 if args.spread else 1)
                expect(moved >= least,
                       f"transfer mode: the values read cannot have crossed the network: {moved} bytes moved")
        for comp, ranks in [("model", args.model_ranks), ("assim", args.assim_ranks)] + readers:
            expect(f"{comp}: {ranks} ranks, {members} members, {cycles} cycles, all values verified" in out,
                   f"{mode} mode: {comp} must verify every value")
        files = sorted(f for f in os.listdir(run) if f.endswith(".nc"))
        if mode == "file":
            expect(len(files) == 2 * members * cycles, f"file mode must leave every file on disk: {files}")
            expect(out.count("read the variable not written back") == members,
                   "file mode: every member reads the variable not written back (its own values)")
        elif args.persist:  # the files file mode wrote (header and values byte for byte, ncmpidiff agrees)
            oracle = sorted(f for f in os.listdir(runs["file"]) if f.endswith(".nc"))
            if "subfiles=1" in args.hist_keys.split():  # each hist file as subfiles, one per aggregator
                groups = min(int(re.search(r"aggregators=(\d+)", args.hist_keys).group(1)),
                             args.model_ranks // members)
                for name in (f for f in oracle if f.startswith("hist.")):
                    parts = [os.path.join(run, f"{name}.subfile_{g}") for g in range(groups)]
                    expect(all(os.path.exists(p) for p in parts), f"subfiles=1: {name}: {groups} subfiles expected: "
                           f"{sorted(f for f in os.listdir(run) if f.startswith(name))}")
                    why = ncfiles.compare_subfiles(os.path.join(runs["file"], name), parts)
                    expect(why is None, f"subfiles=1: the subfiles do not read back as the file file mode wrote: {why}")
                print(f"subfiles=1: each history file as {groups} subfiles, read back as file mode's file")
                oracle = [f for f in oracle if not f.startswith("hist.")]
            expect(files == oracle, f"persist=1: the files on disk {files} are not file mode's {oracle}")
            for name in files:
                why = ncfiles.compare(os.path.join(runs["file"], name), os.path.join(run, name))
                expect(why is None, f"persist=1: not the file file mode wrote: {why}")
            for name in (f for f in (f"hist.0.{cycles}.nc", f"anal.0.{cycles}.nc") if f in files):  # (and the others)
                diff = subprocess.run(["ncmpidiff", os.path.join(runs["file"], name), os.path.join(run, name)],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                expect(diff.returncode == 0, f"persist=1: ncmpidiff finds differences in {name}: {diff.stdout}")
            print(f"persist=1: {len(files)} files with the header and values file mode wrote, byte for byte")
            written = {m.group(1): int(m.group(2)) for m in PERSISTED.finditer(out)}
            want = dict({"model": 2 * members * cycles, "assim": members * cycles}, **{n: 0 for n, _ in readers})
            if args.ioserver:  # the I/O server writes them all
                want = dict({name: 0 for name in want}, io=3 * members * cycles)
            expect(written == want,
                   f"persist=1: files written per component (the model's, the assimilation's write-backs): {written}")
        if mode == "transfer":
            expect(args.persist or not files, f"a transfer-mode file reached the disk: {files}")
            expect(len(re.findall(r"model member \d+: refused", out)) == members and
                   "opened the file with NC_WRITE and did not write all of these elements" in out,
                   "transfer mode: the read of a variable not written back must be refused with the reason")
            # The analysis files (replay_io=1): the assimilation's reads replayed from the second cycle
            # on; the model's reads of the written-back session from the third (the first cycle's
            # extra read made the second differ).
            replayed = {m.group(1): int(m.group(2)) for m in REPLAYED.finditer(out)}
            expect(replayed == dict({"assim": args.assim_ranks * members * (cycles - 1),
                                     "model": args.model_ranks * max(cycles - 2, 0)}, **{name: 0 for name, _ in readers},
                                    **({"io": 0} if args.ioserver else {})),
                   f"get batches replayed: {replayed}")
        runs[mode] = run
    for comp, ranks in [("model", args.model_ranks), ("assim", args.assim_ranks)] + readers:
        for r in range(ranks):
            name = f"{comp}.{r}.dump"
            with open(os.path.join(runs["file"], name), "rb") as a, open(os.path.join(runs["transfer"], name), "rb") as b:
                expect(a.read() == b.read(), f"{comp} rank {r}: other values or I/O sizes in transfer mode than "
                                             "in file mode")


OUTPUT_CONFIG = """[INFO]
ncomp={ncomp}
comp_name="model"
{more}[FILE]
filename="{pattern}"
writer="model"
mode="transfer"
persist=1
{keys}"""


def scenario_output(args, work):
    """An output file (writer=, no readers=, persist=1): the model's files, written by its ranks, by
    aggregators (one file, subfiles) or by an I/O server (--ioserver RANKS), must be those plain PnetCDF
    writes (--c-exe: bench/output_io, which writes STEPS files out.<step>.nc). The I/O server also gets
    writes of 67 KB each, whose values the model ranks send as messages of their own (64 KiB and more)."""
    ranks, steps = args.model_ranks, args.cycles
    sizes = {"small": [str(steps), "16", "4", "3", "3"],  # steps, nx, rows per rank, nz, variables
             "large": [str(steps), "1400", "4", "3", "3"]}
    runs = [("oracle", "nothing.%", "", 0, "small"), ("ranks", "out.%.nc", "", 0, "small"),
            ("aggregated", "out.%.nc", "aggregators=2\naggregate_steps=2\n", 0, "small"),
            ("subfiles", "out.%.nc", "aggregators=2\nsubfiles=1\n", 0, "small")]
    if args.ioserver:
        runs += [("ioserver", "out.%.nc", 'ioserver="io"\n', args.ioserver, "small"),
                 ("oracle-large", "nothing.%", "", 0, "large"),
                 ("ioserver-large", "out.%.nc", 'ioserver="io"\n', args.ioserver, "large")]
    for label, pattern, keys, io, size in runs:
        run = os.path.join(work, label)
        os.mkdir(run)
        ini = os.path.join(run, "dtf.ini")
        with open(ini, "w") as f:
            f.write(OUTPUT_CONFIG.format(ncomp=2 if io else 1, more='comp_name="io"\n' if io else "", pattern=pattern,
                                         keys=keys))
        status, out, _ = launch(args, [(ranks, [args.c_exe, "model", ini, run] + sizes[size])] +
                                ([(io, [args.ioserver_exe, "io", ini])] if io else []),
                                {"DTF_TIMEOUT": "30", "DTF_PRINT_STATS": "2"}, walltime=90)
        expect(status == 0, f"{label}: exit status {status}")
        if label.startswith("oracle"):
            continue
        oracle = os.path.join(work, "oracle" if size == "small" else "oracle-" + size)
        written = {m.group(1): int(m.group(2)) for m in PERSISTED.finditer(out)}
        expect(written.get("io" if io else "model") == steps, f"{label}: files written per component: {written}")
        for step in range(steps):
            name = f"out.{step}.nc"
            if "subfiles=1" in keys:
                parts = [os.path.join(run, f"{name}.subfile_{g}") for g in range(min(2, ranks))]
                why = ncfiles.compare_subfiles(os.path.join(oracle, name), parts)
            else:
                why = ncfiles.compare(os.path.join(oracle, name), os.path.join(run, name))
            expect(why is None, f"{label}: not the file plain PnetCDF wrote: {why}")
        print(f"{label}: {steps} files as plain PnetCDF wrote them")


def scenario_missing(args, work):
    ini = os.path.join(work, "dtf.ini")
    write_config(ini)
    timeout = 3
    other = "assim" if args.alone == "model" else "model"
    status, out, elapsed = launch(args, [(2, [args.c_exe, args.alone, ini, work, "1"])],
                                  {"DTF_TIMEOUT": str(timeout)}, walltime=60)
    expect(status != 0, "a component whose peer never starts must fail")
    expect(elapsed < timeout + 20, f"took {elapsed:.1f} s, DTF_TIMEOUT was {timeout} s")
    expect("DTF_ERR_TIMEOUT" in out and f"component '{other}'" in out,
           f"the error must be a timeout naming component '{other}'")
    expect("dtf_init failed" in out, "dtf_init must return the error to the program")
    # Waiting for a peer costs no core: every rank sleeps between looks (not one spinning in MPI).
    waits = re.findall(r"dtf_init failed after ([0-9.]+) s \(([0-9.]+) s of CPU\)", out)
    expect(len(waits) == 2, f"each of the 2 ranks must say how long it waited, and its CPU time: {waits}")
    for wall, cpu in waits:
        expect(float(cpu) < 0.5 * float(wall), f"a rank spent {cpu} s of CPU in a {wall} s wait for its peer")


ABSENT_CONFIG = """[INFO]
ncomp=3
comp_name="model"
comp_name="absent"
comp_name="post"
[FILE]
filename="never.%.nc"
writer="model"
readers="absent"
mode="transfer"
fallback=1
[FILE]
filename="out.%.nc"
writer="model"
readers="post"
mode="transfer"
fallback=1
"""


# The oracle of scenario absent: the same programs, out.% through the file system (mode="file").
ABSENT_ORACLE_CONFIG = """[INFO]
ncomp=2
comp_name="model"
comp_name="post"
[FILE]
filename="out.%.nc"
writer="model"
readers="post"
mode="file"
"""


def scenario_absent(args, work):
    """A writer with two readers it may go on without (fallback=1), the first of which never starts
    (--c-exe: bench/output_io; component 'absent' is not launched): the model waits DTF_TIMEOUT for it
    in dtf_init and only then connects to 'post', which must wait that much longer (the model's
    connecting mark) instead of timing out, and read every file over MPI: every value it read the same
    as in the file-mode run (out.% in mode="file", without 'absent')."""
    timeout = 3
    size = ["3", "16", "4", "3", "2"]  # steps, nx, rows per rank, nz, variables
    outs = {}
    for label, config in (("oracle", ABSENT_ORACLE_CONFIG), ("test", ABSENT_CONFIG)):
        run = os.path.join(work, label)
        os.mkdir(run)
        ini = os.path.join(run, "dtf.ini")
        with open(ini, "w") as f:
            f.write(config)
        status, out, elapsed = launch(args, [(2, [args.c_exe, "model", ini, run] + size),
                                             (1, [args.c_exe, "post", ini, run] + size)],
                                      {"DTF_TIMEOUT": str(timeout), "OUTPUT_IO_DUMP": run}, walltime=60)
        expect(status == 0, f"{label}: exit status {status}" +
               (": 'post' must wait for the model while it waits for 'absent'" if label == "test" else ""))
        outs[label] = (out, elapsed, run)
    out, elapsed, run = outs["test"]
    expect("[model] [dtf model:0] notice: going on without component 'absent', which did not connect" in out,
           "the model must say that it goes on without 'absent'")
    expect("went to the file system" not in out and not any(n.startswith("out.") for n in os.listdir(run)),
           "'post' must read every file over MPI (none written)")
    expect(elapsed < 2 * timeout + 30, f"took {elapsed:.1f} s with DTF_TIMEOUT={timeout}")
    for step in range(int(size[0])):
        name = f"post.{step}.bin"
        with open(os.path.join(outs["oracle"][2], name), "rb") as f:
            want = f.read()
        with open(os.path.join(run, name), "rb") as f:
            got = f.read()
        expect(len(want) > 0 and got == want, f"{name}: the values 'post' read differ from the file-mode run's")
    print(f"post read {size[0]} files over MPI, every value as in the file-mode run")


def scenario_mismatch(args, work):
    # (what differs, how the assimilation's copy is changed, the two lines the error must show)
    variants = [
        ("mode", lambda t: t.replace('mode="file"', 'mode="transfer"', 1), ['mode="transfer"', 'mode="file"']),
        ("pattern", lambda t: t.replace("hist.%.nc", "hist2.%.nc"), ["hist2.%.nc", "hist.%.nc"]),
        ("component list", lambda t: t.replace("ncomp=2", "ncomp=3").replace('comp_name="assim"',
                                                                           'comp_name="assim"\ncomp_name="obs"'),
         ["ncomp=3", "ncomp=2"]),
    ]
    ini_a, ini_b = os.path.join(work, "a.ini"), os.path.join(work, "b.ini")
    write_config(ini_a)
    with open(ini_a) as f:
        text = f.read()
    for what, change, lines in variants:
        print(f"-- the components' configurations differ in the {what}")
        with open(ini_b, "w") as f:
            f.write(change(text))
        # (given relative, each config is named by its absolute path: both may be called dtf.ini)
        rel_a, rel_b = (os.path.relpath(p) for p in (ini_a, ini_b))
        status, out, _ = launch(args, [(2, [args.c_exe, "model", rel_a, work, "1"]),
                                       (1, [args.c_exe, "assim", rel_b, work, "1"])], {"DTF_TIMEOUT": "20"})
        expect(status != 0, f"components with different configurations ({what}) must not run")
        expect("different configuration" in out and all(line in out for line in lines),
               f"the error must show the differing lines {lines}")
        expect(f"({ini_a})" in out and f"({ini_b})" in out, "the error must name both configs by their full paths")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", choices=["pair", "missing", "mismatch", "sizes", "unaware", "misnamed", "wrongname",
                                        "letkf", "output", "absent", "s3dio"])
    p.add_argument("--unaware-exe", help="unaware (a program without dtf calls; scenario unaware)")
    p.add_argument("--lib", help="libdtf.so to preload (scenario unaware)")
    p.add_argument("--writer-exe", help="another writer for scenario unaware (e.g. the Fortran one)")
    p.add_argument("--dtfrun", required=True)
    p.add_argument("--launch", choices=["jobs", "mpmd", "mpirun", "srun", "srun-steps", "sbatch"], default="jobs",
                   help="separate MPI jobs (dtfrun), one MPMD mpirun for all components (dtfrun --mpmd), "
                        "that mpirun without dtfrun (scenarios pair and letkf), one srun (dtfrun inside salloc; "
                        "scenario unaware: dtfrun --launcher srun), or an srun per component (scenario pair: refused), or "
                        "dtfrun in a batch job (sbatch --wait)")
    p.add_argument("--mpirun", help="dtfrun's --mpirun (e.g. MPICH's mpiexec; default: mpirun from PATH)")
    p.add_argument("--hosts", choices=["netns"], help="component i on host i, hosts made of network namespaces "
                   "(NetnsHosts); skipped (status 77) without root or iproute2 unless DTF_TEST_NETNS=required")
    p.add_argument("--spread", action="store_true", help="--hosts: the assimilation's ranks on both hosts, its "
                   "mpirun on the first (as two jobs: refused clearly, scenario pair; in one launch it must work)")
    p.add_argument("--c-exe", required=True, help="filemode (C, both roles)")
    p.add_argument("--model-exe", help="another model component (e.g. the Fortran one)")
    p.add_argument("--assim-exe", help="another assim component (scenario letkf)")
    p.add_argument("--members", type=int, default=2, help="ensemble members (scenario letkf)")
    p.add_argument("--persist", action="store_true",
                   help="scenario letkf: persist=1 on both files: in transfer mode the files must be on disk too, "
                        "byte for byte those file mode wrote")
    p.add_argument("--trace", action="store_true",
                   help="scenario letkf: DTF_TRACE in transfer mode; every rank's trace checked, and dtf-trace run on them")
    p.add_argument("--hist-keys", default="", metavar="KEYS",
                   help="scenario letkf, --persist: more keys of the hist rule in transfer mode, e.g. 'aggregators=2'")
    p.add_argument("--anal-keys", default="", metavar="KEYS", help="likewise for the anal rule")
    p.add_argument("--ioserver", type=int, default=0, metavar="RANKS",
                   help="scenario letkf, --persist: in transfer mode an I/O server component 'io' of RANKS ranks "
                        "(--ioserver-exe) writes the files (ioserver= on both rules)")
    p.add_argument("--ioserver-exe", help="dtf-ioserver")
    p.add_argument("--readers", nargs="*", default=[], metavar="NAME:RANKS",
                   help="scenario letkf: more components that read the history files (run as --assim-exe NAME; "
                        "the hist rule becomes writer=model, readers=NAME... assim)")
    p.add_argument("--model-ranks", type=int, default=1)
    p.add_argument("--assim-ranks", type=int, default=1)
    p.add_argument("--cycles", type=int, default=1)
    p.add_argument("--rendezvous", choices=["auto", "file"], default="auto")
    p.add_argument("--hist-mode", choices=["file", "transfer"], default="file", help="mode of the hist.%%.nc files")
    p.add_argument("--replay", choices=["steady", "rematch", "break", "records", "records-short"],
                   help="replay_io=1: the same pattern in a new hist file every cycle (replayed from the "
                        "second), or a pattern change mid-run on both sides (matched again), or on the "
                        "readers' side only (their gets must fail clearly), or a record count that changes "
                        "under gets checked against the plan's (they stand; or, reading records that were "
                        "not written, fail clearly)")
    p.add_argument("--steady", action="store_true",
                   help="the same pattern every cycle (vara), without replay: the matchers must reuse results")
    p.add_argument("--state-mode", choices=["file", "transfer"], default="file",
                   help="mode of state.nc (written by both components in turn)")
    p.add_argument("--num-sessions", type=int, default=1,
                   help="num_sessions of state.nc: the path is forgotten (and its sessions numbered from 1 again) "
                        "after that many")
    p.add_argument("--late-put", action="store_true",
                   help="writer rank 0 writes its last row after dtf_transfer (independent put), the others nothing")
    p.add_argument("--stale", action="store_true")
    p.add_argument("--says", action="append", default=[], metavar="REGEX",
                   help="scenario pair: DTF_VERBOSE_LEVEL=1, and the output must match REGEX (repeatable)")
    p.add_argument("--alone", choices=["model", "assim"], default="model")
    args = p.parse_args()
    if args.hosts and args.launch not in ("jobs", "mpmd"):
        p.error("--hosts needs dtfrun (--launch jobs or mpmd)")
    if args.spread and (not args.hosts or args.assim_ranks < 2):
        p.error("--spread needs --hosts and at least 2 assimilation ranks")
    with tempfile.TemporaryDirectory(prefix="dtf-coupled-") as work:
        args.work = work
        if args.launch.startswith("srun") or args.launch == "sbatch":
            cluster = SlurmCluster(work)
            try:
                why = cluster.start()
                if why and os.environ.get("DTF_TEST_SLURM") == "required":
                    expect(False, f"a Slurm cluster required (DTF_TEST_SLURM=required): {why}")
                if why:
                    print(f"SKIP: no Slurm cluster here: {why}")
                    sys.exit(77)
                os.environ.update(cluster.env())  # (salloc, srun and dtfrun find it)
                globals()["scenario_" + args.scenario](args, work)
            finally:
                cluster.stop()
        elif not args.hosts:
            globals()["scenario_" + args.scenario](args, work)
        else:
            args.hosts = NetnsHosts(work)
            try:
                why = args.hosts.start()
                if why and os.environ.get("DTF_TEST_NETNS") == "required":
                    expect(False, f"hosts of network namespaces required (DTF_TEST_NETNS=required): {why}")
                if why:
                    print(f"SKIP: hosts of network namespaces need root, iproute2 and util-linux: {why}")
                    sys.exit(77)
                globals()["scenario_" + args.scenario](args, work)
            finally:
                args.hosts.stop()
    print("PASS")


if __name__ == "__main__":
    main()
