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
    assert page.count('<span class="ok">pass</span>') == 7
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
