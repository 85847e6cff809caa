"""``postbox run``: start a job of N ranks on this host and serve it PMI.

One process (the launcher) starts every rank, each in its own process group
with a socketpair as ``PMI_FD``, then runs one event loop (``poll``) that

- serves PMI on every ``PMI_FD`` (:mod:`postbox.pmi_server`),
- forwards each rank's stdout and stderr line by line (``--tag-output``
  prefixes ``[rank] ``) and the launcher's stdin to rank 0,
- reaps the ranks, forwards SIGINT/SIGTERM/SIGHUP to them, and
- ends the whole job (SIGTERM, then SIGKILL one second later) when a rank
  dies abnormally, calls ``abort``, or ``--timeout`` expires.

Whatever happens, the ``finally`` of :meth:`Launcher.run` kills every rank's
process group with SIGKILL and reaps the ranks; ranks also get
``PR_SET_PDEATHSIG`` so that a launcher killed with SIGKILL takes them along.

``--netns`` runs each virtual node in a network namespace of its own
(:mod:`postbox.netns`, which also removes them, even after a crash).
``--hosts`` starts each rank as ``<rsh> <host> env VAR=... sh -c WRAPPER PROGRAM
ARGS`` and writes one line on the rsh process's stdin, the rank's one-time
PMI token and the job secret, which the wrapper reads and hands to the
program; those ranks reach the PMI server over TCP (``PMI_PORT`` + ``PMI_ID``),
accepted only from the hosts' addresses and only once they prove the token.

The hostfiles, the ranks' placement on the hosts and the remote shell's
command are :mod:`postbox.hosts`; inside a Slurm allocation the job runs as a
step through srun (:mod:`postbox.slurm`); the command line and its help are
:mod:`postbox.launchargs`; the options and exit statuses all share are
:mod:`postbox.launchopts`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import secrets
import select
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from postbox import hosts, netns, pmi_server, slurm, stacks
from postbox.launchargs import HELP, parse_args
from postbox.launchopts import (EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_TIMEOUT, EXIT_USAGE,
                                FORWARDED_SIGNALS, RESERVED, SCRUBBED, Options, UsageError,
                                node_cpus, rank_cpu)

TERM_GRACE = 1.0          # SIGTERM -> SIGKILL when the job is ended
USER_SIGNAL_GRACE = 2.0   # a forwarded SIGINT/SIGHUP -> SIGTERM
DRAIN_TIME = 1.0          # output still read after the last rank was reaped
# PMI_PORT connections that have not proven their rank yet: each must do so
# within the handshake time, and one peer address holds at most so many (a new
# one closes that peer's oldest); both may be changed in the environment
HANDSHAKE_TIME = 5.0
PENDING_PER_PEER = 16
PENDING_MAX = 1024        # all peers together (the oldest is closed)
REFUSAL_LOG_INTERVAL = 10.0   # one message per kind of refusal per this many seconds
MAX_PARTIAL_LINE = 65536  # an unterminated line longer than this is written as is
# A rank's PMI answers not yet written: at this much the launcher stops reading
# the rank's requests until it has read its answers (back-pressure).  One read
# (64 KiB of requests) may still add its answers past the limit.
PMI_OUT_MAX = 1 << 20

PR_SET_PDEATHSIG = 1
def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return "signal %d" % signum


# ---- output -----------------------------------------------------------------

class Output:
    """A file descriptor of the launcher (1 or 2) written with whole lines."""

    def __init__(self, fd: int):
        self.fd = fd
        self.dead = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.dead:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                select.select([], [self.fd], [], 1.0)
                continue
            except InterruptedError:
                continue
            except OSError:
                # stdout closed (`postbox run ... | head`): drop the rest
                self.dead = True
                return
            view = view[written:]


class Stream:
    """One rank's stdout or stderr: cut into lines, tagged, written out."""

    def __init__(self, fd: int, out: Output, prefix: bytes,
                 on_marker: Optional[Callable[[], None]] = None):
        self.fd = fd
        self.out = out
        self.prefix = prefix
        self.buffer = b""
        self.midline = False   # part of the current line is already written
        self.open = True
        # a remote rank's stderr: its first line, when STARTED_MARKER, is
        # taken out and reported to on_marker
        self.on_marker = on_marker

    def feed(self, data: bytes) -> None:
        self.buffer += data
        if self.on_marker is not None:
            if len(self.buffer) < len(hosts.STARTED_MARKER) and \
                    hosts.STARTED_MARKER.startswith(self.buffer):
                return
            if self.buffer.startswith(hosts.STARTED_MARKER):
                self.buffer = self.buffer[len(hosts.STARTED_MARKER):]
                self.on_marker()
            self.on_marker = None
        end = self.buffer.rfind(b"\n")
        if end >= 0:
            lines, self.buffer = self.buffer[:end + 1], self.buffer[end + 1:]
            if self.prefix:
                lines = b"".join(self.prefix + line for line in lines.splitlines(keepends=True))
                if self.midline:
                    lines = lines[len(self.prefix):]
            self.midline = False
            self.out.write(lines)
        if len(self.buffer) > MAX_PARTIAL_LINE:
            # a very long line: out in pieces, tagged once
            self.out.write((b"" if self.midline else self.prefix) + self.buffer)
            self.midline = True
            self.buffer = b""

    def finish(self) -> None:
        if self.buffer or self.midline:
            self.out.write((b"" if self.midline else self.prefix) + self.buffer
                           + (b"\n" if self.prefix else b""))
            self.buffer = b""
            self.midline = False


# ---- the launcher ------------------------------------------------------------

