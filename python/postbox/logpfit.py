"""The LogP parameters from bench/mpi_logp.c's records, and the LogGP fit.

Two methods, each as its reference implementation computes it (see
bench/README.md#logp and REFERENCE.md section B):

- **plogp**, the parameterized LogP of Kielmann, Bal and Verstoep: per size m
  the round trip RTT(m) (m bytes out, 0 back), the send overhead o_s(m), the
  receive overhead o_r(m), and g(0) by saturation.  From them
  ``g(m) = RTT(m) - RTT(0) + g(0)`` (or g(m) measured by saturation where
  the program did) and ``L = RTT(0)/2 - g(0)`` (plogp_parameters).
- **prtt**, netgauge's LogGP: PRTT(n, d, m), n messages of m bytes d apart
  and one reply of m bytes.  ``g + (m - 1) G = (PRTT(n,0,m) -
  PRTT(1,0,m)) / (n - 1)`` fitted by least squares over m gives g and G;
  ``o_s(m) = (PRTT(n,d,m) - PRTT(1,0,m)) / (n - 1) - d`` with d =
  PRTT(1,0,m); o_r(m) is the receiver's own time of a receive after waiting
  d (loggp_from_prtt).

The fits are least squares on the relative error (each point weighted by
its value's inverse square), because the sizes are spaced by powers of two:
plain least squares would let the largest sizes decide alone.  As netgauge
does when a fit is poor, points more than twice the fit's residual away (and
1 % at least) are dropped once and the line refitted.

``fitted_parameters(records)`` gives one postbox.loggp.LogGP per (library,
path) for the model: from the prtt records where there are some, else from
the plogp ones.  Its L is the one LogGP's own round trip implies,
``RTT(0)/2 - o_s - o_r``, so that ``LogGP.one_way(0)`` is half the measured
0-byte round trip (netgauge's own L, PRTT(1,0,0)/2, counts the overheads in
and is reported beside it).  Times of records are in microseconds; LogGP's
are in seconds.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from postbox.loggp import LogGP

SUITE = "logp"
US = 1e-6
# what the model calls the two paths (LogGP.path), from the records' path
PATH_NAMES = {"on-node": "node", "network": "net"}
PLOGP_METRICS = ("rtt", "o_s", "o_r", "g_sat")
PRTT_METRICS = ("prtt_1_0", "prtt_n_0", "prtt_n_d", "o_r_server")

# the saturation method's constants (bench/mpi_logp.c, after logp_mpi)
SAT_START_RUNS = 10
SAT_MAX_RUNS = 128 * 20


# a point is never an outlier when within this relative distance of the line
OUTLIER_FLOOR = 0.01


class FitError(ValueError):
    """Too few or unusable points for a parameter."""


# ---- the saturation method ---------------------------------------------------

@dataclass(frozen=True)
class SatStep:
    """One step of the saturation method: @runs sends back to back at
    @avg_us each, @total_us from the first send to the reply."""

    runs: int
    avg_us: float
    total_us: float


def parse_steps(text: str) -> list[SatStep]:
    """The steps of a g_sat record's ``steps`` ("runs:avg:total,...");
    ValueError on malformed text."""
    steps = []
    for item in str(text).split(","):
        parts = item.split(":")
        if len(parts) != 3:
            raise ValueError("a saturation step is runs:avg_us:total_us, not %r" % item)
        runs, avg, total = int(parts[0]), float(parts[1]), float(parts[2])
        if runs < 1 or not avg > 0 or not total > 0:
            raise ValueError("a saturation step needs runs >= 1 and times > 0: %r" % item)
        steps.append(SatStep(runs, avg, total))
    if not steps:
        raise ValueError("no saturation steps")
    return steps


def saturated(size: int, step: SatStep, previous: SatStep, rtt_us: float, eps: float) -> bool:
    """Kielmann et al.'s stopping rule after @step, which followed
    @previous, at @size bytes with the round trip @rtt_us: at least 20 runs,
    the time per send changed by less than 1 % (1.5 % above 64 KiB, 8 % from
    maxruns/4 on), the round trip under eps/2 of the total, and the total
    about twice the previous one; or maxruns reached."""
    if step.runs >= SAT_MAX_RUNS:
        return True
    change = 100.0 * abs(step.avg_us - previous.avg_us) / previous.avg_us
    most = 8.0 if step.runs >= SAT_MAX_RUNS // 4 else (1.5 if size > 65536 else 1.0)
    return (step.runs >= 2 * SAT_START_RUNS and change < most
            and rtt_us / step.total_us < eps / 2.0
            and (2.0 * previous.total_us - rtt_us / 2.0) / step.total_us < 1.0 + eps)


def record_saturated(record: dict) -> bool:
    """Whether a g_sat record's last step meets the stopping rule (its
    steps, rtt_us and eps; a record without them: its key saturated)."""
    try:
        steps = parse_steps(record["steps"])
        rtt, eps = float(record["rtt_us"]), float(record["eps"])
    except (KeyError, TypeError, ValueError):
        return record.get("saturated", True) is not False
    if len(steps) < 2:
        return steps[-1].runs >= SAT_MAX_RUNS
    return saturated(int(record.get("size", 0)), steps[-1], steps[-2], rtt, eps)


# ---- least squares -------------------------------------------------------------

@dataclass(frozen=True)
class Line:
    """y = intercept + slope * x, fitted to @points points (@dropped left
    out as outliers); @rms: the root mean square relative residual."""

    intercept: float
    slope: float
    rms: float
    points: int
    dropped: int = 0

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x


def _scales(ys: Sequence[float]) -> list:
    """What each residual is relative to: |y|, at least 1 % of the largest
    |y| (an overhead near 0 must not take all the weight)."""
    floor = max(max(abs(y) for y in ys) * 0.01, 1e-12)
    return [max(abs(y), floor) for y in ys]


def _weighted_line(xs: Sequence[float], ys: Sequence[float], scales: Sequence[float]) -> tuple:
    weights = [1.0 / (scale * scale) for scale in scales]
    sw = sum(weights)
    mx = sum(w * x for w, x in zip(weights, xs)) / sw
    my = sum(w * y for w, y in zip(weights, ys)) / sw
    sxx = sum(w * (x - mx) ** 2 for w, x in zip(weights, xs))
    sxy = sum(w * (x - mx) * (y - my) for w, x, y in zip(weights, xs, ys))
    slope = sxy / sxx if sxx > 0 else 0.0
    return my - slope * mx, slope


def _residuals(xs, ys, scales, intercept, slope) -> list:
    return [(y - (intercept + slope * x)) / scale for x, y, scale in zip(xs, ys, scales)]


def fit_line(xs: Sequence[float], ys: Sequence[float],
             scales: Optional[Sequence[float]] = None) -> Line:
    """Least squares of y = a + b x, each residual divided by its point's
    @scales (the size of its error; default |y|: the relative error); then,
    when a point is off the line by more than twice the root mean square
    residual (and OUTLIER_FLOOR), without the points that are (netgauge
    drops them the same way).  FitError with fewer than 2 points or a
    single x."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    if len(xs) != len(ys) or len(xs) < 2 or len(set(xs)) < 2:
        raise FitError("a line needs 2 points at different x, not %d" % len(set(xs)))
    scales = _scales(ys) if scales is None else [max(float(s), 1e-12) for s in scales]
    a, b = _weighted_line(xs, ys, scales)
    res = _residuals(xs, ys, scales, a, b)
    rms = math.sqrt(sum(r * r for r in res) / len(res))
    keep = [i for i, r in enumerate(res) if abs(r) <= max(2.0 * rms, OUTLIER_FLOOR)]
    if 2 <= len(keep) < len(xs) and len({xs[i] for i in keep}) >= 2:
        kx, ky, ks = [xs[i] for i in keep], [ys[i] for i in keep], [scales[i] for i in keep]
        a, b = _weighted_line(kx, ky, ks)
        res = _residuals(kx, ky, ks, a, b)
        rms = math.sqrt(sum(r * r for r in res) / len(res))
        return Line(a, b, rms, len(keep), len(xs) - len(keep))
    return Line(a, b, rms, len(xs))


