"""What a session does around a turn for its guardrails, budget and run context:
small functions of :class:`~._session.Session`'s turn, kept apart so the turn loop stays
readable.

The session's spend (cost units) is kept in the reserved fact
:data:`~._budget.SPEND_FACT`, committed with each turn in the same transaction as its
messages and usage: it survives eviction, reloads and restarts exactly as the stored
usage does. The reserved fact is never shown to the model, never reported as a fact,
and cannot be set or removed with ``SetFacts``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import msgspec
import trio

from .._errors import AgcoreError
from ..llm import Usage
from ..tools import RunContext
from . import messages as am
from ._budget import SPEND_FACT, Spend
from ._config import Agent, PromptContext
from ._errors import AgentConfigError, GuardrailBlocked, HookBlocked, TurnTimeout
from ._guards import first_refusal
from ._hooks import TurnHooks
from ._suspend import ANSWERED_FACT, SUSPENDED_FACT

__all__ = [
    "Deps",
    "check_fact_keys",
    "failed_result",
    "final_event",
    "refusal",
    "refused_result",
    "run_context",
    "session_spend",
    "spend_fact",
    "visible_facts",
]

#: The application's dependencies of a session: ``deps(session id) -> object``.
Deps = Callable[[str], Any]


#: The facts the runtime keeps for itself, and what each holds.
_RESERVED: dict[str, str] = {
    SPEND_FACT: "the session's spend",
    SUSPENDED_FACT: "the suspended turn",
    ANSWERED_FACT: "answers of closed suspended turns",
}


def visible_facts(facts: Mapping[str, str]) -> dict[str, str]:
    """The facts a prompt and an info show (the reserved ones left out)."""
    return {key: value for key, value in facts.items() if key not in _RESERVED}


def check_fact_keys(keys: Iterable[str]) -> None:
    """Refuse a change of a reserved fact (``ValueError``; nothing is changed)."""
    for key in keys:
        if key in _RESERVED:
            raise AgentConfigError(f"fact {key!r} is reserved ({_RESERVED[key]})")


def session_spend(usage: Usage | None, facts: Mapping[str, str]) -> Spend:
    """What the session spent before this turn: its stored usage and spend fact."""
    try:
        cost = float(facts.get(SPEND_FACT, "0"))
    except ValueError:
        cost = 0.0
    if not math.isfinite(cost) or cost < 0:
        cost = 0.0
    return Spend(0 if usage is None else usage.total_tokens, cost)


def spend_fact(facts: Mapping[str, str], turn_cost: float) -> dict[str, str]:
    """The fact to commit with a turn that cost ``turn_cost`` (none when it cost 0)."""
    if turn_cost <= 0:
        return {}
    return {SPEND_FACT: repr(session_spend(None, facts).cost + turn_cost)}


def run_context(
    session: str, turn: str, agent: Agent, deps: Deps | None, scope: trio.CancelScope | None
) -> RunContext[Any]:
    """The run context of a turn (``deps`` called once per turn)."""
    return RunContext(
        session=session,
        turn=turn,
        agent=agent.name,
        deps=None if deps is None else deps(session),
        cancel_scope=scope,
    )


async def refusal(
    hooks: TurnHooks,
    agent: Agent,
    context: PromptContext,
    run: RunContext[Any],
    text: str,
    timeout: float | None,
) -> AgcoreError | None:
    """Why the turn must not run, before anything is stored or sent: the turn-start
    hook's reason (:class:`HookBlocked`), an input guardrail's
    (:class:`GuardrailBlocked`), the typed error one of them raised, or
    :class:`TurnTimeout` when the guardrails took longer than ``timeout`` (the turn's
    own); None: it runs."""
    blocked = await hooks.start(context, text)
    if blocked is not None:
        return HookBlocked(blocked)
    if not agent.input_guardrails:
        return None
    with trio.move_on_after(math.inf if timeout is None else timeout) as bound:
        try:
            reason = await first_refusal(agent.input_guardrails, run, text)
        except AgcoreError as exc:
            return exc
    if bound.cancelled_caught:
        assert timeout is not None
        return TurnTimeout(timeout)
    return None if reason is None else GuardrailBlocked("input", reason)


def refused_result(result: am.TurnResult, error: AgcoreError) -> am.TurnResult:
    """The result of a refused turn: ``blocked`` when a guardrail refused it."""
    if isinstance(error, GuardrailBlocked):
        return msgspec.structs.replace(result, status="blocked")
    return result


def failed_result(session: str, turn: str, error: AgcoreError) -> am.TurnResult:
    """The result of a turn that ``error`` ended before it ran or while it was stored."""
    return am.TurnResult(
        session=session, turn=turn, status="failed", error_kind=error.kind, error=str(error)
    )


def final_event(result: am.TurnResult) -> am.TurnEvent:
    """The last event of a turn with ``result`` (a blocked turn's is a TurnFailed)."""
    if result.status == "completed":
        return am.TurnCompleted(result)
    if result.status == "cancelled":
        return am.TurnCancelled(result)
    if result.status == "suspended":
        return am.TurnSuspended(result)
    return am.TurnFailed(result)
