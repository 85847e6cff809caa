"""The collective bench: bench/mpi_coll.c against every MPI library found.

Part ``mpi-coll`` of ``postbox bench`` (and ``postbox bench --coll`` alone).
bench/mpi_coll.c is written to the standard MPI C API only; like mpi_p2p it
is built by this module with each library's own ``mpicc`` (with
bench/mpi_common.c, bench/engine.c) into ``build/mpibench/<label>/mpi_coll``, then run through
that library's launcher into ``coll.jsonl``/``coll.txt`` of the results
folder.  The libraries are those of mpibench.discover (Postbox's own, the
system's MPICH and Open MPI, the wheels of build/mpi/<name>).

Whether a library has the nonblocking collectives is tried, not assumed:
before building, a small program calling each of them is compiled and
linked with the library's mpicc (``nbc_probe.c`` beside the program); only
when that links is mpi_coll built with ``-DHAVE_NBC``.

The job shapes (CONFIGS): 2 and 4 ranks on one node, and 4 ranks "across
two nodes", where each library takes its own network path as the p2p bench
forces it (mpibench.NETWORK_PATHS): Postbox two virtual nodes of
``postbox run --nodes 2`` (ranks 0-1 on one, 2-3 on the other, its RSM tcp
transport between them), Open MPI and MPICH their TCP stack between every
pair of ranks; the full profile adds 8 ranks on one node and across two, and
``--with-8-ranks`` 8 ranks on one node to the quick profile (shapes).  The runs go
shape by shape, the libraries interleaved; the quick profile runs each shape in
ROUNDS rounds and the report takes each point's median over them.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, mpibench, mpipart

PROGRAM = "mpi_coll"
SOURCES = ("bench/mpi_coll.c", "bench/mpi_common.c", "bench/engine.c")
RESULTS_NAME = "coll"  # coll.jsonl, coll.txt
DONE_MARKER = "# mpi_coll: done, status"
BUILD_TIMEOUT = 300.0
# one run of one library in one shape, {quick: s}: a guard against a hang
RUN_TIMEOUT = {True: 240.0, False: 1200.0}

# the nonblocking collectives mpi_coll times with -DHAVE_NBC; the probe
# calls each of them, so a library that lacks one gets none
NBC_FUNCTIONS = ("MPI_Ibarrier", "MPI_Ibcast", "MPI_Ireduce", "MPI_Iallreduce",
                 "MPI_Iallgather", "MPI_Ialltoall")
NBC_PROBE = """\
#include <mpi.h>
/* links only when the library has every nonblocking collective mpi_coll uses */
int main(int argc, char **argv)
{
    MPI_Request r[6];
    float x = 1.0f, y = 0.0f;
    char a[4] = {0}, b[4] = {0};

    MPI_Init(&argc, &argv);
    MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
    MPI_Ibcast(a, 1, MPI_BYTE, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Ireduce(&x, &y, 1, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, &r[2]);
    MPI_Iallreduce(&x, &y, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r[3]);
    MPI_Iallgather(a, 1, MPI_BYTE, b, 1, MPI_BYTE, MPI_COMM_WORLD, &r[4]);
    MPI_Ialltoall(a, 1, MPI_BYTE, b, 1, MPI_BYTE, MPI_COMM_WORLD, &r[5]);
    MPI_Waitall(6, r, MPI_STATUSES_IGNORE);
    MPI_Finalize();
    return 0;
}
"""


@dataclass(frozen=True)
class Config:
    """A job shape: @ranks ranks, on one node or across two (each library
    on its own network path)."""

    ranks: int
    two_nodes: bool = False

    @property
    def name(self) -> str:
        return "%d-ranks-%s" % (self.ranks, "2-nodes" if self.two_nodes else "1-node")

    @property
    def path(self) -> str:
        return "network" if self.two_nodes else "on-node"


# the acceptance grid's shapes (issue 14): 2 and 4 ranks on one node, 4
# ranks across two; the full profile also 8 ranks on one node and across two
CONFIGS = {True: (Config(2), Config(4), Config(4, True)),
           False: (Config(2), Config(4), Config(4, True), Config(8), Config(8, True))}
# the shape `postbox bench --with-8-ranks` adds to the quick profile
# (shapes): the model's validation at 8 ranks, left out of `make bench`'s
# quick profile for its time (bench/README.md)
EIGHT_RANKS = Config(8)


def shapes(quick: bool, eight_ranks: bool = False) -> tuple:
    """The shapes a profile runs (CONFIGS), with EIGHT_RANKS added when
    @eight_ranks and the profile does not have it."""
    configs = CONFIGS[quick]
    return configs + (EIGHT_RANKS,) if eight_ranks and EIGHT_RANKS not in configs else configs


# Runs of each shape, the libraries interleaved in each round: on a shared
# machine one run of each library drifts more than good libraries differ,
# so the quick profile (the acceptance grid) runs every shape in ROUNDS
# rounds and the report takes each point's median over them
# (collreport.Index), the grid over those of one probe state
# (collreport.point_state): with 3 rounds, 39, 0 and 15 of the 108
# points rested on one round of a library in three `make bench` runs of
# 2026-11-28 (docs/notes/2026-11-28-grid-in-one-probe-state.md).  The
# full profile measures longer instead.
ROUNDS = {True: 4, False: 1}


def build_dir(lib: mpibench.Library) -> Path:
    return mpibench.build_dir(lib)


def probe_command(lib: mpibench.Library) -> list[str]:
    return mpibench.probe_command(lib, "nbc_probe")


def has_nbc(lib: mpibench.Library, runner=subprocess.run) -> tuple[bool, str]:
    """Whether @lib's mpicc compiles and links a program calling every
    function of NBC_FUNCTIONS; (yes, the first line of the compiler's
    complaint or "links")."""
    return mpibench.links(lib, "nbc_probe", NBC_PROBE, NBC_FUNCTIONS, runner)


def build_command(lib: mpibench.Library, nbc: bool, root: Optional[Path] = None) -> list[str]:
    return mpibench.build_command(lib, root, PROGRAM, SOURCES, ("HAVE_NBC",) if nbc else ())


def build(lib: mpibench.Library, nbc: bool) -> tuple[bool, str]:
    """Compile mpi_coll with @lib's mpicc; (ok, message).  The compiler's
    output goes to build/mpibench/<label>/coll-build.log."""
    return mpibench.build(lib, PROGRAM, SOURCES, ("HAVE_NBC",) if nbc else (), "coll-build.log")


def run_command(lib: mpibench.Library, config: Config, jsonl: Path, quick: bool,
                extra: Sequence[str] = (), is_root: Optional[bool] = None,
                round_: Optional[int] = None) -> list[str]:
    """argv of one run of mpi_coll: @lib in the shape @config (its round
    @round_)."""
    if is_root is None:
        is_root = mpibench.is_root_user()
    return mpipart.program_argv(lib, lib.launch_args(is_root, config.path), config.ranks,
                                PROGRAM, mpibench.program_args(lib, config.path), jsonl, quick,
                                extra, mpipart.round_args(round_))


@dataclass
class Run:
    lib: mpibench.Library
    config: Config
    round: Optional[int] = None  # of the shape's rounds, when there are several

    @property
    def name(self) -> str:
        """Its name in machine.json's runs: coll/<label>/<shape>[/round-<k>]."""
        name = "coll/%s/%s" % (self.lib.label, self.config.name)
        return name if self.round is None else "%s/round-%d" % (name, self.round)


def plan_runs(libraries: Sequence[mpibench.Library], quick: bool,
              configs: Optional[Sequence[Config]] = None) -> list[Run]:
    """Shape by shape, round by round (ROUNDS), the libraries interleaved; a
    family without a known network path runs on one node only."""
    rounds = ROUNDS[quick]
    return [Run(lib, config, k if rounds > 1 else None)
            for config in (configs or CONFIGS[quick]) for k in range(rounds) for lib in libraries
            if not config.two_nodes or lib.family in mpibench.NETWORK_PATHS]


@dataclass
class Outcome(mpipart.Outcome):
    """What run_libraries did."""


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None,
                  configs: Optional[Sequence[Config]] = None) -> Outcome:
    """Build mpi_coll with each of @chosen and run it in every shape into
    @out/coll.jsonl; record everything in @description (machine.json:
    coll_libraries, runs)."""
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = mpibench.is_root_user()
    description.setdefault("runs", [])
    description.setdefault("coll_libraries", [])
    outcome = Outcome()
    ready: list = []
    for lib in chosen:
        nbc, why = has_nbc(lib)
        mpipart.announce_build(PROGRAM, lib, started, terminal, "; nonblocking collectives: %s"
                               % ("yes" if nbc else "no (%s)" % why))
        ok, message = build(lib, nbc)
        description["coll_libraries"].append(dict(
            lib.describe(), build_command=build_command(lib, nbc), built=ok, nbc=nbc,
            nbc_probe=shlex.join(probe_command(lib)), nbc_detail=why,
            header_version=lib.version))
        mpipart.take_build(lib, ok, message, ready, outcome, err)
    machine.write(out / "machine.json", description)

    cores = machine.cpus_allowed() or os.cpu_count() or 1

    def step(run: Run) -> mpipart.Step:
        return mpipart.Step(
            run.name, run_command(run.lib, run.config, jsonl, quick, extra, is_root, run.round),
            run.lib.run_env(is_root, run.config.path), run.config.path, run.config.ranks,
            "%s %s%s (%d ranks%s, %s)"
            % (run.lib.label, run.config.name,
               "" if run.round is None else " round %d/%d" % (run.round + 1, ROUNDS[quick]),
               run.config.ranks, ", oversubscribed" if run.config.ranks > cores else "",
               "network path" if run.config.two_nodes else "on-node"),
            "%s %s" % (run.lib.label, run.config.name))

    mpipart.run_plan(plan_runs(ready, quick, configs), step, "coll", out, text, description,
                     outcome, terminal, err, started, RUN_TIMEOUT[quick], DONE_MARKER)
    return outcome