# ---- the records ----------------------------------------------------------------

def _number(record: dict, key: str) -> Optional[float]:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def logp_records(records: Iterable[dict]) -> list[dict]:
    """The records of suite logp that carry a usable median, size, library
    and path."""
    out = []
    for record in records:
        if record.get("suite") != SUITE or record.get("test") not in ("plogp", "prtt"):
            continue
        if _number(record, "median") is None or _number(record, "size") is None:
            continue
        if record.get("metric") not in PLOGP_METRICS + PRTT_METRICS:
            continue
        out.append(record)
    return out


def key_of(record: dict) -> tuple:
    """(library, path) of a record; the path "on-node" or "network"."""
    return (str(record.get("library", "")), str(record.get("path", "on-node")))


def group(records: Iterable[dict]) -> dict:
    """{(library, path): {(test, metric): {size: [records]}}} of the logp
    records, in the order met."""
    out: dict = {}
    for record in logp_records(records):
        table = out.setdefault(key_of(record), {})
        sizes = table.setdefault((record["test"], record["metric"]), {})
        sizes.setdefault(int(record["size"]), []).append(record)
    return out


def _median_by_size(by_size: dict) -> dict:
    """{size: median over the records (rounds) of their medians, us}."""
    return {size: statistics.median(float(r["median"]) for r in rs)
            for size, rs in sorted(by_size.items())}


