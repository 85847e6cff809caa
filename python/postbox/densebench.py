"""The dense communication bench: bench/mpi_beff.c --tests dense against
every MPI library found.

Part ``mpi-dense`` of ``postbox bench`` (suite ``dense``): the four dense
all-to-all algorithms of Fatoohi, Saini and Ciotti (2006) Sec. 3.3 (after
Fatoohi, Kardys, Koshy, Sivaramakrishnan and Vetter), phase by phase, in the
shapes of beffbench (whose build of mpi_beff it shares) into
``dense.jsonl``/``dense.txt``.  The schedules (``schedule``) are the
program's, written again here for the report's axes and the tests:

- ``aapc`` (congestion-controlled all-to-all personalized communication):
  phase k = 1..P-1, rank r sends to r+k and receives from r-k (mod P);
- ``pairwise`` (simple pair-wise): phase k = 1..Q-1 (Q the power of two at
  least P), r exchanges with r XOR k, or idles when that is not a rank (the
  seed does not give the pairing; XOR makes pairs in full duplex whose
  distance grows to P-1, every pair once);
- ``cumulative`` (cumulative pair-wise): phase j = 1..P/2, the pairs (i, i +
  P/2) for i < j exchange: one pair in the first phase, all in the last;
- ``random`` (random pair-wise): --phases (P-1) phases, each a new random
  permutation of the ranks (the stream of seed S + 1, see
  beffbench.SplitMix64) paired two by two.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import beffbench, mpibench, mpipart

PROGRAM = beffbench.PROGRAM
RESULTS_NAME = "dense"  # dense.jsonl, dense.txt
SUITE = "dense"
TESTS = "dense"
ALGORITHMS = ("aapc", "pairwise", "cumulative", "random")


def _pow2_at_least(n: int) -> int:
    q = 1
    while q < n:
        q *= 2
    return q


def phases(algorithm: str, ranks: int, random_phases: Optional[int] = None) -> int:
    """The number of phases of @algorithm on @ranks ranks."""
    if algorithm == "aapc":
        return ranks - 1
    if algorithm == "pairwise":
        return _pow2_at_least(ranks) - 1
    if algorithm == "cumulative":
        return ranks // 2
    if algorithm == "random":
        return random_phases if random_phases else ranks - 1
    raise ValueError("unknown dense algorithm %r" % algorithm)


def schedule(algorithm: str, ranks: int, seed: int = 1,
             random_phases: Optional[int] = None) -> list:
    """The phases of @algorithm: a list of per-phase lists of (dest, src) for
    each rank, (None, None) for a rank idle in that phase."""
    P = ranks
    stream = beffbench.SplitMix64(seed + 1)
    out = []
    for k in range(1, phases(algorithm, P, random_phases) + 1):
        step = [(None, None)] * P
        if algorithm == "aapc":
            step = [((r + k) % P, (r - k) % P) for r in range(P)]
        elif algorithm == "pairwise":
            step = [((r ^ k), (r ^ k)) if (r ^ k) < P else (None, None) for r in range(P)]
        elif algorithm == "cumulative":
            for i in range(min(k, P // 2)):
                step[i] = (i + P // 2, i + P // 2)
                step[i + P // 2] = (i, i)
        else:
            perm = stream.permutation(P)
            for i in range(0, P - 1, 2):
                step[perm[i]] = (perm[i + 1], perm[i + 1])
                step[perm[i + 1]] = (perm[i], perm[i])
        out.append(step)
    return out


def test_name(algorithm: str) -> str:
    """The records' test of @algorithm: dense_<algorithm>."""
    return "dense_" + algorithm


def run_libraries(out: Path, quick: bool, chosen: Sequence[mpibench.Library],
                  extra: Sequence[str], description: dict, terminal: TextIO,
                  err: TextIO, started: Optional[float] = None,
                  configs: Optional[Sequence[beffbench.Config]] = None) -> beffbench.Outcome:
    """The dense part: mpi_beff --tests dense in every shape into
    @out/dense.jsonl."""
    return beffbench.run_suite(out, quick, chosen, extra, description, terminal, err, started,
                               configs or CONFIGS[quick], TESTS, RESULTS_NAME, "dense")


# the quick profile: one node and two nodes (four virtual nodes in the full)
CONFIGS = {True: (beffbench.Config(4), beffbench.Config(4, 2)),
           False: beffbench.CONFIGS[False]}


def phase_spread(records: Sequence[dict], algorithm: str = "aapc") -> list:
    """(library, ranks, path, size, fastest / slowest phase) of @algorithm at
    its largest size in each run: seed 002's 'drop in the middle phases'."""
    out = []
    for (library, ranks, _, path, _), members in beffbench.runs_of(records, SUITE).items():
        mine = [r for r in members if r.get("test") == test_name(algorithm)
                and isinstance(r.get("median"), (int, float)) and r["median"] > 0]
        if not mine:
            continue
        size = max(int(r["size"]) for r in mine)
        values = [float(r["median"]) for r in mine if int(r["size"]) == size]
        out.append((library, ranks, path, size, max(values) / min(values)))
    return out


def detail(outcome: beffbench.Outcome, jsonl: Optional[Path] = None) -> tuple[str, str]:
    """(verdict, detail) of the part, with the aapc phases' spread from
    @jsonl."""
    verdict, text = beffbench.detail(outcome, None)
    spread = mpipart.records_summary(jsonl, phase_spread)
    if spread:
        text += "; aapc fastest/slowest phase: " + ", ".join(
            "%s %d ranks %s %.1fx" % (library, ranks, path, ratio)
            for library, ranks, path, _, ratio in spread)
    return verdict, text


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[mpibench.Library]] = None,
        configs: Optional[Sequence[beffbench.Config]] = None) -> int:
    """The dense part alone, then the report; returns its exit status."""
    return mpipart.run_part_alone("mpi-dense", run_libraries, detail, RESULTS_NAME, out, quick,
                                  libraries, terminal, found, extra, configs=configs)
