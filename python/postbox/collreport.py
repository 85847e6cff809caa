"""The collectives' section of ``postbox report``: records of suite ``coll``
(bench/mpi_coll.c, ``coll.jsonl``).

- ``figures``: after Qian, Afsahi, Fredrickson and Zamani, 'Performance
  Evaluation of the Sun Fire Link SMP Clusters' (2006), Fig. 16: Bcast,
  Scatter, Gather and Alltoall time against size, one figure per job shape
  (on-node and across two nodes), one colour per library, one dash per
  collective;
- ``section``: the acceptance grid of issue 14 (Postbox's median against
  the best other library at every point, with the 1.0x / 0.77x limits), the
  4 MB float Allreduce against one memcpy plus one vector add of the same
  run, each library's Barrier against the node's floor for a barrier
  measured in the same run (floor_rows), Table 2 of Sistare and Jackson,
  'Ultra-High Performance Communication with MPI and the Sun Fire Link
  Interconnect' (2002) (the 13 collectives'
  bandwidth on-node and off-node and their ratio, beside the paper's),
  the Intel MPI Benchmarks' Barrier, Reduce and Alltoall at 8 B, 1 KB and
  1 MB as Fatoohi, Saini and Ciotti, 'Interconnect Performance Evaluation of
  SGI Altix 3700 BX2, Cray X1, Cray Opteron Cluster, and Dell PowerEdge'
  (2006) show them, the nonblocking collectives' overlap, and the
  self-consistency checks of every library (Traff, Gropp and Thakur's
  guidelines), every violation listed.

Nothing here runs anything: it reads records.
"""

from __future__ import annotations

import html
import statistics
from collections import OrderedDict
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from postbox import results
from postbox.plot import COLORS, Figure, Series, format_size, format_value, number

SUITE = "coll"
POSTBOX = "postbox"
REF_MEMCPY, REF_VECTOR_ADD = "ref_memcpy", "ref_vector_add"
# the node's floor for a barrier (bench/mpi_coll.c's floor_barrier)
FLOOR_BARRIER = "floor_barrier"


def is_coll(record: dict) -> bool:
    return record.get("suite") == SUITE


# ---- job shapes ------------------------------------------------------------

@dataclass(frozen=True, order=True)
class Shape:
    """A job shape of the collective runs: ranks, and whether across two
    nodes (Postbox's virtual nodes, the others' network paths)."""

    two_nodes: bool
    ranks: int

    @property
    def label(self) -> str:
        return ("%d ranks, 2 nodes" % self.ranks if self.two_nodes
                else "%d ranks on-node" % self.ranks)


def shape_of(record: dict) -> Shape:
    nodes = number(record.get("nodes")) or 1
    two = str(record.get("path") or "on-node") == "network" or nodes > 1
    return Shape(two, int(number(record.get("ranks")) or 0))


# the acceptance grid of issue 14
GRID_SHAPES = (Shape(False, 2), Shape(False, 4), Shape(True, 4))
GRID_TESTS = ("barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "gather",
              "scatter")
GRID_SIZES = (8, 1024, 65536, 1048576, 4194304)
# Postbox at most this many times the best other library ...
LIMIT_ALL = 1.0
# ... and at most this for these collectives up to LIMIT_SMALL_BYTES on one node
LIMIT_SMALL = 0.77
LIMIT_SMALL_TESTS = ("barrier", "bcast", "reduce", "allreduce")
LIMIT_SMALL_BYTES = 4096
# a 4 MB float Allreduce at 2 ranks on-node against memcpy + vector add
ALLREDUCE_REF_SIZE = 4 << 20
ALLREDUCE_REF_LIMIT = 1.5


# the figures of a point that its rounds' records combine (their median)
ROUND_FIGURES = ("median", "t_min", "t_max", "t_avg", "min", "max")


def merge_rounds(rounds: Sequence[dict]) -> dict:
    """One record of a point measured in several rounds: the last round's,
    each of ROUND_FIGURES the median of the rounds' values, and "rounds" the
    number of rounds."""
    merged = dict(rounds[-1], rounds=len(rounds))
    for key in ROUND_FIGURES:
        values = [number(r.get(key)) for r in rounds]
        if all(v is not None for v in values):
            merged[key] = statistics.median(values)
    return merged


