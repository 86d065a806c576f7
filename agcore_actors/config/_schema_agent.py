"""The ``[agents.NAME]`` tables: :class:`AgentSettings`, its ``prices`` table and the
validators of its enumerated keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from .._validators import at_least_one, non_negative, non_negative_int, positive
from ..agent import AgentConfig
from ._schema_checks import limit, optional_at_least_one, optional_non_negative

__all__ = ["EFFORTS", "FALLBACK_KINDS", "AgentSettings", "PriceSettings", "one_of"]

# The library's own defaults are the file's (see ``_schema``).
_AGENT = AgentConfig()


@attrs.frozen(kw_only=True)
class PriceSettings:
    """A model's price per million tokens (``[agents.NAME.prices."MODEL"]``)."""

    input: float = attrs.field(default=0.0, validator=non_negative)
    output: float = attrs.field(default=0.0, validator=non_negative)
    cache_read: float = attrs.field(default=0.0, validator=non_negative)
    cache_write: float = attrs.field(default=0.0, validator=non_negative)


EFFORTS = ("minimal", "low", "medium", "high")
FALLBACK_KINDS = ("rate_limit", "server_error", "timeout", "context_length", "connection")


def one_of(choices: tuple[str, ...]) -> Any:
    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        values = value if isinstance(value, tuple) else (value,)
        for one in values:
            if one is not None and one not in choices:
                raise ValueError(f"{attribute.name} must be one of {', '.join(choices)}")

    return check


@attrs.frozen(kw_only=True)
class AgentSettings:
    """One agent: its instructions, model, tools and limits."""

    #: What the agent does (shown to agents that may call it).
    description: str = ""
    #: The agent's system prompt.
    instructions: str = "You are a helpful assistant."
    #: A table of ``[providers]`` (default: ``default_provider``).
    provider: str | None = None
    #: The model (default: the provider's).
    model: str = ""
    #: Sampling temperature (default: the provider's).
    temperature: float | None = attrs.field(default=None, validator=optional_non_negative)
    #: Most tokens of one answer (default: the provider's).
    max_tokens: int | None = attrs.field(default=None, validator=optional_at_least_one)
    #: Extra top-level fields of this agent's request bodies.
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: Nucleus sampling (default: the provider's).
    top_p: float | None = attrs.field(default=None, validator=optional_non_negative)
    #: Sequences that end the answer.
    stop: tuple[str, ...] | None = None
    #: Sampling seed.
    seed: int | None = None
    #: ``auto``, ``none``, ``required`` or a tool's name.
    tool_choice: str | None = None
    #: False: at most one tool call per reply.
    parallel_tool_calls: bool | None = None
    #: ``minimal``, ``low``, ``medium`` or ``high``.
    reasoning_effort: str | None = attrs.field(default=None, validator=one_of(EFFORTS))
    #: Tokens a model may spend thinking (Anthropic's ``budget_tokens``).
    thinking_budget: int | None = attrs.field(default=None, validator=optional_at_least_one)
    #: Models tried in order when a call fails before any output: ``"provider"`` or
    #: ``"provider/model"``.
    fallback: tuple[str, ...] = ()
    #: The error kinds that move to the next model.
    fallback_on: tuple[str, ...] = attrs.field(
        default=FALLBACK_KINDS, validator=one_of(FALLBACK_KINDS)
    )
    #: Tokens of one turn's model calls (absent: no limit).
    turn_tokens: int | None = attrs.field(default=None, validator=optional_at_least_one)
    #: Cost of one turn's model calls, at ``prices``.
    turn_cost: float | None = attrs.field(default=None, validator=optional_non_negative)
    #: Tokens of the whole session.
    session_tokens: int | None = attrs.field(default=None, validator=optional_at_least_one)
    #: Cost of the whole session, at ``prices``.
    session_cost: float | None = attrs.field(default=None, validator=optional_non_negative)
    #: Tool calls in one turn.
    tool_calls_per_turn: int | None = attrs.field(default=None, validator=optional_at_least_one)
    #: Tool calls of one reply that run at the same time.
    concurrent_tool_calls: int | None = attrs.field(default=None, validator=optional_at_least_one)
    #: Prices per million tokens by ``"provider/model"`` or ``"model"``.
    prices: Mapping[str, PriceSettings] = attrs.field(factory=dict)
    #: Tool names the agent may call; absent (and no ``mcp_servers``): every tool.
    tools: tuple[str, ...] | None = None
    #: ``[mcpServers]`` whose tools the agent may call.
    mcp_servers: tuple[str, ...] = ()
    #: Agents this one may call as tools.
    subagents: tuple[str, ...] = ()
    #: Model calls in one turn (every call of its tool loop and output re-asks).
    max_turns: int = attrs.field(default=_AGENT.max_turns, validator=at_least_one)
    #: Rounds of tool calls in one turn.
    max_tool_turns: int = attrs.field(default=_AGENT.max_tool_turns, validator=at_least_one)
    #: Seconds a whole turn may take (``inf``: no deadline).
    turn_timeout: float = attrs.field(default=limit(_AGENT.turn_timeout), validator=positive)
    #: Seconds one tool call may take, unless the tool sets its own.
    tool_timeout: float = attrs.field(default=_AGENT.tool_timeout, validator=positive)
    #: Seconds to wait for a human's approval; no answer in time is a denial.
    approval_timeout: float = attrs.field(default=_AGENT.approval_timeout, validator=positive)
    #: Re-asks after an answer that does not match the output type.
    output_retries: int = attrs.field(default=_AGENT.output_retries, validator=non_negative_int)
    #: Identical tool calls allowed in one turn.
    max_repeated_calls: int = attrs.field(default=_AGENT.max_repeated_calls, validator=at_least_one)
    #: Decoded bytes of one image, audio or file part of a turn or a tool result.
    max_media_part_bytes: int = attrs.field(
        default=_AGENT.media_limits.max_part_bytes, validator=at_least_one
    )
    #: Decoded bytes of all the media of one message.
    max_media_message_bytes: int = attrs.field(
        default=_AGENT.media_limits.max_message_bytes, validator=at_least_one
    )
    #: A tool call that needs approval: ``wait`` in the turn, or ``suspend`` the turn
    #: (stored; an answer resumes it later, also after restarts).
    approvals: Literal["wait", "suspend"] = _AGENT.approvals
    #: A turn found open on load (a crash): ``repair`` it, or ``resume`` it from its
    #: last stored step (no completed tool call runs again).
    interrupted: Literal["repair", "resume"] = _AGENT.interrupted
    #: An MCP server's question during a tool call: ``wait`` in the turn, or
    #: ``suspend`` the turn (stored; an answer resumes it later, also after restarts).
    elicitations: Literal["wait", "suspend"] = _AGENT.elicitations
