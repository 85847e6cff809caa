"""Tests that run the real C build (skipped when `make` has not built it,
failed under POSTBOX_TEST_REQUIRE_BUILD=1)."""

import json
import subprocess

import pytest

from conftest import REPO, built, missing_build, run_cli
from postbox import config, paths, results

pytestmark = pytest.mark.slow


def _dump_or_skip():
    try:
        return paths.program(config.DUMP_PROGRAM)
    except paths.MissingProgram as exc:
        missing_build(str(exc))


def test_config_dump_prints_json_lines(real_build):
    dump = _dump_or_skip()
    out = subprocess.run([str(dump)], capture_output=True, text=True, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines, "empty table"
    for entry in lines:
        assert set(entry) == {"name", "type", "default", "help"}
        assert entry["name"].startswith("POSTBOX_")
        assert entry["type"] in ("string", "int", "bool")
        assert entry["help"] and "default" not in entry["help"].lower()
    names = [entry["name"] for entry in lines]
    assert len(names) == len(set(names)), "a variable is declared twice"


def test_info_config_lists_both_tables(real_build):
    _dump_or_skip()
    result = run_cli("info", "--config")
    assert result.returncode == 0, result.stderr
    assert "POSTBOX_LOG_LEVEL" in result.stdout  # the library's (src/util/config.c)
    assert "POSTBOX_RENDEZVOUS" in result.stdout  # the MPI engine's (src/mpi/engine/tunables.c)


def test_docs_config_md_is_current(real_build):
    _dump_or_skip()
    result = run_cli("info", "--config", "--markdown")
    assert result.returncode == 0, result.stderr
    doc = REPO / "docs" / "config.md"
    assert doc.exists(), "docs/config.md is missing: run `make docs`"
    assert doc.read_text() == result.stdout, "docs/config.md is stale: run `make docs`"


def test_bench_quick_writes_records_with_every_key(real_build, tmp_path):
    out = tmp_path / "run"
    # the MPI part (and its wheel downloads) is left to `make bench`, and so
    # are the --netns run of the tcp bench (root only) and the DSM part
    # (tests/dsmbench and test_dsm_bench.py run its pieces)
    result = run_cli("bench", "--quick", "--no-mpi", "--no-netns", "--no-dsm", "--out", out,
                     timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    records = results.load_jsonl(out / "rsm.jsonl")
    assert records
    for rec in records:
        assert results.missing_keys(rec) == [], rec
        assert rec["suite"] and rec["test"] and rec["metric"]
    assert (out / "index.html").exists()
    machine = json.loads((out / "machine.json").read_text())
    assert machine["runs"][0]["exit_status"] == 0
    assert [(part["name"], part["verdict"]) for part in machine["parts"]] == [
        ("rsm", "ok"), ("net", "ok"), ("rsm-net", "ok")]
    for name in ("net", "rsm-net"):
        for rec in results.load_jsonl(out / (name + ".jsonl")):
            assert results.missing_keys(rec) == [], rec


def test_postbox_entry_point_in_build_bin(real_build):
    entry = built(real_build / "bin" / "postbox", "it is made by `make`, not by cmake alone")
    result = subprocess.run([str(entry), "--version"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.startswith("postbox ")

