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


# ---- a rank that pipelines requests without reading the answers ---------------------

FLOOD = r'''
import os, socket, sys, threading, time
fd = int(os.environ["PMI_FD"])
rank = int(os.environ["PMI_RANK"])
sock = socket.socket(fileno=fd)
COUNT = int(sys.argv[1])
if rank == 1:
    written = [0]
    def writer():
        chunk = b"cmd=get_maxes\n" * 1000
        for _ in range(COUNT // 1000):
            sock.sendall(chunk)
            written[0] += 1000
    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    time.sleep(2.0)
    # the launcher stopped reading this rank long before all were sent
    print("written-before-reading", written[0], flush=True)
    got = b""
    while got.count(b"\n") < COUNT:
        data = sock.recv(1 << 20)
        if not data:
            break
        got += data
    thread.join()
    lines = got.split(b"\n")[:-1]
    print("answers", len(lines), all(l.startswith(b"cmd=maxes rc=0") for l in lines),
          flush=True)
else:
    time.sleep(0.5)
    # the launcher must still answer this rank while rank 1 floods it
    for _ in range(5):
        start = time.monotonic()
        sock.sendall(b"cmd=get_universe_size\n")
        answer = sock.recv(1000)
        assert answer.startswith(b"cmd=universe_size rc=0"), answer
        print("latency %.3f" % (time.monotonic() - start), flush=True)
        time.sleep(0.2)
'''


def test_pipelined_requests_get_back_pressure_and_others_stay_served(tmp_path):
    count = 60000
    prog = script(tmp_path, "flood.py", FLOOD)
    start = time.monotonic()
    result = run("-n", 2, "--timeout", 20, sys.executable, prog, count, timeout=40)
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    latencies = [float(l.split()[1]) for l in lines if l.startswith("latency")]
    assert len(latencies) == 5 and max(latencies) < 0.5, lines
    assert "answers %d True" % count in lines
    written = [int(l.split()[1]) for l in lines if l.startswith("written-before-reading")]
    # 60,000 answers are about 3.6 MB: the launcher must stop reading well before
    assert written and written[0] < count, lines
    assert elapsed < 10, elapsed
