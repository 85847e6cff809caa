"""The report's traffic section: bench/mpi_traffic.c (``traffic.jsonl``).

Seed 000's Figs. 14 and 15 (Qian et al., the Sun Fire Link evaluation,
§VI-E) redrawn for this machine, every library on the same axes:

- Fig. 14, uniform random traffic: accepted bandwidth against offered, one
  panel per job shape (ranks, one node or across virtual nodes / the
  library's network path), a line per library and pair of distributions
  (message size S and gap T, each uniform or exponential); the saturation
  point (senders never wait) ends each line;
- Fig. 15, the permutations: the accepted bandwidth at saturation of each
  permutation, a bar per library, with the share of the bytes that left
  the sender's node.

The seed's values (read from its text: it gives the figures' numbers only
there) stand beside this machine's in tables (SEED_FIG14, SEED_FIG15); the
seed measured 16 to 64 processes on four 24-CPU nodes, this machine 2 to 8
ranks on a few cores, so the comparison is of shape, not of size.
"""

from __future__ import annotations

import html
import statistics
from typing import Iterable, Optional, Sequence

from postbox.plot import COLORS, Figure, Series, format_value

POSTBOX = "postbox"
SUITE = "traffic"
UNIFORM = "uniform"
# the permutations in seed 000's order (as trafficbench.PERMUTATIONS), with
# the names its Fig. 15 gives them
PERMUTATION_NAMES = (
    ("baseline_single", "Baseline, single-stage"), ("baseline_multi", "Baseline, multi-stage"),
    ("bit_reversal", "Bit-reversal"), ("butterfly_single", "Butterfly, single-stage"),
    ("butterfly_multi", "Butterfly, multi-stage"), ("complement", "Complement"),
    ("cube_single", "Cube, single-stage"), ("cube_multi", "Cube, multi-stage"),
    ("matrix_transpose", "Matrix transpose"), ("neighbor", "Neighbor"),
    ("perfect_shuffle", "Perfect shuffle"))
DISTS = ("uniform", "exponential")
# the dash of each (size, gap) distribution pair in Fig. 14
DASHES = {("uniform", "uniform"): None, ("uniform", "exponential"): "6 3",
          ("exponential", "uniform"): "2 2", ("exponential", "exponential"): "8 3 2 3"}

# The seed's values.  Seed 000 (Qian, Afsahi, Fredrickson, Zamani,
# "Performance Evaluation of the Sun Fire Link SMP Clusters") gives the
# numbers of Figs. 14 and 15 in its text only, as "around" values; its text
# has no page numbers, so each carries its section and the sentence's place.
# Fig. 14: (processes, placement, accepted MB/s at the top of the curve)
SEED_FIG14 = (
    (16, "off-node", 900.0), (32, "off-node", 1500.0), (64, "off-node", 2000.0),
    (16, "on-node", 250.0), (32, "on-node", 500.0), (64, "on-node", 550.0),
)
SEED_FIG14_SOURCE = ("seed 000, §VI-E, the paragraph on Fig. 14 (\"up to around 2000 MB/s "
                     "with 64 processes, 1500 MB/s with 32 processes, and 900 MB/s with 16 "
                     "processes ... only around 250 MB/s for 16 processes, 500 MB/s for 32 "
                     "processes, and 550 MB/s for 64 processes\"); page not numbered in the "
                     "seed's text")
# Fig. 15 (32 processes): (permutation, accepted MB/s, where)
SEED_FIG15 = (
    ("complement", 3300.0, "seed 000, §VI-E, the paragraph on Fig. 15 (\"around 3300 MB/s\")"),
    ("cube_single", 3500.0, "seed 000, §VIII (conclusion: \"maximum off-node bandwidth of "
                            "3500 MB/s with 32 processes\" under single-stage Cube)"),
)
SEED_FIG15_PROCESSES = 32
# what the seed says of each permutation's traffic (§VI-E, Fig. 15's
# paragraph): only off-node, only on-node, and which ones did better
SEED_FIG15_PLACEMENT = {"complement": "off-node only", "cube_multi": "off-node only",
                        "cube_single": "off-node only", "neighbor": "on-node only"}
