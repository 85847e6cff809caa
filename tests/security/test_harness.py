"""The attack harness itself: the users really are other users.

An attack test that ran as root, or as the victim, would pass for the wrong
reason; these cases fail if the switch of user did not happen.
"""

from __future__ import annotations

import subprocess


def test_attacker_is_an_unprivileged_other_user(attacker, victim):
    got = attacker.run(["id", "-u"])
    assert got.returncode == 0, got.stderr
    assert int(got.stdout) == attacker.uid
    assert attacker.uid not in (0, victim.uid)


def test_attacker_cannot_read_the_victims_private_files(attacker, victim):
    secret = victim.home / "secret"
    made = victim.run(["sh", "-c", "umask 077 && echo hidden > %s" % secret])
    assert made.returncode == 0, made.stderr
    got = attacker.run(["cat", str(secret)])
    assert got.returncode != 0
    assert "hidden" not in got.stdout


def test_users_run_the_staged_build(victim, stage):
    got = victim.run([stage.program("postbox-config-dump")])
    assert got.returncode == 0, got.stderr
    assert "POSTBOX_JOB_SECRET" in got.stdout
    version = victim.run(["python3", "-m", "postbox", "--version"])
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("postbox ")


def test_processes_started_are_killed_at_the_end(attacker):
    proc = attacker.popen(["sleep", "600"], stdin=subprocess.DEVNULL)
    attacker.cleanup()
    assert proc.poll() is not None


def test_victim_launches_a_job_that_talks(victim, stage):
    job = victim.launch(["-n", "2", "--nodes", "2", stage.program("pbt-mpi-p2p")],
                        stdin=subprocess.DEVNULL)
    out, err = job.communicate(timeout=120)
    assert job.returncode == 0, out + err
