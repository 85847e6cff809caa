"""The traffic bench: trafficbench's permutation tables (hand-computed for
2^k and other rank counts, and against bench/mpi_traffic.c's own tables),
its seeded generator (the distributions' means, and the C program's draws),
the parsing of the program's output, the job shapes and commands, and the
part's place in `postbox bench`."""

from __future__ import annotations

import io
import json
import math
import subprocess
from collections import Counter

import pytest

from conftest import built, fake_wheel_prefix
from postbox import bench, mpibench, paths, trafficbench

P = trafficbench.PERMUTATIONS


# ---- the permutations, by hand --------------------------------------------------------

# P = 8 = 2^3, rank = a2 a1 a0
HAND_8 = {
    # the low 3 digits rotate right: a0 a2 a1 (the inverse perfect shuffle)
    "baseline_single": [0, 4, 1, 5, 2, 6, 3, 7],
    # stage 0 (nothing), stage 1 (a2 a0 a1), stage 2 on that: a1 a2 a0
    "baseline_multi": [0, 1, 4, 5, 2, 3, 6, 7],
    "bit_reversal": [0, 4, 2, 6, 1, 5, 3, 7],
    # digits 2 and 0 swap: a0 a1 a2
    "butterfly_single": [0, 4, 2, 6, 1, 5, 3, 7],
    # swap(0,1) then swap(0,2): a1 a0 a2, the perfect shuffle
    "butterfly_multi": [0, 2, 4, 6, 1, 3, 5, 7],
    "complement": [7, 6, 5, 4, 3, 2, 1, 0],
    "cube_single": [4, 5, 6, 7, 0, 1, 2, 3],
    # every digit complemented, as the complement
    "cube_multi": [7, 6, 5, 4, 3, 2, 1, 0],
    # a 4 x 2 matrix: r = 2i + j -> 4j + i (the seed's a0 a2 a1)
    "matrix_transpose": [0, 4, 1, 5, 2, 6, 3, 7],
    "neighbor": [1, 0, 3, 2, 5, 4, 7, 6],
    # a1 a0 a2: the digits rotate left
    "perfect_shuffle": [0, 2, 4, 6, 1, 3, 5, 7],
}

# P = 4 = 2^2: a 2 x 2 matrix; most coincide
HAND_4 = {
    "baseline_single": [0, 2, 1, 3], "baseline_multi": [0, 2, 1, 3],
    "bit_reversal": [0, 2, 1, 3], "butterfly_single": [0, 2, 1, 3],
    "butterfly_multi": [0, 2, 1, 3], "complement": [3, 2, 1, 0], "cube_single": [2, 3, 0, 1],
    "cube_multi": [3, 2, 1, 0], "matrix_transpose": [0, 2, 1, 3], "neighbor": [1, 0, 3, 2],
    "perfect_shuffle": [0, 2, 1, 3],
}


@pytest.mark.short
@pytest.mark.parametrize("ranks,table", [(8, HAND_8), (4, HAND_4)])
def test_permutations_of_powers_of_two_by_hand(ranks, table):
    assert set(table) == set(P)
    for pattern, want in table.items():
        assert trafficbench.destinations(pattern, ranks) == want, pattern


