"""Groups, communicators from groups, info, attributes, MPI_Alloc_mem and
the handle conversions (``pbt-mpi-groups``, tests/mpi/test_groups.c) under
``postbox run -n 4``, on one node and on two virtual nodes (where
MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) must give 2 ranks a node).
"""

from __future__ import annotations

import pytest

from conftest import built
from postbox import paths
from test_run import run

pytestmark = pytest.mark.short

LAYOUTS = [
    pytest.param(["-n", "4"], 4, id="4-ranks-1-node"),
    pytest.param(["-n", "4", "--nodes", "2"], 2, id="4-ranks-2-nodes"),
]


@pytest.fixture
def groups(real_build):
    return built(paths.bin_dir() / "pbt-mpi-groups")


@pytest.mark.parametrize("layout, per_node", LAYOUTS)
def test_groups_info_attributes(groups, layout, per_node):
    result = run(*layout, "--timeout", 60, groups, "shared=%d" % per_node, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("groups: ok"), result.stdout + result.stderr


def test_attributes_follow_comm_dup_and_free(groups):
    result = run("-n", "4", "--timeout", 60, groups, "attr_dup", timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "groups: ok" in result.stdout
