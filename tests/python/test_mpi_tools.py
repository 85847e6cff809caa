"""The user tools of the MPI layer, against the real build: postbox-cc (and
mpicc), postbox.pc, the CMake package (find_package(Postbox)), both from the
build tree and from an install prefix; the exports of libmpi_abi.so.1; and
ABI compatibility with MPICH's libmpi_abi.so.1 (the mpich wheel that
`postbox bench` installs into build/mpi/mpich) in both directions.

The build tree is $POSTBOX_BUILD_DIR, else the one whose venv runs these
tests (`make BUILD=x test-python` runs x/venv/bin/python), else build/.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import built
from postbox import paths

REPO = Path(__file__).resolve().parent.parent.parent
PROBE = REPO / "tests" / "mpi" / "abi_probe.c"
TIMEOUT = 60

# what libmpi_abi implements so far: each as PMPI_ and as the weak MPI_ alias
IMPLEMENTED = ["Abi_get_version", "Get_version", "Get_library_version", "Wtime", "Wtick",
               "Error_class", "Error_string"]


def _build_dir() -> Path:
    if os.environ.get(paths.BUILD_DIR_VARIABLE):
        return paths.build_dir()
    venv = Path(sys.prefix).resolve()
    if venv.name == "venv" and (venv.parent / "CMakeCache.txt").is_file():
        return venv.parent
    return paths.build_dir()


def _sanitized(build: Path) -> bool:
    cache = build / "CMakeCache.txt"
    return cache.is_file() and "POSTBOX_SANITIZE:BOOL=ON" in cache.read_text()


def _project_version() -> str:
    text = (REPO / "CMakeLists.txt").read_text()
    return re.search(r"project\(postbox VERSION ([0-9.]+)", text).group(1)


def _run(argv, env=None, cwd=None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env or {})
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                            env=full_env, cwd=cwd, timeout=TIMEOUT)
    assert result.returncode == 0, "%s failed (%d):\n%s%s" % (
        " ".join(map(str, argv)), result.returncode, result.stdout, result.stderr)
    return result


def _fields(output: str) -> dict:
    """'key rest of line' lines as a dict (the probe's output)."""
    return dict(line.split(" ", 1) for line in output.splitlines() if " " in line)


def _check_postbox_probe(output: str) -> None:
    fields = _fields(output)
    assert fields["version"] == "5.0"
    assert fields["abi"] == "1.0"
    assert fields["library"].startswith("Postbox %s " % _project_version())
    assert fields["class"] == "15"  # MPI_ERR_TRUNCATE
    assert "truncated" in fields["message"]


@pytest.fixture(scope="module")
def build() -> Path:
    build = _build_dir()
    built(build / "bin" / "postbox-cc")
    built(build / "lib" / "libmpi_abi.so.1", program=False)
    return build


@pytest.fixture(scope="module")
def mpich() -> Path:
    """MPICH's wheel prefix with its libmpi_abi.so.1, or skip."""
    for root in (_build_dir(), paths.repo_root() / "build"):
        prefix = root / "mpi" / "mpich"
        if (prefix / "lib" / "libmpi_abi.so.1").is_file() and \
                os.access(prefix / "bin" / "mpiexec", os.X_OK):
            return prefix
    pytest.skip("MPICH's wheel with libmpi_abi.so.1 not found in build/mpi/mpich "
                "(`postbox bench` installs it; needs network)")


@pytest.fixture(scope="module")
def probe(build, tmp_path_factory) -> Path:
    """abi_probe.c built by the build tree's postbox-cc."""
    exe = tmp_path_factory.mktemp("probe") / "abi_probe"
    _run([build / "bin" / "postbox-cc", "-Wall", "-Wextra", "-Werror", "-o", exe, PROBE])
    return exe


@pytest.fixture(scope="module")
def prefix(build, tmp_path_factory) -> Path:
    """The build tree installed with `cmake --install` into a fresh prefix."""
    prefix = tmp_path_factory.mktemp("prefix")
    _run(["cmake", "--install", build, "--prefix", prefix])
    return prefix


# ---- postbox-cc ----------------------------------------------------------------

def test_postbox_cc_program_runs(probe):
    output = _run([probe, "clock"]).stdout
    _check_postbox_probe(output)
    assert _fields(output)["wtime"] == "ok tick ok"
    # alone (a singleton job): MPI_Init, MPI_COMM_WORLD of one rank, finalize
    assert "rank 0 of 1 received 100" in _run([probe, "init"]).stdout


def test_postbox_cc_show(build):
    cc = build / "bin" / "postbox-cc"
    words = _run([cc, "-show", "-O2", "-o", "prog", "prog.c"]).stdout.split()
    libdir = str(build / "lib")
    assert words[1] == "-I%s" % (REPO / "include")
    assert words[2:6] == ["-O2", "-o", "prog", "prog.c"]
    assert "-L" + libdir in words and "-Wl,-rpath," + libdir in words
    assert words[-1] == "-lmpi_abi"
    # compiling only: no link arguments; odd arguments come out quoted
    words = _run([cc, "-show", "-c", "-DNAME=a b", "x.c"]).stdout
    assert "-lmpi_abi" not in words and "-L" not in words
    assert "'-DNAME=a b'" in words
    # POSTBOX_CC picks the compiler; mpicc is the same wrapper
    shown = _run([cc, "-show", "x.c"], env={"POSTBOX_CC": "my-cc"}).stdout
    assert shown.startswith("my-cc -I")
    assert _run([build / "bin" / "mpicc", "-show", "x.c"]).stdout == \
        _run([cc, "-show", "x.c"]).stdout


def test_library_exports_only_the_mpi_names(build):
    """Every exported symbol is a PMPI_ definition of a function mpi.h
    declares, with its MPI_ name a weak alias; nothing else leaves the
    library.  A few functions every program needs must be there."""
    if shutil.which("nm") is None:
        pytest.skip("nm not found (binutils)")
    out = _run(["nm", "-D", "--defined-only", build / "lib" / "libmpi_abi.so.1"]).stdout
    symbols = {line.split()[2]: line.split()[1] for line in out.splitlines()}
    declared = set(re.findall(r"\b(MPI_\w+)\(", (REPO / "include" / "mpi.h").read_text()))
    names = {name[len("PMPI_"):] for name in symbols if name.startswith("PMPI_")}
    assert set(symbols) == {p + "MPI_" + name for name in names for p in ("", "P")}
    for name in names:
        assert symbols["PMPI_" + name] == "T" and symbols["MPI_" + name] == "W", name
        assert "MPI_" + name in declared, "MPI_%s is not declared in mpi.h" % name
    assert set(IMPLEMENTED) <= names
    assert {"Init", "Finalize", "Comm_rank", "Send", "Recv", "Wait"} <= names


# ---- pkg-config ----------------------------------------------------------------

def _pkg_config(pcdir: Path, *args) -> str:
    if shutil.which("pkg-config") is None:
        pytest.skip("pkg-config not found (apt-get install pkg-config)")
    return _run(["pkg-config", *args, "postbox"], env={"PKG_CONFIG_PATH": str(pcdir)}).stdout


def _build_with_pkg_config(pcdir: Path, exe: Path) -> None:
    flags = _pkg_config(pcdir, "--cflags", "--libs").split()
    _run(["cc", "-o", exe, PROBE, *flags])


def test_pkg_config_build_tree(build, tmp_path):
    pcdir = build / "lib" / "pkgconfig"
    assert _pkg_config(pcdir, "--modversion").strip() == _project_version()
    flags = _pkg_config(pcdir, "--cflags", "--libs").split()
    assert flags[:3] == ["-I%s" % (REPO / "include"), "-L%s" % (build / "lib"), "-lmpi_abi"]
    _build_with_pkg_config(pcdir, tmp_path / "probe")
    _check_postbox_probe(_run([tmp_path / "probe"],
                              env={"LD_LIBRARY_PATH": str(build / "lib")}).stdout)


# ---- the install prefix ----------------------------------------------------------

def test_install_prefix_holds_the_tools(prefix):
    for path in ("bin/postbox-cc", "bin/mpicc", "include/mpi.h", "lib/libmpi_abi.so.1",
                 "lib/libpostbox.so.0", "lib/pkgconfig/postbox.pc",
                 "lib/cmake/Postbox/PostboxConfig.cmake"):
        assert (prefix / path).exists(), path
    assert os.readlink(prefix / "bin" / "mpicc") == "postbox-cc"


def test_installed_postbox_cc(prefix, tmp_path):
    show = _run([prefix / "bin" / "mpicc", "-show", "x.c"]).stdout
    assert "-I%s/include" % prefix in show and "-L%s/lib" % prefix in show
    _run([prefix / "bin" / "postbox-cc", "-o", tmp_path / "probe", PROBE])
    result = _run(["ldd", tmp_path / "probe"]).stdout
    assert "%s/lib/libmpi_abi.so.1" % prefix in result
    _check_postbox_probe(_run([tmp_path / "probe"]).stdout)


def test_installed_pkg_config(prefix, tmp_path):
    pcdir = prefix / "lib" / "pkgconfig"
    _build_with_pkg_config(pcdir, tmp_path / "probe")
    _check_postbox_probe(_run([tmp_path / "probe"],
                              env={"LD_LIBRARY_PATH": str(prefix / "lib")}).stdout)


CMAKE_PROJECT = """cmake_minimum_required(VERSION 3.18)
project(probe C)
find_package(Postbox %s REQUIRED)
add_executable(abi_probe %s)
target_link_libraries(abi_probe PRIVATE Postbox::mpi)
"""


def test_cmake_find_package_installed(prefix, tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(CMAKE_PROJECT % (_project_version(), PROBE))
    _run(["cmake", "-S", source, "-B", tmp_path / "b", "-DCMAKE_PREFIX_PATH=%s" % prefix])
    _run(["cmake", "--build", tmp_path / "b"])
    assert "%s/lib/libmpi_abi.so.1" % prefix in _run(["ldd", tmp_path / "b" / "abi_probe"]).stdout
    _check_postbox_probe(_run([tmp_path / "b" / "abi_probe"]).stdout)


# ---- ABI compatibility with MPICH ------------------------------------------------

def test_postbox_cc_program_runs_on_mpich(probe, mpich):
    """Compiled with postbox-cc, run on MPICH's libmpi_abi.so.1: the queries,
    then MPI_Init and a ring exchange of MPI_INTs on MPI_COMM_WORLD under
    MPICH's mpiexec (so handles and constants mean the same to MPICH)."""
    env = {"LD_LIBRARY_PATH": str(mpich / "lib")}
    fields = _fields(_run([probe], env=env).stdout)
    assert fields["library"].startswith("MPICH")
    assert (fields["version"], fields["abi"], fields["class"]) == ("5.0", "1.0", "15")
    out = _run([mpich / "bin" / "mpiexec", "-n", "2", probe, "init"], env=env).stdout
    assert "rank 0 of 2 received 101 wtime ok" in out
    assert "rank 1 of 2 received 100 wtime ok" in out


def test_mpich_abi_program_runs_on_postbox(build, mpich, tmp_path):
    """Compiled with MPICH's mpicc_abi against its own ABI header, run on
    Postbox's libmpi_abi.so.1."""
    mpicc_abi = mpich / "bin" / "mpicc_abi"
    if not os.access(mpicc_abi, os.X_OK):
        pytest.skip("%s not found" % mpicc_abi)
    if _sanitized(build):
        pytest.skip("a sanitized libmpi_abi runs only under a sanitized program")
    _run([mpicc_abi, "-o", tmp_path / "probe", PROBE])
    env = {"LD_LIBRARY_PATH": str(build / "lib")}
    assert "%s/libmpi_abi.so.1" % (build / "lib") in _run(["ldd", tmp_path / "probe"],
                                                          env=env).stdout
    output = _run([tmp_path / "probe", "clock"], env=env).stdout
    _check_postbox_probe(output)
    assert "rank 0 of 1 received 100" in _run([tmp_path / "probe", "init"], env=env).stdout
