"""Denial of service against a tcp exporter: floods and a slow reader.

docs/security.md, Resource limits.  The victim's processes are
``pbt-tcp-peer`` (an exporter, and importers of its segment, all of one solo
job of ``postbox-victim``).

- The flood: ``postbox-attacker``, who cannot authenticate, opens hundreds
  of connections to the exporter's TCP port (found in /proc/net/tcp) and to
  its segment's rendezvous socket (found in /proc/net/unix), leaves many
  idle and keeps opening more, against an exporter whose descriptor limit
  is low (24), so that it runs out.  Meanwhile the victim imports and puts:
  it must succeed within its connect timeout, the exporter must not spin
  (its CPU time over the flood well under a core) and its log must stay
  short.
- An idle connection that never starts its handshake is closed (after 1 s).
- The slow reader: a faulty member of the job (the victim's own importers,
  on three connections) asks for 8 MiB, or 64 MiB, gets in two threads per
  connection and stops reading the replies; the exporter's memory must stay
  within one bound per connection for both sizes (its queue of replies is
  capped, and a GET asks for at most 1 MiB), and another importer must be
  served meanwhile.
- The slow importer: a member of the job imports the segment 64 times
  over its connection and reads 3 ms every 300 ms while the exporter posts
  signals as fast as it can: the exporter's memory must stay bounded (at
  most one unsent EVENT per import), and another importer must be served
  meanwhile.
- Too many imports: one connection may attach at most 4096 imports; the
  next attach fails with RSMERR_INSUFFICIENT_RESOURCES.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time

import pytest

SEGID = 0x80000000 | random.randrange(1 << 16, 1 << 24)
PAGE = 4096

# Run as the attacker: flood the exporter's port and rendezvous socket for
# argv[3] seconds.  Prints what it did.
FLOOD = r"""
import errno, os, resource, socket, sys, time

victim_uid, segid, duration = int(sys.argv[1]), int(sys.argv[2], 0), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))

ports = []
with open("/proc/net/tcp") as f:
    for line in list(f)[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[7]) == victim_uid:
            ports.append(int(fields[1].split(":")[1], 16))
name = None
with open("/proc/net/unix") as f:
    for line in f:
        path = line.split()[-1]
        if path.startswith("@postbox-tcp/") and path.endswith("/%08x" % segid):
            name = "\0" + path[1:]
assert ports and name, (ports, name)

tcp, unix, opened, refused = [], [], 0, 0
end = time.monotonic() + duration
while time.monotonic() < end:
    for _ in range(20):
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", ports[0]))
            tcp.append(s)
            u = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            u.setblocking(False)
            u.connect(name)
            unix.append(u)
            opened += 1
        except OSError:
            refused += 1
    # many stay open and idle; the oldest go, so new ones keep coming
    while len(tcp) > 1500:
        tcp.pop(0).close()
    while len(unix) > 1500:
        unix.pop(0).close()
    time.sleep(0.002)
print("opened %d pairs, %d refused" % (opened, refused))
"""


# Run as the attacker: connect to the exporter's port and say nothing; print
# how long the exporter kept the connection open (or "open" after 5 s).
IDLE = r"""
import socket, sys, time

victim_uid = int(sys.argv[1])
port = None
with open("/proc/net/tcp") as f:
    for line in list(f)[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[7]) == victim_uid:
            port = int(fields[1].split(":")[1], 16)
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(5)
start = time.monotonic()
try:
    while s.recv(4096):
        pass
    print("closed after %.2f s" % (time.monotonic() - start))
except socket.timeout:
    print("open")
