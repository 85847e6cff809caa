"""``postbox info``: what this Postbox is and what it finds on this machine.

What an ``ompi_info`` user looks for, each part read from where it is kept
rather than written down twice:

- the version, and where the tool runs from (an install prefix or a build
  tree);
- the build: compiler, flags, build type, sanitizers, and the PMI clients
  built in (``share/postbox/build-info.json``, written by CMake);
- the MPI library: the standard version, the ABI version and the library's
  version string, asked of ``libmpi_abi.so.1`` itself (MPI_Get_version,
  MPI_Abi_get_version and MPI_Get_library_version need no MPI_Init);
- the RSM transports: the ones the library has (``postbox-transport-probe
  --list``), each tried here (export, connect, put, get within one process),
  available or why not; a transport Postbox knows of but the library lacks
  is "not built";
- the launchers: ``postbox run`` (this install's mpirun), MPICH's Hydra
  (``mpiexec.hydra``), Slurm's ``srun`` and PRRTE's ``prterun`` (Open MPI 5),
  found on PATH or not;
- every POSTBOX_* tunable (the libraries' own tables, through
  ``postbox-config-dump``) with its value and where the value comes from:
  the environment or the default.

``gather`` returns all of it as one dictionary (``postbox info --json``);
``format_text`` lays it out for reading.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from typing import Mapping, Optional

from postbox import __version__, config, paths

PROBE_PROGRAM = "postbox-transport-probe"
PROBE_TIMEOUT = 20

# the transports Postbox has a design for; the library may be built without
# some (ofi needs libfabric), and those are reported as "not built"
KNOWN_TRANSPORTS = ("shm", "tcp", "ofi")

# (name, command on PATH, what it is)
LAUNCHERS = (
    ("Hydra", "mpiexec.hydra", "MPICH's launcher, PMI-1 and PMI-2"),
    ("Slurm srun", "srun", "srun --mpi=pmi2"),
    ("prterun", "prterun", "PRRTE, Open MPI 5's launcher, PMIx"),
)

# the PMI flavours a Postbox library can speak, and how each is reached
PMI_FLAVOURS = (
    ("PMI-1", "PMI_FD or PMI_PORT: postbox run, Hydra"),
    ("PMI-2", "PMI_FD: Slurm srun --mpi=pmi2, Hydra with POSTBOX_PMI_VERSION=2"),
    ("PMIx", "srun --mpi=pmix, prterun"),
)

# the largest MPI_Get_library_version string (mpi.h: MPI_MAX_LIBRARY_VERSION_STRING)
LIBRARY_VERSION_MAX = 8192


def location() -> dict:
    """Where the tool runs from: an install prefix, or a build tree and its
    source tree."""
    prefix = paths.installed_prefix()
    if prefix is not None:
        return {"kind": "installed", "prefix": str(prefix), "bin": str(paths.bin_dir()),
                "lib": str(paths.lib_dir())}
    return {"kind": "build tree", "build": str(paths.build_dir()),
            "source": str(paths.repo_root()), "bin": str(paths.bin_dir()),
            "lib": str(paths.lib_dir())}


def build_info() -> dict:
    """build-info.json of the build tree or prefix, or {"error": why not}."""
    path = paths.data_dir() / "build-info.json"
    try:
        return json.loads(path.read_text())
    except OSError as exc:
        return {"error": "cannot read %s: %s (run `make`)" % (path, exc.strerror or exc)}
    except ValueError as exc:
        return {"error": "%s is not JSON: %s" % (path, exc)}


def mpi_library() -> dict:
    """The standard and ABI versions and the version string, from the
    library itself."""
    path = paths.lib_dir() / "libmpi_abi.so.1"
    try:
        lib = ctypes.CDLL(str(path))
        major, minor = ctypes.c_int(), ctypes.c_int()
        abi_major, abi_minor = ctypes.c_int(), ctypes.c_int()
        text = ctypes.create_string_buffer(LIBRARY_VERSION_MAX)
        length = ctypes.c_int()
        codes = (lib.MPI_Get_version(ctypes.byref(major), ctypes.byref(minor)),
                 lib.MPI_Abi_get_version(ctypes.byref(abi_major), ctypes.byref(abi_minor)),
                 lib.MPI_Get_library_version(text, ctypes.byref(length)))
    except (OSError, AttributeError) as exc:
        return {"file": str(path), "error": "cannot load it: %s" % exc}
    if any(codes):
        return {"file": str(path), "error": "a version query failed (error codes %s)"
                % ", ".join(map(str, codes))}
    return {"file": str(path), "standard": "%d.%d" % (major.value, minor.value),
            "abi": "%d.%d" % (abi_major.value, abi_minor.value),
            "library": text.value[:max(length.value, 0)].decode("utf-8", "replace").strip()}


def _run_probe(argv: list, environ: Mapping[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                          env=dict(environ))


def _library_message(stderr: str) -> str:
    """The library's last message on stderr, if any."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def transports(environ: Mapping[str, str]) -> list:
    """Each transport: its state (available, unavailable, not built) and
    the detail."""
    try:
        probe = str(paths.program(PROBE_PROGRAM))
    except paths.MissingProgram as exc:
        return [{"name": name, "state": "unknown", "detail": str(exc)}
                for name in KNOWN_TRANSPORTS]
    try:
        listed = _run_probe([probe, "--list"], environ)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [{"name": name, "state": "unknown", "detail": "%s --list: %s" % (probe, exc)}
                for name in KNOWN_TRANSPORTS]
    if listed.returncode != 0:
        message = _library_message(listed.stderr) or "exit status %d" % listed.returncode
        return [{"name": name, "state": "unknown", "detail": "%s --list: %s" % (probe, message)}
                for name in KNOWN_TRANSPORTS]
    built = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    out = []
    for name in built + [n for n in KNOWN_TRANSPORTS if n not in built]:
        if name not in built:
            out.append({"name": name, "state": "not built",
                        "detail": "this library was built without it"})
            continue
        out.append(_probe_one(probe, name, environ))
    return out