# ---- plogp ------------------------------------------------------------------------

@dataclass
class PLogP:
    """The parameterized LogP of one library on one path, times in us:
    per size RTT, o_s, o_r, g (derived), g_sat (measured, where it was);
    L; whether g(0)'s saturation converged."""

    library: str
    path: str
    L: float
    g0: float
    rtt: dict = field(default_factory=dict)
    o_s: dict = field(default_factory=dict)
    o_r: dict = field(default_factory=dict)
    g: dict = field(default_factory=dict)
    g_sat: dict = field(default_factory=dict)
    saturated: bool = True

    @property
    def sizes(self) -> list:
        return sorted(self.rtt)


def plogp_parameters(rtt: dict, g0: float) -> tuple:
    """(L, {size: g(size)}) from the round trips @rtt {size: us} (size 0
    among them) and g(0) @g0, as Kielmann et al.'s logp_mpi computes them:
    g(m) = RTT(m) - RTT(0) + g(0), L = RTT(0)/2 - g(0) (each at least 0)."""
    if 0 not in rtt:
        raise FitError("the parameterized LogP needs RTT(0)")
    g = {size: max(value - rtt[0] + g0, 0.0) for size, value in rtt.items()}
    g[0] = g0
    return max(rtt[0] / 2.0 - g0, 0.0), g


def plogp_of(table: dict, library: str, path: str) -> Optional[PLogP]:
    """The PLogP of one (library, path) from its group() table; None
    without RTT(0) and g(0)."""
    rtt = _median_by_size(table.get(("plogp", "rtt"), {}))
    sat_records = table.get(("plogp", "g_sat"), {})
    g_sat = _median_by_size(sat_records)
    if 0 not in rtt or 0 not in g_sat:
        return None
    L, g = plogp_parameters(rtt, g_sat[0])
    for size, value in g_sat.items():
        if size in g:
            g[size] = value  # measured by saturation (--flood) where it was
    done = all(record_saturated(r) for r in sat_records.get(0, []))
    return PLogP(library, path, L, g_sat[0], rtt,
                 _median_by_size(table.get(("plogp", "o_s"), {})),
                 _median_by_size(table.get(("plogp", "o_r"), {})), g, g_sat, done)


def loggp_from_plogp(p: PLogP) -> LogGP:
    """A LogGP from the parameterized LogP: g = g(0), G the slope of g(m)
    over m, o_s and o_r the intercepts of their lines over m, L such that
    one_way(0) = RTT(0)/2."""
    sizes = [s for s in p.sizes if s in p.g]
    G = max(fit_line([max(s - 1, 0) for s in sizes], [p.g[s] for s in sizes]).slope, 0.0) \
        if len(sizes) >= 2 else 0.0
    o_s = _intercept(p.o_s)
    o_r = _intercept(p.o_r)
    L = max(p.rtt[0] / 2.0 - o_s - o_r, 0.0)
    return LogGP(L * US, o_s * US, o_r * US, p.g0 * US, G * US, p.library, PATH_NAMES.get(
        p.path, p.path))


def _intercept(by_size: dict, errors: Optional[dict] = None) -> float:
    """The value at the smallest size of a line over the sizes (at least 0),
    each point weighted by the inverse square of @errors[size] (default:
    its value); the single value when there is one size."""
    if not by_size:
        raise FitError("no values")
    if len(by_size) == 1:
        return max(next(iter(by_size.values())), 0.0)
    xs = [max(s - 1, 0) for s in by_size]
    scales = [errors[s] for s in by_size] if errors is not None else None
    line = fit_line(xs, list(by_size.values()), scales)
    return max(line.at(min(xs)), 0.0)


# ---- prtt -------------------------------------------------------------------------