class Index:
    """The coll records by (library, shape, test, size).  Records of one key
    from several rounds (key "round") make one record of their medians
    (merge_rounds); otherwise the last record of a key wins (a later run of
    the same point)."""

    def __init__(self, records: Iterable[dict]):
        self.by_key: "OrderedDict[tuple, dict]" = OrderedDict()
        self.libraries: list = []
        self.shapes: list = []
        rounds: "OrderedDict[tuple, list]" = OrderedDict()
        for record in records:
            if not is_coll(record) or number(record.get("median")) is None:
                continue
            library, shape = str(record.get("library")), shape_of(record)
            size = int(number(record.get("size")) or 0)
            key = (library, shape, str(record.get("test")), size)
            if record.get("round") is not None:
                rounds.setdefault(key, []).append(record)
            self.by_key[key] = record
            if library not in self.libraries:
                self.libraries.append(library)
            if shape not in self.shapes:
                self.shapes.append(shape)
        self.rounds = {key: found for key, found in rounds.items() if len(found) > 1}
        for key, found in self.rounds.items():
            self.by_key[key] = merge_rounds(found)
        self.shapes.sort()

    def get(self, library: str, shape: Shape, test: str, size: int) -> Optional[dict]:
        return self.by_key.get((library, shape, test, int(size)))

    def median(self, library: str, shape: Shape, test: str, size: int) -> Optional[float]:
        record = self.get(library, shape, test, size)
        return None if record is None else float(record["median"])

    def round_records(self, library: str, shape: Shape, test: str, size: int) -> list:
        """The records of a point's rounds (one record when it has no rounds)."""
        key = (library, shape, test, int(size))
        if key in self.rounds:
            return self.rounds[key]
        return [self.by_key[key]] if key in self.by_key else []

    def sizes(self, library: str, shape: Shape, test: str) -> list:
        return sorted(size for (lib, sh, t, size) in self.by_key
                      if lib == library and sh == shape and t == test)

    def others(self) -> list:
        return [lib for lib in self.libraries if lib != POSTBOX]


# ---- the acceptance grid -----------------------------------------------------

@dataclass
class GridPoint:
    shape: Shape
    test: str
    size: int
    postbox: Optional[float]  # median, us
    best: Optional[float]  # the best other library's median
    best_library: Optional[str]
    limit: float
    postbox_gave_up: bool = False
    # the probe state the medians were taken in (point_state), "" for all
    # rounds, and how many rounds of Postbox and of the best other it held
    state: str = ""
    rounds: tuple = (0, 0)
    # Postbox's fastest round and the best other's slowest, in that state
    postbox_fastest: Optional[float] = None
    best_slowest: Optional[float] = None

    @property
    def ratio(self) -> Optional[float]:
        if self.postbox is None or not self.best:
            return None
        return self.postbox / self.best

    @property
    def verdict(self) -> str:
        """pass, FAIL or missing."""
        if self.ratio is None:
            return "missing"
        if self.postbox_gave_up:
            return "FAIL"
        return "pass" if self.ratio <= self.limit else "FAIL"

    @property
    def within_spread(self) -> bool:
        """A point that fails on the medians, where Postbox's fastest round
        would still meet the limit against the best other's slowest one:
        the two libraries' rounds overlap, and which side of the limit the
        medians fall is the run's movement, not a difference it shows."""
        if self.verdict != "FAIL" or self.postbox_gave_up:
            return False
        if self.postbox_fastest is None or self.best_slowest is None:
            return False
        return self.postbox_fastest <= self.limit * self.best_slowest


def point_limit(shape: Shape, test: str, size: int) -> float:
    """The issue's limit at a point: 0.77x the best for Barrier, Bcast,
    Reduce and Allreduce up to 4 KB on one node, 1.0x everywhere else."""
    if not shape.two_nodes and test in LIMIT_SMALL_TESTS and size <= LIMIT_SMALL_BYTES:
        return LIMIT_SMALL
    return LIMIT_ALL


# the probe states a record can carry that say where the cores were
# (bench/engine.c, pb_bench_record_state); "unknown" says nothing
PROBE_STATES = ("fast", "slow")


def point_state(index: Index, shape: Shape, test: str, size: int) -> str:
    """The probe state a grid point compares the libraries in: of the
    states in which Postbox and at least one other library both have a
    round of the point, the one with the most rounds of all the libraries
    (fast on a tie); "" when there is none, and then every round counts.
    The VM switches between two placements of its vCPUs every few seconds
    (docs/notes/2026-11-27-cells-when-cores-are-far-apart.md), and a round
    in one state is not comparable with a round in the other."""
    def states(library: str) -> list:
        return [str(r.get("state")) for r in index.round_records(library, shape, test, size)]

    own = states(POSTBOX)
    others = [s for library in index.others() for s in states(library)]
    shared = [s for s in PROBE_STATES if s in own and s in others]
    if not shared:
        return ""
    return max(shared, key=lambda s: (own.count(s) + others.count(s), s == "fast"))


def _state_values(index: Index, library: str, shape: Shape, test: str, size: int,
                  state: str) -> list:
    """The medians of a library's rounds of a point in @state (every round
    when @state is "")."""
    return [float(r["median"]) for r in index.round_records(library, shape, test, size)
            if not state or r.get("state") == state]


def state_median(index: Index, library: str, shape: Shape, test: str, size: int,
                 state: str) -> tuple:
    """(median, rounds) of a library's rounds of a point in @state (every
    round when @state is ""); (None, 0) when it has none there.  Of an even
    number of rounds the lower middle one: of two, the mean would let one
    disturbed round (ranks that woke each other at every call) decide."""
    values = _state_values(index, library, shape, test, size, state)
    if not values:
        return None, 0
    return statistics.median_low(values), len(values)


