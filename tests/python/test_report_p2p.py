"""`postbox report` of the MPI and raw network benches: figures with every
library on the same axes, library-against-library ratios from settled,
same-state records only, and (when Debian's chromium is here) the page as a
browser loads it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from postbox import plot, report
from samples import net_records, p2p_records, record, sample_records, write_jsonl

pytestmark = pytest.mark.short

CHROMIUM = "/usr/bin/chromium"


def _mixed() -> list:
    """mpich twice as slow as openmpi everywhere; some records spoilt."""
    mpich = p2p_records("mpich", scale=2.0)
    ompi = p2p_records("openmpi", scale=1.0)
    spoil = {("pingpong_standard", 64): {"settled": False},      # unsettled (mpich)
             ("pingpong_standard", 4096): {"state": "slow"},     # state differs
             ("pingpong_standard", 65536): {"state": "unknown"}}  # no probes
    for rec in mpich:
        rec.update(spoil.get((rec["test"], rec["size"]), {}))
    # openmpi did not measure 1 byte of pingping
    ompi = [r for r in ompi if not (r["test"] == "pingping" and r["size"] == 1)]
    return mpich + ompi


@pytest.fixture
def results_dir(tmp_path):
    write_jsonl(tmp_path / "rsm.jsonl", sample_records())
    write_jsonl(tmp_path / "net.jsonl", net_records())
    write_jsonl(tmp_path / "p2p.jsonl", _mixed())
    (tmp_path / "machine.json").write_text(json.dumps({
        "hostname": "node7", "postbox_version": "9.9",
        "runs": [{"name": "rsm", "command": ["postbox-rsm-bench", "--json", "rsm.jsonl"]},
                 {"name": "net", "command": ["postbox-net-bench", "--json", "net.jsonl"]},
                 {"name": "mpich/pingpong_standard",
                  "command": ["mpiexec.mpich", "-n", "2", "mpi_p2p", "--tests",
                              "pingpong_standard"]}],
        "mpi_libraries": [{"label": "mpich", "library_version": "MPICH Version: 4.0.2"},
                          {"label": "openmpi", "library_version": "Open MPI v5.0.3"}]}))
    return tmp_path


def _ratio(rows, test):
    return [r for r in rows if r.test == test][0]


def test_ratios_only_from_settled_same_state_records():
    rows = report.library_ratios(_mixed())
    assert [(r.a, r.b) for r in rows] == [("mpich", "openmpi")] * 9
    standard = _ratio(rows, "pingpong_standard")
    # sizes 0, 1, 64, 4096, 65536: three spoilt, two count
    assert [size for size, _ in standard.ratios] == [0, 1]
    assert standard.median == pytest.approx(2.0) and standard.spread == pytest.approx((2, 2))
    assert dict(standard.dropped) == {"unsettled": 1, "different states": 1,
                                      "no probe state": 1}
    pingping = _ratio(rows, "pingping")
    assert len(pingping.ratios) == 4 and dict(pingping.dropped) == {"one library only": 1}
    bandwidth = _ratio(rows, "bandwidth_uni")
    assert bandwidth.median == pytest.approx(0.5) and len(bandwidth.ratios) == 4
    assert not bandwidth.dropped


def test_ratio_median_and_spread():
    a = p2p_records("a", tests=["pingpong_standard"], sizes=(1, 2, 3, 4))
    b = p2p_records("b", tests=["pingpong_standard"], sizes=(1, 2, 3, 4))
    for rec, factor in zip(a, (1.0, 3.0, 2.0, 5.0)):
        rec["median"] *= factor
    row = report.library_ratios(a + b)[0]
    assert row.median == pytest.approx(2.5) and row.spread == pytest.approx((1.0, 5.0))


def test_no_pair_no_table():
    assert report.library_ratios(p2p_records("mpich")) == []
    assert "Library against library" not in report.render(p2p_records("mpich"))


def test_p2p_figures_one_per_mode_every_library_on_them():
    figures = report.p2p_figures(_mixed())
    names = [f.name for f in figures]
    assert names == ["p2p-pingpong_standard", "p2p-pingpong_synchronous", "p2p-pingpong_ready",
                     "p2p-pingpong_buffered", "p2p-pingpong_diffbuf", "p2p-unidirectional",
                     "p2p-pingping", "p2p-bandwidth"]
    for figure in figures[:-1]:
        assert [s.label for s in figure.series] == ["mpich", "openmpi"]
        assert figure.log
    bandwidth = figures[-1]
    assert [s.label for s in bandwidth.series] == ["mpich uni", "openmpi uni", "mpich bi",
                                                   "openmpi bi"]
    assert [s.dashed for s in bandwidth.series] == [False, False, True, True]
    # one colour per library across the lines
    assert bandwidth.series[0].color == bandwidth.series[2].color
    # the unsettled point is drawn, hollow grey
    standard = figures[0]
    assert (64.0, 2 * 1.064, False) in [(x, round(y, 6), s) for x, y, s in
                                         standard.series[0].points]
    assert "(unsettled)</title>" in report.svg_plot(standard)


def test_net_figures_beside_the_rsm_pingpong():
    figures = report.net_figures(sample_records() + net_records())
    assert [f.name for f in figures] == ["net-latency", "net-bandwidth"]
    labels = [s.label for s in figures[0].series]
    assert labels[:2] == ["tcp_pingpong", "udp_pingpong"] and "pingpong_put" in labels
    assert figures[0].references == [("raw cache line", 0.08)]
    assert [s.label for s in figures[1].series] == ["tcp_stream"]


def test_page_and_svg_files(results_dir):
    page = report.write(results_dir)
    text = page.read_text()
    figures = report.figures(report.results.load_dir(results_dir))
    files = sorted(p.name for p in results_dir.glob("fig-*.svg"))
    assert files == sorted("fig-%s.svg" % f.name for f in figures)
    assert text.count("<svg") == len(figures)
    for name in ("p2p-pingpong_standard", "p2p-bandwidth", "net-latency", "net-bandwidth",
                 "rsm-pingpong"):
        assert 'id="fig-%s"' % name in text
        svg = (results_dir / ("fig-%s.svg" % name)).read_text()
        assert svg.startswith("<?xml") and "<desc>Produced by:" in svg
    # provenance: commands and versions from machine.json
    assert "mpich: MPICH Version: 4.0.2 - mpiexec.mpich -n 2 mpi_p2p" in text
    assert "openmpi: Open MPI v5.0.3" in text
    assert "postbox-net-bench --json net.jsonl (Postbox 9.9)" in text
    # the ratio table with its drop counts
    row = re.search(r'<tr class="library-ratio">(.*?pingpong_standard.*?)</tr>', text).group(1)
    assert ">2.000<" in row and "2.000-2.000" in row
    assert "1 unsettled, 1 different states, 1 no probe state" in row
    assert "<script" not in text


def test_stale_figures_are_removed(results_dir):
    (results_dir / "fig-old.svg").write_text("<svg/>")
    report.write(results_dir)
    assert not (results_dir / "fig-old.svg").exists()


def test_all_unsettled_pair_has_no_ratio():
    a = p2p_records("a", tests=["pingping"], settled=False)
    b = p2p_records("b", tests=["pingping"])
    row = report.library_ratios(a + b)[0]
    assert row.median is None and row.dropped["unsettled"] == 5
    assert "<td>-</td>" in report.render(a + b)


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="%s not installed" % CHROMIUM)
def test_page_in_headless_chromium(results_dir, tmp_path):
    page = report.write(results_dir)
    profile = tmp_path / "chromium-profile"
    # --no-sandbox: CI runs as root, where chromium refuses its sandbox;
    # --enable-logging=stderr: the page's console messages come on stderr
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--no-first-run", "--disable-dev-shm-usage",
            "--enable-logging=stderr", "--v=0",
            "--user-data-dir=%s" % profile, "--dump-dom", page.resolve().as_uri()]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, errors="replace", start_new_session=True)
    try:
        dom, log = process.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("chromium did not load the page in 90 s")
    finally:
        try:  # whatever chromium left in its group (zygote, gpu process)
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(profile, ignore_errors=True)
    assert process.returncode == 0
    figures = report.figures(report.results.load_dir(results_dir))
    assert len(figures) >= 8
    for figure in figures:
        match = re.search(r'<svg[^>]*id="fig-%s"[^>]*>(.*?)</svg>' % re.escape(figure.name),
                          dom, re.S)
        assert match, figure.name
        assert "<path" in match.group(1)  # its lines were parsed as SVG
    assert dom.count("<svg") == len(figures)
    assert "Library against library" in dom
    # no console message from the page (it has no scripts: any would be an error)
    assert [line for line in log.splitlines() if ":CONSOLE(" in line] == []


def test_sample_records_are_complete():
    for rec in _mixed() + net_records():
        assert set(record()) <= set(rec)


# ---- network path, multipair, distance -------------------------------------

def _paths() -> list:
    """Two libraries on both paths: openmpi's network path is TCP-like (10x
    slower), mpich's is not (1.5x: still shared memory)."""
    out = []
    for library, factor in (("mpich", 1.5), ("openmpi", 10.0)):
        out += p2p_records(library, tests=["pingpong_standard", "bandwidth_uni"])
        for rec in p2p_records(library, tests=["pingpong_standard", "bandwidth_uni"],
                               path="network", transport="tcp", path_how="how " + library):
            if rec["metric"] == "latency":
                rec["median"] *= factor
            out.append(rec)
    return out


