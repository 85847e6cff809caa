"""The collective bench: collbench (build, shapes, commands), collreport (the
acceptance grid, the consistency checks, Table 2, the Allreduce reference,
the page) on synthetic records, and a real build and run of bench/mpi_coll.c
against Postbox's MPI at 2 ranks."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import built, fake_wheel_prefix
from postbox import cli, collbench, collreport, mpibench, mpipart, paths, report, results
from samples import coll_records

ON2, ON4, TWO4 = collreport.Shape(False, 2), collreport.Shape(False, 4), collreport.Shape(True, 4)


def _shapes(library, scale=1.0, **fields):
    """coll records of @library in the grid's three shapes."""
    return (coll_records(library, 2, scale=scale, **fields)
            + coll_records(library, 4, scale=scale, **fields)
            + coll_records(library, 4, path="network", nodes=2, scale=scale, **fields))


def _set(records, library, shape, test, size, median):
    for record in records:
        if (record["library"], collreport.shape_of(record), record["test"],
                record["size"]) == (library, shape, test, size):
            record["median"] = median
            return record
    raise AssertionError("no record %s %s %s %s" % (library, shape, test, size))


# ---- the acceptance grid -------------------------------------------------------

@pytest.mark.short
def test_grid_has_every_point_and_barrier_once_per_shape():
    records = _shapes("postbox") + _shapes("openmpi") + _shapes("mpich")
    points = collreport.acceptance_grid(collreport.Index(records))
    # 3 shapes x (7 collectives x 5 sizes + barrier once) = 108, the count
    assert len(points) == 108
    assert sum(1 for p in points if p.test == "barrier") == 3
    assert all(p.verdict == "pass" for p in points if p.limit == 1.0)  # equal times pass 1.0x
    # equal times fail the 0.77x points: small Barrier/Bcast/Reduce/Allreduce on one node
    small = [p for p in points if p.limit == collreport.LIMIT_SMALL]
    assert small and all(p.verdict == "FAIL" for p in small)
    assert {(p.shape, p.test, p.size) for p in small} == {
        (shape, test, size) for shape in (ON2, ON4)
        for test, sizes in (("barrier", (0,)), ("bcast", (8, 1024)), ("reduce", (8, 1024)),
                            ("allreduce", (8, 1024))) for size in sizes}


@pytest.mark.short
def test_grid_takes_the_best_other_library_and_the_limits():
    records = _shapes("postbox") + _shapes("openmpi", scale=2.0) + _shapes("mpich", scale=3.0)
    _set(records, "mpich", ON2, "bcast", 8, 1.0)  # mpich is the best here
    _set(records, "postbox", ON2, "bcast", 8, 0.76)
    _set(records, "postbox", ON2, "allreduce", 1024, 2.4)  # openmpi 2 * 3.024 = 6.048
    _set(records, "postbox", TWO4, "alltoall", 65536, 200.0)  # openmpi 2 * 67.536
    index = collreport.Index(records)
    points = {(p.shape, p.test, p.size): p for p in collreport.acceptance_grid(index)}
    point = points[(ON2, "bcast", 8)]
    assert point.best_library == "mpich" and point.best == 1.0
    assert point.ratio == pytest.approx(0.76) and point.verdict == "pass"
    assert points[(ON2, "allreduce", 1024)].verdict == "pass"  # 0.40 <= 0.77
    point = points[(TWO4, "alltoall", 65536)]
    assert point.limit == 1.0 and point.verdict == "FAIL"
    # across two nodes the small points have the 1.0x limit
    assert points[(TWO4, "bcast", 8)].limit == 1.0