def state_range(index: Index, library: str, shape: Shape, test: str, size: int,
                state: str) -> tuple:
    """(fastest, slowest) of a library's rounds of a point in @state (every
    round when @state is ""); (None, None) when it has none there."""
    values = _state_values(index, library, shape, test, size, state)
    if not values:
        return None, None
    return min(values), max(values)


def acceptance_grid(index: Index, shapes: Sequence[Shape] = GRID_SHAPES,
                    tests: Sequence[str] = GRID_TESTS,
                    sizes: Sequence[int] = GRID_SIZES) -> list:
    """Every point of the grid: Postbox's median against the best (lowest)
    median of the other libraries in the same shape, each the median of its
    rounds in the point's probe state (point_state).  Barrier has one point
    per shape (size 0).  A point where another library gave up (one call
    over its limit) takes that call as its time: a lower bound, so a pass
    against it is a pass."""
    out = []
    for shape in shapes:
        for test in tests:
            for size in ((0,) if test == "barrier" else sizes):
                state = point_state(index, shape, test, size)
                own, own_rounds = state_median(index, POSTBOX, shape, test, size, state)
                best, best_library, best_rounds = None, None, 0
                for library in index.others():
                    value, rounds = state_median(index, library, shape, test, size, state)
                    if value is not None and (best is None or value < best):
                        best, best_library, best_rounds = value, library, rounds
                gave_up = any(r.get("gave_up") for r in
                              index.round_records(POSTBOX, shape, test, size))
                fastest = state_range(index, POSTBOX, shape, test, size, state)[0]
                slowest = (state_range(index, best_library, shape, test, size, state)[1]
                           if best_library else None)
                out.append(GridPoint(shape, test, size, own, best, best_library,
                                     point_limit(shape, test, size), gave_up, state,
                                     (own_rounds, best_rounds), fastest, slowest))
    return out


# ---- Allreduce against memcpy + vector add -----------------------------------

@dataclass
class RefRatio:
    library: str
    shape: Shape
    allreduce: Optional[float]
    memcpy: Optional[float]
    vector_add: Optional[float]

    @property
    def ratio(self) -> Optional[float]:
        if self.allreduce is None or self.memcpy is None or self.vector_add is None:
            return None
        total = self.memcpy + self.vector_add
        return self.allreduce / total if total > 0 else None


def allreduce_ratios(index: Index) -> list:
    """The 4 MB Allreduce of each library and shape over one 4 MB memcpy
    plus one 4 MB vector add that the same run measured."""
    out = []
    for library in index.libraries:
        for shape in index.shapes:
            row = RefRatio(library, shape,
                           index.median(library, shape, "allreduce", ALLREDUCE_REF_SIZE),
                           index.median(library, shape, REF_MEMCPY, ALLREDUCE_REF_SIZE),
                           index.median(library, shape, REF_VECTOR_ADD, ALLREDUCE_REF_SIZE))
            if row.allreduce is not None or row.memcpy is not None:
                out.append(row)
    return out


# ---- Barrier against the node's floor ----------------------------------------

@dataclass
class FloorRow:
    library: str
    shape: Shape
    barrier: Optional[float]  # MPI_Barrier, the median over the rounds (us)
    floor: Optional[float]  # floor_barrier, the same
    ratio: Optional[float]  # the median over the rounds of each round's barrier / floor
    rounds: int  # rounds with both


def floor_rows(index: Index) -> list:
    """Each library's MPI_Barrier against the node's floor for a barrier
    (floor_barrier: flags in a shared window, measured in the same run,
    which only one-node runs have), per shape.  The floor moves from one
    launch to the next with the host, so the ratio is taken round by round
    (the records of one round are one launch) and its median reported."""
    out = []
    for library in index.libraries:
        for shape in index.shapes:
            floor = index.median(library, shape, FLOOR_BARRIER, 0)
            if floor is None:
                continue
            floors = {r.get("round"): number(r.get("median"))
                      for r in index.round_records(library, shape, FLOOR_BARRIER, 0)}
            ratios = [number(r.get("median")) / floors[r.get("round")]
                      for r in index.round_records(library, shape, "barrier", 0)
                      if floors.get(r.get("round")) and number(r.get("median")) is not None]
            out.append(FloorRow(library, shape, index.median(library, shape, "barrier", 0),
                                floor, statistics.median(ratios) if ratios else None,
                                len(ratios)))
    return out


