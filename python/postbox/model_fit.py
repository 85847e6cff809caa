"""The fits of the LogGP model: the Model (postbox.model.Model) of a
results folder, from its records.  postbox.model prices what this module
fits, and this module imports it for the Machine and the Cluster it fits
and for predict, which the calibrations price with; none of its names are
re-exported there: build and the fits are imported from here.

Where the parameters come from: postbox.logpfit.fitted_parameters(records)
(the LogP bench) when its records exist, else approximate_from_p2p(records):
a rough LogGP per library and path from the point-to-point records (see
there).  The memcpy rate is the RSM bench's memcpy against size
(rsm.jsonl), the reduce rate the collective bench's 4 MB vector add, a
cache line's trip between cores the RSM bench's cache-line ping-pong, the
node's memory bandwidth the p2p bench's multi-pair bandwidth.

The load during the runs: the runnable tasks sampled just before and
after each run (machine.json's runs), beside each coll record's ranks
(record_backgrounds) and while the runs that gave the G ran
(reference_shares); postbox.model stretches every byte's time by them.

Calibration (build(calibrate=True)): a few measured primitives of the
collective bench itself, one Barrier per library and shape, set what the
point-to-point benches measure under other conditions: the node latencies
are scaled so that the 2-rank Barrier matches (calibrate_latency); with
load samples the wake-up cost is the median over every round of the
one-node Bcast of the smallest size with more ranks than cores of the
cost that makes that round match at its load (fit_wake), without them
the penalty of a shape with more ranks than cores is the one that makes
its least disturbed Barrier round match (calibrate_penalties; across
nodes, a model already slower scales its net latencies down instead).
Those points are then calibrations, not validations.  Without a Barrier record the penalty is
the p2p bench's multi-pair ping-pong at more ranks than cores, minus the
2-rank ping-pong (oversubscription_penalties).

Nothing here runs anything: it reads records.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Iterable, Optional, Sequence

from postbox.loggp import LogGP
from postbox.model import (
    NET, NET_ARRIVE, NODE, US, Cluster, Machine, Model, Rate, candidates, cluster_of,
    coll_medians, constant_rate, excess_load, predict, with_penalties)
from postbox.model_rules import CollTable, library_algorithm, load_table
from postbox.plot import number


# ---- parameters from the point-to-point records ------------------------------------

P2P_PATHS = {"on-node": NODE, "network": NET}


def _p2p_median(records: Iterable[dict], library: str, test: str, path: str,
                ranks: int = 2) -> dict:
    """{size: median seconds} of @library's @test on @path with @ranks ranks
    (the last record of a size wins)."""
    out = {}
    for r in records:
        if r.get("suite") != "p2p" or str(r.get("library")) != library or \
                r.get("test") != test or str(r.get("path") or "on-node") != path or \
                r.get("thread_level") not in (None, "single") or \
                int(number(r.get("ranks")) or 2) != ranks:
            continue
        size, median = number(r.get("size")), number(r.get("median"))
        if size is None or median is None or r.get("unit") != "us":
            continue
        out[int(size)] = median * US
    return out


def approximate_from_p2p(records: Sequence[dict]) -> list:
    """A rough LogGP per library and path from the point-to-point records,
    for when there are no LogP records (the LogP bench measures them
    properly).  From the ping-pong half round trip T(m)
    (pingpong_standard, 2 ranks) and the one-way stream (unidirectional,
    time per message):

    - T0 = T at the smallest size measured; g = the stream's time per
      message at its smallest size (T0 without a stream);
    - G = the median over the sizes of 4 KB and more of (T(m) - T0) / m;
    - o_s = o_r = min(g, T0) / 2, L = T0 - o_s - o_r.  A ping-pong cannot
      tell the overheads from the latency; with o_s, o_r <= g the model's
      prices depend only on T0, g and G, so the split does not matter."""
    libraries = []
    for r in records:
        if r.get("suite") == "p2p" and str(r.get("library")) not in libraries:
            libraries.append(str(r.get("library")))
    out = []
    for library in libraries:
        for p2p_path, path in P2P_PATHS.items():
            pingpong = _p2p_median(records, library, "pingpong_standard", p2p_path)
            if not pingpong:
                continue
            sizes = sorted(pingpong)
            t0 = pingpong[sizes[0]]
            slopes = [(pingpong[s] - t0) / s for s in sizes if s >= 4096]
            G = max(statistics.median(slopes), 0.0) if slopes else 0.0
            stream = _p2p_median(records, library, "unidirectional", p2p_path)
            g = stream[min(stream)] if stream else t0
            o = min(g, t0) / 2
            out.append(LogGP(L=max(t0 - 2 * o, 0.0), o_s=o, o_r=o, g=g, G=G, library=library,
                             path=path))
    return out


def oversubscription_penalties(records: Sequence[dict]) -> dict:
    """{(library, path, ranks): seconds} the extra time per step of @ranks
    ranks running at once: the multi-pair ping-pong's half round trip at
    @ranks ranks less the 2-rank one, the median over the sizes up to 4 KB
    measured by both (scaled_penalty uses it only where the ranks outnumber
    the cores)."""
    out = {}
    seen = set()
    for r in records:
        if r.get("suite") == "p2p" and r.get("test") == "multipair_latency" \
                and int(number(r.get("ranks")) or 0) > 2:
            seen.add((str(r.get("library")), str(r.get("path") or "on-node"),
                      int(number(r.get("ranks")) or 0)))
    for library, p2p_path, ranks in seen:
        path = P2P_PATHS.get(p2p_path)
        if path is None:
            continue
        many = _p2p_median(records, library, "multipair_latency", p2p_path, ranks)
        two = _p2p_median(records, library, "multipair_latency", p2p_path, 2) or \
            _p2p_median(records, library, "pingpong_standard", p2p_path)
        common = [s for s in sorted(set(many) & set(two)) if s <= 4096]
        if common:
            out[(library, path, ranks)] = max(
                statistics.median(many[s] - two[s] for s in common), 0.0)
    return out


def node_bandwidths(records: Sequence[dict]) -> dict:
    """{library: Rate} the node's memory bandwidth as each library's
    messages see it: the multi-pair bandwidth on one node (the sum over the
    pairs) against size, at each size the most over the pair counts."""
    best: dict = {}
    for r in records:
        if r.get("suite") != "p2p" or r.get("test") != "multipair_bandwidth" or \
                str(r.get("path") or "on-node") != "on-node" or r.get("unit") != "MB/s":
            continue
        size, median = number(r.get("size")), number(r.get("median"))
        if not size or not median:
            continue
        sizes = best.setdefault(str(r.get("library")), {})
        sizes[size] = max(sizes.get(size, 0.0), median * 1e6)
    return {library: Rate(tuple(sorted(sizes.items()))) for library, sizes in best.items()}


def memcpy_rate(records: Sequence[dict]) -> Optional[Rate]:
    """The RSM bench's memcpy bandwidth against size (rsm.jsonl, MB/s)."""
    points = {}
    for r in records:
        if r.get("test") == "memcpy" and r.get("metric") == "bandwidth" \
                and r.get("unit") == "MB/s":
            size, median = number(r.get("size")), number(r.get("median"))
            if size and median and median > 0:
                points[size] = median * 1e6
    return Rate(tuple(sorted(points.items()))) if points else None


