"""The LogP bench: bench/mpi_logp.c against every MPI library found.

Part ``mpi-logp`` of ``postbox bench`` (suite ``logp``: ``postbox bench
--suite logp``).  bench/mpi_logp.c is written to the standard MPI C API
only; like the other MPI benches it is built with each library's own
``mpicc`` (with bench/mpi_common.c and bench/engine.c) into
``build/mpibench/<label>/mpi_logp``, then run through that library's
launcher into ``logp.jsonl``/``logp.txt`` of the results folder.

Two ranks, on one node and across two (each library on its own network
path, mpibench.NETWORK_PATHS: Postbox two virtual nodes of ``postbox run
--nodes 2``, Open MPI and MPICH their TCP stack on this host).  Each run
measures Kielmann et al.'s parameterized LogP and netgauge's PRTT at every
size; python/postbox/logpfit.py derives the parameters and fits LogGP, and
python/postbox/logpreport.py draws seed 000's Fig. 13 and Table VII.  The
quick profile measures 5 sizes (0 B to 64 KiB) with short caps, one run per
library and path, within about 30 s in all; the full profile measures 0 B
and every power of two to 1 MiB, g by saturation at every size (--flood),
in PROFILE_ROUNDS rounds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, mpibench, mpipart

PROGRAM = "mpi_logp"
SOURCES = ("bench/mpi_logp.c", "bench/mpi_common.c", "bench/engine.c")
RESULTS_NAME = "logp"  # logp.jsonl, logp.txt
DONE_MARKER = "# mpi_logp: done, status"
# one run of one library on one path, {quick: s}: a guard against a hang
RUN_TIMEOUT = {True: 60.0, False: 900.0}
# the options of the program beyond the common ones, {quick: ...}
PROFILE_ARGS = {True: (), False: ("--flood",)}
# runs of each path, the libraries interleaved in each round
PROFILE_ROUNDS = {True: 1, False: 2}
PATHS = ("on-node", "network")


def build_command(lib: mpibench.Library, root: Optional[Path] = None) -> list[str]:
    return mpibench.build_command(lib, root, PROGRAM, SOURCES)


def build(lib: mpibench.Library) -> tuple[bool, str]:
    """Compile mpi_logp with @lib's mpicc; (ok, message); the compiler's
    output goes to build/mpibench/<label>/logp-build.log."""
    return mpibench.build(lib, PROGRAM, SOURCES, log_name="logp-build.log")


def run_command(lib: mpibench.Library, path: str, jsonl: Path, quick: bool,
                extra: Sequence[str] = (), is_root: Optional[bool] = None,
                round_: Optional[int] = None) -> list[str]:
    """argv of one run of mpi_logp: @lib, 2 ranks on @path (its round
    @round_)."""
    if is_root is None:
        is_root = mpibench.is_root_user()
    return mpipart.program_argv(lib, lib.launch_args(is_root, path), 2, PROGRAM,
                                mpibench.program_args(lib, path) + list(PROFILE_ARGS[quick]),
                                jsonl, quick, extra, mpipart.round_args(round_))


@dataclass
class Run:
    lib: mpibench.Library
    path: str
    round: Optional[int] = None

    @property
    def name(self) -> str:
        """Its name in machine.json's runs: logp/<label>/<path>[/round-<k>]."""
        name = "logp/%s/2-ranks-%s" % (self.lib.label, self.path)
        return name if self.round is None else "%s/round-%d" % (name, self.round)


def plan_runs(libraries: Sequence[mpibench.Library], quick: bool) -> list[Run]:
    """Path by path, round by round, the libraries interleaved; a family
    without a known network path runs on one node only."""
    rounds = PROFILE_ROUNDS[quick]
    return [Run(lib, path, k if rounds > 1 else None)
            for path in PATHS for k in range(rounds) for lib in libraries
            if path == "on-node" or lib.family in mpibench.NETWORK_PATHS]


@dataclass
class Outcome(mpipart.Outcome):
    """What run_libraries did."""

    seconds: float = 0.0                         # building and running


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None) -> Outcome:
    """Build mpi_logp with each of @chosen and run it on every path into
    @out/logp.jsonl; record everything in @description (machine.json:
    logp_libraries, runs).  Prints the time it took."""
    begun = time.monotonic()
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = mpibench.is_root_user()
    description.setdefault("runs", [])
    description.setdefault("logp_libraries", [])
    outcome = Outcome()
    ready = []
    for lib in chosen:
        mpipart.announce_build(PROGRAM, lib, started, terminal)
        ok, message = build(lib)
        description["logp_libraries"].append(dict(
            lib.describe(), build_command=build_command(lib), built=ok,
            header_version=lib.version))
        mpipart.take_build(lib, ok, message, ready, outcome, err)
    machine.write(out / "machine.json", description)

    def step(run: Run) -> mpipart.Step:
        return mpipart.Step(
            run.name, run_command(run.lib, run.path, jsonl, quick, extra, is_root, run.round),
            run.lib.run_env(is_root, run.path), run.path, 2,
            "%s 2 ranks %s%s" % (run.lib.label, run.path, "" if run.round is None
                                 else " round %d/%d" % (run.round + 1, PROFILE_ROUNDS[quick])),
            "%s %s" % (run.lib.label, run.path))

    mpipart.run_plan(plan_runs(ready, quick), step, "logp", out, text, description, outcome,
                     terminal, err, started, RUN_TIMEOUT[quick], DONE_MARKER)
    outcome.seconds = time.monotonic() - begun
    print("postbox bench: mpi-logp: %d run(s) of %s in %.1f s (%s profile)"
          % (outcome.runs, PROGRAM, outcome.seconds, "quick" if quick else "full"),
          file=terminal, flush=True)
    return outcome


def fit_summary(jsonl: Path) -> Optional[str]:
    """"LogGP fitted for N (library, path)" and their g, from @jsonl, or
    None without records."""
    from postbox import logpfit, results

    try:
        records = results.load_jsonl(jsonl) if jsonl.exists() else []
    except results.ResultsError:
        return None
    fitted = logpfit.fitted_parameters(records)
    if not fitted:
        return None
    return "LogGP fitted for %d: %s" % (len(fitted), ", ".join(
        "%s/%s L %.2f us g %.2f us" % (p.library, p.path, p.L * 1e6, p.g * 1e6)
        for p in fitted))


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple[str, str]:
    """(verdict, detail) of the mpi-logp part from @outcome (and the fit's
    summary from @jsonl)."""
    parts = outcome.built_parts() + outcome.trouble_parts()
    if outcome.runs:
        parts.append("%d runs in %.1f s" % (outcome.runs, outcome.seconds))
    summary = fit_summary(jsonl) if jsonl is not None else None
    if summary:
        parts.append(summary)
    return outcome.verdict(), "; ".join(parts)

