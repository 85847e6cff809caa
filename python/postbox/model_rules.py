"""The collective algorithm each MPI library runs, by its own default rules:
Postbox's table (src/mpi/coll_table.txt), Open MPI 5.0's coll/tuned fixed
decision (OPENMPI_TUNED) and MPICH 5.0's ch4, posix and MPIR selection
(mpich_algorithm).  postbox.model prices the algorithms these rules name;
this module only names them.

A cluster here is any object with the attributes ranks, cores (ranks per
node) and nodes (postbox.model.Cluster).

Nothing here runs anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from postbox.model import Cluster

# the algorithms of each collective that the rules may name, in the order
# postbox.model prices them (its ALGORITHMS); besides these, NODE_ALGORITHMS
# are Postbox's node area and "smp" MPICH's node composition
ALGORITHM_NAMES = {
    "barrier": ("dissemination", "recursive_doubling", "linear", "tree"),
    "bcast": ("binomial", "scatter_allgather", "scatter_allgather_rd", "linear", "chain",
              "binary", "knomial", "release_gather", "release_gather_relay"),
    "reduce": ("binomial", "rabenseifner", "linear", "chain", "binary", "release_gather",
               "release_gather_relay"),
    "allreduce": ("recursive_doubling", "rabenseifner", "ring", "nonoverlapping",
                  "release_gather"),
    "gather": ("binomial", "direct", "linear_sync"),
    "scatter": ("binomial", "direct"),
    "allgather": ("ring", "recursive_doubling", "bruck", "neighbor", "linear"),
    "alltoall": ("pairwise", "direct", "bruck"),
}
# Postbox's node area: through the cells, by single copy, or (Bcast,
# Scatter, Reduce, Allreduce, Gather on one node) the node's pick between
# them call by call; the model prices the three alike
NODE_ALGORITHMS = ("node", "node_cma", "node_auto")


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def floor_power_of_two(n: int) -> int:
    return 1 << (n.bit_length() - 1) if n > 0 else 0


# Postbox's first point-to-point algorithm of each collective (the table's
# fallback, docs/mpi.md)
DEFAULT_ALGORITHM = {"barrier": "dissemination", "bcast": "binomial", "reduce": "binomial",
                     "allreduce": "recursive_doubling", "gather": "direct",
                     "scatter": "direct", "allgather": "ring", "alltoall": "direct"}


def family_of(library: str) -> str:
    """postbox, openmpi, mpich or "" from a library label (mpich-wheel ...)."""
    name = library.lower().replace("-", "").replace("_", "")
    for family in ("postbox", "openmpi", "mpich"):
        if name.startswith(family):
            return family
    return ""


# ---- Open MPI's and MPICH's decision rules -----------------------------------------
#
# Which algorithm each library runs at (communicator size, bytes), from the
# libraries' own default rules rather than fitted to the measurements.  A
# table here is rows (ranks below, ((bytes below, algorithm), ...,
# (None, algorithm))): the first row whose bound the communicator size is
# under (None: any), then the first size bound the message is under.  The
# bytes are the bench's size (bench/mpi_coll.c): the whole vector of Bcast
# and the reductions, one rank's block of Gather, Scatter and Allgather,
# the block to each rank of Alltoall, which is also what each library
# compares.  The bench's reductions are MPI_FLOAT sums (commutative,
# built-in), so only the commutative branches are written.

def _pick(table: tuple, ranks: int, size: float) -> str:
    for below, sizes in table:
        if below is None or ranks < below:
            for bytes_below, algorithm in sizes:
                if bytes_below is None or size < bytes_below:
                    return algorithm
    raise ValueError("a rule table must end with None bounds")


# Open MPI 5.0: with one node's ranks (or on its TCP path, where the ranks
# are still on one host) coll/tuned decides (ompi_info of the 5.0.11 wheel:
# tuned priority 30; han 35 leaves communicators without remote peers to
# it; sm and adapt 0; coll_tuned_use_dynamic_rules false), by its fixed
# decision functions (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c,
# v5.0.x, the tables of the ompi-collectives-tuning runs).  The model's
# names for Open MPI's algorithms: its pipeline and chain without
# segmentation (the fixed rules pass segment size 0) are "chain", its
# segmented ring is "ring", its split and in-order binary trees are
# "binary", its basic linear and non-blocking linear are "direct" (Gather,
# Scatter, Alltoall; "linear" for Bcast, Reduce and Barrier), linear_sync of
# Alltoall (all requests at once by default) is "direct", two_proc is the
# one exchange of 2 ranks, bruck's Barrier is "dissemination", split
# binary Bcast is "binary".  coll/han, which would run where a communicator
# spans several hosts, is not modelled.
OPENMPI_TUNED = {
    "allreduce": (
        (4, ((8, "ring"), (4096, "recursive_doubling"), (8192, "ring"),
             (16384, "recursive_doubling"), (262144, "ring"), (None, "rabenseifner"))),
        (8, ((16, "ring"), (8192, "recursive_doubling"), (None, "rabenseifner"))),
        (16, ((8192, "recursive_doubling"), (None, "rabenseifner"))),
        (32, ((64, "ring"), (4096, "recursive_doubling"), (None, "rabenseifner"))),
        (64, ((128, "ring"), (None, "rabenseifner"))),
        (128, ((262144, "recursive_doubling"), (None, "rabenseifner"))),
        (256, ((131072, "nonoverlapping"), (262144, "recursive_doubling"),
               (None, "rabenseifner"))),
        (512, ((4096, "nonoverlapping"), (None, "rabenseifner"))),
        (2048, ((2048, "nonoverlapping"), (16384, "recursive_doubling"),
                (None, "rabenseifner"))),
        (4096, ((2048, "nonoverlapping"), (4096, "ring"), (16384, "recursive_doubling"),
                (None, "rabenseifner"))),
        (None, ((2048, "nonoverlapping"), (16384, "ring"), (32768, "recursive_doubling"),
                (None, "rabenseifner")))),
    "alltoall": (
        # 2 ranks: pairwise, two_proc and linear_sync by size, each one exchange
        (3, ((None, "pairwise"),)),
        (8, ((524288, "direct"), (1048576, "pairwise"), (None, "direct"))),
        (16, ((None, "direct"),)),
        (32, ((4, "direct"), (512, "bruck"), (None, "direct"))),
        (64, ((512, "bruck"), (None, "direct"))),
        (128, ((1024, "bruck"), (262144, "direct"), (None, "pairwise"))),
        (256, ((1024, "bruck"), (262144, "direct"), (None, "pairwise"))),
        (512, ((1024, "bruck"), (32768, "direct"), (None, "pairwise"))),
        (1024, ((512, "bruck"), (262144, "direct"), (None, "pairwise"))),
        (2048, ((512, "bruck"), (None, "direct"))),
        (4096, ((1024, "bruck"), (None, "direct"))),
        (None, ((2048, "bruck"), (None, "direct")))),
    "barrier": (
        (4, ((None, "recursive_doubling"),)),
        (8, ((None, "linear"),)),
        (64, ((None, "recursive_doubling"),)),
        (256, ((None, "dissemination"),)),
        (512, ((None, "tree"),)),
        (1024, ((None, "dissemination"),)),
        (4096, ((None, "tree"),)),
        (None, ((None, "dissemination"),))),
    "bcast": (
        (4, ((32, "chain"), (256, "binary"), (512, "chain"), (1024, "knomial"),
             (32768, "linear"), (131072, "binary"), (262144, "chain"), (524288, "linear"),
             (1048576, "binomial"), (None, "binary"))),
        (8, ((64, "binary"), (128, "binomial"), (2048, "binary"), (8192, "binomial"),
             (1048576, "linear"), (None, "chain"))),
        (16, ((8, "knomial"), (64, "binary"), (4096, "knomial"), (16384, "binary"),
              (32768, "binomial"), (None, "linear"))),
        (32, ((4096, "knomial"), (1048576, "binomial"), (None, "scatter_allgather_rd"))),
        (64, ((2048, "binomial"), (None, "knomial"))),
        (128, ((None, "knomial"),)),
        (256, ((2, "binomial"), (16384, "binary"), (32768, "linear"), (65536, "binary"),
               (None, "knomial"))),
        (1024, ((16384, "knomial"), (32768, "binary"), (None, "knomial"))),
        (2048, ((524288, "knomial"), (None, "scatter_allgather_rd"))),
        (4096, ((262144, "knomial"), (None, "scatter_allgather_rd"))),
        (None, ((8192, "knomial"), (16384, "binary"), (262144, "knomial"),
                (None, "scatter_allgather_rd")))),
    "reduce": (
        (4, ((8, "rabenseifner"), (16, "binary"), (32, "chain"), (262144, "linear"),
             (None, "chain"))),
        (8, ((4096, "binary"), (65536, "chain"), (262144, "binomial"), (524288, "linear"),
             (1048576, "binomial"), (None, "linear"))),
        (16, ((8192, "binary"), (None, "binomial"))),
        (32, ((4096, "binary"), (None, "binomial"))),
        (256, ((None, "binomial"),)),
        (512, ((8192, "binomial"), (16384, "binary"), (None, "binomial"))),
        (2048, ((None, "binomial"),)),
        (4096, ((512, "binomial"), (1024, "binary"), (8192, "binomial"), (16384, "binary"),
                (None, "binomial"))),
        (None, ((16, "binomial"), (32, "binary"), (1024, "binomial"), (2048, "binary"),
                (8192, "binomial"), (16384, "binary"), (None, "binomial")))),
    "allgather": (
        (3, ((None, "ring"),)),  # 2 ranks: one exchange
        (32, ((None, "recursive_doubling"),)),
        (64, ((1024, "recursive_doubling"), (65536, "neighbor"), (None, "ring"))),
        (128, ((512, "recursive_doubling"), (65536, "neighbor"), (None, "ring"))),
        (256, ((512, "recursive_doubling"), (131072, "neighbor"), (524288, "ring"),
               (1048576, "neighbor"), (None, "ring"))),
        (512, ((32, "recursive_doubling"), (128, "bruck"), (1024, "recursive_doubling"),
               (131072, "neighbor"), (524288, "ring"), (1048576, "neighbor"), (None, "ring"))),
        (1024, ((64, "recursive_doubling"), (256, "bruck"), (2048, "recursive_doubling"),
                (None, "neighbor"))),
        (2048, ((4, "recursive_doubling"), (8, "bruck"), (16, "recursive_doubling"),
                (32, "bruck"), (256, "recursive_doubling"), (512, "bruck"),
                (4096, "recursive_doubling"), (None, "neighbor"))),
        (4096, ((32, "bruck"), (128, "recursive_doubling"), (512, "bruck"),
                (4096, "recursive_doubling"), (None, "neighbor"))),
        (None, ((2, "recursive_doubling"), (8, "bruck"), (16, "recursive_doubling"),
                (512, "bruck"), (4096, "recursive_doubling"), (None, "neighbor")))),
    "gather": (
        (4, ((2, "linear_sync"), (4, "direct"), (32768, "binomial"), (65536, "direct"),
             (131072, "binomial"), (None, "linear_sync"))),
        (8, ((1024, "binomial"), (8192, "direct"), (32768, "binomial"), (262144, "direct"),
             (None, "linear_sync"))),
        (256, ((None, "binomial"),)),
        (512, ((2048, "binomial"), (8192, "direct"), (None, "binomial"))),
        (None, ((None, "binomial"),))),
    "scatter": (
        (4, ((None, "direct"),)),
        (8, ((2048, "binomial"), (4096, "direct"), (8192, "binomial"), (None, "direct"))),
        (16, ((16384, "binomial"), (None, "direct"))),
        (32, ((16384, "binomial"), (None, "direct"))),
        (64, ((512, "binomial"), (8192, "direct"), (16384, "binomial"), (None, "direct"))),
        (None, ((512, "binomial"), (None, "direct")))),
}


def openmpi_algorithm(collective: str, ranks: int, size: float) -> str:
    """The algorithm Open MPI 5.0's coll/tuned runs for @collective on
    @ranks ranks and @size bytes (OPENMPI_TUNED), after the fallbacks its
    algorithms take themselves (ompi/mca/coll/base): the ring Allreduce
    with fewer elements than ranks, and Rabenseifner's with fewer than the
    power of two below the ranks, run recursive doubling (Rabenseifner's
    Reduce: linear); recursive doubling Allgather on ranks not a power of
    two runs Bruck's, the neighbour exchange on an odd number the ring."""
    algorithm = _pick(OPENMPI_TUNED[collective], ranks, size)
    count = size // 4  # the bench's floats
    if collective == "allreduce" and algorithm == "ring" and count < ranks:
        algorithm = "recursive_doubling"
    if algorithm == "rabenseifner" and count < floor_power_of_two(ranks):
        algorithm = "recursive_doubling" if collective == "allreduce" else "linear"
    if collective == "allgather" and algorithm == "recursive_doubling" \
            and not is_power_of_two(ranks):
        algorithm = "bruck"
    return algorithm


