#!/usr/bin/env python3
"""Tests of the dtfrun launcher (registered as ctest `launcher.<case>`).

    test_dtfrun.py --dtfrun PATH [--peer PATH] CASE

Each case writes small shell-script components into a private directory whose name contains a
random marker; every process a test starts (mpirun, the scripts, their `sleep 60.<marker>`)
carries the marker in its command line, so leftovers are found by scanning /proc. dtfrun runs
with an environment stripped of the Open MPI settings the ctest environment provides, so that
what dtfrun sets up itself is what gets tested.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DTFRUN = None
PEER = None
RUN_LIMIT = 45.0  # seconds; the ctest TIMEOUT is 60


class TestFailure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise TestFailure(message)


class Workspace:
    """Private directory with a random marker, component scripts, and dtfrun runs."""

    def __init__(self):
        self.marker = "%09d" % random.randrange(10 ** 9)
        self.dir = tempfile.mkdtemp(prefix="dtfrun-test-%s-" % self.marker)
        self.sleep = "sleep 60.%s" % self.marker  # unique command line for leftover checks

    def script(self, name, body):
        """Write an executable /bin/sh component; returns its path."""
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\nD=%s\n%s\n" % (self.dir, body.strip()))
        os.chmod(path, 0o755)
        return path

    def sleeper(self, name="sleeper"):
        """Component that records that it started, then sleeps 60 s."""
        return self.script(name + ".sh", """
echo "started rank $OMPI_COMM_WORLD_RANK"
touch "$D/started.%s.$OMPI_COMM_WORLD_RANK"
%s
echo "sleeper was not stopped"
""" % (name, self.sleep))

    def wait_for_start_snippet(self, name="sleeper"):
        """Shell lines that wait (at most 10 s) until component `name`'s rank 0 has started."""
        return """
i=0
while [ ! -e "$D/started.%s.0" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
""" % name

    def wait_for_file(self, name, limit=15.0):
        path = os.path.join(self.dir, name)
        deadline = time.monotonic() + limit
        while not os.path.exists(path):
            check(time.monotonic() < deadline, "%s did not appear within %g s" % (path, limit))
            time.sleep(0.05)

    def leftovers(self, extra=None):
        return processes_matching(extra or self.marker)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def clean_env(**extra):
    """The caller's environment without the Open MPI/dtf settings dtfrun is expected to provide."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DTF_") and k not in (
               "OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
               "OMPI_MCA_oob_tcp_if_include", "OMPI_MCA_btl_tcp_if_include",
               "OMPI_MCA_rmaps_base_oversubscribe", "OMPI_MCA_hwloc_base_binding_policy")}
    env.update(extra)
    return env


def processes_matching(text):
    """(pid, cmdline) of live processes other than this one whose command line contains text."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if text in cmdline:  # zombies have an empty cmdline and never match
            found.append((int(entry), cmdline))
    return found


def name_servers_of(ws):
    """ompi-server processes started by this workspace's dtfrun runs: those with its marker in their
    environment (DTFTEST_RUN, see clean_env; other tests may run name servers meanwhile)."""
    tag = ("DTFTEST_RUN=" + ws.marker).encode()
    found = []
    for pid, cmd in processes_matching("ompi-server"):
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                if os.path.basename(cmd.split()[0]) == "ompi-server" and tag in f.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return found


class Result:
    def __init__(self, rc, out, err, elapsed):
        self.rc, self.out, self.err, self.elapsed = rc, out, err, elapsed

    def __str__(self):
        return "exit status %s after %.1f s\n--- stdout ---\n%s--- stderr ---\n%s" % (
            self.rc, self.elapsed, self.out, self.err)


def run_dtfrun(args, env=None, cwd=None):
    """Run dtfrun to completion (bounded); returns a Result."""
    start = time.monotonic()
    proc = subprocess.Popen([DTFRUN] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env or clean_env(), cwd=cwd,
                            universal_newlines=True)
    try:
        out, err = proc.communicate(timeout=RUN_LIMIT)
    except subprocess.TimeoutExpired:
        proc.terminate()
        out, err = proc.communicate()
        raise TestFailure("dtfrun did not finish within %g s\n%s"
                          % (RUN_LIMIT, Result(None, out, err, RUN_LIMIT)))
    return Result(proc.returncode, out, err, time.monotonic() - start)


def lines_of(text, prefix):
    return [line[len(prefix):] for line in text.splitlines() if line.startswith(prefix)]


def expect_no_leftovers(ws, result):
    left = ws.leftovers()
    check(not left, "processes left after dtfrun exited: %s\n%s" % (left, result))


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------