@pytest.mark.short
def test_sixteen_ranks_by_hand():
    d = lambda p: trafficbench.destinations(p, 16)  # noqa: E731
    # 4^2: the two halves of the digits swap (a 4 x 4 transpose)
    assert d("matrix_transpose") == [4 * (r % 4) + r // 4 for r in range(16)]
    assert d("bit_reversal")[1] == 8 and d("bit_reversal")[3] == 12  # 0001, 0011
    assert d("perfect_shuffle")[9] == 3  # 1001 -> 0011
    assert d("baseline_single")[3] == 9  # 0011 -> 1001
    assert d("butterfly_single")[1] == 8 and d("butterfly_single")[9] == 9
    assert d("cube_single") == [r ^ 8 for r in range(16)]
    assert d("cube_multi") == d("complement") == [15 - r for r in range(16)]
    assert d("butterfly_multi") == d("perfect_shuffle")


@pytest.mark.short
def test_two_ranks_only_the_swaps_apply():
    applicable = {p: trafficbench.destinations(p, 2) for p in P}
    assert {p for p, t in applicable.items() if t is not None} == {
        "complement", "cube_single", "cube_multi", "neighbor"}
    assert all(t == [1, 0] for t in applicable.values() if t is not None)


@pytest.mark.short
def test_other_rank_counts():
    for pattern in trafficbench.DIGIT_PERMUTATIONS:
        for ranks in (3, 5, 6, 7, 12):
            assert trafficbench.destinations(pattern, ranks) is None, (pattern, ranks)
    assert trafficbench.destinations("complement", 5) == [4, 3, 2, 1, 0]  # rank 2 idle
    assert trafficbench.destinations("neighbor", 5) == [1, 0, 3, 2, 4]  # rank 4 idle
    assert trafficbench.destinations("neighbor", 3) == [1, 0, 2]
    # the first ceil(P/2) to the even ranks, the rest to the odd ones
    assert trafficbench.destinations("perfect_shuffle", 6) == [0, 2, 4, 1, 3, 5]
    assert trafficbench.destinations("perfect_shuffle", 5) == [0, 2, 4, 1, 3]
    assert trafficbench.destinations("perfect_shuffle", 3) == [0, 2, 1]
    # a 3 x 2 matrix: r = 2i + j -> 3j + i
    assert trafficbench.destinations("matrix_transpose", 6) == [0, 3, 1, 4, 2, 5]
    # 12: a 4 x 3 matrix (3 the largest divisor with 3^2 <= 12): 3i + j -> 4j + i
    assert trafficbench.destinations("matrix_transpose", 12) == [0, 4, 8, 1, 5, 9, 2, 6, 10,
                                                                 3, 7, 11]
    # a prime: a 1 x P matrix, every rank to itself: not applicable
    assert trafficbench.destinations("matrix_transpose", 7) is None
    for pattern in P:
        assert trafficbench.destinations(pattern, 1) is None
    with pytest.raises(ValueError, match="unknown permutation"):
        trafficbench.destinations("uniform", 4)


@pytest.mark.short
def test_every_table_is_a_permutation():
    for ranks in range(2, 70):
        for pattern in P:
            table = trafficbench.destinations(pattern, ranks)
            if table is not None:
                assert sorted(table) == list(range(ranks)), (pattern, ranks)


@pytest.mark.short
def test_seed_placement_claims_hold_for_blocked_nodes():
    """Seed 000: complement and both cubes only off-node, neighbor only
    on-node (32 processes on 4 nodes, 8 each, blocked)."""
    node = lambda r: r // 8  # noqa: E731
    for pattern in ("complement", "cube_single", "cube_multi"):
        table = trafficbench.destinations(pattern, 32)
        assert all(node(r) != node(d) for r, d in enumerate(table)), pattern
    table = trafficbench.destinations("neighbor", 32)
    assert all(node(r) == node(d) for r, d in enumerate(table))
    # single-stage baseline is the inverse perfect shuffle, as the seed says
    shuffle = trafficbench.destinations("perfect_shuffle", 32)
    baseline = trafficbench.destinations("baseline_single", 32)
    assert all(baseline[shuffle[r]] == r for r in range(32))


# ---- parsing --------------------------------------------------------------------------

TABLE_TEXT = """\
# mpi_traffic permutations: pattern ranks destination of rank 0, 1, ...
complement 4 3 2 1 0
bit_reversal 3 n/a
neighbor 3 1 0 2
"""


@pytest.mark.short
def test_parse_permutation_table():
    table = trafficbench.parse_permutation_table(TABLE_TEXT)
    assert table == {("complement", 4): [3, 2, 1, 0], ("bit_reversal", 3): None,
                     ("neighbor", 3): [1, 0, 2]}
    with pytest.raises(ValueError, match="3 destinations for 4 ranks"):
        trafficbench.parse_permutation_table("complement 4 3 2 1\n")
    with pytest.raises(ValueError, match="line 1"):
        trafficbench.parse_permutation_table("complement four 1 2\n")


@pytest.mark.short
def test_parse_samples():
    text = "# mpi_traffic samples: ...\n1 6164 465.951914\n3 6396 269.5\n"
    assert trafficbench.parse_samples(text) == [(1, 6164, 465.951914), (3, 6396, 269.5)]


# ---- the generator --------------------------------------------------------------------

def _draws(size_dist, time_dist, n=40000, ranks=5, rank=2, seed=11, mean_size=4096.0,
           mean_gap=2000.0):
    gen = trafficbench.Generator(seed, rank)
    return [gen.draw(rank, ranks, mean_size, mean_gap, size_dist, time_dist) for _ in range(n)]


@pytest.mark.short
@pytest.mark.parametrize("size_dist,time_dist", [("uniform", "uniform"),
                                                 ("exponential", "exponential"),
                                                 ("uniform", "exponential")])
def test_generator_means(size_dist, time_dist):
    draws = _draws(size_dist, time_dist)
    n = len(draws)
    sizes = [s for _, s, _ in draws]
    gaps = [g for _, _, g in draws]
    assert abs(sum(sizes) / n - 4096.0) < 0.02 * 4096
    assert abs(sum(gaps) / n - 2000.0) < 0.02 * 2000
    assert min(sizes) >= 1
    if size_dist == "uniform":
        assert max(sizes) <= 2 * 4096 - 1
        # uniform: the variance of U[1, 2S-1] is about S^2 / 3
        var = sum((s - 4096.0) ** 2 for s in sizes) / n
        assert abs(var / (4096.0 ** 2 / 3) - 1) < 0.05
    else:
        assert max(sizes) <= trafficbench.EXP_CAP * 4096
        # exponential: the standard deviation equals the mean
        sd = math.sqrt(sum((s - 4096.0) ** 2 for s in sizes) / n)
        assert abs(sd / 4096.0 - 1) < 0.05
    if time_dist == "uniform":
        assert max(gaps) < 2 * 2000.0 and min(gaps) >= 0.0


@pytest.mark.short
def test_destinations_uniform_among_the_others():
    draws = _draws("uniform", "uniform", n=20000, ranks=5, rank=2)
    counts = Counter(d for d, _, _ in draws)
    assert set(counts) == {0, 1, 3, 4}
    for dest in counts:
        assert abs(counts[dest] / 20000 - 0.25) < 0.02


@pytest.mark.short
def test_generator_is_repeatable_and_rank_streams_differ():
    assert _draws("uniform", "uniform", n=50) == _draws("uniform", "uniform", n=50)
    assert _draws("uniform", "uniform", n=50, rank=1) != _draws("uniform", "uniform", n=50)
    assert _draws("uniform", "uniform", n=50, seed=12) != _draws("uniform", "uniform", n=50)
    # the first value of splitmix64 seeded 0 + the rank-1 stream constant
    gen = trafficbench.Generator(0, -1)
    assert gen.state == 0
    assert gen.next() == 0xE220A8397B1DCDAF  # splitmix64's first output from state 0


# ---- the C program against this module ------------------------------------------------

def _traffic_program():
    return built(paths.bin_dir() / "postbox-mpi-traffic-bench")


@pytest.mark.slow
def test_c_tables_match_python():
    program = _traffic_program()
    done = subprocess.run([str(program), "--print-permutations", "1-40,64"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    table = trafficbench.parse_permutation_table(done.stdout)
    assert len(table) == 41 * len(P)
    for (pattern, ranks), dests in table.items():
        assert trafficbench.destinations(pattern, ranks) == dests, (pattern, ranks)


@pytest.mark.slow
@pytest.mark.parametrize("size_dist,time_dist", [("uniform", "uniform"),
                                                 ("exponential", "exponential")])
def test_c_generator_matches_python(size_dist, time_dist):
    program = _traffic_program()
    done = subprocess.run(
        [str(program), "--print-samples", "3000", "--sample-ranks", "6", "--sample-rank", "4",
         "--seed", "99", "--mean-size", "1000", "--sample-gap-ns", "750",
         "--size-dist", size_dist, "--time-dist", time_dist],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    c_draws = trafficbench.parse_samples(done.stdout)
    gen = trafficbench.Generator(99, 4)
    py = [gen.draw(4, 6, 1000.0, 750.0, size_dist, time_dist) for _ in range(3000)]
    assert [(d, s) for d, s, _ in c_draws] == [(d, s) for d, s, _ in py]
    assert all(abs(a[2] - b[2]) <= 1e-5 * max(1.0, b[2]) for a, b in zip(c_draws, py))
    assert abs(sum(s for _, s, _ in c_draws) / 3000 - 1000) < 40


@pytest.mark.slow
def test_c_program_rejects_bad_options():
    program = _traffic_program()
    for argv in (["--loads", "x"], ["--tests", "nothing"], ["--size-dist", "normal"],
                 ["--print-permutations", "0"], ["--print-samples", "5", "--sample-ranks", "1"]):
        done = subprocess.run([str(program)] + argv, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, argv
        assert "mpi_traffic" in done.stderr, argv


# ---- shapes, commands, the job --------------------------------------------------------

def _lib(tmp_path, header, label):
    lib = mpibench.find_in_prefix(fake_wheel_prefix(tmp_path / label, header))
    lib.label = label
    return lib


def _postbox(tmp_path):
    return mpibench.Library("postbox", "build", tmp_path / "postbox-cc", tmp_path / "mpiexec",
                            label="postbox")


@pytest.mark.short
def test_plan_and_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ompi = _lib(tmp_path, "#define OMPI_MAJOR_VERSION 5\n", "openmpi")
    postbox = _postbox(tmp_path)
    runs = trafficbench.plan_runs([postbox, ompi], True)
    assert [(run.lib.label, run.config.name) for run in runs] == [
        ("postbox", "2-ranks-1-node"), ("openmpi", "2-ranks-1-node"),
        ("postbox", "4-ranks-1-node"), ("openmpi", "4-ranks-1-node"),
        ("postbox", "4-ranks-2-nodes"), ("openmpi", "4-ranks-2-nodes"),
        ("postbox", "4-ranks-4-nodes")]
    full = trafficbench.plan_runs([postbox, ompi], False)
    assert {run.config.ranks for run in full} == {2, 4, 8}
    assert ("openmpi", "8-ranks-4-nodes") not in [(r.lib.label, r.config.name) for r in full]

    argv = trafficbench.run_command(postbox, trafficbench.Config(4, 4), tmp_path / "t.jsonl",
                                    True, is_root=False)
    # the launcher's --nodes 4, and the records' (the last --nodes wins)
    assert argv[1:5] == ["--nodes", "4", "-n", "4"]
    nodes = [argv[i + 1] for i, a in enumerate(argv) if a == "--nodes"]
    assert nodes[-1] == "4" and "--quick" in argv and "--window-ms" in argv
    assert argv[argv.index("--path") + 1] == "network"
    argv = trafficbench.run_command(ompi, trafficbench.Config(4, 2), tmp_path / "t.jsonl",
                                    False, is_root=False)
    assert "btl" in argv and "--quick" not in argv
    assert argv[argv.index("--path") + 1] == "network"
    argv = trafficbench.run_command(ompi, trafficbench.Config(2), tmp_path / "t.jsonl", False,
                                    is_root=False)
    assert argv[argv.index("--path") + 1] == "on-node"


@pytest.mark.short
def test_part_and_suite_in_the_job():
    assert ("mpi-traffic", "trafficbench") in bench.MPI_PARTS
    assert bench.suite_parts(["traffic"]) == ["mpi-traffic"]
    assert "mpi-traffic" in bench.PARTS


@pytest.mark.short
def test_detail_and_failed_runs(tmp_path):
    outcome = trafficbench.Outcome(built=["postbox"], runs=2, seconds=12.5, quick=True,
                                   failed=["traffic/postbox/4-ranks-2-nodes"])
    verdict, text = trafficbench.detail(outcome)
    assert verdict == "FAILED"
    assert "12.5 s (budget 30 s)" in text and "4-ranks-2-nodes" in text
    verdict, _ = trafficbench.detail(trafficbench.Outcome())
    assert verdict == "skipped"


@pytest.mark.short
def test_run_libraries_with_a_failing_build(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    lib = _postbox(tmp_path)  # its mpicc does not exist: the build fails
    terminal, err = io.StringIO(), io.StringIO()
    outcome = trafficbench.run_libraries(tmp_path, True, [lib], (), {}, terminal, err)
    assert outcome.skipped == ["postbox"] and outcome.runs == 0
    assert "mpi-traffic took" in terminal.getvalue()
    assert "postbox" in err.getvalue()


FAKE_TRAFFIC = '''\
#!{python}
"""A stand-in for mpi_traffic: one saturation record per run."""
import json, os, sys
args = sys.argv[1:]
value = lambda name: args[args.index(name) + 1]
ranks = int(os.environ.get("FAKE_MPI_RANKS", "2"))
rec = dict(suite="traffic", test="uniform", library=value("--library"),
           transport=value("--transport"), placement=value("--placement"), ranks=ranks,
           nodes=int([args[i + 1] for i, a in enumerate(args) if a == "--nodes"][-1]
                     if "--nodes" in args else 1),
           pairs=1, size=8192, metric="accepted_bandwidth", unit="MB/s", median=100.0 * ranks,
           min=1.0, max=1.0, reps=1, probe_before=-1, probe_after=-1, settled=True,
           state="unknown", path=value("--path"), size_dist="uniform", time_dist="none",
           load="saturation", offered=120.0 * ranks)
with open(value("--json"), "a") as handle:
    handle.write(json.dumps(rec) + "\\n")
print("# mpi_traffic: done, status 0")
'''


@pytest.mark.short
def test_the_part_alone_with_fake_libraries(tmp_path, monkeypatch):
    """`postbox bench --suite traffic` with two fake wheels: every shape of
    the quick profile, the records, the report with Fig. 14 and Fig. 15."""
    import sys

    from postbox import cli

    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    libs = [_lib(tmp_path, '#define MPICH_VERSION "4.1"\n', "mpich"),
            _lib(tmp_path, "#define OMPI_MAJOR_VERSION 5\n", "openmpi")]
    monkeypatch.setattr(mpibench, "discover", lambda: libs)

    def fake_build(lib):
        program = mpibench.build_dir(lib) / trafficbench.PROGRAM
        program.parent.mkdir(parents=True, exist_ok=True)
        program.write_text(FAKE_TRAFFIC.format(python=sys.executable))
        program.chmod(0o755)
        return True, "built %s" % program

    monkeypatch.setattr(trafficbench, "build", fake_build)
    out = tmp_path / "run"
    status = cli.main(["bench", "--suite", "traffic", "--quick", "--no-wheels", "--out",
                       str(out)])
    assert status == 0
    text = (out / "index.html").read_text(encoding="utf-8")
    assert 'id="seed000-fig-14"' in text and 'id="seed000-fig-15"' in text
    description = json.loads((out / "machine.json").read_text())
    names = [run["name"] for run in description["runs"]]
    assert names == ["traffic/mpich/2-ranks-1-node", "traffic/openmpi/2-ranks-1-node",
                     "traffic/mpich/4-ranks-1-node", "traffic/openmpi/4-ranks-1-node",
                     "traffic/mpich/4-ranks-2-nodes", "traffic/openmpi/4-ranks-2-nodes"]
    assert description["traffic_seconds"] > 0
    parts = [p["name"] for p in description["parts"]]
    assert parts == ["mpi-traffic"]