@pytest.mark.short
def test_rounds_make_one_point_of_their_medians():
    records = []
    # Postbox 0.9, 0.5, 0.6 of Open MPI's 1.0, 1.2, 0.55 over three rounds
    for k, (own, other) in enumerate(((0.9, 1.0), (0.5, 1.2), (0.6, 0.55))):
        records += _shapes("postbox", scale=own, round=k) + _shapes("openmpi", scale=other,
                                                                      round=k)
    index = collreport.Index(records)
    record = index.get("postbox", ON2, "bcast", 8)
    single = collreport.Index(_shapes("postbox")).get("postbox", ON2, "bcast", 8)
    assert record["rounds"] == 3 and record["median"] == pytest.approx(0.6 * single["median"])
    assert record["t_avg"] == pytest.approx(0.6 * single["t_avg"])
    points = {(p.shape, p.test, p.size): p for p in collreport.acceptance_grid(index)}
    assert points[(ON2, "gather", 8)].ratio == pytest.approx(0.6 / 1.0)
    # records without rounds: the last of a key wins, as before
    again = _shapes("postbox") + _shapes("postbox", scale=2.0)
    assert "rounds" not in collreport.Index(again).get("postbox", ON2, "bcast", 8)
    assert collreport.Index(again).median("postbox", ON2, "bcast", 8) == pytest.approx(
        2.0 * single["median"])


@pytest.mark.short
def test_grid_compares_rounds_of_one_probe_state():
    records = []
    # Postbox: one round with the cores near (fast), two far apart (slow);
    # Open MPI: three near.  Over every round Postbox's median (3.0) would
    # be set against Open MPI's near one (1.15).
    for k, (state, scale) in enumerate((("fast", 1.0), ("slow", 3.0), ("slow", 3.2))):
        records += _shapes("postbox", scale=scale, round=k, state=state)
    for k, scale in enumerate((1.1, 1.2, 1.15)):
        records += _shapes("openmpi", scale=scale, round=k, state="fast")
    index = collreport.Index(records)
    points = {(p.shape, p.test, p.size): p for p in collreport.acceptance_grid(index)}
    point = points[(ON4, "gather", 65536)]
    assert point.state == "fast" and point.rounds == (1, 3)
    assert point.ratio == pytest.approx(1.0 / 1.15) and point.verdict == "pass"
    # every library's median of all its rounds would fail the point
    assert index.median("postbox", ON4, "gather", 65536) > index.median(
        "openmpi", ON4, "gather", 65536)
    # Open MPI far apart too, in more rounds than near: the far rounds count
    records += _shapes("openmpi", scale=3.5, round=3, state="slow")
    records += _shapes("openmpi", scale=3.6, round=4, state="slow")
    records += _shapes("openmpi", scale=3.7, round=5, state="slow")
    point = {(p.shape, p.test, p.size): p for p in collreport.acceptance_grid(
        collreport.Index(records))}[(ON4, "gather", 65536)]
    assert point.state == "slow" and point.rounds == (2, 3)
    assert point.ratio == pytest.approx(3.0 / 3.6)  # of two rounds the lower
    # a state only one side has is no common ground; with none shared,
    # every round counts
    assert collreport.point_state(collreport.Index(
        _shapes("postbox", state="slow") + _shapes("mpich", state="fast")), ON2, "bcast",
        8) == ""
    lone = collreport.Index(_shapes("postbox", state="unknown", round=0)
                            + _shapes("postbox", state="unknown", round=1, scale=3.0)
                            + _shapes("mpich", state="fast"))
    point = {(p.shape, p.test, p.size): p
             for p in collreport.acceptance_grid(lone)}[(ON2, "bcast", 8)]
    assert point.state == "" and point.rounds == (2, 1) and point.ratio == pytest.approx(1.0)


