"""Part ``transports`` of ``postbox bench``: Postbox's MPI between two
virtual nodes over each RSM transport between nodes, side by side.

``postbox-mpi-p2p-bench`` (bench/mpi_p2p.c built against Postbox) runs
under ``postbox run -n 2 --nodes 2`` with ``POSTBOX_TRANSPORT`` set to each
transport the library has (``tcp``, and ``ofi`` when it is built: the
``tcp;ofi_rxm`` provider), the transports interleaved over rounds, for the
8-byte ping-pong and the 4 MB bandwidth.  Its records go into
``transports.jsonl`` with suite ``transports`` (so that the point-to-point
figures, which are by library, do not mix them); transportreport shows the
medians of the rounds side by side.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path
from typing import List, Optional, Sequence, TextIO, Tuple

from postbox import paths, results

RESULTS_NAME = "transports"
SUITE = "transports"
PROGRAM = "postbox-mpi-p2p-bench"
PROBE = "postbox-transport-probe"
TESTS = "pingpong_standard,bandwidth_uni"
SIZES = "8,4M"
# transport -> the variables that choose it (ofi: libfabric's tcp provider,
# the one that reaches other nodes)
TRANSPORTS = (("tcp", ()), ("ofi", ("POSTBOX_OFI_PROVIDER=tcp;ofi_rxm",)))
ROUNDS = {True: 2, False: 5}
RUN_TIMEOUT = 120


def available(transport: str) -> Optional[str]:
    """None when the library can use @transport here, else why not (one
    line), from postbox-transport-probe."""
    try:
        probe = paths.program(PROBE)
    except paths.MissingProgram as exc:
        return str(exc)
    result = subprocess.run([str(probe), transport], capture_output=True, text=True,
                            timeout=60)
    if result.returncode == 0:
        return None
    lines = (result.stdout + result.stderr).strip().splitlines()
    return lines[-1] if lines else "%s exited with status %d" % (PROBE, result.returncode)


def command(transport: str, variables: Sequence[str], round_: int, out: Path) -> List[str]:
    """`postbox run` of the bench program over @transport."""
    argv = [str(paths.program("postbox")), "run", "-n", "2", "--nodes", "2", "--timeout",
            str(RUN_TIMEOUT), "-x", "POSTBOX_TRANSPORT=%s" % transport]
    for variable in variables:
        argv += ["-x", variable]
    return argv + [str(paths.program(PROGRAM)), "--quick", "--no-probe", "--sizes", SIZES,
                   "--tests", TESTS, "--transport", transport, "--nodes", "2",
                   "--placement", "off-node", "--path", "network",
                   "--path-how", "postbox run --nodes 2, POSTBOX_TRANSPORT=%s" % transport,
                   "--round", str(round_), "--json", str(out)]


def run(out_dir: Path, quick: bool, description: dict, terminal: TextIO,
        err: TextIO) -> Tuple[str, str]:
    """Run the part into @out_dir; (verdict, detail)."""
    chosen, skipped = [], []
    for transport, variables in TRANSPORTS:
        why = available(transport)
        if why is None:
            chosen.append((transport, variables))
        else:
            skipped.append("%s: %s" % (transport, why))
            print("postbox bench: transports: %s not measured: %s" % (transport, why), file=err)
    if not chosen:
        return "skipped", "; ".join(skipped)
    jsonl = out_dir / (RESULTS_NAME + ".jsonl")
    failed = []
    rounds = ROUNDS[quick]
    total = rounds * len(chosen)
    start = time.monotonic()
    done = 0
    with open(jsonl, "a", encoding="utf-8") as sink, \
            open(out_dir / (RESULTS_NAME + ".txt"), "a", encoding="utf-8") as text:
        for round_ in range(1, rounds + 1):
            for transport, variables in chosen:
                tmp = out_dir / (".transports-%s-%d.jsonl" % (transport, round_))
                argv = command(transport, variables, round_, tmp)
                left = ""
                if done:
                    left = ", about %.0f s left" % ((time.monotonic() - start) / done
                                                     * (total - done))
                print("transports: round %d/%d, %s (%d of %d runs%s)"
                      % (round_, rounds, transport, done + 1, total, left), file=terminal,
                      flush=True)
                begun = time.monotonic()
                result = subprocess.run(argv, capture_output=True, text=True,
                                        timeout=RUN_TIMEOUT + 30)
                text.write("$ %s\n%s%s" % (shlex.join(argv), result.stdout, result.stderr))
                description.setdefault("runs", []).append(
                    {"name": "transports/%s/round-%d" % (transport, round_), "command": argv,
                     "exit_status": result.returncode,
                     "seconds": round(time.monotonic() - begun, 3)})
                done += 1
                if result.returncode != 0 or not tmp.exists():
                    failed.append("%s round %d (status %d)" % (transport, round_,
                                                               result.returncode))
                    tmp.unlink(missing_ok=True)
                    continue
                for record in results.load_jsonl(tmp):
                    record["suite"] = SUITE
                    sink.write(json.dumps(record) + "\n")
                tmp.unlink()
    detail = ["%s, %d rounds" % (", ".join(t for t, _ in chosen), rounds)]
    if skipped:
        detail.append("not measured: " + "; ".join(skipped))
    if failed:
        detail.append("failed: " + ", ".join(failed))
    return ("FAILED" if failed else "ok"), "; ".join(detail)
