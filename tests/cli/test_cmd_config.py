"""``config check`` and ``config init``, run in-process: a summary and exit 0, or one line
and exit 2; the starter file is accepted by ``check`` and never overwritten by accident."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agcore_actors.cli import main
from agcore_actors.config import load_settings

PREFIX = "agcore-actors config check: config: "


@pytest.fixture(autouse=True)
def no_outside_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing of the machine's own configuration reaches these tests."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_check_summarises_a_good_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bot.toml"
    config.write_text(
        '[providers.gpt]\nkind = "openai"\napi_key = "sk-SECRET"\nmodel = "gpt-4o-mini"\n'
        "[agents.helper]\n[mcpServers.fs]\ncommand = 'srv'\nenv = { T = 'SECRET' }\n"
    )
    assert main(["config", "check", str(config)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"{config}: ok",
        "providers: gpt (openai, gpt-4o-mini, https://api.openai.com/v1) [default]",
        "agents: helper -> gpt [default]",
        "mcpServers: fs (stdio)",
        "store: memory (lost at exit)",
    ]
    assert "SECRET" not in out


def test_check_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "agcore.toml").write_text("[store]\npath = 's.db'\n")
    assert main(["config", "check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "source": "agcore.toml",
        "default_provider": "local",
        "default_agent": "assistant",
        "providers": {"local": "local"},
        "agents": {"assistant": "local"},
        "mcpServers": {},
        "store": "s.db",
    }


def test_check_without_a_file_reports_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("no configuration file (defaults and environment): ok\n")
    assert "providers: local (local, default) [default]" in out


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "[agents.helper]\nmax_turns = 'ten'",
            'agents.helper.max_turns: expected int, got str "ten"',
        ),
        (
            "[providers.p]\nkind = 'local'\nthreads = 'x'",
            'providers.p.threads: expected int, got str "x"',
        ),
        ("[mcpServers.fs]\ncommand = 1", "mcpServers.fs.command: expected str, got int 1"),
        ("[store]\npath = []", "store.path: expected str, got array"),
        ("[host]\nidle_ttl = 'x'", 'host.idle_ttl: expected float, got str "x"'),
        ("[retry]\nmax_delay = false", "retry.max_delay: expected float, got bool false"),
        ("[timeouts]\nconnect = 'x'", 'timeouts.connect: expected float, got str "x"'),
        ("[logging]\nformat = 1", 'logging.format: expected one of "text", "json", got int 1'),
        ("[host]\nmax_idle = 3", "host.max_idle: unknown key; expected one of"),
        ("[logging]\nfromat = 'json'", "logging.fromat: unknown key; did you mean format?"),
    ],
)
def test_check_fails_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: str
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    assert main(["config", "check", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"{PREFIX}{config}: {line}")
    assert len(captured.err.splitlines()) == 1


def test_check_names_an_environment_variable_that_is_wrong(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGCORE_HOST__MAX_SESSIONS", "lots")
    assert main(["config", "check"]) == 2
    assert capsys.readouterr().err == (
        f'{PREFIX}AGCORE_HOST__MAX_SESSIONS: host.max_sessions: expected int, got str "lots"\n'
    )


def test_check_of_a_missing_file_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "check", "nope.toml"]) == 2
    assert capsys.readouterr().err == f"{PREFIX}nope.toml: cannot read: No such file or directory\n"


def test_init_writes_a_starter_file_that_check_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "init"]) == 0
    assert capsys.readouterr().out == "agcore.toml\n"
    text = (tmp_path / "agcore.toml").read_text()
    for table in ("[providers.", "[agents.", "[mcpServers.", "[store]", "[host]", "[retry]"):
        assert table in text
    assert "[timeouts]" in text and "[logging]" in text
    assert main(["config", "check"]) == 0
    assert capsys.readouterr().out.startswith("agcore.toml: ok\n")
    settings = load_settings("agcore.toml", env={})
    assert settings.store.path == "sessions.db" and list(settings.agents) == ["assistant"]


def test_init_refuses_to_overwrite_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mine.toml"
    config.write_text("# my own\n")
    assert main(["config", "init", str(config)]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"agcore-actors config init: usage: {config} exists; pass --force to overwrite it\n"
    )
    assert config.read_text() == "# my own\n"
    assert main(["config", "init", str(config), "--force"]) == 0
    assert config.read_text().startswith("# agcore-actors configuration.")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
