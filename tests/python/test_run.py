"""``postbox run``: ranks, environment, virtual nodes, I/O, PMI, and how a job ends.

The ranks are small Python or shell programs written into tmp_path; the
path of each (unique per test) is also the marker by which the tests look in
the process table for anything left behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PYTHON_DIR, REPO, built
from postbox import launch, launchopts, paths, pmi_server

pytestmark = pytest.mark.short


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PYTHON_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def launcher_cmd(*args) -> list:
    return [sys.executable, "-m", "postbox", "run", *map(str, args)]


def run(*args, input="", timeout=30) -> subprocess.CompletedProcess:
    return subprocess.run(launcher_cmd(*args), input=input, capture_output=True, text=True,
                          env=_env(), timeout=timeout, cwd=REPO)


def script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def processes_with(marker: str) -> list:
    """Live processes whose command line contains @marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8",
                                                                                  "replace")
        except OSError:
            continue
        if marker in cmdline and int(entry.name) != os.getpid():
            found.append((entry.name, cmdline))
    return found


def assert_nothing_left(marker: str) -> None:
    deadline = time.monotonic() + 2
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker) == []


HOST = socket.gethostname()

# ---- pure functions -----------------------------------------------------------


@pytest.mark.parametrize("size,nodes,sizes,mapping", [
    (4, 1, [4], "(vector,(0,1,4))"),
    (4, 2, [2, 2], "(vector,(0,2,2))"),
    (8, 3, [3, 3, 2], "(vector,(0,2,3),(2,1,2))"),
    (5, 5, [1] * 5, "(vector,(0,5,1))"),
])
def test_virtual_node_layout(size, nodes, sizes, mapping):
    assert pmi_server.node_sizes(size, nodes) == sizes
    assert pmi_server.process_mapping(size, nodes) == mapping
    vnodes = pmi_server.vnode_of_ranks(size, nodes)
    assert vnodes == sorted(vnodes) and [vnodes.count(n) for n in range(nodes)] == sizes


def test_wire_formats():
    assert pmi_server.parse_v1(b"cmd=put kvsname=j key=a value=x\\ y") == (
        "put", {"kvsname": "j", "key": "a", "value": "x y"})
    assert pmi_server.parse_v2(b"cmd=kvs-get;key=a;") == ("kvs-get", {"key": "a"})
    assert pmi_server.format_v1("get_result", [("rc", 0), ("value", "a b")]) == \
        b"cmd=get_result rc=0 value=a\\ b\n"
    assert pmi_server.format_v2("kvs-put-response", [("rc", 0)]) == \
        b"    26cmd=kvs-put-response;rc=0;"
    for bad in (b"put key=a", b"cmd=put junk", b"cmd=x a=\\", b"\xff", b"=1 cmd=x"):
        with pytest.raises(pmi_server.ProtocolError):
            pmi_server.parse_v1(bad)


def test_server_survives_garbage():
    sent, closed = [], []
    server = pmi_server.PmiServer("job-1", 2, 1, send=lambda r, d: sent.append((r, d)),
                                  abort=lambda *a: None, close=lambda r, why: closed.append(r))
    for junk in (b"\n", b"hello\n", b"cmd=nope\n", b"cmd=put key=a\n", b"\0\0\n",
                 b"cmd=get kvsname=job-1\n", b"cmd=barrier_in\n", b"cmd=barrier_in\n",
                 b"     5cmd=x"):
        server.feed(0, junk)
    assert all(b"rc=-1" in data for _, data in sent) and len(sent) == 8
    assert server.waiting_in_barrier() == [0]
    server.feed(1, b"x" * (pmi_server.MAX_LINE + 1))
    assert closed == [1]


