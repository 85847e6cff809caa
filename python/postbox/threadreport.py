"""The report's thread section: bench/mpi_p2p.c under MPI_Init_thread (``threads.jsonl``).

Issue 16's acceptance, from one bench run (threadbench):

- the 8 B on-node ping-pong (``pingpong_standard``) of Postbox with
  MPI_THREAD_MULTIPLE granted, one thread communicating, at most
  LIMIT_MULTIPLE_OVER_FUNNELED times the same figure with MPI_THREAD_FUNNELED:
  the two levels run in interleaved rounds (key ``round``); a round counts
  when its two records are settled, in the same probe state and with their
  four probes within PROBE_AGREEMENT of each other (as the engine's
  interleaved ratios count a pair), and the ratio is the median of
  MULTIPLE's over the counted rounds of the commonest state over the same
  of FUNNELED's (the median over rounds of the collective and one-sided
  sections); every round, said so, when none counts;
- ``msgrate_threads``: 4 threads per rank, each on its own communicator,
  every message checked: each library's aggregate messages per second and
  how many messages were checked.

The records of these runs carry ``thread_level_required`` (mpi_p2p's
``--thread-level``); that is what keeps them out of the point-to-point
figures and comparisons (report._is_p2p), which compare libraries at the
level MPI_Init gives.
"""

from __future__ import annotations

import html
import statistics
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from postbox.plot import format_value

POSTBOX = "postbox"
PINGPONG = "pingpong_standard"
PINGPONG_SIZE = 8
MSGRATE = "msgrate_threads"
# the levels compared, numerator over denominator
MULTIPLE, FUNNELED = "multiple", "funneled"
LIMIT_MULTIPLE_OVER_FUNNELED = 1.1
RATIO_TEST = "ratio_pingpong_8B_multiple_vs_funneled"
# the probes around the two runs of a round agree when the largest is at
# most this many times the smallest (bench/engine.c's settled rule)
PROBE_AGREEMENT = 1.5


def is_thread_run(record: dict) -> bool:
    """A record of mpi_p2p run with --thread-level (threads.jsonl)."""
    return record.get("suite") == "p2p" and record.get("thread_level_required") is not None


def is_threads(record: dict) -> bool:
    """A record of this section: a thread run, or the ratio made from them."""
    return is_thread_run(record) or record.get("suite") == "threads"


def pingpong_records(records: Iterable[dict], level: str,
                     library: str = POSTBOX) -> list:
    """@library's 8 B on-node ping-pongs run with --thread-level @level and
    granted it, in the order found."""
    return [r for r in records if is_thread_run(r) and r.get("library") == library
            and r.get("test") == PINGPONG and r.get("size") == PINGPONG_SIZE
            and (r.get("path") or "on-node") == "on-node"
            and r.get("thread_level_required") == level and r.get("thread_level") == level]


def _usable(a: dict, b: dict) -> Optional[str]:
    """Why the pair (@a, @b) does not count, or None when it does."""
    if a.get("settled") is False or b.get("settled") is False:
        return "unsettled"
    states = (a.get("state"), b.get("state"))
    if any(state not in ("fast", "slow") for state in states):
        return "no probe state"
    if states[0] != states[1]:
        return "different states"
    try:
        probes = [float(r[key]) for r in (a, b) for key in ("probe_before", "probe_after")]
    except (KeyError, TypeError, ValueError):
        return "no probe state"
    if min(probes) <= 0 or max(probes) > PROBE_AGREEMENT * min(probes):
        return "probes disagree"
    return None


@dataclass
class LevelRatio:
    """MULTIPLE over FUNNELED of the 8 B ping-pong, from interleaved rounds."""

    pairs: list = field(default_factory=list)  # (round, funneled us, multiple us, ratio, why)
    funneled: Optional[float] = None  # median over the rounds counted (us)
    multiple: Optional[float] = None
    value: Optional[float] = None  # multiple / funneled
    low: Optional[float] = None  # the least and greatest ratio of a counted round
    high: Optional[float] = None
    used: int = 0  # pairs counted
    state: str = "unknown"  # the probe state of the pairs counted
    mixed: bool = False  # no pair was usable: every pair counted, states mixed

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "missing"
        return "pass" if self.value <= LIMIT_MULTIPLE_OVER_FUNNELED else "FAIL"

    def text(self) -> str:
        """One line: both medians, the ratio, the pairs, the limit, the verdict."""
        if self.value is None:
            return ("8 B ping-pong MULTIPLE/FUNNELED: missing (%d FUNNELED, %d MULTIPLE "
                    "rounds)" % (sum(1 for p in self.pairs if p[1] is not None),
                                 sum(1 for p in self.pairs if p[2] is not None)))
        return ("8 B ping-pong MULTIPLE/FUNNELED %.3f us / %.3f us = %.3f (%s of %d rounds%s) "
                "<= %g: %s" % (self.multiple, self.funneled, self.value,
                               "all, states mixed" if self.mixed else "%d" % self.used,
                               len(self.pairs),
                               "" if self.mixed else ", %s state" % self.state,
                               LIMIT_MULTIPLE_OVER_FUNNELED, self.verdict))