def line_time(records: Sequence[dict]) -> Optional[float]:
    """Seconds of a cache line's trip between two cores: the RSM bench's
    cache-line ping-pong half round trip (rsm.jsonl, test
    cacheline_pingpong, us), the median over its records; None without."""
    values = [number(r.get("median")) for r in records
              if r.get("test") == "cacheline_pingpong" and r.get("unit") == "us"]
    values = [v for v in values if v is not None and v > 0]
    return statistics.median(values) * US if values else None


def reduce_rate(records: Sequence[dict]) -> Optional[Rate]:
    """The collective bench's vector add (ref_vector_add: a[i] += b[i] of
    its size in floats, median us) as bytes/s; the median over its
    records."""
    rates = []
    for r in records:
        if r.get("suite") == "coll" and r.get("test") == "ref_vector_add":
            size, median = number(r.get("size")), number(r.get("median"))
            if size and median:
                rates.append(size / (median * US))
    return constant_rate(statistics.median(rates)) if rates else None


def parameters(records: Sequence[dict]) -> tuple:
    """(list of LogGP, where from): the LogP bench's fit when its module
    and records are there, else approximate_from_p2p."""
    try:
        from postbox import logpfit  # the LogP bench's fit
    except ImportError:
        logpfit = None
    if logpfit is not None:
        fitted = list(logpfit.fitted_parameters(records))
        if fitted:
            return fitted, "the LogP bench's fit (postbox.logpfit)"
    return approximate_from_p2p(records), "approximated from the point-to-point records"


