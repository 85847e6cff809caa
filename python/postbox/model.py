"""A LogGP model of the collectives and traffic patterns, for clusters this
machine cannot hold.

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
  its data moves at the memcpy rate (below 2 MB each core in its own
  caches, from 2 MB sharing the node's bandwidth).
The bench times each call as the mean over the ranks of their time in the
call (bench/mpi_coll.c), so where ranks finish at different times (trees,
rooted collectives) the model gives that mean too.

Oversubscription and load.  This machine runs 4 and 8 ranks on 2 cores,
beside other work: then a rank often waits for its peer to be scheduled,
and is preempted in its copies.  The bench samples the runnable tasks just
before and after each run (machine.json's runs, load_start and load_end;
run_backgrounds): B, the other work the run's ranks competed with.  Every
byte's time is then stretched by the tasks per core, max(1, (ranks + B) /
cores) (Machine.share), relative to the tasks per core while the LogGP's
G was measured (reference_shares), and each step of ranks that outnumber
the cores pays a penalty (Machine.hop_penalty): a fitted wake-up cost per
rank beyond one per core (fit_wake), or without load samples a per-shape
calibration.  Both are zero on the clusters the model extrapolates to
(one rank per core, nothing else running).

Calibration (build(calibrate=True)): a few measured primitives of the
collective bench itself, one Barrier per library and shape, set what the
point-to-point benches measure under other conditions: the node latencies
are scaled so that the 2-rank Barrier matches (calibrate_latency); with
load samples the wake-up cost is the median over every round of the
one-node Barrier with more ranks than cores of the cost that makes that
round match at its load (fit_wake), without them the penalty of a shape
with more ranks than cores is the one that makes its least disturbed
Barrier round match (calibrate_penalties; across nodes, a model already
slower scales its net latencies down instead).  Those Barrier points are then
calibrations, not validations.  Without a Barrier record the penalty is
the p2p bench's multi-pair ping-pong at more ranks than cores, minus the
2-rank ping-pong.

Where the parameters come from: postbox.logpfit.fitted_parameters(records)
(the LogP bench) when its records exist, else approximate_from_p2p(records):
a rough LogGP per library and path from the point-to-point records (see
there).  The memcpy rate is the RSM bench's memcpy against size
(rsm.jsonl), the reduce rate the collective bench's 4 MB vector add, a
cache line's trip between cores the RSM bench's cache-line ping-pong.

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
from typing import Callable, Iterable, Optional, Sequence

from postbox.loggp import LogGP
# the libraries' rules, also imported from here by the model's users
from postbox.model_rules import (  # noqa: F401
    ALGORITHM_NAMES, DEFAULT_ALGORITHM, OPENMPI_TUNED, RULE_FAMILIES,
    CollTable, Rule, default_table_path, family_of, floor_power_of_two, is_power_of_two,
    library_algorithm, load_table, mpich_algorithm, mpich_mpir_algorithm, openmpi_algorithm,
    postbox_choice)
from postbox.plot import number

US = 1e-6
# copies of this many bytes or more are taken to leave the caches: those
# that run at once share the node's memory bandwidth (Machine.node_bandwidth)
MEMORY_BOUND_BYTES = 2 << 20
# the collectives the model covers (bench/mpi_coll.c's names)
COLLECTIVES = ("barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather",
               "alltoall")
NODE, NET = "node", "net"


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
    share: float = 1.0
    # seconds for a cache line stored by one core to be seen by another
    # (the RSM bench's cache-line ping-pong, half round trip): the node
    # area's step count travels so, not as a message
    line: Optional[float] = None
    # seconds more of a node-area step where every rank waits for all the
    # others (their arrival skew: a rank that waits for a later one), over
    # one where one rank stores and the others see (calibrate_latency)
    arrive: float = 0.0
    # the tasks per core, 1 + excess_load, while the G of the node and of
    # the net path were measured (reference_shares): @share is relative to
    # them, so a G fitted on a loaded machine is not stretched twice
    node_reference: float = 1.0
    net_reference: float = 1.0

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
    slowest path, occupancy its bytes' time (k ranks of a node crossing
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
        latency = max(latency, p.o_s + p.L + p.o_r + machine.penalty(NET))
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


def tree_down(machine: Machine, cluster: Cluster, size_of: Callable[[int], float]) -> list:
    """Each rank's time in a binomial tree from rank 0 downward (Bcast,
    Scatter): a rank's message to child c is size_of(c) bytes; a rank is
    done when it has received and sent to all its children."""
    ranks = cluster.ranks
    arrived = [0.0] * ranks
    done = [0.0] * ranks
    for rank in range(ranks):
        t = arrived[rank]
        for j, child in enumerate(binomial_children(rank, ranks)):
            one_way, gap = _edge(machine, cluster, rank, child, size_of(child))
            arrived[child] = t + one_way
            t += gap
        done[rank] = t
    return done


def tree_up(machine: Machine, cluster: Cluster, size_of: Callable[[int], float],
            combine: bool) -> list:
    """Each rank's time in a binomial tree toward rank 0 (Reduce, Gather):
    a rank receives from its children nearest first (smallest subtree),
    combining each when @combine, then sends size_of(rank) bytes to its
    parent; a rank is done when it has sent (the root when it has all)."""
    ranks = cluster.ranks
    ready = [0.0] * ranks
    done = [0.0] * ranks
    for rank in reversed(range(ranks)):
        t = 0.0
        for child in reversed(binomial_children(rank, ranks)):
            one_way, _ = _edge(machine, cluster, child, rank, size_of(child))
            t = max(t, ready[child] + one_way)
            if combine:
                t += machine.reduce_time(size_of(child))
        ready[rank] = t
        if rank:
            parent = rank - (rank & -rank)
            _, gap = _edge(machine, cluster, rank, parent, size_of(rank))
            done[rank] = t + gap
        else:
            done[rank] = t
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

def tree_down_by(machine: Machine, cluster: Cluster, children: Callable[[int], list],
                 size: float) -> list:
    """Each rank's time when every rank forwards @size bytes to its
    children(rank) one after the other, from rank 0 down (the same timing
    as tree_down, for any tree whose parents precede their children)."""
    ranks = cluster.ranks
    arrived = [0.0] * ranks
    done = [0.0] * ranks
    for rank in range(ranks):
        t = arrived[rank]
        for child in children(rank):
            one_way, gap = _edge(machine, cluster, rank, child, size)
            arrived[child] = t + one_way
            t += gap
        done[rank] = t
    return done


def tree_up_by(machine: Machine, cluster: Cluster, children: Callable[[int], list],
               size: float, combine: bool) -> list:
    """Each rank's time when every rank receives @size bytes from each of
    children(rank) (combining each when @combine), then sends @size bytes
    to its parent (children numbered above their parents)."""
    ranks = cluster.ranks
    ready = [0.0] * ranks
    done = [0.0] * ranks
    parent = {}
    for rank in range(ranks):
        for child in children(rank):
            parent[child] = rank
    for rank in reversed(range(ranks)):
        t = 0.0
        for child in children(rank):
            one_way, _ = _edge(machine, cluster, child, rank, size)
            t = max(t, ready[child] + one_way)
            if combine:
                t += machine.reduce_time(size)
        ready[rank] = t
        done[rank] = t + (_edge(machine, cluster, rank, parent[rank], size)[1]
                          if rank in parent else 0.0)
    return done


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
    up = max(tree_up_by(m, c, lambda r: linear_children(r, c.ranks), 0, False))
    return up + mean(tree_down_by(m, c, lambda r: linear_children(r, c.ranks), 0))


def barrier_tree(m: Machine, c: Cluster, size: float = 0) -> float:
    # up a binomial tree to rank 0 and back down
    up = max(tree_up(m, c, lambda rank: 0, False))
    return up + mean(tree_down(m, c, lambda child: 0))


def bcast_linear(m: Machine, c: Cluster, size: float) -> float:
    return mean(direct_rooted(m, c, size))


def bcast_chain(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_down_by(m, c, lambda r: chain_children(r, c.ranks), size))


def bcast_binary(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_down_by(m, c, lambda r: binary_children(r, c.ranks), size))


def bcast_knomial(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_down_by(m, c, lambda r: knomial_children(r, c.ranks), size))


def reduce_chain(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_up_by(m, c, lambda r: chain_children(r, c.ranks), size, True))


def reduce_binary(m: Machine, c: Cluster, size: float) -> float:
    return mean(tree_up_by(m, c, lambda r: binary_children(r, c.ranks), size, True))


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
    trip = m.line if m.line is not None else m.node.L + m.node.o_r
    return m.node.o_s + trip + m.penalty(NODE) * m.share + (m.arrive if all_write else 0.0)


INLINE_BYTES = 56  # a payload this small travels in the writer's line


def node_area_one_node(m: Machine, collective: str, ranks: int, size: float) -> float:
    """@collective through the node's area on one node of @ranks ranks (the
    mean over the ranks of their time in the call); each copy is priced
    with the number of ranks copying at the same time."""
    phase, together = node_phase(m), node_phase(m, True)
    others = ranks - 1

    def copy(bytes_: float, streams: int) -> float:
        # through cells of CELL_BYTES: the copy's rate is that of its pieces
        if bytes_ <= INLINE_BYTES:
            return 0.0
        pieces = max(1.0, bytes_ / CELL_BYTES)
        return pieces * m.copy_time(bytes_ / pieces, streams)

    if collective == "barrier":
        return together
    if collective == "bcast":
        if size <= INLINE_BYTES:
            return phase
        # the root writes into its cell in halves, the others read one half
        # while it writes the other
        half = min(size, CELL_BYTES) / 2
        return 2 * phase + copy(size, ranks) + copy(half, ranks)
    if collective in ("reduce", "allreduce"):
        if size <= 4096:
            # every rank writes its vector, each that needs the result
            # combines all of them; the others of a Reduce leave once
            # written, so only its root waits for them (a rooted step)
            if collective == "allreduce":
                return copy(size, ranks) + together + others * m.reduce_time(size)
            work = copy(size, ranks) + phase + others * m.reduce_time(size)
            return (work + others * copy(size, ranks)) / ranks
        # in pieces: every rank writes its piece, rank i combines slice i
        # of all, the ranks that need the result copy the slices
        return copy(size, ranks) + together + others * m.reduce_time(size / ranks) + \
            together + copy(size, ranks)
    if collective == "gather":
        # the others leave once written: a rooted step
        root = copy(size, ranks) + phase + copy(others * size, 1)
        return (root + others * copy(size, ranks)) / ranks
    if collective == "scatter":
        return copy(others * size, 1) + phase + copy(size, others)
    if collective == "allgather":
        return copy(size, ranks) + together + copy(others * size, ranks)
    if collective == "alltoall":
        return copy(others * size, ranks) + together + copy(others * size, ranks)
    raise ValueError("no node-area model of %s" % collective)


def postbox_algorithm_time(m: Machine, c: Cluster, collective: str, algorithm: str,
                           size: float, table: "Optional[CollTable]" = None) -> float:
    """Postbox's @algorithm of @collective, the node's area two-level across
    nodes: the node step with the node parameters, the leaders' step (its
    algorithm from @table, on a communicator of one rank per node) with the
    net ones."""
    if algorithm not in ("node", "node_cma"):
        return ALGORITHMS[collective][algorithm](m, c, size)
    if collective in BLOCK_COLLECTIVES and size > CELL_BYTES:
        # blocks larger than a cell: the node path gives way
        return ALGORITHMS[collective][DEFAULT_ALGORITHM[collective]](m, c, size)
    if c.nodes == 1:
        return node_area_one_node(m, collective, c.ranks, size)
    leaders = Cluster(c.nodes, 1)

    def leader_step(coll: str, bytes_: float) -> float:
        choice = (table or CollTable([])).choose(coll, c.nodes, 1, c.nodes, int(bytes_))
        if choice in ("node", "node_cma"):
            choice = DEFAULT_ALGORITHM[coll]
        return ALGORITHMS[coll][choice](m, leaders, bytes_)

    local = lambda coll, bytes_: node_area_one_node(m, coll, c.cores, bytes_)  # noqa: E731
    if collective == "barrier":
        return 2 * node_phase(m) + leader_step("barrier", 0)
    if collective == "bcast":
        return local("bcast", size) + leader_step("bcast", size) + local("bcast", size)
    if collective == "reduce":
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
    if algorithm in ("node", "node_cma"):
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


# ---- the traffic patterns (seed 000 §IV-E) -----------------------------------------

def _bits(rank: int, n: int) -> list:
    return [(rank >> i) & 1 for i in range(n)]  # a0 first


def _from_bits(bits: Sequence[int]) -> int:
    return sum(b << i for i, b in enumerate(bits))


def permutation(name: str, rank: int, ranks: int, stage: Optional[int] = None) -> int:
    """The destination of @rank in seed 000's permutation @name on @ranks
    ranks (a power of two, n = log2 ranks bits a_{n-1} ... a_0); @stage is
    the i of the staged ones (baseline, butterfly, cube), the highest
    (n - 1) when None (the single-stage form)."""
    if not is_power_of_two(ranks) or ranks < 2:
        raise ValueError("the permutations are defined on a power of two ranks, not %d" % ranks)
    n = ranks.bit_length() - 1
    i = n - 1 if stage is None else stage
    a = _bits(rank, n)
    if name == "neighbor":
        return rank ^ 1
    if name == "bit-reversal":
        return _from_bits(list(reversed(a)))
    if name == "complement":
        return rank ^ (ranks - 1)
    if name == "cube":
        return rank ^ (1 << i)
    if name == "butterfly":
        b = list(a)
        b[i], b[0] = a[0], a[i]
        return _from_bits(b)
    if name == "baseline":
        # a_i..a_0 rotated right by one: a0 goes to position i
        low = a[:i + 1]
        return _from_bits(low[1:] + [low[0]] + a[i + 1:])
    if name == "matrix-transpose":
        half = n // 2
        return _from_bits(a[half:] + a[:half]) if n % 2 == 0 else \
            _from_bits(a[n - half:] + a[:n - half])
    if name == "perfect-shuffle":
        return _from_bits([a[n - 1]] + a[:n - 1])
    raise ValueError("no permutation %r" % name)


PERMUTATIONS = ("baseline", "bit-reversal", "butterfly", "complement", "cube",
                "matrix-transpose", "neighbor", "perfect-shuffle")


def pattern_time(machine: Machine, cluster: Cluster, destinations: Sequence[int],
                 size: float) -> float:
    """Seconds for every rank r to send one @size-byte message to
    destinations[r] at once: on-node messages at the node price, and the
    messages leaving (or entering) one node share its link, so the busiest
    node's k messages take o_s + L + k (m - 1) G + o_r."""
    out = [0] * cluster.nodes
    into = [0] * cluster.nodes
    local = False
    for rank, dest in enumerate(destinations):
        if dest == rank:
            continue
        a, b = cluster.node_of(rank), cluster.node_of(dest)
        if a == b:
            local = True
        else:
            out[a] += 1
            into[b] += 1
    t = machine.node.one_way(int(size)) + machine.penalty(NODE) if local else 0.0
    busiest = max(max(out), max(into))
    if busiest:
        p = machine.params(NET)
        t = max(t, p.o_s + p.L + busiest * max(size - 1, 0) * p.G + p.o_r
                + machine.penalty(NET))
    return t