def level_ratio(records: Sequence[dict], library: str = POSTBOX) -> LevelRatio:
    """@library's MULTIPLE/FUNNELED ratio of the 8 B ping-pong: each level's
    median over the rounds that count (both levels measured, the pair
    _usable, in the commonest probe state; every round measured at both
    levels, marked mixed, when none counts), MULTIPLE's over FUNNELED's;
    low and high: the least and greatest ratio of one of those rounds."""
    funneled = {r.get("round"): r for r in pingpong_records(records, FUNNELED, library)}
    multiple = {r.get("round"): r for r in pingpong_records(records, MULTIPLE, library)}
    out = LevelRatio()
    if funneled:
        out.funneled = statistics.median(float(r["median"]) for r in funneled.values())
    if multiple:
        out.multiple = statistics.median(float(r["median"]) for r in multiple.values())
    rounds = sorted(set(funneled) | set(multiple), key=lambda k: (k is None, k or 0))
    good: dict = {}
    every = []
    for k in rounds:
        a, b = funneled.get(k), multiple.get(k)
        if a is None or b is None or not float(a.get("median") or 0) > 0:
            out.pairs.append((k, a and a.get("median"), b and b.get("median"), None,
                              "one level only"))
            continue
        pair = (float(a["median"]), float(b["median"]))
        why = _usable(a, b)
        out.pairs.append((k, pair[0], pair[1], pair[1] / pair[0], why))
        every.append(pair)
        if why is None:
            good.setdefault(a["state"], []).append(pair)
    if good:
        out.state, chosen = max(good.items(), key=lambda item: len(item[1]))
    elif every:
        out.mixed, chosen = True, every
    else:
        return out
    out.funneled = statistics.median(f for f, _ in chosen)
    out.multiple = statistics.median(m for _, m in chosen)
    out.value = out.multiple / out.funneled
    out.low = min(m / f for f, m in chosen)
    out.high = max(m / f for f, m in chosen)
    out.used = len(chosen)
    return out


def ratio_record(ratio: LevelRatio, host: Optional[str] = None,
                 timestamp: Optional[str] = None) -> Optional[dict]:
    """The ratio as a record of the results (suite threads), with its own
    limit so that the report's acceptance table and `postbox bench` judge
    it; None without a value."""
    if ratio.value is None:
        return None
    record = {
        "suite": "threads", "test": RATIO_TEST, "library": POSTBOX, "transport": "shm",
        "placement": "on-node", "ranks": 2, "nodes": 1, "pairs": 1, "size": PINGPONG_SIZE,
        "metric": "ratio", "unit": "x", "median": ratio.value, "min": ratio.low,
        "max": ratio.high, "reps": ratio.used, "probe_before": None, "probe_after": None,
        "settled": not ratio.mixed, "state": ratio.state, "target": LIMIT_MULTIPLE_OVER_FUNNELED,
        "target_op": "<=", "numerator": "pingpong_standard 8 B, MPI_THREAD_MULTIPLE",
        "denominator": "pingpong_standard 8 B, MPI_THREAD_FUNNELED",
        "note": "median of MULTIPLE over median of FUNNELED (%.4g us / %.4g us) over %s of %d "
                "interleaved rounds; min, max: one round's ratio"
                % (ratio.multiple, ratio.funneled, "all (probe states mixed)" if ratio.mixed
                   else "the %d in the %s state" % (ratio.used, ratio.state),
                   len(ratio.pairs)),
    }
    if host:
        record["host"] = host
    if timestamp:
        record["timestamp"] = timestamp
    return record


def msgrate_records(records: Iterable[dict]) -> list:
    """The msgrate_threads records, Postbox's first."""
    found = [r for r in records if is_thread_run(r) and r.get("test") == MSGRATE]
    return sorted(found, key=lambda r: r.get("library") != POSTBOX)


def msgrate_text(record: dict) -> str:
    """"postbox 1.02e+06 msg/s (4 threads per rank, 17664 messages checked)"."""
    checked = record.get("messages_checked")
    return "%s %s msg/s at %s B (%s threads per rank, %s)" % (
        record.get("library"), format_value(record.get("median")), record.get("size"),
        record.get("threads"),
        "%d messages checked, none wrong" % checked
        if record.get("checked") and isinstance(checked, (int, float)) and checked > 0
        else "not checked")


def summary(records: Sequence[dict]) -> str:
    """The part's detail line: the ratio and every library's thread rate."""
    parts = [level_ratio(records).text()]
    parts += ["msgrate_threads %s" % msgrate_text(r) for r in msgrate_records(records)]
    return "; ".join(parts)