@pytest.mark.short
def test_grid_marks_failures_within_the_rounds_spread():
    records = []
    # medians: Postbox 1.3 against Open MPI's 1.2, a failure at 1.0x; but
    # Postbox's fastest round (1.0) meets 1.0x Open MPI's slowest (1.25)
    for k, scale in enumerate((1.0, 1.3, 1.4)):
        records += _shapes("postbox", scale=scale, round=k, state="fast")
    for k, scale in enumerate((1.1, 1.2, 1.25)):
        records += _shapes("openmpi", scale=scale, round=k, state="fast")
    points = {(p.shape, p.test, p.size): p
              for p in collreport.acceptance_grid(collreport.Index(records))}
    wide = points[(ON4, "gather", 65536)]
    assert wide.verdict == "FAIL" and wide.ratio == pytest.approx(1.3 / 1.2)
    assert (wide.postbox_fastest, wide.best_slowest) == (pytest.approx(wide.postbox / 1.3),
                                                         pytest.approx(wide.best / 1.2 * 1.25))
    assert wide.within_spread
    # at 0.77x the same rounds do not reach: 1.0 > 0.77 * 1.25
    small = points[(ON4, "bcast", 8)]
    assert small.limit == collreport.LIMIT_SMALL and small.verdict == "FAIL"
    assert not small.within_spread
    # a point that passes is never "within the spread"
    assert not any(p.within_spread for p in points.values() if p.verdict == "pass")
    # rounds apart: Postbox's fastest above Open MPI's slowest
    apart = []
    for k, scale in enumerate((1.5, 1.6, 1.7)):
        apart += _shapes("postbox", scale=scale, round=k, state="fast")
    for k, scale in enumerate((1.1, 1.2, 1.25)):
        apart += _shapes("openmpi", scale=scale, round=k, state="fast")
    point = {(p.shape, p.test, p.size): p for p in collreport.acceptance_grid(
        collreport.Index(apart))}[(ON4, "gather", 65536)]
    assert point.verdict == "FAIL" and not point.within_spread
    # the page and the part's summary count them
    page = "".join(collreport.grid_html(collreport.Index(records)))
    failed = sum(1 for p in points.values() if p.verdict == "FAIL")
    within = sum(1 for p in points.values() if p.within_spread)
    assert 0 < within < failed
    assert "of the %d that fail, %d within the spread" % (failed, within) in page
    assert page.count("(within the spread)") == within


@pytest.mark.short
def test_grid_missing_points_and_postbox_giving_up():
    records = _shapes("postbox") + _shapes("openmpi", scale=2.0)
    records = [r for r in records if not (r["test"] == "gather" and r["ranks"] == 4
                                          and r["path"] == "on-node" and r["size"] == 8)]
    given_up = _set(records, "postbox", ON4, "alltoall", 4194304, 1.0)
    given_up["gave_up"] = True
    points = {(p.shape, p.test, p.size): p
              for p in collreport.acceptance_grid(collreport.Index(records))}
    assert points[(ON4, "gather", 8)].verdict == "missing"
    # a Postbox point that gave up fails whatever its one call took
    assert points[(ON4, "alltoall", 4194304)].verdict == "FAIL"
    # without another library, every point is missing
    alone = collreport.acceptance_grid(collreport.Index(_shapes("postbox")))
    assert {p.verdict for p in alone} == {"missing"}


# ---- self-consistency ----------------------------------------------------------

@pytest.mark.short
def test_consistency_lists_every_violation():
    records = coll_records("mpich", 4)
    # a Bcast of 4 MB faster than a Scatter and an Allgather of 1 MB blocks
    _set(records, "mpich", ON4, "bcast", 4194304, 2000.0)
    index = collreport.Index(records)
    violations, checked = collreport.consistency(index)
    assert violations == []
    # Allreduce(m) <= Reduce(m) + Bcast(m) at each of the 6 sizes; Barrier once;
    # Bcast(m) only at m = 4 MB, whose 1 MB blocks were measured (the blocks of
    # the other sizes, m / 4, were not)
    assert checked[collreport.RULES[0]] == 6 and checked[collreport.RULES[1]] == 1
    assert checked[collreport.RULES[2]] == 1

    _set(records, "mpich", ON4, "allreduce", 1024, 100.0)  # > reduce 3.024 + bcast 3.024
    _set(records, "mpich", ON4, "barrier", 0, 50.0)  # > allreduce(4 B) 2.004
    _set(records, "mpich", ON4, "bcast", 4194304, 1e6)  # > scatter(1M) + allgather(1M)
    violations, _ = collreport.consistency(collreport.Index(records))
    found = {(v.rule, v.size) for v in violations}
    assert found == {(collreport.RULES[0], 1024), (collreport.RULES[1], 0),
                     (collreport.RULES[2], 4194304)}
    barrier = next(v for v in violations if v.rule == collreport.RULES[1])
    assert barrier.lhs == 50.0 and barrier.rhs == pytest.approx(2.004)
    assert barrier.factor == pytest.approx(50.0 / 2.004)