class Rank:
    """One slot of the universe: rank @rank of the job until a spawn puts a
    process of another world in it (world, world_rank, world_size)."""

    def __init__(self, rank: int, vnode: int, host: Optional[str] = None):
        self.rank = rank
        self.vnode = vnode
        self.world = 0
        self.world_rank = rank
        self.world_size = 0
        self.host = host          # --hosts: started over rsh on this host
        self.claimed = False      # --hosts: a connection proved its token
        self.token = b""          # --hosts: its one-time PMI token
        self.started = False      # --hosts: the remote wrapper ran (STARTED_MARKER)
        self.retry_at: Optional[float] = None   # --hosts: when to start the rsh again
        self.backoff: Optional[hosts.Backoff] = None   # --hosts: of the rsh retries
        self.proc: Optional[subprocess.Popen] = None
        self.pgid: Optional[int] = None
        self.sock: Optional[socket.socket] = None
        self.pmi_out = bytearray()   # PMI answers not yet written (see PMI_OUT_MAX)
        self.returncode: Optional[int] = None
        self.streams: List[Stream] = []

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.returncode is None


class Pending:
    """A PMI_PORT connection that has not yet said which rank it is."""

    def __init__(self, sock: socket.socket, peer: str, handshake: pmi_server.PortHandshake,
                 deadline: float):
        self.sock = sock
        self.peer = peer
        self.handshake = handshake
        self.deadline = deadline


