"""Synthetic bench records for the tests (no pytest import: the fake bench
program in conftest.py imports this module too)."""

from __future__ import annotations

import json
from pathlib import Path

from postbox import results


def record(**fields) -> dict:
    """A measurement with every key of bench/README.md#json-keys; @fields
    override."""
    base = {
        "suite": "rsm", "test": "put", "library": "postbox", "transport": "shm",
        "placement": "on-node", "ranks": 2, "nodes": 1, "pairs": 1, "size": 64,
        "metric": "latency", "unit": "us", "median": 1.0, "min": 0.9, "max": 1.5,
        "reps": 100, "probe_before": 50.0, "probe_after": 51.0, "settled": True,
        "state": "fast",
    }
    base.update(fields)
    assert set(results.RECORD_KEYS) <= set(base)
    return base


def sample_records() -> list:
    """A small run: put/get, export calls, ping-pong, the raw limits and ratios."""
    out = []
    for size in (8, 64, 512, 4096, 65536):
        out.append(record(test="put", size=size, median=0.1 + size / 5000))
        out.append(record(test="get", size=size, median=0.2 + size / 3000))
        out.append(record(test="pingpong_put", size=size, median=0.15 + size / 8000,
                          settled=size != 512, state="slow" if size == 512 else "fast"))
    for size in (4096, 16384, 65536, 1 << 20):
        for call in ("call_export_create", "call_export_publish", "call_export_destroy"):
            out.append(record(test=call, size=size, median=2.0 + size / 100000))
    out.append(record(suite="raw", test="cacheline_pingpong", library="raw", transport="",
                      size=64, median=0.08))
    out.append(record(suite="raw", test="memcpy", library="raw", transport="", size=4 << 20,
                      metric="bandwidth", unit="MB/s", median=9000.0))
    out.append(record(suite="rsm", test="ratio_pingpong_put_64_vs_cacheline", size=64,
                      metric="ratio", unit="x", median=1.2))
    out.append(record(suite="rsm", test="ratio_put_4MB_vs_memcpy", size=4 << 20,
                      metric="ratio", unit="x", median=0.95))
    return out


P2P_TESTS = ("pingpong_standard", "pingpong_synchronous", "pingpong_ready",
             "pingpong_buffered", "pingpong_diffbuf", "unidirectional", "pingping",
             "bandwidth_uni", "bandwidth_bi")


def p2p_records(library: str, tests=P2P_TESTS, sizes=(0, 1, 64, 4096, 65536),
                scale: float = 1.0, **fields) -> list:
    """What mpi_p2p writes for @library: latency t = scale * (1 + size/1000) us,
    bandwidth = 1000 / scale MB/s."""
    out = []
    for test in tests:
        bandwidth = test.startswith("bandwidth") or test in ("multipair_bandwidth",
                                                             "pingpong_distance")
        for size in sizes:
            if bandwidth and size == 0:
                continue
            median = 1000.0 / scale if bandwidth else scale * (1 + size / 1000)
            rec = record(suite="p2p", test=test, library=library, size=size,
                         metric="bandwidth" if bandwidth else "latency",
                         unit="MB/s" if bandwidth else "us", median=median,
                         min=median * 0.9, max=median * 1.1,
                         library_version="%s 1.0" % library)
            rec.update(fields)
            out.append(rec)
    return out


def thread_records(library: str, test: str, level: str, round_=None,
                   scale: float = 1.0, **fields) -> list:
    """What mpi_p2p --thread-level @level writes for @library: the 8 B
    ping-pong at scale us, or msgrate_threads at 1e6 / scale msg/s with
    4 threads and every message checked."""
    common = dict(suite="p2p", test=test, library=library, size=8, thread_level=level,
                  thread_level_required=level, library_version="%s 1.0" % library,
                  checked=True, path="on-node")
    if round_ is not None:
        common["round"] = round_
    if test == "msgrate_threads":
        rate = 1e6 / scale
        common.update(metric="message_rate", unit="msg/s", median=rate, min=rate * 0.5,
                      max=rate * 2, threads=4, window=64, messages_checked=17664)
    else:
        common.update(median=scale, min=scale * 0.9, max=scale * 1.2)
    common.update(fields)
    return [record(**common)]


