"""``postbox report DIR``: DIR/index.html from the results in DIR.

One self-contained page (inline CSS and SVG, no scripts, nothing fetched):
the machine, the acceptance ratios, plots in the manner of the seeds'
figures, then one table per test.  Records marked unsettled (the machine
changed core-to-core state during the measurement) are drawn grey.
"""

from __future__ import annotations

import html
import json
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from postbox import __version__, results

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
          "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
UNSETTLED = "#b0b0b0"
TIME_UNITS = ("ns", "us", "ms", "s")

# the columns of every table, in order (the rest go into "other")
TABLE_COLUMNS = ("library", "transport", "placement", "ranks", "nodes", "pairs", "size",
                 "metric", "unit", "median", "min", "max", "reps", "probe_before",
                 "probe_after", "state")
# keys that identify a series (one line in a plot) besides size
SERIES_KEYS = ("suite", "test", "library", "transport", "placement", "ranks", "nodes",
               "pairs", "metric", "unit")


# ---- values ---------------------------------------------------------------

def _number(value) -> Optional[float]:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def format_size(size: float) -> str:
    size = int(size)
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return "%d%s" % (size // scale, unit)
    return str(size)


def format_value(value) -> str:
    number = _number(value)
    if number is None:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "yes" if value else "no"
        return str(value)
    if number == int(number) and abs(number) < 1e15:
        return str(int(number))
    if abs(number) >= 100:
        return "%.1f" % number
    if abs(number) >= 1:
        return "%.3g" % number if abs(number) < 10 else "%.2f" % number
    return "%.3g" % number


def format_tick(value: float) -> str:
    """A short axis label: 1k, 100k, 1M for large values."""
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale * 10 or (abs(value) >= scale and value % scale == 0):
            return "%g%s" % (value / scale, suffix)
    return format_value(value)


# ---- plots ----------------------------------------------------------------

@dataclass
class Series:
    label: str
    points: list = field(default_factory=list)  # (x, y, settled)
    dashed: bool = False


@dataclass
class Figure:
    title: str
    caption: str
    xlabel: str
    ylabel: str
    series: list
    references: list = field(default_factory=list)  # (label, y)


class _Axis:
    """Maps data values to pixels, on a log scale when the range is wide."""

    def __init__(self, values: Sequence[float], lo_px: float, hi_px: float, base: int,
                 force_zero: bool):
        positive = [v for v in values if v > 0]
        lo, hi = min(values), max(values)
        self.log = bool(positive) and len(positive) == len(values) and hi / min(positive) >= 20
        self.base = base
        if self.log:
            self.lo = math.floor(math.log(min(positive), base))
            self.hi = math.ceil(math.log(hi, base))
            if self.hi == self.lo:
                self.hi += 1
        else:
            if force_zero and lo > 0:
                lo = 0.0
            if hi == lo:
                hi = lo + (abs(lo) or 1.0)
            self.lo, self.hi = lo, hi + (hi - lo) * 0.05
        self.lo_px, self.hi_px = lo_px, hi_px

    def __call__(self, value: float) -> float:
        if self.log:
            value = math.log(max(value, self.base ** self.lo), self.base)
        return self.lo_px + (value - self.lo) / (self.hi - self.lo) * (self.hi_px - self.lo_px)

    def ticks(self) -> list:
        if self.log:
            exponents = list(range(int(self.lo), int(self.hi) + 1))
            step = max(1, math.ceil(len(exponents) / 8))
            return [float(self.base ** e) for e in exponents[::step]]
        span = self.hi - self.lo
        raw = span / 5
        magnitude = 10 ** math.floor(math.log10(raw))
        step = min((m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw),
                   default=magnitude * 10)
        start = math.ceil(self.lo / step) * step
        ticks = []
        value = start
        while value <= self.hi + 1e-12 and len(ticks) < 12:
            ticks.append(value)
            value += step
        return ticks


def svg_plot(figure: Figure, width: int = 580, height: int = 340) -> str:
    """An inline SVG line plot of @figure."""
    left, right, top, bottom = 70, 190, 30, 50
    xs = [p[0] for s in figure.series for p in s.points]
    ys = [p[1] for s in figure.series for p in s.points] + [r[1] for r in figure.references]
    if not xs:
        return ""
    xaxis = _Axis(xs, left, width - right, 2, False)
    yaxis = _Axis(ys, height - bottom, top, 10, True)
    esc = html.escape
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" role="img" aria-label="%s">'
           % (width, height, width, height, esc(figure.title))]
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#fff" stroke="#999"/>'
               % (left, top, width - left - right, height - top - bottom))
    for tick in xaxis.ticks():
        x = xaxis(tick)
        label = format_size(tick) if xaxis.log else format_value(tick)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>'
                   % (x, top, x, height - bottom))
        out.append('<text x="%.1f" y="%d" text-anchor="middle" class="tick">%s</text>'
                   % (x, height - bottom + 16, esc(label)))
    for tick in yaxis.ticks():
        y = yaxis(tick)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>'
                   % (left, y, width - right, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end" class="tick">%s</text>'
                   % (left - 6, y + 4, esc(format_tick(tick))))
    out.append('<text x="%.1f" y="%d" text-anchor="middle" class="axis">%s</text>'
               % ((left + width - right) / 2, height - 12, esc(figure.xlabel)))
    out.append('<text x="16" y="%.1f" text-anchor="middle" class="axis" '
               'transform="rotate(-90 16 %.1f)">%s</text>'
               % ((top + height - bottom) / 2, (top + height - bottom) / 2, esc(figure.ylabel)))

    legend_y = top + 8
    for index, (label, value) in enumerate(figure.references):
        y = yaxis(value)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#444" '
                   'stroke-dasharray="6 4"><title>%s: %s</title></line>'
                   % (left, y, width - right, y, esc(label), esc(format_value(value))))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#444" '
                   'stroke-dasharray="6 4"/>'
                   % (width - right + 10, legend_y, width - right + 30, legend_y))
        out.append('<text x="%d" y="%d" class="legend">%s</text>'
                   % (width - right + 34, legend_y + 4, esc(label)))
        legend_y += 16
    for index, series in enumerate(figure.series):
        color = COLORS[index % len(COLORS)]
        points = sorted(series.points)
        path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", xaxis(x), yaxis(y))
                        for i, (x, y, _) in enumerate(points))
        dash = ' stroke-dasharray="4 3"' if series.dashed else ""
        out.append('<path d="%s" fill="none" stroke="%s" stroke-width="1.8"%s/>'
                   % (path, color, dash))
        for x, y, settled in points:
            fill, stroke = (color, color) if settled else ("#fff", UNSETTLED)
            out.append('<circle cx="%.1f" cy="%.1f" r="3.2" fill="%s" stroke="%s">'
                       '<title>%s: %s, %s%s</title></circle>'
                       % (xaxis(x), yaxis(y), fill, stroke, esc(series.label),
                          esc(format_size(x) if xaxis.log else format_value(x)),
                          esc(format_value(y)), "" if settled else " (unsettled)"))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                   % (width - right + 10, legend_y, width - right + 30, legend_y, color, dash))
        out.append('<text x="%d" y="%d" class="legend">%s</text>'
                   % (width - right + 34, legend_y + 4, esc(series.label)))
        legend_y += 16
    out.append("</svg>")
    return "\n".join(out)


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
        x, y = _number(record.get("size")), _number(record.get("median"))
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