@pytest.mark.short
def test_consistency_skips_a_right_side_that_gave_up():
    records = coll_records("mpich", 2)
    _set(records, "mpich", ON2, "allreduce", 1024, 100.0)
    violations, checked = collreport.consistency(collreport.Index(records))
    assert [(v.rule, v.size) for v in violations] == [(collreport.RULES[0], 1024)]
    _set(records, "mpich", ON2, "reduce", 1024, 3.0)["gave_up"] = True
    violations, later = collreport.consistency(collreport.Index(records))
    assert violations == [] and later[collreport.RULES[0]] == checked[collreport.RULES[0]] - 1


@pytest.mark.short
def test_consistency_bcast_uses_blocks_of_m_over_p():
    records = coll_records("openmpi", 2, sizes=(4, 8, 2048, 4096))
    index = collreport.Index(records)
    _, checked = collreport.consistency(index)
    # 2 ranks: Bcast(8) against 4-byte blocks and Bcast(4096) against 2 KB
    # blocks; the blocks of Bcast(4) and Bcast(2048), 2 B and 1 KB, were not measured
    assert checked[collreport.RULES[2]] == 2


# ---- Table 2, the Allreduce reference -----------------------------------------

@pytest.mark.short
def test_table2_bandwidth_and_ratio():
    records = (coll_records("postbox", 4)
               + coll_records("postbox", 4, path="network", nodes=2, scale=10.0))
    index = collreport.Index(records)
    size, on, off = collreport.table2_bandwidth(index, "postbox", "gather", ON4, TWO4)
    assert size == 4194304
    # the root's buffer: 4 blocks of 4 MB over (2 + 4194.304) us; off-node 10x slower
    assert on == pytest.approx(4 * 4194304 / 4196.304)
    assert off == pytest.approx(on / 10)
    html = "".join(collreport.table2_html(index))
    assert "<td>0.10</td>" in html  # off-node / on-node
    _, on, _ = collreport.table2_bandwidth(index, "postbox", "bcast", ON4, TWO4)
    assert on == pytest.approx(4194304 / 4196.304)
    assert collreport.table2_bandwidth(index, "postbox", "gather", ON4,
                                       collreport.Shape(True, 8)) == (None, None, None)
    # the paper's 13 rows, as typed from its Table 2
    assert len(collreport.SEED_TABLE2) == 13
    assert collreport.SEED_TABLE2["scan"] == (87.0, 95.0, 1.09)


@pytest.mark.short
def test_allreduce_against_memcpy_plus_vector_add():
    records = _shapes("postbox")
    _set(records, "postbox", ON2, "allreduce", 4194304, 1050.0)
    rows = {(r.library, r.shape): r for r in
            collreport.allreduce_ratios(collreport.Index(records))}
    row = rows[("postbox", ON2)]
    assert (row.memcpy, row.vector_add) == (300.0, 400.0)
    assert row.ratio == pytest.approx(1.5)
    html = "".join(collreport.reference_html(collreport.Index(records)))
    assert '<span class="ok">pass</span>' in html
    _set(records, "postbox", ON2, "allreduce", 4194304, 1051.0)
    html = "".join(collreport.reference_html(collreport.Index(records)))
    assert '<span class="fail">FAIL</span>' in html


@pytest.mark.short
def test_barrier_against_the_floor_round_by_round():
    # two launches of one shape: the floor moves with the launch, the
    # ratio is each round's Barrier over that round's floor
    records = []
    for rnd, (barrier, floor) in enumerate(((6.0, 4.0), (3.0, 2.5))):
        records += coll_records("postbox", ranks=4, tests=("barrier", "floor_barrier"),
                                sizes=(0,), round=rnd)
        for r in records[-4:]:
            if r["test"] in ("barrier", "floor_barrier"):
                r["median"] = barrier if r["test"] == "barrier" else floor
    # floor_barrier is only measured on one node: none across two
    records += coll_records("postbox", ranks=4, path="network", nodes=2, tests=("barrier",),
                            sizes=(0,))
    rows = collreport.floor_rows(collreport.Index(records))
    assert len(rows) == 1
    row = rows[0]
    assert row.shape == collreport.Shape(False, 4) and row.rounds == 2
    assert row.ratio == pytest.approx((6.0 / 4.0 + 3.0 / 2.5) / 2)
    assert (row.barrier, row.floor) == (pytest.approx(4.5), pytest.approx(3.25))
    html = "".join(collreport.floor_html(collreport.Index(records)))
    assert "floor_barrier" in html and "1.35" in html
    assert collreport.floor_html(collreport.Index(_shapes("postbox"))) == []