# MPICH 5.0 (ch4): the device's selection (maint/tuning/coll/ch4/generic.json)
# sends a communicator whose ranks share nodes ("parent": its ranks are not
# all on different nodes) to its node compositions, and on one node Bcast,
# Reduce and Allreduce to the shared-memory release-gather algorithms
# (maint/tuning/coll/ch4/posix_generic.json; the bench is single-threaded
# and its reductions commutative), and Barrier to the node's dissemination;
# everything else, and every collective of ranks each on its own node (its
# TCP path, MPIR_CVAR_NOLOCAL=1), goes to the MPIR rules
# (maint/tuning/coll/mpir/generic.json).  The compositions that serve a
# root other than the node's first rank relay through it
# ("release_gather_relay": one message more, for all but one root of the
# bench's rotating roots).

def mpich_mpir_algorithm(collective: str, ranks: int, size: float) -> str:
    """The algorithm of MPICH's MPIR rules (mpir/generic.json) for a
    communicator that is not node-aware."""
    pof2 = floor_power_of_two(ranks)
    count = size // 4  # the bench's floats
    if collective == "barrier":
        return "dissemination"  # k-dissemination, k = 2
    if collective == "bcast":
        per_proc = size / ranks
        if ranks < 8:
            return "binomial"
        if is_power_of_two(ranks):
            if size <= 12288:
                return "binomial"
            return "scatter_allgather_rd" if per_proc <= 65536 else "scatter_allgather"
        return "binomial" if per_proc <= 12288 else "scatter_allgather"
    if collective == "allreduce":
        if size <= 8 or count < pof2:
            return "recursive_doubling"
        return "rabenseifner"
    if collective == "reduce":
        if size <= 2048 or count < pof2:
            return "binomial"
        return "rabenseifner"
    if collective in ("gather", "scatter"):
        return "binomial"
    if collective == "allgather":
        total = size * ranks
        if is_power_of_two(ranks):
            return "recursive_doubling" if total < 524288 else "ring"
        return "bruck" if total < 81920 else "ring"
    if collective == "alltoall":
        if ranks >= 8 and size <= 256:
            return "bruck"
        return "direct" if size <= 32768 else "pairwise"  # "scattered": all posted
    raise ValueError("no MPICH rule for %s" % collective)


