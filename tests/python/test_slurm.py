"""Postbox under Slurm, for real: a controller and two slurmd nodes in
network namespaces (slurm_cluster.py), programs run by ``srun --mpi=pmi2``
and ``srun --mpi=pmix`` and by ``postbox run`` inside ``salloc`` and
``sbatch`` (which goes through srun).  Skipped without root, ``ip`` or Debian's Slurm and munge; the
first tests need neither (how ``postbox run`` decides to use srun)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import built
from postbox import launch, launchopts, paths, slurm
from slurm_cluster import NODES, SlurmCluster, missing

pytestmark = pytest.mark.slow


def test_srun_is_used_only_inside_an_allocation(monkeypatch):
    opts = launch.parse_args(["-n", "4", "--tag-output", "prog", "arg"])
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert slurm.slurm_allocation(opts) is None
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert slurm.slurm_allocation(opts) == "42"
    assert slurm.srun_argv(opts, "srun") == [
        "srun", "--mpi=pmi2", "--ntasks=4", "--kill-on-bad-exit=1", "--export=ALL", "--label",
        "prog", "arg"]
    # virtual nodes, a universe or hosts are this launcher's own business
    for argv in (["-n", "4", "--nodes", "2", "p"], ["-n", "2", "--universe", "4", "p"],
                 ["-n", "2", "--hosts", "a,b", "p"]):
        assert slurm.slurm_allocation(launch.parse_args(argv)) is None
    monkeypatch.setenv("POSTBOX_LAUNCHER", "local")
    assert slurm.slurm_allocation(opts) is None


def test_allocation_without_srun_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert launch.main(["-n", "2", "true"]) == launchopts.EXIT_USAGE
    assert "inside Slurm allocation 42 but srun is not on PATH" in capsys.readouterr().err


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = missing()
    if why is not None:
        if os.environ.get("POSTBOX_TEST_REQUIRE_CLUSTERS") == "1":
            pytest.fail("POSTBOX_TEST_REQUIRE_CLUSTERS=1: " + why)
        pytest.skip(why)
    with SlurmCluster(tmp_path_factory.mktemp("slurm")) as running:
        yield running


def checked(result, what):
    assert result.returncode == 0, "%s: status %d\n%s\n%s" % (what, result.returncode,
                                                              result.stdout, result.stderr)
    return result.stdout


def views(text):
    """{rank: (node, local ranks)} from postbox-job-view lines."""
    out = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 10 and words[0] == "rank" and words[2] == "size":
            out[int(words[1])] = (words[9], words[11])
    return out


def test_srun_pmi2_gives_ranks_and_nodes_from_slurm(cluster):
    view = built(paths.bin_dir() / "postbox-job-view")
    out = checked(cluster.command(["srun", "--mpi=pmi2", "-N", "2", "-n", "4", str(view)]),
                  "srun postbox-job-view")
    found = views(out)
    assert sorted(found) == [0, 1, 2, 3], out
    assert {found[0][0], found[2][0]} == {"%s/0" % name for name in NODES}, out
    assert found[0] == found[1] and found[2] == found[3] and found[0][1] == "0,1", out


def test_srun_pmi2_mpi_program_across_two_nodes(cluster):
    program = built(paths.bin_dir() / "pbt-mpi-groups")
    out = checked(cluster.command(["srun", "--mpi=pmi2", "-N", "2", "-n", "4", str(program)]),
                  "srun pbt-mpi-groups")
    assert "groups: ok" in out


def test_srun_pmi2_rsm_program_across_two_nodes(cluster):
    program = built(paths.bin_dir() / "pbt-xnode")
    out = checked(cluster.command(["srun", "--mpi=pmi2", "-N", "2", "-n", "2", str(program),
                                   "basic"]), "srun pbt-xnode basic")
    assert out.count(": ok") == 2, out


def test_postbox_run_inside_salloc_goes_through_srun(cluster):
    view = built(paths.bin_dir() / "postbox-job-view")
    out = checked(cluster.command(["salloc", "-N", "2", "-n", "4", str(paths.program("postbox")),
                                   "run", "-n", "4", str(view)]), "salloc postbox run")
    found = views(out)
    assert sorted(found) == [0, 1, 2, 3] and len({node for node, _ in found.values()}) == 2, out
    # an RSM program across the allocation's two nodes, through postbox run
    program = built(paths.bin_dir() / "pbt-xnode")
    out = checked(cluster.command(["salloc", "-N", "2", "-n", "2", str(paths.program("postbox")),
                                   "run", "-n", "2", str(program), "basic"]),
                  "salloc postbox run pbt-xnode")
    assert out.count(": ok") == 2, out


def test_postbox_run_in_a_batch_script(cluster, tmp_path):
    program = built(paths.bin_dir() / "pbt-mpi-groups")
    output = tmp_path / "batch.out"
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n%s run -n 4 %s\n" % (paths.program("postbox"), program))
    checked(cluster.command(["sbatch", "--wait", "-N", "2", "-n", "4", "-o", str(output),
                             str(script)], timeout=180), "sbatch --wait")
    assert "groups: ok" in output.read_text()


def test_killed_task_ends_the_step_and_leaves_nothing(cluster, tmp_path):
    marker = "pbx-slurm-kill-%d" % time.monotonic_ns()
    script = tmp_path / "task.sh"
    # rank 3 is killed; the others would sleep for a minute
    script.write_text('#!/bin/sh\nif [ "$SLURM_PROCID" = 3 ]; then kill -9 $$; fi\n'
                      'exec sleep 60 %s\n' % marker)
    script.chmod(0o755)
    start = time.monotonic()
    result = cluster.command(["salloc", "-N", "2", "-n", "4", str(paths.program("postbox")),
                              "run", "-n", "4", "sh", str(script)], timeout=60)
    assert result.returncode != 0
    assert time.monotonic() - start < 40, "the step was not ended when a task died"
    assert "ended with status" in result.stderr, result.stderr
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "tasks of the killed step are left behind"
        time.sleep(0.2)


def pmix_client_built() -> bool:
    info = paths.build_dir() / "share" / "postbox" / "build-info.json"
    return info.exists() and "PMIx" in json.loads(info.read_text()).get("pmi", [])


def test_srun_pmix_mpi_program_across_two_nodes(cluster):
    if not pmix_client_built():
        pytest.skip("the library was built without its PMIx client (libpmix-dev missing)")
    view = built(paths.bin_dir() / "postbox-job-view")
    out = checked(cluster.command(["srun", "--mpi=pmix", "-N", "2", "-n", "4", str(view)]),
                  "srun --mpi=pmix postbox-job-view")
    found = views(out)
    assert sorted(found) == [0, 1, 2, 3] and found[0][1] == "0,1", out
    assert all(" job pmix-" in line for line in out.splitlines() if line.startswith("rank")), out
    program = built(paths.bin_dir() / "pbt-mpi-groups")
    out = checked(cluster.command(["srun", "--mpi=pmix", "-N", "2", "-n", "4", str(program)]),
                  "srun --mpi=pmix pbt-mpi-groups")
    assert "groups: ok" in out
