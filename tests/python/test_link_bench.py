"""The links part (linkbench) and seed 003's tables (linkreport): the runs
planned and their commands, the records re-tagged, the tables' arithmetic
on synthetic records, the report section (and the page in headless
chromium when it is installed); as root with the build, one real run of
postbox-rsm-net-bench on a shaped link."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from postbox import bench, linkbench, linkreport, mpibench, netns, report
from samples import record
from test_netns import needs_netns

pytestmark = pytest.mark.short

CHROMIUM = "/usr/bin/chromium"


def _lib(family: str, label: str = "") -> mpibench.Library:
    return mpibench.Library(family, "system", Path("/usr/bin/mpicc"), Path("/usr/bin/mpiexec"),
                            label=label or family)


# ---- the runs ---------------------------------------------------------------------

def test_suite_runs_the_part():
    assert bench.suite_parts(["links"]) == ["links"]
    assert ("links", "linkbench") in bench.MPI_PARTS


def test_links_of_each_profile():
    assert [l.option for l in linkbench.links_for(True, "50us")] == ["100mbit,50us",
                                                                     "1gbit,50us"]
    assert [l.option for l in linkbench.links_for(False, "")] == ["10mbit", "100mbit", "1gbit",
                                                                  "10gbit"]


def test_plan_leaves_open_mpi_out():
    plan = linkbench.plan_runs([_lib("postbox"), _lib("openmpi"), _lib("mpich")],
                               linkbench.links_for(True, ""))
    assert [run.name for run in plan] == [
        "links/100mbit/rsm", "links/100mbit/postbox", "links/100mbit/mpich",
        "links/1gbit/rsm", "links/1gbit/postbox", "links/1gbit/mpich"]


def test_slow_links_cap_the_sizes():
    full = linkbench.MPI_SIZES[False]
    assert max(linkbench.sizes_for(linkbench.Link("10mbit"), full)) == 65536
    assert linkbench.sizes_for(linkbench.Link("100mbit"), full) == list(full)


def test_commands(monkeypatch, tmp_path):
    monkeypatch.setattr(linkbench.paths, "program", lambda name: Path("/b") / name)
    link = linkbench.Link("100mbit", "50us")
    argv = linkbench.rsm_command(link, tmp_path / "x.part", True)
    assert argv[:10] == ["/b/postbox", "run", "-n", "2", "--nodes", "2", "--netns", "--link",
                         "100mbit,50us", "--timeout"]
    assert "/b/postbox-rsm-net-bench" in argv
    assert argv[argv.index("--sizes") + 1] == "8,64,1024,16384"
    assert argv[argv.index("--max-size") + 1] == "16384"
    mpi = linkbench.mpi_command(_lib("mpich"), linkbench.Link("10mbit"), tmp_path / "y", False)
    assert mpi[mpi.index("--tests") + 1] == "pingpong_standard,bandwidth_uni"
    assert mpi[mpi.index("--sizes") + 1].endswith(",65536")
    assert mpi[mpi.index("--placement") + 1] == "off-node"
    env = linkbench.mpi_env(_lib("mpich"))
    assert env["MPIR_CVAR_NOLOCAL"] == "1" and env["UCX_NET_DEVICES"] == "pbx0"
    assert linkbench.mpi_env(_lib("postbox")) == {}


def test_records_are_retagged(tmp_path):
    part, jsonl = tmp_path / "r.part", tmp_path / "links.jsonl"
    part.write_text(json.dumps(record(suite="raw", test="tcp_pingpong", config="netns")) + "\n"
                    + json.dumps(record(suite="rsm", test="tcp_put_pingpong")) + "\n\n")
    assert linkbench.move_records(part, linkbench.Link("1gbit", "50us"), "rsm", jsonl) == 2
    assert not part.exists()
    raw, rsm = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert raw["suite"] == rsm["suite"] == "links"
    assert (raw["kind"], raw["source_suite"], raw["source_config"]) == ("raw", "raw", "netns")
    assert "config" not in raw   # the rsm-net part's figures would take it
    assert (rsm["kind"], rsm["link"], rsm["link_rate"], rsm["link_delay_us"]) == \
        ("rsm", "1gbit,50us", 10 ** 9, 50)


def test_unavailable_part_is_skipped(monkeypatch, tmp_path):
    monkeypatch.setattr(netns, "unavailable", lambda: "needs root")
    out = io.StringIO()
    outcome = linkbench.run_libraries(tmp_path, True, [], (), {}, out, out)
    assert linkbench.detail(outcome) == ("skipped", "--netns --link needs root")


def test_detail_names_a_library_left_out(monkeypatch, tmp_path):
    """Open MPI cannot run under postbox run: the part leaves it out and its
    detail says why (make bench once ended in a TypeError there)."""
    monkeypatch.setattr(netns, "unavailable", lambda: None)
    monkeypatch.setattr(linkbench.paths, "program", lambda name: Path("/b") / name)
    monkeypatch.setattr(linkbench, "delay_support", lambda: (False, "no netem"))
    monkeypatch.setattr(linkbench, "built_fresh", lambda lib: True)
    monkeypatch.setattr(linkbench.mpipart, "run_plan", lambda *args, **kwargs: None)
    monkeypatch.setattr(linkbench.machine, "write", lambda path, description: None)
    out = io.StringIO()
    outcome = linkbench.run_libraries(tmp_path, True, [_lib("postbox"), _lib("openmpi")], (),
                                      {}, out, out)
    verdict, detail = linkbench.detail(outcome)
    assert verdict == "skipped"  # (no run: run_plan did nothing)
    assert "MPI: postbox" in detail
    assert "openmpi skipped (%s)" % linkbench.OPEN_MPI_SKIP in detail
    assert "did not build" not in detail
    assert "links without delay (no netem)" in detail


def test_delay_support_reads_the_refusal(monkeypatch):
    monkeypatch.setattr(linkbench.paths, "program", lambda name: Path("/b") / name)

    def refused(argv, **_):
        assert argv[-3:] == ["--link", "1gbit,50us", "true"]
        return subprocess.CompletedProcess(argv, 2, "", "postbox run: --link: no netem\n")

    assert linkbench.delay_support(refused) == (False, "postbox run: --link: no netem")
    assert linkbench.delay_support(
        lambda argv, **_: subprocess.CompletedProcess(argv, 0, "", "")) == (True, "")


# ---- seed 003's tables ---------------------------------------------------------------

def _link_record(link: str, kind: str, library: str, test: str, size: int, median: float,
                 unit: str = "us") -> dict:
    spec = netns.parse_link(link)
    return record(suite="links", kind=kind, library=library, test=test, size=size,
                  median=median, unit=unit, link=link, link_rate=spec.rate,
                  link_delay_us=spec.delay_us)


def _records() -> list:
    out = []
    for link, scale in (("100mbit", 10.0), ("1gbit", 1.0)):
        for size in (8, 64, 1024):
            out.append(_link_record(link, "rsm", "postbox", "tcp_put_pingpong", size,
                                    scale * 20 + size / 100))
            out.append(_link_record(link, "raw", "raw", "tcp_pingpong", size, scale * 10))
            out.append(_link_record(link, "rsm", "postbox", "tcp_put_stream", size,
                                    100 / scale, "MB/s"))
        for lib, factor in (("postbox", 1.0), ("mpich", 3.0)):
            out.append(_link_record(link, "mpi", lib, "pingpong_standard", 4,
                                    factor * scale * 25))
            out.append(_link_record(link, "mpi", lib, "bandwidth_uni", 65536, 11.5 / factor,
                                    "MB/s"))
    return out


def test_gigabit_tables_take_the_fast_links():
    rows = dict(linkreport.rows(3, _records()))
    assert set(rows) == {"Postbox RSM put (tcp), link 1gbit", "raw TCP, link 1gbit"}
    assert rows["Postbox RSM put (tcp), link 1gbit"] == pytest.approx({8: 20.08, 64: 20.64,
                                                                       1024: 30.24})
    slow = dict(linkreport.rows(5, _records()))
    assert set(slow) == {"Postbox RSM put (tcp), link 100mbit", "raw TCP, link 100mbit"}


def test_mpi_round_trip_is_twice_the_half():
    rows = dict(linkreport.rows(7, _records()))
    assert rows["postbox MPI, link 100mbit"] == {4: 500.0}
    assert rows["mpich MPI, link 1gbit"] == {4: 150.0}
    assert dict(linkreport.rows(8, _records()))["mpich MPI, link 100mbit"] == \
        {65536: pytest.approx(11.5 / 3)}


def test_repeated_records_take_the_median():
    records = [_link_record("1gbit", "raw", "raw", "tcp_pingpong", 8, v) for v in (5, 1, 9)]
    assert linkreport.value(records, "1gbit", "raw", "raw", "tcp_pingpong", 8) == 5


def test_seed_values_are_the_pages():
    assert linkreport.SEED_TABLES[3][1][1][1024] == 114.15
    assert linkreport.SEED_TABLES[7][1][1][0] == 968
    assert linkreport.SEED_TABLES[8][2][1][65536] == 7.00


def test_section_renders_every_table():
    description = {"links": {"no_delay": "no netem here", "skipped": [
        {"label": "openmpi", "why": linkbench.OPEN_MPI_SKIP}]}}
    page = report.render(_records(), description)
    for table in range(3, 9):
        assert re.search(r'<h3 id="seed003-table-%d">Seed 003 Table %d: ' % (table, table),
                         page)
    assert "no netem here" in page and "PMIx" in page
    assert "seed: MPICH 1.1/TCP on SunOS" in page
    # no generic figure of the links records
    assert not [f for f in report.figures(_records()) if "links" in (f.name or "")]
    assert report.render([record()]).count("seed003-table") == 0


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="%s not installed" % CHROMIUM)
def test_section_in_headless_chromium(tmp_path):
    (tmp_path / "links.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in _records()))
    page = report.write(tmp_path)
    profile = tmp_path / "profile"
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-dev-shm-usage", "--user-data-dir=%s" % profile, "--dump-dom",
            page.resolve().as_uri()]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, start_new_session=True)
    try:
        dom, _ = process.communicate(timeout=90)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(profile, ignore_errors=True)
    assert process.returncode == 0
    for table in range(3, 9):
        match = re.search(r'id="seed003-table-%d".*?<table class="links">(.*?)</table>'
                          % table, dom, re.S)
        assert match and "<td" in match.group(1), table


# ---- a real run (root, tc, the build) ----------------------------------------------

@needs_netns
@pytest.mark.slow
def test_rsm_run_on_a_shaped_link(real_build, monkeypatch, tmp_path):
    if netns.tc_command() is None:
        pytest.skip("--link needs iproute2's `tc`")
    monkeypatch.setattr(linkbench, "QUICK_RATES", ("1gbit",))
    monkeypatch.setattr(linkbench, "RSM_SIZES", {True: (8, 1024)})
    out = io.StringIO()
    description: dict = {}
    outcome = linkbench.run_libraries(tmp_path, True, [], (), description, out, out)
    assert outcome.failed == [] and outcome.runs == 1, out.getvalue()
    records = [json.loads(line) for line in (tmp_path / "links.jsonl").read_text().splitlines()]
    tests = {(r["kind"], r["test"], r["size"]) for r in records}
    assert {("rsm", "tcp_put_pingpong", 8), ("raw", "tcp_stream", 1024)} <= tests
    assert all(r["link"].startswith("1gbit") and r["suite"] == "links" for r in records)
    # --max-size 1024 is below the 4 MB of rsm-net-bench's ratios: left out
    assert not [r for r in records if r["metric"] == "ratio"]
    assert "Ratios not measured: --max-size 1024" in (tmp_path / "links.txt").read_text()
    assert description["runs"][0]["link"].startswith("1gbit")
