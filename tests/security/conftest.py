"""Fixtures for the attack tests: programs run as other local users.

Each test here plays an attacker against a real job and asserts the attack
fails and the victim carries on.  Two unprivileged accounts take part:

- ``postbox-attacker``: another local user of the machine, outside the job;
- ``postbox-victim``: an ordinary user running a job (root would pass every
  permission check the attacks must run into, so victims are not root).

A third, ``postbox-remote``, is an ordinary user whose job's ranks log in
over ssh (test_ssh_user.py): it has a login shell (ssh runs the rank's
command through it) and is not locked (sshd without PAM refuses a locked
account, even with a key).

Switching to them needs root; the accounts are made by `.ci/run` (or by hand,
as root: ``useradd --system --no-create-home --shell /usr/sbin/nologin
postbox-attacker``, the same for ``postbox-victim``, and ``useradd --system
--no-create-home --shell /bin/sh postbox-remote && usermod -p '*'
postbox-remote``).  Without root or
without the accounts the tests skip; with POSTBOX_TEST_REQUIRE_ATTACK_USERS=1
(CI sets it) they fail instead, so a CI run cannot pass by skipping them.

The build tree usually sits under a directory only its owner may enter, so
the ``stage`` fixture copies what the users run (build/bin, build/lib, the
``postbox`` package) into a world-readable directory under /tmp; the
fixtures ``attacker`` and ``victim`` run programs from it as those users,
with LD_LIBRARY_PATH and PYTHONPATH pointing into it, a home directory and
an XDG_RUNTIME_DIR (mode 0700) of their own, and nothing else of the
caller's environment.  ``User.launch(...)`` runs ``postbox run`` as that
user.  Every process a fixture started is killed (its whole session) when
the test ends.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
BUILD = Path(os.environ.get("POSTBOX_BUILD_DIR", REPO / "build")).resolve()

ATTACKER = "postbox-attacker"
VICTIM = "postbox-victim"
# an ordinary user with a login shell, whose ranks log in over ssh
# (test_ssh_user.py)
REMOTE = "postbox-remote"
REQUIRE_VARIABLE = "POSTBOX_TEST_REQUIRE_ATTACK_USERS"


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail("%s (%s=1: the attack tests must run)" % (reason, REQUIRE_VARIABLE),
                    pytrace=False)
    pytest.skip(reason)


def _account(name: str) -> pwd.struct_passwd:
    if os.geteuid() != 0:
        _unavailable("switching to user %s needs root" % name)
    try:
        return pwd.getpwnam(name)
    except KeyError:
        _unavailable("no user %s (tests/security/conftest.py says how to make it)" % name)
    raise AssertionError("unreachable")


@dataclass
class Stage:
    """A world-readable copy of the build: ``root/build/{bin,lib}``, ``root/python``."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "build" / "bin"

    @property
    def lib(self) -> Path:
        return self.root / "build" / "lib"

    @property
    def python(self) -> Path:
        return self.root / "python"

    def program(self, name: str) -> Path:
        path = self.bin / name
        if not path.is_file():
            _unavailable("%s is not built (run `make`)" % (BUILD / "bin" / name))
        return path


@pytest.fixture(scope="session")
def stage() -> Stage:
    if not (BUILD / "lib" / "libpostbox.so").exists():
        _unavailable("no build in %s (run `make`)" % BUILD)
    root = Path(tempfile.mkdtemp(prefix="postbox-sec-"))
    os.chmod(root, 0o755)
    staged = Stage(root)
    staged.bin.mkdir(parents=True)
    for path in (BUILD / "bin").iterdir():
        target = path.resolve()
        if target.is_file() and os.access(target, os.X_OK) and target.suffix != ".py":
            shutil.copy2(target, staged.bin / path.name)
    shutil.copytree(BUILD / "lib", staged.lib, symlinks=True,
                    ignore=shutil.ignore_patterns("cmake", "pkgconfig"))
    shutil.copytree(REPO / "python" / "postbox", staged.python / "postbox",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for directory, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(directory, name), 0o755)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)
    yield staged
    shutil.rmtree(root, ignore_errors=True)


@dataclass
class User:
    """Runs programs of the stage as one local user."""

    name: str
    uid: int
    gid: int
    stage: Stage
    home: Path
    runtime_dir: Path
    started: List[subprocess.Popen] = field(default_factory=list)

    def env(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        env = {
            "PATH": "%s:/usr/local/bin:/usr/bin:/bin" % self.stage.bin,
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "LD_LIBRARY_PATH": str(self.stage.lib),
            "PYTHONPATH": str(self.stage.python),
            "POSTBOX_BUILD_DIR": str(self.stage.root / "build"),
            "LANG": "C.UTF-8",
        }
        env.update(extra or {})
        return env

    def argv(self, argv: Sequence[str]) -> List[str]:
        """@argv, to be run as this user (by root)."""
        return ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.gid, "--clear-groups",
                "--"] + [str(arg) for arg in argv]

    def popen(self, argv: Sequence[str], env: Optional[Dict[str, str]] = None,
              **kwargs) -> subprocess.Popen:
        """Start @argv as this user (its own session); killed when the test ends."""
        kwargs.setdefault("cwd", str(self.home))
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        kwargs.setdefault("text", True)
        proc = subprocess.Popen(self.argv(argv), env=self.env(env), start_new_session=True,
                                **kwargs)
        self.started.append(proc)
        return proc

    def run(self, argv: Sequence[str], env: Optional[Dict[str, str]] = None,
            timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
        """Run @argv as this user to its end (killed after @timeout s)."""
        proc = self.popen(argv, env=env, stdin=kwargs.pop("stdin", subprocess.DEVNULL), **kwargs)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(proc)
            out, err = proc.communicate()
            raise AssertionError("%s did not end within %ss as %s\nstdout:\n%s\nstderr:\n%s"
                                 % (" ".join(map(str, argv)), timeout, self.name, out, err))
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def launch(self, args: Sequence[str], env: Optional[Dict[str, str]] = None,
               **kwargs) -> subprocess.Popen:
        """Start ``postbox run ARGS`` as this user (the launcher of the stage)."""
        return self.popen(["python3", "-m", "postbox", "run"] + list(args), env=env, **kwargs)

    @staticmethod
    def kill(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def cleanup(self) -> None:
        for proc in self.started:
            self.kill(proc)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.started.clear()


def _user(name: str, stage: Stage, tmp_root: Path) -> User:
    account = _account(name)
    home = tmp_root / name
    runtime = home / "run"
    runtime.mkdir(parents=True)
    os.chmod(home, 0o700)
    os.chmod(runtime, 0o700)
    for path in (home, runtime):
        os.chown(path, account.pw_uid, account.pw_gid)
    return User(name, account.pw_uid, account.pw_gid, stage, home, runtime)


@pytest.fixture
def users_dir(stage: Stage):
    """A directory under the stage for this test's users' homes."""
    path = Path(tempfile.mkdtemp(prefix="users-", dir=stage.root))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def attacker(stage: Stage, users_dir: Path):
    """Another local user, outside any job of the victim."""
    user = _user(ATTACKER, stage, users_dir)
    yield user
    user.cleanup()


@pytest.fixture
def victim(stage: Stage, users_dir: Path):
    """An ordinary (non-root) user whose job is attacked."""
    user = _user(VICTIM, stage, users_dir)
    yield user
    user.cleanup()


@pytest.fixture
def remote_user(stage: Stage, users_dir: Path):
    """An ordinary user that may log in over ssh (with a key)."""
    user = _user(REMOTE, stage, users_dir)
    yield user
    user.cleanup()