def machine_for(params: Sequence[LogGP], library: str, copy: Optional[Rate] = None,
                reduce: Optional[Rate] = None, bandwidth: Optional[Rate] = None,
                line: Optional[float] = None) -> Optional[Machine]:
    """@library's Machine from @params (None without its node LogGP)."""
    node = next((p for p in params if p.library == library and p.path == NODE), None)
    net = next((p for p in params if p.library == library and p.path == NET), None)
    if node is None:
        return None
    return Machine(node=node, net=net, copy=copy, reduce=reduce, node_bandwidth=bandwidth,
                   line=line)


def machine_cores(records: Sequence[dict], description: Optional[dict] = None) -> int:
    """The cores the ranks ran on: machine.json's cores_allowed (or cores),
    else the most ranks of a record not marked oversubscribed."""
    for key in ("cores_allowed", "cores"):
        value = number((description or {}).get(key))
        if value and value >= 1:
            return int(value)
    fit = [int(number(r.get("ranks")) or 0) for r in records
           if r.get("oversubscribed") is False]
    return max(fit, default=0)


# ---- the machine's load during the runs --------------------------------------

def _round_of(name: str) -> Optional[int]:
    last = name.rsplit("/", 1)[-1]
    if last.startswith("round-") and last[6:].isdigit():
        return int(last[6:])
    return None


def _sampled_runs(description: Optional[dict]) -> list:
    """(run, its name's parts, B) of machine.json's runs that carry load
    samples (mpibench.run_one): B the mean of the runnable count sampled
    just before the run and just after it, when none of the run's ranks
    are running, so the tasks of other work that its ranks competed
    with."""
    out = []
    for run in (description or {}).get("runs") or []:
        if not isinstance(run, dict):
            continue
        counts = [number(sample.get("runnable")) for sample in
                  (run.get("load_start"), run.get("load_end")) if isinstance(sample, dict)]
        counts = [c for c in counts if c is not None and c >= 0]
        if counts:
            out.append((run, str(run.get("name") or "").split("/"), sum(counts) / len(counts)))
    return out


def run_backgrounds(description: Optional[dict]) -> dict:
    """{(library, path, ranks, round): runnable tasks} of the collective
    bench's runs in machine.json's runs (coll/<library>/<shape>[/round-k])
    that carry load samples: their B (_sampled_runs); round None for a
    shape run once."""
    out = {}
    for run, parts, background in _sampled_runs(description):
        if len(parts) >= 3 and parts[0] == "coll":
            key = (parts[1], str(run.get("path") or "on-node"),
                   int(number(run.get("ranks")) or 0), _round_of(str(run.get("name"))))
            out[key] = background
    return out


def reference_shares(description: Optional[dict], source: Optional[str],
                     cores: int) -> dict:
    """{library: (node, net)} the tasks per core on @cores cores, 1 +
    excess_load(ranks, cores, B), while the runs that gave each path's G
    ran: the LogP bench's runs (logp/<library>/2-ranks-<path>) when the
    parameters are its fit (@source names postbox.logpfit), else the
    point-to-point ping-pong's (<library>[/network]/pingpong_standard); B
    as in _sampled_runs.  A path without a sampled run is 1."""
    from_logp = "logpfit" in str(source or "")
    found: dict = {}
    for run, parts, background in _sampled_runs(description):
        if from_logp and len(parts) == 3 and parts[0] == "logp":
            library, path = parts[1], NET if parts[2].endswith("network") else NODE
        elif not from_logp and parts[-1:] == ["pingpong_standard"] and len(parts) in (2, 3):
            library, path = parts[0], NET if len(parts) == 3 else NODE
        else:
            continue
        found.setdefault(library, {})[path] = 1.0 + excess_load(
            int(number(run.get("ranks")) or 2), cores, background)
    return {library: (paths.get(NODE, 1.0), paths.get(NET, 1.0))
            for library, paths in found.items()}


