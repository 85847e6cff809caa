"""Denial of service against an shm exporter's rendezvous socket.

docs/security.md, "shm segments" (Limits).  The victim's processes are
``pbt-shm-attack export`` (an exporter of one page, a solo process of
``postbox-victim``) and ``pbt-shm-attack import`` (its importer).

- The flood: ``postbox-attacker`` finds the segment's rendezvous socket in
  /proc/net/unix (abstract names are anyone's to see and connect to) and
  opens connections to it as fast as it can, keeping up to 1500 of them
  idle, against an exporter whose descriptor limit is low (48).  Before the
  limits the exporter's service thread ran out of descriptors, then spun
  on its readable rendezvous socket at a full core, logging a line per
  turn.  Meanwhile the victim imports: it must succeed, the exporter must
  not spin (its CPU time well under a core) and its log must stay short.
- An idle connection of another user is closed at once (it used to stay
  open, holding one of the exporter's descriptors, for as long as its
  owner liked).
"""

from __future__ import annotations

import os
import subprocess
import time

SEGID = 0x80005151

# Run as the attacker: flood the rendezvous socket of the victim's segment
# argv[1] for argv[2] seconds.  Prints what it did.
FLOOD = r"""
import os, resource, socket, sys, time

segid, duration = int(sys.argv[1], 0), float(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))

name = None
with open("/proc/net/unix") as f:
    for line in f:
        path = line.split()[-1]
        if path.startswith("@postbox-rsm/") and path.endswith("/%08x" % segid):
            name = "\0" + path[1:]
assert name, "no rendezvous socket of segment %#x" % segid

held, opened, refused = [], 0, 0
end = time.monotonic() + duration
while time.monotonic() < end:
    for _ in range(20):
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setblocking(False)
            s.connect(name)
            held.append(s)
            opened += 1
        except OSError:
            s.close()
            refused += 1
    # many stay open and idle; the oldest go, so new ones keep coming
    while len(held) > 1500:
        held.pop(0).close()
    time.sleep(0.002)
print("opened %d connections, %d refused" % (opened, refused))
"""

# Run as the attacker: connect to the rendezvous socket of segment argv[1],
# say nothing, and print how long the exporter kept the connection open
# (or "open" after 5 s).
IDLE = r"""
import socket, sys, time

segid = int(sys.argv[1], 0)
with open("/proc/net/unix") as f:
    names = ["\0" + line.split()[-1][1:] for line in f
             if line.split()[-1].startswith("@postbox-rsm/")
             and line.split()[-1].endswith("/%08x" % segid)]
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(names[0])
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


def _start_exporter(victim, stage, log_path, nofile=None):
    argv = [str(stage.program("pbt-shm-attack")), "export", str(SEGID)]
    if nofile is not None:
        argv = ["prlimit", "--nofile=%d:%d" % (nofile, nofile), "--"] + argv
    with open(log_path, "w") as log:
        exporter = victim.popen(argv, stdin=subprocess.PIPE, stderr=log)
    line = exporter.stdout.readline()
    assert line == "published\n", (line, open(log_path).read())
    return exporter


def _stop_exporter(exporter):
    exporter.communicate(input="", timeout=20)
    assert exporter.returncode == 0


def _import(victim, stage):
    """Import the segment as the victim; @return (stdout, seconds it took)."""
    start = time.monotonic()
    got = victim.run([stage.program("pbt-shm-attack"), "import", "0", str(SEGID)], timeout=30)
    took = time.monotonic() - start
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.startswith("rc=0 "), got.stdout + got.stderr
    assert "data=victim-data" in got.stdout, got.stdout
    return got.stdout, took


def test_flood_of_connections_leaves_the_exporter_serving(victim, attacker, stage):
    log_path = victim.home / "exporter.log"
    exporter = _start_exporter(victim, stage, log_path, nofile=48)
    cpu_before, wall_before = _cpu_seconds(exporter.pid), time.monotonic()

    flood = attacker.popen(["python3", "-c", FLOOD, hex(SEGID), "5"], stdin=subprocess.DEVNULL)
    time.sleep(1.5)  # without limits the exporter is out of descriptors by now
    _, took = _import(victim, stage)
    out, err = flood.communicate(timeout=30)
    assert flood.returncode == 0, err
    cpu = _cpu_seconds(exporter.pid) - cpu_before
    wall = time.monotonic() - wall_before
    # and it serves as before once the flood is over
    _import(victim, stage)
    _stop_exporter(exporter)
    with open(log_path, errors="replace") as log:
        lines = log.read().splitlines()

    print("flood: %s; import %.2f s; exporter CPU %.2f s in %.1f s; %d lines of log"
          % (out.strip(), took, cpu, wall, len(lines)))
    assert took < 5, "the import took %.1f s under the flood (%s)" % (took, out)
    assert cpu < 0.25 * wall, \
        "the exporter used %.1f s of CPU in %.1f s of flood (%s)" % (cpu, wall, out)
    assert len(lines) < 40, "%d lines of log in %.0f s:\n%s" % (len(lines), wall,
                                                                 "\n".join(lines[:20]))


def test_idle_connection_of_another_user_is_closed_at_once(victim, attacker, stage):
    exporter = _start_exporter(victim, stage, victim.home / "exporter.log")
    idle = attacker.run(["python3", "-c", IDLE, hex(SEGID)], timeout=30)
    _stop_exporter(exporter)
    assert idle.returncode == 0, idle.stderr
    assert idle.stdout.startswith("closed after"), idle.stdout
    assert float(idle.stdout.split()[2]) < 0.5, idle.stdout