COLL_TESTS = ("barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter",
              "scatterv", "allgather", "allgatherv", "alltoall", "alltoallv", "reduce_scatter",
              "reduce_scatter_block", "scan", "exscan")
COLL_SIZES = (4, 8, 1024, 65536, 1048576, 4194304)


def coll_records(library: str, ranks: int = 2, path: str = "on-node", nodes: int = 1,
                 scale: float = 1.0, tests=COLL_TESTS, sizes=COLL_SIZES, **fields) -> list:
    """What mpi_coll writes for @library in one shape: t = scale * (2 + size /
    1000) us per call (barrier: size 0 only), and its two references."""
    out = []
    for test in tests:
        for size in ((0,) if test == "barrier" else sizes):
            median = scale * (2 + size / 1000)
            rec = record(suite="coll", test=test, library=library, size=size, ranks=ranks,
                         nodes=nodes, path=path, median=median, min=median * 0.9,
                         max=median * 1.2, t_min=median * 0.95, t_max=median * 1.05,
                         t_avg=median, calls=100, library_version="%s 1.0" % library)
            rec.update(fields)
            out.append(rec)
    for test, median in (("ref_memcpy", 300.0), ("ref_vector_add", 400.0)):
        rec = record(suite="coll", test=test, library=library, size=4194304, ranks=ranks,
                     nodes=nodes, path=path, median=median)
        rec.update(fields)
        out.append(rec)
    return out


RMA_LATENCY_TESTS = ("put_latency", "fetch_and_op", "compare_and_swap")


def rma_records(library: str, path: str = "on-node", scale: float = 1.0,
                progress_s: float = None, **fields) -> list:
    """What mpi_rma writes for @library on @path (lock_all): latency scale *
    (1 + size / 1000) us at 8 B and 4 KB (the atomics at 8 B only), put
    bandwidth 1000 / scale MB/s per KB of size, and, with @progress_s, the
    progress test finishing at that time of a 2 s computation."""
    common = dict(suite="rma", library=library, path=path, sync="lock_all",
                  flavor="create" if path == "network" else "allocate",
                  nodes=2 if path == "network" and library == "postbox" else 1,
                  library_version="%s 1.0" % library)
    common.update(fields)
    out = []
    for test in RMA_LATENCY_TESTS:
        for size in ((8, 4096) if test == "put_latency" else (8,)):
            median = scale * (1 + size / 1000)
            out.append(record(test=test, size=size, median=median, min=median * 0.9,
                              max=median * 1.2, t_min=median * 0.9, t_max=median * 1.2,
                              t_avg=median, **common))
    for size in (65536, 4 << 20):
        median = size / 1000 / scale
        out.append(record(test="put_bandwidth", size=size, metric="bandwidth", unit="MB/s",
                          median=median, min=median * 0.8, max=median * 1.1, window=64,
                          **common))
    if progress_s is not None:
        out.append(record(test="progress", size=8, metric="time", unit="s",
                          median=progress_s, min=progress_s, max=progress_s,
                          epochs=1000, epochs_done_s=progress_s, compute_s=2.0,
                          barrier_done_s=max(progress_s, 2.0), epoch_us=progress_s * 1000,
                          done_while_computing=progress_s < 2.0,
                          **dict(common, sync="lock")))
    return out


def net_records() -> list:
    """What postbox-net-bench writes: TCP/UDP ping-pong and TCP stream."""
    out = []
    for size in (1, 16, 256, 4096, 65536):
        out.append(record(suite="raw", test="tcp_pingpong", library="raw", transport="tcp",
                          size=size, median=10 + size / 1000))
        if size <= 8192:
            out.append(record(suite="raw", test="udp_pingpong", library="raw",
                              transport="udp", size=size, median=12 + size / 1000))
    for size in (1024, 16384, 262144, 4 << 20):
        out.append(record(suite="raw", test="tcp_stream", library="raw", transport="tcp",
                          size=size, metric="bandwidth", unit="MB/s", median=size / 1000))
    return out


