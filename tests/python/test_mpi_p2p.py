"""MPI point-to-point (``pbt-mpi-p2p``, tests/mpi/test_p2p.c) under ``postbox run``.

The same program runs on one node (every channel through shared memory),
on two virtual nodes (ranks of different nodes over the tcp transport),
and with more ranks than cores (waiting ranks must give up the CPU).
"""

from __future__ import annotations

import os

import pytest

from conftest import built
from postbox import paths
from test_run import run

pytestmark = pytest.mark.short

LAYOUTS = [
    pytest.param(["-n", "2"], id="2-ranks-1-node"),
    pytest.param(["-n", "2", "--nodes", "2"], id="2-ranks-2-nodes"),
    pytest.param(["-n", "4", "--nodes", "2"], id="4-ranks-2-nodes"),
    pytest.param(["-n", "3"], id="3-ranks-1-node"),
    # directed polling; rings and pools so small that flow control works hard
    pytest.param(["-n", "3", "-x", "POSTBOX_POLLALL=0"], id="3-ranks-directed-polling"),
    pytest.param(["-n", "4", "--nodes", "2", "-x", "POSTBOX_NUMPOSTBOX=2", "-x",
                  "POSTBOX_POOL_BLOCKS=3", "-x", "POSTBOX_BLOCK_SIZE=256"],
                 id="4-ranks-2-nodes-tiny-rings"),
    # rank 0's pool on node 1 is shared by ranks 2 and 3 and holds 4 blocks:
    # with directed polling, shared_pool fills it with messages to rank 2
    # that rank 2 does not read before rank 3 got its own
    pytest.param(["-n", "4", "--nodes", "2", "-x", "POSTBOX_POLLALL=0", "-x",
                  "POSTBOX_POOL_BLOCKS=4", "-x", "POSTBOX_POOL_BLOCKS_NET=4", "-x",
                  "POSTBOX_BLOCK_SIZE=256"],
                 id="4-ranks-2-nodes-directed-tiny-pools"),
    # the same with the default pools: the messages to rank 3 go through its
    # reserve, which rank 3, polling with MPI_Test, must give back at once
    pytest.param(["-n", "4", "--nodes", "2", "-x", "POSTBOX_POLLALL=0"],
                 id="4-ranks-2-nodes-directed"),
]


@pytest.fixture
def p2p(real_build):
    return built(paths.bin_dir() / "pbt-mpi-p2p")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_point_to_point(p2p, layout):
    result = run(*layout, "--timeout", 120, p2p, timeout=150)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "p2p: ok" in result.stdout, result.stdout + result.stderr


def test_more_ranks_than_cores_finish(p2p):
    """8 ranks on 2 cores, each exchanging with all at once: only ranks
    that sleep when they wait let the others run."""
    result = run("-n", "8", "--timeout", 120, p2p, "crowd", "any_source", "sendrecv",
                 timeout=150)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "p2p: ok" in result.stdout


