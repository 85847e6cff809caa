"""The LogP arithmetic: the saturation method, the parameterized LogP's
derived parameters, the least squares, and the LogGP fit recovering known
parameters from synthetic PRTT data with noise."""

import random

import pytest

from postbox import logpfit
from postbox.loggp import LogGP
from postbox.logpfit import FitError, PrttPoint, SatStep
from samples import logp_records

pytestmark = pytest.mark.short

# ---- the saturation method ---------------------------------------------------


def test_parse_steps():
    steps = logpfit.parse_steps("10:2.5000:30.0000,20:2.1000:50.0000,40:2.0900:90.5000")
    assert steps == [SatStep(10, 2.5, 30.0), SatStep(20, 2.1, 50.0), SatStep(40, 2.09, 90.5)]


@pytest.mark.parametrize("text", ["", "10:2.5", "10:2.5:30:1", "0:2.5:30", "10:-1:30",
                                  "ten:2.5:30"])
def test_parse_steps_rejects_malformed(text):
    with pytest.raises(ValueError):
        logpfit.parse_steps(text)


def test_saturated_rule_by_hand():
    eps = 0.02
    prev = SatStep(20, 2.00, 45.0)
    # 40 runs at 2.01 us: +0.5 % < 1 %; rtt 0.8 / 90 < 0.01; (2*45 - 0.4)/90 < 1.02
    assert logpfit.saturated(0, SatStep(40, 2.01, 90.0), prev, 0.8, eps)
    # +1.5 % per send: not yet at a small size ...
    assert not logpfit.saturated(0, SatStep(40, 2.03, 90.0), prev, 0.8, eps)
    # ... but 1.5 % is allowed above 64 KiB only when under it: +1.4 % passes there
    assert logpfit.saturated(131072, SatStep(40, 2.028, 90.0), prev, 0.8, eps)
    # too few runs (the first doubling: 20 runs after 10)
    assert not logpfit.saturated(0, SatStep(20, 2.0, 45.0), SatStep(10, 2.0, 23.0), 0.8, eps)
    # the round trip is 1.1 % of the total: > eps/2
    assert not logpfit.saturated(0, SatStep(40, 2.0, 90.0), prev, 1.0, eps)
    # the total grew much less than twice: (2*45 - 0.4)/80 = 1.12 > 1.02
    assert not logpfit.saturated(0, SatStep(40, 2.0, 80.0), prev, 0.8, eps)
    # from maxruns/4 on, 8 % change is enough; at maxruns always
    big = SatStep(640, 2.1, 1400.0)
    assert logpfit.saturated(0, big, SatStep(320, 2.0, 700.0), 0.8, eps)
    assert logpfit.saturated(0, SatStep(2560, 9.0, 1.0), SatStep(1280, 1.0, 1.0), 100.0, eps)


# ---- the parameterized LogP ----------------------------------------------------


def test_plogp_parameters_by_hand():
    # RTT(0) = 10 us, g(0) = 2 us: L = 10/2 - 2 = 3; g(m) = RTT(m) - 10 + 2
    L, g = logpfit.plogp_parameters({0: 10.0, 64: 11.5, 4096: 30.0}, 2.0)
    assert L == pytest.approx(3.0)
    assert g == pytest.approx({0: 2.0, 64: 3.5, 4096: 22.0})
    # RTT(m) below RTT(0) by more than g(0): g(m) stays at 0, L at 0
    L, g = logpfit.plogp_parameters({0: 3.0, 16: 0.5}, 2.0)
    assert L == 0.0 and g[16] == 0.0
    with pytest.raises(FitError):
        logpfit.plogp_parameters({16: 3.0}, 2.0)


def test_prtt_point_arithmetic_by_hand():
    p = PrttPoint(size=1024, n=10, prtt_1_0=20.0, prtt_n_0=47.0, prtt_n_d=218.0,
                  o_r_server=1.5, d=20.0)
    assert p.gap == pytest.approx(3.0)       # (47 - 20) / 9
    assert p.o_s == pytest.approx(2.0)       # (218 - 20) / 9 - 20
    assert not p.d_too_small
    assert PrttPoint(0, 10, 2.0, 47.0, 30.0, 1.0, 2.0).d_too_small