def rsm_net_records(config: str = "loopback", latency_ratio: float = 1.1) -> list:
    """What postbox-rsm-net-bench writes: RSM over tcp, its raw references and
    the two ratios, every record with @config."""
    out = []
    common = {"placement": "off-node", "nodes": 2, "config": config}
    for size in (8, 128, 2048, 32768, 4 << 20):
        out.append(record(test="tcp_put_pingpong", transport="tcp", size=size,
                          median=30 + size / 5000, **common))
        out.append(record(test="tcp_get", transport="tcp", size=size, median=60 + size / 4000,
                          round_trip=True, **common))
        out.append(record(suite="raw", test="tcp_pingpong", library="raw", transport="tcp",
                          size=size, median=27 + size / 5000, **common))
        if size <= 8192:
            out.append(record(suite="raw", test="udp_pingpong", library="raw", transport="udp",
                              size=size, median=20 + size / 1000, **common))
        out.append(record(test="tcp_put_stream", transport="tcp", size=size, metric="bandwidth",
                          unit="MB/s", median=size / 700, **common))
        out.append(record(suite="raw", test="tcp_stream", library="raw", transport="tcp",
                          size=size, metric="bandwidth", unit="MB/s", median=size / 650,
                          **common))
    out.append(record(test="tcp_signal_pingpong", transport="tcp", size=0, median=29.0,
                      **common))
    out.append(record(test="tcp_put_barrier", transport="tcp", size=8, median=40.0, **common))
    out.append(record(test="ratio_put_latency_8B", transport="tcp", size=8, metric="ratio",
                      unit="x", median=latency_ratio, target=1.2, target_op="<=",
                      numerator="tcp_put_pingpong", denominator="tcp_pingpong", **common))
    out.append(record(test="ratio_put_stream_4MB", transport="tcp", size=4 << 20,
                      metric="ratio", unit="x", median=0.93, target=0.9, target_op=">=",
                      numerator="tcp_put_stream", denominator="tcp_stream", **common))
    return out


def logp_records(truth, library: str, path: str, sizes=(0, 16, 256, 4096, 65536),
                 methods=("plogp", "prtt"), rounds: int = 1) -> list:
    """The records bench/mpi_logp.c would write on a machine following the
    postbox.loggp.LogGP @truth exactly (times in us)."""
    common = {"suite": "logp", "library": library, "path": path, "unit": "us", "ranks": 2}
    out = []
    for _ in range(rounds):
        for size in sizes:
            one_way = truth.one_way(size) / 1e-6
            if "plogp" in methods:
                rtt = one_way + truth.one_way(0) / 1e-6
                for metric, value in (("rtt", rtt), ("o_s", truth.o_s / 1e-6),
                                      ("o_r", truth.o_r / 1e-6)):
                    out.append(dict(common, test="plogp", metric=metric, size=size, median=value))
                if size == 0:
                    out.append(dict(common, test="plogp", metric="g_sat", size=0,
                                    median=truth.g / 1e-6, saturated=True))
            if "prtt" in methods:
                prtt_1 = 2 * one_way
                values = {"prtt_1_0": prtt_1, "prtt_n_0": prtt_1 + 9 * truth.gap(size) / 1e-6,
                          "prtt_n_d": prtt_1 + 9 * (truth.o_s / 1e-6 + prtt_1),
                          "o_r_server": truth.o_r / 1e-6}
                for metric, value in values.items():
                    out.append(dict(common, test="prtt", metric=metric, size=size,
                                    median=value, n=1 if metric == "prtt_1_0" else 10,
                                    d_us=prtt_1 if metric in ("prtt_n_d", "o_r_server")
                                    else 0.0))
    return out


def write_jsonl(path: Path, records) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for rec in records:
            handle.write(json.dumps(rec) + "\n")
    return path
