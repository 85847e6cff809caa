"""`postbox report`: a self-contained page with tables and inline SVG plots."""

import re

import pytest

from conftest import run_cli
from postbox import plot, report, results
from samples import net_records, record, rsm_net_records, sample_records, write_jsonl

pytestmark = pytest.mark.short


@pytest.fixture
def results_dir(tmp_path):
    write_jsonl(tmp_path / "rsm.jsonl", sample_records())
    return tmp_path


def test_report_command_writes_index(results_dir):
    result = run_cli("report", results_dir)
    assert result.returncode == 0, result.stderr
    page = results_dir / "index.html"
    assert result.stdout.strip() == str(page)
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert text.rstrip().endswith("</html>")


def test_page_is_self_contained(results_dir):
    text = report.write(results_dir).read_text()
    assert "<script" not in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert "url(" not in text
    assert "@import" not in text


def test_page_has_a_table_per_test(results_dir):
    text = report.write(results_dir).read_text()
    tests = {(r["suite"], r["test"]) for r in sample_records()
             if not r["test"].startswith("call_")}
    assert text.count("<h3 id=\"t-") == len(tests) + 1
    for suite, test in tests:
        assert "%s / %s</h3>" % (suite, test) in text


def test_call_timings_share_one_table(results_dir):
    text = report.write(results_dir).read_text()
    assert "rsm / call_*</h3>" in text
    table = text.split("rsm / call_*</h3>")[1].split("</table>")[0]
    assert table.count("<tr>") == 1 + 12  # header, 3 calls x 4 sizes
    assert ">call_export_publish</td>" in table


def test_figures_follow_the_papers(results_dir):
    titles = [f.title for f in report.figures(sample_records())]
    assert "RSMAPI export-side calls against segment size" in titles
    assert "RSM put and get against message size" in titles
    assert "Ping-pong latency against message size" in titles
    text = report.write(results_dir).read_text()
    assert text.count("<svg") == len(titles)


def test_put_and_get_share_one_plot():
    putget = [f for f in report.figures(sample_records())
              if f.title == "RSM put and get against message size"][0]
    assert sorted(s.label for s in putget.series) == ["get", "put"]
    assert all(len(s.points) == 5 for s in putget.series)


def test_pingpong_plot_has_the_cacheline_reference():
    pingpong = [f for f in report.figures(sample_records())
                if f.title.startswith("Ping-pong")][0]
    assert pingpong.references == [("raw cache line", 0.08)]
    svg = report.svg_plot(pingpong)
    assert "stroke-dasharray" in svg and "raw cache line" in svg


def test_unsettled_records_are_grey(results_dir):
    text = report.write(results_dir).read_text()
    unsettled = [r for r in sample_records() if not r["settled"]]
    assert text.count('<tr class="unsettled">') == len(unsettled)
    assert "(unsettled)</title>" in text
    assert plot.UNSETTLED in text


def test_ratio_verdicts_on_page(tmp_path):
    records = [r for r in sample_records() if r["test"] != "ratio_put_4MB_vs_memcpy"]
    records.append(record(test="ratio_put_4MB_vs_memcpy", metric="ratio", median=0.5))
    text = report.render(records)
    assert '<span class="fail">FAIL</span>' in text
    assert '<span class="ok">ok</span>' in text