def _env_number(name: str, default: float, integer: bool, zero: bool = False) -> float:
    """The launcher tunable @name from the environment (> 0, or >= 0 when
    @zero), else @default."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        value = -1
    if not (0 <= value if zero else 0 < value) or not value < float("inf"):
        raise UsageError("%s wants a number %s 0, not %r" % (name, ">=" if zero else ">", text))
    return value


def _plain_address(address: str) -> str:
    """@address without an IPv6 scope, and an IPv4-mapped IPv6 address as IPv4."""
    address = address.split("%", 1)[0]
    if address.lower().startswith("::ffff:") and "." in address:
        return address[7:]
    return address


class RefusalLog:
    """Messages about refused PMI_PORT connections: one per kind per interval,
    with the number of refusals of that kind left unsaid since."""

    def __init__(self, log, interval: float = REFUSAL_LOG_INTERVAL):
        self.log = log
        self.interval = interval
        self.last: Dict[str, float] = {}
        self.unsaid: Dict[str, int] = {}

    def refused(self, kind: str, message: str, now: Optional[float] = None) -> None:
        now = time.monotonic() if now is None else now
        last = self.last.get(kind)
        if last is not None and now - last < self.interval:
            self.unsaid[kind] = self.unsaid.get(kind, 0) + 1
            return
        more = self.unsaid.pop(kind, 0)
        self.last[kind] = now
        self.log(message + (" (and %d more like it in the last %g s)" % (more, self.interval)
                            if more else ""))

    def flush(self) -> None:
        """Say how many refusals went without a message (at the end of the job)."""
        for kind, count in sorted(self.unsaid.items()):
            self.log("refused %d more PMI connection%s (%s) without a message"
                     % (count, "" if count == 1 else "s", kind))
        self.unsaid.clear()


class Launcher:
    def __init__(self, opts: Options, prog: str = "postbox run"):
        self.opts = opts
        self.prog = prog
        self.host = socket.gethostname() or "localhost"
        self.job_id = "job-%d-%s" % (os.getpid(), secrets.token_hex(4))
        self.secret = secrets.token_hex(16)
        self.stdout = Output(1)
        self.stderr = Output(2)
        self.universe = opts.universe or opts.size
        if opts.host_ranks:
            vnodes = [host for host, count in enumerate(opts.host_ranks) for _ in range(count)]
        else:
            vnodes = pmi_server.universe_vnodes(opts.size, self.universe, opts.nodes)
        self.universe_nodes = ",".join(str(v) for v in vnodes)
        self.ranks = [Rank(rank, vnodes[rank],
                           opts.hosts[vnodes[rank]] if opts.hosts else None)
                      for rank in range(self.universe)]
        for rank in self.ranks[:opts.size]:
            rank.world_size = opts.size
        self.server = pmi_server.PmiServer(self.job_id, opts.size, opts.nodes,
                                           send=self._pmi_send, abort=self._pmi_abort,
                                           close=self._pmi_close, universe=self.universe,
                                           spawn=self._spawn, vnodes=vnodes)
        # --netns
        self.network: Optional[netns.JobNetwork] = None
        self.guardian: Optional[Tuple[int, int]] = None
        # --hosts
        self.listener: Optional[socket.socket] = None
        self.pmi_port = ""
        self.pending: List[Pending] = []
        self.allowed_peers: set = set()
        self.refusals = RefusalLog(self.log)
        self.handshake_time = HANDSHAKE_TIME
        self.pending_per_peer = PENDING_PER_PEER
        self.host_wait = hosts.HOST_WAIT
        self.sel: Optional[selectors.BaseSelector] = None
        self.code: Optional[int] = None
        self.ending = False
        self.kill_schedule: List[Tuple[float, int]] = []
        self.pending_signals: List[int] = []
        self.deadline: Optional[float] = None
        self.drain_deadline: Optional[float] = None
        # stdin -> rank 0
        self.stdin_pipe: Optional[int] = None
        self.stdin_buffer = b""
        self.stdin_eof = False
        self.stdin_reading = False
        self._libc = None
        try:
            self._libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            pass
        self._launcher_pid = os.getpid()
        # the CPUs the ranks may share (--bind-nodes cuts them among the
        # nodes, --bind-to core deals them out one a rank)
        self._cpus = sorted(os.sched_getaffinity(0))

    # -- messages

    def log(self, message: str) -> None:
        self.stderr.write(("%s: %s\n" % (self.prog, message)).encode("utf-8", "replace"))

    def who(self, slot: int) -> str:
        """"rank R" for a rank started first, "rank R of spawn W (slot S)" for
        a spawned process."""
        rank = self.ranks[slot]
        if rank.world == 0:
            return "rank %d" % slot
        return "rank %d of spawn %d (slot %d)" % (rank.world_rank, rank.world, slot)

    def node(self, rank: int) -> str:
        if self.ranks[rank].host is not None:
            return self.ranks[rank].host  # type: ignore[return-value]
        return "%s/%d" % (self.host, self.ranks[rank].vnode)

    # -- the whole run

    def run(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        old_wakeup = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        old_handlers = {}
        try:
            for signum in FORWARDED_SIGNALS:
                old_handlers[signum] = signal.signal(signum, self._on_signal)
            old_handlers[signal.SIGCHLD] = signal.signal(signal.SIGCHLD, lambda s, f: None)
            self.sel = selectors.PollSelector()
            self.sel.register(wake_r, selectors.EVENT_READ, ("wake", None))
            code = self._start()
            if code is not None:
                return code
            return self._loop(wake_r)
        finally:
            self._cleanup()
            if self.sel is not None:
                self.sel.close()
                self.sel = None
            for signum, handler in old_handlers.items():
                signal.signal(signum, handler)
            signal.set_wakeup_fd(old_wakeup)
            os.close(wake_r)
            os.close(wake_w)

    def _on_signal(self, signum: int, frame) -> None:
        self.pending_signals.append(signum)

    def _child_setup(self, netns_fd: Optional[int] = None,
                     cpus: Optional[List[int]] = None) -> None:
        """Runs in each rank between fork and exec: its own process group,
        death with the launcher, its node's network namespace (@netns_fd)
        and CPUs (@cpus; None: the launcher's)."""
        os.setpgid(0, 0)
        if self._libc is not None:
            self._libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != self._launcher_pid:
            os._exit(EXIT_CANNOT_EXECUTE)
        if netns_fd is not None:
            error = netns.enter(netns_fd)
            if error is not None:
                os.write(2, ("%s: cannot enter the network namespace of the rank's node: "
                             "%s\n" % (self.prog, error)).encode())
                os._exit(EXIT_CANNOT_EXECUTE)
        if cpus is not None:
            try:
                os.sched_setaffinity(0, cpus)
            except OSError as exc:
                os.write(2, ("%s: cannot bind the rank to its CPUs %s: %s\n"
                             % (self.prog, ",".join(map(str, cpus)),
                                exc.strerror or exc)).encode())
                os._exit(EXIT_CANNOT_EXECUTE)

    def _rank_cpus(self, rank: Rank) -> Optional[List[int]]:
        """The CPUs --bind-nodes or --bind-to core give the process in
        @rank's slot; None when it is not bound (the launcher's)."""
        if self.opts.bind_nodes:
            return node_cpus(self._cpus, self.opts.nodes, rank.vnode)
        if self.opts.bind_to == "core":
            return [rank_cpu(self._cpus, rank.rank)]
        return None

    def _cpu_sharers(self, rank: Rank) -> Optional[int]:
        """With a binding: how many of the job's N ranks, and the process
        in @rank's slot, are bound to the same CPUs as that process (the
        library weighs them against its CPUs to know whether it shares a
        core, which its own affinity alone cannot tell); None when
        unbound."""
        mine = self._rank_cpus(rank)
        if mine is None:
            return None
        started = self.ranks[:self.opts.size]
        if rank not in started:  # a process spawned into a slot of the universe
            started = started + [rank]
        return sum(1 for other in started if self._rank_cpus(other) == mine)

    def _rank_env(self, rank: Rank, fd: int) -> Dict[str, str]:
        env = dict(os.environ)
        for name in SCRUBBED:
            env.pop(name, None)
        env.update(self.opts.env)
        env.update({
            "PMI_FD": str(fd),
            "PMI_RANK": str(rank.world_rank),
            "PMI_SIZE": str(rank.world_size),
            "POSTBOX_JOB_ID": self.job_id,
            "POSTBOX_JOB_SECRET": self.secret,
            "POSTBOX_VNODE": str(rank.vnode),
            "POSTBOX_NODE_ID": str(rank.vnode),
        })
        if rank.world != 0:
            env["PMI_SPAWNED"] = "1"
        if self.universe > self.opts.size:
            # the universe of slots, for the library to join spawned
            # processes to their parents (docs/launch.md, Spawning)
            env["POSTBOX_SLOT"] = str(rank.rank)
            env["POSTBOX_UNIVERSE_NODES"] = self.universe_nodes
        sharers = self._cpu_sharers(rank)
        if sharers is not None:
            env["POSTBOX_CPU_SHARERS"] = str(sharers)
        if self.network is not None:
            env["POSTBOX_NETNS_ADDR"] = self.network.address(rank.vnode)
            env["POSTBOX_NETNS_RAILS"] = ",".join(self.network.addresses(rank.vnode))
        return env

    def _rsh_env(self) -> Dict[str, str]:
        """The environment of the rsh processes: no PMI, no job, no secret."""
        env = dict(os.environ)
        for name in SCRUBBED + RESERVED:
            env.pop(name, None)
        return env

    def _rsh_argv(self, rank: Rank) -> List[str]:
        """The remote shell's command that starts @rank on its host (hosts.rsh_argv)."""
        assert self.opts.rsh is not None and rank.host is not None
        variables = list(self.opts.env) + [
            ("PMI_PORT", self.pmi_port),
            ("PMI_ID", str(rank.rank)),
            ("POSTBOX_JOB_ID", self.job_id),
        ]
        return hosts.rsh_argv(self.opts.rsh, rank.host, variables, self.opts.program,
                              self.opts.args)

    def _can_forward_stdin(self) -> bool:
        try:
            os.fstat(0)
        except OSError:
            return False
        try:
            # a background job reading its terminal would be stopped (SIGTTIN)
            if os.isatty(0) and os.tcgetpgrp(0) != os.getpgrp():
                return False
        except OSError:
            return False
        return True

    def _raise_fd_limit(self) -> bool:
        need = 8 * self.universe + 64
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < need:
            target = need if hard == resource.RLIM_INFINITY else min(need, hard)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            except (ValueError, OSError):
                target = soft
            return target >= need
        return True

    def _start(self) -> Optional[int]:
        """Start every rank; an exit status when that failed, else None."""
        opts = self.opts
        program = opts.rsh_argv0() if opts.hosts else opts.program
        if "/" not in program:
            found = shutil.which(program)
            if found is None:
                self.log("%s: command not found" % program)
                return EXIT_NOT_FOUND
        elif not os.path.exists(program):
            self.log("%s: no such file" % program)
            return EXIT_NOT_FOUND
        if not self._raise_fd_limit():
            self.log("-n %d%s needs more open files than the limit allows (ulimit -n)"
                     % (opts.size, " --universe %d" % self.universe
                        if self.universe > opts.size else ""))
            return EXIT_USAGE
        if opts.netns:
            code = self._start_netns()
            if code is not None:
                return code
        if opts.hosts:
            code = self._start_pmi_port()
            if code is not None:
                return code
        forward_stdin = self._can_forward_stdin()
        assert self.sel is not None
        for rank in self.ranks[:opts.size]:
            stdin = subprocess.PIPE if rank.rank == 0 and forward_stdin else subprocess.DEVNULL
            if rank.host is not None:
                rank.token = secrets.token_bytes(pmi_server.TOKEN_LEN)
                rank.backoff = hosts.Backoff(self.host_wait)
                code = self._start_remote(rank, stdin is subprocess.PIPE)
                if code is not None:
                    return code
                continue
            code = self._start_local(rank, [program] + opts.args, stdin, None)
            if code is not None:
                return code
        if opts.timeout is not None:
            self.deadline = time.monotonic() + opts.timeout
        return None

    def _start_remote(self, rank: Rank, forward_stdin: bool) -> Optional[int]:
        """Start @rank over the remote shell (again, after a retry), its job
        line on the shell's stdin; an exit status when that failed (said)."""
        try:
            rank.proc = subprocess.Popen(
                self._rsh_argv(rank), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self._rsh_env(), preexec_fn=self._child_setup)
        except OSError as exc:
            self.log("cannot start %s: %s" % (self.opts.rsh_argv0(), exc.strerror or exc))
            return EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_CANNOT_EXECUTE
        rank.returncode = None
        rank.pgid = rank.proc.pid
        assert rank.proc.stdin is not None
        try:
            # a new pipe takes the ~70 bytes at once
            os.write(rank.proc.stdin.fileno(), hosts.job_line(rank.token, self.secret))
        except OSError:
            pass   # the rsh process is gone already: reaped as usual
        if not forward_stdin:
            rank.proc.stdin.close()
            rank.proc.stdin = None
        self._watch_output(rank)
        return None

    def _retry_remote(self, rank: Rank, returncode: int) -> bool:
        """Whether @rank's remote shell, ended with @returncode, is to be
        started again: it did not reach the host (RSH_UNREACHED before the
        wrapper ran) and the host wait is not over; if so it is scheduled."""
        if rank.host is None or rank.started or returncode != hosts.RSH_UNREACHED or \
                rank.world != 0 or rank.backoff is None:
            return False
        now = time.monotonic()
        delay = rank.backoff.next(now)
        if delay is None:
            self.log("%s could not reach host %s for %g s (POSTBOX_HOST_WAIT); giving up"
                     % (self.opts.rsh_argv0(), rank.host, self.host_wait))
            return False
        if rank.backoff.tries == 1:
            self.log("%s could not reach host %s (status %d) for rank %d; trying again for up "
                     "to %g s" % (self.opts.rsh_argv0(), rank.host, returncode, rank.rank,
                                  self.host_wait))
        rank.retry_at = now + delay
        return True

    def _start_retries(self, now: float) -> None:
        for rank in self.ranks:
            if rank.retry_at is None or rank.retry_at > now:
                continue
            rank.retry_at = None
            if self.ending:
                continue
            # rank 0's stdin goes to the new shell (what the failed one was
            # handed is lost: it never reached the host)
            forward_stdin = rank.rank == 0 and self.stdin_pipe is not None
            if forward_stdin:
                self._close_stdin_pipe()
                self.stdin_buffer = b""
            code = self._start_remote(rank, forward_stdin)
            if code is not None:
                self._end("%s (node %s) cannot be started again; ending the job"
                          % (self.who(rank.rank), self.node(rank.rank)), code)

    def _start_local(self, rank: Rank, argv: List[str], stdin,
                     cwd: Optional[str]) -> Optional[int]:
        """Start @rank's process on this host with PMI on a socket pair; an
        exit status when that failed (said), else None."""
        assert self.sel is not None
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        netns_fd = self.network.fds[rank.vnode] if self.network is not None else None
        cpus = self._rank_cpus(rank)
        try:
            rank.proc = subprocess.Popen(
                argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=self._rank_env(rank, child.fileno()), pass_fds=(child.fileno(),), cwd=cwd,
                preexec_fn=lambda: self._child_setup(netns_fd, cpus))
        except OSError as exc:
            parent.close()
            self.log("cannot start %s: %s" % (argv[0], exc.strerror or exc))
            return EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_CANNOT_EXECUTE
        finally:
            child.close()
        rank.pgid = rank.proc.pid
        parent.setblocking(False)
        rank.sock = parent
        self.sel.register(parent, selectors.EVENT_READ, ("pmi", rank))
        self._watch_output(rank)
        return None

    def _spawn(self, world: pmi_server.World, apps: List[pmi_server.SpawnApp]) -> Optional[str]:
        """Serve a PMI spawn: start @apps in @world's slots (their own ranks,
        PMI_SPAWNED=1); None, or why not.  Of the info keys, wdir (the working
        directory) is honoured, the others are ignored.  A process that cannot
        be started ends the job, as at the start.

        Every world has the job's POSTBOX_JOB_ID and secret (the RSM layer lets
        processes of one job only reach each other's memory), and with the
        ranks POSTBOX_SLOT and POSTBOX_UNIVERSE_NODES, from which the library
        joins the spawned processes to their parents."""
        if self.ending:
            return "the job is ending"
        programs = []
        for app in apps:
            wdir = app.info.get("wdir") or None
            if wdir is not None and not os.path.isdir(wdir):
                return "wdir %s is not a directory" % wdir
            program = app.command
            if "/" not in program:
                found = shutil.which(program)
                if found is None:
                    return "%s: command not found" % program
                program = found
            elif not os.path.exists(os.path.join(wdir or "", program)):
                return "%s: no such file" % program
            programs.append((program, wdir))
        slots = iter(world.slots)
        for app, (program, wdir) in zip(apps, programs):
            for _ in range(app.nprocs):
                rank = self.ranks[next(slots)]
                rank.world = world.number
                rank.world_rank = rank.rank - world.slots[0]
                rank.world_size = world.size
                code = self._start_local(rank, [program] + app.args, subprocess.DEVNULL, wdir)
                if code is not None:
                    self._end("cannot start %s; ending the job" % self.who(rank.rank), code)
                    return "cannot start %s" % program
        return None

    def _watch_output(self, rank: Rank) -> None:
        assert self.sel is not None and rank.proc is not None
        tag = "%d" % rank.rank if rank.world == 0 else "%d:%d" % (rank.world, rank.world_rank)
        prefix = ("[%s] " % tag).encode() if self.opts.tag_output else b""
        for pipe, out in ((rank.proc.stdout, self.stdout), (rank.proc.stderr, self.stderr)):
            assert pipe is not None
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            marker = None
            if rank.host is not None and pipe is rank.proc.stderr:
                marker = lambda rank=rank: setattr(rank, "started", True)  # noqa: E731
            stream = Stream(fd, out, prefix, marker)
            rank.streams.append(stream)
            self.sel.register(fd, selectors.EVENT_READ, ("out", stream))
        if rank.rank == 0 and rank.proc.stdin is not None:
            self.stdin_pipe = rank.proc.stdin.fileno()
            os.set_blocking(self.stdin_pipe, False)
            if not self.stdin_eof:
                self.sel.register(0, selectors.EVENT_READ, ("stdin", None))
                self.stdin_reading = True

    # -- --netns

    def _start_netns(self) -> Optional[int]:
        """The namespaces of the virtual nodes, and their guardian."""
        pid = self._launcher_pid
        try:
            swept = netns.sweep_stale(pid)
        except netns.NetnsError as exc:
            self.log("--netns: %s" % exc)
            return 1
        if swept:
            self.log("--netns: removed %d network namespace%s left by launchers that are "
                     "gone (%s)" % (len(swept), "" if len(swept) == 1 else "s",
                                   " ".join(swept)))
        netns.prepare_libc()
        self.guardian = netns.start_guardian(pid)
        self.network = netns.JobNetwork(pid, self.opts.nodes, rails=self.opts.rails,
                                        link=self.opts.link)
        try:
            self.network.setup()
        except netns.LinkUnsupported as exc:
            self.log(str(exc))
            return EXIT_USAGE
        except netns.NetnsError as exc:
            self.log("--netns: cannot set up the network namespaces: %s" % exc)
            return 1
        return None

    # -- --hosts: PMI over TCP

    def _resolve(self, name: str, port: Optional[int], kind: int) -> list:
        """hosts.resolve of host @name for up to POSTBOX_HOST_WAIT s, given up
        when the launcher got a signal."""
        return hosts.resolve(name, port, kind, self.host_wait, self.log,
                             lambda: bool(self.pending_signals))

    def _host_addresses(self) -> set:
        """Every address the --hosts resolve to (UsageError when one does not)."""
        found = set()
        for host in self.opts.hosts:
            name = hosts.host_name(host)
            try:
                infos = self._resolve(name, None, socket.SOCK_STREAM)
            except socket.gaierror as exc:
                raise UsageError("cannot resolve host %s (%s): the PMI port accepts only the "
                                 "hosts' addresses" % (name, exc.strerror)) from None
            found.update(_plain_address(str(info[4][0])) for info in infos)
        return found

    def _find_pmi_address(self) -> str:
        """This machine's address towards the hosts (UsageError when unclear)."""
        found: Dict[str, str] = {}
        for host in self.opts.hosts:
            name = hosts.host_name(host)
            try:
                infos = self._resolve(name, 9, socket.SOCK_DGRAM)
            except socket.gaierror as exc:
                raise UsageError("cannot resolve host %s (%s): give --pmi-address, the "
                                 "address of this machine that the hosts reach"
                                 % (name, exc.strerror)) from None
            family, kind, proto, _, sockaddr = infos[0]
            with socket.socket(family, kind, proto) as probe:
                try:
                    probe.connect(sockaddr)
                except OSError as exc:
                    raise UsageError("no route to host %s (%s): give --pmi-address"
                                     % (name, exc.strerror)) from None
                found[host] = probe.getsockname()[0]
        addresses = sorted(set(found.values()))
        if len(addresses) > 1:
            raise UsageError("the hosts are reached from different addresses of this machine "
                             "(%s): give --pmi-address" % ", ".join(
                                 "%s from %s" % item for item in sorted(found.items())))
        return addresses[0]

    def _start_pmi_port(self) -> Optional[int]:
        try:
            self.host_wait = _env_number("POSTBOX_HOST_WAIT", hosts.HOST_WAIT, False, zero=True)
            address = self.opts.pmi_address or self._find_pmi_address()
            self.allowed_peers = self._host_addresses()
            self.handshake_time = _env_number("POSTBOX_PMI_HANDSHAKE_TIME", HANDSHAKE_TIME,
                                              False)
            self.pending_per_peer = int(_env_number("POSTBOX_PMI_PENDING_PER_PEER",
                                                    PENDING_PER_PEER, True))
        except UsageError as exc:
            self.log(str(exc))
            return EXIT_USAGE
        try:
            infos = socket.getaddrinfo(address, 0, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
            family, kind, proto, _, sockaddr = infos[0]
            listener = socket.socket(family, kind, proto)
        except (socket.gaierror, OSError) as exc:
            self.log("--pmi-address %s: %s" % (address, exc.strerror or exc))
            return EXIT_USAGE
        try:
            listener.bind(sockaddr)
            listener.listen(min(4096, 2 * self.opts.size + 16))
        except OSError as exc:
            listener.close()
            self.log("cannot listen for PMI on %s: %s" % (address, exc.strerror or exc))
            return EXIT_USAGE
        listener.setblocking(False)
        self.listener = listener
        self.pmi_port = "%s:%d" % listener.getsockname()[:2]
        # a host that is this machine connects from the listening address
        self.allowed_peers.add(_plain_address(str(listener.getsockname()[0])))
        assert self.sel is not None
        self.sel.register(listener, selectors.EVENT_READ, ("listen", None))
        return None

    def _unclaimable(self, rank: Rank) -> Optional[str]:
        if rank.host is None:
            return "rank %d was not started over rsh" % rank.rank
        if rank.claimed:
            return "the token of rank %d was used already" % rank.rank
        if rank.proc is None or rank.returncode is not None or self.ending:
            return "rank %d is not running" % rank.rank
        return None

    def _lookup(self, pmiid: str) -> object:
        """(rank, token) of the rank a PMI_PORT connection names with @pmiid, or why not."""
        if not (pmiid.isascii() and pmiid.isdigit()) or int(pmiid) >= self.opts.size:
            return "unknown pmiid %s" % pmiid[:20]
        rank = self.ranks[int(pmiid)]
        return self._unclaimable(rank) or (rank.rank, rank.token)

    def _claim(self, rank_no: int) -> Optional[str]:
        """Mark the token of @rank_no used (its connection proved it), or why not."""
        rank = self.ranks[rank_no]
        why = self._unclaimable(rank)
        if why is None:
            rank.claimed = True
        return why

    def _accept(self) -> None:
        assert self.listener is not None and self.sel is not None
        while True:
            try:
                sock, peer = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    return
                continue
            address = _plain_address(str(peer[0]))
            if address not in self.allowed_peers or self.ending:
                sock.close()
                if not self.ending:
                    self.refusals.refused("stranger", "refused a PMI connection from %s: not "
                                          "an address of the job's hosts" % address)
                continue
            sock.setblocking(False)
            # an unproven connection must not keep a rank out: the peer's (or
            # everyone's) oldest makes room, and each lives HANDSHAKE_TIME at most
            mine = [p for p in self.pending if p.peer == address]
            if len(mine) >= self.pending_per_peer or len(self.pending) >= PENDING_MAX:
                crowd = mine if len(mine) >= self.pending_per_peer else self.pending
                # a connection that named a rank and was challenged is nearer to
                # being a rank than one that said nothing yet: it goes last
                oldest = next((p for p in crowd if p.handshake.named is None), crowd[0])
                self._drop_pending(oldest, None)
                self.refusals.refused("crowded", "closed an unproven PMI connection from %s "
                                      "to make room (%d from that address at most, %d in all)"
                                      % (oldest.peer, self.pending_per_peer, PENDING_MAX))
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            handshake = pmi_server.PortHandshake(self.opts.size, self.job_id, self._lookup,
                                                 self._claim,
                                                 lambda: secrets.token_hex(pmi_server.NONCE_LEN))
            pending = Pending(sock, address, handshake, time.monotonic() + self.handshake_time)
            self.pending.append(pending)
            self.sel.register(sock, selectors.EVENT_READ, ("pending", pending))

    def _drop_pending(self, pending: Pending, reason: Optional[str], kind: str = "") -> None:
        assert self.sel is not None
        if reason is not None and not self.ending:
            self.refusals.refused(kind or reason, "refused a PMI connection from %s: %s"
                                  % (pending.peer, reason))
        try:
            self.sel.unregister(pending.sock)
        except KeyError:
            pass
        pending.sock.close()
        if pending in self.pending:
            self.pending.remove(pending)

    def _pending_event(self, pending: Pending) -> None:
        try:
            data = pending.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop_pending(pending, None)
            return
        result = pending.handshake.feed(data)
        if result.error is not None:
            try:
                pending.sock.send(result.reply)
            except OSError:
                pass
            self._drop_pending(pending, result.error, result.kind)
            return
        if result.rank is None:
            if result.reply:
                try:
                    pending.sock.send(result.reply)
                except OSError:
                    self._drop_pending(pending, None)
            return
        # the connection is rank result.rank from now on
        assert self.sel is not None
        self.sel.unregister(pending.sock)
        self.pending.remove(pending)
        rank = self.ranks[result.rank]
        rank.sock = pending.sock
        self.sel.register(rank.sock, selectors.EVENT_READ, ("pmi", rank))
        self.server.attach(rank.rank, result.v2)
        if result.reply:
            self._pmi_send(rank.rank, result.reply)
        if result.rest and rank.sock is not None:
            self.server.feed(rank.rank, result.rest)

    def _expire_pending(self, now: float) -> None:
        for pending in list(self.pending):
            if now >= pending.deadline:
                self._drop_pending(pending, "it did not prove a rank within %g s"
                                   % self.handshake_time, "slow")

    def _loop(self, wake_r: int) -> int:
        assert self.sel is not None
        while True:
            now = time.monotonic()
            wake_at = [now + 1.0]
            if self.kill_schedule:
                wake_at.append(self.kill_schedule[0][0])
            if self.deadline is not None and not self.ending:
                wake_at.append(self.deadline)
            if self.drain_deadline is not None:
                wake_at.append(self.drain_deadline)
            wake_at += [rank.retry_at for rank in self.ranks if rank.retry_at is not None]
            for key, mask in self.sel.select(max(0.0, min(wake_at) - now)):
                kind, obj = key.data
                if kind == "wake":
                    try:
                        while os.read(wake_r, 4096):
                            pass
                    except BlockingIOError:
                        pass
                elif kind == "out":
                    self._read_stream(obj)
                elif kind == "pmi":
                    self._pmi_event(obj, mask)
                elif kind == "listen":
                    self._accept()
                elif kind == "pending":
                    self._pending_event(obj)
                elif kind == "stdin":
                    self._read_stdin()
                elif kind == "stdin-pipe":
                    self._write_stdin()
            self._handle_signals()
            self._reap()
            self._check_barrier_deadlock()
            now = time.monotonic()
            self._start_retries(now)
            if self.pending:
                self._expire_pending(now)
            if self.deadline is not None and not self.ending and now >= self.deadline:
                self._report_timeout()
                self._end("the job did not finish within %g s (--timeout); ending the job"
                          % self.opts.timeout, EXIT_TIMEOUT)
            while self.kill_schedule and self.kill_schedule[0][0] <= now:
                self._signal_all(self.kill_schedule.pop(0)[1])
            if not any(rank.alive or rank.retry_at is not None for rank in self.ranks):
                if self.drain_deadline is None:
                    self.drain_deadline = now + DRAIN_TIME
                open_streams = any(s.open for rank in self.ranks for s in rank.streams)
                if not open_streams or now >= self.drain_deadline:
                    break
        return self.code if self.code is not None else 0

    # -- events

    def _read_stream(self, stream: Stream) -> None:
        if not stream.open:
            return
        try:
            data = os.read(stream.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            stream.feed(data)
            return
        stream.finish()
        stream.open = False
        assert self.sel is not None
        self.sel.unregister(stream.fd)

    def _read_stdin(self) -> None:
        assert self.sel is not None
        try:
            data = os.read(0, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        self.sel.unregister(0)
        self.stdin_reading = False
        if not data:
            self.stdin_eof = True
            self._close_stdin_pipe()
            return
        self.stdin_buffer = data
        if self.stdin_pipe is not None:
            self.sel.register(self.stdin_pipe, selectors.EVENT_WRITE, ("stdin-pipe", None))

    def _write_stdin(self) -> None:
        assert self.sel is not None and self.stdin_pipe is not None
        try:
            written = os.write(self.stdin_pipe, self.stdin_buffer)
        except BlockingIOError:
            return
        except OSError:
            # rank 0 closed its stdin or exited: stop forwarding
            self.stdin_buffer = b""
            self._close_stdin_pipe()
            return
        self.stdin_buffer = self.stdin_buffer[written:]
        if not self.stdin_buffer:
            self.sel.unregister(self.stdin_pipe)
            self.sel.register(0, selectors.EVENT_READ, ("stdin", None))
            self.stdin_reading = True

    def _close_stdin_pipe(self) -> None:
        if self.stdin_pipe is None:
            return
        assert self.sel is not None
        try:
            self.sel.unregister(self.stdin_pipe)
        except KeyError:
            pass
        if self.stdin_reading:
            self.sel.unregister(0)
            self.stdin_reading = False
        proc = self.ranks[0].proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        self.stdin_pipe = None

    def _pmi_event(self, rank: Rank, mask: int) -> None:
        if rank.sock is None:
            return
        if mask & selectors.EVENT_WRITE:
            self._pmi_flush(rank)
        if rank.sock is None or not mask & selectors.EVENT_READ:
            return
        try:
            data = rank.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.server.feed(rank.rank, data)
        else:
            self.server.eof(rank.rank)

    def _pmi_send(self, rank_no: int, data: bytes) -> None:
        rank = self.ranks[rank_no]
        if rank.sock is None:
            return
        rank.pmi_out += data
        self._pmi_flush(rank)

    def _pmi_flush(self, rank: Rank) -> None:
        assert self.sel is not None and rank.sock is not None
        try:
            while rank.pmi_out:
                sent = rank.sock.send(rank.pmi_out)
                del rank.pmi_out[:sent]   # cheap at the front of a bytearray
        except BlockingIOError:
            pass
        except OSError:
            rank.pmi_out = bytearray()
            self.server.eof(rank.rank)
            return
        # back-pressure: a rank that does not read its answers is not read either
        events = ((selectors.EVENT_READ if len(rank.pmi_out) < PMI_OUT_MAX else 0)
                  | (selectors.EVENT_WRITE if rank.pmi_out else 0))
        if self.sel.get_key(rank.sock).events != events:
            self.sel.modify(rank.sock, events, ("pmi", rank))

    def _pmi_close(self, rank_no: int, reason: Optional[str]) -> None:
        rank = self.ranks[rank_no]
        if reason is not None and not self.ending:
            self.log("%s (node %s) sent %s; closing its PMI connection"
                     % (self.who(rank_no), self.node(rank_no), reason))
        if rank.sock is not None:
            assert self.sel is not None
            self.sel.unregister(rank.sock)
            rank.sock.close()
            rank.sock = None
            rank.pmi_out = bytearray()

    def _pmi_abort(self, rank_no: int, code: int, message: str) -> None:
        text = "%s (node %s) called PMI abort with exit code %d" % (
            self.who(rank_no), self.node(rank_no), code)
        if message:
            text += " (%s)" % message
        if not 0 < code < 256:
            # 0 would report success, the rest does not fit an exit status
            text += "; exit status 1"
            code = 1
        self._end(text + "; ending the job", code)

    def _handle_signals(self) -> None:
        while self.pending_signals:
            signum = self.pending_signals.pop(0)
            now = time.monotonic()
            if self.ending:
                # a second signal: no more patience
                self.kill_schedule = [(now, signal.SIGKILL)]
                continue
            if signum == signal.SIGTERM:
                schedule = [(now, signal.SIGTERM), (now + TERM_GRACE, signal.SIGKILL)]
            else:
                schedule = [(now, signum), (now + USER_SIGNAL_GRACE, signal.SIGTERM),
                            (now + USER_SIGNAL_GRACE + TERM_GRACE, signal.SIGKILL)]
            self._end("got %s; forwarding it to every rank and ending the job"
                      % signal_name(signum), 128 + signum, schedule)

    def _reap(self) -> None:
        for rank in self.ranks:
            if not rank.alive:
                continue
            assert rank.proc is not None
            returncode = rank.proc.poll()
            if returncode is None:
                continue
            rank.returncode = returncode
            if self.ending:
                continue
            if self._retry_remote(rank, returncode):
                continue
            if returncode < 0:
                status = 128 - returncode
                what = "was killed by signal %d (%s)" % (-returncode, signal_name(-returncode))
            else:
                status = returncode
                what = "exited with status %d" % returncode
            if status == 0:
                continue
            text = "%s (node %s) %s" % (self.who(rank.rank), self.node(rank.rank), what)
            if any(other.alive for other in self.ranks):
                self._end(text + "; ending the job", status)
            else:
                self.code = status
                self.log(text)
                self.ending = True

    def _check_barrier_deadlock(self) -> None:
        if self.ending:
            return
        waiting = self.server.waiting_in_barrier()
        if not waiting:
            return
        for rank in self.ranks:
            if rank.returncode is None or rank.rank in waiting:
                continue
            # a fence is over the processes of one world
            world = self.server.world_of(rank.rank)
            peers = [self.ranks[s].world_rank for s in waiting
                     if self.server.world_of(s) is world]
            if peers:
                shown = ",".join(str(r) for r in peers[:8]) + (",..." if len(peers) > 8
                                                                else "")
                self._end("%s (node %s) exited while rank%s %s%s wait%s in a PMI barrier; "
                          "ending the job" % (self.who(rank.rank), self.node(rank.rank),
                                              "s" if len(peers) > 1 else "", shown,
                                              "" if rank.world == 0 else
                                              " of spawn %d" % rank.world,
                                              "" if len(peers) > 1 else "s"), 1)
                return

    # -- ending the job

    def _end(self, message: str, code: int,
             schedule: Optional[List[Tuple[float, int]]] = None) -> None:
        if self.ending:
            return
        self.ending = True
        self.code = code
        self.log(message)
        now = time.monotonic()
        self.kill_schedule = schedule or [(now, signal.SIGTERM), (now + TERM_GRACE,
                                                                 signal.SIGKILL)]

    def _report_timeout(self) -> None:
        """At --timeout: name the ranks still running and, with
        --timeout-stacks, print their threads' stacks (gdb, local ranks)."""
        running = [rank for rank in self.ranks if rank.alive]
        self.log("--timeout: %d of %d ranks still running: %s"
                 % (len(running), len(self.ranks),
                    ", ".join("%s (node %d%s)" % (self.who(rank.rank), rank.vnode,
                                                  ", pid %d" % rank.proc.pid
                                                  if rank.host is None and rank.proc else "")
                              for rank in running) or "none"))
        if not self.opts.timeout_stacks:
            return
        gdb = shutil.which("gdb")
        if gdb is None:
            self.log("--timeout-stacks: gdb is not on PATH; no stacks")
            return
        for rank in running:
            if rank.host is not None or rank.pgid is None:
                continue
            for pid in stacks.group_pids(rank.pgid):
                self.log("--timeout-stacks: %s, pid %d:" % (self.who(rank.rank), pid))
                try:
                    lines = stacks.thread_stacks(gdb, pid)
                except subprocess.TimeoutExpired:
                    self.log("--timeout-stacks: gdb took more than %d s on pid %d"
                             % (stacks.GDB_SECONDS, pid))
                    continue
                self.stderr.write(("\n".join(lines) + "\n").encode("utf-8", "replace"))

    def _signal_all(self, signum: int) -> None:
        for rank in self.ranks:
            if rank.pgid is None:
                continue
            try:
                os.killpg(rank.pgid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def _cleanup(self) -> None:
        """Every exit path: no rank, no rank's child, no descriptor, no namespace left."""
        try:
            self._cleanup_ranks()
        finally:
            self._cleanup_network()

    def _cleanup_network(self) -> None:
        for pending in list(self.pending):
            self._drop_pending(pending, None)
        self.refusals.flush()
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        try:
            if self.network is not None:
                errors = self.network.remove()
                self.network = None
                for error in errors:
                    self.log("--netns: could not remove network namespace %s" % error)
        finally:
            if self.guardian is not None:
                netns.stop_guardian(*self.guardian)
                self.guardian = None

    def _cleanup_ranks(self) -> None:
        self._signal_all(signal.SIGKILL)
        for rank in self.ranks:
            if rank.proc is None:
                continue
            try:
                rank.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            for pipe in (rank.proc.stdin, rank.proc.stdout, rank.proc.stderr):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
            if rank.sock is not None:
                rank.sock.close()
                rank.sock = None


def main(argv: Sequence[str], prog: str = "postbox run") -> int:
    try:
        opts = parse_args(argv)
    except UsageError as exc:
        print("%s: %s (see %s --help)" % (prog, exc, prog), file=sys.stderr)
        return EXIT_USAGE
    if opts is None:
        sys.stdout.write(HELP.format(prog=prog, indent=" " * len(prog)))
        return 0
    if opts.netns:
        reason = netns.unavailable()
        if reason is not None:
            print("%s: --netns %s" % (prog, reason), file=sys.stderr)
            return EXIT_USAGE
    if opts.link is not None and netns.tc_command() is None:
        print("%s: --link needs the `tc` command of iproute2, which is not installed"
              % prog, file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.flush()
    sys.stderr.flush()
    job = slurm.slurm_allocation(opts)
    if job is not None:
        return slurm.run_under_srun(opts, job, prog)
    return Launcher(opts, prog).run()