def floor_html(index: Index) -> list:
    esc = html.escape
    rows = floor_rows(index)
    if not rows:
        return []
    out = ['<h3 id="coll-floor">Barrier against the node\'s floor</h3>',
           "<p>The floor: in the same run, after the same barrier, each rank stores its "
           "count of calls in its own cache line of an MPI_Win_allocate_shared window and "
           "waits until every line holds it, with bare loads where the cores are enough "
           "for the ranks, yielding the CPU after each look where the ranks outnumber them; "
           "no MPI call inside (bench/mpi_coll.c, "
           "<code>floor_barrier</code>). It is what a barrier among these processes costs "
           "with no library around it in that launch: one store and one cache line's trip "
           "per rank and, where the ranks outnumber the cores, the context switches; not a "
           "strict bound, as the kernel may move the ranks between the two tests. The ratio "
           "is the median over the rounds of each round's MPI_Barrier over its floor. Where "
           "the floor is above %gx another library's Barrier, issue 14's limit for the "
           "Barrier on one node asks for less than a barrier of bare flags took.</p>"
           % LIMIT_SMALL,
           '<table class="coll-floor"><tr><th class="text">library</th>'
           '<th class="text">shape</th><th>MPI_Barrier (us)</th><th>floor (us)</th>'
           '<th>Barrier / floor</th><th>rounds</th></tr>']
    for row in rows:
        out.append('<tr><td class="text">%s</td><td class="text">%s</td><td>%s</td><td>%s</td>'
                   '<td>%s</td><td>%d</td></tr>'
                   % (esc(row.library), esc(row.shape.label), esc(format_value(row.barrier)),
                      esc(format_value(row.floor)),
                      "-" if row.ratio is None else "%.2f" % row.ratio, row.rounds))
    out.append("</table>")
    return out


# ---- self-consistency --------------------------------------------------------

@dataclass
class Violation:
    library: str
    shape: Shape
    rule: str
    size: int
    lhs: float
    rhs: float

    @property
    def factor(self) -> float:
        return self.lhs / self.rhs if self.rhs > 0 else float("inf")


RULES = ("Allreduce(m) <= Reduce(m) + Bcast(m)", "Barrier <= Allreduce(4 B)",
         "Bcast(m) <= Scatter(m/p) + Allgather(m/p)")


def consistency(index: Index) -> tuple:
    """(violations, checked): every violation of the three guidelines for
    every library and shape, and how many comparisons were possible per
    rule.  Bcast of m bytes against a Scatter and an Allgather of m / p
    bytes per rank (the same m in all), where both sizes were measured.  A
    right-hand side that gave up (one call: a lower bound) is not compared."""
    violations, checked = [], OrderedDict((rule, 0) for rule in RULES)
    for library in index.libraries:
        for shape in index.shapes:
            def value(test: str, size: int) -> Optional[float]:
                return index.median(library, shape, test, size)

            def right(test: str, size: int) -> Optional[float]:
                # a record that gave up is a lower bound: no side to compare with
                record = index.get(library, shape, test, size)
                return None if record is None or record.get("gave_up") else \
                    float(record["median"])

            for size in index.sizes(library, shape, "allreduce"):
                a, r, b = value("allreduce", size), right("reduce", size), right("bcast", size)
                if a is None or r is None or b is None:
                    continue
                checked[RULES[0]] += 1
                if a > r + b:
                    violations.append(Violation(library, shape, RULES[0], size, a, r + b))
            barrier, small = value("barrier", 0), right("allreduce", 4)
            if barrier is not None and small is not None:
                checked[RULES[1]] += 1
                if barrier > small:
                    violations.append(Violation(library, shape, RULES[1], 0, barrier, small))
            for size in index.sizes(library, shape, "bcast"):
                if shape.ranks < 1 or size % shape.ranks:
                    continue
                part = size // shape.ranks
                b, s, g = value("bcast", size), right("scatter", part), right("allgather", part)
                if b is None or s is None or g is None or part == 0:
                    continue
                checked[RULES[2]] += 1
                if b > s + g:
                    violations.append(Violation(library, shape, RULES[2], size, b, s + g))
    return violations, checked


# ---- Sistare and Jackson, Table 2 --------------------------------------------

# Sistare and Jackson (2002), Table 2, "MPI collective bandwidth, MB/s": 16
# MPI processes on one Sun Fire node and across two, large messages; the
# paper's rows in its order: (on-node, off-node, ratio)
SEED_TABLE2 = OrderedDict((
    ("gather", (627.0, 626.0, 1.00)),
    ("gatherv", (718.0, 718.0, 1.00)),
    ("scatter", (738.0, 760.0, 1.03)),
    ("scatterv", (784.0, 810.0, 1.03)),
    ("bcast", (183.0, 182.0, 0.99)),
    ("allgather", (151.0, 156.0, 1.03)),
    ("allgatherv", (171.0, 179.0, 1.05)),
    ("alltoall", (280.0, 295.0, 1.05)),
    ("alltoallv", (325.0, 324.0, 1.00)),
    ("reduce", (41.0, 40.0, 0.98)),
    ("reduce_scatter", (41.0, 42.0, 1.02)),
    ("allreduce", (34.0, 33.0, 0.97)),
    ("scan", (87.0, 95.0, 1.09)),
))
SEED_TABLE2_CITE = ("Sistare and Jackson, 'Ultra-High Performance Communication with MPI and "
                    "the Sun Fire Link Interconnect' (2002), Table 2 (Sun MPI, 16 processes on "
                    "one node and across two nodes of Sun Fire Link, large messages; the "
                    "bandwidth is 'the throughput seen by the root process, or by any single "
                    "process in the case of MPI_Alltoall')")
