"""The b_eff bench: bench/mpi_beff.c against every MPI library found.

Part ``mpi-beff`` of ``postbox bench`` (suite ``beff``).  bench/mpi_beff.c
is written to the standard MPI C API only; like mpi_coll it is built with
each library's own ``mpicc`` (with bench/mpi_common.c and bench/engine.c)
into ``build/mpibench/<label>/mpi_beff``, then run through that library's
launcher into ``beff.jsonl``/``beff.txt`` of the results folder.  The same
program makes the dense part (densebench, ``--tests dense``).

What it measures (see bench/mpi_beff.c): b_eff of Rabenseifner and Koniges
as b_eff.c 3.6 defines it (6 ring and 30 random patterns, 21 message sizes
up to Lmax, the maximum over the methods Sendrecv, Alltoallv and
Irecv/Isend/Waitall, logarithmic averages), the one ping-pong pair's latency
and bandwidth at Lmax, and the ping-pong bandwidth of rank 0 with rank d for
each distance d (Fatoohi, Saini and Ciotti 2006: Table 1, Figs. 1-3).  The
averages are computed here from the per-pattern records (beff_summary).

Shapes (CONFIGS): 4 ranks on one node, 4 ranks across two nodes (each
library's network path, as the other MPI parts: Postbox two virtual nodes
of ``postbox run --nodes 2``, Open MPI and MPICH their TCP stack on this
host), and Postbox across four virtual nodes (the quick profile: distance
only); the full profile adds 8 ranks in each.  Lmax: the quick profile 256 KiB (LMAX_QUICK; the seed's runs used
1 MB, the reference memory per process / 128), the full profile memory per
process / 128 (the machine's memory over the ranks of the run) up to
LMAX_CAP.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence, TextIO

from postbox import machine, mpibench, mpipart

PROGRAM = "mpi_beff"
SOURCES = ("bench/mpi_beff.c", "bench/mpi_common.c", "bench/engine.c")
RESULTS_NAME = "beff"  # beff.jsonl, beff.txt
SUITE = "beff"
TESTS = "beff,distance"
DONE_MARKER = "# mpi_beff: done, status"
# one run of one library in one shape, {quick: s}: a guard against a hang
RUN_TIMEOUT = {True: 120.0, False: 1800.0}

# b_eff's definition (b_eff.c 3.6): 21 sizes, 2^0 .. 2^12 then 8 steps to Lmax
NSIZES = 21
POW2_SIZES = 13
NRINGS = 6
NRANDOM = 30
LMAX_LEAST = 4096
LMAX_QUICK = 256 << 10
LMAX_CAP = 4 << 20
METHODS = ("sendrecv", "alltoallv", "nonblocking")


# ---- the definition ---------------------------------------------------------

def message_sizes(lmax: int) -> list:
    """b_eff's 21 message sizes for @lmax: 1, 2, 4 .. 4096, then 4096 * a^k
    for k = 1..8 rounded to whole bytes, a = (lmax / 4096)^(1/8), the last
    exactly @lmax.  ValueError below 4096."""
    if lmax < LMAX_LEAST:
        raise ValueError("Lmax %d is below %d bytes" % (lmax, LMAX_LEAST))
    sizes = [1 << i for i in range(POW2_SIZES)]
    factor = (lmax / 4096.0) ** (1.0 / (NSIZES - POW2_SIZES))
    length = 4096.0
    for _ in range(NSIZES - POW2_SIZES):
        length *= factor
        sizes.append(int(length + 0.5))
    sizes[-1] = lmax
    return sizes


def lmax_for(memory_per_process: float, quick: bool = False) -> int:
    """Lmax: memory per process / 128 (b_eff.c), kept within [4096,
    LMAX_CAP]; LMAX_QUICK in the quick profile."""
    if quick:
        return LMAX_QUICK
    return int(max(LMAX_LEAST, min(LMAX_CAP, memory_per_process / 128.0)))


class SplitMix64:
    """The random stream of bench/mpi_beff.c (splitmix64)."""

    MASK = (1 << 64) - 1

    def __init__(self, seed: int):
        self.state = seed & self.MASK

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def permutation(self, n: int) -> list:
        """b_eff.c's construction: for i = 0..n-1, slot floor(u * n) (moved
        on to the next free one) gets i."""
        perm = [-1] * n
        for i in range(n):
            j = int(((self.next() >> 11) * 2.0 ** -53) * n)
            while perm[j] != -1:
                j = (j + 1) % n
            perm[j] = i
        return perm


def random_orders(seed: int, ranks: int, count: int = NRANDOM) -> list:
    """The @count random patterns' rank orders of a run with @seed."""
    stream = SplitMix64(seed)
    return [stream.permutation(ranks) for _ in range(count)]