def _record_round(record: dict) -> Optional[int]:
    value = number(record.get("round"))
    return int(value) if value is not None and value >= 0 else None


def record_backgrounds(records: Sequence[dict], description: Optional[dict]) -> dict:
    """{(library, cluster, round): runnable tasks beside the ranks} of the
    coll records whose run has load samples (run_backgrounds)."""
    runs = run_backgrounds(description)
    out: dict = {}
    if not runs:
        return out
    for r in records:
        if r.get("suite") != "coll":
            continue
        library, round_ = str(r.get("library")), _record_round(r)
        key = (library, str(r.get("path") or "on-node"), int(number(r.get("ranks")) or 0),
               round_)
        if key in runs:
            out[(library, cluster_of(r), round_)] = runs[key]
    return out


def traffic_backgrounds(description: Optional[dict]) -> dict:
    """{(library, (ranks, nodes)): runnable tasks} of the traffic bench's
    runs in machine.json's runs (traffic/<library>/<ranks>-ranks-<nodes>-
    node[s]) that carry load samples: their B (_sampled_runs)."""
    out = {}
    for _, parts, background in _sampled_runs(description):
        if len(parts) != 3 or parts[0] != "traffic":
            continue
        words = parts[2].split("-")
        if len(words) == 4 and words[1] == "ranks" and words[3] in ("node", "nodes") \
                and words[0].isdigit() and words[2].isdigit():
            out[(parts[1], (int(words[0]), int(words[2])))] = background
    return out


# ---- calibration on the collective bench's own calls --------------------------------

def fit_wake(model: Model, records: Sequence[dict]) -> None:
    """Fit each library's wake-up cost (Model.wake): the seconds a step of
    ranks that outnumber the cores waits for a peer to be scheduled, per
    rank beyond one per core, from its Bcast of the smallest size on one
    node (WAKE_CALIBRATION) in every round of every shape with more ranks
    than cores whose run has load samples (Model.background).  The model's
    Bcast is linear in it, T(w) = T(0) + k w, so each round gives w =
    (measured - T(0)) / k with T(0) and k at that round's load (its
    bytes); the fit is the median over the rounds (at least 0): a typical
    round, not the least disturbed one, so a polling library whose waits
    take milliseconds gets a cost to match.  Those Bcast points are then
    calibrations.  A library without such rounds keeps the per-shape
    penalties (calibrate_penalties)."""
    estimates: dict = {}
    smallest: dict = {}
    for r in records:
        if r.get("suite") == "coll" and r.get("test") == WAKE_CALIBRATION:
            key = (str(r.get("library")), cluster_of(r))
            size = int(number(r.get("size")) or 0)
            smallest[key] = min(smallest.get(key, size), size)
    for r in records:
        if r.get("suite") != "coll" or r.get("test") != WAKE_CALIBRATION or r.get("gave_up"):
            continue
        library, median = str(r.get("library")), number(r.get("median"))
        if library not in model.machines or median is None:
            continue
        cluster = cluster_of(r)
        size = int(number(r.get("size")) or 0)
        key = (library, cluster, _record_round(r))
        if cluster.nodes != 1 or cluster.ranks <= model.cores or key not in model.background \
                or size != smallest[(library, cluster)]:
            continue
        background = model.background[key]
        algorithm = library_algorithm(library, WAKE_CALIBRATION, cluster, size, model.table) or \
            candidates(library, WAKE_CALIBRATION)[0]

        def timed(wake: float) -> float:
            machine = with_penalties(model.machines[library], model.penalties, library,
                                     cluster.ranks, model.cores, background, wake)
            return predict(machine, cluster, WAKE_CALIBRATION, algorithm, size, model.table)

        base = timed(0.0)
        slope = (timed(1e-6) - base) / 1e-6
        if slope > 0:
            estimates.setdefault(library, []).append((median * US - base) / slope)
            model.calibrated.add((library, cluster, WAKE_CALIBRATION, size))
    for library, values in estimates.items():
        model.wake[library] = max(statistics.median(values), 0.0)