@pytest.mark.parametrize("argv,message", [
    ([], "no program to run"),
    (["-n"], "-n needs a value"),
    (["-n", "0", "true"], "positive integer"),
    (["-np", "x", "true"], "positive integer"),
    (["-n", "2", "--nodes", "3", "true"], "more than the 2 ranks"),
    (["--timeout", "-1", "true"], "--timeout"),
    (["--timeout-stacks", "true"], "--timeout-stacks needs --timeout"),
    (["--timeout", "5", "--timeout-stacks=1", "true"], "--timeout-stacks takes no value"),
    (["-x", "1A=b", "true"], "-x"),
    (["-x", "PMI_RANK=3", "true"], "sets PMI_RANK itself"),
    (["--frob", "true"], "unknown option --frob"),
    (["--netns=1", "true"], "--netns takes no value"),
    (["-n", "2", "--bind-nodes", "true"], "--bind-nodes needs --nodes"),
    (["-n", "2", "--nodes", "2", "--bind-nodes=1", "true"], "--bind-nodes takes no value"),
    (["-n", "2", "--bind-to", "socket", "true"], "--bind-to wants core or none, not 'socket'"),
    (["-n", "2", "--bind-to"], "--bind-to needs a value"),
    (["-n", "2", "--nodes", "2", "--bind-nodes", "--bind-to", "core", "true"],
     "--bind-nodes and --bind-to core cannot be combined"),
    (["-n", "2", "--bind-to", "core", "--hosts", "a,b", "true"],
     "--bind-to core and --hosts cannot be combined"),
    (["-n", "2", "--netns", "--hosts", "a,b", "true"], "cannot be combined"),
    (["-n", "2", "--nodes", "2", "--rails", "2", "true"], "--rails needs --netns"),
    (["--netns", "--rails", "5", "true"], "--rails wants a number of links per node from 1 to 4"),
    (["--netns", "--rails", "x", "true"], "--rails wants a number"),
    (["-n", "2", "--nodes", "2", "--hosts", "a,b", "true"], "--nodes and --hosts"),
    (["-n", "1", "--hosts", "a,b", "true"], "more than the 1 rank"),
    (["--hosts", "a,-oProxyCommand=x", "true"], "--hosts wants host names"),
    (["--hosts", "a,,b", "true"], "--hosts wants host names"),
    (["--rsh", "ssh", "true"], "--rsh only applies with --hosts"),
    (["--hosts", "a", "--rsh", "ssh 'x", "true"], "No closing quotation"),
    (["--pmi-address", "127.0.0.1", "true"], "--pmi-address only applies with --hosts"),
    (["-x", "PMI_PORT=h:1", "true"], "sets PMI_PORT itself"),
])
def test_usage_errors(argv, message):
    with pytest.raises(launchopts.UsageError, match=re.escape(message)):
        launch.parse_args(argv)


def test_options_stop_at_the_program():
    opts = launch.parse_args(["-np", "3", "--nodes=2", "-x", "A=1 2", "prog", "-n", "5"])
    assert (opts.size, opts.nodes, opts.env, opts.program, opts.args) == (
        3, 2, [("A", "1 2")], "prog", ["-n", "5"])
    assert launch.parse_args(["--", "-weird"]).program == "-weird"
    assert launch.parse_args(["--help"]) is None


# ---- the command -------------------------------------------------------------


def test_usage_error_exits_2_with_a_message():
    result = run("--hosts", "a,b", "-n", "2", "--nodes", "2", "true")
    assert result.returncode == 2
    assert "--nodes and --hosts cannot be combined" in result.stderr
    result = run()
    assert result.returncode == 2 and "no program to run" in result.stderr


def test_help_explains_every_option():
    result = run("--help")
    assert result.returncode == 0
    for option in ("-n N", "-np", "--nodes", "--bind-nodes", "--bind-to core", "--tag-output",
                   "--timeout",
                   "-x VAR=value",
                   "--netns", "--hosts", "--rsh", "--pmi-address", "examples:"):
        assert option in result.stdout


def test_missing_program():
    result = run("-n", "2", "no-such-program-postbox")
    assert result.returncode == 127
    assert "no-such-program-postbox: command not found" in result.stderr


