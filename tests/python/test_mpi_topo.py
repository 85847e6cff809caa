"""Process topologies and neighborhood collectives in a program built as a user builds one.

tests/mpi/test_topo.c (written to the standard API only; CTest runs the copy the build
makes, pbt-mpi-topo) built by ``postbox-cc`` and run by ``postbox run``: the topology
functions, the neighborhood collectives and MPI_Alltoallw link and pass from a program
that knows nothing of the library.
"""

from __future__ import annotations

import subprocess

import pytest

from conftest import REPO
from postbox import paths
from test_run import run

pytestmark = pytest.mark.short

SOURCE = REPO / "tests" / "mpi" / "test_topo.c"


@pytest.mark.parametrize("layout", [
    pytest.param(["-n", "3"], id="3-ranks-1-node"),
    pytest.param(["-n", "4", "--nodes", "2"], id="4-ranks-2-nodes"),
])
def test_topo_with_postbox_cc(real_build, tmp_path, layout):
    exe = tmp_path / "topo"
    cc = subprocess.run([str(paths.bin_dir() / "postbox-cc"), "-O2", "-I", str(REPO / "tests"),
                         "-o", str(exe), str(SOURCE)], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stdout + cc.stderr
    result = run(*layout, "--timeout", 60, exe, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "topo: ok" in result.stdout, result.stdout + result.stderr
    assert "FAIL" not in result.stdout, result.stdout
