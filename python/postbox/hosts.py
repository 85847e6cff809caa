"""The hosts of ``postbox run --hosts``/``--hostfile``: hostfiles, rank
placement, and the remote shell that starts a rank on its host.

- A host is named ``host`` or ``host:N`` (Hydra; an IPv6 address in brackets,
  ``[::1]:2``) on the command line; a hostfile has one a line, also as
  ``host slots=N`` (Open MPI).  Without hosts on the command line, Hydra's or
  Open MPI's variable may name the hostfile (:data:`HOSTFILE_VARIABLES`).
- :func:`place_ranks` lays the ranks out over the hosts' slots, in blocks.
- Each rank starts as ``RSH HOST env VAR=... sh -c WRAPPER PROGRAM ARGS``
  (:func:`rsh_argv`), its one-time PMI token and the job secret on the first
  line of the remote shell's stdin (:func:`job_line`, :data:`RSH_WRAPPER`).
- A host that does not resolve yet, or that the remote shell cannot reach
  yet (:data:`RSH_UNREACHED`), is tried again with back-off
  (:class:`Backoff`, :func:`resolve`) for POSTBOX_HOST_WAIT seconds.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from postbox import pmi_server
from postbox.launchopts import UsageError

# variables naming a hostfile when the command line names no hosts: Hydra's,
# then Open MPI's (PRRTE, then the older ORTE name)
HOSTFILE_VARIABLES = ("HYDRA_HOST_FILE", "PRTE_MCA_prte_default_hostfile",
                      "OMPI_MCA_orte_default_hostfile")
# variables with extra arguments for the remote shell: Postbox's, Hydra's,
# Open MPI's (the first one set is used)
RSH_ARGS_VARIABLES = ("POSTBOX_RSH_ARGS", "HYDRA_LAUNCHER_EXTRA_ARGS", "PRTE_MCA_plm_ssh_args",
                      "OMPI_MCA_plm_rsh_args")
_HOST_NAME = re.compile(r"^[A-Za-z0-9_.:@%\[\]-]+$")
_HOST_COUNT = re.compile(r"^(.*[^:]):([0-9]+)$")

# The remote command's wrapper: its first line of stdin is "<token> <secret>"
# (the shell's read takes exactly that line from a pipe, byte by byte), the
# program inherits the rest of stdin and gets both in its environment, from
# which the library takes them (and wipes them) in postbox_job_init.
# Its first line on stderr is STARTED_MARKER, which the launcher takes out: it
# tells a remote shell that could not reach the host (ssh's status 255) from a
# program that ran, so that only the former is tried again.
STARTED_MARKER = b"\x01postbox: started\n"
RSH_WRAPPER = ('printf "\\001postbox: started\\n" >&2; '
               'IFS=" " read -r POSTBOX_PMI_TOKEN POSTBOX_JOB_SECRET && '
               '[ -n "$POSTBOX_JOB_SECRET" ] || '
               '{ echo "postbox run: no job line on the standard input of $0 (an rsh that '
               'does not pass stdin, like ssh -n?)" >&2; exit 126; }; '
               'export POSTBOX_PMI_TOKEN POSTBOX_JOB_SECRET; exec "$0" "$@"')
# a remote shell that ends with this status before the wrapper started could
# not reach its host (ssh's own failures): tried again with back-off, from
# RSH_RETRY_FIRST s doubling to RSH_RETRY_MAX s, for POSTBOX_HOST_WAIT s
RSH_UNREACHED = 255
RSH_RETRY_FIRST = 0.25
RSH_RETRY_MAX = 4.0
HOST_WAIT = 30.0


# ---- host names and hostfiles -------------------------------------------------

def host_entry(text: str, where: str) -> Tuple[str, int]:
    """(host, slots) of one entry "host" or "host:N" (an IPv6 address in
    brackets: "[::1]:2"); slots 0 when not given.  UsageError naming @where."""
    count = _HOST_COUNT.match(text)
    host, slots = text, 0
    if count is not None and (":" not in count.group(1) or count.group(1).endswith("]")):
        host, slots = count.group(1), int(count.group(2))
        if slots < 1:
            raise UsageError("%s: %r gives a host no slots" % (where, text))
    if not _HOST_NAME.match(host) or host.startswith("-"):
        raise UsageError("%s: %r is not a host name" % (where, text))
    return host, slots


def host_name(host: str) -> str:
    """The name to resolve of a host entry: without "user@" and brackets."""
    return host.rsplit("@", 1)[-1].strip("[]")


def parse_hostfile(text: str, source: str) -> List[Tuple[str, int]]:
    """The (host, slots) of a hostfile's lines, in order, a host named twice
    once with its slots added: "host", "host:N" (Hydra) or "host slots=N"
    (Open MPI; max_slots= is accepted and ignored); "#" starts a comment.
    Slots 0: not given.  UsageError naming @source and the line."""
    hosts: Dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = "%s line %d" % (source, number)
        host, slots = host_entry(words[0], where)
        for word in words[1:]:
            key, has_value, value = word.partition("=")
            if key in ("slots", "max_slots", "max-slots") and has_value and value.isdigit() \
                    and int(value) >= 1:
                if key == "slots":
                    if slots:
                        raise UsageError("%s: slots given twice" % where)
                    slots = int(value)
            else:
                raise UsageError("%s: %r is not slots=N (a host per line: host, host:N or "
                                 "host slots=N)" % (where, word))
        if host in hosts and (hosts[host] == 0) != (slots == 0):
            raise UsageError("%s: %s is named again, with%s slots this time"
                             % (where, host, "" if slots else "out"))
        hosts[host] = hosts.get(host, 0) + slots
    if not hosts:
        raise UsageError("%s names no host" % source)
    return list(hosts.items())


def read_hostfile(path: str, what: str) -> List[Tuple[str, int]]:
    """parse_hostfile of the file @path (@what says where its name came from)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError as exc:
        raise UsageError("%s %s: %s" % (what, path, exc.strerror or exc)) from None
    return parse_hostfile(text, "%s %s" % (what, path))