ENV_RANK = """\
import os, json
print(json.dumps({k: os.environ.get(k) for k in (
    "PMI_FD", "PMI_RANK", "PMI_SIZE", "POSTBOX_JOB_ID", "POSTBOX_JOB_SECRET",
    "POSTBOX_VNODE", "POSTBOX_NODE_ID", "GREETING", "FROM_HOME")}))
"""


def _rank_env(tmp_path, *args):
    prog = script(tmp_path, "env_rank.py", ENV_RANK)
    result = run(*args, sys.executable, prog)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    return {int(r["PMI_RANK"]): r for r in records}


def test_eight_ranks_get_their_environment(tmp_path):
    ranks = _rank_env(tmp_path, "-n", 8)
    assert sorted(ranks) == list(range(8))
    jobs = {r["POSTBOX_JOB_ID"] for r in ranks.values()}
    secrets = {r["POSTBOX_JOB_SECRET"] for r in ranks.values()}
    assert len(jobs) == 1 and re.fullmatch(r"[A-Za-z0-9_.-]+", jobs.pop())
    assert len(secrets) == 1 and re.fullmatch(r"[0-9a-f]{32}", secrets.pop())
    for rank, rec in ranks.items():
        assert rec["PMI_SIZE"] == "8"
        assert rec["POSTBOX_VNODE"] == rec["POSTBOX_NODE_ID"] == "0"
        assert int(rec["PMI_FD"]) > 2


def test_nodes_split_ranks_in_blocks(tmp_path):
    ranks = _rank_env(tmp_path, "-n", 4, "--nodes", 2)
    assert [ranks[r]["POSTBOX_VNODE"] for r in range(4)] == ["0", "0", "1", "1"]
    ranks = _rank_env(tmp_path, "--nodes", 3, "-np", 7)
    assert [ranks[r]["POSTBOX_NODE_ID"] for r in range(7)] == list("0001122")


def test_node_cpus_cut_the_cpus_into_runs():
    # as many nodes as CPUs or fewer: runs of consecutive CPUs, as even as they go
    assert [launchopts.node_cpus([0, 1], 2, k) for k in range(2)] == [[0], [1]]
    assert [launchopts.node_cpus([3, 1, 2, 0], 2, k) for k in range(2)] == [[0, 1], [2, 3]]
    assert [launchopts.node_cpus(range(5), 2, k) for k in range(2)] == [[0, 1], [2, 3, 4]]
    assert launchopts.node_cpus([4, 6, 8], 1, 0) == [4, 6, 8]
    # more nodes than CPUs: one each, consecutive nodes sharing it
    assert [launchopts.node_cpus([0, 1], 4, k) for k in range(4)] == [[0], [0], [1], [1]]
    assert [launchopts.node_cpus([0, 1], 3, k) for k in range(3)] == [[0], [0], [1]]
    with pytest.raises(ValueError):
        launchopts.node_cpus([], 2, 0)
    with pytest.raises(ValueError):
        launchopts.node_cpus([0, 1], 2, 2)


def test_bind_nodes_gives_each_node_its_cpus(tmp_path):
    prog = script(tmp_path, "cpus.py",
                  "import os\nprint(os.environ['PMI_RANK'], os.environ['POSTBOX_VNODE'],\n"
                  "      ','.join(map(str, sorted(os.sched_getaffinity(0)))))\n")
    allowed = sorted(os.sched_getaffinity(0))
    result = run("-n", 4, "--nodes", 2, "--bind-nodes", sys.executable, prog)
    assert result.returncode == 0, result.stderr
    cpus = {}
    for line in result.stdout.splitlines():
        rank, node, listed = line.split()
        cpus[int(rank)] = (int(node), [int(c) for c in listed.split(",")])
    assert sorted(cpus) == [0, 1, 2, 3]
    for rank, (node, got) in cpus.items():
        assert got == launchopts.node_cpus(allowed, 2, node), (rank, got)
    if len(allowed) >= 2:
        assert not set(cpus[0][1]) & set(cpus[2][1])
        assert sorted(set(cpus[0][1]) | set(cpus[2][1])) == allowed
    # without it every rank keeps the launcher's CPUs
    plain = run("-n", 2, "--nodes", 2, sys.executable, prog)
    assert all(line.split()[2] == ",".join(map(str, allowed))
               for line in plain.stdout.splitlines())


