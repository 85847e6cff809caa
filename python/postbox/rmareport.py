"""The report's one-sided section: bench/mpi_rma.c (``rma.jsonl``).

Issue 15's acceptance table, from one bench run (the on-node figures:
each library's median over the rounds the quick profile runs, see
rmabench.ROUNDS):

- on one node, Postbox's 8-byte put + flush latency and 8-byte fetch-and-op
  latency (lock_all mode) at most the best of the other libraries, and its
  4 MB put bandwidth at least the best of them;
- across two nodes, Postbox's 8-byte put + flush latency at most
  LIMIT_NET_RATIO times Postbox's own RSM put + barrier of the same run
  (postbox-rsm-net-bench's ``tcp_put_barrier``, ``rsm-net.jsonl``);
- the progress test: Postbox's epochs done within LIMIT_PROGRESS_S of the
  start of the target's computation, across two nodes;

then the progress test of every library, and every figure side by side
(each library in its own column).
"""

from __future__ import annotations

import html
import statistics
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from postbox.plot import format_size, format_value

POSTBOX = "postbox"
LIMIT_NET_RATIO = 1.2
LIMIT_PROGRESS_S = 0.2
SMALL = 8
LARGE = 4 << 20
# postbox-rsm-net-bench's one put + barrier, and the config it ran in (not
# the --netns run)
RSM_PUT_BARRIER = "tcp_put_barrier"
RSM_CONFIG = "loopback"


def is_rma(record: dict) -> bool:
    return record.get("suite") == "rma"


def _path(record: dict) -> str:
    return record.get("path") or "on-node"


def find(records: Iterable[dict], library: str, test: str, size: int, path: str,
         sync: str = "lock_all") -> Optional[dict]:
    """The record of @library's @test at @size on @path in mode @sync; of
    several, those of the allocate flavour first.  Records of several rounds
    (key "round") make one: the last round's, with the median of the
    rounds' medians as its median and the rounds' count as "rounds"."""
    found = [r for r in records if is_rma(r) and r.get("library") == library
             and r.get("test") == test and r.get("size") == size and _path(r) == path
             and r.get("sync") == sync]
    found = [r for r in found if r.get("flavor") == "allocate"] or found
    rounds = [r for r in found if r.get("round") is not None]
    if len(rounds) < 2:
        return (found or [None])[-1]
    return dict(rounds[-1], median=statistics.median(r["median"] for r in rounds),
                rounds=len(rounds))


def libraries(records: Iterable[dict]) -> list:
    """The libraries of the rma records, Postbox first, then as found."""
    seen = []
    for record in records:
        if is_rma(record) and record.get("library") not in seen:
            seen.append(record.get("library"))
    return sorted(seen, key=lambda label: label != POSTBOX)


@dataclass
class Point:
    """One line of the acceptance table."""

    what: str
    unit: str
    postbox: Optional[float]
    reference: Optional[float]  # the best other library, or Postbox's RSM figure
    reference_what: str
    limit: str  # e.g. "<= 1x best other"
    verdict: str  # pass, FAIL or missing
    ratio: Optional[float] = None


def _verdict(value: Optional[float], bound: Optional[float], at_most: bool) -> str:
    if value is None or bound is None:
        return "missing"
    return "pass" if (value <= bound if at_most else value >= bound) else "FAIL"


def _against_others(records: Sequence[dict], what: str, test: str, size: int,
                    at_most: bool) -> Point:
    own = find(records, POSTBOX, test, size, "on-node")
    others = [(r["median"], label) for label in libraries(records) if label != POSTBOX
              for r in [find(records, label, test, size, "on-node")] if r is not None]
    best = (min(others) if at_most else max(others)) if others else None
    value = own["median"] if own else None
    return Point(what, own["unit"] if own else ("us" if at_most else "MB/s"), value,
                 best[0] if best else None, "best other (%s)" % best[1] if best else "best other",
                 "%s the best other" % ("<=" if at_most else ">="),
                 _verdict(value, best[0] if best else None, at_most),
                 value / best[0] if value is not None and best and best[0] else None)