def mpich_algorithm(collective: str, cluster: Cluster, size: float) -> str:
    """The algorithm MPICH 5.0's ch4 device runs for @collective on
    @cluster (ranks in blocks of cluster.cores per node) at @size bytes;
    "smp" is its node composition on several nodes of several ranks
    (mpich_smp_time)."""
    ranks = cluster.ranks
    node_aware = cluster.cores > 1 and ranks > 1
    if not node_aware:
        return mpich_mpir_algorithm(collective, ranks, size)
    one_node = cluster.nodes == 1
    if collective == "barrier":
        return "dissemination" if one_node else "smp"
    if collective == "bcast":
        # composition alpha below 8 ranks and below 12 KB (roots, then the
        # node from its first rank), beta up to 512 KB on a power of two
        # (the node from the root), else gamma (the MPIR rules)
        if ranks < 8 or size < 12288:
            return "release_gather_relay" if one_node else "smp"
        if is_power_of_two(ranks) and size < 524288:
            return "release_gather" if one_node else "smp"
        return mpich_mpir_algorithm(collective, ranks, size)
    if collective == "reduce":
        # compositions beta (to 2 KB) and alpha: the node's reduction to
        # its first rank, which relays to the root
        return "release_gather_relay" if one_node else "smp"
    if collective == "allreduce":
        if one_node:
            return "release_gather"  # composition gamma: the node's own
        return "smp" if size <= 32768 else mpich_mpir_algorithm(collective, ranks, size)
    return mpich_mpir_algorithm(collective, ranks, size)


# the families whose own rules the model knows
RULE_FAMILIES = ("postbox", "openmpi", "mpich")


def library_algorithm(library: str, collective: str, cluster: Cluster, size: float,
                      table: Optional[CollTable] = None) -> Optional[str]:
    """The algorithm @library runs for @collective on @cluster at @size
    bytes by its own rules: Postbox's table, Open MPI's coll/tuned fixed
    decision, MPICH's selection; None for a library of another family."""
    family = family_of(library)
    if family == "postbox":
        return postbox_choice(table, collective, cluster, int(size))
    if family == "openmpi":
        return openmpi_algorithm(collective, cluster.ranks, size)
    if family == "mpich":
        return mpich_algorithm(collective, cluster, size)
    return None


# ---- Postbox's table (src/mpi/coll_table.txt) -----------------------------------

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _parse_count(text: str, units: bool) -> tuple:
    """(lo, hi) of *, N, N- or N-M (hi None: no upper end)."""
    def value(part: str) -> int:
        found = re.fullmatch(r"(\d+)([KMG]?)", part)
        if not found or (found.group(2) and not units):
            raise ValueError("bad count %r" % text)
        return int(found.group(1)) * _UNITS[found.group(2)]
    if text == "*":
        return 0, None
    if text.endswith("-"):
        return value(text[:-1]), None
    if "-" in text:
        lo, hi = text.split("-", 1)
        return value(lo), value(hi)
    n = value(text)
    return n, n


