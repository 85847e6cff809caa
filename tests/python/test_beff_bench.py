"""The b_eff and dense bench: beffbench's definition (the 21 sizes, Lmax, the
logarithmic averages, the maximum over the methods, b_eff from per-pattern
records against hand-computed values), the random permutations, densebench's
schedules, the commands and shapes, the report's Table 1 and figures, and a
real build and run of bench/mpi_beff.c against an MPI of this machine."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from itertools import combinations

import pytest

from postbox import beffbench, beffreport, bench, densebench, mpibench, report, results

KIB, MIB = 1 << 10, 1 << 20


# ---- the definition ------------------------------------------------------------

@pytest.mark.short
def test_the_21_sizes():
    # Lmax 1 MiB: a = (1 MiB / 4 KiB)^(1/8) = 2, so the last 8 double
    assert beffbench.message_sizes(MIB) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048,
                                            4096, 8192, 16384, 32768, 65536, 131072, 262144,
                                            524288, 1048576]
    # Lmax 256 KiB: a = 64^(1/8) = 2^0.75 = 1.6818; 4096 a = 6888.6 -> 6889, ...
    sizes = beffbench.message_sizes(256 * KIB)
    assert len(sizes) == 21 and sizes[:13] == [1 << i for i in range(13)]
    assert sizes[13:] == [6889, 11585, 19484, 32768, 55109, 92682, 155872, 262144]
    # Lmax 4 KiB: the last 8 are all 4 KiB
    assert beffbench.message_sizes(4096)[12:] == [4096] * 9
    with pytest.raises(ValueError):
        beffbench.message_sizes(4095)


@pytest.mark.short
def test_lmax():
    # memory per process / 128 (b_eff.c), within [4 KiB, 4 MiB]
    assert beffbench.lmax_for(256 * MIB) == 2 * MIB
    assert beffbench.lmax_for(512 * MIB) == 4 * MIB
    assert beffbench.lmax_for(64 * 1024 * MIB) == 4 * MIB
    assert beffbench.lmax_for(100 * KIB) == 4096
    # the quick profile's documented Lmax
    assert beffbench.lmax_for(64 * 1024 * MIB, quick=True) == 256 * KIB


@pytest.mark.short
def test_logavg_by_hand():
    assert beffbench.logavg([1.0, 100.0]) == pytest.approx(10.0)
    assert beffbench.logavg([4.0]) == pytest.approx(4.0)
    # weights: (ln 2 + 2 ln 8) / 3 = 7/3 ln 2
    assert beffbench.logavg([2.0, 8.0], [1, 2]) == pytest.approx(2 ** (7 / 3))
    with pytest.raises(ValueError):
        beffbench.logavg([])
    with pytest.raises(ValueError):
        beffbench.logavg([1.0, 0.0])


@pytest.mark.short
def test_the_maximum_over_methods():
    assert beffbench.best_method({"sendrecv": 3.0, "alltoallv": 7.5, "nonblocking": 7.0}) == 7.5
    assert beffbench.best_method({"sendrecv": 3.0, "nonblocking": 1.0}) == 3.0


def _pattern(name, rings, randoms, values, lmax=MIB, ranks=4, best="sendrecv", order=None):
    """beff_pattern records of one pattern: @values per size, @best the
    method that reaches it (the others lower)."""
    out = []
    for size, value in zip(beffbench.message_sizes(lmax), values):
        record = {"suite": "beff", "test": "beff_pattern", "library": "postbox",
                  "ranks": ranks, "nodes": 1, "path": "on-node", "size": size,
                  "metric": "bandwidth", "unit": "MB/s", "median": value, "pattern": name,
                  "rings": rings, "randoms": randoms, "lmax": lmax, "settled": True}
        for method in beffbench.METHODS:
            record[method] = value if method == best else value / 2 - 1
        if order is not None:
            record["order"] = order
        out.append(record)
    return out


def beff_records(library="postbox", nodes=1, path="on-node"):
    """A run whose averages are known by hand: the ring patterns are one
    pattern B (weight 6) of mean 10 over the sizes (8 at the first 20, 50 at
    Lmax); the 30 random ones are B (15 of them) and C (15): C's mean 160
    (128, then 800 at Lmax).  rings = 10, random = sqrt(10 * 160) = 40,
    b_eff = sqrt(10 * 40) = 20; at Lmax rings 50, random sqrt(50 * 800) =
    200, both sqrt(50 * 200) = 100."""
    records = (_pattern("ring-1*4fix", 6, 15, [8.0] * 20 + [50.0], best="alltoallv")
               + _pattern("random-2", 0, 15, [128.0] * 20 + [800.0], best="nonblocking",
                          order="2 0 3 1"))
    records += [{"suite": "beff", "test": "pingpong_bandwidth", "library": "postbox",
                 "ranks": 4, "nodes": 1, "path": "on-node", "size": MIB, "median": 123.0,
                 "metric": "bandwidth", "unit": "MB/s", "settled": True},
                {"suite": "beff", "test": "pingpong_latency", "library": "postbox", "ranks": 4,
                 "nodes": 1, "path": "on-node", "size": 1, "median": 1.5, "metric": "latency",
                 "unit": "us", "settled": True}]
    for record in records:
        record.update(library=library, nodes=nodes, path=path)
    return records


@pytest.mark.short
def test_beff_by_hand():
    summary = beffbench.beff_summary(beff_records())
    assert summary is not None and summary.patterns == 2 and summary.lmax == MIB
    assert summary.b_eff == pytest.approx(20.0)
    assert summary.per_process == pytest.approx(5.0)
    assert summary.at_lmax == pytest.approx(100.0)
    assert summary.at_lmax_per_process == pytest.approx(25.0)
    assert summary.rings_at_lmax == pytest.approx(50.0)
    assert summary.rings_at_lmax_per_process == pytest.approx(12.5)
    assert summary.pingpong_bandwidth == 123.0 and summary.pingpong_latency == 1.5


@pytest.mark.short
def test_pattern_rows():
    rows = beffbench.pattern_rows(beff_records())
    assert [(r.name, r.rings, r.randoms) for r in rows] == [("ring-1*4fix", 6, 15),
                                                            ("random-2", 0, 15)]
    assert rows[0].mean == pytest.approx(10.0) and rows[0].at_lmax == 50.0
    assert rows[0].best_at_lmax == "alltoallv" and rows[0].order is None
    assert rows[1].mean == pytest.approx(160.0) and rows[1].best_at_lmax == "nonblocking"
    assert rows[1].order == "2 0 3 1"


@pytest.mark.short
def test_beff_needs_every_size():
    records = [r for r in beff_records() if not (r.get("pattern") == "random-2"
                                                  and r["size"] == 4096)]
    assert beffbench.beff_summary(records) is None
    assert beffbench.beff_summary([]) is None


@pytest.mark.short
def test_random_permutations():
    for ranks in (2, 4, 5, 8, 13):
        orders = beffbench.random_orders(7, ranks)
        assert len(orders) == 30
        assert all(sorted(order) == list(range(ranks)) for order in orders)
        # repeatable: the same seed, the same stream
        assert beffbench.random_orders(7, ranks) == orders
    assert beffbench.random_orders(7, 8) != beffbench.random_orders(8, 8)
    # the stream bench/mpi_beff.c makes with --seed 1 on 4 ranks: its
    # pattern random-2 went through "2 0 3 1"
    assert beffbench.random_orders(1, 4)[1] == [2, 0, 3, 1]


# ---- the dense schedules ---------------------------------------------------------

def _partners_symmetric(step):
    for r, (dest, src) in enumerate(step):
        if dest is None:
            assert src is None
        else:
            assert dest == src and step[dest] == (r, r)


@pytest.mark.short
@pytest.mark.parametrize("ranks", [2, 3, 4, 6, 8, 16])
def test_aapc_every_ordered_pair_once(ranks):
    steps = densebench.schedule("aapc", ranks)
    assert len(steps) == ranks - 1
    seen = []
    for k, step in enumerate(steps, 1):
        # every rank sends once and receives once: r+k and r-k
        assert sorted(dest for dest, _ in step) == list(range(ranks))
        for r, (dest, src) in enumerate(step):
            assert dest == (r + k) % ranks and steps[k - 1][dest][1] == r
            seen.append((r, dest))
    assert sorted(seen) == sorted((a, b) for a in range(ranks) for b in range(ranks) if a != b)


@pytest.mark.short
@pytest.mark.parametrize("ranks", [2, 3, 4, 6, 8, 16])
def test_pairwise_every_pair_once(ranks):
    steps = densebench.schedule("pairwise", ranks)
    pairs = []
    for step in steps:
        _partners_symmetric(step)
        pairs += [(r, dest) for r, (dest, _) in enumerate(step) if dest is not None and r < dest]
        if ranks & (ranks - 1) == 0:
            assert all(dest is not None for dest, _ in step)  # full duplex, nobody idle
    assert sorted(pairs) == list(combinations(range(ranks), 2))


@pytest.mark.short
@pytest.mark.parametrize("ranks", [2, 4, 6, 8])
def test_cumulative_one_more_pair_each_phase(ranks):
    steps = densebench.schedule("cumulative", ranks)
    assert len(steps) == ranks // 2
    for j, step in enumerate(steps, 1):
        _partners_symmetric(step)
        active = [r for r, (dest, _) in enumerate(step) if dest is not None]
        assert len(active) == 2 * j
        assert all(step[i][0] == i + ranks // 2 for i in range(j))
    assert all(dest is not None for dest, _ in steps[-1])


@pytest.mark.short
@pytest.mark.parametrize("ranks", [2, 4, 5, 8])
def test_random_pairs_each_phase(ranks):
    steps = densebench.schedule("random", ranks, seed=3)
    assert len(steps) == ranks - 1
    assert densebench.schedule("random", ranks, seed=3) == steps
    assert len(densebench.schedule("random", ranks, seed=3, random_phases=9)) == 9
    for step in steps:
        _partners_symmetric(step)
        idle = [r for r, (dest, _) in enumerate(step) if dest is None]
        assert len(idle) == ranks % 2
    with pytest.raises(ValueError):
        densebench.phases("ring", 4)


# ---- shapes, commands, the job -----------------------------------------------------

def _postbox(tmp_path):
    return mpibench.Library("postbox", "build", tmp_path / "postbox-cc", tmp_path / "mpiexec",
                            label="postbox")


@pytest.mark.short
def test_shapes_and_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    postbox = _postbox(tmp_path)
    mpich = mpibench.Library("mpich", "system", tmp_path / "mpicc.mpich",
                             tmp_path / "mpiexec.mpich", label="mpich")
    runs = beffbench.plan_runs([postbox, mpich], True)
    assert [(r.lib.label, r.config.name) for r in runs] == [
        ("postbox", "4-ranks-1-node"), ("mpich", "4-ranks-1-node"),
        ("postbox", "4-ranks-2-nodes"), ("mpich", "4-ranks-2-nodes"),
        ("postbox", "4-ranks-4-nodes")]
    assert runs[-1].config.tests == "distance"
    assert len(beffbench.plan_runs([postbox, mpich], False)) == 10
    assert [r.config.name for r in beffbench.plan_runs([postbox], True,
                                                       densebench.CONFIGS[True])] == [
        "4-ranks-1-node", "4-ranks-2-nodes"]
    argv = beffbench.run_command(postbox, beffbench.Config(4, 4), tmp_path / "b.jsonl", True,
                                 is_root=False, lmax=262144)
    text = " ".join(argv)
    assert [argv[i + 1] for i, arg in enumerate(argv) if arg == "--nodes"] == ["4", "4"]
    assert "--tests beff,distance" in text and "--lmax 262144" in text and "--quick" in text
    assert "4 virtual nodes" in argv[argv.index("--path-how") + 1]
    argv = beffbench.run_command(mpich, beffbench.Config(4, 2), tmp_path / "d.jsonl", False,
                                 tests="dense", is_root=False)
    assert "--tests dense" in " ".join(argv) and "--quick" not in argv
    assert "MPIR_CVAR_NOLOCAL" in mpich.run_env(False, beffbench.Config(4, 2).path)


@pytest.mark.short
def test_parts_and_suites():
    assert ("mpi-beff", "beffbench") in bench.MPI_PARTS
    assert ("mpi-dense", "densebench") in bench.MPI_PARTS
    assert bench.suite_parts(["beff"]) == ["mpi-beff"]
    assert bench.suite_parts(["dense", "beff"]) == ["mpi-beff", "mpi-dense"]


@pytest.mark.short
def test_parsing_the_program_output(tmp_path):
    # lines as bench/mpi_beff.c writes them (the engine's JSON lines)
    lines = [dict(r, host="h", timestamp="2026-11-26T22:00:00", state="unknown", reps=1,
                  iters=10, min=r["median"], max=r["median"], transport="shm",
                  placement="on-node", pairs=1, probe_before=None, probe_after=None,
                  mixed_states=False, library_version="Postbox MPI 0.1",
                  oversubscribed=True, seed=1)
             for r in beff_records()]
    path = tmp_path / "beff.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    records = results.load_jsonl(path)
    assert len(records) == len(lines)
    assert list(beffbench.runs_of(records)) == [("postbox", 4, 1, "on-node", None)]
    assert beffbench.summary_text(records) == "b_eff: postbox 4 ranks one node 20 MB/s"
    verdict, text = beffbench.detail(beffbench.Outcome(built=["postbox"], runs=1), path)
    assert verdict == "ok" and "20 MB/s" in text
    verdict, _ = beffbench.detail(beffbench.Outcome(failed=["beff/postbox/4-ranks-1-node"],
                                                    runs=1), path)
    assert verdict == "FAILED"


@pytest.mark.short
def test_dense_detail_gives_the_aapc_spread(tmp_path):
    # dense_records: phase k at 64 KB gives 100 k + 64 MB/s: 364 / 164
    path = tmp_path / "dense.jsonl"
    path.write_text("".join(json.dumps(dict(r, host="h", timestamp="t")) + "\n"
                            for r in dense_records()), encoding="utf-8")
    assert densebench.phase_spread(results.load_jsonl(path)) == [
        ("postbox", 4, "on-node", 65536, pytest.approx(364 / 164))]
    verdict, text = densebench.detail(beffbench.Outcome(built=["postbox"], runs=1), path)
    assert verdict == "ok" and "aapc fastest/slowest phase: postbox 4 ranks on-node 2.2x" in text


# ---- the report ----------------------------------------------------------------------

def dense_records(library="postbox", nodes=1, path="on-node"):
    out = []
    for algorithm in densebench.ALGORITHMS:
        for k, step in enumerate(densebench.schedule(algorithm, 4), 1):
            active = sum(1 for dest, _ in step if dest is not None)
            for size in (1024, 65536):
                out.append({"suite": "dense", "test": densebench.test_name(algorithm),
                            "library": library, "ranks": 4, "nodes": nodes, "path": path,
                            "size": size, "median": 100.0 * k + size / 1024,
                            "metric": "bandwidth", "unit": "MB/s", "phase": k,
                            "active": active, "pairs": active // 2, "settled": True})
    return out


def distance_records(library="postbox", nodes=1, path="on-node"):
    out = []
    for test, distances in (("pingpong_distance", (1, 2, 3)), ("pingping", (1,))):
        for d in distances:
            for size in (1, 1024, 65536):
                out.append({"suite": "beff", "test": test, "library": library, "ranks": 4,
                            "nodes": nodes, "path": path, "size": size,
                            "median": size / (10.0 * d), "metric": "bandwidth",
                            "unit": "MB/s", "distance": d, "same_node": nodes == 1,
                            "settled": True})
    return out


@pytest.mark.short
def test_report_section_and_figures():
    records = []
    for library in ("postbox", "mpich"):
        records += beff_records(library) + distance_records(library) + dense_records(library)
        # Open MPI and MPICH take their network path on this host: nodes 1
        nodes = 2 if library == "postbox" else 1
        records += (distance_records(library, nodes, "network")
                    + dense_records(library, nodes, "network"))
    page = report.render(records)
    assert '<h3 id="seed002-table-1">Seed 002 Table 1' in page
    # the seed's rows beside this machine's, every library
    assert "seed: SGI Altix 3700" in page and "47166" in page and "0.709" in page
    assert "postbox, 4 ranks on one node" in page and "mpich, 4 ranks on one node" in page
    row = page[page.index("postbox, 4 ranks on one node"):]
    row = row[:row.index("</tr>")]
    assert ">20<" in row and ">5<" in row and ">100<" in row and ">50<" in row and ">123<" in row
    assert '<h3 id="beff-patterns">' in page and ">2 0 3 1<" in page
    figures = {f.name: f for f in beffreport.figures(records)}
    for number in (1, 2, 3, 7, 8, 9, 10):
        name = "seed002-fig-%d" % number
        assert name in figures, name
        assert figures[name].title.startswith("Seed 002 Fig. %d:" % number)
        assert '<figure id="%s">' % name in page
        # every library on the same axes
        labels = " ".join(s.label for s in figures[name].series)
        assert "postbox" in labels and "mpich" in labels
    assert "dense-random" in figures
    # Fig. 8's axis is the number of pairs: 1 then 2 on 4 ranks
    assert sorted({p[0] for s in figures["seed002-fig-8"].series for p in s.points}) == [1, 2]
    # the seed's values beside this machine's
    assert ("seed Altix d=1", 1762.0) in figures["seed002-fig-2"].references
    assert "seed Opteron d=2..16" in [label for label, _ in figures["seed002-fig-3"].references]
    # no bench/mpi_beff.c records, no section
    assert "seed002-table-1" not in report.render(distance_records())


@pytest.mark.short
def test_report_marks_an_incomplete_run():
    records = [r for r in beff_records() if r["size"] != 2]
    page = report.render(records)
    assert "incomplete: not every pattern has all 21 sizes" in page


# ---- a real run ------------------------------------------------------------------------

@pytest.mark.slow
def test_real_mpi_beff_against_a_system_mpi(tmp_path, monkeypatch):
    """mpi_beff built with a real mpicc and run at 2 ranks with the smallest
    settings: every test, the 21 sizes, the weights of the 36 patterns."""
    found = mpibench.find_system()
    lib = found[0] if found else None
    if lib is None or shutil.which(str(lib.mpiexec)) is None:
        pytest.skip("no system MPI (mpicc.mpich or mpicc.openmpi)")
    lib.label = lib.family
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ok, message = beffbench.ensure_built(lib)
    assert ok, message
    assert beffbench.ensure_built(lib) == (True, "up to date")
    jsonl = tmp_path / "beff.jsonl"
    argv = beffbench.run_command(lib, beffbench.Config(2), jsonl, True,
                                 tests="beff,distance,dense", is_root=False, lmax=8192,
                                 extra=["--random", "3", "--loop-ms", "0.2", "--sizes", "1K"])
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=180, start_new_session=True,
                          env=dict(os.environ, **lib.run_env(False)))
    assert done.returncode == 0, done.stdout
    assert beffbench.DONE_MARKER + " 0" in done.stdout
    records = results.load_jsonl(jsonl)
    assert all(not results.missing_keys(r) for r in records)
    patterns = [r for r in records if r["test"] == "beff_pattern"]
    # on 2 ranks every pattern is the one ring of two: 6 rings and 3 randoms
    assert {r["pattern"] for r in patterns} == {"ring-1*2fix"}
    assert patterns[0]["rings"] == 6 and patterns[0]["randoms"] == 3
    assert sorted(r["size"] for r in patterns) == sorted(beffbench.message_sizes(8192))
    summary = beffbench.beff_summary(records)
    assert summary is not None and summary.b_eff > 0 and summary.pingpong_latency > 0
    tests = {r["test"] for r in records}
    assert {"pingpong_distance", "pingping", "pingpong_latency", "pingpong_bandwidth"} <= tests
    dense = [r for r in records if r["suite"] == "dense"]
    assert {r["test"] for r in dense} == {densebench.test_name(a) for a in densebench.ALGORITHMS}
    assert all(r["size"] == 1024 and math.isfinite(r["median"]) for r in dense)


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.short
@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK), reason="%s not installed" % CHROMIUM)
def test_section_in_headless_chromium(tmp_path):
    """The page with seed 002's table and figures, as a browser parses it."""
    import re
    import signal

    records = beff_records() + distance_records() + dense_records()
    records += distance_records(nodes=2, path="network") + dense_records(nodes=2, path="network")
    (tmp_path / "beff.jsonl").write_text("".join(
        json.dumps(dict(r, host="h", timestamp="t", state="unknown")) + "\n" for r in records),
        encoding="utf-8")
    page = report.write(tmp_path)
    profile = tmp_path / "chromium-profile"
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--no-first-run", "--disable-dev-shm-usage",
            "--enable-logging=stderr", "--v=0", "--user-data-dir=%s" % profile, "--dump-dom",
            page.resolve().as_uri()]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, errors="replace", start_new_session=True)
    try:
        dom, log = process.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("chromium did not load the page in 90 s")
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(profile, ignore_errors=True)
    assert process.returncode == 0
    assert 'id="seed002-table-1"' in dom
    for number in (1, 2, 3, 7, 8, 9, 10):
        match = re.search(r'<figure id="seed002-fig-%d">.*?<svg[^>]*>(.*?)</svg>' % number,
                          dom, re.S)
        assert match, number
        assert "<path" in match.group(1)
    assert [line for line in log.splitlines() if ":CONSOLE(" in line] == []