def uniform_load(cluster: Cluster) -> float:
    """The expected messages leaving one node when every rank sends to a
    destination drawn uniformly from the other ranks."""
    if cluster.ranks < 2:
        return 0.0
    return cluster.cores * (cluster.ranks - cluster.cores) / (cluster.ranks - 1)


def uniform_time(machine: Machine, cluster: Cluster, size: float) -> float:
    """Seconds of one round of uniform random traffic (each rank one
    @size-byte message), with the expected per-node link load."""
    k = uniform_load(cluster)
    t = machine.node.one_way(int(size)) + machine.penalty(NODE) if cluster.cores > 1 else 0.0
    if k > 0 and cluster.nodes > 1:
        p = machine.params(NET)
        t = max(t, p.o_s + p.L + k * max(size - 1, 0) * p.G + p.o_r + machine.penalty(NET))
    return t


def accepted_bandwidth(cluster: Cluster, size: float, seconds: float) -> float:
    """Bytes/s the whole cluster delivers: every rank's message over the
    round's time."""
    return cluster.ranks * size / seconds if seconds > 0 else 0.0


# ---- parameters from the point-to-point records ------------------------------------

P2P_PATHS = {"on-node": NODE, "network": NET}


def _p2p_median(records: Iterable[dict], library: str, test: str, path: str,
                ranks: int = 2) -> dict:
    """{size: median seconds} of @library's @test on @path with @ranks ranks
    (the last record of a size wins)."""
    out = {}
    for r in records:
        if r.get("suite") != "p2p" or str(r.get("library")) != library or \
                r.get("test") != test or str(r.get("path") or "on-node") != path or \
                r.get("thread_level") not in (None, "single") or \
                int(number(r.get("ranks")) or 2) != ranks:
            continue
        size, median = number(r.get("size")), number(r.get("median"))
        if size is None or median is None or r.get("unit") != "us":
            continue
        out[int(size)] = median * US
    return out