def grid_summary(jsonl: Path) -> Optional[str]:
    """"acceptance grid: N of M points pass (K missing), F of the G that
    fail within the rounds' spread" (collreport.GridPoint.within_spread)
    from the records of @jsonl, or None without Postbox and another
    library."""
    from postbox import collreport, results

    try:
        records = results.load_jsonl(jsonl) if jsonl.exists() else []
    except results.ResultsError:
        return None
    index = collreport.Index(records)
    if collreport.POSTBOX not in index.libraries or not index.others():
        return None
    points = collreport.acceptance_grid(index)
    counted = [p for p in points if p.verdict != "missing"]
    failed = [p for p in counted if p.verdict == "FAIL"]
    return "acceptance grid: %d of %d points pass%s%s" % (
        sum(1 for p in counted if p.verdict == "pass"), len(counted),
        " (%d missing)" % (len(points) - len(counted)) if len(points) > len(counted) else "",
        ", %d of the %d that fail within the rounds' spread"
        % (sum(1 for p in failed if p.within_spread), len(failed)) if failed else "")


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple[str, str]:
    """(verdict, detail) of the mpi-coll part from @outcome (and the grid's
    summary from @jsonl)."""
    parts = outcome.built_parts() + outcome.trouble_parts()
    summary = grid_summary(jsonl) if jsonl is not None else None
    if summary:
        parts.append(summary)
    return outcome.verdict(), "; ".join(parts)


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[mpibench.Library]] = None,
        configs: Optional[Sequence[Config]] = None, wheels: bool = False) -> int:
    """`postbox bench --coll`: the collective bench alone, then the report;
    returns its exit status."""
    return mpipart.run_part_alone("mpi-coll", run_libraries, detail, RESULTS_NAME, out, quick,
                                  libraries, terminal, found, extra, wheels=wheels,
                                  configs=configs)

