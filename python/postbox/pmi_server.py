"""The PMI server of ``postbox run``: the PMI-1 wire protocol and a PMI-2 subset.

This module knows nothing about processes or sockets.  The launcher makes one
:class:`PmiServer` per job and feeds it the bytes each rank writes on its
``PMI_FD``; the server answers through the ``send`` callback and reports what
the launcher must act on (an ``abort``, a connection to close) through the
``abort`` and ``close`` callbacks.

PMI-1 (one line, ``cmd=NAME key=value ...\\n``, at most :data:`MAX_LINE` bytes):
``init``, ``get_maxes``, ``get_universe_size``, ``get_appnum``,
``get_my_kvsname``, ``put``, ``get``, ``barrier_in``, ``publish_name``,
``unpublish_name``, ``lookup_name``, ``finalize``, ``abort``, and the
multi-line ``mcmd=spawn`` ... ``endcmd`` (one block per command of a spawn).

PMI-2 (a 6-character decimal length, then ``cmd=NAME;key=value;...;``), used
after ``cmd=init pmi_version=2``: ``fullinit``, ``job-getid``, ``kvs-put``,
``kvs-get``, ``kvs-fence``, ``info-getjobattr``, ``info-putnodeattr``,
``info-getnodeattr``, ``name-publish``, ``name-unpublish``, ``name-lookup``,
``spawn``, ``finalize``, ``abort``.

The job has a universe of slots (``postbox run --universe U``, U at least the
N ranks started first; a connection is known by its slot).  The processes
started together form a world (:class:`World`): the first N ranks are world 0,
and each spawn makes the next world of the processes it starts, in the next
free slots.  A world has its own rank space (rank 0 up, in slot order), its
own key-value space (world 0's named after the job id, world k's
``<job id>-s<k>``), its own node attributes, and its own fence: ``barrier_in``
and ``kvs-fence`` are the same collective, over the world's processes.
``PMI_process_mapping`` is answered from the layout of the world's virtual
nodes, ``get_universe_size`` and ``universeSize`` with U.  The launcher puts
nothing in world 0's key-value space (the job secret never travels over
PMI); a spawn's ``preput`` keys go into the new world's before it starts.
A spawn the launcher does not serve (no ``spawn`` callback) is refused.

The name service (MPI_Publish_name, MPI_Unpublish_name, MPI_Lookup_name) maps
a service name to a port name; its table (:class:`NameService`) may be shared
by several servers, so that every job one launcher serves sees the same names.
A rank publishes at most :data:`NAMES_PER_RANK` names.

A rank holds at most :data:`KVS_KEYS_PER_RANK` keys and
:data:`KVS_BYTES_PER_RANK` bytes of keys and values (a put past either is
refused), and only the process of slot r (rank r of world 0) may put
``pb-node-<r>``, ``pb-tcp-<r>`` and ``pb-mpi-rank-<r>`` (and
``pb-mpi-rank-<r>-<k>``, of the engine's k-th restart).  Postbox's own keys
(``pb-``) are the job's: whichever world puts or reads one, it is in world 0's
space, so that the library of a spawned process and its parents' read each
other's (the library names them by slot).

A connection over TCP (``PMI_PORT``) first goes through
:class:`PortHandshake`, which learns which rank it claims to be (``initack
pmiid=``, or PMI-2 ``fullinit`` with ``pmiid``/``pmirank``) and makes it prove
that with the rank's one-time token (a challenge answered with a keyed MAC);
only then is it served, and the token cannot be used again.
"""

from __future__ import annotations

import hmac
import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

KVSNAME_MAX = 64
KEYLEN_MAX = 64
VALLEN_MAX = 1024
# The longest PMI-1 line (newline included) and PMI-2 body accepted: a put of
# the longest kvsname, key and value get_maxes advertises, every byte of them
# escaped (2 bytes each), plus the command's own words, fits with room to spare
# (64 + 64 + 1024 = 1152 bytes, 2304 escaped, about 40 of words).
MAX_LINE = 4096
MAX_V2_MESSAGE = 4096
PMI_SUBVERSION_1 = 1
KVS_KEYS_PER_RANK = 4096        # keys one rank may hold (job and node spaces together)
KVS_BYTES_PER_RANK = 1 << 20    # bytes of keys and values one rank may hold
NAMES_PER_RANK = 4096           # services one rank may have published at once
# a spawn: at most so many commands, arguments per command, info and preput keys,
# and bytes in one PMI-1 mcmd block (PMI-2 messages stay within MAX_V2_MESSAGE)
SPAWN_COMMANDS_MAX = 64
SPAWN_ARGS_MAX = 256
SPAWN_KEYS_MAX = 64
MAX_SPAWN_BLOCK = 65536
# Postbox's own keys that name the rank that puts them: only that rank may
_RANK_KEY = re.compile(r"^pb-(?:node|tcp|mpi-rank)-(-?[0-9]+)(?:-[0-9]+)?$")

# digits padded with spaces on either side ("%6d" or, as Slurm's do, "%-6d")
_V2_HEADER = re.compile(rb"^ *[0-9]{1,6} *$")


class ProtocolError(Exception):
    """A message that cannot be parsed."""


class NameService:
    """Published service names: service -> (port, the publisher's (job, rank))."""

    def __init__(self) -> None:
        self.names: Dict[str, Tuple[str, Tuple[str, int]]] = {}
        self.held: Dict[Tuple[str, int], int] = {}  # names each publisher has published

    def publish(self, service: str, port: str, owner: Tuple[str, int]) -> Optional[str]:
        """Publish @service as @port for @owner; the refusal, or None."""
        if service in self.names:
            return "service_already_published"
        if self.held.get(owner, 0) >= NAMES_PER_RANK:
            return "more_than_%d_names_published_by_this_rank" % NAMES_PER_RANK
        self.names[service] = (port, owner)
        self.held[owner] = self.held.get(owner, 0) + 1
        return None

    def unpublish(self, service: str) -> bool:
        entry = self.names.pop(service, None)
        if entry is None:
            return False
        self.held[entry[1]] -= 1
        return True

    def lookup(self, service: str) -> Optional[str]:
        entry = self.names.get(service)
        return entry[0] if entry else None


# ---- the layout of virtual nodes ------------------------------------------

def node_sizes(size: int, nodes: int) -> List[int]:
    """Ranks per virtual node: blocks, the first size % nodes nodes get one more."""
    base, extra = divmod(size, nodes)
    return [base + (1 if node < extra else 0) for node in range(nodes)]


def vnode_of_ranks(size: int, nodes: int) -> List[int]:
    """The virtual node of each rank (rank order)."""
    out: List[int] = []
    for node, count in enumerate(node_sizes(size, nodes)):
        out.extend([node] * count)
    return out


def universe_vnodes(size: int, universe: int, nodes: int) -> List[int]:
    """The virtual node of each of @universe slots: the first @size as
    :func:`vnode_of_ranks`, the other universe - size in blocks over the nodes
    too (the first nodes get one more; a node may get none)."""
    return vnode_of_ranks(size, nodes) + vnode_of_ranks(universe - size, nodes)


