"""A relocatable install: `cmake --install` of the build tree into a fresh
prefix, then the prefix moved (mv) to another directory, where its tools
must still work with nothing of the build or source tree on hand:

- the layout: bin/ (postbox, mpirun, mpiexec, postbox-cc, mpicc), lib/
  (libmpi_abi.so.1 and its links, libpostbox), include/, lib/pkgconfig,
  lib/cmake/Postbox, the Python package, libexec/postbox, share/man/man1;
- no installed file names the prefix it was installed to;
- the moved mpicc builds tests/mpi/abi_probe.c and the moved mpirun runs it
  with 2 ranks (MPI_Init, a ring exchange, MPI_Finalize);
- pkg-config and a small find_package(Postbox) project against the moved
  prefix;
- the moved `postbox info --json` sees the moved prefix, its library and
  transports;
- `man -l` renders every manual page without a warning;
- the modulefile, loaded from the moved prefix and through a link to it in
  another directory, puts the moved prefix's directories in the environment.

The environment of the moved tools is scrubbed: no PYTHONPATH, no
POSTBOX_BUILD_DIR, no MANPATH or modules, a PATH of the system directories
only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import built
from postbox import paths

REPO = Path(__file__).resolve().parent.parent.parent
PROBE = REPO / "tests" / "mpi" / "abi_probe.c"
TIMEOUT = 60

pytestmark = pytest.mark.slow


def _clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("POSTBOX_", "PMI_", "PYTHON", "LD_", "PKG_CONFIG", "CMAKE_",
                                "MODULE", "_LMFILES_", "LOADEDMODULES"))
           and k not in ("PATH", "VIRTUAL_ENV", "MANPATH", "MPICC")}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env.update(extra)
    return env


def _run(argv, env=None, cwd=None, check=True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                            env=_clean_env(**(env or {})), cwd=cwd, timeout=TIMEOUT)
    if check:
        assert result.returncode == 0, "%s failed (%d):\n%s%s" % (
            " ".join(map(str, argv)), result.returncode, result.stdout, result.stderr)
    return result


def _build_dir() -> Path:
    """The build tree whose venv runs these tests, else paths.build_dir()."""
    import sys

    venv = Path(sys.prefix).resolve()
    if not os.environ.get(paths.BUILD_DIR_VARIABLE) and venv.name == "venv" and \
            (venv.parent / "CMakeCache.txt").is_file():
        return venv.parent
    return paths.build_dir()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple:
    """(the moved prefix, the prefix it was installed to)."""
    build = _build_dir()
    built(build / "lib" / "libmpi_abi.so.1", "run `make` first", program=False)
    built(build / "bin" / "postbox-transport-probe")
    if "POSTBOX_SANITIZE:BOOL=ON" in (build / "CMakeCache.txt").read_text():
        pytest.skip("a sanitizer build: its libraries need sanitized programs and Python")
    root = tmp_path_factory.mktemp("install")
    first, moved = root / "first" / "prefix", root / "elsewhere" / "postbox-moved"
    _run(["cmake", "--install", build, "--prefix", first])
    moved.parent.mkdir()
    shutil.move(str(first), str(moved))
    assert not first.exists()
    return moved, first


def test_layout(installed):
    prefix, _ = installed
    for name in ("postbox", "mpirun", "mpiexec", "postbox-cc", "mpicc"):
        assert os.access(prefix / "bin" / name, os.X_OK), "bin/" + name
    for name in ("mpirun", "mpiexec"):
        assert os.readlink(prefix / "bin" / name) == "postbox"
    assert os.readlink(prefix / "bin" / "mpicc") == "postbox-cc"
    for name in ("libmpi_abi.so", "libmpi_abi.so.1", "libpostbox.so", "libpostbox.so.0"):
        assert (prefix / "lib" / name).is_symlink(), "lib/" + name
        assert (prefix / "lib" / name).resolve().is_file(), "lib/" + name
    for path in ("include/mpi.h", "include/postbox/rsm.h", "include/postbox/job.h",
                 "lib/pkgconfig/postbox.pc", "lib/cmake/Postbox/PostboxConfig.cmake",
                 "lib/postbox/python/postbox/cli.py", "lib/postbox/python/postbox/_installed.py",
                 "libexec/postbox/postbox-config-dump",
                 "libexec/postbox/postbox-transport-probe",
                 "share/postbox/build-info.json"):
        assert (prefix / path).is_file(), path
    for page in ("postbox", "postbox-run", "postbox-cc", "mpirun", "mpiexec", "mpicc"):
        assert (prefix / "share" / "man" / "man1" / (page + ".1")).is_file(), page
    assert len(list((prefix / "share" / "modulefiles" / "postbox").iterdir())) == 1


def test_no_file_names_the_first_prefix(installed):
    prefix, first = installed
    needle = str(first).encode()
    named = [str(path.relative_to(prefix)) for path in prefix.rglob("*")
             if path.is_file() and not path.is_symlink() and needle in path.read_bytes()]
    assert named == [], "these files name the prefix they were installed to"


def test_moved_mpicc_and_mpirun(installed, tmp_path):
    prefix, _ = installed
    exe = tmp_path / "abi_probe"
    _run([prefix / "bin" / "mpicc", "-Wall", "-Werror", "-o", exe, PROBE])
    runpath = _run(["readelf", "-d", exe]).stdout
    assert "[%s/lib]" % prefix in runpath
    out = _run([prefix / "bin" / "mpirun", "-n", "2", "--timeout", "40", exe, "init"]).stdout
    assert "rank 0 of 2 received 101 wtime ok" in out
    assert "rank 1 of 2 received 100 wtime ok" in out
    # the same through the other name, and through `postbox run`
    out = _run([prefix / "bin" / "mpiexec", "-n", "2", "--timeout", "40", exe, "init"]).stdout
    assert "rank 1 of 2 received 100" in out


def test_moved_pkg_config(installed, tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.skip("pkg-config not found (apt-get install pkg-config)")
    prefix, _ = installed
    env = {"PKG_CONFIG_PATH": str(prefix / "lib" / "pkgconfig")}
    flags = _run(["pkg-config", "--cflags", "--libs", "postbox"], env=env).stdout.split()
    # (the directories are ${pcfiledir}/../..-relative: pkg-config does not
    # shorten them)
    assert [flag[:2] + os.path.normpath(flag[2:]) for flag in flags[:2]] == \
        ["-I%s/include" % prefix, "-L%s/lib" % prefix]
    assert flags[2] == "-lmpi_abi"
    _run(["cc", "-o", tmp_path / "probe", PROBE, *flags])
    out = _run([tmp_path / "probe"], env={"LD_LIBRARY_PATH": str(prefix / "lib")}).stdout
    assert "version 5.0" in out and "abi 1.0" in out


CMAKE_PROJECT = """cmake_minimum_required(VERSION 3.18)
project(probe C)
find_package(Postbox REQUIRED)
add_executable(abi_probe %s)
target_link_libraries(abi_probe PRIVATE Postbox::mpi)
"""


def test_moved_cmake_package(installed, tmp_path):
    prefix, _ = installed
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "CMakeLists.txt").write_text(CMAKE_PROJECT % PROBE)
    _run(["cmake", "-S", tmp_path / "src", "-B", tmp_path / "b",
          "-DCMAKE_PREFIX_PATH=%s" % prefix])
    _run(["cmake", "--build", tmp_path / "b"])
    exe = tmp_path / "b" / "abi_probe"
    assert "%s/lib/libmpi_abi.so.1" % prefix in _run(["ldd", exe]).stdout
    out = _run([prefix / "bin" / "mpirun", "-n", "2", "--timeout", "40", exe, "init"]).stdout
    assert "rank 0 of 2 received 101" in out


def test_moved_postbox_info(installed):
    prefix, _ = installed
    data = json.loads(_run([prefix / "bin" / "postbox", "info", "--json"]).stdout)
    assert data["location"] == {"kind": "installed", "prefix": str(prefix),
                                "bin": str(prefix / "bin"), "lib": str(prefix / "lib")}
    assert (data["mpi"]["standard"], data["mpi"]["abi"]) == ("5.0", "1.0")
    states = {t["name"]: t["state"] for t in data["transports"]}
    assert states["shm"] == "available" and states["tcp"] == "available"
    assert data["launchers"][0]["path"] == str(prefix / "bin" / "mpirun")
    assert "POSTBOX_LOG_LEVEL" in [row["name"] for row in data["tunables"]["list"]]
    assert "error" not in data["build"] and "error" not in data["tunables"]


def test_moved_postbox_bench_says_it_needs_a_build_tree(installed):
    prefix, _ = installed
    result = _run([prefix / "bin" / "postbox", "bench", "--quick"], check=False)
    assert result.returncode == 2
    assert "runs from a build tree" in result.stderr


def test_man_pages_render(installed):
    if shutil.which("man") is None:
        pytest.skip("man not found (apt-get install man-db)")
    prefix, _ = installed
    for page in ("postbox", "postbox-run", "postbox-cc", "mpirun", "mpicc"):
        result = _run(["man", "--warnings", "-l", prefix / "share" / "man" / "man1" /
                       (page + ".1")], env={"MANWIDTH": "80", "MANPAGER": "cat",
                                            "PAGER": "cat"})
        assert result.stderr == "", "%s.1: %s" % (page, result.stderr)
        assert "NAME" in result.stdout and "SYNOPSIS" in result.stdout, page
    run_page = _run(["man", "-l", prefix / "share" / "man" / "man1" / "mpirun.1"],
                    env={"MANWIDTH": "200", "MANPAGER": "cat", "PAGER": "cat"}).stdout
    assert "--timeout S" in run_page and "EXIT STATUS" in run_page


def test_moved_modulefile(installed, tmp_path):
    modulecmd = shutil.which("modulecmd", path="/usr/local/bin:/usr/bin:/bin")
    if modulecmd is None:
        pytest.skip("modulecmd not found (apt-get install environment-modules)")
    prefix, _ = installed
    # a site's central module tree often links to the install's modulefile
    (version,) = (prefix / "share" / "modulefiles" / "postbox").iterdir()
    central = tmp_path / "central" / "postbox"
    central.mkdir(parents=True)
    (central / version.name).symlink_to(version)
    script = ('eval "$(%s bash load postbox)" && command -v mpicc && '
              'printf "%%s\\n" "$MANPATH" "$PKG_CONFIG_PATH" "$CMAKE_PREFIX_PATH" "$MPICC" && '
              'man -w ls >/dev/null' % modulecmd)
    for where in (prefix / "share" / "modulefiles", central.parent):
        out = _run(["bash", "-c", script], env={"MODULEPATH": str(where)}).stdout.splitlines()
        assert out == [str(prefix / "bin" / "mpicc"), "%s/share/man:" % prefix,
                       str(prefix / "lib" / "pkgconfig"), str(prefix),
                       str(prefix / "bin" / "mpicc")], where
