"""The thread bench: bench/mpi_p2p.c under MPI_Init_thread (issue 16).

Part ``mpi-threads`` of ``postbox bench`` (and ``postbox bench --threads``
alone).  It runs the program mpibench builds (``build/mpibench/<label>/
mpi_p2p``, built here when missing or older than its sources) with
``--thread-level`` into ``threads.jsonl``/``threads.txt`` of the results
folder:

- Postbox's 8 B on-node ``pingpong_standard`` with MPI_THREAD_FUNNELED and
  with MPI_THREAD_MULTIPLE (one thread communicating), in ROUNDS rounds of
  one run each (about a second a run), the order of the two alternating
  round by round; the
  ratio MULTIPLE / FUNNELED of their medians over the rounds that count
  (threadreport.level_ratio), against issue 16's 1.1, is appended to
  ``threads.jsonl`` as a ratio record with that limit;
- ``msgrate_threads`` (THREADS threads per rank, each on its own
  communicator, every message checked) for every library: Postbox, and
  side by side each other library (of each family the newest in the quick
  profile).  A library that does not grant MPI_THREAD_MULTIPLE (mpi_p2p
  exits NOT_GRANTED) is skipped with that, not failed.

The ping-pong needs only Postbox: the other libraries' MULTIPLE against
FUNNELED is not what the issue asks, and leaving it out keeps the part at
seconds.
"""

from __future__ import annotations

import datetime
import json
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, mpibench, mpipart, paths, results, threadreport

PROGRAM = mpibench.PROGRAM
RESULTS_NAME = "threads"  # threads.jsonl, threads.txt
# one run, {quick: s}: a guard against a hang (a run takes about a second)
RUN_TIMEOUT = {True: 60.0, False: 300.0}
# rounds of the two ping-pong runs, {quick: n}: on a shared machine single
# runs drift more than the lock costs: the ratio is the median of several pairs
ROUNDS = {True: 5, False: 9}
# the ping-pong's levels, in the order of the even rounds
LEVELS = (threadreport.FUNNELED, threadreport.MULTIPLE)
THREADS = 4
# mpi_p2p's exit status when the library grants less than --thread-level
NOT_GRANTED = 3


@dataclass
class Run:
    """One run of mpi_p2p at a thread level: the ping-pong (in a round) or
    the thread message rate."""

    lib: mpibench.Library
    test: str
    level: str
    round: Optional[int] = None

    @property
    def name(self) -> str:
        """Its name in machine.json's runs: threads/<label>/<test>/<level>[/round-<k>]."""
        name = "threads/%s/%s/%s" % (self.lib.label, self.test, self.level)
        return name if self.round is None else "%s/round-%d" % (name, self.round)


def plan_runs(libraries: Sequence[mpibench.Library], quick: bool,
              rounds: Optional[int] = None) -> list[Run]:
    """Postbox's ping-pong at both levels, round by round (FUNNELED first in
    the even rounds, MULTIPLE first in the odd ones), then the thread
    message rate of every library, Postbox's first."""
    postbox = [lib for lib in libraries if lib.family == "postbox"]
    runs = []
    for k in range(ROUNDS[quick] if rounds is None else rounds):
        levels = LEVELS if k % 2 == 0 else tuple(reversed(LEVELS))
        runs += [Run(lib, threadreport.PINGPONG, level, k) for lib in postbox for level in levels]
    runs += [Run(lib, threadreport.MSGRATE, threadreport.MULTIPLE)
             for lib in postbox + [lib for lib in libraries if lib.family != "postbox"]]
    return runs


def run_command(lib: mpibench.Library, run: Run, jsonl: Path, quick: bool,
                extra: Sequence[str] = (), is_root: Optional[bool] = None) -> list[str]:
    """argv of one run of mpi_p2p: @run's test at its thread level, on-node,
    2 ranks."""
    if is_root is None:
        is_root = mpibench.is_root_user()
    args = mpibench.program_args(lib) + ["--tests", run.test, "--thread-level", run.level]
    if run.test == threadreport.PINGPONG:
        after = ["--sizes", str(threadreport.PINGPONG_SIZE)]
    else:
        after = ["--threads", str(THREADS)]
    return mpipart.program_argv(lib, lib.launch_args(is_root), 2, PROGRAM, args, jsonl, quick,
                                extra, after + mpipart.round_args(run.round))


# what mpi_p2p is made of besides mpibench.SOURCES
HEADERS = ("bench/mpi_common.h", "bench/engine.h")