def _cell(value: Optional[float], digits: str = "%.3f") -> str:
    return "<td>%s</td>" % ("-" if value is None else html.escape(digits % value))


def _verdict_html(verdict: str) -> str:
    cls = {"pass": "ok", "FAIL": "fail"}.get(verdict, "")
    return '<span class="%s">%s</span>' % (cls, html.escape(verdict))


def section(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """The page's "Threads" section; empty without thread runs."""
    esc = html.escape
    runs = [r for r in records if is_thread_run(r)]
    if not runs:
        return []
    ratio = level_ratio(records)
    out = ["<h2>Threads (issue 16)</h2>",
           "<p>bench/mpi_p2p.c run with <code>--thread-level</code> "
           "(<code>threads.jsonl</code>): MPI_Init_thread at the level named, each record "
           "saying the level granted.</p>",
           '<h3 id="threads-acceptance">Acceptance</h3>',
           '<table class="threads-acceptance"><tr><th class="text">figure</th>'
           '<th>FUNNELED (us)</th><th>MULTIPLE (us)</th><th>ratio</th><th>min</th>'
           '<th>max</th><th class="text">pairs counted</th><th class="text">limit</th>'
           '<th class="text">verdict</th></tr>',
           '<tr class="threads-point"><td class="text">Postbox 8 B on-node ping-pong, '
           'MPI_THREAD_MULTIPLE (one thread communicating) over MPI_THREAD_FUNNELED</td>'
           '%s%s%s%s%s<td class="text">%s</td><td class="text">&lt;= %g</td>'
           '<td class="text">%s</td></tr></table>'
           % (_cell(ratio.funneled), _cell(ratio.multiple), _cell(ratio.value),
              _cell(ratio.low, "%.2f"), _cell(ratio.high, "%.2f"),
              esc("all %d, probe states mixed" % len(ratio.pairs) if ratio.mixed
                  else "%d of %d (%s state)" % (ratio.used, len(ratio.pairs), ratio.state)),
              LIMIT_MULTIPLE_OVER_FUNNELED, _verdict_html(ratio.verdict)),
           "<p>The two levels run one after the other in each round (the order alternating "
           "round by round), one program run each. A round counts when both its records "
           "are settled, in the same probe state, and their four probes within %gx of each "
           "other; the FUNNELED and MULTIPLE columns are the medians over the rounds "
           "counted (those of the commonest state), the ratio MULTIPLE's over FUNNELED's, "
           "min and max the least and greatest ratio of one counted round.</p>"
           % PROBE_AGREEMENT]
    if ratio.pairs:
        out.append('<table class="threads-rounds"><tr><th>round</th><th>FUNNELED (us)</th>'
                   '<th>MULTIPLE (us)</th><th>ratio</th><th class="text">counted</th></tr>')
        for k, a, b, value, why in ratio.pairs:
            out.append('<tr><td>%s</td>%s%s%s<td class="text">%s</td></tr>'
                       % (esc("-" if k is None else str(k)), _cell(a), _cell(b),
                          _cell(value, "%.2f"), esc(why or "yes")))
        out.append("</table>")
    rates = msgrate_records(records)
    out.append('<h3 id="threads-msgrate">Message rate with threads</h3>')
    out.append("<p><code>msgrate_threads</code>: T threads per rank, each pair of threads on a "
               "communicator of its own (MPI_Comm_dup of the world); rank 0's threads send "
               "windows of MPI_Isend, rank 1's receive them into windows of MPI_Irecv; every "
               "message's stamp is verified, and every byte of two more windows. A run whose "
               "check fails leaves no record.</p>")
    out.append('<table class="threads-msgrate"><tr><th class="text">library</th>'
               '<th class="text">version</th><th>size</th><th>threads per rank</th>'
               '<th>messages/s</th><th>min</th><th>max</th><th>messages checked</th>'
               '<th class="text">check</th></tr>')
    for r in rates:
        checked = r.get("messages_checked")
        good = bool(r.get("checked")) and isinstance(checked, (int, float)) and checked > 0
        out.append('<tr><td class="text">%s</td><td class="text">%s</td><td>%s</td><td>%s</td>'
                   '<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class="text">%s</td></tr>'
                   % (esc(str(r.get("library"))), esc(str(r.get("library_version") or "")),
                      esc(str(r.get("size"))), esc(str(r.get("threads"))),
                      esc(format_value(r.get("median"))), esc(format_value(r.get("min"))),
                      esc(format_value(r.get("max"))), esc(str(checked)),
                      _verdict_html("pass" if good else "not checked")))
    for entry in (description or {}).get("threads_libraries", []):
        if entry.get("granted") is False:
            out.append('<tr><td class="text">%s</td><td class="text" colspan="8">%s</td></tr>'
                       % (esc(str(entry.get("label"))), esc(str(entry.get("detail") or ""))))
    out.append("</table>")
    return out
