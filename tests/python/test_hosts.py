"""``postbox run --hosts``: ranks started over a remote shell, PMI over TCP.

There are no real hosts here: the tests use a fake rsh, a shell script that
records its arguments, ignores the host and runs the command on this machine
through ``sh -c``, as ssh hands it to the remote login shell.  Since every
"host" is this machine (one hostname), the fake rsh also sets
``POSTBOX_VNODE=<index of the host in FAKE_RSH_HOSTS>`` on the command line,
so that the node exchange still sees one node per host; real hosts get no
POSTBOX_VNODE from the launcher (0, one node per host).  The hosts are
loopback addresses (127.0.0.1, 127.0.0.2, ...), since the PMI port accepts
only the hosts' addresses; every connection comes from 127.0.0.1, the
address the PMI port listens on.
"""

from __future__ import annotations

import json
import re
import socket
import sys

import pytest

from conftest import built
from postbox import hosts, launch, launchopts, paths
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
    monkeypatch.setenv("FAKE_RSH_HOSTS", ",".join(HOSTS))
    path = script(tmp_path, "fake-rsh", FAKE_RSH)
    yield path, log
    log.unlink()


HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
A, B, C = HOSTS


def hosts_run(rsh_path, *args, **kwargs):
    return run("--rsh", rsh_path, "--pmi-address", "127.0.0.1", *args, **kwargs)


# a PMI client over PMI_PORT (PMI-1 initack, or PMI-2 fullinit with pmirank),
# proving its token (from the environment the rsh wrapper set) as the C client does
PORT_CLIENT = r"""
import json, os, secrets, socket, sys
from postbox.pmi_server import token_proof
host, port = os.environ["PMI_PORT"].rsplit(":", 1)
pmiid = os.environ["PMI_ID"]
token = bytes.fromhex(os.environ["POSTBOX_PMI_TOKEN"])
job = os.environ["POSTBOX_JOB_ID"]

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

def proof(challenge, rank, key=token):
    cnonce = secrets.token_hex(16)
    return cnonce, token_proof(key, job, rank, challenge["nonce"], cnonce)

if os.environ.get("FLOOD") and pmiid == "0":
    import time
    # from an address that is not one of the job's hosts: closed at once
    stranger = socket.socket()
    stranger.bind(("127.0.0.9", 0))
    stranger.connect((host, int(port)))
    stranger.settimeout(5)
    flood = {"stranger_closed": stranger.recv(100) == b""}
    # idle connections, more than one address may hold: the oldest make room
    idle = [socket.create_connection((host, int(port))) for _ in range(40)]
    start = time.monotonic()
    idle[-1].settimeout(10)
    flood["idle_closed"] = idle[-1].recv(100) == b""
    flood["idle_seconds"] = time.monotonic() - start
    flood["idle_left"] = len(idle)

out = {"argv": sys.argv[1:], "secret": os.environ.get("POSTBOX_JOB_SECRET"),
       "token_env": os.environ.get("POSTBOX_PMI_TOKEN"), "fd_env": os.environ.get("PMI_FD")}
def connect_and_challenge():
    # as the library's client does: a connection closed before the proof
    # (the launcher making room under a flood, a handshake time run out
    # on a loaded machine) is made again, for up to 15 s
    import time
    deadline = time.monotonic() + 15
    while True:
        c = Conn()
        try:
            if os.environ.get("MODE") == "v2":
                out["init"] = c.line("cmd=init pmi_version=2 pmi_subversion=0")
                challenge = c.v2("cmd=fullinit;pmirank=%s;threaded=FALSE;" % pmiid)
            else:
                challenge = c.line("cmd=initack pmiid=%s" % pmiid)
        except (ConnectionResetError, BrokenPipeError):
            challenge = None
        if challenge is not None or time.monotonic() > deadline:
            return c, challenge
        time.sleep(0.05)

c, challenge = connect_and_challenge()
if os.environ.get("MODE") == "v2":
    out["challenge"] = challenge["cmd"]
    full = c.v2("cmd=auth-response;cnonce=%s;mac=%s;" % proof(challenge, int(pmiid)))
    out["rank"], out["size"] = int(full["rank"]), int(full["size"])
    c.v2("cmd=kvs-fence;")
    out["kvs_secret"] = c.v2("cmd=kvs-get;key=pb-job-secret;").get("found")
else:
    out["challenge"] = challenge["cmd"]
    first = c.line("cmd=auth-response cnonce=%s mac=%s" % proof(challenge, int(pmiid)))
    sets = {}
    while "debug" not in sets:
        sets.update({k: v for k, v in c.line(None).items() if k != "cmd"})
    out["initack"], out["rank"], out["size"] = first, int(sets["rank"]), int(sets["size"])
    c.line("cmd=init pmi_version=1 pmi_subversion=1")
    kvs = c.line("cmd=get_my_kvsname")["kvsname"]
    c.line("cmd=barrier_in")
    out["kvs_secret"] = c.line("cmd=get kvsname=%s key=pb-job-secret" % kvs).get("rc")
    if out["rank"] == 0 and os.environ.get("STRANGERS"):
        refused = []
        # rank 0's own token again, an unknown id, no id
        for hello in ("cmd=initack pmiid=0", "cmd=initack pmiid=99",
                      "cmd=get kvsname=%s key=pb-job-secret" % kvs):
            s = Conn()
            reply = s.line(hello)
            refused.append([reply.get("rc"), s.eof()])
        out["strangers"] = refused
    c.line("cmd=finalize")
if os.environ.get("FLOOD") and pmiid == "0":
    out["flood"] = flood
print(json.dumps(out), flush=True)
"""


