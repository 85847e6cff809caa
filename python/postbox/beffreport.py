"""The b_eff and dense parts of ``postbox report``: seed 002's Table 1, Figs.
1-3 and Figs. 7-10 for this machine, every library side by side, the seed's
values beside them.

Seed 002 is Fatoohi, Saini and Ciotti, 'Interconnect Performance Evaluation
of SGI Altix 3700 BX2, Cray X1, Cray Opteron Cluster, and Dell PowerEdge'
(NAS-06-012, 2006).  From ``beff.jsonl`` (bench/mpi_beff.c --tests
beff,distance): Table 1 (b_eff, per process, at Lmax rings and random, rings
only, ping-pong bandwidth and latency; the averages of
beffbench.beff_summary), Fig. 1 (ping-pong and ping-ping bandwidth of ranks
0 and 1), Figs. 2-3 (ping-pong bandwidth of rank 0 with rank d: on one node,
and across nodes).  From ``dense.jsonl`` (--tests dense): Fig. 7 (aapc per
phase), Fig. 8 (cumulative pair-wise against the pairs), Figs. 9-10 (simple
pair-wise per phase, on one node and across nodes) and the random
pair-wise per phase, which the seed describes but does not plot.
"""

from __future__ import annotations

import html
from typing import Optional, Sequence

from postbox import beffbench, results
from postbox.plot import COLORS, Figure, Series, format_size, format_value

SEED = "seed 002 (Fatoohi, Saini and Ciotti, NAS-06-012, 2006)"

# Seed 002 Table 1 (Sec. 3.1, "Effective bandwidth benchmark results"; Lmax
# 1 MB in every row): system, processes, b_eff, b_eff per proc, at Lmax
# rings & random, per proc, at Lmax rings only, per proc (MB/s), ping-pong
# bandwidth (MB/s) and latency (us)
SEED_TABLE1 = (
    ("SGI Altix 3700", 256, 47166, 184, 123579, 483, 167071, 653, 1069, 1.267),
    ("SGI Altix 3700", 512, 75726, 148, 202946, 396, 315591, 616, 1012, 1.249),
    ("Cray X1 (SSP)", 8, 1858, 232, 5742, 718, 5838, 730, 4231, 9.044),
    ("Cray X1 (SSP)", 32, 5907, 185, 20838, 651, 20288, 634, 4070, 10.330),
    ("Cray X1 (SSP)", 48, 8479, 177, 30752, 641, 30137, 628, 4021, 10.365),
    ("Cray X1 (MSP)", 8, 7686, 961, 35089, 4386, 45049, 5631, 9400, 10.559),
    ("Dell PowerEdge", 128, 7202, 56, 21444, 168, 24713, 193, 399, 2.000),
    ("Cray Opteron", 8, 530, 66, 1203, 150, 1745, 218, 711, 0.718),
    ("Cray Opteron", 64, 2922, 46, 5935, 93, 12271, 192, 704, 0.709),
)
SEED_TABLE1_LMAX = 1 << 20

# The numbers the seed's text gives for its figures (it plots the rest):
# (label, MB/s, where in the seed)
SEED_FIG1 = (("seed X1 MSP PingPong", 13000.0, "Sec. 3.2, Fig. 1: 'over 13 Gbytes/s'"),
             ("seed Altix PingPong", 1800.0, "Sec. 3.2, Fig. 1: 'about 1800 Mbytes/s'"),
             ("seed PowerEdge PingPong", 400.0, "Sec. 3.2, Fig. 1: 'about 400 Mbytes/s'"))
SEED_FIG2 = (("seed Altix d=1", 1762.0, "Sec. 3.2, Fig. 2"),
             ("seed Altix d=2,4", 1264.0, "Sec. 3.2, Fig. 2"),
             ("seed Altix d=8,16", 1191.0, "Sec. 3.2, Fig. 2"),
             ("seed Altix d=32,64", 1097.0, "Sec. 3.2, Fig. 2"),
             ("seed Altix d=128", 1016.0, "Sec. 3.2, Fig. 2"),
             ("seed Altix d=256", 917.0, "Sec. 3.2, Fig. 2"))
