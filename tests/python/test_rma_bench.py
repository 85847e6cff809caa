"""The one-sided bench: rmabench (layouts, commands, the RMA probe, skipping
a library without one-sided communication), rmareport (issue 15's
acceptance table and the progress table from synthetic records), the CLI,
and a real build and run of bench/mpi_rma.c against an MPI of this machine."""

from __future__ import annotations

import io
import shutil
import subprocess

import pytest

from conftest import fake_wheel_prefix
from postbox import cli, mpibench, report, results, rmabench, rmareport
from postbox.plot import format_value
from samples import rma_records, rsm_net_records


def _lib(tmp_path, header, label):
    lib = mpibench.find_in_prefix(fake_wheel_prefix(tmp_path / label, header))
    lib.label = label
    return lib


def _postbox(tmp_path):
    return mpibench.Library("postbox", "build", tmp_path / "postbox-cc", tmp_path / "mpiexec",
                            label="postbox")


# ---- layouts, commands, the probe ---------------------------------------------

@pytest.mark.short
def test_layouts_and_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ompi = _lib(tmp_path, "#define OMPI_MAJOR_VERSION 5\n", "openmpi")
    postbox = _postbox(tmp_path)
    runs = rmabench.plan_runs([postbox, ompi], True)
    # the on-node layout in rounds, the libraries interleaved in each
    assert [(run.lib.label, run.layout.name, run.round) for run in runs] == [
        (label, "2-ranks-1-node-allocate", k) for k in range(rmabench.ROUNDS)
        for label in ("postbox", "openmpi")] + [
        ("postbox", "2-ranks-2-nodes-create", None), ("openmpi", "2-ranks-2-nodes-create", None)]
    assert runs[-1].name == "rma/openmpi/2-ranks-2-nodes-create"
    assert runs[1].name == "rma/openmpi/2-ranks-1-node-allocate/round-0"
    # the quick profile: lock_all, the acceptance figures, progress across two nodes
    one, two = rmabench.LAYOUTS[True]
    assert one.sync == two.sync == ("lock_all",)
    assert "progress" in two.tests and "progress" not in one.tests
    assert {"put_latency", "fetch_and_op", "put_bandwidth"} <= set(one.tests)
    assert len(rmabench.plan_runs([ompi], False)) == 3
    jsonl = tmp_path / "rma.jsonl"
    argv = rmabench.run_command(postbox, two, jsonl, True, is_root=False)
    assert argv[:5] == [str(tmp_path / "mpiexec"), "--nodes", "2", "-n", "2"]
    assert argv[argv.index("--placement") + 1] == "off-node"
    assert argv[argv.index("--path") + 1] == "network"
    assert argv[argv.index("--flavor") + 1] == "create"
    assert argv[argv.index("--sync") + 1] == "lock_all"
    assert argv[argv.index("--tests") + 1] == ",".join(two.tests)
    assert argv[-3:] == ["--json", str(jsonl), "--quick"]
    argv = rmabench.run_command(ompi, two, jsonl, False, is_root=True)
    assert "--allow-run-as-root" in argv and "btl" in argv and "--quick" not in argv
    assert argv[argv.index("osc") - 1:argv.index("osc") + 2] == ["--mca", "osc", "rdma"]
    assert "--round" not in argv
    argv = rmabench.run_command(ompi, one, jsonl, True, is_root=False, round_=2)
    assert argv[argv.index("--path") + 1] == "on-node" and "osc" not in argv
    assert argv[argv.index("--round") + 1] == "2"
    assert argv[argv.index("--flavor") + 1] == "allocate"
    assert rmabench.build_command(ompi)[-5:] == [
        str(mpibench.build_dir(ompi) / "mpi_rma")] + [
        str(mpibench.paths.repo_root() / source) for source in rmabench.SOURCES] + ["-lm"]


@pytest.mark.short
def test_probe_names_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    lib = _lib(tmp_path, '#define MPICH_VERSION "5.0.2"\n', "mpich")

    def linker_without(names):
        def runner(argv, **kwargs):
            assert argv[0] == str(lib.mpicc) and argv[-1].endswith("rma_probe.c")
            text = "".join("undefined reference to `%s'\n" % name for name in names)
            return subprocess.CompletedProcess(argv, 1 if names else 0, text, None)
        return runner

    assert rmabench.has_rma(lib, linker_without([])) == (True, "links")
    assert rmabench.has_rma(lib, linker_without(["MPI_Win_flush"])) == (
        False, "missing MPI_Win_flush")
    ok, why = rmabench.has_rma(lib, linker_without(rmabench.RMA_FUNCTIONS))
    assert not ok and why == "missing MPI_Win_create, MPI_Win_allocate, MPI_Win_free and " \
        "%d more of %d" % (len(rmabench.RMA_FUNCTIONS) - 3, len(rmabench.RMA_FUNCTIONS))
    probe = (mpibench.build_dir(lib) / "rma_probe.c").read_text()
    assert all(name + "(" in probe for name in rmabench.RMA_FUNCTIONS)


