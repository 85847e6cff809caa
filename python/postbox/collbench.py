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
pair of ranks; the full profile adds 8 ranks on one node and across two.  The runs go
shape by shape, the libraries interleaved; the quick profile runs each shape in
ROUNDS rounds and the report takes each point's median over them.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, mpibench

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
# Runs of each shape, the libraries interleaved in each round: on a shared
# machine one run of each library drifts more than good libraries differ,
# so the quick profile (the acceptance grid) runs every shape in ROUNDS
# rounds and the report takes each point's median over them
# (collreport.Index).  The full profile measures longer instead.
ROUNDS = {True: 3, False: 1}


def _version_key(lib: mpibench.Library) -> tuple:
    parts = []
    for part in (lib.version or "").split("."):
        parts.append(int(part) if part.isdigit() else -1)
    return tuple(parts)


def one_per_family(libraries: Sequence[mpibench.Library]) -> list[mpibench.Library]:
    """The quick profile's libraries: of each family the newest version (by
    its mpi.h; the first found when none says), in the order found."""
    best: dict = {}
    for lib in libraries:
        kept = best.get(lib.family)
        if kept is None or _version_key(lib) > _version_key(kept):
            best[lib.family] = lib
    return [lib for lib in libraries if best.get(lib.family) is lib]


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
        is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    argv = [str(lib.mpiexec)] + lib.launch_args(is_root, config.path) + [
        "-n", str(config.ranks), str(build_dir(lib) / PROGRAM)]
    argv += mpibench.program_args(lib, config.path) + ["--json", str(jsonl)]
    if round_ is not None:
        argv += ["--round", str(round_)]
    if quick:
        argv.append("--quick")
    return argv + list(extra)


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
class Outcome:
    """What run_libraries did."""

    built: list = field(default_factory=list)    # labels
    skipped: list = field(default_factory=list)  # labels that did not build
    failed: list = field(default_factory=list)   # run names that failed
    runs: int = 0
    ended: list = field(default_factory=list)  # runs ended after their last record


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None,
                  configs: Optional[Sequence[Config]] = None) -> Outcome:
    """Build mpi_coll with each of @chosen and run it in every shape into
    @out/coll.jsonl; record everything in @description (machine.json:
    coll_libraries, runs)."""
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    description.setdefault("runs", [])
    description.setdefault("coll_libraries", [])
    outcome = Outcome()
    ready = []
    for lib in chosen:
        nbc, why = has_nbc(lib)
        print("postbox bench: building %s (%s %s) with %s; nonblocking collectives: %s%s"
              % (PROGRAM, lib.label, lib.origin, lib.mpicc, "yes" if nbc else "no (%s)" % why,
                 mpibench.elapsed(started)), file=terminal, flush=True)
        ok, message = build(lib, nbc)
        description["coll_libraries"].append(dict(
            lib.describe(), build_command=build_command(lib, nbc), built=ok, nbc=nbc,
            nbc_probe=shlex.join(probe_command(lib)), nbc_detail=why,
            header_version=lib.version))
        if ok:
            ready.append(lib)
            outcome.built.append(lib.label)
        else:
            outcome.skipped.append(lib.label)
            print("postbox bench: %s: %s; skipped" % (lib.label, message), file=err, flush=True)
    machine.write(out / "machine.json", description)

    plan = plan_runs(ready, quick, configs)
    cores = machine.cpus_allowed() or os.cpu_count() or 1
    spent = []
    for step, run in enumerate(plan, 1):
        argv = run_command(run.lib, run.config, jsonl, quick, extra, is_root, run.round)
        env = run.lib.run_env(is_root, run.config.path)
        print("[coll %d/%d]%s%s %s %s%s (%d ranks%s, %s): %s"
              % (step, len(plan), mpibench.elapsed(started),
                 mpibench.time_left(spent, len(plan) - step + 1), run.lib.label, run.config.name,
                 "" if run.round is None else " round %d/%d" % (run.round + 1, ROUNDS[quick]),
                 run.config.ranks, ", oversubscribed" if run.config.ranks > cores else "",
                 "network path" if run.config.two_nodes else "on-node", shlex.join(argv)),
              file=terminal, flush=True)
        result = mpibench.run_one(argv, env, text, terminal, err, RUN_TIMEOUT[quick],
                                  marker=DONE_MARKER)
        status, seconds = result.status, result.seconds
        spent.append(seconds)
        outcome.runs += 1
        if result.ended:
            outcome.ended.append(run.name)
        description["runs"].append(mpibench.run_entry(run.name, argv, env, run.config.path,
                                                      run.config.ranks, result))
        machine.write(out / "machine.json", description)
        if status != 0:
            outcome.failed.append(run.name)
            print("postbox bench: %s %s %s after %.1f s (output above and in %s)"
                  % (run.lib.label, run.config.name,
                     "timed out" if status is None else "failed with exit status %s" % status,
                     seconds, text), file=err, flush=True)
    return outcome


