"""Answering an MCP server's elicitation through ``serve``, as approvals are answered.

A turn that calls an MCP tool whose server asks the person something shows an
``elicitation_requested`` event (``elicitation_id``, ``server``, ``message``, ``schema``
as JSON text, ``timeout``). It is answered by::

    POST /v1/sessions/{id}/elicitations/{elicitation_id}   {"action", "content"?}
    {"session": "s1", "elicitation": "<id>", "action": "accept", "content": {...}}  (stdio)

``action`` is ``accept`` (with ``content``, the object the schema describes), ``decline``
or ``cancel``; the answer is ``{"answered": bool}`` (False when none of that id waits).
A malformed answer is a :class:`~agcore_actors.serve.BadCommand` and changes nothing;
no answer within the timeout declines it.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..agent import SessionHost
from ..agent import messages as am
from ._auth import check_id
from ._errors import BadCommand

__all__ = ["ElicitationCommand", "answer", "is_elicitation", "parse_elicitation"]

_FIELDS = {"session", "elicitation", "action", "content"}
_ACTIONS = ("accept", "decline", "cancel")


@attrs.frozen
class ElicitationCommand:
    session: str
    elicitation_id: str
    action: am.ElicitationAction
    content: dict[str, object] | None = None


def is_elicitation(obj: object) -> bool:
    """Whether a decoded stdio command is an elicitation answer (has ``elicitation``)."""
    return isinstance(obj, dict) and "elicitation" in obj


def parse_elicitation(obj: object, *, session: str | None = None) -> ElicitationCommand:
    """A decoded answer as a command (``session`` given: taken from the path)."""
    if not isinstance(obj, dict):
        raise BadCommand("an elicitation answer must be a JSON object")
    if session is not None:
        if "session" in obj:
            raise BadCommand("'session' is given by the path, not the body")
        obj = {**obj, "session": session}
    extra = sorted(set(obj) - _FIELDS)
    if extra:
        raise BadCommand(f"unknown field(s) for 'elicitation': {', '.join(extra)}")
    try:
        name = check_id("session", obj.get("session", ""))
        elicitation_id = check_id("elicitation", obj.get("elicitation", ""))
    except ValueError as exc:
        raise BadCommand(str(exc)) from None
    action = obj.get("action")
    if action not in _ACTIONS:
        raise BadCommand('\'action\' must be "accept", "decline" or "cancel"')
    content = obj.get("content")
    if content is not None and (action != "accept" or not isinstance(content, dict)):
        raise BadCommand("'content' must be a JSON object, and only with \"accept\"")
    return ElicitationCommand(name, elicitation_id, action, content)


async def answer(host: SessionHost, stored: str, command: ElicitationCommand) -> dict[str, Any]:
    """Answer it on the host (``stored``: the session's stored id); the reply object."""
    answered = await host.answer_elicitation(
        stored, command.elicitation_id, command.action, command.content
    )
    return {"answered": answered}