def mapping_of(vnodes: Sequence[int]) -> str:
    """MPICH's PMI_process_mapping of ranks on @vnodes (each node's ranks
    consecutive): (vector,(start_node,num_nodes,ranks_per_node),...)."""
    blocks: List[Tuple[int, int, int]] = []
    counts: List[Tuple[int, int]] = []   # (node, ranks) in rank order
    for vnode in vnodes:
        if counts and counts[-1][0] == vnode:
            counts[-1] = (vnode, counts[-1][1] + 1)
        else:
            counts.append((vnode, 1))
    for node, count in counts:
        if blocks and blocks[-1][2] == count and blocks[-1][0] + blocks[-1][1] == node:
            start, num, per = blocks[-1]
            blocks[-1] = (start, num + 1, per)
        else:
            blocks.append((node, 1, count))
    return "(vector,%s)" % ",".join("(%d,%d,%d)" % block for block in blocks)


def process_mapping(size: int, nodes: int) -> str:
    """MPICH's PMI_process_mapping of @size ranks in blocks over @nodes."""
    return mapping_of(vnode_of_ranks(size, nodes))


# ---- wire formats -----------------------------------------------------------

def _split_escaped(text: str, separator: str) -> List[str]:
    """Split @text at @separator; a backslash escapes the next character."""
    parts: List[str] = []
    current: List[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        raise ProtocolError("ends_with_a_backslash")
    parts.append("".join(current))
    return parts


def _escape(value: str, specials: str) -> str:
    return "".join("\\" + c if c == "\\" or c in specials else c for c in value)


def _fields(tokens: Sequence[str]) -> Tuple[str, Dict[str, str]]:
    fields: Dict[str, str] = {}
    for token in tokens:
        if not token:
            continue
        if "=" not in token:
            raise ProtocolError("field_without_=")
        key, value = token.split("=", 1)
        if not key:
            raise ProtocolError("empty_field_name")
        fields[key] = value
    if "cmd" not in fields:
        raise ProtocolError("no_cmd_field")
    return fields.pop("cmd"), fields


def parse_v1(line: bytes) -> Tuple[str, Dict[str, str]]:
    """``cmd=NAME a=1 b=2`` (no newline) -> ("NAME", {"a": "1", "b": "2"})."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("not_utf-8") from None
    if "\0" in text:
        raise ProtocolError("nul_byte")
    return _fields(_split_escaped(text.rstrip("\r"), " "))


def _split_v2(text: str) -> List[str]:
    """Split a PMI-2 body at its ``;``; ``;;`` is a literal ``;`` (the
    wire's only escape, as the library's client writes it)."""
    parts: List[str] = []
    current: List[str] = []
    i = 0
    while i < len(text):
        if text[i] == ";":
            if text[i + 1:i + 2] == ";":
                current.append(";")
                i += 2
                continue
            parts.append("".join(current))
            current = []
        else:
            current.append(text[i])
        i += 1
    parts.append("".join(current))
    return parts


def parse_v2(body: bytes) -> Tuple[str, Dict[str, str]]:
    """``cmd=NAME;a=1;b=2;`` -> ("NAME", {"a": "1", "b": "2"})."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("not_utf-8") from None
    if "\0" in text:
        raise ProtocolError("nul_byte")
    return _fields(_split_v2(text))


def parse_v2_pairs(body: bytes) -> List[Tuple[str, str]]:
    """The ``key=value`` fields of a PMI-2 body in order, repeated keys kept
    (a ``spawn`` repeats ``subcmd``, ``maxprocs``, ...); ProtocolError when
    malformed."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("not_utf-8") from None
    pairs = []
    for token in _split_v2(text):
        if not token:
            continue
        if "=" not in token:
            raise ProtocolError("field_without_=")
        key, value = token.split("=", 1)
        pairs.append((key, value))
    return pairs


def format_v1(cmd: str, fields: Sequence[Tuple[str, object]]) -> bytes:
    parts = ["cmd=" + cmd] + ["%s=%s" % (k, _escape(str(v), " \n")) for k, v in fields]
    return (" ".join(parts) + "\n").encode("utf-8")


def format_v2(cmd: str, fields: Sequence[Tuple[str, object]]) -> bytes:
    body = "cmd=%s;" % cmd + "".join("%s=%s;" % (k, str(v).replace(";", ";;")) for k, v in fields)
    data = body.encode("utf-8")
    return b"%6u" % len(data) + data


def parse_mcmd(block: bytes) -> List[Tuple[str, str]]:
    """A PMI-1 ``mcmd=...`` block (its lines up to, without, ``endcmd``) ->
    its ``key=value`` lines in order; a value is the rest of its line, as is
    (no escapes: an argument may hold spaces and ``=``)."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("not_utf-8") from None
    if "\0" in text:
        raise ProtocolError("nul_byte")
    pairs = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line:
            continue
        if "=" not in line:
            raise ProtocolError("line_without_=")
        key, value = line.split("=", 1)
        pairs.append((key, value))
    return pairs


# ---- the server ------------------------------------------------------------

class SpawnApp:
    """One command of a spawn: the program, its arguments, how many
    processes, the info keys given with it, and its appnum (its index)."""

    def __init__(self, command: str, args: List[str], nprocs: int, info: Dict[str, str],
                 appnum: int):
        self.command = command
        self.args = args
        self.nprocs = nprocs
        self.info = info
        self.appnum = appnum


class World:
    """Processes started together (world 0: the first ranks; then one per
    spawn): their slots in rank order, appnums, key-value space, node
    attributes (by virtual node) and fence."""

    def __init__(self, number: int, kvsname: str, slots: List[int], appnums: List[int],
                 vnodes: List[int], universe: int, parent: Optional[str] = None):
        self.number = number
        self.kvsname = kvsname
        self.parent = parent   # the spawning world's kvsname
        self.slots = slots
        self.appnums = appnums
        self.kvs: Dict[str, str] = {}
        self.node_kvs: Dict[int, Dict[str, str]] = {}
        self.job_attrs = {
            "PMI_process_mapping": mapping_of(vnodes),
            "universeSize": str(universe),
        }
        self.barriers_done = 0

    @property
    def size(self) -> int:
        return len(self.slots)


class Connection:
    """The PMI state of one slot: its read buffer, wire version, progress,
    and once its process is started, its world and rank in it."""

    def __init__(self, server: "PmiServer", slot: int):
        self.server = server
        self.slot = slot
        self.world: Optional[World] = None
        self.rank = -1   # in its world
        self.buffer = b""
        self.start = 0   # where the next message begins in buffer
        self.v2 = False
        self.initialized = False
        self.finalized = False
        self.closed = False
        self.in_barrier = False
        self.barrier_v2 = False
        self.barrier_thrid: Optional[str] = None

    # -- bytes in

    def feed(self, data: bytes) -> None:
        """Bytes the rank wrote; answers every complete message in them."""
        if self.closed:
            return
        # messages are taken from buffer at start: one copy per feed, not per message
        self.buffer = self.buffer[self.start:] + data
        self.start = 0
        while not self.closed:
            message = self._next_message()
            if message is None:
                return
            body, v2 = message
            if not v2 and body.startswith(b"mcmd="):
                try:
                    pairs = parse_mcmd(body)
                except ProtocolError as exc:
                    self._reply_error(False, "spawn_result", "malformed_message_" + str(exc))
                    continue
                self.server._mcmd(self, pairs)
                continue
            try:
                cmd, fields = parse_v2(body) if v2 else parse_v1(body)
                pairs = parse_v2_pairs(body) if v2 and cmd == "spawn" else []
            except ProtocolError as exc:
                self._reply_error(v2, "error", "malformed_message_" + str(exc))
                continue
            if pairs:
                self.server._v2_spawn(self, pairs)
                continue
            self.server._dispatch(self, cmd, fields, v2)

    def _next_message(self) -> Optional[Tuple[bytes, bool]]:
        buf, pos = self.buffer, self.start
        avail = len(buf) - pos
        if not avail:
            return None
        # a PMI-2 client may skip the v1 init and start with a length field
        if self.v2 or (avail >= 10 and _V2_HEADER.match(buf[pos:pos + 6])
                       and buf[pos + 6:pos + 10] == b"cmd="):
            if avail < 6:
                return None
            header = buf[pos:pos + 6]
            if not _V2_HEADER.match(header):
                self.close("a PMI-2 message does not start with a 6-digit length")
                return None
            length = int(header)
            if length > MAX_V2_MESSAGE:
                self.close("a PMI-2 message of %d bytes (more than %d)"
                           % (length, MAX_V2_MESSAGE))
                return None
            if avail < 6 + length:
                return None
            self.start = pos + 6 + length
            self.v2 = True
            return buf[pos + 6:pos + 6 + length], True
        if buf.startswith(b"mcmd=", pos):
            # a multi-line block, up to its line "endcmd"
            end = buf.find(b"\nendcmd\n", pos)
            if end < 0 or end + 8 - pos > MAX_SPAWN_BLOCK:
                if (avail if end < 0 else end + 8 - pos) > MAX_SPAWN_BLOCK:
                    self.close("a PMI mcmd block longer than %d bytes" % MAX_SPAWN_BLOCK)
                return None
            self.start = end + 8
            return buf[pos:end + 1], False
        end = buf.find(b"\n", pos)
        if end < 0:
            if avail > MAX_LINE:
                self.close("a PMI line longer than %d bytes" % MAX_LINE)
            return None
        if end + 1 - pos > MAX_LINE:
            self.close("a PMI line longer than %d bytes" % MAX_LINE)
            return None
        self.start = end + 1
        return buf[pos:end], False

    # -- bytes out

    def reply(self, v2: bool, cmd: str, fields: Sequence[Tuple[str, object]]) -> None:
        if self.closed:
            return
        self.server.send(self.slot, format_v2(cmd, fields) if v2 else format_v1(cmd, fields))

    def _reply_error(self, v2: bool, cmd: str, msg: str,
                     extra: Sequence[Tuple[str, object]] = ()) -> None:
        if v2:
            self.reply(True, cmd, [("rc", -1), ("errmsg", msg)] + list(extra))
        else:
            self.reply(False, cmd, [("rc", -1), ("msg", msg)] + list(extra))

    def close(self, reason: str) -> None:
        """Stop serving this rank (the launcher closes its end of PMI_FD)."""
        if self.closed:
            return
        self.closed = True
        self.buffer = b""
        self.start = 0
        self.server._closed(self, reason)


class PmiServer:
    """The PMI service of one job.  Every callback names a slot (the rank,
    for the first ranks).

    send(slot, data)            bytes to write to the slot's PMI_FD
    abort(slot, code, message)  the process called abort: end the job with code
    close(slot, reason)         stop serving the slot (reason is one line, or
                                None when the process simply closed its end)
    spawn(world, apps)          start the processes of a new :class:`World`
                                (apps: :class:`SpawnApp`, in order, filling
                                world.slots); returns None when every one was
                                started, else why not (one line).  Without
                                it, a spawn is refused.

    @vnodes, when given, is the node of each slot (a hostfile's blocks of
    unequal size); else the slots lie in even blocks (universe_vnodes).
    """

    def __init__(self, job_id: str, size: int, nodes: int,
                 send: Callable[[int, bytes], None],
                 abort: Callable[[int, int, str], None],
                 close: Callable[[int, Optional[str]], None],
                 names: Optional[NameService] = None,
                 universe: Optional[int] = None,
                 spawn: Optional[Callable[[World, List[SpawnApp]], Optional[str]]] = None,
                 vnodes: Optional[List[int]] = None):
        if len(job_id) > KVSNAME_MAX:
            raise ValueError("job id longer than %d characters" % KVSNAME_MAX)
        universe = size if universe is None else universe
        if universe < size:
            raise ValueError("a universe of %d slots is smaller than the %d ranks"
                             % (universe, size))
        self.job_id = job_id
        self.size = size
        self.universe = universe
        self.nodes = nodes
        self.send = send
        self._abort = abort
        self._close = close
        self._spawn = spawn
        self.vnode = list(vnodes) if vnodes is not None else universe_vnodes(size, universe,
                                                                             nodes)
        # (connection, key, thrid) waiting in info-getnodeattr wait=TRUE
        self.node_waiters: List[Tuple[Connection, str, Optional[str]]] = []
        self.connections = [Connection(self, slot) for slot in range(universe)]
        self.worlds: List[World] = []
        self.next_free = 0   # the lowest slot no world holds
        self._add_world(job_id, [0] * size)
        self.barriers_done = 0
        # (world, space, key) -> (the slot that put it, its bytes); space -1 is
        # the world's key-value space, n >= 0 its node n's attributes
        self.owner: Dict[Tuple[int, int, str], Tuple[int, int]] = {}
        self.held_keys = [0] * universe
        self.held_bytes = [0] * universe
        self.names = names if names is not None else NameService()
        # PMI-1 spawn blocks received so far, per slot: (apps, preput)
        self.spawn_blocks: Dict[int, Tuple[List[SpawnApp], List[Tuple[str, str]]]] = {}

    def _add_world(self, kvsname: str, appnums: List[int],
                   parent: Optional[str] = None) -> World:
        slots = list(range(self.next_free, self.next_free + len(appnums)))
        world = World(len(self.worlds), kvsname, slots, appnums,
                      [self.vnode[slot] for slot in slots], self.universe, parent)
        for rank, slot in enumerate(slots):
            self.connections[slot].world = world
            self.connections[slot].rank = rank
        self.worlds.append(world)
        self.next_free += len(slots)
        return world

    def world_of(self, slot: int) -> Optional[World]:
        """The world of @slot; None while no process was started in it."""
        return self.connections[slot].world

    def attach(self, rank: int, v2: bool) -> None:
        """A PMI_PORT connection identified as @rank (after :class:`PortHandshake`)."""
        conn = self.connections[rank]
        conn.v2 = v2
        conn.initialized = conn.initialized or v2

    def feed(self, rank: int, data: bytes) -> None:
        self.connections[rank].feed(data)

    def eof(self, rank: int) -> None:
        """The rank closed its end of PMI_FD (or exited)."""
        conn = self.connections[rank]
        if not conn.closed:
            conn.closed = True
            self._closed(conn, None)

    def waiting_in_barrier(self) -> List[int]:
        """The slots waiting in a fence."""
        return [c.slot for c in self.connections if c.in_barrier]

    # -- internals

    def _closed(self, conn: Connection, reason: Optional[str]) -> None:
        self.node_waiters = [w for w in self.node_waiters if w[0] is not conn]
        self._close(conn.slot, reason)

    def _dispatch(self, conn: Connection, cmd: str, fields: Dict[str, str], v2: bool) -> None:
        if conn.world is None:
            # bytes for a slot no process was started in (only a test does this)
            conn._reply_error(v2, cmd + "-response" if v2 else "error", "no_process_in_this_slot")
            return
        name = ("_v2_" if v2 else "_v1_") + cmd.replace("-", "_")
        handler = getattr(self, name, None)
        if handler is None:
            if v2:
                conn._reply_error(True, cmd + "-response", "unknown_command_" + cmd)
            else:
                conn._reply_error(False, "error", "unknown_command_" + cmd)
            return
        handler(conn, fields)

    def _check_key(self, key: Optional[str]) -> Optional[str]:
        if key is None or key == "":
            return "missing_key"
        if len(key) > KEYLEN_MAX:
            return "key_longer_than_%d" % KEYLEN_MAX
        return None

    def _charge(self, conn: Connection, space: int, key: str, value: str) -> Optional[str]:
        """Account @conn's put of @key = @value in @space of its world; the
        refusal, or None."""
        match = _RANK_KEY.match(key)
        if match and int(match.group(1)) != conn.slot:
            return "key_%s_belongs_to_another_rank" % key
        size = len(key.encode("utf-8")) + len(value.encode("utf-8"))
        rank = conn.slot
        assert conn.world is not None
        where = (self._space_of(conn.world, key).number if space == -1 else conn.world.number,
                 space, key)
        old = self.owner.get(where)
        keys, held = self.held_keys[rank] + 1, self.held_bytes[rank] + size
        if old is not None and old[0] == rank:
            keys, held = keys - 1, held - old[1]
        if keys > KVS_KEYS_PER_RANK:
            return "more_than_%d_keys_put_by_this_rank" % KVS_KEYS_PER_RANK
        if held > KVS_BYTES_PER_RANK:
            return "more_than_%d_bytes_put_by_this_rank" % KVS_BYTES_PER_RANK
        if old is not None:
            self.held_keys[old[0]] -= 1
            self.held_bytes[old[0]] -= old[1]
        self.held_keys[rank] += 1
        self.held_bytes[rank] += size
        self.owner[where] = (rank, size)
        return None

    def _space_of(self, world: World, key: str) -> World:
        """The world whose key-value space holds @key of @world: Postbox's own
        keys (``pb-``) are the job's, in world 0's space, whichever world puts
        or reads them (the library names them by slot); others are @world's."""
        return self.worlds[0] if key.startswith("pb-") else world

    def _check_kvsname(self, conn: Connection, fields: Dict[str, str]) -> Optional[str]:
        name = fields.get("kvsname")
        if name is None:
            return "missing_kvsname"
        assert conn.world is not None
        if name != conn.world.kvsname:
            return "unknown_kvsname_" + _escape(name[:KVSNAME_MAX], " ")
        return None

    def _enter_barrier(self, conn: Connection, v2: bool, thrid: Optional[str]) -> None:
        if conn.in_barrier:
            if v2:
                conn._reply_error(True, "kvs-fence-response", "already_in_the_fence")
            else:
                conn._reply_error(False, "barrier_out", "already_in_the_barrier")
            return
        conn.in_barrier = True
        conn.barrier_v2 = v2
        conn.barrier_thrid = thrid
        assert conn.world is not None
        members = [self.connections[slot] for slot in conn.world.slots]
        if all(c.in_barrier for c in members):
            self.barriers_done += 1
            conn.world.barriers_done += 1
            for c in members:
                c.in_barrier = False
                if c.barrier_v2:
                    extra = [("thrid", c.barrier_thrid)] if c.barrier_thrid else []
                    c.reply(True, "kvs-fence-response", [("rc", 0)] + extra)
                else:
                    c.reply(False, "barrier_out", [("rc", 0)])

    # -- PMI-1

    def _v1_init(self, conn: Connection, fields: Dict[str, str]) -> None:
        version = fields.get("pmi_version", "1")
        if version not in ("1", "2"):
            conn._reply_error(False, "response_to_init", "unsupported_pmi_version_" + version,
                              [("pmi_version", 1), ("pmi_subversion", PMI_SUBVERSION_1)])
            return
        conn.initialized = True
        if version == "2":
            conn.reply(False, "response_to_init",
                       [("pmi_version", 2), ("pmi_subversion", 0), ("rc", 0)])
            conn.v2 = True
        else:
            conn.reply(False, "response_to_init",
                       [("rc", 0), ("pmi_version", 1), ("pmi_subversion", PMI_SUBVERSION_1)])

    def _v1_get_maxes(self, conn: Connection, fields: Dict[str, str]) -> None:
        conn.reply(False, "maxes", [("rc", 0), ("kvsname_max", KVSNAME_MAX),
                                    ("keylen_max", KEYLEN_MAX), ("vallen_max", VALLEN_MAX)])

    def _v1_get_universe_size(self, conn: Connection, fields: Dict[str, str]) -> None:
        conn.reply(False, "universe_size", [("rc", 0), ("size", self.universe)])

    def _v1_get_appnum(self, conn: Connection, fields: Dict[str, str]) -> None:
        assert conn.world is not None
        conn.reply(False, "appnum", [("rc", 0), ("appnum", conn.world.appnums[conn.rank])])

    def _v1_get_my_kvsname(self, conn: Connection, fields: Dict[str, str]) -> None:
        assert conn.world is not None
        conn.reply(False, "my_kvsname", [("rc", 0), ("kvsname", conn.world.kvsname)])

    def _v1_put(self, conn: Connection, fields: Dict[str, str]) -> None:
        error = self._check_kvsname(conn, fields) or self._check_key(fields.get("key"))
        value = fields.get("value")
        if error is None and value is None:
            error = "missing_value"
        if error is None and len(value.encode("utf-8")) > VALLEN_MAX:  # type: ignore[union-attr]
            error = "value_longer_than_%d" % VALLEN_MAX
        assert conn.world is not None
        world = conn.world
        if error is None and fields["key"] in world.job_attrs:
            error = "key_%s_is_reserved" % fields["key"]
        if error:
            conn._reply_error(False, "put_result", error)
            return
        error = self._charge(conn, -1, fields["key"], value)  # type: ignore[arg-type]
        if error:
            conn._reply_error(False, "put_result", error)
            return
        self._space_of(world, fields["key"]).kvs[fields["key"]] = value  # type: ignore[assignment]
        conn.reply(False, "put_result", [("rc", 0)])

    def _world_named(self, kvsname: str) -> Optional[World]:
        for world in self.worlds:
            if world.kvsname == kvsname:
                return world
        return None

    def _v1_get(self, conn: Connection, fields: Dict[str, str]) -> None:
        """A get from the caller's world's space, or another world's of the
        job (read only: a spawned world reads its parents' keys)."""
        key = fields.get("key", "")
        world = self._world_named(fields.get("kvsname", ""))
        error = (self._check_kvsname(conn, fields) if world is None else None) or \
            self._check_key(key)
        if error:
            conn._reply_error(False, "get_result", error)
            return
        assert world is not None
        attrs = world.job_attrs
        value = attrs[key] if key in attrs else self._space_of(world, key).kvs.get(key)
        if value is None:
            conn._reply_error(False, "get_result", "key_%s_not_found" % _escape(key, " "))
        else:
            conn.reply(False, "get_result", [("rc", 0), ("value", value)])

    def _v1_barrier_in(self, conn: Connection, fields: Dict[str, str]) -> None:
        self._enter_barrier(conn, False, None)

    def _name_fields(self, fields: Dict[str, str], key: str,
                     with_port: bool) -> Tuple[Optional[str], str, str]:
        """(the refusal or None, service, port) of a name-service request."""
        service, port = fields.get(key, ""), fields.get("port", "")
        if service == "":
            return "missing_" + key, service, port
        if len(service.encode("utf-8")) > VALLEN_MAX:
            return "%s_longer_than_%d" % (key, VALLEN_MAX), service, port
        if with_port and port == "":
            return "missing_port", service, port
        if len(port.encode("utf-8")) > VALLEN_MAX:
            return "port_longer_than_%d" % VALLEN_MAX, service, port
        return None, service, port

    def _name_publish(self, conn: Connection, fields: Dict[str, str], key: str) -> Optional[str]:
        error, service, port = self._name_fields(fields, key, True)
        return error or self.names.publish(service, port, (self.job_id, conn.slot))

    def _name_unpublish(self, conn: Connection, fields: Dict[str, str], key: str) -> Optional[str]:
        error, service, _ = self._name_fields(fields, key, False)
        if error is None and not self.names.unpublish(service):
            error = "service_not_published"
        return error

    def _name_lookup(self, fields: Dict[str, str], key: str) -> Tuple[Optional[str], str]:
        error, service, _ = self._name_fields(fields, key, False)
        port = None if error else self.names.lookup(service)
        if error is None and port is None:
            error = "service_not_found"
        return error, port or ""

    def _v1_publish_name(self, conn: Connection, fields: Dict[str, str]) -> None:
        error = self._name_publish(conn, fields, "service")
        if error:
            conn._reply_error(False, "publish_result", error)
        else:
            conn.reply(False, "publish_result", [("rc", 0)])

    def _v1_unpublish_name(self, conn: Connection, fields: Dict[str, str]) -> None:
        error = self._name_unpublish(conn, fields, "service")
        if error:
            conn._reply_error(False, "unpublish_result", error)
        else:
            conn.reply(False, "unpublish_result", [("rc", 0)])

    def _v1_lookup_name(self, conn: Connection, fields: Dict[str, str]) -> None:
        error, port = self._name_lookup(fields, "service")
        if error:
            conn._reply_error(False, "lookup_result", error)
        else:
            conn.reply(False, "lookup_result", [("rc", 0), ("port", port)])

    def _v1_finalize(self, conn: Connection, fields: Dict[str, str]) -> None:
        conn.finalized = True
        conn.reply(False, "finalize_ack", [("rc", 0)])

    def _v1_abort(self, conn: Connection, fields: Dict[str, str]) -> None:
        try:
            code = int(fields.get("exitcode", "1"))
        except ValueError:
            code = 1
        self._abort(conn.slot, code, fields.get("message", ""))

    # -- spawn (PMI-1 mcmd blocks and PMI-2 spawn)

    def _spawn_app(self, command: Optional[str], nprocs: Optional[str], args: List[str],
                   info: Dict[str, str], appnum: int) -> Tuple[Optional[str], Optional[SpawnApp]]:
        """One command of a spawn, checked: (the refusal, None) or (None, app)."""
        if not command:
            return "missing_command", None
        try:
            count = int(nprocs or "", 10)
        except ValueError:
            return "bad_number_of_processes_%r" % (nprocs or ""), None
        if count < 1:
            return "bad_number_of_processes_%d" % count, None
        if len(args) > SPAWN_ARGS_MAX:
            return "more_than_%d_arguments" % SPAWN_ARGS_MAX, None
        if len(info) > SPAWN_KEYS_MAX:
            return "more_than_%d_info_keys" % SPAWN_KEYS_MAX, None
        return None, SpawnApp(command, args, count, info, appnum)

    def _spawn_world(self, conn: Connection, apps: List[SpawnApp],
                     preput: List[Tuple[str, str]]) -> Tuple[Optional[str], Optional[World]]:
        """Make the world of @apps in the next free slots, put @preput in its
        key-value space and have the launcher start it: (refusal, None) or
        (None, world)."""
        assert conn.world is not None
        if self._spawn is None:
            return "this_process_manager_does_not_spawn", None
        if not apps or len(apps) > SPAWN_COMMANDS_MAX:
            return "a_spawn_of_%d_commands_(1_to_%d)" % (len(apps), SPAWN_COMMANDS_MAX), None
        if len(preput) > SPAWN_KEYS_MAX:
            return "more_than_%d_preput_keys" % SPAWN_KEYS_MAX, None
        for key, value in preput:
            error = self._check_key(key)
            if error is None and len(value.encode("utf-8")) > VALLEN_MAX:
                error = "value_longer_than_%d" % VALLEN_MAX
            if error is None and key in conn.world.job_attrs:
                error = "key_%s_is_reserved" % key
            if error:
                return "preput_" + error, None
        total = sum(app.nprocs for app in apps)
        free = self.universe - self.next_free
        if total > free:
            return ("spawning_%d_processes_but_only_%d_of_the_universe's_%d_slots_are_free_"
                    "(postbox_run_--universe)" % (total, free, self.universe)), None
        kvsname = "%s-s%d" % (self.job_id, len(self.worlds))
        if len(kvsname) > KVSNAME_MAX:
            return "the_job_id_is_too_long_to_name_a_spawned_world", None
        appnums = [app.appnum for app in apps for _ in range(app.nprocs)]
        world = self._add_world(kvsname, appnums, conn.world.kvsname)
        world.kvs.update(preput)
        error = self._spawn(world, apps)
        if error is not None:
            return error.replace(" ", "_"), None
        return None, world

    def _mcmd(self, conn: Connection, pairs: List[Tuple[str, str]]) -> None:
        """A PMI-1 ``mcmd=spawn`` block: kept until the last of the spawn's
        blocks (``spawnssofar`` = ``totspawns``), then served at once."""
        fields: Dict[str, str] = {}
        for key, value in pairs:
            fields.setdefault(key, value)
        if conn.world is None or fields.get("mcmd") != "spawn":
            self.spawn_blocks.pop(conn.slot, None)
            conn._reply_error(False, "spawn_result", "unknown_mcmd_" + _escape(
                fields.get("mcmd", "")[:64], " "))
            return
        apps, preput = self.spawn_blocks.pop(conn.slot, ([], []))
        try:
            total, sofar = int(fields.get("totspawns", ""), 10), \
                int(fields.get("spawnssofar", ""), 10)
            argcnt = int(fields.get("argcnt", "0"), 10)
            infos = int(fields.get("info_num", "0"), 10)
            preputs = int(fields.get("preput_num", "0"), 10)
        except ValueError:
            conn._reply_error(False, "spawn_result", "bad_number_in_a_spawn_block")
            return
        if not 1 <= sofar <= total or sofar != len(apps) + 1:
            conn._reply_error(False, "spawn_result", "spawn_block_%d_of_%d_out_of_order"
                              % (sofar, total))
            return
        if min(argcnt, infos, preputs) < 0 or max(argcnt, infos, preputs) > SPAWN_ARGS_MAX:
            conn._reply_error(False, "spawn_result", "bad_count_in_a_spawn_block")
            return
        args = [fields.get("arg%d" % (i + 1), "") for i in range(argcnt)]
        info = {fields.get("info_key_%d" % i, ""): fields.get("info_val_%d" % i, "")
                for i in range(infos)}
        error, app = self._spawn_app(fields.get("execname"), fields.get("nprocs"), args, info,
                                     len(apps))
        if error is not None:
            conn._reply_error(False, "spawn_result", error)
            return
        assert app is not None
        apps.append(app)
        if sofar == 1:
            # every block repeats the preput keys; those of the first count
            preput = [(fields.get("preput_key_%d" % i, ""), fields.get("preput_val_%d" % i, ""))
                      for i in range(preputs)]
        if sofar < total:
            self.spawn_blocks[conn.slot] = (apps, preput)
            return
        error, world = self._spawn_world(conn, apps, preput)
        if error is not None:
            conn._reply_error(False, "spawn_result", error)
            return
        assert world is not None
        conn.reply(False, "spawn_result", [("rc", 0), ("errcodes", ",".join(
            "0" for _ in world.slots))])

    def _v2_spawn(self, conn: Connection, pairs: List[Tuple[str, str]]) -> None:
        """PMI-2 ``spawn``: ``ncmds``, ``preputcount``, ``ppkeyN``/``ppvalN``,
        then per command ``subcmd`` (the program), ``maxprocs``, ``argc``,
        ``argvN``, ``infokeycount``, ``infokeyN``/``infovalN``."""
        thrid = [("thrid", v) for k, v in pairs if k == "thrid"][:1]
        if conn.world is None:
            conn._reply_error(True, "spawn-response", "no_process_in_this_slot", thrid)
            return
        head: Dict[str, str] = {}
        commands: List[Dict[str, str]] = []
        for key, value in pairs:
            if key == "subcmd":
                commands.append({})
            target = commands[-1] if commands else head
            target.setdefault(key, value)
        apps: List[SpawnApp] = []
        error: Optional[str] = None
        try:
            ncmds = int(head.get("ncmds", ""), 10)
            preputs = int(head.get("preputcount", "0"), 10)
        except ValueError:
            ncmds, preputs, error = 0, 0, "bad_ncmds_or_preputcount"
        if error is None and (ncmds != len(commands) or not 0 <= preputs <= SPAWN_KEYS_MAX):
            error = "ncmds_%d_but_%d_subcmd" % (ncmds, len(commands)) \
                if ncmds != len(commands) else "bad_preputcount"
        for appnum, command in enumerate(commands):
            if error is not None:
                break
            try:
                argc = int(command.get("argc", "0"), 10)
                infos = int(command.get("infokeycount", "0"), 10)
            except ValueError:
                error = "bad_argc_or_infokeycount"
                break
            if not 0 <= argc <= SPAWN_ARGS_MAX or not 0 <= infos <= SPAWN_KEYS_MAX:
                error = "bad_argc_or_infokeycount"
                break
            args = [command.get("argv%d" % i, "") for i in range(argc)]
            info = {command.get("infokey%d" % i, ""): command.get("infoval%d" % i, "")
                    for i in range(infos)}
            error, app = self._spawn_app(command.get("subcmd"), command.get("maxprocs"), args,
                                         info, appnum)
            if app is not None:
                apps.append(app)
        world = None
        if error is None:
            preput = [(head.get("ppkey%d" % i, ""), head.get("ppval%d" % i, ""))
                      for i in range(preputs)]
            error, world = self._spawn_world(conn, apps, preput)
        if error is not None:
            conn._reply_error(True, "spawn-response", error, thrid)
            return
        assert world is not None
        conn.reply(True, "spawn-response", [("rc", 0), ("jobid", world.kvsname),
                                            ("nerrs", 0)] + thrid)

    # -- PMI-2

    @staticmethod
    def _thrid(fields: Dict[str, str]) -> List[Tuple[str, object]]:
        return [("thrid", fields["thrid"])] if "thrid" in fields else []

    def _v2_fullinit(self, conn: Connection, fields: Dict[str, str]) -> None:
        assert conn.world is not None
        conn.initialized = True
        conn.reply(True, "fullinit-response",
                   [("rc", 0), ("pmi-version", 2), ("pmi-subversion", 0),
                    ("rank", conn.rank), ("size", conn.world.size),
                    ("appnum", conn.world.appnums[conn.rank]),
                    ("debugged", "FALSE"), ("pmiverbose", "FALSE")]
                   + ([("spawner-jobid", conn.world.parent)] if conn.world.parent else [])
                   + self._thrid(fields))

    def _v2_job_getid(self, conn: Connection, fields: Dict[str, str]) -> None:
        assert conn.world is not None
        conn.reply(True, "job-getid-response",
                   [("rc", 0), ("jobid", conn.world.kvsname)] + self._thrid(fields))

    def _v2_kvs_put(self, conn: Connection, fields: Dict[str, str]) -> None:
        key, value = fields.get("key"), fields.get("value")
        error = self._check_key(key)
        if error is None and value is None:
            error = "missing_value"
        if error is None and len(value.encode("utf-8")) > VALLEN_MAX:  # type: ignore[union-attr]
            error = "value_longer_than_%d" % VALLEN_MAX
        assert conn.world is not None
        world = conn.world
        if error is None and key in world.job_attrs:
            error = "key_%s_is_reserved" % key
        if error:
            conn._reply_error(True, "kvs-put-response", error, self._thrid(fields))
            return
        error = self._charge(conn, -1, key, value)  # type: ignore[arg-type]
        if error:
            conn._reply_error(True, "kvs-put-response", error, self._thrid(fields))
            return
        self._space_of(world, key).kvs[key] = value  # type: ignore[arg-type]
        conn.reply(True, "kvs-put-response", [("rc", 0)] + self._thrid(fields))

    def _v2_kvs_get(self, conn: Connection, fields: Dict[str, str]) -> None:
        key = fields.get("key")
        error = self._check_key(key)
        if error:
            conn._reply_error(True, "kvs-get-response", error, self._thrid(fields))
            return
        assert conn.world is not None
        world = conn.world
        if fields.get("jobid"):
            # another world's space of the job (read only), as PMI-1 get's kvsname
            world = self._world_named(fields["jobid"])  # type: ignore[assignment]
            if world is None:
                conn._reply_error(True, "kvs-get-response", "unknown_jobid_" +
                                  fields["jobid"][:KVSNAME_MAX], self._thrid(fields))
                return
        value = self._space_of(world, key).kvs.get(key)  # type: ignore[arg-type]
        if value is None:
            value = world.job_attrs.get(key)  # type: ignore[arg-type]
        if value is None:
            conn.reply(True, "kvs-get-response",
                       [("rc", 0), ("found", "FALSE")] + self._thrid(fields))
        else:
            conn.reply(True, "kvs-get-response",
                       [("rc", 0), ("found", "TRUE"), ("value", value)] + self._thrid(fields))

    def _v2_kvs_fence(self, conn: Connection, fields: Dict[str, str]) -> None:
        self._enter_barrier(conn, True, fields.get("thrid"))

    def _v2_info_getjobattr(self, conn: Connection, fields: Dict[str, str]) -> None:
        assert conn.world is not None
        value = conn.world.job_attrs.get(fields.get("key", ""))
        if value is None:
            conn.reply(True, "info-getjobattr-response",
                       [("rc", 0), ("found", "FALSE")] + self._thrid(fields))
        else:
            conn.reply(True, "info-getjobattr-response",
                       [("rc", 0), ("found", "TRUE"), ("value", value)] + self._thrid(fields))

    def _v2_info_putnodeattr(self, conn: Connection, fields: Dict[str, str]) -> None:
        key, value = fields.get("key"), fields.get("value")
        error = self._check_key(key)
        if error is None and (value is None or len(value.encode("utf-8")) > VALLEN_MAX):
            error = "missing_value" if value is None else "value_longer_than_%d" % VALLEN_MAX
        node = self.vnode[conn.slot]
        assert conn.world is not None
        world = conn.world
        if error is None:
            error = self._charge(conn, node, key, value)  # type: ignore[arg-type]
        if error:
            conn._reply_error(True, "info-putnodeattr-response", error, self._thrid(fields))
            return
        world.node_kvs.setdefault(node, {})[key] = value  # type: ignore[index,assignment]
        conn.reply(True, "info-putnodeattr-response", [("rc", 0)] + self._thrid(fields))
        waiting = []
        for waiter in self.node_waiters:
            other, wkey, thrid = waiter
            if wkey == key and self.vnode[other.slot] == node and other.world is world:
                other.reply(True, "info-getnodeattr-response",
                            [("rc", 0), ("found", "TRUE"), ("value", value)]
                            + ([("thrid", thrid)] if thrid else []))
            else:
                waiting.append(waiter)
        self.node_waiters = waiting

    def _v2_info_getnodeattr(self, conn: Connection, fields: Dict[str, str]) -> None:
        key = fields.get("key")
        error = self._check_key(key)
        if error:
            conn._reply_error(True, "info-getnodeattr-response", error, self._thrid(fields))
            return
        assert conn.world is not None
        node_kvs = conn.world.node_kvs.get(self.vnode[conn.slot], {})
        value = node_kvs.get(key)  # type: ignore[arg-type]
        if value is not None:
            conn.reply(True, "info-getnodeattr-response",
                       [("rc", 0), ("found", "TRUE"), ("value", value)] + self._thrid(fields))
        elif fields.get("wait", "FALSE").upper() == "TRUE":
            self.node_waiters.append((conn, key, fields.get("thrid")))  # type: ignore[arg-type]
        else:
            conn.reply(True, "info-getnodeattr-response",
                       [("rc", 0), ("found", "FALSE")] + self._thrid(fields))

    def _v2_name_publish(self, conn: Connection, fields: Dict[str, str]) -> None:
        error = self._name_publish(conn, fields, "name")
        if error:
            conn._reply_error(True, "name-publish-response", error, self._thrid(fields))
        else:
            conn.reply(True, "name-publish-response", [("rc", 0)] + self._thrid(fields))

    def _v2_name_unpublish(self, conn: Connection, fields: Dict[str, str]) -> None:
        error = self._name_unpublish(conn, fields, "name")
        if error:
            conn._reply_error(True, "name-unpublish-response", error, self._thrid(fields))
        else:
            conn.reply(True, "name-unpublish-response", [("rc", 0)] + self._thrid(fields))

    def _v2_name_lookup(self, conn: Connection, fields: Dict[str, str]) -> None:
        error, port = self._name_lookup(fields, "name")
        if error:
            conn._reply_error(True, "name-lookup-response", error,
                              [("found", "FALSE")] + self._thrid(fields))
        else:
            conn.reply(True, "name-lookup-response",
                       [("rc", 0), ("found", "TRUE"), ("port", port)] + self._thrid(fields))

    def _v2_finalize(self, conn: Connection, fields: Dict[str, str]) -> None:
        conn.finalized = True
        conn.reply(True, "finalize-response", [("rc", 0)] + self._thrid(fields))

    def _v2_abort(self, conn: Connection, fields: Dict[str, str]) -> None:
        self._abort(conn.slot, 1, fields.get("msg", ""))


# ---- PMI_PORT connections -------------------------------------------------------

TOKEN_LEN = 16   # bytes of a rank's one-time token (32 hex digits)
NONCE_LEN = 16   # bytes of each side's nonce in the token proof

_MASK64 = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK64


def siphash24(key: bytes, data: bytes) -> int:
    """SipHash-2-4 of @data under the 16-byte @key (the C library's pb_siphash24)."""
    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:16], "little")
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & _MASK64
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & _MASK64
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & _MASK64
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & _MASK64
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    full = len(data) & ~7
    blocks = [int.from_bytes(data[i:i + 8], "little") for i in range(0, full, 8)]
    blocks.append(int.from_bytes(data[full:] + bytes(8 - (len(data) - full)), "little")
                  | ((len(data) & 0xFF) << 56))
    for m in blocks:
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def token_proof(token: bytes, job_id: str, rank: int, server_nonce: str,
                client_nonce: str) -> str:
    """The 16 hex digits a rank answers the server's challenge with.

    SipHash-2-4 under the rank's token of
    ``pmi-auth <job id> <rank> <server nonce> <client nonce>`` (nonces in hex),
    so the answer is bound to this job, this rank and this connection's
    challenge, and the token itself never crosses the wire.
    """
    text = "pmi-auth %s %d %s %s" % (job_id, rank, server_nonce, client_nonce)
    return "%016x" % siphash24(token, text.encode("utf-8"))


class Handshake:
    """What :meth:`PortHandshake.feed` found.

    reply   bytes to send to the connection (maybe empty)
    error   a one-line reason to close the connection after sending reply
    kind    a short name of the refusal (for rate-limited logging)
    rank    the rank the connection proved to be (then serve it)
    v2      the connection speaks PMI-2 from now on
    rest    bytes that follow the handshake, for the rank's Connection
    """

    def __init__(self) -> None:
        self.reply = b""
        self.error: Optional[str] = None
        self.kind = ""
        self.rank: Optional[int] = None
        self.v2 = False
        self.rest = b""


class PortHandshake:
    """The first messages of a ``PMI_PORT`` connection, until it proves its rank.

    Naming a rank (as the C client and MPICH's Hydra do):

    - PMI-1 ``cmd=initack pmiid=<id>``;
    - the v1 line ``cmd=init pmi_version=2 ...`` (answered as usual), then a
      PMI-2 ``fullinit`` naming ``pmiid`` (else ``pmirank``).

    Then proving it: the server answers ``cmd=auth-challenge nonce=<32 hex>``
    (PMI-2: ``cmd=auth-challenge;nonce=...;``) and the client must send
    ``cmd=auth-response cnonce=<32 hex> mac=<16 hex>`` in the same wire form,
    mac being :func:`token_proof` under the rank's one-time token.  Only then
    is the rank claimed: PMI-1 gets ``cmd=initack rc=0``, ``cmd=set size=N``,
    ``cmd=set rank=R``, ``cmd=set debug=0``; PMI-2's saved ``fullinit`` is
    handed to the rank's :class:`Connection`, which answers it.

    lookup(id) returns (rank, token) for an id that may still be claimed, or a
    reason (str) why not; claim(rank) marks the rank's token used and returns
    None, or a reason (str) why it cannot be (used meanwhile).  Anything else
    before the rank is proven closes the connection; a wrong proof too.
    """

    def __init__(self, size: int, job_id: str, lookup: Callable[[str], object],
                 claim: Callable[[int], Optional[str]], nonce: Callable[[], str]):
        self.size = size
        self.job_id = job_id
        self.lookup = lookup
        self.claim = claim
        self.nonce = nonce
        self.buffer = b""
        self.v2 = False
        # set once a rank is named: (rank, token, server nonce, saved fullinit)
        self.named: Optional[Tuple[int, bytes, str, bytes]] = None

    def feed(self, data: bytes) -> Handshake:
        out = Handshake()
        self.buffer += data
        while out.error is None and out.rank is None:
            message = self._next(out)
            if message is None:
                break
            self._handle(message, out)
        return out

    def _next(self, out: Handshake) -> Optional[Tuple[bytes, bytes, bool]]:
        """(raw message, body, is_v2) of the next complete message, or None."""
        buf = self.buffer
        if self.v2 or (len(buf) >= 10 and _V2_HEADER.match(buf[:6]) and buf[6:10] == b"cmd="):
            if len(buf) < 6:
                return None
            if not _V2_HEADER.match(buf[:6]):
                out.error, out.kind = "a PMI-2 message does not start with a 6-digit length", \
                    "malformed"
                return None
            length = int(buf[:6])
            if length > MAX_V2_MESSAGE:
                out.error, out.kind = "a PMI-2 message of %d bytes" % length, "malformed"
                return None
            if len(buf) < 6 + length:
                return None
            self.buffer = buf[6 + length:]
            return buf[:6 + length], buf[6:6 + length], True
        end = buf.find(b"\n")
        if end < 0:
            if len(buf) > MAX_LINE:
                out.error, out.kind = "a PMI line longer than %d bytes" % MAX_LINE, "malformed"
            return None
        if end + 1 > MAX_LINE:
            out.error, out.kind = "a PMI line longer than %d bytes" % MAX_LINE, "malformed"
            return None
        self.buffer = buf[end + 1:]
        return buf[:end + 1], buf[:end], False

    def _refuse(self, out: Handshake, v2: bool, cmd: str, reason: str, kind: str) -> None:
        text = reason.replace(" ", "_")
        if v2:
            out.reply += format_v2(cmd, [("rc", -1), ("errmsg", text)])
        else:
            out.reply += format_v1(cmd, [("rc", -1), ("msg", text)])
        out.error = reason
        out.kind = kind

    def _name(self, out: Handshake, v2: bool, cmd: str, pmiid: Optional[str],
              saved: bytes) -> None:
        if pmiid is None or pmiid == "":
            self._refuse(out, v2, cmd, "no pmiid given", "no-rank")
            return
        got = self.lookup(pmiid)
        if isinstance(got, str):
            self._refuse(out, v2, cmd, got, "no-rank")
            return
        rank, token = got  # type: ignore[misc]
        nonce = self.nonce()
        self.named = (rank, token, nonce, saved)
        challenge = [("nonce", nonce)]
        out.reply += format_v2("auth-challenge", challenge) if v2 else \
            format_v1("auth-challenge", challenge)

    def _prove(self, out: Handshake, v2: bool, fields: Dict[str, str]) -> None:
        assert self.named is not None
        rank, token, nonce, saved = self.named
        cmd = "fullinit-response" if v2 else "initack"
        cnonce, mac = fields.get("cnonce", ""), fields.get("mac", "")
        if not re.fullmatch(r"[0-9a-f]{%d}" % (2 * NONCE_LEN), cnonce) or cnonce == nonce:
            self._refuse(out, v2, cmd, "a bad client nonce for rank %d" % rank, "bad-proof")
            return
        expected = token_proof(token, self.job_id, rank, nonce, cnonce)
        if not hmac.compare_digest(expected.encode(), mac.encode("utf-8", "replace")):
            self._refuse(out, v2, cmd, "a wrong token proof for rank %d" % rank, "bad-proof")
            return
        why = self.claim(rank)
        if why is not None:
            self._refuse(out, v2, cmd, why, "no-rank")
            return
        out.rank = rank
        if v2:
            out.v2 = True
            out.rest = saved + self.buffer
        else:
            out.reply += format_v1("initack", [("rc", 0)])
            out.reply += format_v1("set", [("size", self.size)])
            out.reply += format_v1("set", [("rank", rank)])
            out.reply += format_v1("set", [("debug", 0)])
            out.rest = self.buffer
        self.buffer = b""

    def _handle(self, message: Tuple[bytes, bytes, bool], out: Handshake) -> None:
        raw, body, v2 = message
        try:
            cmd, fields = parse_v2(body) if v2 else parse_v1(body)
        except ProtocolError as exc:
            self._refuse(out, v2, "error", "malformed message (%s) before the rank was "
                         "proven" % exc, "malformed")
            return
        if self.named is not None:
            if cmd == "auth-response":
                self._prove(out, v2, fields)
            else:
                self._refuse(out, v2, "fullinit-response" if v2 else "initack",
                             "%s instead of auth-response" % cmd, "bad-proof")
            return
        if not v2 and cmd == "init" and fields.get("pmi_version") == "2" and not self.v2:
            out.reply += format_v1("response_to_init",
                                   [("pmi_version", 2), ("pmi_subversion", 0), ("rc", 0)])
            self.v2 = True
            return
        if not v2 and cmd == "initack":
            self._name(out, False, "initack", fields.get("pmiid"), b"")
            return
        if v2 and cmd == "fullinit":
            self._name(out, True, "fullinit-response",
                       fields.get("pmiid", fields.get("pmirank")), raw)
            return
        if v2:
            self._refuse(out, True, cmd + "-response",
                         "%s before fullinit named the rank" % cmd, "no-rank")
        else:
            self._refuse(out, False, "error", "%s before initack named the rank" % cmd,
                         "no-rank")
