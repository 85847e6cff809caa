"""Attacks on the shm transport (docs/security.md, "shm segments").

- Another local user impersonates the exporter of a solo process's segment:
  it binds the segment's rendezvous name first and answers the handshake
  (the solo job's key used to be all zeros).  The victim's import must be
  refused, and the victim's own solo processes must still reach each other.
- A member of the job imports a segment read-only and tries to write it, to
  mark the publication withdrawn and to mark the exporter dead.  Each
  attempt must be refused, and an honest member and the exporter must see
  nothing of it.

The programs are ``pbt-shm-attack`` (tests/security/shm_attack.c).
"""

from __future__ import annotations

import os
import random
import stat
import subprocess

RSMERR_PERM_DENIED = 27

IMPERSONATED_SEGID = 0x80000000 | random.randrange(1 << 16, 1 << 24)
GENUINE_SEGID = 0x80000000 | random.randrange(1 << 16, 1 << 24)


def _first_line(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline().strip()
    if not line:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError("no output from %s\nstdout:\n%s\nstderr:\n%s"
                             % (proc.args, out, err))
    return line


def test_another_user_cannot_impersonate_a_solo_exporter(attacker, victim, stage):
    program = stage.program("pbt-shm-attack")
    impostor = attacker.popen([program, "impostor", "solo-%d" % victim.uid, "0",
                               str(IMPERSONATED_SEGID), "zero"], stdin=subprocess.DEVNULL)
    assert _first_line(impostor) == "listening"

    got = victim.run([program, "import", "0", str(IMPERSONATED_SEGID)])
    assert got.returncode == 0, got.stdout + got.stderr
    assert "attacker-data" not in got.stdout, got.stdout
    assert got.stdout.startswith("rc=%d " % RSMERR_PERM_DENIED), got.stdout + got.stderr
    assert "not of this user" in got.stderr, got.stderr

    # the victim carries on: its own solo processes share the solo key
    exporter = victim.popen([program, "export", str(GENUINE_SEGID)], stdin=subprocess.PIPE)
    assert _first_line(exporter) == "published"
    got = victim.run([program, "import", "0", str(GENUINE_SEGID)])
    exporter.stdin.close()
    assert exporter.wait(timeout=30) == 0, exporter.stderr.read()
    assert got.stdout.startswith("rc=0 "), got.stdout + got.stderr
    assert "data=victim-data" in got.stdout, got.stdout

    # ... which is the victim's alone
    key = victim.runtime_dir / "postbox" / "solo-key"
    mode = os.stat(key)
    assert mode.st_uid == victim.uid
    assert stat.S_IMODE(mode.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(key.parent).st_mode) == 0o700
    stolen = attacker.run(["cat", str(key)])
    assert stolen.returncode != 0 and stolen.stdout == ""


def test_read_only_member_cannot_write_withdraw_or_kill(victim, stage):
    job = victim.launch(["-n", "3", stage.program("pbt-shm-attack"), "member"],
                        stdin=subprocess.DEVNULL)
    out, err = job.communicate(timeout=120)
    assert job.returncode == 0, out + err
    attempts = [line for line in out.splitlines()
                if "refused" in line or "WRITTEN" in line or "not found" in line]
    assert len(attempts) == 4, out + err
    for what in ("segment, writable mapping", "segment, reopened read-write",
                 "control page, publication marked withdrawn",
                 "liveness page, exporter marked dead"):
        assert "%s: refused" % what in out, out + err
    assert "WRITTEN" not in out, out
    assert "honest: rc=0 " in out and "data=victim-data" in out, out + err
    assert "exporter: memory=victim-data" in out, out + err