def case_two_ok(ws):
    """Components succeed; every line is prefixed (partial last lines too); ranks and sizes are
    right with more ranks than cores."""
    body = """
echo "%s rank=$OMPI_COMM_WORLD_RANK size=$OMPI_COMM_WORLD_SIZE"
echo "%s stderr rank=$OMPI_COMM_WORLD_RANK" >&2
"""
    a = ws.script("alpha.sh", body % ("alpha", "alpha"))
    b = ws.script("beta.sh", body % ("beta", "beta"))
    # mpirun itself joins a rank's unterminated line with the next rank's output, so the
    # partial-last-line check uses a one-rank component.
    c = ws.script("gamma.sh", "echo gamma line; printf partial-gamma; printf partial-err >&2")
    r = run_dtfrun(["-n", "3", a, ":", "-n", "4", b, ":", "-n", "1", c])
    check(r.rc == 0, "expected exit 0\n%s" % r)
    for line in r.out.splitlines():
        check(re.match(r"^\[(alpha|beta|gamma)\.sh\] ", line), "unprefixed line %r\n%s" % (line, r))
    for line in r.err.splitlines():
        check(re.match(r"^\[(alpha|beta|gamma)\.sh\] ", line), "unprefixed line %r\n%s" % (line, r))
    for name, n in (("alpha", 3), ("beta", 4)):
        got = sorted(lines_of(r.out, "[%s.sh] %s rank=" % (name, name)))
        want = sorted("%d size=%d" % (i, n) for i in range(n))
        check(got == want, "%s: expected ranks %s, got %s\n%s" % (name, want, got, r))
        errs = sorted(lines_of(r.err, "[%s.sh] %s stderr rank=" % (name, name)))
        check(errs == [str(i) for i in range(n)], "%s: stderr lines %s\n%s" % (name, errs, r))
    check("[gamma.sh] partial-gamma" in r.out.splitlines(), "partial stdout line missing\n%s" % r)
    check("[gamma.sh] partial-err" in r.err.splitlines(), "partial stderr line missing\n%s" % r)
    check("summary" not in r.err, "summary printed without -v on success\n%s" % r)
    expect_no_leftovers(ws, r)


def case_names_verbose(ws):
    """Default names are made unique; --mpi-args reach mpirun; -v prints the mpirun commands and
    a summary."""
    s = ws.script("same.sh", 'echo "hello from $OMPI_COMM_WORLD_RANK${GREETING:+ $GREETING}"')
    r = run_dtfrun(["-v", "-n", "1", s, ":", "-n", "1", s, ":", "--name", "third", "-np", "2",
                    "--mpi-args", "-x GREETING='hi there'", s])
    check(r.rc == 0, "expected exit 0\n%s" % r)
    for prefix, ranks in (("[same.sh.1] ", ["0"]), ("[same.sh.2] ", ["0"]),
                          ("[third] ", ["0 hi there", "1 hi there"])):
        got = sorted(lines_of(r.out, prefix + "hello from "))
        check(got == ranks, "%s: expected ranks %s, got %s\n%s" % (prefix, ranks, got, r))
    launches = [l for l in r.err.splitlines() if l.startswith("dtfrun: launching ")]
    check(len(launches) == 3, "expected 3 'launching' lines\n%s" % r)
    for l in launches:
        for opt in ("--ompi-server file:", "--bind-to none", "--oversubscribe"):
            check(opt in l, "'%s' missing in %r\n%s" % (opt, l, r))
    check(re.search(r"dtfrun:\s+third\s+2 ranks\s+exited with status 0", r.err),
          "summary line for 'third' missing\n%s" % r)


def case_config_names(ws):
    """With the config known (-c), every component is named by its comp_name: one without --name
    after the comp_name its executable's name is or contains; a --name that is not a comp_name, or
    an executable that names no comp_name (or two), is refused before anything is launched."""
    ini = os.path.join(ws.dir, "names.ini")
    with open(ini, "w") as f:
        f.write('[INFO]\nncomp=2\ncomp_name="model"\ncomp_name="assim"\n')
    greet = 'echo "hello from $OMPI_COMM_WORLD_RANK"; touch "$D/launched"'
    model, assim, other = (ws.script(n, greet) for n in ("model_run.sh", "assim.sh", "other.sh"))
    r = run_dtfrun(["-c", ini, "-n", "1", model, ":", "-n", "1", assim])
    check(r.rc == 0, "expected exit 0\n%s" % r)
    for prefix in ("[model] ", "[assim] "):
        check(lines_of(r.out, prefix + "hello from ") == ["0"], "expected output labelled %r\n%s" % (prefix, r))
    os.remove(os.path.join(ws.dir, "launched"))
    where = "(comp_name= gives 'model', 'assim')"
    for args, expected in (
            (["--name", "modl", "-n", "1", model, ":", "-n", "1", assim],
             "component 'modl': --name 'modl' is not a comp_name of %s %s; did you mean 'model'?" % (ini, where)),
            (["-n", "1", model, ":", "-n", "1", other],
             "component 2 (%s): which comp_name of %s %s is it? Give it --name NAME" % (other, ini, where)),
            (["--name", "model", "-n", "1", model, ":", "-n", "1", model],
             "component 2 (%s): which comp_name" % model)):
        r = run_dtfrun(["-c", ini] + args)
        check(r.rc == 2 and expected in r.err, "dtfrun %s: expected exit 2 and %r\n%s" % (args, expected, r))
        check(not os.path.exists(os.path.join(ws.dir, "launched")),
              "dtfrun %s launched a component despite the error\n%s" % (args, r))