"""


def _cpu_seconds(pid: int) -> float:
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_bytes(pid: int) -> int:
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _start_exporter(victim, stage, size, nofile=None, mode="export"):
    program = str(stage.program("pbt-tcp-peer"))
    argv = [program, mode, hex(SEGID), str(size)]
    if nofile is not None:
        argv = ["prlimit", "--nofile=%d:%d" % (nofile, nofile), "--"] + argv
    exporter = victim.popen(argv, stdin=subprocess.PIPE)
    line = exporter.stdout.readline()
    assert line == "exporting\n", (line, exporter.stderr.read() if exporter.poll() else "")
    return exporter


def _stop_exporter(victim, exporter):
    out, err = exporter.communicate(input="", timeout=20)
    assert exporter.returncode == 0, err
    return err


def test_flood_of_connections_leaves_the_exporter_serving(victim, attacker, stage):
    exporter = _start_exporter(victim, stage, 16 * PAGE, nofile=24)
    program = str(stage.program("pbt-tcp-peer"))
    cpu_before, wall_before = _cpu_seconds(exporter.pid), time.monotonic()

    flood = attacker.popen(["python3", "-c", FLOOD, str(victim.uid), hex(SEGID), "5"],
                           stdin=subprocess.DEVNULL)
    time.sleep(1.5)  # the exporter is out of descriptors by now
    legit = victim.run([program, "import", hex(SEGID), "20"], timeout=30)
    out, err = flood.communicate(timeout=30)
    assert flood.returncode == 0, err
    cpu = _cpu_seconds(exporter.pid) - cpu_before
    wall = time.monotonic() - wall_before

    assert legit.returncode == 0, legit.stderr
    took = float(legit.stdout.split()[2])
    assert took < 5000, "the import took %.0f ms under the flood (%s)" % (took, out)
    assert cpu < 0.25 * wall, \
        "the exporter used %.1f s of CPU in %.1f s of flood (%s)" % (cpu, wall, out)
    # and it serves as before once the flood is over
    after = victim.run([program, "import", hex(SEGID), "5"], timeout=30)
    assert after.returncode == 0, after.stderr
    log = _stop_exporter(victim, exporter)
    lines = log.splitlines()
    print("flood: %s; import %.0f ms; exporter CPU %.2f s in %.1f s; %d lines of log"
          % (out.strip(), took, cpu, wall, len(lines)))
    assert len(lines) < 40, "%d lines of log in %.0f s:\n%s" % (len(lines), wall,
                                                                 "\n".join(lines[:20]))


def test_idle_connection_is_closed_after_the_handshake_time(victim, attacker, stage):
    exporter = _start_exporter(victim, stage, 16 * PAGE)
    idle = attacker.run(["python3", "-c", IDLE, str(victim.uid)], timeout=30)
    assert idle.returncode == 0, idle.stderr
    assert idle.stdout.startswith("closed after"), idle.stdout
    assert float(idle.stdout.split()[2]) < 2.5, idle.stdout
    _stop_exporter(victim, exporter)


@pytest.mark.parametrize("get_mib", [8, 64])
def test_slow_reader_does_not_grow_the_exporters_memory(victim, stage, get_mib):
    size = get_mib << 20
    connections = 3
    exporter = _start_exporter(victim, stage, size)
    program = str(stage.program("pbt-tcp-peer"))
    rss_before = _rss_bytes(exporter.pid)

    # one process per connection (a process's imports of one exporter share one)
    readers = []
    try:
        for _ in range(connections):
            reader = victim.popen([program, "slow-get", hex(SEGID), "2", str(size)],
                                  stdin=subprocess.DEVNULL)
            readers.append(reader)
            assert reader.stdout.readline() == "getting\n"
            time.sleep(0.2)  # (its threads' next gets go out)
            os.kill(reader.pid, signal.SIGSTOP)  # it reads no more replies
        time.sleep(1.5)
        rss = _rss_bytes(exporter.pid)
        legit = victim.run([program, "import", hex(SEGID), "5"], timeout=30)
        assert legit.returncode == 0, legit.stderr
        time.sleep(0.5)
        rss = max(rss, _rss_bytes(exporter.pid))
    finally:
        for reader in readers:
            os.kill(reader.pid, signal.SIGKILL)
            os.kill(reader.pid, signal.SIGCONT)
            reader.wait(timeout=10)
    grown = rss - rss_before
    # per connection the queue holds at most 4 MiB and one reply of at most
    # 1 MiB, whatever the gets ask for (16 MiB leaves room for the copy made
    # while a queue grows and the allocator's slack); a GET of 64 MiB copied
    # whole would hold 68 MiB on one connection alone
    print("slow reader: the exporter grew by %d MiB on %d connections (gets of %d MiB)"
          % (grown >> 20, connections, size >> 20))
    assert grown < connections * (16 << 20), \
        "the exporter grew by %d MiB on %d connections" % (grown >> 20, connections)
    _stop_exporter(victim, exporter)


def _read_slowly(pid: int, seconds: float) -> None:
    """Let process @pid run 3 ms every 300 ms for @seconds: it reads a
    little now and then (a reader stopped for good would have its
    connection closed for the silence, POSTBOX_TCP_TIMEOUT_MS)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(0.3)
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.003)


def test_slow_importer_does_not_grow_a_posting_exporter(victim, stage):
    exporter = _start_exporter(victim, stage, 16 * PAGE, mode="export-posting")
    program = str(stage.program("pbt-tcp-peer"))

    holder = victim.popen([program, "hold", hex(SEGID), "64"], stdin=subprocess.PIPE)
    line = holder.stdout.readline()
    assert line == "holding 64\n", (line, holder.stderr.read() if holder.poll() else "")
    try:
        _read_slowly(holder.pid, 0.6)  # its socket buffers are full by now
        rss_before = _rss_bytes(exporter.pid)
        _read_slowly(holder.pid, 1.5)
        legit = victim.run([program, "import", hex(SEGID), "5"], timeout=30)
        assert legit.returncode == 0, legit.stderr
        _read_slowly(holder.pid, 1.5)
        rss = _rss_bytes(exporter.pid)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        os.kill(holder.pid, signal.SIGCONT)
        holder.wait(timeout=10)
    out, err = exporter.communicate(input="", timeout=20)
    assert exporter.returncode == 0, err
    grown = rss - rss_before
    # an EVENT per import per post would be 64 * 40 bytes a post, queued
    # faster than the importer reads; one unsent EVENT per import is 2.5 KiB
    print("slow importer: %s; the exporter grew by %.1f MiB in 3 s"
          % (out.strip(), grown / (1 << 20)))
    assert out.startswith("posted "), out
    assert grown < 8 << 20, "the exporter grew by %.1f MiB (%s)" % (grown / (1 << 20), out)


def test_imports_per_connection_are_capped(victim, stage):
    exporter = _start_exporter(victim, stage, 16 * PAGE)
    program = str(stage.program("pbt-tcp-peer"))

    holder = victim.popen([program, "hold", hex(SEGID), "4100"], stdin=subprocess.PIPE)
    out, err = holder.communicate(input="", timeout=120)
    assert holder.returncode == 0, err
    # 31: RSMERR_INSUFFICIENT_RESOURCES
    assert out == "refused after 4096: 31\nholding 4096\n", out
    legit = victim.run([program, "import", hex(SEGID), "5"], timeout=30)
    assert legit.returncode == 0, legit.stderr
    _stop_exporter(victim, exporter)
