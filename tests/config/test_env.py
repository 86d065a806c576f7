"""The environment over the file: the providers' own variables, ``AGCORE_INSTRUCTIONS``,
and ``AGCORE_<KEY>__<KEY>`` for any key; an error names the variable."""

from __future__ import annotations

import pytest

from agcore_actors.config import (
    AnthropicProviderSettings,
    ConfigError,
    OpenAIProviderSettings,
    StdioServerSettings,
    parse_settings,
)

FILE_WITH_PROVIDER = """
[providers.mine]
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen"
"""


def test_openai_variables_configure_a_provider_that_wins_over_the_embedded_model() -> None:
    env = {"OPENAI_API_KEY": "sk-1", "OPENAI_MODEL": "gpt-4o-mini"}
    settings = parse_settings("", env=env)
    assert list(settings.providers) == ["openai"] and settings.default_provider == "openai"
    provider = settings.providers["openai"]
    assert isinstance(provider, OpenAIProviderSettings)
    assert (provider.api_key, provider.model) == ("sk-1", "gpt-4o-mini")
    assert provider.base_url == "https://api.openai.com/v1"


def test_a_base_url_alone_configures_a_local_server_without_a_key() -> None:
    settings = parse_settings("", env={"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"})
    provider = settings.providers["openai"]
    assert isinstance(provider, OpenAIProviderSettings)
    assert provider.base_url == "http://127.0.0.1:8080/v1" and provider.api_key == ""


def test_anthropic_key_configures_anthropic() -> None:
    env = {"ANTHROPIC_API_KEY": "ak-1", "ANTHROPIC_MODEL": "claude-x"}
    settings = parse_settings("", env=env)
    provider = settings.providers["anthropic"]
    assert isinstance(provider, AnthropicProviderSettings)
    assert (provider.api_key, provider.model) == ("ak-1", "claude-x")
    assert settings.default_provider == "anthropic"


def test_openai_comes_before_anthropic_when_both_are_set() -> None:
    settings = parse_settings("", env={"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"})
    assert settings.default_provider == "openai" and set(settings.providers) == {
        "openai",
        "anthropic",
    }


def test_a_model_variable_alone_configures_nothing() -> None:
    settings = parse_settings("", env={"OPENAI_MODEL": "gpt", "ANTHROPIC_MODEL": "claude"})
    assert list(settings.providers) == ["local"]


def test_the_files_provider_stays_the_default_when_variables_add_one() -> None:
    settings = parse_settings(FILE_WITH_PROVIDER, env={"OPENAI_API_KEY": "sk-1"})
    assert settings.default_provider == "mine" and list(settings.providers) == ["mine", "openai"]


def test_the_variables_override_the_files_openai_provider() -> None:
    text = '[providers.openai]\nkind = "openai"\napi_key = "old"\nmodel = "a"'
    settings = parse_settings(text, env={"OPENAI_API_KEY": "new", "OPENAI_MODEL": "b"})
    provider = settings.providers["openai"]
    assert isinstance(provider, OpenAIProviderSettings)
    assert (provider.api_key, provider.model) == ("new", "b")


def test_a_variable_for_a_provider_of_another_kind_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings('[providers.openai]\nkind = "local"', env={"OPENAI_API_KEY": "k"})
    assert str(info.value) == (
        "OPENAI_API_KEY: providers.openai.kind: expected 'openai' to apply OPENAI_API_KEY"
    )


def test_agcore_instructions_sets_the_default_agents_instructions() -> None:
    settings = parse_settings("", env={"AGCORE_INSTRUCTIONS": "Be brief."})
    assert settings.agents["assistant"].instructions == "Be brief."
    text = '[agents.a]\n[agents.b]\ninstructions = "x"\n'
    named = parse_settings('default_agent = "b"\n' + text, env={"AGCORE_INSTRUCTIONS": "y"})
    assert named.agents["b"].instructions == "y" and named.agents["a"].instructions != "y"


