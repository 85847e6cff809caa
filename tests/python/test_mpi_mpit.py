"""The MPI_T control variables agree with `postbox info --config`: the same
POSTBOX_* names in the same order, and the same values, read through
MPI_T_cvar_read by ``pbt-mpi-mpit --cvars`` (tests/mpi/test_mpit.c, no
launcher, before MPI_Init) and from the tables by ``postbox-config-dump``
(what `postbox info --config` prints).  A tunable added to a table without
its description in src/mpi/tools.c is missing from MPI_T: this fails.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import built
from postbox import config, paths

pytestmark = pytest.mark.short

# what MPI_T's datatypes are for each type of the tables
KINDS = {"int": {"int", "unsigned_long"}, "string": {"string"}}
# never shown through MPI_T (their values are secrets)
SECRETS = {"POSTBOX_JOB_SECRET", "POSTBOX_PMI_TOKEN"}


def _environ(**settings: str) -> dict[str, str]:
    """This environment without any POSTBOX_* variable, plus @settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSTBOX_")}
    env.update(settings)
    if os.environ.get(paths.BUILD_DIR_VARIABLE):
        env[paths.BUILD_DIR_VARIABLE] = os.environ[paths.BUILD_DIR_VARIABLE]
    return env


def _mpit_cvars(env: dict[str, str]) -> list[tuple[str, str, str]]:
    program = built(paths.bin_dir() / "pbt-mpi-mpit")
    result = subprocess.run([str(program), "--cvars"], capture_output=True, text=True, env=env,
                            timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    return [tuple(line.split("\t", 2)) for line in result.stdout.splitlines()]


def _tunables() -> list[config.Tunable]:
    built(paths.bin_dir() / config.DUMP_PROGRAM)
    return config.load()


def _compare(env: dict[str, str]) -> None:
    tunables = _tunables()
    cvars = _mpit_cvars(env)
    assert [c[0] for c in cvars] == [t.name for t in tunables], \
        "MPI_T's control variables are not `postbox info --config`'s tunables"
    for (name, kind, value), tunable in zip(cvars, tunables):
        assert kind in KINDS[tunable.type], "%s: MPI_T type %s, table type %s" % (
            name, kind, tunable.type)
        expected = tunable.current(env)
        if name in SECRETS:
            assert value == "", "%s is shown through MPI_T" % name
        elif expected is None:
            assert value == "", "%s: MPI_T reads %r, the table has no default" % (name, value)
        elif kind == "string":
            assert value == expected, "%s: MPI_T %r, postbox info %r" % (name, value, expected)
        else:
            assert int(value) == int(expected, 0), "%s: MPI_T %s, postbox info %s" % (
                name, value, expected)


def test_cvars_are_the_tunables_with_their_defaults(real_build):
    _compare(_environ())


def test_cvars_read_the_environment(real_build):
    _compare(_environ(POSTBOX_SPIN="5", POSTBOX_TCP_ADDR="10.1.2.3", POSTBOX_RENDEZVOUS="0x2000",
                      POSTBOX_JOB_SECRET="0123456789abcdef0123456789abcdef"))