def _shapes() -> list:
    out = []
    for library in ("mpich", "openmpi"):
        for pairs in (1, 2):
            out += p2p_records(library, tests=["multipair_latency", "multipair_bandwidth"],
                               sizes=(1, 64, 4096, 65536), pairs=pairs, ranks=2 * pairs,
                               oversubscribed=pairs > 1, path="on-node")
        for d in (1, 2):
            out += p2p_records(library, tests=["pingpong_distance"], sizes=(64, 4096, 65536),
                               distance=d, ranks=3)
    return out


def test_path_checks_tell_network_like_from_shared_memory():
    checks = {c.library: c for c in report.path_checks(_paths())}
    assert checks["openmpi"].network is True and checks["openmpi"].size == 0
    assert checks["openmpi"].ratio == pytest.approx(10.0)
    assert checks["mpich"].network is False
    assert "NOT forced off shared memory" in checks["mpich"].text()
    assert checks["openmpi"].describe()["how"] == "how openmpi"
    # a library measured on-node only has nothing to check
    assert report.path_checks(p2p_records("mpich")) == []
    # ranks on two virtual nodes are off-node by construction, even when the
    # on-node path is slower still
    slow = p2p_records("postbox", tests=["pingpong_standard"], scale=100.0)
    slow += p2p_records("postbox", tests=["pingpong_standard"], path="network",
                        placement="off-node", nodes=2, transport="tcp")
    check = report.path_checks(slow)[0]
    assert check.ratio < 1 and check.network is True and check.off_node
    assert "off-node by construction" in check.text()


