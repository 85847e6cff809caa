"""The DSM bench (issue 17, item 6): part ``dsm`` of ``postbox bench`` (and
``postbox bench --dsm`` alone).

Into ``dsm.jsonl``/``dsm.txt`` of the results folder:

1. ``postbox-dsm-rtt`` under ``postbox run -n 2 --nodes 2``: seed 004's
   Fig. 13 (the DSM's 4 KB page request/reply beside raw TCP and UDP
   request/reply, 64 B to 4 KB) and its 4 KB ratio;
2. every application of apps/splash in every configuration (dsmreport.Config):
   the sequential run (``<app>-pthreads -p 1``), the pthreads build with 2
   threads (and 4 in the full profile), and the DSM build
   (``postbox run -n P [--nodes 2] <app>-dsm -p P*T``, T threads per
   process, 1 unless asked) at 1 and 2 processes (and 4 in the full
   profile) on one node and across 2 virtual nodes, in ROUNDS interleaved
   rounds (every application in every configuration once per round, the
   order of the configurations reversed in odd rounds).  The DSM runs have
   POSTBOX_DSM_STATS=1: each process's statistics go into the run's record
   (``dsm_stats``).  A run that fails or does not verify is recorded as
   failed with its error, never dropped;
3. a summary record per application and configuration (median time,
   speedup against the sequential median: dsmreport.summary_records) and
   the acceptance lines of issue 17 as ratio records
   (dsmreport.acceptance_records);
4. the links sub-part (seed 004's Figs. 3-12): every application's DSM
   build across 2 virtual nodes on emulated links (``postbox run --netns
   --link RATE[,DELAY]``, linkbench's links: LINK_RATES, with linkbench's
   SMALL_DELAY when the kernel has netem), 2 processes (and 4 in the full
   profile), at the sizes of LINK_SIZES, in LINK_ROUNDS interleaved rounds
   (plan_link_runs).  Its records carry ``link``, ``link_rate``,
   ``link_delay_us`` and ``link_sizes`` (ci or bench), so the unshaped
   tables leave them out; their speedup is against the sequential runs of
   the same bench run at the same size (the main plan's, or the
   sub-part's own reference runs, ``link`` null, at sizes the main plan
   does not run), summed up in ``link_summary`` records
   (dsmreport.link_summary_records).  Without network namespaces or
   ``tc`` (not root, iproute2 missing) it is skipped with the reason.

The quick profile runs the applications at their CI sizes (their
defaults), two rounds; the full one at BENCH_SIZES (sequential parallel
sections of a few hundred ms here), nine rounds, 4 processes too.  On the
links, the quick profile runs the CI sizes on every link; the full one the
CI sizes on every link too and BENCH_SIZES on the fast links only (LU-n
at the seed's size moves enough pages to take 200 s at 10 Mbit/s).
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, TextIO

from postbox import dsmreport, linkbench, machine, paths, results
from postbox.dsmreport import Config

RESULTS_NAME = "dsm"  # dsm.jsonl, dsm.txt
APPS = tuple(app for app, _ in dsmreport.APPS)
# the full profile's 9 rounds: with 5, the medians of one line moved by up
# to 0.5 of the speedup from run to run on this host (docs/dsm.md)
ROUNDS = {True: 2, False: 9}
# processes of the DSM runs, {quick: ...}
PROCESSES = {True: (1, 2), False: (1, 2, 4)}
# threads of the pthreads runs besides the sequential one
PTHREADS = {True: (2,), False: (2, 4)}
# a run's guard against a hang, {quick: s} (the `postbox run --timeout`; the
# subprocess gets 30 s more)
RUN_TIMEOUT = {True: 60, False: 600}
RTT_PROGRAM = "postbox-dsm-rtt"
# the full profile's sizes: seed 004's Table 2 (the programs' --seed), whose
# sequential parallel sections take 0.05 to 1.2 s on this VM, except RADIX
# and WATER-spatial, whose seed sizes take 6 and 10 ms here: 4x the keys and
# 10 time steps (the CI sizes last a few ms, too short to gain from a second
# process)
BENCH_SIZES = {
    "matmult": ("--seed",),
    "sor": ("--seed",),
    "lu_contig": ("--seed",),
    "lu_noncontig": ("--seed",),
    "radix": ("-n", "4194304"),
    "fft": ("--seed",),
    "ocean": ("--seed",),
    "water_nsquared": ("--seed",),
    "water_spatial": ("-n", "1000", "-s", "10"),
}


# the links sub-part: the rates (linkbench's words), the DSM processes
# across 2 virtual nodes, the rounds, and the sizes on each rate ("ci":
# the applications' defaults, "bench": BENCH_SIZES), {quick: ...}
LINK_RATES = ("10mbit", "100mbit", "1gbit")
LINK_PROCESSES = {True: (2,), False: (2, 4)}
LINK_ROUNDS = {True: 1, False: 3}
# the quick profile's applications on the links: issue 17's three (make
# bench's quick profile has 8 minutes; every application at 2 rounds took 36 s)
LINK_QUICK_APPS = ("matmult", "water_nsquared", "lu_contig")
LINK_SIZES = {True: {"10mbit": ("ci",), "100mbit": ("ci",), "1gbit": ("ci",)},
              False: {"10mbit": ("ci",), "100mbit": ("ci", "bench"),
                      "1gbit": ("ci", "bench")}}


def configs(quick: bool, threads_per_process: int = 1) -> list[Config]:
    """The configurations of each application: sequential, pthreads, DSM on
    one node and (2 processes and more) across 2 virtual nodes."""
    out = [dsmreport.SEQUENTIAL] + [Config("pthreads", 1, 1, t) for t in PTHREADS[quick]]
    for p in PROCESSES[quick]:
        out.append(Config("dsm", p, 1, p * threads_per_process))
        if p >= 2:
            out.append(Config("dsm", p, 2, p * threads_per_process))
    return out


@dataclass(frozen=True)
class Run:
    """One run of an application in a configuration, in a round."""

    app: str
    config: Config
    round: int

    @property
    def name(self) -> str:
        """Its name in machine.json's runs: dsm/<app>/<config>/round-<k>."""
        return "dsm/%s/%s/round-%d" % (self.app, self.config.name, self.round)