SEED_FIG15_HIGHER = ("bit_reversal", "baseline_single")
SEED_FIG15_LOWER = ("perfect_shuffle", "matrix_transpose", "butterfly_multi")


def is_traffic(record: dict) -> bool:
    return record.get("suite") == SUITE


def _traffic(records: Iterable[dict]) -> list:
    return [r for r in records if is_traffic(r) and isinstance(r.get("median"), (int, float))]


def libraries(records: Iterable[dict]) -> list:
    """The libraries of the traffic records, Postbox first, then in the
    order found."""
    seen = []
    for record in _traffic(records):
        if record.get("library") not in seen:
            seen.append(record.get("library"))
    return sorted(seen, key=lambda label: (label != POSTBOX, seen.index(label)))


def shape_of(record: dict) -> tuple:
    """(ranks, nodes) of the job shape a record belongs to: on one node
    nodes 1; on the network path Postbox's virtual nodes, and 2 for a
    library whose network path has no nodes (trafficbench runs those in
    the two-node shape only)."""
    ranks = int(record.get("ranks") or 0)
    if (record.get("path") or "on-node") != "network":
        return ranks, 1
    nodes = int(record.get("nodes") or 1)
    return ranks, nodes if nodes > 1 else 2


def shape_name(shape: tuple) -> str:
    ranks, nodes = shape
    if nodes == 1:
        return "%d ranks on one node" % ranks
    return "%d ranks across %d nodes" % (ranks, nodes)


def shape_id(shape: tuple) -> str:
    ranks, nodes = shape
    return "%d-ranks-%d-node%s" % (ranks, nodes, "" if nodes == 1 else "s")


def _colors(labels: Sequence[str]) -> dict:
    return {label: COLORS[i % len(COLORS)] for i, label in enumerate(labels)}


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def points(records: Iterable[dict]) -> dict:
    """(library, shape, test, size_dist, time_dist, load) -> (offered,
    accepted) in MB/s, the medians over repeated records; load is None at
    saturation (time_dist "none")."""
    grouped: dict = {}
    for r in _traffic(records):
        load = r.get("load_fraction") if r.get("load") == "fraction" else None
        key = (r.get("library"), shape_of(r), r.get("test"), r.get("size_dist"),
               r.get("time_dist"), load)
        grouped.setdefault(key, []).append((r.get("offered"), r.get("median")))
    out = {}
    for key, pairs in grouped.items():
        offered = [o for o, _ in pairs if isinstance(o, (int, float))]
        out[key] = (_median(offered) if offered else None, _median([a for _, a in pairs]))
    return out


def saturation(records: Iterable[dict], library: str, shape: tuple, test: str,
               size_dist: str = "uniform") -> Optional[float]:
    """The accepted bandwidth (MB/s) of @test at saturation, or None."""
    found = points(records).get((library, shape, test, size_dist, "none", None))
    return found[1] if found else None


def off_node_share(records: Iterable[dict], library: str, shape: tuple,
                   test: str) -> Optional[float]:
    """The share of the bytes of @test at saturation that left the
    sender's node (median over its records), or None."""
    shares = [r.get("off_node_share") for r in _traffic(records)
              if r.get("library") == library and shape_of(r) == shape and r.get("test") == test
              and r.get("load") == "saturation"
              and isinstance(r.get("off_node_share"), (int, float))]
    return _median(shares) if shares else None


def shapes(records: Iterable[dict], test_filter=None) -> list:
    """The job shapes with traffic records (of tests @test_filter accepts),
    on one node first, then by ranks."""
    found = {shape_of(r) for r in _traffic(records)
             if test_filter is None or test_filter(r.get("test"))}
    return sorted(found, key=lambda s: (s[1] > 1, s[1], s[0]))


