"""What an agent is and how its turns are bounded: :class:`Agent`, :class:`ModelSettings`
(with its fallback chain), :class:`AgentConfig` (with its :class:`~._budget.Budget`).
Frozen attrs classes, validated where they are built."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, Literal

import attrs
import msgspec

from .._validators import at_least_one, non_empty, non_negative_int, optional_positive, positive
from ..llm import MediaLimits
from . import messages as am
from ._budget import Budget
from ._fallback import ALL_FALLBACK_KINDS, FallbackKind
from ._guards import InputGuardrail, OutputGuardrail, ToolHooks
from ._output import AgentOutputMode

__all__ = ["Agent", "AgentConfig", "ModelSettings", "PromptContext", "ReasoningEffort"]

ReasoningEffort = Literal["minimal", "low", "medium", "high"]


@attrs.frozen(kw_only=True)
class AgentConfig:
    """Limits of each turn of a session; every one is enforced (:class:`LimitExceeded`).

    Every limit is per turn: a turn starts with the whole budget, however many turns the
    session ran before (a chat that stays live for weeks is never refused for its age,
    and nothing depends on whether the session was evicted and reloaded in between).
    The one exception is :attr:`budget`, whose ``session_*`` limits count the session's
    stored usage and spend (kept with each turn's commit, so eviction does not reset them).
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
    #: Token, cost and tool-call limits per turn and per session, and the price table.
    budget: Budget = attrs.field(factory=Budget)
    #: Sizes and types of the images, audio and files of a user turn or a tool result.
    media_limits: MediaLimits = attrs.field(factory=MediaLimits)
    #: A tool call that needs approval: ``wait`` for the answer inside the running turn
    #: (up to ``approval_timeout``), or ``suspend`` the turn — stored, the session freed —
    #: until an ``AnswerTurn`` resumes it, in this process or another, days later.
    approvals: Literal["wait", "suspend"] = attrs.field(
        default="wait", validator=attrs.validators.in_(("wait", "suspend"))
    )
    #: A turn found open on load (the process died mid-turn): ``repair`` it (its open
    #: calls answered ``interrupted``), or ``resume`` it from its last stored step, never
    #: running a tool call whose result was stored. ``resume`` also stores each tool
    #: result as it comes (one store write per result). Suspended turns always resume.
    interrupted: Literal["repair", "resume"] = attrs.field(
        default="repair", validator=attrs.validators.in_(("repair", "resume"))
    )

    #: An MCP server asks the person something during a tool call (elicitation): ``wait``
    #: for the answer inside the running turn (up to ``approval_timeout``), or
    #: ``suspend`` the turn as an approval does — the server is told ``cancel``, the
    #: call's result is dropped, and once answered (``AnswerTurn`` with ``action``) the
    #: call runs again and its elicitation gets the stored answer. A request whose call
    #: cannot be told (several calls of the session in flight on a connection that does
    #: not say which) waits as with ``wait``.
    elicitations: Literal["wait", "suspend"] = attrs.field(
        default="wait", validator=attrs.validators.in_(("wait", "suspend"))
    )

    @property
    def durable(self) -> bool:
        """Each step of a turn is stored as it completes (its turn can be resumed)."""
        return (
            self.approvals == "suspend"
            or self.interrupted == "resume"
            or self.elicitations == "suspend"
        )

    def __attrs_post_init__(self) -> None:
        if self.turn_timeout is not None and math.isinf(self.turn_timeout):
            object.__setattr__(self, "turn_timeout", None)


def _stop(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def _effort(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and value not in ("minimal", "low", "medium", "high"):
        raise ValueError(f"{attribute.name} must be minimal, low, medium or high, not {value!r}")


def _tool_choice(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(
            f"{attribute.name} must be auto, none, required or a tool's name, not {value!r}"
        )


def _optional_positive_int(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        at_least_one(_, attribute, value)  # type: ignore[arg-type]


def _fallback_kinds(values: Iterable[str]) -> frozenset[FallbackKind]:
    kinds = frozenset(values)
    unknown = kinds - ALL_FALLBACK_KINDS
    if unknown:
        raise ValueError(
            f"fallback_on: unknown kind(s) {sorted(unknown)}; "
            f"expected some of {sorted(ALL_FALLBACK_KINDS)}"
        )
    return kinds  # type: ignore[return-value]


def _chain(values: Iterable[ModelSettings]) -> tuple[ModelSettings, ...]:
    chain = tuple(values)
    for entry in chain:
        if not isinstance(entry, ModelSettings):
            raise ValueError(f"fallback entries must be ModelSettings, not {entry!r}")
        if entry.fallback:
            raise ValueError("a fallback model cannot have fallbacks of its own")
    return chain


@attrs.frozen(kw_only=True)
class ModelSettings:
    """Which model answers and how; None leaves the provider's default.

    Every setting is sent in each provider's own shape (see docs/models.md):
    ``stop`` becomes Anthropic's ``stop_sequences``, ``tool_choice`` its
    ``auto/any/tool/none``, ``parallel_tool_calls=False`` its
    ``disable_parallel_tool_use``, ``thinking_budget`` (or else ``reasoning_effort``) its
    ``thinking`` block; an OpenAI-compatible server gets the OpenAI fields as they are
    (``thinking_budget`` is not sent there: put a server's own field in ``extra_body``).
    Anthropic has no ``seed``: it is not sent there.
    """

    #: A provider registered in the ProviderActor's registry; None: its default.
    provider: str | None = None
    model: str = ""
    temperature: float | None = None
    max_tokens: int | None = attrs.field(default=None, validator=_optional_positive_int)
    #: Nucleus sampling: only the tokens of the top ``top_p`` probability mass.
    top_p: float | None = None
    #: Sequences that end the answer (a string is one sequence).
    stop: tuple[str, ...] | None = attrs.field(default=None, converter=_stop)
    #: Sampling seed, for repeatable answers where the server supports it.
    seed: int | None = None
    #: ``"auto"``, ``"none"``, ``"required"``, or a tool's name (that tool must be called).
    tool_choice: str | None = attrs.field(default=None, validator=_tool_choice)
    #: False: at most one tool call per reply.
    parallel_tool_calls: bool | None = None
    #: How hard a reasoning model thinks (OpenAI's ``reasoning_effort``).
    reasoning_effort: ReasoningEffort | None = attrs.field(default=None, validator=_effort)
    #: Tokens a model may spend thinking (Anthropic's ``budget_tokens``).
    thinking_budget: int | None = attrs.field(default=None, validator=_optional_positive_int)
    #: Provider-specific body fields (e.g. ``{"enable_thinking": True}``).
    extra_body: dict[str, Any] | None = None
    #: Models tried in order when a call of this one fails with a kind of ``fallback_on``
    #: before any output was streamed (each entry names its own provider and model).
    fallback: tuple[ModelSettings, ...] = attrs.field(default=(), converter=_chain)
    #: The error kinds that move to the next model: ``rate_limit``, ``server_error``
    #: (HTTP 5xx), ``timeout``, ``context_length``, ``connection``.
    fallback_on: frozenset[FallbackKind] = attrs.field(
        default=ALL_FALLBACK_KINDS, converter=_fallback_kinds
    )

    def chain(self) -> tuple[ModelSettings, ...]:
        """This model, then its fallbacks."""
        return (self, *self.fallback)

    def with_overrides(self, overrides: am.ModelOverrides | None) -> ModelSettings:
        """These settings with a turn's ``overrides`` (its fields that are set) applied
        to this model and to each fallback."""
        if overrides is None:
            return self
        changes = {
            name: value for name in _OVERRIDABLE if (value := getattr(overrides, name)) is not None
        }
        if not changes:
            return self
        fallback = tuple(attrs.evolve(entry, **changes) for entry in self.fallback)
        return attrs.evolve(self, **changes, fallback=fallback)


_OVERRIDABLE = (
    "temperature",
    "max_tokens",
    "top_p",
    "stop",
    "seed",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "thinking_budget",
)


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


def _output_mode(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in ("auto", "json_schema", "tool", "prompted"):
        raise ValueError(
            f"{attribute.name} must be auto, json_schema, tool or prompted, not {value!r}"
        )


def _inputs(values: Iterable[InputGuardrail]) -> tuple[InputGuardrail, ...]:
    return tuple(values)


def _outputs(values: Iterable[OutputGuardrail]) -> tuple[OutputGuardrail, ...]:
    return tuple(values)


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
    #: How the answer of an ``output_type`` is asked for: ``auto`` (each provider's
    #: own), ``json_schema``, ``tool`` or ``prompted`` (see :mod:`~._output`).
    output_mode: AgentOutputMode = attrs.field(default="auto", validator=_output_mode)
    #: Run in order before the model is called; the first refusal blocks the turn
    #: (nothing is stored or sent). See :mod:`~._guards`.
    input_guardrails: tuple[InputGuardrail, ...] = attrs.field(default=(), converter=_inputs)
    #: Run in order on the final answer before it is committed: each may pass, replace
    #: or block it (the turn is then committed as ``blocked``, with the reason).
    output_guardrails: tuple[OutputGuardrail, ...] = attrs.field(default=(), converter=_outputs)
    #: ``before``/``after`` functions around each tool call (deny, change the arguments,
    #: change the result); None: none.
    tool_hooks: ToolHooks | None = None

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools
