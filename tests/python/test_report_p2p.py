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

from postbox import report
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
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--no-first-run", "--disable-dev-shm-usage",
            "--user-data-dir=%s" % profile, "--dump-dom", page.resolve().as_uri()]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, start_new_session=True)
    try:
        dom, _ = process.communicate(timeout=90)
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


def test_sample_records_are_complete():
    for rec in _mixed() + net_records():
        assert set(record()) <= set(rec)
