"""A one-node Slurm cluster of its own, for tests: munged, slurmctld and slurmd started in a
temporary directory (configuration, state, spool, logs, munge key and socket there), on free ports,
so that it neither needs nor touches a Slurm of the machine; stopped and removed by stop().

    cluster = SlurmCluster(workdir)
    why = cluster.start()      # None, or why it cannot run here (then skip, or fail if required)
    subprocess.run(["srun", ...], env=cluster.env())
    cluster.stop()

Needs root (slurmd starts the jobs' processes as their user), Debian's slurm-wlm and munge
(scripts/install-deps.sh installs them). The configuration is the smallest that runs here (Slurm
22.05): no cgroups (task/none, proctrack/linuxproc), consumable cores with oversubscription, backfill.
"""
import os
import shutil
import socket
import subprocess
import time

CPUS = 2            # the node's CPUs as Slurm sees them; OverSubscribe lets jobs use more tasks
OVERSUBSCRIBE = 16  # tasks per CPU at most (the coupled tests run up to 16 processes)
START_TIMEOUT = 30.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    def __init__(self, work):
        self.dir = os.path.join(work, "slurm")
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.procs = []
        self.node = socket.gethostname()

    def env(self, base=None):
        """The environment Slurm's commands need to find this cluster."""
        return dict(base if base is not None else os.environ, SLURM_CONF=self.conf)

    def start(self):
        """Start the daemons and wait for the node to be idle; None, or why it cannot run here."""
        if os.geteuid() != 0:
            return "not root (slurmd starts the jobs' processes as their user)"
        missing = [p for p in ("munged", "slurmctld", "slurmd", "srun", "sinfo") if not shutil.which(p)]
        if missing:
            return f"{', '.join(missing)} not found (scripts/install-deps.sh installs slurm-wlm and munge)"
        for sub in ("state", "spool", "log", "munge"):
            os.makedirs(os.path.join(self.dir, sub), mode=0o700, exist_ok=True)
        os.chmod(self.dir, 0o700)
        munge = os.path.join(self.dir, "munge")
        key = os.path.join(munge, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        self.munge_socket = os.path.join(munge, "munge.socket")
        log = os.path.join(self.dir, "log")
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=dtftest
SlurmctldHost={self.node}
SlurmUser=root
SlurmdUser=root
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
StateSaveLocation={self.dir}/state
SlurmdSpoolDir={self.dir}/spool
SlurmctldPidFile={self.dir}/slurmctld.pid
SlurmdPidFile={self.dir}/slurmd.pid
SlurmctldLogFile={log}/slurmctld.log
SlurmdLogFile={log}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={self.node} CPUs={CPUS} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:{OVERSUBSCRIBE}
""")
        env = self.env()
        try:
            self._daemon(["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={self.munge_socket}",
                          f"--pid-file={munge}/munged.pid", f"--log-file={log}/munged.log",
                          f"--seed-file={munge}/munged.seed"], env, f"{log}/munged.out")
            if not self._wait(lambda: os.path.exists(self.munge_socket)):
                return "munged did not create its socket" + self._log("munged.out") + self._log("munged.log")
            self._daemon(["slurmctld", "-D", "-i", "-f", self.conf], env, f"{log}/slurmctld.out")
            self._daemon(["slurmd", "-D", "-f", self.conf], env, f"{log}/slurmd.out")
            if not self._wait(self._idle):
                return ("the node did not become idle within %g s" % START_TIMEOUT + self._log("slurmctld.log") +
                        self._log("slurmd.log") + self._log("slurmctld.out") + self._log("slurmd.out"))
        except OSError as e:
            return f"cannot start the Slurm daemons: {e}"
        return None

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def _daemon(self, cmd, env, out):
        with open(out, "w") as f:
            self.procs.append(subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, start_new_session=True))

    def _wait(self, ready):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                return False
            if ready():
                return True
            time.sleep(0.2)
        return False

    def _idle(self):
        p = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], env=self.env(), capture_output=True, text=True)
        return p.returncode == 0 and p.stdout.strip() in ("idle", "mix", "alloc")

    def _log(self, name):
        try:
            with open(os.path.join(self.dir, "log", name), errors="replace") as f:
                lines = f.read().splitlines()[-8:]
        except OSError:
            return ""
        return f"\n--- {name} (last lines):\n" + "\n".join(lines)