def plan_runs(quick: bool, apps: Sequence[str] = APPS, rounds: Optional[int] = None,
              threads_per_process: int = 1) -> list[Run]:
    """Every application in every configuration once per round; round by
    round, application by application, the configurations in order in even
    rounds and reversed in odd ones."""
    chosen = configs(quick, threads_per_process)
    runs = []
    for k in range(ROUNDS[quick] if rounds is None else rounds):
        order = chosen if k % 2 == 0 else list(reversed(chosen))
        runs += [Run(app, config, k) for app in apps for config in order]
    return runs


def size_args(app: str, quick: bool) -> list[str]:
    """The application's size options: none (its CI size) in the quick
    profile, BENCH_SIZES in the full one."""
    return [] if quick else list(BENCH_SIZES.get(app, ()))


def sizes_name(quick: bool) -> str:
    """The sizes the main plan runs: "ci" (quick) or "bench" (full)."""
    return "ci" if quick else "bench"


@dataclass(frozen=True)
class LinkRun:
    """One run of the links sub-part: an application's DSM build in
    @config on @link at @sizes ("ci" or "bench"), or, without a link, its
    sequential reference run at sizes the main plan does not run."""

    app: str
    config: Config
    link: Optional[linkbench.Link]
    sizes: str
    round: int

    @property
    def name(self) -> str:
        """Its name in machine.json's runs:
        dsm/links/<link or reference>/<app>/<config>/<sizes>/round-<k>."""
        return "dsm/links/%s/%s/%s/%s/round-%d" % (
            self.link.option if self.link else "reference", self.app, self.config.name,
            self.sizes, self.round)


def link_cases(quick: bool, delay: str = "") -> list:
    """(Link, sizes) of the profile, in LINK_RATES order, each link with
    the one-way @delay ("" for none)."""
    return [(linkbench.Link(rate, delay), sizes) for rate in LINK_RATES
            for sizes in LINK_SIZES[quick][rate]]