def _probe_one(probe: str, name: str, environ: Mapping[str, str]) -> dict:
    try:
        result = _run_probe([probe, name], environ)
    except subprocess.TimeoutExpired:
        return {"name": name, "state": "unavailable",
                "detail": "its probe did not finish in %d s" % PROBE_TIMEOUT}
    except OSError as exc:
        return {"name": name, "state": "unknown", "detail": str(exc)}
    try:
        verdict = json.loads(result.stdout)
    except ValueError:
        how = "exit status %d" % result.returncode if result.returncode >= 0 else \
            "killed by signal %d" % -result.returncode
        message = _library_message(result.stderr)
        return {"name": name, "state": "unavailable",
                "detail": "its probe failed (%s)%s" % (how, ": " + message if message else "")}
    if verdict.get("available"):
        detail = "export, connect, put and get work here; %s" % (
            "maps segments" if verdict.get("can_map") else "no mapping (put/get only)")
        return {"name": name, "state": "available", "detail": detail,
                "can_map": bool(verdict.get("can_map")),
                "page_size": verdict.get("page_size"),
                "max_segment_size": verdict.get("max_segment_size")}
    detail = "%s: %s" % (verdict.get("step", "?"), verdict.get("error", "?"))
    message = _library_message(result.stderr)
    if message:
        detail += " (%s)" % message
    return {"name": name, "state": "unavailable", "detail": detail}


def launchers(environ: Mapping[str, str]) -> list:
    """Each launcher: its command and path on @environ's PATH (None when
    not found); srun also the Slurm allocation it would run in."""
    path = environ.get("PATH", os.defpath)
    mpirun = paths.bin_dir() / "mpirun"
    out = [{"name": "postbox run", "command": "mpirun",
            "path": str(mpirun) if os.access(mpirun, os.X_OK) else None,
            "detail": "this Postbox's launcher, also mpiexec and postbox run"}]
    for name, command, what in LAUNCHERS:
        found = shutil.which(command, path=path)
        entry = {"name": name, "command": command, "path": found, "detail": what}
        if command == "srun" and environ.get("SLURM_JOB_ID"):
            entry["allocation"] = environ["SLURM_JOB_ID"]
        out.append(entry)
    return out


