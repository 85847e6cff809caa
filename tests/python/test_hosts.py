"""``postbox run --hosts``: ranks started over a remote shell, PMI over TCP.

There are no real hosts here: the tests use a fake rsh, a shell script that
records its arguments, ignores the host and runs the command on this machine
through ``sh -c``, as ssh hands it to the remote login shell.  Since every
"host" is this machine (one hostname), the fake rsh also sets
``POSTBOX_VNODE=<index of the host in FAKE_RSH_HOSTS>`` on the command line,
so that the node exchange still sees one node per host; real hosts get no
POSTBOX_VNODE from the launcher (0, one node per host).
"""

from __future__ import annotations

import json
import re
import socket
import sys

import pytest

from conftest import built
from postbox import launch, paths
from test_run import HOST, assert_nothing_left, run, script

pytestmark = pytest.mark.short

FAKE_RSH = r'''#!/bin/sh
# fake rsh: record the arguments, ignore the host, run the command here
printf '%s\n' "$*" >> "$FAKE_RSH_LOG"
host=$1
shift
index=0
i=0
for name in $(echo "$FAKE_RSH_HOSTS" | tr , ' '); do
    if [ "$name" = "$host" ]; then index=$i; fi
    i=$((i + 1))
done
exec env POSTBOX_VNODE=$index sh -c "$*"
'''


@pytest.fixture
def rsh(tmp_path, monkeypatch):
    """The fake rsh; yields (its path, the log of its arguments)."""
    log = tmp_path / "rsh-argv.log"
    log.write_text("")
    monkeypatch.setenv("FAKE_RSH_LOG", str(log))
    monkeypatch.setenv("FAKE_RSH_HOSTS", "a,b,c")
    path = script(tmp_path, "fake-rsh", FAKE_RSH)
    yield path, log
    log.unlink()


def hosts_run(rsh_path, *args, **kwargs):
    return run("--rsh", rsh_path, "--pmi-address", "127.0.0.1", *args, **kwargs)


# a PMI client over PMI_PORT (PMI-1 initack, or PMI-2 fullinit with pmirank)
PORT_CLIENT = r'''
import json, os, socket, sys
host, port = os.environ["PMI_PORT"].rsplit(":", 1)
pmiid = os.environ["PMI_ID"]

class Conn:
    def __init__(self):
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.buf = b""
    def line(self, text):
        if text is not None:
            self.sock.sendall((text + "\n").encode())
        while b"\n" not in self.buf:
            data = self.sock.recv(4096)
            if not data:
                return None
            self.buf += data
        reply, self.buf = self.buf.split(b"\n", 1)
        return dict(f.split("=", 1) for f in reply.decode().split(" ") if "=" in f)
    def v2(self, body):
        data = body.encode()
        self.sock.sendall(b"%6d" % len(data) + data)
        while len(self.buf) < 6 or len(self.buf) < 6 + int(self.buf[:6]):
            data = self.sock.recv(4096)
            if not data:
                return None
            self.buf += data
        n = int(self.buf[:6]); reply, self.buf = self.buf[6:6 + n], self.buf[6 + n:]
        return dict(f.split("=", 1) for f in reply.decode().split(";") if "=" in f)
    def eof(self):
        try:
            while True:
                data = self.sock.recv(4096)
                if not data:
                    return True
        except OSError:
            return True

out = {"argv": sys.argv[1:], "secret_env": os.environ.get("POSTBOX_JOB_SECRET"),
       "fd_env": os.environ.get("PMI_FD")}
c = Conn()
if os.environ.get("MODE") == "v2":
    out["init"] = c.line("cmd=init pmi_version=2 pmi_subversion=0")
    full = c.v2("cmd=fullinit;pmirank=%s;threaded=FALSE;" % pmiid)
    out["rank"], out["size"] = int(full["rank"]), int(full["size"])
    c.v2("cmd=kvs-put;key=pb-job-secret;value=0123;")
    c.v2("cmd=kvs-fence;")
    out["secret"] = c.v2("cmd=kvs-get;key=pb-job-secret;").get("value")
else:
    first = c.line("cmd=initack pmiid=%s" % pmiid)
    sets = {}
    while "debug" not in sets:
        sets.update({k: v for k, v in c.line(None).items() if k != "cmd"})
    out["initack"], out["rank"], out["size"] = first, int(sets["rank"]), int(sets["size"])
    c.line("cmd=init pmi_version=1 pmi_subversion=1")
    kvs = c.line("cmd=get_my_kvsname")["kvsname"]
    c.line("cmd=put kvsname=%s key=pb-job-secret value=0123" % kvs)
    c.line("cmd=barrier_in")
    out["secret"] = c.line("cmd=get kvsname=%s key=pb-job-secret" % kvs).get("value")
    if out["rank"] == 0 and os.environ.get("STRANGERS"):
        refused = []
        for hello in ("cmd=initack pmiid=0", "cmd=initack pmiid=99",
                      "cmd=get kvsname=%s key=pb-job-secret" % kvs):
            s = Conn()
            reply = s.line(hello)
            refused.append([reply.get("rc"), s.eof()])
        out["strangers"] = refused
    c.line("cmd=finalize")
print(json.dumps(out), flush=True)
'''


def records(stdout: str) -> dict:
    found = {}
    for line in stdout.splitlines():
        rec = json.loads(line)
        found[rec["rank"]] = rec
    return found