def test_rank_cpu_deals_the_cpus_out_in_turn():
    assert [launchopts.rank_cpu([0, 1], r) for r in range(5)] == [0, 1, 0, 1, 0]
    assert [launchopts.rank_cpu([7, 3, 5], r) for r in range(4)] == [3, 5, 7, 3]
    with pytest.raises(ValueError):
        launchopts.rank_cpu([], 0)
    with pytest.raises(ValueError):
        launchopts.rank_cpu([0, 1], -1)


def test_bind_to_core_gives_each_rank_one_cpu(tmp_path):
    prog = script(tmp_path, "cpus.py",
                  "import os\nprint(os.environ['PMI_RANK'],\n"
                  "      ','.join(map(str, sorted(os.sched_getaffinity(0)))),\n"
                  "      os.environ.get('POSTBOX_CPU_SHARERS', '-'))\n")
    allowed = sorted(os.sched_getaffinity(0))
    for ranks, extra in ((3, ()), (4, ("--nodes", 2))):
        result = run("-n", ranks, *extra, "--bind-to", "core", sys.executable, prog)
        assert result.returncode == 0, result.stderr
        got = {rank: (cpu, sharers) for rank, cpu, sharers in
               (line.split() for line in result.stdout.splitlines())}
        cpu_of = [launchopts.rank_cpu(allowed, r) for r in range(ranks)]
        # each rank's CPU, and how many of the ranks share it
        assert got == {str(r): (str(cpu_of[r]), str(cpu_of.count(cpu_of[r])))
                       for r in range(ranks)}
    # with --bind-nodes the ranks of a node share its CPUs
    nodes = run("-n", 4, "--nodes", 2, "--bind-nodes", sys.executable, prog)
    assert nodes.returncode == 0, nodes.stderr
    assert sorted(line.split()[2] for line in nodes.stdout.splitlines()) == ["2"] * 4
    # none, the default's name, leaves every rank the launcher's CPUs, and says nothing
    plain = run("-n", 2, "--bind-to", "none", sys.executable, prog)
    assert plain.returncode == 0, plain.stderr
    assert all(line.split()[1:] == [",".join(map(str, allowed)), "-"]
               for line in plain.stdout.splitlines())


def test_x_sets_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("FROM_HOME", "here")
    ranks = _rank_env(tmp_path, "-n", 2, "-x", "GREETING=hello world", "-x", "FROM_HOME")
    assert all(r["GREETING"] == "hello world" and r["FROM_HOME"] == "here"
               for r in ranks.values())


def test_secret_is_not_on_the_command_line(tmp_path):
    prog = script(tmp_path, "cmdline.sh",
                  '#!/bin/sh\ncat /proc/$PPID/cmdline | tr "\\0" " "; echo\n'
                  'echo "secret=$POSTBOX_JOB_SECRET"\n')
    result = run("-n", 1, prog)
    secret = result.stdout.split("secret=")[1].strip()
    assert len(secret) == 32 and result.stdout.count(secret) == 1


def test_tag_output_and_line_forwarding(tmp_path):
    prog = script(tmp_path, "lines.sh",
                  '#!/bin/sh\nprintf "out $PMI_RANK a\\nout $PMI_RANK b\\n"\n'
                  'echo "err $PMI_RANK" >&2\nprintf "tail $PMI_RANK"\n')
    result = run("-n", 3, "--tag-output", prog)
    assert result.returncode == 0
    out = result.stdout.splitlines()
    for rank in range(3):
        assert "[%d] out %d a" % (rank, rank) in out
        assert "[%d] out %d b" % (rank, rank) in out
        assert "[%d] tail %d" % (rank, rank) in out
        assert "[%d] err %d" % (rank, rank) in result.stderr.splitlines()
    plain = run("-n", 2, prog)
    assert sorted(plain.stdout.replace("tail", "\ntail").split("\n")).count("out 1 b") == 1