def approximate_from_p2p(records: Sequence[dict]) -> list:
    """A rough LogGP per library and path from the point-to-point records,
    for when there are no LogP records (the LogP bench measures them
    properly).  From the ping-pong half round trip T(m)
    (pingpong_standard, 2 ranks) and the one-way stream (unidirectional,
    time per message):

    - T0 = T at the smallest size measured; g = the stream's time per
      message at its smallest size (T0 without a stream);
    - G = the median over the sizes of 4 KB and more of (T(m) - T0) / m;
    - o_s = o_r = min(g, T0) / 2, L = T0 - o_s - o_r.  A ping-pong cannot
      tell the overheads from the latency; with o_s, o_r <= g the model's
      prices depend only on T0, g and G, so the split does not matter."""
    libraries = []
    for r in records:
        if r.get("suite") == "p2p" and str(r.get("library")) not in libraries:
            libraries.append(str(r.get("library")))
    out = []
    for library in libraries:
        for p2p_path, path in P2P_PATHS.items():
            pingpong = _p2p_median(records, library, "pingpong_standard", p2p_path)
            if not pingpong:
                continue
            sizes = sorted(pingpong)
            t0 = pingpong[sizes[0]]
            slopes = [(pingpong[s] - t0) / s for s in sizes if s >= 4096]
            G = max(statistics.median(slopes), 0.0) if slopes else 0.0
            stream = _p2p_median(records, library, "unidirectional", p2p_path)
            g = stream[min(stream)] if stream else t0
            o = min(g, t0) / 2
            out.append(LogGP(L=max(t0 - 2 * o, 0.0), o_s=o, o_r=o, g=g, G=G, library=library,
                             path=path))
    return out


