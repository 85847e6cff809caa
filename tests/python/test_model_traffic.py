"""The model of traffic at saturation (postbox.model.saturation_round) on
a synthetic machine with known parameters, against rounds computed by
hand; its validation against synthetic traffic records
(model.validate_traffic); and the report's table of it."""

from __future__ import annotations

import json

import pytest

from postbox import model, model_fit, modelreport, trafficbench
from postbox.loggp import LogGP

pytestmark = pytest.mark.short

US = 1e-6
# on the node o = 1, L = 2, g = 3 us, G = 0.01 us/B; between nodes L = 10
# us, G = 0.02 us/B
NODE = LogGP(L=2 * US, o_s=1 * US, o_r=1 * US, g=3 * US, G=0.01 * US, library="x", path="node")
NET = LogGP(L=10 * US, o_s=1 * US, o_r=1 * US, g=3 * US, G=0.02 * US, library="x", path="net")
MACHINE = model.Machine(node=NODE, net=NET)
M = 100  # bytes: 99 of them priced at G


def neighbor(ranks: int) -> list:
    return trafficbench.destinations("neighbor", ranks)


def round_us(machine, cluster, destinations, size=M, window=model.SEND_SLOTS):
    seconds, bound = model.saturation_round(machine, cluster, destinations, size, window)
    return seconds / US, bound


def test_neighbor_on_one_node_is_one_ranks_work():
    # each rank sends one and receives one node message: max(g, g, o_s +
    # o_r) + (99 / 2 + 99 / 2) G = 3 + 0.99 us; the window 4.99 / 8 is less
    assert round_us(MACHINE, model.Cluster(1, 4), neighbor(4)) == \
        (pytest.approx(3.99), "rank")
    assert model.saturation_bandwidth(MACHINE, model.Cluster(1, 4), neighbor(4), M) == \
        pytest.approx(4 * M / (3.99 * US))


def test_complement_across_two_nodes_is_the_link():
    # 8 ranks on 2 nodes of 4: every message leaves its node, the 4 of a
    # node share its link: 4 x 99 x 0.02 = 7.92 us (one rank: 3 + 1.98)
    cluster = model.Cluster(2, 4)
    complement = trafficbench.destinations("complement", 8)
    assert round_us(MACHINE, cluster, complement) == (pytest.approx(7.92), "link")
    assert model.saturation_bandwidth(MACHINE, cluster, complement, M) == \
        pytest.approx(8 * M / (7.92 * US))


def test_uniform_by_the_expected_counts():
    # 8 ranks on 2 nodes of 4: 3/7 of a rank's messages stay on its node,
    # 4/7 leave; a node's link carries 4 x 4 / 7 messages per round
    cluster = model.Cluster(2, 4)
    rank = 3 + (3 * 0.99 + 4 * 1.98) / 7
    link = 16 / 7 * 1.98
    assert rank > link
    assert round_us(MACHINE, cluster, None) == (pytest.approx(rank), "rank")
    # with a slower net the link decides
    slow = model.Machine(node=NODE, net=LogGP(L=10 * US, o_s=1 * US, o_r=1 * US, g=3 * US,
                                              G=0.1 * US, library="x", path="net"))
    assert round_us(slow, cluster, None) == (pytest.approx(16 / 7 * 9.9), "link")


def test_window_of_eight_sends_bounds_a_long_latency():
    far = model.Machine(node=LogGP(L=100 * US, o_s=1 * US, o_r=1 * US, g=3 * US, G=0.01 * US,
                                   library="x", path="node"))
    one_way = 1 + 100 + 1 + 0.99
    assert round_us(far, model.Cluster(1, 4), neighbor(4)) == \
        (pytest.approx(one_way / 8), "window")
    assert round_us(far, model.Cluster(1, 4), neighbor(4), window=64) == \
        (pytest.approx(3.99), "rank")


def test_ranks_sharing_cores_stretch_the_overheads_and_bytes():
    # 4 ranks on 2 cores: 2 tasks per core; (o_s + o_r) x 2 = 4 > g, bytes
    # 99 x 0.01 x 2
    shared = model.with_penalties(MACHINE, {}, "x", 4, 2)
    assert shared.share == 2.0
    assert round_us(shared, model.Cluster(1, 4), neighbor(4)) == \
        (pytest.approx(4 + 1.98), "rank")