@pytest.mark.short
def test_a_library_without_rma_is_skipped_not_failed(fake_build, tmp_path, monkeypatch):
    mpich = mpibench.find_in_prefix(fake_wheel_prefix(fake_build / "mpi" / "mpich"), "wheel")
    mpich.label = "mpich"
    postbox = _postbox(tmp_path)
    missing = "missing MPI_Win_create, MPI_Win_allocate, MPI_Win_free and 16 more of 19"
    real = rmabench.has_rma
    monkeypatch.setattr(rmabench, "has_rma", lambda lib: (False, missing)
                        if lib.family == "postbox" else real(lib))
    out = tmp_path / "run"
    out.mkdir()
    terminal, err, description = io.StringIO(), io.StringIO(), {}
    outcome = rmabench.run_libraries(out, True, [postbox, mpich], [], description, terminal,
                                     err)
    text = terminal.getvalue()
    assert "mpi-rma: postbox has no one-sided communication (%s); skipped" % missing in text
    assert outcome.no_rma == [("postbox", missing)] and outcome.built == ["mpich"]
    assert outcome.failed == [] and outcome.runs == rmabench.ROUNDS + 1
    assert not err.getvalue()
    assert [run["name"] for run in description["runs"]] == [
        "rma/mpich/2-ranks-1-node-allocate/round-%d" % k for k in range(rmabench.ROUNDS)] + [
        "rma/mpich/2-ranks-2-nodes-create"]
    assert {lib["label"]: lib["rma"] for lib in description["rma_libraries"]} == {
        "postbox": False, "mpich": True}
    verdict, detail = rmabench.detail(outcome, out / "rma.jsonl")
    assert verdict == "ok"
    assert "postbox skipped: no one-sided communication (%s)" % missing in detail
    assert "progress test: mpich (network) 2.100 s" in detail
    assert {r["library"] for r in results.load_jsonl(out / "rma.jsonl")} == {"mpich"}


@pytest.mark.short
def test_cli_rma_refuses_options_of_other_parts(capsys):
    assert cli.main(["bench", "--rma", "--coll"]) == 2
    assert "--rma goes with" in capsys.readouterr().err
    assert cli.main(["bench", "--rma", "--no-rma"]) == 2
    assert cli.main(["bench", "--rma", "--tests", "put_latency"]) == 2


# ---- the report ---------------------------------------------------------------

def _run(postbox_scale=0.5, postbox_network_scale=4.0, progress=0.05, rsm=True):
    """One run's records: Postbox, Open MPI and MPICH on both paths, the
    progress test across two nodes, and the rsm-net records."""
    records = (rma_records("postbox", scale=postbox_scale)
               + rma_records("postbox", path="network", scale=postbox_network_scale,
                             progress_s=progress)
               + rma_records("openmpi") + rma_records("openmpi", path="network", scale=30.0,
                                                      progress_s=2.3)
               + rma_records("mpich", scale=2.0) + rma_records("mpich", path="network",
                                                               scale=20.0, progress_s=2.2))
    return records + (rsm_net_records() if rsm else [])


@pytest.mark.short
def test_acceptance_points_pass_fail_and_missing():
    points = rmareport.acceptance(_run())
    assert [p.verdict for p in points] == ["pass"] * 5
    lat, fop, bw, net, progress = points
    # Postbox 0.5 * 1.008 us against the best other, Open MPI's 1.008 us
    assert lat.postbox == pytest.approx(0.504) and lat.reference == pytest.approx(1.008)
    assert lat.reference_what == "best other (openmpi)" and lat.ratio == pytest.approx(0.5)
    assert bw.reference == pytest.approx(4194.304) and bw.limit == ">= the best other"
    # 4 * 1.008 us over the 40 us of tcp_put_barrier
    assert net.ratio == pytest.approx(4.032 / 40.0)
    assert progress.postbox == 0.05 and progress.reference == 2.0

    points = rmareport.acceptance(_run(postbox_scale=1.5, postbox_network_scale=49.0,
                                       progress=2.05))
    assert [p.verdict for p in points] == ["FAIL"] * 5
    assert points[3].ratio == pytest.approx(49 * 1.008 / 40.0)

    points = rmareport.acceptance([r for r in _run(rsm=False) if r.get("library") != "mpich"
                                   and not (r["library"] == "postbox"
                                            and r["test"] == "progress")])
    assert [p.verdict for p in points] == ["pass", "pass", "pass", "missing", "missing"]
    # without Postbox every point is missing
    assert {p.verdict for p in rmareport.acceptance(rma_records("mpich"))} == {"missing"}


