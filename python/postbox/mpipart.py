"""What the MPI parts of ``postbox bench`` share (mpi-coll, mpi-rma,
mpi-logp, mpi-threads, mpi-beff, mpi-dense, mpi-traffic, mpi-link): the
command line of one run, the loop over the planned runs with its progress
lines, the outcome and its verdict, and a part run alone (``postbox bench
--coll`` and the like).

Each part builds its bench program with every library (its own way: probes,
up-to-date checks), plans its runs (shapes, paths, rounds, the libraries
interleaved) and describes each as a :class:`Step`; :func:`run_plan` runs
them, prints ``[<tag> k/n] [m:ss] ~m:ss left <label>: <argv>`` before each,
and records every run in machine.json's ``runs``.
"""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, TextIO

from postbox import machine

# postbox.mpibench is imported where it is used: it imports the report, whose
# parts import the benches, whose Outcome classes derive from this module's


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


def program_argv(lib: mpibench.Library, launch: Sequence[str], ranks: int, program: str,
                 args: Sequence[str], jsonl: Path, quick: bool, extra: Sequence[str] = (),
                 after_json: Sequence[str] = ()) -> list[str]:
    """``MPIEXEC LAUNCH -n RANKS build/mpibench/<label>/PROGRAM ARGS --json
    JSONL AFTER_JSON [--quick] EXTRA``: one run of an MPI bench program."""
    from postbox import mpibench

    argv = [str(lib.mpiexec)] + list(launch) + [
        "-n", str(ranks), str(mpibench.build_dir(lib) / program)]
    argv += list(args) + ["--json", str(jsonl)] + list(after_json)
    if quick:
        argv.append("--quick")
    return argv + list(extra)


def round_args(round_: Optional[int]) -> list[str]:
    """``--round K`` of a run that is one of several rounds, else nothing."""
    return [] if round_ is None else ["--round", str(round_)]


@dataclass
class Outcome:
    """What a part's run_libraries did (a part adds its own fields)."""

    built: list = field(default_factory=list)    # labels
    skipped: list = field(default_factory=list)  # labels that did not build
    failed: list = field(default_factory=list)   # run names that failed
    runs: int = 0
    ended: list = field(default_factory=list)    # runs ended after their last record

    def built_parts(self) -> list[str]:
        """["built: ..."] when a library was built, else []."""
        return ["built: %s" % ", ".join(self.built)] if self.built else []

    def trouble_parts(self) -> list[str]:
        """The detail's parts about builds that failed, runs that failed and
        runs that were ended after their last record."""
        parts = []
        if self.skipped:
            parts.append("did not build: %s" % ", ".join(self.skipped))
        if self.failed:
            parts.append("failed: %s" % ", ".join(self.failed))
        if self.ended:
            parts.append("%d run(s) ended after their last record: %s"
                         % (len(self.ended), ", ".join(self.ended)))
        return parts

    def verdict(self) -> str:
        """FAILED when a run failed, ok when any ran, else skipped."""
        return "FAILED" if self.failed else ("ok" if self.runs else "skipped")


def announce_build(program: str, lib: mpibench.Library, started: Optional[float],
                   terminal: TextIO, note: str = "") -> None:
    """Say that @program is being built with @lib (@note after the compiler)."""
    from postbox import mpibench

    print("postbox bench: building %s (%s %s) with %s%s%s"
          % (program, lib.label, lib.origin, lib.mpicc, note, mpibench.elapsed(started)),
          file=terminal, flush=True)


def take_build(lib: mpibench.Library, ok: bool, message: str, ready: list, outcome: Outcome,
               err: TextIO) -> None:
    """Count @lib's build: ready to run, or skipped with @message on @err."""
    if ok:
        ready.append(lib)
        outcome.built.append(lib.label)
    else:
        outcome.skipped.append(lib.label)
        print("postbox bench: %s: %s; skipped" % (lib.label, message), file=err, flush=True)


@dataclass
class Step:
    """One planned run as run_plan needs it."""

    name: str         # in machine.json's runs
    argv: list
    env: dict
    path: str         # "on-node" or "network"
    ranks: int
    label: str        # in the progress line, before the command
    what: str         # in the failure message: "<label> <shape>"
    marker: Optional[str] = None   # the program's last line, when not run_plan's
    entry: dict = field(default_factory=dict)   # more of its entry in machine.json's runs


def run_plan(plan: Sequence, step_of: Callable[[object], Step], tag: str, out: Path,
             text: Path, description: dict, outcome: Outcome, terminal: TextIO, err: TextIO,
             started: Optional[float], timeout: float, marker: Optional[str] = None,
             judge: Optional[Callable[[object, mpibench.RunResult], bool]] = None) -> None:
    """Run every run of @plan (described by @step_of), its output to
    @terminal and @text; each in @description's runs (machine.json written
    after each), counted in @outcome.  @judge(run, result), when given, sees
    every result first and returns True when it has dealt with its status;
    else a run that did not exit 0 is failed and said on @err.  @marker: the
    program's last line (mpibench.DONE_MARKER when None)."""
    from postbox import mpibench

    if marker is None:
        marker = mpibench.DONE_MARKER
    spent: list = []
    for number, run in enumerate(plan, 1):
        step = step_of(run)
        print("[%s %d/%d]%s%s %s: %s"
              % (tag, number, len(plan), mpibench.elapsed(started),
                 mpibench.time_left(spent, len(plan) - number + 1), step.label,
                 shlex.join(step.argv)), file=terminal, flush=True)
        result = mpibench.run_one(step.argv, step.env, text, terminal, err, timeout,
                                  marker=step.marker or marker)
        spent.append(result.seconds)
        outcome.runs += 1
        if result.ended:
            outcome.ended.append(step.name)
        description["runs"].append(dict(mpibench.run_entry(step.name, step.argv, step.env,
                                                           step.path, step.ranks, result),
                                        **step.entry))
        handled = judge is not None and judge(run, result)
        machine.write(out / "machine.json", description)
        if not handled and result.status != 0:
            outcome.failed.append(step.name)
            print("postbox bench: %s %s after %.1f s (output above and in %s)"
                  % (step.what, "timed out" if result.status is None
                     else "failed with exit status %s" % result.status,
                     result.seconds, text), file=err, flush=True)