def _rsm(record: dict) -> bool:
    return record.get("suite") == "rsm" and record.get("metric") != "ratio"


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
           and _number(r.get("median")) is not None]

    def references(unit: str) -> list:
        refs = []
        for record in raw:
            if record.get("unit") == unit:
                refs.append(("raw cache line" + ("" if results.is_settled(record)
                                                  else " (unsettled)"),
                             float(record["median"])))
        return refs[:1]

    return references


def figures(records: Sequence[dict]) -> list:
    """The plots of the page, in the order of the seeds' figures."""
    none = lambda unit: []  # noqa: E731
    out = []
    out += _split_by_unit(
        "RSMAPI export-side calls against segment size",
        "Time of each export-side call as the segment grows (after Fig. 6 of the RSM "
        "study: applications are better off with one large segment than many small ones).",
        "segment size (bytes)", [r for r in records if _is_export(r)], none)
    out += _split_by_unit(
        "RSM put and get against message size",
        "Put (remote write) against get (remote read) for each size (after Fig. 7 of the "
        "RSM study), with the machine's memcpy where measured.",
        "message size (bytes)", [r for r in records if _is_putget(r)], none)
    out += _split_by_unit(
        "Ping-pong latency against message size",
        "Half round trip of the RSM ping-pongs (by put, map or signal), beside the "
        "machine's raw cache-line ping-pong measured in the same run (dashed).",
        "message size (bytes)",
        [r for r in records if _is_pingpong(r)], _cacheline_references(list(records)))
    plotted = {id(r) for r in records if _is_export(r) or _is_putget(r) or _is_pingpong(r)}
    rest = OrderedDict()
    for record in records:
        if id(record) in plotted or record.get("metric") == "ratio":
            continue
        rest.setdefault((record.get("suite"), record.get("test")), []).append(record)
    for (suite, test), members in rest.items():
        out += _split_by_unit("%s / %s against size" % (suite, test), "", "size (bytes)",
                              members, none)
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
tr.unsettled td { color: #999; font-style: italic; }
.ok { color: #15803d; font-weight: bold; } .fail { color: #b91c1c; font-weight: bold; }
.figures { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure { margin: 0; } figcaption { max-width: 560px; font-size: 0.85em; color: #555; }
svg text.tick { font-size: 10px; fill: #555; } svg text.axis { font-size: 11px; }
svg text.legend { font-size: 10px; }
code { background: #f4f4f4; padding: 0 0.2em; }
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
    commands = description.get("commands") or []
    if commands:
        out.append("<p>Commands run:</p><ul>")
        for command in commands:
            out.append("<li><code>%s</code></li>" % esc(" ".join(map(str, command))))
        out.append("</ul>")
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
        limit = limits.get(name)
        value = _number(record.get("median"))
        if limit is None:
            verdict, limit_text = "", ""
        elif value is None:
            verdict, limit_text = '<span class="fail">missing</span>', ""
        else:
            verdict = ('<span class="ok">ok</span>' if limit.holds(value)
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
                text = format_size(value) if column == "size" and _number(value) else (
                    json.dumps(value) if isinstance(value, (dict, list)) else format_value(value))
                cls = ' class="text"' if isinstance(value, str) else ""
                cells.append("<td%s>%s</td>" % (cls, esc(text)))
            row_class = "" if results.is_settled(record) else ' class="unsettled"'
            out.append("<tr%s>%s</tr>" % (row_class, "".join(cells)))
        out.append("</table></div>")
    return out


def render(records: Sequence[dict], description: Optional[dict] = None,
           title: str = "Postbox results") -> str:
    """The whole page as a string."""
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
    plots = figures(records)
    if plots:
        out.append("<h2>Figures</h2>")
        out.append('<div class="figures">')
        for figure in plots:
            out.append("<figure><h3>%s</h3>%s<figcaption>%s Hollow grey points are "
                       "unsettled.</figcaption></figure>"
                       % (esc(figure.title), svg_plot(figure), esc(figure.caption)))
        out.append("</div>")
    out.append("<h2>Measurements</h2>")
    out += _tables(records)
    out.append("</body></html>")
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
    page = directory / "index.html"
    tmp = directory / "index.html.tmp"
    tmp.write_text(render(records, description, title), encoding="utf-8")
    tmp.replace(page)
    return page
