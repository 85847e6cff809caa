"""The command line: parsing, help, commands not built yet, clear errors."""

import pytest

from conftest import run_cli
from postbox import __version__, cli

pytestmark = pytest.mark.short


def test_help_lists_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("info", "bench", "report", "run"):
        assert command in result.stdout


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == "postbox %s" % __version__


def test_no_command_prints_help_and_fails():
    result = run_cli()
    assert result.returncode == 2
    assert "usage: postbox" in result.stdout


def test_unknown_command_is_an_error():
    result = run_cli("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


@pytest.mark.parametrize("args,message", [
    (["run"], "postbox run: no program to run"),
    (["run", "-n", "0", "./a.out"], "postbox run: -n wants a positive integer"),
    (["run", "--rsh", "ssh", "--", "x"], "postbox run: --rsh only applies with --hosts"),
])
def test_run_usage_errors(args, message):
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(message)


def test_run_help():
    result = run_cli("run", "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: postbox run ")