def expected_area_bytes(ranks, ranks_per_node, postboxes=16, block=4096, pool=64,
                        pool_net=256, reserve=2, page=4096):
    """The size of a node's postbox area as docs/mpi.md lays it out: a line
    per rank of the node, an acknowledgement pair per (rank of the node,
    job rank), then for every sender of the job its rings toward the
    node's ranks and one pool shared by them (plus a reserve per rank)."""
    n = ranks_per_node
    head = -(-(64 * n + 16 * n * ranks) // 64) * 64
    senders = 0
    for s in range(ranks):
        blocks = (pool if s < n else pool_net) + reserve * n
        senders += -(-(n * postboxes * 64 + blocks * block) // 64) * 64
    return -(-(head + senders) // page) * page


@pytest.mark.parametrize("ranks,nodes", [(4, 2), (6, 1)])
def test_pools_are_per_node(p2p, ranks, nodes):
    """Each sender owns one pool on each node, shared by the ranks there
    (Sun MPI's buffer placement): a node's memory grows with the job's
    size, not with its square."""
    result = run("-n", ranks, "--nodes", nodes, "-x", "POSTBOX_SHOW_TRANSPORTS=1",
                 "--timeout", 60, p2p, "pingpong", timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    areas = [int(line.split(" postbox area of ")[1].split()[0])
             for line in result.stderr.splitlines() if " postbox area of " in line]
    assert len(areas) == nodes, result.stderr
    per_node = ranks // nodes
    for size in areas:
        assert size == expected_area_bytes(ranks, per_node), result.stderr


@pytest.mark.parametrize("ranks,nodes,env", [
    (2, 1, []), (4, 1, []), (4, 2, []), (8, 1, []), (4, 1, ["-x", "POSTBOX_SPIN=500"])])
def test_waiting_ranks_yield_at_once_when_the_host_is_oversubscribed(p2p, ranks, nodes, env):
    """With more ranks on the host than cores (virtual nodes share the
    host's), a waiting rank holds a core the rank it waits for needs: it
    yields at once instead of spinning, unless POSTBOX_SPIN says, and, when
    the job is on one node and at most two ranks share a core, keeps
    yielding 5 ms before it sleeps (POSTBOX_YIELD_US unset)."""
    result = run("-n", ranks, "--nodes", nodes, "-x", "POSTBOX_SHOW_TRANSPORTS=1", *env,
                 "--timeout", 60, p2p, "pingpong", timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if " postbox area of " in line]
    assert len(lines) == nodes, result.stderr
    cpus = len(os.sched_getaffinity(0))
    oversubscribed = ranks > cpus
    yield_us = 5000 if oversubscribed and nodes == 1 and ranks <= 2 * cpus else 0
    want = 500 if env else (0 if oversubscribed else 2000)
    for line in lines:
        assert "polls %d times before it yields" % want in line, line
        assert "yields 20 times and %d us before it sleeps" % yield_us \
            in line, line
        assert ("more ranks than cores" in line) == oversubscribed, line


def test_ranks_bound_one_to_a_core_spin(p2p):
    """postbox run --bind-to core leaves each rank one CPU: alone on it, a
    rank spins before it yields (the launcher's POSTBOX_CPU_SHARERS, not its
    own affinity of one CPU, says it has the core to itself); two to a CPU,
    it yields at once."""
    cpus = len(os.sched_getaffinity(0))
    if cpus < 2:
        pytest.skip("needs 2 CPUs")
    for ranks, crowded in ((2, False), (2 * cpus, True)):
        result = run("-n", ranks, "--bind-to", "core", "-x", "POSTBOX_SHOW_TRANSPORTS=1",
                     "--timeout", 60, p2p, "pingpong", timeout=90)
        assert result.returncode == 0, result.stdout + result.stderr
        lines = [line for line in result.stderr.splitlines() if " postbox area of " in line]
        assert lines, result.stderr
        for line in lines:
            assert "polls %d times before it yields" % (0 if crowded else 2000) in line, line
            assert ("more ranks than cores" in line) == crowded, line


def test_fatal_error_names_the_call_and_ends_the_job(p2p, tmp_path):
    """Under MPI_ERRORS_ARE_FATAL a bad argument ends the job with one
    message naming the call and the error."""
    prog = tmp_path / "bad_rank.c"
    prog.write_text(
        "#include <mpi.h>\n"
        "int main(int argc, char **argv) {\n"
        "    int v = 0;\n"
        "    MPI_Init(&argc, &argv);\n"
        "    MPI_Send(&v, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);\n"
        "    MPI_Finalize();\n"
        "    return 0;\n"
        "}\n")
    exe = tmp_path / "bad_rank"
    import subprocess
    cc = subprocess.run([str(paths.bin_dir() / "postbox-cc"), "-o", str(exe), str(prog)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    result = run("-n", "2", "--timeout", 60, exe, timeout=90)
    assert result.returncode != 0
    assert "MPI_Send: invalid rank: rank 99 is not in 0..1" in result.stderr, result.stderr


def test_refused_single_copy_falls_back_to_the_pool(p2p):
    """Rank 0 installs a seccomp filter refusing process_vm_readv (as a
    container's default profile does): its large on-node receives must
    still arrive, through the pool, with one warning."""
    result = run("-n", "2", "--timeout", 60, p2p, "no_single_copy", timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "p2p: ok" in result.stdout
    assert result.stderr.count("process_vm_readv refused") == 1, result.stderr


def test_refused_split_write_streams_without_a_warning(p2p):
    """Rank 1 installs a seccomp filter refusing process_vm_writev: the
    large on-node messages it sends, split with rank 0's read, must still
    arrive, streamed; rank 1 warns nothing (rank 0 keeps single copy, so
    "through the pool from now on" would be false, and said per message)."""
    result = run("-n", "2", "--timeout", 60, p2p, "no_split_write", timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "p2p: ok" in result.stdout
    assert "refused" not in result.stderr, result.stderr