def oversubscription_penalties(records: Sequence[dict]) -> dict:
    """{(library, path, ranks): seconds} the extra time per step of @ranks
    ranks running at once: the multi-pair ping-pong's half round trip at
    @ranks ranks less the 2-rank one, the median over the sizes up to 4 KB
    measured by both (scaled_penalty uses it only where the ranks outnumber
    the cores)."""
    out = {}
    seen = set()
    for r in records:
        if r.get("suite") == "p2p" and r.get("test") == "multipair_latency" \
                and int(number(r.get("ranks")) or 0) > 2:
            seen.add((str(r.get("library")), str(r.get("path") or "on-node"),
                      int(number(r.get("ranks")) or 0)))
    for library, p2p_path, ranks in seen:
        path = P2P_PATHS.get(p2p_path)
        if path is None:
            continue
        many = _p2p_median(records, library, "multipair_latency", p2p_path, ranks)
        two = _p2p_median(records, library, "multipair_latency", p2p_path, 2) or \
            _p2p_median(records, library, "pingpong_standard", p2p_path)
        common = [s for s in sorted(set(many) & set(two)) if s <= 4096]
        if common:
            out[(library, path, ranks)] = max(
                statistics.median(many[s] - two[s] for s in common), 0.0)
    return out


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


def node_bandwidths(records: Sequence[dict]) -> dict:
    """{library: Rate} the node's memory bandwidth as each library's
    messages see it: the multi-pair bandwidth on one node (the sum over the
    pairs) against size, at each size the most over the pair counts."""
    best: dict = {}
    for r in records:
        if r.get("suite") != "p2p" or r.get("test") != "multipair_bandwidth" or \
                str(r.get("path") or "on-node") != "on-node" or r.get("unit") != "MB/s":
            continue
        size, median = number(r.get("size")), number(r.get("median"))
        if not size or not median:
            continue
        sizes = best.setdefault(str(r.get("library")), {})
        sizes[size] = max(sizes.get(size, 0.0), median * 1e6)
    return {library: Rate(tuple(sorted(sizes.items()))) for library, sizes in best.items()}


def memcpy_rate(records: Sequence[dict]) -> Optional[Rate]:
    """The RSM bench's memcpy bandwidth against size (rsm.jsonl, MB/s)."""
    points = {}
    for r in records:
        if r.get("test") == "memcpy" and r.get("metric") == "bandwidth" \
                and r.get("unit") == "MB/s":
            size, median = number(r.get("size")), number(r.get("median"))
            if size and median and median > 0:
                points[size] = median * 1e6
    return Rate(tuple(sorted(points.items()))) if points else None