# ---- Fig. 14 -------------------------------------------------------------------------

def fig14_series(records: Sequence[dict], shape: tuple, colors: dict) -> list:
    """The lines of one Fig. 14 panel: per library and (size, gap)
    distributions, (offered, accepted) at each load, then saturation."""
    pts = points(records)
    out = []
    for library in libraries(records):
        for size_dist in DISTS:
            top = pts.get((library, shape, UNIFORM, size_dist, "none", None))
            for time_dist in DISTS:
                line = sorted((o, a, True) for (lib, shp, test, s, t, load), (o, a) in pts.items()
                              if lib == library and shp == shape and test == UNIFORM
                              and s == size_dist and t == time_dist and o is not None)
                if not line:
                    continue
                if top is not None and top[0] is not None:
                    line.append((top[0], top[1], True))
                out.append(Series("%s S=%s T=%s" % (library, size_dist[0].upper(),
                                                    time_dist[0].upper()),
                                  line, color=colors[library],
                                  dasharray=DASHES[(size_dist, time_dist)]))
    return out


def figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """Fig. 14's panels, one per job shape (files fig-seed000-fig-14-<shape>)."""
    labels = libraries(records)
    colors = _colors(labels)
    source = _source(description)
    out = []
    for shape in shapes(records, lambda test: test == UNIFORM):
        series = fig14_series(records, shape, colors)
        if not series:
            continue
        out.append(Figure(
            "Seed 000 Fig. 14: uniform traffic, accepted against offered bandwidth, %s"
            % shape_name(shape),
            "Every rank sends to a uniformly random other rank; message sizes (S, mean %s B) "
            "and gaps (T) uniform (U) or exponential (E), from a seeded generator. Offered: "
            "the bytes the senders generated over the window; accepted: the bytes received "
            "over the time until the last arrived, summed over the ranks (MB = 10^6 B). The "
            "loads are fractions of each library's own saturation, which ends each line. "
            "Colour: library; dash: distributions. The seed's curves (16-64 processes) are "
            "in the table of section Traffic." % _mean_size(records),
            "offered bandwidth (MB/s)", "accepted bandwidth (MB/s)", series,
            name="seed000-fig-14-%s" % shape_id(shape), source=source))
    return out


def _mean_size(records: Sequence[dict]) -> str:
    sizes = sorted({r.get("size") for r in _traffic(records) if r.get("size")})
    return "/".join(format_value(s) for s in sizes) or "?"


def _source(description: Optional[dict]) -> list:
    runs = (description or {}).get("runs") or []
    return [" ".join(str(a) for a in run.get("command", []))
            for run in runs if str(run.get("name", "")).startswith("traffic/")][:4]


# ---- Fig. 15: grouped bars ------------------------------------------------------------

