"""MPI collectives (``pbt-mpi-coll``, tests/mpi/test_coll.c) under ``postbox run``.

The same program runs with 1 to 5 ranks on one node (every power of two
and the odd sizes the algorithms fold), and with 4 ranks on two virtual
nodes (half of each collective's messages over the tcp transport).
"""

from __future__ import annotations

import subprocess

import pytest

from postbox import paths
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
    path = paths.bin_dir() / "pbt-mpi-coll"
    if not path.exists():
        pytest.skip("%s is missing: run `make` first" % path)
    return path


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
