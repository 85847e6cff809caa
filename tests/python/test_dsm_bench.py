"""The DSM bench's pieces (python/postbox/dsmbench.py, dsmreport.py): the
plan of runs, the commands, the parsing of the applications' result lines
and the DSM's statistics lines, the run records, the summaries, issue 17's
acceptance lines and the report's section and figures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import run_cli
from postbox import dsmbench, dsmreport, report, results
from postbox.dsmreport import SEQUENTIAL, Config

STATS_LINE = ("postbox-dsm-stats: process={p} processes=2 node={p} nodes=2 lifetime_us={life} "
              "read_faults=3 write_faults=4 page_fetches=5 diffs=6 diff_runs=7 diff_bytes=80 "
              "invalidations=9 lock_acquires=2 barriers=1 messages_page=5 bytes_page=20480 "
              "round_trips_page=5 round_trip_ns_page=500000 messages_diff=6 bytes_diff=80 "
              "round_trips_diff=0 round_trip_ns_diff=0 messages_lock=4 bytes_lock=160 "
              "round_trips_lock=4 round_trip_ns_lock=100000 messages_barrier=0 bytes_barrier=0 "
              "round_trips_barrier=0 round_trip_ns_barrier=0 messages_alloc=0 bytes_alloc=0 "
              "round_trips_alloc=0 round_trip_ns_alloc=0 messages_thread=1 bytes_thread=100 "
              "round_trips_thread=1 round_trip_ns_thread=0")


# ---- the plan and the commands --------------------------------------------------

def test_quick_plan_interleaves_every_configuration_round_by_round():
    plan = dsmbench.plan_runs(quick=True, apps=("matmult", "sor"))
    configs = dsmbench.configs(True)
    assert [c.name for c in configs] == ["pthreads-t1", "pthreads-t2", "dsm-p1-n1-t1",
                                         "dsm-p2-n1-t2", "dsm-p2-n2-t2"]
    assert len(plan) == dsmbench.ROUNDS[True] * 2 * len(configs)
    for k in range(dsmbench.ROUNDS[True]):
        runs = [r for r in plan if r.round == k]
        assert sorted((r.app, r.config) for r in runs) == sorted(
            (a, c) for a in ("matmult", "sor") for c in configs)
        # the applications one after the other, the configurations reversed in odd rounds
        first = [r.config for r in runs if r.app == "matmult"]
        assert first == (configs if k % 2 == 0 else list(reversed(configs)))
        assert [r.app for r in runs] == ["matmult"] * len(configs) + ["sor"] * len(configs)
    # the rounds in order
    assert [r.round for r in plan] == sorted(r.round for r in plan)


def test_full_plan_adds_four_processes_on_both_shapes_and_four_threads():
    names = {c.name for c in dsmbench.configs(False)}
    assert {"dsm-p4-n1-t4", "dsm-p4-n2-t4", "pthreads-t4", "dsm-p2-n2-t2"} <= names
    assert "dsm-p1-n2-t1" not in names  # one process cannot span two nodes
    assert len(dsmbench.plan_runs(False, apps=("fft",), rounds=3)) == 3 * len(names)
    # threads per process multiply the DSM's threads, not the pthreads runs'
    doubled = {c.name for c in dsmbench.configs(True, threads_per_process=2)}
    assert {"pthreads-t1", "pthreads-t2", "dsm-p1-n1-t2", "dsm-p2-n2-t4"} <= doubled


@pytest.fixture
def fake_build(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("postbox", "matmult-pthreads", "matmult-dsm", "postbox-dsm-rtt"):
        path = bin_dir / name
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path))
    return bin_dir


def test_commands(fake_build, tmp_path):
    seq = dsmbench.Run("matmult", SEQUENTIAL, 0)
    argv, env = dsmbench.run_command(seq, quick=True)
    assert argv == [str(fake_build / "matmult-pthreads"), "-p", "1"] and env == {}
    off = dsmbench.Run("matmult", Config("dsm", 2, 2, 2), 1)
    argv, env = dsmbench.run_command(off, quick=True)
    assert argv[:6] == [str(fake_build / "postbox"), "run", "-n", "2", "--nodes", "2"]
    assert argv[-3:] == [str(fake_build / "matmult-dsm"), "-p", "2"]
    assert env == {"POSTBOX_DSM_STATS": "1"}
    on = dsmbench.Run("matmult", Config("dsm", 2, 1, 4), 1)
    argv, _ = dsmbench.run_command(on, quick=False)
    assert "--nodes" not in argv
    assert argv[argv.index("-p") + 1] == "4"
    sizes = list(dsmbench.BENCH_SIZES["matmult"])
    assert argv[-len(sizes):] == sizes
    rtt = dsmbench.rtt_command(tmp_path, quick=True)
    assert rtt[1:6] == ["run", "-n", "2", "--nodes", "2"]
    assert rtt[-3:] == ["--json", str(tmp_path / "dsm.jsonl"), "--quick"]
    with pytest.raises(dsmbench.paths.MissingProgram):
        dsmbench.run_command(dsmbench.Run("sor", SEQUENTIAL, 0), quick=True)


# ---- parsing --------------------------------------------------------------------------

def test_result_line_is_parsed_and_the_last_one_wins():
    text = ("noise\napp=matmult threads=2 n=128 blocks=8 time_us=3544 verified=1\n"
            "app=matmult threads=2 n=256 blocks=8 time_us=99 verified=0\n")
    got = dsmreport.parse_result_line(text)
    assert got == {"app": "matmult", "threads": 2, "time_us": 99, "verified": 0,
                   "params": "n=256 blocks=8"}
    assert dsmreport.parse_result_line("app=x threads=2 time_us=abc verified=1") is None
    assert dsmreport.parse_result_line("app=x threads=2 time_us=5") is None
    assert dsmreport.parse_result_line("no result here") is None


def test_stats_lines_are_parsed_by_process():
    text = "\n".join(["junk", STATS_LINE.format(p=1, life=2000),
                      "[1] " + STATS_LINE.format(p=0, life=1000), "postbox-dsm-stats: broken"])
    stats = dsmreport.parse_stats_lines(text)
    assert [s["process"] for s in stats] == [0, 1]
    assert stats[0]["lifetime_us"] == 1000 and stats[1]["bytes_page"] == 20480
    t = dsmreport.traffic(stats)
    assert t.processes == 2 and t.lifetime_us == 2000
    assert t.messages["page"] == 10 and t.bytes["lock"] == 320
    assert t.total_messages == 2 * (5 + 6 + 4 + 1)
    assert t.message_size == pytest.approx(2 * (20480 + 80 + 160 + 100) / t.total_messages)
    # 10 round trips of 600 us per process... : (500000 + 100000) ns over 10 per process
    assert t.round_trip_us == pytest.approx(2 * 600000 / 2 / 10 / 1e3)
    sent = 20480 + 80 + 160 + 100
    assert t.bw_mbps == pytest.approx((sent * 8 / 1000 + sent * 8 / 2000) / 2)
    assert t.counters["page_fetches"] == 10
    assert t.waiting_share == pytest.approx(2 * 600 / (2000 * 2))


def _run_record(status=0, stdout="app=matmult threads=2 n=128 time_us=5000 verified=1\n",
                stderr="", config=Config("dsm", 2, 2, 2), app="matmult", rnd=0):
    return dsmbench.run_record(dsmbench.Run(app, config, rnd), status, stdout, stderr, 1.5,
                               quick=True, host="h", timestamp="t")


def test_run_record_of_a_verified_run():
    r = _run_record(stderr=STATS_LINE.format(p=0, life=9000))
    assert r["status"] == "ok" and r["verified"] is True
    assert r["median"] == r["min"] == r["max"] == 5000
    assert (r["suite"], r["test"], r["config"], r["nodes"], r["transport"], r["placement"]) == (
        "dsm", "matmult", "dsm-p2-n2-t2", 2, "tcp", "off-node")
    assert r["params"] == "n=128" and r["dsm_stats"][0]["lifetime_us"] == 9000
    assert not results.missing_keys(r)
    seq = _run_record(config=SEQUENTIAL, stdout="app=matmult threads=1 time_us=7 verified=1")
    assert seq["library"] == "pthreads" and "dsm_stats" not in seq and seq["median"] == 7


@pytest.mark.parametrize("kwargs, error", [
    (dict(status=2, stderr="parmacs: G_MALLOC(9): the DSM has no room left"),
     "exit status 2: parmacs: G_MALLOC(9): the DSM has no room left"),
    (dict(status=None), "timed out"),
    (dict(stdout="app=matmult threads=2 time_us=5 verified=0", stderr="wrong row 3"),
     "not verified: wrong row 3"),
    (dict(stdout="app=sor threads=2 time_us=5 verified=1"), "a result line of sor"),
    (dict(stdout="app=matmult threads=1 time_us=5 verified=1"), "with 1 threads"),
    (dict(stdout="nothing"), "no result line"),
])
def test_run_record_of_a_failed_run(kwargs, error):
    r = _run_record(**kwargs)
    assert r["status"] == "failed" and r["median"] is None and r["verified"] is False
    assert error in r["error"]


# ---- summaries and acceptance ---------------------------------------------------------

def _records(times: dict, rounds: int = 3, app_list=dsmreport.ACCEPTANCE_APPS) -> list:
    """Run records: @times maps a Config to its time in us (the same every round)."""
    out = []
    for k in range(rounds):
        for app in app_list:
            for config, us in times.items():
                stderr = STATS_LINE.format(p=0, life=10000) if config.build == "dsm" else ""
                out.append(_run_record(config=config, app=app, rnd=k, stderr=stderr,
                                       stdout="app=%s threads=%d n=1 time_us=%d verified=1"
                                       % (app, config.threads, us + k)))
    return out


GOOD = {SEQUENTIAL: 100000, Config("pthreads", 1, 1, 2): 60000,
        Config("dsm", 1, 1, 1): 110000, Config("dsm", 2, 1, 2): 70000,
        Config("dsm", 2, 2, 2): 50000}
RTT_OK = {"suite": "dsm", "test": dsmreport.RTT_RATIO_TEST, "metric": "ratio", "median": 1.2,
          "nodes": 2, "dsm_us": 36.0, "raw_tcp_us": 30.0, "target": 1.5, "target_op": "<=",
          "min": 1.05, "max": 1.4, "ratio_of_minima": 1.1}


def test_acceptance_passes_and_fails_on_the_medians():
    records = _records(GOOD) + [RTT_OK]
    summary = dsmreport.summarize(records)
    assert summary.rounds == 3
    assert summary.time("matmult", SEQUENTIAL) == 100001  # median of 100000..100002
    assert summary.speedup("matmult", Config("dsm", 2, 2, 2)) == pytest.approx(100001 / 50001)
    lines = dsmreport.acceptance(summary, records)
    assert len(lines) == 7
    assert [line.verdict for line in lines] == ["pass"] * 7
    assert lines[0].value == pytest.approx(70001 / 60001)
    assert lines[6].detail == ("36 us / 30 us, across 2 nodes; pairs 1.05 to 1.4; fastest over "
                               "fastest 1.1")
    bad = dict(GOOD)
    bad[Config("dsm", 2, 1, 2)] = 80000  # 1.33x pthreads
    bad[Config("dsm", 2, 2, 2)] = 70000  # speedup 1.43
    records = _records(bad) + [dict(RTT_OK, median=1.7)]
    verdicts = [line.verdict for line in dsmreport.acceptance(dsmreport.summarize(records),
                                                              records)]
    assert verdicts == ["FAIL"] * 7


def test_acceptance_missing_without_the_runs():
    lines = dsmreport.acceptance(dsmreport.summarize([]), [])
    assert [line.verdict for line in lines] == ["missing"] * 7


def test_failed_runs_count_for_nothing_and_are_named():
    records = _records(GOOD, rounds=1)
    records.append(_run_record(status=2, stderr="parmacs: LOCK failed (-7)",
                               config=Config("dsm", 2, 2, 2), app="sor"))
    summary = dsmreport.summarize(records)
    cell = summary.cell("sor", Config("dsm", 2, 2, 2))
    assert cell.times == [] and "LOCK failed" in cell.failures[0]
    falls = dict(dsmreport.shortfalls(summary))
    assert "LOCK failed" in falls["SOR"]
    assert "did not run: SOR dsm-p2-n2-t2" in dsmreport.summary_text(records)


def test_shortfalls_explain_a_slow_application_by_its_statistics():
    slow = dict(GOOD)
    slow[Config("dsm", 2, 2, 2)] = 400000
    summary = dsmreport.summarize(_records(slow, rounds=1))
    falls = dict(dsmreport.shortfalls(summary))
    assert set(falls) == {"MATMULT", "WATER-n2", "LU-c"}
    assert "speedup 0.25" in falls["MATMULT"]
    assert "5 page fetches" in falls["MATMULT"] and "round trips" in falls["MATMULT"]


def test_acceptance_records_are_judged_as_ratios():
    records = _records(GOOD) + [RTT_OK]
    made = dsmreport.acceptance_records(dsmreport.summarize(records), records, "h", "t")
    assert len(made) == 6
    found = results.ratios(made)
    limit = results.record_limit(found["speedup_dsm_2procs_2nodes_matmult"])
    assert limit.op == ">=" and limit.bound == dsmreport.LIMIT_SPEEDUP_2_NODES
    assert limit.holds(found["speedup_dsm_2procs_2nodes_matmult"]["median"])
    assert found["ratio_dsm_2procs_vs_pthreads_2threads_lu_contig"]["median"] == \
        pytest.approx(70001 / 60001)


def test_quick_profile_acceptance_is_shown_but_not_judged():
    slow = dict(GOOD)
    slow[Config("dsm", 2, 2, 2)] = 400000  # speedup 0.25: below the limit
    for profile, judged in (("quick", False), ("full", True)):
        records = [dict(r, profile=profile) for r in _records(slow)]
        made = dsmreport.acceptance_records(dsmreport.summarize(records), records)
        found = results.ratios(made)
        speedup = found["speedup_dsm_2procs_2nodes_matmult"]
        assert (results.limit_note(speedup) is None) == judged
        text = results.format_ratios(made)
        line = next(x for x in text.splitlines() if "speedup_dsm_2procs_2nodes_matmult" in x)
        if judged:
            assert line.rstrip().endswith("FAIL")
        else:
            assert "not judged: quick profile" in line and "FAIL" not in text
        page = report.render(made, {}, "t")
        section = "".join(dsmreport.section(records + made, {}))
        assert ("The application lines are not judged here" in section) != judged
        line = dsmreport.summary_text(records)
        assert ("not judged at the quick profile" in line) != judged
        # the round trip is the one line judged (missing here) at the quick profile
        assert line.startswith("acceptance 0/1 judged pass (the 6 application lines"
                               if not judged else "acceptance 3/7 pass")
        assert ("not judged: quick profile" in page) != judged


def test_append_acceptance_writes_to_the_results(tmp_path):
    import json

    jsonl = tmp_path / "dsm.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in _records(GOOD)))
    made = dsmbench.append_acceptance(jsonl)
    assert len(made) == 6
    records = results.load_jsonl(jsonl)
    summaries = [r for r in records if r.get("kind") == "summary"]
    assert len(records) == len(_records(GOOD)) + len(summaries) + 6
    assert len(summaries) == 3 * len(GOOD)  # every application in every configuration
    one = next(r for r in summaries if r["test"] == "matmult" and r["config"] == "dsm-p2-n2-t2")
    assert one["median"] == 50001 and one["reps"] == 3 and one["failed_runs"] == 0
    assert one["speedup"] == pytest.approx(100001 / 50001)
    # the summaries change nothing the report computes from the runs
    again = dsmreport.summarize(records)
    assert again.time("matmult", Config("dsm", 2, 2, 2)) == 50001


def test_detail_fails_when_the_rtt_program_failed(tmp_path):
    outcome = dsmbench.Outcome(runs=10, rtt_failed=True)
    verdict, text = dsmbench.detail(outcome)
    assert verdict == "FAILED" and "postbox-dsm-rtt failed" in text
    verdict, text = dsmbench.detail(dsmbench.Outcome(runs=10, failed=["dsm/sor/x/round-0"]))
    assert verdict == "ok" and "1 of 10 runs failed" in text


# ---- the page ------------------------------------------------------------------------

def _rtt_records():
    out = [RTT_OK]
    for test, sizes, base in (("raw_tcp_request_reply", (64, 4096), 30.0),
                              ("raw_udp_request_reply", (64, 4096), 25.0),
                              ("dsm_page_fetch", (4096,), 36.0),
                              ("dsm_lock_pair", (40,), 60.0)):
        for size in sizes:
            out.append({"suite": "dsm", "test": test, "size": size, "nodes": 2,
                        "median": base + size / 4096, "min": base, "max": base + 2,
                        "metric": "round_trip", "unit": "us"})
    return out


def test_section_and_figures():
    failed = _run_record(status=2, stderr="boom", config=Config("dsm", 2, 2, 2), app="sor")
    records = _records(GOOD) + _rtt_records() + [failed]
    page = "\n".join(dsmreport.section(records))
    assert "Distributed shared memory" in page
    # the quick profile's runs: the six application lines are shown, not judged
    assert page.count('<span class="ok">pass</span>') == 1
    assert page.count("<td class=\"text\">not judged</td>") == 6
    full = "\n".join(dsmreport.section([dict(r, profile="full") for r in records]))
    assert full.count('<span class="ok">pass</span>') == 7
    assert "Seed 004 Table 3" in page and "4945.5" not in page  # FFT did not run
    assert "4385.7" in page  # MATMULT's seed message size beside its own
    assert 'class="fail" colspan="2">failed' in page and "boom" in page
    assert "Get Page" in page and "raw_udp_request_reply" in page
    figs = {f.name: f for f in dsmreport.figures(records)}
    assert [s.label for s in figs["dsm-fig13"].series] == [
        "raw UDP", "raw TCP", "DSM page fetch", "DSM lock + unlock (2 requests)"]
    assert figs["dsm-fig13"].series[2].points == [(4096.0, 37.0, True)]
    speedup = figs["dsm-speedup-2node"].series[0]
    assert speedup.points == [(1.0, pytest.approx(100001 / 110001), True),
                              (2.0, pytest.approx(100001 / 50001), True)]
    assert dsmreport.section([]) == []


def test_the_report_page_takes_the_section_and_keeps_the_runs_out_of_other_figures(tmp_path):
    records = _records(GOOD, rounds=1) + _rtt_records()
    page = report.render(records)
    assert "Distributed shared memory (issue 17)" in page
    names = [f.name for f in report.figures(records)]
    assert "dsm-fig13" in names
    assert not any(name.startswith("dsm-matmult") for name in names)


def test_cli_refuses_dsm_with_other_parts_and_bad_thread_counts():
    result = run_cli("bench", "--dsm", "--rma")
    assert result.returncode == 2 and "--dsm goes with --quick, --out" in result.stderr
    result = run_cli("bench", "--dsm", "--dsm-threads", "0")
    assert result.returncode == 2 and "--dsm-threads wants 1 to 64" in result.stderr


# ---- the links sub-part (seed 004's Figs. 3-12) ---------------------------------------

def test_quick_link_plan_runs_every_application_on_every_link_round_by_round():
    plan = dsmbench.plan_link_runs(True, apps=("matmult", "sor"), rounds=2, delay="50us")
    assert len(plan) == 2 * 2 * len(dsmbench.LINK_RATES)
    first = [(r.app, r.link.option, r.config.name, r.sizes) for r in plan if r.round == 0]
    assert first == [(app, rate + ",50us", "dsm-p2-n2-t2", "ci") for app in ("matmult", "sor")
                     for rate in ("10mbit", "100mbit", "1gbit")]
    # odd rounds reverse each application's order; no reference runs: the
    # main plan's sequential runs are at the same (CI) sizes
    second = [r.link.option for r in plan if r.round == 1 and r.app == "matmult"]
    assert second == ["1gbit,50us", "100mbit,50us", "10mbit,50us"]
    assert all(r.link is not None for r in plan)
    assert plan[0].name == "dsm/links/10mbit,50us/matmult/dsm-p2-n2-t2/ci/round-0"


def test_quick_link_plan_defaults_to_the_acceptance_applications_in_one_round():
    plan = dsmbench.plan_link_runs(True)
    assert sorted({r.app for r in plan}) == sorted(dsmbench.LINK_QUICK_APPS)
    assert {r.round for r in plan} == {0}
    assert len(plan) == len(dsmbench.LINK_QUICK_APPS) * len(dsmbench.LINK_RATES)
    assert {r.app for r in dsmbench.plan_link_runs(False, rounds=1)} == set(dsmbench.APPS)


def test_full_link_plan_adds_references_at_the_ci_sizes_and_bench_sizes_on_fast_links():
    plan = dsmbench.plan_link_runs(False, apps=("fft",), rounds=1)
    refs = [r for r in plan if r.link is None]
    assert [(r.config, r.sizes) for r in refs] == [(SEQUENTIAL, "ci")]
    cases = {(r.link.option, r.sizes, r.config.processes) for r in plan if r.link is not None}
    assert cases == {(rate, "ci", p) for rate in dsmbench.LINK_RATES for p in (2, 4)} | \
        {(rate, "bench", p) for rate in ("100mbit", "1gbit") for p in (2, 4)}
    assert len(plan) == 1 + len(cases)
    assert plan[0].link is None and plan[0].name == "dsm/links/reference/fft/pthreads-t1/ci/round-0"


def test_link_commands(fake_build):
    link = dsmbench.linkbench.Link("100mbit", "50us")
    run = dsmbench.LinkRun("matmult", Config("dsm", 2, 2, 2), link, "bench", 0)
    argv, env = dsmbench.link_command(run, quick=False)
    assert argv[:10] == [str(fake_build / "postbox"), "run", "-n", "2", "--nodes", "2",
                         "--netns", "--link", "100mbit,50us", "--timeout"]
    sizes = list(dsmbench.BENCH_SIZES["matmult"])
    assert argv[-3 - len(sizes):] == [str(fake_build / "matmult-dsm"), "-p", "2"] + sizes
    assert env == {"POSTBOX_DSM_STATS": "1"}
    ci = dsmbench.LinkRun("matmult", Config("dsm", 2, 2, 2), link, "ci", 0)
    assert dsmbench.link_command(ci, quick=False)[0][-1] == "2"  # no size options
    ref = dsmbench.LinkRun("matmult", SEQUENTIAL, None, "ci", 0)
    assert dsmbench.link_command(ref, quick=False) == (
        [str(fake_build / "matmult-pthreads"), "-p", "1"], {})


def _link_record(app="matmult", config=Config("dsm", 2, 2, 2), link="100mbit", sizes="ci",
                 us=20000, rnd=0, params="n=1", status=0):
    run = dsmbench.LinkRun(app, config, dsmbench.linkbench.Link(link) if link else None,
                           sizes, rnd)
    return dsmbench.link_record(run, status, "app=%s threads=%d %s time_us=%d verified=1"
                                % (app, config.threads, params, us), "", 1.0, quick=True,
                                host="h", timestamp="t")


def test_link_records_are_tagged_and_stay_out_of_the_unshaped_tables():
    r = _link_record(link="10mbit")
    assert (r["link"], r["link_rate"], r["link_delay_us"], r["link_sizes"]) == (
        "10mbit", 10 ** 7, 0, "ci")
    assert r["status"] == "ok" and r["kind"] == "run" and not results.missing_keys(r)
    ref = _link_record(config=SEQUENTIAL, link=None, params="n=2")
    assert ref["link"] is None and ref["link_sizes"] == "ci"
    plain = _records(GOOD)
    mixed = plain + [r, ref, _link_record(config=Config("dsm", 2, 2, 2), us=1)]
    assert dsmreport.summarize(mixed).cells.keys() == dsmreport.summarize(plain).cells.keys()
    assert dsmreport.summarize(mixed).time("matmult", Config("dsm", 2, 2, 2)) == 50001
    assert dsmreport.is_link_run(r) and not dsmreport.is_app_run(r)


def _link_records() -> list:
    """The unshaped runs (GOOD, params n=1), the links sub-part's CI-size
    runs (n=1) on three links and its bench-size runs (n=2) on one, with
    their sequential reference (n=2: the main plan ran n=1 only)."""
    out = _records(GOOD)
    for k in range(3):
        for app in dsmreport.ACCEPTANCE_APPS:
            for link, us in (("10mbit", 400000), ("100mbit", 100000), ("1gbit", 60000)):
                out.append(_link_record(app=app, link=link, us=us + k, rnd=k))
            out.append(_link_record(app=app, link="1gbit", sizes="bench", us=500000, rnd=k,
                                    params="n=2"))
            out.append(_link_record(app=app, config=SEQUENTIAL, link=None, sizes="bench",
                                    us=800000 + k, rnd=k, params="n=2"))
    out.append(_link_record(app="sor", link="10mbit", status=2))
    return out


def test_link_speedups_are_against_the_sequential_runs_at_the_same_size():
    summary = dsmreport.summarize_links(_link_records())
    dsm2 = Config("dsm", 2, 2, 2)
    case = {(c.link, c.sizes): c for c in summary.cases}
    assert summary.rounds == 3
    assert summary.speedup("matmult", case["10mbit", "ci"], dsm2) == pytest.approx(
        100001 / 400001)  # the main plan's sequential median
    assert summary.speedup("matmult", case["1gbit", "bench"], dsm2) == pytest.approx(
        800001 / 500000)  # the sub-part's reference at n=2
    # the unshaped speedup beside, only at the sizes the main plan ran
    assert summary.loopback("matmult", dsm2, "n=1") == pytest.approx(100001 / 50001)
    assert summary.loopback("matmult", dsm2, "n=2") is None
    failed = summary.cell("sor", case["10mbit", "ci"], dsm2)
    assert failed.times == [] and "exit status 2" in failed.failures[0]
    made = dsmreport.link_summary_records(summary, "h", "t")
    one = next(r for r in made if r["test"] == "matmult" and r["link"] == "100mbit")
    assert one["kind"] == "link_summary" and one["median"] == 100001 and one["reps"] == 3
    assert one["speedup"] == pytest.approx(100001 / 100001)
    assert one["loopback_speedup"] == pytest.approx(100001 / 50001)
    assert one["sequential_us"] == 100001 and one["link_rate"] == 10 ** 8
    assert not results.missing_keys(one)
    assert len(made) == 3 * 4 + 1  # 3 applications on 4 cases, SOR's failed cell


def test_append_link_summary_writes_to_the_results(tmp_path):
    import json

    jsonl = tmp_path / "dsm.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in _link_records()))
    made = dsmbench.append_link_summary(jsonl)
    assert len(made) == 13
    assert sum(1 for r in results.load_jsonl(jsonl) if r.get("kind") == "link_summary") == 13


def test_links_are_skipped_with_the_reason_when_they_cannot_run(tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(dsmbench.linkbench, "unavailable", lambda: "needs root")
    outcome = dsmbench.Outcome(runs=4)
    description = {"runs": []}
    terminal = io.StringIO()
    dsmbench.run_links(tmp_path, True, description, terminal, io.StringIO(), outcome)
    assert outcome.links_unavailable == "--netns --link needs root"
    assert "links: --netns --link needs root; skipped" in terminal.getvalue()
    assert description["dsm_links"] == {"skipped": "--netns --link needs root"}
    verdict, text = dsmbench.detail(outcome)
    assert verdict == "ok" and "links skipped: --netns --link needs root" in text
    page = "\n".join(dsmreport.section(_records(GOOD), description))
    assert "On emulated links" in page and "Not run: --netns --link needs root" in page


def test_links_section_and_figures():
    records = _link_records()
    page = "\n".join(dsmreport.section(records, {"cores": 2, "dsm_links": {
        "no_delay": "no netem"}}))
    assert '<h3 id="dsm-links">On emulated links (seed 004 Figs. 3-12)' in page
    assert "this one machine's 2 cores" in page and "The links have no delay: no netem" in page
    assert "<th>10 Mbit/s (ms)</th>" in page and "<th>1 Gbit/s (ms)</th>" in page
    assert "n=2 (bench size)" in page and 'title="exit status 2' in page
    # MATMULT at CI size: loopback 2.00, 10 Mbit/s 400 ms and speedup 0.25
    assert "<td>2</td><td>400.00</td><td>0.25</td>" in page
    figs = {f.name: f for f in dsmreport.figures(records)}
    fig = figs["dsm-links-matmult"]
    assert fig.seed == "004-fig-6" and fig.xticks == [10.0, 100.0, 1000.0]
    labels = [s.label for s in fig.series]
    assert labels == ["2 procs, CI size", "2 procs, CI size, loopback", "2 procs, bench size"]
    assert [p[:2] for p in fig.series[0].points] == [
        (10.0, pytest.approx(100001 / 400001)), (100.0, pytest.approx(1.0)),
        (1000.0, pytest.approx(100001 / 60001))]
    assert fig.series[1].dashed and fig.series[1].color == fig.series[0].color
    assert fig.series[2].points == [(1000.0, pytest.approx(800001 / 500000), True)]
    assert figs["dsm-links-lu_contig"].seed == "004-fig-3"
    assert "dsm-links-sor" not in figs  # its one run failed: nothing to draw
    # the unshaped figures are the unshaped runs' alone
    assert figs["dsm-speedup-2node"].series[0].points[-1] == (
        2.0, pytest.approx(100001 / 50001), True)


def test_the_report_page_lists_the_redrawn_figures_by_seed():
    page = report.render(_link_records())
    assert "On emulated links" in page
    assert 'href="#seed004-fig-6"' in page and 'id="seed004-fig-3"' in page