def grid_summary(jsonl: Path) -> Optional[str]:
    """"acceptance grid: N of M points pass (K missing)" from the records of
    @jsonl, or None without Postbox and another library."""
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
    return "acceptance grid: %d of %d points pass%s" % (
        sum(1 for p in counted if p.verdict == "pass"), len(counted),
        " (%d missing)" % (len(points) - len(counted)) if len(points) > len(counted) else "")


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple[str, str]:
    """(verdict, detail) of the mpi-coll part from @outcome (and the grid's
    summary from @jsonl)."""
    parts = []
    if outcome.built:
        parts.append("built: %s" % ", ".join(outcome.built))
    if outcome.skipped:
        parts.append("did not build: %s" % ", ".join(outcome.skipped))
    if outcome.failed:
        parts.append("failed: %s" % ", ".join(outcome.failed))
    if outcome.ended:
        parts.append("%d run(s) ended after their last record: %s"
                     % (len(outcome.ended), ", ".join(outcome.ended)))
    summary = grid_summary(jsonl) if jsonl is not None else None
    if summary:
        parts.append(summary)
    verdict = "FAILED" if outcome.failed else ("ok" if outcome.runs else "skipped")
    return verdict, "; ".join(parts)


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[mpibench.Library]] = None,
        configs: Optional[Sequence[Config]] = None) -> int:
    """`postbox bench --coll`: the collective bench alone, then the report;
    returns its exit status."""
    return run_part_alone(
        "mpi-coll", out, quick, libraries, terminal, found,
        lambda out_dir, chosen, description, err, started: run_libraries(
            out_dir, quick, chosen, extra, description, terminal, err, started=started,
            configs=configs),
        lambda outcome, out_dir: detail(outcome, out_dir / (RESULTS_NAME + ".jsonl")))


def run_part_alone(part: str, out: Optional[Path], quick: bool, libraries: Optional[str],
                   terminal: TextIO, found: Optional[Sequence[mpibench.Library]],
                   measure, verdict_of) -> int:
    """One MPI part of `postbox bench` alone (--coll, --rma): choose the
    libraries (of each family the newest in the quick profile), make the
    results folder and its machine.json, run @measure(out, chosen,
    description, err, started) -> outcome, write the report, and print
    @verdict_of(outcome, out) -> (verdict, text) as part @part's; returns
    the exit status."""
    from postbox import bench, report, results

    err = sys.stderr
    out = Path(out) if out is not None else bench.default_out_dir()
    found = mpibench.discover() if found is None else list(found)
    chosen, unknown = mpibench.select(found, libraries)
    if quick and not libraries:
        chosen = one_per_family(chosen)
    for name in unknown:
        print("postbox bench: no MPI library '%s' found (found: %s)"
              % (name, ", ".join(lib.label for lib in found) or "none"), file=err)
    if not chosen:
        print("postbox bench: no MPI library to measure.  %s" % mpibench.not_found_hint(),
              file=err)
        return 1
    try:
        bench.prepare_out_dir(out)
    except bench.BenchError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1
    description = machine.describe([])
    description["runs"] = []
    machine.write(out / "machine.json", description)
    print("postbox bench: results in %s" % out, file=terminal)
    try:
        outcome = measure(out, chosen, description, err, time.monotonic())
    except KeyboardInterrupt:
        print("\npostbox bench: interrupted; partial results in %s" % out, file=err)
        return 130
    try:
        records = results.load_dir(out)
    except results.ResultsError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1
    if records:
        print("Report: %s" % report.write(out, records), file=terminal)
    else:
        print("postbox bench: no measurements were recorded", file=err)
    verdict, text = verdict_of(outcome, out)
    print("postbox bench: %s %s%s" % (part, verdict, " (%s)" % text if text else ""),
          file=err if verdict == "FAILED" else terminal)
    return 1 if verdict == "FAILED" or not records else 0