# the bytes one call moves as the root (or any one rank) sees them, for
# @size bytes as mpi_coll counts it (IMB's size) and @ranks ranks
ROOTED_BLOCKS = ("gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv",
                 "alltoall", "alltoallv")


def call_bytes(test: str, size: int, ranks: int) -> int:
    """The bytes of the root's (any rank's for the all- forms) buffer of one
    call: the block times the ranks for the gathers, scatters and
    all-to-alls, the vector for Bcast and the reductions."""
    return size * ranks if test in ROOTED_BLOCKS else size


def table2_bandwidth(index: Index, library: str, test: str, on: Shape,
                     off: Shape) -> tuple:
    """(size, on-node MB/s, off-node MB/s) at the largest size @library
    measured @test at in both shapes; Nones when there is none."""
    common = sorted(set(index.sizes(library, on, test)) & set(index.sizes(library, off, test)))
    common = [size for size in common if size > 0]
    if not common:
        return None, None, None
    size = common[-1]
    out = [size]
    for shape in (on, off):
        median = index.median(library, shape, test, size)
        out.append(call_bytes(test, size, shape.ranks) / median if median else None)
    return tuple(out)


# ---- Fatoohi, Saini and Ciotti: IMB Barrier, Reduce, Alltoall -----------------

SEED_IMB_SIZES = (8, 1024, 1048576)
SEED_IMB_TESTS = ("barrier", "reduce", "alltoall")
SEED_IMB_CITE = ("Fatoohi, Saini and Ciotti, 'Interconnect Performance Evaluation of SGI Altix "
                 "3700 BX2, Cray X1, Cray Opteron Cluster, and Dell PowerEdge' (2006), section "
                 "3.2 and Figures 4-6: IMB Barrier, Reduce and Alltoall at 8 B, 1 KB and 1 MB "
                 "on four machines")
# the paper gives its values as plots only; its text states these figures
SEED_IMB_FACTS = (
    ("barrier", "on 64 processors the Altix 3700 BX2 (shared memory) runs MPI_Barrier more "
                "than 6x faster than the Dell PowerEdge (InfiniBand) and more than 13x faster "
                "than the Cray Opteron cluster (Myrinet)"),
    ("reduce", "on 32 processors at 1 MB the Cray X1 (SSP mode) runs MPI_Reduce 10x faster "
               "than the Altix 3700 BX2, 8.6x faster than the Dell PowerEdge and 20x faster "
               "than the Cray Opteron"),
    ("alltoall", "the Cray X1 leads, with a narrower gap to the Altix 3700 BX2 than for "
                 "MPI_Reduce, especially at 1 MB"),
)


# ---- figures -----------------------------------------------------------------

FIG16_TESTS = OrderedDict((("bcast", None), ("scatter", "6 3"), ("gather", "2 3"),
                           ("alltoall", "8 3 2 3")))


def figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """Fig. 16 of Qian et al. (2006): Bcast, Scatter, Gather and Alltoall time
    against size, one figure per shape, one colour per library, one dash per
    collective."""
    index = Index(records)
    colors = {lib: COLORS[i % len(COLORS)] for i, lib in enumerate(index.libraries)}
    out = []
    for shape in index.shapes:
        series = []
        for library in index.libraries:
            for test, dash in FIG16_TESTS.items():
                points = []
                for size in index.sizes(library, shape, test):
                    record = index.get(library, shape, test, size)
                    if size > 0 and record is not None:
                        points.append((float(size), float(record["median"]),
                                       results.is_settled(record)))
                if len(points) >= 2:
                    line = Series("%s %s" % (library, test), color=colors[library],
                                  dasharray=dash)
                    line.points = points
                    series.append(line)
        if not series:
            continue
        where = ("across two nodes: Postbox's virtual nodes (its tcp transport between "
                 "them), the other libraries through their network path on this host"
                 if shape.two_nodes else "on one node")
        out.append(Figure(
            "MPI collectives against size: %s (after Qian et al. 2006 Fig. 16)" % shape.label,
            "bench/mpi_coll.c, %d ranks %s: the median over the calls of the time per call "
            "(each call after the same barrier, averaged over the ranks) of MPI_Bcast (solid), "
            "MPI_Scatter (dashed), MPI_Gather (dotted) and MPI_Alltoall (dash-dot), one colour "
            "per library; sizes as IMB counts them (Scatter and Gather: the block of one rank; "
            "Alltoall: the block to each rank). Qian et al. show 16 and 64 processes of a Sun "
            "Fire cluster, on-node and off-node."
            % (shape.ranks, where),
            "message size (bytes)", "time per call (us)", series,
            name="coll-fig16-%d-%s" % (shape.ranks, "2nodes" if shape.two_nodes else "1node"),
            seed="000-fig-16",
            log=True, source=_source(description, shape)))
    return out


