"""The report's DSM section: the SPLASH-2-style applications on Postbox's DSM
and on plain threads, and the DSM's round trip (``dsm.jsonl``, issue 17).

What it reads (suite ``dsm``, written by dsmbench and bench/dsm_rtt.c):

- run records: one per run of an application (``test`` the application,
  ``config`` the build and shape, ``round``, ``median`` the parallel
  section's time in us as the program printed it, ``verified``, and for
  DSM runs ``dsm_stats``: each process's counters as POSTBOX_DSM_STATS
  printed them); a run that failed has ``status`` "failed", ``error`` and
  no time;
- postbox-dsm-rtt's records: ``dsm_page_fetch`` (the DSM's 4 KB page
  request/reply), ``raw_tcp_request_reply`` and ``raw_udp_request_reply``
  (64 B to 4 KB), and the ratio ``ratio_dsm_page_4KB_vs_raw_tcp``.

What it makes: the speedup table (each configuration's median time over
the rounds, its speedup against the sequential run: the pthreads build
with one thread), the acceptance lines of issue 17, seed 004's Table 3 for
this machine (bandwidth used, average round trip, average message size per
application, from the DSM's statistics), Table 1 (message types, counts
and sizes), Fig. 13 (round trip against size) and the speedup figures
(after Figs. 3-12), and which applications fall short and what their
statistics say about why.  The links sub-part's records (``link``, see
dsmbench) stay out of all of that: summarize_links reads them, and the
section's "On emulated links" and links_figures redraw seed 004's Figs.
3-12 from them (speedup against the link rate, the loopback value beside).
"""

from __future__ import annotations

import html
import statistics
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional, Sequence

from postbox.plot import COLORS, Figure, Series, format_value, number

SUITE = "dsm"
# the applications in seed 004's order, with the paper's names
APPS = (("fft", "FFT"), ("lu_contig", "LU-c"), ("lu_noncontig", "LU-n"), ("radix", "RADIX"),
        ("ocean", "OCEAN-c"), ("water_nsquared", "WATER-n2"), ("water_spatial", "WATER-sp"),
        ("matmult", "MATMULT"), ("sor", "SOR"))
APP_NAMES = dict(APPS)
# issue 17's acceptance: these three applications ...
ACCEPTANCE_APPS = ("matmult", "water_nsquared", "lu_contig")
# ... within this factor of their pthreads time with 2 threads, at 2
# processes on one node
LIMIT_VS_PTHREADS = 1.25
# ... and at least this speedup over the sequential run across 2 virtual nodes
LIMIT_SPEEDUP_2_NODES = 1.6
# the DSM's 4 KB round trip over raw TCP's, at most
LIMIT_RTT = 1.5
RTT_RATIO_TEST = "ratio_dsm_page_4KB_vs_raw_tcp"
RTT_TESTS = ("dsm_page_fetch", "dsm_lock_pair", "raw_tcp_request_reply",
             "raw_udp_request_reply")
# the message types of postbox_dsm_stats, in its order
MESSAGE_TYPES = ("page", "diff", "lock", "barrier", "alloc", "thread")
# seed 004, Table 3: the average message size (bytes) per application (the
# paper's other columns, bandwidth and latency per network, are its
# network's, not the application's)
SEED_MESSAGE_SIZE = {"fft": 4945.50, "lu_contig": 5976.38, "lu_noncontig": 6223.95,
                     "radix": 4886.12, "ocean": 4059.26, "water_nsquared": 197.19,
                     "water_spatial": 893.56, "matmult": 4385.72, "sor": 7442.80}
# seed 004, Table 1: Strings' messages, (event, request bytes, reply bytes);
# its page was 8 KB
SEED_TABLE1 = (("Get Page", 40, 8226), ("Lock Acquire", 36, 28), ("Lock Grant", 36, 28),
               ("Barrier Arrival", 32, 28), ("Barrier Release", 32, 28))
# what each of Postbox's message types is (docs/dsm.md)
MESSAGE_MEANING = {
    "page": "a page got from its home (one RSM get; bytes: the page)",
    "diff": "changed words toward a home: a putv on one node, a packed call without reply "
            "across nodes (bytes: the words sent)",
    "lock": "lock request, release, grant (requests on the manager's control segment)",
    "barrier": "barrier arrival with the pages released, release notice, acknowledgement",
    "alloc": "G_MALLOC, G_FREE, lock and barrier creation (requests to process 0)",
    "thread": "thread creation (the data image), completion, stop",
}


# ---- configurations -----------------------------------------------------------

@dataclass(frozen=True, order=True)
class Config:
    """How an application runs: the build, the job's shape, the threads."""

    build: str       # "pthreads" or "dsm"
    processes: int   # 1 for pthreads
    nodes: int       # 1 for pthreads
    threads: int     # -p: threads in all

    @property
    def name(self) -> str:
        """"pthreads-t2", "dsm-p2-n2-t2": the record key ``config``."""
        if self.build == "pthreads":
            return "pthreads-t%d" % self.threads
        return "dsm-p%d-n%d-t%d" % (self.processes, self.nodes, self.threads)

    @property
    def label(self) -> str:
        """A column heading."""
        if self.build == "pthreads":
            return "sequential" if self.threads == 1 else "pthreads %d threads" % self.threads
        where = "1 node" if self.nodes == 1 else "%d nodes" % self.nodes
        per = self.threads // self.processes
        return "DSM %d proc%s, %s%s" % (self.processes, "" if self.processes == 1 else "s", where,
                                        "" if per == 1 else ", %d threads each" % per)

    @property
    def sequential(self) -> bool:
        return self.build == "pthreads" and self.threads == 1


SEQUENTIAL = Config("pthreads", 1, 1, 1)


def config_of(record: dict) -> Optional[Config]:
    """The Config a run record describes, or None."""
    try:
        build = record["build"]
        if build not in ("pthreads", "dsm"):
            return None
        return Config(build, int(record.get("processes") or 1), int(record.get("nodes") or 1),
                      int(record["threads"]))
    except (KeyError, TypeError, ValueError):
        return None


# ---- records -------------------------------------------------------------------

def is_dsm(record: dict) -> bool:
    """A record of this section (suite dsm)."""
    return record.get("suite") == SUITE


