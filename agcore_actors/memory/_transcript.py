"""Transcript export and import as JSON Lines.

One message per line, compact JSON, ``\\n``-terminated. Lines are split at
``\\n`` only (a ``\\r`` before it is dropped): JSON escapes every control
character but leaves U+2028, U+2029 and U+0085 raw, so a content holding them
still imports back unchanged. Import is all-or-nothing: a bad line (not JSON,
not a message, an unknown role) raises :class:`SerializationError` naming the
line, and nothing is returned; so does a tool call id that two assistant
messages share.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ._errors import SerializationError
from ._item import StoredMessage

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(StoredMessage)


def messages_to_jsonl(messages: Iterable[StoredMessage]) -> str:
    """The messages as JSON Lines text."""
    return "".join(_encoder.encode(m).decode() + "\n" for m in messages)


def messages_from_jsonl(text: str) -> list[StoredMessage]:
    """Parse JSON Lines text; blank lines are skipped."""
    out: list[StoredMessage] = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            out.append(_decoder.decode(line))
        except msgspec.DecodeError as exc:
            raise SerializationError(f"line {number}: not a chat message: {exc}") from None
    check_tool_call_ids(out)
    return out


def tool_call_ids(messages: Iterable[StoredMessage]) -> list[str]:
    """The ids of the tool calls the assistant messages made, in order."""
    ids: list[str] = []
    for message in messages:
        for call in message.tool_calls or ():
            call_id = call.get("id") if isinstance(call, dict) else None
            if isinstance(call_id, str):
                ids.append(call_id)
    return ids


def check_tool_call_ids(messages: Iterable[StoredMessage], taken: Iterable[str] = ()) -> None:
    """:class:`SerializationError` if a tool call id repeats, among ``messages``
    or with one of ``taken`` (the ids of a transcript they would extend)."""
    seen = set(taken)
    for call_id in tool_call_ids(messages):
        if call_id in seen:
            raise SerializationError(f"tool call id {call_id!r} is used twice in the transcript")
        seen.add(call_id)