SEED_FIG3 = (("seed Opteron d=1 (128 KB)", 900.0, "Sec. 3.2, Fig. 3"),
             ("seed Opteron d=1 (4 MB)", 670.0, "Sec. 3.2, Fig. 3"),
             ("seed Opteron d=2..16", 234.0, "Sec. 3.2, Fig. 3"))
# what the seed says of its dense figures (Sec. 3.3): no values, ratios
SEED_DENSE_TEXT = {
    "aapc": "Seed Fig. 7: aapc on the 512-processor Altix; algorithms 1 and 2 drop in the "
            "middle phases (the farthest distances) by more than 5x (Altix, Opteron) to 2x "
            "(X1); the peak is at 3 KB, not at the largest message.",
    "cumulative": "Seed Fig. 8: cumulative pair-wise on the 48-processor X1 (SSP): down by up "
                  "to 3x at 24 pairs; the Altix and PowerEdge lose up to 20 %, the Opteron "
                  "nothing.",
    "pairwise": "Seed Figs. 9-10: simple pair-wise on the 512-processor PowerEdge and the "
                "64-processor Opteron; the Opteron drops about 40 % from phase 1 (within a "
                "node) to phase 2 (through Myrinet).",
    "random": "The seed describes random pair-wise (algorithm 4) without a figure: "
              "randomness costs bandwidth on every platform.",
}


def is_beff(record: dict) -> bool:
    """A record of bench/mpi_beff.c (suite beff or dense)."""
    return record.get("suite") in (beffbench.SUITE, "dense")


def _shape(record: dict) -> tuple:
    """(ranks, nodes, path) of @record's run; a library whose network path
    runs on this one host (Open MPI, MPICH) counts as two nodes, beside
    Postbox's two virtual nodes (as beffbench.Config(ranks, 2) ran it)."""
    path = str(record.get("path") or "on-node")
    nodes = int(record.get("nodes") or 1)
    if path != "on-node":
        nodes = max(nodes, 2)
    return (int(record.get("ranks") or 0), nodes, path)


def _shape_label(shape: tuple) -> str:
    ranks, nodes, path = shape
    if path == "on-node":
        return "%d ranks on one node" % ranks
    if nodes == 2:
        return "%d ranks across two nodes" % ranks
    return "%d ranks across %d nodes" % (ranks, nodes)


def _libraries(records: Sequence[dict]) -> list:
    out = []
    for record in records:
        if record.get("library") not in out:
            out.append(record.get("library"))
    return out


def _source(description: Optional[dict], prefix: str) -> list:
    """The commands of the runs named @prefix/... in machine.json."""
    return [" ".join(str(a) for a in run.get("command") or [])
            for run in (description or {}).get("runs") or []
            if isinstance(run, dict) and str(run.get("name", "")).startswith(prefix + "/")]


# ---- Table 1 ------------------------------------------------------------------

def table1_rows(records: Sequence[dict]) -> list:
    """(library, shape label, Summary or None) of every b_eff run."""
    out = []
    for (library, ranks, nodes, path, _), members in beffbench.runs_of(records).items():
        if not any(r.get("test") == "beff_pattern" for r in members):
            continue
        out.append((library, _shape_label(_shape(members[0])), beffbench.beff_summary(members)))
    return out


def _num(value, fmt: str = "%.0f") -> str:
    return "" if value is None else fmt % value


