"""``postbox run --universe``: PMI spawn (PMI-1 ``mcmd=spawn``, PMI-2 ``spawn``).

The server is driven directly (a spawn callback that records the worlds it
is asked to start), then the launcher end to end with a small Python PMI-1
client that spawns copies of itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PYTHON_DIR, REPO, built
from postbox import launch, launchopts, paths, pmi_server

pytestmark = pytest.mark.short


# ---- the server ---------------------------------------------------------------

class Harness:
    """A server of @size ranks in a universe of @universe slots; what it sent,
    and the worlds it asked to start."""

    def __init__(self, size: int = 2, universe: int = 5, nodes: int = 1, spawn: bool = True,
                 refuse: str = ""):
        self.sent: list = []
        self.started: list = []
        self.refuse = refuse
        self.server = pmi_server.PmiServer(
            "job-s", size, nodes, send=lambda slot, data: self.sent.append((slot, data)),
            abort=lambda *a: None, close=lambda *a: None, universe=universe,
            spawn=self._spawn if spawn else None)

    def _spawn(self, world, apps):
        self.started.append((world, apps))
        return self.refuse or None

    def ask(self, slot: int, data: bytes) -> list:
        """Feed @data as @slot; the replies it got, parsed."""
        before = len(self.sent)
        self.server.feed(slot, data)
        out = []
        for who, reply in self.sent[before:]:
            if reply[:6].strip().isdigit() and reply[6:10] == b"cmd=":
                cmd, fields = pmi_server.parse_v2(reply[6:])
            else:
                cmd, fields = pmi_server.parse_v1(reply.rstrip(b"\n"))
            out.append((who, cmd, fields))
        return out


def mcmd(nprocs: int, execname: str, total: int, sofar: int, args=(), preput=(),
         info=()) -> bytes:
    lines = ["mcmd=spawn", "nprocs=%d" % nprocs, "execname=%s" % execname,
             "totspawns=%d" % total, "spawnssofar=%d" % sofar, "argcnt=%d" % len(args)]
    lines += ["arg%d=%s" % (i + 1, a) for i, a in enumerate(args)]
    lines += ["preput_num=%d" % len(preput)]
    for i, (k, v) in enumerate(preput):
        lines += ["preput_key_%d=%s" % (i, k), "preput_val_%d=%s" % (i, v)]
    lines += ["info_num=%d" % len(info)]
    for i, (k, v) in enumerate(info):
        lines += ["info_key_%d=%s" % (i, k), "info_val_%d=%s" % (i, v)]
    return ("\n".join(lines) + "\nendcmd\n").encode()


def v2(body: str) -> bytes:
    data = body.encode()
    return b"%6d" % len(data) + data


def test_universe_layout_and_size():
    # the first N as without --universe, the rest in blocks over the nodes too
    assert pmi_server.universe_vnodes(4, 7, 2) == [0, 0, 1, 1, 0, 0, 1]
    assert pmi_server.universe_vnodes(3, 4, 2) == [0, 0, 1, 0]
    assert pmi_server.mapping_of([1, 1, 0]) == "(vector,(1,1,2),(0,1,1))"
    assert pmi_server.mapping_of([0, 0, 1, 1, 2]) == "(vector,(0,2,2),(2,1,1))"
    h = Harness(size=2, universe=5)
    assert h.ask(0, b"cmd=get_universe_size\n")[0][2]["size"] == "5"
    h.ask(1, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    reply = h.ask(1, v2("cmd=info-getjobattr;key=universeSize;"))
    assert reply[0][2]["value"] == "5"
    with pytest.raises(ValueError):
        pmi_server.PmiServer("job-s", 3, 1, send=None, abort=None, close=None, universe=2)


def test_pmi1_spawn_of_two_commands_makes_a_world_of_its_own():
    h = Harness(size=2, universe=6, nodes=2)
    assert h.ask(0, mcmd(2, "/bin/a", 2, 1, args=["x y", "a=b"],
                         preput=[("PARENT_ROOT_PORT_NAME", "port 1")],
                         info=[("wdir", "/tmp")])) == []
    assert h.started == []
    reply = h.ask(0, mcmd(1, "b", 2, 2, preput=[("PARENT_ROOT_PORT_NAME", "port 1")]))
    assert reply == [(0, "spawn_result", {"rc": "0", "errcodes": "0,0,0"})]
    (world, apps), = h.started
    assert (world.number, world.slots, world.appnums) == (1, [2, 3, 4], [0, 0, 1])
    assert world.kvsname == "job-s-s1" and world.parent == "job-s"
    assert [(a.command, a.args, a.nprocs, a.info, a.appnum) for a in apps] == [
        ("/bin/a", ["x y", "a=b"], 2, {"wdir": "/tmp"}, 0), ("b", [], 1, {}, 1)]
    # slots 2, 3, 4 of a universe of 6 over 2 nodes: 2 on node 0, 1 on node 1
    assert world.job_attrs["PMI_process_mapping"] == "(vector,(0,1,2),(1,1,1))"
    # the children: their own ranks, appnums, key-value space with the preput keys
    assert h.ask(3, b"cmd=get_appnum\n")[0][2]["appnum"] == "0"
    assert h.ask(4, b"cmd=get_appnum\n")[0][2]["appnum"] == "1"
    assert h.ask(2, b"cmd=get_my_kvsname\n")[0][2]["kvsname"] == "job-s-s1"
    got = h.ask(4, b"cmd=get kvsname=job-s-s1 key=PARENT_ROOT_PORT_NAME\n")[0][2]
    assert got["value"] == "port 1"
    # Postbox's keys (pb-) are the job's, named by slot: the child of slot 2
    # puts pb-node-2 (wherever it names its own space), not pb-node-0
    assert h.ask(0, b"cmd=put kvsname=job-s key=pb-node-0 value=parent\n")[0][2]["rc"] == "0"
    assert h.ask(2, b"cmd=put kvsname=job-s-s1 key=pb-node-2 value=child\n")[0][2]["rc"] == "0"
    assert h.ask(2, b"cmd=put kvsname=job-s-s1 key=pb-node-0 value=x\n")[0][2]["rc"] == "-1"
    assert h.ask(3, b"cmd=put kvsname=job-s-s1 key=pb-node-2 value=x\n")[0][2]["rc"] == "-1"
    # a world cannot put in another's space, but reads it
    assert h.ask(2, b"cmd=put kvsname=job-s key=k value=v\n")[0][2]["rc"] == "-1"
    assert h.ask(2, b"cmd=put kvsname=job-s-s1 key=k value=child\n")[0][2]["rc"] == "0"
    assert h.ask(0, b"cmd=get kvsname=job-s-s1 key=k\n")[0][2]["value"] == "child"
    assert h.ask(0, b"cmd=get kvsname=job-s key=k\n")[0][2]["rc"] == "-1"
    for slot, space in ((0, "job-s"), (1, "job-s-s1"), (2, "job-s"), (4, "job-s-s1")):
        for key, value in (("pb-node-0", "parent"), ("pb-node-2", "child")):
            got = h.ask(slot, b"cmd=get kvsname=%s key=%s\n" % (space.encode(), key.encode()))
            assert got[0][2]["value"] == value
    # the children's fence is theirs alone; the parents' is not held up by them
    assert h.ask(2, b"cmd=barrier_in\n") == []
    assert h.ask(0, b"cmd=barrier_in\n") == []
    assert [r[0] for r in h.ask(1, b"cmd=barrier_in\n")] == [0, 1]
    assert h.ask(3, b"cmd=barrier_in\n") == []
    assert sorted(r[0] for r in h.ask(4, b"cmd=barrier_in\n")) == [2, 3, 4]


def test_pmi2_spawn_and_the_childrens_fullinit():
    h = Harness(size=1, universe=4)
    h.ask(0, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    body = ("cmd=spawn;thrid=7;ncmds=2;preputcount=1;ppkey0=PARENT_ROOT_PORT_NAME;"
            "ppval0=p;;q;subcmd=/bin/a;maxprocs=1;argc=2;argv0=-v;argv1=x;;y;infokeycount=1;"
            "infokey0=host;infoval0=elsewhere;subcmd=/bin/b;maxprocs=2;argc=0;"
            "infokeycount=0;")
    reply = h.ask(0, v2(body))
    assert reply == [(0, "spawn-response", {"rc": "0", "jobid": "job-s-s1", "nerrs": "0",
                                            "thrid": "7"})]
    (world, apps), = h.started
    assert world.slots == [1, 2, 3] and world.appnums == [0, 1, 1]
    assert [(a.command, a.args, a.nprocs, a.info) for a in apps] == [
        ("/bin/a", ["-v", "x;y"], 1, {"host": "elsewhere"}), ("/bin/b", [], 2, {})]
    h.ask(2, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    full = h.ask(2, v2("cmd=fullinit;pmirank=1;"))[0][2]
    assert (full["rank"], full["size"], full["appnum"], full["spawner-jobid"]) == \
        ("1", "3", "1", "job-s")
    got = h.ask(2, v2("cmd=kvs-get;jobid=job-s-s1;key=PARENT_ROOT_PORT_NAME;"))[0][2]
    assert got["value"] == "p;q"
    assert h.ask(2, v2("cmd=kvs-get;jobid=job-x;key=a;"))[0][2]["rc"] == "-1"


def test_spawn_past_the_universe_names_the_option():
    h = Harness(size=2, universe=3)
    reply = h.ask(1, mcmd(2, "/bin/a", 1, 1))
    assert reply[0][1] == "spawn_result" and reply[0][2]["rc"] == "-1"
    assert "--universe" in reply[0][2]["msg"] and "only_1_of" in reply[0][2]["msg"]
    assert h.started == []
    # what fits still starts, in the one free slot
    assert h.ask(1, mcmd(1, "/bin/a", 1, 1))[0][2]["rc"] == "0"
    assert h.started[0][0].slots == [2]
    assert "only_0_of" in h.ask(0, mcmd(1, "/bin/a", 1, 1))[0][2]["msg"]


@pytest.mark.parametrize("data,why", [
    (mcmd(1, "/bin/a", 2, 2), "out_of_order"),
    (mcmd(0, "/bin/a", 1, 1), "bad_number_of_processes"),
    (mcmd(1, "", 1, 1), "missing_command"),
    (b"mcmd=spawn\nnprocs=1\nexecname=a\ntotspawns=x\nspawnssofar=1\nendcmd\n", "bad_number"),
    (b"mcmd=frob\nendcmd\n", "unknown_mcmd_frob"),
    (b"mcmd=spawn\nno equals sign\nendcmd\n", "malformed"),
    (v2("cmd=spawn;ncmds=2;subcmd=a;maxprocs=1;"), "ncmds_2_but_1_subcmd"),
    (v2("cmd=spawn;ncmds=1;subcmd=a;maxprocs=1;argc=-1;"), "bad_argc"),
    (v2("cmd=spawn;ncmds=1;preputcount=1;ppkey0=;ppval0=v;subcmd=a;maxprocs=1;"),
     "preput_missing_key"),
])
def test_malformed_spawns_are_refused(data, why):
    h = Harness(size=1, universe=4)
    if data[6:10] == b"cmd=":
        h.ask(0, b"cmd=init pmi_version=2 pmi_subversion=0\n")
    reply = h.ask(0, data)
    assert len(reply) == 1 and reply[0][2]["rc"] == "-1"
    text = reply[0][2].get("msg", reply[0][2].get("errmsg"))
    assert why in text
    assert h.started == []


def test_spawn_refused_without_a_spawner_and_by_the_launcher():
    h = Harness(size=1, universe=3, spawn=False)
    reply = h.ask(0, mcmd(1, "a", 1, 1))
    assert reply[0][2]["msg"] == "this_process_manager_does_not_spawn"
    h = Harness(size=1, universe=3, refuse="a: command not found")
    assert h.ask(0, mcmd(1, "a", 1, 1))[0][2]["msg"] == "a:_command_not_found"


def test_an_endless_mcmd_block_closes_the_connection():
    closed = []
    server = pmi_server.PmiServer("job-s", 1, 1, send=lambda *a: None, abort=lambda *a: None,
                                  close=lambda slot, why: closed.append((slot, why)),
                                  universe=2)
    server.feed(0, b"mcmd=spawn\n" + b"arg1=" + b"x" * pmi_server.MAX_SPAWN_BLOCK + b"\n")
    assert closed and closed[0][0] == 0 and "mcmd block" in closed[0][1]


# ---- the launcher -------------------------------------------------------------

def test_universe_option():
    opts = launch.parse_args(["-n", "2", "--universe", "5", "prog"])
    assert (opts.size, opts.universe) == (2, 5)
    assert launch.parse_args(["prog"]).universe is None
    for argv, message in ((["-n", "3", "--universe", "2", "p"], "less than the 3 ranks"),
                          (["--universe", "0", "p"], "positive integer"),
                          (["-n", "2", "--universe", "3", "--hosts", "a", "p"],
                           "cannot be combined")):
        with pytest.raises(launchopts.UsageError, match=message):
            launch.parse_args(argv)


# A PMI-1 client: world 0 spawns copies of itself (SPAWN=<n>,<n>: one command
# per number, each with the arguments "child" and its index) and prints the
# result; a child prints what PMI tells it, fences with its world, and exits
# with CHILD_STATUS.
SPAWNER = r'''
import json, os, sys
fd = int(os.environ["PMI_FD"])
buf = b""

def fields(text):
    parts, cur, esc = [], [], False
    for c in text:
        if esc: cur.append(c); esc = False
        elif c == "\\": esc = True
        elif c == " ": parts.append("".join(cur)); cur = []
        else: cur.append(c)
    parts.append("".join(cur))
    return dict(p.split("=", 1) for p in parts if p)

def ask(data):
    global buf
    os.write(fd, data.encode())
    while b"\n" not in buf:
        more = os.read(fd, 4096)
        if not more:
            return None
        buf += more
    reply, buf = buf.split(b"\n", 1)
    return fields(reply.decode())

ask("cmd=init pmi_version=1 pmi_subversion=1\n")
kvs = ask("cmd=get_my_kvsname\n")["kvsname"]
out = {"rank": int(os.environ["PMI_RANK"]), "size": int(os.environ["PMI_SIZE"]),
       "kvs": kvs, "spawned": os.environ.get("PMI_SPAWNED"), "argv": sys.argv[1:],
       "universe": ask("cmd=get_universe_size\n")["size"],
       "appnum": ask("cmd=get_appnum\n")["appnum"], "cwd": os.getcwd()}
out["job"] = os.environ["POSTBOX_JOB_ID"]
out["slot"] = os.environ.get("POSTBOX_SLOT")
out["slot_nodes"] = os.environ.get("POSTBOX_UNIVERSE_NODES")
if out["spawned"] is None and out["rank"] == 0:
    counts = [int(n) for n in os.environ["SPAWN"].split(",")]
    program = os.environ.get("SPAWN_PROGRAM")
    for i, n in enumerate(counts):
        args = [] if program else [sys.argv[0], "child", str(i)]
        block = ("mcmd=spawn\nnprocs=%d\nexecname=%s\ntotspawns=%d\nspawnssofar=%d\n"
                 "argcnt=%d\n%spreput_num=1\n"
                 "preput_key_0=PARENT_ROOT_PORT_NAME\npreput_val_0=port of %s\n"
                 "info_num=1\ninfo_key_0=wdir\ninfo_val_0=%s\nendcmd\n"
                 % (n, program or sys.executable, len(counts), i + 1, len(args),
                    "".join("arg%d=%s\n" % (j + 1, a) for j, a in enumerate(args)),
                    kvs, os.environ.get("WDIR", "")))
        if i + 1 < len(counts):
            os.write(fd, block.encode())
        else:
            out["spawn"] = ask(block)
elif out["spawned"]:
    out["parent_port"] = ask("cmd=get kvsname=%s key=PARENT_ROOT_PORT_NAME\n" % kvs)["value"]
    out["fence"] = ask("cmd=barrier_in\n")["rc"]
print(json.dumps(out), flush=True)
ask("cmd=finalize\n")
sys.exit(int(os.environ.get("CHILD_STATUS", "0")) if out["spawned"] else 0)
'''


def run_spawner(tmp_path: Path, *args, env=None):
    prog = tmp_path / "spawner.py"
    prog.write_text(SPAWNER)
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(PYTHON_DIR) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "postbox", "run", *map(str, args), sys.executable, str(prog)]
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=30,
                          cwd=REPO)


def test_run_serves_spawn_of_two_commands(tmp_path):
    wdir = tmp_path / "work"
    wdir.mkdir()
    result = run_spawner(tmp_path, "-n", 2, "--universe", 6, "--nodes", 2, "--tag-output",
                         env={"SPAWN": "1,2", "WDIR": str(wdir)})
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = {}
    for line in result.stdout.splitlines():
        tag, text = line.split(" ", 1)
        lines[tag] = json.loads(text)
    assert sorted(lines) == ["[0]", "[1:0]", "[1:1]", "[1:2]", "[1]"]
    parent = lines["[0]"]
    assert parent["spawn"] == {"cmd": "spawn_result", "rc": "0", "errcodes": "0,0,0"}
    assert parent["universe"] == "6" and parent["appnum"] == "0"
    for tag, rank, appnum in (("[1:0]", 0, "0"), ("[1:1]", 1, "1"), ("[1:2]", 2, "1")):
        child = lines[tag]
        assert (child["rank"], child["size"], child["appnum"]) == (rank, 3, appnum)
        assert child["spawned"] == "1" and child["kvs"] == parent["kvs"] + "-s1"
        assert child["argv"] == ["child", appnum]
        assert child["parent_port"] == "port of " + parent["kvs"]
        assert child["fence"] == "0" and child["cwd"] == str(wdir)
        # the job's id, and the universe's slots, for the library to join
        # spawned processes to their parents
        assert child["job"] == parent["job"] == parent["kvs"]
        assert child["slot"] == str(2 + rank) and child["slot_nodes"] == "0,1,0,0,1,1"
    assert parent["slot"] == "0" and lines["[1]"]["slot"] == "1"
    assert parent["slot_nodes"] == "0,1,0,0,1,1"


def test_a_spawned_postbox_program_joins_the_universe(tmp_path):
    view = built(paths.bin_dir() / "postbox-job-view")
    result = run_spawner(tmp_path, "-n", 2, "--nodes", 2, "--universe", 5,
                         env={"SPAWN": "3", "SPAWN_PROGRAM": str(view)})
    assert result.returncode == 0, result.stderr
    parents = [json.loads(line) for line in result.stdout.splitlines() if line[:1] == "{"]
    views = sorted(line for line in result.stdout.splitlines() if line.startswith("rank "))
    assert len(parents) == 2 and len(views) == 3, result.stdout
    # slots 2, 3, 4 of a universe of 5 over 2 virtual nodes: 2 on node 0, 1 on
    # node 1; the job's ranks are the slots, the nodes the universe's
    for slot, node, local in ((2, 0, "0,2,3"), (3, 0, "0,2,3"), (4, 1, "1,4")):
        line = views[slot - 2]
        assert line.startswith("rank %d size 5 node %d nodes 2 " % (slot, node)), line
        assert line.endswith(" local %s job %s" % (local, parents[0]["job"])), line


def test_spawn_past_the_universe_fails_in_the_spawner(tmp_path):
    result = run_spawner(tmp_path, "-n", 1, "--universe", 2, env={"SPAWN": "2"})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["spawn"]["rc"] == "-1" and "(postbox_run_--universe)" in out["spawn"]["msg"]
    result = run_spawner(tmp_path, "-n", 1, env={"SPAWN": "1"})
    out = json.loads(result.stdout)
    assert "only_0_of_the_universe's_1_slots_are_free" in out["spawn"]["msg"]
    # without free slots the launcher gives no universe to the library
    assert out["slot"] is None and out["slot_nodes"] is None


def test_the_universe_variables_are_the_launchers(tmp_path):
    for var in ("POSTBOX_SLOT", "POSTBOX_UNIVERSE_NODES"):
        result = run_spawner(tmp_path, "-n", 1, "--universe", 2, "-x", var + "=1",
                             env={"SPAWN": "1"})
        assert result.returncode == 2 and "the launcher sets %s itself" % var in result.stderr


def test_a_failing_child_ends_the_job(tmp_path):
    result = run_spawner(tmp_path, "-n", 1, "--universe", 3,
                         env={"SPAWN": "2", "CHILD_STATUS": "3"})
    assert result.returncode == 3
    assert "rank 0 of spawn 1 (slot 1) (node " in result.stderr or \
        "rank 1 of spawn 1 (slot 2) (node " in result.stderr
    assert "exited with status 3" in result.stderr


def test_a_missing_wdir_is_refused(tmp_path):
    result = run_spawner(tmp_path, "-n", 1, "--universe", 2,
                         env={"SPAWN": "1", "WDIR": str(tmp_path / "nowhere")})
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["spawn"]["rc"] == "-1" and "_is_not_a_directory" in out["spawn"]["msg"]


# ---- hostile spawn requests ---------------------------------------------------

SPAWN_SEEDS = [
    mcmd(2, "/bin/a", 1, 1, args=["x y"], preput=[("k", "v")], info=[("wdir", "/")]),
    mcmd(1, "/bin/a", 2, 1) + mcmd(3, "b", 2, 2, args=["1", "2", "3"]),
    mcmd(40, "/bin/a", 1, 1),
    b"cmd=init pmi_version=2 pmi_subversion=0\n" + v2(
        "cmd=spawn;ncmds=2;preputcount=1;ppkey0=k;ppval0=v;subcmd=a;maxprocs=2;argc=1;"
        "argv0=x;;y;infokeycount=1;infokey0=wdir;infoval0=/;subcmd=b;maxprocs=1;argc=0;"),
]


def mutate_spawn(rng, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randint(0, len(out))
        choice = rng.randrange(6)
        if choice == 0 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif choice == 1 and out:
            del out[pos:pos + rng.randint(1, 12)]
        elif choice == 2:
            out[pos:pos] = rng.choice([b"\n", b"=", b";", b";;", b"endcmd\n", b"mcmd=spawn\n",
                                       b"nprocs=-1\n", b"totspawns=99999999999\n",
                                       b"argcnt=300\n", b"subcmd=", b"maxprocs=0;", b"\0"])
        elif choice == 3:
            lines = bytes(out).split(b"\n")
            if len(lines) > 2:
                i = rng.randrange(len(lines))
                lines.insert(rng.randrange(len(lines)), lines[i])
            out = bytearray(b"\n".join(lines))
        elif choice == 4:
            out += rng.choice(SPAWN_SEEDS)
        else:
            digits = [i for i, c in enumerate(out) if 0x30 <= c <= 0x39]
            if digits:
                out[rng.choice(digits)] = rng.choice(b"0123456789-")
    return bytes(out)


def test_mutated_spawn_requests_never_break_the_server():
    import random
    rng = random.Random(1616)
    for round_ in range(300):
        h = Harness(size=2, universe=40, nodes=3)
        for _ in range(5):
            data = mutate_spawn(rng, rng.choice(SPAWN_SEEDS))
            slot = rng.randrange(2)
            h.server.feed(slot, data)
        taken = []
        for world, apps in h.started:
            assert world.slots == list(range(world.slots[0], world.slots[0] + world.size))
            assert sum(app.nprocs for app in apps) == world.size >= 1
            assert world.appnums == [app.appnum for app in apps for _ in range(app.nprocs)]
            taken += world.slots
        assert len(taken) == len(set(taken)) and all(2 <= s < 40 for s in taken)
        assert h.server.next_free == 2 + len(taken)
        # whatever came before, a well-formed spawn of what is free is still served
        free = 40 - h.server.next_free
        slot = next((s for s in range(2) if not h.server.connections[s].closed), None)
        if free and slot is not None and not h.server.connections[slot].v2:
            # (a block left unfinished would take the next bytes into it)
            h.server.spawn_blocks.pop(slot, None)
            h.server.connections[slot].buffer = b""
            h.server.connections[slot].start = 0
            before = len(h.sent)
            h.server.feed(slot, mcmd(free, "/bin/ok", 1, 1))
            replies = [d for s, d in h.sent[before:] if s == slot]
            assert replies[-1].startswith(b"cmd=spawn_result rc=0 "), (round_, replies)