def test_rsm_net_figures_and_tcp_ratios(tmp_path):
    write_jsonl(tmp_path / "net.jsonl", net_records())
    write_jsonl(tmp_path / "rsm-net.jsonl", rsm_net_records("loopback", latency_ratio=1.5))
    write_jsonl(tmp_path / "rsm-net-netns.jsonl", rsm_net_records("netns"))
    records = results.load_dir(tmp_path)
    figures = {f.name: f for f in report.figures(records)}
    assert {"rsm-net-latency", "rsm-net-bandwidth", "rsm-net-latency-netns",
            "rsm-net-bandwidth-netns"} <= set(figures)
    latency = figures["rsm-net-latency"]
    assert latency.title == "RSM over tcp against raw TCP/UDP: one-way latency (loopback)"
    assert latency.log and latency.references == [("tcp_signal_pingpong", 29.0)]
    assert [s.label for s in latency.series] == [
        "tcp_put_pingpong", "tcp_get (full round trip)", "tcp_pingpong (raw)",
        "udp_pingpong (raw)"]
    assert "ratio_put_latency_8B = 1.500 (target <= 1.2: FAIL)" in latency.caption
    assert "ratio_put_stream_4MB = 0.930 (target >= 0.9: ok)" in latency.caption
    assert [s.label for s in figures["rsm-net-bandwidth-netns"].series] == [
        "tcp_put_stream", "tcp_stream (raw)"]
    # postbox-net-bench's figures keep to its own records, and the shm ones too
    assert len(figures["net-latency"].series) == 2
    assert not any(name.startswith("raw-") or name.startswith("rsm-tcp") for name in figures)
    text = report.write(tmp_path).read_text()
    rows = [row for row in text.split("<tr") if "ratio_put_" in row and "<td" in row]
    verdicts = {row.split("</td>")[0].split(">")[-1]: row for row in rows[:4]}
    assert "FAIL" in verdicts["ratio_put_latency_8B [loopback]"]
    assert "&lt;= 1.2" in verdicts["ratio_put_latency_8B [loopback]"]
    assert "ok" in verdicts["ratio_put_latency_8B [netns]"]
    assert "&gt;= 0.9" in verdicts["ratio_put_stream_4MB [netns]"]
    summary = results.format_ratios(records)
    assert "ratio_put_latency_8B [loopback]          1.500  limit <= 1.2  FAIL" in summary
    # --check stays with the shm limits
    assert [v.limit.name for v in results.check(records)] == [
        limit.name for limit in results.LIMITS]


def test_machine_description_shown():
    text = report.render(sample_records(), {"hostname": "node7", "cpu_model": "Test CPU <x>",
                                            "commands": [["postbox-rsm-bench", "--quick"]]})
    assert "node7" in text
    assert "Test CPU &lt;x&gt;" in text
    assert "postbox-rsm-bench --quick" in text


def test_values_are_escaped():
    text = report.render([record(test="<b>evil</b>", library="a&b")])
    assert "<b>evil</b>" not in text
    assert "&lt;b&gt;evil&lt;/b&gt;" in text


def test_plot_of_a_single_point_is_skipped():
    assert report.figures([record(test="put", size=64)]) == []


def test_format_size():
    assert [report.format_size(s) for s in (1, 64, 1024, 4096, 1 << 20, 3 << 30, 1000)] == [
        "1", "64", "1K", "4K", "1M", "3G", "1000"]


def test_seed_contents_orders_by_seed_and_number_and_links_each_heading():
    body = "\n".join([
        '<h3 id="seed002-fig-7">Seed 002 Fig. 7: <em>pair-wise</em></h3>',
        '<h3 id="paper-qian-V">latency</h3>',
        '<h3 id="seed000-fig-12-2">bandwidth, network</h3>',
        '<h3 id="seed000-fig-9">latency under load</h3>',
        '<h3 id="paper-qian-IV">ping-pong</h3>',
        '<h3 id="coll-nbc">not a seed figure</h3>',
    ])
    rows = [line for line in report.seed_contents(body) if line.startswith("<tr><td")]
    anchors = [re.search(r'href="#([^"]+)"', row).group(1) for row in rows]
    assert anchors == ["seed000-fig-9", "seed000-fig-12-2", "paper-qian-IV", "paper-qian-V",
                       "seed002-fig-7"]
    assert "Table IV" in rows[2] and "Fig. 12" in rows[1]
    assert ">Seed 002 Fig. 7: pair-wise<" in rows[4]
    assert report.seed_contents('<h3 id="other">x</h3>') == []


def test_seed_contents_finds_a_section_by_its_div():
    body = '<div id="seed000-table-7">\n<h3>Seed 000 Table VII: LogP</h3><table></table></div>'
    rows = [line for line in report.seed_contents(body) if line.startswith("<tr><td")]
    assert len(rows) == 1 and 'href="#seed000-table-7"' in rows[0] and "Table 7" in rows[0]