def line_time(records: Sequence[dict]) -> Optional[float]:
    """Seconds of a cache line's trip between two cores: the RSM bench's
    cache-line ping-pong half round trip (rsm.jsonl, test
    cacheline_pingpong, us), the median over its records; None without."""
    values = [number(r.get("median")) for r in records
              if r.get("test") == "cacheline_pingpong" and r.get("unit") == "us"]
    values = [v for v in values if v is not None and v > 0]
    return statistics.median(values) * US if values else None


def reduce_rate(records: Sequence[dict]) -> Optional[Rate]:
    """The collective bench's vector add (ref_vector_add: a[i] += b[i] of
    its size in floats, median us) as bytes/s; the median over its
    records."""
    rates = []
    for r in records:
        if r.get("suite") == "coll" and r.get("test") == "ref_vector_add":
            size, median = number(r.get("size")), number(r.get("median"))
            if size and median:
                rates.append(size / (median * US))
    return constant_rate(statistics.median(rates)) if rates else None


def parameters(records: Sequence[dict]) -> tuple:
    """(list of LogGP, where from): the LogP bench's fit when its module
    and records are there, else approximate_from_p2p."""
    try:
        from postbox import logpfit  # the LogP bench's fit
    except ImportError:
        logpfit = None
    if logpfit is not None:
        fitted = list(logpfit.fitted_parameters(records))
        if fitted:
            return fitted, "the LogP bench's fit (postbox.logpfit)"
    return approximate_from_p2p(records), "approximated from the point-to-point records"