def table1_html(records: Sequence[dict]) -> list:
    esc = html.escape
    head = ("System", "# of proc", "b_eff (MB/s)", "b_eff per proc (MB/s)",
            "b_eff at Lmax rings &amp; random (MB/s)", "per proc",
            "b_eff at Lmax rings only (MB/s)", "per proc", "BW ping-pong (MB/s)", "Latency ping-pong (us)", "Lmax")
    out = ['<h3 id="seed002-table-1">Seed 002 Table 1: effective bandwidth b_eff, this machine '
           'beside the seed</h3>',
           "<p>b_eff of Rabenseifner and Koniges (bench/mpi_beff.c): per pattern the mean over "
           "the 21 message sizes of the best of MPI_Sendrecv, MPI_Alltoallv and "
           "Irecv/Isend/Waitall, the logarithmic average over the 6 ring and the 30 random "
           "patterns, then of the two; 'at Lmax' the same at the largest size only; 'per "
           "proc' divided by the ranks; the ping-pong pair is ranks 0 and 1 (bandwidth at "
           "Lmax, latency half the round trip of 1 byte). The seed's rows (its Table 1, Sec. "
           "3.1, Lmax 1 MB) first, then this machine's, every library in every shape. This "
           "machine's Lmax is smaller in the quick profile (see bench/README.md).</p>",
           '<div class="wide"><table><tr>%s</tr>' % "".join(
               "<th%s>%s</th>" % (' class="text"' if i == 0 else "", h)
               for i, h in enumerate(head))]
    for row in SEED_TABLE1:
        cells = ["seed: %s" % row[0]] + [format_value(v) for v in row[1:]] + [
            format_size(SEED_TABLE1_LMAX)]
        out.append("<tr>%s</tr>" % "".join(
            '<td%s>%s</td>' % (' class="text"' if i == 0 else "", esc(str(c)))
            for i, c in enumerate(cells)))
    for library, label, summary in table1_rows(records):
        if summary is None:
            out.append('<tr><td class="text">%s, %s</td><td colspan="10" class="text">'
                       'incomplete: not every pattern has all 21 sizes</td></tr>'
                       % (esc(str(library)), esc(label)))
            continue
        cells = ["%s, %s" % (library, label), str(summary.ranks), _num(summary.b_eff),
                 _num(summary.per_process), _num(summary.at_lmax),
                 _num(summary.at_lmax_per_process), _num(summary.rings_at_lmax),
                 _num(summary.rings_at_lmax_per_process), _num(summary.pingpong_bandwidth),
                 _num(summary.pingpong_latency, "%.3f"), format_size(summary.lmax)]
        out.append("<tr>%s</tr>" % "".join(
            '<td%s>%s</td>' % (' class="text"' if i == 0 else "", esc(c))
            for i, c in enumerate(cells)))
    out.append("</table></div>")
    return out


def patterns_html(records: Sequence[dict]) -> list:
    """Every run's distinct patterns: what b_eff averages."""
    esc = html.escape
    out = ['<h3 id="beff-patterns">b_eff by pattern</h3>',
           "<p>Each distinct pattern of each run: how many of the 6 rings and of the random "
           "patterns it stands for (a pattern that sends what another sends is measured "
           "once), its mean over the 21 sizes and its value at Lmax (the best method), the "
           "method best at Lmax, and a random pattern's order of the ranks.</p>",
           '<div class="wide"><table><tr><th class="text">run</th><th class="text">pattern'
           '</th><th>rings</th><th>random</th><th>mean over sizes (MB/s)</th>'
           '<th>at Lmax (MB/s)</th><th class="text">best at Lmax</th>'
           '<th class="text">order</th></tr>']
    for (library, _, _, _, _), members in beffbench.runs_of(records).items():
        label = "%s, %s" % (library, _shape_label(_shape(members[0])))
        for row in beffbench.pattern_rows(members):
            out.append('<tr><td class="text">%s</td><td class="text">%s</td><td>%d</td>'
                       '<td>%d</td><td>%s</td><td>%s</td><td class="text">%s</td>'
                       '<td class="text">%s</td></tr>'
                       % (esc(label), esc(row.name), row.rings, row.randoms,
                          esc(format_value(row.mean)), esc(format_value(row.at_lmax)),
                          esc(row.best_at_lmax), esc(row.order or "")))
    out.append("</table></div>")
    return out


