"""``postbox bench``: run the bench programs into a results folder.

The folder holds ``machine.json`` (machine, build, commands), one JSON-lines
file per program (``rsm.jsonl``), the table each program printed
(``rsm.txt``) and the report (``index.html``).
"""

from __future__ import annotations

import datetime
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence, TextIO

from postbox import machine, paths, report, results

# (name of the results file, program in build/bin); run in this order
PROGRAMS = (("rsm", "postbox-rsm-bench"),)


class BenchError(Exception):
    pass


def default_out_dir(now: Optional[datetime.datetime] = None) -> Path:
    now = now or datetime.datetime.now()
    return paths.repo_root() / "results" / now.strftime("%Y%m%d-%H%M%S")


def prepare_out_dir(out: Path) -> None:
    """Create @out; refuse one that already holds results (they would mix)."""
    if out.exists() and not out.is_dir():
        raise BenchError("%s exists and is not a directory" % out)
    if out.is_dir() and any(out.glob("*.jsonl")):
        raise BenchError("%s already holds results; choose another --out" % out)
    out.mkdir(parents=True, exist_ok=True)


def commands(out: Path, quick: bool, extra: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(name, argv) of each program to run; MissingProgram if one is not built."""
    planned = []
    for name, program in PROGRAMS:
        argv = [str(paths.program(program)), "--json", str(out / (name + ".jsonl"))]
        if quick:
            argv.append("--quick")
        argv.extend(extra)
        planned.append((name, argv))
    return planned


def stream(argv: Sequence[str], copy: Path, terminal: TextIO) -> int:
    """Run @argv, sending its output to @terminal and to the file @copy."""
    with open(copy, "w", encoding="utf-8") as saved:
        process = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors="replace", bufsize=1)
        try:
            assert process.stdout is not None
            for line in process.stdout:
                terminal.write(line)
                terminal.flush()
                saved.write(line)
            return process.wait()
        except KeyboardInterrupt:
            # the child got the same SIGINT; give it a moment to leave cleanly
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            raise


def run(out: Optional[Path], quick: bool, check: bool, extra: Sequence[str],
        terminal: TextIO = sys.stdout) -> int:
    """The whole job; returns the exit status of `postbox bench`."""
    err = sys.stderr
    out = Path(out) if out is not None else default_out_dir()
    try:
        planned = commands(out, quick, extra)
        prepare_out_dir(out)
    except (paths.MissingProgram, BenchError) as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1

    description = machine.describe([argv for _, argv in planned])
    description["runs"] = []
    machine.write(out / "machine.json", description)
    print("postbox bench: results in %s" % out, file=terminal)

    failed = []
    for index, (name, argv) in enumerate(planned, 1):
        print("[%d/%d] %s" % (index, len(planned), " ".join(shlex.quote(a) for a in argv)),
              file=terminal, flush=True)
        start = time.monotonic()
        try:
            status = stream(argv, out / (name + ".txt"), terminal)
        except KeyboardInterrupt:
            print("\npostbox bench: interrupted; partial results in %s" % out, file=err)
            return 130
        except OSError as exc:
            status = None
            print("postbox bench: cannot run %s: %s" % (argv[0], exc), file=err)
        seconds = time.monotonic() - start
        description["runs"].append(
            {"name": name, "command": argv, "exit_status": status, "seconds": round(seconds, 3)})
        machine.write(out / "machine.json", description)
        if status == 0:
            print("[%d/%d] %s done in %.1f s" % (index, len(planned), name, seconds),
                  file=terminal, flush=True)
        else:
            failed.append(name)
            how = "could not start" if status is None else (
                "was killed by signal %d" % -status if status < 0 else
                "failed with exit status %d" % status)
            print("postbox bench: %s %s after %.1f s (output above and in %s)"
                  % (Path(argv[0]).name, how, seconds, out / (name + ".txt")), file=err)

    try:
        records = results.load_dir(out)
    except results.ResultsError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1

    print("", file=terminal)
    print(results.format_ratios(records), end="", file=terminal)
    if records:
        page = report.write(out, records)
        print("Report: %s" % page, file=terminal)
    else:
        print("postbox bench: no measurements were recorded", file=err)

    status = 0
    if failed:
        print("postbox bench: FAILED: %s" % ", ".join(failed), file=err)
        status = 1
    if check:
        bad = [verdict for verdict in results.check(records) if not verdict.ok]
        for verdict in bad:
            print("postbox bench: check failed: %s" % verdict.describe().strip(), file=err)
        if bad:
            status = 1
        elif not failed:
            print("postbox bench: every acceptance limit holds", file=terminal)
    return status
