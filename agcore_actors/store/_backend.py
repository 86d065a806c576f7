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

Time: an operation is given ``now``, the actor's clock when the request arrived; leases
and host heartbeats use :meth:`Backend.clock` instead, the store's own clock, which all
the hosts sharing a database share (PostgreSQL's; the actor's ``now`` for the others).

Leases and hosts outlive their sessions: :meth:`Backend.delete` leaves them alone, so a
deleted session's next lease still gets a higher token.

Threads: a backend is not thread-safe. The actor calls it from one thread at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import msgspec
import outcome

from ..llm import Message
from ._errors import InvalidRequest
from .messages import HostRecord, Lease, LeaseRef, LogEntry, SessionRecord, SessionStatus

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

    def has_turn(self, session: str, turn: str) -> bool:
        """Whether the session's log has an entry of ``turn`` (writes of this
        transaction included)."""
        ...

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

    # -- leases and hosts (stored ``expires_in`` is not kept: the reader computes it) --

    def clock(self, now: float) -> float:
        """The store's clock for leases and heartbeats: ``now``, or the database's own."""
        ...

    def lease(self, session: str, *, lock: bool) -> Lease | None:
        """The session's stored lease (None or token 0: never granted); ``lock``: hold it
        until the transaction ends (a write that decides on it)."""
        ...

    def put_lease(self, lease: Lease) -> None: ...

    def renew_leases(
        self, host: str, leases: Sequence[LeaseRef], now: float, until: float
    ) -> tuple[list[str], bool]:
        """Set ``expires_at = until`` on each of ``leases`` held by ``host`` with that
        token, not released and ``expires_at > now``, and on ``host``'s heartbeat if it
        is registered: the sessions renewed, and whether the host was (one statement
        where the backend can)."""
        ...

    def release_leases(self, host: str, leases: Sequence[LeaseRef], now: float) -> list[str]:
        """Mark released (``expires_at = now``) each of ``leases`` held by ``host`` with
        that token and not released yet: the sessions released."""
        ...

    def host(self, host: str) -> HostRecord | None: ...

    def put_host(self, record: HostRecord) -> None: ...

    def hosts(self) -> list[HostRecord]:
        """Every registered host, ordered by id."""
        ...

    def delete_host(self, host: str) -> bool: ...

    def close(self) -> None: ...


def renew_each(
    b: Backend, host: str, leases: Sequence[LeaseRef], now: float, until: float
) -> tuple[list[str], bool]:
    """:meth:`Backend.renew_leases` one lease at a time (for an embedded backend)."""
    renewed: list[str] = []
    for session, token in leases:
        lease = b.lease(session, lock=True)
        if (
            lease is not None
            and lease.host == host
            and lease.token == token
            and not lease.released
            and lease.expires_at > now
        ):
            b.put_lease(msgspec.structs.replace(lease, expires_at=until))
            renewed.append(session)
    found = b.host(host)
    if found is not None:
        b.put_host(msgspec.structs.replace(found, expires_at=until))
    return renewed, found is not None


def release_each(b: Backend, host: str, leases: Sequence[LeaseRef], now: float) -> list[str]:
    """:meth:`Backend.release_leases` one lease at a time (for an embedded backend)."""
    released: list[str] = []
    for session, token in leases:
        lease = b.lease(session, lock=True)
        if lease is not None and lease.host == host and lease.token == token and not lease.released:
            b.put_lease(msgspec.structs.replace(lease, expires_at=now, released=True))
            released.append(session)
    return released
