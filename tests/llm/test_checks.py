"""Provider configuration is checked where it is built: bad keys, URLs and headers."""

from __future__ import annotations

import pytest

from agcore_actors.llm import (
    AnthropicConfig,
    AuthenticationError,
    LlmConfigError,
    OpenAICompatibleProvider,
    OpenAIConfig,
)
from tests.llm.helpers import chat
from tests.peers.fault_server import FaultServer, error_reply


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


async def test_sensitive_header_values_are_redacted_from_errors(fault_server: FaultServer) -> None:
    token = "azure-key-0123456789"
    url, _ = fault_server.script(error_reply(401, f"invalid api-key {token}"))
    provider = OpenAICompatibleProvider(
        OpenAIConfig(name="azure", base_url=url, headers={"api-key": token})
    )
    with pytest.raises(AuthenticationError) as info:
        await chat(provider)
    assert token not in str(info.value) and "***" in str(info.value)


def test_a_header_value_that_cannot_be_sent_is_a_config_error() -> None:
    with pytest.raises(LlmConfigError, match="X-Trace"):
        OpenAIConfig(headers={"X-Trace": "line\nbreak"})