def test_network_path_figures_apart_with_the_unforced_library_marked():
    figures = {f.name: f for f in report.p2p_figures(_paths())}
    assert "p2p-pingpong_standard" in figures and "p2p-network-pingpong_standard" in figures
    assert "p2p-network-bandwidth" in figures
    labels = [s.label for s in figures["p2p-network-pingpong_standard"].series]
    assert labels == ["mpich (NOT off shared memory)", "openmpi"]
    assert [s.label for s in figures["p2p-pingpong_standard"].series] == ["mpich", "openmpi"]
    assert "network path" in figures["p2p-network-pingpong_standard"].title
    page = report.render(_paths())
    assert "Network path check" in page and page.count('<tr class="path-check">') == 2
    # records of the two paths are never compared with each other
    rows = report.library_ratios(_paths())
    shapes = {(r.test, r.shape) for r in rows}
    assert ("pingpong_standard", "") in shapes and ("pingpong_standard", "network") in shapes
    standard = [r for r in rows if r.test == "pingpong_standard" and r.shape == "network"][0]
    assert standard.median == pytest.approx(1.5 / 10.0)


def test_multipair_and_distance_figures():
    figures = {f.name: f for f in report.p2p_figures(_shapes())}
    latency = figures["p2p-multipair-latency"]
    # N on the x axis, one line per library and small size held constant
    assert [s.label for s in latency.series] == ["mpich 1 B", "mpich 64 B", "openmpi 1 B",
                                                  "openmpi 64 B"]
    assert sorted(x for x, _, _ in latency.series[0].points) == [1.0, 2.0]
    assert latency.xticks == [1.0, 2.0]  # whole pairs only on the axis
    ticks = [m.text for m in plot.plot_marks(latency) if m.cls == "tick"]
    assert "1" in ticks and "2" in ticks and "1.5" not in ticks
    assert "N = 2 ran with more ranks than the machine has cores" in latency.caption
    bandwidth = figures["p2p-multipair-bandwidth"]
    assert [s.label for s in bandwidth.series] == [
        "mpich N=1", "mpich N=2 (oversubscribed)", "openmpi N=1", "openmpi N=2 (oversubscribed)"]
    assert bandwidth.series[0].color == bandwidth.series[1].color
    assert bandwidth.series[0].dasharray != bandwidth.series[1].dasharray
    distance = figures["p2p-distance"]
    assert [s.label for s in distance.series] == ["mpich d=1", "mpich d=2", "openmpi d=1",
                                                   "openmpi d=2"]
    assert 'stroke-dasharray="6 3"' in report.svg_plot(distance)
    # no figure of their own for the multipair or distance tests besides these
    assert set(figures) == {"p2p-multipair-latency", "p2p-multipair-bandwidth", "p2p-distance"}
    shapes = {r.shape for r in report.library_ratios(_shapes())}
    assert shapes == {"", "2 pairs", "d=1", "d=2"}


