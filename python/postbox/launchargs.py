"""The command line of ``postbox run``: its help and its parsing into an
:class:`~postbox.launchopts.Options` (:mod:`postbox.launch` runs the job).
"""

from __future__ import annotations

import os
import re
from typing import List, Optional, Sequence, Tuple

from postbox import hosts, netns
from postbox.launchopts import RESERVED, Options, UsageError

_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

HELP = """\
usage: {prog} [-n N] [--universe U] [--nodes K [--bind-nodes] [--netns [--rails R]
       {indent}   [--link L]]] [--bind-to core|none]
       {indent} [--tag-output] [--timeout S [--timeout-stacks]] [-x VAR=value]...
       {indent} [--hosts H1[:N],H2,... | --hostfile FILE] [--rsh CMD] [--pmi-address A]
       {indent} PROGRAM [ARGS...]

Start N ranks of PROGRAM on this host (or on the --hosts) as one job and
serve them PMI.

options:
  -n N, -np N       number of ranks (default 1); N may exceed the number of cores
  --universe U      slots for U processes in all (U >= N, default N): the N
                    ranks, and U - N more that the ranks may start at run time
                    with PMI spawn (MPI_Comm_spawn), laid out in blocks over
                    the virtual nodes too.  Not with --hosts
  --nodes K         split the ranks into K virtual nodes, in blocks: ranks
                    0..N/K-1 on node 0, and so on (when K does not divide N the
                    first N%K nodes get one rank more); ranks on different
                    virtual nodes must talk as if over the network (default 1)
  --bind-nodes      with --nodes: give each virtual node its share of this
                    host's CPUs, as each host of a cluster has its own (the
                    CPUs the launcher may use, cut into K runs of consecutive
                    ones; with more nodes than CPUs, consecutive nodes share
                    one); a node's ranks may run on its CPUs only
  --bind-to core    bind each rank to one CPU of this host's (the CPUs the
                    launcher may use, in order, rank after rank, round and
                    round), so that the kernel cannot stack two ranks on one
                    CPU while another is idle; a rank's threads then share its
                    CPU.  --bind-to none (the default) leaves the ranks free
  --tag-output      prefix every line a rank prints with "[rank] " (a spawned
                    process: "[spawn:rank] ")
  --timeout S       end the job after S seconds (exit status 124), naming the
                    ranks still running
  --timeout-stacks  with --timeout: before ending the job, print the stack of
                    every thread of every rank still running on this host
                    (needs gdb; ranks on --hosts are named, not traced);
                    POSTBOX_TIMEOUT_STACKS=1 in the environment does the same
                    for every job run with --timeout
  -x VAR=value      set VAR in the environment of every rank (repeatable);
                    -x VAR passes the launcher's own value of VAR
  --netns           (root) one network namespace per virtual node, joined by
                    veth pairs and a bridge; node k has the address 10.213.0.<k+1>
                    (POSTBOX_NETNS_ADDR; another private /16 if that one is in
                    use here); all removed at the end, even after a crash
  --rails R         with --netns: R (1-4) links per node, each its own veth pair,
                    bridge and /16 (rail r of node k: POSTBOX_NETNS_RAILS lists
                    them in rail order); the tcp transport stripes over them and
                    fails over when one is cut (default 1)
  --link RATE[,DELAY[,LOSS]]
                    with --netns: emulate links of RATE (10mbit, 100M, 1gbit,
                    10G: each node sends and receives at most RATE), a one-way
                    DELAY (50us, 1ms: a round trip takes 2 x DELAY more) and
                    LOSS (0.1%: of the packets each way), with the kernel's
                    traffic control on every rail (needs `tc`; DELAY needs
                    the kernel's netem)
  --hosts H1,H2     run the ranks on these hosts, in blocks like --nodes (one
                    node per host), each as: RSH HOST env VAR=... sh -c ...
                    PROGRAM ARGS, with the rank's token and the job secret on
                    the first line of its stdin (see docs/launch.md)
  --hostfile FILE   (also -f, --machinefile) the hosts, one a line: host,
                    host:N or host slots=N (N ranks fill a host's slots, host
                    by host; more ranks than slots fill them again); without
                    --hosts, --nodes, --netns or --universe, $HYDRA_HOST_FILE
                    or Open MPI's hostfile variable names it
  --rsh CMD         the remote shell for --hosts (default $POSTBOX_RSH or ssh),
                    plus the words of $POSTBOX_RSH_ARGS (or Hydra's or Open
                    MPI's variable of extra ssh arguments); a host that does
                    not resolve yet, or that ssh cannot reach yet (status
                    255), is tried again with back-off for $POSTBOX_HOST_WAIT
                    seconds (default 30)
  --pmi-address A   with --hosts: the address of this machine the hosts reach,
                    where the PMI port listens (default: found by routing)
  -h, --help        show this help and exit

Every rank gets PMI_FD, PMI_RANK, PMI_SIZE, POSTBOX_JOB_ID, POSTBOX_JOB_SECRET,
POSTBOX_VNODE and POSTBOX_NODE_ID, with --netns also POSTBOX_NETNS_ADDR and
POSTBOX_NETNS_RAILS; ranks on --hosts get PMI_PORT, PMI_ID and POSTBOX_JOB_ID
on the command line and their one-time PMI token and the secret on stdin (see
docs/launch.md).  Each rank's stdout and stderr are forwarded line by line;
stdin goes to rank 0.  SIGINT, SIGTERM and SIGHUP are forwarded to every rank.
When a rank is killed by a signal or exits non-zero while others still run, or
calls PMI abort, the whole job is ended (SIGTERM, then SIGKILL after 1 s) with
one message naming the rank and its node.

exit status: the first non-zero exit status of a rank (128+signal for a rank
killed by a signal), the code given to PMI abort (1 when it is 0 or does not
fit 1..255), 124 after --timeout, 128+signal
when the launcher itself got SIGINT/SIGTERM/SIGHUP, 127 (126) when PROGRAM cannot
be found (executed), 2 for a usage error (or --netns without root or `ip`, or
--link without `tc` or what it needs of the kernel), 1 when the --netns
namespaces cannot be set up.

examples:
  {prog} -n 4 --nodes 2 --tag-output build/bin/postbox-job-view
  {prog} -n 4 --nodes 2 --netns build/bin/postbox-job-view
  {prog} -n 2 --nodes 2 --netns --rails 2 build/bin/postbox-rsm-net-bench
  {prog} -n 2 --nodes 2 --netns --link 100mbit,50us build/bin/postbox-rsm-net-bench
  {prog} -n 8 --hosts node1,node2 /opt/app/bin/solver input.dat
  {prog} -n 8 --hostfile /etc/mpi/hostfile /opt/app/bin/solver input.dat
"""


