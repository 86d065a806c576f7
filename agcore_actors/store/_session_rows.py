"""The ``sessions`` table's row layout and its codec, shared by the SQL backends.

A session's row is the same in SQLite and PostgreSQL (see :mod:`._schema`): the columns
of :data:`COLUMNS`, in that order, read into a :class:`SessionRecord` by :func:`record_of`
and written from one by :func:`values_of` (the columns after ``id``); ``pending_calls``
is a JSON array or NULL when empty. :data:`ROLE` is the ``role`` column of a message of
the log. Each backend writes its own statements (placeholders differ) from these.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

import msgspec

from ..llm import Message, Usage
from .messages import SessionRecord

__all__ = ["COLUMNS", "ROLE", "record_of", "values_of"]

ROLE: dict[type, str] = {cls: cls.__struct_config__.tag for cls in get_args(Message)}
COLUMNS = (
    "id, agent, status, open_turn, turns, last_index, compacted_upto, pending_calls, "
    "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, "
    "created_at, updated_at, version"
)
_pending_decoder = msgspec.json.Decoder(tuple[str, ...])
_encoder = msgspec.json.Encoder()


def record_of(row: Sequence[Any]) -> SessionRecord:
    """The record of a row read as ``SELECT {COLUMNS}``."""
    pending = row[7]
    return SessionRecord(
        id=row[0],
        agent=row[1],
        status=row[2],
        open_turn=row[3],
        turns=row[4],
        last_index=row[5],
        compacted_upto=row[6],
        pending_calls=() if pending is None else _pending_decoder.decode(pending),
        usage=Usage(row[8], row[9], row[10], row[11], row[12]),
        created_at=row[13],
        updated_at=row[14],
        version=row[15],
    )


def values_of(r: SessionRecord) -> tuple[Any, ...]:
    """The columns of ``r`` after ``id``, in ``COLUMNS`` order."""
    u = r.usage
    pending = _encoder.encode(r.pending_calls).decode() if r.pending_calls else None
    return (
        r.agent,
        r.status,
        r.open_turn,
        r.turns,
        r.last_index,
        r.compacted_upto,
        pending,
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.reasoning_tokens,
        r.created_at,
        r.updated_at,
        r.version,
    )