def test_double_underscore_variables_set_any_key_case_insensitively() -> None:
    env = {
        "AGCORE_HOST__MAX_SESSIONS": "12",
        "AGCORE_LOGGING__LEVEL": "debug",
        "AGCORE_TIMEOUTS__CALL": "inf",
        "AGCORE_PROVIDERS__MINE__MODEL": "llama",
        "AGCORE_AGENTS__HELPER__TOOLS": '["a", "b"]',
        "AGCORE_AGENTS__HELPER__INSTRUCTIONS": "[not a list]",
        "AGCORE_MCPSERVERS__FS__COMMAND": "mcp-fs",
        "AGCORE_MCPSERVERS__FS__ENV__API_TOKEN": "t",
        "AGCORE_DEFAULT_AGENT": "helper",
    }
    settings = parse_settings(FILE_WITH_PROVIDER, env=env)
    assert settings.host.max_sessions == 12 and settings.logging.level == "debug"
    assert settings.timeouts.call == float("inf")
    provider = settings.providers["mine"]
    assert isinstance(provider, OpenAIProviderSettings) and provider.model == "llama"
    helper = settings.agents["helper"]
    assert helper.tools == ("a", "b") and helper.instructions == "[not a list]"
    assert settings.default_agent == "helper"
    server = settings.mcp_servers["fs"]
    assert isinstance(server, StdioServerSettings) and dict(server.env) == {"API_TOKEN": "t"}


def test_variables_win_over_the_file() -> None:
    settings = parse_settings("[host]\nmax_sessions = 5", env={"AGCORE_HOST__MAX_SESSIONS": "6"})
    assert settings.host.max_sessions == 6


def test_other_agcore_variables_are_not_configuration() -> None:
    env = {"AGCORE_SERVE_TOKEN": "t", "AGCORE_ACTORS_CACHE": "/tmp/x", "AGCORE_FOO": "1"}
    assert parse_settings("", env=env) == parse_settings("")


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"AGCORE_HOST__MAX_SESSIONS": "ten"},
            'AGCORE_HOST__MAX_SESSIONS: host.max_sessions: expected int, got str "ten"',
        ),
        (
            {"AGCORE_HOST__MAX_SESION": "1"},
            "AGCORE_HOST__MAX_SESION: host.max_sesion: unknown key; did you mean max_sessions?",
        ),
        (
            {"AGCORE_HOSTS__MAX_SESSIONS": "1"},
            "AGCORE_HOSTS__MAX_SESSIONS: hosts: unknown key; did you mean host?",
        ),
        (
            {"AGCORE_HOST__MAX_SESSIONS__X": "1"},
            "AGCORE_HOST__MAX_SESSIONS__X: host.max_sessions: expected no key below it",
        ),
        (
            {"AGCORE_MCPSERVERS__FS__ARGS": "[1]"},
            "AGCORE_MCPSERVERS__FS__ARGS: mcpServers.fs: expected exactly one of command "
            "(stdio) or url (HTTP)",
        ),
        (
            {"AGCORE_LOGGING__LEVEL": "loud"},
            'AGCORE_LOGGING__LEVEL: logging.level: expected one of "debug", "info", "warning", '
            '"error", got str "loud"',
        ),
    ],
)
def test_a_bad_variable_is_one_line_naming_the_variable(env: dict[str, str], line: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings("", env=env)
    assert str(info.value) == line


def test_a_bad_value_from_the_file_still_names_the_file() -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(
            "[host]\nmax_queued = 'x'", source="bot.toml", env={"AGCORE_HOST__MAX_SESSIONS": "3"}
        )
    assert str(info.value).startswith("bot.toml: host.max_queued: ")


def test_api_key_env_reads_the_key_from_the_named_variable() -> None:
    text = '[providers.p]\nkind = "anthropic"\napi_key_env = "MY_KEY"'
    provider = parse_settings(text, env={"MY_KEY": "ak-9"}).providers["p"]
    assert isinstance(provider, AnthropicProviderSettings) and provider.api_key == "ak-9"
    with pytest.raises(ConfigError) as info:
        parse_settings(text, env={})
    assert str(info.value) == (
        "agcore.toml: providers.p.api_key_env: expected a set environment variable, "
        'got str "MY_KEY"'
    )
    with pytest.raises(ConfigError) as info:
        parse_settings(text, env={"MY_KEY": "ak 9 secret"})
    assert str(info.value) == (
        "MY_KEY: providers.p.api_key: expected printable ASCII without whitespace, "
        "got str (value hidden)"
    )
    assert "secret" not in str(info.value)


def test_an_api_key_variable_with_a_newline_is_refused_without_showing_it() -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings("", env={"OPENAI_API_KEY": "sk-SECRET\n"})
    assert str(info.value) == (
        "OPENAI_API_KEY: providers.openai.api_key: expected printable ASCII without "
        "whitespace, got str (value hidden)"
    )