def _positive_int(option: str, text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise UsageError("%s wants a positive integer, not %r" % (option, text)) from None
    if value < 1:
        raise UsageError("%s wants a positive integer, not %r" % (option, text))
    return value


def parse_args(argv: Sequence[str]) -> Optional[Options]:
    """The options of ``postbox run``; None for --help; UsageError when wrong.

    Options come first; the first argument that is not an option (or the one
    after ``--``) is the program, and everything after it is its own.
    """
    opts = Options()
    argv = list(argv)
    nodes_given = False
    hosts_given: List[Tuple[str, int]] = []
    hostfile: Optional[Tuple[str, str]] = None   # (option or variable, path)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        name, has_inline, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")

        def value() -> str:
            nonlocal i
            if has_inline:
                return inline
            if i + 1 >= len(argv):
                raise UsageError("%s needs a value" % name)
            i += 1
            return argv[i]

        def flag() -> bool:
            if has_inline:
                raise UsageError("%s takes no value" % name)
            return True

        if name in ("-h", "--help"):
            return None
        elif name in ("-n", "-np", "--np", "--n"):
            opts.size = _positive_int(name, value())
        elif name == "--universe":
            opts.universe = _positive_int(name, value())
        elif name == "--nodes":
            opts.nodes = _positive_int(name, value())
            nodes_given = True
        elif name == "--tag-output":
            opts.tag_output = flag()
        elif name == "--timeout":
            text = value()
            try:
                opts.timeout = float(text)
            except ValueError:
                opts.timeout = -1.0
            if not opts.timeout > 0 or opts.timeout != opts.timeout or opts.timeout == float("inf"):
                raise UsageError("--timeout wants a number of seconds > 0, not %r" % text)
        elif name == "--timeout-stacks":
            opts.timeout_stacks = flag()
        elif name == "-x":
            text = value()
            var, has_value, val = text.partition("=")
            if not _VAR_NAME.match(var):
                raise UsageError("-x wants VAR=value with VAR a variable name, not %r" % text)
            if var in RESERVED:
                raise UsageError("-x %s: the launcher sets %s itself" % (var, var))
            if not has_value:
                if var not in os.environ:
                    raise UsageError("-x %s: %s is not set in this environment" % (var, var))
                val = os.environ[var]
            opts.env.append((var, val))
        elif name == "--netns":
            opts.netns = flag()
        elif name == "--bind-nodes":
            opts.bind_nodes = flag()
        elif name == "--bind-to":
            opts.bind_to = value()
            if opts.bind_to not in ("core", "none"):
                raise UsageError("--bind-to wants core or none, not %r" % opts.bind_to)
        elif name == "--rails":
            text = value()
            if not text.isdigit() or not 1 <= int(text) <= netns.MAX_RAILS:
                raise UsageError("--rails wants a number of links per node from 1 to %d, "
                                 "not %r" % (netns.MAX_RAILS, text))
            opts.rails = int(text)
        elif name == "--link":
            try:
                opts.link = netns.parse_link(value())
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        elif name == "--hosts":
            text = value()
            try:
                entries = [hosts.host_entry(host, "--hosts") for host in text.split(",")]
            except UsageError:
                raise UsageError("--hosts wants host names (host or host:N) separated by "
                                 "commas, not %r" % text) from None
            hosts_given = entries
        elif name in ("--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f"):
            hostfile = (name, value())
        elif name == "--rsh":
            opts.rsh = value()
            hosts.check_rsh("--rsh", opts.rsh)
        elif name == "--pmi-address":
            opts.pmi_address = value()
            if not opts.pmi_address:
                raise UsageError("--pmi-address wants an address")
        else:
            raise UsageError("unknown option %s" % arg)
        i += 1
    if i >= len(argv):
        raise UsageError("no program to run")
    opts.program = argv[i]
    opts.args = argv[i + 1:]
    if opts.bind_nodes and not nodes_given:
        raise UsageError("--bind-nodes needs --nodes (it shares this host's CPUs among "
                         "the virtual nodes)")
    if opts.bind_nodes and opts.bind_to == "core":
        raise UsageError("--bind-nodes and --bind-to core cannot be combined (the first "
                         "gives each virtual node CPUs, the second each rank one)")
    if opts.rails > 1 and not opts.netns:
        raise UsageError("--rails needs --netns (the links are veth pairs between the "
                         "virtual nodes' network namespaces)")
    if opts.link is not None and not opts.netns:
        raise UsageError("--link needs --netns (it shapes the veth pairs between the "
                         "virtual nodes' network namespaces)")
    if hosts_given and hostfile is not None:
        raise UsageError("--hosts and %s cannot be combined" % hostfile[0])
    if not hosts_given and hostfile is None and not (nodes_given or opts.netns
                                                     or opts.universe is not None):
        hostfile = hosts.hostfile_variable()
    if hostfile is not None:
        hosts_given = hosts.read_hostfile(hostfile[1], hostfile[0])
    elif hosts_given and len(hosts_given) > opts.size:
        raise UsageError("--hosts names %d hosts, more than the %d rank%s (every host "
                         "needs a rank)" % (len(hosts_given), opts.size,
                                            "" if opts.size == 1 else "s"))
    if hosts_given:
        opts.hosts, opts.host_ranks = hosts.place_ranks(opts.size, hosts_given)
    if opts.hosts:
        what = "--hosts" if hostfile is None else hostfile[0]
        if nodes_given:
            raise UsageError("--nodes and %s cannot be combined (each host is one node)" % what)
        if opts.netns:
            raise UsageError("--netns and %s cannot be combined (--netns splits this "
                             "host into virtual nodes)" % what)
        if opts.bind_to == "core":
            raise UsageError("--bind-to core and %s cannot be combined (it binds the ranks "
                             "this host starts, and the ranks on other hosts are started "
                             "there)" % what)
        opts.nodes = len(opts.hosts)
        opts.rsh = hosts.remote_shell(opts.rsh)
    else:
        for given, option in ((opts.rsh, "--rsh"), (opts.pmi_address, "--pmi-address")):
            if given is not None:
                raise UsageError("%s only applies with --hosts" % option)
    if opts.universe is not None:
        if opts.universe < opts.size:
            raise UsageError("--universe %d is less than the %d rank%s started (the universe "
                             "holds them)" % (opts.universe, opts.size,
                                              "" if opts.size == 1 else "s"))
        if opts.hosts:
            raise UsageError("--universe cannot be combined with hosts (processes are "
                             "spawned on this host only)")
    if opts.nodes > opts.size:
        raise UsageError("--nodes %d is more than the %d rank%s (every virtual node needs "
                         "a rank)" % (opts.nodes, opts.size, "" if opts.size == 1 else "s"))
    if opts.timeout_stacks and opts.timeout is None:
        raise UsageError("--timeout-stacks needs --timeout")
    if os.environ.get("POSTBOX_TIMEOUT_STACKS") == "1":
        opts.timeout_stacks = True
    return opts