def test_idle_ranks_and_bad_tables():
    # bit reversal at 4 ranks: 0 and 3 map to themselves and send nothing
    table = trafficbench.destinations("bit_reversal", 4)
    assert table == [0, 2, 1, 3]
    assert model.senders_of(model.Cluster(1, 4), table) == 2
    assert model.saturation_bandwidth(MACHINE, model.Cluster(1, 4), table, M) == \
        pytest.approx(2 * M / (3.99 * US))
    with pytest.raises(ValueError, match="destinations for"):
        model.saturation_round(MACHINE, model.Cluster(1, 4), [1, 0], M)
    with pytest.raises(ValueError, match="not a rank"):
        model.saturation_round(MACHINE, model.Cluster(1, 2), [1, 5], M)
    with pytest.raises(ValueError, match="no net LogGP"):
        model.saturation_round(model.Machine(node=NODE), model.Cluster(2, 2), None, M)
    assert model.saturation_round(MACHINE, model.Cluster(1, 1), None, M) == (0.0, "none")


def _traffic(library, test, ranks, nodes, mb_s, size=M, load="saturation"):
    network = nodes > 1
    return {"suite": "traffic", "test": test, "library": library, "ranks": ranks,
            "nodes": nodes, "path": "network" if network else "on-node",
            "transport": "tcp" if network else "shm", "size": size,
            "metric": "accepted_bandwidth", "unit": "MB/s", "median": mb_s,
            "size_dist": "uniform", "time_dist": "none" if load == "saturation" else "uniform",
            "load": load, "off_node_share": 1.0 if network else 0.0}


def _model() -> model.Model:
    # 8 cores: the shapes below fit, nothing stretched
    return model.Model({"x": MACHINE}, "given", {}, 8, None, [])


def test_validation_prices_each_record_and_counts_the_limit():
    neighbor_mb = 4 * M / 3.99  # bytes/us = MB/s
    complement_mb = 8 * M / 7.92
    records = [
        _traffic("x", "neighbor", 4, 1, neighbor_mb),  # exact
        _traffic("x", "complement", 8, 2, complement_mb / 1.2),  # model 20 % high
        _traffic("x", "uniform", 4, 1, neighbor_mb / 1.3),  # model 30 % high
        _traffic("x", "uniform", 4, 1, 1.0, load="fraction"),  # not at saturation
        _traffic("x", "bit_reversal", 2, 1, 5.0),  # n/a at 2 ranks
        _traffic("other", "neighbor", 4, 1, 5.0),  # no parameters
        _traffic("x", "no_such_pattern", 4, 1, 5.0),  # unknown: left out
    ]
    points = model.validate_traffic(_model(), records, trafficbench.destinations)
    assert [(p.pattern, p.shape) for p in points] == \
        [("uniform", (4, 1)), ("neighbor", (4, 1)), ("complement", (8, 2))]
    by = {p.pattern: p for p in points}
    assert by["neighbor"].error == pytest.approx(0.0, abs=1e-9) and by["neighbor"].within
    assert by["complement"].cluster == model.Cluster(2, 4)
    assert by["complement"].bound == "link"
    assert by["complement"].error == pytest.approx(0.2) and by["complement"].within
    assert by["uniform"].error == pytest.approx(0.3) and not by["uniform"].within
    rows = modelreport.traffic_summary(points)
    assert rows[0][:4] == ("x", "4 ranks on one node", 1, 2)
    assert rows[0][4] == pytest.approx(0.15)
    assert rows[1][:4] == ("x", "8 ranks across 2 nodes", 1, 1)