@pytest.mark.short
def test_rounds_make_one_figure_of_their_medians():
    # Postbox 0.9, 0.5, 0.6 of Open MPI's 1.0, 1.2, 0.55 over three rounds
    records = []
    for k, (own, other) in enumerate(((0.9, 1.0), (0.5, 1.2), (0.6, 0.55))):
        records += rma_records("postbox", scale=own, round=k)
        records += rma_records("openmpi", scale=other, round=k)
    found = rmareport.find(records, "postbox", "put_latency", 8, "on-node")
    assert found["median"] == pytest.approx(0.6 * 1.008) and found["rounds"] == 3
    lat = rmareport.acceptance(records)[0]
    assert lat.reference == pytest.approx(1.0 * 1.008) and lat.verdict == "pass"
    # the figures table shows the same medians
    table = "".join(rmareport.figures_html(records))
    assert format_value(0.6 * 1.008) in table and format_value(0.9 * 1.008) not in table
    # one record (no rounds) is the figure itself
    single = rma_records("postbox", scale=0.7)
    assert "rounds" not in rmareport.find(single, "postbox", "put_latency", 8, "on-node")


@pytest.mark.short
def test_the_rsm_reference_is_the_loopback_run():
    loopback = rsm_net_records("loopback")
    netns = [dict(r, median=999.0) for r in rsm_net_records("netns")]
    assert rmareport.rsm_put_barrier(loopback + netns)["median"] == 40.0
    assert rmareport.rsm_put_barrier(netns) is None


@pytest.mark.short
def test_page_has_the_one_sided_section(tmp_path):
    records = _run()
    page = report.render(records)
    for text in ("<h2>One-sided communication</h2>", 'id="rma-acceptance"',
                 'id="rma-progress"', 'id="rma-figures"', "tcp_put_barrier",
                 "libraries: postbox, openmpi, mpich"):
        assert text in page, text
    assert page.count('class="rma-point"') == 5
    section = "\n".join(rmareport.progress_html(records))
    assert section.count("<tr><td") == 3 and "2.3" in section
    # one row per (path, window, test, sync, size): 6 figures on each path
    assert "\n".join(rmareport.figures_html(records)).count("<tr><td") == 12
    # no generic figures for the rma records
    assert not [f.name for f in report.figures(records) if "rma" in f.name]
    report.write(tmp_path, records)
    assert "One-sided communication" in (tmp_path / "index.html").read_text()


@pytest.mark.short
def test_page_without_postbox_says_why_and_no_records_no_section():
    page = "\n".join(rmareport.section(rma_records("mpich", path="network", progress_s=2.1)))
    assert "Postbox has no one-sided records in this run" in page
    assert rmareport.section(rsm_net_records()) == []
    assert rmareport.progress_summary(rsm_net_records()) is None
    summary = rmareport.progress_summary(_run())
    assert summary == ("progress test: postbox (network) 0.050 s, openmpi (network) 2.300 s, "
                       "mpich (network) 2.200 s, the target computing 2.0 s")


# ---- the real program -------------------------------------------------------------

def _system_mpi():
    """A real MPI of this machine (the system's MPICH or Open MPI), or None."""
    found = mpibench.find_system()
    return found[0] if found else None


@pytest.mark.slow
def test_real_mpi_rma_against_a_system_mpi(tmp_path, monkeypatch):
    """mpi_rma built with a real mpicc and run at 2 ranks on one node: every
    test at two sizes in every mode, checked, and the progress test."""
    lib = _system_mpi()
    if lib is None or shutil.which(str(lib.mpiexec)) is None:
        pytest.skip("no system MPI (mpicc.mpich or mpicc.openmpi)")
    lib.label = lib.family
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ok, why = rmabench.has_rma(lib)
    assert ok, why
    ok, message = rmabench.build(lib)
    assert ok, message
    jsonl = tmp_path / "rma.jsonl"
    layout = rmabench.Layout(False, "create", rmabench.ALL_TESTS + ("progress",),
                             ("lock", "lock_all", "fence", "pscw"))
    argv = rmabench.run_command(lib, layout, jsonl, True, is_root=False,
                                extra=["--sizes", "8,4K", "--reps-cap-ms", "2", "--window", "4",
                                       "--compute-s", "0.2", "--epochs", "50"])
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=180, start_new_session=True,
                          env=dict(__import__("os").environ, **lib.run_env(False)))
    assert done.returncode == 0, done.stdout
    assert rmabench.DONE_MARKER + " 0" in done.stdout and "t_min[us]" in done.stdout
    records = results.load_jsonl(jsonl)
    assert all(not results.missing_keys(r) for r in records)
    seen = {(r["test"], r["sync"], r["size"]) for r in records}
    for test in ("put_latency", "get_latency", "put_bandwidth", "get_bandwidth"):
        for sync in ("lock", "lock_all", "fence", "pscw"):
            assert {(test, sync, 8), (test, sync, 4096)} <= seen, (test, sync)
    for test in ("accumulate", "get_accumulate"):
        assert {(test, "lock_all", 8), (test, "lock_all", 4096)} <= seen
    assert {("fetch_and_op", "lock_all", 8), ("compare_and_swap", "lock_all", 8)} <= seen
    progress = [r for r in records if r["test"] == "progress"]
    assert len(progress) == 1 and progress[0]["epochs"] == 50
    assert progress[0]["compute_s"] >= 0.2 and progress[0]["flavor"] == "create"
    assert all(r["checked"] for r in records)
