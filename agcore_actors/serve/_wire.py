"""The commands ``serve`` accepts and the JSON it writes for each turn event.

Commands are JSON objects with a ``session`` and exactly one verb::

    {"session": "s1", "text": "hi", "turn": "optional id",
     "settings": {"temperature": 0.2, ...},                     run a turn (settings:
     "parts": [{"type": "image", "media_type": "image/png",     optional, this turn's
                "data": "<base64>"}, ...]}                      ModelOverrides; parts:
                                                                optional, see below)
    {"session": "s1", "cancel": "immediate" | "after_turn"}     cancel its running turn
    {"session": "s1", "approve": "call_1", "allow": true, "reason": "optional"}

A part is ``{"type": "image", "media_type": ..., "data": <base64>}`` or ``{"type":
"image", "url": "https://..."}`` (``detail``: optional), ``{"type": "file",
"media_type": ..., "data": ..., "filename": ...}``, ``{"type": "audio", "media_type":
..., "data": ...}`` or ``{"type": "text", "text": ...}``; the base64 is checked here, the
sizes by the session (``content_too_large``).

:func:`parse_command` checks a whole object before anything runs (session, turn
and call ids follow one rule, :data:`~agcore_actors.serve._auth.ID_RULE`: they travel
in headers, paths and log lines), so a malformed one is refused with
:class:`~agcore_actors.serve.BadCommand` naming the problem and changes nothing.
:func:`event_fields` turns a turn event into one flat JSON object: ``session``,
``turn``, ``event`` (the event's kind in snake case) and its fields; a
turn's final event (``turn_completed`` / ``turn_cancelled`` / ``turn_failed``) also
carries ``status`` and, when it failed, ``error_kind``.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Literal

import attrs
import msgspec

from .._decode import DECODE_ERRORS
from ..agent import messages as am
from ..llm import (
    ContentPart,
    ImagePart,
    ImageUrl,
    InvalidContent,
    TextPart,
    audio_part_of,
    file_part_of,
    image_part_of,
)
from ._auth import check_id
from ._errors import BadCommand

__all__ = [
    "ApproveCommand",
    "CancelCommand",
    "Command",
    "TurnCommand",
    "event_fields",
    "event_kind",
    "final_fields",
    "parse_command",
    "parse_line",
]

_VERBS = ("text", "cancel", "approve")
_ALLOWED = {
    "text": {"session", "text", "turn", "settings", "parts"},
    "cancel": {"session", "cancel"},
    "approve": {"session", "approve", "allow", "reason"},
}


@attrs.frozen
class TurnCommand:
    session: str
    text: str
    turn: str = ""
    #: Model settings of this turn only.
    settings: am.ModelOverrides | None = None
    #: Images, audio and files after ``text`` in the user's message.
    parts: tuple[ContentPart, ...] = ()


@attrs.frozen
class CancelCommand:
    session: str
    mode: am.CancelMode = "immediate"


@attrs.frozen
class ApproveCommand:
    session: str
    call_id: str
    allow: bool
    reason: str = ""


Command = TurnCommand | CancelCommand | ApproveCommand


def _string(obj: dict[str, Any], key: str, *, empty: bool = False) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str) or (not empty and not value):
        raise BadCommand(f"{key!r} must be a {'' if empty else 'non-empty '}string")
    return value


def _id(obj: dict[str, Any], key: str, *, empty: bool = False) -> str:
    value = obj.get(key, "")
    if empty and value == "":
        return ""
    try:
        return check_id(key, value)
    except ValueError as exc:
        raise BadCommand(str(exc)) from None


def _settings(obj: dict[str, Any]) -> am.ModelOverrides | None:
    if "settings" not in obj:
        return None
    try:
        return msgspec.convert(obj["settings"], am.ModelOverrides, strict=False)
    except msgspec.ValidationError as exc:
        raise BadCommand(f"'settings': {exc}") from None


class _WirePart(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["text", "image", "file", "audio"]
    text: str | None = None
    media_type: str | None = None
    data: str | None = None
    url: str | None = None
    detail: Literal["auto", "low", "high"] | None = None
    filename: str | None = None


def _bytes(part: _WirePart, at: str) -> tuple[bytes, str]:
    if part.data is None or not part.media_type:
        raise BadCommand(f"{at}: a {part.type} needs 'media_type' and base64 'data'")
    try:
        return base64.b64decode(part.data, validate=True), part.media_type
    except (binascii.Error, ValueError):
        raise BadCommand(f"{at}: 'data' is not base64") from None


def _part(part: _WirePart, at: str) -> ContentPart:
    if part.type == "text":
        if part.text is None:
            raise BadCommand(f"{at}: a text part needs 'text'")
        return TextPart(part.text)
    if part.type == "image" and part.url is not None:
        if not part.url.startswith(("http://", "https://")):
            raise BadCommand(f"{at}: an image 'url' must be http(s)")
        return ImagePart(ImageUrl(part.url, part.detail))
    data, media = _bytes(part, at)
    try:
        if part.type == "image":
            return image_part_of(data, media, detail=part.detail)
        if part.type == "audio":
            return audio_part_of(data, media)
    except InvalidContent as exc:
        raise BadCommand(f"{at}: {exc}") from None
    return file_part_of(data, media, part.filename)


def _parts(obj: dict[str, Any]) -> tuple[ContentPart, ...]:
    if "parts" not in obj:
        return ()
    try:
        wire = msgspec.convert(obj["parts"], list[_WirePart])
    except msgspec.ValidationError as exc:
        raise BadCommand(f"'parts': {exc}") from None
    return tuple(_part(p, f"'parts[{i}]'") for i, p in enumerate(wire))


def parse_line(line: bytes | str) -> Command:
    """One line of JSON as a command; :class:`BadCommand` if it is not one."""
    try:
        obj = msgspec.json.decode(line)
    except DECODE_ERRORS as exc:
        raise BadCommand(f"not JSON: {exc}") from None
    return parse_command(obj)


def parse_command(obj: object, *, session: str | None = None) -> Command:
    """A decoded JSON object as a command (``session`` given: the object has none)."""
    if not isinstance(obj, dict):
        raise BadCommand("a command must be a JSON object")
    if session is not None:
        if "session" in obj:
            raise BadCommand("'session' is given by the path, not the body")
        obj = {**obj, "session": session}
    verbs = [v for v in _VERBS if v in obj]
    if len(verbs) != 1:
        raise BadCommand(
            f"unknown command: an object needs exactly one of {', '.join(_VERBS)}"
            + (f" (it has {', '.join(sorted(obj))})" if obj else "")
        )
    verb = verbs[0]
    extra = sorted(set(obj) - _ALLOWED[verb])
    if extra:
        raise BadCommand(f"unknown field(s) for {verb!r}: {', '.join(extra)}")
    name = _id(obj, "session")
    if verb == "text":
        turn = _id(obj, "turn", empty=True)
        text = _string(obj, "text", empty=True)
        return TurnCommand(name, text, turn, _settings(obj), _parts(obj))
    if verb == "cancel":
        mode = obj["cancel"]
        if mode not in ("immediate", "after_turn"):
            raise BadCommand('\'cancel\' must be "immediate" or "after_turn"')
        return CancelCommand(name, mode)
    allow = obj.get("allow")
    if not isinstance(allow, bool):
        raise BadCommand("'allow' must be true or false")
    return ApproveCommand(name, _id(obj, "approve"), allow, _string(obj, "reason", empty=True))


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_FINAL = (am.TurnCompleted, am.TurnCancelled, am.TurnFailed, am.TurnSuspended)
FinalKind = Literal["turn_completed", "turn_cancelled", "turn_failed", "turn_suspended"]


def event_kind(event: am.TurnEvent) -> str:
    """``TextDelta`` → ``"text_delta"``."""
    return _CAMEL.sub("_", type(event).__name__).lower()


def event_fields(session: str, turn: str, event: am.TurnEvent) -> dict[str, Any]:
    """The JSON object written for ``event`` of ``turn`` (see the module docstring)."""
    fields: dict[str, Any] = msgspec.to_builtins(event)
    fields.pop("type", None)
    out: dict[str, Any] = {"session": session, "turn": turn, "event": event_kind(event)}
    if isinstance(event, _FINAL):
        result = event.result
        out["status"] = result.status
        if result.error_kind:
            out["error_kind"] = result.error_kind
    out.update((k, v) for k, v in fields.items() if k not in ("session", "turn"))
    if isinstance(out.get("result"), dict):  # the caller's id, not the stored one
        out["result"]["session"] = session
    return out


def final_fields(
    session: str, turn: str, kind: FinalKind, *, error_kind: str = "", error: str = ""
) -> dict[str, Any]:
    """The final line of a turn that ended without its own final event (it was never
    started, or its stream was left)."""
    status = kind.removeprefix("turn_")
    out: dict[str, Any] = {"session": session, "turn": turn, "event": kind, "status": status}
    if error_kind:
        out["error_kind"] = error_kind
        out["error"] = error
    return out
