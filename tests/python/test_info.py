"""`postbox info`: version, build, MPI library, transports (probed),
launchers, PMI flavours and every tunable with its value and source, as
text and as --json.  Against a fake build tree (its probe, dump and
build-info.json stand-ins) and against the real one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import built, run_cli
from postbox import config, info, paths

FAKE_PROBE = '''\
#!{python}
"""A stand-in for postbox-transport-probe: shm works, tcp fails to publish."""
import json, sys
if sys.argv[1:] == ["--list"]:
    print("shm")
    print("tcp")
elif sys.argv[1:] == ["shm"]:
    print(json.dumps({{"transport": "shm", "available": True, "page_size": 4096,
                      "max_segment_size": 1 << 40, "can_map": True}}))
elif sys.argv[1:] == ["tcp"]:
    print("postbox[1] error tcp.c:1 tcp: cannot listen on 203.0.113.7", file=sys.stderr)
    print(json.dumps({{"transport": "tcp", "available": False, "step": "export publish",
                      "error": "insufficient resources"}}))
else:
    sys.exit(1)
'''

BUILD_INFO = {"version": "0.1.0", "build_type": "Debug", "c_compiler": "/usr/bin/cc",
              "c_compiler_id": "GNU", "c_compiler_version": "12.2.0", "c_flags": "-g -Wall",
              "sanitize": True, "tsan": False, "pmi": ["PMI-1", "PMI-2"],
              "system": "Linux x86_64", "cmake_version": "3.25.1"}


def _exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def fake_info_build(fake_build) -> Path:
    _exe(fake_build / "bin" / info.PROBE_PROGRAM, FAKE_PROBE.format(python=sys.executable))
    (fake_build / "share" / "postbox").mkdir(parents=True)
    (fake_build / "share" / "postbox" / "build-info.json").write_text(json.dumps(BUILD_INFO))
    _exe(fake_build / "bin" / "mpirun", "#!/bin/sh\n")
    return fake_build


@pytest.fixture
def launchers_path(tmp_path) -> Path:
    """A directory with fake srun and prterun (no mpiexec.hydra)."""
    where = tmp_path / "launchers"
    where.mkdir()
    for name in ("srun", "prterun"):
        _exe(where / name, "#!/bin/sh\n")
    return where


def _info_json(*args, env=None) -> dict:
    result = run_cli("info", "--json", *args, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.short
def test_json_has_every_part(fake_info_build, launchers_path):
    data = _info_json(env={"PATH": str(launchers_path), "SLURM_JOB_ID": "42",
                           "POSTBOX_NODE_ID": "3", "POSTBOX_JOB_SECRET": "f" * 32})
    assert set(data) == {"version", "location", "build", "mpi", "transports", "launchers",
                         "pmi", "python", "tunables"}
    assert data["location"]["kind"] == "build tree"
    assert data["location"]["build"] == str(fake_info_build)
    assert data["build"] == BUILD_INFO
    # no library in the fake build: the MPI part says so, the rest still comes
    assert "cannot load" in data["mpi"]["error"]

    transports = {t["name"]: t for t in data["transports"]}
    assert list(transports) == ["shm", "tcp", "ofi"]
    assert transports["shm"]["state"] == "available" and transports["shm"]["can_map"]
    assert transports["tcp"]["state"] == "unavailable"
    assert transports["tcp"]["detail"] == ("export publish: insufficient resources "
                                           "(postbox[1] error tcp.c:1 tcp: cannot listen on "
                                           "203.0.113.7)")
    assert transports["ofi"]["state"] == "not built"

    launchers = {entry["name"]: entry for entry in data["launchers"]}
    assert launchers["postbox run"]["path"] == str(fake_info_build / "bin" / "mpirun")
    assert launchers["Slurm srun"]["path"] == str(launchers_path / "srun")
    assert launchers["Slurm srun"]["allocation"] == "42"
    assert launchers["prterun"]["path"] == str(launchers_path / "prterun")
    assert launchers["Hydra"]["path"] is None

    assert [(p["name"], p["state"]) for p in data["pmi"]] == [
        ("PMI-1", "supported"), ("PMI-2", "supported"), ("PMIx", "not built")]

    rows = {row["name"]: row for row in data["tunables"]["list"]}
    assert rows["POSTBOX_NODE_ID"] == {"name": "POSTBOX_NODE_ID", "type": "int", "value": "3",
                                       "default": "0", "source": "environment"}
    assert rows["POSTBOX_LOG_LEVEL"]["source"] == "default"
    assert rows["POSTBOX_LOG_LEVEL"]["value"] == "warn"
    assert rows["POSTBOX_JOB_ID"]["value"] is None


@pytest.mark.short
def test_secrets_are_never_shown(fake_info_build):
    secret = "0123456789abcdef" * 2
    config_dump = fake_info_build / "bin" / "postbox-config-dump"
    _exe(config_dump, config_dump.read_text().replace(
        '("POSTBOX_NODE_ID", "int", "0", "Node id.")',
        '("POSTBOX_NODE_ID", "int", "0", "Node id."), '
        '("POSTBOX_JOB_SECRET", "string", None, "Job secret.")'))
    env = {"POSTBOX_JOB_SECRET": secret}
    for args in (["--json"], [], ["--config"]):
        result = run_cli("info", *args, env=env)
        assert result.returncode == 0, result.stderr
        assert secret not in result.stdout, args
        assert "(hidden)" in result.stdout, args


@pytest.mark.short
def test_text_lists_every_section(fake_info_build, launchers_path):
    result = run_cli("info", env={"PATH": str(launchers_path), "POSTBOX_NODE_ID": "3"})
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("Postbox %s\n" % BUILD_INFO["version"])
    for section in ("\nBuild\n", "\nMPI\n", "\nRSM transports\n", "\nLaunchers\n", "\nPMI\n",
                    "\nTunables "):
        assert section in text, section
    assert "C flags:       -g -Wall" in text
    assert "sanitizers:    address,undefined" in text
    assert "tcp:           unavailable: export publish: insufficient resources" in text
    assert "ofi:           not built" in text
    assert "Hydra:         mpiexec.hydra not found on PATH" in text
    assert "prterun:       found %s" % (launchers_path / "prterun") in text
    assert "PMIx:          not built" in text
    assert "POSTBOX_NODE_ID   = 3  (environment)" in text
    assert "POSTBOX_LOG_LEVEL = warn  (default)" in text


@pytest.mark.short
def test_missing_parts_are_reported_not_fatal(empty_build):
    data = _info_json()
    assert "run `make`" in data["build"]["error"]
    assert "not found" in data["tunables"]["error"]
    assert {t["state"] for t in data["transports"]} == {"unknown"}
    assert [p["state"] for p in data["pmi"]] == ["unknown"] * 3


@pytest.mark.short
def test_a_crashing_probe_is_an_unavailable_transport(fake_info_build):
    _exe(fake_info_build / "bin" / info.PROBE_PROGRAM,
         "#!/bin/sh\n[ \"$1\" = --list ] && { echo shm; exit 0; }\n"
         "echo 'postbox[2] error shm.c:9 no memfd' >&2; kill -SEGV $$\n")
    shm = _info_json()["transports"][0]
    assert shm == {"name": "shm", "state": "unavailable",
                   "detail": "its probe failed (killed by signal 11): "
                             "postbox[2] error shm.c:9 no memfd"}


@pytest.mark.short
def test_json_and_config_exclude_each_other(fake_info_build):
    result = run_cli("info", "--json", "--config")
    assert result.returncode == 2
    assert "exclude each other" in result.stderr


@pytest.mark.short
def test_help_names_what_info_reports():
    result = run_cli("info", "--help")
    assert result.returncode == 0
    for word in ("--json", "--config", "transport", "launchers", "PMI", "tunable"):
        assert word in result.stdout, word


# ---- the real build ------------------------------------------------------------

@pytest.mark.slow
def test_real_build(real_build):
    built(paths.bin_dir() / info.PROBE_PROGRAM)
    data = _info_json(env={"POSTBOX_SPIN": "7"})
    assert data["version"] == data["build"]["version"]
    if data["build"]["sanitize"] or data["build"]["tsan"]:
        # a sanitized library does not load into a Python that is not
        assert "cannot load" in data["mpi"]["error"]
    else:
        assert (data["mpi"]["standard"], data["mpi"]["abi"]) == ("5.0", "1.0")
        assert data["mpi"]["library"].startswith("Postbox %s" % data["version"])
    states = {t["name"]: t["state"] for t in data["transports"]}
    assert states["shm"] == "available" and states["tcp"] == "available", data["transports"]
    rows = data["tunables"]["list"]
    assert [row["name"] for row in rows] == [t.name for t in config.load()]
    spin = [row for row in rows if row["name"] == "POSTBOX_SPIN"][0]
    assert (spin["value"], spin["source"]) == ("7", "environment")


@pytest.mark.slow
def test_real_probe_says_why_tcp_is_unavailable(real_build):
    built(paths.bin_dir() / info.PROBE_PROGRAM)
    # an address that is not this host's: the tcp transport cannot listen on it
    data = _info_json(env={"POSTBOX_TCP_ADDR": "203.0.113.7"})
    tcp = [t for t in data["transports"] if t["name"] == "tcp"][0]
    assert tcp["state"] == "unavailable"
    assert tcp["detail"].startswith("export publish: ")
    assert "POSTBOX_TCP_ADDR" in tcp["detail"]
    assert [t["state"] for t in data["transports"] if t["name"] == "shm"] == ["available"]