def logavg(values: Iterable[float], weights: Optional[Iterable[float]] = None) -> float:
    """exp(sum w ln x / sum w): the logarithmic average (weights default 1);
    ValueError on an empty list or a value <= 0."""
    values = list(values)
    weights = [1.0] * len(values) if weights is None else list(weights)
    if not values or sum(weights) <= 0:
        raise ValueError("logavg of nothing")
    if any(v <= 0 for v in values):
        raise ValueError("logavg of a value <= 0")
    return math.exp(sum(w * math.log(v) for v, w in zip(values, weights)) / sum(weights))


def best_method(record: dict) -> float:
    """The maximum over the methods of one pattern-and-size record."""
    values = [record.get(m) for m in METHODS]
    return max(float(v) for v in values if isinstance(v, (int, float)))


@dataclass
class PatternRow:
    """One distinct pattern of a run: its mean over the sizes and its value
    at Lmax (the maximum over the methods), the method best at Lmax, and
    how many of the rings and random patterns it stands for."""

    name: str
    rings: int
    randoms: int
    mean: float
    at_lmax: float
    best_at_lmax: str
    order: Optional[str] = None


def pattern_rows(records: Sequence[dict]) -> list:
    """The PatternRow of every distinct pattern of one run's records with
    all 21 sizes, in order of appearance."""
    patterns: dict = {}
    for record in records:
        if record.get("test") == "beff_pattern":
            patterns.setdefault(record.get("pattern"), []).append(record)
    out = []
    for name, members in patterns.items():
        lmax = int(members[0].get("lmax") or max(int(r["size"]) for r in members))
        by_size = {int(r["size"]): r for r in members}
        wanted = message_sizes(lmax)
        if sorted(by_size) != sorted(set(wanted)):
            continue
        last = by_size[lmax]
        best = max(METHODS, key=lambda m: float(last.get(m) or 0.0))
        out.append(PatternRow(str(name), int(members[0].get("rings") or 0),
                              int(members[0].get("randoms") or 0),
                              sum(best_method(by_size[s]) for s in wanted) / NSIZES,
                              best_method(last), best, members[0].get("order")))
    return out


@dataclass
class Summary:
    """Seed 002 Table 1's columns for one run (MB/s, us)."""

    ranks: int
    b_eff: float
    at_lmax: float  # rings & random
    rings_at_lmax: float  # rings only
    lmax: int
    pingpong_bandwidth: Optional[float] = None
    pingpong_latency: Optional[float] = None
    patterns: int = 0  # distinct patterns measured

    @property
    def per_process(self) -> float:
        return self.b_eff / self.ranks

    @property
    def at_lmax_per_process(self) -> float:
        return self.at_lmax / self.ranks

    @property
    def rings_at_lmax_per_process(self) -> float:
        return self.rings_at_lmax / self.ranks


def beff_summary(records: Sequence[dict]) -> Optional[Summary]:
    """b_eff from the beff_pattern records of one run (and its ping-pong
    pair): per pattern the sizes' arithmetic mean of the maximum over the
    methods, the logarithmic average over the 6 rings and over the random
    patterns (each distinct pattern weighted by how many it stands for),
    then of the two.  None unless every distinct pattern has all 21 sizes."""
    names = {r.get("pattern") for r in records if r.get("test") == "beff_pattern"}
    rows = pattern_rows(records)
    if not rows or len(rows) != len(names) or any(r.mean <= 0 or r.at_lmax <= 0 for r in rows):
        return None
    rings = [r for r in rows if r.rings > 0]
    randoms = [r for r in rows if r.randoms > 0]
    if not rings or not randoms:
        return None
    ring_mean = logavg([r.mean for r in rings], [r.rings for r in rings])
    ring_lmax = logavg([r.at_lmax for r in rings], [r.rings for r in rings])
    random_mean = logavg([r.mean for r in randoms], [r.randoms for r in randoms])
    random_lmax = logavg([r.at_lmax for r in randoms], [r.randoms for r in randoms])
    ping = {r["test"]: r.get("median") for r in records
            if r.get("test") in ("pingpong_bandwidth", "pingpong_latency")}
    first = next(r for r in records if r.get("test") == "beff_pattern")
    return Summary(int(first.get("ranks") or 0), logavg([ring_mean, random_mean]),
                   logavg([ring_lmax, random_lmax]), ring_lmax, int(first.get("lmax") or 0),
                   ping.get("pingpong_bandwidth"), ping.get("pingpong_latency"), len(rows))