def test_stdin_goes_to_rank_0(tmp_path):
    prog = script(tmp_path, "stdin.py",
                  "import os, sys\ndata = sys.stdin.read()\n"
                  "print(os.environ['PMI_RANK'], repr(data))\n")
    result = run("-n", 3, sys.executable, prog, input="line one\nline two\n")
    assert result.returncode == 0
    lines = sorted(result.stdout.splitlines())
    assert lines == ["0 'line one\\nline two\\n'", "1 ''", "2 ''"]


def test_exit_status_is_propagated(tmp_path):
    prog = script(tmp_path, "exit.sh", '#!/bin/sh\n[ "$PMI_RANK" = 1 ] && exit 3\nexit 0\n')
    result = run("-n", 3, prog)
    assert result.returncode == 3
    assert "rank 1 (node %s/0) exited with status 3" % HOST in result.stderr
    assert run("-n", 2, "true").returncode == 0


def test_rank_exiting_non_zero_ends_the_job(tmp_path):
    prog = script(tmp_path, "fail.sh",
                  '#!/bin/sh\n[ "$PMI_RANK" = 3 ] && exit 5\nexec sleep 60\n')
    start = time.monotonic()
    result = run("-n", 4, "--nodes", 2, prog, timeout=20)
    assert time.monotonic() - start < 8
    assert result.returncode == 5
    assert result.stderr.count("postbox run:") == 1
    assert "rank 3 (node %s/1) exited with status 5; ending the job" % HOST in result.stderr
    assert_nothing_left(str(prog))


def test_crashing_rank_ends_the_job(tmp_path):
    prog = script(tmp_path, "crash.py",
                  "import os, signal, time\n"
                  "if os.environ['PMI_RANK'] == '2':\n"
                  "    time.sleep(0.3)\n"
                  "    print('crash at', time.time(), flush=True)\n"
                  "    os.kill(os.getpid(), signal.SIGKILL)\n"
                  "time.sleep(60)\n")
    result = run("-n", 8, "--nodes", 2, sys.executable, prog, timeout=20)
    crashed_at = float(result.stdout.split("crash at")[1].split()[0])
    assert time.time() - crashed_at < 5
    assert result.returncode == 128 + 9
    assert ("rank 2 (node %s/0) was killed by signal 9 (SIGKILL); ending the job" % HOST
            in result.stderr)
    assert result.stderr.count("postbox run:") == 1
    assert_nothing_left(str(prog))


