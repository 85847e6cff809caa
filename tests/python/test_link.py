"""``postbox run --netns --link RATE[,DELAY[,LOSS]]``: emulated links.

The parsing and the tc commands are checked without root.  The shaped runs
need root, ``ip`` and ``tc`` (they are skipped otherwise): a Python rank
pair measures a 1 MiB TCP transfer and a small round trip across the two
virtual nodes' shaped link.  DELAY needs the kernel's netem qdisc; on a
kernel without it the launcher refuses --link with a DELAY (exit 2, one
line), which is tested, and the delay test is skipped with that reason.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest

from conftest import REPO
from postbox import launch, netns
from test_netns import (host_links, launcher_pid, namespaces_of,  # noqa: F401 - fixture
                        needs_netns, wait_until_gone)
from test_run import _env, launcher_cmd, run, script

pytestmark = pytest.mark.short


# ---- parsing ------------------------------------------------------------------

@pytest.mark.parametrize("text, rate", [
    ("10mbit", 10 ** 7), ("100Mbit", 10 ** 8), ("1gbit", 10 ** 9), ("10gbit", 10 ** 10),
    ("10M", 10 ** 7), ("1G", 10 ** 9), ("1.5gbit", 15 * 10 ** 8), ("64kbit", 64000),
    ("8000bit", 8000), ("1tbit", 10 ** 12)])
def test_rates(text, rate):
    assert netns.parse_rate(text) == rate


@pytest.mark.parametrize("text, delay_us", [
    ("50us", 50), ("1ms", 1000), ("0.5ms", 500), ("2s", 2 * 10 ** 6), ("0", 0), ("", 0)])
def test_delays(text, delay_us):
    assert netns.parse_delay(text) == delay_us


def test_link_fields():
    assert netns.parse_link("100mbit") == netns.LinkSpec(10 ** 8, 0, 0.0)
    assert netns.parse_link("100mbit,50us") == netns.LinkSpec(10 ** 8, 50, 0.0)
    assert netns.parse_link("1G,1ms,0.1%") == netns.LinkSpec(10 ** 9, 1000, 0.1)
    assert netns.parse_link("10mbit,,2%") == netns.LinkSpec(10 ** 7, 0, 2.0)
    assert netns.parse_link("1G,1ms,0.1%").describe() == "1gbit, 1ms, 0.1%"


@pytest.mark.parametrize("text, message", [
    ("fast", "RATE wants a number of bit/s with a unit"),
    ("10", "RATE wants"),
    ("10mbps", "tc's bps means bytes per second"),
    ("1kbit", "outside 8kbit to 1tbit"),
    ("2tbit", "outside 8kbit to 1tbit"),
    ("10mbit,5", "DELAY wants a time with a unit"),
    ("10mbit,20s", "outside 1us to 10s"),
    ("10mbit,0.1us", "outside 1us to 10s"),
    ("10mbit,1ms,0.1", "LOSS wants a percentage"),
    ("10mbit,1ms,100%", "less than 100%"),
    ("10mbit,1ms,1%,x", "RATE[,DELAY[,LOSS]]"),
    ("", "RATE wants")])
def test_bad_links_are_refused(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        netns.parse_link(text)


def test_launcher_usage_errors(capsys):
    assert launch.parse_args(["--netns", "--link", "1gbit", "true"]).link.rate == 10 ** 9
    for argv, message in (
            (["--link", "1gbit", "true"], "--link needs --netns"),
            (["--netns", "--link", "1gbyte", "true"], "RATE wants"),
            (["--netns", "--link"], "--link needs a value")):
        assert launch.main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_missing_tc_is_refused_with_exit_2(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(netns, "ip_command", lambda: "/bin/true")
    monkeypatch.setattr(netns, "tc_command", lambda: None)
    assert launch.main(["--netns", "--link", "10mbit", "true"]) == 2
    err = capsys.readouterr().err
    assert "--link needs the `tc` command of iproute2" in err and err.count("\n") == 1


# ---- the tc commands ----------------------------------------------------------

def test_node_side_is_rate_only():
    spec = netns.LinkSpec(10 ** 8, 50, 1.0)
    assert netns.node_side_commands(spec, "pbx-7-1", "pbx0") == [
        ["-n", "pbx-7-1", "qdisc", "add", "dev", "pbx0", "root", "handle", "1:", "tbf",
         "rate", "100000000bit", "burst", "12500", "limit", "1250000"]]


def test_tbf_burst_and_queue_bounds():
    # 10 Mbit/s: 1 ms is 1250 B, below the floor; 100 ms is 125 kB
    assert netns.tbf_args(10 ** 7)[3:] == ["burst", "4096", "limit", "125000"]
    # 10 Gbit/s: the queue is capped
    assert netns.tbf_args(10 ** 10)[3:] == ["burst", "1250000", "limit", str(32 << 20)]
    assert netns.tbf_args(64000)[3:] == ["burst", "4096", "limit", str(64 * 1024)]


def test_hub_side_rate_only():
    assert netns.hub_side_commands(netns.LinkSpec(10 ** 9), "pbx-7-hub", "n1") == [
        ["-n", "pbx-7-hub", "qdisc", "add", "dev", "n1", "root", "handle", "1:", "tbf",
         "rate", "1000000000bit", "burst", "125000", "limit", "12500000"]]


def test_hub_side_delay_and_loss():
    commands = netns.hub_side_commands(netns.LinkSpec(10 ** 10, 1000, 0.5), "h", "r1n0")
    # netem holds 1 ms at 10 Gbit/s = 1.25 MB = 826 frames; twice that, +1
    assert commands[0] == ["-n", "h", "qdisc", "add", "dev", "r1n0", "root", "handle", "1:",
                           "netem", "delay", "1000us", "limit", "1652"]
    assert commands[1][:9] == ["-n", "h", "qdisc", "add", "dev", "r1n0", "parent", "1:1",
                               "handle"]
    assert commands[1][10] == "tbf"
    assert commands[2] == ["-n", "h", "qdisc", "add", "dev", "r1n0", "clsact"]
    threshold = round(0.005 * 2 ** 32)
    assert commands[3] == ["-n", "h", "filter", "add", "dev", "r1n0", "egress", "protocol",
                           "ip", "bpf", "da", "bytecode",
                           "4,32 0 0 4294963256,53 1 0 %d,6 0 0 2,6 0 0 0" % threshold]


def test_loss_threshold():
    assert netns.loss_threshold(50.0) == 2 ** 31
    assert netns.loss_threshold(0.1) == round(2 ** 32 / 1000)
    assert netns.loss_threshold(99.9999999999) == 2 ** 32 - 1


# ---- shaped runs (root, ip, tc) --------------------------------------------------

CAN_TC = netns.tc_command() is not None
needs_tc = pytest.mark.skipif(not CAN_TC, reason="--link needs iproute2's `tc`")

# rank 1 sends rank 0 @SIZE bytes over TCP, waits for a 1-byte reply, and
# prints the seconds; then ROUNDS 1-byte round trips, and prints the fastest
TRANSFER = r'''#!/usr/bin/env python3
import os, socket, sys, time
size, rounds = int(sys.argv[1]), int(sys.argv[2])
rank = int(os.environ["PMI_RANK"])
addr = os.environ["POSTBOX_NETNS_ADDR"]
peer = addr.rsplit(".", 1)[0] + ".1"
if rank == 0:
    s = socket.socket()
    s.bind((addr, 7777))
    s.listen(1)
    c, _ = s.accept()
    got = 0
    while got < size:
        data = c.recv(1 << 16)
        if not data:
            sys.exit("short transfer")
        got += len(data)
    c.sendall(b"k")
    for _ in range(rounds):
        c.sendall(c.recv(1))
else:
    for _ in range(200):
        try:
            c = socket.create_connection((peer, 7777))
            break
        except OSError:
            time.sleep(0.02)
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = time.monotonic()
    c.sendall(b"x" * size)
    c.recv(1)
    print("transfer %.6f" % (time.monotonic() - t), flush=True)
    best = 1e9
    for _ in range(rounds):
        t = time.monotonic()
        c.sendall(b"p")
        c.recv(1)
        best = min(best, time.monotonic() - t)
    print("rtt %.6f" % best, flush=True)
'''


def shaped_run(tmp_path, link: str, size: int, rounds: int):
    prog = script(tmp_path, "transfer.py", TRANSFER)
    return run("-n", "2", "--nodes", "2", "--netns", "--link", link, "--timeout", "30",
               str(prog), str(size), str(rounds), timeout=60)


def figures(out: str) -> dict:
    return {word: float(value) for word, value in re.findall(r"^(\w+) ([0-9.]+)$", out, re.M)}


@needs_netns
@needs_tc
def test_rate_shapes_a_1mib_transfer(tmp_path, host_links):  # noqa: F811 - fixture
    done = shaped_run(tmp_path, "10mbit", 1 << 20, 3)
    assert done.returncode == 0, done.stderr
    took = figures(done.stdout)["transfer"]
    # 8.39 Mbit at 10 Mbit/s is 0.84 s, less a 4 KiB burst
    assert 0.8 <= took < 3.0, done.stdout


@needs_netns
@needs_tc
def test_fast_link_is_not_slowed(tmp_path, host_links):  # noqa: F811 - fixture
    done = shaped_run(tmp_path, "1gbit", 1 << 20, 1)
    assert done.returncode == 0, done.stderr
    # 1 MiB at 1 Gbit/s is 8.4 ms; a shaped 10 Mbit/s would take 0.84 s
    assert figures(done.stdout)["transfer"] < 0.5, done.stdout


@needs_netns
@needs_tc
def test_loss_still_delivers_over_tcp(tmp_path, host_links):  # noqa: F811 - fixture
    done = shaped_run(tmp_path, "100mbit,0,1%", 256 << 10, 1)
    assert done.returncode == 0, done.stderr
    assert "transfer" in figures(done.stdout)


def _delay_unsupported(tmp_path) -> str:
    """Why this kernel cannot add DELAY (the launcher's message), or ""."""
    done = run("-n", "1", "--netns", "--link", "10mbit,1ms", "true", timeout=30)
    if done.returncode == 2 and "netem" in done.stderr:
        return done.stderr.strip()
    assert done.returncode == 0, done.stderr
    return ""


@needs_netns
@needs_tc
def test_delay_without_netem_is_a_usage_error(tmp_path, host_links):  # noqa: F811 - fixture
    why = _delay_unsupported(tmp_path)
    if not why:
        pytest.skip("this kernel has netem: DELAY is applied (test_delay_adds_to_the_rtt)")
    assert why.count("\n") == 0 and "DELAY needs the netem qdisc" in why


@needs_netns
@needs_tc
def test_delay_adds_to_the_rtt(tmp_path, host_links):  # noqa: F811 - fixture
    why = _delay_unsupported(tmp_path)
    if why:
        pytest.skip(why)
    done = shaped_run(tmp_path, "100mbit,5ms", 1024, 5)
    assert done.returncode == 0, done.stderr
    # 5 ms each way: every round trip takes at least 10 ms
    assert figures(done.stdout)["rtt"] >= 0.010, done.stdout


@needs_netns
@needs_tc
def test_every_rail_is_shaped(tmp_path, host_links):  # noqa: F811 - fixture
    prog = script(tmp_path, "qdiscs.sh", "#!/bin/sh\nexec %s qdisc show\n" % netns.tc_command())
    done = run("-n", "2", "--nodes", "2", "--netns", "--rails", "2", "--link", "100mbit",
               "--tag-output", str(prog), timeout=60)
    assert done.returncode == 0, done.stderr
    for rank in (0, 1):
        for device in ("pbx0", "pbx1"):
            assert re.search(r"^\[%d\] qdisc tbf 1: dev %s root .*rate 100Mbit" % (rank, device),
                             done.stdout, re.M), done.stdout


@needs_netns
@needs_tc
def test_sigkill_of_a_shaped_job_leaves_nothing(tmp_path, host_links):  # noqa: F811 - fixture
    prog = script(tmp_path, "wait.sh", '#!/bin/sh\necho "ready $POSTBOX_JOB_ID"\nexec sleep 60\n')
    proc = subprocess.Popen(launcher_cmd("-n", 2, "--nodes", 2, "--netns", "--link",
                                         "10mbit,,1%", prog),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env=_env(), cwd=REPO)
    try:
        lines = [proc.stdout.readline().split() for _ in range(2)]
        assert [words[0] for words in lines] == ["ready", "ready"], proc.stderr.read()
        pid = launcher_pid(lines[0][1])
        assert len(namespaces_of(pid)) == 3
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # the qdiscs and filters were on the veths, which went with the namespaces
        assert wait_until_gone(pid) == []
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
