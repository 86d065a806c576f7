"""``[telemetry] tracing = true``: the :class:`~agcore_actors.serve.tracing.TurnTracer` that
``serve`` passes to its server, exporting by OTLP as the standard ``OTEL_*`` variables say.

The ``otel`` extra is checked before anything starts (:func:`check`): a missing package is
one line naming the extra, exit 2. Each configured provider becomes an
:class:`~agcore_actors.serve.tracing.Endpoint` (its kind as ``gen_ai.provider.name``, the
host and port of its ``base_url``), so every model-call span names who answered.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from ..config import (
    AnthropicProviderSettings,
    LocalProviderSettings,
    OpenAIProviderSettings,
    ProviderSettings,
    Settings,
)
from ._errors import MissingExtra

__all__ = ["check", "route_logs", "turn_tracer"]

#: The modules tracing imports, each of the ``otel`` extra.
_MODULES = (
    "opentelemetry.trace",
    "opentelemetry.sdk.trace",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
)


def check(settings: Settings) -> None:
    """Raise :class:`MissingExtra` when tracing is on and the ``otel`` extra is missing."""
    if not settings.telemetry.tracing:
        return
    for module in _MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtra("[telemetry] tracing", "otel", module) from None


def route_logs(handler: logging.Handler) -> None:
    """The SDK's own records (an export that failed...) through ``serve``'s handler, in its
    format (``--log-format json``: JSON lines too), not Python's bare last resort."""
    sdk = logging.getLogger("opentelemetry")
    sdk.addHandler(handler)
    sdk.propagate = False


def _endpoint(settings: ProviderSettings) -> tuple[str, str, int]:
    """The provider name of the semantic conventions, and the server's host and port."""
    match settings:
        case OpenAIProviderSettings(base_url=url) | AnthropicProviderSettings(base_url=url):
            kind = "anthropic" if isinstance(settings, AnthropicProviderSettings) else "openai"
            parts = urlsplit(url)
            default = 443 if parts.scheme == "https" else 80
            try:
                port = parts.port or default
            except ValueError:
                port = default
            return kind, parts.hostname or "", port
        case LocalProviderSettings():
            return "llama.cpp", "127.0.0.1", 0
    return "", "", 0


def _model(settings: ProviderSettings | None) -> str:
    return "" if settings is None else str(getattr(settings, "model", "") or "")


@contextmanager
def turn_tracer(settings: Settings) -> Iterator[Any]:
    """The tracer ``serve`` passes (None when tracing is off); leaving flushes the spans
    still buffered (bounded by the exporter's timeout) and stops the exporter."""
    if not settings.telemetry.tracing:
        yield None
        return
    from ..serve.tracing import Endpoint, TurnTracer, otlp_provider

    endpoints = {}
    for name, provider in settings.providers.items():
        kind, address, port = _endpoint(provider)
        endpoints[name] = Endpoint(kind or name, address, port)
    default = settings.default_provider
    provider = otlp_provider()
    try:
        yield TurnTracer(
            provider.get_tracer("agcore_actors.serve"),
            provider=default,
            model=_model(settings.providers.get(default)),
            endpoints=endpoints,
        )
    finally:
        provider.shutdown()
