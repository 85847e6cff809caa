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


# ---- the key-value space: per-rank caps, keys that name a rank -----------------------

def _server(size=2):
    from postbox import pmi_server
    sent = []
    server = pmi_server.PmiServer("job-1", size, 1, send=lambda r, d: sent.append((r, d)),
                                  abort=lambda *a: None, close=lambda r, why: None)
    return pmi_server, server, sent


def _put(server, sent, rank, key, value):
    sent.clear()
    server.feed(rank, b"cmd=put kvsname=job-1 key=%s value=%s\n" % (key.encode(), value.encode()))
    assert len(sent) == 1 and sent[0][0] == rank
    return sent[0][1].decode()


def _get(server, sent, rank, key):
    sent.clear()
    server.feed(rank, b"cmd=get kvsname=job-1 key=%s\n" % key.encode())
    return sent[0][1].decode()


def test_a_rank_cannot_put_another_ranks_keys():
    _, server, sent = _server(2)
    # pb-mpi-rank-<r>-<k>: the keys of the MPI engine's k-th restart
    for name in ("pb-node-%d", "pb-tcp-%d", "pb-mpi-rank-%d", "pb-mpi-rank-%d-1"):
        assert "rc=0" in _put(server, sent, 0, name % 0, "mine")
        answer = _put(server, sent, 1, name % 0, "stolen")
        assert "rc=-1" in answer and "belongs_to_another_rank" in answer
        assert "value=mine" in _get(server, sent, 1, name % 0)
        assert "rc=0" in _put(server, sent, 1, name % 1, "own")
    # PMI-2 too
    body = b"cmd=kvs-put;key=pb-tcp-0;value=stolen;"
    sent.clear()
    server.feed(1, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    server.feed(1, b"%6d" % len(body) + body)
    assert b"rc=-1" in sent[-1][1] and b"belongs_to_another_rank" in sent[-1][1]
    assert "value=mine" in _get(server, sent, 0, "pb-tcp-0")
    # other pb- keys (a node's area, the secret) are not a rank's
    assert "rc=0" in _put(server, sent, 0, "pb-mpi-area-1", "7")


def test_a_rank_holds_a_bounded_number_of_keys():
    pmi, server, sent = _server(2)
    for i in range(getattr(pmi, "KVS_KEYS_PER_RANK", 4096)):
        assert "rc=0" in _put(server, sent, 0, "k%d" % i, "v")
    answer = _put(server, sent, 0, "one-more", "v")
    assert "rc=-1" in answer and "keys_put_by_this_rank" in answer
    assert "rc=0" in _put(server, sent, 0, "k0", "again")      # replacing is no new key
    assert "rc=0" in _put(server, sent, 1, "other", "v")       # the other rank is not held
    assert "key_one-more_not_found" in _get(server, sent, 1, "one-more")


def test_a_rank_holds_a_bounded_number_of_bytes():
    pmi, server, sent = _server(2)
    value = "x" * 900   # a PMI-1 line holds less than VALLEN_MAX
    i = 0
    while True:
        answer = _put(server, sent, 1, "big%d" % i, value)
        if "rc=-1" in answer:
            break
        i += 1
        assert i * 900 <= getattr(pmi, "KVS_BYTES_PER_RANK", 1 << 20)
    assert "bytes_put_by_this_rank" in answer
    assert i * 906 > getattr(pmi, "KVS_BYTES_PER_RANK", 1 << 20) - 2 * 906
    assert "rc=0" in _put(server, sent, 0, "big0", value)


# ---- PMI-1 lines fit the largest key and value get_maxes advertises --------------------

LONGEST = r'''
import os, socket
sock = socket.socket(fileno=int(os.environ["PMI_FD"]))
buf = b""
def call(line):
    global buf
    sock.sendall(line + b"\n")
    while b"\n" not in buf:
        data = sock.recv(65536)
        if not data:
            return "EOF"
        buf += data
    reply, buf = buf.split(b"\n", 1)
    return reply.decode()
maxes = dict(f.split("=", 1) for f in call(b"cmd=get_maxes").split()[1:])
kvs = call(b"cmd=get_my_kvsname").split("kvsname=")[1].encode()
key = b"k" * int(maxes["keylen_max"])
rank = os.environ["PMI_RANK"].encode()
# every byte of the value escaped: the longest line a put can be
value = b"\\ " * int(maxes["vallen_max"])
print("put-max", call(b"cmd=put kvsname=" + kvs + b" key=" + key[:-len(rank)] + rank
                      + b" value=" + value), flush=True)
got = call(b"cmd=get kvsname=" + kvs + b" key=" + key[:-len(rank)] + rank)
print("get-max", got.startswith("cmd=get_result rc=0 value=")
      and got.split("value=", 1)[1] == value.decode(), flush=True)
print("put-over", call(b"cmd=put kvsname=" + kvs + b" key=" + key + b" value=" + value
                       + b"\\ "), flush=True)
print("key-over", call(b"cmd=put kvsname=" + kvs + b" key=" + key + b"k value=v"), flush=True)
print("after", call(b"cmd=get_universe_size"), flush=True)
'''


def test_a_put_of_the_advertised_maximum_fits_and_one_more_byte_is_refused(tmp_path):
    prog = script(tmp_path, "longest.py", LONGEST)
    result = run("-n", 2, "--timeout", 20, sys.executable, prog, timeout=30)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines.count("put-max cmd=put_result rc=0") == 2, lines
    assert lines.count("get-max True") == 2, lines
    assert lines.count("put-over cmd=put_result rc=-1 msg=value_longer_than_1024") == 2
    assert lines.count("key-over cmd=put_result rc=-1 msg=key_longer_than_64") == 2
    # a refused put leaves the connection open
    assert lines.count("after cmd=universe_size rc=0 size=2") == 2
    assert "closing its PMI connection" not in result.stderr
