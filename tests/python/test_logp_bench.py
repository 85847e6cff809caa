"""The LogP bench's part: logpbench (runs, commands, the verdict) and its
place in the bench job (part mpi-logp, suite logp)."""

from __future__ import annotations

import io
import json
import re

import pytest

from conftest import fake_wheel_prefix
from postbox import bench, logpbench, mpibench
from postbox.loggp import LogGP
from samples import logp_records
from test_bench_job import fake_mpi  # noqa: F401 (a fixture)

pytestmark = pytest.mark.short


def _lib(tmp_path, header, label):
    lib = mpibench.find_in_prefix(fake_wheel_prefix(tmp_path / label, header))
    lib.label = label
    return lib


def _postbox(tmp_path):
    return mpibench.Library("postbox", "build", tmp_path / "postbox-cc", tmp_path / "mpiexec",
                            label="postbox")


def test_part_and_suite():
    assert ("mpi-logp", "logpbench") in bench.MPI_PARTS
    assert bench.suite_parts(["logp"]) == ["mpi-logp"]
    assert "mpi-logp" in bench.PARTS


def test_runs_and_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ompi = _lib(tmp_path, "#define OMPI_MAJOR_VERSION 5\n", "openmpi")
    postbox = _postbox(tmp_path)
    runs = logpbench.plan_runs([postbox, ompi], True)
    assert [(run.lib.label, run.path, run.round) for run in runs] == [
        ("postbox", "on-node", None), ("openmpi", "on-node", None),
        ("postbox", "network", None), ("openmpi", "network", None)]
    assert runs[2].name == "logp/postbox/2-ranks-network"
    full = logpbench.plan_runs([ompi], False)
    assert len(full) == 2 * logpbench.PROFILE_ROUNDS[False]
    assert full[1].name == "logp/openmpi/2-ranks-on-node/round-1"

    jsonl = tmp_path / "logp.jsonl"
    argv = logpbench.run_command(postbox, "network", jsonl, True, is_root=False)
    assert argv[:5] == [str(tmp_path / "mpiexec"), "--nodes", "2", "-n", "2"]
    assert argv[5] == str(mpibench.build_dir(postbox) / "mpi_logp")
    assert argv[argv.index("--path") + 1] == "network"
    assert argv[argv.index("--placement") + 1] == "off-node"
    assert argv[-3:] == ["--json", str(jsonl), "--quick"]
    assert "--flood" not in argv
    argv = logpbench.run_command(ompi, "on-node", jsonl, False, is_root=True, round_=1)
    assert "--allow-run-as-root" in argv and "--flood" in argv and "--quick" not in argv
    assert argv[argv.index("--round") + 1] == "1" and "btl" not in argv
    assert logpbench.build_command(ompi)[-5:] == [
        str(mpibench.build_dir(ompi) / "mpi_logp")] + [
        str(mpibench.paths.repo_root() / source) for source in logpbench.SOURCES] + ["-lm"]


def test_detail_names_the_fit(tmp_path):
    truth = LogGP(L=1e-6, o_s=0.5e-6, o_r=0.5e-6, g=1e-6, G=1e-9)
    jsonl = tmp_path / "logp.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in logp_records(
        truth, "postbox", "on-node", [0, 256, 4096])), encoding="utf-8")
    outcome = logpbench.Outcome(built=["postbox"], runs=2, seconds=12.5)
    verdict, text = logpbench.detail(outcome, jsonl)
    assert verdict == "ok"
    assert "2 runs in 12.5 s" in text
    assert "LogGP fitted for 1: postbox/node L 1.00 us g 1.00 us" in text
    outcome.failed.append("logp/postbox/2-ranks-network")
    assert logpbench.detail(outcome)[0] == "FAILED"
    assert logpbench.detail(logpbench.Outcome())[0] == "skipped"


def test_the_part_in_the_job(fake_mpi, tmp_path, capsys):
    """`postbox bench --suite logp --quick` with two fake libraries: every
    library on both paths, the time it took, the fit in the detail, the
    section and Fig. 13 in the report."""
    terminal = io.StringIO()
    status = bench.run(tmp_path / "run", True, False, [], terminal=terminal,
                       only=bench.suite_parts(["logp"]))
    out = terminal.getvalue()
    assert status == 0, out + capsys.readouterr().err
    run = tmp_path / "run"
    assert "part 1/1: mpi-logp" in out
    assert "[logp 1/4]" in out and "[logp 4/4]" in out and "left" in out
    assert re.search(r"mpi-logp: 4 run\(s\) of mpi_logp in [0-9.]+ s \(quick profile\)", out)
    assert "LogGP fitted for 4: mpich/node L 1.00 us g 1.00 us" in out
    assert "openmpi/net L 10.00 us g 10.00 us" in out
    description = json.loads((run / "machine.json").read_text())
    assert [(p["name"], p["verdict"]) for p in description["parts"]] == [("mpi-logp", "ok")]
    assert "logp/openmpi/2-ranks-network" in [r["name"] for r in description["runs"]]
    assert {lib["label"] for lib in description["logp_libraries"]} == {"mpich", "openmpi"}
    page = (run / "index.html").read_text()
    assert '<div id="seed000-fig-13">' in page and '<div id="seed000-table-7">' in page
    assert (run / "fig-seed000-fig-13-net.svg").exists()
