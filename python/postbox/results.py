"""Reading a results folder: the JSON lines the bench programs append.

Each line is one measurement with at least the keys listed in
bench/README.md#json-keys.  Acceptance ratios are records whose
``metric`` is ``"ratio"``; their ``test`` names the ratio, followed by
``[config]`` when the record has a ``config`` (postbox-rsm-net-bench: the
same ratios over loopback and across --netns).  A ratio record may carry
its own limit (``target``, ``target_op``); ``--check`` judges only LIMITS.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

# every record carries at least these keys
RECORD_KEYS = (
    "suite", "test", "library", "transport", "placement", "ranks", "nodes", "pairs",
    "size", "metric", "unit", "median", "min", "max", "reps", "probe_before",
    "probe_after", "settled", "state",
)


@dataclass(frozen=True)
class Limit:
    """An acceptance limit on a ratio: the median must be <= (or >=) bound."""

    name: str
    op: str  # "<=" or ">="
    bound: float
    meaning: str

    def holds(self, value: float) -> bool:
        return value <= self.bound if self.op == "<=" else value >= self.bound


# the limits `postbox bench --check` enforces
LIMITS = (
    Limit("ratio_pingpong_put_64_vs_cacheline", "<=", 1.5,
          "64-byte put ping-pong over raw cache-line ping-pong"),
    Limit("ratio_put_4MB_vs_memcpy", ">=", 0.8,
          "4 MB put bandwidth over memcpy bandwidth"),
)


class ResultsError(Exception):
    pass


def load_jsonl(path: Path) -> list[dict]:
    """The records of one JSON-lines file; a malformed line is an error."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ResultsError("%s:%d: not JSON: %s" % (path, number, exc))
            if not isinstance(record, dict):
                raise ResultsError("%s:%d: not a JSON object" % (path, number))
            records.append(record)
    return records


def load_dir(directory: Path) -> list[dict]:
    """Every record of every *.jsonl file in @directory, in file-name order."""
    records = []
    for path in sorted(Path(directory).glob("*.jsonl")):
        records.extend(load_jsonl(path))
    return records


def missing_keys(record: dict) -> list[str]:
    return [key for key in RECORD_KEYS if key not in record]


def is_settled(record: dict) -> bool:
    """False only when the record says it is not settled."""
    return record.get("settled", True) is not False


def ratio_name(record: dict) -> str:
    """The name of a ratio record: its test, and its config if it has one."""
    name = str(record.get("test"))
    return "%s [%s]" % (name, record["config"]) if record.get("config") else name


def ratios(records: Iterable[dict]) -> dict[str, dict]:
    """The ratio records by ratio_name (the last one wins)."""
    found = {}
    for record in records:
        if record.get("metric") == "ratio" and "test" in record:
            found[ratio_name(record)] = record
    return found


def record_limit(record: dict) -> Optional[Limit]:
    """The limit a ratio record states itself (keys target and target_op), if any."""
    op, bound = record.get("target_op"), record.get("target")
    if op not in ("<=", ">=") or isinstance(bound, bool) or not isinstance(bound, (int, float)):
        return None
    meaning = "%s over %s" % (record.get("numerator"), record.get("denominator")) \
        if record.get("numerator") and record.get("denominator") else ""
    return Limit(ratio_name(record), op, float(bound), meaning)


def limit_note(record: Optional[dict]) -> Optional[str]:
    """Why the limit a ratio record states is not judged in this run (key
    limit_note: it was measured where the limit does not apply, such as the
    DSM applications at the quick profile's CI sizes), or None."""
    note = record.get("limit_note") if record is not None else None
    return str(note) if note else None


def ratio_value(record: Optional[dict]) -> Optional[float]:
    """The median of a ratio record as a number, or None."""
    try:
        return float(record["median"]) if record is not None else None
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Verdict:
    limit: Limit
    value: Optional[float]  # None when the run has no such ratio
    record: Optional[dict]

    @property
    def ok(self) -> bool:
        return self.value is not None and self.limit.holds(self.value)

    def describe(self) -> str:
        if self.value is None:
            return "%-38s missing (the bench did not report it)" % self.limit.name
        note = "" if self.record is None or is_settled(self.record) else "  (unsettled)"
        unjudged = limit_note(self.record)
        return "%-38s %7.3f  limit %s %g  %s%s" % (
            self.limit.name, self.value, self.limit.op, self.limit.bound,
            "not judged: %s" % unjudged if unjudged else "ok" if self.ok else "FAIL", note)


def check(records: Iterable[dict], limits: Sequence[Limit] = LIMITS) -> list[Verdict]:
    """Judge each limit against the ratios found in @records."""
    found = ratios(records)
    verdicts = []
    for limit in limits:
        record = found.get(limit.name)
        verdicts.append(Verdict(limit, ratio_value(record), record))
    return verdicts


def format_ratios(records: Iterable[dict]) -> str:
    """A summary of every ratio record, the checked ones first, then those
    with a limit of their own, then the rest."""
    records = list(records)
    found = ratios(records)
    lines = ["Acceptance ratios:"]
    for verdict in check(records):
        lines.append("  " + verdict.describe())
    limited = {limit.name for limit in LIMITS}
    for name, record in sorted(found.items()):
        own = record_limit(record)
        if name in limited or own is None:
            continue
        lines.append("  " + Verdict(own, ratio_value(record), record).describe())
    for name, record in sorted(found.items()):
        if name in limited or record_limit(record) is not None:
            continue
        note = "" if is_settled(record) else "  (unsettled)"
        try:
            lines.append("  %-38s %7.3f%s" % (name, float(record["median"]), note))
        except (KeyError, TypeError, ValueError):
            lines.append("  %-38s %s%s" % (name, record.get("median"), note))
    return "\n".join(lines) + "\n"