def case_not_started(ws):
    """A program mpirun cannot start (here a bad interpreter line): mpirun's status (131 or 132) is not
    taken for a rank killed by a signal."""
    bad = os.path.join(ws.dir, "bad.sh")
    with open(bad, "w") as f:
        f.write("#!/nonexistent/interpreter\n")
    os.chmod(bad, 0o755)
    r = run_dtfrun(["-n", "1", bad])
    check(r.rc != 0, "expected a failure\n%s" % r)
    check("(mpirun could not start the program: see its message above)" in r.err, "no 'could not start'\n%s" % r)
    check("killed by signal" not in r.err, "mpirun's status taken for a signal\n%s" % r)


def case_fail_status(ws):
    """A component exits 3 while another sleeps: dtfrun stops it and exits 3 within seconds."""
    sleeper = ws.sleeper()
    failer = ws.script("failer.sh", ws.wait_for_start_snippet() + """
echo "failing now"
exit 3
""")
    r = run_dtfrun(["--name", "failer", "-n", "1", failer, ":", "--name", "sleeper", "-n", "2",
                    sleeper])
    check(r.rc == 3, "expected exit status 3\n%s" % r)
    check(r.elapsed < 15, "took %.1f s to stop\n%s" % (r.elapsed, r))
    check("[sleeper] started rank 0" in r.out, "sleeper never started\n%s" % r)
    check("dtfrun: component 'failer' exited with status 3" in r.err,
          "failure not reported\n%s" % r)
    check("sleeper was not stopped" not in r.out, "sleeper ran to the end\n%s" % r)
    check(re.search(r"sleeper\s+2 ranks\s+stopped by dtfrun", r.err), "no summary\n%s" % r)
    expect_no_leftovers(ws, r)


def case_keep_going(ws):
    """--keep-going: a component exits 3; the other is told (DTF_LOST_DIR) and runs to its end;
    dtfrun exits 3, its summary showing both."""
    survivor = ws.script("survivor.sh", """
touch "$D/started.survivor.$OMPI_COMM_WORLD_RANK"
i=0
while [ ! -e "$DTF_LOST_DIR/failer" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
echo "rank $OMPI_COMM_WORLD_RANK told: $(cat "$DTF_LOST_DIR/failer" 2>/dev/null)"
sleep 1
echo "rank $OMPI_COMM_WORLD_RANK finished"
""")
    failer = ws.script("failer.sh", ws.wait_for_start_snippet("survivor") + "exit 3")
    r = run_dtfrun(["--keep-going", "--name", "failer", "-n", "1", failer, ":", "--name", "survivor", "-n", "2",
                    survivor])
    check(r.rc == 3, "expected exit status 3\n%s" % r)
    check("dtfrun: component 'failer' exited with status 3; the others go on (--keep-going)" in r.err,
          "failure not reported\n%s" % r)
    for rank in (0, 1):
        check("[survivor] rank %d told: exited with status 3" % rank in r.out, "survivor not told\n%s" % r)
        check("[survivor] rank %d finished" % rank in r.out, "survivor stopped\n%s" % r)
    check(re.search(r"survivor\s+2 ranks\s+exited with status 0", r.err), "no summary\n%s" % r)
    expect_no_leftovers(ws, r)


def case_rank_signal(ws):
    """A rank kills itself with SIGKILL: reported as a failure, the other component stopped."""
    sleeper = ws.sleeper()
    crasher = ws.script("crasher.sh", ws.wait_for_start_snippet() + 'kill -KILL $$')
    r = run_dtfrun(["--name", "crasher", "-n", "1", crasher, ":", "--name", "sleeper", "-n", "1",
                    sleeper])
    check(r.rc != 0, "expected a non-zero exit\n%s" % r)
    check(r.elapsed < 15, "took %.1f s\n%s" % (r.elapsed, r))
    check(re.search(r"component 'crasher' .*signal 9", r.err), "signal not reported\n%s" % r)
    expect_no_leftovers(ws, r)


