"""``postbox run --hostfile`` over real ssh: each "host" is a network
namespace of this machine running its own ``sshd``.

Three namespaces are made with postbox.netns (one bridge, addresses
10.x.0.1-3): the launcher runs in the first, and ``sshd`` (Debian's
openssh-server, with a host key, an authorized key and a configuration of
the test's own, in a temporary folder) in the other two.  The ssh servers
are started a moment after the launcher, so the launcher's first ssh
attempts find nothing listening and must be tried again.  The hosts share
this machine's file system, so the program's path is the same everywhere;
each sshd also runs in a UTS namespace with a host name of its own, so the
ranks see two nodes and talk over the tcp transport between them.  Needs
root, ``ip``, ``unshare``, ``sshd`` and ``ssh``; skipped otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import built
from postbox import netns, paths

SSHD = "/usr/sbin/sshd"
missing = netns.unavailable() or (
    None if os.access(SSHD, os.X_OK) and shutil.which("ssh") and shutil.which("ssh-keygen")
    else "needs openssh-server and openssh-client (apt-get install openssh-server)")
# CI installs what these need (POSTBOX_TEST_REQUIRE_CLUSTERS=1): there they
# fail rather than skip
missing_fatal = None
if missing is not None and os.environ.get("POSTBOX_TEST_REQUIRE_CLUSTERS") == "1":
    missing_fatal = "POSTBOX_TEST_REQUIRE_CLUSTERS=1: " + missing
pytestmark = [pytest.mark.skipif(missing is not None and missing_fatal is None,
                                 reason=str(missing))]

SSHD_CONFIG = """\
ListenAddress {address}
Port 22
HostKey {dir}/host_key
PidFile {dir}/sshd-{node}.pid
AuthorizedKeysFile {dir}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AcceptEnv none
"""


@pytest.fixture
def cluster(tmp_path):
    """(network, ssh command, start_servers()): three namespaces, keys and
    ssh configurations; start_servers() starts sshd on nodes 1 and 2."""
    if missing_fatal is not None:
        pytest.fail(missing_fatal)
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)],
                       check=True)
    shutil.copy(keys / "user_key.pub", keys / "authorized_keys")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)   # sshd's privilege separation
    network = netns.JobNetwork(os.getpid(), 3)
    servers = []

    def start_servers():
        for node in (1, 2):
            config = keys / ("sshd-%d.conf" % node)
            config.write_text(SSHD_CONFIG.format(address=network.address(node), dir=keys,
                                                 node=node))
            # a host name of its own too (a UTS namespace): the ranks see two nodes
            servers.append(subprocess.Popen(
                ["ip", "netns", "exec", network.name(node), "unshare", "--uts", "sh", "-c",
                 'hostname "$0" && exec "$@"', "pbx-ssh-node%d" % node,
                 SSHD, "-D", "-e", "-f", str(config)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))

    ssh = ("ssh -F /dev/null -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
           "-o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=5" % (keys / "user_key"))
    try:
        network.setup()
        yield network, ssh, start_servers
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        network.close_fds()
        network.remove()


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
