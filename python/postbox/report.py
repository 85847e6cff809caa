"""``postbox report DIR``: DIR/index.html from the results in DIR.

One self-contained page (inline CSS and SVG, no scripts, nothing fetched):
the machine, the acceptance ratios, plots in the manner of the papers'
figures, then one table per test.  Records marked unsettled (the machine
changed core-to-core state during the measurement) are drawn hollow grey in
the figures and left out of the library-against-library ratios.

From ``p2p.jsonl`` (bench/mpi_p2p.c): latency against size per mode, every
MPI library a line on the same axes, bandwidth (uni, bi), and the table of
median ratios library against library.  From ``net.jsonl``: raw TCP/UDP
half round trips beside the RSM ping-pong, and TCP stream bandwidth.  From
``rsm-net*.jsonl`` (postbox-rsm-net-bench, records with a ``config``): the
RSM tcp transport against raw TCP/UDP between the same two virtual nodes,
latency and bandwidth, one pair of figures per config (loopback, netns),
with the two tcp ratios and their targets.  Each figure names the commands
and library versions that produced it (from ``machine.json``) and is also
written as ``fig-<name>.svg`` and, with Pillow (a dependency of the tools'
venv), ``fig-<name>.png``: both drawn from the same list of marks
(postbox.plot), so they cannot disagree.  The p2p figures come on-node and
for the network path, with multipair (N pairs) and distance figures, the
network path check and the papers' tables (Tables IV-VI of Qian, Afsahi,
Fredrickson and Zamani, 'Performance Evaluation of the Sun Fire Link SMP
Clusters' (2006), Table 1 of Sistare and Jackson, 'Ultra-High Performance
Communication with MPI and the Sun Fire Link Interconnect' (2002)) beside
this run's values.  From ``coll.jsonl`` (bench/mpi_coll.c): the
collectives' figures and tables of postbox.collreport (Fig. 16 of Qian et
al., Table 2 of Sistare and Jackson, IMB Barrier/Reduce/Alltoall after
Fatoohi et al., the acceptance grid of issue 14, the Allreduce against
memcpy + vector add, the nonblocking overlap and the self-consistency
checks).  From ``logp.jsonl`` (bench/mpi_logp.c): the LogP section of
postbox.logpreport (Fig. 13 and Table VII of Qian et al. beside this run's
values, and the fitted LogGP).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from postbox import (__version__, beffreport, collreport, dsmreport, linkreport, logpreport,
                     modelreport, results, rmareport, threadreport, trafficreport,
                     transportreport)
from postbox.plot import (COLORS, Figure, Series, format_size, format_value, number,
                          png_available, png_plot, svg_plot)

TIME_UNITS = ("ns", "us", "ms", "s")

# the columns of every table, in order (the rest go into "other")
TABLE_COLUMNS = ("library", "transport", "placement", "ranks", "nodes", "pairs", "size",
                 "metric", "unit", "median", "min", "max", "reps", "probe_before",
                 "probe_after", "state")
# keys that identify a series (one line in a plot) besides size
SERIES_KEYS = ("suite", "test", "library", "transport", "placement", "ranks", "nodes",
               "pairs", "metric", "unit")


# ---- choosing what to plot ------------------------------------------------

def _is_time(record: dict) -> bool:
    return record.get("unit") in TIME_UNITS


def _series_key(record: dict) -> tuple:
    return tuple(str(record.get(key)) for key in SERIES_KEYS)


LABEL_KEYS = ("test", "library", "transport", "placement", "ranks", "nodes", "pairs")


def _labels(firsts: Sequence[dict]) -> list:
    """A legend label per series: its test, and where two series share a test,
    the fields that tell them apart."""
    labels = []
    for record in firsts:
        twins = [other for other in firsts if other.get("test") == record.get("test")]
        parts = [str(record.get("test"))]
        for key in LABEL_KEYS[1:]:
            if len({str(other.get(key)) for other in twins}) > 1:
                value = record.get(key)
                parts.append("%s %s" % (value, key) if key in ("ranks", "nodes", "pairs")
                             else str(value))
        labels.append(" ".join(parts))
    return labels


def build_series(records: Iterable[dict]) -> list:
    """Group @records into series (same key but size); only sized records."""
    grouped = OrderedDict()
    for record in records:
        x, y = number(record.get("size")), number(record.get("median"))
        if x is None or y is None or x <= 0:
            continue
        grouped.setdefault(_series_key(record), []).append(record)
    labels = _labels([members[0] for members in grouped.values()])
    series = []
    for label, members in zip(labels, grouped.values()):
        line = Series(label)
        for record in members:
            line.points.append((float(record["size"]), float(record["median"]),
                                results.is_settled(record)))
        series.append(line)
    return series


def _split_by_unit(title: str, caption: str, xlabel: str, records: list,
                   references: Callable[[str], list]) -> list:
    figures = []
    units = OrderedDict()
    for record in records:
        units.setdefault((record.get("metric"), record.get("unit")), []).append(record)
    for (metric, unit), members in units.items():
        series = build_series(members)
        if not series or max(len(s.points) for s in series) < 2:
            continue
        figures.append(Figure(title, caption, xlabel, "%s (%s)" % (metric, unit), series,
                              references(unit)))
    if len(figures) > 1:
        for figure in figures:
            figure.title = "%s (%s)" % (title, figure.ylabel.split(" (")[0])
    return figures


def _is_rsm_net(record: dict) -> bool:
    """A record of postbox-rsm-net-bench (RSM over tcp or its raw references)."""
    return record.get("config") in RSM_NET_CONFIGS


def _rsm(record: dict) -> bool:
    return record.get("suite") == "rsm" and record.get("metric") != "ratio" and \
        not _is_rsm_net(record)


def _call(record: dict) -> str:
    """The test name without the "call_" of per-call timings."""
    test = str(record.get("test", ""))
    return test[len("call_"):] if test.startswith("call_") else test


def _is_putget(record: dict) -> bool:
    """put and get against size, and memcpy beside them (raw limit)."""
    test = str(record.get("test", ""))
    if record.get("suite") == "raw" and test == "memcpy":
        return True
    return _rsm(record) and "pingpong" not in test and (
        test in ("put", "get") or test.startswith(("put_", "get_")))


def _is_export(record: dict) -> bool:
    call = _call(record)
    return _rsm(record) and _is_time(record) and (call.startswith("export") or
                                                  "publish" in call)


def _is_pingpong(record: dict) -> bool:
    return _rsm(record) and "pingpong" in str(record.get("test", ""))


def _cacheline_references(records: list) -> Callable[[str], list]:
    raw = [r for r in records if r.get("suite") == "raw" and "cacheline" in str(r.get("test"))
           and number(r.get("median")) is not None]

    def references(unit: str) -> list:
        refs = []
        for record in raw:
            if record.get("unit") == unit:
                refs.append(("raw cache line" + ("" if results.is_settled(record)
                                                  else " (unsettled)"),
                             float(record["median"])))
        return refs[:1]

    return references


# the tests of bench/mpi_p2p.c: latency figures by mode, then bandwidth
P2P_LATENCY = OrderedDict((
    ("pingpong_standard", "standard (MPI_Send / MPI_Recv) ping-pong"),
    ("pingpong_synchronous", "synchronous (MPI_Ssend) ping-pong"),
    ("pingpong_ready", "ready (MPI_Rsend) ping-pong"),
    ("pingpong_buffered", "buffered (MPI_Bsend) ping-pong"),
    ("pingpong_diffbuf", "ping-pong from a different buffer each time"),
    ("unidirectional", "unidirectional (one-way, acknowledged batch)"),
    ("pingping", "ping-ping (both send at once)"),
))
P2P_BANDWIDTH = OrderedDict((("bandwidth_uni", "uni"), ("bandwidth_bi", "bi")))
NET_LATENCY = ("tcp_pingpong", "tcp_pingpong_split", "tcp_pingpong_poll",
               "tcp_pingpong_split_poll", "udp_pingpong")
NET_BANDWIDTH = ("tcp_stream",)
# postbox-rsm-net-bench: its records carry config "loopback" or "netns"
RSM_NET_CONFIGS = ("loopback", "netns")
RSM_NET_LATENCY = ("tcp_put_pingpong", "tcp_put_pingpong_service", "tcp_get", "tcp_pingpong",
                   "udp_pingpong")
RSM_NET_BANDWIDTH = ("tcp_put_stream", "tcp_stream")
RSM_NET_SIGNAL = "tcp_signal_pingpong"
UNSETTLED_NOTE = "Hollow grey points are unsettled (the probes before and after disagree)."


def _is_p2p(record: dict) -> bool:
    """A p2p record at the level MPI_Init gives (the runs with
    --thread-level have a section of their own: threadreport)."""
    return record.get("suite") == "p2p" and record.get("metric") != "ratio" \
        and not threadreport.is_thread_run(record)


# tests of bench/mpi_p2p.c with a job of their own shape
P2P_MULTIPAIR = ("multipair_latency", "multipair_bandwidth")
P2P_DISTANCE = "pingpong_distance"
P2P_PATHS = OrderedDict((("on-node", "on-node"),
                         ("network", "network path (forced through each library's TCP)")))
# a library's network path counts as such when its smallest ping-pong is at
# least this many times its on-node one (TCP on loopback against shared
# memory: tens of times here)
PATH_FACTOR = 3.0


def p2p_path(record: dict) -> str:
    """The path of a p2p record: on-node (also for records that predate the
    key) or network."""
    return str(record.get("path") or "on-node")


@dataclass
class PathCheck:
    """Whether a library's network-path runs left shared memory, judged from
    its pingpong_standard records on both paths at their smallest common
    size."""

    library: str
    size: Optional[float] = None
    on_node: Optional[float] = None  # us
    network_us: Optional[float] = None  # us
    how: str = ""
    off_node: bool = False  # the network runs put the ranks on different (virtual) nodes

    @property
    def ratio(self) -> Optional[float]:
        if self.on_node and self.network_us is not None:
            return self.network_us / self.on_node
        return None

    @property
    def network(self) -> Optional[bool]:
        """True: network-like (or off-node by construction: ranks on
        different virtual nodes cannot share memory); False: not forced off
        shared memory; None: cannot tell (a path is missing)."""
        if self.ratio is None:
            return True if self.off_node else None
        return self.ratio >= PATH_FACTOR or self.off_node

    def text(self) -> str:
        if self.ratio is None:
            return ("off-node by construction (ranks on different nodes); no pingpong_standard "
                    "on both paths to compare" if self.off_node else
                    "not checked (no pingpong_standard on both paths)")
        if self.ratio >= PATH_FACTOR:
            verdict = "network-like"
        elif self.off_node:
            verdict = ("off-node by construction (ranks on different nodes), though not %gx "
                       "its on-node time" % PATH_FACTOR)
        else:
            verdict = ("NOT forced off shared memory (below %gx): its network-path figures are "
                       "marked so" % PATH_FACTOR)
        return "%s: pingpong_standard at %s B %.3g us against %.3g us on-node (%.1fx)" % (
            verdict, format_size(self.size), self.network_us, self.on_node, self.ratio)

    def describe(self) -> dict:
        return {"library": self.library, "size": self.size, "on_node_us": self.on_node,
                "network_us": self.network_us, "ratio": self.ratio, "network": self.network,
                "off_node": self.off_node, "how": self.how, "verdict": self.text()}


def path_checks(records: Iterable[dict]) -> list:
    """A PathCheck per library with network-path p2p records."""
    by_library = OrderedDict()
    for record in records:
        if not _is_p2p(record) or record.get("test") != "pingpong_standard":
            continue
        size, median = number(record.get("size")), number(record.get("median"))
        if size is None or median is None:
            continue
        by_library.setdefault(str(record.get("library")), {}).setdefault(
            p2p_path(record), {})[size] = record
    out = []
    for library, paths in by_library.items():
        if "network" not in paths:
            continue
        first = next(iter(paths["network"].values()))
        check = PathCheck(library, how=str(first.get("path_how") or ""),
                          off_node=first.get("placement") == "off-node")
        common = sorted(set(paths["network"]) & set(paths.get("on-node", {})))
        if common:
            size = common[0]
            check.size = size
            check.on_node = float(paths["on-node"][size]["median"])
            check.network_us = float(paths["network"][size]["median"])
        out.append(check)
    return out


def _is_net(record: dict) -> bool:
    """A record of postbox-net-bench."""
    return record.get("suite") == "raw" and record.get("test") in NET_LATENCY + NET_BANDWIDTH \
        and not _is_rsm_net(record)


def _name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "figure"


def p2p_libraries(records: Iterable[dict]) -> list:
    """The libraries of the p2p records, in order of appearance."""
    out = []
    for record in records:
        if _is_p2p(record) and record.get("library") not in out:
            out.append(record.get("library"))
    return out


def _runs(description: Optional[dict]) -> dict:
    """machine.json's runs by name (the last of a name wins)."""
    return {run.get("name"): run for run in (description or {}).get("runs") or []
            if isinstance(run, dict)}


