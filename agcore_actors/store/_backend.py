"""What a storage backend provides: a few synchronous primitives and batches.

The protocol's behaviour lives once, in :mod:`agcore_actors.store._ops`, written
against these primitives; a backend only stores and fetches. So the in-memory and the
SQLite backend behave alike by construction, and the stateful test checks both.

Atomicity: :meth:`Backend.run_batch` runs a list of operations in one transaction,
each as a unit: an operation that raises leaves no trace (``_ops`` raises the asker's
errors before it writes anything; SQLite also runs such a batch again with each
operation in a savepoint), the others are kept. So an operation may run more than once
and must depend only on the stored state and its own arguments. The batch is durable
when ``run_batch`` returns. A storage failure fails the whole batch with
:class:`StoreStorageError`.

Threads: a backend is not thread-safe. The actor calls it from one thread at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import msgspec
import outcome

from ..llm import Message
from ._errors import InvalidRequest
from .messages import LogEntry, SessionRecord, SessionStatus

#: One operation of a batch: runs against the backend, returns the reply.
Operation = Callable[[], Any]

_message_encoder = msgspec.json.Encoder()
_message_decoder = msgspec.json.Decoder(Message)
_messages_decoder = msgspec.json.Decoder(list[Message])
_cursor_decoder = msgspec.json.Decoder(tuple[float, str])


def encode_message(message: Message) -> bytes:
    """A message as stored: compact msgspec JSON (the OpenAI shape)."""
    return _message_encoder.encode(message)


def decode_message(body: bytes | str) -> Message:
    message: Message = _message_decoder.decode(body)
    return message


def encode_messages(messages: Sequence[Message]) -> bytes:
    return _message_encoder.encode(messages)


def decode_messages(body: bytes | str) -> list[Message]:
    return _messages_decoder.decode(body)


def encode_cursor(updated_at: float, session: str) -> str:
    """The keyset position after the session ``(updated_at, session)``."""
    return _message_encoder.encode((updated_at, session)).decode()


def decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        return _cursor_decoder.decode(cursor)
    except msgspec.DecodeError:
        raise InvalidRequest(f"not a cursor of this store: {cursor!r}") from None


class Backend(Protocol):
    """Storage primitives (see the module doc). Indexes are log indexes."""

    def run_batch(self, operations: Sequence[Operation], write: bool) -> list[outcome.Outcome[Any]]:
        """Run ``operations`` in one transaction (a write one if ``write``)."""
        ...

    def record(self, session: str) -> SessionRecord | None: ...

    def summary(self, session: str) -> list[Message]: ...

    def put_record(
        self, record: SessionRecord, *, new: bool, summary: Sequence[Message] | None = None
    ) -> None:
        """Insert (``new``) or update the row; ``summary`` None keeps the stored one."""
        ...

    def append(self, session: str, entries: Sequence[LogEntry]) -> None: ...

    def update_facts(
        self, session: str, removed: Sequence[str], values: dict[str, str]
    ) -> None: ...

    def facts(self, session: str) -> dict[str, str]:
        """The session's facts, ordered by key."""
        ...

    def entries(self, session: str, start: int, stop: int) -> list[LogEntry]: ...

    def messages(self, session: str, start: int, stop: int) -> list[Message]: ...

    def is_tool(self, session: str, index: int) -> bool:
        """Whether the log's message ``index`` is a tool message."""
        ...

    def group_start(self, session: str, index: int) -> int:
        """The greatest index ``<= index`` whose message is not a tool message."""
        ...

    def page(
        self,
        idle_before: float | None,
        status: SessionStatus | None,
        after: tuple[float, str] | None,
        limit: int,
    ) -> list[SessionRecord]:
        """Records with ``updated_at < idle_before`` and the status, ordered by
        ``(updated_at, id)``, strictly after ``after``; at most ``limit``."""
        ...

    def delete(self, sessions: Sequence[str]) -> list[str]:
        """Delete these sessions whole; the ids that were there, in the given order."""
        ...

    def close(self) -> None: ...