def pmi(build: Mapping) -> list:
    """Each PMI flavour: supported, not built (by @build's list of PMI
    clients), or unknown without one."""
    built = build.get("pmi")
    out = []
    for name, how in PMI_FLAVOURS:
        if built is None:
            state = "unknown"
        else:
            state = "supported" if name in built else "not built"
        out.append({"name": name, "state": state, "detail": how})
    return out


def tunables(environ: Mapping[str, str]) -> dict:
    """{"list": every tunable with its value and source under @environ}, with
    "error" when the table cannot be read."""
    try:
        table = config.load()
    except (paths.MissingProgram, config.ConfigError) as exc:
        return {"error": str(exc), "list": []}
    rows = []
    for tunable in table:
        value, source = tunable.shown(environ)
        rows.append({"name": tunable.name, "type": tunable.type, "value": value,
                     "default": tunable.default, "source": source})
    return {"list": rows}


def gather(environ: Optional[Mapping[str, str]] = None) -> dict:
    """All of `postbox info` under @environ (default: this process's)."""
    environ = os.environ if environ is None else environ
    build = build_info()
    return {
        "version": __version__,
        "location": location(),
        "build": build,
        "mpi": mpi_library(),
        "transports": transports(environ),
        "launchers": launchers(environ),
        "pmi": pmi(build),
        "python": {"executable": sys.executable, "version": sys.version.split()[0]},
        "tunables": tunables(environ),
    }


def _section(out: list, title: str) -> None:
    out.append("")
    out.append(title)


def _line(out: list, key: str, value: str, width: int = 14) -> None:
    out.append("  %-*s %s" % (width, key + ":", value))


def format_text(data: dict) -> str:
    """@data (from gather) as the text `postbox info` prints."""
    out = ["Postbox %s" % data["version"]]
    where = data["location"]
    if where["kind"] == "installed":
        _line(out, "prefix", where["prefix"])
    else:
        _line(out, "build tree", where["build"])
        _line(out, "source", where["source"])
    _line(out, "python", "%s (%s)" % (data["python"]["executable"], data["python"]["version"]))

    _section(out, "Build")
    build = data["build"]
    if "error" in build:
        _line(out, "error", build["error"])
    else:
        _line(out, "build type", build.get("build_type") or "(none)")
        _line(out, "C compiler", "%s (%s %s)" % (build.get("c_compiler"),
                                                  build.get("c_compiler_id"),
                                                  build.get("c_compiler_version")))
        _line(out, "C flags", build.get("c_flags") or "(none)")
        sanitizers = [name for key, name in (("sanitize", "address,undefined"),
                                             ("tsan", "thread")) if build.get(key)]
        _line(out, "sanitizers", ", ".join(sanitizers) or "none")
        _line(out, "system", build.get("system", "?"))

    _section(out, "MPI")
    mpi = data["mpi"]
    _line(out, "library file", mpi["file"])
    if "error" in mpi:
        _line(out, "error", mpi["error"])
    else:
        _line(out, "standard", "MPI %s" % mpi["standard"])
        _line(out, "ABI", "%s (the MPI standard ABI, libmpi_abi.so.1)" % mpi["abi"])
        _line(out, "library", mpi["library"])

    _section(out, "RSM transports")
    for transport in data["transports"]:
        _line(out, transport["name"], "%s: %s" % (transport["state"], transport["detail"]))

    _section(out, "Launchers")
    for launcher in data["launchers"]:
        if launcher["path"]:
            state = "found %s" % launcher["path"]
            if launcher.get("allocation"):
                state += ", inside Slurm allocation %s" % launcher["allocation"]
        else:
            state = "%s not found on PATH" % launcher["command"]
        _line(out, launcher["name"], "%s; %s" % (state, launcher["detail"]))

    _section(out, "PMI")
    for flavour in data["pmi"]:
        _line(out, flavour["name"], "%s; %s" % (flavour["state"], flavour["detail"]))

    _section(out, "Tunables (value, source; `postbox info --config` adds each one's meaning)")
    table = data["tunables"]
    if "error" in table:
        _line(out, "error", table["error"])
    width = max([len(row["name"]) for row in table["list"]] + [0])
    for row in table["list"]:
        value = "(unset)" if row["value"] is None else row["value"] or "(empty)"
        out.append("  %-*s = %s  (%s)" % (width, row["name"], value, row["source"]))
    return "\n".join(out) + "\n"