def _source(description: Optional[dict], shape: Shape) -> list:
    """The commands of the runs of @shape (machine.json's runs named
    coll/<label>/<shape>)."""
    name = "%d-ranks-%s" % (shape.ranks, "2-nodes" if shape.two_nodes else "1-node")
    out = []
    for run in (description or {}).get("runs") or []:
        if isinstance(run, dict) and str(run.get("name", "")).endswith("/" + name) \
                and str(run.get("name", "")).startswith("coll/") and run.get("command"):
            out.append(" ".join(str(part) for part in run["command"]))
    return out


# ---- the HTML section --------------------------------------------------------

def _cell(value: Optional[float], record: Optional[dict] = None, lower_bound: bool = False
          ) -> str:
    if value is None:
        return "<td>-</td>"
    grey = record is not None and not results.is_settled(record)
    text = (">= " if lower_bound else "") + format_value(value)
    return "<td%s>%s</td>" % (' class="unsettled-cell"' if grey else "", html.escape(text))


def _verdict_html(verdict: str) -> str:
    cls = {"pass": "ok", "FAIL": "fail"}.get(verdict, "")
    return '<span class="%s">%s</span>' % (cls, html.escape(verdict))


def grid_html(index: Index) -> list:
    esc = html.escape
    points = acceptance_grid(index)
    counted = [p for p in points if p.verdict != "missing"]
    passed = sum(1 for p in counted if p.verdict == "pass")
    failed = [p for p in counted if p.verdict == "FAIL"]
    out = ['<h3 id="coll-acceptance">Acceptance grid: Postbox against the best other library'
           '</h3>',
           "<p>Issue 14: at every point Postbox's median at most the best of the other "
           "libraries (%gx), and at most %gx the best for Barrier, Bcast, Reduce and "
           "Allreduce up to %d bytes on one node. Medians over the calls (us); across two "
           "nodes each library takes its own network path. A point compares the libraries "
           "in one probe state (the cache-line probe around each figure says whether the "
           "VM's cores were near, fast, or far apart, slow): the state in which Postbox and "
           "another library both have rounds and most rounds fell, each library's median "
           "over its rounds in that state (the rounds column: Postbox's, the best "
           "other's); every round when no state is shared. &gt;= marks a library that gave "
           "up (one call over its limit: that call is shown, a lower bound). A point "
           "that fails <em>within the spread</em> has Postbox's fastest round meeting the "
           "limit against the best other's slowest: the rounds overlap, and the medians' "
           "side of the limit is the run's movement. "
           "<strong>%d of %d points pass</strong>%s%s.</p>"
           % (LIMIT_ALL, LIMIT_SMALL, LIMIT_SMALL_BYTES, passed, len(counted),
              ", %d missing" % (len(points) - len(counted)) if len(points) > len(counted)
              else "",
              "; of the %d that fail, %d within the spread"
              % (len(failed), sum(1 for p in failed if p.within_spread)) if failed else ""),
           '<div class="wide"><table class="coll-grid"><tr><th class="text">shape</th>'
           '<th class="text">collective</th><th>size</th><th>postbox (us)</th>'
           '<th>best other (us)</th><th class="text">best other</th><th>ratio</th>'
           '<th>limit</th><th class="text">state</th><th>rounds</th>'
           '<th class="text">verdict</th></tr>']
    for p in points:
        best_record = (index.get(p.best_library, p.shape, p.test, p.size)
                       if p.best_library else None)
        own = index.get(POSTBOX, p.shape, p.test, p.size)
        out.append('<tr class="coll-point"><td class="text">%s</td><td class="text">%s</td>'
                   '<td>%s</td>%s%s<td class="text">%s</td><td>%s</td><td>%g</td>'
                   '<td class="text">%s</td><td>%d, %d</td><td class="text">%s</td></tr>'
                   % (esc(p.shape.label), esc(p.test), esc(format_size(p.size)),
                      _cell(p.postbox, own, p.postbox_gave_up),
                      _cell(p.best, best_record, bool(best_record and
                                                      best_record.get("gave_up"))),
                      esc(p.best_library or "-"),
                      "%.2f" % p.ratio if p.ratio is not None else "-", p.limit,
                      esc(p.state or "all"), p.rounds[0], p.rounds[1],
                      _verdict_html(p.verdict)
                      + (" (within the spread)" if p.within_spread else "")
                      + esc(below_floor(index, p))))
    out.append("</table></div>")
    return out


def below_floor(index: Index, p: GridPoint) -> str:
    """For a failing Barrier point whose limit (the limit times the best
    other's median) is below Postbox's floor_barrier of the same run (the
    median over its rounds), a note saying so; else ""."""
    if p.test != "barrier" or p.best is None or p.verdict != "FAIL":
        return ""
    floor = index.median(POSTBOX, p.shape, FLOOR_BARRIER, 0)
    if floor is None or p.limit * p.best >= floor:
        return ""
    return (" (the limit, %.2f us, is below the node's floor, a barrier of bare flags: "
            "%.2f us)" % (p.limit * p.best, floor))


