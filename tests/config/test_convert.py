"""A bad configuration is one :class:`ConfigError` line naming the file, the key path and
what was expected — for a wrong type and for an unknown key in every table."""

from __future__ import annotations

import pytest

from agcore_actors import AgcoreError
from agcore_actors.config import (
    ConfigError,
    HttpServerSettings,
    OpenAIProviderSettings,
    Settings,
    StdioServerSettings,
    parse_settings,
)

# table -> (a document with a wrong type, the line it must fail with)
WRONG_TYPE = {
    "top": ("default_agent = 3", "default_agent: expected str, got int 3"),
    "providers.openai": (
        '[providers.p]\nkind = "openai"\nmodel = ["gpt"]',
        "providers.p.model: expected str, got array",
    ),
    "providers.anthropic": (
        '[providers.p]\nkind = "anthropic"\nmax_tokens = "many"',
        'providers.p.max_tokens: expected int, got str "many"',
    ),
    "providers.local": (
        '[providers.p]\nkind = "local"\nthreads = 1.5',
        "providers.p.threads: expected int, got float 1.5",
    ),
    "providers.kind": (
        '[providers.p]\nkind = "opnai"',
        'providers.p.kind: expected one of "openai", "anthropic", "local", got str "opnai"',
    ),
    "agents": (
        '[agents.helper]\nmax_turns = "ten"',
        'agents.helper.max_turns: expected int, got str "ten"',
    ),
    "agents.tools": (
        '[agents.helper]\ntools = ["a", 3]',
        "agents.helper.tools[1]: expected str, got int 3",
    ),
    "mcpServers.stdio": (
        '[mcpServers.fs]\ncommand = "srv"\nargs = "--root /"',
        'mcpServers.fs.args: expected array, got str "--root /"',
    ),
    "mcpServers.http": (
        '[mcpServers.web]\nurl = "http://127.0.0.1:8000/mcp"\ndisabled = "no"',
        'mcpServers.web.disabled: expected bool, got str "no"',
    ),
    "store": ("[store]\npath = 3", "store.path: expected str, got int 3"),
    "host": (
        "[host]\nmax_sessions = true",
        "host.max_sessions: expected int, got bool true",
    ),
    "retry": ('[retry]\nmax_retries = "3"', 'retry.max_retries: expected int, got str "3"'),
    "timeouts": ('[timeouts]\ncall = "10s"', 'timeouts.call: expected float, got str "10s"'),
    "logging": (
        '[logging]\nlevel = "loud"',
        'logging.level: expected one of "debug", "info", "warning", "error", got str "loud"',
    ),
}

UNKNOWN_KEY = {
    "top": ("defualt_agent = 'a'", "defualt_agent: unknown key; did you mean default_agent?"),
    "providers.openai": (
        '[providers.p]\nkind = "openai"\nbase_ur = "http://x"',
        "providers.p.base_ur: unknown key; did you mean base_url?",
    ),
    "providers.anthropic": (
        '[providers.p]\nkind = "anthropic"\nmax_token = 5',
        "providers.p.max_token: unknown key; did you mean max_tokens?",
    ),
    "providers.local": (
        '[providers.p]\nkind = "local"\nthread = 2',
        "providers.p.thread: unknown key; did you mean threads?",
    ),
    "agents": (
        "[agents.helper]\nmax_turn = 3",
        "agents.helper.max_turn: unknown key; did you mean max_turns?",
    ),
    "mcpServers.stdio": (
        '[mcpServers.fs]\ncommand = "srv"\nenviron = {}',
        "mcpServers.fs.environ: unknown key; did you mean env?",
    ),
    "mcpServers.http": (
        '[mcpServers.web]\nurl = "http://127.0.0.1:8000/mcp"\nheader = {}',
        "mcpServers.web.header: unknown key; did you mean headers?",
    ),
    "store": ("[store]\npth = 'x.db'", "store.pth: unknown key; did you mean path?"),
    "host": (
        "[host]\nmax_sesions = 3",
        "host.max_sesions: unknown key; did you mean max_sessions?",
    ),
    "retry": ("[retry]\nretries = 3", "retry.retries: unknown key; did you mean max_retries?"),
    "timeouts": ("[timeouts]\nconect = 3.0", "timeouts.conect: unknown key; did you mean connect?"),
    "logging": ("[logging]\nlevl = 'info'", "logging.levl: unknown key; did you mean level?"),
}


