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
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
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
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from postbox import pmi_server

EXIT_USAGE = 2
EXIT_TIMEOUT = 124
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127

TERM_GRACE = 1.0          # SIGTERM -> SIGKILL when the job is ended
USER_SIGNAL_GRACE = 2.0   # a forwarded SIGINT/SIGHUP -> SIGTERM
DRAIN_TIME = 1.0          # output still read after the last rank was reaped
MAX_PARTIAL_LINE = 65536  # an unterminated line longer than this is written as is

PR_SET_PDEATHSIG = 1
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# variables the launcher sets itself; -x may not set them
RESERVED = ("PMI_FD", "PMI_RANK", "PMI_SIZE", "POSTBOX_JOB_ID", "POSTBOX_JOB_SECRET",
            "POSTBOX_VNODE", "POSTBOX_NODE_ID")
# inherited variables that would mislead a PMI client
SCRUBBED = ("PMI_PORT", "PMI_ID", "PMI_JOBID", "PMI_SPAWNED", "PMI_KVSNAME")
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

HELP = """\
usage: {prog} [-n N] [--nodes K] [--tag-output] [--timeout S] [-x VAR=value]...
       {indent} PROGRAM [ARGS...]

Start N ranks of PROGRAM on this host as one job and serve them PMI.

options:
  -n N, -np N       number of ranks (default 1); N may exceed the number of cores
  --nodes K         split the ranks into K virtual nodes, in blocks: ranks
                    0..N/K-1 on node 0, and so on (when K does not divide N the
                    first N%K nodes get one rank more); ranks on different
                    virtual nodes must talk as if over the network (default 1)
  --tag-output      prefix every line a rank prints with "[rank] "
  --timeout S       end the job after S seconds (exit status 124)
  -x VAR=value      set VAR in the environment of every rank (repeatable);
                    -x VAR passes the launcher's own value of VAR
  --netns           one network namespace per virtual node (not implemented yet)
  --hosts H1,H2     run across real hosts over ssh (not implemented yet)
  -h, --help        show this help and exit

Every rank gets PMI_FD, PMI_RANK, PMI_SIZE, POSTBOX_JOB_ID, POSTBOX_JOB_SECRET,
POSTBOX_VNODE and POSTBOX_NODE_ID (see docs/launch.md).  Each rank's stdout and
stderr are forwarded line by line; stdin goes to rank 0.  SIGINT, SIGTERM and
SIGHUP are forwarded to every rank.  When a rank is killed by a signal or exits
non-zero while others still run, or calls PMI abort, the whole job is ended
(SIGTERM, then SIGKILL after 1 s) with one message naming the rank and its node.

exit status: the first non-zero exit status of a rank (128+signal for a rank
killed by a signal), the code given to PMI abort, 124 after --timeout, 128+signal
when the launcher itself got SIGINT/SIGTERM/SIGHUP, 127 (126) when PROGRAM cannot
be found (executed), 2 for a usage error.

example:
  {prog} -n 4 --nodes 2 --tag-output build/bin/postbox-job-view
"""


class UsageError(Exception):
    """A bad command line; the message says what is wrong."""


@dataclass
class Options:
    size: int = 1
    nodes: int = 1
    tag_output: bool = False
    timeout: Optional[float] = None
    env: List[Tuple[str, str]] = field(default_factory=list)
    program: str = ""
    args: List[str] = field(default_factory=list)


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

        if name in ("-h", "--help"):
            return None
        elif name in ("-n", "-np", "--np", "--n"):
            opts.size = _positive_int(name, value())
        elif name == "--nodes":
            opts.nodes = _positive_int(name, value())
        elif name == "--tag-output":
            if has_inline:
                raise UsageError("--tag-output takes no value")
            opts.tag_output = True
        elif name == "--timeout":
            text = value()
            try:
                opts.timeout = float(text)
            except ValueError:
                opts.timeout = -1.0
            if not opts.timeout > 0 or opts.timeout != opts.timeout or opts.timeout == float("inf"):
                raise UsageError("--timeout wants a number of seconds > 0, not %r" % text)
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
            raise UsageError("--netns is not implemented yet (virtual nodes share the "
                             "host's network namespace)")
        elif name == "--hosts":
            value()
            raise UsageError("--hosts is not implemented yet (a job runs on this host only)")
        else:
            raise UsageError("unknown option %s" % arg)
        i += 1
    if i >= len(argv):
        raise UsageError("no program to run")
    opts.program = argv[i]
    opts.args = argv[i + 1:]
    if opts.nodes > opts.size:
        raise UsageError("--nodes %d is more than the %d rank%s (every virtual node needs "
                         "a rank)" % (opts.nodes, opts.size, "" if opts.size == 1 else "s"))
    return opts


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

    def __init__(self, fd: int, out: Output, prefix: bytes):
        self.fd = fd
        self.out = out
        self.prefix = prefix
        self.buffer = b""
        self.midline = False   # part of the current line is already written
        self.open = True

    def feed(self, data: bytes) -> None:
        self.buffer += data
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
    def __init__(self, rank: int, vnode: int):
        self.rank = rank
        self.vnode = vnode
        self.proc: Optional[subprocess.Popen] = None
        self.pgid: Optional[int] = None
        self.sock: Optional[socket.socket] = None
        self.pmi_out = b""
        self.returncode: Optional[int] = None
        self.streams: List[Stream] = []

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.returncode is None


