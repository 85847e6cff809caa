"""The one-sided bench: bench/mpi_rma.c against every MPI library found.

Part ``mpi-rma`` of ``postbox bench`` (and ``postbox bench --rma`` alone).
bench/mpi_rma.c is written to the standard MPI C API only; like mpi_p2p and
mpi_coll it is built with each library's own ``mpicc`` (with
bench/mpi_common.c and bench/engine.c) into ``build/mpibench/<label>/mpi_rma``
by mpibench's build step, then run through that library's launcher into
``rma.jsonl``/``rma.txt`` of the results folder.

Whether a library has one-sided communication is tried, not assumed: before
building, a small program calling the functions mpi_rma uses (RMA_FUNCTIONS)
is compiled and linked with the library's mpicc (``rma_probe.c`` beside the
program).  A library where it does not link (Postbox's own until its
one-sided layer is in) is skipped with that message; the part does not fail
for it.

Two ranks, in two layouts (LAYOUTS): on one node, and across two nodes,
where each library takes its own network path as the other MPI parts do
(mpibench.NETWORK_PATHS: Postbox two virtual nodes of ``postbox run --nodes
2``, Open MPI and MPICH their TCP stack on this host).  On the network path
the window is MPI_Win_create's (``--flavor create``) for every library:
Open MPI's one-sided components map the memory of MPI_Win_allocate directly
between ranks of one host whatever BTLs it is given, so only a window of
the program's own memory goes through its network stack; Open MPI also
gets ``--mca osc rdma`` there (RMA_NETWORK_ARGS).  The quick profile keeps
to what issue 15's acceptance names: lock_all + flush, put latency,
fetch_and_op and compare_and_swap at 8 B and put bandwidth on one node, in
ROUNDS interleaved rounds;
put latency, fetch_and_op and compare_and_swap and the progress test across
two nodes; the full profile runs every test in every mode, and
the progress test in both layouts.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, mpibench, mpipart

PROGRAM = "mpi_rma"
SOURCES = ("bench/mpi_rma.c", "bench/mpi_common.c", "bench/engine.c")
RESULTS_NAME = "rma"  # rma.jsonl, rma.txt
DONE_MARKER = "# mpi_rma: done, status"
# one run of one library in one layout, {quick: s}: a guard against a hang
RUN_TIMEOUT = {True: 120.0, False: 900.0}

RMA_FUNCTIONS = ("MPI_Win_create", "MPI_Win_allocate", "MPI_Win_free", "MPI_Put", "MPI_Get",
                 "MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op",
                 "MPI_Compare_and_swap", "MPI_Win_lock", "MPI_Win_unlock", "MPI_Win_lock_all",
                 "MPI_Win_unlock_all", "MPI_Win_flush", "MPI_Win_fence", "MPI_Win_post",
                 "MPI_Win_start", "MPI_Win_complete", "MPI_Win_wait")
RMA_PROBE = """\
#include <mpi.h>
/* links only when the library has every one-sided function mpi_rma uses */
int main(int argc, char **argv)
{
    MPI_Win w;
    MPI_Group grp;
    char *base, mem[64];
    long long x = 1, y = 0, z = 0;
    double d = 1.0, e = 0.0;

    MPI_Init(&argc, &argv);
    MPI_Comm_group(MPI_COMM_WORLD, &grp);
    MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
    MPI_Win_free(&w);
    MPI_Win_create(mem, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w);
    MPI_Put(&x, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, w);
    MPI_Win_unlock(0, w);
    MPI_Win_lock_all(0, w);
    MPI_Get(&y, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, w);
    MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, 8, 1, MPI_DOUBLE, MPI_SUM, w);
    MPI_Get_accumulate(&d, 1, MPI_DOUBLE, &e, 1, MPI_DOUBLE, 0, 8, 1, MPI_DOUBLE, MPI_SUM, w);
    MPI_Fetch_and_op(&x, &y, MPI_INT64_T, 0, 0, MPI_SUM, w);
    MPI_Compare_and_swap(&x, &y, &z, MPI_INT64_T, 0, 0, w);
    MPI_Win_flush(0, w);
    MPI_Win_unlock_all(w);
    MPI_Win_fence(0, w);
    MPI_Win_fence(0, w);
    MPI_Win_post(grp, 0, w);
    MPI_Win_start(grp, 0, w);
    MPI_Win_complete(w);
    MPI_Win_wait(w);
    MPI_Win_free(&w);
    MPI_Group_free(&grp);
    MPI_Finalize();
    return 0;
}
"""

# launcher options a family takes on the network path for its one-sided
# components (beside mpibench.NETWORK_PATHS): Open MPI's osc/rdma over the
# BTLs given (osc/sm would be chosen for ranks of one host otherwise)
RMA_NETWORK_ARGS = {"openmpi": ("--mca", "osc", "rdma")}

# the acceptance figures (issue 15): what the quick profile measures
QUICK_TESTS = ("put_latency", "fetch_and_op", "compare_and_swap", "put_bandwidth")
QUICK_NETWORK_TESTS = ("put_latency", "fetch_and_op", "compare_and_swap")
ALL_TESTS = ("put_latency", "get_latency", "put_bandwidth", "get_bandwidth", "accumulate",
             "get_accumulate", "fetch_and_op", "compare_and_swap")
PROGRESS = "progress"


@dataclass(frozen=True)
class Layout:
    """Two ranks on one node or across two (each library on its own network
    path), the window's flavour, the tests and the modes of one run."""

    two_nodes: bool
    flavor: str
    tests: tuple
    sync: tuple = ("lock_all",)
    # runs of the layout, the libraries interleaved in each (ROUNDS)
    rounds: int = 1

    @property
    def name(self) -> str:
        return "2-ranks-%s-%s" % ("2-nodes" if self.two_nodes else "1-node", self.flavor)

    @property
    def path(self) -> str:
        return "network" if self.two_nodes else "on-node"