# ---- least squares ---------------------------------------------------------------


def test_fit_line_exact_and_outlier():
    line = logpfit.fit_line([0, 1, 2, 3], [1.0, 3.0, 5.0, 7.0])
    assert line.intercept == pytest.approx(1.0) and line.slope == pytest.approx(2.0)
    assert line.dropped == 0
    xs = [0, 1000, 2000, 3000, 4000, 5000, 6000, 7000]
    ys = [2.0 + 0.001 * x for x in xs]
    ys[5] *= 3  # a protocol switch
    line = logpfit.fit_line(xs, ys)
    assert line.dropped == 1
    assert line.intercept == pytest.approx(2.0) and line.slope == pytest.approx(0.001)
    with pytest.raises(FitError):
        logpfit.fit_line([1, 1], [2.0, 3.0])


# ---- the LogGP fit on synthetic data ---------------------------------------------


def synthetic_points(truth: LogGP, sizes, n=10, noise=0.003, seed=1):
    """netgauge's measurements a machine following @truth would give (in
    us), each multiplied by 1 + a Gaussian of relative deviation @noise."""
    rng = random.Random(seed)

    def noisy(value):
        return value * (1.0 + rng.gauss(0.0, noise))

    points = []
    for size in sizes:
        one_way = truth.one_way(size) / 1e-6
        gap = truth.gap(size) / 1e-6
        prtt_1 = 2.0 * one_way
        d = prtt_1
        points.append(PrttPoint(
            size, n, noisy(prtt_1), noisy(prtt_1 + (n - 1) * gap),
            noisy(prtt_1 + (n - 1) * (truth.o_s / 1e-6 + d)), noisy(truth.o_r / 1e-6), d))
    return points


SIZES = [0, 1] + [2 ** k for k in range(2, 21)]


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("truth", [
    LogGP(L=5e-6, o_s=1.0e-6, o_r=1.5e-6, g=2.0e-6, G=1e-9),       # a 1 GB/s network
    LogGP(L=0.3e-6, o_s=0.2e-6, o_r=0.25e-6, g=0.4e-6, G=1e-10),  # shared memory
])
def test_prtt_fit_recovers_known_parameters_within_5_percent(truth, seed):
    fit = logpfit.loggp_from_prtt(synthetic_points(truth, SIZES, seed=seed), "lib", "network")
    got = fit.loggp
    for name in ("L", "o_s", "o_r", "g", "G"):
        want = getattr(truth, name)
        assert getattr(got, name) == pytest.approx(want, rel=0.05), name
    assert (got.library, got.path) == ("lib", "net")


def test_prtt_fit_needs_size_zero_and_two_sizes():
    truth = LogGP(L=5e-6, o_s=1e-6, o_r=1e-6, g=2e-6, G=1e-9)
    with pytest.raises(FitError):
        logpfit.loggp_from_prtt(synthetic_points(truth, [1024, 2048]))
    with pytest.raises(FitError):
        logpfit.loggp_from_prtt(synthetic_points(truth, [0]))


def test_plogp_loggp_from_synthetic_round_trips():
    # a machine with RTT(m) = 2 (o_s + L + o_r) + (m - 1) G  (0 B reply)
    o_s, o_r, L, G, g0 = 1.0, 1.5, 3.0, 0.001, 2.0
    sizes = [0, 16, 256, 4096, 65536]
    rtt = {m: 2 * (o_s + L + o_r) + max(m - 1, 0) * G for m in sizes}
    Lk, g = logpfit.plogp_parameters(rtt, g0)
    p = logpfit.PLogP("lib", "on-node", Lk, g0, rtt, {m: o_s for m in sizes},
                      {m: o_r for m in sizes}, g)
    got = logpfit.loggp_from_plogp(p)
    assert got.L == pytest.approx(L * 1e-6)
    assert got.o_s == pytest.approx(o_s * 1e-6) and got.o_r == pytest.approx(o_r * 1e-6)
    assert got.g == pytest.approx(g0 * 1e-6) and got.G == pytest.approx(G * 1e-6)
    assert got.path == "node"


# ---- the program's records --------------------------------------------------------

