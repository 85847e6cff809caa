"""postbox-rsm-net-bench: the RSM tcp transport between two virtual nodes,
beside raw TCP/UDP measured in the same run, and the two tcp ratios.

Each run uses --quick and two sizes (a few seconds); skipped when
build/bin/postbox-rsm-net-bench is missing.  The --netns run needs root and
iproute2's `ip`.
"""

from __future__ import annotations

import math
import subprocess

import pytest

from conftest import REPO, built
from postbox import netns, paths, results
from test_run import _env, assert_nothing_left

pytestmark = pytest.mark.slow

# test -> (suite, library, transport, metric, unit)
TESTS = {
    "tcp_put_pingpong": ("rsm", "postbox", "tcp", "latency", "us"),
    "tcp_put_pingpong_service": ("rsm", "postbox", "tcp", "latency", "us"),
    "tcp_signal_pingpong": ("rsm", "postbox", "tcp", "latency", "us"),
    "tcp_get": ("rsm", "postbox", "tcp", "latency", "us"),
    "tcp_call": ("rsm", "postbox", "tcp", "latency", "us"),
    "tcp_put_stream": ("rsm", "postbox", "tcp", "bandwidth", "MB/s"),
    "tcp_put_barrier": ("rsm", "postbox", "tcp", "latency", "us"),
    "tcp_pingpong": ("raw", "raw", "tcp", "latency", "us"),
    "udp_pingpong": ("raw", "raw", "udp", "latency", "us"),
    "tcp_stream": ("raw", "raw", "tcp", "bandwidth", "MB/s"),
}
RATIOS = {"ratio_put_latency_8B": (8, "<=", 1.2), "ratio_put_stream_4MB": (4 << 20, ">=", 0.9)}


@pytest.fixture
def rsm_net_bench():
    return built(paths.bin_dir() / "postbox-rsm-net-bench")


def launch(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(paths.bin_dir() / "postbox"), "run", *map(str, args)],
                          capture_output=True, text=True, env=_env(), timeout=timeout, cwd=REPO)


def run_and_check(program, out, config: str, path: str, *options) -> list:
    """Run the bench under `postbox run -n 2 --nodes 2 @options` with --quick and
    two sizes; check its records and return them."""
    # a few seconds; the timeouts leave room for a machine busy with other jobs
    result = launch("-n", "2", "--nodes", "2", *options, "--timeout", "100", program,
                    "--quick", "--sizes", "8,4K", "--json", out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ratio_put_latency_8B" in result.stdout and "done in" in result.stdout
    assert "median[MB/s]" in result.stdout and "median[us]" in result.stdout
    records = results.load_jsonl(out)
    measured = [r for r in records if r["metric"] != "ratio"]
    assert {r["test"] for r in measured} == set(TESTS)
    for rec in records:
        assert results.missing_keys(rec) == [], rec
        assert (rec["placement"], rec["ranks"], rec["nodes"], rec["pairs"]) == (
            "off-node", 2, 2, 1)
        assert rec["config"] == config
        assert math.isfinite(rec["median"]) and rec["median"] > 0
    for rec in measured:
        suite, library, transport, metric, unit = TESTS[rec["test"]]
        assert (rec["suite"], rec["library"], rec["transport"]) == (suite, library, transport)
        assert (rec["metric"], rec["unit"]) == (metric, unit)
        assert rec["min"] > 0 and rec["max"] >= rec["min"] and rec["reps"] >= 5
        assert rec["probe_before"] > 0 and rec["probe_after"] > 0
        assert rec["note"].endswith(" via " + path)
    sizes = {test: sorted(r["size"] for r in measured if r["test"] == test) for test in TESTS}
    assert sizes.pop("tcp_signal_pingpong") == [0]
    assert sizes.pop("tcp_put_pingpong_service") == [8]
    assert sizes.pop("tcp_call") == [8]
    assert sizes.pop("tcp_put_barrier") == [8]
    assert all(found == [8, 4096] for found in sizes.values()), sizes
    for test in ("tcp_get", "tcp_call"):
        assert next(r for r in measured if r["test"] == test)["round_trip"] is True
    ratios = {r["test"]: r for r in records if r["metric"] == "ratio"}
    assert set(ratios) == set(RATIOS)
    for name, (size, op, target) in RATIOS.items():
        rec = ratios[name]
        assert (rec["size"], rec["target_op"], rec["target"], rec["unit"]) == (
            size, op, target, "x")
        assert rec["min"] <= rec["median"] <= rec["max"] and 1 <= rec["reps"] <= 3
    assert_nothing_left(str(program))
    return records


def test_two_virtual_nodes(rsm_net_bench, tmp_path):
    records = run_and_check(rsm_net_bench, tmp_path / "rsm-net.jsonl", "loopback", "loopback")
    assert all(r["note"].endswith("; 127.0.0.1 via loopback") for r in records
               if r["metric"] != "ratio")


@pytest.mark.skipif(netns.unavailable() is not None,
                    reason="--netns needs root and iproute2's `ip`: %s" % netns.unavailable())
def test_netns_crosses_the_veth_pair(rsm_net_bench, tmp_path):
    records = run_and_check(rsm_net_bench, tmp_path / "rsm-net.jsonl", "netns", "veth",
                            "--netns")
    assert all(r["note"].split("; ")[-1].startswith(("10.", "172.")) for r in records
               if r["metric"] != "ratio")


@pytest.mark.parametrize("shape,found", [
    ((), "1 rank on 1 node"),
    (("-n", "2"), "2 ranks on 1 node"),
    (("-n", "3", "--nodes", "3"), "3 ranks on 3 nodes"),
])
def test_only_two_ranks_on_two_nodes(rsm_net_bench, shape, found):
    if shape:
        result = launch(*shape, rsm_net_bench, "--quick", timeout=30)
    else:
        result = subprocess.run([str(rsm_net_bench), "--quick"], capture_output=True, text=True,
                                env=_env(), timeout=30, cwd=REPO)
    assert result.returncode == 2
    assert "needs 2 ranks on 2 nodes: postbox run -n 2 --nodes 2" in result.stderr
    assert "this job has %s" % found in result.stderr
    assert result.stderr.count("needs 2 ranks") == 1  # rank 0 alone says it
    assert_nothing_left(str(rsm_net_bench))


def test_help_names_the_launcher(rsm_net_bench):
    result = subprocess.run([str(rsm_net_bench), "--help"], capture_output=True, text=True,
                            timeout=10)
    assert result.returncode == 0
    assert "postbox run -n 2 --nodes 2" in result.stdout
