"""The tcp transport between the ranks of a real job (``pbt-xnode``).

``postbox run -n 2 --nodes 2`` puts the ranks on two virtual nodes of this
host: imports find their segment through the rendezvous sockets the nodes
share.  With ``--netns`` (root) each node has its own network namespace, so
imports go through the LOOKUP relay of the node's ranks, and the test can
cut node 1's link to check that a stream notices within the transport's
timeout.  With two rails (two loopback addresses, or ``--netns --rails 2``)
large puts are striped, and cutting one rail must not stop a stream.  The C conformance suite (CTest, ``rsm_*_tcp``) covers the rest of
the API between virtual nodes.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from conftest import REPO, built
from postbox import netns, paths
from test_run import _env, launcher_cmd, run

pytestmark = pytest.mark.short

CAN_NETNS = netns.unavailable() is None
needs_netns = pytest.mark.skipif(
    not CAN_NETNS, reason="--netns needs root and iproute2's `ip`: %s" % netns.unavailable())
TWO_LOOPBACK_RAILS = ["-x", "POSTBOX_TCP_ADDR=127.0.0.1,127.0.0.2"]
MODES = [pytest.param([], id="vnodes"), pytest.param(["--netns"], id="netns", marks=needs_netns),
         pytest.param(TWO_LOOPBACK_RAILS, id="vnodes-2rails"),
         pytest.param(["--netns", "--rails", "2"], id="netns-2rails", marks=needs_netns)]


@pytest.fixture
def xnode(real_build):
    return built(paths.bin_dir() / "pbt-xnode")


@pytest.mark.parametrize("extra", MODES)
def test_basic_calls_between_nodes(xnode, extra):
    result = run("-n", 2, "--nodes", 2, *extra, xnode, "basic")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rank 0: ok" in result.stdout and "rank 1: ok" in result.stdout


@pytest.mark.parametrize("extra", MODES)
def test_gets_beside_put_streams_both_ways(xnode, extra):
    result = run("-n", 2, "--nodes", 2, *extra, xnode, "crossfire")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rank 0: ok" in result.stdout and "rank 1: ok" in result.stdout


@pytest.mark.parametrize("extra", MODES)
def test_stream_to_killed_exporter_fails_promptly(xnode, extra):
    result = run("-n", 2, "--nodes", 2, *extra, xnode, "exporter-dies")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error after" in result.stdout


@pytest.mark.parametrize("extra", MODES)
def test_requests_to_a_stopped_peer_time_out(xnode, extra):
    """A connect toward a stopped node ends with RSMERR_TIMEOUT at its
    deadline, however many addresses its lookup dials; a get after its own."""
    result = run("-n", 2, "--nodes", 2, *extra, "-x", "POSTBOX_TCP_REQUEST_TIMEOUT_MS=1000",
                 "-x", "POSTBOX_TCP_REPLY_TIMEOUT_MS=500", xnode, "stopped-peer")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lookup dialled unanswered after" in result.stdout
    assert "lookup over the connection unanswered after" in result.stdout
    assert "get unanswered after" in result.stdout


def test_wrong_shape_is_refused(xnode):
    result = run("-n", 1, xnode, "basic")
    assert result.returncode != 0
    assert "run as 2 ranks on 2 nodes" in result.stderr


@needs_netns
def test_cut_link_fails_stream_within_timeout(xnode):
    """Node 1's veth goes down mid-stream: no FIN, no RST, only silence."""
    timeout_ms = 2000
    job, out, err, noticed = _cut_during_stream(xnode, "link-cut", netns.JobNetwork.port(1),
                                                timeout_ms)
    assert job.returncode == 0, out + err
    assert "connection aborted" in out or "unreachable" in out, out
    # the error comes when the unanswered data times out, plus the job's exit
    assert noticed < timeout_ms / 1000 + 2.0, (noticed, out, err)
    print("stream noticed the cut after %.2f s" % noticed)

def _cut_during_stream(xnode, mode, port, timeout_ms=2000, rails=1):
    """Run ``pbt-xnode MODE`` on 2 nodes under --netns; once rank 0 prints
    "streaming", set hub port @port down.  Returns (job, out, err, seconds
    from the cut to the job's end)."""
    env = _env()
    env["POSTBOX_TCP_TIMEOUT_MS"] = str(timeout_ms)
    job = subprocess.Popen(launcher_cmd("-n", 2, "--nodes", 2, "--netns", "--rails", rails,
                                        xnode, mode),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                           cwd=REPO)
    try:
        assert job.stdout.readline().strip() == "streaming"
        time.sleep(0.3)
        hub = "pbx-%d-hub" % job.pid
        subprocess.run(["ip", "-n", hub, "link", "set", port, "down"], check=True)
        cut = time.monotonic()
        out, err = job.communicate(timeout=60)
        return job, out, err, time.monotonic() - cut
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


@needs_netns
def test_stream_fails_over_when_one_rail_is_cut(xnode):
    """Two rails; node 1's rail 0 goes down mid-stream of striped puts: the
    stream goes on over rail 1 with no error, what was in flight on rail 0
    arrives (every region ends with its last round), and the topology shows
    tcp0 down and tcp1 up."""
    job, out, err, after = _cut_during_stream(xnode, "failover", netns.JobNetwork.port(1, 0),
                                              rails=2)
    assert job.returncode == 0, out + err
    assert "no error" in out and "all 4 regions hold their last round" in out, out
    assert "rail 0 to node 1 broke" in err, err
    print(out.strip(), "(job ended %.2f s after the cut)" % after)


@needs_netns
@pytest.mark.parametrize("mode", ["call-lost", "call-confirmed"])
def test_call_without_reply_lost_with_a_rail_fails_the_next_get(xnode, mode):
    """Two rails; node 1's rail 0 goes down.  A call without reply sent on
    it after the cut is lost (calls are never sent again): the get that
    follows the break fails with RSMERR_CONN_ABORTED, once.  A call
    confirmed by a get's reply before the cut fails nothing."""
    job, out, err, after = _cut_during_stream(xnode, mode, netns.JobNetwork.port(1, 0), rails=2)
    assert job.returncode == 0, out + err
    want = "the lost call failed the next get" if mode == "call-lost" else "no call lost"
    assert want in out, out + err
    assert "rail 0 to node 1 broke" in err, err
    print(out.strip(), "(job ended %.2f s after the cut)" % after)