def is_app_run(record: dict) -> bool:
    """A run record of an application over unshaped links (not a summary,
    not the RTT program's, not the links sub-part's)."""
    return (is_dsm(record) and record.get("kind") == "run"
            and record.get("test") in APP_NAMES and "link" not in record)


def is_link_run(record: dict) -> bool:
    """A run record of the links sub-part: an application on an emulated
    link (``link`` its --link value) or its sequential reference (``link``
    null)."""
    return (is_dsm(record) and record.get("kind") == "run"
            and record.get("test") in APP_NAMES and "link" in record)


def parse_result_line(text: str) -> Optional[dict]:
    """The last result line of an application's output ("app=NAME threads=P
    KEY=VALUE ... time_us=T verified=V"): its keys, with threads, time_us
    and verified as integers and params the keys between threads and
    time_us; None without one."""
    found = None
    for line in text.splitlines():
        words = line.strip().split()
        if not words or not words[0].startswith("app="):
            continue
        pairs = {}
        order = []
        for word in words:
            key, sep, value = word.partition("=")
            if not sep:
                break
            pairs[key] = value
            order.append(key)
        else:
            try:
                result = {"app": pairs["app"], "threads": int(pairs["threads"]),
                          "time_us": int(pairs["time_us"]), "verified": int(pairs["verified"])}
            except (KeyError, ValueError):
                continue
            result["params"] = " ".join("%s=%s" % (k, pairs[k]) for k in order
                                        if k not in ("app", "threads", "time_us", "verified"))
            found = result
    return found


STATS_PREFIX = "postbox-dsm-stats:"


def parse_stats_lines(text: str) -> list:
    """Every POSTBOX_DSM_STATS line of @text (one per process) as a dict of
    integers, ordered by process."""
    out = []
    for line in text.splitlines():
        at = line.find(STATS_PREFIX)
        if at < 0:
            continue
        entry = {}
        for word in line[at + len(STATS_PREFIX):].split():
            key, sep, value = word.partition("=")
            if sep:
                try:
                    entry[key] = int(value)
                except ValueError:
                    pass
        if "process" in entry:
            out.append(entry)
    return sorted(out, key=lambda e: e["process"])


@dataclass
class Traffic:
    """One run's DSM statistics summed over its processes."""

    processes: int = 0
    lifetime_us: float = 0.0   # the longest process lifetime
    bw_mbps: float = 0.0       # mean over processes of bytes * 8 / lifetime
    messages: dict = field(default_factory=dict)   # type -> count
    bytes: dict = field(default_factory=dict)      # type -> bytes
    round_trips: dict = field(default_factory=dict)
    round_trip_ns: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)   # read_faults, ... summed

    @property
    def total_messages(self) -> int:
        return sum(self.messages.values())

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes.values())

    @property
    def message_size(self) -> Optional[float]:
        """Average message size: bytes over messages."""
        return self.total_bytes / self.total_messages if self.total_messages else None

    @property
    def round_trip_us(self) -> Optional[float]:
        """Average round trip of a request/reply exchange, us."""
        count = sum(self.round_trips.values())
        return sum(self.round_trip_ns.values()) / count / 1e3 if count else None

    @property
    def waiting_share(self) -> Optional[float]:
        """The round trips' time over the processes' lifetimes (all summed)."""
        if not self.processes or not self.lifetime_us:
            return None
        return sum(self.round_trip_ns.values()) / 1e3 / (self.lifetime_us * self.processes)


COUNTERS = ("read_faults", "write_faults", "page_fetches", "diffs", "diff_runs", "diff_bytes",
            "invalidations", "lock_acquires", "barriers")


def traffic(stats: Sequence[dict]) -> Traffic:
    """Sum the per-process statistics of one run."""
    out = Traffic(processes=len(stats))
    rates = []
    for entry in stats:
        life = float(entry.get("lifetime_us") or 0)
        out.lifetime_us = max(out.lifetime_us, life)
        sent = 0
        for kind in MESSAGE_TYPES:
            for key, into in (("messages", out.messages), ("bytes", out.bytes),
                              ("round_trips", out.round_trips),
                              ("round_trip_ns", out.round_trip_ns)):
                value = int(entry.get("%s_%s" % (key, kind)) or 0)
                into[kind] = into.get(kind, 0) + value
                if key == "bytes":
                    sent += value
        for key in COUNTERS:
            out.counters[key] = out.counters.get(key, 0) + int(entry.get(key) or 0)
        if life > 0:
            rates.append(sent * 8 / life)
    out.bw_mbps = statistics.mean(rates) if rates else 0.0
    return out


def mean_traffic(runs: Sequence[Traffic]) -> Optional[Traffic]:
    """The mean of several runs' traffic (per-type counts averaged)."""
    runs = [t for t in runs if t.processes]
    if not runs:
        return None
    out = Traffic(processes=runs[0].processes)
    n = len(runs)
    out.lifetime_us = sum(t.lifetime_us for t in runs) / n
    out.bw_mbps = sum(t.bw_mbps for t in runs) / n
    for name in ("messages", "bytes", "round_trips", "round_trip_ns", "counters"):
        into = getattr(out, name)
        for t in runs:
            for key, value in getattr(t, name).items():
                into[key] = into.get(key, 0) + value / n
    return out


# ---- summaries -------------------------------------------------------------------

@dataclass
class Cell:
    """One application in one configuration, over the rounds."""

    app: str
    config: Config
    times: list = field(default_factory=list)   # us, verified runs
    failures: list = field(default_factory=list)  # error texts
    params: str = ""
    traffic: Optional[Traffic] = None  # mean_traffic of run_traffic, once summed up
    run_traffic: list = field(default_factory=list, repr=False, compare=False)

    @property
    def median(self) -> Optional[float]:
        return statistics.median(self.times) if self.times else None

    def add(self, record: dict) -> None:
        """Count the run @record of this cell: its error when it has no
        verified time, else its time, parameters and (a DSM run's
        statistics) traffic, into run_traffic."""
        time = number(record.get("median"))
        if record.get("status") == "failed" or time is None or not record.get("verified"):
            self.failures.append(str(record.get("error") or "no verified result"))
            return
        self.times.append(time)
        self.params = record.get("params") or self.params
        stats = record.get("dsm_stats")
        if isinstance(stats, list) and stats:
            self.run_traffic.append(traffic(stats))