@pytest.mark.short
def test_grid_says_when_the_barrier_limit_is_below_the_floor():
    records = _shapes("postbox") + _shapes("openmpi")
    records += coll_records("postbox", ranks=4, tests=("floor_barrier",), sizes=(0,))
    _set(records, "postbox", ON4, "barrier", 0, 4.0)
    _set(records, "openmpi", ON4, "barrier", 0, 4.0)  # limit 0.77 * 4.0 = 3.08
    for floor, noted in ((3.5, True), (3.0, False)):
        _set(records, "postbox", ON4, "floor_barrier", 0, floor)
        index = collreport.Index(records)
        point = next(p for p in collreport.acceptance_grid(index)
                     if p.shape == ON4 and p.test == "barrier")
        assert point.verdict == "FAIL"
        assert ("below the node's floor" in collreport.below_floor(index, point)) == noted
    _set(records, "postbox", ON4, "barrier", 0, 3.0)  # a pass is not annotated
    index = collreport.Index(records)
    point = next(p for p in collreport.acceptance_grid(index)
                 if p.shape == ON4 and p.test == "barrier")
    assert point.verdict == "pass" and collreport.below_floor(index, point) == ""


@pytest.mark.short
def test_grid_summary_of_the_part(tmp_path):
    jsonl = tmp_path / "coll.jsonl"
    assert collbench.grid_summary(jsonl) is None
    records = _shapes("postbox") + _shapes("openmpi")
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    # equal times: the 14 points with the 0.77x limit fail (2 shapes x (Barrier,
    # Bcast, Reduce, Allreduce at 8 B and 1 KB, Barrier once)), the rest pass;
    # one round each, equal: 1.0 > 0.77 x 1.0, none within the spread
    summary = ("acceptance grid: 94 of 108 points pass, 0 of the 14 that fail within the "
               "rounds' spread")
    assert collbench.grid_summary(jsonl) == summary
    verdict, text = collbench.detail(collbench.Outcome(built=["postbox"], runs=3), jsonl)
    assert verdict == "ok" and text == "built: postbox; " + summary
    # every point passing: nothing to say of failures
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in
                             _shapes("postbox") + _shapes("openmpi", scale=2.0)))
    assert collbench.grid_summary(jsonl) == "acceptance grid: 108 of 108 points pass"


# ---- the page ------------------------------------------------------------------

@pytest.mark.short
def test_page_has_the_collective_tables_and_figures(tmp_path):
    records = _shapes("postbox") + _shapes("openmpi", scale=2.0)
    overlap = dict(records[5], test="ibcast", t_ovrl=3.0, t_cpu=2.0, overlap=50.0)
    records.append(overlap)
    _set(records, "openmpi", ON2, "barrier", 0, 100.0)  # a violation to list
    page = report.render(records)
    for text in ("<h2>Collectives</h2>", 'id="coll-acceptance"', 'id="coll-table2"',
                 'id="coll-imb"', 'id="coll-nbc"', 'id="coll-consistency"',
                 'id="coll-allreduce-ref"', "Sistare and Jackson", "Fatoohi",
                 "Barrier &lt;= Allreduce(4 B)"):
        assert text in page, text
    violations, _ = collreport.consistency(collreport.Index(records))
    assert ("openmpi", ON2, collreport.RULES[1]) in {(v.library, v.shape, v.rule)
                                                     for v in violations}
    assert "%d violation(s)" % len(violations) in page
    assert page.count('class="coll-violation"') == len(violations)
    assert page.count('class="coll-point"') == 108
    assert page.count('class="coll-table2-row"') == 13
    names = [figure.name for figure in report.figures(records)]
    assert names == ["coll-fig16-2-1node", "coll-fig16-4-1node", "coll-fig16-4-2nodes"]
    # no generic figures for the coll records
    assert not [name for name in names if name.startswith("coll-bcast")]
    report.write(tmp_path, records)
    assert (tmp_path / "fig-coll-fig16-4-2nodes.svg").exists()