def fig15_svg(records: Sequence[dict], shape: tuple, colors: dict) -> str:
    """Seed 000 Fig. 15 for one shape as an inline SVG: per permutation a
    bar per library (accepted bandwidth at saturation); "" without
    permutation records."""
    esc = html.escape
    labels = libraries(records)
    rows = []
    for test, name in PERMUTATION_NAMES:
        values = [(lib, saturation(records, lib, shape, test)) for lib in labels]
        if any(v is not None for _, v in values):
            rows.append((name, values))
    if not rows:
        return ""
    top = max(v for _, values in rows for _, v in values if v is not None) or 1.0
    bar, gap, left, right, head = 9, 8, 170, 90, 28
    group = bar * len(labels) + gap
    width, height = 640, head + group * len(rows) + 40
    plot_w = width - left - right
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'role="img" aria-label="%s">' % (width, height, width, height,
                                            esc("Seed 000 Fig. 15, " + shape_name(shape))),
           "<title>%s</title>" % esc("Seed 000 Fig. 15: permutation traffic, %s"
                                     % shape_name(shape)),
           '<style>text { font-family: system-ui, sans-serif; font-size: 10px; }</style>']
    for k in range(5):
        x = left + plot_w * k / 4
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>'
                   % (x, head - 4, x, height - 36))
        out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>'
                   % (x, height - 24, esc(format_value(top * k / 4))))
    out.append('<text x="%.1f" y="%d" text-anchor="middle">accepted bandwidth at saturation '
               '(MB/s)</text>' % (left + plot_w / 2, height - 8))
    for i, label in enumerate(labels):
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                   '<text x="%d" y="%d">%s</text>'
                   % (left + i * 110, 6, colors[label], left + i * 110 + 14, 15, esc(label)))
    for j, (name, values) in enumerate(rows):
        y0 = head + j * group
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>'
                   % (left - 6, y0 + bar * len(labels) / 2 + 3, esc(name)))
        for i, (lib, value) in enumerate(values):
            y = y0 + i * bar
            if value is None:
                out.append('<text x="%d" y="%d" fill="#999">n/a</text>' % (left + 3, y + 8))
                continue
            w = plot_w * value / top
            out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s">'
                       '<title>%s</title></rect>'
                       % (left, y, max(w, 0.5), bar - 1, colors[lib],
                          esc("%s, %s: %s MB/s" % (lib, name, format_value(value)))))
            out.append('<text x="%.1f" y="%d" fill="#333">%s</text>'
                       % (left + w + 3, y + 8, esc(format_value(value))))
    out.append("</svg>")
    return "\n".join(out)


# ---- the section -----------------------------------------------------------------------

def _cell(value: Optional[float]) -> str:
    return html.escape(format_value(value)) if value is not None else "&ndash;"


def fig14_table(records: Sequence[dict]) -> list:
    """This machine's saturation of uniform traffic per shape and library,
    beside the seed's tops of Fig. 14."""
    esc = html.escape
    labels = libraries(records)
    out = ["<table><tr><th>job shape</th>%s</tr>"
           % "".join("<th>%s S=U</th><th>%s S=E</th>" % (esc(l), esc(l)) for l in labels)]
    for shape in shapes(records, lambda test: test == UNIFORM):
        cells = []
        for lib in labels:
            for size_dist in DISTS:
                cells.append("<td>%s</td>" % _cell(saturation(records, lib, shape, UNIFORM,
                                                              size_dist)))
        out.append("<tr><td>this machine, %s</td>%s</tr>" % (esc(shape_name(shape)),
                                                             "".join(cells)))
    out.append("</table>")
    out.append("<p>Seed 000's Fig. 14, the top of each curve (MB/s; its text gives these "
               "numbers, not the plot's points):</p>")
    out.append("<table><tr><th>processes</th><th>placement</th><th>accepted (MB/s)</th></tr>")
    for processes, placement, value in SEED_FIG14:
        out.append("<tr><td>%d</td><td>%s</td><td>%s</td></tr>"
                   % (processes, esc(placement), _cell(value)))
    out.append("</table><p class=\"source\">Source: %s.</p>" % esc(SEED_FIG14_SOURCE))
    return out


def fig15_table(records: Sequence[dict], shape: tuple) -> list:
    """Per permutation: each library's saturation and off-node share at
    @shape, and what the seed says of it."""
    esc = html.escape
    labels = libraries(records)
    seed_values = {test: (value, where) for test, value, where in SEED_FIG15}
    out = ["<table><tr><th>permutation</th>%s<th>seed 000 (%d processes)</th></tr>"
           % ("".join("<th>%s MB/s</th><th>%s off-node</th>" % (esc(l), esc(l))
                      for l in labels), SEED_FIG15_PROCESSES)]
    for test, name in PERMUTATION_NAMES:
        cells = []
        for lib in labels:
            share = off_node_share(records, lib, shape, test)
            cells.append("<td>%s</td><td>%s</td>"
                         % (_cell(saturation(records, lib, shape, test)),
                            "&ndash;" if share is None else "%.0f %%" % (100 * share)))
        said = []
        if test in seed_values:
            said.append("%s MB/s" % format_value(seed_values[test][0]))
        if test in SEED_FIG15_PLACEMENT:
            said.append(SEED_FIG15_PLACEMENT[test])
        if test in SEED_FIG15_HIGHER:
            said.append("higher than perfect shuffle, matrix transpose, multi-stage butterfly")
        if test in SEED_FIG15_LOWER:
            said.append("lower than bit-reversal and single-stage baseline")
        if all(saturation(records, lib, shape, test) is None for lib in labels):
            cells = ["<td>n/a</td><td></td>" for _ in labels]
        out.append("<tr><td>%s</td>%s<td>%s</td></tr>"
                   % (esc(name), "".join(cells), esc("; ".join(said))))
    out.append("</table>")
    return out