def error_of(text: str, source: str = "agcore.toml") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_settings(text, source=source)
    return info.value


@pytest.mark.parametrize("table", sorted(WRONG_TYPE))
def test_a_wrong_type_is_one_line_naming_file_key_and_expected_type(table: str) -> None:
    text, line = WRONG_TYPE[table]
    error = error_of(text)
    assert str(error) == f"agcore.toml: {line}"
    assert "\n" not in str(error)


@pytest.mark.parametrize("table", sorted(UNKNOWN_KEY))
def test_an_unknown_key_is_one_line_with_a_did_you_mean(table: str) -> None:
    text, line = UNKNOWN_KEY[table]
    assert str(error_of(text)) == f"agcore.toml: {line}"


def test_an_unknown_key_far_from_every_key_lists_the_keys() -> None:
    assert str(error_of("[store]\nzzz = 1")) == (
        "agcore.toml: store.zzz: unknown key; expected one of path, synchronous, url"
    )


def test_an_unknown_table_is_refused() -> None:
    assert str(error_of("[hosts]\nmax_sessions = 1")).startswith(
        "agcore.toml: hosts: unknown key; did you mean host?"
    )


def test_config_error_is_an_agcore_value_error_with_its_own_kind() -> None:
    error = error_of("[host]\nmax_sessions = 'x'", source="bot.toml")
    assert isinstance(error, AgcoreError) and isinstance(error, ValueError)
    assert error.kind == "config"
    assert (error.source, error.path) == ("bot.toml", "host.max_sessions")
    assert error.problem == 'expected int, got str "x"'


def test_a_validator_failure_names_the_key_and_the_rule() -> None:
    assert str(error_of("[host]\nmax_sessions = 0")) == (
        "agcore.toml: host.max_sessions: expected an integer >= 1, got int 0"
    )
    assert str(error_of("[retry]\njitter = 2")) == (
        "agcore.toml: retry.jitter: expected between 0 and 1, got int 2"
    )
    assert str(error_of("[timeouts]\ncall = nan")) == (
        "agcore.toml: timeouts.call: expected > 0, got float nan"
    )


def test_a_table_where_a_value_belongs_and_the_reverse() -> None:
    assert str(error_of("agents = [1]")) == "agcore.toml: agents: expected table, got array"
    assert str(error_of("store = 'x.db'")) == 'agcore.toml: store: expected table, got str "x.db"'
    assert str(error_of("[host.max_sessions]\na = 1")) == (
        "agcore.toml: host.max_sessions: expected int, got table"
    )


def test_a_provider_without_kind_and_a_server_with_neither_command_nor_url() -> None:
    assert str(error_of("[providers.p]\nmodel = 'm'")) == (
        'agcore.toml: providers.p.kind: missing key, expected one of "openai", "anthropic", "local"'
    )
    assert str(error_of("[mcpServers.fs]\nargs = []")) == (
        "agcore.toml: mcpServers.fs: expected exactly one of command (stdio) or url (HTTP)"
    )
    assert str(error_of("[mcpServers.fs]\ncommand = 'a'\nurl = 'http://x'")) == (
        "agcore.toml: mcpServers.fs: expected exactly one of command (stdio) or url (HTTP)"
    )


def test_several_problems_report_the_first_and_count_the_rest() -> None:
    error = error_of("[host]\nmax_sessions = 'a'\nmax_queued = 'b'\nbogus = 1")
    assert str(error) == 'agcore.toml: host.max_sessions: expected int, got str "a" (and 2 more)'


def test_keys_that_are_not_bare_are_quoted_in_the_path() -> None:
    error = error_of('[agents."my agent"]\nmax_turns = "x"')
    assert str(error) == 'agcore.toml: agents."my agent".max_turns: expected int, got str "x"'