@pytest.mark.parametrize("mode", ["v1", "v2"])
def test_ranks_get_rank_size_and_the_secret_from_the_kvs(tmp_path, rsh, mode):
    rsh_path, log = rsh
    prog = script(tmp_path, "port_client.py", PORT_CLIENT)
    result = hosts_run(rsh_path, "-n", 4, "--hosts", "a,b", "-x", "MODE=" + mode,
                       sys.executable, prog, "two words", "$HOME", "'q'", timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    ranks = records(result.stdout)
    assert sorted(ranks) == [0, 1, 2, 3]
    secrets = {r["secret"] for r in ranks.values()}
    assert len(secrets) == 1
    secret = secrets.pop()
    # the launcher's secret, not the value a rank tried to put
    assert re.fullmatch(r"[0-9a-f]{32}", secret)
    for r in ranks.values():
        assert r["size"] == 4 and r["secret_env"] is None and r["fd_env"] is None
        assert r["argv"] == ["two words", "$HOME", "'q'"]
    argv = log.read_text()
    assert secret not in argv and "POSTBOX_JOB_SECRET" not in argv
    lines = argv.splitlines()
    assert [line.split()[0] for line in lines].count("a") == 2
    assert [line.split()[0] for line in lines].count("b") == 2
    assert all("PMI_PORT=127.0.0.1:" in line and "POSTBOX_JOB_ID=job-" in line
               for line in lines)
    assert sorted(re.search(r"PMI_ID=(\d+)", line).group(1) for line in lines) == \
        ["0", "1", "2", "3"]


def test_connections_that_do_not_prove_a_rank_are_refused(tmp_path, rsh):
    rsh_path, _ = rsh
    prog = script(tmp_path, "port_client.py", PORT_CLIENT)
    result = hosts_run(rsh_path, "-n", 2, "--hosts", "a,b", "-x", "STRANGERS=1",
                       sys.executable, prog, timeout=30)
    assert result.returncode == 0, result.stderr
    ranks = records(result.stdout)
    assert ranks[0]["strangers"] == [["-1", True]] * 3
    refusals = re.findall(r"refused a PMI connection from 127\.0\.0\.1: (.*)", result.stderr)
    assert refusals == ["pmiid 0 was used already", "unknown pmiid 99",
                        "get before initack named the rank"]


@pytest.mark.slow
@pytest.mark.parametrize("pmi_version", ["1", "2"])
def test_job_view_over_hosts(rsh, pmi_version):
    view = built(paths.bin_dir() / "postbox-job-view")
    rsh_path, log = rsh
    result = hosts_run(rsh_path, "-n", 5, "--hosts", "a,b,c",
                       "-x", "POSTBOX_PMI_VERSION=" + pmi_version, view, timeout=60)
    assert result.returncode == 0, result.stderr
    seen = {}
    for line in result.stdout.splitlines():
        match = re.search(r"rank (\d+) size 5 node (\d+) nodes 3 name (\S+) local ([\d,]+) "
                          r"job (\S+)", line)
        assert match, line
        seen[int(match.group(1))] = match.groups()[1:]
    assert sorted(seen) == list(range(5))
    assert [seen[r][0] for r in range(5)] == ["0", "0", "1", "1", "2"]
    assert [seen[r][1] for r in range(5)] == ["%s/%d" % (HOST, n) for n in (0, 0, 1, 1, 2)]
    assert [seen[r][2] for r in range(5)] == ["0,1", "0,1", "2,3", "2,3", "4"]
    assert len({s[3] for s in seen.values()}) == 1
    assert not re.search(r"\b[0-9a-f]{32}\b", log.read_text())


def test_a_failing_remote_rank_ends_the_job(tmp_path, rsh):
    rsh_path, _ = rsh
    prog = script(tmp_path, "fail.sh",
                  '#!/bin/sh\nif [ "$PMI_ID" = 2 ]; then exit 3; fi\nexec sleep 30\n')
    result = hosts_run(rsh_path, "-n", 3, "--hosts", "a,b", prog, timeout=30)
    assert result.returncode == 3
    assert "rank 2 (node b) exited with status 3; ending the job" in result.stderr
    assert_nothing_left(str(prog))


def test_stdin_and_tagged_output_through_rsh(tmp_path, rsh):
    rsh_path, _ = rsh
    result = hosts_run(rsh_path, "-n", 2, "--hosts", "a,b", "--tag-output", "cat",
                       input="through rsh\n", timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "[0] through rsh\n"


def test_missing_rsh(tmp_path):
    result = run("-n", 2, "--hosts", "a,b", "--rsh", str(tmp_path / "no-rsh"), "true")
    assert result.returncode == 127 and "no-rsh: no such file" in result.stderr


def test_unresolvable_host_asks_for_pmi_address(monkeypatch, capfd):
    # in-process, with a resolver that knows no host (no DNS query is made)
    def no_such_host(host, *args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    assert launch.main(["-n", "2", "--hosts", "nowhere,b", "--rsh", "true", "true"]) == 2
    err = capfd.readouterr().err
    assert "cannot resolve host nowhere (Name or service not known): give --pmi-address" \
        in err


def test_postbox_rsh_is_the_default_remote_shell(tmp_path, rsh, monkeypatch):
    rsh_path, log = rsh
    monkeypatch.setenv("POSTBOX_RSH", str(rsh_path))
    result = run("-n", 1, "--hosts", "localhost", "echo", "hi", timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hi\n"
    assert log.read_text().startswith("localhost env ")
