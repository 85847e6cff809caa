"""Attacks on the tcp transport's authentication, by another local user.

- The relay: the attacker takes the abstract rendezvous name of a segment a
  victim job is about to publish, answers the victim's importer with a
  DIRECTORY naming its own port, relays the handshake to the real exporter,
  and tries to read and write the job's segments on the connection it got.
- The solo job's impersonation: the attacker takes the name of a segment a
  victim's process outside any launcher imports, and plays its exporter
  (before wire version 2 the DIRECTORY handed the importer a key, which the
  importer took from whoever answered).

- The exporter's rendezvous: the attacker connects to the rendezvous socket
  of a segment a victim's process publishes, to learn where it listens.

The first two must fail: the victim's import gets RSMERR_PERM_DENIED (the
name is held by another user's process: SO_PEERCRED), the attacker gets no
connection and reads and writes nothing, and the victim goes on (its
segment is published under another id, imported and used).  The third
gets nothing: the exporter checks the connecting uid (SO_PEERCRED) and
closes without a DIRECTORY, and logs the refusal; the victim's own
processes are still answered.  docs/tcp.md
(Authentication) and docs/security.md (tcp connections) say why; the
handshake's binding to the dialed address, which stops a relay that gets
past the rendezvous, is tested in tests/rsm/test_tcp_wire.c.
"""

from __future__ import annotations

import os
import queue
import random
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Dict, List

RSMERR_PERM_DENIED = 27
HERE = Path(__file__).resolve().parent
ATTACKER_SOURCE = (HERE / "tcp_attacker.py").read_text()
WIRE_H = HERE.parent.parent / "src" / "rsm" / "tcp" / "wire.h"


def wire_version() -> int:
    """The tcp wire version of the tree under test (the attacker speaks it)."""
    found = re.search(r"#define PB_TCP_VERSION (\d+)", WIRE_H.read_text())
    assert found, "no PB_TCP_VERSION in %s" % WIRE_H
    return int(found.group(1))


class Lines:
    """Collects a process's stdout lines as they come (``key: value`` pairs)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.lines: "queue.Queue[str]" = queue.Queue()
        self.seen: List[str] = []
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, key: str, timeout: float = 30) -> str:
        """The value of the first line ``key: value`` (waiting for it)."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.seen:
                found = re.search(r"\b%s: (.*)$" % re.escape(key), line)
                if found:
                    return found.group(1)
            left = deadline - time.monotonic()
            assert left > 0, "no '%s:' line within %ss; got %s (stderr: %s)" % (
                key, timeout, self.seen, self._stderr())
            try:
                self.seen.append(self.lines.get(timeout=left))
            except queue.Empty:
                pass

    def _stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read() if self.proc.stderr else ""

    def finish(self) -> Dict[str, List[str]]:
        """Every ``key: value`` line, once the process ended."""
        self.thread.join(timeout=10)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        pairs: Dict[str, List[str]] = {}
        for line in self.seen:
            found = re.search(r"([a-z-]+): (.*)$", line)
            if found:
                pairs.setdefault(found.group(1), []).append(found.group(2))
        return pairs


# Run as a user: connect to the rendezvous socket whose name ends in
# argv[1] (listed in /proc/net/unix, which anyone can read) and say what it
# answered.
RENDEZVOUS_PROBE = r"""
import socket, struct, sys
names = []
with open("/proc/net/unix") as table:
    for line in table:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith("@postbox-tcp/") \
                and fields[7].endswith(sys.argv[1]):
            names.append(fields[7][1:])
print("found: %s" % (names[0] if names else "none"))
if names:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    probe.settimeout(10)
    try:
        probe.connect("\0" + names[0])
        answer = probe.recv(256)
        print("received: %d" % len(answer))
        if len(answer) >= 8:
            print("message-type: %d" % struct.unpack_from("<IHH", answer)[2])
    except OSError as err:
        print("error: %s" % err)
"""
DIRECTORY = 4


def user_segid() -> int:
    return 0x80000000 | random.randrange(1, 1 << 24)


