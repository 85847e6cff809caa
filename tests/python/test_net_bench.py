"""postbox-net-bench: the raw TCP/UDP limits, alone, between virtual nodes and across --netns.

Each test runs the real program with --quick (a second or two) and checks
its JSON records; skipped when build/bin/postbox-net-bench is missing.  The
--netns run needs root and iproute2's `ip`.
"""

from __future__ import annotations

import subprocess

import pytest

from conftest import REPO, built
from postbox import netns, paths, results
from test_run import _env, assert_nothing_left

pytestmark = pytest.mark.slow

TESTS = {
    "tcp_pingpong": ("tcp", "latency", "us"),
    "tcp_pingpong_split": ("tcp", "latency", "us"),
    "tcp_pingpong_poll": ("tcp", "latency", "us"),
    "tcp_pingpong_split_poll": ("tcp", "latency", "us"),
    "tcp_stream": ("tcp", "bandwidth", "MB/s"),
    "udp_pingpong": ("udp", "latency", "us"),
}


@pytest.fixture
def net_bench():
    return built(paths.bin_dir() / "postbox-net-bench")


def run_bench(cmd: list, timeout: float = 60) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=_env(),
                            timeout=timeout, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def check_records(path, placement: str, nodes: int, address: str) -> list:
    records = results.load_jsonl(path)
    assert {rec["test"] for rec in records} == set(TESTS)
    for rec in records:
        assert results.missing_keys(rec) == [], rec
        transport, metric, unit = TESTS[rec["test"]]
        assert (rec["suite"], rec["library"]) == ("raw", "raw")
        assert (rec["transport"], rec["metric"], rec["unit"]) == (transport, metric, unit)
        assert rec["placement"] == placement
        assert (rec["ranks"], rec["nodes"], rec["pairs"]) == (2, nodes, 1)
        assert rec["median"] > 0 and rec["min"] > 0 and rec["max"] >= rec["min"]
        assert rec["reps"] >= 5
        assert rec["probe_before"] > 0 and rec["probe_after"] > 0
        assert rec["state"] in ("fast", "slow")
        assert isinstance(rec["settled"], bool)
        assert address in rec["note"]
    notes = {name: next(r for r in records if r["test"] == name)["note"] for name in TESTS}
    for name in ("tcp_pingpong", "tcp_pingpong_split", "tcp_pingpong_poll",
                 "tcp_pingpong_split_poll"):
        assert "TCP_NODELAY" in notes[name]
        assert ("one connection per direction" in notes[name]) == ("_split" in name)
        assert ("busy-polled recv" in notes[name]) == name.endswith("_poll")
        assert ("blocking send/recv" in notes[name]) != name.endswith("_poll")
    # --quick sizes: 1 B .. 64 KB (every TCP ping-pong), 1 KB .. 4 MB, 1 B .. 8 KB
    sizes = {name: sorted(r["size"] for r in records if r["test"] == name) for name in TESTS}
    assert sizes["tcp_pingpong"][0] == 1 and sizes["tcp_pingpong"][-1] == 64 << 10
    for name in ("tcp_pingpong_split", "tcp_pingpong_poll", "tcp_pingpong_split_poll"):
        assert sizes[name] == sizes["tcp_pingpong"], name
    assert sizes["tcp_stream"][0] == 1 << 10 and sizes["tcp_stream"][-1] == 4 << 20
    assert sizes["udp_pingpong"][0] == 1 and sizes["udp_pingpong"][-1] == 8 << 10
    return records


def test_alone_forks_its_peer_on_node(net_bench, tmp_path):
    out = tmp_path / "net.jsonl"
    result = run_bench([net_bench, "--quick", "--json", out])
    assert "tcp_pingpong" in result.stdout and "done in" in result.stdout
    check_records(out, "on-node", 1, "127.0.0.1")
    assert_nothing_left(str(net_bench))


def test_two_virtual_nodes_are_off_node(net_bench, tmp_path):
    out = tmp_path / "net.jsonl"
    run_bench([paths.bin_dir() / "postbox", "run", "-n", "2", "--nodes", "2", net_bench,
               "--quick", "--json", out])
    check_records(out, "off-node", 2, "127.0.0.1")
    assert_nothing_left(str(net_bench))


def test_sizes_and_help(net_bench, tmp_path):
    out = tmp_path / "net.jsonl"
    run_bench([paths.bin_dir() / "postbox", "run", "-n", "2", net_bench, "--sizes", "64,4K",
               "--reps-cap-ms", "10", "--no-probe", "--json", out])
    records = results.load_jsonl(out)
    assert sorted((r["test"], r["size"]) for r in records) == [
        ("tcp_pingpong", 64), ("tcp_pingpong", 4096), ("tcp_pingpong_poll", 64),
        ("tcp_pingpong_poll", 4096), ("tcp_pingpong_split", 64), ("tcp_pingpong_split", 4096),
        ("tcp_pingpong_split_poll", 64), ("tcp_pingpong_split_poll", 4096),
        ("tcp_stream", 4096), ("udp_pingpong", 64), ("udp_pingpong", 4096)]
    for rec in records:
        assert rec["placement"] == "on-node" and rec["nodes"] == 1
        assert rec["probe_before"] is None and rec["state"] == "unknown"
    help_text = run_bench([net_bench, "--help"]).stdout
    assert "postbox run -n 2 --nodes 2" in help_text
    assert "tcp_pingpong_split" in help_text and "one per direction" in help_text
    assert "tcp_pingpong_poll" in help_text and "tcp_pingpong_split_poll" in help_text
    assert "busy-polled" in help_text


def test_three_ranks_are_refused(net_bench):
    result = subprocess.run([str(paths.bin_dir() / "postbox"), "run", "-n", "3", str(net_bench),
                             "--quick"], capture_output=True, text=True, env=_env(),
                            timeout=30, cwd=REPO)
    assert result.returncode == 2
    assert "needs a job of 2 ranks" in result.stderr


@pytest.mark.skipif(netns.unavailable() is not None,
                    reason="--netns needs root and iproute2's `ip`: %s" % netns.unavailable())
def test_netns_crosses_the_veth_pair(net_bench, tmp_path):
    out = tmp_path / "net.jsonl"
    result = run_bench([paths.bin_dir() / "postbox", "run", "-n", "2", "--nodes", "2", "--netns",
                        net_bench, "--quick", "--json", out])
    assert "via veth" in result.stdout
    records = check_records(out, "off-node", 2, "via veth")
    assert all(rec["note"].split("; ")[-1].startswith("10.") or
               rec["note"].split("; ")[-1].startswith("172.") for rec in records)
    assert_nothing_left(str(net_bench))
