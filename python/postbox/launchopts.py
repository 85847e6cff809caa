"""What the parts of ``postbox run`` share: its options, its exit statuses,
and the environment variables the launcher owns.

:mod:`postbox.launch` (the launcher), :mod:`postbox.hosts` (hostfiles, rank
placement, the remote shell) and :mod:`postbox.slurm` (the job as a Slurm
step) all take an :class:`Options` and end with these statuses.
"""

from __future__ import annotations

import shlex
import signal
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from postbox import netns

EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# variables the launcher sets itself; -x may not set them
RESERVED = ("PMI_FD", "PMI_RANK", "PMI_SIZE", "PMI_PORT", "PMI_ID", "POSTBOX_JOB_ID",
            "POSTBOX_JOB_SECRET", "POSTBOX_PMI_TOKEN", "POSTBOX_VNODE", "POSTBOX_NODE_ID",
            "POSTBOX_NETNS_ADDR", "POSTBOX_NETNS_RAILS", "POSTBOX_SLOT",
            "POSTBOX_UNIVERSE_NODES", "POSTBOX_CPU_SHARERS")
# inherited variables that would mislead a PMI client
SCRUBBED = ("PMI_PORT", "PMI_ID", "PMI_JOBID", "PMI_SPAWNED", "PMI_KVSNAME",
            "POSTBOX_PMI_TOKEN", "POSTBOX_SLOT", "POSTBOX_UNIVERSE_NODES", "POSTBOX_CPU_SHARERS")


class UsageError(Exception):
    """A bad command line; the message says what is wrong."""


@dataclass
class Options:
    """The parsed command line of ``postbox run`` (launchargs.parse_args)."""
    size: int = 1
    universe: Optional[int] = None
    nodes: int = 1
    tag_output: bool = False
    timeout: Optional[float] = None
    timeout_stacks: bool = False
    env: List[Tuple[str, str]] = field(default_factory=list)
    netns: bool = False
    # each virtual node its share of this host's CPUs (node_cpus)
    bind_nodes: bool = False
    # --bind-to: "core", each rank of this host one CPU (rank_cpu); "none"
    bind_to: str = "none"
    rails: int = 1
    link: Optional[netns.LinkSpec] = None
    hosts: List[str] = field(default_factory=list)
    # --hosts/--hostfile: the ranks of each host, in host order (rank blocks)
    host_ranks: List[int] = field(default_factory=list)
    rsh: Optional[str] = None
    pmi_address: Optional[str] = None
    program: str = ""
    args: List[str] = field(default_factory=list)

    def rsh_argv0(self) -> str:
        return shlex.split(self.rsh or "ssh")[0]


def node_cpus(allowed: Sequence[int], nodes: int, node: int) -> List[int]:
    """The CPUs virtual node @node of @nodes gets with ``--bind-nodes``: the
    CPUs in @allowed (the launcher's, in order) cut into @nodes runs of
    consecutive ones, as even as they go; with more nodes than CPUs each
    node gets one, and consecutive nodes share it.  ValueError when
    @allowed is empty or @node is not one of the nodes."""
    if not allowed:
        raise ValueError("no CPU to share among the virtual nodes")
    if not 0 <= node < nodes:
        raise ValueError("virtual node %d of %d" % (node, nodes))
    cpus = sorted(allowed)
    first = node * len(cpus) // nodes
    last = max((node + 1) * len(cpus) // nodes, first + 1)
    return cpus[first:last]


def rank_cpu(allowed: Sequence[int], slot: int) -> int:
    """The CPU the process in slot @slot gets with ``--bind-to core``: the
    CPUs in @allowed (the launcher's) in order, round and round, so that
    with no more ranks than CPUs each has one of its own and with more they
    share them as evenly as they go.  ValueError when @allowed is empty or
    @slot is negative."""
    if not allowed:
        raise ValueError("no CPU to bind the ranks to")
    if slot < 0:
        raise ValueError("slot %d" % slot)
    cpus = sorted(allowed)
    return cpus[slot % len(cpus)]
