"""A job over real ssh, started by an ordinary user: ``postbox run
--hostfile`` runs as ``postbox-remote`` in the first namespace of
tests/python/ssh_cluster.py, and its ranks log in as that user, with that
user's key, on the two namespaced hosts.

Root passes every permission check, so the root test of test_ssh_hosts.py
cannot show that a job works for everyone else: the ranks here have no
XDG_RUNTIME_DIR (sshd without PAM makes none), their segments and sockets
are made under the user's own permissions, and whatever the job leaves in
/dev/shm after it ends is found by its owner.  The cluster's packages and
the account are required where CI sets POSTBOX_TEST_REQUIRE_CLUSTERS=1 and
POSTBOX_TEST_REQUIRE_ATTACK_USERS=1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from ssh_cluster import SshCluster, make_key, missing  # noqa: E402


@pytest.fixture
def hosts(users_dir):
    why = missing()
    if why is not None:
        if os.environ.get("POSTBOX_TEST_REQUIRE_CLUSTERS") == "1":
            pytest.fail("POSTBOX_TEST_REQUIRE_CLUSTERS=1: " + why)
        pytest.skip(why)
    # in the stage, where sshd, reading the authorized keys as the user,
    # can reach them
    cluster = SshCluster(users_dir / "ssh", mode=0o711)
    try:
        cluster.setup()
        cluster.start_servers()
        yield cluster
    finally:
        cluster.close()


def user_key(user) -> Path:
    """A key pair in @user's home, the private half readable by it alone."""
    key = user.home / "key"
    make_key(key)
    for path in (key, key.with_suffix(".pub")):
        os.chown(path, user.uid, user.gid)
    os.chmod(key, 0o600)
    return key


def shm_files_of(uid: int):
    return sorted(entry.name for entry in os.scandir("/dev/shm")
                  if entry.stat(follow_symlinks=False).st_uid == uid)


def run_as(hosts, user, key, args):
    """``postbox run --timeout 60 ARGS`` as @user in the launcher's
    namespace, logging in with @key, to its end."""
    argv = hosts.namespace_argv(0) + user.argv(
        ["python3", "-m", "postbox", "run", "--timeout", "60"] + [str(a) for a in args])
    return subprocess.run(argv, env=user.env({"POSTBOX_RSH": hosts.ssh_command(key),
                                              "POSTBOX_HOST_WAIT": "20"}),
                          cwd=user.home, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=90)


def test_mpi_job_of_an_ordinary_user_over_ssh(hosts, remote_user, stage):
    key = user_key(remote_user)
    hosts.authorize(key.with_suffix(".pub"))
    hostfile = remote_user.home / "hostfile"
    hostfile.write_text("%s:2\n%s:2\n" % (hosts.network.address(1), hosts.network.address(2)))
    before = shm_files_of(remote_user.uid)

    names = run_as(hosts, remote_user, key, ["-n", "2", "--tag-output", "-f", hostfile, "--",
                                        "id", "-un"])
    assert names.returncode == 0, names.stdout + names.stderr
    assert sorted(line.split()[-1] for line in names.stdout.splitlines()) == \
        [remote_user.name] * 2, names.stdout

    groups = run_as(hosts, remote_user, key, ["-n", "4", "-f", hostfile, "-x",
                                         "LD_LIBRARY_PATH=%s" % stage.lib,
                                         stage.program("pbt-mpi-groups")])
    assert groups.returncode == 0, groups.stdout + groups.stderr
    assert "FAIL" not in groups.stdout + groups.stderr and "groups: ok" in groups.stdout

    view = run_as(hosts, remote_user, key, ["-n", "3", "--tag-output", "-f", hostfile, "-x",
                                       "LD_LIBRARY_PATH=%s" % stage.lib,
                                       stage.program("postbox-job-view")])
    assert view.returncode == 0, view.stdout + view.stderr
    assert len([line for line in view.stdout.splitlines() if " size 3 " in line]) == 3, \
        view.stdout
    assert shm_files_of(remote_user.uid) == before
