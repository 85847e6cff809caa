"""Network namespaces for ``postbox run --netns``: one per virtual node.

Layout of the job of launcher pid P with K virtual nodes:

- a hub namespace ``pbx-P-hub`` holding the bridge ``pbxbr``;
- a namespace ``pbx-P-<k>`` per virtual node k, whose interface ``pbx0`` is
  one end of a veth pair; the other end, ``n<k>``, sits in the hub and is a
  port of the bridge;
- node k's address is the (k+1)-th of a private /16 that no route or address
  of this machine overlaps (10.213.0.0/16 unless that is taken), so node 0 is
  10.213.0.1, node 1 10.213.0.2, ...; ``lo`` is up everywhere;
- with R rails (``--rails R``), rail r > 0 repeats this with its own bridge
  ``pbxbr<r>``, hub ports ``r<r>n<k>``, node interfaces ``pbx<r>`` and the
  next free /16: two independent links between any two nodes.

Every link is created inside a namespace, never in the host's own, so
deleting the namespaces removes every link and the bridge with them.

Emulated links (``--link RATE[,DELAY[,LOSS]]``, :class:`LinkSpec`): the
kernel's traffic control shapes both ends of every node's veth pair, so each
node sends at most RATE (a tbf on its own interface) and receives at most
RATE (a tbf on the hub's end), like a full-duplex port of a switch; DELAY
(netem) and LOSS (a classic-BPF filter that drops a random share of the IP
packets) are applied on the hub's end only, so a packet between two nodes is
delayed once and may be lost once in each direction: a round trip takes
2 x DELAY more.  The qdiscs and filters live on the veths, which go with the
namespaces.

Cleanup: the launcher removes the namespaces on every way out; a guardian
process (:func:`start_guardian`, forked before anything is created, in its
own session) waits on a pipe from the launcher and removes whatever is left
of ``pbx-P-*`` when that pipe closes, which is also when the launcher dies
of SIGKILL.  Each ``postbox run --netns`` first removes the ``pbx-P-*``
namespaces of launchers P that no longer exist (:func:`sweep_stale`).  No
other namespace is ever touched.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import re
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import List, Optional, Tuple

PREFIX = "pbx-"
NAME_RE = re.compile(r"^pbx-([0-9]+)-(hub|[0-9]+)$")
NETNS_DIR = "/run/netns"
BRIDGE = "pbxbr"
NODE_IF = "pbx0"
# candidate subnets, first one that overlaps nothing of this machine wins
CANDIDATES = ["10.%d.0.0/16" % b for b in range(213, 250)] + \
             ["172.%d.0.0/16" % b for b in range(29, 32)]
MAX_NODES = 65000
MAX_RAILS = 4
DONE = b"d"   # the launcher writes it before closing the pipe after its own cleanup
IP_TIMEOUT = 20.0

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_REC = 0x4000
MS_SLAVE = 1 << 19


class NetnsError(Exception):
    """Setting up the namespaces failed; the message says which step and why."""


class LinkUnsupported(NetnsError):
    """This kernel or machine cannot shape links as --link asks (a usage error)."""


def ip_command() -> Optional[str]:
    found = shutil.which("ip")
    if found:
        return found
    for path in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"):
        if os.access(path, os.X_OK):
            return path
    return None


def unavailable() -> Optional[str]:
    """Why --netns cannot work here (one line), or None when it can."""
    if os.geteuid() != 0:
        return "needs root (creating network namespaces takes CAP_SYS_ADMIN and CAP_NET_ADMIN)"
    if ip_command() is None:
        return "needs the `ip` command of iproute2, which is not installed"
    if not os.path.exists("/proc/self/ns/net"):
        return "this kernel has no network namespaces (/proc/self/ns/net is missing)"
    return None


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``ip ARGS``; NetnsError with ip's own message when it fails and @check."""
    command = ip_command()
    if command is None:
        raise NetnsError("the `ip` command is missing")
    try:
        result = subprocess.run([command, *args], stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=IP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise NetnsError("`ip %s` did not finish within %g s" % (" ".join(args), IP_TIMEOUT)) \
            from None
    if check and result.returncode != 0:
        raise NetnsError("`ip %s` failed: %s" % (" ".join(args),
                                                 result.stderr.strip() or "exit status %d"
                                                 % result.returncode))
    return result


# ---- emulated links (--link) ----------------------------------------------------

RATE_UNITS = {"": 1, "k": 10 ** 3, "m": 10 ** 6, "g": 10 ** 9, "t": 10 ** 12}
MIN_RATE = 8 * 10 ** 3      # bit/s
MAX_RATE = 10 ** 12
MAX_DELAY_US = 10 * 10 ** 6
DELAY_UNITS = {"us": 1, "ms": 10 ** 3, "s": 10 ** 6}
# tbf: bursts of max(BURST_MIN, BURST_TIME at the rate) pass at line speed;
# the queue holds QUEUE_TIME at the rate, within [QUEUE_MIN, QUEUE_MAX] bytes
BURST_MIN = 4096
BURST_TIME = 0.001
QUEUE_TIME = 0.1
QUEUE_MIN = 64 * 1024
QUEUE_MAX = 32 * 1024 * 1024
NETEM_MIN_LIMIT = 1000      # packets
WIRE_PACKET = 1514          # bytes of an Ethernet frame at the veths' MTU of 1500
# classic BPF on clsact egress: drop (TC_ACT_SHOT) when a random 32-bit number
# is below the threshold, else pass (TC_ACT_OK); the load at SKF_AD_OFF +
# SKF_AD_RANDOM (-4096 + 56) is the kernel's random number
_SKF_AD_RANDOM = (1 << 32) - 4096 + 56
_LOSS_PROGRAM = "4,32 0 0 %d,53 1 0 %%d,6 0 0 2,6 0 0 0" % _SKF_AD_RANDOM


@dataclass(frozen=True)
class LinkSpec:
    """What ``--link RATE[,DELAY[,LOSS]]`` asks of every link: @rate in
    bit/s, the one-way @delay_us in microseconds (0: none) and the @loss
    of packets in percent (0: none)."""

    rate: int
    delay_us: int = 0
    loss: float = 0.0

    def describe(self) -> str:
        """The spec in tc's own words, e.g. ``100mbit, 50us, 0.1%``."""
        words = [format_rate(self.rate)]
        if self.delay_us:
            words.append(format_delay(self.delay_us))
        if self.loss:
            words.append("%g%%" % self.loss)
        return ", ".join(words)


def format_rate(rate: int) -> str:
    """@rate (bit/s) in tc's unit: 10mbit, 1gbit, 1500kbit, 64000bit."""
    for unit, scale in (("t", 10 ** 12), ("g", 10 ** 9), ("m", 10 ** 6), ("k", 10 ** 3)):
        if rate >= scale and rate % scale == 0:
            return "%d%sbit" % (rate // scale, unit)
    return "%dbit" % rate


def format_delay(delay_us: int) -> str:
    """@delay_us in tc's unit: 50us, 1ms, 2s."""
    if delay_us % 10 ** 6 == 0:
        return "%ds" % (delay_us // 10 ** 6)
    if delay_us % 10 ** 3 == 0:
        return "%dms" % (delay_us // 10 ** 3)
    return "%dus" % delay_us


def parse_rate(text: str) -> int:
    """A rate such as 10mbit, 100Mbit, 10M, 1G or 1.5gbit in bit/s (SI
    units: k = 1000); ValueError saying what is wrong."""
    match = re.match(r"^([0-9]+(?:\.[0-9]+)?)([kmgt]?)(bit)?$", text.strip(), re.I)
    if not match or not (match.group(2) or match.group(3)):
        if re.match(r"^[0-9.]+[kmgt]?bps$", text.strip(), re.I):
            raise ValueError("RATE %r: say bit (10mbit); tc's bps means bytes per second"
                             % text)
        raise ValueError("RATE wants a number of bit/s with a unit, like 10mbit, 100M or "
                         "1gbit, not %r" % text)
    rate = float(match.group(1)) * RATE_UNITS[match.group(2).lower()]
    if not MIN_RATE <= rate <= MAX_RATE:
        raise ValueError("RATE %r is outside 8kbit to 1tbit" % text)
    return int(round(rate))


def parse_delay(text: str) -> int:
    """A one-way delay such as 50us, 1ms, 0.5ms or 0, in microseconds;
    ValueError saying what is wrong."""
    text = text.strip()
    if text in ("", "0"):
        return 0
    match = re.match(r"^([0-9]+(?:\.[0-9]+)?)(us|ms|s)$", text, re.I)
    if not match:
        raise ValueError("DELAY wants a time with a unit, like 50us, 1ms or 0, not %r" % text)
    delay = float(match.group(1)) * DELAY_UNITS[match.group(2).lower()]
    if delay != 0 and (delay < 1 or delay > MAX_DELAY_US):
        raise ValueError("DELAY %r is outside 1us to 10s" % text)
    return int(round(delay))


def parse_loss(text: str) -> float:
    """A share of packets lost such as 0.1% or 0, in percent; ValueError
    saying what is wrong."""
    text = text.strip()
    if text in ("", "0"):
        return 0.0
    match = re.match(r"^([0-9]+(?:\.[0-9]+)?)%$", text)
    if not match:
        raise ValueError("LOSS wants a percentage, like 0.1%%, not %r" % text)
    loss = float(match.group(1))
    if not loss < 100:
        raise ValueError("LOSS %r: a link that loses every packet carries nothing; "
                         "give less than 100%%" % text)
    return loss


def parse_link(text: str) -> LinkSpec:
    """``RATE[,DELAY[,LOSS]]`` (e.g. ``100mbit,50us,0.1%``) as a LinkSpec;
    ValueError saying which field is wrong."""
    fields = text.split(",")
    if len(fields) > 3:
        raise ValueError("--link wants RATE[,DELAY[,LOSS]], not %r" % text)
    fields += [""] * (3 - len(fields))
    return LinkSpec(parse_rate(fields[0]), parse_delay(fields[1]), parse_loss(fields[2]))


def tc_command() -> Optional[str]:
    """The path of iproute2's ``tc``, or None."""
    found = shutil.which("tc")
    if found:
        return found
    for path in ("/usr/sbin/tc", "/sbin/tc", "/usr/bin/tc", "/bin/tc"):
        if os.access(path, os.X_OK):
            return path
    return None


def tbf_args(rate: int) -> List[str]:
    """The tbf options for @rate: its burst and queue (see BURST_*, QUEUE_*)."""
    burst = max(BURST_MIN, int(rate / 8 * BURST_TIME))
    limit = min(max(QUEUE_MIN, int(rate / 8 * QUEUE_TIME)), QUEUE_MAX)
    return ["tbf", "rate", "%dbit" % rate, "burst", str(burst), "limit", str(limit)]


def loss_threshold(loss: float) -> int:
    """The 32-bit threshold below which the loss filter drops a packet."""
    return min((1 << 32) - 1, int(round(loss / 100.0 * (1 << 32))))


def node_side_commands(spec: LinkSpec, namespace: str, device: str) -> List[List[str]]:
    """tc argv (without ``tc``) shaping what node @namespace sends on
    @device: RATE only (DELAY and LOSS are the hub's, see hub_side_commands)."""
    return [["-n", namespace, "qdisc", "add", "dev", device, "root", "handle", "1:",
             *tbf_args(spec.rate)]]


def hub_side_commands(spec: LinkSpec, hub: str, port: str) -> List[List[str]]:
    """tc argv (without ``tc``) shaping what the hub's port @port sends
    towards its node: DELAY (netem, parent of the tbf), RATE (tbf), LOSS
    (a classic-BPF filter on the clsact egress hook, IPv4 packets only)."""
    commands = []
    if spec.delay_us:
        in_flight = spec.rate / 8 * spec.delay_us / 1e6 / WIRE_PACKET
        limit = max(NETEM_MIN_LIMIT, int(in_flight * 2) + 1)
        commands.append(["-n", hub, "qdisc", "add", "dev", port, "root", "handle", "1:",
                         "netem", "delay", "%dus" % spec.delay_us, "limit", str(limit)])
        commands.append(["-n", hub, "qdisc", "add", "dev", port, "parent", "1:1", "handle",
                         "10:", *tbf_args(spec.rate)])
    else:
        commands.append(["-n", hub, "qdisc", "add", "dev", port, "root", "handle", "1:",
                         *tbf_args(spec.rate)])
    if spec.loss:
        commands.append(["-n", hub, "qdisc", "add", "dev", port, "clsact"])
        commands.append(["-n", hub, "filter", "add", "dev", port, "egress", "protocol", "ip",
                         "bpf", "da", "bytecode", _LOSS_PROGRAM % loss_threshold(spec.loss)])
    return commands


def tc(*args: str) -> None:
    """Run ``tc ARGS``; LinkUnsupported when the kernel lacks the qdisc or
    filter asked for, NetnsError for any other failure."""
    command = tc_command()
    if command is None:
        raise LinkUnsupported("--link needs the `tc` command of iproute2, which is not "
                              "installed")
    try:
        result = subprocess.run([command, *args], stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=IP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise NetnsError("`tc %s` did not finish within %g s" % (" ".join(args), IP_TIMEOUT)) \
            from None
    if result.returncode == 0:
        return
    message = result.stderr.strip() or "exit status %d" % result.returncode
    if "kind is unknown" in message or "Unknown filter" in message \
            or "Operation not supported" in message:
        kind = next((word for word in ("netem", "tbf", "clsact", "bpf") if word in args), "?")
        needs = {"netem": "DELAY needs the netem qdisc (CONFIG_NET_SCH_NETEM)",
                 "tbf": "RATE needs the tbf qdisc (CONFIG_NET_SCH_TBF)",
                 "clsact": "LOSS needs the clsact qdisc (CONFIG_NET_SCH_INGRESS)",
                 "bpf": "LOSS needs the bpf classifier (CONFIG_NET_CLS_BPF)"}.get(kind, kind)
        raise LinkUnsupported("--link: this kernel cannot shape the links: %s, which it "
                              "lacks (tc: %s)" % (needs, message.splitlines()[0]))
    raise NetnsError("`tc %s` failed: %s" % (" ".join(args), message))


def list_namespaces() -> List[str]:
    """Every named network namespace (``ip netns list``)."""
    result = ip("netns", "list", check=False)
    names = []
    for line in result.stdout.splitlines():
        if line.strip():
            names.append(line.split()[0])
    return names


def job_namespaces(pid: int) -> List[str]:
    """The namespaces of the job whose launcher is @pid (hub last)."""
    names = [n for n in list_namespaces()
             if NAME_RE.match(n) and int(NAME_RE.match(n).group(1)) == pid]  # type: ignore
    return sorted(names, key=lambda n: (n.endswith("-hub"), n))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_inside(name: str) -> None:
    """SIGKILL every process living in namespace @name."""
    result = ip("netns", "pids", name, check=False)
    for word in result.stdout.split():
        if word.isdigit() and int(word) != os.getpid():
            try:
                os.kill(int(word), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def remove_job(pid: int, kill: bool = True) -> List[str]:
    """Remove every ``pbx-<pid>-*`` namespace (and so its links); the errors.

    With @kill, the processes still inside them are killed first, so that the
    namespaces themselves (not only their names) go away.
    """
    errors = []
    for name in job_namespaces(pid):
        if kill:
            _kill_inside(name)
        result = ip("netns", "delete", name, check=False)
        if result.returncode != 0 and os.path.exists(os.path.join(NETNS_DIR, name)):
            errors.append("%s: %s" % (name, result.stderr.strip()))
    return errors


def sweep_stale(own_pid: int) -> List[str]:
    """Remove the namespaces of launchers that no longer exist; their names."""
    removed = []
    for name in list_namespaces():
        match = NAME_RE.match(name)
        if not match:
            continue
        pid = int(match.group(1))
        if pid == own_pid or pid_alive(pid):
            continue
        if ip("netns", "delete", name, check=False).returncode == 0:
            removed.append(name)
    return removed


def _networks_in_use() -> List[ipaddress.IPv4Network]:
    """Every IPv4 prefix in this namespace's routes (all tables) and addresses."""
    found = []
    for args in (("-4", "-o", "route", "show", "table", "all"), ("-4", "-o", "addr", "show")):
        result = ip(*args, check=False)
        for text in re.findall(r"\b(\d+\.\d+\.\d+\.\d+(?:/\d+)?)", result.stdout):
            try:
                found.append(ipaddress.IPv4Network(text, strict=False))
            except ValueError:
                continue
    return found


def choose_subnets(count: int = 1) -> List[ipaddress.IPv4Network]:
    """The first @count candidate /16s that overlap no route or address of this machine."""
    used = _networks_in_use()
    chosen: List[ipaddress.IPv4Network] = []
    for text in CANDIDATES:
        net = ipaddress.IPv4Network(text)
        if not any(net.overlaps(other) for other in used):
            chosen.append(net)
            if len(chosen) == count:
                return chosen
    raise NetnsError("fewer than %d candidate private subnets (%s ... %s) overlap no route "
                     "of this machine" % (count, CANDIDATES[0], CANDIDATES[-1]))


def choose_subnet() -> ipaddress.IPv4Network:
    """The first candidate /16 that overlaps no route or address of this machine."""
    return choose_subnets(1)[0]


class JobNetwork:
    """The namespaces, bridge and veth pairs of one job."""

    def __init__(self, pid: int, nodes: int, subnet: Optional[ipaddress.IPv4Network] = None,
                 rails: int = 1, link: Optional[LinkSpec] = None):
        if nodes > MAX_NODES:
            raise NetnsError("--netns supports at most %d virtual nodes" % MAX_NODES)
        if not 1 <= rails <= MAX_RAILS:
            raise NetnsError("--netns supports 1 to %d rails" % MAX_RAILS)
        self.pid = pid
        self.nodes = nodes
        self.rails = rails
        self.link = link
        self.subnets: List[ipaddress.IPv4Network] = [subnet] if subnet is not None else []
        self.hub = "%s%d-hub" % (PREFIX, pid)
        self.fds: List[int] = []

    @property
    def subnet(self) -> Optional[ipaddress.IPv4Network]:
        return self.subnets[0] if self.subnets else None

    def name(self, node: int) -> str:
        return "%s%d-%d" % (PREFIX, self.pid, node)

    def address(self, node: int, rail: int = 0) -> str:
        """Node @node's address on rail @rail."""
        return str(self.subnets[rail].network_address + node + 1)

    def addresses(self, node: int) -> List[str]:
        """Node @node's addresses, in rail order."""
        return [self.address(node, rail) for rail in range(self.rails)]

    @staticmethod
    def port(node: int, rail: int = 0) -> str:
        """The hub's end of node @node's veth pair on rail @rail (set it down to cut
        that link)."""
        return "n%d" % node if rail == 0 else "r%dn%d" % (rail, node)

    def setup(self) -> None:
        """Create everything; NetnsError (with what is made so far left for remove)."""
        if len(self.subnets) < self.rails:
            chosen = [net for net in choose_subnets(self.rails + len(self.subnets))
                      if net not in self.subnets]
            self.subnets += chosen[:self.rails - len(self.subnets)]
        ip("netns", "add", self.hub)
        ip("-n", self.hub, "link", "set", "lo", "up")
        for rail in range(self.rails):
            bridge = BRIDGE if rail == 0 else "%s%d" % (BRIDGE, rail)
            ip("-n", self.hub, "link", "add", bridge, "type", "bridge")
            ip("-n", self.hub, "link", "set", bridge, "up")
        for node in range(self.nodes):
            name = self.name(node)
            ip("netns", "add", name)
            for rail in range(self.rails):
                port, bridge = self.port(node, rail), BRIDGE if rail == 0 else "%s%d" % (BRIDGE,
                                                                                         rail)
                node_if = self.node_interface(rail)
                ip("-n", self.hub, "link", "add", port, "type", "veth", "peer", "name", node_if,
                   "netns", name)
                ip("-n", self.hub, "link", "set", port, "master", bridge, "up")
                ip("-n", name, "addr", "add", "%s/%d" % (self.address(node, rail),
                                                         self.subnets[rail].prefixlen),
                   "dev", node_if)
                ip("-n", name, "link", "set", node_if, "up")
                if self.link is not None:
                    self.shape(node, rail)
            ip("-n", name, "link", "set", "lo", "up")
        for node in range(self.nodes):
            try:
                self.fds.append(os.open(os.path.join(NETNS_DIR, self.name(node)),
                                        os.O_RDONLY | os.O_CLOEXEC))
            except OSError as exc:
                raise NetnsError("cannot open %s: %s" % (self.name(node), exc.strerror)) \
                    from None

    @staticmethod
    def node_interface(rail: int = 0) -> str:
        """Node's end of its veth pair on rail @rail."""
        return NODE_IF if rail == 0 else "pbx%d" % rail

    def shape(self, node: int, rail: int = 0) -> None:
        """Apply the --link shaping to both ends of node @node's link on rail
        @rail; LinkUnsupported when this kernel cannot, NetnsError otherwise."""
        assert self.link is not None
        node_if = self.node_interface(rail)
        for args in node_side_commands(self.link, self.name(node), node_if):
            tc(*args)
        if self.link.loss:
            # TCP then sends one packet per buffer: the loss is per wire packet,
            # not per 64 KiB segment
            ip("-n", self.name(node), "link", "set", "dev", node_if, "gso_max_segs", "1")
        for args in hub_side_commands(self.link, self.hub, self.port(node, rail)):
            tc(*args)

    def close_fds(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []

    def remove(self) -> List[str]:
        self.close_fds()
        return remove_job(self.pid)


# ---- entering a namespace (between fork and exec) ------------------------------

_libc = None


def _get_libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def prepare_libc() -> None:
    """Load libc in the parent, so the forked child only calls into it."""
    _get_libc()


def enter(fd: int) -> Optional[str]:
    """Join the network namespace open on @fd (this process; call after fork).

    Like ``ip netns exec``, also gives the process a private mount namespace
    with a fresh /sys, so /sys/class/net shows the namespace's interfaces
    (best effort: without it only /sys is stale).  Returns an error text.
    """
    libc = _get_libc()
    if libc.setns(fd, CLONE_NEWNET) != 0:
        return "setns: %s" % os.strerror(ctypes.get_errno())
    if libc.unshare(CLONE_NEWNS) == 0:
        if libc.mount(b"none", b"/", None, MS_REC | MS_SLAVE, None) == 0:
            libc.mount(b"sysfs", b"/sys", b"sysfs", 0, None)
    return None


# ---- the guardian ---------------------------------------------------------------

def _guardian_main(pid: int, read_fd: int) -> None:
    os.setsid()
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        signal.set_wakeup_fd(-1)
    except (ValueError, OSError):
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.dup2(read_fd, 3)
    os.closerange(4, max(65536, resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
    clean = False
    while True:
        try:
            data = os.read(3, 64)
        except InterruptedError:
            continue
        except OSError:
            break
        if not data:
            break
        clean = clean or DONE in data
    # after a crash, an `ip netns add` of the launcher may still be finishing:
    # a second pass catches what it made
    for delay in (0.0,) if clean else (0.0, 0.3):
        time.sleep(delay)
        try:
            remove_job(pid)
        except Exception:  # noqa: BLE001 - nothing to report to
            pass


def start_guardian(pid: int) -> Tuple[int, int]:
    """Fork the guardian of job @pid; (its pid, the pipe end the launcher keeps).

    The guardian removes every ``pbx-<pid>-*`` namespace (killing what runs
    inside) once the pipe is closed: by :func:`stop_guardian`, or by the
    kernel when the launcher dies.  The launcher's end is close-on-exec, so
    ranks never hold it.
    """
    read_fd, write_fd = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            _guardian_main(pid, read_fd)
        finally:
            os._exit(0)
    os.close(read_fd)
    return child, write_fd


def stop_guardian(guardian: int, write_fd: int, wait: float = 3.0) -> None:
    """After the launcher's own cleanup: release the guardian and reap it.

    It makes one last check for ``pbx-<pid>-*`` namespaces and exits.
    """
    try:
        os.write(write_fd, DONE)
    except OSError:
        pass
    try:
        os.close(write_fd)
    except OSError:
        pass
    deadline = time.monotonic() + wait
    while True:
        try:
            done, _ = os.waitpid(guardian, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(0.01)