def section(records: Sequence[dict]) -> list:
    """The page's "Traffic" section (seed 000 Figs. 14 and 15); empty
    without traffic records."""
    esc = html.escape
    labels = libraries(records)
    if not labels:
        return []
    colors = _colors(labels)
    out = ['<h2 id="traffic">Traffic: uniform and permutation patterns (seed 000 Figs. 14, '
           '15)</h2>',
           "<p>bench/mpi_traffic.c (<code>traffic.jsonl</code>), every library built with "
           "its own mpicc; libraries: %s. Offered: the bytes the senders generated over the "
           "window; accepted: the bytes received over the time until the last of them "
           "arrived, summed over the ranks (MB = 10^6 B). The seed measured 16-64 processes "
           "on four 24-CPU nodes; this machine runs 2-8 ranks on a few cores, so compare "
           "shapes, not sizes.</p>" % esc(", ".join(labels))]
    out.append('<h3 id="seed000-fig-14">Seed 000 Fig. 14: uniform traffic, accepted against '
               'offered bandwidth</h3>')
    panels = ["<a href=\"#seed000-fig-14-%s\">%s</a>" % (esc(shape_id(s)),
                                                                 esc(shape_name(s)))
              for s in shapes(records, lambda test: test == UNIFORM)]
    out.append("<p>The panels (in Figures): %s. Below, the accepted bandwidth at saturation "
               "(MB/s) of each library, sizes uniform (S=U) or exponential (S=E).</p>"
               % (", ".join(panels) or "none"))
    out += fig14_table(records)
    out.append('<h3 id="seed000-fig-15">Seed 000 Fig. 15: permutation traffic, accepted '
               'bandwidth</h3>')
    perm_shapes = shapes(records, lambda test: test != UNIFORM)
    if not perm_shapes:
        out.append("<p>No permutation was measured.</p>")
    out.append("<p>Each sender sends to the one rank the permutation gives (definitions for "
               "every rank count: bench/README.md, \"mpi_traffic\"), back to back "
               "(saturation), sizes uniform; off-node: the share of the bytes that left the "
               "sender's node. n/a: the permutation is not defined at that rank count, or "
               "maps every rank to itself.</p>")
    for shape in perm_shapes:
        svg = fig15_svg(records, shape, colors)
        out.append('<figure id="seed000-fig-15-%s"><h4>Seed 000 Fig. 15: %s</h4>%s</figure>'
                   % (esc(shape_id(shape)), esc(shape_name(shape)), svg))
        out += fig15_table(records, shape)
    return out


def summary(records: Sequence[dict]) -> Optional[str]:
    """One line for the part's verdict: each library's uniform saturation
    at the largest shape on one node; None without traffic records."""
    on_node = [s for s in shapes(records, lambda test: test == UNIFORM) if s[1] == 1]
    if not on_node:
        return None
    shape = max(on_node)
    parts = []
    for lib in libraries(records):
        value = saturation(records, lib, shape, UNIFORM)
        if value is not None:
            parts.append("%s %s MB/s" % (lib, format_value(value)))
    if not parts:
        return None
    return "uniform saturation, %s: %s" % (shape_name(shape), ", ".join(parts))
