"""`postbox bench` end to end, against a fake bench program (no C build)."""

import datetime
import json
import re

import pytest

from conftest import run_cli
from postbox import bench, paths, results

pytestmark = pytest.mark.short


def test_bench_writes_the_results_folder(fake_build, tmp_path):
    out = tmp_path / "run"
    result = run_cli("bench", "--no-mpi", "--no-dsm", "--no-netns", "--quick", "--out", out)
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in out.iterdir())
    assert [n for n in names if not n.startswith("fig-")] == [
        "index.html", "machine.json", "net.jsonl", "net.txt", "rsm-net.jsonl", "rsm-net.txt",
        "rsm.jsonl", "rsm.txt"]
    assert "fig-rsm-putget.svg" in names and "fig-net-latency.svg" in names
    assert "fig-rsm-net-latency.svg" in names and "fig-rsm-net-bandwidth.svg" in names
    # the program's table reaches the terminal and the folder
    assert "fake bench table" in result.stdout
    assert "fake bench table" in (out / "rsm.txt").read_text()
    assert "part 1/3: rsm" in result.stdout and "part 2/3: net" in result.stdout
    assert "part 3/3: rsm-net" in result.stdout
    assert "fake net table" in (out / "net.txt").read_text()
    assert "fake rsm-net table" in (out / "rsm-net.txt").read_text()
    # the summary of ratios read back from the JSON, the tcp ones with their own targets
    assert re.search(r"ratio_pingpong_put_64_vs_cacheline\s+1\.200\s+limit <= 1\.5\s+ok",
                     result.stdout)
    assert re.search(r"ratio_put_latency_8B \[loopback\]\s+1\.100\s+limit <= 1\.2\s+ok",
                     result.stdout)
    assert re.search(r"ratio_put_stream_4MB \[loopback\]\s+0\.930\s+limit >= 0\.9\s+ok",
                     result.stdout)
    assert "Report: %s" % (out / "index.html") in result.stdout


def test_machine_json_names_the_commands(fake_build, tmp_path):
    out = tmp_path / "run"
    assert run_cli("bench", "--no-mpi", "--no-dsm", "--no-netns", "--quick", "--out", out,
                   "--", "--sizes", "64").returncode == 0
    description = json.loads((out / "machine.json").read_text())
    program = str(fake_build / "bin" / "postbox-rsm-bench")
    expected = [program, "--json", str(out / "rsm.jsonl"), "--quick", "--sizes", "64"]
    net = [str(fake_build / "bin" / "postbox-net-bench"), "--json", str(out / "net.jsonl"),
           "--quick", "--sizes", "64"]
    rsm_net = [str(fake_build / "bin" / "postbox"), "run", "-n", "2", "--nodes", "2",
               "--timeout", "240", str(fake_build / "bin" / "postbox-rsm-net-bench"), "--json",
               str(out / "rsm-net.jsonl"), "--quick", "--sizes", "64"]
    assert description["commands"] == [expected, net, rsm_net]
    assert [(p["name"], p["verdict"]) for p in description["parts"]] == [
        ("rsm", "ok"), ("net", "ok"), ("rsm-net", "ok")]
    assert description["runs"][0]["exit_status"] == 0
    assert description["runs"][0]["command"] == expected
    assert description["postbox_version"]
    assert description["cpu_model"] is not None


def test_check_passes(fake_build, tmp_path):
    result = run_cli("bench", "--no-mpi", "--no-dsm", "--check", "--out", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    assert "every acceptance limit holds" in result.stdout


def test_check_fails_on_a_bad_ratio(fake_build, tmp_path):
    result = run_cli("bench", "--no-mpi", "--no-dsm", "--check", "--out", tmp_path / "run",
                     env={"FAKE_BENCH_MODE": "badratio"})
    assert result.returncode == 1
    assert "check failed: ratio_pingpong_put_64_vs_cacheline" in result.stderr


def test_bad_ratio_without_check_still_succeeds(fake_build, tmp_path):
    result = run_cli("bench", "--no-mpi", "--no-dsm", "--out", tmp_path / "run",
                     env={"FAKE_BENCH_MODE": "badratio"})
    assert result.returncode == 0
    assert "FAIL" in result.stdout


def test_check_fails_when_ratios_are_missing(fake_build, tmp_path):
    result = run_cli("bench", "--no-mpi", "--no-dsm", "--check", "--out", tmp_path / "run",
                     env={"FAKE_BENCH_MODE": "noratio"})
    assert result.returncode == 1
    assert "missing" in result.stderr


def test_failing_program_is_reported(fake_build, tmp_path):
    out = tmp_path / "run"
    result = run_cli("bench", "--no-mpi", "--no-dsm", "--out", out, env={"FAKE_BENCH_MODE": "fail"})
    assert result.returncode == 1
    assert "postbox-rsm-bench failed with exit status 3" in result.stderr
    assert "FAILED: rsm" in result.stderr
    assert "transport exploded" in (out / "rsm.txt").read_text()
    description = json.loads((out / "machine.json").read_text())
    assert description["runs"][0]["exit_status"] == 3
    # the partial results still get a page
    assert (out / "index.html").exists()


def test_refuses_a_folder_with_results(fake_build, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "rsm.jsonl").write_text("{}\n")
    result = run_cli("bench", "--no-mpi", "--no-dsm", "--out", out)
    assert result.returncode == 1
    assert "already holds results" in result.stderr
    assert (out / "rsm.jsonl").read_text() == "{}\n"


def test_default_folder_is_dated():
    out = bench.default_out_dir(datetime.datetime(2024, 5, 6, 7, 8, 9))
    assert out == paths.repo_root() / "results" / "20240506-070809"


def test_fake_records_have_every_key(fake_build, tmp_path):
    out = tmp_path / "run"
    assert run_cli("bench", "--no-mpi", "--no-dsm", "--out", out).returncode == 0
    for rec in results.load_dir(out):
        assert results.missing_keys(rec) == []
