"""``postbox run --netns``: a network namespace per virtual node, and its cleanup.

These tests need root and the ``ip`` command (CI runs them as root on Debian
with iproute2); without them they are skipped, except those of the refusal
itself, which run the launcher in-process with ``os.geteuid`` or the ``ip``
lookup replaced.  Every test checks that no ``pbx-<launcher pid>-*``
namespace and no new link of this namespace is left behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, built
from postbox import launch, netns, paths
from test_run import _env, assert_nothing_left, launcher_cmd, run, script

pytestmark = pytest.mark.short

CAN_NETNS = netns.unavailable() is None
needs_netns = pytest.mark.skipif(
    not CAN_NETNS, reason="--netns needs root and iproute2's `ip`: %s" % netns.unavailable())


def namespaces_of(pid: int) -> list:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if line.startswith("pbx-%d-" % pid)]


def links() -> set:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def launcher_pid(job_id: str) -> int:
    return int(re.fullmatch(r"job-(\d+)-[0-9a-f]+", job_id).group(1))


def wait_until_gone(pid: int, seconds: float = 5.0) -> list:
    deadline = time.monotonic() + seconds
    while namespaces_of(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return namespaces_of(pid)


@pytest.fixture
def host_links():
    """The links of this namespace before the test; asserts none is added."""
    before = links()
    yield before
    assert links() == before


# ---- refusals (no root needed) --------------------------------------------------

def test_not_root_is_refused_with_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    code = launch.main(["-n", "2", "--nodes", "2", "--netns", "true"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--netns needs root" in err and err.count("\n") == 1


def test_missing_ip_is_refused_with_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(netns, "ip_command", lambda: None)
    assert launch.main(["--netns", "true"]) == 2
    assert "--netns needs the `ip` command of iproute2" in capsys.readouterr().err


# ---- with root ----------------------------------------------------------------

NET_RANK = r'''
import json, os, socket, sys, time
vnode = int(os.environ["POSTBOX_VNODE"])
addr = os.environ["POSTBOX_NETNS_ADDR"]
out = {"rank": int(os.environ["PMI_RANK"]), "vnode": vnode, "addr": addr,
       "ns": os.readlink("/proc/self/ns/net"), "job": os.environ["POSTBOX_JOB_ID"]}
# the own address is local, the other node's is not
socket.socket().bind((addr, 0))
other = sys.argv[2] if vnode == 0 else sys.argv[1]
try:
    socket.socket().bind((other, 0))
    out["other_local"] = True
except OSError:
    out["other_local"] = False
out["ifaces"] = sorted(os.listdir("/sys/class/net"))
# traffic between the nodes crosses the veth pairs and the bridge
if out["rank"] == 0:
    server = socket.socket()
    server.bind((addr, 7777))
    server.listen(8)
    print("listening", flush=True)
    got = []
    for _ in range(int(os.environ["PEERS"])):
        conn, peer = server.accept()
        got.append([conn.recv(100).decode(), peer[0]])
    out["got"] = sorted(got)
elif vnode == 1:
    deadline = time.monotonic() + 10
    while True:
        try:
            conn = socket.create_connection((sys.argv[1], 7777), timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    conn.sendall(b"from %d" % out["rank"])
    conn.close()
print(json.dumps(out), flush=True)
'''


@needs_netns
def test_each_virtual_node_has_its_own_namespace(tmp_path, host_links):
    prog = script(tmp_path, "net_rank.py", NET_RANK)
    result = run("-n", 4, "--nodes", 2, "--netns", "--timeout", 20, "-x", "PEERS=2",
                 sys.executable, prog, "10.213.0.1", "10.213.0.2")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    ranks = {}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            ranks[rec["rank"]] = rec
    assert sorted(ranks) == [0, 1, 2, 3]
    own = os.readlink("/proc/self/ns/net")
    assert ranks[0]["ns"] == ranks[1]["ns"] != ranks[2]["ns"] == ranks[3]["ns"]
    assert own not in {r["ns"] for r in ranks.values()}
    assert [ranks[r]["addr"] for r in range(4)] == ["10.213.0.1"] * 2 + ["10.213.0.2"] * 2
    assert not any(r["other_local"] for r in ranks.values())
    assert all(r["ifaces"] == ["lo", "pbx0"] for r in ranks.values())
    assert ranks[0]["got"] == [["from 2", "10.213.0.2"], ["from 3", "10.213.0.2"]]
    pid = launcher_pid(ranks[0]["job"])
    assert namespaces_of(pid) == []


RAILS_RANK = r'''
import json, os, socket
rails = os.environ["POSTBOX_NETNS_RAILS"].split(",")
for addr in rails:
    socket.socket().bind((addr, 0))   # every rail's address is this node's own
print(json.dumps({"vnode": int(os.environ["POSTBOX_VNODE"]), "rails": rails,
                  "addr": os.environ["POSTBOX_NETNS_ADDR"],
                  "ifaces": sorted(os.listdir("/sys/class/net"))}), flush=True)
'''


@needs_netns
def test_two_rails_give_each_node_two_links(tmp_path, host_links):
    prog = script(tmp_path, "rails_rank.py", RAILS_RANK)
    result = run("-n", 2, "--nodes", 2, "--netns", "--rails", 2, "--timeout", 20,
                 sys.executable, prog)
    assert result.returncode == 0, result.stderr
    recs = sorted((json.loads(line) for line in result.stdout.splitlines()
                   if line.startswith("{")), key=lambda rec: rec["vnode"])
    assert [rec["vnode"] for rec in recs] == [0, 1]
    for rec in recs:
        assert rec["ifaces"] == ["lo", "pbx0", "pbx1"]
        assert rec["addr"] == rec["rails"][0]
    # one /16 per rail, node k the (k+1)-th address of each
    zero, one = recs[0]["rails"], recs[1]["rails"]
    for rail in range(2):
        assert zero[rail].rsplit(".", 2)[0] == one[rail].rsplit(".", 2)[0]
        assert zero[rail].endswith(".0.1") and one[rail].endswith(".0.2")
    assert zero[0].rsplit(".", 2)[0] != zero[1].rsplit(".", 2)[0]


@needs_netns
def test_job_view_sees_two_nodes_in_namespaces(host_links):
    view = built(paths.bin_dir() / "postbox-job-view")
    result = run("-n", 4, "--nodes", 2, "--netns", view, timeout=60)
    assert result.returncode == 0, result.stderr
    nodes = re.findall(r"rank (\d) size 4 node (\d) nodes 2 name \S+/(\d) local ([\d,]+) "
                       r"job (\S+)", result.stdout)
    assert sorted(n[:4] for n in nodes) == [("0", "0", "0", "0,1"), ("1", "0", "0", "0,1"),
                                            ("2", "1", "1", "2,3"), ("3", "1", "1", "2,3")]
    assert namespaces_of(launcher_pid(nodes[0][4])) == []


@needs_netns
def test_rank_crash_leaves_no_namespace(tmp_path, host_links):
    prog = script(tmp_path, "crash.sh",
                  '#!/bin/sh\necho "$POSTBOX_JOB_ID"\n'
                  'if [ "$POSTBOX_VNODE" = 1 ]; then kill -9 $$; fi\nexec sleep 30\n')
    result = run("-n", 3, "--nodes", 3, "--netns", prog, timeout=30)
    assert result.returncode == 128 + 9
    assert "rank 1 (node " in result.stderr and "was killed by signal 9" in result.stderr
    pid = launcher_pid(result.stdout.split()[0])
    assert namespaces_of(pid) == []
    assert_nothing_left(str(prog))


@needs_netns
def test_sigkill_of_the_launcher_leaves_nothing(tmp_path, host_links):
    # each rank also leaves a process in a session of its own, out of reach of
    # PR_SET_PDEATHSIG: the guardian kills what still lives in the namespaces
    prog = script(tmp_path, "stay.sh",
                  '#!/bin/sh\nif [ "$1" = bg ]; then sleep 60; exit 0; fi\n'
                  'setsid "$0" bg </dev/null >/dev/null 2>&1 &\n'
                  'echo "ready $POSTBOX_JOB_ID"\nexec sleep 60\n')
    proc = subprocess.Popen(launcher_cmd("-n", 2, "--nodes", 2, "--netns", prog),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=_env(), cwd=REPO)
    try:
        lines = [proc.stdout.readline().split() for _ in range(2)]
        assert [words[0] for words in lines] == ["ready", "ready"]
        pid = launcher_pid(lines[0][1])
        assert pid == proc.pid
        assert len(namespaces_of(pid)) == 3
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_until_gone(pid) == []
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert_nothing_left(str(prog))


@needs_netns
def test_stale_namespaces_are_swept_and_others_kept(tmp_path, host_links):
    # a pid that no launcher has any more
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = ["pbx-%d-0" % dead.pid, "pbx-%d-hub" % dead.pid]
    keep = "pbxkeep-%d-0" % os.getpid()
    try:
        for name in stale + [keep]:
            subprocess.run(["ip", "netns", "add", name], check=True)
        result = run("--netns", "true")
        assert result.returncode == 0, result.stderr
        assert "removed 2 network namespaces left by launchers that are gone" in result.stderr
        assert namespaces_of(dead.pid) == []
        names = subprocess.run(["ip", "netns", "list"], capture_output=True,
                               text=True).stdout.split()
        assert keep in names
    finally:
        for name in stale + [keep]:
            subprocess.run(["ip", "netns", "delete", name], capture_output=True)


@needs_netns
def test_a_failed_setup_is_undone(monkeypatch, capfd, host_links):
    # in-process: making the second veth pair fails after the hub, the bridge
    # and a node exist; the launcher removes them and says why
    veths = []
    real_ip = netns.ip

    def failing_ip(*args, check=True):
        if "veth" in args:
            veths.append(args)
            if len(veths) == 2:
                raise netns.NetnsError("`ip %s` failed: injected" % " ".join(args))
        return real_ip(*args, check=check)

    monkeypatch.setattr(netns, "ip", failing_ip)
    assert launch.main(["-n", "2", "--nodes", "2", "--netns", "true"]) == 1
    assert "cannot set up the network namespaces: `ip" in capfd.readouterr().err
    monkeypatch.setattr(netns, "ip", real_ip)
    assert namespaces_of(os.getpid()) == []
