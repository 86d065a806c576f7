"""Transcript export and import as JSON Lines (seed 004's message persistence).

One message per line, compact msgspec JSON, ``\\n``-terminated. Import is
all-or-nothing: a bad line raises :class:`SerializationError` naming the
line, and nothing is returned.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from ._errors import SerializationError
from ._item import ChatMessage

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(ChatMessage)


def messages_to_jsonl(messages: Iterable[ChatMessage]) -> str:
    """The messages as JSON Lines text."""
    return "".join(_encoder.encode(m).decode() + "\n" for m in messages)


def messages_from_jsonl(text: str) -> list[ChatMessage]:
    """Parse JSON Lines text; blank lines are skipped."""
    out: list[ChatMessage] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(_decoder.decode(line))
        except msgspec.DecodeError as exc:
            raise SerializationError(f"line {number}: JSON parse failed: {exc}") from None
    return out
