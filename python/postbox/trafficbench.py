"""The traffic bench: bench/mpi_traffic.c against every MPI library found.

Part ``mpi-traffic`` of ``postbox bench`` (suite ``traffic``).
bench/mpi_traffic.c is written to the standard MPI C API only; like mpi_coll
it is built by this module with each library's own ``mpicc`` (with
bench/mpi_common.c, bench/engine.c) into
``build/mpibench/<label>/mpi_traffic``, then run through that library's
launcher into ``traffic.jsonl``/``traffic.txt`` of the results folder.

It measures seed 000's Figs. 14 and 15 (Qian et al., §V-E and §VI-E):
uniform random traffic (accepted bandwidth against offered, message sizes
and gaps uniform or exponential) and the eight permutations (baseline,
butterfly and cube single- and multi-stage, bit reversal, complement,
matrix transpose, neighbor, perfect shuffle).  The permutations' definitions
for every rank count are in bench/mpi_traffic.c's header comment; this
module computes the same tables (destinations) and the same seeded
generator (Generator) so the tests can hold the two against each other.

The job shapes (CONFIGS): 2 and 4 ranks on one node, 4 ranks across two
virtual nodes and across four (Postbox's ``postbox run --nodes K``; Open
MPI and MPICH take their network path, mpibench.NETWORK_PATHS, which has
no notion of nodes, so they run the two-node shape only); the full profile
adds 8 ranks in each of these and 2 ranks across two nodes.  The quick
profile keeps to about 30 s for all libraries: 20 ms windows, one window
per point, uniform traffic at loads 0.5 and 1 of saturation, the
permutations at saturation only, no 8-rank shapes.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, mpibench, mpipart, paths

PROGRAM = "mpi_traffic"
SOURCES = ("bench/mpi_traffic.c", "bench/mpi_common.c", "bench/engine.c")
RESULTS_NAME = "traffic"  # traffic.jsonl, traffic.txt
SUITE = "traffic"
DONE_MARKER = "# mpi_traffic: done, status"
# one run of one library in one shape, {quick: s}: a guard against a hang
RUN_TIMEOUT = {True: 120.0, False: 900.0}
# the quick profile's budget for the whole part (issue 18), printed beside
# the time it took
QUICK_BUDGET_S = 30.0
# options of every quick run (beside --quick): short windows
QUICK_ARGS = ("--window-ms", "20")

UNIFORM = "uniform"
# seed 000's permutations, in the order of its list (§V-E); *_single: the
# highest stage, *_multi: every stage composed
PERMUTATIONS = ("baseline_single", "baseline_multi", "bit_reversal", "butterfly_single",
                "butterfly_multi", "complement", "cube_single", "cube_multi",
                "matrix_transpose", "neighbor", "perfect_shuffle")
PATTERNS = (UNIFORM,) + PERMUTATIONS
# the permutations defined on the binary digits of the rank only: P = 2^n
DIGIT_PERMUTATIONS = ("baseline_single", "baseline_multi", "bit_reversal", "butterfly_single",
                      "butterfly_multi", "cube_single", "cube_multi")


# ---- the permutations (the same definitions as bench/mpi_traffic.c) -------------------

def digits(ranks: int) -> Optional[int]:
    """n when @ranks = 2^n with n >= 1, else None."""
    if ranks >= 2 and ranks & (ranks - 1) == 0:
        return ranks.bit_length() - 1
    return None


def baseline_stage(x: int, i: int) -> int:
    """Baseline stage i: the low i+1 binary digits rotate right by one."""
    mask = (2 << i) - 1
    return (x & ~mask) | ((x & mask) >> 1) | ((x & 1) << i)


def butterfly_stage(x: int, i: int) -> int:
    """Butterfly stage i: digits i and 0 swap."""
    low, high = x & 1, (x >> i) & 1
    return (x & ~(1 | (1 << i))) | (low << i) | high


def cube_stage(x: int, i: int) -> int:
    """Cube stage i: digit i complemented."""
    return x ^ (1 << i)


STAGES = {"baseline": baseline_stage, "butterfly": butterfly_stage, "cube": cube_stage}


def _raw_destination(pattern: str, rank: int, ranks: int) -> Optional[int]:
    """Where @rank sends under @pattern at @ranks ranks (itself: nowhere), or
    None where @pattern is not defined."""
    if pattern == "complement":
        return ranks - 1 - rank
    if pattern == "neighbor":
        return rank ^ 1 if rank ^ 1 < ranks else rank
    if pattern == "perfect_shuffle":
        half = (ranks + 1) // 2
        return 2 * rank if rank < half else 2 * (rank - half) + 1
    if pattern == "matrix_transpose":
        cols = max(c for c in range(1, math.isqrt(ranks) + 1) if ranks % c == 0)
        return (rank % cols) * (ranks // cols) + rank // cols
    n = digits(ranks)
    if n is None or pattern not in DIGIT_PERMUTATIONS:
        return None
    if pattern == "bit_reversal":
        return int(format(rank, "0%db" % n)[::-1], 2)
    family, stages = pattern.rsplit("_", 1)
    stage = STAGES[family]
    if stages == "single":
        return stage(rank, n - 1)
    for i in range(n):
        rank = stage(rank, i)
    return rank


def destinations(pattern: str, ranks: int) -> Optional[list]:
    """The destination of each rank 0..@ranks-1 under permutation @pattern
    (a rank's own number: it sends nothing), or None when @pattern is not
    applicable at @ranks ranks (not defined there, or every rank maps to
    itself).  ValueError for an unknown pattern."""
    if pattern not in PERMUTATIONS:
        raise ValueError("unknown permutation %r; the permutations are %s"
                         % (pattern, ", ".join(PERMUTATIONS)))
    if ranks < 2:
        return None
    table = [_raw_destination(pattern, rank, ranks) for rank in range(ranks)]
    if any(d is None for d in table) or all(d == r for r, d in enumerate(table)):
        return None
    return table


def parse_permutation_table(text: str) -> dict:
    """(pattern, ranks) -> destinations or None (n/a) from the output of
    ``mpi_traffic --print-permutations``; ValueError on a malformed line."""
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        try:
            pattern, ranks = words[0], int(words[1])
            table = None if words[2:] == ["n/a"] else [int(w) for w in words[2:]]
        except (IndexError, ValueError):
            raise ValueError("line %d: not 'pattern ranks destinations...': %r" % (number, line))
        if table is not None and len(table) != ranks:
            raise ValueError("line %d: %d destinations for %d ranks" % (number, len(table), ranks))
        out[(pattern, ranks)] = table
    return out


# ---- the generator (the same as bench/mpi_traffic.c) ----------------------------------

MASK64 = (1 << 64) - 1
EXP_CAP = 16  # exponential sizes are kept within [1, EXP_CAP x the mean]


class Generator:
    """A rank's stream of messages: splitmix64 started from the seed and
    the rank, as mpi_traffic's rng_seed/rng_next."""

    def __init__(self, seed: int, rank: int):
        self.state = (seed + 0x632BE59BD9B4E019 * (rank + 1)) & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def unit(self) -> float:
        """Uniform in [0, 1), 53 bits."""
        return (self.next() >> 11) * 2.0 ** -53

    def draw(self, rank: int, ranks: int, mean_size: float, mean_gap: float,
             size_dist: str = "uniform", time_dist: str = "uniform",
             fixed: Optional[int] = None) -> tuple:
        """One message of @rank: (destination, size in bytes, gap in ns)."""
        if fixed is not None:
            dest = fixed
        else:
            dest = int(self.unit() * (ranks - 1))
            dest += dest >= rank
        u = self.unit()
        if size_dist == "uniform":
            size = 1 + int(u * (2.0 * mean_size - 1.0))
        else:
            raw = _round_half_away(-mean_size * math.log(1.0 - u))
            size = int(min(max(raw, 1.0), EXP_CAP * mean_size))
        u = self.unit()
        gap = u * 2.0 * mean_gap if time_dist == "uniform" else -mean_gap * math.log(1.0 - u)
        return dest, size, gap


def _round_half_away(x: float) -> float:
    """C's llround: halves away from zero."""
    return float(math.floor(x + 0.5)) if x >= 0 else -float(math.floor(-x + 0.5))


def parse_samples(text: str) -> list:
    """(dest, size, gap_ns) of each line of ``mpi_traffic --print-samples``."""
    out = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            dest, size, gap = line.split()
            out.append((int(dest), int(size), float(gap)))
    return out


# ---- job shapes ------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """A job shape: @ranks ranks on one node (@nodes 1) or across @nodes
    virtual nodes (Postbox; the others on their network path)."""

    ranks: int
    nodes: int = 1

    @property
    def name(self) -> str:
        return "%d-ranks-%d-node%s" % (self.ranks, self.nodes, "" if self.nodes == 1 else "s")

    @property
    def path(self) -> str:
        return "on-node" if self.nodes == 1 else "network"

    def runs_with(self, lib: mpibench.Library) -> bool:
        """Whether @lib runs this shape: every library on one node; across
        nodes only a family with a network path, and more than two nodes
        only Postbox (the others' network path has no nodes)."""
        if self.nodes == 1:
            return True
        if lib.family not in mpibench.NETWORK_PATHS:
            return False
        return self.nodes == 2 or lib.family == "postbox"


CONFIGS = {True: (Config(2), Config(4), Config(4, 2), Config(4, 4)),
           False: (Config(2), Config(4), Config(8), Config(2, 2), Config(4, 2), Config(4, 4),
                   Config(8, 2), Config(8, 4))}


def build_command(lib: mpibench.Library, root: Optional[Path] = None) -> list:
    return mpibench.build_command(lib, root, PROGRAM, SOURCES)


BUILD_LOG = "traffic-build.log"
BUILD_JOBS = 2  # libraries built at once


def up_to_date(lib: mpibench.Library, root: Optional[Path] = None) -> bool:
    """Whether build/mpibench/<label>/mpi_traffic is newer than its sources
    and @lib's mpicc and was built by the same command (the first line of
    its build log)."""
    root = root or paths.repo_root()
    binary, log = mpibench.build_dir(lib) / PROGRAM, mpibench.build_dir(lib) / BUILD_LOG
    try:
        built = binary.stat().st_mtime
        first = log.read_text(encoding="utf-8").splitlines()[0]
        inputs = [(root / source).stat().st_mtime for source in SOURCES + ("bench/engine.h",
                                                                          "bench/mpi_common.h")]
        inputs.append(Path(lib.mpicc).stat().st_mtime)
    except (OSError, IndexError):
        return False
    return built > max(inputs) and first == shlex.join(build_command(lib, root))


def build(lib: mpibench.Library) -> tuple:
    """Compile mpi_traffic with @lib's mpicc unless up_to_date; (ok,
    message); the compiler's output goes to
    build/mpibench/<label>/traffic-build.log."""
    if up_to_date(lib):
        return True, "up to date: %s" % (mpibench.build_dir(lib) / PROGRAM)
    return mpibench.build(lib, PROGRAM, SOURCES, log_name=BUILD_LOG)


def run_command(lib: mpibench.Library, config: Config, jsonl: Path, quick: bool,
                extra: Sequence[str] = (), is_root: Optional[bool] = None) -> list:
    """argv of one run of mpi_traffic: @lib in the shape @config."""
    if is_root is None:
        is_root = mpibench.is_root_user()
    postbox_nodes = lib.family == "postbox" and config.nodes > 1
    launch = lib.launch_args(is_root, "on-node" if postbox_nodes else config.path)
    if postbox_nodes:
        launch += ["--nodes", str(config.nodes)]
    args = mpibench.program_args(lib, config.path)
    if postbox_nodes:
        # the records say how many virtual nodes (program_args says two)
        args += ["--nodes", str(config.nodes), "--path-how",
                 "Postbox: postbox run --nodes %d (virtual nodes, RSM tcp)" % config.nodes]
    return mpipart.program_argv(lib, launch, config.ranks, PROGRAM, args, jsonl, quick,
                                (list(QUICK_ARGS) if quick else []) + list(extra))


@dataclass
class Run:
    lib: mpibench.Library
    config: Config

    @property
    def name(self) -> str:
        """Its name in machine.json's runs: traffic/<label>/<shape>."""
        return "traffic/%s/%s" % (self.lib.label, self.config.name)


def plan_runs(libraries: Sequence[mpibench.Library], quick: bool,
              configs: Optional[Sequence[Config]] = None) -> list:
    """Shape by shape, the libraries interleaved."""
    return [Run(lib, config) for config in (configs or CONFIGS[quick]) for lib in libraries
            if config.runs_with(lib)]


@dataclass
class Outcome(mpipart.Outcome):
    """What run_libraries did."""

    seconds: float = 0.0                         # the whole part
    quick: bool = False


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None,
                  configs: Optional[Sequence[Config]] = None) -> Outcome:
    """Build mpi_traffic with each of @chosen and run it in every shape into
    @out/traffic.jsonl; record everything in @description (machine.json:
    traffic_libraries, runs)."""
    begin = time.monotonic()
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = mpibench.is_root_user()
    description.setdefault("runs", [])
    description.setdefault("traffic_libraries", [])
    outcome = Outcome(quick=quick)
    ready = []
    for lib in chosen:
        mpipart.announce_build(PROGRAM, lib, started, terminal)
    # two compilers at a time: the builds are most of the quick profile's
    # time on a fresh tree
    with concurrent.futures.ThreadPoolExecutor(max_workers=BUILD_JOBS) as pool:
        built = list(pool.map(build, chosen))
    for lib, (ok, message) in zip(chosen, built):
        if message.startswith("up to date"):
            print("postbox bench: %s" % message, file=terminal, flush=True)
        description["traffic_libraries"].append(dict(
            lib.describe(), build_command=build_command(lib), built=ok,
            header_version=lib.version))
        mpipart.take_build(lib, ok, message, ready, outcome, err)
    machine.write(out / "machine.json", description)

    cores = machine.cpus_allowed() or os.cpu_count() or 1

    def step(run: Run) -> mpipart.Step:
        return mpipart.Step(
            run.name, run_command(run.lib, run.config, jsonl, quick, extra, is_root),
            run.lib.run_env(is_root, run.config.path), run.config.path, run.config.ranks,
            "%s %s (%d ranks%s, %s)"
            % (run.lib.label, run.config.name, run.config.ranks,
               ", oversubscribed" if run.config.ranks > cores else "",
               "on-node" if run.config.nodes == 1 else "network path"),
            "%s %s" % (run.lib.label, run.config.name))

    mpipart.run_plan(plan_runs(ready, quick, configs), step, "traffic", out, text, description,
                     outcome, terminal, err, started, RUN_TIMEOUT[quick], DONE_MARKER)
    outcome.seconds = time.monotonic() - begin
    print("postbox bench: mpi-traffic took %.1f s (%d runs%s)"
          % (outcome.seconds, outcome.runs,
             "; the quick profile's budget is %.0f s" % QUICK_BUDGET_S if quick else ""),
          file=terminal, flush=True)
    description["traffic_seconds"] = round(outcome.seconds, 3)
    machine.write(out / "machine.json", description)
    return outcome


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple:
    """(verdict, detail) of the mpi-traffic part from @outcome (and the
    saturation summary from @jsonl)."""
    from postbox import trafficreport

    parts = outcome.built_parts() + outcome.trouble_parts()
    if outcome.runs:
        parts.append("%.1f s%s" % (outcome.seconds, " (budget %.0f s)" % QUICK_BUDGET_S
                                   if outcome.quick else ""))
    summary = mpipart.records_summary(jsonl, trafficreport.summary)
    if summary:
        parts.append(summary)
    return outcome.verdict(), "; ".join(parts)


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[mpibench.Library]] = None,
        configs: Optional[Sequence[Config]] = None) -> int:
    """The traffic bench alone, then the report; returns its exit status."""
    return mpipart.run_part_alone("mpi-traffic", run_libraries, detail, RESULTS_NAME, out, quick,
                                  libraries, terminal, found, extra, configs=configs)