# the collective whose measurement with more ranks than cores sets the
# per-step penalty of that shape (calibrate_penalties)
CALIBRATION = "barrier"
# the collective whose smallest size with more ranks than cores sets the
# wake-up cost (fit_wake): the step every node-area algorithm is made of,
# one rank stores and the others see.  The Barrier set it before: at 4
# ranks on 2 cores Postbox's Barrier took twice its Bcast, Allreduce,
# Allgather and Alltoall of 8 B (5.9 us against 2.9-3.6), and a cost that
# made the Barrier match priced those 58-186 % high (bench/README.md)
WAKE_CALIBRATION = "bcast"
# the collective whose smallest size at ranks that fit the cores sets the
# node latencies (calibrate_latency)
LATENCY_CALIBRATION = "bcast"
# and the one whose smallest size across nodes sets the penalty of a net
# message (calibrate_penalties).  The Barrier set it before: at 4 ranks on
# 2 nodes Postbox's Barrier took 30-50 us, its Bcast and Reduce of 8 B
# 7-13, and a penalty that made the Barrier match priced those 80-200 %
# high; the Barrier now sets the wait of a step where all wait
# (Machine.net_arrive), which the rooted calls do not pay
NET_CALIBRATION = "bcast"
# and the one whose smallest size there sets the wait of a step where every
# rank waits for all (Machine.arrive)
ARRIVE_CALIBRATION = "allreduce"


def scaled_latency(machine: Machine, factor: float, path: str = NODE) -> Machine:
    """@machine with the per-message times of its @path (o_s, L, o_r, g;
    on the node also the cache line's trip) @factor times as long; G and
    the rates stay."""
    p = machine.params(path)
    p = replace(p, L=p.L * factor, o_s=p.o_s * factor, o_r=p.o_r * factor, g=p.g * factor)
    if path == NET:
        return replace(machine, net=p)
    line = machine.line * factor if machine.line is not None else None
    return replace(machine, node=p, line=line)


def calibrate_latency(model: Model, records: Sequence[dict]) -> None:
    """Calibrate each library's node latencies on the coll bench's own
    calls at the fewest ranks of one node that fit the cores (2 here),
    taken in the same runs and after the same synchronisation as the
    collectives (the LogP bench's ping-pongs also time a rank waking up for
    each message, which a collective called by ranks that are all running
    does not see):

    - the latencies (scaled_latency: o_s, L, o_r, g, the cache line's trip)
      by one factor, so that the model's Bcast of the smallest size
      measured equals the measured one: a step where the root stores or
      sends and the other sees it (one message, or one node-area phase);
    - then Machine.arrive, the measured Allreduce of the smallest size
      less the model's without it: the wait of a node-area step where
      every rank waits for all the others (the later rank's arrival),
      which a rooted step (Bcast, Scatter, Reduce, Gather) does not pay;
      the median of its rounds, as the validation takes: the wait is the
      usual case, not a disturbance (a 2-rank Allreduce of 4 B took 3.1
      us in most rounds, 0.6 us in one).  Without an Allreduce record the
      Barrier sets it.  Where the library's call has no node-area step
      where all wait (message passing), arrive stays 0.

    Without a Bcast record the Barrier alone sets the factor (arrive 0).
    A step at ranks that fit is linear in those times, so each point
    matches exactly and is then a calibration (Point.calibration).  The
    factor only scales down (a call slower than the ping-pongs' price is
    a disturbed one, not a cheaper ping-pong), and its measurement is the
    least disturbed round's (the smallest of the rounds' medians): one
    round of a 2-rank Barrier on a loaded machine took 6 ms where another
    took 12 us."""
    if model.cores <= 0:
        return
    barriers = coll_medians(model, records, (CALIBRATION,), min)
    bcasts = coll_medians(model, records, (LATENCY_CALIBRATION,), min)
    waits = coll_medians(model, records, (ARRIVE_CALIBRATION,))
    for library in model.machines:
        fitting = {c for (lib, _, _), by in list(barriers.items()) + list(bcasts.items())
                   if lib == library for c in by
                   if c.nodes == 1 and 2 <= c.ranks <= model.cores}
        if not fitting:
            continue
        cluster = min(fitting)
        bcast_sizes = sorted(size for (lib, _, size), by in bcasts.items()
                             if lib == library and cluster in by)
        barrier = (barriers.get((library, CALIBRATION, 0)) or {}).get(cluster)
        if bcast_sizes:
            size = bcast_sizes[0]
            collective, measured = LATENCY_CALIBRATION, \
                bcasts[(library, LATENCY_CALIBRATION, size)][cluster]
        elif barrier is not None:
            size, collective, measured = 0, CALIBRATION, barrier
        else:
            continue
        machine = model.machines[library]

        def timed(mach: Machine, coll: str, bytes_: int) -> float:
            algorithm = library_algorithm(library, coll, cluster, bytes_, model.table) or \
                candidates(library, coll)[0]
            return predict(mach, cluster, coll, algorithm, bytes_, model.table)

        # the call is linear in the factor: T(f) = T(0) + f (T(1) - T(0))
        base, bytes_only = timed(machine, collective, size), \
            timed(scaled_latency(machine, 0.0), collective, size)
        if not base > bytes_only or not measured > 0:
            continue
        factor = min(max((measured - bytes_only) / (base - bytes_only), 0.0), 1.0)
        machine = scaled_latency(machine, factor)
        model.latency_scale[library] = factor
        model.calibrated.add((library, cluster, collective, size))
        wait_sizes = sorted(size for (lib, _, size), by in waits.items()
                            if lib == library and cluster in by)
        if collective == CALIBRATION:
            wait = None
        elif wait_sizes:
            wait = (ARRIVE_CALIBRATION, wait_sizes[0],
                    waits[(library, ARRIVE_CALIBRATION, wait_sizes[0])][cluster])
        else:
            wait = (CALIBRATION, 0, barrier) if barrier is not None else None
        if wait is not None and wait[2] > 0:
            coll, bytes_, value = wait
            without = timed(machine, coll, bytes_)
            with_one = timed(replace(machine, arrive=1e-6), coll, bytes_)
            if with_one > without:
                machine = replace(machine, arrive=max(value - without, 0.0) * 1e-6 /
                                  (with_one - without))
                model.calibrated.add((library, cluster, coll, bytes_))
        model.machines[library] = machine