# ---- collbench: shapes, commands, the NBC probe -----------------------------------

def _lib(tmp_path, header, label):
    lib = mpibench.find_in_prefix(fake_wheel_prefix(tmp_path / label, header))
    lib.label = label
    return lib


@pytest.mark.short
def test_shapes_and_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ompi = _lib(tmp_path, "#define OMPI_MAJOR_VERSION 5\n", "openmpi")
    postbox = mpibench.Library("postbox", "build", tmp_path / "postbox-cc",
                               tmp_path / "mpiexec", label="postbox")
    runs = collbench.plan_runs([postbox, ompi], True)
    # shape by shape, round by round, the libraries interleaved in each
    assert [(run.lib.label, run.config.name, run.round) for run in runs] == [
        (label, shape, k) for shape in ("2-ranks-1-node", "4-ranks-1-node", "4-ranks-2-nodes")
        for k in range(collbench.ROUNDS[True]) for label in ("postbox", "openmpi")]
    assert runs[1].name == "coll/openmpi/2-ranks-1-node/round-0"
    full = collbench.plan_runs([ompi], False)
    assert [run.config.name for run in full][-2:] == ["8-ranks-1-node", "8-ranks-2-nodes"]
    assert {run.round for run in full} == {None} and full[0].name == "coll/openmpi/2-ranks-1-node"
    # --with-8-ranks: the quick profile also at 8 ranks on one node, last
    eight = collbench.plan_runs([ompi], True, collbench.shapes(True, True))
    assert [run.config.name for run in eight][-collbench.ROUNDS[True]:] == \
        ["8-ranks-1-node"] * collbench.ROUNDS[True]
    assert collbench.shapes(True) == collbench.CONFIGS[True]
    assert collbench.shapes(False, True) == collbench.CONFIGS[False]
    jsonl = tmp_path / "coll.jsonl"
    argv = collbench.run_command(postbox, collbench.Config(4, True), jsonl, True,
                                 is_root=False)
    assert argv[:5] == [str(tmp_path / "mpiexec"), "--nodes", "2", "-n", "4"]
    assert argv[argv.index("--placement") + 1] == "off-node"
    assert argv[argv.index("--path") + 1] == "network"
    assert argv[-5:] == ["--nodes", "2", "--json", str(jsonl), "--quick"]
    argv = collbench.run_command(ompi, collbench.Config(4, True), jsonl, False, is_root=True)
    assert "--allow-run-as-root" in argv and "btl" in argv and "--quick" not in argv
    assert argv[argv.index("--placement") + 1] == "on-node"
    assert argv[argv.index("--transport") + 1] == "tcp"
    assert "--nodes" not in argv[argv.index(str(collbench.build_dir(ompi) / "mpi_coll")):]
    argv = collbench.run_command(ompi, collbench.Config(2), jsonl, True, is_root=False,
                                 round_=1)
    assert argv[argv.index("--path") + 1] == "on-node" and "btl" not in argv
    assert argv[argv.index("--round") + 1] == "1"


@pytest.mark.short
def test_quick_profile_takes_the_newest_of_each_family(tmp_path):
    old = _lib(tmp_path, '#define MPICH_VERSION "4.0.2"\n', "mpich")
    new = _lib(tmp_path, '#define MPICH_VERSION "5.0.2"\n', "mpich-wheel")
    ompi = _lib(tmp_path, "#define OMPI_MAJOR_VERSION 5\n", "openmpi")
    assert [lib.label for lib in mpipart.one_per_family([old, ompi, new])] == \
        ["openmpi", "mpich-wheel"]