def records(stdout: str) -> dict:
    found = {}
    for line in stdout.splitlines():
        rec = json.loads(line)
        found[rec["rank"]] = rec
    return found


@pytest.mark.parametrize("mode", ["v1", "v2"])
def test_ranks_prove_their_token_and_get_the_secret_on_stdin(tmp_path, rsh, mode):
    rsh_path, log = rsh
    prog = script(tmp_path, "port_client.py", PORT_CLIENT)
    result = hosts_run(rsh_path, "-n", 4, "--hosts", "%s,%s" % (A, B), "-x", "MODE=" + mode,
                       sys.executable, prog, "two words", "$HOME", "'q'", timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    ranks = records(result.stdout)
    assert sorted(ranks) == [0, 1, 2, 3]
    secrets = {r["secret"] for r in ranks.values()}
    assert len(secrets) == 1
    secret = secrets.pop()
    assert re.fullmatch(r"[0-9a-f]{32}", secret)
    tokens = {r["token_env"] for r in ranks.values()}
    assert len(tokens) == 4 and all(re.fullmatch(r"[0-9a-f]{32}", t) for t in tokens)
    for r in ranks.values():
        assert r["size"] == 4 and r["fd_env"] is None
        assert r["challenge"] == "auth-challenge"
        assert r["argv"] == ["two words", "$HOME", "'q'"]
        # the secret is not in the key-value space (it never crosses the PMI wire)
        assert r["kvs_secret"] in ("-1", "FALSE")
    argv = log.read_text()
    assert secret not in argv and "POSTBOX_JOB_SECRET=" not in argv
    assert not any(token in argv for token in tokens)
    lines = argv.splitlines()
    assert [line.split()[0] for line in lines].count(A) == 2
    assert [line.split()[0] for line in lines].count(B) == 2
    assert all("PMI_PORT=127.0.0.1:" in line and "POSTBOX_JOB_ID=job-" in line
               for line in lines)
    assert sorted(re.search(r"PMI_ID=(\d+)", line).group(1) for line in lines) == \
        ["0", "1", "2", "3"]


def test_connections_that_do_not_prove_a_rank_are_refused(tmp_path, rsh):
    rsh_path, _ = rsh
    prog = script(tmp_path, "port_client.py", PORT_CLIENT)
    result = hosts_run(rsh_path, "-n", 2, "--hosts", "%s,%s" % (A, B), "-x", "STRANGERS=1",
                       sys.executable, prog, timeout=30)
    assert result.returncode == 0, result.stderr
    ranks = records(result.stdout)
    assert ranks[0]["strangers"] == [["-1", True]] * 3
    refusals = re.findall(r"refused a PMI connection from 127\.0\.0\.1: (.*)", result.stderr)
    # one message per kind of refusal (here: no rank that can be claimed) and
    # interval, the rest counted at the end
    assert refusals == ["the token of rank 0 was used already"]
    assert "refused 2 more PMI connections (no-rank) without a message" in result.stderr


def test_strangers_and_idle_connections_do_not_keep_the_ranks_out(tmp_path, rsh,
                                                                   monkeypatch):
    rsh_path, _ = rsh
    monkeypatch.setenv("POSTBOX_PMI_HANDSHAKE_TIME", "1")
    prog = script(tmp_path, "port_client.py", PORT_CLIENT)
    result = hosts_run(rsh_path, "-n", 3, "--hosts", "%s,%s" % (A, B), "-x", "FLOOD=1",
                       sys.executable, prog, timeout=30)
    assert result.returncode == 0, result.stderr
    ranks = records(result.stdout)
    assert sorted(ranks) == [0, 1, 2]
    flood = ranks[0]["flood"]
    assert flood["stranger_closed"] and flood["idle_closed"]
    assert 0.5 < flood["idle_seconds"] < 5
    assert "refused a PMI connection from 127.0.0.9: not an address of the job's hosts" \
        in result.stderr
    assert "closed an unproven PMI connection from 127.0.0.1 to make room (16 from that " \
        "address at most, 1024 in all)" in result.stderr
    assert "refused a PMI connection from 127.0.0.1: it did not prove a rank within 1 s" \
        in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("pmi_version", ["1", "2"])
def test_job_view_over_hosts(rsh, pmi_version):
    view = built(paths.bin_dir() / "postbox-job-view")
    rsh_path, log = rsh
    result = hosts_run(rsh_path, "-n", 5, "--hosts", ",".join(HOSTS),
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
    result = hosts_run(rsh_path, "-n", 3, "--hosts", "%s,%s" % (A, B), prog, timeout=30)
    assert result.returncode == 3
    assert "rank 2 (node %s) exited with status 3; ending the job" % B in result.stderr
    assert_nothing_left(str(prog))


def test_stdin_and_tagged_output_through_rsh(tmp_path, rsh):
    rsh_path, _ = rsh
    result = hosts_run(rsh_path, "-n", 2, "--hosts", "%s,%s" % (A, B), "--tag-output", "cat",
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
    monkeypatch.setenv("POSTBOX_HOST_WAIT", "0")
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


# ---- the secret and the token leave no trace in /proc/<pid>/environ -----------------

ENVIRON_CHECK = r"""
import ctypes, json, os, sys
secret = os.environ.get("POSTBOX_JOB_SECRET", "")
token = os.environ.get("POSTBOX_PMI_TOKEN", "")
def raw():
    with open("/proc/self/environ", "rb") as f:
        return f.read()
before = raw()
lib = ctypes.CDLL(sys.argv[1])
assert lib.postbox_job_init() == 0
after = raw()
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
print(json.dumps({
    "rank": lib.postbox_job_rank(),
    "had": [bool(secret) and secret.encode() in before, bool(token) and token.encode() in before],
    "left": [bool(secret) and secret.encode() in after, bool(token) and token.encode() in after,
             b"POSTBOX_JOB_SECRET=" in after, b"POSTBOX_PMI_TOKEN=" in after],
    "getenv": [libc.getenv(b"POSTBOX_JOB_SECRET") is not None,
               libc.getenv(b"POSTBOX_PMI_TOKEN") is not None],
}), flush=True)
lib.postbox_job_finalize()
"""


@pytest.mark.parametrize("where", ["local", "hosts"])
def test_no_secret_or_token_in_proc_environ_after_job_init(tmp_path, rsh, where):
    lib = built(paths.build_dir() / "lib" / "libpostbox.so.0")
    prog = script(tmp_path, "environ_check.py", ENVIRON_CHECK)
    rsh_path, _ = rsh
    if where == "hosts":
        result = hosts_run(rsh_path, "-n", 2, "--hosts", "%s,%s" % (A, B),
                           sys.executable, prog, lib, timeout=30)
    else:
        result = run("-n", 2, sys.executable, prog, lib, timeout=30)
    assert result.returncode == 0, result.stderr
    ranks = records(result.stdout)
    assert sorted(ranks) == [0, 1]
    for r in ranks.values():
        # the rank was handed the secret (and over --hosts its token) in its environment
        assert r["had"] == [True, where == "hosts"]
        assert r["left"] == [False, False, False, False]
        assert r["getenv"] == [False, False]


# ---- the token proof, in-process -----------------------------------------------------

def _handshake(claimed):
    from postbox import pmi_server
    token = bytes(range(16))

    def lookup(pmiid):
        if pmiid != "1":
            return "unknown pmiid %s" % pmiid
        return "the token of rank 1 was used already" if claimed else (1, token)

    def claim(rank):
        if claimed:
            return "the token of rank 1 was used already"
        claimed.append(rank)
        return None

    return pmi_server, token, pmi_server.PortHandshake(2, "job-x", lookup, claim,
                                                       lambda: "ab" * 16)


def test_token_proof_accepts_the_right_mac_once():
    claimed = []
    pmi, token, hs = _handshake(claimed)
    out = hs.feed(b"cmd=initack pmiid=1\n")
    assert out.reply == b"cmd=auth-challenge nonce=" + b"ab" * 16 + b"\n" and out.rank is None
    mac = pmi.token_proof(token, "job-x", 1, "ab" * 16, "cd" * 16)
    out = hs.feed(b"cmd=auth-response cnonce=%s mac=%s\ncmd=get_maxes\n"
                  % (b"cd" * 16, mac.encode()))
    assert out.rank == 1 and out.error is None and claimed == [1]
    assert out.reply.startswith(b"cmd=initack rc=0\n") and out.rest == b"cmd=get_maxes\n"
    # the same token (even with a right proof) is refused from now on
    pmi2, token2, again = _handshake(claimed)
    out = again.feed(b"cmd=initack pmiid=1\n")
    assert out.error == "the token of rank 1 was used already" and b"rc=-1" in out.reply


@pytest.mark.parametrize("response", [
    b"cmd=auth-response cnonce=%s mac=0000000000000000\n" % (b"cd" * 16),
    b"cmd=auth-response cnonce=%s mac=\n" % (b"cd" * 16),
    b"cmd=auth-response cnonce=xyz mac=0000000000000000\n",
    b"cmd=auth-response cnonce=%s mac=0000000000000000\n" % (b"ab" * 16),   # its own nonce
    b"cmd=get kvsname=job-x key=pb-tcp-0\n",
    b"cmd=initack pmiid=1\n",
])
def test_token_proof_refuses_a_wrong_answer(response):
    claimed = []
    pmi, token, hs = _handshake(claimed)
    hs.feed(b"cmd=initack pmiid=1\n")
    out = hs.feed(response)
    assert out.rank is None and out.error and b"rc=-1" in out.reply and claimed == []


def test_token_proof_pmi2():
    claimed = []
    pmi, token, hs = _handshake(claimed)
    out = hs.feed(b"cmd=init pmi_version=2 pmi_subversion=0\n")
    assert b"rc=0" in out.reply
    body = b"cmd=fullinit;pmirank=1;threaded=FALSE;"
    out = hs.feed(b"%6d" % len(body) + body)
    assert out.reply == pmi.format_v2("auth-challenge", [("nonce", "ab" * 16)])
    mac = pmi.token_proof(token, "job-x", 1, "ab" * 16, "ef" * 16)
    answer = b"cmd=auth-response;cnonce=%s;mac=%s;" % (b"ef" * 16, mac.encode())
    out = hs.feed(b"%6d" % len(answer) + answer)
    # the saved fullinit goes to the rank's connection, which answers it
    assert out.rank == 1 and out.v2 and out.rest == b"%6d" % len(body) + body


def test_refusals_are_logged_once_per_kind_per_interval():
    said = []
    log = launch.RefusalLog(said.append, interval=10.0)
    for i in range(5):
        log.refused("stranger", "stranger %d" % i, now=100.0 + i)
    log.refused("slow", "slow 0", now=101.0)
    log.refused("stranger", "stranger late", now=111.0)
    log.refused("stranger", "stranger later", now=112.0)
    log.flush()
    assert said == ["stranger 0", "slow 0",
                    "stranger late (and 4 more like it in the last 10 s)",
                    "refused 1 more PMI connection (stranger) without a message"]


@pytest.mark.parametrize("value", ["0", "-1", "x", "inf", "nan"])
def test_bad_pmi_tunables_are_usage_errors(tmp_path, rsh, monkeypatch, value):
    rsh_path, _ = rsh
    monkeypatch.setenv("POSTBOX_PMI_HANDSHAKE_TIME", value)
    result = hosts_run(rsh_path, "-n", 1, "--hosts", A, "true", timeout=30)
    assert result.returncode == 2
    assert "POSTBOX_PMI_HANDSHAKE_TIME wants a number > 0, not %r" % value in result.stderr


def test_an_rsh_that_does_not_pass_stdin_is_reported(tmp_path):
    # like ssh -n: the remote command's stdin is /dev/null, so no job line
    rsh_path = script(tmp_path, "rsh-no-stdin",
                      '#!/bin/sh\nshift\nexec sh -c "$*" </dev/null\n')
    result = run("-n", 1, "--hosts", A, "--rsh", rsh_path, "--pmi-address", "127.0.0.1",
                 "echo", "never", timeout=30)
    assert result.returncode == 126
    assert result.stdout == ""
    assert "postbox run: no job line on the standard input of echo" in result.stderr


# ---- hostfiles, slots, and hosts that are not up yet -------------------------

def test_hostfile_lines_of_hydra_and_open_mpi():
    text = ("# the job's hosts\nnode1:2\nnode2 slots=3 max_slots=8  # comment\n\n"
            "[fe80::1]:2\nnode3\nnode1:1\n")
    assert hosts.parse_hostfile(text, "f") == [("node1", 3), ("node2", 3), ("[fe80::1]", 2),
                                                ("node3", 0)]


@pytest.mark.parametrize("text, message", [
    ("a:0\n", "f line 1: 'a:0' gives a host no slots"),
    ("a\nb slots=two\n", "f line 2: 'slots=two' is not slots=N"),
    ("a slots=1 slots=2\n", "f line 1: slots given twice"),
    ("a:2\na\n", "f line 2: a is named again, without slots this time"),
    ("-a\n", "f line 1: '-a' is not a host name"),
    ("# nothing\n\n", "f names no host"),
])
def test_hostfile_errors_name_the_line(text, message):
    with pytest.raises(launchopts.UsageError) as caught:
        hosts.parse_hostfile(text, "f")
    assert str(caught.value).startswith(message)


def test_ranks_fill_the_slots_in_blocks_and_wrap_when_oversubscribed():
    slots = [("a", 2), ("b", 3)]
    assert hosts.place_ranks(3, slots) == (["a", "b"], [2, 1])
    assert hosts.place_ranks(5, slots) == (["a", "b"], [2, 3])
    assert hosts.place_ranks(7, slots) == (["a", "b"], [4, 3])
    assert hosts.place_ranks(2, slots) == (["a"], [2])   # b gets no rank: dropped
    assert hosts.place_ranks(5, [("a", 0), ("b", 0)]) == (["a", "b"], [3, 2])


def test_hostfile_option_and_variable(tmp_path, monkeypatch):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("n1:2\nn2:2\n")
    opts = launch.parse_args(["-n", "3", "-f", str(hostfile), "true"])
    assert (opts.hosts, opts.host_ranks, opts.nodes) == (["n1", "n2"], [2, 1], 2)
    monkeypatch.setenv("HYDRA_HOST_FILE", str(hostfile))
    opts = launch.parse_args(["-n", "4", "true"])
    assert (opts.hosts, opts.host_ranks) == (["n1", "n2"], [2, 2])
    # virtual nodes asked for: the variable is not a request for hosts
    assert launch.parse_args(["-n", "4", "--nodes", "2", "true"]).hosts == []
    with pytest.raises(launchopts.UsageError, match="--hosts and --hostfile cannot be combined"):
        launch.parse_args(["-n", "2", "--hosts", "a", "--hostfile", str(hostfile), "true"])
    with pytest.raises(launchopts.UsageError, match="no-such: No such file"):
        launch.parse_args(["-n", "2", "--hostfile", str(tmp_path / "no-such"), "true"])


def test_rsh_extra_arguments_from_the_environment(monkeypatch):
    monkeypatch.setenv("HYDRA_LAUNCHER_EXTRA_ARGS", "-p 2222 -o ConnectionAttempts=10")
    opts = launch.parse_args(["-n", "2", "--hosts", "a,b", "true"])
    assert opts.rsh == "ssh -p 2222 -o ConnectionAttempts=10"
    monkeypatch.setenv("POSTBOX_RSH_ARGS", "-q")
    assert launch.parse_args(["-n", "2", "--hosts", "a,b", "true"]).rsh == "ssh -q"


def test_job_over_a_hostfile_with_slots(tmp_path, rsh):
    rsh_path, log = rsh
    hostfile = tmp_path / "hosts"
    hostfile.write_text("%s slots=2\n%s slots=1\n" % (A, B))
    prog = script(tmp_path, "where", "#!/bin/sh\necho \"rank $PMI_ID\"\n")
    result = hosts_run(rsh_path, "-n", 3, "--hostfile", str(hostfile), prog, timeout=30)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split("\n")[:-1]) == ["rank 0", "rank 1", "rank 2"]
    started = [line.split()[0] for line in log.read_text().splitlines()]
    assert sorted(started) == [A, A, B]
    assert "postbox: started" not in result.stderr   # the wrapper's marker is taken out


def test_host_that_is_not_up_yet_is_tried_again(tmp_path, rsh, monkeypatch):
    rsh_path, log = rsh
    # an rsh that fails as ssh does (status 255, nothing run) twice per host
    flaky = script(tmp_path, "flaky-rsh", """#!/bin/sh
count="$FAKE_RSH_LOG.$1"
echo x >> "$count"
if [ "$(wc -l < "$count")" -le 2 ]; then
    echo "ssh: connect to host $1 port 22: Connection refused" >&2
    exit 255
fi
exec %s "$@"
""" % rsh_path)
    result = hosts_run(flaky, "-n", 2, "--hosts", "%s,%s" % (A, B), "true", timeout=30)
    assert result.returncode == 0, result.stderr
    assert "could not reach host %s (status 255) for rank 0; trying again" % A in result.stderr
    assert len(log.read_text().splitlines()) == 2   # each rank ran once


def test_program_ending_with_255_is_not_run_again(tmp_path, rsh):
    rsh_path, log = rsh
    result = hosts_run(rsh_path, "-n", 1, "--hosts", A, "sh", "-c", "exit 255", timeout=30)
    assert result.returncode == 255
    assert "trying again" not in result.stderr
    assert len(log.read_text().splitlines()) == 1


def test_host_that_never_comes_up_ends_the_job(tmp_path, monkeypatch):
    down = script(tmp_path, "down-rsh", "#!/bin/sh\necho 'ssh: no route' >&2\nexit 255\n")
    monkeypatch.setenv("POSTBOX_HOST_WAIT", "1")
    result = hosts_run(down, "-n", 1, "--hosts", A, "true", timeout=30)
    assert result.returncode == 255
    assert "could not reach host %s for 1 s (POSTBOX_HOST_WAIT); giving up" % A in result.stderr


def test_backoff_doubles_to_its_cap_and_ends_with_the_wait():
    backoff = hosts.Backoff(10.0, now=0.0)
    delays, now = [], 0.0
    while True:
        delay = backoff.next(now)
        if delay is None:
            break
        delays.append(delay)
        now += delay
    # 0.25 + 0.5 + 1 + 2 + 4 = 7.75 s; another 4 s would end after the 10 s
    assert delays == [0.25, 0.5, 1.0, 2.0, 4.0]
    assert backoff.tries == 5
    assert hosts.Backoff(0.0, now=5.0).next(5.0) is None   # POSTBOX_HOST_WAIT=0: no retry


def test_name_that_resolves_late_is_waited_for(monkeypatch, capfd):
    real = socket.getaddrinfo
    calls = []

    def late(host, *args, **kwargs):
        calls.append(host)
        if host == "late-node" and calls.count(host) <= 2:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real("127.0.0.1" if host == "late-node" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", late)
    launcher = launch.Launcher(launch.parse_args(["-n", "1", "--hosts", "late-node", "true"]))
    assert launcher._host_addresses() == {"127.0.0.1"}
    assert "host late-node does not resolve yet" in capfd.readouterr().err
