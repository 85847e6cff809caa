"""Line plots for ``postbox report``: a Figure (series of points, reference
lines, labels) becomes a list of marks (plot_marks), drawn as inline SVG
(svg_plot) and, with Pillow, as PNG (png_plot) from the same marks, so the
two cannot disagree; and the number formats the page and the axes share.
Nothing here knows what a bench record is.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
          "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
UNSETTLED = "#b0b0b0"
SVG_STYLE = ("text.tick { font-size: 10px; fill: #555; } text.axis { font-size: 11px; } "
             "text.legend { font-size: 10px; } text { font-family: system-ui, sans-serif; }")


# ---- values ---------------------------------------------------------------

def number(value) -> Optional[float]:
    """@value as a finite float, or None (booleans, text, NaN, infinities)."""
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
    x = number(value)
    if x is None:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "yes" if value else "no"
        return str(value)
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    if abs(x) >= 100:
        return "%.1f" % x
    if abs(x) >= 1:
        return "%.3g" % x if abs(x) < 10 else "%.2f" % x
    return "%.3g" % x


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
    color: Optional[str] = None  # default: by position
    dasharray: Optional[str] = None  # a dash pattern of its own (overrides dashed)
    markers: bool = True  # a circle at each point (False: the line alone, e.g. a model)


@dataclass
class Figure:
    title: str
    caption: str
    xlabel: str
    ylabel: str
    series: list
    references: list = field(default_factory=list)  # (label, y)
    name: str = ""  # file name fig-<name>.svg
    log: bool = False  # log-log whatever the range
    source: list = field(default_factory=list)  # lines: command and library version
    xticks: list = field(default_factory=list)  # the x ticks, when not the axis' own
    # the seed figure or table it redraws, e.g. "000-fig-16" (report.seed_contents)
    seed: str = ""


class _Axis:
    """Maps data values to pixels, on a log scale when the range is wide."""

    def __init__(self, values: Sequence[float], lo_px: float, hi_px: float, base: int,
                 force_zero: bool, force_log: bool = False):
        positive = [v for v in values if v > 0]
        lo, hi = min(values), max(values)
        self.log = bool(positive) and len(positive) == len(values) and (
            force_log or hi / min(positive) >= 20)
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


@dataclass
class Mark:
    """One drawing element of a plot, in pixels: the SVG and the PNG of a
    figure are drawn from the same list."""

    kind: str  # "rect" (x, y, w, h), "line" (x1, y1, x2, y2), "path" (points),
    #            "circle" (cx, cy, r), "text" (x, y)
    at: tuple
    stroke: Optional[str] = None
    fill: Optional[str] = None
    width: float = 1.0
    dash: Optional[str] = None  # SVG stroke-dasharray
    text: str = ""
    anchor: str = "start"  # text: start, middle, end
    cls: str = ""  # text: tick, axis, legend
    rotate: bool = False  # text: turned 90 degrees counter-clockwise about its point
    title: Optional[str] = None  # tooltip (SVG only)


PLOT_SIZE = (580, 340)
FONT_PX = {"tick": 10, "axis": 11, "legend": 10}


def plot_marks(figure: Figure, width: int = PLOT_SIZE[0], height: int = PLOT_SIZE[1]) -> list:
    """The elements of @figure's plot, back to front; [] without points."""
    left, right, top, bottom = 70, 190, 30, 50
    xs = [p[0] for s in figure.series for p in s.points]
    ys = [p[1] for s in figure.series for p in s.points] + [r[1] for r in figure.references]
    if not xs:
        return []
    xaxis = _Axis(xs, left, width - right, 2, False, figure.log)
    yaxis = _Axis(ys, height - bottom, top, 10, True, figure.log)
    out = [Mark("rect", (left, top, width - left - right, height - top - bottom),
                stroke="#999", fill="#fff")]
    for tick in figure.xticks or xaxis.ticks():
        x = xaxis(tick)
        label = format_size(tick) if xaxis.log else format_value(tick)
        out.append(Mark("line", (x, top, x, height - bottom), stroke="#eee"))
        out.append(Mark("text", (x, height - bottom + 16), text=label, anchor="middle",
                        cls="tick", fill="#555"))
    for tick in yaxis.ticks():
        y = yaxis(tick)
        out.append(Mark("line", (left, y, width - right, y), stroke="#eee"))
        out.append(Mark("text", (left - 6, y + 4), text=format_tick(tick), anchor="end",
                        cls="tick", fill="#555"))
    out.append(Mark("text", ((left + width - right) / 2, height - 12), text=figure.xlabel,
                    anchor="middle", cls="axis"))
    out.append(Mark("text", (16, (top + height - bottom) / 2), text=figure.ylabel,
                    anchor="middle", cls="axis", rotate=True))

    legend_y = top + 8
    for label, value in figure.references:
        y = yaxis(value)
        out.append(Mark("line", (left, y, width - right, y), stroke="#444", dash="6 4",
                        title="%s: %s" % (label, format_value(value))))
        out.append(Mark("line", (width - right + 10, legend_y, width - right + 30, legend_y),
                        stroke="#444", dash="6 4"))
        out.append(Mark("text", (width - right + 34, legend_y + 4), text=label, cls="legend"))
        legend_y += 16
    for index, series in enumerate(figure.series):
        color = series.color or COLORS[index % len(COLORS)]
        points = sorted(series.points)
        dash = series.dasharray or ("4 3" if series.dashed else None)
        out.append(Mark("path", tuple((xaxis(x), yaxis(y)) for x, y, _ in points),
                        stroke=color, width=1.8, dash=dash))
        for x, y, settled in (points if series.markers else ()):
            fill, stroke = (color, color) if settled else ("#fff", UNSETTLED)
            out.append(Mark("circle", (xaxis(x), yaxis(y), 3.2), stroke=stroke, fill=fill,
                            title="%s: %s, %s%s" % (
                                series.label, format_size(x) if xaxis.log else format_value(x),
                                format_value(y), "" if settled else " (unsettled)")))
        out.append(Mark("line", (width - right + 10, legend_y, width - right + 30, legend_y),
                        stroke=color, width=2, dash=dash))
        out.append(Mark("text", (width - right + 34, legend_y + 4), text=series.label,
                        cls="legend"))
        legend_y += 16
    return out


