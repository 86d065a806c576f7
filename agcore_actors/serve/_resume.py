"""Answering and resuming suspended turns through ``serve --http``.

A turn of an agent with ``approvals = "suspend"`` whose tool call needs approval ends
with a ``turn_suspended`` event (its ``result.awaiting`` lists the calls). It is stored;
the answer may come at any later time, to this server or another on the same store,
also after restarts::

    POST /v1/sessions/{id}/turns/{turn}/answers/{call}  {"allow"?, "reason"?, "result"?,
                                                          "resume"?} -> AnswerResult
    POST /v1/sessions/{id}/resume                        {} -> TurnResult

``allow`` (default true) runs the call, false denies it with ``reason``; ``result``
(text) answers it without running it. The reply's ``status`` is ``recorded`` (more
answers awaited, or ``"resume": false``), ``duplicate`` (answered before: nothing
changed, ``allow`` is the first answer's) or ``resumed`` (``result``: how the resumed
turn ended; the request waits for it). An answer no turn waits for (cancelled,
unknown) is 409 ``stale_answer``; resuming a turn that still waits is 409
``session_suspended``. A malformed body is 400 and changes nothing.
"""

from __future__ import annotations

from typing import Any

from ..agent import SessionHost, SessionSuspended, StaleAnswer
from ..agent import messages as am
from ._errors import BadCommand, HttpRefused

__all__ = ["answer", "resume"]

_FIELDS = {"allow", "reason", "result", "resume"}


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
    return {"allow": allow, "reason": reason, "result": result, "resume": resume}


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
