"""machine.json: what ran, where, built how.

Figures are only comparable with the machine, the compiler and the commit
that produced them, so ``postbox bench`` writes these beside the results.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Optional, Sequence

from postbox import __version__, paths


def _run(argv: Sequence[str], cwd: Optional[Path] = None) -> Optional[str]:
    try:
        result = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.strip()


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> Optional[str]:
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return platform.processor() or None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model", "Processor"):
            return value.strip()
    return platform.processor() or None


def cpus_allowed() -> Optional[int]:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def cmake_cache(build: Path) -> dict[str, str]:
    """The entries of build/CMakeCache.txt (empty if there is none)."""
    values = {}
    try:
        text = (build / "CMakeCache.txt").read_text(errors="replace")
    except OSError:
        return values
    for line in text.splitlines():
        if not line or line.startswith(("#", "//")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.split(":", 1)[0]] = value
    return values


def compiler(build: Path) -> dict:
    cache = cmake_cache(build)
    path = cache.get("CMAKE_C_COMPILER")
    version = None
    if path:
        out = _run([path, "--version"])
        version = out.splitlines()[0] if out else None
    return {
        "path": path,
        "version": version,
        "build_type": cache.get("CMAKE_BUILD_TYPE"),
        "sanitize": cache.get("POSTBOX_SANITIZE"),
    }


def git_commit(root: Path) -> dict:
    commit = _run(["git", "rev-parse", "HEAD"], cwd=root)
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def describe(commands: Sequence[Sequence[str]]) -> dict:
    """The description of this machine and of the @commands about to run."""
    build = paths.build_dir()
    uname = platform.uname()
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "cores_allowed": cpus_allowed(),
        "machine": uname.machine,
        "kernel": uname.release,
        "os": "%s %s" % (uname.system, uname.version),
        "python": platform.python_version(),
        "compiler": compiler(build),
        "git": git_commit(paths.repo_root()),
        "postbox_version": __version__,
        "build_dir": str(build),
        "commands": [list(command) for command in commands],
    }


def write(path: Path, description: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(description, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


# ---- the machine's load during a run ---------------------------------------------

LOADAVG = Path("/proc/loadavg")
# a load sample reads the runnable count this many times, SAMPLE_GAP s apart:
# one read is a single instant (0, 1, 2 ...), their mean a short average
SAMPLE_READS = 5
SAMPLE_GAP = 0.004
# seconds between the reads of the runnable count while a run goes on
DURING_GAP = 0.2


def runnable_now(loadavg: Path = LOADAVG) -> Optional[int]:
    """The tasks running or ready to run on the machine right now, less the
    one reading (the kernel's nr_running, /proc/loadavg's fourth field
    "running/total"); None where the file is not there or not of that
    form."""
    try:
        fields = loadavg.read_text(encoding="ascii").split()
        return max(int(fields[3].split("/")[0]) - 1, 0)
    except (OSError, IndexError, ValueError):
        return None


def load_sample(loadavg: Path = LOADAVG, reads: int = SAMPLE_READS,
                gap: float = SAMPLE_GAP) -> dict:
    """The machine's load now: {"loadavg": [1, 5, 15 min] (os.getloadavg),
    "runnable": the mean of @reads reads of runnable_now @gap s apart};
    a key whose value cannot be read is left out."""
    import time

    out: dict = {}
    try:
        out["loadavg"] = [round(v, 2) for v in os.getloadavg()]
    except OSError:
        pass
    counts = []
    for k in range(reads):
        if k:
            time.sleep(gap)
        value = runnable_now(loadavg)
        if value is not None:
            counts.append(value)
    if counts:
        out["runnable"] = round(sum(counts) / len(counts), 2)
    return out


class LoadWatch:
    """Reads the runnable count every @gap s in a thread of its own while a
    run goes on (start(), then stop()); summary() gives {"mean", "max",
    "reads"} of the counts read, {} when none was."""

    def __init__(self, loadavg: Path = LOADAVG, gap: float = DURING_GAP) -> None:
        import threading

        self._loadavg, self._gap = loadavg, gap
        self._counts: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="postbox-load", daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(self._gap):
            value = runnable_now(self._loadavg)
            if value is not None:
                self._counts.append(value)

    def start(self) -> "LoadWatch":
        self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return self.summary()

    def summary(self) -> dict:
        counts = list(self._counts)
        if not counts:
            return {}
        return {"mean": round(sum(counts) / len(counts), 2), "max": max(counts),
                "reads": len(counts)}
