"""The LogP section of the report: seed 000's Table VII and Fig. 13 from
synthetic logp records (every library, both paths), its ids and titles, the
seed's values beside this machine's, and the page in headless chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess

import pytest

from postbox import logpreport, report
from postbox.loggp import LogGP
from samples import logp_records

pytestmark = pytest.mark.short

CHROMIUM = "/usr/bin/chromium"
SIZES = [0, 16, 256, 4096, 65536]
NODE = LogGP(L=0.3e-6, o_s=0.2e-6, o_r=0.25e-6, g=0.4e-6, G=1e-10)
NET = LogGP(L=20e-6, o_s=3e-6, o_r=4e-6, g=5e-6, G=1e-8)


def _records():
    out = []
    for library, scale in (("postbox", 1.0), ("mpich", 1.5), ("openmpi", 2.0)):
        for path, truth in (("on-node", NODE), ("network", NET)):
            scaled = LogGP(*(getattr(truth, name) * scale for name in ("L", "o_s", "o_r", "g",
                                                                        "G")))
            out += logp_records(scaled, library, path, SIZES)
    return out


def test_table7_beside_the_seed():
    rows = logpreport.table7_rows(_records())
    assert [(r[0], r[1]) for r in rows][:2] == [("postbox", "on-node"), ("postbox", "network")]
    library, path, L, o, o_s, o_r, g, done = rows[0]
    # RTT(0) = 2 (o_s + L + o_r) = 1.5 us, g(0) = 0.4: L = 0.75 - 0.4
    assert L == pytest.approx(0.35) and g == pytest.approx(0.4) and done
    # o: the mean of o_s and o_r at 1-64 B (16 B here)
    assert o_s == pytest.approx(0.2) and o_r == pytest.approx(0.25)
    assert o == pytest.approx(0.225)
    html = "\n".join(logpreport.section(_records()))
    assert '<div id="seed000-table-7">' in html
    assert "<h3>Seed 000 Table VII:" in html
    # the seed's row: L 0.51, o 2.50, g 2.29 us
    assert "<td>0.51</td><td>2.5</td><td>3</td><td>2</td><td>2.29</td>" in html
    assert html.count('<td class="text">mpich</td>') >= 2


def test_small_message_value():
    assert logpreport.small_message_value({0: 9.0, 1: 2.0, 64: 4.0, 128: 7.0}) == 3.0
    assert logpreport.small_message_value({0: 9.0, 256: 5.0, 4096: 6.0}) == 5.0
    assert logpreport.small_message_value({0: 9.0}) is None


def test_fig13_every_library_on_each_path():
    figures = logpreport.figures(_records())
    assert [f.name for f in figures] == ["seed000-fig-13-node", "seed000-fig-13-net"]
    for figure in figures:
        assert figure.title.startswith("Seed 000 Fig. 13: ")
        labels = [s.label for s in figure.series]
        for library in ("postbox", "mpich", "openmpi"):
            for name in ("g", "o_s", "o_r"):
                assert "%s %s(m)" % (library, name) in labels
        # size 0 is left out of the log axis; the seed's values as references
        assert all(x > 0 for s in figure.series for x, _, _ in s.points)
        assert [value for _, value in figure.references] == [3.0, 2.0, 2.29]
    net = figures[1].series[0]  # postbox g(m) on the network path
    assert net.label == "postbox g(m)"
    # g(m) = RTT(m) - RTT(0) + g(0) = (m - 1) G + g(0) at 65536 B
    assert dict((x, y) for x, y, _ in net.points)[65536.0] == pytest.approx(
        65535 * 1e-8 * 1e6 + 5.0)


def test_section_and_page(tmp_path):
    records = _records()
    (tmp_path / "logp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records),
                                         encoding="utf-8")
    page = report.write(tmp_path)
    text = page.read_text(encoding="utf-8")
    assert '<h2 id="logp">LogP parameters' in text
    assert '<div id="seed000-fig-13">' in text and '<div id="seed000-table-7">' in text
    # each figure once: in the section, not again in the page's list
    assert text.count('id="fig-seed000-fig-13-node"') == 1
    assert (tmp_path / "fig-seed000-fig-13-node.svg").exists()
    assert (tmp_path / "fig-seed000-fig-13-net.svg").exists()
    assert 'id="logp-loggp"' in text and "netgauge L" in text
    # no logp record lands in the catch-all figures
    assert "logp / plogp against size" not in text and "logp / prtt against size" not in text
    assert logpreport.section([r for r in records if r["suite"] != "logp"]) == []


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="%s not installed" % CHROMIUM)
def test_section_in_headless_chromium(tmp_path):
    (tmp_path / "logp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _records()),
                                         encoding="utf-8")
    page = report.write(tmp_path)
    profile = tmp_path / "chromium-profile"
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
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(profile, ignore_errors=True)
    assert process.returncode == 0
    for name in ("seed000-fig-13-node", "seed000-fig-13-net"):
        match = re.search(r'<svg[^>]*id="fig-%s"[^>]*>(.*?)</svg>' % name, dom, re.S)
        assert match, name
        assert "<path" in match.group(1)
    assert re.search(r'<div id="seed000-table-7">.*?<table', dom, re.S)
    assert [line for line in log.splitlines() if ":CONSOLE(" in line] == []