# The on-node figures of the acceptance are a few nanoseconds, or a memcpy
# at the memory's speed, for every library: on a shared machine one run of
# each drifts more than they differ.  The quick profile runs that layout in
# ROUNDS rounds, every library once in each, and the report takes each
# library's median over the rounds.
ROUNDS = 3

LAYOUTS = {
    True: (Layout(False, "allocate", QUICK_TESTS, rounds=ROUNDS),
           Layout(True, "create", QUICK_NETWORK_TESTS + (PROGRESS,))),
    False: (Layout(False, "allocate", ALL_TESTS + (PROGRESS,),
                   ("lock", "lock_all", "fence", "pscw")),
            Layout(False, "create", ("put_latency", "get_latency", "put_bandwidth"),
                   ("lock", "lock_all", "fence", "pscw")),
            Layout(True, "create", ALL_TESTS + (PROGRESS,),
                   ("lock", "lock_all", "fence", "pscw"))),
}


def has_rma(lib: mpibench.Library, runner=subprocess.run) -> tuple[bool, str]:
    """Whether @lib's mpicc links a program calling every function of
    RMA_FUNCTIONS; (yes, "links") or (no, what is missing)."""
    return mpibench.links(lib, "rma_probe", RMA_PROBE, RMA_FUNCTIONS, runner)


def build_command(lib: mpibench.Library, root: Optional[Path] = None) -> list[str]:
    return mpibench.build_command(lib, root, PROGRAM, SOURCES)


def build(lib: mpibench.Library) -> tuple[bool, str]:
    """Compile mpi_rma with @lib's mpicc; (ok, message); the compiler's
    output goes to build/mpibench/<label>/rma-build.log."""
    return mpibench.build(lib, PROGRAM, SOURCES, log_name="rma-build.log")


def run_command(lib: mpibench.Library, layout: Layout, jsonl: Path, quick: bool,
                extra: Sequence[str] = (), is_root: Optional[bool] = None,
                round_: Optional[int] = None) -> list[str]:
    """argv of one run of mpi_rma: @lib in @layout (its round @round_)."""
    if is_root is None:
        is_root = mpibench.is_root_user()
    launch = lib.launch_args(is_root, layout.path) + (
        list(RMA_NETWORK_ARGS.get(lib.family, ())) if layout.two_nodes else [])
    args = mpibench.program_args(lib, layout.path) + [
        "--tests", ",".join(layout.tests), "--sync", ",".join(layout.sync),
        "--flavor", layout.flavor]
    return mpipart.program_argv(lib, launch, 2, PROGRAM, args, jsonl, quick, extra,
                                mpipart.round_args(round_))