def _versions(records: Iterable[dict], description: Optional[dict]) -> dict:
    """library label -> version string (machine.json first, then the records)."""
    out = {}
    for entry in (description or {}).get("mpi_libraries") or []:
        if isinstance(entry, dict) and entry.get("label") and entry.get("library_version"):
            out[entry["label"]] = entry["library_version"]
    for record in records:
        if record.get("library_version") and record.get("library") not in out:
            out[record.get("library")] = record["library_version"]
    return out


def _command_text(run: Optional[dict]) -> Optional[str]:
    if not run or not run.get("command"):
        return None
    return " ".join(str(part) for part in run["command"])


def _source_programs(description: Optional[dict], names: Sequence[str]) -> list:
    """Provenance lines for figures of the bench programs @names (rsm, net)."""
    runs, out = _runs(description), []
    version = (description or {}).get("postbox_version") or __version__
    commit = ((description or {}).get("git") or {}).get("commit")
    for name in names:
        command = _command_text(runs.get(name))
        if command:
            out.append("%s (Postbox %s%s)" % (command, version,
                                              ", commit %s" % commit[:12] if commit else ""))
    return out


def _source_p2p(records: Sequence[dict], description: Optional[dict], tests: Sequence[str],
                libraries: Sequence[str], path: str = "on-node") -> list:
    """Provenance of a p2p figure: each library's version and the first
    command that ran one of @tests on @path (machine.json's runs are named
    label[/network]/test[/Npairs])."""
    runs, versions, out = _runs(description), _versions(records, description), []
    for library in libraries:
        config = library if path == "on-node" else "%s/%s" % (library, path)
        commands = [_command_text(run) for name, run in runs.items()
                    if isinstance(name, str) and any(
                        name == "%s/%s" % (config, test) or
                        name.startswith("%s/%s/" % (config, test)) for test in tests)]
        commands = [c for c in commands if c]
        line = "%s: %s" % (library, versions.get(library) or "version unknown")
        if commands:
            line += " - " + commands[0] + (" (and the other runs alike)" if len(commands) > 1
                                           else "")
        out.append(line)
    return out


def _library_series(records: Sequence[dict], colors: dict, suffix: str = "",
                    dashed: bool = False) -> list:
    """One series per library (and transport/placement/nodes where they differ)."""
    grouped = OrderedDict()
    for record in records:
        x, y = number(record.get("size")), number(record.get("median"))
        if x is None or y is None or x <= 0:
            continue
        key = tuple(str(record.get(k)) for k in ("library", "transport", "placement", "nodes"))
        grouped.setdefault(key, []).append(record)
    varying = [i for i in range(1, 4) if len({key[i] for key in grouped}) > 1]
    out = []
    for key, members in grouped.items():
        label = " ".join([key[0]] + [key[i] for i in varying]) + suffix
        line = Series(label, dashed=dashed, color=colors.get(key[0]))
        line.points = [(float(r["size"]), float(r["median"]), results.is_settled(r))
                       for r in members]
        out.append(line)
    return out


def _path_suffix(path: str) -> tuple:
    """(name suffix, title suffix) of a figure of @path."""
    return ("", "") if path == "on-node" else ("-" + _name(path), " - %s" % P2P_PATHS.get(path, path))


def _mark_unforced(series: list, checks: dict) -> None:
    """Label the network-path lines of libraries whose path check failed."""
    for line in series:
        check = checks.get(line.label.split()[0])
        if check is not None and check.network is False:
            line.label += " (NOT off shared memory)"


def _p2p_two_rank_figures(p2p: list, records: Sequence[dict], description: Optional[dict],
                          path: str, colors: dict, checks: dict) -> list:
    name_suffix, title_suffix = _path_suffix(path)
    where = ("2 ranks on-node" if path == "on-node" else
             "2 ranks, forced through each library's network path (see the path check)")
    out = []
    tests = list(P2P_LATENCY) + sorted(
        {str(r.get("test")) for r in p2p if r.get("metric") == "latency"}
        - set(P2P_LATENCY) - set(P2P_BANDWIDTH) - set(P2P_MULTIPAIR) - {P2P_DISTANCE})
    for test in tests:
        members = [r for r in p2p if r.get("test") == test and r.get("metric") == "latency"]
        series = _library_series(members, colors)
        if not series or max(len(s.points) for s in series) < 2:
            continue
        if path != "on-node":
            _mark_unforced(series, checks)
        unit = members[0].get("unit", "us")
        out.append(Figure(
            "MPI %s: latency against size%s" % (P2P_LATENCY.get(test, test), title_suffix),
            "Time per message of %s (bench/mpi_p2p.c, %s; the half round trip "
            "for ping-pongs), log-log, one line per MPI library measured in the same run "
            "(size 0 is in the tables only). %s" % (test, where, UNSETTLED_NOTE),
            "message size (bytes)", "latency (%s)" % unit, series,
            name="p2p%s-%s" % (name_suffix, test), log=True,
            source=_source_p2p(records, description, [test],
                               [s.label.split()[0] for s in series], path)))
    series = []
    for test, tag in P2P_BANDWIDTH.items():
        members = [r for r in p2p if r.get("test") == test]
        series += _library_series(members, colors, " " + tag, dashed=(tag == "bi"))
    if series and max(len(s.points) for s in series) >= 2:
        if path != "on-node":
            _mark_unforced(series, checks)
        libraries = [lib for lib in p2p_libraries(p2p)
                     if any(s.label.startswith(str(lib) + " ") for s in series)]
        out.append(Figure(
            "MPI bandwidth against size, uni- and bidirectional%s" % title_suffix,
            "OSU-style bandwidth (osu_bw solid, osu_bibw dashed: both directions count), "
            "a window of non-blocking sends per sample, one colour per MPI library; %s. "
            "MB = 10^6 bytes. %s" % (where, UNSETTLED_NOTE),
            "message size (bytes)", "bandwidth (MB/s)", series,
            name="p2p%s-bandwidth" % name_suffix, log=True,
            source=_source_p2p(records, description, list(P2P_BANDWIDTH), libraries, path)))
    return out


DASHES = (None, "6 3", "2 3", "8 3 2 3")


def _oversubscribed_text(members: Sequence[dict]) -> str:
    """Which pair counts ran with more ranks than cores (from the records)."""
    over = sorted({int(r.get("pairs") or 0) for r in members if r.get("oversubscribed")})
    if not over:
        return "No run was oversubscribed."
    return ("N = %s ran with more ranks than the machine has cores (oversubscribed: ranks "
            "share cores, so these points measure the scheduler as much as the library)."
            % ", ".join(str(n) for n in over))


def _p2p_multipair_figures(p2p: list, records: Sequence[dict], description: Optional[dict],
                           path: str, colors: dict) -> list:
    """Latency under load against N, and aggregate bandwidth against size per
    N (Qian et al. 2006 Fig. 9 and 12, Sistare and Jackson 2002 Fig. 5 and 6)."""
    name_suffix, title_suffix = _path_suffix(path)
    out = []
    latency = [r for r in p2p if r.get("test") == "multipair_latency"
               and number(r.get("median")) is not None and number(r.get("pairs"))]
    libraries = [str(lib) for lib in p2p_libraries(latency)]
    sizes = sorted({float(r["size"]) for r in latency if number(r.get("size"))})
    # the papers hold small sizes constant: the smallest and the largest <= 1 KB
    small = [size for size in sizes if size <= 1024]
    chosen = sorted({small[0], small[-1]}) if small else sizes[:1]
    series = []
    for library in libraries:
        for index, size in enumerate(chosen):
            members = [r for r in latency if str(r.get("library")) == library
                       and float(r["size"]) == size]
            if not members:
                continue
            line = Series("%s %s B" % (library, format_size(size)), color=colors.get(library),
                          dasharray=DASHES[index % len(DASHES)])
            line.points = [(float(r["pairs"]), float(r["median"]), results.is_settled(r))
                           for r in members]
            series.append(line)
    if series and max(len(s.points) for s in series) >= 2:
        out.append(Figure(
            "MPI latency under load: pairs ping-ponging at once%s" % title_suffix,
            "multipair (bench/mpi_p2p.c with 2N ranks): pairs (i, i+N) ping-pong "
            "MPI_Send/MPI_Recv at the same time; the mean over the pairs of each pair's half "
            "round trip against N, the size held constant per line (after Qian et al. 2006 "
            "Fig. 9 and Sistare and Jackson 2002 Fig. 6). %s %s"
            % (_oversubscribed_text(latency), UNSETTLED_NOTE),
            "pairs at once (N)", "latency per pair (us)", series,
            name="p2p%s-multipair-latency" % name_suffix, seed="000-fig-9",
            xticks=sorted({x for line in series for x, _, _ in line.points}),
            source=_source_p2p(records, description, ["multipair"], libraries, path)))
    bandwidth = [r for r in p2p if r.get("test") == "multipair_bandwidth"
                 and number(r.get("pairs"))]
    pairs = sorted({int(r["pairs"]) for r in bandwidth})
    series = []
    for library in [str(lib) for lib in p2p_libraries(bandwidth)]:
        for index, n in enumerate(pairs):
            members = [r for r in bandwidth if str(r.get("library")) == library
                       and int(r["pairs"]) == n]
            for line in build_series(members):
                line.label = "%s N=%d%s" % (library, n, " (oversubscribed)"
                                            if any(r.get("oversubscribed") for r in members)
                                            else "")
                line.color = colors.get(library)
                line.dasharray = DASHES[index % len(DASHES)]
                series.append(line)
    if series and max(len(s.points) for s in series) >= 2:
        out.append(Figure(
            "MPI aggregate ping-pong bandwidth with N pairs%s" % title_suffix,
            "multipair: the sum over the N pairs of 2 x size / round trip, against size, one "
            "line per library and N (after Qian et al. 2006 Fig. 12 and Sistare and Jackson "
            "2002 Fig. 5). MB = 10^6 bytes. %s %s"
            % (_oversubscribed_text(bandwidth), UNSETTLED_NOTE),
            "message size (bytes)", "aggregate bandwidth (MB/s)", series,
            name="p2p%s-multipair-bandwidth" % name_suffix, log=True, seed="000-fig-12",
            source=_source_p2p(records, description, ["multipair"],
                               [str(lib) for lib in p2p_libraries(bandwidth)], path)))
    return out


def _p2p_distance_figure(p2p: list, records: Sequence[dict], description: Optional[dict],
                         path: str, colors: dict) -> list:
    """Bandwidth against size for each rank distance d (Fatoohi, Saini and
    Ciotti 2006 Fig. 2-3)."""
    name_suffix, title_suffix = _path_suffix(path)
    members = [r for r in p2p if r.get("test") == P2P_DISTANCE and number(r.get("distance"))]
    distances = sorted({int(r["distance"]) for r in members})
    series = []
    for library in [str(lib) for lib in p2p_libraries(members)]:
        for index, d in enumerate(distances):
            group = [r for r in members if str(r.get("library")) == library
                     and int(r["distance"]) == d]
            for line in build_series(group):
                line.label = "%s d=%d%s" % (library, d, " (oversubscribed)" if any(
                    r.get("oversubscribed") for r in group) else "")
                line.color = colors.get(library)
                line.dasharray = DASHES[index % len(DASHES)]
                series.append(line)
    if not series or max(len(s.points) for s in series) < 2:
        return []
    ranks = sorted({int(r.get("ranks") or 0) for r in members})
    return [Figure(
        "MPI distance sensitivity: rank 0 with rank d%s" % title_suffix,
        "pingpong_distance: IMB PingPong bandwidth (size / half round trip) of rank 0 with "
        "each rank d of a job of %s ranks (after Fatoohi et al. 2006 Fig. 2-3). On one host "
        "of few cores d only changes which core the peer runs on; the quick profile has 2 ranks "
        "(d = 1 only), the full one 4 (oversubscribed on 2 cores). MB = 10^6 bytes. %s"
        % (" or ".join(str(n) for n in ranks), UNSETTLED_NOTE),
        "message size (bytes)", "bandwidth (MB/s)", series,
        name="p2p%s-distance" % name_suffix, log=True, seed="002-fig-2",
        source=_source_p2p(records, description, [P2P_DISTANCE],
                           [str(lib) for lib in p2p_libraries(members)], path))]


def p2p_figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """Point-to-point figures in the manner of the papers', on-node then
    network path: every library on the same axes."""
    p2p = [r for r in records if _is_p2p(r)]
    libraries = p2p_libraries(p2p)
    colors = {lib: COLORS[i % len(COLORS)] for i, lib in enumerate(libraries)}
    checks = {check.library: check for check in path_checks(p2p)}
    out = []
    for path in list(P2P_PATHS) + sorted({p2p_path(r) for r in p2p} - set(P2P_PATHS)):
        members = [r for r in p2p if p2p_path(r) == path]
        if not members:
            continue
        out += _p2p_two_rank_figures(members, records, description, path, colors, checks)
        out += _p2p_distance_figure(members, records, description, path, colors)
        out += _p2p_multipair_figures(members, records, description, path, colors)
    return out


def net_figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """The machine's raw TCP/UDP limits, beside the RSM ping-pong."""
    out = []
    latency = [r for r in records if _is_net(r) and r.get("test") in NET_LATENCY]
    if latency:
        rsm = [r for r in records if _is_pingpong(r) and _is_time(r)
               and r.get("unit") == latency[0].get("unit")]
        series = build_series(latency)
        for line in series:
            line.dashed = False
        series += build_series(rsm)
        if series and max(len(s.points) for s in series) >= 2:
            out.append(Figure(
                "Raw TCP and UDP half round trip beside the RSM ping-pong",
                "postbox-net-bench run alone (its own peer over loopback, on-node): TCP "
                "(TCP_NODELAY; on one connection, or on two, one per direction: _split; "
                "blocking recv, or busy-polled: _poll) and UDP half round trips by size, on "
                "the same axes as the RSM ping-pongs of the same run and the raw cache-line "
                "ping-pong (dashed). "
                + UNSETTLED_NOTE,
                "message size (bytes)", "latency (%s)" % latency[0].get("unit"), series,
                _cacheline_references(list(records))(str(latency[0].get("unit"))),
                name="net-latency", log=True,
                source=_source_programs(description, ["net"] + (["rsm"] if rsm else []))))
    stream = [r for r in records if _is_net(r) and r.get("test") in NET_BANDWIDTH]
    series = build_series(stream)
    if series and max(len(s.points) for s in series) >= 2:
        out.append(Figure(
            "Raw TCP stream bandwidth against size",
            "postbox-net-bench: one connection, a batch of messages back to back, the last "
            "acknowledged (MB = 10^6 bytes). " + UNSETTLED_NOTE,
            "message size (bytes)", "bandwidth (%s)" % stream[0].get("unit"), series,
            name="net-bandwidth", log=True, source=_source_programs(description, ["net"])))
    return out


def _rsm_net_series(members: Sequence[dict], tests: Sequence[str]) -> list:
    """One series per test of @tests, labelled with what it measures."""
    series = []
    for test in tests:
        for line in build_series([r for r in members if r.get("test") == test]):
            first = next(r for r in members if r.get("test") == test)
            line.label = test + (" (raw)" if first.get("library") == "raw" else "") + (
                " (full round trip)" if first.get("round_trip") else "")
            series.append(line)
    return series


def _rsm_net_ratio_text(members: Sequence[dict]) -> str:
    """The ratio records of @members with value, target and verdict, as prose."""
    parts = []
    for record in members:
        limit, value = results.record_limit(record), results.ratio_value(record)
        if record.get("metric") != "ratio" or limit is None:
            continue
        parts.append("%s = %s (target %s %g: %s%s)" % (
            record.get("test"), "-" if value is None else "%.3f" % value, limit.op,
            limit.bound, "missing" if value is None else ("ok" if limit.holds(value) else "FAIL"),
            "" if results.is_settled(record) else ", unsettled"))
    return "; ".join(parts)


def rsm_net_figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """RSM over tcp against raw TCP/UDP between the same two virtual nodes, per
    config: one-way latency and bandwidth against size, with the ratios."""
    out = []
    configs = [c for c in RSM_NET_CONFIGS if any(r.get("config") == c for r in records)]
    for config in configs:
        members = [r for r in records if _is_rsm_net(r) and r.get("config") == config]
        suffix = "" if config == "loopback" else "-" + config
        source = _source_programs(description, ["rsm-net" + suffix])
        where = ("two virtual nodes, traffic through loopback" if config == "loopback" else
                 "two virtual nodes in their own network namespaces, across the veth pair")
        ratios = _rsm_net_ratio_text(members)
        ratios = " Ratios: %s." % ratios if ratios else ""
        latency = [r for r in members if r.get("metric") == "latency"]
        series = _rsm_net_series(latency, RSM_NET_LATENCY)
        signal = [r for r in members if r.get("test") == RSM_NET_SIGNAL
                  and number(r.get("median")) is not None]
        if series and max(len(s.points) for s in series) >= 2:
            out.append(Figure(
                "RSM over tcp against raw TCP/UDP: one-way latency (%s)" % config,
                "postbox-rsm-net-bench, 2 ranks on %s: half round trip of the put ping-pong "
                "(putv with its signal, the receiver sleeping in rsm_intr_signal_wait and "
                "reading its socket itself; tcp_put_pingpong_service at 8 B: the receiver "
                "sleeping in signal_wait_pollfd, woken by the RSM service thread) and of raw "
                "TCP (TCP_NODELAY) and UDP, measured in the same run, interleaved by size; "
                "tcp_get is a full round trip; the signal-only ping-pong is the dashed line. "
                "%s%s" % (where, UNSETTLED_NOTE, ratios),
                "message size (bytes)", "latency (%s)" % latency[0].get("unit"), series,
                [(RSM_NET_SIGNAL, float(r["median"])) for r in signal[:1]],
                name="rsm-net-latency" + suffix, log=True, source=source))
        series = _rsm_net_series(members, RSM_NET_BANDWIDTH)
        if series and max(len(s.points) for s in series) >= 2:
            out.append(Figure(
                "RSM over tcp against raw TCP/UDP: bandwidth (%s)" % config,
                "postbox-rsm-net-bench, 2 ranks on %s: a stream of puts in one barrier span "
                "per sample (close_barrier returned) against a raw TCP stream whose batch "
                "ends with a 1-byte ack (MB = 10^6 bytes). %s%s" % (where, UNSETTLED_NOTE,
                                                                    ratios),
                "message size (bytes)", "bandwidth (MB/s)", series,
                name="rsm-net-bandwidth" + suffix, log=True, source=source))
    return out


def figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """The plots of the page, in the order of the papers' figures."""
    none = lambda unit: []  # noqa: E731
    rsm_source = _source_programs(description, ["rsm"])
    out = []

    def named(figures_: list, name: str, source: list) -> list:
        for index, figure in enumerate(figures_):
            figure.name = name if len(figures_) == 1 else "%s-%d" % (name, index + 1)
            figure.source = list(source)
        return figures_

    out += named(_split_by_unit(
        "RSMAPI export-side calls against segment size",
        "Time of each export-side call as the segment grows (after Fig. 6 of the RSM "
        "study: applications are better off with one large segment than many small ones).",
        "segment size (bytes)", [r for r in records if _is_export(r)], none),
        "rsm-export", rsm_source)
    out += named(_split_by_unit(
        "RSM put and get against message size",
        "Put (remote write) against get (remote read) for each size (after Fig. 7 of the "
        "RSM study), with the machine's memcpy where measured.",
        "message size (bytes)", [r for r in records if _is_putget(r)], none),
        "rsm-putget", rsm_source)
    out += named(_split_by_unit(
        "Ping-pong latency against message size",
        "Half round trip of the RSM ping-pongs (by put, map or signal), beside the "
        "machine's raw cache-line ping-pong measured in the same run (dashed).",
        "message size (bytes)",
        [r for r in records if _is_pingpong(r)], _cacheline_references(list(records))),
        "rsm-pingpong", rsm_source)
    out += net_figures(records, description)
    out += rsm_net_figures(records, description)
    out += p2p_figures(records, description)
    out += collreport.figures(records, description)
    out += modelreport.figures(records, description)
    out += dsmreport.figures(records, description)
    out += logpreport.figures(records, description)
    out += beffreport.figures(records, description)
    out += trafficreport.figures(records, description)
    plotted = {id(r) for r in records if _is_export(r) or _is_putget(r) or _is_pingpong(r)
               or _is_p2p(r) or _is_net(r) or _is_rsm_net(r) or collreport.is_coll(r)
               or rmareport.is_rma(r) or threadreport.is_threads(r) or dsmreport.is_dsm(r)
               or beffreport.is_beff(r) or trafficreport.is_traffic(r) or linkreport.is_link(r)
               or transportreport.is_transport(r)}
    plotted |= {id(r) for r in records if logpreport.is_logp(r)}
    rest = OrderedDict()
    for record in records:
        if id(record) in plotted or record.get("metric") == "ratio":
            continue
        rest.setdefault((record.get("suite"), record.get("test")), []).append(record)
    for (suite, test), members in rest.items():
        out += named(_split_by_unit("%s / %s against size" % (suite, test), "", "size (bytes)",
                                    members, none), "%s-%s" % (suite, test),
                     _source_programs(description, ["rsm"] if suite in ("rsm", "raw") else []))
    used = set()
    for figure in out:
        name = base = _name(figure.name or figure.title)
        n = 2
        while name in used:
            name = "%s-%d" % (base, n)
            n += 1
        used.add(name)
        figure.name = name
    return out


# ---- library against library ----------------------------------------------

DROP_REASONS = ("unsettled", "different states", "no probe state", "one library only")


@dataclass
class LibraryRatio:
    """Median over sizes of library a / library b for one test."""

    a: str
    b: str
    test: str
    metric: str
    unit: str
    shape: str = ""  # the path and job shape when not on-node with 2 ranks
    ratios: list = field(default_factory=list)  # (size, a/b)
    dropped: Counter = field(default_factory=Counter)  # reason -> sizes

    @property
    def median(self) -> Optional[float]:
        values = sorted(r for _, r in self.ratios)
        if not values:
            return None
        mid = len(values) // 2
        return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

    @property
    def spread(self) -> Optional[tuple]:
        values = [r for _, r in self.ratios]
        return (min(values), max(values)) if values else None


def _comparable(a: dict, b: dict) -> Optional[str]:
    """Why the two records cannot be compared, or None when they can."""
    if not results.is_settled(a) or not results.is_settled(b):
        return "unsettled"
    states = (a.get("state"), b.get("state"))
    if any(state not in ("fast", "slow") for state in states):
        return "no probe state"
    if states[0] != states[1]:
        return "different states"
    return None


def _shape(record: dict) -> str:
    """The path and job shape of a p2p record, "" for on-node with 2 ranks:
    records of different shapes are never compared."""
    parts = [] if p2p_path(record) == "on-node" else [p2p_path(record)]
    if number(record.get("pairs")) and int(record["pairs"]) > 1:
        parts.append("%d pairs" % int(record["pairs"]))
    if number(record.get("distance")) is not None:
        parts.append("d=%d" % int(record["distance"]))
    if record.get("off_cache"):
        parts.append("off-cache")
    return ", ".join(parts)


def library_ratios(records: Iterable[dict]) -> list:
    """Library against library for each p2p test: the ratio at each size
    where both records are settled and in the same state; the rest counted
    as dropped, by reason."""
    # (test, metric, unit, shape) -> library -> size -> record
    table = OrderedDict()
    for record in records:
        if not _is_p2p(record):
            continue
        size, median = number(record.get("size")), number(record.get("median"))
        if size is None or median is None or median <= 0:
            continue
        key = (str(record.get("test")), str(record.get("metric")), str(record.get("unit")),
               _shape(record))
        table.setdefault(key, OrderedDict()).setdefault(
            str(record.get("library")), {})[size] = record
    order = {test: i for i, test in enumerate(list(P2P_LATENCY) + list(P2P_BANDWIDTH)
                                              + [P2P_DISTANCE] + list(P2P_MULTIPAIR))}
    libraries = [str(lib) for lib in p2p_libraries(records)]
    out = []
    for key in sorted(table, key=lambda k: (k[3] != "", k[3], order.get(k[0], len(order)), k)):
        by_library = table[key]
        for i, a in enumerate(libraries):
            for b in libraries[i + 1:]:
                if a not in by_library or b not in by_library:
                    continue
                row = LibraryRatio(a, b, *key)
                for size in sorted(set(by_library[a]) | set(by_library[b])):
                    ra, rb = by_library[a].get(size), by_library[b].get(size)
                    if ra is None or rb is None:
                        row.dropped["one library only"] += 1
                        continue
                    why = _comparable(ra, rb)
                    if why:
                        row.dropped[why] += 1
                    else:
                        row.ratios.append((size, float(ra["median"]) / float(rb["median"])))
                out.append(row)
    return out


def _library_ratio_section(records: Sequence[dict]) -> list:
    esc = html.escape
    rows = library_ratios(records)
    if not rows:
        return []
    out = ["<h2>Library against library</h2>",
           "<p>For each pair of MPI libraries and each test of <code>p2p.jsonl</code>: the "
           "median over sizes of the per-size ratio A/B of the medians, with its spread "
           "(min-max) and the number of sizes used. A size counts only when both records "
           "are settled (their probes before and after agree) and were measured in the same "
           "core-to-core state (both fast or both slow); the others are dropped, counted by "
           "reason. Latency: A/B &gt; 1 means A is slower. Bandwidth: A/B &gt; 1 means A is "
           "faster. Unsettled records are drawn hollow grey in the figures and never enter "
           "these ratios.</p>",
           '<div class="wide"><table><tr><th class="text">A</th><th class="text">B</th>'
           '<th class="text">test</th><th class="text">metric</th><th>median A/B</th>'
           '<th>min-max</th><th>sizes used</th><th class="text">dropped (why)</th></tr>']
    for row in rows:
        median, spread = row.median, row.spread
        dropped = ", ".join("%d %s" % (row.dropped[reason], reason) for reason in DROP_REASONS
                            if row.dropped.get(reason)) or "none"
        out.append('<tr class="library-ratio"><td class="text">%s</td><td class="text">%s</td>'
                   '<td class="text">%s</td><td class="text">%s</td><td>%s</td><td>%s</td>'
                   '<td>%d</td><td class="text">%s</td></tr>'
                   % (esc(row.a), esc(row.b),
                      esc(row.test + (" [%s]" % row.shape if row.shape else "")), esc(row.metric),
                      "%.3f" % median if median is not None else "-",
                      "%.3f-%.3f" % spread if spread else "-", len(row.ratios), esc(dropped)))
    out.append("</table></div>")
    return out


def _path_check_section(records: Sequence[dict]) -> list:
    """Whether each library's network path really left shared memory."""
    esc = html.escape
    checks = path_checks(records)
    if not checks:
        return []
    out = ["<h2>Network path check</h2>",
           "<p>Each MPI library also ran with its network path forced on this one host "
           "(<code>path</code> = <code>network</code> in <code>p2p.jsonl</code>; how, per "
           "library, in the last column). A path counts as network-like when the library's "
           "pingpong_standard at the smallest size measured on both paths is at least "
           "%gx its on-node time, or when its ranks were on different (virtual) nodes, "
           "which cannot share memory (Postbox: <code>placement</code> "
           "<code>off-node</code>); otherwise its network figures are labelled "
           "<em>NOT off shared memory</em> and should not be read as network figures.</p>"
           % PATH_FACTOR,
           '<table><tr><th class="text">library</th><th>size</th><th>on-node (us)</th>'
           '<th>network (us)</th><th>network / on-node</th><th class="text">verdict</th>'
           '<th class="text">how</th></tr>']
    for check in checks:
        if check.network is None:
            verdict = "not checked"
        elif check.ratio is not None and check.ratio >= PATH_FACTOR:
            verdict = '<span class="ok">network-like</span>'
        elif check.network:
            verdict = '<span class="ok">off-node</span> (different nodes)'
        else:
            verdict = '<span class="fail">NOT off shared memory</span>'
        out.append('<tr class="path-check"><td class="text">%s</td><td>%s</td><td>%s</td>'
                   '<td>%s</td><td>%s</td><td class="text">%s</td><td class="text">%s</td>'
                   '</tr>' % (esc(check.library),
                              esc(format_size(check.size)) if check.size is not None else "-",
                              esc(format_value(check.on_node)),
                              esc(format_value(check.network_us)),
                              "%.1f" % check.ratio if check.ratio is not None else "-",
                              verdict, esc(check.how)))
    out.append("</table>")
    return out


# ---- the papers' tables ---------------------------------------------------

# The papers' own values, typed from the papers, to print beside this
# machine's: "qian-*" from Qian, Afsahi, Fredrickson and Zamani, 'Performance
# Evaluation of the Sun Fire Link SMP Clusters' (2006); "sistare-*" from
# Sistare and Jackson, 'Ultra-High Performance Communication with MPI and the
# Sun Fire Link Interconnect' (2002).
PAPER_TABLES = {
    "qian-IV": {
        "title": "Half-way ping-pong latency for small message sizes (us)",
        "cite": "Qian et al. 2006, Table IV (Sun MPI over the Sun Fire Link; on-node: one "
                "SMP, off-node: two)",
        # size: (on-node, off-node)
        "rows": {1: (2.8, 5.0), 2: (2.8, 4.9), 4: (2.8, 5.0), 8: (2.8, 5.0), 16: (2.9, 5.9),
                 32: (3.1, 6.0)},
    },
    "qian-V": {
        "title": "Short message latency (us) against other interconnects",
        "cite": "Qian et al. 2006, Table V (best reported MPI short-message latencies; Sun "
                "Fire Link* is the paper's own measurement)",
        "rows": (("QsNet", 4.6), ("QsNet II", 3.0), ("Myrinet (D card)", 6.7),
                 ("Myrinet (E card)", 3.5), ("InfiniBand", 6.8), ("Sun Fire Link (Sun)", 3.7),
                 ("Sun Fire Link*", 5.0)),
        "note": "QsNet II is given as ~3",
    },
    "qian-VI": {
        "title": "MPI bandwidth (MB/s) against other interconnects",
        "cite": "Qian et al. 2006, Table VI (reported MPI bandwidths; Sun Fire Link* is the "
                "paper's own off-node unidirectional measurement)",
        "rows": (("QsNet", 308.0), ("QsNet II", 900.0), ("Myrinet (D card)", 235.0),
                 ("Myrinet (E card)", 495.0), ("InfiniBand", 841.0),
                 ("Sun Fire Link (Sun)", 792.0), ("Sun Fire Link*", 695.0)),
    },
    "sistare-1": {
        "title": "MPI ping-pong metrics, single pair",
        "cite": "Sistare and Jackson 2002, Table 1 (Sun MPI over RSM on the Sun Fire Link: "
                "latency of a zero-length ping-pong, half the round trip; ping-pong "
                "bandwidth)",
        # metric: (on-node, off-node)
        "rows": {"latency (us)": (1.5, 3.7), "bandwidth (MB/s)": (806.0, 867.0)},
    },
}


@dataclass
class Cell:
    """One of this machine's values in a paper's table, and where it came from."""

    value: Optional[float]
    record: Optional[dict] = None

    def html(self) -> str:
        if self.value is None or self.record is None:
            return "<td>-</td>"
        r = self.record
        origin = "%s %s, %s B, %s path%s" % (
            r.get("library"), r.get("test"), format_size(r.get("size") or 0), p2p_path(r),
            "" if results.is_settled(r) else ", unsettled")
        return '<td title="%s"%s>%s</td>' % (html.escape(origin), "" if results.is_settled(r)
                                             else ' class="unsettled-cell"',
                                             html.escape(format_value(self.value)))


def _p2p_pick(records: Sequence[dict], library: str, test: str, path: str,
              size: Optional[float] = None, pairs: Optional[int] = None,
              best: bool = False) -> Cell:
    """The record of @library's @test on @path at @size (or, @best, the one
    with the highest median over sizes), settled ones first."""
    members = [r for r in records if _is_p2p(r) and str(r.get("library")) == library
               and r.get("test") == test and p2p_path(r) == path
               and number(r.get("median")) is not None
               and (size is None or number(r.get("size")) == size)
               and (pairs is None or int(r.get("pairs") or 1) == pairs)]
    settled = [r for r in members if results.is_settled(r)] or members
    if not settled:
        return Cell(None)
    record = max(settled, key=lambda r: float(r["median"])) if best else settled[-1]
    return Cell(float(record["median"]), record)


def _smallest_latency(records: Sequence[dict], library: str, path: str) -> Cell:
    """pingpong_standard at its smallest size (0 B when measured)."""
    sizes = sorted({number(r.get("size")) for r in records if _is_p2p(r)
                    and str(r.get("library")) == library and r.get("test") == "pingpong_standard"
                    and p2p_path(r) == path and number(r.get("size")) is not None})
    return _p2p_pick(records, library, "pingpong_standard", path, sizes[0]) if sizes \
        else Cell(None)


def _pingpong_bandwidth(records: Sequence[dict], library: str, path: str) -> Cell:
    """Single-pair ping-pong bandwidth, the best over sizes: multipair with
    N = 1 (2 x size / round trip), else pingpong_distance at d = 1 (the same
    quantity)."""
    cell = _p2p_pick(records, library, "multipair_bandwidth", path, pairs=1, best=True)
    if cell.value is None:
        members = [r for r in records if int(r.get("distance") or 0) == 1]
        cell = _p2p_pick(members, library, P2P_DISTANCE, path, best=True)
    return cell


def _paper_table_html(key: str, head: list, rows: list, what: str) -> list:
    paper = PAPER_TABLES[key]
    esc = html.escape
    out = ['<h3 id="paper-%s">%s</h3>' % (esc(key), esc(paper["title"])),
           '<p class="cite">From the paper: %s%s. This machine: %s Hover a value for the '
           'record it comes from; grey italics: unsettled.</p>'
           % (esc(paper["cite"]), "; " + esc(paper["note"]) if paper.get("note") else "", what),
           '<div class="wide"><table class="paper-table"><tr>%s</tr>'
           % "".join('<th%s>%s</th>' % (' class="text"' if i == 0 else "", esc(h))
                     for i, h in enumerate(head))]
    for row in rows:
        out.append("<tr>%s</tr>" % "".join(
            cell.html() if isinstance(cell, Cell) else
            ('<td class="text">%s</td>' % esc(str(cell)) if isinstance(cell, str)
             else "<td>%s</td>" % esc(format_value(cell)))
            for cell in row))
    out.append("</table></div>")
    return out


def paper_tables_section(records: Sequence[dict]) -> list:
    """Tables IV-VI of Qian et al. (2006) and Table 1 of Sistare and Jackson
    (2002) with this machine's values beside the papers' own (on-node, and
    the network path for off-node)."""
    p2p = [r for r in records if _is_p2p(r)]
    libraries = [str(lib) for lib in p2p_libraries(p2p)]
    if not libraries:
        return []
    out = ["<h2>The papers' tables</h2>",
           "<p>The papers' own figures, for reference, beside the same quantities measured in "
           "this run. The papers' off-node column is set against each library's network path "
           "on this one host (TCP on loopback, not a cluster interconnect).</p>"]
    table = PAPER_TABLES["qian-IV"]
    head = ["size (B)", "paper on-node", "paper off-node"]
    for library in libraries:
        head += ["%s on-node" % library, "%s network" % library]
    rows = []
    for size, (on, off) in table["rows"].items():
        row = [format_size(size), on, off]
        for library in libraries:
            row += [_p2p_pick(p2p, library, "pingpong_standard", "on-node", size),
                    _p2p_pick(p2p, library, "pingpong_standard", "network", size)]
        rows.append(row)
    out += _paper_table_html("qian-IV", head, rows,
                             "pingpong_standard (MPI_Send/MPI_Recv half round trip) of each "
                             "library at the same sizes.")
    for key, what, pick in (
            ("qian-V", "each library's pingpong_standard at its smallest size (0 B), on-node "
             "and through its network path.", _smallest_latency),
            ("qian-VI", "each library's best bandwidth_uni (osu_bw) over sizes, on-node and "
             "through its network path.",
             lambda recs, lib, path: _p2p_pick(recs, lib, "bandwidth_uni", path, best=True))):
        rows = [[name, value, "", ""] for name, value in PAPER_TABLES[key]["rows"]]
        for library in libraries:
            rows.append(["%s (this machine)" % library, "", pick(p2p, library, "on-node"),
                         pick(p2p, library, "network")])
        out += _paper_table_html(key, ["interconnect / library", "paper", "on-node", "network"],
                                 rows, what)
    table = PAPER_TABLES["sistare-1"]
    head = ["metric", "paper on-node", "paper off-node"]
    for library in libraries:
        head += ["%s on-node" % library, "%s network" % library]
    rows = []
    for metric, (on, off) in table["rows"].items():
        pick = _smallest_latency if metric.startswith("latency") else _pingpong_bandwidth
        row = [metric, on, off]
        for library in libraries:
            row += [pick(p2p, library, "on-node"), pick(p2p, library, "network")]
        rows.append(row)
    out += _paper_table_html("sistare-1", head, rows,
                             "latency: pingpong_standard at its smallest size (0 B); "
                             "bandwidth: the best over sizes of the single-pair ping-pong "
                             "bandwidth (multipair with N = 1: 2 x size / round trip).")
    return out