def test_timeout_ends_a_hung_job_even_ignoring_sigterm(tmp_path):
    prog = script(tmp_path, "hang.py",
                  "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                  "print('up', flush=True)\ntime.sleep(60)\n")
    start = time.monotonic()
    result = run("-n", 3, "--timeout", "1", sys.executable, prog, timeout=20)
    elapsed = time.monotonic() - start
    assert result.returncode == 124
    assert 1 <= elapsed < 8
    assert "did not finish within 1 s (--timeout)" in result.stderr
    assert result.stdout.count("up") == 3
    assert_nothing_left(str(prog))


def test_timeout_names_the_ranks_still_running(tmp_path):
    prog = script(tmp_path, "half.py",
                  "import os, time\nif os.environ['PMI_RANK'] != '0':\n    time.sleep(60)\n")
    result = run("-n", 3, "--nodes", 3, "--timeout", "2", sys.executable, prog, timeout=20)
    assert result.returncode == 124
    line = [line for line in result.stderr.splitlines() if "still running" in line]
    assert len(line) == 1, result.stderr
    assert "2 of 3 ranks still running: rank 1 (node 1, pid " in line[0]
    assert "rank 2 (node 2, pid " in line[0] and "rank 0" not in line[0]
    assert "--timeout-stacks" not in result.stderr
    assert_nothing_left(str(prog))


@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")
def test_timeout_stacks_prints_each_threads_stack(tmp_path):
    prog = script(tmp_path, "nap.sh", "#!/bin/sh\nsleep 60\n")
    result = run("-n", 2, "--timeout", "2", "--timeout-stacks", str(prog), timeout=60)
    assert result.returncode == 124
    for rank in (0, 1):
        assert "--timeout-stacks: rank %d, pid " % rank in result.stderr
    frames = [line for line in result.stderr.splitlines() if line.startswith("#0 ")]
    # each rank is a shell waiting for its sleep: two processes a rank
    assert len(frames) >= 4, result.stderr
    assert "did not finish within 2 s" in result.stderr
    assert_nothing_left(str(prog))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_the_launcher_ends_everything(tmp_path, signum):
    prog = script(tmp_path, "wait.sh", '#!/bin/sh\necho ready\nsleep 60 &\nwait\n')
    proc = subprocess.Popen(launcher_cmd("-n", 4, prog), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            env=_env(), cwd=REPO)
    try:
        for _ in range(4):
            assert proc.stdout.readline().strip() == "ready"
        start = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=10)
        assert time.monotonic() - start < 5
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 128 + signum
    assert "got %s" % signal.Signals(signum).name in err
    assert_nothing_left(str(prog))


def test_nothing_left_after_a_normal_end(tmp_path):
    prog = script(tmp_path, "daemon.sh",
                  '#!/bin/sh\nif [ "$1" = bg ]; then exec sleep 60; fi\n"$0" bg &\necho started\n')
    result = run("-n", 2, prog, timeout=20)
    assert result.returncode == 0
    assert result.stdout.count("started") == 2
    assert_nothing_left(str(prog))


# ---- PMI ----------------------------------------------------------------------

PMI_CLIENT = r'''
import json, os, sys
fd = int(os.environ["PMI_FD"])
rank, size = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])
mode = os.environ.get("MODE", "v1")
if mode == "mixed":
    mode = "v2" if rank % 2 else "v1"
buf = b""

def unescape(text):
    out, esc = [], False
    for c in text:
        if esc or c != "\\":
            out.append(c); esc = False
        else:
            esc = True
    return "".join(out)

def fields(text, sep):
    parts, cur, esc = [], [], False
    for c in text:
        if esc: cur.append(c); esc = False
        elif c == "\\": esc = True
        elif c == sep: parts.append("".join(cur)); cur = []
        else: cur.append(c)
    parts.append("".join(cur))
    return dict(p.split("=", 1) for p in parts if p)

def v1(line):
    global buf
    os.write(fd, (line + "\n").encode())
    while b"\n" not in buf:
        data = os.read(fd, 4096)
        if not data:
            return None
        buf += data
    reply, buf = buf.split(b"\n", 1)
    return fields(reply.decode(), " ")

def v2(body):
    global buf
    data = body.encode()
    os.write(fd, b"%6d" % len(data) + data)
    while len(buf) < 6 or len(buf) < 6 + int(buf[:6]):
        data = os.read(fd, 4096)
        if not data:
            return None
        buf += data
    n = int(buf[:6]); reply, buf = buf[6:6 + n], buf[6 + n:]
    return fields(reply.decode(), ";")

out = {"rank": rank}
if mode == "v1":
    out["init"] = v1("cmd=init pmi_version=1 pmi_subversion=1")
    out["maxes"] = v1("cmd=get_maxes")
    out["universe"] = v1("cmd=get_universe_size")
    out["appnum"] = v1("cmd=get_appnum")
    kvs = v1("cmd=get_my_kvsname")["kvsname"]
    out["put"] = v1("cmd=put kvsname=%s key=pb-card-%d value=card\\ of\\ %d" % (kvs, rank, rank))
    out["badput"] = v1("cmd=put kvsname=other key=x value=y")
    out["barrier"] = v1("cmd=barrier_in")
    out["cards"] = [v1("cmd=get kvsname=%s key=pb-card-%d" % (kvs, r)).get("value")
                    for r in range(size)]
    out["mapping"] = v1("cmd=get kvsname=%s key=PMI_process_mapping" % kvs)
    out["missing"] = v1("cmd=get kvsname=%s key=pb-nothing" % kvs)
    out["garbage"] = v1("no command here")
    out["barrier2"] = v1("cmd=barrier_in")
    out["finalize"] = v1("cmd=finalize")
else:
    out["init"] = v1("cmd=init pmi_version=2 pmi_subversion=0")
    out["fullinit"] = v2("cmd=fullinit;pmijobid=x;pmirank=%d;threaded=FALSE;" % rank)
    kvs = v2("cmd=job-getid;")["jobid"]
    out["put"] = v2("cmd=kvs-put;key=pb-card-%d;value=card of %d;" % (rank, rank))
    out["barrier"] = v2("cmd=kvs-fence;")
    out["cards"] = [v2("cmd=kvs-get;key=pb-card-%d;" % r).get("value") for r in range(size)]
    out["mapping"] = v2("cmd=info-getjobattr;key=PMI_process_mapping;")
    out["missing"] = v2("cmd=kvs-get;key=pb-nothing;")
    out["barrier2"] = v2("cmd=kvs-fence;")
    out["finalize"] = v2("cmd=finalize;")
out["kvs"] = kvs
print(json.dumps(out))
'''


