"""The LogP section of ``postbox report``: records of suite ``logp``
(bench/mpi_logp.c, ``logp.jsonl``), seed 000's LogP figure and table with
this machine's values beside the seed's.

Seed 000 is Qian, Afsahi, Fredrickson and Zamani, 'Performance Evaluation
of the Sun Fire Link SMP Clusters' (2006); its section VI-D measures the
parameterized LogP between two processes on different nodes.

- ``figures``: Seed 000 Fig. 13, g(m), o_s(m) and o_r(m) against message
  size, one figure per path (one node, the network path), one colour per
  library and one dash per parameter, the seed's small-message values as
  reference lines.  The section draws them under the id ``seed000-fig-13``
  (the page's list of figures leaves them out: in_section).
- ``section``: Seed 000 Table VII (L, o, g) for every library on each path
  beside the seed's (id ``seed000-table-7``), and the LogGP that
  logpfit.fitted_parameters gives the model.
"""

from __future__ import annotations

import html
import statistics
from typing import Optional, Sequence

from postbox import logpfit
from postbox.plot import COLORS, Figure, Series, format_size, format_value, svg_plot

SEED_CITE = ("Qian, Afsahi, Fredrickson and Zamani, 'Performance Evaluation of the Sun Fire "
             "Link SMP Clusters' (2006)")
# Seed 000, Table VII "LogP parameters" (section VI-D; lines 1192-1198 of the
# seed's text): microseconds, two processes on different nodes, Sun MPI over
# the Sun Fire Link
SEED_TABLE7 = (("L", 0.51), ("o", 2.50), ("g", 2.29))
SEED_TABLE7_WHERE = "seed 000, section VI-D, Table VII (lines 1192-1198 of the seed's text)"
# Seed 000, the text beside Fig. 13 (section VI-D; lines 1158-1171 of the
# seed's text): "os (3 us), or (2 us), and g (2.29 us), remain fixed for the
# message sizes of one to 64 bytes", rising above (the figure itself gives
# no numbers in the text); the drop at 3912 B is Sun MPI's switch from its
# short to its long message protocol
SEED_FIG13 = (("o_s", 3.0), ("o_r", 2.0), ("g", 2.29))
SEED_FIG13_WHERE = ("seed 000, section VI-D, the text on Fig. 13 (lines 1158-1171 of the "
                    "seed's text)")
SEED_FIG13_SMALL = (1, 64)  # the sizes the seed's fixed values hold for
SEED_PROTOCOL_SWITCH = 3912  # bytes: the seed's dip in Fig. 13

PATH_TITLES = {"on-node": "one node", "network": "network path"}
# the dash of each parameter's curve (g solid)
DASHES = (("g", None), ("o_s", "6 3"), ("o_r", "2 3"))
FIGURE_PREFIX = "seed000-fig-13-"


def is_logp(record: dict) -> bool:
    """A record of this section (suite logp)."""
    return record.get("suite") == logpfit.SUITE


def in_section(figure: Figure) -> bool:
    """Whether @figure is drawn by section() (not in the page's list)."""
    return figure.name.startswith(FIGURE_PREFIX)


def _libraries(grouped: dict) -> list:
    labels = []
    for library, _ in grouped:
        if library not in labels:
            labels.append(library)
    return labels


def plogps(records: Sequence[dict]) -> list:
    """The PLogP of every (library, path) that has one, in the order met."""
    out = []
    for (library, path), table in logpfit.group(records).items():
        p = logpfit.plogp_of(table, library, path)
        if p is not None:
            out.append(p)
    return out


def prtt_fits(records: Sequence[dict]) -> dict:
    """{(library, path): logpfit.PrttFit} where PRTT allows a fit."""
    out = {}
    for (library, path), table in logpfit.group(records).items():
        try:
            out[(library, path)] = logpfit.loggp_from_prtt(logpfit.prtt_points(table), library,
                                                           path)
        except logpfit.FitError:
            continue
    return out


def small_message_value(by_size: dict) -> Optional[float]:
    """A parameter's small-message value as seed 000 gives it: the mean
    over the sizes 1-64 B measured, else at the smallest size above 0."""
    small = [v for s, v in by_size.items() if SEED_FIG13_SMALL[0] <= s <= SEED_FIG13_SMALL[1]]
    if small:
        return statistics.mean(small)
    above = sorted(s for s in by_size if s > 0)
    return by_size[above[0]] if above else None


# ---- Fig. 13 ----------------------------------------------------------------

def figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """Seed 000 Fig. 13 for each path: every library's g(m), o_s(m), o_r(m)
    (us) against the size (1 B up; size 0 has no place on the log axis)."""
    found = plogps(records)
    labels = _libraries({(p.library, p.path): p for p in found})
    out = []
    for path in ("on-node", "network"):
        mine = [p for p in found if p.path == path]
        if not mine:
            continue
        series = []
        for p in mine:
            color = COLORS[labels.index(p.library) % len(COLORS)]
            for name, dash in DASHES:
                values = getattr(p, name)
                points = [(float(s), float(v), True) for s, v in sorted(values.items())
                          if s > 0 and v > 0]
                if points:
                    series.append(Series("%s %s(m)" % (p.library, name), points,
                                         color=color, dasharray=dash))
        if not series:
            continue
        out.append(Figure(
            "Seed 000 Fig. 13: LogP parameters g(m), o_s(m), o_r(m) against message size, %s"
            % PATH_TITLES[path],
            "Kielmann et al.'s parameterized LogP between 2 ranks (%s): o_s the MPI_Send call, "
            "o_r the MPI_Recv of a message already there, g(m) = RTT(m) - RTT(0) + g(0) with "
            "g(0) by saturation (measured by saturation at every size in the full profile); "
            "one colour per library, g solid, o_s dashed, o_r dotted.  Grey lines: the "
            "seed's values for 1-64 B on Sun Fire Link (%s); the seed's curves dip at %d B, "
            "Sun MPI's switch to its long-message protocol." % (
                PATH_TITLES[path], SEED_FIG13_WHERE, SEED_PROTOCOL_SWITCH),
            "message size (bytes)", "time (us)", series,
            references=[("seed 000 %s %g us" % (name, value), value)
                        for name, value in SEED_FIG13],
            name=FIGURE_PREFIX + ("node" if path == "on-node" else "net"), log=True,
            source=_source(description)))
    return out


def _source(description: Optional[dict]) -> list:
    lines = []
    for run in (description or {}).get("runs", []):
        if str(run.get("name", "")).startswith("logp/") and run.get("command"):
            lines.append(" ".join(str(part) for part in run["command"]))
    return lines[:6]


def _figure_html(figure: Figure) -> str:
    esc = html.escape
    return ('<figure><h4>%s</h4>%s<figcaption>%s Also in <a href="fig-%s.svg"><code>'
            'fig-%s.svg</code></a>.</figcaption></figure>'
            % (esc(figure.title), svg_plot(figure), esc(figure.caption), esc(figure.name),
               esc(figure.name)))


# ---- Table VII ----------------------------------------------------------------

def _cell(value: Optional[float], digits: str = "%.3g") -> str:
    return "<td>%s</td>" % ("-" if value is None else html.escape(digits % value))


def table7_rows(records: Sequence[dict]) -> list:
    """Per (library, path): (library, path, L, o, o_s, o_r, g) in us from the
    parameterized LogP (L = RTT(0)/2 - g(0); o the mean of o_s and o_r at
    1-64 B as the seed's; g = g(0) by saturation) and whether g(0) was
    saturated."""
    rows = []
    for p in plogps(records):
        o_s = small_message_value(p.o_s)
        o_r = small_message_value(p.o_r)
        o = (o_s + o_r) / 2.0 if o_s is not None and o_r is not None else None
        rows.append((p.library, p.path, p.L, o, o_s, o_r, p.g0, p.saturated))
    return rows


def table7_html(records: Sequence[dict]) -> list:
    esc = html.escape
    rows = table7_rows(records)
    if not rows:
        return []
    seed = dict(SEED_TABLE7)
    out = ['<div id="seed000-table-7">',
           "<h3>Seed 000 Table VII: LogP parameters (us), this machine beside the seed</h3>",
           "<p>The seed: %s, %s; Sun MPI between two Sun Fire 6800 nodes (o_s 3 us and o_r "
           "2 us in its text).  This machine: Kielmann et al.'s parameterized LogP, "
           "L = RTT(0)/2 - g(0), o the mean of o_s and o_r at 1-64 B (the smallest size "
           "measured above 0 when none is), g = g(0) by saturation.</p>"
           % (esc(SEED_CITE), esc(SEED_TABLE7_WHERE)),
           '<table class="logp-table7"><tr><th class="text">library</th><th class="text">'
           "path</th><th>L</th><th>o</th><th>o_s</th><th>o_r</th><th>g</th>"
           '<th class="text">note</th></tr>',
           '<tr><td class="text">seed 000 (Sun MPI)</td><td class="text">Sun Fire Link'
           "</td>%s%s<td>3</td><td>2</td>%s<td class=\"text\"></td></tr>"
           % (_cell(seed["L"]), _cell(seed["o"]), _cell(seed["g"]))]
    for library, path, L, o, o_s, o_r, g, done in rows:
        note = [] if done else ["g(0) not saturated within the time cap"]
        if L == 0.0:
            note.append("RTT(0)/2 <= g(0): L not measurable this way")
        out.append('<tr><td class="text">%s</td><td class="text">%s</td>%s%s%s%s%s'
                   '<td class="text">%s</td></tr>'
                   % (esc(library), esc(PATH_TITLES.get(path, path)), _cell(L), _cell(o),
                      _cell(o_s), _cell(o_r), _cell(g), esc("; ".join(note))))
    out.append("</table></div>")
    return out


def loggp_html(records: Sequence[dict]) -> list:
    """The LogGP of each (library, path) as the model takes it, with
    netgauge's own L and the fit's quality."""
    esc = html.escape
    fits = prtt_fits(records)
    if not fits:
        return []
    out = ['<h3 id="logp-loggp">LogGP fitted from netgauge\'s PRTT (the model\'s parameters)'
           "</h3>",
           "<p>g and G: the line of (PRTT(n,0,m) - PRTT(1,0,m))/(n-1) = g + (m-1)G over the "
           "sizes (least squares on the relative error, outliers dropped once); o_s and o_r: "
           "the small-size ends of their lines; L = PRTT(1,0,0)/2 - o_s - o_r, so that "
           "o_s + L + o_r is half the 0-byte round trip (netgauge's own L is PRTT(1,0,0)/2). "
           "Times in us; 1/G in MB/s (10<sup>6</sup> B/s).</p>",
           '<table class="logp-loggp"><tr><th class="text">library</th><th class="text">path'
           "</th><th>L</th><th>o_s</th><th>o_r</th><th>g</th><th>G (us/KB)</th><th>1/G "
           "(MB/s)</th><th>netgauge L</th><th>fit rms</th><th>points (dropped)</th>"
           '<th class="text">warnings</th></tr>']
    for (library, path), fit in fits.items():
        p = fit.loggp
        bandwidth = 1e-6 / p.G if p.G > 0 else None
        out.append('<tr><td class="text">%s</td><td class="text">%s</td>%s%s%s%s%s%s%s%s'
                   "<td>%d (%d)</td><td class=\"text\">%s</td></tr>"
                   % (esc(library), esc(PATH_TITLES.get(path, path)), _cell(p.L * 1e6),
                      _cell(p.o_s * 1e6), _cell(p.o_r * 1e6), _cell(p.g * 1e6),
                      _cell(p.G * 1e6 * 1000), _cell(bandwidth, "%.0f"),
                      _cell(fit.netgauge_L), _cell(fit.gap.rms, "%.2f"), fit.gap.points,
                      fit.gap.dropped, esc("; ".join(fit.warnings))))
    out.append("</table>")
    return out


def per_size_html(records: Sequence[dict]) -> list:
    """Every library's parameterized LogP per size, side by side."""
    esc = html.escape
    found = plogps(records)
    if not found:
        return []
    out = ['<h3 id="logp-per-size">Parameterized LogP per size (us)</h3>',
           '<div class="wide"><table class="logp-per-size"><tr><th class="text">library</th>'
           '<th class="text">path</th><th>size</th><th>RTT</th><th>o_s</th><th>o_r</th>'
           "<th>g</th></tr>"]
    for p in found:
        for size in p.sizes:
            out.append('<tr><td class="text">%s</td><td class="text">%s</td><td>%s</td>%s%s%s%s'
                       "</tr>" % (esc(p.library), esc(PATH_TITLES.get(p.path, p.path)),
                                  esc(format_size(size)), _cell(p.rtt.get(size)),
                                  _cell(p.o_s.get(size)), _cell(p.o_r.get(size)),
                                  _cell(p.g.get(size))))
    out.append("</table></div>")
    return out


def section(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """The page's "LogP parameters" section; empty without logp records."""
    mine = [r for r in records if is_logp(r)]
    if not mine:
        return []
    libraries = []
    for r in mine:
        if r.get("library") not in libraries:
            libraries.append(r.get("library"))
    out = ["<h2 id=\"logp\">LogP parameters (seed 000, section VI-D)</h2>",
           "<p>bench/mpi_logp.c (<code>logp.jsonl</code>): 2 ranks, blocking MPI_Send and "
           "MPI_Recv, every library built with its own mpicc, on one node and on its network "
           "path; libraries: %s.  Medians over the iterations (and over the rounds of the "
           "full profile).</p>" % html.escape(", ".join(format_value(x) for x in libraries))]
    out += table7_html(mine)
    drawn = figures(mine, description)
    if drawn:
        out.append('<div id="seed000-fig-13"><h3>Seed 000 Fig. 13: LogP parameters against '
                   "message size, every library, one node and network path</h3>")
        out += [_figure_html(figure) for figure in drawn]
        out.append("</div>")
    out += loggp_html(mine)
    out += per_size_html(mine)
    return out
