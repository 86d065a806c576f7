"""Whatever the file or the environment holds, loading ends in :class:`Settings` or one
:class:`ConfigError` line — never another exception — and a secret never shows.

Random documents are built from the schema's own keys mixed with random ones (so they
reach deep into the tables), random values of every TOML type, and random text; the
hand-written nasty files are in ``tests/config/corpus``.
"""

from __future__ import annotations

import datetime
import math
from pathlib import Path
from typing import Any

import attrs
import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors.config import ConfigError, Settings, load_settings, parse_settings
from agcore_actors.config._problems import toml_keys
from agcore_actors.config._schema import (
    AgentSettings,
    AnthropicProviderSettings,
    HostSettings,
    HttpServerSettings,
    LocalProviderSettings,
    LoggingSettings,
    OpenAIProviderSettings,
    RetrySettings,
    StdioServerSettings,
    StoreSettings,
    TimeoutSettings,
)

CORPUS = Path(__file__).with_name("corpus")
CLASSES = (
    Settings,
    AgentSettings,
    AnthropicProviderSettings,
    HostSettings,
    HttpServerSettings,
    LocalProviderSettings,
    LoggingSettings,
    OpenAIProviderSettings,
    RetrySettings,
    StdioServerSettings,
    StoreSettings,
    TimeoutSettings,
)
KEYS = sorted({key for cls in CLASSES for key in toml_keys(cls)})
WORDS = [*KEYS, "openai", "anthropic", "local", "small", "default", "a", "fs", "http://x/v1"]

keys = st.one_of(st.sampled_from(KEYS), st.sampled_from(WORDS), st.text(max_size=8))
scalars = st.one_of(
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(WORDS),
    st.text(max_size=20),
    st.datetimes(max_value=datetime.datetime(9999, 1, 1)),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=8,
)
documents = st.dictionaries(keys, values, max_size=5)


def _tables(draw: Any) -> dict[str, Any]:
    """A document shaped like the schema: named tables under providers/agents/mcpServers."""
    named = st.dictionaries(st.sampled_from(["a", "b", "fs", "openai"]), documents, max_size=3)
    doc: dict[str, Any] = draw(documents)
    for table in ("providers", "agents", "mcpServers"):
        if draw(st.booleans()):
            doc[table] = draw(named)
    for table in ("store", "host", "retry", "timeouts", "logging"):
        if draw(st.booleans()):
            doc[table] = draw(documents)
    return doc


schema_documents = st.composite(_tables)()

env_values = st.one_of(
    st.sampled_from(["1", "0", "true", "inf", "nan", "[1, 2]", '["a"]', "{a = 1}", "", "x"]),
    st.text(max_size=10).filter(lambda s: "\x00" not in s),
)
env_names = st.builds(
    lambda parts: "AGCORE_" + "__".join(parts),
    st.lists(
        st.one_of(st.sampled_from(KEYS), st.sampled_from(["a", "FS", "x"])), min_size=1, max_size=4
    ),
)
envs = st.dictionaries(
    st.one_of(
        env_names,
        st.sampled_from(
            [
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                "OPENAI_MODEL",
                "ANTHROPIC_API_KEY",
                "AGCORE_INSTRUCTIONS",
                "AGCORE_SERVE_TOKEN",
            ]
        ),
    ),
    env_values,
    max_size=4,
)


def settle(text: str, env: dict[str, str]) -> Settings | ConfigError:
    try:
        return parse_settings(text, env=env)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return exc


def dump(doc: dict[str, Any]) -> str | None:
    try:
        return tomli_w.dumps(doc)
    except (TypeError, ValueError):  # a value TOML cannot hold
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_documents, envs)
def test_random_documents_load_or_fail_with_one_config_error(
    doc: dict[str, Any], env: dict[str, str]
) -> None:
    text = dump(doc)
    if text is not None:
        assert isinstance(settle(text, env), Settings | ConfigError)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), envs)
def test_random_text_loads_or_fails_with_one_config_error(text: str, env: dict[str, str]) -> None:
    assert isinstance(settle(text, env), Settings | ConfigError)


SECRET = "Zq9Zq9Zq9SECRET"


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(
        [
            ("providers", "p", "api_key"),
            ("providers", "p", "headers", "Authorization"),
            ("mcpServers", "fs", "env", "TOKEN"),
            ("mcpServers", "web", "headers", "Authorization"),
        ]
    ),
    st.sampled_from([SECRET, SECRET + " ", SECRET + "\n", [SECRET], {"x": SECRET}]),
    st.dictionaries(keys, scalars, max_size=3),
)
def test_a_secret_never_shows_in_an_error_or_a_repr(
    where: tuple[str, ...], secret: Any, noise: dict[str, Any]
) -> None:
    doc: dict[str, Any] = {
        "providers": {"p": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}},
        "mcpServers": {"fs": {"command": "srv"}, "web": {"url": "http://127.0.0.1:9/mcp"}},
    }
    doc["host"] = noise
    node = doc
    for key in where[:-1]:
        node = node.setdefault(key, {})
    node[where[-1]] = secret
    text = dump(doc)
    assert text is not None
    result = settle(text, {})
    shown = str(result) + repr(result) + repr(getattr(result, "args", ""))
    assert SECRET not in shown


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.iterdir()))
def test_every_corpus_file_loads_or_fails_with_one_config_error(name: str) -> None:
    try:
        result: Settings | ConfigError = load_settings(CORPUS / name, env={})
    except ConfigError as exc:
        result = exc
        assert "\n" not in str(exc) and str(exc).startswith(str(CORPUS / name))
    assert isinstance(result, Settings | ConfigError)
    assert "secret-value-123" not in str(result)


def test_settings_that_loaded_are_well_formed() -> None:
    """What the hostile tests accept is complete: the defaults filled, names resolvable."""
    settings = load_settings(CORPUS / "unicode_names.toml", env={})
    assert settings.default_agent in settings.agents
    assert settings.default_provider in settings.providers
    assert all(attrs.has(type(a)) for a in settings.agents.values())
    assert not math.isnan(settings.host.idle_ttl)
