"""One exit status per cause across the commands: a bad configuration is 2 everywhere.

The exit-status table of :mod:`agcore_actors.cli._common` (and ``--help``) promises 2 for
"usage or configuration"; every command that reads the configuration file keeps it, with
one line on stderr naming the file and the key, and nothing started or written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agcore_actors.cli import main

#: Every command that reads the configuration file, with what it needs besides.
COMMANDS = [
    ["run", "hi"],
    ["chat", "--plain"],
    ["sessions", "list"],
    ["sessions", "show", "s1"],
    ["serve", "--stdio"],
    ["config", "check"],
]

BAD = {
    "a wrong type": '[host]\nmax_sessions = "ten"\n',
    "not TOML": "[host\n",
    "an unknown key": "[host]\nmax_sesions = 10\n",
}


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "ANTHROPIC_", "AGCORE_")):
            monkeypatch.delenv(name)


@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a) for a in COMMANDS])
def test_a_bad_configuration_exits_2_with_one_line_in_every_command(
    argv: list[str], bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(BAD[bad])
    store = tmp_path / "sessions.db"
    extra = [str(config)] if argv[0] == "config" else ["--config", str(config)]
    if argv[0] not in ("config", "sessions"):  # sessions read the file for its store only
        extra += ["--store", str(store)]
    status = main([*argv, *extra])
    err = capsys.readouterr().err
    assert status == 2, err
    (line,) = err.splitlines()
    assert line.startswith(f"agcore-actors {argv[0]}") and ": config: " in line, line
    assert str(config) in line
    assert not store.exists()


# -- [host] max_sessions: one name in the file and in HostConfig -----------------------------


def test_host_max_sessions_in_the_file_is_host_config_max_sessions() -> None:
    from agcore_actors.config import host_config, parse_settings

    assert host_config(parse_settings("[host]\nmax_sessions = 7\n")).max_sessions == 7


def test_the_old_key_host_max_live_is_one_config_error_naming_the_new_one_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "old.toml"
    config.write_text("[host]\nmax_live = 8\n")
    assert main(["config", "check", str(config)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"agcore-actors config check: config: {config}: host.max_live: renamed; write max_sessions"
    )