def plan_link_runs(quick: bool, apps: Optional[Sequence[str]] = None,
                   rounds: Optional[int] = None, delay: str = "",
                   threads_per_process: int = 1) -> list:
    """The links sub-part's runs: round by round, application by
    application (@apps, or APPS, LINK_QUICK_APPS in the quick profile),
    the sequential reference at each size the main plan does not run, then
    every (link, sizes) of link_cases at every process count of
    LINK_PROCESSES, in order in even rounds and reversed in odd ones."""
    if apps is None:
        apps = LINK_QUICK_APPS if quick else APPS
    cases = link_cases(quick, delay)
    references = sorted({sizes for _, sizes in cases} - {sizes_name(quick)})
    runs = []
    for k in range(LINK_ROUNDS[quick] if rounds is None else rounds):
        for app in apps:
            order = [LinkRun(app, dsmreport.SEQUENTIAL, None, sizes, k) for sizes in references]
            order += [LinkRun(app, Config("dsm", p, 2, p * threads_per_process), link, sizes, k)
                      for link, sizes in cases for p in LINK_PROCESSES[quick]]
            runs += order if k % 2 == 0 else list(reversed(order))
    return runs


def link_command(run: LinkRun, quick: bool) -> tuple[list[str], dict]:
    """(argv, extra environment) of @run: the DSM build under ``postbox
    run --nodes 2 --netns --link`` (POSTBOX_DSM_STATS=1), or the
    sequential reference; MissingProgram when a program is not built."""
    c = run.config
    args = ["-p", str(c.threads)] + size_args(run.app, run.sizes == "ci")
    if run.link is None:
        return [str(paths.program("%s-pthreads" % run.app))] + args, {}
    argv = [str(paths.program("postbox")), "run", "-n", str(c.processes), "--nodes",
            str(c.nodes), "--netns", "--link", run.link.option, "--timeout",
            str(RUN_TIMEOUT[quick]), str(paths.program("%s-dsm" % run.app))]
    return argv + args, {"POSTBOX_DSM_STATS": "1"}


def link_record(run: LinkRun, status: Optional[int], stdout: str, stderr: str,
                seconds: float, quick: bool, host: Optional[str] = None,
                timestamp: Optional[str] = None) -> dict:
    """The record of @run (see run_record) tagged with its link:
    ``link`` (the --link value, null for a sequential reference),
    ``link_rate`` (bit/s), ``link_delay_us`` and ``link_sizes``."""
    record = run_record(Run(run.app, run.config, run.round), status, stdout, stderr, seconds,
                        quick, host, timestamp)
    record["link"] = run.link.option if run.link else None
    record["link_rate"] = run.link.spec.rate if run.link else None
    record["link_delay_us"] = run.link.spec.delay_us if run.link else None
    record["link_sizes"] = run.sizes
    return record


def run_command(run: Run, quick: bool) -> tuple[list[str], dict]:
    """(argv, extra environment) of @run; MissingProgram when a program is
    not built."""
    c = run.config
    args = ["-p", str(c.threads)] + size_args(run.app, quick)
    if c.build == "pthreads":
        return [str(paths.program("%s-pthreads" % run.app))] + args, {}
    argv = [str(paths.program("postbox")), "run", "-n", str(c.processes)]
    if c.nodes > 1:
        argv += ["--nodes", str(c.nodes)]
    argv += ["--timeout", str(RUN_TIMEOUT[quick]), str(paths.program("%s-dsm" % run.app))]
    return argv + args, {"POSTBOX_DSM_STATS": "1"}