@pytest.mark.slow
def test_real_mpi_beff_against_postbox(tmp_path, monkeypatch, real_build):
    """mpi_beff built with postbox-cc and run at 4 ranks across two virtual
    nodes with the smallest settings: b_eff's random patterns are the ones
    beffbench makes, every dense phase of the schedule is there."""
    from conftest import built
    from postbox import paths

    postbox = mpibench.find_postbox()
    if postbox is None:
        built(paths.bin_dir() / "postbox-cc")
        built(paths.bin_dir() / "mpiexec", "run `make` (it links build/bin/mpiexec)")
    postbox.label = "postbox"
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(real_build))
    monkeypatch.setattr(mpibench, "build_dir", lambda lib: tmp_path / "build")
    ok, message = beffbench.ensure_built(postbox)
    assert ok, message
    jsonl = tmp_path / "beff.jsonl"
    argv = beffbench.run_command(postbox, beffbench.Config(4, 2), jsonl, True,
                                 tests="beff,distance,dense", is_root=False, lmax=4096,
                                 extra=["--random", "4", "--loop-ms", "0.1", "--sizes", "1K",
                                        "--seed", "5"])
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=180, start_new_session=True)
    assert done.returncode == 0, done.stdout
    assert beffbench.DONE_MARKER + " 0" in done.stdout
    records = results.load_jsonl(jsonl)
    patterns = {}
    for record in records:
        if record["test"] == "beff_pattern":
            patterns.setdefault(record["pattern"], record)
    assert sum(r["rings"] for r in patterns.values()) == 6
    assert sum(r["randoms"] for r in patterns.values()) == 4
    orders = beffbench.random_orders(5, 4, 4)
    for name, record in patterns.items():
        if "order" in record:
            assert [int(x) for x in record["order"].split()] == orders[int(name[7:]) - 1]
    assert beffbench.beff_summary(records) is not None
    # ranks 0, 1 on the first virtual node, 2, 3 on the second
    near = {r["distance"]: r["same_node"] for r in records if r["test"] == "pingpong_distance"}
    assert near == {1: True, 2: False, 3: False}
    for algorithm in densebench.ALGORITHMS:
        phases = {r["phase"] for r in records if r["test"] == densebench.test_name(algorithm)}
        assert phases == set(range(1, len(densebench.schedule(algorithm, 4)) + 1))