@dataclass
class Summary:
    """Every cell of the run records, by application and configuration."""

    cells: dict = field(default_factory=dict)  # (app, Config) -> Cell
    configs: list = field(default_factory=list)
    apps: list = field(default_factory=list)
    rounds: int = 0
    profile: str = ""

    def cell(self, app: str, config: Config) -> Optional[Cell]:
        return self.cells.get((app, config))

    def time(self, app: str, config: Config) -> Optional[float]:
        cell = self.cell(app, config)
        return cell.median if cell else None

    def speedup(self, app: str, config: Config) -> Optional[float]:
        """The sequential run's median time over @config's."""
        seq, this = self.time(app, SEQUENTIAL), self.time(app, config)
        return seq / this if seq and this else None

    def find(self, build: str, processes: int, nodes: int) -> Optional[Config]:
        """The configuration of @build with that shape and one thread per
        process (the fewest threads per process otherwise)."""
        found = [c for c in self.configs if c.build == build and c.processes == processes
                 and c.nodes == nodes]
        return min(found, key=lambda c: c.threads) if found else None

    def pthreads(self, threads: int) -> Optional[Config]:
        found = [c for c in self.configs if c.build == "pthreads" and c.threads == threads]
        return found[0] if found else None

    def widest_off_node(self) -> Optional[Config]:
        """The DSM configuration across nodes with the most processes (Table 3's)."""
        found = [c for c in self.configs if c.build == "dsm" and c.nodes > 1]
        return max(found, key=lambda c: (c.processes, -c.threads)) if found else None


def summarize(records: Iterable[dict]) -> Summary:
    """The cells of the run records: times of the verified runs, failures,
    and the mean traffic of the DSM runs."""
    out = Summary()
    rounds = set()
    for r, config in _configured(records, is_app_run):
        out.profile = r.get("profile") or out.profile
        _add_run(out.cells, (r["test"], config), config, r, rounds)
    for cell in out.cells.values():
        cell.traffic = mean_traffic(cell.run_traffic)
    out.configs = sorted({c for _, c in out.cells}, key=_config_order)
    order = [a for a, _ in APPS]
    out.apps = sorted({a for a, _ in out.cells}, key=lambda a: order.index(a))
    out.rounds = len(rounds)
    return out


def _configured(records: Iterable[dict], is_run: Callable[[dict], bool]) -> Iterator[tuple]:
    """(record, its Config) of each of @records that @is_run and has a
    configuration."""
    for r in records:
        if is_run(r):
            config = config_of(r)
            if config is not None:
                yield r, config


def _add_run(cells: dict, key: tuple, config: Config, record: dict, rounds: set) -> None:
    """Count the run @record into cells[@key] (made, a Cell of its
    application and @config, at its first run) and its round into @rounds."""
    cell = cells.get(key)
    if cell is None:
        cell = cells[key] = Cell(record["test"], config)
    if record.get("round") is not None:
        rounds.add(record.get("round"))
    cell.add(record)


def _config_order(c: Config) -> tuple:
    return (c.build != "pthreads", c.processes, c.nodes, c.threads)


# ---- emulated links (seed 004's Figs. 3-12) ----------------------------------------

# seed 004's speedup figure of each application, in the order its text cites
# them: Figs. 3 to 7 LU-c, WATER-n2, WATER-sp, MATMULT (and MRI, not ported),
# 8, 9 and 12 FFT, LU-n and SOR, 10 and 11 RADIX and OCEAN-c
SEED_SPEEDUP_FIGURE = {"lu_contig": 3, "water_nsquared": 4, "water_spatial": 5, "matmult": 6,
                       "fft": 8, "lu_noncontig": 9, "radix": 10, "ocean": 11, "sor": 12}
SIZES_LABEL = {"ci": "CI size", "bench": "bench size"}


@dataclass(frozen=True, order=True)
class LinkCase:
    """An emulated link and the sizes the applications ran at on it."""

    rate: int        # bit/s
    delay_us: int
    sizes: str       # "ci" or "bench"
    link: str        # the --link value

    @property
    def label(self) -> str:
        """A column heading: "100 Mbit/s, 50 us (CI size)"."""
        return "%s%s (%s)" % (rate_label(self.rate),
                              ", %d us" % self.delay_us if self.delay_us else "",
                              SIZES_LABEL.get(self.sizes, self.sizes))


def rate_label(rate: float) -> str:
    """@rate (bit/s) for people: 10 Mbit/s, 1 Gbit/s."""
    for unit, scale in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if rate >= scale:
            return "%g %s" % (rate / scale, unit)
    return "%g bit/s" % rate


@dataclass
class LinkSummary:
    """The links sub-part's cells, by application, link case and
    configuration, and the sequential times they are measured against."""

    cells: dict = field(default_factory=dict)  # (app, LinkCase, Config) -> Cell
    # (app, params) -> the sequential times at those sizes: the main plan's
    # runs and the sub-part's reference runs
    sequential: dict = field(default_factory=dict)
    base: Summary = field(default_factory=Summary)  # the unshaped runs
    cases: list = field(default_factory=list)
    configs: list = field(default_factory=list)
    apps: list = field(default_factory=list)
    rounds: int = 0

    def cell(self, app: str, case: LinkCase, config: Config) -> Optional[Cell]:
        return self.cells.get((app, case, config))

    def sequential_time(self, app: str, params: str) -> Optional[float]:
        """The median of the sequential runs of @app at @params."""
        times = self.sequential.get((app, params))
        return statistics.median(times) if times else None

    def speedup(self, app: str, case: LinkCase, config: Config) -> Optional[float]:
        """The sequential median at the same sizes over the cell's median."""
        cell = self.cell(app, case, config)
        if cell is None or cell.median is None:
            return None
        seq = self.sequential_time(app, cell.params)
        return seq / cell.median if seq else None

    def params(self, app: str, sizes: str) -> str:
        """The application's size parameters at @sizes, as its runs printed them."""
        return next((cell.params for (a, case, _), cell in sorted(
            self.cells.items(), key=lambda item: item[0][1])
            if a == app and case.sizes == sizes and cell.params), "")

    def loopback(self, app: str, config: Config, params: str) -> Optional[float]:
        """The unshaped run's speedup in @config (the main plan's), when it
        ran at the same sizes (@params); else None."""
        cell = self.base.cell(app, config)
        if cell is None or cell.params != params:
            return None
        return self.base.speedup(app, config)


