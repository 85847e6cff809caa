"""A real Slurm cluster on this one machine, for the tests of test_slurm.py.

Three network namespaces made with postbox.netns (one bridge; addresses
10.x.0.1-3), each with a host name of its own (a UTS namespace): ``ctl``
runs ``slurmctld``, ``node1`` and ``node2`` each run a ``slurmd``; one
``munged`` with a key of its own serves them all through a socket in the
cluster's folder (Slurm's ``AuthInfo=socket=``).  Commands (``srun``,
``salloc``, ``sbatch``, ``sinfo``) run in the ``ctl`` namespace with
``SLURM_CONF`` set (:meth:`SlurmCluster.command`).  Process tracking by
process group and no task plugin, so no cgroup is needed.  Everything is
stopped and removed when the context ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import List, Optional

from postbox import netns

DAEMONS = ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged")
# where each slurmd sees a folder of its own for the PMIx plugin's client
# directories (a bind mount in the slurmd's own mount namespace): the
# plugin names them after the step only, so two slurmd on one file system
# would collide
PMIX_DIR = "/run/postbox-test-slurm-pmix"
NODES = ("node1", "node2")

SLURM_CONF = """\
ClusterName=pbx
SlurmctldHost=ctl({ctl})
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={dir}/munge.socket
CredType=cred/munge
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool-%n
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd-%n.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
{nodes}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""


def missing() -> Optional[str]:
    """Why a Slurm cluster cannot be made here, or None."""
    why = netns.unavailable()
    if why is not None:
        return "a Slurm cluster in network namespaces needs root and `ip`: %s" % why
    for program in DAEMONS + ("/usr/sbin/mungekey",):
        if not os.access(program, os.X_OK):
            return "needs %s (apt-get install slurmd slurmctld slurm-client munge)" % program
    for program in ("srun", "sinfo", "unshare", "nsenter"):
        if shutil.which(program) is None:
            return "needs %s (apt-get install slurm-client util-linux)" % program
    return None


class SlurmCluster:
    """Context manager: the cluster up on enter, gone on exit."""

    def __init__(self, folder: Path):
        self.dir = Path(folder)
        self.network = netns.JobNetwork(os.getpid(), 1 + len(NODES))
        self.daemons: List[subprocess.Popen] = []
        self.conf = self.dir / "slurm.conf"

    def __enter__(self) -> "SlurmCluster":
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _in(self, node: int, hostname: str, argv: List[str]) -> subprocess.Popen:
        log = open(self.dir / ("%s.out" % hostname), "ab")
        own = self.dir / ("pmix-%s" % hostname)
        own.mkdir(exist_ok=True)
        try:
            return subprocess.Popen(
                # nsenter, not `ip netns exec`, which mounts a sysfs of its own
                # over /sys and so hides the cgroup file systems from slurmd
                ["nsenter", "--net=%s/%s" % (netns.NETNS_DIR, self.network.name(node)),
                 "unshare", "--uts", "--mount", "sh", "-c",
                 'hostname "$0" && mount --bind "$1" "$2" && shift 2 && exec "$@"', hostname,
                 str(own), PMIX_DIR] + argv,
                stdout=log, stderr=subprocess.STDOUT, env=self.env())
        finally:
            log.close()

    def env(self) -> dict:
        env = dict(os.environ, SLURM_CONF=str(self.conf))
        for name in list(env):
            if name.startswith(("SLURM_", "PMI_", "PMIX_")) and name != "SLURM_CONF":
                del env[name]
        return env

    def _start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "state").mkdir(exist_ok=True)
        for name in NODES:
            (self.dir / ("spool-%s" % name)).mkdir(exist_ok=True)
        key = self.dir / "munge.key"
        subprocess.run(["/usr/sbin/mungekey", "-c", "-f", "-k", str(key)], check=True,
                       capture_output=True)
        os.chmod(key, 0o600)
        self.daemons.append(subprocess.Popen(
            ["/usr/sbin/munged", "-F", "-f", "--socket=%s" % (self.dir / "munge.socket"),
             "--key-file=%s" % key, "--log-file=%s" % (self.dir / "munged.log"),
             "--pid-file=%s" % (self.dir / "munged.pid"),
             "--seed-file=%s" % (self.dir / "munged.seed")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.network.setup()
        base = 20000 + os.getpid() % 20000
        nodes = "\n".join("NodeName=%s NodeAddr=%s CPUs=2 State=UNKNOWN"
                          % (name, self.network.address(1 + i)) for i, name in enumerate(NODES))
        os.makedirs(PMIX_DIR, exist_ok=True)
        (self.dir / "mpi.conf").write_text("PMIxCliTmpDirBase=%s\n" % PMIX_DIR)
        self.conf.write_text(SLURM_CONF.format(ctl=self.network.address(0), dir=self.dir,
                                               ctld_port=base, slurmd_port=base + 1, nodes=nodes))
        for _ in range(50):
            if (self.dir / "munge.socket").exists():
                break
            time.sleep(0.1)
        self.daemons.append(self._in(0, "ctl", ["/usr/sbin/slurmctld", "-D", "-i", "-f",
                                                str(self.conf)]))
        for i, name in enumerate(NODES):
            self.daemons.append(self._in(1 + i, name, ["/usr/sbin/slurmd", "-D", "-N", name,
                                                       "-f", str(self.conf)]))
        deadline = time.monotonic() + 60
        while True:
            state = self.command(["sinfo", "-h", "-o", "%t", "-N"], timeout=10)
            states = state.stdout.split()
            if state.returncode == 0 and len(states) == len(NODES) and \
                    all(s in ("idle", "mix", "alloc") for s in states):
                return
            dead = [d.args for d in self.daemons if d.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError("the Slurm cluster did not come up (%s): %s"
                                   % ("exited: %s" % dead if dead else "sinfo: %r"
                                      % state.stdout.strip(), self.logs()))
            time.sleep(0.5)

    def command(self, argv: List[str], timeout: float = 120,
                env: Optional[dict] = None) -> subprocess.CompletedProcess:
        """Run @argv in the controller's namespace (as a login node would)."""
        return subprocess.run(["ip", "netns", "exec", self.network.name(0)] + list(argv),
                              capture_output=True, text=True, timeout=timeout,
                              env=env if env is not None else self.env())

    def logs(self) -> str:
        text = []
        for path in sorted(self.dir.glob("*.log")) + sorted(self.dir.glob("*.out")):
            lines = path.read_text(errors="replace").splitlines()[-15:]
            text.append("== %s\n%s" % (path.name, "\n".join(lines)))
        return "\n".join(text)

    def __exit__(self, *exc) -> None:
        for daemon in reversed(self.daemons):
            if daemon.poll() is None:
                daemon.terminate()
        for daemon in reversed(self.daemons):
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        self.network.close_fds()
        self.network.remove()
