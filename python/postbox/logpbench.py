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

import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, mpibench

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
        is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    argv = [str(lib.mpiexec)] + lib.launch_args(is_root, path) + [
        "-n", "2", str(mpibench.build_dir(lib) / PROGRAM)]
    argv += mpibench.program_args(lib, path) + list(PROFILE_ARGS[quick])
    argv += ["--json", str(jsonl)]
    if round_ is not None:
        argv += ["--round", str(round_)]
    if quick:
        argv.append("--quick")
    return argv + list(extra)


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
class Outcome:
    """What run_libraries did."""

    built: list = field(default_factory=list)    # labels
    skipped: list = field(default_factory=list)  # labels that did not build
    failed: list = field(default_factory=list)   # run names that failed
    runs: int = 0
    ended: list = field(default_factory=list)    # runs ended after their last record
    seconds: float = 0.0                         # building and running


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None) -> Outcome:
    """Build mpi_logp with each of @chosen and run it on every path into
    @out/logp.jsonl; record everything in @description (machine.json:
    logp_libraries, runs).  Prints the time it took."""
    begun = time.monotonic()
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    description.setdefault("runs", [])
    description.setdefault("logp_libraries", [])
    outcome = Outcome()
    ready = []
    for lib in chosen:
        print("postbox bench: building %s (%s %s) with %s%s"
              % (PROGRAM, lib.label, lib.origin, lib.mpicc, mpibench.elapsed(started)),
              file=terminal, flush=True)
        ok, message = build(lib)
        description["logp_libraries"].append(dict(
            lib.describe(), build_command=build_command(lib), built=ok,
            header_version=lib.version))
        if ok:
            ready.append(lib)
            outcome.built.append(lib.label)
        else:
            outcome.skipped.append(lib.label)
            print("postbox bench: %s: %s; skipped" % (lib.label, message), file=err, flush=True)
    machine.write(out / "machine.json", description)

    plan = plan_runs(ready, quick)
    spent: list = []
    for step, run in enumerate(plan, 1):
        argv = run_command(run.lib, run.path, jsonl, quick, extra, is_root, run.round)
        env = run.lib.run_env(is_root, run.path)
        print("[logp %d/%d]%s%s %s 2 ranks %s%s: %s"
              % (step, len(plan), mpibench.elapsed(started),
                 mpibench.time_left(spent, len(plan) - step + 1), run.lib.label, run.path,
                 "" if run.round is None else " round %d/%d" % (run.round + 1,
                                                               PROFILE_ROUNDS[quick]),
                 shlex.join(argv)), file=terminal, flush=True)
        result = mpibench.run_one(argv, env, text, terminal, err, RUN_TIMEOUT[quick],
                                  marker=DONE_MARKER)
        spent.append(result.seconds)
        outcome.runs += 1
        if result.ended:
            outcome.ended.append(run.name)
        description["runs"].append(mpibench.run_entry(run.name, argv, env, run.path, 2, result))
        machine.write(out / "machine.json", description)
        if result.status != 0:
            outcome.failed.append(run.name)
            print("postbox bench: %s %s %s after %.1f s (output above and in %s)"
                  % (run.lib.label, run.path,
                     "timed out" if result.status is None
                     else "failed with exit status %s" % result.status,
                     result.seconds, text), file=err, flush=True)
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
    if outcome.runs:
        parts.append("%d runs in %.1f s" % (outcome.runs, outcome.seconds))
    summary = fit_summary(jsonl) if jsonl is not None else None
    if summary:
        parts.append(summary)
    verdict = "FAILED" if outcome.failed else ("ok" if outcome.runs else "skipped")
    return verdict, "; ".join(parts)

