"""Suspended turns as data: what a suspended turn waits for, the answers it got, and the
rule an answer is judged by — pure functions on frozen values (no trio, no I/O).

A suspended turn is open in the session store (its messages so far stored, the calls it
waits for unanswered there) and described by the reserved fact :data:`SUSPENDED_FACT`
(a :class:`Suspension`): the calls it waits for and the answers recorded so far. When it
ends (resumed to its end, or cancelled) the commit that closes it also removes that fact
and adds its answers to :data:`ANSWERED_FACT` (the last :data:`KEEP_CLOSED` such turns),
in the same transaction, so an answer that comes again later is still recognised.

:func:`judge` is the rule for an answer to call ``c`` of turn ``t``:

- ``t`` is the suspended turn and waits for ``c``: ``record`` it;
- ``c`` was answered already (in the suspended turn or a closed one): ``duplicate``,
  with the first answer (nothing changes: answers are idempotent);
- otherwise :class:`~._errors.StaleAnswer`, saying whether ``t`` was ``cancelled``, is
  ``finished``, or is ``unknown`` (never suspended here, or forgotten).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

import msgspec

from ..llm import AssistantMessage, ToolMessage, Usage
from ..llm import Message as ChatMessage
from . import messages as am
from ._errors import StaleAnswer

__all__ = [
    "ANSWERED_FACT",
    "KEEP_CLOSED",
    "SUSPENDED_FACT",
    "Answer",
    "Closed",
    "Suspension",
    "closed_after",
    "closed_of",
    "elicitation_key",
    "elicitation_reply",
    "held",
    "judge",
    "pending_calls",
    "ready",
    "suspension_of",
    "usage_minus",
]

#: The reserved fact holding the suspended turn (a :class:`Suspension`, JSON).
SUSPENDED_FACT: Final = "agcore.suspended"
#: The reserved fact holding the answers of the last closed suspended turns.
ANSWERED_FACT: Final = "agcore.answered"
#: How many closed suspended turns :data:`ANSWERED_FACT` remembers.
KEEP_CLOSED: Final = 32


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """One call's answer: run it (``allow``) or not (``reason``), or its ``result``; an
    elicitation's: ``action`` and ``content``."""

    allow: bool
    reason: str = ""
    #: The call's result, given instead of running it.
    result: str | None = None
    action: Literal["accept", "decline", "cancel"] | None = None
    content: dict[str, object] | None = None


class Suspension(msgspec.Struct, frozen=True, kw_only=True):
    """The suspended turn: the calls it waits for and the answers recorded so far
    (answers of calls an earlier suspension of the same turn waited for stay)."""

    turn: str
    awaiting: list[am.AwaitingCall]
    answers: dict[str, Answer] = msgspec.field(default_factory=dict)


class Closed(msgspec.Struct, frozen=True, kw_only=True):
    """A suspended turn that ended: how, and the answers it had."""

    turn: str
    how: Literal["cancelled", "finished"]
    answers: dict[str, Answer] = msgspec.field(default_factory=dict)


_suspension = msgspec.json.Decoder(Suspension)
_closed = msgspec.json.Decoder(list[Closed])


def suspension_of(facts: Mapping[str, str]) -> Suspension | None:
    """The suspended turn ``facts`` describe, if any."""
    raw = facts.get(SUSPENDED_FACT)
    return _suspension.decode(raw) if raw else None


def closed_of(facts: Mapping[str, str]) -> list[Closed]:
    """The closed suspended turns ``facts`` remember, oldest first."""
    raw = facts.get(ANSWERED_FACT)
    return _closed.decode(raw) if raw else []


def encode(value: Suspension | list[Closed]) -> str:
    """The fact text of ``value``."""
    return msgspec.json.encode(value).decode()


def judge(
    suspension: Suspension | None, closed: Sequence[Closed], turn: str, call_id: str
) -> tuple[Literal["record", "duplicate"], Answer | None]:
    """What an answer to ``call_id`` of ``turn`` does (see the module docstring): record
    it, or a duplicate of the answer returned; raises :class:`StaleAnswer`."""
    if suspension is not None and suspension.turn == turn:
        first = suspension.answers.get(call_id)
        if first is not None:
            return "duplicate", first
        if any(call.call_id == call_id for call in suspension.awaiting):
            return "record", None
        raise StaleAnswer(turn, call_id, "unknown")
    for entry in reversed(closed):
        if entry.turn == turn:
            first = entry.answers.get(call_id)
            if first is not None:
                return "duplicate", first
            raise StaleAnswer(turn, call_id, entry.how)
    raise StaleAnswer(turn, call_id, "unknown")


def with_answer(suspension: Suspension, call_id: str, answer: Answer) -> Suspension:
    """``suspension`` with ``answer`` recorded for ``call_id``."""
    return msgspec.structs.replace(suspension, answers={**suspension.answers, call_id: answer})


def ready(suspension: Suspension) -> bool:
    """Every call the turn waits for is answered: it can resume."""
    return all(call.call_id in suspension.answers for call in suspension.awaiting)


def closed_after(
    closed: Sequence[Closed], suspension: Suspension, how: Literal["cancelled", "finished"]
) -> list[Closed]:
    """``closed`` with ``suspension``'s turn added as ended ``how`` (the oldest dropped
    beyond :data:`KEEP_CLOSED`)."""
    kept = [entry for entry in closed if entry.turn != suspension.turn]
    kept.append(Closed(turn=suspension.turn, how=how, answers=dict(suspension.answers)))
    return kept[-KEEP_CLOSED:]


def elicitation_key(tool_call: str, n: int) -> str:
    """The awaited id of the ``n``-th (from 1) question asked during ``tool_call``: a
    call run again asks again in the same order, and each question finds its answer."""
    return f"{tool_call}.e{n}"


def elicitation_reply(answer: Answer) -> am.ElicitationAnswer:
    """What the server is told for a stored elicitation ``answer`` (content only with
    ``accept``)."""
    action = answer.action or ("accept" if answer.allow else "decline")
    content = (answer.content or {}) if action == "accept" else None
    return am.ElicitationAnswer(action=action, content=content)


def held(awaiting: Mapping[str, am.AwaitingCall], call_id: str) -> bool:
    """Whether tool call ``call_id`` waits for an answer: its approval, or a question
    asked during it (its result, if any, is dropped; it runs again on resume)."""
    if call_id in awaiting:
        return True
    return any(a.tool_call == call_id for a in awaiting.values() if a.kind == "elicitation")


def pending_calls(messages: Sequence[ChatMessage]) -> list[str]:
    """The calls of the last assistant message of ``messages`` no tool message answers."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage):
            answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
            return [c.id for c in message.tool_calls or [] if c.id not in answered]
    return []


def usage_minus(total: Usage, part: Usage) -> Usage:
    """``total - part``, kind by kind (``part``: what was already stored of ``total``)."""
    return Usage(
        *(
            a - b
            for a, b in zip(
                msgspec.structs.astuple(total), msgspec.structs.astuple(part), strict=True
            )
        )
    )
