"""Provider configuration is checked where it is built: bad keys, URLs and headers."""

from __future__ import annotations

import pytest

from agcore_actors.llm import (
    AnthropicConfig,
    LlmConfigError,
    OpenAIConfig,
)

# -- issue 11 regressions ------------------------------------------------------------


@pytest.mark.parametrize("key", ["sk-secret-key-123\n", "sk-sécret-key-123", " sk-secret-key-123"])
def test_a_bad_api_key_is_a_config_error_that_never_shows_it(key: str) -> None:
    with pytest.raises(LlmConfigError) as info:
        OpenAIConfig(api_key=key)
    assert "sk-" not in str(info.value) and "api_key" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(LlmConfigError):
        AnthropicConfig(api_key=key)


def test_a_base_url_that_is_not_http_is_a_config_error() -> None:
    with pytest.raises(LlmConfigError, match="base_url"):
        OpenAIConfig(base_url="not-a-url")