def _svg_mark(mark: Mark) -> str:
    esc = html.escape
    dash = ' stroke-dasharray="%s"' % mark.dash if mark.dash else ""
    title = "<title>%s</title>" % esc(mark.title) if mark.title else ""
    if mark.kind == "rect":
        x, y, w, h = mark.at
        return '<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s"/>' % (
            x, y, w, h, mark.fill, mark.stroke)
    if mark.kind == "line":
        width = ' stroke-width="%g"' % mark.width if mark.width != 1.0 else ""
        body = '<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"%s%s' % (
            *mark.at, mark.stroke, width, dash)
        return body + (">%s</line>" % title if title else "/>")
    if mark.kind == "path":
        path = " ".join("%s%.1f,%.1f" % ("M" if i == 0 else "L", x, y)
                        for i, (x, y) in enumerate(mark.at))
        return '<path d="%s" fill="none" stroke="%s" stroke-width="%g"%s/>' % (
            path, mark.stroke, mark.width, dash)
    if mark.kind == "circle":
        return '<circle cx="%.1f" cy="%.1f" r="%g" fill="%s" stroke="%s">%s</circle>' % (
            *mark.at, mark.fill, mark.stroke, title)
    x, y = mark.at
    anchor = ' text-anchor="%s"' % mark.anchor if mark.anchor != "start" else ""
    turn = ' transform="rotate(-90 %.1f %.1f)"' % (x, y) if mark.rotate else ""
    return '<text x="%.1f" y="%.1f"%s class="%s"%s>%s</text>' % (
        x, y, anchor, mark.cls, turn, esc(mark.text))


def svg_plot(figure: Figure, width: int = PLOT_SIZE[0], height: int = PLOT_SIZE[1]) -> str:
    """An inline SVG line plot of @figure."""
    marks = plot_marks(figure, width, height)
    if not marks:
        return ""
    esc = html.escape
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" role="img" aria-label="%s"%s>'
           % (width, height, width, height, esc(figure.title),
              ' id="fig-%s"' % esc(figure.name) if figure.name else "")]
    out.append("<title>%s</title>" % esc(figure.title))
    if figure.source:
        out.append("<desc>%s</desc>" % esc("Produced by: " + "; ".join(figure.source)))
    out.append("<style>%s</style>" % SVG_STYLE)
    out += [_svg_mark(mark) for mark in marks]
    out.append("</svg>")
    return "\n".join(out)