def case_mpirun_killed(ws):
    """A component's mpirun is SIGKILLed: dtfrun reports the signal, exits 137, and kills the
    component's orphaned ranks as well as the other component."""
    victim = ws.sleeper("victim")
    other = ws.sleeper("other")
    start = time.monotonic()
    proc = subprocess.Popen([DTFRUN, "--name", "victim", "-n", "2", victim, ":",
                             "--name", "other", "-n", "1", other],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=clean_env(), universal_newlines=True)
    try:
        for name in ("started.victim.0", "started.victim.1", "started.other.0"):
            ws.wait_for_file(name)
        mpiruns = [pid for pid, cmd in processes_matching(victim)
                   if os.path.basename(cmd.split()[0]) == "mpirun"]
        check(len(mpiruns) == 1, "expected one mpirun for 'victim', found %s" % mpiruns)
        os.kill(mpiruns[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=RUN_LIMIT)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.communicate()
    r = Result(proc.returncode, out, err, time.monotonic() - start)
    check(r.rc == 128 + 9, "expected exit status 137\n%s" % r)
    check("component 'victim' was killed by signal 9 (SIGKILL)" in r.err,
          "signal not reported\n%s" % r)
    expect_no_leftovers(ws, r)


def case_walltime(ws):
    """--walltime: everything is stopped after the limit, exit 124, still-running names listed."""
    a = ws.sleeper("a")
    b = ws.sleeper("b")
    r = run_dtfrun(["--walltime", "2", "--name", "a", "-n", "1", a, ":", "--name", "b",
                    "-n", "2", b])
    check(r.rc == 124, "expected exit status 124\n%s" % r)
    check(2.0 <= r.elapsed < 15, "elapsed %.1f s\n%s" % (r.elapsed, r))
    check(re.search(r"walltime of 2 s expired; still running: 'a', 'b'", r.err),
          "walltime message missing\n%s" % r)
    expect_no_leftovers(ws, r)


def case_sigterm(ws):
    """SIGTERM to dtfrun stops all components and the name server; exit 143."""
    comp = ws.script("comp.sh", """
echo "uri $OMPI_MCA_pmix_server_uri"
touch "$D/started.comp.$OMPI_COMM_WORLD_RANK"
%s
""" % ws.sleep)
    start = time.monotonic()
    proc = subprocess.Popen([DTFRUN, "-n", "2", comp, ":", "-n", "1", ws.sleeper()],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=clean_env(), universal_newlines=True)
    try:
        for name in ("started.comp.0", "started.comp.1", "started.sleeper.0"):
            ws.wait_for_file(name)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=RUN_LIMIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    r = Result(proc.returncode, out, err, time.monotonic() - start)
    check(r.rc == 128 + signal.SIGTERM, "expected exit status 143\n%s" % r)
    check("received SIGTERM, stopping all components" in r.err, "no message\n%s" % r)
    expect_no_leftovers(ws, r)
    uris = lines_of(r.out, "[comp.sh] uri file:")
    check(uris, "no server uri printed\n%s" % r)
    check(not processes_matching(uris[0]), "ompi-server still running\n%s" % r)
    check(not os.path.exists(os.path.dirname(uris[0])), "dtfrun's temp dir remains\n%s" % r)


def case_dtfrun_killed(ws):
    """dtfrun itself is SIGKILLed: its watchdog stops the components and the name server and
    removes the temporary directory."""
    # (the server's URI goes to a file: what the components print may not have been passed on when
    # dtfrun is killed)
    comp = ws.script("comp.sh", """
echo "uri $OMPI_MCA_pmix_server_uri" > "$D/uri.$OMPI_COMM_WORLD_RANK"
touch "$D/started.comp.$OMPI_COMM_WORLD_RANK"
%s
""" % ws.sleep)
    proc = subprocess.Popen([DTFRUN, "--grace", "1", "-n", "2", comp, ":", "-n", "1",
                             ws.sleeper()],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=clean_env(), universal_newlines=True)
    try:
        for name in ("started.comp.0", "started.comp.1", "started.sleeper.0"):
            ws.wait_for_file(name)
        proc.kill()
        out, err = proc.communicate(timeout=RUN_LIMIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    r = Result(proc.returncode, out, err, 0)
    with open(os.path.join(ws.dir, "uri.0")) as f:
        uris = lines_of(f.read(), "uri file:")
    check(uris, "no server uri written\n%s" % r)
    deadline = time.monotonic() + 15
    while ws.leftovers() or processes_matching(uris[0]) or os.path.exists(os.path.dirname(uris[0])):
        check(time.monotonic() < deadline,
              "15 s after dtfrun was killed: left %s, server %s, temp dir exists: %s\n%s"
              % (ws.leftovers(), processes_matching(uris[0]),
                 os.path.exists(os.path.dirname(uris[0])), r))
        time.sleep(0.1)


def case_other_mpi(ws):
    """A launcher that is not Open MPI (here a fake MPICH mpiexec) gets no name server and no
    Open MPI options; the DTF_* environment still arrives."""
    fake = ws.script("fake-mpiexec", """
if [ "$1" = "--version" ]; then echo "HYDRA build details:"; echo "    Version: 4.0.2"; exit 0; fi
[ "$1" = "-n" ] || { echo "fake-mpiexec: expected -n first, got: $*" >&2; exit 99; }
n=$2; shift 2
i=0; pids=""
while [ $i -lt $n ]; do PMI_RANK=$i PMI_SIZE=$n "$@" & pids="$pids $!"; i=$((i+1)); done
rc=0; for p in $pids; do wait $p || rc=$?; done
exit $rc
""")
    show = ws.script("show.sh", 'echo "rank $PMI_RANK/$PMI_SIZE timeout=$DTF_TIMEOUT '
                                'server=$OMPI_MCA_pmix_server_uri"')
    r = run_dtfrun(["-v", "--mpirun", fake, "--timeout", "7", "-n", "2", show, ":",
                    "--name", "b", "-n", "1", show])
    check(r.rc == 0, "expected exit 0\n%s" % r)
    for line in ("[show.sh] rank 0/2 timeout=7 server=", "[show.sh] rank 1/2 timeout=7 server=",
                 "[b] rank 0/1 timeout=7 server="):
        check(line in r.out.splitlines(), "expected %r\n%s" % (line, r))
    check("not Open MPI: no name server started" in r.err, "no notice with -v\n%s" % r)
    check("--bind-to" not in r.err and "ompi-server" not in r.err,
          "Open MPI options given to another MPI\n%s" % r)


def case_usage_errors(ws):
    """Command-line errors exit 2 before anything is launched."""
    starter = ws.script("starter.sh", 'touch "$D/launched"')
    missing = os.path.join(ws.dir, "does-not-exist")
    cases = [
        (["-n", "1", starter, ":", "-n", "1", missing],
         "component 'does-not-exist': executable '%s' not found" % missing),
        (["-n", "1", starter, ":", "-n", "1", "no-such-program-%s" % ws.marker],
         "not found on PATH"),
        (["--bogus", "-n", "1", starter], "unknown option '--bogus'"),
        (["-n", "1", starter, ":", "--name", "x", starter], "component 'x': missing -n N"),
        (["-n", "zero", starter], "expected a positive number of ranks"),
        (["-c", os.path.join(ws.dir, "missing.ini"), "-n", "1", starter],
         "config file '%s' not found" % os.path.join(ws.dir, "missing.ini")),
        (["-n", "1", "-v", starter], "global options must come before the first component"),
        (["-n", "1", starter, ":"], "nothing after the last ':'"),
        (["--timeout", "soon", "-n", "1", starter], "--timeout 'soon'"),
        (["--name", "x", "-n", "1", starter, ":", "--name", "x", "-n", "1", starter],
         "both named 'x'"),
        ([], "no component given"),
        (["--preload", missing, "--name", "x", "-n", "1", starter], "--preload '%s': no such file" % missing),
        (["--preload", starter, "-n", "1", starter], "--preload: component 1 needs --name"),
        (["--mpmd", "--keep-going", "-n", "1", starter], "--keep-going needs separately launched components"),
    ]
    for args, expected in cases:
        r = run_dtfrun(args)
        check(r.rc == 2, "dtfrun %s: expected exit status 2\n%s" % (args, r))
        check(expected in r.err, "dtfrun %s: expected %r in stderr\n%s" % (args, expected, r))
        check("Try 'dtfrun --help'" in r.err, "no --help hint\n%s" % r)
        check(not os.path.exists(os.path.join(ws.dir, "launched")),
              "dtfrun %s launched a component despite the error\n%s" % (args, r))
    r = run_dtfrun(["--help"])
    check(r.rc == 0 and "Usage:" in r.out and "--walltime" in r.out, "--help\n%s" % r)


def case_env(ws):
    """DTF_INI_FILE (absolute), DTF_TIMEOUT and the Open MPI settings reach every rank; a user's
    own setting is kept."""
    ini = os.path.join(ws.dir, "conf", "dtf.ini")
    os.makedirs(os.path.dirname(ini))
    with open(ini, "w") as f:
        f.write("[info]\n")
    show = ws.script("show.sh", """
for v in DTF_INI_FILE DTF_TIMEOUT DTF_VERBOSE_LEVEL OMPI_MCA_oob_tcp_if_include \\
         OMPI_MCA_btl_tcp_if_include; do
  eval "echo \\"$OMPI_COMM_WORLD_RANK $v=\\$$v\\""
done
""")
    env = clean_env(DTF_VERBOSE_LEVEL="2", OMPI_MCA_btl_tcp_if_include="127.0.0.0/8")
    r = run_dtfrun(["-v", "-c", "conf/dtf.ini", "--timeout", "42", "-n", "2", show, ":",
                    "--name", "other", "-n", "1", show], env=env, cwd=ws.dir)
    check(r.rc == 0, "expected exit 0\n%s" % r)
    want = {"DTF_INI_FILE": ini, "DTF_TIMEOUT": "42", "DTF_VERBOSE_LEVEL": "2",
            "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_MCA_btl_tcp_if_include": "127.0.0.0/8"}
    for prefix, ranks in (("[show.sh] ", 2), ("[other] ", 1)):
        for rank in range(ranks):
            for var, value in want.items():
                line = "%s%d %s=%s" % (prefix, rank, var, value)
                check(line in r.out.splitlines(), "expected %r\n%s" % (line, r))
    for var in ("DTF_INI_FILE", "DTF_TIMEOUT", "DTF_VERBOSE_LEVEL"):
        check("-x %s" % var in r.err, "mpirun not given '-x %s'\n%s" % (var, r))


def case_preload(ws):
    """--preload LIB: every rank of every component gets LD_PRELOAD=LIB and DTF_COMPONENT=<its name>
    (the zero-change mode; coupled.zero-change.* runs it with libdtf)."""
    libc = re.search(r"=> (/\S*libc\.so\S*)", subprocess.run(["ldd", "/bin/sh"], capture_output=True,
                                                              text=True).stdout).group(1)  # harmless to preload
    show = ws.script("show.sh", 'echo "$OMPI_COMM_WORLD_RANK DTF_COMPONENT=$DTF_COMPONENT LD_PRELOAD=$LD_PRELOAD"')
    r = run_dtfrun(["-v", "--preload", libc, "--name", "model", "-n", "2", show, ":", "--name", "assim", "-n", "1",
                    show], env=clean_env(), cwd=ws.dir)
    check(r.rc == 0, "expected exit 0\n%s" % r)
    for name, ranks in (("model", 2), ("assim", 1)):
        for rank in range(ranks):
            line = "[%s] %d DTF_COMPONENT=%s LD_PRELOAD=%s" % (name, rank, name, libc)
            check(line in r.out.splitlines(), "expected %r\n%s" % (line, r))


def case_mpmd(ws):
    """--mpmd: one mpirun, one application context per component (one MPI_COMM_WORLD of all their
    ranks), no name server; each line is prefixed with its rank's component, and DTF_MPMD=1,
    DTF_COMPONENT (with --preload) and the DTF_* variables reach every context."""
    libc = re.search(r"=> (/\S*libc\.so\S*)", subprocess.run(["ldd", "/bin/sh"], capture_output=True,
                                                              text=True).stdout).group(1)
    show = ws.script("show.sh", 'echo "$OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE DTF_MPMD=$DTF_MPMD '
                                'DTF_TIMEOUT=$DTF_TIMEOUT DTF_COMPONENT=$DTF_COMPONENT"; echo err >&2')
    r = run_dtfrun(["-v", "--mpmd", "--timeout", "42", "--preload", libc, "--name", "model", "-n", "2", show, ":",
                    "--name", "assim", "-n", "1", show], env=clean_env(DTFTEST_RUN=ws.marker), cwd=ws.dir)
    check(r.rc == 0, "expected exit 0\n%s" % r)
    for name, ranks in (("model", (0, 1)), ("assim", (2,))):
        for rank in ranks:
            line = "[%s] %d of 3 DTF_MPMD=1 DTF_TIMEOUT=42 DTF_COMPONENT=%s" % (name, rank, name)
            check(line in r.out.splitlines(), "expected %r\n%s" % (line, r))
    check(sorted(r.err.splitlines()).count("[model] err") == 2 and "[assim] err" in r.err.splitlines(),
          "stderr lines not prefixed by component\n%s" % r)
    launches = [l for l in r.err.splitlines() if l.startswith("dtfrun: launching ")]
    check(len(launches) == 1 and " : " in launches[0] and "--ompi-server" not in launches[0],
          "expected one mpirun with two application contexts and no name server\n%s" % r)
    check(not name_servers_of(ws), "a name server is running")


def case_open_mpi_5(ws):
    """Open MPI 5 (here a fake mpirun that says it is 5.0.11 and runs the real one) has no name server
    and its separately launched jobs never connect: dtfrun starts the components in one MPMD launch
    instead, says so, and strips the space Open MPI 5 puts after --tag-output's tag."""
    fake = ws.script("mpirun", """
if [ "$1" = "--version" ]; then echo "mpirun (Open MPI) 5.0.11"; exit 0; fi
exec mpirun "$@"
""")
    # Open MPI 4.1 tags "[1,0]<stdout>:x", Open MPI 5 "[1,0]<stdout>: x": the component adds the space.
    show = ws.script("show.sh", 'echo " $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE DTF_MPMD=$DTF_MPMD"')
    r = run_dtfrun(["--mpirun", fake, "--name", "model", "-n", "2", show, ":", "--name", "assim", "-n", "1", show],
                   env=clean_env(DTFTEST_RUN=ws.marker), cwd=ws.dir)
    check(r.rc == 0, "expected exit 0\n%s" % r)
    for name, rank in (("model", 0), ("model", 1), ("assim", 2)):
        line = "[%s] %d of 3 DTF_MPMD=1" % (name, rank)
        check(line in r.out.splitlines(), "expected %r\n%s" % (line, r))
    check("mpirun (Open MPI) 5.0.11: separately launched jobs cannot connect (no ompi-server); the components "
          "run in one MPMD launch instead (as with --mpmd)" in r.err, "dtfrun must say which launch it chose\n%s" % r)
    check(not name_servers_of(ws), "a name server is running")


def case_srun(ws):
    """Inside a Slurm allocation (SLURM_JOB_ID), or with --launcher srun, one `srun --multi-prog` starts
    all components (here a fake srun on PATH that runs the conf's lines and labels each task's lines as
    --label does; coupled.slurm.* run the real one): each program gets DTF_APPNUM, its number in the
    launch, and DTF_MPMD=1, its arguments as given; each line is prefixed with its task's component;
    --mpi=pmix for Open MPI unless SLURM_MPI_TYPE says otherwise; --mpi-args is refused."""
    ws.script("srun", """
echo "$*" > "$D/srun.args"
conf=
while [ $# -gt 0 ]; do [ "$1" = --multi-prog ] && conf=$2; shift; done
pids=
while read range prog; do
  r=${range%-*}
  while [ $r -le ${range#*-} ]; do (SLURM_PROCID=$r "$prog" 2>&1 | sed "s/^/$r: /") & pids="$pids $!"; r=$((r+1)); done
done < "$conf"
rc=0; for p in $pids; do wait $p || rc=$?; done
exit $rc
""")
    show = ws.script("show.sh", 'echo "task $SLURM_PROCID DTF_APPNUM=$DTF_APPNUM DTF_MPMD=$DTF_MPMD args=[$1] [$2]"')
    path = ws.dir + os.pathsep + os.environ.get("PATH", "")
    comps = ["--name", "model", "-n", "2", show, "a b", "c", ":", "--name", "assim", "-n", "1", show, "d"]
    for env, launcher, mpi in ((clean_env(PATH=path, SLURM_JOB_ID="77"), [], "--mpi=pmix"),
                               (clean_env(PATH=path, SLURM_MPI_TYPE="pmi2"), ["--launcher", "srun"], None)):
        r = run_dtfrun(["-v"] + launcher + comps, env=env, cwd=ws.dir)
        check(r.rc == 0, "expected exit 0\n%s" % r)
        for line in ("[model] task 0 DTF_APPNUM=0 DTF_MPMD=1 args=[a b] [c]",
                     "[model] task 1 DTF_APPNUM=0 DTF_MPMD=1 args=[a b] [c]",
                     "[assim] task 2 DTF_APPNUM=1 DTF_MPMD=1 args=[d] []"):
            check(line in r.out.splitlines(), "expected %r\n%s" % (line, r))
        with open(os.path.join(ws.dir, "srun.args")) as f:
            args = f.read().split()
        check(args[:5] == ["--overcommit", "--kill-on-bad-exit=1", "--label", "-n", "3"] and
              ("--mpi=pmix" in args) == (mpi is not None) and args[-2] == "--multi-prog",
              "srun's options: %s\n%s" % (args, r))
        why = "inside Slurm job 77" if not launcher else "--launcher"
        check(re.search(r"dtfrun: launcher: \S*srun \(%s\): one launch, srun --multi-prog" % why, r.err),
              "-v must say which launcher and why\n%s" % r)
    r = run_dtfrun(["--name", "model", "-n", "1", "--mpi-args", "--foo", show, ":", "-n", "1", show],
                   env=clean_env(PATH=path, SLURM_JOB_ID="77"), cwd=ws.dir)
    check(r.rc == 2 and "component 'model': --mpi-args: srun starts all components in one step" in r.err,
          "--mpi-args under srun must be refused\n%s" % r)
    r = run_dtfrun(["--launcher", "qsub", "-n", "1", show])
    check(r.rc == 2 and "--launcher 'qsub': expected mpirun or srun" in r.err, "a bad --launcher must be refused\n%s" % r)


def case_mpmd_fail(ws):
    """--mpmd: a component exits 3 while the other sleeps: the whole launch ends within seconds, with
    a non-zero status and the launch named."""
    sleeper = ws.sleeper()
    failer = ws.script("failer.sh", ws.wait_for_start_snippet() + """
echo "failing now"
exit 3
""")
    r = run_dtfrun(["--mpmd", "--name", "sleeper", "-n", "2", sleeper, ":", "--name", "failer", "-n", "1", failer])
    check(r.rc != 0, "expected a non-zero exit status\n%s" % r)
    check(r.elapsed < 15, "took %.1f s to stop\n%s" % (r.elapsed, r))
    check("[failer] failing now" in r.out, "the failing component's output is missing\n%s" % r)
    check("dtfrun: component 'sleeper+failer' exited with status" in r.err, "failure not reported\n%s" % r)
    expect_no_leftovers(ws, r)


def case_ompi_server(ws):
    """ompi-server runs while the components run, every mpirun gets --ompi-server, and the
    server is gone afterwards."""
    comp = ws.script("comp.sh", """
echo "uri $OMPI_MCA_pmix_server_uri"
[ "$OMPI_COMM_WORLD_RANK" = 0 ] && echo "content $(cat "${OMPI_MCA_pmix_server_uri#file:}")"
i=0
while [ ! -e "$D/go" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i+1)); done
[ -e "$D/go" ]
""")
    start = time.monotonic()
    proc = subprocess.Popen([DTFRUN, "--name", "one", "-n", "1", comp, ":", "--name", "two",
                             "-n", "2", comp],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=clean_env(), universal_newlines=True)
    try:
        uris = {}
        while sum(len(names) for names in uris.values()) < 3:
            line = proc.stdout.readline()
            check(line, "dtfrun output ended before all ranks printed their server URI "
                        "(got %s)" % uris)
            m = re.match(r"^\[(one|two)\] uri (.*)$", line.rstrip("\n"))
            if m:
                uris.setdefault(m.group(2), []).append(m.group(1))
        check(len(uris) == 1, "components saw different server URIs: %s" % uris)
        uri = next(iter(uris))
        check(uri.startswith("file:/"), "unexpected OMPI_MCA_pmix_server_uri %r" % uri)
        path = uri[len("file:"):]
        servers = [cmd for _, cmd in processes_matching(path)
                   if os.path.basename(cmd.split()[0]) == "ompi-server"]
        check(servers, "no ompi-server process with %s running" % path)
        with open(os.path.join(ws.dir, "go"), "w"):
            pass
        out, err = proc.communicate(timeout=RUN_LIMIT)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.communicate()
    r = Result(proc.returncode, out, err, time.monotonic() - start)
    check(r.rc == 0, "expected exit 0\n%s" % r)
    check(not processes_matching(path), "ompi-server still running after dtfrun exited\n%s" % r)
    check(not os.path.exists(os.path.dirname(path)), "dtfrun's temp dir remains\n%s" % r)
    expect_no_leftovers(ws, r)


def case_mpi_connect(ws):
    """Two MPI jobs find each other with MPI_Publish/Lookup_name and connect (accept/connect)."""
    check(PEER, "--peer PATH is required for this case")
    service = "dtfrun-test-%s" % ws.marker
    r = run_dtfrun(["--walltime", "40", "--name", "acceptor", "-n", "2", PEER, "accept", service,
                    ":", "--name", "connector", "-n", "3", PEER, "connect", service])
    check(r.rc == 0, "expected exit 0\n%s" % r)
    check("[acceptor] accept: 2 local ranks, 3 remote ranks, peer sum 3006 (expected 3006), OK"
          in r.out, "acceptor result missing\n%s" % r)
    check("[connector] connect: 3 local ranks, 2 remote ranks, peer sum 3 (expected 3), OK"
          in r.out, "connector result missing\n%s" % r)


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global DTFRUN, PEER
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtfrun", required=True)
    parser.add_argument("--peer")
    parser.add_argument("case", choices=sorted(CASES))
    args = parser.parse_args()
    DTFRUN, PEER = os.path.abspath(args.dtfrun), args.peer and os.path.abspath(args.peer)
    ws = Workspace()
    try:
        CASES[args.case](ws)
    except TestFailure as err:
        print("FAILED launcher.%s: %s" % (args.case, err))
        return 1
    finally:
        for pid, _ in processes_matching(ws.marker):  # never leave anything behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        ws.cleanup()
    print("passed launcher.%s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