# ---- shapes and runs --------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """A job shape: @ranks ranks on @nodes nodes (1: on one node; more: each
    library's network path, @nodes virtual nodes for Postbox)."""

    ranks: int
    nodes: int = 1
    tests: Optional[str] = None  # --tests of this shape (None: the part's)

    @property
    def name(self) -> str:
        return "%d-ranks-%d-node%s" % (self.ranks, self.nodes, "s" if self.nodes > 1 else "")

    @property
    def path(self) -> str:
        return "network" if self.nodes > 1 else "on-node"

    def runs_with(self, lib: mpibench.Library) -> bool:
        """Whether @lib runs in this shape: more than two nodes are Postbox's
        virtual nodes only; a family without a network path runs on one."""
        if self.nodes == 1:
            return True
        if lib.family not in mpibench.NETWORK_PATHS:
            return False
        return self.nodes == 2 or lib.family == "postbox"


# the quick profile measures distance only on Postbox's four virtual nodes
CONFIGS = {True: (Config(4), Config(4, 2), Config(4, 4, "distance")),
           False: (Config(4), Config(4, 2), Config(4, 4), Config(8), Config(8, 2),
                   Config(8, 4))}


def build_command(lib: mpibench.Library, root: Optional[Path] = None) -> list[str]:
    return mpibench.build_command(lib, root, PROGRAM, SOURCES)


def up_to_date(lib: mpibench.Library, root: Optional[Path] = None) -> bool:
    """Whether build/mpibench/<label>/mpi_beff is newer than its sources."""
    from postbox import paths

    root = root or paths.repo_root()
    program = mpibench.build_dir(lib) / PROGRAM
    try:
        built = program.stat().st_mtime
        return all((root / source).stat().st_mtime <= built
                   for source in SOURCES + ("bench/mpi_common.h", "bench/engine.h"))
    except OSError:
        return False


def ensure_built(lib: mpibench.Library) -> tuple[bool, str]:
    """Compile mpi_beff with @lib's mpicc unless up to date (the beff and
    dense parts share it); (ok, message), the compiler's output in
    build/mpibench/<label>/beff-build.log."""
    if up_to_date(lib):
        return True, "up to date"
    return mpibench.build(lib, PROGRAM, SOURCES, log_name="beff-build.log")


def _with_nodes(argv: list, nodes: int) -> list:
    """@argv with every "--nodes 2" made "--nodes @nodes"."""
    out = list(argv)
    for i in range(len(out) - 1):
        if out[i] == "--nodes":
            out[i + 1] = str(nodes)
    return out


def run_command(lib: mpibench.Library, config: Config, jsonl: Path, quick: bool,
                tests: str = TESTS, extra: Sequence[str] = (), is_root: Optional[bool] = None,
                lmax: Optional[int] = None) -> list[str]:
    """argv of one run of mpi_beff: @lib in the shape @config, --tests @tests."""
    if is_root is None:
        is_root = mpibench.is_root_user()
    launch = lib.launch_args(is_root, config.path)
    args = mpibench.program_args(lib, config.path)
    if config.nodes > 2:
        launch, args = _with_nodes(launch, config.nodes), _with_nodes(args, config.nodes)
        args = [("Postbox: postbox run --nodes %d (%d virtual nodes, RSM tcp)"
                 % (config.nodes, config.nodes)) if i > 0 and args[i - 1] == "--path-how"
                else arg for i, arg in enumerate(args)]
    return mpipart.program_argv(lib, launch, config.ranks, PROGRAM, args + ["--tests", tests],
                                jsonl, quick, extra, [] if lmax is None else ["--lmax", str(lmax)])


@dataclass
class Run:
    lib: mpibench.Library
    config: Config

    def name(self, results_name: str = RESULTS_NAME) -> str:
        """Its name in machine.json's runs: beff/<label>/<shape>."""
        return "%s/%s/%s" % (results_name, self.lib.label, self.config.name)


def plan_runs(libraries: Sequence[mpibench.Library], quick: bool,
              configs: Optional[Sequence[Config]] = None) -> list[Run]:
    """Shape by shape, the libraries interleaved."""
    return [Run(lib, config) for config in (configs or CONFIGS[quick]) for lib in libraries
            if config.runs_with(lib)]


@dataclass
class Outcome(mpipart.Outcome):
    """What run_libraries did."""

    seconds: float = 0.0


