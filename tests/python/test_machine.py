"""machine.json: what ran, where, built how."""

import json

import pytest

from postbox import machine

pytestmark = pytest.mark.short


def test_describe_has_the_facts(fake_build):
    (fake_build / "CMakeCache.txt").write_text(
        "// comment\nCMAKE_BUILD_TYPE:STRING=RelWithDebInfo\n"
        "CMAKE_C_COMPILER:FILEPATH=/nonexistent/cc\n")
    commands = [["postbox-rsm-bench", "--json", "x.jsonl"]]
    description = machine.describe(commands)
    for key in ("date", "hostname", "cpu_model", "cores", "kernel", "compiler", "git",
                "postbox_version", "commands"):
        assert key in description, key
    assert description["commands"] == commands
    assert description["cores"] >= 1
    assert description["compiler"]["build_type"] == "RelWithDebInfo"
    assert description["compiler"]["path"] == "/nonexistent/cc"
    assert description["compiler"]["version"] is None
    assert set(description["git"]) == {"commit", "dirty"}
    json.dumps(description)  # serialisable


def test_cpu_model_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: X\nmodel name\t: Fancy CPU @ 3GHz\n")
    assert machine.cpu_model(cpuinfo) == "Fancy CPU @ 3GHz"


def test_write_is_valid_json(tmp_path):
    path = tmp_path / "machine.json"
    machine.write(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert not (tmp_path / "machine.json.tmp").exists()
