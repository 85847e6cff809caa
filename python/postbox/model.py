"""A LogGP model of the collectives and traffic patterns, for clusters this
machine cannot hold: its pricing, and its validation against the
collective and traffic benches.

The model is three modules.  This one prices: the machine and the
cluster, each algorithm's messages (predict), the traffic patterns at
saturation (saturation_round), the load terms a Machine is priced with
(with_penalties); and it holds the fitted Model, validates it against the
collective bench's records (validate) and the traffic bench's
(validate_traffic) and extrapolates it to larger clusters (extrapolate).
postbox.model_fit fits the Model of a results folder (model_fit.build:
the LogGP parameters, the rates, the load samples, the calibrations);
it imports this module to price what it fits, so this one does not
import it and does not re-export its names: build and the fits are
imported from postbox.model_fit.  postbox.model_rules names the
algorithm each library's rules pick; its names are re-exported here,
where the model's users import them.

What it is.  Each collective algorithm that MPI libraries use is written as
the messages it sends (a schedule of steps, or a tree), and each message is
priced with the LogGP parameters (postbox.loggp.LogGP) of the path it takes:
the "node" parameters between two ranks of one node, the "net" parameters
between nodes.  A cluster is @nodes nodes of @cores ranks each, ranks placed
in blocks (ranks 0..c-1 on node 0, ...).  The model is two-level in two
ways: a flat algorithm's steps cost the node or the net price by where each
partner is (and the ranks of a node that cross to other nodes in the same
step share its link: k of them move k times the bytes through it, the
simple per-link contention model), and Postbox's node-aware algorithms
(docs/mpi.md, "Collectives on a node") are composed of the node-area phases
priced with the node parameters and the machine's memcpy rate, and the
leaders' point-to-point step priced with the net parameters.

Prices (LogGP, Alexandrov et al.):
- a message of m bytes: o_s + L + (m - 1) G + o_r (LogGP.one_way);
- a synchronised step (every rank sends and receives, then the next step):
  the one_way of its slowest message; the k ranks of one node that send
  off the node in that step share its link, so their bytes are k (m - 1) G;
- messages posted at once (direct algorithms): one latency, then one
  max(g, o_s) + (m - 1) G per further message (LogGP.gap);
- a tree: each rank forwards to its children one after the other, child j
  of a parent sent j gaps after the parent received;
- a reduction step also combines its bytes at the machine's reduce rate;
- a node-area phase (a step count stored and seen by the node's other
  ranks): the send overhead o_s and a cache line's trip between cores;
  a rank's own bytes move at the memcpy rate (below 2 MB each core in
  its own caches, from 2 MB sharing the node's bandwidth), bytes another
  rank of the node wrote at the node's G where they cross cores
  (Machine.read_time).
The bench times each call as the mean over the ranks of their time in the
call (bench/mpi_coll.c), so where ranks finish at different times (trees,
rooted collectives) the model gives that mean too.

Oversubscription and load.  This machine runs 4 and 8 ranks on 2 cores,
beside other work: then a rank often waits for its peer to be scheduled,
and is preempted in its copies.  The bench samples the runnable tasks just
before and after each run (machine.json's runs, load_start and load_end;
model_fit.run_backgrounds): B, the other work the run's ranks competed
with.  Every byte's time is then stretched by the tasks per core, max(1,
(ranks + B) / cores) (Machine.share), relative to the tasks per core
while the LogGP's G was measured (model_fit.reference_shares), and each
step of ranks that outnumber the cores pays a penalty
(Machine.hop_penalty): a fitted wake-up cost per rank beyond one per core
(model_fit.fit_wake), or without load samples a per-shape calibration
(model_fit.calibrate_penalties).  Both are zero on the clusters the model
extrapolates to (one rank per core, nothing else running).

Which algorithm: each library's own default rules at the call's
communicator size and bytes (library_algorithm): Postbox's table
(src/mpi/coll_table.txt), Open MPI 5.0's coll/tuned fixed decision
(OPENMPI_TUNED), MPICH 5.0's ch4, posix and MPIR selection
(mpich_algorithm), all in postbox.model_rules.

Nothing here runs anything: it reads records.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

from postbox.loggp import LogGP
# the libraries' rules, also imported from here by the model's users
from postbox.model_rules import (  # noqa: F401
    ALGORITHM_NAMES, DEFAULT_ALGORITHM, NODE_ALGORITHMS, OPENMPI_TUNED, RULE_FAMILIES,
    CollTable, Rule, default_table_path, family_of, floor_power_of_two, is_power_of_two,
    library_algorithm, load_table, mpich_algorithm, mpich_mpir_algorithm, openmpi_algorithm,
    postbox_choice)
from postbox.plot import number
from postbox.trafficreport import shape_of as traffic_shape_of

US = 1e-6
# copies of this many bytes or more are taken to leave the caches: those
# that run at once share the node's memory bandwidth (Machine.node_bandwidth)
MEMORY_BOUND_BYTES = 2 << 20
# the collectives the model covers (bench/mpi_coll.c's names)
COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather",
               "alltoall")
NODE, NET = "node", "net"
# the key of Machine.net_arrive among Model.penalties' paths
NET_ARRIVE = "net-arrive"


# ---- the machine and the cluster ---------------------------------------------

@dataclass(frozen=True)
class Rate:
    """A rate in bytes/s against size: (size, bytes/s) points, read by
    interpolation in log(size) and held flat past the ends."""

    points: tuple

    def __post_init__(self) -> None:
        if not self.points or any(not (r > 0) for _, r in self.points):
            raise ValueError("a rate needs points with positive bytes/s")

    def at(self, size: float) -> float:
        points = sorted(self.points)
        if size <= points[0][0]:
            return points[0][1]
        for (s0, r0), (s1, r1) in zip(points, points[1:]):
            if size <= s1:
                if s0 <= 0:
                    return r1
                t = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
                return r0 + (r1 - r0) * t
        return points[-1][1]

    def time(self, size: float) -> float:
        """Seconds to move (or combine) @size bytes."""
        return 0.0 if size <= 0 else size / self.at(size)


def constant_rate(bytes_per_second: float) -> Rate:
    return Rate(((1.0, bytes_per_second),))


@dataclass(frozen=True)
class Machine:
    """What the model prices with: the node and net LogGP, the node's memcpy
    rate (node-area copies), the reduce rate (a[i] += b[i] bytes/s), the
    node's memory bandwidth as MPI sees it (bytes/s of all its ranks'
    messages at once: copies at once share it), a cache line's trip
    between cores (@line, the node area's steps), and, for ranks that share
    cores, the per-step penalties and the ranks per core (@share: every
    byte's time is that many times longer)."""

    node: LogGP
    net: Optional[LogGP] = None
    copy: Optional[Rate] = None
    reduce: Optional[Rate] = None
    node_bandwidth: Optional[Rate] = None
    hop_penalty: float = 0.0
    net_hop_penalty: float = 0.0
    # seconds more of a step between nodes where every rank sends and
    # waits (its partner may not be running when its message comes), over
    # a message that one rank sends and another receives (the penalty
    # above); model_fit.calibrate_penalties, 0 while the ranks fit the cores
    net_arrive: float = 0.0
    share: float = 1.0
    # seconds for a cache line stored by one core to be seen by another
    # (the RSM bench's cache-line ping-pong, half round trip): the node
    # area's step count travels so, not as a message
    line: Optional[float] = None
    # seconds more of a node-area step where every rank waits for all the
    # others (their arrival skew: a rank that waits for a later one), over
    # one where one rank stores and the others see (model_fit.calibrate_latency)
    arrive: float = 0.0
    # the tasks per core, 1 + excess_load, while the G of the node and of
    # the net path were measured (model_fit.reference_shares): @share is relative to
    # them, so a G fitted on a loaded machine is not stretched twice
    node_reference: float = 1.0
    net_reference: float = 1.0
    # the share of another rank's bytes on the node that a rank reads from
    # another core (with_penalties: 1 while the ranks fit the cores; of r
    # ranks on c cores, (r - r / c) / (r - 1): the others on its own core
    # hand it their bytes in its caches)
    cross: float = 1.0

    def byte_time(self, path: str, streams: int = 1, size: float = 0) -> float:
        """Seconds per byte of one message on @path while @streams messages
        of the node move at once (on the node they share its memory
        bandwidth)."""
        reference = self.net_reference if path == NET else self.node_reference
        per_byte = self.params(path).G * self.share / max(reference, 1.0)
        if path == NODE:
            per_byte = max(per_byte, self.memory_byte_time(streams, size))
        return per_byte

    def memory_byte_time(self, streams: int, size: float) -> float:
        """Seconds per byte of each of @streams copies of @size bytes at
        once sharing the node's memory bandwidth: from MEMORY_BOUND_BYTES
        on (the data leaves the caches) the multi-pair bandwidth; below it
        each core copies in its own caches, so nothing is shared beyond
        the ranks of one core (@share, priced by the callers); 0 when
        unknown."""
        if self.node_bandwidth is not None and size >= MEMORY_BOUND_BYTES:
            return streams / self.node_bandwidth.at(size)
        return 0.0

    def copy_time(self, size: float, streams: int = 1) -> float:
        """Seconds of one rank's copy of @size bytes while @streams ranks of
        the node copy at once."""
        if size <= 0:
            return 0.0
        # a copy goes no faster than memcpy
        per_byte = 1.0 / self.copy.at(size) if self.copy is not None else self.node.G
        per_byte = max(per_byte * self.share, self.memory_byte_time(streams, size))
        return size * per_byte

    def read_time(self, size: float, streams: int = 1) -> float:
        """Seconds of one rank's copy of @size bytes that another rank of
        the node wrote (its cell, or its buffer by single copy) while
        @streams ranks of the node copy at once: the bytes that cross
        between cores (the share @cross) take the node's point-to-point
        rate (byte_time of the node G, never faster than memcpy), the rest
        memcpy's (copy_time)."""
        if size <= 0:
            return 0.0
        own = self.copy_time(size, streams)
        moved = max(size * self.byte_time(NODE, streams, size), own)
        return self.cross * moved + (1.0 - self.cross) * own

    def reduce_time(self, size: float) -> float:
        if self.reduce is not None:
            return self.reduce.time(size) * self.share
        return self.copy_time(size)

    def message(self, path: str, size: float, streams: int = 1) -> float:
        """one_way of a @size-byte message on @path, with the penalty and
        the shared bytes."""
        p = self.params(path)
        return p.o_s + p.L + p.o_r + max(size - 1, 0) * self.byte_time(path, streams, size) \
            + self.penalty(path)

    def sender_gap(self, path: str, size: float) -> float:
        p = self.params(path)
        return max(p.g, p.o_s) + max(size - 1, 0) * self.byte_time(path, 1, size)

    def params(self, path: str) -> LogGP:
        if path == NET:
            if self.net is None:
                raise ValueError("no net LogGP for a cluster of several nodes")
            return self.net
        return self.node

    def penalty(self, path: str) -> float:
        return self.net_hop_penalty if path == NET else self.hop_penalty


@dataclass(frozen=True, order=True)
class Cluster:
    """@nodes nodes of @cores ranks each, ranks placed in blocks."""

    nodes: int
    cores: int

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.cores < 1:
            raise ValueError("a cluster needs at least one node of one rank")

    @property
    def ranks(self) -> int:
        return self.nodes * self.cores

    def node_of(self, rank: int) -> int:
        return rank // self.cores

    def path(self, a: int, b: int) -> str:
        return NODE if self.node_of(a) == self.node_of(b) else NET

    @property
    def label(self) -> str:
        if self.nodes == 1:
            return "%d ranks on one node" % self.ranks
        return "%d ranks, %d nodes of %d" % (self.ranks, self.nodes, self.cores)


def log2ceil(n: int) -> int:
    return max(0, (n - 1).bit_length())



# ---- steps: synchronised, and posted at once -----------------------------------

@dataclass(frozen=True)
class Step:
    """One step of a schedule: every rank r sends @size bytes to
    @partner(r, P) (shift d: r + d; xor d: r ^ d); @combine: it also
    combines @size bytes."""

    kind: str  # "shift" or "xor"
    distance: int
    size: float
    combine: bool = False

    def partner(self, rank: int, ranks: int) -> int:
        if self.kind == "xor":
            return rank ^ self.distance
        return (rank + self.distance) % ranks


@functools.lru_cache(maxsize=65536)
def _crossing(kind: str, distance: int, cluster: Cluster) -> tuple:
    """(ranks of node 0 whose partner is on node 0, ranks of node 0 whose
    partner is on another node) in a step @kind @distance: block placement
    makes every node alike for shifts, and for xor when the cores are a
    power of two."""
    local = crossing = 0
    step = Step(kind, distance, 0)
    for rank in range(min(cluster.cores, cluster.ranks)):
        partner = step.partner(rank, cluster.ranks)
        if partner == rank or partner >= cluster.ranks:
            continue
        if cluster.node_of(partner) == 0:
            local += 1
        else:
            crossing += 1
    return local, crossing


def step_parts(machine: Machine, cluster: Cluster, step: Step) -> tuple:
    """(latency, occupancy, gap) of @step: latency o_s + L + o_r of its
    slowest path (between nodes also Machine.net_arrive: every rank of a
    step waits), occupancy its bytes' time (k ranks of a node crossing
    share its link: k (m - 1) G), gap the sender's max(g, o_s)."""
    local, crossing = _crossing(step.kind, step.distance, cluster)
    bytes_ = max(step.size - 1, 0)
    latency = occupancy = gap = 0.0
    if local:
        p = machine.node
        latency = p.o_s + p.L + p.o_r + machine.penalty(NODE)
        occupancy = bytes_ * machine.byte_time(NODE, local, step.size)
        gap = max(p.g, p.o_s)
    if crossing:
        p = machine.params(NET)
        latency = max(latency, p.o_s + p.L + p.o_r + machine.penalty(NET) + machine.net_arrive)
        occupancy = max(occupancy, crossing * bytes_ * machine.byte_time(NET))
        gap = max(gap, max(p.g, p.o_s))
    return latency, occupancy, gap


def synchronised(machine: Machine, cluster: Cluster, steps: Sequence[Step]) -> float:
    """Seconds of @steps one after the other (each waits for its messages)."""
    total = 0.0
    for step in steps:
        latency, occupancy, _ = step_parts(machine, cluster, step)
        if latency == 0.0 and occupancy == 0.0:
            continue
        total += latency + occupancy
        if step.combine:
            total += machine.reduce_time(step.size)
    return total


def posted_at_once(machine: Machine, cluster: Cluster, steps: Sequence[Step]) -> float:
    """Seconds of @steps' messages all posted at once: the largest latency,
    then every message's bytes and the sender's gap between messages."""
    latency = occupancy = gaps = 0.0
    count = 0
    for step in steps:
        lat, occ, gap = step_parts(machine, cluster, step)
        if lat == 0.0 and occ == 0.0:
            continue
        latency = max(latency, lat)
        occupancy += occ
        if count:
            gaps += gap
        count += 1
    return latency + occupancy + gaps


# ---- trees ------------------------------------------------------------------

def binomial_children(rank: int, ranks: int) -> list:
    """The children of @rank in the binomial tree rooted at 0, farthest
    (largest subtree) first: rank + 2^k for every 2^k below rank's lowest
    set bit (all of them for 0)."""
    low = rank & -rank if rank else 1 << log2ceil(ranks)
    out = []
    mask = low >> 1
    while mask:
        if rank + mask < ranks:
            out.append(rank + mask)
        mask >>= 1
    return out


def subtree_size(rank: int, ranks: int) -> int:
    low = rank & -rank if rank else 1 << log2ceil(ranks)
    return min(low, ranks - rank)


def _edge(machine: Machine, cluster: Cluster, a: int, b: int, size: float) -> tuple:
    """(one_way + penalty, sender's gap) of a message a -> b of @size bytes."""
    path = cluster.path(a, b)
    return machine.message(path, size), machine.sender_gap(path, size)


def binomial_children_nearest_first(rank: int, ranks: int) -> list:
    """binomial_children(@rank, @ranks) nearest (smallest subtree) first,
    the order a rank of tree_up receives from them."""
    return binomial_children(rank, ranks)[::-1]


def tree_down(machine: Machine, cluster: Cluster, size_of: Callable[[int], float],
              children: Callable[[int, int], list] = binomial_children) -> list:
    """Each rank's time in a tree from rank 0 downward (Bcast, Scatter):
    every rank forwards to its children(rank, ranks) one after the other
    (the binomial tree's farthest first), its message to child c size_of(c)
    bytes; a rank is done when it has received and sent to all its
    children.  Parents are numbered below their children."""
    ranks = cluster.ranks
    arrived = [0.0] * ranks
    done = [0.0] * ranks
    for rank in range(ranks):
        t = arrived[rank]
        for child in children(rank, ranks):
            one_way, gap = _edge(machine, cluster, rank, child, size_of(child))
            arrived[child] = t + one_way
            t += gap
        done[rank] = t
    return done


def tree_up(machine: Machine, cluster: Cluster, size_of: Callable[[int], float],
            combine: bool,
            children: Callable[[int, int], list] = binomial_children_nearest_first) -> list:
    """Each rank's time in a tree toward rank 0 (Reduce, Gather): a rank
    receives size_of(c) bytes from each of its children(rank, ranks) in
    that order (the binomial tree's nearest first), combining each when
    @combine, then sends size_of(rank) bytes to its parent; a rank is done
    when it has sent (the root when it has all).  Parents are numbered
    below their children."""
    ranks = cluster.ranks
    ready = [0.0] * ranks
    done = [0.0] * ranks
    for rank in reversed(range(ranks)):
        t = 0.0
        for child in children(rank, ranks):
            one_way, gap = _edge(machine, cluster, child, rank, size_of(child))
            t = max(t, ready[child] + one_way)
            if combine:
                t += machine.reduce_time(size_of(child))
            # the child's send to this rank is its last act
            done[child] = ready[child] + gap
        ready[rank] = done[rank] = t
    return done


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def direct_rooted(machine: Machine, cluster: Cluster, size: float) -> list:
    """Each rank's time when rank 0 sends one @size-byte message to every
    other rank, all posted at once (Scatter direct; Gather direct is the
    same through the root's receives): rank i's message leaves i - 1 gaps
    after the first; the others are done when theirs arrives (Scatter) or
    has left (Gather, the same price here)."""
    ranks = cluster.ranks
    done = [0.0] * ranks
    t = 0.0
    for rank in range(1, ranks):
        one_way, gap = _edge(machine, cluster, 0, rank, size)
        done[rank] = t + one_way
        t += gap
    done[0] = max(done[1:], default=0.0)
    return done


# ---- the algorithms ------------------------------------------------------------

def _xor_steps(ranks: int, size_of: Callable[[int], float], combine: bool = False,
               reverse: bool = False) -> list:
    ks = list(range(log2ceil(ranks)))
    if reverse:
        ks.reverse()
    return [Step("xor", 1 << k, size_of(k), combine) for k in ks]



def _fold_steps(ranks: int, size: float, combine: bool) -> tuple:
    """The extra steps that bring a number of ranks that is not a power of
    two to one (before, after): a shift of 1 with @size bytes each."""
    if is_power_of_two(ranks):
        return [], []
    return [Step("shift", 1, size, combine)], [Step("shift", 1, size)]


def barrier_dissemination(m: Machine, c: Cluster, size: float = 0) -> float:
    return synchronised(m, c, [Step("shift", 1 << k, 0) for k in range(log2ceil(c.ranks))])


def barrier_recursive_doubling(m: Machine, c: Cluster, size: float = 0) -> float:
    before, after = _fold_steps(c.ranks, 0, False)
    return synchronised(m, c, before + _xor_steps(floor_power_of_two(c.ranks),
                                                  lambda k: 0) + after)


def bcast_binomial(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_down(m, c, lambda child: size))


def _scatter_binomial_times(m: Machine, c: Cluster, block: float) -> list:
    return tree_down(m, c, lambda child: block * subtree_size(child, c.ranks))


def bcast_scatter_allgather_ring(m: Machine, c: Cluster, size: float) -> float:
    block = size / c.ranks
    scatter = max(_scatter_binomial_times(m, c, block))
    return scatter + synchronised(m, c, [Step("shift", 1, block)] * (c.ranks - 1))


def bcast_scatter_allgather_rd(m: Machine, c: Cluster, size: float) -> float:
    block = size / c.ranks
    scatter = max(_scatter_binomial_times(m, c, block))
    return scatter + synchronised(m, c, _xor_steps(c.ranks, lambda k: block * (1 << k)))


def reduce_binomial(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_up(m, c, lambda rank: size, True))


def reduce_linear(m: Machine, c: Cluster, size: float) -> float:
    times = direct_rooted(m, c, size)
    times[0] += (c.ranks - 1) * m.reduce_time(size)
    return mean(times)


def _reduce_scatter_halving(ranks: int, size: float) -> list:
    return _xor_steps(floor_power_of_two(ranks), lambda k: size / (2 << k), combine=True)


def reduce_rabenseifner(m: Machine, c: Cluster, size: float) -> float:
    before, _ = _fold_steps(c.ranks, size, True)
    gather = _xor_steps(floor_power_of_two(c.ranks), lambda k: size / (2 << k), reverse=True)
    return synchronised(m, c, before + _reduce_scatter_halving(c.ranks, size) + gather)


def allreduce_recursive_doubling(m: Machine, c: Cluster, size: float) -> float:
    before, after = _fold_steps(c.ranks, size, True)
    return synchronised(m, c, before + _xor_steps(floor_power_of_two(c.ranks), lambda k: size,
                                                  True) + after)


def allreduce_rabenseifner(m: Machine, c: Cluster, size: float) -> float:
    before, after = _fold_steps(c.ranks, size, True)
    gather = _xor_steps(floor_power_of_two(c.ranks), lambda k: size / (2 << k), reverse=True)
    return synchronised(m, c, before + _reduce_scatter_halving(c.ranks, size) + gather + after)


def allreduce_ring(m: Machine, c: Cluster, size: float) -> float:
    block = size / c.ranks
    steps = [Step("shift", 1, block, True)] * (c.ranks - 1) + \
        [Step("shift", 1, block)] * (c.ranks - 1)
    return synchronised(m, c, steps)


def gather_binomial(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_up(m, c, lambda rank: size * subtree_size(rank, c.ranks), False))


def gather_direct(m: Machine, c: Cluster, size: float) -> float:
    times = direct_rooted(m, c, size)
    # the others are done once their one message has left
    for rank in range(1, c.ranks):
        times[rank] = _edge(m, c, rank, 0, size)[1]
    return mean(times)


def scatter_binomial(m: Machine, c: Cluster, size: float) -> float:
    return mean(_scatter_binomial_times(m, c, size))


def scatter_direct(m: Machine, c: Cluster, size: float) -> float:
    return mean(direct_rooted(m, c, size))


def allgather_ring(m: Machine, c: Cluster, size: float) -> float:
    return synchronised(m, c, [Step("shift", 1, size)] * (c.ranks - 1))


def allgather_recursive_doubling(m: Machine, c: Cluster, size: float) -> float:
    return synchronised(m, c, _xor_steps(c.ranks, lambda k: size * (1 << k)))


def allgather_bruck(m: Machine, c: Cluster, size: float) -> float:
    steps = [Step("shift", 1 << k, size * min(1 << k, c.ranks - (1 << k)))
             for k in range(log2ceil(c.ranks))]
    return synchronised(m, c, steps) + m.copy_time(size * c.ranks)


def alltoall_pairwise(m: Machine, c: Cluster, size: float) -> float:
    return synchronised(m, c, [Step("shift", d, size) for d in range(1, c.ranks)])


def alltoall_direct(m: Machine, c: Cluster, size: float) -> float:
    return posted_at_once(m, c, [Step("shift", d, size) for d in range(1, c.ranks)])


def alltoall_bruck(m: Machine, c: Cluster, size: float) -> float:
    steps = []
    for k in range(log2ceil(c.ranks)):
        blocks = sum(1 for j in range(c.ranks) if j & (1 << k))
        steps.append(Step("shift", 1 << k, size * blocks))
    return synchronised(m, c, steps) + 2 * m.copy_time(size * c.ranks)


# ---- more algorithms the libraries' decision rules pick ------------------------

def binary_children(rank: int, ranks: int) -> list:
    return [c for c in (2 * rank + 1, 2 * rank + 2) if c < ranks]


def chain_children(rank: int, ranks: int) -> list:
    return [rank + 1] if rank + 1 < ranks else []


def knomial_children(rank: int, ranks: int, radix: int = 4) -> list:
    """The children of @rank in the k-nomial tree of @radix rooted at 0,
    farthest first: rank + j k^i (j = 1 .. k-1) for every k^i below the
    lowest nonzero base-k digit of rank (all of them for 0)."""
    span = 1
    while span < ranks:
        span *= radix
    if rank:
        low = 1
        while (rank // low) % radix == 0:
            low *= radix
        span = low
    out = []
    step = span // radix
    while step >= 1:
        for j in range(radix - 1, 0, -1):
            if rank + j * step < ranks:
                out.append(rank + j * step)
        step //= radix
    return out


def linear_children(rank: int, ranks: int) -> list:
    return list(range(1, ranks)) if rank == 0 else []


def barrier_linear(m: Machine, c: Cluster, size: float = 0) -> float:
    # every rank's empty message to rank 0, then rank 0's to every rank
    up = max(tree_up(m, c, lambda rank: 0, False, linear_children))
    return up + mean(tree_down(m, c, lambda child: 0, linear_children))


def barrier_tree(m: Machine, c: Cluster, size: float = 0) -> float:
    # up a binomial tree to rank 0 and back down
    up = max(tree_up(m, c, lambda rank: 0, False))
    return up + mean(tree_down(m, c, lambda child: 0))


def bcast_linear(m: Machine, c: Cluster, size: float) -> float:
    return mean(direct_rooted(m, c, size))


def bcast_chain(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_down(m, c, lambda child: size, chain_children))


def bcast_binary(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_down(m, c, lambda child: size, binary_children))


def bcast_knomial(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_down(m, c, lambda child: size, knomial_children))


def reduce_chain(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_up(m, c, lambda rank: size, True, chain_children))


def reduce_binary(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_up(m, c, lambda rank: size, True, binary_children))


def allreduce_reduce_bcast(m: Machine, c: Cluster, size: float) -> float:
    return max(tree_up(m, c, lambda rank: size, True)) + bcast_binomial(m, c, size)


def gather_linear_sync(m: Machine, c: Cluster, size: float) -> float:
    # the root first asks each rank with an empty message, then receives
    return gather_direct(m, c, size) + m.message(NODE if c.nodes == 1 else NET, 0)


def allgather_neighbor(m: Machine, c: Cluster, size: float) -> float:
    # neighbour exchange (Chen et al.), on an even number of ranks: one
    # block with a neighbour, then p/2 - 1 steps of two blocks alternately
    # with either neighbour; otherwise the ring
    if c.ranks % 2:
        return allgather_ring(m, c, size)
    return synchronised(m, c, [Step("xor", 1, size)] +
                        [Step("shift", 1, 2 * size)] * (c.ranks // 2 - 1))


def allgather_linear(m: Machine, c: Cluster, size: float) -> float:
    # a gather to rank 0 then a linear bcast of the whole
    return max(direct_rooted(m, c, size)) + bcast_linear(m, c, size * c.ranks)


# MPICH's shared-memory ("posix") release-gather collectives on one node:
# the data moves through shared cells (MPICH 5.0's defaults: a 32 KB
# buffer in 4 cells, MPIR_CVAR_BCAST_INTRANODE_BUFFER_TOTAL_SIZE and
# _NUM_CELLS; the same for each rank's reduce buffer), the ranks signal
# with flags (a node-area phase each); the reduction goes up a k-ary tree
# of 4 up to 2 KB, of 2 above (MPIR_CVAR_REDUCE_INTRANODE_TREE_KVAL,
# _KVAL_LARGE, _MSG_SIZE_THRESHOLD)
RELEASE_GATHER_CELL = 8 << 10
RELEASE_GATHER_REDUCE_RADIX = ((2048, 4), (None, 2))


def _release_gather_bcast(m: Machine, ranks: int, size: float) -> float:
    # the root copies into the cells while the others copy out, a cell
    # behind: one release, the root's copy, the last cell's copy, the acks
    if ranks < 2:
        return 0.0
    cell = min(size, RELEASE_GATHER_CELL)
    return 2 * node_phase(m) + m.copy_time(size, ranks) + m.copy_time(cell, ranks)


def _release_gather_reduce(m: Machine, ranks: int, size: float) -> float:
    # every rank copies its vector into its cell; up a k-ary tree each
    # parent combines its children's cells, level by level
    radix = next(k for below, k in RELEASE_GATHER_REDUCE_RADIX if below is None or size <= below)
    levels, reached = 0, 1
    while reached < ranks:
        reached = reached * radix + 1
        levels += 1
    children = min(radix, ranks - 1)
    return m.copy_time(size, ranks) + levels * (node_phase(m, True) +
                                                children * m.reduce_time(size))


def bcast_release_gather(m: Machine, c: Cluster, size: float) -> float:
    return _release_gather_bcast(m, c.ranks, size)


def reduce_release_gather(m: Machine, c: Cluster, size: float) -> float:
    return _release_gather_reduce(m, c.ranks, size)


def allreduce_release_gather(m: Machine, c: Cluster, size: float) -> float:
    return _release_gather_reduce(m, c.ranks, size) + _release_gather_bcast(m, c.ranks, size)


def _relay(m: Machine, c: Cluster, size: float) -> float:
    # the bench's root rotates: for all roots but the node's first rank
    # the data takes one more message between the two
    return (c.ranks - 1) / c.ranks * m.message(NODE, size) if c.ranks > 1 else 0.0


def bcast_release_gather_relay(m: Machine, c: Cluster, size: float) -> float:
    return _relay(m, c, size) + bcast_release_gather(m, c, size)


def reduce_release_gather_relay(m: Machine, c: Cluster, size: float) -> float:
    return reduce_release_gather(m, c, size) + _relay(m, c, size)

# ---- Postbox's node area (docs/mpi.md, "Collectives on a node") ----------------

CELL_BYTES = 1 << 20  # POSTBOX_COLL_CELL's default
# across nodes the node algorithm's Bcast below this many bytes, and its
# Reduce below REDUCE_TREE_BELOW, go by point-to-point in a binomial tree
# over the ranks in node order (src/mpi/coll_node_nodes.c's
# BCAST_TREE_BELOW and REDUCE_TREE_BELOW): block placement makes that the
# binomial tree over the ranks
BCAST_TREE_BELOW = 65536
REDUCE_TREE_BELOW = 524288
# the node path takes these only when one rank's block fits a cell
BLOCK_COLLECTIVES = ("gather", "scatter", "allgather", "alltoall")


def node_phase(m: Machine, all_write: bool = False) -> float:
    """A step count stored by one rank and seen by the node's others: the
    caller's software overhead (o_s, as for a send) and the cache line's
    trip to the other core (Machine.line; without it the message's L +
    o_r); every rank of the node takes part, so where ranks share cores
    they must all be scheduled: the penalty once per rank per core; with
    @all_write every rank stores one and waits for all of them, which adds
    the wait for the last to arrive (Machine.arrive)."""
    return look_time(m) + m.penalty(NODE) * m.share + (m.arrive if all_write else 0.0)


def look_time(m: Machine) -> float:
    """A step count another rank stored, read by a rank already running:
    the caller's o_s and the cache line's trip to its core (Machine.line;
    without it the message's L + o_r)."""
    return m.node.o_s + (m.line if m.line is not None else m.node.L + m.node.o_r)


INLINE_BYTES = 56  # a payload this small travels in the writer's line


def node_area_one_node(m: Machine, collective: str, ranks: int, size: float) -> float:
    """@collective through the node's area on one node of @ranks ranks (the
    mean over the ranks of their time in the call); each copy is priced
    with the number of ranks copying at the same time: a rank's copy of its
    own data into its cell (or its receive buffer) at the memcpy rate
    (Machine.copy_time), a copy of what another rank wrote (its cell, or
    its buffer by single copy) at the node's point-to-point rate
    (Machine.read_time)."""
    phase, together = node_phase(m), node_phase(m, True)
    # a look at the step counts by a rank already running (the bench's
    # barrier before every call leaves no one to wake)
    look = look_time(m)
    others = ranks - 1

    def pieces(bytes_: float, streams: int, price: Callable[[float, int], float]) -> float:
        # through cells of CELL_BYTES: the copy's rate is that of its pieces
        if bytes_ <= INLINE_BYTES:
            return 0.0
        count = max(1.0, bytes_ / CELL_BYTES)
        return count * price(bytes_ / count, streams)

    def own(bytes_: float, streams: int) -> float:
        return pieces(bytes_, streams, m.copy_time)

    def read(bytes_: float, streams: int) -> float:
        return pieces(bytes_, streams, m.read_time)

    def combine(bytes_: float, streams: int) -> float:
        # another rank's cell combined into this one's: the slower of the
        # add and the cell's read
        return max(m.reduce_time(bytes_), read(bytes_, streams))

    if collective == "barrier":
        return together
    if collective == "bcast":
        if size <= INLINE_BYTES:
            return phase
        # the root writes into its cell in halves, the others read one half
        # while it writes the other
        half = min(size, CELL_BYTES) / 2
        writes = size / (2 * half)  # the cell's halves the message fills, in turn
        return 2 * phase + own(half, ranks) + \
            (2 * writes - 1) * max(own(half, ranks), read(half, ranks)) + read(half, ranks)
    if collective in ("reduce", "allreduce"):
        if size <= 4096:
            # every rank writes its vector, each that needs the result
            # combines all of them; the others of a Reduce leave once
            # written, so only its root waits for them (a rooted step),
            # but each first sees that the last reader of its cell is done
            # (a look at the step counts)
            if collective == "allreduce":
                return own(size, ranks) + together + others * combine(size, ranks)
            work = own(size, ranks) + phase + others * combine(size, 1)
            return (work + others * (look + own(size, ranks))) / ranks
        # in pieces: every rank writes its piece, rank i combines slice i
        # of all, the ranks that need the result copy their own slice and
        # read the others'
        return own(size, ranks) + together + others * combine(size / ranks, ranks) + \
            together + own(size / ranks, ranks) + read(others * size / ranks, ranks)
    if collective == "gather":
        # the others leave once written (a rooted step), each after seeing
        # that the last reader of its cell is done (a look at the step counts)
        root = own(size, ranks) + phase + read(others * size, 1)
        return (root + others * (look + own(size, ranks))) / ranks
    if collective == "scatter":
        return own(others * size, 1) + phase + read(size, others)
    if collective == "allgather":
        return own(size, ranks) + together + read(others * size, ranks)
    if collective == "alltoall":
        return own(others * size, ranks) + together + read(others * size, ranks)
    raise ValueError("no node-area model of %s" % collective)


def postbox_algorithm_time(m: Machine, c: Cluster, collective: str, algorithm: str,
                           size: float, table: "Optional[CollTable]" = None) -> float:
    """Postbox's @algorithm of @collective, the node's area two-level across
    nodes: the node step with the node parameters, the leaders' step (its
    algorithm from @table, on a communicator of one rank per node) with the
    net ones."""
    if algorithm not in NODE_ALGORITHMS:
        return ALGORITHMS[collective][algorithm](m, c, size)
    if collective in BLOCK_COLLECTIVES and size > CELL_BYTES:
        # blocks larger than a cell: the node path gives way
        return ALGORITHMS[collective][DEFAULT_ALGORITHM[collective]](m, c, size)
    if c.nodes == 1:
        return node_area_one_node(m, collective, c.ranks, size)
    leaders = Cluster(c.nodes, 1)

    def leader_step(coll: str, bytes_: float) -> float:
        choice = (table or CollTable([])).choose(coll, c.nodes, 1, c.nodes, int(bytes_))
        if choice in NODE_ALGORITHMS:
            choice = DEFAULT_ALGORITHM[coll]
        return ALGORITHMS[coll][choice](m, leaders, bytes_)

    local = lambda coll, bytes_: node_area_one_node(m, coll, c.cores, bytes_)  # noqa: E731
    if collective == "barrier":
        return 2 * node_phase(m) + leader_step("barrier", 0)
    if collective == "bcast":
        if size < BCAST_TREE_BELOW:
            return bcast_binomial(m, c, size)
        # a leader sends on before it broadcasts on its node: the root's
        # node broadcasts while the network step runs
        return leader_step("bcast", size) + local("bcast", size)
    if collective == "reduce":
        if size < REDUCE_TREE_BELOW:
            return reduce_binomial(m, c, size)
        return local("reduce", size) + leader_step("reduce", size)
    if collective == "allreduce":
        return local("reduce", size) + leader_step("allreduce", size) + local("bcast", size)
    if collective == "allgather":
        return (local("gather", size) + leader_step("allgather", size * c.cores)
                + local("bcast", size * c.ranks))
    # Gather, Scatter, Alltoall across nodes are point-to-point
    return ALGORITHMS[collective][DEFAULT_ALGORITHM[collective]](m, c, size)


ALGORITHMS = {
    "barrier": {"dissemination": barrier_dissemination,
                "recursive_doubling": barrier_recursive_doubling,
                "linear": barrier_linear, "tree": barrier_tree},
    "bcast": {"binomial": bcast_binomial,
              "scatter_allgather": bcast_scatter_allgather_ring,
              "scatter_allgather_rd": bcast_scatter_allgather_rd,
              "linear": bcast_linear, "chain": bcast_chain, "binary": bcast_binary,
              "knomial": bcast_knomial, "release_gather": bcast_release_gather,
              "release_gather_relay": bcast_release_gather_relay},
    "reduce": {"binomial": reduce_binomial, "rabenseifner": reduce_rabenseifner,
               "linear": reduce_linear, "chain": reduce_chain, "binary": reduce_binary,
               "release_gather": reduce_release_gather,
               "release_gather_relay": reduce_release_gather_relay},
    "allreduce": {"recursive_doubling": allreduce_recursive_doubling,
                  "rabenseifner": allreduce_rabenseifner, "ring": allreduce_ring,
                  "nonoverlapping": allreduce_reduce_bcast,
                  "release_gather": allreduce_release_gather},
    "gather": {"binomial": gather_binomial, "direct": gather_direct,
               "linear_sync": gather_linear_sync},
    "scatter": {"binomial": scatter_binomial, "direct": scatter_direct},
    "allgather": {"ring": allgather_ring, "recursive_doubling": allgather_recursive_doubling,
                  "bruck": allgather_bruck, "neighbor": allgather_neighbor,
                  "linear": allgather_linear},
    "alltoall": {"pairwise": alltoall_pairwise, "direct": alltoall_direct,
                 "bruck": alltoall_bruck},
}


def candidates(library: str, collective: str) -> tuple:
    """The algorithms a library whose rules the model does not know (not
    Postbox, Open MPI or MPICH: library_algorithm) may be running for
    @collective: every one the model prices."""
    return tuple(ALGORITHMS[collective])


def mpich_smp_time(m: Machine, c: Cluster, collective: str, size: float) -> float:
    """MPICH's node compositions on @c's several nodes: the node's
    release-gather step(s) on the node parameters, the first ranks'
    step (MPIR rules, one rank per node) on the net ones."""
    leaders = Cluster(c.nodes, 1)

    def roots(coll: str, bytes_: float) -> float:
        return ALGORITHMS[coll][mpich_mpir_algorithm(coll, c.nodes, bytes_)](m, leaders, bytes_)

    if collective == "barrier":
        return barrier_dissemination(m, Cluster(1, c.cores)) + roots("barrier", 0) + \
            _release_gather_bcast(m, c.cores, 0)
    if collective == "bcast":
        return roots("bcast", size) + _release_gather_bcast(m, c.cores, size)
    if collective == "reduce":
        return _release_gather_reduce(m, c.cores, size) + roots("reduce", size)
    if collective == "allreduce":
        return _release_gather_reduce(m, c.cores, size) + roots("allreduce", size) + \
            _release_gather_bcast(m, c.cores, size)
    raise ValueError("no MPICH node composition of %s" % collective)


# ---- predicting ------------------------------------------------------------------

def predict(machine: Machine, cluster: Cluster, collective: str, algorithm: str,
            size: float, table: Optional[CollTable] = None) -> float:
    """Seconds of one call of @collective by @algorithm (Postbox's node
    algorithms included) on @cluster."""
    if cluster.ranks < 2:
        return 0.0
    if algorithm in NODE_ALGORITHMS:
        return postbox_algorithm_time(machine, cluster, collective, algorithm, size, table)
    if cluster.nodes > 1 and machine.net is None:
        raise ValueError("no net LogGP for a cluster of several nodes")
    if algorithm == "smp":
        return mpich_smp_time(machine, cluster, collective, size)
    return ALGORITHMS[collective][algorithm](machine, cluster, size)


def relative_error(predicted: float, measured: float) -> Optional[float]:
    """(predicted - measured) / measured; None without a measurement."""
    if measured is None or not measured > 0:
        return None
    return (predicted - measured) / measured


# ---- traffic at saturation (bench/mpi_traffic.c) -------------------------------------

# bench/mpi_traffic.c's SEND_SLOTS: the sends each sender keeps outstanding
# at saturation
SEND_SLOTS = 8


def uniform_load(cluster: Cluster) -> float:
    """The expected messages leaving one node when every rank sends to a
    destination drawn uniformly from the other ranks."""
    if cluster.ranks < 2:
        return 0.0
    return cluster.cores * (cluster.ranks - cluster.cores) / (cluster.ranks - 1)


def _stretch(machine: Machine, path: str) -> float:
    """The tasks per core a rank's CPU work is stretched by on @path
    (Machine.share relative to the load while @path's LogGP was measured,
    as Machine.byte_time)."""
    reference = machine.net_reference if path == NET else machine.node_reference
    return machine.share / max(reference, 1.0)


def _traffic_counts(cluster: Cluster, destinations: Optional[Sequence[int]]) -> tuple:
    """(sends, receives, link) of one round where every rank with a
    destination sends one message: sends[r] and receives[r] {path: messages}
    of rank r, link the messages through the busiest node's link (out or
    in).  @destinations None: uniform random among the other ranks, by the
    expected counts."""
    ranks = cluster.ranks
    if destinations is None:
        on = (cluster.cores - 1) / (ranks - 1)
        each = {NODE: on, NET: 1.0 - on}
        link = uniform_load(cluster) if cluster.nodes > 1 else 0.0
        return [dict(each) for _ in range(ranks)], [dict(each) for _ in range(ranks)], link
    if len(destinations) != ranks:
        raise ValueError("%d destinations for %d ranks" % (len(destinations), ranks))
    sends = [{NODE: 0.0, NET: 0.0} for _ in range(ranks)]
    receives = [{NODE: 0.0, NET: 0.0} for _ in range(ranks)]
    out = [0] * cluster.nodes
    into = [0] * cluster.nodes
    for rank, dest in enumerate(destinations):
        if not 0 <= dest < ranks:
            raise ValueError("rank %d's destination %r is not a rank of %d" % (rank, dest, ranks))
        if dest == rank:
            continue
        path = cluster.path(rank, dest)
        sends[rank][path] += 1
        receives[dest][path] += 1
        if path == NET:
            out[cluster.node_of(rank)] += 1
            into[cluster.node_of(dest)] += 1
    return sends, receives, max(out + into)


def saturation_round(machine: Machine, cluster: Cluster,
                     destinations: Optional[Sequence[int]], size: float,
                     window: int = SEND_SLOTS) -> tuple:
    """(seconds, bound) of one round of traffic at saturation, as
    bench/mpi_traffic.c makes it: every rank with a destination sends one
    @size-byte message per round (to destinations[r]; None: a destination
    drawn uniformly among the other ranks, priced by the expected counts),
    keeping @window sends outstanding.  The round is the longest of:
    - "rank": one rank's work, every rank both a sender and a receiver:
      the larger of its sends' gaps (sum of g), its receives' gaps and its
      overheads (o_s of its sends, o_r of its receives, stretched by the
      tasks per core), plus its bytes: (m - 1) G of each message it sends
      and of each it receives, half each (G is a ping-pong's per-byte
      time, the sender's and the receiver's work together; byte_time
      stretches it by the tasks per core; on the node copies below 2 MB run
      in each core's caches, from 2 MB they share the node's bandwidth);
    - "link": the busiest node's link, its k messages out (or in) one after
      the other, k (m - 1) G of the net path;
    - "window": a sender's @window outstanding sends, each held for its
      one-way time o_s + L + (m - 1) G + o_r, so at most @window messages
      per one-way.
    No per-step wake-up penalty: senders with sends outstanding do not wait
    for a peer step by step.  ValueError when @destinations does not fit
    @cluster."""
    if cluster.ranks < 2 or size <= 0:
        return 0.0, "none"
    if cluster.nodes > 1 and machine.net is None:
        raise ValueError("no net LogGP for a cluster of several nodes")
    sends, receives, link = _traffic_counts(cluster, destinations)
    bytes_ = max(size - 1, 0)
    # on one node no message takes the net path (the Machine may have none)
    paths = (NODE, NET) if cluster.nodes > 1 else (NODE,)
    rank = window_time = 0.0
    for sent, got in zip(sends, receives):
        gaps_out = sum(sent[p] * machine.params(p).g for p in paths)
        gaps_in = sum(got[p] * machine.params(p).g for p in paths)
        overheads = sum((sent[p] * machine.params(p).o_s + got[p] * machine.params(p).o_r)
                        * _stretch(machine, p) for p in paths)
        moved = sum((sent[p] + got[p]) / 2 * bytes_ * machine.byte_time(p, 1, size)
                    for p in paths)
        rank = max(rank, max(gaps_out, gaps_in, overheads) + moved)
        one_way = sum(sent[p] * (machine.params(p).o_s + machine.params(p).L
                                 + machine.params(p).o_r + bytes_ * machine.byte_time(p, 1, size))
                      for p in paths)
        window_time = max(window_time, one_way / max(window, 1))
    link_time = link * bytes_ * machine.byte_time(NET) if cluster.nodes > 1 else 0.0
    return max((rank, "rank"), (link_time, "link"), (window_time, "window"))


def senders_of(cluster: Cluster, destinations: Optional[Sequence[int]]) -> int:
    """The ranks that send in a round (every rank under uniform traffic)."""
    if destinations is None:
        return cluster.ranks
    return sum(1 for rank, dest in enumerate(destinations) if dest != rank)


def active_ranks(cluster: Cluster, destinations: Optional[Sequence[int]]) -> int:
    """The ranks that send or receive (every rank under uniform traffic);
    a permutation's rank mapped to itself does neither, and in the traffic
    bench it sleeps between polls, leaving its core to the others."""
    if destinations is None:
        return cluster.ranks
    busy = {rank for rank, dest in enumerate(destinations) if dest != rank}
    return len(busy | {dest for rank, dest in enumerate(destinations) if dest != rank})


def saturation_bandwidth(machine: Machine, cluster: Cluster,
                         destinations: Optional[Sequence[int]], size: float,
                         window: int = SEND_SLOTS) -> float:
    """Bytes/s the whole cluster accepts at saturation (saturation_round):
    every sender's @size bytes per round; 0 when nothing is sent."""
    seconds, _ = saturation_round(machine, cluster, destinations, size, window)
    return senders_of(cluster, destinations) * size / seconds if seconds > 0 else 0.0


# ---- the load terms -------------------------------------------------------------

def scaled_penalty(penalties: dict, library: str, path: str, ranks: int,
                   cores: int) -> float:
    """The per-step penalty of @ranks ranks on @cores cores: 0 when they fit;
    else the one measured at the nearest rank count, scaled by the ranks
    per core beyond one."""
    if cores <= 0 or ranks <= cores:
        return 0.0
    measured = [(r, v) for (lib, p, r), v in penalties.items() if lib == library and p == path
                and r > cores]
    if not measured:
        return 0.0
    r, v = min(measured, key=lambda item: abs(item[0] - ranks))
    return v * (ranks / cores - 1) / (r / cores - 1)


def excess_load(ranks: int, cores: int, background: float = 0.0) -> float:
    """The tasks beyond one per core while @ranks ranks and @background other
    runnable tasks share @cores cores, per core: (ranks + background) /
    cores - 1, at least 0 (0 without cores)."""
    if cores <= 0:
        return 0.0
    return max((ranks + max(background, 0.0)) / cores - 1.0, 0.0)


def with_penalties(machine: Machine, penalties: dict, library: str, ranks: int,
                   cores: int, background: float = 0.0,
                   wake: Optional[float] = None) -> Machine:
    """@machine priced for @ranks ranks on @cores cores beside @background
    other runnable tasks (the bench's load samples, Model.background):
    every byte's time stretched by the tasks per core, max(1, (ranks +
    background) / cores); the per-step penalty of ranks that outnumber the
    cores @wake times their excess_load (the ranks alone: the small calls'
    waits did not follow the other work's load, bench/README.md) when
    @library's wake-up cost was fitted (Model.wake), else the calibrated
    or multi-pair one of the shape (scaled_penalty); between nodes the
    calibrated penalty of a message and Machine.net_arrive of a step where
    all wait."""
    node_penalty = scaled_penalty(penalties, library, NODE, ranks, cores)
    if wake is not None and cores > 0 and ranks > cores:
        node_penalty = wake * excess_load(ranks, cores)
    cross = (ranks - ranks / cores) / (ranks - 1) if cores > 0 and ranks > cores else 1.0
    return replace(machine, share=1.0 + excess_load(ranks, cores, background)
                   if cores > 0 else 1.0, cross=cross,
                   hop_penalty=node_penalty,
                   net_hop_penalty=scaled_penalty(penalties, library, NET, ranks, cores),
                   net_arrive=scaled_penalty(penalties, library, NET_ARRIVE, ranks, cores))


# ---- validation against the collective bench ---------------------------------------

def cluster_of(record: dict) -> Cluster:
    """The cluster a coll record ran on: Postbox's virtual nodes as nodes;
    a library on its network path on one host (TCP between every pair) as
    one rank per node; else one node."""
    ranks = int(number(record.get("ranks")) or 1)
    nodes = int(number(record.get("nodes")) or 1)
    if nodes > 1:
        return Cluster(nodes, max(ranks // nodes, 1))
    if str(record.get("path") or "") == "network" or record.get("transport") == "tcp":
        return Cluster(ranks, 1)
    return Cluster(1, ranks)


class Predicted:
    """A measured value beside the model's (fields measured and predicted):
    its relative error, and whether it is within the issue's LIMIT."""

    @property
    def error(self) -> Optional[float]:
        return relative_error(self.predicted, self.measured)

    @property
    def within(self) -> bool:
        return self.error is not None and abs(self.error) <= LIMIT


@dataclass
class Point(Predicted):
    """One measured point and the model's prediction of it."""

    library: str
    cluster: Cluster
    collective: str
    size: int
    algorithm: str
    measured: float  # seconds
    predicted: float  # seconds
    shape: str = ""
    # the point calibrated the model (Model.calibrated): it matches by
    # construction, so it is shown but not counted
    calibration: bool = False
    # the fastest and the slowest of the rounds' medians (seconds; measured
    # is their median): how far the measurement itself moved between runs
    fastest: Optional[float] = None
    slowest: Optional[float] = None

    @property
    def rounds_spread(self) -> Optional[float]:
        """The slowest round over the fastest, less 1 (0.5: the slowest round
        took 1.5 times the fastest); None with one round or none."""
        if self.fastest is None or self.slowest is None or not self.fastest > 0:
            return None
        return self.slowest / self.fastest - 1.0

    @property
    def within_rounds(self) -> bool:
        """The prediction lies within LIMIT of the range the rounds measured
        (at least the fastest less LIMIT, at most the slowest plus LIMIT):
        the model misses by no more than the measurement moved.  Without
        rounds, within."""
        if self.fastest is None or self.slowest is None:
            return self.within
        return (1.0 - LIMIT) * self.fastest <= self.predicted <= (1.0 + LIMIT) * self.slowest


# the limit on the prediction error at 4 and 8 ranks
LIMIT = 0.25


def _log_miss(predicted: float, measured: float) -> float:
    if predicted <= 0 or measured <= 0:
        return float("inf")
    return abs(math.log(predicted / measured))


@dataclass
class Model:
    """The model of every library found in a results folder's records."""

    machines: dict  # library -> Machine (no penalty)
    source: str  # where the LogGP come from
    penalties: dict
    cores: int
    table: Optional[CollTable]
    params: list
    # (library, cluster, collective, size) whose measurement set a parameter
    calibrated: set = field(default_factory=set)
    # library -> the factor model_fit.calibrate_latency put on its node
    # latencies, and the one model_fit.calibrate_penalties put on its net
    # latencies
    latency_scale: dict = field(default_factory=dict)
    net_latency_scale: dict = field(default_factory=dict)
    # (library, cluster, round) -> the runnable tasks beside the bench's
    # ranks in that run (model_fit.record_backgrounds); round None when the shape
    # ran once
    background: dict = field(default_factory=dict)
    # library -> seconds per step of ranks that outnumber the cores, per
    # rank beyond one per core (model_fit.fit_wake: the wake-up and preemption cost)
    wake: dict = field(default_factory=dict)
    # (library, (ranks, nodes)) -> the runnable tasks beside the traffic
    # bench's ranks in its run of that shape (model_fit.traffic_backgrounds)
    traffic_background: dict = field(default_factory=dict)

    def background_of(self, library: str, cluster: Cluster) -> float:
        """The runnable tasks beside @library's ranks in its runs of
        @cluster: the median over the runs (rounds), 0 without load
        samples."""
        values = [b for (lib, c, _), b in self.background.items()
                  if lib == library and c == cluster]
        return statistics.median(values) if values else 0.0

    def machine(self, library: str, cluster: Cluster,
                background: Optional[float] = None) -> Machine:
        """@library's Machine priced for @cluster on this machine's cores,
        at @background other runnable tasks (background_of when None)."""
        if background is None:
            background = self.background_of(library, cluster)
        return with_penalties(self.machines[library], self.penalties, library, cluster.ranks,
                              self.cores, background, self.wake.get(library))

    def calibrates(self, library: str, cluster: Cluster, collective: str,
                   size: int = 0) -> bool:
        """Whether @library's @collective of @size bytes on @cluster set a
        parameter (it is then not a validation)."""
        return (library, cluster, collective, size) in self.calibrated

    def time(self, library: str, cluster: Cluster, collective: str, algorithm: str,
             size: float, penalties: bool = True) -> float:
        machine = self.machine(library, cluster) if penalties else self.machines[library]
        return predict(machine, cluster, collective, algorithm, size, self.table)


def coll_medians(model: Model, records: Sequence[dict],
                 collectives: Sequence[str] = COLLECTIVES,
                 over_rounds: Callable[[list], float] = statistics.median) -> dict:
    """{(library, collective, size): {Cluster: seconds}} of the coll records
    of @collectives that @model has parameters for: @over_rounds (the
    median) of the records' medians of a point, one per round."""
    measured: dict = {}
    for r in records:
        if r.get("suite") != "coll" or r.get("test") not in collectives:
            continue
        median = number(r.get("median"))
        if median is None or r.get("gave_up"):
            continue
        library = str(r.get("library"))
        if library not in model.machines:
            continue
        cluster = cluster_of(r)
        if cluster.nodes > 1 and model.machines[library].net is None:
            continue
        key = (library, str(r.get("test")), int(number(r.get("size")) or 0))
        measured.setdefault(key, {}).setdefault(cluster, []).append(median * US)
    return {key: {c: over_rounds(v) for c, v in by_cluster.items()}
            for key, by_cluster in measured.items()}


def validate(model: Model, records: Sequence[dict],
             collectives: Sequence[str] = COLLECTIVES) -> list:
    """A Point per measured (library, shape, collective, size) of the coll
    records that the model has parameters for, priced with the algorithm
    the library's own rules pick for that shape and size
    (library_algorithm: Postbox's table, Open MPI's and MPICH's default
    decisions); a library of another family with the algorithm that best
    matches its measurements at that collective and size over all the
    shapes measured (the smallest sum of |log(predicted / measured)|).
    Records of several rounds count by their median, and the point keeps
    the fastest and the slowest round's (Point.fastest, Point.slowest)."""
    out = []
    fastest = coll_medians(model, records, collectives, min)
    slowest = coll_medians(model, records, collectives, max)

    def point(key: tuple, cluster: Cluster, algorithm: str, value: float) -> Point:
        library, collective, size = key
        return Point(library, cluster, collective, size, algorithm, value,
                     model.time(library, cluster, collective, algorithm, size),
                     calibration=model.calibrates(library, cluster, collective, size),
                     fastest=fastest[key][cluster], slowest=slowest[key][cluster])

    for key, medians in coll_medians(model, records, collectives).items():
        library, collective, size = key
        if family_of(library) in RULE_FAMILIES:
            for cluster, value in sorted(medians.items()):
                algorithm = library_algorithm(library, collective, cluster, size, model.table)
                out.append(point(key, cluster, algorithm, value))
            continue
        best, best_miss = None, None
        for algorithm in candidates(library, collective):
            miss = sum(_log_miss(model.time(library, c, collective, algorithm, size), v)
                       for c, v in medians.items())
            if best_miss is None or miss < best_miss:
                best, best_miss = algorithm, miss
        for cluster, value in sorted(medians.items()):
            out.append(point(key, cluster, best, value))
    out.sort(key=lambda p: (p.library, p.cluster.ranks, p.cluster, COLLECTIVES.index(
        p.collective) if p.collective in COLLECTIVES else 99, p.size))
    return out


# ---- validation against the traffic bench -------------------------------------------

@dataclass
class TrafficPoint(Predicted):
    """One traffic pattern measured at saturation (bench/mpi_traffic.c) and
    the model's price of it (saturation_bandwidth)."""

    library: str
    cluster: Cluster  # as the collectives' validation prices the shape (cluster_of)
    shape: tuple  # (ranks, nodes) as the traffic bench names it
    pattern: str  # the bench's test: uniform or a permutation
    size_dist: str
    size: float  # the mean message size, bytes
    measured: float  # accepted bytes/s
    predicted: float  # bytes/s
    bound: str  # the term that set the model's round (saturation_round)
    off_node_share: Optional[float] = None
    background: float = 0.0  # runnable tasks beside the ranks (Model.traffic_background)


def validate_traffic(model: Model, records: Sequence[dict],
                     destinations: Callable[[str, int], Optional[list]],
                     window: int = SEND_SLOTS) -> list:
    """A TrafficPoint per (library, shape, pattern, size distribution, mean
    size) of the traffic records at saturation that @model has parameters
    for: measured the median of its records' medians (MB/s), predicted
    saturation_bandwidth on the cluster the collectives' validation gives
    the shape (cluster_of: Postbox's virtual nodes as nodes, another
    library's network path one rank per node), with the library's Machine
    as the collectives price it (with_penalties, as Model.machine) for the
    ranks that take part (active_ranks) at the load sampled around the
    traffic run (Model.traffic_background, else the collectives').
    @destinations(pattern, ranks) is the bench's table of a permutation
    (trafficbench.destinations; None where it is not applicable, ValueError
    for an unknown pattern: such records are left out); uniform is priced
    by its expected counts.  [] without such records."""
    grouped: dict = {}
    for r in records:
        if r.get("suite") != "traffic" or r.get("load") != "saturation":
            continue
        if r.get("metric") != "accepted_bandwidth":
            continue
        median, size = number(r.get("median")), number(r.get("size"))
        library = str(r.get("library"))
        if median is None or not median > 0 or not size or library not in model.machines:
            continue
        cluster = cluster_of(r)
        if cluster.ranks < 2 or (cluster.nodes > 1 and model.machines[library].net is None):
            continue
        key = (library, cluster, traffic_shape_of(r), str(r.get("test")),
               str(r.get("size_dist") or "uniform"), size)
        found = grouped.setdefault(key, ([], []))
        found[0].append(median * 1e6)
        share = number(r.get("off_node_share"))
        if share is not None:
            found[1].append(share)
    out = []
    for (library, cluster, shape, pattern, dist, size), (values, shares) in grouped.items():
        table = None
        if pattern != "uniform":
            try:
                table = destinations(pattern, cluster.ranks)
            except ValueError:  # a pattern the model does not know
                continue
            if table is None:
                continue
        background = model.traffic_background.get((library, shape))
        if background is None:
            background = model.background_of(library, cluster)
        # the tasks per core of the ranks that take part (active_ranks)
        machine = with_penalties(model.machines[library], model.penalties, library,
                                 active_ranks(cluster, table), model.cores, background,
                                 model.wake.get(library))
        seconds, bound = saturation_round(machine, cluster, table, size, window)
        predicted = senders_of(cluster, table) * size / seconds if seconds > 0 else 0.0
        out.append(TrafficPoint(library, cluster, shape, pattern, dist, size,
                                statistics.median(values), predicted, bound,
                                statistics.median(shares) if shares else None, background))
    out.sort(key=lambda p: (p.library, p.shape[0], p.shape[1], p.pattern != "uniform",
                            p.pattern, p.size_dist, p.size))
    return out


def best_algorithms(points: Sequence[Point]) -> dict:
    """{(library, collective): {size: algorithm}} of validated points."""
    out: dict = {}
    for p in points:
        out.setdefault((p.library, p.collective), {})[p.size] = p.algorithm
    return out


def extrapolate(model: Model, library: str, collective: str, cluster: Cluster, size: int,
                chosen: Optional[dict] = None) -> tuple:
    """(algorithm, seconds) of @library's @collective on @cluster (one rank
    per core: no oversubscription penalty): the algorithm of the library's
    own rules (library_algorithm); for a library of another family its best
    match at the nearest measured size (@chosen: best_algorithms), else the
    first the model prices."""
    algorithm = library_algorithm(library, collective, cluster, size, model.table)
    if algorithm is None:
        sizes = (chosen or {}).get((library, collective)) or {}
        if sizes:
            nearest = min(sizes, key=lambda s: abs(math.log((s or 1) / (size or 1))))
            algorithm = sizes[nearest]
        else:
            algorithm = candidates(library, collective)[0]
    return algorithm, model.time(library, cluster, collective, algorithm, size,
                                 penalties=False)
