"""The report's traffic section (trafficreport): seed 000's Figs. 14 and 15
from synthetic mpi_traffic records, every library on the same axes, the
seed's values beside them, the ids the table of contents needs, and the
page in headless chromium when it is installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess

import pytest

from postbox import report, trafficbench, trafficreport
from samples import record, write_jsonl

pytestmark = pytest.mark.short

CHROMIUM = "/usr/bin/chromium"


def traffic_records(library: str, ranks: int = 4, path: str = "on-node", nodes: int = 1,
                    capacity: float = 1000.0, tests=("uniform", "complement", "neighbor",
                                                     "bit_reversal")) -> list:
    """What mpi_traffic writes for @library in one shape: accepted =
    min(offered, @capacity); saturation at @capacity."""
    out = []
    for test in tests:
        if test != "uniform" and trafficbench.destinations(test, ranks) is None:
            continue
        size_dists = ("uniform", "exponential") if test == "uniform" else ("uniform",)
        for size_dist in size_dists:
            sat = capacity * (0.9 if size_dist == "exponential" else 1.0)
            out.append(record(suite="traffic", test=test, library=library, ranks=ranks,
                              nodes=nodes, path=path, size=8192, metric="accepted_bandwidth",
                              unit="MB/s", median=sat, min=sat, max=sat, reps=1,
                              probe_before=-1.0, probe_after=-1.0, state="unknown",
                              size_dist=size_dist, time_dist="none", load="saturation",
                              offered=sat * 1.3, messages=100, senders=ranks,
                              off_node_share=0.0 if nodes == 1 else 0.5))
            for time_dist in (("uniform", "exponential") if test == "uniform" else
                              ("uniform",)):
                for load in (0.5, 1.0):
                    offered = load * sat
                    out.append(record(suite="traffic", test=test, library=library,
                                      ranks=ranks, nodes=nodes, path=path, size=8192,
                                      metric="accepted_bandwidth", unit="MB/s",
                                      median=offered * 0.98, min=offered * 0.98,
                                      max=offered * 0.98, reps=1, probe_before=-1.0,
                                      probe_after=-1.0, state="unknown", size_dist=size_dist,
                                      time_dist=time_dist, load="fraction",
                                      load_fraction=load, offered_nominal=offered,
                                      offered=offered, messages=50, senders=ranks,
                                      off_node_share=0.0))
    return out


def _run() -> list:
    return (traffic_records("postbox", capacity=900.0)
            + traffic_records("mpich", capacity=800.0)
            + traffic_records("postbox", path="network", nodes=2, capacity=300.0)
            + traffic_records("postbox", path="network", nodes=4, capacity=250.0)
            + traffic_records("mpich", path="network", nodes=1, capacity=200.0)
            + traffic_records("mpich", ranks=2, capacity=700.0))


def test_shapes_and_saturation():
    records = _run()
    assert trafficreport.libraries(records) == ["postbox", "mpich"]
    assert trafficreport.shapes(records) == [(2, 1), (4, 1), (4, 2), (4, 4)]
    # MPICH's network path has no nodes: it counts as the two-node shape
    assert trafficreport.saturation(records, "mpich", (4, 2), "uniform") == 200.0
    assert trafficreport.saturation(records, "postbox", (4, 4), "complement") == 250.0
    assert trafficreport.saturation(records, "postbox", (4, 1), "uniform",
                                    "exponential") == pytest.approx(810.0)
    assert trafficreport.saturation(records, "postbox", (2, 1), "uniform") is None
    assert trafficreport.off_node_share(records, "postbox", (4, 2), "complement") == 0.5


def test_repeated_records_give_their_median():
    records = (traffic_records("postbox", capacity=100.0) + traffic_records("postbox",
                                                                           capacity=300.0)
               + traffic_records("postbox", capacity=200.0))
    assert trafficreport.saturation(records, "postbox", (4, 1), "uniform") == 200.0


def test_fig14_panels_every_library_on_the_same_axes():
    records = _run()
    figures = trafficreport.figures(records, {"runs": [
        {"name": "traffic/postbox/4-ranks-1-node", "command": ["mpiexec", "-n", "4",
                                                               "mpi_traffic"]}]})
    names = [f.name for f in figures]
    assert names == ["seed000-fig-14-2-ranks-1-node", "seed000-fig-14-4-ranks-1-node",
                     "seed000-fig-14-4-ranks-2-nodes", "seed000-fig-14-4-ranks-4-nodes"]
    assert all(f.title.startswith("Seed 000 Fig. 14: ") for f in figures)
    panel = figures[1]
    labels = [s.label for s in panel.series]
    # both libraries, each with its four pairs of distributions
    assert labels == ["%s S=%s T=%s" % (lib, s, t) for lib in ("postbox", "mpich")
                      for s in "UE" for t in "UE"]
    line = panel.series[0]
    # the two loads, then saturation (offered 1.3 x 900) ends the line
    assert [round(x) for x, _, _ in line.points] == [450, 900, 1170]
    assert line.points[-1][1] == 900.0
    assert panel.source == ["mpiexec -n 4 mpi_traffic"]
    # one colour per library, one dash per pair of distributions
    assert len({s.color for s in panel.series}) == 2
    assert len({s.dasharray for s in panel.series}) == 4


def test_section_has_the_seed_beside_this_machine():
    records = _run()
    page = "\n".join(trafficreport.section(records))
    assert 'id="seed000-fig-14"' in page and 'id="seed000-fig-15"' in page
    assert "Seed 000 Fig. 14: uniform traffic" in page
    assert "Seed 000 Fig. 15: permutation traffic" in page
    # the seed's numbers, with where they come from
    for _, _, value in trafficreport.SEED_FIG14:
        assert "<td>%d</td>" % value in page
    assert "3300 MB/s" in page and "3500 MB/s" in page and "§VI-E" in page
    assert "off-node only" in page and "on-node only" in page
    # Fig. 15: a bar per library and permutation, n/a where not applicable
    assert page.count('<figure id="seed000-fig-15-') == 4
    assert "Bit-reversal" in page and "n/a" in page
    assert "4 ranks across 4 nodes" in page
    assert trafficreport.section([record()]) == []


def test_summary_line():
    assert trafficreport.summary(_run()) == (
        "uniform saturation, 4 ranks on one node: postbox 900 MB/s, mpich 800 MB/s")
    assert trafficreport.summary([]) is None


def test_the_seed_constants_name_their_source():
    assert {test for test, _, _ in trafficreport.SEED_FIG15} <= set(trafficbench.PERMUTATIONS)
    assert all("seed 000" in where for _, _, where in trafficreport.SEED_FIG15)
    assert "seed 000" in trafficreport.SEED_FIG14_SOURCE
    assert [t for t, _ in trafficreport.PERMUTATION_NAMES] == list(trafficbench.PERMUTATIONS)


def test_page_holds_the_section_and_panels(tmp_path):
    write_jsonl(tmp_path / "traffic.jsonl", _run())
    page = report.write(tmp_path)
    text = page.read_text(encoding="utf-8")
    assert 'id="seed000-fig-14"' in text
    assert 'id="seed000-fig-14-4-ranks-1-node"' in text
    assert (tmp_path / "fig-seed000-fig-14-4-ranks-1-node.svg").exists()
    # the traffic records are drawn, not left to the catch-all figures
    assert "traffic / uniform against size" not in text


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="%s not installed" % CHROMIUM)
def test_section_in_headless_chromium(tmp_path):
    write_jsonl(tmp_path / "traffic.jsonl", _run())
    (tmp_path / "machine.json").write_text(json.dumps({"hostname": "node7", "runs": []}))
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
    for anchor in ("seed000-fig-14", "seed000-fig-15", "seed000-fig-15-4-ranks-1-node",
                   "seed000-fig-14-4-ranks-4-nodes"):
        assert 'id="%s"' % anchor in dom, anchor
    # the Fig. 15 bars were parsed as SVG: one rect per library and permutation
    bars = re.search(r'<figure id="seed000-fig-15-4-ranks-1-node">(.*?)</figure>', dom, re.S)
    assert bars and bars.group(1).count("<rect") >= 2 * 4
    assert [line for line in log.splitlines() if ":CONSOLE(" in line] == []