def up_to_date(lib: mpibench.Library, root: Optional[Path] = None) -> bool:
    """Whether build/mpibench/<label>/mpi_p2p exists and is newer than its
    sources and headers (part mpi built it moments ago)."""
    program = mpibench.build_dir(lib) / PROGRAM
    root = root or paths.repo_root()
    try:
        built = program.stat().st_mtime
        return all((root / source).stat().st_mtime <= built
                   for source in mpibench.SOURCES + HEADERS)
    except OSError:
        return False


@dataclass
class Outcome(mpipart.Outcome):
    """What run_libraries did (built: the labels ready to run)."""

    not_granted: list = field(default_factory=list)  # (label, why): no MULTIPLE
    no_postbox: bool = False                         # Postbox's MPI was not among them


def append_ratio(jsonl: Path) -> Optional[dict]:
    """Append the MULTIPLE/FUNNELED ratio of the records of @jsonl to it as a
    ratio record (threadreport.ratio_record); returns it, or None when the
    rounds gave no ratio."""
    try:
        records = results.load_jsonl(jsonl) if jsonl.exists() else []
    except results.ResultsError:
        return None
    if any(r.get("suite") == "threads" for r in records):
        return None
    record = threadreport.ratio_record(
        threadreport.level_ratio(records), socket.gethostname(),
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    if record is not None:
        with open(jsonl, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    return record


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None,
                  rounds: Optional[int] = None) -> Outcome:
    """Run the plan (plan_runs) of @chosen into @out/threads.jsonl, then
    append the ratio record; everything in @description (machine.json:
    threads_libraries, runs)."""
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = mpibench.is_root_user()
    description.setdefault("runs", [])
    description.setdefault("threads_libraries", [])
    outcome = Outcome(no_postbox=not any(lib.family == "postbox" for lib in chosen))
    ready = []
    for lib in chosen:
        entry = dict(lib.describe(), build_command=mpibench.build_command(lib))
        if up_to_date(lib):
            ok, message = True, "built already"
        else:
            mpipart.announce_build(PROGRAM, lib, started, terminal)
            ok, message = mpibench.build(lib)
        entry["built"] = ok
        description["threads_libraries"].append(entry)
        mpipart.take_build(lib, ok, message, ready, outcome, err)
    machine.write(out / "machine.json", description)

    plan = plan_runs(ready, quick, rounds)
    entries = {entry["label"]: entry for entry in description["threads_libraries"]}

    def step(run: Run) -> mpipart.Step:
        return mpipart.Step(
            run.name, run_command(run.lib, run, jsonl, quick, extra, is_root),
            run.lib.run_env(is_root), "on-node", 2,
            "%s %s %s%s" % (run.lib.label, run.test, run.level, "" if run.round is None
                            else " round %d/%d" % (run.round + 1,
                                                   ROUNDS[quick] if rounds is None else rounds)),
            "%s %s at %s" % (run.lib.label, run.test, run.level))

    def judge(run: Run, result: mpibench.RunResult) -> bool:
        if result.status == NOT_GRANTED:
            why = "does not grant MPI_THREAD_%s (mpi_p2p --thread-level %s exits %d)" % (
                run.level.upper(), run.level, NOT_GRANTED)
            outcome.not_granted.append((run.lib.label, why))
            entries[run.lib.label].update(granted=False, detail=why)
            print("postbox bench: mpi-threads: %s %s; skipped" % (run.lib.label, why),
                  file=terminal, flush=True)
            return True
        if result.status == 0 and run.level == threadreport.MULTIPLE:
            entries[run.lib.label]["granted"] = True
        return False

    mpipart.run_plan(plan, step, "threads", out, text, description, outcome, terminal, err,
                     started, RUN_TIMEOUT[quick], judge=judge)
    append_ratio(jsonl)
    return outcome


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple[str, str]:
    """(verdict, detail) of the mpi-threads part: FAILED when a run failed
    (a ratio over its limit is said in the detail and judged by the report,
    as the other parts' targets are); the ratio and the rates first."""
    parts = []
    if outcome.no_postbox:
        parts.append("Postbox's MPI not found: no MULTIPLE/FUNNELED ratio")
    for label, why in outcome.not_granted:
        parts.append("%s skipped: %s" % (label, why))
    parts += outcome.trouble_parts()
    summary = mpipart.records_summary(
        jsonl, lambda records: threadreport.summary(records) if records else None)
    if summary is not None:
        parts.insert(0, summary)
    return outcome.verdict(), "; ".join(parts)


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[mpibench.Library]] = None,
        rounds: Optional[int] = None, wheels: bool = False) -> int:
    """`postbox bench --threads`: the thread bench alone, then the report;
    returns its exit status."""
    return mpipart.run_part_alone("mpi-threads", run_libraries, detail, RESULTS_NAME, out, quick,
                                  libraries, terminal, found, extra, wheels=wheels,
                                  rounds=rounds)