def test_relay_through_a_squatted_rendezvous_fails(victim, attacker, stage):
    segid = user_segid()
    go = victim.home / "go"
    job = victim.launch(["-n", "2", "--nodes", "2", "--timeout", "90",
                         stage.program("pbt-sec-tcp-victim"), "job", str(segid), str(go)],
                        stdin=subprocess.DEVNULL)
    job_lines = Lines(job)
    job_id = job_lines.wait_for("job")
    endpoint = job_lines.wait_for("exporter")
    spy = attacker.popen(["python3", "-c", ATTACKER_SOURCE, "relay", "--job", job_id,
                          "--node", "1", "--segid", hex(segid), "--exporter",
                          endpoint.split(",")[0].rsplit(":", 1)[0] + ":" +
                          endpoint.rsplit(":", 1)[1]],
                         stdin=subprocess.DEVNULL)
    spy_lines = Lines(spy)
    spy_lines.wait_for("ready")
    go.touch()
    os.chown(go, victim.uid, victim.gid)
    job.wait(timeout=120)
    attacker.kill(spy)
    spy.wait(timeout=10)
    seen = job_lines.finish()
    stolen = spy_lines.finish()
    report = "victim: %s\nattacker: %s\nvictim stderr: %s" % (
        job_lines.seen, spy_lines.seen, job.stderr.read())
    assert job.returncode == 0, report
    # the exporter could not take the squatted id; the importer asking for
    # it refused the attacker's answer
    assert seen.get("publish-squatted") != ["0"], report
    assert seen.get("squatted-import") == [str(RSMERR_PERM_DENIED)], report
    assert seen.get("carried-on") == ["yes"], report
    assert seen.get("segment-intact") == ["yes"], report
    assert "importer" not in stolen, report
    assert "attack-read" not in stolen and "attack-wrote" not in stolen, report


def test_solo_job_impersonation_fails(victim, attacker, stage):
    segid = user_segid()
    spy = attacker.popen(["python3", "-c", ATTACKER_SOURCE, "solo", "--uid", str(victim.uid),
                          "--segid", hex(segid), "--wire", str(wire_version())],
                         stdin=subprocess.DEVNULL)
    spy_lines = Lines(spy)
    spy_lines.wait_for("ready")
    got = victim.run([stage.program("pbt-sec-tcp-victim"), "solo", hex(segid)], timeout=60)
    attacker.kill(spy)
    spy.wait(timeout=10)
    stolen = spy_lines.finish()
    report = "victim: %s %s\nattacker: %s" % (got.stdout, got.stderr, spy_lines.seen)
    assert got.returncode == 0, report
    assert "solo-import: %d" % RSMERR_PERM_DENIED in got.stdout, report
    assert "carried-on: yes" in got.stdout, report
    assert "importer" not in stolen and "stolen" not in stolen, report


def test_rendezvous_tells_another_user_nothing(victim, attacker, stage):
    segid = user_segid()
    server = victim.popen([stage.program("pbt-sec-tcp-victim"), "serve", hex(segid)],
                          stdin=subprocess.PIPE)
    server_lines = Lines(server)
    server_lines.wait_for("published")
    suffix = "/%08x" % segid
    stranger = attacker.run(["python3", "-c", RENDEZVOUS_PROBE, suffix], timeout=30)
    owner = victim.run(["python3", "-c", RENDEZVOUS_PROBE, suffix], timeout=30)
    server.stdin.close()
    server.wait(timeout=30)
    log = server.stderr.read()
    report = "attacker: %s %s\nvictim's own probe: %s %s\nexporter: %s %s" % (
        stranger.stdout, stranger.stderr, owner.stdout, owner.stderr, server_lines.seen, log)
    assert server.returncode == 0, report
    # the victim's own process is told where the exporter listens ...
    assert "message-type: %d" % DIRECTORY in owner.stdout, report
    # ... another user finds the name (anyone can list it) and gets nothing
    assert "found: none" not in stranger.stdout, report
    assert "received: 0" in stranger.stdout, report
    assert "message-type" not in stranger.stdout, report
    assert "refused a rendezvous for segment %#x from another user's process (uid %d" % (
        segid, attacker.uid) in log, report