def summarize_links(records: Iterable[dict]) -> LinkSummary:
    """The links sub-part's cells (verified times, failures, mean traffic)
    and the sequential times by size: the main plan's sequential runs and
    the sub-part's reference runs."""
    records = list(records)
    out = LinkSummary(base=summarize(records))
    rounds = set()
    for app in out.base.apps:
        cell = out.base.cell(app, SEQUENTIAL)
        if cell is not None and cell.times:
            out.sequential.setdefault((app, cell.params), []).extend(cell.times)
    for r, config in _configured(records, is_link_run):
        time = number(r.get("median"))
        ok = r.get("status") != "failed" and time is not None and r.get("verified")
        app = r["test"]
        if r.get("link") is None:
            if ok and config.sequential:
                out.sequential.setdefault((app, r.get("params") or ""), []).append(time)
            continue
        rate = number(r.get("link_rate"))
        if rate is None:
            continue
        case = LinkCase(int(rate), int(number(r.get("link_delay_us")) or 0),
                        str(r.get("link_sizes") or ""), str(r["link"]))
        _add_run(out.cells, (app, case, config), config, r, rounds)
    for cell in out.cells.values():
        cell.traffic = mean_traffic(cell.run_traffic)
    out.cases = sorted({case for _, case, _ in out.cells})
    out.configs = sorted({c for _, _, c in out.cells}, key=_config_order)
    order = [a for a, _ in APPS]
    out.apps = sorted({a for a, _, _ in out.cells}, key=lambda a: order.index(a))
    out.rounds = len(rounds)
    return out


def link_summary_records(summary: LinkSummary, host: Optional[str] = None,
                         timestamp: Optional[str] = None) -> list:
    """One record per application, link case and configuration of the
    links sub-part (``kind`` link_summary): the median time over the
    verified runs, min and max, the speedup against the sequential median
    at the same sizes (``sequential_us``), the runs that failed, and the
    unshaped run's speedup at the same sizes (``loopback_speedup``)."""
    out = []
    for (app, case, config), cell in sorted(
            summary.cells.items(), key=lambda item: (item[0][0], item[0][1],
                                                     _config_order(item[0][2]))):
        record = {
            "suite": SUITE, "kind": "link_summary", "test": app, "config": config.name,
            "build": config.build, "library": "postbox", "transport": "tcp",
            "placement": "off-node", "ranks": config.processes,
            "processes": config.processes, "nodes": config.nodes, "threads": config.threads,
            "link": case.link, "link_rate": case.rate, "link_delay_us": case.delay_us,
            "link_sizes": case.sizes, "pairs": 0, "size": 0, "metric": "time", "unit": "us",
            "median": cell.median, "min": min(cell.times) if cell.times else None,
            "max": max(cell.times) if cell.times else None, "reps": len(cell.times),
            "probe_before": None, "probe_after": None, "settled": None, "state": "unknown",
            "params": cell.params, "sequential_us": summary.sequential_time(app, cell.params),
            "speedup": summary.speedup(app, case, config),
            "loopback_speedup": summary.loopback(app, config, cell.params),
            "failed_runs": len(cell.failures),
        }
        if host:
            record["host"] = host
        if timestamp:
            record["timestamp"] = timestamp
        out.append(record)
    return out


# ---- acceptance ---------------------------------------------------------------------

@dataclass
class Line:
    """One acceptance line: what, the value, the limit, the verdict."""

    what: str
    value: Optional[float]
    op: str
    limit: float
    detail: str = ""

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "missing"
        ok = self.value <= self.limit if self.op == "<=" else self.value >= self.limit
        return "pass" if ok else "FAIL"

    def text(self) -> str:
        return "%s: %s %s %g: %s%s" % (
            self.what, "-" if self.value is None else "%.3f" % self.value, self.op, self.limit,
            self.verdict, " (%s)" % self.detail if self.detail else "")


def rtt_ratio(records: Iterable[dict]) -> Optional[dict]:
    """postbox-dsm-rtt's ratio record across nodes (the last one), else any."""
    found = [r for r in records if is_dsm(r) and r.get("test") == RTT_RATIO_TEST]
    off = [r for r in found if (r.get("nodes") or 1) > 1]
    return (off or found or [None])[-1]


def acceptance(summary: Summary, records: Sequence[dict]) -> list:
    """Issue 17's acceptance lines."""
    lines = []
    dsm2 = summary.find("dsm", 2, 1)
    dsm2x2 = summary.find("dsm", 2, 2)
    pt2 = summary.pthreads(2)
    for app in ACCEPTANCE_APPS:
        name = APP_NAMES[app]
        value = detail = None
        if dsm2 and pt2:
            a, b = summary.time(app, dsm2), summary.time(app, pt2)
            if a and b:
                value = a / b
                detail = "%.1f ms / %.1f ms" % (a / 1e3, b / 1e3)
        lines.append(Line("%s: DSM 2 processes on one node over pthreads 2 threads" % name,
                          value, "<=", LIMIT_VS_PTHREADS, detail or ""))
    for app in ACCEPTANCE_APPS:
        name = APP_NAMES[app]
        value = summary.speedup(app, dsm2x2) if dsm2x2 else None
        detail = ""
        if value is not None:
            detail = "%.1f ms sequential / %.1f ms" % (summary.time(app, SEQUENTIAL) / 1e3,
                                                        summary.time(app, dsm2x2) / 1e3)
        lines.append(Line("%s: speedup across 2 virtual nodes (2 processes) over the "
                          "sequential run" % name, value, ">=", LIMIT_SPEEDUP_2_NODES, detail))
    ratio = rtt_ratio(records)
    value = number(ratio.get("median")) if ratio else None
    detail = ""
    if ratio is not None:
        detail = "%s us / %s us, %s; pairs %s to %s%s" % (
            format_value(ratio.get("dsm_us")), format_value(ratio.get("raw_tcp_us")),
            "across %s nodes" % ratio.get("nodes") if (ratio.get("nodes") or 1) > 1
            else "on one node", format_value(ratio.get("min")), format_value(ratio.get("max")),
            "; fastest over fastest %s" % format_value(ratio.get("ratio_of_minima"))
            if number(ratio.get("ratio_of_minima")) is not None else "")
    lines.append(Line("DSM 4 KB page round trip over raw TCP 4 KB request/reply", value, "<=",
                      LIMIT_RTT, detail))
    return lines


# the application lines hold at the bench sizes; the quick profile runs the
# applications at their CI sizes, whose parallel sections last 0.2-21 ms,
# too short for a page fetch or a barrier across nodes to pay off
QUICK_LIMIT_NOTE = ("quick profile, CI sizes too small to gain; the limit is judged at "
                    "the bench sizes (postbox bench --suite dsm; docs/dsm.md)")


def acceptance_records(summary: Summary, records: Sequence[dict], host: Optional[str] = None,
                       timestamp: Optional[str] = None) -> list:
    """The application lines of acceptance() as ratio records (suite dsm,
    with target and target_op, so that the report's acceptance table shows
    them; from runs of the quick profile with limit_note, so that they are
    shown but not judged); the RTT ratio is postbox-dsm-rtt's own record."""
    out = []
    for line, app in zip(acceptance(summary, records)[:2 * len(ACCEPTANCE_APPS)],
                         ACCEPTANCE_APPS * 2):
        if line.value is None:
            continue
        speedup = line.op == ">="
        record = {
            "suite": SUITE, "kind": "acceptance", "library": "postbox",
            "test": ("speedup_dsm_2procs_2nodes_%s" if speedup
                     else "ratio_dsm_2procs_vs_pthreads_2threads_%s") % app,
            "transport": "tcp" if speedup else "shm",
            "placement": "off-node" if speedup else "on-node", "ranks": 2,
            "nodes": 2 if speedup else 1, "pairs": 0, "size": 0, "metric": "ratio",
            "unit": "x", "median": line.value, "min": None, "max": None,
            "reps": summary.rounds, "probe_before": None, "probe_after": None,
            "target": line.limit, "target_op": line.op,
            "numerator": "sequential time" if speedup else "DSM time, 2 processes on one node",
            "denominator": "DSM time, 2 processes on 2 nodes" if speedup
            else "pthreads time, 2 threads",
            "note": "medians over %d interleaved rounds (%s)" % (summary.rounds, line.detail),
        }
        if summary.profile == "quick":
            record["limit_note"] = QUICK_LIMIT_NOTE
        if host:
            record["host"] = host
        if timestamp:
            record["timestamp"] = timestamp
        out.append(record)
    return out


def summary_records(summary: Summary, host: Optional[str] = None,
                    timestamp: Optional[str] = None) -> list:
    """One record per application and configuration (``kind`` summary):
    the median time over the verified runs, min and max, the rounds, the
    speedup against the sequential median, and the runs that failed."""
    out = []
    for (app, config), cell in sorted(summary.cells.items(),
                                      key=lambda item: (item[0][0], _config_order(item[0][1]))):
        record = {
            "suite": SUITE, "kind": "summary", "test": app, "config": config.name,
            "build": config.build, "library": "postbox" if config.build == "dsm" else "pthreads",
            "transport": "threads" if config.build == "pthreads"
            else ("tcp" if config.nodes > 1 else "shm"),
            "placement": "off-node" if config.nodes > 1 else "on-node",
            "ranks": config.processes, "processes": config.processes, "nodes": config.nodes,
            "threads": config.threads, "pairs": 0, "size": 0, "metric": "time", "unit": "us",
            "median": cell.median, "min": min(cell.times) if cell.times else None,
            "max": max(cell.times) if cell.times else None, "reps": len(cell.times),
            "probe_before": None, "probe_after": None, "params": cell.params,
            "speedup": summary.speedup(app, config), "failed_runs": len(cell.failures),
        }
        if host:
            record["host"] = host
        if timestamp:
            record["timestamp"] = timestamp
        out.append(record)
    return out


def shortfalls(summary: Summary) -> list:
    """(application, text) for every application whose DSM runs across
    nodes are no faster than the sequential run, or that failed, with what
    its statistics say: the share of its processes' lifetime spent in
    round trips, what it fetched, locked and diffed."""
    out = []
    off = summary.widest_off_node()
    for app in summary.apps:
        name = APP_NAMES[app]
        failed = [(c, cell) for (a, c), cell in summary.cells.items() if a == app and
                  cell.failures and not cell.times]
        for config, cell in sorted(failed, key=lambda item: _config_order(item[0])):
            out.append((name, "%s did not run: %s" % (config.label, cell.failures[-1])))
        if off is None:
            continue
        speedup = summary.speedup(app, off)
        cell = summary.cell(app, off)
        if speedup is None or speedup >= 1.0 or cell is None:
            continue
        parts = ["speedup %.2f with %s" % (speedup, off.label)]
        t = cell.traffic
        if t is not None:
            share = t.waiting_share
            if share is not None:
                parts.append("%.0f%% of the processes' lifetime in request/reply round trips"
                             % (100 * share))
            parts.append("%d page fetches, %d diffs (%d B), %d lock acquires, %d barriers, "
                         "%d invalidations" % tuple(
                             int(t.counters.get(k, 0)) for k in (
                                 "page_fetches", "diffs", "diff_bytes", "lock_acquires",
                                 "barriers", "invalidations")))
            seq = summary.time(app, SEQUENTIAL)
            if seq and t.lifetime_us:
                parts.append("the sequential parallel section lasts %.1f ms" % (seq / 1e3))
        out.append((name, "; ".join(parts)))
    return out


def summary_text(records: Sequence[dict]) -> str:
    """The part's detail line: the acceptance verdicts and the failures."""
    summary = summarize(records)
    lines = acceptance(summary, records)
    passed = sum(1 for line in lines if line.verdict == "pass")
    failed_cells = [(a, c) for (a, c), cell in summary.cells.items()
                    if cell.failures and not cell.times]
    if summary.profile == "quick":
        # the applications' lines come first, the round trip's last
        judged = lines[2 * len(ACCEPTANCE_APPS):]
        text = "acceptance %d/%d judged pass (the %d application lines not judged at the " \
               "quick profile's CI sizes)" % (sum(1 for line in judged if line.verdict == "pass"),
                                               len(judged), len(lines) - len(judged))
    else:
        text = "acceptance %d/%d pass" % (passed, len(lines))
    ratio = rtt_ratio(records)
    if ratio is not None and number(ratio.get("median")) is not None:
        text += "; 4 KB DSM/raw TCP round trip %.2f" % number(ratio.get("median"))
    if failed_cells:
        text += "; did not run: %s" % ", ".join(
            "%s %s" % (APP_NAMES.get(a, a), c.name) for a, c in sorted(failed_cells))
    return text


# ---- the page -------------------------------------------------------------------------

def _td(value, fmt: str = "%.2f") -> str:
    x = number(value)
    return "<td>%s</td>" % ("-" if x is None else html.escape(fmt % x))


def _verdict_html(verdict: str) -> str:
    cls = {"pass": "ok", "FAIL": "fail", "missing": "fail"}.get(verdict, "")
    return '<span class="%s">%s</span>' % (cls, html.escape(verdict))


def _speedup_table(summary: Summary) -> list:
    esc = html.escape
    out = ['<table class="dsm-speedup"><tr><th class="text">application</th>'
           '<th class="text">size</th>']
    for c in summary.configs:
        out.append("<th>%s (ms)</th>" % esc(c.label))
        if not c.sequential:
            out.append("<th>speedup</th>")
    out.append("</tr>")
    for app in summary.apps:
        params = next((cell.params for (a, _), cell in summary.cells.items()
                       if a == app and cell.params), "")
        row = ['<tr><td class="text">%s</td><td class="text">%s</td>'
               % (esc(APP_NAMES[app]), esc(params))]
        for c in summary.configs:
            cell = summary.cell(app, c)
            if cell is not None and not cell.times and cell.failures:
                row.append('<td class="fail" colspan="%d">failed</td>'
                           % (1 if c.sequential else 2))
                continue
            t = summary.time(app, c)
            row.append(_td(None if t is None else t / 1e3, "%.2f"))
            if not c.sequential:
                row.append(_td(summary.speedup(app, c), "%.2f"))
        row.append("</tr>")
        out.append("".join(row))
    out.append("</table>")
    return out


def _table3(summary: Summary) -> list:
    esc = html.escape
    off = summary.widest_off_node()
    if off is None:
        return ["<p>No DSM run across nodes: no Table 3.</p>"]
    out = ["<p>From the DSM's statistics (POSTBOX_DSM_STATS) of the runs with %s, the mean "
           "over the rounds. BW: the bytes a process sent (pages fetched counted at the "
           "fetcher) over its lifetime, the mean over processes (Mb/s, as the seed's "
           "per-task figure); round trip: every request/reply exchange with another "
           "process (page gets and requests to a control segment; diffs are one-way, "
           "putvs on one node and calls without a reply across nodes, and not counted), "
           "the time the requester waited; message size: bytes over "
           "messages, all types. Seed 004's average message size (16 tasks, 8 KB pages) "
           "beside it.</p>" % esc(off.label),
           '<table class="dsm-table3"><tr><th class="text">application</th><th>BW (Mb/s)</th>'
           '<th>average round trip (us)</th><th>round trips</th><th>messages</th>'
           '<th>average message size (B)</th><th>seed 004 (B)</th>'
           '<th>share of lifetime in round trips</th></tr>']
    for app in summary.apps:
        cell = summary.cell(app, off)
        t = cell.traffic if cell else None
        if t is None:
            out.append('<tr><td class="text">%s</td><td class="text" colspan="7">no statistics'
                       '</td></tr>' % esc(APP_NAMES[app]))
            continue
        share = t.waiting_share
        out.append('<tr><td class="text">%s</td>%s%s%s%s%s%s%s</tr>'
                   % (esc(APP_NAMES[app]), _td(t.bw_mbps), _td(t.round_trip_us, "%.1f"),
                      _td(sum(t.round_trips.values()), "%.0f"), _td(t.total_messages, "%.0f"),
                      _td(t.message_size, "%.1f"), _td(SEED_MESSAGE_SIZE.get(app), "%.1f"),
                      _td(None if share is None else 100 * share, "%.1f%%")))
    out.append("</table>")
    return out


def _table1(summary: Summary) -> list:
    esc = html.escape
    off = summary.widest_off_node()
    out = ['<table class="dsm-table1-seed"><tr><th class="text">Strings event (seed 004)</th>'
           '<th>request (B)</th><th>reply (B)</th></tr>']
    for event, req, rep in SEED_TABLE1:
        out.append('<tr><td class="text">%s</td><td>%d</td><td>%d</td></tr>'
                   % (esc(event), req, rep))
    out.append("</table>")
    if off is None:
        return out
    out.append("<p>Postbox's message types, with %s (messages and bytes summed over the "
               "processes, the mean over the rounds; average bytes per message):</p>"
               % esc(off.label))
    out.append('<table class="dsm-table1"><tr><th class="text">type</th>'
               '<th class="text">what</th>'
               + "".join("<th>%s</th>" % esc(APP_NAMES[a]) for a in summary.apps) + "</tr>")
    for kind in MESSAGE_TYPES:
        row = ['<tr><td class="text">%s</td><td class="text">%s</td>'
               % (esc(kind), esc(MESSAGE_MEANING[kind]))]
        for app in summary.apps:
            cell = summary.cell(app, off)
            t = cell.traffic if cell else None
            if t is None:
                row.append("<td>-</td>")
                continue
            n, b = t.messages.get(kind, 0), t.bytes.get(kind, 0)
            row.append("<td>%s</td>" % esc("%.0f (%.0f B)" % (n, b / n) if n else "0"))
        out.append("".join(row) + "</tr>")
    out.append("</table>")
    return out


def _rtt_table(records: Sequence[dict]) -> list:
    esc = html.escape
    rtt = [r for r in records if is_dsm(r) and r.get("test") in RTT_TESTS]
    if not rtt:
        return ["<p>postbox-dsm-rtt did not run.</p>"]
    out = ['<table class="dsm-rtt"><tr><th class="text">test</th><th class="text">nodes</th>'
           '<th>reply (B)</th><th>median (us)</th><th>min</th><th>max</th></tr>']
    for r in sorted(rtt, key=lambda r: (RTT_TESTS.index(r["test"]), r.get("nodes") or 1,
                                        r.get("size") or 0)):
        out.append('<tr><td class="text">%s</td><td class="text">%s</td><td>%s</td>%s%s%s</tr>'
                   % (esc(r["test"]), esc(str(r.get("nodes"))), esc(str(r.get("size"))),
                      _td(r.get("median")), _td(r.get("min")), _td(r.get("max"))))
    out.append("</table>")
    return out


def _links_table(summary: LinkSummary) -> list:
    esc = html.escape
    rates = sorted({(c.rate, c.delay_us) for c in summary.cases})
    out = ['<table class="dsm-links"><tr><th class="text">application</th>'
           '<th class="text">size</th><th class="text">DSM</th><th>loopback speedup</th>']
    for rate, delay in rates:
        name = rate_label(rate) + (", %d us" % delay if delay else "")
        out.append("<th>%s (ms)</th><th>speedup</th>" % esc(name))
    out.append("</tr>")
    for app in summary.apps:
        for sizes in sorted({c.sizes for c in summary.cases}, key=lambda x: x != "ci"):
            params = summary.params(app, sizes)
            for config in summary.configs:
                cases = {(c.rate, c.delay_us): c for c in summary.cases if c.sizes == sizes}
                if not any(summary.cell(app, c, config) for c in cases.values()):
                    continue
                row = ['<tr><td class="text">%s</td><td class="text">%s (%s)</td>'
                       '<td class="text">%s</td>%s'
                       % (esc(APP_NAMES[app]), esc(params), esc(SIZES_LABEL.get(sizes, sizes)),
                          esc(config.label),
                          _td(summary.loopback(app, config, params), "%.3g"))]
                for key in rates:
                    case = cases.get(key)
                    cell = summary.cell(app, case, config) if case else None
                    if cell is not None and not cell.times and cell.failures:
                        row.append('<td class="fail" colspan="2" title="%s">failed</td>'
                                   % esc(cell.failures[-1]))
                        continue
                    t = cell.median if cell else None
                    row.append(_td(None if t is None else t / 1e3, "%.2f"))
                    row.append(_td(summary.speedup(app, case, config) if case else None,
                                   "%.3g"))
                out.append("".join(row) + "</tr>")
    out.append("</table>")
    return out


def links_section(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """The DSM section's part on emulated links (after seed 004's Figs.
    3-12): what was run, the limits of the emulation, and the table of
    times and speedups; empty without the links sub-part's records."""
    esc = html.escape
    summary = summarize_links(records)
    links = (description or {}).get("dsm_links") or {}
    if not summary.cells:
        if links.get("skipped"):
            return ['<h3 id="dsm-links">On emulated links (seed 004 Figs. 3-12)</h3>',
                    "<p>Not run: %s.</p>" % esc(links["skipped"])]
        return []
    cores = (description or {}).get("cores")
    delays = {c.delay_us for c in summary.cases}
    no_delay = links.get("no_delay") or ""
    out = ['<h3 id="dsm-links">On emulated links (seed 004 Figs. 3-12)</h3>',
           "<p>Each application's DSM build across 2 virtual nodes under <code>postbox run "
           "--nodes 2 --netns --link RATE[,DELAY]</code> (docs/launch.md, \"Emulated "
           "links\"), %d interleaved round%s: each node in a network namespace of its own, "
           "both ends of its veth pair shaped by the kernel's traffic control (a tbf at RATE "
           "each way%s). Speedups are against the sequential run of the same bench run at the "
           "same size; the loopback column is the unshaped run across 2 virtual nodes of the "
           "same bench run, where it ran that size. The emulation slows the links only: the "
           "processes of both nodes still run on this one machine's %s, which do all the "
           "computing and both ends' protocol work, so a link only ever makes the runs slower "
           "than the machine's own loopback%s. "
           "Seed 004 drew each application's speedup against the nodes of its 10 Mb/s "
           "Ethernet, 100 Mb/s FastEthernet and 155 Mb/s ATM clusters; here the axis is the "
           "link rate, a series per process count and size, the loopback value dashed.</p>"
           % (summary.rounds, "" if summary.rounds == 1 else "s",
              "" if delays == {0} else ", a one-way delay (netem) on the hub's side",
              "%s cores" % cores if cores else "cores",
              "" if not any(c.processes > 2 for c in summary.configs) else
              ", and 4 processes share them")]
    if delays == {0}:
        out.append("<p>The links have no delay%s.</p>"
                   % (": %s" % esc(no_delay) if no_delay else ""))
    if any(c.sizes == "ci" for c in summary.cases) and any(c.sizes == "bench"
                                                           for c in summary.cases):
        out.append("<p>The CI sizes run on every link; the bench sizes only on the fast "
                   "ones: at 10 Mbit/s an application at the seed's size moves pages for "
                   "minutes (LU-n 200 s).</p>")
    out += _links_table(summary)
    return out


def section(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """The page's "Distributed shared memory" section; empty without DSM records."""
    esc = html.escape
    mine = [r for r in records if is_dsm(r)]
    if not mine:
        return []
    summary = summarize(mine)
    out = ["<h2>Distributed shared memory (issue 17)</h2>",
           "<p>The SPLASH-2-style applications of apps/splash, one source built on plain "
           "threads (<code>&lt;app&gt;-pthreads</code>) and on Postbox's DSM "
           "(<code>&lt;app&gt;-dsm</code>, under <code>postbox run -n P [--nodes 2]</code>, "
           "one thread per process unless said), %d interleaved round%s (%s profile); times "
           "are each program's parallel section (between its first and last barrier, as it "
           "prints it), medians over the rounds; speedups against the sequential run (the "
           "pthreads build with 1 thread). <code>dsm.jsonl</code>, <code>dsm.txt</code>.</p>"
           % (summary.rounds, "" if summary.rounds == 1 else "s",
              esc(summary.profile or "unknown"))]
    out.append('<h3 id="dsm-acceptance">Acceptance</h3>')
    quick = summary.profile == "quick"
    if quick:
        out.append("<p>The application lines are not judged here: %s.</p>"
                   % esc(QUICK_LIMIT_NOTE))
    out.append('<table class="dsm-acceptance"><tr><th class="text">figure</th><th>value</th>'
               '<th class="text">limit</th><th class="text">verdict</th>'
               '<th class="text">from</th></tr>')
    lines = acceptance(summary, mine)
    for k, line in enumerate(lines):
        # the applications' lines come first, the round trip's last
        verdict = ("not judged" if quick and k < 2 * len(ACCEPTANCE_APPS)
                   else _verdict_html(line.verdict))
        out.append('<tr><td class="text">%s</td>%s<td class="text">%s %g</td>'
                   '<td class="text">%s</td><td class="text">%s</td></tr>'
                   % (esc(line.what), _td(line.value, "%.3f"), esc(line.op), line.limit,
                      verdict, esc(line.detail)))
    out.append("</table>")
    falls = shortfalls(summary)
    if falls:
        out.append('<h3 id="dsm-shortfalls">Where the DSM falls short</h3><ul>')
        for name, text in falls:
            out.append("<li><b>%s</b>: %s</li>" % (esc(name), esc(text)))
        out.append("</ul><p>Seed 004 found FFT, LU-n and SOR bandwidth-bound on its "
                   "networks; docs/dsm.md discusses these figures.</p>")
    out.append('<h3 id="dsm-speedup">Times and speedups</h3>')
    out += _speedup_table(summary)
    out += links_section(mine, description)
    out.append('<h3 id="dsm-table3">Seed 004 Table 3 for this machine</h3>')
    out += _table3(summary)
    out.append('<h3 id="dsm-table1">Seed 004 Table 1: message types</h3>')
    out += _table1(summary)
    out.append('<h3 id="dsm-rtt">Round trips (Fig. 13)</h3>')
    out.append("<p>postbox-dsm-rtt: the DSM's page request/reply (a read fault on a 4 KB "
               "page homed on the other process: fault, RSM get, page mapped) and a lock "
               "acquired and released whose manager is the other process "
               "(<code>dsm_lock_pair</code>: two requests on its control segment and a read "
               "of its release log) beside raw TCP and UDP request/reply (40 B requests, "
               "replies of the size) between the same two processes, full round trips.</p>")
    out += _rtt_table(mine)
    return out


def figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """Fig. 13 (round trip against size) and the speedup figures (speedup
    against processes, on one node and across 2 virtual nodes)."""
    mine = [r for r in records if is_dsm(r)]
    out = []
    rtt = [r for r in mine if r.get("test") in RTT_TESTS and number(r.get("median"))]
    if rtt:
        series = []
        for test, label in (("raw_udp_request_reply", "raw UDP"),
                            ("raw_tcp_request_reply", "raw TCP"),
                            ("dsm_page_fetch", "DSM page fetch"),
                            ("dsm_lock_pair", "DSM lock + unlock (2 requests)")):
            pts = sorted((float(r["size"]), float(r["median"]), True)
                         for r in rtt if r["test"] == test)
            if pts:
                series.append(Series(label, pts))
        out.append(Figure("Seed 004 Fig. 13: request/reply round trip against size",
                          "The DSM's page fetch (4 KB) and a lock acquired and released (its "
                          "manager the other process: two 40 B requests and a read of the "
                          "manager's release log) beside raw UDP and TCP request/reply between "
                          "the same two processes in the same run.",
                          "reply size (bytes)", "round trip (us)", series, name="dsm-fig13", seed="004-fig-13",
                          source=["postbox run -n 2 --nodes 2 build/bin/postbox-dsm-rtt"]))
    out += links_figures(mine)
    summary = summarize(mine)
    for nodes, title in ((1, "on one node"), (2, "across 2 virtual nodes")):
        series = []
        for app in summary.apps:
            pts = []
            for c in summary.configs:
                if c.build != "dsm" or c.threads != c.processes:
                    continue
                if c.nodes != nodes and not (nodes == 2 and c.processes == 1):
                    continue
                s = summary.speedup(app, c)
                if s is not None:
                    pts.append((float(c.processes), s, True))
            if len(pts) > 1:
                series.append(Series(APP_NAMES[app], sorted(pts)))
        if series:
            procs = sorted({p[0] for s in series for p in s.points})
            out.append(Figure("DSM speedup %s (after seed 004 Figs. 3-12)" % title,
                              "Speedup over the sequential run against the DSM's processes "
                              "(one thread each) %s; 1 process is on one node." % title,
                              "processes", "speedup", series,
                              references=[("ideal 2x", 2.0)] if 2.0 in procs else [],
                              name="dsm-speedup-%dnode" % nodes, xticks=procs))
    return out


def links_figures(records: Sequence[dict]) -> list:
    """Seed 004's Figs. 3-12 redrawn: per application, the speedup over
    the sequential run against the link rate, a series per process count
    and size, the unshaped loopback value of each as a dashed line of its
    colour."""
    summary = summarize_links(records)
    out = []
    if not summary.cells:
        return out
    rates = sorted({c.rate for c in summary.cases})
    ticks = [rate / 1e6 for rate in rates]
    colors = {}
    for sizes in sorted({c.sizes for c in summary.cases}, key=lambda x: x != "ci"):
        for config in summary.configs:
            colors[(sizes, config)] = COLORS[len(colors) % len(COLORS)]
    for app in summary.apps:
        series = []
        for (sizes, config), color in colors.items():
            pts = []
            for case in summary.cases:
                if case.sizes != sizes:
                    continue
                speedup = summary.speedup(app, case, config)
                if speedup is not None:
                    pts.append((case.rate / 1e6, speedup, True))
            if not pts:
                continue
            label = "%d procs, %s" % (config.processes, SIZES_LABEL.get(sizes, sizes))
            series.append(Series(label, sorted(pts), color=color))
            loop = summary.loopback(app, config, summary.params(app, sizes))
            if loop is not None:
                series.append(Series("%s, loopback" % label, [(ticks[0], loop, True),
                                                               (ticks[-1], loop, True)],
                                     color=color, dashed=True, markers=False))
        if not series:
            continue
        number_ = SEED_SPEEDUP_FIGURE.get(app)
        out.append(Figure(
            "Seed 004 Fig. %s: %s, DSM speedup against link rate"
            % (number_ if number_ else "3-12", APP_NAMES[app]),
            "%s's DSM build across 2 virtual nodes on emulated links (postbox run --netns "
            "--link), its speedup over the sequential run at the same size; dashed: the "
            "same run over unshaped loopback. One machine's cores do all the work: the links "
            "only slow the traffic." % APP_NAMES[app],
            "link rate (Mbit/s)", "speedup over sequential", series,
            references=[("sequential (1x)", 1.0)], name="dsm-links-%s" % app,
            xticks=ticks, seed="004-fig-%d" % number_ if number_ else "",
            source=["postbox run -n P --nodes 2 --netns --link RATE build/bin/%s-dsm -p P"
                    % app]))
    return out

