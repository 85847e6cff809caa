"""The launcher's PMI server against ranks that abuse it: abort codes that do
not fit an exit status, pipelined requests that are never read, KVS abuse."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PYTHON_DIR, REPO

pytestmark = pytest.mark.short

HOST = socket.gethostname() or "localhost"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(PYTHON_DIR) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run(*args, timeout=30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "postbox", "run", *map(str, args)],
                          input="", capture_output=True, text=True, env=_env(),
                          timeout=timeout, cwd=REPO)


def script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    path.chmod(0o755)
    return path


# ---- abort codes ----------------------------------------------------------------

@pytest.mark.parametrize("given, status", [("0", 1), ("256", 1), ("-1", 1), ("512", 1),
                                           ("255", 255), ("3", 3)])
def test_pmi1_abort_always_exits_non_zero(tmp_path, given, status):
    prog = script(tmp_path, "abort.py",
                  "import os, time\n"
                  "if os.environ['PMI_RANK'] == '1':\n"
                  "    os.write(int(os.environ['PMI_FD']), b'cmd=abort exitcode=%s\\n')\n"
                  "time.sleep(60)\n" % given)
    result = run("-n", 2, sys.executable, prog, timeout=20)
    assert result.returncode == status
    assert ("rank 1 (node %s/0) called PMI abort with exit code %s" % (HOST, given)
            in result.stderr)


def test_pmi2_abort_exits_non_zero(tmp_path):
    prog = script(tmp_path, "abort2.py",
                  "import os, time\n"
                  "if os.environ['PMI_RANK'] == '0':\n"
                  "    body = b'cmd=abort;isworldabort=TRUE;msg=bye;'\n"
                  "    os.write(int(os.environ['PMI_FD']), b'%6d' % len(body) + body)\n"
                  "time.sleep(60)\n")
    result = run("-n", 2, sys.executable, prog, timeout=20)
    assert result.returncode == 1
    assert "rank 0 (node %s/0) called PMI abort" % HOST in result.stderr