# ---- PNG: the same marks, drawn with Pillow ------------------------------

PNG_SCALE = 2  # pixels per SVG unit: a 1160 x 680 image


def png_available() -> Optional[str]:
    """None when PNG files can be written, else why not."""
    try:
        from PIL import Image, ImageDraw, ImageFont  # noqa: F401
    except ImportError:
        return "Pillow is not installed in the tools' venv (pip install pillow)"
    return None


def _dashes(points: Sequence[tuple], pattern: Optional[str], scale: float) -> list:
    """The polyline @points cut into the drawn pieces of the SVG dash
    @pattern (lengths in SVG units); the whole line without one."""
    if not pattern:
        return [list(points)]
    lengths = [float(v) * scale for v in pattern.split()]
    pieces, current, index, left, on = [], [points[0]], 0, lengths[0], True
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        span = math.hypot(x1 - x0, y1 - y0)
        done = 0.0
        while span - done > left:
            done += left
            t = done / span
            point = (x0 + (x1 - x0) * t, y0 + (y1 - y0) * t)
            if on:
                current.append(point)
                pieces.append(current)
            current = [point]
            on = not on
            index = (index + 1) % len(lengths)
            left = lengths[index]
        left -= span - done
        current.append((x1, y1))
    if on and len(current) > 1:
        pieces.append(current)
    return pieces


def _png_font(px: float):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=px)
    except TypeError:  # Pillow < 10.1: one bitmap size
        return ImageFont.load_default()


def png_plot(figure: Figure, path: Path, width: int = PLOT_SIZE[0],
             height: int = PLOT_SIZE[1], scale: int = PNG_SCALE) -> bool:
    """Write @figure as a PNG at @path (the same marks as its SVG); False
    when there is nothing to draw."""
    from PIL import Image, ImageDraw

    marks = plot_marks(figure, width, height)
    if not marks:
        return False
    image = Image.new("RGB", (width * scale, height * scale), "#ffffff")
    draw = ImageDraw.Draw(image)
    fonts = {}
    anchors = {"start": "ls", "middle": "ms", "end": "rs"}
    for mark in marks:
        if mark.kind == "rect":
            x, y, w, h = (v * scale for v in mark.at)
            draw.rectangle((x, y, x + w, y + h), fill=mark.fill, outline=mark.stroke,
                           width=scale)
        elif mark.kind in ("line", "path"):
            points = ([(mark.at[0] * scale, mark.at[1] * scale),
                       (mark.at[2] * scale, mark.at[3] * scale)] if mark.kind == "line" else
                      [(x * scale, y * scale) for x, y in mark.at])
            if len(points) < 2:
                continue
            for piece in _dashes(points, mark.dash, scale):
                draw.line(piece, fill=mark.stroke, width=max(1, round(mark.width * scale)),
                          joint="curve")
        elif mark.kind == "circle":
            cx, cy, r = (v * scale for v in mark.at)
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=mark.fill, outline=mark.stroke,
                         width=scale)
        elif mark.kind == "text" and mark.text:
            px = FONT_PX.get(mark.cls, 10) * scale
            font = fonts.setdefault(px, _png_font(px))
            x, y = (v * scale for v in mark.at)
            color = mark.fill or "#222222"
            if not mark.rotate:
                try:
                    draw.text((x, y), mark.text, fill=color, font=font,
                              anchor=anchors[mark.anchor])
                except ValueError:  # a bitmap font has no anchors
                    draw.text((x, y - px), mark.text, fill=color, font=font)
                continue
            box = draw.textbbox((0, 0), mark.text, font=font)
            label = Image.new("RGBA", (box[2] - box[0] + 4, box[3] - box[1] + 4), (0, 0, 0, 0))
            ImageDraw.Draw(label).text((2 - box[0], 2 - box[1]), mark.text, fill=color,
                                       font=font)
            label = label.rotate(90, expand=True)
            image.paste(label, (int(x - label.width / 2), int(y - label.height / 2)), label)
    image.save(path, "PNG", optimize=True)
    return True
