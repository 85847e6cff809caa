"""`postbox info --config` and docs/config.md, from the library's own table."""

import pytest

from conftest import run_cli
from postbox import config

pytestmark = pytest.mark.short

DUMP = (
    '{"name": "POSTBOX_A", "type": "string", "default": "warn", "help": "Level | kind."}\n'
    '\n'
    '{"name": "POSTBOX_B", "type": "int", "default": null, "help": "Unset by default."}\n'
)


def test_parse_dump():
    tunables = config.parse_dump(DUMP)
    assert tunables == [config.Tunable("POSTBOX_A", "string", "warn", "Level | kind."),
                        config.Tunable("POSTBOX_B", "int", None, "Unset by default.")]


def test_parse_dump_rejects_garbage():
    with pytest.raises(config.ConfigError, match="line 1"):
        config.parse_dump('{"name": "X"}\n')


def test_text_shows_current_value_and_default():
    text = config.format_text(config.parse_dump(DUMP), {"POSTBOX_A": "debug"})
    assert "POSTBOX_A = debug  (environment)" in text
    assert "default: warn; type: string" in text
    assert "POSTBOX_B = (unset)  (default)" in text
    assert "    Unset by default." in text


def test_markdown_ignores_the_environment_and_escapes_bars():
    tunables = config.parse_dump(DUMP)
    assert config.format_markdown(tunables) == config.format_markdown(tunables)
    text = config.format_markdown(tunables)
    assert "| `POSTBOX_A` | string | `warn` | Level \\| kind. |" in text
    assert "| `POSTBOX_B` | int | (unset) | Unset by default. |" in text
    assert "do not edit" in text


def test_info_config_runs_the_dump_program(fake_build):
    result = run_cli("info", "--config", env={"POSTBOX_NODE_ID": "3"})
    assert result.returncode == 0, result.stderr
    assert "POSTBOX_LOG_LEVEL = warn  (default)" in result.stdout
    assert "POSTBOX_NODE_ID = 3  (environment)" in result.stdout


def test_info_config_markdown(fake_build):
    result = run_cli("info", "--config", "--markdown", env={"POSTBOX_NODE_ID": "3"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# Configuration\n")
    assert "| `POSTBOX_NODE_ID` | int | `0` | Node id. |" in result.stdout


def test_info_config_reports_a_failing_dump(fake_build):
    dump = fake_build / "bin" / "postbox-config-dump"
    dump.write_text("#!/bin/sh\necho 'boom' >&2\nexit 4\n")
    result = run_cli("info", "--config")
    assert result.returncode == 1
    assert "exit status 4" in result.stderr and "boom" in result.stderr