@dataclass
class Run:
    lib: mpibench.Library
    layout: Layout
    round: Optional[int] = None  # of the layout's rounds, when it has several

    @property
    def name(self) -> str:
        """Its name in machine.json's runs: rma/<label>/<layout>[/round-<k>]."""
        name = "rma/%s/%s" % (self.lib.label, self.layout.name)
        return name if self.round is None else "%s/round-%d" % (name, self.round)


def plan_runs(libraries: Sequence[mpibench.Library], quick: bool,
              layouts: Optional[Sequence[Layout]] = None) -> list[Run]:
    """Layout by layout, round by round, the libraries interleaved; a family
    without a known network path runs on one node only."""
    return [Run(lib, layout, k if layout.rounds > 1 else None)
            for layout in (layouts or LAYOUTS[quick]) for k in range(layout.rounds)
            for lib in libraries
            if not layout.two_nodes or lib.family in mpibench.NETWORK_PATHS]


@dataclass
class Outcome(mpipart.Outcome):
    """What run_libraries did."""

    no_rma: list = field(default_factory=list)   # (label, why): the library lacks RMA


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None,
                  layouts: Optional[Sequence[Layout]] = None) -> Outcome:
    """Build mpi_rma with each of @chosen that has one-sided communication and
    run it in every layout into @out/rma.jsonl; record everything in
    @description (machine.json: rma_libraries, runs)."""
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = mpibench.is_root_user()
    description.setdefault("runs", [])
    description.setdefault("rma_libraries", [])
    outcome = Outcome()
    ready = []
    for lib in chosen:
        rma, why = has_rma(lib)
        entry = dict(lib.describe(), rma=rma, rma_detail=why,
                     rma_probe=shlex.join(mpibench.probe_command(lib, "rma_probe")),
                     header_version=lib.version)
        if not rma:
            outcome.no_rma.append((lib.label, why))
            entry["built"] = False
            description["rma_libraries"].append(entry)
            print("postbox bench: mpi-rma: %s has no one-sided communication (%s); skipped"
                  % (lib.label, why), file=terminal, flush=True)
            continue
        mpipart.announce_build(PROGRAM, lib, started, terminal)
        ok, message = build(lib)
        entry.update(build_command=build_command(lib), built=ok)
        description["rma_libraries"].append(entry)
        mpipart.take_build(lib, ok, message, ready, outcome, err)
    machine.write(out / "machine.json", description)

    def step(run: Run) -> mpipart.Step:
        return mpipart.Step(
            run.name, run_command(run.lib, run.layout, jsonl, quick, extra, is_root, run.round),
            run.lib.run_env(is_root, run.layout.path), run.layout.path, 2,
            "%s %s%s (%s)"
            % (run.lib.label, run.layout.name,
               "" if run.round is None else " round %d/%d" % (run.round + 1, run.layout.rounds),
               "network path" if run.layout.two_nodes else "on-node"),
            "%s %s" % (run.lib.label, run.layout.name))

    mpipart.run_plan(plan_runs(ready, quick, layouts), step, "rma", out, text, description,
                     outcome, terminal, err, started, RUN_TIMEOUT[quick], DONE_MARKER)
    return outcome


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple[str, str]:
    """(verdict, detail) of the mpi-rma part from @outcome (and the
    progress test's times from @jsonl)."""
    from postbox import rmareport

    parts = outcome.built_parts()
    for label, why in outcome.no_rma:
        parts.append("%s skipped: no one-sided communication (%s)" % (label, why))
    parts += outcome.trouble_parts()
    summary = mpipart.records_summary(jsonl, rmareport.progress_summary)
    if summary:
        parts.append(summary)
    return outcome.verdict(), "; ".join(parts)


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[mpibench.Library]] = None,
        layouts: Optional[Sequence[Layout]] = None, wheels: bool = False) -> int:
    """`postbox bench --rma`: the one-sided bench alone, then the report;
    returns its exit status."""
    return mpipart.run_part_alone("mpi-rma", run_libraries, detail, RESULTS_NAME, out, quick,
                                  libraries, terminal, found, extra, wheels=wheels,
                                  layouts=layouts)