@pytest.mark.parametrize("mode", ["v1", "mixed"])
def test_pmi_put_get_barrier_and_mapping(tmp_path, mode):
    prog = script(tmp_path, "pmi_client.py", PMI_CLIENT)
    result = run("-n", 5, "--nodes", 2, "-x", "MODE=" + mode, sys.executable, prog,
                 timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    ranks = {r["rank"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert sorted(ranks) == list(range(5))
    assert len({r["kvs"] for r in ranks.values()}) == 1
    for rank, r in ranks.items():
        assert r["cards"] == ["card of %d" % i for i in range(5)]
        assert r["mapping"]["value"] == "(vector,(0,1,3),(1,1,2))"
        assert r["mapping"]["rc"] == "0"
        assert r["put"]["rc"] == r["barrier"]["rc"] == r["barrier2"]["rc"] == "0"
        if "maxes" in r:
            assert r["init"] == {"cmd": "response_to_init", "rc": "0", "pmi_version": "1",
                                 "pmi_subversion": "1"}
            assert r["maxes"] == {"cmd": "maxes", "rc": "0", "kvsname_max": "64",
                                  "keylen_max": "64", "vallen_max": "1024"}
            assert r["universe"]["size"] == "5" and r["appnum"]["appnum"] == "0"
            assert r["missing"] == {"cmd": "get_result", "rc": "-1",
                                    "msg": "key_pb-nothing_not_found"}
            assert r["badput"]["rc"] != "0" and "msg" in r["badput"]
            assert r["garbage"]["rc"] != "0" and "msg" in r["garbage"]
            assert r["finalize"] == {"cmd": "finalize_ack", "rc": "0"}
        else:
            assert r["init"]["pmi_version"] == "2" and r["init"]["rc"] == "0"
            assert r["fullinit"]["rank"] == str(rank) and r["fullinit"]["size"] == "5"
            assert r["missing"]["found"] == "FALSE"
            assert r["finalize"]["cmd"] == "finalize-response"


def test_pmi_abort_ends_the_job(tmp_path):
    prog = script(tmp_path, "abort.py",
                  "import os, time\n"
                  "if os.environ['PMI_RANK'] == '1':\n"
                  "    os.write(int(os.environ['PMI_FD']), b'cmd=abort exitcode=7 "
                  "message=out\\\\ of\\\\ cheese\\n')\n"
                  "time.sleep(60)\n")
    start = time.monotonic()
    result = run("-n", 3, sys.executable, prog, timeout=20)
    assert time.monotonic() - start < 8
    assert result.returncode == 7
    assert ("rank 1 (node %s/0) called PMI abort with exit code 7 (out of cheese); ending "
            "the job" % HOST) in result.stderr
    assert_nothing_left(str(prog))


def test_pmi_overlong_line_closes_that_connection(tmp_path):
    prog = script(tmp_path, "long.py",
                  "import os\nfd = int(os.environ['PMI_FD'])\n"
                  "os.write(fd, b'cmd=put ' + b'x' * 5000 + b'\\n')\n"
                  "print('eof' if os.read(fd, 100) == b'' else 'reply')\n")
    result = run("-n", 2, "--timeout", 10, sys.executable, prog)
    assert result.returncode == 0
    assert result.stdout.split() == ["eof", "eof"]
    assert result.stderr.count("longer than 4096 bytes; closing its PMI connection") == 2


def test_rank_leaving_a_barrier_unfinished_ends_the_job(tmp_path):
    prog = script(tmp_path, "deadlock.py",
                  "import os, time\n"
                  "if os.environ['PMI_RANK'] != '0':\n"
                  "    os.write(int(os.environ['PMI_FD']), b'cmd=barrier_in\\n')\n"
                  "    time.sleep(60)\n")
    start = time.monotonic()
    result = run("-n", 3, sys.executable, prog, timeout=20)
    assert time.monotonic() - start < 8
    assert result.returncode == 1
    # ranks 1 and 2 may or may not both be in the barrier when the launcher sees it
    assert re.search(r"rank 0 \(node %s/0\) exited while (rank [12] waits|ranks 1,2 wait) in "
                     r"a PMI barrier; ending the job" % re.escape(HOST), result.stderr)
    assert_nothing_left(str(prog))


# ---- with the C build -----------------------------------------------------------

def test_mpirun_and_mpiexec_are_postbox_run():
    for name in ("mpirun", "mpiexec"):
        path = built(paths.bin_dir() / name)
        result = subprocess.run([str(path), "-np", "2", "--tag-output", "echo", "hi"],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stderr
        assert sorted(result.stdout.splitlines()) == ["[0] hi", "[1] hi"]
        usage = subprocess.run([str(path), "--help"], capture_output=True, text=True,
                               timeout=30)
        assert usage.stdout.startswith("usage: %s " % name)


@pytest.mark.slow
@pytest.mark.parametrize("pmi_version", ["1", "2"])
def test_job_view_sees_two_nodes_of_two(pmi_version):
    view = built(paths.bin_dir() / "postbox-job-view")
    result = run("-n", 4, "--nodes", 2, "-x", "POSTBOX_PMI_VERSION=" + pmi_version, view,
                 timeout=60)
    assert result.returncode == 0, result.stderr
    pattern = re.compile(r"rank (\d+) size (\d+) node (\d+) nodes (\d+) name (\S+) "
                         r"local ([\d,]+) job (\S+)")
    seen = {}
    for line in result.stdout.splitlines():
        match = pattern.search(line)
        assert match, line
        rank, size, node, nodes = map(int, match.groups()[:4])
        seen[rank] = (size, node, nodes, match.group(5), match.group(6), match.group(7))
    assert sorted(seen) == [0, 1, 2, 3]
    assert {s[0] for s in seen.values()} == {4} and {s[2] for s in seen.values()} == {2}
    assert [seen[r][1] for r in range(4)] == [0, 0, 1, 1]
    assert [seen[r][4] for r in range(4)] == ["0,1", "0,1", "2,3", "2,3"]
    assert [seen[r][3] for r in range(4)] == ["%s/0" % HOST] * 2 + ["%s/1" % HOST] * 2
    assert len({s[5] for s in seen.values()}) == 1
