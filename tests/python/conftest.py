"""Fixtures for the tests of the ``postbox`` tools.

Most tests need no C build: they run the CLI against a fake build tree
(``POSTBOX_BUILD_DIR``) whose programs are small Python scripts.  Tests that
need the real build use the ``real_build`` fixture, which skips when
build/bin/postbox-rsm-bench is missing.
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

FAKE_DUMP = '''\
#!{python}
import json
for name, typ, default, text in [
        ("POSTBOX_LOG_LEVEL", "string", "warn", "Log level: error, warn | info."),
        ("POSTBOX_JOB_ID", "string", None, "Job identifier."),
        ("POSTBOX_NODE_ID", "int", "0", "Node id.")]:
    print(json.dumps({{"name": name, "type": typ, "default": default, "help": text}}))
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


@pytest.fixture
def real_build() -> Path:
    """The real build tree; skips the test when the C build has not run."""
    from postbox import paths

    bench = paths.bin_dir() / "postbox-rsm-bench"
    if not os.access(bench, os.X_OK):
        pytest.skip("%s is missing: run `make` first" % bench)
    return paths.build_dir()