def test_long_values_are_cut_in_the_line() -> None:
    error = error_of(f"[host]\nmax_sessions = '{'x' * 500}'")
    assert len(str(error)) < 120 and "…" in str(error)


def test_invalid_toml_names_the_file_and_the_position() -> None:
    error = error_of("[host\nmax_sessions = 1", source="bot.toml")
    assert str(error).startswith("bot.toml: invalid TOML: ") and "line 1" in str(error)
    assert error.path == ""


def test_names_across_tables_are_checked() -> None:
    text = '[providers.openai]\nkind = "openai"\napi_key = "k"\n[agents.a]\nprovider = "opnai"'
    assert str(error_of(text)) == (
        "agcore.toml: agents.a.provider: expected a configured provider (openai), "
        'got str "opnai" (did you mean openai?)'
    )
    assert str(error_of('[agents.a]\nmcp_servers = ["fs"]')) == (
        "agcore.toml: agents.a.mcp_servers[0]: expected a configured MCP server "
        '(none is configured), got str "fs"'
    )
    assert str(error_of('[agents.a]\nsubagents = ["a"]')).startswith(
        "agcore.toml: agents.a.subagents[0]: expected a configured agent"
    )
    assert str(error_of('default_agent = "b"\n[agents.a]')).startswith(
        "agcore.toml: default_agent: expected a configured agent (a)"
    )
    assert str(error_of('default_provider = "x"')).startswith(
        "agcore.toml: default_provider: expected a configured provider (local)"
    )


def test_openais_own_api_without_a_key_is_refused_at_load() -> None:
    assert str(error_of('[providers.openai]\nkind = "openai"')) == (
        "agcore.toml: providers.openai.api_key: expected a key for OpenAI's API "
        "(set OPENAI_API_KEY, api_key_env or base_url)"
    )


def test_an_empty_file_is_the_defaults_with_the_embedded_model() -> None:
    settings = parse_settings("")
    assert isinstance(settings, Settings)
    assert settings.default_provider == "local" and settings.providers["local"].kind == "local"
    assert settings.default_agent == "assistant" and list(settings.agents) == ["assistant"]
    assert settings.store.path is None


def test_the_first_provider_and_agent_are_the_defaults_unless_named() -> None:
    text = (
        '[providers.b]\nkind = "local"\nmodel = "small"\n'
        '[providers.a]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        "[agents.y]\n[agents.x]\nprovider = 'a'"
    )
    settings = parse_settings(text)
    assert (settings.default_provider, settings.default_agent) == ("b", "y")
    named = parse_settings('default_provider = "a"\ndefault_agent = "x"\n' + text)
    assert (named.default_provider, named.default_agent) == ("a", "x")


def test_a_full_file_maps_every_table() -> None:
    settings = parse_settings(
        """
        [providers.gpt]
        kind = "openai"
        base_url = "http://127.0.0.1:8080/v1"
        model = "qwen"
        extra_body = { top_k = 20 }
        [agents.helper]
        provider = "gpt"
        temperature = 0
        tools = ["search"]
        mcp_servers = ["fs"]
        turn_timeout = inf
        [mcpServers.fs]
        command = "mcp-fs"
        args = ["/srv"]
        [mcpServers.web]
        url = "https://example.com/mcp"
        type = "streamable-http"
        [store]
        path = "/var/lib/bot/sessions.db"
        synchronous = "NORMAL"
        [host]
        max_sessions = 100
        [retry]
        max_retries = 0
        [timeouts]
        idle = 30
        [logging]
        format = "json"
        """
    )
    helper = settings.agents["helper"]
    assert helper.temperature == 0.0 and isinstance(helper.temperature, float)
    assert helper.tools == ("search",) and helper.turn_timeout == float("inf")
    assert isinstance(settings.mcp_servers["fs"], StdioServerSettings)
    assert isinstance(settings.mcp_servers["web"], HttpServerSettings)
    assert settings.store.synchronous == "NORMAL" and settings.host.max_sessions == 100
    assert settings.timeouts.idle == 30.0 and settings.logging.format == "json"
    gpt = settings.providers["gpt"]
    assert isinstance(gpt, OpenAIProviderSettings) and gpt.extra_body == {"top_k": 20}
