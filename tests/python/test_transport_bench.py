"""Part transports of `postbox bench` (transportbench, transportreport):
the commands, the records re-tagged, the skip, the report's table; and
one real run when the build is there."""

from __future__ import annotations

import io
import json
import subprocess

import pytest

from conftest import built
from postbox import paths, report, transportbench, transportreport


def record(transport, test, size, median, round_):
    return {"suite": "transports", "test": test, "library": "postbox", "transport": transport,
            "size": size, "median": median, "round": round_, "metric": "latency", "unit": "us"}


def test_command_sets_the_transport_and_tags_the_records():
    argv = transportbench.command("ofi", ("POSTBOX_OFI_PROVIDER=tcp;ofi_rxm",), 2,
                                  paths.repo_root() / "x.jsonl")
    text = " ".join(argv)
    assert "-n 2 --nodes 2" in text and "-x POSTBOX_TRANSPORT=ofi" in text
    assert "-x POSTBOX_OFI_PROVIDER=tcp;ofi_rxm" in text
    assert "--transport ofi" in text and "--round 2" in text and "--sizes 8,4M" in text


def test_section_gives_medians_of_rounds_and_the_ratio():
    records = [record("tcp", "pingpong_standard", 8, v, r) for r, v in enumerate((10, 12, 30))]
    records += [record("ofi", "pingpong_standard", 8, v, r) for r, v in enumerate((20, 24, 1))]
    records += [record("tcp", "bandwidth_uni", 4194304, 1000, 1),
                record("ofi", "bandwidth_uni", 4194304, 500, 1)]
    table = transportreport.medians(records)
    assert table[("tcp", "pingpong_standard", 8)] == (12.0, 3)
    assert table[("ofi", "pingpong_standard", 8)] == (20.0, 3)
    html = "\n".join(transportreport.section(records))
    assert '<h3 id="transports">' in html
    assert '<td title="3 rounds">12</td><td title="3 rounds">20</td><td>1.67</td>' in html
    assert "<td>0.5</td>" in html
    assert transportreport.section([{"suite": "p2p", "median": 1}]) == []
    page = report.render(records)
    assert 'id="transports"' in page


def test_unavailable_transport_is_skipped_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(transportbench, "available",
                        lambda transport: None if transport == "tcp" else "ofi: not built")
    runs = []

    def fake_run(argv, **kwargs):
        out = argv[argv.index("--json") + 1]
        with open(out, "w") as f:
            f.write(json.dumps({"suite": "p2p", "test": "pingpong_standard", "size": 8,
                                "transport": "tcp", "median": 9.5}) + "\n")
        runs.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(transportbench.subprocess, "run", fake_run)
    description: dict = {}
    err = io.StringIO()
    verdict, detail = transportbench.run(tmp_path, True, description, io.StringIO(), err)
    assert verdict == "ok" and "not measured: ofi: ofi: not built" in detail
    assert len(runs) == transportbench.ROUNDS[True]
    saved = [json.loads(line) for line in (tmp_path / "transports.jsonl").read_text().splitlines()]
    assert {r["suite"] for r in saved} == {"transports"} and len(saved) == len(runs)
    assert not list(tmp_path.glob(".transports-*"))
    assert "ofi not measured: ofi: not built" in err.getvalue()


@pytest.mark.slow
def test_real_run_over_tcp_and_ofi(tmp_path):
    built(paths.bin_dir() / transportbench.PROGRAM)
    built(paths.bin_dir() / transportbench.PROBE)
    verdict, detail = transportbench.run(tmp_path, True, {}, io.StringIO(), io.StringIO())
    assert verdict == "ok", detail
    table = transportreport.medians(
        [json.loads(line) for line in (tmp_path / "transports.jsonl").read_text().splitlines()])
    assert ("tcp", "pingpong_standard", 8) in table
    assert ("tcp", "bandwidth_uni", 4194304) in table