def reference_html(index: Index) -> list:
    esc = html.escape
    rows = allreduce_ratios(index)
    if not rows:
        return []
    out = ['<h3 id="coll-allreduce-ref">4 MB Allreduce against memcpy + vector add</h3>',
           "<p>A 4 MB MPI_FLOAT MPI_SUM Allreduce (median per call) over one 4 MB memcpy plus "
           "one 4 MB float vector add (a[i] += b[i]), both timed by rank 0 in the same run "
           "while the other ranks slept. Issue 14's limit: at most %gx for Postbox at 2 ranks "
           "on one node.</p>" % ALLREDUCE_REF_LIMIT,
           '<table class="coll-ref"><tr><th class="text">library</th><th class="text">shape'
           '</th><th>Allreduce 4 MB (us)</th><th>memcpy 4 MB (us)</th>'
           '<th>vector add 4 MB (us)</th><th>ratio</th><th class="text">verdict</th></tr>']
    for row in rows:
        verdict = ""
        if row.library == POSTBOX and row.shape == Shape(False, 2):
            verdict = ("missing" if row.ratio is None else
                       "pass" if row.ratio <= ALLREDUCE_REF_LIMIT else "FAIL")
        out.append('<tr><td class="text">%s</td><td class="text">%s</td><td>%s</td><td>%s</td>'
                   '<td>%s</td><td>%s</td><td class="text">%s</td></tr>'
                   % (esc(row.library), esc(row.shape.label), esc(format_value(row.allreduce)),
                      esc(format_value(row.memcpy)), esc(format_value(row.vector_add)),
                      "%.2f" % row.ratio if row.ratio is not None else "-",
                      _verdict_html(verdict) if verdict else ""))
    out.append("</table>")
    return out


def table2_html(index: Index) -> list:
    esc = html.escape
    pairs = [(on, off) for on in index.shapes for off in index.shapes
             if not on.two_nodes and off.two_nodes and on.ranks == off.ranks]
    if not pairs:
        return []
    on, off = pairs[-1]
    head = ["operation", "paper on-node", "paper off-node", "paper ratio"]
    for library in index.libraries:
        head += ["%s on-node" % library, "%s 2 nodes" % library, "%s ratio" % library]
    out = ['<h3 id="coll-table2">MPI collective bandwidth, MB/s (after Sistare and Jackson '
           '2002, Table 2)</h3>',
           '<p class="cite">From the paper: %s. This machine: %d ranks on one node against %d '
           "ranks across two nodes (Postbox's virtual nodes; the other libraries on their "
           "network path), at the largest size measured in both shapes (hover: the size); "
           "the bytes of the root's buffer (any rank's for the all- forms: the block times "
           "the ranks for the gathers, scatters and all-to-alls, the vector for Bcast and "
           "the reductions) over the median time per call; MB = 10^6 bytes; ratio = "
           "off-node / on-node as in the paper.</p>"
           % (esc(SEED_TABLE2_CITE), on.ranks, off.ranks),
           '<div class="wide"><table class="paper-table coll-table2"><tr>%s</tr>'
           % "".join('<th%s>%s</th>' % (' class="text"' if i == 0 else "", esc(h))
                     for i, h in enumerate(head))]
    for test, (p_on, p_off, p_ratio) in SEED_TABLE2.items():
        cells = ['<td class="text">MPI_%s</td>' % esc(test.capitalize()),
                 "<td>%g</td>" % p_on, "<td>%g</td>" % p_off, "<td>%.2f</td>" % p_ratio]
        for library in index.libraries:
            size, bw_on, bw_off = table2_bandwidth(index, library, test, on, off)
            title = ' title="%s B"' % esc(format_size(size)) if size else ""
            for value in (bw_on, bw_off):
                cells.append("<td%s>%s</td>" % (title, esc(format_value(value))
                                                if value is not None else "-"))
            cells.append("<td>%s</td>" % ("%.2f" % (bw_off / bw_on) if bw_on and bw_off
                                          else "-"))
        out.append('<tr class="coll-table2-row">%s</tr>' % "".join(cells))
    out.append("</table></div>")
    return out


