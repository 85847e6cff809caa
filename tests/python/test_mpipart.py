"""mpipart.run_part_alone: a part run alone (`postbox bench --rma`, --coll,
--threads) makes the per-library wheel venvs first, as the whole job does,
unless told not to, and records what it installed in machine.json."""
import io
import json
from pathlib import Path

from postbox import mpibench, mpipart


def _run_alone(tmp_path, monkeypatch, wheels):
    calls = []
    fake = mpibench.Library("mpich", "system", Path("/usr/bin/mpicc"), Path("/usr/bin/mpiexec"),
                            label="mpich")

    def install(**kwargs):
        calls.append("install")
        return {"mpich": {"ok": True, "message": "already installed", "prefix": "x"}}

    def discover():
        calls.append("discover")
        return [fake]

    def run_libraries(out, quick, chosen, extra, description, terminal, err, started):
        calls.append(("run", [lib.label for lib in chosen]))
        return None

    monkeypatch.setattr(mpibench, "install_wheels", install)
    monkeypatch.setattr(mpibench, "discover", discover)
    monkeypatch.setattr(mpipart, "write_report", lambda out, terminal, err: [{}])
    out = tmp_path / "results"
    status = mpipart.run_part_alone("mpi-rma", run_libraries, lambda outcome, jsonl: ("ok", ""),
                                    "rma", out, True, None, io.StringIO(), None, wheels=wheels)
    return status, calls, json.loads((out / "machine.json").read_text())


def test_wheels_are_made_before_the_libraries_are_found(tmp_path, monkeypatch):
    status, calls, described = _run_alone(tmp_path, monkeypatch, wheels=True)
    assert status == 0
    assert calls == ["install", "discover", ("run", ["mpich"])]
    assert described["mpi_wheels"]["mpich"]["ok"] is True


def test_no_wheels_finds_only_what_is_there(tmp_path, monkeypatch):
    status, calls, described = _run_alone(tmp_path, monkeypatch, wheels=False)
    assert status == 0
    assert calls == ["discover", ("run", ["mpich"])]
    assert "mpi_wheels" not in described