class Launcher:
    def __init__(self, opts: Options, prog: str = "postbox run"):
        self.opts = opts
        self.prog = prog
        self.host = socket.gethostname() or "localhost"
        self.job_id = "job-%d-%s" % (os.getpid(), secrets.token_hex(4))
        self.secret = secrets.token_hex(16)
        self.stdout = Output(1)
        self.stderr = Output(2)
        vnodes = pmi_server.vnode_of_ranks(opts.size, opts.nodes)
        self.ranks = [Rank(rank, vnodes[rank]) for rank in range(opts.size)]
        self.server = pmi_server.PmiServer(self.job_id, opts.size, opts.nodes,
                                           send=self._pmi_send, abort=self._pmi_abort,
                                           close=self._pmi_close)
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

    # -- messages

    def log(self, message: str) -> None:
        self.stderr.write(("%s: %s\n" % (self.prog, message)).encode("utf-8", "replace"))

    def node(self, rank: int) -> str:
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
            for signum, handler in old_handlers.items():
                signal.signal(signum, handler)
            signal.set_wakeup_fd(old_wakeup)
            os.close(wake_r)
            os.close(wake_w)

    def _on_signal(self, signum: int, frame) -> None:
        self.pending_signals.append(signum)

    def _child_setup(self) -> None:
        """Runs in each rank between fork and exec."""
        os.setpgid(0, 0)
        if self._libc is not None:
            self._libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != self._launcher_pid:
            os._exit(EXIT_CANNOT_EXECUTE)

    def _rank_env(self, rank: Rank, fd: int) -> Dict[str, str]:
        env = dict(os.environ)
        for name in SCRUBBED:
            env.pop(name, None)
        env.update(self.opts.env)
        env.update({
            "PMI_FD": str(fd),
            "PMI_RANK": str(rank.rank),
            "PMI_SIZE": str(self.opts.size),
            "POSTBOX_JOB_ID": self.job_id,
            "POSTBOX_JOB_SECRET": self.secret,
            "POSTBOX_VNODE": str(rank.vnode),
            "POSTBOX_NODE_ID": str(rank.vnode),
        })
        return env

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
        need = 8 * self.opts.size + 64
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
        program = opts.program
        if "/" not in program:
            found = shutil.which(program)
            if found is None:
                self.log("%s: command not found" % program)
                return EXIT_NOT_FOUND
        elif not os.path.exists(program):
            self.log("%s: no such file" % program)
            return EXIT_NOT_FOUND
        if not self._raise_fd_limit():
            self.log("-n %d needs more open files than the limit allows (ulimit -n)"
                     % opts.size)
            return EXIT_USAGE
        forward_stdin = self._can_forward_stdin()
        assert self.sel is not None
        for rank in self.ranks:
            parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                rank.proc = subprocess.Popen(
                    [program] + opts.args,
                    stdin=subprocess.PIPE if rank.rank == 0 and forward_stdin
                    else subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    env=self._rank_env(rank, child.fileno()), pass_fds=(child.fileno(),),
                    preexec_fn=self._child_setup)
            except OSError as exc:
                parent.close()
                self.log("cannot start %s: %s" % (program, exc.strerror or exc))
                return EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_CANNOT_EXECUTE
            finally:
                child.close()
            rank.pgid = rank.proc.pid
            parent.setblocking(False)
            rank.sock = parent
            self.sel.register(parent, selectors.EVENT_READ, ("pmi", rank))
            prefix = ("[%d] " % rank.rank).encode() if opts.tag_output else b""
            for pipe, out in ((rank.proc.stdout, self.stdout), (rank.proc.stderr, self.stderr)):
                assert pipe is not None
                fd = pipe.fileno()
                os.set_blocking(fd, False)
                stream = Stream(fd, out, prefix)
                rank.streams.append(stream)
                self.sel.register(fd, selectors.EVENT_READ, ("out", stream))
            if rank.rank == 0 and rank.proc.stdin is not None:
                self.stdin_pipe = rank.proc.stdin.fileno()
                os.set_blocking(self.stdin_pipe, False)
                self.sel.register(0, selectors.EVENT_READ, ("stdin", None))
                self.stdin_reading = True
        if opts.timeout is not None:
            self.deadline = time.monotonic() + opts.timeout
        return None

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
                elif kind == "stdin":
                    self._read_stdin()
                elif kind == "stdin-pipe":
                    self._write_stdin()
            self._handle_signals()
            self._reap()
            self._check_barrier_deadlock()
            now = time.monotonic()
            if self.deadline is not None and not self.ending and now >= self.deadline:
                self._end("the job did not finish within %g s (--timeout); ending the job"
                          % self.opts.timeout, EXIT_TIMEOUT)
            while self.kill_schedule and self.kill_schedule[0][0] <= now:
                self._signal_all(self.kill_schedule.pop(0)[1])
            if not any(rank.alive for rank in self.ranks):
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
                rank.pmi_out = rank.pmi_out[sent:]
        except BlockingIOError:
            pass
        except OSError:
            rank.pmi_out = b""
            self.server.eof(rank.rank)
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if rank.pmi_out else 0)
        if self.sel.get_key(rank.sock).events != events:
            self.sel.modify(rank.sock, events, ("pmi", rank))

    def _pmi_close(self, rank_no: int, reason: Optional[str]) -> None:
        rank = self.ranks[rank_no]
        if reason is not None and not self.ending:
            self.log("rank %d (node %s) sent %s; closing its PMI connection"
                     % (rank_no, self.node(rank_no), reason))
        if rank.sock is not None:
            assert self.sel is not None
            self.sel.unregister(rank.sock)
            rank.sock.close()
            rank.sock = None
            rank.pmi_out = b""

    def _pmi_abort(self, rank_no: int, code: int, message: str) -> None:
        text = "rank %d (node %s) called PMI abort with exit code %d" % (
            rank_no, self.node(rank_no), code)
        if message:
            text += " (%s)" % message
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
            if returncode < 0:
                status = 128 - returncode
                what = "was killed by signal %d (%s)" % (-returncode, signal_name(-returncode))
            else:
                status = returncode
                what = "exited with status %d" % returncode
            if status == 0:
                continue
            text = "rank %d (node %s) %s" % (rank.rank, self.node(rank.rank), what)
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
            if rank.returncode is not None and rank.rank not in waiting:
                shown = ",".join(str(r) for r in waiting[:8]) + (",..." if len(waiting) > 8
                                                                  else "")
                self._end("rank %d (node %s) exited while rank%s %s wait%s in a PMI barrier; "
                          "ending the job" % (rank.rank, self.node(rank.rank),
                                              "s" if len(waiting) > 1 else "", shown,
                                              "" if len(waiting) > 1 else "s"), 1)
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

    def _signal_all(self, signum: int) -> None:
        for rank in self.ranks:
            if rank.pgid is None:
                continue
            try:
                os.killpg(rank.pgid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def _cleanup(self) -> None:
        """Every exit path: no rank, no rank's child, no descriptor left."""
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
        if self.sel is not None:
            self.sel.close()
            self.sel = None


def main(argv: Sequence[str], prog: str = "postbox run") -> int:
    try:
        opts = parse_args(argv)
    except UsageError as exc:
        print("%s: %s (see %s --help)" % (prog, exc, prog), file=sys.stderr)
        return EXIT_USAGE
    if opts is None:
        sys.stdout.write(HELP.format(prog=prog, indent=" " * len(prog)))
        return 0
    sys.stdout.flush()
    sys.stderr.flush()
    return Launcher(opts, prog).run()
