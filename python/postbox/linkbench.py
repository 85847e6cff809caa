"""The emulated-links bench: memory-based communication against TCP/IP on
links of chosen speeds (seed 003's comparison), part ``links`` of
``postbox bench`` (suite ``links``).

Every run is a job of two ranks on two virtual nodes of ``postbox run
--netns --link RATE[,DELAY]`` (docs/launch.md, "Emulated links"): each node
in a network namespace of its own, the veth pairs between them shaped by the
kernel's traffic control.  On each link (LINKS: 100 Mbit/s and 1 Gbit/s in
the quick profile; 10 Mbit/s to 10 Gbit/s in the full one; each with a
one-way DELAY of SMALL_DELAY when the kernel has netem, without delay
otherwise, which the records and the report say):

- ``postbox-rsm-net-bench``: Postbox's RSM put (ping-pong and stream) over
  its tcp transport, beside raw TCP (ping-pong, stream) and UDP (ping-pong)
  between the same two processes in the same run;
- bench/mpi_p2p.c (``pingpong_standard``, ``bandwidth_uni``) built with
  each MPI library's own mpicc (mpibench's build), for every library whose
  ranks can sit in the namespaces: Postbox's MPI (its RSM tcp transport on
  the node addresses), and MPICH, whose programs speak PMI-1 over
  ``PMI_FD``, which ``postbox run`` serves, so they run under it directly
  (MPIR_CVAR_NOLOCAL, UCX/libfabric pinned to TCP on the node's interface:
  MPICH_ENV).  Open MPI's ranks need a PMIx server, which ``postbox run``
  does not provide: it is skipped with that reason (OPEN_MPI_SKIP).

The programs write their JSON lines to a file of their own; this module
re-tags every record (suite ``links``; ``kind`` rsm, raw or mpi; the
program's own suite in ``source_suite``; ``link``, ``link_rate``,
``link_delay_us``) into ``links.jsonl``, so that the other parts' tables do
not mix them with their unshaped figures.  linkreport draws the seed's
tables from them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, TextIO

from postbox import machine, mpibench, mpipart, netns, paths

PROGRAM = "mpi_p2p"
RESULTS_NAME = "links"  # links.jsonl, links.txt
SUITE = "links"
RSM_PROGRAM = "postbox-rsm-net-bench"
DONE_MARKER = mpibench.DONE_MARKER
# one run, {quick: s}: a guard against a hang (`postbox run --timeout` a
# little below the bench's own)
RUN_TIMEOUT = {True: 60.0, False: 600.0}

QUICK_RATES = ("100mbit", "1gbit")
FULL_RATES = ("10mbit", "100mbit", "1gbit", "10gbit")
SMALL_DELAY = "50us"
MPI_TESTS = ("pingpong_standard", "bandwidth_uni")
# seed 003's sizes where the programs can measure them: the RSM puts are
# whole 8-byte words (8 stands for the seed's 4), 1408 B is its largest
# bandwidth size; MPI takes them as they are
RSM_SIZES = {True: (8, 64, 1024, 16384),
             False: (8, 16, 64, 256, 1024, 1408, 4096, 16384, 65536, 1048576)}
MPI_SIZES = {True: (4, 64, 1024, 16384),
             False: (0, 4, 16, 64, 256, 1024, 1408, 4096, 16384, 65536, 1048576)}
# a figure's time cap (--reps-cap-ms): each figure still takes at least ~10
# transfers, so the slowest link also caps the sizes (SLOW_MAX_SIZE)
REPS_CAP_MS = {True: 10.0, False: 100.0}
SLOW_RATE = 50 * 10 ** 6
SLOW_MAX_SIZE = 65536
# the MPI libraries that run under `postbox run` (their PMI)
UNDER_POSTBOX = ("postbox", "mpich")
OPEN_MPI_SKIP = ("Open MPI's ranks need a PMIx server to start, and postbox run serves "
                 "PMI-1 and PMI-2 only, so they cannot be placed in the virtual nodes' "
                 "namespaces")
# MPICH in a namespace: every peer is remote (no shared memory), its netmod
# on TCP over the node's interface (ch4:ucx reads UCX_*, ch4:ofi FI_*)
MPICH_ENV = {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": netns.NODE_IF,
             "FI_PROVIDER": "tcp", "FI_TCP_IFACE": netns.NODE_IF}


@dataclass(frozen=True)
class Link:
    """One emulated link: the rate (tc words, e.g. 100mbit) and the one-way
    delay (e.g. 50us, or "" for none)."""

    rate: str
    delay: str = ""

    @property
    def option(self) -> str:
        """The value of ``postbox run --link``."""
        return self.rate + ("," + self.delay if self.delay else "")

    @property
    def spec(self) -> netns.LinkSpec:
        return netns.parse_link(self.option)


def links_for(quick: bool, delay: str) -> list:
    """The links of the profile, each with @delay ("" for none)."""
    return [Link(rate, delay) for rate in (QUICK_RATES if quick else FULL_RATES)]


def sizes_for(link: Link, sizes: Sequence[int]) -> list:
    """@sizes, without those too long for a slow @link (SLOW_MAX_SIZE)."""
    if link.spec.rate < SLOW_RATE:
        return [size for size in sizes if size <= SLOW_MAX_SIZE]
    return list(sizes)


def unavailable() -> Optional[str]:
    """Why ``postbox run --netns --link`` cannot run here (one line: not
    root, no ``ip`` or ``tc`` command, no network namespaces), or None when
    it can."""
    return netns.unavailable() or (None if netns.tc_command() else
                                   "needs the `tc` command of iproute2")


def delay_support(runner: Callable = subprocess.run) -> tuple:
    """(whether ``--link`` takes a DELAY here, why not): one ``postbox run
    --netns --link`` of ``true`` with a delay."""
    argv = [str(paths.program("postbox")), "run", "--netns", "--link",
            "1gbit," + SMALL_DELAY, "true"]
    done = runner(argv, capture_output=True, text=True, timeout=60)
    if done.returncode == 0:
        return True, ""
    why = done.stderr.strip().splitlines()
    return False, why[-1] if why else "exit status %d" % done.returncode


def launcher_args(link: Link, quick: bool) -> list:
    """``postbox run`` and its options for a run on @link."""
    return [str(paths.program("postbox")), "run", "-n", "2", "--nodes", "2", "--netns",
            "--link", link.option, "--timeout", "%g" % (RUN_TIMEOUT[quick] - 5)]


def rsm_command(link: Link, jsonl: Path, quick: bool, extra: Sequence[str] = ()) -> list:
    """argv of postbox-rsm-net-bench on @link, its records into @jsonl."""
    sizes = sizes_for(link, RSM_SIZES[quick])
    return launcher_args(link, quick) + [
        str(paths.program(RSM_PROGRAM)), "--json", str(jsonl), "--no-probe",
        "--sizes", ",".join(map(str, sizes)), "--max-size", str(max(sizes)),
        "--reps-cap-ms", "%g" % REPS_CAP_MS[quick]] + (["--quick"] if quick else []) + list(extra)


def mpi_command(lib: mpibench.Library, link: Link, jsonl: Path, quick: bool,
                extra: Sequence[str] = ()) -> list:
    """argv of @lib's mpi_p2p on @link under ``postbox run``, its records
    into @jsonl."""
    sizes = sizes_for(link, MPI_SIZES[quick])
    return launcher_args(link, quick) + [
        str(mpibench.build_dir(lib) / PROGRAM), "--library", lib.label, "--transport", "tcp",
        "--placement", "off-node", "--path", "network", "--nodes", "2",
        "--path-how", "postbox run --netns --link %s" % link.option,
        "--tests", ",".join(MPI_TESTS), "--json", str(jsonl), "--no-probe",
        "--sizes", ",".join(map(str, sizes)), "--reps-cap-ms", "%g" % REPS_CAP_MS[quick]] + \
        (["--quick"] if quick else []) + list(extra)


def mpi_env(lib: mpibench.Library) -> dict:
    """The environment a run of @lib adds (MPICH_ENV for MPICH)."""
    env = dict(lib.env)
    if lib.family == "mpich":
        env.update(MPICH_ENV)
    return env


def tag(record: dict, link: Link, kind: str) -> dict:
    """@record as a record of suite ``links``: measured on @link by a run
    of @kind (rsm: postbox-rsm-net-bench's RSM figures, raw: its TCP and
    UDP ones, mpi: mpi_p2p's)."""
    spec = link.spec
    out = dict(record)
    out["source_suite"] = record.get("suite")
    out["suite"] = SUITE
    out["kind"] = "raw" if kind == "rsm" and record.get("suite") == "raw" else kind
    out["link"] = link.option
    out["link_rate"] = spec.rate
    out["link_delay_us"] = spec.delay_us
    # postbox-rsm-net-bench's config (netns) marks its own part's records
    out["source_config"] = out.pop("config", None)
    return out


def move_records(part: Path, link: Link, kind: str, jsonl: Path) -> int:
    """Append the records of @part, tagged (see tag), to @jsonl and remove
    @part; the number moved."""
    moved = 0
    if not part.exists():
        return 0
    with open(part, encoding="utf-8") as source, open(jsonl, "a", encoding="utf-8") as sink:
        for line in source:
            if line.strip():
                sink.write(json.dumps(tag(json.loads(line), link, kind)) + "\n")
                moved += 1
    part.unlink()
    return moved


@dataclass
class Run:
    """One job: @kind "rsm" (postbox-rsm-net-bench) or "mpi" (@lib's
    mpi_p2p) on @link."""

    kind: str
    link: Link
    lib: Optional[mpibench.Library] = None

    @property
    def name(self) -> str:
        """Its name in machine.json's runs: links/<link>/<rsm or label>."""
        return "links/%s/%s" % (self.link.option, "rsm" if self.lib is None else self.lib.label)


def built_fresh(lib: mpibench.Library) -> bool:
    """Whether @lib's mpi_p2p is built and newer than its sources (the p2p
    part of the same job built it)."""
    program = mpibench.build_dir(lib) / PROGRAM
    root = paths.repo_root()
    sources = [root / source for source in mpibench.SOURCES] + \
        [root / "bench" / "engine.h", root / "bench" / "mpi_common.h"]
    try:
        built = program.stat().st_mtime
        return all(source.stat().st_mtime <= built for source in sources)
    except OSError:
        return False


def plan_runs(libraries: Sequence[mpibench.Library], links: Sequence[Link]) -> list:
    """Link by link: the RSM run, then each library that runs under
    ``postbox run`` (UNDER_POSTBOX)."""
    return [run for link in links
            for run in [Run("rsm", link)] + [Run("mpi", link, lib) for lib in libraries
                                             if lib.family in UNDER_POSTBOX]]


@dataclass
class Outcome(mpipart.Outcome):
    """What run_libraries did: besides mpipart.Outcome's fields, the
    libraries left out and why (left_out: (label, why), said by detail;
    mpipart's skipped, the labels that did not build, stays empty)."""

    left_out: list = field(default_factory=list)
    records: int = 0
    unavailable: str = ""                        # why the part cannot run here
    no_delay: str = ""                           # why the links have no delay
    seconds: float = 0.0


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None) -> Outcome:
    """Build mpi_p2p with each of @chosen that runs under ``postbox run``,
    then every run of plan_runs into @out/links.jsonl; record everything in
    @description (machine.json: links, runs)."""
    begin = time.monotonic()
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    outcome = Outcome()
    description.setdefault("runs", [])
    why = unavailable()
    if why is None:
        try:
            for program in ("postbox", RSM_PROGRAM):
                paths.program(program)
        except paths.MissingProgram as exc:
            why = str(exc)
    if why is not None:
        outcome.unavailable = "--netns --link %s" % why
        print("postbox bench: links: %s; skipped" % outcome.unavailable, file=terminal,
              flush=True)
        return outcome
    has_delay, no_delay = delay_support()
    if not has_delay:
        outcome.no_delay = no_delay
        print("postbox bench: links: without delay: %s" % no_delay, file=terminal, flush=True)
    links = links_for(quick, SMALL_DELAY if has_delay else "")
    ready = []
    for lib in chosen:
        if lib.family not in UNDER_POSTBOX:
            outcome.left_out.append((lib.label, OPEN_MPI_SKIP if lib.family == "openmpi"
                                     else "its launcher's protocol is not served"))
            print("postbox bench: links: %s skipped: %s" % (lib.label, outcome.left_out[-1][1]),
                  file=terminal, flush=True)
            continue
        if built_fresh(lib):
            ready.append(lib)
            outcome.built.append(lib.label)
            continue
        mpipart.announce_build(PROGRAM, lib, started, terminal)
        ok, message = mpibench.build(lib)
        if ok:
            ready.append(lib)
            outcome.built.append(lib.label)
        else:
            outcome.left_out.append((lib.label, message))
            print("postbox bench: %s: %s; skipped" % (lib.label, message), file=err, flush=True)
    description["links"] = {"links": [link.option for link in links], "no_delay": no_delay,
                            "libraries": [lib.describe() for lib in ready],
                            "skipped": [{"label": label, "why": why_}
                                        for label, why_ in outcome.left_out]}
    machine.write(out / "machine.json", description)


    def step(numbered: tuple) -> mpipart.Step:
        number, run = numbered
        part = out / ("links-run-%d.part" % number)
        return mpipart.Step(
            run.name, rsm_command(run.link, part, quick, extra) if run.lib is None else
            mpi_command(run.lib, run.link, part, quick, extra),
            {} if run.lib is None else mpi_env(run.lib), "network", 2, run.name, run.name,
            DONE_MARKER if run.lib is not None else "done in ", {"link": run.link.option})

    def judge(numbered: tuple, result: mpibench.RunResult) -> bool:
        number, run = numbered
        outcome.records += move_records(out / ("links-run-%d.part" % number), run.link,
                                        run.kind, jsonl)
        return False

    mpipart.run_plan(list(enumerate(plan_runs(ready, links), 1)), step, "links", out, text,
                     description, outcome, terminal, err, started, RUN_TIMEOUT[quick],
                     judge=judge)
    outcome.seconds = time.monotonic() - begin
    print("postbox bench: links: %d runs on %s in %.1f s"
          % (outcome.runs, ", ".join(link.option for link in links), outcome.seconds),
          file=terminal, flush=True)
    return outcome


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple:
    """(verdict, detail) of the links part from @outcome."""
    if outcome.unavailable:
        return "skipped", outcome.unavailable
    parts = []
    if outcome.built:
        parts.append("MPI: %s" % ", ".join(outcome.built))
    for label, why in outcome.left_out:
        parts.append("%s skipped (%s)" % (label, why))
    if outcome.no_delay:
        parts.append("links without delay (%s)" % outcome.no_delay)
    parts += outcome.trouble_parts()
    parts.append("%d records in %.1f s" % (outcome.records, outcome.seconds))
    return outcome.verdict(), "; ".join(parts)


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[mpibench.Library]] = None) -> int:
    """The links part alone, then the report; returns its exit status."""
    return mpipart.run_part_alone("links", run_libraries, detail, RESULTS_NAME, out, quick,
                                  libraries, terminal, found, extra)
