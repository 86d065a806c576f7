"""An agent's keys that make more than one library field: its budget (``turn_tokens``
... ``prices``), its media limits (``max_media_*``) and its model settings with their
fallback chain."""

from __future__ import annotations

from typing import Any

from ..agent import Budget, ModelSettings
from ..llm import MediaLimits, Pricing
from ._schema import AgentSettings

__all__ = ["budget_of", "media_limits_of", "model_of"]


def budget_of(agent: AgentSettings) -> Budget:
    """An agent's budget keys (``turn_tokens`` ... ``prices``) as its :class:`Budget`."""
    return Budget(
        turn_tokens=agent.turn_tokens,
        turn_cost=agent.turn_cost,
        session_tokens=agent.session_tokens,
        session_cost=agent.session_cost,
        tool_calls_per_turn=agent.tool_calls_per_turn,
        concurrent_tool_calls=agent.concurrent_tool_calls,
        prices={
            name: Pricing(p.input, p.output, p.cache_read, p.cache_write)
            for name, p in agent.prices.items()
        },
    )


def media_limits_of(agent: AgentSettings) -> MediaLimits:
    """An agent's ``max_media_*`` keys as its :class:`~agcore_actors.llm.MediaLimits`."""
    return MediaLimits(
        max_part_bytes=agent.max_media_part_bytes,
        max_message_bytes=agent.max_media_message_bytes,
    )


def model_of(agent: AgentSettings, default_provider: str | None) -> ModelSettings:
    """An agent's model keys as its :class:`ModelSettings`, fallback chain included
    (each ``"provider/model"`` gets the agent's sampling settings)."""
    sampling: dict[str, Any] = {
        "temperature": agent.temperature,
        "max_tokens": agent.max_tokens,
        "top_p": agent.top_p,
        "stop": agent.stop,
        "seed": agent.seed,
        "tool_choice": agent.tool_choice,
        "parallel_tool_calls": agent.parallel_tool_calls,
        "reasoning_effort": agent.reasoning_effort,
        "thinking_budget": agent.thinking_budget,
        "extra_body": dict(agent.extra_body) or None,
    }
    fallback = []
    for entry in agent.fallback:
        provider, _, model = entry.partition("/")
        fallback.append(ModelSettings(provider=provider, model=model, **sampling))
    return ModelSettings(
        provider=agent.provider or default_provider,
        model=agent.model,
        fallback=tuple(fallback),
        fallback_on=frozenset(agent.fallback_on),
        **sampling,
    )