@dataclass(frozen=True)
class Rule:
    collective: str
    ranks: tuple
    ppn: tuple
    nodes: tuple
    bytes: tuple
    algorithm: str

    def matches(self, collective: str, ranks: int, ppn: int, nodes: int, size: int) -> bool:
        def within(bounds: tuple, n: int) -> bool:
            lo, hi = bounds
            return n >= lo and (hi is None or n <= hi)
        return (self.collective == collective and within(self.ranks, ranks)
                and within(self.ppn, ppn) and within(self.nodes, nodes)
                and within(self.bytes, size))


@dataclass
class CollTable:
    """Postbox's algorithm table: the first rule that matches wins."""

    rules: list = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> "CollTable":
        rules = []
        for number_, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) != 6:
                raise ValueError("coll table line %d: six fields, not %d" % (number_,
                                                                             len(fields)))
            rules.append(Rule(fields[0], _parse_count(fields[1], False),
                              _parse_count(fields[2], False), _parse_count(fields[3], False),
                              _parse_count(fields[4], True), fields[5]))
        return cls(rules)

    def choose(self, collective: str, ranks: int, ppn: int, nodes: int, size: int) -> str:
        """The algorithm Postbox runs; an algorithm that does not apply
        (the node's area with one rank per node; recursive doubling of
        Allgather on ranks not a power of two) gives way to the first
        point-to-point one, as in the library."""
        for rule in self.rules:
            if rule.matches(collective, ranks, ppn, nodes, size):
                algorithm = rule.algorithm
                if algorithm in NODE_ALGORITHMS and ppn < 2:
                    break
                if collective == "allgather" and algorithm == "recursive_doubling" \
                        and not is_power_of_two(ranks):
                    break
                if algorithm in NODE_ALGORITHMS or algorithm in ALGORITHM_NAMES[collective]:
                    return algorithm
                break
        return DEFAULT_ALGORITHM[collective]


def default_table_path() -> Path:
    return Path(__file__).resolve().parents[2] / "src" / "mpi" / "coll_table.txt"


def load_table(path: Optional[Path] = None) -> Optional[CollTable]:
    """Postbox's built-in table from the source tree, None when it is not
    there (an installed tool without the sources)."""
    path = path or default_table_path()
    try:
        return CollTable.parse(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def postbox_choice(table: Optional[CollTable], collective: str, cluster: Cluster,
                   size: int) -> str:
    """The algorithm Postbox runs for @collective on @cluster at @size bytes
    by @table; without a table, the collective's first point-to-point
    algorithm (DEFAULT_ALGORITHM)."""
    if table is None:
        return DEFAULT_ALGORITHM[collective]
    return table.choose(collective, cluster.ranks, min(cluster.cores, cluster.ranks),
                        cluster.nodes, int(size))