def choose(found: Sequence[mpibench.Library], libraries: Optional[str],
           quick: bool) -> tuple[list, list]:
    """(chosen, unknown): the libraries of @found that @libraries names
    (mpibench.select; all when None), of each family the newest in the
    quick profile unless named, and the names that matched none."""
    from postbox import mpibench

    chosen, unknown = mpibench.select(found, libraries)
    if quick and not libraries:
        chosen = one_per_family(chosen)
    return chosen, unknown


def records_summary(jsonl: Optional[Path], summarize: Callable[[list], Any]) -> Any:
    """@summarize(records) of the records of @jsonl (a part's summary for
    its detail), or None when there is no such file or it cannot be read."""
    from postbox import results

    if jsonl is None or not jsonl.exists():
        return None
    try:
        records = results.load_jsonl(jsonl)
    except results.ResultsError:
        return None
    return summarize(records)


def start_alone(out: Optional[Path], chosen: Sequence[mpibench.Library], unknown: Sequence[str],
                found: Sequence[mpibench.Library], terminal: TextIO,
                err: TextIO) -> tuple[Optional[Path], dict]:
    """For a part run alone: say the @unknown names, make the results
    folder @out (the default one when None) and its machine.json.  (out,
    description), or (None, {}) when there is nothing to measure or no
    folder (said on @err)."""
    from postbox import bench, mpibench

    for name in unknown:
        print("postbox bench: no MPI library '%s' found (found: %s)"
              % (name, ", ".join(lib.label for lib in found) or "none"), file=err)
    if not chosen:
        print("postbox bench: no MPI library to measure.  %s" % mpibench.not_found_hint(),
              file=err)
        return None, {}
    out = Path(out) if out is not None else bench.default_out_dir()
    try:
        bench.prepare_out_dir(out)
    except bench.BenchError as exc:
        print("postbox bench: %s" % exc, file=err)
        return None, {}
    description = machine.describe([])
    description["runs"] = []
    machine.write(out / "machine.json", description)
    print("postbox bench: results in %s" % out, file=terminal)
    return out, description


def write_report(out: Path, terminal: TextIO, err: TextIO) -> Optional[list]:
    """Write the report of the records in @out and say where; the records
    (maybe none: said on @err), or None when they cannot be read (said)."""
    from postbox import report, results

    try:
        records = results.load_dir(out)
    except results.ResultsError as exc:
        print("postbox bench: %s" % exc, file=err)
        return None
    if records:
        print("Report: %s" % report.write(out, records), file=terminal)
    else:
        print("postbox bench: no measurements were recorded", file=err)
    return records


def run_part_alone(part: str, run_libraries: Callable, detail: Callable, results_name: str,
                   out: Optional[Path], quick: bool, libraries: Optional[str],
                   terminal: TextIO, found: Optional[Sequence[mpibench.Library]],
                   extra: Sequence[str] = (), wheels: bool = False, **options) -> int:
    """MPI part @part of `postbox bench` alone (--coll, --rma, ...): make the
    per-library wheel venvs first when @wheels (and @found is not given, as
    the whole job does), choose
    the libraries, make the results folder and its machine.json, run the
    part's @run_libraries(out, quick, chosen, extra, description, terminal,
    err, started=, **@options) -> outcome, write the report and print
    @detail(outcome, out/@results_name.jsonl) -> (verdict, text) as part
    @part's; returns the exit status."""
    from postbox import mpibench

    err = sys.stderr
    installed = None
    if wheels and found is None:
        installed = mpibench.install_wheels(terminal=terminal, err=err)
    found = mpibench.discover() if found is None else list(found)
    chosen, unknown = choose(found, libraries, quick)
    out, description = start_alone(out, chosen, unknown, found, terminal, err)
    if out is None:
        return 1
    if installed is not None:
        description["mpi_wheels"] = installed
        machine.write(out / "machine.json", description)
    try:
        outcome = run_libraries(out, quick, chosen, extra, description, terminal, err,
                                started=time.monotonic(), **options)
    except KeyboardInterrupt:
        print("\npostbox bench: interrupted; partial results in %s" % out, file=err)
        return 130
    records = write_report(out, terminal, err)
    if records is None:
        return 1
    verdict, text = detail(outcome, out / (results_name + ".jsonl"))
    print("postbox bench: %s %s%s" % (part, verdict, " (%s)" % text if text else ""),
          file=err if verdict == "FAILED" else terminal)
    return 1 if verdict == "FAILED" or not records else 0
