"""Fixtures for the tests of the ``postbox`` tools.

Most tests need no C build: they run the CLI against a fake build tree
(``POSTBOX_BUILD_DIR``) whose programs are small Python scripts.  Tests that
need the real build use the ``real_build`` fixture, which skips when
build/bin/postbox-rsm-bench is missing, and ``built()`` for each program
they run, which skips when that one is missing.  With
POSTBOX_TEST_REQUIRE_BUILD=1 (``make test`` and CI set it) a missing build
fails those tests instead: an unbuilt tree is not a green one.  Tests that
need an optional package (mpich, chromium, clang, ...) skip without it
either way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
PYTHON_DIR = REPO / "python"

sys.path.insert(0, str(PYTHON_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))


FAKE_BENCH = '''\
#!{python}
"""A stand-in for postbox-rsm-bench: FAKE_BENCH_MODE chooses what it does."""
import json, os, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {pkg!r})
from samples import sample_records
args = sys.argv[1:]
out = args[args.index("--json") + 1]
mode = os.environ.get("FAKE_BENCH_MODE", "ok")
records = sample_records()
if mode == "badratio":
    for rec in records:
        if rec["test"] == "ratio_pingpong_put_64_vs_cacheline":
            rec["median"] = 3.0
if mode == "noratio":
    records = [r for r in records if r["metric"] != "ratio"]
with open(out, "a") as handle:
    for rec in records[:3] if mode == "fail" else records:
        handle.write(json.dumps(rec) + "\\n")
print("fake bench table: args=" + " ".join(args))
print("test size median")
sys.stdout.flush()
if mode == "fail":
    print("fake bench: transport exploded", file=sys.stderr)
    sys.exit(3)
'''

FAKE_NET = '''\
#!{python}
"""A stand-in for postbox-net-bench: FAKE_NET_MODE=fail makes it fail."""
import json, os, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {pkg!r})
from samples import net_records
args = sys.argv[1:]
out = args[args.index("--json") + 1]
with open(out, "a") as handle:
    for rec in net_records():
        handle.write(json.dumps(rec) + "\\n")
print("fake net table: args=" + " ".join(args))
if os.environ.get("FAKE_NET_MODE") == "fail":
    print("fake net: connect: refused", file=sys.stderr)
    sys.exit(1)
'''

# `postbox run` for the fake build: drops the launcher's options, runs the
# program, and tells it about --netns as the real launcher would
FAKE_LAUNCHER = '''\
#!{python}
import os, sys
args = sys.argv[1:]
assert args.pop(0) == "run", "the fake postbox only runs"
while args[0].startswith("-"):
    option = args.pop(0)
    if option == "--netns":
        os.environ["POSTBOX_NETNS_ADDR"] = "10.213.0.1"
    elif option in ("-n", "--nodes", "--timeout"):
        args.pop(0)
os.execv(args[0], args)
'''

FAKE_RSM_NET = '''\
#!{python}
"""A stand-in for postbox-rsm-net-bench: FAKE_RSM_NET_MODE=fail makes it fail."""
import json, os, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {pkg!r})
from samples import rsm_net_records
args = sys.argv[1:]
out = args[args.index("--json") + 1]
netns = bool(os.environ.get("POSTBOX_NETNS_ADDR"))
mode = os.environ.get("FAKE_RSM_NET_MODE", "ok")
with open(out, "a") as handle:
    for rec in rsm_net_records("netns" if netns else "loopback"):
        handle.write(json.dumps(rec) + "\\n")
print("fake rsm-net table: args=" + " ".join(args))
if mode == "fail":
    print("fake rsm-net: rsm_intr_signal_wait failed: timeout", file=sys.stderr)
    sys.exit(1)
'''

# a fake MPI wheel prefix: mpicc writes a fake mpi_p2p, mpi_coll or mpi_rma at
# -o (and links the probes of the nonblocking collectives and of one-sided
# communication), mpiexec runs it
FAKE_MPICC = '''\
#!{python}
import os, sys
args = sys.argv[1:]
out = args[args.index("-o") + 1]
name = {{"mpi_coll": "fake_mpi_coll", "nbc_probe": "fake_mpi_coll",
        "mpi_rma": "fake_mpi_rma", "rma_probe": "fake_mpi_rma",
        "mpi_logp": "fake_mpi_logp"}}.get(
    os.path.basename(out), "fake_mpi_p2p")
with open(out, "w") as handle:
    handle.write(open(os.path.join(os.path.dirname(__file__), name)).read())
os.chmod(out, 0o755)
'''

FAKE_MPIEXEC = '''\
#!{python}
import os, sys
args = sys.argv[1:]
os.environ["FAKE_MPI_RANKS"] = args[args.index("-n") + 1]
args = args[args.index("-n") + 2:]
os.execv(args[0], args)
'''

FAKE_MPI_P2P = '''\
#!{python}
"""A stand-in for mpi_p2p: FAKE_MPI_FAIL=<library>/<test> makes that run fail;
FAKE_MPI_NO_MULTIPLE=<library>: that library grants no MPI_THREAD_MULTIPLE
(exit 3); FAKE_MPI_MULTIPLE_US: Postbox's 8 B ping-pong at MULTIPLE (us, 1.0
at FUNNELED)."""
import json, os, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {pkg!r})
from samples import p2p_records, thread_records
args = sys.argv[1:]
library, test = args[args.index("--library") + 1], args[args.index("--tests") + 1]
out = args[args.index("--json") + 1]
path = args[args.index("--path") + 1] if "--path" in args else "on-node"
ranks = int(os.environ.get("FAKE_MPI_RANKS", "2"))
if os.environ.get("FAKE_MPI_FAIL") in (library + "/" + test, library + "/" + path + "/" + test):
    print("fake mpi_p2p: MPI_Recv: truncated", file=sys.stderr)
    sys.exit(1)
fields = dict(path=path, transport=args[args.index("--transport") + 1], ranks=ranks)
level = args[args.index("--thread-level") + 1] if "--thread-level" in args else None
if level == "multiple" and os.environ.get("FAKE_MPI_NO_MULTIPLE") == library:
    print("mpi_p2p: --thread-level multiple: the library granted MPI_THREAD_FUNNELED only",
          file=sys.stderr)
    sys.exit(3)
if level is not None:
    multiple_us = float(os.environ.get("FAKE_MPI_MULTIPLE_US", "1.05"))
    records = thread_records(
        library, test, level,
        int(args[args.index("--round") + 1]) if "--round" in args else None,
        multiple_us if level == "multiple" and test != "msgrate_threads" else 1.0)
elif test == "multipair":
    fields["pairs"] = ranks // 2
    records = p2p_records(library, tests=["multipair_latency", "multipair_bandwidth"],
                          sizes=(1, 64, 4096), **fields)
elif test == "pingpong_distance":
    records = [dict(r, distance=d) for d in range(1, ranks)
               for r in p2p_records(library, tests=[test], sizes=(1, 64, 4096), **fields)]
else:
    records = p2p_records(library, tests=[test], **fields)
if path == "network":
    for rec in records:
        rec["median"] = rec["median"] * 10 if rec["metric"] == "latency" else rec["median"] / 10
with open(out, "a") as handle:
    for rec in records:
        handle.write(json.dumps(rec) + "\\n")
print("fake mpi_p2p %s %s %s" % (library, test, path))
'''


FAKE_MPI_COLL = '''\
#!{python}
"""A stand-in for mpi_coll: FAKE_MPI_FAIL=<library>/coll/<ranks>/<path> makes
that run fail."""
import json, os, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {pkg!r})
from samples import coll_records
args = sys.argv[1:]
library, out = args[args.index("--library") + 1], args[args.index("--json") + 1]
path = args[args.index("--path") + 1]
nodes = int(args[args.index("--nodes") + 1]) if "--nodes" in args else 1
ranks = int(os.environ.get("FAKE_MPI_RANKS", "2"))
if os.environ.get("FAKE_MPI_FAIL") == "%s/coll/%d/%s" % (library, ranks, path):
    print("fake mpi_coll: MPI_Allreduce: truncated", file=sys.stderr)
    sys.exit(1)
records = coll_records(library, ranks=ranks, path=path, nodes=nodes,
                       transport=args[args.index("--transport") + 1],
                       scale=10.0 if path == "network" else 1.0)
with open(out, "a") as handle:
    for rec in records:
        handle.write(json.dumps(rec) + "\\n")
print("fake mpi_coll %s %d ranks %s" % (library, ranks, path))
print("# mpi_coll: done, status 0")
'''


def fake_wheel_prefix(prefix: Path, header: str = '#define MPICH_VERSION "4.1"\n') -> Path:
    """A venv holding a fake MPI wheel (bin/mpicc, bin/mpiexec, include/mpi.h)."""
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    (prefix / "include").mkdir(parents=True, exist_ok=True)
    (prefix / "include" / "mpi.h").write_text(header)
    _script(prefix / "bin" / "mpicc", FAKE_MPICC)
    _script(prefix / "bin" / "mpiexec", FAKE_MPIEXEC)
    _script(prefix / "bin" / "fake_mpi_p2p", FAKE_MPI_P2P)
    _script(prefix / "bin" / "fake_mpi_coll", FAKE_MPI_COLL)
    _script(prefix / "bin" / "fake_mpi_rma", FAKE_MPI_RMA)
    _script(prefix / "bin" / "fake_mpi_logp", FAKE_MPI_LOGP)
    return prefix


FAKE_DUMP = '''\
#!{python}
import json
for name, typ, default, text in [
        ("POSTBOX_LOG_LEVEL", "string", "warn", "Log level: error, warn | info."),
        ("POSTBOX_JOB_ID", "string", None, "Job identifier."),
        ("POSTBOX_NODE_ID", "int", "0", "Node id.")]:
    print(json.dumps({{"name": name, "type": typ, "default": default, "help": text}}))
'''

FAKE_MPI_RMA = '''\
#!{python}
"""A stand-in for mpi_rma: FAKE_MPI_FAIL=<library>/rma/<path> makes that run
fail."""
import json, os, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {pkg!r})
from samples import rma_records
args = sys.argv[1:]
library, out = args[args.index("--library") + 1], args[args.index("--json") + 1]
path = args[args.index("--path") + 1]
if os.environ.get("FAKE_MPI_FAIL") == "%s/rma/%s" % (library, path):
    print("fake mpi_rma: MPI_Win_flush: error", file=sys.stderr)
    sys.exit(1)
progress = 2.1 if "progress" in args[args.index("--tests") + 1] else None
records = rma_records(library, path=path, scale=10.0 if path == "network" else 1.0,
                      progress_s=progress)
with open(out, "a") as handle:
    for rec in records:
        handle.write(json.dumps(rec) + "\\n")
print("fake mpi_rma %s %s" % (library, path))
print("# mpi_rma: done, status 0")
'''


FAKE_MPI_LOGP = '''\
#!{python}
"""A stand-in for mpi_logp: the records of a machine following a known
LogGP (ten times slower on the network path)."""
import json, sys
sys.path.insert(0, {tests!r})
sys.path.insert(0, {pkg!r})
from postbox.loggp import LogGP
from samples import logp_records
args = sys.argv[1:]
library, out = args[args.index("--library") + 1], args[args.index("--json") + 1]
path = args[args.index("--path") + 1]
scale = 10.0 if path == "network" else 1.0
truth = LogGP(L=1e-6 * scale, o_s=0.5e-6 * scale, o_r=0.5e-6 * scale, g=1e-6 * scale,
              G=1e-9 * scale)
with open(out, "a") as handle:
    for rec in logp_records(truth, library, path):
        handle.write(json.dumps(rec) + "\\n")
print("fake mpi_logp %s %s" % (library, path))
print("# mpi_logp: done, status 0")
'''


def _script(path: Path, text: str) -> None:
    path.write_text(text.format(python=sys.executable, tests=str(Path(__file__).parent),
                                 pkg=str(PYTHON_DIR)))
    path.chmod(0o755)


@pytest.fixture
def fake_build(tmp_path, monkeypatch) -> Path:
    """A build tree whose programs are fakes; POSTBOX_BUILD_DIR points at it."""
    build = tmp_path / "fake-build"
    (build / "bin").mkdir(parents=True)
    _script(build / "bin" / "postbox-rsm-bench", FAKE_BENCH)
    _script(build / "bin" / "postbox-net-bench", FAKE_NET)
    _script(build / "bin" / "postbox-rsm-net-bench", FAKE_RSM_NET)
    _script(build / "bin" / "postbox", FAKE_LAUNCHER)
    _script(build / "bin" / "postbox-config-dump", FAKE_DUMP)
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(build))
    return build


@pytest.fixture
def empty_build(tmp_path, monkeypatch) -> Path:
    build = tmp_path / "empty-build"
    build.mkdir()
    monkeypatch.setenv("POSTBOX_BUILD_DIR", str(build))
    return build


def run_cli(*args, env=None, timeout=120) -> subprocess.CompletedProcess:
    """Run ``python -m postbox ARGS`` as a user would; env adds variables."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(PYTHON_DIR) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "postbox", *map(str, args)],
                          capture_output=True, text=True, env=full_env, timeout=timeout,
                          cwd=REPO)


REQUIRE_BUILD = os.environ.get("POSTBOX_TEST_REQUIRE_BUILD") == "1"


def missing_build(message: str) -> None:
    """Skip the test for a part of the build that is missing (@message says
    which), or fail it under POSTBOX_TEST_REQUIRE_BUILD=1."""
    if REQUIRE_BUILD:
        pytest.fail(message + " (POSTBOX_TEST_REQUIRE_BUILD=1: the build must be there)",
                    pytrace=False)
    pytest.skip(message)


def built(path: Path, hint: str = "run `make` first", program: bool = True) -> Path:
    """@path, a file the build makes (an executable one when @program);
    when it is not there, skip the test, or fail it under
    POSTBOX_TEST_REQUIRE_BUILD=1."""
    if not (os.access(path, os.X_OK) if program else path.exists()):
        missing_build("%s is missing: %s" % (path, hint))
    return path


@pytest.fixture
def real_build() -> Path:
    """The real build tree; skips the test when the C build has not run
    (fails it under POSTBOX_TEST_REQUIRE_BUILD=1)."""
    from postbox import paths

    built(paths.bin_dir() / "postbox-rsm-bench")
    return paths.build_dir()