def calibrate_penalties(model: Model, records: Sequence[dict]) -> None:
    """Replace in @model the per-step penalties of the shapes with more
    ranks than cores by those that make the model match the coll bench on
    that shape: a model time is linear in a penalty, T(p) = T(0) + k p, so
    p = (measured - T(0)) / k (0 when the model is already slower).  The
    one-node shapes set the node penalty at their rank count from their
    Barrier.  Then the shapes across nodes, the node's penalty as just
    set: the Bcast of the smallest size (NET_CALIBRATION: a message one
    rank sends and another receives) sets the net penalty, and the
    Barrier the extra wait of a step between nodes where every rank
    waits (Machine.net_arrive); without that Bcast the Barrier sets the
    penalty and the wait stays 0.  Where the model's call is slower than
    the measured one with no penalty, the net latencies are scaled down
    instead (_scale_net_latency).  A library's algorithm is its own rules'
    (library_algorithm), else its family's first (dissemination and
    recursive doubling cost the same steps on 2^k ranks).  The Barrier's
    measurement is its least disturbed round's (the smallest of the
    rounds' medians), the Bcast's the median of its rounds (a typical
    round, as fit_wake takes).  Each point so used is then a calibration, not a
    validation (Point.calibration).  A library whose one-node runs carry
    load samples gets its node penalty from fit_wake instead (first)."""
    if model.cores <= 0:
        return
    fit_wake(model, records)
    barriers = coll_medians(model, records, (CALIBRATION,), min)
    rooted = coll_medians(model, records, (NET_CALIBRATION,))
    shapes = sorted({(library, cluster, value)
                     for (library, _, _), by_cluster in barriers.items()
                     for cluster, value in by_cluster.items()
                     if cluster.ranks > model.cores
                     and not (cluster.nodes == 1 and library in model.wake)},
                    key=lambda item: (item[1].nodes > 1, item[0], item[1]))
    for library, cluster, barrier in shapes:
        steps = [(NODE if cluster.nodes == 1 else NET, CALIBRATION, 0, barrier)]
        if cluster.nodes > 1:
            sizes = sorted(size for (lib, _, size), by in rooted.items()
                           if lib == library and cluster in by)
            if sizes:
                steps = [(NET, NET_CALIBRATION, sizes[0],
                          rooted[(library, NET_CALIBRATION, sizes[0])][cluster]),
                         (NET_ARRIVE, CALIBRATION, 0, barrier)]
        for key, collective, size, value in steps:
            _calibrate_one(model, library, cluster, key, collective, size, value)


# the field of Machine each key of Model.penalties sets
_PENALTY_FIELDS = {NODE: "hop_penalty", NET: "net_hop_penalty", NET_ARRIVE: "net_arrive"}


def _calibrate_one(model: Model, library: str, cluster: Cluster, key: str, collective: str,
                   size: int, value: float) -> None:
    """Set @library's penalty @key (NODE, NET or NET_ARRIVE) at @cluster's
    ranks so that its model @collective of @size bytes takes @value
    seconds (calibrate_penalties)."""
    machine = model.machine(library, cluster)
    algorithm = library_algorithm(library, collective, cluster, size, model.table) or \
        candidates(library, collective)[0]

    def timed(penalty: float) -> float:
        priced = replace(machine, **{_PENALTY_FIELDS[key]: penalty})
        return predict(priced, cluster, collective, algorithm, size, model.table)

    base = timed(0.0)
    slope = (timed(1e-6) - base) / 1e-6
    if slope <= 0:
        return
    model.penalties[(library, key, cluster.ranks)] = max((value - base) / slope, 0.0)
    model.calibrated.add((library, cluster, collective, size))
    if key == NET and value < base:
        _scale_net_latency(model, library, cluster, collective, size, algorithm, value)


def _scale_net_latency(model: Model, library: str, cluster: Cluster, collective: str,
                       size: int, algorithm: str, value: float) -> None:
    """Scale @library's net o_s, L, o_r and g down (no penalty) until the
    model's @collective of @size bytes on @cluster is @value: the LogP
    bench's net fit came out slower than the collectives' own steps on
    that path.  Bisection (a step's price is the max of its node and net
    latencies)."""
    machine = model.machines[library]

    def timed(factor: float) -> float:
        scaled = scaled_latency(machine, factor, NET)
        return predict(with_penalties(scaled, model.penalties, library, cluster.ranks,
                                      model.cores, model.background_of(library, cluster),
                                      model.wake.get(library)),
                       cluster, collective, algorithm, size, model.table)

    lo, hi = 0.0, 1.0
    if timed(lo) > value:
        return  # the node's part alone is already slower
    for _ in range(60):
        mid = (lo + hi) / 2
        if timed(mid) > value:
            hi = mid
        else:
            lo = mid
    model.machines[library] = scaled_latency(machine, lo, NET)
    model.net_latency_scale[library] = lo


# ---- the model of a results folder ------------------------------------------------

def build(records: Sequence[dict], description: Optional[dict] = None,
          params: Optional[Sequence[LogGP]] = None, source: Optional[str] = None,
          table: Optional[CollTable] = None, calibrate: bool = True) -> Model:
    """The Model of @records: @params (else parameters(records)), the memcpy
    and reduce rates, the cache line's trip, the oversubscription penalties,
    Postbox's table; with @calibrate, the node latencies scaled by the coll
    bench's 2-rank Barrier (calibrate_latency) and the penalties of the
    shapes with more ranks than cores from its Barrier on them
    (calibrate_penalties)."""
    if params is None:
        params, source = parameters(records)
    copy, reduce, line = memcpy_rate(records), reduce_rate(records), line_time(records)
    bandwidths = node_bandwidths(records)
    machines = {}
    for p in params:
        if p.library not in machines:
            machine = machine_for(params, p.library, copy, reduce, bandwidths.get(p.library),
                                  line)
            if machine is not None:
                machines[p.library] = machine
    built = Model(machines, source or "given", oversubscription_penalties(records),
                  machine_cores(records, description),
                  table if table is not None else load_table(), list(params))
    built.background = record_backgrounds(records, description)
    built.traffic_background = traffic_backgrounds(description)
    for library, (node, net) in reference_shares(description, source, built.cores).items():
        if library in built.machines:
            built.machines[library] = replace(built.machines[library], node_reference=node,
                                              net_reference=net)
    if calibrate:
        calibrate_latency(built, records)
        calibrate_penalties(built, records)
    return built