def memory_per_process(ranks: int) -> float:
    """The machine's memory over @ranks (b_eff's memory per process)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / max(1, ranks)
    except (ValueError, OSError):
        return 128.0 * (1 << 20)


def run_suite(out: Path, quick: bool, chosen: Sequence[mpibench.Library], extra: Sequence[str],
              description: dict, terminal: TextIO, err: TextIO, started: Optional[float],
              configs: Optional[Sequence[Config]], tests: str, results_name: str,
              what: str) -> Outcome:
    """Build mpi_beff with each of @chosen (unless up to date) and run it with
    --tests @tests in every shape into @out/@results_name.jsonl; record it
    in @description (machine.json: <results_name>_libraries, runs)."""
    import time

    begin = time.monotonic()
    jsonl, text = out / (results_name + ".jsonl"), out / (results_name + ".txt")
    is_root = mpibench.is_root_user()
    description.setdefault("runs", [])
    key = "%s_libraries" % results_name
    description.setdefault(key, [])
    outcome = Outcome()
    ready = []
    for lib in chosen:
        if up_to_date(lib):
            print("postbox bench: %s of %s (%s) is up to date%s"
                  % (PROGRAM, lib.label, lib.origin, mpibench.elapsed(started)),
                  file=terminal, flush=True)
        else:
            mpipart.announce_build(PROGRAM, lib, started, terminal)
        ok, message = ensure_built(lib)
        description[key].append(dict(lib.describe(), build_command=build_command(lib),
                                     built=ok, header_version=lib.version))
        mpipart.take_build(lib, ok, message, ready, outcome, err)
    machine.write(out / "machine.json", description)

    def step(run: Run) -> mpipart.Step:
        lmax = lmax_for(memory_per_process(run.config.ranks), quick)
        return mpipart.Step(
            run.name(results_name),
            run_command(run.lib, run.config, jsonl, quick, run.config.tests or tests, extra,
                        is_root, lmax),
            run.lib.run_env(is_root, run.config.path), run.config.path, run.config.ranks,
            "%s %s (%s)" % (run.lib.label, run.config.name,
                            "network path" if run.config.nodes > 1 else "on-node"),
            "%s %s" % (run.lib.label, run.config.name))

    mpipart.run_plan(plan_runs(ready, quick, configs), step, what, out, text, description,
                     outcome, terminal, err, started, RUN_TIMEOUT[quick], DONE_MARKER)
    outcome.seconds = time.monotonic() - begin
    print("postbox bench: %s took %.1f s (%d runs)" % (what, outcome.seconds, outcome.runs),
          file=terminal, flush=True)
    return outcome


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None,
                  configs: Optional[Sequence[Config]] = None) -> Outcome:
    """The b_eff part: mpi_beff --tests beff,distance in every shape into
    @out/beff.jsonl."""
    return run_suite(out, quick, chosen, extra, description, terminal, err, started, configs,
                     TESTS, RESULTS_NAME, "beff")


def runs_of(records: Iterable[dict], suite: str = SUITE) -> dict:
    """The records of @suite by run: (library, ranks, nodes, path, round) ->
    records."""
    out: dict = {}
    for record in records:
        if record.get("suite") != suite:
            continue
        key = (record.get("library"), record.get("ranks"), record.get("nodes"),
               record.get("path"), record.get("round"))
        out.setdefault(key, []).append(record)
    return out


def summary_text(records: Sequence[dict]) -> str:
    """"b_eff: postbox 4 ranks 1 node 812 MB/s, ..." of @records."""
    parts = []
    for (library, ranks, nodes, path, _), members in runs_of(records).items():
        summary = beff_summary(members)
        if summary is not None:
            where = "one node" if path == "on-node" else "%d nodes" % max(2, int(nodes or 1))
            parts.append("%s %s ranks %s %.0f MB/s" % (library, ranks, where, summary.b_eff))
    return "b_eff: " + ", ".join(parts) if parts else ""


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple[str, str]:
    """(verdict, detail) of the part from @outcome (and the b_eff values
    from @jsonl)."""
    parts = outcome.built_parts() + outcome.trouble_parts()
    text = mpipart.records_summary(jsonl, summary_text)
    if text:
        parts.append(text)
    return outcome.verdict(), "; ".join(parts)


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[mpibench.Library]] = None,
        configs: Optional[Sequence[Config]] = None) -> int:
    """The b_eff part alone, then the report; returns its exit status."""
    return mpipart.run_part_alone("mpi-beff", run_libraries, detail, RESULTS_NAME, out, quick,
                                  libraries, terminal, found, extra, configs=configs)