@pytest.mark.short
def test_nbc_probe_decides_the_build_flag(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    lib = _lib(tmp_path, '#define MPICH_VERSION "5.0.2"\n', "mpich")

    def linker_without(names):
        def runner(argv, **kwargs):
            assert argv[0] == str(lib.mpicc) and argv[-1].endswith("nbc_probe.c")
            text = "".join("undefined reference to `%s'\n" % name for name in names)
            return subprocess.CompletedProcess(argv, 1 if names else 0, text, None)
        return runner

    assert collbench.has_nbc(lib, linker_without([])) == (True, "links")
    ok, why = collbench.has_nbc(lib, linker_without(["MPI_Ibcast", "MPI_Ialltoall"]))
    assert not ok and why == "missing MPI_Ibcast, MPI_Ialltoall"
    probe = (collbench.build_dir(lib) / "nbc_probe.c").read_text()
    assert all(name in probe for name in collbench.NBC_FUNCTIONS)
    assert "-DHAVE_NBC" in collbench.build_command(lib, True)
    assert "-DHAVE_NBC" not in collbench.build_command(lib, False)


@pytest.mark.short
def test_cli_coll_refuses_options_of_other_parts(capsys):
    assert cli.main(["bench", "--coll", "--mpi"]) == 2
    assert "--coll goes with" in capsys.readouterr().err
    assert cli.main(["bench", "--coll", "--no-coll"]) == 2


# ---- the real program ------------------------------------------------------------

@pytest.mark.slow
def test_real_mpi_coll_against_postbox(tmp_path, monkeypatch, real_build):
    """mpi_coll built with postbox-cc (with -DHAVE_NBC when the probe links)
    and run at 2 ranks: every blocking collective at two sizes, checked."""
    postbox = mpibench.find_postbox()
    if postbox is None:
        built(paths.bin_dir() / "postbox-cc")
        built(paths.bin_dir() / "mpiexec", "run `make` (it links build/bin/mpiexec)")
    postbox.label = "postbox"
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(real_build))
    # collbench's build, probe and run steps all take mpibench's build_dir
    monkeypatch.setattr(mpibench, "build_dir", lambda lib: tmp_path / "build")
    nbc, _ = collbench.has_nbc(postbox)
    ok, message = collbench.build(postbox, nbc)
    assert ok, message
    jsonl = tmp_path / "coll.jsonl"
    argv = collbench.run_command(postbox, collbench.Config(2), jsonl, True, is_root=False,
                                 extra=["--sizes", "8,1K", "--reps-cap-ms", "3",
                                        "--no-probe"])
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=180, start_new_session=True)
    assert done.returncode == 0, done.stdout
    assert collbench.DONE_MARKER + " 0" in done.stdout
    assert "t_min[us]" in done.stdout and "ref_vector_add" in done.stdout
    records = results.load_jsonl(jsonl)
    seen = {(r["test"], r["size"]) for r in records}
    blocking = [name for name in ("barrier", "bcast", "reduce", "allreduce", "gather",
                                  "gatherv", "scatter", "scatterv", "allgather", "allgatherv",
                                  "alltoall", "alltoallv", "reduce_scatter",
                                  "reduce_scatter_block", "scan", "exscan")]
    for test in blocking:
        for size in ((0,) if test == "barrier" else (8, 1024)):
            assert (test, size) in seen, (test, size)
    assert ("ref_memcpy", 4194304) in seen and ("ref_vector_add", 4194304) in seen
    assert ("floor_barrier", 0) in seen  # one node: the barrier's floor
    assert any(r["test"] == "ibcast" for r in records) == nbc
    for record in records:
        assert results.missing_keys(record) == []
        assert record["suite"] == "coll" and record["library"] == "postbox"
        assert record["ranks"] == 2 and record["path"] == "on-node"
        assert record["median"] > 0
        if not record["test"].startswith("ref_"):
            assert record["checked"] is True and record["sync"] == "dissemination"
            assert 0 < record["t_min"] <= record["t_avg"] <= record["t_max"]
            assert record["calls"] >= 4
