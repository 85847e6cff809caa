"""Choosing collective algorithms: the built-in table (src/mpi/coll_table.txt),
POSTBOX_COLL_TABLE, POSTBOX_COLL_ALGORITHM, POSTBOX_COLL_STATS and
POSTBOX_COLL_NODE, seen from a program through the counts MPI_Finalize
prints (docs/mpi.md, "Choosing algorithms")."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import built
from postbox import paths
from test_run import run

pytestmark = pytest.mark.short

PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, v[4] = {1, 2, 3, 4}, w[4 * 16], i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 0; i < 3; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Bcast(v, 4, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Allreduce(v, w, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (w[0] != size) {
            printf("wrong sum %d\n", w[0]);
            return 1;
        }
        MPI_Gather(v, 1, MPI_INT, w, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
"""

STATS = re.compile(r"postbox: rank (\d+) collectives:(.*)")


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    built(paths.bin_dir() / "postbox-rsm-bench")  # as the real_build fixture
    src = tmp_path_factory.mktemp("coll_table") / "prog.c"
    src.write_text(PROGRAM)
    exe = src.with_suffix("")
    cc = subprocess.run([str(built(paths.bin_dir() / "postbox-cc")), "-o", str(exe), str(src)],
                        capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    return exe


def counts(result, rank=0) -> dict:
    """rank's counts, {"barrier:node": 3, ...}, from its stats line."""
    for line in result.stderr.splitlines():
        m = STATS.match(line)
        if m and int(m.group(1)) == rank:
            return {k: int(v) for k, v in (item.split("=") for item in m.group(2).split())}
    raise AssertionError("no stats line for rank %d:\n%s" % (rank, result.stderr))


def run_with(monkeypatch, program, layout, **env):
    monkeypatch.setenv("POSTBOX_COLL_STATS", "1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = run(*layout, "--timeout", 60, program, timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_default_table_uses_the_node_area(monkeypatch, program):
    c = counts(run_with(monkeypatch, program, ["-n", "3"]))
    assert c["barrier:node"] == 3 and c["bcast:node"] == 3, c
    assert c["allreduce:node"] == 3 and c["gather:node"] == 3, c


def test_every_rank_prints_its_counts(monkeypatch, program):
    result = run_with(monkeypatch, program, ["-n", "2"])
    assert counts(result, 0) == counts(result, 1)


def test_gather_across_nodes_stays_point_to_point(monkeypatch, program):
    c = counts(run_with(monkeypatch, program, ["-n", "4", "--nodes", "2"]))
    assert c["gather:direct"] == 3 and "gather:node" not in c, c
    assert c["allreduce:node"] == 3, c


def test_forced_algorithm_wins_over_the_table(monkeypatch, program):
    c = counts(run_with(monkeypatch, program, ["-n", "2"],
                        POSTBOX_COLL_ALGORITHM="allreduce:recursive_doubling,bcast:binomial"))
    assert c["allreduce:recursive_doubling"] == 3 and "allreduce:node" not in c, c
    assert c["bcast:binomial"] == 3 and c["barrier:node"] == 3, c


def test_forcing_an_unknown_algorithm_is_warned_and_ignored(monkeypatch, program):
    result = run_with(monkeypatch, program, ["-n", "2"],
                      POSTBOX_COLL_ALGORITHM="allreduce:ring")
    assert "POSTBOX_COLL_ALGORITHM: allreduce has no algorithm 'ring'" in result.stderr
    assert counts(result)["allreduce:node"] == 3


def test_table_file_replaces_the_built_in_one(monkeypatch, program, tmp_path):
    table = tmp_path / "table.txt"
    table.write_text("# only barriers on the node\n"
                     "barrier * 2- * * node\n"
                     "bcast   * *  * 0-16 binomial\n")
    c = counts(run_with(monkeypatch, program, ["-n", "2"], POSTBOX_COLL_TABLE=str(table)))
    assert c["barrier:node"] == 3 and c["bcast:binomial"] == 3, c
    assert c["allreduce:recursive_doubling"] == 3 and c["gather:direct"] == 3, c


def test_bad_table_names_its_line_and_falls_back(monkeypatch, program, tmp_path):
    table = tmp_path / "table.txt"
    table.write_text("barrier * * * * node\nbcast * * 1-x * node\n")
    result = run_with(monkeypatch, program, ["-n", "2"], POSTBOX_COLL_TABLE=str(table))
    assert "line 2: a range is" in result.stderr, result.stderr
    assert counts(result)["allreduce:node"] == 3


def test_node_area_off_falls_back_to_point_to_point(monkeypatch, program):
    c = counts(run_with(monkeypatch, program, ["-n", "2"], POSTBOX_COLL_NODE="0"))
    assert c["barrier:dissemination"] == 3 and c["allreduce:recursive_doubling"] == 3, c
    assert not any(k.endswith(":node") for k in c), c


def test_single_copy_or_the_pick_where_far_vcpus_slow_the_cells():
    # docs/notes/2026-11-27-cells-when-cores-are-far-apart.md: on one node
    # the cells lost 2-4x at these sizes when the vCPUs were far apart; at
    # 4 ranks Bcast takes the node's pick between the cells and single
    # copy; from 512 KB the cells' Bcast stays
    from postbox import model_rules

    table = model_rules.load_table()
    assert table is not None
    choose = table.choose
    assert choose("scatter", 4, 4, 1, 16384) == "node"
    assert choose("scatter", 4, 4, 1, 32768) == "node_cma"
    assert choose("scatter", 4, 4, 1, 65536) == "node_cma"
    assert choose("scatter", 4, 4, 1, 4 << 20) == "node_cma"
    assert choose("bcast", 4, 4, 1, 16384) == "node"
    assert choose("bcast", 4, 4, 1, 65536) == "node_auto"
    assert choose("bcast", 4, 4, 1, 256 << 10) == "node_auto"
    assert choose("bcast", 4, 4, 1, 512 << 10) == "node"
    assert choose("scatter", 2, 2, 1, 16384) == "node"
    assert choose("scatter", 2, 2, 1, 65536) == "node_cma"
    assert choose("scatter", 2, 2, 1, 512 << 10) == "node"
    assert choose("bcast", 2, 2, 1, 65536) == "node_cma"
    assert choose("bcast", 2, 2, 1, 512 << 10) == "node"
    assert choose("scatter", 4, 2, 2, 65536) == "direct"
    # 2 ranks: Reduce, Allreduce from 64 KB and Gather of 64 KB-1 MB blocks pick
    assert choose("reduce", 2, 2, 1, 32768) == "node"
    assert choose("reduce", 2, 2, 1, 65536) == "node_auto"
    assert choose("allreduce", 2, 2, 1, 4 << 20) == "node_auto"
    assert choose("allreduce", 4, 4, 1, 4 << 20) == "node"
    assert choose("gather", 2, 2, 1, 1 << 20) == "node_auto"
    assert choose("gather", 2, 2, 1, 4 << 20) == "node"


def test_node_auto_runs_from_a_table_and_only_where_it_applies(monkeypatch, program, tmp_path):
    # the node's pick between the cells and single copy (Bcast, Scatter,
    # Reduce, Allreduce, Gather): a Barrier rule naming it is a bad line
    table = tmp_path / "table.txt"
    table.write_text("bcast * 2- * * node_auto\nallreduce * 2- * * node_auto\n"
                     "gather * 2- * * node_auto\n")
    c = counts(run_with(monkeypatch, program, ["-n", "3"], POSTBOX_COLL_TABLE=str(table)))
    assert c["bcast:node_auto"] == c["allreduce:node_auto"] == c["gather:node_auto"] == 3, c
    table.write_text("barrier * 2- * * node_auto\n")
    result = run_with(monkeypatch, program, ["-n", "2"], POSTBOX_COLL_TABLE=str(table))
    assert "line 1" in result.stderr and "node_auto" in result.stderr, result.stderr