def rsm_put_barrier(records: Iterable[dict]) -> Optional[dict]:
    """Postbox's RSM put + barrier of 8 bytes across two nodes, from the
    rsm-net part of the same run."""
    found = [r for r in records if r.get("suite") == "rsm" and r.get("test") == RSM_PUT_BARRIER
             and r.get("size") == SMALL and r.get("config", RSM_CONFIG) == RSM_CONFIG]
    return found[-1] if found else None


def progress_records(records: Iterable[dict]) -> list:
    return [r for r in records if is_rma(r) and r.get("test") == "progress"]


def acceptance(records: Sequence[dict]) -> list:
    """Issue 15's acceptance points, in the issue's order."""
    points = [
        _against_others(records, "8-byte put + flush latency, one node", "put_latency", SMALL,
                        True),
        _against_others(records, "8-byte fetch-and-op latency, one node", "fetch_and_op",
                        SMALL, True),
        _against_others(records, "4 MB put bandwidth, one node", "put_bandwidth", LARGE, False),
    ]
    own = find(records, POSTBOX, "put_latency", SMALL, "network")
    rsm = rsm_put_barrier(records)
    value, ref = (own["median"] if own else None), (rsm["median"] if rsm else None)
    bound = ref * LIMIT_NET_RATIO if ref is not None else None
    points.append(Point("8-byte put + flush latency, two nodes", "us", value, ref,
                        "Postbox RSM put + barrier (%s)" % RSM_PUT_BARRIER,
                        "<= %gx RSM put + barrier" % LIMIT_NET_RATIO,
                        _verdict(value, bound, True),
                        value / ref if value is not None and ref else None))
    progress = [r for r in progress_records(records)
                if r.get("library") == POSTBOX and _path(r) == "network"]
    done = progress[-1].get("epochs_done_s") if progress else None
    compute = progress[-1].get("compute_s") if progress else None
    points.append(Point("progress: epochs done while the target computes, two nodes", "s",
                        done, compute, "the target's compute time",
                        "<= %g s" % LIMIT_PROGRESS_S, _verdict(done, LIMIT_PROGRESS_S, True)))
    return points


def progress_summary(records: Iterable[dict]) -> Optional[str]:
    """"progress test: postbox (network) 0.012 s, mpich (network) 2.003 s of
    2.0 s of computation", or None without progress records."""
    found = progress_records(records)
    if not found:
        return None
    compute = max(r.get("compute_s") or 0.0 for r in found)
    return "progress test: %s, the target computing %.1f s" % (", ".join(
        "%s (%s) %.3f s" % (r.get("library"), _path(r), r.get("epochs_done_s") or 0.0)
        for r in found), compute)


def _cell(value: Optional[float]) -> str:
    return "<td>%s</td>" % ("-" if value is None else html.escape(format_value(value)))


def _verdict_html(verdict: str) -> str:
    cls = {"pass": "ok", "FAIL": "fail"}.get(verdict, "")
    return '<span class="%s">%s</span>' % (cls, html.escape(verdict))


def acceptance_html(records: Sequence[dict]) -> list:
    esc = html.escape
    out = ['<h3 id="rma-acceptance">Acceptance (issue 15)</h3>',
           "<p>Medians of one bench run (a layout run in rounds, the libraries interleaved "
           "in each: each library's median over the rounds); lock_all mode "
           "(MPI_Win_lock_all, each operation "
           "then MPI_Win_flush); one node: the MPI_Win_allocate window; two nodes: each "
           "library on its own network path. The RSM reference is "
           "postbox-rsm-net-bench's %s (one 8-byte put in a barrier span of its own, "
           "<code>rsm-net.jsonl</code>).</p>" % esc(RSM_PUT_BARRIER),
           '<table class="rma-acceptance"><tr><th class="text">figure</th><th>postbox</th>'
           '<th>reference</th><th class="text">reference is</th><th>ratio</th>'
           '<th class="text">limit</th><th class="text">verdict</th></tr>']
    for p in acceptance(records):
        out.append('<tr class="rma-point"><td class="text">%s (%s)</td>%s%s'
                   '<td class="text">%s</td><td>%s</td><td class="text">%s</td>'
                   '<td class="text">%s</td></tr>'
                   % (esc(p.what), esc(p.unit), _cell(p.postbox), _cell(p.reference),
                      esc(p.reference_what), "%.2f" % p.ratio if p.ratio is not None else "-",
                      esc(p.limit), _verdict_html(p.verdict)))
    out.append("</table>")
    return out


