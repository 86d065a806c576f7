"""The runtime factory's choices (a configured provider wins, else the embedded model)
and the store's default place."""

from __future__ import annotations

from pathlib import Path

import pytest

from agcore_actors.cli._errors import UsageError
from agcore_actors.cli._runtime import RuntimeOptions, _configured, default_store_path
from agcore_actors.llm import (
    AnthropicProvider,
    FunctionDefinition,
    OpenAICompatibleProvider,
    ToolDefinition,
)

TOOLS = [ToolDefinition(FunctionDefinition("f", "F.", {"type": "object"}))]


def test_with_nothing_configured_the_embedded_model_answers() -> None:
    assert _configured(RuntimeOptions(), {}) is None


def test_a_configured_provider_wins_over_the_embedded_model() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_MODEL": "m"}
    provider = _configured(RuntimeOptions(), env)
    assert isinstance(provider, OpenAICompatibleProvider)
    assert provider.config.base_url == "http://127.0.0.1:9/v1" and provider.config.model == "m"
    anthropic = _configured(RuntimeOptions(), {"ANTHROPIC_API_KEY": "sk-ant-x"})
    assert isinstance(anthropic, AnthropicProvider)
    flags = RuntimeOptions(base_url="http://127.0.0.1:8/v1", model_name="x")
    assert isinstance(_configured(flags, {}), OpenAICompatibleProvider)


def test_small_or_a_gguf_file_asks_for_the_embedded_model_even_with_a_provider_in_env() -> None:
    env = {"OPENAI_API_KEY": "sk-x"}
    assert _configured(RuntimeOptions(small=True), env) is None
    assert _configured(RuntimeOptions(gguf=Path("m.gguf")), env) is None
    with pytest.raises(UsageError):
        _configured(RuntimeOptions(small=True, base_url="http://127.0.0.1:9/v1"), {})


def test_the_store_lives_in_a_per_user_data_directory(tmp_path: Path) -> None:
    assert default_store_path({"AGCORE_ACTORS_DATA": "/d"}) == Path("/d/sessions.db")
    assert default_store_path({"XDG_DATA_HOME": "/x"}) == Path("/x/agcore-actors/sessions.db")
    assert default_store_path({}) == Path.home() / ".local/share/agcore-actors/sessions.db"