def hostfile_variable() -> Optional[Tuple[str, str]]:
    """(variable, path) of the first of HOSTFILE_VARIABLES set in the
    environment, or None."""
    for variable in HOSTFILE_VARIABLES:
        if os.environ.get(variable):
            return variable, os.environ[variable]
    return None


def place_ranks(size: int, hosts: Sequence[Tuple[str, int]]) -> Tuple[List[str], List[int]]:
    """(hosts, ranks per host) for @size ranks on @hosts ((host, slots), slots
    0 meaning as many as an even share): each host's slots are filled in
    order, and when the ranks outnumber the slots the hosts are filled again
    in the same proportions (oversubscribed); ranks stay in blocks, host by
    host, and hosts left without a rank are dropped."""
    if all(slots == 0 for _, slots in hosts):
        # an even share, in blocks like --nodes
        counts = pmi_server.node_sizes(size, len(hosts)) if size >= len(hosts) else \
            [1] * size + [0] * (len(hosts) - size)
    else:
        slots = [s if s else 1 for _, s in hosts]
        counts = [0] * len(hosts)
        left = size
        while left > 0:
            for index, count in enumerate(slots):
                take = min(count, left)
                counts[index] += take
                left -= take
    used = [(host, count) for (host, _), count in zip(hosts, counts) if count > 0]
    return [host for host, _ in used], [count for _, count in used]


# ---- the remote shell -----------------------------------------------------------

def check_rsh(what: str, command: str) -> None:
    """UsageError naming @what when @command is not a shell command line."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError("%s %r: %s" % (what, command, exc)) from None
    if not words:
        raise UsageError("%s wants a command, not %r" % (what, command))


def remote_shell(rsh: Optional[str]) -> str:
    """The remote shell command: @rsh (--rsh), else $POSTBOX_RSH, else ssh,
    with the words of the first of RSH_ARGS_VARIABLES set added.  UsageError
    naming the variable that is not a command line."""
    if rsh is None:
        rsh = os.environ.get("POSTBOX_RSH") or "ssh"
        check_rsh("POSTBOX_RSH", rsh)
    for variable in RSH_ARGS_VARIABLES:
        if os.environ.get(variable):
            check_rsh(variable, "rsh " + os.environ[variable])
            return rsh + " " + os.environ[variable]
    return rsh


def rsh_argv(rsh: str, host: str, variables: Sequence[Tuple[str, str]], program: str,
             args: Sequence[str]) -> List[str]:
    """``RSH HOST env VAR=... sh -c WRAPPER PROGRAM ARGS`` with @variables, the
    remote part quoted for a shell.

    Neither the token nor the secret is among the words: they come on the
    first line of the rsh process's stdin (:func:`job_line`, RSH_WRAPPER).
    """
    words = ["env"] + ["%s=%s" % pair for pair in variables] + \
        ["sh", "-c", RSH_WRAPPER, program] + list(args)
    return shlex.split(rsh) + [host] + [shlex.quote(w) for w in words]


def job_line(token: bytes, secret: str) -> bytes:
    """What a remote rank's wrapper reads first on its stdin."""
    return ("%s %s\n" % (token.hex(), secret)).encode()


# ---- hosts that are not up yet -------------------------------------------------------

class Backoff:
    """Tries again with back-off, from RSH_RETRY_FIRST s doubling to
    RSH_RETRY_MAX s, for @wait seconds from @now."""

    def __init__(self, wait: float, now: Optional[float] = None):
        self.deadline = (time.monotonic() if now is None else now) + wait
        self.delay = RSH_RETRY_FIRST
        self.tries = 0

    def next(self, now: float) -> Optional[float]:
        """The delay before the next try (counted in tries), or None when
        that try would come after the wait is over."""
        if now + self.delay > self.deadline:
            return None
        delay = self.delay
        self.delay = min(2 * delay, RSH_RETRY_MAX)
        self.tries += 1
        return delay


def resolve(name: str, port: Optional[int], kind: int, wait: float,
            log: Callable[[str], None], interrupted: Callable[[], bool]) -> list:
    """getaddrinfo of host @name, tried again with back-off while the name
    does not resolve yet (a cluster's name service may learn of a node after
    the job starts), for up to @wait s or until @interrupted(); the first
    retry said to @log.  socket.gaierror after."""
    backoff = Backoff(wait)
    while True:
        try:
            return socket.getaddrinfo(name, port, type=kind)
        except socket.gaierror as exc:
            if exc.errno not in (socket.EAI_NONAME, socket.EAI_AGAIN):
                raise
            delay = backoff.next(time.monotonic())
            if delay is None or interrupted():
                raise
            if backoff.tries == 1:
                log("host %s does not resolve yet (%s); trying again for up to %g s "
                    "(POSTBOX_HOST_WAIT)" % (name, exc.strerror, wait))
            time.sleep(delay)
