"""The embedded model inside a runtime: started supervised, and the agents that use it.

:func:`start_local` makes the model file first (minutes on first use, reported to the
config's ``progress``; outside the child's start bound, see
:func:`~agcore_actors.local.start_bound`), then starts the
:class:`~agcore_actors.local.LocalModelServer` under a supervisor of its own (restart
with backoff, a model that keeps dying gives up) and waits for its endpoint. The
provider it returns is OpenAI-compatible, wrapped in
:class:`~agcore_actors.local.PrefixCache` (the prompt prefix's KV cache restored or
warmed and saved) and :class:`~agcore_actors.local.ToolCallRecovery` (a small model's
malformed tool call is asked again once without tools). Cancelled, the supervisor and
the server stop with the system (the server's whole process group is reaped by its
actor's ``on_stop``).
"""

from __future__ import annotations

from typing import Any

import attrs

from ..actor import ActorSystem, Backoff, Intensity, SupervisorSpec
from ..agent import Agent
from ..llm import OpenAICompatibleProvider, OpenAIConfig, Provider, Timeouts

__all__ = [
    "LOCAL_MAX_TOKENS",
    "LOCAL_TIMEOUTS",
    "for_local_model",
    "local_timeouts",
    "recovering",
    "start_local",
]

#: The local server restarts quickly after a crash; a model that keeps dying gives up.
_INTENSITY = Intensity(max_restarts=5, period=60.0)
_BACKOFF = Backoff(initial=0.5, cap=10.0)
#: A 1-thread CPU model reads a long prompt slowly: minutes, not seconds, to a first token.
LOCAL_TIMEOUTS = Timeouts(attempt=300.0, idle=120.0, call=900.0)
#: The answer's bound for agents that set none.
LOCAL_MAX_TOKENS = 1024


async def start_local(
    system: ActorSystem, name: str, config: Any, *, timeout: float | None = None
) -> tuple[Any, Provider]:
    """Start the embedded model of provider ``name`` (``config``: a
    :class:`~agcore_actors.local.LocalModelConfig`); its
    :class:`~agcore_actors.local.messages.Endpoint` and the provider answering there.

    Raises the local model's errors (:class:`~agcore_actors.local.LocalModelError`).
    """
    from pathlib import Path

    from ..local import (
        GetEndpoint,
        PrefixCache,
        ToolCallRecovery,
        local_model_spec,
        prepare_model,
    )

    prepared = await prepare_model(config)
    supervisor = await system.start_supervisor(
        SupervisorSpec(f"local:{name}", intensity=_INTENSITY, backoff=_BACKOFF)
    )
    server = await supervisor.start_child(local_model_spec(f"local-model:{name}", config=prepared))
    endpoint = await server.ask(GetEndpoint(), timeout=timeout)
    provider = OpenAICompatibleProvider(
        OpenAIConfig(
            name=name,
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            model=endpoint.model,
            headers=dict(endpoint.headers),
            # llama.cpp's json_schema grammar is not what small models answer best with.
            structured_output="prompted",
            # Started without a vision projector: an image is a typed error, not a
            # prompt the server would garble.
            input_media=frozenset(),
        )
    )
    if not endpoint.prefix_dir:
        return endpoint, ToolCallRecovery(provider)
    cached = PrefixCache(
        provider,
        server_url=endpoint.base_url.removesuffix("/v1"),
        api_key=endpoint.api_key,
        identity=endpoint.identity,
        directory=Path(endpoint.prefix_dir),
        progress=config.progress,
    )
    return endpoint, ToolCallRecovery(cached)


def for_local_model(agent: Agent) -> Agent:
    """Temperature 0 (the small models' tool calls were measured, and repeat, at 0),
    :data:`LOCAL_MAX_TOKENS` on the answer's length and parallel tool calls allowed (the
    server's parser then takes every call of a reply), unless the agent sets its own."""
    settings = agent.model
    parallel = settings.parallel_tool_calls
    settings = attrs.evolve(
        settings,
        temperature=0.0 if settings.temperature is None else settings.temperature,
        max_tokens=settings.max_tokens or LOCAL_MAX_TOKENS,
        parallel_tool_calls=True if parallel is None else parallel,
    )
    return attrs.evolve(agent, model=settings)


def recovering(provider: Provider) -> Provider:
    """An OpenAI-compatible provider wrapped in ToolCallRecovery: a llama.cpp server
    behind its ``base_url`` fails on a malformed tool call as the embedded model does."""
    from ..local import ToolCallRecovery

    if isinstance(provider, OpenAICompatibleProvider):
        return ToolCallRecovery(provider)
    return provider


def local_timeouts(timeouts: Timeouts) -> Timeouts:
    """``timeouts``, each limit at least :data:`LOCAL_TIMEOUTS`' (None: no limit)."""

    def longer(mine: float | None, floor: float | None) -> float | None:
        return None if mine is None or floor is None else max(mine, floor)

    return Timeouts(
        attempt=longer(timeouts.attempt, LOCAL_TIMEOUTS.attempt),
        idle=longer(timeouts.idle, LOCAL_TIMEOUTS.idle),
        connect=longer(timeouts.connect, LOCAL_TIMEOUTS.connect),
        call=longer(timeouts.call, LOCAL_TIMEOUTS.call),
    )