# ---- the page -------------------------------------------------------------

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; } h3 { font-size: 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right;
         white-space: nowrap; }
.wide { overflow-x: auto; }
th { background: #f0f0f0; } td.text, th.text { text-align: left; }
tr.unsettled td, td.unsettled-cell { color: #999; font-style: italic; }
p.cite { max-width: 900px; font-size: 0.85em; color: #444; }
.ok { color: #15803d; font-weight: bold; } .fail { color: #b91c1c; font-weight: bold; }
.figures { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure { margin: 0; } figcaption { max-width: 560px; font-size: 0.85em; color: #555; }
svg text.tick { font-size: 10px; fill: #555; } svg text.axis { font-size: 11px; }
svg text.legend { font-size: 10px; }
code { background: #f4f4f4; padding: 0 0.2em; }
p.source { max-width: 560px; font-size: 0.75em; color: #555; word-break: break-all; }
"""


def _machine_section(description: Optional[dict]) -> list:
    esc = html.escape
    if not description:
        return ["<p>No machine.json in this folder.</p>"]
    compiler = description.get("compiler") or {}
    git = description.get("git") or {}
    commit = git.get("commit") or "(no commit)"
    if git.get("dirty"):
        commit += " (modified)"
    rows = [
        ("date", description.get("date")),
        ("host", description.get("hostname")),
        ("CPU", description.get("cpu_model")),
        ("cores", "%s (%s usable)" % (description.get("cores"), description.get("cores_allowed"))),
        ("kernel", description.get("kernel")),
        ("compiler", "%s (%s)" % (compiler.get("version") or compiler.get("path"),
                                  compiler.get("build_type"))),
        ("commit", commit),
        ("Postbox", description.get("postbox_version")),
    ]
    out = ["<table>"]
    for name, value in rows:
        out.append('<tr><th class="text">%s</th><td class="text">%s</td></tr>'
                   % (esc(name), esc(str(value))))
    out.append("</table>")
    libraries = [entry for entry in description.get("mpi_libraries") or []
                 if isinstance(entry, dict)]
    if libraries:
        out.append('<p>MPI libraries:</p><div class="wide"><table><tr><th class="text">label</th>'
                   '<th class="text">origin</th><th class="text">version</th>'
                   '<th class="text">mpicc</th><th class="text">built</th></tr>')
        for entry in libraries:
            out.append('<tr class="mpi-library">%s</tr>' % "".join(
                '<td class="text">%s</td>' % esc(format_value(entry.get(key)))
                for key in ("label", "origin", "library_version", "mpicc", "built")))
        out.append("</table></div>")
        limits = [(entry.get("label"), limit) for entry in libraries
                  for limit in entry.get("thresholds") or [] if isinstance(limit, dict)]
        if limits:
            out.append('<p>Protocol thresholds (each library\'s own tool, read before the '
                       'run; the two-rank tests also measured value - 1, value and value + 1 '
                       'where the value is a size between 2 B and 4 MB):</p>'
                       '<div class="wide"><table><tr><th class="text">library</th>'
                       '<th class="text">path</th><th class="text">parameter</th>'
                       '<th>value (B)</th><th class="text">meaning</th>'
                       '<th class="text">from</th></tr>')
            for label, limit in limits:
                out.append('<tr class="threshold"><td class="text">%s</td><td class="text">%s'
                           '</td><td class="text">%s</td><td>%s</td><td class="text">%s</td>'
                           '<td class="text"><code>%s</code></td></tr>'
                           % tuple(esc(format_value(value)) for value in (
                               label, limit.get("path"), limit.get("name"), limit.get("value"),
                               limit.get("meaning"), limit.get("source"))))
            out.append("</table></div>")
    parts = [entry for entry in description.get("parts") or [] if isinstance(entry, dict)]
    if parts:
        out.append('<p>Parts of the run:</p><table><tr><th class="text">part</th>'
                   '<th class="text">verdict</th><th>seconds</th><th class="text">detail</th>'
                   '</tr>')
        for entry in parts:
            verdict = str(entry.get("verdict"))
            cls = "ok" if verdict == "ok" else ("fail" if verdict == "FAILED" else "")
            out.append('<tr><td class="text">%s</td><td class="text"><span class="%s">%s'
                       '</span></td><td>%s</td><td class="text">%s</td></tr>'
                       % (esc(str(entry.get("name"))), cls, esc(verdict),
                          esc(format_value(entry.get("seconds"))),
                          esc(str(entry.get("detail") or ""))))
        out.append("</table>")
    commands = description.get("commands") or []
    runs = [run for run in description.get("runs") or [] if isinstance(run, dict)]
    if runs:
        commands = [run.get("command") or [] for run in runs]
    if commands:
        out.append("<details%s><summary>Commands run (%d)</summary><ul>"
                   % (" open" if len(commands) <= 4 else "", len(commands)))
        for command in commands:
            out.append("<li><code>%s</code></li>" % esc(" ".join(map(str, command))))
        out.append("</ul></details>")
    return out


def _ratio_section(records: Sequence[dict]) -> list:
    esc = html.escape
    found = results.ratios(records)
    if not found:
        return ["<p>This run reported no ratios.</p>"]
    limits = {limit.name: limit for limit in results.LIMITS}
    out = ['<table><tr><th class="text">ratio</th><th>value</th><th class="text">limit</th>'
           '<th class="text">verdict</th><th>probe before</th><th>probe after</th></tr>']
    for name, record in found.items():
        limit = limits.get(name) or results.record_limit(record)
        value = number(record.get("median"))
        if limit is None:
            verdict, limit_text = "", ""
        elif value is None:
            verdict, limit_text = '<span class="fail">missing</span>', ""
        else:
            unjudged = results.limit_note(record)
            verdict = ("not judged: %s" % esc(unjudged) if unjudged
                       else '<span class="ok">ok</span>' if limit.holds(value)
                       else '<span class="fail">FAIL</span>')
            limit_text = "%s %g" % (limit.op, limit.bound)
        row_class = "" if results.is_settled(record) else ' class="unsettled"'
        out.append('<tr%s><td class="text">%s</td><td>%s</td><td class="text">%s</td>'
                   '<td class="text">%s</td><td>%s</td><td>%s</td></tr>'
                   % (row_class, esc(name),
                      esc("" if value is None else "%.3f" % value),
                      esc(limit_text), verdict, esc(format_value(record.get("probe_before"))),
                      esc(format_value(record.get("probe_after")))))
    out.append("</table>")
    return out


def _tables(records: Sequence[dict]) -> list:
    esc = html.escape
    groups = OrderedDict()
    for record in records:
        test = str(record.get("test"))
        # the per-call timings (Table III of the RSM study) share one table
        if test.startswith("call_"):
            test = "call_*"
        groups.setdefault((str(record.get("suite")), test), []).append(record)
    out = []
    for (suite, test), members in groups.items():
        extra_keys = sorted({key for r in members for key in r}
                            - set(TABLE_COLUMNS) - {"suite", "test", "settled"})
        columns = (("test",) if test == "call_*" else ()) + TABLE_COLUMNS + tuple(extra_keys)
        out.append('<h3 id="%s">%s / %s</h3>' % (esc("t-%s-%s" % (suite, test)), esc(suite),
                                                 esc(test)))
        head = "".join('<th%s>%s</th>' % (' class="text"' if c in ("library", "transport",
                       "placement", "metric", "unit", "state", "test") else "", esc(c))
                       for c in columns)
        out.append('<div class="wide"><table><tr>%s</tr>' % head)
        for record in members:
            cells = []
            for column in columns:
                value = record.get(column)
                text = format_size(value) if column == "size" and number(value) else (
                    json.dumps(value) if isinstance(value, (dict, list)) else format_value(value))
                cls = ' class="text"' if isinstance(value, str) else ""
                cells.append("<td%s>%s</td>" % (cls, esc(text)))
            row_class = "" if results.is_settled(record) else ' class="unsettled"'
            out.append("<tr%s>%s</tr>" % (row_class, "".join(cells)))
        out.append("</table></div>")
    return out


# the seeds in ../shared/seeds, as the report cites them (seed_contents)
SEEDS = {
    "000": "Qian et al. 2006, the Sun Fire Link SMP clusters",
    "001": "Sistare and Jackson 2002, MPI and the Sun Fire Link",
    "002": "Fatoohi, Saini and Ciotti 2006, interconnect performance evaluation",
    "003": "SSS-CORE's evaluation, memory-based communication against TCP/IP",
    "004": "Strings' evaluation, a DSM on clusters of SMPs",
}
# a heading of a seed's figure or table redrawn: <h3 id="seedNNN-fig-K...">,
# or a <div> or <figure id="seedNNN-..."> whose first element is its <h3>
_HEADING = re.compile(r'<(?:h3|div|figure) id="([^"]+)"[^>]*>\s*(?:<h3[^>]*>)?(.*?)</h3>',
                      re.S)
_SEED_ID = re.compile(r"seed(\d{3})-(fig|table)-([0-9A-Za-z.]+)")
# headings that redraw a seed's table under an id of their own
SEED_TABLE_IDS = {"paper-qian-IV": "seed000-table-IV", "paper-qian-V": "seed000-table-V",
                  "paper-qian-VI": "seed000-table-VI", "paper-sistare-1": "seed001-table-1",
                  "coll-table2": "seed001-table-2", "dsm-table1": "seed004-table-1",
                  "dsm-table3": "seed004-table-3"}


def _figure_number(text: str) -> tuple:
    """A figure or table number as a sort key: 9 before 12, IV before V."""
    roman = {"I": 1, "V": 5, "X": 10, "L": 50}
    if text.isdigit():
        return (int(text), text)
    if text and all(ch in roman for ch in text):
        values = [roman[ch] for ch in text]
        return (sum(-v if i + 1 < len(values) and v < values[i + 1] else v
                    for i, v in enumerate(values)), text)
    digits = re.match(r"\d+", text)
    return (int(digits.group()) if digits else 0, text)


def seed_contents(body: str) -> list:
    """The table of contents by seed figure and table: a row per heading of
    @body whose id is seedNNN-fig-K or seedNNN-table-K (a suffix after K
    tells several apart), in seed and figure order, each linking to it."""
    found = []
    for match in _HEADING.finditer(body):
        anchor, title = match.groups()
        seed_id = _SEED_ID.match(SEED_TABLE_IDS.get(anchor, anchor))
        if seed_id is None:
            continue
        seed, kind, number = seed_id.groups()
        found.append(((seed, kind, _figure_number(number)), anchor, seed, kind, number,
                      re.sub(r"<[^>]+>", "", title)))
    if not found:
        return []
    found.sort(key=lambda item: item[0])
    esc = html.escape
    out = ['<h2 id="seed-contents">Contents by seed figure and table</h2>',
           '<table class="contents"><tr><th class="text">seed</th><th class="text">figure or '
           'table</th><th class="text">redrawn here</th></tr>']
    for _key, anchor, seed, kind, number, title in found:
        out.append('<tr><td class="text">%s %s</td><td class="text">%s %s</td>'
                   '<td class="text"><a href="#%s">%s</a></td></tr>'
                   % (esc(seed), esc(SEEDS.get(seed, "")), "Fig." if kind == "fig" else "Table",
                      esc(number), esc(anchor), esc(html.unescape(title))))
    out.append("</table>")
    return out


def _figure_html(figure: Figure, png: bool = False, seed_id: str = "") -> str:
    esc = html.escape
    source = ""
    if figure.source:
        source = '<p class="source">Produced by: %s</p>' % "<br>".join(
            "<code>%s</code>" % esc(line) for line in figure.source)
    files = '<a href="fig-%s.svg"><code>fig-%s.svg</code></a>' % (esc(figure.name),
                                                                   esc(figure.name))
    if png:
        files += ' and <a href="fig-%s.png"><code>fig-%s.png</code></a>' % (
            esc(figure.name), esc(figure.name))
    # a figure after a seed's figure is known by that: "seed" and its
    # Figure.seed (numbered when several redraw one), or a name such as
    # "seed002-fig-1"; the others by their name
    if seed_id:
        anchor = "seed" + seed_id
    elif figure.name.startswith("seed"):
        anchor = figure.name
    else:
        anchor = "figure-" + figure.name
    return ('<figure id="%s"><h3>%s</h3>%s<figcaption>%s%s Also in %s.</figcaption>'
            '%s</figure>'
            % (esc(anchor), esc(figure.title), svg_plot(figure), esc(figure.caption),
               "" if UNSETTLED_NOTE in figure.caption else " " + UNSETTLED_NOTE, files,
               source))


def render(records: Sequence[dict], description: Optional[dict] = None,
           title: str = "Postbox results", plots: Optional[list] = None,
           png: bool = False) -> str:
    """The whole page as a string; @png: the figures' PNG files were
    written beside their SVG files."""
    esc = html.escape
    unsettled = sum(1 for r in records if not results.is_settled(r))
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           "<title>%s</title>" % esc(title), "<style>%s</style>" % STYLE, "</head><body>",
           "<h1>%s</h1>" % esc(title),
           "<p>%d measurements%s. Generated by <code>postbox report</code> %s.</p>"
           % (len(records), "" if not unsettled else
              ", %d of them unsettled (shown grey: the machine changed core-to-core state "
              "while they ran, compare them with care)" % unsettled, esc(__version__)),
           "<h2>Machine</h2>"]
    out += _machine_section(description)
    out.append("<h2>Acceptance ratios</h2>")
    out += _ratio_section(records)
    out += _path_check_section(records)
    out += _library_ratio_section(records)
    out += paper_tables_section(records)
    out += collreport.section(records)
    out += modelreport.section(records, description)
    out += rmareport.section(records)
    out += threadreport.section(records, description)
    out += dsmreport.section(records, description)
    out += logpreport.section(records, description)
    out += beffreport.section(records, description)
    out += trafficreport.section(records)
    out += linkreport.section(records, description)
    out += transportreport.section(records)
    plots = figures(records, description) if plots is None else plots
    # the figures a section draws itself (under its seed figure's id)
    plots = [figure for figure in plots if not logpreport.in_section(figure)]
    if plots:
        out.append("<h2>Figures</h2>")
        out.append('<div class="figures">')
        seen: dict = {}
        for figure in plots:
            seed_id = ""
            if figure.seed:
                seen[figure.seed] = seen.get(figure.seed, 0) + 1
                seed_id = figure.seed + ("-%d" % seen[figure.seed] if seen[figure.seed] > 1
                                         else "")
            out.append(_figure_html(figure, png, seed_id))
        out.append("</div>")
        if not png:
            out.append("<p>PNG copies of the figures were not written: %s.</p>"
                       % esc(png_available() or "not asked for"))
    out.append("<h2>Measurements</h2>")
    out += _tables(records)
    out.append("</body></html>")
    head = out.index("<h2>Machine</h2>")
    out[head:head] = seed_contents("\n".join(out[head:]))
    return "\n".join(out) + "\n"


def write(directory: Path, records: Optional[Sequence[dict]] = None) -> Path:
    """Write @directory/index.html and return its path."""
    directory = Path(directory)
    if records is None:
        records = results.load_dir(directory)
    description = None
    try:
        description = json.loads((directory / "machine.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        description = None
    title = "Postbox results: %s" % directory.resolve().name
    plots = figures(records, description)
    names = set()
    no_png = png_available()
    for figure in plots:
        svg = svg_plot(figure)
        if not svg:
            continue
        path = directory / ("fig-%s.svg" % figure.name)
        names.add(path.name)
        path.write_text('<?xml version="1.0" encoding="utf-8"?>\n' + svg + "\n",
                        encoding="utf-8")
        if no_png is None and png_plot(figure, path.with_suffix(".png")):
            names.add(path.with_suffix(".png").name)
    for stale in list(directory.glob("fig-*.svg")) + list(directory.glob("fig-*.png")):
        if stale.name not in names:
            stale.unlink()
    page = directory / "index.html"
    tmp = directory / "index.html.tmp"
    tmp.write_text(render(records, description, title, plots, png=no_png is None),
                   encoding="utf-8")
    tmp.replace(page)
    return page