def test_validation_takes_the_load_of_the_traffic_run():
    # p2p records of T(m) = 0.5 + 0.001 m us on the node (o = 0.2, L = 0.1,
    # g = 0.4 us, G = 0.001 us/B); 2 cores, and the traffic run of 4 ranks
    # sampled 2 other runnable tasks: 3 tasks per core
    records = []
    for size in (0, 8, 4096, 65536, 1048576):
        records.append({"suite": "p2p", "test": "pingpong_standard", "library": "postbox",
                        "path": "on-node", "ranks": 2, "size": size, "unit": "us",
                        "median": 0.5 + 0.001 * size, "metric": "latency"})
    records.append({"suite": "p2p", "test": "unidirectional", "library": "postbox",
                    "path": "on-node", "ranks": 2, "size": 0, "unit": "us", "median": 0.4,
                    "metric": "latency"})
    size = 8192
    expected = 3 * (0.2 + 0.2) + 8191 * 0.001 * 3  # us per round
    records.append(_traffic("postbox", "neighbor", 4, 1, 4 * size / expected, size=size))
    description = {"cores": 2, "runs": [
        {"name": "traffic/postbox/4-ranks-1-node", "ranks": 4, "path": "on-node",
         "load_start": {"runnable": 1.0}, "load_end": {"runnable": 3.0}}]}
    built = model_fit.build(records, description)
    assert built.traffic_background == {("postbox", (4, 1)): 2.0}
    node = built.machines["postbox"].node
    assert (node.o_s / US, node.L / US, node.g / US) == \
        (pytest.approx(0.2), pytest.approx(0.1), pytest.approx(0.4))
    points = model.validate_traffic(built, records, trafficbench.destinations)
    assert len(points) == 1 and points[0].background == 2.0
    assert points[0].error == pytest.approx(0.0, abs=1e-9)
    # without the sample the model is 3/2 times faster at the bytes: > 25 % high
    quiet = model.validate_traffic(model_fit.build(records, {"cores": 2}), records,
                                   trafficbench.destinations)
    assert quiet[0].error > model.LIMIT


def _coll_records() -> list:
    # enough for the model's section: p2p records and one collective
    records = []
    for path, t0, per_byte, stream in (("on-node", 0.5, 0.001, 0.4), ("network", 10, 0.002, 6)):
        for size in (0, 8, 4096, 65536, 1048576):
            records.append({"suite": "p2p", "test": "pingpong_standard", "library": "x",
                            "path": path, "ranks": 2, "size": size, "unit": "us",
                            "median": t0 + per_byte * size, "metric": "latency"})
        records.append({"suite": "p2p", "test": "unidirectional", "library": "x", "path": path,
                        "ranks": 2, "size": 0, "unit": "us", "median": stream,
                        "metric": "latency"})
    records.append({"suite": "coll", "test": "bcast", "library": "x", "ranks": 4, "nodes": 1,
                    "size": 8, "unit": "us", "median": 2.0, "metric": "latency",
                    "transport": "shm", "path": "on-node"})
    return records


def test_report_table_and_a_folder_without_traffic(tmp_path):
    records = _coll_records()
    page = "\n".join(modelreport.section(records))
    assert 'id="model"' in page
    assert "model-traffic-validation" not in page and "model-traffic-point" not in page
    # the extrapolation's traffic table still renders
    assert 'class="model-traffic"' in page
    built = model_fit.build(records)
    measured = model.saturation_bandwidth(built.machines["x"], model.Cluster(1, 4),
                                          neighbor(4), 8192) / 1e6
    records = records + [_traffic("x", "neighbor", 4, 1, measured, size=8192),
                         _traffic("x", "complement", 4, 1, measured / 2, size=8192)]
    page = "\n".join(modelreport.section(records))
    assert "Traffic: model against measurement" in page
    assert page.count('class="model-traffic-point"') == 2
    assert "<td>1 of 2</td>" in page
    # the command line: the traffic counts after the collectives'
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "model.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records),
                                        encoding="utf-8")
    assert modelreport.main([str(folder)]) == 0
    (folder / "model.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _coll_records()),
                                        encoding="utf-8")
    assert modelreport.main([str(folder)]) == 0


def test_ranks_mapped_to_themselves_leave_their_cores():
    # 4 ranks on 2 cores: bit reversal has 2 active ranks (1 and 2), one
    # per core, so nothing is stretched; complement's 4 share the cores
    table = trafficbench.destinations("bit_reversal", 4)
    assert model.active_ranks(model.Cluster(1, 4), table) == 2
    assert model.active_ranks(model.Cluster(1, 4), None) == 4
    built = model.Model({"x": MACHINE}, "given", {}, 2, None, [])
    records = [_traffic("x", "bit_reversal", 4, 1, 2 * M / 3.99),
               _traffic("x", "complement", 4, 1, 4 * M / (4 + 1.98))]
    points = model.validate_traffic(built, records, trafficbench.destinations)
    assert [p.pattern for p in points] == ["bit_reversal", "complement"]
    for p in points:
        assert p.error == pytest.approx(0.0, abs=1e-9), p.pattern
