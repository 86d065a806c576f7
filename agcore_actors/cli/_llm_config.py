"""Which endpoint ``agcore-actors llm`` talks to, checked before any request.

The provider comes from the flags, else from the environment:
``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``OPENAI_MODEL`` (an OpenAI-compatible
endpoint; a base URL alone is enough for a local server), else ``ANTHROPIC_API_KEY``
(``ANTHROPIC_BASE_URL``, ``ANTHROPIC_MODEL``). Anything malformed — no provider, a
base URL that is not http(s), an API key with whitespace or non-ASCII characters —
is a :class:`UsageError` (exit 2) whose message never contains the key.

A local OpenAI-compatible server given without a model name is asked which models
it serves (``GET {base}/models``); if it names exactly one, requests name it, so
replies report it (llama.cpp echoes the requested name, even an empty one).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from urllib.parse import urlsplit

import httpx2

from ..llm import (
    AnthropicConfig,
    AnthropicProvider,
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    preset,
)
from ._convert import check_http_url
from ._errors import UsageError

KINDS = ("openai", "deepseek", "qwen", "anthropic")
_OPENAI_BASE_URL = OpenAIConfig().base_url


def _key(flag: str | None, env: Mapping[str, str], variable: str) -> str:
    key = flag or env.get(variable, "")
    source = "--api-key" if flag else variable
    if key and (not key.isascii() or not key.isprintable() or key != key.strip() or " " in key):
        raise UsageError(
            f"{source} is not a usable API key: it has whitespace or non-ASCII characters "
            "(the key is not shown)"
        )
    return key


def _base(flag: str | None, env: Mapping[str, str], variable: str) -> str | None:
    if flag:  # already checked by the --base-url converter
        return flag
    base = env.get(variable) or None
    if base is not None:
        check_http_url(base, variable)
    return base


def build_provider(args: argparse.Namespace, env: Mapping[str, str]) -> Provider:
    """The provider the flags and ``env`` describe; :class:`UsageError` if none or bad."""
    kind = args.provider
    if kind is None:
        if args.base_url or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY"):
            kind = "openai"
        elif env.get("ANTHROPIC_API_KEY"):
            kind = "anthropic"
        else:
            raise UsageError(
                "no provider: pass --provider/--base-url, or set OPENAI_API_KEY, "
                "OPENAI_BASE_URL or ANTHROPIC_API_KEY"
            )
    if kind == "anthropic":
        key = _key(args.api_key, env, "ANTHROPIC_API_KEY")
        base = _base(args.base_url, env, "ANTHROPIC_BASE_URL")
        model = args.model or env.get("ANTHROPIC_MODEL")
        default = AnthropicConfig()
        return AnthropicProvider(
            AnthropicConfig(
                api_key=key, base_url=base or default.base_url, model=model or default.model
            )
        )
    key = _key(args.api_key, env, "OPENAI_API_KEY")
    base = _base(args.base_url, env, "OPENAI_BASE_URL")
    model = args.model or env.get("OPENAI_MODEL")
    if kind == "openai":
        if not key and (not base or base.rstrip("/") == _OPENAI_BASE_URL):
            raise UsageError("the OpenAI API needs a key: set OPENAI_API_KEY or --api-key")
        return OpenAICompatibleProvider(
            OpenAIConfig(
                name="openai", base_url=base or _OPENAI_BASE_URL, api_key=key, model=model or ""
            )
        )
    vendor = preset(kind, key, model)
    if base:
        vendor = OpenAIConfig(name=vendor.name, base_url=base, api_key=key, model=vendor.model)
    return OpenAICompatibleProvider(vendor)


def configured_model(provider: Provider) -> str:
    """The model the provider's configuration names (``""``: none)."""
    if isinstance(provider, OpenAICompatibleProvider | AnthropicProvider):
        return provider.config.model
    return ""


def needs_model(provider: Provider) -> bool:
    """An OpenAI-compatible endpoint other than OpenAI's own, with no model configured."""
    if not isinstance(provider, OpenAICompatibleProvider):
        return False
    config = provider.config
    return not config.model and config.base_url.rstrip("/") != _OPENAI_BASE_URL


async def served_model(provider: Provider, timeout: float) -> str:
    """The one model the server lists at ``GET {base}/models``, or ``""`` when it lists
    none or several, or does not answer that well within ``timeout`` seconds (the real
    request then reports whatever is wrong)."""
    if not isinstance(provider, OpenAICompatibleProvider):
        return ""
    config = provider.config
    headers = {"authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        async with httpx2.AsyncClient(timeout=min(timeout, 10.0)) as client:
            response = await client.get(config.base_url.rstrip("/") + "/models", headers=headers)
        if response.status_code != 200:
            return ""
        body = response.json()
    except (httpx2.HTTPError, ValueError):
        return ""
    data = body.get("data") if isinstance(body, dict) else None
    ids = [m.get("id") for m in data if isinstance(m, dict)] if isinstance(data, list) else []
    return ids[0] if len(ids) == 1 and isinstance(ids[0], str) else ""


def not_found_hint(provider: Provider) -> str | None:
    """What to try after an HTTP 404, when the base URL's path looks wrong."""
    if isinstance(provider, OpenAICompatibleProvider):
        base = provider.config.base_url.rstrip("/")
        if not urlsplit(base).path.endswith("/v1"):
            return (
                f"the base URL {base} has no /v1 path; OpenAI-compatible servers answer "
                f"under it: try --base-url {base}/v1"
            )
    elif isinstance(provider, AnthropicProvider):
        base = provider.config.base_url.rstrip("/")
        if urlsplit(base).path.endswith("/v1"):
            return (
                f"the Anthropic base URL is given without /v1 (it is added): "
                f"try --base-url {base.removesuffix('/v1')}"
            )
    return None
