"""Hosts reached over real ssh on this one machine, for the tests of
test_ssh_hosts.py and tests/security/test_ssh_user.py.

Three network namespaces are made with postbox.netns (one bridge, addresses
10.x.0.1-3): the launcher runs in the first, and ``sshd`` (Debian's
openssh-server, with a host key, the authorized keys and a configuration of
the cluster's own, in its folder) in the other two, each also in a UTS
namespace with a host name of its own, so the ranks see two nodes.  The
hosts share this machine's file system, so a program's path is the same
everywhere.  :meth:`SshCluster.close` stops the servers and removes the
namespaces.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import IO, List, Optional

from postbox import netns

SSHD = "/usr/sbin/sshd"
NODES = (1, 2)

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


def missing() -> Optional[str]:
    """Why the cluster cannot be made here, or None."""
    return netns.unavailable() or (
        None if os.access(SSHD, os.X_OK) and shutil.which("ssh") and shutil.which("ssh-keygen")
        else "needs openssh-server and openssh-client (apt-get install openssh-server)")


def make_key(path: Path) -> None:
    """An ed25519 key pair without a passphrase: @path and @path.pub."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


class SshCluster:
    """The namespaces and the two ssh servers, configured in @folder (made
    here, mode @mode: sshd reads the authorized keys as the user logging in,
    so a folder for users other than root must let them through)."""

    def __init__(self, folder: Path, mode: int = 0o700):
        self.folder = folder
        folder.mkdir()
        os.chmod(folder, mode)
        make_key(folder / "host_key")
        (folder / "authorized_keys").write_text("")
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)   # sshd's privilege separation
        self.network = netns.JobNetwork(os.getpid(), 3)
        self.servers: List[subprocess.Popen] = []
        self.logs: List[IO[bytes]] = []

    def authorize(self, public_key: Path) -> None:
        """Let the holder of @public_key's private key in, as any user."""
        with open(self.folder / "authorized_keys", "a") as keys:
            keys.write(public_key.read_text())

    @staticmethod
    def ssh_command(key: Path) -> str:
        """The remote shell command (POSTBOX_RSH) that logs in with @key."""
        return ("ssh -F /dev/null -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                "-o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=5" % key)

    def setup(self) -> None:
        """Make the namespaces and the bridge."""
        self.network.setup()

    def start_servers(self) -> None:
        """Start sshd on nodes 1 and 2 (host names pbx-ssh-node1, -node2),
        each logging to sshd-NODE.log in the folder."""
        for node in NODES:
            config = self.folder / ("sshd-%d.conf" % node)
            config.write_text(SSHD_CONFIG.format(address=self.network.address(node),
                                                 dir=self.folder, node=node))
            log = open(self.folder / ("sshd-%d.log" % node), "wb")
            self.logs.append(log)
            self.servers.append(subprocess.Popen(
                ["ip", "netns", "exec", self.network.name(node), "unshare", "--uts", "sh", "-c",
                 'hostname "$0" && exec "$@"', "pbx-ssh-node%d" % node,
                 SSHD, "-D", "-e", "-f", str(config)],
                stdout=subprocess.DEVNULL, stderr=log))

    def namespace_argv(self, node: int) -> List[str]:
        """The words that run a command in node @node's namespace."""
        return ["ip", "netns", "exec", self.network.name(node)]

    def close(self) -> None:
        for server in self.servers:
            server.terminate()
        for server in self.servers:
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        for log in self.logs:
            log.close()
        self.network.close_fds()
        self.network.remove()
