"""The bridge: each table maps onto the library's own configuration, and
:func:`open_runtime` starts a runtime whose turns really run (a fake OpenAI server, a real
stdio MCP server, the local model's actor over a stand-in server)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agcore_actors import ActorSystem
from agcore_actors.agent import SessionHost
from agcore_actors.config import (
    ConfigError,
    agent_config,
    agents_of,
    host_config,
    local_model_config,
    mcp_servers,
    open_runtime,
    parse_settings,
    provider_config,
    store_backend,
)
from agcore_actors.llm import ListProviders
from agcore_actors.local import CatalogModel, GgufFile
from agcore_actors.mcp import HttpServer, StdioServer
from agcore_actors.store import InMemorySessions, SqliteSessions
from agcore_actors.store import messages as sm
from tests.serve.helpers import ROOT, fake_openai, stored

RAW_MCP = ROOT / "tests" / "peers" / "mcp_raw_server.py"
FAKE_CHILD = ROOT / "tests" / "local" / "fake_child.py"


def test_retry_timeouts_host_and_store_map_onto_the_librarys_configs() -> None:
    settings = parse_settings(
        "[retry]\nmax_retries = 0\njitter = 0\n[timeouts]\ncall = inf\nidle = 5\n"
        "[host]\nmax_sessions = 7\nidle_ttl = 9.5\n"
        '[store]\npath = "/tmp/x.db"\nsynchronous = "NORMAL"\n'
    )
    config = provider_config(settings)
    assert (config.retry.max_retries, config.retry.jitter) == (0, 0.0)
    assert (config.timeouts.call, config.timeouts.idle) == (None, 5.0)
    host = host_config(settings)
    assert (host.max_sessions, host.idle_ttl) == (7, 9.5)
    assert store_backend(settings) == SqliteSessions("/tmp/x.db", synchronous="NORMAL")
    assert store_backend(parse_settings("")) == InMemorySessions()


def test_agents_get_their_limits_model_and_allow_lists() -> None:
    settings = parse_settings(
        '[providers.p]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "[mcpServers.fs]\ncommand = 'srv'\n"
        "[agents.a]\ninstructions = 'A'\n"
        "[agents.b]\nmodel = 'm'\ntemperature = 0.5\ntools = ['t']\nmcp_servers = ['fs']\n"
        "max_turns = 3\nturn_timeout = inf\n"
    )
    a, b = agents_of(settings, server_tools={"fs": ["fs-read", "fs-write"]})
    assert (a.name, a.instructions, a.tools) == ("a", "A", None)
    assert a.model.provider == "p"
    assert b.tools == frozenset({"t", "fs-read", "fs-write"})
    assert (b.model.model, b.model.temperature) == ("m", 0.5)
    first = agents_of(settings, first="b")
    assert [x.name for x in first] == ["b", "a"]
    limits = agent_config(settings.agents["b"])
    assert (limits.max_turns, limits.turn_timeout) == (3, None)
    with pytest.raises(ConfigError, match="no agent 'c'"):
        agents_of(settings, first="c")


def test_mcp_servers_map_to_the_mcp_shapes_and_disabled_ones_are_left_out() -> None:
    settings = parse_settings(
        "[mcpServers.fs]\ncommand = 'srv'\nargs = ['-v']\nenv = { T = 'x' }\n"
        "[mcpServers.web]\nurl = 'http://127.0.0.1:9/mcp'\nheaders = { A = 'b' }\n"
        "[mcpServers.off]\ncommand = 'x'\ndisabled = true\n"
    )
    assert mcp_servers(settings) == {
        "fs": StdioServer(command="srv", args=["-v"], env={"T": "x"}),
        "web": HttpServer(url="http://127.0.0.1:9/mcp", headers={"A": "b"}),
    }


def test_mcp_server_placeholders_are_expanded_or_named_when_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Fails on the old code: the header went on the wire as "Bearer ${GH_TOKEN}".
    monkeypatch.setenv("GH_TOKEN", "ghp-secret")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    settings = parse_settings(
        "[mcpServers.gh]\nurl = 'http://127.0.0.1:9/mcp'\n"
        "headers = { Authorization = 'Bearer ${env:GH_TOKEN}' }\n"
    )
    assert mcp_servers(settings) == {
        "gh": HttpServer(
            url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer ghp-secret"}
        )
    }
    unset = parse_settings("[mcpServers.fs]\ncommand = 'srv'\nargs = ['${NOT_SET_ANYWHERE}']\n")
    with pytest.raises(ConfigError, match="NOT_SET_ANYWHERE is not set"):
        mcp_servers(unset)


def test_an_http_server_oauth_table_reaches_the_mcp_config() -> None:
    settings = parse_settings(
        "[mcpServers.gh]\nurl = 'https://h/mcp'\n"
        "oauth = { grant = 'client_credentials', client_id = 'c', client_secret = 's3cret' }\n"
    )
    server = mcp_servers(settings)["gh"]
    assert isinstance(server, HttpServer) and server.oauth is not None
    assert server.oauth.grant == "client_credentials" and server.oauth.client_secret == "s3cret"
    bad = parse_settings("[mcpServers.gh]\nurl = 'https://h/mcp'\noauth = { grant = 'implicit' }\n")
    with pytest.raises(ConfigError, match=r"mcpServers\.gh"):
        mcp_servers(bad)


def test_resources_tool_and_require_approval_reach_the_mcp_config() -> None:
    settings = parse_settings(
        "[mcpServers.fs]\ncommand = 'srv'\nresources_tool = true\nrequire_approval = false\n"
        "parallel_sessions = true\n"
        "[mcpServers.web]\nurl = 'http://127.0.0.1:9/mcp'\nresources_tool = true\n"
        "[mcpServers.old]\nurl = 'http://127.0.0.1:9/sse'\ntype = 'sse'\n"
    )
    servers = mcp_servers(settings)
    assert servers["fs"] == StdioServer(
        command="srv", resources_tool=True, require_approval=False, parallel_sessions=True
    )
    assert servers["web"] == HttpServer(url="http://127.0.0.1:9/mcp", resources_tool=True)
    assert servers["old"] == HttpServer(url="http://127.0.0.1:9/sse", sse=True)


def test_a_local_provider_maps_to_the_catalog_or_a_gguf_file(tmp_path: Path) -> None:
    small = parse_settings('[providers.l]\nkind = "local"\nmodel = "small"\nthreads = 2')
    config = local_model_config(small.providers["l"])  # type: ignore[arg-type]
    assert config.source == CatalogModel(name="small") and config.threads == 2
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}")
    own = parse_settings(
        f'[providers.l]\nkind = "local"\ngguf = "{tmp_path}/m.gguf"\nchat_template = "{template}"'
    )
    config = local_model_config(own.providers["l"])  # type: ignore[arg-type]
    assert config.source == GgufFile(path=tmp_path / "m.gguf", chat_template="{{ messages }}")


def configured(base: str, tmp_path: Path, extra: str = "") -> str:
    return (
        f'[providers.fake]\nkind = "openai"\nbase_url = "{base}"\nmodel = "fake"\n'
        f'[store]\npath = "{tmp_path / "s.db"}"\n' + extra
    )


async def test_a_runtime_from_settings_runs_a_turn_and_stores_it(tmp_path: Path) -> None:
    with fake_openai() as base:
        text = configured(base, tmp_path, "[agents.helper]\n")
        settings = parse_settings(
            text.replace('model = "fake"', 'model = "fake"\napi_key = "sk-SECRET"')
        )
        async with (
            open_runtime(settings) as runtime,
            SessionHost(runtime.system, runtime.bundle, runtime.host_config) as host,
        ):
            assert "SECRET" not in repr(runtime)
            result = await host.run("s1", "hi")
            providers = await runtime.provider.ask(ListProviders())
            loaded = await runtime.store.ask(sm.LoadSession("s1"))
        assert result.status == "completed" and result.text
        assert (providers.names, providers.default) == (["fake"], "fake")
        assert loaded.record.turns == 1
    assert (tmp_path / "s.db").exists()


async def test_an_agents_mcp_servers_give_it_their_tools(tmp_path: Path) -> None:
    extra = (
        f'[mcpServers.raw]\ncommand = "{sys.executable}"\nargs = ["{RAW_MCP}", "paged"]\n'
        "[agents.plain]\n[agents.tooled]\nmcp_servers = ['raw']\n"
        "[agents.none]\ntools = []\n"
    )
    with fake_openai() as base:
        settings = parse_settings(configured(base, tmp_path, extra))
        async with (
            ActorSystem(strict=True, seed=0) as system,
            open_runtime(settings, system=system, agent="tooled") as runtime,
        ):
            agents = runtime.bundle.agents
            assert list(agents) == ["tooled", "plain", "none"]
            assert agents["tooled"].tools == frozenset(f"raw-t{i}" for i in range(5))
            assert agents["plain"].tools is None and agents["none"].tools == frozenset()
            assert runtime.bundle.registry is not None
            assert sorted(runtime.bundle.registry.names()) == [f"raw-t{i}" for i in range(5)]


async def test_only_the_local_providers_agents_use_are_started(tmp_path: Path) -> None:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF")
    wrapper = tmp_path / "fake-python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE_CHILD} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    local = f'kind = "local"\ngguf = "{model}"\npython = "{wrapper}"\nstart_timeout = 30\n'
    settings = parse_settings(f"[providers.used]\n{local}[providers.unused]\n{local}")
    async with (
        ActorSystem(strict=True, seed=0) as system,
        open_runtime(settings, system=system, local_ready_timeout=30) as runtime,
    ):
        assert list(runtime.local_servers) == ["used"]
        assert runtime.local_servers["used"].startswith("http://127.0.0.1:")
        providers = await runtime.provider.ask(ListProviders())
        assert providers.names == ["used"]
        with pytest.raises(LookupError):
            system.lookup("local-model:unused")


async def test_an_unknown_start_agent_is_refused_before_anything_starts() -> None:
    with pytest.raises(ConfigError) as info:
        async with open_runtime(parse_settings(""), agent="nope"):
            pass
    assert str(info.value) == (
        "open_runtime: agent: expected a configured agent (assistant), got 'nope'"
    )


def serve(*args: str, env: dict[str, str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "agcore_actors.cli", "serve", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
    )


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    return env


def test_serve_builds_its_runtime_from_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "bot.toml"
    with fake_openai() as base:
        config.write_text(configured(base, tmp_path))
        process = serve(
            "--stdio",
            "--config",
            str(config),
            env=clean_env(tmp_path),
            stdin=json.dumps({"session": "a", "text": "hi"}).encode() + b"\n",
        )
    assert process.returncode == 0, process.stderr.decode()
    events = [json.loads(line) for line in process.stdout.decode().splitlines()]
    assert any(e.get("event") == "turn_completed" for e in events), events
    assert stored(tmp_path / "s.db", ["a"])["a"].record.turns == 1


def test_serve_with_a_bad_config_exits_2_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bot.toml"
    config.write_text("[host]\nmax_sessions = 'many'\n")
    process = serve("--stdio", "--config", str(config), env=clean_env(tmp_path), stdin=b"")
    assert process.returncode == 2
    assert process.stderr.decode() == (
        f'agcore-actors serve: config: {config}: host.max_sessions: expected int, got str "many"\n'
    )