def progress_html(records: Sequence[dict]) -> list:
    esc = html.escape
    found = progress_records(records)
    if not found:
        return []
    out = ['<h3 id="rma-progress">Passive-target progress</h3>',
           "<p>The origin makes lock(exclusive) / 8-byte put / unlock epochs toward the "
           "target while the target computes without calling MPI, then enters "
           "MPI_Barrier. Times from the barrier both passed just before. A library that "
           "completes passive-target epochs without the target finishes long before the "
           "computation ends; one that needs the target's MPI calls finishes just after.</p>",
           '<table class="rma-progress"><tr><th class="text">library</th>'
           '<th class="text">path</th><th class="text">window</th><th>epochs</th>'
           '<th>epochs done at (s)</th><th>target computed (s)</th><th>per epoch (us)</th>'
           '<th class="text">progressed while the target computed</th></tr>']
    for r in found:
        out.append('<tr><td class="text">%s</td><td class="text">%s</td>'
                   '<td class="text">%s</td><td>%s</td>%s%s%s<td class="text">%s</td></tr>'
                   % (esc(str(r.get("library"))), esc(_path(r)), esc(str(r.get("flavor"))),
                      esc(str(r.get("epochs"))), _cell(r.get("epochs_done_s")),
                      _cell(r.get("compute_s")), _cell(r.get("epoch_us")),
                      "yes" if r.get("done_while_computing") else "no"))
    out.append("</table>")
    return out


def _median(values: Optional[list]) -> Optional[float]:
    """The median of a figure's medians over its rounds (None: none)."""
    known = [v for v in values or () if v is not None]
    return statistics.median(known) if known else None


def figures_html(records: Sequence[dict]) -> list:
    """Every figure but the progress test, the libraries side by side (a
    figure run in rounds: the median of the rounds' medians)."""
    esc = html.escape
    labels = libraries(records)
    rows: dict = {}
    for r in records:
        if not is_rma(r) or r.get("test") == "progress":
            continue
        key = (_path(r), r.get("flavor"), r.get("test"), r.get("sync"), r.get("size"),
               r.get("unit"))
        rows.setdefault(key, {}).setdefault(r.get("library"), []).append(r.get("median"))
    if not rows:
        return []
    out = ['<h3 id="rma-figures">Every one-sided figure</h3>',
           "<p>Medians: latency per epoch (us), bandwidth of an epoch of W operations "
           "(MB/s, MB = 10<sup>6</sup> B).</p>",
           '<div class="wide"><table class="rma-figures"><tr><th class="text">path</th>'
           '<th class="text">window</th><th class="text">test</th><th class="text">sync</th>'
           '<th>size</th><th class="text">unit</th>%s</tr>'
           % "".join("<th>%s</th>" % esc(str(label)) for label in labels)]
    for key in sorted(rows, key=lambda k: tuple(str(part) for part in k[:4]) + (k[4] or 0,)):
        path, flavor, test, sync, size, unit = key
        out.append('<tr><td class="text">%s</td><td class="text">%s</td><td class="text">%s'
                   '</td><td class="text">%s</td><td>%s</td><td class="text">%s</td>%s</tr>'
                   % (esc(path), esc(str(flavor)), esc(str(test)), esc(str(sync)),
                      esc(format_size(size or 0)), esc(str(unit)),
                      "".join(_cell(_median(rows[key].get(label))) for label in labels)))
    out.append("</table></div>")
    return out


def section(records: Sequence[dict]) -> list:
    """The page's "One-sided communication" section; empty without rma
    records."""
    labels = libraries(records)
    if not labels:
        return []
    out = ["<h2>One-sided communication</h2>",
           "<p>bench/mpi_rma.c (<code>rma.jsonl</code>): every library built with its own "
           "mpicc, rank 0 the origin and rank 1 the target; libraries: %s.</p>"
           % html.escape(", ".join(str(label) for label in labels))]
    if POSTBOX not in labels:
        out.append("<p>Postbox has no one-sided records in this run (its library lacked "
                   "MPI_Win_create when the bench ran, or its runs failed: see the parts in "
                   "<code>machine.json</code>); the acceptance table waits for them.</p>")
    out += acceptance_html(records)
    out += progress_html(records)
    out += figures_html(records)
    return out
