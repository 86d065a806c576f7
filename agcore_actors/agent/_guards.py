"""Guardrails and per-tool hooks: plain async functions of an agent.

- **Input guardrails** ``(context, text) -> reason | None`` run in order before
  anything of the turn is stored or sent to a model; the first reason refuses the turn
  (:class:`~._errors.GuardrailBlocked`, status ``blocked``).
- **Output guardrails** ``(context, answer) -> Block | Replace | None`` run in order on
  the final answer before the turn is committed. ``Replace(text)`` changes the answer
  (the next guardrail sees the new text); ``Block(reason)`` stops: the answer is
  replaced in the transcript by a note saying it was blocked, and the turn is committed
  with status ``blocked`` and the reason. Only text answers are guarded here (an
  answer of an ``output_type`` is validated JSON; guard it with its own type).
- **Tool hooks**: ``before(call) -> Deny | Rewrite | None`` runs before each call of a
  reply is sent to the executor; ``Deny(reason)`` answers it ``denied`` without
  running it, ``Rewrite(arguments)`` runs it with other arguments. ``after(call,
  outcome) -> ToolOutcome | None`` runs on each call's outcome (refusals included) before
  the model sees it; a ToolOutcome replaces it. A result never reaches the transcript
  without passing ``after``: when the turn is cancelled (or a hook fails) before a
  call's ``after`` returned, that call is answered ``cancelled``, never with its
  unhooked result (an ``after`` that redacts is never bypassed).

A guardrail or hook that raises fails the turn with :class:`~._errors.HookFailed`
(its cause kept; an error of ours passes as it is), after every tool call of the turn
is answered: the agent's own code, so never swallowed, and never a crash of the session.
Cancellation reaches them as any await of the turn: they run in the turn's task.

:func:`apply_output_guardrails`, :func:`apply_before` and :func:`apply_after` are the
pure folding of the verdicts, property-tested.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs
import msgspec

from .._errors import AgcoreError
from ..tools import RunContext
from . import messages as am
from ._errors import HookFailed

T = TypeVar("T")

__all__ = [
    "Block",
    "Deny",
    "InputGuardrail",
    "OutputGuardrail",
    "Replace",
    "Rewrite",
    "ToolCallInfo",
    "ToolHooks",
    "ToolOutcome",
    "blocked_note",
]


@attrs.frozen
class Block:
    """An output guardrail's verdict: the answer must not be shown; ``reason`` says why."""

    reason: str


@attrs.frozen
class Replace:
    """An output guardrail's verdict: show ``text`` instead of the answer."""

    text: str


@attrs.frozen
class Deny:
    """A ``before`` hook's verdict: do not run the call; the model is told ``reason``."""

    reason: str


@attrs.frozen
class Rewrite:
    """A ``before`` hook's verdict: run the call with these arguments instead (a mapping
    is encoded as JSON, a string is sent as it is)."""

    arguments: str | Mapping[str, Any]

    def text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return msgspec.json.encode(dict(self.arguments)).decode()


@attrs.frozen(kw_only=True)
class ToolCallInfo:
    """One tool call as a hook sees it (``arguments``: the model's JSON text)."""

    call_id: str
    name: str
    arguments: str
    context: RunContext[Any]


@attrs.frozen(kw_only=True)
class ToolOutcome:
    """What a tool call ended with, as the model will see it."""

    status: am.ToolCallStatus
    content: str


InputGuardrail = Callable[[RunContext[Any], str], Awaitable[str | None]]
OutputGuardrail = Callable[[RunContext[Any], str], Awaitable[Block | Replace | None]]
BeforeTool = Callable[[ToolCallInfo], Awaitable[Deny | Rewrite | None]]
AfterTool = Callable[[ToolCallInfo, ToolOutcome], Awaitable[ToolOutcome | None]]


async def _run_as_is(call: ToolCallInfo) -> Deny | Rewrite | None:
    return None


async def keep_result(call: ToolCallInfo, outcome: ToolOutcome) -> ToolOutcome | None:
    """The default ``after``: the outcome as it is."""
    return None


@attrs.frozen(kw_only=True)
class ToolHooks:
    """``before`` and ``after`` each tool call of the agent (see the module docstring)."""

    before: BeforeTool = _run_as_is
    after: AfterTool = keep_result


def blocked_note(reason: str) -> str:
    """What the transcript keeps of a blocked answer (the next turn's model sees it)."""
    return f"[answer blocked by a guardrail: {reason}]"


async def hook_call(name: str, work: Awaitable[T]) -> T:
    """``await work``, a call of the agent's own code: an error of ours passes as it is,
    anything else becomes :class:`HookFailed` (the turn fails, the session goes on)."""
    try:
        return await work
    except AgcoreError:
        raise
    except Exception as exc:
        raise HookFailed(name, exc) from exc


async def first_refusal(
    guardrails: Sequence[InputGuardrail], context: RunContext[Any], text: str
) -> str | None:
    """The reason of the first input guardrail that refuses ``text``, else None."""
    for guardrail in guardrails:
        reason = await hook_call("input guardrail", guardrail(context, text))
        if reason is not None:
            return reason
    return None


async def apply_output_guardrails(
    guardrails: Sequence[OutputGuardrail], context: RunContext[Any], text: str
) -> tuple[str, str | None]:
    """``(answer, None)`` with every ``Replace`` applied in order, or ``(text so far,
    reason)`` at the first ``Block`` (the guardrails after it do not run)."""
    for guardrail in guardrails:
        verdict = await hook_call("output guardrail", guardrail(context, text))
        if isinstance(verdict, Block):
            return text, verdict.reason
        if isinstance(verdict, Replace):
            text = verdict.text
    return text, None


def apply_before(arguments: str, verdict: Deny | Rewrite | None) -> tuple[str, str | None]:
    """``(arguments to run with, None)``, or ``(arguments, denial reason)``."""
    if isinstance(verdict, Deny):
        return arguments, verdict.reason
    if isinstance(verdict, Rewrite):
        return verdict.text(), None
    return arguments, None


def apply_after(outcome: ToolOutcome, verdict: ToolOutcome | None) -> ToolOutcome:
    """The outcome the model sees: the hook's replacement, else the call's own."""
    return outcome if verdict is None else verdict
