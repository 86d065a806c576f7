"""What an agent is and how its turns are bounded: :class:`Agent`, :class:`ModelSettings`,
:class:`AgentConfig`. Frozen attrs classes, validated where they are built."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import msgspec

from .._validators import at_least_one, non_empty, non_negative_int, optional_positive, positive

__all__ = ["Agent", "AgentConfig", "ModelSettings", "PromptContext"]


@attrs.frozen(kw_only=True)
class AgentConfig:
    """Limits of each turn of a session; every one is enforced (:class:`LimitExceeded`).

    Every limit is per turn: a turn starts with the whole budget, however many turns the
    session ran before (a chat that stays live for weeks is never refused for its age,
    and nothing depends on whether the session was evicted and reloaded in between).
    There is no session-lifetime budget: bound a session's total cost outside it (its
    stored ``usage`` adds up every turn's tokens).
    """

    #: Model calls in one turn, counting every call of its tool loop and output re-asks
    #: (the name is the OpenAI Agents SDK's, where a "turn" is one model call).
    max_turns: int = attrs.field(default=50, validator=at_least_one)
    #: Rounds of tool calls in one turn; one more model call than this ends the turn.
    max_tool_turns: int = attrs.field(default=10, validator=at_least_one)
    #: Seconds a whole turn may take (model calls, tools, approvals); None: no deadline.
    turn_timeout: float | None = attrs.field(default=600.0, validator=optional_positive)
    #: Seconds one tool call may take, unless the tool sets its own.
    tool_timeout: float = attrs.field(default=60.0, validator=positive)
    #: Seconds to wait for a human's approval; no answer in time is a denial.
    approval_timeout: float = attrs.field(default=300.0, validator=positive)
    #: Re-asks after an answer that does not match the agent's output type.
    output_retries: int = attrs.field(default=2, validator=non_negative_int)
    #: Identical tool calls (same name, same arguments) allowed in one turn.
    max_repeated_calls: int = attrs.field(default=3, validator=at_least_one)

    def __attrs_post_init__(self) -> None:
        if self.turn_timeout is not None and math.isinf(self.turn_timeout):
            object.__setattr__(self, "turn_timeout", None)


@attrs.frozen(kw_only=True)
class ModelSettings:
    """Which model answers and how; None leaves the provider's default."""

    #: A provider registered in the ProviderActor's registry; None: its default.
    provider: str | None = None
    model: str = ""
    temperature: float | None = None
    max_tokens: int | None = None
    #: Provider-specific body fields (e.g. ``{"enable_thinking": True}``).
    extra_body: dict[str, Any] | None = None


class PromptContext(msgspec.Struct, frozen=True, kw_only=True):
    """What the environment layer of a system prompt may depend on, each turn."""

    session: str
    agent: str
    turn: int
    facts: dict[str, str]


def _names(values: Iterable[str]) -> frozenset[str]:
    return frozenset(values)


def _optional_names(values: Iterable[str] | None) -> frozenset[str] | None:
    return None if values is None else frozenset(values)


def _no_environment(_: PromptContext) -> str:
    return ""


@attrs.frozen(kw_only=True)
class Agent:
    """A role: its instructions, the tools it may call, its model, its answer's type.

    The system prompt of every turn is recomputed from three layers, joined by blank
    lines and skipping empty ones: ``base`` (shared by a deployment), ``instructions``
    (this agent), and ``environment(context)`` (the moment: date, session facts, ...).
    Session facts are always appended as a ``<session-context>`` block.
    """

    name: str = attrs.field(validator=non_empty)
    #: What the agent does, shown to other agents that may call it as a tool.
    description: str = ""
    instructions: str = ""
    base: str = ""
    environment: Callable[[PromptContext], str] = _no_environment
    #: Tool names this agent may call; None: every tool of the executor.
    tools: frozenset[str] | None = attrs.field(default=None, converter=_optional_names)
    #: Agents this one may call as tools (by name); each call runs a child session.
    subagents: frozenset[str] = attrs.field(default=frozenset(), converter=_names)
    model: ModelSettings = ModelSettings()
    #: A msgspec Struct the final answer must decode into (JSON), or None for text.
    output_type: type[msgspec.Struct] | None = None

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools
