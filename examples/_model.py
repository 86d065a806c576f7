"""The model the examples talk to: any OpenAI-compatible endpoint, named by the environment.

``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``), ``OPENAI_API_KEY`` and
``OPENAI_MODEL`` (default ``gpt-4o-mini``). Point them at OpenAI, DeepSeek, a local
llama.cpp server (``agcore_actors.local``) or anything else that speaks Chat Completions,
and every example runs unchanged; the test suite points them at a fake server on
127.0.0.1.
"""

from __future__ import annotations

import os

from agcore_actors import ChildSpec
from agcore_actors.llm import (
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderConfig,
    ProviderMsg,
    ProviderRegistry,
    provider_spec,
)

__all__ = ["llm_spec", "model_config"]


def model_config() -> OpenAIConfig:
    """Where the model is, from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL``."""
    return OpenAIConfig(
        base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        api_key=os.environ.get("OPENAI_API_KEY", ""),
        model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
    )


def llm_spec(name: str = "llm", *, config: ProviderConfig | None = None) -> ChildSpec[ProviderMsg]:
    """A ProviderActor (one HTTP client, retries, usage) over :func:`model_config`."""
    registry = ProviderRegistry().register(OpenAICompatibleProvider(model_config()))
    return provider_spec(name, registry=registry, config=config)