def imb_html(index: Index) -> list:
    esc = html.escape
    if not any(index.sizes(lib, shape, test) for lib in index.libraries
               for shape in index.shapes for test in SEED_IMB_TESTS):
        return []
    head = ["benchmark", "size"] + ["%s %s" % (lib, shape.label) for shape in index.shapes
                                    for lib in index.libraries]
    out = ['<h3 id="coll-imb">IMB Barrier, Reduce and Alltoall, t_avg (us) (after Fatoohi, '
           'Saini and Ciotti 2006, Figures 4-6)</h3>',
           '<p class="cite">From the paper: %s. It gives these values as plots only; what its '
           "text states: %s. This machine: IMB's t_avg (the mean over the ranks of each "
           "rank's mean time per call) of every library and shape.</p>"
           % (esc(SEED_IMB_CITE), esc("; ".join("%s: %s" % fact for fact in SEED_IMB_FACTS))),
           '<div class="wide"><table class="paper-table coll-imb"><tr>%s</tr>'
           % "".join('<th%s>%s</th>' % (' class="text"' if i == 0 else "", esc(h))
                     for i, h in enumerate(head))]
    for test in SEED_IMB_TESTS:
        for size in ((0,) if test == "barrier" else SEED_IMB_SIZES):
            cells = ['<td class="text">MPI_%s</td>' % esc(test.capitalize()),
                     "<td>%s</td>" % esc(format_size(size))]
            for shape in index.shapes:
                for library in index.libraries:
                    record = index.get(library, shape, test, size)
                    t_avg = number(record.get("t_avg")) if record else None
                    cells.append(_cell(t_avg, record, bool(record and record.get("gave_up"))))
            out.append("<tr>%s</tr>" % "".join(cells))
    out.append("</table></div>")
    return out


def nbc_html(index: Index) -> list:
    esc = html.escape
    rows = [record for key, record in index.by_key.items()
            if number(record.get("overlap")) is not None]
    if not rows:
        return []
    out = ['<h3 id="coll-nbc">Nonblocking collectives and their overlap (IMB-NBC)</h3>',
           "<p>t_pure: start and wait; t_ovrl: start, compute for about t_pure, wait; t_cpu: "
           "the computation alone; overlap = 100 max(0, min(1, (t_pure + t_cpu - t_ovrl) / "
           "min(t_pure, t_cpu))) %, each the mean over the ranks (us). A library without the "
           "nonblocking collectives (the build probe did not link) has no row.</p>",
           '<div class="wide"><table class="coll-nbc"><tr><th class="text">library</th>'
           '<th class="text">shape</th><th class="text">collective</th><th>size</th>'
           '<th>t_pure</th><th>t_ovrl</th><th>t_cpu</th><th>overlap %</th></tr>']
    for record in rows:
        out.append('<tr><td class="text">%s</td><td class="text">%s</td><td class="text">%s'
                   '</td><td>%s</td>%s%s%s%s</tr>'
                   % (esc(str(record.get("library"))), esc(shape_of(record).label),
                      esc(str(record.get("test"))),
                      esc(format_size(int(number(record.get("size")) or 0))),
                      _cell(number(record.get("t_avg")), record),
                      _cell(number(record.get("t_ovrl")), record),
                      _cell(number(record.get("t_cpu")), record),
                      _cell(number(record.get("overlap")), record)))
    out.append("</table></div>")
    return out


def consistency_html(index: Index) -> list:
    esc = html.escape
    violations, checked = consistency(index)
    out = ['<h3 id="coll-consistency">Self-consistency of each library</h3>',
           "<p>Traff, Gropp and Thakur's guidelines: a collective should be no slower than a "
           "mock-up of it from the library's own collectives. Medians per call; Bcast of m "
           "bytes against a Scatter and an Allgather of m / p bytes per rank (p ranks); a "
           "right-hand side that gave up (a lower bound) is not compared. "
           "Comparisons made: %s. <strong>%d violation(s)</strong>%s</p>"
           % (esc(", ".join("%s: %d" % item for item in checked.items())), len(violations),
              ":" if violations else ".")]
    if violations:
        out.append('<div class="wide"><table class="coll-violations"><tr>'
                   '<th class="text">library</th><th class="text">shape</th>'
                   '<th class="text">rule</th><th>m</th><th>left (us)</th><th>right (us)</th>'
                   '<th>left / right</th></tr>')
        for v in violations:
            out.append('<tr class="coll-violation"><td class="text">%s</td><td class="text">%s'
                       '</td><td class="text">%s</td><td>%s</td><td>%s</td><td>%s</td>'
                       '<td>%.2f</td></tr>'
                       % (esc(v.library), esc(v.shape.label), esc(v.rule),
                          esc(format_size(v.size)), esc(format_value(v.lhs)),
                          esc(format_value(v.rhs)), v.factor))
        out.append("</table></div>")
    return out


def section(records: Sequence[dict]) -> list:
    """The page's "Collectives" section; empty without coll records."""
    index = Index(records)
    if not index.libraries:
        return []
    out = ["<h2>Collectives</h2>",
           "<p>bench/mpi_coll.c (<code>coll.jsonl</code>): every library built with its own "
           "mpicc and run at the same shapes; libraries: %s; shapes: %s.</p>"
           % (html.escape(", ".join(index.libraries)),
              html.escape(", ".join(shape.label for shape in index.shapes)))]
    if POSTBOX in index.libraries and index.others():
        out += grid_html(index)
    out += reference_html(index)
    out += floor_html(index)
    out += table2_html(index)
    out += imb_html(index)
    out += nbc_html(index)
    out += consistency_html(index)
    return out
