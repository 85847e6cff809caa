"""``postbox run --hostfile`` over real ssh: each "host" is a network
namespace of this machine running its own ``sshd`` (ssh_cluster.py).

The launcher runs in the first namespace, as root.  The ssh servers are
started a moment after the launcher, so the launcher's first ssh attempts
find nothing listening and must be tried again.  The ranks see two nodes and
talk over the tcp transport between them.  Needs root, ``ip``, ``unshare``,
``sshd`` and ``ssh``; skipped otherwise.  tests/security/test_ssh_user.py
runs a job over the same hosts as an ordinary user.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import built
from postbox import paths
from ssh_cluster import SshCluster, make_key, missing as cluster_missing

missing = cluster_missing()
# CI installs what these need (POSTBOX_TEST_REQUIRE_CLUSTERS=1): there they
# fail rather than skip
missing_fatal = None
if missing is not None and os.environ.get("POSTBOX_TEST_REQUIRE_CLUSTERS") == "1":
    missing_fatal = "POSTBOX_TEST_REQUIRE_CLUSTERS=1: " + missing
pytestmark = [pytest.mark.skipif(missing is not None and missing_fatal is None,
                                 reason=str(missing))]


@pytest.fixture
def cluster(tmp_path):
    """(network, ssh command, start_servers()): the namespaces of
    ssh_cluster.py, logged into as root with a key of the test's own."""
    if missing_fatal is not None:
        pytest.fail(missing_fatal)
    hosts = SshCluster(tmp_path / "ssh")
    key = tmp_path / "ssh" / "user_key"
    make_key(key)
    hosts.authorize(key.with_suffix(".pub"))
    try:
        hosts.setup()
        yield hosts.network, hosts.ssh_command(key), hosts.start_servers
    finally:
        hosts.close()


def launch_in(network, node, argv, env, timeout):
    """Run `postbox run @argv` in @node's namespace; the process, not waited for."""
    return subprocess.Popen(
        ["ip", "netns", "exec", network.name(node), sys.executable, "-m", "postbox", "run",
         "--timeout", str(timeout)] + argv,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_job_from_a_hostfile_over_real_ssh(cluster, tmp_path):
    network, ssh, start_servers = cluster
    view = built(paths.bin_dir() / "postbox-job-view")
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("# two namespaced nodes, as an MPIJob's /etc/mpi/hostfile\n"
                        "%s:2\n%s:1\n" % (network.address(1), network.address(2)))
    env = dict(os.environ, PYTHONPATH=str(paths.repo_root() / "python"),
               POSTBOX_RSH=ssh, POSTBOX_HOST_WAIT="20")
    env.pop("PMI_FD", None)
    launcher = launch_in(network, 0, ["-n", "3", "--tag-output", "-f", str(hostfile), str(view)],
                         env, 60)
    # the first attempts find no sshd: the servers start once the launcher
    # has said it will try again
    retrying = "could not reach host %s (status 255) for rank 0; trying again" \
        % network.address(1)
    said = []
    assert launcher.stderr is not None
    for line in launcher.stderr:
        said.append(line)
        if retrying in line:
            break
    start_servers()
    out, err = launcher.communicate(timeout=90)
    err = "".join(said) + err
    assert retrying in err
    assert launcher.returncode == 0, out + err
    lines = sorted(line for line in out.splitlines() if " size 3 " in line)
    assert [line.split()[1:3] for line in lines] == [["rank", "0"], ["rank", "1"],
                                                      ["rank", "2"]], out
    assert "postbox: started" not in out + err


def test_mpi_program_over_real_ssh(cluster, tmp_path):
    network, ssh, start_servers = cluster
    program = built(paths.bin_dir() / "pbt-mpi-groups")
    start_servers()
    env = dict(os.environ, PYTHONPATH=str(paths.repo_root() / "python"),
               HYDRA_HOST_FILE=str(tmp_path / "hostfile"), HYDRA_LAUNCHER_EXTRA_ARGS="-q")
    Path(env["HYDRA_HOST_FILE"]).write_text("%s:2\n%s:2\n" % (network.address(1),
                                                               network.address(2)))
    env["POSTBOX_RSH"] = ssh
    launcher = launch_in(network, 0, ["-n", "4", str(program)], env, 90)
    out, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 0, out + err
    assert "FAIL" not in out + err and "groups: ok" in out