def section(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """The b_eff section of the page: Table 1 and the patterns (nothing
    without b_eff records)."""
    mine = [r for r in records if r.get("suite") == beffbench.SUITE]
    if not any(r.get("test") == "beff_pattern" for r in mine):
        return []
    return ["<h2>Effective bandwidth (b_eff)</h2>"] + table1_html(mine) + patterns_html(mine)


# ---- figures -------------------------------------------------------------------

def _line(label: str, members: Sequence[dict], x_key: str, color: str,
          dash: Optional[str] = None) -> Optional[Series]:
    # mpi_beff takes no probe: its records are unprobed ("unknown"), not
    # unsettled
    points = sorted((float(r[x_key]), float(r["median"]),
                     results.is_settled(r) or r.get("state") == "unknown")
                    for r in members if isinstance(r.get(x_key), (int, float))
                    and isinstance(r.get("median"), (int, float)) and r["median"] > 0)
    if len(points) < 1:
        return None
    return Series(label, points=points, color=color, dasharray=dash)


DASHES = (None, "6 3", "2 3", "8 3 2 3", "1 2", "10 4", "4 2 1 2", "12 3 3 3")
# the sizes the dense figures draw when a run has more (the rest are in the
# tables): 3 KB is where seed 002's Altix peaked
DENSE_FIGURE_SIZES = (1024, 3072, 65536, 1 << 20)


def _colors(libraries: Sequence) -> dict:
    return {lib: COLORS[i % len(COLORS)] for i, lib in enumerate(libraries)}


def _references(seed: Sequence[tuple]) -> list:
    return [(label, value) for label, value, _ in seed]


def _fig1(records: Sequence[dict], description: Optional[dict]) -> list:
    out = []
    shapes = sorted({_shape(r) for r in records if r.get("test") == "pingping"})
    colors = _colors(_libraries(records))
    for index, shape in enumerate(shapes):
        series = []
        for library in colors:
            for test, dash, what in (("pingpong_distance", None, "PingPong"),
                                     ("pingping", "6 3", "PingPing")):
                members = [r for r in records if r.get("library") == library
                           and _shape(r) == shape and r.get("test") == test
                           and int(r.get("distance") or 0) == 1]
                line = _line("%s %s" % (library, what), members, "size", colors[library], dash)
                if line is not None:
                    series.append(line)
        if series:
            out.append(Figure(
                "Seed 002 Fig. 1: unidirectional and bidirectional bandwidth, %s"
                % _shape_label(shape),
                "bench/mpi_beff.c --tests distance: ranks 0 and 1, PingPong (solid: size / half "
                "the round trip) and PingPing (dashed: both send at once; size / time of one "
                "exchange), one colour per library. Dotted lines: the seed's peaks as its text "
                "gives them (X1 MSP, Altix, PowerEdge).",
                "message size (bytes)", "bandwidth (MB/s)", series,
                references=_references(SEED_FIG1),
                name="seed002-fig-1" + ("" if index == 0 else "-%d" % (index + 1)), log=True,
                source=_source(description, "beff")))
    return out


def _distance_figure(records: Sequence[dict], shapes: list, number: int, seed: Sequence[tuple],
                     where: str, description: Optional[dict]) -> list:
    out = []
    colors = _colors(_libraries(records))
    for index, shape in enumerate(shapes):
        members = [r for r in records if r.get("test") == "pingpong_distance"
                   and _shape(r) == shape]
        distances = sorted({int(r["distance"]) for r in members})
        series = []
        for library in colors:
            for k, d in enumerate(distances):
                mine = [r for r in members if r.get("library") == library
                        and int(r["distance"]) == d]
                near = any(r.get("same_node") for r in mine)
                line = _line("%s d=%d%s" % (library, d, "" if near else " (other node)"), mine,
                             "size", colors[library], DASHES[k % len(DASHES)])
                if line is not None:
                    series.append(line)
        if series:
            out.append(Figure(
                "Seed 002 Fig. %d: distance sensitivity, %s" % (number, _shape_label(shape)),
                "bench/mpi_beff.c --tests distance: PingPong bandwidth (size / half the round "
                "trip) of rank 0 with rank d, d = 1, 2, 4 .. and P-1, one colour per library, "
                "one dash per distance ('other node': d is not on rank 0's node). %s Dotted "
                "lines: the seed's peak rates per distance as its text gives them."
                % where,
                "message size (bytes)", "bandwidth (MB/s)", series,
                references=_references(seed),
                name="seed002-fig-%d" % number + ("" if index == 0 else "-%d" % (index + 1)),
                log=True, source=_source(description, "beff")))
    return out


def _phase_figure(records: Sequence[dict], algorithm: str, shape: tuple, number: Optional[int],
                  suffix: str, description: Optional[dict]) -> Optional[Figure]:
    test = "dense_" + algorithm
    members = [r for r in records if r.get("test") == test and _shape(r) == shape]
    if not members:
        return None
    colors = _colors(_libraries(records))
    sizes = sorted({int(r["size"]) for r in members})
    sizes = [size for size in sizes if size in DENSE_FIGURE_SIZES] or sizes
    x_key = "pairs" if algorithm == "cumulative" else "phase"
    series = []
    for library in colors:
        for k, size in enumerate(sizes):
            mine = [r for r in members if r.get("library") == library and int(r["size"]) == size]
            line = _line("%s %s" % (library, format_size(size)), mine, x_key, colors[library],
                         DASHES[k % len(DASHES)])
            if line is not None:
                series.append(line)
    if not series:
        return None
    what = {"aapc": "congestion-controlled all-to-all (aapc): phase k, send to r+k, receive "
                    "from r-k",
            "pairwise": "simple pair-wise: phase k, exchange with r XOR k",
            "cumulative": "cumulative pair-wise: the pairs (i, i+P/2), one more each phase",
            "random": "random pair-wise: a new random pairing each phase"}[algorithm]
    title = ("Seed 002 Fig. %d: %s" % (number, what.split(":")[0]) if number is not None
             else "Dense communication: %s" % what.split(":")[0])
    return Figure(
        "%s, %s" % (title, _shape_label(shape)),
        "bench/mpi_beff.c --tests dense, %s; bandwidth per communicating process (size x "
        "loops / the slowest rank's time) per %s, one colour per library, one dash per "
        "message size (of 1, 3, 64 KB and 1 MB when measured; every size is in the "
        "tables). %s" % (what, "number of pairs" if x_key == "pairs" else "phase",
                              SEED_DENSE_TEXT[algorithm]),
        "pairs" if x_key == "pairs" else "phase", "bandwidth per process (MB/s)", series,
        name=("seed002-fig-%d" % number if number is not None else "dense-%s" % algorithm)
        + suffix, source=_source(description, "dense"),
        xticks=sorted({float(r[x_key]) for r in members if isinstance(r.get(x_key), (int, float))}))


def _dense_figures(records: Sequence[dict], description: Optional[dict]) -> list:
    shapes = sorted({_shape(r) for r in records if r.get("suite") == "dense"})
    one = [s for s in shapes if s[2] == "on-node"]
    across = [s for s in shapes if s[2] != "on-node"]
    out = []

    def add(algorithm: str, number: Optional[int], group: list) -> None:
        for index, shape in enumerate(group):
            figure = _phase_figure(records, algorithm, shape, number,
                                   "" if index == 0 else "-%d" % (index + 1), description)
            if figure is not None:
                out.append(figure)

    add("aapc", 7, one + across)
    add("cumulative", 8, one + across)
    add("pairwise", 9, one)
    add("pairwise", 10, across)
    add("random", None, one + across)
    return out


def figures(records: Sequence[dict], description: Optional[dict] = None) -> list:
    """Seed 002 Figs. 1-3 and 7-10 (and the random pair-wise) from the
    records of bench/mpi_beff.c."""
    mine = [r for r in records if is_beff(r)]
    if not mine:
        return []
    beff = [r for r in mine if r.get("suite") == beffbench.SUITE]
    shapes = sorted({_shape(r) for r in beff if r.get("test") == "pingpong_distance"})
    out = _fig1(beff, description)
    out += _distance_figure(beff, [s for s in shapes if s[2] == "on-node"], 2, SEED_FIG2,
                            "All ranks on one node (the seed's Altix: one shared-memory "
                            "system).", description)
    out += _distance_figure(beff, [s for s in shapes if s[2] != "on-node"], 3, SEED_FIG3,
                            "Across nodes: Postbox's virtual nodes, the other libraries their "
                            "network path on this host (the seed's Opteron cluster: 2 "
                            "processors per node, Myrinet between).", description)
    out += _dense_figures(mine, description)
    return out