def test_thresholds_are_listed_with_their_source():
    description = {"mpi_libraries": [{"label": "openmpi", "thresholds": [
        {"path": "on-node", "name": "btl_sm_eager_limit", "value": 4096,
         "meaning": "sm BTL: largest eager (short) message",
         "source": "ompi_info --parsable --param btl all --level 9"}]}]}
    page = report.render(p2p_records("openmpi"), description)
    row = re.search(r'<tr class="threshold">(.*?)</tr>', page).group(1)
    assert "btl_sm_eager_limit" in row and ">4096<" in row and "ompi_info --parsable" in row


def test_paper_tables_beside_this_machine():
    records = _paths() + p2p_records("openmpi", tests=["multipair_bandwidth"],
                                     sizes=(64, 4096), pairs=1)
    records[-1]["median"] = 5000.0  # the best single-pair bandwidth, at 4 KB
    page = "\n".join(report.paper_tables_section(records))
    for key in ("qian-IV", "qian-V", "qian-VI", "sistare-1"):
        assert 'id="paper-%s"' % key in page
    # the papers' own values, cited
    assert "Qian et al. 2006, Table IV" in page and "Sistare and Jackson 2002, Table 1" in page
    table_iv = page[page.index('id="paper-qian-IV"'):page.index('id="paper-qian-V"')]
    row = re.search(r'<tr><td class="text">1</td>(.*?)</tr>', table_iv).group(1)
    assert "<td>2.8</td><td>5</td>" in row
    # this machine's value with the record it came from: openmpi on-node 1 B
    assert 'title="openmpi pingpong_standard, 1 B, on-node path">1</td>' in row
    table_1 = page[page.index('id="paper-sistare-1"'):]
    bandwidth = re.search(r"<tr><td class=\"text\">bandwidth \(MB/s\)</td>(.*?)</tr>",
                          table_1).group(1)
    assert "<td>806</td><td>867</td>" in bandwidth
    assert 'title="openmpi multipair_bandwidth, 4K B, on-node path">5000</td>' in bandwidth
    assert "QsNet II" in page and "<td>841</td>" in page  # Table VI, InfiniBand
    assert report.paper_tables_section(sample_records()) == []  # no MPI records, no tables


def test_png_beside_every_svg(results_dir):
    if report.png_available() is not None:
        pytest.skip(report.png_available())
    page = report.write(results_dir).read_text()
    svgs = sorted(p.stem for p in results_dir.glob("fig-*.svg"))
    pngs = sorted(p.stem for p in results_dir.glob("fig-*.png"))
    assert svgs == pngs and svgs
    from PIL import Image
    with Image.open(results_dir / "fig-p2p-pingpong_standard.png") as image:
        assert image.format == "PNG"
        assert image.size == (plot.PLOT_SIZE[0] * plot.PNG_SCALE,
                              plot.PLOT_SIZE[1] * plot.PNG_SCALE)
        # something was drawn in the series' colours, not just a white page
        colours = {colour for _, colour in image.getcolors(1 << 20)}
        assert (0x1f, 0x77, 0xb4) in colours
    assert 'href="fig-p2p-pingpong_standard.png"' in page
    # a stale PNG goes like a stale SVG
    (results_dir / "fig-old.png").write_bytes(b"")
    report.write(results_dir)
    assert not (results_dir / "fig-old.png").exists()


def test_png_and_svg_share_their_marks():
    figure = report.p2p_figures(_mixed())[0]
    marks = plot.plot_marks(figure)
    svg = report.svg_plot(figure)
    assert svg.count("<circle") == sum(1 for m in marks if m.kind == "circle")
    assert svg.count("<path") == sum(1 for m in marks if m.kind == "path")
    # dashes: on, off, on ... along the polyline, lengths in SVG units x scale
    pieces = plot._dashes([(0.0, 0.0), (20.0, 0.0)], "4 3", 1)
    assert [(a[0], b[0]) for a, *_, b in pieces] == [(0, 4), (7, 11), (14, 18)]
    assert plot._dashes([(0.0, 0.0), (5.0, 0.0)], None, 2) == [[(0.0, 0.0), (5.0, 0.0)]]


def test_without_pillow_the_page_says_so(results_dir, monkeypatch):
    monkeypatch.setattr(report, "png_available", lambda: "Pillow is not installed")
    page = report.write(results_dir).read_text()
    assert not list(results_dir.glob("fig-*.png"))
    assert "PNG copies of the figures were not written: Pillow is not installed" in page
    assert list(results_dir.glob("fig-*.svg"))