@dataclass(frozen=True)
class PrttPoint:
    """netgauge's measurements at one size (us): PRTT(1,0,m), PRTT(n,0,m),
    PRTT(n,d,m) with d = PRTT(1,0,m), and the receiver's time of one
    receive after waiting d."""

    size: int
    n: int
    prtt_1_0: float
    prtt_n_0: float
    prtt_n_d: float
    o_r_server: float
    d: float

    @property
    def gap(self) -> float:
        """g + (m - 1) G = (PRTT(n,0,m) - PRTT(1,0,m)) / (n - 1)."""
        return (self.prtt_n_0 - self.prtt_1_0) / (self.n - 1)

    @property
    def o_s(self) -> float:
        """(PRTT(n,d,m) - PRTT(1,0,m)) / (n - 1) - d."""
        return (self.prtt_n_d - self.prtt_1_0) / (self.n - 1) - self.d

    @property
    def d_too_small(self) -> bool:
        """netgauge's warning: d < g + G m, so o_s is not what it seems."""
        return self.d < self.gap


def prtt_points(table: dict) -> list[PrttPoint]:
    """The PrttPoints of one (library, path) from its group() table, at
    the sizes that have all four metrics."""
    medians = {m: _median_by_size(table.get(("prtt", m), {})) for m in PRTT_METRICS}
    points = []
    for size in sorted(medians["prtt_n_0"]):
        if not all(size in medians[m] for m in PRTT_METRICS):
            continue
        burst = table[("prtt", "prtt_n_0")][size][0]
        spaced = table[("prtt", "prtt_n_d")][size]
        n = int(_number(burst, "n") or 0)
        d = statistics.median(float(r.get("d_us", 0.0)) for r in spaced)
        if n < 2:
            continue
        points.append(PrttPoint(size, n, medians["prtt_1_0"][size], medians["prtt_n_0"][size],
                                medians["prtt_n_d"][size], medians["o_r_server"][size], d))
    return points


@dataclass(frozen=True)
class PrttFit:
    """netgauge's LogGP of one (library, path): the fitted line of the gap,
    the overheads, netgauge's own L (PRTT(1,0,0)/2) and the LogGP."""

    gap: Line
    netgauge_L: float
    loggp: LogGP
    warnings: tuple = ()


def loggp_from_prtt(points: Sequence[PrttPoint], library: str = "",
                    path: str = "") -> PrttFit:
    """The LogGP of @points (at two sizes at least, size 0 among them): g
    and G from the line of the gap over (m - 1); o_s and o_r the values at
    the smallest size of their lines over m (o_s's points weighted by the
    inverse square of PRTT(n,d,m)/(n-1), the size of their error); L = PRTT(1,0,0)/2 - o_s - o_r.
    FitError when the points do not allow it."""
    points = sorted(points, key=lambda p: p.size)
    if len(points) < 2 or points[0].size != 0:
        raise FitError("the LogGP fit needs PRTT at size 0 and one more size")
    xs = [max(p.size - 1, 0) for p in points]
    gap = fit_line(xs, [p.gap for p in points])
    # o_s(m) is a small difference of large times: its error grows with
    # PRTT(n,d,m), so the points are weighted by that
    o_s = _intercept({p.size: p.o_s for p in points},
                     {p.size: p.prtt_n_d / (p.n - 1) for p in points})
    o_r = _intercept({p.size: p.o_r_server for p in points})
    rtt0 = points[0].prtt_1_0
    warnings = tuple("d < g + G m at %d B" % p.size for p in points if p.d_too_small)
    loggp = LogGP(max(rtt0 / 2.0 - o_s - o_r, 0.0) * US, o_s * US, o_r * US,
                  max(gap.intercept, 0.0) * US, max(gap.slope, 0.0) * US, library,
                  PATH_NAMES.get(path, path))
    return PrttFit(gap, rtt0 / 2.0, loggp, warnings)


# ---- per (library, path) ------------------------------------------------------------

def fitted_parameters(records: Iterable[dict]) -> list[LogGP]:
    """One LogGP per (library, path) of the logp records in @records, in
    the order met: netgauge's PRTT fit where the records have PRTT at two
    sizes or more (size 0 among them), else the parameterized LogP's.  A
    (library, path) with neither is left out."""
    out = []
    for (library, path), table in group(records).items():
        points = prtt_points(table)
        try:
            out.append(loggp_from_prtt(points, library, path).loggp)
            continue
        except FitError:
            pass
        plogp = plogp_of(table, library, path)
        if plogp is not None:
            try:
                out.append(loggp_from_plogp(plogp))
            except FitError:
                pass
    return out
