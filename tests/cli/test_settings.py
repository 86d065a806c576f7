"""``run`` and ``chat`` read the configuration file: several agents, each with its own
limits, selectable by ``--agent`` and ``/agent``; flags over environment over file; a bad
agent name is one typed line with exit status 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect  # type: ignore[import-untyped]  # no stubs in the dev environment
import pytest

from agcore_actors.cli._errors import UsageError
from agcore_actors.cli._runtime import RuntimeOptions
from agcore_actors.cli._settings import BUILTIN_AGENTS, CliSettings, cli_settings, local_from
from agcore_actors.config import parse_settings
from agcore_actors.llm import OpenAICompatibleProvider, OpenAIConfig, Provider
from agcore_actors.local import CatalogModel, GgufFile
from tests.cli.agent_server import clean_env, cli, sent_messages, text, tool_call
from tests.peers.fault_server import FaultServer

TERSE = "Answer in one word."
HELPER = "You help with arithmetic."


def config_text(url: str) -> str:
    return f"""
[providers.fake]
kind = "openai"
base_url = "{url}"
api_key = "sk-test"
model = "file-model"

[agents.terse]
instructions = "{TERSE}"
max_tool_turns = 2

[agents.helper]
instructions = "{HELPER}"
max_tool_turns = 4
max_repeated_calls = 10
"""


def write_config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "conf.toml"
    path.write_text(config_text(url))
    return path


def made(text: str, options: RuntimeOptions, configured: Provider | None = None) -> CliSettings:
    settings = parse_settings(text, source="conf.toml")
    env = {"AGCORE_ACTORS_DATA": "/data"}
    return cli_settings(settings, options, configured, template=None, progress=None, env=env)


def test_the_files_agents_stay_with_their_limits_and_the_choice_is_checked() -> None:
    text = config_text("http://127.0.0.1:9/v1")
    chosen = made(text, RuntimeOptions(agent="helper"))
    assert list(chosen.settings.agents) == ["terse", "helper"] and chosen.first == "helper"
    assert chosen.settings.agents["helper"].max_repeated_calls == 10
    assert made(text, RuntimeOptions()).first == "terse"  # default_agent: the first
    assert chosen.local is None and chosen.label == "fake file-model"
    assert chosen.store_path == Path("/data/sessions.db")
    assert chosen.settings.store.path == "/data/sessions.db"
    with pytest.raises(UsageError, match="--agent 'nobody': expected one of terse, helper"):
        made(text, RuntimeOptions(agent="nobody"))


def test_without_agents_in_the_file_the_commands_own_agents_and_limits_stay() -> None:
    chosen = made("", RuntimeOptions(store=Path("/s.db")))
    assert chosen.settings.agents == BUILTIN_AGENTS and chosen.first == "assistant"
    assert chosen.settings.agents["plain"].tools == ()
    assert chosen.settings.agents["assistant"].max_tool_turns == 6
    assert chosen.local is not None and chosen.store_path == Path("/s.db")


def test_a_configured_provider_becomes_the_default_and_local_flags_win_over_the_file() -> None:
    text = config_text("http://127.0.0.1:9/v1")
    flags = OpenAICompatibleProvider(
        OpenAIConfig(name="openai", base_url="http://127.0.0.1:8/v1", model="x")
    )
    chosen = made(text, RuntimeOptions(), flags)
    assert chosen.settings.default_provider == "openai" and chosen.providers == {"openai": flags}
    assert chosen.label == "openai x" and chosen.local is None
    small = made(text, RuntimeOptions(small=True, local_ctx=1024))
    assert small.settings.default_provider == "local" and small.local is not None
    assert isinstance(small.local.source, CatalogModel) and small.local.source.name == "small"
    assert small.local.n_ctx == 1024


def test_the_files_local_model_under_the_flags(tmp_path: Path) -> None:
    settings = parse_settings(
        '[providers.local]\nkind = "local"\nn_ctx = 2048\nthreads = 2\nstart_timeout = 45.0\n',
        source=str(tmp_path / "conf.toml"),
    )
    plain = local_from(
        settings, small=False, gguf=None, python=None, cache=None, n_ctx=None,
        template=None, progress=None,
    )  # fmt: skip
    assert plain.n_ctx == 2048 and plain.threads == 2 and plain.start_timeout == 45.0
    assert isinstance(plain.source, CatalogModel) and plain.source.name == "default"
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    mine = local_from(
        settings, small=False, gguf=gguf, python="/py", cache=None, n_ctx=None,
        template="T", progress=None,
    )  # fmt: skip
    assert isinstance(mine.source, GgufFile) and mine.source.path == gguf
    assert mine.source.chat_template == "T" and mine.python == "/py"
    with pytest.raises(UsageError, match="no such file"):
        local_from(
            settings, small=False, gguf=tmp_path / "none.gguf", python=None, cache=None,
            n_ctx=None, template=None, progress=None,
        )  # fmt: skip


def system_prompt(body: object) -> str:
    first = sent_messages(body)[0]
    assert first["role"] == "system"
    return str(first["content"])


async def test_run_agent_picks_an_agent_of_the_file_with_its_own_limits(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    # The model calls the same tool forever: each agent's max_tool_turns ends the turn.
    url, scenario = fault_server.script(tool_call("calculate", {"expression": "1 + 1"}))
    conf = write_config(tmp_path, url)
    store = ["--store", str(tmp_path / "s.db")]
    for agent, instructions, requests in ((None, TERSE, 3), ("helper", HELPER, 5)):
        before = len(scenario.requests)
        argv = ["run", "Loop", "--json", "--config", str(conf), *store]
        argv += [] if agent is None else ["--agent", agent]
        done = await cli(*argv, env=clean_env(), cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        out = json.loads(done.stdout)
        assert out["error"]["kind"] == "limit_exceeded"
        sent = scenario.requests[before:]
        assert len(sent) == requests  # max_tool_turns rounds, then the limit
        assert {system_prompt(r.body) for r in sent} == {instructions}
        assert {r.body["model"] for r in sent} == {"file-model"}


async def test_flags_win_over_environment_which_wins_over_the_file(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    file_url, file_scenario = fault_server.script(text("from the file"))
    env_url, env_scenario = fault_server.script(text("from the environment"))
    flag_url, flag_scenario = fault_server.script(text("from the flags"))
    conf = write_config(tmp_path, file_url)
    argv = ["run", "hi", "--config", str(conf), "--store", str(tmp_path / "s.db")]
    done = await cli(*argv, env=clean_env(), cwd=tmp_path)
    assert done.stdout.strip() == "from the file", done.stderr
    env = clean_env(OPENAI_BASE_URL=env_url, OPENAI_API_KEY="sk-env", OPENAI_MODEL="env-model")
    done = await cli(*argv, env=env, cwd=tmp_path)
    assert done.stdout.strip() == "from the environment", done.stderr
    done = await cli(
        *argv, "--base-url", flag_url, "--model-name", "flag-model", env=env, cwd=tmp_path
    )
    assert done.stdout.strip() == "from the flags", done.stderr
    assert len(file_scenario.requests) == 1
    assert [r.body["model"] for r in env_scenario.requests] == ["env-model"]
    assert [r.body["model"] for r in flag_scenario.requests] == ["flag-model"]
    # The file's agents hold whichever provider answers.
    assert system_prompt(flag_scenario.requests[0].body) == TERSE


async def test_an_unknown_agent_is_one_typed_line_and_exit_2(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(text("never"))
    conf = write_config(tmp_path, url)
    for command in (["run", "hi"], ["chat"]):
        done = await cli(
            *command, "--config", str(conf), "--agent", "nobody", env=clean_env(), cwd=tmp_path
        )
        assert done.returncode == 2
        (line,) = done.stderr.splitlines()
        assert line == (
            f"agcore-actors {command[0]}: usage: --agent 'nobody': expected one of terse, helper"
        )
    assert scenario.requests == []


def test_chat_agent_switches_to_another_agent_of_the_file_with_the_history(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(text("Hi."), text("Two."))
    conf = write_config(tmp_path, url)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agcore_actors.cli", "chat", "--plain", "--config", str(conf),
         "--store", str(tmp_path / "s.db")],
        env=clean_env(TERM="xterm-256color"),
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 160),
    )  # fmt: skip
    try:
        child.expect("you> ")
        child.sendline("Hello")
        child.expect_exact("Hi.")
        child.expect("you> ")
        child.sendline("/agent")
        child.expect_exact("agents: terse (current), helper")
        child.sendline("/agent helper")
        child.expect_exact("agent terse -> helper from the next turn")
        child.expect("you> ")
        child.sendline("1 + 1?")
        child.expect_exact("Two.")
        child.expect("you> ")
        child.sendline("/agent")
        child.expect_exact("agents: terse, helper (current)")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    first, second = scenario.requests
    assert system_prompt(first.body) == TERSE and system_prompt(second.body) == HELPER
    history = [(m["role"], m["content"]) for m in sent_messages(second.body)[1:]]
    assert history == [
        ("user", "Hello"),
        ("assistant", "Hi."),
        ("system", "[The conversation is now handled by agent 'helper' (was 'terse').]"),
        ("user", "1 + 1?"),
    ]


async def test_the_files_store_is_where_run_keeps_and_sessions_finds_the_sessions(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, _ = fault_server.script(text("Stored."))
    conf = tmp_path / "conf" / "bot.toml"
    conf.parent.mkdir()
    conf.write_text(config_text(url) + '[store]\npath = "data/bot.db"\n')
    done = await cli("run", "hi", "--json", "--config", str(conf), env=clean_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    session = json.loads(done.stdout)["session"]
    assert (tmp_path / "conf" / "data" / "bot.db").is_file()  # relative to the file
    listed = await cli(
        "sessions", "list", "--json", "--config", str(conf), env=clean_env(), cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    assert [record["id"] for record in json.loads(listed.stdout)] == [session]
