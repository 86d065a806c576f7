"""Answering and resuming suspended turns through ``serve --http``.

A turn of an agent with ``approvals = "suspend"`` whose tool call needs approval ends
with a ``turn_suspended`` event (its ``result.awaiting`` lists the calls). It is stored;
the answer may come at any later time, to this server or another on the same store,
also after restarts::

    POST /v1/sessions/{id}/turns/{turn}/answers/{call}  {"allow"?, "reason"?, "result"?,
                                                          "resume"?, "action"?,
                                                          "content"?} -> AnswerResult
    POST /v1/sessions/{id}/resume                        {} -> TurnResult

``allow`` (default true) runs the call, false denies it with ``reason``; ``result``
(text) answers it without running it. An awaited elicitation (``kind``
``elicitation``, with ``elicitations = "suspend"``: its ``call_id`` names the question)
is answered with ``action`` (``accept``, ``decline``, ``cancel``) and, with
``accept``, ``content`` (the object its ``schema`` describes). The reply's ``status``
is ``recorded`` (more answers awaited, or ``"resume": false``), ``duplicate`` (answered
before: nothing changed, ``allow`` is the first answer's) or ``resumed`` (``result``:
how the resumed turn ended; the request waits for it). An answer no turn waits for (cancelled,
unknown) is 409 ``stale_answer``; resuming a turn that still waits is 409
``session_suspended``. A malformed body is 400 and changes nothing.

Over ``serve --stdio`` the same, as lines::

    {"session": "s1", "answer": "<call>", "turn": "t1", "allow"?, "reason"?, "result"?,
     "resume"?}                          -> {"session", "event": "answer", "turn",
                                             "call_id", "status", "allow", "result"?}
    {"session": "s1", "resume": true}    -> {"session", "event": "resume", "result"}

The answer line comes when the answer is stored (``recorded``, ``duplicate``) or when
the turn it resumed has ended (``resumed``, with its result); other commands are read
meanwhile. An answer no turn waits for, or a resume of a turn that still waits, gets an
``error`` line (``error_kind`` ``stale_answer`` / ``session_suspended``); a malformed
line gets an ``error`` line and changes nothing.
"""

from __future__ import annotations

from typing import Any

import attrs
import msgspec

from ..agent import SessionHost, SessionSuspended, StaleAnswer
from ..agent import messages as am
from ._auth import check_id
from ._errors import BadCommand, HttpRefused

__all__ = [
    "AnswerCommand",
    "ResumeCommand",
    "answer",
    "is_answer",
    "parse_stdio",
    "resume",
    "stdio_reply",
]

_FIELDS = {"allow", "reason", "result", "resume", "action", "content"}
_ACTIONS = ("accept", "decline", "cancel")


def _parse(body: object) -> dict[str, Any]:
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise BadCommand("an answer must be a JSON object")
    extra = sorted(set(body) - _FIELDS)
    if extra:
        raise BadCommand(f"unknown field(s) for an answer: {', '.join(extra)}")
    allow, resume = body.get("allow", True), body.get("resume", True)
    reason, result = body.get("reason", ""), body.get("result")
    if not isinstance(allow, bool) or not isinstance(resume, bool):
        raise BadCommand("'allow' and 'resume' must be true or false")
    if not isinstance(reason, str) or not (result is None or isinstance(result, str)):
        raise BadCommand("'reason' and 'result' must be strings")
    fields = {"allow": allow, "reason": reason, "result": result, "resume": resume}
    action, content = body.get("action"), body.get("content")
    if action is not None and action not in _ACTIONS:
        raise BadCommand('\'action\' must be "accept", "decline" or "cancel"')
    if content is not None and (action != "accept" or not isinstance(content, dict)):
        raise BadCommand("'content' must be a JSON object, and only with \"accept\"")
    if action is not None:
        fields.update(action=action, content=content)
    return fields


async def answer(
    host: SessionHost, stored: str, turn: str, call_id: str, body: object
) -> am.AnswerResult:
    """Answer call ``call_id`` of turn ``turn`` of session ``stored`` (see the module)."""
    fields = _parse(body)
    try:
        return await host.answer(stored, turn, call_id, **fields)
    except StaleAnswer as exc:
        raise HttpRefused(409, exc.kind, str(exc)) from None


async def resume(host: SessionHost, stored: str) -> am.TurnResult:
    """Resume the open turn of session ``stored`` (see the module)."""
    try:
        return await host.resume(stored)
    except (StaleAnswer, SessionSuspended) as exc:
        raise HttpRefused(409, exc.kind, str(exc)) from None


@attrs.frozen
class AnswerCommand:
    """A stdio ``answer`` line: answer ``call_id`` of ``turn`` of ``session``."""

    session: str
    turn: str
    call_id: str
    fields: dict[str, Any]


@attrs.frozen
class ResumeCommand:
    """A stdio ``resume`` line: resume the open turn of ``session``."""

    session: str


def is_answer(obj: object) -> bool:
    """Whether a decoded stdio line is an ``answer`` or a ``resume`` command."""
    return isinstance(obj, dict) and ("answer" in obj or ("resume" in obj and "text" not in obj))


def _checked(what: str, value: object) -> str:
    try:
        return check_id(what, value)
    except ValueError as exc:
        raise BadCommand(str(exc)) from None


def parse_stdio(obj: object) -> AnswerCommand | ResumeCommand:
    """A decoded stdio line as an answer or resume command; :class:`BadCommand` if it
    is malformed (nothing changes)."""
    if not isinstance(obj, dict):
        raise BadCommand("a command must be a JSON object")
    session = _checked("session", obj.get("session", ""))
    if "answer" not in obj:
        extra = sorted(set(obj) - {"session", "resume"})
        if extra:
            raise BadCommand(f"unknown field(s) for 'resume': {', '.join(extra)}")
        if obj["resume"] is not True:
            raise BadCommand("'resume' must be true")
        return ResumeCommand(session)
    call_id = _checked("answer", obj.get("answer", ""))
    turn = _checked("turn", obj.get("turn", ""))
    body = {k: v for k, v in obj.items() if k not in ("session", "answer", "turn")}
    return AnswerCommand(session, turn, call_id, _parse(body))


async def stdio_reply(
    host: SessionHost, prefix: str, command: AnswerCommand | ResumeCommand
) -> dict[str, Any]:
    """Carry out ``command`` on the host (``prefix``: the tenant's) and return its line:
    the answer or resume line, or an ``error`` line for a refused one."""
    session = command.session
    try:
        if isinstance(command, ResumeCommand):
            result = await host.resume(prefix + session)
            return {"session": session, "event": "resume", "result": _result(session, result)}
        got = await host.answer(prefix + session, command.turn, command.call_id, **command.fields)
    except (StaleAnswer, SessionSuspended) as exc:
        return {"session": session, "event": "error", "error_kind": exc.kind, "error": str(exc)}
    line: dict[str, Any] = {
        "session": session,
        "event": "answer",
        "turn": got.turn,
        "call_id": got.call_id,
        "status": got.status,
        "allow": got.allow,
    }
    if got.result is not None:
        line["result"] = _result(session, got.result)
    return line


def _result(session: str, result: am.TurnResult) -> dict[str, Any]:
    """``result`` as JSON, with the caller's session id (not the stored one)."""
    fields: dict[str, Any] = msgspec.to_builtins(result)
    fields["session"] = session
    return fields
