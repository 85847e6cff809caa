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