def rtt_command(out: Path, quick: bool) -> list[str]:
    """argv of postbox-dsm-rtt across 2 virtual nodes into @out/dsm.jsonl."""
    argv = [str(paths.program("postbox")), "run", "-n", "2", "--nodes", "2", "--timeout",
            str(RUN_TIMEOUT[quick]), str(paths.program(RTT_PROGRAM)), "--json",
            str(out / (RESULTS_NAME + ".jsonl"))]
    return argv + (["--quick"] if quick else [])


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def last_lines(text: str, count: int = 3) -> str:
    """The last @count non-empty lines of @text, joined by " | "."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-count:])


def run_record(run: Run, status: Optional[int], stdout: str, stderr: str, seconds: float,
               quick: bool, host: Optional[str] = None,
               timestamp: Optional[str] = None) -> dict:
    """The record of one run: its time when it printed a verified result
    line for the right application and thread count and exited 0; else
    status "failed" with the error (the output's last lines)."""
    c = run.config
    record = {
        "suite": dsmreport.SUITE, "kind": "run", "test": run.app,
        "library": "postbox" if c.build == "dsm" else "pthreads", "build": c.build,
        "config": c.name, "transport": "threads" if c.build == "pthreads"
        else ("tcp" if c.nodes > 1 else "shm"),
        "placement": "off-node" if c.nodes > 1 else "on-node", "ranks": c.processes,
        "processes": c.processes, "nodes": c.nodes, "threads": c.threads, "pairs": 0,
        "size": 0, "metric": "time", "unit": "us", "median": None, "min": None, "max": None,
        "reps": 1, "probe_before": None, "probe_after": None, "settled": None,
        "state": "unknown", "round": run.round,
        "profile": "quick" if quick else "full", "seconds": round(seconds, 3),
        "exit_status": status,
    }
    result = dsmreport.parse_result_line(stdout)
    error = None
    if status is None:
        error = "timed out after %.0f s" % seconds
    elif status != 0:
        error = "exit status %s: %s" % (status, last_lines(stderr + "\n" + stdout) or "no output")
    elif result is None:
        error = "no result line: %s" % (last_lines(stdout) or "no output")
    elif result["app"] != run.app or result["threads"] != c.threads:
        error = "a result line of %s with %d threads" % (result["app"], result["threads"])
    elif result["verified"] != 1:
        error = "not verified: %s" % (last_lines(stderr) or "verified=%d" % result["verified"])
    if result is not None:
        record["params"] = result["params"]
        record["verified"] = result["verified"] == 1 and error is None
    else:
        record["verified"] = False
    if error is None:
        record["median"] = record["min"] = record["max"] = result["time_us"]
        record["status"] = "ok"
    else:
        record["status"] = "failed"
        record["error"] = error
    if c.build == "dsm":
        stats = dsmreport.parse_stats_lines(stderr)
        if stats:
            record["dsm_stats"] = stats
    if host:
        record["host"] = host
    record["timestamp"] = timestamp or _now()
    return record


@dataclass
class Outcome:
    """What run_all did."""

    runs: int = 0
    failed: list = field(default_factory=list)   # run names that failed
    missing: list = field(default_factory=list)  # programs not built
    rtt_failed: bool = False
    seconds: float = 0.0
    link_runs: int = 0
    link_failed: list = field(default_factory=list)  # run names that failed
    links_unavailable: str = ""  # why the links sub-part cannot run here
    links_no_delay: str = ""     # why its links have no delay
    links: list = field(default_factory=list)  # the --link values run
    link_seconds: float = 0.0


def _run(argv: Sequence[str], env: dict, timeout: float) -> tuple:
    """(status or None on timeout, stdout, stderr, seconds) of @argv."""
    start = time.monotonic()
    try:
        done = subprocess.run(list(argv), env=dict(os.environ, **env), capture_output=True,
                              text=True, errors="replace", timeout=timeout)
        return done.returncode, done.stdout, done.stderr, time.monotonic() - start
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else \
            (exc.stdout or "")
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else \
            (exc.stderr or "")
        return None, out, err, time.monotonic() - start
    except OSError as exc:
        return -1, "", "cannot run %s: %s" % (argv[0], exc), time.monotonic() - start


def _run_step(name: str, command: Callable[[], tuple], make_record: Callable[..., dict],
              timeout: float, jsonl: Path, copy: TextIO, description: dict,
              outcome: Outcome, failed: list, err: Optional[TextIO] = None) -> Optional[dict]:
    """Run the program of command() (argv, extra environment), at most
    @timeout s: its command line and output into @copy, its record
    (make_record(status, stdout, stderr, seconds)) appended to @jsonl, the
    run (@name) into @description's runs, and @name into @failed when the
    record is not ok; returns the record.  A program not built (command()
    raised MissingProgram): its message into @outcome.missing (and @err,
    when given, the first time), @name into @failed, and None returned."""
    try:
        argv, env = command()
    except paths.MissingProgram as exc:
        if str(exc) not in outcome.missing:
            outcome.missing.append(str(exc))
            if err is not None:
                print("postbox bench: dsm: %s" % exc, file=err, flush=True)
        failed.append(name)
        return None
    status, stdout, stderr, seconds = _run(argv, env, timeout)
    copy.write("$ %s%s\n%s%s" % ("".join("%s=%s " % kv for kv in env.items()),
                                 shlex.join(argv), stdout, stderr))
    copy.flush()
    record = make_record(status, stdout, stderr, seconds)
    with open(jsonl, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    description["runs"].append({"name": name, "command": argv, "env": env,
                                "exit_status": status, "seconds": round(seconds, 3)})
    if record["status"] != "ok":
        failed.append(name)
    return record


def _verdict(record: dict) -> str:
    """A run's record in a progress line: its time, or why it failed."""
    return ("%.2f ms" % (record["median"] / 1e3) if record["status"] == "ok"
            else "FAILED: %s" % record.get("error"))


def run_links(out: Path, quick: bool, description: dict, terminal: TextIO, copy: TextIO,
              outcome: Outcome, apps: Optional[Sequence[str]] = None,
              rounds: Optional[int] = None, threads_per_process: int = 1) -> None:
    """The links sub-part (plan_link_runs) into @out/dsm.jsonl, its output
    into @copy; skipped, with the reason in @outcome, when ``postbox run
    --netns --link`` cannot run here (linkbench.unavailable); every run in
    @description (machine.json: runs, and dsm_links: the links and sizes)."""
    start = time.monotonic()
    jsonl = out / (RESULTS_NAME + ".jsonl")
    host = socket.gethostname()
    if apps is None:
        apps = LINK_QUICK_APPS if quick else APPS
    why = linkbench.unavailable()
    if why is None:
        try:
            paths.program("postbox")
        except paths.MissingProgram as exc:
            why = str(exc)
    if why is not None:
        outcome.links_unavailable = "--netns --link %s" % why
        description["dsm_links"] = {"skipped": outcome.links_unavailable}
        print("postbox bench: dsm: links: %s; skipped" % outcome.links_unavailable,
              file=terminal, flush=True)
        return
    try:
        has_delay, no_delay = linkbench.delay_support()
    except (OSError, subprocess.SubprocessError) as exc:
        has_delay, no_delay = False, str(exc)
    if not has_delay:
        outcome.links_no_delay = no_delay
        print("postbox bench: dsm: links without delay: %s" % no_delay, file=terminal,
              flush=True)
    delay = linkbench.SMALL_DELAY if has_delay else ""
    cases = link_cases(quick, delay)
    outcome.links = list(dict.fromkeys(link.option for link, _ in cases))
    description["dsm_links"] = {
        "cases": [{"link": link.option, "sizes": sizes} for link, sizes in cases],
        "processes": list(LINK_PROCESSES[quick]), "no_delay": outcome.links_no_delay,
        "bench_sizes": {app: list(BENCH_SIZES.get(app, ())) for app in apps}}
    plan = plan_link_runs(quick, apps, rounds, delay, threads_per_process)
    for step, run in enumerate(plan, 1):
        record = _run_step(run.name, functools.partial(link_command, run, quick),
                           functools.partial(link_record, run, quick=quick, host=host),
                           RUN_TIMEOUT[quick] + 30, jsonl, copy, description, outcome,
                           outcome.link_failed)
        if record is None:
            continue
        outcome.link_runs += 1
        where = ("sequential reference" if run.link is None
                 else "%s on %s" % (run.config.label, run.link.option))
        print("[dsm links %d/%d] [%s] %s %s (%s sizes) round %d: %s" % (
            step, len(plan), _clock(start), run.app, where, run.sizes.upper()
            if run.sizes == "ci" else run.sizes, run.round + 1, _verdict(record)),
            file=terminal, flush=True)
    outcome.link_seconds = time.monotonic() - start
    print("postbox bench: dsm: links: %d runs on %s in %.1f s" % (
        outcome.link_runs, ", ".join(outcome.links), outcome.link_seconds),
        file=terminal, flush=True)


def run_all(out: Path, quick: bool, description: dict, terminal: TextIO, err: TextIO,
            rounds: Optional[int] = None, apps: Sequence[str] = APPS,
            threads_per_process: int = 1, rtt: bool = True, links: bool = True,
            link_rounds: Optional[int] = None,
            link_apps: Optional[Sequence[str]] = None) -> Outcome:
    """The RTT program, then the plan (plan_runs) into @out/dsm.jsonl, then
    with @links the links sub-part (run_links, @link_rounds rounds, the
    applications @link_apps or its default), then
    the summary and acceptance records; every run in @description
    (machine.json: runs)."""
    start = time.monotonic()
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    host = socket.gethostname()
    outcome = Outcome()
    description.setdefault("runs", [])
    copy = open(text, "a", encoding="utf-8")
    try:
        if rtt:
            try:
                argv = rtt_command(out, quick)
            except paths.MissingProgram as exc:
                argv = None
                outcome.missing.append(str(exc))
                outcome.rtt_failed = True
                print("postbox bench: dsm: %s" % exc, file=err, flush=True)
            if argv is not None:
                print("[dsm rtt] %s" % shlex.join(argv), file=terminal, flush=True)
                status, stdout, stderr, seconds = _run(argv, {}, RUN_TIMEOUT[quick] + 30)
                copy.write("$ %s\n%s%s" % (shlex.join(argv), stdout, stderr))
                terminal.write(stdout)
                description["runs"].append({"name": "dsm/rtt", "command": argv,
                                            "exit_status": status,
                                            "seconds": round(seconds, 3)})
                if status != 0:
                    outcome.rtt_failed = True
                    print("postbox bench: dsm: %s %s: %s" % (
                        RTT_PROGRAM, "timed out" if status is None else
                        "failed with exit status %s" % status, last_lines(stderr)),
                        file=err, flush=True)
        plan = plan_runs(quick, apps, rounds, threads_per_process)
        for step, run in enumerate(plan, 1):
            record = _run_step(run.name, functools.partial(run_command, run, quick),
                               functools.partial(run_record, run, quick=quick, host=host),
                               RUN_TIMEOUT[quick] + 30, jsonl, copy, description, outcome,
                               outcome.failed, err)
            if record is None:
                continue
            outcome.runs += 1
            print("[dsm %d/%d] [%s] %s %s round %d: %s" % (
                step, len(plan), _clock(start), run.app, run.config.label, run.round + 1,
                _verdict(record)), file=terminal, flush=True)
        machine.write(out / "machine.json", description)
        if links:
            run_links(out, quick, description, terminal, copy, outcome, link_apps, link_rounds,
                      threads_per_process)
            machine.write(out / "machine.json", description)
    finally:
        copy.close()
    append_acceptance(jsonl)
    append_link_summary(jsonl)
    outcome.seconds = time.monotonic() - start
    return outcome


def _clock(start: float) -> str:
    seconds = int(time.monotonic() - start)
    return "%d:%02d" % (seconds // 60, seconds % 60)


def append_acceptance(jsonl: Path) -> list:
    """Append to @jsonl the summary records (each application and
    configuration: median time and speedup) and the acceptance ratio
    records made from its runs; returns the acceptance records."""
    try:
        records = results.load_jsonl(jsonl) if jsonl.exists() else []
    except results.ResultsError:
        return []
    summary = dsmreport.summarize(records)
    host, now = socket.gethostname(), _now()
    made = dsmreport.acceptance_records(summary, records, host, now)
    with open(jsonl, "a", encoding="utf-8") as handle:
        for record in dsmreport.summary_records(summary, host, now):
            handle.write(json.dumps(record) + "\n")
    if made:
        with open(jsonl, "a", encoding="utf-8") as handle:
            for record in made:
                handle.write(json.dumps(record) + "\n")
    return made


def append_link_summary(jsonl: Path) -> list:
    """Append to @jsonl the links sub-part's summary records
    (dsmreport.link_summary_records) made from its runs; returns them."""
    try:
        records = results.load_jsonl(jsonl) if jsonl.exists() else []
    except results.ResultsError:
        return []
    made = dsmreport.link_summary_records(dsmreport.summarize_links(records),
                                          socket.gethostname(), _now())
    if made:
        with open(jsonl, "a", encoding="utf-8") as handle:
            for record in made:
                handle.write(json.dumps(record) + "\n")
    return made


def links_detail(outcome: Outcome) -> str:
    """The links sub-part in the part's detail: skipped and why, or its
    runs, links and failures."""
    if outcome.links_unavailable:
        return "links skipped: %s" % outcome.links_unavailable
    if not outcome.link_runs and not outcome.link_failed:
        return ""
    text = "links: %d runs on %s" % (outcome.link_runs, ", ".join(outcome.links))
    if outcome.links_no_delay:
        text += " without delay (%s)" % outcome.links_no_delay
    if outcome.link_failed:
        text += ", %d failed" % len(outcome.link_failed)
    return text + " in %.0f s" % outcome.link_seconds


def detail(outcome: Outcome, jsonl: Optional[Path] = None) -> tuple[str, str]:
    """(verdict, detail) of the dsm part: FAILED when a program was missing
    or the RTT program failed; runs of applications that fail on the DSM are
    said in the detail and the report (they are findings, not a broken
    bench), as are the acceptance verdicts."""
    parts = []
    records = []
    if jsonl is not None and jsonl.exists():
        try:
            records = results.load_jsonl(jsonl)
        except results.ResultsError:
            records = []
    if records:
        parts.append(dsmreport.summary_text(records))
    if outcome.missing:
        parts.append("not built: %s" % "; ".join(outcome.missing))
    if outcome.rtt_failed:
        parts.append("%s failed" % RTT_PROGRAM)
    if outcome.failed:
        parts.append("%d of %d runs failed" % (len(outcome.failed), outcome.runs))
    links = links_detail(outcome)
    if links:
        parts.append(links)
    parts.append("%.0f s" % outcome.seconds)
    verdict = "FAILED" if outcome.missing or outcome.rtt_failed else (
        "ok" if outcome.runs else "skipped")
    return verdict, "; ".join(parts)


def run(out: Optional[Path], quick: bool, terminal: TextIO = sys.stdout,
        rounds: Optional[int] = None, threads_per_process: int = 1) -> int:
    """`postbox bench --dsm`: the DSM part alone, then the report; returns
    the exit status."""
    from postbox import bench, report

    err = sys.stderr
    out = Path(out) if out is not None else bench.default_out_dir()
    try:
        bench.prepare_out_dir(out)
    except bench.BenchError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1
    description = machine.describe([])
    description["runs"] = []
    machine.write(out / "machine.json", description)
    print("postbox bench: results in %s; part dsm%s" % (out, " (quick)" if quick else ""),
          file=terminal, flush=True)
    try:
        outcome = run_all(out, quick, description, terminal, err, rounds=rounds,
                          threads_per_process=threads_per_process)
    except KeyboardInterrupt:
        print("\npostbox bench: interrupted; partial results in %s" % out, file=err)
        return 130
    verdict, text = detail(outcome, out / (RESULTS_NAME + ".jsonl"))
    description.setdefault("parts", []).append(
        {"name": "dsm", "verdict": verdict, "seconds": round(outcome.seconds, 3),
         "detail": text})
    machine.write(out / "machine.json", description)
    try:
        records = results.load_dir(out)
    except results.ResultsError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1
    if records:
        print("Report: %s" % report.write(out, records), file=terminal)
    print("postbox bench: dsm %s (%s)" % (verdict, text),
          file=err if verdict == "FAILED" else terminal)
    return 1 if verdict == "FAILED" or not records else 0
