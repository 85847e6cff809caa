"""Reading results and judging the acceptance ratios (`postbox bench --check`)."""

import pytest

from postbox import results
from samples import record, sample_records, write_jsonl

pytestmark = pytest.mark.short


def test_ratios_are_the_records_with_metric_ratio():
    found = results.ratios(sample_records())
    assert set(found) == {"ratio_pingpong_put_64_vs_cacheline", "ratio_put_4MB_vs_memcpy"}


def test_check_passes_within_limits():
    verdicts = results.check(sample_records())
    assert [v.ok for v in verdicts] == [True, True]


@pytest.mark.parametrize("name, value, ok", [
    ("ratio_pingpong_put_64_vs_cacheline", 1.5, True),
    ("ratio_pingpong_put_64_vs_cacheline", 1.51, False),
    ("ratio_put_4MB_vs_memcpy", 0.8, True),
    ("ratio_put_4MB_vs_memcpy", 0.79, False),
])
def test_check_limits(name, value, ok):
    records = [r for r in sample_records() if r["test"] != name]
    records.append(record(test=name, metric="ratio", unit="x", median=value))
    verdict = {v.limit.name: v for v in results.check(records)}[name]
    assert verdict.ok is ok
    assert ("FAIL" in verdict.describe()) is not ok


def test_missing_ratio_fails_the_check():
    records = [r for r in sample_records() if r["metric"] != "ratio"]
    verdicts = results.check(records)
    assert not any(v.ok for v in verdicts)
    assert "missing" in verdicts[0].describe()


def test_last_ratio_record_wins():
    records = sample_records() + [record(test="ratio_put_4MB_vs_memcpy", metric="ratio",
                                         median=0.1)]
    assert results.ratios(records)["ratio_put_4MB_vs_memcpy"]["median"] == 0.1


def test_format_ratios_lists_every_ratio():
    records = sample_records() + [record(test="ratio_other", metric="ratio", median=2.0,
                                         settled=False)]
    text = results.format_ratios(records)
    assert "ratio_pingpong_put_64_vs_cacheline" in text
    assert "ratio_other" in text and "(unsettled)" in text


def test_load_dir_reads_every_jsonl(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [record(test="a")])
    write_jsonl(tmp_path / "b.jsonl", [record(test="b"), record(test="c")])
    (tmp_path / "notes.txt").write_text("not results")
    assert [r["test"] for r in results.load_dir(tmp_path)] == ["a", "b", "c"]


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "rsm.jsonl"
    path.write_text('{"test": "put"}\n\n{broken\n')
    with pytest.raises(results.ResultsError, match=r"rsm.jsonl:3"):
        results.load_jsonl(path)


def test_settled_defaults_to_true():
    assert results.is_settled({})
    assert not results.is_settled({"settled": False})
    assert results.missing_keys(record()) == []
    assert results.missing_keys({"suite": "x"})[0] == "test"