def machine_for(params: Sequence[LogGP], library: str, copy: Optional[Rate] = None,
                reduce: Optional[Rate] = None, bandwidth: Optional[Rate] = None,
                line: Optional[float] = None) -> Optional[Machine]:
    """@library's Machine from @params (None without its node LogGP)."""
    node = next((p for p in params if p.library == library and p.path == NODE), None)
    net = next((p for p in params if p.library == library and p.path == NET), None)
    if node is None:
        return None
    return Machine(node=node, net=net, copy=copy, reduce=reduce, node_bandwidth=bandwidth,
                   line=line)


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
    or multi-pair one of the shape (scaled_penalty)."""
    node_penalty = scaled_penalty(penalties, library, NODE, ranks, cores)
    if wake is not None and cores > 0 and ranks > cores:
        node_penalty = wake * excess_load(ranks, cores)
    return replace(machine, share=1.0 + excess_load(ranks, cores, background)
                   if cores > 0 else 1.0,
                   hop_penalty=node_penalty,
                   net_hop_penalty=scaled_penalty(penalties, library, NET, ranks, cores))


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


def machine_cores(records: Sequence[dict], description: Optional[dict] = None) -> int:
    """The cores the ranks ran on: machine.json's cores_allowed (or cores),
    else the most ranks of a record not marked oversubscribed."""
    for key in ("cores_allowed", "cores"):
        value = number((description or {}).get(key))
        if value and value >= 1:
            return int(value)
    fit = [int(number(r.get("ranks")) or 0) for r in records
           if r.get("oversubscribed") is False]
    return max(fit, default=0)


@dataclass
class Point:
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

    @property
    def error(self) -> Optional[float]:
        return relative_error(self.predicted, self.measured)

    @property
    def within(self) -> bool:
        return self.error is not None and abs(self.error) <= LIMIT


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
    # library -> the factor calibrate_latency put on its node latencies,
    # and the one calibrate_penalties put on its net latencies
    latency_scale: dict = field(default_factory=dict)
    net_latency_scale: dict = field(default_factory=dict)
    # (library, cluster, round) -> the runnable tasks beside the bench's
    # ranks in that run (record_backgrounds); round None when the shape
    # ran once
    background: dict = field(default_factory=dict)
    # library -> seconds per step of ranks that outnumber the cores, per
    # rank beyond one per core (fit_wake: the wake-up and preemption cost)
    wake: dict = field(default_factory=dict)

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


def build(records: Sequence[dict], description: Optional[dict] = None,
          params: Optional[Sequence[LogGP]] = None, source: Optional[str] = None,
          table: Optional[CollTable] = None, calibrate: bool = True) -> Model:
    """The Model of @records: @params (else parameters(records)), the memcpy
    and reduce rates, the cache line's trip, the oversubscription penalties,
    Postbox's table; with @calibrate, the node latencies scaled by the coll
    bench's 2-rank Barrier (calibrate_latency) and the penalties of the
    shapes with more ranks than cores from its Barrier on them
    (calibrate_penalties)."""
    if params is None:
        params, source = parameters(records)
    copy, reduce, line = memcpy_rate(records), reduce_rate(records), line_time(records)
    bandwidths = node_bandwidths(records)
    machines = {}
    for p in params:
        if p.library not in machines:
            machine = machine_for(params, p.library, copy, reduce, bandwidths.get(p.library),
                                  line)
            if machine is not None:
                machines[p.library] = machine
    built = Model(machines, source or "given", oversubscription_penalties(records),
                  machine_cores(records, description),
                  table if table is not None else load_table(), list(params))
    built.background = record_backgrounds(records, description)
    for library, (node, net) in reference_shares(description, source,
                                                                  built.cores).items():
        if library in built.machines:
            built.machines[library] = replace(built.machines[library], node_reference=node,
                                              net_reference=net)
    if calibrate:
        calibrate_latency(built, records)
        calibrate_penalties(built, records)
    return built


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


# ---- the machine's load during the runs --------------------------------------

def _round_of(name: str) -> Optional[int]:
    last = name.rsplit("/", 1)[-1]
    if last.startswith("round-") and last[6:].isdigit():
        return int(last[6:])
    return None


def run_backgrounds(description: Optional[dict]) -> dict:
    """{(library, path, ranks, round): runnable tasks} of the collective
    bench's runs in machine.json's runs (coll/<library>/<shape>[/round-k])
    that carry load samples (mpibench.run_one): the mean of the runnable
    count sampled just before the run and just after it, when none of the
    run's ranks are running, so the tasks of other work that its ranks
    competed with; round None for a shape run once."""
    out = {}
    for run in (description or {}).get("runs") or []:
        if not isinstance(run, dict):
            continue
        parts = str(run.get("name") or "").split("/")
        if len(parts) < 3 or parts[0] != "coll":
            continue
        counts = [number(sample.get("runnable")) for sample in
                  (run.get("load_start"), run.get("load_end")) if isinstance(sample, dict)]
        counts = [c for c in counts if c is not None and c >= 0]
        if not counts:
            continue
        key = (parts[1], str(run.get("path") or "on-node"), int(number(run.get("ranks")) or 0),
               _round_of(str(run.get("name"))))
        out[key] = sum(counts) / len(counts)
    return out


def reference_shares(description: Optional[dict], source: Optional[str],
                     cores: int) -> dict:
    """{library: (node, net)} the tasks per core on @cores cores, 1 +
    excess_load(ranks, cores, B), while the runs that gave each path's G ran: the LogP bench's runs
    (logp/<library>/2-ranks-<path>) when the parameters are its fit
    (@source names postbox.logpfit), else the point-to-point ping-pong's
    (<library>[/network]/pingpong_standard); B as in run_backgrounds.  A
    path without a sampled run is 1."""
    from_logp = "logpfit" in str(source or "")
    found: dict = {}
    for run in (description or {}).get("runs") or []:
        if not isinstance(run, dict):
            continue
        parts = str(run.get("name") or "").split("/")
        if from_logp and len(parts) == 3 and parts[0] == "logp":
            library, path = parts[1], NET if parts[2].endswith("network") else NODE
        elif not from_logp and parts[-1:] == ["pingpong_standard"] and len(parts) in (2, 3):
            library, path = parts[0], NET if len(parts) == 3 else NODE
        else:
            continue
        counts = [number(sample.get("runnable")) for sample in
                  (run.get("load_start"), run.get("load_end")) if isinstance(sample, dict)]
        counts = [c for c in counts if c is not None and c >= 0]
        if counts:
            found.setdefault(library, {})[path] = 1.0 + excess_load(
                int(number(run.get("ranks")) or 2), cores, sum(counts) / len(counts))
    return {library: (paths.get(NODE, 1.0), paths.get(NET, 1.0))
            for library, paths in found.items()}


def _record_round(record: dict) -> Optional[int]:
    value = number(record.get("round"))
    return int(value) if value is not None and value >= 0 else None


def record_backgrounds(records: Sequence[dict], description: Optional[dict]) -> dict:
    """{(library, cluster, round): runnable tasks beside the ranks} of the
    coll records whose run has load samples (run_backgrounds)."""
    runs = run_backgrounds(description)
    out: dict = {}
    if not runs:
        return out
    for r in records:
        if r.get("suite") != "coll":
            continue
        library, round_ = str(r.get("library")), _record_round(r)
        key = (library, str(r.get("path") or "on-node"), int(number(r.get("ranks")) or 0),
               round_)
        if key in runs:
            out[(library, cluster_of(r), round_)] = runs[key]
    return out


def fit_wake(model: Model, records: Sequence[dict]) -> None:
    """Fit each library's wake-up cost (Model.wake): the seconds a step of
    ranks that outnumber the cores waits for a peer to be scheduled, per
    rank beyond one per core, from its Barrier on one node in every round
    of every shape with more ranks than cores whose run has load samples
    (Model.background).  The model's Barrier is linear in it, T(w) = T(0)
    + k w, so each round gives w = (measured - T(0)) / k with T(0) and k
    at that round's load (its bytes); the fit is the median over the
    rounds (at least 0): a typical round, not the least disturbed one, so
    a polling library whose waits take milliseconds gets a cost to match.  Those Barrier points
    are then calibrations.  A library without such rounds keeps the
    per-shape penalties (calibrate_penalties)."""
    estimates: dict = {}
    for r in records:
        if r.get("suite") != "coll" or r.get("test") != CALIBRATION or r.get("gave_up"):
            continue
        library, median = str(r.get("library")), number(r.get("median"))
        if library not in model.machines or median is None:
            continue
        cluster = cluster_of(r)
        key = (library, cluster, _record_round(r))
        if cluster.nodes != 1 or cluster.ranks <= model.cores or key not in model.background:
            continue
        background = model.background[key]
        algorithm = _calibration_algorithm(model, library, cluster)

        def timed(wake: float) -> float:
            machine = with_penalties(model.machines[library], model.penalties, library,
                                     cluster.ranks, model.cores, background, wake)
            return predict(machine, cluster, CALIBRATION, algorithm, 0, model.table)

        base = timed(0.0)
        slope = (timed(1e-6) - base) / 1e-6
        if slope > 0:
            estimates.setdefault(library, []).append((median * US - base) / slope)
            model.calibrated.add((library, cluster, CALIBRATION, 0))
    for library, values in estimates.items():
        model.wake[library] = max(statistics.median(values), 0.0)


# the collective whose measurement with more ranks than cores sets the
# per-step penalty of that shape (calibrate_penalties)
CALIBRATION = "barrier"
# the collective whose smallest size at ranks that fit the cores sets the
# node latencies (calibrate_latency)
LATENCY_CALIBRATION = "bcast"
# and the one whose smallest size there sets the wait of a step where every
# rank waits for all (Machine.arrive)
ARRIVE_CALIBRATION = "allreduce"


def _calibration_algorithm(model: Model, library: str, cluster: Cluster) -> str:
    return library_algorithm(library, CALIBRATION, cluster, 0, model.table) or \
        candidates(library, CALIBRATION)[0]


def scaled_latency(machine: Machine, factor: float, path: str = NODE) -> Machine:
    """@machine with the per-message times of its @path (o_s, L, o_r, g;
    on the node also the cache line's trip) @factor times as long; G and
    the rates stay."""
    p = machine.params(path)
    p = replace(p, L=p.L * factor, o_s=p.o_s * factor, o_r=p.o_r * factor, g=p.g * factor)
    if path == NET:
        return replace(machine, net=p)
    line = machine.line * factor if machine.line is not None else None
    return replace(machine, node=p, line=line)


def calibrate_latency(model: Model, records: Sequence[dict]) -> None:
    """Calibrate each library's node latencies on the coll bench's own
    calls at the fewest ranks of one node that fit the cores (2 here),
    taken in the same runs and after the same synchronisation as the
    collectives (the LogP bench's ping-pongs also time a rank waking up for
    each message, which a collective called by ranks that are all running
    does not see):

    - the latencies (scaled_latency: o_s, L, o_r, g, the cache line's trip)
      by one factor, so that the model's Bcast of the smallest size
      measured equals the measured one: a step where the root stores or
      sends and the other sees it (one message, or one node-area phase);
    - then Machine.arrive, the measured Allreduce of the smallest size
      less the model's without it: the wait of a node-area step where
      every rank waits for all the others (the later rank's arrival),
      which a rooted step (Bcast, Scatter, Reduce, Gather) does not pay;
      the median of its rounds, as the validation takes: the wait is the
      usual case, not a disturbance (a 2-rank Allreduce of 4 B took 3.1
      us in most rounds, 0.6 us in one).  Without an Allreduce record the
      Barrier sets it.  Where the library's call has no node-area step
      where all wait (message passing), arrive stays 0.

    Without a Bcast record the Barrier alone sets the factor (arrive 0).
    A step at ranks that fit is linear in those times, so each point
    matches exactly and is then a calibration (Point.calibration).  The
    factor only scales down (a call slower than the ping-pongs' price is
    a disturbed one, not a cheaper ping-pong), and its measurement is the
    least disturbed round's (the smallest of the rounds' medians): one
    round of a 2-rank Barrier on a loaded machine took 6 ms where another
    took 12 us."""
    if model.cores <= 0:
        return
    barriers = coll_medians(model, records, (CALIBRATION,), min)
    bcasts = coll_medians(model, records, (LATENCY_CALIBRATION,), min)
    waits = coll_medians(model, records, (ARRIVE_CALIBRATION,))
    for library in model.machines:
        fitting = {c for (lib, _, _), by in list(barriers.items()) + list(bcasts.items())
                   if lib == library for c in by
                   if c.nodes == 1 and 2 <= c.ranks <= model.cores}
        if not fitting:
            continue
        cluster = min(fitting)
        bcast_sizes = sorted(size for (lib, _, size), by in bcasts.items()
                             if lib == library and cluster in by)
        barrier = (barriers.get((library, CALIBRATION, 0)) or {}).get(cluster)
        if bcast_sizes:
            size = bcast_sizes[0]
            collective, measured = LATENCY_CALIBRATION, \
                bcasts[(library, LATENCY_CALIBRATION, size)][cluster]
        elif barrier is not None:
            size, collective, measured = 0, CALIBRATION, barrier
        else:
            continue
        machine = model.machines[library]

        def timed(mach: Machine, coll: str, bytes_: int) -> float:
            algorithm = library_algorithm(library, coll, cluster, bytes_, model.table) or \
                candidates(library, coll)[0]
            return predict(mach, cluster, coll, algorithm, bytes_, model.table)

        # the call is linear in the factor: T(f) = T(0) + f (T(1) - T(0))
        base, bytes_only = timed(machine, collective, size), \
            timed(scaled_latency(machine, 0.0), collective, size)
        if not base > bytes_only or not measured > 0:
            continue
        factor = min(max((measured - bytes_only) / (base - bytes_only), 0.0), 1.0)
        machine = scaled_latency(machine, factor)
        model.latency_scale[library] = factor
        model.calibrated.add((library, cluster, collective, size))
        wait_sizes = sorted(size for (lib, _, size), by in waits.items()
                            if lib == library and cluster in by)
        if collective == CALIBRATION:
            wait = None
        elif wait_sizes:
            wait = (ARRIVE_CALIBRATION, wait_sizes[0],
                    waits[(library, ARRIVE_CALIBRATION, wait_sizes[0])][cluster])
        else:
            wait = (CALIBRATION, 0, barrier) if barrier is not None else None
        if wait is not None and wait[2] > 0:
            coll, bytes_, value = wait
            without = timed(machine, coll, bytes_)
            with_one = timed(replace(machine, arrive=1e-6), coll, bytes_)
            if with_one > without:
                machine = replace(machine, arrive=max(value - without, 0.0) * 1e-6 /
                                  (with_one - without))
                model.calibrated.add((library, cluster, coll, bytes_))
        model.machines[library] = machine


def calibrate_penalties(model: Model, records: Sequence[dict]) -> None:
    """Replace in @model the per-step penalties of the shapes with more
    ranks than cores by those that make its Barrier match the coll bench's
    Barrier measured on that shape: a model time is linear in the penalty,
    T(p) = T(0) + k p, so p = (measured - T(0)) / k (0 when the model is
    already slower).  The one-node shapes set the node penalty at their
    rank count, then the shapes across nodes the net one, the node's as
    just set; across nodes, where the model's Barrier is slower than the
    measured one with no penalty, the net latencies are scaled down
    instead (_scale_net_latency).  A library's algorithm is Postbox's
    table's, else its family's first (dissemination and recursive doubling
    cost the same steps on 2^k ranks).  The measurement is the least
    disturbed round's (the smallest of the rounds' medians).  One measured
    point per library and shape; it is then a calibration, not a
    validation (Point.calibration).  A library whose one-node runs carry
    load samples gets its node penalty from fit_wake instead (first), the
    net one still from here."""
    if model.cores <= 0:
        return
    fit_wake(model, records)
    medians = coll_medians(model, records, (CALIBRATION,), min)
    shapes = sorted({(library, cluster, value)
                     for (library, _, _), by_cluster in medians.items()
                     for cluster, value in by_cluster.items()
                     if cluster.ranks > model.cores
                     and not (cluster.nodes == 1 and library in model.wake)},
                    key=lambda item: (item[1].nodes > 1, item[0], item[1]))
    for library, cluster, value in shapes:
        path = NODE if cluster.nodes == 1 else NET
        machine = model.machine(library, cluster)
        algorithm = _calibration_algorithm(model, library, cluster)

        def timed(penalty: float) -> float:
            priced = replace(machine, **{"hop_penalty" if path == NODE else
                                         "net_hop_penalty": penalty})
            return predict(priced, cluster, CALIBRATION, algorithm, 0, model.table)

        base = timed(0.0)
        slope = (timed(1e-6) - base) / 1e-6
        if slope <= 0:
            continue
        model.penalties[(library, path, cluster.ranks)] = max((value - base) / slope, 0.0)
        model.calibrated.add((library, cluster, CALIBRATION, 0))
        if path == NET and value < base:
            _scale_net_latency(model, library, cluster, algorithm, value)


def _scale_net_latency(model: Model, library: str, cluster: Cluster, algorithm: str,
                       value: float) -> None:
    """Scale @library's net o_s, L, o_r and g down (no penalty) until the
    model's Barrier on @cluster is @value: the LogP bench's net fit came
    out slower than the collectives' own steps on that path.  Bisection
    (a step's price is the max of its node and net latencies)."""
    machine = model.machines[library]

    def timed(factor: float) -> float:
        scaled = scaled_latency(machine, factor, NET)
        return predict(with_penalties(scaled, model.penalties, library, cluster.ranks,
                                      model.cores, model.background_of(library, cluster),
                                      model.wake.get(library)),
                       cluster, CALIBRATION, algorithm, 0, model.table)

    lo, hi = 0.0, 1.0
    if timed(lo) > value:
        return  # the node's part alone is already slower
    for _ in range(60):
        mid = (lo + hi) / 2
        if timed(mid) > value:
            hi = mid
        else:
            lo = mid
    model.machines[library] = scaled_latency(machine, lo, NET)
    model.net_latency_scale[library] = lo


def validate(model: Model, records: Sequence[dict],
             collectives: Sequence[str] = COLLECTIVES) -> list:
    """A Point per measured (library, shape, collective, size) of the coll
    records that the model has parameters for, priced with the algorithm
    the library's own rules pick for that shape and size
    (library_algorithm: Postbox's table, Open MPI's and MPICH's default
    decisions); a library of another family with the algorithm that best
    matches its measurements at that collective and size over all the
    shapes measured (the smallest sum of |log(predicted / measured)|).
    Records of several rounds count by their median."""
    out = []
    for (library, collective, size), medians in coll_medians(model, records,
                                                             collectives).items():
        if family_of(library) in RULE_FAMILIES:
            for cluster, value in sorted(medians.items()):
                algorithm = library_algorithm(library, collective, cluster, size, model.table)
                out.append(Point(library, cluster, collective, size, algorithm, value,
                                 model.time(library, cluster, collective, algorithm, size),
                                 calibration=model.calibrates(library, cluster, collective,
                                                               size)))
            continue
        best, best_miss = None, None
        for algorithm in candidates(library, collective):
            miss = sum(_log_miss(model.time(library, c, collective, algorithm, size), v)
                       for c, v in medians.items())
            if best_miss is None or miss < best_miss:
                best, best_miss = algorithm, miss
        for cluster, value in sorted(medians.items()):
            out.append(Point(library, cluster, collective, size, best, value,
                             model.time(library, cluster, collective, best, size),
                             calibration=model.calibrates(library, cluster, collective,
                                                               size)))
    out.sort(key=lambda p: (p.library, p.cluster.ranks, p.cluster, COLLECTIVES.index(
        p.collective) if p.collective in COLLECTIVES else 99, p.size))
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