# two lines as bench/mpi_logp.c writes them (the format the reader relies on)
PROGRAM_LINES = (
    '{"suite": "logp", "test": "plogp", "library": "mpich", "transport": "shm", "placement": '
    '"on-node", "ranks": 2, "nodes": 1, "pairs": 1, "size": 0, "metric": "g_sat", "unit": "us", '
    '"median": 0.9107, "min": 0.9107, "max": 0.9107, "reps": 1, "iters": 40, "probe_before": '
    'null, "probe_after": null, "settled": false, "state": "unknown", "host": "vm", "timestamp": '
    '"2026-11-26T22:02:50Z", "library_version": "MPICH Version: 4.0.2", "path": "on-node", '
    '"oversubscribed": false, "runs": 40, "total_us": 40.1, "rtt_us": 0.8, "eps": 0.05, '
    '"steps": "10:0.9500:10.1000,20:0.9150:19.9000,40:0.9107:40.1000", "saturated": true}',
    '{"suite": "logp", "test": "prtt", "library": "mpich", "transport": "shm", "placement": '
    '"on-node", "ranks": 2, "nodes": 1, "pairs": 1, "size": 0, "metric": "prtt_n_d", "unit": '
    '"us", "median": 208.166, "min": 187.997, "max": 259.172, "reps": 5, "iters": 1, '
    '"probe_before": null, "probe_after": null, "settled": false, "state": "unknown", "host": '
    '"vm", "timestamp": "2026-11-26T22:02:55Z", "library_version": "MPICH Version: 4.0.2", '
    '"path": "on-node", "oversubscribed": false, "n": 10, "d_us": 11.7418}',
)


def test_program_lines_parse(tmp_path):
    from postbox import results

    path = tmp_path / "logp.jsonl"
    path.write_text("\n".join(PROGRAM_LINES) + "\n", encoding="utf-8")
    records = results.load_jsonl(path)
    assert [r["metric"] for r in logpfit.logp_records(records)] == ["g_sat", "prtt_n_d"]
    table = logpfit.group(records)[("mpich", "on-node")]
    sat = table[("plogp", "g_sat")][0][0]
    steps = logpfit.parse_steps(sat["steps"])
    assert steps[-1].avg_us == sat["median"]  # g: the time per send of the last step
    assert logpfit.saturated(0, steps[-1], steps[-2], sat["rtt_us"], sat["eps"])
    assert logpfit.record_saturated(sat)
    # cut short by the time cap after one step; no steps: the record's own word
    assert not logpfit.record_saturated(dict(sat, steps="10:0.95:10.1"))
    assert logpfit.record_saturated(dict(sat, steps="2560:0.95:3000"))
    assert not logpfit.record_saturated({"saturated": False})
    assert logpfit.record_saturated({"median": 1.0})


def test_fitted_parameters_one_per_library_and_path():
    node = LogGP(L=0.3e-6, o_s=0.2e-6, o_r=0.25e-6, g=0.4e-6, G=1e-10)
    net = LogGP(L=20e-6, o_s=3e-6, o_r=4e-6, g=5e-6, G=1e-8)
    sizes = [0, 16, 256, 4096, 65536]
    records = (logp_records(node, "postbox", "on-node", sizes, rounds=3)
               + logp_records(net, "postbox", "network", sizes)
               + logp_records(net, "mpich", "network", sizes, methods=("plogp",))
               + [{"suite": "coll", "test": "bcast", "median": 1.0, "size": 8}])
    fitted = logpfit.fitted_parameters(records)
    assert [(p.library, p.path) for p in fitted] == [
        ("postbox", "node"), ("postbox", "net"), ("mpich", "net")]
    for got, truth in zip(fitted, (node, net, net)):
        for name in ("L", "o_s", "o_r", "g", "G"):
            assert getattr(got, name) == pytest.approx(getattr(truth, name), rel=0.05), name


def test_fitted_parameters_leaves_out_what_cannot_be_fitted():
    truth = LogGP(L=1e-6, o_s=1e-6, o_r=1e-6, g=1e-6, G=1e-9)
    # PRTT at one size only and no g(0): nothing to fit
    records = [r for r in logp_records(truth, "x", "on-node", [0]) if r["metric"] != "g_sat"]
    assert logpfit.fitted_parameters(records) == []
    assert logpfit.fitted_parameters([]) == []
